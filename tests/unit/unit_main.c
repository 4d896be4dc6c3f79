// SPDX-License-Identifier: GPL-2.0
/* Runs every unit suite; the exit status is the number of failures, capped. */
#include <stdlib.h>
#include "unit.h"

int main(void)
{
	SRunner *sr = srunner_create(table_suite());
	int failed;

	srunner_add_suite(sr, mtree_suite());
	srunner_add_suite(sr, policy_suite());
	srunner_add_suite(sr, mce_suite());
	srunner_add_suite(sr, nvml_suite());
	srunner_add_suite(sr, core_suite());
	srunner_add_suite(sr, state_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, journal_suite());
	srunner_add_suite(sr, ctl_suite());
	srunner_add_suite(sr, aperture_suite());
	srunner_add_suite(sr, seen_suite());
	srunner_add_suite(sr, incidents_suite());
	srunner_add_suite(sr, recovery_suite());
	srunner_add_suite(sr, nvlog_suite());
	srunner_add_suite(sr, amdgpu_suite());
	srunner_add_suite(sr, xid_suite());
	srunner_add_suite(sr, kmsg_suite());
	srunner_add_suite(sr, cli_suite());
	srunner_add_suite(sr, advise_suite());
	srunner_add_suite(sr, metrics_suite());
	srunner_add_suite(sr, passed_suite());
	srunner_add_suite(sr, scheduler_suite());
	srunner_add_suite(sr, cluster_suite());
	srunner_add_suite(sr, rank_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
