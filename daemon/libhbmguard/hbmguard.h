/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libhbmguard: what training frameworks and allocators use of hbmguard.
 *
 * The translation table: look up which bytes serve a device offset, with no
 * syscall, from the table the module publishes in shared memory.
 *
 *	int fd = hbmguard_open();
 *	struct hbmguard_table *t;
 *	hbmguard_table_open(fd, device, &t);
 *	hbmguard_translate(t, offset, &served, &state);
 *	hbmguard_range_is_clean(t, offset, length);
 *	... poll(fd) says when the table changed ...
 *	hbmguard_table_close(t);
 *
 * Functions return 0 or a negative errno.  A table may be read from any
 * number of threads at once; it never blocks the kernel, and a reader that
 * meets a concurrent update retries on its own.
 */
#ifndef LIBHBMGUARD_H
#define LIBHBMGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/hbmguard.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hbmguard_table;

/* open("/dev/hbmguard") read-only, close-on-exec, or /dev/hbmguard-aperture
 * where only its group lets the caller in: an fd, or -errno. */
int hbmguard_open(void);

/*
 * Map device @device's table; *@out until hbmguard_table_close().  -EPROTO
 * for a layout this library does not read (another HBMGUARD_MAP_VERSION),
 * -EOPNOTSUPP for a device created without one (hbmguard's map=0).
 */
int hbmguard_table_open(int fd, uint32_t device, struct hbmguard_table **out);
void hbmguard_table_close(struct hbmguard_table *t);

/*
 * Where @offset (below the device's usable size) is served from: *@served is
 * in the spare area for a RETIRED page, @offset itself otherwise; *@state is
 * enum hbmguard_page_state (PENDING and FAILED pages are not to be used).
 * -ERANGE outside the device; -EOVERFLOW when the table outgrew its mapping
 * or the kernel could not keep it (use HBMGUARD_IOC_TRANSLATE).
 */
int hbmguard_translate(struct hbmguard_table *t, uint64_t offset,
		       uint64_t *served, uint32_t *state);

/* 1 when no page of [offset, offset + length) is in the table, 0 when one
 * is, or -errno as hbmguard_translate(). */
int hbmguard_range_is_clean(struct hbmguard_table *t, uint64_t offset,
			    uint64_t length);

/* The device generation the table shows, and whether the device is gone. */
uint64_t hbmguard_table_generation(struct hbmguard_table *t);
bool hbmguard_table_removed(struct hbmguard_table *t);

/*
 * Training ranks: register with hbmguardd, then watch a pollable fd for
 * recovery requests and answer them.
 *
 *	struct hbmguard_rank_info info = { .job = "run-42", .device = identity,
 *					   .rank = 2, .world_size = 4 };
 *	struct hbmguard_rank *r;
 *	hbmguard_rank_register(NULL, &info, &r);
 *	... poll(hbmguard_rank_fd(r)) with the training loop ...
 *	struct hbmguard_recovery req;
 *	if (hbmguard_rank_next(r, &req) == 0)	// at a step boundary
 *		switch (req.action) {
 *		case HBMGUARD_RECOVERY_PAUSE:	// stop; answer PAUSED
 *		case HBMGUARD_RECOVERY_RESTORE:	// req.failed_rank's state is
 *						// lost: it loads it from a
 *						// peer, the peers send; answer
 *						// RESTORED
 *		case HBMGUARD_RECOVERY_RESUME:	// carry on
 *		case HBMGUARD_RECOVERY_ABORT:	// exit: the launcher restarts
 *		}
 *	hbmguard_rank_answer(r, req.incident, HBMGUARD_ANSWER_PAUSED);
 *
 * The daemon knows the rank by its process (the socket's credentials): a
 * rank registered twice, or claimed by two processes, is refused.  Closing
 * (or exiting) is leaving; leaving during a recovery escalates it.  Register
 * from the process that is the rank: children forked later (data loader
 * workers) inherit the connection but not the rank, which ends with the
 * registering process, and the daemon refuses requests they send on it.
 * A job is its user's: another user's job of the same name is another job.
 *
 * And its key's, where the environment has one: HBMGUARD_JOB_KEY, a random
 * secret the launcher gives every rank of the job on every node (32 to 63
 * printable ASCII characters but space: say 32 hex digits from
 * /dev/urandom; set but empty, none).  A rank without the key, or with
 * another, is of another job: it cannot join the job, take one of its
 * ranks first, answer for it or hear its requests, on this node or (with
 * the daemon's [Cluster]) on another.  Without a key, a job is its uid's
 * and its name's only, and every container running as uid 0 is that one
 * uid: set a key wherever a node runs more than one tenant's jobs.  The
 * daemon's connection limits stay per uid, keys or not (hbmguardd(8)).
 */
#define HBMGUARD_RANK_SOCKET	"/run/hbmguard/control.sock"
#define HBMGUARD_RANK_MAX_RANGES	8

struct hbmguard_rank_info {
	char job[64];			/* the job's id, the same on every node */
	char device[64];		/* identity of the rank's device */
	uint32_t rank, world_size, local_rank;
	uint32_t nr_ranges;		/* 0: the rank uses all of the device */
	struct { uint64_t offset, length; } ranges[HBMGUARD_RANK_MAX_RANGES];
};

enum hbmguard_recovery_action {
	HBMGUARD_RECOVERY_PAUSE = 1,
	HBMGUARD_RECOVERY_RESTORE,
	HBMGUARD_RECOVERY_RESUME,
	HBMGUARD_RECOVERY_ABORT,
};

enum hbmguard_answer {
	HBMGUARD_ANSWER_PAUSED = 1,
	HBMGUARD_ANSWER_RESTORED,
	HBMGUARD_ANSWER_FAILED,
};

struct hbmguard_recovery {
	uint64_t incident;
	uint32_t action;		/* enum hbmguard_recovery_action */
	uint32_t failed_rank;		/* whose state was lost */
	char device[64];
	uint64_t offset, length;	/* what was lost; offset 0, length UINT64_MAX:
					 * the whole device (a GPU's error without an
					 * address, such as an NVIDIA Xid 48, 94, 95) */
};

struct hbmguard_rank;

/*
 * The job's id as its launcher named it, the same on every node: torchrun's
 * TORCHELASTIC_RUN_ID (its --rdzv_id; "none", torchrun's default, names no
 * job), else Slurm's SLURM_JOB_ID, with ".SLURM_STEP_ID" under srun (two
 * steps of one allocation are two jobs).  0, -ENOENT if neither names one,
 * -EINVAL if it is not a name the daemon takes (printable ASCII without
 * spaces, shorter than @size and than 64).
 */
int hbmguard_job_id(char *out, size_t size);

/* Register with the daemon at @socket_path (NULL: the default).
 * info->device is the device's identity (hbmctl devices; a GPU's UUID):
 * one the module does not have is -ENODEV, since no error there would ever
 * be told to the rank; a world size not that of the job's ranks registered
 * already, -EINVAL.  An empty
 * info->job is hbmguard_job_id()'s (-ENOENT, -EINVAL as it says); a
 * HBMGUARD_JOB_KEY the daemon would not take, -EINVAL; one a set-user-ID or
 * file-capability program cannot take from its caller, -EPERM; a key given
 * to a daemon older than keys, -EOPNOTSUPP (nothing registered).  This and
 * hbmguard_rank_answer() wait at most 30 s for the daemon's reply, then give
 * -ETIMEDOUT (with hbmguardd.socket a connection is taken while no daemon
 * runs, to be answered by the next one, if it comes). */
int hbmguard_rank_register(const char *socket_path, const struct hbmguard_rank_info *info,
			   struct hbmguard_rank **out);
/* Readable when a request waits on the socket.  Requests that came while
 * hbmguard_rank_answer() waited for its reply are queued in the library,
 * where the fd does not show them: call hbmguard_rank_next() until -EAGAIN
 * before waiting on the fd. */
int hbmguard_rank_fd(const struct hbmguard_rank *r);
/* The next request: 0, -EAGAIN when none is waiting, -ECONNRESET when the
 * daemon went away. */
int hbmguard_rank_next(struct hbmguard_rank *r, struct hbmguard_recovery *out);
/* Answer a request; the daemon's refusal as -errno. */
int hbmguard_rank_answer(struct hbmguard_rank *r, uint64_t incident, uint32_t answer);
void hbmguard_rank_close(struct hbmguard_rank *r);

/* Seconds each step of a recovery may take: the daemon's [Recovery]. */
struct hbmguard_deadlines {
	uint32_t pause_timeout;		/* PAUSE to every rank's PAUSED */
	uint32_t restore_timeout;	/* RESTORE to every rank's RESTORED */
	uint32_t kill_timeout;		/* an escalation's SIGTERM to its SIGKILL */
	uint32_t longest;		/* an incident in all, from the error to the
					 * ranks' RESUME or ABORT, across nodes
					 * included; 0 from a daemon too old to say,
					 * and from a libhbmguard.so.0 older than this
					 * header (then: pause + restore).  Was
					 * reserved. */
};

/* The deadlines of the daemon at @socket_path (NULL: the default), for a
 * rank to wait on it as long as it will (.longest), asked on a connection
 * of its own: a daemon older than the question answers -EOPNOTSUPP and
 * closes the connection it came on. */
int hbmguard_recovery_deadlines(const char *socket_path, struct hbmguard_deadlines *out);

/*
 * The aperture of a memory-backed device (uapi/linux/hbmguard.h, MMAP): its
 * bytes [offset, offset + length) mapped read-write, for a rank to keep
 * state in device memory.  Opens /dev/hbmguard-aperture for writing (its
 * group, hbmguard-aperture; /dev/hbmguard where the module has no such node).
 *
 *	struct hbmguard_aperture *a;
 *	hbmguard_aperture_open("sim2", 0, 1 << 20, &a);
 *	hbmguard_aperture_guard();		// once per process
 *	float *w = hbmguard_aperture_addr(a);
 *	... train; at each step boundary:
 *	if (hbmguard_aperture_lost(a))		// this step read lost memory
 *		... discard the step; once the daemon says RESTORE:
 *		hbmguard_aperture_restore(a, req.offset, req.length);
 *		... write the state back from a peer, re-run the step
 *
 * Unguarded, a touch of a page lost to an uncorrectable error kills the
 * process with SIGBUS, as real poison does.  Guarded, the touch reads zero
 * and writes go nowhere, so the step goes on to its boundary; the loss is
 * counted per aperture.  The guard is a SIGBUS handler; it absorbs only a
 * touch of a lost page (BUS_MCEERR_AR inside an aperture).  Every other
 * SIGBUS (kill -BUS, raise(), sigqueue(), BUS_MCEERR_AO, a fault elsewhere)
 * goes on as if the guard were not there: to the action installed before
 * it, with that action's mask and flags, or ignored, or killing with a core
 * as the default action does.  The handler is async-signal-safe and leaves
 * errno as it found it.  A handler of the application's own belongs before
 * the guard: one installed after it replaces it, and the guard is off until
 * that one is removed (its old action put back); hbmguard_aperture_guard()
 * then returns -EBUSY, so calling it at each step boundary tells.  A
 * thread that touches a lost page with SIGBUS blocked (or from a handler
 * that blocks it) is killed whatever the guard: the kernel forces a fault's
 * SIGBUS to the default action then (force_sig_info_to_task(), kernel/signal.c).
 */
struct hbmguard_aperture;

/* The device by name or identity, from an fd of /dev/hbmguard: 0 and *@id,
 * or -ENODEV. */
int hbmguard_device_find(int fd, const char *name, uint32_t *id);
/* Map bytes [@offset, @offset + @length) of @device (name or identity), page
 * aligned; -EMFILE past 64 apertures. */
int hbmguard_aperture_open(const char *device, uint64_t offset, uint64_t length,
			   struct hbmguard_aperture **out);
void *hbmguard_aperture_addr(const struct hbmguard_aperture *a);
/* Install the guard (process-wide, idempotent): 0 while it is installed,
 * -EBUSY once a handler installed after it has replaced it. */
int hbmguard_aperture_guard(void);
/* Pages of @a lost and touched since it was mapped or last restored. */
uint64_t hbmguard_aperture_lost(const struct hbmguard_aperture *a);
/* The owner rewrites device bytes [@offset, @offset + @length): the kernel
 * maps their spares, zeroed, and so does this mapping.  -ERANGE outside the
 * aperture. */
int hbmguard_aperture_restore(struct hbmguard_aperture *a, uint64_t offset, uint64_t length);
/* Unmap @a; safe while other threads take SIGBUS: it waits for a handler
 * busy with @a, which never maps over memory reused after the unmap.  Not
 * async-signal-safe: never from a signal handler, which could have
 * interrupted the guard on its own thread and would wait for it forever. */
void hbmguard_aperture_close(struct hbmguard_aperture *a);

#ifdef __cplusplus
}
#endif

#endif /* LIBHBMGUARD_H */
