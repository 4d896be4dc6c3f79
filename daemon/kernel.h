/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel link (kernel.c): hbmguard.ko's netlink family, a source of facts. */
#ifndef HBM_KERNEL_H
#define HBM_KERNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <netlink/netlink.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "core.h"

struct daemon;

struct hbm_kernel {
	struct daemon *d;
	struct hbm_source_link link;	/* to the core */
	int family;
	struct nl_sock *req;		/* requests and dumps */
	unsigned int req_sent;		/* its request's number (hbm_genl_match_replies()) */
	struct nl_sock *dump;		/* a table read as facts (table_facts()) */
	struct nl_sock *events;		/* the multicast group */
	sd_event_source *io;
	uint64_t next_seq;		/* the event seqnum expected next */
	bool overflowed;		/* the event socket, its backlog not read yet */
	sd_event_source *resync_retry;	/* a resync that failed, tried again */
	unsigned int resync_delay_s;	/* ... after this long; 0: the last one read all */
	char listed[HBMGUARD_MAX_DEVICES][HBMGUARD_IDENTITY_LEN];	/* last listed, by id */
	uint64_t listed_added[HBMGUARD_MAX_DEVICES];	/* its ADDED_SEQNUM; 0: not said */
	bool packed;			/* the module takes HBMGUARD_A_RECORDS */
	size_t restore_bytes;		/* a RESTORE request's most: the send buffer's */
	bool reading;			/* a DEVICE_SEEN said, its table read next: */
	uint32_t reading_id;		/* ... this device's */
	/* what was restored into a device whose table is being read (its store's) */
	const struct hbm_state *restored;
	uint32_t restored_id;
	uint64_t *unsent;		/* a bit per record of it not restored; NULL: none */
	struct hbm_losses losses;	/* data lost where no table read can show it */
	uint64_t settle_at;		/* the module's seqnum before a drain; 0 none */
	sd_event_source *reread;	/* the event socket read again, once the loop turns */
	bool rejoin;			/* the family registered anew, not joined yet */
};

extern const struct hbm_source_ops kernel_ops;

int kernel_start(struct hbm_kernel *k, struct daemon *d, struct hbm_source_link link);
int kernel_watch(struct hbm_kernel *k);
void kernel_reconfigure(struct hbm_kernel *k);
void kernel_stop(struct hbm_kernel *k);

#endif /* HBM_KERNEL_H */
