/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hbmguardd's parts, one of each, as main() (hbmguardd.c) makes and wires
 * them; signals.c reconfigures them on reload.  Only these two include it.
 */
#ifndef HBM_PARTS_H
#define HBM_PARTS_H

#include "amdgpu.h"
#include "core.h"
#include "daemon.h"
#include "gpus.h"
#include "kernel.h"
#include "kmsg.h"
#include "metrics.h"
#include "scheduler.h"
#include "store.h"

struct nvml_facts;

/* The daemon and its parts: one of each. */
struct hbmguardd {
	struct daemon d;
	struct hbmd_core core;
	struct hbm_kernel kernel;
	struct hbm_store store;
	struct hbm_gpus gpus;
	struct nvml_facts *nvml;	/* NULL: no NVML on this node */
	struct hbm_kmsg kmsg;		/* "NVRM: Xid" lines of the kernel log */
	struct amdgpu_facts *amdgpu;	/* amdgpu's RAS files */
	struct hbm_metrics metrics;	/* the Prometheus endpoint, when configured */
	struct hbm_sched sched;		/* the node's drain in Slurm, its hook */
};

#endif /* HBM_PARTS_H */
