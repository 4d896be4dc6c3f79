/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libhbmguard: what training frameworks and allocators use of hbmguard.
 *
 * The translation table: look up which bytes serve a device offset, with no
 * syscall, from the table the module publishes in shared memory.
 *
 *	int fd = hbmguard_open();
 *	struct hbmguard_table *t;
 *	hbmguard_table_open(fd, device, &t);
 *	hbmguard_translate(t, offset, &served, &state);
 *	hbmguard_range_is_clean(t, offset, length);
 *	... poll(fd) says when the table changed ...
 *	hbmguard_table_close(t);
 *
 * Functions return 0 or a negative errno.  A table may be read from any
 * number of threads at once; it never blocks the kernel, and a reader that
 * meets a concurrent update retries on its own.
 */
#ifndef LIBHBMGUARD_H
#define LIBHBMGUARD_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/hbmguard.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hbmguard_table;

/* open("/dev/hbmguard") read-only, close-on-exec: an fd, or -errno. */
int hbmguard_open(void);

/* Map device @device's table; *@out until hbmguard_table_close(). */
int hbmguard_table_open(int fd, uint32_t device, struct hbmguard_table **out);
void hbmguard_table_close(struct hbmguard_table *t);

/*
 * Where @offset (below the device's usable size) is served from: *@served is
 * in the spare area for a RETIRED page, @offset itself otherwise; *@state is
 * enum hbmguard_page_state (PENDING and FAILED pages are not to be used).
 * -ERANGE outside the device; -EOVERFLOW when the table outgrew its mapping
 * (use HBMGUARD_IOC_TRANSLATE).
 */
int hbmguard_translate(struct hbmguard_table *t, uint64_t offset,
		       uint64_t *served, uint32_t *state);

/* 1 when no page of [offset, offset + length) is in the table, 0 when one
 * is, or -errno as hbmguard_translate(). */
int hbmguard_range_is_clean(struct hbmguard_table *t, uint64_t offset,
			    uint64_t length);

/* The device generation the table shows, and whether the device is gone. */
uint64_t hbmguard_table_generation(struct hbmguard_table *t);
bool hbmguard_table_removed(struct hbmguard_table *t);

#ifdef __cplusplus
}
#endif

#endif /* LIBHBMGUARD_H */
