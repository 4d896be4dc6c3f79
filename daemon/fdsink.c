// SPDX-License-Identifier: GPL-2.0
/*
 * Where the control socket's connections are let go (control.c), and with
 * them the files their peers passed.
 *
 * A peer may attach descriptors to any packet (SCM_RIGHTS), and a receiver
 * cannot refuse them before Linux 6.16 (SO_PASSRIGHTS).  Whoever drops the
 * last reference to such a file runs its release, and some releases wait
 * for as long as the file's owner likes: a TCP socket with SO_LINGER set
 * waits in tcp_close() until its unsent data is acknowledged or its linger
 * time (up to INT_MAX seconds) is out (inet_release(), net/ipv4/af_inet.c,
 * 6.1 and 6.12), and a unix socket carries such files queued in it,
 * released with it.  A packet's files dropped by recvmsg() for want of room
 * (MSG_CTRUNC), or a connection closed with such packets still queued, ran
 * that release on the loop, which stopped: no kernel event, no recovery
 * deadline, no other client, until the watchdog killed the daemon (any
 * local user could; helper-158 showed it).  Taking the files and close()ing
 * them is no better: close() runs the file's ->flush, which a FUSE server
 * (an unprivileged user's, in a user namespace of its own) holds forever.
 *
 * So the daemon never takes a packet with files (hbm_ctl_recv() looks
 * first, MSG_PEEK: it refuses it unread), and never releases a connection
 * itself: each goes, its queue with it, to a child that only receives
 * connections and closes them, a datagram each (a socket has no ->flush,
 * and the daemon's close is not the last).  A child whose queue is full
 * (the daemon's send buffer: a socketpair's datagrams are not bounded by
 * max_dgram_qlen) is taken for stuck in a release and killed: SIGKILL ends
 * a lingering wait, and an exiting task does not linger (inet_release());
 * a new child takes the connection.  Without one (fork() failed, or
 * killed children that do not end: a release in D state), it is kept open,
 * not released here.  The child is forked as the store's compaction child
 * is (store.c): it calls nothing but system calls.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdsink.h"

void hbm_fdsink_init(struct hbm_fdsink *s)
{
	*s = (struct hbm_fdsink){ .sock = -1, .pidfd = -1 };
}

/*
 * The child: each socket it is given is closed once the next datagram (the
 * daemon's tick after its own close, or the next socket) or the end has
 * come, never before the daemon's close: closed at once, the child's could
 * be the first of the two, and the daemon's the last (helper-160).
 */
static void __attribute__((noreturn)) sink(int sock, pid_t parent)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(16 * sizeof(int))];
	} ctl;
	int held[16];
	size_t nr_held = 0, i;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(1);
	if ((sock > 0 && syscall(SYS_close_range, 0, sock - 1, 0)) ||
	    syscall(SYS_close_range, sock + 1, ~0U, 0))
		_exit(1);	/* the daemon's own files are not held here */
	for (;;) {
		char byte;
		struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
		struct cmsghdr *c;
		ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		for (i = 0; i < nr_held; i++)	/* the daemon has closed its own */
			close(held[i]);
		nr_held = 0;
		if (n <= 0)
			_exit(0);	/* never so: every datagram has its byte */
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) &&
					    nr_held < 16; i++)
					held[nr_held++] = ((int *)CMSG_DATA(c))[i];
	}
}

/* Children killed are reaped once gone; never waited for. */
static void reap(struct hbm_fdsink *s)
{
	size_t i, n = 0;

	for (i = 0; i < s->nr_dead; i++)
		if (!waitpid(s->dead[i], NULL, WNOHANG))
			s->dead[n++] = s->dead[i];	/* not gone yet */
	s->nr_dead = n;		/* reaped, or not ours to reap (ECHILD) */
}

static int spawn(struct hbm_fdsink *s)
{
	pid_t parent = getpid();
	int sv[2];

	reap(s);
	if (s->nr_dead == HBM_FDSINK_STUCK_MAX)
		return -EBUSY;	/* past SIGKILL (a release in D state): no more */
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	s->pid = fork();
	if (!s->pid)
		sink(sv[1], parent);
	close(sv[1]);
	if (s->pid < 0) {
		s->pid = 0;
		close(sv[0]);
		return -errno;
	}
	s->sock = sv[0];
	s->pidfd = syscall(SYS_pidfd_open, s->pid, 0);
	return 0;
}

/* The child, stuck or gone: killed, its queue released as it exits. */
static void end_child(struct hbm_fdsink *s)
{
	if (!s->pid)
		return;
	/* through its pidfd: its pid may be another's once reaped */
	if (s->pidfd < 0 || syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0))
		kill(s->pid, SIGKILL);
	s->dead[s->nr_dead++] = s->pid;	/* room: spawn() makes none past it */
	reap(s);
	if (s->pidfd >= 0)
		close(s->pidfd);
	close(s->sock);
	s->sock = s->pidfd = -1;
	s->pid = 0;
}

static int send_fd(int sock, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl = { 0 };
	char byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };

	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(fd));
	return sendmsg(sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/**
 * hbm_fdsink_give() - close a connection, released elsewhere
 * @s: the sink
 * @fd: a socket of the daemon's (no ->flush), closed here
 *
 * Its file, and what its queue holds, is released by the sink's child.
 * With no child to be had (fork() failing, or HBM_FDSINK_STUCK_MAX killed
 * that did not end: a release that SIGKILL does not end, in D state) it is
 * kept open, never released in the loop: a descriptor lost, not the loop.
 */
void hbm_fdsink_give(struct hbm_fdsink *s, int fd)
{
	int tries, err = 0;

	reap(s);
	for (tries = 0; tries < 2; tries++) {
		err = s->pid ? 0 : spawn(s);
		if (!err)
			err = send_fd(s->sock, fd);
		if (!err) {
			close(fd);
			/* now the child may close its own (see sink()) */
			send(s->sock, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			return;
		}
		end_child(s);	/* stuck (-EAGAIN) or gone: another */
	}
	s->kept++;
	fprintf(stderr, "<4>hbmguardd: no child to release a control connection (%s): "
		"kept open (%u so far) rather than released in the loop\n", strerror(-err),
		s->kept);
}

/*
 * At the daemon's stop: what the child holds it has closed at the tick of
 * the last give; it ends with the daemon (PR_SET_PDEATHSIG), a datagram
 * socket's close telling it nothing.
 */
void hbm_fdsink_stop(struct hbm_fdsink *s)
{
	if (s->pid) {
		close(s->sock);
		if (s->pidfd >= 0)
			close(s->pidfd);
	}
	hbm_fdsink_init(s);
}
