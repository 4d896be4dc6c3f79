// SPDX-License-Identifier: GPL-2.0
/* A budget of log lines (ratelimit.h). */
#include "ratelimit.h"

/**
 * hbm_ratelimit() - whether a line may be said now
 * @rl: its budget
 * @interval_us: of each budget
 * @burst: the lines each may say
 * @now: CLOCK_MONOTONIC, us (not 0)
 * @missed: where a line may be said, how many were left out before it: the
 *	caller says so first, once
 *
 * Return: true if it may.
 */
bool hbm_ratelimit(struct hbm_ratelimit *rl, uint64_t interval_us, unsigned int burst,
		   uint64_t now, uint64_t *missed)
{
	if (!rl->since || now - rl->since >= interval_us) {
		rl->since = now;
		rl->said = 0;
	}
	if (rl->said >= burst) {
		rl->missed++;
		return false;
	}
	rl->said++;
	*missed = rl->missed;
	rl->missed = 0;
	return true;
}
