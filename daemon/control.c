// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd's control socket (the protocol is in ctl.h).
 *
 * The asker is who the kernel says it is: SO_PEERCRED at accept, and the
 * SCM_CREDENTIALS of each packet.  Anyone may read the status; only an
 * administrator (CAP_SYS_ADMIN in the initial user namespace, proved per
 * request as ctl.h says) may retire or clear.  A mutation is answered after
 * store_apply() has it in the kernel and on disk, so that hbmctl's "done"
 * means durable; one in the kernel whose save failed is answered so
 * (-EINPROGRESS), the save retried.  The work is short (one netlink
 * request, one state file written) and done in the loop itself, one
 * request at a time: requests from several operators are serialised for
 * free.
 *
 * A peer that sends a malformed packet is told why and disconnected.  No
 * local user can lock the others out: each tenant (a uid, or the uids
 * /etc/subuid gives a user: subuid.c) holds at most MAX_PER_TENANT
 * connections, all of them together MAX_CLIENTS, and a connection that is
 * not a registered rank is closed LIFETIME_S after it was accepted,
 * whatever it asks (hbmctl and the library ask once and close; asking on,
 * it would hold its slot for ever).  A connection over a limit is held for
 * one request (at most MAX_OVERFLOW such, the oldest dropped first): an
 * administrator's is served and no longer counted, anyone else's is
 * answered -EUSERS and closed.
 *
 * The connecting process is pinned at accept (a pidfd): the one that may
 * register on the connection, and the one recovery may signal (see
 * recovery.c), so that a pid recycled after it exited is never mistaken
 * for it.
 *
 * It asks: the status (status.c), the store (a retire or clear), recovery
 * (ranks and incidents), the GPU registrar (gpus.c: the GPUs), the drain
 * of the node (scheduler.c: its causes, an administrator's undrain), each through
 * its header; none of them calls back into it (a rank is told through
 * client.c).  It must not block: every socket is non-blocking and a reply
 * that does not fit is dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "client.h"
#include "cluster.h"
#include "control.h"
#include "daemon.h"
#include "gpus.h"
#include "passed.h"
#include "recovery.h"
#include "scheduler.h"
#include "status.h"
#include "store.h"

#define MAX_CLIENTS	256
#define MAX_PER_TENANT	32
#define MAX_OVERFLOW	16
#define LIFETIME_S	10
#define SUBUID_FILE	"/etc/subuid"

/* Not in 6.1's headers: include/uapi/asm-generic/socket.h of 6.5 and later. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77
#endif

/*
 * The connecting process as a pidfd: from the socket itself where the
 * kernel can (SO_PEERPIDFD, 6.5), else by its pid, checked to still be
 * that uid's; -1 when it is gone.  By pid, the process pinned may have
 * taken the pid of one that connected, queued its packets and ended before
 * the accept (pids wrap): those packets still say that pid, so they, the
 * bytes queued then (*@before), cannot register the process pinned as a
 * rank, which an escalation kills (helper-188: any process of that uid,
 * for uid 0 the host's services, killed at the next error).  Sent after,
 * they are that process's, or of one that took its pid once it ended,
 * which the pidfd then says.  SIOCINQ on a SOCK_SEQPACKET socket is the
 * sum of its queued packets' lengths, each as recv() with MSG_TRUNC says
 * it (unix_inq_len(), net/unix/af_unix.c, 6.1 and 6.12).
 */
static int pin_peer(int fd, const struct ucred *cred, size_t *before)
{
	socklen_t len = sizeof(int);
	int pidfd, queued;

	*before = 0;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len))
		return pidfd;
	if (errno != ENOPROTOOPT)
		return -1;
	pidfd = syscall(SYS_pidfd_open, cred->pid, 0);
	if (pidfd >= 0 && (!control_owned_by(pidfd, cred->pid, cred->uid) ||
			   ioctl(fd, SIOCINQ, &queued) || queued < 0)) {
		close(pidfd);
		pidfd = -1;
	}
	if (pidfd >= 0)
		*before = queued;
	return pidfd;
}

/* The connections that count against the limits: of one tenant, or all. */
static unsigned int counted(struct daemon *d, const uint64_t *tenant, unsigned int *overflow)
{
	struct client *c;
	unsigned int n = 0;

	*overflow = 0;
	for (c = d->clients; c; c = c->next) {
		*overflow += c->overflow;
		if (!c->overflow && !c->admin && (!tenant || c->tenant == *tenant))
			n++;
	}
	return n;
}

/**
 * control_close_client() - end a connection
 * @c: the connection, a rank or not
 */
void control_close_client(struct client *c)
{
	struct client **p;

	recovery_client_gone(c->d, c);
	for (p = &c->d->clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	sd_event_source_disable_unref(c->source);
	sd_event_source_disable_unref(c->lifetime);
	sd_event_source_disable_unref(c->exited);
	if (c->pidfd >= 0)
		close(c->pidfd);
	hbm_fdsink_give(&c->d->fdsink, c->fd);	/* with what its queue holds */
	free(c);
}

static int on_lifetime_over(sd_event_source *s, uint64_t usec, void *arg)
{
	(void)s;
	(void)usec;
	control_close_client(arg);
	return 0;
}

static int on_exited(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct client *c = arg;

	struct pollfd p = { .fd = c->fd };

	(void)s;
	(void)fd;
	(void)revents;
	if (poll(&p, 1, 0) == 0 && client_may_log(c))	/* not hung up: children hold it */
		fprintf(stderr, "<5>hbmguardd: rank %u of job %s: its process %d ended, "
			"its connection still open in another: dropped\n",
			c->reg.rank, c->reg.job, c->cred.pid);
	control_close_client(c);
	return 0;
}

/*
 * Only the connecting process may register on its connection, and the rank
 * leaves when that process ends, even if children it forked (data loader
 * workers) still hold the connection.  @key: its job's key
 * (RANK_REGISTER_KEYED); NULL: none (RANK_REGISTER).  -ESRCH: that process
 * is gone; -EPERM: another one sent the request.
 */
static int register_rank(struct client *c, const struct ucred *sender, bool before_pin,
			 const struct hbm_ctl_rank *r, const char *key)
{
	int err;

	if (c->pidfd < 0 || syscall(SYS_pidfd_send_signal, c->pidfd, 0, NULL, 0))
		return -ESRCH;
	if (sender->pid != c->cred.pid)
		return -EPERM;
	if (before_pin)		/* pin_peer(): again, after */
		return -EAGAIN;
	err = recovery_register(c->d, c, r, key);
	if (err)
		return err;
	/* a rank's connection lasts as long as its process */
	sd_event_source_disable_unref(c->lifetime);
	c->lifetime = NULL;
	/* A pidfd polls readable once its process has ended. */
	if (sd_event_add_io(c->d->loop, &c->exited, c->pidfd, EPOLLIN, on_exited, c) < 0 &&
	    client_may_log(c))
		fprintf(stderr, "<4>hbmguardd: pid %d: its exit cannot be watched\n",
			c->cred.pid);
	return 0;
}

static const char *const verbs[] = {
	[HBM_CTL_RETIRE] = "retire", [HBM_CTL_CLEAR] = "clear",
};

/* @admin: the request came with the proof of CAP_SYS_ADMIN (ctl.h). */
static int mutate(struct client *c, bool admin, uint16_t type, const struct hbm_ctl_extent *x)
{
	int err;

	if (!admin) {
		if (client_may_log(c))
			fprintf(stderr, "<4>hbmguardd: %s of %s refused: uid %u (pid %d) did not "
				"show CAP_SYS_ADMIN\n", verbs[type], x->identity, c->cred.uid,
				c->cred.pid);
		return -EPERM;
	}
	err = store_apply(c->d->store, type, x);
	if (err == -EINPROGRESS)	/* the save's error said by the store */
		fprintf(stderr, "<4>hbmguardd: %s: 0x%" PRIx64 "+0x%" PRIx64
			" %s for pid %d, NOT saved yet: retrying\n", x->identity, x->offset,
			x->length, type == HBM_CTL_RETIRE ? "retired" : "cleared", c->cred.pid);
	else if (err)
		fprintf(stderr, "<4>hbmguardd: %s of %s 0x%" PRIx64 "+0x%" PRIx64
			" for pid %d failed: %s\n", verbs[type], x->identity,
			x->offset, x->length, c->cred.pid, strerror(-err));
	else
		fprintf(stderr, "<5>hbmguardd: %s: 0x%" PRIx64 "+0x%" PRIx64
			" %s for pid %d, saved\n", x->identity, x->offset, x->length,
			type == HBM_CTL_RETIRE ? "retired" : "cleared", c->cred.pid);
	return err;
}

/* An administrator's only, as a retire or a clear. */
static int undrain(struct client *c, bool admin, struct hbm_ctl_drain *out)
{
	if (!admin) {
		if (client_may_log(c))
			fprintf(stderr, "<4>hbmguardd: undrain refused: uid %u (pid %d) did not "
				"show CAP_SYS_ADMIN\n", c->cred.uid, c->cred.pid);
		return -EPERM;
	}
	fprintf(stderr, "<5>hbmguardd: undrain asked by uid %u (pid %d)\n", c->cred.uid,
		c->cred.pid);
	return sched_undrain(c->d->sched, out);
}

/*
 * One request in, one reply out.  @before_pin: queued before the pin, by
 * a process that may have ended (pin_peer()).  Returns false to drop the
 * peer.
 */
static bool serve(struct client *c, const void *pkt, size_t len, const struct ucred *sender,
		  bool before_pin)
{
	union {
		struct hbm_ctl_rank_info rank;
		struct hbm_ctl_incident incident;
		struct hbm_ctl_gpu gpu;
		struct hbm_ctl_drain drain;
		struct hbm_ctl_deadlines deadlines;
		struct hbm_ctl_recovery_times times;
		struct hbm_ctl_cluster cluster;
		struct hbm_ctl_cluster_node node;
	} info;
	bool admin = hbm_ctl_sender_is_admin(sender);
	struct hbm_ctl_status st;
	struct hbm_ctl_header h;
	const struct hbm_ctl_rank_keyed *keyed;
	const void *body, *reply = NULL;
	uint16_t type;
	int err;

	err = hbm_ctl_decode(pkt, len, false, &h, &body);
	type = h.type & ~HBM_CTL_REPLY;
	if (admin) {	/* served whatever the limits, and no longer counted */
		c->admin = true;
		c->overflow = false;
	}
	if (!err && c->overflow) {
		err = -EUSERS;
	} else if (!err) {
		switch (type) {
		case HBM_CTL_STATUS:
			status_get(c->d, &st);
			reply = &st;
			break;
		case HBM_CTL_RETIRE:
		case HBM_CTL_CLEAR:
			err = mutate(c, admin, type, body);
			reply = body;
			break;
		case HBM_CTL_RANK_REGISTER:
			err = register_rank(c, sender, before_pin, body, NULL);
			reply = body;
			break;
		case HBM_CTL_RANK_REGISTER_KEYED:
			keyed = body;
			err = register_rank(c, sender, before_pin, &keyed->rank, keyed->key);
			reply = &keyed->rank;	/* never the key back */
			break;
		case HBM_CTL_RANK_ANSWER:
			err = sender->pid == c->cred.pid ? recovery_answer(c->d, c, body) : -EPERM;
			reply = body;
			break;
		case HBM_CTL_RANK_GET:
			err = recovery_rank_get(c->d, ((const struct hbm_ctl_index *)body)->index,
						&info.rank);
			reply = &info.rank;
			break;
		case HBM_CTL_INCIDENT_GET:
			err = recovery_incident_get(c->d, ((const struct hbm_ctl_index *)body)->index,
						    &info.incident);
			reply = &info.incident;
			break;
		case HBM_CTL_GPU_GET:
			err = gpus_get(c->d->gpus, ((const struct hbm_ctl_index *)body)->index,
				       &info.gpu);
			reply = &info.gpu;
			break;
		case HBM_CTL_DRAIN_GET:
			err = sched_get(c->d->sched, ((const struct hbm_ctl_index *)body)->index,
					&info.drain);
			reply = &info.drain;
			break;
		case HBM_CTL_UNDRAIN:
			err = undrain(c, admin, &info.drain);
			reply = &info.drain;
			break;
		case HBM_CTL_DEADLINES:
			info.deadlines = (struct hbm_ctl_deadlines){
				.pause_timeout = c->d->cfg.recovery.pause_timeout,
				.restore_timeout = c->d->cfg.recovery.restore_timeout,
				.kill_timeout = c->d->cfg.recovery.kill_timeout,
			};
			reply = &info.deadlines;
			break;
		case HBM_CTL_RECOVERY_TIMES:
			info.times = (struct hbm_ctl_recovery_times){
				.pause_timeout = c->d->cfg.recovery.pause_timeout,
				.restore_timeout = c->d->cfg.recovery.restore_timeout,
				.kill_timeout = c->d->cfg.recovery.kill_timeout,
				.longest = recovery_longest(c->d),
			};
			reply = &info.times;
			break;
		case HBM_CTL_CLUSTER:
			cluster_get(c->d->cluster, &info.cluster);
			reply = &info.cluster;
			break;
		case HBM_CTL_CLUSTER_NODE_GET:
			err = cluster_node_get(c->d->cluster,
					       ((const struct hbm_ctl_index *)body)->index, &info.node);
			if (!err)
				info.node.incident = recovery_cluster_incident(c->d, info.node.job,
									       info.node.id);
			reply = &info.node;
			break;
		}
	} else if (client_may_log(c)) {
		fprintf(stderr, "<4>hbmguardd: control: a bad packet from pid %d: %s\n",
			c->cred.pid, strerror(-err));
	}
	if (!client_send_packet(c, type | HBM_CTL_REPLY, h.seq, err, reply))
		return false;
	return err != -EBADMSG && err != -EPROTONOSUPPORT && err != -EOPNOTSUPP &&
	       err != -EUSERS;
}

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct client *c = arg;
	struct ucred sender;
	bool before_pin;
	ssize_t n;

	(void)s;
	(void)revents;
	n = hbm_ctl_recv(fd, pkt, sizeof(pkt), &sender);
	if (n == -EAGAIN || n == -EINTR)
		goto out;
	before_pin = n >= 0 && c->sent_before_pin;
	if (before_pin)
		c->sent_before_pin -= (size_t)n < c->sent_before_pin ? (size_t)n :
				      c->sent_before_pin;
	if (n == -ETOOMANYREFS && client_may_log(c))
		fprintf(stderr, "<4>hbmguardd: uid %u (pid %d) passed files on the control socket: "
			"disconnected\n", c->cred.uid, c->cred.pid);
	/* An oversized packet is cut short by recv(): never a valid one. */
	if (n <= 0 || !serve(c, pkt, (size_t)n > sizeof(pkt) ? 0 : (size_t)n, &sender,
			     before_pin))
		control_close_client(c);
out:
	/* a job's key, read or peeked at: its digest is what is kept */
	explicit_bzero(pkt, sizeof(pkt));
	return 0;
}

/* /etc/subuid read again if it changed; what it says of itself, once per change. */
static void refresh_tenants(struct daemon *d)
{
	struct hbm_subuids *s = &d->subuids;
	int err = s->error, r = hbm_subuids_refresh(s);

	if (r < 0 && r != err)
		fprintf(stderr, "<4>hbmguardd: %s cannot be read (%s): its users' subordinate "
			"uids counted as they were before, each apart if never read\n",
			s->path, hbm_read_strerror(r));
	else if (r > 0 && s->bad_lines)
		fprintf(stderr, "<4>hbmguardd: %s: %zu lines not \"name:first:count\": "
			"their uids each a tenant of their own\n", s->path, s->bad_lines);
}

/*
 * Over a limit, a connection is held for one request, in case it comes
 * from an administrator; the oldest such goes when too many wait.
 */
static void make_room_for_overflow(struct daemon *d)
{
	struct client *c, *oldest = NULL;
	unsigned int waiting;

	counted(d, NULL, &waiting);
	if (waiting < MAX_OVERFLOW)
		return;
	for (c = d->clients; c; c = c->next)	/* newest first */
		if (c->overflow)
			oldest = c;
	control_close_client(oldest);
}

#define ACCEPT_PAUSE_US	100000

static int on_accept_again(sd_event_source *t, uint64_t usec, void *arg)
{
	sd_event_source *listener = arg;

	(void)t;
	(void)usec;
	sd_event_source_set_enabled(listener, SD_EVENT_ON);	/* the loop's till its end */
	return 0;
}

/*
 * Out of descriptors (or kernel memory) for a connection: it stays in the
 * backlog, and the listener, still readable, would wake the loop at once
 * for ever (helper-188): not listened to for ACCEPT_PAUSE_US, said once a
 * minute at most.  One timer, armed again each time (helper-189: a
 * floating one each time stayed till the loop's end, 300 bytes a pause;
 * sd_event_source_set_time_relative(), sd-event.c, systemd 247 and later).
 */
static void accept_failed(struct daemon *d, sd_event_source *s, int err)
{
	uint64_t now = 0, missed;
	int r;

	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	if (hbm_ratelimit(&d->accept_failed, 60000000, 1, now, &missed))
		fprintf(stderr, "<3>hbmguardd: control socket: a connection not taken: %s (%" PRIu64
			" more since): again in %d ms\n", strerror(err), missed,
			ACCEPT_PAUSE_US / 1000);
	if (!d->accept_again)
		r = sd_event_add_time_relative(d->loop, &d->accept_again, CLOCK_MONOTONIC,
					       ACCEPT_PAUSE_US, 0, on_accept_again, s);
	else
		r = sd_event_source_set_time_relative(d->accept_again, ACCEPT_PAUSE_US) < 0 ? -1 :
		    sd_event_source_set_enabled(d->accept_again, SD_EVENT_ONESHOT);
	if (r >= 0)
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct daemon *d = arg;
	socklen_t len = sizeof(struct ucred);
	unsigned int waiting;
	struct client *c;
	int cfd;

	(void)revents;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			accept_failed(d, s, errno);
		return 0;
	}
	c = calloc(1, sizeof(*c));
	/* SO_PASSCRED is the listener's (hbm_ctl_listen()): every packet has its sender. */
	if (!c || getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) ||
	    sd_event_add_io(d->loop, &c->source, cfd, EPOLLIN, on_client, c) < 0) {
		free(c);
		hbm_fdsink_give(&d->fdsink, cfd);
		return 0;
	}
	c->d = d;
	c->fd = cfd;
	refresh_tenants(d);
	c->tenant = hbm_tenant(&d->subuids, c->cred.uid);
	c->overflow = counted(d, NULL, &waiting) >= MAX_CLIENTS ||
		      counted(d, &c->tenant, &waiting) >= MAX_PER_TENANT;
	if (c->overflow)
		make_room_for_overflow(d);
	c->pidfd = c->overflow ? -1 : pin_peer(cfd, &c->cred, &c->sent_before_pin);
	c->next = d->clients;
	d->clients = c;
	/* without its end it would hold its slot for ever */
	if (sd_event_add_time_relative(d->loop, &c->lifetime, CLOCK_MONOTONIC,
				       LIFETIME_S * 1000000ULL, 0, on_lifetime_over, c) < 0)
		control_close_client(c);
	return 0;
}

/*
 * The socket hbmguardd.socket passes as "control": systemd made it, bound
 * it, set its mode and SO_PASSCRED, and keeps it listening while the
 * daemon restarts, so a connect() then waits in its backlog for the next
 * daemon instead of failing.  The path is systemd's: not replaced here, nor
 * removed at stop.  SO_PASSCRED is set again all the same: a unit without
 * PassCredentials= would otherwise give packets without their sender (see
 * hbm_ctl_listen()), and a connection accepted later inherits it from the
 * listener whenever it was queued.  Non-blocking as the daemon's own: the
 * flag is the file description's, shared with systemd's copy, which only
 * polls it (Accept=no).
 *
 * Return: 0 (*@fd: the socket, or -1: none passed), or a negative errno:
 * a wrong one.
 */
static int take_passed(struct daemon *d, int *fd)
{
	const char *path = d->cfg.control_socket;
	struct sockaddr_un sa = { 0 };
	socklen_t len = sizeof(sa);
	int one = 1, r, flags;

	*fd = passed_socket("control");
	if (*fd == -ENOENT) {
		*fd = -1;
		return 0;
	}
	if (*fd < 0) {
		fprintf(stderr, "<3>hbmguardd: the sockets systemd passed cannot be read "
			"($LISTEN_FDS, $LISTEN_FDNAMES): %s\n", strerror(-*fd));
		return *fd;
	}
	r = passed_control_socket(*fd, path);
	if (r < 0) {
		fprintf(stderr, "<3>hbmguardd: the socket systemd passed as \"control\" is not a "
			"listening AF_UNIX SOCK_SEQPACKET socket (ListenSequentialPacket= in "
			"hbmguardd.socket): %s\n", strerror(-r));
		return r;
	}
	if (r > 0) {
		getsockname(*fd, (struct sockaddr *)&sa, &len);
		fprintf(stderr, "<4>hbmguardd: ControlSocket=%s, but systemd passed a socket at "
			"%s: serving on that one\n", path, sa.sun_path[0] ? sa.sun_path : "(unnamed)");
	}
	flags = fcntl(*fd, F_GETFL);
	if (flags < 0 || fcntl(*fd, F_SETFL, flags | O_NONBLOCK) ||
	    setsockopt(*fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)))
		return -errno;
	d->control_passed = true;
	return 0;
}

/*
 * A socket at the path is stale (left by a daemon killed with -9) only if
 * nothing accepts on it: one that systemd holds (hbmguardd.socket, its
 * name not passed to this daemon) or another daemon serves is not to be
 * replaced, which would leave its listener at no path.
 */
static bool socket_stale(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool stale;

	if (fd < 0)
		return false;
	stale = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) && errno == ECONNREFUSED;
	close(fd);
	return stale;
}

/* hbm_ctl_path_open(): said of the socket served, systemd's or ours. */
static void warn_if_open_to_others(int fd)
{
	struct sockaddr_un sa = { 0 };
	socklen_t len = sizeof(sa) - 1;
	char dir[PATH_MAX];
	int r;

	if (getsockname(fd, (struct sockaddr *)&sa, &len) || sa.sun_path[0] != '/')
		return;
	r = hbm_ctl_path_open(sa.sun_path, dir, sizeof(dir));
	if (r < 0)	/* systemd's, under a path the unit hides from the daemon */
		fprintf(stderr, "<4>hbmguardd: control socket %s: its directories cannot be "
			"looked at (%s): whether a user other than root may change them is not "
			"known\n", sa.sun_path, strerror(-r));
	if (r <= 0)
		return;
	fprintf(stderr, "<4>hbmguardd: control socket %s: %s may be changed by a user other than "
		"root, who can then answer hbmctl and the ranks in this daemon's place: give the "
		"socket a directory of root's alone (the default, /run/hbmguard)\n",
		sa.sun_path, dir);
}

/**
 * control_setup() - listen on the control socket
 * @d: the daemon, its loop set up
 *
 * The one systemd passed (hbmguardd.socket) if any; else the configured
 * path, where a stale socket left by a daemon killed with -9 is replaced
 * and a live one (socket_stale()) or any other file is not touched.
 *
 * Return: 0 or a negative errno.
 */
int control_setup(struct daemon *d)
{
	const char *path = d->cfg.control_socket;
	struct sockaddr_un sa;
	struct stat st;
	int err = hbm_ctl_address(path, &sa);

	if (err)
		return err;
	hbm_fdsink_init(&d->fdsink);
	hbm_subuids_init(&d->subuids, SUBUID_FILE);
	err = take_passed(d, &d->control);
	if (err) {
		d->control = -1;
		return err;
	}
	if (d->control < 0 && !lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (!socket_stale(&sa)) {
			fprintf(stderr, "<3>hbmguardd: %s: something accepts on it (hbmguardd.socket "
				"without its socket passed here, or another hbmguardd): not replaced\n",
				path);
			return -EADDRINUSE;
		}
		unlink(path);
	}
	if (d->control < 0) {
		d->control = hbm_ctl_listen(path);
		/* what is ours to remove at stop (control_close()) */
		if (d->control >= 0 && !lstat(path, &st)) {
			d->control_dev = st.st_dev;
			d->control_ino = st.st_ino;
		}
	}
	if (d->control < 0) {
		err = d->control;
		d->control = -1;
		return err;
	}
	if (d->control_passed)
		fprintf(stderr, "<6>hbmguardd: control socket from systemd (hbmguardd.socket)\n");
	warn_if_open_to_others(d->control);
	if (sd_event_add_io(d->loop, NULL, d->control, EPOLLIN, on_accept, d) < 0) {
		close(d->control);
		d->control = -1;
		return -ENOMEM;
	}
	return 0;
}

/*
 * The path is removed only if it is still the socket this daemon bound:
 * one bound there since (systemd's, for one) is not this daemon's to
 * remove; a passed one stays, listening for the next start.
 */
void control_close(struct daemon *d)
{
	const char *path = d->cfg.control_socket;
	struct stat st;

	d->accept_again = sd_event_source_disable_unref(d->accept_again);
	if (d->control < 0)
		return;
	/* its backlog's connections, with their queues, released elsewhere too */
	if (d->control_passed)
		close(d->control);	/* systemd's: not the last reference */
	else
		hbm_fdsink_give(&d->fdsink, d->control);
	hbm_fdsink_stop(&d->fdsink);
	hbm_subuids_free(&d->subuids);
	if (!d->control_passed && !lstat(path, &st) && st.st_dev == d->control_dev &&
	    st.st_ino == d->control_ino)
		unlink(path);
}
