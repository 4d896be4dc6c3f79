// SPDX-License-Identifier: GPL-2.0
/*
 * Data lost where no table read can show it (losses.h).  Pure, for the
 * unit tests; the kernel link (kernel.c) reads the counts and the events.
 *
 * An event with HBMGUARD_PAGES_DATA_LOST says a change lost a page's data
 * where its source may not say it (the memory that held it failed: its
 * spare, or its own frame while it was FAILED; or the change could not
 * move it): when that event is lost, a resync's table read cannot show it.  The module counts such events per device (DEVICE_GET's DATA_LOST,
 * with DATA_LOST_SEQNUM, the last one's, read at one instant, and
 * ADDED_SEQNUM, which registration of the id counted them).  Once every
 * event up to that seqnum is read or lost, those heard since the last look
 * must make up the rise; which pages the unheard ones were, nobody can
 * tell, so the link is told how many (the whole device's ranks recover).
 * Events come in seqnum order, so an event read means every one before it
 * is read or lost; so does the socket read empty after the module's seqnum
 * was read (kernel.c, settle()).
 *
 * An entry outlives its device (the id's next registration replaces it): a
 * loss unheard before the device left is still told.  A count is never
 * taken for more than the module said: where the daemon cannot tell what
 * it heard of a registration (it started, or a reload's read failed), the
 * losses so far are old news, and one may be missed but none is made up.
 */
#include <stdio.h>

#include "losses.h"

static void forget(struct hbm_losses *l, uint32_t id)
{
	l->due -= l->dev[id].due;
	l->dev[id] = (struct hbm_device_losses){ 0 };
}

static void compare(struct hbm_losses *l, uint32_t id)
{
	struct hbm_device_losses *d = &l->dev[id];
	uint64_t known = d->base + d->heard;
	uint64_t unheard = d->due_count > known ? d->due_count - known : 0;

	d->base = d->due_count;
	d->base_seqnum = d->due_seqnum;
	d->heard = 0;
	d->due = false;
	l->due--;
	if (unheard)
		l->unheard(l->ctx, id, d->identity, unheard);
}

/**
 * hbm_losses_read_to() - every event up to one read or lost
 * @l: the losses
 * @seqnum: that event's seqnum (one before the event just read, or the
 *	module's seqnum when its socket was read empty after it)
 *
 * The counts read before it are compared: where one rose by more than was
 * heard, @l->unheard is told.
 */
void hbm_losses_read_to(struct hbm_losses *l, uint64_t seqnum)
{
	uint32_t id;

	if (seqnum > l->read_to)
		l->read_to = seqnum;
	for (id = 0; l->due && id < HBMGUARD_MAX_DEVICES; id++)
		if (l->dev[id].due && l->dev[id].due_seqnum <= l->read_to)
			compare(l, id);
}

/**
 * hbm_losses_seen() - a device's count read
 * @l: the losses
 * @id: its id
 * @identity: its identity, for the telling
 * @c: its count
 * @at_start: read at the daemon's start
 *
 * At start its losses so far are old news.  Another registration than the
 * one counted (added unheard, found by a resync) counts from its
 * DEVICE_ADDED, every loss since to be heard; one under an id none was
 * counted for (a reload whose read failed) as at start.  Otherwise the
 * count is to compare once every event up to its last is read or lost.
 */
void hbm_losses_seen(struct hbm_losses *l, uint32_t id, const char *identity,
		     const struct hbm_loss_count *c, bool at_start)
{
	struct hbm_device_losses *d;

	if (id >= HBMGUARD_MAX_DEVICES)
		return;
	d = &l->dev[id];
	if (at_start || d->added != c->added_seqnum) {
		bool old_news = at_start || !d->added;

		forget(l, id);
		d->added = c->added_seqnum;
		d->base_seqnum = c->added_seqnum;
		if (old_news) {
			d->base = c->count;
			if (c->last_seqnum > d->base_seqnum)
				d->base_seqnum = c->last_seqnum;
		}
	}
	snprintf(d->identity, sizeof(d->identity), "%s", identity);
	if (c->count == d->base)
		return;		/* none since: none unheard */
	l->due += !d->due;
	d->due = true;
	d->due_count = c->count;
	d->due_seqnum = c->last_seqnum;
}

/**
 * hbm_losses_added() - a device's DEVICE_ADDED, heard
 * @l: the losses
 * @id: its id
 * @seqnum: the event's
 *
 * A registration whose every loss is to be heard: what the id counted
 * before is forgotten.
 */
void hbm_losses_added(struct hbm_losses *l, uint32_t id, uint64_t seqnum)
{
	if (id >= HBMGUARD_MAX_DEVICES)
		return;
	forget(l, id);
	l->dev[id].added = l->dev[id].base_seqnum = seqnum;
}

/**
 * hbm_losses_heard() - an event of a device that said data was lost, heard
 * @l: the losses
 * @id: its device's id
 * @seqnum: the event's
 *
 * One the count read last already holds is not counted again.
 */
void hbm_losses_heard(struct hbm_losses *l, uint32_t id, uint64_t seqnum)
{
	if (id < HBMGUARD_MAX_DEVICES && seqnum > l->dev[id].base_seqnum)
		l->dev[id].heard++;
	hbm_losses_read_to(l, seqnum);
}

/**
 * hbm_losses_renumbered() - the module reloaded
 * @l: the losses
 *
 * The old module's events are all read or lost: its counts compared, then
 * forgotten.  The new module numbers its events from 1 again.
 */
void hbm_losses_renumbered(struct hbm_losses *l)
{
	uint32_t id;

	hbm_losses_read_to(l, UINT64_MAX);
	for (id = 0; id < HBMGUARD_MAX_DEVICES; id++)
		forget(l, id);
	l->read_to = 0;
}
