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
 * another's job, however its name was learnt.
 *
 * Only errors that destroyed data open incidents (UE, poison); a page
 * retired for correctable errors was copied before the switch (see the
 * aperture), which costs the ranks nothing.  One incident per job at a time:
 * a second error in a job under recovery escalates it, since its ranks are
 * no longer a consistent set to restore from.
 *
 * Incidents are kept, newest last, in the state directory ("incidents", as
 * struct hbm_ctl_incident records after a small header, each with its
 * CRC-32C), rewritten atomically at every transition, just after the ranks
 * were told of it: the ranks do not wait for the fsync.  After a restart the
 * ranks' connections are gone, so an incident found open is escalated.
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

#include "hbmguardd.h"
#include "state.h"

#define INCIDENTS_FILE		"incidents"
#define INCIDENTS_MAGIC		"HBMGINCI"
#define ID_INCIDENT		"7b4d2f0c9a8e4d61b3f5a2c1e0d9f8a7"

struct incident_record {
	struct hbm_ctl_incident in;
	uint32_t crc;
	uint32_t reserved;
};

static const char *const state_names[] = {
	[HBM_INCIDENT_DETECTED] = "detected", [HBM_INCIDENT_PAUSING] = "pausing",
	[HBM_INCIDENT_ISOLATED] = "isolated", [HBM_INCIDENT_RESTORING] = "restoring",
	[HBM_INCIDENT_RESUMED] = "resumed", [HBM_INCIDENT_ESCALATED] = "escalated",
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool open_state(uint32_t state)
{
	return state < HBM_INCIDENT_RESUMED;
}

static void save_incidents(struct daemon *d)
{
	size_t len = 16 + d->nr_incidents * sizeof(struct incident_record), i;
	uint8_t *buf = calloc(1, len);
	int err;

	if (!buf)
		return;
	memcpy(buf, INCIDENTS_MAGIC, 8);
	memcpy(buf + 8, &(uint32_t){ 1 }, 4);
	memcpy(buf + 12, &(uint32_t){ d->nr_incidents }, 4);
	for (i = 0; i < d->nr_incidents; i++) {
		struct incident_record r = { .in = d->incidents[i].info };

		r.crc = hbm_crc32c(0, &r.in, sizeof(r.in));
		memcpy(buf + 16 + i * sizeof(r), &r, sizeof(r));
	}
	err = hbm_atomic_write(d->state_dir, INCIDENTS_FILE, buf, len);
	if (err)
		fprintf(stderr, "<3>hbmguardd: saving the incidents: %s\n", strerror(-err));
	free(buf);
}

static void journal_transition(struct daemon *d, const struct incident *x,
			       uint32_t state)
{
	const struct hbm_ctl_incident *in = &x->info;
	bool last = state == in->state;
	char msg[256];
	int prio = state == HBM_INCIDENT_ESCALATED ? 2 :
		   state == HBM_INCIDENT_DETECTED ? 3 : 5;

	snprintf(msg, sizeof(msg), "incident %" PRIu64 ": job %s, rank %u on %s at 0x%"
		 PRIx64 ": %s%s%s", in->id, in->job, in->failed_rank, in->device,
		 in->offset, state_names[state], last && in->reason[0] ? ": " : "",
		 last ? in->reason : "");
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

/* A step begins: timed now, told to the ranks by the caller. */
static void mark(struct incident *x, uint32_t state, const char *reason)
{
	x->info.state = state;
	x->info.at[state] = now_us();
	if (reason)
		snprintf(x->info.reason, sizeof(x->info.reason), "%s", reason);
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
	save_incidents(d);
	daemon_notify_status(d);
}

/* Every registered rank of a job (its owner, its name), in turn. */
#define for_each_rank_of(dmn, c, of_uid, of_job) \
	for (c = (dmn)->ranks; c; c = c->next_rank) \
		if (c->cred.uid == (of_uid) && !strcmp(c->reg.job, of_job))

static void tell(struct daemon *d, struct incident *x, uint32_t action)
{
	struct hbm_ctl_recovery rc = {
		.incident = x->info.id, .action = action,
		.failed_rank = x->info.failed_rank,
		.offset = x->info.offset, .length = x->info.length,
	};
	struct client *c;

	strcpy(rc.device, x->info.device);
	for_each_rank_of(d, c, x->uid, x->info.job) {
		c->answer = 0;
		control_send(c, HBM_CTL_RECOVERY, &rc);
	}
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *arg);

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
	if (!control_owned_by(x->pidfd, x->pid, x->uid)) {
		fprintf(stderr, "<4>hbmguardd: incident %" PRIu64 ": rank %u (pid %d) is gone "
			"or no longer uid %u's: not signalled\n", x->info.id,
			x->info.failed_rank, x->pid, (unsigned int)x->uid);
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

static void escalate(struct daemon *d, struct incident *x, const char *reason)
{
	if (!open_state(x->info.state))
		return;
	mark(x, HBM_INCIDENT_ESCALATED, reason);
	tell(d, x, HBM_RECOVERY_ABORT);
	kill_failed_rank(x, SIGTERM);
	arm(d, x, x->pidfd >= 0 ? d->cfg.recovery.kill_timeout : 0);
	record(d, x, HBM_INCIDENT_ESCALATED);
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
	escalate(d, x, x->info.state == HBM_INCIDENT_PAUSING ?
		 "ranks did not pause in time" : "ranks did not restore in time");
	return 0;
}

/* Whether every rank of the job gave this answer to the current step. */
static bool all_answered(struct daemon *d, const struct incident *x, uint32_t answer)
{
	struct client *c;

	for_each_rank_of(d, c, x->uid, x->info.job)
		if (c->answer != answer)
			return false;
	return true;
}

static void advance(struct daemon *d, struct incident *x)
{
	if (x->info.state == HBM_INCIDENT_PAUSING && all_answered(d, x, HBM_ANSWER_PAUSED)) {
		if (!daemon_is_bypassed(d, x->info.device, x->info.offset, x->info.length)) {
			escalate(d, x, "the page has no spare: not bypassed");
			return;
		}
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

static struct incident *open_incident_of(struct daemon *d, uid_t uid, const char *job)
{
	size_t i;

	for (i = 0; i < d->nr_incidents; i++)
		if (open_state(d->incidents[i].info.state) && d->incidents[i].uid == uid &&
		    !strcmp(d->incidents[i].info.job, job))
			return &d->incidents[i];
	return NULL;
}

static struct incident *new_incident(struct daemon *d)
{
	struct incident *x;

	if (d->nr_incidents == HBM_INCIDENTS_KEPT) {	/* the oldest closed one goes */
		size_t i;

		for (i = 0; i < d->nr_incidents && open_state(d->incidents[i].info.state); i++)
			;
		if (i == d->nr_incidents)
			return NULL;
		arm(d, &d->incidents[i], 0);
		if (d->incidents[i].pidfd >= 0)
			close(d->incidents[i].pidfd);
		memmove(&d->incidents[i], &d->incidents[i + 1],
			(d->nr_incidents - i - 1) * sizeof(*x));
		d->nr_incidents--;
		for (; i < d->nr_incidents; i++)	/* timers point at them */
			if (d->incidents[i].timer)
				sd_event_source_set_userdata(d->incidents[i].timer,
							     &d->incidents[i]);
	}
	x = &d->incidents[d->nr_incidents++];
	memset(x, 0, sizeof(*x));
	x->d = d;
	x->pidfd = -1;
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

/**
 * recovery_on_lost_data() - pages of a device lost their data
 * @d: the daemon
 * @identity: the device
 * @offset: the pages
 * @length: their length
 *
 * Opens an incident for each job with a rank on those pages.
 */
void recovery_on_lost_data(struct daemon *d, const char *identity,
			   uint64_t offset, uint64_t length)
{
	uint64_t first_new = d->last_incident + 1;
	struct client *c;

	for (c = d->ranks; c; c = c->next_rank) {
		struct incident *x;

		if (strcmp(c->reg.device, identity) || !overlaps(&c->reg, offset, length))
			continue;
		x = open_incident_of(d, c->cred.uid, c->reg.job);
		if (x && x->info.id >= first_new)
			continue;	/* another rank of the job, the same error */
		if (x) {
			escalate(d, x, "a second error during recovery");
			continue;
		}
		x = new_incident(d);
		if (!x) {
			fprintf(stderr, "<2>hbmguardd: %d incidents open: cannot open another\n",
				HBM_INCIDENTS_KEPT);
			return;
		}
		strcpy(x->info.job, c->reg.job);
		strcpy(x->info.device, identity);
		x->info.offset = offset;
		x->info.length = length;
		x->info.failed_rank = c->reg.rank;
		x->pid = c->cred.pid;
		x->uid = c->cred.uid;
		x->pidfd = c->pidfd >= 0 ? fcntl(c->pidfd, F_DUPFD_CLOEXEC, 3) : -1;
		mark(x, HBM_INCIDENT_DETECTED, NULL);
		mark(x, HBM_INCIDENT_PAUSING, NULL);
		tell(d, x, HBM_RECOVERY_PAUSE);
		arm(d, x, d->cfg.recovery.pause_timeout);
		record(d, x, HBM_INCIDENT_DETECTED);
	}
}

/**
 * recovery_register() - a process registers as a rank
 * @d: the daemon
 * @c: its connection
 * @r: what it says it is (checked by hbm_ctl_decode())
 *
 * The job is the one of that name owned by the connection's uid.
 *
 * Return: 0; -EALREADY if this connection registered before, -EEXIST if a
 * live process holds that rank of that job, -EBUSY if the job is under
 * recovery.
 */
int recovery_register(struct daemon *d, struct client *c, const struct hbm_ctl_rank *r)
{
	struct client *o;

	if (c->is_rank)
		return -EALREADY;
	for_each_rank_of(d, o, c->cred.uid, r->job)
		if (o->reg.rank == r->rank)
			return -EEXIST;
	if (open_incident_of(d, c->cred.uid, r->job))
		return -EBUSY;
	c->reg = *r;
	c->is_rank = true;
	c->answer = 0;
	c->next_rank = d->ranks;
	d->ranks = c;
	fprintf(stderr, "<6>hbmguardd: rank %u/%u of job %s registered, pid %d on %s\n",
		r->rank, r->world_size, r->job, c->cred.pid, r->device);
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
	x = open_incident_of(d, c->cred.uid, c->reg.job);
	if (!x || x->info.id != a->incident)
		return -ESRCH;
	if (a->answer == HBM_ANSWER_FAILED) {
		escalate(d, x, "a rank failed to recover");
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
	fprintf(stderr, "<5>hbmguardd: rank %u of job %s left (pid %d)\n",
		c->reg.rank, c->reg.job, c->cred.pid);
	x = open_incident_of(d, c->cred.uid, c->reg.job);
	if (x)
		escalate(d, x, "a rank left during recovery");
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

/**
 * recovery_load() - the kept incidents, at start
 * @d: the daemon, its state directory open
 *
 * Records that fail their CRC are dropped with a warning; an incident left
 * open by the previous daemon is escalated: its ranks' connections are gone.
 */
void recovery_load(struct daemon *d)
{
	struct incident_record r;
	uint8_t *buf;
	size_t len, i, n;
	int err = hbm_read_file(d->state_dir, INCIDENTS_FILE, &buf, &len);

	if (err) {
		if (err != -ENOENT)
			fprintf(stderr, "<3>hbmguardd: reading the incidents: %s\n", strerror(-err));
		return;
	}
	if (len < 16 || memcmp(buf, INCIDENTS_MAGIC, 8)) {
		fprintf(stderr, "<3>hbmguardd: the incidents file is damaged: starting afresh\n");
		free(buf);
		return;
	}
	n = (len - 16) / sizeof(r);
	for (i = 0; i < n && d->nr_incidents < HBM_INCIDENTS_KEPT; i++) {
		struct incident *x;

		memcpy(&r, buf + 16 + i * sizeof(r), sizeof(r));
		if (r.crc != hbm_crc32c(0, &r.in, sizeof(r.in)) || !r.in.state ||
		    r.in.state >= __HBM_INCIDENT_MAX) {
			fprintf(stderr, "<4>hbmguardd: incident record %zu damaged: dropped\n", i);
			continue;
		}
		x = &d->incidents[d->nr_incidents++];
		memset(x, 0, sizeof(*x));
		x->d = d;
		x->pidfd = -1;
		x->info = r.in;
		if (r.in.id > d->last_incident)
			d->last_incident = r.in.id;
	}
	free(buf);
	for (i = 0; i < d->nr_incidents; i++)
		escalate(d, &d->incidents[i], "hbmguardd restarted during recovery");
}
