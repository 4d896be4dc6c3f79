// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the mapped table's B+tree (kmod/mtree.c) and of
 * libhbmguard's reader of it (daemon/libhbmguard/table.c, included for its
 * static lookup()).
 *
 * Random insertions, deletions and updates run against a model (an array
 * indexed by key); after each, the tree's invariants are checked, its
 * extents compared with the model, and lookups through the reader compared
 * with the model's answer, on a mapping assembled as the kernel lays it out.
 * Then random operations of the real table (table.c) are followed by
 * hbm_mtree_span(), hbm_mtree_sync() on one copy and hbm_mtree_follow() on
 * the other, as map.c does, and each copy must equal the table, node for
 * node the same as the other.
 */
#include "libhbmguard/table.c"

#include <check.h>
#include <stdlib.h>
#include "mtree.h"
#include "unit.h"

#define NOW 1700000000u

static u32 rnd_state = 1;

static u32 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

struct walk {
	const struct hbm_mtree *t;
	struct hbmguard_map_entry *out;
	u32 n, nodes;
	u8 *seen;
	const char *err;
};

/* Check the subtree at @i, at @level; return its smallest key. */
static u32 walk_node(struct walk *w, u32 i, u32 level, bool last)
{
	const struct hbmguard_map_node *n;
	u32 j, min;

	if (i >= w->t->used) {
		w->err = "index past the nodes handed out";
		return 0;
	}
	if (w->seen[i]++) {
		w->err = "node reachable twice";
		return 0;
	}
	w->nodes++;
	n = hbm_mtree_node(w->t, i);
	if (n->level != level || n->reserved)
		w->err = "level or reserved wrong";
	if (!n->nr || n->nr > (level ? HBMGUARD_MAP_INNER_MAX : HBMGUARD_MAP_LEAF_MAX))
		w->err = "node empty or overfull";
	/* Half full but the root, and the last leaf after an append. */
	if (i != w->t->root && !(level == 0 && last) &&
	    n->nr < (level ? HBMGUARD_MAP_INNER_MAX : HBMGUARD_MAP_LEAF_MAX) / 2)
		w->err = "node below half full";
	if (w->err)
		return 0;
	if (!level) {
		for (j = 0; j < n->nr; j++) {
			if (w->n && w->out[w->n - 1].first >= n->ext[j].first)
				w->err = "extents out of order";
			w->out[w->n++] = n->ext[j];
		}
		return n->ext[0].first;
	}
	min = n->in.first[0];
	for (j = 0; j < n->nr && !w->err; j++) {
		u32 m = walk_node(w, n->in.child[j], level - 1, last && j == n->nr - 1u);

		if (!w->err && m != n->in.first[j])
			w->err = "inner key is not its subtree's smallest";
	}
	return min;
}

/* The tree's invariants; its extents in @out (room for t->nr). */
static const char *mtree_check(const struct hbm_mtree *t, struct hbmguard_map_entry *out)
{
	struct walk w = { .t = t, .out = out };
	u32 f, k;

	w.seen = calloc(t->used + 1, 1);
	if (t->height)
		walk_node(&w, t->root, t->height - 1, true);
	for (f = t->free, k = 0; !w.err && k < t->nr_free; k++, f = hbm_mtree_node(t, f)->in.first[0])
		if (f >= t->used || w.seen[f]++)
			w.err = "free list broken";
	free(w.seen);
	if (w.err)
		return w.err;
	if (w.n != t->nr)
		return "extent count wrong";
	if (w.nodes + t->nr_free != t->used)
		return "nodes lost";
	if (t->used > t->nr_chunks * HBM_MNODES_PER_CHUNK)
		return "node not backed";
	if (w.nodes > hbm_mtree_max_nodes(t->nr))
		return "more nodes than hbm_mtree_max_nodes() allows";
	return NULL;
}

/* A mapping of copy @t as the kernel lays it out, for libhbmguard's lookup(). */
struct fake_map {
	struct hbmguard_table tab;
	char *buf;
};

static void fake_map(struct fake_map *f, const struct hbm_mtree *t)
{
	struct hbmguard_map_header *h;
	size_t nodes = t->nr_chunks * HBM_MNODES_PER_CHUNK, i;

	f->buf = calloc(1, 4096 + nodes * HBMGUARD_MAP_NODE_SIZE + 1);
	h = (void *)f->buf;
	h->buffer_offset[1] = 4096;
	h->active = 1;
	h->root[1] = t->root;
	h->height[1] = t->height;
	h->nodes = nodes;
	for (i = 0; i < t->nr_chunks; i++)
		memcpy(f->buf + 4096 + i * HBM_MCHUNK_BYTES, t->chunk[i], HBM_MCHUNK_BYTES);
	f->tab.hdr = h;
	f->tab.size = 4096 + nodes * HBMGUARD_MAP_NODE_SIZE;
}

static int reserve_one(void *arg)
{
	return hbm_mtree_reserve(arg, 1);
}

#define KEYS 3000

START_TEST(random_against_model)
{
	static struct hbmguard_map_entry model[KEYS], got[KEYS];
	static bool present[KEYS];
	struct hbm_mtree t;
	struct fake_map fm;
	u32 op, i, nr = 0;

	rnd_state = 12345 + _i;
	memset(present, 0, sizeof(present));
	ck_assert_int_eq(hbm_mtree_init(&t, hbm_mtree_max_nodes(KEYS)), 0);
	for (op = 0; op < 20000; op++) {
		u32 k = rnd() % KEYS, r = rnd() % 100;
		/* Phases: mostly inserts, then mostly deletes, then mixed. */
		u32 ins = op < 6000 ? 80 : op < 12000 ? 20 : 50;
		struct hbmguard_map_entry e = {
			.first = k, .nr = 1 + rnd() % 3, .spare = rnd(), .state = 1 + rnd() % 3,
		}, found;
		int err;

		if (r < ins) {
			ck_assert_int_eq(hbm_mtree_reserve(&t, 1), 0);
			err = hbm_mtree_insert(&t, &e);
			ck_assert_int_eq(err, present[k] ? -EEXIST : 0);
			if (!present[k]) {
				present[k] = true;
				model[k] = e;
				nr++;
			}
		} else if (r < ins + 10) {
			ck_assert_int_eq(hbm_mtree_reserve(&t, 1), 0);
			err = hbm_mtree_upsert(&t, &e);
			ck_assert_int_eq(err, !present[k] ? 2 :
					 memcmp(&model[k], &e, sizeof(e)) ? 1 : 0);
			nr += !present[k];
			present[k] = true;
			model[k] = e;
		} else {
			ck_assert_int_eq(hbm_mtree_delete(&t, k), present[k] ? 0 : -ENOENT);
			if (present[k]) {
				present[k] = false;
				nr--;
			}
		}
		/* The predecessor of a random page, by the writer's lookup. */
		k = rnd() % KEYS;
		for (i = k + 1; i-- > 0 && !present[i];)
			;
		ck_assert_int_eq(hbm_mtree_find(&t, k, &found), i != (u32)-1);
		if (i != (u32)-1)
			ck_assert_int_eq(found.first, i);
		if (op % 97 && op > 200)
			continue;

		{
			const char *why = mtree_check(&t, got);
			u32 n = 0;

			ck_assert_msg(!why, "op %u: %s", op, why);
			ck_assert_uint_eq(t.nr, nr);
			for (i = 0; i < KEYS; i++)
				if (present[i]) {
					ck_assert_int_eq(memcmp(&got[n], &model[i], sizeof(model[i])), 0);
					n++;
				}
		}
		/* The reader agrees, at every key and between. */
		fake_map(&fm, &t);
		for (i = 0; i < 50; i++) {
			struct hbmguard_map_entry e2;
			u32 page = rnd() % (KEYS + 5), p;
			int r2 = lookup(&fm.tab, page, &e2);

			for (p = (page < KEYS ? page : KEYS - 1) + 1; p-- > 0 && !present[p];)
				;
			ck_assert_int_eq(r2, p != (u32)-1);
			if (r2 > 0)
				ck_assert_int_eq(memcmp(&e2, &model[p], sizeof(e2)), 0);
		}
		free(fm.buf);
		/* And a listing of a random range. */
		{
			u32 a = rnd() % KEYS, b = a + rnd() % 200, n, want = 0;

			n = hbm_mtree_list(&t, a, b, got, KEYS);
			for (i = a; i < b && i < KEYS; i++)
				if (present[i]) {
					ck_assert_uint_lt(want, n);
					ck_assert_uint_eq(got[want].first, i);
					want++;
				}
			ck_assert_uint_eq(n, want);
		}
	}
	hbm_mtree_destroy(&t);
}
END_TEST

/* Ascending insertions (a restore) fill leaves whole; the reader finds each. */
START_TEST(ascending_fills_leaves)
{
	static struct hbmguard_map_entry got[20000];
	struct hbm_mtree t;
	struct fake_map fm;
	u32 i, leaves;

	ck_assert_int_eq(hbm_mtree_init(&t, hbm_mtree_max_nodes(20000)), 0);
	for (i = 0; i < 20000; i++) {
		struct hbmguard_map_entry e = { .first = 3 * i, .nr = 2, .spare = i, .state = 2 };

		ck_assert_int_eq(hbm_mtree_reserve(&t, 1), 0);
		ck_assert_int_eq(hbm_mtree_insert(&t, &e), 0);
	}
	ck_assert_ptr_null(mtree_check(&t, got));
	leaves = (20000 + HBMGUARD_MAP_LEAF_MAX - 1) / HBMGUARD_MAP_LEAF_MAX;
	/* Inner nodes split evenly: a level above the leaves is half full. */
	ck_assert_uint_le(t.used, leaves + 2 * leaves / HBMGUARD_MAP_INNER_MAX + 8);
	fake_map(&fm, &t);
	for (i = 0; i < 60000; i++) {
		struct hbmguard_map_entry e;

		ck_assert_int_eq(lookup(&fm.tab, i, &e), 1);
		ck_assert_uint_eq(e.first, i / 3 * 3);
		ck_assert_uint_eq(e.spare, i / 3);
	}
	free(fm.buf);
	hbm_mtree_destroy(&t);
}
END_TEST

/* Without backed nodes an insertion fails whole; a failed allocation too. */
START_TEST(no_room_changes_nothing)
{
	static struct hbmguard_map_entry got[64];
	struct hbmguard_map_entry e = { .first = 7, .nr = 1, .state = 1 };
	struct hbm_mtree t;
	u32 i;

	ck_assert_int_eq(hbm_mtree_init(&t, 100), 0);
	ck_assert_int_eq(hbm_mtree_insert(&t, &e), -ENOSPC);
	ck_assert_uint_eq(t.nr, 0);
	hbm_test_alloc_fail_in = 0;
	ck_assert_int_eq(hbm_mtree_reserve(&t, 1), -ENOMEM);
	hbm_test_alloc_fail_in = -1;
	ck_assert_int_eq(hbm_mtree_insert(&t, &e), -ENOSPC);
	for (i = 0; i < HBMGUARD_MAP_LEAF_MAX; i++) {
		e.first = i;
		ck_assert_int_eq(hbm_mtree_reserve(&t, 1), 0);
		ck_assert_int_eq(hbm_mtree_insert(&t, &e), 0);
	}
	/* The leaf is full; its split needs 3 nodes: take the rest away. */
	t.used = t.nr_chunks * HBM_MNODES_PER_CHUNK;
	e.first = 100;
	ck_assert_int_eq(hbm_mtree_insert(&t, &e), -ENOSPC);
	t.used = 1;
	ck_assert_ptr_null(mtree_check(&t, got));
	ck_assert_uint_eq(t.nr, HBMGUARD_MAP_LEAF_MAX);
	/* The bound holds the largest capacity in a handful of levels. */
	ck_assert_uint_lt(hbm_mtree_max_nodes(HBMGUARD_SPARE_PAGES_MAX + 1024),
			  (HBMGUARD_SPARE_PAGES_MAX + 1024) / 15 * 21 / 20);
	hbm_mtree_destroy(&t);
}
END_TEST

struct table_walk {
	struct hbmguard_map_entry *out;
	u32 n;
};

static void table_one(const struct hbm_extent *e, void *arg)
{
	struct table_walk *w = arg;

	w->out[w->n++] = (struct hbmguard_map_entry){ e->first, e->nr, e->spare, e->state };
}

struct two {
	struct hbm_mtree *c[2];
};

static int reserve_both(void *arg)
{
	struct two *two = arg;

	return hbm_mtree_reserve(two->c[0], 1) ?: hbm_mtree_reserve(two->c[1], 1);
}

#define PAGES 4000
#define SPARES 600

/*
 * The table's own operations, followed as map.c follows them: the span of
 * each change, synced into one copy then the other.
 */
START_TEST(sync_follows_table)
{
	static struct hbmguard_map_entry want[PAGES], got[PAGES];
	struct hbm_mtree c[2];
	struct two two = { { &c[0], &c[1] } };
	struct hbm_mscratch scratch;
	struct hbm_table t;
	u32 op, k, logged = 0, lone = 0;

	rnd_state = 777 + _i;
	ck_assert_int_eq(hbm_table_init(&t, PAGES, SPARES), 0);
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(hbm_mtree_init(&c[k], hbm_mtree_max_nodes(SPARES + 1024)), 0);
	for (op = 0; op < 6000; op++) {
		struct hbm_result res = { 0 };
		u32 r = rnd() % 100, first, nr, lo, hi;
		struct table_walk w = { .out = want };
		const char *why;
		int err;

		/* Mostly single pages, some rows and wide clears. */
		nr = r < 70 ? 1 : r < 90 ? 1 + rnd() % 8 : 1 + rnd() % 300;
		first = rnd() % (PAGES - nr);
		r = rnd() % 100;
		if (r < 3 && t.spare_used) {
			u32 page, spare = rnd() % SPARES;

			err = hbm_table_spare_fail(&t, spare, 1, NOW, &res, &page);
			ck_assert_int_eq(err, 0);
			first = page == HBM_NO_SPARE ? PAGES : page;
			nr = 1;
		} else {
			err = hbm_table_apply(&t, r < 55 ? HBM_OP_RETIRE :
						  r < 70 ? HBM_OP_PENDING : HBM_OP_CLEAR,
					      first, nr, HBMGUARD_SOURCE_UE, 1, NOW, &res);
			ck_assert_int_eq(err, 0);
		}
		if (first >= PAGES)
			continue;
		lo = first ? first - 1 : 0;
		hi = first + nr + 1 < PAGES ? first + nr + 1 : PAGES;
		/* Both ways: the one map.c takes, and its fallback for large changes. */
		if (op % 3) {
			ck_assert_int_eq(hbm_mtree_change(&c[op % 2], &t, &lo, &hi, &scratch,
							  reserve_both, &two), 0);
		} else {
			hbm_mtree_span(&c[op % 2], &t, &lo, &hi);
			ck_assert_int_eq(hbm_mtree_sync(&c[op % 2], &t, lo, hi, &scratch,
							reserve_both, &two), 0);
		}
		ck_assert_uint_le(lo, first);
		logged += scratch.nr_log <= HBM_MSYNC_LOG;
		lone += scratch.at_valid;
		ck_assert_int_eq(hbm_mtree_follow(&c[(op + 1) % 2], &t, lo, hi, &scratch,
						  reserve_both, &two), 0);

		hbm_table_walk(&t, table_one, &w);
		for (k = 0; k < 2; k++) {
			why = mtree_check(&c[k], got);
			ck_assert_msg(!why, "op %u copy %u: %s", op, k, why);
			ck_assert_uint_eq(c[k].nr, w.n);
			ck_assert_int_eq(memcmp(got, want, w.n * sizeof(want[0])), 0);
		}
		/* The same operations in the same order: the same bytes. */
		ck_assert_uint_eq(c[0].used, c[1].used);
		ck_assert_uint_eq(c[0].root, c[1].root);
		for (k = 0; k < c[0].used; k++)
			ck_assert_int_eq(memcmp(hbm_mtree_node(&c[0], k), hbm_mtree_node(&c[1], k),
						HBMGUARD_MAP_NODE_SIZE), 0);
		if (op % 500 == 499) {
			/* A rebuild gives the same table, fuller. */
			ck_assert_int_eq(hbm_mtree_rebuild(&c[0], &t, reserve_one, &c[0]), 0);
			ck_assert_int_eq(hbm_mtree_rebuild(&c[1], &t, reserve_one, &c[1]), 0);
			ck_assert_ptr_null(mtree_check(&c[0], got));
			ck_assert_int_eq(memcmp(got, want, w.n * sizeof(want[0])), 0);
		}
	}
	/* Both ways of following were taken, and the lone insertion's replay. */
	ck_assert_uint_gt(logged, 100);
	ck_assert_uint_lt(logged, op - 10);
	ck_assert_uint_gt(lone, 100);
	for (k = 0; k < 2; k++)
		hbm_mtree_destroy(&c[k]);
	hbm_table_destroy(&t);
}
END_TEST

#define BULK_PAGES (1u << 18)
#define BULK_SPARES (1u << 16)

/*
 * The per-extent way a copy followed the table before the append: the
 * copy's extents in [@lo, @hi) the table no longer has deleted, then each
 * of the table's there upserted, one descent each.
 */
static void follow_each(struct hbm_mtree *r, const struct hbm_table *t, u32 lo, u32 hi)
{
	static struct hbmguard_map_entry old[BULK_PAGES];
	struct hbm_extent x;
	u32 n, i, next;

	n = hbm_mtree_list(r, lo, hi, old, BULK_PAGES);
	for (i = 0; i < n; i++)
		if (!hbm_table_lookup(t, old[i].first, &x) || x.first != old[i].first)
			ck_assert_int_eq(hbm_mtree_delete(r, old[i].first), 0);
	for (; lo < hi; lo = next) {
		n = hbm_table_list(t, lo, hi, &x, 1, &next);
		if (!n)
			break;
		ck_assert_int_eq(reserve_one(r), 0);
		ck_assert_int_ge(hbm_mtree_upsert(r, &(struct hbmguard_map_entry){
			x.first, x.nr, x.spare, x.state }), 0);
	}
}

/*
 * Restores as a module load brings them: sorted batches of ranges past
 * the table's last extent (some touching it, so that they merge with it),
 * applied at once (hbm_table_apply_gap()) and synced into one copy then
 * followed by the other, as map.c does; between them, retirements and
 * clears among the extents there, and batches into a gap.  Both copies
 * must be, byte for byte, the copy that inserting each extent in turn
 * makes, and answer every lookup as the table does; a batch's sync must
 * append, a descent per leaf, not per extent (hbm_mtree_descents).
 */
START_TEST(append_is_insert_each)
{
	static struct hbmguard_map_entry want[BULK_PAGES], got[BULK_PAGES];
	static struct hbm_page_range batch[4096];
	struct hbm_mtree c[3];
	struct two two = { { &c[0], &c[1] } };
	struct hbm_mscratch scratch;
	struct hbm_table t;
	u32 round, end = 0, k, i, appended = 0, added;
	unsigned long descents[3];

	rnd_state = 4242 + _i;
	ck_assert_int_eq(hbm_table_init(&t, BULK_PAGES, BULK_SPARES), 0);
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(hbm_mtree_init(&c[k], hbm_mtree_max_nodes(BULK_SPARES + 1024)),
				 0);
	for (round = 0; round < 40; round++) {
		struct hbm_result res = { 0 };
		struct table_walk w = { .out = want };
		u32 n = 0, first, lo, hi, r = rnd() % 100;
		bool batch_round = r < 70 || !end;
		const char *why;

		if (batch_round) {
			/* A batch past the end: 1 to 4096 ranges, 40% touching. */
			u32 want_n = 1 + rnd() % (r < 20 ? 4096 : 200), page = end;

			if (rnd() % 100 >= 40 || !end)
				page += 1 + rnd() % 5;
			for (n = 0; n < want_n && page + 3 < BULK_PAGES; n++) {
				batch[n] = (struct hbm_page_range){
					.first = page, .nr = 1 + rnd() % 3,
					.first_seen = NOW - rnd() % 1000, .last_seen = NOW,
					.errors = 1 + rnd() % 3,
					.op = rnd() % 8 ? HBM_OP_RETIRE : HBM_OP_PENDING,
					.source = rnd() % 4 ? HBMGUARD_SOURCE_UE :
							      HBMGUARD_SOURCE_CE_THRESHOLD,
				};
				page += batch[n].nr + rnd() % 4;
			}
			if (!n)
				break;
			first = batch[0].first;
			end = batch[n - 1].first + batch[n - 1].nr;
			ck_assert_int_eq(hbm_table_apply_gap(&t, batch, n, &res), 0);
			appended += n;
			lo = first - 1;
			hi = end + 1 < BULK_PAGES ? end + 1 : BULK_PAGES;
		} else {
			/* Among the extents there: a retirement, a clear, a row. */
			u32 nr = 1 + rnd() % 40;

			first = rnd() % (end + 1);
			nr = first + nr < BULK_PAGES ? nr : 1;
			ck_assert_int_eq(hbm_table_apply(&t, r < 85 ? HBM_OP_RETIRE :
							 r < 95 ? HBM_OP_CLEAR : HBM_OP_PENDING,
							 first, nr, HBMGUARD_SOURCE_UE, 1, NOW,
							 &res), 0);
			end = first + nr > end ? first + nr : end;
			lo = first ? first - 1 : 0;
			hi = first + nr + 1 < BULK_PAGES ? first + nr + 1 : BULK_PAGES;
		}
		hbm_mtree_span(&c[round % 2], &t, &lo, &hi);
		added = c[round % 2].nr;
		descents[0] = hbm_mtree_descents;
		ck_assert_int_eq(hbm_mtree_sync(&c[round % 2], &t, lo, hi, &scratch,
						reserve_both, &two), 0);
		descents[1] = hbm_mtree_descents;
		ck_assert_int_eq(hbm_mtree_follow(&c[(round + 1) % 2], &t, lo, hi, &scratch,
						  reserve_both, &two), 0);
		descents[2] = hbm_mtree_descents;
		/*
		 * An append descends once per leaf (some 15 extents: a full
		 * last leaf splits in two), and the sync a few times around
		 * the span; one descent per extent would be `added`.  The
		 * other copy replays a short log, an upsert (a descent) per
		 * extent, and syncs again past HBM_MSYNC_LOG.
		 */
		added = c[round % 2].nr - added;
		if (batch_round)
			for (k = 0; k < (added > HBM_MSYNC_LOG ? 2 : 1); k++)
				ck_assert_msg(descents[k + 1] - descents[k] <= added / 8 + 8,
					      "round %u copy %u: %lu descents for %u extents",
					      round, (round + k) % 2, descents[k + 1] - descents[k],
					      added);
		follow_each(&c[2], &t, lo, hi);

		hbm_table_walk(&t, table_one, &w);
		for (k = 0; k < 3; k++) {
			why = mtree_check(&c[k], got);
			ck_assert_msg(!why, "round %u copy %u: %s", round, k, why);
			ck_assert_uint_eq(c[k].nr, w.n);
			ck_assert_int_eq(memcmp(got, want, w.n * sizeof(want[0])), 0);
		}
		for (k = 0; k < 2; k++) {
			ck_assert_uint_eq(c[k].used, c[2].used);
			ck_assert_uint_eq(c[k].root, c[2].root);
			ck_assert_uint_eq(c[k].height, c[2].height);
			for (i = 0; i < c[2].used; i++)
				ck_assert_msg(!memcmp(hbm_mtree_node(&c[k], i),
						      hbm_mtree_node(&c[2], i),
						      HBMGUARD_MAP_NODE_SIZE),
					      "round %u copy %u node %u", round, k, i);
		}
		for (i = 0; i < 2000; i++) {
			u32 page = rnd() % (end + 2);
			struct hbmguard_map_entry e;
			struct hbm_extent x;
			bool in = hbm_table_lookup(&t, page, &x) && x.first <= page;

			for (k = 0; k < 2; k++) {
				bool found = hbm_mtree_find(&c[k], page, &e) &&
					     e.first + e.nr > page;

				ck_assert_int_eq(found, in);
				if (in)
					ck_assert_uint_eq(e.first, x.first);
			}
		}
	}
	/* Batches of many leaves were appended. */
	ck_assert_uint_gt(appended, 50 * HBMGUARD_MAP_LEAF_MAX);
	ck_assert_uint_gt(c[0].height, 2);
	for (k = 0; k < 3; k++)
		hbm_mtree_destroy(&c[k]);
	hbm_table_destroy(&t);
}
END_TEST

/*
 * Copies that differ above the leaf (a merge on the left in one of them
 * only) but agree on the root, the height and the target leaf: the
 * insertion must not follow the other copy's way down (it split nodes of
 * another size: a memmove of 2^32 slots), but descend.  Not a state map.c
 * leaves the copies in (a failure rebuilds both), which is why follow_at()
 * checks rather than trusts.
 */
START_TEST(follow_checks_the_way)
{
	static struct hbmguard_map_entry got[PAGES];
	struct hbm_mtree c[2];
	struct two two = { { &c[0], &c[1] } };
	struct hbm_mscratch scratch;
	struct hbm_table t;
	u32 i, k, lo, hi, page;
	const char *why;

	ck_assert_int_eq(hbm_table_init(&t, PAGES, SPARES), 0);
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(hbm_mtree_init(&c[k], hbm_mtree_max_nodes(SPARES + 1024)), 0);
	for (i = 0; i < 31 * 6; i++) {	/* six full leaves */
		struct hbm_result res = { 0 };

		ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, i * 10, 1, HBMGUARD_SOURCE_UE,
						 1, NOW, &res), 0);
	}
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(hbm_mtree_rebuild(&c[k], &t, reserve_one, &c[k]), 0);
	/* Copy 1 diverges: the first leaf drops below half and merges. */
	for (i = 31; i < 31 + 15; i++)
		ck_assert_int_eq(hbm_mtree_delete(&c[1], i * 10), 0);
	for (i = 0; i < 17; i++)
		ck_assert_int_eq(hbm_mtree_delete(&c[1], i * 10), 0);
	page = 31 * 6 * 10 + 5;	/* after the last extent: the last leaf, full */
	{
		struct hbm_result res = { 0 };

		ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, page, 1, HBMGUARD_SOURCE_UE,
						 1, NOW, &res), 0);
	}
	lo = page - 1;
	hi = page + 2;
	ck_assert_int_eq(hbm_mtree_change(&c[0], &t, &lo, &hi, &scratch, reserve_both, &two), 0);
	ck_assert(scratch.at_valid);
	ck_assert_int_eq(hbm_mtree_follow(&c[1], &t, lo, hi, &scratch, reserve_both, &two), 0);
	why = mtree_check(&c[1], got);
	ck_assert_msg(!why, "copy 1 after follow: %s", why);
	for (k = 0; k < 2; k++)
		hbm_mtree_destroy(&c[k]);
	hbm_table_destroy(&t);
}
END_TEST

/*
 * A lone insertion replayed where the other copy took it: on a copy that is
 * not node for node the other (built in another order), the place is
 * checked and not taken, and the copy still ends as the table.
 */
START_TEST(follow_checks_the_place)
{
	static struct hbmguard_map_entry want[PAGES], got[PAGES];
	struct hbm_mtree c[2];
	struct two two = { { &c[0], &c[1] } };
	struct hbm_mscratch scratch;
	struct table_walk w = { .out = want };
	struct hbm_table t;
	u32 i, k, lo, hi, page;
	const char *why;

	ck_assert_int_eq(hbm_table_init(&t, PAGES, SPARES), 0);
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(hbm_mtree_init(&c[k], hbm_mtree_max_nodes(SPARES + 1024)), 0);
	for (i = 0; i < 400; i++) {	/* every tenth page, one extent each */
		struct hbm_result res = { 0 };

		ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, i * 10, 1, HBMGUARD_SOURCE_UE,
						 1, NOW, &res), 0);
	}
	/* Copy 0 packed in ascending order, copy 1 the same extents from the top down. */
	ck_assert_int_eq(hbm_mtree_rebuild(&c[0], &t, reserve_one, &c[0]), 0);
	for (i = 400; i-- > 0;) {
		struct hbmguard_map_entry e = { .first = i * 10, .nr = 1, .spare = i,
						 .state = HBMGUARD_STATE_RETIRED };

		ck_assert_int_eq(reserve_one(&c[1]), 0);
		ck_assert_int_eq(hbm_mtree_insert(&c[1], &e), 0);
	}
	for (page = 5; page < 4000; page += 40) {	/* lone pages, between the others */
		struct hbm_result res = { 0 };

		ck_assert_int_eq(hbm_table_apply(&t, HBM_OP_RETIRE, page, 1, HBMGUARD_SOURCE_UE,
						 1, NOW, &res), 0);
		lo = page - 1;
		hi = page + 2;
		ck_assert_int_eq(hbm_mtree_change(&c[0], &t, &lo, &hi, &scratch,
						  reserve_both, &two), 0);
		ck_assert(scratch.at_valid);
		ck_assert_int_eq(hbm_mtree_follow(&c[1], &t, lo, hi, &scratch,
						  reserve_both, &two), 0);
	}
	hbm_table_walk(&t, table_one, &w);
	for (k = 0; k < 2; k++) {
		why = mtree_check(&c[k], got);
		ck_assert_msg(!why, "copy %u: %s", k, why);
		ck_assert_uint_eq(c[k].nr, w.n);
		ck_assert_int_eq(memcmp(got, want, w.n * sizeof(want[0])), 0);
	}
	for (k = 0; k < 2; k++)
		hbm_mtree_destroy(&c[k]);
	hbm_table_destroy(&t);
}
END_TEST

Suite *mtree_suite(void)
{
	Suite *s = suite_create("mtree");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, random_against_model, 0, 3);
	tcase_add_test(tc, ascending_fills_leaves);
	tcase_add_test(tc, no_room_changes_nothing);
	tcase_add_loop_test(tc, sync_follows_table, 0, 3);
	tcase_add_loop_test(tc, append_is_insert_each, 0, 2);
	tcase_add_test(tc, follow_checks_the_place);
	tcase_add_test(tc, follow_checks_the_way);
	suite_add_tcase(s, tc);
	return s;
}
