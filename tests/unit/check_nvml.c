// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the NVML source (daemon/nvml_source.c) against the fake
 * libnvidia-ml.so.1 (tests/nvml/fake_nvml.c, built from the real nvml.h),
 * loaded by path and driven by a scenario ($HBM_FAKE_NVML).  Check runs each
 * test in its own process, so each loads the library afresh.
 */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "core.h"
#include "gpus.h"
#include "nvml_facts.h"
#include "nvml_source.h"
#include "unit.h"

#define FAKE HBM_FAKE_NVML_DIR "/libnvidia-ml.so.1"
#define FAKE_OLD HBM_FAKE_NVML_DIR "/old/libnvidia-ml.so.1"
#define FAKE_ANCIENT HBM_FAKE_NVML_DIR "/ancient/libnvidia-ml.so.1"
#define NODE HBM_NVML_SCENARIOS "/node.scn"
#define UUID0 "GPU-a1a1a1a1-0000-4000-8000-000000000001"
#define UUID1 "GPU-h200h200-0000-4000-8000-000000000002"

/* Everything the source handed over, in order. */
struct heard {
	char lines[16][512];
	int prio[16];
	int nr_lines;
	char seen[8][96];
	int nr_seen;
	char gone[8][96];
	int nr_gone;
	struct { char uuid[96]; int cause; uint64_t addr, time; } pages[256];
	int nr_pages;
	struct { char uuid[96]; bool pending; int pages_before; } pend[8];
	int nr_pend;
	struct { char uuid[96]; struct hbm_nvml_report r; } counts[8];
	int nr_counts;
	struct { char uuid[96]; int kind; uint64_t data; } ev[32];
	int nr_ev;
};

static struct heard heard;
/* The test's own thread: every callback runs in it, never in the source's threads. */
static pthread_t caller;

#define IN_CALLER() ck_assert_msg(pthread_equal(pthread_self(), caller), \
				  "a callback outside the caller's thread")

static void on_log(void *ctx, int prio, const char *msg)
{
	IN_CALLER();
	(void)ctx;
	ck_assert_int_lt(heard.nr_lines, 16);
	heard.prio[heard.nr_lines] = prio;
	snprintf(heard.lines[heard.nr_lines++], sizeof(heard.lines[0]), "%s", msg);
}

static void on_seen(void *ctx, const struct hbm_nvml_gpu *g)
{
	IN_CALLER();
	(void)ctx;
	snprintf(heard.seen[heard.nr_seen++], 96, "%s", g->uuid);
}

static void on_gone(void *ctx, const struct hbm_nvml_gpu *g)
{
	IN_CALLER();
	(void)ctx;
	ck_assert(!g->present);
	snprintf(heard.gone[heard.nr_gone++], 96, "%s", g->uuid);
}

static void on_page(void *ctx, const struct hbm_nvml_gpu *g, enum hbm_nvml_cause cause,
		    uint64_t addr, uint64_t time)
{
	IN_CALLER();
	(void)ctx;
	snprintf(heard.pages[heard.nr_pages].uuid, 96, "%s", g->uuid);
	heard.pages[heard.nr_pages].cause = cause;
	heard.pages[heard.nr_pages].addr = addr;
	heard.pages[heard.nr_pages++].time = time;
}

static void on_pending(void *ctx, const struct hbm_nvml_gpu *g, bool pending)
{
	IN_CALLER();
	(void)ctx;
	snprintf(heard.pend[heard.nr_pend].uuid, 96, "%s", g->uuid);
	heard.pend[heard.nr_pend].pages_before = heard.nr_pages;
	heard.pend[heard.nr_pend++].pending = pending;
}

static void on_counts(void *ctx, const struct hbm_nvml_gpu *g, const struct hbm_nvml_report *r)
{
	IN_CALLER();
	(void)ctx;
	snprintf(heard.counts[heard.nr_counts].uuid, 96, "%s", g->uuid);
	heard.counts[heard.nr_counts].r = *r;
	/* The pages are freed after the call: keep the statuses and counts. */
	for (int c = 0; c < HBM_NVML_CAUSES; c++)
		heard.counts[heard.nr_counts].r.retired[c].addr =
			heard.counts[heard.nr_counts].r.retired[c].time = NULL;
	heard.nr_counts++;
}

static void on_event(void *ctx, const struct hbm_nvml_gpu *g, enum hbm_nvml_event_kind kind,
		     uint64_t data)
{
	IN_CALLER();
	(void)ctx;
	/* A storm (dispatch_batch) is counted, its first events kept. */
	if (heard.nr_ev < 32) {
		snprintf(heard.ev[heard.nr_ev].uuid, 96, "%s", g->uuid);
		heard.ev[heard.nr_ev].kind = kind;
		heard.ev[heard.nr_ev].data = data;
	}
	heard.nr_ev++;
}

static const struct hbm_nvml_ops ops = {
	.gpu_seen = on_seen, .gpu_gone = on_gone, .page_retired = on_page,
	.pending = on_pending, .counts = on_counts, .event = on_event, .log = on_log,
};

static char scn_path[64];

/* The scenario: node.scn, then @extra lines, in a file of this test's own. */
static void scenario(const char *extra, bool with_node)
{
	char line[512];
	FILE *in, *out;
	int fd;

	snprintf(scn_path, sizeof(scn_path), "/tmp/hbm-nvml-XXXXXX");
	fd = mkstemp(scn_path);
	ck_assert_int_ge(fd, 0);
	out = fdopen(fd, "w");
	ck_assert_ptr_nonnull(out);
	if (with_node) {
		in = fopen(NODE, "r");
		ck_assert_ptr_nonnull(in);
		while (fgets(line, sizeof(line), in))
			fputs(line, out);
		fclose(in);
	}
	fputs(extra, out);
	fclose(out);
	setenv("HBM_FAKE_NVML", scn_path, 1);
	memset(&heard, 0, sizeof(heard));
	caller = pthread_self();
}

/* The fake opened, its events started: the handle, and the fd to poll in @fd. */
static struct hbm_nvml *open_listening(int *fd)
{
	struct hbm_nvml *h = hbm_nvml_open(FAKE, &ops, NULL);

	ck_assert_ptr_nonnull(h);
	*fd = hbm_nvml_events_start(h);
	ck_assert_int_ge(*fd, 0);
	return h;
}

static void done(struct hbm_nvml *h)
{
	ck_assert(!hbm_nvml_close(h));	/* every thread joined */
	unlink(scn_path);
}

/* Exactly one line was logged, and it holds each of @want (NULL-ended). */
static void one_line(int prio, const char *const *want)
{
	ck_assert_msg(heard.nr_lines == 1, "%d lines, first: %s", heard.nr_lines,
		      heard.lines[0]);
	ck_assert_int_eq(heard.prio[0], prio);
	for (; *want; want++)
		ck_assert_msg(strstr(heard.lines[0], *want), "'%s' not in: %s", *want,
			      heard.lines[0]);
}

START_TEST(discovery)
{
	struct hbm_nvml *h;
	const struct hbm_nvml_gpu *g;

	scenario("", true);
	h = hbm_nvml_open(FAKE, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(hbm_nvml_driver_version(h), "580.159.04");
	ck_assert_uint_eq(hbm_nvml_count(h), 2);
	ck_assert_int_eq(heard.nr_seen, 2);
	ck_assert_str_eq(heard.seen[0], UUID0);
	ck_assert_str_eq(heard.seen[1], UUID1);
	g = hbm_nvml_gpu(h, 1);
	ck_assert_str_eq(g->uuid, UUID1);
	ck_assert_str_eq(g->pci, "00000000:86:00.0");
	ck_assert_str_eq(g->name, "NVIDIA H200");
	ck_assert_uint_eq(g->memory, 150754820096ULL);
	ck_assert(g->present);
	ck_assert_str_eq(hbm_nvml_gpu(h, 0)->name, "NVIDIA A100-SXM4-80GB");
	ck_assert_ptr_null(hbm_nvml_gpu(h, 2));
	ck_assert_int_eq(heard.nr_lines, 0);
	done(h);
}
END_TEST

START_TEST(reconcile)
{
	struct hbm_nvml *h;
	const struct hbm_nvml_report *r;

	scenario("", true);
	h = hbm_nvml_open(FAKE, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	hbm_nvml_reconcile(h);
	/* Both causes of the A100, in NVML's order, with their times. */
	ck_assert_int_eq(heard.nr_pages, 3);
	ck_assert_str_eq(heard.pages[0].uuid, UUID0);
	ck_assert_int_eq(heard.pages[0].cause, HBM_NVML_CAUSE_SBE);
	ck_assert_uint_eq(heard.pages[0].addr, 0x1a2b000);
	ck_assert_uint_eq(heard.pages[0].time, 1700000000);
	ck_assert_int_eq(heard.pages[1].cause, HBM_NVML_CAUSE_SBE);
	ck_assert_uint_eq(heard.pages[1].addr, 0x1a2c000);
	ck_assert_uint_eq(heard.pages[1].time, 1700000100);
	ck_assert_int_eq(heard.pages[2].cause, HBM_NVML_CAUSE_DBE);
	ck_assert_uint_eq(heard.pages[2].addr, 0x3f00000);
	ck_assert_uint_eq(heard.pages[2].time, 1700000200);
	/* The H200 has no page retirement: a fact, not a pending flag. */
	ck_assert_int_eq(heard.nr_pend, 1);
	ck_assert_str_eq(heard.pend[0].uuid, UUID0);
	ck_assert(heard.pend[0].pending);
	/* said before its pages, which it may concern (nvml_source.h) */
	ck_assert_int_eq(heard.pend[0].pages_before, 0);
	ck_assert_int_eq(heard.nr_counts, 2);
	r = &heard.counts[0].r;
	ck_assert_int_eq(r->remap_status, HBM_NVML_OK);
	ck_assert_uint_eq(r->remap_corrected, 3);
	ck_assert_uint_eq(r->remap_uncorrected, 1);
	ck_assert(!r->remap_pending && !r->remap_failure);
	ck_assert_int_eq(r->ecc_status, HBM_NVML_OK);
	ck_assert_uint_eq(r->ecc[HBM_NVML_CORRECTED][HBM_NVML_VOLATILE], 12);
	ck_assert_uint_eq(r->ecc[HBM_NVML_UNCORRECTED][HBM_NVML_VOLATILE], 1);
	ck_assert_uint_eq(r->ecc[HBM_NVML_CORRECTED][HBM_NVML_AGGREGATE], 40);
	ck_assert_uint_eq(r->ecc[HBM_NVML_UNCORRECTED][HBM_NVML_AGGREGATE], 2);
	r = &heard.counts[1].r;
	ck_assert_str_eq(heard.counts[1].uuid, UUID1);
	ck_assert_int_eq(r->retired[HBM_NVML_CAUSE_SBE].status, HBM_NVML_UNSUPPORTED);
	ck_assert_int_eq(r->retired[HBM_NVML_CAUSE_DBE].status, HBM_NVML_UNSUPPORTED);
	ck_assert_int_eq(r->pending_status, HBM_NVML_UNSUPPORTED);
	ck_assert_uint_eq(r->remap_uncorrected, 2);
	ck_assert(r->remap_pending && !r->remap_failure);
	ck_assert_int_eq(heard.nr_lines, 0);	/* NOT_SUPPORTED is no error */
	done(h);
}
END_TEST

/* More pages than the first buffer: NVML's INSUFFICIENT_SIZE, then all. */
START_TEST(many_pages)
{
	char extra[200 * 48] = "";
	struct hbm_nvml_report r;
	struct hbm_nvml *h;
	int i;

	for (i = 0; i < 200; i++)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 "retired 1 dbe 0x%x %d\n", 0x100000 + i * 0x1000, 1000 + i);
	scenario("gpu GPU-x 00000000:01:00.0 1073741824 NVIDIA X\n"
		 "gpu GPU-y 00000000:02:00.0 1073741824 NVIDIA Y\n", false);
	{
		FILE *f = fopen(scn_path, "a");

		fputs(extra, f);
		fclose(f);
	}
	h = hbm_nvml_open(FAKE, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(hbm_nvml_query(h, 1, &r), 0);
	ck_assert_int_eq(r.retired[HBM_NVML_CAUSE_DBE].status, HBM_NVML_OK);
	ck_assert_uint_eq(r.retired[HBM_NVML_CAUSE_DBE].nr, 200);
	ck_assert_uint_eq(r.retired[HBM_NVML_CAUSE_DBE].addr[199], 0x100000 + 199 * 0x1000);
	ck_assert_uint_eq(r.retired[HBM_NVML_CAUSE_DBE].time[199], 1199);
	ck_assert_uint_eq(r.retired[HBM_NVML_CAUSE_SBE].nr, 0);
	hbm_nvml_report_free(&r);
	ck_assert_int_eq(hbm_nvml_query(h, 2, &r), -ENODEV);
	ck_assert_int_eq(heard.nr_lines, 0);
	done(h);
}
END_TEST

/* Wait (the fake's timeline, not a clock) until @nr events and @gone GPUs. */
static void collect(struct hbm_nvml *h, int fd, int nr, int gone)
{
	while (heard.nr_ev < nr || heard.nr_gone < gone) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		/* Only a bound against a hang, never a timing assertion. */
		ck_assert_msg(poll(&p, 1, 20000) == 1, "%d of %d events, %d of %d gone",
			      heard.nr_ev, nr, heard.nr_gone, gone);
		ck_assert_int_eq(hbm_nvml_dispatch(h), 0);
	}
}

START_TEST(events)
{
	static const struct { const char *uuid; int kind; uint64_t data; } want[] = {
		{ UUID0, HBM_NVML_EVENT_XID, 48 }, { UUID0, HBM_NVML_EVENT_DBE, 0 },
		{ UUID0, HBM_NVML_EVENT_XID, 63 }, { UUID1, HBM_NVML_EVENT_XID, 64 },
		{ UUID1, HBM_NVML_EVENT_XID, 94 }, { UUID0, HBM_NVML_EVENT_SBE, 0 },
		{ UUID0, HBM_NVML_EVENT_XID, 95 },
		/* after GPU 1 fell off the bus: a new set, GPU 0 alone */
		{ UUID0, HBM_NVML_EVENT_XID, 48 },
	};
	struct hbm_nvml *h;
	size_t i;
	int fd;

	scenario("event 0 0 xid 48\n"
		 "event 0 0 dbe\n"
		 "event 5 0 xid 63\n"
		 "event 5 1 xid 64\n"
		 "event 10 1 xid 94\n"
		 "event 10 0 sbe\n"
		 "event 10 0 xid 95\n"
		 "lost 20 1\n"
		 "event 30 1 xid 79\n"
		 "event 40 0 xid 48\n", true);
	h = open_listening(&fd);
	collect(h, fd, 8, 1);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_str_eq(heard.ev[i].uuid, want[i].uuid);
		ck_assert_int_eq(heard.ev[i].kind, want[i].kind);
		ck_assert_uint_eq(heard.ev[i].data, want[i].data);
	}
	ck_assert_int_eq(heard.nr_ev, 8);
	ck_assert_int_eq(heard.nr_gone, 1);
	ck_assert_str_eq(heard.gone[0], UUID1);
	ck_assert(!hbm_nvml_gpu(h, 1)->present);
	/* Gone is a fact told in one line; its handle is not used again. */
	one_line(LOG_WARNING, (const char *const[]){ UUID1, "00000000:86:00.0",
		 "fallen off the bus", NULL });
	heard.nr_lines = 0;
	hbm_nvml_reconcile(h);
	ck_assert_int_eq(heard.nr_counts, 1);
	ck_assert_str_eq(heard.counts[0].uuid, UUID0);
	ck_assert_int_eq(heard.nr_lines, 0);
	done(h);
}
END_TEST

/*
 * GPU 1 is found gone by reconciliation (its ECC query answers GPU_IS_LOST)
 * while it is still in the event set; then the wait reports GPU_IS_LOST.
 * That is GPU 1, already gone, not "every GPU answers": GPU 0's events go on.
 * (Should the wait report first, the GPU is found there: the same outcome.)
 */
START_TEST(lost_after_reconcile)
{
	struct hbm_nvml *h;
	int fd;

	scenario("fail nvmlDeviceGetTotalEccErrors 15 1\n"
		 "lost 3000 1\nevent 3000 0 xid 48\n", true);
	h = open_listening(&fd);
	hbm_nvml_reconcile(h);
	collect(h, fd, 1, 1);
	ck_assert_int_eq(heard.nr_ev, 1);
	ck_assert_str_eq(heard.ev[0].uuid, UUID0);
	ck_assert_uint_eq(heard.ev[0].data, 48);
	ck_assert_int_eq(heard.nr_gone, 1);
	one_line(LOG_WARNING, (const char *const[]){ UUID1, "fallen off the bus", NULL });
	done(h);
}
END_TEST

/*
 * More events than the socket holds, none dispatched: the thread blocks in
 * send().  Closing must wake it (shutdown() of the loop's end) and return,
 * not hang in pthread_join() (Check's timeout would fail the test).
 */
START_TEST(close_while_full)
{
	char extra[1000 * 16] = "";
	struct hbm_nvml *h;
	struct pollfd p;
	int fd, i, inq = 0;

	for (i = 0; i < 1000; i++)
		strcat(extra, "event 0 0 sbe\n");
	scenario(extra, true);
	h = open_listening(&fd);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 20000), 1);
	/* Bytes queued (SIOCINQ sums a SEQPACKET queue): a hundred records and more. */
	while (inq < 100 * 40) {
		ck_assert_int_eq(ioctl(fd, SIOCINQ, &inq), 0);
		usleep(1000);
	}
	done(h);
	ck_assert_int_eq(heard.nr_ev, 0);
}
END_TEST

/*
 * A storm the thread keeps feeding does not hold the loop: one dispatch
 * hands over at most a batch (64 records) and returns, the fd still
 * readable for the rest.
 */
START_TEST(dispatch_batch)
{
	char extra[1000 * 16] = "";
	struct hbm_nvml *h;
	struct pollfd p;
	int fd, i, inq = 0;

	for (i = 0; i < 1000; i++)
		strcat(extra, "event 0 0 sbe\n");
	scenario(extra, true);
	h = open_listening(&fd);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 20000), 1);
	while (inq < 100 * 40) {
		ck_assert_int_eq(ioctl(fd, SIOCINQ, &inq), 0);
		usleep(1000);
	}
	ck_assert_int_eq(hbm_nvml_dispatch(h), 0);
	ck_assert_int_eq(heard.nr_ev, 64);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	done(h);
}
END_TEST

/* A second start while the thread runs is refused, not a second thread. */
START_TEST(events_start_twice)
{
	struct hbm_nvml *h;
	int fd;

	scenario("event 0 0 xid 48\n", true);
	h = open_listening(&fd);
	ck_assert_int_eq(hbm_nvml_events_start(h), -EALREADY);
	collect(h, fd, 1, 0);
	ck_assert_int_eq(heard.nr_ev, 1);
	done(h);
}
END_TEST

/* A GPU without ECC events (a consumer board): Xids only, no error. */
START_TEST(events_subset)
{
	struct hbm_nvml *h;
	int fd;

	scenario("events 0 0x8\nunsupported 1 ecc\nevents 1 0x8\n"
		 "event 0 0 dbe\nevent 0 0 xid 92\n", true);
	h = open_listening(&fd);
	collect(h, fd, 1, 0);
	ck_assert_int_eq(heard.ev[0].kind, HBM_NVML_EVENT_XID);
	ck_assert_uint_eq(heard.ev[0].data, 92);
	ck_assert_int_eq(heard.nr_lines, 0);
	done(h);
}
END_TEST

/* Each failure: what the source does, and exactly one line naming it. */
static const struct {
	const char *scenario;	/* after node.scn */
	int gpus;		/* GPUs discovered; -1: no handle at all */
	int prio;
	const char *want[5];
} errors[] = {
	{ "fail nvmlInit_v2 9\n", -1, LOG_ERR, { "nvmlInit_v2", "Driver Not Loaded" } },
	{ "fail nvmlDeviceGetCount_v2 999\n", -1, LOG_ERR,
	  { "nvmlDeviceGetCount_v2", "Unknown Error" } },
	{ "fail nvmlDeviceGetHandleByIndex_v2 999 0\n", 1, LOG_ERR,
	  { "nvmlDeviceGetHandleByIndex_v2(0)", "Unknown Error", "skipped" } },
	{ "fail nvmlDeviceGetUUID 999 1\n", 1, LOG_ERR,
	  { "nvmlDeviceGetUUID", "GPU 1", "Unknown Error", "skipped" } },
	{ "fail nvmlDeviceGetPciInfo_v3 999 0\n", 1, LOG_ERR,
	  { "nvmlDeviceGetPciInfo_v3", "GPU 0", "skipped" } },
	{ "fail nvmlDeviceGetMemoryInfo 999 1\n", 1, LOG_ERR,
	  { "nvmlDeviceGetMemoryInfo", "GPU 1", "skipped" } },
	{ "lost 0 1\n", 1, LOG_WARNING, { "GPU 1", "fallen off the bus", "skipped" } },
	{ "fail nvmlDeviceGetRetiredPages_v2 999 0\n", 2, LOG_ERR,
	  { "nvmlDeviceGetRetiredPages_v2", UUID0, "00000000:3B:00.0", "Unknown Error" } },
	{ "fail nvmlDeviceGetRetiredPagesPendingStatus 999 0\n", 2, LOG_ERR,
	  { "nvmlDeviceGetRetiredPagesPendingStatus", UUID0, "Unknown Error" } },
	{ "fail nvmlDeviceGetRemappedRows 999 1\n", 2, LOG_ERR,
	  { "nvmlDeviceGetRemappedRows", UUID1, "00000000:86:00.0", "Unknown Error" } },
	{ "fail nvmlDeviceGetTotalEccErrors 999 0\n", 2, LOG_ERR,
	  { "nvmlDeviceGetTotalEccErrors", UUID0, "Unknown Error" } },
	/* NVML_ERROR_GPU_IS_LOST (15) in the middle of reconciliation */
	{ "fail nvmlDeviceGetTotalEccErrors 15 1\n", 2, LOG_WARNING,
	  { UUID1, "fallen off the bus", "gone" } },
};

START_TEST(error_paths)
{
	struct hbm_nvml *h;
	size_t k;

	scenario(errors[_i].scenario, true);
	h = hbm_nvml_open(FAKE, &ops, NULL);
	if (errors[_i].gpus < 0) {
		ck_assert_ptr_null(h);
		one_line(errors[_i].prio, errors[_i].want);
		unlink(scn_path);
		return;
	}
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(hbm_nvml_count(h), errors[_i].gpus);
	hbm_nvml_reconcile(h);
	one_line(errors[_i].prio, errors[_i].want);
	/* Nothing else: the facts that could be read were, the failed one not. */
	if (strstr(errors[_i].scenario, "RetiredPages_v2"))
		ck_assert_int_eq(heard.nr_pages, 0);
	else if (errors[_i].gpus == 2)
		ck_assert_int_eq(heard.nr_pages, 3);
	if (strstr(errors[_i].scenario, " 15 1")) {
		ck_assert_int_eq(heard.nr_gone, 1);
		ck_assert_int_eq(heard.nr_counts, 1);	/* the lost GPU's are not */
	} else {
		ck_assert_int_eq(heard.nr_gone, 0);
	}
	for (k = 0; k < (size_t)heard.nr_counts && strstr(errors[_i].scenario, "RemappedRows");
	     k++)
		ck_assert_int_eq(heard.counts[k].r.remap_status,
				 k == 1 ? HBM_NVML_FAILED : HBM_NVML_OK);
	done(h);
}
END_TEST

START_TEST(wait_fails)
{
	struct hbm_nvml *h;
	struct pollfd p;
	int fd;

	scenario("fail nvmlEventSetWait_v2 999\n", true);
	h = open_listening(&fd);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ck_assert_int_eq(poll(&p, 1, 20000), 1);
	ck_assert_int_eq(hbm_nvml_dispatch(h), -EIO);
	one_line(LOG_ERR, (const char *const[]){ "nvmlEventSetWait_v2", "Unknown Error",
		 "no more live NVML events", NULL });
	ck_assert_int_eq(hbm_nvml_dispatch(h), 0);	/* said once */
	ck_assert_int_eq(heard.nr_lines, 1);
	done(h);
}
END_TEST

/*
 * A broken library's page counts (fake_nvml.c "broken"): a SUCCESS whose
 * count exceeds the buffer given, an INSUFFICIENT_SIZE asking for more pages
 * than a buffer can be sized for.  Each: the pages are not read (FAILED, not
 * "ok, none"), in one line that names the count, and nothing else.
 */
static const struct {
	const char *scenario;
	const char *want[4];
} broken[] = {
	{ "broken 0 success 1000\n", { "nvmlDeviceGetRetiredPages_v2", UUID0, "1000" } },
	{ "broken 0 insufficient 4294967280\n",
	  { "nvmlDeviceGetRetiredPages_v2", UUID0, "4294967280" } },
	{ "broken 0 insufficient 16777216\n",
	  { "nvmlDeviceGetRetiredPages_v2", UUID0, "16777216" } },
};

START_TEST(broken_counts)
{
	struct hbm_nvml_report r;
	struct hbm_nvml *h;

	scenario(broken[_i].scenario, true);
	h = hbm_nvml_open(FAKE, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(hbm_nvml_query(h, 0, &r), 0);
	ck_assert_int_eq(r.retired[HBM_NVML_CAUSE_SBE].status, HBM_NVML_FAILED);
	ck_assert_int_eq(r.retired[HBM_NVML_CAUSE_DBE].status, HBM_NVML_FAILED);
	ck_assert_uint_eq(r.retired[HBM_NVML_CAUSE_SBE].nr, 0);
	ck_assert_ptr_null(r.retired[HBM_NVML_CAUSE_SBE].addr);
	ck_assert_int_eq(r.remap_status, HBM_NVML_OK);	/* the other facts stand */
	one_line(LOG_ERR, broken[_i].want);
	hbm_nvml_report_free(&r);
	done(h);
}
END_TEST

/*
 * nvmlDeviceRegisterEvents fails with NVML_ERROR_UNKNOWN on GPU 0: nvml.h
 * says the set is then undefined and must be freed (the fake aborts on its
 * use).  GPU 1's events are heard on a new set; GPU 0's are not; one line.
 */
START_TEST(register_unknown)
{
	struct hbm_nvml *h;
	int fd;

	scenario("fail nvmlDeviceRegisterEvents 999 0\n"
		 "event 0 0 xid 48\nevent 0 1 xid 79\n", true);
	h = open_listening(&fd);
	collect(h, fd, 1, 0);
	ck_assert_int_eq(heard.nr_ev, 1);
	ck_assert_str_eq(heard.ev[0].uuid, UUID1);
	ck_assert_uint_eq(heard.ev[0].data, 79);
	one_line(LOG_ERR, (const char *const[]){ "nvmlDeviceRegisterEvents", UUID0,
		 "Unknown Error", NULL });
	done(h);
}
END_TEST

START_TEST(no_library)
{
	scenario("", true);
	ck_assert_ptr_null(hbm_nvml_open(HBM_FAKE_NVML_DIR "/none/libnvidia-ml.so.1", &ops,
					 NULL));
	one_line(LOG_INFO, (const char *const[]){ "no NVIDIA management library",
		 "libnvidia-ml.so.1", NULL });
	ck_assert_int_eq(heard.nr_seen, 0);
	unlink(scn_path);
}
END_TEST

/* An older library without nvmlDeviceGetRemappedRows: that fact is missing. */
START_TEST(old_library)
{
	struct hbm_nvml *h;

	scenario("", true);
	h = hbm_nvml_open(FAKE_OLD, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	one_line(LOG_INFO, (const char *const[]){ "lacks: nvmlDeviceGetRemappedRows;", NULL });
	hbm_nvml_reconcile(h);
	ck_assert_int_eq(heard.nr_lines, 1);
	ck_assert_int_eq(heard.nr_pages, 3);
	ck_assert_int_eq(heard.nr_counts, 2);
	ck_assert_int_eq(heard.counts[0].r.remap_status, HBM_NVML_MISSING);
	ck_assert_int_eq(heard.counts[0].r.ecc_status, HBM_NVML_OK);
	done(h);
}
END_TEST

/* Dispatches @fd until @cond holds (20 s without a record: failed). */
#define DISPATCH_UNTIL(fd, dispatch, cond)						\
	while (!(cond)) {								\
		struct pollfd p_ = { .fd = (fd), .events = POLLIN };			\
											\
		ck_assert_msg(poll(&p_, 1, 20000) == 1, "not yet: %s", #cond);		\
		dispatch;								\
	}

/* Whether a thread of this process is named @name (/proc/self/task/N/comm). */
static bool has_thread(const char *name)
{
	char path[64], comm[32];
	struct dirent *e;
	bool found = false;
	DIR *d = opendir("/proc/self/task");
	FILE *f;

	ck_assert_ptr_nonnull(d);
	while (!found && (e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* . and .. */
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = '\0';
			found = !strcmp(comm, name);
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

static bool outstanding(struct hbm_nvml *h, size_t want)
{
	uint64_t serial;
	size_t gpu;

	return hbm_nvml_read_outstanding(h, &gpu, &serial) && gpu == want;
}

/*
 * A GPU's read again is the reader's: while the H200 hangs (the fake's
 * "hang"), the loop goes on dispatching (the A100's SBE comes through), the
 * A100's read waits behind it, queued once however often asked; the facts
 * come back to the callbacks in the caller's thread (IN_CALLER()), with the
 * DBE counted.  (The hang is long enough for the steps between to fit:
 * what is asserted is the order, not the time.)
 */
START_TEST(reread_by_the_reader)
{
	struct hbm_nvml *h;
	uint64_t serial;
	size_t gpu;
	int fd;

	scenario("hang 10 1 4000\nevent 20 1 dbe\nevent 30 0 sbe\n", true);
	h = hbm_nvml_open(FAKE, &ops, NULL);
	ck_assert_ptr_nonnull(h);
	hbm_nvml_reconcile(h);	/* at start: in this thread, no hang yet */
	ck_assert_int_eq(heard.nr_counts, 2);
	heard.nr_counts = heard.nr_pages = heard.nr_pend = 0;
	ck_assert_int_eq(hbm_nvml_reread(h, 1), -ENOTCONN);	/* no fd yet to answer on */
	fd = hbm_nvml_events_start(h);
	ck_assert_int_ge(fd, 0);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_ev >= 1);
	ck_assert_str_eq(heard.ev[0].uuid, UUID1);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), outstanding(h, 1));
	ck_assert(hbm_nvml_read_outstanding(h, &gpu, &serial));
	ck_assert_uint_eq(serial, 1);
	/* the threads named, for ps and gdb */
	ck_assert(has_thread("hbm-nvml-read"));
	ck_assert(has_thread("hbm-nvml-events"));
	/* the A100 queued once behind it; the H200 again, as its read is out already */
	ck_assert_int_eq(hbm_nvml_reread(h, 0), 1);
	ck_assert_int_eq(hbm_nvml_reread(h, 0), 0);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 0);
	ck_assert_int_eq(hbm_nvml_reread(h, 2), -ENODEV);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_ev >= 2);
	ck_assert_str_eq(heard.ev[1].uuid, UUID0);
	ck_assert_int_eq(heard.ev[1].kind, HBM_NVML_EVENT_SBE);
	/* the A100's event came through while the H200's read was out */
	ck_assert(outstanding(h, 1));
	ck_assert_int_eq(heard.nr_counts, 0);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_counts == 3);
	ck_assert(!hbm_nvml_read_outstanding(h, &gpu, &serial));
	/* in queue order, each GPU's facts as at start, the DBE counted */
	ck_assert_str_eq(heard.counts[0].uuid, UUID1);
	ck_assert_uint_eq(heard.counts[0].r.ecc[HBM_NVML_UNCORRECTED][HBM_NVML_AGGREGATE], 3);
	ck_assert_int_eq(heard.counts[0].r.remap_status, HBM_NVML_OK);
	ck_assert_str_eq(heard.counts[1].uuid, UUID0);
	ck_assert_uint_eq(heard.counts[1].r.ecc[HBM_NVML_CORRECTED][HBM_NVML_AGGREGATE], 41);
	ck_assert_int_eq(heard.nr_pages, 3);
	ck_assert_int_eq(heard.nr_pend, 1);	/* the H200 has no pending status */
	ck_assert_str_eq(heard.counts[2].uuid, UUID1);
	ck_assert_int_eq(heard.nr_lines, 0);
	done(h);
}
END_TEST

/*
 * GPU_IS_LOST found by the reader: the GPU is gone, said once, in the
 * caller's thread (IN_CALLER()), and not read again.  The H200 reports no
 * event ("events 1 0"), so the event thread does not see it go.
 */
START_TEST(reread_finds_lost)
{
	struct hbm_nvml *h;
	int fd;

	scenario("events 1 0\nlost 10 1\nevent 20 0 sbe\n", true);
	h = open_listening(&fd);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_ev >= 1);
	ck_assert_int_eq(heard.nr_gone, 0);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_gone == 1);
	ck_assert_str_eq(heard.gone[0], UUID1);
	ck_assert_int_eq(heard.nr_counts, 0);
	one_line(LOG_WARNING, (const char *const[]){ UUID1, "fallen off the bus", NULL });
	ck_assert_int_eq(hbm_nvml_reread(h, 1), -ENODEV);
	done(h);
}
END_TEST

/*
 * Closing while reads sit in the socket, not yet taken by the loop: their
 * readings (a malloc'd struct each, its pages malloc'd) are freed by close,
 * handed to no callback (the ASan build's leak check sees the rest).
 */
START_TEST(close_with_reads_unread)
{
	struct hbm_nvml *h;
	int fd, inq = 0;

	scenario("", true);
	h = open_listening(&fd);
	ck_assert_int_eq(hbm_nvml_reread(h, 0), 1);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	/* Both reads whole in the socket: begun and done, 40 bytes a record. */
	while (inq < 4 * 40) {
		ck_assert_int_eq(ioctl(fd, SIOCINQ, &inq), 0);
		usleep(1000);
	}
	done(h);
	ck_assert_int_eq(heard.nr_counts, 0);
	ck_assert_int_eq(heard.nr_pages, 0);
	ck_assert_int_eq(heard.nr_lines, 0);
}
END_TEST

/*
 * A reader whose read cannot be handed over for good (its send fails
 * EPIPE: here the loop's end shut for reading, as at close) ends: the
 * loop says it once, at LOG_ERR, its read is no longer out (no false slow
 * warning), and the next reread starts a new reader (the GPU waits in the
 * queue again).  The poll bound is only against a hang.
 */
START_TEST(reader_send_fails)
{
	struct hbm_nvml *h;
	int fd, k;

	scenario("hang 10 1 2000\nevent 20 1 dbe\n", true);
	h = open_listening(&fd);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_ev >= 1);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), outstanding(h, 1));
	ck_assert_int_eq(shutdown(fd, SHUT_RD), 0);	/* the threads' sends fail from now */
	for (k = 0; k < 2000 && !heard.nr_lines; k++) {
		usleep(10000);
		ck_assert_int_eq(hbm_nvml_dispatch(h), 0);
	}
	one_line(LOG_ERR, (const char *const[]){ "reader thread", strerror(EPIPE),
						 "the next read starts a new one", NULL });
	ck_assert(!outstanding(h, 1));
	ck_assert_int_eq(heard.nr_counts, 0);
	/* queued again by the reader that ended; a new one takes it, and ends too */
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 0);
	for (k = 0; k < 2000 && heard.nr_lines < 2; k++) {
		usleep(10000);
		ck_assert_int_eq(hbm_nvml_dispatch(h), 0);
	}
	ck_assert_int_eq(heard.nr_lines, 2);
	ck_assert_int_eq(heard.prio[1], LOG_ERR);
	done(h);
}
END_TEST

/*
 * send() as this program's code calls it: the next one in the lookup order
 * (libc's, or under ASan its interceptor, which checks the buffer), but for
 * the reader thread's next ones when a test asks them to fail (ENOBUFS,
 * what a socket out of memory answers, for now).
 */
static atomic_int reader_sends_to_fail;

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*next_send)(int, const void *, size_t, int);
	char name[16];

	if (atomic_load(&reader_sends_to_fail) > 0 &&
	    !pthread_getname_np(pthread_self(), name, sizeof(name)) &&
	    !strcmp(name, "hbm-nvml-read") && atomic_fetch_sub(&reader_sends_to_fail, 1) > 0) {
		errno = ENOBUFS;
		return -1;
	}
	if (!next_send)
		next_send = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
	return next_send(fd, buf, len, flags);
}

/*
 * pthread_create() likewise: the next one's, but for the next ones when a
 * test asks them to fail (EAGAIN: the system's threads used up).
 */
static atomic_int threads_to_fail;

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*next_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (atomic_load(&threads_to_fail) > 0 && atomic_fetch_sub(&threads_to_fail, 1) > 0)
		return EAGAIN;
	if (!next_create)
		next_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				       void *))dlsym(RTLD_NEXT, "pthread_create");
	return next_create(t, attr, fn, arg);
}

/*
 * A reread while the reader is busy starts no reader: the reader has one.
 * A send that fails for now (ENOBUFS: the socket out of memory) does not
 * end that reader, or what was asked would wait for the next reread: it
 * sends again a little later.  Here the A100 is asked while the H200's read
 * hangs; the H200's read is then lost to a failed send, and the A100's
 * first record too: both GPUs' facts come, the H200's read again first
 * (the A100 went back to the queue behind it), and no line says the reader
 * ended.
 */
START_TEST(reader_send_fails_for_now)
{
	struct hbm_nvml *h;
	int fd;

	scenario("hang 10 1 1000\nevent 20 1 dbe\n", true);
	h = open_listening(&fd);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_ev >= 1);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), outstanding(h, 1));
	atomic_store(&reader_sends_to_fail, 2);	/* the H200's read, the A100's start */
	ck_assert_int_eq(hbm_nvml_reread(h, 0), 1);	/* queued: a reader runs */
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_counts == 2);
	ck_assert_int_eq(atomic_load(&reader_sends_to_fail), 0);
	ck_assert_str_eq(heard.counts[0].uuid, UUID1);
	ck_assert_str_eq(heard.counts[1].uuid, UUID0);
	ck_assert_int_eq(heard.nr_lines, 0);
	done(h);
}
END_TEST

/*
 * Closing while a read hangs in NVML: the join is bounded, the thread left
 * in NVML (not cancelled), one line naming the GPU; close returns (a hang
 * would be Check's timeout) and says that it left a thread.  The hang
 * outlasts the timeout on purpose.
 */
START_TEST(close_while_reading)
{
	struct hbm_nvml *h;
	int fd;

	scenario("hang 10 1 600000\nevent 20 1 dbe\n", true);
	h = open_listening(&fd);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), heard.nr_ev >= 1);
	ck_assert_int_eq(hbm_nvml_reread(h, 1), 1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(hbm_nvml_dispatch(h), 0), outstanding(h, 1));
	ck_assert(hbm_nvml_close(h));	/* left: the caller must _exit() */
	unlink(scn_path);
	one_line(LOG_WARNING, (const char *const[]){ UUID1, "has not answered its read",
						     "left to end with the process", NULL });
	ck_assert_int_eq(heard.nr_counts, 0);
}
END_TEST

/* The facts the core would get (core.h), through the source's link. */
static struct hbm_fact facts[64];
static int nr_facts;

static void on_fact(void *core, const struct hbm_fact *f)
{
	IN_CALLER();
	ck_assert_ptr_eq(core, &nr_facts);
	ck_assert_int_lt(nr_facts, 64);
	facts[nr_facts++] = *f;
}

static const struct hbm_source_link nvml_link = { .fact = on_fact, .core = &nr_facts };

static void fact_is(int i, uint32_t type, const char *uuid)
{
	ck_assert_int_lt(i, nr_facts);
	ck_assert_uint_eq(facts[i].type, type);
	ck_assert_uint_eq(facts[i].origin, HBM_FROM_NVML);
	ck_assert_uint_eq(facts[i].dev.kind, HBM_DEVICE_NVIDIA);
	ck_assert_uint_eq(facts[i].dev.id, HBM_NO_DEVICE_ID);
	ck_assert_str_eq(facts[i].dev.identity, uuid);
	ck_assert_str_eq(facts[i].path, "nvml");
}

/* The facts heard since @start, not read again (PAGES, HEALTH), into @out. */
static int heard_since(int start, struct hbm_fact *out)
{
	int i, n = 0;

	for (i = start; i < nr_facts; i++)
		if (facts[i].type != HBM_FACT_PAGES && facts[i].type != HBM_FACT_HEALTH &&
		    n < 8)
			out[n++] = facts[i];
	return n;
}

START_TEST(as_facts)
{
	struct hbm_fact live[8];
	struct nvml_facts *s;
	int i, fd, start, reread;

	scenario("remap 1 0 2 1 1\n"	/* the H200's remapping failed: RMA */
		 "event 0 0 xid 48\nevent 0 0 dbe\nevent 0 1 sbe\nevent 0 1 xid 999\n"
		 "lost 5 1\n", true);
	nr_facts = 0;
	s = nvml_facts_start(FAKE, &nvml_link);
	ck_assert_ptr_nonnull(s);
	fact_is(0, HBM_FACT_DEVICE_SEEN, UUID0);
	ck_assert_str_eq(facts[0].dev.pci, "0000:3b:00.0");
	ck_assert_str_eq(facts[0].dev.name, "NVIDIA A100-SXM4-80GB");
	ck_assert_uint_eq(facts[0].dev.size, 85899345920ULL);
	ck_assert_uint_eq(facts[0].sync, HBM_SYNC_START);
	fact_is(1, HBM_FACT_DEVICE_SEEN, UUID1);
	ck_assert_str_eq(facts[1].dev.pci, "0000:86:00.0");
	ck_assert_uint_eq(facts[1].dev.size, 150754820096ULL);
	ck_assert_uint_eq(facts[0].dev.page_size, 4096);
	for (i = 2; i < 5; i++) {
		fact_is(i, HBM_FACT_PAGES, UUID0);
		/* node.scn: the A100 has retirements pending, NVML does not say which */
		ck_assert_uint_eq(facts[i].event, HBMGUARD_EVENT_PENDING);
		ck_assert_uint_eq(facts[i].state, HBMGUARD_STATE_PENDING);
		ck_assert_uint_eq(facts[i].length, 4096);
		ck_assert_uint_eq(facts[i].count, 1);
		/* read at start, not heard: old news */
		ck_assert_uint_eq(facts[i].flags, HBM_FACT_UNHEARD);
		ck_assert_uint_eq(facts[i].sync, HBM_SYNC_START);
	}
	ck_assert_uint_eq(facts[2].offset, 0x1a2b000);
	ck_assert_uint_eq(facts[2].source, HBMGUARD_SOURCE_CE_THRESHOLD);
	ck_assert_uint_eq(facts[4].offset, 0x3f00000);
	ck_assert_uint_eq(facts[4].source, HBMGUARD_SOURCE_UE);
	/* Each GPU's last fact: the health its driver's facts give. */
	fact_is(5, HBM_FACT_HEALTH, UUID0);
	ck_assert_uint_eq(facts[5].state, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_uint_eq(facts[5].flags, HBM_FACT_UNHEARD);
	fact_is(6, HBM_FACT_HEALTH, UUID1);
	ck_assert_uint_eq(facts[6].state, HBMGUARD_HEALTH_RMA);
	ck_assert_uint_eq(facts[6].flags, HBM_FACT_UNHEARD);
	ck_assert_int_eq(nr_facts, 7);

	fd = nvml_facts_fd(s);
	ck_assert_int_ge(fd, 0);
	start = nr_facts;
	/* the four heard, and the A100's read again (the reader's: it comes when it comes) */
	while (heard_since(start, live) < 4 || nr_facts - start < 4 + 4) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		ck_assert_msg(poll(&p, 1, 20000) == 1, "%d facts", nr_facts - start);
		ck_assert_int_eq(nvml_facts_dispatch(s), 0);
	}
	/*
	 * After a batch with the A100's DBE and Xid 48, NVML is read again for
	 * it: its pages and health, read, later (.sync 0), not events.
	 */
	for (i = start, reread = 0; i < nr_facts; i++) {
		if (facts[i].type != HBM_FACT_PAGES && facts[i].type != HBM_FACT_HEALTH)
			continue;
		ck_assert_str_eq(facts[i].dev.identity, UUID0);
		ck_assert_uint_eq(facts[i].flags, HBM_FACT_UNHEARD);
		ck_assert_uint_eq(facts[i].sync, 0);
		reread++;
	}
	/* once: the DBE and the Xid within NVML_REREAD_NS, in one batch or two */
	ck_assert_int_eq(reread, 4);
	start = 0;	/* the heard ones, in their order */
	memcpy(facts, live, sizeof(live));
	nr_facts = 4;
	fact_is(start, HBM_FACT_ERROR, UUID0);
	ck_assert_uint_eq(facts[start].flags, 0);	/* heard */
	ck_assert_uint_eq(facts[start].xid, 48);
	/* what it means, from the daemon's one table of Xids (nvlog.c) */
	ck_assert_uint_eq(facts[start].severity, HBM_SEVERITY_UE);
	ck_assert_str_eq(facts[start].text, "double-bit ECC error");
	/* in the module's words, which the journal speaks: DEVICE_ERROR, state the Xid */
	ck_assert_uint_eq(facts[start].event, HBMGUARD_EVENT_DEVICE_ERROR);
	ck_assert_uint_eq(facts[start].state, 48);
	fact_is(start + 1, HBM_FACT_ERROR, UUID0);
	ck_assert_uint_eq(facts[start + 1].severity, HBM_SEVERITY_UE);
	ck_assert_uint_eq(facts[start + 1].xid, 0);
	ck_assert_uint_eq(facts[start + 1].event, HBMGUARD_EVENT_ERROR);
	ck_assert_uint_eq(facts[start + 1].state, HBMGUARD_ERROR_UE);
	ck_assert_uint_eq(facts[start + 1].length, 0);	/* NVML gives no address */
	fact_is(start + 2, HBM_FACT_ERROR, UUID1);
	ck_assert_uint_eq(facts[start + 2].severity, HBM_SEVERITY_CE);
	ck_assert_uint_eq(facts[start + 2].state, HBMGUARD_ERROR_CE);
	/* node.scn's Xid 999 (NVML knew no better) is not about HBM: no fact */
	fact_is(start + 3, HBM_FACT_DEVICE_GONE, UUID1);
	nvml_facts_stop(s);
	unlink(scn_path);
}
END_TEST

START_TEST(as_facts_no_library)
{
	nr_facts = 0;
	ck_assert_ptr_null(nvml_facts_start(HBM_FAKE_NVML_DIR "/none/libnvidia-ml.so.1", &nvml_link));
	ck_assert_int_eq(nr_facts, 0);
}
END_TEST

/*
 * A read out NVML_READ_SLOW_NS (20 s) is said once, a warning naming the
 * GPU (the test gives the time), and its facts are applied when it comes
 * back: the H200's health again, .sync 0, its DBE counted.
 */
START_TEST(as_facts_slow_read)
{
	char log_path[] = "/tmp/hbm-nvml-log-XXXXXX", line[512];
	struct nvml_facts *s;
	uint64_t now;
	int fd, said = 0, start;
	FILE *f;

	fd = mkstemp(log_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	scenario("hang 10 1 3000\nevent 20 1 dbe\n", true);
	nr_facts = 0;
	s = nvml_facts_start(FAKE, &nvml_link);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(freopen(log_path, "w", stderr));
	fd = nvml_facts_fd(s);
	ck_assert_int_ge(fd, 0);
	start = nr_facts;
	ck_assert_int_eq(nvml_facts_check_reads(s, hbm_monotonic_ns()), -1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(nvml_facts_dispatch(s), 0),
		       nvml_facts_check_reads(s, hbm_monotonic_ns()) == 1);
	now = hbm_monotonic_ns();
	ck_assert_int_eq(nvml_facts_check_reads(s, now + 19000000000ULL), 1);
	ck_assert_int_eq(nvml_facts_check_reads(s, now + 21000000000ULL), 1);
	ck_assert_int_eq(nvml_facts_check_reads(s, now + 60000000000ULL), 1);
	DISPATCH_UNTIL(fd, ck_assert_int_eq(nvml_facts_dispatch(s), 0),
		       facts[nr_facts - 1].type == HBM_FACT_HEALTH);
	ck_assert_int_eq(nvml_facts_check_reads(s, hbm_monotonic_ns()), -1);
	fact_is(start, HBM_FACT_ERROR, UUID1);
	fact_is(nr_facts - 1, HBM_FACT_HEALTH, UUID1);
	ck_assert_uint_eq(facts[nr_facts - 1].sync, 0);
	ck_assert_uint_eq(facts[nr_facts - 1].driver.ue, 3);
	fflush(stderr);
	f = fopen(log_path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "has not answered the read of its tables")) {
			said++;
			ck_assert_msg(strstr(line, "<4>hbmguardd: nvml: GPU " UUID1
					      " (00000000:86:00.0) has not answered the read of "
					      "its tables for 20 s"), "%s", line);
		}
	fclose(f);
	ck_assert_int_eq(said, 1);
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	unlink(log_path);
	nvml_facts_stop(s);
	unlink(scn_path);
}
END_TEST

/* A PCI domain past 0xffff (VMD's): named as the kernel names it, pci_name(). */
START_TEST(as_facts_wide_domain)
{
	struct nvml_facts *s;

	scenario("gpu GPU-v 00010000:01:00.0 1073741824 NVIDIA V\n", false);
	nr_facts = 0;
	s = nvml_facts_start(FAKE, &nvml_link);
	ck_assert_ptr_nonnull(s);
	fact_is(0, HBM_FACT_DEVICE_SEEN, "GPU-v");
	ck_assert_str_eq(facts[0].dev.pci, "10000:01:00.0");
	nvml_facts_stop(s);
	unlink(scn_path);
}
END_TEST

/* A library without a function NVML cannot be used without: one line. */
START_TEST(ancient_library)
{
	scenario("", true);
	ck_assert_ptr_null(hbm_nvml_open(FAKE_ANCIENT, &ops, NULL));
	one_line(LOG_ERR, (const char *const[]){ "has no nvmlDeviceGetPciInfo_v3",
		 "NVML not used", NULL });
	ck_assert_int_eq(heard.nr_seen, 0);
	unlink(scn_path);
}
END_TEST

/*
 * The registrar (daemon/gpus.c) between the NVML source and a module, through
 * the real core (daemon/core.c): a module that keeps its GPUs' tables as
 * hbmguard.ko does, as far as the registrar can tell (a RETIRE of a page
 * the table has moves its last_seen, as hbm_table_apply() does).
 */
struct fake_gpu {
	struct device dev;
	struct hbm_state_record r[16];
	size_t nr;
	uint32_t health;
};

static struct {
	struct fake_gpu gpu[4];
	size_t nr;
	int registers, eexist, retires, pending_retires, health_sets, health_changes;
	struct hbm_fact_device reg;	/* the last registration */
} mod;

static int mod_list(void *ctx, struct device_list *l)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < mod.nr; i++)
		l->dev[l->nr++] = mod.gpu[i].dev;
	return 0;
}

static struct fake_gpu *mod_gpu(const struct device *dev)
{
	ck_assert_uint_lt(dev->id, mod.nr);
	ck_assert_str_eq(mod.gpu[dev->id].dev.identity, dev->identity);
	return &mod.gpu[dev->id];
}

static int mod_dump(void *ctx, const struct device *dev, struct hbm_extents *x)
{
	struct fake_gpu *g = mod_gpu(dev);
	size_t i;

	(void)ctx;
	for (i = 0; i < g->nr; i++)
		ck_assert(hbm_extents_push(x, &g->r[i]));
	return 0;
}

/* A page into the table, sorted; the source of a page new to it. */
static void mod_put(struct fake_gpu *g, uint64_t offset, uint8_t state, uint8_t source)
{
	size_t i, at = 0;

	for (i = 0; i < g->nr; i++) {
		if (g->r[i].offset == offset) {
			g->r[i].last_seen++;
			if (g->r[i].state == HBMGUARD_STATE_PENDING)
				g->r[i].state = state;
			return;
		}
		if (g->r[i].offset < offset)
			at = i + 1;
	}
	ck_assert_uint_lt(g->nr, 16);
	memmove(&g->r[at + 1], &g->r[at], (g->nr - at) * sizeof(g->r[0]));
	g->r[at] = (struct hbm_state_record){ .offset = offset, .length = 4096, .state = state,
					      .source = source, .first_seen = 1, .last_seen = 1 };
	g->nr++;
}

static int mod_change(void *ctx, const struct device *dev, uint16_t type,
		      const struct hbm_ctl_extent *x)
{
	struct fake_gpu *g = mod_gpu(dev);

	(void)ctx;
	ck_assert_uint_eq(type, HBM_CTL_RETIRE);
	ck_assert_str_eq(x->identity, dev->identity);
	ck_assert_uint_eq(x->length, 4096);
	if (x->offset >= dev->size || x->length > dev->size - x->offset)
		return -ERANGE;		/* as hbm_device_apply() */
	mod.retires++;
	mod.pending_retires += !!(x->flags & HBM_CTL_PENDING);
	mod_put(g, x->offset, x->flags & HBM_CTL_PENDING ? HBMGUARD_STATE_PENDING :
			      HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_DRIVER);
	return 0;
}

static void mod_restore(void *ctx, const struct device *dev, const struct hbm_state *stored)
{
	(void)ctx;
	(void)dev;
	(void)stored;
}

static int mod_register(void *ctx, const struct hbm_fact_device *gpu)
{
	struct fake_gpu *g;
	size_t i;

	(void)ctx;
	mod.registers++;
	mod.reg = *gpu;
	for (i = 0; i < mod.nr; i++)
		if (!strcmp(mod.gpu[i].dev.identity, gpu->identity)) {
			mod.eexist++;
			return -EEXIST;
		}
	ck_assert_uint_lt(mod.nr, 4);
	g = &mod.gpu[mod.nr];
	memset(g, 0, sizeof(*g));
	g->dev = (struct device){ .id = mod.nr, .page_size = gpu->page_size,
				  .kind = HBMGUARD_KIND_GPU, .size = gpu->size };
	snprintf(g->dev.identity, sizeof(g->dev.identity), "%s", gpu->identity);
	snprintf(g->dev.pci, sizeof(g->dev.pci), "%s", gpu->pci);
	mod.nr++;
	return 0;
}

static int mod_health(void *ctx, const struct device *dev, uint32_t health)
{
	struct fake_gpu *g = mod_gpu(dev);

	(void)ctx;
	mod.health_sets++;
	mod.health_changes += g->health != health;
	g->health = health;
	return 0;
}

static const struct hbm_source_ops mod_ops = {
	.origin = HBM_FROM_KERNEL, .list = mod_list, .dump = mod_dump, .restore = mod_restore,
	.change = mod_change, .gpu_register = mod_register, .gpu_health = mod_health,
};

static struct hbmd_core reg_core;
static struct hbm_gpus registrar;

static void module_sees(const struct hbm_source_link *link, size_t i, enum hbm_sync why);

/* A daemon's start: the core, its registrar, and the module's GPUs as kernel.c says them. */
static struct nvml_facts *daemon_start(bool module_first)
{
	const struct hbm_sink sink = { .name = "gpus", .fact = gpus_fact, .ctx = &registrar };
	struct hbm_source_link link;
	struct nvml_facts *s;
	size_t i;

	core_init(&reg_core, &mod_ops, &mod);
	ck_assert_int_eq(core_add_sink(&reg_core, &sink), 0);
	gpus_start(&registrar, &reg_core);
	link = core_link(&reg_core);
	for (i = 0; module_first && i < mod.nr; i++)
		module_sees(&link, i, HBM_SYNC_START);
	s = nvml_facts_start(FAKE, &link);
	ck_assert_ptr_nonnull(s);
	return s;
}

static void daemon_stop(struct nvml_facts *s)
{
	nvml_facts_stop(s);
	gpus_stop(&registrar);
}

/* The module's DEVICE_SEEN of its GPU @i (kernel.c's sync_devices()). */
static void module_sees(const struct hbm_source_link *link, size_t i, enum hbm_sync why)
{
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_SEEN, .origin = HBM_FROM_KERNEL,
			      .sync = why };

	f.dev.id = mod.gpu[i].dev.id;
	f.dev.kind = HBM_DEVICE_GPU;
	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", mod.gpu[i].dev.identity);
	snprintf(f.dev.pci, sizeof(f.dev.pci), "%s", mod.gpu[i].dev.pci);
	f.dev.page_size = mod.gpu[i].dev.page_size;
	f.dev.size = mod.gpu[i].dev.size;
	link->fact(link->core, &f);
}

static void all_seen(void)
{
	struct hbm_source_link link = core_link(&reg_core);
	size_t i;

	for (i = 0; i < mod.nr; i++)
		module_sees(&link, i, HBM_SYNC_ADDED);
}

START_TEST(registrar_imports_once)
{
	struct hbm_state_record before[16];
	struct nvml_facts *s;
	size_t i;

	memset(&mod, 0, sizeof(mod));
	scenario("", true);
	s = daemon_start(false);
	/* Both registered as the kernel names them; nothing retired before the
	 * module announced them (the store restores first). */
	ck_assert_int_eq(mod.registers, 2);
	ck_assert_str_eq(mod.gpu[0].dev.identity, UUID0);
	ck_assert_str_eq(mod.gpu[0].dev.pci, "0000:3b:00.0");
	ck_assert_uint_eq(mod.gpu[0].dev.size, 85899345920ULL);
	ck_assert_uint_eq(mod.gpu[0].dev.page_size, 4096);
	ck_assert_str_eq(mod.gpu[1].dev.pci, "0000:86:00.0");
	ck_assert_str_eq(mod.reg.name, "nvidia-0000:86:00.0");
	ck_assert_int_eq(mod.retires, 0);
	all_seen();
	/* The A100's three pages, pending as NVML says some are; both GPUs
	 * wait for a reset (a retirement, a row remap pending). */
	ck_assert_int_eq(mod.retires, 3);
	ck_assert_int_eq(mod.pending_retires, 3);
	ck_assert_uint_eq(mod.gpu[0].nr, 3);
	ck_assert_uint_eq(mod.gpu[0].r[0].offset, 0x1a2b000);
	ck_assert_uint_eq(mod.gpu[0].r[2].offset, 0x3f00000);
	ck_assert_uint_eq(mod.gpu[1].nr, 0);
	ck_assert_uint_eq(mod.gpu[0].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_int_eq(mod.health_changes, 2);
	daemon_stop(s);

	/* A restart: the module has them, the same facts again change nothing. */
	memcpy(before, mod.gpu[0].r, sizeof(before));
	s = daemon_start(true);
	ck_assert_int_eq(mod.registers, 4);
	ck_assert_int_eq(mod.eexist, 2);
	ck_assert_int_eq(mod.retires, 3);
	ck_assert_int_eq(mod.health_changes, 2);
	ck_assert_mem_eq(before, mod.gpu[0].r, sizeof(before));
	daemon_stop(s);
	unlink(scn_path);

	/* The driver completed them (a reboot, after which the store restored
	 * them as they were), and the remap: RETIRED, ok. */
	scenario("pending 0 0\nremap 1 0 2 0 0\n", true);
	s = daemon_start(true);
	ck_assert_int_eq(mod.retires, 6);
	ck_assert_int_eq(mod.pending_retires, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(mod.gpu[0].r[i].state, HBMGUARD_STATE_RETIRED);
		ck_assert_uint_eq(mod.gpu[0].r[i].source, HBMGUARD_SOURCE_DRIVER);
	}
	ck_assert_uint_eq(mod.gpu[0].health, HBMGUARD_HEALTH_OK);
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_OK);
	daemon_stop(s);
	memcpy(before, mod.gpu[0].r, sizeof(before));
	s = daemon_start(true);
	ck_assert_int_eq(mod.retires, 6);
	ck_assert_mem_eq(before, mod.gpu[0].r, sizeof(before));
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

/* After a reboot the store restored the pages before the registrar looks. */
/*
 * A page the driver retires while the daemon runs: its Xid 63 makes the
 * source read the GPU again, and the registrar records that page, and only
 * that one.
 */
START_TEST(registrar_follows_xid63)
{
	struct hbm_ctl_gpu gpu;
	struct nvml_facts *s;
	sd_event *loop;
	int i, changes;

	memset(&mod, 0, sizeof(mod));
	scenario("pending 0 0\nevent 50 0 xid 63 retire dbe 0x4000000 1700000300\n"
		 "event 150 0 xid 63 retire sbe 0x4001000 1700000301\n", true);
	s = daemon_start(false);
	all_seen();
	ck_assert_int_eq(mod.retires, 3);
	changes = mod.health_changes;
	ck_assert_int_ge(sd_event_new(&loop), 0);
	ck_assert_int_eq(nvml_facts_watch(s, loop), 0);
	/* the second within NVML_REREAD_NS of the first: read by the timer */
	for (i = 0; i < 100 && mod.retires < 5; i++)
		ck_assert_int_ge(sd_event_run(loop, 100000), 0);
	ck_assert_int_eq(mod.retires, 5);
	ck_assert_int_eq(mod.pending_retires, 0);
	ck_assert_uint_eq(mod.gpu[0].nr, 5);
	ck_assert_uint_eq(mod.gpu[0].r[3].offset, 0x4000000);
	ck_assert_uint_eq(mod.gpu[0].r[3].state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(mod.gpu[0].r[4].offset, 0x4001000);
	/* each of the driver's pages kept once, by its cause, though read thrice */
	ck_assert_int_eq(gpus_get(&registrar, 0, &gpu), 0);
	ck_assert_uint_eq(gpu.retired_ue, 2);
	ck_assert_uint_eq(gpu.retired_ce, 3);
	/* the health the driver's facts give has not changed: not set again */
	ck_assert_int_eq(mod.health_changes, changes);
	daemon_stop(s);
	sd_event_unref(loop);
	unlink(scn_path);
}
END_TEST

/*
 * A reader thread that cannot start (pthread_create() fails once, EAGAIN)
 * when the Xid 63 asks for the GPU's tables: the page the driver retired
 * reaches the registrar all the same, read at the next try, a timer's
 * NVML_REREAD_NS later, not at the GPU's next event (none comes here).
 */
START_TEST(registrar_reader_cannot_start)
{
	struct nvml_facts *s;
	sd_event *loop;
	int i;

	memset(&mod, 0, sizeof(mod));
	scenario("pending 0 0\nevent 50 0 xid 63 retire dbe 0x4000000 1700000300\n", true);
	s = daemon_start(false);
	all_seen();
	ck_assert_int_eq(mod.retires, 3);
	atomic_store(&threads_to_fail, 1);	/* the reader, the first thread from now */
	ck_assert_int_ge(sd_event_new(&loop), 0);
	ck_assert_int_eq(nvml_facts_watch(s, loop), 0);
	for (i = 0; i < 100 && mod.retires < 4; i++)
		ck_assert_int_ge(sd_event_run(loop, 100000), 0);
	ck_assert_int_eq(atomic_load(&threads_to_fail), 0);
	ck_assert_int_eq(mod.retires, 4);
	ck_assert_uint_eq(mod.gpu[0].r[3].offset, 0x4000000);
	ck_assert_uint_eq(mod.gpu[0].r[3].state, HBMGUARD_STATE_RETIRED);
	daemon_stop(s);
	sd_event_unref(loop);
	unlink(scn_path);
}
END_TEST

/* A GPU's health read again in part: worse is taken, better is not. */
static void later_health(const char *uuid, uint32_t health, bool partial)
{
	struct hbm_source_link link = core_link(&reg_core);
	struct hbm_fact f = { .type = HBM_FACT_HEALTH, .origin = HBM_FROM_NVML,
			      .flags = HBM_FACT_UNHEARD | (partial ? HBM_FACT_PARTIAL : 0),
			      .event = HBMGUARD_EVENT_HEALTH, .state = health };

	f.dev.id = HBM_NO_DEVICE_ID;
	f.dev.kind = HBM_DEVICE_NVIDIA;
	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", uuid);
	link.fact(link.core, &f);
}

START_TEST(registrar_partial_tells_worse)
{
	struct nvml_facts *s;

	memset(&mod, 0, sizeof(mod));
	scenario("remap 1 0 2 1 1\n", true);	/* the A100 pending, the H200's remap failed */
	s = daemon_start(false);
	all_seen();
	ck_assert_uint_eq(mod.gpu[0].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_RMA);
	later_health(UUID1, HBMGUARD_HEALTH_RESET_REQUIRED, true);
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_RMA);
	later_health(UUID0, HBMGUARD_HEALTH_OK, true);
	ck_assert_uint_eq(mod.gpu[0].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	later_health(UUID0, HBMGUARD_HEALTH_RMA, true);
	ck_assert_uint_eq(mod.gpu[0].health, HBMGUARD_HEALTH_RMA);
	/* read whole, the driver's word stands: a reset completed the remap */
	later_health(UUID1, HBMGUARD_HEALTH_OK, false);
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_OK);
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

START_TEST(registrar_restored_pages_stay)
{
	struct nvml_facts *s;

	memset(&mod, 0, sizeof(mod));
	scenario("pending 0 0\n", true);
	s = daemon_start(false);
	mod_put(&mod.gpu[0], 0x1a2b000, HBMGUARD_STATE_RETIRED, HBMGUARD_SOURCE_RESTORED);
	mod_put(&mod.gpu[0], 0x3f00000, HBMGUARD_STATE_PENDING, HBMGUARD_SOURCE_RESTORED);
	all_seen();
	/* 0x1a2c000 new, 0x3f00000 from pending to retired; 0x1a2b000 left alone */
	ck_assert_int_eq(mod.retires, 2);
	ck_assert_int_eq(mod.pending_retires, 0);
	ck_assert_uint_eq(mod.gpu[0].r[0].last_seen, 1);
	ck_assert_uint_eq(mod.gpu[0].r[0].source, HBMGUARD_SOURCE_RESTORED);
	ck_assert_uint_eq(mod.gpu[0].r[1].source, HBMGUARD_SOURCE_DRIVER);
	ck_assert_uint_eq(mod.gpu[0].r[2].state, HBMGUARD_STATE_RETIRED);
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

/*
 * A retired page above what NVML counts as memory: the device covers it; one
 * far beyond (a broken library's) is refused alone, the others recorded.
 */
START_TEST(registrar_sizes_to_the_pages)
{
	struct nvml_facts *s;

	memset(&mod, 0, sizeof(mod));
	scenario("retired 0 dbe 0x1500000000 1700000300\n"
		 "retired 0 dbe 0x7000000000000000 1700000400\n", true);
	s = daemon_start(false);
	ck_assert_uint_eq(mod.gpu[0].dev.size, 0x1500001000ULL);
	ck_assert_uint_eq(mod.gpu[1].dev.size, 150754820096ULL);
	all_seen();
	ck_assert_int_eq(mod.retires, 4);
	ck_assert_uint_eq(mod.gpu[0].nr, 4);
	ck_assert_uint_eq(mod.gpu[0].r[3].offset, 0x1500000000ULL);
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

/*
 * The module reloaded under the daemon: its GPUs registered again and
 * recorded, whether the core says their ids are gone or another device's.
 */
START_TEST(registrar_module_reloaded)
{
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_SEEN, .origin = HBM_FROM_KERNEL,
			      .sync = HBM_SYNC_ADDED, .dev = { .id = 0, .kind = HBM_DEVICE_RANGE,
							       .identity = "sim:x" } };
	struct hbm_source_link link;
	struct nvml_facts *s;

	memset(&mod, 0, sizeof(mod));
	scenario("", true);
	s = daemon_start(false);
	all_seen();
	ck_assert_int_eq(mod.registers, 2);
	ck_assert_int_eq(mod.retires, 3);
	/* A new module, a simulated device first: id 0, the A100's */
	memset(&mod.gpu, 0, sizeof(mod.gpu));
	snprintf(mod.gpu[0].dev.identity, sizeof(mod.gpu[0].dev.identity), "sim:x");
	mod.nr = 1;
	link = core_link(&reg_core);
	link.fact(link.core, &f);
	ck_assert_int_eq(mod.registers, 3);
	ck_assert_str_eq(mod.gpu[1].dev.identity, UUID0);
	/* the A100 at 1, the H200's: it goes again too */
	module_sees(&link, 1, HBM_SYNC_ADDED);
	ck_assert_int_eq(mod.registers, 4);
	ck_assert_str_eq(mod.gpu[2].dev.identity, UUID1);
	ck_assert_int_eq(mod.retires, 6);
	ck_assert_uint_eq(mod.gpu[1].nr, 3);
	module_sees(&link, 2, HBM_SYNC_ADDED);
	ck_assert_uint_eq(mod.gpu[2].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	/* ...and the core's DEVICE_GONE of an id */
	f.type = HBM_FACT_DEVICE_GONE;
	f.dev.id = 2;
	mod.nr = 2;
	link.fact(link.core, &f);
	ck_assert_int_eq(mod.registers, 5);
	ck_assert_str_eq(mod.gpu[2].dev.identity, UUID1);
	ck_assert_int_eq(mod.eexist, 0);
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

/* A GPU that falls off the bus: reset required, and nothing more. */
START_TEST(registrar_gpu_lost)
{
	struct nvml_facts *s;
	int fd, changes;

	memset(&mod, 0, sizeof(mod));
	scenario("remap 1 0 2 0 0\nlost 5 1\n", true);
	s = daemon_start(false);
	all_seen();
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_OK);
	changes = mod.health_changes;
	fd = nvml_facts_fd(s);
	ck_assert_int_ge(fd, 0);
	while (mod.gpu[1].health == HBMGUARD_HEALTH_OK) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		ck_assert_msg(poll(&p, 1, 20000) == 1, "no loss heard");
		nvml_facts_dispatch(s);
	}
	ck_assert_uint_eq(mod.gpu[1].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_int_eq(mod.health_changes, changes + 1);
	ck_assert_uint_eq(mod.gpu[0].health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_int_eq(mod.retires, 3);
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

/*
 * What hbmctl gpus shows (gpus_get()): node.scn's GPUs as NVML reports them,
 * beside the module's device; an Xid heard, an ECC event counted on top.
 */
START_TEST(registrar_lists)
{
	struct hbm_source_link link;
	struct hbm_ctl_gpu g;
	struct nvml_facts *s;
	struct hbm_fact f = { .type = HBM_FACT_ERROR, .origin = HBM_FROM_KMSG, .xid = 48,
			      .severity = HBM_SEVERITY_UE, .count = 1, .time = 1700000000123456789ULL,
			      .path = "kmsg" };
	uint64_t pkt[HBM_CTL_MAX_PACKET / 8];
	struct hbm_ctl_header h;
	const void *body;
	size_t len;

	memset(&mod, 0, sizeof(mod));
	scenario("", true);
	s = daemon_start(false);
	/* found, not numbered by the module yet */
	ck_assert_int_eq(gpus_get(&registrar, 0, &g), 0);
	ck_assert_uint_eq(g.device, HBM_CTL_NO_DEVICE);
	ck_assert_str_eq(g.name, "");
	all_seen();
	ck_assert_int_eq(gpus_get(&registrar, 0, &g), 0);
	ck_assert_uint_eq(g.index, 0);
	ck_assert_uint_eq(g.total, 2);
	ck_assert_str_eq(g.identity, UUID0);
	ck_assert_str_eq(g.pci, "0000:3b:00.0");
	ck_assert_str_eq(g.model, "NVIDIA A100-SXM4-80GB");
	ck_assert_uint_eq(g.vendor, HBM_CTL_GPU_NVML);
	ck_assert_uint_eq(g.device, 0);
	ck_assert_str_eq(g.name, "nvidia-0000:3b:00.0");
	ck_assert_uint_eq(g.sources, HBM_CTL_GPU_NVML);
	ck_assert_uint_eq(g.health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_uint_eq(g.flags, HBM_CTL_GPU_REMAP | HBM_CTL_GPU_ECC);
	/* "retired 0 sbe" twice, "dbe" once, "pending 0 1": all three pending */
	ck_assert_uint_eq(g.pending, 3);
	ck_assert_uint_eq(g.retired_ue, 0);
	ck_assert_uint_eq(g.retired_ce, 0);
	/* "remap 0 3 1 0 0", "ecc 0 12 1 40 2": the aggregate counts */
	ck_assert_uint_eq(g.remap_corrected, 3);
	ck_assert_uint_eq(g.remap_uncorrected, 1);
	ck_assert_uint_eq(g.remap_pending, 0);
	ck_assert_uint_eq(g.remap_failure, 0);
	ck_assert_uint_eq(g.ue, 2);
	ck_assert_uint_eq(g.ce, 40);
	ck_assert_uint_eq(g.last_xid, 0);
	ck_assert_uint_eq(g.size, 85899345920ULL);
	ck_assert_int_eq(gpus_get(&registrar, 1, &g), 0);
	ck_assert_str_eq(g.identity, UUID1);
	ck_assert_str_eq(g.model, "NVIDIA H200");
	ck_assert_uint_eq(g.device, 1);
	ck_assert_uint_eq(g.pending + g.retired_ue + g.retired_ce + g.failed, 0);
	ck_assert_uint_eq(g.remap_uncorrected, 2);
	ck_assert_uint_eq(g.remap_pending, 1);
	ck_assert_uint_eq(g.ue, 2);
	ck_assert_uint_eq(g.ce, 7);
	ck_assert_uint_eq(g.health, HBMGUARD_HEALTH_RESET_REQUIRED);
	ck_assert_int_eq(gpus_get(&registrar, 2, &g), -ENOENT);
	ck_assert_int_eq(gpus_get(&registrar, UINT32_MAX, &g), -ENOENT);

	/* an Xid from the kernel log, then a DBE event of NVML's own */
	link = core_link(&reg_core);
	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", UUID1);
	f.dev.id = 1;
	f.dev.kind = HBM_DEVICE_GPU;
	link.fact(link.core, &f);
	f = (struct hbm_fact){ .type = HBM_FACT_ERROR, .origin = HBM_FROM_NVML, .count = 1,
			       .severity = HBM_SEVERITY_UE, .dev.id = HBM_NO_DEVICE_ID,
			       .dev.kind = HBM_DEVICE_NVIDIA };
	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", UUID1);
	link.fact(link.core, &f);
	ck_assert_int_eq(gpus_get(&registrar, 1, &g), 0);
	ck_assert_uint_eq(g.sources, HBM_CTL_GPU_NVML | HBM_CTL_GPU_KMSG);
	ck_assert_uint_eq(g.last_xid, 48);
	ck_assert_uint_eq(g.last_xid_at, 1700000000123456ULL);
	ck_assert_uint_eq(g.ue, 3);
	ck_assert_uint_eq(g.ce, 7);
	/* a GPU the module has and no source found (registered by hand): as the module says */
	mod.gpu[2].dev = (struct device){ .id = 2, .identity = "GPU-by-hand", .page_size = 4096,
					  .kind = HBMGUARD_KIND_GPU, .pci = "0000:99:00.0",
					  .size = 1 << 30 };
	mod.nr = 3;
	module_sees(&link, 2, HBM_SYNC_ADDED);
	ck_assert_int_eq(gpus_get(&registrar, 2, &g), 0);
	ck_assert_uint_eq(g.total, 3);
	ck_assert_str_eq(g.identity, "GPU-by-hand");
	ck_assert_str_eq(g.pci, "0000:99:00.0");
	ck_assert_uint_eq(g.vendor, 0);
	ck_assert_uint_eq(g.device, 2);
	ck_assert_str_eq(g.name, "");
	ck_assert_uint_eq(g.sources, 0);
	ck_assert_uint_eq(g.size, 1 << 30);
	ck_assert_int_eq(mod.registers, 2);
	ck_assert_int_eq(gpus_get(&registrar, 1, &g), 0);
	/* as the control socket sends it: a reply hbmctl takes */
	len = hbm_ctl_encode(pkt, sizeof(pkt), HBM_CTL_GPU_GET | HBM_CTL_REPLY, 1, 0, &g);
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(hbm_ctl_decode(pkt, len, true, &h, &body), 0);
	ck_assert_mem_eq(body, &g, sizeof(g));
	daemon_stop(s);
	unlink(scn_path);
}
END_TEST

Suite *nvml_suite(void)
{
	Suite *s = suite_create("nvml");
	TCase *tc = tcase_create("fake libnvidia-ml");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, discovery);
	tcase_add_test(tc, reconcile);
	tcase_add_test(tc, many_pages);
	tcase_add_test(tc, events);
	tcase_add_test(tc, events_subset);
	tcase_add_test(tc, lost_after_reconcile);
	tcase_add_test(tc, close_while_full);
	tcase_add_test(tc, dispatch_batch);
	tcase_add_test(tc, events_start_twice);
	tcase_add_test(tc, reread_by_the_reader);
	tcase_add_test(tc, reread_finds_lost);
	tcase_add_test(tc, reader_send_fails);
	tcase_add_test(tc, reader_send_fails_for_now);
	tcase_add_test(tc, close_with_reads_unread);
	tcase_add_test(tc, close_while_reading);
	tcase_add_loop_test(tc, error_paths, 0, sizeof(errors) / sizeof(errors[0]));
	tcase_add_loop_test(tc, broken_counts, 0, sizeof(broken) / sizeof(broken[0]));
	tcase_add_test(tc, register_unknown);
	tcase_add_test(tc, wait_fails);
	tcase_add_test(tc, no_library);
	tcase_add_test(tc, old_library);
	tcase_add_test(tc, ancient_library);
	tcase_add_test(tc, as_facts);
	tcase_add_test(tc, as_facts_no_library);
	tcase_add_test(tc, as_facts_slow_read);
	tcase_add_test(tc, as_facts_wide_domain);
	tcase_add_test(tc, registrar_imports_once);
	tcase_add_test(tc, registrar_follows_xid63);
	tcase_add_test(tc, registrar_reader_cannot_start);
	tcase_add_test(tc, registrar_partial_tells_worse);
	tcase_add_test(tc, registrar_restored_pages_stay);
	tcase_add_test(tc, registrar_sizes_to_the_pages);
	tcase_add_test(tc, registrar_module_reloaded);
	tcase_add_test(tc, registrar_gpu_lost);
	tcase_add_test(tc, registrar_lists);
	suite_add_tcase(s, tc);
	return s;
}
