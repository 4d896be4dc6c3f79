// SPDX-License-Identifier: GPL-2.0
/*
 * The store, a sink of hbmguardd's core: the state files, the memory of
 * what was bad before a reboot or a module reload.
 *
 * The kernel is the authority on what is bad now; the state files are the
 * memory of what was bad before.  So the store only ever adds: when a
 * device is seen (at start, or announced by the module after a reload or a
 * GPU re-enumeration) its stored pages go back into the kernel (with
 * their times and error counts, where the module takes packed records),
 * its table is read, and the union of what it read and what it had stored
 * is written as a new snapshot (state.h: the file, its log).  What the
 * read holds of the pages just restored, as restored (facts HBM_FACT_KNOWN
 * in the state they were restored in; hbm_state_cover()), the file has
 * already: a read of nothing else leaves a file that is a snapshot alone
 * as it is, its log going on after it (file_is_union()), so a start with
 * 10^6 stored pages writes nothing and holds no table beside the stored
 * one.  Nothing is dropped on the daemon's word: kill -9 at any moment
 * leaves the last file whole, and the next start restores it.
 *
 * Changes heard after that cost what they are, not what the table is: the
 * pages a turn of the loop heard of are appended to the device's file as
 * log records, one write and one fdatasync per device and turn (on_post()),
 * what the event said (offset, length, state, source: all a restore needs;
 * first_seen is when it was heard, errors 0 until the next snapshot takes
 * the kernel's).  One operation whose pages end differently (some
 * RETIRED, some FAILED) makes an event per outcome, each naming the whole
 * range (device_changed(), kmod/device.c): such an event, whose COUNT is
 * not every page of its range, would say too much of the pages it did not
 * change (a PENDING record over RETIRED pages downgrades them at a
 * replay), so it is not logged: the table is read for a snapshot.
 * Events the last snapshot's dump already held (a restore's, the trailing
 * event of a change the control socket saved) are not logged again: the
 * module numbers an event after its change, so those numbered up to its
 * seqnum when the dump began are in it, which holds too for a turn's
 * changes heard before a snapshot the same turn made (each keeps its
 * seqnum).  A log that would pass HBM_STATE_LOG_MAX() of its snapshot, a
 * turn that heard more than STORE_TURN_HEARD changes, a save that failed,
 * and the control socket's RETIRE and CLEAR (an operator's: a clear is the
 * one way pages leave a file, and its reply must say the directory took
 * it) make a snapshot instead, from a dump.
 * Saves that fail are retried, a second later, then twice as long each
 * time up to a minute, and stay "unsaved" in the status until on disk.
 *
 * A log longer than its snapshot (and than compact_min, 1 MiB) is
 * compacted into a new one by a child process (fork()): it reads the file
 * up to its length at the fork, replays the log, writes the snapshot to a
 * temporary file and fsyncs it, O(n) in time and memory, none of it the
 * daemon's: the loop goes on taking events and appending them, and the
 * daemon's resident memory stays what it is without a table in it (a
 * thread would hold the table in the daemon's own memory for as long; a
 * loop in slices would stall it for a sort of the log).  The loop then
 * hears the child's end on a pidfd (never waiting for it) and its answer
 * on a pipe, and finishes on its own turn (on_compacted(),
 * hbm_state_compact_finish()): it reads the records appended since the
 * fork back from the file, writes them after the new snapshot and
 * fdatasyncs it (neither when none was appended), renames it over the
 * file, and fsyncs the directory (the appends that follow go to the new
 * file: the rename must be durable before they are acknowledged): O(those
 * records), and two syncs, as a snapshot's atomic write, but without its
 * dump.  The child's answer counts what the file holds, exactly: the
 * status's counts, which an append raises by its records even where the
 * file had their pages (log_turn()), are right again.  A snapshot made
 * meanwhile abandons it.  A child that fails leaves the file as it was;
 * one not done within compact_timeout_us (5 minutes) is killed, and a
 * later turn tries again with twice the time (up to an hour): a file that
 * takes longer than the deadline on a slow disk is compacted in the end,
 * not forked again and killed for ever.  The child closes every descriptor
 * but its three (a fork without exec keeps the daemon's sockets open,
 * O_CLOEXEC or not) and dies with the daemon (PR_SET_PDEATHSIG).  Temporary files
 * of compactions a crash cut short are removed at start.
 *
 * It takes facts through store_fact() and asks the core (core.h) for the
 * devices and their tables; it must not block beyond, per device and turn,
 * one dump and one fsync'd write (a snapshot) or one fdatasync'd append,
 * and a compaction's finish; it allocates per save or table read (never
 * per page event), keeps no table between saves (an open file per device),
 * and calls nothing above it: the status and the other files' retry (the
 * incidents) through daemon.c and the hook main() gave.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "core.h"
#include "daemon.h"
#include "state.h"
#include "store.h"

static int cmp_offset(const void *a, const void *b)
{
	const struct hbm_state_record *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

/*
 * Part [@at, @end) of stored record @r onto @out, joined to a part of @r
 * before it there (not one of @out's first @from, which are not parts).
 */
static bool lack(struct hbm_extents *out, size_t from, const struct hbm_state_record *r,
		 uint64_t at, uint64_t end)
{
	struct hbm_state_record part = *r;
	struct hbm_state_record *last = out->nr > from ? &out->r[out->nr - 1] : NULL;

	if (at >= end)
		return true;
	if (last && last->offset >= r->offset && last->offset + last->length == at) {
		last->length = end - last->offset;
		return true;
	}
	part.offset = at;
	part.length = end - at;
	return hbm_extents_push(out, &part);
}

/*
 * The parts of stored record @r that none of the first @kernel of the
 * kernel's extents @k holds, each as @r with its range, onto @out after its
 * first @from (@out may be @k: the parts go after its extents).  With
 * @lesser_lacks, a part @k holds pending where @r has it out of service is
 * not held either.  Both are sorted: *@j walks the kernel's along the
 * stored records' walk.  The kernel's extents are what the read saves
 * (what the kernel holds as the file had it is not among them), so a
 * record the module split -- part as stored, part failed for want of a
 * spare, or retired by a UE on a pending page -- keeps the part as stored.
 */
static bool keep_uncovered(struct hbm_extents *out, size_t from, const struct hbm_extents *k,
			   size_t kernel, size_t *j, const struct hbm_state_record *r,
			   bool lesser_lacks)
{
	uint64_t at = r->offset, end = r->offset + r->length;
	size_t x;

	while (*j < kernel && k->r[*j].offset + k->r[*j].length <= at)
		(*j)++;
	for (x = *j; x < kernel && k->r[x].offset < end && at < end; x++) {
		uint64_t held = k->r[x].offset > at ? k->r[x].offset : at;
		uint64_t to = k->r[x].offset + k->r[x].length;

		if (to > end)
			to = end;
		if (!lack(out, from, r, at, held))
			return false;
		if (lesser_lacks && k->r[x].state == HBMGUARD_STATE_PENDING &&
		    r->state != HBMGUARD_STATE_PENDING && !lack(out, from, r, held, to))
			return false;
		at = to;
	}
	return lack(out, from, r, at, end);
}

/*
 * The union of the kernel's extents and the stored ones, as records that do
 * not overlap: where the kernel holds a stored extent's pages (in whole or
 * in part) they are the kernel's business now; what it lacks of one (a
 * restore refused, say, or the part it read back as stored) stays.
 */
static void merge(struct hbm_extents *k, const struct hbm_state *stored)
{
	size_t kernel = k->nr, i, j = 0, n;

	for (i = 0; i < stored->nr; i++)
		if (!keep_uncovered(k, kernel, k, kernel, &j, &stored->records[i], false))
			return;
	if (!k->nr)
		return;		/* nothing, not even an array to sort */
	qsort(k->r, k->nr, sizeof(*k->r), cmp_offset);
	for (i = 1, n = 1; i < k->nr; i++)	/* drop any overlap left */
		if (k->r[i].offset >= k->r[n - 1].offset + k->r[n - 1].length)
			k->r[n++] = k->r[i];
	k->nr = n;
}

/*
 * A compaction of device @id must not rename its file over one written
 * since (a snapshot, or none: the file moved aside), even when writing
 * that one failed after its rename.
 */
static void abandon_compaction(struct hbm_store *s, uint32_t id)
{
	if (s->compacting.pid && s->compacting.id == id)
		s->compacting.abandoned = true;
}

static void log_reopen(struct hbm_store *s, const struct device *dev, const struct hbm_state *st);

/*
 * A damaged file @s was read from (what of it can be trusted; none: an
 * empty snapshot) kept aside, then replaced by that: a file is under its
 * name at every instant, the damaged one until the new one is renamed
 * over it, so a crash between the two finds it damaged again (and keeps
 * it aside again), never without a file to restore.  A replacement that
 * fails leaves the damaged file for the save that follows, or the next.
 */
static void set_aside(struct hbm_store *store, const struct device *dev, struct hbm_state *s)
{
	struct hbm_state fresh = *s;
	char moved[300];
	int aside = hbm_state_quarantine(store->d->state_dir, dev->identity, moved, sizeof(moved));
	int err;

	/*
	 * Neither a second name nor a rename: the directory refuses what a
	 * replacement needs too, or the replacement goes ahead without the
	 * copy (the device's pages matter more than a copy of a damaged file).
	 */
	if (aside < 0)
		fprintf(stderr, "<3>hbmguardd: state of %s cannot be kept aside: %s\n",
			dev->identity, strerror(-aside));
	else if (aside == HBM_QUARANTINE_MOVED)
		fprintf(stderr, "<3>hbmguardd: moved to %s (no second name could be made)\n", moved);
	else
		fprintf(stderr, "<3>hbmguardd: kept as %s\n", moved);
	/* its log is that file's: the next change goes to the new one */
	if (dev->id < HBMGUARD_MAX_DEVICES) {
		abandon_compaction(store, dev->id);
		hbm_state_log_close(&store->saves[dev->id].log);
	}
	snprintf(fresh.identity, sizeof(fresh.identity), "%s", dev->identity);
	fresh.page_size = dev->page_size;
	fresh.serial = s->serial + 1;
	err = dev->page_size ? hbm_state_write(store->d->state_dir, &fresh) : -EINVAL;
	if (err) {
		fprintf(stderr, "<3>hbmguardd: replacing the damaged state of %s: %s%s\n",
			dev->identity, strerror(-err),
			aside == HBM_QUARANTINE_MOVED ? " (it has no file until a save succeeds)" : "");
		s->file_bytes = 0;	/* damaged, or gone: never a file to append to */
		return;
	}
	fprintf(stderr, "<5>hbmguardd: the damaged state of %s replaced by what of it checks out (%zu records)%s\n",
		dev->identity, fresh.nr, aside < 0 ? ", not kept" : "");
	s->serial = fresh.serial;	/* the next snapshot's is past it */
	log_reopen(store, dev, &fresh);
}

/*
 * Take [offset, offset + length) out of the stored records: pages an
 * operator cleared must not come back at the next boot.  A record that
 * straddles an end keeps its part outside.
 */
static int forget_range(struct hbm_state *s, uint64_t offset, uint64_t length)
{
	struct hbm_state_record *r = calloc(2 * s->nr + 1, sizeof(*r));
	uint64_t end = offset + length;
	size_t i, n = 0;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < s->nr; i++) {
		struct hbm_state_record x = s->records[i];
		uint64_t x_end = x.offset + x.length;

		if (x_end <= offset || x.offset >= end) {
			r[n++] = x;
			continue;
		}
		if (x.offset < offset) {
			r[n] = x;
			r[n++].length = offset - x.offset;
		}
		if (x_end > end) {
			r[n] = x;
			r[n].offset = end;
			r[n++].length = x_end - end;
		}
	}
	free(s->records);
	s->records = r;
	s->nr = n;
	return 0;
}

/* What the store owes device @identity (store_owed), NULL nothing. */
static struct store_owed *owed(struct hbm_store *s, const char *identity)
{
	size_t i;

	for (i = 0; i < s->nr_owed; i++)
		if (!strcmp(s->owed[i].identity, identity))
			return &s->owed[i];
	return NULL;
}

/* ... to owe it something; NULL out of memory. */
static struct store_owed *owe(struct hbm_store *s, const char *identity)
{
	struct store_owed *o = owed(s, identity);

	if (o)
		return o;
	o = reallocarray(s->owed, s->nr_owed + 1, sizeof(*o));
	if (!o)
		return NULL;
	s->owed = o;
	o = &s->owed[s->nr_owed++];
	*o = (struct store_owed){ 0 };
	snprintf(o->identity, sizeof(o->identity), "%s", identity);
	return o;
}

/* @o, once nothing more is owed, no longer kept. */
static void paid(struct hbm_store *s, struct store_owed *o)
{
	if (!o || o->restore || o->nr_cleared)
		return;
	free(o->cleared);
	*o = s->owed[--s->nr_owed];
}

/* Device @identity's pages are in the kernel as its file has them: no restore owed. */
static void restore_paid(struct hbm_store *s, const char *identity)
{
	struct store_owed *o = owed(s, identity);

	if (o) {
		o->restore = false;
		paid(s, o);
	}
}

/* A restore owed to device @identity: paid by the save that reads its file (save()). */
static void owe_restore(struct hbm_store *s, const char *identity)
{
	struct store_owed *o = owe(s, identity);

	if (o)
		o->restore = true;
	else
		fprintf(stderr, "<3>hbmguardd: no memory to remember that %s is owed its "
			"stored pages: they go back at its next read\n", identity);
}

/*
 * What was read of a device's file @s, less what an operator cleared that no
 * write of the file left out yet (a clear whose save failed: retried): the
 * file's next write must not bring those pages back, nor a restore put them
 * into the kernel again.  Forgetting them makes @s something to write, not
 * a file to append to.
 */
static int forget_cleared(struct hbm_store *store, const struct device *dev,
			  struct hbm_state *s)
{
	const struct store_owed *o = owed(store, dev->identity);
	size_t i;

	if (!o)
		return 0;
	for (i = 0; i < o->nr_cleared; i++)
		if (forget_range(s, o->cleared[i].offset, o->cleared[i].length)) {
			hbm_state_free(s);
			memset(s, 0, sizeof(*s));
			return -ENOMEM;
		}
	if (o->nr_cleared)
		s->file_bytes = 0;	/* not the file as it is: appendable no more */
	return 0;
}

static int load_stored(struct hbm_store *store, const struct device *dev,
		       struct hbm_state *s)
{
	struct hbm_state_damage damage = { 0 };
	uint64_t pages = dev->page_size ? dev->size / dev->page_size : 0;
	int err = hbm_state_read(store->d->state_dir, dev->identity, pages, s, &damage);

	if (err == -ENOENT) {
		memset(s, 0, sizeof(*s));
		return 0;
	}
	/*
	 * Not read (ENOMEM, EIO, a file past what the reader takes) is not
	 * damaged: the file stays, and what would be saved without its
	 * records is not.  Said once, not at each retry (that error is the
	 * save's then).
	 */
	if (err && err != -EBADMSG) {
		if (dev->id >= HBMGUARD_MAX_DEVICES || err != store->saves[dev->id].error)
			fprintf(stderr, "<3>hbmguardd: reading the state of %s: %s\n",
				dev->identity, hbm_read_strerror(err));
		memset(s, 0, sizeof(*s));
		return err;
	}
	if (err || damage.bad_records || damage.missing_records)
		fprintf(stderr, "<3>hbmguardd: state of %s damaged (%s; %zu bad, %zu missing records): keeping it aside\n",
			dev->identity, damage.header ? damage.header : "records",
			damage.bad_records, damage.missing_records);
	if (damage.log_bad || damage.log_missing || damage.log_duplicates || damage.log_beyond)
		fprintf(stderr, "<3>hbmguardd: change log of %s damaged (%zu bad, %zu missing, %zu repeated, %zu past its bound records; the snapshot and %zu good records kept): keeping it aside\n",
			dev->identity, damage.log_bad, damage.log_missing,
			damage.log_duplicates, damage.log_beyond, s->log_nr);
	if (damage.torn_bytes)
		fprintf(stderr, "<4>hbmguardd: state of %s ends in %zu bytes of a write a crash cut short, never acknowledged: ignored\n",
			dev->identity, damage.torn_bytes);
	if (err)
		memset(s, 0, sizeof(*s));	/* nothing of it to trust */
	if (err || hbm_state_damaged(&damage))
		set_aside(store, dev, s);
	return forget_cleared(store, dev, s);
}

static void count_stored(struct hbm_store *store, const struct device *dev,
			 const struct hbm_state *s)
{
	struct hbm_state_count c = hbm_state_count(s);

	if (dev->id >= HBMGUARD_MAX_DEVICES)
		return;
	store->stored_extents[dev->id] = c.extents;
	store->stored_pages[dev->id] = c.pages;
}

/*
 * The error of file @i's last save (or of its read, where that holds its
 * saves): a device's state file below HBMGUARD_MAX_DEVICES, then the
 * incidents and the drain state; and, where there is one, its name.
 */
static int unsaved_error(const struct hbm_store *s, size_t i, const char **what)
{
	int err = i < HBMGUARD_MAX_DEVICES ? s->saves[i].error :
		  i == HBMGUARD_MAX_DEVICES ? s->d->incidents_error : s->d->drain_error;

	if (err && what)
		*what = i < HBMGUARD_MAX_DEVICES ? core_identity(s->core, i)[0] ?
			core_identity(s->core, i) : "?" :
			i == HBMGUARD_MAX_DEVICES ? "the incidents" : "the drain state";
	return err;
}

#define NR_FILES	(HBMGUARD_MAX_DEVICES + 2)

/**
 * store_unsaved() - how many files are not on disk
 * @s: the store
 * @first_error: where the first one's error goes (0: none), or NULL
 *
 * Return: the state files, the incidents and the drain state whose last
 * save failed, or that could not be read and are not saved over.
 */
unsigned int store_unsaved(const struct hbm_store *s, int *first_error)
{
	unsigned int i, n = 0;
	int err;

	if (first_error)
		*first_error = 0;
	for (i = 0; i < NR_FILES; i++) {
		err = unsaved_error(s, i, NULL);
		if (err && first_error && !n)
			*first_error = err;
		n += err != 0;
	}
	return n;
}

/**
 * store_describe_unsaved() - the files not on disk, for STATUS=
 * @s: the store
 * @buf: filled in: "" when every one is
 * @len: its size
 */
void store_describe_unsaved(const struct hbm_store *s, char *buf, size_t len)
{
	const char *what;
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < NR_FILES && n < len; i++) {
		int err = unsaved_error(s, i, &what);

		if (err)
			n += snprintf(buf + n, len - n, "%s %s (%s)",
				      n ? "," : "; NOT SAVED, retrying:", what,
				      hbm_read_strerror(err));
	}
}

static int on_retry(sd_event_source *src, uint64_t usec, void *arg);

/*
 * A file did not reach the disk: try again a second later, then twice as
 * long each time up to a minute, with no event needed: the device's data
 * stays marked not durable until then.
 */
static void arm_retry(struct hbm_store *s)
{
	/* armed, or main() arms it once the store is started and its loop exists */
	if (s->retry || !s->d || !s->d->loop)
		return;
	s->retry_s = hbm_retry_after_s(s->retry_s);
	if (sd_event_add_time_relative(s->d->loop, &s->retry, CLOCK_MONOTONIC,
				       (uint64_t)s->retry_s * 1000000, 0, on_retry, s) < 0)
		fprintf(stderr, "<3>hbmguardd: cannot arm the retry of the saves\n");
}

/**
 * store_save_failed() - a file did not reach the disk: try again
 * @d: the daemon
 *
 * What main() wires daemon_save_failed() to, for recovery.c's incidents.
 */
void store_save_failed(struct daemon *d)
{
	arm_retry(d->store);
}

/* A device's save went to disk, or did not: remembered until the next. */
static void save_done(struct hbm_store *s, const struct device *dev, int err)
{
	struct device_save *sv;

	s->last_save = time(NULL);
	if (err)
		s->counters.failures++;
	else
		s->counters.last_good = s->last_save;
	if (dev->id >= HBMGUARD_MAX_DEVICES)
		return;
	sv = &s->saves[dev->id];
	if (err && err != sv->error)
		fprintf(stderr, "<3>hbmguardd: saving the state of %s: %s: retrying\n",
			dev->identity, hbm_read_strerror(err));
	else if (!err && sv->error)
		fprintf(stderr, "<5>hbmguardd: the state of %s is saved\n", dev->identity);
	sv->dirty = err != 0;
	sv->error = err;
	if (err)
		arm_retry(s);
}

static void compaction_kill(struct hbm_store *s);

/*
 * A snapshot was written: its file is the one to append to now; one being
 * compacted is no longer (the snapshot holds all of it).  A file that
 * cannot be opened leaves the next change to make a snapshot again.
 */
static void log_reopen(struct hbm_store *s, const struct device *dev, const struct hbm_state *st)
{
	struct device_save *sv;
	int err;

	s->counters.snapshots++;
	s->counters.bytes += hbm_state_encode_size(st);
	if (dev->id >= HBMGUARD_MAX_DEVICES)
		return;
	sv = &s->saves[dev->id];
	abandon_compaction(s, dev->id);
	hbm_state_log_close(&sv->log);
	sv->no_compact = false;
	snprintf(sv->identity, sizeof(sv->identity), "%s", dev->identity);
	err = hbm_state_log_open(s->d->state_dir, st, &sv->log);
	if (err)
		fprintf(stderr, "<4>hbmguardd: state of %s: cannot open it to log changes (%s): each will rewrite it\n",
			dev->identity, strerror(-err));
}

/*
 * Whether this turn's change @t of device @id is for its file: not one a
 * snapshot made since it was heard holds (a table read, an operator's
 * retire or clear in the same turn), which logged after that snapshot
 * would bring back what a clear took out of it.
 */
static bool turn_logs(const struct hbm_store *s, const struct turn_heard *t, uint32_t id)
{
	return t->id == id && t->rec.state &&
	       !(t->seqnum && t->seqnum <= s->saves[id].covered);
}

/* Whether @n more records fit in a device's log (else: a snapshot). */
static bool log_room(const struct device_save *sv, size_t n)
{
	uint64_t logged = (sv->log.length - sv->log.snapshot) / HBM_STATE_RECORD_SIZE;
	uint64_t snapshot = (sv->log.snapshot - HBM_STATE_HEADER_SIZE) / HBM_STATE_RECORD_SIZE;

	return sv->log.open && logged + n <= HBM_STATE_LOG_MAX(snapshot);
}

/* This turn's changes of device @id (to log) */
static size_t turn_count(const struct hbm_store *s, uint32_t id)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_turn; i++)
		n += turn_logs(s, &s->turn[i], id);
	return n;
}

/*
 * This turn's changes of device @id, onto its log: one write, one
 * fdatasync.  A failure closes the log: the file is replaced (a snapshot)
 * before anything is appended again.
 */
static int log_turn(struct hbm_store *s, uint32_t id)
{
	struct device_save *sv = &s->saves[id];
	struct hbm_state_record *r = malloc(s->nr_turn * sizeof(*r) + 1);
	uint64_t pages = 0;
	size_t i, n = 0;
	int err;

	if (!r)
		return -ENOMEM;
	for (i = 0; i < s->nr_turn; i++)
		if (turn_logs(s, &s->turn[i], id)) {
			r[n++] = s->turn[i].rec;
			pages += sv->page_size ? s->turn[i].rec.length / sv->page_size : 0;
		}
	err = n ? hbm_state_append(&sv->log, r, n) : 0;
	free(r);
	if (!n)
		return 0;
	if (err) {
		hbm_state_log_close(&sv->log);
		return err;
	}
	s->counters.logged += n;
	s->counters.appends++;
	s->counters.bytes += n * HBM_STATE_RECORD_SIZE;
	/*
	 * An extent logged again (PENDING, then RETIRED), or one its snapshot
	 * held, counts again until the next snapshot or compaction counts the
	 * file: an event does not say which of its pages the file had, and
	 * knowing would take the file's table in memory.
	 */
	s->stored_extents[id] += n;
	s->stored_pages[id] += pages;
	return 0;
}

/*
 * The parts of the stored extents that the kernel's table @k (sorted, as a
 * dump or a read gives it) lacks, or holds pending where the file has them
 * out of service (a GPU's driver, say, has them pending again in a new
 * table: a restore bypasses them), each as its record with its range,
 * onto @out: what a restore sends, so that a page the kernel holds keeps
 * its history there (a RESTORE applies a record over pages the table has
 * as a RETIRE: its last_seen now, its error count the request's).  A part
 * held is not all.
 *
 * Return: false without memory for them.
 */
static bool lacking(const struct hbm_extents *k, const struct hbm_state *stored,
		    struct hbm_extents *out)
{
	size_t i, j = 0;

	for (i = 0; i < stored->nr; i++)
		if (!keep_uncovered(out, 0, k, k->nr, &j, &stored->records[i], true))
			return false;
	return true;
}

/*
 * What device @dev's table @k lacks of its file @stored back into the
 * kernel, @why said in the journal at priority @prio where there is any;
 * the whole file where there is no memory to tell the parts (as at a
 * start).
 */
static void restore_lacking(struct hbm_store *s, const struct device *dev,
			    const struct hbm_extents *k, const struct hbm_state *stored,
			    int prio, const char *why)
{
	struct hbm_extents parts = { 0 };
	struct hbm_state part = *stored;

	if (lacking(k, stored, &parts)) {
		part.records = parts.r;
		part.nr = parts.nr;
	}
	if (part.nr) {
		fprintf(stderr, "<%d>hbmguardd: %s: %zu stored extents back into the kernel\n",
			prio, why, part.nr);
		core_restore(s->core, dev, &part);
	}
	free(parts.r);
}

/*
 * Write the union of @k (the kernel's table, sorted; merged into) and
 * @stored (read by load_stored(): less the ranges cleared since the file's
 * last write) as the device's state file, when there is anything to write
 * or such a range to leave out.
 */
static int write_union(struct hbm_store *s, const struct device *dev, struct hbm_extents *k,
		       const struct hbm_state *stored)
{
	struct store_owed *o = owed(s, dev->identity);
	struct hbm_state out = { .page_size = dev->page_size };
	int err = 0;

	merge(k, stored);
	snprintf(out.identity, sizeof(out.identity), "%s", dev->identity);
	out.serial = stored->serial + 1;
	out.records = k->r;
	out.nr = k->nr;
	if (k->nr || stored->nr || (o && o->nr_cleared)) {
		abandon_compaction(s, dev->id);
		err = hbm_state_write(s->d->state_dir, &out);
		if (!err)
			log_reopen(s, dev, &out);
	}
	if (!err && o) {
		o->nr_cleared = 0;	/* left out of the file now */
		paid(s, o);
	}
	if (!err)
		count_stored(s, dev, &out);
	save_done(s, dev, err);
	return err;
}

/*
 * The events a snapshot holds: those up to @seqnum.  Never fewer than the
 * last one held, within one module instance (forget_device() starts over
 * when it goes): an event the file holds must not be logged after it.
 */
static void raise_covered(struct hbm_store *s, uint32_t id, uint64_t seqnum)
{
	if (seqnum > s->saves[id].covered)
		s->saves[id].covered = seqnum;
}

/*
 * Its pages back where the kernel's table @k lacks them, if a restore is
 * owed to device @dev: its file is read now (@stored), and was not when
 * its table was.
 */
static void restore_owed(struct hbm_store *s, const struct device *dev,
			 const struct hbm_extents *k, const struct hbm_state *stored)
{
	struct store_owed *o = owed(s, dev->identity);

	char why[HBM_STATE_IDENTITY_LEN + 32];

	if (!o || !o->restore)
		return;
	snprintf(why, sizeof(why), "the state of %s is read", dev->identity);
	restore_lacking(s, dev, k, stored, 5, why);
	restore_paid(s, dev->identity);
}

/*
 * Make the stored state of a device the union with the kernel's table, less
 * the ranges cleared since its last write, its pages first back into the
 * kernel where a restore is owed.
 */
static int save(struct hbm_store *s, const struct device *dev)
{
	struct hbm_state stored;
	struct hbm_extents k = { 0 };
	int err;

	err = load_stored(s, dev, &stored);
	if (err) {
		save_done(s, dev, err);
		return err;
	}
	err = core_dump(s->core, dev, &k);
	if (err) {
		save_done(s, dev, err);
	} else {
		restore_owed(s, dev, &k, &stored);
		err = write_union(s, dev, &k, &stored);
	}
	if (!err && dev->id < HBMGUARD_MAX_DEVICES)
		raise_covered(s, dev->id, k.seqnum);
	free(k.r);
	hbm_state_free(&stored);
	return err;
}

/*
 * A device seen: its stored pages back into the kernel (when the daemon
 * starts, or the table is new), then its table as its source reads it,
 * PAGES by PAGES, saved as one at its TABLE_READ.
 */
static void read_begin(struct hbm_store *s, const struct hbm_fact *f)
{
	struct table_read *r = &s->reading;

	/*
	 * Its kind as the module's: a GPU or not is what the kernel link's
	 * DEVICE_SEEN tells (HBM_DEVICE_GPU for HBMGUARD_KIND_GPU, from the
	 * device list it just read), and all a restore needs: a GPU's pages
	 * keep their source DRIVER (hbm_state_restore_record()); 0 another.
	 */
	*r = (struct table_read){ .active = true, .sync = f->sync,
				  .dev = { .id = f->dev.id, .page_size = f->dev.page_size,
					   .size = f->dev.size,
					   .kind = f->dev.kind == HBM_DEVICE_GPU ?
						   HBMGUARD_KIND_GPU : 0 } };
	s->saves[f->dev.id].page_size = f->dev.page_size;
	snprintf(r->dev.identity, sizeof(r->dev.identity), "%s", f->dev.identity);
	r->error = load_stored(s, &r->dev, &r->stored);
	if (r->error) {
		/* not saved without it: retried, save(), which restores it then */
		r->failed = true;
		owe_restore(s, r->dev.identity);
	} else if (f->sync == HBM_SYNC_START || f->sync == HBM_SYNC_ADDED) {
		core_restore(s->core, &r->dev, &r->stored);
		restore_paid(s, r->dev.identity);
	}
}

static void read_page(struct hbm_store *s, const struct hbm_fact *f)
{
	struct table_read *r = &s->reading;
	struct hbm_state_record rec = {
		.offset = f->offset, .length = f->length,
		.first_seen = f->first_seen, .last_seen = f->last_seen,
		.state = f->state, .source = f->source, .errors = f->count,
	};

	/* restored from its file just before as they are: the file has them (merge()) */
	if ((f->flags & HBM_FACT_KNOWN) && f->restored == f->state)
		return;
	if (r->active && r->dev.id == f->dev.id && !r->failed &&
	    !hbm_extents_push(&r->table, &rec)) {
		r->failed = true;
		r->error = -ENOMEM;
	}
}

/*
 * A table read that holds nothing but what was restored from the file
 * (every page of it known): the file is the union already.  Where it is a
 * snapshot alone its log goes on after it, no snapshot written: a start
 * with 10^6 stored pages writes nothing.  False: a snapshot is to be made.
 */
static bool file_is_union(struct hbm_store *s, const struct device *dev,
			  const struct hbm_state *stored)
{
	struct device_save *sv = &s->saves[dev->id];
	int err;

	if (!stored->nr || !hbm_state_appendable(stored))
		return false;
	if (!sv->log.open || sv->log.serial != stored->serial) {
		abandon_compaction(s, dev->id);
		hbm_state_log_close(&sv->log);
		sv->no_compact = false;
		snprintf(sv->identity, sizeof(sv->identity), "%s", dev->identity);
		err = hbm_state_log_open(s->d->state_dir, stored, &sv->log);
		if (err)
			return false;	/* a snapshot opens it anew */
	}
	count_stored(s, dev, stored);
	save_done(s, dev, 0);
	return true;
}

/*
 * The table read whole: saved with what was stored.  A table the kernel
 * lacks stored pages of, after a resync, came back unheard: they go back
 * in first.  One not read whole is a save that failed: retried (save())
 * from a dump of its own, unsaved in the status until then.
 */
static void read_end(struct hbm_store *s, const struct hbm_fact *f)
{
	struct table_read *r = &s->reading;

	if (!r->active || r->dev.id != f->dev.id)
		return;
	if (r->failed || (f->flags & HBM_FACT_INCOMPLETE)) {
		/*
		 * Not saved: said in the status, tried again from a dump of
		 * its own.  A resync's device may have come back unheard,
		 * lacking stored pages: that save restores them (save()).
		 */
		if (r->sync == HBM_SYNC_RESYNC)
			owe_restore(s, r->dev.identity);
		save_done(s, &r->dev, r->failed ? r->error : f->error < 0 ? f->error : -EIO);
	} else {
		if (r->sync == HBM_SYNC_RESYNC) {
			char why[HBM_STATE_IDENTITY_LEN + 48];

			snprintf(why, sizeof(why), "%s lacks stored pages: it came back unheard",
				 r->dev.identity);
			restore_lacking(s, &r->dev, &r->table, &r->stored, 4, why);
		}
		restore_paid(s, r->dev.identity);	/* it has them all now */
		if ((!r->table.nr && r->dev.id < HBMGUARD_MAX_DEVICES &&
		     file_is_union(s, &r->dev, &r->stored)) ||
		    !write_union(s, &r->dev, &r->table, &r->stored))
			raise_covered(s, r->dev.id, f->seqnum);
	}
	free(r->table.r);
	hbm_state_free(&r->stored);
	*r = (struct table_read){ 0 };
}

/* A change heard: logged after this turn (on_post()), or saved from a dump. */
/*
 * An event made before the dump of the last snapshot began, so in it: a
 * restore's, or that of a change the control socket just saved.
 */
static bool in_snapshot(const struct hbm_store *s, const struct hbm_fact *f)
{
	return f->origin == HBM_FROM_KERNEL && f->seqnum &&
	       f->seqnum <= s->saves[f->dev.id].covered;
}

static void heard(struct hbm_store *s, const struct hbm_fact *f)
{
	struct device_save *sv = &s->saves[f->dev.id];
	uint64_t now = (uint64_t)time(NULL);

	if (in_snapshot(s, f))
		return;

	sv->dirty = true;
	/*
	 * A record says every page of its range is in its state: an event
	 * whose pages are not all of it (a retire over pages some already
	 * retired, a PENDING over RETIRED ones) would say too much, and
	 * downgrade them at a replay: the table says, read for a snapshot.
	 */
	if (s->nr_turn == STORE_TURN_HEARD || !sv->page_size ||
	    (uint64_t)f->count * sv->page_size != f->length) {
		sv->turn_overflowed = true;
		return;
	}
	s->turn[s->nr_turn++] = (struct turn_heard){
		.id = f->dev.id,
		.seqnum = f->origin == HBM_FROM_KERNEL ? f->seqnum : 0,
		.rec = { .offset = f->offset, .length = f->length,
			 .first_seen = now, .last_seen = now,
			 .state = hbm_event_page_state(f->event), .source = f->source },
	};
}

/*
 * A device removed with changes heard and not saved (a RETIRED then its
 * REMOVED read in one turn): what this turn heard of it goes into its file
 * over what was stored, without a dump.  What an earlier save that failed
 * left unsaved is lost with it, as what did not fit in the turn's list.
 */
static void save_gone(struct hbm_store *s, uint32_t id, const char *identity)
{
	struct device dev = { .id = id, .page_size = s->saves[id].page_size };
	struct hbm_extents none = { 0 };
	struct hbm_state stored;
	bool lost = s->saves[id].error || s->saves[id].turn_overflowed;
	size_t i, n = 0;

	snprintf(dev.identity, sizeof(dev.identity), "%s", identity);
	n = turn_count(s, id);
	if (n && log_room(&s->saves[id], n) && !lost) {
		lost = log_turn(s, id) != 0;	/* its file needs no device: appended to */
	} else if (n && !dev.page_size) {
		lost = true;	/* never seen whole: no page size to write with */
	} else if (n && !lost) {
		struct hbm_state_record *heard = calloc(n, sizeof(*heard)), *r;
		size_t m = 0, nr;

		if (load_stored(s, &dev, &stored)) {
			free(heard);
			heard = NULL;	/* lost: said below */
		}
		for (i = 0; heard && i < s->nr_turn; i++)
			if (turn_logs(s, &s->turn[i], id))
				heard[m++] = s->turn[i].rec;
		/* over what was stored, as a replay of its log would put them */
		if (!heard || hbm_state_replay(stored.records, stored.nr, heard, m, &r, &nr)) {
			lost = true;
		} else {
			free(stored.records);
			stored.records = r;
			stored.nr = nr;
			lost = write_union(s, &dev, &none, &stored) != 0;
		}
		free(heard);
		free(none.r);
		hbm_state_free(&stored);
	}
	if (lost)
		fprintf(stderr, "<3>hbmguardd: %s is gone before its state could be saved\n",
			identity);
}

/* A device is gone: so is what the daemon kept of it, once saved. */
static void forget_device(struct hbm_store *s, uint32_t id, const char *identity)
{
	size_t i, n;

	if (s->saves[id].dirty)
		save_gone(s, id, identity);
	/*
	 * Its changes of this turn go with it, saved or not: a save that made
	 * it clean (a resync's read) leaves them, covered by a seqnum of a
	 * module that may be gone too; its id may be another's next.
	 */
	for (i = 0, n = 0; i < s->nr_turn; i++)
		if (s->turn[i].id != id)
			s->turn[n++] = s->turn[i];
	s->nr_turn = n;
	if (s->compacting.pid && s->compacting.id == id)
		s->compacting.abandoned = true;
	hbm_state_log_close(&s->saves[id].log);
	s->saves[id] = (struct device_save){ 0 };	/* what is owed it stays: by identity */
	s->stored_extents[id] = s->stored_pages[id] = 0;
}

/* The devices whose tables changed; those whose last save failed too (@failed). */
static void save_dirty(struct hbm_store *s, bool failed)
{
	struct device_list *l;
	size_t i;

	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		if (s->saves[i].dirty && (failed || !s->saves[i].error))
			break;
	if (i == HBMGUARD_MAX_DEVICES)
		return;
	l = calloc(1, sizeof(*l));
	if (!l || core_devices(s->core, l)) {
		free(l);
		return;	/* dirty stays: the next turn tries again */
	}
	for (i = 0; i < l->nr; i++) {
		const struct device_save *sv = l->dev[i].id < HBMGUARD_MAX_DEVICES ?
					      &s->saves[l->dev[i].id] : NULL;

		if (sv && sv->dirty && (failed || !sv->error))
			save(s, &l->dev[i]);
	}
	free(l);
	daemon_notify_status(s->d);
}

/*
 * After each turn of the loop: save the devices whose tables changed.  A
 * burst of retirements read in one turn costs one dump and one write per
 * device, not one per event.  Those whose save failed wait for on_retry().
 */
static int on_compacted(sd_event_source *src, int fd, uint32_t revents, void *arg);

/*
 * Close every descriptor from 3 up but those of @keep (sorted).  Return:
 * 0, or -1 when one could not be (close_range(): Linux 5.9, and a seccomp
 * filter may refuse it).
 */
static int close_except(const int *keep, size_t n)
{
	unsigned int from = 3;
	size_t i;

	for (i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned int)keep[i] > from && close_range(from, keep[i] - 1, 0))
			return -1;
		from = keep[i] + 1;
	}
	return close_range(from, ~0U, 0);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * The child: with the daemon's descriptors (its netlink socket, its
 * control socket and clients, sd-event's epoll, signalfd and timers)
 * closed but the three it needs, so that it holds no socket open past the
 * daemon's own exit, and killed with its parent: never a compaction of
 * an old file left running beside a new daemon.  A fork without exec
 * keeps what O_CLOEXEC would have closed.
 *
 * The daemon has threads (NVML's), and a fork copies only the thread that
 * called it: a lock another one held stays held in the child.  The child
 * takes none but malloc()'s (malloc, free, and qsort, which may allocate):
 * glibc takes every arena's lock across fork() and makes them anew in the
 * child (__malloc_fork_lock_parent(), __malloc_fork_unlock_child():
 * malloc/malloc-internal.h, called from posix/fork.c, glibc 2.36).  No
 * stdio, no NVML; the CRC's table is made before any fork (the file the
 * child reads was written with it).  A child that hangs all the same is
 * killed at its deadline.  posix_spawn() of a helper would not need any of
 * this, but would need a binary of its own and its path.
 */
static void __attribute__((noreturn)) compact_child(const struct hbm_store *s, int dirfd,
						    const char *identity, int fd,
						    uint64_t upto, int out, pid_t parent)
{
	struct compaction_answer a = { 0 };
	int keep[] = { dirfd, fd, out };

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	qsort(keep, 3, sizeof(keep[0]), cmp_int);
	if (close_except(keep, 3))
		_exit(1);	/* not with the daemon's sockets held: no compaction */
	a.err = s->compact(dirfd, identity, fd, upto, &a.count);
	/* one write, shorter than PIPE_BUF: whole or not at all */
	_exit(write(out, &a, sizeof(a)) == sizeof(a) ? 0 : 1);
}

static int on_compaction_late(sd_event_source *src, uint64_t usec, void *arg);

/*
 * A log longer than its snapshot and than compact_min: a new snapshot, by
 * a child (see the top of this file), one device at a time.  Its end is
 * heard on a pidfd, readable once it has exited: the loop never waits for
 * it.
 */
static void maybe_compact(struct hbm_store *s)
{
	struct compaction *c = &s->compacting;
	struct device_save *sv;
	pid_t parent = getpid();
	int p[2];
	uint32_t id;

	if (c->pid || !s->d->loop)
		return;
	for (id = 0; id < HBMGUARD_MAX_DEVICES; id++) {
		sv = &s->saves[id];
		if (sv->log.open && !sv->no_compact && !sv->error &&
		    sv->log.length - sv->log.snapshot >
		    (sv->log.snapshot > s->compact_min ? sv->log.snapshot : s->compact_min))
			break;
	}
	/* non-blocking: a write end some other fork took along never holds
	 * the loop up in on_compacted()'s read */
	if (id == HBMGUARD_MAX_DEVICES || pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return;
	*c = (struct compaction){ .id = id, .upto = sv->log.length, .fd = p[0], .pidfd = -1,
				  .at_fork = { s->stored_extents[id], s->stored_pages[id] } };
	snprintf(c->identity, sizeof(c->identity), "%s", sv->identity);
	c->pid = fork();
	if (!c->pid)
		compact_child(s, s->d->state_dir, c->identity, sv->log.fd, c->upto, p[1], parent);
	close(p[1]);
	if (c->pid > 0)
		c->pidfd = syscall(SYS_pidfd_open, c->pid, 0);
	if (c->pidfd >= 0 && sd_event_add_io(s->d->loop, &c->src, c->pidfd, EPOLLIN,
					     on_compacted, s) >= 0 &&
	    sd_event_add_time_relative(s->d->loop, &c->deadline, CLOCK_MONOTONIC,
				       s->compact_timeout_us, 0, on_compaction_late, s) >= 0)
		return;
	fprintf(stderr, "<4>hbmguardd: cannot compact the state of %s: %s\n", c->identity,
		c->pid < 0 || c->pidfd < 0 ? strerror(errno) : "no event source");
	sv->no_compact = true;
	compaction_kill(s);
}

/*
 * The compaction under way ended: its child reaped (it has exited: never
 * a wait), its descriptors closed, its temporary file removed.  False
 * while it runs.
 */
static bool compaction_end(struct hbm_store *s)
{
	struct compaction *c = &s->compacting;
	char tmp[300];

	if (c->pid > 0) {
		pid_t reaped = waitpid(c->pid, NULL, WNOHANG);

		/* ECHILD: reaped already (SIGCHLD ignored): nothing to wait for */
		if (!reaped || (reaped < 0 && errno != ECHILD))
			return false;
	}
	c->src = sd_event_source_disable_unref(c->src);
	c->deadline = sd_event_source_disable_unref(c->deadline);
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->fd);
	if (!hbm_state_compact_name(c->identity, tmp, sizeof(tmp)))
		unlinkat(s->d->state_dir, tmp, 0);	/* none once it is in place */
	*c = (struct compaction){ .pidfd = -1 };
	return true;
}

/*
 * The compaction under way, ended: its child killed, reaped when it has
 * gone (on_compacted(), or the next turn's on_post() without a pidfd).
 */
static void compaction_kill(struct hbm_store *s)
{
	struct compaction *c = &s->compacting;

	if (!c->pid)
		return;
	if (c->pid < 0) {	/* no child: its pipe */
		compaction_end(s);
		return;
	}
	/* through its pidfd where there is one: its pid may be another's once
	 * it has gone and been reaped for us (SIGCHLD ignored) */
	if (!c->killed && (c->pidfd < 0 ||
			   syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0) < 0))
		kill(c->pid, SIGKILL);
	c->killed = true;
	compaction_end(s);
}

/*
 * A child that has not ended by its deadline (a disk that hangs, a file in
 * its way that blocks) would stop compaction for good, one at a time:
 * killed, reaped once gone (on_compacted()), and the next turn may start
 * another, with twice the time.
 */
static int on_compaction_late(sd_event_source *src, uint64_t usec, void *arg)
{
	struct hbm_store *s = arg;
	uint64_t was = s->compact_timeout_us;

	(void)src;
	(void)usec;
	s->compact_timeout_us = was < HBM_COMPACT_TIMEOUT_MAX_US / 2 ? 2 * was :
				HBM_COMPACT_TIMEOUT_MAX_US;
	fprintf(stderr, "<4>hbmguardd: compacting the state of %s: not done after %" PRIu64
		" s: killed, to be tried again with %" PRIu64 " s\n", s->compacting.identity,
		was / 1000000, s->compact_timeout_us / 1000000);
	s->compacting.deadline = sd_event_source_disable_unref(s->compacting.deadline);
	compaction_kill(s);
	return 0;
}

/* The child has exited: its snapshot in place, with what was appended since. */
static int on_compacted(sd_event_source *src, int fd, uint32_t revents, void *arg)
{
	struct hbm_store *s = arg;
	struct compaction *c = &s->compacting;
	struct device_save *sv = &s->saves[c->id];
	uint64_t before = sv->log.length, serial = sv->log.serial;
	struct compaction_answer a;
	int err;

	(void)src;
	(void)fd;
	(void)revents;
	/* its answer is in the pipe, or never will be: no wait */
	if (c->killed || read(c->fd, &a, sizeof(a)) != sizeof(a))
		a.err = -ECHILD;	/* it died without a word */
	err = a.err;
	if (!err && !c->abandoned && sv->log.open) {
		err = hbm_state_compact_finish(s->d->state_dir, c->identity, &sv->log, c->upto);
		if (!err) {
			/* counted exactly at the fork, with what was logged since */
			s->stored_extents[c->id] += a.count.extents - c->at_fork.extents;
			s->stored_pages[c->id] += a.count.pages - c->at_fork.pages;
			s->counters.compactions++;
			s->counters.bytes += sv->log.length;
			fprintf(stderr, "<6>hbmguardd: state of %s compacted: %" PRIu64 " bytes, now %" PRIu64 "\n",
				c->identity, before, sv->log.length);
		} else if (sv->log.serial != serial) {
			/* renamed, not durably: a snapshot of its own, retried */
			struct device dev = { .id = c->id };

			snprintf(dev.identity, sizeof(dev.identity), "%s", c->identity);
			save_done(s, &dev, err);
		}
	}
	if (err && !c->abandoned && !c->killed) {
		fprintf(stderr, "<4>hbmguardd: compacting the state of %s: %s: the file stays as it is\n",
			c->identity, strerror(-err));
		sv->no_compact = true;
	}
	if (!compaction_end(s))
		c->src = sd_event_source_disable_unref(c->src);	/* on_post() reaps it */
	return 0;
}

/*
 * This turn's changes onto the logs of the devices that have one open; the
 * others (no log yet, a turn that overflowed, a save that failed) from a
 * dump, as snapshots.
 */
static void log_dirty(struct hbm_store *s)
{
	uint32_t id;

	for (id = 0; id < HBMGUARD_MAX_DEVICES; id++) {
		struct device_save *sv = &s->saves[id];
		struct device dev = { .id = id };

		if (!sv->dirty || sv->error || sv->turn_overflowed ||
		    !log_room(sv, turn_count(s, id)))
			continue;
		snprintf(dev.identity, sizeof(dev.identity), "%s", sv->identity);
		save_done(s, &dev, log_turn(s, id));
	}
}

static int on_post(sd_event_source *src, void *arg)
{
	struct hbm_store *s = arg;
	size_t i;

	(void)src;
	log_dirty(s);
	save_dirty(s, false);
	if (s->compacting.pid && !s->compacting.src)
		compaction_end(s);	/* one killed without a pidfd, once gone */
	maybe_compact(s);
	s->nr_turn = 0;
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		s->saves[i].turn_overflowed = false;
	return 0;
}

static int on_retry(sd_event_source *src, uint64_t usec, void *arg)
{
	struct hbm_store *s = arg;

	(void)usec;
	sd_event_source_unref(src);
	s->retry = NULL;
	save_dirty(s, true);
	if (s->save_again)
		s->save_again(s->d);
	if (!store_unsaved(s, NULL))
		s->retry_s = 0;
	else
		arm_retry(s);	/* when no save could even be tried */
	daemon_notify_status(s->d);
	return 0;
}

/*
 * A range @x to clear, kept until a write of the device's file leaves it
 * out.  Return: 1 kept, 0 kept already (the same clear asked again while
 * saves fail), -ENOMEM.
 */
static int clear_pending(struct hbm_store *s, const struct hbm_ctl_extent *x)
{
	struct store_owed *o = owe(s, x->identity);
	struct hbm_state_record *r;
	size_t i;

	for (i = 0; o && i < o->nr_cleared; i++)
		if (o->cleared[i].offset == x->offset && o->cleared[i].length == x->length)
			return 0;
	r = o ? reallocarray(o->cleared, o->nr_cleared + 1, sizeof(*r)) : NULL;
	if (!r) {
		paid(s, o);
		return -ENOMEM;
	}
	r[o->nr_cleared++] = (struct hbm_state_record){ .offset = x->offset,
							.length = x->length };
	o->cleared = r;
	return 1;
}

/* ... not to be kept: the kernel refused the clear clear_pending() kept. */
static void clear_not_pending(struct hbm_store *s, const struct hbm_ctl_extent *x)
{
	struct store_owed *o = owed(s, x->identity);

	o->nr_cleared--;
	paid(s, o);
}

/**
 * store_apply() - retire or clear pages for the control socket
 * @s: the store
 * @type: HBM_CTL_RETIRE or HBM_CTL_CLEAR
 * @x: the device, by identity, and the extent (checked by hbm_ctl_decode())
 *
 * The kernel first, then the state file, fsync'd before this returns: a
 * reply sent after it is an acknowledgement that survives a power cut.
 * Cleared pages leave the state file too, so they do not come back at boot:
 * a clear whose save fails is kept until a save succeeds (retried), so that
 * no write of the file brings back what the kernel no longer has.
 *
 * Return: 0; -EINPROGRESS when the kernel made the change but its save
 * failed (retried: the status says why); or the kernel's negative errno,
 * nothing done.
 */
int store_apply(struct hbm_store *s, uint16_t type, const struct hbm_ctl_extent *x)
{
	struct device dev;
	bool clear = type == HBM_CTL_CLEAR;
	int err = core_device(s->core, x->identity, &dev), kept = 0;

	if (!err && dev.id >= HBMGUARD_MAX_DEVICES)
		err = -ENODEV;
	if (!err && clear) {
		kept = clear_pending(s, x);	/* before: no change without it */
		err = kept < 0 ? kept : 0;
	}
	if (!err) {
		err = core_change(s->core, &dev, type, x);
		if (err && kept > 0)
			clear_not_pending(s, x);	/* nothing cleared */
	}
	if (!err && save(s, &dev))
		err = -EINPROGRESS;	/* said by save_done(), and retried */
	daemon_notify_status(s->d);
	return err;
}

/**
 * store_fact() - the store as a sink of the core
 * @arg: the store
 * @f: the fact
 *
 * A device seen is restored, and saved from the table read that follows;
 * one gone is forgotten; a heard change of its table makes it dirty, saved
 * once the burst is read (on_post()).  Facts about a device the module
 * does not number have no table here.
 */
void store_fact(void *arg, const struct hbm_fact *f)
{
	struct hbm_store *s = arg;

	if (f->dev.id >= HBMGUARD_MAX_DEVICES)
		return;
	switch (f->type) {
	case HBM_FACT_DEVICE_SEEN:
		if (s->reading.active)	/* a read left unfinished: not expected */
			read_end(s, &(struct hbm_fact){ .dev.id = s->reading.dev.id,
							 .flags = HBM_FACT_INCOMPLETE });
		read_begin(s, f);
		break;
	case HBM_FACT_TABLE_READ:
		read_end(s, f);
		break;
	case HBM_FACT_DEVICE_GONE:
		if (s->reading.active && s->reading.dev.id == f->dev.id)
			read_end(s, &(struct hbm_fact){ .dev.id = f->dev.id,
							 .flags = HBM_FACT_INCOMPLETE });
		forget_device(s, f->dev.id, f->dev.identity);
		break;
	case HBM_FACT_PAGES:
		if (f->flags & HBM_FACT_UNHEARD)
			read_page(s, f);
		else if (f->event != HBMGUARD_EVENT_CLEARED)
			heard(s, f);	/* saved once the burst is read */
		break;
	case HBM_FACT_EVENT:
		/*
		 * A RESTORE names no range: the table says which pages, read
		 * for a snapshot, as for a turn's list that overflowed.  This
		 * store's own restore is in the snapshot that follows it; one
		 * of another's, its device gone before the save, is lost, and
		 * said so.
		 */
		if (f->event == HBMGUARD_EVENT_RESTORED && !in_snapshot(s, f)) {
			s->saves[f->dev.id].dirty = true;
			s->saves[f->dev.id].turn_overflowed = true;
		}
		break;
	}
}

/**
 * store_start() - the store, its saves after each turn of the loop
 * @s: the store
 * @d: the daemon, its loop set up
 * @core: the core
 * @save_again: the other files to retry with the state files (the incidents)
 *
 * Return: 0, or a negative errno.
 */
int store_start(struct hbm_store *s, struct daemon *d, struct hbmd_core *core,
		void (*save_again)(struct daemon *d))
{
	int err;

	s->d = d;
	s->core = core;
	s->save_again = save_again;
	s->compact_min = 1 << 20;
	/* 10^6 extents take seconds: minutes are a child that hangs */
	s->compact_timeout_us = 300 * 1000000ULL;
	s->compact = hbm_state_compact;
	err = hbm_state_compact_clean(d->state_dir);
	if (err > 0)
		fprintf(stderr, "<5>hbmguardd: removed %d temporary files of compactions a crash cut short\n",
			err);
	else if (err < 0)
		fprintf(stderr, "<4>hbmguardd: cannot look for the temporary files of compactions: %s\n",
			strerror(-err));
	return 0;
}

/**
 * store_report() - what the store did, to the journal (SIGUSR1, and at exit)
 * @s: the store
 */
void store_report(const struct hbm_store *s)
{
	fprintf(stderr, "<6>hbmguardd: store: %" PRIu64 " changes logged in %" PRIu64
		" appends, %" PRIu64 " snapshots, %" PRIu64 " compactions, %" PRIu64
		" bytes, %" PRIu64 " fsyncs\n",
		s->counters.logged, s->counters.appends, s->counters.snapshots,
		s->counters.compactions, s->counters.bytes, hbm_state_fsyncs);
}

/**
 * store_watch() - save after each turn of the loop
 * @s: the store
 *
 * Return: 0, or a negative errno.
 */
int store_watch(struct hbm_store *s)
{
	return sd_event_add_post(s->d->loop, &s->post, on_post, s);
}

/**
 * store_stop() - no more saves, no more retries
 * @s: the store
 */
void store_stop(struct hbm_store *s)
{
	size_t i;

	compaction_kill(s);	/* reaped by init if not gone yet */
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		hbm_state_log_close(&s->saves[i].log);
	for (i = 0; i < s->nr_owed; i++)
		free(s->owed[i].cleared);
	free(s->owed);
	store_report(s);
	sd_event_source_disable_unref(s->post);
	sd_event_source_unref(s->retry);
	free(s->reading.table.r);
	hbm_state_free(&s->reading.stored);
}
