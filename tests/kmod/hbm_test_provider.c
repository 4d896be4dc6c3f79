// SPDX-License-Identifier: GPL-2.0
/*
 * hbm_test_provider: a GPU driver as the tests need one.  It registers a
 * device through hbmguard's provider API and reports errors from the
 * contexts real drivers report from, driven through debugfs:
 *
 *   echo "register NAME IDENTITY SIZE PAGE_SIZE SPARES" > ctl
 *   echo "report ce|ue|poison OFFSET COUNT process|spinlock|timer" > ctl
 *   echo "flood N PAGES" > ctl  N CEs over PAGES pages from atomic context,
 *                              then one UE
 *   echo "loop N PAGES" > ctl   flood's loop with no report: its own cost
 *   echo "storm PAGES ROUNDS STRIDE UES COUNT" > ctl
 *                              ROUNDS rounds of one report of COUNT CEs on
 *                              each of PAGES pages (page STRIDE * i), from
 *                              atomic context, with UES UEs spread through
 *                              them (page STRIDE * j + 1), and then,
 *                              with UES, Xid 48 (a device error that lost
 *                              data)
 *   echo "mc_event ce|ue PHYS COUNT" > ctl   fire ras:mc_event as EDAC does
 *   echo "xid CODE" > ctl      a device-level error
 *   echo unregister > ctl
 *   echo leak > ctl            forget the device without unregistering it,
 *                              as a driver with a bug would
 *
 * Results go to the kernel log with the prefix "hbm_test_provider:".
 */
#include <linux/debugfs.h>
#include <linux/edac.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/uaccess.h>
#include <ras/ras_event.h>

#include "hbmguard_provider.h"
#include <linux/hbmguard.h>

static struct dentry *dir;
static struct hbm_device *dev;
static u32 dev_page_size;		/* dev's */
static DEFINE_SPINLOCK(lock);

struct timed_report {
	struct timer_list timer;
	struct completion done;
	u64 offset;
	u32 kind, count;
	int err;
};

static void timer_report(struct timer_list *t)
{
	struct timed_report *tr = from_timer(tr, t, timer);

	tr->err = hbmguard_report_error(dev, tr->offset, tr->kind, tr->count);
	complete(&tr->done);
}

static u32 kind_of(const char *s)
{
	if (!strcmp(s, "ce"))
		return HBMGUARD_ERROR_CE;
	if (!strcmp(s, "ue"))
		return HBMGUARD_ERROR_UE;
	if (!strcmp(s, "poison"))
		return HBMGUARD_ERROR_POISON;
	return 0;
}

static int do_report(u32 kind, u64 offset, u32 count, const char *ctx)
{
	unsigned long flags;
	int err;

	if (!strcmp(ctx, "process"))
		return hbmguard_report_error(dev, offset, kind, count);
	if (!strcmp(ctx, "spinlock")) {
		spin_lock_irqsave(&lock, flags);
		err = hbmguard_report_error(dev, offset, kind, count);
		spin_unlock_irqrestore(&lock, flags);
		return err;
	}
	if (!strcmp(ctx, "timer")) {
		struct timed_report tr = { .offset = offset, .kind = kind,
					   .count = count };

		init_completion(&tr.done);
		timer_setup_on_stack(&tr.timer, timer_report, 0);
		mod_timer(&tr.timer, jiffies + 1);
		wait_for_completion(&tr.done);
		del_timer_sync(&tr.timer);
		destroy_timer_on_stack(&tr.timer);
		return tr.err;
	}
	return -EINVAL;
}

/* One error from atomic context, as an interrupt handler reports it. */
static int report_atomic(u64 page, u32 kind, u32 count)
{
	unsigned long flags;
	int err;

	spin_lock_irqsave(&lock, flags);
	err = hbmguard_report_error(dev, page * dev_page_size, kind, count);
	spin_unlock_irqrestore(&lock, flags);
	return err;
}

/* N correctable errors over some pages, from atomic context, then one UE. */
static int do_flood(u32 n, u32 pages)
{
	u32 i, accepted = 0;
	unsigned long flags;
	ktime_t t0;
	s64 ns;

	t0 = ktime_get();
	for (i = 0; i < n; i++)
		accepted += !report_atomic(i % pages, HBMGUARD_ERROR_CE, 1);
	ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	spin_lock_irqsave(&lock, flags);
	i = hbmguard_report_error(dev, 8191 * 4096ULL, HBMGUARD_ERROR_UE, 1);
	spin_unlock_irqrestore(&lock, flags);
	pr_info("hbm_test_provider: flood %u CE over %u pages in %lld ns, %u queued, UE %s\n",
		n, pages, ns, accepted, i ? "LOST" : "queued");
	return i;
}

/* What flood's loop costs without hbmguard: the floor of its rate. */
static noinline int report_none(u64 page)
{
	return page == U64_MAX;
}

static void do_loop(u32 n, u32 pages)
{
	u32 i, accepted = 0;
	unsigned long flags;
	ktime_t t0;
	s64 ns;

	t0 = ktime_get();
	for (i = 0; i < n; i++) {
		spin_lock_irqsave(&lock, flags);
		accepted += !report_none(i % pages);
		spin_unlock_irqrestore(&lock, flags);
	}
	ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	pr_info("hbm_test_provider: loop %u over %u pages in %lld ns, %u\n", n,
		pages, ns, accepted);
}

/*
 * A storm: every page's errors come in ROUNDS reports, so that the queue
 * must add them up; the UEs come in the middle of it.  Says how many
 * errors the queue took (hbmguard_report_error() returned 0) and how many
 * UEs, which the test compares with what the table counted.
 */
static int do_storm(u32 pages, u32 rounds, u32 stride, u32 ues, u32 count)
{
	u64 total = (u64)pages * rounds, n = 0, ce_taken = 0;
	u32 r, i, ue = 0, ue_taken = 0;
	ktime_t t0;
	s64 ns;

	if (!pages || !rounds || !stride || ues > pages || (ues && stride < 2) ||
	    ((u64)pages * stride + 1) * dev_page_size > 1ULL << 52)
		return -EINVAL;
	t0 = ktime_get();
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < pages; i++, n++) {
			ce_taken += report_atomic((u64)i * stride, HBMGUARD_ERROR_CE,
						  count) ? 0 : count;
			/* UE j after CE j * total / ues: spread evenly. */
			while (ue < ues && (u64)ue * total <= n * ues)
				ue_taken += !report_atomic((u64)ue++ * stride + 1,
							   HBMGUARD_ERROR_UE, 1);
		}
		cond_resched();
	}
	if (ues) {	/* at the storm's end: its queue as full as it gets */
		unsigned long flags;

		spin_lock_irqsave(&lock, flags);
		hbmguard_report_device_error(dev, 48);
		spin_unlock_irqrestore(&lock, flags);
	}
	ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	pr_info("hbm_test_provider: storm %u pages x %u rounds of %u CEs in %lld ns: %llu CEs taken of %llu, %u UEs taken of %u\n",
		pages, rounds, count, ns, ce_taken, total * count, ue_taken, ues);
	return 0;
}

static ssize_t ctl_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	char buf[160], a[40], b[64], c[16];
	long long x, y;
	unsigned int u, v, w[3];
	int err = -EINVAL;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;

	if (sscanf(buf, "register %39s %63s %lli %u %u", a, b, &x, &u, &v) == 5) {
		struct hbmguard_provider_device d = {
			.name = a, .identity = b, .hbm_size = x, .page_size = u,
			.spare_pages = v, .owner = THIS_MODULE,
		};

		if (dev)
			return -EBUSY;
		dev = hbmguard_register_device(&d);
		err = IS_ERR(dev) ? PTR_ERR(dev) : 0;
		if (err)
			dev = NULL;
		dev_page_size = u;
	} else if (!dev) {
		err = -ENODEV;
	} else if (sscanf(buf, "report %15s %lli %u %15s", a, &x, &u, c) == 4) {
		err = do_report(kind_of(a), x, u, c);
	} else if (sscanf(buf, "flood %u %u", &u, &v) == 2 && v) {
		err = do_flood(u, v);
	} else if (sscanf(buf, "loop %u %u", &u, &v) == 2 && v) {
		do_loop(u, v);
		err = 0;
	} else if (sscanf(buf, "storm %u %u %u %u %u", &u, &v, &w[0], &w[1],
			  &w[2]) == 5) {
		err = do_storm(u, v, w[0], w[1], w[2]);
	} else if (sscanf(buf, "mc_event %15s %lli %u", a, &y, &u) == 3) {
		trace_mc_event(strcmp(a, "ce") ? HW_EVENT_ERR_UNCORRECTED :
						 HW_EVENT_ERR_CORRECTED,
			       "test", "DIMM_A0", u, 0, 0, 0, -1, y, 0, 0, "");
		err = 0;
	} else if (sscanf(buf, "xid %u", &u) == 1) {
		hbmguard_report_device_error(dev, u);
		err = 0;
	} else if (!strncmp(buf, "unregister", 10)) {
		hbmguard_unregister_device(dev);
		dev = NULL;
		err = 0;
	} else if (!strncmp(buf, "leak", 4)) {
		dev = NULL;
		err = 0;
	}
	return err ?: len;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.write = ctl_write,
};

static int __init test_init(void)
{
	dir = debugfs_create_dir("hbm_test_provider", NULL);
	debugfs_create_file("ctl", 0200, dir, NULL, &ctl_fops);
	return 0;
}

static void __exit test_exit(void)
{
	debugfs_remove_recursive(dir);
	if (dev)
		hbmguard_unregister_device(dev);
}

module_init(test_init);
module_exit(test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hbmguard test: a GPU driver using the provider API");
