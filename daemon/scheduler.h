/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The scheduler sink (scheduler.c): the node drained in Slurm, and a hook
 * told, when a device reaches RMA, needs a reset, or an incident is
 * aborted; resumed only when an administrator says so (hbmctl undrain).
 */
#ifndef HBM_SCHEDULER_H
#define HBM_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "ctl.h"
#include "daemon.h"

struct hbm_fact;

#define HBM_SCHED_CAUSES	16
#define HBM_SCHED_REASON_LEN	128	/* ours: Slurm bounds no reason (scheduler.c) */

struct sched_cause {
	uint32_t cause;			/* enum hbm_drain_cause */
	uint64_t since;			/* seconds since the epoch */
	char identity[64];
	char pci[32];
	char name[32];			/* for people; "" none */
	char detail[64];
};

struct hbm_sched;

/* One kind of command, Slurm's or the hook's: one at a time, retried. */
struct sched_runner {
	struct hbm_sched *s;
	const char *what;		/* "slurm", "hook" */
	pid_t pid;			/* 0: none running */
	int pidfd;
	int out;			/* the running command's stdout, when read; -1 */
	sd_event_source *exited, *timer, *retry;
	bool timed_out;
	bool recheck;			/* Slurm's side to be read again, the state unchanged */
	int step;			/* scheduler.c's */
	unsigned int backoff;		/* seconds of the last wait; 0: the last try went */
	uint64_t retry_at;		/* CLOCK_MONOTONIC us of the next try */
	uint64_t gen;			/* the generation being run */
	uint64_t done;			/* the generation reached */
	uint32_t progress;		/* enum hbm_drain_progress */
	char error[128];		/* the last failure, as logged; "" none */
	char outbuf[1024];
	size_t outlen;
};

struct hbm_sched {
	struct daemon *d;
	struct sched_cause causes[HBM_SCHED_CAUSES];	/* oldest first */
	size_t nr;
	uint32_t want;			/* enum hbm_drain_want */
	uint64_t gen;			/* bumped by every change of want or causes */
	char reason[HBM_SCHED_REASON_LEN];
	char sent[HBM_SCHED_REASON_LEN];	/* in the running scontrol's argv */
	char set[HBM_SCHED_REASON_LEN];	/* the reason Slurm last had of ours; "" none */
	char node[HBM_SLURM_NODE_LEN];	/* "": no valid name (node_name()) */
	struct sched_runner slurm, hook;
	sd_event_source *recheck;
	bool started;
	bool unread;			/* the state file there, not read yet: not saved over */
	bool set_known;			/* set read from Slurm since the start */
};

void sched_init(struct hbm_sched *s, struct daemon *d);
void sched_start(struct hbm_sched *s);
void sched_reconfigure(struct hbm_sched *s);
void sched_stop(struct hbm_sched *s);
void sched_fact(void *s, const struct hbm_fact *f);
void sched_aborted(struct daemon *d, const struct hbm_ctl_incident *x);
int sched_get(struct hbm_sched *s, uint32_t index, struct hbm_ctl_drain *out);
int sched_undrain(struct hbm_sched *s, struct hbm_ctl_drain *out);
void sched_save_again(struct hbm_sched *s);

/* Pure, for the unit tests. */
void hbm_sched_clean(char *out, size_t cap, const char *in);
void hbm_sched_reason(char *out, size_t cap, const struct sched_cause *c, size_t nr);

enum hbm_sched_verdict {
	HBM_SCHED_ACT = 1,		/* run scontrol update */
	HBM_SCHED_AS_WANTED,		/* nothing to do */
	HBM_SCHED_NOT_OURS,		/* out of service for another's reason: leave it */
	HBM_SCHED_UNKNOWN,		/* sinfo does not know the node */
};

enum hbm_sched_verdict hbm_sched_verdict(const char *sinfo, uint32_t want, const char *reason,
					 const char *set, char *theirs, size_t len);
int hbm_sched_hook_ok(const char *path, char *why, size_t len);

#endif /* HBM_SCHEDULER_H */
