// SPDX-License-Identifier: GPL-2.0
/*
 * The aperture: a memory-backed device mapped into a process, steering every
 * access around bad pages (the protocol is in uapi/linux/hbmguard.h).
 *
 * VFIO's pattern: the mapping is VM_PFNMAP and empty at first; the fault
 * handler looks the page up in the table and inserts the pfn of what serves
 * it, the page itself or its spare.  When pages are retired, their mappings
 * are zapped with unmap_mapping_range(), so the next access faults again and
 * finds the spare.  Zapping, copying and faulting all hold the device lock,
 * so a fault waits for a copy: a thread that writes a page while it is being
 * retired has its write either copied or made to the spare, never lost.
 *
 * Every open file's f_mapping is the address_space of one inode the module
 * owns, on an internal pseudo mount (as DRM does, drivers/gpu/drm/drm_drv.c):
 * one zap finds every mapping, whichever device node was opened, and the
 * mapping lives exactly as long as the module, not as long as some node.
 *
 * A mapping must be shared and never executable: a private one would be
 * copy-on-write, which a PFN map cannot be (vmf_insert_pfn_prot() BUG()s on
 * it, mm/memory.c in 6.1 and 6.12).  Growing it is refused by VM_DONTEXPAND.
 *
 * @served remembers which spare holds each retired page's data: a page whose
 * spare changes (retired, cleared, moved) has its data copied from where it
 * was to where it goes, or is marked lost.  The copies read memory that is
 * degrading, so they are machine-check safe (copy_mc_to_kernel()) and skip
 * a frame memory_failure() poisoned; a copy that cannot be made, for either
 * reason or for want of memory, loses the page: its owner gets SIGBUS, never
 * silently different data.
 *
 * A simulated device's backing pages are allocated on first touch, zeroed,
 * and freed with the device.  A range device registered with CLAIM is backed
 * by the range itself: alloc_contig_range() takes it from the page allocator
 * (migrating its users away), so that a poisoned frame is a page of the
 * aperture, as on a node of real HBM; memory_failure() finds the frames
 * owned and leaves them to us.  At unregistration the good frames go back;
 * every bad one (a page the table lists, a lost page, a poisoned frame) is
 * kept out of the page allocator until reboot, marked HWPoison.  A device
 * going away zaps every mapping of it first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/pfn.h>
#include <linux/pseudo_fs.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "hbm.h"

#define APERTURE_BASE	(1ULL << 62)
#define APERTURE_SHIFT	44
#define APERTURE_FS_MAGIC	0x48424d41	/* "HBMA" */

static int aperture_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, APERTURE_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: the mount is pinned from module init to module exit, and an
 * owner would make that pin hold the module against its own unload.
 */
static struct file_system_type aperture_fs_type = {
	.name = "hbmguard_aperture",
	.init_fs_context = aperture_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

static struct vfsmount *aperture_mnt;
static int aperture_mnt_count;
static struct inode *aperture_inode;

/**
 * hbm_aperture_init() - the address_space every aperture mapping is in
 *
 * Before any file can be opened or any device changed.
 *
 * Return: 0 or a negative errno.
 */
int hbm_aperture_init(void)
{
	int err;

	err = simple_pin_fs(&aperture_fs_type, &aperture_mnt, &aperture_mnt_count);
	if (err)
		return err;
	aperture_inode = alloc_anon_inode(aperture_mnt->mnt_sb);
	if (IS_ERR(aperture_inode)) {
		err = PTR_ERR(aperture_inode);
		aperture_inode = NULL;
		simple_release_fs(&aperture_mnt, &aperture_mnt_count);
	}
	return err;
}

/* After the last device and the last open file are gone. */
void hbm_aperture_exit(void)
{
	iput(aperture_inode);
	aperture_inode = NULL;
	simple_release_fs(&aperture_mnt, &aperture_mnt_count);
}

void hbm_aperture_open(struct file *file)
{
	file->f_mapping = aperture_inode->i_mapping;
}

static u64 aperture_file_offset(const struct hbm_device *dev, u64 offset)
{
	return APERTURE_BASE | ((u64)dev->id << APERTURE_SHIFT) | offset;
}

static void zap(struct hbm_device *dev, u64 offset, u64 length)
{
	unmap_mapping_range(aperture_inode->i_mapping,
			    aperture_file_offset(dev, offset), length, 1);
}

/* The CPU page at @offset of the backing store, or NULL if never touched. */
static struct page *backing_peek(struct hbm_device *dev, u64 offset)
{
	if (dev->claimed)
		return pfn_to_page(PHYS_PFN(dev->phys_start + offset));
	return xa_load(&dev->backing, offset >> PAGE_SHIFT);
}

/*
 * A page for the backing store, charged to whoever makes the device use
 * memory (a fault, a retirement), and failing rather than invoking the OOM
 * killer: a retirement under the device lock that gets nothing loses the
 * page, a fault that gets nothing is SIGBUS.
 */
static struct page *backing_alloc(void)
{
	return alloc_page(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT | __GFP_RETRY_MAYFAIL |
			  __GFP_NOWARN);
}

/* Make @page (from backing_alloc()) the one at @offset; false if it cannot. */
static bool backing_add(struct hbm_device *dev, u64 offset, struct page *page)
{
	return !xa_err(xa_store(&dev->backing, offset >> PAGE_SHIFT, page, GFP_KERNEL));
}

/* The CPU page at @offset of the backing store, allocated on first use. */
static struct page *backing(struct hbm_device *dev, u64 offset)
{
	struct page *page = backing_peek(dev, offset);

	if (page)
		return page;
	page = backing_alloc();
	if (page && !backing_add(dev, offset, page)) {
		__free_page(page);
		return NULL;
	}
	return page;
}

/*
 * @lost holds the pages whose data is gone until their owner restores it
 * (hbm_aperture_restored()), each with what its own frame holds, which is
 * what a CLEAR brings it home to: LOST_HOME, lost on that frame, which
 * holds what it held then (nothing could write it since); LOST_GONE, lost
 * with a spare or on the way from one, the frame's data older than the
 * page's: a CLEAR zeroes it, and the page stays lost.
 */
enum { LOST_HOME = 1, LOST_GONE = 2 };

static bool lost(struct hbm_device *dev, u32 page)
{
	return xa_load(&dev->lost, page);
}

/*
 * The records below must not fail for want of memory: a page whose loss or
 * whose spare is forgotten would be served the wrong data without a word.
 * An xarray node is one small slab object.  A page lost already keeps what
 * it was lost as: nothing written since.
 */
static bool lose(struct hbm_device *dev, u32 page, unsigned long how)
{
	if (lost(dev, page))
		return false;
	xa_store(&dev->lost, page, xa_mk_value(how), GFP_KERNEL | __GFP_NOFAIL);
	return true;
}

static u64 page_offset_of(struct hbm_device *dev, u32 page)
{
	return (u64)page << dev->page_shift;
}

/* Spare @spare as a device offset: the spares follow the usable pages. */
static u64 spare_offset(struct hbm_device *dev, u32 spare)
{
	return hbm_usable_size(dev) + ((u64)spare << dev->page_shift);
}

/* Zero what is there of the device page at @to: a lost page's new home. */
static void clear_dev_page(struct hbm_device *dev, u64 to)
{
	u32 ppd = 1U << (dev->page_shift - PAGE_SHIFT), i;

	for (i = 0; i < ppd; i++) {
		struct page *p = backing_peek(dev, to + ((u64)i << PAGE_SHIFT));

		if (p && !PageHWPoison(p))
			clear_highpage(p);
	}
}

/*
 * Copy the device page at @from to @to.  The source is memory that is
 * failing: a poisoned frame is not read, and a machine check on the way is
 * survived (copy_mc_to_kernel(), include/linux/uaccess.h, 6.1 and 6.12).
 *
 * Return: 0; -EIO when a frame is poisoned or the copy hit a machine check;
 * -ENOMEM when the destination has no memory.
 */
static int copy_dev_page(struct hbm_device *dev, u64 from, u64 to)
{
	u32 ppd = 1U << (dev->page_shift - PAGE_SHIFT), i;

	for (i = 0; i < ppd; i++) {
		u64 step = (u64)i << PAGE_SHIFT;
		struct page *src = backing_peek(dev, from + step);
		struct page *dst = src ? backing(dev, to + step) : backing_peek(dev, to + step);
		unsigned long left;
		void *d, *s;

		if (!dst && src)
			return -ENOMEM;
		if (!dst)
			continue;	/* both never touched: both zero */
		if (PageHWPoison(dst) || (src && PageHWPoison(src)))
			return -EIO;
		if (!src) {
			clear_highpage(dst);
			continue;
		}
		d = kmap_local_page(dst);
		s = kmap_local_page(src);
		left = copy_mc_to_kernel(d, s, PAGE_SIZE);
		kunmap_local(s);
		kunmap_local(d);
		if (left)
			return -EIO;
	}
	return 0;
}

/**
 * hbm_aperture_lose() - a page's data went with its spare, before the change
 * @dev: the device
 * @page: the page, whose accesses fault from now on until its owner
 *	restores it (hbm_aperture_restored()), even once cleared; nothing on
 *	a device without memory
 *
 * Device lock held.
 */
void hbm_aperture_lose(struct hbm_device *dev, u32 page)
{
	if (dev->backed)
		lose(dev, page, LOST_GONE);
}

/*
 * @dev->dead_frames holds the pages whose own frame an uncorrectable error or
 * poison took: that frame serves the page nobody while it is FAILED,
 * restored or not, and hands nothing on to a spare (the page is lost
 * there, whoever retires it, a RESTORE too), until a CLEAR gives the page
 * its frame back, the operator's word that it is good (as a page retired
 * for a UE and cleared gets it back).  A RESTORE marks nothing: it says
 * what was, not an error of now.
 */
static bool frame_dead(struct hbm_device *dev, u32 page)
{
	return xa_load(&dev->dead_frames, page);
}

/**
 * hbm_aperture_mark_frame_dead() - an uncorrectable error or poison at a page
 * @dev: the device
 * @page: the page, whatever serves it now
 *
 * Its own frame is dead (see @dev->dead_frames); nothing on a device
 * without memory.
 *
 * Context: the device's lock held, before the change is made
 * (hbm_aperture_changed()).
 */
void hbm_aperture_mark_frame_dead(struct hbm_device *dev, u32 page)
{
	lockdep_assert_held(&dev->lock);
	if (dev->backed)
		xa_store(&dev->dead_frames, page, xa_mk_value(1), GFP_KERNEL | __GFP_NOFAIL);
}

/**
 * hbm_aperture_frame_dead() - whether a page's own frame is dead
 * @dev: the device
 * @page: the page
 *
 * Context: the device's lock held.
 *
 * Return: true when an error of now took it (hbm_aperture_mark_frame_dead()),
 * not cleared since; false on a device without memory.
 */
bool hbm_aperture_frame_dead(struct hbm_device *dev, u32 page)
{
	lockdep_assert_held(&dev->lock);
	return dev->backed && frame_dead(dev, page);
}

/**
 * hbm_aperture_lost() - whether a page's data is lost
 * @dev: the device
 * @page: the page
 *
 * Return: true when the page faults until its owner restores it; false on
 * a device without memory, which keeps no data.  Device lock held.
 */
bool hbm_aperture_lost(struct hbm_device *dev, u32 page)
{
	return dev->backed && lost(dev, page);
}

/**
 * hbm_aperture_changed() - pages retired, cleared or changed: their data moved
 * @dev: the device
 * @offset: the first page's offset
 * @length: bytes
 *
 * Zap the pages' mappings, and move the data of each page whose server
 * changed (itself or a spare) to the new one, or mark the page lost.  A
 * lost page stays lost, on a spare or failed, until its owner restores it;
 * cleared, it goes home to its own frame if it was lost there (LOST_HOME),
 * and is not served the frame's older data otherwise.  A page leaving a
 * dead frame (hbm_aperture_mark_frame_dead()) for a spare is lost there;
 * one cleared has its frame back.  A RESTORE marks no frame dead, whatever
 * its records' source says: it says what was, not an error of now.
 *
 * Context: device lock held.
 * Return: the pages this change lost that were not lost before it (a copy
 * that failed, a page taken off a dead frame), for the caller to say
 * (HBMGUARD_PAGES_DATA_LOST) where the pages' source does not.
 */
u32 hbm_aperture_changed(struct hbm_device *dev, u64 offset, u64 length)
{
	u32 first = offset >> dev->page_shift, end = (offset + length) >> dev->page_shift;
	u32 page, newly_lost = 0;

	lockdep_assert_held(&dev->lock);
	if (!dev->backed)
		return 0;
	zap(dev, offset, length);
	for (page = first; page < end; page++) {
		void *was = xa_load(&dev->served, page), *loss;
		struct hbm_extent e;
		bool listed, retired;
		u32 spare = 0;
		u64 from, to;

		if (!((page - first) % 1024))
			cond_resched();	/* a CLEAR may span the device */
		listed = hbm_table_lookup(&dev->core.table, page, &e);
		if (!listed && frame_dead(dev, page))
			xa_erase(&dev->dead_frames, page);
		retired = listed && e.state == HBMGUARD_STATE_RETIRED;
		if (retired)
			spare = e.spare + page - e.first;
		if (!retired && !was && !lost(dev, page))
			continue;
		if (retired && was && xa_to_value(was) == spare)
			continue;	/* its spare serves it already */
		from = was ? spare_offset(dev, xa_to_value(was)) : page_offset_of(dev, page);
		to = retired ? spare_offset(dev, spare) : page_offset_of(dev, page);
		if (retired)
			xa_store(&dev->served, page, xa_mk_value(spare),
				 GFP_KERNEL | __GFP_NOFAIL);
		else
			xa_erase(&dev->served, page);

		if (retired && !was && frame_dead(dev, page))
			newly_lost += lose(dev, page, LOST_HOME);
		loss = xa_load(&dev->lost, page);
		if (loss) {
			/*
			 * Lost still, but cleared home; whatever serves it
			 * next holds no older data: its new spare, or its own
			 * frame after a loss elsewhere (FAILED, or cleared),
			 * which a restore, a CLEAR or a spare freed would
			 * otherwise hand back.
			 */
			if (!retired && !listed && xa_to_value(loss) == LOST_HOME)
				xa_erase(&dev->lost, page);
			else if (retired || xa_to_value(loss) == LOST_GONE)
				clear_dev_page(dev, to);
			continue;
		}
		if (copy_dev_page(dev, from, to)) {
			newly_lost += lose(dev, page, was ? LOST_GONE : LOST_HOME);
			if (retired || was)
				clear_dev_page(dev, to);
		}
	}
	return newly_lost;
}

/**
 * hbm_aperture_restored() - the owner of lost pages has restored them
 * @dev: the device
 * @offset: first byte, page aligned
 * @length: bytes, page aligned
 *
 * Return: 0, -EINVAL for a device without memory or a misaligned range,
 * -ERANGE for one outside it.
 */
int hbm_aperture_restored(struct hbm_device *dev, u64 offset, u64 length)
{
	u64 mask = (1ULL << dev->page_shift) - 1;
	unsigned long page;
	void *lost;

	if (!dev->backed || !length || (offset | length) & mask)
		return -EINVAL;
	if (offset >= hbm_usable_size(dev) || length > hbm_usable_size(dev) - offset)
		return -ERANGE;
	/*
	 * The pages lost, not the range: any writer may ask for all of a
	 * device, and the lock it holds meanwhile is every fault's and every
	 * error's on the device.
	 */
	mutex_lock(&dev->lock);
	xa_for_each_range(&dev->lost, page, lost, offset >> dev->page_shift,
			  ((offset + length) >> dev->page_shift) - 1) {
		xa_erase(&dev->lost, page);
		zap(dev, (u64)page << dev->page_shift, 1ULL << dev->page_shift);
		cond_resched();
	}
	mutex_unlock(&dev->lock);
	return 0;
}

/*
 * A page touched for the first time gets its memory outside the device lock,
 * which retirements need, and fails with SIGBUS, as hugetlb's does at the
 * limit of its cgroup: VM_FAULT_OOM from a fault that did not invoke the OOM
 * killer is retried for ever by pagefault_out_of_memory() (mm/oom_kill.c,
 * 6.1 and 6.12).
 */
static vm_fault_t hbm_aperture_fault(struct vm_fault *vmf)
{
	struct hbm_device *dev = vmf->vma->vm_private_data;
	u64 dev_off = ((u64)vmf->pgoff << PAGE_SHIFT) & ((1ULL << APERTURE_SHIFT) - 1);
	u32 page = dev_off >> dev->page_shift;
	struct page *p, *fresh = NULL;
	struct hbm_extent e;
	vm_fault_t ret;
	u64 offset;

again:
	offset = dev_off;
	/*
	 * Killable: a CLEAR or RESTORE of a large range holds the lock while it
	 * walks every page, and the ranks faulting meanwhile must not be
	 * unkillable in D state (helper-187).  A dying process never sees the
	 * SIGBUS; a copy from the kernel fails with EFAULT (a VM_FAULT_NOPAGE
	 * would have it fault again for ever).
	 */
	if (mutex_lock_killable(&dev->lock)) {
		if (fresh)
			__free_page(fresh);
		return VM_FAULT_SIGBUS;
	}
	if (dev->dead || offset >= hbm_usable_size(dev)) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	/* A page is lost while retired, or when its data could not come home. */
	if (lost(dev, page)) {
		ret = VM_FAULT_HWPOISON;
		goto out;
	}
	if (hbm_table_lookup(&dev->core.table, page, &e)) {
		/*
		 * FAILED, no spare was left to take it: its own frame serves
		 * it, as a page whose soft offline fails stays in service,
		 * unless an uncorrectable error or poison took that frame: a
		 * restore would only hand back a cell known to fail.
		 */
		if (e.state == HBMGUARD_STATE_FAILED && frame_dead(dev, page)) {
			ret = VM_FAULT_HWPOISON;
			goto out;
		}
		if (e.state == HBMGUARD_STATE_RETIRED)
			offset = spare_offset(dev, e.spare + page - e.first) +
				 (offset & ((1ULL << dev->page_shift) - 1));
	}
	p = backing_peek(dev, offset);
	if (!p && !fresh) {
		mutex_unlock(&dev->lock);
		fresh = backing_alloc();
		if (!fresh)
			return VM_FAULT_SIGBUS;
		goto again;	/* the page may have been retired meanwhile */
	}
	if (!p) {
		if (!backing_add(dev, offset, fresh)) {
			ret = VM_FAULT_SIGBUS;
			goto out;
		}
		p = fresh;
		fresh = NULL;
	}
	if (PageHWPoison(p))	/* poisoned before we were told */
		ret = VM_FAULT_HWPOISON;
	else
		ret = vmf_insert_pfn(vmf->vma, vmf->address, page_to_pfn(p));
out:
	mutex_unlock(&dev->lock);
	if (fresh)
		__free_page(fresh);
	return ret;
}

static void hbm_aperture_vma_open(struct vm_area_struct *vma)
{
	struct hbm_device *dev = vma->vm_private_data;

	kref_get(&dev->ref);
}

static void hbm_aperture_vma_close(struct vm_area_struct *vma)
{
	hbm_device_put(vma->vm_private_data);
}

static const struct vm_operations_struct hbm_aperture_vm_ops = {
	.open = hbm_aperture_vma_open,
	.close = hbm_aperture_vma_close,
	.fault = hbm_aperture_fault,
};

/**
 * hbm_aperture_mmap() - mmap() of a device's aperture
 * @vma: the mapping asked for, its offset in the aperture range
 *
 * hbm_mmap() has refused private and executable mappings.
 *
 * Return: 0, -ENODEV for no such device, -EINVAL for an offset that is no
 * device's, a device without memory or a range outside it.
 */
int hbm_aperture_mmap(struct vm_area_struct *vma)
{
	u64 offset = ((u64)vma->vm_pgoff << PAGE_SHIFT) & ~APERTURE_BASE;
	u64 len = vma->vm_end - vma->vm_start;
	u64 dev_off = offset & ((1ULL << APERTURE_SHIFT) - 1);
	struct hbm_device *dev;

	if (offset >> APERTURE_SHIFT >= HBMGUARD_MAX_DEVICES)
		return -EINVAL;
	dev = hbm_device_get(offset >> APERTURE_SHIFT);
	if (!dev)
		return -ENODEV;
	BUILD_BUG_ON(HBMGUARD_SIM_BACKED_MAX > 1ULL << APERTURE_SHIFT);
	if (!dev->backed || dev_off >= hbm_usable_size(dev) ||
	    len > hbm_usable_size(dev) - dev_off) {
		hbm_device_put(dev);
		return -EINVAL;
	}
	hbm_vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_IO);
	vma->vm_private_data = dev;	/* the reference is the mapping's */
	vma->vm_ops = &hbm_aperture_vm_ops;
	return 0;
}

/* The device goes: no mapping may reach its memory any more. */
void hbm_aperture_removed(struct hbm_device *dev)
{
	if (dev->backed)
		zap(dev, 0, hbm_usable_size(dev));
}

#define CLAIM_TRIES	5	/* alloc_contig_range() calls for a claim */

/**
 * hbm_aperture_claim() - take a range device's memory for its aperture
 * @dev: a range device, not yet registered
 *
 * Return: 0, -EFBIG when its usable size exceeds the aperture window of a
 * device (16 TiB), -EINVAL when the range is not all online RAM of one zone,
 * -EBUSY when part of it cannot be taken (kernel memory, poisoned pages),
 * -EOPNOTSUPP on a kernel without CONFIG_CONTIG_ALLOC or without
 * CONFIG_MEMORY_FAILURE (which keeps bad frames out at the end), another errno of
 * alloc_contig_range().
 */
int hbm_aperture_claim(struct hbm_device *dev)
{
#if defined(CONFIG_CONTIG_ALLOC) && defined(CONFIG_MEMORY_FAILURE)
	unsigned long pfn = PHYS_PFN(dev->phys_start), nr = dev->hbm_size >> PAGE_SHIFT, i;
	struct page *first = pfn_to_online_page(pfn);
	int err;

	/* Its every page needs an offset in the device's aperture window. */
	if (hbm_usable_size(dev) > 1ULL << APERTURE_SHIFT)
		return -EFBIG;
	/* Only memory the page allocator manages can be taken from it. */
	if (!first)
		return -EINVAL;
	for (i = 1; i < nr; i++) {
		struct page *page = pfn_to_online_page(pfn + i);

		if (!page || page_zone(page) != page_zone(first))
			return -EINVAL;
		if (!(i % 4096))	/* a range may be a whole HBM stack */
			cond_resched();
	}
	/*
	 * -EBUSY may be passing: a page being migrated, freed or pinned for a
	 * moment, tried a few times as virtio_mem_fake_offline() does
	 * (drivers/virtio/virtio_mem.c, 6.1 and 6.12); or the frames of a
	 * range unregistered a moment ago, given back by hbm_wq's worker once
	 * its last reference went (hbm_device_release()): waited for.  Kernel
	 * memory, a poisoned frame or a range still mapped stays busy.
	 */
	for (i = 0; i < CLAIM_TRIES; i++) {
		err = alloc_contig_range(pfn, pfn + nr, MIGRATE_MOVABLE,
					 GFP_KERNEL | __GFP_NOWARN);
		if (err != -EBUSY || fatal_signal_pending(current))
			break;
		flush_workqueue(hbm_wq);
	}
	if (err)
		return err;
	for (i = 0; i < nr; i++) {	/* whatever its last users left there */
		clear_highpage(pfn_to_page(pfn + i));
		cond_resched();
	}
	dev->claimed = true;
	dev->backed = true;
	return 0;
#else
	return -EOPNOTSUPP;
#endif
}

/* The frame at @offset of a claimed range must never be handed out again. */
static bool frame_bad(struct hbm_device *dev, u64 offset)
{
	u32 page = offset >> dev->page_shift;
	struct hbm_extent e;

	if (offset >= hbm_usable_size(dev))
		return false;	/* a spare: only poison tells */
	return lost(dev, page) || hbm_table_lookup(&dev->core.table, page, &e);
}

/*
 * Give a claimed range back to the page allocator, but for its bad frames.
 * Those are marked HWPoison, as memory_failure() marks a frame it takes
 * out: the allocator never takes such a frame back (free_pages_prepare(),
 * mm/page_alloc.c in 6.1 and 6.12), the rest of its pageblock can still be
 * claimed or offlined (has_unmovable_pages() skips a free frame, and
 * test_pages_isolated() a poisoned one when offlining, mm/page_isolation.c),
 * and /proc/kpageflags shows it.  Kept frames are not counted in
 * HardwareCorrupted: the counter is not the module's to change.
 */
static void give_back(struct hbm_device *dev)
{
	unsigned long pfn = PHYS_PFN(dev->phys_start), nr = dev->hbm_size >> PAGE_SHIFT;
	unsigned long i, kept = 0;

	for (i = 0; i < nr; i++) {
		struct page *frame = pfn_to_page(pfn + i);

		if (!(i % 4096))
			cond_resched();
		if (PageHWPoison(frame) || !frame_bad(dev, (u64)i << PAGE_SHIFT))
			continue;
		SetPageHWPoison(frame);
		kept++;
	}
	free_contig_range(pfn, nr);
	if (kept)
		pr_info("device %u: %lu bad frames marked HWPoison, kept from the page allocator\n",
			dev->id, kept);
}

void hbm_aperture_free(struct hbm_device *dev)
{
	struct page *page;
	unsigned long idx;

	if (dev->claimed)
		give_back(dev);

	xa_for_each(&dev->backing, idx, page)
		__free_page(page);
	xa_destroy(&dev->backing);
	xa_destroy(&dev->lost);
	xa_destroy(&dev->served);
	xa_destroy(&dev->dead_frames);
}
