/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hbmguard.ko internals: devices (device.c), events (events.c), the
 * character device (chardev.c) and the module itself (main.c).
 */
#ifndef HBM_H
#define HBM_H

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/hbmguard.h>

#include "compat.h"
#include "core.h"

/**
 * struct hbm_device - one GPU's HBM address space
 * @ref: held by the registry while registered and by every user
 * @id: index in the registry, reused only after the device is gone
 * @kind: enum hbmguard_device_kind
 * @page_shift: log2 of the page size
 * @hbm_size: bytes, spare area included
 * @phys_start: for a range device, the physical address of offset 0
 * @numa_node: for a range device registered by node, the node; else -1
 * @lock: serialises every use of @core, @generation and @dead
 * @dead: unregistered: reports and changes are refused
 * @dying: on the registry's list of devices out of it whose id is not yet
 *	free (device.c), under its lock
 * @core: bad-page table, spare pool and policy
 * @generation: increases on every change of @core
 * @free_work: frees the device, so the last reference may go in any context
 * @map: the table as userspace maps it (map.c); NULL when maps were off
 * @backed: the device has memory, for the aperture (aperture.c)
 * @backing: CPU page index -> struct page, allocated on first touch
 * @lost: device pages whose data is lost until restored
 * @served: retired device page -> the spare that holds its data (xa_mk_value)
 * @errors_dropped: errors reported for the device that were never applied:
 *	no room in the intake (intake.c), or refused when applied
 */
struct hbm_device {
	struct kref ref;
	u32 id;
	u32 kind;
	char name[HBMGUARD_NAME_LEN];
	char identity[HBMGUARD_IDENTITY_LEN];
	char pci_addr[HBMGUARD_PCI_ADDR_LEN];	/* HBMGUARD_KIND_GPU; else "" */
	u32 page_shift;
	u64 hbm_size;
	u64 phys_start;
	int numa_node;
	struct module *owner;	/* HBMGUARD_KIND_PROVIDER: its driver, or NULL */

	struct mutex lock;
	struct hbm_core core;
	u64 generation;
	bool dead;
	struct list_head dying;
	struct work_struct free_work;
	struct hbm_map *map;
	bool backed;
	bool claimed;		/* the range's own pages back the aperture */
	struct xarray backing;
	struct xarray lost;
	struct xarray served;
	struct xarray dead_frames;	/* own frames an error of now took (aperture.c) */
	atomic64_t errors_dropped;
	/*
	 * Events that said a change lost pages' data where their source may
	 * not say it (HBMGUARD_PAGES_DATA_LOST: a spare that failed, an error
	 * at a FAILED page's frame, a move whose copy failed or left a frame
	 * an error took), and the last one's seqnum, under lock: the one sign
	 * of such a loss a listener that lost events can read.
	 */
	u64 data_lost;
	u64 data_lost_seqnum;
	u64 added_seqnum;	/* its DEVICE_ADDED's: which registration */
};

/* main.c: the module's workqueue; destroying it at unload drains it. */
extern struct workqueue_struct *hbm_wq;
/* main.c: the module's init is over; an open before it: -EAGAIN. */
bool hbm_module_live(void);
/* main.c: zeroed, counted as hbm_kalloc(), charged to the caller's memcg. */
void *hbm_kalloc_user(size_t size);

/* What hbm_device_create() is asked for; validated there. */
struct hbm_device_spec {
	u32 kind;
	u32 page_size;
	u64 hbm_size;
	u32 spare_pages;	/* 0: the default */
	const char *name;
	const char *identity;	/* NULL or "": derived from the name */
	const char *pci_addr;	/* HBMGUARD_KIND_GPU: required, as pci_name() */
	u64 phys_start;		/* HBMGUARD_KIND_RANGE */
	int numa_node;		/* HBMGUARD_KIND_RANGE, or -1 */
	bool backed;		/* memory for the aperture */
	bool claim;		/* HBMGUARD_KIND_RANGE: the range is the memory */
	struct module *owner;	/* HBMGUARD_KIND_PROVIDER: its driver, or NULL */
};

static inline u64 hbm_usable_size(const struct hbm_device *dev)
{
	return (u64)dev->core.table.nr_pages << dev->page_shift;
}

/* device.c */
struct hbm_device *hbm_device_create(const struct hbm_device_spec *spec);
int hbm_device_remove(struct hbm_device *dev);
int hbm_device_destroy(u32 id, u32 kind);
void hbm_devices_destroy_all(void);
void hbm_devices_orphaned(struct module *owner);
struct hbm_device *hbm_device_get(u32 id);
void hbm_device_put(struct hbm_device *dev);
u32 hbm_device_ids(u32 *ids, u32 max);
u32 hbm_device_count(void);
int hbm_device_report(struct hbm_device *dev, u64 offset, u32 kind, u32 count,
		      u32 path);
struct hbm_device *hbm_device_find_phys(u64 phys, u64 *offset);
struct hbm_device *hbm_device_find_pci(const char *pci_addr);
bool hbm_pci_addr_valid(const char *s);
int hbm_device_driver_health(struct hbm_device *dev, u32 health);
void hbm_device_error(struct hbm_device *dev, u32 code, u32 path);
void hbm_device_error_event(struct hbm_device *dev, u32 code, u32 path);
int hbm_device_apply(struct hbm_device *dev, enum hbm_op op, u64 offset,
		     u64 length, u8 source);

/* A RESTORE's extents: pages of the device, HBM_OP_RETIRE or HBM_OP_PENDING, their records. */
int hbm_device_restore(struct hbm_device *dev, const struct hbm_page_range *x, u32 n);
int hbm_device_set_policy(struct hbm_device *dev, const struct hbm_policy *p,
			  u32 fields);
u64 hbm_generation(void);

/* selftest.c, in a debug build (HBMGUARD_DEBUG=y) */
#ifdef HBMGUARD_DEBUG
int hbm_selftests(void);
void hbm_selftest_removing(struct hbm_device *dev);
bool hbm_nvidia_selftest(void);	/* nvidia.c */
int hbm_selftest_fail_load(unsigned int step);
void hbm_selftest_command(u8 cmd);
#else
static inline int hbm_selftests(void)
{
	return 0;
}

static inline int hbm_selftest_fail_load(unsigned int step)
{
	return 0;
}

static inline void hbm_selftest_removing(struct hbm_device *dev)
{
}

static inline void hbm_selftest_command(u8 cmd)
{
}
#endif

/* events.c */
struct file;
struct poll_table_struct;
struct hbm_reader;
u64 hbm_event(u32 type, u32 device, u64 offset, u64 length, u32 source,
	      u32 state, u32 count, u32 aux);
u64 hbm_event_seqnum(void);
void hbm_events_quiesce(void);
struct hbm_reader *hbm_reader_open(bool admin);
void hbm_reader_close(struct hbm_reader *r);
ssize_t hbm_reader_read(struct hbm_reader *r, char __user *buf, size_t len,
			bool nonblock);
__poll_t hbm_reader_poll(struct hbm_reader *r, struct file *file,
			 struct poll_table_struct *pt);
extern unsigned int hbm_event_ring;

/*
 * intake.c; a queued report of these kinds is a device error, its code in
 * offset: one that lost data (hbm_xid_loses_data()) is never crowded out
 * by correctable errors
 */
#define HBM_INTAKE_DEVICE_ERROR	0
#define HBM_INTAKE_DATA_LOST	__HBMGUARD_ERROR_MAX
int hbm_report_async(struct hbm_device *dev, u64 offset, u32 kind, u32 count,
		     u32 path);
void hbm_intake_flush(void);
int hbm_intake_init(void);
void hbm_intake_exit(void);
void hbm_path_count(u32 path, bool dropped);
void hbm_path_stats(u32 path, u64 *received, u64 *dropped);

/* netlink.c */
int hbm_netlink_init(void);
void hbm_netlink_exit(void);
void hbm_netlink_event(const struct hbmguard_event *ev);
u64 hbm_netlink_dropped(void);
int hbm_device_fill(struct sk_buff *skb, struct hbm_device *dev);

/* tracepoint.c */
struct module;
struct tracepoint;
struct tracepoint *hbm_kernel_tracepoint(const char *name);
struct tracepoint *hbm_module_tracepoint(struct module *mod, const char *name);

/* ras_memory_failure.c, ras_mce.c, ras_edac.c, nvidia.c: the kernel's paths */
int hbm_memory_failure_init(void);
long hbm_memory_failure_import(struct hbm_device *dev);
void hbm_memory_failure_exit(void);
int hbm_mce_init(void);
void hbm_mce_exit(void);
int hbm_edac_init(void);
void hbm_edac_exit(void);
extern bool hbm_edac_on;
extern char *hbm_xid_module;
int hbm_nvidia_init(void);
void hbm_nvidia_exit(void);
bool hbm_xid_loses_data(u32 xid);

/* provider.c: the drivers that go, their devices left registered */
int hbm_provider_init(void);
void hbm_provider_exit(void);

/* map.c */
struct vm_area_struct;
int hbm_map_create(struct hbm_device *dev);
void hbm_map_destroy(struct hbm_device *dev);
void hbm_map_changed(struct hbm_device *dev, u32 first, u32 nr);
void hbm_map_removed(struct hbm_device *dev);
int hbm_map_mmap(struct vm_area_struct *vma);

/* aperture.c */
int hbm_aperture_init(void);
void hbm_aperture_exit(void);
void hbm_aperture_open(struct file *file);
int hbm_aperture_mmap(struct vm_area_struct *vma);
u32 hbm_aperture_changed(struct hbm_device *dev, u64 offset, u64 length);
int hbm_aperture_restored(struct hbm_device *dev, u64 offset, u64 length);
void hbm_aperture_lose(struct hbm_device *dev, u32 page);
void hbm_aperture_mark_frame_dead(struct hbm_device *dev, u32 page);
bool hbm_aperture_frame_dead(struct hbm_device *dev, u32 page);
bool hbm_aperture_lost(struct hbm_device *dev, u32 page);
void hbm_aperture_removed(struct hbm_device *dev);
int hbm_aperture_claim(struct hbm_device *dev);
void hbm_aperture_free(struct hbm_device *dev);

/* chardev.c */
int hbm_chardev_init(void);
void hbm_chardev_exit(void);

#endif /* HBM_H */
