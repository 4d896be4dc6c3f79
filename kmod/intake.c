// SPDX-License-Identifier: GPL-2.0
/*
 * Intake: errors reported from contexts that cannot sleep.
 *
 * A tracepoint probe, a GPU driver's interrupt handler or the NVIDIA error
 * callback may run in atomic context, but applying an error to a table takes
 * the device's mutex and may allocate, and every event is made in process
 * context (events.c).  Such reports, and device errors without an address
 * (HBM_INTAKE_DEVICE_ERROR), go into a fixed ring under an IRQ-safe spinlock
 * and a worker applies them in process context.
 *
 * The ring never allocates and never blocks a reporter.  A storm of
 * correctable errors must not push out an uncorrectable one, and a failing
 * row makes thousands a second on the same few pages.  So correctable errors
 * first go to a small open-addressed table of pending counts keyed by device
 * and offset, where a repeat only adds to a count; only when their probe
 * finds no room do they take a ring slot, and of the ring only all but its
 * last HBM_UE_RESERVE slots.  What does not fit is counted as dropped per
 * path (HBMGUARD_CMD_STATS_GET).
 */
#include <linux/hash.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "hbm.h"

#define HBM_INTAKE_SLOTS	4096
#define HBM_UE_RESERVE		256

struct hbm_report {
	struct hbm_device *dev;		/* holds a reference */
	u64 offset;
	u32 kind;
	u32 count;
	u32 path;
};

#define HBM_CE_PENDING		1024	/* a power of two */
#define HBM_CE_PROBE		8

static struct hbm_report hbm_intake[HBM_INTAKE_SLOTS];
static struct hbm_report hbm_ce_pending[HBM_CE_PENDING];	/* .dev NULL: free */
static unsigned int hbm_ce_nr;
static u32 hbm_intake_head, hbm_intake_tail;	/* free-running */
static DEFINE_SPINLOCK(hbm_intake_lock);
static atomic64_t hbm_received[__HBMGUARD_PATH_MAX];
static atomic64_t hbm_dropped[__HBMGUARD_PATH_MAX];

static void hbm_intake_drain(struct work_struct *work);
static DECLARE_WORK(hbm_intake_work, hbm_intake_drain);

void hbm_path_stats(u32 path, u64 *received, u64 *dropped)
{
	*received = atomic64_read(&hbm_received[path]);
	*dropped = atomic64_read(&hbm_dropped[path]);
}

void hbm_path_count(u32 path, bool dropped)
{
	atomic64_inc(dropped ? &hbm_dropped[path] : &hbm_received[path]);
}

/* Add correctable errors to a pending count; false when there is no room. */
static bool ce_pending_add(struct hbm_device *dev, u64 offset, u32 count,
			   u32 path)
{
	u32 h = hash_64(offset ^ (unsigned long)dev, 32), i;

	for (i = 0; i < HBM_CE_PROBE; i++) {
		struct hbm_report *r = &hbm_ce_pending[(h + i) % HBM_CE_PENDING];

		if (!r->dev) {
			kref_get(&dev->ref);
			*r = (struct hbm_report){
				.dev = dev, .offset = offset,
				.kind = HBMGUARD_ERROR_CE, .count = count,
				.path = path,
			};
			hbm_ce_nr++;
			return true;
		}
		if (r->dev == dev && r->offset == offset && r->path == path &&
		    r->count + count <= 0xffff) {
			r->count += count;
			return true;
		}
	}
	return false;
}

/**
 * hbm_report_async() - queue an error for a device, from any context
 * @dev: the device; the queue takes its own reference
 * @offset: byte offset in the device
 * @kind: enum hbmguard_error_kind, or HBM_INTAKE_DEVICE_ERROR (@offset: code)
 * @count: errors, 1..65535
 * @path: enum hbmguard_path it came by
 *
 * Return: 0, or -ENOSPC when the queue had no room (counted as dropped).
 */
int hbm_report_async(struct hbm_device *dev, u64 offset, u32 kind, u32 count,
		     u32 path)
{
	bool reserved = kind == HBMGUARD_ERROR_UE || kind == HBMGUARD_ERROR_POISON;
	u32 limit = reserved ? HBM_INTAKE_SLOTS : HBM_INTAKE_SLOTS - HBM_UE_RESERVE;
	unsigned long flags;

	hbm_path_count(path, false);
	spin_lock_irqsave(&hbm_intake_lock, flags);
	if (kind == HBMGUARD_ERROR_CE && ce_pending_add(dev, offset, count, path))
		goto queued;
	if (hbm_intake_tail - hbm_intake_head >= limit) {
		spin_unlock_irqrestore(&hbm_intake_lock, flags);
		hbm_path_count(path, true);
		return -ENOSPC;
	}
	kref_get(&dev->ref);
	hbm_intake[hbm_intake_tail++ % HBM_INTAKE_SLOTS] = (struct hbm_report){
		.dev = dev, .offset = offset, .kind = kind, .count = count,
		.path = path,
	};
queued:
	spin_unlock_irqrestore(&hbm_intake_lock, flags);
	queue_work(hbm_wq, &hbm_intake_work);
	return 0;
}

/* Take up to @max reports, ring first, then pending counts; lock held. */
static u32 intake_take(struct hbm_report *batch, u32 max)
{
	static u32 sweep;	/* where the last sweep of the table stopped */
	u32 n = 0, i;

	while (n < max && hbm_intake_head != hbm_intake_tail)
		batch[n++] = hbm_intake[hbm_intake_head++ % HBM_INTAKE_SLOTS];
	for (i = 0; n < max && hbm_ce_nr && i < HBM_CE_PENDING; i++) {
		struct hbm_report *r = &hbm_ce_pending[sweep++ % HBM_CE_PENDING];

		if (!r->dev)
			continue;
		batch[n++] = *r;
		r->dev = NULL;
		hbm_ce_nr--;
	}
	return n;
}

static void hbm_intake_drain(struct work_struct *work)
{
	struct hbm_report batch[32];
	unsigned long flags;
	u32 n, i;

	do {
		spin_lock_irqsave(&hbm_intake_lock, flags);
		n = intake_take(batch, ARRAY_SIZE(batch));
		spin_unlock_irqrestore(&hbm_intake_lock, flags);

		for (i = 0; i < n; i++) {
			struct hbm_report *r = &batch[i];

			if (r->kind == HBM_INTAKE_DEVICE_ERROR)
				hbm_device_error_event(r->dev, r->offset, r->path);
			else if (hbm_device_report(r->dev, r->offset, r->kind,
						   r->count, r->path))
				hbm_path_count(r->path, true);
			hbm_device_put(r->dev);
		}
		cond_resched();
	} while (n);
}

/* Apply everything queued so far; for unload and for tests. */
void hbm_intake_flush(void)
{
	flush_work(&hbm_intake_work);
}
