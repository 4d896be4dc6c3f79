/* SPDX-License-Identifier: GPL-2.0 */
/* What hbmguardd's files share: the daemon's state and its entry points. */
#ifndef HBM_HBMGUARDD_H
#define HBM_HBMGUARDD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <netlink/netlink.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "config.h"
#include "ctl.h"

struct device {
	uint32_t id;
	char identity[HBMGUARD_IDENTITY_LEN];
	uint32_t page_size;
};

struct device_list {
	struct device dev[HBMGUARD_MAX_DEVICES];
	size_t nr;
};

struct daemon {
	struct hbm_config cfg;
	const char *config_path;
	int state_dir;
	int family;
	struct nl_sock *req;		/* requests and dumps */
	struct nl_sock *events;		/* the multicast group */
	uint64_t next_seq;		/* the event seqnum expected next */
	sd_event *loop;
	char identity[HBMGUARD_MAX_DEVICES][HBMGUARD_IDENTITY_LEN];	/* by id */
	bool journald;			/* a journal to send entries to */
	bool dirty[HBMGUARD_MAX_DEVICES];	/* changed since last saved */

	/* For STATUS= and the control socket's STATUS. */
	time_t started;
	uint64_t events_seen;
	uint64_t resyncs;
	time_t last_save;
	int last_save_error;
	uint64_t stored_extents[HBMGUARD_MAX_DEVICES];	/* by id */
	uint64_t stored_pages[HBMGUARD_MAX_DEVICES];

	int control;			/* the listening control socket */
	unsigned int clients;		/* connected to it */
};

/* hbmguardd.c */
int daemon_apply(struct daemon *d, uint16_t type, const struct hbm_ctl_extent *x);
void daemon_status(struct daemon *d, struct hbm_ctl_status *st);

/* control.c */
int control_setup(struct daemon *d);
void control_close(struct daemon *d);

#endif /* HBM_HBMGUARDD_H */
