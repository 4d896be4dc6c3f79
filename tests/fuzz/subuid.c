// SPDX-License-Identifier: GPL-2.0
/*
 * /etc/subuid as hbmguardd reads it for the control socket's tenants
 * (subuid.c): the input is the file, read through hbm_subuids_refresh()
 * as the daemon reads it (here a memfd, named by /proc/self/fd/N), then
 * asked hbm_tenant() about the uids at the edges of every line.
 *
 * What control.c relies on: the ranges sorted and apart (hbm_tenant()'s
 * binary search), each within the 32-bit uids; every uid of a line that
 * is a range (subuid(5): "name:start:count", decimal) some owner's tenant
 * (2^63 and up, never a plain uid), the same for all of that line; an
 * owner's lines that overlap no other one's all its own tenant, the
 * digest of its name as written, and lines that overlap the tenant of the
 * one that starts first (of two that start at once, the earlier line's:
 * not as qsort() leaves equal keys); every other uid its own; the lines that
 * are not a range, nor empty, nor a comment, counted.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sha256.h"
#include "subuid.h"
#include "fuzz.h"

struct line {
	const char *name;
	size_t name_len;
	uint64_t start, end;
	size_t group;		/* of the lines whose ranges overlap, by start */
	size_t members;		/* lines in its group */
	uint64_t reach;		/* the furthest end of the lines up to it, by start */
};

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("subuid", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return 0;
}

/* Decimal digits only (leading zeros too, as shadow's strtoul() takes them), 32 bits. */
static bool number(const char *p, size_t len, uint64_t *v)
{
	size_t i;

	if (!len)
		return false;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		if (*v > UINT32_MAX)
			return false;
		*v = *v * 10 + (uint64_t)(p[i] - '0');
	}
	return *v <= UINT32_MAX;
}

/* subuid(5)'s "name:start:count", each part spelled out. */
static bool ref_line(const char *p, size_t len, struct line *l)
{
	const char *c1 = memchr(p, ':', len), *c2;
	uint64_t count;

	if (!c1 || c1 == p)
		return false;
	c2 = memchr(c1 + 1, ':', p + len - c1 - 1);
	if (!c2 || !number(c1 + 1, c2 - c1 - 1, &l->start) ||
	    !number(c2 + 1, p + len - c2 - 1, &count) || !count ||
	    l->start + count > (uint64_t)UINT32_MAX + 1)
		return false;
	l->name = p;
	l->name_len = c1 - p;
	l->end = l->start + count;
	return true;
}

static uint64_t digest_tenant(const char *name, size_t len)
{
	uint8_t d[HBM_SHA256_LEN];
	uint64_t h = 0;
	int i;

	hbm_sha256(name, len, d);
	for (i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return 1ULL << 63 | h;
}

static int by_start(const void *a, const void *b)
{
	const struct line *x = *(struct line *const *)a, *y = *(struct line *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x < y ? -1 : x > y;	/* lines[] is in the file's order */
}

/* Whether @uid is in some line's range: of those starting at or below it. */
static bool covered(struct line *const *sorted, size_t n, uint64_t uid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sorted[mid]->start <= uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && uid < sorted[lo - 1]->reach;
}

static void probe(const struct hbm_subuids *s, struct line *const *sorted, size_t n, uint64_t uid)
{
	uint64_t t;

	if (uid > UINT32_MAX)
		return;
	t = hbm_tenant(s, (uid_t)uid);
	if (covered(sorted, n, uid))
		assert(t >= 1ULL << 63);
	else
		assert(t == uid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *p = text, *end = text + size;
	struct line *lines = malloc((size / 2 + 1) * sizeof(*lines)), **sorted;
	struct hbm_subuids s;
	size_t n = 0, bad = 0, i, j;
	uint64_t group_end = 0;

	if (!lines || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *eol = nl ? nl : end;

		if (eol > p && *p != '#') {
			if (ref_line(p, eol - p, &lines[n]))
				n++;
			else
				bad++;
		}
		p = eol + 1;
	}
	sorted = malloc((n + 1) * sizeof(*sorted));
	if (!sorted)
		abort();
	for (i = 0; i < n; i++)
		sorted[i] = &lines[i];
	qsort(sorted, n, sizeof(*sorted), by_start);
	for (i = 0, j = 0; i < n; i++) {	/* groups of overlapping lines */
		if (i && sorted[i]->start < group_end) {
			if (sorted[i]->end > group_end)
				group_end = sorted[i]->end;
		} else {
			j = i;
			group_end = sorted[i]->end;
		}
		sorted[i]->group = j;
		sorted[j]->members = i - j + 1;
		sorted[i]->reach = group_end;
	}

	hbm_subuids_init(&s, path);
	assert(hbm_subuids_refresh(&s) == 1 && s.error == 0);
	assert(s.bad_lines == bad);
	assert(s.nr <= n);
	for (i = 0; i < s.nr; i++) {
		assert(s.ranges[i].start < s.ranges[i].end);
		assert(s.ranges[i].end <= (uint64_t)UINT32_MAX + 1);
		assert(s.ranges[i].tenant >= 1ULL << 63);
		assert(!i || s.ranges[i - 1].end <= s.ranges[i].start);
	}
	probe(&s, sorted, n, 0);
	probe(&s, sorted, n, UINT32_MAX);
	for (i = 0; i < n; i++) {
		struct line *l = sorted[i];
		uint64_t t = hbm_tenant(&s, (uid_t)l->start);

		assert(t >= 1ULL << 63);
		assert(hbm_tenant(&s, (uid_t)(l->end - 1)) == t);
		assert(hbm_tenant(&s, (uid_t)(l->start + (l->end - l->start) / 2)) == t);
		/* the owner's of the line of its group that starts first (the earlier of two) */
		assert(t == digest_tenant(sorted[l->group]->name, sorted[l->group]->name_len));
		if (l->start)
			probe(&s, sorted, n, l->start - 1);
		probe(&s, sorted, n, l->end);
	}
	hbm_subuids_free(&s);
	free(sorted);
	free(lines);
	return 0;
}
