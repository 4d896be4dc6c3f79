// SPDX-License-Identifier: GPL-2.0
/*
 * memory_failure(): HBM exposed as system memory (Grace Hopper, MI300A) fails
 * like any RAM, through memory_failure(), which reports every page it handles
 * on the ras:memory_failure_event tracepoint.  That tracepoint is not
 * exported to modules, so it is found by name among the kernel's tracepoints
 * (as LTTng does) and probed.  The probe runs in memory_failure()'s context:
 * it only maps the pfn to a range device and queues the report.
 *
 * What memory_failure() handled before a range was registered is not heard
 * again: on Grace Hopper the GPU driver offlines the pages it retired from
 * its own records when it onlines the GPU's memory (memory_failure_queue() in
 * os_offline_page_at_address(), kernel-open/nvidia/os-interface.c,
 * open-gpu-kernel-modules 595.45.04), most often before hbmguardd starts,
 * and the list it shows (/proc/driver/nvidia/gpus/.../offline_pages) prints
 * each address with "%p", hashed.  The kernel's own record is the page's
 * HWPoison flag: registration reads it for every frame of the range.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hugetlb.h>
#include <linux/memory_hotplug.h>
#include <linux/page-flags.h>
#include <linux/pfn.h>
#include <linux/sched/signal.h>
#include <linux/tracepoint.h>

#include "hbm.h"

static struct tracepoint *hbm_mf_tp;

static void hbm_mf_probe(void *data, unsigned long pfn, int type, int result)
{
	struct hbm_device *dev;
	u64 offset;

	dev = hbm_device_find_phys(PFN_PHYS(pfn), &offset);
	if (!dev)
		return;
	hbm_report_async(dev, offset, HBMGUARD_ERROR_POISON, 1,
			 HBMGUARD_PATH_MEMORY_FAILURE);
	hbm_device_put(dev);
}

/*
 * The device pages of a poisoned frame at @offset: retired as known bad from
 * before, or their spares counted bad.  Returns the end of the last one.
 */
static int import_frame(struct hbm_device *dev, u64 offset, u64 *next)
{
	u64 page_bytes = 1ULL << dev->page_shift;
	u64 first = round_down(offset, page_bytes);
	u64 end = min(round_up(offset + PAGE_SIZE, page_bytes), dev->hbm_size);
	u64 usable = min(end, hbm_usable_size(dev)), at;
	int err = 0;

	*next = end;
	if (first < usable)
		err = hbm_device_apply(dev, HBM_OP_RETIRE, first, usable - first,
				       HBMGUARD_SOURCE_RESTORED);
	for (at = max(first, usable); !err && at < end; at += page_bytes)
		err = hbm_device_report(dev, at, HBMGUARD_ERROR_POISON, 1,
					HBMGUARD_PATH_MEMORY_FAILURE);
	return err;
}

/**
 * hbm_memory_failure_import() - take in a range's frames poisoned already
 * @dev: a range device, published (so that what is poisoned from now on is
 *	heard by the probe: between the two, nothing is missed)
 *
 * The device pages of each frame with PageHWPoison are retired with source
 * RESTORED, pages known bad from before: the frame may be one the driver
 * offlined at boot for an error of long ago, or one hbmguard kept from the
 * allocator when the range was last unregistered, whatever retired it then;
 * no data is lost now, and the daemon's state file says more of it.  A
 * poisoned spare is counted bad (an error of the spare area, as any).  A
 * poisoned huge page is skipped: memory_failure() marks its head and keeps
 * which frame is bad to itself (hugetlb_set_page_hwpoison(),
 * mm/memory-failure.c, 6.1 and 6.12).  Sections not online are skipped.
 *
 * Return: the number of poisoned frames read in, -EINTR on a fatal signal,
 * -ENODEV once the device is removed (the walk stops: a NUMA node's range
 * may be hundreds of GiB), or the first error of the table (-ENOMEM).
 */
long hbm_memory_failure_import(struct hbm_device *dev)
{
	unsigned long pfn = PHYS_PFN(dev->phys_start);
	unsigned long end = pfn + PHYS_PFN(dev->hbm_size);
	long found = 0;
	u64 next;
	int err;

	for (; pfn < end; pfn++) {
		struct page *page = pfn_to_online_page(pfn);
		unsigned long section = pfn_to_section_nr(pfn);

		if (!(pfn & 0xfff)) {
			if (fatal_signal_pending(current))
				return -EINTR;
			if (READ_ONCE(dev->dead))
				return -ENODEV;
			cond_resched();
		}
		if (!page) {
			/* A range is mostly not RAM, or all RAM: skip by section. */
			if (!online_section_nr(section))
				pfn = section_nr_to_pfn(section + 1) - 1;
			continue;
		}
		if (!PageHWPoison(page))
			continue;
		if (PageHuge(page)) {
			struct page *head = compound_head(page);

			pr_warn("device %u %s: a poisoned huge page at pfn %#lx: which frame is bad is not known: not read in\n",
				dev->id, dev->name, page_to_pfn(head));
			pfn = max(pfn, page_to_pfn(head) + compound_nr(head) - 1);
			continue;
		}
		err = import_frame(dev, PFN_PHYS(pfn) - dev->phys_start, &next);
		if (err)
			return err;
		found++;
		/* A device page larger than a frame: its first bad frame told it. */
		pfn = max(pfn, (unsigned long)PHYS_PFN(dev->phys_start + next) - 1);
	}
	return found;
}

int hbm_memory_failure_init(void)
{
	int err;

	hbm_mf_tp = hbm_kernel_tracepoint("memory_failure_event");
	if (!hbm_mf_tp) {
		pr_info("no memory_failure_event tracepoint (CONFIG_MEMORY_FAILURE off?): path off\n");
		return 0;
	}
	err = tracepoint_probe_register(hbm_mf_tp, hbm_mf_probe, NULL);
	if (err)
		hbm_mf_tp = NULL;
	return err;
}

void hbm_memory_failure_exit(void)
{
	if (!hbm_mf_tp)
		return;
	tracepoint_probe_unregister(hbm_mf_tp, hbm_mf_probe, NULL);
	tracepoint_synchronize_unregister();
	hbm_mf_tp = NULL;
}
