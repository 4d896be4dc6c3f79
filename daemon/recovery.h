/* SPDX-License-Identifier: GPL-2.0 */
/* Rank recovery (recovery.c): the ranks, their incidents; a sink of facts. */
#ifndef HBM_RECOVERY_H
#define HBM_RECOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "client.h"
#include "cluster.h"
#include "ctl.h"
#include "daemon.h"

struct hbm_fact;

/*
 * The reports one GPU error may come in (recovery.c's same_burst()): Xid 48,
 * 94 or 95, NVML's DoubleBitEcc event, its page from NVML's tables.
 */
#define HBM_BURST_REPORTS	6

/* An incident: what hbmctl sees, and what drives it. */
struct incident {
	struct hbm_ctl_incident info;
	struct daemon *d;
	sd_event_source *timer;		/* the current step's deadline */
	int pidfd;			/* the failed rank's process */
	pid_t pid;
	struct job_id job;		/* whose; uid (uid_t)-1: no rank's */
	bool inherited;			/* left open by a daemon that died: untimed */
	/* A job with ranks on other nodes: the cluster drives its steps. */
	bool clustered;
	bool remote;			/* opened on another node: no device here */
	int cl_asked, cl_done;		/* the cluster's step asked, and done; -1 none */
	char cluster_id[HBM_CLUSTER_NAME_LEN];
	uint64_t loss;			/* the loss that opened it (daemon's losses) */
	uint64_t lost_at;		/* when, hbm_monotonic_ns(); 0: before a restart */
	uint32_t burst[HBM_BURST_REPORTS];	/* the reports taken as its loss: same_burst() */
	uint64_t burst_loss;		/* the loss that took the last of them */
	/* Its pages in service on their own frames (cleared): none to bypass. */
	bool in_service;
	/* Its loss under another rank of its job too: it cannot restore both. */
	bool two_ranks;
};

#define HBM_INCIDENTS_KEPT	64

void recovery_fact(void *d, const struct hbm_fact *f);
uint32_t recovery_longest(const struct daemon *d);
void recovery_load(struct daemon *d);
void recovery_flush(struct daemon *d);
void recovery_stop(struct daemon *d);
void recovery_save_again(struct daemon *d);
void recovery_on_lost_data(struct daemon *d, const char *identity,
			   uint64_t offset, uint64_t length);
int recovery_register(struct daemon *d, struct client *c, const struct hbm_ctl_rank *r,
		      const char *key);
int recovery_answer(struct daemon *d, struct client *c, const struct hbm_ctl_answer *a);
void recovery_client_gone(struct daemon *d, struct client *c);
int recovery_rank_get(struct daemon *d, uint32_t index, struct hbm_ctl_rank_info *out);
int recovery_incident_get(struct daemon *d, uint32_t index, struct hbm_ctl_incident *out);
size_t recovery_open_incidents(struct daemon *d);
size_t recovery_ranks(struct daemon *d);

/* The local side of the cluster link (cluster.h), its context the daemon. */
extern const struct cluster_local_ops recovery_cluster_ops;
uint64_t recovery_cluster_incident(struct daemon *d, const char *name, const char *id);

#endif /* HBM_RECOVERY_H */
