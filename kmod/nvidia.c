// SPDX-License-Identifier: GPL-2.0
/*
 * NVIDIA Xid: the NVIDIA kernel module reports every Xid through one
 * callback slot.  The HBM ones become DEVICE_ERROR events of the device whose
 * identity is the GPU's PCI address; the daemon then asks NVML which page.
 *
 *   48  double-bit ECC error          92  high single-bit ECC error rate
 *   63  row remapping pending         94  contained ECC error
 *   64  row remapping failure         95  uncontained ECC error
 *
 * The driver may load before or after hbmguard, so a module notifier
 * attaches whenever a module offering the registration function comes and
 * forgets it when that module goes.  No reference is kept on the driver:
 * hbmguard must not stop an operator from unloading it.  The slot holds one
 * callback; when another user has it, hbmguard says so and goes on without
 * this path.  The callback may run in atomic context: it copies the Xid into
 * a small ring and a worker makes the event.
 *
 * The interface as this file expects it is stated in nvidia_abi.h.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "hbm.h"
#include "nvidia_abi.h"

#define XID_RING 64

struct xid_report {
	char bdf[16];		/* "0000:3b:00.0" */
	u32 xid;
};

static struct xid_report xid_ring[XID_RING];
static u32 xid_head, xid_tail;
static DEFINE_SPINLOCK(xid_lock);

static DEFINE_MUTEX(nv_lock);		/* attach state */
static unsigned long nv_reg_addr;	/* the registration function: its
					 * module is the driver; 0: detached */
static bool nv_legacy;			/* attached through nv_*() */

static bool xid_is_hbm(u32 xid)
{
	return xid == 48 || xid == 63 || xid == 64 || xid == 92 || xid == 94 ||
	       xid == 95;
}

static void xid_work_fn(struct work_struct *work)
{
	struct xid_report r;
	unsigned long flags;

	for (;;) {
		struct hbm_device *dev;

		spin_lock_irqsave(&xid_lock, flags);
		if (xid_head == xid_tail) {
			spin_unlock_irqrestore(&xid_lock, flags);
			break;
		}
		r = xid_ring[xid_head++ % XID_RING];
		spin_unlock_irqrestore(&xid_lock, flags);

		dev = hbm_device_find_identity(r.bdf);
		if (!dev) {
			hbm_path_count(HBMGUARD_PATH_NVIDIA_XID, true);
			pr_info("hbmguard: Xid %u on %s: no such device registered\n",
				r.xid, r.bdf);
			continue;
		}
		hbm_device_error(dev, r.xid, HBMGUARD_PATH_NVIDIA_XID);
		hbm_device_put(dev);
	}
}

static DECLARE_WORK(xid_work, xid_work_fn);

static void hbm_nv_error(void *ctx, const char *pci_bdf, u32 xid)
{
	unsigned long flags;
	bool queued = false;

	if (!xid_is_hbm(xid) || !pci_bdf)
		return;
	spin_lock_irqsave(&xid_lock, flags);
	if (xid_tail - xid_head < XID_RING) {
		struct xid_report *r = &xid_ring[xid_tail++ % XID_RING];

		strscpy(r->bdf, pci_bdf, sizeof(r->bdf));
		r->xid = xid;
		queued = true;
	}
	spin_unlock_irqrestore(&xid_lock, flags);
	if (queued)
		queue_work(hbm_wq, &xid_work);
	else
		hbm_path_count(HBMGUARD_PATH_NVIDIA_XID, true);
}

/* Try to take the slot; nv_lock held. */
static void nv_attach(void)
{
	int (*reg)(hbm_nv_error_cb cb, void *ctx);
	bool legacy = false;
	int err;

	if (nv_reg_addr)
		return;
	reg = symbol_get(nvidia_register_error_cb);
	if (!reg) {
		reg = symbol_get(nv_register_error_cb);
		legacy = true;
	}
	if (!reg)
		return;
	err = reg(hbm_nv_error, NULL);
	if (err) {
		pr_warn("hbmguard: the NVIDIA error callback slot is taken (%d): Xid path off\n",
			err);
	} else {
		nv_reg_addr = (unsigned long)reg;
		nv_legacy = legacy;
		pr_info("hbmguard: receiving NVIDIA Xids\n");
	}
	if (legacy)
		symbol_put(nv_register_error_cb);
	else
		symbol_put(nvidia_register_error_cb);
}

static int hbm_nv_module_event(struct notifier_block *nb, unsigned long state,
			       void *data)
{
	struct module *mod = data;

	mutex_lock(&nv_lock);
	if (state == MODULE_STATE_LIVE) {
		nv_attach();
	} else if (state == MODULE_STATE_GOING && nv_reg_addr &&
		   within_module(nv_reg_addr, mod)) {
		/* It drops its callbacks as it goes; nothing to undo. */
		pr_info("hbmguard: %s going: Xid path detached\n", mod->name);
		nv_reg_addr = 0;
	}
	mutex_unlock(&nv_lock);
	return NOTIFY_DONE;
}

static struct notifier_block hbm_nv_nb = {
	.notifier_call = hbm_nv_module_event,
};

int hbm_nvidia_init(void)
{
	int err = register_module_notifier(&hbm_nv_nb);

	if (err)
		return err;
	mutex_lock(&nv_lock);
	nv_attach();
	mutex_unlock(&nv_lock);
	return 0;
}

void hbm_nvidia_exit(void)
{
	unregister_module_notifier(&hbm_nv_nb);
	mutex_lock(&nv_lock);
	if (nv_reg_addr) {
		void (*unreg)(hbm_nv_error_cb cb);

		unreg = nv_legacy ? symbol_get(nv_unregister_error_cb) :
				    symbol_get(nvidia_unregister_error_cb);
		if (unreg) {
			unreg(hbm_nv_error);
			if (nv_legacy)
				symbol_put(nv_unregister_error_cb);
			else
				symbol_put(nvidia_unregister_error_cb);
		}
		nv_reg_addr = 0;
	}
	mutex_unlock(&nv_lock);
	flush_work(&xid_work);
}
