// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd's NVML source: what NVIDIA's management library says about the
 * node's GPUs (nvml_source.c reads it), as the core's facts (core.h), and
 * its live events' fd in the daemon's sd-event loop.
 *
 * What it does: at start, loads the library (none: one info line, and the
 * daemon runs on as before), tells the core every GPU and what its driver
 * already retired and remapped; then hands the live ECC and Xid events to
 * the core as they come.  What it must not do: change anything on a GPU
 * (nvml_source.c makes read-only calls only), block the loop (the one
 * blocking wait and the reads after start are nvml_source.c's threads'),
 * stop the daemon because a GPU or the library misbehaves (a failing call
 * is one line, a GPU lost one line and a DEVICE_GONE), call a sink, or
 * register anything with the module: that is the registrar's (gpus.c), a
 * sink, through the core.
 *
 * Reads after start are nvml_source.c's reader thread's (reread_stale()):
 * the loop never waits on a GPU.  A read out longer than
 * NVML_READ_SLOW_NS is said once, a warning naming the GPU; the others'
 * reads wait behind it, the events and the rest of the daemon do not.
 * The reads at start stay in the loop's thread, before READY=1: the facts
 * from before the daemon ran must be in the table, with .sync START, before
 * it says it is ready (what restores and registers GPUs relies on that
 * order); a GPU that hangs then hangs NVML's discovery in the same thread
 * anyway (nvmlInit_v2, the handles, identities); and systemd's watchdog
 * counts only once the start is complete ("the watchdog is activated when
 * the start-up is completed", systemd.service(5), WatchdogSec=), so what
 * bounds a hung start is TimeoutStartSec=, which restarts the daemon.
 *
 * The library: hbmguardd always loads HBM_NVML_LIBRARY, the soname the
 * driver installs, through the dynamic loader's own search; there is no
 * configuration key, option or environment variable of ours that names
 * another file, so nobody but who may write the system's library
 * directories chooses the code this root daemon runs.  (The loader itself
 * honours LD_LIBRARY_PATH, which a systemd unit gets only from its own
 * file.)  Tests choose the library by the path they pass to
 * nvml_facts_start(): the unit tests the fake's build path, the tier 2
 * guest the fake installed under the soname (tests/kernel/nvml.sh).
 *
 * Which fact each NVML answer becomes:
 *
 *   a GPU NVML lists       DEVICE_SEEN: kind NVIDIA, identity = its UUID,
 *                          pci = NVML's bus id in the kernel's form
 *                          ("0000:3b:00.0"), size = nvmlMemory_t.total,
 *                          page_size NVIDIA_RETIRED_PAGE (below), sync START
 *   a GPU fallen off       DEVICE_GONE
 *   a retired page         PAGES, the driver's hardware address as offset,
 *                          4 KiB long (the driver keeps RM page numbers and
 *                          gives addresses as number << RM_PAGE_SHIFT (12)
 *                          in memmgrGetBlackListPagesForHeap_GM107(),
 *                          open-gpu-kernel-modules src/nvidia/src/kernel/gpu/
 *                          mem_mgr/arch/maxwell/mem_mgr_gm107.c, 595.45.04;
 *                          nvml.h says only that the address is Xid 63's):
 *                          an address that is no page's is refused, said,
 *                          not rounded (it may be a page number), source UE
 *                          for a DBE, CE_THRESHOLD for multiple SBEs; event
 *                          and state RETIRED, or PENDING while the GPU has
 *                          retirements pending (nvml.h's
 *                          nvmlDeviceGetRetiredPagesPendingStatus says only
 *                          whether some page waits for a reboot, not which:
 *                          each of its pages may be one); time 0: nvml.h does
 *                          not give the timestamps' unit
 *   the GPU's end of       HEALTH, the health its driver's facts give: RMA
 *   reconciliation         for a failed row remap (as operators treat Xid
 *                          64), RESET_REQUIRED for a remap or a retirement
 *                          pending, else OK; HBM_FACT_PARTIAL when one of
 *                          those could not be read (then it can only tell
 *                          worse, never better).  Always the GPU's last
 *                          fact at start: what it retired has all been said.
 *                          .driver: its remapped rows and aggregate ECC
 *                          counts, those that could be read
 *   an ECC event           ERROR, event ERROR, severity and state CE
 *                          (SingleBitEcc) or UE (DoubleBitEcc), no address
 *                          (length 0): NVML's event carries none
 *   an Xid event           ERROR, event DEVICE_ERROR, .xid and .state = the
 *                          Xid, its severity and words from the daemon's one
 *                          table (nv_xid_hbm(), nvlog.c); an Xid not about
 *                          HBM (a program's fault, 999: NVML did not know
 *                          it) is no fact, as the kernel log's is not
 *
 * What reconciliation reads (PAGES, HEALTH) was not heard as it happened:
 * it is marked HBM_FACT_UNHEARD, .sync START (core.h: old news to the
 * sinks that act on lost data, no event to those that record what was
 * heard); read again after a GPU's DBE or HBM Xid (reread_stale()), .sync
 * 0: the registrar records what is new, the module's event says it.  Every
 * fact has origin NVML, path "nvml", dev.id HBM_NO_DEVICE_ID: the module
 * numbers a GPU only once the registrar registered it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <syslog.h>
#include <systemd/sd-event.h>

#include "nvlog.h"
#include "nvml_facts.h"
#include "nvml_source.h"

/* RM_PAGE_SHIFT 12 (see above). */
#define NVIDIA_RETIRED_PAGE 4096

/* A GPU's tables are read again at most once in this long (reread_stale()). */
#define NVML_REREAD_NS	(1000000000ULL)
/*
 * A read of a GPU's tables out this long is said, once, naming the GPU.  A
 * healthy GPU answers in milliseconds (a dozen calls into its driver); a
 * read this long is a wedged GPU's.  Below the unit's WatchdogSec=30s
 * (daemon/systemd/hbmguardd.service) on purpose: a read that would have had
 * the daemon killed, had it run on the loop, is said while the daemon runs
 * on (the watchdog no longer sees it: the loop keeps pinging), so the
 * journal, not a kill, tells the operator the GPU hangs.
 */
#define NVML_READ_SLOW_NS (20ULL * 1000000000ULL)

struct nvml_facts {
	struct hbm_nvml *h;
	struct hbm_source_link link;
	int fd;
	sd_event_source *io;
	bool pending;		/* the GPU being reconciled has retirements pending */
	int sync;		/* HBM_SYNC_START at start; 0 when read again later */
	bool *stale;		/* by hbm_nvml_gpu()'s i: an event changed what NVML says */
	uint64_t *read_at;	/* ... when last read again, CLOCK_MONOTONIC ns; 0 never */
	sd_event *loop;		/* for the timer of a read put off; NULL: none */
	sd_event_source *timer;
	/* the read out (nvml_facts_check_reads()) */
	uint64_t read_serial;	/* the reader's serial of the read last seen out */
	uint64_t read_since;	/* ... since when, CLOCK_MONOTONIC ns */
	bool read_said;		/* ... said to be slow */
	sd_event_source *slow_timer;
};

static void log_line(void *ctx, int priority, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "<%d>hbmguardd: %s\n", priority, msg);
}

static void fill_device(struct hbm_fact *f, uint32_t type, const struct hbm_nvml_gpu *g)
{
	unsigned int domain, bus, dev, fn;

	memset(f, 0, sizeof(*f));
	f->type = type;
	f->origin = HBM_FROM_NVML;
	f->dev.id = HBM_NO_DEVICE_ID;
	f->dev.kind = HBM_DEVICE_NVIDIA;
	/* A name longer than the fact's is cut; a UUID never is (on_seen()). */
	snprintf(f->dev.identity, sizeof(f->dev.identity), "%.*s",
		 (int)sizeof(f->dev.identity) - 1, g->uuid);
	snprintf(f->dev.name, sizeof(f->dev.name), "%.*s", (int)sizeof(f->dev.name) - 1, g->name);
	/*
	 * NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0" (nvml.h), in the
	 * kernel's form: pci_setup_device() names a function "%04x:%02x:%02x.%d"
	 * (drivers/pci/probe.c, 6.1 and 6.12), a domain past 0xffff (VMD) wider.
	 */
	if (sscanf(g->pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4 && bus <= 0xff &&
	    dev <= 0x1f && fn <= 7)
		snprintf(f->dev.pci, sizeof(f->dev.pci), "%04x:%02x:%02x.%x", domain, bus, dev,
			 fn);
	f->dev.size = g->memory;
	f->dev.page_size = NVIDIA_RETIRED_PAGE;
	snprintf(f->path, sizeof(f->path), "nvml");
}

/* A GPU whose UUID an identity cannot hold (on_seen() skipped it): no fact of it. */
static bool skipped(const struct hbm_nvml_gpu *g)
{
	return strlen(g->uuid) >= HBMGUARD_IDENTITY_LEN;
}

static void on_seen(void *ctx, const struct hbm_nvml_gpu *g)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	/* NVML's buffer is NVML_DEVICE_UUID_V2_BUFFER_SIZE (96); a GPU's is 40. */
	if (strlen(g->uuid) >= sizeof(f.dev.identity)) {
		log_line(NULL, LOG_ERR, "nvml: a GPU's UUID is longer than an identity: skipped");
		return;
	}
	fill_device(&f, HBM_FACT_DEVICE_SEEN, g);
	f.sync = HBM_SYNC_START;
	s->link.fact(s->link.core, &f);
}

static void on_gone(void *ctx, const struct hbm_nvml_gpu *g)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	if (skipped(g))
		return;
	fill_device(&f, HBM_FACT_DEVICE_GONE, g);
	s->link.fact(s->link.core, &f);
}

static void on_page(void *ctx, const struct hbm_nvml_gpu *g, enum hbm_nvml_cause cause,
		    uint64_t addr, uint64_t time)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	(void)time;	/* unit not in nvml.h: see above */
	if (addr & (NVIDIA_RETIRED_PAGE - 1)) {
		char msg[256];

		snprintf(msg, sizeof(msg), "nvml: GPU %s: a retired page at 0x%llx, not a 4 KiB "
			 "page's address: not recorded", g->uuid, (unsigned long long)addr);
		log_line(NULL, LOG_ERR, msg);
		return;
	}
	if (skipped(g))
		return;
	fill_device(&f, HBM_FACT_PAGES, g);
	f.event = s->pending ? HBMGUARD_EVENT_PENDING : HBMGUARD_EVENT_RETIRED;
	f.state = s->pending ? HBMGUARD_STATE_PENDING : HBMGUARD_STATE_RETIRED;
	f.source = cause == HBM_NVML_CAUSE_DBE ? HBMGUARD_SOURCE_UE : HBMGUARD_SOURCE_CE_THRESHOLD;
	f.flags = HBM_FACT_UNHEARD;
	f.sync = s->sync;
	f.offset = addr;
	f.length = NVIDIA_RETIRED_PAGE;
	f.count = 1;
	s->link.fact(s->link.core, &f);
}

/* Called before the GPU's pages (nvml_source.h), when it could be read. */
static void on_pending(void *ctx, const struct hbm_nvml_gpu *g, bool pending)
{
	struct nvml_facts *s = ctx;
	char msg[256];

	s->pending = pending;
	if (!pending)
		return;
	snprintf(msg, sizeof(msg), "nvml: GPU %s (%s) has pages pending retirement: a reboot "
		 "completes it", g->uuid, g->pci);
	log_line(NULL, LOG_NOTICE, msg);
}

/* The last call of a GPU's reconciliation: the health its driver's facts give. */
static void on_counts(void *ctx, const struct hbm_nvml_gpu *g, const struct hbm_nvml_report *r)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;
	char msg[256];

	if (skipped(g))
		return;
	fill_device(&f, HBM_FACT_HEALTH, g);
	f.event = HBMGUARD_EVENT_HEALTH;
	f.flags = HBM_FACT_UNHEARD;
	f.sync = s->sync;
	f.state = HBMGUARD_HEALTH_OK;
	f.aux = HBMGUARD_HEALTH_OK;
	if (r->remap_status == HBM_NVML_OK && r->remap_pending) {
		snprintf(msg, sizeof(msg), "nvml: GPU %s (%s) has row remaps pending: a GPU "
			 "reset completes them", g->uuid, g->pci);
		log_line(NULL, LOG_NOTICE, msg);
	}
	if (r->remap_status == HBM_NVML_OK && r->remap_failure) {
		f.state = HBMGUARD_HEALTH_RMA;
		snprintf(f.text, sizeof(f.text), "row remapping failed");
	} else if ((r->remap_status == HBM_NVML_OK && r->remap_pending) || s->pending) {
		f.state = HBMGUARD_HEALTH_RESET_REQUIRED;
		snprintf(f.text, sizeof(f.text), "%s pending",
			 s->pending ? "page retirement" : "row remapping");
	}
	if (r->remap_status == HBM_NVML_FAILED || r->pending_status == HBM_NVML_FAILED)
		f.flags |= HBM_FACT_PARTIAL;	/* said by nvml_source.c */
	/* the driver's own counts, for hbmctl gpus: what was read, no more */
	if (r->remap_status == HBM_NVML_OK) {
		f.driver.have |= HBM_DRIVER_REMAP;
		f.driver.remap_corrected = r->remap_corrected;
		f.driver.remap_uncorrected = r->remap_uncorrected;
		f.driver.remap_pending = r->remap_pending;
		f.driver.remap_failure = r->remap_failure;
	}
	if (r->ecc_status == HBM_NVML_OK) {
		f.driver.have |= HBM_DRIVER_ECC;
		f.driver.ue = r->ecc[HBM_NVML_UNCORRECTED][HBM_NVML_AGGREGATE];
		f.driver.ce = r->ecc[HBM_NVML_CORRECTED][HBM_NVML_AGGREGATE];
	}
	s->pending = false;	/* the next GPU's is its own */
	s->link.fact(s->link.core, &f);
}

static void mark_stale(struct nvml_facts *s, const struct hbm_nvml_gpu *g)
{
	size_t i;

	for (i = 0; i < hbm_nvml_count(s->h); i++)
		if (hbm_nvml_gpu(s->h, i) == g)
			s->stale[i] = true;
}

static void on_event(void *ctx, const struct hbm_nvml_gpu *g, enum hbm_nvml_event_kind kind,
		     uint64_t data)
{
	const struct nv_xid_hbm *meaning;
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	if (skipped(g))
		return;
	fill_device(&f, HBM_FACT_ERROR, g);
	switch (kind) {
	case HBM_NVML_EVENT_SBE:
		f.event = HBMGUARD_EVENT_ERROR;
		f.severity = HBM_SEVERITY_CE;
		f.state = HBMGUARD_ERROR_CE;
		break;
	case HBM_NVML_EVENT_DBE:
		f.event = HBMGUARD_EVENT_ERROR;
		f.severity = HBM_SEVERITY_UE;
		f.state = HBMGUARD_ERROR_UE;
		break;
	case HBM_NVML_EVENT_XID:
		meaning = nv_xid_hbm(data > UINT32_MAX ? UINT32_MAX : (uint32_t)data);
		if (!meaning)
			return;		/* not about HBM: a program's, the driver's */
		f.event = HBMGUARD_EVENT_DEVICE_ERROR;
		f.xid = meaning->xid;
		f.state = f.xid;	/* the module's DEVICE_ERROR says it there */
		f.severity = meaning->lost_data ? HBM_SEVERITY_UE : HBM_SEVERITY_CE;
		snprintf(f.text, sizeof(f.text), "%s", meaning->meaning);
		break;
	}
	f.count = 1;
	s->link.fact(s->link.core, &f);
	/* What the driver retired, remapped or has pending may have changed. */
	if (kind == HBM_NVML_EVENT_DBE || (kind == HBM_NVML_EVENT_XID && meaning->tables))
		mark_stale(s, g);
}

static const struct hbm_nvml_ops facts_ops = {
	.gpu_seen = on_seen, .gpu_gone = on_gone, .page_retired = on_page,
	.pending = on_pending, .counts = on_counts, .event = on_event, .log = log_line,
};

struct nvml_facts *nvml_facts_start(const char *library, const struct hbm_source_link *link)
{
	struct nvml_facts *s = calloc(1, sizeof(*s));

	if (!s) {
		log_line(NULL, LOG_ERR, "nvml: out of memory");
		return NULL;
	}
	s->link = *link;
	s->fd = -1;
	s->sync = HBM_SYNC_START;
	s->h = hbm_nvml_open(library, &facts_ops, s);
	if (!s->h) {
		free(s);
		return NULL;
	}
	s->stale = calloc(hbm_nvml_count(s->h) + 1, sizeof(*s->stale));
	s->read_at = calloc(hbm_nvml_count(s->h) + 1, sizeof(*s->read_at));
	if (!s->stale || !s->read_at) {
		free(s->stale);
		free(s->read_at);
		log_line(NULL, LOG_ERR, "nvml: out of memory");
		hbm_nvml_close(s->h);
		free(s);
		return NULL;
	}
	hbm_nvml_reconcile(s->h);
	s->sync = 0;
	s->fd = hbm_nvml_events_start(s->h);
	if (s->fd < 0)
		s->fd = -1;	/* said why; discovery and reconciliation stand */
	return s;
}

int nvml_facts_fd(const struct nvml_facts *s)
{
	return s->fd;
}

static int on_reread_timer(sd_event_source *src, uint64_t usec, void *arg);

/*
 * A one-shot timer of the loop at @at (CLOCK_MONOTONIC ns), made or moved;
 * sd-event counts in us, rounded up: a timer early would find its time not
 * yet come and only arm itself again.
 */
static void arm(struct nvml_facts *s, sd_event_source **timer, uint64_t at,
		sd_event_time_handler_t fn, const char *what)
{
	uint64_t usec = (at + 999) / 1000;

	if (!s->loop)
		return;
	if (*timer) {
		sd_event_source_set_time(*timer, usec);
		sd_event_source_set_enabled(*timer, SD_EVENT_ONESHOT);
	} else if (sd_event_add_time(s->loop, timer, CLOCK_MONOTONIC, usec, 0, fn, s) < 0) {
		char msg[256];

		snprintf(msg, sizeof(msg), "nvml: no timer for %s", what);
		log_line(NULL, LOG_ERR, msg);
	}
}

/* @at into @next, the earliest time a timer is needed for (0: none yet). */
static void sooner(uint64_t *next, uint64_t at)
{
	if (!*next || at < *next)
		*next = at;
}

/*
 * A GPU's DBE or HBM Xid (48, 63, 64, 154...) means the driver may have
 * retired a page, has one pending, remapped a row or failed to: its tables
 * are read again, after the batch of events that said so.  What is new
 * there reaches the registrar as at start, but with .sync 0: read later,
 * still no event of its own (the module's is journaled).  Each read is a
 * dozen NVML calls, made by nvml_source.c's reader thread and handed back
 * through the events' fd; a DBE storm must not make one per event: a GPU
 * is read at most once per NVML_REREAD_NS, a read put off is asked for by
 * a timer when its time comes (without a loop, at a later dispatch); so is
 * a read whose reader thread could not start (pthread_create() failed: the
 * GPU waits in the reader's queue for a reader, which only a reread starts,
 * and the GPU's next event may never come).
 */
static void reread_stale(struct nvml_facts *s)
{
	uint64_t now = hbm_monotonic_ns(), next = 0;
	size_t i;
	int err;

	for (i = 0; i < hbm_nvml_count(s->h); i++) {
		if (!s->stale[i])
			continue;
		if (s->read_at[i] && now - s->read_at[i] < NVML_REREAD_NS) {
			sooner(&next, s->read_at[i] + NVML_REREAD_NS);
			continue;
		}
		s->stale[i] = false;
		s->read_at[i] = now;
		err = hbm_nvml_reread(s->h, i);	/* a GPU gone: not read, nothing to say */
		if (err < 0 && err != -ENODEV && err != -ENOTCONN) {
			/* no reader (said): asked again, not left to the next event */
			s->stale[i] = true;
			sooner(&next, now + NVML_REREAD_NS);
		}
	}
	if (next)
		arm(s, &s->timer, next, on_reread_timer, "a GPU's tables: read at its next event");
}

static int on_reread_timer(sd_event_source *src, uint64_t usec, void *arg)
{
	(void)src;
	(void)usec;
	reread_stale(arg);
	return 0;
}

static int on_slow_timer(sd_event_source *src, uint64_t usec, void *arg)
{
	(void)src;
	(void)usec;
	nvml_facts_check_reads(arg, hbm_monotonic_ns());
	return 0;
}

int nvml_facts_check_reads(struct nvml_facts *s, uint64_t now)
{
	const struct hbm_nvml_gpu *g;
	uint64_t serial;
	size_t i;
	char msg[512];

	if (!hbm_nvml_read_outstanding(s->h, &i, &serial))
		return -1;
	if (serial != s->read_serial) {		/* another read: seen out from now */
		s->read_serial = serial;
		s->read_since = now;
		s->read_said = false;
	}
	if (s->read_said)
		return (int)i;
	if (now - s->read_since < NVML_READ_SLOW_NS) {
		arm(s, &s->slow_timer, s->read_since + NVML_READ_SLOW_NS, on_slow_timer,
		    "a slow GPU read: said at the next event");
		return (int)i;
	}
	g = hbm_nvml_gpu(s->h, i);
	snprintf(msg, sizeof(msg), "nvml: GPU %s (%s) has not answered the read of its tables "
		 "for %llu s: its facts, and the other GPUs' reads, wait for it; the daemon runs on",
		 g->uuid, g->pci, NVML_READ_SLOW_NS / 1000000000ULL);
	log_line(NULL, LOG_WARNING, msg);
	s->read_said = true;
	return (int)i;
}

int nvml_facts_dispatch(struct nvml_facts *s)
{
	int err = hbm_nvml_dispatch(s->h);

	reread_stale(s);
	nvml_facts_check_reads(s, hbm_monotonic_ns());
	return err;
}

/*
 * Level-triggered (sd-event's default): a batch a turn, the rest next turn.
 * Events over for good (said why) leave the fd watched: the reads still
 * come back on it, and nothing else does.
 */
static int on_readable(sd_event_source *src, int fd, uint32_t revents, void *arg)
{
	(void)src;
	(void)fd;
	(void)revents;
	nvml_facts_dispatch(arg);
	return 0;
}

int nvml_facts_watch(struct nvml_facts *s, sd_event *loop)
{
	if (s->fd < 0)
		return 0;
	s->loop = loop;
	return sd_event_add_io(loop, &s->io, s->fd, EPOLLIN, on_readable, s);
}

bool nvml_facts_stop(struct nvml_facts *s)
{
	bool left;

	if (!s)
		return false;
	sd_event_source_disable_unref(s->io);
	sd_event_source_disable_unref(s->timer);
	sd_event_source_disable_unref(s->slow_timer);
	left = hbm_nvml_close(s->h);
	free(s->read_at);
	free(s->stale);
	free(s);
	return left;
}
