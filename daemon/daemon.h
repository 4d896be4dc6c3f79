/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every part of hbmguardd shares: the configuration, the loop, the
 * state directory, and the few things a part may tell the daemon without
 * knowing who listens (daemon.c forwards them to what main() wired).
 *
 * Each part keeps its own state in its own file (kernel.c, core.c,
 * store.c); what is here besides is recovery.c's and control.c's, kept in
 * this struct where tests/unit/check_recovery.c reads it.
 */
#ifndef HBM_DAEMON_H
#define HBM_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "config.h"
#include "fdsink.h"
#include "incidents.h"
#include "ratelimit.h"
#include "seen.h"
#include "subuid.h"

/*
 * Seen pages recovery took out with a cleared one for want of memory (the
 * split it needed), kept to add back: a few at once, in the daemon itself.
 */
#define HBM_FORGOTTEN_MAX	8

/* The uids whose lines about the control socket have budgets of their own at once. */
#define HBM_PEER_LOG_UIDS	32

/* A retry backing off: a second after the first failure, then twice as long up to a minute. */
#define HBM_RETRY_MAX_S	60
static inline unsigned int hbm_retry_after_s(unsigned int last)
{
	return !last ? 1 : last >= HBM_RETRY_MAX_S / 2 ? HBM_RETRY_MAX_S : 2 * last;
}

struct client;
struct incident;
struct hbmd_core;
struct hbm_store;
struct hbm_gpus;
struct hbm_sched;
struct cluster;
struct hbm_ctl_incident;

struct daemon {
	struct hbm_config cfg;
	const char *config_path;	/* -c's, or NULL: the default (config.h) */
	int state_dir;
	sd_event *loop;
	bool journald;			/* a journal to send entries to */
	time_t started;
	struct hbmd_core *core;		/* the devices, and what can be asked of them */
	struct hbm_store *store;	/* the state files (store.c) */
	struct hbm_gpus *gpus;		/* the GPU registrar (gpus.c), for hbmctl gpus */
	struct hbm_sched *sched;	/* the node's drain (scheduler.c), for hbmctl drain */
	struct cluster *cluster;	/* the link to the job's other nodes; NULL: off */
	/* Lines the control socket's peers cause: each uid's, those past them (client.c). */
	struct {
		uid_t uid;
		struct hbm_ratelimit budget;
	} peer_log_uid[HBM_PEER_LOG_UIDS];
	struct hbm_ratelimit peer_log;

	/* Wired by main(); daemon.c calls them (NULL: nobody listens). */
	void (*on_status)(struct daemon *d);	/* something STATUS= shows changed */
	void (*on_save_failed)(struct daemon *d);	/* a file did not reach the disk */
	void (*on_aborted)(struct daemon *d, const struct hbm_ctl_incident *x);
							/* an incident escalated */

	/* recovery.c's */
	int incidents_error;		/* of the last save, or read, of the incidents */
	bool incidents_unread;		/* their file there, not read yet: not saved over */
	bool incidents_dirty;		/* changed in this turn of the loop */
	sd_event_source *incidents_saver;	/* saves them at the turn's end */
	struct hbm_range_set seen[HBMGUARD_MAX_DEVICES];	/* lost data acted upon */
	struct {			/* seen pages taken out for want of memory */
		uint32_t id;
		struct hbm_range r;	/* length 0: a free slot */
	} forgotten[HBM_FORGOTTEN_MAX];
	struct client *ranks;		/* registered training ranks */
	struct incident *incidents;	/* oldest first */
	size_t nr_incidents, incidents_cap;
	uint64_t last_incident;		/* the id of the newest */
	uint64_t losses;		/* losses of data heard, numbering each */
	uint32_t report;		/* the one in hand's report (recovery.c's burst) */
	struct metrics_incidents incident_totals;	/* ended since the start */

	/* scheduler.c's */
	int drain_error;		/* of the last save, or read, of the drain state */

	/* control.c's */
	int control;			/* the listening control socket */
	bool control_passed;		/* by systemd (hbmguardd.socket): its path is systemd's */
	dev_t control_dev;		/* else the socket file it bound */
	ino_t control_ino;
	struct client *clients;		/* connected to it */
	struct hbm_fdsink fdsink;	/* where they are closed (fdsink.c) */
	struct hbm_ratelimit accept_failed;	/* said, out of descriptors */
	sd_event_source *accept_again;	/* then: the listener back on */
	struct hbm_subuids subuids;	/* whose their uids are (subuid.c) */
};

void daemon_notify_status(struct daemon *d);
void daemon_save_failed(struct daemon *d);
void daemon_incident_aborted(struct daemon *d, const struct hbm_ctl_incident *x);
int daemon_bypassed(struct daemon *d, const char *identity, uint64_t offset, uint64_t length);
int daemon_device_known(struct daemon *d, const char *identity);

#endif /* HBM_DAEMON_H */
