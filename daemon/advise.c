// SPDX-License-Identifier: GPL-2.0
/*
 * The checkpoint-interval advisor (`hbmctl advise`): how often a training
 * job on nodes like this one should checkpoint, with and without hbmguard,
 * and what hbmguard saves.  The design, told once here (hbmctl(8) tells the
 * operator's side):
 *
 * A job that checkpoints every tau seconds, each checkpoint costing C
 * seconds, loses on a failure the work since its last checkpoint and R
 * seconds to relaunch and reload.  Young's first-order optimum [1] is
 *
 *	tau = sqrt(2 C M)
 *
 * for a mean time between failures M, valid while C << M; Daly's higher
 * order one [2] (his eq. 37), valid further:
 *
 *	tau = sqrt(2 C M) (1 + 1/3 sqrt(C / 2M) + 1/9 (C / 2M)) - C	C < 2M
 *	tau = M								C >= 2M
 *
 * is the advice.  The fraction of wall time lost with it is Daly's expected
 * wall time for exponential failures (his eq. 20), T_w = M e^(R/M)
 * (e^((tau + C)/M) - 1) T_s / tau for T_s of work, so 1 - T_s / T_w: work
 * redone, checkpoints written and restarts, all in; and with hbmguard, the
 * pauses of the recoveries too.
 *
 * M is the job's: what one node saw, over the window it watched, times the
 * job's nodes N (each node fails as this one does, independently).  Without
 * hbmguard every incident (a UE or poison under a rank: the rank dies with
 * SIGBUS) is a failure; with it, only those that escalated (ABORT: the
 * launcher restarts the job), each costing R plus the time the daemon took
 * to give up; those recovered in place cost the job their measured pause
 * and no work.  An incident still under way is counted in neither.
 *
 * No failure in the window gives no M: a Poisson process that showed none
 * in T has, at 95% confidence, a rate below -ln(0.05) / T ("the rule of
 * three"), so M >= T / (2.996 N), and the interval from it is a lower bound
 * of the optimum, its waste an upper bound of the optimum's (both grow with
 * M), said as such.  With hbmguard, M is never taken below the M without
 * it: its restarts are some of the same incidents.
 *
 * Not modelled: failures that are not HBM incidents (other hardware, the
 * software, the network), errors under no rank (they open no incident),
 * failures during a checkpoint or a restart beyond what Daly's formula
 * takes, correlated failures (a bad device's errors come in bursts: the
 * exponential's memorylessness is then optimistic), the checkpoint's cost
 * growing with the job, and one node's rate standing for every node's.
 *
 * [1] J. W. Young, "A first order approximation to the optimum checkpoint
 *     interval", Communications of the ACM 17(9):530-531, 1974.
 * [2] J. T. Daly, "A higher order estimate of the optimum checkpoint
 *     interval for restart dumps", Future Generation Computer Systems
 *     22(3):303-312, 2006.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "timespan.h"

#define SECONDS_PER_DAY	86400.0

/* A time span option's value, in seconds. */
static int span_option(const char *v, bool zero_ok, double *out, char *err, size_t len,
		       const char *name)
{
	uint64_t usec;
	int ret = hbm_time_span(v, &usec);

	if (ret == -ERANGE) {
		snprintf(err, len, "--%s=%s is out of range", name, v);
		return ret;
	}
	if (ret) {
		snprintf(err, len, "--%s: '%s' is not a time span (e.g. 90, 30s, 2min, 1h 30min)",
			 name, v);
		return ret;
	}
	if (!usec && !zero_ok) {
		snprintf(err, len, "--%s must be longer than 0", name);
		return -EINVAL;
	}
	*out = usec / 1e6;
	return 0;
}

/**
 * hbm_advise_option() - take one of `hbmctl advise`'s options
 * @in: where it goes
 * @name: "checkpoint-cost", "restart-cost", "window" (time spans) or "nodes"
 * @v: its value
 * @err: the message for the operator, on failure
 * @len: its size
 *
 * Return: 0; -EINVAL with @err set and @in unchanged.
 */
int hbm_advise_option(struct hbm_advise_in *in, const char *name, const char *v, char *err,
		      size_t len)
{
	if (!strcmp(name, "checkpoint-cost")) {
		if (span_option(v, false, &in->checkpoint_s, err, len, name))
			return -EINVAL;
		in->have_checkpoint = true;
	} else if (!strcmp(name, "restart-cost")) {
		if (span_option(v, true, &in->restart_s, err, len, name))
			return -EINVAL;
		in->have_restart = true;
	} else if (!strcmp(name, "window")) {
		if (span_option(v, false, &in->window_s, err, len, name))
			return -EINVAL;
	} else if (!strcmp(name, "nodes")) {
		unsigned long long n;
		char *end;

		errno = 0;
		n = strtoull(v, &end, 10);
		if (*v < '0' || *v > '9' || *end || errno || !n || n > UINT32_MAX) {
			snprintf(err, len, "--nodes: '%s' is not a number of nodes (1..%u)", v,
				 UINT32_MAX);
			return -EINVAL;
		}
		in->nodes = n;
	} else {
		snprintf(err, len, "advise has no option --%s", name);
		return -EINVAL;
	}
	return 0;
}

/**
 * hbm_advise_history() - count what the node's incidents say
 * @in: its window (window_s) in, the counts out
 * @x: the incidents the daemon keeps, oldest first
 * @nr: how many
 * @now_us: now, in us since the epoch
 * @since_us: since when the daemon has watched (its start), or 0
 *
 * The window is the last @in->window_s when given; else from the daemon's
 * start, or from the oldest incident kept when that is older.  Either way
 * it starts no earlier than the oldest incident kept when older ones were
 * dropped (its id is not 1: the daemon keeps the newest only), so that no
 * incident of the window goes uncounted (@in->shortened says so).
 */
void hbm_advise_history(struct hbm_advise_in *in, const struct hbm_ctl_incident *x, size_t nr,
			uint64_t now_us, uint64_t since_us)
{
	double recovery = 0, escalation = 0;
	uint64_t start = since_us;
	bool dropped = nr && x[0].id != 1;
	size_t i;

	if (nr && (!start || x[0].at[HBM_INCIDENT_DETECTED] < start))
		start = x[0].at[HBM_INCIDENT_DETECTED];
	in->unwatched_s = 0;
	if (in->window_s > 0) {
		uint64_t watched = start;

		start = in->window_s * 1e6 >= now_us ? 0 : now_us - (uint64_t)(in->window_s * 1e6);
		/* The operator's word for it, told back: no failure seen there. */
		if (start < watched)
			in->unwatched_s = (watched - start) / 1e6;
	}
	in->shortened = dropped && start < x[0].at[HBM_INCIDENT_DETECTED];
	if (in->shortened)
		start = x[0].at[HBM_INCIDENT_DETECTED];
	in->from_us = start;
	in->observed_s = in->window_s > 0 && !in->shortened ? in->window_s :
			 now_us > start ? (now_us - start) / 1e6 : 0;
	in->recovered = in->escalated = in->open = 0;
	for (i = 0; i < nr; i++) {
		const uint64_t *at = x[i].at;

		if (at[HBM_INCIDENT_DETECTED] < start)
			continue;
		if (x[i].state == HBM_INCIDENT_RESUMED && at[HBM_INCIDENT_RESUMED] >= at[HBM_INCIDENT_DETECTED]) {
			in->recovered++;
			recovery += (at[HBM_INCIDENT_RESUMED] - at[HBM_INCIDENT_DETECTED]) / 1e6;
		} else if (x[i].state == HBM_INCIDENT_ESCALATED &&
			   at[HBM_INCIDENT_ESCALATED] >= at[HBM_INCIDENT_DETECTED]) {
			in->escalated++;
			escalation += (at[HBM_INCIDENT_ESCALATED] - at[HBM_INCIDENT_DETECTED]) / 1e6;
		} else {
			in->open++;
		}
	}
	in->recovery_s = in->recovered ? recovery / in->recovered : 0;
	in->escalation_s = in->escalated ? escalation / in->escalated : 0;
}

/* Young's interval, for a checkpoint of @c seconds and a MTBF of @m. */
double hbm_advise_young(double c, double m)
{
	return sqrt(2 * c * m);
}

/*
 * Daly's.  With x = sqrt(C / 2M), his tau is 2Mx (1 - x/3)^2, computed so:
 * no cancellation of sqrt(2CM)(...) against C when C nears 2M.
 */
double hbm_advise_daly(double c, double m)
{
	double x;

	if (c >= 2 * m)
		return m;
	x = sqrt(c / (2 * m));
	return 2 * m * x * (1 - x / 3) * (1 - x / 3);
}

/* ln(e^y - 1), for y > 0, without overflow for a large y. */
static double log_expm1(double y)
{
	return y > 30 ? y + log1p(-exp(-y)) : log(expm1(y));
}

/**
 * hbm_advise_waste() - the fraction of wall time lost
 * @tau: the interval
 * @c: a checkpoint's cost
 * @r: a restart's
 * @m: the MTBF
 * @paused: the fraction of time paused by recoveries in place
 *
 * Daly's expected wall time T_w (eq. 20), in logarithms so that neither
 * e^(R/M) nor e^((tau + C)/M) overflows: 1 - T_s / T_w, of what is left
 * after the pauses.
 *
 * Return: in [0, 1].
 */
double hbm_advise_waste(double tau, double c, double r, double m, double paused)
{
	double useful = exp(log(tau) - log(m) - r / m - log_expm1((tau + c) / m));

	if (!(useful > 0))	/* underflow */
		useful = 0;
	if (useful > 1)
		useful = 1;
	if (paused > 1)
		paused = 1;
	return 1 - useful * (1 - paused);
}

/* One case: @failures restarts (each costing @r) and @paused, over the window. */
static void one_case(const struct hbm_advise_in *in, uint32_t failures, double r,
		     double paused, double mtbf_floor, struct hbm_advise_case *out)
{
	double job_window = in->observed_s / in->nodes;

	out->failures = failures;
	out->bound = !failures;
	out->mtbf_s = failures ? job_window / failures : job_window / HBM_ADVISE_NONE_95;
	/* The restarts with hbmguard are some of those without: never more often. */
	if (mtbf_floor > out->mtbf_s)
		out->mtbf_s = mtbf_floor;
	out->young_s = hbm_advise_young(in->checkpoint_s, out->mtbf_s);
	out->daly_s = hbm_advise_daly(in->checkpoint_s, out->mtbf_s);
	out->waste = hbm_advise_waste(out->daly_s, in->checkpoint_s, r, out->mtbf_s, paused);
}

/**
 * hbm_advise() - the advice
 * @in: the job and the history (hbm_advise_option(), hbm_advise_history())
 * @out: the intervals and their cost, without and with hbmguard
 *
 * Return: 0; -EINVAL when the checkpoint or restart cost was not given,
 * or the window is empty.
 */
int hbm_advise(const struct hbm_advise_in *in, struct hbm_advice *out)
{
	double paused;

	memset(out, 0, sizeof(*out));
	if (!in->have_checkpoint || !in->have_restart || !(in->checkpoint_s > 0) ||
	    !(in->restart_s >= 0) || !(in->observed_s > 0) || !in->nodes)
		return -EINVAL;
	one_case(in, in->recovered + in->escalated, in->restart_s, 0, 0, &out->without);
	/* Each recovery pauses the whole job: N nodes' worth of them. */
	paused = in->recovered * in->recovery_s * in->nodes / in->observed_s;
	one_case(in, in->escalated, in->restart_s + in->escalation_s, paused,
		 out->without.mtbf_s, &out->with);
	out->saved_per_day_s = (out->without.waste - out->with.waste) * SECONDS_PER_DAY;
	out->saved_bound = out->with.bound && !out->without.bound;
	return 0;
}
