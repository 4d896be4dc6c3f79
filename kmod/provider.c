// SPDX-License-Identifier: GPL-2.0
/*
 * The provider API: how a GPU driver hands hbmguard its devices and errors.
 * Registration sleeps; reporting does not, and may come from any context but
 * NMI, because drivers learn of ECC errors in interrupt handlers: reports
 * are queued under raw spinlocks (intake.c), on PREEMPT_RT too.
 */
#include <linux/export.h>
#include <linux/module.h>
#include <linux/notifier.h>

#include "hbm.h"
#include "hbmguard_provider.h"

/**
 * hbmguard_register_device() - register a GPU's HBM with hbmguard
 * @desc: the device
 *
 * Process context.  The device shows in /dev/hbmguard and netlink at once,
 * and the daemon restores its known bad pages when it sees it appear.
 *
 * Return: the device, to pass to the other calls, or an ERR_PTR: -EINVAL for
 * a bad @desc, -EEXIST when its name or identity is taken, -ENOSPC, -ENOMEM.
 */
struct hbm_device *hbmguard_register_device(const struct hbmguard_provider_device *desc)
{
	struct hbm_device_spec spec = {
		.kind = HBMGUARD_KIND_PROVIDER,
		.page_size = desc->page_size,
		.hbm_size = desc->hbm_size,
		.spare_pages = desc->spare_pages,
		.name = desc->name,
		.identity = desc->identity,
		.owner = desc->owner,
	};

	if (!desc->identity || !*desc->identity)
		return ERR_PTR(-EINVAL);	/* persistence needs a real one */
	return hbm_device_create(&spec);	/* held: the provider's reference */
}
EXPORT_SYMBOL_GPL(hbmguard_register_device);

/**
 * hbmguard_unregister_device() - the GPU is going away
 * @dev: what hbmguard_register_device() returned
 *
 * Process context.  Reports still queued for @dev are dropped; @dev must
 * not be used after this returns.
 */
void hbmguard_unregister_device(struct hbm_device *dev)
{
	hbm_device_remove(dev);
	hbm_device_put(dev);
}
EXPORT_SYMBOL_GPL(hbmguard_unregister_device);

/**
 * hbmguard_report_error() - an ECC error at an offset of a device
 * @dev: what hbmguard_register_device() returned
 * @offset: byte offset in the device, below its HBM size: an error in the
 *	spare area is the spare's (a spare that fails leaves the pool)
 * @kind: HBMGUARD_ERROR_CE, HBMGUARD_ERROR_UE or HBMGUARD_ERROR_POISON
 * @count: errors, 1..65535 for CE; 1 otherwise
 *
 * Any context but NMI.  The error is
 * queued and applied by a worker:
 * uncorrectable errors retire their page at once, correctable ones count
 * toward the page's threshold.
 *
 * Return: 0; -EINVAL for a bad @kind or @count; -ERANGE for an @offset
 * beyond the device; -ENOSPC when the queue was full: it holds 10^5 pages
 * of correctable errors (coalesced per page) and 16384 of uncorrectable
 * ones pending at once across every device, then 4096 reports more (of
 * which correctable ones never take the last 256).
 * Errors refused for -ERANGE or -ENOSPC count in the device's
 * errors_dropped.
 */
int hbmguard_report_error(struct hbm_device *dev, u64 offset, u32 kind, u32 count)
{
	if (!kind || kind >= __HBMGUARD_ERROR_MAX || !count || count > 0xffff ||
	    (kind != HBMGUARD_ERROR_CE && count != 1))
		return -EINVAL;
	return hbm_report_async(dev, offset, kind, count, HBMGUARD_PATH_PROVIDER);
}
EXPORT_SYMBOL_GPL(hbmguard_report_error);

/**
 * hbmguard_report_device_error() - an error of the device as a whole
 * @dev: what hbmguard_register_device() returned
 * @code: the driver's code for it (an NVIDIA Xid)
 *
 * Any context but NMI.  Queued; a
 * worker makes the DEVICE_ERROR event.  The table does not change, there
 * being no address.  An Xid that lost data (48, 94, 95, 140, 171) has room
 * that correctable errors cannot take, as uncorrectable ones do.  One
 * dropped for want of room counts in the device's errors_dropped.
 */
void hbmguard_report_device_error(struct hbm_device *dev, u32 code)
{
	hbm_device_error(dev, code, HBMGUARD_PATH_PROVIDER);
}
EXPORT_SYMBOL_GPL(hbmguard_report_device_error);

/*
 * A driver going: what it left registered goes with it.  GOING comes after
 * its exit returned (delete_module()) or its init failed
 * (do_init_module()): kernel/module/main.c, 6.1 and 6.12.
 */
static int provider_module_event(struct notifier_block *nb, unsigned long state, void *data)
{
	if (state == MODULE_STATE_GOING)
		hbm_devices_orphaned(data);
	return NOTIFY_DONE;
}

static struct notifier_block hbm_provider_nb = {
	.notifier_call = provider_module_event,
};

int hbm_provider_init(void)
{
	return register_module_notifier(&hbm_provider_nb);
}

void hbm_provider_exit(void)
{
	unregister_module_notifier(&hbm_provider_nb);
}
