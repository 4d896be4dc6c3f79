// SPDX-License-Identifier: GPL-2.0
/* Unit tests of what hbmguardd has seen of the kernel's events (daemon/seen.c). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <linux/hbmguard.h>

#include "seen.h"
#include "unit.h"

START_TEST(seq_in_order)
{
	uint64_t next = 0;

	ck_assert(!hbm_seq_lost(&next, 7, HBMGUARD_EVENT_RETIRED));	/* any, at first */
	ck_assert(!hbm_seq_lost(&next, 8, HBMGUARD_EVENT_RETIRED));
	ck_assert(hbm_seq_lost(&next, 10, HBMGUARD_EVENT_RETIRED));	/* 9 lost */
	ck_assert(!hbm_seq_lost(&next, 11, HBMGUARD_EVENT_PENDING));
	ck_assert_uint_eq(next, 12);
}
END_TEST

/* DROPPED carries the seqnum of the event that follows it: one resync. */
START_TEST(seq_dropped_once)
{
	uint64_t next = 5;

	ck_assert(hbm_seq_lost(&next, 9, HBMGUARD_EVENT_DROPPED));
	ck_assert(!hbm_seq_lost(&next, 9, HBMGUARD_EVENT_RETIRED));
	ck_assert(!hbm_seq_lost(&next, 10, HBMGUARD_EVENT_RETIRED));
	next = 0;	/* after an overflow, the first message is DROPPED */
	ck_assert(hbm_seq_lost(&next, 20, HBMGUARD_EVENT_DROPPED));
	ck_assert(!hbm_seq_lost(&next, 20, HBMGUARD_EVENT_FAILED));
}
END_TEST

/*
 * The seen set's nodes from the unit tests' allocator (tests/unit/shim.c),
 * so that hbm_test_alloc_fail_in makes them fail.
 */
void *hbm_range_node_alloc(size_t size)
{
	return hbm_test_alloc(size, false);
}

static void expect_ranges(const struct hbm_ranges *s, size_t nr, const struct hbm_range *r)
{
	size_t i;

	ck_assert_uint_eq(s->nr, nr);
	for (i = 0; i < nr; i++)
		if (s->r[i].offset != r[i].offset || s->r[i].length != r[i].length)
			ck_abort_msg("range %zu: 0x%llx+0x%llx, not 0x%llx+0x%llx", i,
				     (unsigned long long)s->r[i].offset,
				     (unsigned long long)s->r[i].length,
				     (unsigned long long)r[i].offset, (unsigned long long)r[i].length);
}

/*
 * A set's ranges in order, and its tree checked on the way: leaves at one
 * depth, each key its child's first offset, each node but the root and
 * the last of its level at least half full, the ranges sorted, not empty,
 * not touching; the set's count and its last leaf right.  The first thing
 * wrong, or NULL (one assertion for the whole walk: check's are slow).
 */
struct walk {
	struct hbm_ranges out;
	const struct hbm_range_node *last_leaf;
};

static const char *walk_node(struct walk *w, const struct hbm_range_node *n, uint32_t level,
			     bool root, bool last)
{
	const char *bad = NULL;
	uint32_t i;

	if (n->level != level)
		return "leaves at different depths";
	if (n->nr < (root && level ? 2 : 1) || n->nr > HBM_RANGE_NODE_MAX)
		return "a node's size out of bounds";
	if (!root && !last && n->nr < HBM_RANGE_NODE_MAX / 2)
		return "a node below half full";
	if (!level) {
		for (i = 0; i < n->nr; i++) {
			const struct hbm_range *r = &n->e[i].r, *prev = w->out.r + w->out.nr - 1;

			if (!r->length)
				return "an empty range";
			if (w->out.nr && prev->offset + prev->length >= r->offset)
				return "ranges out of order, overlapping or touching";
			w->out.r[w->out.nr++] = *r;
		}
		w->last_leaf = n;
		return NULL;
	}
	for (i = 0; i < n->nr && !bad; i++) {
		const struct hbm_range_node *c = n->e[i].c.child;

		if (n->e[i].c.first != (c->level ? c->e[0].c.first : c->e[0].r.offset))
			return "a key that is not its child's first offset";
		bad = walk_node(w, c, level - 1, false, last && i + 1 == n->nr);
	}
	return bad;
}

/* The set's ranges (@out->r freed by the caller), its tree checked. */
static void set_ranges(const struct hbm_range_set *s, struct hbm_ranges *out)
{
	struct walk w = { .out = { .r = calloc(s->nr + 1, sizeof(struct hbm_range)) } };
	const char *bad = NULL;

	ck_assert_ptr_nonnull(w.out.r);
	if (s->root)
		bad = walk_node(&w, s->root, s->height - 1, true, true);
	else if (s->height)
		bad = "no root, and a height";
	if (!bad && w.out.nr != s->nr)
		bad = "a count that is not the ranges'";
	if (!bad && s->last != w.last_leaf)
		bad = "a last leaf that is not the last";
	if (bad)
		ck_abort_msg("%s", bad);
	*out = w.out;
}

static void expect_set(const struct hbm_range_set *s, size_t nr, const struct hbm_range *r)
{
	struct hbm_ranges got;

	set_ranges(s, &got);
	expect_ranges(&got, nr, r);
	hbm_ranges_free(&got);
}

START_TEST(ranges_add)
{
	struct hbm_range_set s = { 0 };
	struct hbm_ranges fresh = { 0 };

	ck_assert_int_eq(hbm_range_set_add(&s, 0x9000, 0x1000, &fresh), 0);
	expect_ranges(&fresh, 1, (struct hbm_range[]){ { 0x9000, 0x1000 } });
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_range_set_add(&s, 0x9000, 0x1000, &fresh), 0);
	ck_assert_uint_eq(fresh.nr, 0);		/* seen: nothing new */
	ck_assert_int_eq(hbm_range_set_add(&s, 0x3000, 0x1000, &fresh), 0);
	ck_assert_int_eq(hbm_range_set_add(&s, 0xc000, 0x1000, &fresh), 0);
	hbm_ranges_free(&fresh);
	/* Over all three and between them: only the gaps are new. */
	ck_assert_int_eq(hbm_range_set_add(&s, 0x2000, 0xc000, &fresh), 0);
	expect_ranges(&fresh, 4, (struct hbm_range[]){
		{ 0x2000, 0x1000 }, { 0x4000, 0x5000 }, { 0xa000, 0x2000 }, { 0xd000, 0x1000 } });
	expect_set(&s, 1, (struct hbm_range[]){ { 0x2000, 0xc000 } });
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_range_set_add(&s, UINT64_MAX - 0xfff, 0x2000, &fresh), -ERANGE);
	ck_assert_int_eq(hbm_range_set_remove(&s, UINT64_MAX - 0xfff, 0x2000), -ERANGE);
	ck_assert_uint_eq(fresh.nr, 0);
	expect_set(&s, 1, (struct hbm_range[]){ { 0x2000, 0xc000 } });
	ck_assert_int_eq(hbm_range_set_add(&s, 0x20000, 0x1000, NULL), 0);
	expect_set(&s, 2, (struct hbm_range[]){ { 0x2000, 0xc000 }, { 0x20000, 0x1000 } });
	hbm_range_set_free(&s);
}
END_TEST

/*
 * A table read's ranges, in order: each appended (touching ones merged),
 * all fresh; the set then takes a range among them as any other.
 */
START_TEST(ranges_add_in_order)
{
	struct hbm_range_set s = { 0 };
	struct hbm_ranges fresh = { 0 }, got;
	uint64_t i;

	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(hbm_range_set_add(&s, 2 * i * 0x1000, 0x1000, &fresh), 0);
	ck_assert_uint_eq(s.nr, 100000);
	ck_assert_uint_eq(fresh.nr, 100000);
	/* Appended: no slot moved, and the leaves full (ceil(10^5 / 255)). */
	ck_assert_uint_eq(s.moved, 0);
	ck_assert_uint_eq(s.height, 3);
	ck_assert_uint_eq(s.root->nr, 2);
	ck_assert_uint_eq(s.root->e[0].c.child->nr, HBM_RANGE_NODE_MAX);
	set_ranges(&s, &got);
	ck_assert_uint_eq(got.r[99999].offset, 199998 * 0x1000ULL);
	hbm_ranges_free(&got);
	hbm_ranges_free(&fresh);
	for (i = 0; i < 100000; i++)	/* read again: nothing new */
		ck_assert_int_eq(hbm_range_set_add(&s, 2 * i * 0x1000, 0x1000, &fresh), 0);
	ck_assert_uint_eq(fresh.nr, 0);
	ck_assert_uint_eq(s.nr, 100000);
	ck_assert_int_eq(hbm_range_set_add(&s, 0x1000, 0x1000, &fresh), 0);	/* fills a gap */
	expect_ranges(&fresh, 1, (struct hbm_range[]){ { 0x1000, 0x1000 } });
	ck_assert_uint_eq(s.nr, 99999);
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_range_set_add(&s, 199999 * 0x1000ULL, 0x1000, NULL), 0);	/* touching */
	set_ranges(&s, &got);
	ck_assert_uint_eq(got.nr, 99999);
	ck_assert_uint_eq(got.r[0].length, 0x3000);
	ck_assert_uint_eq(got.r[99998].length, 0x2000);
	hbm_ranges_free(&got);
	hbm_range_set_free(&s);
}
END_TEST

#define PAGE		0x1000ULL

/*
 * Inner nodes that are not the root borrow and merge: two full subtrees
 * under the root (appended in order, as a table read packs them), the
 * first emptied from its start a range at a time.  Its leaves merge until
 * it holds less than half, and it takes leaves from the second (which lost
 * none of its own ranges), then merges with it: the height falls.
 */
START_TEST(ranges_inner_nodes_borrow_then_merge)
{
	const uint64_t full = (uint64_t)HBM_RANGE_NODE_MAX * HBM_RANGE_NODE_MAX;
	struct hbm_range_set s = { 0 };
	struct hbm_range_node *second;
	struct hbm_ranges got;
	uint64_t i, lent_at = 0;

	for (i = 0; i < 2 * full; i++)
		ck_assert_int_eq(hbm_range_set_add(&s, 2 * i * PAGE, PAGE, NULL), 0);
	ck_assert_uint_eq(s.height, 3);
	ck_assert_uint_eq(s.root->nr, 2);
	second = s.root->e[1].c.child;
	ck_assert_uint_eq(s.root->e[0].c.child->nr, HBM_RANGE_NODE_MAX);
	ck_assert_uint_eq(second->nr, HBM_RANGE_NODE_MAX);
	for (i = 0; i < full && s.height == 3; i++) {
		ck_assert_int_eq(hbm_range_set_remove(&s, 2 * i * PAGE, PAGE), 0);
		if (!lent_at && s.height == 3 && second->nr < HBM_RANGE_NODE_MAX) {
			lent_at = i + 1;
			/* the first took leaves, and stays the first */
			ck_assert_uint_eq(s.root->nr, 2);
			ck_assert_ptr_eq(s.root->e[1].c.child, second);
			ck_assert_uint_ge(s.root->e[0].c.child->nr, HBM_RANGE_NODE_MAX / 2);
			set_ranges(&s, &got);	/* the tree checked whole */
			ck_assert_uint_eq(got.nr, 2 * full - lent_at);
			hbm_ranges_free(&got);
		}
	}
	ck_assert_uint_gt(lent_at, 0);
	ck_assert_uint_eq(s.height, 2);		/* merged: the root's one child went up */
	ck_assert_uint_gt(i, lent_at);
	set_ranges(&s, &got);
	ck_assert_uint_eq(got.nr, 2 * full - i);
	ck_assert_uint_eq(got.r[0].offset, 2 * i * PAGE);
	hbm_ranges_free(&got);
	hbm_range_set_free(&s);
}
END_TEST

START_TEST(ranges_remove)
{
	struct hbm_range_set s = { 0 };
	struct hbm_ranges fresh = { 0 };

	ck_assert_int_eq(hbm_range_set_add(&s, 0x1000, 0x4000, NULL), 0);
	ck_assert_int_eq(hbm_range_set_add(&s, 0x8000, 0x1000, NULL), 0);
	ck_assert_int_eq(hbm_range_set_remove(&s, 0x2000, 0x1000), 0);	/* splits */
	expect_set(&s, 3, (struct hbm_range[]){
		{ 0x1000, 0x1000 }, { 0x3000, 0x2000 }, { 0x8000, 0x1000 } });
	ck_assert_int_eq(hbm_range_set_remove(&s, 0x4000, 0x10000), 0);
	expect_set(&s, 2, (struct hbm_range[]){ { 0x1000, 0x1000 }, { 0x3000, 0x1000 } });
	/* A page cleared and hit again is new again. */
	ck_assert_int_eq(hbm_range_set_add(&s, 0x8000, 0x1000, &fresh), 0);
	expect_ranges(&fresh, 1, (struct hbm_range[]){ { 0x8000, 0x1000 } });
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_range_set_remove(&s, 0, UINT64_MAX), 0);
	expect_set(&s, 0, NULL);
	hbm_range_set_free(&s);
}
END_TEST

/*
 * A page among 10^5 seen (a retirement among a restored table's pages),
 * then taken out again: each moves at most a few nodes' worth of slots,
 * where a set that shifted its ranges would move half of them.
 */
START_TEST(ranges_change_in_the_middle_moves_little)
{
	struct hbm_range_set s = { 0 };
	unsigned long before;
	uint64_t i;

	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(hbm_range_set_add(&s, 4 * i * 0x1000, 0x1000, NULL), 0);
	for (i = 0; i < 1000; i++) {	/* a thousand pages between them */
		uint64_t page = (4 * (50000 + 37 * i) + 2) * 0x1000;

		before = s.moved;
		ck_assert_int_eq(hbm_range_set_add(&s, page, 0x1000, NULL), 0);
		ck_assert_uint_le(s.moved - before, 4 * HBM_RANGE_NODE_MAX);
		before = s.moved;
		ck_assert_int_eq(hbm_range_set_remove(&s, page - 0x2000, 0x1000), 0);
		ck_assert_uint_le(s.moved - before, 4 * HBM_RANGE_NODE_MAX);
	}
	ck_assert_uint_eq(s.nr, 100000);
	hbm_range_set_free(&s);
}
END_TEST

/* The nodes a set keeps for its next split, freed: its next split allocates. */
/*
 * A page cleared in the middle of a range, with no memory for the split:
 * the set unchanged, and the range it meets taken out whole instead (its
 * neighbours too, never the page left in).
 */
START_TEST(ranges_remove_around_when_no_split_can_be_had)
{
	struct hbm_range_set s = { 0 };
	struct hbm_range around[2];

	ck_assert_int_eq(hbm_range_set_add(&s, 0x1000, 0x4000, NULL), 0);
	ck_assert_int_eq(hbm_range_set_add(&s, 0x8000, 0x2000, NULL), 0);
	ck_assert_int_eq(hbm_range_set_add(&s, 0xc000, 0x1000, NULL), 0);
	hbm_test_drop_spares(&s);
	hbm_test_alloc_fail_in = 0;
	ck_assert_int_eq(hbm_range_set_remove(&s, 0x2000, 0x1000), -ENOMEM);
	hbm_test_alloc_fail_in = -1;
	expect_set(&s, 3, (struct hbm_range[]){
		{ 0x1000, 0x4000 }, { 0x8000, 0x2000 }, { 0xc000, 0x1000 } });
	hbm_test_alloc_fail_in = 0;
	hbm_range_set_remove_around(&s, 0x2000, 0x1000, around);
	expect_set(&s, 2, (struct hbm_range[]){ { 0x8000, 0x2000 }, { 0xc000, 0x1000 } });
	expect_ranges(&(struct hbm_ranges){ around, 2 }, 2, (struct hbm_range[]){
		{ 0x1000, 0x1000 }, { 0x3000, 0x2000 } });	/* for the caller to add back */
	/* over two ranges' edges, and touching a third: that one stays */
	hbm_test_alloc_fail_in = -1;
	ck_assert_int_eq(hbm_range_set_add(&s, 0x5000, 0x2000, NULL), 0);
	hbm_test_drop_spares(&s);
	hbm_test_alloc_fail_in = 0;
	hbm_range_set_remove_around(&s, 0x6000, 0x3000, around);
	expect_set(&s, 1, (struct hbm_range[]){ { 0xc000, 0x1000 } });
	expect_ranges(&(struct hbm_ranges){ around, 2 }, 2, (struct hbm_range[]){
		{ 0x5000, 0x1000 }, { 0x9000, 0x1000 } });
	hbm_range_set_remove_around(&s, 0xd000, 0x1000, around);	/* meets none */
	expect_set(&s, 1, (struct hbm_range[]){ { 0xc000, 0x1000 } });
	ck_assert_uint_eq(around[0].length + around[1].length, 0);
	hbm_test_alloc_fail_in = -1;
	hbm_range_set_free(&s);
}
END_TEST

/* The model: a byte a page, over the span of a test. */

static void model_set(uint8_t *m, uint64_t first, uint64_t nr, bool on)
{
	for (uint64_t p = first; p < first + nr; p++)
		m[p] = on;
}

/* The model's ranges, as the set must hold them. */
static void model_ranges(const uint8_t *m, uint64_t span, struct hbm_ranges *out)
{
	uint64_t p, start;

	out->nr = 0;
	for (p = 0; p < span; p++) {
		if (!m[p] || (p && m[p - 1]))
			continue;
		for (start = p; p < span && m[p]; p++)
			;
		out->r[out->nr++] = (struct hbm_range){ start * PAGE, (p - start) * PAGE };
	}
}

/* The fresh part of an add of pages [first, first + nr) to the model. */
static void model_fresh(const uint8_t *m, uint64_t first, uint64_t nr, struct hbm_ranges *out)
{
	uint64_t p, start;

	out->nr = 0;
	for (p = first; p < first + nr; p++) {
		if (m[p])
			continue;
		for (start = p; p < first + nr && !m[p]; p++)
			;
		out->r[out->nr++] = (struct hbm_range){ start * PAGE, (p - start) * PAGE };
	}
}

static void expect_model(const struct hbm_range_set *s, const uint8_t *m, uint64_t span,
			 struct hbm_ranges *want)
{
	model_ranges(m, span, want);
	expect_set(s, want->nr, want->r);
}

/*
 * Random adds and removes, of a page mostly and one in @runs of a run of
 * pages, over @span pages, for @rounds, growing the first half, shrinking
 * the second:
 * after each, the fresh part of an add, and every @check_every the set
 * against the model (its tree checked whole); every fifth change made to
 * fail at one of its allocations first, which must change nothing.
 * The heights the tree grew to and fell to, a bit each.
 */
struct heights {
	unsigned long grew_to, fell_to;
};

static struct heights against_a_model(uint64_t span, int rounds, int runs, int check_every)
{
	uint8_t *model = calloc(span, 1);
	struct hbm_ranges want = { .r = calloc(span, sizeof(struct hbm_range)) };
	struct hbm_ranges fresh = { 0 };
	struct hbm_range_set s = { 0 };
	struct heights heights = { 0 };
	unsigned long failed = 0;
	uint32_t seed = 12345, height = 0;
	int round, err;

	ck_assert_ptr_nonnull(model);
	ck_assert_ptr_nonnull(want.r);
	for (round = 0; round < rounds; round++) {
		bool check = round % check_every == 0 || round == rounds - 1;
		uint64_t first, nr;
		size_t before;
		bool add;

		seed = seed * 1103515245 + 12345;
		add = (seed >> 16) % 8 < (round < rounds / 2 ? 6 : 3);	/* grows, then shrinks */
		first = (seed >> 8) % span;
		seed = seed * 1103515245 + 12345;
		nr = (seed >> 16) % runs ? 1 : 1 + (seed >> 8) % 64;
		if (first + nr > span)
			nr = span - first;
		if (round % 5 == 0) {
			hbm_test_drop_spares(&s);
			before = s.nr;
			hbm_test_alloc_fail_in = (seed >> 4) % 3;
			err = add ? hbm_range_set_add(&s, first * PAGE, nr * PAGE, &fresh) :
				    hbm_range_set_remove(&s, first * PAGE, nr * PAGE);
			hbm_test_alloc_fail_in = -1;
			if (err) {
				ck_assert_int_eq(err, -ENOMEM);
				ck_assert_uint_eq(fresh.nr, 0);
				ck_assert_uint_eq(s.nr, before);
				if (check)
					expect_model(&s, model, span, &want);
				failed++;
			}
			if (!err)	/* done: done again below, as a change of nothing */
				model_set(model, first, nr, add);
			hbm_ranges_free(&fresh);
		}
		if (add) {
			ck_assert_int_eq(hbm_range_set_add(&s, first * PAGE, nr * PAGE, &fresh), 0);
			model_fresh(model, first, nr, &want);
			expect_ranges(&fresh, want.nr, want.r);
			hbm_ranges_free(&fresh);
		} else {
			ck_assert_int_eq(hbm_range_set_remove(&s, first * PAGE, nr * PAGE), 0);
		}
		model_set(model, first, nr, add);
		if (check)
			expect_model(&s, model, span, &want);
		if (s.height > height)
			heights.grew_to |= 1UL << s.height;
		else if (s.height < height)
			heights.fell_to |= 1UL << s.height;
		height = s.height;
	}
	ck_assert_uint_gt(failed, rounds / 200);	/* the failures were tried */
	hbm_range_set_free(&s);
	hbm_ranges_free(&want);
	free(model);
	return heights;
}

/* Every change checked against the model, the tree up to two high. */
START_TEST(ranges_against_a_model)
{
	struct heights h = against_a_model(4000, 20000, 16, 1);

	ck_assert(h.grew_to & (1UL << 2));	/* the tree grew and shrank */
	ck_assert(h.fell_to & (1UL << 1));
}
END_TEST

/*
 * Three high (over 255 leaves: some 45000 ranges over 2^18 pages, few runs
 * that would fill the gaps), then two again: inner nodes that are not the
 * root split and merge (that they borrow, ranges_inner_nodes_borrow_then_merge
 * shows).  Checked against the model every 4000 changes (a check walks the
 * whole span).
 */
START_TEST(ranges_against_a_model_three_high)
{
	struct heights h = against_a_model(1 << 18, 300000, 256, 4000);

	ck_assert(h.grew_to & (1UL << 3));
	ck_assert(h.fell_to & (1UL << 2));	/* a merge below the root */
}
END_TEST

Suite *seen_suite(void)
{
	Suite *s = suite_create("seen");
	TCase *tc = tcase_create("seen");

	/*
	 * The model tests make 300000 and 20000 changes, each checked: the
	 * suite takes 12 s under ASan here, and the larger test went past
	 * Check's 4 s (16 with make check's multiplier) in a make check on a
	 * loaded 2-core host.
	 */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, seq_in_order);
	tcase_add_test(tc, seq_dropped_once);
	tcase_add_test(tc, ranges_add);
	tcase_add_test(tc, ranges_add_in_order);
	tcase_add_test(tc, ranges_inner_nodes_borrow_then_merge);
	tcase_add_test(tc, ranges_remove);
	tcase_add_test(tc, ranges_change_in_the_middle_moves_little);
	tcase_add_test(tc, ranges_remove_around_when_no_split_can_be_had);
	tcase_add_test(tc, ranges_against_a_model);
	tcase_add_test(tc, ranges_against_a_model_three_high);
	suite_add_tcase(s, tc);
	return s;
}
