// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of hbmguardd's core (daemon/core.c): one Xid heard by two
 * sources (the module's tracepoint, the kernel log) is one fact to the sinks.
 */
#include <stdio.h>
#include <string.h>

#include "../../daemon/core.h"	/* "core.h" alone is the module's table */
#include "unit.h"

static struct hbmd_core core;
static uint64_t clock_ns;
static unsigned int taken;		/* ERROR facts the sink got */
static char last_path[32];

static uint64_t test_clock(void)
{
	return clock_ns;
}

static void sink(void *ctx, const struct hbm_fact *f)
{
	(void)ctx;
	if (f->type == HBM_FACT_ERROR) {
		taken++;
		strcpy(last_path, f->path);
	}
}

static void setup(void)
{
	struct hbm_sink s = { .name = "test", .fact = sink };

	core_init(&core, NULL, NULL);
	core.now = test_clock;
	clock_ns = 1000;
	taken = 0;
	ck_assert_int_eq(core_add_sink(&core, &s), 0);
}

/* Xid @xid on GPU @gpu as source @origin says it. */
static void xid(uint32_t origin, const char *gpu, uint32_t xid)
{
	struct hbm_source_link link = core_link(&core);
	struct hbm_fact f = { .type = HBM_FACT_ERROR, .origin = origin,
			      .event = HBMGUARD_EVENT_DEVICE_ERROR, .state = xid, .xid = xid,
			      .severity = HBM_SEVERITY_UE, .dev.id = 1 };

	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", gpu);
	snprintf(f.path, sizeof(f.path), "%s", origin == HBM_FROM_KMSG ? "kmsg" : "tracepoint");
	link.fact(link.core, &f);
}

#define GPU "GPU-7f3c9a2e-1b4d-4e8f-9c6a-0000001f0000"

/* The tracepoint then the log line, and the other way round: once each. */
START_TEST(one_xid_two_sources)
{
	setup();
	xid(HBM_FROM_KERNEL, GPU, 48);
	clock_ns += 1000000;
	xid(HBM_FROM_KMSG, GPU, 48);
	ck_assert_uint_eq(taken, 1);
	ck_assert_str_eq(last_path, "tracepoint");
	ck_assert_uint_eq(core.events_seen, 1);

	clock_ns += HBM_XID_WINDOW_NS;
	xid(HBM_FROM_KMSG, GPU, 48);
	xid(HBM_FROM_KERNEL, GPU, 48);
	ck_assert_uint_eq(taken, 2);
	ck_assert_str_eq(last_path, "kmsg");
}
END_TEST

/* Two Xids each source heard: two events, in whatever order they come. */
START_TEST(two_xids_two_sources)
{
	setup();
	xid(HBM_FROM_KERNEL, GPU, 48);
	xid(HBM_FROM_KMSG, GPU, 48);
	xid(HBM_FROM_KERNEL, GPU, 48);
	xid(HBM_FROM_KMSG, GPU, 48);
	ck_assert_uint_eq(taken, 2);

	clock_ns += HBM_XID_WINDOW_NS;
	xid(HBM_FROM_KERNEL, GPU, 95);
	xid(HBM_FROM_KERNEL, GPU, 95);	/* one source twice: two reports */
	ck_assert_uint_eq(taken, 4);
	xid(HBM_FROM_KMSG, GPU, 95);
	xid(HBM_FROM_KMSG, GPU, 95);
	ck_assert_uint_eq(taken, 4);
	xid(HBM_FROM_KMSG, GPU, 95);	/* a third the tracepoint did not give */
	ck_assert_uint_eq(taken, 5);
}
END_TEST

/* Another Xid, another GPU, or the window passed: another event. */
START_TEST(what_is_not_a_twin)
{
	setup();
	xid(HBM_FROM_KERNEL, GPU, 48);
	xid(HBM_FROM_KMSG, GPU, 94);
	xid(HBM_FROM_KMSG, "GPU-other", 48);
	ck_assert_uint_eq(taken, 3);
	clock_ns += HBM_XID_WINDOW_NS - 1;
	xid(HBM_FROM_KMSG, GPU, 48);	/* just inside */
	ck_assert_uint_eq(taken, 3);
	xid(HBM_FROM_KERNEL, GPU, 94);
	ck_assert_uint_eq(taken, 3);
	clock_ns += 1;
	xid(HBM_FROM_KERNEL, "GPU-other", 48);	/* its twin is past the window */
	ck_assert_uint_eq(taken, 4);
}
END_TEST

/* More Xids than remembered: the oldest is forgotten, nothing else. */
START_TEST(table_full)
{
	char gpu[32];
	unsigned int i;

	setup();
	for (i = 0; i <= HBM_XID_HEARD; i++) {
		snprintf(gpu, sizeof(gpu), "GPU-%u", i);
		xid(HBM_FROM_KERNEL, gpu, 48);
		clock_ns++;
	}
	ck_assert_uint_eq(taken, HBM_XID_HEARD + 1);
	xid(HBM_FROM_KMSG, "GPU-0", 48);	/* forgotten: counts again */
	ck_assert_uint_eq(taken, HBM_XID_HEARD + 2);
	for (i = 2; i <= HBM_XID_HEARD; i++) {
		snprintf(gpu, sizeof(gpu), "GPU-%u", i);
		xid(HBM_FROM_KMSG, gpu, 48);	/* all still remembered */
	}
	ck_assert_uint_eq(taken, HBM_XID_HEARD + 2);
}
END_TEST

/* A storm of Xids on one GPU forgets only that GPU's own. */
START_TEST(storm_on_one_gpu)
{
	unsigned int i;

	setup();
	xid(HBM_FROM_KERNEL, "GPU-quiet", 48);
	for (i = 0; i < 10 * HBM_XID_HEARD; i++) {
		clock_ns++;
		xid(HBM_FROM_KERNEL, GPU, 63);
	}
	ck_assert_uint_eq(taken, 10 * HBM_XID_HEARD + 1);
	xid(HBM_FROM_KMSG, "GPU-quiet", 48);	/* its twin: still remembered */
	ck_assert_uint_eq(taken, 10 * HBM_XID_HEARD + 1);
	for (i = 0; i < HBM_XID_HEARD - 1; i++)	/* the storm's last ones are too */
		xid(HBM_FROM_KMSG, GPU, 63);
	ck_assert_uint_eq(taken, 10 * HBM_XID_HEARD + 1);
	xid(HBM_FROM_KMSG, GPU, 63);		/* older ones are forgotten */
	ck_assert_uint_eq(taken, 10 * HBM_XID_HEARD + 2);
}
END_TEST

/* A burst on one GPU, one source's copies all before the other's: one each. */
START_TEST(burst_on_one_gpu)
{
	unsigned int i;

	setup();
	for (i = 0; i < HBM_XID_HEARD / 2; i++) {
		clock_ns++;
		xid(HBM_FROM_KERNEL, GPU, 94);
	}
	for (i = 0; i < HBM_XID_HEARD / 2; i++)
		xid(HBM_FROM_KMSG, GPU, 94);
	ck_assert_uint_eq(taken, HBM_XID_HEARD / 2);
}
END_TEST

/* Errors without an Xid are never taken for twins. */
START_TEST(no_xid_no_twin)
{
	setup();
	xid(HBM_FROM_KERNEL, GPU, 0);
	xid(HBM_FROM_KMSG, GPU, 0);
	ck_assert_uint_eq(taken, 2);
}
END_TEST

Suite *xid_suite(void)
{
	Suite *s = suite_create("xid");
	TCase *tc = tcase_create("xid");

	tcase_add_test(tc, one_xid_two_sources);
	tcase_add_test(tc, two_xids_two_sources);
	tcase_add_test(tc, what_is_not_a_twin);
	tcase_add_test(tc, table_full);
	tcase_add_test(tc, storm_on_one_gpu);
	tcase_add_test(tc, burst_on_one_gpu);
	tcase_add_test(tc, no_xid_no_twin);
	suite_add_tcase(s, tc);
	return s;
}
