// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu's RAS files in sysfs as hbmguardd polls them (amdgpu_ras.c):
 * ras/gpu_vram_bad_pages (amdgpu_ras_parse_bad_pages()) and
 * ras/<block>_err_count (amdgpu_ras_parse_err_count()), damaged or from a
 * driver that writes them otherwise.  The input's first byte picks how it
 * is taken:
 *
 *	0  a bad-page list, read into room for the number of pages the next
 *	   byte says (255: as many as its length holds, as amdgpu_ras_read()
 *	   gives)
 *	1  pages a list is written from as amdgpu_ras_sysfs_badpages_read()
 *	   writes one: read back exactly, or refused for lack of room
 *	2  an error-count file
 *	3  counts a file is written from as amdgpu_ras_sysfs_read() writes
 *	   one: read back exactly
 *
 * What the callers rely on: on success, no more pages than the room given,
 * every one as its line says (a list is accepted only as the driver writes
 * it: written again from what was read, it is the same bytes), and no
 * byte written past them; on error, *why set, the line named one that is
 * wrong, and nothing written.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "amdgpu_ras.h"
#include "fuzz.h"

#define CANARY	0x5a

static const char flag_of[] = { [AMDGPU_PAGE_RESERVED] = 'R', [AMDGPU_PAGE_PENDING] = 'P',
				[AMDGPU_PAGE_FAILED] = 'F' };

/* A line as the driver writes it: "0x%08x : 0x%08x : %1s\n". */
static void page_line(char out[AMDGPU_BAD_PAGE_LINE + 1], uint32_t pfn, uint32_t size, char flag)
{
	int n = snprintf(out, AMDGPU_BAD_PAGE_LINE + 1, "0x%08" PRIx32 " : 0x%08" PRIx32 " : %c\n",
			 pfn, size, flag);

	assert(n == AMDGPU_BAD_PAGE_LINE);
}

/* Whether line @i (from 0) of @buf is whole and one the driver writes. */
static bool line_good(const char *buf, size_t len, size_t i)
{
	const char *s = buf + i * AMDGPU_BAD_PAGE_LINE;
	char again[AMDGPU_BAD_PAGE_LINE + 1];
	unsigned long pfn, size;

	if (len - i * AMDGPU_BAD_PAGE_LINE < AMDGPU_BAD_PAGE_LINE ||
	    memchr(s, '\0', AMDGPU_BAD_PAGE_LINE) || memcmp(s, "0x", 2) ||
	    memcmp(s + 10, " : 0x", 5) || memcmp(s + 23, " : ", 3) ||
	    !strchr("RPF", s[26]) || !s[26])
		return false;
	pfn = strtoul(s + 2, NULL, 16);
	size = strtoul(s + 15, NULL, 16);
	page_line(again, pfn, size, s[26]);
	return size && !memcmp(again, s, AMDGPU_BAD_PAGE_LINE);
}

/* amdgpu_ras_parse_bad_pages() into exactly @max pages of room. */
static int bad_pages(const char *text, size_t len, size_t max, size_t *count)
{
	struct amdgpu_bad_page *out = malloc(max ? max * sizeof(*out) : 1);
	struct amdgpu_bad_page *before = malloc(max ? max * sizeof(*out) : 1);
	char *buf = malloc(len ? len : 1), again[AMDGPU_BAD_PAGE_LINE + 1];
	size_t line = 12345, i, lines = (len + AMDGPU_BAD_PAGE_LINE - 1) / AMDGPU_BAD_PAGE_LINE;
	const char *why = NULL;
	int err;

	if (!out || !before || !buf)
		abort();
	memcpy(buf, text, len);		/* of its own: ASan sees a read past it */
	memset(out, CANARY, max * sizeof(*out));
	memcpy(before, out, max * sizeof(*out));
	*count = 99999;
	err = amdgpu_ras_parse_bad_pages(buf, len, out, max, count, &why, &line);
	if (err) {
		assert(err == -EINVAL || err == -E2BIG);
		assert(why);
		assert(*count == 99999);
		assert(!memcmp(out, before, max * sizeof(*out)));
		if (err == -E2BIG) {
			assert(len % AMDGPU_BAD_PAGE_LINE == 0 && len / AMDGPU_BAD_PAGE_LINE > max);
			assert(line == max + 1);
			for (i = 0; i < lines; i++)
				assert(line_good(text, len, i));
		} else {
			/* the line named is wrong: the first, or one with a NUL */
			assert(line >= 1 && line <= lines);
			assert(!line_good(text, len, line - 1));
			if (!memchr(text, '\0', len))
				for (i = 0; i + 1 < line; i++)
					assert(line_good(text, len, i));
		}
	} else {
		assert(line == 0);
		assert(len % AMDGPU_BAD_PAGE_LINE == 0);
		assert(*count == len / AMDGPU_BAD_PAGE_LINE && *count <= max);
		for (i = 0; i < *count; i++) {
			assert(out[i].state <= AMDGPU_PAGE_FAILED);
			assert(out[i].size);
			page_line(again, out[i].pfn, out[i].size, flag_of[out[i].state]);
			assert(!memcmp(again, text + i * AMDGPU_BAD_PAGE_LINE,
				       AMDGPU_BAD_PAGE_LINE));
		}
		assert(!memcmp(out + *count, before + *count, (max - *count) * sizeof(*out)));
	}
	free(buf);
	free(before);
	free(out);
	return err;
}

/* 0: a list as the file holds it. */
static void raw_pages(struct fuzz_in *in)
{
	uint8_t room = fuzz_u8(in);
	size_t len, count;
	char *text = fuzz_rest(in, &len);

	bad_pages(text, len, room == 255 ? len / AMDGPU_BAD_PAGE_LINE : room, &count);
	free(text);
}

/* 1: any list the driver writes is read back as it was. */
static void written_pages(struct fuzz_in *in)
{
	size_t room = fuzz_u8(in), n = fuzz_u8(in), count, i;
	char *text = malloc(n * AMDGPU_BAD_PAGE_LINE + 1);
	int err;

	if (!text)
		abort();
	for (i = 0; i < n; i++) {
		uint32_t pfn = fuzz_u32(in), size = fuzz_u32(in);

		page_line(text + i * AMDGPU_BAD_PAGE_LINE, pfn, size ? size : 4096,
			  "RPF"[fuzz_u8(in) % 3]);
	}
	err = bad_pages(text, n * AMDGPU_BAD_PAGE_LINE, room, &count);
	assert(n > room ? err == -E2BIG : !err && count == n);
	free(text);
}

/* amdgpu_ras_parse_err_count(): what it read is the file, printed again. */
static int err_count(const char *text, size_t len, struct amdgpu_err_count *c)
{
	static const char busy[] = "Query currently inaccessible\n";
	struct amdgpu_err_count before;
	char *buf = malloc(len ? len : 1), again[128];
	const char *why = NULL;
	size_t line = 12345;
	int err, n;

	if (!buf)
		abort();
	memcpy(buf, text, len);
	memset(c, CANARY, sizeof(*c));
	before = *c;
	err = amdgpu_ras_parse_err_count(buf, len, c, &why, &line);
	free(buf);
	if (err) {
		assert(err == -EINVAL);
		assert(why);
		assert(line >= 1 && line <= 4);
		assert(!memcmp(c, &before, sizeof(*c)));
		return err;
	}
	assert(line == 0);
	if (c->inaccessible) {
		assert(!c->ue && !c->ce && !c->de && !c->has_de);
		assert(len == sizeof(busy) - 1 && !memcmp(text, busy, len));
		return 0;
	}
	assert(c->has_de || !c->de);
	n = snprintf(again, sizeof(again), "ue: %" PRIu64 "\nce: %" PRIu64 "\n", c->ue, c->ce);
	if (c->has_de)
		n += snprintf(again + n, sizeof(again) - n, "de: %" PRIu64 "\n", c->de);
	assert((size_t)n == len && !memcmp(again, text, len));
	return 0;
}

/* 2: a file as it is. */
static void raw_count(struct fuzz_in *in)
{
	struct amdgpu_err_count c;
	size_t len;
	char *text = fuzz_rest(in, &len);

	err_count(text, len, &c);
	free(text);
}

/* 3: any file the driver writes is read back as it was. */
static void written_count(struct fuzz_in *in)
{
	uint64_t ue = fuzz_u64(in), ce = fuzz_u64(in), de = fuzz_u64(in);
	uint8_t how = fuzz_u8(in);
	struct amdgpu_err_count c;
	char text[128];
	int n;

	if (how & 2)
		ue %= 1000, ce %= 1000, de %= 1000;	/* as most are */
	if (how & 4) {
		n = snprintf(text, sizeof(text), "Query currently inaccessible\n");
	} else {
		n = snprintf(text, sizeof(text), "ue: %" PRIu64 "\nce: %" PRIu64 "\n", ue, ce);
		if (how & 1)	/* UMC, 6.12 */
			n += snprintf(text + n, sizeof(text) - n, "de: %" PRIu64 "\n", de);
	}
	assert(!err_count(text, n, &c));
	if (how & 4) {
		assert(c.inaccessible);
	} else {
		assert(!c.inaccessible && c.ue == ue && c.ce == ce);
		assert(c.has_de == !!(how & 1) && c.de == (how & 1 ? de : 0));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };

	switch (fuzz_u8(&in) & 3) {
	case 0:
		raw_pages(&in);
		break;
	case 1:
		written_pages(&in);
		break;
	case 2:
		raw_count(&in);
		break;
	case 3:
		written_count(&in);
		break;
	}
	return 0;
}
