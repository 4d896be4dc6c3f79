/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What NVIDIA's management library (NVML) says about a node's GPUs, for
 * hbmguardd and hbmnvml(8): which GPUs there are, what the driver has
 * already retired or remapped, and its live ECC and Xid events.  The
 * library is loaded at run time (a node without NVIDIA runs unchanged);
 * see nvml_source.c for what this source does and must not do.
 *
 * Until the daemon's fact API exists (daemon/core.h, issue #18) the source
 * hands its facts to the narrow callbacks below; every callback is optional.
 * Callbacks run in the caller's thread: inside hbm_nvml_open(),
 * hbm_nvml_reconcile() and hbm_nvml_dispatch(), never in the event thread
 * nor in the reader (hbm_nvml_reread()).
 */
#ifndef HBM_NVML_SOURCE_H
#define HBM_NVML_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The library the driver installs (its soname); tests pass a path instead. */
#define HBM_NVML_LIBRARY "libnvidia-ml.so.1"

struct hbm_nvml;

struct hbm_nvml_gpu {
	unsigned int index;	/* NVML's enumeration order: not stable */
	char uuid[96];		/* "GPU-..." : the stable identity */
	char pci[32];		/* NVML's busId, "00000000:3B:00.0" */
	char name[96];
	uint64_t memory;	/* bytes of device memory (nvmlMemory_t.total) */
	bool present;		/* false once it has fallen off the bus */
};

/*
 * Whether one fact could be read: NVML's NOT_SUPPORTED (Hopper has no page
 * retirement, only row remapping; MIG hides remapped rows) is a fact about
 * the GPU, MISSING one about an older library, FAILED a failing call.
 */
enum hbm_nvml_status {
	HBM_NVML_OK,
	HBM_NVML_UNSUPPORTED,
	HBM_NVML_MISSING,
	HBM_NVML_FAILED,
};

/* nvmlPageRetirementCause_t's two causes, in its order. */
enum hbm_nvml_cause {
	HBM_NVML_CAUSE_SBE,	/* MULTIPLE_SINGLE_BIT_ECC_ERRORS */
	HBM_NVML_CAUSE_DBE,	/* DOUBLE_BIT_ECC_ERROR */
	HBM_NVML_CAUSES,
};

struct hbm_nvml_pages {
	enum hbm_nvml_status status;
	uint32_t nr;
	uint64_t *addr;		/* the hardware address, as in Xid 63 */
	uint64_t *time;		/* the retirement's timestamp, as NVML gives it */
};

/* ECC totals: [corrected, uncorrected][volatile, aggregate]. */
enum { HBM_NVML_CORRECTED, HBM_NVML_UNCORRECTED };
enum { HBM_NVML_VOLATILE, HBM_NVML_AGGREGATE };

/* Everything reconciliation reads about one GPU. */
struct hbm_nvml_report {
	struct hbm_nvml_pages retired[HBM_NVML_CAUSES];
	enum hbm_nvml_status pending_status;
	bool pending;			/* pages wait for a reboot to retire */
	enum hbm_nvml_status remap_status;
	uint32_t remap_corrected, remap_uncorrected;
	bool remap_pending;		/* a GPU reset is needed */
	bool remap_failure;		/* a remap has failed: RMA */
	enum hbm_nvml_status ecc_status;
	uint64_t ecc[2][2];
};

enum hbm_nvml_event_kind {
	HBM_NVML_EVENT_SBE,		/* nvmlEventTypeSingleBitEccError */
	HBM_NVML_EVENT_DBE,		/* nvmlEventTypeDoubleBitEccError */
	HBM_NVML_EVENT_XID,		/* nvmlEventTypeXidCriticalError, data = the Xid */
};

struct hbm_nvml_ops {
	void (*gpu_seen)(void *ctx, const struct hbm_nvml_gpu *gpu);
	void (*gpu_gone)(void *ctx, const struct hbm_nvml_gpu *gpu);
	void (*page_retired)(void *ctx, const struct hbm_nvml_gpu *gpu,
			     enum hbm_nvml_cause cause, uint64_t addr, uint64_t time);
	/*
	 * Whether some of its retired pages wait for a reboot; called before
	 * its page_retired calls (NVML does not say which pages), and not at
	 * all when that could not be read.
	 */
	void (*pending)(void *ctx, const struct hbm_nvml_gpu *gpu, bool pending);
	/*
	 * The counts: r's remap_* and ecc_* (its pages went to page_retired):
	 * the last call of a GPU's reconciliation.
	 */
	void (*counts)(void *ctx, const struct hbm_nvml_gpu *gpu,
		       const struct hbm_nvml_report *r);
	void (*event)(void *ctx, const struct hbm_nvml_gpu *gpu,
		      enum hbm_nvml_event_kind kind, uint64_t data);
	/* One line per problem, syslog(3) priority; without it, stderr. */
	void (*log)(void *ctx, int priority, const char *msg);
};

/*
 * Loads @library (HBM_NVML_LIBRARY on a node), initialises NVML and
 * discovers the GPUs (ops->gpu_seen for each).  NULL when there is no NVML
 * to talk to: a missing library is one info line, a library without a
 * required function or a failing nvmlInit one error line.
 */
struct hbm_nvml *hbm_nvml_open(const char *library, const struct hbm_nvml_ops *ops, void *ctx);
/*
 * Ends the threads and closes NVML.  True when a thread stuck inside NVML
 * was left there (said in one line; the library stays loaded, the handle
 * with it): the process must then end with _exit(), not exit(), see
 * nvml_source.c.
 */
bool hbm_nvml_close(struct hbm_nvml *h);

const char *hbm_nvml_driver_version(const struct hbm_nvml *h);
size_t hbm_nvml_count(const struct hbm_nvml *h);
const struct hbm_nvml_gpu *hbm_nvml_gpu(const struct hbm_nvml *h, size_t i);

/*
 * Reads every fact of GPU @i into @r (free it with hbm_nvml_report_free()).
 * -ENODEV when the GPU has fallen off the bus (it is then gone: ops->gpu_gone).
 */
int hbm_nvml_query(struct hbm_nvml *h, size_t i, struct hbm_nvml_report *r);
void hbm_nvml_report_free(struct hbm_nvml_report *r);

/* Queries every present GPU and hands each fact to the callbacks. */
void hbm_nvml_reconcile(struct hbm_nvml *h);
/* The same for GPU @i alone (a GPU fallen off the bus: ops->gpu_gone). */
void hbm_nvml_reconcile_gpu(struct hbm_nvml *h, size_t i);

/*
 * Starts the event thread for every present GPU: returns the fd to watch
 * for input (call hbm_nvml_dispatch() when it is readable), or -errno
 * (-ENOTSUP: no GPU has an event NVML can report, logged; -EALREADY: started).
 */
int hbm_nvml_events_start(struct hbm_nvml *h);
/*
 * Hands what the threads heard and read to the callbacks, at most a batch a
 * call (the fd stays readable while more wait: watch it level-triggered);
 * 0, or -errno once the events stopped for good (logged once; the fd stays
 * open: the reads still come back on it).  The fd stays the same for the
 * handle's life, also when the thread is restarted without a GPU that fell
 * off the bus.
 */
int hbm_nvml_dispatch(struct hbm_nvml *h);
/*
 * Queues GPU @i to be read again by the reader thread, off the caller's
 * thread: its facts come back through hbm_nvml_dispatch() on the events' fd
 * as hbm_nvml_reconcile_gpu() hands them (pending, page_retired, counts; or
 * gpu_gone).  1 queued, 0 already waiting in the queue (once is enough),
 * -ENODEV a GPU gone or unknown, -ENOTCONN no events' fd (events not
 * started), or -errno of a reader that cannot start (logged; the GPU
 * stays queued for the reader a later call starts).
 */
int hbm_nvml_reread(struct hbm_nvml *h, size_t i);
/*
 * Whether the reader has begun a GPU's read that has not come back (as far
 * as hbm_nvml_dispatch() has heard): then its GPU's index and the read's
 * serial number, which each read begun moves on by one.  A reader that
 * ended unasked (its record could not be sent) is said here, or at the next
 * dispatch or reread, once, at LOG_ERR: its read is not out any more.
 */
bool hbm_nvml_read_outstanding(struct hbm_nvml *h, size_t *gpu, uint64_t *serial);

const char *hbm_nvml_cause_name(enum hbm_nvml_cause cause);
const char *hbm_nvml_status_name(enum hbm_nvml_status st);

#endif /* HBM_NVML_SOURCE_H */
