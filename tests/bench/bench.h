/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the benchmarks share: a clock, a small fixed-seed generator, and a
 * lookup's anchor.
 */
#ifndef HBM_BENCH_H
#define HBM_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* A 64-bit LCG: the same sequence on every run, so runs compare. */
static inline uint32_t rnd(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

/*
 * After each timed lookup, and each of the anchor's loads: the next starts
 * once its loads are done (measured on this AMD host: independent random
 * loads with it take as long as the chase), so that both loops time one at
 * a time and differ only in their work.  Lookups of offsets drawn
 * beforehand would otherwise overlap their misses, nothing in one waiting
 * on the one before, and time their throughput against a load's latency.
 * Under qemu's TCG it orders nothing on the host, but there a lookup is
 * far more host instructions than the host keeps in flight.
 */
static inline void wait_for_loads(void)
{
#ifdef __x86_64__
	__builtin_ia32_lfence();
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * @bytes of memory as one cycle through every 8-byte slot in random order
 * (Sattolo's shuffle): each slot holds the index of the next, to free().
 */
static inline uint64_t *chase_new(size_t bytes)
{
	size_t n = bytes / sizeof(uint64_t), i;
	uint64_t *a, state = 7;

	if (n < 2) {
		fprintf(stderr, "chase_new: %zu bytes: too few to chase\n", bytes);
		exit(1);
	}
	a = malloc(n * sizeof(*a));
	if (!a) {
		perror("chase_new");
		exit(1);
	}
	for (i = 0; i < n; i++)
		a[i] = i;
	for (i = n - 1; i > 0; i--) {
		size_t j = rnd(&state) % i;
		uint64_t tmp = a[i];

		a[i] = a[j];
		a[j] = tmp;
	}
	return a;
}

/*
 * A lookup's anchor: one load from a random place in @bytes of memory, as a
 * lookup in a table that size makes at least once.  Each load's address is
 * the value the one before read (chase_new()), so that no two overlap, as
 * a descent's cannot: independent loads would time the memory's
 * throughput, several misses in flight at once, not a load.
 */
static inline double random_load_ns(size_t bytes)
{
	uint64_t *a = chase_new(bytes), p = 0;
	size_t i, loads = 2000000;
	double t0, ns;

	t0 = now_ns();
	for (i = 0; i < loads; i++) {
		p = a[p];
		wait_for_loads();
	}
	ns = (now_ns() - t0) / loads;
	free(a);
	return ns + (p == (uint64_t)-1);
}

#endif /* HBM_BENCH_H */
