/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the control socket's connections are let go, the files their peers
 * passed with them (fdsink.c).
 */
#ifndef HBM_FDSINK_H
#define HBM_FDSINK_H

#include <stdbool.h>
#include <sys/types.h>

struct hbm_fdsink {
	pid_t pid;		/* the child; 0: none (a zeroed sink too) */
	int sock;		/* to it: a datagram a file */
	int pidfd;		/* its, or -1 */
	pid_t dead;		/* killed, not reaped yet; 0: none */
	bool said;		/* no child to take them: said once */
};

void hbm_fdsink_init(struct hbm_fdsink *s);
void hbm_fdsink_give(struct hbm_fdsink *s, int fd);
void hbm_fdsink_stop(struct hbm_fdsink *s);

#endif
