// SPDX-License-Identifier: GPL-2.0
/*
 * x86 machine checks: memory errors from the MCA banks (AMD UMC, Intel
 * memory controllers) reach the decode chain in process context.  Those
 * with a system address inside a range device become reports: uncorrectable
 * ones retire the page, correctable ones count toward its threshold.
 * Decoding is mce_decode.c's; this file only adapts the kernel's struct.
 *
 * One error must count once.  Where an EDAC driver owns the memory
 * controller (sb_edac, skx_common, i10nm, igen6, pnd2, i7core; mce_amd with
 * amd64_edac on AMD), its decode-chain notifier runs at MCE_PRIO_EDAC,
 * before ours at MCE_PRIO_LOWEST (arch/x86/include/asm/mce.h, 6.1 and 6.12:
 * the chain runs in descending priority), reports the error on
 * ras:mc_event, which ras_edac.c counts, and sets MCE_HANDLED_EDAC in the
 * record's kflags.  Such records are left to that path while it is on.
 * (A corrected error the kernel's collector took first, MCE_HANDLED_CEC at
 * MCE_PRIO_CEC, is skipped by every one of those drivers and so stays ours.)
 * mce_amd sets the flag even when no DRAM decoder (amd64_edac) is loaded to
 * report on mc_event.  It is loaded as amd64_edac's dependency; loaded
 * alone, it leaves legacy AMD DRAM errors counted by neither path (SMCA UMC
 * errors carry no system address and are EDAC's anyway).
 */
#include <linux/notifier.h>
#include <asm/mce.h>
#include <asm/processor.h>

#include "mce_decode.h"
#include "hbm.h"

static int hbm_mce_notify(struct notifier_block *nb, unsigned long val,
			  void *data)
{
	struct hbm_mce_record r;
	struct hbm_device *dev;
	u64 phys, offset;
	u32 kind;

	r = hbm_mce_record_of(data);
	r.edac_handled &= READ_ONCE(hbm_edac_on);
	if (hbm_mce_decode(&r, &kind, &phys) != HBM_MCE_MEMORY)
		return NOTIFY_DONE;
	dev = hbm_device_find_phys(phys, &offset);
	if (!dev)
		return NOTIFY_DONE;
	hbm_report_async(dev, offset, kind, 1, HBMGUARD_PATH_MCE);
	hbm_device_put(dev);
	return NOTIFY_OK;	/* seen; other decoders still run */
}

static struct notifier_block hbm_mce_nb = {
	.notifier_call = hbm_mce_notify,
	.priority = MCE_PRIO_LOWEST,
};

int hbm_mce_init(void)
{
	mce_register_decode_chain(&hbm_mce_nb);
	return 0;
}

void hbm_mce_exit(void)
{
	mce_unregister_decode_chain(&hbm_mce_nb);
}
