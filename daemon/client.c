// SPDX-License-Identifier: GPL-2.0
/*
 * A connection to the control socket, and the process at its other end
 * (client.h): a packet sent without blocking, and whether a pinned process
 * is still its owner's to signal.  Used by control.c, which serves the
 * connections, and by recovery.c, which tells ranks what to do; calls
 * neither.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client.h"
#include "core.h"
#include "daemon.h"

/*
 * What the control socket's peers may have logged (client_may_log()): each
 * uid with a budget of its own, and the uids without one together.
 */
#define PEER_LOG_INTERVAL_US	10000000
#define PEER_LOG_UID_BURST	20
#define PEER_LOG_BURST		100

/**
 * control_owned_by() - whether a pinned process is still a uid's to signal
 * @pidfd: the process
 * @pid: its pid, in the daemon's pid namespace
 * @uid: the uid it registered as
 *
 * True when @uid could signal it with kill(2) itself (@uid is its real or
 * saved uid, as kill_ok_by_cred() checks): the daemon ends a process on a
 * uid's behalf only when that uid could.  /proc/@pid is read, then the
 * pidfd is checked alive: a live process keeps its pid, so what was read
 * was that process's.
 *
 * Return: whether it is.
 */
bool control_owned_by(int pidfd, pid_t pid, uid_t uid)
{
	unsigned int real, eff, saved;
	char path[64], line[256];
	bool found = false;
	FILE *f;

	if (pidfd < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "Uid: %u %u %u", &real, &eff, &saved) == 3;
	fclose(f);
	return found && (uid == real || uid == saved) &&
	       syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

static void say_missed(uid_t uid, uint64_t missed)
{
	if (missed)
		fprintf(stderr, "<4>hbmguardd: control: %" PRIu64 " lines about uid %u's "
			"connections suppressed\n", missed, (unsigned int)uid);
}

/*
 * @uid's budget: its own, or one whose interval has ended (what it left out
 * said first); NULL if every one is in use.
 */
static struct hbm_ratelimit *uid_budget(struct daemon *d, uid_t uid, uint64_t now)
{
	size_t i, idle = HBM_PEER_LOG_UIDS;

	for (i = 0; i < HBM_PEER_LOG_UIDS; i++) {
		const struct hbm_ratelimit *rl = &d->peer_log_uid[i].budget;

		if (rl->since && d->peer_log_uid[i].uid == uid)
			return &d->peer_log_uid[i].budget;
		if (idle == HBM_PEER_LOG_UIDS &&
		    (!rl->since || now - rl->since >= PEER_LOG_INTERVAL_US))
			idle = i;
	}
	if (idle == HBM_PEER_LOG_UIDS)
		return NULL;
	say_missed(d->peer_log_uid[idle].uid, d->peer_log_uid[idle].budget.missed);
	d->peer_log_uid[idle].uid = uid;
	d->peer_log_uid[idle].budget = (struct hbm_ratelimit){ 0 };
	return &d->peer_log_uid[idle].budget;
}

/**
 * client_may_log() - whether a line a control socket's peer caused may be said
 * @c: the peer's connection
 *
 * Any local user causes them (refusals, bad packets, ranks registered and
 * gone) as fast as it can connect and send.  Each uid may have
 * PEER_LOG_UID_BURST of them logged per PEER_LOG_INTERVAL_US (ratelimit.h),
 * so that no uid hides another's by spending a budget they share; past
 * HBM_PEER_LOG_UIDS uids at once, the others share PEER_LOG_BURST.  The
 * count of those left out is said before the next.  In all, about 740
 * lines per interval at most, journald's limit for a service (10000 per
 * 30 s) out of reach.  A uid's lines are all one budget: its bad packets
 * can hide its own registrations (hbmctl ranks still lists them).
 *
 * Return: true if it may.
 */
bool client_may_log(const struct client *c)
{
	uint64_t now = hbm_monotonic_ns() / 1000, missed;
	struct hbm_ratelimit *mine = uid_budget(c->d, c->cred.uid, now);

	if (!hbm_ratelimit(mine ? mine : &c->d->peer_log, PEER_LOG_INTERVAL_US,
			   mine ? PEER_LOG_UID_BURST : PEER_LOG_BURST, now, &missed))
		return false;
	if (mine)
		say_missed(c->cred.uid, missed);
	else if (missed)
		fprintf(stderr, "<4>hbmguardd: control: %" PRIu64 " lines about the peers "
			"of uids past %u suppressed\n", missed, HBM_PEER_LOG_UIDS);
	return true;
}

/* Never blocks the loop: a peer whose socket is full misses the packet. */
bool client_send_packet(struct client *c, uint16_t type, uint32_t seq, int32_t err,
			const void *body)
{
	alignas(8) unsigned char out[HBM_CTL_MAX_PACKET];
	size_t len = hbm_ctl_encode(out, sizeof(out), type, seq, err, body);

	return send(c->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len;
}

/**
 * control_send() - a packet to a client, unasked (RECOVERY to a rank)
 * @c: the client
 * @type: its type
 * @body: its body
 *
 * A rank that misses one is not waited for: its job's incident escalates
 * at the step's deadline.
 */
void control_send(struct client *c, uint16_t type, const void *body)
{
	if (!client_send_packet(c, type, 0, 0, body))
		fprintf(stderr, "<4>hbmguardd: pid %d missed a packet: %s\n",
			c->cred.pid, strerror(errno));
}
