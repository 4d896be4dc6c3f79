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
	c.policy = p;
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

START_TEST(ce_tracking_is_bounded)
{
	u32 i;

	/* Page 0 errs often; then more pages than there are buckets err once. */
	ck_assert_int_eq(report(0, HBMGUARD_ERROR_CE, 40, NOW), 0);
	for (i = 1; i <= 2 * HBM_CE_TRACKED; i++)
		ck_assert_int_eq(report(i, HBMGUARD_ERROR_CE, 1, NOW), 0);
	ck_assert_uint_eq(c.ce_nr, HBM_CE_TRACKED);
	ck_assert_uint_eq(c.ce_evicted, HBM_CE_TRACKED + 1);
	/* The busy page kept its bucket. */
	ck_assert_uint_eq(hbm_ce_level(&c, 0, NOW), 40);
	ck_assert_int_eq(report(0, HBMGUARD_ERROR_CE, 10, NOW), 0);
	ck_assert_uint_eq(state_of(0), HBMGUARD_STATE_RETIRED);
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
	/* An uncorrectable error on it bypasses it. */
	ck_assert_int_eq(report(20, HBMGUARD_ERROR_UE, 1, NOW + 6), 0);
	ck_assert_uint_eq(state_of(20), HBMGUARD_STATE_RETIRED);
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
	c.policy = p;
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
	c.policy = p;
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

Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("policy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, ue_and_poison_retire_at_once);
	tcase_add_test(tc, ce_below_threshold_counts_only);
	tcase_add_test(tc, ce_bucket_leaks);
	tcase_add_test(tc, ce_burst_across_seconds);
	tcase_add_test(tc, ce_tracking_is_bounded);
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
	suite_add_tcase(s, tc);
	return s;
}
