// SPDX-License-Identifier: GPL-2.0
/*
 * The state file format (state.h) and its atomic writing.  Encoding and
 * decoding are pure functions over a buffer, so the unit tests can damage a
 * file every way there is without a disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/hbmguard.h>

#include "state.h"

/* CRC-32C (Castagnoli), reflected, as in ext4, iSCSI and btrfs. */
uint32_t hbm_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int k;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82f63b78 & -(crc & 1));
	}
	return ~crc;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

size_t hbm_state_encode_size(const struct hbm_state *s)
{
	return HBM_STATE_HEADER_SIZE + s->nr * HBM_STATE_RECORD_SIZE;
}

void hbm_state_encode(const struct hbm_state *s, uint8_t *buf)
{
	uint8_t *h = buf;
	size_t i;

	memset(buf, 0, hbm_state_encode_size(s));
	memcpy(h, HBM_STATE_MAGIC, 8);
	put32(h + 8, HBM_STATE_VERSION);
	put32(h + 12, HBM_STATE_HEADER_SIZE);
	put32(h + 16, HBM_STATE_RECORD_SIZE);
	put32(h + 20, s->nr);
	put64(h + 24, s->serial);
	put32(h + 32, s->page_size);
	memcpy(h + 40, s->identity, strnlen(s->identity, HBM_STATE_IDENTITY_LEN - 1));
	put32(h + 124, hbm_crc32c(0, h, 124));

	for (i = 0; i < s->nr; i++) {
		const struct hbm_state_record *r = &s->records[i];
		uint8_t *p = buf + HBM_STATE_HEADER_SIZE + i * HBM_STATE_RECORD_SIZE;

		put64(p, r->offset);
		put64(p + 8, r->length);
		put64(p + 16, r->first_seen);
		put64(p + 24, r->last_seen);
		p[32] = r->state;
		p[33] = r->source;
		put16(p + 34, r->errors);
		put32(p + 44, hbm_crc32c(0, p, 44));
	}
}

static const char *header_problem(const uint8_t *h, size_t len)
{
	if (len < HBM_STATE_HEADER_SIZE)
		return "shorter than a header";
	if (memcmp(h, HBM_STATE_MAGIC, 8))
		return "not an hbmguard state file";
	if (get32(h + 124) != hbm_crc32c(0, h, 124))
		return "header checksum mismatch";
	if (get32(h + 8) != HBM_STATE_VERSION)
		return "unknown version";
	if (get32(h + 12) != HBM_STATE_HEADER_SIZE ||
	    get32(h + 16) != HBM_STATE_RECORD_SIZE)
		return "unknown header or record size";
	if (!memchr(h + 40, 0, HBM_STATE_IDENTITY_LEN) || !h[40])
		return "identity not a string";
	if (get32(h + 32) < HBMGUARD_PAGE_SIZE_MIN ||
	    get32(h + 32) > HBMGUARD_PAGE_SIZE_MAX ||
	    get32(h + 32) & (get32(h + 32) - 1))
		return "bad page size";
	return NULL;
}

/* A record that checks out, in order after @prev_end. */
static bool record_ok(const uint8_t *p, uint32_t page_size, uint64_t prev_end,
		      struct hbm_state_record *r)
{
	if (get32(p + 44) != hbm_crc32c(0, p, 44))
		return false;
	*r = (struct hbm_state_record){
		.offset = get64(p), .length = get64(p + 8),
		.first_seen = get64(p + 16), .last_seen = get64(p + 24),
		.state = p[32], .source = p[33], .errors = get16(p + 34),
	};
	return get32(p + 36) == 0 && get32(p + 40) == 0 &&
	       r->length && !((r->offset | r->length) & (page_size - 1)) &&
	       r->offset + r->length > r->offset && r->offset >= prev_end &&
	       r->state >= HBMGUARD_STATE_PENDING && r->state <= HBMGUARD_STATE_FAILED &&
	       r->source < __HBMGUARD_SOURCE_MAX;
}

/**
 * hbm_state_decode() - what a state file holds that can be trusted
 * @buf: the file
 * @len: its length
 * @out: the state (free with hbm_state_free())
 * @damage: what was wrong
 *
 * Return: 0, with the good records in @out and the bad counted in @damage
 * (the file was whole when every @damage field is 0); -EBADMSG when the
 * header is not to be trusted (@damage->header says why); -ENOMEM.
 */
int hbm_state_decode(const uint8_t *buf, size_t len, struct hbm_state *out,
		     struct hbm_state_damage *damage)
{
	size_t promised, present, i;
	uint64_t prev_end = 0;

	memset(out, 0, sizeof(*out));
	memset(damage, 0, sizeof(*damage));
	damage->header = header_problem(buf, len);
	if (damage->header)
		return -EBADMSG;
	promised = get32(buf + 20);
	present = (len - HBM_STATE_HEADER_SIZE) / HBM_STATE_RECORD_SIZE;
	if (present > promised)
		present = promised;	/* trailing bytes: not ours */
	damage->missing_records = promised - present;
	memcpy(out->identity, buf + 40, HBM_STATE_IDENTITY_LEN);
	out->page_size = get32(buf + 32);
	out->serial = get64(buf + 24);
	out->records = calloc(present ? present : 1, sizeof(*out->records));
	if (!out->records)
		return -ENOMEM;
	for (i = 0; i < present; i++) {
		const uint8_t *p = buf + HBM_STATE_HEADER_SIZE + i * HBM_STATE_RECORD_SIZE;
		struct hbm_state_record *r = &out->records[out->nr];

		if (!record_ok(p, out->page_size, prev_end, r)) {
			damage->bad_records++;
			continue;
		}
		prev_end = r->offset + r->length;
		out->nr++;
	}
	return 0;
}

void hbm_state_free(struct hbm_state *s)
{
	free(s->records);
	s->records = NULL;
	s->nr = 0;
}

/*
 * The file of an identity: printable characters kept, '/' and anything
 * unusual hex-escaped, so every identity has one name and no name escapes
 * the directory.
 */
int hbm_state_file_name(const char *identity, char *name, size_t len)
{
	size_t n = 0;
	const char *p;

	if (!*identity)
		return -EINVAL;
	for (p = identity; *p; p++) {
		unsigned char c = *p;
		int w = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			(c >= 'A' && c <= 'Z') || c == '-' || c == '_' || c == ':' || c == '.' ?
			snprintf(name + n, len > n ? len - n : 0, "%c", c) :
			snprintf(name + n, len > n ? len - n : 0, "%%%02x", c);

		n += w;
	}
	n += snprintf(name + n, len > n ? len - n : 0, ".state");
	return n < len ? 0 : -ENAMETOOLONG;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		buf += w;
		len -= w;
	}
	return 0;
}

/**
 * hbm_atomic_write() - replace a file of a directory, atomically and durably
 * @dirfd: the directory
 * @name: the file
 * @buf: its new content
 * @len: its length
 *
 * Temporary file, fsync, rename, fsync of the directory: a crash at any
 * moment leaves either the old file or the new one, and a return means the
 * new one is on disk.
 *
 * Return: 0 or a negative errno.
 */
int hbm_atomic_write(int dirfd, const char *name, const void *buf, size_t len)
{
	char tmp[300];
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_all(fd, buf, len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (!err && fsync(dirfd))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

/**
 * hbm_read_file() - a whole file of a directory, up to 64 MiB
 * @dirfd: the directory
 * @name: the file
 * @buf: its content, to free()
 * @len: its length
 *
 * Return: 0 or a negative errno (-ENOENT: no such file).
 */
int hbm_read_file(int dirfd, const char *name, uint8_t **buf, size_t *len)
{
	struct stat st;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size > (64 << 20)) {
		close(fd);
		return -EFBIG;
	}
	*buf = malloc(st.st_size ? st.st_size : 1);
	n = *buf ? pread(fd, *buf, st.st_size, 0) : -1;
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = n;
	return 0;
}

/**
 * hbm_state_write() - replace a device's state file, atomically and durably
 * @dirfd: the state directory
 * @s: the state
 *
 * Return: 0 or a negative errno.
 */
int hbm_state_write(int dirfd, const struct hbm_state *s)
{
	char name[256];
	size_t len = hbm_state_encode_size(s);
	uint8_t *buf = malloc(len);
	int err;

	if (!buf)
		return -ENOMEM;
	err = hbm_state_file_name(s->identity, name, sizeof(name));
	if (!err) {
		hbm_state_encode(s, buf);
		err = hbm_atomic_write(dirfd, name, buf, len);
	}
	free(buf);
	return err;
}

/**
 * hbm_state_read() - load a device's state file
 * @dirfd: the state directory
 * @identity: the device
 * @out: what can be trusted
 * @damage: what could not
 *
 * Return: as hbm_state_decode(); -ENOENT when the device has no file;
 * -EBADMSG also when the file names another identity.
 */
int hbm_state_read(int dirfd, const char *identity, struct hbm_state *out,
		   struct hbm_state_damage *damage)
{
	char name[256];
	uint8_t *buf;
	size_t n;
	int err;

	err = hbm_state_file_name(identity, name, sizeof(name));
	if (err)
		return err;
	err = hbm_read_file(dirfd, name, &buf, &n);
	if (err)
		return err;
	err = hbm_state_decode(buf, n, out, damage);
	free(buf);
	if (!err && strcmp(out->identity, identity)) {
		hbm_state_free(out);
		damage->header = "the file belongs to another identity";
		return -EBADMSG;
	}
	return err;
}

/**
 * hbm_file_quarantine() - move a damaged file of a directory aside
 * @dirfd: the directory
 * @name: the file
 * @moved_to: the new name, for the journal
 * @len: its size
 *
 * Return: 0 or a negative errno.
 */
int hbm_file_quarantine(int dirfd, const char *name, char *moved_to, size_t len)
{
	snprintf(moved_to, len, "%s.corrupt-%lld", name, (long long)time(NULL));
	if (renameat(dirfd, name, dirfd, moved_to))
		return -errno;
	return fsync(dirfd) ? -errno : 0;
}

/**
 * hbm_state_quarantine() - move a damaged state file aside
 * @dirfd: the state directory
 * @identity: the device
 * @moved_to: the new name, for the journal
 * @len: its size
 *
 * Return: 0 or a negative errno.
 */
int hbm_state_quarantine(int dirfd, const char *identity, char *moved_to,
			 size_t len)
{
	char name[256];
	int err = hbm_state_file_name(identity, name, sizeof(name));

	return err ? err : hbm_file_quarantine(dirfd, name, moved_to, len);
}
