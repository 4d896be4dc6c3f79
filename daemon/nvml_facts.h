/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVML source as hbmguardd's core sees it: what nvml_source.c reads,
 * turned into struct hbm_fact (core.h) and handed to the core's link.
 * nvml_facts.c says which fact each NVML answer becomes.
 */
#ifndef HBM_NVML_FACTS_H
#define HBM_NVML_FACTS_H

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "core.h"

struct nvml_facts;

/*
 * Loads @library (HBM_NVML_LIBRARY on a node), tells the core every GPU
 * (DEVICE_SEEN, sync START) and what the driver already retired and
 * remapped, and starts the live events.  NULL when NVML is not there or
 * not usable (one line said why): the daemon runs on without it.
 */
struct nvml_facts *nvml_facts_start(const char *library, const struct hbm_source_link *link);
/* The fd to watch for input, -1 when there are no live events. */
int nvml_facts_fd(const struct nvml_facts *s);
/*
 * On input: the events, and the reads of GPUs' tables come back, as facts.
 * 0, or -errno once the events ended (logged; the reads still come).
 */
int nvml_facts_dispatch(struct nvml_facts *s);
/*
 * The read of a GPU's tables that is out at @now (CLOCK_MONOTONIC ns): said
 * once, a warning naming the GPU, when it has been out NVML_READ_SLOW_NS
 * (nvml_facts.c); else, with a loop, a timer for then.  The GPU's index
 * (hbm_nvml_gpu()'s), or -1 when no read is out.  Dispatch and the timer
 * call it; tests with a @now of their own.
 */
int nvml_facts_check_reads(struct nvml_facts *s, uint64_t now);
/* The live events' fd into @loop (none: nothing).  0, or a negative errno. */
int nvml_facts_watch(struct nvml_facts *s, sd_event *loop);
/* True: a thread was left inside NVML, end with _exit() (hbm_nvml_close()). */
bool nvml_facts_stop(struct nvml_facts *s);

#endif /* HBM_NVML_FACTS_H */
