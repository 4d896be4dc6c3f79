/* SPDX-License-Identifier: GPL-2.0 */
/* The store (store.c): the state files; a sink of facts. */
#ifndef HBM_STORE_H
#define HBM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "core.h"
#include "state.h"

struct daemon;

/* A device's state file, as far as the disk has it (by device id). */
struct device_save {
	bool dirty;		/* the kernel's table changed since the last good save */
	int error;		/* of the last save, 0 when it went to disk */
	uint32_t page_size;	/* as its DEVICE_SEEN said: a file written once it is gone */
	bool turn_overflowed;	/* changes heard this turn beyond STORE_TURN_HEARD */
	bool no_compact;	/* its compaction failed: none until its next snapshot */
	struct hbm_state_log log;	/* its file, open to append to since its last snapshot */
	char identity[HBMGUARD_IDENTITY_LEN];	/* the log's */
	uint64_t covered;	/* the kernel's events up to this one are in its snapshot */
};

/*
 * What the store owes a device, by its identity (its id may name another
 * device before the kernel link hears it gone, and it keeps what is owed
 * across its DEVICE_GONE: a module reloaded), until paid.
 */
struct store_owed {
	char identity[HBMGUARD_IDENTITY_LEN];
	bool restore;		/* its file could not be read when its table was: its
				 * pages go back where the kernel lacks them, at the
				 * first read or save that reads the file */
	struct hbm_state_record *cleared;	/* ranges an operator cleared in the */
	size_t nr_cleared;			/* kernel that no write of the file left out yet */
};

/* The compaction under way (one at a time), in a child of its own. */
struct compaction {
	pid_t pid;			/* 0: none; until reaped */
	int fd;				/* the child's word: its error */
	int pidfd;			/* readable once it has exited; -1 none */
	bool killed;			/* by the daemon: its word not taken */
	sd_event_source *src;		/* on the pidfd */
	sd_event_source *deadline;	/* past it, the child is killed */
	uint32_t id;			/* the device */
	char identity[HBMGUARD_IDENTITY_LEN];
	uint64_t upto;			/* the file's length at the fork */
	struct hbm_state_count at_fork;	/* the device's counts then */
	bool abandoned;			/* the file was replaced meanwhile */
};

/* A compaction child's word on its pipe. */
struct compaction_answer {
	int32_t err;
	uint32_t reserved;
	struct hbm_state_count count;	/* of the snapshot it wrote */
};

/* What the store did, for the bench (SIGUSR1, and at exit, to the journal). */
struct store_counters {
	uint64_t logged;		/* changes appended to the logs */
	uint64_t appends;		/* appends: one write and one fdatasync each */
	uint64_t snapshots;		/* full saves: a dump and an atomic rewrite */
	uint64_t compactions;
	uint64_t bytes;			/* written to the state files, by all of these */
	uint64_t failures;		/* saves of a device's file that failed */
	time_t last_good;		/* of the last save that reached the disk; 0 none */
};

/*
 * Changes heard in this turn of the loop, appended to the logs after it
 * (on_post()); a device removed in the same turn still has them saved.  As
 * many as kernel.c's on_readable() reads in one turn: a burst of events
 * costs its records, not a dump (a turn beyond it makes a snapshot).
 */
#define STORE_TURN_HEARD	1024
struct turn_heard {
	uint32_t id;
	uint64_t seqnum;	/* its module event's, 0 none: not logged once covered */
	struct hbm_state_record rec;
};

/* A device's table as its source reads it, between DEVICE_SEEN and TABLE_READ. */
struct table_read {
	bool active;
	bool failed;			/* saved from a dump of its own (error): */
	int error;			/* its file not read, or out of memory */
	int sync;			/* enum hbm_sync */
	struct device dev;
	struct hbm_state stored;	/* its state file */
	struct hbm_extents table;	/* the PAGES read so far */
};

struct hbm_store {
	struct daemon *d;
	struct hbmd_core *core;
	/* the incidents and the drain state, retried with the rest */
	void (*save_again)(struct daemon *d);
	struct device_save saves[HBMGUARD_MAX_DEVICES];	/* by id */
	struct store_owed *owed;	/* by identity, none paid */
	size_t nr_owed;
	sd_event_source *post;		/* the saves after each turn of the loop */
	sd_event_source *retry;		/* the next try of the saves that failed */
	unsigned int retry_s;		/* its delay, doubled at each failure */
	time_t last_save;
	uint64_t stored_extents[HBMGUARD_MAX_DEVICES];	/* by id */
	uint64_t stored_pages[HBMGUARD_MAX_DEVICES];
	struct table_read reading;
	struct turn_heard turn[STORE_TURN_HEARD];
	size_t nr_turn;
	struct compaction compacting;
	uint64_t compact_min;		/* bytes of log below which none is compacted */
	uint64_t compact_timeout_us;	/* a child that has not ended by then is killed */
#define HBM_COMPACT_TIMEOUT_MAX_US	(3600 * 1000000ULL)	/* doubled per kill up to this */
	/* what the child runs: hbm_state_compact(); a test's may stall */
	int (*compact)(int dirfd, const char *identity, int fd, uint64_t upto,
		       struct hbm_state_count *count);
	struct store_counters counters;
};

int store_start(struct hbm_store *s, struct daemon *d, struct hbmd_core *core,
		void (*save_again)(struct daemon *d));
int store_watch(struct hbm_store *s);
void store_stop(struct hbm_store *s);
void store_fact(void *s, const struct hbm_fact *f);
int store_apply(struct hbm_store *s, uint16_t type, const struct hbm_ctl_extent *x);
void store_save_failed(struct daemon *d);
unsigned int store_unsaved(const struct hbm_store *s, int *first_error);
void store_describe_unsaved(const struct hbm_store *s, char *buf, size_t len);
void store_report(const struct hbm_store *s);

#endif /* HBM_STORE_H */
