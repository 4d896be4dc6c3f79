/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How hbmguardd tells the journal about a module event: one structured entry
 * per event, with a MESSAGE_ID per kind that daemon/systemd/hbmguard.catalog
 * explains to journalctl -x.
 */
#ifndef HBM_JOURNAL_H
#define HBM_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

/* An event as netlink delivers it. */
struct hbm_event_view {
	uint32_t type;
	uint64_t seqnum;
	uint32_t device;
	uint64_t offset;
	uint64_t length;
	uint32_t source;
	uint32_t state;
	uint32_t count;
	uint32_t aux;
};

struct hbm_journal_entry {
	const char *message_id;		/* 32 hex digits */
	int priority;			/* syslog(3) level */
	char message[256];
};

int hbm_journal_describe(const struct hbm_event_view *ev, const char *identity,
			 struct hbm_journal_entry *out);
const char *hbm_journal_source_name(uint32_t source);

struct hbm_fact;
void hbm_journal_fact(void *journald, const struct hbm_fact *f);

#endif /* HBM_JOURNAL_H */
