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

/* Entries of the active buffer, bounded; NULL if the header is torn. */
static const struct hbmguard_map_entry *entries(const struct hbmguard_table *t,
						uint32_t *nr)
{
	const struct hbmguard_map_header *h = t->hdr;
	uint32_t a = __atomic_load_n(&h->active, __ATOMIC_RELAXED) & 1;
	uint64_t off = h->buffer_offset[a];
	uint32_t cap = h->capacity;

	*nr = h->nr[a];
	if (*nr > cap || off > t->size ||
	    (uint64_t)cap * sizeof(struct hbmguard_map_entry) > t->size - off)
		return NULL;
	return (const void *)((const char *)h + off);
}

/* Index of the last entry starting at or below @page, or -1; branch-free. */
static long search(const struct hbmguard_map_entry *e, uint32_t n, uint32_t page)
{
	const struct hbmguard_map_entry *base = e;

	if (!n || e[0].first > page)
		return -1;
	while (n > 1) {
		uint32_t half = n / 2;

		base = base[half].first <= page ? base + half : base;
		n -= half;
	}
	return base - e;
}

int hbmguard_translate(struct hbmguard_table *t, uint64_t offset,
		       uint64_t *served, uint32_t *state)
{
	const struct hbmguard_map_header *h = t->hdr;
	uint64_t out = 0;
	uint32_t st = 0, s;

	do {
		const struct hbmguard_map_entry *e;
		uint32_t nr, shift, page;
		long i;

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
		e = entries(t, &nr);
		st = HBMGUARD_STATE_CLEAN;
		out = offset;
		i = e ? search(e, nr, page) : -1;
		if (i >= 0 && page - e[i].first < e[i].nr) {
			st = e[i].state;
			/* A GPU's driver bypasses its retired pages: no spare. */
			if (st == HBMGUARD_STATE_RETIRED &&
			    e[i].spare != HBMGUARD_MAP_NO_SPARE)
				out = h->usable_size +
				      ((uint64_t)(e[i].spare + page - e[i].first) << shift) +
				      (offset & ((1ULL << shift) - 1));
		}
		if (!e && !seq_retry(h, s))
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
		const struct hbmguard_map_entry *e;
		uint32_t nr, shift;
		uint64_t first, last;
		long i;

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
		e = entries(t, &nr);
		if (!e) {
			clean = -EPROTO;
			continue;
		}
		/* The extent at or below the last page decides: any overlap. */
		i = search(e, nr, (uint32_t)last);
		clean = !(i >= 0 && e[i].first + (uint64_t)e[i].nr > first);
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
