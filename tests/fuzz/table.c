// SPDX-License-Identifier: GPL-2.0
/*
 * One device's table core (kmod/table.c, policy.c, mtree.c) driven as the
 * module drives it: operators' retirements, marks and clears (RETIRE,
 * PENDING, CLEAR ioctls and commands), errors through the policy (CE, UE,
 * poison, at usable pages and at spares), restores (RESTORE's ranges,
 * sorted or not), policy changes, a GPU driver's health, with allocations
 * failing where the input says; the mapped table's two copies following
 * each change as map.c follows it, and read as libhbmguard reads them.
 *
 * After each step the core is checked against a plain model of a small
 * device: a state, a spare, a source and bounds of its times per page, the
 * spare pool as a next-fit array, a leaky bucket per page and spare; and
 * against the invariants of its own structures (leaves and keys, spare
 * bitmaps and counts, the buckets' heap and hash, each B+tree copy).  What
 * an operation returns and reports (struct hbm_result, the page served)
 * is what the model says; an operation that fails leaves the table as it
 * was; a WARN_ON_ONCE() is a failure.  LIST's cursor and a dump's rounds
 * (netlink.c, the table changing between them) give each extent once, in
 * order, every page bad throughout among them.  The two copies of the
 * mapped table are the same node for node, the table's extents, and
 * translate every page as the table does; neither is left stale while the
 * table fits its capacity and memory is to be had.
 *
 * Input: the device (setup(): flags, pages, spares, page size, map
 * capacity), then steps, each a byte of operation (step(); its high bit:
 * the Nth allocation of the step fails, N the next byte) and its
 * arguments.  Set HBM_FUZZ_VERBOSE to see the steps of one input.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>

#include "hbmguard.h"	/* libhbmguard's */
#include "core.h"
#include "mtree.h"
#include "fuzz.h"

static bool verbose;	/* HBM_FUZZ_VERBOSE set: each step told */

/* The checks' own branches are no coverage of the core, and cost time. */
#define CHECKER	__attribute__((no_sanitize("coverage")))

#define MAX_PAGES	4096
#define MAX_SPARES	2048
#define MAX_EXTENTS	MAX_PAGES
#define SPARE_FREE	0xffffffffU
#define SPARE_BAD	0xfffffffeU
#define NOW0		1700000000u

/* What a page is in the model. */
struct mpage {
	u8 state;
	u8 source;
	u32 spare;		/* RETIRED with a spare of ours: the spare */
	u32 first;		/* its extent's first_seen is at most this */
	u32 last;		/* its extent's last_seen is at least this */
};

struct bucket {
	u32 level;		/* 0: none */
	u32 last;
};

/* The mapped table of map.c, over the same mtree.c. */
struct fmap {
	bool on;
	bool built;
	bool stale;
	bool overflow;
	u32 active;
	u32 capacity;
	u32 nodes;
	struct hbm_mtree copy[2];
	struct hbm_mscratch scratch;
	bool drift;		/* records changed unpublished since the copies were whole */
};

/* A PAGES_GET dump under way, over rounds with changes between them. */
struct dump {
	bool on;
	u32 from;
	u8 state0[MAX_PAGES];	/* each page's state when the dump began */
	bool touched[MAX_PAGES];	/* changed since */
	bool sent[MAX_PAGES];
};

static struct fuzz_state {
	struct hbm_core c;
	u32 pages, spares;
	bool bypass;
	u32 now;
	struct mpage pg[MAX_PAGES];
	u32 user[MAX_SPARES];	/* page served, SPARE_FREE or SPARE_BAD */
	u32 free_spares;
	u32 hint;
	struct bucket b[MAX_PAGES + MAX_SPARES];
	struct hbm_policy policy, defaults;
	u32 driver_health;
	u64 ce_events, ue_events, evicted, forgotten;
	bool arm_loose;		/* an allocation fails in this step: looser times */
	u32 count[__HBMGUARD_STATE_MAX];	/* pages per state */
	u32 dlo, dhi;		/* pages the step changed: checked page by page */
	u32 bucket_page;	/* the step's report: its bucket checked */
	bool resourced;		/* a page's source changed, not its state */
	struct fmap map;
	struct dump dump;
	struct hbm_extent ext[MAX_EXTENTS + 1];
	struct hbmguard_map_entry ment[MAX_EXTENTS + 1];
} F;

/* ---- the model ---- */

static void touched(u32 p)
{
	if (F.dump.on && p < F.pages)
		F.dump.touched[p] = true;
	F.dlo = min(F.dlo, p);
	F.dhi = max(F.dhi, p + 1);
}

static void set_state(struct mpage *m, u8 state)
{
	F.count[m->state]--;
	F.count[state]++;
	m->state = state;
}

/* Next-fit, as a page at a time takes spares (table.c: spares_grab()). */
static u32 model_take_spare(void)
{
	u32 s;

	if (!F.free_spares)
		return HBM_NO_SPARE;
	for (s = F.hint; s < F.spares; s++)
		if (F.user[s] == SPARE_FREE)
			break;
	if (s >= F.spares)
		for (s = 0; s < F.spares; s++)
			if (F.user[s] == SPARE_FREE)
				break;
	if (s >= F.spares)
		return HBM_NO_SPARE;
	F.hint = s + 1;
	return s;
}

/* A page retired: a spare, or FAILED when none is left. */
static void model_bypass(u32 p, struct hbm_result *res)
{
	struct mpage *m = &F.pg[p];
	u8 from = m->state;
	u32 s;

	if (F.bypass) {
		set_state(m, HBMGUARD_STATE_RETIRED);
		m->spare = HBM_NO_SPARE;
		res->retired++;
		return;
	}
	s = model_take_spare();
	if (s == HBM_NO_SPARE) {
		set_state(m, HBMGUARD_STATE_FAILED);
		m->spare = HBM_NO_SPARE;
		res->failed += from != HBMGUARD_STATE_FAILED;
		return;
	}
	F.user[s] = p;
	F.free_spares--;
	set_state(m, HBMGUARD_STATE_RETIRED);
	m->spare = s;
	res->retired++;
}

static void model_new(struct mpage *m, u8 source, u32 first, u32 last)
{
	m->source = source;
	m->first = first;
	m->last = last;
}

/* hbm_table_apply() of one page, in ascending order within its range. */
static void model_page(u32 p, enum hbm_op op, u8 source, u32 first, u32 last,
		       struct hbm_result *res)
{
	struct mpage *m = &F.pg[p];

	touched(p);
	if (op == HBM_OP_CLEAR) {
		if (m->state == HBMGUARD_STATE_CLEAN)
			return;
		res->cleared++;
		if (m->spare != HBM_NO_SPARE) {
			F.user[m->spare] = SPARE_FREE;
			F.free_spares++;
		}
		set_state(m, HBMGUARD_STATE_CLEAN);
		*m = (struct mpage){ .spare = HBM_NO_SPARE };
		return;
	}
	if (m->state == HBMGUARD_STATE_CLEAN) {
		model_new(m, source, first, last);
		if (op == HBM_OP_PENDING) {
			set_state(m, HBMGUARD_STATE_PENDING);
			m->spare = HBM_NO_SPARE;
			res->pending++;
			return;
		}
		model_bypass(p, res);
		return;
	}
	m->last = max(m->last, last);
	if (op != HBM_OP_RETIRE || m->state == HBMGUARD_STATE_RETIRED)
		return;
	if (hbm_source_destroys(source) && m->source != source) {
		m->source = source;
		F.resourced = true;
	}
	model_bypass(p, res);
}

static void model_range(enum hbm_op op, u32 first, u32 nr, u8 source, u32 fs, u32 ls,
			struct hbm_result *res)
{
	u32 p;

	for (p = first; p < first + nr; p++)
		model_page(p, op, source, fs, ls, res);
}

/* hbm_table_spare_fail(): the page it served, or HBM_NO_SPARE. */
static u32 model_spare_fail(u32 s, struct hbm_result *res)
{
	u32 p = F.user[s];

	if (p == SPARE_BAD)
		return HBM_NO_SPARE;
	res->spares_failed++;
	if (p == SPARE_FREE) {
		F.user[s] = SPARE_BAD;
		F.free_spares--;
		return HBM_NO_SPARE;
	}
	touched(p);
	F.pg[p].last = max(F.pg[p].last, F.now);
	/* Another spare while this one is still taken (a move is news), or FAILED. */
	model_bypass(p, res);
	F.user[s] = SPARE_BAD;
	return p;
}

/* policy.c's leaky bucket, plainly: one per page, no eviction. */
static u32 drained(u32 elapsed)
{
	if (elapsed >= F.policy.ce_window)
		return 0xffffffff;
	return (u32)((u64)elapsed * F.policy.ce_threshold / F.policy.ce_window);
}

static u32 level_at(const struct bucket *b, u32 now)
{
	u32 d = drained(now > b->last ? now - b->last : 0);

	return d >= b->level ? 0 : b->level - d;
}

static void bucket_drain(struct bucket *b, u32 now)
{
	u32 d = drained(now > b->last ? now - b->last : 0);

	if (d >= b->level) {
		b->level = 0;
		b->last = now;
	} else if (d) {
		b->level -= d;
		b->last += (u32)((u64)d * F.policy.ce_window / F.policy.ce_threshold);
	}
}

/* Whether @count errors at @page retire it; *held: what the bucket then holds. */
static bool bucket_add(u32 page, u32 count, u32 *held)
{
	struct bucket *b = &F.b[page];
	u64 level;

	if (!b->level)
		*b = (struct bucket){ .last = F.now };
	bucket_drain(b, F.now);
	level = (u64)b->level + count;
	if (level >= F.policy.ce_threshold) {
		*held = (u32)min_t(u64, level, 0xffff);
		return true;
	}
	b->level = (u32)level;
	return false;
}

static u32 health_rank(u32 h)
{
	static const u8 rank[] = { 0, 1, 3, 2 };

	return h < 4 ? rank[h] : 0;
}

static u32 model_health(void)
{
	u64 bad = F.pages - F.count[HBMGUARD_STATE_CLEAN], limit = F.policy.retire_limit;
	u32 s, h = HBMGUARD_HEALTH_OK;

	for (s = 0; s < F.spares; s++)
		bad += F.user[s] == SPARE_BAD;
	if (bad >= limit)
		h = HBMGUARD_HEALTH_RMA;
	else if (bad * 10 >= limit * 9)
		h = HBMGUARD_HEALTH_DEGRADED;
	return health_rank(F.driver_health) > health_rank(h) ? F.driver_health : h;
}

/* ---- the core's own structures ---- */

CHECKER static void collect(const struct hbm_extent *e, void *arg)
{
	u32 *n = arg;

	CHECK(*n < MAX_EXTENTS, "more extents than pages");
	F.ext[(*n)++] = *e;
}

/* The table's extents into F.ext, checked as tests/unit/check_table.c does and more. */
CHECKER static u32 table_check(void)
{
	const struct hbm_table *t = &F.c.table;
	u32 pages[__HBMGUARD_STATE_MAX] = { 0 }, n = 0, spares = 0, l, i, s;
	const struct hbm_extent *prev = NULL;
	u64 bytes;

	CHECK(t->nr_leaves <= t->cap_leaves, "%u leaves of %u", t->nr_leaves, t->cap_leaves);
	for (l = 0; l < t->nr_leaves; l++) {
		const struct hbm_leaf *leaf = t->leaves[l];

		CHECK(leaf->nr && leaf->nr <= HBM_LEAF_CAP, "leaf %u of %u extents", l, leaf->nr);
		CHECK(t->keys[l].first == leaf->ext[0].first && t->keys[l].nr == leaf->nr,
		      "leaf %u's key out of date", l);
		for (i = 0; i < leaf->nr; i++) {
			const struct hbm_extent *e = &leaf->ext[i];

			CHECK(e->nr && e->first < t->nr_pages && e->nr <= t->nr_pages - e->first,
			      "extent %u+%u outside %u pages", e->first, e->nr, t->nr_pages);
			CHECK(e->state > HBMGUARD_STATE_CLEAN && e->state < __HBMGUARD_STATE_MAX,
			      "extent %u of state %u", e->first, e->state);
			CHECK(e->source > HBMGUARD_SOURCE_NONE && e->source < __HBMGUARD_SOURCE_MAX,
			      "extent %u of source %u", e->first, e->source);
			CHECK((e->state == HBMGUARD_STATE_RETIRED && !t->driver_bypass) ==
			      (e->spare != HBM_NO_SPARE), "extent %u: state %u, spare %u",
			      e->first, e->state, e->spare);
			if (e->spare != HBM_NO_SPARE) {
				CHECK(e->spare < t->spare_total && e->nr <= t->spare_total - e->spare,
				      "extent %u: spares %u+%u of %u", e->first, e->spare, e->nr,
				      t->spare_total);
				for (s = e->spare; s < e->spare + e->nr; s++)
					CHECK(test_bit(s, t->spare_map) && !test_bit(s, t->spare_bad_map),
					      "extent %u: spare %u free or failed", e->first, s);
				spares += e->nr;
			}
			CHECK(e->first_seen <= e->last_seen, "extent %u seen %u..%u", e->first,
			      e->first_seen, e->last_seen);
			if (prev) {
				CHECK(prev->first + prev->nr <= e->first, "extents %u+%u, %u overlap",
				      prev->first, prev->nr, e->first);
				CHECK(!(prev->first + prev->nr == e->first && prev->state == e->state &&
					prev->source == e->source &&
					(e->spare == HBM_NO_SPARE ? prev->spare == HBM_NO_SPARE :
					 prev->spare + prev->nr == e->spare)),
				      "mergeable extents %u+%u and %u left apart", prev->first,
				      prev->nr, e->first);
			}
			pages[e->state] += e->nr;
			F.ext[n++] = *e;
			prev = e;
		}
	}
	CHECK(n == t->nr_extents, "%u extents, nr_extents %u", n, t->nr_extents);
	for (i = 1; i < __HBMGUARD_STATE_MAX; i++)
		CHECK(pages[i] == t->pages[i], "state %u: %u pages, counted %u", i, pages[i],
		      t->pages[i]);
	CHECK(spares == t->spare_used, "%u spares serve, spare_used %u", spares, t->spare_used);
	for (i = 0, spares = 0, s = 0; i < t->spare_total; i++) {
		CHECK(!test_bit(i, t->spare_bad_map) || test_bit(i, t->spare_map),
		      "failed spare %u free in the map", i);
		spares += test_bit(i, t->spare_map);
		s += test_bit(i, t->spare_bad_map);
	}
	CHECK(s == t->spare_bad, "%u failed spares, spare_bad %u", s, t->spare_bad);
	CHECK(spares == t->spare_used + t->spare_bad, "map %u, used %u + bad %u", spares,
	      t->spare_used, t->spare_bad);
	CHECK(t->spare_hint <= t->spare_total, "hint %u of %u", t->spare_hint, t->spare_total);
	bytes = 2 * BITS_TO_LONGS(t->spare_total) * sizeof(unsigned long) +
		(u64)t->nr_leaves * 4096 +
		(u64)t->cap_leaves * (sizeof(*t->leaves) + sizeof(*t->keys));
	CHECK(t->bytes == bytes, "bytes %llu, %llu held", (unsigned long long)t->bytes,
	      (unsigned long long)bytes);
	n = 0;
	hbm_table_walk(t, collect, &n);
	CHECK(n == t->nr_extents, "walk: %u extents", n);
	return n;
}

CHECKER static u64 ce_key(const struct hbm_core *c, u32 i)
{
	return (u64)c->ce[i].last * c->policy.ce_threshold +
	       (u64)c->ce[i].level * c->policy.ce_window;
}

/* policy.c's buckets: a heap emptiest first, a hash that finds each. */
CHECKER static void buckets_check(void)
{
	const struct hbm_core *c = &F.c;
	u32 i, used = 0, mask = (1U << c->ce_hash_bits) - 1;

	CHECK(c->ce_nr <= c->ce_cap && c->ce_cap <= HBM_CE_TRACKED_MAX, "%u buckets of %u",
	      c->ce_nr, c->ce_cap);
	CHECK((1U << c->ce_hash_bits) >= 2 * c->ce_cap, "hash of %u bits for %u",
	      c->ce_hash_bits, c->ce_cap);
	CHECK(c->ce_bytes == (u64)c->ce_cap * (sizeof(struct hbm_ce_entry) + sizeof(u32)) +
	      ((u64)sizeof(u32) << c->ce_hash_bits), "ce_bytes");
	for (i = 0; i < c->ce_nr; i++) {
		u32 h = c->ce[i].heap, s, home;

		CHECK(h < c->ce_nr && c->ce_heap[h] == i, "bucket %u's heap place %u", i, h);
		CHECK(c->ce[i].page < F.pages + F.spares, "bucket %u of page %u", i, c->ce[i].page);
		if (h)
			CHECK(ce_key(c, c->ce_heap[(h - 1) / 2]) <= ce_key(c, i),
			      "heap order at %u", h);
		/* found from its home, with no free slot on the way */
		home = (u32)(c->ce[i].page * 0x61C88647U) >> (32 - c->ce_hash_bits);
		for (s = home; c->ce_hash[s] != i + 1; s = (s + 1) & mask)
			CHECK(c->ce_hash[s], "bucket %u (page %u) not found from %u", i,
			      c->ce[i].page, home);
	}
	for (i = 0; i <= mask; i++) {
		if (!c->ce_hash[i])
			continue;
		used++;
		CHECK(c->ce_hash[i] <= c->ce_nr, "hash slot %u names %u", i, c->ce_hash[i]);
	}
	CHECK(used == c->ce_nr, "%u hash slots for %u buckets", used, c->ce_nr);
}

/*
 * Buckets dropped to make room: empty ones (the model has them as stored,
 * drained since), and when an allocation failed the emptiest, counted.
 */
CHECKER static void buckets_follow(void)
{
	u64 evicted = F.c.ce_evicted - F.evicted, forgotten = 0;
	static bool held[MAX_PAGES + MAX_SPARES];
	u32 p, i, gone = 0;

	memset(held, 0, sizeof(held));
	for (i = 0; i < F.c.ce_nr; i++)
		held[F.c.ce[i].page] = true;
	for (p = 0; p < F.pages + F.spares; p++) {
		if (!F.b[p].level || held[p])
			continue;
		forgotten += level_at(&F.b[p], F.now);
		gone += level_at(&F.b[p], F.now) != 0;
		F.b[p].level = 0;
	}
	CHECK(gone == evicted, "%u buckets gone, %llu evicted", gone,
	      (unsigned long long)evicted);
	CHECK(!evicted || F.arm_loose, "a bucket evicted, no allocation failed");
	CHECK(F.c.ce_forgotten - F.forgotten == forgotten, "forgotten %llu, %llu held",
	      (unsigned long long)(F.c.ce_forgotten - F.forgotten),
	      (unsigned long long)forgotten);
	F.evicted = F.c.ce_evicted;
	F.forgotten = F.c.ce_forgotten;
}

/* ---- the mapped table (kmod/map.c over mtree.c) ---- */

static int reserve(void *arg)
{
	struct fmap *map = arg;
	struct hbm_mtree *c = map->copy;
	int err = hbm_mtree_reserve(&c[0], 1) ?: hbm_mtree_reserve(&c[1], 1) ?:
		  hbm_mtree_grow(&c[0], c[1].nr_chunks) ?:
		  hbm_mtree_grow(&c[1], c[0].nr_chunks);

	map->nodes = min(c[0].nr_chunks, c[1].nr_chunks) * HBM_MNODES_PER_CHUNK;
	return err;
}

/*
 * A map left stale is one past its capacity, or one an allocation failed
 * for (map.c): never one whose table fits, with memory to be had.
 */
static void map_stale_check(const struct fmap *map)
{
	CHECK(!map->stale || F.arm_loose || F.c.table.nr_extents > map->capacity,
	      "map stale: %u extents of capacity %u, nodes %u of %u", F.c.table.nr_extents,
	      map->capacity, map->copy[0].used, map->copy[0].max_chunks * HBM_MNODES_PER_CHUNK);
}

static void publish_whole(struct fmap *map)
{
	const struct hbm_table *t = &F.c.table;
	u32 next = !map->active;

	if (verbose)
		fprintf(stderr, "table: map rebuilt\n");
	if (t->nr_extents <= map->capacity && !hbm_mtree_rebuild(&map->copy[next], t, reserve, map)) {
		map->active = next;
		map->overflow = false;
		map->stale = !!hbm_mtree_rebuild(&map->copy[!next], t, reserve, map);
		map->drift = false;
		return;
	}
	map->stale = true;
	map->overflow = true;
	map_stale_check(map);
}

/* hbm_map_changed(). */
static void map_changed(u32 first, u32 nr)
{
	const struct hbm_table *t = &F.c.table;
	struct fmap *map = &F.map;
	u32 next, lo, hi;
	int err;

	if (!map->on)
		return;
	if (!map->built) {
		map->stale = true;
		return;
	}
	if (map->stale || t->nr_extents > map->capacity) {
		publish_whole(map);
		return;
	}
	next = !map->active;
	if (first >= t->nr_pages || !nr) {
		map->overflow = false;
		return;
	}
	lo = first ? first - 1 : 0;
	hi = min_t(u64, (u64)first + nr + 1, t->nr_pages);
	err = hbm_mtree_change(&map->copy[next], t, &lo, &hi, &map->scratch, reserve, map);
	if (err && verbose)
		fprintf(stderr, "table: map change [%u, %u): %d\n", lo, hi, err);
	if (err) {
		map->stale = true;
		map->active = !next;
		map->overflow = true;
		map_stale_check(map);
		return;
	}
	map->active = next;
	map->overflow = false;
	err = hbm_mtree_follow(&map->copy[!next], t, lo, hi, &map->scratch, reserve, map);
	if (err)
		map->stale = true;
	if (verbose)
		fprintf(stderr, "table: map change [%u, %u): log %u at %d, follow %d\n", lo, hi,
			map->scratch.nr_log, map->scratch.at_valid, err);
	map_stale_check(map);
}

struct walk {
	const struct hbm_mtree *t;
	struct hbmguard_map_entry *out;
	u32 n, nodes, max;
	u8 *seen;
};

/* tests/unit/check_mtree.c's walk: the subtree at @i; its smallest key. */
CHECKER static u32 walk_node(struct walk *w, u32 i, u32 level, bool last)
{
	const struct hbmguard_map_node *n;
	u32 j, min;

	CHECK(i < w->t->used, "node %u past %u handed out", i, w->t->used);
	CHECK(!w->seen[i]++, "node %u reachable twice", i);
	w->nodes++;
	n = hbm_mtree_node(w->t, i);
	CHECK(n->level == level && !n->reserved, "node %u: level %u, %u expected", i, n->level,
	      level);
	CHECK(n->nr && n->nr <= (level ? HBMGUARD_MAP_INNER_MAX : HBMGUARD_MAP_LEAF_MAX),
	      "node %u of %u slots", i, n->nr);
	CHECK(i == w->t->root || (level == 0 && last) ||
	      n->nr >= (level ? HBMGUARD_MAP_INNER_MAX : HBMGUARD_MAP_LEAF_MAX) / 2,
	      "node %u below half full: %u", i, n->nr);
	if (!level) {
		for (j = 0; j < n->nr; j++) {
			CHECK(!w->n || w->out[w->n - 1].first < n->ext[j].first,
			      "extents out of order at node %u", i);
			CHECK(w->n < w->max, "more extents than the copy says");
			w->out[w->n++] = n->ext[j];
		}
		return n->ext[0].first;
	}
	min = n->in.first[0];
	for (j = 0; j < n->nr; j++)
		CHECK(walk_node(w, n->in.child[j], level - 1, last && j == n->nr - 1u) ==
		      n->in.first[j], "node %u: key %u not its subtree's smallest", i, j);
	return min;
}

CHECKER static u32 mtree_check(const struct hbm_mtree *t, struct hbmguard_map_entry *out)
{
	struct walk w = { .t = t, .out = out, .max = MAX_EXTENTS };
	u32 f, k;

	w.seen = calloc(t->used + 1, 1);
	if (!w.seen)
		abort();
	CHECK(t->height <= HBMGUARD_MAP_HEIGHT_MAX, "height %u", t->height);
	if (t->height)
		walk_node(&w, t->root, t->height - 1, true);
	for (f = t->free, k = 0; k < t->nr_free; k++, f = hbm_mtree_node(t, f)->in.first[0])
		CHECK(f < t->used && !w.seen[f]++, "free list broken at %u", f);
	free(w.seen);
	CHECK(w.n == t->nr, "%u extents, nr %u", w.n, t->nr);
	CHECK(w.nodes + t->nr_free == t->used, "nodes lost: %u + %u free of %u", w.nodes,
	      t->nr_free, t->used);
	CHECK(t->used <= t->nr_chunks * HBM_MNODES_PER_CHUNK, "node not backed");
	CHECK(w.nodes <= hbm_mtree_max_nodes(t->nr), "%u nodes for %u extents", w.nodes, t->nr);
	return w.n;
}

/* The active copy as a reader maps it, read by libhbmguard. */
CHECKER static void map_read_check(u32 lo, u32 hi)
{
	struct fmap *map = &F.map;
	size_t region = 0, i, size;
	static int map_fd = -1;
	struct hbmguard_map_header *h;
	struct hbmguard_table *tab;
	char *buf;
	u32 c, p;

	for (c = 0; c < 2; c++)
		region = max_t(size_t, region, (size_t)map->copy[c].nr_chunks * HBM_MCHUNK_BYTES);
	size = 4096 + 2 * region;
	buf = calloc(1, size);
	if (!buf)
		abort();
	h = (void *)buf;
	h->magic = HBMGUARD_MAP_MAGIC;
	h->version = HBMGUARD_MAP_VERSION;
	h->active = map->active;
	h->overflow = map->overflow;
	h->page_shift = 12;
	h->usable_size = (u64)F.pages << 12;
	h->nodes = map->nodes;
	h->capacity = map->capacity;
	h->map_size = size;
	for (c = 0; c < 2; c++) {
		h->root[c] = map->copy[c].root;
		h->height[c] = map->copy[c].height;
		h->nr[c] = map->copy[c].nr;
		h->buffer_offset[c] = 4096 + c * region;
		for (i = 0; i < map->copy[c].nr_chunks; i++)
			memcpy(buf + 4096 + c * region + i * HBM_MCHUNK_BYTES,
			       map->copy[c].chunk[i], HBM_MCHUNK_BYTES);
	}
	/* mapped as hbmguard_table_open() maps it, from a file of its own */
	if (map_fd < 0)
		map_fd = memfd_create("hbm-fuzz-table", MFD_CLOEXEC);
	CHECK(map_fd >= 0 && !ftruncate(map_fd, size) && pwrite(map_fd, buf, size, 0) == (ssize_t)size,
	      "the mapping's file");
	CHECK(!hbmguard_table_open(map_fd, 0, &tab), "hbmguard_table_open()");
	for (p = lo; p < hi; p++) {
		const struct mpage *m = &F.pg[p];
		u64 off = ((u64)p << 12) + (p * 37 & 4095), served, want = off;
		u32 state;
		int err = hbmguard_translate(tab, off, &served, &state);

		CHECK(!err, "translate of page %u: %d", p, err);
		if (m->state == HBMGUARD_STATE_RETIRED && m->spare != HBM_NO_SPARE)
			want = ((u64)F.pages << 12) + ((u64)m->spare << 12) + (off & 4095);
		CHECK(state == m->state && served == want,
		      "mapped page %u: state %u served %#llx, %u %#llx expected", p, state,
		      (unsigned long long)served, m->state, (unsigned long long)want);
		/* and a range from there clean where no page of it is bad */
		{
			u32 n = min(1 + p % 5, F.pages - p), q;
			bool clean = true;

			for (q = p; q < p + n; q++)
				clean &= F.pg[q].state == HBMGUARD_STATE_CLEAN;
			err = hbmguard_range_is_clean(tab, off, ((u64)n << 12) - (off & 4095));
			CHECK(err == clean, "range of %u pages at %u: clean %d, %d expected", n, p,
			      err, clean);
		}
	}
	{
		u64 served;
		u32 state;

		CHECK(hbmguard_translate(tab, (u64)F.pages << 12, &served, &state) == -ERANGE,
		      "translate past usable");
	}
	hbmguard_table_close(tab);
	free(buf);
}

/*
 * The same node: what a reader reads of it (a node handed out again keeps
 * what its slots past nr held, which may differ between the copies after
 * a change that failed half way, the copies rebuilt since).
 */
CHECKER static bool node_same(const struct hbmguard_map_node *a, const struct hbmguard_map_node *b)
{
	if (a->nr != b->nr || a->level != b->level || a->reserved != b->reserved)
		return false;
	if (!a->level)
		return !memcmp(a->ext, b->ext, a->nr * sizeof(a->ext[0]));
	return !memcmp(a->in.first, b->in.first, a->nr * sizeof(a->in.first[0])) &&
	       !memcmp(a->in.child, b->in.child, a->nr * sizeof(a->in.child[0]));
}

/* Both copies whole, the same node for node, the active one read as the table. */
CHECKER static void map_check(u32 n_ext, u32 lo, u32 hi)
{
	struct fmap *map = &F.map;
	u32 c, n, i;

	if (!map->on || !map->built)
		return;
	for (c = 0; c < 2; c++) {
		n = mtree_check(&map->copy[c], F.ment);
		if (map->stale || map->drift)
			continue;
		CHECK(n == n_ext, "copy %u: %u extents, the table %u", c, n, n_ext);
		for (i = 0; i < n; i++)
			CHECK(F.ment[i].first == F.ext[i].first && F.ment[i].nr == F.ext[i].nr &&
			      F.ment[i].spare == F.ext[i].spare && F.ment[i].state == F.ext[i].state,
			      "copy %u extent %u: %u+%u, the table's %u+%u", c, i, F.ment[i].first,
			      F.ment[i].nr, F.ext[i].first, F.ext[i].nr);
	}
	if (map->stale)
		return;
	CHECK(map->copy[0].used == map->copy[1].used && map->copy[0].root == map->copy[1].root &&
	      map->copy[0].height == map->copy[1].height && map->copy[0].nr == map->copy[1].nr,
	      "copies differ: used %u/%u root %u/%u", map->copy[0].used, map->copy[1].used,
	      map->copy[0].root, map->copy[1].root);
	for (i = 0; i < map->copy[0].used; i++)
		CHECK(node_same(hbm_mtree_node(&map->copy[0], i), hbm_mtree_node(&map->copy[1], i)),
		      "copies differ at node %u", i);
	if (!map->overflow)
		map_read_check(lo, hi);
}

/* ---- the whole check ---- */

CHECKER static void bucket_ok(u32 p)
{
	u32 want = level_at(&F.b[p], F.now);

	CHECK(hbm_ce_level(&F.c, p, F.now) == want, "page %u: bucket %u, model %u", p,
	      hbm_ce_level(&F.c, p, F.now), want);
	/* Pages in the table, and failed spares, left the CE path. */
	if (p < F.pages ? F.pg[p].state != HBMGUARD_STATE_CLEAN :
			  F.user[p - F.pages] == SPARE_BAD)
		CHECK(!want, "page %u out of the CE path with a bucket of %u", p, want);
}

/*
 * The core against the model: its structures whole at every step, page by
 * page where the step changed something (and around it), every page
 * every 64 steps and at the end.
 */
CHECKER static void full_check(bool whole)
{
	const struct hbm_table *t = &F.c.table;
	u32 n = table_check(), i, p, s, e = 0, lo = 0, hi = F.pages;

	CHECK(!hbm_test_warnings, "a WARN_ON_ONCE() fired");
	if (!whole) {
		lo = F.dlo > 64 ? F.dlo - 64 : 0;
		hi = min(F.pages, F.dhi + 64);
	}
	for (p = lo; p < hi; p++) {
		const struct mpage *m = &F.pg[p];
		struct hbm_extent x;
		bool in = hbm_table_lookup(t, p, &x);

		while (e < n && F.ext[e].first + F.ext[e].nr <= p)
			e++;
		CHECK(in == (e < n && F.ext[e].first <= p), "lookup of %u disagrees with the walk",
		      p);
		CHECK(in == (m->state != HBMGUARD_STATE_CLEAN), "page %u: in %d, model state %u",
		      p, in, m->state);
		if (!in)
			continue;
		CHECK(!memcmp(&x, &F.ext[e], sizeof(x)), "lookup of %u: another extent", p);
		CHECK(x.state == m->state, "page %u: state %u, model %u", p, x.state, m->state);
		CHECK(x.source == m->source, "page %u: source %u, model %u", p, x.source,
		      m->source);
		if (m->state == HBMGUARD_STATE_RETIRED && !F.bypass)
			CHECK(x.spare + (p - x.first) == m->spare, "page %u: spare %u, model %u", p,
			      x.spare + (p - x.first), m->spare);
		CHECK(x.first_seen <= m->first, "page %u: first seen %u, entered %u", p,
		      x.first_seen, m->first);
		CHECK(x.last_seen >= m->last, "page %u: last seen %u, seen %u", p, x.last_seen,
		      m->last);
	}
	for (i = 1; i < __HBMGUARD_STATE_MAX; i++)
		CHECK(t->pages[i] == F.count[i], "state %u: %u pages, model %u", i, t->pages[i],
		      F.count[i]);
	for (s = 0; s < F.spares; s++) {
		CHECK(test_bit(s, t->spare_map) == (F.user[s] != SPARE_FREE), "spare %u taken %d",
		      s, test_bit(s, t->spare_map));
		CHECK(test_bit(s, t->spare_bad_map) == (F.user[s] == SPARE_BAD),
		      "spare %u failed %d", s, test_bit(s, t->spare_bad_map));
	}
	CHECK(t->spare_hint == F.hint, "hint %u, model %u", t->spare_hint, F.hint);
	/* The policy. */
	buckets_check();
	buckets_follow();
	for (p = lo; p < (whole ? F.pages + F.spares : hi); p++)
		bucket_ok(p);
	if (F.bucket_page < F.pages + F.spares)
		bucket_ok(F.bucket_page);
	CHECK(!memcmp(&F.c.policy, &F.policy, sizeof(F.policy)), "policy");
	CHECK(F.c.ce_events == F.ce_events && F.c.ue_events == F.ue_events,
	      "events %llu/%llu, model %llu/%llu", (unsigned long long)F.c.ce_events,
	      (unsigned long long)F.c.ue_events, (unsigned long long)F.ce_events,
	      (unsigned long long)F.ue_events);
	CHECK(F.c.health == model_health(), "health %u, model %u", F.c.health, model_health());
	CHECK(hbm_core_health(&F.c) == F.c.health, "health not recomputed");
	map_check(n, lo, hi);
}

/* ---- the operations ---- */

struct snap {
	u32 n, used, bad, hint, pages[__HBMGUARD_STATE_MAX];
	unsigned long map[BITS_TO_LONGS(MAX_SPARES) + 1], bad_map[BITS_TO_LONGS(MAX_SPARES) + 1];
	struct hbm_extent ext[MAX_EXTENTS + 1];
};

static struct snap snap_before, snap_after;

CHECKER static void snap_take(struct snap *s)
{
	const struct hbm_table *t = &F.c.table;
	size_t words = max_t(size_t, 1, BITS_TO_LONGS(t->spare_total));

	memset(s, 0, offsetof(struct snap, ext));
	hbm_table_walk(t, collect, &s->n);
	memcpy(s->ext, F.ext, s->n * sizeof(*s->ext));
	s->used = t->spare_used;
	s->bad = t->spare_bad;
	s->hint = t->spare_hint;
	memcpy(s->pages, t->pages, sizeof(s->pages));
	memcpy(s->map, t->spare_map, words * sizeof(unsigned long));
	memcpy(s->bad_map, t->spare_bad_map, words * sizeof(unsigned long));
}

/* An operation that failed changed nothing of the table. */
CHECKER static void unchanged(const char *what)
{
	struct snap *a = &snap_after, *b = &snap_before;

	snap_take(a);
	CHECK(a->n == b->n && !memcmp(a->ext, b->ext, a->n * sizeof(a->ext[0])) &&
	      a->used == b->used && a->bad == b->bad && a->hint == b->hint &&
	      !memcmp(a->pages, b->pages, sizeof(a->pages)) &&
	      !memcmp(a->map, b->map, sizeof(a->map)) &&
	      !memcmp(a->bad_map, b->bad_map, sizeof(a->bad_map)),
	      "%s failed and changed the table", what);
}

/* Map entries of the table now: whether a change that was not published moved them. */
CHECKER static u32 entries_take(struct hbmguard_map_entry *out)
{
	u32 n = 0, i;

	hbm_table_walk(&F.c.table, collect, &n);
	for (i = 0; i < n; i++)
		out[i] = (struct hbmguard_map_entry){ F.ext[i].first, F.ext[i].nr, F.ext[i].spare,
						      F.ext[i].state };
	return n;
}

static struct hbmguard_map_entry ent_before[MAX_EXTENTS + 1], ent_after[MAX_EXTENTS + 1];

/* Before an operation that may fail: the table to compare with. */
static void before(void)
{
	F.resourced = false;
	if (hbm_test_alloc_fail_in >= 0)
		snap_take(&snap_before);
}

static bool result_changed(const struct hbm_result *r)
{
	return r->retired || r->pending || r->failed || r->cleared || r->spares_failed;
}

/* What device.c publishes of a change; a change it does not publish is drift. */
static void published(const struct hbm_result *r, u32 first, u32 nr, bool rewritten)
{
	struct fmap *map = &F.map;
	u32 n, m;

	if (result_changed(r)) {
		map_changed(first, nr);
		return;
	}
	if (!rewritten || !map->on || !map->built || map->stale || map->drift)
		return;
	n = entries_take(ent_after);
	m = hbm_mtree_list(&map->copy[map->active], 0, F.pages, ent_before, MAX_EXTENTS + 1);
	if (n != m || memcmp(ent_after, ent_before, n * sizeof(ent_after[0]))) {
		map->drift = true;
		if (verbose)
			fprintf(stderr, "table: the extents changed, nothing published\n");
	}
}

static void expect_result(const struct hbm_result *got, const struct hbm_result *want,
			  const char *what)
{
	CHECK(!memcmp(got, want, sizeof(*got)),
	      "%s: retired %u pending %u failed %u cleared %u spares %u; model %u %u %u %u %u",
	      what, got->retired, got->pending, got->failed, got->cleared, got->spares_failed,
	      want->retired, want->pending, want->failed, want->cleared, want->spares_failed);
}

static void forget(u32 first, u32 nr)
{
	u32 p;

	for (p = first; p < first + nr; p++)
		F.b[p].level = 0;
}

/* An operator's RETIRE, PENDING or CLEAR (hbm_device_apply()). */
static int do_apply(enum hbm_op op, u32 first, u32 nr, u8 source)
{
	struct hbm_result res = { 0 }, want = { 0 };
	int err;

	before();
	err = hbm_core_apply(&F.c, op, first, nr, source, F.now, &res);
	if (!nr || first >= F.pages || nr > F.pages - first) {
		CHECK(err == (nr ? -ERANGE : -EINVAL), "apply of %u+%u: %d", first, nr, err);
		return err;
	}
	if (err) {
		CHECK(err == -ENOMEM && hbm_test_alloc_fail_in == -1, "apply of %u+%u: %d", first,
		      nr, err);
		expect_result(&res, &want, "a failed apply");
		unchanged("apply");
		return err;
	}
	model_range(op, first, nr, source, F.now, F.now, &want);
	expect_result(&res, &want, "apply");
	if (op != HBM_OP_CLEAR)
		forget(first, nr);
	published(&res, first, nr, F.resourced);
	return 0;
}

/* An error at a page or a spare (hbm_device_report()). */
static void do_report(u32 page, u32 kind, u32 count)
{
	struct hbm_result res = { 0 }, want = { 0 };
	u32 served, held = count, want_served = HBM_NO_SPARE;
	bool in, retire = false;
	u8 source = 0;
	int err;

	before();
	F.bucket_page = page;
	err = hbm_core_report(&F.c, page, kind, count, F.now, &res, &served);
	if (verbose)
		fprintf(stderr, "table: report at %u, kind %u count %u: %d, %u buckets, %llu evicted\n",
			page, kind, count, err, F.c.ce_nr, (unsigned long long)F.c.ce_evicted);
	/* a bucket dropped to make room for this page's: the model drops it too */
	if (F.c.ce_evicted != F.evicted)
		buckets_follow();
	if (page >= F.pages + F.spares) {
		CHECK(err == -ERANGE, "report at %u: %d", page, err);
		return;
	}
	if (!count || count > 0xffff || !kind || kind >= __HBMGUARD_ERROR_MAX ||
	    (kind != HBMGUARD_ERROR_CE && count != 1)) {
		CHECK(err == -EINVAL, "report of kind %u count %u: %d", kind, count, err);
		return;
	}
	if (page >= F.pages) {
		u32 s = page - F.pages;
		bool fail = false;

		if (F.user[s] != SPARE_BAD)
			fail = kind != HBMGUARD_ERROR_CE || bucket_add(page, count, &held);
		if (err) {
			CHECK(err == -ENOMEM && fail, "report at spare %u: %d", s, err);
			unchanged("report at a spare");
			return;
		}
		if (fail) {
			want_served = model_spare_fail(s, &want);
			F.b[page].level = 0;
			if (want_served != HBM_NO_SPARE)
				F.b[want_served].level = 0;
		}
		if (kind == HBMGUARD_ERROR_CE)
			F.ce_events += count;
		else
			F.ue_events++;
		CHECK(served == want_served, "report at spare %u served %u, model %u", s, served,
		      want_served);
		expect_result(&res, &want, "report at a spare");
		published(&res, served == HBM_NO_SPARE ? page : served, 1, fail);
		return;
	}
	in = F.pg[page].state != HBMGUARD_STATE_CLEAN;
	if (kind == HBMGUARD_ERROR_CE && in) {
		CHECK(!err, "CE at bad page %u: %d", page, err);
		touched(page);
		F.pg[page].last = max(F.pg[page].last, F.now);
		F.ce_events += count;
		F.b[page].level = 0;
	} else {
		if (kind == HBMGUARD_ERROR_CE) {
			retire = bucket_add(page, count, &held);
			source = HBMGUARD_SOURCE_CE_THRESHOLD;
		} else {
			retire = true;
			source = kind == HBMGUARD_ERROR_UE ? HBMGUARD_SOURCE_UE :
				 HBMGUARD_SOURCE_POISON;
		}
		if (err) {
			CHECK(err == -ENOMEM && retire, "report at %u: %d", page, err);
			unchanged("report");
			return;
		}
		if (retire) {
			model_page(page, HBM_OP_RETIRE, source, F.now, F.now, &want);
			F.b[page].level = 0;
		}
		if (kind == HBMGUARD_ERROR_CE)
			F.ce_events += count;
		else
			F.ue_events++;
	}
	CHECK(served == page, "report at %u served %u", page, served);
	expect_result(&res, &want, "report");
	published(&res, page, 1, F.resourced);
}

/* A RESTORE's ranges (hbm_device_restore()). */
static void do_restore(struct hbm_page_range *r, u32 n)
{
	struct hbm_result res = { 0 }, want = { 0 };
	u32 done = 0, i, lo = 0xffffffff, hi = 0;
	bool loose = F.arm_loose;
	int err;

	before();
	err = hbm_core_restore(&F.c, r, n, F.now, &res, &done);
	CHECK(done <= n, "%u of %u done", done, n);
	CHECK(err ? err == -ENOMEM && loose && done < n : done == n,
	      "restore: %d, %u of %u done", err, done, n);
	for (i = 0; i < done; i++) {
		u32 fs = r[i].first_seen, ls = r[i].last_seen, p;
		bool gap = true;

		/* Into a gap of its own, its record kept, or as an operator's. */
		for (p = r[i].first; p < r[i].first + r[i].nr; p++)
			gap &= F.pg[p].state == HBMGUARD_STATE_CLEAN;
		if (!gap || loose) {
			fs = gap ? max(fs, F.now) : F.now;
			ls = gap ? min(ls, F.now) : F.now;
		}
		model_range(r[i].op, r[i].first, r[i].nr, r[i].source, fs, ls, &want);
		forget(r[i].first, r[i].nr);
		lo = min(lo, r[i].first);
		hi = max(hi, r[i].first + r[i].nr);
	}
	expect_result(&res, &want, "restore");
	if (result_changed(&res) && lo < hi)
		map_changed(lo, hi - lo);
	else
		published(&res, 0, 0, F.resourced);
}

/* hbm_device_set_policy(): 0 in a field named is the default. */
static void do_policy(u32 fields, u32 thr, u32 window, u32 limit)
{
	struct hbm_policy p = F.policy;
	bool valid;
	int err;

	if (fields & 1)
		p.ce_threshold = thr ?: F.defaults.ce_threshold;
	if (fields & 2)
		p.ce_window = window ?: F.defaults.ce_window;
	if (fields & 4)
		p.retire_limit = limit ?: F.defaults.retire_limit;
	valid = p.ce_threshold && p.ce_threshold <= 65535 && p.ce_window &&
		p.ce_window <= 365 * 86400 && p.retire_limit && p.retire_limit <= F.pages;
	err = hbm_policy_check(&p, F.pages);
	CHECK(!err == valid, "policy %u/%u/%u: %d", p.ce_threshold, p.ce_window,
	      p.retire_limit, err);
	if (err)
		return;
	hbm_core_set_policy(&F.c, &p);
	F.policy = p;
}

/* hbm_table_list() as the LIST ioctl and a dump take it: its contract. */
CHECKER static void do_list(u32 start, u32 end, u32 max)
{
	static struct hbm_extent out[MAX_EXTENTS + 1];
	u32 n_ext = table_check(), n, next, i, e;

	n = hbm_table_list(&F.c.table, start, end, out, max, &next);
	for (e = 0; e < n_ext && F.ext[e].first + F.ext[e].nr <= start; e++)
		;
	for (i = 0; i < n; i++, e++) {
		CHECK(e < n_ext && F.ext[e].first < end && !memcmp(&out[i], &F.ext[e], sizeof(out[i])),
		      "list [%u, %u) max %u: entry %u", start, end, max, i);
	}
	CHECK(n <= max, "list: %u of at most %u", n, max);
	if (e < n_ext && F.ext[e].first < end) {
		CHECK(n == max && next == max(F.ext[e].first, start),
		      "list [%u, %u) max %u: %u, next %u", start, end, max, n, next);
	} else {
		CHECK(next == end, "list [%u, %u): next %u at the end", start, end, next);
	}
}

/* A round of a PAGES_GET dump (netlink.c: dump_list(), cut at its start). */
static void do_dump(u32 max)
{
	static struct hbm_extent out[MAX_EXTENTS + 1];
	struct dump *d = &F.dump;
	u32 n, next, i, p;

	if (!d->on) {
		*d = (struct dump){ .on = true };
		for (p = 0; p < F.pages; p++)
			d->state0[p] = F.pg[p].state;
		return;
	}
	n = hbm_table_list(&F.c.table, d->from, F.pages, out, max, &next);
	if (n && out[0].first < d->from) {
		u32 cut = d->from - out[0].first;

		out[0].first = d->from;
		out[0].nr -= cut;
		if (out[0].spare != HBM_NO_SPARE)
			out[0].spare += cut;
	}
	for (i = 0; i < n; i++) {
		CHECK(out[i].first >= d->from && out[i].nr, "dump: %u+%u from %u", out[i].first,
		      out[i].nr, d->from);
		for (p = out[i].first; p < out[i].first + out[i].nr; p++) {
			CHECK(!d->sent[p], "dump: page %u sent twice", p);
			d->sent[p] = true;
			if (!d->touched[p])
				CHECK(F.pg[p].state == out[i].state, "dump: page %u state %u, %u",
				      p, out[i].state, F.pg[p].state);
		}
		d->from = out[i].first + out[i].nr;
	}
	if (n)
		return;
	/* The end: every page bad throughout, and untouched, was sent. */
	for (p = 0; p < F.pages; p++)
		if (!d->touched[p] && d->state0[p] != HBMGUARD_STATE_CLEAN)
			CHECK(d->sent[p], "dump: bad page %u never sent", p);
	d->on = false;
}

/* ---- the input ---- */

static const u8 op_sources[] = {
	HBMGUARD_SOURCE_ADMIN, HBMGUARD_SOURCE_UE, HBMGUARD_SOURCE_POISON,
	HBMGUARD_SOURCE_CE_THRESHOLD, HBMGUARD_SOURCE_RESTORED,
};

/* A source the device takes from an operator: not ADMIN on a GPU, DRIVER only there. */
static u8 apply_source(u8 v)
{
	if (F.bypass)
		return v % 3 == 0 ? HBMGUARD_SOURCE_DRIVER : op_sources[1 + v % 4];
	return op_sources[v % 5];
}

/* Two bits: RETIRE, PENDING, CLEAR, RETIRE. */
static enum hbm_op op_of(u8 v)
{
	v &= 3;
	return v == 1 ? HBM_OP_PENDING : v == 2 ? HBM_OP_CLEAR : HBM_OP_RETIRE;
}

static u32 page_of(struct fuzz_in *in)
{
	return fuzz_u32(in) % (F.pages + 1);
}

static void setup(struct fuzz_in *in)
{
	u8 flags = fuzz_u8(in);
	u32 pages = 1 + fuzz_u32(in) % MAX_PAGES, spares = fuzz_u32(in) % (MAX_SPARES + 1);
	u32 shift = fuzz_u8(in) % 10, cap = 1 + fuzz_u8(in), p, s;
	int err;

	memset(&F, 0, sizeof(F));
	F.bypass = flags & 1;
	if (F.bypass)
		spares = 0;
	F.pages = pages;
	F.spares = spares;
	F.now = NOW0;
	hbm_test_alloc_fail_in = -1;
	hbm_test_warnings = 0;
	err = hbm_core_init(&F.c, pages, spares, 4096u << shift);
	CHECK(!err, "init: %d", err);
	F.c.table.driver_bypass = F.bypass;
	F.policy = F.defaults = F.c.policy;
	CHECK(F.policy.retire_limit >= 1 && F.policy.retire_limit <= pages,
	      "default retire limit %u of %u pages", F.policy.retire_limit, pages);
	for (p = 0; p < pages; p++)
		F.pg[p].spare = HBM_NO_SPARE;
	F.count[HBMGUARD_STATE_CLEAN] = pages;
	for (s = 0; s < spares; s++)
		F.user[s] = SPARE_FREE;
	F.free_spares = spares;
	F.map.on = !(flags & 2);
	if (F.map.on) {
		/* map.c's capacity, or a small one that the table outgrows */
		F.map.capacity = flags & 4 ? cap : max_t(u32, spares + 1024, 4096);
		for (p = 0; p < 2; p++)
			CHECK(!hbm_mtree_init(&F.map.copy[p], hbm_mtree_max_nodes(F.map.capacity)),
			      "mtree init");
		F.map.built = flags & 8;
	}
}

static void teardown(void)
{
	hbm_core_destroy(&F.c);
	if (F.map.on) {
		hbm_mtree_destroy(&F.map.copy[0]);
		hbm_mtree_destroy(&F.map.copy[1]);
	}
	hbm_test_alloc_fail_in = -1;
}

static void step(struct fuzz_in *in, bool whole)
{
	u8 op = fuzz_u8(in);
	long arm = -1;

	/* A high bit: one allocation of this step fails, the Nth. */
	if (op & 0x80)
		arm = fuzz_u8(in) % 64;
	op &= 0x7f;
	F.arm_loose = arm >= 0;
	hbm_test_alloc_fail_in = arm;
	F.dlo = 0xffffffff;
	F.dhi = 0;
	F.bucket_page = 0xffffffff;
	if (verbose)
		fprintf(stderr, "table: step %u (arm %ld) at %u\n", op % 14, arm, F.now);

	switch (op % 14) {
	case 0: {	/* RETIRE, PENDING or CLEAR of a range: op, source, wide */
		u8 how = fuzz_u8(in);
		u32 first = page_of(in), nr = how & 0x80 ? fuzz_u32(in) % (F.pages + 2) :
					      fuzz_u8(in) % 17;

		do_apply(op_of(how), first, nr, apply_source(how >> 2 & 7));
		break;
	}
	case 1: {	/* many of them, a row here, a page there: length, op, source */
		u8 how = fuzz_u8(in), count = fuzz_u8(in), stride = 1 + fuzz_u8(in) % 8;
		u32 first = page_of(in), len = 1 + (how & 3), i;

		for (i = 0; i < count && first < F.pages; i++, first += stride + len - 1)
			do_apply(op_of(how >> 2), first, min(len, F.pages - first),
				 apply_source(how >> 4 & 7));
		break;
	}
	case 2: {	/* an error: kind, count, at a spare, wide count */
		u8 how = fuzz_u8(in);
		u32 page = fuzz_u32(in) % (F.pages + F.spares + 2);
		u32 kind = how & 7, count = 1;

		if (kind == HBMGUARD_ERROR_CE)
			count = how & 0x80 ? fuzz_u32(in) % 0x10002 : 1 + (how >> 3 & 7);
		if (how & 0x40)
			page = F.pages + fuzz_u8(in) % (F.spares + 1);
		do_report(page, kind, count);
		break;
	}
	case 3: {	/* a RESTORE */
		static struct hbm_page_range r[256];
		u8 how = fuzz_u8(in);
		u32 n = 1 + fuzz_u8(in) % 256, at = page_of(in), i, k;

		for (i = 0, k = 0; i < n; i++) {
			u8 gap = fuzz_u8(in), len = fuzz_u8(in), rec = fuzz_u8(in);
			u32 fs = NOW0 - (rec & 7) * 1000, ls = fs + (rec >> 3 & 3) * 500;

			if (!(how & 1))
				at += gap % 4;		/* apart or touching, ascending */
			else
				at = fuzz_u32(in) % F.pages;	/* anywhere, as nests before sorting */
			if (at >= F.pages)
				break;
			r[k] = (struct hbm_page_range){
				.first = at, .nr = min_t(u32, 1 + len % 8, F.pages - at),
				.op = rec & 0x80 ? HBM_OP_PENDING : HBM_OP_RETIRE,
				.source = F.bypass && rec & 0x40 ? HBMGUARD_SOURCE_DRIVER :
					  op_sources[(rec >> 5) % 5],
				.errors = gap,
				.first_seen = fs, .last_seen = ls,
			};
			at += r[k++].nr;
		}
		if (k)
			do_restore(r, k);
		break;
	}
	case 4: {	/* SET_POLICY */
		u8 fields = fuzz_u8(in);
		u32 thr = fuzz_u8(in) % 8, window = fuzz_u32(in), limit = fuzz_u32(in);

		if (fields & 8)
			thr = fuzz_u32(in) % 70000;
		if (!(fields & 16))
			window %= 4000;
		if (!(fields & 32))
			limit %= F.pages + 2;
		do_policy(fields, thr, window, limit);
		break;
	}
	case 5: {	/* a GPU driver's health (a GPU's alone) */
		u32 h = fuzz_u8(in) % 4;

		if (!F.bypass)
			break;
		F.c.driver_health = h;
		F.c.health = hbm_core_health(&F.c);
		F.driver_health = h;
		break;
	}
	case 6: {	/* time passes, a little or much, or the clock is set back */
		u32 d = fuzz_u32(in);

		F.now = d & 0x80000000 ? F.now - (d & 0xffff) :
			d & 0x40000000 ? F.now + (d & 0xff) : F.now + (d & 0x3ffff);
		break;
	}
	case 7:		/* the first mmap() of the table */
		if (F.map.on && !F.map.built) {
			if (F.map.stale)
				publish_whole(&F.map);
			F.map.built = true;
		}
		break;
	case 8: {	/* LIST, a range and a cursor */
		u32 start = page_of(in), end = page_of(in), max = fuzz_u8(in) % 20;

		do_list(start, end, max);
		break;
	}
	case 9:		/* a dump's round */
		do_dump(1 + fuzz_u8(in) % 64);
		break;
	case 10: {	/* a restore of the whole table as the daemon stores it: apart, ascending */
		static struct hbm_page_range r[MAX_EXTENTS];
		u32 n = table_check(), i, k = 0, shift = fuzz_u8(in) % 4;

		for (i = 0; i < n; i++) {
			u32 first = F.ext[i].first + shift;

			/* what the daemon stored, as it sends it (state.h) */
			if (first >= F.pages || (k && first < r[k - 1].first + r[k - 1].nr))
				continue;
			r[k++] = (struct hbm_page_range){
				.first = first, .nr = min(F.ext[i].nr, F.pages - first),
				.op = F.ext[i].state == HBMGUARD_STATE_PENDING ? HBM_OP_PENDING :
									  HBM_OP_RETIRE,
				.source = F.ext[i].source, .errors = F.ext[i].errors,
				.first_seen = F.ext[i].first_seen, .last_seen = F.ext[i].last_seen,
			};
		}
		if (fuzz_u8(in) & 1) {	/* after a module reload: into an empty table */
			hbm_test_alloc_fail_in = -1;
			CHECK(!do_apply(HBM_OP_CLEAR, 0, F.pages, HBMGUARD_SOURCE_ADMIN),
			      "clear all");
			hbm_test_alloc_fail_in = arm;
		}
		if (k)
			do_restore(r, k);
		break;
	}
	case 11:	/* an error, the daemon's kind: a CE at a page */
		do_report(page_of(in), HBMGUARD_ERROR_CE, 1);
		break;
	case 12: {	/* a storm of CEs over a channel: buckets by the hundred */
		u32 first = fuzz_u32(in) % (F.pages + F.spares + 1), n = 4 * fuzz_u8(in);
		u32 stride = 1 + fuzz_u8(in) % 16, count = 1 + fuzz_u8(in) % 4, i;

		for (i = 0; i < n && first < F.pages + F.spares; i++, first += stride)
			do_report(first, HBMGUARD_ERROR_CE, count);
		break;
	}
	default: {	/* a RESTORE of many ranges, into a gap or past the last extent */
		static struct hbm_page_range r[4096];
		u32 n = 1 + fuzz_u32(in) % 4096, at = page_of(in), x = fuzz_u32(in) | 1, k;
		u8 how = fuzz_u8(in);

		for (k = 0; k < n && at < F.pages; k++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			r[k] = (struct hbm_page_range){
				.first = at, .nr = min_t(u32, 1 + (x >> 8) % (1 + how % 8), F.pages - at),
				.op = x % 8 || how & 0x80 ? HBM_OP_RETIRE : HBM_OP_PENDING,
				.source = op_sources[(x >> 4) % 5], .errors = x >> 16,
				.first_seen = NOW0 - (x >> 20), .last_seen = NOW0,
			};
			at += r[k].nr + (how & 0x40 ? (x >> 12) % 3 : 1);
		}
		if (k)
			do_restore(r, k);
		break;
	}
	}
	hbm_test_alloc_fail_in = -1;
	full_check(whole || !in->n);
	if (verbose)
		fprintf(stderr, "table: step %u (arm %ld): %u extents, %u used, %u failed spares, "
			"%u buckets, policy %u/%u/%u, now %u\n", op % 14, arm,
			F.c.table.nr_extents, F.c.table.spare_used, F.c.table.spare_bad, F.c.ce_nr,
			F.policy.ce_threshold, F.policy.ce_window, F.policy.retire_limit, F.now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	unsigned int steps = 0;

	verbose = getenv("HBM_FUZZ_VERBOSE");
	setup(&in);
	full_check(true);
	while (in.n && steps++ < 2000)
		step(&in, !(steps % 64));
	if (in.n)
		full_check(true);
	if (verbose)
		fprintf(stderr, "table: %u steps; %u pages, %u spares (%u used, %u failed); "
			"%u extents in %u leaves; %u buckets; health %u; map %s%s, height %u/%u\n",
			steps, F.pages, F.spares, F.c.table.spare_used, F.c.table.spare_bad,
			F.c.table.nr_extents, F.c.table.nr_leaves, F.c.ce_nr, F.c.health,
			!F.map.on ? "off" : F.map.built ? "built" : "unbuilt",
			F.map.stale ? " stale" : "", F.map.copy[0].height, F.map.copy[1].height);
	teardown();
	return 0;
}
