/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every fuzz target shares: the input taken apart a field at a time.
 * A field past the input's end reads as zeros, so that every input is some
 * sequence of calls and the fuzzer's mutations stay meaningful.
 */
#ifndef HBM_FUZZ_H
#define HBM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline size_t fuzz_take(struct fuzz_in *in, void *out, size_t len)
{
	size_t got = len < in->n ? len : in->n;

	memcpy(out, in->p, got);
	memset((uint8_t *)out + got, 0, len - got);
	in->p += got;
	in->n -= got;
	return got;
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	uint8_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v;

	fuzz_take(in, &v, sizeof(v));
	return v;
}

/*
 * The next string: the bytes up to a NUL (or the input's end), copied into a
 * buffer of their own, so that ASan sees a read past them.  Free it.
 */
static inline char *fuzz_str(struct fuzz_in *in)
{
	const uint8_t *nul = memchr(in->p, 0, in->n);
	size_t len = nul ? (size_t)(nul - in->p) : in->n;
	char *s = malloc(len + 1);

	if (!s)
		abort();
	memcpy(s, in->p, len);
	s[len] = 0;
	in->p += len + (nul ? 1 : 0);
	in->n -= len + (nul ? 1 : 0);
	return s;
}

/* The rest of the input in a buffer of its own, NUL-terminated past @*len. */
static inline char *fuzz_rest(struct fuzz_in *in, size_t *len)
{
	char *s = malloc(in->n + 1);

	if (!s)
		abort();
	memcpy(s, in->p, in->n);
	s[in->n] = 0;
	*len = in->n;
	in->p += in->n;
	in->n = 0;
	return s;
}

/*
 * A directory of the target's own for the files it writes: under run.sh's
 * $HBM_FUZZ_TMP, which it removes after the run whatever happened (a
 * sanitizer's report ends the process without atexit()); else in memory
 * where /dev/shm is.
 */
static inline void fuzz_tmpdir(char *dir, size_t len, const char *target)
{
	const char *tmp = getenv("HBM_FUZZ_TMP");

	snprintf(dir, len, "%s/hbm-fuzz-%s.XXXXXX", tmp ? tmp : "/dev/shm", target);
	if (mkdtemp(dir))
		return;
	snprintf(dir, len, "/tmp/hbm-fuzz-%s.XXXXXX", target);
	if (!mkdtemp(dir))
		abort();
}

/* Set by a target whose files outlive an abort() run by hand: called first. */
static void (*fuzz_on_failure)(void) __attribute__((unused));

/* A property the target asserts, said with why before the abort(). */
#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		if (fuzz_on_failure)					\
			fuzz_on_failure();				\
		abort();						\
	}								\
} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* HBM_FUZZ_H */
