// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd's core (core.h): takes each fact from a source once, in order
 * (an Xid two sources heard, once: core.h), and hands it to every sink;
 * keeps the device list (by the module's ids) and the counters STATUS=
 * shows; answers what the sinks and the control socket ask of the devices
 * by asking the source that numbers them.
 *
 * It must not block beyond the source's own short requests, allocates
 * nothing per fact (a fact is copied on the stack; a device list is
 * allocated per question that needs one), and calls no sink but through
 * its callback: it includes no source's or sink's header.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"

/**
 * hbm_extents_push() - add a record to a table being read
 * @x: the table
 * @r: the record
 *
 * Return: false when out of memory (and @x->failed set).
 */
bool hbm_extents_push(struct hbm_extents *x, const struct hbm_state_record *r)
{
	if (x->nr == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 256;
		void *p = realloc(x->r, cap * sizeof(*x->r));

		if (!p) {
			x->failed = true;
			return false;
		}
		x->r = p;
		x->cap = cap;
	}
	x->r[x->nr++] = *r;
	return true;
}

/**
 * hbm_monotonic_ns() - now, CLOCK_MONOTONIC nanoseconds
 *
 * Return: the time; the clock of the windows the core and the sources keep.
 */
uint64_t hbm_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/**
 * hbm_realtime_ns() - now, CLOCK_REALTIME nanoseconds
 *
 * Return: the time; the clock of what is shown to people (struct hbm_fact's
 * .time, incidents' steps).
 */
uint64_t hbm_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/**
 * core_init() - a core with no sink yet
 * @c: the core
 * @ops: what the source that numbers the devices can be asked
 * @ctx: its context
 */
void core_init(struct hbmd_core *c, const struct hbm_source_ops *ops, void *ctx)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->ops_ctx = ctx;
	c->now = hbm_monotonic_ns;
}

/**
 * core_add_sink() - facts to @s from now on, after the sinks added before
 * @c: the core
 * @s: the sink (copied)
 *
 * Return: 0, or -ENOSPC past HBM_MAX_SINKS.
 */
int core_add_sink(struct hbmd_core *c, const struct hbm_sink *s)
{
	if (c->nr_sinks == HBM_MAX_SINKS)
		return -ENOSPC;
	c->sinks[c->nr_sinks++] = *s;
	return 0;
}

/* The module's id of the device @identity names, HBM_NO_DEVICE_ID for none. */
static uint32_t module_id(const struct hbmd_core *c, const char *identity)
{
	uint32_t id;

	for (id = 0; id < HBMGUARD_MAX_DEVICES; id++)
		if (!strcmp(c->identity[id], identity))
			return id;
	return HBM_NO_DEVICE_ID;
}

/*
 * The place of the Xid to forget when none is free: the oldest of the GPU
 * that holds the most, so that a storm on one GPU forgets its own.
 */
static struct hbm_xid_heard *xid_to_forget(struct hbmd_core *c)
{
	struct hbm_xid_heard *victim = NULL;
	size_t i, j, most = 0;

	for (i = 0; i < HBM_XID_HEARD; i++) {
		struct hbm_xid_heard *oldest = &c->xids[i];
		size_t held = 0;

		for (j = 0; j < HBM_XID_HEARD; j++) {
			struct hbm_xid_heard *e = &c->xids[j];

			if (strcmp(e->identity, oldest->identity))
				continue;
			held++;
			if (e->at < oldest->at)
				oldest = e;
		}
		if (held > most || (held == most && oldest->at < victim->at)) {
			most = held;
			victim = oldest;
		}
	}
	return victim;
}

/*
 * Whether @f is an Xid another source already gave (core.h, HBM_XID_WINDOW_NS):
 * if so it is marked as given by @f's origin too; if not it is remembered,
 * in a free place, or in xid_to_forget()'s.
 */
static bool xid_heard_before(struct hbmd_core *c, const struct hbm_fact *f)
{
	struct hbm_xid_heard *e, *twin = NULL, *slot = NULL;
	uint32_t me = f->origin < 32 ? 1u << f->origin : 0;
	uint64_t now = c->now();
	size_t i;

	for (i = 0; i < HBM_XID_HEARD; i++) {
		e = &c->xids[i];
		if (e->at && now - e->at >= HBM_XID_WINDOW_NS)
			e->at = 0;
		if (!e->at) {
			slot = slot ?: e;
			continue;
		}
		if (e->xid == f->xid && !(e->origins & me) &&
		    !strcmp(e->identity, f->dev.identity) && (!twin || e->at < twin->at))
			twin = e;
	}
	if (twin) {
		twin->origins |= me;
		return true;
	}
	slot = slot ?: xid_to_forget(c);
	memcpy(slot->identity, f->dev.identity, sizeof(slot->identity));
	slot->xid = f->xid;
	slot->origins = me;
	slot->at = now ? now : 1;
	return false;
}

/* Whether the core names @f's device (the source gave its id or identity only). */
static bool to_fill_in(const struct hbm_fact *f)
{
	return (!f->dev.identity[0] && f->dev.id < HBMGUARD_MAX_DEVICES) ||
	       (f->type == HBM_FACT_ERROR && f->dev.id == HBM_NO_DEVICE_ID &&
		f->dev.identity[0]);
}

static void fill_in(struct hbmd_core *c, struct hbm_fact *f)
{
	if (!f->dev.identity[0] && f->dev.id < HBMGUARD_MAX_DEVICES) {
		memcpy(f->dev.identity, c->identity[f->dev.id], sizeof(f->dev.identity));
		if (f->dev.identity[0] && !strcmp(c->seen[f->dev.id].identity, f->dev.identity))
			f->dev = c->seen[f->dev.id];	/* as its DEVICE_SEEN said */
	}
	if (f->type == HBM_FACT_ERROR && f->dev.id == HBM_NO_DEVICE_ID && f->dev.identity[0])
		f->dev.id = module_id(c, f->dev.identity);	/* a GPU's, heard by its driver's source */
}

/*
 * A fact to every sink, its device named where the source left it out.  One
 * given from inside a sink's callback would reach the sinks after it before
 * those before it (the store would save a device the journal has not named
 * yet): it waits until the sinks are done with this one.  Only a fact to
 * fill in is copied: the others, every event of the module's among them,
 * go out as given.
 */
static void deliver(struct hbmd_core *c, const struct hbm_fact *given)
{
	const struct hbm_fact *f = given;
	struct hbm_fact filled;
	size_t i;

	if (to_fill_in(given)) {
		filled = *given;
		fill_in(c, &filled);
		f = &filled;
	}
	if (f->type == HBM_FACT_ERROR && f->xid && f->dev.identity[0] &&
	    xid_heard_before(c, f)) {
		fprintf(stderr, "<7>hbmguardd: %s: Xid %u heard again (%s): one event\n",
			f->dev.identity, f->xid, f->path[0] ? f->path : "?");
		return;
	}
	if (f->type == HBM_FACT_DEVICE_SEEN && f->origin == c->ops->origin &&
	    f->dev.id < HBMGUARD_MAX_DEVICES)
		c->seen[f->dev.id] = f->dev;
	if (f->type == HBM_FACT_RESYNC)
		c->resyncs++;
	else if (f->event && !(f->flags & HBM_FACT_UNHEARD))
		c->events_seen++;
	c->in_fact = true;
	for (i = 0; i < c->nr_sinks; i++)
		c->sinks[i].fact(c->sinks[i].ctx, f);
	c->in_fact = false;
	if (f->type == HBM_FACT_DEVICE_GONE && f->dev.id < HBMGUARD_MAX_DEVICES) {
		c->identity[f->dev.id][0] = 0;
		c->seen[f->dev.id].identity[0] = 0;
	}
}

static void core_fact(void *core, const struct hbm_fact *fact)
{
	struct hbmd_core *c = core;
	size_t i;

	if (c->in_fact) {
		if (c->nr_queued < HBM_QUEUED_FACTS)
			c->queued[c->nr_queued++] = *fact;
		else
			fprintf(stderr, "<3>hbmguardd: facts (type %u) from inside the sinks, "
				"more than %d: dropped\n", fact->type, HBM_QUEUED_FACTS);
		return;
	}
	deliver(c, fact);
	for (i = 0; i < c->nr_queued; i++)	/* what the sinks gave meanwhile, may grow */
		deliver(c, &c->queued[i]);
	c->nr_queued = 0;
}

/* Whether @l has device @id as @identity: not when it is another now. */
static bool listed(const struct device_list *l, uint32_t id, const char *identity)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->dev[i].id == id)
			return !strcmp(l->dev[i].identity, identity);
	return false;
}

/**
 * core_devices() - the devices, as their source has them now
 * @c: the core
 * @l: filled in
 *
 * A read, for the sinks and the control socket: what it finds changes
 * nothing here (the source tells what went away).
 *
 * Return: 0, or the source's negative errno.
 */
int core_devices(struct hbmd_core *c, struct device_list *l)
{
	l->nr = 0;
	return c->ops->list(c->ops_ctx, l);
}

/*
 * The source's read of its devices: those gone since its last read leave
 * (a DEVICE_GONE fact each; an id that names another device now too), and
 * every one listed is remembered for the journal and the status.
 */
static int link_devices(void *core, struct device_list *l)
{
	struct hbmd_core *c = core;
	size_t i;
	int err;

	err = core_devices(c, l);
	if (err)
		return err;
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		if (c->identity[i][0] && !listed(l, i, c->identity[i])) {
			struct hbm_fact f = { .type = HBM_FACT_DEVICE_GONE,
					      .origin = c->ops->origin, .dev.id = i };

			core_fact(c, &f);	/* named by c->identity[i] */
		}
	memset(c->identity, 0, sizeof(c->identity));
	for (i = 0; i < l->nr; i++)
		if (l->dev[i].id < HBMGUARD_MAX_DEVICES)
			strcpy(c->identity[l->dev[i].id], l->dev[i].identity);
	return 0;
}

/**
 * core_link() - what a source is given at start
 * @c: the core
 *
 * Return: the source's way in.
 */
struct hbm_source_link core_link(struct hbmd_core *c)
{
	return (struct hbm_source_link){ .fact = core_fact, .devices = link_devices,
					 .core = c };
}

/**
 * core_find() - a device of a list, by identity
 * @l: the list
 * @identity: the device's
 *
 * Return: the device, or NULL.
 */
const struct device *core_find(const struct device_list *l, const char *identity)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (!strcmp(l->dev[i].identity, identity))
			return &l->dev[i];
	return NULL;
}

/**
 * core_identity() - a device's identity, as last listed
 * @c: the core
 * @id: its id
 *
 * Return: the identity, "" for none.
 */
const char *core_identity(const struct hbmd_core *c, uint32_t id)
{
	return id < HBMGUARD_MAX_DEVICES ? c->identity[id] : "";
}

/**
 * core_count_devices() - how many devices were last listed
 * @c: the core
 *
 * Return: their number.
 */
size_t core_count_devices(const struct hbmd_core *c)
{
	size_t i, n = 0;

	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		n += c->identity[i][0] != 0;
	return n;
}

/**
 * core_dump() - a device's table, from its source
 * @c: the core
 * @dev: the device
 * @x: appended to
 *
 * Return: 0, or a negative errno.
 */
int core_dump(struct hbmd_core *c, const struct device *dev, struct hbm_extents *x)
{
	return c->ops->dump(c->ops_ctx, dev, x);
}

/**
 * core_counts() - what the source that numbers the devices counts
 * @c: the core
 * @out: filled in (.have: what could be read)
 *
 * Return: 0, -EOPNOTSUPP where the source counts nothing, or a negative
 * errno: the device list could not be read.
 */
int core_counts(struct hbmd_core *c, struct hbm_counts *out)
{
	memset(out, 0, sizeof(*out));
	return c->ops->counts ? c->ops->counts(c->ops_ctx, out) : -EOPNOTSUPP;
}

/**
 * core_restore() - a device's stored pages, back into its source's table
 * @c: the core
 * @dev: the device
 * @stored: its state file's records
 */
void core_restore(struct hbmd_core *c, const struct device *dev, const struct hbm_state *stored)
{
	c->ops->restore(c->ops_ctx, dev, stored);
}

/**
 * core_change() - retire or clear pages of a device in its source's table
 * @c: the core
 * @dev: the device
 * @type: HBM_CTL_RETIRE or HBM_CTL_CLEAR
 * @x: the extent
 *
 * Return: 0, or the source's negative errno.
 */
int core_change(struct hbmd_core *c, const struct device *dev, uint16_t type,
		const struct hbm_ctl_extent *x)
{
	return c->ops->change(c->ops_ctx, dev, type, x);
}

/**
 * core_device() - a device, as its source has it now, by identity
 * @c: the core
 * @identity: the device's
 * @out: filled in
 *
 * Return: 0, -ENODEV if it has none of that identity, or the source's
 * negative errno.
 */
int core_device(struct hbmd_core *c, const char *identity, struct device *out)
{
	struct device_list *l = malloc(sizeof(*l));
	const struct device *dev;
	int err = l ? core_devices(c, l) : -ENOMEM;

	if (!err) {
		dev = core_find(l, identity);
		if (dev)
			*out = *dev;
		else
			err = -ENODEV;
	}
	free(l);
	return err;
}

/**
 * core_bypassed() - whether the kernel serves pages from spares now
 * @c: the core
 * @identity: the device
 * @offset: the pages
 * @length: their length
 *
 * Return: 1 if every page of the range is RETIRED in the kernel's table, 0
 * if one is not (no spare, or not yet bypassed), or the negative errno of
 * reading the table (-ENODEV: no device of that identity).
 */
int core_bypassed(struct hbmd_core *c, const char *identity, uint64_t offset,
		  uint64_t length)
{
	struct hbm_extents k = { 0 };
	struct device dev;
	uint64_t at = offset;
	int err = core_device(c, identity, &dev);
	size_t i;

	if (!err)
		err = core_dump(c, &dev, &k);
	for (i = 0; !err && i < k.nr && at < offset + length; i++)
		if (k.r[i].offset <= at && at < k.r[i].offset + k.r[i].length &&
		    k.r[i].state == HBMGUARD_STATE_RETIRED)
			at = k.r[i].offset + k.r[i].length;
	free(k.r);
	return err ? err : at >= offset + length;
}

/**
 * core_gpu_register() - a GPU its driver bypasses, registered with the
 * source that numbers devices
 * @c: the core
 * @gpu: the GPU: name, identity, pci, size, page_size
 *
 * Return: 0, -EEXIST when it is registered already, -EOPNOTSUPP where the
 * source cannot, or its negative errno.
 */
int core_gpu_register(struct hbmd_core *c, const struct hbm_fact_device *gpu)
{
	return c->ops->gpu_register ? c->ops->gpu_register(c->ops_ctx, gpu) : -EOPNOTSUPP;
}

/**
 * core_gpu_health() - the health a GPU's driver gives it
 * @c: the core
 * @dev: the GPU's device
 * @health: HBMGUARD_HEALTH_*
 *
 * Return: 0, -EOPNOTSUPP where the source cannot, or its negative errno.
 */
int core_gpu_health(struct hbmd_core *c, const struct device *dev, uint32_t health)
{
	return c->ops->gpu_health ? c->ops->gpu_health(c->ops_ctx, dev, health) : -EOPNOTSUPP;
}
