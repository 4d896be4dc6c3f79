// SPDX-License-Identifier: GPL-2.0
/*
 * What hbmguardd has seen of the kernel's events (seen.h).  Pure functions,
 * for the unit tests.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/hbmguard.h>

#include "seen.h"

/**
 * hbm_seq_lost() - whether events were lost before this one
 * @next: the seqnum expected next, 0 for any (after a resync); updated
 * @seq: the message's seqnum
 * @type: its enum hbmguard_event_type
 *
 * A DROPPED message carries the seqnum of the event the module sends right
 * after it (uapi/linux/hbmguard.h, HBMGUARD_CMD_EVENT): that event is the
 * one expected next, not a second gap.
 *
 * Return: true when the listener must dump the tables again.
 */
bool hbm_seq_lost(uint64_t *next, uint64_t seq, uint32_t type)
{
	bool lost = (*next && seq != *next) || type == HBMGUARD_EVENT_DROPPED;

	*next = type == HBMGUARD_EVENT_DROPPED ? seq : seq + 1;
	return lost;
}

/*
 * Room for HBM_RANGES_MIN ranges, then for the next power of two: a set
 * grows by doubling (it has no capacity field: its size says when), so a
 * table read of 10^6 ranges appends in O(1) each.
 */
#define HBM_RANGES_MIN	16

static int push(struct hbm_ranges *s, uint64_t offset, uint64_t length)
{
	struct hbm_range *r;

	if (!length)
		return 0;
	if (s->nr && s->r[s->nr - 1].offset + s->r[s->nr - 1].length == offset) {
		s->r[s->nr - 1].length += length;
		return 0;
	}
	if (!s->nr || (s->nr >= HBM_RANGES_MIN && !(s->nr & (s->nr - 1)))) {
		r = realloc(s->r, (s->nr ? 2 * s->nr : HBM_RANGES_MIN) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		s->r = r;
	}
	s->r[s->nr++] = (struct hbm_range){ offset, length };
	return 0;
}

/* Replace @s by @out, or drop @out when @err. */
static int settle(struct hbm_ranges *s, struct hbm_ranges *out, int err)
{
	if (err) {
		hbm_ranges_free(out);
		return err;
	}
	free(s->r);
	*s = *out;
	return 0;
}

/* A part of the range added that the set did not hold: into both. */
static int push_fresh(struct hbm_ranges *out, struct hbm_ranges *fresh, uint64_t offset,
		      uint64_t length)
{
	int err = push(out, offset, length);

	if (!err && fresh)
		err = push(fresh, offset, length);
	return err;
}

/* Whether one range of @s holds all of [@offset, @end): a binary search. */
static bool within(const struct hbm_ranges *s, uint64_t offset, uint64_t end)
{
	size_t lo = 0, hi = s->nr;

	while (lo < hi) {	/* the first range that ends after @offset */
		size_t mid = lo + (hi - lo) / 2;

		if (s->r[mid].offset + s->r[mid].length <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nr && s->r[lo].offset <= offset &&
	       s->r[lo].offset + s->r[lo].length >= end;
}

/**
 * hbm_ranges_add() - add a range to a set
 * @s: the set
 * @offset: the range
 * @length: its length
 * @fresh: what of the range @s did not hold, appended (may be NULL)
 *
 * Return: 0, -ERANGE when the range wraps, or -ENOMEM (@s unchanged).
 */
int hbm_ranges_add(struct hbm_ranges *s, uint64_t offset, uint64_t length,
		   struct hbm_ranges *fresh)
{
	struct hbm_ranges out = { 0 };
	uint64_t end = offset + length, at = offset;
	size_t i;
	int err = 0;

	if (end < offset)
		return -ERANGE;
	/*
	 * At or after the end of every range (a table read walks in order):
	 * all of it fresh, appended in O(1), where a rebuild would make 10^6
	 * pages read at a start cost 10^12.
	 */
	if (!s->nr || offset >= s->r[s->nr - 1].offset + s->r[s->nr - 1].length) {
		err = fresh ? push(fresh, offset, length) : 0;
		return err ?: push(s, offset, length);
	}
	/* Held whole already (a table read again after a resync): O(log n). */
	if (length && within(s, offset, end))
		return 0;
	for (i = 0; i < s->nr && !err; i++) {
		uint64_t a = s->r[i].offset, b = a + s->r[i].length;

		if (at < end && a > at) {	/* a part of the range not in @s */
			uint64_t upto = a < end ? a : end;

			err = push_fresh(&out, fresh, at, upto - at);
			at = upto;
		}
		if (!err)
			err = push(&out, a, b - a);
		if (b > at)
			at = b;
	}
	if (!err && at < end)
		err = push_fresh(&out, fresh, at, end - at);
	return settle(s, &out, err);
}

/**
 * hbm_ranges_remove() - take a range out of a set
 * @s: the set
 * @offset: the range
 * @length: its length
 *
 * Return: 0, -ERANGE when the range wraps, or -ENOMEM (@s unchanged).
 */
int hbm_ranges_remove(struct hbm_ranges *s, uint64_t offset, uint64_t length)
{
	struct hbm_ranges out = { 0 };
	uint64_t end = offset + length;
	size_t i;
	int err = 0;

	if (end < offset)
		return -ERANGE;
	for (i = 0; i < s->nr && !err; i++) {
		uint64_t a = s->r[i].offset, b = a + s->r[i].length;

		if (b <= offset || a >= end) {
			err = push(&out, a, b - a);
			continue;
		}
		if (a < offset)
			err = push(&out, a, offset - a);
		if (!err && b > end)
			err = push(&out, end, b - end);
	}
	return settle(s, &out, err);
}

void hbm_ranges_free(struct hbm_ranges *s)
{
	free(s->r);
	s->r = NULL;
	s->nr = 0;
}
