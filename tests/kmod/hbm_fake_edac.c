// SPDX-License-Identifier: GPL-2.0
/*
 * hbm_fake_edac: does to memory errors on the MCE decode chain what an EDAC
 * driver that owns the memory controller does (sb_edac, skx_common, i10nm,
 * amd64_edac through mce_amd), so that the double report can be tested in a
 * guest that has no memory controller to bind to: at MCE_PRIO_EDAC it
 * reports each memory error with an address on ras:mc_event and marks the
 * record MCE_HANDLED_EDAC (drivers/edac/skx_common.c, 6.1 and 6.12).  Then
 * it logs "hbm_fake_edac: handled ADDR", which tells a test that every
 * record before this one has been through the whole chain.
 *
 * The chain passes a struct mce * on the kernels this is built for (6.1,
 * 6.12); later ones pass a struct mce_hw_err * (kmod/compat.h).
 */
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/edac.h>
#include <asm/mce.h>
#include <ras/ras_event.h>

static int hbm_fake_edac_notify(struct notifier_block *nb, unsigned long val,
				void *data)
{
	struct mce *m = data;
	u64 addr = m->addr & GENMASK_ULL(55, 0);

	if (!mce_is_memory_error(m) || !(m->status & MCI_STATUS_ADDRV))
		return NOTIFY_DONE;
	trace_mc_event(m->status & MCI_STATUS_UC ? HW_EVENT_ERR_UNCORRECTED :
			HW_EVENT_ERR_CORRECTED, "fake", "", 1, 0, -1, -1, -1,
			addr, 6, 0, "hbm_fake_edac");
	m->kflags |= MCE_HANDLED_EDAC;
	pr_info("hbm_fake_edac: handled %llx\n", addr);
	return NOTIFY_OK;
}

static struct notifier_block hbm_fake_edac_nb = {
	.notifier_call = hbm_fake_edac_notify,
	.priority = MCE_PRIO_EDAC,
};

static int __init hbm_fake_edac_init(void)
{
	mce_register_decode_chain(&hbm_fake_edac_nb);
	return 0;
}

static void __exit hbm_fake_edac_exit(void)
{
	mce_unregister_decode_chain(&hbm_fake_edac_nb);
}

module_init(hbm_fake_edac_init);
module_exit(hbm_fake_edac_exit);
MODULE_DESCRIPTION("hbmguard tests: an EDAC driver's part of the MCE decode chain");
MODULE_LICENSE("GPL");
