// SPDX-License-Identifier: GPL-2.0
/*
 * memory_failure(): HBM exposed as system memory (Grace Hopper, MI300A) fails
 * like any RAM, through memory_failure(), which reports every page it handles
 * on the ras:memory_failure_event tracepoint.  That tracepoint is not
 * exported to modules, so it is found by name among the kernel's tracepoints
 * (as LTTng does) and probed.  The probe runs in memory_failure()'s context:
 * it only maps the pfn to a range device and queues the report.
 */
#include <linux/pfn.h>
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

int hbm_memory_failure_init(void)
{
	int err;

	hbm_mf_tp = hbm_kernel_tracepoint("memory_failure_event");
	if (!hbm_mf_tp) {
		pr_info("hbmguard: no memory_failure_event tracepoint (CONFIG_MEMORY_FAILURE off?): path off\n");
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
