/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Time spans in systemd's syntax ("90", "30s", "2min", "1h 30min") and
 * numbers of bytes ("4096", "0x1000", "96G"), for hbmguardd's configuration
 * and hbmctl's options alike: one parser each.
 */
#ifndef HBM_TIMESPAN_H
#define HBM_TIMESPAN_H

#include <stdint.h>

#define USEC_PER_SEC	1000000ULL
#define USEC_PER_DAY	(86400 * USEC_PER_SEC)

int hbm_time_span(const char *v, uint64_t *usec);
int hbm_bytes(const char *v, uint64_t *bytes);

#endif /* HBM_TIMESPAN_H */
