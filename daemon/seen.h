/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What hbmguardd has seen of the kernel's events, to tell after a loss
 * (a sequence gap, ENOBUFS, DROPPED) what it missed: the seqnum it expects
 * next, and per device the pages whose lost data it has acted upon.
 */
#ifndef HBM_SEEN_H
#define HBM_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool hbm_seq_lost(uint64_t *next, uint64_t seq, uint32_t type);

struct hbm_range {
	uint64_t offset;
	uint64_t length;
};

/* Sorted, not overlapping, not touching. */
struct hbm_ranges {
	struct hbm_range *r;
	size_t nr;
};

int hbm_ranges_add(struct hbm_ranges *s, uint64_t offset, uint64_t length,
		   struct hbm_ranges *fresh);
int hbm_ranges_remove(struct hbm_ranges *s, uint64_t offset, uint64_t length);
void hbm_ranges_free(struct hbm_ranges *s);

#endif /* HBM_SEEN_H */
