/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every part of hbmguardd, for main() (hbmguardd.c) to wire, and for the
 * unit tests that link some parts and stub the others.  No part of the
 * daemon includes this header: each includes only the headers of what it
 * uses (tests/shape/check.py checks that none reaches back up).
 */
#ifndef HBM_HBMGUARDD_H
#define HBM_HBMGUARDD_H

#include "amdgpu.h"
#include "client.h"
#include "config.h"
#include "control.h"
#include "core.h"
#include "ctl.h"
#include "daemon.h"
#include "journal.h"
#include "kernel.h"
#include "kmsg.h"
#include "recovery.h"
#include "seen.h"
#include "status.h"
#include "store.h"

#endif /* HBM_HBMGUARDD_H */
