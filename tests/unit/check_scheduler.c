// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler sink (daemon/scheduler.c) without Slurm: what goes into a
 * reason, what sinfo's answer makes it do, which hook it refuses, and its
 * causes: kept across a restart, cleared by undrain, a failure retried.
 * Slurm itself is tier 3's (tests/system/guest.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/core.h"	/* "core.h" alone is the module's table */
#include "daemon.h"
#include "scheduler.h"
#include "state.h"
#include "unit.h"

START_TEST(clean)
{
	char out[16], big[64];

	hbm_sched_clean(big, sizeof(big), "  GPU\n0\x1b[31m \"x\"\t\xc3\xa9 ");
	ck_assert_str_eq(big, "GPU0[31m 'x'??");
	hbm_sched_clean(out, sizeof(out), "0123456789abcdefghij");
	ck_assert_str_eq(out, "0123456789abcde");
	hbm_sched_clean(out, sizeof(out), "\r\n\x7f");
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(reason)
{
	struct sched_cause c[2] = {
		{ .cause = HBM_DRAIN_RMA, .identity = "hbm:hbm0", .detail = "bad pages" },
		/* NVML's name is the model, alike for a node's eight GPUs */
		{ .cause = HBM_DRAIN_ABORT, .identity = "GPU-5af1e000-0000-4000-8000-000000000001",
		  .pci = "0000:17:00.0", .name = "NVIDIA H100 80GB HBM3",
		  .detail = "a rank failed to recover" },
	};
	char r[HBM_SCHED_REASON_LEN], small[33];

	hbm_sched_reason(r, sizeof(r), c, 1);
	ck_assert_str_eq(r, "hbmguard: hbm:hbm0 needs RMA: bad pages");
	hbm_sched_reason(r, sizeof(r), c, 2);
	ck_assert_str_eq(r, "hbmguard: NVIDIA H100 80GB HBM3 0000:17:00.0 recovery aborted: "
			 "a rank failed to recover (+1 more)");
	/* no bus id: the identity tells it apart */
	strcpy(c[1].pci, "");
	hbm_sched_reason(r, sizeof(r), c, 2);
	ck_assert_str_eq(r, "hbmguard: NVIDIA H100 80GB HBM3 GPU-5af1e000-0000-4000-8000-"
			 "000000000001 recovery aborted: a rank failed to recover (+1 more)");
	/* bounded, and never ending in a blank */
	hbm_sched_reason(small, sizeof(small), c, 2);
	ck_assert_str_eq(small, "hbmguard: NVIDIA H100 80GB HBM3");
	strcpy(c[0].detail, "");
	hbm_sched_reason(r, sizeof(r), c, 1);
	ck_assert_str_eq(r, "hbmguard: hbm:hbm0 needs RMA");
}
END_TEST

/*
 * sinfo --Format=StateComplete:0|,Reason:0: whose reason it is decides,
 * and for a resume, the state too.
 */
static enum hbm_sched_verdict verdict(const char *sinfo, uint32_t want, const char *reason,
				      const char *set, char *theirs)
{
	return hbm_sched_verdict(sinfo, want, reason, set, theirs, 64);
}

START_TEST(verdict_drain)
{
	const char *ours = "hbmguard: hbm:hbm0 needs RMA";
	char theirs[64];

	ck_assert_int_eq(verdict("idle|none\n", HBM_DRAIN_WANT_DRAIN, ours, "", theirs),
			 HBM_SCHED_ACT);
	ck_assert_int_eq(verdict("idle+drain|hbmguard: hbm:hbm0 needs RMA\n", HBM_DRAIN_WANT_DRAIN,
				 ours, "", theirs), HBM_SCHED_AS_WANTED);
	ck_assert_int_eq(verdict("mixed+drain|hbmguard: hbm:hbm0 needs RMA\n",
				 HBM_DRAIN_WANT_DRAIN, ours, ours, theirs), HBM_SCHED_AS_WANTED);
	/* our reason, but no longer drained (back in service by Slurm): again */
	ck_assert_int_eq(verdict("idle|hbmguard: hbm:hbm0 needs RMA\n", HBM_DRAIN_WANT_DRAIN, ours,
				 ours, theirs), HBM_SCHED_ACT);
	ck_assert_int_eq(verdict("idle+draining|hbmguard: hbm:hbm0 needs RMA\n",
				 HBM_DRAIN_WANT_DRAIN, ours, ours, theirs), HBM_SCHED_ACT);
	/* ours, older: updated */
	ck_assert_int_eq(verdict("idle+drain|hbmguard: GPU-1 needs a GPU reset\n",
				 HBM_DRAIN_WANT_DRAIN, ours, "", theirs), HBM_SCHED_ACT);
	/* Slurm's "Not responding" is replaced, as slurmctld's _drain_node() does */
	ck_assert_int_eq(verdict("down+not_responding|Not responding\n", HBM_DRAIN_WANT_DRAIN,
				 ours, "", theirs), HBM_SCHED_ACT);
	/* an admin's: never overwritten */
	ck_assert_int_eq(verdict("idle+drain|disk swap\n", HBM_DRAIN_WANT_DRAIN, ours, "", theirs),
			 HBM_SCHED_NOT_OURS);
	ck_assert_str_eq(theirs, "disk swap");
	ck_assert_int_eq(verdict("idle+drain|Not respondin\n", HBM_DRAIN_WANT_DRAIN, ours, "",
				 theirs), HBM_SCHED_NOT_OURS);
	/* a node in two partitions: two lines, the first read */
	ck_assert_int_eq(verdict("idle+drain|maint\nidle+drain|maint\n", HBM_DRAIN_WANT_DRAIN,
				 ours, "", theirs), HBM_SCHED_NOT_OURS);
	ck_assert_str_eq(theirs, "maint");
	/* no line: a node sinfo does not know */
	ck_assert_int_eq(verdict("", HBM_DRAIN_WANT_DRAIN, ours, "", theirs), HBM_SCHED_UNKNOWN);
}
END_TEST

/* Resumed only if drained or draining, nothing else, with the reason last set. */
START_TEST(verdict_resume)
{
	const char *set = "hbmguard: GPU-1 needs a GPU reset";
	const struct {
		const char *sinfo;
		enum hbm_sched_verdict v;
	} cases[] = {
		{ "idle|none\n", HBM_SCHED_AS_WANTED },
		{ "idle+drain|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_ACT },
		{ "mixed+drain|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_ACT },
		{ "allocated+completing+drain|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_ACT },
		/* power-cycled for its GPU: down, still drained, our reason kept */
		{ "down+drain|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_ACT },
		/* flags that last (a reservation, a maintenance window) keep no node out */
		{ "idle+drain+reserved|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_ACT },
		{ "idle+drain+maintenance|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_ACT },
		/* Slurm's own trouble, our reason kept: failed, not responding, rebooting */
		{ "down+drain+not_responding|hbmguard: GPU-1 needs a GPU reset\n",
		  HBM_SCHED_NOT_OURS },
		{ "idle+drain+fail|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_NOT_OURS },
		{ "idle+drain+not_responding|hbmguard: GPU-1 needs a GPU reset\n",
		  HBM_SCHED_NOT_OURS },
		{ "idle+drain+reboot_requested|hbmguard: GPU-1 needs a GPU reset\n",
		  HBM_SCHED_NOT_OURS },
		{ "idle+maintenance|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_NOT_OURS },
		{ "idle|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_NOT_OURS },
		/* a reason of ours, but not the one last set: another's copy */
		{ "idle+drain|hbmguard: x\n", HBM_SCHED_NOT_OURS },
		{ "idle+drain|hbmguard: GPU-1 needs a GPU reset (+1 more)\n", HBM_SCHED_NOT_OURS },
		{ "idle+drain|disk swap\n", HBM_SCHED_NOT_OURS },
		{ "down+not_responding|Not responding\n", HBM_SCHED_NOT_OURS },
		{ "drained|hbmguard: GPU-1 needs a GPU reset\n", HBM_SCHED_NOT_OURS },
		{ "", HBM_SCHED_UNKNOWN },
	};
	char theirs[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(verdict(cases[i].sinfo, HBM_DRAIN_WANT_RESUME, "", set, theirs) ==
			      cases[i].v, "%s", cases[i].sinfo);
	/* nothing set (a state file from before it was kept): nothing resumed */
	ck_assert_int_eq(verdict("idle+drain|hbmguard: GPU-1 needs a GPU reset\n",
				 HBM_DRAIN_WANT_RESUME, "", "", theirs), HBM_SCHED_NOT_OURS);
	ck_assert_int_eq(verdict("idle+drain|maint\n", HBM_DRAIN_WANT_RESUME, "", set, theirs),
			 HBM_SCHED_NOT_OURS);
	ck_assert_str_eq(theirs, "maint");
}
END_TEST

static char dir[64];

static void make_dir(void)
{
	strcpy(dir, "/tmp/hbm-sched-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A hook anyone but root could change would run as root: refused, said why. */
START_TEST(hook_checks)
{
	char path[128], link[128], why[256];
	int fd;

	make_dir();
	snprintf(path, sizeof(path), "%s/hook", dir);
	/* walked from /: the first component missing is said */
	ck_assert_int_eq(hbm_sched_hook_ok("/nonexistent/hook", why, sizeof(why)), -ENOENT);
	ck_assert_str_eq(why, "/nonexistent: No such file or directory");
	if (!getuid()) {
		ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), -ENOENT);
		ck_assert_str_eq(why + strlen(dir), "/hook: No such file or directory");
	}
	fd = open(path, O_WRONLY | O_CREAT, 0755);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(hbm_sched_hook_ok(dir, why, sizeof(why)), -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "is not a regular file"));
	if (getuid()) {
		/* not root's: refused for that before its mode is looked at */
		chmod(path, 0777);
		ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), -EPERM);
		ck_assert_ptr_nonnull(strstr(why, "is not owned by root"));
		/* root's files, then: a mode refused, and one taken */
		ck_assert_int_eq(hbm_sched_hook_ok("/etc/passwd", why, sizeof(why)), -EPERM);
		ck_assert_str_eq(why, "/etc/passwd is not executable");
		ck_assert_int_eq(hbm_sched_hook_ok("/usr/bin/env", why, sizeof(why)), 0);
		remove_dir();
		return;
	}
	chmod(path, 0777);
	ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "is writable by anyone"));
	chmod(path, 0775);
	ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "is writable by its group"));
	chmod(path, 0644);
	ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), -EPERM);
	ck_assert_ptr_nonnull(strstr(why, "is not executable"));
	chmod(path, 0755);
	chmod(dir, 0777);
	ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), -EPERM);
	ck_assert_str_eq(why + strlen(dir), " is writable by anyone");
	/* sticky: no one else can replace root's hook in it */
	chmod(dir, 01777);
	ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), 0);
	chmod(dir, 0700);
	ck_assert_int_eq(hbm_sched_hook_ok(path, why, sizeof(why)), 0);
	/* a symbolic link, at the end or above: not followed */
	snprintf(link, sizeof(link), "%s/link", dir);
	ck_assert_int_eq(symlink(path, link), 0);
	ck_assert_int_eq(hbm_sched_hook_ok(link, why, sizeof(why)), -EPERM);
	ck_assert_str_eq(why + strlen(dir), "/link is a symbolic link");
	unlink(link);
	ck_assert_int_eq(symlink(dir, link), 0);
	strcat(link, "/hook");
	ck_assert_int_eq(hbm_sched_hook_ok(link, why, sizeof(why)), -EPERM);
	ck_assert_str_eq(why + strlen(dir), "/link is a symbolic link");
	remove_dir();
}
END_TEST

static struct hbm_fact health(const char *identity, uint32_t state)
{
	struct hbm_fact f = { .type = HBM_FACT_HEALTH, .origin = HBM_FROM_KERNEL,
			      .event = HBMGUARD_EVENT_HEALTH, .state = state };

	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", identity);
	return f;
}

static void daemon_for(struct daemon *d)
{
	memset(d, 0, sizeof(*d));
	hbm_config_defaults(&d->cfg);
	d->state_dir = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(d->state_dir, 0);
	ck_assert_int_ge(sd_event_new(&d->loop), 0);
}

/* A daemon started anew, its sink reading what the last one left. */
static void sched_restarted(struct daemon *d, struct hbm_sched *s)
{
	daemon_for(d);
	memset(s, 0, sizeof(*s));
	sched_init(s, d);
}

static void daemon_done(struct daemon *d, struct hbm_sched *s)
{
	sched_stop(s);
	sd_event_unref(d->loop);
	close(d->state_dir);
}

static int never(sd_event_source *src, uint64_t usec, void *arg)
{
	(void)src;
	(void)usec;
	(void)arg;
	ck_abort_msg("a re-check of the old settings ran");
	return 0;
}

/*
 * A reload drops the re-check armed at the old RecheckInterval=: the
 * query the reload starts arms one at the new.
 */
START_TEST(reload_drops_the_old_recheck)
{
	static struct daemon d;
	static struct hbm_sched s;

	make_dir();
	daemon_for(&d);
	d.cfg.sched.slurm = false;
	sched_init(&s, &d);
	sched_start(&s);
	ck_assert_int_ge(sd_event_add_time_relative(d.loop, &s.recheck, CLOCK_MONOTONIC,
						    3600 * 1000000ULL, 0, never, &s), 0);
	d.cfg.sched.recheck = 10;
	sched_reconfigure(&s);
	ck_assert_ptr_null(s.recheck);
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

/*
 * As root (the hook must be root's): a #! script run from the descriptor
 * checked, told in its environment, and past Timeout= killed with its own
 * children.
 */
START_TEST(hook_runs_and_is_killed_whole)
{
	static struct daemon d;
	static struct hbm_sched s;
	char path[128], file[128], buf[4096], stat[64];
	struct hbm_fact f;
	FILE *fp;
	long child = 0;
	int i;

	if (getuid())
		return;
	make_dir();
	snprintf(path, sizeof(path), "%s/hook", dir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "#!/bin/sh\nexec >/dev/null 2>&1\nenv >%s/env\nsleep 1000 &\n"
		"echo $! >%s/child\nsleep 1000\n",
		dir, dir);
	fclose(fp);
	chmod(path, 0755);
	daemon_for(&d);
	d.cfg.sched.slurm = false;
	d.cfg.sched.timeout = 1;
	strcpy(d.cfg.sched.hook, path);
	sched_init(&s, &d);
	sched_start(&s);
	f = health("GPU-5af1e000-0000-4000-8000-000000000001", HBMGUARD_HEALTH_RMA);
	strcpy(f.dev.name, "NVIDIA H100 80GB HBM3");
	strcpy(f.dev.pci, "0000:17:00.0");
	sched_fact(&s, &f);
	ck_assert_int_gt(s.hook.pid, 0);
	for (i = 0; i < 30 && s.hook.progress != HBM_DRAIN_RETRYING; i++)
		ck_assert_int_ge(sd_event_run(d.loop, 1000000), 0);
	ck_assert_uint_eq(s.hook.progress, HBM_DRAIN_RETRYING);
	ck_assert_str_eq(s.hook.error, "the hook killed after 1s");
	snprintf(file, sizeof(file), "%s/env", dir);
	fp = fopen(file, "r");
	ck_assert_ptr_nonnull(fp);
	buf[fread(buf, 1, sizeof(buf) - 1, fp)] = 0;
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "HBMGUARD_ACTION=drain\n"));
	ck_assert_ptr_nonnull(strstr(buf, "HBMGUARD_DEVICE=NVIDIA H100 80GB HBM3 0000:17:00.0\n"));
	ck_assert_ptr_nonnull(strstr(buf, "HBMGUARD_PCI_BUS_ID=0000:17:00.0\n"));
	snprintf(file, sizeof(file), "%s/child", dir);
	fp = fopen(file, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fscanf(fp, "%ld", &child), 1);
	fclose(fp);
	/*
	 * The hook's own child: gone, or a zombie not yet reaped by init, once
	 * the SIGKILL sent to its group has landed (on a loaded machine it may
	 * still be running for a moment: up to 10 s).
	 */
	snprintf(file, sizeof(file), "/proc/%ld/stat", child);
	for (i = 0; i < 1000; i++) {
		fp = fopen(file, "r");
		if (!fp)
			break;
		ck_assert_int_eq(fscanf(fp, "%*d %63s %63s", buf, stat), 2);
		fclose(fp);
		if (!strcmp(stat, "Z"))
			break;
		usleep(10000);
	}
	if (fp)
		ck_assert_str_eq(stat, "Z");
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

/*
 * Causes: one each, the same health twice is one; OK does not clear them;
 * a hook that cannot run is retried, said once; the state kept across a
 * restart, and undrain's resume too.
 */
START_TEST(causes_kept_and_cleared)
{
	static struct daemon d;
	static struct hbm_sched s;
	struct hbm_ctl_incident x = { .id = 3, .device = "hbm:hbm1", .reason = "a rank failed" };
	struct hbm_ctl_drain dr;
	struct hbm_fact f;

	make_dir();
	daemon_for(&d);
	/* Neither Slurm= nor Hook=: off, and nothing kept for later. */
	d.cfg.sched.slurm = false;
	sched_init(&s, &d);
	f = health("hbm:hbm0", HBMGUARD_HEALTH_RMA);
	sched_fact(&s, &f);
	d.sched = &s;
	sched_aborted(&d, &x);
	ck_assert_uint_eq(s.nr, 0);
	strcpy(d.cfg.sched.hook, "/nonexistent/hook");
	sched_start(&s);
	ck_assert_int_eq(sched_get(&s, 0, &dr), 0);
	ck_assert_uint_eq(dr.total, 0);
	ck_assert_uint_eq(dr.want, HBM_DRAIN_WANT_NONE);
	ck_assert_uint_eq(dr.slurm, HBM_DRAIN_OFF);
	ck_assert_int_eq(sched_get(&s, 1, &dr), -ENOENT);
	ck_assert_int_eq(sched_undrain(&s, &dr), -EALREADY);

	f = health("hbm:hbm0", HBMGUARD_HEALTH_DEGRADED);
	sched_fact(&s, &f);
	ck_assert_uint_eq(s.nr, 0);
	/* a health read again, unchanged (amdgpu's counts with it): no cause */
	f = health("hbm:hbm0", HBMGUARD_HEALTH_RMA);
	f.aux = HBMGUARD_HEALTH_RMA;
	sched_fact(&s, &f);
	ck_assert_uint_eq(s.nr, 0);
	f = health("hbm:hbm0", HBMGUARD_HEALTH_RMA);
	sched_fact(&s, &f);
	sched_fact(&s, &f);
	f = health("hbm:hbm0", HBMGUARD_HEALTH_OK);
	sched_fact(&s, &f);
	f = health("GPU-\x1b]0;x\a", HBMGUARD_HEALTH_RESET_REQUIRED);
	strcpy(f.text, "row remapping pending");
	sched_fact(&s, &f);
	d.sched = &s;
	sched_aborted(&d, &x);
	ck_assert_uint_eq(s.nr, 3);
	ck_assert_int_eq(sched_get(&s, 1, &dr), 0);
	ck_assert_uint_eq(dr.total, 3);
	ck_assert_uint_eq(dr.cause, HBM_DRAIN_RESET);
	ck_assert_str_eq(dr.identity, "GPU-]0;x");
	ck_assert_str_eq(dr.detail, "row remapping pending");
	ck_assert_str_eq(dr.reason, "hbmguard: hbm:hbm1 recovery aborted: a rank failed (+2 more)");
	ck_assert_uint_eq(dr.want, HBM_DRAIN_WANT_DRAIN);
	/* the hook could not run: a retry waits, a second from now */
	ck_assert_uint_eq(dr.hook, HBM_DRAIN_RETRYING);
	ck_assert_ptr_nonnull(strstr(dr.error, "Hook= refused: /nonexistent: No such file"));
	ck_assert_uint_eq(dr.retry_in, 1);
	ck_assert_uint_eq(s.hook.backoff, 1);
	daemon_done(&d, &s);

	/* a restart: the same causes, the node still to be drained */
	sched_restarted(&d, &s);
	ck_assert_uint_eq(s.nr, 3);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_DRAIN);
	ck_assert_str_eq(s.causes[0].identity, "hbm:hbm0");
	ck_assert_uint_eq(s.causes[0].cause, HBM_DRAIN_RMA);
	ck_assert_str_eq(s.causes[2].detail, "a rank failed");
	ck_assert_str_eq(s.reason, "hbmguard: hbm:hbm1 recovery aborted: a rank failed (+2 more)");
	ck_assert_int_eq(sched_undrain(&s, &dr), 0);
	ck_assert_uint_eq(dr.total, 0);
	ck_assert_uint_eq(dr.want, HBM_DRAIN_WANT_RESUME);
	ck_assert_str_eq(dr.reason, "");
	daemon_done(&d, &s);

	/* the resume survives a restart too, and a damaged file is set aside */
	sched_restarted(&d, &s);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_RESUME);
	ck_assert_uint_eq(s.nr, 0);
	daemon_done(&d, &s);
	{
		const char *bad = "hbmguard-drain 1\nwant drain\ncause\trma\tx\n";
		int fd = open(dir, O_RDONLY | O_DIRECTORY);

		ck_assert_int_eq(hbm_atomic_write(fd, "drain", bad, strlen(bad)), 0);
		close(fd);
	}
	sched_restarted(&d, &s);
	ck_assert_uint_eq(s.nr, 0);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_DRAIN);	/* no cause read: said, not resumed */
	ck_assert_str_eq(s.reason, "hbmguard: its drain state was damaged: hbmctl drain");
	daemon_done(&d, &s);
	/* ... and what was recovered saved: the next start finds it whole */
	sched_restarted(&d, &s);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_DRAIN);
	ck_assert_str_eq(s.reason, "hbmguard: its drain state was damaged: hbmctl drain");
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

/* What is under the drain file's name: S_IFREG, S_IFLNK, ... */
static mode_t drain_file_type(void)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/drain", dir);
	ck_assert_int_eq(lstat(path, &st), 0);
	return st.st_mode & S_IFMT;
}

/*
 * A daemon started with its drain file a link to a disk not mounted yet,
 * a hook that cannot run (the sink on, its runs retried).
 */
static void drain_behind_a_dangling_link(struct daemon *d, struct hbm_sched *s)
{
	char path[128];

	make_dir();
	snprintf(path, sizeof(path), "%s/drain", dir);
	ck_assert_int_eq(symlink("away/drain", path), 0);
	daemon_for(d);
	d->cfg.sched.slurm = false;
	strcpy(d->cfg.sched.hook, "/nonexistent/hook");
	sched_init(s, d);
}

/* The disk there: the file the link names holds @kept. */
static void disk_mounted(struct daemon *d, const char *kept)
{
	int away;

	ck_assert_int_eq(mkdirat(d->state_dir, "away", 0700), 0);
	away = openat(d->state_dir, "away", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(away, 0);
	ck_assert_int_eq(hbm_atomic_write(away, "drain", kept, strlen(kept)), 0);
	close(away);
}

/*
 * A drain file there that cannot be read (a link to a disk not mounted
 * yet) is not saved over, and says so; the node is neither drained nor
 * resumed for it, but is for a cause heard meanwhile.  Once it reads, its
 * causes come first, ours it lacks after, the reason Slurm has of ours is
 * its, and the whole is saved.  Before the fix the first cause's save
 * renamed a file without the old causes over the link.
 */
START_TEST(a_drain_file_not_read_is_not_saved_over)
{
	static struct daemon d;
	static struct hbm_sched s;
	const char *kept = "hbmguard-drain 1\nwant drain\nhook done\nset\thbmguard: GPU-a needs a reset\n"
			   "cause\treset\t100\tGPU-a\t0000:01:00.0\tH100\tremap pending\n"
			   "cause\trma\t200\thbm:hbm0\t\t\tfrom before\n";
	struct hbm_ctl_drain dr;
	struct hbm_fact f;

	drain_behind_a_dangling_link(&d, &s);
	ck_assert(s.unread);
	ck_assert_int_eq(d.drain_error, -ENOLINK);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_NONE);
	sched_start(&s);
	ck_assert_int_eq(sched_get(&s, 0, &dr), 0);
	ck_assert_str_eq(dr.error, "the drain file not read (a link to a file that is not there): its causes "
			 "unknown, read again at each retry");
	f = health("hbm:hbm0", HBMGUARD_HEALTH_RMA);
	sched_fact(&s, &f);
	f = health("hbm:hbm1", HBMGUARD_HEALTH_RMA);
	sched_fact(&s, &f);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_DRAIN);
	ck_assert_uint_eq(drain_file_type(), S_IFLNK);
	sched_save_again(&s);		/* still nothing there */
	ck_assert(s.unread);
	ck_assert_uint_eq(drain_file_type(), S_IFLNK);

	disk_mounted(&d, kept);
	sched_save_again(&s);
	ck_assert(!s.unread);
	ck_assert_int_eq(d.drain_error, 0);
	ck_assert_uint_eq(s.nr, 3);
	ck_assert_str_eq(s.causes[0].identity, "GPU-a");
	ck_assert_str_eq(s.causes[1].detail, "from before");	/* the same cause: the file's */
	ck_assert_str_eq(s.causes[2].identity, "hbm:hbm1");
	ck_assert_str_eq(s.set, "hbmguard: GPU-a needs a reset");
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_DRAIN);
	ck_assert_uint_eq(drain_file_type(), S_IFREG);
	/* a new state: the hook tried for it (it cannot run: retried) */
	ck_assert_uint_eq(s.hook.gen, s.gen);
	ck_assert_uint_ne(s.hook.done, s.gen);
	daemon_done(&d, &s);

	sched_restarted(&d, &s);
	ck_assert_uint_eq(s.nr, 3);
	ck_assert_str_eq(s.causes[2].identity, "hbm:hbm1");
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

/*
 * Read late with nothing of ours since the start: the state is the file's,
 * which the hook was told of before the restart: not told again.
 */
START_TEST(a_drain_file_read_late_as_it_was)
{
	static struct daemon d;
	static struct hbm_sched s;
	const char *kept = "hbmguard-drain 1\nwant drain\nhook done\n"
			   "cause\trma\t200\thbm:hbm0\t\t\tfrom before\n";

	drain_behind_a_dangling_link(&d, &s);
	sched_start(&s);
	ck_assert(s.unread);
	disk_mounted(&d, kept);
	sched_save_again(&s);
	ck_assert(!s.unread);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_DRAIN);
	ck_assert_uint_eq(s.hook.done, s.gen);
	ck_assert_uint_eq(s.hook.progress, HBM_DRAIN_DONE);
	ck_assert_str_eq(s.hook.error, "");
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

/* A link that loops is mended by a person: held, read once it is. */
START_TEST(a_drain_link_that_loops_is_read_once_mended)
{
	static struct daemon d;
	static struct hbm_sched s;
	char path[128];

	make_dir();
	snprintf(path, sizeof(path), "%s/drain", dir);
	ck_assert_int_eq(symlink("drain", path), 0);
	sched_restarted(&d, &s);
	ck_assert(s.unread);
	ck_assert_int_eq(d.drain_error, -ELOOP);
	ck_assert_uint_eq(drain_file_type(), S_IFLNK);
	disk_mounted(&d, "hbmguard-drain 1\nwant drain\nhook done\n"
		     "cause\trma\t200\thbm:hbm0\t\t\tfrom before\n");
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink("away/drain", path), 0);
	sched_save_again(&s);
	ck_assert(!s.unread);
	ck_assert_uint_eq(s.nr, 1);
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

/* A directory under the name holds no drain state: moved aside, replaced. */
START_TEST(a_drain_directory_is_set_aside)
{
	static struct daemon d;
	static struct hbm_sched s;
	char path[128];

	make_dir();
	snprintf(path, sizeof(path), "%s/drain", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	sched_restarted(&d, &s);
	ck_assert(!s.unread);
	ck_assert_uint_eq(s.want, HBM_DRAIN_WANT_NONE);
	ck_assert_uint_eq(drain_file_type(), S_IFREG);
	ck_assert_int_eq(d.drain_error, 0);
	daemon_done(&d, &s);
	remove_dir();
}
END_TEST

Suite *scheduler_suite(void)
{
	Suite *s = suite_create("scheduler");
	TCase *tc = tcase_create("scheduler");

	tcase_add_test(tc, clean);
	tcase_add_test(tc, reason);
	tcase_add_test(tc, verdict_drain);
	tcase_add_test(tc, verdict_resume);
	tcase_add_test(tc, hook_checks);
	tcase_add_test(tc, causes_kept_and_cleared);
	tcase_add_test(tc, hook_runs_and_is_killed_whole);
	tcase_add_test(tc, reload_drops_the_old_recheck);
	tcase_add_test(tc, a_drain_file_not_read_is_not_saved_over);
	tcase_add_test(tc, a_drain_directory_is_set_aside);
	tcase_add_test(tc, a_drain_file_read_late_as_it_was);
	tcase_add_test(tc, a_drain_link_that_loops_is_read_once_mended);
	suite_add_tcase(s, tc);
	return s;
}
