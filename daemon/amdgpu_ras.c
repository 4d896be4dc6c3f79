// SPDX-License-Identifier: GPL-2.0
/*
 * amdgpu's RAS sysfs files, as drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c of
 * Linux 6.12 (and 6.1, where noted) writes them:
 *
 * ras/gpu_vram_bad_pages, amdgpu_ras_sysfs_badpages_read(): one line per
 *	bad page, "0x%08x : 0x%08x : %1s\n" of struct ras_badpage's bp (the
 *	GPU page frame, an unsigned int), size (AMDGPU_GPU_PAGE_SIZE) and
 *	amdgpu_ras_badpage_flags_str(): "R" reserved, "P" pending, "F" failed
 *	to reserve.  Every line is sizeof("0xabcdabcd : 0x12345678 : R\n") - 1
 *	= 28 bytes, which the driver's read() relies on to find the line at an
 *	offset.  No bad page: an empty file.  The same in 6.1.
 * ras/<block>_err_count, amdgpu_ras_sysfs_read(): "ue: %lu\nce: %lu\n",
 *	with a third line "de: %lu\n" (deferred errors) for the UMC block in
 *	6.12 but not 6.1; "Query currently inaccessible\n" while the counters
 *	cannot be read (both); a read() that fails EINVAL where the query
 *	fails (amdgpu_ras_query_error_status(): in 6.12 too while a reset
 *	holds the reset domain's lock), taken as inaccessible.  <block> is the
 *	block's name ("umc", "gfx", "sdma", ...; "%s_err_count" of head->name).
 *
 * amdgpu has no event for these: the daemon polls them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amdgpu_ras.h"

#define FAIL(msg) do { *why = (msg); return -EINVAL; } while (0)

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;	/* %x writes lower case only */
}

/* Eight lower-case hex digits, as %08x writes a 32-bit value. */
static bool hex8(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 8; i++) {
		if (hexdigit(s[i]) < 0)
			return false;
		v = v << 4 | hexdigit(s[i]);
	}
	*out = v;
	return true;
}

/**
 * amdgpu_ras_parse_bad_pages() - the lines of ras/gpu_vram_bad_pages
 * @buf: the file's content
 * @len: its length
 * @out: room for @max pages
 * @max: how many fit
 * @count: out: pages parsed
 * @why: on error, what was wrong
 * @line: on error, the line (from 1)
 *
 * Return: 0, -EINVAL for a line not in the driver's format (a NUL byte,
 * upper-case hex, a missing newline, a flag other than R, P or F, a page
 * size of 0), -E2BIG for more pages than @max.
 */
int amdgpu_ras_parse_bad_pages(const char *buf, size_t len,
			       struct amdgpu_bad_page *out, size_t max,
			       size_t *count, const char **why, size_t *line)
{
	size_t n = len / AMDGPU_BAD_PAGE_LINE, i;

	*line = 0;
	if (memchr(buf, '\0', len)) {
		*line = 1 + (size_t)((const char *)memchr(buf, '\0', len) - buf) /
			AMDGPU_BAD_PAGE_LINE;
		FAIL("a NUL byte in the bad-page list");
	}
	/* Check every line before writing any. */
	for (i = 0; i * AMDGPU_BAD_PAGE_LINE < len; i++) {
		const char *s = buf + i * AMDGPU_BAD_PAGE_LINE;
		uint32_t pfn, size;

		*line = i + 1;
		if (len - i * AMDGPU_BAD_PAGE_LINE < AMDGPU_BAD_PAGE_LINE ||
		    s[AMDGPU_BAD_PAGE_LINE - 1] != '\n')
			FAIL("a bad-page line that is not 28 bytes ending in a newline");
		if (memcmp(s, "0x", 2) || !hex8(s + 2, &pfn) ||
		    memcmp(s + 10, " : 0x", 5) || !hex8(s + 15, &size) ||
		    memcmp(s + 23, " : ", 3))
			FAIL("a bad-page line not \"0x%08x : 0x%08x : %1s\"");
		if (s[26] != 'R' && s[26] != 'P' && s[26] != 'F')
			FAIL("a bad page whose flag is not R, P or F");
		if (!size)
			FAIL("a bad page of size 0");
	}
	if (n > max) {
		*line = max + 1;
		*why = "more bad pages than there is room for";
		return -E2BIG;
	}
	for (i = 0; i < n; i++) {
		const char *s = buf + i * AMDGPU_BAD_PAGE_LINE;

		hex8(s + 2, &out[i].pfn);
		hex8(s + 15, &out[i].size);
		out[i].state = s[26] == 'R' ? AMDGPU_PAGE_RESERVED :
			       s[26] == 'P' ? AMDGPU_PAGE_PENDING : AMDGPU_PAGE_FAILED;
	}
	*line = 0;
	*count = n;
	return 0;
}

/* "KEY: %lu\n" at *p; advances *p. */
static bool count_line(const char **p, const char *end, const char *key,
		       uint64_t *out)
{
	const char *s = *p;
	size_t klen = strlen(key);
	uint64_t v = 0;

	if ((size_t)(end - s) < klen + 2 || memcmp(s, key, klen) ||
	    memcmp(s + klen, ": ", 2))
		return false;
	s += klen + 2;
	if (s == end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < end &&
						  s[1] >= '0' && s[1] <= '9'))
		return false;	/* %lu: no sign, no leading zero */
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (*s - '0')) / 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	if (s == end || *s != '\n')
		return false;
	*p = s + 1;
	*out = v;
	return true;
}

/**
 * amdgpu_ras_parse_err_count() - a ras/<block>_err_count file
 * @buf: the file's content
 * @len: its length
 * @c: the counts, on success
 * @why: on error, what was wrong
 * @line: on error, the line (from 1)
 *
 * Return: 0, or -EINVAL for content not in the driver's format.
 */
int amdgpu_ras_parse_err_count(const char *buf, size_t len,
			       struct amdgpu_err_count *c, const char **why,
			       size_t *line)
{
	static const char busy[] = "Query currently inaccessible\n";
	const char *p = buf, *end = buf + len;
	struct amdgpu_err_count t = { 0 };

	*line = 1;
	if (memchr(buf, '\0', len))
		FAIL("a NUL byte in an error count");
	if (len == sizeof(busy) - 1 && !memcmp(buf, busy, len)) {
		t.inaccessible = true;
	} else {
		if (!count_line(&p, end, "ue", &t.ue))
			FAIL("an error count whose first line is not \"ue: %lu\"");
		*line = 2;
		if (!count_line(&p, end, "ce", &t.ce))
			FAIL("an error count whose second line is not \"ce: %lu\"");
		*line = 3;
		if (p < end) {
			if (!count_line(&p, end, "de", &t.de))
				FAIL("an error count whose third line is not \"de: %lu\"");
			t.has_de = true;
		}
		*line = 4;
		if (p < end)
			FAIL("an error count with more than ue, ce and de");
	}
	*line = 0;
	*c = t;
	return 0;
}

/*
 * A whole file, NUL-terminated, of at most @max bytes (-EFBIG beyond).
 * Every read() asks for at least READ_ROOM bytes: the bad-page list's read
 * (amdgpu_ras_sysfs_badpages_read()) returns only the lines that end
 * within the bytes asked for, so a read of fewer than 29 bytes would
 * return 0 and look like the end of the list.
 */
#define READ_ROOM	4096

static int read_all(int dirfd, const char *name, size_t max, char **buf, size_t *len)
{
	size_t cap = 2 * READ_ROOM, n = 0;
	char *b = malloc(cap + 1), *nb;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC), err = 0;
	ssize_t r;

	if (fd < 0 || !b) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (;;) {
		if (cap - n < READ_ROOM) {
			if (cap >= max + READ_ROOM) {
				err = -EFBIG;
				goto out;
			}
			cap *= 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			goto out;
		}
		if (!r)
			break;
		n += r;
	}
	if (n > max)
		err = -EFBIG;
out:
	if (fd >= 0)
		close(fd);
	if (err) {
		free(b);
		return err;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* Blocks by name: the name is each element's first member. */
static int cmp_block(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* The most bad pages a card's list may hold: amdgpu's EEPROM holds ~10,900. */
#define AMDGPU_BAD_PAGES_MAX	(1u << 20)

/**
 * amdgpu_ras_read() - one card's ras/ directory
 * @device_dir: /sys/class/drm/cardN/device, or a fixture's
 * @ras: what it says, on success (amdgpu_ras_free() it)
 * @why: on error, what was wrong
 * @file: on error, the file it was in (relative to @device_dir)
 * @file_len: room at @file
 * @line: on error, the line, or 0
 *
 * Return: 0; -ENOENT when the card has no ras/ directory (RAS off, or not
 * amdgpu); an error of a file: its parser's, or reading's.
 */
int amdgpu_ras_read(const char *device_dir, struct amdgpu_ras *ras,
		    const char **why, char *file, size_t file_len, size_t *line)
{
	struct amdgpu_ras r = { 0 };
	struct dirent *de;
	size_t len, n;
	char path[4096], *buf = NULL;
	DIR *dir;
	int dfd, err;

	*line = 0;
	snprintf(file, file_len, "ras");
	if ((size_t)snprintf(path, sizeof(path), "%s/ras", device_dir) >= sizeof(path)) {
		*why = "a path too long";
		return -ENAMETOOLONG;
	}
	dir = opendir(path);
	if (!dir) {
		*why = "no ras directory";
		return -errno;
	}
	dfd = dirfd(dir);

	snprintf(file, file_len, "ras/gpu_vram_bad_pages");
	err = read_all(dfd, "gpu_vram_bad_pages", (size_t)AMDGPU_BAD_PAGES_MAX *
		       AMDGPU_BAD_PAGE_LINE, &buf, &len);
	if (err == -ENOENT) {
		err = 0;	/* no bad-page table on this card */
	} else if (err) {
		*why = "cannot read the bad-page list";
	} else {
		n = len / AMDGPU_BAD_PAGE_LINE;
		r.pages = calloc(n ? n : 1, sizeof(*r.pages));
		if (!r.pages) {
			*why = "out of memory";
			err = -ENOMEM;
		} else {
			err = amdgpu_ras_parse_bad_pages(buf, len, r.pages, n,
							 &r.nr_pages, why, line);
		}
	}
	free(buf);
	buf = NULL;

	while (!err && (errno = 0, de = readdir(dir))) {
		size_t nl = strlen(de->d_name), sl = strlen("_err_count");

		if (nl <= sl || strcmp(de->d_name + nl - sl, "_err_count"))
			continue;
		snprintf(file, file_len, "ras/%s", de->d_name);
		if (nl - sl >= AMDGPU_BLOCK_NAME) {
			*why = "a block name longer than amdgpu's";
			err = -ENAMETOOLONG;
		} else if (r.nr_blocks == AMDGPU_RAS_BLOCKS) {
			*why = "more error-count files than amdgpu has blocks";
			err = -E2BIG;
		} else {
			err = read_all(dfd, de->d_name, 4096, &buf, &len);
			if (err == -ENOMEM || err == -EFBIG) {
				*why = "cannot read an error count";
			} else if (err) {
				/* a query that fails blinds that block, not the card's list */
				r.block[r.nr_blocks].count = (struct amdgpu_err_count){
					.inaccessible = true };
				err = 0;
			} else {
				err = amdgpu_ras_parse_err_count(buf, len,
								 &r.block[r.nr_blocks].count,
								 why, line);
			}
			memcpy(r.block[r.nr_blocks].name, de->d_name, nl - sl);
			r.block[r.nr_blocks].name[nl - sl] = '\0';
			r.nr_blocks += !err;
		}
		free(buf);
		buf = NULL;
	}
	if (!err && errno) {
		err = -errno;
		*why = "cannot list the ras directory";
	}
	closedir(dir);
	if (err) {
		free(r.pages);
		return err;
	}
	qsort(r.block, r.nr_blocks, sizeof(r.block[0]), cmp_block);
	*ras = r;
	return 0;
}

void amdgpu_ras_free(struct amdgpu_ras *ras)
{
	free(ras->pages);
	ras->pages = NULL;
	ras->nr_pages = 0;
}
