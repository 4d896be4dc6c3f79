/* SPDX-License-Identifier: GPL-2.0 */
#ifndef HBM_UNIT_H
#define HBM_UNIT_H

#include <check.h>
#include "core.h"

Suite *table_suite(void);
Suite *mtree_suite(void);
Suite *policy_suite(void);
Suite *mce_suite(void);
Suite *nvml_suite(void);
Suite *state_suite(void);
Suite *config_suite(void);
Suite *journal_suite(void);
Suite *ctl_suite(void);
Suite *aperture_suite(void);
Suite *seen_suite(void);
Suite *incidents_suite(void);
Suite *recovery_suite(void);
Suite *nvlog_suite(void);
Suite *amdgpu_suite(void);
Suite *core_suite(void);
Suite *xid_suite(void);
Suite *kmsg_suite(void);
Suite *cli_suite(void);
Suite *advise_suite(void);
Suite *metrics_suite(void);
Suite *passed_suite(void);
Suite *scheduler_suite(void);
Suite *cluster_suite(void);
Suite *rank_suite(void);
Suite *genl_suite(void);
Suite *losses_suite(void);
const char *table_invariants(const struct hbm_table *t);
/* A seen set's nodes kept for a split, freed: its next split must allocate. */
struct hbm_range_set;
void hbm_test_drop_spares(struct hbm_range_set *s);
int hbm_test_open_fds(void);

#endif
