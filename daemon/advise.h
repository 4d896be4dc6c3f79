/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The checkpoint-interval advisor of `hbmctl advise` (advise.c says the
 * model): pure computation, from what the node saw and what the operator
 * says of the job to the interval and its cost, with and without hbmguard.
 */
#ifndef HBM_ADVISE_H
#define HBM_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl.h"

struct hbm_advise_in {
	/* Said by the operator (hbm_advise_option()). */
	double checkpoint_s;	/* C: writing one checkpoint */
	double restart_s;	/* R: relaunch and reload, not the work lost */
	double window_s;	/* T, when given: the history's last T; else 0 */
	uint32_t nodes;		/* N: the job's, each seeing this node's rate */
	bool have_checkpoint, have_restart;
	/* Seen by the node (hbm_advise_history()). */
	double observed_s;	/* the window the counts below cover */
	uint64_t from_us;	/* its start, us since the epoch */
	bool shortened;		/* to the history kept, shorter than window_s */
	double unwatched_s;	/* of window_s, before the daemon's start and its history */
	uint32_t recovered;	/* incidents recovered in place */
	uint32_t escalated;	/* incidents that ended in ABORT: a restart */
	uint32_t open;		/* under way: not counted */
	double recovery_s;	/* mean pause of a recovered incident */
	double escalation_s;	/* mean detection-to-abort of an escalated one */
};

/* One way of running the job: without hbmguard, or with it. */
struct hbm_advise_case {
	uint32_t failures;	/* incidents that cost a restart, in the window */
	bool bound;		/* none: mtbf and intervals are lower bounds, waste an upper */
	double mtbf_s;		/* M, the job's */
	double young_s;		/* Young's interval */
	double daly_s;		/* Daly's: the advice */
	double waste;		/* the fraction of wall time lost, at daly_s */
};

struct hbm_advice {
	struct hbm_advise_case without, with;
	double saved_per_day_s;	/* the job's wall time, per day of it */
	bool saved_bound;	/* at least that (the with case is a bound) */
};

/* One in 20 that the rate is above this, after none in the window: -ln(0.05). */
#define HBM_ADVISE_NONE_95	2.995732273553991

int hbm_advise_option(struct hbm_advise_in *in, const char *name, const char *v, char *err,
		      size_t len);
void hbm_advise_history(struct hbm_advise_in *in, const struct hbm_ctl_incident *x, size_t nr,
			uint64_t now_us, uint64_t since_us);
int hbm_advise(const struct hbm_advise_in *in, struct hbm_advice *out);
double hbm_advise_young(double c, double m);
double hbm_advise_daly(double c, double m);
double hbm_advise_waste(double tau, double c, double r, double m, double paused);

#endif /* HBM_ADVISE_H */
