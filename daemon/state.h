/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The persistent blacklist of one device: what hbmguardd restores into the
 * kernel after a reboot, a module reload or a GPU re-enumeration.
 *
 * One file per device, named after its identity, in the state directory.
 * Little-endian, versioned, written atomically (temporary file, fsync,
 * rename, fsync of the directory):
 *
 *	header (128 bytes)
 *	  0  char magic[8]	"HBMGSTAT"
 *	  8  u32 version	1
 *	 12  u32 header_size	128
 *	 16  u32 record_size	48
 *	 20  u32 nr_records
 *	 24  u64 serial		increases with every write of the file
 *	 32  u32 page_size
 *	 36  u32 reserved	zero
 *	 40  char identity[64]	NUL-terminated
 *	104  u8 reserved[20]	zero
 *	124  u32 crc		CRC-32C of the 124 bytes before it
 *	records (48 bytes each), sorted by offset, not overlapping
 *	  0  u64 offset		page aligned
 *	  8  u64 length		a non-zero multiple of page_size
 *	 16  u64 first_seen	seconds since the epoch
 *	 24  u64 last_seen
 *	 32  u8 state		PENDING, RETIRED or FAILED
 *	 33  u8 source		enum hbmguard_source
 *	 34  u16 errors
 *	 36  u32 reserved	zero
 *	 40  u32 reserved2	zero
 *	 44  u32 crc		CRC-32C of the 44 bytes before it
 *
 * Each record carries its own CRC, so damage costs only the records it
 * touches: a load keeps every record that checks out and says how many did
 * not.  A bad header trusts nothing.
 */
#ifndef HBM_STATE_H
#define HBM_STATE_H

#include <stddef.h>
#include <stdint.h>

#define HBM_STATE_MAGIC		"HBMGSTAT"
#define HBM_STATE_VERSION	1
#define HBM_STATE_HEADER_SIZE	128
#define HBM_STATE_RECORD_SIZE	48
#define HBM_STATE_IDENTITY_LEN	64

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
};

/* What a load found wrong; 0 fields when the file was whole. */
struct hbm_state_damage {
	size_t bad_records;	/* failed their CRC or their checks */
	size_t missing_records;	/* promised by the header, cut off */
	const char *header;	/* why the header is not trusted, or NULL */
};

uint32_t hbm_crc32c(uint32_t crc, const void *buf, size_t len);

size_t hbm_state_encode_size(const struct hbm_state *s);
void hbm_state_encode(const struct hbm_state *s, uint8_t *buf);
int hbm_state_decode(const uint8_t *buf, size_t len, struct hbm_state *out,
		     struct hbm_state_damage *damage);
void hbm_state_free(struct hbm_state *s);

int hbm_atomic_write(int dirfd, const char *name, const void *buf, size_t len);
int hbm_read_file(int dirfd, const char *name, uint8_t **buf, size_t *len);
int hbm_file_quarantine(int dirfd, const char *name, char *moved_to, size_t len);

int hbm_state_file_name(const char *identity, char *name, size_t len);
int hbm_state_write(int dirfd, const struct hbm_state *s);
int hbm_state_read(int dirfd, const char *identity, struct hbm_state *out,
		   struct hbm_state_damage *damage);
int hbm_state_quarantine(int dirfd, const char *identity, char *moved_to,
			 size_t len);

#endif /* HBM_STATE_H */
