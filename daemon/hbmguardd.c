// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd: keeps hbmguard's bad-page tables across reboots and module
 * reloads.
 *
 * The kernel is the authority on what is bad now; the state files are the
 * memory of what was bad before.  So the daemon only ever adds: when a
 * device appears (at start, or announced by the module after a reload or a
 * GPU re-enumeration) its stored pages go back into the kernel as RESTORED,
 * and whenever a device's table changes the daemon dumps it from the kernel
 * and writes the union of what it dumped and what it had stored.  Nothing is
 * dropped on the daemon's word: kill -9 at any moment leaves the last file
 * whole (state.c writes atomically), and the next start restores it.
 *
 * Events come over the "hbmguard" netlink group; on a sequence gap or
 * ENOBUFS the daemon has missed some and dumps every device again.  A module
 * reload registers the family anew: the controller's "notify" group says so,
 * and the daemon joins the new group and restores every device.  The main
 * loop is sd-event; READY=1 is sent once the family is resolved, the group
 * joined and every device restored.
 *
 * This file is the persistence core and the main loop; control.c serves
 * hbmctl's socket (ctl.h), journal.c words the entries, state.c and
 * config.c are the file formats.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-journal.h>
#include <linux/hbmguard.h>

#include "config.h"
#include "ctl.h"
#include "genl.h"
#include "hbmguardd.h"
#include "journal.h"
#include "state.h"

static int transact(struct daemon *d, struct nl_msg *msg,
		    nl_recvmsg_msg_cb_t parse, void *arg)
{
	return hbm_genl_transact(d->req, msg, parse, arg);
}

static struct nl_msg *request(struct daemon *d, int cmd, int flags)
{
	return hbm_genl_request(d->family, cmd, flags);
}

/*
 * Devices and their tables, as the kernel has them.
 */
static int parse_device(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct device_list *l = arg;
	struct device *dev;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) ||
	    !a[HBMGUARD_A_DEVICE_ID] || !a[HBMGUARD_A_IDENTITY] ||
	    !a[HBMGUARD_A_PAGE_SIZE] || l->nr == HBMGUARD_MAX_DEVICES)
		return NL_SKIP;
	dev = &l->dev[l->nr++];
	dev->id = nla_get_u32(a[HBMGUARD_A_DEVICE_ID]);
	snprintf(dev->identity, sizeof(dev->identity), "%s",
		 nla_get_string(a[HBMGUARD_A_IDENTITY]));
	dev->page_size = nla_get_u32(a[HBMGUARD_A_PAGE_SIZE]);
	return NL_OK;
}

struct extents {
	struct hbm_state_record *r;
	size_t nr, cap;
};

static bool extents_push(struct extents *x, const struct hbm_state_record *r)
{
	if (x->nr == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 256;
		void *p = realloc(x->r, cap * sizeof(*x->r));

		if (!p)
			return false;
		x->r = p;
		x->cap = cap;
	}
	x->r[x->nr++] = *r;
	return true;
}

static int parse_extent(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1], *e[HBMGUARD_A_MAX + 1];
	struct extents *x = arg;
	struct hbm_state_record r;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) ||
	    !a[HBMGUARD_A_EXTENT] ||
	    nla_parse_nested(e, HBMGUARD_A_MAX, a[HBMGUARD_A_EXTENT], NULL) ||
	    !e[HBMGUARD_A_OFFSET] || !e[HBMGUARD_A_LENGTH] || !e[HBMGUARD_A_STATE])
		return NL_SKIP;
	r = (struct hbm_state_record){
		.offset = nla_get_u64(e[HBMGUARD_A_OFFSET]),
		.length = nla_get_u64(e[HBMGUARD_A_LENGTH]),
		.first_seen = e[HBMGUARD_A_FIRST_SEEN] ? nla_get_u64(e[HBMGUARD_A_FIRST_SEEN]) : 0,
		.last_seen = e[HBMGUARD_A_LAST_SEEN] ? nla_get_u64(e[HBMGUARD_A_LAST_SEEN]) : 0,
		.state = nla_get_u32(e[HBMGUARD_A_STATE]),
		.source = e[HBMGUARD_A_SOURCE] ? nla_get_u32(e[HBMGUARD_A_SOURCE]) : 0,
		.errors = e[HBMGUARD_A_ERRORS] ? nla_get_u32(e[HBMGUARD_A_ERRORS]) : 0,
	};
	return extents_push(x, &r) ? NL_OK : NL_STOP;
}

static int dump_pages(struct daemon *d, uint32_t id, struct extents *x)
{
	struct nl_msg *msg = request(d, HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	return transact(d, msg, parse_extent, x);
}

/* Put stored pages back into the kernel, as RESTORED: raises no recovery. */
static int restore(struct daemon *d, const struct device *dev,
		   const struct hbm_state *s)
{
	size_t i = 0;
	int err = 0;

	while (i < s->nr && !err) {
		struct nl_msg *msg = request(d, HBMGUARD_CMD_RESTORE, 0);
		size_t batch;

		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id);
		for (batch = 0; i < s->nr && batch < 256; i++, batch++) {
			struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

			nla_put_u64(msg, HBMGUARD_A_OFFSET, s->records[i].offset);
			nla_put_u64(msg, HBMGUARD_A_LENGTH, s->records[i].length);
			if (s->records[i].state == HBMGUARD_STATE_PENDING)
				nla_put_u32(msg, HBMGUARD_A_STATE, HBMGUARD_STATE_PENDING);
			nla_nest_end(msg, n);
		}
		err = transact(d, msg, NULL, NULL);
	}
	return err;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct hbm_state_record *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

/*
 * Whether the first @kernel of the kernel's extents hold (a part of) @s.
 * Both are sorted: *@j walks the kernel's along the stored records' walk.
 */
static bool kernel_holds(const struct extents *k, size_t kernel, size_t *j,
			 const struct hbm_state_record *s)
{
	while (*j < kernel && k->r[*j].offset + k->r[*j].length <= s->offset)
		(*j)++;
	return *j < kernel && k->r[*j].offset < s->offset + s->length;
}

/*
 * The union of the kernel's extents and the stored ones, as records that do
 * not overlap: a stored extent the kernel also holds (in whole or in part)
 * is the kernel's business now; one it lacks (a restore refused, say) stays.
 */
static void merge(struct extents *k, const struct hbm_state *stored)
{
	size_t kernel = k->nr, i, j = 0, n;

	for (i = 0; i < stored->nr; i++)
		if (!kernel_holds(k, kernel, &j, &stored->records[i]) &&
		    !extents_push(k, &stored->records[i]))
			return;
	qsort(k->r, k->nr, sizeof(*k->r), cmp_offset);
	for (i = 1, n = 1; i < k->nr; i++)	/* drop any overlap left */
		if (k->r[i].offset >= k->r[n - 1].offset + k->r[n - 1].length)
			k->r[n++] = k->r[i];
	k->nr = k->nr ? n : 0;
}

/* The configured policy of a device, into the kernel. */
static void apply_policy(struct daemon *d, const struct device *dev)
{
	struct hbm_policy_config p = hbm_config_policy_for(&d->cfg, dev->identity);
	struct nl_msg *msg;
	int err;

	if (!p.set)
		return;
	msg = request(d, HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id);
	if (p.set & HBM_SET_CE_THRESHOLD)
		nla_put_u32(msg, HBMGUARD_A_CE_THRESHOLD, p.ce_threshold);
	if (p.set & HBM_SET_CE_WINDOW)
		nla_put_u32(msg, HBMGUARD_A_CE_WINDOW, p.ce_window);
	if (p.set & HBM_SET_RETIRE_LIMIT)
		nla_put_u32(msg, HBMGUARD_A_RETIRE_LIMIT, p.retire_limit);
	err = transact(d, msg, NULL, NULL);
	if (err)
		fprintf(stderr, "<3>hbmguardd: policy of %s refused by the kernel: %s\n",
			dev->identity, hbm_genl_strerror(err));
}

static void load_stored(struct daemon *d, const struct device *dev,
			struct hbm_state *s)
{
	struct hbm_state_damage damage;
	char moved[300];
	int err = hbm_state_read(d->state_dir, dev->identity, s, &damage);

	if (err == -ENOENT) {
		memset(s, 0, sizeof(*s));
		return;
	}
	if (err || damage.bad_records || damage.missing_records) {
		fprintf(stderr, "<3>hbmguardd: state of %s damaged (%s; %zu bad, %zu missing records): moving it aside\n",
			dev->identity, damage.header ? damage.header : "records",
			damage.bad_records, damage.missing_records);
		if (!hbm_state_quarantine(d->state_dir, dev->identity, moved, sizeof(moved)))
			fprintf(stderr, "<3>hbmguardd: kept as %s\n", moved);
	}
	if (err)
		memset(s, 0, sizeof(*s));	/* nothing of it to trust */
}

/*
 * Take [offset, offset + length) out of the stored records: pages an
 * operator cleared must not come back at the next boot.  A record that
 * straddles an end keeps its part outside.
 */
static int forget_range(struct hbm_state *s, uint64_t offset, uint64_t length)
{
	struct hbm_state_record *r = calloc(2 * s->nr + 1, sizeof(*r));
	uint64_t end = offset + length;
	size_t i, n = 0;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < s->nr; i++) {
		struct hbm_state_record x = s->records[i];
		uint64_t x_end = x.offset + x.length;

		if (x_end <= offset || x.offset >= end) {
			r[n++] = x;
			continue;
		}
		if (x.offset < offset) {
			r[n] = x;
			r[n++].length = offset - x.offset;
		}
		if (x_end > end) {
			r[n] = x;
			r[n].offset = end;
			r[n++].length = x_end - end;
		}
	}
	free(s->records);
	s->records = r;
	s->nr = n;
	return 0;
}

static void count_stored(struct daemon *d, const struct device *dev,
			 const struct hbm_state *s)
{
	uint64_t pages = 0;
	size_t i;

	if (dev->id >= HBMGUARD_MAX_DEVICES)
		return;
	for (i = 0; i < s->nr; i++)
		pages += s->records[i].length / dev->page_size;
	d->stored_extents[dev->id] = s->nr;
	d->stored_pages[dev->id] = pages;
}

static unsigned int count_unsaved(struct daemon *d)
{
	unsigned int i, n = d->incidents_error != 0;

	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		n += d->saves[i].error != 0;
	return n;
}

/* The state files not on disk, for STATUS=: "" when every one is. */
static void describe_unsaved(struct daemon *d, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i <= HBMGUARD_MAX_DEVICES && n < len; i++) {
		int err = i < HBMGUARD_MAX_DEVICES ? d->saves[i].error : d->incidents_error;

		if (err)
			n += snprintf(buf + n, len - n, "%s %s (%s)",
				      n ? "," : "; NOT SAVED, retrying:",
				      i == HBMGUARD_MAX_DEVICES ? "the incidents" :
				      d->identity[i][0] ? d->identity[i] : "?", strerror(-err));
	}
}

void daemon_notify_status(struct daemon *d)
{
	struct hbm_ctl_status st;
	char unsaved[512];

	daemon_status(d, &st);
	describe_unsaved(d, unsaved, sizeof(unsaved));
	sd_notifyf(0, "STATUS=%u devices, %" PRIu64 " bad pages kept in %" PRIu64
		   " extents; %u ranks, %u incidents open; %" PRIu64 " events%s",
		   st.devices, st.stored_pages, st.stored_extents, st.ranks,
		   st.open_incidents, st.events, unsaved);
}

#define RETRY_MAX_S	60

static int on_retry(sd_event_source *s, uint64_t usec, void *arg);

/**
 * daemon_save_failed() - a state file did not reach the disk: try again
 * @d: the daemon
 *
 * A second later, then twice as long each time up to a minute, with no
 * event needed: the device's data stays marked not durable until then.
 */
void daemon_save_failed(struct daemon *d)
{
	if (d->retry || !d->loop)
		return;		/* armed, or main() arms it once the loop exists */
	d->retry_s = !d->retry_s ? 1 : d->retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S :
		     d->retry_s * 2;
	if (sd_event_add_time_relative(d->loop, &d->retry, CLOCK_MONOTONIC,
				       (uint64_t)d->retry_s * 1000000, 0, on_retry, d) < 0)
		fprintf(stderr, "<3>hbmguardd: cannot arm the retry of the saves\n");
}

/* A device's save went to disk, or did not: remembered until the next. */
static void save_done(struct daemon *d, const struct device *dev, int err)
{
	struct device_save *s;

	d->last_save = time(NULL);
	if (dev->id >= HBMGUARD_MAX_DEVICES)
		return;
	s = &d->saves[dev->id];
	if (err && err != s->error)
		fprintf(stderr, "<3>hbmguardd: saving the state of %s: %s: retrying\n",
			dev->identity, strerror(-err));
	else if (!err && s->error)
		fprintf(stderr, "<5>hbmguardd: the state of %s is saved\n", dev->identity);
	s->dirty = err != 0;
	s->error = err;
	if (err)
		daemon_save_failed(d);
}

static bool destroys_data(uint32_t state, uint32_t source)
{
	return (state == HBMGUARD_STATE_RETIRED || state == HBMGUARD_STATE_FAILED) &&
	       (source == HBMGUARD_SOURCE_UE || source == HBMGUARD_SOURCE_POISON);
}

/*
 * Pages of device @id lost their data: each part not seen before opens the
 * recovery of the jobs on it, once, whether an event told of it or a dump
 * after events were lost (@unheard).
 */
static void lost_pages(struct daemon *d, uint32_t id, uint64_t offset,
		       uint64_t length, bool unheard)
{
	struct hbm_ranges fresh = { 0 };
	size_t i;

	if (id >= HBMGUARD_MAX_DEVICES || !d->identity[id][0])
		return;
	if (hbm_ranges_add(&d->seen[id], offset, length, &fresh)) {
		recovery_on_lost_data(d, d->identity[id], offset, length);
		return;
	}
	for (i = 0; i < fresh.nr; i++) {
		if (unheard)
			fprintf(stderr, "<4>hbmguardd: %s: data lost at 0x%" PRIx64 "+0x%" PRIx64
				" while events were lost\n", d->identity[id],
				fresh.r[i].offset, fresh.r[i].length);
		recovery_on_lost_data(d, d->identity[id], fresh.r[i].offset,
				      fresh.r[i].length);
	}
	hbm_ranges_free(&fresh);
}

/* The lost data in a table: acted upon (@act) or only taken as seen. */
static void take_lost_data(struct daemon *d, const struct device *dev,
			   const struct extents *k, bool act)
{
	size_t i;

	for (i = 0; i < k->nr && dev->id < HBMGUARD_MAX_DEVICES; i++) {
		if (!destroys_data(k->r[i].state, k->r[i].source))
			continue;
		if (act)
			lost_pages(d, dev->id, k->r[i].offset, k->r[i].length, true);
		else
			hbm_ranges_add(&d->seen[dev->id], k->r[i].offset, k->r[i].length, NULL);
	}
}

/* Whether some stored extent is missing from the kernel's table. */
static bool kernel_lacks(const struct extents *k, const struct hbm_state *stored)
{
	size_t i, j = 0;

	for (i = 0; i < stored->nr; i++)
		if (!kernel_holds(k, k->nr, &j, &stored->records[i]))
			return true;
	return false;
}

static void restore_stored(struct daemon *d, const struct device *dev,
			   const struct hbm_state *stored)
{
	int err;

	apply_policy(d, dev);
	if (!stored->nr)
		return;
	err = restore(d, dev, stored);
	if (err)
		fprintf(stderr, "<4>hbmguardd: restoring %zu extents into %s: %s\n",
			stored->nr, dev->identity, hbm_genl_strerror(err));
	else
		fprintf(stderr, "<5>hbmguardd: restored %zu extents into %s\n",
			stored->nr, dev->identity);
}

enum sync_mode {
	SYNC_SAVE,	/* its table changed */
	SYNC_START,	/* the daemon starts: restore; lost data there is old news */
	SYNC_ADDED,	/* a new table: restore; lost data there is news */
	SYNC_RESYNC,	/* events were lost: lost data and a device back, unheard */
};

/*
 * Make the stored state of a device the union with the kernel's table, less
 * @forget (cleared pages) when given; first, what @mode asks.
 */
static int save(struct daemon *d, const struct device *dev, enum sync_mode mode,
		const struct hbm_state_record *forget)
{
	struct hbm_state stored, out = { .page_size = dev->page_size };
	struct extents k = { 0 };
	int err;

	load_stored(d, dev, &stored);
	if (forget && forget_range(&stored, forget->offset, forget->length)) {
		hbm_state_free(&stored);
		return -ENOMEM;
	}
	if (mode == SYNC_START || mode == SYNC_ADDED)
		restore_stored(d, dev, &stored);
	err = dump_pages(d, dev->id, &k);
	if (!err && mode != SYNC_SAVE)
		take_lost_data(d, dev, &k, mode != SYNC_START);
	if (!err && mode == SYNC_RESYNC && kernel_lacks(&k, &stored)) {
		fprintf(stderr, "<4>hbmguardd: %s lacks stored pages: it came back unheard\n",
			dev->identity);
		restore_stored(d, dev, &stored);
		k.nr = 0;
		err = dump_pages(d, dev->id, &k);
	}
	if (!err) {
		merge(&k, &stored);
		snprintf(out.identity, sizeof(out.identity), "%s", dev->identity);
		out.serial = stored.serial + 1;
		out.records = k.r;
		out.nr = k.nr;
		if (k.nr || stored.nr || forget)
			err = hbm_state_write(d->state_dir, &out);
		if (!err)
			count_stored(d, dev, &out);
	}
	save_done(d, dev, err);
	free(k.r);
	hbm_state_free(&stored);
	return err;
}

static bool listed(const struct device_list *l, uint32_t id)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->dev[i].id == id)
			return true;
	return false;
}

/* A device is gone: so is what the daemon kept of it. */
static void forget_device(struct daemon *d, uint32_t id)
{
	if (d->saves[id].error)
		fprintf(stderr, "<3>hbmguardd: %s is gone before its state could be saved\n",
			d->identity[id]);
	d->saves[id] = (struct device_save){ 0 };
	hbm_ranges_free(&d->seen[id]);
	d->stored_extents[id] = d->stored_pages[id] = 0;
}

static int list_devices(struct daemon *d, struct device_list *l)
{
	size_t i;
	int err;

	l->nr = 0;
	err = transact(d, request(d, HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP),
		       parse_device, l);
	if (err)
		return err;
	/* Remembered for the journal and the status; gone devices forgotten. */
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		if (d->identity[i][0] && !listed(l, i))
			forget_device(d, i);
	memset(d->identity, 0, sizeof(d->identity));
	for (i = 0; i < l->nr; i++)
		if (l->dev[i].id < HBMGUARD_MAX_DEVICES)
			strcpy(d->identity[l->dev[i].id], l->dev[i].identity);
	return 0;
}

/*
 * The configuration's [Range] sections, registered with the module: at
 * start, after a reload and when the module comes back.  One registered
 * already (the daemon restarted) is EEXIST, and fine.  A range the
 * configuration no longer names stays registered: unregistering takes its
 * table with it.
 */
static int register_range(struct daemon *d, const struct hbm_range_config *r, bool claim)
{
	struct nl_msg *msg = request(d, HBMGUARD_CMD_RANGE_REGISTER, 0);

	if (!msg)
		return -ENOMEM;
	nla_put_string(msg, HBMGUARD_A_NAME, r->name);
	if (r->numa_node >= 0) {
		nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, r->numa_node);
	} else {
		nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, r->address);
		nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, r->size);
	}
	if (r->spare_pages)
		nla_put_u32(msg, HBMGUARD_A_SPARE_PAGES, r->spare_pages);
	if (claim)
		nla_put_flag(msg, HBMGUARD_A_CLAIM);
	return transact(d, msg, NULL, NULL);
}

/*
 * The configuration's ranges.  A claimed range whose memory cannot be taken
 * (EBUSY: its bad frames stay out of the page allocator until reboot once
 * it was unregistered, at a module reload among others) is registered
 * without its aperture: its table, and the errors the kernel reports on
 * it, matter more than the mapping.
 */
static void register_ranges(struct daemon *d)
{
	size_t i;

	for (i = 0; i < d->cfg.nr_ranges; i++) {
		const struct hbm_range_config *r = &d->cfg.ranges[i];
		int err = register_range(d, r, r->claim);

		if (err == -EBUSY && r->claim) {
			fprintf(stderr, "<4>hbmguardd: range %s: its memory cannot be claimed "
				"(%s): registered without an aperture\n", r->name,
				hbm_genl_strerror(err));
			err = register_range(d, r, false);
		}
		if (err && err != -EEXIST)
			fprintf(stderr, "<3>hbmguardd: range %s not registered: %s\n", r->name,
				hbm_genl_strerror(err));
		else if (!err)
			fprintf(stderr, "<6>hbmguardd: range %s registered\n", r->name);
	}
}

#define ALL_DEVICES UINT32_MAX

/*
 * Device @id, or every device: what @mode asks, then save.  A resync finds
 * a device under an id that named another as new.
 */
static int sync_devices(struct daemon *d, uint32_t id, enum sync_mode mode)
{
	struct device_list *l = calloc(1, sizeof(*l));
	char (*was)[HBMGUARD_IDENTITY_LEN] = malloc(sizeof(d->identity));
	size_t i;
	int err = -ENOMEM;

	if (l && was) {
		memcpy(was, d->identity, sizeof(d->identity));
		err = list_devices(d, l);
	}
	for (i = 0; !err && i < l->nr; i++) {
		const struct device *dev = &l->dev[i];
		enum sync_mode m = mode;

		if (id != ALL_DEVICES && dev->id != id)
			continue;
		if (mode == SYNC_RESYNC && dev->id < HBMGUARD_MAX_DEVICES &&
		    strcmp(was[dev->id], dev->identity)) {
			hbm_ranges_free(&d->seen[dev->id]);
			m = SYNC_ADDED;
		}
		save(d, dev, m, NULL);
	}
	free(was);
	free(l);
	daemon_notify_status(d);
	return err;
}

static size_t count_devices(struct daemon *d)
{
	size_t i, n = 0;

	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		n += d->identity[i][0] != 0;
	return n;
}

static const struct device *find_device(const struct device_list *l,
				       const char *identity)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (!strcmp(l->dev[i].identity, identity))
			return &l->dev[i];
	return NULL;
}

/**
 * daemon_apply() - retire or clear pages for the control socket
 * @d: the daemon
 * @type: HBM_CTL_RETIRE or HBM_CTL_CLEAR
 * @x: the device, by identity, and the extent (checked by hbm_ctl_decode())
 *
 * The kernel first, then the state file, fsync'd before this returns: a
 * reply sent after it is an acknowledgement that survives a power cut.
 * Cleared pages leave the state file too, so they do not come back at boot.
 *
 * Return: 0, or the negative errno of the kernel or of the save.
 */
int daemon_apply(struct daemon *d, uint16_t type, const struct hbm_ctl_extent *x)
{
	struct hbm_state_record forget = { .offset = x->offset, .length = x->length };
	struct device_list *l = calloc(1, sizeof(*l));
	const struct device *dev = NULL;
	struct nl_msg *msg;
	int err;

	if (!l)
		return -ENOMEM;
	err = list_devices(d, l);
	if (!err)
		dev = find_device(l, x->identity);
	if (!err && !dev)
		err = -ENODEV;
	if (!err) {
		msg = request(d, type == HBM_CTL_RETIRE ? HBMGUARD_CMD_RETIRE :
			      HBMGUARD_CMD_CLEAR, 0);
		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id);
		nla_put_u64(msg, HBMGUARD_A_OFFSET, x->offset);
		nla_put_u64(msg, HBMGUARD_A_LENGTH, x->length);
		if (x->flags & HBM_CTL_PENDING)
			nla_put_u32(msg, HBMGUARD_A_FLAGS, HBMGUARD_RETIRE_PENDING);
		err = transact(d, msg, NULL, NULL);
	}
	if (!err)
		err = save(d, dev, SYNC_SAVE, type == HBM_CTL_CLEAR ? &forget : NULL);
	free(l);
	daemon_notify_status(d);
	return err;
}

/**
 * daemon_is_bypassed() - whether the kernel serves pages from spares now
 * @d: the daemon
 * @identity: the device
 * @offset: the pages
 * @length: their length
 *
 * Return: true if every page of the range is RETIRED in the kernel's table.
 */
bool daemon_is_bypassed(struct daemon *d, const char *identity, uint64_t offset,
			uint64_t length)
{
	struct device_list *l = calloc(1, sizeof(*l));
	struct extents k = { 0 };
	const struct device *dev;
	uint64_t at = offset;
	size_t i;

	if (!l || list_devices(d, l))
		goto out;
	dev = find_device(l, identity);
	if (!dev || dump_pages(d, dev->id, &k))
		goto out;
	for (i = 0; i < k.nr && at < offset + length; i++)
		if (k.r[i].offset <= at && at < k.r[i].offset + k.r[i].length &&
		    k.r[i].state == HBMGUARD_STATE_RETIRED)
			at = k.r[i].offset + k.r[i].length;
out:
	free(k.r);
	free(l);
	return at >= offset + length;
}

/**
 * daemon_status() - how the daemon stands, for STATUS= and hbmctl status
 * @d: the daemon
 * @st: filled in
 */
void daemon_status(struct daemon *d, struct hbm_ctl_status *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	st->started = d->started;
	st->events = d->events_seen;
	st->resyncs = d->resyncs;
	st->last_save = d->last_save;
	st->unsaved = count_unsaved(d);
	for (i = 0; i <= HBMGUARD_MAX_DEVICES && !st->last_save_error; i++)
		st->last_save_error = i < HBMGUARD_MAX_DEVICES ? d->saves[i].error :
				      d->incidents_error;
	st->devices = count_devices(d);
	st->pid = getpid();
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++) {
		st->stored_extents += d->stored_extents[i];
		st->stored_pages += d->stored_pages[i];
	}
	st->open_incidents = recovery_open_incidents(d);
	st->incidents = d->nr_incidents;
	for (struct client *c = d->ranks; c; c = c->next_rank)
		st->ranks++;
	snprintf(st->state_dir, sizeof(st->state_dir), "%.255s", d->cfg.state_dir);
}

/*
 * Events.
 */
static int join_family(struct daemon *d);

static uint64_t attr_u64(struct nlattr **a, int type)
{
	return a[type] ? nla_get_u64(a[type]) : 0;
}

static uint32_t attr_u32(struct nlattr **a, int type)
{
	return a[type] ? nla_get_u32(a[type]) : 0;
}

/* One structured journal entry per event; journalctl -x explains it. */
static void journal(struct daemon *d, struct nlattr **a)
{
	struct hbm_event_view ev = {
		.type = attr_u32(a, HBMGUARD_A_EVENT_TYPE),
		.seqnum = attr_u64(a, HBMGUARD_A_SEQNUM),
		.device = attr_u32(a, HBMGUARD_A_DEVICE_ID),
		.offset = attr_u64(a, HBMGUARD_A_OFFSET),
		.length = attr_u64(a, HBMGUARD_A_LENGTH),
		.source = attr_u32(a, HBMGUARD_A_SOURCE),
		.state = attr_u32(a, HBMGUARD_A_STATE),
		.count = attr_u32(a, HBMGUARD_A_COUNT),
		.aux = attr_u32(a, HBMGUARD_A_AUX),
	};
	const char *identity = ev.device < HBMGUARD_MAX_DEVICES &&
			       d->identity[ev.device][0] ? d->identity[ev.device] : "?";
	struct hbm_journal_entry e;

	if (hbm_journal_describe(&ev, identity, &e)) {
		fprintf(stderr, "<4>hbmguardd: event #%llu of unknown type %u\n",
			(unsigned long long)ev.seqnum, ev.type);
		return;
	}
	if (!d->journald)
		fprintf(stderr, "<%d>hbmguardd: %s\n", e.priority, e.message);
	else
		sd_journal_send("MESSAGE=%s", e.message, "MESSAGE_ID=%s", e.message_id,
				"PRIORITY=%d", e.priority,
				"HBMGUARD_DEVICE=%u", ev.device,
				"HBMGUARD_IDENTITY=%s", identity,
				"HBMGUARD_OFFSET=0x%llx", (unsigned long long)ev.offset,
				"HBMGUARD_LENGTH=0x%llx", (unsigned long long)ev.length,
				"HBMGUARD_SOURCE=%s", hbm_journal_source_name(ev.source),
				"HBMGUARD_COUNT=%u", ev.count,
				"HBMGUARD_SEQNUM=%llu", (unsigned long long)ev.seqnum,
				NULL);
}

/*
 * The family registered anew (the module reloaded): new tables, and no
 * event of what happened before the group was joined again.
 */
static void reloaded(struct daemon *d)
{
	size_t i;

	if (join_family(d))
		fprintf(stderr, "<3>hbmguardd: cannot join the new family\n");
	d->next_seq = 0;
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		hbm_ranges_free(&d->seen[i]);
	register_ranges(d);
	sync_devices(d, ALL_DEVICES, SYNC_ADDED);
}

/*
 * Events were lost: what they said is read from the kernel instead.  The
 * family may have been registered anew unheard (its id changed: ids are
 * handed out cyclically, idr_alloc_cyclic() in genl_register_family(),
 * net/netlink/genetlink.c, 6.1 and 6.12), a device added unheard (its
 * table lacks its stored pages), data lost unheard (a UE or poison not in
 * d->seen).
 */
static void resync(struct daemon *d, const char *why)
{
	int family = d->family;

	fprintf(stderr, "<4>hbmguardd: %s: resyncing\n", why);
	d->resyncs++;
	if (join_family(d)) {
		fprintf(stderr, "<3>hbmguardd: the hbmguard family is gone\n");
		return;
	}
	if (d->family != family) {
		fprintf(stderr, "<5>hbmguardd: the hbmguard module was reloaded unheard: restoring\n");
		reloaded(d);
		return;
	}
	sync_devices(d, ALL_DEVICES, SYNC_RESYNC);
}

/* The genl controller: our family registered anew (the module reloaded). */
static void on_ctrl(struct daemon *d, struct nl_msg *msg)
{
	struct nlattr *a[CTRL_ATTR_MAX + 1];
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));

	if (g->cmd != CTRL_CMD_NEWFAMILY ||
	    genlmsg_parse(nlmsg_hdr(msg), 0, a, CTRL_ATTR_MAX, NULL) ||
	    !a[CTRL_ATTR_FAMILY_NAME] ||
	    strcmp(nla_get_string(a[CTRL_ATTR_FAMILY_NAME]), HBMGUARD_GENL_NAME))
		return;
	fprintf(stderr, "<5>hbmguardd: the hbmguard module is back: restoring\n");
	reloaded(d);
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct daemon *d = arg;
	uint64_t seq;
	uint32_t type, id;

	if (nlmsg_hdr(msg)->nlmsg_type == GENL_ID_CTRL) {
		on_ctrl(d, msg);
		return NL_OK;
	}
	if (nlmsg_hdr(msg)->nlmsg_type != d->family)
		return NL_SKIP;	/* queued before the family was registered anew */
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) ||
	    !a[HBMGUARD_A_SEQNUM] || !a[HBMGUARD_A_EVENT_TYPE])
		return NL_SKIP;
	seq = nla_get_u64(a[HBMGUARD_A_SEQNUM]);
	type = nla_get_u32(a[HBMGUARD_A_EVENT_TYPE]);
	id = a[HBMGUARD_A_DEVICE_ID] ? nla_get_u32(a[HBMGUARD_A_DEVICE_ID]) : 0;
	if (hbm_seq_lost(&d->next_seq, seq, type)) {
		char why[64];

		snprintf(why, sizeof(why), "events lost before #%" PRIu64, seq);
		resync(d, why);
		if (nlmsg_hdr(msg)->nlmsg_type != d->family)
			return NL_SKIP;	/* the module was reloaded since */
	}
	d->events_seen++;

	switch (type) {
	case HBMGUARD_EVENT_DEVICE_ADDED:
		if (id < HBMGUARD_MAX_DEVICES)
			hbm_ranges_free(&d->seen[id]);
		sync_devices(d, id, SYNC_ADDED);	/* learns its identity too */
		break;
	case HBMGUARD_EVENT_RETIRED:
	case HBMGUARD_EVENT_PENDING:
	case HBMGUARD_EVENT_FAILED:
		if (id < HBMGUARD_MAX_DEVICES)
			d->saves[id].dirty = true;	/* saved once the burst is read */
		break;
	case HBMGUARD_EVENT_CLEARED:
		if (id < HBMGUARD_MAX_DEVICES)	/* a new error there is news */
			hbm_ranges_remove(&d->seen[id], attr_u64(a, HBMGUARD_A_OFFSET),
					  attr_u64(a, HBMGUARD_A_LENGTH));
		break;
	}
	journal(d, a);
	/* Data lost under a rank: its job's recovery starts. */
	if (destroys_data(type == HBMGUARD_EVENT_RETIRED ? HBMGUARD_STATE_RETIRED :
			  type == HBMGUARD_EVENT_FAILED ? HBMGUARD_STATE_FAILED : 0,
			  attr_u32(a, HBMGUARD_A_SOURCE)))
		lost_pages(d, id, attr_u64(a, HBMGUARD_A_OFFSET), attr_u64(a, HBMGUARD_A_LENGTH),
			   false);
	return NL_OK;
}

/* The devices whose tables changed; those whose last save failed too (@failed). */
static void save_dirty(struct daemon *d, bool failed)
{
	struct device_list *l;
	size_t i;

	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		if (d->saves[i].dirty && (failed || !d->saves[i].error))
			break;
	if (i == HBMGUARD_MAX_DEVICES)
		return;
	l = calloc(1, sizeof(*l));
	if (!l || list_devices(d, l)) {
		free(l);
		return;	/* dirty stays: the next turn tries again */
	}
	for (i = 0; i < l->nr; i++) {
		const struct device_save *s = l->dev[i].id < HBMGUARD_MAX_DEVICES ?
					      &d->saves[l->dev[i].id] : NULL;

		if (s && s->dirty && (failed || !s->error))
			save(d, &l->dev[i], SYNC_SAVE, NULL);
	}
	free(l);
	daemon_notify_status(d);
}

/*
 * After each turn of the loop: save the devices whose tables changed.  A
 * burst of retirements read in one turn costs one dump and one write per
 * device, not one per event.  Those whose save failed wait for on_retry().
 */
static int on_post(sd_event_source *s, void *arg)
{
	(void)s;
	save_dirty(arg, false);
	return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *arg)
{
	struct daemon *d = arg;

	(void)usec;
	sd_event_source_unref(s);
	d->retry = NULL;
	save_dirty(d, true);
	recovery_save_again(d);
	if (!count_unsaved(d))
		d->retry_s = 0;
	else
		daemon_save_failed(d);	/* when no save could even be tried */
	daemon_notify_status(d);
	return 0;
}

/* SIGHUP, systemctl reload: a new configuration, or the old one kept. */
static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si,
		     void *arg)
{
	struct daemon *d = arg;
	struct hbm_config *next = malloc(sizeof(*next));
	char err[512];

	(void)s;
	(void)si;
	if (!next)
		return 0;
	sd_notify(0, "RELOADING=1");
	if (hbm_config_load(d->config_path, next, err, sizeof(err))) {
		fprintf(stderr, "<3>hbmguardd: reload refused, keeping the configuration: %s\n",
			err);
	} else if (strcmp(next->state_dir, d->cfg.state_dir) ||
		   strcmp(next->control_socket, d->cfg.control_socket)) {
		fprintf(stderr, "<3>hbmguardd: reload refused: StateDirectory and ControlSocket changes need a restart\n");
	} else {
		struct device_list *l = calloc(1, sizeof(*l));
		size_t i;

		d->cfg = *next;
		register_ranges(d);
		if (l && !list_devices(d, l))
			for (i = 0; i < l->nr; i++)
				apply_policy(d, &l->dev[i]);
		free(l);
		fprintf(stderr, "<6>hbmguardd: configuration reloaded from %s\n",
			d->config_path);
	}
	free(next);
	sd_notify(0, "READY=1");
	return 0;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct daemon *d = arg;
	struct nl_cb *cb = nl_socket_get_cb(d->events);
	int n = 1, i;

	(void)s;
	(void)fd;
	(void)revents;
	/*
	 * One message per read: what is queued (up to a bound, for the control
	 * socket's sake) is read before on_post() saves; -NLE_AGAIN once it
	 * is all read.
	 */
	for (i = 0; i < 1024 && n > 0; i++)
		n = nl_recvmsgs_report(d->events, cb);
	nl_cb_put(cb);
	if (n == -NLE_NOMEM) {	/* ENOBUFS: the socket overflowed */
		d->next_seq = 0;
		d->overflowed = true;
		resync(d, "event socket overflowed");
	} else if ((!n || n == -NLE_AGAIN) && d->overflowed) {
		/*
		 * Until its queue is empty again a congested socket is sent
		 * nothing, and told nothing more (netlink_overrun(),
		 * netlink_rcv_wake(), net/netlink/af_netlink.c, 6.1 and
		 * 6.12): what came while the backlog was read is news only
		 * to a second look.
		 */
		d->overflowed = false;
		d->next_seq = 0;
		resync(d, "event socket drained after an overflow");
	}
	return 0;
}

/* Resolve the family and join its events group. */
static int join_family(struct daemon *d)
{
	int grp;

	d->family = genl_ctrl_resolve(d->req, HBMGUARD_GENL_NAME);
	if (d->family < 0)
		return -ENOENT;
	grp = genl_ctrl_resolve_grp(d->req, HBMGUARD_GENL_NAME,
				    HBMGUARD_GENL_MCGRP_EVENTS);
	if (grp < 0 || nl_socket_add_membership(d->events, grp))
		return -EPERM;
	return 0;
}

/*
 * 4 MiB for bursts of events.  SO_RCVBUF is capped by net.core.rmem_max
 * (208 KiB by default); SO_RCVBUFFORCE is not, given CAP_NET_ADMIN, which
 * joining the group needs anyway (net/core/sock.c, sk_setsockopt(), 6.1
 * and 6.12).
 */
static void set_event_buffer(struct daemon *d)
{
	int size = 4 << 20;

	if (!setsockopt(nl_socket_get_fd(d->events), SOL_SOCKET, SO_RCVBUFFORCE, &size,
			sizeof(size)))
		return;
	fprintf(stderr, "<4>hbmguardd: SO_RCVBUFFORCE: %s: the event buffer is capped by net.core.rmem_max\n",
		strerror(errno));
	nl_socket_set_buffer_size(d->events, size, 0);
}

/*
 * Only the kernel (port 0) speaks to the daemon's netlink sockets.  Anyone
 * with CAP_NET_ADMIN can unicast to a generic netlink socket or multicast to
 * its groups (netlink_sendmsg() and netlink_allowed() in
 * net/netlink/af_netlink.c of 6.1 and 6.12: genetlink has no
 * NL_CFG_F_NONROOT_SEND): a forged UE event would open incidents and end
 * other users' ranks, a forged dump put made-up pages into the state files.
 */
static int from_kernel(struct nl_msg *msg, void *arg)
{
	(void)arg;
	return nlmsg_get_src(msg)->nl_pid ? NL_SKIP : NL_OK;
}

static int setup_netlink(struct daemon *d)
{
	int notify, err;

	d->req = nl_socket_alloc();
	d->events = nl_socket_alloc();
	if (!d->req || !d->events || genl_connect(d->req) || genl_connect(d->events))
		return -ENOMEM;
	nl_socket_modify_cb(d->req, NL_CB_MSG_IN, NL_CB_CUSTOM, from_kernel, NULL);
	nl_socket_modify_cb(d->events, NL_CB_MSG_IN, NL_CB_CUSTOM, from_kernel, NULL);
	notify = genl_ctrl_resolve_grp(d->req, "nlctrl", "notify");
	if (notify < 0 || nl_socket_add_membership(d->events, notify))
		return -EPERM;
	err = join_family(d);
	if (err)
		return err;
	nl_socket_disable_seq_check(d->events);
	nl_socket_set_nonblocking(d->events);
	set_event_buffer(d);
	nl_socket_modify_cb(d->events, NL_CB_VALID, NL_CB_CUSTOM, on_event, d);
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d;
	const char *config = HBM_CONFIG_PATH;
	bool config_given = false;
	char err_msg[512];
	sigset_t mask;
	int opt, err;

	while ((opt = getopt(argc, argv, "c:")) != -1) {
		if (opt != 'c') {
			fprintf(stderr, "usage: hbmguardd [-c CONFIG]\n");
			return 2;
		}
		config = optarg;
		config_given = true;
	}
	d.config_path = config;
	d.started = time(NULL);
	d.control = -1;
	hbm_config_defaults(&d.cfg);
	err = hbm_config_load(config, &d.cfg, err_msg, sizeof(err_msg));
	if (err && (err != -ENOENT || config_given)) {
		fprintf(stderr, "<3>hbmguardd: %s\n", err_msg);
		return EX_CONFIG;	/* the unit does not restart on it */
	}
	mkdir(d.cfg.state_dir, 0700);
	d.state_dir = open(d.cfg.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d.state_dir < 0) {
		fprintf(stderr, "<3>hbmguardd: %s: %s\n", d.cfg.state_dir, strerror(errno));
		return 1;
	}
	err = setup_netlink(&d);
	if (err) {
		fprintf(stderr, "<3>hbmguardd: the hbmguard netlink family: %s%s\n",
			strerror(-err), err == -ENOENT ? " (is the module loaded?)" : "");
		return 1;
	}
	register_ranges(&d);
	if (sync_devices(&d, ALL_DEVICES, SYNC_START)) {
		fprintf(stderr, "<3>hbmguardd: cannot read the devices\n");
		return 1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);	/* sd-event takes them as events */
	if (sd_event_default(&d.loop) < 0 ||
	    sd_event_add_io(d.loop, NULL, nl_socket_get_fd(d.events), EPOLLIN,
			    on_readable, &d) < 0 ||
	    sd_event_add_signal(d.loop, NULL, SIGTERM, NULL, NULL) < 0 ||
	    sd_event_add_signal(d.loop, NULL, SIGINT, NULL, NULL) < 0 ||
	    sd_event_add_signal(d.loop, NULL, SIGHUP, on_reload, &d) < 0 ||
	    sd_event_add_post(d.loop, NULL, on_post, &d) < 0 ||
	    /* WATCHDOG=1 from the loop itself, when the unit asks for it */
	    sd_event_set_watchdog(d.loop, true) < 0) {
		fprintf(stderr, "<3>hbmguardd: cannot set up the event loop\n");
		return 1;
	}
	/*
	 * Without a journal (an initramfs, a container) sd_journal_send()
	 * succeeds silently: entries go to stderr then.
	 */
	d.journald = !access("/run/systemd/journal/socket", F_OK);
	recovery_load(&d);
	err = control_setup(&d);
	if (err) {
		fprintf(stderr, "<3>hbmguardd: control socket %s: %s\n",
			d.cfg.control_socket, strerror(-err));
		return 1;
	}
	if (count_unsaved(&d))
		daemon_save_failed(&d);
	daemon_notify_status(&d);
	sd_notify(0, "READY=1");
	fprintf(stderr, "<6>hbmguardd: ready, state in %s, control socket %s\n",
		d.cfg.state_dir, d.cfg.control_socket);
	err = sd_event_loop(d.loop);
	sd_notify(0, "STOPPING=1");
	control_close(&d);
	sd_event_source_unref(d.retry);
	sd_event_unref(d.loop);
	nl_socket_free(d.events);
	nl_socket_free(d.req);
	close(d.state_dir);
	return err < 0 ? 1 : 0;
}
