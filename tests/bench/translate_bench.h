/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hbmguard_translate() timed as bench-core (natively, over the map laid out
 * as the kernel maps it) and hbmbench (in the guest, over the kernel's own
 * map) both time it: the same loop for the clean, the bad and the
 * one-offset rows.
 */
#ifndef HBM_TRANSLATE_BENCH_H
#define HBM_TRANSLATE_BENCH_H

#include "bench.h"
#include "hbmguard.h"

/*
 * Lookups of @n offsets drawn beforehand, one at a time (wait_for_loads()),
 * each expected to find its page in @state: ns a lookup, or -1 when one
 * failed or found another state.
 */
static inline double translate_ns(struct hbmguard_table *t, const uint64_t *offsets,
				  uint32_t n, uint32_t state)
{
	volatile uint64_t sink = 0;
	uint64_t served;
	double t0 = now_ns();
	uint32_t i, st;

	for (i = 0; i < n; i++) {
		if (hbmguard_translate(t, offsets[i], &served, &st) || st != state)
			return -1;
		sink += served;
		wait_for_loads();
	}
	return (now_ns() - t0) / n;
}

#endif /* HBM_TRANSLATE_BENCH_H */
