/* SPDX-License-Identifier: GPL-2.0 */
/* What hbmguardd's files share: the daemon's state and its entry points. */
#ifndef HBM_HBMGUARDD_H
#define HBM_HBMGUARDD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>
#include <netlink/netlink.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "client.h"
#include "config.h"
#include "ctl.h"
#include "seen.h"

struct device {
	uint32_t id;
	char identity[HBMGUARD_IDENTITY_LEN];
	uint32_t page_size;
};

struct device_list {
	struct device dev[HBMGUARD_MAX_DEVICES];
	size_t nr;
};

/* An incident (recovery.c): what hbmctl sees, and what drives it. */
struct incident {
	struct hbm_ctl_incident info;
	struct daemon *d;
	sd_event_source *timer;		/* the current step's deadline */
	int pidfd;			/* the failed rank's process */
	pid_t pid;
	uid_t uid;			/* the job's owner */
};

#define HBM_INCIDENTS_KEPT	64

/* A device's state file, as far as the disk has it (by device id). */
struct device_save {
	bool dirty;		/* the kernel's table changed since the last good save */
	int error;		/* of the last save, 0 when it went to disk */
};

struct daemon {
	struct hbm_config cfg;
	const char *config_path;
	int state_dir;
	int family;
	struct nl_sock *req;		/* requests and dumps */
	struct nl_sock *events;		/* the multicast group */
	uint64_t next_seq;		/* the event seqnum expected next */
	bool overflowed;		/* the event socket, its backlog not read yet */
	sd_event *loop;
	char identity[HBMGUARD_MAX_DEVICES][HBMGUARD_IDENTITY_LEN];	/* by id */
	bool journald;			/* a journal to send entries to */
	struct device_save saves[HBMGUARD_MAX_DEVICES];	/* by id */
	int incidents_error;		/* of the last save of the incidents */
	sd_event_source *retry;		/* the next try of the saves that failed */
	unsigned int retry_s;		/* its delay, doubled at each failure */
	struct hbm_ranges seen[HBMGUARD_MAX_DEVICES];	/* lost data acted upon */

	/* For STATUS= and the control socket's STATUS. */
	time_t started;
	uint64_t events_seen;
	uint64_t resyncs;
	time_t last_save;
	uint64_t stored_extents[HBMGUARD_MAX_DEVICES];	/* by id */
	uint64_t stored_pages[HBMGUARD_MAX_DEVICES];

	int control;			/* the listening control socket */
	struct client *clients;		/* connected to it */

	struct client *ranks;		/* registered training ranks */
	struct incident *incidents;	/* oldest first */
	size_t nr_incidents, incidents_cap;
	uint64_t last_incident;		/* the id of the newest */
};

/* hbmguardd.c */
int daemon_apply(struct daemon *d, uint16_t type, const struct hbm_ctl_extent *x);
void daemon_status(struct daemon *d, struct hbm_ctl_status *st);
void daemon_notify_status(struct daemon *d);
void daemon_save_failed(struct daemon *d);
bool daemon_is_bypassed(struct daemon *d, const char *identity, uint64_t offset,
			uint64_t length);

/* control.c */
int control_setup(struct daemon *d);
void control_close(struct daemon *d);
void control_close_client(struct client *c);

/* recovery.c */
void recovery_load(struct daemon *d);
void recovery_save_again(struct daemon *d);
void recovery_on_lost_data(struct daemon *d, const char *identity,
			   uint64_t offset, uint64_t length);
int recovery_register(struct daemon *d, struct client *c, const struct hbm_ctl_rank *r);
int recovery_answer(struct daemon *d, struct client *c, const struct hbm_ctl_answer *a);
void recovery_client_gone(struct daemon *d, struct client *c);
int recovery_rank_get(struct daemon *d, uint32_t index, struct hbm_ctl_rank_info *out);
int recovery_incident_get(struct daemon *d, uint32_t index, struct hbm_ctl_incident *out);
size_t recovery_open_incidents(struct daemon *d);

#endif /* HBM_HBMGUARDD_H */
