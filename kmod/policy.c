// SPDX-License-Identifier: GPL-2.0
/*
 * Error policy of one device: what a reported error does to its table.
 *
 * An uncorrectable error or poison means the page has lost data and may lose
 * more: it is retired at once.  A correctable error means the page still
 * works; one in a while is noise, a stream of them predicts an uncorrectable
 * one.  Each page with correctable errors gets a leaky bucket: every error
 * adds one, the bucket drains one whole error every ce_window / ce_threshold
 * seconds, and the page is retired when the bucket holds ce_threshold.
 * Draining whole errors, not a fraction of one every second, is what lets a
 * burst of ce_threshold errors retire the page even when it straddles a
 * second boundary.  The defaults,
 * 50 in 24 hours, are rasdaemon's page-isolation defaults.  A bucket (rather
 * than a count in a fixed window) needs one timestamp per page and no timer,
 * and forgets old errors smoothly.
 *
 * Buckets are kept for up to HBM_CE_TRACKED_MAX (10^5) pages per device,
 * so that a storm over a failing stack or channel, whose errors the intake
 * coalesces per page up to the same number (intake.c), is counted without
 * loss too: every error and every bucket costs O(log n).  A bucket is an
 * entry of an unordered array, found by page through an open-addressed hash
 * (linear probing at a load of at most 1/2, removal by backward shift), and
 * placed in a min-heap by the time at which it will be empty,
 * last + level * window / threshold: the bucket that will be empty first
 * is the emptiest now, at any now, so the order holds as time passes and
 * changes only where a bucket changes (or the policy, which re-sorts them).
 * The arrays start at HBM_CE_TRACKED_MIN buckets and double when full, in
 * the caller's process context (the intake's worker, an ioctl: the core
 * never runs in atomic context); an empty bucket is reused first, since
 * forgetting it loses nothing.  At the bound, or when the memory cannot be
 * had, the emptiest bucket is dropped, as drivers/ras/cec.c drops from its
 * array of 512: a page that stops erring is forgotten first, a page that
 * errs fast is kept.  ce_evicted counts the buckets dropped, ce_forgotten
 * the errors they held (counted in ce_events, but no longer toward their
 * page's threshold), so an operator can see it.  A bucket takes 16 bytes,
 * its place in the heap 4 and in the hash 8 at most: some 3 MB at 10^5
 * pages (ce_bytes), kept until the device goes.  They are per device, not
 * module-wide as the intake's table, because they are grown only as a
 * device's pages err: what they take follows the HBM that fails (every one
 * of HBMGUARD_MAX_DEVICES devices with 10^5 pages erring at once would
 * take 780 MB).
 *
 * Errors in the spare area follow the same policy, page by page: device
 * page nr_pages + i is spare i, with a bucket of its own.  A spare that
 * would be retired fails instead: it leaves the pool, and a page it served
 * moves to another spare (table.c).  The errors count in ce_events and
 * ue_events like any others.
 *
 * Health follows the number of bad pages (any state, failed spares
 * included: both are HBM gone bad) against retire_limit, by default one page
 * per 100 MiB of HBM as amdgpu's bad_page_threshold: DEGRADED at 90%, RMA at
 * 100%.
 */
#include "core.h"

u32 hbm_default_retire_limit(u64 hbm_bytes)
{
	u64 limit = hbm_div_u64(hbm_bytes, 100ULL << 20);

	return limit ? (u32)min_t(u64, limit, 0xffffffffULL) : 1;
}

/* 0 or -EINVAL: whether @p can be the policy of a device of @nr_pages. */
int hbm_policy_check(const struct hbm_policy *p, u32 nr_pages)
{
	if (!p->ce_threshold || p->ce_threshold > HBM_CE_THRESHOLD_MAX)
		return -EINVAL;
	if (!p->ce_window || p->ce_window > HBM_CE_WINDOW_MAX)
		return -EINVAL;
	if (!p->retire_limit || p->retire_limit > nr_pages)
		return -EINVAL;
	return 0;
}

/* Whole errors drained from a bucket in @elapsed seconds. */
static u32 drained(const struct hbm_policy *p, u32 elapsed)
{
	if (elapsed >= p->ce_window)
		return 0xffffffff;
	return (u32)hbm_div_u64((u64)elapsed * p->ce_threshold, p->ce_window);
}

static u32 elapsed_since(const struct hbm_ce_entry *e, u32 now)
{
	return now > e->last ? now - e->last : 0;	/* a clock going back: none */
}

/* The bucket's level at @now: what it held, less what drained since. */
static u32 level_now(const struct hbm_policy *p, const struct hbm_ce_entry *e,
		     u32 now)
{
	u32 d = drained(p, elapsed_since(e, now));

	return d >= e->level ? 0 : e->level - d;
}

/*
 * Bring a bucket to @now: drain it, and move its reference time on by the
 * time the drained errors took, so a partly spent interval still counts.
 */
static void drain(const struct hbm_policy *p, struct hbm_ce_entry *e, u32 now)
{
	u32 d = drained(p, elapsed_since(e, now));

	if (d >= e->level) {
		e->level = 0;
		e->last = now;
	} else if (d) {
		e->level -= d;
		e->last += (u32)hbm_div_u64((u64)d * p->ce_window, p->ce_threshold);
	}
}

#define HBM_CE_NONE	0xffffffffU

/*
 * The heap's key: the time at which the bucket will be empty, times the
 * threshold, so that it is a whole number.  Below 2^49: last < 2^32 and
 * ce_threshold < 2^16; level < ce_threshold and ce_window < 2^25.
 */
static u64 ce_key(const struct hbm_core *c, const struct hbm_ce_entry *e)
{
	return (u64)e->last * c->policy.ce_threshold +
	       (u64)e->level * c->policy.ce_window;
}

static void heap_set(struct hbm_core *c, u32 pos, u32 i)
{
	c->ce_heap[pos] = i;
	c->ce[i].heap = pos;
}

static bool heap_less(const struct hbm_core *c, u32 a, u32 b)
{
	return ce_key(c, &c->ce[c->ce_heap[a]]) < ce_key(c, &c->ce[c->ce_heap[b]]);
}

static void heap_swap(struct hbm_core *c, u32 a, u32 b)
{
	u32 i = c->ce_heap[a];

	heap_set(c, a, c->ce_heap[b]);
	heap_set(c, b, i);
}

/* Sift the bucket at @pos down, below the buckets under it that are emptier. */
static void heap_down(struct hbm_core *c, u32 pos)
{
	for (;;) {
		u32 least = pos, child = 2 * pos + 1;

		if (child < c->ce_nr && heap_less(c, child, least))
			least = child;
		if (child + 1 < c->ce_nr && heap_less(c, child + 1, least))
			least = child + 1;
		if (least == pos)
			return;
		heap_swap(c, pos, least);
		pos = least;
	}
}

/* Sift the bucket at @pos up, then down, to its place. */
static void heap_fix(struct hbm_core *c, u32 pos)
{
	while (pos && heap_less(c, pos, (pos - 1) / 2)) {
		heap_swap(c, pos, (pos - 1) / 2);
		pos = (pos - 1) / 2;
	}
	heap_down(c, pos);
}

/* Where the hash starts looking for @page: hash_32()'s multiplier. */
static u32 ce_home(const struct hbm_core *c, u32 page)
{
	return (u32)(page * 0x61C88647U) >> (32 - c->ce_hash_bits);
}

/* The hash slot that holds @page, or the free one where it would go. */
static u32 ce_slot(const struct hbm_core *c, u32 page)
{
	u32 mask = (1U << c->ce_hash_bits) - 1, s = ce_home(c, page);

	while (c->ce_hash[s] && c->ce[c->ce_hash[s] - 1].page != page)
		s = (s + 1) & mask;
	return s;
}

/* The bucket of @page, or HBM_CE_NONE. */
static u32 ce_find(const struct hbm_core *c, u32 page)
{
	return c->ce_nr ? c->ce_hash[ce_slot(c, page)] - 1 : HBM_CE_NONE;
}

/*
 * Empty hash slot @s, moving back into it each later entry of its run that
 * may live there, so that no probe stops short of an entry (no tombstones).
 */
static void ce_unhash(struct hbm_core *c, u32 s)
{
	u32 mask = (1U << c->ce_hash_bits) - 1, j = s;

	for (;;) {
		u32 home;

		j = (j + 1) & mask;
		if (!c->ce_hash[j])
			break;
		home = ce_home(c, c->ce[c->ce_hash[j] - 1].page);
		/* Stays when its home lies cyclically in (s, j]. */
		if (s <= j ? s < home && home <= j : s < home || home <= j)
			continue;
		c->ce_hash[s] = c->ce_hash[j];
		s = j;
	}
	c->ce_hash[s] = 0;
}

/* Forget bucket @i; the last one takes its index. */
static void ce_remove(struct hbm_core *c, u32 i)
{
	u32 last = c->ce_nr - 1, pos = c->ce[i].heap;

	ce_unhash(c, ce_slot(c, c->ce[i].page));
	/* The heap's last bucket fills the hole at @pos... */
	heap_set(c, pos, c->ce_heap[last]);
	c->ce_nr--;
	/* ...and the array's last bucket the hole at @i. */
	if (i != last) {
		c->ce_hash[ce_slot(c, c->ce[last].page)] = i + 1;
		c->ce[i] = c->ce[last];
		c->ce_heap[c->ce[i].heap] = i;
	}
	if (pos < c->ce_nr)
		heap_fix(c, pos);
}

/* Forget the buckets of pages [first, first + nr): they left the CE path. */
static void ce_forget(struct hbm_core *c, u32 first, u32 nr)
{
	u32 i;

	if (nr < c->ce_nr) {	/* a page at a time, or a bucket: the fewer */
		for (; nr; first++, nr--) {
			i = ce_find(c, first);
			if (i != HBM_CE_NONE)
				ce_remove(c, i);
		}
		return;
	}
	for (i = c->ce_nr; i--;)	/* what moves into i was looked at */
		if (c->ce[i].page - first < nr)
			ce_remove(c, i);
}

/* Bytes of @cap buckets with their heap and a hash of 2^@bits slots. */
static size_t ce_size(u32 cap, u32 bits)
{
	return (size_t)cap * (sizeof(struct hbm_ce_entry) + sizeof(u32)) +
	       ((size_t)sizeof(u32) << bits);
}

/* Room for @cap buckets, those held kept; -ENOMEM changes nothing. */
static int ce_resize(struct hbm_core *c, u32 cap)
{
	u32 bits = 1, i;
	void *block;

	while (1U << bits < 2 * cap)	/* a load of 1/2 at most */
		bits++;
	block = hbm_alloc(ce_size(cap, bits));
	if (!block)
		return -ENOMEM;
	if (c->ce_nr) {
		memcpy(block, c->ce, c->ce_nr * sizeof(*c->ce));
		memcpy((struct hbm_ce_entry *)block + cap, c->ce_heap,
		       c->ce_nr * sizeof(u32));
	}
	hbm_free(c->ce);
	c->ce = block;
	c->ce_heap = (u32 *)(c->ce + cap);
	c->ce_hash = c->ce_heap + cap;
	memset(c->ce_hash, 0, sizeof(u32) << bits);
	c->ce_cap = cap;
	c->ce_hash_bits = bits;
	c->ce_bytes = ce_size(cap, bits);
	for (i = 0; i < c->ce_nr; i++)
		c->ce_hash[ce_slot(c, c->ce[i].page)] = i + 1;
	return 0;
}

/*
 * Room for one more bucket: an empty one reused, the arrays doubled, or at
 * the bound (or without the memory) the emptiest dropped and counted.
 */
static void ce_make_room(struct hbm_core *c, u32 now)
{
	u32 top = c->ce_heap[0], level = level_now(&c->policy, &c->ce[top], now);

	if (level && c->ce_cap < HBM_CE_TRACKED_MAX &&
	    !ce_resize(c, min_t(u32, 2 * c->ce_cap, HBM_CE_TRACKED_MAX)))
		return;
	if (level) {
		c->ce_evicted++;
		c->ce_forgotten += level;
	}
	ce_remove(c, top);
}

/*
 * Add @count errors to @page's bucket; true when the page must be retired,
 * with the errors the bucket then holds in *@held.
 */
static bool ce_add(struct hbm_core *c, u32 page, u32 count, u32 now, u32 *held)
{
	u32 i = ce_find(c, page);
	struct hbm_ce_entry *e;
	u64 level;

	if (i == HBM_CE_NONE) {
		if (c->ce_nr == c->ce_cap)
			ce_make_room(c, now);
		i = c->ce_nr++;
		c->ce[i] = (struct hbm_ce_entry){ .page = page, .last = now };
		c->ce_hash[ce_slot(c, page)] = i + 1;
		heap_set(c, i, i);
	}
	e = &c->ce[i];
	drain(&c->policy, e, now);
	level = (u64)e->level + count;
	if (level >= c->policy.ce_threshold) {
		*held = (u32)min_t(u64, level, 0xffff);
		heap_fix(c, e->heap);	/* drained; the caller forgets it once retired */
		return true;
	}
	e->level = (u32)level;
	heap_fix(c, e->heap);
	return false;
}

/**
 * hbm_core_set_policy() - change a device's policy
 * @c: the device core
 * @p: the new policy, valid (hbm_policy_check())
 *
 * Buckets keep their errors; their order is made again for the new rate of
 * draining (O(n)), and health for the new limit.
 */
void hbm_core_set_policy(struct hbm_core *c, const struct hbm_policy *p)
{
	u32 i;

	c->policy = *p;
	/*
	 * Bottom up, each bucket sifted down only: the buckets under it are
	 * in order already, those above it not yet.  Sifted up first, as
	 * heap_fix() does, it would swap with a parent not in order yet and
	 * leave that parent's bucket below, never compared with its children.
	 */
	for (i = c->ce_nr / 2; i--;)
		heap_down(c, i);
	c->health = hbm_core_health(c);
}

/**
 * hbm_ce_level() - errors in a page's correctable-error bucket
 * @c: the device core
 * @page: the page
 * @now: seconds since the epoch
 *
 * Return: whole errors the bucket holds at @now, 0 for an untracked page.
 */
u32 hbm_ce_level(const struct hbm_core *c, u32 page, u32 now)
{
	u32 i = ce_find(c, page);

	return i == HBM_CE_NONE ? 0 : level_now(&c->policy, &c->ce[i], now);
}

/* Severity of each health, for the worse of two: RESET_REQUIRED came last. */
static u32 health_rank(u32 health)
{
	static const u8 rank[] = {
		[HBMGUARD_HEALTH_OK] = 0, [HBMGUARD_HEALTH_DEGRADED] = 1,
		[HBMGUARD_HEALTH_RESET_REQUIRED] = 2, [HBMGUARD_HEALTH_RMA] = 3,
	};

	return health < sizeof(rank) ? rank[health] : 0;
}

/*
 * The table's health, or the driver's (a GPU device's facts: a remap pending
 * needs a reset, a failed one an RMA) when that is worse.
 */
u32 hbm_core_health(const struct hbm_core *c)
{
	u64 bad = (u64)hbm_table_bad_pages(&c->table) + c->table.spare_bad;
	u64 limit = c->policy.retire_limit;
	u32 health = HBMGUARD_HEALTH_OK;

	if (bad >= limit)
		health = HBMGUARD_HEALTH_RMA;
	else if (bad * 10 >= limit * 9)
		health = HBMGUARD_HEALTH_DEGRADED;
	if (health_rank(c->driver_health) > health_rank(health))
		health = c->driver_health;
	return health;
}

/**
 * hbm_core_apply() - change the table directly (operator, restore)
 * @c: the device core
 * @op: what to do with the range
 * @first: first page
 * @nr: pages
 * @source: enum hbmguard_source recorded for new pages (and as
 *	hbm_table_apply() says)
 * @now: seconds since the epoch
 * @res: what changed, added to
 *
 * Pages that leave the correctable-error path lose their buckets.
 *
 * Return: as hbm_table_apply(); on error nothing changed.
 */
int hbm_core_apply(struct hbm_core *c, enum hbm_op op, u32 first, u32 nr,
		   u8 source, u32 now, struct hbm_result *res)
{
	int err = hbm_table_apply(&c->table, op, first, nr, source, 0, now, res);

	if (!err && op != HBM_OP_CLEAR)
		ce_forget(c, first, nr);
	if (!err)
		c->health = hbm_core_health(c);
	return err;
}

/**
 * hbm_core_restore() - pages known bad from before, each with its record
 * @c: the device core
 * @r: the ranges, each inside the device and not empty, with the source,
 *	times and errors their pages get
 * @n: how many
 * @now: seconds since the epoch
 * @res: what changed, added to
 * @done: out: the ranges applied
 *
 * At once where it can be (hbm_table_apply_gap(): ascending ranges where
 * the table has none, as a restore after a module load brings them): O(n),
 * not O(n log n) with a splice per range.  Otherwise range by range: into
 * its own gap where the table has none of its pages, its record kept (a
 * page retired since the module loaded, lying between two ranges, must not
 * cost the others their times and errors); else as hbm_core_apply(), with
 * its source (pages the table has keep their record, but for a UE or poison
 * over a pending or failed page: hbm_table_apply(); new ones are seen @now,
 * as is a range whose gap could not be allocated: retired without its
 * record rather than not at all).
 *
 * Return: 0, or the first range's error; the ranges before it (*@done)
 * stay applied.
 */
int hbm_core_restore(struct hbm_core *c, const struct hbm_page_range *r, u32 n,
		     u32 now, struct hbm_result *res, u32 *done)
{
	int err = hbm_table_apply_gap(&c->table, r, n, res);
	u32 i;

	if (!err) {
		for (i = 0; i < n && c->ce_nr; i++)	/* none after a module load */
			ce_forget(c, r[i].first, r[i].nr);
		c->health = hbm_core_health(c);
		*done = n;
		return 0;
	}
	/*
	 * Not in one gap, or too large a run to allocate: one by one, each
	 * O(log n) to O(n) (a range over much of a large table): a CPU given
	 * up between them, as a request holds 16384.
	 */
	for (i = 0; i < n; i++) {
		hbm_cond_resched();
		err = hbm_table_apply_gap(&c->table, &r[i], 1, res);
		if (!err)
			ce_forget(c, r[i].first, r[i].nr);
		else if (err == -EAGAIN || err == -ENOMEM)
			err = hbm_core_apply(c, r[i].op, r[i].first, r[i].nr,
					     r[i].source, now, res);
		if (err)
			break;
	}
	c->health = hbm_core_health(c);
	*done = i;
	return err;
}

/* An error in spare @spare: see hbm_core_report(). */
static int spare_report(struct hbm_core *c, u32 spare, u32 kind, u32 count,
			u32 now, struct hbm_result *res, u32 *served)
{
	u32 page = c->table.nr_pages + spare, errors = count;
	int err;

	*served = HBM_NO_SPARE;
	if (test_bit(spare, c->table.spare_bad_map)) {
		/* Out of the pool already: counted, nothing more to do. */
	} else if (kind == HBMGUARD_ERROR_CE &&
		   !ce_add(c, page, count, now, &errors)) {
		/* Below the threshold: the bucket holds it. */
	} else {
		err = hbm_table_spare_fail(&c->table, spare, errors, now, res,
					   served);
		if (err)
			return err;
		ce_forget(c, page, 1);
		c->health = hbm_core_health(c);
	}
	if (kind == HBMGUARD_ERROR_CE)
		c->ce_events += count;
	else
		c->ue_events++;
	return 0;
}

/**
 * hbm_core_report() - apply the policy to errors reported at one page
 * @c: the device core
 * @page: the page: below nr_pages a usable page, above it spare
 *	@page - nr_pages
 * @kind: enum hbmguard_error_kind
 * @count: errors (CE); 1 for the others
 * @now: seconds since the epoch
 * @res: what changed, added to
 * @served: out: the usable page whose data lives in @page (@page itself, or
 *	for a failed spare the page it served, or HBM_NO_SPARE for none)
 *
 * Return: 0, -EINVAL for a bad @kind or @count, -ERANGE for a page outside
 * the device, -ENOMEM.  On error nothing changed.
 */
int hbm_core_report(struct hbm_core *c, u32 page, u32 kind, u32 count,
		    u32 now, struct hbm_result *res, u32 *served)
{
	u32 errors = count;
	enum hbm_op op;
	u8 source;
	int err;

	*served = HBM_NO_SPARE;
	if (page >= c->table.nr_pages &&
	    page - c->table.nr_pages >= c->table.spare_total)
		return -ERANGE;
	if (!count || count > 0xffff ||
	    !kind || kind >= __HBMGUARD_ERROR_MAX ||
	    (kind != HBMGUARD_ERROR_CE && count != 1))
		return -EINVAL;
	if (page >= c->table.nr_pages)
		return spare_report(c, page - c->table.nr_pages, kind, count,
				    now, res, served);
	*served = page;

	switch (kind) {
	case HBMGUARD_ERROR_CE:
		/* A page already in the table only counts the errors. */
		if (hbm_table_count(&c->table, page, count, now)) {
			c->ce_events += count;
			ce_forget(c, page, 1);
			return 0;
		}
		if (ce_add(c, page, count, now, &errors)) {
			op = HBM_OP_RETIRE;
			source = HBMGUARD_SOURCE_CE_THRESHOLD;
		} else {
			c->ce_events += count;
			return 0;
		}
		break;
	case HBMGUARD_ERROR_UE:
		op = HBM_OP_RETIRE;
		source = HBMGUARD_SOURCE_UE;
		break;
	case HBMGUARD_ERROR_POISON:
		op = HBM_OP_RETIRE;
		source = HBMGUARD_SOURCE_POISON;
		break;
	default:
		return -EINVAL;
	}

	/* On -ENOMEM the bucket keeps its level: the next error retries. */
	err = hbm_table_apply(&c->table, op, page, 1, source, errors, now, res);
	if (err)
		return err;
	if (kind == HBMGUARD_ERROR_CE)
		c->ce_events += count;
	else
		c->ue_events++;
	ce_forget(c, page, 1);
	c->health = hbm_core_health(c);
	return 0;
}

int hbm_core_init(struct hbm_core *c, u32 nr_pages, u32 spare_total,
		  u32 page_size)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->defaults.ce_threshold = 50;
	c->defaults.ce_window = 86400;
	c->defaults.retire_limit = min(nr_pages, hbm_default_retire_limit(
		((u64)nr_pages + spare_total) * page_size));
	c->policy = c->defaults;
	err = ce_resize(c, HBM_CE_TRACKED_MIN);
	if (err)
		return err;
	err = hbm_table_init(&c->table, nr_pages, spare_total);
	if (err) {
		hbm_free(c->ce);
		c->ce = NULL;
	}
	return err;
}

void hbm_core_destroy(struct hbm_core *c)
{
	hbm_table_destroy(&c->table);
	hbm_free(c->ce);
	c->ce = NULL;
}
