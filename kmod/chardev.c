// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/hbmguard: ioctls, read() and poll().  The protocol is documented in
 * uapi/linux/hbmguard.h.
 *
 * Each ioctl is dispatched on its number and direction only: the size bits
 * of the command would make a caller built against a newer, larger struct
 * fail with ENOTTY, where the struct's own size field lets it work.  Every
 * argument is validated whole before anything changes.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "hbm.h"

/* Copy the caller's struct in: its first field says how much it knows. */
static int arg_in(void *karg, size_t ksize, size_t ver0, void __user *uarg)
{
	u32 usize;
	int err;

	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize < ver0 || usize > PAGE_SIZE)
		return -EINVAL;
	err = copy_struct_from_user(karg, ksize, uarg, usize);
	/* The size checked, not the one a second fetch found: arg_out() uses it. */
	*(u32 *)karg = usize;
	return err;
}

/* Copy the result out, as much of it as the caller's struct holds. */
static int arg_out(void __user *uarg, const void *karg, size_t ksize)
{
	u32 usize = *(const u32 *)karg;

	return copy_to_user(uarg, karg, min_t(size_t, ksize, usize)) ? -EFAULT : 0;
}

#define ARG_IN(karg, ver0, uarg) arg_in(&(karg), sizeof(karg), ver0, uarg)
#define ARG_OUT(uarg, karg) arg_out(uarg, &(karg), sizeof(karg))

static bool all_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

static int ioc_get_info(void __user *uarg)
{
	struct hbmguard_info info;
	int err = ARG_IN(info, HBMGUARD_INFO_SIZE_VER0, uarg);

	if (err)
		return err;
	if (info.flags)
		return -EINVAL;
	info.version = HBMGUARD_API_VERSION;
	info.nr_devices = hbm_device_count();
	info.generation = hbm_generation();
	info.seqnum = hbm_event_seqnum();
	info.max_devices = HBMGUARD_MAX_DEVICES;
	info.event_size = sizeof(struct hbmguard_event);
	info.event_ring = hbm_event_ring;
	info.features = HBMGUARD_FEATURE_APERTURE_NODE | HBMGUARD_FEATURE_APERTURE_NEEDS_WRITE;
	memset(info.reserved, 0, sizeof(info.reserved));
	return ARG_OUT(uarg, info);
}

static int ioc_list_devices(void __user *uarg)
{
	struct hbmguard_device_list list;
	u32 *ids;
	int err = ARG_IN(list, HBMGUARD_DEVICE_LIST_SIZE_VER0, uarg);

	if (err)
		return err;
	if (list.flags)
		return -EINVAL;
	ids = kcalloc(HBMGUARD_MAX_DEVICES, sizeof(*ids), GFP_KERNEL);
	if (!ids)
		return -ENOMEM;
	list.count = hbm_device_ids(ids, HBMGUARD_MAX_DEVICES);
	if (copy_to_user(u64_to_user_ptr(list.ids), ids,
			 min(list.count, list.capacity) * sizeof(*ids)))
		err = -EFAULT;
	kfree(ids);
	return err ?: ARG_OUT(uarg, list);
}

/* Look up the device an argument names. */
static struct hbm_device *arg_device(u32 id)
{
	return hbm_device_get(id) ?: ERR_PTR(-ENODEV);
}

static void fill_device_info(struct hbm_device *dev,
			     struct hbmguard_device_info *info)
{
	const struct hbm_core *c = &dev->core;

	strscpy(info->name, dev->name, sizeof(info->name));
	strscpy(info->identity, dev->identity, sizeof(info->identity));
	info->hbm_size = dev->hbm_size;
	info->usable_size = hbm_usable_size(dev);
	info->page_size = 1U << dev->page_shift;
	info->kind = dev->kind;

	mutex_lock(&dev->lock);
	info->health = c->health;
	info->spare_total = c->table.spare_total;
	info->spare_used = c->table.spare_used;
	info->spare_bad = c->table.spare_bad;
	info->nr_retired = c->table.pages[HBMGUARD_STATE_RETIRED];
	info->nr_pending = c->table.pages[HBMGUARD_STATE_PENDING];
	info->nr_failed = c->table.pages[HBMGUARD_STATE_FAILED];
	info->nr_extents = c->table.nr_extents;
	info->generation = dev->generation;
	info->ce_events = c->ce_events;
	info->ue_events = c->ue_events;
	info->policy.ce_threshold = c->policy.ce_threshold;
	info->policy.ce_window = c->policy.ce_window;
	info->policy.retire_limit = c->policy.retire_limit;
	info->table_bytes = c->table.bytes;
	info->ce_forgotten = c->ce_forgotten;
	info->data_lost = dev->data_lost;
	info->data_lost_seqnum = dev->data_lost_seqnum;
	info->added_seqnum = dev->added_seqnum;
	mutex_unlock(&dev->lock);
	info->errors_dropped = atomic64_read(&dev->errors_dropped);
}

static int ioc_get_device(void __user *uarg)
{
	struct hbmguard_device_info info;
	struct hbm_device *dev;
	u32 size, id;
	int err = ARG_IN(info, HBMGUARD_DEVICE_INFO_SIZE_VER0, uarg);

	if (err)
		return err;
	if (info.flags)
		return -EINVAL;
	dev = arg_device(info.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	size = info.size;
	id = info.device;
	memset(&info, 0, sizeof(info));
	info.size = size;
	info.device = id;
	fill_device_info(dev, &info);
	hbm_device_put(dev);
	return ARG_OUT(uarg, info);
}

static int ioc_translate(void __user *uarg)
{
	struct hbmguard_translate tr;
	struct hbm_device *dev;
	struct hbm_extent e;
	bool bad;
	int err = ARG_IN(tr, HBMGUARD_TRANSLATE_SIZE_VER0, uarg);

	if (err)
		return err;
	if (tr.flags)
		return -EINVAL;
	dev = arg_device(tr.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	if (tr.offset >= hbm_usable_size(dev)) {
		hbm_device_put(dev);
		return -ERANGE;
	}
	mutex_lock(&dev->lock);
	bad = hbm_table_lookup(&dev->core.table, tr.offset >> dev->page_shift, &e);
	mutex_unlock(&dev->lock);

	tr.state = bad ? e.state : HBMGUARD_STATE_CLEAN;
	tr.translated = tr.offset;
	/* A GPU's driver bypasses its retired pages itself: no spare of ours. */
	if (bad && e.state == HBMGUARD_STATE_RETIRED && e.spare != HBM_NO_SPARE)
		tr.translated = hbm_usable_size(dev) +
			(((u64)e.spare + (tr.offset >> dev->page_shift) - e.first)
			 << dev->page_shift) +
			(tr.offset & ((1ULL << dev->page_shift) - 1));
	hbm_device_put(dev);
	return ARG_OUT(uarg, tr);
}

static void extent_to_user(const struct hbm_device *dev,
			   const struct hbm_extent *e, struct hbmguard_extent *u)
{
	memset(u, 0, sizeof(*u));
	u->offset = (u64)e->first << dev->page_shift;
	u->length = (u64)e->nr << dev->page_shift;
	u->spare_offset = e->spare == HBM_NO_SPARE ? HBMGUARD_NO_SPARE :
			  hbm_usable_size(dev) + ((u64)e->spare << dev->page_shift);
	u->first_seen = e->first_seen;
	u->last_seen = e->last_seen;
	u->state = e->state;
	u->source = e->source;
	u->error_count = e->errors;
}

#define LIST_CHUNK 128	/* extents copied per hold of the device lock */

static int list_extents(struct hbm_device *dev, struct hbmguard_extent_query *q)
{
	u32 shift = dev->page_shift, start = q->start >> shift, end, next, n, i;
	char __user *out = u64_to_user_ptr(q->entries);
	struct hbmguard_extent u;
	struct hbm_extent *buf;
	int err = 0;

	end = (q->end ?: hbm_usable_size(dev)) >> shift;
	buf = kmalloc_array(LIST_CHUNK, sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	q->count = 0;
	next = start;
	while (q->count < q->capacity && next < end) {
		mutex_lock(&dev->lock);
		n = hbm_table_list(&dev->core.table, next, end, buf,
				   min_t(u32, LIST_CHUNK, q->capacity - q->count),
				   &next);
		mutex_unlock(&dev->lock);
		for (i = 0; i < n; i++, q->count++) {
			extent_to_user(dev, &buf[i], &u);
			if (copy_to_user(out + (size_t)q->count * q->entry_size, &u,
					 min_t(size_t, sizeof(u), q->entry_size)) ||
			    (q->entry_size > sizeof(u) &&
			     clear_user(out + (size_t)q->count * q->entry_size + sizeof(u),
					q->entry_size - sizeof(u)))) {
				err = -EFAULT;
				goto out;
			}
		}
		if (!n)
			break;
	}
	q->next = (u64)next << shift;
out:
	kfree(buf);
	return err;
}

static int ioc_list_bad(void __user *uarg)
{
	struct hbmguard_extent_query q;
	struct hbm_device *dev;
	u64 mask, usable;
	int err = ARG_IN(q, HBMGUARD_EXTENT_QUERY_SIZE_VER0, uarg);

	if (err)
		return err;
	if (q.flags || !q.capacity ||
	    q.capacity > HBMGUARD_LIST_MAX ||
	    q.entry_size < HBMGUARD_EXTENT_SIZE_VER0 || q.entry_size > 4096 ||
	    q.entry_size % 8)
		return -EINVAL;
	dev = arg_device(q.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	mask = (1ULL << dev->page_shift) - 1;
	usable = hbm_usable_size(dev);
	if ((q.start | q.end) & mask)
		err = -EINVAL;
	else if (q.start > usable || q.end > usable || (q.end && q.end < q.start))
		err = -ERANGE;
	else
		err = list_extents(dev, &q);
	hbm_device_put(dev);
	return err ?: ARG_OUT(uarg, q);
}

static int ioc_extent_op(void __user *uarg, enum hbm_op op)
{
	struct hbmguard_extent_op x;
	struct hbm_device *dev;
	int err = ARG_IN(x, HBMGUARD_EXTENT_OP_SIZE_VER0, uarg);

	if (err)
		return err;
	if (!all_zero(x.reserved, sizeof(x.reserved)))
		return -EINVAL;
	if (op == HBM_OP_CLEAR) {
		if (x.flags || x.source)
			return -EINVAL;
	} else {
		if (x.flags & ~HBMGUARD_RETIRE_PENDING)
			return -EINVAL;
		if (x.source != HBMGUARD_SOURCE_ADMIN &&
		    x.source != HBMGUARD_SOURCE_RESTORED)
			return -EINVAL;
		if (x.flags & HBMGUARD_RETIRE_PENDING)
			op = HBM_OP_PENDING;
	}
	dev = arg_device(x.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	err = hbm_device_apply(dev, op, x.offset, x.length, x.source);
	hbm_device_put(dev);
	return err;
}

static int ioc_set_policy(void __user *uarg)
{
	struct hbmguard_policy p;
	struct hbm_policy kp;
	struct hbm_device *dev;
	int err = ARG_IN(p, HBMGUARD_POLICY_SIZE_VER0, uarg);

	if (err)
		return err;
	if (!p.flags || p.flags & ~HBMGUARD_POLICY_ALL || p.reserved0 ||
	    p.params.reserved || !all_zero(p.reserved, sizeof(p.reserved)))
		return -EINVAL;
	/* Fields not being set must be zero, so a typo in flags is caught. */
	if ((!(p.flags & HBMGUARD_POLICY_CE_THRESHOLD) && p.params.ce_threshold) ||
	    (!(p.flags & HBMGUARD_POLICY_CE_WINDOW) && p.params.ce_window) ||
	    (!(p.flags & HBMGUARD_POLICY_RETIRE_LIMIT) && p.params.retire_limit))
		return -EINVAL;
	dev = arg_device(p.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	kp.ce_threshold = p.params.ce_threshold;
	kp.ce_window = p.params.ce_window;
	kp.retire_limit = p.params.retire_limit;
	err = hbm_device_set_policy(dev, &kp, p.flags);
	hbm_device_put(dev);
	return err;
}

static int ioc_inject(void __user *uarg)
{
	struct hbmguard_inject in;
	struct hbm_device *dev;
	int err = ARG_IN(in, HBMGUARD_INJECT_SIZE_VER0, uarg);

	if (err)
		return err;
	if (in.flags || in.reserved0 || !all_zero(in.reserved, sizeof(in.reserved)))
		return -EINVAL;
	if (!in.kind || in.kind >= __HBMGUARD_ERROR_MAX || !in.count ||
	    in.count > 0xffff || (in.kind != HBMGUARD_ERROR_CE && in.count != 1))
		return -EINVAL;
	dev = arg_device(in.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	/* Applied here, not through the intake, which counts the others. */
	hbm_path_count(HBMGUARD_PATH_INJECT, false);
	err = hbm_device_report(dev, in.offset, in.kind, in.count,
				HBMGUARD_PATH_INJECT);
	hbm_device_put(dev);
	return err;
}

static int ioc_sim_create(void __user *uarg)
{
	struct hbmguard_sim_create sc;
	struct hbm_device_spec spec;
	struct hbm_device *dev;
	int err = ARG_IN(sc, HBMGUARD_SIM_CREATE_SIZE_VER0, uarg);

	if (err)
		return err;
	if (sc.flags & ~HBMGUARD_SIM_BACKED || sc.reserved0 ||
	    !all_zero(sc.reserved, sizeof(sc.reserved)))
		return -EINVAL;
	if (!memchr(sc.name, 0, sizeof(sc.name)) ||
	    !memchr(sc.identity, 0, sizeof(sc.identity)))
		return -EINVAL;
	spec = (struct hbm_device_spec){
		.kind = HBMGUARD_KIND_SIMULATED,
		.page_size = sc.page_size,
		.hbm_size = sc.hbm_size,
		.spare_pages = sc.spare_pages,
		.name = sc.name,
		.identity = sc.identity,
		.backed = sc.flags & HBMGUARD_SIM_BACKED,
	};
	dev = hbm_device_create(&spec);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	sc.device = dev->id;
	err = ARG_OUT(uarg, sc);
	if (err)	/* the caller cannot learn the id: take it back */
		hbm_device_remove(dev);
	hbm_device_put(dev);
	return err;
}

static int ioc_sim_destroy(void __user *uarg)
{
	struct hbmguard_device_ref ref;
	int err = ARG_IN(ref, HBMGUARD_DEVICE_REF_SIZE_VER0, uarg);

	if (err)
		return err;
	if (ref.flags || ref.reserved)
		return -EINVAL;
	return hbm_device_destroy(ref.device, HBMGUARD_KIND_SIMULATED);
}

static int ioc_restored(void __user *uarg)
{
	struct hbmguard_extent_op x;
	struct hbm_device *dev;
	int err = ARG_IN(x, HBMGUARD_EXTENT_OP_SIZE_VER0, uarg);

	if (err)
		return err;
	if (x.flags || x.source || !all_zero(x.reserved, sizeof(x.reserved)))
		return -EINVAL;
	dev = arg_device(x.device);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	err = hbm_aperture_restored(dev, x.offset, x.length);
	hbm_device_put(dev);
	return err;
}

static int ioc_retire(void __user *uarg)
{
	return ioc_extent_op(uarg, HBM_OP_RETIRE);
}

static int ioc_clear(void __user *uarg)
{
	return ioc_extent_op(uarg, HBM_OP_CLEAR);
}

/*
 * The access model (uapi PRIVILEGES).  Three levels, each a file permission
 * or a capability, never a uid:
 *
 * READ: whoever could open a node: the table, the events, the devices.
 * WRITE: a device's memory, the aperture, mapped at all, and declaring its
 * lost pages restored: a file open for writing.  The memory is a job's data
 * (its weights); the readers, monitoring and allocators, need where memory
 * is bad, not what it holds.  Restoring is writing: it makes lost pages read
 * zero where they raised SIGBUS, which only the memory's writer may decide.
 * ADMIN: the table and the devices: CAP_SYS_ADMIN in the initial user
 * namespace, as every netlink command needs (netlink.c), of the caller and
 * of the file's opener both, as netlink_capable() asks of a socket's: a
 * privileged program handed an fd of an unprivileged user's (its stdin, one
 * passed to it) must not change the table through it (helper-187).  READ
 * and WRITE are what the file was opened for, so an fd handed to another
 * process carries them.
 *
 * Two nodes give READ and WRITE to two groups (the same operations, other
 * modes): /dev/hbmguard, 0640 (the udev rule makes its group hbmguard), and
 * /dev/hbmguard-aperture, 0600 (the rule: 0660, group hbmguard-aperture,
 * for the training users).  Both have the same operations: a rank needs
 * the reads too.  Both belong to uid 0: root of the initial user namespace
 * without CAP_SYS_ADMIN (a container's, its capabilities dropped) opens
 * both for writing, as their owner, and so is a training user, never an
 * admin; root in a user namespace that does not map uid 0 is any user.
 *
 * The aperture has no owner per job.  A member of hbmguard-aperture can read
 * and write every memory-backed device's memory, other members' jobs'
 * included, and declare their lost pages restored: a job that had not yet
 * touched them then reads zeros without a signal.  The group is for users
 * who trust each other with their device memory (one tenant's jobs on a
 * node).  What no member can do: change the table or the devices, or join,
 * answer or abort another uid's job in hbmguardd (jobs are per uid).  A
 * grant narrower than the group, the daemon handing a registered rank an fd
 * for its own device only, needs the daemon to know which uid owns which
 * device; it does not.
 */
enum hbm_ioctl_access { HBM_IOC_READ, HBM_IOC_WRITE, HBM_IOC_ADMIN };

static const struct {
	unsigned int cmd;
	enum hbm_ioctl_access access;
	int (*handler)(void __user *uarg);
} hbm_ioctls[] = {
	{ HBMGUARD_IOC_GET_INFO, HBM_IOC_READ, ioc_get_info },
	{ HBMGUARD_IOC_LIST_DEVICES, HBM_IOC_READ, ioc_list_devices },
	{ HBMGUARD_IOC_GET_DEVICE, HBM_IOC_READ, ioc_get_device },
	{ HBMGUARD_IOC_TRANSLATE, HBM_IOC_READ, ioc_translate },
	{ HBMGUARD_IOC_LIST_BAD, HBM_IOC_READ, ioc_list_bad },
	{ HBMGUARD_IOC_RETIRE, HBM_IOC_ADMIN, ioc_retire },
	{ HBMGUARD_IOC_CLEAR, HBM_IOC_ADMIN, ioc_clear },
	{ HBMGUARD_IOC_SET_POLICY, HBM_IOC_ADMIN, ioc_set_policy },
	{ HBMGUARD_IOC_INJECT, HBM_IOC_ADMIN, ioc_inject },
	{ HBMGUARD_IOC_RESTORED, HBM_IOC_WRITE, ioc_restored },
	{ HBMGUARD_IOC_SIM_CREATE, HBM_IOC_ADMIN, ioc_sim_create },
	{ HBMGUARD_IOC_SIM_DESTROY, HBM_IOC_ADMIN, ioc_sim_destroy },
};

static long hbm_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	unsigned int i;

	if (_IOC_TYPE(cmd) != HBMGUARD_IOC_MAGIC)
		return -ENOTTY;
	for (i = 0; i < ARRAY_SIZE(hbm_ioctls); i++) {
		unsigned int known = hbm_ioctls[i].cmd;

		if (_IOC_NR(cmd) != _IOC_NR(known) || _IOC_DIR(cmd) != _IOC_DIR(known))
			continue;
		if (hbm_ioctls[i].access == HBM_IOC_ADMIN &&
		    !(file_ns_capable(file, &init_user_ns, CAP_SYS_ADMIN) &&
		      capable(CAP_SYS_ADMIN)))
			return -EPERM;
		if (hbm_ioctls[i].access == HBM_IOC_WRITE && !(file->f_mode & FMODE_WRITE))
			return -EBADF;
		return hbm_ioctls[i].handler((void __user *)arg);
	}
	return -ENOTTY;
}

static int hbm_open(struct inode *inode, struct file *file)
{
	struct hbm_reader *r;

	/* A node found before the module's init is over (hbm_module_live()). */
	if (!hbm_module_live())
		return -EAGAIN;
	/* The administrator always gets in; others share HBMGUARD_MAX_OPENS. */
	/* Asked of every open: no audit record of a denial for each user's. */
	r = hbm_reader_open(ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN));
	if (IS_ERR(r))
		return PTR_ERR(r);
	file->private_data = r;
	hbm_aperture_open(file);
	return stream_open(inode, file);
}

static int hbm_release(struct inode *inode, struct file *file)
{
	hbm_reader_close(file->private_data);
	return 0;
}

static ssize_t hbm_read(struct file *file, char __user *buf, size_t len,
			loff_t *ppos)
{
	return hbm_reader_read(file->private_data, buf, len,
			       file->f_flags & O_NONBLOCK);
}

static __poll_t hbm_poll(struct file *file, struct poll_table_struct *pt)
{
	return hbm_reader_poll(file->private_data, file, pt);
}

/*
 * Both regions must be mapped shared and not executable.  A private mapping
 * is copy-on-write: the aperture, a PFN map, cannot be (the first fault
 * would BUG() in vmf_insert_pfn_prot(), mm/memory.c in 6.1 and 6.12), and a
 * copy of the table would be a table no longer published.  Neither holds
 * code.  A read-only file maps no aperture at all (WRITE, the access model
 * above); its table mapping has VM_MAYWRITE cleared by do_mmap(), so
 * mprotect() cannot make it writable.
 */
static int hbm_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EACCES;
	hbm_vm_flags_clear(vma, VM_MAYEXEC);
	if (vma->vm_pgoff & (HBMGUARD_MMAP_APERTURE(0) >> PAGE_SHIFT)) {
		if (!(file->f_mode & FMODE_WRITE))	/* WRITE: see the access model */
			return -EACCES;
		return hbm_aperture_mmap(vma);
	}
	return hbm_map_mmap(vma);
}

static const struct file_operations hbm_fops = {
	.owner = THIS_MODULE,	/* an open file pins the module: rmmod is EBUSY */
	.open = hbm_open,
	.release = hbm_release,
	.read = hbm_read,
	.poll = hbm_poll,
	.mmap = hbm_mmap,
	.unlocked_ioctl = hbm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice hbm_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = HBMGUARD_DEVICE_NAME,
	.fops = &hbm_fops,
	.mode = 0640,
};

/* The writers' node: 0600 until udev gives it the group (the access model). */
static struct miscdevice hbm_aperture_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = HBMGUARD_APERTURE_DEVICE_NAME,
	.fops = &hbm_fops,
	.mode = 0600,
};

int hbm_chardev_init(void)
{
	int err = misc_register(&hbm_misc);

	if (err)
		return err;
	err = hbm_selftest_fail_load(2) ?: misc_register(&hbm_aperture_misc);
	if (err)
		misc_deregister(&hbm_misc);
	return err;
}

void hbm_chardev_exit(void)
{
	misc_deregister(&hbm_aperture_misc);
	misc_deregister(&hbm_misc);
}
