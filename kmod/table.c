// SPDX-License-Identifier: GPL-2.0
/*
 * The bad-page table of one device and its spare pool.
 *
 * A GPU loses HBM a page or a DRAM row (several pages) at a time, and keeps
 * going for a long while with a few hundred bad pages; a failing stack or a
 * restore of a long history can bring hundreds of thousands.  The table must
 * answer "is this page bad, and what serves it" fast enough to sit in an
 * allocator's path, hold 10^6 retired pages in little memory, and never lose
 * an entry because it is full (block/badblocks.c stops at 512).
 *
 * Entries are extents: runs of pages that share a state and a source and,
 * when RETIRED, have consecutive spares.  A retired row is one extent; pages
 * retired one by one stay one extent each.  An extent takes 24 bytes.
 *
 * The extents live sorted in leaves of 170 (one 4 KiB allocation each); a
 * packed array of each leaf's first page and count sits on top.  A lookup is
 * a branch-free binary search of that array (48 KiB at 10^6 extents: it
 * stays in cache) and an interpolation guess into one leaf, which with bad
 * pages spread over the device lands on the right cache line: about one
 * cache miss per lookup.  This is a B+tree of height two, which is all 10^6
 * entries need; a deeper tree would only add levels to every lookup.
 *
 * Every change goes through one path, hbm_table_apply(): the extents that
 * overlap or touch the range are read, the replacement run is built with
 * adjacent extents merged, and splice() writes it over them.  splice() moves
 * entries within one leaf when they fit.  When a leaf overflows it
 * redistributes over the leaf and its emptier neighbour, and adds a leaf
 * only when both are full, so leaves stay about 80% full under random
 * inserts and over 90% under ascending ones (a plain split would leave them
 * half full).  A leaf emptied below a quarter merges into a neighbour.  A
 * restore past the table's last extent needs no splice: its run is built
 * in the last leaf and new ones, filled whole (hbm_table_apply_gap()).
 *
 * A change either happens whole or not at all: memory for the new leaves and
 * the replacement run is taken first, spares allocated on the way are handed
 * back if that fails, and spares freed by a clear are only released once the
 * change has been written.  A restore built in place takes its leaves on
 * the way, and on failure frees them and puts the last leaf back as it was.
 *
 * The spare pool is a bitmap handed out next-fit, so pages retired together
 * get consecutive spares and merge into one extent.  When the pool is empty
 * a page is FAILED, never dropped; a later retire of the range gives FAILED
 * pages spares that a clear has freed meanwhile.
 *
 * Spares are HBM too and fail like any page.  A failed spare leaves the pool
 * for good: its bit stays set in spare_map, as if in use, and spare_bad_map
 * says why.  If it served a page, that page moves to another spare (or
 * becomes FAILED when none is left) in one change of the table, keeping its
 * record: the spare no extent names any more is never freed by a clear.
 *
 * Error counts and times belong to an extent: when a run splits, both parts
 * keep them; when runs merge, counts add and times widen.
 */
#include "core.h"

#define LEAF_BYTES	4096	/* what one leaf costs from kmalloc */

struct pos {
	u32 leaf;
	u32 idx;		/* idx == leaf's nr only at the very end */
};

static inline u32 ext_end(const struct hbm_extent *e)
{
	return e->first + e->nr;
}

static inline const struct hbm_extent *pos_ext(const struct hbm_table *t,
					       struct pos p)
{
	return &t->leaves[p.leaf]->ext[p.idx];
}

static bool pos_at_end(const struct hbm_table *t, struct pos p)
{
	return !t->nr_leaves || p.idx == t->leaves[p.leaf]->nr;
}

static struct pos pos_normalize(const struct hbm_table *t, struct pos p)
{
	if (t->nr_leaves && p.idx == t->leaves[p.leaf]->nr &&
	    p.leaf + 1 < t->nr_leaves) {
		p.leaf++;
		p.idx = 0;
	}
	return p;
}

static struct pos pos_next(const struct hbm_table *t, struct pos p)
{
	p.idx++;
	return pos_normalize(t, p);
}

static bool pos_equal(struct pos a, struct pos b)
{
	return a.leaf == b.leaf && a.idx == b.idx;
}

/*
 * How many of the @n leaves start at or below @page.  Branch-free: the loop runs
 * log2(n) times whatever the keys, and the compiler turns the step into a
 * conditional move, so a lookup pays no mispredicted branches (which cost
 * more than the cache misses here when the top array is hot).
 */
static u32 count_at_or_below(const struct hbm_leaf_key *keys, u32 n, u32 page)
{
	const struct hbm_leaf_key *base = keys;

	if (!n)
		return 0;
	while (n > 1) {
		u32 half = n / 2;

		base = base[half].first <= page ? base + half : base;
		n -= half;
	}
	return base - keys + (base->first <= page);
}

/*
 * Narrow [*lo, *hi), the range holding the first extent above @page, by
 * interpolation.  Bad pages spread fairly evenly within a leaf, so the guess
 * usually lands on the right cache line, and a lookup in a table far larger
 * than the cache then costs about one miss in the leaf where a binary search
 * costs eight.  Clustered pages only make the guess less useful: the binary
 * search that follows is bounded by the range either way.
 */
static void leaf_narrow(const struct hbm_leaf *leaf,
			const struct hbm_leaf_key *key, u32 next_first,
			u32 page, u32 *lo, u32 *hi)
{
	u32 guess, step;

	/*
	 * Everything the guess needs comes from the top array, so the first
	 * access to the leaf is the guessed line itself.
	 */
	if (key->nr < 16)
		return;
	guess = 1 + (u32)hbm_div_u64((u64)(page - key->first) * (key->nr - 1),
				      next_first - key->first);
	guess = min(guess, key->nr - 1);
	/* Gallop from the guess until the answer is bracketed. */
	if (leaf->ext[guess].first <= page) {
		for (step = 1; guess + step < *hi; step *= 2) {
			if (leaf->ext[guess + step].first > page) {
				*hi = guess + step;
				break;
			}
		}
		*lo = guess + 1;
	} else {
		for (step = 1; step < guess - *lo + 1; step *= 2) {
			if (leaf->ext[guess - step].first <= page) {
				*lo = guess - step + 1;
				break;
			}
		}
		*hi = guess;
	}
}

/* Position of the first extent that starts above @page. */
static struct pos pos_after(const struct hbm_table *t, u32 page)
{
	const struct hbm_leaf *leaf;
	u32 lo = count_at_or_below(t->keys, t->nr_leaves, page), hi;
	struct pos p;

	if (!lo)
		return (struct pos){ 0, 0 };

	p.leaf = lo - 1;
	leaf = t->leaves[p.leaf];
	lo = 1;			/* ext[0].first <= page */
	hi = t->keys[p.leaf].nr;
	leaf_narrow(leaf, &t->keys[p.leaf],
		    p.leaf + 1 < t->nr_leaves ? t->keys[p.leaf + 1].first : t->nr_pages,
		    page, &lo, &hi);
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (leaf->ext[mid].first <= page)
			lo = mid + 1;
		else
			hi = mid;
	}
	p.idx = lo;
	return pos_normalize(t, p);
}

/* Position of the last extent that starts at or below @page, if any. */
static bool pos_at_or_below(const struct hbm_table *t, u32 page, struct pos *p)
{
	struct pos after = pos_after(t, page);

	if (after.idx) {
		*p = (struct pos){ after.leaf, after.idx - 1 };
		return true;
	}
	if (after.leaf) {
		*p = (struct pos){ after.leaf - 1, t->leaves[after.leaf - 1]->nr - 1 };
		return true;
	}
	return false;
}

/* Position of the first extent that ends above @page. */
static struct pos pos_end_above(const struct hbm_table *t, u32 page)
{
	struct pos p;

	if (pos_at_or_below(t, page, &p) && ext_end(pos_ext(t, p)) > page)
		return p;
	return pos_after(t, page);
}

bool hbm_table_lookup(const struct hbm_table *t, u32 page,
		      struct hbm_extent *out)
{
	struct pos p;

	if (!pos_at_or_below(t, page, &p) || ext_end(pos_ext(t, p)) <= page)
		return false;
	*out = *pos_ext(t, p);
	return true;
}

/**
 * hbm_table_count() - count errors on a page the table holds, in place
 * @t: the table
 * @page: the page
 * @errors: errors to add to the record of the extent holding @page
 * @now: seconds since the epoch
 *
 * What hbm_table_apply(HBM_OP_PENDING) of @page does to a page the table
 * holds (its extent keeps its state, pages and spares; only the record
 * changes), without rebuilding the extent: a failing row goes on erring
 * after it is retired, and a storm of such reports costs a lookup each.
 *
 * Return: true when @page is in the table and its extent counted the
 * errors; false when it is not in the table (nothing changed).
 */
bool hbm_table_count(struct hbm_table *t, u32 page, u16 errors, u32 now)
{
	struct hbm_extent *e;
	struct pos p;

	if (!pos_at_or_below(t, page, &p))
		return false;
	e = &t->leaves[p.leaf]->ext[p.idx];
	if (ext_end(e) <= page)
		return false;
	e->last_seen = max(e->last_seen, now);	/* a clock set back */
	e->errors = min_t(u32, 0xffff, (u32)e->errors + errors);
	return true;
}

u32 hbm_table_list(const struct hbm_table *t, u32 start, u32 end,
		   struct hbm_extent *out, u32 max, u32 *next)
{
	struct pos p = pos_end_above(t, start);
	u32 n = 0;

	*next = end;
	while (!pos_at_end(t, p)) {
		const struct hbm_extent *e = pos_ext(t, p);

		if (e->first >= end)
			break;
		if (n == max) {
			*next = max_t(u32, e->first, start);
			break;
		}
		out[n++] = *e;
		p = pos_next(t, p);
	}
	return n;
}

/* Call @fn on every extent, in order. */
void hbm_table_walk(const struct hbm_table *t,
		    void (*fn)(const struct hbm_extent *e, void *arg), void *arg)
{
	u32 l, i;

	for (l = 0; l < t->nr_leaves; l++)
		for (i = 0; i < t->leaves[l]->nr; i++)
			fn(&t->leaves[l]->ext[i], arg);
}

u32 hbm_table_bad_pages(const struct hbm_table *t)
{
	return t->pages[HBMGUARD_STATE_PENDING] +
	       t->pages[HBMGUARD_STATE_RETIRED] +
	       t->pages[HBMGUARD_STATE_FAILED];
}

/*
 * Building the replacement run.
 */
struct spare_run {
	u32 first;
	u32 nr;
};

struct op_ctx {
	struct hbm_table *t;
	enum hbm_op op;
	u8 source;
	u16 errors;
	u32 now;
	u32 first_seen;			/* of pages new to the table */
	int err;

	struct hbm_extent *run;		/* the replacement */
	u32 run_nr, run_cap;
	/*
	 * Appending (hbm_table_apply_gap() past the table's last extent): the
	 * run is the table's last leaf, written in place; these undo it.
	 */
	bool appending;
	u32 append_leaves;		/* the table's leaves before */
	u32 append_last_nr;		/* its last leaf's extents before */
	struct hbm_extent append_last;	/* and its last extent, which may merge */
	struct spare_run *taken;	/* spares allocated: undo on failure */
	u32 taken_nr, taken_cap;
	struct spare_run *freed;	/* spares to free once written */
	u32 freed_nr, freed_cap;
	u32 failed_spare;		/* HBM_OP_RESPARE: the spare that failed */
	u32 spare_hint;			/* the table's, restored on failure */
	u32 ahead;			/* pages still to take spares: see spares_take() */
	u32 pool_first, pool_nr;	/* spares taken ahead, not yet given */
	long delta[__HBMGUARD_STATE_MAX];
	struct hbm_result res;
};

/* Grow *@arr of @size-byte elements to hold one more; on failure set ->err. */
static bool grow(struct op_ctx *c, void **arr, u32 nr, u32 *cap, size_t size)
{
	u32 new_cap;
	void *p;

	if (nr < *cap)
		return true;
	if (c->err)
		return false;
	new_cap = *cap ? 2 * *cap : 16;
	p = hbm_alloc(new_cap * size);
	if (!p) {
		c->err = -ENOMEM;
		return false;
	}
	if (nr)
		memcpy(p, *arr, nr * size);
	hbm_free(*arr);
	*arr = p;
	*cap = new_cap;
	return true;
}

static void log_spares(struct op_ctx *c, struct spare_run **runs, u32 *nr,
		       u32 *cap, u32 first, u32 count)
{
	struct spare_run *last = *nr ? &(*runs)[*nr - 1] : NULL;

	if (last && last->first + last->nr == first) {
		last->nr += count;
		return;
	}
	if (!grow(c, (void **)runs, *nr, cap, sizeof(**runs)))
		return;
	(*runs)[(*nr)++] = (struct spare_run){ first, count };
}

static bool mergeable(const struct hbm_extent *a, const struct hbm_extent *b)
{
	if (ext_end(a) != b->first || a->state != b->state ||
	    a->source != b->source)
		return false;
	if (a->spare == HBM_NO_SPARE)
		return b->spare == HBM_NO_SPARE;
	return b->spare == a->spare + a->nr;
}

static int leaves_reserve(struct hbm_table *t, u32 want);

/*
 * The extent emit() may merge into.  Appending, a leaf's run is never
 * empty here: append_leaf() is called through run_room() only, by emit()
 * and ranges_served_whole(), each of which stores an extent at once.
 */
static struct hbm_extent *run_last(const struct op_ctx *c)
{
	return c->run_nr ? &c->run[c->run_nr - 1] : NULL;
}

/* Appending, the run's leaf is full: the next one, added to the table. */
static bool append_leaf(struct op_ctx *c)
{
	struct hbm_table *t = c->t;
	struct hbm_leaf *leaf;

	if (c->err)
		return false;
	leaf = NULL;
	if (!leaves_reserve(t, t->nr_leaves + 1))
		leaf = hbm_alloc(sizeof(*leaf));
	if (!leaf) {
		c->err = -ENOMEM;
		return false;
	}
	if (t->nr_leaves)
		t->leaves[t->nr_leaves - 1]->nr = c->run_nr;
	t->leaves[t->nr_leaves++] = leaf;
	t->bytes += LEAF_BYTES;
	c->run = leaf->ext;
	c->run_nr = 0;
	c->run_cap = HBM_LEAF_CAP;
	return true;
}

/* The run is full: room for one more extent, or false (->err set). */
static noinline bool run_room(struct op_ctx *c)
{
	if (c->appending)
		return append_leaf(c);
	return grow(c, (void **)&c->run, c->run_nr, &c->run_cap, sizeof(*c->run));
}

/* @e, which mergeable() says continues @last, into it. */
static inline void merge(struct hbm_extent *last, const struct hbm_extent *e)
{
	last->nr += e->nr;
	last->first_seen = min(last->first_seen, e->first_seen);
	last->last_seen = max(last->last_seen, e->last_seen);
	last->errors = min_t(u32, 0xffff, (u32)last->errors + e->errors);
}

/*
 * Inline: op_piece() and bypass() emit each extent they make, and as a
 * call it was a third of a restore's build in the kernel, before the build
 * had ranges_served_whole().
 */
static inline void emit(struct op_ctx *c, const struct hbm_extent *e)
{
	struct hbm_extent *last = run_last(c);

	if (last && mergeable(last, e)) {
		merge(last, e);
		return;
	}
	if (unlikely(c->run_nr == c->run_cap) && !run_room(c))
		return;
	c->run[c->run_nr++] = *e;
}

/*
 * Up to @want consecutive spares, next-fit: *@spare is the first and the
 * count is returned, what taking them one by one gives until a spare in
 * use breaks the run.  None left: *@spare is HBM_NO_SPARE, for all @want.
 */
static u32 spares_grab(struct op_ctx *c, u32 want, u32 *spare)
{
	struct hbm_table *t = c->t;
	unsigned long s, end, limit;

	*spare = HBM_NO_SPARE;
	if (t->spare_used + t->spare_bad == t->spare_total)
		return want;
	s = find_next_zero_bit(t->spare_map, t->spare_total, t->spare_hint);
	if (s >= t->spare_total)
		s = find_next_zero_bit(t->spare_map, t->spare_total, 0);
	/*
	 * The counts say a spare is free and the map has none: a count of 0
	 * would make bypass() loop for ever, under the device's lock.
	 */
	if (WARN_ON_ONCE(s >= t->spare_total))
		return want;
	limit = s + min_t(unsigned long, want, t->spare_total - s);
	end = find_next_bit(t->spare_map, limit, s);
	/* Logged first: a spare the undo log does not hold would leak. */
	log_spares(c, &c->taken, &c->taken_nr, &c->taken_cap, s, end - s);
	if (c->err)
		return want;
	bitmap_set(t->spare_map, s, end - s);
	t->spare_used += end - s;
	t->spare_hint = end;
	*spare = s;
	return end - s;
}

/*
 * spares_grab() for bypass(), from the pool of spares taken ahead.  A bulk
 * build (hbm_table_apply_gap(): 16384 one-page ranges a request in a restore)
 * says in @c->ahead how many pages will want one, and they are grabbed in
 * as few pieces as the pool allows: the same spares in the same order as
 * range by range, without a search, a log entry and a bitmap_set() each.
 * Always inline: bypass() calls it for each run of spares, and a call
 * costs more than its work.
 */
static __always_inline u32 spares_take(struct op_ctx *c, u32 want, u32 *spare)
{
	u32 n;

	if (!c->pool_nr) {
		c->pool_nr = spares_grab(c, max(want, c->ahead), &c->pool_first);
		if (c->pool_first == HBM_NO_SPARE) {
			c->pool_nr = 0;
			c->ahead -= min(c->ahead, want);
			*spare = HBM_NO_SPARE;
			return want;
		}
	}
	n = min(want, c->pool_nr);
	*spare = c->pool_first;
	c->pool_first += n;
	c->pool_nr -= n;
	c->ahead -= min(c->ahead, n);
	return n;
}

static void spares_release(struct hbm_table *t, const struct spare_run *runs,
			   u32 nr)
{
	u32 i;

	for (i = 0; i < nr; i++) {
		bitmap_clear(t->spare_map, runs[i].first, runs[i].nr);
		t->spare_used -= runs[i].nr;
	}
}

/*
 * Spares taken ahead and not given: none, @c->ahead being exact.  Should a
 * change make it count more, they go back, the hint where they begin, and
 * the table is still what one range at a time gives.
 */
static void pool_return(struct op_ctx *c)
{
	if (!WARN_ON_ONCE(c->pool_nr))
		return;
	spares_release(c->t, &(struct spare_run){ c->pool_first, c->pool_nr }, 1);
	c->t->spare_hint = c->pool_first;
	c->pool_nr = 0;
}

static void count_change(struct op_ctx *c, u8 from, u8 to, u32 nr)
{
	if (from == to)
		return;
	c->delta[from] -= nr;
	c->delta[to] += nr;
	if (to == HBMGUARD_STATE_RETIRED)
		c->res.retired += nr;
	else if (to == HBMGUARD_STATE_PENDING)
		c->res.pending += nr;
	else if (to == HBMGUARD_STATE_FAILED)
		c->res.failed += nr;
	else
		c->res.cleared += nr;
}

/*
 * Give each page of @tmpl a spare, or mark it FAILED: a run of consecutive
 * spares at a time, as many as the pool has in one piece from the hint.
 * The errors are the run's, not each page's: they go with the first page
 * and merge from there.
 */
static void bypass(struct op_ctx *c, struct hbm_extent tmpl)
{
	u8 from = tmpl.state;
	u32 page, end = ext_end(&tmpl), pieces = 0;

	for (page = tmpl.first; page < end && !c->err; page += tmpl.nr) {
		tmpl.first = page;
		if (c->t->driver_bypass) {
			tmpl.nr = end - page;
			tmpl.spare = HBM_NO_SPARE;
			tmpl.state = HBMGUARD_STATE_RETIRED;
		} else {
			tmpl.nr = spares_take(c, end - page, &tmpl.spare);
			tmpl.state = tmpl.spare == HBM_NO_SPARE ?
				     HBMGUARD_STATE_FAILED : HBMGUARD_STATE_RETIRED;
		}
		if (c->err)
			break;
		count_change(c, from, tmpl.state, tmpl.nr);
		emit(c, &tmpl);
		tmpl.errors = 0;
		if (!(++pieces % 1024))
			hbm_cond_resched();	/* a pool in many pieces */
	}
}

/* Apply the operation to pages [first, first + nr) of @old, or to new pages. */
static void op_piece(struct op_ctx *c, const struct hbm_extent *old,
		     u32 first, u32 nr)
{
	struct hbm_extent e = {
		.first = first, .nr = nr, .spare = HBM_NO_SPARE,
		.state = HBMGUARD_STATE_CLEAN, .source = c->source,
		.first_seen = c->first_seen,
	};

	if (old) {
		e = *old;
		e.first = first;
		e.nr = nr;
		if (e.spare != HBM_NO_SPARE)
			e.spare += first - old->first;
	}

	if (c->op == HBM_OP_CLEAR || c->op == HBM_OP_RESPARE) {
		if (!old)
			return;
	}
	if (c->op == HBM_OP_CLEAR) {
		if (e.spare != HBM_NO_SPARE)
			log_spares(c, &c->freed, &c->freed_nr, &c->freed_cap,
				   e.spare, nr);
		count_change(c, e.state, HBMGUARD_STATE_CLEAN, nr);
		return;
	}

	e.last_seen = max(e.last_seen, c->now);
	e.errors = min_t(u32, 0xffff, (u32)e.errors + c->errors);
	if (c->op == HBM_OP_RETIRE) {
		/*
		 * A pending page is in service, its data on it, and a failed
		 * one keeps its data on its frame until a spare frees: a UE
		 * or poison there destroyed the data, and is why the page
		 * goes, whoever reported it first (an operator, the GPU's
		 * driver).  The record, its event and the aperture say so.
		 */
		if ((e.state == HBMGUARD_STATE_PENDING || e.state == HBMGUARD_STATE_FAILED) &&
		    hbm_source_destroys(c->source))
			e.source = c->source;
		bypass(c, e);
		return;
	}
	if (c->op == HBM_OP_RESPARE) {
		/* Not RETIRED, or not served by the failed spare: the record only. */
		if (e.spare != c->failed_spare) {
			emit(c, &e);
			return;
		}
		bypass(c, e);
		/* Another spare, even a RETIRED -> RETIRED move, is news. */
		if (c->run_nr && c->run[c->run_nr - 1].state == HBMGUARD_STATE_RETIRED)
			c->res.retired++;
		return;
	}
	count_change(c, HBMGUARD_STATE_CLEAN, HBMGUARD_STATE_PENDING, nr);
	e.state = HBMGUARD_STATE_PENDING;
	emit(c, &e);
}

static void keep(struct op_ctx *c, const struct hbm_extent *old, u32 first,
		 u32 nr)
{
	struct hbm_extent e = *old;

	e.first = first;
	e.nr = nr;
	if (e.spare != HBM_NO_SPARE)
		e.spare += first - old->first;
	emit(c, &e);
}

/* An extent the operation leaves in its state: only its record changes. */
static bool op_keeps_state(const struct op_ctx *c, const struct hbm_extent *e)
{
	if (c->op == HBM_OP_RESPARE)
		return e->spare == HBM_NO_SPARE ||
		       c->failed_spare - e->spare >= e->nr;
	return c->op == HBM_OP_PENDING ||
	       (c->op == HBM_OP_RETIRE && e->state == HBMGUARD_STATE_RETIRED);
}

/*
 * Build the run that replaces the extents in [lo, hi) for range [a, b).
 * Extents the operation does not change are touched whole rather than split,
 * so a report on one page of a retired row counts once, on the row.
 */
static void op_build(struct op_ctx *c, struct pos lo, struct pos hi,
		     u32 a, u32 b)
{
	u32 cursor = a;
	struct pos p;

	for (p = lo; !pos_equal(p, hi) && !c->err; p = pos_next(c->t, p)) {
		const struct hbm_extent *e = pos_ext(c->t, p);
		u32 from = max(e->first, a), to = min(ext_end(e), b);

		if (cursor < from)
			op_piece(c, NULL, cursor, from - cursor);
		if (from >= to) {		/* a neighbour, touching */
			emit(c, e);
		} else if (op_keeps_state(c, e)) {
			struct hbm_extent touched = *e;

			touched.last_seen = max(e->last_seen, c->now);
			touched.errors = min_t(u32, 0xffff, (u32)e->errors + c->errors);
			emit(c, &touched);
		} else {
			if (e->first < a)
				keep(c, e, e->first, a - e->first);
			op_piece(c, e, from, to - from);
			if (ext_end(e) > b)
				keep(c, e, b, ext_end(e) - b);
		}
		cursor = max(cursor, to);
	}
	if (cursor < b && !c->err)
		op_piece(c, NULL, cursor, b - cursor);
}

/*
 * Writing the run over the table.
 */
static int leaves_reserve(struct hbm_table *t, u32 want)
{
	struct hbm_leaf **leaves;
	struct hbm_leaf_key *keys;
	u32 cap;

	if (want <= t->cap_leaves)
		return 0;
	cap = max(want, 2 * t->cap_leaves);
	leaves = hbm_alloc(cap * sizeof(*leaves));
	keys = hbm_alloc(cap * sizeof(*keys));
	if (!leaves || !keys) {
		hbm_free(leaves);
		hbm_free(keys);
		return -ENOMEM;
	}
	if (t->nr_leaves) {
		memcpy(leaves, t->leaves, t->nr_leaves * sizeof(*leaves));
		memcpy(keys, t->keys, t->nr_leaves * sizeof(*keys));
	}
	hbm_free(t->leaves);
	hbm_free(t->keys);
	t->bytes += (u64)(cap - t->cap_leaves) * (sizeof(*leaves) + sizeof(*keys));
	t->leaves = leaves;
	t->keys = keys;
	t->cap_leaves = cap;
	return 0;
}

static u32 window_count(const struct hbm_table *t, u32 w0, u32 w1)
{
	u32 i, n = 0;

	for (i = w0; i <= w1; i++)
		n += t->leaves[i]->nr;
	return n;
}

/* Replace the extents in [lo, hi) by @run. */
static int splice(struct hbm_table *t, struct pos lo, struct pos hi,
		  const struct hbm_extent *run, u32 n)
{
	struct hbm_leaf *spare_leaves[4] = { NULL }, **fresh = spare_leaves;
	u32 w0, w1, wcount, total, removed, need, i, l, done, at;
	bool underflow, append;
	struct hbm_extent *all;
	struct hbm_leaf *leaf;

	if (!t->nr_leaves) {
		w0 = 0;
		w1 = 0;
		wcount = 0;
		removed = 0;
		total = n;
	} else {
		if (!hi.idx && hi.leaf > lo.leaf) {
			hi.leaf--;
			hi.idx = t->leaves[hi.leaf]->nr;
		}
		w0 = lo.leaf;
		w1 = hi.leaf;
		wcount = w1 - w0 + 1;
		total = window_count(t, w0, w1);
		removed = total - lo.idx - (t->leaves[w1]->nr - hi.idx);
		total = total - removed + n;
	}

	underflow = wcount == 1 && total < HBM_LEAF_CAP / 4 && t->nr_leaves > 1;
	append = pos_at_end(t, hi) && hi.leaf + 1 >= t->nr_leaves;

	/* Within one leaf, in place. */
	if (wcount == 1 && total && total <= HBM_LEAF_CAP && !underflow) {
		leaf = t->leaves[w0];
		memmove(&leaf->ext[lo.idx + n], &leaf->ext[hi.idx],
			(leaf->nr - hi.idx) * sizeof(*run));
		if (n)
			memcpy(&leaf->ext[lo.idx], run, n * sizeof(*run));
		leaf->nr = total;
		t->keys[w0] = (struct hbm_leaf_key){ leaf->ext[0].first, total };
		t->nr_extents += n - removed;
		return 0;
	}

	/* Overflow or underflow: take in the emptier neighbour. */
	if (wcount && (total > wcount * HBM_LEAF_CAP || underflow)) {
		bool left = w0 > 0, right = w1 + 1 < t->nr_leaves;

		if (left && right)
			left = t->leaves[w0 - 1]->nr <= t->leaves[w1 + 1]->nr;
		if (left) {
			w0--;
			total += t->leaves[w0]->nr;
			wcount++;
		} else if (right) {
			w1++;
			total += t->leaves[w1]->nr;
			wcount++;
		}
	}
	need = DIV_ROUND_UP(total, HBM_LEAF_CAP);

	/* Take every allocation before changing anything. */
	if (need > wcount) {
		if (need - wcount > 4) {
			fresh = hbm_zalloc((need - wcount) * sizeof(*fresh));
			if (!fresh)
				return -ENOMEM;
		}
		for (i = 0; i < need - wcount; i++) {
			fresh[i] = hbm_alloc(sizeof(**fresh));
			if (!fresh[i])
				goto nomem;
		}
	}
	if (leaves_reserve(t, t->nr_leaves - wcount + need))
		goto nomem;
	all = hbm_alloc(max_t(u32, total, 1) * sizeof(*all));
	if (!all)
		goto nomem;

	/* Gather the window: leaves before lo, lo's head, run, tail, after. */
	at = 0;
	for (l = w0; wcount && l <= lo.leaf; l++) {
		u32 lim = l == lo.leaf ? lo.idx : t->leaves[l]->nr;

		memcpy(&all[at], t->leaves[l]->ext, lim * sizeof(*all));
		at += lim;
	}
	if (n)
		memcpy(&all[at], run, n * sizeof(*run));
	at += n;
	for (l = hi.leaf, i = hi.idx; wcount && l <= w1; l++, i = 0) {
		memcpy(&all[at], &t->leaves[l]->ext[i],
		       (t->leaves[l]->nr - i) * sizeof(*all));
		at += t->leaves[l]->nr - i;
	}

	/* ...and spread it evenly over `need` leaves. */
	for (i = need; i < wcount; i++) {
		hbm_free(t->leaves[w0 + i]);
		t->bytes -= LEAF_BYTES;
	}
	if (need != wcount) {
		memmove(&t->leaves[w0 + need], &t->leaves[w0 + wcount],
			(t->nr_leaves - w0 - wcount) * sizeof(*t->leaves));
		memmove(&t->keys[w0 + need], &t->keys[w0 + wcount],
			(t->nr_leaves - w0 - wcount) * sizeof(*t->keys));
	}
	for (i = wcount; i < need; i++) {
		t->leaves[w0 + i] = fresh[i - wcount];
		t->bytes += LEAF_BYTES;
	}
	/*
	 * Appending at the end of the table (ascending retirements, a restore)
	 * fills leaves whole and leaves the slack in the last one; elsewhere
	 * slack is spread so the next inserts find room.
	 */
	for (i = 0, done = 0; i < need; i++) {
		u32 cnt = append ? min_t(u32, HBM_LEAF_CAP, total - done) :
			  total / need + (i < total % need);

		leaf = t->leaves[w0 + i];
		memcpy(leaf->ext, &all[done], cnt * sizeof(*all));
		leaf->nr = cnt;
		t->keys[w0 + i] = (struct hbm_leaf_key){ leaf->ext[0].first, cnt };
		done += cnt;
	}
	t->nr_leaves += need - wcount;
	t->nr_extents += n - removed;
	hbm_free(all);
	if (fresh != spare_leaves)
		hbm_free(fresh);
	return 0;

nomem:
	if (need > wcount)
		for (i = 0; i < need - wcount; i++)
			hbm_free(fresh[i]);
	if (fresh != spare_leaves)
		hbm_free(fresh);
	return -ENOMEM;
}

static int op_write(struct op_ctx *c, struct pos lo, struct pos hi,
		    struct hbm_result *res);

/* hbm_table_apply(), and HBM_OP_RESPARE of @failed_spare for hbm_table_spare_fail(). */
static int table_apply(struct hbm_table *t, enum hbm_op op, u32 first, u32 nr,
		       u8 source, u16 errors, u32 now, u32 failed_spare,
		       struct hbm_result *res)
{
	struct op_ctx c = {
		.t = t, .op = op, .source = source, .errors = errors, .now = now,
		.first_seen = now, .failed_spare = failed_spare,
		.spare_hint = t->spare_hint,
	};
	struct pos lo, hi;
	u32 end = first + nr;

	/* Extents that overlap the range or touch it, so they can merge. */
	lo = first ? pos_end_above(t, first - 1) : pos_normalize(t, (struct pos){ 0, 0 });
	hi = pos_after(t, end);
	op_build(&c, lo, hi, first, end);
	return op_write(&c, lo, hi, res);
}

/*
 * Appending, the run is in the table already: on @err take it out (the
 * leaves it added freed, the last leaf as it was), else key its leaves.
 */
static void append_end(struct op_ctx *c, int err)
{
	struct hbm_table *t = c->t;
	u32 l, from = c->append_leaves ? c->append_leaves - 1 : 0;

	if (err) {
		for (l = c->append_leaves; l < t->nr_leaves; l++) {
			hbm_free(t->leaves[l]);
			t->bytes -= LEAF_BYTES;
		}
		t->nr_leaves = c->append_leaves;
		if (t->nr_leaves) {
			struct hbm_leaf *leaf = t->leaves[t->nr_leaves - 1];

			leaf->nr = c->append_last_nr;
			leaf->ext[leaf->nr - 1] = c->append_last;
		}
	} else {
		if (t->nr_leaves)
			t->leaves[t->nr_leaves - 1]->nr = c->run_nr;
		for (l = from; l < t->nr_leaves; l++) {
			t->keys[l] = (struct hbm_leaf_key){ t->leaves[l]->ext[0].first,
							     t->leaves[l]->nr };
			t->nr_extents += t->leaves[l]->nr;
		}
		t->nr_extents -= c->append_last_nr;
	}
	c->run = NULL;		/* the table's */
}

/* Write the run built over [@lo, @hi), or undo what building it took. */
static int op_write(struct op_ctx *c, struct pos lo, struct pos hi,
		    struct hbm_result *res)
{
	struct hbm_table *t = c->t;
	int err = c->err;
	u32 i;

	if (c->appending)
		append_end(c, err);
	else if (!err)
		err = splice(t, lo, hi, c->run, c->run_nr);
	if (err) {
		spares_release(t, c->taken, c->taken_nr);
		t->spare_hint = c->spare_hint;
	} else {
		pool_return(c);
		spares_release(t, c->freed, c->freed_nr);
		for (i = HBMGUARD_STATE_CLEAN + 1; i < __HBMGUARD_STATE_MAX; i++)
			t->pages[i] += c->delta[i];
		res->retired += c->res.retired;
		res->pending += c->res.pending;
		res->failed += c->res.failed;
		res->cleared += c->res.cleared;
	}
	hbm_free(c->run);
	hbm_free(c->taken);
	hbm_free(c->freed);
	return err;
}

/**
 * hbm_table_apply() - retire, mark pending or clear a range of pages
 * @t: the table
 * @op: what to do
 * @first: first page
 * @nr: pages, at least one; the range must lie in the table
 * @source: enum hbmguard_source for pages new to the table, and for pending
 *	or failed pages a retirement with UE or POISON takes (an error that
 *	destroyed the data they held)
 * @errors: errors to add to every extent the range touches
 * @now: seconds since the epoch
 * @res: what changed, added to
 *
 * Return: 0, -EINVAL or -ERANGE for a bad range, -ENOMEM.  On error the table
 * is as it was.
 */
int hbm_table_apply(struct hbm_table *t, enum hbm_op op, u32 first, u32 nr,
		    u8 source, u16 errors, u32 now, struct hbm_result *res)
{
	if (!nr || op == HBM_OP_RESPARE)
		return -EINVAL;
	if (first >= t->nr_pages || nr > t->nr_pages - first)
		return -ERANGE;
	return table_apply(t, op, first, nr, source, errors, now, HBM_NO_SPARE, res);
}

/*
 * The first of @n ranges new to the table that the spares taken ahead
 * serve whole (a restore's ranges, all but one in 16384 or where the pool
 * is in pieces): what op_piece() of no extent and bypass() make of each,
 * one extent, built without their branches for states, operations and
 * pieces a new page cannot have.  The context's counts and the run's end
 * are kept in locals and written back once: the kernel is built with
 * -fno-strict-aliasing, and each extent stored through @c->run would
 * reload them, 10^6 times a restart.  Return: how many were built, up to
 * the first that cannot be (op_piece() makes that one) or an error.
 */
static u32 ranges_served_whole(struct op_ctx *c, const struct hbm_page_range *r, u32 n)
{
	struct hbm_extent *run = c->run, *last = run_last(c);
	u32 run_nr = c->run_nr, run_cap = c->run_cap;
	u32 spare = c->pool_first, pool_nr = c->pool_nr, pages = 0, i;

	if (c->t->driver_bypass)
		return 0;
	for (i = 0; i < n && r[i].op == HBM_OP_RETIRE && r[i].nr <= pool_nr; i++) {
		struct hbm_extent e = {
			.first = r[i].first, .nr = r[i].nr, .spare = spare,
			.state = HBMGUARD_STATE_RETIRED, .source = r[i].source,
			.errors = r[i].errors, .first_seen = r[i].first_seen,
			.last_seen = r[i].last_seen,
		};

		if (last && mergeable(last, &e)) {
			merge(last, &e);
		} else {
			if (unlikely(run_nr == run_cap)) {
				c->run_nr = run_nr;
				if (!run_room(c))
					break;
				run = c->run;
				run_nr = c->run_nr;
				run_cap = c->run_cap;
			}
			last = &run[run_nr++];
			*last = e;
		}
		spare += e.nr;
		pool_nr -= e.nr;
		pages += e.nr;
	}
	c->run_nr = run_nr;
	c->pool_first = spare;
	c->pool_nr = pool_nr;
	c->ahead -= min(c->ahead, pages);	/* as spares_take() of each */
	count_change(c, HBMGUARD_STATE_CLEAN, HBMGUARD_STATE_RETIRED, pages);
	return i;
}

/* The ranges of hbm_table_apply_gap(), each new to the table, onto the run. */
static void ranges_build(struct op_ctx *c, const struct hbm_page_range *r, u32 n)
{
	u32 i = 0, resched_at = 0;

	while (i < n && !c->err) {
		u32 want, done;

		if (i >= resched_at) {	/* every 1024 ranges */
			hbm_cond_resched();
			resched_at = i + 1024;
		}
		want = min(n, resched_at) - i;
		done = ranges_served_whole(c, r + i, want);
		i += done;
		if (done == want || c->err)
			continue;
		c->op = r[i].op;
		c->source = r[i].source;
		c->errors = r[i].errors;
		c->first_seen = r[i].first_seen;
		c->now = r[i].last_seen;
		op_piece(c, NULL, r[i].first, r[i].nr);
		i++;
	}
}

/**
 * hbm_table_apply_gap() - apply many ranges at once, where the table has none
 * @t: the table
 * @r: the ranges, ascending and apart (each may touch the one before), each
 *	with its operation (HBM_OP_RETIRE or HBM_OP_PENDING) and the record
 *	its pages get (source, errors, first and last seen)
 * @n: how many
 * @res: what changed, added to
 *
 * A restore of 10^6 stored pages into an empty table: the same table as
 * hbm_table_apply() of each range in turn would make with those records
 * (the same merges, the same spares next-fit in the same order), built as
 * one run and written by one splice(), so O(n) rather than a search, a
 * build and a splice per range.  Only where no extent of the table lies
 * within the span of the ranges: those at its edges, touching, merge as
 * they would.  Past the table's last extent (a restore, request after
 * request) the run is written straight into the table's last leaf and new
 * ones, each extent once, with no splice.
 *
 * Return: 0; -EAGAIN when the ranges are not ascending and apart or the
 * table has extents within their span (apply them one by one); -EINVAL or
 * -ERANGE for a bad range, -ENOMEM.  On error the table is as it was.
 */
int hbm_table_apply_gap(struct hbm_table *t, const struct hbm_page_range *r, u32 n,
			struct hbm_result *res)
{
	struct op_ctx c = {
		.t = t, .failed_spare = HBM_NO_SPARE, .spare_hint = t->spare_hint,
	};
	struct hbm_leaf *last;
	struct pos lo, hi, p;
	u32 i, first, end;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		if (!r[i].nr || (r[i].op != HBM_OP_RETIRE && r[i].op != HBM_OP_PENDING))
			return -EINVAL;
		if (r[i].first >= t->nr_pages || r[i].nr > t->nr_pages - r[i].first)
			return -ERANGE;
		if (i && r[i].first < r[i - 1].first + r[i - 1].nr)
			return -EAGAIN;
		if (r[i].op == HBM_OP_RETIRE)	/* disjoint, in the table: no overflow */
			c.ahead += r[i].nr;
	}
	first = r[0].first;
	end = r[n - 1].first + r[n - 1].nr;
	last = t->nr_leaves ? t->leaves[t->nr_leaves - 1] : NULL;
	if (!last || ext_end(&last->ext[last->nr - 1]) <= first) {
		struct pos none = { 0, 0 };

		c.appending = true;
		c.append_leaves = t->nr_leaves;
		if (last) {
			c.append_last_nr = last->nr;
			c.append_last = last->ext[last->nr - 1];
			c.run = last->ext;
			c.run_nr = last->nr;
			c.run_cap = HBM_LEAF_CAP;
		}
		ranges_build(&c, r, n);
		return op_write(&c, none, none, res);
	}
	lo = first ? pos_end_above(t, first - 1) : pos_normalize(t, (struct pos){ 0, 0 });
	hi = pos_after(t, end);
	for (p = lo; !pos_equal(p, hi); p = pos_next(t, p)) {
		const struct hbm_extent *e = pos_ext(t, p);

		if (e->first < end && ext_end(e) > first)
			return -EAGAIN;
	}
	/* The touching neighbours, and the ranges between, as op_build() would. */
	for (p = lo; !pos_equal(p, hi) && pos_ext(t, p)->first < first; p = pos_next(t, p))
		emit(&c, pos_ext(t, p));
	ranges_build(&c, r, n);
	for (; !pos_equal(p, hi) && !c.err; p = pos_next(t, p))
		emit(&c, pos_ext(t, p));
	return op_write(&c, lo, hi, res);
}

struct spare_user {
	u32 spare;
	u32 page;	/* out: the page it serves, or HBM_NO_SPARE */
};

static void find_spare_user(const struct hbm_extent *e, void *arg)
{
	struct spare_user *u = arg;

	if (e->spare != HBM_NO_SPARE && u->spare - e->spare < e->nr)
		u->page = e->first + (u->spare - e->spare);
}

/**
 * hbm_table_spare_fail() - a spare went bad: take it out of the pool
 * @t: the table
 * @spare: the spare, below spare_total
 * @errors: errors to add to the record of the page it served
 * @now: seconds since the epoch
 * @res: what changed, added to: the page it served counts as retired when it
 *	moved to another spare, as failed when none was left
 * @page: out: the page it served, or HBM_NO_SPARE when it served none
 *
 * A spare failed already changes nothing.  The page a failed spare served
 * is found by a walk of the table: spares fail rarely, and a reverse index
 * would cost memory on every retirement.
 *
 * Return: 0, -ERANGE for a spare outside the pool, -ENOMEM, -EINVAL for a
 * table that is not consistent; on error nothing changed.
 */
int hbm_table_spare_fail(struct hbm_table *t, u32 spare, u16 errors, u32 now,
			 struct hbm_result *res, u32 *page)
{
	struct spare_user u = { .spare = spare, .page = HBM_NO_SPARE };
	int err;

	*page = HBM_NO_SPARE;
	if (spare >= t->spare_total)
		return -ERANGE;
	if (test_bit(spare, t->spare_bad_map))
		return 0;
	if (test_bit(spare, t->spare_map)) {
		hbm_table_walk(t, find_spare_user, &u);
		if (u.page == HBM_NO_SPARE)
			return -EINVAL;	/* in use, so an extent names it */
		err = table_apply(t, HBM_OP_RESPARE, u.page, 1, 0, errors, now,
				  spare, res);
		if (err)
			return err;
		t->spare_used--;
	}
	__set_bit(spare, t->spare_map);
	__set_bit(spare, t->spare_bad_map);
	t->spare_bad++;
	res->spares_failed++;
	*page = u.page;
	return 0;
}

int hbm_table_init(struct hbm_table *t, u32 nr_pages, u32 spare_total)
{
	memset(t, 0, sizeof(*t));
	if (!nr_pages)
		return -EINVAL;
	t->nr_pages = nr_pages;
	t->spare_total = spare_total;
	t->spare_map = hbm_zalloc(max_t(size_t, 1, BITS_TO_LONGS(spare_total)) *
				  sizeof(unsigned long));
	t->spare_bad_map = hbm_zalloc(max_t(size_t, 1, BITS_TO_LONGS(spare_total)) *
				      sizeof(unsigned long));
	if (!t->spare_map || !t->spare_bad_map) {
		hbm_free(t->spare_map);
		hbm_free(t->spare_bad_map);
		t->spare_map = NULL;
		t->spare_bad_map = NULL;
		return -ENOMEM;
	}
	t->bytes = 2 * BITS_TO_LONGS(spare_total) * sizeof(unsigned long);
	return 0;
}

void hbm_table_destroy(struct hbm_table *t)
{
	u32 i;

	for (i = 0; i < t->nr_leaves; i++)
		hbm_free(t->leaves[i]);
	hbm_free(t->leaves);
	hbm_free(t->keys);
	hbm_free(t->spare_map);
	hbm_free(t->spare_bad_map);
	memset(t, 0, sizeof(*t));
}
