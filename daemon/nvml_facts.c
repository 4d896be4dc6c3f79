// SPDX-License-Identifier: GPL-2.0
/*
 * NVML's answers as the core's facts (core.h).  Which fact each becomes:
 *
 *   a GPU NVML lists       DEVICE_SEEN: kind NVIDIA, identity = its UUID,
 *                          pci = NVML's bus id in the kernel's form
 *                          ("0000:3b:00.0"), size = nvmlMemory_t.total,
 *                          page_size 0 (NVML does not say), sync START
 *   a GPU fallen off       DEVICE_GONE
 *   a retired page         PAGES, event RETIRED, state RETIRED, the driver's
 *                          hardware address as offset, 4 KiB long (the
 *                          driver blacklists RM pages: address >> RM_PAGE_SHIFT
 *                          in memmgrGetBlackListPagesForHeap_GM107(),
 *                          open-gpu-kernel-modules src/nvidia/src/kernel/gpu/
 *                          mem_mgr/arch/maxwell/mem_mgr_gm107.c), source UE
 *                          for a DBE, CE_THRESHOLD for multiple SBEs; time 0:
 *                          nvml.h does not give the timestamps' unit
 *   a remap failure        HEALTH RMA (as operators treat Xid 64)
 *   an ECC event           ERROR, severity CE (SingleBitEcc) or UE (DoubleBitEcc)
 *   an Xid event           ERROR, .xid = the Xid (999: NVML did not know
 *                          it), severity 0: what an Xid means is the core's
 *                          to say, once for every source that hears it
 *
 * What reconciliation reads (PAGES, HEALTH) was not heard as it happened:
 * it is marked HBM_FACT_UNHEARD, .sync START (core.h: old news to the
 * sinks that act on lost data, no event to those that record what was
 * heard).  Every fact has origin NVML, path "nvml".  Pending retirements and pending
 * remaps (a reboot or a GPU reset is needed) have no fact in core.h yet:
 * they are logged, once per GPU at start, at notice priority.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "nvml_facts.h"
#include "nvml_source.h"

/* RM_PAGE_SHIFT 12 (see above). */
#define NVIDIA_RETIRED_PAGE 4096

struct nvml_facts {
	struct hbm_nvml *h;
	struct hbm_source_link link;
	int fd;
};

static void log_line(void *ctx, int priority, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "<%d>hbmguardd: %s\n", priority, msg);
}

static void fill_device(struct hbm_fact *f, uint32_t type, const struct hbm_nvml_gpu *g)
{
	unsigned int domain, bus, dev, fn;

	memset(f, 0, sizeof(*f));
	f->type = type;
	f->origin = HBM_FROM_NVML;
	f->dev.id = HBM_NO_DEVICE_ID;
	f->dev.kind = HBM_DEVICE_NVIDIA;
	/* A name longer than the fact's is cut; a UUID never is (on_seen()). */
	snprintf(f->dev.identity, sizeof(f->dev.identity), "%.*s",
		 (int)sizeof(f->dev.identity) - 1, g->uuid);
	snprintf(f->dev.name, sizeof(f->dev.name), "%.*s", (int)sizeof(f->dev.name) - 1, g->name);
	/* NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0" (nvml.h), in sysfs' form */
	if (sscanf(g->pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4 && domain <= 0xffff)
		snprintf(f->dev.pci, sizeof(f->dev.pci), "%04x:%02x:%02x.%x", domain, bus, dev,
			 fn);
	f->dev.size = g->memory;
	snprintf(f->path, sizeof(f->path), "nvml");
}

static void on_seen(void *ctx, const struct hbm_nvml_gpu *g)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	/* NVML's buffer is NVML_DEVICE_UUID_V2_BUFFER_SIZE (96); a GPU's is 40. */
	if (strlen(g->uuid) >= sizeof(f.dev.identity)) {
		log_line(NULL, LOG_ERR, "nvml: a GPU's UUID is longer than an identity: skipped");
		return;
	}
	fill_device(&f, HBM_FACT_DEVICE_SEEN, g);
	f.sync = HBM_SYNC_START;
	s->link.fact(s->link.core, &f);
}

static void on_gone(void *ctx, const struct hbm_nvml_gpu *g)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	fill_device(&f, HBM_FACT_DEVICE_GONE, g);
	s->link.fact(s->link.core, &f);
}

static void on_page(void *ctx, const struct hbm_nvml_gpu *g, enum hbm_nvml_cause cause,
		    uint64_t addr, uint64_t time)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	(void)time;	/* unit not in nvml.h: see above */
	fill_device(&f, HBM_FACT_PAGES, g);
	f.event = HBMGUARD_EVENT_RETIRED;
	f.state = HBMGUARD_STATE_RETIRED;
	f.source = cause == HBM_NVML_CAUSE_DBE ? HBMGUARD_SOURCE_UE : HBMGUARD_SOURCE_CE_THRESHOLD;
	f.flags = HBM_FACT_UNHEARD;
	f.sync = HBM_SYNC_START;
	f.offset = addr & ~(uint64_t)(NVIDIA_RETIRED_PAGE - 1);
	f.length = NVIDIA_RETIRED_PAGE;
	f.count = 1;
	s->link.fact(s->link.core, &f);
}

static void on_pending(void *ctx, const struct hbm_nvml_gpu *g, bool pending)
{
	char msg[256];

	(void)ctx;
	if (!pending)
		return;
	snprintf(msg, sizeof(msg), "nvml: GPU %s (%s) has pages pending retirement: a reboot "
		 "completes it", g->uuid, g->pci);
	log_line(NULL, LOG_NOTICE, msg);
}

static void on_counts(void *ctx, const struct hbm_nvml_gpu *g, const struct hbm_nvml_report *r)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	if (r->remap_status != HBM_NVML_OK)
		return;
	if (r->remap_pending) {
		char msg[256];

		snprintf(msg, sizeof(msg), "nvml: GPU %s (%s) has row remaps pending: a GPU "
			 "reset completes them", g->uuid, g->pci);
		log_line(NULL, LOG_NOTICE, msg);
	}
	if (!r->remap_failure)
		return;
	fill_device(&f, HBM_FACT_HEALTH, g);
	f.event = HBMGUARD_EVENT_HEALTH;
	f.flags = HBM_FACT_UNHEARD;
	f.sync = HBM_SYNC_START;
	f.state = HBMGUARD_HEALTH_RMA;
	f.aux = HBMGUARD_HEALTH_OK;
	snprintf(f.text, sizeof(f.text), "row remapping failed");
	s->link.fact(s->link.core, &f);
}

static void on_event(void *ctx, const struct hbm_nvml_gpu *g, enum hbm_nvml_event_kind kind,
		     uint64_t data)
{
	struct nvml_facts *s = ctx;
	struct hbm_fact f;

	fill_device(&f, HBM_FACT_ERROR, g);
	f.event = HBMGUARD_EVENT_DEVICE_ERROR;
	switch (kind) {
	case HBM_NVML_EVENT_SBE:
		f.severity = HBM_SEVERITY_CE;
		break;
	case HBM_NVML_EVENT_DBE:
		f.severity = HBM_SEVERITY_UE;
		break;
	case HBM_NVML_EVENT_XID:
		f.xid = data > UINT32_MAX ? UINT32_MAX : (uint32_t)data;
		break;
	}
	f.count = 1;
	s->link.fact(s->link.core, &f);
}

static const struct hbm_nvml_ops facts_ops = {
	.gpu_seen = on_seen, .gpu_gone = on_gone, .page_retired = on_page,
	.pending = on_pending, .counts = on_counts, .event = on_event, .log = log_line,
};

struct nvml_facts *nvml_facts_start(const char *library, const struct hbm_source_link *link)
{
	struct nvml_facts *s = calloc(1, sizeof(*s));

	if (!s) {
		log_line(NULL, LOG_ERR, "nvml: out of memory");
		return NULL;
	}
	s->link = *link;
	s->fd = -1;
	s->h = hbm_nvml_open(library, &facts_ops, s);
	if (!s->h) {
		free(s);
		return NULL;
	}
	hbm_nvml_reconcile(s->h);
	s->fd = hbm_nvml_events_start(s->h);
	if (s->fd < 0)
		s->fd = -1;	/* said why; discovery and reconciliation stand */
	return s;
}

int nvml_facts_fd(const struct nvml_facts *s)
{
	return s->fd;
}

int nvml_facts_dispatch(struct nvml_facts *s)
{
	return hbm_nvml_dispatch(s->h);
}

void nvml_facts_stop(struct nvml_facts *s)
{
	if (!s)
		return;
	hbm_nvml_close(s->h);
	free(s);
}
