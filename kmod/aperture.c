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
 * A spare may serve several pages over time (retired, cleared, retired
 * again); spare_owner remembers whose data each spare holds, so a retirement
 * copies (or marks lost) exactly when a spare takes a new page.
 *
 * A simulated device's backing pages are allocated on first touch, zeroed,
 * and freed with the device.  A range device registered with CLAIM is backed
 * by the range itself: alloc_contig_range() takes it from the page allocator
 * (migrating its users away), so that a poisoned frame is a page of the
 * aperture, as on a node of real HBM; memory_failure() finds the frames
 * owned and leaves them to us.  free_contig_range() gives them back, and the
 * page allocator keeps the poisoned ones.  A device going away zaps every
 * mapping of it first.
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/pfn.h>
#include <linux/xarray.h>

#include "hbm.h"

#define APERTURE_BASE	(1ULL << 62)
#define APERTURE_SHIFT	44

/* All opens of /dev/hbmguard share one address_space, so one zap finds all. */
static struct address_space *hbm_aperture_mapping;
static DEFINE_SPINLOCK(hbm_aperture_mapping_lock);

void hbm_aperture_open(struct file *file)
{
	spin_lock(&hbm_aperture_mapping_lock);
	if (!hbm_aperture_mapping)
		hbm_aperture_mapping = file->f_mapping;
	file->f_mapping = hbm_aperture_mapping;
	spin_unlock(&hbm_aperture_mapping_lock);
}

static u64 aperture_file_offset(const struct hbm_device *dev, u64 offset)
{
	return APERTURE_BASE | ((u64)dev->id << APERTURE_SHIFT) | offset;
}

static void zap(struct hbm_device *dev, u64 offset, u64 length)
{
	if (hbm_aperture_mapping)
		unmap_mapping_range(hbm_aperture_mapping,
				    aperture_file_offset(dev, offset), length, 1);
}

/* The CPU page at @offset of the backing store, or NULL if never touched. */
static struct page *backing_peek(struct hbm_device *dev, u64 offset)
{
	if (dev->claimed)
		return pfn_to_page(PHYS_PFN(dev->phys_start + offset));
	return xa_load(&dev->backing, offset >> PAGE_SHIFT);
}

/* The CPU page at @offset of the backing store, allocated on first use. */
static struct page *backing(struct hbm_device *dev, u64 offset)
{
	unsigned long idx = offset >> PAGE_SHIFT;
	struct page *page = backing_peek(dev, offset);

	if (page)
		return page;
	page = alloc_page(GFP_HIGHUSER | __GFP_ZERO);
	if (!page)
		return NULL;
	if (xa_err(xa_store(&dev->backing, idx, page, GFP_KERNEL))) {
		__free_page(page);
		return NULL;
	}
	return page;
}

static bool lost(struct hbm_device *dev, u32 page)
{
	return xa_load(&dev->lost, page);
}

/* The spare of page @page of extent @e as a device offset. */
static u64 spare_offset(struct hbm_device *dev, const struct hbm_extent *e,
			u32 page)
{
	return hbm_usable_size(dev) + ((u64)(e->spare + page - e->first) << dev->page_shift);
}

/*
 * Pages of [offset, offset + length) were retired, cleared or changed:
 * zap their mappings, and give each spare that took a new page its data,
 * or mark the page lost.  Device lock held.
 */
void hbm_aperture_changed(struct hbm_device *dev, u64 offset, u64 length)
{
	u32 first = offset >> dev->page_shift, end = (offset + length) >> dev->page_shift;
	u32 ppd = 1U << (dev->page_shift - PAGE_SHIFT);	/* CPU pages a page */
	u32 page, i;

	if (!dev->backed)
		return;
	zap(dev, offset, length);
	for (page = first; page < end; page++) {
		struct hbm_extent e;
		u64 from, to;
		u32 spare;

		if (!hbm_table_lookup(&dev->core.table, page, &e) ||
		    e.state != HBMGUARD_STATE_RETIRED)
			continue;
		spare = e.spare + page - e.first;
		if (xa_to_value(xa_load(&dev->spare_owner, spare)) == page + 1)
			continue;	/* it serves this page already */
		xa_store(&dev->spare_owner, spare, xa_mk_value(page + 1), GFP_KERNEL);
		from = (u64)page << dev->page_shift;
		to = spare_offset(dev, &e, page);
		if (e.source == HBMGUARD_SOURCE_UE || e.source == HBMGUARD_SOURCE_POISON) {
			xa_store(&dev->lost, page, xa_mk_value(1), GFP_KERNEL);
			for (i = 0; i < ppd; i++) {
				struct page *p = backing_peek(dev, to + ((u64)i << PAGE_SHIFT));

				if (p)
					clear_highpage(p);
			}
			continue;
		}
		for (i = 0; i < ppd; i++) {
			struct page *src = backing_peek(dev, from + ((u64)i << PAGE_SHIFT));
			struct page *dst = backing(dev, to + ((u64)i << PAGE_SHIFT));

			if (dst && src)
				copy_highpage(dst, src);
			else if (dst)
				clear_highpage(dst);
		}
	}
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
	u32 page;

	if (!dev->backed || !length || (offset | length) & mask)
		return -EINVAL;
	if (offset >= hbm_usable_size(dev) || length > hbm_usable_size(dev) - offset)
		return -ERANGE;
	mutex_lock(&dev->lock);
	for (page = offset >> dev->page_shift;
	     page < (offset + length) >> dev->page_shift; page++)
		xa_erase(&dev->lost, page);
	zap(dev, offset, length);
	mutex_unlock(&dev->lock);
	return 0;
}

static vm_fault_t hbm_aperture_fault(struct vm_fault *vmf)
{
	struct hbm_device *dev = vmf->vma->vm_private_data;
	u64 offset = ((u64)vmf->pgoff << PAGE_SHIFT) & ((1ULL << APERTURE_SHIFT) - 1);
	u32 page = offset >> dev->page_shift;
	struct hbm_extent e;
	struct page *p = NULL;
	vm_fault_t ret;

	mutex_lock(&dev->lock);
	if (dev->dead || offset >= hbm_usable_size(dev)) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	if (hbm_table_lookup(&dev->core.table, page, &e)) {
		if (e.state == HBMGUARD_STATE_FAILED || lost(dev, page)) {
			ret = VM_FAULT_HWPOISON;
			goto out;
		}
		if (e.state == HBMGUARD_STATE_RETIRED)
			offset = spare_offset(dev, &e, page) +
				 (offset & ((1ULL << dev->page_shift) - 1));
	}
	p = backing(dev, offset);
	ret = p ? vmf_insert_pfn(vmf->vma, vmf->address, page_to_pfn(p)) :
		  VM_FAULT_OOM;
out:
	mutex_unlock(&dev->lock);
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
 * Return: 0, -ENODEV for no such device, -EINVAL for a device without
 * memory or a range outside it.
 */
int hbm_aperture_mmap(struct vm_area_struct *vma)
{
	u64 offset = ((u64)vma->vm_pgoff << PAGE_SHIFT) & ~APERTURE_BASE;
	u64 len = vma->vm_end - vma->vm_start;
	u64 dev_off = offset & ((1ULL << APERTURE_SHIFT) - 1);
	struct hbm_device *dev;

	dev = hbm_device_get(offset >> APERTURE_SHIFT);
	if (!dev)
		return -ENODEV;
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

/**
 * hbm_aperture_claim() - take a range device's memory for its aperture
 * @dev: a range device, not yet registered
 *
 * Return: 0, -EINVAL when the range is not all online RAM of one zone,
 * -EBUSY when part of it cannot be taken (kernel memory, poisoned pages),
 * -EOPNOTSUPP on a kernel without CONFIG_CONTIG_ALLOC, another errno of
 * alloc_contig_range().
 */
int hbm_aperture_claim(struct hbm_device *dev)
{
#ifdef CONFIG_CONTIG_ALLOC
	unsigned long pfn = PHYS_PFN(dev->phys_start), nr = dev->hbm_size >> PAGE_SHIFT, i;
	struct page *first = pfn_to_online_page(pfn);
	int err;

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
	err = alloc_contig_range(pfn, pfn + nr, MIGRATE_MOVABLE, GFP_KERNEL | __GFP_NOWARN);
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

void hbm_aperture_free(struct hbm_device *dev)
{
	struct page *page;
	unsigned long idx;

	if (dev->claimed)
		free_contig_range(PHYS_PFN(dev->phys_start), dev->hbm_size >> PAGE_SHIFT);

	xa_for_each(&dev->backing, idx, page)
		__free_page(page);
	xa_destroy(&dev->backing);
	xa_destroy(&dev->lost);
	xa_destroy(&dev->spare_owner);
}
