// SPDX-License-Identifier: GPL-2.0
/*
 * Tenants of the control socket: a user's own uid, or the uids the
 * administrator gave a user to run containers as.
 *
 * The socket's limits are per uid (control.c), which hold only while a user
 * has one uid.  A user with subordinate uids in /etc/subuid (subuid(5):
 * useradd gives every new user 65536 of them, and rootless podman runs its
 * containers as them) can act as each of them: newuidmap maps them into a
 * user namespace of the user's, whose processes connect as those host uids
 * (SO_PEERCRED speaks of the daemon's namespace).  Counted apart, eight of
 * them would fill every connection the daemon takes.  So every uid of the
 * lines of /etc/subuid naming one owner is one tenant, keyed by the owner
 * as the line spells it (a digest of it, above every plain uid), apart
 * from the owner's own uid.  Which uid an owner is takes a user database
 * lookup, which may block the loop on a network service; and newuidmap
 * lets a user take a line that names it, its uid as a number, or another
 * name of that uid (find_range(), lib/subordinateio.c of shadow-maint's
 * shadow), so an owner that reads as a number may be a user of that name
 * and is never taken for the uid.  Overlapping lines, which useradd never
 * writes, are one tenant, the one that starts first (or the earlier
 * line of two that start at once).  The file is the
 * administrator's, read again whenever it changes (its inode, size or
 * time), checked at each connection.  A tenant is not known to the daemon
 * where the uids come from elsewhere: ranges a user database serves
 * (subid: in nsswitch.conf, SSSD's) or a container runtime running as root
 * maps itself (Kubernetes' user namespaces) leave each uid limits of its
 * own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sha256.h"
#include "state.h"
#include "subuid.h"

void hbm_subuids_init(struct hbm_subuids *s, const char *path)
{
	*s = (struct hbm_subuids){ .path = path };
}

void hbm_subuids_free(struct hbm_subuids *s)
{
	free(s->ranges);
	s->ranges = NULL;
	s->nr = 0;
}

/* A decimal number of at most 32 bits, nothing else: false otherwise. */
static bool parse_u32(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	if (p == end)
		return false;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return false;
	}
	*out = v;
	return true;
}

/* The tenant of owner @name: bit 63 and 63 bits of its digest. */
static uint64_t owner_tenant(const char *name, const char *end)
{
	uint8_t digest[HBM_SHA256_LEN];
	uint64_t h = 0;
	int i;

	hbm_sha256(name, (size_t)(end - name), digest);
	for (i = 0; i < 8; i++)
		h = h << 8 | digest[i];
	return 1ULL << 63 | h;
}

/* "name:start:count" (subuid(5)) as a range; false for anything else. */
static bool parse_line(const char *p, const char *end, struct hbm_subuid_range *r)
{
	const char *c1 = memchr(p, ':', end - p), *c2;
	uint64_t start, count;

	if (!c1 || c1 == p)
		return false;
	c2 = memchr(c1 + 1, ':', end - c1 - 1);
	if (!c2 || !parse_u32(c1 + 1, c2, &start) || !parse_u32(c2 + 1, end, &count) ||
	    !count || start + count > (uint64_t)UINT32_MAX + 1)
		return false;
	r->start = (uint32_t)start;
	r->end = start + count;
	r->tenant = owner_tenant(p, c1);
	return true;
}

static int by_start(const void *a, const void *b)
{
	const struct hbm_subuid_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;	/* qsort() is not stable */
}

/*
 * Sorted, and overlapping ranges merged: the owner of the one that starts
 * first has them (of two that start at once, the earlier line's).
 */
static size_t merge(struct hbm_subuid_range *r, size_t nr)
{
	size_t i, n = 0;

	qsort(r, nr, sizeof(*r), by_start);
	for (i = 0; i < nr; i++) {
		if (n && r[i].start < r[n - 1].end) {
			if (r[i].end > r[n - 1].end)
				r[n - 1].end = r[i].end;
			continue;
		}
		r[n++] = r[i];
	}
	return n;
}

/* The lines of @buf (@len bytes) as ranges, into a new array of @s. */
static int parse(struct hbm_subuids *s, const char *buf, size_t len)
{
	struct hbm_subuid_range *r = malloc((len / 5 + 1) * sizeof(*r));	/* "a:0:1\n" */
	const char *p = buf, *end = buf + len;
	size_t nr = 0, bad = 0;

	if (!r)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *eol = nl ? nl : end;

		if (eol > p && *p != '#') {	/* not empty, nor a comment */
			if (parse_line(p, eol, &r[nr])) {
				r[nr].line = (uint32_t)nr;
				nr++;
			}
			else
				bad++;
		}
		p = eol + 1;
	}
	free(s->ranges);
	s->ranges = r;
	s->nr = merge(r, nr);
	s->bad_lines = bad;
	return 0;
}

/**
 * hbm_subuids_refresh() - read the file again if it changed
 * @s: the ranges
 *
 * A missing file has no ranges.  A file that cannot be read (or is larger
 * than HBM_SUBUID_FILE_MAX, or not a regular file) keeps the ranges last
 * read, and is tried again at the next call.
 *
 * Return: 1 when read again, 0 when unchanged, or a negative errno (also in
 * @s->error).
 */
int hbm_subuids_refresh(struct hbm_subuids *s)
{
	uint8_t *buf;
	struct stat st;
	int64_t mtime_ns;
	size_t len;
	int err;

	if (stat(s->path, &st)) {
		err = -errno;
		if (err != -ENOENT)
			goto fail;
		hbm_subuids_free(s);
		err = s->error != -ENOENT;
		s->error = -ENOENT;
		s->dev = 0;
		return err;
	}
	mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (!s->error && s->dev == st.st_dev && s->ino == st.st_ino && s->size == st.st_size &&
	    s->mtime_ns == mtime_ns)
		return 0;
	/* this file's own bounds, before a read: not the state files' */
	err = !S_ISREG(st.st_mode) ? -EINVAL :
	      (uint64_t)st.st_size > HBM_SUBUID_FILE_MAX ? -EFBIG :
	      hbm_read_file(AT_FDCWD, s->path, &buf, &len);
	if (err)
		goto fail;
	err = parse(s, (const char *)buf, len);
	free(buf);
	if (err)
		goto fail;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->size = st.st_size;
	s->mtime_ns = mtime_ns;
	s->error = 0;
	return 1;
fail:
	s->error = err;
	return err;
}

/**
 * hbm_tenant() - whose uid @uid is
 * @s: the ranges, as hbm_subuids_refresh() last read them
 * @uid: a uid of the daemon's user namespace
 *
 * Return: @uid, or for a uid in a range of @s its owner's key (2^63 and
 * up), the same for every uid of every range of that owner.
 */
uint64_t hbm_tenant(const struct hbm_subuids *s, uid_t uid)
{
	size_t lo = 0, hi = s->nr;

	while (lo < hi) {	/* the first range starting above @uid */
		size_t mid = lo + (hi - lo) / 2;

		if (s->ranges[mid].start <= uid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && uid < s->ranges[lo - 1].end)
		return s->ranges[lo - 1].tenant;
	return uid;
}
