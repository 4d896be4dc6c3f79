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
 * Buckets are kept for a bounded number of pages per device, sorted by page
 * for binary search, as drivers/ras/cec.c keeps its array of 512.  When all
 * are in use the emptiest bucket is dropped: a page that stops erring is
 * forgotten first, a page that errs fast is kept.  A machine whose errors
 * spread over more pages than that, faster than the threshold rate, loses
 * buckets; ce_evicted counts them so an operator can see it.
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

/* Index of the first bucket at or above @page. */
static u32 ce_search(const struct hbm_core *c, u32 page)
{
	u32 lo = 0, hi = c->ce_nr;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (c->ce[mid].page < page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ce_remove(struct hbm_core *c, u32 i)
{
	memmove(&c->ce[i], &c->ce[i + 1], (c->ce_nr - i - 1) * sizeof(*c->ce));
	c->ce_nr--;
}

/* Forget the buckets of pages [first, first + nr): they left the CE path. */
static void ce_forget(struct hbm_core *c, u32 first, u32 nr)
{
	u32 i = ce_search(c, first), j = i;

	while (j < c->ce_nr && c->ce[j].page - first < nr)
		j++;
	memmove(&c->ce[i], &c->ce[j], (c->ce_nr - j) * sizeof(*c->ce));
	c->ce_nr -= j - i;
}

static void ce_evict_emptiest(struct hbm_core *c, u32 now)
{
	u32 i, victim = 0, lowest = 0xffffffff;

	for (i = 0; i < c->ce_nr; i++) {
		u32 level = level_now(&c->policy, &c->ce[i], now);

		if (level < lowest) {
			lowest = level;
			victim = i;
		}
	}
	ce_remove(c, victim);
	c->ce_evicted++;
}

/*
 * Add @count errors to @page's bucket; true when the page must be retired,
 * with the errors the bucket then holds in *@held.
 */
static bool ce_add(struct hbm_core *c, u32 page, u32 count, u32 now, u32 *held)
{
	u32 i = ce_search(c, page);
	u64 level;

	if (i == c->ce_nr || c->ce[i].page != page) {
		if (c->ce_nr == HBM_CE_TRACKED) {
			ce_evict_emptiest(c, now);
			i = ce_search(c, page);
		}
		memmove(&c->ce[i + 1], &c->ce[i], (c->ce_nr - i) * sizeof(*c->ce));
		c->ce[i] = (struct hbm_ce_entry){ .page = page, .last = now };
		c->ce_nr++;
	}
	drain(&c->policy, &c->ce[i], now);
	level = (u64)c->ce[i].level + count;
	if (level >= c->policy.ce_threshold) {
		*held = (u32)min_t(u64, level, 0xffff);
		return true;	/* the caller forgets the bucket once retired */
	}
	c->ce[i].level = (u32)level;
	return false;
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
	u32 i = ce_search(c, page);

	if (i == c->ce_nr || c->ce[i].page != page)
		return 0;
	return level_now(&c->policy, &c->ce[i], now);
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
 * @source: enum hbmguard_source recorded for new pages
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
 * not O(n log n) with a splice per range.  Otherwise as hbm_core_apply() of
 * each range in turn, with its source (pages the table has keep their
 * record, new ones are seen @now).
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
		for (i = 0; i < n; i++)
			ce_forget(c, r[i].first, r[i].nr);
		c->health = hbm_core_health(c);
		*done = n;
		return 0;
	}
	/* Not in one gap, or too large a run to allocate: one by one. */
	for (i = 0; i < n; i++) {
		err = hbm_core_apply(c, r[i].op, r[i].first, r[i].nr, r[i].source,
				     now, res);
		if (err)
			break;
	}
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
	c->ce = hbm_alloc(HBM_CE_TRACKED * sizeof(*c->ce));
	if (!c->ce)
		return -ENOMEM;
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
