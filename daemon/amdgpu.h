/* SPDX-License-Identifier: GPL-2.0 */
/* The amdgpu source (amdgpu.c): amdgpu's RAS files in sysfs, polled, as facts. */
#ifndef HBM_AMDGPU_H
#define HBM_AMDGPU_H

#include <systemd/sd-event.h>

#include "core.h"

/* Where the DRM cards are: tests give a fixture tree instead. */
#define HBM_AMDGPU_DRM_DIR	"/sys/class/drm"

/*
 * Seconds between two reads of every card's files.  amdgpu tells no one
 * when they change (no sysfs_notify() in amdgpu_ras.c, 6.1 and 6.12): the
 * period bounds how late an incident opens for a UE only amdgpu saw.
 */
#define HBM_AMDGPU_PERIOD_S	5

struct amdgpu_facts;

struct amdgpu_facts *amdgpu_facts_start(const char *drm_dir, const struct hbm_source_link *link);
int amdgpu_facts_poll(struct amdgpu_facts *s);
int amdgpu_facts_watch(struct amdgpu_facts *s, sd_event *loop);
void amdgpu_facts_stop(struct amdgpu_facts *s);

#endif /* HBM_AMDGPU_H */
