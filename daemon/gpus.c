// SPDX-License-Identifier: GPL-2.0
/*
 * The GPU registrar, a sink of hbmguardd's core: every GPU a driver's
 * source reports (NVML today, nvml_facts.c; amdgpu's sysfs later) becomes a
 * device of the module, and what its driver retired goes into that
 * device's table, so that the table, the state files and the journal hold
 * it as they hold every other device's.
 *
 *   source's DEVICE_SEEN (no device id)   remembered: name, UUID, PCI address,
 *                                         memory, page size
 *   source's PAGES                        the driver's retired pages, kept;
 *                                         one heard later recorded then
 *   source's HEALTH (its GPU's last fact  the GPU registered with the module
 *     at start: all retired pages said)   (HBMGUARD_CMD_GPU_REGISTER through
 *                                         the core; EEXIST, a daemon restart,
 *                                         is fine), then reconciled
 *   source's HEALTH heard later           recorded then
 *   source's DEVICE_GONE (off the bus)    health RESET_REQUIRED, one line
 *   the module's DEVICE_SEEN of a GPU     reconciled (its stored pages were
 *     (after the store, which restores)   restored just before, by the store)
 *   the module's DEVICE_GONE of one, or   registered again (a module reload)
 *     its id another device's
 *   an ERROR on a GPU, any source         who heard it, its last Xid; its own
 *                                         source's error counts grown
 *
 * What it keeps of each GPU is also what hbmctl gpus shows (gpus_get(),
 * asked by control.c): the source's identity and counts, the driver's
 * pages by cause and state, the health derived, beside the module's device.
 *
 * To reconcile is to dump the device's table (core_dump()) and retire there,
 * through the core (core_change(): HBMGUARD_CMD_RETIRE, source DRIVER, the
 * module's default on a GPU), each page of the driver's that the table does
 * not have as it should: one it lacks, or has PENDING when the driver has
 * retired it; with HBMGUARD_RETIRE_PENDING when the driver has it pending.
 * A page the table has already, whatever the source (RESTORED after a
 * reboot, DRIVER after a daemon restart), is left alone: the module would
 * make no event of it, but would move its last_seen, which the state file
 * keeps.  So a restart that reads the same facts again makes no event, no
 * journal entry and no change of a page in the table or the state file
 * (the store's own RESTORE at start moves each stored page's last_seen,
 * with or without GPUs).  Then the driver's health goes in
 * (HBMGUARD_CMD_GPU_HEALTH_SET: the module makes a HEALTH event only when
 * it changes).
 *
 * The module's device is sized from the GPU's memory (NVML's
 * nvmlMemory_t.total) rounded up to the page, or up to the end of the
 * highest retired page when that lies beyond (up to twice the total): the
 * driver's addresses are the hardware's, and what NVML counts as total may
 * leave out what the driver reserves.  The retired pages' own times are not
 * kept: the module's RETIRE takes none (first_seen is when hbmguard learnt
 * of the page).
 *
 * It must not block beyond its requests to the module, register anything
 * but through the core, call a source or another sink, or make a fact.  It
 * allocates when a GPU's list of pages grows (doubling), and per
 * reconciliation (the dump).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpus.h"

static const char *const health_names[] = {
	[HBMGUARD_HEALTH_OK] = "ok", [HBMGUARD_HEALTH_DEGRADED] = "degraded",
	[HBMGUARD_HEALTH_RMA] = "rma", [HBMGUARD_HEALTH_RESET_REQUIRED] = "reset-required",
};

static const char *health_name(uint32_t h)
{
	return h < sizeof(health_names) / sizeof(health_names[0]) ? health_names[h] : "?";
}

static struct hbm_gpu *find(struct hbm_gpus *r, const char *identity)
{
	size_t i;

	for (i = 0; i < r->nr; i++)
		if (!strcmp(r->gpu[i].found.identity, identity))
			return &r->gpu[i];
	return NULL;
}

static struct hbm_gpu *find_or_add(struct hbm_gpus *r, const char *identity)
{
	struct hbm_gpu *g = find(r, identity);

	if (g || !identity[0])
		return g;
	if (r->nr == HBM_GPUS_MAX) {
		fprintf(stderr, "<3>hbmguardd: GPU %s: more than %d GPUs: not registered\n",
			identity, HBM_GPUS_MAX);
		return NULL;
	}
	g = &r->gpu[r->nr++];
	memset(g, 0, sizeof(*g));
	snprintf(g->found.identity, sizeof(g->found.identity), "%s", identity);
	return g;
}

/*
 * Keeps a page the driver retired or has pending; true when it is news: a
 * page not kept yet, or one pending before and retired now.  A driver's
 * list read again (NVML's after an Xid 63) tells its old pages again.
 */
static bool keep_page(struct hbm_gpu *g, const struct hbm_fact *f)
{
	bool pending = f->state == HBMGUARD_STATE_PENDING;
	size_t i;

	for (i = 0; i < g->nr; i++) {
		struct hbm_gpu_page *p = &g->pages[i];

		if (p->offset != f->offset || p->length != f->length)
			continue;
		if (!p->pending || pending)
			return false;
		p->pending = false;
		return true;
	}
	if (g->nr == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 64;
		void *p = realloc(g->pages, cap * sizeof(*g->pages));

		if (!p) {
			fprintf(stderr, "<3>hbmguardd: GPU %s: out of memory for its retired pages\n",
				g->found.identity);
			return false;
		}
		g->pages = p;
		g->cap = cap;
	}
	g->pages[g->nr++] = (struct hbm_gpu_page){
		.offset = f->offset, .length = f->length, .pending = pending, .source = f->source,
	};
	return true;
}

/*
 * Whether a health read in part may replace @was: it can tell worse, never
 * better.  A driver's source says ok, reset-required or rma, in that order.
 */
static bool partial_tells(uint32_t was, uint32_t health)
{
	return was == HBMGUARD_HEALTH_OK || health == HBMGUARD_HEALTH_RMA;
}

/* The state of the table's page at @offset: its dump is sorted, not overlapping. */
static uint32_t state_at(const struct hbm_extents *x, uint64_t offset)
{
	size_t lo = 0, hi = x->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct hbm_state_record *e = &x->r[mid];

		if (offset < e->offset)
			hi = mid;
		else if (offset - e->offset >= e->length)
			lo = mid + 1;
		else
			return e->state;
	}
	return HBMGUARD_STATE_CLEAN;
}

/* The pages its driver retired that the table lacks, then its health. */
static void reconcile(struct hbm_gpus *r, struct hbm_gpu *g)
{
	uint64_t ps = g->dev.page_size ? g->dev.page_size : 4096;
	struct hbm_extents x = { 0 };
	size_t i, added = 0, refused = 0;
	int err;

	if (!g->in_module || !(g->reconciled || g->lost))
		return;
	err = core_dump(r->core, &g->dev, &x);
	if (err) {
		fprintf(stderr, "<3>hbmguardd: GPU %s: its table cannot be read (%s): its "
			"driver's pages are not recorded\n", g->found.identity, strerror(-err));
		return;
	}
	for (i = 0; i < g->nr; i++) {
		const struct hbm_gpu_page *p = &g->pages[i];
		struct hbm_ctl_extent e = {
			.offset = p->offset & ~(ps - 1),
			.flags = p->pending ? HBM_CTL_PENDING : 0,
		};
		uint32_t now = state_at(&x, e.offset);

		/* a driver's page within one of the device's: aligned, not crossing */
		e.length = p->length > ps ? (p->length + ps - 1) & ~(ps - 1) : ps;
		if (now == HBMGUARD_STATE_RETIRED || now == HBMGUARD_STATE_FAILED ||
		    (now == HBMGUARD_STATE_PENDING && p->pending))
			continue;
		snprintf(e.identity, sizeof(e.identity), "%s", g->dev.identity);
		err = core_change(r->core, &g->dev, HBM_CTL_RETIRE, &e);
		if (err && !refused++)	/* the first said; a broken library's many counted */
			fprintf(stderr, "<3>hbmguardd: GPU %s: the page its driver retired at "
				"0x%llx is not recorded: %s\n", g->found.identity,
				(unsigned long long)e.offset, strerror(-err));
		else if (!err)
			added++;
	}
	free(x.r);
	if (refused > 1)
		fprintf(stderr, "<3>hbmguardd: GPU %s: %zu more of its driver's pages not recorded\n",
			g->found.identity, refused - 1);
	if (added)
		fprintf(stderr, "<6>hbmguardd: GPU %s: %zu page%s its driver retired or has "
			"pending recorded\n", g->found.identity, added, added == 1 ? "" : "s");
	/* A health read in part can tell worse, never better. */
	if (g->partial && g->health == HBMGUARD_HEALTH_OK && !g->lost)
		return;
	err = core_gpu_health(r->core, &g->dev, g->health);
	if (err)
		fprintf(stderr, "<3>hbmguardd: GPU %s: its driver's health %s is not recorded: %s\n",
			g->found.identity, health_name(g->health), strerror(-err));
}

/* A name for people, unique as the PCI address is: "nvidia-0000:3b:00.0". */
static void module_name(const struct hbm_gpu *g, char *out, size_t len)
{
	snprintf(out, len, "%s-%s", g->found.kind == HBM_DEVICE_AMDGPU ? "amdgpu" : "nvidia",
		 g->found.pci);
}

/* Into the module, once its source said everything it knows at start. */
static void register_gpu(struct hbm_gpus *r, struct hbm_gpu *g)
{
	struct hbm_fact_device d = g->found;
	uint64_t ps = d.page_size ? d.page_size : 4096, limit;
	size_t i;
	int err;

	if (!d.pci[0]) {
		fprintf(stderr, "<3>hbmguardd: GPU %s has no PCI address: not registered\n",
			d.identity);
		return;
	}
	module_name(g, d.name, sizeof(d.name));
	d.page_size = ps;
	d.size = (d.size + ps - 1) & ~(ps - 1);
	/*
	 * Up to twice what NVML counts, no further: a page beyond that is no
	 * page of this GPU's memory but a broken library's (nor can it make
	 * the size overflow); reconcile() says so (ERANGE) and goes on.
	 */
	limit = d.size <= UINT64_MAX / 2 ? 2 * d.size : d.size;
	for (i = 0; i < g->nr; i++) {
		uint64_t end = g->pages[i].offset + g->pages[i].length;

		if (end > d.size && end <= limit)
			d.size = (end + ps - 1) & ~(ps - 1);
	}
	err = core_gpu_register(r->core, &d);
	if (!err)
		fprintf(stderr, "<6>hbmguardd: GPU %s at %s registered as %s\n", d.identity,
			d.pci, d.name);
	else if (err != -EEXIST || !g->in_module)
		/* EEXIST and not the module's yet: its name or address is another's */
		fprintf(stderr, "<3>hbmguardd: GPU %s at %s not registered: %s\n", d.identity,
			d.pci, strerror(-err));
}

static void from_source(struct hbm_gpus *r, const struct hbm_fact *f)
{
	struct hbm_gpu *g = f->type == HBM_FACT_DEVICE_SEEN ? find_or_add(r, f->dev.identity) :
			    find(r, f->dev.identity);

	if (!g)
		return;
	switch (f->type) {
	case HBM_FACT_DEVICE_SEEN:
		g->found = f->dev;
		g->nr = 0;
		g->reconciled = g->partial = g->lost = false;
		g->sources |= f->dev.kind == HBM_DEVICE_AMDGPU ? HBM_CTL_GPU_AMDGPU :
			      HBM_CTL_GPU_NVML;
		g->driver = (struct hbm_fact_driver){ 0 };
		g->failed = 0;
		break;
	case HBM_FACT_PAGES:
		if (f->length && f->state == HBMGUARD_STATE_FAILED)
			g->failed++;
		if (!f->length || f->state == HBMGUARD_STATE_FAILED)
			break;	/* not retired: the driver's HEALTH says what it means */
		/* heard later (amdgpu's list polled, NVML's read again): news recorded */
		if (keep_page(g, f) && g->reconciled)
			reconcile(r, g);
		break;
	case HBM_FACT_HEALTH:
		if (g->reconciled) {	/* heard later: the driver's new word, if new */
			if (f->driver.have)	/* its counts read again: they are the truth */
				g->driver = f->driver;
			if (f->state == g->health || ((f->flags & HBM_FACT_PARTIAL) &&
						      !partial_tells(g->health, f->state)))
				break;
			g->health = f->state;
			g->partial = f->flags & HBM_FACT_PARTIAL;
			reconcile(r, g);
			break;
		}
		g->health = f->state;
		g->partial = f->flags & HBM_FACT_PARTIAL;
		g->driver = f->driver;
		g->reconciled = true;
		register_gpu(r, g);
		reconcile(r, g);	/* the module has it already: a restart */
		break;
	case HBM_FACT_DEVICE_GONE:
		if (g->lost)
			break;
		g->lost = true;
		if (g->health != HBMGUARD_HEALTH_RMA)	/* the worse stays */
			g->health = HBMGUARD_HEALTH_RESET_REQUIRED;
		fprintf(stderr, "<3>hbmguardd: GPU %s (%s) is lost to its driver: health %s\n",
			g->found.identity, g->found.pci, health_name(g->health));
		if (g->in_module)
			reconcile(r, g);
		break;
	}
}

/*
 * The module no longer has GPU @g under its id (reloaded, or unregistered by
 * hand): one its source still reports is registered again, GPUs being
 * devices without configuration; its DEVICE_SEEN follows.
 */
static void left_module(struct hbm_gpus *r, struct hbm_gpu *g)
{
	g->in_module = false;
	if (g->reconciled && !g->lost)
		register_gpu(r, g);
}

static void from_module(struct hbm_gpus *r, const struct hbm_fact *f)
{
	struct hbm_gpu *g;
	size_t i;

	if (f->type != HBM_FACT_DEVICE_SEEN && f->type != HBM_FACT_DEVICE_GONE)
		return;
	/* Gone, or its id another device's now (a reload the list did not tell) */
	for (i = 0; i < r->nr; i++)
		if (r->gpu[i].in_module && r->gpu[i].dev.id == f->dev.id &&
		    (f->type == HBM_FACT_DEVICE_GONE ||
		     strcmp(r->gpu[i].dev.identity, f->dev.identity)))
			left_module(r, &r->gpu[i]);
	if (f->type != HBM_FACT_DEVICE_SEEN || f->dev.kind != HBM_DEVICE_GPU)
		return;
	g = find_or_add(r, f->dev.identity);
	if (!g)
		return;
	g->in_module = true;
	g->dev = (struct device){
		.id = f->dev.id, .page_size = f->dev.page_size, .kind = HBMGUARD_KIND_GPU,
		.size = f->dev.size,
	};
	snprintf(g->dev.identity, sizeof(g->dev.identity), "%s", f->dev.identity);
	snprintf(g->dev.pci, sizeof(g->dev.pci), "%s", f->dev.pci);
	reconcile(r, g);
}

/*
 * An error heard on a GPU, by any source (its device named by identity):
 * who heard it, its last Xid, and the driver's error counts grown.  The same
 * Xid heard by a second source is no fact (core.h): the first names it.
 */
static void heard(struct hbm_gpus *r, const struct hbm_fact *f)
{
	struct hbm_gpu *g = find(r, f->dev.identity);

	if (!g)
		return;
	if (f->origin == HBM_FROM_KMSG)
		g->sources |= HBM_CTL_GPU_KMSG;
	else if (f->origin == HBM_FROM_KERNEL && f->xid)	/* kernel.c's xid_fact() */
		g->sources |= HBM_CTL_GPU_TRACEPOINT;
	if (f->xid) {
		g->last_xid = f->xid;
		g->last_xid_at = f->time ? f->time : hbm_realtime_ns();
		return;
	}
	/* its own source's count grew (amdgpu's blocks, NVML's ECC events) */
	if ((f->origin == HBM_FROM_NVML || f->origin == HBM_FROM_AMDGPU) &&
	    (g->driver.have & HBM_DRIVER_ECC)) {
		if (f->severity == HBM_SEVERITY_UE)
			g->driver.ue += f->count;
		else
			g->driver.ce += f->count;
	}
}

/**
 * gpus_get() - the @index-th GPU the registrar knows, for hbmctl gpus
 * @r: the registrar
 * @index: from 0
 * @out: filled in
 *
 * Return: 0, or -ENOENT past the last.
 */
int gpus_get(const struct hbm_gpus *r, uint32_t index, struct hbm_ctl_gpu *out)
{
	const struct hbm_gpu *g;
	size_t i;

	if (index >= r->nr)
		return -ENOENT;
	g = &r->gpu[index];
	memset(out, 0, sizeof(*out));
	out->index = index;
	out->total = r->nr;
	snprintf(out->identity, sizeof(out->identity), "%s", g->found.identity);
	/* one the module has and no source found (yet): what the module says */
	snprintf(out->pci, sizeof(out->pci), "%s", g->found.pci[0] ? g->found.pci : g->dev.pci);
	if (g->found.kind == HBM_DEVICE_NVIDIA)	/* NVML's model; amdgpu's name is its own */
		snprintf(out->model, sizeof(out->model), "%s", g->found.name);
	out->vendor = g->found.kind == HBM_DEVICE_AMDGPU ? HBM_CTL_GPU_AMDGPU :
		      g->found.kind == HBM_DEVICE_NVIDIA ? HBM_CTL_GPU_NVML : 0;
	out->device = g->in_module ? g->dev.id : HBM_CTL_NO_DEVICE;
	if (g->in_module && out->vendor)	/* the name register_gpu() gave it */
		module_name(g, out->name, sizeof(out->name));
	out->sources = g->sources;
	out->flags = (g->lost ? HBM_CTL_GPU_LOST : 0) | (g->partial ? HBM_CTL_GPU_PARTIAL : 0) |
		     (g->driver.have & HBM_DRIVER_REMAP ? HBM_CTL_GPU_REMAP : 0) |
		     (g->driver.have & HBM_DRIVER_ECC ? HBM_CTL_GPU_ECC : 0);
	out->health = g->health;
	out->last_xid = g->last_xid;
	out->last_xid_at = g->last_xid_at / 1000;
	for (i = 0; i < g->nr; i++)
		if (g->pages[i].pending)
			out->pending++;
		else if (g->pages[i].source == HBMGUARD_SOURCE_CE_THRESHOLD)
			out->retired_ce++;
		else
			out->retired_ue++;
	out->failed = g->failed;
	out->remap_corrected = g->driver.remap_corrected;
	out->remap_uncorrected = g->driver.remap_uncorrected;
	out->remap_pending = g->driver.remap_pending;
	out->remap_failure = g->driver.remap_failure;
	out->ue = g->driver.ue;
	out->ce = g->driver.ce;
	out->size = g->found.size ? g->found.size : g->dev.size;
	return 0;
}

/**
 * gpus_fact() - the registrar as a sink of the core
 * @arg: the registrar
 * @f: the fact
 *
 * A GPU source's facts (no device id) are kept and, once its GPU's
 * reconciliation is over, registered and recorded; the module's DEVICE_SEEN
 * and DEVICE_GONE of a GPU say where to record them.
 */
void gpus_fact(void *arg, const struct hbm_fact *f)
{
	struct hbm_gpus *r = arg;

	if (f->type == HBM_FACT_ERROR)
		heard(r, f);
	else if (f->origin == HBM_FROM_KERNEL)
		from_module(r, f);
	else if (f->dev.id == HBM_NO_DEVICE_ID &&
		 (f->dev.kind == HBM_DEVICE_NVIDIA || f->dev.kind == HBM_DEVICE_AMDGPU))
		from_source(r, f);
}

/**
 * gpus_start() - a registrar with no GPU yet
 * @r: the registrar
 * @core: the core it asks
 */
void gpus_start(struct hbm_gpus *r, struct hbmd_core *core)
{
	memset(r, 0, sizeof(*r));
	r->core = core;
}

/**
 * gpus_stop() - forget every GPU (the module keeps them)
 * @r: the registrar
 */
void gpus_stop(struct hbm_gpus *r)
{
	size_t i;

	for (i = 0; i < r->nr; i++)
		free(r->gpu[i].pages);
	r->nr = 0;
}
