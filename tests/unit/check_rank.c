// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libhbmguard's rank side (daemon/libhbmguard/rank.c): the
 * job's id taken from its launcher's environment.
 */
#include "libhbmguard/rank.c"

#include <check.h>
#include <stdlib.h>
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

Suite *rank_suite(void)
{
	Suite *s = suite_create("rank");
	TCase *tc = tcase_create("job");

	tcase_add_test(tc, job_id_from_the_launcher);
	tcase_add_test(tc, register_without_a_job);
	suite_add_tcase(s, tc);
	return s;
}
