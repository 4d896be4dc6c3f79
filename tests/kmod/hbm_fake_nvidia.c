// SPDX-License-Identifier: GPL-2.0
/*
 * hbm_fake_nvidia: offers the error callback registration of the NVIDIA
 * driver, as kmod/nvidia_abi.h states it, so the Xid path can be tested
 * without NVIDIA hardware.  One slot, like the driver.
 *
 *   echo "xid PCI_BDF CODE" > ctl   call the callback, in atomic context
 *   echo take > ctl                 occupy the slot (before hbmguard loads)
 *   echo release > ctl
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "nvidia_abi.h"

static DEFINE_SPINLOCK(slot_lock);
static hbm_nv_error_cb slot;
static void *slot_ctx;
static struct dentry *dir;

int nvidia_register_error_cb(hbm_nv_error_cb cb, void *ctx)
{
	int err = -EBUSY;

	spin_lock_irq(&slot_lock);
	if (!slot) {
		slot = cb;
		slot_ctx = ctx;
		err = 0;
	}
	spin_unlock_irq(&slot_lock);
	return err;
}
EXPORT_SYMBOL_GPL(nvidia_register_error_cb);

void nvidia_unregister_error_cb(hbm_nv_error_cb cb)
{
	spin_lock_irq(&slot_lock);
	if (slot == cb)
		slot = NULL;
	spin_unlock_irq(&slot_lock);
}
EXPORT_SYMBOL_GPL(nvidia_unregister_error_cb);

static void squatter(void *ctx, const char *pci_bdf, u32 xid)
{
}

static ssize_t ctl_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	char buf[64], bdf[20];
	unsigned int xid;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (sscanf(buf, "xid %19s %u", bdf, &xid) == 2) {
		spin_lock_irq(&slot_lock);	/* the callback runs atomic */
		if (slot)
			slot(slot_ctx, bdf, xid);
		spin_unlock_irq(&slot_lock);
	} else if (!strncmp(buf, "take", 4)) {
		if (nvidia_register_error_cb(squatter, NULL))
			return -EBUSY;
	} else if (!strncmp(buf, "release", 7)) {
		nvidia_unregister_error_cb(squatter);
	} else {
		return -EINVAL;
	}
	return len;
}

static const struct file_operations ctl_fops = {
	.owner = THIS_MODULE,
	.write = ctl_write,
};

static int __init fake_init(void)
{
	dir = debugfs_create_dir("hbm_fake_nvidia", NULL);
	debugfs_create_file("ctl", 0200, dir, NULL, &ctl_fops);
	return 0;
}

static void __exit fake_exit(void)
{
	debugfs_remove_recursive(dir);
}

module_init(fake_init);
module_exit(fake_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hbmguard test: the NVIDIA driver's error callback slot");
