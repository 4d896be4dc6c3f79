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
 * closed; DEADLINES and RECOVERY_TIMES their replies.  @conns connections,
 * then it exits.
 */
static pid_t old_daemon(const char *path, unsigned int known, int conns)
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

		if (fd < 0 || (n = recv(fd, pkt, sizeof(pkt), 0)) <= 0)
			_exit(1);
		err = hbm_ctl_decode(pkt, n, false, &h, &body);
		if (!err && h.type >= known)
			err = -EOPNOTSUPP;
		n = hbm_ctl_encode(pkt, sizeof(pkt), h.type | HBM_CTL_REPLY, h.seq, err,
				   err ? NULL : h.type == HBM_CTL_DEADLINES ? (void *)&dl : (void *)&rt);
		send(fd, pkt, n, 0);
		close(fd);
	}
	_exit(0);
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

Suite *rank_suite(void)
{
	Suite *s = suite_create("rank");
	TCase *tc = tcase_create("job");

	tcase_add_test(tc, job_id_from_the_launcher);
	tcase_add_test(tc, register_without_a_job);
	tcase_add_test(tc, deadlines_of_each_age);
	suite_add_tcase(s, tc);
	return s;
}
