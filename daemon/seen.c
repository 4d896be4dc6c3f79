// SPDX-License-Identifier: GPL-2.0
/*
 * What hbmguardd has seen of the kernel's events (seen.h).  Pure functions,
 * for the unit tests.
 *
 * A device's seen set holds every page whose lost data recovery has acted
 * upon, and those read back from a restored table (old news): up to 10^6
 * ranges, into which a retirement inserts one.  So the set is a B+tree, and
 * a change costs O(log n) per range it touches, not a rebuild (issue 17).
 * Nodes of 255 slots (4 KiB): a leaf's ranges, or an inner node's children
 * keyed by the offset of the first range below them, kept exact so that a
 * descent finds the first range that ends at or after an offset.  Every
 * node but the root and the last of its level holds at least half; a node
 * that overflows splits in two halves, except the last node overflowing at
 * its end (a table read, in ascending order), which stays full and starts
 * a node of its own: 10^6 one-page ranges read so take 3922 leaves, 16 MiB,
 * as a sorted array would.  An append past the last range goes into the
 * last leaf directly: O(1) but once a leaf.  A node below half takes from
 * a neighbour, or merges with it.
 *
 * An insertion needs at most a node per level and a new root: they are
 * kept aside first (reserve()), so that a change cannot fail half-done and
 * -ENOMEM leaves the set as it was; a removal allocates nothing.
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
 * Room for HBM_RANGES_MIN ranges, then for the next power of two: a list
 * grows by doubling (it has no capacity field: its size says when).
 */
#define HBM_RANGES_MIN	16

/* Append a range to a list, merged with its last when they touch. */
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

void hbm_ranges_free(struct hbm_ranges *s)
{
	free(s->r);
	s->r = NULL;
	s->nr = 0;
}

#define NODE_MAX	HBM_RANGE_NODE_MAX
#define NODE_MIN	(NODE_MAX / 2)
/* Every node but the root holds NODE_MIN: 2^64 pages need fewer levels. */
#define HEIGHT_MAX	12

/* A descent: the node and the slot taken at each level, 0 the leaf. */
struct path {
	struct hbm_range_node *node[HEIGHT_MAX];
	uint32_t slot[HEIGHT_MAX];
};

__attribute__((weak)) void *hbm_range_node_alloc(size_t size)
{
	return malloc(size);
}

static uint64_t range_end(const struct hbm_range *r)
{
	return r->offset + r->length;
}

static uint64_t key(const struct hbm_range_node *n, uint32_t i)
{
	return n->level ? n->e[i].c.first : n->e[i].r.offset;
}

static struct hbm_range *at(const struct path *p)
{
	return &p->node[0]->e[p->slot[0]].r;
}

/*
 * GCC 12.2 at -O2 (bookworm's 12.2.0-14) miscompiles the callers of these
 * two: IVOPTs gives find()'s p->node[l] and p->slot[l] one induction
 * variable and writes the store as a 0B-based address with p in the index;
 * the late modref pass takes a 0B-based access for a NULL dereference and
 * leaves the store out of find()'s summary (-fdump-ipa-modref2: "NULL
 * memory access; terminating BB"); so a caller's path is taken as unchanged
 * by the call: a trap (ud2) on a zeroed p.node[0] in hbm_range_set_add(), a
 * stale one in hbm_range_set_remove().  -fno-ivopts or -fno-ipa-modref
 * avoid it, as do -O1 and clang; GCC 13's "avoid zero-based memory
 * references in IVOPTs" (13dfb01e5c30) is the likely fix, not in bookworm.
 * No summary across these calls, then: noipa.  No other file of the daemon,
 * libhbmguard or the core shows the pattern in its modref2 dump.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define NO_IPA	__attribute__((noipa))
#else
#define NO_IPA
#endif

/* The next range after @p's; false, @p unchanged, at the last. */
NO_IPA static bool step(const struct hbm_range_set *s, struct path *p)
{
	uint32_t l;

	if (p->slot[0] + 1 < p->node[0]->nr) {
		p->slot[0]++;
		return true;
	}
	for (l = 1; l < s->height && p->slot[l] + 1 >= p->node[l]->nr; l++)
		;
	if (l >= s->height)
		return false;
	p->slot[l]++;
	while (l--) {
		p->node[l] = p->node[l + 1]->e[p->slot[l + 1]].c.child;
		p->slot[l] = 0;
	}
	return true;
}

/* The first range that ends at or after @x (touching it); false if none. */
NO_IPA static bool find(const struct hbm_range_set *s, uint64_t x, struct path *p)
{
	struct hbm_range_node *n = s->root;
	uint32_t l = s->height;

	if (!n)
		return false;
	while (l--) {
		uint32_t lo = 0, hi = n->nr;

		p->node[l] = n;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (l ? n->e[mid].c.first <= x : range_end(&n->e[mid].r) < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (l) {	/* the last child keyed at or below @x, or the first */
			p->slot[l] = lo ? lo - 1 : 0;
			n = n->e[p->slot[l]].c.child;
		} else {
			p->slot[0] = lo;
		}
	}
	return p->slot[0] < p->node[0]->nr || step(s, p);
}

/* Node @l of @p has a new first key: so have its ancestors where it is first. */
static void fix_keys(const struct hbm_range_set *s, struct path *p, uint32_t l)
{
	uint64_t first = key(p->node[l], 0);

	for (; l + 1 < s->height; l++) {
		p->node[l + 1]->e[p->slot[l + 1]].c.first = first;
		if (p->slot[l + 1])
			break;
	}
}

static void find_last(struct hbm_range_set *s)
{
	struct hbm_range_node *n = s->root;

	while (n && n->level)
		n = n->e[n->nr - 1].c.child;
	s->last = n;
}

static int reserve(struct hbm_range_set *s)
{
	while (s->nr_spare < s->height + 1) {
		struct hbm_range_node *n = hbm_range_node_alloc(sizeof(*n));

		if (!n)
			return -ENOMEM;
		n->e[0].c.child = s->spare;
		s->spare = n;
		s->nr_spare++;
	}
	return 0;
}

static struct hbm_range_node *take(struct hbm_range_set *s, uint32_t level)
{
	struct hbm_range_node *n = s->spare;

	s->spare = n->e[0].c.child;
	s->nr_spare--;
	n->nr = 0;
	n->level = level;
	return n;
}

static void drop(struct hbm_range_set *s, struct hbm_range_node *n)
{
	if (s->nr_spare >= s->height + 1) {
		free(n);
		return;
	}
	n->e[0].c.child = s->spare;
	s->spare = n;
	s->nr_spare++;
}

static void open_slot(struct hbm_range_set *s, struct hbm_range_node *n, uint32_t i,
		      union hbm_range_slot e)
{
	memmove(&n->e[i + 1], &n->e[i], (n->nr - i) * sizeof(n->e[0]));
	s->moved += n->nr - i;
	n->e[i] = e;
	n->nr++;
}

static bool last_of_level(const struct hbm_range_set *s, const struct path *p, uint32_t l)
{
	for (l++; l < s->height; l++)
		if (p->slot[l] + 1 != p->node[l]->nr)
			return false;
	return true;
}

/* Put @e at slot p->slot[@l] of node p->node[@l]; reserve() first. */
static void insert_at(struct hbm_range_set *s, struct path *p, uint32_t l,
		      union hbm_range_slot e)
{
	struct hbm_range_node *n = p->node[l], *m, *root;
	uint32_t i = p->slot[l], half = (NODE_MAX + 1) / 2;
	union hbm_range_slot up;

	if (n->nr < NODE_MAX) {
		open_slot(s, n, i, e);
		if (!i)
			fix_keys(s, p, l);
		return;
	}
	m = take(s, n->level);
	if (i == n->nr && last_of_level(s, p, l)) {
		m->e[m->nr++] = e;	/* ascending: @n stays full */
	} else {
		m->nr = NODE_MAX - half;
		memcpy(m->e, &n->e[half], m->nr * sizeof(m->e[0]));
		s->moved += m->nr;
		n->nr = half;
		if (i <= half) {
			open_slot(s, n, i, e);
			if (!i)
				fix_keys(s, p, l);
		} else {
			open_slot(s, m, i - half, e);
		}
	}
	up.c.first = key(m, 0);
	up.c.child = m;
	if (l + 1 == s->height) {
		root = take(s, l + 1);
		root->e[0].c.first = key(n, 0);
		root->e[0].c.child = n;
		root->e[1] = up;
		root->nr = 2;
		s->root = root;
		s->height++;
		return;
	}
	p->slot[l + 1]++;
	insert_at(s, p, l + 1, up);
}

/* Take slot p->slot[@l] out of node p->node[@l]. */
static void delete_at(struct hbm_range_set *s, struct path *p, uint32_t l)
{
	struct hbm_range_node *n = p->node[l], *parent, *left, *right;
	uint32_t i = p->slot[l], j, move;
	size_t size = sizeof(n->e[0]);

	n->nr--;
	memmove(&n->e[i], &n->e[i + 1], (n->nr - i) * size);
	s->moved += n->nr - i;
	if (l + 1 == s->height) {	/* the root: empty, or one child */
		if (!n->nr || (n->level && n->nr == 1)) {
			s->root = n->nr ? n->e[0].c.child : NULL;
			s->height--;
			drop(s, n);
		}
		return;
	}
	if (!i && n->nr)
		fix_keys(s, p, l);
	if (n->nr >= NODE_MIN)
		return;
	parent = p->node[l + 1];
	j = p->slot[l + 1];
	if (j + 1 < parent->nr) {
		left = n;
		right = parent->e[j + 1].c.child;
	} else {
		left = parent->e[--j].c.child;
		right = n;
	}
	if (left->nr + right->nr <= NODE_MAX) {
		memcpy(&left->e[left->nr], right->e, right->nr * size);
		s->moved += right->nr;
		left->nr += right->nr;
		drop(s, right);
		parent->e[j].c.first = key(left, 0);
		p->slot[l + 1] = j;
		if (!j)
			fix_keys(s, p, l + 1);
		p->slot[l + 1] = j + 1;
		delete_at(s, p, l + 1);
		return;
	}
	/* The short one takes from the other up to half of both. */
	move = (left->nr + right->nr) / 2 - n->nr;
	if (n == left) {
		memcpy(&left->e[left->nr], right->e, move * size);
		memmove(right->e, &right->e[move], (right->nr - move) * size);
		left->nr += move;
		right->nr -= move;
	} else {
		memmove(&right->e[move], right->e, right->nr * size);
		memcpy(right->e, &left->e[left->nr - move], move * size);
		left->nr -= move;
		right->nr += move;
	}
	s->moved += move + right->nr;
	parent->e[j + 1].c.first = key(right, 0);
}

/* Past the last range: into the last leaf, or a new one when it is full. */
static void append(struct hbm_range_set *s, uint64_t offset, uint64_t length)
{
	union hbm_range_slot e = { .r = { offset, length } };
	struct hbm_range_node *leaf = s->last;
	struct path p;
	uint32_t l;

	if (leaf && range_end(&leaf->e[leaf->nr - 1].r) == offset) {
		leaf->e[leaf->nr - 1].r.length += length;
		return;
	}
	s->nr++;
	if (!leaf) {
		s->root = s->last = take(s, 0);
		s->height = 1;
		s->root->e[s->root->nr++] = e;
		return;
	}
	if (leaf->nr < NODE_MAX) {
		leaf->e[leaf->nr++] = e;
		return;
	}
	p.node[s->height - 1] = s->root;
	for (l = s->height - 1; l; l--) {
		p.slot[l] = p.node[l]->nr - 1;
		p.node[l - 1] = p.node[l]->e[p.slot[l]].c.child;
	}
	p.slot[0] = leaf->nr;
	insert_at(s, &p, 0, e);
	find_last(s);
}

/*
 * A part of the range added that the set did not hold; @fresh NULL when
 * the caller does not ask.
 */
static int push_fresh(struct hbm_ranges *fresh, uint64_t offset, uint64_t length)
{
	return fresh ? push(fresh, offset, length) : 0;
}

/* Where @fresh stood, to put it back: its size and its last range's length. */
struct fresh_mark {
	size_t nr;
	uint64_t length;
};

static struct fresh_mark fresh_mark(const struct hbm_ranges *fresh)
{
	if (!fresh || !fresh->nr)
		return (struct fresh_mark){ 0 };
	return (struct fresh_mark){ fresh->nr, fresh->r[fresh->nr - 1].length };
}

static int fresh_put_back(struct hbm_ranges *fresh, struct fresh_mark m, int err)
{
	if (fresh) {
		fresh->nr = m.nr;
		if (m.nr)
			fresh->r[m.nr - 1].length = m.length;
	}
	return err;
}

/**
 * hbm_range_set_add() - add a range to a set
 * @s: the set
 * @offset: the range
 * @length: its length
 * @fresh: what of the range @s did not hold, appended (may be NULL)
 *
 * Return: 0, -ERANGE when the range wraps, or -ENOMEM (@s and @fresh as
 * they were).
 */
int hbm_range_set_add(struct hbm_range_set *s, uint64_t offset, uint64_t length,
		      struct hbm_ranges *fresh)
{
	struct fresh_mark was = fresh_mark(fresh);
	uint64_t end = offset + length, lo, hi, upto = offset;
	const struct hbm_range *last = s->last ? &s->last->e[s->last->nr - 1].r : NULL;
	struct hbm_range first;
	struct path p = { 0 }, q;
	size_t touched = 0;
	int err = 0;

	if (end < offset)
		return -ERANGE;
	if (!length)
		return 0;
	if (!last || offset >= range_end(last)) {	/* a table read, in order: O(1) */
		err = reserve(s) ?: push_fresh(fresh, offset, length);
		if (err)
			return fresh_put_back(fresh, was, err);
		append(s, offset, length);
		return 0;
	}
	/* The ranges it overlaps or touches, and the gaps between them. */
	find(s, offset, &p);
	first = *at(&p);
	q = p;
	do {
		const struct hbm_range *r = at(&q);

		if (r->offset > end)
			break;
		if (r->offset > upto)
			err = push_fresh(fresh, upto, r->offset - upto);
		if (range_end(r) > upto)
			upto = range_end(r);
		touched++;
	} while (!err && step(s, &q));
	if (!err && upto < end)
		err = push_fresh(fresh, upto, end - upto);
	if (!err && !touched)
		err = reserve(s);
	if (err)
		return fresh_put_back(fresh, was, err);
	if (!touched) {
		insert_at(s, &p, 0, (union hbm_range_slot){ .r = { offset, length } });
		s->nr++;
		find_last(s);
		return 0;
	}
	lo = first.offset < offset ? first.offset : offset;
	hi = upto > end ? upto : end;
	if (touched == 1 && lo == first.offset && hi == range_end(&first))
		return 0;	/* held whole already (a table read again) */
	/* Into the first it touches: the others out, then it widened. */
	while (--touched) {
		find(s, offset, &q);
		step(s, &q);
		delete_at(s, &q, 0);
		s->nr--;
	}
	find(s, offset, &p);
	*at(&p) = (struct hbm_range){ lo, hi - lo };
	if (!p.slot[0])
		fix_keys(s, &p, 0);
	find_last(s);
	return 0;
}

/**
 * hbm_range_set_remove() - take a range out of a set
 * @s: the set
 * @offset: the range
 * @length: its length
 *
 * Return: 0, -ERANGE when the range wraps, or -ENOMEM (@s unchanged).
 */
int hbm_range_set_remove(struct hbm_range_set *s, uint64_t offset, uint64_t length)
{
	uint64_t end = offset + length;
	struct path p;
	int err = 0;

	if (end < offset)
		return -ERANGE;
	if (!length)
		return 0;
	while (find(s, offset, &p)) {
		struct hbm_range *r = at(&p);
		uint64_t a = r->offset, b = range_end(r);

		if (b == offset) {	/* touches it: the next, if any */
			if (!step(s, &p))
				break;
			r = at(&p);
			a = r->offset;
			b = range_end(r);
		}
		if (a >= end)
			break;
		if (a < offset && b > end) {	/* splits in two */
			err = reserve(s);
			if (err)
				break;
			r->length = offset - a;
			p.slot[0]++;
			insert_at(s, &p, 0, (union hbm_range_slot){ .r = { end, b - end } });
			s->nr++;
			break;
		}
		if (a < offset) {
			r->length = offset - a;
		} else if (b > end) {
			*r = (struct hbm_range){ end, b - end };
			if (!p.slot[0])
				fix_keys(s, &p, 0);
			break;
		} else {
			delete_at(s, &p, 0);
			s->nr--;
		}
	}
	find_last(s);
	return err;
}

/**
 * hbm_range_set_remove_around() - take every range a range meets out whole
 * @s: the set
 * @offset: the range
 * @length: its length
 * @around: set to the parts of those ranges outside this one, before it
 *	and after it (length 0: none)
 *
 * No range is split, so no node is needed: what is left to do where
 * hbm_range_set_remove() found no memory, at the cost of @around, which
 * the caller may add back once it can.
 */
void hbm_range_set_remove_around(struct hbm_range_set *s, uint64_t offset, uint64_t length,
				 struct hbm_range around[2])
{
	uint64_t start = offset, end = offset + length, stop = end;
	struct path p;

	around[0] = around[1] = (struct hbm_range){ 0 };
	if (end < offset || !length)
		return;
	if (find(s, offset, &p) && at(&p)->offset < offset && range_end(at(&p)) > offset)
		start = at(&p)->offset;
	if (find(s, end, &p) && at(&p)->offset < end)
		stop = range_end(at(&p));
	hbm_range_set_remove(s, start, stop - start);	/* splits none: cannot fail */
	around[0] = (struct hbm_range){ start, offset - start };
	around[1] = (struct hbm_range){ end, stop - end };
}

static void free_node(struct hbm_range_node *n)
{
	uint32_t i;

	for (i = 0; n->level && i < n->nr; i++)
		free_node(n->e[i].c.child);
	free(n);
}

void hbm_range_set_free(struct hbm_range_set *s)
{
	if (s->root)
		free_node(s->root);
	while (s->spare) {
		struct hbm_range_node *n = s->spare;

		s->spare = n->e[0].c.child;
		free(n);
	}
	*s = (struct hbm_range_set){ 0 };
}
