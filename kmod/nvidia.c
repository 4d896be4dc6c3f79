// SPDX-License-Identifier: GPL-2.0
/*
 * NVIDIA Xid: the open NVIDIA kernel modules fire the tracepoint
 * nvidia:nvidia_dev_xid for every Xid they report (nvidia_xid.h says where
 * and since which release; a driver running on an NVIDIA H200 with 580.159.04
 * open modules, taint "O", lists its trace_event_raw_event_nvidia_dev_xid in
 * /proc/kallsyms).  The HBM ones become DEVICE_ERROR events of the device
 * of the GPU's PCI address (a GPU device's PCI_ADDR attribute, or a
 * provider's identity: hbm_device_find_pci()); what each means is the daemon's
 * to say (it asks NVML which page, and whether a reset or an RMA is due):
 *
 *   48  double-bit ECC error		 94  contained ECC error
 *   63  page retirement / row remap	 95  uncontained ECC error
 *   64  retirement / remap failure	140  unrecovered ECC error
 *   92  high single-bit ECC error rate
 *
 * Drivers older than 575, and the proprietary modules (the kernel hides the
 * tracepoints of a module that taints it "P": trace_module_has_bad_taint() in
 * kernel/tracepoint.c), are heard by the daemon from the kernel log instead.
 * Their other interface, nvidia_register_error_cb() in
 * kernel-open/nvidia/nv-report-err.c, is no use here: one global slot,
 * unregistration not synchronised with callers, and exported with plain
 * EXPORT_SYMBOL, which __symbol_get() refuses since 6.6, backported to the
 * 6.1 series ("failing symbol_get of non-GPLONLY symbol", kernel/module/main.c
 * of Debian's 6.1.192 and 6.12 both).
 *
 * The driver may load before or after hbmguard, and go at any time: a
 * tracepoint module notifier (register_tracepoint_module_notifier(), which
 * also replays the modules already loaded) probes the tracepoint when a module
 * offering it comes and unregisters when it goes.  No reference is kept on
 * the driver: hbmguard must not stop an operator from unloading it.  Every
 * notifier call holds the kernel's tracepoint_module_list_mutex, which
 * serialises nv_tp and nv_mod.
 *
 * The probe runs in the driver's context, which may be atomic: it copies the
 * PCI address and the Xid into a small ring and a worker makes the event;
 * a burst of lesser Xids leaves room in it for those that lose data
 * (xid_room()).
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>

#include "hbm.h"
#include "nvidia_xid.h"

#define XID_RING 64

struct xid_report {
	char bdf[HBMGUARD_PCI_ADDR_LEN];	/* "0000:3b:00.0" */
	u32 xid;
};

struct xid_ring {
	struct xid_report slot[XID_RING];
	u32 head, tail;		/* free running: tail - head are queued */
};

static struct xid_ring xid_ring;
static DEFINE_RAW_SPINLOCK(xid_lock);

static struct tracepoint *nv_tp;	/* probed; NULL: detached */
static struct module *nv_mod;		/* nv_tp's module */

/* The Xids about HBM: those of nv_xid_hbm()'s table in daemon/nvlog.c. */
static bool xid_is_hbm(u32 xid)
{
	return xid == 48 || xid == 63 || xid == 64 || xid == 92 || xid == 94 ||
	       xid == 95 || xid == 140 || xid == 154 || xid == 156 || xid == 157 ||
	       xid == 168 || xid == 171;
}

/**
 * hbm_xid_loses_data() - whether an Xid says the GPU lost data
 * @xid: the Xid
 *
 * Those of daemon/nvlog.c's xid_hbm[] entries with lost_data.
 *
 * Return: true for 48, 94, 95, 140 and 171.
 */
bool hbm_xid_loses_data(u32 xid)
{
	return xid == 48 || xid == 94 || xid == 95 || xid == 140 || xid == 171;
}

/*
 * The slots an Xid may fill, so that a burst of lesser ones faster than
 * the worker leaves room for the rest: 92 (a rate, nothing changed) a half,
 * those that change what the driver retired or needs (63, 64, 154, ...)
 * three quarters, those that lose data all of them.
 */
static u32 xid_room(u32 xid)
{
	if (hbm_xid_loses_data(xid))
		return XID_RING;
	return xid == 92 ? XID_RING / 2 : XID_RING - XID_RING / 4;
}

/* Queues Xid @xid of @bdf on @q (the caller serialises): false when it has no room. */
static bool xid_push(struct xid_ring *q, const char *bdf, u32 xid)
{
	struct xid_report *r;

	if (q->tail - q->head >= xid_room(xid))
		return false;
	r = &q->slot[q->tail++ % XID_RING];
	strscpy(r->bdf, bdf, sizeof(r->bdf));
	r->xid = xid;
	return true;
}

/*
 * At most what the ring holds, not until it is empty: whatever a probe
 * pushed after this run began queued the work again (hbm_nv_xid()), and a
 * run that never ends would keep a flush of hbm_wq (aperture.c) waiting
 * for a storm of Xids to end.
 */
static void xid_work_fn(struct work_struct *work)
{
	struct xid_report r;
	unsigned long flags;
	unsigned int n;

	for (n = 0; n < XID_RING; n++) {
		struct hbm_device *dev;

		cond_resched();
		raw_spin_lock_irqsave(&xid_lock, flags);
		if (xid_ring.head == xid_ring.tail) {
			raw_spin_unlock_irqrestore(&xid_lock, flags);
			break;
		}
		r = xid_ring.slot[xid_ring.head++ % XID_RING];
		raw_spin_unlock_irqrestore(&xid_lock, flags);

		dev = hbm_device_find_pci(r.bdf);
		if (!dev) {
			hbm_path_count(HBMGUARD_PATH_NVIDIA_XID, true);
			pr_info_ratelimited("hbmguard: Xid %u on %s: no such device registered\n",
					    r.xid, r.bdf);
			continue;
		}
		hbm_device_error(dev, r.xid, HBMGUARD_PATH_NVIDIA_XID);
		hbm_device_put(dev);
	}
}

static DECLARE_WORK(xid_work, xid_work_fn);

static void hbm_nv_xid(void *data, const struct pci_dev *pdev, u32 error_code,
		       const char *msg)
{
	unsigned long flags;
	bool queued;

	if (!xid_is_hbm(error_code) || !pdev)
		return;
	raw_spin_lock_irqsave(&xid_lock, flags);
	queued = xid_push(&xid_ring, pci_name(pdev), error_code);
	raw_spin_unlock_irqrestore(&xid_lock, flags);
	if (queued) {
		queue_work(hbm_wq, &xid_work);
		return;
	}
	hbm_path_count(HBMGUARD_PATH_NVIDIA_XID, true);
	if (error_code != 92)	/* a rate; the others change or lose something */
		pr_warn_ratelimited("hbmguard: Xid %u on %s dropped: the Xid queue is full\n",
				    error_code, pci_name(pdev));
}

/* Whether module @name is xid_module's, which may say '-' for its '_'. */
static bool is_xid_module(const char *name)
{
	const char *want = hbm_xid_module;

	for (; *name && *want; name++, want++)
		if (*name != (*want == '-' ? '_' : *want))
			return false;
	return !*name && !*want;
}

/* tracepoint_probe_register() takes any pointer: hold the probe to its type. */
static const hbm_nv_xid_probe_t hbm_nv_probe = hbm_nv_xid;

static void nv_attach(struct module *mod)
{
	struct tracepoint *tp = hbm_module_tracepoint(mod, HBM_NV_XID_TRACEPOINT);
	int err;

	if (!tp)
		return;
	/*
	 * A probe takes the driver's arguments on trust (the tracepoint
	 * does not carry its prototype): only the driver's tracepoint is
	 * probed, declared from its own header (nvidia_xid.h), not one of
	 * the same name that another module offers.
	 */
	if (!is_xid_module(mod->name)) {
		pr_warn("hbmguard: %s offers a tracepoint nvidia:%s but is not %s (xid_module): not probed\n",
			mod->name, HBM_NV_XID_TRACEPOINT, hbm_xid_module);
		return;
	}
	if (nv_tp) {
		pr_warn("hbmguard: %s also offers nvidia:%s: only %s's is probed\n",
			mod->name, HBM_NV_XID_TRACEPOINT, nv_mod->name);
		return;
	}
	err = tracepoint_probe_register(tp, hbm_nv_probe, NULL);
	if (err) {
		pr_warn("hbmguard: cannot probe nvidia:%s of %s (%d): Xid path off\n",
			HBM_NV_XID_TRACEPOINT, mod->name, err);
		return;
	}
	nv_tp = tp;
	nv_mod = mod;
	pr_info("hbmguard: receiving NVIDIA Xids from nvidia:%s of %s\n",
		HBM_NV_XID_TRACEPOINT, mod->name);
}

static void nv_detach(void)
{
	tracepoint_probe_unregister(nv_tp, hbm_nv_probe, NULL);
	/* No probe still running when hbmguard or the driver goes. */
	tracepoint_synchronize_unregister();
	pr_info("hbmguard: Xid path detached from %s\n", nv_mod->name);
	nv_tp = NULL;
	nv_mod = NULL;
}

static int hbm_nv_tp_module(struct notifier_block *nb, unsigned long state,
			    void *data)
{
	struct tp_module *tp_mod = data;

	if (state == MODULE_STATE_COMING)
		nv_attach(tp_mod->mod);
	else if (state == MODULE_STATE_GOING && nv_mod == tp_mod->mod)
		nv_detach();
	return NOTIFY_DONE;
}

static struct notifier_block hbm_nv_nb = {
	.notifier_call = hbm_nv_tp_module,
};

int hbm_nvidia_init(void)
{
	/* Calls hbm_nv_tp_module() for the modules already loaded, too. */
	return register_tracepoint_module_notifier(&hbm_nv_nb);
}

void hbm_nvidia_exit(void)
{
	/* Calls hbm_nv_tp_module(GOING) for every module loaded. */
	unregister_tracepoint_module_notifier(&hbm_nv_nb);
	flush_work(&xid_work);
}

#ifdef HBMGUARD_DEBUG
/* Each HBM Xid's room: taken one slot short of it, refused at it. */
static bool selftest_rooms(struct xid_ring *q)
{
	/* stated here, not worked out as xid_room() does: a check of it */
	static const struct { u32 xid, room; } rooms[] = {
		{ 48, 64 }, { 63, 48 }, { 64, 48 }, { 92, 32 }, { 94, 64 }, { 95, 64 },
		{ 140, 64 }, { 154, 48 }, { 156, 48 }, { 157, 48 }, { 168, 48 }, { 171, 64 },
	};
	unsigned int i;

	BUILD_BUG_ON(XID_RING != 64);
	for (i = 0; i < ARRAY_SIZE(rooms); i++) {
		u32 xid = rooms[i].xid, want = rooms[i].room;

		q->head = 0;
		q->tail = want - 1;
		if (!xid_is_hbm(xid) || !xid_push(q, "0000:00:00.0", xid) ||
		    xid_push(q, "0000:00:00.0", xid)) {
			pr_err("hbmguard: selftest: Xid %u does not take %u slots of %u\n",
			       xid, want, XID_RING);
			return false;
		}
	}
	return true;
}

/**
 * hbm_nvidia_selftest() - the Xid queue's room, for selftest.c
 *
 * Each HBM Xid's room, then a queue no worker drains filled by a burst of
 * 92s, then of 63s, then of 48s: each stops at its own room, and a 94
 * after the 48s' fills it finds none.
 *
 * Return: whether each took the slots it should.
 */
bool hbm_nvidia_selftest(void)
{
	static const u32 burst[] = { 92, 63, 48 };
	struct xid_ring *q = kzalloc(sizeof(*q), GFP_KERNEL);
	u32 taken[ARRAY_SIZE(burst)] = { 0 };
	unsigned int i;
	bool ok;

	if (!q)
		return false;
	ok = selftest_rooms(q);
	memset(q, 0, sizeof(*q));
	for (i = 0; i < ARRAY_SIZE(burst); i++)
		while (taken[i] < 2 * XID_RING &&
		       xid_push(q, "0000:00:00.0", burst[i]))
			taken[i]++;
	if (ok && !(taken[0] == XID_RING / 2 && taken[1] == XID_RING / 4 &&
		    taken[2] == XID_RING / 4 && !xid_push(q, "0000:00:00.0", 94) &&
		    q->slot[0].xid == 92 && q->slot[XID_RING - 1].xid == 48)) {
		pr_err("hbmguard: selftest: Xid queue took %u 92s, %u 63s and %u 48s of %u slots\n",
		       taken[0], taken[1], taken[2], XID_RING);
		ok = false;
	}
	kfree(q);
	return ok;
}
#endif
