/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the control socket's connections are let go, the files their peers
 * passed with them (fdsink.c).
 */
#ifndef HBM_FDSINK_H
#define HBM_FDSINK_H

#include <stdbool.h>
#include <sys/types.h>

/* Killed children not yet gone, at most: no child is made past it. */
#define HBM_FDSINK_STUCK_MAX	4

struct hbm_fdsink {
	pid_t pid;		/* the child; 0: none (a zeroed sink too) */
	int sock;		/* to it: a datagram a file */
	int pidfd;		/* its, or -1 */
	pid_t dead[HBM_FDSINK_STUCK_MAX];	/* killed, not reaped yet */
	unsigned int nr_dead;
	unsigned int kept;	/* connections kept open for want of a child */
};

void hbm_fdsink_init(struct hbm_fdsink *s);
void hbm_fdsink_give(struct hbm_fdsink *s, int fd);
void hbm_fdsink_stop(struct hbm_fdsink *s);

#endif
