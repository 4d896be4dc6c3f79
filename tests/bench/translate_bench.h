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

/*
 * What a lookup in a table larger than the cache cannot cost less than:
 * its descent with every node it reads in the cache (a lookup of @one
 * again and again) and then one miss, a load from a random place in @bytes
 * (random_load_ns()'s).  Timed as one chain, as translate_ns() times the
 * rows: the load's address waits on what the lookup served, the next
 * lookup's offset on what the load read, one turn of the loop each.  Not
 * two loops' times added, each with a turn of its own, on a host whose
 * load latency moves by a third from run to run.  ns a turn, or -1 when a
 * lookup failed or found @one not clean.
 */
static inline double translate_floor_ns(struct hbmguard_table *t, uint64_t one,
					size_t bytes, uint32_t n)
{
	volatile uint64_t opaque = 0;
	const uint64_t zero = opaque;	/* 0 the compiler cannot see: the dependencies stay */
	uint64_t *a = chase_new(bytes), p = 0, served = 0;
	double t0 = now_ns(), ns;
	uint32_t i, st;

	for (i = 0; i < n; i++) {
		if (hbmguard_translate(t, one + (p & zero), &served, &st) ||
		    st != HBMGUARD_STATE_CLEAN) {
			free(a);
			return -1;
		}
		p = a[p + (served & zero)];
		wait_for_loads();
	}
	ns = (now_ns() - t0) / n;
	free(a);
	return ns + (p == (uint64_t)-1);
}

#endif /* HBM_TRANSLATE_BENCH_H */
