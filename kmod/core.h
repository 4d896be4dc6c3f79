/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel-independent core of hbmguard: the bad-page table with its spare
 * pool (table.c) and the error policy (policy.c).  Written once in plain C;
 * compiled into hbmguard.ko and into the unit tests and benchmarks.  The
 * shim below is all that differs between the two.
 *
 * The core does no locking and never sleeps on its own: the caller holds the
 * device's lock and passes the time in, which keeps tests deterministic.
 * Allocation may sleep in the kernel (GFP_KERNEL).
 */
#ifndef HBM_CORE_H
#define HBM_CORE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/bitops.h>
#include <linux/bitmap.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/hbmguard.h>

/* Counted, so that unloading the module can prove nothing leaked. */
void *hbm_kalloc(size_t size, bool zero);
void hbm_kfree(const void *ptr);
#define hbm_zalloc(size)	hbm_kalloc(size, true)
#define hbm_alloc(size)		hbm_kalloc(size, false)
#define hbm_free(ptr)		hbm_kfree(ptr)
#define hbm_div_u64(n, d)	div_u64(n, d)
/* Loops over a range's pages: the caller holds a mutex, never a spinlock. */
#define hbm_cond_resched()	cond_resched()
#else /* userspace: unit tests and benchmarks */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <linux/hbmguard.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

/* Tests set this to make the Nth allocation from now fail (-1: never). */
extern long hbm_test_alloc_fail_in;
void *hbm_test_alloc(size_t size, bool zero);
void hbm_test_free(void *ptr);
#define hbm_zalloc(size)	hbm_test_alloc(size, true)
#define hbm_alloc(size)		hbm_test_alloc(size, false)
#define hbm_free(ptr)		hbm_test_free(ptr)
#define hbm_div_u64(n, d)	((u64)(n) / (d))
#define hbm_cond_resched()	do { } while (0)

/* A broken invariant: counted, so a test sees what the kernel would print. */
extern unsigned long hbm_test_warnings;
static inline bool hbm_test_warn(bool cond)
{
	hbm_test_warnings += cond;
	return cond;
}
#define WARN_ON_ONCE(cond)	hbm_test_warn(!!(cond))
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define noinline		__attribute__((noinline))

#define BITS_PER_LONG		(8 * (int)sizeof(unsigned long))
#define BITS_TO_LONGS(n)	(((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)
#define min(a, b)		((a) < (b) ? (a) : (b))
#define max(a, b)		((a) > (b) ? (a) : (b))
#define min_t(t, a, b)		min((t)(a), (t)(b))
#define max_t(t, a, b)		max((t)(a), (t)(b))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))

static inline void __set_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG);
}

static inline void __clear_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] &= ~(1UL << (nr % BITS_PER_LONG));
}

static inline bool test_bit(unsigned long nr, const unsigned long *map)
{
	return map[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG) & 1;
}

/* The first bit from @start that is clear (@clear) or set, or @size. */
static inline unsigned long hbm_find_next(const unsigned long *map,
					  unsigned long size,
					  unsigned long start, bool clear)
{
	while (start < size) {
		unsigned long word = (clear ? ~map[start / BITS_PER_LONG] :
				      map[start / BITS_PER_LONG]) >>
				     (start % BITS_PER_LONG);

		if (word) {
			start += __builtin_ctzl(word);
			return start < size ? start : size;
		}
		start = (start / BITS_PER_LONG + 1) * BITS_PER_LONG;
	}
	return size;
}

static inline unsigned long find_next_zero_bit(const unsigned long *map,
					       unsigned long size,
					       unsigned long start)
{
	return hbm_find_next(map, size, start, true);
}

static inline unsigned long find_next_bit(const unsigned long *map,
					  unsigned long size,
					  unsigned long start)
{
	return hbm_find_next(map, size, start, false);
}

static inline void bitmap_set(unsigned long *map, unsigned int start,
			      unsigned int nr)
{
	while (nr--)
		__set_bit(start++, map);
}

static inline void bitmap_clear(unsigned long *map, unsigned int start,
				unsigned int nr)
{
	while (nr--)
		__clear_bit(start++, map);
}
#endif /* __KERNEL__ */

#define HBM_NO_SPARE	0xffffffffU

/*
 * One run of bad pages sharing state and source whose spares, when RETIRED,
 * are consecutive too.  24 bytes: page numbers are 32 bits (a device has at
 * most 2^32 pages: 16 TiB of 4 KiB pages), times are seconds.
 */
struct hbm_extent {
	u32 first;
	u32 nr;
	u32 spare;		/* spare index serving page `first` */
	u8 state;		/* enum hbmguard_page_state */
	u8 source;		/* enum hbmguard_source */
	u16 errors;		/* saturating */
	u32 first_seen;
	u32 last_seen;
};

/* An uncorrectable error or poison: the data where it hit is gone. */
static inline bool hbm_source_destroys(u8 source)
{
	return source == HBMGUARD_SOURCE_UE || source == HBMGUARD_SOURCE_POISON;
}

#define HBM_LEAF_CAP	170	/* a leaf fills one 4 KiB allocation */

struct hbm_leaf {
	u32 nr;
	u32 unused;
	struct hbm_extent ext[HBM_LEAF_CAP];
};

/* A copy of what a lookup needs of a leaf before it touches the leaf. */
struct hbm_leaf_key {
	u32 first;		/* ext[0].first */
	u32 nr;
};

struct hbm_table {
	u32 nr_pages;		/* usable pages: [0, nr_pages) */
	u32 spare_total;
	u32 spare_used;
	u32 spare_hint;		/* next-fit: where the last spare came from */
	u32 spare_bad;		/* spares that failed: out of the pool for good */
	unsigned long *spare_map;	/* bit set: spare in use, or failed */
	unsigned long *spare_bad_map;	/* bit set: spare failed */

	struct hbm_leaf **leaves;	/* sorted, none empty */
	struct hbm_leaf_key *keys;	/* of each leaf, packed for search */
	u32 nr_leaves;
	u32 cap_leaves;

	u32 nr_extents;
	u32 pages[__HBMGUARD_STATE_MAX];	/* pages per state */
	u64 bytes;		/* memory held by the table */
	/*
	 * The device's driver bypasses bad pages itself (a discrete GPU): a
	 * page retired is RETIRED without a spare, and the pool (empty) is
	 * never asked.
	 */
	bool driver_bypass;
};

/* What one table operation changed, for events and health. */
struct hbm_result {
	u32 retired;		/* pages that became RETIRED */
	u32 pending;		/* pages that became PENDING */
	u32 failed;		/* pages that became FAILED */
	u32 cleared;		/* pages that left the table */
	u32 spares_failed;	/* spares that left the pool */
};

enum hbm_op {
	HBM_OP_PENDING,		/* record, do not bypass */
	HBM_OP_RETIRE,		/* record and bypass */
	HBM_OP_CLEAR,		/* forget, return spares */
	HBM_OP_RESPARE,		/* internal: hbm_table_spare_fail() */
};

/* One range of hbm_table_apply_gap(), with the record its pages get. */
struct hbm_page_range {
	u32 first;
	u32 nr;
	u32 first_seen;		/* seconds since the epoch */
	u32 last_seen;
	u16 errors;
	u8 op;			/* enum hbm_op */
	u8 source;		/* enum hbmguard_source */
};

int hbm_table_init(struct hbm_table *t, u32 nr_pages, u32 spare_total);
void hbm_table_destroy(struct hbm_table *t);
int hbm_table_apply(struct hbm_table *t, enum hbm_op op, u32 first, u32 nr,
		    u8 source, u16 errors, u32 now, struct hbm_result *res);
int hbm_table_apply_gap(struct hbm_table *t, const struct hbm_page_range *r, u32 n,
			struct hbm_result *res);
int hbm_table_spare_fail(struct hbm_table *t, u32 spare, u16 errors, u32 now,
			 struct hbm_result *res, u32 *page);
bool hbm_table_lookup(const struct hbm_table *t, u32 page,
		      struct hbm_extent *out);
bool hbm_table_count(struct hbm_table *t, u32 page, u16 errors, u32 now);
u32 hbm_table_list(const struct hbm_table *t, u32 start, u32 end,
		   struct hbm_extent *out, u32 max, u32 *next);
u32 hbm_table_bad_pages(const struct hbm_table *t);
void hbm_table_walk(const struct hbm_table *t,
		    void (*fn)(const struct hbm_extent *e, void *arg), void *arg);

/*
 * Correctable-error leaky buckets, one per page, a bounded set per device
 * (policy.c): an unordered array, a hash of page to entry, and a heap of
 * entries emptiest first.
 */
struct hbm_ce_entry {
	u32 page;
	u32 last;		/* seconds from which draining counts */
	u32 level;		/* errors in the bucket at @last */
	u32 heap;		/* its place in the heap */
};

#define HBM_CE_TRACKED_MIN	64	/* buckets a device starts with */
#define HBM_CE_TRACKED_MAX	100000	/* buckets a device may grow to */

struct hbm_policy {
	u32 ce_threshold;
	u32 ce_window;
	u32 retire_limit;
};

#define HBM_CE_THRESHOLD_MAX	65535
#define HBM_CE_WINDOW_MAX	(365 * 86400)

struct hbm_core {
	struct hbm_table table;
	struct hbm_policy policy;	/* hbm_core_set_policy() changes it */
	struct hbm_policy defaults;	/* the policy it started with: what 0 sets */
	struct hbm_ce_entry *ce;	/* ce_nr of ce_cap, in no order */
	u32 *ce_heap;			/* entry indices, the emptiest first */
	u32 *ce_hash;			/* page -> entry index + 1; 0: free */
	u32 ce_nr;
	u32 ce_cap;
	u32 ce_hash_bits;
	u32 health;			/* enum hbmguard_health */
	u32 driver_health;		/* the driver's facts: enum hbmguard_health */
	u64 ce_events;
	u64 ue_events;
	u64 ce_evicted;			/* buckets dropped to make room */
	u64 ce_forgotten;		/* the errors they held */
	u64 ce_bytes;			/* memory the buckets take */
};

int hbm_core_init(struct hbm_core *c, u32 nr_pages, u32 spare_total,
		  u32 page_size);
void hbm_core_destroy(struct hbm_core *c);
u32 hbm_default_retire_limit(u64 hbm_bytes);
int hbm_policy_check(const struct hbm_policy *p, u32 nr_pages);
int hbm_core_report(struct hbm_core *c, u32 page, u32 kind, u32 count,
		    u32 now, struct hbm_result *res, u32 *served);
int hbm_core_apply(struct hbm_core *c, enum hbm_op op, u32 first, u32 nr,
		   u8 source, u32 now, struct hbm_result *res);
int hbm_core_restore(struct hbm_core *c, const struct hbm_page_range *r, u32 n,
		     u32 now, struct hbm_result *res, u32 *done);
u32 hbm_core_health(const struct hbm_core *c);
void hbm_core_set_policy(struct hbm_core *c, const struct hbm_policy *p);
u32 hbm_ce_level(const struct hbm_core *c, u32 page, u32 now);

#endif /* HBM_CORE_H */
