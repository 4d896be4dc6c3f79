/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hbmguardd's core: what every source gives and every sink takes.
 *
 *   sources (kernel.c; later nvml.c, kmsg.c, amdgpu.c)  ->  core  ->  sinks
 *   each: start, stop, its fd in sd-event                  (core.c)   each: one callback
 *
 * A source turns what it hears into facts, one struct hbm_fact each, and
 * hands each to the function given to it at start (struct hbm_source_link,
 * from core_link()): a source includes this header for the types, and
 * never calls a sink.  The core takes each fact once, in order, keeps the
 * device list and the counters, names the device where the source gave
 * only its id, and hands the fact to every sink, in the order they were
 * added, through the sink's one callback.  A sink must not block the loop
 * beyond its own requests, and must not call back up: what it needs it
 * asks the core (core_devices(), core_dump(), core_change(), ...), which
 * asks the source that numbers the devices through its struct
 * hbm_source_ops; those requests make no fact.  A fact given while the
 * sinks take another (none is, today) waits until they are done with it,
 * so that every sink takes the facts in one order; past HBM_QUEUED_FACTS
 * such facts it is dropped, and said.  core_devices() is a read: only the
 * source says that a device went away (DEVICE_GONE), itself or through
 * its link's .devices.  A fact the source names by id only is given the
 * device as its DEVICE_SEEN described it (kind, PCI address, sizes).  Allocation follows the work,
 * not the facts: a table read or a save allocates its table, a fact
 * nothing.
 *
 * A fact counts as an event (STATUS=, hbmctl status) when .event is set
 * and it was heard (no HBM_FACT_UNHEARD); a RESYNC counts as a resync.
 * What a table read holds comes as PAGES facts marked HBM_FACT_UNHEARD,
 * between the device's DEVICE_SEEN and its TABLE_READ, .sync saying why it
 * was read: the store takes them all (the one dump it saves from), sinks
 * that act on lost data (recovery.c) take what is news to them, sinks that
 * record what was heard (journal.c) none.
 *
 * The sinks keep what they know of a device by the module's id, the
 * number of its table: a fact with dev.id HBM_NO_DEVICE_ID is about a
 * device the module does not number (yet), a GPU its finder has still to
 * register; the table, the state files and the incidents are the
 * module's devices'.
 *
 * The fact is one fixed-size struct, filled by value, no pointer into the
 * source's buffers: a sink may copy it whole.  It carries more than the
 * kernel link fills today, for the sources to come (issue 13):
 *
 *   DEVICE_SEEN   .dev (kind, identity: a range name or a GPU UUID; name,
 *                 PCI address, page size, size), .sync: why it is (re)read;
 *                 its table's PAGES follow, then TABLE_READ
 *   TABLE_READ    .dev's table was read whole: the unheard PAGES since its
 *                 DEVICE_SEEN are all of it; HBM_FACT_INCOMPLETE and
 *                 .error when the read failed (they are not); .seqnum: the
 *                 source's last event when the read began (0 unknown):
 *                 the changes of those up to it are in the table
 *   DEVICE_GONE   .dev: the source no longer has it (the module reloaded:
 *                 every device it had)
 *   PAGES         pages changed state: .event RETIRED, PENDING, FAILED or
 *                 CLEARED; .offset, .length, .state, .source (UE, CE
 *                 threshold, poison, admin, restored), .count; read from a
 *                 table, also .first_seen and .last_seen; heard,
 *                 HBM_FACT_DATA_LOST when the change itself lost their data
 *   ERROR         an error was reported: .severity (CE/UE), .xid (NVIDIA
 *                 Xid; 0 none), .path (how it was heard), .text; .offset
 *                 and .length where the error has an address
 *   HEALTH        .state: the new health, .aux: the old one; a GPU
 *                 source's at reconciliation also .driver: its counts
 *   RESYNC        events of this source were lost; what it says next was
 *                 read back from its tables, not heard
 *   EVENT         any other event of the module, passed on as is (policy
 *                 changed, device removed, overflow, dropped)
 *
 * .event is always the module's vocabulary (HBMGUARD_EVENT_* of
 * uapi/linux/hbmguard.h), whatever the source: a sink that words entries
 * (journal.c) words every source's facts alike.  A source with no such
 * event for a fact leaves it 0.
 *
 * Not kmod/core.h (the module's table): daemon files include this one by
 * their own directory.  Its members are settled; new ones may be added at
 * the end of a struct.
 */
#ifndef HBMGUARDD_CORE_H
#define HBMGUARDD_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/hbmguard.h>

#include "ctl.h"
#include "losses.h"
#include "state.h"

enum hbm_fact_type {
	HBM_FACT_DEVICE_SEEN = 1,
	HBM_FACT_DEVICE_GONE,
	HBM_FACT_PAGES,
	HBM_FACT_ERROR,
	HBM_FACT_HEALTH,
	HBM_FACT_RESYNC,
	HBM_FACT_EVENT,
	HBM_FACT_TABLE_READ,
	/*
	 * Events that said the data of pages out of service before was lost
	 * (.count of them) were lost themselves: where, no table can tell.
	 */
	HBM_FACT_LOST_UNHEARD,
};

/* Who heard it. */
enum hbm_fact_origin {
	HBM_FROM_KERNEL = 1,	/* hbmguard.ko, over netlink (kernel.c) */
	HBM_FROM_NVML,		/* libnvidia-ml */
	HBM_FROM_KMSG,		/* the kernel log: "NVRM: Xid" lines */
	HBM_FROM_AMDGPU,	/* amdgpu's sysfs */
};

enum hbm_device_kind {
	HBM_DEVICE_RANGE = 1,	/* a range of HBM registered with the module */
	HBM_DEVICE_NVIDIA,	/* an NVIDIA GPU */
	HBM_DEVICE_AMDGPU,	/* an AMD GPU */
	HBM_DEVICE_GPU,		/* a GPU the module numbers (HBMGUARD_KIND_GPU),
				 * its vendor known to the source that found it */
};

/* DEVICE_SEEN: why the device is read. */
enum hbm_sync {
	HBM_SYNC_START = 1,	/* the daemon starts: lost data there is old news */
	HBM_SYNC_ADDED,		/* a new table: lost data there is news */
	HBM_SYNC_RESYNC,	/* events were lost: lost data there was unheard */
};

enum hbm_severity {
	HBM_SEVERITY_CE = 1,	/* corrected */
	HBM_SEVERITY_UE,	/* uncorrected: data lost */
};

/* .flags */
#define HBM_FACT_UNHEARD	0x1	/* read from a table, not heard as an event */
#define HBM_FACT_INCOMPLETE	0x2	/* TABLE_READ: the read failed part way */
#define HBM_FACT_PARTIAL	0x4	/* HEALTH: some of the driver's facts could not be
					 * read: it tells worse, never better */
#define HBM_FACT_KNOWN		0x8	/* PAGES read from a table: restored into it from
					 * the state file just before, in .restored
					 * (known bad from before, whatever their
					 * source); an extent partly restored, or in
					 * more states than one, comes as a PAGES per
					 * part (hbm_state_cover()) */
#define HBM_FACT_DATA_LOST	0x10	/* PAGES heard: their data lost by this change,
					 * whatever .source and whether they were bad
					 * before (a spare that served them failed) */

#define HBM_NO_DEVICE_ID	UINT32_MAX	/* a device the module does not number */

struct hbm_fact_device {
	uint32_t id;			/* the module's device id, or HBM_NO_DEVICE_ID */
	uint32_t kind;			/* enum hbm_device_kind */
	char identity[HBMGUARD_IDENTITY_LEN];	/* the stable key: range name, GPU UUID */
	char name[32];			/* for people: "GPU 0 H100"; "" none */
	char pci[HBMGUARD_PCI_ADDR_LEN];	/* "0000:3b:00.0", lower case; "" none */
	uint32_t page_size;		/* bytes; 0 unknown */
	uint64_t size;			/* bytes of memory; 0 unknown */
};

/*
 * What a GPU's driver itself counts, as its source read it with the GPU's
 * other facts (its HEALTH at reconciliation): for hbmctl gpus, beside what
 * hbmguard made of it.  .have says which were read; the rest is 0.
 */
#define HBM_DRIVER_REMAP	0x1	/* NVML's remapped rows (nvmlDeviceGetRemappedRows) */
#define HBM_DRIVER_ECC		0x2	/* error counts: NVML's aggregate ECC counters
					 * (nvmlDeviceGetTotalEccErrors); amdgpu's
					 * ras/<block>_err_count, every block, de: as ue */

struct hbm_fact_driver {
	uint32_t have;			/* HBM_DRIVER_* */
	uint32_t remap_corrected;	/* rows remapped for corrected errors */
	uint32_t remap_uncorrected;	/* ... for uncorrected ones */
	uint32_t remap_pending;		/* 1: a GPU reset completes a remap */
	uint32_t remap_failure;		/* 1: a remap failed */
	uint32_t reserved;
	uint64_t ue;			/* uncorrected errors */
	uint64_t ce;			/* corrected errors */
};

struct hbm_fact {
	uint32_t type;			/* enum hbm_fact_type */
	uint32_t origin;		/* enum hbm_fact_origin */
	uint32_t flags;			/* HBM_FACT_* */
	uint32_t event;			/* HBMGUARD_EVENT_*, 0 none */
	uint64_t seqnum;		/* the source's own numbering, 0 none */
	uint64_t time;			/* when it happened, CLOCK_REALTIME ns; 0 unknown */
	struct hbm_fact_device dev;
	uint32_t sync;			/* DEVICE_SEEN: enum hbm_sync */
	uint64_t offset;		/* bytes into the device */
	uint64_t length;		/* bytes; 0: no address */
	uint32_t state;			/* HBMGUARD_STATE_*; HEALTH: the new health */
	uint32_t source;		/* HBMGUARD_SOURCE_* */
	uint32_t count;
	uint32_t aux;			/* HEALTH: the old health; else the module's aux */
	uint32_t severity;		/* ERROR: enum hbm_severity */
	uint32_t xid;			/* ERROR: an NVIDIA Xid, 0 none */
	char path[32];			/* ERROR: how heard: "tracepoint", "nvml"... */
	char text[128];			/* ERROR: the driver's own words */
	uint64_t first_seen;		/* PAGES read from a table: seconds since */
	uint64_t last_seen;		/* the epoch, as the table has them */
	int32_t error;			/* TABLE_READ: the read's negative errno, 0 */
	struct hbm_fact_driver driver;	/* HEALTH of a GPU's source, at its reconciliation */
	uint32_t restored;		/* PAGES, HBM_FACT_KNOWN: the state they were
					 * restored in (HBMGUARD_STATE_*): .state
					 * where the table has them as the file did */
};

/*
 * The state a module's page event left its pages in (its STATE attribute is
 * 0: HBMGUARD_EVENT_RETIRED and the like name it); 0 for CLEARED and others.
 */
static inline uint32_t hbm_event_page_state(uint32_t event)
{
	return event == HBMGUARD_EVENT_RETIRED ? HBMGUARD_STATE_RETIRED :
	       event == HBMGUARD_EVENT_PENDING ? HBMGUARD_STATE_PENDING :
	       event == HBMGUARD_EVENT_FAILED ? HBMGUARD_STATE_FAILED : 0;
}

/* A sink: one callback, called for every fact, in order. */
struct hbm_sink {
	const char *name;
	void (*fact)(void *ctx, const struct hbm_fact *f);
	void *ctx;
};

/* A device as the core lists it (by its source's id). */
struct device {
	uint32_t id;
	char identity[HBMGUARD_IDENTITY_LEN];
	uint32_t page_size;
	uint32_t kind;			/* the module's HBMGUARD_KIND_* */
	char pci[HBMGUARD_PCI_ADDR_LEN];	/* HBMGUARD_KIND_GPU: as pci_name(); else "" */
	uint64_t size;			/* bytes of HBM */
	bool counts_losses;		/* the module sends its count: */
	struct hbm_loss_count losses;
};

struct device_list {
	struct device dev[HBMGUARD_MAX_DEVICES];
	size_t nr;
};

/*
 * What the source that numbers the devices counts, as it says at the time
 * of asking: a device's table and errors (the module's struct
 * hbmguard_device_info, less the policy), and its intake paths'.  .have
 * says which parts were read; the rest is 0.
 */
struct hbm_device_counts {
	uint32_t id;
	uint32_t kind;			/* the module's HBMGUARD_KIND_* */
	char name[HBMGUARD_NAME_LEN];
	char identity[HBMGUARD_IDENTITY_LEN];
	char pci[HBMGUARD_PCI_ADDR_LEN];	/* "" none */
	uint32_t health;		/* HBMGUARD_HEALTH_* */
	uint32_t spare_total, spare_used, spare_bad;
	uint32_t nr_retired, nr_pending, nr_failed;
	uint64_t ce_events, ue_events, errors_dropped, ce_forgotten;
};

#define HBM_COUNTS_PATHS	0x1	/* .received, .dropped, .events_dropped */

struct hbm_counts {
	uint32_t have;			/* HBM_COUNTS_* */
	size_t nr;
	struct hbm_device_counts dev[HBMGUARD_MAX_DEVICES];
	uint64_t received[__HBMGUARD_PATH_MAX];	/* errors, by enum hbmguard_path */
	uint64_t dropped[__HBMGUARD_PATH_MAX];
	uint64_t events_dropped;	/* events the module could not send */
};

/* A device's table, as its source dumps it: sorted by offset. */
struct hbm_extents {
	struct hbm_state_record *r;
	size_t nr, cap;
	bool failed;			/* a record did not fit: out of memory */
	uint64_t seqnum;		/* the source's last event when the dump began:
					 * the changes of those up to it are in it; 0 unknown */
};

bool hbm_extents_push(struct hbm_extents *x, const struct hbm_state_record *r);

/*
 * What the core may ask of a source about its devices; NULL where it
 * cannot.  Called from the loop, synchronously: each must be short.
 */
struct hbm_source_ops {
	uint32_t origin;		/* enum hbm_fact_origin */
	int (*list)(void *ctx, struct device_list *l);
	int (*dump)(void *ctx, const struct device *dev, struct hbm_extents *x);
	/*
	 * its stored pages, back in, and its configured policy; @stored is
	 * the caller's until the TABLE_READ of the read that follows where
	 * this is the restore of the device's DEVICE_SEEN (its PAGES of those
	 * pages are HBM_FACT_KNOWN), and only for the call otherwise
	 */
	void (*restore)(void *ctx, const struct device *dev, const struct hbm_state *stored);
	/* HBM_CTL_RETIRE or HBM_CTL_CLEAR of @x, on @dev */
	int (*change)(void *ctx, const struct device *dev, uint16_t type,
		      const struct hbm_ctl_extent *x);
	/*
	 * A GPU its driver bypasses (a DEVICE_SEEN's .dev: name, identity,
	 * pci, size, page_size), registered with the source that numbers
	 * devices; -EEXIST when it is already (a restart).  Its device comes
	 * back as that source's DEVICE_SEEN.
	 */
	int (*gpu_register)(void *ctx, const struct hbm_fact_device *gpu);
	/* the health a GPU's driver gives it (HBMGUARD_HEALTH_*) */
	int (*gpu_health)(void *ctx, const struct device *dev, uint32_t health);
	/* every device's counts and the source's own, for the metrics (metrics.c) */
	int (*counts)(void *ctx, struct hbm_counts *out);
};

/*
 * What a source is given at start, its only way to the core: a fact in,
 * and the device list (read from the source that numbers the devices,
 * through its .list; the devices gone since the source's last read leave,
 * as DEVICE_GONE facts to the sinks).
 */
struct hbm_source_link {
	void (*fact)(void *core, const struct hbm_fact *f);
	int (*devices)(void *core, struct device_list *l);
	void *core;
};

#define HBM_MAX_SINKS	8
#define HBM_QUEUED_FACTS	8

/*
 * One Xid heard twice is one event.  The NVIDIA driver reports each Xid
 * both ways from one call, nvErrorLog2() in src/nvidia/src/kernel/os/
 * os_init.c of open-gpu-kernel-modules (570 .. 595.45.04): krcReportXid()
 * prints the "NVRM: Xid" line (kernel_rc.c), then osErrorLogV() ->
 * nv_log_error() -> nv_report_error() fires nvidia:nvidia_dev_xid
 * (kernel-open/nvidia/nv-report-err.c), which hbmguard.ko turns into a
 * DEVICE_ERROR event.  The core takes an ERROR fact with an Xid as a new
 * event unless a source of another origin gave the same Xid on the same
 * device (identity) less than HBM_XID_WINDOW_NS before, and that one was not
 * matched by this origin yet: each event heard absorbs at most one report
 * per other source, so two Xids both sources heard stay two, in any order.
 * The window is wide enough for the slower path under load (the module's
 * workqueue and netlink, the daemon's loop reading /dev/kmsg), milliseconds
 * when idle.  Its price: when each source misses a different one of two
 * identical Xids within it (a /dev/kmsg overwrite, the module's ring full),
 * they count once.  HBM_XID_HEARD Xids are remembered; past that the
 * oldest of the GPU holding the most is forgotten, so that a storm on one GPU
 * cannot push out the Xid of another, whose twin would then count again (a
 * second UE: its ranks abort instead of recovering).
 */
#define HBM_XID_WINDOW_NS	(10 * 1000000000ULL)
#define HBM_XID_HEARD		64

struct hbm_xid_heard {
	char identity[HBMGUARD_IDENTITY_LEN];
	uint32_t xid;
	uint32_t origins;		/* 1 << enum hbm_fact_origin, each that gave it */
	uint64_t at;			/* CLOCK_MONOTONIC ns of the first; 0: free */
};

struct hbmd_core {
	const struct hbm_source_ops *ops;	/* the source that numbers devices */
	void *ops_ctx;
	struct hbm_sink sinks[HBM_MAX_SINKS];
	size_t nr_sinks;
	char identity[HBMGUARD_MAX_DEVICES][HBMGUARD_IDENTITY_LEN];	/* by id */
	uint64_t events_seen;
	uint64_t resyncs;
	bool in_fact;			/* handing a fact to the sinks */
	struct hbm_fact queued[HBM_QUEUED_FACTS];	/* given meanwhile: next, in order */
	size_t nr_queued;
	struct hbm_fact_device seen[HBMGUARD_MAX_DEVICES];	/* by id, as last seen */
	struct hbm_xid_heard xids[HBM_XID_HEARD];	/* one Xid heard twice */
	uint64_t (*now)(void);		/* CLOCK_MONOTONIC ns; a test's own clock */
};

void core_init(struct hbmd_core *c, const struct hbm_source_ops *ops, void *ctx);
int core_add_sink(struct hbmd_core *c, const struct hbm_sink *s);
struct hbm_source_link core_link(struct hbmd_core *c);

int core_devices(struct hbmd_core *c, struct device_list *l);
const struct device *core_find(const struct device_list *l, const char *identity);
int core_device(struct hbmd_core *c, const char *identity, struct device *out);
const char *core_identity(const struct hbmd_core *c, uint32_t id);
size_t core_count_devices(const struct hbmd_core *c);
int core_dump(struct hbmd_core *c, const struct device *dev, struct hbm_extents *x);
void core_restore(struct hbmd_core *c, const struct device *dev, const struct hbm_state *stored);
int core_change(struct hbmd_core *c, const struct device *dev, uint16_t type,
		const struct hbm_ctl_extent *x);
int core_bypassed(struct hbmd_core *c, const char *identity, uint64_t offset,
		  uint64_t length);
int core_gpu_register(struct hbmd_core *c, const struct hbm_fact_device *gpu);
int core_gpu_health(struct hbmd_core *c, const struct device *dev, uint32_t health);
int core_counts(struct hbmd_core *c, struct hbm_counts *out);
uint64_t hbm_monotonic_ns(void);
uint64_t hbm_realtime_ns(void);

#endif /* HBMGUARDD_CORE_H */
