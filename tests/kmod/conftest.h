/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What NVIDIA's nv-tracepoint.h takes from the conftest.h its build generates
 * (kernel-open/conftest.sh, "assign_str"), so that the header is used here
 * as NVIDIA ships it.
 */
#ifndef HBM_FAKE_NV_CONFTEST_H
#define HBM_FAKE_NV_CONFTEST_H

#include "compat.h"

#define NV_ASSIGN_STR_ARGUMENT_COUNT HBM_ASSIGN_STR_ARGUMENT_COUNT

#endif /* HBM_FAKE_NV_CONFTEST_H */
