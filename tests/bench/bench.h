/* SPDX-License-Identifier: GPL-2.0 */
/* What the benchmarks share: a clock and a small, fixed-seed generator. */
#ifndef HBM_BENCH_H
#define HBM_BENCH_H

#include <stdint.h>
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

#endif /* HBM_BENCH_H */
