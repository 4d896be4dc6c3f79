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

/* A list of ranges, sorted, not overlapping, not touching: a set's fresh part. */
struct hbm_ranges {
	struct hbm_range *r;
	size_t nr;
};

void hbm_ranges_free(struct hbm_ranges *s);

/*
 * A node of a set's B+tree (seen.c): a leaf's ranges, or an inner node's
 * children, each keyed by the offset of the first range below it.  4 KiB
 * with malloc's header.
 */
#define HBM_RANGE_NODE_MAX	255

struct hbm_range_node {
	uint32_t nr;
	uint32_t level;		/* 0: a leaf */
	union hbm_range_slot {
		struct hbm_range r;
		struct {
			uint64_t first;
			struct hbm_range_node *child;
		} c;
	} e[HBM_RANGE_NODE_MAX];
};

/* A set of ranges, sorted, not overlapping, not touching. */
struct hbm_range_set {
	struct hbm_range_node *root;
	struct hbm_range_node *last;	/* the last leaf: where a table read appends */
	struct hbm_range_node *spare;	/* nodes kept for a split, linked by e[0].c.child */
	uint32_t height;		/* 0: empty */
	uint32_t nr_spare;
	size_t nr;			/* ranges */
	unsigned long moved;		/* slots moved or copied: what changes cost, for the tests */
};

int hbm_range_set_add(struct hbm_range_set *s, uint64_t offset, uint64_t length,
		      struct hbm_ranges *fresh);
int hbm_range_set_remove(struct hbm_range_set *s, uint64_t offset, uint64_t length);
void hbm_range_set_remove_around(struct hbm_range_set *s, uint64_t offset, uint64_t length,
				 struct hbm_range around[2]);
void hbm_range_set_free(struct hbm_range_set *s);
/* Where seen.c takes its nodes; weak, so that the unit tests can make it fail. */
void *hbm_range_node_alloc(size_t size);

#endif /* HBM_SEEN_H */
