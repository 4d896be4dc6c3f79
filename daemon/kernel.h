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
	uint64_t read_to;		/* the events up to this seqnum are read or lost */
	bool overflowed;		/* the event socket, its backlog not read yet */
	sd_event_source *resync_retry;	/* a resync that failed, tried again */
	unsigned int resync_delay_s;	/* ... after this long; 0: the last one read all */
	char listed[HBMGUARD_MAX_DEVICES][HBMGUARD_IDENTITY_LEN];	/* last listed, by id */
	bool packed;			/* the module takes HBMGUARD_A_RECORDS */
	size_t restore_bytes;		/* a RESTORE request's size: the send buffer's */
	/* what was restored into a device whose table is being read (its store's) */
	const struct hbm_state *restored;
	uint32_t restored_id;
	uint64_t *unsent;		/* a bit per record of it not restored; NULL: none */
	/*
	 * Per device id, its data losses a page's state cannot show (events
	 * with HBMGUARD_PAGES_DATA_LOST), counted by the module and heard here.
	 */
	struct data_losses {
		uint64_t added;		/* the registration counted (ADDED_SEQNUM) */
		char identity[HBMGUARD_IDENTITY_LEN];
		uint64_t base;		/* the module's count at the last look */
		uint64_t base_seqnum;	/* the last of them then */
		uint64_t heard;		/* heard since, past base_seqnum */
		bool due;		/* a count read after events were lost: */
		uint64_t due_count;	/* ... compared once every event up to */
		uint64_t due_seqnum;	/* ... this one is read or lost */
	} losses[HBMGUARD_MAX_DEVICES];
	unsigned int losses_due;	/* devices with a count to compare */
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
