/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The persistent blacklist of one device: what hbmguardd restores into the
 * kernel after a reboot, a module reload or a GPU re-enumeration.
 *
 * One file per device, named after its identity, in the state directory:
 * a snapshot, then its change log, appended to after it.  Little-endian,
 * versioned.  The snapshot is written atomically (temporary file, fsync,
 * rename, fsync of the directory) with an empty log; each turn of the
 * daemon's loop then appends that turn's changes as log records, with one
 * fdatasync, until the file is compacted into a new snapshot.
 *
 *	header (128 bytes)
 *	  0  char magic[8]	"HBMGSTAT"
 *	  8  u32 version	2 (1: the same without a log; still read)
 *	 12  u32 header_size	128
 *	 16  u32 record_size	48: of the snapshot's records and the log's.
 *				A reader takes 48 or more, a multiple of 8, up
 *				to 4096: the CRC is a record's last 4 bytes and
 *				what lies between byte 44 and it is for later
 *				versions (ignored).  This version writes 48.
 *	 20  u32 nr_records	of the snapshot
 *	 24  u64 serial		increases with every snapshot of the file
 *	 32  u32 page_size
 *	 36  u32 reserved	zero
 *	 40  char identity[64]	NUL-terminated
 *	104  u8 reserved[20]	zero
 *	124  u32 crc		CRC-32C of the 124 bytes before it
 *	snapshot: nr_records records, sorted by offset, not overlapping
 *	log: records to the end of the file, in the order written
 *	record (record_size bytes)
 *	  0  u64 offset		page aligned
 *	  8  u64 length		a non-zero multiple of page_size
 *	 16  u64 first_seen	seconds since the epoch
 *	 24  u64 last_seen
 *	 32  u8 state		PENDING, RETIRED or FAILED
 *	 33  u8 source		enum hbmguard_source
 *	 34  u16 errors
 *	 36  u32 seq		snapshot: 0; log: 1, 2, ... in the order written
 *	 40  u32 generation	snapshot: 0; log: the low 32 bits of serial
 *	 44  u32 crc		CRC-32C of the record's bytes before it
 *
 * Reading is the snapshot, then the log replayed over it: a log record
 * replaces whatever it overlaps, of the snapshot or of the records before
 * it (the later word wins; the store only ever adds pages, so the log has
 * no deletion: a clear rewrites the snapshot).
 *
 * Each record carries its own CRC, so damage costs only the records it
 * touches: a load keeps every record that checks out and says how many did
 * not.  A bad header trusts nothing.  The log's sequence numbers and
 * generation tell a crash from damage: a log that ends in a record cut
 * short, or in one record that does not check out (and at most a piece of
 * another after it), ends in the write a crash interrupted, never fsync'd,
 * never acknowledged: that tail is ignored (torn_bytes).  Anything else
 * that does not check out is damage (log_bad, not replayed): a bad record
 * with a good one after it was written and fsync'd before that one;
 * whole records of garbage at the end are more than a crash leaves on a
 * file system that grows a file after writing its data (ext4's default
 * data=ordered): said, not passed over (on one that can expose blocks
 * never written, a crash in a long append is reported as damage: a false
 * alarm that drops nothing acknowledged, as those records never were); a
 * sequence number skipped (log_missing) or seen again (log_duplicates,
 * skipped: replaying it again would undo what came after) is damage too.
 * A record of another generation (a snapshot's serial) never checks out.
 *
 * A writer appends at most HBM_STATE_LOG_MAX(nr_records) log records to a
 * snapshot (then it writes a new one), so a reader reads no more than
 * that (log_beyond), and a file promising more records than its device has
 * pages, or longer than that many and their longest log, is refused: what
 * a load allocates is bounded by the device and the file's size, whatever
 * the file says.
 */
#ifndef HBM_STATE_H
#define HBM_STATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/hbmguard.h>

#include "ctl.h"

#define HBM_STATE_MAGIC		"HBMGSTAT"
#define HBM_STATE_VERSION	2
#define HBM_STATE_HEADER_SIZE	128
#define HBM_STATE_RECORD_SIZE	48
#define HBM_STATE_RECORD_MAX	4096
#define HBM_STATE_IDENTITY_LEN	64
/* log records a snapshot of @n records may have after it */
#define HBM_STATE_LOG_MAX(n)	(2 * (uint64_t)(n) + 65536)

struct hbm_state_record {
	uint64_t offset;
	uint64_t length;
	uint64_t first_seen;
	uint64_t last_seen;
	uint8_t state;
	uint8_t source;
	uint16_t errors;
};

struct hbm_state {
	char identity[HBM_STATE_IDENTITY_LEN];
	uint32_t page_size;
	uint64_t serial;
	struct hbm_state_record *records;
	size_t nr;
	/* what a load found of the file: */
	size_t snapshot_nr;	/* records of the snapshot (the rest came from the log) */
	size_t log_nr;		/* log records replayed */
	uint32_t record_size;	/* of the file; 0 when none was read */
	uint32_t version;	/* of the file; 0 when none was read */
	uint64_t file_bytes;	/* the file's length, as read */
};

/* Whether a load found a snapshot alone, all of its file: a log may go after it. */
static inline int hbm_state_appendable(const struct hbm_state *s)
{
	return s->version == 2 && s->record_size == HBM_STATE_RECORD_SIZE && !s->log_nr &&
	       s->snapshot_nr == s->nr &&
	       s->file_bytes == HBM_STATE_HEADER_SIZE + (uint64_t)s->nr * HBM_STATE_RECORD_SIZE;
}

/* What a state holds: its records, and the pages they cover. */
struct hbm_state_count {
	uint64_t extents;
	uint64_t pages;
};

/* What a load found wrong; 0 fields when the file was whole. */
struct hbm_state_damage {
	size_t bad_records;	/* failed their CRC or their checks */
	size_t missing_records;	/* promised by the header, cut off */
	const char *header;	/* why the header is not trusted, or NULL */
	size_t log_bad;		/* log records that did not check out, a good one after */
	size_t log_missing;	/* log sequence numbers skipped */
	size_t log_duplicates;	/* log records seen before: skipped */
	size_t torn_bytes;	/* the tail of a write a crash cut short: ignored */
	size_t log_beyond;	/* log records past HBM_STATE_LOG_MAX(): not read */
};

/* Whether a load found damage (not a torn tail: that is a crash's, and ignored). */
static inline int hbm_state_damaged(const struct hbm_state_damage *d)
{
	return d->header || d->bad_records || d->missing_records || d->log_bad ||
	       d->log_missing || d->log_duplicates || d->log_beyond;
}

/* A state file open for appending to its log (store.c keeps one per device). */
struct hbm_state_log {
	int fd;			/* valid when open */
	int open;
	uint64_t serial;	/* the file's: its log records' generation */
	uint64_t length;	/* bytes of the file: the next record goes there */
	uint64_t snapshot;	/* bytes of its header and snapshot */
	uint32_t seq;		/* of its last log record, 0 none */
};

/* fsync()s and fdatasync()s made by this file's functions, in this process */
extern uint64_t hbm_state_fsyncs;

uint32_t hbm_crc32c(uint32_t crc, const void *buf, size_t len);

size_t hbm_state_encode_size(const struct hbm_state *s);
void hbm_state_encode(const struct hbm_state *s, uint8_t *buf);
int hbm_state_decode(const uint8_t *buf, size_t len, uint64_t max_pages,
		     struct hbm_state *out, struct hbm_state_damage *damage);
void hbm_state_free(struct hbm_state *s);
struct hbm_state_count hbm_state_count(const struct hbm_state *s);
uint64_t hbm_state_cover(const struct hbm_state *s, const uint64_t *unsent, size_t *j,
			 uint64_t offset, uint64_t end, uint8_t *state);

/**
 * hbm_state_restore_record() - a stored record as a packed RESTORE takes it
 * @r: the record, from a file that checked out (sorted, inside its device)
 * @gpu: the device is a GPU its driver bypasses (HBMGUARD_KIND_GPU)
 * @out: struct hbmguard_restore_record (uapi/linux/hbmguard.h)
 *
 * What the module refuses of a record would cost its whole request, so
 * what a file may hold that the module does not take is made what it can
 * take: FAILED is RETIRED (the module bypasses it, or fails it again when
 * no spare is left), a source it refuses (none, unknown, DRIVER off a GPU)
 * RESTORED, a time from past 2106 or one before the first "now", the
 * last before the first the first.  Inline: a restart packs 10^6 of them.
 */
static inline void hbm_state_restore_record(const struct hbm_state_record *r, int gpu,
			      struct hbmguard_restore_record *out)
{
	uint64_t first = r->first_seen <= UINT32_MAX ? r->first_seen : 0;
	uint64_t last = r->last_seen <= UINT32_MAX ? r->last_seen : 0;

	*out = (struct hbmguard_restore_record){
		.offset = r->offset, .length = r->length,
		.first_seen = first, .last_seen = first && last && last < first ? first : last,
		.state = r->state == HBMGUARD_STATE_PENDING ? HBMGUARD_STATE_PENDING :
							     HBMGUARD_STATE_RETIRED,
		.source = r->source == HBMGUARD_SOURCE_NONE || r->source >= __HBMGUARD_SOURCE_MAX ||
			  (r->source == HBMGUARD_SOURCE_DRIVER && !gpu) ?
			  HBMGUARD_SOURCE_RESTORED : r->source,
		.errors = r->errors,
	};
}


int hbm_atomic_write(int dirfd, const char *name, const void *buf, size_t len);
/* HBM_ENOTREG and hbm_read_strerror() are ctl.h's: a status carries them. */
int hbm_read_file(int dirfd, const char *name, uint8_t **buf, size_t *len);
/*
 * Whether hbm_read_file()'s @err, negative, leaves a file there unread: not
 * to be saved over (it may be all there is of what it holds) but read
 * again later, when its disk is mounted, its link or mode mended, its I/O
 * error gone.  Not so: no file (-ENOENT), and what cannot be a file of
 * ours (not a regular file, -HBM_ENOTREG; larger than any, -EFBIG), which
 * the incidents and drain files set aside as damage.
 */
static inline bool hbm_read_again(int err)
{
	return err && err != -ENOENT && err != -HBM_ENOTREG && err != -EFBIG;
}

/* hbm_file_quarantine(): renamed, not linked; no file under its name until replaced */
#define HBM_QUARANTINE_MOVED 1
int hbm_file_quarantine(int dirfd, const char *name, char *moved_to, size_t len);

int hbm_state_file_name(const char *identity, char *name, size_t len);
int hbm_state_write(int dirfd, const struct hbm_state *s);
int hbm_state_read(int dirfd, const char *identity, uint64_t max_pages,
		   struct hbm_state *out, struct hbm_state_damage *damage);
int hbm_state_quarantine(int dirfd, const char *identity, char *moved_to,
			 size_t len);

int hbm_state_replay(const struct hbm_state_record *base, size_t nr,
		     const struct hbm_state_record *log, size_t log_nr,
		     struct hbm_state_record **out, size_t *out_nr);
void hbm_state_log_encode(const struct hbm_state_record *r, uint64_t serial,
			  uint32_t seq, uint8_t *p);
int hbm_state_log_open(int dirfd, const struct hbm_state *s, struct hbm_state_log *log);
void hbm_state_log_close(struct hbm_state_log *log);
int hbm_state_append(struct hbm_state_log *log, const struct hbm_state_record *r, size_t n);
int hbm_state_compact_name(const char *identity, char *name, size_t len);
int hbm_state_compact(int dirfd, const char *identity, int fd, uint64_t upto,
		      struct hbm_state_count *count);
int hbm_state_compact_clean(int dirfd);
int hbm_state_compact_finish(int dirfd, const char *identity, struct hbm_state_log *log,
			     uint64_t upto);

#endif /* HBM_STATE_H */
