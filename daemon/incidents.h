/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The incidents file of hbmguardd (recovery.c): the rank recoveries it keeps
 * across restarts, in the state directory, rewritten atomically.
 *
 *	header (16 bytes)
 *	  0  char magic[8]	"HBMGINCI"
 *	  8  u32 version	1
 *	 12  u32 count		of the records that follow
 *	records (HBM_INCIDENTS_RECORD bytes each), oldest first
 *	  0  struct hbm_ctl_incident	index and total unused
 *	     u32 crc			CRC-32C of the incident
 *	     u32 reserved		zero
 *
 * In the host's byte order: the file never leaves its machine.  As for the
 * state files (state.h), each record has its CRC: damage costs the records
 * it touches, and a bad header trusts nothing.
 */
#ifndef HBM_INCIDENTS_H
#define HBM_INCIDENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl.h"

#define HBM_INCIDENTS_MAGIC	"HBMGINCI"
#define HBM_INCIDENTS_VERSION	1
#define HBM_INCIDENTS_HEADER	16
#define HBM_INCIDENTS_RECORD	(sizeof(struct hbm_ctl_incident) + 8)

struct hbm_incidents_damage {
	size_t bad_records;	/* failed their CRC or their checks */
	size_t missing_records;	/* promised by the header, cut off */
	const char *header;	/* why the header is not trusted, or NULL */
};

size_t hbm_incidents_encode_size(size_t nr);
void hbm_incidents_encode_header(uint8_t *buf, size_t nr);
void hbm_incidents_encode_record(uint8_t *buf, size_t i, const struct hbm_ctl_incident *in);
int hbm_incidents_decode(const uint8_t *buf, size_t len, struct hbm_ctl_incident *out,
			 size_t max, size_t *nr, struct hbm_incidents_damage *damage);

/*
 * Rank recoveries ended since the daemon started (recovery.c counts them
 * with metrics_incident_ended() as each ends; metrics.c renders them;
 * here, not in metrics.h, as daemon.h holds them and metrics.c reads daemon.h):
 * counters that never go down, whatever the kept history forgets.  By
 * outcome (0: resumed, 1: escalated); the phases by the state that began
 * them, each a histogram's buckets (not cumulative; incident_phase_bounds,
 * and +Inf).
 */
#define METRICS_PHASE_BUCKETS	15
struct metrics_incidents {
	uint64_t ended[2];
	struct metrics_phase {
		uint64_t bucket[METRICS_PHASE_BUCKETS];
		double sum;
	} phase[HBM_INCIDENT_RESUMED][2];
};

extern const double incident_phase_bounds[METRICS_PHASE_BUCKETS - 1];

void metrics_incident_ended(struct metrics_incidents *t, const struct hbm_ctl_incident *in,
			    bool timed);

#endif /* HBM_INCIDENTS_H */
