/* SPDX-License-Identifier: GPL-2.0 */
/* The GPU registrar (gpus.c): GPUs their drivers report, into the module; a sink. */
#ifndef HBM_GPUS_H
#define HBM_GPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

/* GPUs one node has at most, as far as the registrar keeps them. */
#define HBM_GPUS_MAX	64

/* One page its driver retired: a PAGES fact of the GPU's source. */
struct hbm_gpu_page {
	uint64_t offset;
	uint64_t length;
	bool pending;		/* the driver has it pending: a reboot completes it */
	uint32_t source;	/* HBMGUARD_SOURCE_UE or _CE_THRESHOLD: why it retired it */
};

struct hbm_gpu {
	struct hbm_fact_device found;	/* as its source found it (id: none) */
	bool reconciled;	/* its source said all it retired (its HEALTH fact) */
	bool partial;		/* ... but could not read all of its health */
	bool lost;		/* fallen off the bus */
	uint32_t health;	/* HBMGUARD_HEALTH_*, as its driver's facts give it */
	struct hbm_gpu_page *pages;
	size_t nr, cap;
	bool in_module;		/* the module has it: @dev, from its DEVICE_SEEN */
	struct device dev;
	/* for hbmctl gpus (gpus_get()) */
	uint32_t sources;	/* HBM_CTL_GPU_*: who found or heard it */
	struct hbm_fact_driver driver;	/* its driver's counts, and errors heard since */
	uint32_t failed;	/* pages its driver could not retire */
	uint32_t last_xid;	/* 0: none heard */
	uint64_t last_xid_at;	/* CLOCK_REALTIME ns */
};

struct hbm_gpus {
	struct hbmd_core *core;
	struct hbm_gpu gpu[HBM_GPUS_MAX];
	size_t nr;
};

void gpus_start(struct hbm_gpus *r, struct hbmd_core *core);
void gpus_fact(void *r, const struct hbm_fact *f);
void gpus_stop(struct hbm_gpus *r);
int gpus_get(const struct hbm_gpus *r, uint32_t index, struct hbm_ctl_gpu *out);

#endif /* HBM_GPUS_H */
