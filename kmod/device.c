// SPDX-License-Identifier: GPL-2.0
/*
 * The device registry and what happens to a device's table.
 *
 * Devices live in an allocating xarray under small ids.  A lookup takes a
 * reference under the xarray's lock, so a device can be destroyed while an
 * ioctl uses it: it leaves the registry at once (new lookups get ENODEV) and
 * is freed when its last user lets go.  Every change of a table goes through
 * this file, which turns what the core reports changed into events.
 *
 * A device's events are made under its lock, DEVICE_ADDED included: it is
 * published with the lock held, so no event of a device comes before its
 * DEVICE_ADDED, and none after its DEVICE_REMOVED (dead is set first), whose
 * id is given to another only after that (hbm_device_remove()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bits.h>
#include <linux/ctype.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/xarray.h>

#include "hbm.h"

static DEFINE_XARRAY_ALLOC(hbm_devices);
/* Out of the registry, their ids reserved until their DEVICE_REMOVED: hbm_device_remove(). */
static LIST_HEAD(hbm_dying);

/*
 * Range devices by physical address, for the RAS paths.  Apart from the
 * registry because those look up from any context: an IRQ-safe lock, raw
 * for PREEMPT_RT's sake (intake.c), held for a walk of 256 at most.
 */
static struct hbm_device *hbm_ranges[HBMGUARD_MAX_DEVICES];
static unsigned int hbm_nr_ranges;
static DEFINE_RAW_SPINLOCK(hbm_ranges_lock);
static DEFINE_MUTEX(hbm_registry_lock);	/* create/destroy: unique names */
/*
 * Range devices registered one at a time, a claim from its clash check to
 * its publication: of two requests for the same memory (netlink commands
 * run in parallel) the second gets EEXIST, not EBUSY from
 * alloc_contig_range() isolating what the first is taking, nor a claim
 * the whole range migrated and zeroed for nothing.
 */
static DEFINE_MUTEX(hbm_range_lock);
static atomic64_t hbm_gen = ATOMIC64_INIT(0);

u64 hbm_generation(void)
{
	return atomic64_read(&hbm_gen);
}

struct hbm_device *hbm_device_get(u32 id)
{
	struct hbm_device *dev;

	xa_lock(&hbm_devices);
	dev = xa_load(&hbm_devices, id);
	if (dev)
		kref_get(&dev->ref);
	xa_unlock(&hbm_devices);
	return dev;
}

static void hbm_device_free(struct work_struct *work)
{
	struct hbm_device *dev = container_of(work, struct hbm_device, free_work);

	hbm_map_destroy(dev);
	hbm_aperture_free(dev);
	hbm_core_destroy(&dev->core);
	mutex_destroy(&dev->lock);
	hbm_kfree(dev);
}

/* The RAS paths drop references in atomic context: free in a worker. */
static void hbm_device_release(struct kref *ref)
{
	struct hbm_device *dev = container_of(ref, struct hbm_device, ref);

	INIT_WORK(&dev->free_work, hbm_device_free);
	queue_work(hbm_wq, &dev->free_work);
}

void hbm_device_put(struct hbm_device *dev)
{
	kref_put(&dev->ref, hbm_device_release);
}

/**
 * hbm_device_find_pci() - the device of a GPU at a PCI address
 * @pci_addr: the address, as pci_name() gives it
 *
 * A GPU device (HBMGUARD_KIND_GPU) has its PCI address as an attribute; a
 * provider's device may have it as its identity.  Registration keeps the
 * two from naming the same address twice (device_clashes()).
 *
 * Return: the device with a reference the caller puts, or NULL.
 */
struct hbm_device *hbm_device_find_pci(const char *pci_addr)
{
	struct hbm_device *dev, *found = NULL;
	unsigned long id;

	xa_lock(&hbm_devices);
	xa_for_each(&hbm_devices, id, dev) {
		if (!strcmp(dev->pci_addr, pci_addr) ||
		    !strcmp(dev->identity, pci_addr)) {
			kref_get(&dev->ref);
			found = dev;
			break;
		}
	}
	xa_unlock(&hbm_devices);
	return found;
}

u32 hbm_device_ids(u32 *ids, u32 max)
{
	struct hbm_device *dev;
	unsigned long id;
	u32 n = 0;

	xa_lock(&hbm_devices);
	xa_for_each(&hbm_devices, id, dev) {
		if (n < max)
			ids[n] = id;
		n++;
	}
	xa_unlock(&hbm_devices);
	return n;
}

u32 hbm_device_count(void)
{
	return hbm_device_ids(NULL, 0);
}

static bool name_valid(const char *name)
{
	const char *p;

	if (!*name)
		return false;
	for (p = name; *p; p++)
		if (!isalnum(*p) && !strchr("_.:-", *p))
			return false;
	return true;
}

static bool identity_valid(const char *identity)
{
	const char *p;

	for (p = identity; *p; p++)
		if (*p <= ' ' || *p > '~')
			return false;
	return true;
}

/**
 * hbm_pci_addr_valid() - whether @s is a PCI address as the kernel names one
 * @s: NUL-terminated
 *
 * pci_setup_device() in drivers/pci/probe.c (6.1 and 6.12) names a PCI
 * device "%04x:%02x:%02x.%d": domain, bus, slot (0..1f), function (0..7),
 * hex digits in lower case.  Only that spelling is accepted, so that the
 * Xid path's pci_name() finds the device by comparing strings.
 *
 * Return: true when it is one.
 */
bool hbm_pci_addr_valid(const char *s)
{
	size_t len = strnlen(s, HBMGUARD_PCI_ADDR_LEN), dom, i;

	if (len < 12 || len >= HBMGUARD_PCI_ADDR_LEN)
		return false;
	dom = len - 8;			/* "bb:ss.f" and its colon follow */
	if (dom > 8 || (dom > 4 && s[0] == '0'))
		return false;		/* %04x pads to four digits, no more */
	for (i = 0; i < len; i++) {
		char c = s[i];
		bool sep = i == dom || i == dom + 3 || i == dom + 6;

		if (sep && c != (i == dom + 6 ? '.' : ':'))
			return false;
		if (!sep && !isdigit(c) && !(c >= 'a' && c <= 'f'))
			return false;
	}
	/* Slot: five bits; function: three. */
	return s[dom + 4] <= '1' && s[dom + 7] <= '7';
}

/* Whether two devices name the same PCI address, as attribute or identity. */
static bool same_pci(const struct hbm_device *a, const struct hbm_device *b)
{
	return (*a->pci_addr && (!strcmp(a->pci_addr, b->pci_addr) ||
				 !strcmp(a->pci_addr, b->identity))) ||
	       (*b->pci_addr && !strcmp(b->pci_addr, a->identity));
}

static bool clash(const struct hbm_device *dev, const struct hbm_device *new)
{
	return !strcmp(dev->name, new->name) || !strcmp(dev->identity, new->identity) ||
	       same_pci(dev, new) ||
	       (dev->kind == HBMGUARD_KIND_RANGE && new->kind == HBMGUARD_KIND_RANGE &&
		dev->phys_start < new->phys_start + new->hbm_size &&
		new->phys_start < dev->phys_start + dev->hbm_size);
}

/*
 * Whether a registered device has this name, identity, PCI address or (for
 * a range) an overlapping physical range; registry lock held.  One being
 * removed counts until its DEVICE_REMOVED is out: its listeners know it
 * alive until then.
 */
static bool device_clashes(const struct hbm_device *new)
{
	struct hbm_device *dev;
	unsigned long id;

	xa_for_each(&hbm_devices, id, dev)
		if (clash(dev, new))
			return true;
	list_for_each_entry(dev, &hbm_dying, dying)
		if (clash(dev, new))
			return true;
	return false;
}

static void ranges_add(struct hbm_device *dev)
{
	unsigned long flags;

	raw_spin_lock_irqsave(&hbm_ranges_lock, flags);
	hbm_ranges[hbm_nr_ranges++] = dev;
	raw_spin_unlock_irqrestore(&hbm_ranges_lock, flags);
}

static void ranges_remove(struct hbm_device *dev)
{
	unsigned long flags;
	unsigned int i;

	raw_spin_lock_irqsave(&hbm_ranges_lock, flags);
	for (i = 0; i < hbm_nr_ranges; i++)
		if (hbm_ranges[i] == dev)
			hbm_ranges[i] = hbm_ranges[--hbm_nr_ranges];
	raw_spin_unlock_irqrestore(&hbm_ranges_lock, flags);
}

/**
 * hbm_device_find_phys() - the range device holding a physical address
 * @phys: the address
 * @offset: its offset in the device, when found
 *
 * The spare area is part of the device: an error there is the device's.
 * Callable from any context.
 *
 * Return: the device with a reference the caller puts, or NULL.
 */
struct hbm_device *hbm_device_find_phys(u64 phys, u64 *offset)
{
	struct hbm_device *found = NULL;
	unsigned long flags;
	unsigned int i;

	raw_spin_lock_irqsave(&hbm_ranges_lock, flags);
	for (i = 0; i < hbm_nr_ranges; i++) {
		struct hbm_device *dev = hbm_ranges[i];

		if (phys >= dev->phys_start &&
		    phys - dev->phys_start < dev->hbm_size) {
			*offset = phys - dev->phys_start;
			kref_get(&dev->ref);
			found = dev;
			break;
		}
	}
	raw_spin_unlock_irqrestore(&hbm_ranges_lock, flags);
	return found;
}

static int spec_check(const struct hbm_device_spec *spec)
{
	u64 pages;

	if (!is_power_of_2(spec->page_size) ||
	    spec->page_size < HBMGUARD_PAGE_SIZE_MIN ||
	    spec->page_size > HBMGUARD_PAGE_SIZE_MAX)
		return -EINVAL;
	if (!spec->hbm_size || spec->hbm_size & (spec->page_size - 1))
		return -EINVAL;
	pages = spec->hbm_size >> ilog2(spec->page_size);
	if (pages > U32_MAX || spec->spare_pages >= pages ||
	    spec->spare_pages > HBMGUARD_SPARE_PAGES_MAX)
		return -EINVAL;
	/* The aperture maps CPU pages: a device page must hold whole ones. */
	if ((spec->backed || spec->claim) && spec->page_size < PAGE_SIZE)
		return -EINVAL;
	if (spec->backed && spec->hbm_size > HBMGUARD_SIM_BACKED_MAX)
		return -EINVAL;
	if (spec->claim && (spec->kind != HBMGUARD_KIND_RANGE ||
			    spec->phys_start & ~PAGE_MASK || spec->hbm_size & ~PAGE_MASK))
		return -EINVAL;
	if (!spec->name || strnlen(spec->name, HBMGUARD_NAME_LEN) == HBMGUARD_NAME_LEN ||
	    !name_valid(spec->name))
		return -EINVAL;
	if (spec->identity &&
	    (strnlen(spec->identity, HBMGUARD_IDENTITY_LEN) == HBMGUARD_IDENTITY_LEN ||
	     !identity_valid(spec->identity)))
		return -EINVAL;
	/* A GPU: its identity (UUID) and address given, no spares, no memory. */
	if (spec->kind == HBMGUARD_KIND_GPU &&
	    (!spec->identity || !*spec->identity || !spec->pci_addr ||
	     !hbm_pci_addr_valid(spec->pci_addr) || spec->spare_pages ||
	     spec->backed || spec->claim))
		return -EINVAL;
	if (spec->kind != HBMGUARD_KIND_GPU && spec->pci_addr)
		return -EINVAL;
	return 0;
}

/* hbm_device_create() but for the ranges' lock. */
static struct hbm_device *create_device(const struct hbm_device_spec *spec)
{
	struct hbm_device *dev;
	u32 pages, spares;
	int err;

	err = spec_check(spec);
	if (err)
		return ERR_PTR(err);
	dev = hbm_kalloc(sizeof(*dev), true);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	kref_init(&dev->ref);
	mutex_init(&dev->lock);
	dev->kind = spec->kind;
	dev->page_shift = ilog2(spec->page_size);
	dev->hbm_size = spec->hbm_size;
	dev->phys_start = spec->phys_start;
	dev->numa_node = spec->kind == HBMGUARD_KIND_RANGE ? spec->numa_node : -1;
	dev->backed = spec->backed;
	xa_init(&dev->backing);
	xa_init(&dev->lost);
	xa_init(&dev->served);
	xa_init(&dev->dead_frames);
	strscpy(dev->name, spec->name, sizeof(dev->name));
	dev->owner = spec->owner;
	if (spec->pci_addr)
		strscpy(dev->pci_addr, spec->pci_addr, sizeof(dev->pci_addr));
	if (spec->identity && *spec->identity)
		strscpy(dev->identity, spec->identity, sizeof(dev->identity));
	else
		snprintf(dev->identity, sizeof(dev->identity), "%s:%s",
			 spec->kind == HBMGUARD_KIND_SIMULATED ? "sim" : "hbm",
			 spec->name);

	pages = spec->hbm_size >> dev->page_shift;
	spares = spec->spare_pages ?: min3(pages - 1,
					    hbm_default_retire_limit(spec->hbm_size),
					    (u32)HBMGUARD_SPARE_PAGES_MAX);
	if (spec->kind == HBMGUARD_KIND_GPU)
		spares = 0;	/* the driver's own bypass: no pool of ours */
	err = hbm_core_init(&dev->core, pages - spares, spares, spec->page_size);
	if (err)
		goto err_free;
	dev->core.table.driver_bypass = spec->kind == HBMGUARD_KIND_GPU;
	err = hbm_map_create(dev);
	if (err)
		goto err_core;
	if (spec->claim) {
		/* Not the memory of a device registered already: that is EEXIST. */
		mutex_lock(&hbm_registry_lock);
		err = device_clashes(dev) ? -EEXIST : 0;
		mutex_unlock(&hbm_registry_lock);
		if (!err)
			err = hbm_aperture_claim(dev);
		if (err)
			goto err_map;
	}

	/*
	 * Once published, the device may be destroyed by anyone who finds it:
	 * the caller's is a reference of its own.  Its lock, held from before
	 * publication to after DEVICE_ADDED, keeps its other events behind that.
	 */
	kref_get(&dev->ref);
	mutex_lock(&dev->lock);
	mutex_lock(&hbm_registry_lock);
	if (device_clashes(dev)) {
		err = -EEXIST;
		goto err_unlock;
	}
	err = xa_alloc(&hbm_devices, &dev->id, dev,
		       XA_LIMIT(0, HBMGUARD_MAX_DEVICES - 1), GFP_KERNEL);
	if (err) {
		err = err == -EBUSY ? -ENOSPC : err;
		goto err_unlock;
	}
	if (dev->kind == HBMGUARD_KIND_RANGE)
		ranges_add(dev);
	mutex_unlock(&hbm_registry_lock);

	pr_info("device %u %s (%s): %llu MiB, %u KiB pages, %u spare pages\n",
		dev->id, dev->name, dev->identity, dev->hbm_size >> 20,
		spec->page_size >> 10, spares);
	dev->added_seqnum = hbm_event(HBMGUARD_EVENT_DEVICE_ADDED, dev->id, 0,
				      dev->hbm_size, 0, 0, 0, dev->kind);
	mutex_unlock(&dev->lock);
	return dev;

err_unlock:
	mutex_unlock(&hbm_registry_lock);
	mutex_unlock(&dev->lock);
	hbm_aperture_free(dev);
err_map:
	hbm_map_destroy(dev);
err_core:
	hbm_core_destroy(&dev->core);
err_free:
	mutex_destroy(&dev->lock);
	hbm_kfree(dev);
	return ERR_PTR(err);
}

/**
 * hbm_device_create() - register a device
 * @spec: what it is
 *
 * The caller gets the device itself, held, rather than its id: whatever it
 * does next (a reply that fails and takes the device back, a provider's
 * reference) is done to this device, never to one registered under the
 * same id after another caller removed this one.
 *
 * Context: process context; sleeps.
 *
 * Return: the device, a reference the caller puts (hbm_device_put()); or
 * ERR_PTR(-EINVAL) for a bad @spec, -EEXIST when the name or identity is
 * taken, -ENOSPC when HBMGUARD_MAX_DEVICES are registered, -ENOMEM, or
 * hbm_aperture_claim()'s error; -EINTR when a fatal signal came while
 * another range was being registered.
 *
 * Spare pages: @spec's, or one per 100 MiB; never above
 * HBMGUARD_SPARE_PAGES_MAX, which bounds the mapped table (map.c).
 */
struct hbm_device *hbm_device_create(const struct hbm_device_spec *spec)
{
	struct hbm_device *dev;

	if (spec->kind != HBMGUARD_KIND_RANGE)
		return create_device(spec);
	if (mutex_lock_killable(&hbm_range_lock))
		return ERR_PTR(-EINTR);
	dev = create_device(spec);
	mutex_unlock(&hbm_range_lock);
	return dev;
}

/**
 * hbm_device_remove() - unregister this device
 * @dev: the device, held by a reference of the caller's own, which it
 *	still puts after (the registry's is dropped here: without one of its
 *	own, the caller's next use of @dev may be after it is freed)
 *
 * Stop @dev and take it out of the registry: no change, report or deferred
 * work of it runs after this.  It leaves the registry before its
 * DEVICE_REMOVED (no lookup finds it once a listener knows it gone), but
 * its id stays reserved until after: a device registered meanwhile gets
 * another, for an event of this one after that one's DEVICE_ADDED would
 * be taken for that one's (its REMOVED for the new device gone, a data
 * loss counted to it), and its name, identity and range are still taken
 * (device_clashes()).  Storing NULL in an allocating xarray reserves the
 * index: lookups and walks skip it, xa_alloc() does not give it
 * (Documentation/core-api/xarray.rst, __xa_store(), 6.12).
 *
 * Context: process context; sleeps.  Takes @dev->lock, then the
 * registry's lock: the caller holds neither.
 *
 * Return: 0, or -ENODEV when another removal came first.
 */
int hbm_device_remove(struct hbm_device *dev)
{
	mutex_lock(&dev->lock);
	if (dev->dead) {
		mutex_unlock(&dev->lock);
		return -ENODEV;
	}
	WRITE_ONCE(dev->dead, true);
	if (dev->kind == HBMGUARD_KIND_RANGE)
		ranges_remove(dev);	/* the RAS paths' errors are no longer its */
	mutex_lock(&hbm_registry_lock);
	xa_store(&hbm_devices, dev->id, NULL, GFP_KERNEL);	/* replaces: allocates nothing */
	list_add(&dev->dying, &hbm_dying);
	mutex_unlock(&hbm_registry_lock);
	hbm_selftest_removing(dev);	/* debug builds: a selftest may hold it here */
	hbm_map_removed(dev);
	hbm_aperture_removed(dev);
	pr_info("device %u %s removed\n", dev->id, dev->name);
	hbm_event(HBMGUARD_EVENT_DEVICE_REMOVED, dev->id, 0, dev->hbm_size, 0,
		  0, 0, dev->kind);
	mutex_lock(&hbm_registry_lock);
	list_del(&dev->dying);
	xa_erase(&hbm_devices, dev->id);
	mutex_unlock(&hbm_registry_lock);
	mutex_unlock(&dev->lock);
	hbm_device_put(dev);
	return 0;
}

/**
 * hbm_device_destroy() - unregister a device
 * @id: its id
 * @kind: the kind it must be (a simulated device is destroyed only as such)
 *
 * Users holding a reference keep it until they put it.
 *
 * Return: 0, -ENODEV, or -EOPNOTSUPP when the device is of another kind.
 */
int hbm_device_destroy(u32 id, u32 kind)
{
	struct hbm_device *dev;
	int err;

	mutex_lock(&hbm_registry_lock);
	dev = xa_load(&hbm_devices, id);
	if (!dev || dev->kind != kind) {
		mutex_unlock(&hbm_registry_lock);
		return dev ? -EOPNOTSUPP : -ENODEV;
	}
	kref_get(&dev->ref);
	mutex_unlock(&hbm_registry_lock);
	err = hbm_device_remove(dev);
	hbm_device_put(dev);
	return err;
}

/*
 * The first registered device from *@id on, its id in *@id, held: any, or
 * with @owner a provider's device of that module; NULL when none is left.
 */
static struct hbm_device *hold_next(unsigned long *id, const struct module *owner)
{
	struct hbm_device *dev;

	mutex_lock(&hbm_registry_lock);
	xa_for_each_start(&hbm_devices, *id, dev, *id)
		if (!owner || (dev->kind == HBMGUARD_KIND_PROVIDER && dev->owner == owner))
			break;
	if (dev)
		kref_get(&dev->ref);
	mutex_unlock(&hbm_registry_lock);
	return dev;
}

/* Unload: every device, each found under the registry's lock. */
void hbm_devices_destroy_all(void)
{
	struct hbm_device *dev;
	unsigned long id = 0;

	for (; (dev = hold_next(&id, NULL)); id++) {
		hbm_device_remove(dev);
		hbm_device_put(dev);
	}
}

/**
 * hbm_devices_orphaned() - unregister what a provider left registered
 * @owner: the provider's module, going (its exit returned, or its init
 *	failed)
 *
 * Each of its devices still registered is removed, and the reference its
 * registration gave the provider put: nobody is left to call
 * hbmguard_unregister_device() with it, and until then its name and
 * identity would stay taken (a reload of the driver refused -EEXIST) and
 * the device leak.  A provider removes no device but its own, which no
 * other path removes (netlink's and the ioctls' are for other kinds): a
 * removal here is never a second one.
 *
 * Context: process context (a module notifier); sleeps.
 */
void hbm_devices_orphaned(struct module *owner)
{
	struct hbm_device *dev;
	unsigned long id = 0;

	for (; (dev = hold_next(&id, owner)); id++) {
		pr_warn("device %u %s: module %s going without unregistering it: unregistered for it\n",
			dev->id, dev->name, module_name(owner));
		if (!hbm_device_remove(dev))
			hbm_device_put(dev);	/* the provider's */
		hbm_device_put(dev);
	}
}

/*
 * A change within [@offset, @offset + @length) made visible: the mapped
 * table published over that range.  Device lock held.
 *
 * Whoever an event wakes (the daemon, then a rank it pauses) must find the
 * change already made: the table published and the aperture's mappings
 * zapped, or a rank that reads its memory at PAUSE could still read a page
 * its error has lost.  So events go out after this and the aperture.
 */
static void device_publish(struct hbm_device *dev, u64 offset, u64 length)
{
	dev->generation++;
	atomic64_inc(&hbm_gen);
	hbm_map_changed(dev, min_t(u64, offset >> dev->page_shift, U32_MAX),
			min_t(u64, length >> dev->page_shift, U32_MAX));
}

static void device_health_event(struct hbm_device *dev, u32 old_health)
{
	if (dev->core.health != old_health)
		hbm_event(HBMGUARD_EVENT_HEALTH, dev->id, 0, 0, 0,
			  dev->core.health, hbm_table_bad_pages(&dev->core.table),
			  old_health);
}

/* A result's counts of pages, each with the event that tells it. */
static const struct {
	size_t field;
	u32 type;
} result_kinds[] = {
	{ offsetof(struct hbm_result, retired), HBMGUARD_EVENT_RETIRED },
	{ offsetof(struct hbm_result, pending), HBMGUARD_EVENT_PENDING },
	{ offsetof(struct hbm_result, failed), HBMGUARD_EVENT_FAILED },
	{ offsetof(struct hbm_result, cleared), HBMGUARD_EVENT_CLEARED },
};

static u32 result_count(const struct hbm_result *res, unsigned int i)
{
	return *(const u32 *)((const char *)res + result_kinds[i].field);
}

/*
 * What changed made visible, before any event: device_publish().  Return:
 * the pages whose data the aperture lost in moving it (hbm_aperture_changed()).
 */
static u32 device_change_made(struct hbm_device *dev, const struct hbm_result *res,
			      u64 offset, u64 length)
{
	bool changed = res->spares_failed;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(result_kinds); i++)
		changed |= result_count(res, i) != 0;
	if (!changed)
		return 0;
	device_publish(dev, offset, length);
	return hbm_aperture_changed(dev, offset, length);
}

/* The page events of the pages a change moves, whose data it may lose. */
#define MOVED_EVENTS	(BIT(HBMGUARD_EVENT_RETIRED) | BIT(HBMGUARD_EVENT_CLEARED))

/*
 * What changed told, each page event with @flags (HBMGUARD_PAGES_*) where
 * its type is in @flagged (BIT(type)); device lock held, so events come in
 * order, and DEVICE_GET reads a data loss's count and seqnum together.
 */
static void device_change_told(struct hbm_device *dev, const struct hbm_result *res,
			       u64 offset, u64 length, u8 source, u32 flags,
			       u32 flagged, u32 old_health)
{
	unsigned int i;
	u32 aux;
	u64 seqnum;

	lockdep_assert_held(&dev->lock);
	for (i = 0; i < ARRAY_SIZE(result_kinds); i++) {
		if (!result_count(res, i))
			continue;
		aux = flagged & BIT(result_kinds[i].type) ? flags : 0;
		seqnum = hbm_event(result_kinds[i].type, dev->id, offset,
				   length, source, 0, result_count(res, i), aux);
		if (aux & HBMGUARD_PAGES_DATA_LOST) {
			dev->data_lost++;
			dev->data_lost_seqnum = seqnum;
		}
	}
	device_health_event(dev, old_health);
}

/*
 * A change of the table: an operator's (a retire, a clear), or none (a
 * policy, a driver's health).  Data its move lost (a copy that failed, a
 * page taken off a frame an error took) is news whatever the source says,
 * on the events of the pages it moves: those it failed kept their frames.
 */
static void device_changed(struct hbm_device *dev, const struct hbm_result *res,
			   u64 offset, u64 length, u8 source, u32 old_health)
{
	u32 flags = device_change_made(dev, res, offset, length) ?
		    HBMGUARD_PAGES_DATA_LOST : 0;

	device_change_told(dev, res, offset, length, source, flags, MOVED_EVENTS,
			   old_health);
}

static u32 now_seconds(void)
{
	return (u32)ktime_get_real_seconds();
}

/**
 * hbm_device_report() - an error at one offset, through the policy
 * @dev: the device
 * @offset: byte offset, below hbm_size: in the spare area, the error is the
 *	spare's (a spare that fails leaves the pool; the page it served moves
 *	to another, or its own frame, its data lost unless correctable errors
 *	failed the spare and the device has memory to copy it there); at a
 *	FAILED page, an uncorrectable error or poison destroys its data
 * @kind: enum hbmguard_error_kind
 * @count: errors (CE), 1 otherwise
 * @path: enum hbmguard_path the error came by
 *
 * Return: 0, -ERANGE, -EINVAL, -ENODEV (unregistered meanwhile), -ENOMEM;
 * on error nothing changed.
 */
int hbm_device_report(struct hbm_device *dev, u64 offset, u32 kind, u32 count,
		      u32 path)
{
	static const u8 source_of[__HBMGUARD_ERROR_MAX] = {
		[HBMGUARD_ERROR_CE] = HBMGUARD_SOURCE_CE_THRESHOLD,
		[HBMGUARD_ERROR_UE] = HBMGUARD_SOURCE_UE,
		[HBMGUARD_ERROR_POISON] = HBMGUARD_SOURCE_POISON,
	};
	struct hbm_result res = {};
	struct hbm_extent e = {};
	u32 old_health, page, served, flags = 0, newly_lost;
	bool moved = false, data_lost = false, whole = false, destroys;
	u8 why;
	int err;

	if (offset >= dev->hbm_size)
		return -ERANGE;
	page = offset >> dev->page_shift;

	mutex_lock(&dev->lock);
	old_health = dev->core.health;
	/*
	 * A page FAILED with its data whole on its own frame, which serves it
	 * (on a device with memory: not taken by an error, nor lost; without,
	 * as far as its record tells).
	 */
	destroys = kind != HBMGUARD_ERROR_CE && offset < hbm_usable_size(dev);
	if (destroys && hbm_table_lookup(&dev->core.table, page, &e))
		whole = e.state == HBMGUARD_STATE_FAILED &&
			(dev->backed ? !hbm_aperture_frame_dead(dev, page) &&
				       !hbm_aperture_lost(dev, page) :
				       !hbm_source_destroys(e.source));
	err = dev->dead ? -ENODEV :
	      hbm_core_report(&dev->core, page, kind, count, now_seconds(), &res,
			      &served);
	if (!err) {
		if (served == HBM_NO_SPARE ||
		    !hbm_table_lookup(&dev->core.table, served, &e))
			e.source = HBMGUARD_SOURCE_NONE;
		why = e.source;
		if (served == HBM_NO_SPARE) {
			served = page;	/* a free spare: no page changed */
		} else if (served != page) {
			/*
			 * The failed spare held the page's data.  An
			 * uncorrectable error or poison destroyed it.  After
			 * correctable errors it is still there: on a device
			 * with memory, where the page has another spare, it
			 * is copied there as any page's whose spare changes
			 * (hbm_aperture_changed(), machine-check safe), lost
			 * only if that copy fails; with none left, to its own
			 * frame, which serves it FAILED, likewise, unless an
			 * uncorrectable error took that frame (the aperture's
			 * mark): it serves the page nobody until a CLEAR.
			 * Without memory nobody here can move it: its data goes
			 * with the spare.
			 */
			moved = true;
			data_lost = kind != HBMGUARD_ERROR_CE || !dev->backed ||
				    (e.state == HBMGUARD_STATE_FAILED &&
				     hbm_aperture_frame_dead(dev, served));
			if (data_lost)
				hbm_aperture_lose(dev, served);
			why = source_of[kind];
		} else if (destroys) {
			hbm_aperture_mark_frame_dead(dev, page);
			/*
			 * Whole, the error destroyed it there.  Still FAILED,
			 * its state did not change; retired onto a spare freed
			 * meanwhile, its source may have said so before: news
			 * either way, said as a loss again.
			 */
			if (whole && e.state == HBMGUARD_STATE_FAILED)
				res.failed++;
			data_lost = whole;
		}
		newly_lost = device_change_made(dev, &res, (u64)served << dev->page_shift,
						1ULL << dev->page_shift);
		/*
		 * Lost data is news even for a page its listeners knew bad
		 * (lost before, by a UE) or whose source destroyed nothing
		 * (CE: its copy to a spare failed): the event says so, and
		 * recovery starts again.  A UE's or poison's own page, lost
		 * where it stands, its source says.
		 */
		if (data_lost || (moved && hbm_aperture_lost(dev, served)) ||
		    (kind == HBMGUARD_ERROR_CE && newly_lost))
			flags = HBMGUARD_PAGES_DATA_LOST;
		hbm_event(HBMGUARD_EVENT_ERROR, dev->id, offset, 1, e.source,
			  kind, count, path);
		device_change_told(dev, &res, (u64)served << dev->page_shift,
				   1ULL << dev->page_shift, why, flags, U32_MAX, old_health);
	}
	mutex_unlock(&dev->lock);
	return err;
}

/**
 * hbm_device_apply() - retire, mark pending or clear a page-aligned range
 * @dev: the device
 * @op: what to do
 * @offset: first byte, page aligned
 * @length: bytes, a non-zero multiple of the page size
 * @source: enum hbmguard_source recorded for pages new to the table
 *
 * Return: 0, -EINVAL for a misaligned range, -ERANGE for one outside the
 * device, -ENODEV (unregistered meanwhile), -ENOMEM; on error nothing
 * changed.
 */
int hbm_device_apply(struct hbm_device *dev, enum hbm_op op, u64 offset,
		     u64 length, u8 source)
{
	u64 mask = (1ULL << dev->page_shift) - 1;
	struct hbm_result res = {};
	u32 old_health;
	int err;

	if (!length || (offset | length) & mask)
		return -EINVAL;
	/*
	 * A GPU's pages are retired by its driver, which the record says; the
	 * driver's word is only a GPU's.
	 */
	if (op != HBM_OP_CLEAR &&
	    (dev->kind == HBMGUARD_KIND_GPU ? source == HBMGUARD_SOURCE_ADMIN :
					      source == HBMGUARD_SOURCE_DRIVER))
		return -EINVAL;
	if (offset >= hbm_usable_size(dev) ||
	    length > hbm_usable_size(dev) - offset)
		return -ERANGE;

	mutex_lock(&dev->lock);
	old_health = dev->core.health;
	err = dev->dead ? -ENODEV :
	      hbm_core_apply(&dev->core, op, offset >> dev->page_shift,
			     length >> dev->page_shift, source, now_seconds(),
			     &res);
	if (!err)
		device_changed(dev, &res, offset, length, source, old_health);
	mutex_unlock(&dev->lock);
	return err;
}

/* Adjacent extents of a restore whose move lost data, told on one event. */
struct restore_loss {
	u32 first, end, lost;
	u8 source;
};

/*
 * A run of a restore's extents the aperture's move lost data of (a page
 * taken off a frame an error took, a copy that failed): news that the
 * RESTORED event, naming no range, cannot tell.  A RETIRED event says it,
 * over the run alone (a listener recovers what it names), COUNT the pages
 * lost, its source the run's record's.
 */
static void restore_loss_told(struct hbm_device *dev, struct restore_loss *l)
{
	if (!l->lost)
		return;
	device_change_told(dev, &(struct hbm_result){ .retired = l->lost },
			   (u64)l->first << dev->page_shift,
			   (u64)(l->end - l->first) << dev->page_shift, l->source,
			   HBMGUARD_PAGES_DATA_LOST, U32_MAX, dev->core.health);
	l->lost = 0;
}

/*
 * A restore's extents moved by the aperture, extent by extent (it visits
 * every page of what it is given); data a move lost told run by run, each
 * run's event once the run ends (restore_loss_told()), so before the
 * extents after it are moved: the pages it names are, and under the
 * device's lock no fault is served before every move is made.  A run is
 * whole extents, in the order given (by offset: a RESTORE's are sorted): a
 * page of one that lost nothing is named with it.  Runs that alternate
 * with extents that lost nothing are that many events (8192 a request at
 * most); a reader whose ring overflows learns of their losses still
 * (data_lost).
 */
static void restore_moved(struct hbm_device *dev, const struct hbm_page_range *x, u32 n)
{
	struct restore_loss run = {};
	struct hbm_extent e;
	u32 i, lost;

	for (i = 0; i < n; i++) {
		lost = hbm_aperture_changed(dev, (u64)x[i].first << dev->page_shift,
					    (u64)x[i].nr << dev->page_shift);
		e.source = HBMGUARD_SOURCE_RESTORED;
		if (lost)
			hbm_table_lookup(&dev->core.table, x[i].first, &e);
		if (!lost || x[i].first != run.end || e.source != run.source)
			restore_loss_told(dev, &run);
		if (!lost)
			continue;
		if (!run.lost)
			run = (struct restore_loss){ .first = x[i].first, .source = e.source };
		run.end = x[i].first + x[i].nr;
		run.lost += lost;
	}
	restore_loss_told(dev, &run);
}

/**
 * hbm_device_restore() - pages known bad from persistent state, in one change
 * @dev: the device
 * @x: the extents, sorted or not, each checked by the caller to be inside
 *	the device and not empty
 * @n: how many
 *
 * A restart with 10^6 stored pages must not cost 10^6 changes: the extents
 * are applied under one hold of the device's lock, each with its record
 * (hbm_core_restore(): at once where the table has none of their pages, a
 * restore after a module load), published once and announced by one
 * RESTORED event, which names no range (the extents need not be
 * contiguous: the table says which they are).  Their data was lost before,
 * not now: the aperture marks no frame dead, whatever their source.  Data
 * the aperture's move loses now (a page taken off a frame an error took
 * before, a copy that failed) is said on RETIRED events before it
 * (restore_moved()).
 *
 * Return: 0, -ENODEV (unregistered meanwhile), or the first extent's error
 * (-ENOMEM); the extents before it stay applied, and are announced.
 */
int hbm_device_restore(struct hbm_device *dev, const struct hbm_page_range *x, u32 n)
{
	u32 lo = U32_MAX, hi = 0, old_health, i, done = 0, pages;
	struct hbm_result res = {};
	bool changed;
	int err;

	mutex_lock(&dev->lock);
	old_health = dev->core.health;
	err = dev->dead ? -ENODEV :
	      hbm_core_restore(&dev->core, x, n, now_seconds(), &res, &done);
	for (i = 0; i < done; i++) {
		lo = min(lo, x[i].first);
		hi = max(hi, x[i].first + x[i].nr);
	}
	pages = res.retired + res.pending + res.failed;
	changed = pages || res.spares_failed;
	/*
	 * The mapped table over the span: what lies between the extents is
	 * listed, not rewritten.  A device without memory has no aperture:
	 * 10^6 calls that return at once are not made.
	 */
	if (changed && lo < hi)
		device_publish(dev, (u64)lo << dev->page_shift,
			       (u64)(hi - lo) << dev->page_shift);
	if (changed && dev->backed)
		restore_moved(dev, x, done);
	if (pages)
		hbm_event(HBMGUARD_EVENT_RESTORED, dev->id, 0, 0,
			  HBMGUARD_SOURCE_RESTORED, 0, pages, done);
	device_health_event(dev, old_health);
	mutex_unlock(&dev->lock);
	return err;
}

/**
 * hbm_device_set_policy() - change some fields of a device's policy
 * @dev: the device
 * @p: new values; 0 in a field named by @fields is the device's default
 *	(the value it was registered with), so that a caller can undo what
 *	it set without knowing how the module sizes a device's policy
 * @fields: HBMGUARD_POLICY_* naming the fields of @p to take
 *
 * A policy that changes is one HBMGUARD_EVENT_POLICY; one set to what it
 * was, none.
 *
 * Return: 0, -EINVAL when the resulting policy is not valid (unchanged), or
 * -ENODEV (unregistered meanwhile).
 */
int hbm_device_set_policy(struct hbm_device *dev, const struct hbm_policy *p,
			  u32 fields)
{
	struct hbm_policy new;
	u32 old_health;
	int err;

	mutex_lock(&dev->lock);
	if (dev->dead) {
		mutex_unlock(&dev->lock);
		return -ENODEV;
	}
	new = dev->core.policy;
	if (fields & HBMGUARD_POLICY_CE_THRESHOLD)
		new.ce_threshold = p->ce_threshold ?: dev->core.defaults.ce_threshold;
	if (fields & HBMGUARD_POLICY_CE_WINDOW)
		new.ce_window = p->ce_window ?: dev->core.defaults.ce_window;
	if (fields & HBMGUARD_POLICY_RETIRE_LIMIT)
		new.retire_limit = p->retire_limit ?: dev->core.defaults.retire_limit;
	err = hbm_policy_check(&new, dev->core.table.nr_pages);
	/* The daemon gives every key at each start: what changes nothing says nothing. */
	if (!err && memcmp(&new, &dev->core.policy, sizeof(new))) {
		old_health = dev->core.health;
		hbm_core_set_policy(&dev->core, &new);
		hbm_event(HBMGUARD_EVENT_POLICY, dev->id, 0, 0, 0, 0, fields, 0);
		device_changed(dev, &(struct hbm_result){}, 0, 0, 0, old_health);
	}
	mutex_unlock(&dev->lock);
	return err;
}

/**
 * hbm_device_driver_health() - what a GPU's driver says of its health
 * @dev: a GPU device
 * @health: enum hbmguard_health, from the driver's facts (a row remap
 *	pending: RESET_REQUIRED; a remap or retirement failed: RMA)
 *
 * The device's health becomes the worse of this and its table's; a change
 * is a HEALTH event.
 *
 * Return: 0, -EOPNOTSUPP for a device that is not a GPU, -EINVAL for a
 * value that is not a health, -ENODEV (unregistered meanwhile).
 */
int hbm_device_driver_health(struct hbm_device *dev, u32 health)
{
	u32 old_health;
	int err = 0;

	if (dev->kind != HBMGUARD_KIND_GPU)
		return -EOPNOTSUPP;
	if (health > HBMGUARD_HEALTH_RESET_REQUIRED)
		return -EINVAL;
	mutex_lock(&dev->lock);
	if (dev->dead) {
		err = -ENODEV;
	} else {
		old_health = dev->core.health;
		dev->core.driver_health = health;
		dev->core.health = hbm_core_health(&dev->core);
		device_changed(dev, &(struct hbm_result){}, 0, 0, 0, old_health);
	}
	mutex_unlock(&dev->lock);
	return err;
}

/**
 * hbm_device_error() - a device-level error without an address (an Xid)
 * @dev: the device
 * @code: what the driver called it, an NVIDIA Xid: one that lost data has
 *	room in the queue that correctable errors cannot take
 * @path: enum hbmguard_path it came by
 *
 * Callable from any context but NMI: queued, as reports are (intake.c).
 */
void hbm_device_error(struct hbm_device *dev, u32 code, u32 path)
{
	hbm_report_async(dev, code, hbm_xid_loses_data(code) ? HBM_INTAKE_DATA_LOST :
			 HBM_INTAKE_DEVICE_ERROR, 1, path);
}

/* The DEVICE_ERROR event of a queued device error; process context. */
void hbm_device_error_event(struct hbm_device *dev, u32 code, u32 path)
{
	mutex_lock(&dev->lock);
	if (!dev->dead)
		hbm_event(HBMGUARD_EVENT_DEVICE_ERROR, dev->id, 0, 0, 0, code, 1,
			  path);
	mutex_unlock(&dev->lock);
}
