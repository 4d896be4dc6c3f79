// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the error policy (kmod/policy.c). */
#include <check.h>
#include "core.h"
#include "unit.h"

#define NOW 1700000000u
#define PAGES 65536u		/* 256 MiB of 4 KiB pages */
#define SPARES 16u

static struct hbm_core c;
static struct hbm_result res;
static u32 served;

static void setup(void)
{
	hbm_test_alloc_fail_in = -1;
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(hbm_core_init(&c, PAGES, SPARES, 4096), 0);
}

static void teardown(void)
{
	hbm_core_destroy(&c);
}

static int report(u32 page, u32 kind, u32 count, u32 now)
{
	return hbm_core_report(&c, page, kind, count, now, &res, &served);
}

static u8 state_of(u32 page)
{
	struct hbm_extent e;

	return hbm_table_lookup(&c.table, page, &e) ? e.state : HBMGUARD_STATE_CLEAN;
}

START_TEST(defaults)
{
	ck_assert_uint_eq(c.policy.ce_threshold, 50);
	ck_assert_uint_eq(c.policy.ce_window, 86400);
	/* (65536 + 16) pages of 4 KiB = 256 MiB: 2 pages at one per 100 MiB. */
	ck_assert_uint_eq(c.policy.retire_limit, 2);
	ck_assert_uint_eq(hbm_default_retire_limit(80ULL << 30), 819);
	ck_assert_uint_eq(hbm_default_retire_limit(1 << 20), 1);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_OK);
}
END_TEST

START_TEST(ue_and_poison_retire_at_once)
{
	ck_assert_int_eq(report(7, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(res.retired, 1);
	ck_assert_uint_eq(state_of(7), HBMGUARD_STATE_RETIRED);
	ck_assert_int_eq(report(9, HBMGUARD_ERROR_POISON, 1, NOW), 0);
	ck_assert_uint_eq(state_of(9), HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(c.ue_events, 2);
}
END_TEST

START_TEST(ce_below_threshold_counts_only)
{
	ck_assert_int_eq(report(5, HBMGUARD_ERROR_CE, 49, NOW), 0);
	ck_assert_uint_eq(state_of(5), HBMGUARD_STATE_CLEAN);
	ck_assert_uint_eq(hbm_ce_level(&c, 5, NOW), 49);
	ck_assert_uint_eq(c.ce_events, 49);
	ck_assert_int_eq(report(5, HBMGUARD_ERROR_CE, 1, NOW), 0);
	ck_assert_uint_eq(state_of(5), HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(res.retired, 1);
	{
		struct hbm_extent e;

		ck_assert(hbm_table_lookup(&c.table, 5, &e));
		ck_assert_uint_eq(e.errors, 50);	/* the bucket's, not the last report's */
		ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_CE_THRESHOLD);
	}
	ck_assert_uint_eq(hbm_ce_level(&c, 5, NOW), 0);	/* bucket gone */
	ck_assert_uint_eq(c.ce_nr, 0);
}
END_TEST

START_TEST(ce_bucket_leaks)
{
	/* 40 now; half a window later 25 have leaked: 15 + 34 = 49 < 50. */
	ck_assert_int_eq(report(5, HBMGUARD_ERROR_CE, 40, NOW), 0);
	ck_assert_uint_eq(hbm_ce_level(&c, 5, NOW + 43200), 15);
	ck_assert_int_eq(report(5, HBMGUARD_ERROR_CE, 34, NOW + 43200), 0);
	ck_assert_uint_eq(state_of(5), HBMGUARD_STATE_CLEAN);
	ck_assert_int_eq(report(5, HBMGUARD_ERROR_CE, 1, NOW + 43200), 0);
	ck_assert_uint_eq(state_of(5), HBMGUARD_STATE_RETIRED);

	/* A full window empties the bucket. */
	ck_assert_int_eq(report(6, HBMGUARD_ERROR_CE, 49, NOW), 0);
	ck_assert_uint_eq(hbm_ce_level(&c, 6, NOW + 86400), 0);
	ck_assert_int_eq(report(6, HBMGUARD_ERROR_CE, 49, NOW + 86400), 0);
	ck_assert_uint_eq(state_of(6), HBMGUARD_STATE_CLEAN);
	/* A clock that goes back leaks nothing and breaks nothing. */
	ck_assert_uint_eq(hbm_ce_level(&c, 6, NOW), 49);
}
END_TEST

/* A burst that straddles a second boundary still reaches the threshold. */
START_TEST(ce_burst_across_seconds)
{
	struct hbm_policy p = c.policy;

	p.ce_threshold = 3;
	hbm_core_set_policy(&c, &p);
	ck_assert_int_eq(report(8, HBMGUARD_ERROR_CE, 2, NOW), 0);
	ck_assert_int_eq(report(8, HBMGUARD_ERROR_CE, 1, NOW + 1), 0);
	ck_assert_uint_eq(state_of(8), HBMGUARD_STATE_RETIRED);
	/* One error drains per window / threshold = 28800 s. */
	ck_assert_int_eq(report(9, HBMGUARD_ERROR_CE, 2, NOW), 0);
	ck_assert_uint_eq(hbm_ce_level(&c, 9, NOW + 28799), 2);
	ck_assert_uint_eq(hbm_ce_level(&c, 9, NOW + 28800), 1);
	ck_assert_int_eq(report(9, HBMGUARD_ERROR_CE, 1, NOW + 28800), 0);
	ck_assert_uint_eq(state_of(9), HBMGUARD_STATE_CLEAN);
	/* The part of a drain interval already spent is not lost. */
	ck_assert_uint_eq(hbm_ce_level(&c, 9, NOW + 57599), 2);
	ck_assert_uint_eq(hbm_ce_level(&c, 9, NOW + 57600), 1);
}
END_TEST

/*
 * The buckets' structure holds: each bucket found through the hash, in its
 * place in the heap, no bucket emptier than the one above it; the memory
 * bounded.  NULL, or what is wrong.
 */
static const char *ce_invariants(const struct hbm_core *k)
{
	u32 i, used = 0;

	if (k->ce_nr > k->ce_cap || k->ce_cap > HBM_CE_TRACKED_MAX)
		return "more buckets than room, or room beyond the bound";
	if ((1U << k->ce_hash_bits) < 2 * k->ce_cap)
		return "hash more than half full at capacity";
	if (k->ce_bytes > 32ULL * HBM_CE_TRACKED_MAX)
		return "more than 32 bytes a bucket";
	for (i = 0; i < 1U << k->ce_hash_bits; i++)
		used += !!k->ce_hash[i];
	if (used != k->ce_nr)
		return "hash and array disagree";
	for (i = 0; i < k->ce_nr; i++) {
		const struct hbm_ce_entry *e = &k->ce[i];
		u64 key = (u64)e->last * k->policy.ce_threshold +
			  (u64)e->level * k->policy.ce_window;
		const struct hbm_ce_entry *up;

		if (hbm_ce_level(k, e->page, e->last) != e->level)
			return "bucket not found by its page";
		if (e->heap >= k->ce_nr || k->ce_heap[e->heap] != i)
			return "bucket not where the heap says";
		if (!e->heap)
			continue;
		up = &k->ce[k->ce_heap[(e->heap - 1) / 2]];
		if ((u64)up->last * k->policy.ce_threshold +
		    (u64)up->level * k->policy.ce_window > key)
			return "heap out of order";
	}
	return NULL;
}

#define ck_ce_invariants(k) do {					\
	const char *why = ce_invariants(k);				\
	ck_assert_msg(!why, "%s", why);					\
} while (0)

/*
 * A storm over HBM_CE_TRACKED_MAX (10^5) distinct pages, each page's errors
 * in several reports taking turns with every other page's: no bucket is
 * lost, each holds exactly what it was given, and the next error retires
 * every page.  The memory stays within the bound.
 */
START_TEST(ce_lossless_up_to_the_bound)
{
	const u32 n = HBM_CE_TRACKED_MAX;
	struct hbm_core k;
	u32 p, r, failed = 0;

	ck_assert_int_eq(hbm_core_init(&k, n, 0, 4096), 0);
	k.table.driver_bypass = true;	/* retired without a spare */
	/* Asserted once, not per report: each assertion is a write(2) of check's. */
	for (r = 0; r < 7; r++)		/* 7 x 7 = 49: one below 50 */
		for (p = 0; p < n; p++)
			failed += !!hbm_core_report(&k, p, HBMGUARD_ERROR_CE, 7,
						    NOW + r, &res, &served);
	ck_assert_uint_eq(k.ce_nr, n);
	ck_assert_uint_eq(k.ce_evicted, 0);
	ck_assert_uint_eq(k.ce_forgotten, 0);
	ck_ce_invariants(&k);
	ck_assert_uint_eq(failed, 0);
	for (p = 0; p < n; p++)
		failed += hbm_ce_level(&k, p, NOW + 6) != 49;
	ck_assert_uint_eq(k.table.pages[HBMGUARD_STATE_RETIRED], 0);
	for (p = 0; p < n; p++)
		failed += !!hbm_core_report(&k, p, HBMGUARD_ERROR_CE, 1, NOW + 6,
					    &res, &served);
	ck_assert_uint_eq(failed, 0);
	ck_assert_uint_eq(k.table.pages[HBMGUARD_STATE_RETIRED], n);
	ck_assert_uint_eq(k.ce_events, 50ULL * n);
	ck_assert_uint_eq(k.ce_nr, 0);
	ck_ce_invariants(&k);
	hbm_core_destroy(&k);
}
END_TEST

/*
 * Beyond the bound the emptiest bucket goes, and what it held is counted:
 * exactly.  A bucket that drained empty is reused, which loses nothing.  No
 * UE is lost at the bound.
 */
START_TEST(ce_beyond_the_bound_counts_what_is_forgotten)
{
	const u32 n = HBM_CE_TRACKED_MAX;
	struct hbm_core k;
	u32 p, failed = 0;

	ck_assert_int_eq(hbm_core_init(&k, 4 * n, 0, 4096), 0);
	k.table.driver_bypass = true;
	/* Page 0 errs often, page 1 least, every other one twice. */
	ck_assert_int_eq(hbm_core_report(&k, 0, HBMGUARD_ERROR_CE, 40, NOW, &res, &served), 0);
	ck_assert_int_eq(hbm_core_report(&k, 1, HBMGUARD_ERROR_CE, 1, NOW, &res, &served), 0);
	for (p = 2; p < n; p++)	/* asserted once: see above */
		failed += !!hbm_core_report(&k, p, HBMGUARD_ERROR_CE, 2, NOW, &res,
					    &served);
	ck_assert_uint_eq(failed, 0);
	ck_assert_uint_eq(k.ce_nr, n);
	ck_assert_uint_eq(k.ce_evicted, 0);
	/* One more page: page 1's bucket, the emptiest, goes. */
	ck_assert_int_eq(hbm_core_report(&k, n, HBMGUARD_ERROR_CE, 3, NOW, &res, &served), 0);
	ck_assert_uint_eq(k.ce_nr, n);
	ck_assert_uint_eq(k.ce_evicted, 1);
	ck_assert_uint_eq(k.ce_forgotten, 1);
	ck_assert_uint_eq(hbm_ce_level(&k, 1, NOW), 0);
	ck_assert_uint_eq(hbm_ce_level(&k, n, NOW), 3);
	/* 1000 more: each takes the room of a page that held 2. */
	for (p = n + 1; p <= n + 1000; p++)
		ck_assert_int_eq(hbm_core_report(&k, p, HBMGUARD_ERROR_CE, 5, NOW,
						 &res, &served), 0);
	ck_assert_uint_eq(k.ce_evicted, 1001);
	ck_assert_uint_eq(k.ce_forgotten, 1 + 2 * 1000);
	ck_assert_uint_eq(k.ce_events, 40 + 1 + 2ULL * (n - 2) + 3 + 5 * 1000);
	ck_ce_invariants(&k);
	/* The busy page kept its bucket, and reaches the threshold. */
	ck_assert_uint_eq(hbm_ce_level(&k, 0, NOW), 40);
	ck_assert_int_eq(hbm_core_report(&k, 0, HBMGUARD_ERROR_CE, 10, NOW, &res, &served), 0);
	ck_assert_uint_eq(k.table.pages[HBMGUARD_STATE_RETIRED], 1);
	/* A UE at the bound: retired, on a page with a bucket and on one without. */
	ck_assert_int_eq(hbm_core_report(&k, n, HBMGUARD_ERROR_UE, 1, NOW, &res, &served), 0);
	ck_assert_int_eq(hbm_core_report(&k, 3 * n, HBMGUARD_ERROR_UE, 1, NOW, &res, &served), 0);
	ck_assert_uint_eq(k.table.pages[HBMGUARD_STATE_RETIRED], 3);
	ck_assert_uint_eq(k.ue_events, 2);
	ck_assert_uint_eq(hbm_ce_level(&k, n, NOW), 0);
	ck_assert_uint_eq(k.ce_evicted, 1001);	/* a retired page's bucket is not lost */
	/* A window later every bucket is empty: reused, nothing forgotten. */
	for (p = 0; p < 1000; p++)
		ck_assert_int_eq(hbm_core_report(&k, 2 * n + p, HBMGUARD_ERROR_CE, 1,
						 NOW + 86400, &res, &served), 0);
	ck_assert_uint_eq(k.ce_evicted, 1001);
	ck_assert_uint_eq(k.ce_forgotten, 2001);
	ck_assert_uint_le(k.ce_nr, n);
	ck_ce_invariants(&k);
	hbm_core_destroy(&k);
}
END_TEST

/* Without memory to grow, the emptiest bucket goes: the report still counts. */
START_TEST(ce_growth_without_memory_evicts)
{
	u32 p;

	for (p = 0; p < HBM_CE_TRACKED_MIN; p++)
		ck_assert_int_eq(report(p, HBMGUARD_ERROR_CE, 2, NOW), 0);
	ck_assert_int_eq(report(100, HBMGUARD_ERROR_CE, 1, NOW), 0);
	ck_assert_uint_eq(c.ce_cap, 2 * HBM_CE_TRACKED_MIN);	/* it grew */
	for (p = HBM_CE_TRACKED_MIN + 1; p < 2 * HBM_CE_TRACKED_MIN; p++)
		ck_assert_int_eq(report(1000 + p, HBMGUARD_ERROR_CE, 3, NOW), 0);
	ck_assert_uint_eq(c.ce_nr, c.ce_cap);
	hbm_test_alloc_fail_in = 0;
	ck_assert_int_eq(report(5000, HBMGUARD_ERROR_CE, 4, NOW), 0);
	hbm_test_alloc_fail_in = -1;
	ck_assert_uint_eq(c.ce_cap, 2 * HBM_CE_TRACKED_MIN);
	ck_assert_uint_eq(c.ce_evicted, 1);
	ck_assert_uint_eq(c.ce_forgotten, 1);	/* page 100's, the emptiest */
	ck_assert_uint_eq(hbm_ce_level(&c, 100, NOW), 0);
	ck_assert_uint_eq(hbm_ce_level(&c, 5000, NOW), 4);
	ck_ce_invariants(&c);
}
END_TEST

/*
 * Random errors, retirements and clears over a few thousand pages, against
 * a plain count per page (nothing drains: the clock stands still): every
 * bucket holds what its page was given since it last left the table.
 */
START_TEST(ce_buckets_match_a_plain_count)
{
	enum { N = 6000 };
	static u32 want[N];
	struct hbm_policy never = c.policy;
	u64 state = 99;
	u32 i, p, nr, failed = 0;

	memset(want, 0, sizeof(want));
	never.ce_threshold = HBM_CE_THRESHOLD_MAX;	/* no page retires by CEs */
	hbm_core_set_policy(&c, &never);
	for (i = 0; i < 100000; i++) {
		state = state * 6364136223846793005ULL + 1442695040888963407ULL;
		p = (u32)(state >> 33) % N;
		switch ((state >> 20) % 64) {
		case 0:		/* a range retired: its buckets go */
			nr = (u32)(state >> 8) % 700 + 1;
			nr = min(nr, N - p);
			failed += !!hbm_core_apply(&c, HBM_OP_PENDING, p, nr,
						   HBMGUARD_SOURCE_ADMIN, NOW, &res);
			memset(&want[p], 0, nr * sizeof(*want));
			break;
		case 1:		/* and cleared: back on the CE path */
			nr = (u32)(state >> 8) % 3000 + 1;
			nr = min(nr, N - p);
			failed += !!hbm_core_apply(&c, HBM_OP_CLEAR, p, nr, 0, NOW,
						   &res);
			break;
		case 2:
			failed += !!report(p, HBMGUARD_ERROR_UE, 1, NOW);
			want[p] = 0;
			break;
		default:
			failed += !!report(p, HBMGUARD_ERROR_CE, 1, NOW);
			if (state_of(p) == HBMGUARD_STATE_CLEAN)
				want[p]++;
			break;
		}
		if (i % 10000 == 0)	/* asserted once: see above */
			ck_ce_invariants(&c);
	}
	ck_ce_invariants(&c);
	ck_assert_uint_eq(failed, 0);
	for (p = 0; p < N; p++)
		failed += hbm_ce_level(&c, p, NOW) != want[p];
	ck_assert_uint_eq(failed, 0);
	ck_assert_uint_eq(c.ce_evicted, 0);
}
END_TEST

/* A new policy drains at another rate: the emptiest bucket is another one. */
START_TEST(ce_policy_change_reorders)
{
	struct hbm_policy p = c.policy;

	/* At 50 a day, 30 errors now outlast 20 errors 1000 s later. */
	ck_assert_int_eq(report(10, HBMGUARD_ERROR_CE, 30, NOW), 0);
	ck_assert_int_eq(report(11, HBMGUARD_ERROR_CE, 20, NOW + 1000), 0);
	ck_assert_uint_eq(c.ce[c.ce_heap[0]].page, 11);
	/* At 50 in 864 s, page 10's bucket is empty by NOW + 1000. */
	p.ce_window = 864;
	hbm_core_set_policy(&c, &p);
	ck_assert_uint_eq(c.ce[c.ce_heap[0]].page, 10);
	ck_assert_uint_eq(hbm_ce_level(&c, 10, NOW + 1000), 0);
	ck_ce_invariants(&c);
}
END_TEST

/*
 * A new policy sorts the heap again from the bottom up (found by
 * tests/fuzz/table.c): a bucket sifted up into a parent not sorted yet
 * left the bucket it displaced out of order below it, and the one evicted
 * to make room was then not the emptiest.
 */
START_TEST(ce_policy_change_keeps_the_heap)
{
	static const struct {
		u32 count, at;
	} r[] = { { 36, 867 }, { 22, 1617 }, { 30, 2448 }, { 15, 2492 }, { 37, 2738 } };
	struct hbm_policy p = c.policy;
	u32 i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		ck_assert_int_eq(report(10 + i, HBMGUARD_ERROR_CE, r[i].count, NOW + r[i].at), 0);
	ck_ce_invariants(&c);
	p.ce_window = 1257;
	hbm_core_set_policy(&c, &p);
	ck_ce_invariants(&c);
}
END_TEST

START_TEST(ce_on_bad_page_changes_no_state)
{
	struct hbm_extent e;

	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_PENDING, 20, 1,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_int_eq(report(20, HBMGUARD_ERROR_CE, 100, NOW + 5), 0);
	ck_assert(hbm_table_lookup(&c.table, 20, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_PENDING);
	ck_assert_uint_eq(e.errors, 100);
	ck_assert_uint_eq(e.last_seen, NOW + 5);
	/*
	 * An uncorrectable error on it bypasses it, and is why: the data it
	 * held in service is lost, whoever reported the page first.
	 */
	ck_assert_int_eq(report(20, HBMGUARD_ERROR_UE, 1, NOW + 6), 0);
	ck_assert(hbm_table_lookup(&c.table, 20, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_UE);
	ck_assert_uint_eq(e.first_seen, NOW);
	/* A CE burst on a pending page destroyed nothing: its source stays. */
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_PENDING, 30, 1,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_RETIRE, 30, 1,
					HBMGUARD_SOURCE_CE_THRESHOLD, NOW, &res), 0);
	ck_assert(hbm_table_lookup(&c.table, 30, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_ADMIN);
	/* Poison in the middle of a pending row: that page alone, the row split. */
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_PENDING, 40, 3,
					HBMGUARD_SOURCE_DRIVER, NOW, &res), 0);
	ck_assert_int_eq(report(41, HBMGUARD_ERROR_POISON, 1, NOW + 8), 0);
	ck_assert(hbm_table_lookup(&c.table, 41, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_POISON);
	ck_assert_uint_eq(e.nr, 1);
	ck_assert(hbm_table_lookup(&c.table, 40, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_PENDING);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_DRIVER);
	ck_assert(hbm_table_lookup(&c.table, 42, &e));
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_DRIVER);
	ck_assert_ptr_null(table_invariants(&c.table));
}
END_TEST

/*
 * A page failed for want of a spare keeps its data on its frame, to be
 * copied to a spare once one frees: a UE there destroyed it, and the page
 * bypassed then has the UE's source (its event says so, the aperture does
 * not copy it), not the operator's.
 */
START_TEST(ue_on_failed_page_is_why_it_goes)
{
	struct hbm_extent e;
	u32 p;

	for (p = 0; p < SPARES; p++)
		ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_RETIRE, 100 + 2 * p, 1,
						HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_RETIRE, 50, 1,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_uint_eq(state_of(50), HBMGUARD_STATE_FAILED);
	/* A UE while failed: failed still, its source the UE's. */
	ck_assert_int_eq(report(50, HBMGUARD_ERROR_UE, 1, NOW + 1), 0);
	ck_assert(hbm_table_lookup(&c.table, 50, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_FAILED);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_UE);
	/* A spare freed: the next UE bypasses it, retired by the UE. */
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_CLEAR, 100, 1, 0, NOW, &res), 0);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(report(50, HBMGUARD_ERROR_UE, 1, NOW + 2), 0);
	ck_assert_uint_eq(res.retired, 1);
	ck_assert(hbm_table_lookup(&c.table, 50, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_UE);
	ck_assert_ptr_null(table_invariants(&c.table));
}
END_TEST

/*
 * Errors on a page the table holds count on its extent's record, in place:
 * the extent stays whole (a row retired as one counts once, on the row),
 * keeps its state, source, spare and first sighting, its neighbours are
 * untouched, nothing changes state, and nothing is allocated, so a storm
 * on a retired row cannot fail for memory.
 */
START_TEST(ce_on_bad_page_counts_in_place)
{
	static const struct hbm_result none;
	struct hbm_extent row, e;

	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_RETIRE, 30, 4,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_PENDING, 28, 1,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_PENDING, 35, 1,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert(hbm_table_lookup(&c.table, 30, &row));
	ck_assert_uint_eq(row.nr, 4);
	memset(&res, 0, sizeof(res));
	hbm_test_alloc_fail_in = 0;	/* the next allocation fails */
	ck_assert_int_eq(report(32, HBMGUARD_ERROR_CE, 65000, NOW + 5), 0);
	ck_assert_int_eq(report(31, HBMGUARD_ERROR_CE, 1000, NOW + 6), 0);
	ck_assert_int_eq(hbm_test_alloc_fail_in, 0);
	hbm_test_alloc_fail_in = -1;
	ck_assert_mem_eq(&res, &none, sizeof(res));
	ck_assert(hbm_table_lookup(&c.table, 33, &e));
	ck_assert_uint_eq(e.first, 30);
	ck_assert_uint_eq(e.nr, 4);
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.source, row.source);
	ck_assert_uint_eq(e.spare, row.spare);
	ck_assert_uint_eq(e.first_seen, row.first_seen);
	ck_assert_uint_eq(e.last_seen, NOW + 6);
	ck_assert_uint_eq(e.errors, 0xffff);	/* saturated */
	ck_assert(hbm_table_lookup(&c.table, 28, &e));
	ck_assert_uint_eq(e.errors, 0);
	ck_assert_uint_eq(e.last_seen, NOW);
	ck_assert(hbm_table_lookup(&c.table, 35, &e));
	ck_assert_uint_eq(e.errors, 0);
	ck_assert_uint_eq(e.last_seen, NOW);
	ck_assert_uint_eq(c.table.nr_extents, 3);
	ck_assert_uint_eq(c.table.pages[HBMGUARD_STATE_RETIRED], 4);
	ck_assert_uint_eq(c.table.pages[HBMGUARD_STATE_PENDING], 2);
	ck_assert_uint_eq(c.ce_events, 66000);
}
END_TEST

START_TEST(health_follows_limit)
{
	struct hbm_policy p = c.policy;

	p.retire_limit = 10;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), 0);
	hbm_core_set_policy(&c, &p);
	for (u32 i = 0; i < 8; i++)
		ck_assert_int_eq(report(i * 2, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_OK);
	ck_assert_int_eq(report(100, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_DEGRADED);
	ck_assert_int_eq(report(102, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_RMA);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_CLEAR, 0, PAGES, 0, NOW, &res), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_OK);
}
END_TEST

START_TEST(bad_reports_change_nothing)
{
	ck_assert_int_eq(report(PAGES + SPARES, HBMGUARD_ERROR_UE, 1, NOW), -ERANGE);
	ck_assert_int_eq(report(0xffffffff, HBMGUARD_ERROR_UE, 1, NOW), -ERANGE);
	ck_assert_int_eq(report(PAGES, 0, 1, NOW), -EINVAL);
	ck_assert_int_eq(report(PAGES, HBMGUARD_ERROR_UE, 2, NOW), -EINVAL);
	ck_assert_int_eq(report(1, 0, 1, NOW), -EINVAL);
	ck_assert_int_eq(report(1, __HBMGUARD_ERROR_MAX, 1, NOW), -EINVAL);
	ck_assert_int_eq(report(1, HBMGUARD_ERROR_CE, 0, NOW), -EINVAL);
	ck_assert_int_eq(report(1, HBMGUARD_ERROR_CE, 65536, NOW), -EINVAL);
	ck_assert_int_eq(report(1, HBMGUARD_ERROR_UE, 2, NOW), -EINVAL);
	ck_assert_uint_eq(c.ce_events + c.ue_events + c.ce_nr, 0);
	ck_assert_uint_eq(c.table.nr_extents, 0);

	/* -ENOMEM from the table: the error is not counted, nothing retired. */
	hbm_test_alloc_fail_in = 0;
	ck_assert_int_eq(report(3, HBMGUARD_ERROR_UE, 1, NOW), -ENOMEM);
	hbm_test_alloc_fail_in = -1;
	ck_assert_uint_eq(c.ue_events, 0);
	ck_assert_uint_eq(state_of(3), HBMGUARD_STATE_CLEAN);
}
END_TEST

START_TEST(policy_validation)
{
	struct hbm_policy ok = { 50, 86400, 10 }, p;

	ck_assert_int_eq(hbm_policy_check(&ok, PAGES), 0);
	p = ok; p.ce_threshold = 0;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), -EINVAL);
	p = ok; p.ce_threshold = HBM_CE_THRESHOLD_MAX + 1;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), -EINVAL);
	p = ok; p.ce_window = 0;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), -EINVAL);
	p = ok; p.ce_window = HBM_CE_WINDOW_MAX + 1;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), -EINVAL);
	p = ok; p.retire_limit = 0;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), -EINVAL);
	p = ok; p.retire_limit = PAGES + 1;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), -EINVAL);
	/* The largest values do not overflow the leak arithmetic. */
	p.ce_threshold = HBM_CE_THRESHOLD_MAX;
	p.ce_window = HBM_CE_WINDOW_MAX;
	p.retire_limit = PAGES;
	ck_assert_int_eq(hbm_policy_check(&p, PAGES), 0);
	hbm_core_set_policy(&c, &p);
	ck_assert_int_eq(report(1, HBMGUARD_ERROR_CE, 65535, NOW), 0);
	ck_assert_uint_eq(state_of(1), HBMGUARD_STATE_RETIRED);
	ck_assert_int_eq(report(2, HBMGUARD_ERROR_CE, 65534, NOW), 0);
	ck_assert_uint_eq(hbm_ce_level(&c, 2, NOW + HBM_CE_WINDOW_MAX - 1), 0);
}
END_TEST

/*
 * The spare area: device page PAGES + i is spare i.  An error there is
 * counted, and a spare that goes bad leaves the pool and is never handed out.
 */
START_TEST(poisoned_spare_leaves_pool)
{
	struct hbm_extent e;

	ck_assert_int_eq(report(7, HBMGUARD_ERROR_UE, 1, NOW), 0);	/* spare 0 */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(report(PAGES + 1, HBMGUARD_ERROR_POISON, 1, NOW), 0);
	ck_assert_uint_eq(served, HBM_NO_SPARE);
	ck_assert_uint_eq(res.spares_failed, 1);
	ck_assert_uint_eq(c.ue_events, 2);
	ck_assert_uint_eq(c.table.spare_bad, 1);
	/* The next retirement does not get spare 1. */
	ck_assert_int_eq(report(9, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert(hbm_table_lookup(&c.table, 9, &e));
	ck_assert_uint_eq(e.spare, 2);
	/* A spare serving a page: the page moves to another. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(report(PAGES + 0, HBMGUARD_ERROR_UE, 1, NOW + 1), 0);
	ck_assert_uint_eq(served, 7);
	ck_assert_uint_eq(res.retired, 1);
	ck_assert(hbm_table_lookup(&c.table, 7, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.spare, 3);
	ck_assert_uint_eq(e.errors, 2);
	ck_assert_uint_eq(c.table.spare_bad, 2);
	ck_assert_uint_eq(c.table.spare_used, 2);
	/* Once out, a spare's errors still count, and change nothing else. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(report(PAGES + 0, HBMGUARD_ERROR_CE, 5, NOW + 2), 0);
	ck_assert_uint_eq(c.ce_events, 5);
	ck_assert_uint_eq(res.retired + res.spares_failed, 0);
	ck_assert_uint_eq(c.table.spare_bad, 2);
}
END_TEST

/* A spare failure that cannot allocate changes nothing and is not counted. */
START_TEST(spare_report_enomem_changes_nothing)
{
	ck_assert_int_eq(report(7, HBMGUARD_ERROR_UE, 1, NOW), 0);	/* spare 0 */
	memset(&res, 0, sizeof(res));
	hbm_test_alloc_fail_in = 0;
	ck_assert_int_eq(report(PAGES + 0, HBMGUARD_ERROR_POISON, 1, NOW), -ENOMEM);
	hbm_test_alloc_fail_in = -1;
	ck_assert_uint_eq(c.ue_events, 1);
	ck_assert_uint_eq(c.table.spare_bad, 0);
	ck_assert_uint_eq(c.table.spare_used, 1);
	ck_assert_uint_eq(res.retired + res.spares_failed, 0);
	/* A spare at the threshold keeps its bucket: the next error retries. */
	ck_assert_int_eq(report(PAGES + 0, HBMGUARD_ERROR_CE, 49, NOW), 0);
	hbm_test_alloc_fail_in = 0;
	ck_assert_int_eq(report(PAGES + 0, HBMGUARD_ERROR_CE, 1, NOW), -ENOMEM);
	hbm_test_alloc_fail_in = -1;
	ck_assert_uint_eq(hbm_ce_level(&c, PAGES + 0, NOW), 49);
	ck_assert_uint_eq(c.ce_events, 49);
	ck_assert_int_eq(report(PAGES + 0, HBMGUARD_ERROR_CE, 1, NOW), 0);
	ck_assert_uint_eq(c.table.spare_bad, 1);
	ck_assert_uint_eq(served, 7);
}
END_TEST

/* Correctable errors in a spare fill a bucket of its own, as a page's do. */
START_TEST(spare_ce_threshold)
{
	ck_assert_int_eq(report(PAGES + 4, HBMGUARD_ERROR_CE, 49, NOW), 0);
	ck_assert_uint_eq(c.ce_events, 49);
	ck_assert_uint_eq(hbm_ce_level(&c, PAGES + 4, NOW), 49);
	ck_assert_uint_eq(c.table.spare_bad, 0);
	ck_assert_uint_eq(res.spares_failed, 0);
	ck_assert_int_eq(report(PAGES + 4, HBMGUARD_ERROR_CE, 1, NOW), 0);
	ck_assert_uint_eq(c.table.spare_bad, 1);
	ck_assert_uint_eq(res.spares_failed, 1);
	ck_assert_uint_eq(hbm_ce_level(&c, PAGES + 4, NOW), 0);	/* bucket gone */
	ck_assert_uint_eq(c.ce_nr, 0);
}
END_TEST

/* Failed spares are HBM gone bad: they count toward health. */
START_TEST(failed_spares_count_toward_health)
{
	u32 i;

	/* retire_limit is 2 here: one failed spare is 50% of it, two RMA. */
	ck_assert_int_eq(report(PAGES + 3, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_OK);
	ck_assert_int_eq(report(PAGES + 5, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_RMA);
	/* With every spare failed, a UE page is FAILED. */
	for (i = 0; i < SPARES; i++)
		ck_assert_int_eq(report(PAGES + i, HBMGUARD_ERROR_POISON, 1, NOW), 0);
	ck_assert_uint_eq(c.table.spare_bad, SPARES);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(report(11, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(res.failed, 1);
	ck_assert_uint_eq(state_of(11), HBMGUARD_STATE_FAILED);
}
END_TEST

/*
 * A discrete GPU's device (HBMGUARD_KIND_GPU): no pool, its driver bypasses.
 * Retired pages are RETIRED without a spare, merge into one extent, leave
 * the pool untouched, and clear as any others.
 */
START_TEST(driver_bypass_uses_no_spare)
{
	struct hbm_core g;
	struct hbm_extent e;

	ck_assert_int_eq(hbm_core_init(&g, PAGES, 0, 4096), 0);
	g.table.driver_bypass = true;
	ck_assert_int_eq(hbm_core_apply(&g, HBM_OP_RETIRE, 10, 3,
					HBMGUARD_SOURCE_DRIVER, NOW, &res), 0);
	ck_assert_uint_eq(res.retired, 3);
	ck_assert_uint_eq(res.failed, 0);
	ck_assert_uint_eq(g.table.spare_used, 0);
	ck_assert(hbm_table_lookup(&g.table, 11, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_DRIVER);
	ck_assert_uint_eq(e.spare, HBM_NO_SPARE);
	ck_assert_uint_eq(e.first, 10);
	ck_assert_uint_eq(e.nr, 3);
	/* A UE on the GPU: the driver retires that page too. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(hbm_core_report(&g, 13, HBMGUARD_ERROR_UE, 1, NOW, &res,
					 &served), 0);
	ck_assert_uint_eq(res.retired, 1);
	ck_assert_uint_eq(g.table.pages[HBMGUARD_STATE_RETIRED], 4);
	ck_assert_uint_eq(g.table.pages[HBMGUARD_STATE_FAILED], 0);
	ck_assert_ptr_null(table_invariants(&g.table));
	/* Pending first, then the driver's retirement: no spare either. */
	ck_assert_int_eq(hbm_core_apply(&g, HBM_OP_PENDING, 100, 1,
					HBMGUARD_SOURCE_DRIVER, NOW, &res), 0);
	ck_assert_int_eq(hbm_core_apply(&g, HBM_OP_RETIRE, 100, 1,
					HBMGUARD_SOURCE_DRIVER, NOW, &res), 0);
	ck_assert(hbm_table_lookup(&g.table, 100, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.spare, HBM_NO_SPARE);
	ck_assert_int_eq(hbm_core_apply(&g, HBM_OP_CLEAR, 0, PAGES, 0, NOW, &res), 0);
	ck_assert_uint_eq(hbm_table_bad_pages(&g.table), 0);
	ck_assert_uint_eq(g.table.spare_used, 0);
	ck_assert_ptr_null(table_invariants(&g.table));
	hbm_core_destroy(&g);

	/* Without it, an empty pool makes the same retirement FAILED. */
	ck_assert_int_eq(hbm_core_init(&g, PAGES, 0, 4096), 0);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(hbm_core_apply(&g, HBM_OP_RETIRE, 10, 3,
					HBMGUARD_SOURCE_ADMIN, NOW, &res), 0);
	ck_assert_uint_eq(res.failed, 3);
	hbm_core_destroy(&g);
}
END_TEST

/* Health is the worse of the table's and the driver's, by severity. */
START_TEST(driver_health_worse_of_two)
{
	ck_assert_uint_eq(hbm_core_health(&c), HBMGUARD_HEALTH_OK);
	c.driver_health = HBMGUARD_HEALTH_RESET_REQUIRED;
	ck_assert_uint_eq(hbm_core_health(&c), HBMGUARD_HEALTH_RESET_REQUIRED);
	/* One bad page of a limit of 2: DEGRADED, milder than a reset. */
	ck_assert_int_eq(report(7, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_RESET_REQUIRED);
	/* Two: RMA, worse than a reset (though its value is smaller). */
	ck_assert_int_eq(report(8, HBMGUARD_ERROR_UE, 1, NOW), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_RMA);
	c.driver_health = HBMGUARD_HEALTH_OK;
	ck_assert_uint_eq(hbm_core_health(&c), HBMGUARD_HEALTH_RMA);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_CLEAR, 0, PAGES, 0, NOW, &res), 0);
	ck_assert_uint_eq(c.health, HBMGUARD_HEALTH_OK);
	c.driver_health = HBMGUARD_HEALTH_RMA;
	ck_assert_uint_eq(hbm_core_health(&c), HBMGUARD_HEALTH_RMA);
	c.driver_health = HBMGUARD_HEALTH_DEGRADED;
	ck_assert_uint_eq(hbm_core_health(&c), HBMGUARD_HEALTH_DEGRADED);
}
END_TEST

/*
 * A restore into a table that has a page among the request's, retired since
 * the module loaded (a UE while the daemon restores), though none of the
 * request's pages: each range keeps its record (source, times, errors), the
 * range over the table's page keeps the table's, a range's CE bucket goes.
 */
START_TEST(restore_around_a_retired_page_keeps_records)
{
	const struct hbm_page_range r[] = {
		{ .first = 10, .nr = 2, .op = HBM_OP_RETIRE, .source = HBMGUARD_SOURCE_CE_THRESHOLD,
		  .first_seen = 100, .last_seen = 200, .errors = 77 },
		{ .first = 100, .nr = 1, .op = HBM_OP_RETIRE, .source = HBMGUARD_SOURCE_UE,
		  .first_seen = 300, .last_seen = 400, .errors = 5 },
		{ .first = 5000, .nr = 1, .op = HBM_OP_RETIRE, .source = HBMGUARD_SOURCE_POISON,
		  .first_seen = 500, .last_seen = 600, .errors = 9 },
		{ .first = 6000, .nr = 1, .op = HBM_OP_PENDING, .source = HBMGUARD_SOURCE_ADMIN,
		  .first_seen = 700, .last_seen = 800, .errors = 3 },
	};
	struct hbm_extent e;
	u32 done = 0;

	ck_assert_int_eq(report(100, HBMGUARD_ERROR_CE, 1, NOW), 0);
	ck_assert_uint_eq(c.ce_nr, 1);
	ck_assert_int_eq(hbm_core_apply(&c, HBM_OP_RETIRE, 5000, 1, HBMGUARD_SOURCE_UE, NOW,
					&res), 0);
	ck_assert_int_eq(hbm_core_restore(&c, r, 4, NOW + 10, &res, &done), 0);
	ck_assert_uint_eq(done, 4);
	ck_assert(hbm_table_lookup(&c.table, 11, &e));
	ck_assert_uint_eq(e.first, 10);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_CE_THRESHOLD);
	ck_assert_uint_eq(e.first_seen, 100);
	ck_assert_uint_eq(e.last_seen, 200);
	ck_assert_uint_eq(e.errors, 77);
	ck_assert(hbm_table_lookup(&c.table, 100, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.first_seen, 300);
	ck_assert_uint_eq(e.errors, 5);
	ck_assert_uint_eq(c.ce_nr, 0);
	ck_assert(hbm_table_lookup(&c.table, 5000, &e));
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_UE);
	ck_assert_uint_eq(e.first_seen, NOW);
	ck_assert(hbm_table_lookup(&c.table, 6000, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_PENDING);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_ADMIN);
	ck_assert_uint_eq(e.first_seen, 700);
	ck_assert_uint_eq(e.last_seen, 800);
	ck_assert_uint_eq(e.errors, 3);
	ck_assert_uint_eq(c.health, hbm_core_health(&c));
	ck_assert_ptr_null(table_invariants(&c.table));
}
END_TEST

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, ue_and_poison_retire_at_once);
	tcase_add_test(tc, ue_on_failed_page_is_why_it_goes);
	tcase_add_test(tc, ce_below_threshold_counts_only);
	tcase_add_test(tc, ce_bucket_leaks);
	tcase_add_test(tc, ce_burst_across_seconds);
	tcase_add_test(tc, ce_growth_without_memory_evicts);
	tcase_add_test(tc, ce_buckets_match_a_plain_count);
	tcase_add_test(tc, ce_policy_change_reorders);
	tcase_add_test(tc, ce_policy_change_keeps_the_heap);
	tcase_add_test(tc, ce_on_bad_page_changes_no_state);
	tcase_add_test(tc, ce_on_bad_page_counts_in_place);
	tcase_add_test(tc, health_follows_limit);
	tcase_add_test(tc, bad_reports_change_nothing);
	tcase_add_test(tc, policy_validation);
	tcase_add_test(tc, poisoned_spare_leaves_pool);
	tcase_add_test(tc, spare_ce_threshold);
	tcase_add_test(tc, spare_report_enomem_changes_nothing);
	tcase_add_test(tc, failed_spares_count_toward_health);
	tcase_add_test(tc, driver_bypass_uses_no_spare);
	tcase_add_test(tc, driver_health_worse_of_two);
	tcase_add_test(tc, restore_around_a_retired_page_keeps_records);
	suite_add_tcase(s, tc);
	/* 10^5 pages' buckets, filled twice over: seconds under the sanitizers. */
	tc = tcase_create("ce bound");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ce_lossless_up_to_the_bound);
	tcase_add_test(tc, ce_beyond_the_bound_counts_what_is_forgotten);
	suite_add_tcase(s, tc);
	return s;
}
