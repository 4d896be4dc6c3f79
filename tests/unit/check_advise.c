// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the checkpoint-interval advisor (daemon/advise.c): the
 * formulas against answers worked by hand here, the edges (no failure, a
 * checkpoint as long as the MTBF, values at the ends of their range), the
 * options, and a recorded history counted.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "advise.h"
#include "timespan.h"
#include "unit.h"

/* Within @tol of @want, and a number. */
#define ck_near(got, want, tol) \
	ck_assert_msg(isfinite(got) && fabs((got) - (want)) <= (tol), \
		      "%s = %.6f, not %.6f", #got, (double)(got), (double)(want))

/*
 * C = 600 s, M = 86400 s (a failure a day).
 * Young: 2CM = 2 * 600 * 86400 = 103,680,000; its square root is 10182.34
 * (10182.34^2 = 103,680,048).
 * Daly: C / 2M = 600 / 172,800 = 1/288 = 0.00347222; its square root
 * 0.0589256; 1 + 0.0589256 / 3 + 0.00347222 / 9 = 1 + 0.0196419 + 0.0003858
 * = 1.0200277; times 10182.34 = 10386.27; less C: 9786.27.
 */
START_TEST(young_and_daly)
{
	ck_near(hbm_advise_young(600, 86400), 10182.34, 0.01);
	ck_near(hbm_advise_daly(600, 86400), 9786.27, 0.01);
	/*
	 * C = 3600, M = 86400: 2CM = 622,080,000, root 24941.53.  C / 2M =
	 * 1/48 = 0.0208333, root 0.1443376; 1 + 0.0481125 + 0.0023148 =
	 * 1.0504273; times 24941.53 = 26199.27; less 3600: 22599.27.
	 */
	ck_near(hbm_advise_young(3600, 86400), 24941.53, 0.01);
	ck_near(hbm_advise_daly(3600, 86400), 22599.27, 0.01);
}
END_TEST

/*
 * C >= 2M: Daly's interval is M.  Just below, C = 600, M = 301: C / 2M =
 * 600 / 602 = 0.9966777, root x = 0.9983375; the formula, 2Mx (1 - x/3)^2,
 * = 602 * 0.9983375 * (0.6672208)^2 = 600.9992 * 0.4451836 = 267.555, as
 * the paper's expression has it: sqrt(2CM) = 600.9992, times 1 + 0.3327792
 * + 0.1107420 = 1.4435212 is 867.555, less 600: 267.555; positive, below M.
 */
START_TEST(daly_past_its_range)
{
	ck_near(hbm_advise_daly(600, 300), 300, 0);
	ck_near(hbm_advise_daly(600, 250), 250, 0);
	ck_near(hbm_advise_daly(1e12, 1), 1, 0);
	ck_near(hbm_advise_daly(600, 301), 267.555, 0.001);
}
END_TEST

/*
 * The wall time lost at Daly's interval, C = 600, M = 86400, R = 0:
 * (tau + C) / M = 10386.27 / 86400 = 0.1202114; e^that - 1 = 0.1277352;
 * times M, 11036.33; tau / that = 9786.27 / 11036.33 = 0.886732: 11.3268%
 * lost.  R = 300: e^(300/86400) = 1.0034783 divides the useful part:
 * 0.886732 / 1.0034783 = 0.883659, 11.6341% lost.
 */
START_TEST(waste)
{
	double tau = hbm_advise_daly(600, 86400);

	ck_near(hbm_advise_waste(tau, 600, 0, 86400, 0), 0.113268, 1e-6);
	ck_near(hbm_advise_waste(tau, 600, 300, 86400, 0), 0.116341, 1e-6);
	/* Paused half the time: half of what is left is lost too. */
	ck_near(hbm_advise_waste(tau, 600, 0, 86400, 0.5), 1 - 0.886732 / 2, 1e-6);
	/* Failures far apart: the checkpoints, C / (tau + C), are all the cost. */
	ck_near(hbm_advise_waste(3600, 1, 0, 1e15, 0), 1.0 / 3601, 1e-9);
	/* A restart far longer than M: nothing gets done, without overflow. */
	ck_near(hbm_advise_waste(10, 600, 1e9, 1, 0), 1, 0);
	ck_near(hbm_advise_waste(10, 600, 0, 1, 2), 1, 0);
}
END_TEST

static struct hbm_advise_in job(void)
{
	struct hbm_advise_in in = {
		.checkpoint_s = 600, .restart_s = 300, .nodes = 4,
		.have_checkpoint = true, .have_restart = true,
		.observed_s = 30 * 86400,
	};

	return in;
}

/*
 * 30 days, 4 nodes, 2 incidents recovered in place (pausing the job 2 s
 * each) and 6 escalated (4 s to abort each), C = 600, R = 300.
 * Without hbmguard, 8 failures on this node: the job's M = 2,592,000 s /
 * (4 * 8) = 81000 s.  x = sqrt(600 / 162000) = 0.0608581; Daly's tau =
 * 162000 * 0.0608581 * (1 - 0.0202860)^2 = 9859.006 * 0.9598391 = 9463.06.
 * Young's: sqrt(2 * 600 * 81000) = sqrt(97,200,000) = 9859.01.
 * With it, 6: M = 2,592,000 / 24 = 108000 s.  x = sqrt(600 / 216000) =
 * 0.0527046; tau = 11384.20 * (1 - 0.0175682)^2 = 11384.20 * 0.9651523 =
 * 10987.71; Young's sqrt(129,600,000) = 11384.20.
 * Lost without: (9463.06 + 600) / 81000 = 0.1242353, e^ - 1 = 0.1322875,
 * times M 10715.29; 9463.06 / 10715.29 = 0.883135, over e^(300/81000) =
 * 1.0037106: 0.879870, 12.0130% lost.  With: (10987.71 + 600) / 108000 =
 * 0.1072936, e^ - 1 = 0.1132608, times M 12232.17; 10987.71 / 12232.17 =
 * 0.898264, over e^(304/108000) = 1.0028189: 0.895739; paused 2 * 2 s * 4
 * nodes / 2,592,000 s = 6.17e-6 of the time: 0.895733, 10.4267% lost.
 * Saved: (0.120094 - 0.104269) * 86400 = 1367.3 s a day.
 */
START_TEST(with_and_without)
{
	struct hbm_advise_in in = job();
	struct hbm_advice a;

	in.recovered = 2;
	in.recovery_s = 2;
	in.escalated = 6;
	in.escalation_s = 4;
	ck_assert_int_eq(hbm_advise(&in, &a), 0);
	ck_assert(!a.without.bound && !a.with.bound && !a.saved_bound);
	ck_assert_uint_eq(a.without.failures, 8);
	ck_assert_uint_eq(a.with.failures, 6);
	ck_near(a.without.mtbf_s, 81000, 1e-6);
	ck_near(a.without.daly_s, 9463.06, 0.01);
	ck_near(a.without.young_s, 9859.01, 0.01);
	ck_near(a.with.mtbf_s, 108000, 1e-6);
	ck_near(a.with.daly_s, 10987.71, 0.01);
	ck_near(a.with.young_s, 11384.20, 0.01);
	ck_near(a.without.waste, 0.120094, 1e-5);
	ck_near(a.with.waste, 0.104269, 1e-5);
	ck_near(a.saved_per_day_s, 1367.3, 1);
}
END_TEST

/*
 * No failure in 30 days on 4 nodes: the job's M >= 2,592,000 / (4 * 2.9957)
 * = 216307.7 s at 95%; x = sqrt(600 / 432615.4) = 0.0372417, tau >=
 * sqrt(2 * 600 * 216307.7) (= 16111.1) * (1 - 0.0124139)^2 (= 0.9753133)
 * = 15713.6 s.  Both ways alike: nothing saved, and no NaN anywhere.
 */
START_TEST(no_failure)
{
	struct hbm_advise_in in = job();
	struct hbm_advice a;

	ck_assert_int_eq(hbm_advise(&in, &a), 0);
	ck_assert(a.without.bound && a.with.bound && !a.saved_bound);
	ck_assert_uint_eq(a.without.failures, 0);
	ck_near(a.without.mtbf_s, 216307.7, 0.1);
	ck_near(a.without.daly_s, 15713.6, 0.1);
	ck_near(a.with.daly_s, a.without.daly_s, 0);
	ck_near(a.saved_per_day_s, 0, 0);
	ck_assert(a.without.waste > 0 && a.without.waste < 1);
	/* All recovered: only the with-hbmguard side is a bound. */
	in.recovered = 3;
	in.recovery_s = 1;
	ck_assert_int_eq(hbm_advise(&in, &a), 0);
	ck_assert(!a.without.bound && a.with.bound && a.saved_bound);
	ck_near(a.without.mtbf_s, 216000, 1e-6);
	ck_near(a.with.mtbf_s, 216307.7, 0.1);
	ck_assert(a.saved_per_day_s > 0);
	/*
	 * Two recovered: 2,592,000 / (4 * 2) = 324000 s without, above the
	 * bound; with hbmguard no less, its restarts being some of those.
	 */
	in.recovered = 2;
	ck_assert_int_eq(hbm_advise(&in, &a), 0);
	ck_near(a.without.mtbf_s, 324000, 1e-6);
	ck_near(a.with.mtbf_s, 324000, 1e-6);
	ck_assert(a.with.bound && a.saved_bound);
}
END_TEST

/* The ends of every range: finite, a waste in [0, 1]. */
START_TEST(extremes)
{
	static const double spans[] = { 1e-6, 1, 86400, UINT64_MAX / 1e6 };
	static const uint32_t nodes[] = { 1, UINT32_MAX };
	static const uint32_t counts[] = { 0, 1, UINT32_MAX / 2 };
	size_t c, r, w, n, k;

	for (c = 0; c < 4; c++)
	for (r = 0; r < 4; r++)
	for (w = 0; w < 4; w++)
	for (n = 0; n < 2; n++)
	for (k = 0; k < 3; k++) {
		struct hbm_advise_in in = job();
		struct hbm_advice a;
		const struct hbm_advise_case *x[] = { &a.without, &a.with };
		int i;

		in.checkpoint_s = spans[c];
		in.restart_s = spans[r];
		in.observed_s = spans[w];
		in.nodes = nodes[n];
		in.recovered = in.escalated = counts[k];
		in.recovery_s = in.escalation_s = spans[r];
		ck_assert_int_eq(hbm_advise(&in, &a), 0);
		for (i = 0; i < 2; i++) {
			ck_assert_msg(isfinite(x[i]->mtbf_s) && x[i]->mtbf_s > 0 &&
				      isfinite(x[i]->daly_s) && x[i]->daly_s > 0 &&
				      isfinite(x[i]->young_s) && x[i]->young_s > 0 &&
				      x[i]->waste >= 0 && x[i]->waste <= 1,
				      "C %g R %g T %g N %u n %u: M %g tau %g waste %g", spans[c],
				      spans[r], spans[w], nodes[n], counts[k], x[i]->mtbf_s,
				      x[i]->daly_s, x[i]->waste);
		}
		ck_assert(isfinite(a.saved_per_day_s));
	}
}
END_TEST

START_TEST(refused)
{
	struct hbm_advise_in in = job();
	struct hbm_advice a;

	in.observed_s = 0;		/* a daemon started this very second */
	ck_assert_int_eq(hbm_advise(&in, &a), -EINVAL);
	in = job();
	in.have_checkpoint = false;
	ck_assert_int_eq(hbm_advise(&in, &a), -EINVAL);
	in = job();
	in.have_restart = false;
	ck_assert_int_eq(hbm_advise(&in, &a), -EINVAL);
}
END_TEST

START_TEST(options)
{
	struct hbm_advise_in in = { .nodes = 1 };
	char err[256];

	ck_assert_int_eq(hbm_advise_option(&in, "checkpoint-cost", "10min", err, sizeof(err)), 0);
	ck_assert_int_eq(hbm_advise_option(&in, "restart-cost", "1h 30min", err, sizeof(err)), 0);
	ck_assert_int_eq(hbm_advise_option(&in, "window", "1.5d", err, sizeof(err)), 0);
	ck_assert_int_eq(hbm_advise_option(&in, "nodes", "512", err, sizeof(err)), 0);
	ck_near(in.checkpoint_s, 600, 0);
	ck_near(in.restart_s, 5400, 0);
	ck_near(in.window_s, 129600, 0);
	ck_assert_uint_eq(in.nodes, 512);
	ck_assert(in.have_checkpoint && in.have_restart);
	ck_assert_int_eq(hbm_advise_option(&in, "restart-cost", "0", err, sizeof(err)), 0);
	ck_near(in.restart_s, 0, 0);
	ck_assert_int_eq(hbm_advise_option(&in, "checkpoint-cost", "250ms", err, sizeof(err)), 0);
	ck_near(in.checkpoint_s, 0.25, 0);
}
END_TEST

/* Each bad value said, and nothing taken. */
START_TEST(bad_options)
{
	static const struct {
		const char *name, *v, *err;
	} bad[] = {
		{ "checkpoint-cost", "-5min",
		  "--checkpoint-cost: '-5min' is not a time span (e.g. 90, 30s, 2min, 1h 30min)" },
		{ "checkpoint-cost", "soon", "--checkpoint-cost: 'soon' is not a time span" },
		{ "checkpoint-cost", "", "--checkpoint-cost: '' is not a time span" },
		{ "checkpoint-cost", "0", "--checkpoint-cost must be longer than 0" },
		{ "checkpoint-cost", "0s 0ms", "--checkpoint-cost must be longer than 0" },
		{ "restart-cost", "-1", "--restart-cost: '-1' is not a time span" },
		{ "restart-cost", "5 x", "--restart-cost: '5 x' is not a time span" },
		{ "window", "0", "--window must be longer than 0" },
		{ "window", "600000y", "--window=600000y is out of range" },
		{ "nodes", "0", "--nodes: '0' is not a number of nodes (1..4294967295)" },
		{ "nodes", "-4", "--nodes: '-4' is not a number of nodes" },
		{ "nodes", "+4", "--nodes: '+4' is not a number of nodes" },
		{ "nodes", " 4", "--nodes: ' 4' is not a number of nodes" },
		{ "nodes", "4x", "--nodes: '4x' is not a number of nodes" },
		{ "nodes", "4294967296", "--nodes: '4294967296' is not a number of nodes" },
		{ "nodes", "99999999999999999999999", "is not a number of nodes" },
		{ "nodes", "", "--nodes: '' is not a number of nodes" },
		{ "checkpoint", "1", "advise has no option --checkpoint" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hbm_advise_in in = { .nodes = 7, .checkpoint_s = 1, .restart_s = 2,
					    .window_s = 3 }, was = in;
		char err[256] = "";

		ck_assert_msg(hbm_advise_option(&in, bad[i].name, bad[i].v, err, sizeof(err)) ==
			      -EINVAL, "--%s=%s taken", bad[i].name, bad[i].v);
		ck_assert_msg(strstr(err, bad[i].err), "--%s=%s: said '%s'", bad[i].name, bad[i].v,
			      err);
		ck_assert_msg(!memcmp(&in, &was, sizeof(in)), "--%s=%s changed the input",
			      bad[i].name, bad[i].v);
	}
}
END_TEST

#define T0	1700000000000000ULL	/* us */
#define DAY	(86400 * USEC_PER_SEC)

static struct hbm_ctl_incident incident(uint64_t id, uint64_t at, uint32_t state, uint64_t took)
{
	struct hbm_ctl_incident x = { .id = id, .state = state };

	x.at[HBM_INCIDENT_DETECTED] = at;
	if (state == HBM_INCIDENT_RESUMED || state == HBM_INCIDENT_ESCALATED)
		x.at[state] = at + took;
	return x;
}

/*
 * A recorded history: the daemon started at T0; two recoveries (1 s and
 * 3 s), three escalations (2 s each), one under way; now T0 + 10 days.
 */
START_TEST(history)
{
	const struct hbm_ctl_incident x[] = {
		incident(1, T0 + 1 * DAY, HBM_INCIDENT_RESUMED, 1000000),
		incident(2, T0 + 2 * DAY, HBM_INCIDENT_ESCALATED, 2000000),
		incident(3, T0 + 5 * DAY, HBM_INCIDENT_RESUMED, 3000000),
		incident(4, T0 + 6 * DAY, HBM_INCIDENT_ESCALATED, 2000000),
		incident(5, T0 + 8 * DAY, HBM_INCIDENT_ESCALATED, 2000000),
		incident(6, T0 + 10 * DAY - 5, HBM_INCIDENT_PAUSING, 0),
	};
	struct hbm_advise_in in = { .nodes = 1 };

	/* Since the daemon's start: 10 days, all of it. */
	hbm_advise_history(&in, x, 6, T0 + 10 * DAY, T0);
	ck_near(in.observed_s, 864000, 0);
	ck_assert_uint_eq(in.from_us, T0);
	ck_assert(!in.shortened);
	ck_assert_uint_eq(in.recovered, 2);
	ck_assert_uint_eq(in.escalated, 3);
	ck_assert_uint_eq(in.open, 1);
	ck_near(in.recovery_s, 2, 0);
	ck_near(in.escalation_s, 2, 0);
	/* A daemon restarted since: its history reaches back further. */
	hbm_advise_history(&in, x, 6, T0 + 10 * DAY, T0 + 7 * DAY);
	ck_near(in.observed_s, 9 * 86400, 0);
	ck_assert_uint_eq(in.from_us, T0 + DAY);
	ck_assert_uint_eq(in.recovered + in.escalated, 5);
	/* The last 5 days: incidents 3 to 5, and the open one. */
	in.window_s = 5 * 86400;
	hbm_advise_history(&in, x, 6, T0 + 10 * DAY, T0);
	ck_near(in.observed_s, 432000, 0);
	ck_assert_uint_eq(in.from_us, T0 + 5 * DAY);
	ck_assert_uint_eq(in.recovered, 1);
	ck_assert_uint_eq(in.escalated, 2);
	ck_near(in.recovery_s, 3, 0);
	ck_near(in.unwatched_s, 0, 0);
	/* Reaching before the daemon's start: that part told back. */
	in.window_s = 30 * 86400;
	hbm_advise_history(&in, x, 6, T0 + 10 * DAY, T0);
	ck_near(in.observed_s, 30 * 86400, 0);
	ck_near(in.unwatched_s, 20 * 86400, 0);
	/* A window longer than the epoch is all of it. */
	in.window_s = UINT64_MAX / 1e6;
	hbm_advise_history(&in, x, 6, T0 + 10 * DAY, T0);
	ck_assert_uint_eq(in.recovered + in.escalated + in.open, 6);
	/*
	 * The oldest kept is not the first: older ones were dropped, so the
	 * window starts at it (day 5), not at the daemon's start.
	 */
	in.window_s = 0;
	hbm_advise_history(&in, x + 2, 4, T0 + 10 * DAY, T0);
	ck_near(in.observed_s, 5 * 86400, 0);
	ck_assert_uint_eq(in.recovered + in.escalated, 3);
	ck_assert(in.shortened);
	/* So is a window that reaches further back than what is kept. */
	in.window_s = 8 * 86400;
	hbm_advise_history(&in, x + 2, 4, T0 + 10 * DAY, T0);
	ck_near(in.observed_s, 5 * 86400, 0);
	ck_assert_uint_eq(in.from_us, T0 + 5 * DAY);
	ck_assert(in.shortened);
	/* Not one within it: the last 3 days, incident 5 and the open one. */
	in.window_s = 3 * 86400;
	hbm_advise_history(&in, x + 2, 4, T0 + 10 * DAY, T0);
	ck_near(in.observed_s, 3 * 86400, 0);
	ck_assert_uint_eq(in.escalated, 1);
	ck_assert_uint_eq(in.open, 1);
	ck_assert(!in.shortened);
	in.window_s = 0;
	/* Nothing kept: the daemon's start. */
	hbm_advise_history(&in, x, 0, T0 + 10 * DAY, T0 + 4 * DAY);
	ck_near(in.observed_s, 6 * 86400, 0);
	ck_assert_uint_eq(in.recovered + in.escalated + in.open, 0);
}
END_TEST

Suite *advise_suite(void)
{
	Suite *s = suite_create("advise");
	TCase *tc = tcase_create("model");

	tcase_add_test(tc, young_and_daly);
	tcase_add_test(tc, daly_past_its_range);
	tcase_add_test(tc, waste);
	tcase_add_test(tc, with_and_without);
	tcase_add_test(tc, no_failure);
	tcase_add_test(tc, extremes);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, options);
	tcase_add_test(tc, bad_options);
	tcase_add_test(tc, history);
	suite_add_tcase(s, tc);
	return s;
}
