// SPDX-License-Identifier: GPL-2.0
/*
 * A device's state file (daemon/state.h), as hbmguardd finds it at a start:
 * whatever a crash, a full disk or a bad block left, read by
 * hbm_state_read() (in place, as the daemon does) and by
 * hbm_state_decode() (a copy), which must agree.  What a read trusts is
 * records sorted, apart, page aligned, in a state and of a source there
 * are; encoded again (hbm_state_encode()) it reads back the same, whole,
 * a snapshot a log may go after.
 *
 * Most inputs describe a file rather than being one, so that its CRCs
 * check out: a header (version, record size, promised count, page size,
 * identity, serial), snapshot records and log records, each whole or
 * damaged in one of the ways state.h names (a CRC, a field it checks, a
 * sequence number repeated or skipped, another generation), then a tail a
 * crash tore or garbage.  The read is checked against a model page by page:
 * the snapshot's good records, the log's good ones replayed over them in
 * order (the later word wins), and the damage it counts.  A file read
 * whole then goes through what the store does with it (daemon/store.c):
 * written as a snapshot, changes appended to its log, compacted while more
 * are appended, and read again: the snapshot with every change replayed.
 *
 * Input: a byte of mode; raw (even): a u32 of device pages, then the file;
 * described (odd): see describe().
 */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>

#include "state.h"
#include "fuzz.h"

static void cleanup(void);

static char dir[64];
static int dir_fd = -1;

static void cleanup(void)
{
	DIR *d = dir_fd >= 0 ? fdopendir(dup(dir_fd)) : NULL;
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
			unlinkat(dir_fd, e->d_name, 0);
	closedir(d);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_tmpdir(dir, sizeof(dir), "state");
	fuzz_on_failure = cleanup;	/* the directory, not left behind */
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		abort();
	atexit(cleanup);
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);	/* little-endian hosts only, as the daemon's */
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* ---- what a read trusts ---- */

static void records_sane(const struct hbm_state *s)
{
	uint64_t prev_end = 0;
	size_t i;

	CHECK(s->page_size >= HBMGUARD_PAGE_SIZE_MIN && s->page_size <= HBMGUARD_PAGE_SIZE_MAX &&
	      !(s->page_size & (s->page_size - 1)), "page size %u", s->page_size);
	CHECK(memchr(s->identity, 0, sizeof(s->identity)) && s->identity[0], "identity");
	for (i = 0; i < s->nr; i++) {
		const struct hbm_state_record *r = &s->records[i];

		CHECK(r->length && !((r->offset | r->length) & (s->page_size - 1)) &&
		      r->offset + r->length > r->offset, "record %zu: %#llx+%#llx", i,
		      (unsigned long long)r->offset, (unsigned long long)r->length);
		CHECK(r->offset >= prev_end, "record %zu at %#llx before %#llx", i,
		      (unsigned long long)r->offset, (unsigned long long)prev_end);
		CHECK(r->state >= HBMGUARD_STATE_PENDING && r->state <= HBMGUARD_STATE_FAILED &&
		      r->source < __HBMGUARD_SOURCE_MAX, "record %zu: state %u source %u", i,
		      r->state, r->source);
		prev_end = r->offset + r->length;
	}
}

/* Field by field: a record decoded in place keeps the file's bytes in its padding. */
static bool same_records(const struct hbm_state *a, const struct hbm_state *b)
{
	size_t i;

	if (a->nr != b->nr)
		return false;
	for (i = 0; i < a->nr; i++) {
		const struct hbm_state_record *x = &a->records[i], *y = &b->records[i];

		if (x->offset != y->offset || x->length != y->length ||
		    x->first_seen != y->first_seen || x->last_seen != y->last_seen ||
		    x->state != y->state || x->source != y->source || x->errors != y->errors)
			return false;
	}
	return true;
}

static bool same_damage(const struct hbm_state_damage *a, const struct hbm_state_damage *b)
{
	return a->bad_records == b->bad_records && a->missing_records == b->missing_records &&
	       !a->header == !b->header && a->log_bad == b->log_bad &&
	       a->log_missing == b->log_missing && a->log_duplicates == b->log_duplicates &&
	       a->torn_bytes == b->torn_bytes && a->log_beyond == b->log_beyond;
}

/* The file under @identity's name, read as the daemon reads it. */
static int read_back(const char *identity, uint64_t max_pages, struct hbm_state *out,
		     struct hbm_state_damage *d)
{
	return hbm_state_read(dir_fd, identity, max_pages, out, d);
}

static void write_file(const char *identity, const uint8_t *buf, size_t len)
{
	char name[256];
	int fd;

	CHECK(!hbm_state_file_name(identity, name, sizeof(name)), "name of '%s'", identity);
	fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len, "writing %s", name);
	close(fd);
}

/*
 * Decoded (a copy) and read (in place, by name): the same.  Return: the
 * decode's error, @out and @d filled when 0.
 */
static int load(const uint8_t *buf, size_t len, uint64_t max_pages, struct hbm_state *out,
		struct hbm_state_damage *d, char *identity)
{
	struct hbm_state_damage d2;
	struct hbm_state in_place;
	int err, err2;

	err = hbm_state_decode(buf, len, max_pages, out, d);
	CHECK(err == 0 || err == -EBADMSG, "decode: %d", err);
	CHECK(!err == !d->header, "decode %d, header %s", err, d->header ? d->header : "fine");
	/* the name the file is read under: its own identity, when it has one */
	strcpy(identity, "x");
	if (len >= HBM_STATE_HEADER_SIZE && memchr(buf + 40, 0, HBM_STATE_IDENTITY_LEN) && buf[40])
		strcpy(identity, (const char *)buf + 40);
	write_file(identity, buf, len);
	err2 = read_back(identity, max_pages, &in_place, &d2);
	CHECK(err2 == err, "read %d, decode %d", err2, err);
	if (err)
		return err;
	records_sane(out);
	CHECK(!strcmp(out->identity, identity), "identity");
	CHECK(same_records(out, &in_place) && same_damage(d, &d2) &&
	      out->page_size == in_place.page_size && out->serial == in_place.serial &&
	      out->snapshot_nr == in_place.snapshot_nr && out->log_nr == in_place.log_nr &&
	      out->record_size == in_place.record_size && out->version == in_place.version &&
	      out->file_bytes == in_place.file_bytes && out->file_bytes == len,
	      "read in place and decoded differ: %zu/%zu records", in_place.nr, out->nr);
	hbm_state_free(&in_place);
	return 0;
}

/* Encoded again, it reads back the same: whole, a snapshot alone. */
static void round_trip(const struct hbm_state *s)
{
	size_t len = hbm_state_encode_size(s);
	uint8_t *buf = malloc(len);
	struct hbm_state_damage d;
	struct hbm_state again;

	if (!buf)
		abort();
	hbm_state_encode(s, buf);
	CHECK(!hbm_state_decode(buf, len, 0, &again, &d), "the encoded state: %s", d.header);
	CHECK(!hbm_state_damaged(&d) && !d.torn_bytes, "the encoded state damaged");
	CHECK(same_records(&again, s) && again.serial == s->serial &&
	      again.page_size == s->page_size && !strcmp(again.identity, s->identity) &&
	      again.snapshot_nr == s->nr && !again.log_nr && hbm_state_appendable(&again),
	      "the encoded state reads back otherwise: %zu of %zu records", again.nr, s->nr);
	/* and at most as many records as pages: the daemon's bound admits it */
	hbm_state_free(&again);
	free(buf);
}

/* ---- the model of a described file ---- */

#define MODEL_PAGES	1024

struct mrec {
	bool set;
	struct hbm_state_record r;
};

static struct mrec model[MODEL_PAGES];

static void model_apply(const struct hbm_state_record *r, uint32_t page_size)
{
	uint64_t p;

	for (p = r->offset / page_size; p < (r->offset + r->length) / page_size; p++) {
		CHECK(p < MODEL_PAGES, "model page %llu", (unsigned long long)p);
		model[p].set = true;
		model[p].r = *r;
	}
}

/* The state's records, page by page, are the model's. */
static void model_check(const struct hbm_state *s, const char *what)
{
	uint64_t p, end = 0;
	size_t i;

	for (i = 0; i < s->nr; i++) {
		const struct hbm_state_record *r = &s->records[i];

		for (p = end; p < r->offset / s->page_size && p < MODEL_PAGES; p++)
			CHECK(!model[p].set, "%s: page %llu lost", what, (unsigned long long)p);
		for (p = r->offset / s->page_size; p < (r->offset + r->length) / s->page_size; p++) {
			const struct hbm_state_record *m = &model[p].r;

			CHECK(p < MODEL_PAGES && model[p].set, "%s: page %llu not stored", what,
			      (unsigned long long)p);
			CHECK(m->state == r->state && m->source == r->source &&
			      m->errors == r->errors && m->first_seen == r->first_seen &&
			      m->last_seen == r->last_seen,
			      "%s: page %llu: state %u source %u errors %u seen %llu..%llu, model "
			      "%u %u %u %llu..%llu", what, (unsigned long long)p, r->state, r->source,
			      r->errors, (unsigned long long)r->first_seen,
			      (unsigned long long)r->last_seen, m->state, m->source, m->errors,
			      (unsigned long long)m->first_seen, (unsigned long long)m->last_seen);
		}
		end = (r->offset + r->length) / s->page_size;
	}
	for (p = end; p < MODEL_PAGES; p++)
		CHECK(!model[p].set, "%s: page %llu lost", what, (unsigned long long)p);
}

static uint32_t crc(const uint8_t *p, size_t len)
{
	return hbm_crc32c(0, p, len);
}

/* One record of @rs bytes at @p, whole. */
static void record_put(uint8_t *p, uint32_t rs, const struct hbm_state_record *r,
		       uint32_t seq, uint32_t gen)
{
	memset(p, 0, rs);
	put64(p, r->offset);
	put64(p + 8, r->length);
	put64(p + 16, r->first_seen);
	put64(p + 24, r->last_seen);
	p[32] = r->state;
	p[33] = r->source;
	memcpy(p + 34, &r->errors, 2);
	put32(p + 36, seq);
	put32(p + 40, gen);
	put32(p + rs - 4, crc(p, rs - 4));
}

/* What a described record is and how it is damaged. */
enum harm { WHOLE, BAD_CRC, INSANE, BAD_SEQ, OTHER_GEN, DUP_SEQ, SKIP_SEQ, NO_SEQ };

struct drec {
	struct hbm_state_record r;
	enum harm harm;
	bool sane;
};

static void describe_record(struct fuzz_in *in, uint32_t page_size, uint64_t *at,
			    bool ascending, struct drec *d)
{
	uint8_t where = fuzz_u8(in), how = fuzz_u8(in), st = fuzz_u8(in);
	uint16_t errors;
	uint32_t seen = fuzz_u32(in);

	fuzz_take(in, &errors, sizeof(errors));
	if (ascending)
		*at += where % 4;
	else
		*at = where % 240;
	d->r = (struct hbm_state_record){
		.offset = *at * page_size, .length = (uint64_t)(1 + how % 8) * page_size,
		.first_seen = 1700000000u + (seen & 0xffff), .state = 1 + st % 3,
		.source = (st >> 2) % __HBMGUARD_SOURCE_MAX, .errors = errors,
	};
	d->r.last_seen = d->r.first_seen + (seen >> 16);
	if (st & 0x80)		/* times past 2106, or unknown */
		d->r.first_seen = (uint64_t)seen << 20;
	*at += 1 + how % 8;
	d->harm = how >> 3 < 24 ? WHOLE : (enum harm)((how >> 3) - 24);
	d->sane = true;
	if (d->harm == INSANE) {
		switch (st >> 5 & 3) {
		case 0:
			d->r.length = 0;
			break;
		case 1:
			d->r.offset += 512;	/* not page aligned (4 KiB at least) */
			break;
		case 2:
			d->r.state = st & 0x10 ? 0 : 4;
			break;
		default:
			d->r.source = __HBMGUARD_SOURCE_MAX + (st & 0xf);
			break;
		}
		d->sane = false;
	}
}

#define MAX_RECORDS	64

struct described {
	uint32_t version, rs, page_size, promised;
	uint64_t serial, max_pages;
	char identity[HBM_STATE_IDENTITY_LEN];
	bool header_bad;
	size_t nsnap, nlog, tail;
	struct drec snap[MAX_RECORDS], log[MAX_RECORDS];
	uint8_t *buf;
	size_t len;
};

/*
 * A mode byte with bit 0 set, then: header flags (bit 0 version 1, bits
 * 1-3 record size 48 + 8k, bit 4 the header damaged, bit 5 more records
 * promised than written, bit 6 a device's pages, bit 7 a long identity),
 * the page size's shift, the serial, record counts, pages and the torn
 * tail; 11 bytes a record (describe_record()).
 */
static void describe(struct fuzz_in *in, struct described *f)
{
	uint8_t flags = fuzz_u8(in), shift = fuzz_u8(in), more = fuzz_u8(in);
	uint8_t hpos = fuzz_u8(in), hbit = fuzz_u8(in), tail = fuzz_u8(in);
	uint16_t pages;
	uint32_t seq = 0, gen;
	uint64_t at = 0, i;
	uint8_t *p;

	memset(f, 0, sizeof(*f));
	f->version = flags & 1 ? 1 : 2;
	f->rs = f->version == 1 ? 48 : 48 + 8 * (flags >> 1 & 7);
	f->page_size = 4096u << (shift % 10);
	f->serial = fuzz_u64(in);
	f->nsnap = fuzz_u8(in) % (MAX_RECORDS + 1);
	f->nlog = fuzz_u8(in) % (MAX_RECORDS + 1);
	if (f->version == 1 || flags & 0x20)	/* none, or cut off with the file's end */
		f->nlog = 0;
	fuzz_take(in, &pages, sizeof(pages));
	f->max_pages = flags & 0x40 ? pages : 0;
	f->header_bad = flags & 0x10;
	f->promised = f->nsnap + (flags & 0x20 ? 1 + more % 4 : 0);
	if (flags & 0x80)
		memset(f->identity, 'a' + shift % 26, HBM_STATE_IDENTITY_LEN - 1);
	else
		snprintf(f->identity, sizeof(f->identity), "GPU-%02x%02x:%02x/x", more, hpos, hbit);
	for (i = 0; i < f->nsnap; i++)
		describe_record(in, f->page_size, &at, true, &f->snap[i]);
	for (i = 0; i < f->nlog; i++)
		describe_record(in, f->page_size, &at, false, &f->log[i]);
	f->tail = flags & 0x20 ? 0 : tail % (3 * f->rs + 1);

	f->len = HBM_STATE_HEADER_SIZE + (f->nsnap + f->nlog) * f->rs + f->tail;
	f->buf = p = calloc(1, f->len);
	if (!p)
		abort();
	memcpy(p, HBM_STATE_MAGIC, 8);
	put32(p + 8, f->version);
	put32(p + 12, HBM_STATE_HEADER_SIZE);
	put32(p + 16, f->rs);
	put32(p + 20, f->promised);
	put64(p + 24, f->serial);
	put32(p + 32, f->page_size);
	memcpy(p + 40, f->identity, strlen(f->identity));
	put32(p + 124, crc(p, 124));
	if (f->header_bad)
		p[hpos % HBM_STATE_HEADER_SIZE] ^= 1 << (hbit % 8);
	p += HBM_STATE_HEADER_SIZE;
	for (i = 0; i < f->nsnap; i++, p += f->rs) {
		struct drec *d = &f->snap[i];

		record_put(p, f->rs, &d->r, d->harm == BAD_SEQ ? 1 : 0,
			   d->harm == OTHER_GEN ? 1 : 0);
		if (d->harm == BAD_CRC)
			p[i % (f->rs - 4)] ^= 0x40;
	}
	gen = (uint32_t)f->serial;
	for (i = 0; i < f->nlog; i++, p += f->rs) {
		struct drec *d = &f->log[i];
		uint32_t s = ++seq;

		if (d->harm == DUP_SEQ)
			s = seq > 1 ? seq - 1 - i % (seq - 1) : 1, seq--;
		else if (d->harm == SKIP_SEQ)
			s = seq += 1 + i % 3;
		else if (d->harm == NO_SEQ)
			s = 0, seq--;
		record_put(p, f->rs, &d->r, s, d->harm == OTHER_GEN ? gen + 1 : gen);
		if (d->harm == BAD_CRC)
			p[i % (f->rs - 4)] ^= 0x40;
	}
	/* a tail: a write torn, or garbage */
	for (i = 0; i < f->tail; i++)
		p[i] = (uint8_t)(0xa5 + i * 7);
}

/* What state.h says a read of the described file keeps and counts. */
static void model_described(const struct described *f, const struct hbm_state *s,
			    const struct hbm_state_damage *d)
{
	size_t i, bad = 0, dups = 0;
	uint64_t prev_end = 0;
	uint32_t next = 1, seq = 0;
	bool whole = true;

	memset(model, 0, sizeof(model));
	for (i = 0; i < f->nsnap; i++) {
		const struct drec *r = &f->snap[i];
		bool ok = r->sane && r->harm != BAD_CRC && r->harm != BAD_SEQ &&
			  r->harm != OTHER_GEN && r->r.offset >= prev_end;

		if (!ok) {
			bad++;
			continue;
		}
		model_apply(&r->r, f->page_size);
		prev_end = r->r.offset + r->r.length;
	}
	CHECK(d->bad_records == bad, "%zu bad records, model %zu", d->bad_records, bad);
	CHECK(d->missing_records == f->promised - f->nsnap, "%zu missing records",
	      d->missing_records);
	CHECK(s->snapshot_nr == f->nsnap - bad, "%zu snapshot records, model %zu",
	      s->snapshot_nr, f->nsnap - bad);
	whole = !bad && f->promised == f->nsnap;
	/* version 1, or records missing: no log */
	if (f->version == 2 && f->promised == f->nsnap) {
		for (i = 0; i < f->nlog; i++) {
			const struct drec *r = &f->log[i];
			uint32_t s = ++seq;

			if (r->harm == DUP_SEQ)
				s = seq > 1 ? seq - 1 - i % (seq - 1) : 1, seq--;
			else if (r->harm == SKIP_SEQ)
				s = seq += 1 + i % 3;
			else if (r->harm == NO_SEQ)
				s = 0, seq--;
			whole &= r->harm == WHOLE;
			if (r->harm == BAD_CRC || r->harm == OTHER_GEN || !s)
				continue;	/* not whole */
			if (s < next) {
				dups++;
				continue;
			}
			next = s + 1;
			if (r->sane)
				model_apply(&r->r, f->page_size);
		}
		/*
		 * Duplicates right after a record that does not check out are
		 * passed over with it, and counted with it (log_bad, or a torn
		 * tail at the end).
		 */
		CHECK(d->log_duplicates <= dups &&
		      d->log_duplicates + d->log_bad + d->torn_bytes / f->rs >= dups,
		      "%zu log duplicates (%zu bad, %zu torn), model %zu", d->log_duplicates,
		      d->log_bad, d->torn_bytes, dups);
		/* the last write torn: a record and a piece of another at most */
		if (whole && f->tail < 2 * f->rs)
			CHECK(!hbm_state_damaged(d) && d->torn_bytes == f->tail,
			      "a whole file with %zu bytes torn: damaged %d, torn %zu", f->tail,
			      hbm_state_damaged(d), d->torn_bytes);
		/* more is damage, not replayed */
		if (whole && f->tail >= 2 * f->rs)
			CHECK(hbm_state_damaged(d) && !d->torn_bytes &&
			      d->log_bad == (f->tail + f->rs - 1) / f->rs,
			      "%zu bytes of garbage: damaged %d, torn %zu, %zu bad", f->tail,
			      hbm_state_damaged(d), d->torn_bytes, d->log_bad);
	} else if (whole) {
		/* version 1: what follows the records is not the file's */
		CHECK(!hbm_state_damaged(d) && !d->torn_bytes && !s->log_nr, "version 1 damaged");
	}
	model_check(s, "read");
}

/*
 * hbm_state_cover() over a table read in order, extent by extent, some of
 * the records not sent: each part it says is in one state page by page,
 * the state of the record sent that covers it, or CLEAN.
 */
static void cover_check(struct fuzz_in *in, const struct hbm_state *s)
{
	uint64_t unsent[(MODEL_PAGES + 63) / 64] = { 0 }, at, end = 0, p, ps = s->page_size;
	size_t i, j = 0, k, n = fuzz_u8(in) % 16;
	uint8_t st;

	if (s->nr > MODEL_PAGES ||
	    (s->nr && s->records[s->nr - 1].offset + s->records[s->nr - 1].length > MODEL_PAGES * ps))
		return;
	for (i = 0; i < s->nr; i++)
		if (fuzz_u8(in) & 1)
			unsent[i / 64] |= 1ULL << (i % 64);
	for (k = 0; k < n; k++) {
		at = end + fuzz_u8(in) % 8;
		end = at + 1 + fuzz_u8(in) % 32;
		while (at < end) {
			uint64_t len = hbm_state_cover(s, unsent, &j, at * ps, end * ps, &st);

			CHECK(len && len <= (end - at) * ps && !(len % ps), "cover of [%llu, %llu): %llu",
			      (unsigned long long)at, (unsigned long long)end, (unsigned long long)len);
			for (p = at; p < at + len / ps; p++) {
				uint8_t want = HBMGUARD_STATE_CLEAN;

				for (i = 0; i < s->nr; i++)
					if (s->records[i].offset <= p * ps &&
					    p * ps < s->records[i].offset + s->records[i].length &&
					    !(unsent[i / 64] >> (i % 64) & 1))
						want = s->records[i].state;
				CHECK(st == want, "cover: page %llu in state %u, %u expected",
				      (unsigned long long)p, st, want);
			}
			at += len / ps;
		}
	}
}

/* ---- what the store does with a file it read ---- */

static void store_flow(struct fuzz_in *in, const struct hbm_state *s)
{
	struct hbm_state_record change[2][8];
	struct hbm_state_log log = { 0 };
	struct hbm_state_count count;
	struct hbm_state_damage d;
	struct hbm_state again;
	uint64_t upto, at = 0;
	size_t n[2], i, k;
	struct drec dr;

	for (k = 0; k < 2; k++) {
		n[k] = fuzz_u8(in) % 9;
		for (i = 0; i < n[k]; i++) {
			describe_record(in, s->page_size, &at, false, &dr);
			dr.r.length = dr.r.length ?: s->page_size;
			dr.r.offset &= ~(uint64_t)(s->page_size - 1);
			dr.r.state = 1 + dr.r.state % 3;
			dr.r.source %= __HBMGUARD_SOURCE_MAX;
			change[k][i] = dr.r;
		}
	}
	/* the model: the state read, then every change in order */
	memset(model, 0, sizeof(model));
	for (i = 0; i < s->nr; i++) {
		if ((s->records[i].offset + s->records[i].length) / s->page_size > MODEL_PAGES)
			return;	/* not of the model's pages */
		model_apply(&s->records[i], s->page_size);
	}
	CHECK(!hbm_state_write(dir_fd, s), "a snapshot written");
	CHECK(!hbm_state_log_open(dir_fd, s, &log), "its log opened");
	CHECK(!hbm_state_append(&log, change[0], n[0]), "changes appended");
	for (i = 0; i < n[0]; i++)
		model_apply(&change[0][i], s->page_size);
	upto = log.length;
	CHECK(!hbm_state_compact(dir_fd, s->identity, log.fd, upto, &count), "compacted");
	CHECK(!hbm_state_append(&log, change[1], n[1]), "changes appended meanwhile");
	for (i = 0; i < n[1]; i++)
		model_apply(&change[1][i], s->page_size);
	CHECK(!hbm_state_compact_finish(dir_fd, s->identity, &log, upto), "compaction finished");
	CHECK(log.serial == s->serial + 1 && log.seq == n[1], "the log after: serial %llu seq %u",
	      (unsigned long long)log.serial, log.seq);
	hbm_state_log_close(&log);
	CHECK(!read_back(s->identity, 0, &again, &d), "read after compaction");
	CHECK(!hbm_state_damaged(&d) && !d.torn_bytes, "damaged after compaction");
	CHECK(again.serial == s->serial + 1 && again.log_nr == n[1],
	      "serial %llu, %zu log records", (unsigned long long)again.serial, again.log_nr);
	records_sane(&again);
	model_check(&again, "compacted");
	hbm_state_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	char identity[HBM_STATE_IDENTITY_LEN];
	struct hbm_state_damage d;
	struct described f;
	struct hbm_state s;
	uint8_t mode = fuzz_u8(&in);
	uint64_t max_pages;

	if (!(mode & 1)) {
		uint8_t *buf;
		size_t len;

		max_pages = fuzz_u32(&in) % 4096;
		buf = (uint8_t *)fuzz_rest(&in, &len);
		if (!load(buf, len, max_pages, &s, &d, identity)) {
			round_trip(&s);
			hbm_state_free(&s);
		}
		free(buf);
		return 0;
	}
	describe(&in, &f);
	if (!load(f.buf, f.len, f.max_pages, &s, &d, identity)) {
		CHECK(!f.header_bad, "a damaged header trusted");
		if (getenv("HBM_FUZZ_VERBOSE"))
			fprintf(stderr, "state: v%u rs %u, %zu+%zu records, tail %zu: %zu read "
				"(%zu of the log), %zu bad, %zu missing, %zu log bad, %zu dups, "
				"%zu gaps, %zu torn\n", f.version, f.rs, f.nsnap, f.nlog, f.tail, s.nr,
				s.log_nr, d.bad_records, d.missing_records, d.log_bad,
				d.log_duplicates, d.log_missing, d.torn_bytes);
		model_described(&f, &s, &d);
		round_trip(&s);
		cover_check(&in, &s);
		if (s.nr <= 1000 && mode & 2)
			store_flow(&in, &s);
		hbm_state_free(&s);
	} else {
		CHECK(f.header_bad || (f.max_pages && (f.promised > f.max_pages ||
						       (f.len - 128) / f.rs > f.max_pages +
						       HBM_STATE_LOG_MAX(f.max_pages))),
		      "a good header refused: %s", d.header);
	}
	free(f.buf);
	return 0;
}
