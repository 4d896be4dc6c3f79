// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguard: keeps a per-GPU table of bad HBM pages, bypasses each to a spare
 * page, and tells userspace through /dev/hbmguard.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>

#include "hbm.h"

static unsigned int sim_devices;
module_param(sim_devices, uint, 0444);
MODULE_PARM_DESC(sim_devices, "Simulated devices to create at load, named sim0.. (default 0, at most 256)");

static unsigned int sim_hbm_mib = 1024;
module_param(sim_hbm_mib, uint, 0444);
MODULE_PARM_DESC(sim_hbm_mib, "HBM size of each simulated device in MiB (default 1024)");

static unsigned int sim_page_size = 4096;
module_param(sim_page_size, uint, 0444);
MODULE_PARM_DESC(sim_page_size, "Page size of simulated devices in bytes, a power of two from 4096 to 2097152 (default 4096)");

static unsigned int sim_spare_pages;
module_param(sim_spare_pages, uint, 0444);
MODULE_PARM_DESC(sim_spare_pages, "Spare pages of each simulated device (default 0: one per 100 MiB of HBM)");

static bool sim_backed;
module_param(sim_backed, bool, 0444);
MODULE_PARM_DESC(sim_backed, "Back the simulated devices with memory, allocated on first touch, so that they can be mapped (the aperture; default no, at most 1024 MiB each)");

static bool path_memory_failure = true;
module_param(path_memory_failure, bool, 0444);
MODULE_PARM_DESC(path_memory_failure, "Take poison on range devices from memory_failure() (ras:memory_failure_event) (default on)");

static bool path_mce = true;
module_param(path_mce, bool, 0444);
MODULE_PARM_DESC(path_mce, "Take memory errors on range devices from the x86 machine check decode chain (default on)");

static bool path_edac = true;
module_param(path_edac, bool, 0444);
MODULE_PARM_DESC(path_edac, "Take memory errors on range devices from EDAC drivers (ras:mc_event) (default on)");

static bool path_nvidia = true;
module_param(path_nvidia, bool, 0444);
MODULE_PARM_DESC(path_nvidia, "Take Xids 48, 63, 64, 92, 94, 95, 140, 154, 156, 157, 168, 171 from the NVIDIA driver's nvidia:nvidia_dev_xid tracepoint (open modules 575 and later) when it is loaded (default on)");

char *hbm_xid_module = "nvidia";
module_param_named(xid_module, hbm_xid_module, charp, 0444);
MODULE_PARM_DESC(xid_module, "The module whose nvidia:nvidia_dev_xid tracepoint is probed: a tracepoint of that name in another module is not, whatever its arguments (default nvidia, NVIDIA's open driver)");

/*
 * Set once the module's init has nothing left that may fail.  An open file
 * outlives the call that made it, and a failed init frees the module
 * whatever its files hold (do_init_module(), kernel/module/main.c, 6.1 and
 * 6.12: its reference count is not asked), so an open is refused until
 * then.  A netlink dump would outlive its request too: the family is
 * registered last (hbm_mod_init()).
 */
static bool hbm_live;

bool hbm_module_live(void)
{
	/* pairs with the release at the end of hbm_mod_init(): all it set up */
	return smp_load_acquire(&hbm_live);
}

/*
 * A refused open holds the module from misc_open()'s fops_get() until
 * do_dentry_open()'s fops_put() (drivers/char/misc.c, fs/open.c, 6.1 and
 * 6.12), past misc_mtx, which misc_deregister() waits for: a failed init,
 * its nodes gone (no new opener finds them), waits for the few in flight.
 * Init's own reference is the one left then (module_refcount(): 1); what
 * module_put() does after its decrement, do_init_module()'s
 * synchronize_rcu() waits for.
 */
static void __init refused_opens_wait(void)
{
#ifdef CONFIG_MODULE_UNLOAD
	while (module_refcount(THIS_MODULE) > 1)
		msleep(20);
#endif
}

unsigned int hbm_event_ring = 1024;
module_param_named(event_ring, hbm_event_ring, uint, 0444);
MODULE_PARM_DESC(event_ring, "Events each open /dev/hbmguard buffers, a power of two from 16 to 65536 (default 1024)");

/*
 * Every allocation of the module is counted, so that unloading can tell a
 * leak (the tests fail on it) without kmemleak, which distribution kernels
 * do not enable.
 */
static atomic_long_t hbm_allocations = ATOMIC_LONG_INIT(0);

struct workqueue_struct *hbm_wq;

void *hbm_kalloc(size_t size, bool zero)
{
	void *p = kvmalloc(size, zero ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL);

	if (p)
		atomic_long_inc(&hbm_allocations);
	return p;
}

/* What a user makes the module hold (an open file's ring) is charged to them. */
void *hbm_kalloc_user(size_t size)
{
	void *p = kvmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);

	if (p)
		atomic_long_inc(&hbm_allocations);
	return p;
}

void hbm_kfree(const void *ptr)
{
	if (!ptr)
		return;
	atomic_long_dec(&hbm_allocations);
	kvfree(ptr);
}

static int __init sim_devices_create(void)
{
	struct hbm_device_spec spec = {
		.kind = HBMGUARD_KIND_SIMULATED,
		.page_size = sim_page_size,
		.hbm_size = (u64)sim_hbm_mib << 20,
		.spare_pages = sim_spare_pages,
		.backed = sim_backed,
	};
	char name[HBMGUARD_NAME_LEN];
	struct hbm_device *dev;
	unsigned int i;

	if (sim_devices > HBMGUARD_MAX_DEVICES)
		return -EINVAL;
	for (i = 0; i < sim_devices; i++) {
		snprintf(name, sizeof(name), "sim%u", i);
		spec.name = name;
		dev = hbm_device_create(&spec);
		if (IS_ERR(dev)) {
			pr_err("cannot create simulated device %s: %ld\n", name, PTR_ERR(dev));
			return PTR_ERR(dev);
		}
		hbm_device_put(dev);
	}
	return 0;
}

/* The kernel's RAS paths, each behind its own parameter. */
static const struct {
	const char *name;
	bool *enabled;
	int (*init)(void);
	void (*exit)(void);
} hbm_paths[] = {
	{ "memory_failure", &path_memory_failure, hbm_memory_failure_init,
	  hbm_memory_failure_exit },
	{ "the MCE decode chain", &path_mce, hbm_mce_init, hbm_mce_exit },
	{ "ras:mc_event", &path_edac, hbm_edac_init, hbm_edac_exit },
	{ "the NVIDIA driver", &path_nvidia, hbm_nvidia_init, hbm_nvidia_exit },
};

static void paths_exit(unsigned int n)
{
	while (n--)
		if (*hbm_paths[n].enabled)
			hbm_paths[n].exit();
}

static int __init paths_init(void)
{
	unsigned int i;
	int err;

	for (i = 0; i < ARRAY_SIZE(hbm_paths); i++) {
		if (!*hbm_paths[i].enabled)
			continue;
		err = hbm_paths[i].init();
		if (err) {
			pr_err("cannot attach to %s: %d\n", hbm_paths[i].name, err);
			paths_exit(i);
			return err;
		}
	}
	return 0;
}

static int __init hbm_mod_init(void)
{
	int err;

	if (!is_power_of_2(hbm_event_ring) || hbm_event_ring < 16 ||
	    hbm_event_ring > 65536) {
		pr_err("event_ring=%u: must be a power of two from 16 to 65536\n",
		       hbm_event_ring);
		return -EINVAL;
	}
	err = hbm_aperture_init();
	if (err)
		return err;
	err = hbm_intake_init();
	if (err)
		goto err_intake;
	hbm_wq = alloc_workqueue("hbmguard", WQ_UNBOUND, 0);
	if (!hbm_wq) {
		err = -ENOMEM;
		goto err_wq;
	}
	err = hbm_provider_init();
	if (err)
		goto err_provider;
	/*
	 * Devices first, then the paths that report to them, then the
	 * interfaces that reach them: the device nodes, and the netlink
	 * family last.  Once registered the family is anyone's to find, and
	 * nlctrl's policy dump, which any user may ask of it, holds what it
	 * found across rounds and is no dump of ours to refuse: nothing may
	 * fail after it.  A node found before is refused an open until then
	 * (hbm_module_live()), and a failure waits for the opens it refused
	 * (refused_opens_wait()).
	 */
	err = hbm_selftests();
	if (err)
		goto err_devices;
	err = sim_devices_create();
	if (err)
		goto err_devices;
	err = paths_init();
	if (err)
		goto err_paths;
	err = hbm_chardev_init();
	if (err)
		goto err_chardev;
	err = hbm_selftest_fail_load(1) ?: hbm_netlink_init();
	if (err)
		goto err_netlink;
	/* what init set up, before an open may use it */
	smp_store_release(&hbm_live, true);
	pr_info("loaded: API version %d, %u devices\n", HBMGUARD_API_VERSION,
		hbm_device_count());
	return 0;

err_netlink:
	hbm_chardev_exit();
err_chardev:
	paths_exit(ARRAY_SIZE(hbm_paths));
err_paths:
	hbm_intake_flush();	/* as at unload: what they queued, before the devices go */
err_devices:
	hbm_devices_destroy_all();
	hbm_provider_exit();
err_provider:
	destroy_workqueue(hbm_wq);
err_wq:
	hbm_intake_exit();
err_intake:
	hbm_aperture_exit();
	refused_opens_wait();
	return err;
}

/*
 * The reverse: nothing may reach a device while they are destroyed.  The
 * paths stop reporting; unregistering the family waits for the commands
 * running (dumps and open files pin the module: none is); then what was
 * queued is applied, the devices go, and the workqueue drains their frees.
 */
static void __exit hbm_mod_exit(void)
{
	long left;

	paths_exit(ARRAY_SIZE(hbm_paths));
	hbm_netlink_exit();
	hbm_chardev_exit();
	hbm_intake_flush();
	hbm_devices_destroy_all();
	hbm_provider_exit();
	destroy_workqueue(hbm_wq);	/* frees the last devices */
	hbm_intake_exit();
	hbm_aperture_exit();
	left = atomic_long_read(&hbm_allocations);
	if (left)
		pr_err("leak: %ld allocations not freed at unload\n", left);
	else
		pr_info("unloaded\n");
}

module_init(hbm_mod_init);
module_exit(hbm_mod_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("The hbmguard developers");
MODULE_DESCRIPTION("Bad HBM page table and bypass for GPU memory");
MODULE_VERSION("0.1");
