// SPDX-License-Identifier: GPL-2.0
/*
 * Events: every change the module makes, numbered, to every reader.
 *
 * Each open file of /dev/hbmguard has a ring of its own, so a slow reader
 * loses only its own events and never holds up the module or another reader.
 * Numbering and delivery happen under one mutex, so every reader and every
 * netlink listener sees the events in sequence-number order and a gap always
 * means a loss.  Events are made in process context only (reports from atomic
 * context come through intake.c's worker): netlink allocates and sends with
 * GFP_KERNEL, and the walk over the readers may reschedule.  Each ring has
 * its own spinlock, held for one record at a time.
 *
 * A reader is woken from a work item of its own, not where the event is
 * made: that is under hbm_events_mutex and, for most events, the device's
 * lock, and waking walks the reader's wait queue, which its opener makes
 * as long as it likes (one file added to epoll through many dup()s and
 * epoll instances: an entry each, bounded only by max_user_watches).  Woken
 * there, one reader's 10^5 entries held every event, the device's errors
 * and every other reader behind them for tens of milliseconds each (a 6.12
 * guest).  Its wake-ups now hold a worker, no lock of ours (on 6.12 with
 * interrupts off for the walk, __wake_up_common_lock(): so does waking
 * any file's queue its opener made as long, a pipe's).
 *
 * A ring is memory an opener makes the kernel hold, so it is charged to the
 * opener's memory cgroup, and each user without CAP_SYS_ADMIN holds at most
 * HBMGUARD_MAX_OPENS rings (ENFILE beyond).  The limit is per user, as
 * inotify's instances are (fs/notify/inotify/inotify_user.c, 6.1 and
 * 6.12): a limit all the node's group shared would let one member lock
 * every other one, another job's Guard included, out of the device.  And
 * like theirs (inc_ucount(), kernel/ucount.c, 6.1 and 6.12) it counts the processes of a
 * user namespace a user made to that user (opens_owner()).  Counted by euid
 * alone, a member mapping its subordinate uids into a namespace of its own
 * (newuidmap, /etc/subuid: 65536 of them) held as many times the rings, and
 * each event, made under the device's lock, walked them all (helper-187).
 * A namespace root made (a container runtime's, one per container) counts
 * as the user its uid 0 maps to, whatever uids it maps: not as root, which
 * would make every such container one tenant with the initial namespace's
 * uid 0, nor by uid, which its root could setuid() through.  One whose uid
 * 0 maps to root or nowhere (what uid 0 without CAP_SYS_ADMIN can make)
 * counts as root (helper-189: counted apart, each such namespace held 1024
 * more).
 *
 * A full ring drops the new event and counts it.  The count is delivered as
 * an OVERFLOW record at the place of the loss: read() makes it when the
 * reader has caught up, or the next event that finds two free slots puts it
 * in first.  Either way it comes before any event newer than the loss.
 */
#include <linux/cred.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/user_namespace.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "hbm.h"

struct hbm_reader {
	struct list_head node;		/* on hbm_readers, under hbm_events_mutex */
	spinlock_t lock;		/* head, tail, lost, lost_seqnum */
	bool counted;			/* one of its user's hbm_opens */
	kuid_t owner;			/* whom it is counted to: opens_owner() */
	wait_queue_head_t wait;
	struct work_struct wake;	/* wakes @wait, away from the events' locks */
	struct mutex read_lock;		/* one read() at a time moves head */
	struct hbmguard_event *ring;
	u32 head;			/* next to read; free-running */
	u32 tail;			/* next to write; free-running */
	u32 lost;			/* events dropped since the last OVERFLOW */
	u64 lost_seqnum;		/* the last of them */
};

static LIST_HEAD(hbm_readers);
static DEFINE_MUTEX(hbm_events_mutex);
static u64 hbm_seqnum;			/* under hbm_events_mutex */
/* Rings of each non-admin user: opens_owner() -> xa_mk_value(count); under the mutex. */
static DEFINE_XARRAY(hbm_opens);

/* The last event made, delivered to every reader and listener already. */
u64 hbm_event_seqnum(void)
{
	u64 seq;

	mutex_lock(&hbm_events_mutex);
	seq = hbm_seqnum;
	mutex_unlock(&hbm_events_mutex);
	return seq;
}

/**
 * hbm_events_quiesce() - return once no event is being delivered
 *
 * Every event is delivered under hbm_events_mutex, its netlink send too: a
 * sender that decided to send before the caller's change has sent when
 * this returns.
 */
void hbm_events_quiesce(void)
{
	mutex_lock(&hbm_events_mutex);
	mutex_unlock(&hbm_events_mutex);
}

/* The OVERFLOW record for what @r lost; its lock held. */
static struct hbmguard_event overflow_record(struct hbm_reader *r)
{
	struct hbmguard_event o = {
		.type = HBMGUARD_EVENT_OVERFLOW,
		.seqnum = r->lost_seqnum,
		.timestamp = ktime_get_real_ns(),
		.count = r->lost,
	};

	r->lost = 0;
	return o;
}

static void reader_push(struct hbm_reader *r, const struct hbmguard_event *ev)
{
	u32 room;

	spin_lock(&r->lock);
	room = hbm_event_ring - (r->tail - r->head);
	if (r->lost && room >= 2) {
		r->ring[r->tail++ % hbm_event_ring] = overflow_record(r);
		room--;
	}
	if (r->lost || !room) {
		r->lost++;
		r->lost_seqnum = ev->seqnum;
		spin_unlock(&r->lock);
		return;
	}
	r->ring[r->tail++ % hbm_event_ring] = *ev;
	spin_unlock(&r->lock);
	/*
	 * A wake-up already queued sees this record too (queue_work()).  None
	 * for a ring nobody waits on: a waiter joins the queue before it looks
	 * at the ring under r->lock, so the lock we just released orders our
	 * look at the queue after its joining, or it saw the record.
	 */
	if (wq_has_sleeper(&r->wait))
		queue_work(system_unbound_wq, &r->wake);
}

static void reader_wake(struct work_struct *work)
{
	struct hbm_reader *r = container_of(work, struct hbm_reader, wake);

	wake_up_interruptible(&r->wait);
}

/**
 * hbm_event() - make an event and give it to every reader
 * @type: enum hbmguard_event_type
 * @device: device id
 * @offset: first byte concerned
 * @length: bytes concerned
 * @source: enum hbmguard_source
 * @state: as struct hbmguard_event documents for @type
 * @count: as struct hbmguard_event documents for @type
 * @aux: as struct hbmguard_event documents for @type
 *
 * Process context only: netlink sends from here, with GFP_KERNEL.  Netlink
 * listeners get the events in the same order, under the same mutex.
 *
 * Return: the event's seqnum.
 */
u64 hbm_event(u32 type, u32 device, u64 offset, u64 length, u32 source,
	      u32 state, u32 count, u32 aux)
{
	struct hbmguard_event ev = {
		.type = type, .device = device, .offset = offset,
		.length = length, .source = source, .state = state,
		.count = count, .aux = aux,
		.timestamp = ktime_get_real_ns(),
	};
	struct hbm_reader *r;

	might_sleep();
	mutex_lock(&hbm_events_mutex);
	ev.seqnum = ++hbm_seqnum;
	list_for_each_entry(r, &hbm_readers, node) {
		reader_push(r, &ev);
		cond_resched();
	}
	hbm_netlink_event(&ev);
	mutex_unlock(&hbm_events_mutex);
	return ev.seqnum;
}

/*
 * Whom a ring of the current process counts to: its euid; in a user
 * namespace, the user who made the outermost one below the initial
 * namespace (whom inc_ucount() counts its instances to there), or where
 * root made it, the user its uid 0 maps to, root where none.
 */
static kuid_t opens_owner(void)
{
	struct user_namespace *ns = current_user_ns();
	kuid_t root;

	if (ns == &init_user_ns)
		return current_euid();
	while (ns->parent != &init_user_ns)
		ns = ns->parent;
	if (!uid_eq(ns->owner, GLOBAL_ROOT_UID))
		return ns->owner;
	root = make_kuid(ns, 0);
	return uid_valid(root) ? root : GLOBAL_ROOT_UID;
}

/* Count a ring to @r's user; events mutex held. */
static int opens_charge(struct hbm_reader *r)
{
	unsigned long n = xa_to_value(xa_load(&hbm_opens, __kuid_val(r->owner)));

	if (n >= HBMGUARD_MAX_OPENS)
		return -ENFILE;
	return xa_err(xa_store(&hbm_opens, __kuid_val(r->owner), xa_mk_value(n + 1),
			       GFP_KERNEL));
}

/* Give the ring back; events mutex held.  Replacing an entry never allocates. */
static void opens_uncharge(struct hbm_reader *r)
{
	unsigned long n = xa_to_value(xa_load(&hbm_opens, __kuid_val(r->owner)));

	if (n > 1)
		xa_store(&hbm_opens, __kuid_val(r->owner), xa_mk_value(n - 1), GFP_KERNEL);
	else
		xa_erase(&hbm_opens, __kuid_val(r->owner));
}

/**
 * hbm_reader_open() - a ring of events for an open file
 * @admin: the opener has CAP_SYS_ADMIN: not counted against the limit
 *
 * Return: the reader, ERR_PTR(-ENFILE) when the opener, not an admin, holds
 * HBMGUARD_MAX_OPENS rings, or ERR_PTR(-ENOMEM) (also when the opener's
 * memory cgroup is at its limit).
 */
struct hbm_reader *hbm_reader_open(bool admin)
{
	struct hbm_reader *r = hbm_kalloc_user(sizeof(*r));
	int err;

	if (!r)
		return ERR_PTR(-ENOMEM);
	r->ring = hbm_kalloc_user(hbm_event_ring * sizeof(*r->ring));
	if (!r->ring) {
		hbm_kfree(r);
		return ERR_PTR(-ENOMEM);
	}
	spin_lock_init(&r->lock);
	init_waitqueue_head(&r->wait);
	INIT_WORK(&r->wake, reader_wake);
	mutex_init(&r->read_lock);
	r->owner = opens_owner();
	mutex_lock(&hbm_events_mutex);
	err = admin ? 0 : opens_charge(r);
	if (err) {
		mutex_unlock(&hbm_events_mutex);
		mutex_destroy(&r->read_lock);
		hbm_kfree(r->ring);
		hbm_kfree(r);
		return ERR_PTR(err);
	}
	r->counted = !admin;
	list_add_tail(&r->node, &hbm_readers);
	mutex_unlock(&hbm_events_mutex);
	return r;
}

void hbm_reader_close(struct hbm_reader *r)
{
	mutex_lock(&hbm_events_mutex);
	list_del(&r->node);
	if (r->counted)
		opens_uncharge(r);
	mutex_unlock(&hbm_events_mutex);
	cancel_work_sync(&r->wake);	/* off the list: none is queued after */
	mutex_destroy(&r->read_lock);
	hbm_kfree(r->ring);
	hbm_kfree(r);
}

static bool reader_empty(struct hbm_reader *r)
{
	bool empty;

	spin_lock(&r->lock);
	empty = r->head == r->tail && !r->lost;
	spin_unlock(&r->lock);
	return empty;
}

/*
 * Records into @buf, one at a time: copy_to_user() may fault, never under
 * the lock.  Caught up with a loss owed, its OVERFLOW goes into the empty
 * ring, at the place of the loss: a copy that faults leaves it there,
 * before whatever comes after.  Read lock held.  Return: the bytes copied,
 * 0 for an empty ring, or -EFAULT when not even the first could be.
 */
static ssize_t reader_copy(struct hbm_reader *r, char __user *buf, size_t len)
{
	struct hbmguard_event ev;
	size_t done = 0;

	while (len - done >= sizeof(ev)) {
		spin_lock(&r->lock);
		if (r->head == r->tail && r->lost)
			r->ring[r->tail++ % hbm_event_ring] = overflow_record(r);
		if (r->head == r->tail) {
			spin_unlock(&r->lock);
			break;
		}
		ev = r->ring[r->head % hbm_event_ring];
		spin_unlock(&r->lock);

		if (copy_to_user(buf + done, &ev, sizeof(ev)))
			return done ?: -EFAULT;
		spin_lock(&r->lock);
		r->head++;
		spin_unlock(&r->lock);
		done += sizeof(ev);
	}
	return done;
}

/*
 * One read() at a time moves head, but none waits for events holding the
 * read lock: a non-blocking read beside a blocking one of the same open
 * file (the file's flag, or another file description of it) would sleep
 * until the other's event came.  It may wait behind another's copy, as a
 * pipe's reader does; EAGAIN means an empty ring.
 */
ssize_t hbm_reader_read(struct hbm_reader *r, char __user *buf, size_t len,
			bool nonblock)
{
	ssize_t done;
	int err;

	if (len < sizeof(struct hbmguard_event))
		return -EINVAL;
	for (;;) {
		if (!nonblock) {
			err = wait_event_interruptible(r->wait, !reader_empty(r));
			if (err)
				return err;
		}
		if (mutex_lock_interruptible(&r->read_lock))
			return -ERESTARTSYS;
		done = reader_copy(r, buf, len);
		mutex_unlock(&r->read_lock);
		if (done)
			return done;
		if (nonblock)
			return -EAGAIN;
		/* another read took them first: wait again */
	}
}

__poll_t hbm_reader_poll(struct hbm_reader *r, struct file *file,
			 struct poll_table_struct *pt)
{
	poll_wait(file, &r->wait, pt);
	return reader_empty(r) ? 0 : EPOLLIN | EPOLLRDNORM;
}
