/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tenants of the control socket: whose a uid is (subuid.c).
 */
#ifndef HBM_SUBUID_H
#define HBM_SUBUID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest file read: 65536 lines of a 64-byte name and two numbers. */
#define HBM_SUBUID_FILE_MAX	(4u << 20)

struct hbm_subuid_range {
	uint32_t start;
	uint32_t line;		/* of the file, from 0: of two of one start, the first's */
	uint64_t end;		/* past its last uid: up to 2^32 */
	uint64_t tenant;	/* its owner's: hbm_tenant() */
};

/**
 * struct hbm_subuids - the subordinate uid ranges of one file, as last read
 * @path: the file (/etc/subuid)
 * @dev: its device, as last read (0: never read, or missing)
 * @ino: its inode
 * @size: its size
 * @mtime_ns: its modification time
 * @ranges: the ranges, sorted by start, overlapping ones merged
 * @nr: their count
 * @bad_lines: lines of the last read that were not a range
 * @error: the last read's error, 0 or a negative errno (-ENOENT: no file)
 */
struct hbm_subuids {
	const char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	struct hbm_subuid_range *ranges;
	size_t nr;
	size_t bad_lines;
	int error;
};

void hbm_subuids_init(struct hbm_subuids *s, const char *path);
void hbm_subuids_free(struct hbm_subuids *s);
int hbm_subuids_refresh(struct hbm_subuids *s);
uint64_t hbm_tenant(const struct hbm_subuids *s, uid_t uid);

#endif /* HBM_SUBUID_H */
