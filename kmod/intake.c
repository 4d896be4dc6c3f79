// SPDX-License-Identifier: GPL-2.0
/*
 * Intake: errors reported from contexts that cannot sleep.
 *
 * A tracepoint probe, a GPU driver's interrupt handler or the NVIDIA error
 * callback may run in atomic context, but applying an error to a table takes
 * the device's mutex and may allocate.  Such reports go into a fixed ring
 * under an IRQ-safe spinlock and a worker applies them in process context.
 *
 * The ring never allocates and never blocks a reporter.  A storm of
 * correctable errors must not push out an uncorrectable one, so correctable
 * errors may fill only the ring less its last HBM_UE_RESERVE slots, and a
 * correctable error for the same offset as the newest queued one adds to its
 * count instead of taking a slot.  What does not fit is counted as dropped
 * per path (HBMGUARD_CMD_STATS_GET).
 */
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

static struct hbm_report hbm_intake[HBM_INTAKE_SLOTS];
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

/**
 * hbm_report_async() - queue an error for a device, from any context
 * @dev: the device; the queue takes its own reference
 * @offset: byte offset in the device
 * @kind: enum hbmguard_error_kind
 * @count: errors, 1..65535
 * @path: enum hbmguard_path it came by
 *
 * Return: 0, or -ENOSPC when the queue had no room (counted as dropped).
 */
int hbm_report_async(struct hbm_device *dev, u64 offset, u32 kind, u32 count,
		     u32 path)
{
	u32 limit = kind == HBMGUARD_ERROR_CE ? HBM_INTAKE_SLOTS - HBM_UE_RESERVE :
						 HBM_INTAKE_SLOTS;
	struct hbm_report *last;
	unsigned long flags;
	u32 used;

	hbm_path_count(path, false);
	spin_lock_irqsave(&hbm_intake_lock, flags);
	used = hbm_intake_tail - hbm_intake_head;
	last = &hbm_intake[(hbm_intake_tail - 1) % HBM_INTAKE_SLOTS];
	if (kind == HBMGUARD_ERROR_CE && used && last->dev == dev &&
	    last->kind == kind && last->offset == offset && last->path == path &&
	    last->count + count <= 0xffff) {
		last->count += count;
		spin_unlock_irqrestore(&hbm_intake_lock, flags);
		return 0;
	}
	if (used >= limit) {
		spin_unlock_irqrestore(&hbm_intake_lock, flags);
		hbm_path_count(path, true);
		return -ENOSPC;
	}
	kref_get(&dev->ref);
	hbm_intake[hbm_intake_tail++ % HBM_INTAKE_SLOTS] = (struct hbm_report){
		.dev = dev, .offset = offset, .kind = kind, .count = count,
		.path = path,
	};
	spin_unlock_irqrestore(&hbm_intake_lock, flags);
	queue_work(hbm_wq, &hbm_intake_work);
	return 0;
}

static void hbm_intake_drain(struct work_struct *work)
{
	struct hbm_report batch[32];
	unsigned long flags;
	u32 n, i;

	do {
		spin_lock_irqsave(&hbm_intake_lock, flags);
		for (n = 0; n < ARRAY_SIZE(batch) &&
			    hbm_intake_head != hbm_intake_tail; n++)
			batch[n] = hbm_intake[hbm_intake_head++ % HBM_INTAKE_SLOTS];
		spin_unlock_irqrestore(&hbm_intake_lock, flags);

		for (i = 0; i < n; i++) {
			struct hbm_report *r = &batch[i];

			if (hbm_device_report(r->dev, r->offset, r->kind,
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
