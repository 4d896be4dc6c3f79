// SPDX-License-Identifier: GPL-2.0
/*
 * hbm_fake_nvdev: the NVIDIA driver's character devices, as nvidia.ko
 * registers them, so that a test can open /dev/nvidiactl and /dev/nvidiaN
 * without NVIDIA hardware, and so that systemd's DeviceAllow=char-nvidia,
 * which it resolves by the name in /proc/devices, finds them.
 *
 * From kernel-open/nvidia/nv.c, nvidia_init_module() and nv_register_chrdev(),
 * of NVIDIA's open-gpu-kernel-modules 595.45.04 (the same from 545.23.06):
 * two regions of major NV_MAJOR_DEVICE_NUMBER (195,
 * kernel-open/common/inc/nv-chardev-numbers.h), register_chrdev_region()
 * and cdev_add():
 *	minors 0 .. NV_MINOR_DEVICE_NUMBER_REGULAR_MAX (247), "nvidia": the GPUs
 *	minor NV_MINOR_DEVICE_NUMBER_CONTROL_DEVICE (255), "nvidiactl"
 * (535 and older register the whole major once, as "nvidia-frontend",
 * kernel-open/nvidia/nv-frontend.c.)  A GPU's minor is the first free one
 * (nv_linux_assign_minor_locked()); opening a minor with no GPU is -ENODEV
 * (nvidia_open(): find_minor_locked() finds none).  Like the driver, this
 * creates no node: nvidia-modprobe or udev rules do, or the test (mknod).
 *
 *   gpus=N	minors 0 .. N-1 open, as N GPUs (default 2, at most 248)
 *
 * Nothing is read or written through the files: the test double of
 * libnvidia-ml.so.1 (tests/nvml/fake_nvml.c) only opens them, as the real
 * library must before it can talk to the driver.
 */
#include <linux/cdev.h>
#include <linux/fs.h>
#include <linux/module.h>

#define NV_MAJOR_DEVICE_NUMBER			195
#define NV_MINOR_DEVICE_NUMBER_REGULAR_MAX	247
#define NV_MINOR_DEVICE_NUMBER_CONTROL_DEVICE	255

static unsigned int gpus = 2;
module_param(gpus, uint, 0444);
MODULE_PARM_DESC(gpus, "minors 0 .. gpus-1 open as GPUs (default 2)");

static struct cdev devices_cdev, control_cdev;

static int fake_open(struct inode *inode, struct file *file)
{
	unsigned int minor = iminor(inode);

	if (minor == NV_MINOR_DEVICE_NUMBER_CONTROL_DEVICE || minor < gpus)
		return nonseekable_open(inode, file);
	return -ENODEV;
}

static const struct file_operations fake_fops = {
	.owner = THIS_MODULE,
	.open = fake_open,
};

/* nv_register_chrdev() of nv.c */
static int fake_register(unsigned int minor, unsigned int count, struct cdev *cdev,
			 const char *name)
{
	dev_t dev = MKDEV(NV_MAJOR_DEVICE_NUMBER, minor);
	int rc;

	rc = register_chrdev_region(dev, count, name);
	if (rc < 0)
		return rc;
	cdev_init(cdev, &fake_fops);
	cdev->owner = THIS_MODULE;
	rc = cdev_add(cdev, dev, count);
	if (rc < 0)
		unregister_chrdev_region(dev, count);
	return rc;
}

static void fake_unregister(unsigned int minor, unsigned int count, struct cdev *cdev)
{
	cdev_del(cdev);
	unregister_chrdev_region(MKDEV(NV_MAJOR_DEVICE_NUMBER, minor), count);
}

static int __init fake_init(void)
{
	int rc;

	if (gpus > NV_MINOR_DEVICE_NUMBER_REGULAR_MAX + 1)
		return -EINVAL;
	rc = fake_register(0, NV_MINOR_DEVICE_NUMBER_REGULAR_MAX + 1, &devices_cdev, "nvidia");
	if (rc < 0)
		return rc;
	rc = fake_register(NV_MINOR_DEVICE_NUMBER_CONTROL_DEVICE, 1, &control_cdev, "nvidiactl");
	if (rc < 0)
		goto err_devices;
	return 0;

err_devices:
	fake_unregister(0, NV_MINOR_DEVICE_NUMBER_REGULAR_MAX + 1, &devices_cdev);
	return rc;
}

static void __exit fake_exit(void)
{
	fake_unregister(NV_MINOR_DEVICE_NUMBER_CONTROL_DEVICE, 1, &control_cdev);
	fake_unregister(0, NV_MINOR_DEVICE_NUMBER_REGULAR_MAX + 1, &devices_cdev);
}

module_init(fake_init);
module_exit(fake_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hbmguard test: the NVIDIA driver's character devices, major 195");
