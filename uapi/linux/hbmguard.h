/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * hbmguard: a per-GPU blacklist of bad HBM pages, each bypassed to a spare.
 *
 * DEVICES
 * -------
 * A device is one GPU's HBM address space, numbered by a small id that is
 * stable while the module is loaded.  Its `identity` (a UUID or a PCI
 * address) is stable across reboots and is what persistent state is keyed
 * by.  The address space [0, hbm_size) ends with the spare area: the last
 * spare_total pages.  Users address [0, usable_size); a retired page at
 * offset O is served by the spare page at spare_offset, so
 *
 *	translate(O) = spare_offset + (O & (page_size - 1))
 *
 * All offsets and lengths in this interface are bytes.  Offsets that name
 * pages (retire, clear, list) must be page aligned.
 *
 * PAGE STATES
 * -----------
 * PENDING	reported, not yet bypassed (retired with HBMGUARD_RETIRE_PENDING)
 * RETIRED	bypassed: spare_offset serves it
 * FAILED	could not be bypassed: the spare pool was exhausted
 *
 * A spare fails like any HBM (an error at its offset): a free one leaves
 * the pool; the page one serves moves to another spare (RETIRED again) or,
 * with none left, to FAILED (its own frame).  An uncorrectable error or
 * poison takes the page's data with the spare.  After correctable errors
 * the data is still readable there: a device with memory (the aperture)
 * copies it to the page's next spare, or home to its own frame when none
 * is left, and loses it only if that copy fails (a poisoned frame, a
 * machine check, no memory) or that frame is one an uncorrectable error
 * took (see below); a device without has nobody in the kernel to move it:
 * its data goes with the spare.  Where the data is lost, the
 * page's event carries HBMGUARD_PAGES_DATA_LOST in aux, though the page
 * was out of service before and its source may say nothing destroyed data
 * (a page retired for correctable errors).
 *
 * A PENDING page is still in service, its data on it, and so is a page
 * FAILED when retired (no spare free), as a page whose soft offline fails
 * stays in service: its own frame holds its data (and serves it, on a
 * device with memory) until a later retire gives it a spare a clear has
 * freed.  An uncorrectable error or poison there destroys the data: it
 * retires the page (or leaves it failed) with that error as its source,
 * whoever reported it first (an operator, the GPU's driver), and on a
 * device with memory that frame serves the page nobody until a CLEAR (see
 * THE APERTURE).  A page FAILED with its data whole says so with
 * HBMGUARD_PAGES_DATA_LOST: on a FAILED event of its own (its state did
 * not change: the one FAILED event of a page failed before), or on its
 * RETIRED event where a spare a clear freed takes it.  A RESTORE of such
 * a record over such a page takes its source likewise (the event is
 * RESTORED, and no frame is taken).  On a device with memory, a change
 * that moves a page's data and cannot (an operator's retire or clear, a
 * retirement for correctable errors, a restore: the copy failed, or the
 * page leaves a frame an uncorrectable error took for a spare, where it is
 * lost until restored) says so likewise, on the events of the pages it
 * moves (RETIRED, CLEARED; a page it failed keeps its frame), which name
 * the change's whole range, as always; a restore on RETIRED events before
 * its RESTORED one, one for each run of extents that lost any, adjacent in
 * the request's order and of one source, naming those extents whole,
 * COUNT the pages lost.
 *
 * An uncorrectable error or poison retires its page at once.  Correctable
 * errors fill a per-page leaky bucket; the page is retired when the bucket
 * holds ce_threshold errors.  The bucket drains one whole error every
 * ce_window / ce_threshold seconds, so a burst of ce_threshold errors
 * retires the page and a trickle slower than that rate never does.  Device health is OK, then
 * DEGRADED once bad pages (any state) reach 90% of retire_limit, then RMA
 * once they reach retire_limit.
 *
 * PRIVILEGES
 * ----------
 * One model for both interfaces.  "Admin" is CAP_SYS_ADMIN in the initial
 * user namespace (a container's root is not an admin):
 *
 *	what				needs
 *	/dev/hbmguard: open, GET_*,	the node's mode (0640: owner and group)
 *	  LIST_*, TRANSLATE, read(),
 *	  poll(), mmap of the table
 *	mmap of the aperture (read	a file open for writing (EACCES)
 *	  or write), RESTORED		  (RESTORED: EBADF)
 *	every other ioctl (changes)	admin, of the caller and of the
 *					  file's opener (EPERM)
 *	every netlink command, reads	admin, of the socket's opener and of the
 *	  included			sender (EPERM)
 *	joining the "events" group	admin (EPERM)
 *
 * Two nodes with the same operations give the reads and the aperture to two
 * groups: /dev/hbmguard (HBMGUARD_DEVICE_NAME, 0640) to the readers
 * (monitoring, allocators), /dev/hbmguard-aperture
 * (HBMGUARD_APERTURE_DEVICE_NAME, 0600 from the kernel; 0660 and its own
 * group from udev) to the training processes, who open it for writing to
 * map their device's memory and declare lost pages restored.  The memory is
 * the jobs' data: a reader sees where memory is bad, never what it holds.
 * The aperture has no owner per job: whoever may open the second node for
 * writing may read and write every memory-backed device's memory and
 * restore any device's lost pages (which then read zero, where they raised
 * SIGBUS).  Both nodes belong to uid 0: root without CAP_SYS_ADMIN opens
 * both for writing, and is refused every change.  Admin is checked at the
 * call, and of who opened the file; the rest is what the file was opened
 * for, and travels with it.
 * (Before the second node, a read-only file could map the aperture
 * read-only; it now gets EACCES.)
 *
 * Netlink reads need admin too: a socket has no file mode to give them to a
 * group, and they carry physical addresses (PHYS_ADDR); /dev/hbmguard is the
 * group's read interface.  CAP_NET_ADMIN, common in containers with the
 * host's network, grants no command and no membership here (in the initial
 * user namespace it opens the kernel's netlink taps, nlmon, which show all
 * netlink traffic: the README's Privileges).  An event is sent only to
 * sockets opened by an admin where the kernel lets the module choose
 * (6.12): a socket may join a group before any family owns it, and stays a
 * member (on 6.1 such a socket hears the events).
 *
 * Opens of either node by one non-admin user hold at most
 * HBMGUARD_MAX_OPENS event rings; one more is ENFILE, for that user only.
 * A user is an euid; in a user namespace, the user who made the outermost
 * one (every uid it maps counts as that user), or, one root made (a
 * container runtime's), the user its uid 0 maps to (root where that is
 * root or none).  A ring (event_ring records) is
 * charged to the opener's memory cgroup (ENOMEM at its limit).  An admin's
 * open is not counted.
 *
 * /dev/hbmguard
 * -------------
 * The node is 0640: its group may read (GET_*, LIST_*, TRANSLATE, read(),
 * poll()); every ioctl that changes the table or the devices needs
 * CAP_SYS_ADMIN (EPERM), and RESTORED a file open for writing (EBADF).
 * /dev/hbmguard-aperture is the same interface for the aperture's writers.
 *
 * Every ioctl argument starts with `__u32 size; __u32 flags;`.  `size` is
 * sizeof() the struct as the caller knows it; the kernel accepts any size
 * from the first published version (HBMGUARD_*_SIZE_VER0) up to a page.  A
 * larger struct from a newer caller is accepted if the bytes the kernel does
 * not know are zero (else E2BIG); outputs are written up to `size` bytes.
 * Unknown flag bits and non-zero reserved fields are EINVAL.  A call that
 * fails changes nothing.
 *
 * Errors: EINVAL (malformed request), EFAULT (bad user address), ENOTTY
 * (unknown ioctl), EPERM (needs CAP_SYS_ADMIN), EBADF (needs a file open
 * for writing), ENFILE (open: HBMGUARD_MAX_OPENS reached), EAGAIN (open:
 * the module is still loading), ENODEV (no such device),
 * ERANGE (offset outside the device), ENOSPC (no room for another device),
 * EEXIST (identity already registered), EOPNOTSUPP (not a simulated
 * device), ENOMEM.
 *
 * read() returns whole struct hbmguard_event records, oldest first, from a
 * ring private to the open file.  When the ring is full new events are
 * dropped and counted; the reader then gets an HBMGUARD_EVENT_OVERFLOW
 * record carrying that count and the seqnum of the last event lost, at the
 * place the loss happened (before any newer event), and sees the gap in
 * `seqnum`, which increases by one for every event the module makes.
 * poll() reports EPOLLIN while records are waiting; every table change makes
 * a record.  A buffer smaller than one record is EINVAL; an empty ring is
 * EAGAIN with O_NONBLOCK and blocks otherwise.
 */
#ifndef _UAPI_LINUX_HBMGUARD_H
#define _UAPI_LINUX_HBMGUARD_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define HBMGUARD_API_VERSION	1
#define HBMGUARD_DEVICE_NAME	"hbmguard"
/* The same operations, for the aperture's writers (PRIVILEGES). */
#define HBMGUARD_APERTURE_DEVICE_NAME	"hbmguard-aperture"

#define HBMGUARD_NAME_LEN	32
#define HBMGUARD_IDENTITY_LEN	64
/* A PCI address as the kernel names the device: "0000:3b:00.0" (pci_name()) */
#define HBMGUARD_PCI_ADDR_LEN	20
#define HBMGUARD_MAX_DEVICES	256

#define HBMGUARD_PAGE_SIZE_MIN	4096
#define HBMGUARD_PAGE_SIZE_MAX	(2 * 1024 * 1024)

/*
 * Spare pages of one device at most (SIM_CREATE, RANGE_REGISTER; more is
 * EINVAL): the mapped table's address space holds one entry per spare, in
 * two copies (map.c), backed by memory only as the table grows.  A default
 * spare pool is clamped to it.
 */
#define HBMGUARD_SPARE_PAGES_MAX	(1U << 20)
/* Open files of /dev/hbmguard of one non-admin user at once (ENFILE beyond). */
#define HBMGUARD_MAX_OPENS		1024

enum hbmguard_page_state {
	HBMGUARD_STATE_CLEAN = 0,	/* not in the table (TRANSLATE only) */
	HBMGUARD_STATE_PENDING,
	HBMGUARD_STATE_RETIRED,
	HBMGUARD_STATE_FAILED,
	__HBMGUARD_STATE_MAX
};

/* Why a page is in the table. */
enum hbmguard_source {
	HBMGUARD_SOURCE_NONE = 0,
	HBMGUARD_SOURCE_UE,		/* uncorrectable ECC error */
	HBMGUARD_SOURCE_CE_THRESHOLD,	/* correctable errors crossed the threshold */
	HBMGUARD_SOURCE_POISON,		/* memory_failure() / poison consumption */
	HBMGUARD_SOURCE_ADMIN,		/* retired by an operator */
	HBMGUARD_SOURCE_RESTORED,	/* reloaded from persistent state */
	HBMGUARD_SOURCE_DRIVER,		/* retired by a GPU's own driver (KIND_GPU) */
	__HBMGUARD_SOURCE_MAX
};

/* Kinds of error that INJECT (and, later, the kernel's RAS paths) report. */
enum hbmguard_error_kind {
	HBMGUARD_ERROR_CE = 1,
	HBMGUARD_ERROR_UE,
	HBMGUARD_ERROR_POISON,
	__HBMGUARD_ERROR_MAX
};

enum hbmguard_health {
	HBMGUARD_HEALTH_OK = 0,
	HBMGUARD_HEALTH_DEGRADED,	/* bad pages >= 90% of retire_limit */
	HBMGUARD_HEALTH_RMA,		/* bad pages >= retire_limit */
	HBMGUARD_HEALTH_RESET_REQUIRED,	/* its driver needs a GPU reset */
};
/*
 * Health by severity, worst last: OK, DEGRADED, RESET_REQUIRED (a retirement
 * or row remap waits for a GPU reset), RMA.  A GPU device (HBMGUARD_KIND_GPU)
 * has the worse of its table's health and the one its driver's facts give
 * (HBMGUARD_CMD_GPU_HEALTH_SET).
 */

enum hbmguard_device_kind {
	HBMGUARD_KIND_SIMULATED = 1,
	HBMGUARD_KIND_PROVIDER,		/* registered by a GPU driver */
	HBMGUARD_KIND_RANGE,		/* a physical range: HBM as system memory */
	HBMGUARD_KIND_GPU,		/* a GPU bypassed by its driver */
};

/* The path an error came in by (the aux field of an ERROR event). */
enum hbmguard_path {
	HBMGUARD_PATH_INJECT = 0,	/* HBMGUARD_IOC_INJECT */
	HBMGUARD_PATH_PROVIDER,		/* hbmguard_report_error() from a driver */
	HBMGUARD_PATH_MEMORY_FAILURE,	/* ras:memory_failure_event */
	HBMGUARD_PATH_MCE,		/* x86 machine check decode chain */
	HBMGUARD_PATH_EDAC,		/* ras:mc_event */
	HBMGUARD_PATH_NVIDIA_XID,	/* nvidia:nvidia_dev_xid tracepoint */
	HBMGUARD_PATH_NETLINK,		/* HBMGUARD_CMD_RETIRE from userspace */
	__HBMGUARD_PATH_MAX
};

/**
 * struct hbmguard_info - HBMGUARD_IOC_GET_INFO: the module as a whole
 * @size: sizeof(struct hbmguard_info) as the caller knows it
 * @flags: must be zero
 * @version: HBMGUARD_API_VERSION
 * @nr_devices: devices registered now
 * @generation: increases on every change of any device's table
 * @seqnum: sequence number of the last event made (0: none yet)
 * @max_devices: HBMGUARD_MAX_DEVICES
 * @event_size: sizeof(struct hbmguard_event)
 * @event_ring: records the ring of each open file holds
 * @features: HBMGUARD_FEATURE_* this module has (0 from a module older
 *	than the field, whose reserved word it was)
 * @reserved: zero
 */
struct hbmguard_info {
	__u32 size;
	__u32 flags;
	__u32 version;
	__u32 nr_devices;
	__u64 generation;
	__u64 seqnum;
	__u32 max_devices;
	__u32 event_size;
	__u32 event_ring;
	__u32 features;
	__u32 reserved[4];
};
/* /dev/hbmguard-aperture exists, for the aperture's writers */
#define HBMGUARD_FEATURE_APERTURE_NODE		(1U << 0)
/* an aperture maps only from a file open for writing (EACCES otherwise) */
#define HBMGUARD_FEATURE_APERTURE_NEEDS_WRITE	(1U << 1)
#define HBMGUARD_INFO_SIZE_VER0 64

/**
 * struct hbmguard_device_list - HBMGUARD_IOC_LIST_DEVICES
 * @size: sizeof(struct hbmguard_device_list)
 * @flags: must be zero
 * @capacity: in: number of __u32 slots at @ids
 * @count: out: number of devices; min(@count, @capacity) ids were written
 * @ids: user address of a __u32 array, ascending device ids are written there
 */
struct hbmguard_device_list {
	__u32 size;
	__u32 flags;
	__u32 capacity;
	__u32 count;
	__u64 ids;
};
#define HBMGUARD_DEVICE_LIST_SIZE_VER0 24

/**
 * struct hbmguard_policy_params - per-device policy
 * @ce_threshold: correctable errors on one page that retire it (1..65535)
 * @ce_window: seconds in which the leaky bucket drains @ce_threshold errors
 *	(1..31536000)
 * @retire_limit: bad pages at which the device is RMA (1..number of pages)
 * @reserved: zero
 */
struct hbmguard_policy_params {
	__u32 ce_threshold;
	__u32 ce_window;
	__u32 retire_limit;
	__u32 reserved;
};

/**
 * struct hbmguard_device_info - HBMGUARD_IOC_GET_DEVICE
 * @size: sizeof(struct hbmguard_device_info)
 * @flags: must be zero
 * @device: in: device id
 * @health: enum hbmguard_health
 * @name: NUL-terminated short name ("sim0", "gpu3")
 * @identity: NUL-terminated stable identity (UUID, PCI address)
 * @hbm_size: bytes of HBM including the spare area
 * @usable_size: bytes users may address: [0, usable_size)
 * @page_size: retirement granule, a power of two from 4 KiB to 2 MiB
 * @kind: enum hbmguard_device_kind
 * @spare_total: pages in the spare pool
 * @spare_used: spare pages serving retired pages
 * @nr_retired: pages in state RETIRED
 * @nr_pending: pages in state PENDING
 * @nr_failed: pages in state FAILED
 * @nr_extents: extents the table holds (runs of pages sharing state and
 *	consecutive spares)
 * @generation: increases on every change of this device's table
 * @ce_events: correctable errors reported
 * @ue_events: uncorrectable errors and poison reported
 * @policy: the policy in force
 * @table_bytes: kernel memory the bad-page table takes
 * @spare_bad: spare pages that failed (an uncorrectable error or poison, or
 *	correctable errors at the threshold): out of the pool for good.  Spares
 *	left: spare_total - spare_used - spare_bad.  Errors in the spare area
 *	count in @ce_events and @ue_events.
 * @reserved0: zero
 * @errors_dropped: errors reported for the device that were never applied
 *	(not in @ce_events or @ue_events; a device error, such as an NVIDIA
 *	Xid, dropped counts here too): the module's intake queue had no
 *	room (correctable errors coalesce per page, up to 10^5 pages pending
 *	in the whole module; uncorrectable ones have slots of their own), or
 *	applying them failed (ENOMEM).  Non-zero means the counts are low.
 *	Written by kernels that know it; zero (reserved) before.
 * @ce_forgotten: correctable errors counted (in @ce_events) but no longer
 *	toward their page's threshold: the policy keeps a bucket for up to
 *	10^5 pages with correctable errors, and beyond that drops the
 *	emptiest, with the errors it still held.  Non-zero means some page
 *	may stay in service past the threshold.  Written by kernels that know
 *	it; zero (reserved) before.
 * @data_lost: the device's events with HBMGUARD_PAGES_DATA_LOST since it
 *	was registered, and @data_lost_seqnum the last one's seqnum (0:
 *	none), both read at one instant (netlink's DATA_LOST and
 *	DATA_LOST_SEQNUM).  A reader whose ring may overflow (an OVERFLOW
 *	record, a gap in seqnum) learns from them whether one of the events
 *	it lost was such, though the table cannot say (the page was out of
 *	service before): it takes both once after its open() as a baseline,
 *	counts the data-lost events it reads past the baseline's seqnum, and
 *	compares the count's rise with its own only once it has read an
 *	event (or OVERFLOW) past @data_lost_seqnum, or read its ring empty
 *	(EAGAIN) after this call: until then the last of them may still be
 *	waiting in its ring.  @data_lost, in what was reserved, is written
 *	whatever the caller's size; the two seqnums for a size of at least
 *	HBMGUARD_DEVICE_INFO_SIZE_VER1.
 * @data_lost_seqnum: see @data_lost
 * @added_seqnum: the seqnum of the device's DEVICE_ADDED event, which
 *	tells one registration of an id (and a name) from the next:
 *	@data_lost is a registration's.  Netlink's ADDED_SEQNUM.  Never 0
 *	from a kernel that fills these three: 0 says an older kernel, whose
 *	zeros in them mean nothing.
 */
struct hbmguard_device_info {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 health;
	char name[HBMGUARD_NAME_LEN];
	char identity[HBMGUARD_IDENTITY_LEN];
	__u64 hbm_size;
	__u64 usable_size;
	__u32 page_size;
	__u32 kind;
	__u32 spare_total;
	__u32 spare_used;
	__u32 nr_retired;
	__u32 nr_pending;
	__u32 nr_failed;
	__u32 nr_extents;
	__u64 generation;
	__u64 ce_events;
	__u64 ue_events;
	struct hbmguard_policy_params policy;
	__u64 table_bytes;
	__u32 spare_bad;
	__u32 reserved0;
	__u64 errors_dropped;
	__u64 ce_forgotten;
	__u64 data_lost;
	__u64 data_lost_seqnum;
	__u64 added_seqnum;
};
#define HBMGUARD_DEVICE_INFO_SIZE_VER0 240
#define HBMGUARD_DEVICE_INFO_SIZE_VER1 256

/**
 * struct hbmguard_translate - HBMGUARD_IOC_TRANSLATE: where one offset lives
 * @size: sizeof(struct hbmguard_translate)
 * @flags: must be zero
 * @device: in: device id
 * @state: out: enum hbmguard_page_state of the page holding @offset
 * @offset: in: any byte offset below usable_size
 * @translated: out: the byte that serves @offset: in the spare area when
 *	RETIRED, @offset itself otherwise (PENDING and FAILED pages are not to
 *	be used: check @state).  On a GPU device a RETIRED page has no spare:
 *	its driver keeps it out of use, and @translated is @offset.
 */
struct hbmguard_translate {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 state;
	__u64 offset;
	__u64 translated;
};
#define HBMGUARD_TRANSLATE_SIZE_VER0 32

/**
 * struct hbmguard_extent - one run of bad pages, as LIST_BAD returns them
 * @offset: first page
 * @length: bytes, a multiple of page_size
 * @spare_offset: the spare serving @offset when RETIRED; page i of the run is
 *	served by @spare_offset + i * page_size.  ~0ULL when not RETIRED, and
 *	on a GPU device (its driver bypasses the page).
 * @first_seen: seconds since the epoch of the first report
 * @last_seen: seconds since the epoch of the latest report
 * @state: enum hbmguard_page_state
 * @source: enum hbmguard_source of the first report
 * @error_count: errors reported on the run (saturates at 65535)
 * @reserved: zero
 */
struct hbmguard_extent {
	__u64 offset;
	__u64 length;
	__u64 spare_offset;
	__u64 first_seen;
	__u64 last_seen;
	__u32 state;
	__u32 source;
	__u32 error_count;
	__u32 reserved;
};
#define HBMGUARD_EXTENT_SIZE_VER0 56
#define HBMGUARD_NO_SPARE (~0ULL)

/**
 * struct hbmguard_restore_record - one extent of a packed RESTORE or
 *	PAGES_GET (HBMGUARD_A_RECORDS), in host byte order as netlink is
 * @offset: first byte, page aligned
 * @length: bytes, a non-zero multiple of page_size
 * @first_seen: seconds since the epoch of the first report, below 2^32;
 *	0: now
 * @last_seen: of the latest report, below 2^32, not before @first_seen;
 *	0: now
 * @state: HBMGUARD_STATE_RETIRED (bypassed; FAILED when no spare is left)
 *	or HBMGUARD_STATE_PENDING (recorded, not bypassed); a dump's records
 *	may be FAILED too, which RESTORE refuses: give them back RETIRED
 * @source: enum hbmguard_source: why the pages are bad, kept as it is;
 *	not NONE; DRIVER only on a GPU device
 * @errors: errors reported on the extent (the table keeps up to 65535)
 * @reserved: zero
 *
 * A later version may grow the record: HBMGUARD_A_RECORD_SIZE says how
 * large the caller's is, and bytes this kernel does not know must be zero.
 */
struct hbmguard_restore_record {
	__u64 offset;
	__u64 length;
	__u64 first_seen;
	__u64 last_seen;
	__u32 state;
	__u32 source;
	__u32 errors;
	__u32 reserved;
};
#define HBMGUARD_RESTORE_RECORD_SIZE_VER0 48
#define HBMGUARD_RESTORE_RECORD_SIZE_MAX 4096

/**
 * struct hbmguard_extent_query - HBMGUARD_IOC_LIST_BAD: the table, in pieces
 * @size: sizeof(struct hbmguard_extent_query)
 * @flags: must be zero
 * @device: in: device id
 * @entry_size: in: sizeof(struct hbmguard_extent) as the caller knows it
 *	(at least HBMGUARD_EXTENT_SIZE_VER0); entries are that far apart
 * @start: in: page-aligned offset to list from (the cursor; 0 at first)
 * @end: in: list extents that start below this offset; 0 means usable_size
 * @entries: in: user address of @capacity entries
 * @capacity: in: entries that fit at @entries (1..65536)
 * @count: out: entries written
 * @next: out: @start for the next call; equals the end of the range when
 *	the whole range was listed.  Extents that overlap @start are listed
 *	whole, so an extent is never split between calls.
 *
 * Listing a range also translates it: every remap inside [start, end) is
 * listed with its spare.
 */
struct hbmguard_extent_query {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 entry_size;
	__u64 start;
	__u64 end;
	__u64 entries;
	__u32 capacity;
	__u32 count;
	__u64 next;
};
#define HBMGUARD_EXTENT_QUERY_SIZE_VER0 56
#define HBMGUARD_LIST_MAX 65536

/**
 * struct hbmguard_extent_op - HBMGUARD_IOC_RETIRE, HBMGUARD_IOC_CLEAR
 * @size: sizeof(struct hbmguard_extent_op)
 * @flags: RETIRE: HBMGUARD_RETIRE_PENDING records the pages without
 *	bypassing them; a later RETIRE without it bypasses them.  CLEAR: zero.
 * @device: in: device id
 * @source: RETIRE: HBMGUARD_SOURCE_ADMIN or HBMGUARD_SOURCE_RESTORED (on a
 *	GPU device, whose driver retires its pages, RESTORED only: ADMIN is
 *	EINVAL); CLEAR: zero
 * @offset: in: first page, page aligned
 * @length: in: bytes, a non-zero multiple of the page size
 * @reserved: zero
 *
 * RETIRE gives each page of the range that is not yet RETIRED a spare page,
 * or marks it FAILED when the pool is empty.  CLEAR removes the range from
 * the table and returns its spares to the pool.
 */
struct hbmguard_extent_op {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 source;
	__u64 offset;
	__u64 length;
	__u64 reserved[2];
};
#define HBMGUARD_EXTENT_OP_SIZE_VER0 48
#define HBMGUARD_RETIRE_PENDING	(1U << 0)

/**
 * struct hbmguard_policy - HBMGUARD_IOC_SET_POLICY
 * @size: sizeof(struct hbmguard_policy)
 * @flags: which fields to set, at least one: HBMGUARD_POLICY_*
 * @device: in: device id
 * @reserved0: zero
 * @params: the new values of the fields named in @flags; the others must
 *	be zero.  0 in a field named in @flags is the device's default (the
 *	value the device was registered with: 50 errors, 86400 seconds, one
 *	page per 100 MiB of HBM but at most its pages), as in
 *	HBMGUARD_CMD_POLICY_SET.  EINVAL when @retire_limit is above the
 *	device's pages (usable_size / page_size): nothing changes then
 * @reserved: zero
 */
struct hbmguard_policy {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 reserved0;
	struct hbmguard_policy_params params;
	__u64 reserved[2];
};
#define HBMGUARD_POLICY_SIZE_VER0 48
#define HBMGUARD_POLICY_CE_THRESHOLD	(1U << 0)
#define HBMGUARD_POLICY_CE_WINDOW	(1U << 1)
#define HBMGUARD_POLICY_RETIRE_LIMIT	(1U << 2)
#define HBMGUARD_POLICY_ALL		0x7U

/**
 * struct hbmguard_inject - HBMGUARD_IOC_INJECT: report errors as a driver would
 * @size: sizeof(struct hbmguard_inject)
 * @flags: must be zero
 * @device: in: device id
 * @kind: enum hbmguard_error_kind
 * @offset: in: any byte offset below hbm_size; in the spare area the error
 *	is the spare's: a spare that fails leaves the pool, and a page it
 *	served moves to another spare (a RETIRED event, FAILED when none is
 *	left) with its data lost, as after an uncorrectable error
 * @count: in: errors to report at @offset, 1..65535 (CE only; 1 otherwise)
 * @reserved0: zero
 * @reserved: zero
 */
struct hbmguard_inject {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 kind;
	__u64 offset;
	__u32 count;
	__u32 reserved0;
	__u64 reserved[2];
};
#define HBMGUARD_INJECT_SIZE_VER0 48

/**
 * struct hbmguard_sim_create - HBMGUARD_IOC_SIM_CREATE: a device without a GPU
 * @size: sizeof(struct hbmguard_sim_create)
 * @flags: HBMGUARD_SIM_BACKED: back the device with memory (allocated on
 *	first touch, at most HBMGUARD_SIM_BACKED_MAX bytes) for the aperture
 * @device: out: the new device's id
 * @page_size: power of two, HBMGUARD_PAGE_SIZE_MIN..HBMGUARD_PAGE_SIZE_MAX;
 *	with HBMGUARD_SIM_BACKED at least the CPU's page size
 * @hbm_size: bytes, a multiple of @page_size, at most 2^32 pages
 * @spare_pages: pages of the spare pool, at most HBMGUARD_SPARE_PAGES_MAX
 *	and fewer than the device's pages; 0: one per 100 MiB, at least one
 * @reserved0: zero
 * @name: NUL-terminated, [A-Za-z0-9_.:-], non-empty
 * @identity: NUL-terminated, printable, unique among devices; empty: "sim:" name
 * @reserved: zero
 */
struct hbmguard_sim_create {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 page_size;
	__u64 hbm_size;
	__u32 spare_pages;
	__u32 reserved0;
	char name[HBMGUARD_NAME_LEN];
	char identity[HBMGUARD_IDENTITY_LEN];
	__u64 reserved[2];
};
#define HBMGUARD_SIM_CREATE_SIZE_VER0 144
#define HBMGUARD_SIM_BACKED	(1U << 0)
#define HBMGUARD_SIM_BACKED_MAX	(1ULL << 30)

/**
 * struct hbmguard_device_ref - HBMGUARD_IOC_SIM_DESTROY
 * @size: sizeof(struct hbmguard_device_ref)
 * @flags: must be zero
 * @device: in: device id of a simulated device
 * @reserved: zero
 */
struct hbmguard_device_ref {
	__u32 size;
	__u32 flags;
	__u32 device;
	__u32 reserved;
};
#define HBMGUARD_DEVICE_REF_SIZE_VER0 16

#define HBMGUARD_IOC_MAGIC 0xB7
#define HBMGUARD_IOC_GET_INFO	  _IOWR(HBMGUARD_IOC_MAGIC, 0x00, struct hbmguard_info)
#define HBMGUARD_IOC_LIST_DEVICES _IOWR(HBMGUARD_IOC_MAGIC, 0x01, struct hbmguard_device_list)
#define HBMGUARD_IOC_GET_DEVICE	  _IOWR(HBMGUARD_IOC_MAGIC, 0x02, struct hbmguard_device_info)
#define HBMGUARD_IOC_TRANSLATE	  _IOWR(HBMGUARD_IOC_MAGIC, 0x03, struct hbmguard_translate)
#define HBMGUARD_IOC_LIST_BAD	  _IOWR(HBMGUARD_IOC_MAGIC, 0x04, struct hbmguard_extent_query)
#define HBMGUARD_IOC_RETIRE	  _IOW(HBMGUARD_IOC_MAGIC, 0x10, struct hbmguard_extent_op)
#define HBMGUARD_IOC_CLEAR	  _IOW(HBMGUARD_IOC_MAGIC, 0x11, struct hbmguard_extent_op)
#define HBMGUARD_IOC_SET_POLICY	  _IOW(HBMGUARD_IOC_MAGIC, 0x12, struct hbmguard_policy)
#define HBMGUARD_IOC_INJECT	  _IOW(HBMGUARD_IOC_MAGIC, 0x13, struct hbmguard_inject)
/* The owner of lost aperture pages will restore them (struct
 * hbmguard_extent_op, flags and source zero): their spares are mapped again,
 * zeroed, for the owner to write.  Needs the file open for writing (EBADF),
 * not CAP_SYS_ADMIN: whoever may write the memory may say it is rewritten. */
#define HBMGUARD_IOC_RESTORED	  _IOW(HBMGUARD_IOC_MAGIC, 0x14, struct hbmguard_extent_op)
#define HBMGUARD_IOC_SIM_CREATE	  _IOWR(HBMGUARD_IOC_MAGIC, 0x20, struct hbmguard_sim_create)
#define HBMGUARD_IOC_SIM_DESTROY  _IOW(HBMGUARD_IOC_MAGIC, 0x21, struct hbmguard_device_ref)

enum hbmguard_event_type {
	HBMGUARD_EVENT_ERROR = 1,	/* an error was reported: source, count */
	HBMGUARD_EVENT_RETIRED,		/* pages became RETIRED: count of them */
	HBMGUARD_EVENT_PENDING,		/* pages became PENDING */
	HBMGUARD_EVENT_FAILED,		/* pages became FAILED (or lost data so) */
	HBMGUARD_EVENT_CLEARED,		/* pages left the table */
	HBMGUARD_EVENT_HEALTH,		/* state: new health, aux: old health */
	HBMGUARD_EVENT_POLICY,		/* the device's policy changed */
	HBMGUARD_EVENT_DEVICE_ADDED,
	HBMGUARD_EVENT_DEVICE_REMOVED,
	HBMGUARD_EVENT_OVERFLOW,	/* count: records this reader lost here */
	HBMGUARD_EVENT_DEVICE_ERROR,	/* a device-level error without an address
					 * (NVIDIA Xid): state: the Xid */
	HBMGUARD_EVENT_DROPPED,		/* netlink only: count events not sent */
	HBMGUARD_EVENT_RESTORED,	/* a RESTORE: count: pages it recorded
					 * (RETIRED, PENDING or FAILED), aux:
					 * its extents; no range: the table
					 * tells which pages */
};

/**
 * struct hbmguard_event - one record of read(2)
 * @type: enum hbmguard_event_type
 * @device: device id; given to another device only after this one's
 *	DEVICE_REMOVED, so an id's events run from a DEVICE_ADDED to its
 *	DEVICE_REMOVED, a registration at a time; once it is sent, no
 *	command or dump started after finds the device (ENODEV)
 * @seqnum: increases by one for every event the module makes
 * @timestamp: CLOCK_REALTIME nanoseconds
 * @offset: first byte concerned (page aligned but for ERROR)
 * @length: bytes concerned
 * @source: enum hbmguard_source (RETIRED, PENDING, FAILED, ERROR)
 * @state: ERROR: enum hbmguard_error_kind; HEALTH: new health;
 *	DEVICE_ERROR: the Xid
 * @count: pages changed; ERROR: errors; OVERFLOW: records lost
 * @aux: HEALTH: previous health; ERROR, DEVICE_ERROR: enum hbmguard_path;
 *	RETIRED, FAILED, CLEARED: HBMGUARD_PAGES_* flags (0 from a module
 *	older than them; the other bits zero, for flags to come); RESTORED:
 *	its extents;
 *	DEVICE_ADDED: the device's enum hbmguard_device_kind
 * @reserved: zero
 */
struct hbmguard_event {
	__u32 type;
	__u32 device;
	__u64 seqnum;
	__u64 timestamp;
	__u64 offset;
	__u64 length;
	__u32 source;
	__u32 state;
	__u32 count;
	__u32 aux;
	__u64 reserved;
};
/*
 * The pages' data is lost: the spare that held it failed, and the data
 * could not be moved or was lost before and not yet restored; or an
 * uncorrectable error or poison hit pages FAILED before, whose own frames
 * held it; or a change that moved it could not (a copy that failed, a page
 * taken off a frame an error took: see PAGE STATES).  A listener that recovers lost data does so
 * again, whatever the event's source and whether it knew the pages bad
 * before.
 */
#define HBMGUARD_PAGES_DATA_LOST	(1U << 0)

/*
 * THE MAPPED TRANSLATION TABLE
 * ----------------------------
 * mmap(NULL, len, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(dev))
 * maps device dev's bad-page table, so that an allocator can translate
 * without a syscall.  Map one page first to read the header: the whole
 * mapping is map_size bytes.  The mapping is shared (MAP_PRIVATE: EINVAL)
 * and read-only (PROT_WRITE, PROT_EXEC, or either by mprotect(): EACCES),
 * must start at the table's offset (EINVAL) and not exceed map_size
 * (EINVAL); a device that does not exist is ENODEV.  It cannot grow
 * (mremap(): EFAULT).  A mapping outlives its device: then `removed` is set
 * and the table stays as it was.
 *
 * The table is a B+tree of fixed-size nodes (struct hbmguard_map_node), kept
 * twice: copy 0 and copy 1, each an array of nodes at buffer_offset[c],
 * addressed by index, never by pointer.  A change is applied to the copy
 * readers are not directed to, then, inside `seq` (odd while it switches),
 * `active` is switched to it; then the same change is applied to the other
 * copy, which readers were directed away from, so both copies are again the
 * same.  The kernel never waits for readers, and publishes every change
 * within the call that makes it, whatever the size of the table (a change
 * costs the kernel what the change is: O(log n) per extent it touches).
 * Until a device's table is first mapped its changes are not applied to the
 * copies: the first mmap() builds both from the table (O(extents), once,
 * and can be interrupted by a fatal signal: EINTR), so a mapping always
 * starts at the current table; from then on every change is followed.
 *
 * A lookup of page p (page = offset >> page_shift):
 *
 *	s = seq (acquire); retry while s is odd
 *	c = active & 1; n = root[c]; h = height[c]; nodes (acquire)
 *	h == 0: the table is empty
 *	for each level from the root down (h - 1 levels of inner nodes):
 *		node = node n of copy c; i = last slot with in.first[i] <= p
 *		none: p is below every extent: clean;  n = in.child[i]
 *	the leaf: i = last slot with ext[i].first <= p
 *	p is bad if such an ext[i] exists and p - first < nr
 *	acquire fence; retry if seq != s
 *
 * An inner node's in.first[i] is the smallest page of its child i's
 * subtree, so the descent finds the last extent starting at or below p.
 * Nodes are checked as they are read: a node's level is the level the
 * descent is at (leaves 0), 1 <= nr <= HBMGUARD_MAP_LEAF_MAX (a leaf) or
 * HBMGUARD_MAP_INNER_MAX (an inner node), every index below `nodes`,
 * height <= HBMGUARD_MAP_HEIGHT_MAX.  A read torn by a change can break any
 * of them, and is only detected by the second load of `seq`: a reader
 * bounds every index it follows and retries when a check fails and seq
 * moved.  A failed check with seq unchanged is a bug: EPROTO.  Nodes are
 * backed by memory as the table grows: node indices at or above `nodes` may
 * not be (touching them is SIGBUS); nodes not reachable from a root hold
 * anything.
 *
 * When the table holds more extents than `capacity`, or the kernel could
 * not get memory for a change, `overflow` is set and readers must use
 * HBMGUARD_IOC_TRANSLATE; the copies are rebuilt once a change brings the
 * table back within `capacity`.  poll() on the file says when anything
 * changed.
 *
 * A device created while the module parameter `map` was 0 has no mapped
 * table: its mmap is EOPNOTSUPP (use HBMGUARD_IOC_TRANSLATE).  The
 * parameter (/sys/module/hbmguard/parameters/map, default 1) is read when a
 * device is created.
 *
 * Version 1 (hbmguard before the B+tree) published sorted arrays of
 * struct hbmguard_map_entry; a reader of it finds version 2 and refuses.
 */
#define HBMGUARD_MMAP_TABLE(dev)	((__u64)(dev) << 32)

/*
 * THE APERTURE
 * ------------
 * mmap(NULL, len, prot, MAP_SHARED, fd, HBMGUARD_MMAP_APERTURE(dev) + off)
 * maps a memory-backed device (a simulated one created with
 * HBMGUARD_SIM_BACKED, or a range registered with HBMGUARD_A_CLAIM) from
 * device offset off, page aligned, within
 * [0, usable_size).  Every retired page is served by its spare.  A page
 * retired because its correctable errors crossed the threshold (or by an
 * operator) keeps its data: it is copied to the spare before the switch, so
 * the application sees no change.  A page retired for an uncorrectable error
 * or poison has lost its data: touching it raises SIGBUS with BUS_MCEERR_AR
 * and the address in si_addr, as real poison does, until its owner declares
 * it restored (HBMGUARD_IOC_RESTORED); the spare then reads zero until the
 * owner writes it.  A page whose frame is poisoned or whose data could not
 * be copied raises the same SIGBUS.  A FAILED page is served by its own
 * frame, unless an uncorrectable error or poison took that frame: then it
 * raises the same SIGBUS while it stays FAILED, restored or not (a frame
 * known to fail serves nobody), until a CLEAR gives it back; retired onto a
 * spare, until its owner restores it.  A RESTORE takes no frame.  A page
 * cleared gets back its own memory with the data its spare held (a lost
 * page: what it held when it was lost).  Once the device is gone, its
 * mappings raise SIGBUS.  A simulated device's page gets its memory when
 * first touched, charged to the memory cgroup of the process that touches
 * it: where that cgroup cannot pay, the touch raises SIGBUS (BUS_ADRERR),
 * as a hugetlb page does.  The mapping must be shared (MAP_PRIVATE: EINVAL),
 * is never executable (PROT_EXEC, or mprotect() to it: EACCES; EPERM from
 * mmap() itself when the node is on a noexec filesystem), needs a file open
 * for writing, even to be read (EACCES: see PRIVILEGES), and cannot grow
 * (mremap(): EFAULT).
 * Errors: ENODEV (no such device), EINVAL (not memory-backed, outside the
 * device, or an offset that is no device's).
 */
#define HBMGUARD_MMAP_APERTURE(dev)	((1ULL << 62) | ((__u64)(dev) << 44))
#define HBMGUARD_MAP_MAGIC		0x48424d54	/* "HBMT" */
#define HBMGUARD_MAP_VERSION		2
#define HBMGUARD_MAP_NO_SPARE		0xffffffffU
#define HBMGUARD_MAP_NODE_SIZE		512
#define HBMGUARD_MAP_LEAF_MAX		31
#define HBMGUARD_MAP_INNER_MAX		63
#define HBMGUARD_MAP_HEIGHT_MAX		8

/**
 * struct hbmguard_map_header - the first bytes of a mapped table
 * @magic: HBMGUARD_MAP_MAGIC
 * @version: HBMGUARD_MAP_VERSION
 * @seq: sequence count, odd while the kernel switches copies
 * @active: which copy (0 or 1) is the table
 * @generation: the device generation the active copy shows
 * @nr: extents in each copy
 * @capacity: extents the table may hold before it overflows
 * @page_shift: log2 of the device's page size
 * @usable_size: bytes users address; spares lie above it
 * @buffer_offset: byte offset of each copy's node 0 from the start of the
 *	mapping; node n of copy c is at buffer_offset[c] + n * node_size
 * @map_size: bytes of the whole mapping
 * @overflow: the table does not fit: use HBMGUARD_IOC_TRANSLATE
 * @removed: the device is gone; the table is its last one
 * @root: node index of each copy's root
 * @height: levels of each copy's tree: 0 empty, 1 the root is a leaf
 * @nodes: nodes of each copy backed by memory: every index read is below
 *	it; it only grows
 * @node_size: HBMGUARD_MAP_NODE_SIZE
 * @reserved: zero
 */
struct hbmguard_map_header {
	__u32 magic;
	__u32 version;
	__u32 seq;
	__u32 active;
	__u64 generation;
	__u32 nr[2];
	__u32 capacity;
	__u32 page_shift;
	__u64 usable_size;
	__u64 buffer_offset[2];
	__u64 map_size;
	__u32 overflow;
	__u32 removed;
	__u32 root[2];
	__u32 height[2];
	__u32 nodes;
	__u32 node_size;
	__u64 reserved;
};

/**
 * struct hbmguard_map_entry - one extent of a mapped table
 * @first: first page (offset >> page_shift)
 * @nr: pages
 * @spare: when RETIRED, the spare page serving @first (page i of the
 *	extent is served by usable_size + ((spare + i) << page_shift));
 *	HBMGUARD_MAP_NO_SPARE on a GPU device, whose driver bypasses the page
 * @state: enum hbmguard_page_state
 */
struct hbmguard_map_entry {
	__u32 first;
	__u32 nr;
	__u32 spare;
	__u32 state;
};

/**
 * struct hbmguard_map_node - one node of a mapped table's B+tree
 * @nr: slots in use
 * @level: 0 for a leaf; an inner node is one above its children
 * @reserved: zero
 * @ext: a leaf's extents, sorted by first, disjoint
 * @in: an inner node's children, sorted: @in.first[i] is the smallest page
 *	of child @in.child[i]'s subtree, @in.child[i] its node index
 */
struct hbmguard_map_node {
	__u16 nr;
	__u16 level;
	__u32 reserved;
	union {
		struct hbmguard_map_entry ext[HBMGUARD_MAP_LEAF_MAX];
		struct {
			__u32 first[HBMGUARD_MAP_INNER_MAX];
			__u32 child[HBMGUARD_MAP_INNER_MAX];
		} in;
	};
};

/*
 * GENERIC NETLINK
 * ---------------
 * Family HBMGUARD_GENL_NAME, version HBMGUARD_GENL_VERSION, described for the
 * kernel's ynl tool by Documentation/netlink/specs/hbmguard.yaml.  Every
 * command is strictly validated: unknown attributes, wrong types and lengths
 * are EINVAL with an extack message.  Every command, reads included, and
 * joining the "events" group need CAP_SYS_ADMIN in the initial user
 * namespace (EPERM; see PRIVILEGES above).
 *
 * HBMGUARD_CMD_DEVICE_GET
 *	do: HBMGUARD_A_DEVICE_ID -> one device; dump: every device.  A device
 *	is DEVICE_ID, NAME, IDENTITY, KIND, HBM_SIZE, USABLE_SIZE, PAGE_SIZE,
 *	SPARE_TOTAL, SPARE_USED, NR_RETIRED, NR_PENDING, NR_FAILED, NR_EXTENTS,
 *	HEALTH, CE_THRESHOLD, CE_WINDOW, RETIRE_LIMIT, GENERATION, CE_EVENTS,
 *	UE_EVENTS, ERRORS_DROPPED, CE_FORGOTTEN, DATA_LOST, DATA_LOST_SEQNUM,
 *	ADDED_SEQNUM (and PHYS_ADDR, NUMA_NODE for a range, and CLAIM for one
 *	whose memory is its aperture (registered with CLAIM; kernels before
 *	this do not say); PCI_ADDR, DRIVER_HEALTH for a GPU).
 *	ERRORS_DROPPED: the device's errors that were reported but never
 *	applied (struct hbmguard_device_info's errors_dropped); a reader that
 *	does not know it ignores it.  CE_FORGOTTEN: correctable errors
 *	counted but no longer toward their page's threshold (struct
 *	hbmguard_device_info's ce_forgotten); kernels before it do not send
 *	it.  DATA_LOST: the device's events with HBMGUARD_PAGES_DATA_LOST
 *	since it was registered, and DATA_LOST_SEQNUM the last one's SEQNUM
 *	(0: none), both read at one instant: a listener that lost events (a
 *	gap in SEQNUM, ENOBUFS) and counted those it heard knows whether one
 *	of them was such, though the device's table cannot say (the page was
 *	out of service before): every event up to DATA_LOST_SEQNUM is heard
 *	or lost once it has read an event past it, or read its socket empty
 *	after STATS_GET's SEQNUM had reached it.
 *	ADDED_SEQNUM: the SEQNUM of the device's DEVICE_ADDED event, which
 *	tells one registration of an id (and a name) from the next: the
 *	count is a registration's.  Kernels before them do not send these
 *	three.
 * HBMGUARD_CMD_PAGES_GET
 *	dump: HBMGUARD_A_DEVICE_ID -> the device's extents, sorted by offset,
 *	none overlapping another, in one of two forms:
 *	- one message per extent, nested in HBMGUARD_A_EXTENT: OFFSET, LENGTH,
 *	  SPARE_OFFSET (when RETIRED), STATE, SOURCE, ERRORS, FIRST_SEEN,
 *	  LAST_SEEN;
 *	- packed, when the request has HBMGUARD_A_RECORD_SIZE, checked as
 *	  RESTORE's (kernels before HBMGUARD_A_RECORDS, as the family's
 *	  maxattr tells, refuse the attribute, EINVAL; those with packed
 *	  RESTOREs but not these dumps ignore it and answer nested: a
 *	  reader takes either form): messages of
 *	  DEVICE_ID, RECORD_SIZE (the caller's, echoed) and one or more
 *	  HBMGUARD_A_RECORDS, each an array of struct hbmguard_restore_record
 *	  of that size, some 300 records a message: offset, length, times,
 *	  state (FAILED too), source and errors as the table has them, the
 *	  bytes past what this kernel knows zero.  No spare offsets.
 *	Resumes where the last message left off, so a table of 10^6 extents
 *	dumps in many rounds; an extent that grew since the last round is
 *	sent from where that round left off.  A page whose state changed
 *	during the dump (the device's GENERATION moved) sets NLM_F_DUMP_INTR
 *	on the first message closed after the change, or on the DONE: the
 *	extents are then not one moment's table.  Read it again, or, as
 *	hbmguardd does, take STATS_GET's SEQNUM before the dump and apply
 *	the events after it: each change made during the dump is one of
 *	them.  Errors counted on a page already listed do not set it.
 * HBMGUARD_CMD_RETIRE, HBMGUARD_CMD_CLEAR (admin)
 *	DEVICE_ID, OFFSET, LENGTH (page aligned); RETIRE takes SOURCE (ADMIN by
 *	default, or RESTORED; on a GPU device DRIVER by default, or RESTORED)
 *	and FLAGS (HBMGUARD_RETIRE_PENDING).
 * HBMGUARD_CMD_POLICY_SET (admin)
 *	DEVICE_ID and one or more of CE_THRESHOLD, CE_WINDOW, RETIRE_LIMIT.
 *	A value of 0 is the device's default, the value it was registered
 *	with (struct hbmguard_policy), so that what was set can be undone
 *	without knowing how the module sizes a device's policy; kernels
 *	before this refused 0 (EINVAL).  A RETIRE_LIMIT above the device's
 *	pages (USABLE_SIZE / PAGE_SIZE) is EINVAL and changes nothing: the
 *	request is one change, one HBMGUARD_EVENT_POLICY event (none when the
 *	policy stays as it was).
 * HBMGUARD_CMD_STATS_GET
 *	do: module-wide counters: NR_DEVICES, SEQNUM, GENERATION, and per
 *	intake path the errors received and dropped (HBMGUARD_A_STATS nest of
 *	HBMGUARD_A_PATH_STATS nests: PATH, RECEIVED, DROPPED), EVENTS_DROPPED.
 * HBMGUARD_CMD_RESTORE (admin)
 *	DEVICE_ID and the extents, in one of two forms (both in one request
 *	is EINVAL):
 *	- HBMGUARD_A_EXTENT nests (OFFSET, LENGTH, and STATE PENDING for
 *	  pages to record without bypass), retired with source RESTORED; in
 *	  any order, but no two overlapping (EINVAL);
 *	- packed (kernels that know HBMGUARD_A_RECORDS: the family's maxattr
 *	  says so): HBMGUARD_A_RECORD_SIZE, the size of the caller's struct
 *	  hbmguard_restore_record (from HBMGUARD_RESTORE_RECORD_SIZE_VER0 up
 *	  to HBMGUARD_RESTORE_RECORD_SIZE_MAX, a multiple of 8), and one or
 *	  more HBMGUARD_A_RECORDS, each a non-empty array of such records
 *	  (an attribute holds less than 64 KiB: a request carries several).
 *	  Each record keeps what it says: its source (why the page went bad:
 *	  not replaced by RESTORED), times and error count, where the table
 *	  has none of its pages (a restore after the module's load; a page
 *	  retired since, between two records, takes nothing from them).  A
 *	  record whose pages the table has some of (the daemon restarted, a
 *	  UE on it before the restore) is applied as a RETIRE is: pages the
 *	  table has keep their record, new ones get the record's source, the
 *	  request's time and no error count (so may a record the kernel
 *	  lacked the memory to apply whole, rather than not at all).  The
 *	  records, in
 *	  attribute order, must be sorted by offset and not overlap (they may
 *	  touch); a record's bytes past what the kernel knows must be zero.
 *	  A length not a multiple of the record size, a record size out of
 *	  bounds, a reserved field set, records out of order or
 *	  overlapping, a bad state, source or time are EINVAL, with an extack
 *	  message naming the attribute.
 *	Pages known bad from persistent state.  Every extent is checked
 *	before any is applied.  The request is one change: one
 *	HBMGUARD_EVENT_RESTORED event (source RESTORED; COUNT: pages recorded,
 *	AUX: extents; none when no page was new), one publication of the
 *	mapped table.  A restored page is not a loss of data now: the
 *	aperture copies its content to its spare as for RETIRE (after the
 *	module's load, the zeros of a claimed range), and it raises no
 *	SIGBUS unless that copy cannot be made (a poisoned frame, no memory,
 *	a frame an uncorrectable error took since the module's load): then it
 *	is lost, said on RETIRED events before the RESTORED one (PAGE
 *	STATES).  At
 *	most 16384 extents (E2BIG).  Should one fail (ENOMEM) the ones at
 *	lower offsets stay, and are announced.
 * HBMGUARD_CMD_RANGE_REGISTER (admin)
 *	NAME, IDENTITY (optional), and NUMA_NODE, or PHYS_ADDR and HBM_SIZE;
 *	PAGE_SIZE (optional, the CPU page size by default; with CLAIM at least
 *	the CPU page size), SPARE_PAGES (optional, at most
 *	HBMGUARD_SPARE_PAGES_MAX), CLAIM (optional).  Registers physical memory (HBM exposed
 *	as a CPU-less NUMA node, as on Grace Hopper and MI300A) as a device, so
 *	that memory_failure() and machine checks on it reach its table.  Frames
 *	of it the kernel has poisoned already (memory_failure() before the
 *	registration: a Grace Hopper driver offlines the pages it retired when
 *	it onlines the GPU's memory; frames kept at an earlier unregistration)
 *	are read in: their pages retired with source RESTORED, known bad from
 *	before (RETIRED events, no error counted), a poisoned spare counted
 *	bad; a poisoned huge page is skipped (which frame is bad is the
 *	kernel's secret).  With
 *	CLAIM the module takes the range from the page allocator (migrating
 *	what was there; EBUSY when it cannot, e.g. kernel memory or poisoned
 *	pages in it), zeroes it and offers it as the device's aperture, every
 *	retired page steered to a spare at the top of the range; it is given
 *	back at unregistration, bad frames excepted: every page in the table
 *	(retired, pending or failed, whatever the cause), lost or poisoned is
 *	marked HWPoison and stays out of the page allocator until reboot, and
 *	a later CLAIM over one is EBUSY.  A range to claim may have at most
 *	16 TiB of usable pages, the aperture window of a device (EFBIG).
 *	Replies with DEVICE_ID; a registration whose reply cannot be made or
 *	delivered (the requester's receive buffer full) is taken back, its
 *	DEVICE_ADDED followed by its DEVICE_REMOVED (as SIM_CREATE's whose
 *	answer cannot be copied out).
 * HBMGUARD_CMD_RANGE_UNREGISTER (admin)
 *	DEVICE_ID of a range device.
 * HBMGUARD_CMD_GPU_REGISTER (admin)
 *	NAME, IDENTITY (the GPU's UUID, non-empty), PCI_ADDR, HBM_SIZE and
 *	PAGE_SIZE, all required; SPARE_PAGES, CLAIM, PHYS_ADDR and NUMA_NODE are
 *	EINVAL.  Registers a discrete GPU as a device of kind
 *	HBMGUARD_KIND_GPU: its driver bypasses bad pages itself (NVIDIA page
 *	retirement and row remapping, amdgpu's bad-page reservation), so it
 *	has no spare pool and no aperture, and usable_size is hbm_size.
 *	PCI_ADDR is the address exactly as the kernel names the device
 *	("%04x:%02x:%02x.%d", lower case: "0000:3b:00.0"); the NVIDIA Xid
 *	tracepoint reaches the device by it.  A name, identity or PCI address
 *	already registered (a provider's identity included) is EEXIST.  On such
 *	a device RETIRE records pages the driver retired: RETIRED without a
 *	spare (spare_used stays 0), source DRIVER (the default there) or
 *	RESTORED, ADMIN being EINVAL; with HBMGUARD_RETIRE_PENDING, a
 *	retirement the driver has pending.  RESTORE works as on any device.
 *	Source DRIVER on any other device is EINVAL.  DEVICE_GET adds PCI_ADDR
 *	and DRIVER_HEALTH.  Replies with DEVICE_ID, or is taken back as
 *	RANGE_REGISTER is.
 * HBMGUARD_CMD_GPU_UNREGISTER (admin)
 *	DEVICE_ID of a GPU device (another kind: EOPNOTSUPP).
 * HBMGUARD_CMD_GPU_HEALTH_SET (admin)
 *	DEVICE_ID of a GPU device and DRIVER_HEALTH: the health its driver's
 *	facts give (a row remap or retirement pending: RESET_REQUIRED; a remap
 *	or retirement failure: RMA; OK when they clear).  The device's HEALTH
 *	is the worse of it and the table's (see enum hbmguard_health); a
 *	change is a HEALTH event.
 * HBMGUARD_CMD_EVENT
 *	Multicast to the "events" group, one per event of struct
 *	hbmguard_event: EVENT_TYPE, SEQNUM, TIMESTAMP, DEVICE_ID, OFFSET,
 *	LENGTH, SOURCE, STATE, COUNT, AUX.  SEQNUM is the same sequence as
 *	read(2) sees.  When the module could not send an event (no memory), the
 *	next message is a DROPPED event with the count; a listener that sees a
 *	gap, ENOBUFS or DROPPED should dump the tables again.
 */
#define HBMGUARD_GENL_NAME		"hbmguard"
#define HBMGUARD_GENL_VERSION		1
#define HBMGUARD_GENL_MCGRP_EVENTS	"events"

enum hbmguard_cmd {
	HBMGUARD_CMD_UNSPEC,
	HBMGUARD_CMD_DEVICE_GET,
	HBMGUARD_CMD_PAGES_GET,
	HBMGUARD_CMD_RETIRE,
	HBMGUARD_CMD_CLEAR,
	HBMGUARD_CMD_POLICY_SET,
	HBMGUARD_CMD_STATS_GET,
	HBMGUARD_CMD_RESTORE,
	HBMGUARD_CMD_RANGE_REGISTER,
	HBMGUARD_CMD_RANGE_UNREGISTER,
	HBMGUARD_CMD_EVENT,
	HBMGUARD_CMD_GPU_REGISTER,
	HBMGUARD_CMD_GPU_UNREGISTER,
	HBMGUARD_CMD_GPU_HEALTH_SET,
	__HBMGUARD_CMD_MAX
};
#define HBMGUARD_CMD_MAX (__HBMGUARD_CMD_MAX - 1)

enum hbmguard_attr {
	HBMGUARD_A_UNSPEC,
	HBMGUARD_A_PAD,
	HBMGUARD_A_DEVICE_ID,		/* u32 */
	HBMGUARD_A_NAME,		/* string, < HBMGUARD_NAME_LEN */
	HBMGUARD_A_IDENTITY,		/* string, < HBMGUARD_IDENTITY_LEN */
	HBMGUARD_A_KIND,		/* u32: enum hbmguard_device_kind */
	HBMGUARD_A_HBM_SIZE,		/* u64 */
	HBMGUARD_A_USABLE_SIZE,		/* u64 */
	HBMGUARD_A_PAGE_SIZE,		/* u32 */
	HBMGUARD_A_SPARE_TOTAL,		/* u32 */
	HBMGUARD_A_SPARE_USED,		/* u32 */
	HBMGUARD_A_NR_RETIRED,		/* u32 */
	HBMGUARD_A_NR_PENDING,		/* u32 */
	HBMGUARD_A_NR_FAILED,		/* u32 */
	HBMGUARD_A_NR_EXTENTS,		/* u32 */
	HBMGUARD_A_HEALTH,		/* u32: enum hbmguard_health */
	HBMGUARD_A_CE_THRESHOLD,	/* u32 */
	HBMGUARD_A_CE_WINDOW,		/* u32, seconds */
	HBMGUARD_A_RETIRE_LIMIT,	/* u32, pages */
	HBMGUARD_A_GENERATION,		/* u64 */
	HBMGUARD_A_PHYS_ADDR,		/* u64 */
	HBMGUARD_A_NUMA_NODE,		/* u32 */
	HBMGUARD_A_SPARE_PAGES,		/* u32 */
	HBMGUARD_A_EXTENT,		/* nest */
	HBMGUARD_A_OFFSET,		/* u64 */
	HBMGUARD_A_LENGTH,		/* u64 */
	HBMGUARD_A_SPARE_OFFSET,	/* u64 */
	HBMGUARD_A_STATE,		/* u32 */
	HBMGUARD_A_SOURCE,		/* u32 */
	HBMGUARD_A_ERRORS,		/* u32 */
	HBMGUARD_A_FIRST_SEEN,		/* u64, seconds since the epoch */
	HBMGUARD_A_LAST_SEEN,		/* u64, seconds since the epoch */
	HBMGUARD_A_FLAGS,		/* u32 */
	HBMGUARD_A_EVENT_TYPE,		/* u32: enum hbmguard_event_type */
	HBMGUARD_A_SEQNUM,		/* u64 */
	HBMGUARD_A_TIMESTAMP,		/* u64, CLOCK_REALTIME ns */
	HBMGUARD_A_COUNT,		/* u32 */
	HBMGUARD_A_AUX,			/* u32 */
	HBMGUARD_A_NR_DEVICES,		/* u32 */
	HBMGUARD_A_STATS,		/* nest of HBMGUARD_A_PATH_STATS */
	HBMGUARD_A_PATH_STATS,		/* nest: PATH, RECEIVED, DROPPED */
	HBMGUARD_A_PATH,		/* u32: enum hbmguard_path */
	HBMGUARD_A_RECEIVED,		/* u64 */
	HBMGUARD_A_DROPPED,		/* u64 */
	HBMGUARD_A_EVENTS_DROPPED,	/* u64 */
	HBMGUARD_A_CE_EVENTS,		/* u64: correctable errors reported */
	HBMGUARD_A_UE_EVENTS,		/* u64: uncorrectable errors and poison */
	HBMGUARD_A_CLAIM,		/* flag: the range's memory is the aperture */
	HBMGUARD_A_SPARE_BAD,		/* u32: spares failed, out of the pool */
	HBMGUARD_A_PCI_ADDR,		/* string, < HBMGUARD_PCI_ADDR_LEN */
	HBMGUARD_A_DRIVER_HEALTH,	/* u32: enum hbmguard_health */
	HBMGUARD_A_ERRORS_DROPPED,	/* u64: errors reported, never applied */
	HBMGUARD_A_CE_FORGOTTEN,	/* u64: CEs no longer toward a threshold */
	HBMGUARD_A_RECORD_SIZE,		/* u32: bytes of each packed record */
	HBMGUARD_A_RECORDS,		/* binary: struct hbmguard_restore_record[] */
	HBMGUARD_A_DATA_LOST,		/* u64: events with HBMGUARD_PAGES_DATA_LOST */
	HBMGUARD_A_DATA_LOST_SEQNUM,	/* u64: the last of them, 0 none */
	HBMGUARD_A_ADDED_SEQNUM,	/* u64: its DEVICE_ADDED event's */
	__HBMGUARD_A_MAX
};
#define HBMGUARD_A_MAX (__HBMGUARD_A_MAX - 1)

#endif /* _UAPI_LINUX_HBMGUARD_H */
