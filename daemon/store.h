/* SPDX-License-Identifier: GPL-2.0 */
/* The store (store.c): the state files; a sink of facts. */
#ifndef HBM_STORE_H
#define HBM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "core.h"

struct daemon;

/* A device's state file, as far as the disk has it (by device id). */
struct device_save {
	bool dirty;		/* the kernel's table changed since the last good save */
	int error;		/* of the last save, 0 when it went to disk */
	uint32_t page_size;	/* as its DEVICE_SEEN said: a file written once it is gone */
	bool turn_overflowed;	/* changes heard this turn beyond STORE_TURN_HEARD */
};

/*
 * Changes heard in this turn of the loop, saved after it (on_post()) from a
 * dump; kept so that a device removed in the same turn, which can no longer
 * be dumped, still has them saved.
 */
#define STORE_TURN_HEARD	64
struct turn_heard {
	uint32_t id;
	struct hbm_state_record rec;
};

/* A device's table as its source reads it, between DEVICE_SEEN and TABLE_READ. */
struct table_read {
	bool active;
	bool failed;			/* out of memory: saved from a dump of its own */
	int sync;			/* enum hbm_sync */
	struct device dev;
	struct hbm_state stored;	/* its state file */
	struct hbm_extents table;	/* the PAGES read so far */
};

struct hbm_store {
	struct daemon *d;
	struct hbmd_core *core;
	void (*save_again)(struct daemon *d);	/* the incidents, retried with the rest */
	struct device_save saves[HBMGUARD_MAX_DEVICES];	/* by id */
	sd_event_source *post;		/* the saves after each turn of the loop */
	sd_event_source *retry;		/* the next try of the saves that failed */
	unsigned int retry_s;		/* its delay, doubled at each failure */
	time_t last_save;
	uint64_t stored_extents[HBMGUARD_MAX_DEVICES];	/* by id */
	uint64_t stored_pages[HBMGUARD_MAX_DEVICES];
	struct table_read reading;
	struct turn_heard turn[STORE_TURN_HEARD];
	size_t nr_turn;
};

int store_start(struct hbm_store *s, struct daemon *d, struct hbmd_core *core,
		void (*save_again)(struct daemon *d));
int store_watch(struct hbm_store *s);
void store_stop(struct hbm_store *s);
void store_fact(void *s, const struct hbm_fact *f);
int store_apply(struct hbm_store *s, uint16_t type, const struct hbm_ctl_extent *x);
void store_save_failed(struct daemon *d);
unsigned int store_unsaved(const struct hbm_store *s);
void store_describe_unsaved(const struct hbm_store *s, char *buf, size_t len);

#endif /* HBM_STORE_H */
