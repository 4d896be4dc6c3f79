// SPDX-License-Identifier: GPL-2.0
/*
 * The state file format (state.h) and its atomic writing.  Encoding and
 * decoding are pure functions over a buffer, so the unit tests can damage a
 * file every way there is without a disk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/hbmguard.h>

#include "state.h"

uint64_t hbm_state_fsyncs;

static uint32_t crc_table[8][256];

/*
 * The read's code at the same place within its pages in every program that
 * links this file (the daemon, hbmstatebench, bench-core): make bench
 * compares their reads of one file in a TCG guest, where a jump to code on
 * another page than its translation block's first costs a lookup of the
 * next block rather than a direct jump (qemu chains a block directly only to
 * code on the page the block starts on: translator_use_goto_tb(),
 * accel/tcg/translator.c, qemu 7.2), so where a program's link put the read
 * decided its speed: hbmstatebench's hbm_crc32c() and state_decode() lying
 * across page boundaries once made its read of 10^6 records 1.3-1.4x the
 * daemon's, through the same code.  Aligned to a page, each of the two lies
 * inside one, and this file's code section, page-aligned by them, puts
 * every function here at the same offset in a page in each program (as
 * long as it is one section: no -ffunction-sections, no LTO).  On hardware
 * it costs the padding alone.
 */
#define PAGE_ALIGNED	__attribute__((aligned(4096)))

/*
 * At load, before main() and any thread: a pthread_once() in each
 * hbm_crc32c() was a call through the PLT and a barrier for every record of
 * a read, some 5% of a start's read of 10^6 records in a TCG guest (and
 * more there than in a static program, so the daemon's read was slower
 * than hbmstatebench's of the same file).
 */
__attribute__((constructor)) static void crc_init(void)
{
	uint32_t i, k, c;

	for (i = 0; i < 256; i++) {
		for (c = i, k = 0; k < 8; k++)
			c = c >> 1 ^ (0x82f63b78 & -(c & 1));
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			crc_table[k][i] = crc_table[k - 1][i] >> 8 ^
					  crc_table[0][crc_table[k - 1][i] & 0xff];
}

/*
 * CRC-32C (Castagnoli), reflected, as in ext4, iSCSI and btrfs; sliced by
 * 8 (eight bytes a step through eight tables, Intel's "slicing-by-8"), as
 * a 48 MiB file of 10^6 records is read and written whole at every start.
 */
PAGE_ALIGNED uint32_t hbm_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	const uint32_t (*t)[256] = crc_table;

	crc = ~crc;
	for (; len >= 8; len -= 8, p += 8) {
		crc ^= p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
		crc = t[7][crc & 0xff] ^ t[6][crc >> 8 & 0xff] ^ t[5][crc >> 16 & 0xff] ^
		      t[4][crc >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
	}
	while (len--)
		crc = crc >> 8 ^ t[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v);
	put32(p + 4, v >> 32);
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | (uint32_t)get16(p + 2) << 16;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

size_t hbm_state_encode_size(const struct hbm_state *s)
{
	return HBM_STATE_HEADER_SIZE + s->nr * HBM_STATE_RECORD_SIZE;
}

/* One record; @seq and @generation 0 in a snapshot. */
static void record_encode(const struct hbm_state_record *r, uint32_t seq,
			  uint32_t generation, uint8_t *p)
{
	memset(p, 0, HBM_STATE_RECORD_SIZE);
	put64(p, r->offset);
	put64(p + 8, r->length);
	put64(p + 16, r->first_seen);
	put64(p + 24, r->last_seen);
	p[32] = r->state;
	p[33] = r->source;
	put16(p + 34, r->errors);
	put32(p + 36, seq);
	put32(p + 40, generation);
	put32(p + 44, hbm_crc32c(0, p, 44));
}

void hbm_state_encode(const struct hbm_state *s, uint8_t *buf)
{
	uint8_t *h = buf;
	size_t i;

	memset(h, 0, HBM_STATE_HEADER_SIZE);
	memcpy(h, HBM_STATE_MAGIC, 8);
	put32(h + 8, HBM_STATE_VERSION);
	put32(h + 12, HBM_STATE_HEADER_SIZE);
	put32(h + 16, HBM_STATE_RECORD_SIZE);
	put32(h + 20, s->nr);
	put64(h + 24, s->serial);
	put32(h + 32, s->page_size);
	memcpy(h + 40, s->identity, strnlen(s->identity, HBM_STATE_IDENTITY_LEN - 1));
	put32(h + 124, hbm_crc32c(0, h, 124));

	for (i = 0; i < s->nr; i++)
		record_encode(&s->records[i], 0, 0,
			      buf + HBM_STATE_HEADER_SIZE + i * HBM_STATE_RECORD_SIZE);
}

/**
 * hbm_state_log_encode() - one log record
 * @r: the change
 * @serial: the file's serial: the record's generation is its low 32 bits
 * @seq: its sequence number in the file's log, from 1
 * @p: HBM_STATE_RECORD_SIZE bytes
 */
void hbm_state_log_encode(const struct hbm_state_record *r, uint64_t serial,
			  uint32_t seq, uint8_t *p)
{
	record_encode(r, seq, (uint32_t)serial, p);
}

static const char *header_problem(const uint8_t *h, size_t len)
{
	uint32_t rs;

	if (len < HBM_STATE_HEADER_SIZE)
		return "shorter than a header";
	if (memcmp(h, HBM_STATE_MAGIC, 8))
		return "not an hbmguard state file";
	if (get32(h + 124) != hbm_crc32c(0, h, 124))
		return "header checksum mismatch";
	if (get32(h + 8) != 1 && get32(h + 8) != HBM_STATE_VERSION)
		return "unknown version";
	rs = get32(h + 16);
	if (get32(h + 12) != HBM_STATE_HEADER_SIZE ||
	    (get32(h + 8) == 1 && rs != HBM_STATE_RECORD_SIZE) ||
	    rs < HBM_STATE_RECORD_SIZE || rs > HBM_STATE_RECORD_MAX || rs % 8)
		return "unknown header or record size";
	if (!memchr(h + 40, 0, HBM_STATE_IDENTITY_LEN) || !h[40])
		return "identity not a string";
	if (get32(h + 32) < HBMGUARD_PAGE_SIZE_MIN ||
	    get32(h + 32) > HBMGUARD_PAGE_SIZE_MAX ||
	    get32(h + 32) & (get32(h + 32) - 1))
		return "bad page size";
	return NULL;
}

/* Whether a record of @rs bytes is whole: its CRC, its last 4 bytes. */
static bool record_whole(const uint8_t *p, uint32_t rs)
{
	return get32(p + rs - 4) == hbm_crc32c(0, p, rs - 4);
}

/* What a whole record says, and whether it can be: @prev_end for a snapshot's order. */
static bool record_sane(const uint8_t *p, uint32_t page_size, uint64_t prev_end,
			struct hbm_state_record *r)
{
	*r = (struct hbm_state_record){
		.offset = get64(p), .length = get64(p + 8),
		.first_seen = get64(p + 16), .last_seen = get64(p + 24),
		.state = p[32], .source = p[33], .errors = get16(p + 34),
	};
	return r->length && !((r->offset | r->length) & (page_size - 1)) &&
	       r->offset + r->length > r->offset && r->offset >= prev_end &&
	       r->state >= HBMGUARD_STATE_PENDING && r->state <= HBMGUARD_STATE_FAILED &&
	       r->source < __HBMGUARD_SOURCE_MAX;
}

/* A snapshot's record that checks out, in order after @prev_end. */
static bool record_ok(const uint8_t *p, uint32_t rs, uint32_t page_size, uint64_t prev_end,
		      struct hbm_state_record *r)
{
	return record_whole(p, rs) && get32(p + 36) == 0 && get32(p + 40) == 0 &&
	       record_sane(p, page_size, prev_end, r);
}

/* A log record of generation @gen, whole: its sequence number, 0 if not. */
static uint32_t log_seq(const uint8_t *p, uint32_t rs, uint32_t gen)
{
	return record_whole(p, rs) && get32(p + 40) == gen ? get32(p + 36) : 0;
}

/*
 * The log from @pos: its records that check out into @log (the caller's
 * array, room for all), damage and a torn tail counted.  Return: the count.
 */
static size_t log_decode(const uint8_t *buf, size_t len, size_t pos, uint32_t rs,
			 const struct hbm_state *st, struct hbm_state_record *log,
			 struct hbm_state_damage *damage)
{
	uint32_t gen = (uint32_t)st->serial, next = 1, seq;
	size_t n = 0, q, bad = 0;

	while (pos < len) {
		if (len - pos < rs) {
			damage->torn_bytes = len - pos;
			break;
		}
		seq = log_seq(buf + pos, rs, gen);
		if (seq && seq < next) {
			damage->log_duplicates++;
		} else if (seq) {
			/* the bad records just before held some of the numbers skipped */
			damage->log_missing += seq - next > bad ? seq - next - bad : 0;
			bad = 0;
			next = seq + 1;
			if (record_sane(buf + pos, st->page_size, 0, &log[n]))
				n++;
			else
				damage->log_bad++;
		} else {
			/* Not whole: damage, unless it is the file's last record */
			for (q = pos + rs; q + rs <= len && log_seq(buf + q, rs, gen) < next; q += rs)
				;
			if (q + rs > len && len - pos < 2 * rs) {
				/* the last write's end, cut short or garbled: a crash's */
				damage->torn_bytes = len - pos;
				break;
			}
			if (q + rs > len) {
				/*
				 * Records of garbage up to the end, more than a
				 * crash tears: damage, none of it replayed.
				 */
				damage->log_bad += (len - pos + rs - 1) / rs;
				break;
			}
			damage->log_bad += (q - pos) / rs;
			bad += (q - pos) / rs;
			pos = q;
			continue;
		}
		pos += rs;
	}
	return n;
}

static int state_decode(uint8_t *buf, size_t len, uint64_t max_pages, bool in_place,
			struct hbm_state *out, struct hbm_state_damage *damage);

/* Records decoded in place: the file's buffer given back down to them. */
static int shrink(struct hbm_state *out, bool in_place)
{
	void *r;

	if (!in_place)
		return 0;
	r = realloc(out->records, (out->nr ? out->nr : 1) * sizeof(*out->records));
	if (r)
		out->records = r;
	return 0;
}

/**
 * hbm_state_decode() - what a state file holds that can be trusted
 * @buf: the file
 * @len: its length
 * @max_pages: the device's pages, 0 unknown: a file promising more records,
 *	or longer than one of that many records and its longest log, is
 *	refused whole, before anything is allocated for it
 * @out: the state, its log replayed (free with hbm_state_free())
 * @damage: what was wrong
 *
 * What is allocated is bounded by @len and @max_pages, whatever the file
 * says: the log is read up to HBM_STATE_LOG_MAX() of the snapshot's records.
 *
 * Return: 0, with the good records in @out and the bad counted in @damage
 * (the file was whole when hbm_state_damaged() says no); -EBADMSG when the
 * header is not to be trusted (@damage->header says why); -ENOMEM.
 */
int hbm_state_decode(const uint8_t *buf, size_t len, uint64_t max_pages,
		     struct hbm_state *out, struct hbm_state_damage *damage)
{
	return state_decode((uint8_t *)buf, len, max_pages, false, out, damage);
}

/*
 * hbm_state_decode(), and with @in_place the snapshot's records decoded
 * over @buf itself (a malloc()ed file the caller gives up: @out->records is
 * it, or it is freed): record i's 40 bytes go to byte 40i, below the 48
 * bytes at 128 + 48i it is read from and below every record after it, so
 * a start with 10^6 stored pages holds the file and not a copy beside it.
 */
PAGE_ALIGNED static int state_decode(uint8_t *buf, size_t len, uint64_t max_pages,
				  bool in_place, struct hbm_state *out,
				  struct hbm_state_damage *damage)
{
	size_t promised, present, i, slots, log_nr = 0, log_slots;
	struct hbm_state_record *log = NULL;
	uint64_t prev_end = 0;
	uint32_t rs, version;
	int err = 0;

	memset(out, 0, sizeof(*out));
	memset(damage, 0, sizeof(*damage));
	damage->header = header_problem(buf, len);
	if (!damage->header && max_pages && get32(buf + 20) > max_pages)
		damage->header = "more records than the device has pages";
	if (!damage->header && max_pages &&
	    (len - HBM_STATE_HEADER_SIZE) / get32(buf + 16) >
	    max_pages + HBM_STATE_LOG_MAX(max_pages))
		damage->header = "longer than a state file of the device can be";
	if (damage->header) {
		if (in_place)
			free(buf);
		return -EBADMSG;
	}
	rs = get32(buf + 16);
	promised = get32(buf + 20);
	version = get32(buf + 8);	/* the header is read whole before any record lands on it */
	slots = (len - HBM_STATE_HEADER_SIZE) / rs;
	present = slots < promised ? slots : promised;
	damage->missing_records = promised - present;
	memcpy(out->identity, buf + 40, HBM_STATE_IDENTITY_LEN);
	out->page_size = get32(buf + 32);
	out->serial = get64(buf + 24);
	out->record_size = rs;
	out->version = version;
	out->file_bytes = len;
	out->records = in_place ? (struct hbm_state_record *)buf :
		       calloc(present ? present : 1, sizeof(*out->records));
	if (!out->records)
		return -ENOMEM;
	for (i = 0; i < present; i++) {
		const uint8_t *p = buf + HBM_STATE_HEADER_SIZE + i * rs;
		struct hbm_state_record *r = &out->records[out->nr];

		if (!record_ok(p, rs, out->page_size, prev_end, r)) {
			damage->bad_records++;
			continue;
		}
		prev_end = r->offset + r->length;
		out->nr++;
	}
	out->snapshot_nr = out->nr;
	/* version 1 has no log: what follows its records is not ours */
	if (version == 1 || damage->missing_records)
		return shrink(out, in_place);
	i = HBM_STATE_HEADER_SIZE + present * rs;
	log_slots = len > i ? (len - i) / rs : 0;
	if (log_slots > HBM_STATE_LOG_MAX(promised)) {
		/* more than a writer appends before a snapshot: not read, said */
		damage->log_beyond = log_slots - HBM_STATE_LOG_MAX(promised);
		log_slots = HBM_STATE_LOG_MAX(promised);
		len = i + log_slots * rs;
	}
	if (len > i) {
		log = calloc(log_slots + 1, sizeof(*log));
		if (!log) {
			hbm_state_free(out);	/* @buf too, in place */
			return -ENOMEM;
		}
		log_nr = log_decode(buf, len, i, rs, out, log, damage);
	}
	if (log_nr) {
		struct hbm_state_record *r;
		size_t nr;

		err = hbm_state_replay(out->records, out->nr, log, log_nr, &r, &nr);
		if (!err) {
			free(out->records);	/* @buf, in place: read whole by now */
			out->records = r;
			out->nr = nr;
			out->log_nr = log_nr;
		} else {
			hbm_state_free(out);
		}
	} else {
		err = shrink(out, in_place);
	}
	free(log);
	return err;
}

/* The log's records, in the order to replay them. */
struct start {
	uint64_t offset;
	size_t i;		/* its record's place in the log */
};

struct replay {
	const struct hbm_state_record *log;
	struct start *by_offset;
	size_t *heap;		/* covering the sweep's point, newest on top */
	size_t nr_heap;
};

static int cmp_start(const void *a, const void *b)
{
	const struct start *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void heap_push(struct replay *r, size_t i)
{
	size_t k = r->nr_heap++, up;

	while (k && r->heap[up = (k - 1) / 2] < i) {
		r->heap[k] = r->heap[up];
		k = up;
	}
	r->heap[k] = i;
}

static void heap_pop(struct replay *r)
{
	size_t last = r->heap[--r->nr_heap], k = 0, c;

	while ((c = 2 * k + 1) < r->nr_heap) {
		if (c + 1 < r->nr_heap && r->heap[c + 1] > r->heap[c])
			c++;
		if (r->heap[c] <= last)
			break;
		r->heap[k] = r->heap[c];
		k = c;
	}
	r->heap[k] = last;
}

static void emit(struct hbm_state_record *out, size_t *n, const struct hbm_state_record *r,
		 uint64_t offset, uint64_t end)
{
	out[*n] = *r;
	out[*n].offset = offset;
	out[(*n)++].length = end - offset;
}

/*
 * The log resolved: which of its records wins at each point (the latest
 * covering it), as extents sorted by offset, not overlapping.  A sweep over
 * the records' ends with a heap of those covering the point: O(m log m).
 */
static int resolve(const struct hbm_state_record *log, size_t m,
		   struct hbm_state_record *out, size_t *out_nr)
{
	struct replay r = { .log = log };
	uint64_t *ends = malloc(2 * m * sizeof(*ends));
	size_t i, k = 0, nb = 0, n = 0, last = SIZE_MAX;
	int err = 0;

	r.by_offset = malloc(m * sizeof(*r.by_offset));
	r.heap = malloc(m * sizeof(size_t));
	if (!ends || !r.by_offset || !r.heap) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < m; i++) {
		r.by_offset[i] = (struct start){ log[i].offset, i };
		ends[nb++] = log[i].offset;
		ends[nb++] = log[i].offset + log[i].length;
	}
	qsort(r.by_offset, m, sizeof(*r.by_offset), cmp_start);
	qsort(ends, nb, sizeof(*ends), cmp_u64);
	for (i = 0; i + 1 < nb; i++) {
		uint64_t at = ends[i], to = ends[i + 1];
		size_t w;

		if (at == to)
			continue;
		while (k < m && r.by_offset[k].offset <= at)
			heap_push(&r, r.by_offset[k++].i);
		while (r.nr_heap && log[r.heap[0]].offset + log[r.heap[0]].length <= at)
			heap_pop(&r);
		if (!r.nr_heap)
			continue;
		w = r.heap[0];
		if (w == last && out[n - 1].offset + out[n - 1].length == at)
			out[n - 1].length += to - at;
		else
			emit(out, &n, &log[w], at, to);
		last = w;
	}
	*out_nr = n;
out:
	free(ends);
	free(r.by_offset);
	free(r.heap);
	return err;
}

/**
 * hbm_state_replay() - a snapshot with its log replayed over it
 * @base: the snapshot's records, sorted by offset, not overlapping
 * @nr: their count
 * @log: the log's records, in the order written
 * @log_nr: their count
 * @out: the result, sorted, not overlapping (to free())
 * @out_nr: its count
 *
 * A log record replaces what it overlaps, of the snapshot or of the
 * records before it; the parts of a record it does not overlap stay.
 * O((n + m) log m) for n records and m log records.
 *
 * Return: 0 or -ENOMEM.
 */
int hbm_state_replay(const struct hbm_state_record *base, size_t nr,
		     const struct hbm_state_record *log, size_t log_nr,
		     struct hbm_state_record **out, size_t *out_nr)
{
	/* m records resolve into at most 2m - 1 pieces, each cutting one more piece of base */
	size_t nl = 0, na = 0, n = 0, i, j = 0, k;
	struct hbm_state_record *l = malloc((2 * log_nr + 1) * sizeof(*l));
	struct hbm_state_record *a = malloc((nr + 2 * log_nr + 1) * sizeof(*a));
	struct hbm_state_record *o = malloc((nr + 4 * log_nr + 1) * sizeof(*o));
	int err = l && a && o ? resolve(log, log_nr, l, &nl) : -ENOMEM;

	if (err) {
		free(l);
		free(a);
		free(o);
		return err;
	}
	for (i = 0; i < nr; i++) {	/* what the log leaves of the snapshot */
		uint64_t at = base[i].offset, end = base[i].offset + base[i].length;

		while (j < nl && l[j].offset + l[j].length <= at)
			j++;
		for (k = j; k < nl && l[k].offset < end; k++) {
			if (l[k].offset > at)
				emit(a, &na, &base[i], at, l[k].offset);
			if (l[k].offset + l[k].length > at)
				at = l[k].offset + l[k].length;
		}
		if (at < end)
			emit(a, &na, &base[i], at, end);
	}
	for (i = 0, j = 0; i < na || j < nl;)	/* with the log's, in order */
		o[n++] = j == nl || (i < na && a[i].offset < l[j].offset) ? a[i++] : l[j++];
	free(l);
	free(a);
	*out = o;
	*out_nr = n;
	return 0;
}

void hbm_state_free(struct hbm_state *s)
{
	free(s->records);
	s->records = NULL;
	s->nr = 0;
}

/* Its records and their pages (of its page size), as hbmctl status counts them. */
struct hbm_state_count hbm_state_count(const struct hbm_state *s)
{
	struct hbm_state_count c = { .extents = s->nr };
	size_t i;

	for (i = 0; i < s->nr && s->page_size; i++)
		c.pages += s->records[i].length / s->page_size;
	return c;
}

/* Whether record @i of a restore reached the table: not in @unsent (NULL: all did). */
static bool record_sent(const uint64_t *unsent, size_t i)
{
	return !unsent || !(unsent[i / 64] >> (i % 64) & 1);
}

/**
 * hbm_state_cover() - the part of a table read's extent that @s has one way
 * @s: the records restored (sorted, apart)
 * @unsent: a bit per record of @s the restore did not get into the table
 *	(refused, or its request failed), which covers nothing; NULL: none
 * @j: where a sorted walk of the table is in them (0 at its start)
 * @offset: where the part starts, inside the extent
 * @end: where the extent ends
 * @state: set to the state records of @s cover the part in, or
 *	HBMGUARD_STATE_CLEAN where none covers it
 *
 * An extent may hold pages restored and pages retired since, merged by the
 * module (the same state and source, consecutive spares: kmod/table.c's
 * mergeable()), or pages restored in another state (a page stored PENDING
 * that a UE retired meanwhile, the daemon down; one stored FAILED, sent as
 * RETIRED, bypassed now that a spare is free): each part is said apart, so
 * that the store keeps what is news to the file (its state differs) and
 * recovery what is news to it (data lost where nothing restored said so).
 * A record that did not reach the table says nothing of what is there: a
 * page retired there since is news.
 *
 * Return: the part's length, from @offset, at most to @end.
 */
uint64_t hbm_state_cover(const struct hbm_state *s, const uint64_t *unsent, size_t *j,
			 uint64_t offset, uint64_t end, uint8_t *state)
{
	uint64_t at = offset;
	size_t i;

	while (*j < s->nr && (s->records[*j].offset + s->records[*j].length <= offset ||
			      !record_sent(unsent, *j)))
		(*j)++;
	if (*j == s->nr || s->records[*j].offset > offset) {
		*state = HBMGUARD_STATE_CLEAN;
		return (*j < s->nr && s->records[*j].offset < end ? s->records[*j].offset : end) -
		       offset;
	}
	*state = s->records[*j].state;
	for (i = *j; i < s->nr && at < end && s->records[i].offset <= at &&
	     s->records[i].state == *state && record_sent(unsent, i); i++)
		at = s->records[i].offset + s->records[i].length;
	return (at < end ? at : end) - offset;
}

/* A character a file name keeps as it is (the others are hex-escaped). */
static bool name_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '_' || c == ':' || c == '.';
}

static bool lower_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * The file of an identity: printable characters kept, '/' and anything
 * unusual hex-escaped, so every identity has one name and no name escapes
 * the directory.
 */
int hbm_state_file_name(const char *identity, char *name, size_t len)
{
	size_t n = 0;
	const char *p;

	if (!*identity)
		return -EINVAL;
	for (p = identity; *p; p++) {
		unsigned char c = *p;
		int w = name_char(c) ?
			snprintf(name + n, len > n ? len - n : 0, "%c", c) :
			snprintf(name + n, len > n ? len - n : 0, "%%%02x", c);

		n += w;
	}
	n += snprintf(name + n, len > n ? len - n : 0, ".state");
	return n < len ? 0 : -ENAMETOOLONG;
}

static int pwrite_all(int fd, const uint8_t *buf, size_t len, uint64_t at)
{
	while (len) {
		ssize_t w = pwrite(fd, buf, len, at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w ? -errno : -EIO;
		buf += w;
		len -= w;
		at += w;
	}
	return 0;
}

/*
 * A temporary file @tmp of @dirfd, new: what is under that name (one a
 * crash left, a link or a FIFO put there) is removed, never followed nor
 * opened (a link would have the write go to the file it names, a FIFO
 * block the open).  Return: its descriptor, or a negative errno.
 */
static int create_temp(int dirfd, const char *tmp)
{
	int fd;

	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/**
 * hbm_atomic_write() - replace a file of a directory, atomically and durably
 * @dirfd: the directory
 * @name: the file
 * @buf: its new content
 * @len: its length
 *
 * Temporary file, fsync, rename, fsync of the directory: a crash at any
 * moment leaves either the old file or the new one, and a return means the
 * new one is on disk.
 *
 * Return: 0 or a negative errno.
 */
int hbm_atomic_write(int dirfd, const char *name, const void *buf, size_t len)
{
	char tmp[300];
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = create_temp(dirfd, tmp);
	if (fd < 0)
		return fd;
	err = pwrite_all(fd, buf, len, 0);
	if (!err && (hbm_state_fsyncs++, fsync(fd)))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (!err && (hbm_state_fsyncs++, fsync(dirfd)))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

/* What @fd is, a file hbm_read_file() reads: 0, or why it does not. */
static int regular(int fd, struct stat *st)
{
	if (fstat(fd, st))
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -HBM_ENOTREG;
	return st->st_size > (512 << 20) ? -EFBIG : 0;
}

/**
 * hbm_read_file() - a whole file of a directory, up to 512 MiB (a state file
 * of 10^6 extents, its log as long as its snapshot, is 96 MB)
 * @dirfd: the directory
 * @name: the file
 * @buf: its content, to free()
 * @len: its length
 *
 * A FIFO, a directory or a device put under the name is not read, nor
 * opened (a watchdog's device arms at its open; a FIFO without a writer
 * would stop the daemon's loop): the name is opened O_PATH, which opens
 * nothing, looked at, and only a regular file opened for reading, that
 * very one, through /proc (a second look-up of the name would race with
 * whoever can change what it names; where /proc is not mounted, by its
 * name, and a file other than the one looked at is not read).  A link is followed to what it names: a
 * read through it harms nothing (a write renames over the name, never
 * through it), and an operator may have moved the file and linked it back;
 * one that names nothing (that disk not mounted yet) is not "no file",
 * which a save would write over, but a file not read.
 *
 * Return: 0 or a negative errno (-ENOENT: no such file; -HBM_ENOTREG: not
 * a regular file; -ENOLINK: a link to nothing; hbm_read_strerror() says
 * which; hbm_read_again() whether a file there is left unread).
 */
int hbm_read_file(int dirfd, const char *name, uint8_t **buf, size_t *len)
{
	char path[32];
	struct stat st;
	ssize_t n;
	int fd, err;

	fd = openat(dirfd, name, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOENT && !fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISLNK(st.st_mode))
			err = -ENOLINK;
		return err;
	}
	err = regular(fd, &st);
	if (!err) {
		struct stat looked = st;
		int at = fd;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", at);
		fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		err = fd < 0 ? -errno : regular(fd, &st);
		if (!err && (st.st_dev != looked.st_dev || st.st_ino != looked.st_ino))
			err = -EAGAIN;	/* replaced since: read next time */
		close(at);
	}
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	*buf = malloc(st.st_size ? st.st_size : 1);
	n = *buf ? pread(fd, *buf, st.st_size, 0) : -1;
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = n;
	return 0;
}

/**
 * hbm_state_write() - replace a device's state file, atomically and durably
 * @dirfd: the state directory
 * @s: the state
 *
 * Return: 0 or a negative errno.
 */
int hbm_state_write(int dirfd, const struct hbm_state *s)
{
	char name[256];
	size_t len = hbm_state_encode_size(s);
	uint8_t *buf = malloc(len);
	int err;

	if (!buf)
		return -ENOMEM;
	err = hbm_state_file_name(s->identity, name, sizeof(name));
	if (!err) {
		hbm_state_encode(s, buf);
		err = hbm_atomic_write(dirfd, name, buf, len);
	}
	free(buf);
	return err;
}

/**
 * hbm_state_read() - load a device's state file
 * @dirfd: the state directory
 * @identity: the device
 * @max_pages: its pages, 0 unknown (see hbm_state_decode())
 * @out: what can be trusted
 * @damage: what could not
 *
 * Return: as hbm_state_decode(); -ENOENT when the device has no file;
 * -EBADMSG also when the file names another identity.
 */
int hbm_state_read(int dirfd, const char *identity, uint64_t max_pages,
		   struct hbm_state *out, struct hbm_state_damage *damage)
{
	char name[256];
	uint8_t *buf;
	size_t n;
	int err;

	err = hbm_state_file_name(identity, name, sizeof(name));
	if (err)
		return err;
	err = hbm_read_file(dirfd, name, &buf, &n);
	if (err == -HBM_ENOTREG) {	/* no pages: set aside and replaced, as damage */
		*damage = (struct hbm_state_damage){ .header = "not a regular file" };
		return -EBADMSG;
	}
	if (err)
		return err;
	err = state_decode(buf, n, max_pages, true, out, damage);	/* takes @buf */
	if (!err && strcmp(out->identity, identity)) {
		hbm_state_free(out);
		damage->header = "the file belongs to another identity";
		return -EBADMSG;
	}
	return err;
}

/* The entries of @dirfd, on a descriptor of their own (closedir() closes it). */
static DIR *dir_entries(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;

	if (fd < 0)
		return NULL;
	dir = fdopendir(fd);
	if (!dir) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return dir;
}

/*
 * Whether a NAME.corrupt-* of @dirfd is the file @st: kept aside before (a
 * crash, or a replacement that failed, came between the two).  A second
 * name of another kind (a backup's hard link) is not that.
 */
static bool kept_aside(int dirfd, const char *name, const struct stat *st)
{
	DIR *dir = dir_entries(dirfd);
	size_t n = strlen(name);
	bool found = false;
	struct dirent *e;
	struct stat x;

	if (!dir)
		return false;
	while (!found && (e = readdir(dir)))
		found = !strncmp(e->d_name, name, n) && !strncmp(e->d_name + n, ".corrupt-", 9) &&
			!fstatat(dirfd, e->d_name, &x, AT_SYMLINK_NOFOLLOW) &&
			x.st_dev == st->st_dev && x.st_ino == st->st_ino;
	closedir(dir);
	return found;
}

/**
 * hbm_file_quarantine() - keep a damaged file of a directory aside
 * @dirfd: the directory
 * @name: the file
 * @moved_to: its second name, for the journal
 * @len: its size
 *
 * A second name for the file, NAME.corrupt-T (T: seconds since the epoch),
 * made durable; the file keeps its own, so that a crash at any moment
 * leaves one under it (a rename would leave none until its replacement was
 * written, and the next start would restore nothing).  The caller then
 * replaces it (hbm_atomic_write()).  A file kept aside before (a crash, or
 * a replacement that failed, came between the two) is not given a third.
 * Where no second name can be made (a filesystem without hard links, one
 * that refuses them: protected_hardlinks; ten of that second taken) it is
 * renamed: a crash before its replacement then finds none, but the copy is
 * kept.
 *
 * Return: 0 (a second name), HBM_QUARANTINE_MOVED (renamed: the caller
 * must replace it), or a negative errno (neither: it is as it was).
 */
int hbm_file_quarantine(int dirfd, const char *name, char *moved_to, size_t len)
{
	long long t = time(NULL);
	bool link = true;
	struct stat st;
	int i, ret;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (st.st_nlink > 1 && kept_aside(dirfd, name, &st)) {
		snprintf(moved_to, len, "%s.corrupt-* (kept aside before)", name);
		return 0;
	}
	for (i = 0; i < 11; i++) {	/* another of the same second is kept too */
		if ((i ? snprintf(moved_to, len, "%s.corrupt-%lld.%d", name, t, i < 10 ? i : 9) :
			 snprintf(moved_to, len, "%s.corrupt-%lld", name, t)) >= (int)len)
			return -ENAMETOOLONG;
		if (i == 10)	/* all taken: the last one goes, not this */
			ret = renameat(dirfd, name, dirfd, moved_to);
		else if (link)
			ret = linkat(dirfd, name, dirfd, moved_to, 0);
		else
			ret = renameat2(dirfd, name, dirfd, moved_to, RENAME_NOREPLACE);
		if (!ret)
			return fsync(dirfd) ? -errno : link && i < 10 ? 0 : HBM_QUARANTINE_MOVED;
		if (errno == EEXIST)
			continue;
		if (!link || (errno != EPERM && errno != EMLINK && errno != EOPNOTSUPP &&
			      errno != ENOSYS))
			return -errno;
		link = false;	/* this name again, renamed */
		i--;
	}
	return -EEXIST;
}

/**
 * hbm_state_quarantine() - keep a damaged state file aside (hbm_file_quarantine())
 * @dirfd: the state directory
 * @identity: the device
 * @moved_to: the new name, for the journal
 * @len: its size
 *
 * Return: 0 or a negative errno.
 */
int hbm_state_quarantine(int dirfd, const char *identity, char *moved_to,
			 size_t len)
{
	char name[256];
	int err = hbm_state_file_name(identity, name, sizeof(name));

	return err ? err : hbm_file_quarantine(dirfd, name, moved_to, len);
}

/**
 * hbm_state_log_open() - open a state file just written, to append to its log
 * @dirfd: the state directory
 * @s: what hbm_state_write() wrote (an empty log)
 * @log: filled in
 *
 * Return: 0 or a negative errno.
 */
int hbm_state_log_open(int dirfd, const struct hbm_state *s, struct hbm_state_log *log)
{
	char name[256];
	int err = hbm_state_file_name(s->identity, name, sizeof(name)), fd;

	if (err)
		return err;
	fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);	/* a compaction reads it */
	if (fd < 0)
		return -errno;
	*log = (struct hbm_state_log){
		.fd = fd, .open = 1, .serial = s->serial,
		.length = hbm_state_encode_size(s), .snapshot = hbm_state_encode_size(s),
	};
	return 0;
}

void hbm_state_log_close(struct hbm_state_log *log)
{
	if (log->open)
		close(log->fd);
	log->open = 0;
}

/**
 * hbm_state_append() - changes onto a state file's log, durably
 * @log: the file
 * @r: the changes, in order
 * @n: their count
 *
 * One write and one fdatasync, whatever @n: a return of 0 means they are
 * on disk.  On an error the file may hold a part of them past
 * @log->length: a torn tail, ignored by a read, but the caller must
 * replace the file (a snapshot) before appending again.
 *
 * Return: 0 or a negative errno.
 */
int hbm_state_append(struct hbm_state_log *log, const struct hbm_state_record *r, size_t n)
{
	uint8_t *buf = malloc(n * HBM_STATE_RECORD_SIZE + 1);
	size_t i;
	int err;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		hbm_state_log_encode(&r[i], log->serial, log->seq + 1 + i,
				     buf + i * HBM_STATE_RECORD_SIZE);
	err = pwrite_all(log->fd, buf, n * HBM_STATE_RECORD_SIZE, log->length);
	free(buf);
	if (!err && (hbm_state_fsyncs++, fdatasync(log->fd)))
		err = -errno;
	if (!err) {
		log->length += n * HBM_STATE_RECORD_SIZE;
		log->seq += n;
	}
	return err;
}

/* The temporary file a compaction writes its snapshot to. */
int hbm_state_compact_name(const char *identity, char *name, size_t len)
{
	char base[256];
	int err = hbm_state_file_name(identity, base, sizeof(base));

	if (!err && snprintf(name, len, ".%s.compact", base) >= (int)len)
		err = -ENAMETOOLONG;
	return err;
}

/* Whether @name is one hbm_state_compact_name() makes: ".NAME.state.compact". */
static bool is_compact_name(const char *name)
{
	static const char tail[] = ".state.compact";
	size_t n = strlen(name), end, i;

	if (n < 2 + sizeof(tail) - 1 || name[0] != '.' ||
	    strcmp(name + n - (sizeof(tail) - 1), tail))
		return false;
	end = n - (sizeof(tail) - 1);
	for (i = 1; i < end; i++) {	/* as hbm_state_file_name() escapes */
		if (name[i] == '%' && i + 2 < end && lower_hex(name[i + 1]) &&
		    lower_hex(name[i + 2]))
			i += 2;
		else if (!name_char(name[i]))
			return false;
	}
	return true;
}

/**
 * hbm_state_compact_clean() - remove the temporary files of compactions
 * @dirfd: the state directory
 *
 * For the daemon's start, when none is under way: those a crash (or a
 * kill) left behind would stay forever, each as large as a snapshot.
 * Whatever is under that exact name but a directory: a link or a FIFO
 * there would be in a compaction's way (hbm_state_compact() removes it
 * too); none is followed (unlinkat() acts on the name).
 *
 * Return: the files removed, or a negative errno.
 */
int hbm_state_compact_clean(int dirfd)
{
	DIR *dir = dir_entries(dirfd);
	struct dirent *e;
	struct stat st;
	int n = 0;

	if (!dir)
		return -errno;
	while ((e = readdir(dir)))
		if (is_compact_name(e->d_name) &&
		    !fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) &&
		    !unlinkat(dirfd, e->d_name, 0))
			n++;
	closedir(dir);
	return n;
}

static int pread_all(int fd, uint8_t *buf, size_t len, uint64_t at)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, at);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -EIO;
		buf += r;
		len -= r;
		at += r;
	}
	return 0;
}

/**
 * hbm_state_compact() - the first part of a compaction: a new snapshot
 * @dirfd: the state directory
 * @identity: the device
 * @fd: its state file, open
 * @upto: its length when the compaction began: what the snapshot holds
 * @count: filled in: what the snapshot holds, the log replayed (exact,
 *	where a log counts a page logged twice twice)
 *
 * The file's first @upto bytes, the log replayed, as a snapshot of the next
 * serial, written and fsync'd to hbm_state_compact_name(): O(n) time and
 * memory, for a thread or a child of its own.  The file itself is not
 * touched: records appended past @upto meanwhile are for
 * hbm_state_compact_finish().
 *
 * Return: 0; -EBADMSG when the file is damaged (compacting it would drop
 * records nobody was told of: the store rereads it instead); a negative errno.
 */
int hbm_state_compact(int dirfd, const char *identity, int fd, uint64_t upto,
		      struct hbm_state_count *count)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	char tmp[300];
	uint8_t *buf = malloc(upto ? upto : 1);
	int err = buf ? hbm_state_compact_name(identity, tmp, sizeof(tmp)) : -ENOMEM, out;

	if (!err)
		err = pread_all(fd, buf, upto, 0);
	if (!err)
		err = hbm_state_decode(buf, upto, 0, &s, &damage);
	free(buf);
	if (err)
		return err;
	buf = NULL;
	if (hbm_state_damaged(&damage) || damage.torn_bytes || strcmp(s.identity, identity))
		err = -EBADMSG;
	s.serial++;
	*count = hbm_state_count(&s);
	if (!err && !(buf = malloc(hbm_state_encode_size(&s))))
		err = -ENOMEM;
	if (!err) {
		hbm_state_encode(&s, buf);
		out = create_temp(dirfd, tmp);
		err = out < 0 ? out : pwrite_all(out, buf, hbm_state_encode_size(&s), 0);
		if (out >= 0 && !err && (hbm_state_fsyncs++, fsync(out)))
			err = -errno;
		if (out >= 0 && close(out) && !err)
			err = -errno;
	}
	free(buf);
	hbm_state_free(&s);
	return err;
}

/**
 * hbm_state_compact_finish() - the second part: the new snapshot in place
 * @dirfd: the state directory
 * @identity: the device
 * @log: its file, open; switched to the new one
 * @upto: as given to hbm_state_compact(), which succeeded
 *
 * The records appended since @upto go after the new snapshot (renumbered:
 * they are of its generation now), then it replaces the file: a read
 * and a write of those records and an fdatasync (none when there are
 * none: hbm_state_compact() fsync'd the rest), a rename, an fsync of the
 * directory.  O(records since @upto).  Until the rename the old file is
 * whole; after it, the new one.
 *
 * Return: 0 or a negative errno (the temporary file is removed, @log is
 * unchanged, unless the rename was made: then @log is the new file, and
 * only the directory's fsync failed); -E2BIG: more was appended since
 * @upto than the new snapshot's log may hold.
 */
int hbm_state_compact_finish(int dirfd, const char *identity, struct hbm_state_log *log,
			     uint64_t upto)
{
	size_t tail = log->length - upto, n = tail / HBM_STATE_RECORD_SIZE, i;
	uint8_t *buf = malloc(tail + 1);
	uint32_t gen = (uint32_t)log->serial, first = 0;
	char tmp[300], name[256];
	struct stat st;
	int fd = -1, err = buf ? hbm_state_compact_name(identity, tmp, sizeof(tmp)) : -ENOMEM;

	if (!err)
		err = hbm_state_file_name(identity, name, sizeof(name));
	if (!err)
		err = pread_all(log->fd, buf, tail, upto);
	for (i = 0; i < n && !err; i++) {	/* ours, whole: renumbered */
		uint8_t *p = buf + i * HBM_STATE_RECORD_SIZE;
		uint32_t seq = log_seq(p, HBM_STATE_RECORD_SIZE, gen);

		if (!i)
			first = seq;
		if (!seq || seq != first + i) {
			err = -EBADMSG;
			break;
		}
		put32(p + 36, i + 1);
		put32(p + 40, (uint32_t)(log->serial + 1));
		put32(p + 44, hbm_crc32c(0, p, 44));
	}
	/* the child's file, not one put in its place since */
	if (!err && (fd = openat(dirfd, tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0)
		err = -errno;
	if (!err && fstat(fd, &st))
		err = -errno;
	if (!err && !S_ISREG(st.st_mode))
		err = -EINVAL;
	/* the new snapshot may have fewer records than the old: a log it allows */
	if (!err && (st.st_size < HBM_STATE_HEADER_SIZE ||
		     n > HBM_STATE_LOG_MAX((st.st_size - HBM_STATE_HEADER_SIZE) /
					   HBM_STATE_RECORD_SIZE)))
		err = -E2BIG;
	if (!err)
		err = pwrite_all(fd, buf, tail, st.st_size);
	/* the child fsync'd the snapshot: only a tail appended to it is not on disk */
	if (!err && tail && (hbm_state_fsyncs++, fdatasync(fd)))
		err = -errno;
	free(buf);
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (err) {
		if (fd >= 0)
			close(fd);
		unlinkat(dirfd, tmp, 0);
		return err;
	}
	hbm_state_log_close(log);
	*log = (struct hbm_state_log){
		.fd = fd, .open = 1, .serial = log->serial + 1,
		.length = st.st_size + tail, .snapshot = st.st_size, .seq = n,
	};
	return (hbm_state_fsyncs++, fsync(dirfd)) ? -errno : 0;
}
