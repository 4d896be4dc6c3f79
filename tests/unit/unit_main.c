// SPDX-License-Identifier: GPL-2.0
/*
 * Runs the unit suites: every one, those named (unit mtree nvml), or every
 * one but those named after -x (unit -x mtree nvml), so that make check can
 * split the sanitized build's run in two processes at once.  The exit
 * status says whether a test failed, or a name is not a suite's.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "unit.h"

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
	{ "table", table_suite },	{ "mtree", mtree_suite },
	{ "policy", policy_suite },	{ "mce", mce_suite },
	{ "nvml", nvml_suite },		{ "core", core_suite },
	{ "state", state_suite },	{ "config", config_suite },
	{ "journal", journal_suite },	{ "ctl", ctl_suite },
	{ "aperture", aperture_suite },	{ "seen", seen_suite },
	{ "incidents", incidents_suite }, { "recovery", recovery_suite },
	{ "nvlog", nvlog_suite },	{ "amdgpu", amdgpu_suite },
	{ "xid", xid_suite },		{ "kmsg", kmsg_suite },
	{ "cli", cli_suite },		{ "advise", advise_suite },
	{ "metrics", metrics_suite },	{ "passed", passed_suite },
	{ "scheduler", scheduler_suite }, { "cluster", cluster_suite },
	{ "rank", rank_suite },		{ "genl", genl_suite },
	{ "losses", losses_suite },
};
#define NR_SUITES (sizeof(suites) / sizeof(suites[0]))

/* How many descriptors this process has open (its /proc/self/fd's entries). */
int hbm_test_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static bool named(const char *name, char **names, int nr)
{
	int i;

	for (i = 0; i < nr; i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	bool except = argc > 1 && !strcmp(argv[1], "-x");
	char **names = argv + 1 + except;
	int nr = argc - 1 - except, i, failed;
	SRunner *sr = NULL;
	size_t s;

	for (i = 0; i < nr; i++) {
		for (s = 0; s < NR_SUITES && strcmp(suites[s].name, names[i]); s++)
			;
		if (s == NR_SUITES) {
			fprintf(stderr, "%s: no suite %s\n", argv[0], names[i]);
			return EXIT_FAILURE;
		}
	}
	for (s = 0; s < NR_SUITES; s++) {
		if (nr && named(suites[s].name, names, nr) == except)
			continue;
		if (!sr)
			sr = srunner_create(suites[s].make());
		else
			srunner_add_suite(sr, suites[s].make());
	}
	if (!sr) {
		fprintf(stderr, "%s: no suite left to run\n", argv[0]);
		return EXIT_FAILURE;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
