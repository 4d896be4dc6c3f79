/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A budget of log lines (ratelimit.c): those a peer can cause, as fast as
 * it can send, at most a burst per interval, and how many were left out
 * told with the next one said.  journald drops a service's lines past its
 * own limit (RateLimitBurst=10000 per RateLimitIntervalSec=30s,
 * journald.conf(5), systemd 252), the daemon's about the memory with them:
 * a peer must not spend that for it.  The kernel's ___ratelimit()
 * (lib/ratelimit.c) in the daemon's words.
 */
#ifndef HBM_RATELIMIT_H
#define HBM_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

/* Zeroed: a budget not spent yet. */
struct hbm_ratelimit {
	uint64_t since;		/* the interval's start, CLOCK_MONOTONIC us; 0: none yet */
	unsigned int said;	/* lines said in it */
	uint64_t missed;	/* lines left out since the last said */
};

bool hbm_ratelimit(struct hbm_ratelimit *rl, uint64_t interval_us, unsigned int burst,
		   uint64_t now, uint64_t *missed);

#endif /* HBM_RATELIMIT_H */
