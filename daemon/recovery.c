// SPDX-License-Identifier: GPL-2.0
/*
 * Rank recovery: the training ranks registered on this node, and the
 * incidents an uncorrectable error on their device opens.
 *
 * An incident goes DETECTED -> PAUSING -> ISOLATED -> RESTORING -> RESUMED:
 * every rank of the affected job is asked to stop at its next step boundary;
 * once all have, the kernel's table is read back to confirm the page is
 * retired and bypassed (a page without a spare cannot be: the incident
 * escalates); then every rank is told whose state was lost, the peers send
 * it theirs, and all answer RESTORED; then they resume.  Each wait has its
 * deadline ([Recovery] in the configuration).  A deadline passed, a rank
 * answering FAILED, or a rank of the job leaving mid-incident ESCALATES it:
 * the ranks are told to ABORT (their launcher restarts the job), the failed
 * rank's process gets SIGTERM and, KillTimeout later, SIGKILL, through the
 * pidfd control.c took when it accepted the rank's connection, so a
 * recycled pid is never hit; and only while that process is still one its
 * owner could signal itself (control_owned_by()).
 *
 * A job is its owner's: ranks, incidents and answers are matched by uid
 * and job name together, so that one user cannot join, take or squat
 * another's job, however its name was learnt; and by the job's key where
 * its ranks registered with one (ctl.h), so that neither can one owner
 * that is many, such as the containers that all run as uid 0: a rank
 * without the key is of another job.  The key's digest is what is kept
 * (struct job_id), never the key.
 *
 * Only errors that destroyed data open incidents (UE, poison); a page
 * retired for correctable errors was copied before the switch (see the
 * aperture), which costs the ranks nothing.  A GPU's uncorrectable error
 * without an address (an NVIDIA Xid 48, 94, 95 or 140: an ERROR fact of
 * severity UE and no length) hits the whole device, every rank on it
 * (HBM_CTL_WHOLE_DEVICE).  Its bypass is the driver's own (NVIDIA retires the
 * page or remaps the row; a reset it needs shows in the device's health), so
 * the kernel's table is not read back for it before the restore.  It marks
 * nothing as seen: the seen sets are of pages, and the core already took
 * the same Xid heard by two sources once (core.h).  One incident per job at a time:
 * a second error in a job under recovery escalates it, since its ranks are
 * no longer a consistent set to restore from; the node's memory only where
 * a page has no spare, as any escalation: a rank any user registers on a
 * whole GPU must not turn two bypassed errors into a drain (helper-188).  An incident restores one
 * rank: one whose loss is under two ranks of the job (two of its ranks on
 * one GPU) escalates once they have paused, where it would restore
 * (may_restore()); the node stays in service unless the page had no spare,
 * since the job's layout, not the memory, is why.
 *
 * Incidents are kept, newest last, in the state directory ("incidents",
 * incidents.h), rewritten atomically at the end of each turn of the event
 * loop that made a transition (recovery_flush()), after the ranks were
 * told of it: the ranks do not wait for the fsync, and one error under many
 * jobs is one write, not one per step of each; a write that fails is
 * retried (daemon_save_failed()).  After a restart the ranks'
 * connections are gone, so an incident found open is escalated.  The
 * history keeps the newest HBM_INCIDENTS_KEPT closed ones; open incidents,
 * and escalated ones whose SIGKILL is still to come, are kept whatever
 * their number.
 *
 * A job whose ranks are not all here (fewer registered than its world
 * size) is followed across its nodes when [Cluster] is set (cluster.h): its
 * ranks here are published under its name there (cluster_name()), an error
 * under one of them opens the job's incident in etcd, and each step is the cluster's:
 * the ranks here are asked it when etcd says so, and the cluster told when
 * they have done it.  The deadlines are the cluster's then, and so is the
 * escalation: a failure here aborts every node's ranks, and one elsewhere
 * these.  An incident opened on another node shows here as device "@NODE":
 * nothing of this node's was lost, nothing is checked, killed or drained
 * here for it.  Without [Cluster], or for a job all here, recovery is this
 * node's alone, as above.
 *
 * A sink of the core (recovery_fact()): pages whose data was lost, heard or
 * found unheard in a table read after a loss, open incidents; a device new
 * or gone forgets what was acted upon there.  What it keeps of a device is
 * by the module's id: a fact about a device the module does not number
 * (HBM_NO_DEVICE_ID) has no table, and no rank can be on it.  It must not
 * block (signals, non-blocking sends through client.c, one atomic write
 * per transition), allocates per incident and per range of lost data it
 * records (never per correctable event), and calls nothing above it: the
 * status, the retry of a failed save and an abort through daemon.c, the kernel's
 * table through daemon_is_bypassed(), a read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include "client.h"
#include "core.h"
#include "daemon.h"
#include "incidents.h"
#include "recovery.h"
#include "state.h"

#define INCIDENTS_FILE		"incidents"
#define ID_INCIDENT		"7b4d2f0c9a8e4d61b3f5a2c1e0d9f8a7"

static const char *const state_names[] = {
	[HBM_INCIDENT_DETECTED] = "detected", [HBM_INCIDENT_PAUSING] = "pausing",
	[HBM_INCIDENT_ISOLATED] = "isolated", [HBM_INCIDENT_RESTORING] = "restoring",
	[HBM_INCIDENT_RESUMED] = "resumed", [HBM_INCIDENT_ESCALATED] = "escalated",
};

static uint64_t now_us(void)
{
	return hbm_realtime_ns() / 1000;
}

static bool open_state(uint32_t state)
{
	return state < HBM_INCIDENT_RESUMED;
}

/* A file there that could not be read (load()) is not saved over. */
static void save_incidents(struct daemon *d)
{
	size_t len = hbm_incidents_encode_size(d->nr_incidents), i;
	uint8_t *buf;
	int err = -ENOMEM;

	if (d->incidents_unread)
		return;
	buf = calloc(1, len);
	if (buf) {
		hbm_incidents_encode_header(buf, d->nr_incidents);
		for (i = 0; i < d->nr_incidents; i++)
			hbm_incidents_encode_record(buf, i, &d->incidents[i].info);
		err = hbm_atomic_write(d->state_dir, INCIDENTS_FILE, buf, len);
	}
	if (err && err != d->incidents_error)
		fprintf(stderr, "<3>hbmguardd: saving the incidents: %s: retrying\n",
			strerror(-err));
	else if (!err && d->incidents_error)
		fprintf(stderr, "<5>hbmguardd: the incidents are saved\n");
	d->incidents_error = err;
	if (err)
		daemon_save_failed(d);
	free(buf);
}

/**
 * recovery_flush() - the incidents, saved if a transition changed them
 * @d: the daemon
 *
 * At the end of each turn of the loop, and at the daemon's stop.
 */
void recovery_flush(struct daemon *d)
{
	if (!d->incidents_dirty)
		return;
	d->incidents_dirty = false;
	save_incidents(d);
}

/*
 * A post source: marked pending whenever another source is dispatched
 * (source_dispatch(), src/libsystemd/sd-event/sd-event.c, systemd 252), so
 * run before the loop waits again.  Not for transitions made by another
 * post source (none makes any): this one may have run before it.
 */
static int on_turn_end(sd_event_source *s, void *arg)
{
	(void)s;
	recovery_flush(arg);
	return 0;
}

static void load(struct daemon *d);

/* The retry of a failed save of the incidents, or of their read. */
void recovery_save_again(struct daemon *d)
{
	if (d->incidents_unread)
		load(d);
	else if (d->incidents_error)
		save_incidents(d);
}

static void journal_transition(struct daemon *d, const struct incident *x,
			       uint32_t state)
{
	const struct hbm_ctl_incident *in = &x->info;
	bool last = state == in->state;
	char msg[256];
	int prio = state == HBM_INCIDENT_ESCALATED ? 2 :
		   state == HBM_INCIDENT_DETECTED ? 3 : 5;

	char where[32] = ", whole device";

	if (x->remote)
		where[0] = 0;
	else if (in->length != HBM_CTL_WHOLE_DEVICE)
		snprintf(where, sizeof(where), " at 0x%" PRIx64, in->offset);
	snprintf(msg, sizeof(msg), "incident %" PRIu64 ": job %s, rank %u on %s%s%s: %s%s%s",
		 in->id, in->job, in->failed_rank, x->remote ? "node " : "",
		 in->device + x->remote, where, state_names[state],
		 last && in->reason[0] ? ": " : "", last ? in->reason : "");
	if (!d->journald) {
		fprintf(stderr, "<%d>hbmguardd: %s\n", prio, msg);
		return;
	}
	sd_journal_send("MESSAGE=%s", msg, "MESSAGE_ID=%s", ID_INCIDENT,
			"PRIORITY=%d", prio, "HBMGUARD_INCIDENT=%" PRIu64, in->id,
			"HBMGUARD_JOB=%s", in->job, "HBMGUARD_RANK=%u", in->failed_rank,
			"HBMGUARD_IDENTITY=%s", in->device,
			"HBMGUARD_OFFSET=0x%" PRIx64, in->offset,
			"HBMGUARD_INCIDENT_STATE=%s", state_names[state], NULL);
}

/*
 * A step begins: timed now, told to the ranks by the caller.  The last
 * (resumed, escalated: each reached once) is counted for the metrics here.
 */
static void mark(struct incident *x, uint32_t state, const char *reason)
{
	x->info.state = state;
	x->info.at[state] = now_us();
	if (reason)
		snprintf(x->info.reason, sizeof(x->info.reason), "%s", reason);
	if (!open_state(state))
		metrics_incident_ended(&x->d->incident_totals, &x->info, !x->inherited);
}

/*
 * The steps from @from on, into the journal and the incidents file: once
 * the ranks have been told, so that the fsync is not in their way.
 */
static void record(struct daemon *d, struct incident *x, uint32_t from)
{
	uint32_t st;

	for (st = from; st <= x->info.state; st++)
		if (x->info.at[st])
			journal_transition(d, x, st);
	d->incidents_dirty = true;
	if (!d->incidents_saver)	/* no turn's end to wait for */
		recovery_flush(d);
	daemon_notify_status(d);
}

static bool same_job(const struct job_id *a, const struct job_id *b)
{
	return a->uid == b->uid && !memcmp(a->key, b->key, sizeof(a->key)) &&
	       !strcmp(a->name, b->name);
}

static bool keyed(const struct job_id *j)
{
	static const uint8_t none[HBM_SHA256_LEN];

	return memcmp(j->key, none, sizeof(none));
}

/* Every registered rank of a job (its owner, its key, its name), in turn. */
#define for_each_rank_of(dmn, c, of) \
	for (c = (dmn)->ranks; c; c = c->next_rank) \
		if (same_job(&c->job, of))

static void tell(struct daemon *d, struct incident *x, uint32_t action)
{
	struct hbm_ctl_recovery rc = {
		.incident = x->info.id, .action = action,
		.failed_rank = x->info.failed_rank,
		.offset = x->info.offset, .length = x->info.length,
	};
	struct client *c;

	strcpy(rc.device, x->info.device);
	for_each_rank_of(d, c, &x->job) {
		c->answer = 0;
		control_send(c, HBM_CTL_RECOVERY, &rc);
	}
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *arg);

/*
 * The longest an incident across nodes may take in all: its opening and
 * each step's deadline ([Recovery], as cluster.c gives them), and a kill's
 * grace.  Past it this node escalates on its own, whatever etcd says or
 * does not: its ranks never wait on the cluster for ever.
 */
static uint32_t cluster_budget(const struct daemon *d)
{
	const struct hbm_recovery_config *r = &d->cfg.recovery;

	return 4 * r->pause_timeout + r->restore_timeout + r->kill_timeout + 10;
}

/**
 * recovery_longest() - the longest an incident here may take, in seconds
 * @d: the daemon
 *
 * From the error to the ranks' last request (RESUME or ABORT): across
 * nodes, where [Cluster] is on, cluster_budget(); else the pause's and the
 * restore's deadlines.  What a rank waits for before it gives up on the
 * daemon (RECOVERY_TIMES).
 */
uint32_t recovery_longest(const struct daemon *d)
{
	const struct hbm_recovery_config *r = &d->cfg.recovery;

	return d->cluster ? cluster_budget(d) : r->pause_timeout + r->restore_timeout;
}

static void arm(struct daemon *d, struct incident *x, uint32_t seconds)
{
	sd_event_source_disable_unref(x->timer);
	x->timer = NULL;
	if (seconds)
		sd_event_add_time_relative(d->loop, &x->timer, CLOCK_MONOTONIC,
					   (uint64_t)seconds * 1000000, 0, on_deadline, x);
}

static void kill_failed_rank(struct incident *x, int sig)
{
	if (x->pidfd < 0)
		return;
	if (!control_owned_by(x->pidfd, x->pid, x->job.uid)) {
		fprintf(stderr, "<4>hbmguardd: incident %" PRIu64 ": rank %u (pid %d) is gone "
			"or no longer uid %u's: not signalled\n", x->info.id,
			x->info.failed_rank, x->pid, (unsigned int)x->job.uid);
		close(x->pidfd);
		x->pidfd = -1;
		return;
	}
	if (syscall(SYS_pidfd_send_signal, x->pidfd, sig, NULL, 0) == 0)
		fprintf(stderr, "<4>hbmguardd: incident %" PRIu64 ": %s to rank %u (pid %d)\n",
			x->info.id, sig == SIGKILL ? "SIGKILL" : "SIGTERM",
			x->info.failed_rank, x->pid);
	if (sig == SIGKILL) {
		close(x->pidfd);
		x->pidfd = -1;
	}
}

/*
 * Why an incident escalated, as far as the node is concerned: its memory
 * (no spare for its page: ranks_cause(); for pages lost since, including
 * under another node's incident, escalated_unbypassed() drains for them)
 * takes the node out of the scheduler's hands; the rest (a rank that
 * failed, left or was late, a second error whose pages were bypassed, the
 * job's other nodes, a daemon restarted) ends the job's recovery only, so
 * that no user's process can drain the node for everyone.
 */
enum escalation_cause {
	NOT_THE_NODE,
	THE_NODES_MEMORY,
};

/* Here: the job's ranks told to abort, the failed one's process ended. */
static bool escalate_here(struct daemon *d, struct incident *x, const char *reason,
			  enum escalation_cause cause)
{
	if (!open_state(x->info.state))
		return false;
	mark(x, HBM_INCIDENT_ESCALATED, reason);
	tell(d, x, HBM_RECOVERY_ABORT);
	kill_failed_rank(x, SIGTERM);
	arm(d, x, x->pidfd >= 0 ? d->cfg.recovery.kill_timeout : 0);
	record(d, x, HBM_INCIDENT_ESCALATED);
	if (!x->remote && cause == THE_NODES_MEMORY)
		daemon_incident_aborted(d, &x->info);
	return true;
}

/* The bytes of a key's digest in its job's name in etcd, and their room there ("-" and hex). */
#define CLUSTER_DIGEST		8
#define CLUSTER_DIGEST_ROOM	(1 + 2 * CLUSTER_DIGEST)

/*
 * A job's name in etcd (cluster_proto.h), "UID.JOB", or "UID-DIGEST.JOB"
 * with a key (ctl.h): false if it cannot have one.
 */
static bool cluster_name(const struct job_id *j, char name[HBM_CLUSTER_NAME_LEN])
{
	char digest[CLUSTER_DIGEST_ROOM + 1] = "";
	int n, i;

	if (keyed(j)) {
		digest[0] = '-';
		for (i = 0; i < CLUSTER_DIGEST; i++)
			sprintf(digest + 1 + 2 * i, "%02x", j->key[i]);
	}
	n = snprintf(name, HBM_CLUSTER_NAME_LEN, "%u%s.%s", (unsigned int)j->uid, digest, j->name);
	return n > 0 && n < HBM_CLUSTER_NAME_LEN && hbm_cluster_name_valid(name);
}

/* And on every node of its job, when the cluster drives it. */
static void escalate(struct daemon *d, struct incident *x, const char *reason,
		     enum escalation_cause cause)
{
	char name[HBM_CLUSTER_NAME_LEN];

	if (escalate_here(d, x, reason, cause) && x->clustered && cluster_name(&x->job, name))
		cluster_fail(d->cluster, name, reason);
}

#define NO_SPARE	"the page has no spare: not bypassed"

/*
 * Whether pages lost are bypassed (1), not (0: no spare), or their table
 * could not be read (a negative errno).  A GPU's error is its driver's to
 * bypass; a cleared page (@in_service) needs none: 1.
 */
static int bypass_at(struct daemon *d, const char *identity, uint64_t offset, uint64_t length,
		     bool in_service)
{
	if (length == HBM_CTL_WHOLE_DEVICE || in_service)
		return 1;
	return daemon_bypassed(d, identity, offset, length);
}

/* Incident @x's pages, as bypass_at(): another node's lost nothing here. */
static int bypass_of(struct daemon *d, const struct incident *x)
{
	return x->remote ? 1 : bypass_at(d, x->info.device, x->info.offset, x->info.length,
					 x->in_service);
}

/*
 * Incident @x escalated for pages of @identity not known bypassed
 * (@bypassed, as bypass_at() says): where they have no spare, the node's
 * memory, drained for them, its own or another node's incident (helper-189:
 * a remote incident drained nothing); where their table could not be read,
 * the job's alone.  The drain's copy is taken first: cluster_fail() tells
 * the cluster, which may move the incidents.  Return: whether it was.
 */
static bool escalated_unbypassed(struct daemon *d, struct incident *x, int bypassed,
				 const char *identity, uint64_t offset, uint64_t length)
{
	struct hbm_ctl_incident here = x->info;

	if (bypassed == 1)
		return false;
	if (bypassed) {
		escalate(d, x, "the page's table could not be read", NOT_THE_NODE);
		return true;
	}
	snprintf(here.device, sizeof(here.device), "%s", identity);
	here.offset = offset;
	here.length = length;
	here.state = HBM_INCIDENT_ESCALATED;
	snprintf(here.reason, sizeof(here.reason), "%s", NO_SPARE);
	if (open_state(x->info.state)) {
		escalate(d, x, NO_SPARE, NOT_THE_NODE);
		daemon_incident_aborted(d, &here);
	}
	return true;
}

/*
 * What an incident its ranks, its deadline or the job's other nodes end (a
 * rank failed or left, a step late, an abort) escalates for: its page's
 * want of a spare, where the table says it has none, as may_restore()
 * would have once they all paused: the node's memory.  The rank on the
 * lost page is the likeliest to fail or crash first, and any user's rank
 * can, before its peers pause (helper-185).  Else *@reason, the job's
 * alone; so too where the table cannot be read (helper-186: that drained).
 */
static enum escalation_cause ranks_cause(struct daemon *d, const struct incident *x,
					 const char **reason)
{
	if (bypass_of(d, x))
		return NOT_THE_NODE;
	*reason = NO_SPARE;
	return THE_NODES_MEMORY;
}

static void escalate_for_ranks(struct daemon *d, struct incident *x, const char *reason)
{
	enum escalation_cause cause = ranks_cause(d, x, &reason);

	escalate(d, x, reason, cause);
}

/* Here alone: the job's other nodes ended it, or asked this one to. */
static void escalate_here_for_ranks(struct daemon *d, struct incident *x, const char *reason)
{
	enum escalation_cause cause = ranks_cause(d, x, &reason);

	escalate_here(d, x, reason, cause);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *arg)
{
	struct incident *x = arg;
	struct daemon *d = x->d;

	(void)s;
	(void)usec;
	if (x->info.state == HBM_INCIDENT_ESCALATED) {
		kill_failed_rank(x, SIGKILL);
		arm(d, x, 0);
		return 0;
	}
	escalate_for_ranks(d, x, x->clustered ?
			   "the incident across nodes did not end within its deadlines" :
			   x->info.state == HBM_INCIDENT_PAUSING ?
			   "ranks did not pause in time" : "ranks did not restore in time");
	return 0;
}

/* Whether every rank of the job gave this answer to the current step. */
static bool all_answered(struct daemon *d, const struct incident *x, uint32_t answer)
{
	struct client *c;

	for_each_rank_of(d, c, &x->job)
		if (c->answer != answer)
			return false;
	return true;
}

/* The cluster told, once, that the ranks here did the step it asked. */
static void cluster_advance(struct daemon *d, struct incident *x)
{
	char name[HBM_CLUSTER_NAME_LEN];
	uint32_t want = x->cl_asked == CL_PAUSE ? HBM_ANSWER_PAUSED :
			x->cl_asked == CL_RESTORE ? HBM_ANSWER_RESTORED : 0;

	if (!want || x->cl_done == x->cl_asked || !all_answered(d, x, want) ||
	    !cluster_name(&x->job, name))
		return;
	x->cl_done = x->cl_asked;
	cluster_done(d->cluster, name, x->cluster_id, x->cl_asked, true, NULL);
}

/*
 * One loss under two ranks of a job (two ranks on one GPU, an error without
 * an address): an incident restores one rank (struct hbm_ctl_recovery names
 * it), and the other would resume on what it lost.  The job's restart is
 * its recovery then; the job's layout, not the node's memory, is why.
 */
#define TWO_RANKS_LOST	"data lost under two ranks of the job: an incident restores one"

/*
 * Whether incident @x, its ranks paused here, may go on to its restore: its
 * page bypassed, and its loss under one rank.  Else it escalates, the
 * page's want of a spare first: that is the node's memory.
 */
static bool may_restore(struct daemon *d, struct incident *x)
{
	if (escalated_unbypassed(d, x, bypass_of(d, x), x->info.device, x->info.offset,
				 x->info.length))
		return false;	/* not known bypassed: no resume on it */
	if (x->two_ranks) {
		escalate(d, x, TWO_RANKS_LOST, NOT_THE_NODE);
		return false;
	}
	return true;
}

static void advance(struct daemon *d, struct incident *x)
{
	if (x->clustered) {
		cluster_advance(d, x);
	} else if (x->info.state == HBM_INCIDENT_PAUSING && all_answered(d, x, HBM_ANSWER_PAUSED)) {
		if (!may_restore(d, x))
			return;
		mark(x, HBM_INCIDENT_ISOLATED, NULL);
		mark(x, HBM_INCIDENT_RESTORING, NULL);
		tell(d, x, HBM_RECOVERY_RESTORE);
		arm(d, x, d->cfg.recovery.restore_timeout);
		record(d, x, HBM_INCIDENT_ISOLATED);
	} else if (x->info.state == HBM_INCIDENT_RESTORING &&
		   all_answered(d, x, HBM_ANSWER_RESTORED)) {
		mark(x, HBM_INCIDENT_RESUMED, NULL);
		tell(d, x, HBM_RECOVERY_RESUME);
		arm(d, x, 0);
		record(d, x, HBM_INCIDENT_RESUMED);
	}
}

/* Whether a job has ranks elsewhere: fewer registered here than its world. */
static bool job_spread(struct daemon *d, const struct job_id *job)
{
	uint32_t here = 0, world = 0;
	struct client *c;

	for_each_rank_of(d, c, job) {
		here++;
		world = c->reg.world_size;
	}
	return here < world;
}

/*
 * The job's ranks here, as the cluster has them ({"ranks": [...],
 * "world_size": N}, cluster_proto.h); its key deleted when none is left.
 */
static void publish_job(struct daemon *d, const struct job_id *job)
{
	char name[HBM_CLUSTER_NAME_LEN], value[CL_VALUE_MAX];
	uint32_t world = 0;
	struct client *c;
	size_t n = 0;

	if (!d->cluster || !cluster_name(job, name))	/* refused at registration */
		return;
	if (!job_spread(d, job)) {	/* none (left), or all here: nothing for etcd */
		cluster_leave(d->cluster, name);
		return;
	}
	n = snprintf(value, sizeof(value), "{\"ranks\":[");
	for_each_rank_of(d, c, job) {
		if (n < sizeof(value))
			n += snprintf(value + n, sizeof(value) - n, "%s%u", world ? "," : "",
				      c->reg.rank);
		world = c->reg.world_size;
	}
	if (n < sizeof(value))
		n += snprintf(value + n, sizeof(value) - n, "],\"world_size\":%u}", world);
	if (n >= sizeof(value) || cluster_join(d->cluster, name, value))
		fprintf(stderr, "<3>hbmguardd: job %s: its ranks here cannot be published\n", name);
}

static struct incident *open_incident_of(struct daemon *d, const struct job_id *job)
{
	size_t i;

	for (i = 0; i < d->nr_incidents; i++)
		if (open_state(d->incidents[i].info.state) && same_job(&d->incidents[i].job, job))
			return &d->incidents[i];
	return NULL;
}

/* Timers point at the incidents from @from on, which have moved. */
static void repoint_timers(struct daemon *d, size_t from)
{
	for (; from < d->nr_incidents; from++)
		if (d->incidents[from].timer)
			sd_event_source_set_userdata(d->incidents[from].timer,
						     &d->incidents[from]);
}

/* A blank incident at the end of the history, or NULL without memory. */
static struct incident *append_incident(struct daemon *d)
{
	struct incident *x;

	if (d->nr_incidents == d->incidents_cap) {
		size_t cap = d->incidents_cap ? 2 * d->incidents_cap : HBM_INCIDENTS_KEPT;

		x = realloc(d->incidents, cap * sizeof(*x));
		if (!x)
			return NULL;
		d->incidents = x;
		d->incidents_cap = cap;
		repoint_timers(d, 0);
	}
	x = &d->incidents[d->nr_incidents++];
	memset(x, 0, sizeof(*x));
	x->d = d;
	x->pidfd = -1;
	return x;
}

/* Whether an incident may leave the history: closed, nothing to come. */
static bool evictable(const struct incident *x)
{
	return !open_state(x->info.state) && !x->timer;
}

/*
 * The oldest incident done with leaves the history.  Return: where it was,
 * or SIZE_MAX where none could.
 */
static size_t evict_oldest(struct daemon *d)
{
	size_t i;

	for (i = 0; i < d->nr_incidents && !evictable(&d->incidents[i]); i++)
		;
	if (i == d->nr_incidents)
		return SIZE_MAX;
	if (d->incidents[i].pidfd >= 0)
		close(d->incidents[i].pidfd);
	memmove(&d->incidents[i], &d->incidents[i + 1],
		(d->nr_incidents - i - 1) * sizeof(*d->incidents));
	d->nr_incidents--;
	repoint_timers(d, i);
	return i;
}

static struct incident *new_incident(struct daemon *d)
{
	struct incident *x;

	if (d->nr_incidents >= HBM_INCIDENTS_KEPT)
		evict_oldest(d);
	x = append_incident(d);
	if (x)
		x->info.id = ++d->last_incident;
	return x;
}

static bool overlaps(const struct hbm_ctl_rank *r, uint64_t offset, uint64_t length)
{
	uint32_t i;

	if (!r->nr_ranges)
		return true;
	for (i = 0; i < r->nr_ranges; i++)
		if (offset < r->ranges[i].offset + r->ranges[i].length &&
		    r->ranges[i].offset < offset + length)
			return true;
	return false;
}

static bool hits(const struct client *c, const char *identity, uint64_t offset,
		 uint64_t length)
{
	return !strcmp(c->reg.device, identity) && overlaps(&c->reg, offset, length);
}

/* Whether a rank of @c's job listed before @c was hit: the job's turn was then. */
static bool job_hit_before(struct daemon *d, const struct client *c,
			   const char *identity, uint64_t offset, uint64_t length)
{
	const struct client *o;

	for (o = d->ranks; o != c; o = o->next_rank)
		if (same_job(&o->job, &c->job) && hits(o, identity, offset, length))
			return true;
	return false;
}

/* Whether a new incident is the cluster's: its job has ranks on other nodes. */
static bool across_nodes(struct daemon *d, const struct incident *x)
{
	char name[HBM_CLUSTER_NAME_LEN];

	return d->cluster && job_spread(d, &x->job) && cluster_name(&x->job, name);
}

/* The newest of that id (an inherited one may share it: put_before()). */
static struct incident *incident_by_id(struct daemon *d, uint64_t id)
{
	size_t i;

	for (i = d->nr_incidents; i-- > 0;)
		if (d->incidents[i].info.id == id)
			return &d->incidents[i];
	return NULL;
}

/*
 * The incident opened in etcd.  Last, its pointer not kept: what the
 * cluster link does inside may add or drop incidents, which moves them.
 */
static void open_across_nodes(struct daemon *d, struct incident *x)
{
	char name[HBM_CLUSTER_NAME_LEN], reason[CL_REASON_LEN], cluster_id[HBM_CLUSTER_NAME_LEN];
	uint64_t id = x->info.id;
	int err;

	cluster_name(&x->job, name);
	if (x->info.length == HBM_CTL_WHOLE_DEVICE)
		snprintf(reason, sizeof(reason), "data lost on %s (whole device) under rank %u",
			 x->info.device, x->info.failed_rank);
	else
		snprintf(reason, sizeof(reason), "data lost on %s at 0x%" PRIx64 " under rank %u",
			 x->info.device, x->info.offset, x->info.failed_rank);
	err = cluster_error(d->cluster, name, x->info.failed_rank, reason, cluster_id);
	if (err)
		fprintf(stderr, "<3>hbmguardd: job %s: its incident cannot be opened across its nodes: %s: this node's alone\n",
			name, strerror(-err));
	x = incident_by_id(d, id);
	if (!x)
		return;
	if (!err && !x->cluster_id[0])	/* a step may have named it already */
		strcpy(x->cluster_id, cluster_id);
	if (err && open_state(x->info.state)) {
		x->clustered = false;
		arm(d, x, d->cfg.recovery.pause_timeout);
	}
}

/* Incident @x's range grown over [@offset, @offset + @length) too. */
static void widen(struct incident *x, uint64_t offset, uint64_t length)
{
	uint64_t end;

	if (x->info.length == HBM_CTL_WHOLE_DEVICE || length == HBM_CTL_WHOLE_DEVICE) {
		x->info.offset = 0;
		x->info.length = HBM_CTL_WHOLE_DEVICE;
		return;
	}
	end = offset + length > x->info.offset + x->info.length ? offset + length :
	      x->info.offset + x->info.length;
	if (offset < x->info.offset)
		x->info.offset = offset;
	x->info.length = end - x->info.offset;
}

/* Whether a rank of @x's job but its failed one has pages in the range. */
static bool hits_another_rank(struct daemon *d, const struct incident *x, const char *identity,
			      uint64_t offset, uint64_t length)
{
	const struct client *o;

	for (o = d->ranks; o; o = o->next_rank)
		if (same_job(&o->job, &x->job) && o->reg.rank != x->info.failed_rank &&
		    hits(o, identity, offset, length))
			return true;
	return false;
}

/*
 * A loss's report (d->report): its source's and its kind, an Xid or a
 * page heard (HBM_REPORT_PAGE); 0, one that is never another's report of
 * the same error (lost events, a page whose spare failed, a rank's API).
 */
#define HBM_REPORT_PAGE		0xffffU
#define HBM_REPORT(origin, xid)	((uint32_t)(origin) << 16 | ((xid) & 0xffffU))

/*
 * Whether the loss in hand (d->report) is another report of the error that
 * opened @x, which it then takes: within HBM_XID_WINDOW_NS of it, the
 * window the core takes one Xid heard twice in, each kind of report once
 * (its ranges all: one event's pages may come in several, lost_pages()),
 * recorded whatever the step (helper-190: heard while the ranks paused, a
 * report was not, and counted again once they restored).
 * One DBE is Xid 48, then 94 or 95, NVML's DoubleBitEcc event and, once
 * NVML's tables are read again, its page, and ranks that pause at once may
 * be restoring by then; the same report twice is two errors (helper-189:
 * an Xid 48 again, a page's spare failing, events lost were taken in).
 */
static bool same_burst(struct daemon *d, struct incident *x)
{
	size_t i;

	if (!d->report || !x->lost_at || hbm_monotonic_ns() - x->lost_at >= HBM_XID_WINDOW_NS)
		return false;
	for (i = 0; i < HBM_BURST_REPORTS && x->burst[i]; i++)
		if (x->burst[i] == d->report)
			return x->burst_loss == d->losses;	/* another range of it */
	if (i == HBM_BURST_REPORTS)
		return false;
	x->burst[i] = d->report;
	x->burst_loss = d->losses;
	return true;
}

/*
 * Pages lost under a job whose incident @x is open: taken into it where
 * they are the same error, else @x escalates.  The same error is:
 *  - another range of the loss that opened @x (lost_pages()): @x grows
 *    over it, its restore with it; under another rank of the job, @x's
 *    loss is under two (may_restore());
 *  - where @x has the whole device already: a loss of that GPU heard
 *    before any rank was asked to restore, or another report of @x's own
 *    (same_burst()), a page bypassed (a whole device's incident checks no
 *    page: the driver's bypass) or in service.  Any other loss once a
 *    restore is under way may have taken restored data: a second error,
 *    whole device or page (a later Xid 48 or lost events were taken as
 *    the same error, and the ranks resumed on what they had restored).
 *    Where the new pages have no spare, that is the node's memory even
 *    under an incident opened on another node; else the second error
 *    drains it only where @x's own page had none.
 */
static void take_in(struct daemon *d, struct incident *x, const char *identity, uint64_t offset,
		    uint64_t length, bool in_service)
{
	bool same_device = !strcmp(x->info.device, identity);
	int bypassed;

	if (same_device && x->loss == d->losses) {
		if (hits_another_rank(d, x, identity, offset, length))
			x->two_ranks = true;
		widen(x, offset, length);
		return;
	}
	if (same_device && x->info.length == HBM_CTL_WHOLE_DEVICE &&
	    (same_burst(d, x) || x->info.state == HBM_INCIDENT_DETECTED ||
	     x->info.state == HBM_INCIDENT_PAUSING)) {
		if (escalated_unbypassed(d, x, bypass_at(d, identity, offset, length, in_service),
					 identity, offset, length))
			return;
		fprintf(stderr, "<6>hbmguardd: %s: its error again, within incident %" PRIu64 "\n",
			identity, x->info.id);
		return;
	}
	bypassed = bypass_at(d, identity, offset, length, in_service);
	if (!bypassed || (bypassed < 0 && bypass_of(d, x)))
		escalated_unbypassed(d, x, bypassed, identity, offset, length);
	else	/* @x's own page's want of a spare, where it has one */
		escalate_for_ranks(d, x, "a second error during recovery");
}

/*
 * Pages of loss d->losses: an incident for each job with a rank on them,
 * once per job (the first of its ranks hit is the failed one; where another
 * is too, it cannot restore: may_restore()), or the job's open incident
 * takes them in or escalates (take_in()).  One loss
 * may come in several ranges (lost_pages(): those of a fact not seen
 * before).  @in_service: the pages are served by their own frames
 * (cleared): none to bypass.
 */
static void lost_data(struct daemon *d, const char *identity, uint64_t offset,
		      uint64_t length, bool in_service)
{
	struct client *c;

	for (c = d->ranks; c; c = c->next_rank) {
		struct incident *x;

		if (!hits(c, identity, offset, length) ||
		    job_hit_before(d, c, identity, offset, length))
			continue;
		x = open_incident_of(d, &c->job);
		if (x) {
			take_in(d, x, identity, offset, length, in_service);
			continue;
		}
		x = new_incident(d);
		if (!x) {
			fprintf(stderr, "<2>hbmguardd: no memory for an incident of job %s\n",
				c->reg.job);
			continue;
		}
		strcpy(x->info.job, c->reg.job);
		strcpy(x->info.device, identity);
		x->info.offset = offset;
		x->info.length = length;
		x->info.failed_rank = c->reg.rank;
		x->pid = c->cred.pid;
		x->job = c->job;
		x->pidfd = c->pidfd >= 0 ? fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3) : -1;
		x->cl_asked = x->cl_done = -1;
		x->loss = d->losses;
		x->lost_at = hbm_monotonic_ns();
		x->burst[0] = d->report;
		x->burst_loss = d->losses;
		x->in_service = in_service;
		x->clustered = across_nodes(d, x);
		x->two_ranks = hits_another_rank(d, x, identity, offset, length);
		mark(x, HBM_INCIDENT_DETECTED, NULL);
		mark(x, HBM_INCIDENT_PAUSING, NULL);
		tell(d, x, HBM_RECOVERY_PAUSE);
		arm(d, x, x->clustered ? cluster_budget(d) : d->cfg.recovery.pause_timeout);
		record(d, x, HBM_INCIDENT_DETECTED);
		if (x->clustered)
			open_across_nodes(d, x);
	}
}

/**
 * recovery_on_lost_data() - pages of a device lost their data
 * @d: the daemon
 * @identity: the device
 * @offset: the pages
 * @length: their length
 *
 * A loss of its own: opens an incident for each job with a rank on those
 * pages, or escalates the job's open incident (lost_data()).
 */
void recovery_on_lost_data(struct daemon *d, const char *identity,
			   uint64_t offset, uint64_t length)
{
	d->losses++;
	lost_data(d, identity, offset, length, false);
}

/**
 * recovery_register() - a process registers as a rank
 * @d: the daemon
 * @c: its connection
 * @r: what it says it is (checked by hbm_ctl_decode())
 * @key: its job's key (checked by hbm_ctl_decode()); NULL: none
 *
 * The job is the one of that name owned by the connection's uid, and of
 * that key (ctl.h).
 *
 * Return: 0; -EALREADY if this connection registered before, -ENODEV if
 * the module has no device of that identity (a name, a CUDA index, a
 * typo: a rank there would hear of no error), -EEXIST if a live process
 * holds that rank of that job, -EBUSY if the job is under recovery,
 * -EINVAL if [Cluster] is set and etcd cannot name the job; or the errno
 * of asking the module for its devices.
 */
int recovery_register(struct daemon *d, struct client *c, const struct hbm_ctl_rank *r,
		      const char *key)
{
	struct job_id job = { .uid = c->cred.uid };
	char name[HBM_CLUSTER_NAME_LEN];
	struct client *o;
	int err;

	if (c->is_rank)
		return -EALREADY;
	strcpy(job.name, r->job);
	if (key)
		hbm_sha256(key, strlen(key), job.key);
	for_each_rank_of(d, o, &job) {
		if (o->reg.rank == r->rank)
			return -EEXIST;
		/*
		 * One world: the cluster takes the job's ranks here with one
		 * world size (publish_job()), and refused their publication,
		 * a journal line each, at whatever pace a peer registered
		 * others (helper-188).
		 */
		if (o->reg.world_size != r->world_size) {
			if (client_may_log(c))
				fprintf(stderr, "<4>hbmguardd: rank %u of job %s refused: a world of"
					" %u, its ranks' is %u\n", r->rank, r->job, r->world_size,
					o->reg.world_size);
			return -EINVAL;
		}
	}
	if (open_incident_of(d, &job))
		return -EBUSY;
	/* after the checks that ask nothing of the module */
	err = daemon_device_known(d, r->device);
	if (err) {
		if (client_may_log(c))
			fprintf(stderr, "<4>hbmguardd: rank %u of job %s refused: device %s: %s%s\n",
				r->rank, r->job, r->device, strerror(-err),
				err == -ENODEV ? " (its identity, as hbmctl devices shows it)" : "");
		return err;
	}
	if (d->cluster && !cluster_name(&job, name)) {
		/* its ranks elsewhere would never hear of its incidents */
		if (client_may_log(c))
			fprintf(stderr, "<4>hbmguardd: rank %u of job %s refused: with [Cluster], a job's name is one etcd takes (cluster_proto.h: at most %zu characters of [A-Za-z0-9._-] for uid %u%s)\n",
				r->rank, r->job, HBM_CLUSTER_NAME_LEN - 2 -
				(size_t)snprintf(NULL, 0, "%u", (unsigned int)c->cred.uid) -
				(key ? CLUSTER_DIGEST_ROOM : 0), (unsigned int)c->cred.uid,
				key ? " with a key" : "");
		return -EINVAL;
	}
	c->reg = *r;
	c->job = job;
	c->is_rank = true;
	c->answer = 0;
	c->next_rank = d->ranks;
	d->ranks = c;
	if (client_may_log(c))
		fprintf(stderr, "<6>hbmguardd: rank %u/%u of job %s%s registered, pid %d on %s\n",
			r->rank, r->world_size, r->job, key ? " (with a key)" : "", c->cred.pid,
			r->device);
	publish_job(d, &c->job);
	daemon_notify_status(d);
	return 0;
}

/**
 * recovery_answer() - a rank answers the step of its job's incident
 * @d: the daemon
 * @c: the rank's connection
 * @a: the answer
 *
 * Return: 0; -ENOTCONN if @c is not a rank, -ESRCH if its job has no open
 * incident of that id, -EPROTO if the answer does not fit the step.
 */
int recovery_answer(struct daemon *d, struct client *c, const struct hbm_ctl_answer *a)
{
	struct incident *x;

	if (!c->is_rank)
		return -ENOTCONN;
	x = open_incident_of(d, &c->job);
	if (!x || x->info.id != a->incident)
		return -ESRCH;
	if (a->answer == HBM_ANSWER_FAILED) {
		escalate_for_ranks(d, x, "a rank failed to recover");
		return 0;
	}
	if ((x->info.state == HBM_INCIDENT_PAUSING) != (a->answer == HBM_ANSWER_PAUSED))
		return -EPROTO;
	c->answer = a->answer;
	advance(d, x);
	return 0;
}

/**
 * recovery_client_gone() - a connection closes
 * @d: the daemon
 * @c: the connection, a rank or not
 *
 * A rank leaving mid-incident escalates it: its job cannot finish the step.
 */
void recovery_client_gone(struct daemon *d, struct client *c)
{
	struct client **p;
	struct incident *x;

	if (!c->is_rank)
		return;
	for (p = &d->ranks; *p; p = &(*p)->next_rank)
		if (*p == c) {
			*p = c->next_rank;
			break;
		}
	if (client_may_log(c))
		fprintf(stderr, "<5>hbmguardd: rank %u of job %s left (pid %d)\n",
			c->reg.rank, c->reg.job, c->cred.pid);
	x = open_incident_of(d, &c->job);
	if (x)
		escalate_for_ranks(d, x, "a rank left during recovery");
	publish_job(d, &c->job);
	daemon_notify_status(d);
}

/* For hbmctl ranks: the index-th registered rank. */
int recovery_rank_get(struct daemon *d, uint32_t index, struct hbm_ctl_rank_info *out)
{
	struct client *c;
	uint32_t n = 0, i = 0;

	for (c = d->ranks; c; c = c->next_rank)
		n++;
	for (c = d->ranks; c && i < index; c = c->next_rank)
		i++;
	if (!c)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->index = index;
	out->total = n;
	out->pid = c->cred.pid;
	out->uid = c->cred.uid;
	out->state = c->answer == HBM_ANSWER_PAUSED ? HBM_RANK_PAUSED :
		     c->answer == HBM_ANSWER_RESTORED ? HBM_RANK_RESTORED : HBM_RANK_RUNNING;
	out->rank = c->reg;
	return 0;
}

/* For hbmctl incidents: the index-th kept incident, oldest first. */
int recovery_incident_get(struct daemon *d, uint32_t index, struct hbm_ctl_incident *out)
{
	if (index >= d->nr_incidents)
		return -ENOENT;
	*out = d->incidents[index].info;
	out->index = index;
	out->total = d->nr_incidents;
	return 0;
}

size_t recovery_open_incidents(struct daemon *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->nr_incidents; i++)
		n += open_state(d->incidents[i].info.state);
	return n;
}

/*
 * The incidents file damaged: kept aside for a look (a second name: the
 * file stays under its own until replaced), the history afresh.  Return:
 * whether it was, so that what was recovered replaces it.
 */
static bool set_aside(struct daemon *d, const char *why, size_t bad, size_t missing)
{
	char moved[300];
	int aside;

	fprintf(stderr, "<3>hbmguardd: the incidents file is damaged (%s; %zu bad, %zu missing records): keeping it aside\n",
		why, bad, missing);
	aside = hbm_file_quarantine(d->state_dir, INCIDENTS_FILE, moved, sizeof(moved));
	if (aside < 0) {
		fprintf(stderr, "<3>hbmguardd: the incidents file cannot be kept aside: %s: left as it is\n",
			strerror(-aside));
		return false;
	}
	if (aside == HBM_QUARANTINE_MOVED)
		fprintf(stderr, "<3>hbmguardd: moved to %s (no second name could be made)\n", moved);
	else
		fprintf(stderr, "<3>hbmguardd: kept as %s\n", moved);
	return true;
}

/*
 * The file's @n incidents @in before those opened since the start (none
 * at the start: they are older), as memory allows, and the oldest done
 * with gone where there are more than HBM_INCIDENTS_KEPT.  Return: how
 * many were put.
 */
static size_t put_before(struct daemon *d, struct hbm_ctl_incident *in, size_t n)
{
	size_t ours = d->nr_incidents, i;

	for (i = 0; i < n && append_incident(d); i++)
		;
	n = i;
	if (!n)
		return 0;
	memmove(&d->incidents[n], &d->incidents[0], ours * sizeof(*d->incidents));
	/*
	 * Ids in order, as the file must hold them: ours stand (ranks answer
	 * by them), the file's go below where they reach ours (a daemon that
	 * took its ids from a clock since set back).
	 */
	if (ours && in[n - 1].id >= d->incidents[n].info.id && d->incidents[n].info.id > n) {
		fprintf(stderr, "<4>hbmguardd: the incidents file's ids reach those taken since "
			"the start (the clock was set back): its %zu, %" PRIu64 " to %" PRIu64
			", renumbered %" PRIu64 " to %" PRIu64 "\n", n, in[0].id, in[n - 1].id,
			d->incidents[n].info.id - n, d->incidents[n].info.id - 1);
		for (i = 0; i < n; i++)
			in[i].id = d->incidents[n].info.id - n + i;
	}
	for (i = 0; i < n; i++) {
		struct incident *x = &d->incidents[i];

		memset(x, 0, sizeof(*x));
		x->d = d;
		x->pidfd = -1;
		x->job.uid = (uid_t)-1;	/* the file keeps no owner: no rank's */
		x->info = in[i];
		x->remote = in[i].device[0] == '@';	/* another node's: nothing to drain here */
		x->inherited = true;
		if (in[i].id > d->last_incident)
			d->last_incident = in[i].id;
	}
	repoint_timers(d, 0);
	while (d->nr_incidents > HBM_INCIDENTS_KEPT) {
		size_t gone = evict_oldest(d);

		if (gone == SIZE_MAX)	/* none could: open, all of them */
			break;
		n -= gone < n;
	}
	return n;
}

/*
 * The incidents file read: at the start, or, where it could not be then,
 * at a retry of the saves.  Only records that check out are taken
 * (incidents.h), the newest HBM_INCIDENTS_KEPT; a damaged file, or one
 * that cannot be one of ours (not a regular file, or too large), is kept
 * aside, replaced by those.  One that could not be read (hbm_read_again())
 * is not saved over, and read again at each retry, once mended (a disk
 * mounted, a link or a mode set right): the incidents opened meanwhile
 * take ids above any it can hold (the clock's microseconds), and go after
 * its own once it is read.  An incident left open by the previous daemon
 * is escalated: its ranks' connections are gone, and no rank of this
 * one's is told.
 */
static void load(struct daemon *d)
{
	struct hbm_ctl_incident *in = calloc(HBM_INCIDENTS_KEPT, sizeof(*in));
	struct hbm_incidents_damage damage = { 0 };
	uint8_t *buf = NULL;
	size_t len, i, n = 0;
	bool aside = false, late = d->incidents_unread;
	int err = in ? hbm_read_file(d->state_dir, INCIDENTS_FILE, &buf, &len) : -ENOMEM;

	if (hbm_read_again(err)) {
		if (err != d->incidents_error)
			fprintf(stderr, "<3>hbmguardd: reading the incidents: %s: not saved over; "
				"read again at each retry\n", hbm_read_strerror(err));
		if (!late && d->last_incident < now_us())
			d->last_incident = now_us();
		d->incidents_unread = true;
		d->incidents_error = err;
		if (late)	/* at the start, main() arms the retry */
			daemon_save_failed(d);
		free(in);
		return;
	}
	d->incidents_unread = false;
	d->incidents_error = 0;
	if (err && err != -ENOENT)
		aside = set_aside(d, hbm_read_strerror(err), 0, 0);
	else if (!err)
		err = hbm_incidents_decode(buf, len, in, HBM_INCIDENTS_KEPT, &n, &damage);
	free(buf);
	if (err == -EBADMSG || (!err && (damage.bad_records || damage.missing_records)))
		aside = set_aside(d, damage.header ? damage.header : "records",
				  damage.bad_records, damage.missing_records);
	n = put_before(d, in, n);
	free(in);
	if (late)
		fprintf(stderr, "<5>hbmguardd: the incidents are read: %zu kept from before the "
			"start\n", n);
	for (i = 0; i < n; i++)
		escalate(d, &d->incidents[i], "hbmguardd restarted during recovery", NOT_THE_NODE);
	if (aside || late) {
		d->incidents_dirty = false;	/* all of it, now */
		save_incidents(d);
	}
}

/**
 * recovery_load() - the kept incidents, at start (see load()); saved from then
 * on at the end of each turn of @d's loop
 * @d: the daemon, its state directory open
 */
void recovery_load(struct daemon *d)
{
	/* first: the escalations of those left open, saved in one write too */
	if (!d->incidents_saver &&
	    sd_event_add_post(d->loop, &d->incidents_saver, on_turn_end, d) < 0)
		fprintf(stderr, "<4>hbmguardd: the incidents are saved at each transition: "
			"no end of the loop's turns to wait for\n");
	load(d);
	recovery_flush(d);
}

/**
 * recovery_stop() - the last transitions saved; no more saves at turns' ends
 * @d: the daemon
 */
void recovery_stop(struct daemon *d)
{
	recovery_flush(d);
	d->incidents_saver = sd_event_source_disable_unref(d->incidents_saver);
}

/**
 * recovery_ranks() - how many ranks are registered
 * @d: the daemon
 *
 * Return: their number.
 */
size_t recovery_ranks(struct daemon *d)
{
	size_t n = 0;

	for (struct client *c = d->ranks; c; c = c->next_rank)
		n++;
	return n;
}

/* Out of service: retired, or failed where no spare was left. */
static bool out_of_service(uint32_t state)
{
	return state == HBMGUARD_STATE_RETIRED || state == HBMGUARD_STATE_FAILED;
}

static bool destroys_data(uint32_t state, uint32_t source)
{
	return out_of_service(state) &&
	       (source == HBMGUARD_SOURCE_UE || source == HBMGUARD_SOURCE_POISON);
}

/* How a loss of data was learnt. */
enum loss {
	LOSS_HEARD,	/* an event: the pages retired or failed for a UE */
	LOSS_UNHEARD,	/* a table read after events were lost */
	LOSS_AGAIN,	/* an event that says the change lost the data */
	LOSS_FAILED,	/* the same, of pages no spare serves (FAILED) */
	LOSS_CLEARED,	/* the same, of pages cleared: out of the table */
};

/*
 * Seen pages of device @id taken out around a cleared one (forget_pages())
 * back into its seen set, as memory allows: still retired, their loss was
 * acted upon, and a table read after lost events must not take them for
 * news.  (A new loss there can come only with a spare's failure, which
 * says so, or after a clear, which drops them from here.)
 */
static void forgotten_back(struct daemon *d, uint32_t id)
{
	size_t i;

	for (i = 0; i < HBM_FORGOTTEN_MAX; i++)
		if (d->forgotten[i].r.length && d->forgotten[i].id == id &&
		    !hbm_range_set_add(&d->seen[id], d->forgotten[i].r.offset,
				       d->forgotten[i].r.length, NULL))
			d->forgotten[i].r.length = 0;
}

/* @r of device @id kept aside to go back into its seen set; said where no slot is free. */
static void forgotten_keep(struct daemon *d, uint32_t id, const char *identity,
			   struct hbm_range r)
{
	size_t i;

	for (i = 0; r.length && i < HBM_FORGOTTEN_MAX; i++)
		if (!d->forgotten[i].r.length) {
			d->forgotten[i].id = id;
			d->forgotten[i].r = r;
			return;
		}
	if (r.length)
		fprintf(stderr, "<3>hbmguardd: %s: 0x%" PRIx64 "+0x%" PRIx64 " forgotten as seen:"
			" a table read after lost events may take it for news\n", identity,
			r.offset, r.length);
}

/*
 * Device @id's forgotten pages in [@offset, @end): cleared (news again when
 * lost), or the device's table new.  The parts outside stay kept.
 */
static void forgotten_drop(struct daemon *d, uint32_t id, const char *identity,
			   uint64_t offset, uint64_t end)
{
	size_t i;

	for (i = 0; i < HBM_FORGOTTEN_MAX; i++) {
		struct hbm_range r = d->forgotten[i].r;
		uint64_t r_end = r.offset + r.length;

		if (!r.length || d->forgotten[i].id != id || r.offset >= end || r_end <= offset)
			continue;
		d->forgotten[i].r.length = 0;
		if (r.offset < offset)
			forgotten_keep(d, id, identity, (struct hbm_range){ r.offset, offset - r.offset });
		if (r_end > end)
			forgotten_keep(d, id, identity, (struct hbm_range){ end, r_end - end });
	}
}

/*
 * Pages of device @id lost their data: each part not seen before opens the
 * recovery of the jobs on it, once, whether an event told of it or a dump
 * after events were lost.  A loss the module says is this change's own
 * (the spare that held them failed, an error hit them FAILED, on their
 * own frames, or a move could not copy them) opens it for them all, seen
 * or not: pages lost before by a UE, their data restored since, lost
 * again; cleared ones stay out of the seen set, their next loss news.
 */
static void lost_pages(struct daemon *d, uint32_t id, const char *identity,
		       uint64_t offset, uint64_t length, enum loss how)
{
	bool own = how == LOSS_AGAIN || how == LOSS_FAILED || how == LOSS_CLEARED;
	struct hbm_ranges fresh = { 0 };
	size_t i;

	if (id >= HBMGUARD_MAX_DEVICES || !identity[0])
		return;
	d->losses++;	/* one, however many ranges of it are news */
	forgotten_back(d, id);
	/* cleared pages are out of the table: not seen, their next loss news */
	if (how == LOSS_CLEARED || hbm_range_set_add(&d->seen[id], offset, length, &fresh) ||
	    own) {
		if (own)
			fprintf(stderr, "<4>hbmguardd: %s: data lost at 0x%" PRIx64 "+0x%" PRIx64
				": %s\n", identity, offset, length,
				how == LOSS_FAILED ? "no spare serves it" :
				how == LOSS_CLEARED ? "cleared, it could not be copied home" :
						      "its memory failed, or it could not be moved");
		lost_data(d, identity, offset, length, how == LOSS_CLEARED);
		hbm_ranges_free(&fresh);
		return;
	}
	for (i = 0; i < fresh.nr; i++) {
		if (how == LOSS_UNHEARD)
			fprintf(stderr, "<4>hbmguardd: %s: data lost at 0x%" PRIx64 "+0x%" PRIx64
				" while events were lost\n", identity,
				fresh.r[i].offset, fresh.r[i].length);
		lost_data(d, identity, fresh.r[i].offset, fresh.r[i].length, false);
	}
	hbm_ranges_free(&fresh);
}

/*
 * Pages of device @id cleared: out of its seen set, so that a new error
 * there is news.  Where that would split a range and no memory is had,
 * the whole range goes out, never a cleared page left seen, and the pages
 * around it are kept aside to go back (forgotten_back()), so that no table
 * read takes their loss for news a second time.
 */
static void forget_pages(struct daemon *d, uint32_t id, const char *identity,
			 uint64_t offset, uint64_t length)
{
	struct hbm_range around[2];
	int err;

	forgotten_drop(d, id, identity, offset, offset + length);
	err = hbm_range_set_remove(&d->seen[id], offset, length);
	if (err == -ENOMEM) {
		fprintf(stderr, "<4>hbmguardd: %s: no memory to forget 0x%" PRIx64 "+0x%" PRIx64
			" as seen: the pages around it kept aside\n", identity, offset, length);
		hbm_range_set_remove_around(&d->seen[id], offset, length, around);
		forgotten_keep(d, id, identity, around[0]);
		forgotten_keep(d, id, identity, around[1]);
	}
}

/**
 * recovery_fact() - recovery as a sink of the core
 * @arg: the daemon
 * @f: the fact
 *
 * Data lost under a rank starts its job's recovery: heard in an event, or
 * read from a table unheard (at start, or restored from the state file
 * just before, only taken as seen: old news), or counted by the module in
 * events that were lost (the whole device: where is unknown).
 */
void recovery_fact(void *arg, const struct hbm_fact *f)
{
	struct daemon *d = arg;
	uint32_t id = f->dev.id;

	if (id >= HBMGUARD_MAX_DEVICES)
		return;
	switch (f->type) {
	case HBM_FACT_DEVICE_SEEN:
		if (f->sync == HBM_SYNC_ADDED) {	/* a new table: an error there is news */
			hbm_range_set_free(&d->seen[id]);
			forgotten_drop(d, id, f->dev.identity, 0, UINT64_MAX);
		}
		break;
	case HBM_FACT_DEVICE_GONE:
		hbm_range_set_free(&d->seen[id]);
		forgotten_drop(d, id, f->dev.identity, 0, UINT64_MAX);
		break;
	case HBM_FACT_PAGES:
		if (f->flags & HBM_FACT_UNHEARD) {
			if (!destroys_data(f->state, f->source))
				break;
			/*
			 * Restored out of service: its data was lost before,
			 * whichever of the two the module has it in now (a
			 * page stored FAILED is sent as RETIRED, and one
			 * RETIRED comes back FAILED where fewer spares are).
			 */
			if (f->sync == HBM_SYNC_START ||
			    ((f->flags & HBM_FACT_KNOWN) && out_of_service(f->restored)))
				hbm_range_set_add(&d->seen[id], f->offset, f->length, NULL);
			else
				lost_pages(d, id, f->dev.identity, f->offset, f->length,
					   LOSS_UNHEARD);
		} else if (f->event == HBMGUARD_EVENT_CLEARED) {
			/* a new error there is news */
			forget_pages(d, id, f->dev.identity, f->offset, f->length);
			/* their data could not come home: in service, lost */
			if (f->flags & HBM_FACT_DATA_LOST)
				lost_pages(d, id, f->dev.identity, f->offset, f->length,
					   LOSS_CLEARED);
		} else if (f->flags & HBM_FACT_DATA_LOST) {
			lost_pages(d, id, f->dev.identity, f->offset, f->length,
				   f->event == HBMGUARD_EVENT_FAILED ? LOSS_FAILED : LOSS_AGAIN);
		} else if (destroys_data(hbm_event_page_state(f->event), f->source)) {
			/* Data lost under a rank: its job's recovery starts. */
			d->report = HBM_REPORT(f->origin, HBM_REPORT_PAGE);
			lost_pages(d, id, f->dev.identity, f->offset, f->length, LOSS_HEARD);
			d->report = 0;
		}
		break;
	case HBM_FACT_LOST_UNHEARD:
		/* where, nobody can tell: every rank on the device */
		fprintf(stderr, "<4>hbmguardd: %s: data lost unheard, where unknown (%u lost"
			" events said so): the whole device\n", f->dev.identity, f->count);
		recovery_on_lost_data(d, f->dev.identity, 0, HBM_CTL_WHOLE_DEVICE);
		break;
	case HBM_FACT_ERROR:
		/* A device's UE without an address: every rank on it. */
		if (f->severity == HBM_SEVERITY_UE && !f->length &&
		    !(f->flags & HBM_FACT_UNHEARD) && f->dev.identity[0]) {
			d->report = HBM_REPORT(f->origin, f->xid);
			recovery_on_lost_data(d, f->dev.identity, 0, HBM_CTL_WHOLE_DEVICE);
			d->report = 0;
		}
		break;
	}
}

/*
 * The local job a cluster's name stands for: that of a rank here, or of an
 * incident kept here, whose name it is (cluster_name()); false if none.  A
 * keyed job's name cannot be read back into the job: its key is not in it.
 */
static bool local_job(struct daemon *d, const char *name, struct job_id *out)
{
	char mine[HBM_CLUSTER_NAME_LEN];
	struct client *c;
	size_t i;

	for (c = d->ranks; c; c = c->next_rank)
		if (cluster_name(&c->job, mine) && !strcmp(mine, name)) {
			*out = c->job;
			return true;
		}
	for (i = d->nr_incidents; i-- > 0;) {
		const struct incident *x = &d->incidents[i];

		if (x->job.uid != (uid_t)-1 && cluster_name(&x->job, mine) && !strcmp(mine, name)) {
			*out = x->job;
			return true;
		}
	}
	return false;
}

/*
 * Whether this node's incident of a job's incident across nodes @id ended
 * already: the newest of the job's, of that id, escalated here.
 */
static bool part_ended(struct daemon *d, const struct job_id *job, const char *id)
{
	size_t i;

	for (i = d->nr_incidents; i-- > 0;) {
		const struct incident *x = &d->incidents[i];

		if (!same_job(&x->job, job))
			continue;
		return x->clustered && !open_state(x->info.state) && !strcmp(x->cluster_id, id);
	}
	return false;
}

/* An incident opened on another node, for this node's ranks of the job. */
static struct incident *remote_incident(struct daemon *d, const struct job_id *job,
					const struct cl_action *a)
{
	struct incident *x;
	struct client *c;

	for_each_rank_of(d, c, job)
		break;
	if (!c || !a->opener[0])
		return NULL;
	x = new_incident(d);
	if (!x) {
		fprintf(stderr, "<2>hbmguardd: no memory for an incident of job %s\n", job->name);
		return NULL;
	}
	strcpy(x->info.job, job->name);
	snprintf(x->info.device, sizeof(x->info.device), "@%.62s", a->opener);
	x->info.length = HBM_CTL_WHOLE_DEVICE;	/* what was lost is the opener's to know */
	x->info.failed_rank = a->rank;
	x->job = *job;
	x->clustered = x->remote = true;
	x->cl_asked = x->cl_done = -1;
	mark(x, HBM_INCIDENT_DETECTED, NULL);
	arm(d, x, cluster_budget(d));
	return x;
}

/*
 * A step of the job's incident, as etcd has it: the ranks here are asked
 * it; its end told back (cluster_advance(), or at once for what needs no
 * rank's answer).
 */
static void cluster_step(void *arg, const struct cl_action *a)
{
	struct incident *x = NULL;
	struct daemon *d = arg;
	struct job_id job;
	uint32_t from;
	bool here = local_job(d, a->job, &job);

	if (here)
		x = open_incident_of(d, &job);
	if (x && !x->clustered) {
		/* a job all here by its ranks' count, in an incident of other nodes' */
		escalate_here(d, x, "another node's incident during this node's", NOT_THE_NODE);
		cluster_fail(d->cluster, a->job, "an incident of this node's alone was under way");
		return;
	}
	if (!x && a->step == CL_ABORT) {	/* nothing open here to abort */
		cluster_done(d->cluster, a->job, a->id, a->step, true, NULL);
		return;
	}
	if (!x && here && part_ended(d, &job, a->id)) {
		/* this node's part ended already (escalated here): no step again */
		cluster_done(d->cluster, a->job, a->id, a->step, false,
			     "its part of the incident ended here");
		return;
	}
	/* a pause only: ranks never paused here cannot take a later step */
	if (!x && a->step == CL_PAUSE && here)
		x = remote_incident(d, &job, a);
	if (!x) {	/* no rank of the job here any more, or no memory: it cannot do it */
		cluster_done(d->cluster, a->job, a->id, a->step, false, "no rank of the job here");
		return;
	}
	/*
	 * A step only after the one done here: an opener moves on once every
	 * node has acknowledged the last, so a step further on was written by
	 * another hand (any writer of the incident's keys, or of a forged
	 * acknowledgement: etcd's prefix permissions cannot keep one node off
	 * another's), and taken here it would resume ranks never restored.
	 */
	if (a->step != CL_ABORT && (int)a->step > x->cl_done + 1) {
		static const char skipped[] = "a step asked before this node did the one before it";

		escalate_here(d, x, skipped, NOT_THE_NODE);
		cluster_fail(d->cluster, a->job, skipped);
		return;
	}
	snprintf(x->cluster_id, sizeof(x->cluster_id), "%s", a->id);
	x->cl_asked = a->step;
	from = x->info.state;
	switch (a->step) {
	case CL_PAUSE:
		if (x->info.state == HBM_INCIDENT_DETECTED) {
			mark(x, HBM_INCIDENT_PAUSING, NULL);
			tell(d, x, HBM_RECOVERY_PAUSE);
			record(d, x, from);
		}
		break;
	case CL_ISOLATE:
		if (!may_restore(d, x))
			return;
		mark(x, HBM_INCIDENT_ISOLATED, NULL);
		record(d, x, HBM_INCIDENT_ISOLATED);
		x->cl_done = CL_ISOLATE;
		cluster_done(d->cluster, a->job, a->id, CL_ISOLATE, true, NULL);
		return;
	case CL_RESTORE:
		mark(x, HBM_INCIDENT_RESTORING, NULL);
		tell(d, x, HBM_RECOVERY_RESTORE);
		record(d, x, HBM_INCIDENT_RESTORING);
		break;
	case CL_RESUME:
		mark(x, HBM_INCIDENT_RESUMED, NULL);
		tell(d, x, HBM_RECOVERY_RESUME);
		arm(d, x, 0);
		record(d, x, HBM_INCIDENT_RESUMED);
		x->cl_done = CL_RESUME;
		cluster_done(d->cluster, a->job, a->id, CL_RESUME, true, NULL);
		return;
	case CL_ABORT:
	default:
		escalate_here_for_ranks(d, x, a->text[0] ? a->text :
					"aborted by the job's other nodes");
		cluster_done(d->cluster, a->job, a->id, CL_ABORT, true, NULL);
		return;
	}
	cluster_advance(d, x);
}

/* The job's incident ended on every node: what is still open of it here aborts. */
static void cluster_closed(void *arg, const char *name, const char *id, bool resumed)
{
	struct daemon *d = arg;
	struct incident *x;
	struct job_id job;

	if (!local_job(d, name, &job))
		return;
	/* one of its, or one not yet named (an error here while it was aborting) */
	x = open_incident_of(d, &job);
	if (x && x->clustered && (!strcmp(x->cluster_id, id) || !x->cluster_id[0]) && !resumed)
		escalate_here_for_ranks(d, x, "the job's incident was aborted");
}

/**
 * recovery_cluster_incident() - this node's incident of one across nodes
 * @d: the daemon
 * @name: the job's name in etcd (cluster_name())
 * @id: the incident's id there
 *
 * Return: its id here, the newest, or 0 if none is kept.
 */
uint64_t recovery_cluster_incident(struct daemon *d, const char *name, const char *id)
{
	char mine[HBM_CLUSTER_NAME_LEN];
	size_t i;

	for (i = d->nr_incidents; i-- > 0;) {
		const struct incident *x = &d->incidents[i];

		if (x->clustered && !strcmp(x->cluster_id, id) &&
		    cluster_name(&x->job, mine) && !strcmp(mine, name))
			return x->info.id;
	}
	return 0;
}

static void cluster_link(void *arg)
{
	daemon_notify_status(arg);
}

const struct cluster_local_ops recovery_cluster_ops = {
	.step = cluster_step,
	.closed = cluster_closed,
	.link = cluster_link,
};
