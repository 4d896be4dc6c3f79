/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A job's incident across nodes, as every node's hbmguardd follows it in
 * etcd: pure code, no I/O.  It is given what etcd holds (a snapshot, then
 * each event of a watch), what the local side did, and the time; it
 * answers with actions: a transaction to send, a step for the local
 * ranks, a line for the journal.  cluster.c carries them out.
 *
 * THE KEY LAYOUT, version 1 (the one place it is written down; etcd's
 * keys are bytes, ours are ASCII; JOB, NODE and ID are 1 to 63 of
 * [A-Za-z0-9._-], never "." or ".."):
 *
 *   /hbmguard/v1/jobs/JOB/nodes/NODE
 *	{"ranks": [0, 1], "world_size": 4}   (global ranks, each < world_size)
 *	NODE has ranks of JOB: put under NODE's lease, so that it goes
 *	when NODE's daemon does (or loses etcd) for LeaseTTL; deleted when
 *	the last of them leaves.  Put by another writer (another lease, or
 *	none) after NODE's own put: said once per writer and put once again,
 *	then left to it but for new ranks of NODE's (two daemons of one name
 *	would take turns without end).
 *	hbmguardd names a job by its owner's uid
 *	and the name its ranks registered with: "1000.run-42" (recovery.c),
 *	so that no user joins another's job, given that uids are the same
 *	on every node, as a cluster's directory service makes them.
 *   /hbmguard/v1/jobs/JOB/incident
 *	{"id": ID, "opener": NODE, "reason": TEXT, "rank": N,
 *	 "nodes": [NODE, ...]}
 *	JOB's open incident, one at most: created by a transaction whose
 *	compare is this key's create_revision == 0, together with the
 *	first step.  "rank" is the global rank whose state was lost (the
 *	ranks restore it from a healthy one): a node whose ranks' world does
 *	not hold it aborts the incident.  "nodes" are the job's nodes
 *	when it opened: each must acknowledge each step.
 *   /hbmguard/v1/jobs/JOB/incident/ID/step
 *	{"step": "pause"|"isolate"|"restore"|"resume"|"abort",
 *	 "timeout": SECONDS, "reason": TEXT (abort)}
 *	Where the incident stands.  Each change compares this key's
 *	mod_revision with the one its writer read: of two nodes writing at
 *	once, one wins and the other reads the winner's step.
 *   /hbmguard-acks/v1/jobs/JOB/ID/STEP/NODE
 *	{"at": UNIX_MILLISECONDS}
 *	NODE's ranks did STEP; put only while the incident is the one
 *	opened (compare its create_revision).  Outside /hbmguard/, which
 *	every node watches: only the opener watches an incident's
 *	acknowledgements, so that a step costs N events, not N x N.
 *
 * The steps are those of one node's recovery (recovery.c): pause ->
 * isolate -> restore -> resume.  The opener writes the next step once
 * every node acknowledged the current one, and after "resume" closes the
 * incident (deletes it, what is under incident/ID/ and its
 * acknowledgements).  Any node writes
 * "abort" (compare-and-swap) when a node of the incident loses its lease,
 * its own ranks fail a step, a second error hits the job, or a step's
 * deadline passes ("timeout" from the step, or this node's own for it if
 * shorter, counted from when this node read it: no clocks to agree on);
 * after the abort's own deadline any node
 * closes it.  Without etcd past a deadline, a node aborts its own ranks.
 * A step key another writer deleted or spoilt (a value refused, a step
 * that goes back) takes no change: a node aborts its own ranks at the
 * step's deadline (if it read no step, the pause's from when it read the
 * incident; told its ranks nothing yet, the pause's from its error the
 * incident answers if sooner; at once if it decided an abort or read one),
 * ranks told to resume left so unless it decided an abort or read one;
 * from then an abort's timeout later (resumed, at the resume's deadline)
 * it closes the incident, comparing the incident's create_revision and the
 * step key as it read it (a key not there compares as revision 0), and with
 * none there the incident key as last read (its value as created, or its
 * mod_revision put over since): another incident that a store restored from
 * a snapshot opened at the same create_revision is not deleted by a node
 * that did not read the restore, unless it read a writer's put over that
 * other's key first (inc_key_seen()).
 *
 * Anything else under /hbmguard/ (another version's keys, a value that is
 * not the JSON above or longer than CL_VALUE_MAX (an incident's,
 * CL_INCIDENT_MAX), a name out of the alphabet, an incident of a job no
 * node has published, a step or acknowledgement of an incident that is not
 * the open one) is refused with a line in the journal and changes nothing.
 */
#ifndef HBM_CLUSTER_PROTO_H
#define HBM_CLUSTER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ctl.h"
#include "etcd_msg.h"

#define CL_PREFIX		"/hbmguard/"
#define CL_PREFIX_V1		"/hbmguard/v1/"
#define CL_ACKS_V1		"/hbmguard-acks/v1/jobs/"
#define CL_VALUE_MAX		4096
#define CL_MAX_JOBS		256
#define CL_MAX_NODES		1024	/* of one job */
#define CL_MAX_RANKS		16384	/* of one job, its nodes' all told */
#define CL_REASON_LEN		256
/*
 * An incident's value names every node of its job: CL_MAX_NODES names, each
 * quoted and a comma after it, besides what CL_VALUE_MAX holds of the rest
 * (at most some 1.7 KiB: its reason escaped).  At CL_VALUE_MAX, an opener
 * of a job of some 60 nodes of long names wrote one every node refused,
 * itself too, and its key then blocked every open of the job.
 */
#define CL_INCIDENT_MAX		(CL_VALUE_MAX + CL_MAX_NODES * (HBM_CLUSTER_NAME_LEN + 2))

enum cl_step { CL_PAUSE, CL_ISOLATE, CL_RESTORE, CL_RESUME, CL_ABORT, CL_NR_STEPS };

enum cl_action_kind {
	CL_TXN,		/* send .body to /v3/kv/txn; cl_txn_done() when answered */
	CL_LOCAL,	/* the job's local ranks: do .step (.text: an abort's reason) */
	CL_CLOSED,	/* the incident .id of .job ended: .step CL_RESUME resumed, CL_ABORT aborted */
	CL_LOG,		/* a line for the journal, at .prio */
	CL_WATCH,	/* watch the prefix .text: its snapshot to cl_acks_snapshot(), */
	CL_UNWATCH,	/* its events to cl_put() and cl_delete(); and no more */
	CL_REREAD,	/* CL_PREFIX read again: its snapshot to cl_snapshot() */
};

/* What a transaction was for, so that its answer goes back to the same job. */
enum cl_txn_kind { CL_TXN_PUBLISH, CL_TXN_OPEN, CL_TXN_ACK, CL_TXN_ADVANCE, CL_TXN_ABORT,
		   CL_TXN_CLOSE, CL_TXN_LEAVE };

struct cl_action {
	enum cl_action_kind kind;
	enum cl_txn_kind txn;
	char job[HBM_CLUSTER_NAME_LEN];
	char id[HBM_CLUSTER_NAME_LEN];
	enum cl_step step;
	uint32_t rank;		/* CL_LOCAL: the global rank whose state was lost */
	char opener[HBM_CLUSTER_NAME_LEN];	/* CL_LOCAL: the node it was lost on */
	int prio;		/* syslog's */
	char text[2 * CL_REASON_LEN];
	char *body;		/* CL_TXN's JSON, the caller's to free() */
	uint64_t at;		/* CL_TXN_ACK: the time it says, ms since the epoch */
	int64_t from_rev;	/* CL_TXN_ADVANCE, _ABORT, _CLOSE: the step key's mod_revision compared */
	int64_t inc_mod;	/* CL_TXN_CLOSE: the incident key's, as read when sent */
	uint64_t incident;	/* which of the incidents this core read it was for (a count) */
};

/* Deadlines per step, seconds ([Recovery]). */
struct cl_timeouts {
	uint32_t step[CL_NR_STEPS];
};

struct cl_core;

struct cl_core *cl_new(const char *node, const struct cl_timeouts *t, uint64_t (*nonce)(void));
void cl_free(struct cl_core *c);
void cl_set_timeouts(struct cl_core *c, const struct cl_timeouts *t);
const char *cl_step_name(enum cl_step s);

/* etcd's side: the whole prefix as of @rev, then each change after it. */
void cl_snapshot(struct cl_core *c, const struct etcd_kv *kvs, size_t n, int64_t rev, uint64_t now);
void cl_acks_snapshot(struct cl_core *c, const char *prefix, const struct etcd_kv *kvs, size_t n,
		      uint64_t now);
void cl_put(struct cl_core *c, const struct etcd_kv *kv, uint64_t now);
void cl_delete(struct cl_core *c, const struct etcd_kv *kv, uint64_t now);
void cl_synced(struct cl_core *c, int64_t rev, uint64_t now);
void cl_link(struct cl_core *c, bool up, uint64_t now);
void cl_lease(struct cl_core *c, int64_t lease, uint64_t now);
void cl_txn_done(struct cl_core *c, const struct cl_action *a, int err, bool succeeded,
		 int64_t rev, uint64_t now);

/* The local side. */
int cl_job_join(struct cl_core *c, const char *job, const char *value, uint64_t now);
int cl_job_leave(struct cl_core *c, const char *job, uint64_t now);
int cl_error(struct cl_core *c, const char *job, uint32_t rank, const char *reason,
	     uint64_t now, char id[HBM_CLUSTER_NAME_LEN]);
int cl_fail(struct cl_core *c, const char *job, const char *reason, uint64_t now);
int cl_local_done(struct cl_core *c, const char *job, const char *id, enum cl_step step,
		  bool ok, const char *reason, uint64_t now);

/* Time (CLOCK_MONOTONIC, microseconds): when to call cl_tick() next, UINT64_MAX never. */
uint64_t cl_next_deadline(const struct cl_core *c);
void cl_tick(struct cl_core *c, uint64_t now);

bool cl_next_action(struct cl_core *c, struct cl_action *a);
size_t cl_jobs_published(const struct cl_core *c);
int cl_view_get(const struct cl_core *c, uint32_t index, struct hbm_ctl_cluster_node *out);

#endif /* HBM_CLUSTER_PROTO_H */
