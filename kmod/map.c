// SPDX-License-Identifier: GPL-2.0
/*
 * The mapped translation table: each device's bad pages, published for
 * userspace to read without a syscall (the layout and the reader's protocol
 * are in uapi/linux/hbmguard.h).
 *
 * Memory ordering.  The kernel writes a whole table into the buffer readers
 * are not directed to, then switches:
 *
 *	seq++ (odd); smp_wmb(); active, nr, generation; smp_wmb(); seq++ (even)
 *
 * A reader loads seq with acquire semantics, reads active, nr and entries,
 * then issues an acquire fence and loads seq again.  If both loads saw the
 * same even value, no switch overlapped its reads.  The buffer it read can
 * have been rewritten only after a switch made the other buffer active, and
 * the fill of a buffer follows that switch's second increment: so a reader
 * that read a buffer while it was being filled sees seq changed, and retries.
 * The writer never waits: a slow reader costs only itself a retry.
 *
 * The table is rebuilt whole from the B+tree on each publication, O(extents).
 * Up to 1024 extents that is cheaper than deferring, so it happens inside the
 * change; above, changes mark the table dirty and a worker publishes one
 * jiffy later, so a burst of retirements costs a rebuild per jiffy, not one
 * each (10^5 retirements one by one would otherwise copy 10^10 entries).
 *
 * The buffers live in vmalloc memory mapped with remap_vmalloc_range().  A
 * mapping holds a reference on them, so they outlive their device.
 */
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "hbm.h"

#define SYNC_PUBLISH_MAX 1024

struct hbm_map {
	struct kref ref;
	struct hbmguard_map_header *hdr;	/* and the buffers after it */
	size_t size;
};

static void hbm_map_release(struct kref *ref)
{
	struct hbm_map *map = container_of(ref, struct hbm_map, ref);

	vfree(map->hdr);
	hbm_kfree(map);
}

static void hbm_map_put(struct hbm_map *map)
{
	kref_put(&map->ref, hbm_map_release);
}

static struct hbmguard_map_entry *buffer(struct hbm_map *map, u32 which)
{
	return (void *)map->hdr + map->hdr->buffer_offset[which];
}

struct fill {
	struct hbmguard_map_entry *out;
	u32 n, capacity;
};

static void fill_one(const struct hbm_extent *e, void *arg)
{
	struct fill *f = arg;

	if (f->n < f->capacity)
		f->out[f->n] = (struct hbmguard_map_entry){
			.first = e->first, .nr = e->nr, .spare = e->spare,
			.state = e->state,
		};
	f->n++;
}

/* Publish @dev's table; its lock held. */
static void hbm_map_publish(struct hbm_device *dev)
{
	struct hbmguard_map_header *h = dev->map->hdr;
	u32 next = !h->active;
	struct fill f = {
		.out = buffer(dev->map, next), .capacity = h->capacity,
	};

	hbm_table_walk(&dev->core.table, fill_one, &f);
	WRITE_ONCE(h->seq, h->seq + 1);
	smp_wmb();
	h->overflow = f.n > f.capacity;
	h->nr[next] = min(f.n, f.capacity);
	h->generation = dev->generation;
	WRITE_ONCE(h->active, next);
	smp_wmb();
	WRITE_ONCE(h->seq, h->seq + 1);
	dev->map_dirty = false;
}

static void hbm_map_work(struct work_struct *work)
{
	struct hbm_device *dev = container_of(to_delayed_work(work),
					      struct hbm_device, map_work);

	mutex_lock(&dev->lock);
	if (dev->map_dirty)
		hbm_map_publish(dev);
	mutex_unlock(&dev->lock);
}

/**
 * hbm_map_changed() - the table of @dev changed: publish it
 * @dev: the device, its lock held
 */
void hbm_map_changed(struct hbm_device *dev)
{
	if (dev->core.table.nr_extents <= SYNC_PUBLISH_MAX) {
		hbm_map_publish(dev);
		return;
	}
	dev->map_dirty = true;
	queue_delayed_work(hbm_wq, &dev->map_work, 1);	/* no-op when queued */
}

/* The device goes: its mappings keep the last table, marked; its lock held. */
void hbm_map_removed(struct hbm_device *dev)
{
	if (dev->map_dirty)
		hbm_map_publish(dev);
	WRITE_ONCE(dev->map->hdr->removed, 1);
}

/*
 * The device is dead (nothing queues its publication any more): wait for a
 * publication queued before, so that none is pending when unload destroys
 * the workqueue.  Its lock not held: the work takes it.
 */
void hbm_map_stop(struct hbm_device *dev)
{
	cancel_delayed_work_sync(&dev->map_work);
}

/**
 * hbm_map_create() - the mappable table of a new device
 * @dev: the device, its table initialised
 *
 * Capacity: every spare serving its own extent, and 1024 extents more for
 * pending and failed pages, but at least 4096.  hbm_device_create() keeps
 * spares at most HBMGUARD_SPARE_PAGES_MAX, so a map is at most about 32 MiB.
 *
 * Return: 0 or -ENOMEM.
 */
int hbm_map_create(struct hbm_device *dev)
{
	u32 spares = dev->core.table.spare_total, capacity;
	struct hbm_map *map;
	size_t buf;

	if (WARN_ON_ONCE(spares > HBMGUARD_SPARE_PAGES_MAX))
		return -EINVAL;
	capacity = max_t(u32, spares + 1024, 4096);
	buf = PAGE_ALIGN((size_t)capacity * sizeof(struct hbmguard_map_entry));
	map = hbm_kalloc(sizeof(*map), true);
	if (!map)
		return -ENOMEM;
	map->size = PAGE_SIZE + 2 * buf;
	map->hdr = vmalloc_user(map->size);	/* zeroed */
	if (!map->hdr) {
		hbm_kfree(map);
		return -ENOMEM;
	}
	kref_init(&map->ref);
	*map->hdr = (struct hbmguard_map_header){
		.magic = HBMGUARD_MAP_MAGIC, .version = HBMGUARD_MAP_VERSION,
		.capacity = capacity, .page_shift = dev->page_shift,
		.usable_size = hbm_usable_size(dev),
		.buffer_offset = { PAGE_SIZE, PAGE_SIZE + buf },
		.map_size = map->size,
	};
	dev->map = map;
	INIT_DELAYED_WORK(&dev->map_work, hbm_map_work);
	return 0;
}

/* Device teardown: no publication may run after this. */
void hbm_map_destroy(struct hbm_device *dev)
{
	cancel_delayed_work_sync(&dev->map_work);
	hbm_map_put(dev->map);
}

static void hbm_vma_open(struct vm_area_struct *vma)
{
	struct hbm_map *map = vma->vm_private_data;

	kref_get(&map->ref);
}

static void hbm_vma_close(struct vm_area_struct *vma)
{
	hbm_map_put(vma->vm_private_data);
}

static const struct vm_operations_struct hbm_map_vm_ops = {
	.open = hbm_vma_open,
	.close = hbm_vma_close,
};

/**
 * hbm_map_mmap() - mmap() of a device's table
 * @vma: the mapping asked for
 *
 * Return: 0; -EINVAL for an offset that is not a table's or a length past
 * it; -EACCES for a writable mapping; -ENODEV for no such device.
 */
int hbm_map_mmap(struct vm_area_struct *vma)
{
	u64 offset = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long len = vma->vm_end - vma->vm_start;
	struct hbm_device *dev;
	struct hbm_map *map;
	int err;

	if (offset & 0xffffffffULL || (offset >> 32) >= HBMGUARD_MAX_DEVICES)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE)
		return -EACCES;
	dev = hbm_device_get(offset >> 32);
	if (!dev)
		return -ENODEV;
	map = dev->map;
	err = len > map->size ? -EINVAL : 0;
	if (!err) {
		hbm_vm_flags_clear(vma, VM_MAYWRITE);
		vma->vm_pgoff = 0;	/* remap_vmalloc_range() counts from it */
		err = remap_vmalloc_range(vma, map->hdr, 0);
	}
	if (!err) {
		kref_get(&map->ref);
		vma->vm_private_data = map;
		vma->vm_ops = &hbm_map_vm_ops;
	}
	hbm_device_put(dev);
	return err;
}
