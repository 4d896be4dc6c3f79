// SPDX-License-Identifier: GPL-2.0
/*
 * EDAC: a memory controller driver reports each error on ras:mc_event with
 * the physical address it decoded (page frame and offset).  Errors inside a
 * range device become reports; a corrected error counts toward the page's
 * threshold, an uncorrected, deferred or fatal one retires the page.  The
 * tracepoint is exported, so this is a plain probe; it runs in the EDAC
 * driver's context, which may be atomic, so it only queues.
 */
#include <linux/edac.h>
#include <asm/processor.h>
#include <ras/ras_event.h>

#include "hbm.h"

static void hbm_mc_probe(void *data, const unsigned int err_type,
			 const char *error_msg, const char *label,
			 const int error_count, const u8 mc_index,
			 const s8 top_layer, const s8 mid_layer,
			 const s8 low_layer, unsigned long address,
			 const u8 grain_bits, unsigned long syndrome,
			 const char *driver_detail)
{
	struct hbm_device *dev;
	u32 kind;
	u64 offset;

	if (err_type == HW_EVENT_ERR_INFO || grain_bits > PAGE_SHIFT)
		return;		/* not an error, or not one page */
	/*
	 * skx_common.c reports the machine check's address as logged (6.1
	 * and 6.12), a memory encryption KeyID's bits above the physical
	 * address width included (mce_decode.c).
	 */
	if (boot_cpu_data.x86_phys_bits && boot_cpu_data.x86_phys_bits < 64)
		address &= GENMASK_ULL(boot_cpu_data.x86_phys_bits - 1, 0);
	dev = hbm_device_find_phys(address, &offset);
	if (!dev)
		return;
	kind = err_type == HW_EVENT_ERR_CORRECTED ? HBMGUARD_ERROR_CE :
						    HBMGUARD_ERROR_UE;
	/*
	 * One error of its page, whatever @error_count says: the Intel
	 * drivers that say more pass the machine check bank's count
	 * (core_err_cnt, MCi_STATUS[52:38]: skx_common.c, sb_edac.c, 6.1 and
	 * 6.12), a channel's errors since the bank was read, not this
	 * page's (mce_decode.c).
	 */
	hbm_report_async(dev, offset, kind, 1, HBMGUARD_PATH_EDAC);
	hbm_device_put(dev);
}

/* ras_mce.c leaves records an EDAC driver decoded to this path while it is on. */
bool hbm_edac_on;

int hbm_edac_init(void)
{
	int err = register_trace_mc_event(hbm_mc_probe, NULL);

	WRITE_ONCE(hbm_edac_on, !err);
	return err;
}

void hbm_edac_exit(void)
{
	WRITE_ONCE(hbm_edac_on, false);
	unregister_trace_mc_event(hbm_mc_probe, NULL);
	tracepoint_synchronize_unregister();
}
