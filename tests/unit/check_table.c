// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the bad-page table (kmod/table.c).
 *
 * Besides the cases spelled out, a model test drives random operations
 * against a page-by-page array and, after each, checks the whole table
 * against it and against the structure's own invariants.
 */
#include <check.h>
#include <stdlib.h>
#include "core.h"
#include "unit.h"

#define NOW 1700000000u

/* The structure's invariants; returns a description of the first broken one. */
const char *table_invariants(const struct hbm_table *t)
{
	u32 pages[__HBMGUARD_STATE_MAX] = { 0 }, extents = 0, spares = 0, l, i;
	const struct hbm_extent *prev = NULL;

	for (l = 0; l < t->nr_leaves; l++) {
		const struct hbm_leaf *leaf = t->leaves[l];

		if (!leaf->nr || leaf->nr > HBM_LEAF_CAP)
			return "leaf empty or overfull";
		if (t->keys[l].first != leaf->ext[0].first ||
		    t->keys[l].nr != leaf->nr)
			return "leaf key out of date";
		for (i = 0; i < leaf->nr; i++) {
			const struct hbm_extent *e = &leaf->ext[i];

			if (!e->nr || e->first + e->nr > t->nr_pages ||
			    e->first + e->nr < e->first)
				return "extent outside the device";
			if (e->state == HBMGUARD_STATE_CLEAN ||
			    e->state >= __HBMGUARD_STATE_MAX)
				return "extent with a bad state";
			/* A driver's bypass (a GPU) uses no spare of ours. */
			if ((e->state == HBMGUARD_STATE_RETIRED && !t->driver_bypass) !=
			    (e->spare != HBM_NO_SPARE))
				return "spare on a page not RETIRED, or none on one";
			if (e->spare != HBM_NO_SPARE) {
				u32 s;

				if (e->spare + e->nr > t->spare_total)
					return "spare outside the pool";
				for (s = e->spare; s < e->spare + e->nr; s++) {
					if (!test_bit(s, t->spare_map))
						return "spare in use but free in the map";
					if (test_bit(s, t->spare_bad_map))
						return "a failed spare serves a page";
				}
				spares += e->nr;
			}
			if (e->first_seen > e->last_seen)
				return "an extent last seen before it was first";
			if (prev && prev->first + prev->nr > e->first)
				return "extents overlap or are out of order";
			if (prev && prev->first + prev->nr == e->first &&
			    prev->state == e->state && prev->source == e->source &&
			    (e->spare == HBM_NO_SPARE ||
			     prev->spare + prev->nr == e->spare))
				return "mergeable neighbours left apart";
			pages[e->state] += e->nr;
			extents++;
			prev = e;
		}
	}
	if (extents != t->nr_extents)
		return "nr_extents wrong";
	for (i = 1; i < __HBMGUARD_STATE_MAX; i++)
		if (pages[i] != t->pages[i])
			return "per-state page count wrong";
	if (spares != t->spare_used)
		return "spare_used wrong";
	for (i = 0, spares = 0, extents = 0; i < t->spare_total; i++) {
		if (test_bit(i, t->spare_bad_map) && !test_bit(i, t->spare_map))
			return "a failed spare free in the map";
		spares += test_bit(i, t->spare_map);
		extents += test_bit(i, t->spare_bad_map);
	}
	if (extents != t->spare_bad)
		return "spare_bad and the map of failed spares disagree";
	if (spares != t->spare_used + t->spare_bad)
		return "spare map and spare_used + spare_bad disagree";
	return NULL;
}

#define ck_table_ok(t) do {						\
	const char *why = table_invariants(t);				\
	ck_assert_msg(!why, "table invariant: %s", why);		\
} while (0)

/*
 * Check records every passing ck_assert (a write per call), which makes
 * loops of millions of them crawl: inner loops use this instead.
 */
#define expect_eq(a, b) expect((a) == (b))
#define expect(cond) do {						\
	if (!(cond))							\
		ck_abort_msg("%s:%d: expected %s", __FILE__, __LINE__, #cond); \
} while (0)

static struct hbm_table t;

static void setup(void)
{
	hbm_test_alloc_fail_in = -1;
	ck_assert_int_eq(hbm_table_init(&t, 1 << 20, 64), 0);
}

static void teardown(void)
{
	hbm_table_destroy(&t);
}

static int apply(enum hbm_op op, u32 first, u32 nr, struct hbm_result *res)
{
	struct hbm_result ignored = { 0 };

	return hbm_table_apply(&t, op, first, nr, HBMGUARD_SOURCE_ADMIN, 1, NOW,
			       res ? res : &ignored);
}

START_TEST(retire_one_page)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 100, 1, &res), 0);
	ck_assert_uint_eq(res.retired, 1);
	ck_assert(hbm_table_lookup(&t, 100, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.spare, 0);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_ADMIN);
	ck_assert_uint_eq(e.first_seen, NOW);
	ck_assert(!hbm_table_lookup(&t, 99, &e));
	ck_assert(!hbm_table_lookup(&t, 101, &e));
	ck_assert_uint_eq(t.spare_used, 1);
	ck_table_ok(&t);
}
END_TEST

START_TEST(adjacent_pages_merge)
{
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 10, 1, NULL), 0);
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 12, 1, NULL), 0);
	ck_assert_uint_eq(t.nr_extents, 2);
	/* 11 gets spare 2: 10..12 are spares 0, 2, 1: not one run. */
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 11, 1, NULL), 0);
	ck_table_ok(&t);
	ck_assert(hbm_table_lookup(&t, 11, &e));
	ck_assert_uint_eq(e.spare, 2);

	/* A row retired at once is one extent with consecutive spares. */
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 1000, 8, NULL), 0);
	ck_assert(hbm_table_lookup(&t, 1004, &e));
	ck_assert_uint_eq(e.first, 1000);
	ck_assert_uint_eq(e.nr, 8);
	ck_assert_uint_eq(e.spare, 3);
	/* and the next page merges with it. */
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 1008, 1, NULL), 0);
	ck_assert(hbm_table_lookup(&t, 1008, &e));
	ck_assert_uint_eq(e.first, 1000);
	ck_assert_uint_eq(e.nr, 9);
	ck_table_ok(&t);
}
END_TEST

START_TEST(pending_then_retire)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_PENDING, 50, 4, &res), 0);
	ck_assert_uint_eq(res.pending, 4);
	ck_assert(hbm_table_lookup(&t, 52, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_PENDING);
	ck_assert_uint_eq(e.spare, HBM_NO_SPARE);
	ck_assert_uint_eq(t.spare_used, 0);

	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 51, 2, &res), 0);
	ck_assert_uint_eq(res.retired, 2);
	ck_assert_uint_eq(t.pages[HBMGUARD_STATE_PENDING], 2);
	ck_assert_uint_eq(t.pages[HBMGUARD_STATE_RETIRED], 2);
	ck_assert_uint_eq(t.nr_extents, 3);
	ck_table_ok(&t);
}
END_TEST

/*
 * The wall clock set back (NTP stepping an RTC that ran ahead): an error on
 * a page the table has, counted, touched or split by the operation, never
 * leaves it last seen before it was first seen (its dump would be a record
 * a RESTORE refuses).
 */
START_TEST(clock_set_back_keeps_last_seen)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;

	ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_PENDING, 50, 4, HBMGUARD_SOURCE_UE, 1, NOW,
					 &res), 0);
	ck_assert(hbm_table_count(&t, 50, 1, NOW - 100));
	ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_PENDING, 50, 4, HBMGUARD_SOURCE_UE, 1,
					 NOW - 100, &res), 0);		/* touched */
	ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, 51, 1, HBMGUARD_SOURCE_UE, 1,
					 NOW - 100, &res), 0);		/* split */
	ck_assert(hbm_table_lookup(&t, 50, &e));
	ck_assert_uint_eq(e.first_seen, NOW);
	ck_assert_uint_eq(e.last_seen, NOW);
	ck_assert(hbm_table_lookup(&t, 51, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.last_seen, NOW);
	ck_table_ok(&t);
}
END_TEST

START_TEST(clear_splits_and_frees)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 200, 10, NULL), 0);
	ck_assert_int_eq(apply(HBM_OP_CLEAR, 203, 2, &res), 0);
	ck_assert_uint_eq(res.cleared, 2);
	ck_assert_uint_eq(t.spare_used, 8);
	ck_assert_uint_eq(t.nr_extents, 2);
	ck_assert(hbm_table_lookup(&t, 205, &e));
	ck_assert_uint_eq(e.first, 205);
	ck_assert_uint_eq(e.spare, 5);	/* page 205 keeps the spare it had */
	ck_assert(!hbm_table_lookup(&t, 204, &e));
	ck_table_ok(&t);

	/* Clearing pages that are not in the table changes nothing. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(apply(HBM_OP_CLEAR, 5000, 100, &res), 0);
	ck_assert_uint_eq(res.cleared, 0);
	ck_assert_int_eq(apply(HBM_OP_CLEAR, 0, 1 << 20, &res), 0);
	ck_assert_uint_eq(res.cleared, 8);
	ck_assert_uint_eq(t.nr_extents, 0);
	ck_assert_uint_eq(t.nr_leaves, 0);
	ck_assert_uint_eq(t.spare_used, 0);
	ck_table_ok(&t);
}
END_TEST

START_TEST(pool_exhaustion_fails_pages)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 0, 70, &res), 0);
	ck_assert_uint_eq(res.retired, 64);
	ck_assert_uint_eq(res.failed, 6);
	ck_assert(hbm_table_lookup(&t, 69, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_FAILED);
	ck_assert_uint_eq(e.first, 64);
	ck_assert_uint_eq(e.nr, 6);
	ck_table_ok(&t);

	/* Freed spares go to FAILED pages on the next retire of them. */
	ck_assert_int_eq(apply(HBM_OP_CLEAR, 0, 2, NULL), 0);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 64, 6, &res), 0);
	ck_assert_uint_eq(res.retired, 2);
	ck_assert_uint_eq(res.failed, 0);
	ck_assert_uint_eq(t.pages[HBMGUARD_STATE_FAILED], 4);
	ck_table_ok(&t);
}
END_TEST

/* A failed spare leaves the pool: never handed out again, not even after a clear. */
START_TEST(failed_spare_leaves_pool)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;
	u32 page, i;

	/* A free spare: out of the pool, nothing else changes. */
	ck_assert_int_eq(hbm_table_spare_fail(&t, 0, 1, NOW, &res, &page), 0);
	ck_assert_uint_eq(page, HBM_NO_SPARE);
	ck_assert_uint_eq(res.spares_failed, 1);
	ck_assert_uint_eq(res.retired + res.failed, 0);
	ck_assert_uint_eq(t.spare_bad, 1);
	ck_assert_uint_eq(t.spare_used, 0);
	ck_table_ok(&t);
	/* The next retirement gets another. */
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 100, 2, NULL), 0);
	ck_assert(hbm_table_lookup(&t, 100, &e));
	ck_assert_uint_eq(e.spare, 1);

	/* A spare in use: its page moves, keeping its record. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(hbm_table_spare_fail(&t, 1, 3, NOW + 9, &res, &page), 0);
	ck_assert_uint_eq(page, 100);
	ck_assert_uint_eq(res.retired, 1);
	ck_assert_uint_eq(res.spares_failed, 1);
	ck_assert(hbm_table_lookup(&t, 100, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.spare, 3);
	ck_assert_uint_eq(e.nr, 1);
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_ADMIN);
	ck_assert_uint_eq(e.first_seen, NOW);
	ck_assert_uint_eq(e.last_seen, NOW + 9);
	ck_assert_uint_eq(e.errors, 1 + 3);
	ck_assert(hbm_table_lookup(&t, 101, &e));
	ck_assert_uint_eq(e.spare, 2);	/* the other page keeps its own */
	ck_assert_uint_eq(t.spare_used, 2);
	ck_assert_uint_eq(t.spare_bad, 2);
	ck_table_ok(&t);

	/* Failing again changes nothing. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(hbm_table_spare_fail(&t, 1, 1, NOW, &res, &page), 0);
	ck_assert_uint_eq(page, HBM_NO_SPARE);
	ck_assert_uint_eq(res.retired + res.failed + res.spares_failed, 0);
	ck_assert_int_eq(hbm_table_spare_fail(&t, 64, 1, NOW, &res, &page), -ERANGE);

	/* A clear does not give them back: 62 spares are left, not 64. */
	ck_assert_int_eq(apply(HBM_OP_CLEAR, 0, 1 << 20, NULL), 0);
	ck_assert_uint_eq(t.spare_used, 0);
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 0, 64, &res), 0);
	ck_assert_uint_eq(res.retired, 62);
	ck_assert_uint_eq(res.failed, 2);
	for (i = 0; i < 62; i++) {
		ck_assert(hbm_table_lookup(&t, i, &e));
		ck_assert_uint_ne(e.spare + i - e.first, 0);
		ck_assert_uint_ne(e.spare + i - e.first, 1);
	}
	ck_table_ok(&t);

	/* With the pool empty, the page of a failing spare is FAILED. */
	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(hbm_table_spare_fail(&t, 40, 1, NOW, &res, &page), 0);
	ck_assert(hbm_table_lookup(&t, page, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_FAILED);
	ck_assert_uint_eq(res.failed, 1);
	ck_assert_uint_eq(t.spare_used, 61);
	ck_assert_uint_eq(t.spare_bad, 3);
	ck_table_ok(&t);

	/* Operators cannot ask for the internal operation. */
	ck_assert_int_eq(apply(HBM_OP_RESPARE, 5, 1, NULL), -EINVAL);
}
END_TEST

/* Every allocation a spare failure makes may fail: each leaves all as it was. */
START_TEST(spare_fail_enomem_changes_nothing)
{
	struct hbm_extent before[64], after[64];
	struct hbm_result res;
	u32 next, n_before, page;
	long fail;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 10, 20, NULL), 0);
	n_before = hbm_table_list(&t, 0, t.nr_pages, before, 64, &next);
	for (fail = 0; fail < 16; fail++) {
		memset(&res, 0, sizeof(res));
		hbm_test_alloc_fail_in = fail;
		if (!hbm_table_spare_fail(&t, 5, 1, NOW, &res, &page)) {
			hbm_test_alloc_fail_in = -1;
			break;
		}
		hbm_test_alloc_fail_in = -1;
		ck_table_ok(&t);
		ck_assert_uint_eq(hbm_table_list(&t, 0, t.nr_pages, after, 64, &next),
				  n_before);
		ck_assert_mem_eq(before, after, n_before * sizeof(before[0]));
		ck_assert_uint_eq(t.spare_used, 20);
		ck_assert_uint_eq(t.spare_bad, 0);
		ck_assert_uint_eq(res.retired + res.spares_failed, 0);
	}
	ck_assert_msg(fail > 0 && fail < 16, "never allocated, or never succeeded");
	ck_assert_uint_eq(page, 15);
	ck_assert_uint_eq(t.spare_bad, 1);
	ck_table_ok(&t);
}
END_TEST

START_TEST(report_on_row_counts_once)
{
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 300, 8, NULL), 0);
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 303, 1, NULL), 0);
	ck_assert(hbm_table_lookup(&t, 300, &e));
	ck_assert_uint_eq(e.nr, 8);
	ck_assert_uint_eq(e.errors, 2);
	ck_assert_uint_eq(t.nr_extents, 1);
}
END_TEST

START_TEST(bad_ranges)
{
	struct hbm_result res = { 0 };

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 0, 0, &res), -EINVAL);
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 1 << 20, 1, &res), -ERANGE);
	ck_assert_int_eq(apply(HBM_OP_RETIRE, (1 << 20) - 1, 2, &res), -ERANGE);
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 5, 0xffffffff, &res), -ERANGE);
	ck_assert_uint_eq(res.retired + res.failed + res.pending, 0);
	ck_assert_uint_eq(t.nr_extents, 0);
	ck_assert_int_eq(apply(HBM_OP_RETIRE, (1 << 20) - 1, 1, &res), 0);
	ck_table_ok(&t);
}
END_TEST

/* Every allocation an operation makes may fail: each leaves the table as it was. */
START_TEST(enomem_changes_nothing)
{
	struct hbm_extent before[64], after[64];
	u32 next, n_before, n_after, used, i;
	long fail;

	/* Enough extents for splits across leaves. */
	for (i = 0; i < 400; i++)
		ck_assert_int_eq(apply(i % 2 ? HBM_OP_PENDING : HBM_OP_RETIRE,
				       i * 3, 1, NULL), 0);
	for (fail = 0; fail < 32; fail++) {
		n_before = hbm_table_list(&t, 0, t.nr_pages, before, 64, &next);
		used = t.spare_used;
		hbm_test_alloc_fail_in = fail;
		if (apply(HBM_OP_RETIRE, 100, 200, NULL) == 0) {
			hbm_test_alloc_fail_in = -1;
			break;
		}
		hbm_test_alloc_fail_in = -1;
		ck_table_ok(&t);
		n_after = hbm_table_list(&t, 0, t.nr_pages, after, 64, &next);
		ck_assert_uint_eq(n_before, n_after);
		ck_assert_mem_eq(before, after, n_before * sizeof(before[0]));
		ck_assert_uint_eq(used, t.spare_used);
	}
	ck_assert_msg(fail > 0 && fail < 32, "the retire never allocated, or never succeeded");
	ck_table_ok(&t);
}
END_TEST

START_TEST(list_pages_through_cursor)
{
	struct hbm_extent out[7];
	u32 start = 0, next, n, total = 0, i;

	for (i = 0; i < 1000; i++)
		ck_assert_int_eq(apply(HBM_OP_PENDING, i * 10, 1 + i % 3, NULL), 0);
	ck_table_ok(&t);
	do {
		n = hbm_table_list(&t, start, t.nr_pages, out, 7, &next);
		for (i = 0; i < n; i++) {
			ck_assert_uint_ge(out[i].first + out[i].nr, start + 1);
			ck_assert_uint_eq(out[i].first, (total + i) * 10);
		}
		total += n;
		ck_assert(next > start || n == 0);
		start = next;
	} while (next < t.nr_pages);
	ck_assert_uint_eq(total, t.nr_extents);
	ck_assert_uint_eq(total, 1000);

	/* A range in the middle lists only the extents inside it. */
	n = hbm_table_list(&t, 105, 131, out, 7, &next);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(out[0].first, 110);
	ck_assert_uint_eq(out[2].first, 130);
	ck_assert_uint_eq(next, 131);
}
END_TEST

/* Random operations against a page-by-page model. */
#define MODEL_PAGES 4096
#define MODEL_SPARES 1024

START_TEST(model_random_ops)
{
	static u8 state[MODEL_PAGES];
	static u32 spare[MODEL_PAGES];
	static bool bad[MODEL_SPARES];
	struct hbm_table m;
	unsigned int seed = 1234 + _i;
	int step, p;
	u32 nr_bad = 0;

	memset(state, 0, sizeof(state));
	memset(bad, 0, sizeof(bad));
	expect_eq(hbm_table_init(&m, MODEL_PAGES, MODEL_SPARES), 0);
	for (step = 0; step < 3000; step++) {
		/* Now and then a spare fails, free or serving a page. */
		if (rand_r(&seed) % 8 == 0) {
			u32 s = rand_r(&seed) % MODEL_SPARES, user = HBM_NO_SPARE, got;
			u32 avail = MODEL_SPARES - m.spare_used - m.spare_bad;
			struct hbm_result res = { 0 };
			struct hbm_extent e;

			for (p = 0; p < MODEL_PAGES; p++)
				if (state[p] == HBMGUARD_STATE_RETIRED && spare[p] == s)
					user = p;
			expect_eq(hbm_table_spare_fail(&m, s, 1, NOW, &res, &got), 0);
			expect_eq(got, bad[s] ? HBM_NO_SPARE : user);
			expect_eq(res.spares_failed, !bad[s]);
			if (!bad[s] && user != HBM_NO_SPARE) {
				expect(hbm_table_lookup(&m, user, &e));
				expect_eq(e.state, avail ? HBMGUARD_STATE_RETIRED :
					  HBMGUARD_STATE_FAILED);
				expect_eq(res.retired, avail ? 1u : 0u);
				expect_eq(res.failed, avail ? 0u : 1u);
				state[user] = e.state;
				spare[user] = avail ? e.spare + user - e.first : HBM_NO_SPARE;
			}
			nr_bad += !bad[s];
			bad[s] = true;
			expect_eq(m.spare_bad, nr_bad);
		}
		u32 first = rand_r(&seed) % MODEL_PAGES;
		u32 nr = 1 + rand_r(&seed) % (rand_r(&seed) % 8 ? 4 : 300);
		enum hbm_op op = rand_r(&seed) % 10;
		struct hbm_result res = { 0 };
		u32 expect_cleared = 0, expect_new = 0;

		op = op < 5 ? HBM_OP_RETIRE : op < 7 ? HBM_OP_PENDING : HBM_OP_CLEAR;
		if (first + nr > MODEL_PAGES)
			nr = MODEL_PAGES - first;
		for (p = first; p < (int)(first + nr); p++) {
			expect_cleared += op == HBM_OP_CLEAR && state[p];
			expect_new += op != HBM_OP_CLEAR && !state[p];
		}
		expect_eq(hbm_table_apply(&m, op, first, nr, 1, 0, NOW, &res), 0);
		expect_eq(res.cleared, expect_cleared);
		if (op == HBM_OP_PENDING)
			expect_eq(res.pending, expect_new);
		for (p = first; p < (int)(first + nr); p++) {
			if (op == HBM_OP_CLEAR)
				state[p] = HBMGUARD_STATE_CLEAN;
			else if (op == HBM_OP_PENDING && !state[p])
				state[p] = HBMGUARD_STATE_PENDING;
		}
		/* A retire's spares come from the table; the model checks them. */
		for (p = 0; p < MODEL_PAGES; p++) {
			struct hbm_extent e;
			bool in = hbm_table_lookup(&m, p, &e);

			if (op == HBM_OP_RETIRE && p >= (int)first &&
			    p < (int)(first + nr)) {
				expect(in);
				expect(e.state == HBMGUARD_STATE_RETIRED ||
					  e.state == HBMGUARD_STATE_FAILED);
				if (state[p] == HBMGUARD_STATE_RETIRED)
					expect_eq(e.spare + p - e.first, spare[p]);
				state[p] = e.state;
				spare[p] = e.spare == HBM_NO_SPARE ? HBM_NO_SPARE :
					   e.spare + p - e.first;
				continue;
			}
			expect_eq(in ? e.state : 0, state[p]);
			if (state[p] == HBMGUARD_STATE_RETIRED) {
				expect_eq(e.spare + p - e.first, spare[p]);
				expect(!bad[spare[p]]);
			}
		}
		if (step % 50 == 0 || op == HBM_OP_CLEAR) {
			const char *why = table_invariants(&m);

			ck_assert_msg(!why, "step %d: %s", step, why);
		}
	}
	hbm_table_destroy(&m);
}
END_TEST

START_TEST(million_pages)
{
	struct hbm_table big;
	struct hbm_extent e;
	unsigned int seed = 7;
	u32 i, n = 1000000;

	expect_eq(hbm_table_init(&big, 1u << 26, n + 16), 0);
	/* Random isolated pages: the worst case, one extent each. */
	for (i = 0; i < n; i++) {
		u32 page = (u32)(((u64)i * 64 + rand_r(&seed) % 32) % (1u << 26));

		expect_eq(hbm_table_apply(&big, HBM_OP_RETIRE, page, 1,
						 HBMGUARD_SOURCE_UE, 1, NOW,
						 &(struct hbm_result){ 0 }), 0);
	}
	expect_eq(big.pages[HBMGUARD_STATE_RETIRED], n);
	expect_eq(big.nr_extents, n);
	expect(hbm_table_lookup(&big, big.leaves[big.nr_leaves / 2]->ext[3].first, &e));
	ck_assert_msg(!table_invariants(&big), "%s", table_invariants(&big));
	hbm_table_destroy(&big);
}
END_TEST

#define GAP_PAGES	20000

static void collect(const struct hbm_extent *e, void *arg)
{
	struct hbm_extent **out = arg;

	*(*out)++ = *e;
}

/* Whether @a and @b hold the same extents, counts and spares. */
static void ck_tables_same(const struct hbm_table *a, const struct hbm_table *b)
{
	static struct hbm_extent ea[GAP_PAGES], eb[GAP_PAGES];
	struct hbm_extent *pa = ea, *pb = eb;

	ck_assert_uint_eq(a->nr_extents, b->nr_extents);
	hbm_table_walk(a, collect, &pa);
	hbm_table_walk(b, collect, &pb);
	ck_assert_int_eq(memcmp(ea, eb, a->nr_extents * sizeof(ea[0])), 0);
	ck_assert_int_eq(memcmp(a->pages, b->pages, sizeof(a->pages)), 0);
	ck_assert_uint_eq(a->spare_used, b->spare_used);
	ck_assert_uint_eq(a->spare_hint, b->spare_hint);
	ck_assert_int_eq(memcmp(a->spare_map, b->spare_map,
				BITS_TO_LONGS(a->spare_total) * sizeof(unsigned long)), 0);
}

/*
 * hbm_table_apply_gap(@a) of @r against hbm_table_apply() of each range of
 * it in turn (@b, which holds what @a does): a failed allocation, at each
 * allocation in turn, changes nothing; then the same extents, merges,
 * spares and counts, and no warning.
 */
static void ck_gap_is_one_by_one(struct hbm_table *a, struct hbm_table *b,
				 const struct hbm_page_range *r, u32 n)
{
	struct hbm_result ra = { 0 }, rb = { 0 };
	unsigned long warnings = hbm_test_warnings;
	long fail;
	u32 i;

	for (fail = 0; fail < 1024; fail++) {
		int err;

		hbm_test_alloc_fail_in = fail;
		err = hbm_table_apply_gap(a, r, n, &ra);
		if (!err)
			break;
		ck_assert_int_eq(err, -ENOMEM);
		hbm_test_alloc_fail_in = -1;
		ck_table_ok(a);
		ck_tables_same(a, b);
	}
	hbm_test_alloc_fail_in = -1;
	ck_assert_msg(fail > 0 && fail < 1024, "the restore never allocated, or never succeeded");
	for (i = 0; i < n; i++)	/* a range's first_seen is its last_seen here */
		ck_assert_int_eq(hbm_table_apply(b, r[i].op, r[i].first, r[i].nr, r[i].source,
						 r[i].errors, r[i].last_seen, &rb), 0);
	ck_table_ok(a);
	ck_tables_same(a, b);
	ck_assert_int_eq(memcmp(&ra, &rb, sizeof(ra)), 0);
	ck_assert_uint_eq(hbm_test_warnings, warnings);	/* no spare left taken ahead */
}

/*
 * hbm_table_apply_gap() is hbm_table_apply() of each range in turn: the same
 * extents, merges, spares (the pool runs out: FAILED pages, within a range
 * too) and counts; it refuses, changing nothing, ranges out of order or
 * over the table's extents.  Into a gap with extents on both sides (_i 0,
 * 1: one touching the gap's end), past the last extent, which touches the
 * first range (_i 2: written in place), and into an empty table in two
 * requests, the second appended to the first (_i 3).  The spares they take
 * ahead (spares_take()) come from a pool in pieces (_i 1: spares freed
 * among those in use), or from one that never runs dry (_i 4: every page
 * gets a spare, the run broken by failed spares ahead of it; _i 5: all
 * retired, so that ranges_served_whole() builds whole batches of 1024,
 * merging touching ranges whose errors and times differ, up to the
 * errors' saturation).  _i 6: a table whose driver bypasses its pages
 * (no spares: each range through op_piece()).
 */
START_TEST(apply_gap_is_one_by_one)
{
	static struct hbm_page_range r[4000];
	struct hbm_result res = { 0 };
	struct hbm_table a, b;
	unsigned int seed = 99 + _i;
	u32 n = 0, page, i;

	bool endless = _i == 4 || _i == 5;

	ck_assert_int_eq(hbm_table_init(&a, GAP_PAGES, endless ? GAP_PAGES : 3000), 0);
	ck_assert_int_eq(hbm_table_init(&b, GAP_PAGES, endless ? GAP_PAGES : 3000), 0);
	a.driver_bypass = b.driver_bypass = _i == 6;
	/* _i 4: a pool that never runs dry, broken by failed spares it meets. */
	for (i = 0; i < (_i == 4 ? 4 : 0); i++) {
		static const u32 failed[] = { 10, 11, 500, 3000 };
		u32 served;

		ck_assert_int_eq(hbm_table_spare_fail(&a, failed[i], 1, NOW, &res, &served), 0);
		ck_assert_int_eq(hbm_table_spare_fail(&b, failed[i], 1, NOW, &res, &served), 0);
	}
	/* Extents around the gap [1000, 15000), one touching its start. */
	for (i = 0; i < (_i < 2 ? 200 : _i < 3 ? 100 : 0); i++) {
		page = i < 100 ? 1 + i * 9 : 15000 + i * 20;
		if (i == 99)
			page = 998;	/* [998, 1000) */
		ck_assert_int_eq(hbm_table_apply(&a, i % 3 ? HBM_OP_RETIRE : HBM_OP_PENDING, page,
						 1 + i % 2, HBMGUARD_SOURCE_UE, 1, NOW, &res), 0);
		ck_assert_int_eq(hbm_table_apply(&b, i % 3 ? HBM_OP_RETIRE : HBM_OP_PENDING, page,
						 1 + i % 2, HBMGUARD_SOURCE_UE, 1, NOW, &res), 0);
	}
	/* _i 1: spares freed among those in use, so that the pool is in pieces. */
	for (i = 0; i < (_i == 1 ? 100 : 0); i += 7) {
		page = 1 + i * 9;
		ck_assert_int_eq(hbm_table_apply(&a, HBM_OP_CLEAR, page, 2, 0, 0, NOW, &res), 0);
		ck_assert_int_eq(hbm_table_apply(&b, HBM_OP_CLEAR, page, 2, 0, 0, NOW, &res), 0);
	}
	/* Ranges apart or touching, mostly retired, up to the gap's end. */
	for (page = 1000; n < 4000; n++) {
		page += rand_r(&seed) % 4;
		r[n] = (struct hbm_page_range){ .first = page, .nr = 1 + rand_r(&seed) % 4,
					   .op = rand_r(&seed) % 5 ? HBM_OP_RETIRE : HBM_OP_PENDING,
					   .source = rand_r(&seed) % 3 ? HBMGUARD_SOURCE_UE :
						     HBMGUARD_SOURCE_RESTORED,
					   .first_seen = NOW, .last_seen = NOW };
		if (_i == 5) {
			r[n].op = HBM_OP_RETIRE;
			r[n].errors = n % 7 ? rand_r(&seed) % 4 : 0x7ff0;
			r[n].first_seen = r[n].last_seen = NOW - rand_r(&seed) % 3;
		}
		if (page + r[n].nr > 15000)
			break;
		page += r[n].nr;
	}
	if (_i == 1)
		r[n++] = (struct hbm_page_range){ .first = 15000, .nr = 20, .op = HBM_OP_RETIRE,
						  .source = HBMGUARD_SOURCE_UE,
						  .first_seen = NOW, .last_seen = NOW };
	/* What comes before the ranges merges with their first (undone on failure). */
	if (_i == 2) {
		r[0].first = 1000;
		r[0].op = HBM_OP_PENDING;
		r[0].source = HBMGUARD_SOURCE_UE;
	}
	if (_i == 3) {
		r[n / 2].first = r[n / 2 - 1].first + r[n / 2 - 1].nr;
		r[n / 2 - 1].op = HBM_OP_PENDING;
		r[n / 2].op = HBM_OP_PENDING;
		r[n / 2].source = r[n / 2 - 1].source;
	}

	/* Out of order, or over an extent: refused, nothing changed. */
	r[n] = r[0];
	ck_assert_int_eq(hbm_table_apply_gap(&a, r, n + 1, &res), -EAGAIN);
	if (_i < 3)
		ck_assert_int_eq(hbm_table_apply_gap(&a, &(struct hbm_page_range){
					.first = 990, .nr = 20, .op = HBM_OP_RETIRE,
					.source = HBMGUARD_SOURCE_UE }, 1, &res), -EAGAIN);
	ck_tables_same(&a, &b);
	if (_i == 3) {
		ck_gap_is_one_by_one(&a, &b, r, n / 2);
		ck_assert_uint_gt(a.nr_leaves, 1);
		ck_gap_is_one_by_one(&a, &b, r + n / 2, n - n / 2);
	} else {
		ck_gap_is_one_by_one(&a, &b, r, n);
	}
	if (endless || _i == 6)	/* spares for every page, or none wanted */
		ck_assert_uint_eq(a.pages[HBMGUARD_STATE_FAILED], 0);
	else			/* the pool ran out */
		ck_assert_uint_gt(a.pages[HBMGUARD_STATE_FAILED], 0);
	if (_i == 5)		/* merged: fewer extents than ranges, some saturated */
		ck_assert_uint_lt(a.nr_extents, n);
	hbm_table_destroy(&a);
	hbm_table_destroy(&b);
}
END_TEST

/*
 * A restore keeps each range's record: its source (not RESTORED), its
 * times and its errors, on the first page of a retired run (bypass()),
 * and on a range the spares taken ahead serve whole (ranges_served_whole():
 * the first range took them for the third).
 */
START_TEST(apply_gap_keeps_records)
{
	const struct hbm_page_range r[] = {
		{ .first = 10, .nr = 2, .op = HBM_OP_RETIRE, .source = HBMGUARD_SOURCE_UE,
		  .first_seen = 100, .last_seen = 200, .errors = 7 },
		{ .first = 20, .nr = 1, .op = HBM_OP_PENDING, .source = HBMGUARD_SOURCE_ADMIN,
		  .first_seen = 300, .last_seen = 400, .errors = 2 },
		{ .first = 30, .nr = 2, .op = HBM_OP_RETIRE, .source = HBMGUARD_SOURCE_POISON,
		  .first_seen = 500, .last_seen = 600, .errors = 3 },
	};
	struct hbm_result res = { 0 };
	struct hbm_extent e;
	struct hbm_table t;

	ck_assert_int_eq(hbm_table_init(&t, 100, 10), 0);
	ck_assert_int_eq(hbm_table_apply_gap(&t, r, 3, &res), 0);
	ck_assert(hbm_table_lookup(&t, 10, &e));
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_UE);
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.nr, 2);
	ck_assert_uint_eq(e.first_seen, 100);
	ck_assert_uint_eq(e.last_seen, 200);
	ck_assert_uint_eq(e.errors, 7);
	ck_assert(hbm_table_lookup(&t, 20, &e));
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_ADMIN);
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_PENDING);
	ck_assert_uint_eq(e.first_seen, 300);
	ck_assert_uint_eq(e.last_seen, 400);
	ck_assert_uint_eq(e.errors, 2);
	ck_assert(hbm_table_lookup(&t, 31, &e));
	ck_assert_uint_eq(e.first, 30);
	ck_assert_uint_eq(e.nr, 2);
	ck_assert_uint_eq(e.spare, 2);	/* after the first range's two */
	ck_assert_uint_eq(e.source, HBMGUARD_SOURCE_POISON);
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(e.first_seen, 500);
	ck_assert_uint_eq(e.last_seen, 600);
	ck_assert_uint_eq(e.errors, 3);
	ck_assert_uint_eq(res.retired, 4);
	ck_assert_uint_eq(res.pending, 1);
	ck_table_ok(&t);
	hbm_table_destroy(&t);
}
END_TEST

/*
 * Next-fit, one page at a time, over a copy of the pool: the spare each page
 * of a retirement gets, or HBM_NO_SPARE once none is left.
 */
static void next_fit_by_page(unsigned long *map, u32 total, u32 *hint,
			     u32 *spares, u32 nr)
{
	u32 i, s;

	for (i = 0; i < nr; i++) {
		for (s = *hint; s < total && test_bit(s, map); s++)
			;
		if (s == total)
			for (s = 0; s < total && test_bit(s, map); s++)
				;
		if (s == total) {
			spares[i] = HBM_NO_SPARE;
			continue;
		}
		__set_bit(s, map);
		*hint = s + 1;
		spares[i] = s;
	}
}

/*
 * spares_take() hands out a run of consecutive spares at a time: each page
 * still gets what next-fit page by page gives, from a pool in pieces (pages
 * cleared, spares failed, free and in use), past the hint, wrapping to the
 * pool's start, until it runs out.  By hbm_table_apply() (_i 0) and by
 * hbm_table_apply_gap() (_i 1).
 */
START_TEST(spares_next_fit_in_pieces)
{
	enum { SPARES = 200, FIRST = 5000 };
	unsigned long map[BITS_TO_LONGS(SPARES)];
	u32 expected[SPARES + 8], hint, nr, i, page;
	struct hbm_result res = { 0 };
	struct hbm_extent e;
	struct hbm_table t;

	ck_assert_int_eq(hbm_table_init(&t, 1 << 16, SPARES), 0);
	ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, 0, 150, HBMGUARD_SOURCE_UE,
					 1, NOW, &res), 0);
	for (i = 0; i < 100; i += 2)
		ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_CLEAR, i, 1, 0, 0, NOW, &res), 0);
	ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_CLEAR, 120, 10, 0, 0, NOW, &res), 0);
	ck_assert_int_eq(hbm_table_spare_fail(&t, 4, 1, NOW, &res, &page), 0);
	ck_assert_int_eq(hbm_table_spare_fail(&t, 124, 1, NOW, &res, &page), 0);
	ck_assert_int_eq(hbm_table_spare_fail(&t, 51, 1, NOW, &res, &page), 0);
	ck_assert_uint_eq(page, 51);		/* moved to spare 150 */
	ck_table_ok(&t);

	memcpy(map, t.spare_map, sizeof(map));
	hint = t.spare_hint;
	ck_assert_uint_gt(hint, 100);		/* so the retirement wraps */
	nr = SPARES - t.spare_used - t.spare_bad + 5;	/* and runs out */
	next_fit_by_page(map, SPARES, &hint, expected, nr);

	memset(&res, 0, sizeof(res));
	if (_i == 0) {
		ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, FIRST, nr,
						 HBMGUARD_SOURCE_UE, 1, NOW, &res), 0);
	} else {
		const struct hbm_page_range r = {
			.first = FIRST, .nr = nr, .op = HBM_OP_RETIRE,
			.source = HBMGUARD_SOURCE_UE, .first_seen = NOW, .last_seen = NOW,
		};

		ck_assert_int_eq(hbm_table_apply_gap(&t, &r, 1, &res), 0);
	}
	for (i = 0; i < nr; i++) {
		ck_assert(hbm_table_lookup(&t, FIRST + i, &e));
		if (expected[i] == HBM_NO_SPARE) {
			ck_assert_msg(e.state == HBMGUARD_STATE_FAILED,
				      "page %u: state %u, FAILED expected", FIRST + i, e.state);
			continue;
		}
		ck_assert_msg(e.state == HBMGUARD_STATE_RETIRED &&
			      e.spare + (FIRST + i - e.first) == expected[i],
			      "page %u: spare %u, %u expected", FIRST + i,
			      e.spare + (FIRST + i - e.first), expected[i]);
	}
	ck_assert_uint_eq(res.retired, nr - 5);
	ck_assert_uint_eq(res.failed, 5);
	ck_assert_uint_eq(t.spare_hint, hint);
	ck_assert_int_eq(memcmp(t.spare_map, map, sizeof(map)), 0);
	ck_table_ok(&t);
	hbm_table_destroy(&t);
}
END_TEST

/*
 * Counts that say a spare is free where the map has none (a bug elsewhere):
 * a warning, and the pages FAILED, not a retirement that never ends.
 */
START_TEST(spare_counts_drift_fails_pages)
{
	struct hbm_result res = { 0 };
	struct hbm_extent e;

	ck_assert_int_eq(apply(HBM_OP_RETIRE, 0, 64, NULL), 0);
	t.spare_used--;
	hbm_test_warnings = 0;
	ck_assert_int_eq(apply(HBM_OP_RETIRE, 100, 2, &res), 0);
	ck_assert_uint_eq(hbm_test_warnings, 1);
	ck_assert_uint_eq(res.failed, 2);
	ck_assert(hbm_table_lookup(&t, 101, &e));
	ck_assert_uint_eq(e.state, HBMGUARD_STATE_FAILED);
	t.spare_used++;
	ck_table_ok(&t);
}
END_TEST

Suite *table_suite(void)
{
	Suite *s = suite_create("table");
	TCase *tc = tcase_create("ops");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, retire_one_page);
	tcase_add_test(tc, adjacent_pages_merge);
	tcase_add_test(tc, pending_then_retire);
	tcase_add_test(tc, clock_set_back_keeps_last_seen);
	tcase_add_test(tc, clear_splits_and_frees);
	tcase_add_test(tc, pool_exhaustion_fails_pages);
	tcase_add_test(tc, report_on_row_counts_once);
	tcase_add_test(tc, failed_spare_leaves_pool);
	tcase_add_test(tc, spare_fail_enomem_changes_nothing);
	tcase_add_test(tc, bad_ranges);
	tcase_add_test(tc, enomem_changes_nothing);
	tcase_add_test(tc, list_pages_through_cursor);
	tcase_add_test(tc, spare_counts_drift_fails_pages);
	tcase_add_loop_test(tc, spares_next_fit_in_pieces, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("model");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, model_random_ops, 0, 4);
	tcase_add_test(tc, million_pages);
	tcase_add_loop_test(tc, apply_gap_is_one_by_one, 0, 7);
	tcase_add_test(tc, apply_gap_keeps_records);
	suite_add_tcase(s, tc);
	return s;
}
