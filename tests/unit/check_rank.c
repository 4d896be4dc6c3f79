// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libhbmguard's rank side (daemon/libhbmguard/rank.c): the
 * job's id taken from its launcher's environment; the deadlines asked of
 * daemons of three ages.
 */
#include "libhbmguard/rank.c"

#include <check.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/wait.h>
#include "unit.h"

static void launcher(const char *torchrun, const char *slurm)
{
	if (torchrun)
		setenv("TORCHELASTIC_RUN_ID", torchrun, 1);
	else
		unsetenv("TORCHELASTIC_RUN_ID");
	if (slurm)
		setenv("SLURM_JOB_ID", slurm, 1);
	else
		unsetenv("SLURM_JOB_ID");
}

START_TEST(job_id_from_the_launcher)
{
	char id[64], small[4];

	launcher("run-42", "1234");
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), 0);
	ck_assert_str_eq(id, "run-42");		/* torchrun's --rdzv_id first */
	launcher("none", "1234");		/* torchrun's default: no id */
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), 0);
	ck_assert_str_eq(id, "1234");
	launcher(NULL, "1234");
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), 0);
	ck_assert_str_eq(id, "1234");
	setenv("SLURM_STEP_ID", "3", 1);	/* under srun: the step's */
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), 0);
	ck_assert_str_eq(id, "1234.3");
	unsetenv("SLURM_STEP_ID");
	launcher("none", NULL);
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), -ENOENT);
	launcher(NULL, "");
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), -ENOENT);
	/* not a name the daemon takes: said, nothing copied */
	strcpy(id, "kept");
	launcher("a b", NULL);
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), -EINVAL);
	launcher("job\033[2J", NULL);
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), -EINVAL);
	launcher("0123456789012345678901234567890123456789012345678901234567890123", NULL);
	ck_assert_int_eq(hbmguard_job_id(id, sizeof(id)), -EINVAL);
	ck_assert_str_eq(id, "kept");
	launcher("run-42", NULL);
	ck_assert_int_eq(hbmguard_job_id(small, sizeof(small)), -EINVAL);
}
END_TEST

/* A rank without a job's name takes the launcher's, and none is refused before connecting. */
START_TEST(register_without_a_job)
{
	struct hbmguard_rank_info info = { .device = "dev", .rank = 0, .world_size = 1 };
	struct hbmguard_rank *r;

	launcher("none", NULL);
	ck_assert_int_eq(hbmguard_rank_register("/dev/null", &info, &r), -ENOENT);
	launcher("run-42", NULL);	/* then it goes on: /dev/null is no socket */
	ck_assert_int_ne(hbmguard_rank_register("/dev/null", &info, &r), -ENOENT);
	launcher(NULL, NULL);
}
END_TEST

/*
 * A daemon that knows the requests below @known, answering as control.c's
 * serve() does: a request of a type it does not know gets -EOPNOTSUPP (its
 * hbm_ctl_decode() says so past its __HBM_CTL_TYPE_MAX) and the connection
 * closed; DEADLINES and RECOVERY_TIMES their replies, a registration its
 * rank back.  @conns connections, then it exits; the last request it got
 * is left in the file @path.got.  With @again, a registration is answered
 * -EAGAIN first, as hbmguardd answers one sent before it pinned its sender
 * by pid (control.c's pin_peer()), and the next on the connection served.
 */
static pid_t daemon_answering(const char *path, unsigned int known, int conns, bool again)
{
	int lfd = hbm_ctl_listen(path);
	pid_t pid;

	ck_assert_int_ge(lfd, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid) {
		close(lfd);
		return pid;
	}
	fcntl(lfd, F_SETFL, 0);		/* the daemon's is non-blocking, for sd-event */
	for (int i = 0; i < conns; i++) {
		struct hbm_ctl_deadlines dl = { 30, 120, 10, 0 };
		struct hbm_ctl_recovery_times rt = { 30, 120, 10, 260 };
		alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
		int fd = accept(lfd, NULL, NULL), err;
		struct hbm_ctl_header h;
		const void *body;
		ssize_t n;

		char got[80];
		FILE *f;

		if (fd < 0 || (n = recv(fd, pkt, sizeof(pkt), 0)) <= 0)
			_exit(1);
		if (again && !hbm_ctl_decode(pkt, n, false, &h, &body) &&
		    (h.type == HBM_CTL_RANK_REGISTER || h.type == HBM_CTL_RANK_REGISTER_KEYED)) {
			n = hbm_ctl_encode(pkt, sizeof(pkt), h.type | HBM_CTL_REPLY, h.seq,
					   -EAGAIN, NULL);
			if (send(fd, pkt, n, 0) != n || (n = recv(fd, pkt, sizeof(pkt), 0)) <= 0)
				_exit(1);
		}
		snprintf(got, sizeof(got), "%s.got", path);
		f = fopen(got, "w");
		if (!f || fwrite(pkt, 1, n, f) != (size_t)n || fclose(f))
			_exit(1);
		err = hbm_ctl_decode(pkt, n, false, &h, &body);
		if (!err && h.type >= known)
			err = -EOPNOTSUPP;
		n = hbm_ctl_encode(pkt, sizeof(pkt), h.type | HBM_CTL_REPLY, h.seq, err,
				   err ? NULL : h.type == HBM_CTL_DEADLINES ? (void *)&dl :
				   h.type == HBM_CTL_RECOVERY_TIMES ? (void *)&rt : body);
		send(fd, pkt, n, 0);
		close(fd);
	}
	_exit(0);
}

static pid_t old_daemon(const char *path, unsigned int known, int conns)
{
	return daemon_answering(path, known, conns, false);
}

START_TEST(deadlines_of_each_age)
{
	static const struct {
		unsigned int known;	/* the daemon's __HBM_CTL_TYPE_MAX */
		int conns, err;
		uint32_t longest;
	} ages[] = {
		{ __HBM_CTL_TYPE_MAX, 1, 0, 260 },		/* RECOVERY_TIMES */
		{ HBM_CTL_RECOVERY_TIMES, 2, 0, 0 },		/* DEADLINES alone */
		{ HBM_CTL_DEADLINES, 2, -EOPNOTSUPP, 0 },	/* neither */
	};
	char dir[] = "/tmp/hbm-rank.XXXXXX", path[64];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/control.sock", dir);
	for (size_t i = 0; i < sizeof(ages) / sizeof(ages[0]); i++) {
		struct hbmguard_deadlines d = { 0 };
		pid_t pid = old_daemon(path, ages[i].known, ages[i].conns);
		int status;

		ck_assert_int_eq(hbmguard_recovery_deadlines(path, &d), ages[i].err);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "age %zu: the daemon", i);
		unlink(path);
		strcat(path, ".got");
		unlink(path);
		path[strlen(path) - 4] = 0;
		if (ages[i].err)
			continue;
		ck_assert_uint_eq(d.pause_timeout, 30);
		ck_assert_uint_eq(d.restore_timeout, 120);
		ck_assert_uint_eq(d.kill_timeout, 10);
		ck_assert_uint_eq(d.longest, ages[i].longest);
	}
	rmdir(dir);
}
END_TEST

/* What the daemon of old_daemon() got last: the request's type, its body copied to @body. */
static uint16_t got(const char *path, void *body, size_t size)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct hbm_ctl_header h;
	char name[80];
	const void *b;
	FILE *f;
	size_t n;

	snprintf(name, sizeof(name), "%s.got", path);
	f = fopen(name, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(pkt, 1, sizeof(pkt), f);
	fclose(f);
	unlink(name);
	ck_assert_int_eq(hbm_ctl_decode(pkt, n, false, &h, &b), 0);
	ck_assert_uint_eq(n, sizeof(h) + size);
	memcpy(body, b, size);
	return h.type;
}

/* Register with daemon @known, HBMGUARD_JOB_KEY @key; the daemon's end checked. */
static int register_keyed(const char *path, unsigned int known, const char *key)
{
	struct hbmguard_rank_info info = { .job = "run-42", .device = "dev", .world_size = 1 };
	pid_t pid = old_daemon(path, known, 1);
	struct hbmguard_rank *r = NULL;
	int err, status;

	if (key)
		setenv("HBMGUARD_JOB_KEY", key, 1);
	else
		unsetenv("HBMGUARD_JOB_KEY");
	err = hbmguard_rank_register(path, &info, &r);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	unlink(path);
	if (r)
		hbmguard_rank_close(r);
	unsetenv("HBMGUARD_JOB_KEY");
	return err;
}

/*
 * HBMGUARD_JOB_KEY: sent with the rank (RANK_REGISTER_KEYED), none without
 * it; one the daemon would not take refused before anything is sent; a
 * daemon older than keys refuses it, and the rank is not registered
 * without its key.
 */
START_TEST(job_key_from_the_environment)
{
	static const char key[] = "5f0c2a9e7b3d41e8a6c0f9b2d7e4a1c3";
	static const char *const bad[] = {
		"short-key", "0123456789abcdef0123456789abcde", "a key with spaces",
		"tab\tkey-0123456789abcdef0123456789abcdef",
		"0123456789012345678901234567890123456789012345678901234567890123",
	};
	char dir[] = "/tmp/hbm-rank.XXXXXX", path[64];
	struct hbm_ctl_rank_keyed k;
	struct hbm_ctl_rank plain;
	size_t i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/control.sock", dir);
	ck_assert_int_eq(register_keyed(path, __HBM_CTL_TYPE_MAX, key), 0);
	ck_assert_uint_eq(got(path, &k, sizeof(k)), HBM_CTL_RANK_REGISTER_KEYED);
	ck_assert_str_eq(k.key, key);
	ck_assert_str_eq(k.rank.job, "run-42");
	ck_assert_int_eq(register_keyed(path, __HBM_CTL_TYPE_MAX, NULL), 0);
	ck_assert_uint_eq(got(path, &plain, sizeof(plain)), HBM_CTL_RANK_REGISTER);
	ck_assert_str_eq(plain.job, "run-42");
	ck_assert_int_eq(register_keyed(path, __HBM_CTL_TYPE_MAX, ""), 0);	/* set empty: none */
	ck_assert_uint_eq(got(path, &plain, sizeof(plain)), HBM_CTL_RANK_REGISTER);
	ck_assert_int_eq(register_keyed(path, HBM_CTL_RANK_REGISTER_KEYED, key), -EOPNOTSUPP);
	ck_assert_uint_eq(got(path, &k, sizeof(k)), HBM_CTL_RANK_REGISTER_KEYED);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hbmguard_rank_info info = { .job = "run-42", .device = "dev",
						   .world_size = 1 };
		struct hbmguard_rank *r;

		setenv("HBMGUARD_JOB_KEY", bad[i], 1);
		/* refused before connecting: no daemon there to answer */
		ck_assert_int_eq(hbmguard_rank_register(path, &info, &r), -EINVAL);
	}
	unsetenv("HBMGUARD_JOB_KEY");
	rmdir(dir);
}
END_TEST

/*
 * A registration the daemon answers -EAGAIN (sent before it pinned this
 * process by pid: ctl.h) is sent again on the same connection, and taken,
 * keyed or not; the daemon's second answer is what the caller gets.
 */
START_TEST(register_sent_again_after_eagain)
{
	char dir[] = "/tmp/hbm-rank.XXXXXX", path[64];
	struct hbm_ctl_rank_keyed k;
	struct hbm_ctl_rank plain;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/control.sock", dir);
	for (int keyed = 0; keyed < 2; keyed++) {
		struct hbmguard_rank_info info = { .job = "run-42", .device = "dev",
						   .world_size = 1 };
		pid_t pid = daemon_answering(path, __HBM_CTL_TYPE_MAX, 1, true);
		struct hbmguard_rank *r = NULL;
		int status;

		if (keyed)
			setenv("HBMGUARD_JOB_KEY", "5f0c2a9e7b3d41e8a6c0f9b2d7e4a1c3", 1);
		ck_assert_int_eq(hbmguard_rank_register(path, &info, &r), 0);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFEXITED(status) && !WEXITSTATUS(status));
		if (keyed)
			ck_assert_uint_eq(got(path, &k, sizeof(k)), HBM_CTL_RANK_REGISTER_KEYED);
		else
			ck_assert_uint_eq(got(path, &plain, sizeof(plain)), HBM_CTL_RANK_REGISTER);
		hbmguard_rank_close(r);
		unlink(path);
		unsetenv("HBMGUARD_JOB_KEY");
	}
	rmdir(dir);
}
END_TEST

Suite *rank_suite(void)
{
	Suite *s = suite_create("rank");
	TCase *tc = tcase_create("job");

	tcase_add_test(tc, job_id_from_the_launcher);
	tcase_add_test(tc, register_without_a_job);
	tcase_add_test(tc, deadlines_of_each_age);
	tcase_add_test(tc, job_key_from_the_environment);
	tcase_add_test(tc, register_sent_again_after_eagain);
	suite_add_tcase(s, tc);
	return s;
}
