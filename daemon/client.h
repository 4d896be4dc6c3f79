/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A connection to hbmguardd's control socket, and the process at its other
 * end: what control.c accepts and recovery.c speaks to (a rank), neither
 * knowing the other.
 */
#ifndef HBM_CLIENT_H
#define HBM_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "ctl.h"
#include "sha256.h"

struct daemon;

/*
 * A job as the daemon tells jobs apart (ctl.h): its owner, its key's
 * SHA-256 digest (all zero: registered without a key) and its name.
 */
struct job_id {
	uid_t uid;
	uint8_t key[HBM_SHA256_LEN];
	char name[HBM_CTL_NAME_LEN];
};

/* A connection to the control socket; a training rank once registered. */
struct client {
	struct daemon *d;
	int fd;
	struct ucred cred;		/* from SO_PEERCRED, at accept */
	uint64_t tenant;		/* whose that uid is (hbm_tenant()): its limits */
	int pidfd;			/* that process, pinned at accept; -1: none */
	size_t sent_before_pin;		/* bytes queued when pinned by pid (pin_peer()) */
	sd_event_source *source;
	sd_event_source *lifetime;	/* closes it unless it registers as a rank */
	sd_event_source *exited;	/* a rank's process ending */
	bool overflow;			/* over a limit: held for one request */
	bool admin;			/* proved CAP_SYS_ADMIN: not counted */
	struct client *next;		/* every connection */
	bool is_rank;
	struct hbm_ctl_rank reg;	/* what it registered as */
	struct job_id job;		/* its job: its uid, key and reg.job */
	uint32_t answer;		/* to the current step of its job's incident */
	struct client *next_rank;
};

bool client_send_packet(struct client *c, uint16_t type, uint32_t seq, int32_t err,
			const void *body);
void control_send(struct client *c, uint16_t type, const void *body);
bool control_owned_by(int pidfd, pid_t pid, uid_t uid);
bool client_may_log(const struct client *c);

#endif /* HBM_CLIENT_H */
