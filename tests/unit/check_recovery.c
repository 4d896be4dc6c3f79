// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the incident table of hbmguardd (daemon/recovery.c): its
 * limits, its eviction, one incident per job and error, and a damaged
 * incidents file at start.  The daemon's other files are stubbed.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hbmguardd.h"
#include "incidents.h"
#include "state.h"
#include "unit.h"

void control_send(struct client *c, uint16_t type, const void *body)
{
	(void)c;
	(void)type;
	(void)body;
}

static bool bypassed = true;	/* what the kernel's table says */

bool daemon_is_bypassed(struct daemon *d, const char *identity, uint64_t offset,
			uint64_t length)
{
	(void)d;
	(void)identity;
	(void)offset;
	(void)length;
	return bypassed;
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

void daemon_save_failed(struct daemon *d)
{
	(void)d;
}

void daemon_incident_aborted(struct daemon *d, const struct hbm_ctl_incident *x)
{
	(void)d;
	(void)x;
}

static struct daemon *d;
static char dir[64];

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
	freopen("/dev/null", "w", stderr);	/* the journal lines */
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

/* A rank of job @job on device "dev", its pages [@offset, +4K), of @pid. */
static struct client *rank(const char *job, uint32_t r, uint64_t offset, pid_t pid)
{
	struct client *c = calloc(1, sizeof(*c));
	struct hbm_ctl_rank reg = { .rank = r, .world_size = 2, .nr_ranges = 1,
				    .ranges = { { offset, 0x1000 } } };

	c->d = d;
	c->fd = -1;
	c->cred.pid = pid;
	c->cred.uid = getuid();
	c->pidfd = pid ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	snprintf(reg.job, sizeof(reg.job), "%s", job);
	strcpy(reg.device, "dev");
	ck_assert_int_eq(recovery_register(d, c, &reg), 0);
	return c;
}

static void answer_failed(struct client *c, uint64_t incident)
{
	struct hbm_ctl_answer a = { .incident = incident, .answer = HBM_ANSWER_FAILED };

	ck_assert_int_eq(recovery_answer(d, c, &a), 0);
}

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

/* Two ranks of a job on one device, a second error: one escalation. */
START_TEST(two_ranks_one_device)
{
	setup();
	rank("job", 0, 0, 0);
	rank("job", 1, 0, 0);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(recovery_open_incidents(d), 1);
	recovery_on_lost_data(d, "dev", 0, 0x1000);
	ck_assert_uint_eq(d->nr_incidents, 1);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_ESCALATED);
	ck_assert_str_eq(d->incidents[0].info.reason, "a second error during recovery");
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
START_TEST(load_escalates_untimed)
{
	uint8_t buf[HBM_INCIDENTS_HEADER + HBM_INCIDENTS_RECORD] = { 0 };
	struct hbm_ctl_incident x = { .id = 7, .length = 0x1000,
				      .state = HBM_INCIDENT_PAUSING };
	size_t st, o, b;

	setup();
	strcpy(x.job, "job");
	strcpy(x.device, "dev");
	x.at[HBM_INCIDENT_DETECTED] = 1000000;
	x.at[HBM_INCIDENT_PAUSING] = 1000100;
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

static void answer(struct client *c, uint64_t incident, uint32_t a)
{
	struct hbm_ctl_answer x = { .incident = incident, .answer = a };

	ck_assert_int_eq(recovery_answer(d, c, &x), 0);
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

/*
 * Its bypass is the driver's: the restore goes on without the kernel's
 * table; and the device is not seen for good: a page's UE later is news.
 */
START_TEST(device_error_restores_and_forgets)
{
	struct client *a, *b;
	struct hbm_fact page = { .type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL,
				 .event = HBMGUARD_EVENT_RETIRED, .source = HBMGUARD_SOURCE_UE,
				 .dev = { .id = 1, .identity = "dev" },
				 .offset = 0x1000, .length = 0x1000, .count = 1 };

	setup();
	bypassed = false;
	a = rank("job", 0, 0x1000, 0);
	b = rank("job", 1, 0x2000, 0);
	xid_fact(95, HBM_SEVERITY_UE, "dev");
	ck_assert_uint_eq(d->nr_incidents, 1);
	answer(a, 1, HBM_ANSWER_PAUSED);
	answer(b, 1, HBM_ANSWER_PAUSED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESTORING);
	answer(a, 1, HBM_ANSWER_RESTORED);
	answer(b, 1, HBM_ANSWER_RESTORED);
	ck_assert_uint_eq(d->incidents[0].info.state, HBM_INCIDENT_RESUMED);
	bypassed = true;
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 2);
	ck_assert_uint_eq(d->incidents[1].info.offset, 0x1000);
	ck_assert_uint_eq(d->incidents[1].info.failed_rank, 0);
	cleanup();
}
END_TEST

/*
 * A new table (the module came back) read with a UE page in it: news when
 * it is, no incident when the store restored it from the state file just
 * before (KNOWN: its source says UE, as it did before the reload).
 */
START_TEST(restored_loss_is_no_news)
{
	struct hbm_fact seen = { .type = HBM_FACT_DEVICE_SEEN, .origin = HBM_FROM_KERNEL,
				 .sync = HBM_SYNC_ADDED, .dev = { .id = 1, .identity = "dev" } };
	struct hbm_fact page = { .type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL,
				 .flags = HBM_FACT_UNHEARD | HBM_FACT_KNOWN, .sync = HBM_SYNC_ADDED,
				 .state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE,
				 .dev = { .id = 1, .identity = "dev" },
				 .offset = 0x1000, .length = 0x1000, .count = 1 };

	setup();
	rank("job", 0, 0x1000, 0);
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 0);
	page.flags = HBM_FACT_UNHEARD;	/* the same page, not restored: a loss unheard */
	page.offset = 0x1000;
	recovery_fact(d, &seen);
	recovery_fact(d, &page);
	ck_assert_uint_eq(d->nr_incidents, 1);
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
	tcase_add_test(tc, load_refuses_another_version);
	tcase_add_test(tc, load_escalates_untimed);
	tcase_add_test(tc, device_error_hits_every_rank_on_it);
	tcase_add_test(tc, device_error_restores_and_forgets);
	tcase_add_test(tc, restored_loss_is_no_news);
	suite_add_tcase(s, tc);
	return s;
}
