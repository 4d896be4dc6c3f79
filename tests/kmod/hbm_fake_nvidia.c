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
 *   echo "log DDDD:BB:DD.F CODE" > ctl
 *	print the driver's kernel log line of that Xid, as a driver without the
 *	tracepoint does (older than 575, or the proprietary modules); any
 *	address, a PCI device there or not
 *   echo "report DDDD:BB:DD.F CODE" > ctl
 *	both, as the driver reports every Xid: the line, then the tracepoint
 *   echo "line TEXT" > ctl
 *	print TEXT as the driver prints its lines (a line the driver's format
 *	does not have, for the daemon's parser)
 *
 * The line is the one of krcReportXid() in src/nvidia/src/kernel/gpu/rc/
 * kernel_rc.c (open-gpu-kernel-modules 570.86.15 .. 595.45.04), with a
 * process: "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s%s\n"
 * (domain, bus, device).  Both come from one call, nvErrorLog2() in
 * src/nvidia/src/kernel/os/os_init.c: krcReportXid() first, then
 * osErrorLogV() -> nv_log_error() -> nv_report_error(), which fires the
 * tracepoint.  The driver prints through nv_printf() (kernel-open/nvidia/
 * os-interface.c), which prefixes every format with KERN_CONT: the record
 * gets the default level and the 'c' flag, as here.
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

#define FAKE_MSG "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."

/* nv_printf(): KERN_CONT and the driver's format (see the top). */
static void log_xid(unsigned int domain, unsigned int bus, unsigned int slot, unsigned int xid)
{
	printk(KERN_CONT "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s%s\n",
	       domain, bus, slot, xid, "1", "hbm_fake_nvidia", FAKE_MSG, "");
}

static ssize_t ctl_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	unsigned int domain, bus, slot, fn, xid;
	struct pci_dev *pdev;
	char buf[256], cmd[8];

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	if (!strncmp(buf, "line ", 5)) {
		printk(KERN_CONT "%s", buf + 5);
		return len;
	}
	if (sscanf(buf, "%7s %x:%x:%x.%x %u", cmd, &domain, &bus, &slot, &fn, &xid) != 6 ||
	    bus > 0xff || slot > 0x1f || fn > 7)
		return -EINVAL;
	if (!strcmp(cmd, "log")) {
		log_xid(domain, bus, slot, xid);
		return len;
	}
	if (strcmp(cmd, "xid") && strcmp(cmd, "report"))
		return -EINVAL;
	pdev = pci_get_domain_bus_and_slot(domain, bus, PCI_DEVFN(slot, fn));
	if (!pdev)
		return -ENODEV;
	if (!strcmp(cmd, "report"))
		log_xid(domain, bus, slot, xid);
	spin_lock_irq(&fire_lock);
	trace_nvidia_dev_xid(pdev, xid, FAKE_MSG);
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
