// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the incident table of hbmguardd (daemon/recovery.c): its
 * limits, its eviction, one incident per job and error, and a damaged
 * incidents file at start.  The daemon's other files are stubbed.
 */
#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hbmguardd.h"
#include "incidents.h"
#include "state.h"
#include "unit.h"

/* What the ranks were told, and what the cluster link was asked (cluster.h). */
static char told[8192], asked[8192];
static char open_id[64];	/* the incident across nodes the test's steps are of */

static void __attribute__((format(printf, 2, 3))) note(char *log, const char *fmt, ...)
{
	size_t n = strlen(log);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(log + n, sizeof(told) - n, fmt, ap);
	va_end(ap);
}

void control_send(struct client *c, uint16_t type, const void *body)
{
	const struct hbm_ctl_recovery *rc = body;

	if (type == HBM_CTL_RECOVERY)
		note(told, "rank %u: %u of incident %llu, rank %u lost\n", c->reg.rank, rc->action,
		     (unsigned long long)rc->incident, rc->failed_rank);
}

int cluster_join(struct cluster *cl, const char *job, const char *value)
{
	(void)cl;
	note(asked, "join %s %s\n", job, value);
	return 0;
}

int cluster_leave(struct cluster *cl, const char *job)
{
	(void)cl;
	note(asked, "leave %s\n", job);
	return 0;
}

int cluster_error(struct cluster *cl, const char *job, uint32_t failed_rank, const char *reason,
		  char id[HBM_CLUSTER_NAME_LEN])
{
	(void)cl;
	note(asked, "error %s %u %s\n", job, failed_rank, reason);
	/* as cl_error(): the open incident's id, or the one it will open under */
	strcpy(id, open_id[0] ? open_id : "opened-here");
	return 0;
}

int cluster_fail(struct cluster *cl, const char *job, const char *reason)
{
	(void)cl;
	note(asked, "fail %s %s\n", job, reason);
	return 0;
}

int cluster_done(struct cluster *cl, const char *job, const char *id, enum cl_step step,
		 bool ok, const char *reason)
{
	(void)cl;
	(void)reason;
	note(asked, "done %s %s %s %s\n", job, id, cl_step_name(step), ok ? "ok" : "failed");
	return 0;
}

static bool bypassed = true;	/* what the kernel's table says */
static int table_error;		/* or why it cannot be read */

/* The module's devices: every one but "nodev". */
int daemon_device_known(struct daemon *d, const char *identity)
{
	(void)d;
	return strcmp(identity, "nodev") ? 0 : -ENODEV;
}

int daemon_bypassed(struct daemon *d, const char *identity, uint64_t offset, uint64_t length)
{
	(void)d;
	(void)identity;
	(void)offset;
	(void)length;
	return table_error ? table_error : bypassed;
}

/* The ranks here are this test's own children: still theirs to signal. */
bool control_owned_by(int pidfd, pid_t pid, uid_t uid)
{
	(void)pid;
	(void)uid;
	return pidfd >= 0;
}

void daemon_notify_status(struct daemon *d)
{
	(void)d;
}

bool client_may_log(const struct client *c)
{
	(void)c;
	return true;
}

void daemon_save_failed(struct daemon *d)
{
	(void)d;
}

static unsigned int drained;	/* incidents that took the node out of service */
static char drained_for[64];	/* the last one's device */

void daemon_incident_aborted(struct daemon *d, const struct hbm_ctl_incident *x)
{
	(void)d;
	snprintf(drained_for, sizeof(drained_for), "%s", x->device);
	drained++;
}

static struct daemon *d;
static char dir[64];
static uint32_t world;		/* of the jobs rank() registers */

static void setup(void)
{
	d = calloc(1, sizeof(*d));
	strcpy(dir, "/tmp/hbm-recovery-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	d->state_dir = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(d->state_dir, 0);
	ck_assert_int_ge(sd_event_new(&d->loop), 0);
	d->cfg.recovery.pause_timeout = 60;
	d->cfg.recovery.restore_timeout = 60;
	d->cfg.recovery.kill_timeout = 60;
	told[0] = asked[0] = open_id[0] = 0;
	drained = 0;
	world = 2;
	bypassed = true;
	table_error = 0;
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));	/* the journal lines */
}

/* The state directory goes; the rest dies with the test's process. */
static void cleanup(void)
{
	DIR *dp = opendir(dir);
	struct dirent *e;

	while (dp && (e = readdir(dp)))
		if (e->d_name[0] != '.' || e->d_name[1] == 'i')
			unlinkat(d->state_dir, e->d_name, 0);
	if (dp)
		closedir(dp);
	rmdir(dir);
}

/*
 * A rank of job @job with @key (NULL: none) on device "dev", its pages
 * [@offset, +4K), or with @offset ANY_PAGE no ranges (the whole device), of
 * @pid; NULL and the daemon's refusal in @err.
 */
#define ANY_PAGE	UINT64_MAX	/* try_rank()'s @offset: the whole device */

static struct client *try_rank(const char *job, const char *key, uint32_t r, uint64_t offset,
			       pid_t pid, int *err)
{
	struct client *c = calloc(1, sizeof(*c));
	struct hbm_ctl_rank reg = { .rank = r, .world_size = world, .nr_ranges = offset != ANY_PAGE,
				    .ranges = { { offset, 0x1000 } } };

	c->d = d;
	c->fd = -1;
	c->cred.pid = pid;
	c->cred.uid = getuid();
	c->pidfd = pid ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	snprintf(reg.job, sizeof(reg.job), "%s", job);
	strcpy(reg.device, "dev");
	*err = recovery_register(d, c, &reg, key);
	if (*err) {
		if (c->pidfd >= 0)
			close(c->pidfd);
		free(c);
		return NULL;
	}
	return c;
}

static struct client *keyed_rank(const char *job, const char *key, uint32_t r, uint64_t offset,
				 pid_t pid)
{
	int err;
	struct client *c = try_rank(job, key, r, offset, pid, &err);

	ck_assert_int_eq(err, 0);
	return c;
}

static struct client *rank(const char *job, uint32_t r, uint64_t offset, pid_t pid)
{
	return keyed_rank(job, NULL, r, offset, pid);
}

/* Ranks 0 and 1 of job "job", on pages 0x1000 and 0x2000 of "dev". */
static void job_of_two(struct client **a, struct client **b)
{
	*a = rank("job", 0, 0x1000, 0);
	*b = rank("job", 1, 0x2000, 0);
}

static void answer_failed(struct client *c, uint64_t incident)
{
	struct hbm_ctl_answer a = { .incident = incident, .answer = HBM_ANSWER_FAILED };

	ck_assert_int_eq(recovery_answer(d, c, &a), 0);
}

static void answer(struct client *c, uint64_t incident, uint32_t a)
{
	struct hbm_ctl_answer x = { .incident = incident, .answer = a };

	ck_assert_int_eq(recovery_answer(d, c, &x), 0);
}

/*
 * A rank on a device the module has not (a name, a CUDA index, a typo) is
 * refused: it would be told of no error there, and nobody would know.
 */
START_TEST(a_rank_on_no_device_is_refused)
{
	struct client c = { .fd = -1, .pidfd = -1 };
	struct hbm_ctl_rank reg = { .rank = 0, .world_size = 1 };

	setup();
	c.d = d;
	c.cred.uid = getuid();
	strcpy(reg.job, "job");
	strcpy(reg.device, "nodev");
	ck_assert_int_eq(recovery_register(d, &c, &reg, NULL), -ENODEV);
	ck_assert(!c.is_rank);
	ck_assert_uint_eq(recovery_ranks(d), 0);
	strcpy(reg.device, "dev");
	ck_assert_int_eq(recovery_register(d, &c, &reg, NULL), 0);
	ck_assert_uint_eq(recovery_ranks(d), 1);
	cleanup();
}
END_TEST

/*
 * A job's ranks are of one world: one of another size is refused, whatever
 * its rank, before anything is published (helper-188: each publication was
 * refused with a journal line, at a peer's pace); another job is not.
 */
static void setup_across_nodes(void);

START_TEST(a_rank_of_another_world_is_refused)
{
	int err;

	setup_across_nodes();
	rank("job", 0, 0x1000, 0);
	asked[0] = 0;
	world = 10;
	ck_assert_ptr_null(try_rank("job", NULL, 5, 0x2000, 0, &err));
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_str_eq(asked, "");
	ck_assert_uint_eq(recovery_ranks(d), 1);
	rank("other", 5, 0x2000, 0);
	world = 4;
	rank("job", 1, 0x3000, 0);
	ck_assert_uint_eq(recovery_ranks(d), 3);
	cleanup();
}
END_TEST

/* More incidents open than the history keeps: each still opens. */
START_TEST(more_open_than_kept)
{
	char job[16];
	size_t i;

	setup();
	for (i = 0; i <= HBM_INCIDENTS_KEPT; i++) {
		snprintf(job, sizeof(job), "j%zu", i);
		rank(job, 0, i * 0x1000, 0);
	}
	/* One error over the first 64 jobs' pages, one over the 65th's. */
	recovery_on_lost_data(d, "dev", 0, HBM_INCIDENTS_KEPT * 0x1000);
	recovery_on_lost_data(d, "dev", HBM_INCIDENTS_KEPT * 0x1000, 0x1000);
	ck_assert_uint_eq(recovery_open_incidents(d), HBM_INCIDENTS_KEPT + 1);
	cleanup();
}
END_TEST

/*
 * The history full: the oldest incident done with leaves it, not an
 * escalated one whose SIGKILL is still to come.
 */
START_TEST(eviction_spares_a_pending_kill)
{
	sigset_t term, old;
	struct client *c;
	char job[16];
	pid_t child;
	size_t i;
	int st;

	setup();
	/*
	 * SIGTERM blocked across fork(): the escalation below may signal the
	 * child before it has left check's handler for the default action.
	 */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	child = fork();
	if (!child) {
		signal(SIGTERM, SIG_DFL);	/* not check's handler */
		sigprocmask(SIG_SETMASK, &old, NULL);
		for (;;)
			pause();
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	c = rank("victim", 0, 0, child);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	answer_failed(c, 1);	/* escalated: SIGTERM now, SIGKILL to come */
	ck_assert_ptr_nonnull(d->incidents[0].timer);
	for (i = 1; i <= HBM_INCIDENTS_KEPT; i++) {
		snprintf(job, sizeof(job), "j%zu", i);
		c = rank(job, 0, i * 0x1000, 0);
		recovery_on_lost_data(d, "dev", i * 0x1000, 0x1000);
		answer_failed(c, i + 1);
	}
	ck_assert_uint_eq(d->nr_incidents, HBM_INCIDENTS_KEPT);
	ck_assert_uint_eq(d->incidents[0].info.id, 1);
	ck_assert_ptr_nonnull(d->incidents[0].timer);
	ck_assert_ptr_eq(sd_event_source_get_userdata(d->incidents[0].timer), &d->incidents[0]);
	ck_assert_uint_eq(d->incidents[1].info.id, 3);	/* 2 went */
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	cleanup();
}
END_TEST

static const char two_ranks_lost[] =
	"data lost under two ranks of the job: an incident restores one";

/*
 * Two ranks of a job on one device, a second error: one escalation, the
 * job's alone, its pages bypassed.
 */
START_TEST(two_ranks_one_device)
{
	setup();
	rank("job", 0, 0, 0);
	rank("job", 1, 0x1000, 0);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(recovery_open_incidents(d), 1);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[0].info.reason, "a second error during recovery");
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/* How many times @what is in @log. */
static unsigned int times(const char *log, const char *what)
{
	unsigned int n = 0;

	for (; (log = strstr(log, what)); log++)
		n++;
	return n;
}

static const char job_key[] = "k3y-of-the-job-0123456789abcdef0";	/* SHA-256 ebbdb4827a10c1ea... */

static bool keyed_job(const struct job_id *j)
{
	static const uint8_t none[HBM_SHA256_LEN];

	return memcmp(j->key, none, sizeof(none));
}

/*
 * A job with a key is its holders' (ctl.h): a rank of the same uid and name
 * with another key, or with none, is of another job.  It takes none of the
 * job's ranks, is told nothing of its incident, cannot answer for it, and
 * leaving escalates nothing of it.  Without keys the same uid, as every
 * uid 0 container is, could do all of that (helper-158, helper-159), and
 * the escalation killed the failed rank's process.
 */
START_TEST(a_key_makes_a_job_of_its_holders)
{
	struct hbm_ctl_answer fail = { .answer = HBM_ANSWER_FAILED };
	struct client *a, *b, *other, *bare, *c;
	struct incident *x;
	int err;

	setup();
	a = keyed_rank("job", job_key, 0, 0x1000, 0);
	/* another key's and no key's rank 1 come first: they squat nothing */
	other = keyed_rank("job", "another-k3y-0123456789abcdef0123", 1, 0x1000, 0);
	bare = rank("job", 1, 0x1000, 0);
	b = keyed_rank("job", job_key, 1, 0x2000, 0);
	c = try_rank("job", job_key, 1, 0x3000, 0, &err);	/* the key's rank 1 is b's */
	ck_assert_ptr_null(c);
	ck_assert_int_eq(err, -EEXIST);
	ck_assert_uint_eq(recovery_ranks(d), 4);

	/*
	 * One error under all three jobs' ranks: three incidents, each its
	 * job's, opened in the ranks' order (the newest first): bare's, other's
	 * and the key's, which a and b are told of.
	 */
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 3);
	ck_assert_uint_eq(times(told, "of incident 1,"), 1);
	ck_assert_uint_eq(times(told, "of incident 2,"), 1);
	ck_assert_uint_eq(times(told, "of incident 3,"), 2);
	x = &d->incidents[2];
	ck_assert(x->job.uid == getuid() && !strcmp(x->job.name, "job"));
	ck_assert_mem_eq(x->job.key, "\xeb\xbd\xb4\x82\x7a\x10\xc1\xea", 8);
	ck_assert(!keyed_job(&d->incidents[0].job));

	/* the others cannot fail it, nor end it by leaving */
	fail.incident = x->info.id;
	ck_assert_int_eq(recovery_answer(d, other, &fail), -ESRCH);
	ck_assert_int_eq(recovery_answer(d, bare, &fail), -ESRCH);
	recovery_client_gone(d, other);
	recovery_client_gone(d, bare);
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_PAUSING);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_ESCALATED);

	/* its holders take it to the end */
	answer(a, x->info.id, HBM_ANSWER_PAUSED);
	answer(b, x->info.id, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_RESTORING);
	answer(a, x->info.id, HBM_ANSWER_RESTORED);
	answer(b, x->info.id, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_RESUMED);
	free(other);
	free(bare);
	cleanup();
}
END_TEST

static bool set_aside(void)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	bool found = false;

	while (dp && (e = readdir(dp)))
		found |= !strncmp(e->d_name, "incidents.corrupt-", 18);
	if (dp)
		closedir(dp);
	return found;
}

/* A file of another version: nothing of it taken, the file kept aside. */
START_TEST(load_refuses_another_version)
{
	uint8_t buf[HBM_INCIDENTS_HEADER + HBM_INCIDENTS_RECORD] = { 0 };
	struct hbm_ctl_incident x = { .id = 7, .length = 0x1000,
				      .state = HBM_INCIDENT_RESUMED };
	uint32_t v = 2;

	setup();
	strcpy(x.job, "job");
	strcpy(x.device, "dev");
	x.at[HBM_INCIDENT_DETECTED] = x.at[HBM_INCIDENT_RESUMED] = 1;
	hbm_incidents_encode_header(buf, 1);
	hbm_incidents_encode_record(buf, 0, &x);
	ck_assert_int_eq(hbm_atomic_write(d->state_dir, "incidents", buf, sizeof(buf)), 0);
	recovery_load(d);
	ck_assert_uint_eq(d->nr_incidents, 1);	/* the same file, version 1: taken */
	free(d->incidents);
	d->incidents = NULL;
	d->nr_incidents = d->incidents_cap = 0;
	memcpy(buf + 8, &v, 4);
	ck_assert_int_eq(hbm_atomic_write(d->state_dir, "incidents", buf, sizeof(buf)), 0);
	recovery_load(d);
	ck_assert_uint_eq(d->nr_incidents, 0);
	ck_assert(set_aside());
	cleanup();
}
END_TEST

/*
 * An incident the last daemon left open is escalated at start and counted,
 * but none of its phases is timed: the one it was in would end at this
 * start, its span the time no daemon ran.
 */
/* Incident @id of job "job" on "dev", as a daemon left it pausing. */
static struct hbm_ctl_incident left_pausing(uint64_t id)
{
	struct hbm_ctl_incident x = { .id = id, .length = 0x1000,
				      .state = HBM_INCIDENT_PAUSING };

	strcpy(x.job, "job");
	strcpy(x.device, "dev");
	x.at[HBM_INCIDENT_DETECTED] = 1000000;
	x.at[HBM_INCIDENT_PAUSING] = 1000100;
	return x;
}

START_TEST(load_escalates_untimed)
{
	uint8_t buf[HBM_INCIDENTS_HEADER + HBM_INCIDENTS_RECORD] = { 0 };
	struct hbm_ctl_incident x = left_pausing(7);
	size_t st, o, b;

	setup();
	hbm_incidents_encode_header(buf, 1);
	hbm_incidents_encode_record(buf, 0, &x);
	ck_assert_int_eq(hbm_atomic_write(d->state_dir, "incidents", buf, sizeof(buf)), 0);
	recovery_load(d);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(d->incident_totals.ended[0], 0);
	ck_assert_uint_eq(d->incident_totals.ended[1], 1);
	for (st = 0; st < HBM_INCIDENT_RESUMED; st++)
		for (o = 0; o < 2; o++) {
			ck_assert(d->incident_totals.phase[st][o].sum == 0);
			for (b = 0; b < METRICS_PHASE_BUCKETS; b++)
				ck_assert_uint_eq(d->incident_totals.phase[st][o].bucket[b], 0);
		}
	cleanup();
}
END_TEST

/* What is under the incidents file's name: S_IFREG, S_IFLNK, ... */
static mode_t incidents_file_type(void)
{
	struct stat st;

	ck_assert_int_eq(fstatat(d->state_dir, "incidents", &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_mode & S_IFMT;
}

/* The file behind the link named incidents, written with @n records. */
static void write_away(const struct hbm_ctl_incident *xs, size_t n)
{
	uint8_t buf[HBM_INCIDENTS_HEADER + 4 * HBM_INCIDENTS_RECORD] = { 0 };
	size_t i;
	int away;

	hbm_incidents_encode_header(buf, n);
	for (i = 0; i < n; i++)
		hbm_incidents_encode_record(buf, i, &xs[i]);
	mkdirat(d->state_dir, "away", 0700);
	away = openat(d->state_dir, "away", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(away, 0);
	ck_assert_int_eq(hbm_atomic_write(away, "incidents", buf,
					  hbm_incidents_encode_size(n)), 0);
	close(away);
}

static void remove_away(void)
{
	int away = openat(d->state_dir, "away", O_RDONLY | O_DIRECTORY);

	unlinkat(away, "incidents", 0);
	close(away);
	unlinkat(d->state_dir, "away", AT_REMOVEDIR);
}

/* A daemon started with its incidents file a link to a disk not mounted yet. */
static void incidents_behind_a_dangling_link(void)
{
	setup();
	ck_assert_int_eq(symlinkat("away/incidents", d->state_dir, "incidents"), 0);
	recovery_load(d);
	ck_assert(d->incidents_unread);
}

/* What the saved incidents file holds: how many, into @in. */
static size_t saved_incidents(struct hbm_ctl_incident *in, size_t max,
			      struct hbm_incidents_damage *damage)
{
	uint8_t *file;
	size_t len, n;

	ck_assert_int_eq(hbm_read_file(d->state_dir, "incidents", &file, &len), 0);
	ck_assert_int_eq(hbm_incidents_decode(file, len, in, max, &n, damage), 0);
	free(file);
	return n;
}

/* Those the last daemon left open, escalated at start: saved in one write. */
START_TEST(load_saves_its_escalations_at_once)
{
	uint8_t buf[HBM_INCIDENTS_HEADER + 3 * HBM_INCIDENTS_RECORD] = { 0 };
	struct hbm_ctl_incident x, in[3];
	struct hbm_incidents_damage damage;
	uint64_t fsyncs;
	size_t i;

	setup();
	hbm_incidents_encode_header(buf, 3);
	for (i = 0; i < 3; i++) {
		x = left_pausing(7 + i);
		hbm_incidents_encode_record(buf, i, &x);
	}
	ck_assert_int_eq(hbm_atomic_write(d->state_dir, "incidents", buf, sizeof(buf)), 0);
	fsyncs = hbm_state_fsyncs;
	recovery_load(d);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 2);
	ck_assert_uint_eq(saved_incidents(in, 3, &damage), 3);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(in[i].state, HBM_INCIDENT_ESCALATED);
	recovery_stop(d);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 2);	/* nothing more to save */
	cleanup();
}
END_TEST

static int nothing(sd_event_source *s, void *arg)
{
	(void)s;
	(void)arg;
	return 0;
}

/*
 * One error under many jobs: their incidents' steps saved in one write at
 * the end of the loop's turn, not one each (helper-181: 256 jobs on one UE
 * made some 770 writes, each with two fsyncs, in the loop); and what the
 * last turn did, at the daemon's stop.
 */
START_TEST(one_save_per_turn_of_the_loop)
{
	struct hbm_ctl_incident in[HBM_INCIDENTS_KEPT];
	struct hbm_incidents_damage damage;
	sd_event_source *event;
	struct client *c = NULL;
	uint64_t fsyncs;
	char job[16];
	int i;

	setup();
	recovery_load(d);
	for (i = 0; i < 16; i++) {
		snprintf(job, sizeof(job), "j%d", i);
		c = rank(job, 0, 0, 0);
	}
	fsyncs = hbm_state_fsyncs;
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 16);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs);
	/* the turn ends once the source that heard the error was dispatched */
	ck_assert_int_ge(sd_event_add_defer(d->loop, &event, nothing, NULL), 0);
	ck_assert_int_ge(sd_event_source_set_enabled(event, SD_EVENT_ONESHOT), 0);
	while (sd_event_run(d->loop, 0) > 0)
		;
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 2);	/* the file's, its directory's */
	ck_assert_uint_eq(saved_incidents(in, HBM_INCIDENTS_KEPT, &damage), 16);
	ck_assert_str_eq(in[0].job, "j15");	/* the newest rank's, first */
	ck_assert_uint_eq(in[0].state, HBM_INCIDENT_PAUSING);
	answer_failed(c, in[0].id);
	recovery_stop(d);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 4);
	ck_assert_uint_eq(saved_incidents(in, HBM_INCIDENTS_KEPT, &damage), 16);
	ck_assert_uint_eq(in[0].state, HBM_INCIDENT_ESCALATED);
	sd_event_source_unref(event);
	cleanup();
}
END_TEST

/*
 * A file there that cannot be read (a link to a disk not mounted yet) is
 * not saved over: the incidents opened meanwhile are kept, with ids above
 * any the file holds, and once it reads they go after its own, an open one
 * of which is escalated; then all are saved.  Before the fix the first
 * save renamed an empty history over the link.
 */
START_TEST(an_unread_incidents_file_is_not_saved_over)
{
	struct hbm_ctl_incident x[2] = {
		{ .id = 7, .length = 0x1000, .state = HBM_INCIDENT_RESUMED },
		{ .id = 8, .length = 0x1000, .state = HBM_INCIDENT_PAUSING },
	}, in[4];
	struct hbm_incidents_damage damage;
	uint64_t ours;
	size_t n;

	incidents_behind_a_dangling_link();
	ck_assert_int_eq(d->incidents_error, -ENOLINK);
	rank("job", 0, 0, 0);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ours = d->incidents[0].info.id;
	ck_assert_uint_gt(ours, 1000000000000000ULL);	/* the clock's microseconds */
	recovery_save_again(d);			/* still nothing there */
	ck_assert(d->incidents_unread);
	ck_assert_uint_eq(incidents_file_type(), S_IFLNK);

	/* the disk is there now: the file's two, then ours */
	for (n = 0; n < 2; n++) {
		strcpy(x[n].job, "old");
		strcpy(x[n].device, "dev");
		x[n].at[HBM_INCIDENT_DETECTED] = 1;
	}
	x[0].at[HBM_INCIDENT_RESUMED] = 1;
	x[1].at[HBM_INCIDENT_PAUSING] = 2;
	write_away(x, 2);
	recovery_save_again(d);
	ck_assert(!d->incidents_unread);
	ck_assert_int_eq(d->incidents_error, 0);
	ck_assert_uint_eq(d->nr_incidents, 3);
	ck_assert_uint_eq(d->incidents[0].info.id, 7);
	ck_assert_uint_eq(d->incidents[1].info.id, 8);
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(d->incidents[2].info.id, ours);
	ck_assert_uint_eq(d->incidents[2].info.state, HBM_INCIDENT_PAUSING);
	ck_assert_uint_eq(drained, 0);	/* a restart is not the node's memory */
	/* saved whole, under the name (the link renamed over, as every save does) */
	ck_assert_uint_eq(incidents_file_type(), S_IFREG);
	ck_assert_uint_eq(saved_incidents(in, 4, &damage), 3);
	ck_assert_uint_eq(in[2].id, ours);
	remove_away();
	cleanup();
}
END_TEST

/*
 * The file keeps no incident's owner: one read late, left open, is
 * escalated without telling a rank that registered since, even root's of
 * a job of the same name (helper-153: it was told to abort).
 */
START_TEST(a_late_read_tells_no_live_rank)
{
	struct hbm_ctl_incident x = { .id = 8, .length = 0x1000, .state = HBM_INCIDENT_PAUSING };

	incidents_behind_a_dangling_link();
	rank("job", 0, 0, 0);
	strcpy(x.job, "job");
	strcpy(x.device, "dev");
	x.at[HBM_INCIDENT_DETECTED] = 1;
	x.at[HBM_INCIDENT_PAUSING] = 2;
	write_away(&x, 1);
	told[0] = 0;
	recovery_save_again(d);
	ck_assert(!d->incidents_unread);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(told, "");
	remove_away();
	cleanup();
}
END_TEST

/*
 * Ids stay in order when the file's reach ours (a daemon that took its
 * ids from a clock since set back): the file's go below, ours stand, and
 * the next start reads all (helper-153: ours were bad records then).
 */
START_TEST(ids_kept_in_order_when_the_clock_went_back)
{
	struct hbm_ctl_incident x = { .length = 0x1000, .state = HBM_INCIDENT_RESUMED }, in[8];
	struct hbm_incidents_damage damage;
	uint64_t ours;

	incidents_behind_a_dangling_link();
	rank("job", 0, 0, 0);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ours = d->incidents[0].info.id;
	strcpy(x.job, "old");
	strcpy(x.device, "dev");
	x.id = ours + 3600ULL * 1000000;	/* the last run's clock, an hour ahead */
	x.at[HBM_INCIDENT_DETECTED] = x.at[HBM_INCIDENT_RESUMED] = 1;
	write_away(&x, 1);
	recovery_save_again(d);
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(d->incidents[0].info.id, ours - 1);
	ck_assert_uint_eq(d->incidents[1].info.id, ours);
	ck_assert_uint_eq(saved_incidents(in, 8, &damage), 2);
	ck_assert_uint_eq(damage.bad_records, 0);
	remove_away();
	cleanup();
}
END_TEST

/* Ours moved after the file's: each one's deadline still points at it. */
START_TEST(a_late_read_moves_our_timers_with_ours)
{
	struct hbm_ctl_incident x = { .id = 7, .length = 0x1000, .state = HBM_INCIDENT_RESUMED };

	incidents_behind_a_dangling_link();
	rank("job", 0, 0, 0);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_ptr_nonnull(d->incidents[0].timer);
	strcpy(x.job, "old");
	strcpy(x.device, "dev");
	x.at[HBM_INCIDENT_DETECTED] = x.at[HBM_INCIDENT_RESUMED] = 1;
	write_away(&x, 1);
	recovery_save_again(d);
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_ptr_eq(sd_event_source_get_userdata(d->incidents[1].timer), &d->incidents[1]);
	remove_away();
	cleanup();
}
END_TEST

/* A FIFO under the name holds no history: kept aside, and replaced. */
START_TEST(an_incidents_fifo_is_set_aside)
{
	setup();
	ck_assert_int_eq(mkfifoat(d->state_dir, "incidents", 0600), 0);
	recovery_load(d);
	ck_assert(!d->incidents_unread);
	ck_assert(set_aside());
	ck_assert_uint_eq(incidents_file_type(), S_IFREG);
	cleanup();
}
END_TEST

/*
 * A link that loops is a mistake an operator mends: its saves held, read
 * once mended, not set aside (helper-154: a retry reads what a person
 * mended; a file set aside is forgotten by the daemon).
 */
START_TEST(an_incidents_link_that_loops_is_read_once_mended)
{
	struct hbm_ctl_incident x = { .id = 7, .length = 0x1000, .state = HBM_INCIDENT_RESUMED };

	setup();
	ck_assert_int_eq(symlinkat("incidents", d->state_dir, "incidents"), 0);
	recovery_load(d);
	ck_assert(d->incidents_unread);
	ck_assert_int_eq(d->incidents_error, -ELOOP);
	ck_assert(!set_aside());
	strcpy(x.job, "old");
	strcpy(x.device, "dev");
	x.at[HBM_INCIDENT_DETECTED] = x.at[HBM_INCIDENT_RESUMED] = 1;
	write_away(&x, 1);
	ck_assert_int_eq(unlinkat(d->state_dir, "incidents", 0), 0);
	ck_assert_int_eq(symlinkat("away/incidents", d->state_dir, "incidents"), 0);
	recovery_save_again(d);
	ck_assert(!d->incidents_unread);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.id, 7);
	remove_away();
	cleanup();
}
END_TEST

/* An Xid of GPU @identity (device 1), no address, as a source gives it. */
static void xid_fact(uint32_t xid, uint32_t severity, const char *identity)
{
	struct hbm_fact f = { .type = HBM_FACT_ERROR, .origin = HBM_FROM_KMSG,
			      .event = HBMGUARD_EVENT_DEVICE_ERROR, .state = xid, .xid = xid,
			      .severity = severity, .dev.id = 1 };

	strcpy(f.dev.identity, identity);
	strcpy(f.path, "kmsg");
	recovery_fact(d, &f);
}

/* Incident @i is the loss of [@offset, +@length), rank @rank's. */
static void incident_is(size_t i, uint64_t offset, uint64_t length, uint32_t rank)
{
	ck_assert_uint_eq(d->incidents[i].info.offset, offset);
	ck_assert_uint_eq(d->incidents[i].info.length, length);
	ck_assert_uint_eq(d->incidents[i].info.failed_rank, rank);
}

/* Incident @incident of ranks @a and @b through to RESUMED. */
static void resume(struct client *a, struct client *b, uint64_t incident)
{
	answer(a, incident, HBM_ANSWER_PAUSED);
	answer(b, incident, HBM_ANSWER_PAUSED);
	answer(a, incident, HBM_ANSWER_RESTORED);
	answer(b, incident, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(d->incidents[incident - 1].info.state, HBM_INCIDENT_RESUMED);
}

/*
 * A GPU's UE without an address: an incident for every job with a rank on
 * that GPU, whatever pages the rank named; a correctable Xid, or one of
 * another GPU, opens nothing; another of the GPU's is the same error.
 */
START_TEST(device_error_hits_every_rank_on_it)
{
	size_t i;

	setup();
	rank("jobA", 0, 0x1000, 0);
	rank("jobB", 0, 0x900000, 0);
	xid_fact(63, HBM_SEVERITY_CE, "dev");
	xid_fact(48, HBM_SEVERITY_UE, "other");
	ck_assert_uint_eq(d->nr_incidents, 0);
	xid_fact(48, HBM_SEVERITY_UE, "dev");
	ck_assert_uint_eq(d->nr_incidents, 2);
	for (i = 0; i < 2; i++) {
		ck_assert_str_eq(d->incidents[i].info.device, "dev");
		ck_assert_uint_eq(d->incidents[i].info.offset, 0);
		ck_assert_uint_eq(d->incidents[i].info.length, HBM_CTL_WHOLE_DEVICE);
		ck_assert_uint_eq(d->incidents[i].info.state, HBM_INCIDENT_PAUSING);
	}
	ck_assert_uint_eq(d->seen[1].nr, 0);	/* no page taken as seen */
	/*
	 * One DBE is Xid 48 and 94 (or 95) on A100 and later, and NVML's
	 * DoubleBitEcc event: the incident has the whole GPU already.
	 */
	xid_fact(94, HBM_SEVERITY_UE, "dev");
	ck_assert_uint_eq(d->nr_incidents, 2);
	for (i = 0; i < 2; i++)
		ck_assert_uint_eq(d->incidents[i].info.state, HBM_INCIDENT_PAUSING);
	cleanup();
}
END_TEST

/* A UE heard at device "dev"'s page 0x1000: retired. */
static const struct hbm_fact heard_ue_page = {
	.type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL, .event = HBMGUARD_EVENT_RETIRED,
	.source = HBMGUARD_SOURCE_UE, .dev = { .id = 1, .identity = "dev" },
	.offset = 0x1000, .length = 0x1000, .count = 1 };

/*
 * Its bypass is the driver's: the restore goes on without the kernel's
 * table; and the device is not seen for good: a page's UE later is news.
 */
START_TEST(device_error_restores_and_forgets)
{
	struct hbm_fact page = heard_ue_page;
	struct client *a;

	setup();
	world = 1;
	bypassed = false;
	a = rank("job", 0, 0x1000, 0);
	xid_fact(95, HBM_SEVERITY_UE, "dev");
	ck_assert_uint_eq(d->nr_incidents, 1);
	answer(a, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	answer(a, 1, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESUMED);
	bypassed = true;
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(d->incidents[1].info.offset, 0x1000);
	ck_assert_uint_eq(d->incidents[1].info.failed_rank, 0);
	cleanup();
}
END_TEST

/* Device "dev" read anew (the module came back), and its table's UE page at 0x1000, restored. */
static const struct hbm_fact table_added = {
	.type = HBM_FACT_DEVICE_SEEN, .origin = HBM_FROM_KERNEL, .sync = HBM_SYNC_ADDED,
	.dev = { .id = 1, .identity = "dev" } };
static const struct hbm_fact restored_ue_page = {
	.type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL,
	.flags = HBM_FACT_UNHEARD | HBM_FACT_KNOWN, .sync = HBM_SYNC_ADDED,
	.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE,
	.restored = HBMGUARD_STATE_RETIRED, .dev = { .id = 1, .identity = "dev" },
	.offset = 0x1000, .length = 0x1000, .count = 1 };

/*
 * A new table (the module came back) read with a UE page in it: news when
 * it is, no incident when the store restored it from the state file just
 * before (KNOWN: its source says UE, as it did before the reload).
 */
START_TEST(restored_loss_is_no_news)
{
	struct hbm_fact seen = table_added, page = restored_ue_page;

	setup();
	rank("job", 0, 0x1000, 0);
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 0);
	/* Taken as seen: the table read again after lost events, still old news. */
	page.flags = HBM_FACT_UNHEARD;
	page.sync = HBM_SYNC_RESYNC;
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 0);
	page.sync = HBM_SYNC_ADDED;	/* the same page, not restored: a loss unheard */
	page.offset = 0x1000;
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 1);
	cleanup();
}
END_TEST

/*
 * The spare serving a page failed: the page moved to another spare (or
 * FAILED), and the module says its data was lost with it.  The page was
 * seen (a UE lost it before, or it was restored as a UE page, old news),
 * or retired for correctable errors (no loss of its own): its recovery
 * starts all the same, each time.
 */
START_TEST(spare_failed_loses_data_again)
{
	struct hbm_fact seen = table_added, restored = restored_ue_page;
	struct hbm_fact ue = heard_ue_page, moved = ue;
	struct client *a, *b;

	setup();
	job_of_two(&a, &b);
	recovery_fact(d, &ue);
	ck_assert_uint_eq(d->nr_incidents, 1);
	resume(a, b, 1);
	recovery_fact(d, &ue);		/* the same loss told again: seen */
	ck_assert_uint_eq(d->nr_incidents, 1);
	moved.flags = HBM_FACT_DATA_LOST;
	recovery_fact(d, &moved);
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(d->incidents[1].info.offset, 0x1000);
	ck_assert_uint_eq(d->incidents[1].info.failed_rank, 0);
	resume(a, b, 2);
	/* restored as a UE page, then its spare failed with none left */
	recovery_fact(d, &seen);
	restored.offset = 0x2000;
	recovery_fact(d, &restored);
	ck_assert_uint_eq(d->nr_incidents, 2);
	moved.event = HBMGUARD_EVENT_FAILED;
	moved.offset = 0x2000;
	recovery_fact(d, &moved);
	ck_assert_uint_eq(d->nr_incidents, 3);
	ck_assert_uint_eq(d->incidents[2].info.failed_rank, 1);
	resume(a, b, 3);
	/* retired for correctable errors, then its spare failed */
	recovery_fact(d, &seen);
	ue.source = HBMGUARD_SOURCE_CE_THRESHOLD;
	recovery_fact(d, &ue);
	ck_assert_uint_eq(d->nr_incidents, 3);
	moved = ue;
	moved.flags = HBM_FACT_DATA_LOST;
	recovery_fact(d, &moved);
	ck_assert_uint_eq(d->nr_incidents, 4);
	ck_assert_uint_eq(d->incidents[3].info.failed_rank, 0);
	cleanup();
}
END_TEST

/*
 * What a rank controls (failing, leaving, being late) or a restart ends the
 * job's recovery but does not drain the node: any user may register a rank
 * on any device and answer FAILED (helper-159).  Nor does a second error,
 * bypassed: a rank any user registers on a whole device made two errors no
 * job would notice drain the node (helper-188).  Its memory does: a page
 * without a spare, the second error's too.
 */
START_TEST(only_the_nodes_memory_drains)
{
	struct client *a, *b;
	int i;

	setup();
	a = rank("failed", 0, 0x1000, 0);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	answer_failed(a, 1);
	a = rank("left", 0, 0x2000, 0);
	recovery_on_lost_data(d, "dev", 0x2000, 0x1000);
	recovery_client_gone(d, a);
	free(a);
	d->cfg.recovery.pause_timeout = 1;	/* the shortest deadline */
	rank("late", 0, 0x3000, 0);
	recovery_on_lost_data(d, "dev", 0x3000, 0x1000);
	for (i = 0; i < 30 && d->incidents[2].info.state != HBM_INCIDENT_ESCALATED; i++)
		ck_assert_int_ge(sd_event_run(d->loop, 100000), 0);
	ck_assert_uint_eq(d->nr_incidents, 3);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(d->incidents[2].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[2].info.reason, "ranks did not pause in time");
	ck_assert_uint_eq(drained, 0);

	d->cfg.recovery.pause_timeout = 60;
	bypassed = false;
	b = rank("nospare", 0, 0x5000, 0);
	recovery_on_lost_data(d, "dev", 0x5000, 0x1000);
	answer(b, 4, HBM_ANSWER_PAUSED);
	ck_assert_str_eq(d->incidents[3].info.reason, "the page has no spare: not bypassed");
	ck_assert_uint_eq(drained, 1);
	bypassed = true;
	rank("nospare2", 0, 0x7000, 0);
	recovery_on_lost_data(d, "dev", 0x7000, 0x1000);
	bypassed = false;			/* the second error's page */
	recovery_on_lost_data(d, "dev", 0x7000, 0x1000);
	ck_assert_str_eq(d->incidents[4].info.reason, "the page has no spare: not bypassed");
	ck_assert_uint_eq(drained, 2);
	bypassed = true;
	rank("second", 0, ANY_PAGE, 0);	/* anyone's, on the whole device */
	recovery_on_lost_data(d, "dev", 0x4000, 0x1000);
	recovery_on_lost_data(d, "dev", 0x6000, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 6);
	ck_assert_str_eq(d->incidents[5].info.reason, "a second error during recovery");
	ck_assert_uint_eq(drained, 2);
	cleanup();
}
END_TEST

/*
 * A page an operator's retire failed (no spare left) keeps its data on its
 * own frame, in service: no recovery.  An uncorrectable error there later
 * destroys it: the module says so on a FAILED event (the page's state did
 * not change), and the job recovers.
 */
START_TEST(failed_page_loses_data_on_its_frame)
{
	struct hbm_fact failed = heard_ue_page;

	setup();
	rank("job", 0, 0x1000, 0);
	failed.event = HBMGUARD_EVENT_FAILED;
	failed.source = HBMGUARD_SOURCE_ADMIN;
	recovery_fact(d, &failed);
	ck_assert_uint_eq(d->nr_incidents, 0);
	failed.source = HBMGUARD_SOURCE_UE;
	failed.flags = HBM_FACT_DATA_LOST;
	recovery_fact(d, &failed);
	ck_assert_uint_eq(d->nr_incidents, 1);
	incident_is(0, 0x1000, 0x1000, 0);
	cleanup();
}
END_TEST

/*
 * A page cleared whose spare's data could not come home (no memory): back
 * in service, lost; the module says so on its CLEARED event, and the job
 * recovers.  Out of the table, the page is not seen: its next loss is news,
 * a UE's or another clear's.
 */
START_TEST(cleared_page_loses_data_on_its_way_home)
{
	struct hbm_fact cleared = heard_ue_page, ue = heard_ue_page;
	struct client *a, *b;

	setup();
	job_of_two(&a, &b);
	recovery_fact(d, &ue);			/* seen: lost, recovered */
	ck_assert_uint_eq(d->nr_incidents, 1);
	resume(a, b, 1);
	cleared.event = HBMGUARD_EVENT_CLEARED;
	cleared.source = HBMGUARD_SOURCE_ADMIN;
	recovery_fact(d, &cleared);
	ck_assert_uint_eq(d->nr_incidents, 1);	/* its data came home */
	recovery_fact(d, &ue);
	ck_assert_uint_eq(d->nr_incidents, 2);	/* forgotten: news */
	resume(a, b, 2);
	cleared.flags = HBM_FACT_DATA_LOST;
	recovery_fact(d, &cleared);
	ck_assert_uint_eq(d->nr_incidents, 3);
	incident_is(2, 0x1000, 0x1000, 0);
	resume(a, b, 3);
	recovery_fact(d, &ue);
	ck_assert_uint_eq(d->nr_incidents, 4);
	ck_assert_uint_eq(d->incidents[3].info.failed_rank, 0);
	cleanup();
}
END_TEST

/*
 * One loss over a range partly lost before (a table read after lost
 * events, a move over pages a UE took earlier) comes in two ranges, those
 * not seen yet: one error, the job's incident grown over both, not a
 * second error that escalates it and drains the node (helper-181).
 */
START_TEST(one_loss_in_two_ranges_is_one_error)
{
	struct hbm_fact ue = heard_ue_page;
	struct client *a, *b;

	setup();
	world = 1;
	a = rank("jobA", 0, 0x2000, 0);
	ue.offset = 0x2000;
	recovery_fact(d, &ue);			/* jobA's, seen */
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(a, 1, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESUMED);
	b = rank("jobB", 0, ANY_PAGE, 0);
	ue.offset = 0x1000;
	ue.length = 0x3000;
	ue.count = 3;
	recovery_fact(d, &ue);			/* 0x1000 and 0x3000 are news */
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_PAUSING);
	incident_is(1, 0x1000, 0x3000, 0);
	ck_assert_uint_eq(drained, 0);
	answer(b, 2, HBM_ANSWER_PAUSED);	/* bypassed: on to the restore */
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_RESTORING);
	cleanup();
}
END_TEST

/*
 * A job of one rank, "job", on the whole of device "dev", and the GPU's
 * Xid 48: its incident, pausing.  Return: the rank.
 */
static struct client *whole_device_incident(void)
{
	struct client *c;

	setup();
	world = 1;
	c = rank("job", 0, ANY_PAGE, 0);
	xid_fact(48, HBM_SEVERITY_UE, "dev");
	return c;
}

/* Incident @i's loss @ns older than it is: later in the test's time. */
static void lost_before(size_t i, uint64_t ns)
{
	d->incidents[i].lost_at -= ns;
}

/*
 * A GPU's UE without an address, then its page's, before the ranks were
 * asked to restore: the whole-device incident has it already, not a
 * second error (helper-181); and so another report of it within its burst
 * once the ranks restore (NVML's tables read again after the DBE: its
 * page).  The same report twice is two errors, and past the burst any page
 * lost once a restore is under way may have taken restored data: those
 * escalate.
 */
START_TEST(page_within_whole_device_incident)
{
	struct hbm_fact ue = heard_ue_page, nvml = heard_ue_page;
	struct client *b;

	b = whole_device_incident();
	ck_assert_uint_eq(d->nr_incidents, 1);
	recovery_fact(d, &ue);			/* the kernel's report of its page */
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_PAUSING);
	ck_assert_uint_eq(drained, 0);
	answer(b, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	nvml.origin = HBM_FROM_NVML;
	nvml.offset = 0x3000;
	recovery_fact(d, &nvml);		/* NVML's: another report */
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	ue.offset = 0x5000;
	if (_i)					/* past the burst */
		lost_before(0, HBM_XID_WINDOW_NS);
	recovery_fact(d, &ue);			/* the kernel's report again */
	ck_assert_str_eq(d->incidents[0].info.reason, "a second error during recovery");
	ck_assert_uint_eq(drained, 0);		/* bypassed: the job's alone */
	cleanup();
}
END_TEST

/*
 * A page lost while the ranks pause, whatever the incident's step, is
 * before any restore: taken in, whenever it came (no burst then).
 */
START_TEST(page_while_pausing_is_taken_in_any_time)
{
	struct hbm_fact ue = heard_ue_page;

	whole_device_incident();
	lost_before(0, 10 * HBM_XID_WINDOW_NS);
	recovery_fact(d, &ue);
	xid_fact(48, HBM_SEVERITY_UE, "dev");	/* and the same Xid again */
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_PAUSING);
	cleanup();
}
END_TEST

/*
 * A report heard while the ranks pause counts as its kind's one report:
 * the same again once they restore is a second error (helper-190: it was
 * not recorded then, and taken in again).
 */
START_TEST(reports_heard_while_pausing_count_once)
{
	struct client *a;

	setup();
	world = 1;
	a = rank("job", 0, 0x1000, 0);
	xid_fact(48, HBM_SEVERITY_UE, "dev");
	xid_fact(94, HBM_SEVERITY_UE, "dev");	/* pausing: its burst's */
	answer(a, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	xid_fact(94, HBM_SEVERITY_UE, "dev");	/* the same report twice */
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	cleanup();
}
END_TEST

/*
 * One event whose pages come in two ranges (one between them seen before)
 * is one report once the ranks restore, not a second error in its second
 * range (helper-190).
 */
START_TEST(one_event_in_two_ranges_is_one_report)
{
	struct hbm_fact old = { .type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL,
				.flags = HBM_FACT_UNHEARD, .sync = HBM_SYNC_START,
				.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE,
				.dev = { .id = 1, .identity = "dev" },
				.offset = 0x2000, .length = 0x1000, .count = 1 };
	struct hbm_fact ue = heard_ue_page;
	struct client *a;

	setup();
	world = 1;
	recovery_fact(d, &old);			/* 0x2000 seen: old news */
	a = rank("job", 0, ANY_PAGE, 0);
	xid_fact(48, HBM_SEVERITY_UE, "dev");
	answer(a, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	ue.offset = 0x1000;
	ue.length = 0x3000;
	ue.count = 3;
	recovery_fact(d, &ue);			/* one event: 0x1000 and 0x3000 news */
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	cleanup();
}
END_TEST

/*
 * Once the ranks restore, a loss of the whole device is the incident's own
 * error only as another report of it within the burst it came in (Xid 48,
 * then 94, NVML's DoubleBitEcc event): a later one, the same report twice
 * (an Xid 48 again), events the module lost, or a page whose spare failed
 * may have hit restored data: a second error, never a resume on it.
 * Before, any whole-device loss in any step was "its error again", and
 * within the window every loss was (helper-189).
 */
START_TEST(whole_device_loss_while_restoring)
{
	struct hbm_fact unheard = { .type = HBM_FACT_LOST_UNHEARD, .count = 3,
				    .dev = { .id = 1, .identity = "dev" } };
	struct hbm_fact again = heard_ue_page;
	struct client *a;

	setup();
	world = 1;
	a = rank("job", 0, 0x1000, 0);
	xid_fact(48, HBM_SEVERITY_UE, "dev");
	answer(a, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	xid_fact(94, HBM_SEVERITY_UE, "dev");	/* the same DBE */
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	if (_i < 2)				/* past the burst */
		lost_before(0, HBM_XID_WINDOW_NS);
	again.flags = HBM_FACT_DATA_LOST;	/* its spare failed: LOSS_AGAIN */
	switch (_i) {
	case 0:
	case 2:
		xid_fact(48, HBM_SEVERITY_UE, "dev");
		break;
	case 1:
	case 3:
		recovery_fact(d, &unheard);
		break;
	default:
		recovery_fact(d, &again);
	}
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[0].info.reason, "a second error during recovery");
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/* Both ranks of job "job" paused in its incident @id: it may go on, or not. */
static void both_paused(struct client *a, struct client *b, uint64_t id)
{
	answer(a, id, HBM_ANSWER_PAUSED);
	answer(b, id, HBM_ANSWER_PAUSED);
}

/*
 * The same loss's next range under another rank of the job is its loss
 * too, but under two ranks: one incident, which cannot restore both once
 * they paused (helper-182); and so where the range under two comes first
 * (helper-183: it opened a second incident for the same loss).
 */
START_TEST(one_loss_under_two_ranks_escalates)
{
	struct hbm_fact ue = heard_ue_page;
	struct client *a, *b;

	setup();
	a = rank("job", 0, 0x1000, 0);
	b = _i ? rank("job", 1, ANY_PAGE, 0) : rank("job", 1, 0x3000, 0);
	ue.offset = 0x2000;
	recovery_fact(d, &ue);			/* seen: nobody's, or under rank 1 alone */
	ck_assert_uint_eq(d->nr_incidents, _i);
	if (_i) {				/* that one resumed */
		both_paused(a, b, 1);
		answer(a, 1, HBM_ANSWER_RESTORED);
		answer(b, 1, HBM_ANSWER_RESTORED);
		ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESUMED);
	}
	ue.offset = 0x1000;
	ue.length = 0x3000;
	ue.count = 3;
	recovery_fact(d, &ue);			/* 0x1000 rank 0's (and 1's), 0x3000 rank 1's */
	ck_assert_uint_eq(d->nr_incidents, 1 + _i);
	ck_assert_uint_eq(d->incidents[_i].info.state, HBM_INCIDENT_PAUSING);
	both_paused(a, b, d->incidents[_i].info.id);
	ck_assert_uint_eq(d->incidents[_i].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[_i].info.reason, two_ranks_lost);
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/*
 * Under two ranks, the page with no spare: that is the node's memory, and
 * drains it; and so where it is a second error's, while the ranks pause
 * (helper-183: both were lost when two ranks escalated at once).
 */
START_TEST(two_ranks_hit_still_drain_for_the_memory)
{
	struct client *a, *b;

	setup();
	a = rank("job", 0, ANY_PAGE, 0);
	b = rank("job", 1, ANY_PAGE, 0);
	if (_i) {
		recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
		bypassed = false;
		recovery_on_lost_data(d, "dev", 0x8000, 0x1000);
		ck_assert_str_eq(d->incidents[0].info.reason,
				 "the page has no spare: not bypassed");
	} else {
		bypassed = false;
		recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
		both_paused(a, b, 1);
		ck_assert_str_eq(d->incidents[0].info.reason,
				 "the page has no spare: not bypassed");
	}
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(drained, 1);
	cleanup();
}
END_TEST

/*
 * A page with no spare is the node's memory whoever ends its incident: a
 * rank that fails or leaves before its peers paused (the one on the lost
 * page the likeliest) drains the node as the pause would have (helper-185:
 * any user's rank kept such a node in service).  With the page bypassed, a
 * rank's failure is its job's alone.
 */
START_TEST(no_spare_drains_whoever_ends_the_incident)
{
	struct client *a, *b;

	setup();
	job_of_two(&a, &b);
	bypassed = _i == 3;
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_PAUSING);
	if (_i >= 4) {		/* the table unread: not the node's, not resumed either */
		table_error = -EIO;
		if (_i == 4) {
			answer_failed(a, 1);
		} else {
			both_paused(a, b, 1);
			ck_assert_str_eq(d->incidents[0].info.reason,
					 "the page's table could not be read");
		}
		ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
		ck_assert_uint_eq(drained, 0);
		cleanup();
		return;
	}
	if (_i == 0 || _i == 3)
		answer_failed(a, 1);
	else if (_i == 1) {
		recovery_client_gone(d, a);
		free(a);
	} else
		answer_failed(b, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[0].info.reason, _i == 3 ? "a rank failed to recover" :
			 "the page has no spare: not bypassed");
	ck_assert_uint_eq(drained, _i != 3);
	cleanup();
}
END_TEST

/*
 * A page with no spare, lost while a whole-device incident pauses: not
 * taken in unchecked (the incident checks no page), but escalated for the
 * page, as alone it would be (helper-182).
 */
START_TEST(unbypassed_page_within_whole_device_incident_escalates)
{
	struct hbm_fact failed = heard_ue_page;

	whole_device_incident();
	bypassed = false;
	failed.event = HBMGUARD_EVENT_FAILED;
	failed.flags = HBM_FACT_DATA_LOST;
	recovery_fact(d, &failed);
	ck_assert_str_eq(d->incidents[0].info.reason, "the page has no spare: not bypassed");
	ck_assert_uint_eq(drained, 1);
	cleanup();
}
END_TEST

/*
 * A cleared page whose data could not come home is in service on its own
 * frame, out of the table: nothing to bypass, the restore goes on, never
 * "no spare" and the node drained (helper-181).
 */
START_TEST(cleared_page_lost_needs_no_bypass)
{
	struct hbm_fact cleared = heard_ue_page;
	struct client *a;

	setup();
	world = 1;
	bypassed = false;		/* the page is not in the table */
	a = rank("job", 0, 0x1000, 0);
	cleared.event = HBMGUARD_EVENT_CLEARED;
	cleared.source = HBMGUARD_SOURCE_ADMIN;
	cleared.flags = HBM_FACT_DATA_LOST;
	recovery_fact(d, &cleared);
	ck_assert_uint_eq(d->nr_incidents, 1);
	answer(a, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/*
 * A page cleared in the middle of a seen range with no memory for the
 * split: the range goes out whole, and the pages around the cleared one go
 * back as memory allows, so that a table read after lost events does not
 * take their loss, acted upon, for news a second time; the cleared page's
 * next loss is news.
 */
START_TEST(cleared_without_memory_reports_nothing_twice)
{
	struct hbm_fact ue = heard_ue_page, cleared, read;
	struct client *a;

	setup();
	ue.length = 0x3000;	/* three pages, one range seen */
	ue.count = 3;
	cleared = read = ue;
	world = 1;
	a = rank("jobA", 0, 0x1000, 0);
	recovery_fact(d, &ue);
	ck_assert_uint_eq(d->nr_incidents, 1);
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(a, 1, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESUMED);
	cleared.event = HBMGUARD_EVENT_CLEARED;
	cleared.offset = 0x2000;
	cleared.length = 0x1000;
	hbm_test_drop_spares(&d->seen[1]);
	hbm_test_alloc_fail_in = 0;
	recovery_fact(d, &cleared);
	hbm_test_alloc_fail_in = -1;
	ck_assert_uint_eq(d->seen[1].nr, 0);	/* out whole: the split could not be had */
	/* events lost: the table read again, the pages around still retired */
	read.flags = HBM_FACT_UNHEARD;
	read.sync = HBM_SYNC_RESYNC;
	read.state = HBMGUARD_STATE_RETIRED;
	read.length = 0x1000;
	recovery_fact(d, &read);
	read.offset = 0x3000;
	recovery_fact(d, &read);
	ck_assert_uint_eq(d->nr_incidents, 1);
	/* the cleared page lost again: news */
	rank("jobB", 0, 0x2000, 0);
	ue.offset = 0x2000;
	ue.length = 0x1000;
	recovery_fact(d, &ue);
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_str_eq(d->incidents[1].info.job, "jobB");
	cleanup();
}
END_TEST

/*
 * Restored out of service, back in the other state: a page stored FAILED
 * (sent as RETIRED, bypassed now that a spare is free), or stored RETIRED
 * and failed now (fewer spares): its data was lost before, no news.
 */
START_TEST(restored_retired_or_failed_alike)
{
	struct hbm_fact seen = table_added, page = restored_ue_page;

	setup();
	rank("job", 0, 0x1000, 0);
	page.restored = HBMGUARD_STATE_FAILED;	/* stored failed, bypassed now */
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 0);
	page.state = HBMGUARD_STATE_FAILED;
	page.restored = HBMGUARD_STATE_RETIRED;
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 0);
	/* restored PENDING, retired by a UE meanwhile: news */
	page.state = HBMGUARD_STATE_RETIRED;
	page.restored = HBMGUARD_STATE_PENDING;
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 1);
	cleanup();
}
END_TEST

/*
 * A restored UE page, and one retired next to it before the table was read,
 * merged into one extent by the module: its parts come apart
 * (hbm_state_cover()), the restored one old news, the other a loss.
 */
START_TEST(restored_part_of_an_extent_only_is_known)
{
	struct hbm_fact seen = table_added, page = restored_ue_page;

	setup();
	rank("job", 0, 0x1000, 0);	/* on the restored page */
	rank("job2", 0, 0x2000, 0);	/* on the new one */
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	page.flags = HBM_FACT_UNHEARD;
	page.restored = HBMGUARD_STATE_CLEAN;
	page.offset = 0x2000;
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.offset, 0x2000);
	cleanup();
}
END_TEST

/* A job of 4 ranks, some elsewhere, and a link to the others (the fakes above). */
static void setup_across_nodes(void)
{
	setup();
	d->cluster = (struct cluster *)1;	/* never dereferenced */
	world = 4;
}

/* The cluster link's step, as cluster.c hands it over. */
static void step(const char *id, enum cl_step s, uint32_t failed, const char *opener,
		 const char *text)
{
	struct cl_action a = { .kind = CL_LOCAL, .step = s, .rank = failed };

	snprintf(a.job, sizeof(a.job), "%u.job", (unsigned int)getuid());
	snprintf(a.id, sizeof(a.id), "%s", id);
	snprintf(a.opener, sizeof(a.opener), "%s", opener);
	snprintf(a.text, sizeof(a.text), "%s", text);
	if (s != CL_ABORT)
		snprintf(open_id, sizeof(open_id), "%s", id);
	recovery_cluster_ops.step(d, &a);
}

static bool said(const char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool said(const char *log, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	return strstr(log, line) != NULL;
}

/*
 * A job with ranks on other nodes: published, its error opened across
 * them, each step the cluster's, each told back once the ranks here did it.
 */
START_TEST(job_across_nodes)
{
	unsigned int uid = getuid();
	uint64_t t0, t1;
	struct client *a, *b;
	struct incident *x;

	setup_across_nodes();
	job_of_two(&a, &b);
	ck_assert(said(asked, "join %u.job {\"ranks\":[0],\"world_size\":4}\n", uid));
	ck_assert(said(asked, "join %u.job {\"ranks\":[1,0],\"world_size\":4}\n", uid));
	asked[0] = 0;
	recovery_on_lost_data(d, "dev", 0x2000, 0x1000);
	x = &d->incidents[0];
	ck_assert(x->clustered);
	/* the cluster's deadlines; this node's only as a backstop past all of them */
	ck_assert_ptr_nonnull(x->timer);
	ck_assert_int_ge(sd_event_now(d->loop, CLOCK_MONOTONIC, &t0), 0);
	ck_assert_int_ge(sd_event_source_get_time(x->timer, &t1), 0);
	ck_assert_uint_ge(t1 - t0, (4 * 60 + 60 + 60) * 1000000ULL);
	ck_assert(said(asked, "error %u.job 1 data lost on dev at 0x2000 under rank 1\n", uid));
	ck_assert(said(told, "rank 0: %u of incident 1, rank 1 lost", HBM_RECOVERY_PAUSE));
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(b, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_PAUSING);	/* the cluster's word */
	ck_assert_ptr_null(strstr(asked, "done"));
	step("c1", CL_PAUSE, 1, "here", "");
	ck_assert(said(asked, "done %u.job c1 pause ok\n", uid));
	step("c1", CL_ISOLATE, 1, "here", "");
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_ISOLATED);
	ck_assert(said(asked, "done %u.job c1 isolate ok\n", uid));
	told[0] = 0;
	step("c1", CL_RESTORE, 1, "here", "");
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_RESTORING);
	ck_assert(said(told, "rank 1: %u of incident 1, rank 1 lost", HBM_RECOVERY_RESTORE));
	answer(a, 1, HBM_ANSWER_RESTORED);
	ck_assert_ptr_null(strstr(asked, "restore ok"));
	answer(b, 1, HBM_ANSWER_RESTORED);
	ck_assert(said(asked, "done %u.job c1 restore ok\n", uid));
	step("c1", CL_RESUME, 1, "here", "");
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_RESUMED);
	ck_assert(said(told, "rank 0: %u of incident 1", HBM_RECOVERY_RESUME));
	ck_assert(said(asked, "done %u.job c1 resume ok\n", uid));
	ck_assert_ptr_null(strstr(asked, "fail"));
	/* the last rank here leaving: the job's key goes */
	asked[0] = 0;
	recovery_client_gone(d, a);
	free(a);
	ck_assert(said(asked, "join %u.job {\"ranks\":[1],\"world_size\":4}\n", uid));
	recovery_client_gone(d, b);
	free(b);
	ck_assert(said(asked, "leave %u.job\n", uid));
	cleanup();
}
END_TEST

/*
 * A page with no spare, this node's, in an incident across nodes that the
 * job's other nodes abort: the node's memory, drained as when its ranks end
 * it here (helper-186: a user crashing a rank on another node kept it in
 * service).
 */
START_TEST(no_spare_drains_when_other_nodes_abort)
{
	setup_across_nodes();
	rank("job", 0, 0x1000, 0);
	bypassed = false;
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	ck_assert(d->incidents[0].clustered);
	step("c1", CL_ABORT, 0, "n1", "node n1: a rank failed");
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[0].info.reason, "the page has no spare: not bypassed");
	ck_assert_uint_eq(drained, 1);
	cleanup();
}
END_TEST

/*
 * One loss under two ranks of a job, in one range, without an address, or
 * across nodes: the incident restores one rank, so the other would resume
 * on lost data.  The job aborts, on every node; the node, whose memory is
 * not why, stays in service.
 */
START_TEST(one_loss_under_two_ranks_aborts_the_job)
{
	unsigned int uid = getuid();
	struct incident *x;
	struct client *a, *b;

	if (_i == 2)
		setup_across_nodes();
	else
		setup();
	a = rank("job", 0, ANY_PAGE, 0);
	b = rank("job", 1, 0x1000, 0);
	rank("other", 0, 0x3000, 0);
	if (_i == 1)
		xid_fact(48, HBM_SEVERITY_UE, "dev");
	else
		recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 1 + (_i == 1));
	x = &d->incidents[0];
	if (strcmp(x->info.job, "job")) {	/* the other job's rank, alone hit, recovers */
		ck_assert_uint_eq(x->info.state, HBM_INCIDENT_PAUSING);
		x++;
	}
	ck_assert_str_eq(x->info.job, "job");
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_PAUSING);
	both_paused(a, b, x->info.id);
	if (_i == 2) {			/* the cluster's steps */
		ck_assert_uint_eq(x->info.state, HBM_INCIDENT_PAUSING);
		step("c1", CL_PAUSE, x->info.failed_rank, "here", "");
		step("c1", CL_ISOLATE, x->info.failed_rank, "here", "");
		ck_assert(said(asked, "error %u.job %u data lost on dev at 0x1000 under rank %u\n",
			       uid, x->info.failed_rank, x->info.failed_rank));
		ck_assert(said(asked, "fail %u.job %s\n", uid, two_ranks_lost));
	}
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(x->info.reason, two_ranks_lost);
	ck_assert(said(told, "rank 0: %u of incident %u", HBM_RECOVERY_ABORT,
		       (unsigned int)x->info.id));
	ck_assert(said(told, "rank 1: %u of incident %u", HBM_RECOVERY_ABORT,
		       (unsigned int)x->info.id));
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/* The cluster link's step for the job named @name in etcd. */
static void step_of(const char *name, const char *id, enum cl_step s, const char *opener)
{
	struct cl_action a = { .kind = CL_LOCAL, .step = s };

	snprintf(a.job, sizeof(a.job), "%s", name);
	snprintf(a.id, sizeof(a.id), "%s", id);
	snprintf(a.opener, sizeof(a.opener), "%s", opener);
	recovery_cluster_ops.step(d, &a);
}

/*
 * A keyed job is named in etcd by its key's digest too: its ranks on other
 * nodes, with the key, are one job with these; a job of that uid and name
 * without the key is another there as here, and the cluster's steps of one
 * reach its ranks only.
 */
START_TEST(a_keyed_job_across_nodes_is_its_holders)
{
	char keyed[HBM_CLUSTER_NAME_LEN], bare[HBM_CLUSTER_NAME_LEN];
	unsigned int uid = getuid();
	struct client *a, *b;

	setup_across_nodes();
	snprintf(keyed, sizeof(keyed), "%u-ebbdb4827a10c1ea.job", uid);
	snprintf(bare, sizeof(bare), "%u.job", uid);
	a = keyed_rank("job", job_key, 0, 0x1000, 0);
	b = rank("job", 0, 0x1000, 0);
	ck_assert(said(asked, "join %s {\"ranks\":[0],\"world_size\":4}\n", keyed));
	ck_assert(said(asked, "join %s {\"ranks\":[0],\"world_size\":4}\n", bare));

	/* another node's incident of the bare job: the keyed job's rank hears nothing */
	step_of(bare, "c1", CL_PAUSE, "there");
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(times(told, "of incident 1,"), 1);
	ck_assert_uint_eq(b->answer, 0);
	ck_assert(!strcmp(d->incidents[0].job.name, "job") && !keyed_job(&d->incidents[0].job));
	/* and the keyed job's, its rank only */
	step_of(keyed, "c2", CL_PAUSE, "there");
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(times(told, "of incident 2,"), 1);
	ck_assert(keyed_job(&d->incidents[1].job));
	answer(a, 2, HBM_ANSWER_PAUSED);
	ck_assert(said(asked, "done %s c2 pause ok\n", keyed));
	ck_assert_ptr_null(strstr(asked, "c1 pause ok"));	/* b never answered */

	/* a name of no job here: nothing here can do its step */
	asked[0] = 0;
	step_of("0-0000000000000000.job", "c3", CL_PAUSE, "there");
	ck_assert(said(asked, "done 0-0000000000000000.job c3 pause failed\n"));
	ck_assert_uint_eq(d->nr_incidents, 2);
	cleanup();
}
END_TEST

/*
 * An incident another node opened: the ranks here follow it, "@NODE" as its
 * device; a failure here aborts it everywhere, and drains nothing here.
 */
START_TEST(incident_of_another_node)
{
	unsigned int uid = getuid();
	struct client *a, *b;
	struct incident *x;

	setup_across_nodes();
	a = rank("job", 2, 0x1000, 0);
	b = rank("job", 3, 0x2000, 0);
	step("c7", CL_PAUSE, 0, "node1", "");
	ck_assert_uint_eq(d->nr_incidents, 1);
	x = &d->incidents[0];
	ck_assert_str_eq(x->info.device, "@node1");
	ck_assert_uint_eq(x->info.failed_rank, 0);
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_PAUSING);
	ck_assert(said(told, "rank 3: %u of incident 1, rank 0 lost", HBM_RECOVERY_PAUSE));
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(b, 1, HBM_ANSWER_PAUSED);
	ck_assert(said(asked, "done %u.job c7 pause ok\n", uid));
	step("c7", CL_ISOLATE, 0, "node1", "");	/* nothing of this node's to check */
	step("c7", CL_RESTORE, 0, "node1", "");
	answer_failed(b, 1);
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_ESCALATED);
	ck_assert(said(asked, "fail %u.job a rank failed to recover\n", uid));
	ck_assert(said(told, "rank 2: %u of incident 1", HBM_RECOVERY_ABORT));
	ck_assert_uint_eq(drained, 0);
	/* a step after this node's part ended: refused, no second incident */
	step("c7", CL_RESUME, 0, "node1", "");
	ck_assert(said(asked, "done %u.job c7 resume failed\n", uid));
	ck_assert_uint_eq(d->nr_incidents, 1);
	/* the abort coming back finds nothing open here: acknowledged */
	step("c7", CL_ABORT, 0, "node1", "node node2: a rank failed to recover");
	ck_assert(said(asked, "done %u.job c7 abort ok\n", uid));
	ck_assert_uint_eq(d->nr_incidents, 1);
	/* another one, aborted from elsewhere: its reason in the incident */
	step("c8", CL_PAUSE, 0, "node1", "");
	step("c8", CL_ABORT, 0, "node1", "the deadline of pause passed, waiting for node3");
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[1].info.reason, "the deadline of pause passed, waiting for node3");
	ck_assert_uint_eq(drained, 0);
	/* a step for a job without a rank here: it cannot be done here */
	asked[0] = 0;
	recovery_client_gone(d, a);
	recovery_client_gone(d, b);
	free(a);
	free(b);
	step("c9", CL_PAUSE, 0, "node1", "");
	ck_assert(said(asked, "done %u.job c9 pause failed\n", uid));
	ck_assert_uint_eq(d->nr_incidents, 2);
	cleanup();
}
END_TEST

/* The page here without a spare: the cluster's isolate step fails, everywhere. */
START_TEST(across_nodes_not_bypassed)
{
	struct client *a;

	setup_across_nodes();
	a = rank("job", 0, 0x1000, 0);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	bypassed = false;
	step("c2", CL_PAUSE, 0, "here", "");
	answer(a, 1, HBM_ANSWER_PAUSED);
	step("c2", CL_ISOLATE, 0, "here", "");
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert(said(asked, "fail %u.job the page has no spare: not bypassed\n",
		       (unsigned int)getuid()));
	ck_assert_ptr_null(strstr(asked, "isolate ok"));
	ck_assert_uint_eq(drained, 1);	/* the bad GPU's node is this one */
	cleanup();
}
END_TEST

/*
 * A step asked before this node did the one before it (another writer of
 * the incident's keys, or a forged acknowledgement): refused, the incident
 * failed everywhere; the ranks are never told to resume unrestored.
 */
START_TEST(across_nodes_step_skipped)
{
	struct client *a, *b;
	struct incident *x;

	setup_across_nodes();
	job_of_two(&a, &b);
	recovery_on_lost_data(d, "dev", 0x2000, 0x1000);
	x = &d->incidents[0];
	step("c3", CL_PAUSE, 1, "here", "");
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(b, 1, HBM_ANSWER_PAUSED);
	ck_assert(said(asked, " c3 pause ok\n"));
	told[0] = 0;
	step("c3", CL_RESUME, 1, "here", "");
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_ESCALATED);
	ck_assert(said(asked, "fail %u.job a step asked before this node did the one before it\n",
		       (unsigned int)getuid()));
	ck_assert(!said(told, "%u of incident", HBM_RECOVERY_RESUME));
	ck_assert(!said(asked, "resume ok"));
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/* RESTORE while the ranks here are still pausing: the same. */
START_TEST(across_nodes_step_skipped_while_pausing)
{
	setup_across_nodes();
	rank("job", 0, 0x1000, 0);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	step("c4", CL_PAUSE, 0, "here", "");
	told[0] = 0;
	step("c4", CL_RESTORE, 0, "here", "");
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert(!said(told, "%u of incident", HBM_RECOVERY_RESTORE));
	cleanup();
}
END_TEST

/*
 * Honest steps are never taken for skipped ones: ranks that paused before
 * etcd's PAUSE came, a step said again, each step after the one done; but
 * RESUME before the ranks here restored is refused.
 */
START_TEST(across_nodes_steps_in_order_taken)
{
	struct client *a;
	struct incident *x;

	setup_across_nodes();
	a = rank("job", 0, 0x1000, 0);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	x = &d->incidents[0];
	answer(a, x->info.id, HBM_ANSWER_PAUSED);	/* before etcd's pause */
	step("r1", CL_PAUSE, 0, "here", "");
	ck_assert_int_eq(x->cl_done, CL_PAUSE);
	step("r1", CL_PAUSE, 0, "here", "");		/* again */
	step("r1", CL_ISOLATE, 0, "here", "");
	ck_assert_int_eq(x->cl_done, CL_ISOLATE);
	step("r1", CL_RESTORE, 0, "here", "");
	step("r1", CL_RESUME, 0, "here", "");		/* the ranks not restored yet */
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_ESCALATED);
	cleanup();
}
END_TEST

/* Another node's incident run whole here, a step said again after it was done. */
START_TEST(across_nodes_remote_steps_taken)
{
	struct client *a;
	struct incident *x;

	setup_across_nodes();
	a = rank("job", 1, 0x1000, 0);
	step("r2", CL_PAUSE, 0, "other", "");
	x = &d->incidents[0];
	answer(a, x->info.id, HBM_ANSWER_PAUSED);
	step("r2", CL_ISOLATE, 0, "other", "");
	step("r2", CL_RESTORE, 0, "other", "");
	answer(a, x->info.id, HBM_ANSWER_RESTORED);
	step("r2", CL_RESTORE, 0, "other", "");		/* again, after */
	step("r2", CL_RESUME, 0, "other", "");
	ck_assert_uint_eq(x->info.state, HBM_INCIDENT_RESUMED);
	cleanup();
}
END_TEST

/* Another node's incident left open by a daemon that died: escalated, nothing drained. */
START_TEST(load_another_nodes_incident)
{
	uint8_t buf[HBM_INCIDENTS_HEADER + HBM_INCIDENTS_RECORD] = { 0 };
	struct hbm_ctl_incident x = { .id = 9, .length = HBM_CTL_WHOLE_DEVICE,
				      .state = HBM_INCIDENT_PAUSING };

	setup();
	strcpy(x.job, "job");
	strcpy(x.device, "@node1");
	x.at[HBM_INCIDENT_DETECTED] = x.at[HBM_INCIDENT_PAUSING] = 1;
	hbm_incidents_encode_header(buf, 1);
	hbm_incidents_encode_record(buf, 0, &x);
	ck_assert_int_eq(hbm_atomic_write(d->state_dir, "incidents", buf, sizeof(buf)), 0);
	recovery_load(d);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(drained, 0);
	cleanup();
}
END_TEST

/* With [Cluster], a job's name etcd cannot take is refused: its other nodes would not hear. */
START_TEST(cluster_name_refused)
{
	struct client c = { .fd = -1, .pidfd = -1 };
	struct hbm_ctl_rank reg = { .rank = 0, .world_size = 2, .device = "dev", .job = "exp:42" };

	setup();
	c.d = d;
	c.cred.uid = getuid();
	d->cluster = (struct cluster *)1;
	ck_assert_int_eq(recovery_register(d, &c, &reg, NULL), -EINVAL);
	d->cluster = NULL;	/* without it, any name of the protocol's */
	ck_assert_int_eq(recovery_register(d, &c, &reg, NULL), 0);
	cleanup();
}
END_TEST

/* A key's digest takes 17 characters of the name etcd has room for: a name one too long for it. */
START_TEST(cluster_name_of_a_keyed_job_refused)
{
	struct client c = { .fd = -1, .pidfd = -1 };
	struct hbm_ctl_rank reg = { .rank = 0, .world_size = 2, .device = "dev" };
	int room = HBM_CLUSTER_NAME_LEN - 2 - snprintf(NULL, 0, "%u", (unsigned int)getuid());

	setup();
	c.d = d;
	c.cred.uid = getuid();
	d->cluster = (struct cluster *)1;
	memset(reg.job, 'j', room - 16);
	ck_assert_int_eq(recovery_register(d, &c, &reg, job_key), -EINVAL);
	reg.job[room - 17] = 0;
	ck_assert_int_eq(recovery_register(d, &c, &reg, job_key), 0);
	d->ranks = NULL;
	c.is_rank = false;
	memset(reg.job, 'j', room);	/* without a key, the whole room */
	ck_assert_int_eq(recovery_register(d, &c, &reg, NULL), 0);
	d->ranks = NULL;
	d->cluster = NULL;
	cleanup();
}
END_TEST

/*
 * An incident of this node's that ended before it opened in etcd (its rank
 * died at once; or no etcd): a later incident of the job, another node's,
 * is still followed here.
 */
START_TEST(ended_before_open_is_no_poison)
{
	struct client *a, *b;

	setup_across_nodes();
	job_of_two(&a, &b);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	recovery_client_gone(d, a);	/* CUDA's ECC error ended it at once */
	free(a);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	step("", CL_ABORT, 0, "", "not opened across nodes: etcd unreachable");
	recovery_client_gone(d, b);
	free(b);
	/* the launcher restarts the job under its id; later node1 loses data */
	job_of_two(&a, &b);
	asked[0] = 0;
	step("c5", CL_PAUSE, 2, "node1", "");
	ck_assert_ptr_null(strstr(asked, "failed"));
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_PAUSING);
	cleanup();
}
END_TEST

/* A later step with nothing open here (a restart mid-incident): refused, nothing told. */
START_TEST(only_a_pause_starts_a_part)
{
	setup_across_nodes();
	rank("job", 0, 0x1000, 0);
	step("c1", CL_RESTORE, 0, "node1", "");
	ck_assert(said(asked, "done %u.job c1 restore failed\n", (unsigned int)getuid()));
	ck_assert_uint_eq(d->nr_incidents, 0);
	ck_assert_str_eq(told, "");
	cleanup();
}
END_TEST

/* A second error here while the job's incident aborts: its incident ends with it. */
START_TEST(second_error_during_abort_ends)
{
	char name[64];
	struct client *a;

	setup_across_nodes();
	a = rank("job", 0, 0x1000, 0);
	rank("job", 1, 0x2000, 0);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	step("A", CL_PAUSE, 0, "here", "");
	answer_failed(a, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	recovery_on_lost_data(d, "dev", 0x2000, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 2);
	snprintf(name, sizeof(name), "%u.job", (unsigned int)getuid());
	recovery_cluster_ops.closed(d, name, "A", false);
	ck_assert_uint_eq(d->incidents[1].info.state, HBM_INCIDENT_ESCALATED);
	cleanup();
}
END_TEST

/* A job all here recovers as without a cluster: nothing asked of it but its key. */
START_TEST(job_all_here_is_local)
{
	struct client *a, *b;

	setup();
	d->cluster = (struct cluster *)1;
	job_of_two(&a, &b);
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	ck_assert(!d->incidents[0].clustered);
	ck_assert_ptr_nonnull(d->incidents[0].timer);
	ck_assert_ptr_null(strstr(asked, "error"));
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(b, 1, HBM_ANSWER_PAUSED);
	answer(a, 1, HBM_ANSWER_RESTORED);
	answer(b, 1, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESUMED);
	ck_assert_ptr_null(strstr(asked, "done"));
	cleanup();
}
END_TEST

/*
 * A page of this node's lost under a rank whose job has another node's
 * incident open: with no spare, the node's memory, drained, though the
 * incident is not this node's (helper-189: a remote incident drained
 * nothing, whatever the cause); with a spare, or its table unread, the
 * job's alone: a peer's incident is no lever on this node's service.
 */
START_TEST(a_page_here_under_another_nodes_incident)
{
	setup_across_nodes();
	rank("job", 1, 0x1000, 0);
	step("r2", CL_PAUSE, 0, "other", "");
	ck_assert(d->incidents[0].remote);
	bypassed = _i != 0;
	if (_i == 2)
		table_error = -EIO;
	recovery_on_lost_data(d, "dev", 0x1000, 0x1000);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_uint_eq(drained, _i == 0);
	if (!_i) {
		ck_assert_str_eq(d->incidents[0].info.reason, "the page has no spare: not bypassed");
		ck_assert_str_eq(drained_for, "dev");	/* this node's, not "@other" */
	}
	cleanup();
}
END_TEST


Suite *recovery_suite(void)
{
	Suite *s = suite_create("recovery");
	TCase *tc = tcase_create("incidents");

	tcase_add_test(tc, more_open_than_kept);
	tcase_add_test(tc, eviction_spares_a_pending_kill);
	tcase_add_test(tc, two_ranks_one_device);
	tcase_add_test(tc, a_rank_on_no_device_is_refused);
	tcase_add_test(tc, one_save_per_turn_of_the_loop);
	tcase_add_test(tc, load_saves_its_escalations_at_once);
	/* one range; an error without an address; a job across nodes */
	tcase_add_loop_test(tc, one_loss_under_two_ranks_aborts_the_job, 0, 3);
	tcase_add_test(tc, a_key_makes_a_job_of_its_holders);
	tcase_add_test(tc, only_the_nodes_memory_drains);
	tcase_add_test(tc, load_refuses_another_version);
	tcase_add_test(tc, an_unread_incidents_file_is_not_saved_over);
	tcase_add_test(tc, an_incidents_fifo_is_set_aside);
	tcase_add_test(tc, an_incidents_link_that_loops_is_read_once_mended);
	tcase_add_test(tc, a_late_read_tells_no_live_rank);
	tcase_add_test(tc, ids_kept_in_order_when_the_clock_went_back);
	tcase_add_test(tc, a_late_read_moves_our_timers_with_ours);
	tcase_add_test(tc, load_escalates_untimed);
	tcase_add_test(tc, device_error_hits_every_rank_on_it);
	tcase_add_test(tc, device_error_restores_and_forgets);
	tcase_add_test(tc, restored_loss_is_no_news);
	tcase_add_test(tc, restored_retired_or_failed_alike);
	tcase_add_test(tc, spare_failed_loses_data_again);
	tcase_add_test(tc, failed_page_loses_data_on_its_frame);
	tcase_add_test(tc, cleared_page_loses_data_on_its_way_home);
	tcase_add_test(tc, one_loss_in_two_ranges_is_one_error);
	tcase_add_test(tc, cleared_page_lost_needs_no_bypass);
	tcase_add_loop_test(tc, page_within_whole_device_incident, 0, 2);
	tcase_add_test(tc, page_while_pausing_is_taken_in_any_time);
	tcase_add_test(tc, reports_heard_while_pausing_count_once);
	tcase_add_test(tc, one_event_in_two_ranges_is_one_report);
	tcase_add_test(tc, a_rank_of_another_world_is_refused);
	tcase_add_loop_test(tc, whole_device_loss_while_restoring, 0, 5);
	tcase_add_loop_test(tc, one_loss_under_two_ranks_escalates, 0, 2);
	tcase_add_loop_test(tc, two_ranks_hit_still_drain_for_the_memory, 0, 2);
	/* the failed rank fails, leaves; the other fails; the page bypassed; the table unread */
	tcase_add_loop_test(tc, no_spare_drains_whoever_ends_the_incident, 0, 6);
	tcase_add_test(tc, no_spare_drains_when_other_nodes_abort);
	tcase_add_test(tc, unbypassed_page_within_whole_device_incident_escalates);
	tcase_add_test(tc, cleared_without_memory_reports_nothing_twice);
	tcase_add_test(tc, restored_part_of_an_extent_only_is_known);
	tcase_add_test(tc, job_across_nodes);
	tcase_add_test(tc, cluster_name_of_a_keyed_job_refused);
	tcase_add_test(tc, a_keyed_job_across_nodes_is_its_holders);
	tcase_add_test(tc, incident_of_another_node);
	tcase_add_test(tc, across_nodes_not_bypassed);
	tcase_add_test(tc, across_nodes_step_skipped);
	tcase_add_test(tc, across_nodes_step_skipped_while_pausing);
	tcase_add_test(tc, across_nodes_steps_in_order_taken);
	tcase_add_test(tc, across_nodes_remote_steps_taken);
	tcase_add_test(tc, job_all_here_is_local);
	tcase_add_test(tc, load_another_nodes_incident);
	tcase_add_test(tc, cluster_name_refused);
	tcase_add_test(tc, ended_before_open_is_no_poison);
	tcase_add_test(tc, only_a_pause_starts_a_part);
	tcase_add_test(tc, second_error_during_abort_ends);
	tcase_add_loop_test(tc, a_page_here_under_another_nodes_incident, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
