/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One copy of the mapped table's B+tree (mtree.c), plain C like table.c:
 * compiled into hbmguard.ko and into the unit tests.  Nodes live in 4 KiB
 * chunks that the caller backs (map.c maps them to userspace); the layout
 * is uapi/linux/hbmguard.h's struct hbmguard_map_node.
 */
#ifndef HBM_MTREE_H
#define HBM_MTREE_H

#include "core.h"

#define HBM_MNODE_NONE		0xffffffffU

/*
 * A chunk is a page, so that map.c can hand it to userspace as it is (64
 * KiB on an arm64 kernel so configured, as Grace Hopper nodes often are);
 * readers address nodes by index and see no chunks.  Its pointer is
 * published with release: whoever finds the pointer finds the page zeroed.
 */
#ifdef __KERNEL__
#include <linux/gfp.h>
#include <linux/prefetch.h>
#include <asm/barrier.h>
#define HBM_MCHUNK_BYTES	PAGE_SIZE
#define hbm_mchunk_alloc()	((void *)get_zeroed_page(GFP_KERNEL))
#define hbm_mchunk_free(p)	free_page((unsigned long)(p))
#define hbm_mchunk_publish(slot, c)	smp_store_release(slot, c)
#define hbm_prefetch(p)		prefetch(p)
#define hbm_mtree_descended()	do { } while (0)
#else
#define HBM_MCHUNK_BYTES	4096
#define hbm_mchunk_alloc()	hbm_test_alloc(HBM_MCHUNK_BYTES, true)
#define hbm_mchunk_free(p)	hbm_test_free(p)
#define hbm_mchunk_publish(slot, c)	__atomic_store_n(slot, c, __ATOMIC_RELEASE)
#define hbm_prefetch(p)		__builtin_prefetch(p)
/*
 * Descents from the root in any copy, counted in the userspace builds
 * (unit, bench-core: tests/unit/shim.c): an append that descended per
 * extent would still make the same nodes, and only the count shows it.
 */
extern unsigned long hbm_mtree_descents;
#define hbm_mtree_descended()	(hbm_mtree_descents++)
#endif
#define HBM_MNODES_PER_CHUNK	(HBM_MCHUNK_BYTES / HBMGUARD_MAP_NODE_SIZE)

struct hbm_mtree {
	void **chunk;		/* chunk[i]: nodes from i * HBM_MNODES_PER_CHUNK */
	u32 max_chunks;
	u32 nr_chunks;		/* backed: nodes below nr_chunks * HBM_MNODES_PER_CHUNK */
	u32 used;		/* nodes handed out, freed ones included */
	u32 free;		/* freed nodes, linked through in.first[0] */
	u32 nr_free;
	u32 root;
	u32 height;		/* 0: empty */
	u32 nr;			/* extents */
};

/*
 * Room for hbm_mtree_sync() to list extents a batch at a time, and its
 * record of what it did, for hbm_mtree_follow().
 */
#define HBM_MSYNC_BATCH		32
#define HBM_MSYNC_LOG		(2 * HBM_MSYNC_BATCH)	/* hbm_mtree_change()'s most */
struct hbm_mop {
	bool del;
	struct hbmguard_map_entry e;
};

/* A descent: the node and the slot taken at each level, 0 the leaf. */
struct hbm_mpath {
	u32 node[HBMGUARD_MAP_HEIGHT_MAX];
	u32 slot[HBMGUARD_MAP_HEIGHT_MAX];	/* the leaf's: extents at or below the page */
};

struct hbm_mscratch {
	struct hbmguard_map_entry old[HBM_MSYNC_BATCH];
	struct hbm_extent cur[HBM_MSYNC_BATCH];
	struct hbm_mop log[HBM_MSYNC_LOG];
	u32 nr_log;		/* beyond HBM_MSYNC_LOG: the record is short */
	/*
	 * hbm_mtree_change()'s lone insertion (a page retired alone): where it
	 * went in, so that hbm_mtree_follow() need not descend the other copy.
	 */
	bool at_valid;
	u32 at_root, at_height, at_nr;	/* the copy's, and its leaf's extents, before */
	struct hbm_mpath at;
};

u32 hbm_mtree_max_nodes(u32 capacity);
int hbm_mtree_init(struct hbm_mtree *t, u32 max_nodes);
void hbm_mtree_destroy(struct hbm_mtree *t);
int hbm_mtree_reserve(struct hbm_mtree *t, u32 inserts);
int hbm_mtree_grow(struct hbm_mtree *t, u32 chunks);
void hbm_mtree_clear(struct hbm_mtree *t);
int hbm_mtree_insert(struct hbm_mtree *t, const struct hbmguard_map_entry *e);
int hbm_mtree_upsert(struct hbm_mtree *t, const struct hbmguard_map_entry *e);
int hbm_mtree_delete(struct hbm_mtree *t, u32 first);
bool hbm_mtree_find(const struct hbm_mtree *t, u32 page,
		    struct hbmguard_map_entry *out);
u32 hbm_mtree_list(const struct hbm_mtree *t, u32 start, u32 end,
		   struct hbmguard_map_entry *out, u32 max);
struct hbmguard_map_node *hbm_mtree_node(const struct hbm_mtree *t, u32 i);
void hbm_mtree_span(const struct hbm_mtree *m, const struct hbm_table *t,
		    u32 *lo, u32 *hi);
int hbm_mtree_sync(struct hbm_mtree *m, const struct hbm_table *t, u32 lo,
		   u32 hi, struct hbm_mscratch *s, int (*reserve)(void *arg),
		   void *arg);
int hbm_mtree_change(struct hbm_mtree *m, const struct hbm_table *t, u32 *lo,
		     u32 *hi, struct hbm_mscratch *s, int (*reserve)(void *arg),
		     void *arg);
int hbm_mtree_follow(struct hbm_mtree *m, const struct hbm_table *t, u32 lo,
		     u32 hi, struct hbm_mscratch *s, int (*reserve)(void *arg),
		     void *arg);
int hbm_mtree_rebuild(struct hbm_mtree *m, const struct hbm_table *t,
		      int (*reserve)(void *arg), void *arg);

#endif /* HBM_MTREE_H */
