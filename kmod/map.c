// SPDX-License-Identifier: GPL-2.0
/*
 * The mapped translation table: each device's bad pages, published for
 * userspace to read without a syscall (the layout and the reader's protocol
 * are in uapi/linux/hbmguard.h).
 *
 * The design.  Readers must see a consistent table, never wait and never
 * call in; a change must cost what the change is, at 10^6 extents too.  A
 * sorted array rebuilt per publication (this file before) costs O(n) per
 * change (55 us per RETIRE at 10^6 in a TCG guest, against 6 us without).
 * So each of two copies is a B+tree of 512-byte nodes addressed by index
 * (mtree.c, plain C, unit-tested against a model), and a change is applied
 * to the copies in turn:
 *
 *	apply it to copy I, which readers are not directed to
 *	seq++ (odd); smp_wmb(); active = I, generation; smp_wmb(); seq++
 *	apply it to copy O, which they were directed to until then
 *
 * A reader loads seq with acquire semantics, walks the copy `active` names,
 * then issues an acquire fence and loads seq again.  A copy is written only
 * while readers are directed away from it: one reading it then loaded seq
 * before the switch, whose first increment is ordered before the writes, so
 * it sees seq changed and retries.  Applying the same operations in the
 * same order keeps the copies the same.  The writer never waits; the odd
 * window is a few stores, as before.
 *
 * Why two copies rather than one tree whose changed nodes are copied and
 * swapped in (copy-on-write): the in-place edit of a leaf moves a few dozen
 * bytes where copy-on-write copies the node and every key on its path, and
 * needs no reclamation of the nodes it replaced.  The price is the second
 * copy's memory: a copy costs about 23 bytes per extent (512-byte nodes
 * about 70% full under random inserts, fuller in ascending order), so the
 * map about 46, on top of the table's own 28 (table.c).
 *
 * What a change touches.  The table's operations (hbm_table_apply(),
 * hbm_table_spare_fail()) rewrite only extents that overlap or touch the
 * range they were given, which hbm_map_changed() gets.  The span of the
 * change is that range widened by one page each side, then to the ends of
 * the extents, old (the copy's) and new (the table's), that cross its
 * edges, until none does.  Within the span, extents of the copy the table
 * no longer has are deleted, and the table's are inserted or updated in
 * place: O(log n) per extent changed (hbm_mtree_change()), and the other
 * copy replays what was done (hbm_mtree_follow()).  Bytes written per
 * change: a retirement of a lone page descends copy I once and inserts on
 * that descent, moving half a leaf's extents on average (~170 bytes at 70%
 * fill), and copy O the same; one insert in 16 splits a leaf (256 bytes to
 * a new node and a key in its parent); a merge or an update rewrites one
 * 16-byte entry.  Nothing waits for a worker: the change is published
 * before the call that made it returns.
 *
 * Memory.  The mapping's address space is sized for `capacity` extents at
 * the tree's worst fill (hbm_mtree_max_nodes(), about 35 bytes per extent
 * per copy) but backed a page at a time, as a copy needs nodes; pages are
 * mapped to readers by the fault handler and stay until the map goes.  The
 * header says how many nodes are backed, and readers bound every index by
 * it.  When the table holds more than `capacity` extents or a page cannot
 * be had, `overflow` is set and the copies are left; a later change that
 * finds the table within capacity rebuilds them whole.
 *
 * Before the first mmap().  Most devices are never mapped (an allocator
 * maps the devices its job uses), and after a module load a restart
 * restores 10^6 pages into devices nobody has mapped yet.  Until a device's
 * map is first mapped a change only marks it stale, and that first mmap()
 * builds both copies under the device lock, O(n) once (hbm_map_mmap()): a
 * restore then costs the table alone, and a device never mapped has no
 * copies in memory.  From then on every change is followed, mapped or not:
 * were the map left behind again whenever nobody maps it, a reader of the
 * node (group-readable) could mmap() and munmap() in a loop and make every
 * change cost a whole rebuild under the lock every error report takes.
 *
 * The module parameter `map` (default on) is read when a device is
 * created: a device created with it off has no map (mmap: EOPNOTSUPP), for
 * operators whose allocators do not read it, and as the benchmark's anchor.
 *
 * A mapping holds a reference on the map, so it outlives its device.
 */
#include <linux/mm.h>
#include <linux/moduleparam.h>

#include "hbm.h"
#include "mtree.h"

static bool map_on = true;
module_param_named(map, map_on, bool, 0644);
MODULE_PARM_DESC(map, "Publish each device's table for mmap (read when a device is created; default on)");

struct hbm_map {
	struct kref ref;
	struct hbmguard_map_header *hdr;	/* a page of its own */
	struct hbm_mtree copy[2];
	u32 chunks_per_copy;		/* pages of address space per copy */
	bool built;			/* mapped once: changes are followed */
	bool stale;			/* the copies are not the table: rebuild */
	size_t size;
	struct hbm_mscratch scratch;
};

static void hbm_map_release(struct kref *ref)
{
	struct hbm_map *map = container_of(ref, struct hbm_map, ref);

	hbm_mtree_destroy(&map->copy[0]);
	hbm_mtree_destroy(&map->copy[1]);
	free_page((unsigned long)map->hdr);
	hbm_kfree(map);
}

static void hbm_map_put(struct hbm_map *map)
{
	kref_put(&map->ref, hbm_map_release);
}

/*
 * Back the nodes an insertion may need, as many in both copies, and say so
 * to readers: every index either copy may use is below `nodes`.
 */
static int reserve(struct hbm_map *map)
{
	struct hbm_mtree *c = map->copy;
	int err = hbm_mtree_reserve(&c[0], 1) ?: hbm_mtree_reserve(&c[1], 1) ?:
		  hbm_mtree_grow(&c[0], c[1].nr_chunks) ?:
		  hbm_mtree_grow(&c[1], c[0].nr_chunks);
	u32 nodes = min(c[0].nr_chunks, c[1].nr_chunks) * HBM_MNODES_PER_CHUNK;

	if (nodes != map->hdr->nodes)
		smp_store_release(&map->hdr->nodes, nodes);
	return err;
}

static int reserve_cb(void *arg)
{
	return reserve(arg);
}

static int apply_change(struct hbm_map *map, u32 c, const struct hbm_table *t,
			u32 *lo, u32 *hi)
{
	return hbm_mtree_change(&map->copy[c], t, lo, hi, &map->scratch, reserve_cb, map);
}

static int follow_span(struct hbm_map *map, u32 c, const struct hbm_table *t,
		       u32 lo, u32 hi)
{
	return hbm_mtree_follow(&map->copy[c], t, lo, hi, &map->scratch, reserve_cb, map);
}

static int rebuild(struct hbm_map *map, u32 c, const struct hbm_table *t)
{
	return hbm_mtree_rebuild(&map->copy[c], t, reserve_cb, map);
}

static void header_copy(struct hbm_map *map, u32 c)
{
	struct hbmguard_map_header *h = map->hdr;

	WRITE_ONCE(h->root[c], map->copy[c].root);
	WRITE_ONCE(h->height[c], map->copy[c].height);
	WRITE_ONCE(h->nr[c], map->copy[c].nr);
}

/* Direct readers to copy @next, showing @dev's generation. */
static void switch_to(struct hbm_device *dev, u32 next, bool overflow)
{
	struct hbmguard_map_header *h = dev->map->hdr;

	/* Readers spin while seq is odd: the writer is not preempted there. */
	preempt_disable();
	WRITE_ONCE(h->seq, h->seq + 1);
	smp_wmb();
	WRITE_ONCE(h->overflow, overflow);
	WRITE_ONCE(h->generation, dev->generation);
	WRITE_ONCE(h->active, next);
	smp_wmb();
	WRITE_ONCE(h->seq, h->seq + 1);
	preempt_enable();
}

/*
 * Both copies rebuilt from the table and published; past capacity, or
 * without the memory, readers are told to use the ioctl (overflow) and the
 * next change tries again.  Device lock held.
 */
static void publish_whole(struct hbm_device *dev)
{
	const struct hbm_table *t = &dev->core.table;
	struct hbm_map *map = dev->map;
	u32 next = !map->hdr->active;

	if (t->nr_extents <= map->hdr->capacity && !rebuild(map, next, t)) {
		header_copy(map, next);
		switch_to(dev, next, false);
		map->stale = !!rebuild(map, !next, t);
		header_copy(map, !next);
		return;
	}
	map->stale = true;
	switch_to(dev, map->hdr->active, true);
}

/**
 * hbm_map_changed() - the table of @dev changed: publish it
 * @dev: the device, its lock held
 * @first: first page of the range the change was made to
 * @nr: pages; every extent the change rewrote overlaps or touches the range
 *	(none when @first is past the table: only the generation is news)
 *
 * Published before it returns, whatever the table's size, once the map has
 * been mapped; before, at its first mmap().
 */
void hbm_map_changed(struct hbm_device *dev, u32 first, u32 nr)
{
	const struct hbm_table *t = &dev->core.table;
	struct hbm_map *map = dev->map;
	u32 next, lo, hi;
	int err;

	if (!map)
		return;
	if (!map->built) {
		map->stale = true;
		return;
	}
	if (map->stale || t->nr_extents > map->hdr->capacity) {
		publish_whole(dev);
		return;
	}
	next = !map->hdr->active;

	if (first >= t->nr_pages || !nr) {
		switch_to(dev, map->hdr->active, false);
		return;
	}
	lo = first ? first - 1 : 0;
	hi = min_t(u64, (u64)first + nr + 1, t->nr_pages);
	err = apply_change(map, next, t, &lo, &hi);
	header_copy(map, next);
	if (err) {
		map->stale = true;
		switch_to(dev, !next, true);
		return;
	}
	switch_to(dev, next, false);
	err = follow_span(map, !next, t, lo, hi);
	header_copy(map, !next);
	if (err) {
		/* Readers see @next, whole; the next change rebuilds. */
		map->stale = true;
	}
}

/* The device goes: its mappings keep the last table, marked; its lock held. */
void hbm_map_removed(struct hbm_device *dev)
{
	if (dev->map)
		WRITE_ONCE(dev->map->hdr->removed, 1);
}

/**
 * hbm_map_create() - the mappable table of a new device, if maps are on
 * @dev: the device, its table initialised
 *
 * Capacity: every spare serving its own extent, and 1024 extents more for
 * pending and failed pages, but at least 4096.  hbm_device_create() keeps
 * spares at most HBMGUARD_SPARE_PAGES_MAX, so a map's address space is at
 * most about 75 MiB, of which only what the table uses is backed.
 *
 * Return: 0 or -ENOMEM.
 */
int hbm_map_create(struct hbm_device *dev)
{
	u32 spares = dev->core.table.spare_total, capacity, nodes;
	struct hbm_map *map;
	int err = -ENOMEM;

	BUILD_BUG_ON(sizeof(struct hbmguard_map_node) != HBMGUARD_MAP_NODE_SIZE);
	dev->map = NULL;
	if (!READ_ONCE(map_on))
		return 0;
	if (WARN_ON_ONCE(spares > HBMGUARD_SPARE_PAGES_MAX))
		return -EINVAL;
	capacity = max_t(u32, spares + 1024, 4096);
	nodes = hbm_mtree_max_nodes(capacity);
	map = hbm_kalloc(sizeof(*map), true);
	if (!map)
		return -ENOMEM;
	kref_init(&map->ref);
	map->hdr = (void *)get_zeroed_page(GFP_KERNEL);
	if (!map->hdr)
		goto err_free;
	if (hbm_mtree_init(&map->copy[0], nodes))
		goto err_page;
	if (hbm_mtree_init(&map->copy[1], nodes))
		goto err_copy;
	map->chunks_per_copy = map->copy[0].max_chunks;
	map->size = PAGE_SIZE * (1 + 2 * (size_t)map->chunks_per_copy);
	*map->hdr = (struct hbmguard_map_header){
		.magic = HBMGUARD_MAP_MAGIC, .version = HBMGUARD_MAP_VERSION,
		.capacity = capacity, .page_shift = dev->page_shift,
		.usable_size = hbm_usable_size(dev),
		.buffer_offset = {
			PAGE_SIZE, PAGE_SIZE * (1 + (u64)map->chunks_per_copy),
		},
		.map_size = map->size,
		.node_size = HBMGUARD_MAP_NODE_SIZE,
	};
	dev->map = map;
	return 0;

err_copy:
	hbm_mtree_destroy(&map->copy[0]);
err_page:
	free_page((unsigned long)map->hdr);
err_free:
	hbm_kfree(map);
	return err;
}

/* Device teardown: no publication may run after this. */
void hbm_map_destroy(struct hbm_device *dev)
{
	if (dev->map)
		hbm_map_put(dev->map);
	dev->map = NULL;
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

/*
 * Page 0 is the header, then each copy's pages.  A page not backed yet is
 * one no reader that bounds its indices by `nodes` touches: SIGBUS.  The
 * writer stores a chunk before it raises `nodes` (release), and readers
 * load `nodes` with acquire, so a page they may touch is found here.  A
 * reader that does not wait for `nodes` finds a chunk zeroed or none: its
 * pointer is stored with release, loaded here with acquire.
 */
static vm_fault_t hbm_map_fault(struct vm_fault *vmf)
{
	struct hbm_map *map = vmf->vma->vm_private_data;
	pgoff_t pg = vmf->pgoff;
	void *addr = NULL;

	if (!pg) {
		addr = map->hdr;
	} else if (pg - 1 < 2 * (pgoff_t)map->chunks_per_copy) {
		const struct hbm_mtree *m = &map->copy[(pg - 1) / map->chunks_per_copy];

		addr = smp_load_acquire(&m->chunk[(pg - 1) % map->chunks_per_copy]);
	}
	if (!addr)
		return VM_FAULT_SIGBUS;
	vmf->page = virt_to_page(addr);
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct hbm_map_vm_ops = {
	.open = hbm_vma_open,
	.close = hbm_vma_close,
	.fault = hbm_map_fault,
};

/**
 * hbm_map_mmap() - mmap() of a device's table
 * @vma: the mapping asked for
 *
 * The first mapping of a map changed before builds both copies here, under
 * the device lock (O(extents), once); the caller holds its mmap lock, which
 * the aperture's fault handler also takes before the device lock.  The wait
 * for the lock (behind a restore of 10^6 pages, say) can be killed: every
 * fault of the caller's process waits on its mmap lock meanwhile.
 *
 * Return: 0; -EINVAL for an offset that is not a table's or a length past
 * it; -EACCES for a writable mapping; -ENODEV for no such device;
 * -EOPNOTSUPP for a device created without a map; -EINTR, killed while it
 * waited.
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
	err = !map ? -EOPNOTSUPP : len > map->size ? -EINVAL : 0;
	if (err)
		goto out;
	err = mutex_lock_killable(&dev->lock);
	if (err)
		goto out;
	if (dev->dead) {
		err = -ENODEV;
	} else {
		hbm_vm_flags_clear(vma, VM_MAYWRITE);
		hbm_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		vma->vm_pgoff = 0;	/* the fault handler counts from it */
		kref_get(&map->ref);
		vma->vm_private_data = map;
		vma->vm_ops = &hbm_map_vm_ops;
		if (!map->built && map->stale)
			publish_whole(dev);
		map->built = true;
	}
	mutex_unlock(&dev->lock);
out:
	hbm_device_put(dev);
	return err;
}
