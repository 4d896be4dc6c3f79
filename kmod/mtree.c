// SPDX-License-Identifier: GPL-2.0
/*
 * One copy of the mapped table: a B+tree of 512-byte nodes addressed by
 * index, so that userspace can walk it where it is mapped.  The layout and
 * the reader's algorithm are in uapi/linux/hbmguard.h; why a tree, and why
 * two copies, in map.c.
 *
 * Leaves hold up to 31 extents and inner nodes up to 63 children, keyed by
 * the smallest page below them.  Every node but the root holds at least
 * half (15 extents, 31 children), except the last leaf: a leaf that
 * overflows at the end of the table keeps its 31 and the new extent starts
 * a leaf of its own, so a table filled in ascending order (a restore) packs
 * its leaves full.  An underfull node takes from its neighbour or merges
 * with it.  So a copy of n extents uses at most n / 15 + n / 465 + a few
 * nodes (hbm_mtree_max_nodes()), about 23 bytes per extent at the 70% fill
 * random inserts give.
 *
 * Keeping a copy equal to the table (table.c): hbm_mtree_span() finds what
 * a change of the table may have rewritten, hbm_mtree_sync() makes the copy
 * equal to the table there, hbm_mtree_rebuild() everywhere; both append
 * what lies past the copy's last extent to its last leaf (append()).
 *
 * A change touches one leaf and the keys on its path, plus a neighbour and
 * a parent when it splits or merges: it moves at most a node (512 bytes),
 * usually a few dozen bytes.  It never allocates: hbm_mtree_reserve() backs
 * enough nodes first, so a change cannot fail half-done.
 */
#include "mtree.h"

#define LEAF_MAX	HBMGUARD_MAP_LEAF_MAX
#define INNER_MAX	HBMGUARD_MAP_INNER_MAX
#define LEAF_MIN	(LEAF_MAX / 2)
#define INNER_MIN	(INNER_MAX / 2)

/**
 * hbm_mtree_node() - node @i of a copy
 * @t: the copy
 * @i: the index, below t->used
 *
 * Return: its address in the chunk that backs it.
 */
struct hbmguard_map_node *hbm_mtree_node(const struct hbm_mtree *t, u32 i)
{
	return (void *)((char *)t->chunk[i / HBM_MNODES_PER_CHUNK] +
			(i % HBM_MNODES_PER_CHUNK) * HBMGUARD_MAP_NODE_SIZE);
}

#define NODE(t, i)	hbm_mtree_node(t, i)

static u32 slot_max(const struct hbmguard_map_node *n)
{
	return n->level ? INNER_MAX : LEAF_MAX;
}

static u32 key(const struct hbmguard_map_node *n, u32 i)
{
	return n->level ? n->in.first[i] : n->ext[i].first;
}

/*
 * Slots of @n whose key is at or below @page.  The node's cache lines are
 * asked for at once: a search of a node that is not in cache then waits
 * for one miss, not for one per probe.
 */
static u32 count_le(const struct hbmguard_map_node *n, u32 page)
{
	u32 lo = 0, hi, off;

	for (off = 64; off < sizeof(*n); off += 64)
		hbm_prefetch((const char *)n + off);
	hi = n->nr;

	if (n->level) {
		while (lo < hi) {
			u32 mid = lo + (hi - lo) / 2;

			if (n->in.first[mid] <= page)
				lo = mid + 1;
			else
				hi = mid;
		}
	} else {
		while (lo < hi) {
			u32 mid = lo + (hi - lo) / 2;

			if (n->ext[mid].first <= page)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return lo;
}

static void slots_move(struct hbmguard_map_node *n, u32 dst, u32 src, u32 cnt)
{
	if (!cnt)
		return;
	if (n->level) {
		memmove(&n->in.first[dst], &n->in.first[src], cnt * sizeof(u32));
		memmove(&n->in.child[dst], &n->in.child[src], cnt * sizeof(u32));
	} else {
		memmove(&n->ext[dst], &n->ext[src], cnt * sizeof(n->ext[0]));
	}
}

static void slots_copy(struct hbmguard_map_node *d, u32 di,
		       const struct hbmguard_map_node *s, u32 si, u32 cnt)
{
	if (!cnt)
		return;
	if (d->level) {
		memcpy(&d->in.first[di], &s->in.first[si], cnt * sizeof(u32));
		memcpy(&d->in.child[di], &s->in.child[si], cnt * sizeof(u32));
	} else {
		memcpy(&d->ext[di], &s->ext[si], cnt * sizeof(d->ext[0]));
	}
}

static void slot_put(struct hbmguard_map_node *n, u32 i,
		     const struct hbmguard_map_entry *e, u32 first, u32 child)
{
	if (n->level) {
		n->in.first[i] = first;
		n->in.child[i] = child;
	} else {
		n->ext[i] = *e;
	}
}

static u32 available(const struct hbm_mtree *t)
{
	return t->nr_free + t->nr_chunks * HBM_MNODES_PER_CHUNK - t->used;
}

static u32 node_alloc(struct hbm_mtree *t, u16 level)
{
	struct hbmguard_map_node *n;
	u32 i;

	if (t->nr_free) {
		i = t->free;
		t->free = NODE(t, i)->in.first[0];
		t->nr_free--;
	} else {
		i = t->used++;
	}
	n = NODE(t, i);
	n->nr = 0;
	n->level = level;
	n->reserved = 0;
	return i;
}

static void node_free(struct hbm_mtree *t, u32 i)
{
	NODE(t, i)->in.first[0] = t->free;
	t->free = i;
	t->nr_free++;
}

static void descend(const struct hbm_mtree *t, u32 page, struct hbm_mpath *p)
{
	u32 n = t->root, l = t->height;

	hbm_mtree_descended();
	while (l--) {
		const struct hbmguard_map_node *node = NODE(t, n);
		u32 c = count_le(node, page);

		p->node[l] = n;
		if (!l) {
			p->slot[0] = c;
			break;
		}
		c = c ? c - 1 : 0;
		p->slot[l] = c;
		n = node->in.child[c];
	}
}

/* The smallest key of the node at level @l changed: carry it up. */
static void fix_min(struct hbm_mtree *t, const struct hbm_mpath *p, u32 l)
{
	for (; l + 1 < t->height; l++) {
		struct hbmguard_map_node *up = NODE(t, p->node[l + 1]);
		u32 s = p->slot[l + 1], k = key(NODE(t, p->node[l]), 0);

		if (up->in.first[s] == k)
			return;
		up->in.first[s] = k;
		if (s)
			return;
	}
}

/* The leaf on @p is the table's last. */
static bool last_leaf(const struct hbm_mtree *t, const struct hbm_mpath *p)
{
	u32 l;

	for (l = 1; l < t->height; l++)
		if (p->slot[l] != NODE(t, p->node[l])->nr - 1u)
			return false;
	return true;
}

/*
 * Insert one slot at @pos of the node at level @l of @p: @e in a leaf,
 * (@first, @child) in an inner node.  Return: the new node to its right when
 * it split, else HBM_MNODE_NONE.
 */
static u32 node_insert(struct hbm_mtree *t, const struct hbm_mpath *p, u32 l, u32 pos,
		       const struct hbmguard_map_entry *e, u32 first, u32 child)
{
	struct hbmguard_map_node *n = NODE(t, p->node[l]), *r;
	u32 max = slot_max(n), left, ri;

	if (n->nr < max) {
		slots_move(n, pos + 1, pos, n->nr - pos);
		slot_put(n, pos, e, first, child);
		n->nr++;
		return HBM_MNODE_NONE;
	}
	ri = node_alloc(t, n->level);
	r = NODE(t, ri);
	/* Of the max + 1 slots, the left node keeps `left`. */
	left = !l && pos == max && last_leaf(t, p) ? max : (max + 1) / 2;
	if (pos < left) {
		slots_copy(r, 0, n, left - 1, max - (left - 1));
		slots_move(n, pos + 1, pos, left - 1 - pos);
		slot_put(n, pos, e, first, child);
	} else {
		slots_copy(r, 0, n, left, pos - left);
		slot_put(r, pos - left, e, first, child);
		slots_copy(r, pos - left + 1, n, pos, max - pos);
	}
	r->nr = max + 1 - left;
	n->nr = left;
	return ri;
}

/* Insert @e where @p, a descent to e->first, found no extent starting there. */
static void insert_at(struct hbm_mtree *t, struct hbm_mpath *p,
		      const struct hbmguard_map_entry *e)
{
	u32 l, pos = p->slot[0], right;

	right = node_insert(t, p, 0, pos, e, 0, 0);
	if (!pos)
		fix_min(t, p, 0);	/* below every extent: the path's keys */
	for (l = 0; right != HBM_MNODE_NONE; l++) {
		u32 k = key(NODE(t, right), 0);

		if (l + 1 == t->height) {
			u32 root = node_alloc(t, l + 1);
			struct hbmguard_map_node *r = NODE(t, root);

			r->in.first[0] = key(NODE(t, t->root), 0);
			r->in.child[0] = t->root;
			r->in.first[1] = k;
			r->in.child[1] = right;
			r->nr = 2;
			t->root = root;
			t->height++;
			break;
		}
		right = node_insert(t, p, l + 1, p->slot[l + 1] + 1, NULL, k, right);
	}
	t->nr++;
}

/*
 * Where the last insertion of an ascending run went: the next extent that
 * falls between it and what follows it in its leaf (or the next leaf's
 * first key) goes in right after it, without a descent.  A restore's span
 * is thousands of extents in order: one descent per leaf, not per extent.
 */
struct mcursor {
	struct hbm_mpath p;	/* slot[0]: the slot after the last insertion */
	u32 bound;		/* the next leaf's first page; 0xffffffff: none */
	bool valid;
};

static bool cursor_fits(const struct hbm_mtree *t, const struct mcursor *c,
			const struct hbmguard_map_entry *e)
{
	const struct hbmguard_map_node *n = NODE(t, c->p.node[0]);
	u32 pos = c->p.slot[0];

	/* A full leaf splits, and the path with it: that takes a descent. */
	return c->valid && n->nr < LEAF_MAX && pos && pos <= n->nr &&
	       n->ext[pos - 1].first < e->first &&
	       e->first < (pos < n->nr ? n->ext[pos].first : c->bound);
}

/* After an insertion at @p into a leaf that had room: the cursor past it. */
static void cursor_set(const struct hbm_mtree *t, struct mcursor *c,
		       const struct hbm_mpath *p)
{
	u32 l;

	c->p = *p;
	c->p.slot[0]++;
	c->bound = 0xffffffffU;
	for (l = 1; l < t->height; l++) {
		const struct hbmguard_map_node *up = NODE(t, p->node[l]);

		if (p->slot[l] + 1u < up->nr) {
			c->bound = up->in.first[p->slot[l] + 1];
			break;
		}
	}
	c->valid = true;
}

/*
 * Insert, or with @update overwrite, the extent at e->first; through @cur,
 * when given, as the next of an ascending run.  Return: as
 * hbm_mtree_upsert().
 */
static int put(struct hbm_mtree *t, const struct hbmguard_map_entry *e, bool update,
	       struct mcursor *cur)
{
	struct hbmguard_map_node *n;
	struct hbm_mpath p;
	bool room;

	if (cur && cursor_fits(t, cur, e)) {
		insert_at(t, &cur->p, e);
		cur->p.slot[0]++;
		return 2;
	}
	if (cur)
		cur->valid = false;
	if (t->height) {
		descend(t, e->first, &p);
		n = NODE(t, p.node[0]);
		if (p.slot[0] && n->ext[p.slot[0] - 1].first == e->first) {
			struct hbmguard_map_entry *was = &n->ext[p.slot[0] - 1];

			if (!update)
				return -EEXIST;
			if (!memcmp(was, e, sizeof(*e)))
				return 0;
			*was = *e;
			return 1;
		}
	}
	if (available(t) < t->height + 1 || t->height >= HBMGUARD_MAP_HEIGHT_MAX)
		return -ENOSPC;
	if (!t->height) {
		t->root = node_alloc(t, 0);
		n = NODE(t, t->root);
		n->ext[0] = *e;
		n->nr = 1;
		t->height = 1;
		t->nr = 1;
		return 2;
	}
	room = NODE(t, p.node[0])->nr < LEAF_MAX;
	insert_at(t, &p, e);
	if (cur && room)
		cursor_set(t, cur, &p);
	return 2;
}

/**
 * hbm_mtree_insert() - add an extent
 * @t: the copy
 * @e: the extent; none may start at e->first
 *
 * Return: 0; -EEXIST; -ENOSPC when fewer nodes are backed than a split
 * could need (hbm_mtree_reserve() first).  On error nothing changed.
 */
int hbm_mtree_insert(struct hbm_mtree *t, const struct hbmguard_map_entry *e)
{
	int ret = put(t, e, false, NULL);

	return ret < 0 ? ret : 0;
}

/**
 * hbm_mtree_upsert() - add an extent, or overwrite the one at its first page
 * @t: the copy
 * @e: the extent
 *
 * One descent either way.
 *
 * Return: 0 when the copy held @e already, 1 when it was overwritten, 2
 * when added; -ENOSPC as hbm_mtree_insert().
 */
int hbm_mtree_upsert(struct hbm_mtree *t, const struct hbmguard_map_entry *e)
{
	return put(t, e, true, NULL);
}

/*
 * Extents past the copy's last, in ascending order (a restore after a
 * module load, a rebuild): each goes at the end of the last leaf, which is
 * where put() would descend to, and a full last leaf splits as put() splits
 * it there (insert_at() on the rightmost path).  So the copy comes out node
 * for node as put() of each extent would make it, at a descent per leaf
 * rather than per extent, and a reservation per split rather than per
 * extent: an extent that fits in the last leaf takes no node.
 */
struct mappend {
	struct hbm_mtree *m;
	struct hbm_mpath last;	/* the rightmost path, while m->height */
};

static void append_start(struct mappend *a, struct hbm_mtree *m)
{
	a->m = m;
	if (m->height)
		descend(m, 0xffffffffU, &a->last);
}

/* Return: 2 (added, as put()), or what @reserve or put() returned. */
static int append(struct mappend *a, const struct hbmguard_map_entry *e,
		  int (*reserve)(void *arg), void *arg)
{
	struct hbm_mtree *m = a->m;
	int err;

	if (m->height) {
		struct hbmguard_map_node *leaf = NODE(m, a->last.node[0]);

		/* past the last key, or not appended (put() would say -EEXIST) */
		if (leaf->nr && leaf->ext[leaf->nr - 1].first >= e->first)
			return -EINVAL;
		if (leaf->nr < LEAF_MAX) {
			leaf->ext[leaf->nr++] = *e;
			m->nr++;
			return 2;
		}
	}
	err = reserve(arg);
	if (!err)
		err = put(m, e, false, NULL);
	if (err > 0)
		descend(m, e->first, &a->last);
	return err;
}

/* Every extent of @m starts below @page: what starts at or past it is appended. */
static bool past_last(const struct hbm_mtree *m, u32 page)
{
	struct hbmguard_map_entry last;

	return !hbm_mtree_find(m, 0xffffffffU, &last) || last.first < page;
}

/* The node at level @l of @p is below its minimum: refill it from a neighbour. */
static void rebalance(struct hbm_mtree *t, struct hbm_mpath *p, u32 l)
{
	for (;;) {
		struct hbmguard_map_node *up = NODE(t, p->node[l + 1]), *a, *b;
		u32 s = p->slot[l + 1], ls = s ? s - 1 : 0, bi, total, max;

		/* Every inner node but the root has 31 children, the root 2. */
		a = NODE(t, up->in.child[ls]);
		bi = up->in.child[ls + 1];
		b = NODE(t, bi);
		max = slot_max(a);
		total = a->nr + b->nr;
		if (total <= max) {
			slots_copy(a, a->nr, b, 0, b->nr);
			a->nr = total;
			node_free(t, bi);
			slots_move(up, ls + 1, ls + 2, up->nr - ls - 2);
			up->nr--;
		} else {
			u32 want = total / 2, m;

			if (a->nr < want) {
				m = want - a->nr;
				slots_copy(a, a->nr, b, 0, m);
				slots_move(b, 0, m, b->nr - m);
			} else {
				m = a->nr - want;
				slots_move(b, m, 0, b->nr);
				slots_copy(b, 0, a, want, m);
			}
			b->nr = total - want;
			a->nr = want;
			up->in.first[ls + 1] = key(b, 0);
		}
		/* An emptied node took its neighbour's smallest key. */
		up->in.first[ls] = key(a, 0);
		if (!ls)
			fix_min(t, p, l + 1);
		if (total > max)
			return;
		if (l + 2 == t->height) {
			if (up->nr == 1) {
				t->root = up->in.child[0];
				node_free(t, p->node[l + 1]);
				t->height--;
			}
			return;
		}
		if (up->nr >= INNER_MIN)
			return;
		l++;
	}
}

/**
 * hbm_mtree_delete() - remove the extent that starts at @first
 * @t: the copy
 * @first: its first page
 *
 * Return: 0 or -ENOENT.
 */
int hbm_mtree_delete(struct hbm_mtree *t, u32 first)
{
	struct hbmguard_map_node *n;
	struct hbm_mpath p;
	u32 pos;

	if (!t->height)
		return -ENOENT;
	descend(t, first, &p);
	n = NODE(t, p.node[0]);
	pos = p.slot[0];
	if (!pos || n->ext[pos - 1].first != first)
		return -ENOENT;
	pos--;
	slots_move(n, pos, pos + 1, n->nr - pos - 1);
	n->nr--;
	t->nr--;
	if (t->height == 1) {
		if (!n->nr) {
			node_free(t, t->root);
			t->root = 0;
			t->height = 0;
		}
		return 0;
	}
	if (!pos && n->nr)
		fix_min(t, &p, 0);
	if (n->nr < LEAF_MIN)
		rebalance(t, &p, 0);
	return 0;
}

/**
 * hbm_mtree_find() - the extent that starts last at or below @page
 * @t: the copy
 * @page: the page
 * @out: the extent
 *
 * Return: whether there is one.
 */
bool hbm_mtree_find(const struct hbm_mtree *t, u32 page,
		    struct hbmguard_map_entry *out)
{
	struct hbm_mpath p;

	if (!t->height)
		return false;
	descend(t, page, &p);
	if (!p.slot[0])
		return false;
	*out = NODE(t, p.node[0])->ext[p.slot[0] - 1];
	return true;
}

/* Move @p to the first leaf after its own; false at the end. */
static bool next_leaf(const struct hbm_mtree *t, struct hbm_mpath *p)
{
	u32 l, k;

	for (l = 1; l < t->height; l++) {
		if (p->slot[l] + 1u >= NODE(t, p->node[l])->nr)
			continue;
		p->slot[l]++;
		for (k = l; k > 0; k--) {
			p->node[k - 1] = NODE(t, p->node[k])->in.child[p->slot[k]];
			if (k > 1)
				p->slot[k - 1] = 0;
		}
		return true;
	}
	return false;
}

/*
 * The extents that start in [@start, @end), or with @overlap that overlap
 * it; with @overlap, *@at is the descent to @start.
 */
static u32 list(const struct hbm_mtree *t, u32 start, u32 end,
		struct hbmguard_map_entry *out, u32 max, bool overlap,
		struct hbm_mpath *at)
{
	const struct hbmguard_map_node *n;
	struct hbm_mpath p;
	u32 pos, got = 0;

	if (!t->height || start >= end)
		return 0;
	if (overlap) {
		descend(t, start, &p);
		n = NODE(t, p.node[0]);
		pos = p.slot[0];
		*at = p;
		if (pos && n->ext[pos - 1].first + n->ext[pos - 1].nr > start)
			pos--;
	} else {
		descend(t, start ? start - 1 : 0, &p);
		pos = start ? p.slot[0] : 0;
		n = NODE(t, p.node[0]);
	}
	while (got < max) {
		if (pos == n->nr) {
			if (!next_leaf(t, &p))
				break;
			n = NODE(t, p.node[0]);
			pos = 0;
		}
		if (n->ext[pos].first >= end)
			break;
		out[got++] = n->ext[pos++];
	}
	return got;
}

/**
 * hbm_mtree_list() - the extents that start in [@start, @end), in order
 * @t: the copy
 * @start: first page
 * @end: page past the range
 * @out: filled with up to @max extents
 * @max: room in @out
 *
 * Return: how many were written; @max when there may be more.
 */
u32 hbm_mtree_list(const struct hbm_mtree *t, u32 start, u32 end,
		   struct hbmguard_map_entry *out, u32 max)
{
	return list(t, start, end, out, max, false, NULL);
}

/**
 * hbm_mtree_max_nodes() - nodes a copy of @capacity extents may need
 * @capacity: extents
 *
 * Return: the bound, with room for one change's splits on top.
 */
u32 hbm_mtree_max_nodes(u32 capacity)
{
	u64 level = capacity / LEAF_MIN + 1, total = level;

	while (level > 1) {
		level = level / INNER_MIN + 1;
		total += level;
	}
	return total + HBMGUARD_MAP_HEIGHT_MAX + 1;
}

/**
 * hbm_mtree_reserve() - back enough nodes for @inserts insertions
 * @t: the copy
 * @inserts: insertions to come before the next reservation
 *
 * Return: 0 or -ENOMEM.  Nodes backed stay backed until
 * hbm_mtree_destroy(): readers bound indices by their count.
 */
int hbm_mtree_reserve(struct hbm_mtree *t, u32 inserts)
{
	u64 want = (u64)inserts * (t->height + 2);

	while (available(t) < want && t->nr_chunks < t->max_chunks) {
		int err = hbm_mtree_grow(t, t->nr_chunks + 1);

		if (err)
			return err;
	}
	return 0;
}

/**
 * hbm_mtree_grow() - back at least @chunks chunks of nodes
 * @t: the copy
 * @chunks: at most t->max_chunks
 *
 * Return: 0 or -ENOMEM.
 */
int hbm_mtree_grow(struct hbm_mtree *t, u32 chunks)
{
	while (t->nr_chunks < chunks && t->nr_chunks < t->max_chunks) {
		void *c = hbm_mchunk_alloc();

		if (!c)
			return -ENOMEM;
		hbm_mchunk_publish(&t->chunk[t->nr_chunks], c);
		t->nr_chunks++;
	}
	return 0;
}

/**
 * hbm_mtree_clear() - forget every extent; the nodes stay backed
 * @t: the copy
 */
void hbm_mtree_clear(struct hbm_mtree *t)
{
	t->used = 0;
	t->free = 0;
	t->nr_free = 0;
	t->root = 0;
	t->height = 0;
	t->nr = 0;
}

/**
 * hbm_mtree_init() - an empty copy, no node backed yet
 * @t: the copy
 * @max_nodes: nodes it may ever back (hbm_mtree_max_nodes())
 *
 * Return: 0 or -ENOMEM.
 */
int hbm_mtree_init(struct hbm_mtree *t, u32 max_nodes)
{
	memset(t, 0, sizeof(*t));
	t->max_chunks = DIV_ROUND_UP(max_nodes, HBM_MNODES_PER_CHUNK);
	t->chunk = hbm_zalloc(t->max_chunks * sizeof(*t->chunk));
	return t->chunk ? 0 : -ENOMEM;
}

/**
 * hbm_mtree_destroy() - free a copy's chunks; readers must be gone
 * @t: the copy
 */
void hbm_mtree_destroy(struct hbm_mtree *t)
{
	u32 i;

	for (i = 0; i < t->nr_chunks; i++)
		hbm_mchunk_free(t->chunk[i]);
	hbm_free(t->chunk);
	memset(t, 0, sizeof(*t));
}

static struct hbmguard_map_entry map_entry(const struct hbm_extent *e)
{
	return (struct hbmguard_map_entry){
		.first = e->first, .nr = e->nr, .spare = e->spare, .state = e->state,
	};
}

/**
 * hbm_mtree_span() - widen a changed range to whole extents
 * @m: the copy, as it was before the table changed
 * @t: the table, changed
 * @lo: in: the range the change was made to, widened by a page each side
 *	(the extents it touched may have merged); out: a span that no extent
 *	of @m or @t crosses
 * @hi: in and out: the page past it, at most t->nr_pages
 */
void hbm_mtree_span(const struct hbm_mtree *m, const struct hbm_table *t,
		    u32 *lo, u32 *hi)
{
	struct hbmguard_map_entry e;
	struct hbm_extent x;
	bool wider;

	do {
		wider = false;
		if (hbm_mtree_find(m, *lo, &e) && e.first < *lo && e.first + e.nr > *lo) {
			*lo = e.first;
			wider = true;
		}
		if (hbm_mtree_find(m, *hi - 1, &e) && e.first + e.nr > *hi) {
			*hi = e.first + e.nr;
			wider = true;
		}
		if (hbm_table_lookup(t, *lo, &x) && x.first < *lo) {
			*lo = x.first;
			wider = true;
		}
		if (hbm_table_lookup(t, *hi - 1, &x) && x.first + x.nr > *hi) {
			*hi = x.first + x.nr;
			wider = true;
		}
	} while (wider);
}

static void log_op(struct hbm_mscratch *s, bool del,
		   const struct hbmguard_map_entry *e)
{
	if (s->nr_log < HBM_MSYNC_LOG)
		s->log[s->nr_log] = (struct hbm_mop){ .del = del, .e = *e };
	s->nr_log++;
}

/**
 * hbm_mtree_sync() - make a copy hold the table's extents in a span
 * @m: the copy
 * @t: the table
 * @lo: first page of the span (from hbm_mtree_span())
 * @hi: the page past it
 * @s: scratch room; records what was done, for hbm_mtree_follow()
 * @reserve: called before each insertion that may take a node: backs the
 *	nodes it may need
 * @arg: for @reserve
 *
 * The copy's extents the table no longer has are deleted, the table's are
 * inserted or overwritten in place: a descent of the copy for each extent
 * in the span, a lookup in the table for each the copy had there.  A span
 * past the copy's last extent (a restore after a module load) is appended
 * instead, a descent per leaf.
 *
 * Return: 0, or what @reserve or an insertion returned: the copy is then
 * part way and must be rebuilt.
 */
int hbm_mtree_sync(struct hbm_mtree *m, const struct hbm_table *t, u32 lo,
		   u32 hi, struct hbm_mscratch *s, int (*reserve)(void *arg),
		   void *arg)
{
	struct mcursor run = { .valid = false };
	struct mappend app;
	struct hbm_extent x;
	u32 cursor, n, i, next;
	bool bulk;
	int err;

	s->nr_log = 0;
	s->at_valid = false;
	for (cursor = lo; cursor < hi; cursor = s->old[n - 1].first + 1) {
		n = hbm_mtree_list(m, cursor, hi, s->old, HBM_MSYNC_BATCH);
		for (i = 0; i < n; i++) {
			if (hbm_table_lookup(t, s->old[i].first, &x) &&
			    x.first == s->old[i].first)
				continue;
			hbm_mtree_delete(m, s->old[i].first);
			log_op(s, true, &s->old[i]);
		}
		if (n < HBM_MSYNC_BATCH)
			break;
		hbm_cond_resched();
	}
	bulk = past_last(m, lo);
	if (bulk)
		append_start(&app, m);
	for (cursor = lo; cursor < hi; cursor = next) {
		n = hbm_table_list(t, cursor, hi, s->cur, HBM_MSYNC_BATCH, &next);
		for (i = 0; i < n; i++) {
			struct hbmguard_map_entry e = map_entry(&s->cur[i]);

			if (bulk) {
				err = append(&app, &e, reserve, arg);
			} else {
				err = reserve(arg);
				if (!err)
					err = put(m, &e, true, &run);
			}
			if (err < 0)
				return err;
			if (err)
				log_op(s, false, &e);
		}
		if (!n)
			break;
		hbm_cond_resched();
	}
	return 0;
}

/**
 * hbm_mtree_change() - make a copy follow a change of the table
 * @m: the copy, as the table was before the change
 * @t: the table, changed
 * @lo: in: first page of the range changed, less one; out: of the span
 * @hi: in: the page past the range, plus one; out: of the span
 * @s: scratch room; records what was done, for hbm_mtree_follow()
 * @reserve: as hbm_mtree_sync()'s
 * @arg: for @reserve
 *
 * hbm_mtree_span() and hbm_mtree_sync() in one: the copy's and the table's
 * extents over the range are listed once, widened until neither crosses its
 * edges, and compared; only what differs is written.  A retirement costs
 * the copy two descents, where the two functions take five.  A change of
 * more than a batch of extents goes through them.
 *
 * Return: as hbm_mtree_sync().
 */
int hbm_mtree_change(struct hbm_mtree *m, const struct hbm_table *t, u32 *lo,
		     u32 *hi, struct hbm_mscratch *s, int (*reserve)(void *arg),
		     void *arg)
{
	u32 n_old, n_new, i, j, next;
	struct hbm_mpath at;
	bool wider;
	int err;

	do {
		n_old = list(m, *lo, *hi, s->old, HBM_MSYNC_BATCH, true, &at);
		n_new = hbm_table_list(t, *lo, *hi, s->cur, HBM_MSYNC_BATCH, &next);
		if (n_old == HBM_MSYNC_BATCH || n_new == HBM_MSYNC_BATCH) {
			hbm_mtree_span(m, t, lo, hi);
			return hbm_mtree_sync(m, t, *lo, *hi, s, reserve, arg);
		}
		wider = false;
		if (n_old && s->old[0].first < *lo) {
			*lo = s->old[0].first;
			wider = true;
		}
		if (n_old && s->old[n_old - 1].first + s->old[n_old - 1].nr > *hi) {
			*hi = s->old[n_old - 1].first + s->old[n_old - 1].nr;
			wider = true;
		}
		if (n_new && s->cur[0].first < *lo) {
			*lo = s->cur[0].first;
			wider = true;
		}
		if (n_new && s->cur[n_new - 1].first + s->cur[n_new - 1].nr > *hi) {
			*hi = s->cur[n_new - 1].first + s->cur[n_new - 1].nr;
			wider = true;
		}
	} while (wider);

	s->nr_log = 0;
	s->at_valid = false;
	/*
	 * A page retired alone, away from others: the copy had nothing in the
	 * span, so the descent to its start is the descent to the new extent
	 * (inner keys are extents' first pages, and none lies in the span).
	 */
	if (!n_old && n_new == 1 && m->height) {
		struct hbmguard_map_entry e = map_entry(&s->cur[0]);

		err = reserve(arg);
		if (!err && (available(m) < m->height + 1 ||
			     m->height >= HBMGUARD_MAP_HEIGHT_MAX))
			err = -ENOSPC;
		if (err)
			return err;
		s->at = at;
		s->at_root = m->root;
		s->at_height = m->height;
		s->at_nr = NODE(m, at.node[0])->nr;
		s->at_valid = true;
		insert_at(m, &at, &e);
		log_op(s, false, &e);
		return 0;
	}

	/* Both lists are sorted: merge them by first page. */
	for (i = 0, j = 0; i < n_old || j < n_new;) {
		struct hbmguard_map_entry e;

		if (j == n_new || (i < n_old && s->old[i].first < s->cur[j].first)) {
			hbm_mtree_delete(m, s->old[i].first);
			log_op(s, true, &s->old[i++]);
			continue;
		}
		e = map_entry(&s->cur[j++]);
		if (i < n_old && s->old[i].first == e.first &&
		    !memcmp(&s->old[i++], &e, sizeof(e)))
			continue;
		err = reserve(arg);
		if (!err)
			err = hbm_mtree_upsert(m, &e);
		if (err < 0)
			return err;
		log_op(s, false, &e);
	}
	return 0;
}

/*
 * @at is the way descend() would take to @page in @m, from the root: each
 * inner node of its level, the child taken there the next node on it, and
 * its keys around @page.  (The copies are alike node for node, so this
 * holds but for a bug; insert_at() on a path of the other copy's would
 * split nodes it does not know the size of.)
 */
static bool path_holds(const struct hbm_mtree *m, const struct hbm_mpath *at, u32 page)
{
	u32 l, nodes = m->nr_chunks * HBM_MNODES_PER_CHUNK;

	if (at->node[m->height - 1] != m->root || at->node[0] >= nodes)
		return false;
	for (l = m->height - 1; l > 0; l--) {
		const struct hbmguard_map_node *n;
		u32 c = at->slot[l];

		if (at->node[l] >= nodes)
			return false;
		n = NODE(m, at->node[l]);
		if (n->level != l || c >= n->nr || n->in.child[c] != at->node[l - 1] ||
		    (c && n->in.first[c] > page) || (c + 1 < n->nr && n->in.first[c + 1] <= page))
			return false;
	}
	return true;
}

/*
 * The other copy's lone insertion, at the same place: the copies are the
 * same node for node (the same operations in the same order from the same
 * state), so its descent is this copy's, and a retirement descends one copy
 * only.  Checked, not trusted: a copy that is not where the other was
 * (the root, the height, each node on the way and its keys, the leaf's
 * extents around the slot) descends.
 */
static bool follow_at(struct hbm_mtree *m, const struct hbm_mscratch *s,
		      int (*reserve)(void *arg), void *arg)
{
	const struct hbmguard_map_entry *e = &s->log[0].e;
	struct hbm_mpath at = s->at;
	const struct hbmguard_map_node *n;
	u32 pos = at.slot[0];

	if (!s->at_valid || s->log[0].del || m->root != s->at_root ||
	    m->height != s->at_height || !m->height || !path_holds(m, &at, e->first))
		return false;
	n = NODE(m, at.node[0]);
	if (n->level || n->nr != s->at_nr || pos > n->nr ||
	    (pos && n->ext[pos - 1].first + n->ext[pos - 1].nr > e->first) ||
	    (pos < n->nr && n->ext[pos].first < e->first + e->nr))
		return false;
	if (m->height >= HBMGUARD_MAP_HEIGHT_MAX ||
	    (available(m) < m->height + 1 && (reserve(arg) || available(m) < m->height + 1)))
		return false;
	insert_at(m, &at, e);
	return true;
}

/**
 * hbm_mtree_follow() - do to a copy what hbm_mtree_sync() did to the other
 * @m: the copy, as the other was before
 * @t: the table
 * @lo: as given to hbm_mtree_sync()
 * @hi: as given to hbm_mtree_sync()
 * @s: the scratch room hbm_mtree_sync() filled
 * @reserve: as hbm_mtree_sync()'s
 * @arg: for @reserve
 *
 * The same operations in the same order, without the lookups that chose
 * them; a change too large for the record is synced again.
 *
 * Return: as hbm_mtree_sync().
 */
int hbm_mtree_follow(struct hbm_mtree *m, const struct hbm_table *t, u32 lo,
		     u32 hi, struct hbm_mscratch *s, int (*reserve)(void *arg),
		     void *arg)
{
	u32 i;
	int err;

	if (s->nr_log > HBM_MSYNC_LOG)
		return hbm_mtree_sync(m, t, lo, hi, s, reserve, arg);
	if (s->nr_log == 1 && follow_at(m, s, reserve, arg))
		return 0;
	for (i = 0; i < s->nr_log; i++) {
		if (s->log[i].del) {
			hbm_mtree_delete(m, s->log[i].e.first);
			continue;
		}
		err = reserve(arg);
		if (!err)
			err = hbm_mtree_upsert(m, &s->log[i].e);
		if (err < 0)
			return err;
	}
	return 0;
}

struct rebuild {
	struct mappend app;
	int (*reserve)(void *arg);
	void *arg;
	u32 n;
	int err;
};

static void rebuild_one(const struct hbm_extent *e, void *arg)
{
	struct rebuild *r = arg;
	struct hbmguard_map_entry me = map_entry(e);

	if (!(++r->n % 1024))
		hbm_cond_resched();	/* a table may have 10^6 extents */

	if (!r->err)
		r->err = min(append(&r->app, &me, r->reserve, r->arg), 0);
}

/**
 * hbm_mtree_rebuild() - make a copy the table, from scratch
 * @m: the copy
 * @t: the table
 * @reserve: as hbm_mtree_sync()'s
 * @arg: for @reserve
 *
 * In ascending order every leaf but the last fills whole.
 *
 * Return: 0, or what @reserve or an insertion returned.
 */
int hbm_mtree_rebuild(struct hbm_mtree *m, const struct hbm_table *t,
		      int (*reserve)(void *arg), void *arg)
{
	struct rebuild r = { .reserve = reserve, .arg = arg };

	hbm_mtree_clear(m);
	append_start(&r.app, m);
	hbm_table_walk(t, rebuild_one, &r);
	return r.err;
}
