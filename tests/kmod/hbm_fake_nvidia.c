// SPDX-License-Identifier: GPL-2.0
/*
 * hbm_fake_nvidia: offers the NVIDIA driver's Xid tracepoint,
 * nvidia:nvidia_dev_xid, so that hbmguard's Xid path can be tested without
 * NVIDIA hardware.  The event is declared by nv-tracepoint.h, a verbatim copy
 * of kernel-open/nvidia/nv-tracepoint.h of NVIDIA's open-gpu-kernel-modules
 * 580.142 (the same from 575.51.02, where it first appears, to 595.45.04);
 * the driver fires it from nv_report_error() (kernel-open/nvidia/
 * nv-report-err.c), in atomic context when it cannot sleep.
 *
 *   echo "xid DDDD:BB:DD.F CODE" > ctl
 *	fire it for that PCI device, under a spinlock with interrupts off;
 *	-ENODEV when there is no such PCI device
 */
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "nvidia_xid.h"

#define CREATE_TRACE_POINTS
#include "nv-tracepoint.h"

/* hbmguard's probe has the type NVIDIA's TP_PROTO makes. */
static_assert(__same_type(&register_trace_nvidia_dev_xid,
			  int (*)(hbm_nv_xid_probe_t, void *)));

static DEFINE_SPINLOCK(fire_lock);
static struct dentry *dir;

static ssize_t ctl_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	unsigned int domain, bus, slot, fn, xid;
	struct pci_dev *pdev;
	char buf[64];

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (sscanf(buf, "xid %x:%x:%x.%x %u", &domain, &bus, &slot, &fn, &xid) != 5 ||
	    bus > 0xff || slot > 0x1f || fn > 7)
		return -EINVAL;
	pdev = pci_get_domain_bus_and_slot(domain, bus, PCI_DEVFN(slot, fn));
	if (!pdev)
		return -ENODEV;
	spin_lock_irq(&fire_lock);
	trace_nvidia_dev_xid(pdev, xid, "pid=1, name=hbm_fake_nvidia, a test Xid");
	spin_unlock_irq(&fire_lock);
	pci_dev_put(pdev);
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
MODULE_DESCRIPTION("hbmguard test: the NVIDIA driver's nvidia:nvidia_dev_xid tracepoint");
