// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mapped translation table, read without locks.  The protocol and the
 * memory-ordering argument are in uapi/linux/hbmguard.h and kmod/map.c:
 * read seq (acquire), the table, an acquire fence, seq again; retry when
 * seq was odd or changed.  Every index read from shared memory is bounded
 * before use, because a torn read is only detected after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hbmguard.h"

struct hbmguard_table {
	const struct hbmguard_map_header *hdr;
	size_t size;
};

int hbmguard_open(void)
{
	int fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDONLY | O_CLOEXEC);
	int first = errno;

	/*
	 * A training user may be in the aperture's group alone, and a
	 * container given that node alone (ENOENT, or EPERM from its device
	 * cgroup): the same reads.  Failing both, the first node's error
	 * unless it had none to give.
	 */
	if (fd < 0 && (first == EACCES || first == ENOENT || first == EPERM)) {
		fd = open("/dev/" HBMGUARD_APERTURE_DEVICE_NAME, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && first != ENOENT)
			errno = first;
	}
	return fd < 0 ? -errno : fd;
}

int hbmguard_table_open(int fd, uint32_t device, struct hbmguard_table **out)
{
	struct hbmguard_table *t;
	const struct hbmguard_map_header *h;
	long page = sysconf(_SC_PAGESIZE);
	size_t size;

	h = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(device));
	if (h == MAP_FAILED)
		return -errno;
	if (h->magic != HBMGUARD_MAP_MAGIC || h->version != HBMGUARD_MAP_VERSION) {
		munmap((void *)h, page);
		return -EPROTO;
	}
	size = h->map_size;
	munmap((void *)h, page);
	h = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(device));
	if (h == MAP_FAILED)
		return -errno;
	t = malloc(sizeof(*t));
	if (!t) {
		munmap((void *)h, size);
		return -ENOMEM;
	}
	t->hdr = h;
	t->size = size;
	*out = t;
	return 0;
}

void hbmguard_table_close(struct hbmguard_table *t)
{
	if (!t)
		return;
	munmap((void *)t->hdr, t->size);
	free(t);
}

static uint32_t seq_begin(const struct hbmguard_map_header *h)
{
	uint32_t s;

	while ((s = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE)) & 1)
		;	/* the kernel is switching: a few stores */
	return s;
}

static bool seq_retry(const struct hbmguard_map_header *h, uint32_t s)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&h->seq, __ATOMIC_RELAXED) != s;
}

/* Slots of the @n keys at @keys, @stride bytes apart, at or below @page; branch-free. */
static uint32_t count_le(const void *keys, size_t stride, uint32_t n, uint32_t page)
{
	const char *base = keys;

	while (n > 1) {
		uint32_t half = n / 2;

		base = *(const uint32_t *)(base + half * stride) <= page ?
		       base + half * stride : base;
		n -= half;
	}
	return (base - (const char *)keys) / stride + (*(const uint32_t *)base <= page);
}

/*
 * The lookup of uapi/linux/hbmguard.h in the active copy: 1 and the extent
 * that starts last at or below @page in *@out, 0 for none, -1 when a check
 * failed (a torn read, unless seq is unchanged).
 */
static int lookup(const struct hbmguard_table *t, uint32_t page,
		  struct hbmguard_map_entry *out)
{
	const struct hbmguard_map_header *h = t->hdr;
	uint32_t c = __atomic_load_n(&h->active, __ATOMIC_RELAXED) & 1;
	uint32_t n = h->root[c], height = h->height[c];
	uint32_t nodes = __atomic_load_n(&h->nodes, __ATOMIC_ACQUIRE);
	uint64_t off = h->buffer_offset[c];
	const struct hbmguard_map_node *base;
	uint32_t cnt = 0;

	if (!height)
		return 0;
	if (height > HBMGUARD_MAP_HEIGHT_MAX || off > t->size ||
	    (uint64_t)nodes * sizeof(*base) > t->size - off)
		return -1;
	base = (const void *)((const char *)h + off);
	/*
	 * A node's count is read once: the node may be rewritten under a
	 * slow reader (seq says so after), and a count read again could be
	 * an inner node's, past a leaf's entries.
	 */
	while (height--) {
		const struct hbmguard_map_node *node = &base[n];
		uint32_t i, off;

		if (n >= nodes)
			return -1;
		/* Every line of the node at once: one miss per level, not one per probe. */
		for (off = 64; off < sizeof(*node); off += 64)
			__builtin_prefetch((const char *)node + off);
		cnt = node->nr;
		if (node->level != height || !cnt ||
		    cnt > (height ? HBMGUARD_MAP_INNER_MAX : HBMGUARD_MAP_LEAF_MAX))
			return -1;
		if (!height)
			break;
		i = count_le(node->in.first, sizeof(uint32_t), cnt, page);
		if (!i)
			return 0;
		n = node->in.child[i - 1];
	}
	{
		const struct hbmguard_map_node *leaf = &base[n];
		uint32_t i = count_le(leaf->ext, sizeof(leaf->ext[0]), cnt, page);

		if (!i)
			return 0;
		*out = leaf->ext[i - 1];
	}
	return 1;
}

int hbmguard_translate(struct hbmguard_table *t, uint64_t offset,
		       uint64_t *served, uint32_t *state)
{
	const struct hbmguard_map_header *h = t->hdr;
	uint64_t out = 0;
	uint32_t st = 0, s;

	do {
		struct hbmguard_map_entry e;
		uint32_t shift, page;
		int found;

		s = seq_begin(h);
		if (h->overflow)
			return -EOVERFLOW;
		shift = h->page_shift & 63;
		if (offset >= h->usable_size) {
			if (seq_retry(h, s))
				continue;
			return -ERANGE;
		}
		page = offset >> shift;
		found = lookup(t, page, &e);
		st = HBMGUARD_STATE_CLEAN;
		out = offset;
		if (found > 0 && page - e.first < e.nr) {
			st = e.state;
			/* A GPU's driver bypasses its retired pages: no spare. */
			if (st == HBMGUARD_STATE_RETIRED && e.spare != HBMGUARD_MAP_NO_SPARE)
				out = h->usable_size +
				      ((uint64_t)(e.spare + page - e.first) << shift) +
				      (offset & ((1ULL << shift) - 1));
		}
		if (found < 0 && !seq_retry(h, s))
			return -EPROTO;	/* consistent and still bad */
	} while (seq_retry(h, s));
	*served = out;
	*state = st;
	return 0;
}

int hbmguard_range_is_clean(struct hbmguard_table *t, uint64_t offset,
			    uint64_t length)
{
	const struct hbmguard_map_header *h = t->hdr;
	int clean = 0;
	uint32_t s;

	do {
		struct hbmguard_map_entry e;
		uint64_t first, last;
		uint32_t shift;
		int found;

		s = seq_begin(h);
		if (h->overflow)
			return -EOVERFLOW;
		if (!length || offset >= h->usable_size ||
		    length > h->usable_size - offset) {
			if (seq_retry(h, s))
				continue;
			return -ERANGE;
		}
		shift = h->page_shift & 63;
		first = offset >> shift;
		last = (offset + length - 1) >> shift;
		/* The extent at or below the last page decides: any overlap. */
		found = lookup(t, (uint32_t)last, &e);
		if (found < 0) {
			clean = -EPROTO;
			continue;
		}
		clean = !(found > 0 && e.first + (uint64_t)e.nr > first);
	} while (seq_retry(h, s));
	return clean;
}

uint64_t hbmguard_table_generation(struct hbmguard_table *t)
{
	uint64_t g;
	uint32_t s;

	do {
		s = seq_begin(t->hdr);
		g = t->hdr->generation;
	} while (seq_retry(t->hdr, s));
	return g;
}

bool hbmguard_table_removed(struct hbmguard_table *t)
{
	return __atomic_load_n(&t->hdr->removed, __ATOMIC_ACQUIRE);
}
