// SPDX-License-Identifier: GPL-2.0
/*
 * The NVML source: what NVIDIA's management library says about the GPUs.
 *
 * What it does:
 *  - dlopen()s libnvidia-ml.so.1 (the driver installs it; nothing NVIDIA is
 *    linked in), so a node without NVIDIA runs unchanged: one info line.
 *  - discovers each GPU: UUID (the stable identity), PCI bus id, memory size,
 *    name; a GPU that cannot be identified is skipped with one line.
 *  - reconciles: the pages the driver retired, per cause, with their times
 *    (nvmlDeviceGetRetiredPages_v2), whether retirements are pending
 *    (..PendingStatus), remapped rows (corrected, uncorrected, pending,
 *    failure: nvmlDeviceGetRemappedRows) and the ECC totals.
 *  - hears the live events NVML offers for ECC and Xids
 *    (nvmlDeviceRegisterEvents with SingleBitEccError, DoubleBitEccError,
 *    XidCriticalError; nvmlEventSetWait_v2).
 *
 * What it must not do: change anything on a GPU (no reset, no ECC or
 * retirement setting, no counter clearing: read-only calls only), block the
 * daemon's loop, crash or stop the daemon because a GPU or the library
 * misbehaves, or interpret the facts (an Xid's meaning, health: the core's).
 * NOT_SUPPORTED is a fact about a GPU (Hopper has no page retirement, only
 * row remapping; MIG hides remapped rows), not an error; GPU_IS_LOST means
 * the GPU fell off the bus: it is gone (ops->gpu_gone), once, and its
 * handle is never used again.  Any other failing call is one log line
 * naming the call, the GPU and NVML's own error string, and nothing else.
 *
 * Events and the loop: NVML has no pollable descriptor; nvmlEventSetWait_v2
 * blocks.  One thread per handle (never one per request) waits on one event
 * set holding every GPU, with a bounded timeout so that it sees a stop
 * request within WAIT_MS, and hands each record over a SOCK_SEQPACKET
 * socketpair whose other end the loop watches (records are datagrams, so
 * none is ever split; MSG_NOSIGNAL plus shutdown() wakes a thread blocked on
 * a full socket at close).  The thread touches no state but the event set
 * and the (then immutable) handle list; every callback runs in the loop's
 * thread in hbm_nvml_dispatch().  When the wait reports GPU_IS_LOST the
 * thread ends; the loop finds which GPU answers GPU_IS_LOST, declares it
 * gone and starts the thread again on a new set without it.  Any other
 * failure of the wait ends live NVML events for good, with one line.
 *
 * Reads after start: a GPU's tables read again after its DBE or HBM Xid
 * (hbm_nvml_reread(), from nvml_facts.c) are a dozen NVML calls, and on a
 * wedged GPU one of them can block for as long as the driver waits on the
 * GPU; on the loop that would stop everything the daemon does (kernel
 * events, rank recovery, the control socket) until systemd's watchdog
 * kills it.  So the loop makes no NVML read after start: one reader thread
 * (never one per request) takes the GPUs from a queue (a GPU waiting there
 * is not queued twice), one at a time, and hands each read over the same
 * socketpair as the events: first a record that it began (the loop then
 * knows which GPU's read is outstanding: hbm_nvml_read_outstanding()),
 * then the struct reading it filled (the report with its malloc'd pages,
 * the lines to log, whether the GPU answered GPU_IS_LOST), whose pointer
 * the loop takes over.  The thread reads only what is immutable while it
 * runs (the library's functions, the GPU list, each GPU's handle, UUID and
 * bus id) and each GPU's atomic "gone" flag (a GPU found gone is never
 * asked again); the queue is under a mutex; every callback, the logging and
 * gpu_gone included, runs in the loop's thread in hbm_nvml_dispatch().
 * nvml.h says only that "NVML is thread-safe so it is safe to make
 * simultaneous NVML calls from multiple threads" (11.8, its introduction),
 * not that calls on one GPU do not wait for another's; the reader reads one
 * GPU at a time, so the others' reads wait behind a hung one (the events
 * do not: their thread is another).  The reads at start
 * (hbm_nvml_reconcile()) stay in the caller's thread: see nvml_facts.c.
 * Still on the loop after start: the few calls that follow a wait's
 * GPU_IS_LOST (lost(): which GPU answers it, the event set built anew).
 * They read no GPU's tables, but a GPU wedged at that moment would hold
 * the loop there too.
 *
 * Closing joins both threads with a bound (JOIN_MS): a thread stuck in an
 * NVML call is not cancelled (NVML is closed code that documents no
 * cancellation point and no cleanup: a thread cancelled inside it could
 * leave the library's locks held and the driver's request half done, and
 * nvmlShutdown() would then hang or worse), so it is left where it is,
 * said in one line, and the handle, the library and its socket are left
 * too (freeing them under the thread would be a use after free): the
 * process exits next, which ends the thread and releases the driver's
 * files.  Close then returns true, and the process must end with _exit():
 * exit() would run the atexit handlers and the library's ELF destructors
 * (it is still loaded: no dlclose()) while the thread runs inside it.
 *
 * The interface, from nvml.h of Debian bookworm non-free's libnvidia-ml-dev
 * 11.8.86 (scripts/deps.sh), built with NVML_NO_UNVERSIONED_FUNC_DEFS so that
 * every name below is the exported symbol itself.  Each pointer's type is
 * __typeof__ of that header's prototype, so a wrong signature does not
 * compile.  Every function used is in 11.8, and has the same prototype in
 * the 13.0 header the 580 drivers ship (compared with NVIDIA/go-nvml
 * pkg/nvml/nvml.h, NVML_API_VERSION 13, commit 2f9e261): NVML keeps a
 * function's ABI for good and gives a changed one a new versioned name
 * (_v2, _v3: hence nvmlInit_v2, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3,
 * nvmlEventSetWait_v2), and the structs used (nvmlPciInfo_t, nvmlMemory_t,
 * nvmlEventData_t) are unchanged in 13.0.  Functions a GPU's facts need
 * but that an older library may lack (remapped rows: 450 and later) are
 * optional: missing, that fact is reported as such, in one line at open.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/socket.h>

#include "nvml_source.h"

/* How long the event thread waits before it looks for a stop request. */
#define WAIT_MS 1000
/*
 * How long closing waits for each thread to end: the event thread sees the
 * stop within WAIT_MS, the reader at the end of its read; a read longer
 * than this is a stuck GPU's, and the process exits without it.  Well
 * within systemd's default TimeoutStopSec (90 s, systemd-system.conf(5)).
 */
#define JOIN_MS 5000
/* How long the reader waits before it sends again into a socket out of memory. */
#define RESEND_MS 100
/* The most lines one read logs: each of its calls fails once at most (5). */
#define READ_LINES 8
/* One line, said (say()) or noted by a thread for the loop to say (note()). */
#define LINE_LEN 512
/* The events hbmguard wants (nvml.h, nvmlEventType). */
#define EVENT_MASK (nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | \
		    nvmlEventTypeXidCriticalError)

/* Without these NVML tells us nothing: no GPU, no identity. */
#define NVML_REQUIRED(X) \
	X(nvmlInit_v2) X(nvmlShutdown) X(nvmlErrorString) X(nvmlDeviceGetCount_v2) \
	X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetUUID) X(nvmlDeviceGetPciInfo_v3) \
	X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetName)
/* Each of these gives one fact; a library lacking one reports it MISSING. */
#define NVML_OPTIONAL(X) \
	X(nvmlSystemGetDriverVersion) X(nvmlDeviceGetRetiredPages_v2) \
	X(nvmlDeviceGetRetiredPagesPendingStatus) X(nvmlDeviceGetRemappedRows) \
	X(nvmlDeviceGetTotalEccErrors) X(nvmlDeviceGetSupportedEventTypes) \
	X(nvmlEventSetCreate) X(nvmlDeviceRegisterEvents) X(nvmlEventSetWait_v2) \
	X(nvmlEventSetFree)

struct nvml_fns {
#define FN_FIELD(f) __typeof__(f) *f;
	NVML_REQUIRED(FN_FIELD)
	NVML_OPTIONAL(FN_FIELD)
#undef FN_FIELD
};

/*
 * One read of a GPU's facts, as the reader (or, at start, the caller) made
 * it: nothing in it is said or handed to a callback until apply() does, in
 * the loop's thread.
 */
struct reading {
	size_t gpu;
	bool lost;		/* a call answered GPU_IS_LOST: the GPU is gone */
	struct hbm_nvml_report r;
	int nr_lines;
	struct {
		int prio;
		char msg[LINE_LEN];
	} lines[READ_LINES];
};

/* What the threads hand to the loop. */
enum { REC_EVENT, REC_LOST, REC_FAILED, REC_READING, REC_READ };
struct rec {
	int32_t kind;
	int32_t gpu;		/* index into h->gpus, -1 if NVML named another device */
	uint32_t ret;		/* nvmlReturn_t of a failed wait */
	uint32_t gen;		/* REC_READING, REC_READ: the reader's h->reader_gen */
	uint64_t type;
	uint64_t data;
	struct reading *rd;	/* REC_READ: the loop's from then on */
};

struct gpu {
	struct hbm_nvml_gpu pub;
	nvmlDevice_t dev;
	atomic_bool gone;	/* !pub.present, for the reader: not asked again */
	bool no_events;		/* its registration spoiled a set: not asked again */
	bool in_set;		/* registered in h->set */
};

struct hbm_nvml {
	void *lib;
	const char *library;
	struct nvml_fns fn;
	struct hbm_nvml_ops ops;
	void *ctx;
	char driver[96];
	struct gpu *gpus;
	size_t nr;
	/* events */
	int pair[2];		/* [0] the loop's end, [1] the thread's */
	nvmlEventSet_t set;
	pthread_t thread;
	bool running;		/* a thread was started and not joined */
	bool events_over;
	atomic_bool stop;
	/* the reader: its queue under lock, a GPU in it once (queued[]) */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	size_t *queue, head, len;
	bool *queued;
	bool reader_stop;
	pthread_t reader;
	bool reader_running;
	bool reader_start_said;	/* it could not be started, and that was said */
	uint32_t reader_gen;	/* the reader's: moves on when one ended unasked */
	atomic_int reader_ended;	/* its errno when it ended unasked: reader_gone() */
	/* the loop's view: the GPU whose read began and did not come back, or -1 */
	long reading;
	uint64_t reads_begun;
	bool stuck;		/* close left a thread in NVML: see above */
};

static void say(const struct hbm_nvml *h, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(const struct hbm_nvml *h, int prio, const char *fmt, ...)
{
	char msg[LINE_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (h->ops.log)
		h->ops.log(h->ctx, prio, msg);
	else
		fprintf(stderr, "%s\n", msg);
}

static const char *nvml_err(const struct hbm_nvml *h, nvmlReturn_t ret)
{
	const char *s = h->fn.nvmlErrorString(ret);

	return s ? s : "unknown NVML error";
}

/* The GPU fell off the bus: a fact, said once. */
static void gone(struct hbm_nvml *h, struct gpu *g)
{
	if (!g->pub.present)
		return;
	g->pub.present = false;
	atomic_store(&g->gone, true);
	say(h, LOG_WARNING, "nvml: GPU %s (%s) has fallen off the bus: gone",
	    g->pub.uuid, g->pub.pci);
	if (h->ops.gpu_gone)
		h->ops.gpu_gone(h->ctx, &g->pub);
}

/* A line of a reading, said when the loop applies it (any thread). */
static void note(struct reading *rd, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct reading *rd, int prio, const char *fmt, ...)
{
	va_list ap;

	if (rd->nr_lines >= READ_LINES)
		return;		/* cannot be: each call fails once */
	rd->lines[rd->nr_lines].prio = prio;
	va_start(ap, fmt);
	vsnprintf(rd->lines[rd->nr_lines++].msg, sizeof(rd->lines[0].msg), fmt, ap);
	va_end(ap);
}

/*
 * One call's result as a fact, in @rd (any thread).  GPU_IS_LOST marks the
 * reading lost, and its caller stops asking this GPU anything; other
 * failures are one line.
 */
static enum hbm_nvml_status status_of(const struct hbm_nvml *h, const struct gpu *g,
				      const char *call, nvmlReturn_t ret, struct reading *rd)
{
	switch (ret) {
	case NVML_SUCCESS:
		return HBM_NVML_OK;
	case NVML_ERROR_NOT_SUPPORTED:
		return HBM_NVML_UNSUPPORTED;
	case NVML_ERROR_GPU_IS_LOST:
		rd->lost = true;
		return HBM_NVML_FAILED;
	default:
		note(rd, LOG_ERR, "nvml: %s on GPU %s (%s) failed: %s", call, g->pub.uuid,
		     g->pub.pci, nvml_err(h, ret));
		return HBM_NVML_FAILED;
	}
}

/* What @rd found out besides its report, said (the loop's thread). */
static void tell(struct hbm_nvml *h, const struct reading *rd)
{
	int k;

	for (k = 0; k < rd->nr_lines; k++)
		say(h, rd->lines[k].prio, "%s", rd->lines[k].msg);
	if (rd->lost)
		gone(h, &h->gpus[rd->gpu]);
}

/* status_of() for a call the loop's thread makes, told at once. */
static enum hbm_nvml_status outcome(struct hbm_nvml *h, struct gpu *g, const char *call,
				    nvmlReturn_t ret)
{
	struct reading rd = { .gpu = (size_t)(g - h->gpus) };
	enum hbm_nvml_status st = status_of(h, g, call, ret, &rd);

	tell(h, &rd);
	return st;
}

static bool resolve(struct hbm_nvml *h)
{
	char missing[256] = "";

#define FN_REQUIRED(f)								\
	h->fn.f = (__typeof__(h->fn.f))dlsym(h->lib, #f);			\
	if (!h->fn.f) {								\
		say(h, LOG_ERR, "nvml: %s has no %s: NVML not used", h->library, #f); \
		return false;							\
	}
#define FN_OPTIONAL(f)								\
	h->fn.f = (__typeof__(h->fn.f))dlsym(h->lib, #f);			\
	if (!h->fn.f)								\
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), \
			 " %s", #f);
	NVML_REQUIRED(FN_REQUIRED)
	NVML_OPTIONAL(FN_OPTIONAL)
#undef FN_REQUIRED
#undef FN_OPTIONAL
	if (missing[0])
		say(h, LOG_INFO, "nvml: %s is older than hbmguard knows and lacks:%s; "
		    "the facts they give are not read", h->library, missing);
	return true;
}

/* One GPU's identity, or false (one line said why) to skip it. */
static bool identify(struct hbm_nvml *h, unsigned int index, struct gpu *g)
{
	nvmlPciInfo_t pci;
	nvmlMemory_t mem;
	nvmlReturn_t ret;
	const char *call;

	memset(g, 0, sizeof(*g));
	g->pub.index = index;
	ret = h->fn.nvmlDeviceGetHandleByIndex_v2(index, &g->dev);
	if (ret == NVML_ERROR_GPU_IS_LOST) {
		say(h, LOG_WARNING, "nvml: GPU %u has fallen off the bus: skipped", index);
		return false;
	}
	if (ret != NVML_SUCCESS) {
		say(h, LOG_ERR, "nvml: nvmlDeviceGetHandleByIndex_v2(%u) failed: %s; GPU skipped",
		    index, nvml_err(h, ret));
		return false;
	}
	call = "nvmlDeviceGetUUID";
	ret = h->fn.nvmlDeviceGetUUID(g->dev, g->pub.uuid, sizeof(g->pub.uuid));
	if (ret == NVML_SUCCESS) {
		call = "nvmlDeviceGetPciInfo_v3";
		ret = h->fn.nvmlDeviceGetPciInfo_v3(g->dev, &pci);
	}
	if (ret == NVML_SUCCESS) {
		call = "nvmlDeviceGetMemoryInfo";
		ret = h->fn.nvmlDeviceGetMemoryInfo(g->dev, &mem);
	}
	if (ret == NVML_SUCCESS) {
		call = "nvmlDeviceGetName";
		ret = h->fn.nvmlDeviceGetName(g->dev, g->pub.name, sizeof(g->pub.name));
	}
	if (ret == NVML_ERROR_GPU_IS_LOST) {
		say(h, LOG_WARNING, "nvml: GPU %u has fallen off the bus: skipped", index);
		return false;
	}
	if (ret != NVML_SUCCESS) {
		say(h, LOG_ERR, "nvml: %s on GPU %u failed: %s; GPU skipped", call, index,
		    nvml_err(h, ret));
		return false;
	}
	g->pub.uuid[sizeof(g->pub.uuid) - 1] = '\0';
	g->pub.name[sizeof(g->pub.name) - 1] = '\0';
	memcpy(g->pub.pci, pci.busId, sizeof(g->pub.pci));
	g->pub.pci[sizeof(g->pub.pci) - 1] = '\0';
	g->pub.memory = mem.total;
	g->pub.present = true;
	return true;
}

struct hbm_nvml *hbm_nvml_open(const char *library, const struct hbm_nvml_ops *ops, void *ctx)
{
	struct hbm_nvml *h = calloc(1, sizeof(*h));
	unsigned int count, i;
	nvmlReturn_t ret;

	if (!h)
		return NULL;
	h->library = library;
	h->ops = *ops;
	h->ctx = ctx;
	h->pair[0] = h->pair[1] = -1;
	h->reading = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	h->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (!h->lib) {
		say(h, LOG_INFO, "nvml: no NVIDIA management library (%s): NVIDIA GPUs are not "
		    "watched through NVML", dlerror());
		free(h);
		return NULL;
	}
	if (!resolve(h))
		goto close_lib;
	ret = h->fn.nvmlInit_v2();
	if (ret != NVML_SUCCESS) {
		say(h, LOG_ERR, "nvml: nvmlInit_v2 failed: %s: NVML not used", nvml_err(h, ret));
		goto close_lib;
	}
	if (h->fn.nvmlSystemGetDriverVersion &&
	    h->fn.nvmlSystemGetDriverVersion(h->driver, sizeof(h->driver)) != NVML_SUCCESS)
		h->driver[0] = '\0';
	h->driver[sizeof(h->driver) - 1] = '\0';
	ret = h->fn.nvmlDeviceGetCount_v2(&count);
	if (ret != NVML_SUCCESS) {
		say(h, LOG_ERR, "nvml: nvmlDeviceGetCount_v2 failed: %s: NVML not used",
		    nvml_err(h, ret));
		goto shutdown;
	}
	h->gpus = calloc(count ? count : 1, sizeof(*h->gpus));
	h->queue = calloc(count ? count : 1, sizeof(*h->queue));
	h->queued = calloc(count ? count : 1, sizeof(*h->queued));
	if (!h->gpus || !h->queue || !h->queued) {
		say(h, LOG_ERR, "nvml: out of memory for %u GPUs", count);
		goto shutdown;
	}
	for (i = 0; i < count; i++) {
		if (!identify(h, i, &h->gpus[h->nr]))
			continue;
		if (h->ops.gpu_seen)
			h->ops.gpu_seen(h->ctx, &h->gpus[h->nr].pub);
		h->nr++;
	}
	return h;

shutdown:
	h->fn.nvmlShutdown();
close_lib:
	dlclose(h->lib);
	free(h->queued);
	free(h->queue);
	free(h->gpus);
	free(h);
	return NULL;
}

const char *hbm_nvml_driver_version(const struct hbm_nvml *h)
{
	return h->driver;
}

size_t hbm_nvml_count(const struct hbm_nvml *h)
{
	return h->nr;
}

const struct hbm_nvml_gpu *hbm_nvml_gpu(const struct hbm_nvml *h, size_t i)
{
	return i < h->nr ? &h->gpus[i].pub : NULL;
}

/*
 * The most retired pages one cause's list is read with.  nvml.h gives no
 * limit; the driver answers from a list of at most
 * NV2080_CTRL_FB_OFFLINED_PAGES_MAX_PAGES (64) pages
 * (src/common/sdk/nvidia/inc/ctrl/ctrl2080/ctrl2080fb.h, open-gpu-kernel-
 * modules 595.45.04).  Sixteen times that leaves room for a driver that
 * keeps more, and bounds what a broken library's count costs: 16 KiB here,
 * 2048 RETIREs into the module at start.
 */
#define MAX_RETIRED_PAGES 1024U

/*
 * One cause's retired pages; the list may grow between the two calls.
 * nvml.h: *pageCount in, the buffers' size; out, the number of pages, or
 * with INSUFFICIENT_SIZE the size needed.  A count the buffers cannot hold
 * after SUCCESS, or one above MAX_RETIRED_PAGES, is a broken library's:
 * the pages are not read, in one line.
 */
static enum hbm_nvml_status read_pages(const struct hbm_nvml *h, const struct gpu *g,
				       nvmlPageRetirementCause_t cause, struct hbm_nvml_pages *p,
				       struct reading *rd)
{
	unsigned int cap = 64, n;
	nvmlReturn_t ret;
	int tries;

	if (!h->fn.nvmlDeviceGetRetiredPages_v2)
		return HBM_NVML_MISSING;
	for (tries = 0; tries < 4; tries++) {
		unsigned long long *addr = calloc(cap, sizeof(*addr));
		unsigned long long *time = calloc(cap, sizeof(*time));

		if (!addr || !time) {
			free(addr);
			free(time);
			note(rd, LOG_ERR, "nvml: out of memory for %u retired pages", cap);
			return HBM_NVML_FAILED;
		}
		n = cap;
		ret = h->fn.nvmlDeviceGetRetiredPages_v2(g->dev, cause, &n, addr, time);
		if (ret == NVML_SUCCESS && n <= cap) {
			/* unsigned long long and uint64_t are both 64 bits here. */
			_Static_assert(sizeof(*addr) == sizeof(*p->addr), "64-bit addresses");
			p->nr = n;
			p->addr = (uint64_t *)addr;
			p->time = (uint64_t *)time;
			return HBM_NVML_OK;
		}
		free(addr);
		free(time);
		if (ret != NVML_SUCCESS && ret != NVML_ERROR_INSUFFICIENT_SIZE)
			return status_of(h, g, "nvmlDeviceGetRetiredPages_v2", ret, rd);
		if (ret == NVML_SUCCESS || n > MAX_RETIRED_PAGES) {
			note(rd, LOG_ERR, "nvml: nvmlDeviceGetRetiredPages_v2 on GPU %s (%s) "
			     "answered %s with a count of %u for a buffer of %u (at most %u read): "
			     "retired pages not read", g->pub.uuid, g->pub.pci, nvml_err(h, ret), n,
			     cap, MAX_RETIRED_PAGES);
			return HBM_NVML_FAILED;
		}
		/* n <= MAX_RETIRED_PAGES: no overflow */
		cap = n > cap ? n + 16 : cap * 2;
		if (cap > MAX_RETIRED_PAGES)
			cap = MAX_RETIRED_PAGES;
	}
	note(rd, LOG_ERR, "nvml: nvmlDeviceGetRetiredPages_v2 on GPU %s (%s) kept growing: "
	     "retired pages not read", g->pub.uuid, g->pub.pci);
	return HBM_NVML_FAILED;
}

void hbm_nvml_report_free(struct hbm_nvml_report *r)
{
	int c;

	for (c = 0; c < HBM_NVML_CAUSES; c++) {
		free(r->retired[c].addr);
		free(r->retired[c].time);
	}
	memset(r, 0, sizeof(*r));
}

static void read_ecc(const struct hbm_nvml *h, const struct gpu *g, struct reading *rd)
{
	struct hbm_nvml_report *r = &rd->r;
	static const nvmlMemoryErrorType_t type[2] = {
		[HBM_NVML_CORRECTED] = NVML_MEMORY_ERROR_TYPE_CORRECTED,
		[HBM_NVML_UNCORRECTED] = NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
	};
	static const nvmlEccCounterType_t counter[2] = {
		[HBM_NVML_VOLATILE] = NVML_VOLATILE_ECC, [HBM_NVML_AGGREGATE] = NVML_AGGREGATE_ECC,
	};
	int t, c;

	r->ecc_status = HBM_NVML_MISSING;
	if (!h->fn.nvmlDeviceGetTotalEccErrors)
		return;
	for (t = 0; t < 2; t++)
		for (c = 0; c < 2; c++) {
			unsigned long long v = 0;

			r->ecc_status = status_of(h, g, "nvmlDeviceGetTotalEccErrors",
						  h->fn.nvmlDeviceGetTotalEccErrors(g->dev, type[t],
										    counter[c], &v),
						  rd);
			if (r->ecc_status != HBM_NVML_OK)
				return;
			r->ecc[t][c] = v;
		}
}

/*
 * Every fact of GPU @g into @rd, said nowhere (any thread: the reader's, or
 * the caller's at start).  A lost GPU is asked nothing more, its report freed.
 */
static void read_gpu(const struct hbm_nvml *h, const struct gpu *g, struct reading *rd)
{
	struct hbm_nvml_report *r = &rd->r;
	unsigned int corr, unc, rpending, failure;
	nvmlEnableState_t pending;
	int c;

	for (c = 0; c < HBM_NVML_CAUSES && !rd->lost; c++) {
		/* A call that failed for one cause is not tried (nor said) again. */
		if (c && r->retired[0].status == HBM_NVML_FAILED) {
			r->retired[c].status = HBM_NVML_FAILED;
			continue;
		}
		r->retired[c].status = read_pages(h, g, (nvmlPageRetirementCause_t)c,
						  &r->retired[c], rd);
	}

	r->pending_status = HBM_NVML_MISSING;
	if (!rd->lost && h->fn.nvmlDeviceGetRetiredPagesPendingStatus) {
		r->pending_status = status_of(h, g, "nvmlDeviceGetRetiredPagesPendingStatus",
			h->fn.nvmlDeviceGetRetiredPagesPendingStatus(g->dev, &pending), rd);
		r->pending = r->pending_status == HBM_NVML_OK && pending == NVML_FEATURE_ENABLED;
	}

	r->remap_status = HBM_NVML_MISSING;
	if (!rd->lost && h->fn.nvmlDeviceGetRemappedRows) {
		r->remap_status = status_of(h, g, "nvmlDeviceGetRemappedRows",
			h->fn.nvmlDeviceGetRemappedRows(g->dev, &corr, &unc, &rpending, &failure),
			rd);
		if (r->remap_status == HBM_NVML_OK) {
			r->remap_corrected = corr;
			r->remap_uncorrected = unc;
			r->remap_pending = rpending;
			r->remap_failure = failure;
		}
	}

	if (!rd->lost)
		read_ecc(h, g, rd);
	if (rd->lost)
		hbm_nvml_report_free(r);
}

int hbm_nvml_query(struct hbm_nvml *h, size_t i, struct hbm_nvml_report *r)
{
	struct reading rd = { .gpu = i };

	memset(r, 0, sizeof(*r));
	if (i >= h->nr || !h->gpus[i].pub.present)
		return -ENODEV;
	read_gpu(h, &h->gpus[i], &rd);
	tell(h, &rd);
	if (rd.lost)
		return -ENODEV;
	*r = rd.r;
	return 0;
}

/* A GPU's facts to the callbacks, in the order nvml_source.h gives; @r freed. */
static void hand_over(struct hbm_nvml *h, size_t i, struct hbm_nvml_report *r)
{
	const struct hbm_nvml_gpu *g = &h->gpus[i].pub;
	uint32_t k;
	int c;

	/* First: whether the pages that follow may be pending (nvml_source.h). */
	if (r->pending_status == HBM_NVML_OK && h->ops.pending)
		h->ops.pending(h->ctx, g, r->pending);
	for (c = 0; c < HBM_NVML_CAUSES; c++)
		for (k = 0; h->ops.page_retired && k < r->retired[c].nr; k++)
			h->ops.page_retired(h->ctx, g, (enum hbm_nvml_cause)c,
					    r->retired[c].addr[k], r->retired[c].time[k]);
	if (h->ops.counts)
		h->ops.counts(h->ctx, g, r);
	hbm_nvml_report_free(r);
}

void hbm_nvml_reconcile_gpu(struct hbm_nvml *h, size_t i)
{
	struct hbm_nvml_report r;

	if (!hbm_nvml_query(h, i, &r))	/* -ENODEV for an index past the GPUs too */
		hand_over(h, i, &r);
}

void hbm_nvml_reconcile(struct hbm_nvml *h)
{
	size_t i;

	for (i = 0; i < h->nr; i++)
		hbm_nvml_reconcile_gpu(h, i);
}

static int gpu_of(const struct hbm_nvml *h, nvmlDevice_t dev)
{
	size_t i;

	for (i = 0; i < h->nr; i++)
		if (h->gpus[i].dev == dev)
			return (int)i;
	return -1;
}

/* The one waiting thread: no state but the set and the immutable GPU list. */
static void *waiter(void *arg)
{
	struct hbm_nvml *h = arg;

	while (!atomic_load(&h->stop)) {
		nvmlEventData_t d;
		nvmlReturn_t ret;
		struct rec rec = { .kind = REC_EVENT, .gpu = -1 };

		memset(&d, 0, sizeof(d));
		ret = h->fn.nvmlEventSetWait_v2(h->set, &d, WAIT_MS);
		if (ret == NVML_ERROR_TIMEOUT)
			continue;
		if (ret == NVML_SUCCESS) {
			rec.gpu = gpu_of(h, d.device);
			rec.type = d.eventType;
			rec.data = d.eventData;
		} else {
			rec.kind = ret == NVML_ERROR_GPU_IS_LOST ? REC_LOST : REC_FAILED;
			rec.ret = ret;
		}
		if (send(h->pair[1], &rec, sizeof(rec), MSG_NOSIGNAL) != sizeof(rec))
			break;
		if (rec.kind != REC_EVENT)
			break;
	}
	return NULL;
}

/*
 * A thread of @h's with no signal (they stay with the loop's signalfd),
 * named @name (at most 15 characters, pthread_setname_np(3)) for ps and
 * gdb.  A failure is said unless *@said; then *@said (NULL: always said).
 */
static int start_thread(struct hbm_nvml *h, pthread_t *t, void *(*fn)(void *), const char *name,
			bool *said)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(t, NULL, fn, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		pthread_setname_np(*t, name);	/* only a name: its failure changes nothing */
	else if (!said || !*said)
		say(h, LOG_ERR, "nvml: cannot start the thread %s: %s", name, strerror(err));
	if (said)
		*said = err != 0;
	return -err;
}

static void events_join(struct hbm_nvml *h)
{
	if (h->running) {
		atomic_store(&h->stop, true);
		pthread_join(h->thread, NULL);
		h->running = false;
	}
	if (h->set) {
		h->fn.nvmlEventSetFree(h->set);
		h->set = NULL;
	}
}

/*
 * The set of every present GPU that can report one of EVENT_MASK, and its
 * thread.  nvml.h, nvmlDeviceRegisterEvents: "If function reports
 * NVML_ERROR_UNKNOWN, event set is in undefined state and should be freed";
 * NOT_SUPPORTED leaves it usable.  So a GPU whose registration fails
 * otherwise (said once, by outcome()) is left out and the set built anew.
 */
static int events_run(struct hbm_nvml *h)
{
	nvmlReturn_t ret;
	size_t i, registered;
	int err;

again:
	registered = 0;
	for (i = 0; i < h->nr; i++)
		h->gpus[i].in_set = false;
	ret = h->fn.nvmlEventSetCreate(&h->set);
	if (ret != NVML_SUCCESS) {
		say(h, LOG_ERR, "nvml: nvmlEventSetCreate failed: %s: no live NVML events",
		    nvml_err(h, ret));
		h->set = NULL;
		return -EIO;
	}
	for (i = 0; i < h->nr; i++) {
		struct gpu *g = &h->gpus[i];
		unsigned long long mask = EVENT_MASK, supported;

		if (!g->pub.present || g->no_events)
			continue;
		if (h->fn.nvmlDeviceGetSupportedEventTypes) {
			if (outcome(h, g, "nvmlDeviceGetSupportedEventTypes",
				    h->fn.nvmlDeviceGetSupportedEventTypes(g->dev, &supported)) !=
			    HBM_NVML_OK)
				continue;
			mask &= supported;
		}
		if (!mask)
			continue;
		ret = h->fn.nvmlDeviceRegisterEvents(g->dev, mask, h->set);
		switch (outcome(h, g, "nvmlDeviceRegisterEvents", ret)) {
		case HBM_NVML_OK:
			g->in_set = true;
			registered++;
			break;
		case HBM_NVML_UNSUPPORTED:
			break;
		default:
			g->no_events = true;
			h->fn.nvmlEventSetFree(h->set);
			h->set = NULL;
			goto again;	/* one GPU fewer each time */
		}
	}
	if (!registered) {
		say(h, LOG_INFO, "nvml: no GPU reports ECC or Xid events: no live NVML events");
		events_join(h);
		return -ENOTSUP;
	}
	atomic_store(&h->stop, false);
	err = start_thread(h, &h->thread, waiter, "hbm-nvml-events", NULL);
	if (err) {
		events_join(h);
		return err;
	}
	h->running = true;
	return 0;
}

int hbm_nvml_events_start(struct hbm_nvml *h)
{
	int err;

	if (!h->fn.nvmlEventSetCreate || !h->fn.nvmlDeviceRegisterEvents ||
	    !h->fn.nvmlEventSetWait_v2 || !h->fn.nvmlEventSetFree)
		return -ENOTSUP;	/* said at open */
	/* A second thread on a second set would outlive close(): one only. */
	if (h->running || h->events_over)
		return -EALREADY;
	if (h->pair[0] < 0 &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h->pair) < 0) {
		err = -errno;
		say(h, LOG_ERR, "nvml: socketpair: %s", strerror(errno));
		h->pair[0] = h->pair[1] = -1;
		return err;
	}
	err = events_run(h);
	return err ? err : h->pair[0];
}

/* GPU @i into the reader's queue unless it waits there: whether it was put. */
static bool queue_gpu(struct hbm_nvml *h, size_t i)
{
	if (h->queued[i])
		return false;
	h->queue[(h->head + h->len) % h->nr] = i;
	h->len++;
	h->queued[i] = true;
	return true;
}

/*
 * A record of the reader's for GPU @i could not be sent (@err); the GPU goes
 * back to the queue.  ENOBUFS, ENOMEM: the socket is out of memory for now,
 * and the reader tries again RESEND_MS later (or at a reread's wake-up),
 * rather than end: a reread that found it running started no other, and
 * what it asked would wait for the next reread.  Anything else (EPIPE: the
 * loop's end shut, at close) ends it, with the flag set under the lock that
 * hbm_nvml_reread() queues under, so that a reread after it starts another.
 */
static bool reader_ends(struct hbm_nvml *h, size_t i, int err)
{
	bool ends = err != ENOBUFS && err != ENOMEM;
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += RESEND_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&h->lock);
	queue_gpu(h, i);
	if (ends)
		atomic_store(&h->reader_ended, err ? err : EIO);
	else if (!h->reader_stop)
		pthread_cond_clockwait(&h->wake, &h->lock, CLOCK_MONOTONIC, &until);
	pthread_mutex_unlock(&h->lock);
	return ends;	/* the thread's last act when true: reader_gone() joins it */
}

/*
 * The one reader: a queued GPU at a time, read and handed to the loop
 * (see the top of this file).  Ends when told to, or when a record cannot
 * be sent for good (reader_ends()).
 */
static void *reader(void *arg)
{
	struct hbm_nvml *h = arg;
	uint32_t gen = h->reader_gen;	/* the loop's, set before it started */
	size_t i;

	for (;;) {
		struct rec rec = { .kind = REC_READING, .gen = gen };
		struct reading *rd;

		pthread_mutex_lock(&h->lock);
		while (!h->reader_stop && !h->len)
			pthread_cond_wait(&h->wake, &h->lock);
		if (h->reader_stop) {
			pthread_mutex_unlock(&h->lock);
			break;
		}
		i = h->queue[h->head];
		h->head = (h->head + 1) % h->nr;
		h->len--;
		h->queued[i] = false;	/* an event from now on queues it again */
		pthread_mutex_unlock(&h->lock);
		rec.gpu = (int32_t)i;
		if (send(h->pair[1], &rec, sizeof(rec), MSG_NOSIGNAL) != sizeof(rec)) {
			if (reader_ends(h, i, errno))
				break;
			continue;
		}
		rd = calloc(1, sizeof(*rd));	/* NULL: the loop says so */
		if (rd) {
			rd->gpu = i;
			/* found gone since it was queued: its handle is not used again */
			if (atomic_load(&h->gpus[i].gone))
				rd->lost = true;
			else
				read_gpu(h, &h->gpus[i], rd);
		}
		rec.kind = REC_READ;
		rec.rd = rd;
		if (send(h->pair[1], &rec, sizeof(rec), MSG_NOSIGNAL) != sizeof(rec)) {
			int err = errno;	/* a datagram is sent whole or not at all */

			/* the next try says it lost without asking NVML again */
			if (rd && rd->lost)
				atomic_store(&h->gpus[i].gone, true);
			if (rd)
				hbm_nvml_report_free(&rd->r);
			free(rd);
			if (reader_ends(h, i, err))
				break;
		}
	}
	return NULL;
}

/*
 * A reader that ended unasked (above): said once, joined, and what the loop
 * knew of it cleared (its read out, if any: it will not come back), so that
 * the next hbm_nvml_reread() starts a new one, which reads what is queued.
 * Its records still in the socket are told apart by their generation.
 * Only a reread starts a reader, so a reader that cannot send does not
 * make this spin.
 */
static void reader_gone(struct hbm_nvml *h)
{
	int err;

	if (!h->reader_running)
		return;
	err = atomic_exchange(&h->reader_ended, 0);
	if (!err)
		return;
	pthread_join(h->reader, NULL);	/* it ends right after the flag */
	h->reader_running = false;
	h->reader_gen++;
	h->reading = -1;
	say(h, LOG_ERR, "nvml: the reader thread could not hand a GPU's read over (%s) and "
	    "ended: the next read starts a new one", strerror(err));
}

int hbm_nvml_reread(struct hbm_nvml *h, size_t i)
{
	bool queued;
	int err;

	if (i >= h->nr || !h->gpus[i].pub.present)
		return -ENODEV;
	if (h->pair[0] < 0)
		return -ENOTCONN;	/* no fd to answer on: no events started */
	/*
	 * Queued before a reader is started, so that what is said is what
	 * was found: a reader started first could take a GPU an ended one
	 * had queued again before it was looked at.  A reader that ended
	 * before this said so under the same lock: it is joined next, and
	 * another started.
	 */
	pthread_mutex_lock(&h->lock);
	queued = !queue_gpu(h, i);
	if (!queued)
		pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	reader_gone(h);
	if (!h->reader_running) {
		/* tried again at each reread, said once until it starts */
		err = start_thread(h, &h->reader, reader, "hbm-nvml-read", &h->reader_start_said);
		if (err)
			return err;
		h->reader_running = true;
	}
	return !queued;
}

bool hbm_nvml_read_outstanding(struct hbm_nvml *h, size_t *gpu, uint64_t *serial)
{
	reader_gone(h);
	if (h->reading < 0)
		return false;
	*gpu = (size_t)h->reading;
	*serial = h->reads_begun;
	return true;
}

/* A read come back, in the loop's thread: said, then to the callbacks. */
static void apply(struct hbm_nvml *h, struct reading *rd)
{
	tell(h, rd);	/* GPU_IS_LOST: gone, said once */
	if (!rd->lost && h->gpus[rd->gpu].pub.present)
		hand_over(h, rd->gpu, &rd->r);
	hbm_nvml_report_free(&rd->r);	/* a GPU gone meanwhile: nobody's facts */
	free(rd);
}

static void deliver(struct hbm_nvml *h, const struct rec *rec)
{
	const struct hbm_nvml_gpu *g;
	enum hbm_nvml_event_kind kind;

	if (rec->gpu < 0 || (size_t)rec->gpu >= h->nr) {
		say(h, LOG_WARNING, "nvml: event 0x%llx (data %llu) from a GPU NVML did not "
		    "list: ignored", (unsigned long long)rec->type,
		    (unsigned long long)rec->data);
		return;
	}
	g = &h->gpus[rec->gpu].pub;
	if (rec->type & nvmlEventTypeXidCriticalError)
		kind = HBM_NVML_EVENT_XID;
	else if (rec->type & nvmlEventTypeDoubleBitEccError)
		kind = HBM_NVML_EVENT_DBE;
	else if (rec->type & nvmlEventTypeSingleBitEccError)
		kind = HBM_NVML_EVENT_SBE;
	else {
		say(h, LOG_WARNING, "nvml: event 0x%llx on GPU %s (%s) was not asked for: ignored",
		    (unsigned long long)rec->type, g->uuid, g->pci);
		return;
	}
	if (h->ops.event)
		h->ops.event(h->ctx, g, kind, rec->data);
}

/*
 * The wait said a GPU is lost: find it, then wait again on the others.  A
 * GPU of the set that the loop's own calls already found gone (while the
 * thread waited) is one such GPU too.
 */
static int lost(struct hbm_nvml *h)
{
	size_t i, found = 0;

	events_join(h);
	for (i = 0; i < h->nr; i++) {
		struct gpu *g = &h->gpus[i];
		nvmlPciInfo_t pci;

		if (!g->in_set)
			continue;
		if (!g->pub.present) {
			found++;
			continue;
		}
		if (h->fn.nvmlDeviceGetPciInfo_v3(g->dev, &pci) == NVML_ERROR_GPU_IS_LOST) {
			gone(h, g);
			found++;
		}
	}
	if (!found) {
		say(h, LOG_ERR, "nvml: nvmlEventSetWait_v2 says a GPU is lost but every GPU "
		    "answers: no more live NVML events");
		return -EIO;
	}
	for (i = 0; i < h->nr; i++)
		if (h->gpus[i].pub.present)
			return events_run(h);	/* a failure said why */
	return -ENODEV;		/* every GPU is gone, and each was said */
}

/*
 * The most records one dispatch hands over: the thread refills the socket as
 * fast as the loop empties it, so without a bound an event storm would hold
 * the loop for as long as it lasts.  The fd stays readable for the rest.
 */
#define DISPATCH_BATCH 64

int hbm_nvml_dispatch(struct hbm_nvml *h)
{
	struct rec rec;
	int budget = DISPATCH_BATCH;
	ssize_t n;

	if (h->pair[0] < 0)
		return 0;
	reader_gone(h);
	while (budget-- > 0 &&
	       (n = recv(h->pair[0], &rec, sizeof(rec), MSG_DONTWAIT)) == sizeof(rec)) {
		if (rec.kind == REC_EVENT) {
			deliver(h, &rec);
			continue;
		}
		if (rec.kind == REC_READING) {
			if (rec.gen != h->reader_gen)
				continue;	/* an ended reader's: its read never comes */
			h->reading = rec.gpu;
			h->reads_begun++;
			continue;
		}
		if (rec.kind == REC_READ) {
			if (rec.gen == h->reader_gen)
				h->reading = -1;
			if (rec.rd)
				apply(h, rec.rd);
			else
				say(h, LOG_ERR, "nvml: out of memory for a read of GPU %s: not read",
				    h->gpus[rec.gpu].pub.uuid);
			continue;
		}
		if (rec.kind == REC_LOST && !lost(h))
			continue;
		if (rec.kind == REC_FAILED) {
			events_join(h);
			say(h, LOG_ERR, "nvml: nvmlEventSetWait_v2 failed: %s: no more live "
			    "NVML events", nvml_err(h, (nvmlReturn_t)rec.ret));
		}
		h->events_over = true;
		return -EIO;
	}
	return 0;
}

/*
 * Whether thread @t ended within JOIN_MS (joined), or is left where it is.
 * On CLOCK_MONOTONIC, so that a clock set at stop neither cuts the wait
 * short nor stretches it: pthread_clockjoin_np(), glibc 2.31 and later
 * (<pthread.h>, glibc 2.36 of Debian bookworm).
 */
static bool join_bounded(pthread_t t)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += JOIN_MS / 1000;
	return !pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, &until);
}

/* What the threads sent and the loop did not take: freed, and the reading noted. */
static void drain(struct hbm_nvml *h)
{
	struct rec rec;

	while (recv(h->pair[0], &rec, sizeof(rec), MSG_DONTWAIT) == sizeof(rec)) {
		if (rec.kind == REC_READING)
			h->reading = rec.gpu;
		if (rec.kind != REC_READ)
			continue;
		h->reading = -1;
		if (rec.rd)
			hbm_nvml_report_free(&rec.rd->r);
		free(rec.rd);
	}
}

bool hbm_nvml_close(struct hbm_nvml *h)
{
	bool left = false;

	if (!h)
		return false;
	if (h->pair[0] >= 0) {
		atomic_store(&h->stop, true);
		/* Wakes a thread blocked on a full socket: its send fails. */
		shutdown(h->pair[0], SHUT_RDWR);
	}
	pthread_mutex_lock(&h->lock);
	h->reader_stop = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	/* A thread stuck in NVML: not cancelled, left (see the top of this file). */
	if (h->reader_running && !join_bounded(h->reader))
		left = true;
	if (h->running && !join_bounded(h->thread))	/* also when the reader was left */
		left = true;
	if (h->pair[0] >= 0)
		drain(h);	/* nothing more comes: the socket is shut */
	if (left) {
		if (h->reading >= 0)
			say(h, LOG_WARNING, "nvml: GPU %s (%s) has not answered its read %d s after "
			    "the stop: NVML is left to end with the process",
			    h->gpus[h->reading].pub.uuid, h->gpus[h->reading].pub.pci,
			    JOIN_MS / 1000);
		else
			say(h, LOG_WARNING, "nvml: a call into NVML has not returned %d s after "
			    "the stop: NVML is left to end with the process", JOIN_MS / 1000);
		return true;
	}
	h->reader_running = false;
	h->running = false;	/* joined */
	events_join(h);
	if (h->pair[0] >= 0) {
		close(h->pair[0]);
		close(h->pair[1]);
	}
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	h->fn.nvmlShutdown();
	dlclose(h->lib);
	free(h->queued);
	free(h->queue);
	free(h->gpus);
	free(h);
	return false;
}

const char *hbm_nvml_cause_name(enum hbm_nvml_cause cause)
{
	return cause == HBM_NVML_CAUSE_SBE ? "multiple-sbe" :
	       cause == HBM_NVML_CAUSE_DBE ? "dbe" : "?";
}

const char *hbm_nvml_status_name(enum hbm_nvml_status st)
{
	static const char *const names[] = {
		[HBM_NVML_OK] = "ok", [HBM_NVML_UNSUPPORTED] = "not-supported",
		[HBM_NVML_MISSING] = "not-in-library", [HBM_NVML_FAILED] = "failed",
	};

	return (size_t)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}
