// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd's control socket (the protocol is in ctl.h).
 *
 * The asker is who the kernel says it is (SO_PEERCRED at accept): anyone
 * may read the status, only root may retire or clear.  A mutation is
 * answered after daemon_apply() has it in the kernel and on disk, so that
 * hbmctl's "done" means durable.  The work is short (one netlink request,
 * one state file written) and done in the loop itself, one request at a
 * time: requests from several operators are serialised for free.
 *
 * A peer that sends a malformed packet is told why and disconnected; at
 * most MAX_CLIENTS connections are held, so a local user cannot exhaust the
 * daemon's descriptors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hbmguardd.h"

#define MAX_CLIENTS 64

static void client_close(struct client *c)
{
	recovery_client_gone(c->d, c);
	sd_event_source_disable_unref(c->source);
	close(c->fd);
	c->d->clients--;
	free(c);
}

static const char *const verbs[] = {
	[HBM_CTL_RETIRE] = "retire", [HBM_CTL_CLEAR] = "clear",
};

static int mutate(struct client *c, uint16_t type, const struct hbm_ctl_extent *x)
{
	int err;

	if (c->cred.uid != 0) {
		fprintf(stderr, "<4>hbmguardd: %s of %s refused: uid %u (pid %d) is not root\n",
			verbs[type], x->identity, c->cred.uid, c->cred.pid);
		return -EPERM;
	}
	err = daemon_apply(c->d, type, x);
	if (err)
		fprintf(stderr, "<4>hbmguardd: %s of %s 0x%" PRIx64 "+0x%" PRIx64
			" for pid %d failed: %s\n", verbs[type], x->identity,
			x->offset, x->length, c->cred.pid, strerror(-err));
	else
		fprintf(stderr, "<5>hbmguardd: %s: 0x%" PRIx64 "+0x%" PRIx64
			" %s for pid %d, saved\n", x->identity, x->offset, x->length,
			type == HBM_CTL_RETIRE ? "retired" : "cleared", c->cred.pid);
	return err;
}

/* Never blocks the loop: a peer whose socket is full misses the packet. */
static bool send_packet(struct client *c, uint16_t type, uint32_t seq, int32_t err,
			const void *body)
{
	alignas(8) unsigned char out[HBM_CTL_MAX_PACKET];
	size_t len = hbm_ctl_encode(out, sizeof(out), type, seq, err, body);

	return send(c->fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)len;
}

/* One request in, one reply out.  Returns false to drop the peer. */
static bool serve(struct client *c, const void *pkt, size_t len)
{
	union {
		struct hbm_ctl_rank_info rank;
		struct hbm_ctl_incident incident;
	} info;
	struct hbm_ctl_status st;
	struct hbm_ctl_header h;
	const void *body, *reply = NULL;
	uint16_t type;
	int err;

	err = hbm_ctl_decode(pkt, len, false, &h, &body);
	type = h.type & ~HBM_CTL_REPLY;
	if (!err) {
		switch (type) {
		case HBM_CTL_STATUS:
			daemon_status(c->d, &st);
			reply = &st;
			break;
		case HBM_CTL_RETIRE:
		case HBM_CTL_CLEAR:
			err = mutate(c, type, body);
			reply = body;
			break;
		case HBM_CTL_RANK_REGISTER:
			err = recovery_register(c->d, c, body);
			reply = body;
			break;
		case HBM_CTL_RANK_ANSWER:
			err = recovery_answer(c->d, c, body);
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
		}
	} else {
		fprintf(stderr, "<4>hbmguardd: control: a bad packet from pid %d: %s\n",
			c->cred.pid, strerror(-err));
	}
	if (!send_packet(c, type | HBM_CTL_REPLY, h.seq, err, reply))
		return false;
	return err != -EBADMSG && err != -EPROTONOSUPPORT && err != -EOPNOTSUPP;
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
	if (!send_packet(c, type, 0, 0, body))
		fprintf(stderr, "<4>hbmguardd: pid %d missed a packet: %s\n",
			c->cred.pid, strerror(errno));
}

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct client *c = arg;
	ssize_t n;

	(void)s;
	(void)revents;
	n = recv(fd, pkt, sizeof(pkt), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* An oversized packet is cut short by recv(): never a valid one. */
	if (n <= 0 || !serve(c, pkt, (size_t)n > sizeof(pkt) ? 0 : (size_t)n))
		client_close(c);
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct daemon *d = arg;
	socklen_t len = sizeof(struct ucred);
	struct client *c;
	int cfd;

	(void)s;
	(void)revents;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (cfd < 0)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c || d->clients >= MAX_CLIENTS ||
	    getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) ||
	    sd_event_add_io(d->loop, &c->source, cfd, EPOLLIN, on_client, c) < 0) {
		free(c);
		close(cfd);
		return 0;
	}
	c->d = d;
	c->fd = cfd;
	d->clients++;
	return 0;
}

/**
 * control_setup() - listen on the configured control socket
 * @d: the daemon, its loop set up
 *
 * A stale socket left by a daemon killed with -9 is replaced; any other
 * file at that path is not touched.
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
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path);
	}
	d->control = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->control < 0)
		return -errno;
	/* Mode 0666: anyone may ask; what they may do is checked per request. */
	if (bind(d->control, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, 0666) || listen(d->control, 16) ||
	    sd_event_add_io(d->loop, NULL, d->control, EPOLLIN, on_accept, d) < 0) {
		err = -errno;
		close(d->control);
		d->control = -1;
		return err ? err : -ENOMEM;
	}
	return 0;
}

void control_close(struct daemon *d)
{
	if (d->control < 0)
		return;
	close(d->control);
	unlink(d->cfg.control_socket);
}
