// SPDX-License-Identifier: GPL-2.0
/*
 * Intake: errors reported from contexts that cannot sleep.
 *
 * A tracepoint probe, a GPU driver's interrupt handler or an EDAC driver
 * (ras:mc_event, from its interrupt or an irq_work of GHES) may run in
 * atomic context; the provider API is callable from any context but NMI.
 * Applying an error to a table takes the device's mutex and may allocate,
 * and every event is made in process context (events.c).  So reports, and
 * device errors without an address (HBM_INTAKE_DEVICE_ERROR), are queued
 * under an IRQ-safe spinlock and a worker applies them in process context.
 * A reporter never allocates and never blocks.  The lock is a raw one, as
 * are those the reporters take before it (device.c's ranges, nvidia.c's
 * Xids): tracepoint probes run with preemption disabled (__DO_TRACE(),
 * include/linux/tracepoint.h, 6.1 and 6.12), where a PREEMPT_RT kernel
 * (Debian ships -rt flavours) may not take a spinlock_t, which it makes a
 * sleeping lock; each section is short and bounded (below).
 *
 * A failing row makes thousands of correctable errors a second on the same
 * few pages, and a failing stack or channel errs on many thousands of
 * pages.  Every one of them counts toward its page's threshold: a CE lost
 * is an undercount that can keep a failing page in service.  So correctable
 * errors are coalesced per page: a table of pending counts keyed by
 * device, page, kind and path, where a repeat only adds to a count.  It
 * holds HBM_CE_PAGES_MAX (10^5) distinct pages of correctable errors at
 * once without loss however slowly the worker drains it, and the worker
 * takes a page's whole count at once (the policy then keeps a bucket for
 * as many pages per device without loss: policy.c).  Uncorrectable errors
 * and poison wait in the same table, up to HBM_UE_PAGES_MAX (16384) pages
 * of their own that correctable ones never take: a driver replaying its
 * list of bad pages, or a failing stack, reports thousands at once, faster
 * than the worker retires them, and a queue of single reports would drop
 * the rest.  They are not added up: the core takes one a report
 * (hbm_core_report()), so one pending on its page already is queued as a
 * report of its own.  The worker takes them before correctable errors.
 * The table is module-wide, allocated once at load: what bounds the
 * pending pages is how fast errors come, not how many devices there are,
 * and a table per device (up to HBMGUARD_MAX_DEVICES) sized for a storm
 * would cost 256 times the memory to hold the same storm.
 *
 * The table is open-addressed with linear probing over HBM_PENDING_SLOTS
 * slots of 16 bytes and a bit per slot and class (3 MiB and 48 KiB,
 * kvmalloc'd at load), 0.59 full at most (116384 of 196608): a probe then
 * looks at 3.5 slots on average for a new page, 1.7 for a repeat, and the
 * longest runs stay in the tens of slots, which bounds the time a reporter
 * holds the lock with interrupts off.  Entries leave by backward shift,
 * never by tombstone, so the table does not decay under churn.  A slot's
 * count is 24 bits: a repeat that would overflow it is not merged but
 * queued as a report of its own, like an error that finds its class full.
 *
 * Device errors, and errors beyond the table, go into a ring of
 * HBM_INTAKE_SLOTS reports.  Correctable errors and device errors that
 * lost no data may use all but the last HBM_UE_RESERVE of it, uncorrectable
 * errors all but the last HBM_LOST_RESERVE, which device errors that lost
 * data (an Xid 48, 94, 95...) may use: a storm of correctable errors never
 * costs an uncorrectable one, and neither a storm of those (a UE repeated
 * on its pages faster than the worker retires them) nor one of correctable
 * errors costs an Xid that lost data.  What does not fit is dropped and
 * counted, per intake path (HBMGUARD_CMD_STATS_GET: reports) and per
 * device (errors: the device's HBMGUARD_A_ERRORS_DROPPED, GET_DEVICE's
 * errors_dropped), as are reports the worker could not apply.
 *
 * The worker takes batches of HBM_BATCH (half from the ring, the rest from
 * the table, its uncorrectable errors first, so that nothing starves),
 * sweeping each class of the table in slot order from where it stopped: a
 * page added behind a sweep waits at most one turn.  The slots' bits find
 * the next one in a word a time, so that a sparse table costs a reporter
 * waiting on the lock little (a whole turn is 3072 words).  The lock is
 * dropped and cond_resched() called between batches, and after
 * HBM_RUN_BATCHES the worker queues itself again rather than loop on: a
 * flush of hbm_wq (a claim waiting for the frames of a range given back,
 * aperture.c) waits for the work queued before it, not for a storm's end
 * (flush_workqueue() is not livelocked by work queued after it,
 * kernel/workqueue.c, 6.1 and 6.12; one that never returns would be).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "hbm.h"

#define HBM_INTAKE_SLOTS	4096
#define HBM_UE_RESERVE		256
#define HBM_LOST_RESERVE	64
#define HBM_CE_PAGES_MAX	100000
#define HBM_UE_PAGES_MAX	16384
#define HBM_PENDING_SLOTS	(3 << 16)
#define HBM_COUNT_MAX		((1U << 24) - 1)
#define HBM_BATCH		32
#define HBM_RUN_BATCHES		64

struct hbm_report {
	struct hbm_device *dev;		/* holds a reference */
	u64 offset;
	u32 kind;
	u32 count;
	u32 path;
};

/* Errors of one kind pending on one page. */
struct hbm_pending {
	struct hbm_device *dev;		/* holds a reference; NULL: free */
	u32 page;
	u32 count : 24;
	u32 path : 4;
	u32 kind : 4;
};

/* The table's entries of one class: uncorrectable (UE, poison), or CE. */
struct hbm_pending_class {
	unsigned long *used;	/* a bit per slot holding one: the sweep's index */
	u32 nr, max, sweep;
};

enum { CLASS_UE, CLASS_CE, NR_CLASSES };

static struct hbm_report hbm_intake[HBM_INTAKE_SLOTS];
static struct hbm_pending *hbm_pending;	/* HBM_PENDING_SLOTS */
static struct hbm_pending_class hbm_class[NR_CLASSES] = {
	[CLASS_UE] = { .max = HBM_UE_PAGES_MAX },
	[CLASS_CE] = { .max = HBM_CE_PAGES_MAX },
};
static u32 hbm_intake_head, hbm_intake_tail;	/* free-running */
static DEFINE_RAW_SPINLOCK(hbm_intake_lock);
static atomic64_t hbm_received[__HBMGUARD_PATH_MAX];
static atomic64_t hbm_dropped[__HBMGUARD_PATH_MAX];
/* Reports queued, under the lock: no atomic of its own in a storm. */
static u64 hbm_queued[__HBMGUARD_PATH_MAX];

static void hbm_intake_drain(struct work_struct *work);
static DECLARE_WORK(hbm_intake_work, hbm_intake_drain);

void hbm_path_stats(u32 path, u64 *received, u64 *dropped)
{
	*received = atomic64_read(&hbm_received[path]) + READ_ONCE(hbm_queued[path]);
	*dropped = atomic64_read(&hbm_dropped[path]);
}

void hbm_path_count(u32 path, bool dropped)
{
	atomic64_inc(dropped ? &hbm_dropped[path] : &hbm_received[path]);
}

/* @count errors of @dev that will never be applied. */
static void intake_dropped(struct hbm_device *dev, u32 path, u32 count)
{
	hbm_path_count(path, true);
	atomic64_add(count, &dev->errors_dropped);
}

static bool is_device_error(u32 kind)
{
	return kind == HBM_INTAKE_DEVICE_ERROR || kind == HBM_INTAKE_DATA_LOST;
}

static struct hbm_pending_class *class_of(u32 kind)
{
	return &hbm_class[kind == HBMGUARD_ERROR_CE ? CLASS_CE : CLASS_UE];
}

static bool intake_idle(void)
{
	return !hbm_class[CLASS_UE].nr && !hbm_class[CLASS_CE].nr &&
	       hbm_intake_head == hbm_intake_tail;
}

/* The ring's slots a report of @kind may fill (the top of this file). */
static u32 ring_room(u32 kind)
{
	if (kind == HBM_INTAKE_DATA_LOST)
		return HBM_INTAKE_SLOTS;
	if (kind == HBMGUARD_ERROR_CE || kind == HBM_INTAKE_DEVICE_ERROR)
		return HBM_INTAKE_SLOTS - HBM_UE_RESERVE;
	return HBM_INTAKE_SLOTS - HBM_LOST_RESERVE;
}

static u32 pending_home(const struct hbm_device *dev, u32 page)
{
	u64 key = (unsigned long)dev ^ ((u64)page << 32 | page);

	return reciprocal_scale(hash_64(key, 32), HBM_PENDING_SLOTS);
}

static u32 pending_next(u32 i)
{
	return i + 1 == HBM_PENDING_SLOTS ? 0 : i + 1;
}

/* Add errors to a page's pending count; false when they do not fit. */
static bool pending_add(struct hbm_device *dev, u32 page, u32 kind, u32 count, u32 path)
{
	struct hbm_pending_class *c = class_of(kind);
	u32 i;

	for (i = pending_home(dev, page); hbm_pending[i].dev; i = pending_next(i)) {
		struct hbm_pending *s = &hbm_pending[i];

		if (s->dev != dev || s->page != page || s->kind != kind || s->path != path)
			continue;
		/*
		 * Queued on its own instead: a count past 24 bits, or an
		 * uncorrectable error, of which the core takes one a report.
		 */
		if (kind != HBMGUARD_ERROR_CE || count > HBM_COUNT_MAX - s->count)
			return false;
		s->count += count;
		return true;
	}
	if (c->nr == c->max)
		return false;
	kref_get(&dev->ref);
	hbm_pending[i] = (struct hbm_pending){
		.dev = dev, .page = page, .count = count, .path = path, .kind = kind,
	};
	__set_bit(i, c->used);
	c->nr++;
	return true;
}

/*
 * Empty slot @i, moving back into it each later entry of its run that may
 * live there, so that no probe stops short of an entry (no tombstones).
 */
static void pending_remove(u32 i)
{
	struct hbm_pending_class *c = class_of(hbm_pending[i].kind);
	u32 j = i;

	__clear_bit(i, c->used);
	c->nr--;
	for (;;) {
		struct hbm_pending *s;
		u32 home;

		j = pending_next(j);
		s = &hbm_pending[j];
		if (!s->dev)
			break;
		home = pending_home(s->dev, s->page);
		/* Stays when its home lies cyclically in (i, j]. */
		if (i <= j ? i < home && home <= j : i < home || home <= j)
			continue;
		c = class_of(s->kind);
		__clear_bit(j, c->used);
		__set_bit(i, c->used);
		hbm_pending[i] = *s;
		i = j;
	}
	hbm_pending[i].dev = NULL;
}

/**
 * hbm_report_async() - queue an error for a device, from any context but NMI
 * @dev: the device; the queue takes its own reference
 * @offset: byte offset in the device
 * @kind: enum hbmguard_error_kind, or HBM_INTAKE_DEVICE_ERROR or
 *	HBM_INTAKE_DATA_LOST (@offset: the device error's code)
 * @count: errors, 1..65535
 * @path: enum hbmguard_path it came by
 *
 * Return: 0, -ERANGE for an error outside the device, or -ENOSPC when the
 * queue had no room; either is counted as dropped.
 */
int hbm_report_async(struct hbm_device *dev, u64 offset, u32 kind, u32 count,
		     u32 path)
{
	unsigned long flags;
	bool was_empty;

	if (!is_device_error(kind) && offset >= dev->hbm_size) {
		hbm_path_count(path, false);
		intake_dropped(dev, path, count);
		return -ERANGE;
	}
	raw_spin_lock_irqsave(&hbm_intake_lock, flags);
	WRITE_ONCE(hbm_queued[path], hbm_queued[path] + 1);
	was_empty = intake_idle();
	if (!is_device_error(kind) &&
	    pending_add(dev, offset >> dev->page_shift, kind, count, path))
		goto queued;
	if (hbm_intake_tail - hbm_intake_head >= ring_room(kind)) {
		raw_spin_unlock_irqrestore(&hbm_intake_lock, flags);
		intake_dropped(dev, path, count);
		return -ENOSPC;
	}
	kref_get(&dev->ref);
	hbm_intake[hbm_intake_tail++ % HBM_INTAKE_SLOTS] = (struct hbm_report){
		.dev = dev, .offset = offset, .kind = kind, .count = count,
		.path = path,
	};
queued:
	raw_spin_unlock_irqrestore(&hbm_intake_lock, flags);
	/*
	 * The worker stops only on finding the queue empty under the lock: a
	 * report added to a queue that was not is one it will take.
	 */
	if (was_empty)
		queue_work(hbm_wq, &hbm_intake_work);
	return 0;
}

static u32 ring_take(struct hbm_report *batch, u32 n, u32 max)
{
	while (n < max && hbm_intake_head != hbm_intake_tail)
		batch[n++] = hbm_intake[hbm_intake_head++ % HBM_INTAKE_SLOTS];
	return n;
}

/* Pending pages of class @c from where its last sweep stopped, up to @max in all. */
static u32 pending_take(struct hbm_pending_class *c, struct hbm_report *batch, u32 n,
			u32 max)
{
	while (n < max && c->nr) {
		struct hbm_pending *s;

		c->sweep = find_next_bit(c->used, HBM_PENDING_SLOTS, c->sweep);
		if (c->sweep == HBM_PENDING_SLOTS)
			c->sweep = find_first_bit(c->used, HBM_PENDING_SLOTS);
		s = &hbm_pending[c->sweep];
		batch[n++] = (struct hbm_report){
			.dev = s->dev, .offset = (u64)s->page << s->dev->page_shift,
			.kind = s->kind, .count = s->count, .path = s->path,
		};
		/* What moves into the slot is looked at next: the sweep stays. */
		pending_remove(c->sweep);
	}
	return n;
}

/*
 * Up to @max reports: half of them from the ring, then pending pages, their
 * uncorrectable errors first, then the ring again; lock held.
 */
static u32 intake_take(struct hbm_report *batch, u32 max)
{
	u32 n = ring_take(batch, 0, max / 2);

	n = pending_take(&hbm_class[CLASS_UE], batch, n, max);
	n = pending_take(&hbm_class[CLASS_CE], batch, n, max);
	return ring_take(batch, n, max);
}

static bool intake_empty(void)
{
	unsigned long flags;
	bool empty;

	raw_spin_lock_irqsave(&hbm_intake_lock, flags);
	empty = intake_idle();
	raw_spin_unlock_irqrestore(&hbm_intake_lock, flags);
	return empty;
}

/* Apply one report; a page's pending count may exceed what one report holds. */
static void intake_apply(struct hbm_report *r)
{
	u32 left = r->count;

	if (is_device_error(r->kind)) {
		hbm_device_error_event(r->dev, r->offset, r->path);
		return;
	}
	while (left) {
		u32 n = min_t(u32, left, 0xffff);

		if (hbm_device_report(r->dev, r->offset, r->kind, n, r->path)) {
			intake_dropped(r->dev, r->path, left);
			return;
		}
		left -= n;
	}
}

static void hbm_intake_drain(struct work_struct *work)
{
	struct hbm_report batch[HBM_BATCH];
	unsigned long flags;
	u32 n, i, batches;

	for (batches = 0; batches < HBM_RUN_BATCHES; batches++) {
		raw_spin_lock_irqsave(&hbm_intake_lock, flags);
		n = intake_take(batch, ARRAY_SIZE(batch));
		raw_spin_unlock_irqrestore(&hbm_intake_lock, flags);
		if (!n)
			return;	/* empty: the next report queues the work again */

		for (i = 0; i < n; i++) {
			intake_apply(&batch[i]);
			hbm_device_put(batch[i].dev);
		}
		cond_resched();
	}
	/* Not emptied: on in a run of its own (the top of this file). */
	queue_work(hbm_wq, &hbm_intake_work);
}

/*
 * Apply everything queued so far; for unload and for tests.  A run that
 * queued the next (hbm_intake_drain()) may have emptied the queue and be
 * applying its batch still: done only once no run was pending or running.
 */
void hbm_intake_flush(void)
{
	while (flush_work(&hbm_intake_work) || !intake_empty())
		;
}

/**
 * hbm_intake_init() - allocate the table of pending errors
 *
 * Return: 0 or -ENOMEM.
 */
int hbm_intake_init(void)
{
	size_t table = HBM_PENDING_SLOTS * sizeof(*hbm_pending);
	size_t map = BITS_TO_LONGS(HBM_PENDING_SLOTS) * sizeof(long);

	/* The memory and the load factor the top of this file states. */
	BUILD_BUG_ON(sizeof(struct hbm_pending) != 16);
	BUILD_BUG_ON(__HBMGUARD_PATH_MAX > 16 || __HBMGUARD_ERROR_MAX > 16);
	BUILD_BUG_ON(100ULL * (HBM_CE_PAGES_MAX + HBM_UE_PAGES_MAX) >
		     60ULL * HBM_PENDING_SLOTS);
	hbm_pending = hbm_zalloc(table + NR_CLASSES * map);
	if (!hbm_pending)
		return -ENOMEM;
	hbm_class[CLASS_UE].used = (unsigned long *)(hbm_pending + HBM_PENDING_SLOTS);
	hbm_class[CLASS_CE].used = (void *)hbm_class[CLASS_UE].used + map;
	pr_info("intake: %zu bytes for %u pages of correctable errors, %u of others, and %u reports\n",
		table + NR_CLASSES * map + sizeof(hbm_intake), HBM_CE_PAGES_MAX,
		HBM_UE_PAGES_MAX, HBM_INTAKE_SLOTS);
	return 0;
}

/* After every reporter is gone and the queue is flushed. */
void hbm_intake_exit(void)
{
	hbm_free(hbm_pending);
	hbm_pending = NULL;
}
