// SPDX-License-Identifier: GPL-2.0
/*
 * hbmrank: a training rank's side of hbmguardd's recovery, through
 * libhbmguard, for the tests in the qemu guests.  It registers, waits for
 * requests with poll(), prints each one and answers as told:
 *
 *   hbmrank SOCKET JOB RANK WORLD DEVICE [BEHAVIOUR]
 *
 *   obey     (default) PAUSE -> PAUSED, RESTORE -> RESTORED; exits 0 on
 *            RESUME, 3 on ABORT
 *   silent   never answers; exits 3 on ABORT
 *   fail     PAUSE -> PAUSED, RESTORE -> FAILED; exits 3 on ABORT
 *   die      exits 4 on PAUSE, without a word
 *   stubborn never answers, ignores ABORT and SIGTERM: only SIGKILL ends it
 *
 * It prints "registered" once the daemon took it, and one line per request:
 * "request ACTION incident N failed_rank R".  Registration refused: the
 * daemon's errno is printed and the exit status is 2.
 *
 * And the hostile peers of the control socket's tests:
 *
 *   hbmrank --handoff SOCKET JOB RANK WORLD DEVICE
 *            registers, forks a child that keeps the connection (as a data
 *            loader worker does), prints "child PID" and exits 0
 *   hbmrank --childreg SOCKET JOB RANK WORLD DEVICE
 *            connects, and a forked child registers on that connection:
 *            prints "register: ERRNO" as the daemon answered
 *   hbmrank --orphanreg SOCKET JOB RANK WORLD DEVICE
 *            the same, the child registering once the connecting process
 *            has exited
 *   hbmrank --rawreg SOCKET JOB RANK WORLD DEVICE
 *            connects and registers with one packet, sent at once, not
 *            again on EAGAIN as libhbmguard does: prints "register: ERRNO"
 *   hbmrank --flood SOCKET N
 *            opens N connections and sends nothing; prints "held N", then
 *            "closed" once the daemon has closed every one
 *   hbmrank --ask SOCKET N SECONDS
 *            opens N connections and asks STATUS on each every second for
 *            SECONDS: prints "served S refused R" once each was answered
 *            or turned away (EUSERS, or closed), then "closed" once the
 *            daemon has closed every served one, or "open N" when time is up
 *   hbmrank --refused SOCKET IDENTITY N
 *            N retires of IDENTITY's page 0 on one connection, without the
 *            proof of CAP_SYS_ADMIN: prints "refused N" once each was
 *            answered EPERM (a peer making the daemon log as fast as it can)
 *   hbmrank --busy SOCKET
 *            a daemon at its connection limit: answers one request
 *            -EUSERS, as hbmguardd does when over a limit, and exits
 *   hbmrank --nocap COMMAND...
 *            runs COMMAND without CAP_SYS_ADMIN (a uid 0 container's lot)
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "ctl.h"
#include "hbmguard.h"

static const char *const actions[] = { "?", "pause", "restore", "resume", "abort" };

static void fill_info(struct hbmguard_rank_info *info, char **argv)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->job, sizeof(info->job), "%s", argv[0]);
	snprintf(info->device, sizeof(info->device), "%s", argv[3]);
	info->rank = atoi(argv[1]);
	info->world_size = atoi(argv[2]);
	info->local_rank = info->rank;
}

/* One RANK_REGISTER on @fd, the daemon's answer printed. */
static int register_raw(int fd, const struct hbmguard_rank_info *info)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct hbm_ctl_header h;
	const void *body;
	size_t len = hbm_ctl_encode(pkt, sizeof(pkt), HBM_CTL_RANK_REGISTER, 1, 0, info);
	ssize_t n;

	if (send(fd, pkt, len, MSG_NOSIGNAL) != (ssize_t)len ||
	    (n = recv(fd, pkt, sizeof(pkt), 0)) <= 0 ||
	    hbm_ctl_decode(pkt, n, true, &h, &body)) {
		printf("register: no answer\n");
		return 1;
	}
	printf("register: %s\n", h.error ? strerror(-h.error) : "registered");
	return h.error ? 2 : 0;
}

/* The connection made here, registered on by this process, once. */
static int registers_once(char **argv)
{
	struct hbmguard_rank_info info;
	int fd = hbm_ctl_connect(argv[0]);

	if (fd < 0) {
		printf("connect: %s\n", strerror(-fd));
		return 1;
	}
	fill_info(&info, argv + 1);
	return register_raw(fd, &info);
}

/* The connection made here, registered on by a child. */
static int child_registers(char **argv, bool orphan)
{
	struct hbmguard_rank_info info;
	int fd = hbm_ctl_connect(argv[0]), st;
	pid_t parent = getpid(), child;

	if (fd < 0) {
		printf("connect: %s\n", strerror(-fd));
		return 1;
	}
	fill_info(&info, argv + 1);
	child = fork();
	if (child == 0) {
		while (orphan && getppid() == parent)
			usleep(10000);
		exit(register_raw(fd, &info));
	}
	if (orphan)
		return 0;
	waitpid(child, &st, 0);
	return WEXITSTATUS(st);
}

static int flood(const char *path, int n)
{
	struct pollfd *p = calloc(n, sizeof(*p));
	int i, open_ = 0;

	for (i = 0; i < n; i++) {
		p[i].fd = hbm_ctl_connect(path);
		p[i].events = POLLIN;
		open_ += p[i].fd >= 0;
	}
	printf("held %d\n", open_);
	while (open_) {
		poll(p, n, -1);
		for (i = 0; i < n; i++)
			if (p[i].fd >= 0 && p[i].revents) {
				close(p[i].fd);
				p[i].fd = -1;
				open_--;
			}
	}
	printf("closed\n");
	return 0;
}

/* STATUS on @fd: its answer's error, or 1 when it has none (closed, cut short). */
static int ask_status(int fd, uint32_t seq)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	size_t len = hbm_ctl_encode(pkt, sizeof(pkt), HBM_CTL_STATUS, seq, 0, NULL);
	struct hbm_ctl_header h;
	const void *body;
	ssize_t n;

	if (send(fd, pkt, len, MSG_NOSIGNAL) != (ssize_t)len ||
	    (n = recv(fd, pkt, sizeof(pkt), 0)) <= 0 ||
	    hbm_ctl_decode(pkt, n, true, &h, &body))
		return 1;
	return h.error;
}

static int ask(const char *path, int n, int seconds)
{
	int *fd = calloc(n, sizeof(*fd)), i, t, served = 0, refused = 0, open_;

	for (i = 0; i < n; i++) {
		fd[i] = hbm_ctl_connect(path);
		if (fd[i] >= 0 && ask_status(fd[i], 1)) {
			close(fd[i]);
			fd[i] = -1;
			refused++;
		}
		served += fd[i] >= 0;
	}
	printf("served %d refused %d\n", served, refused);
	fflush(stdout);
	for (t = 0, open_ = served; open_ && t < seconds; t++) {
		sleep(1);
		for (i = 0; i < n; i++)
			if (fd[i] >= 0 && ask_status(fd[i], t + 2)) {
				close(fd[i]);
				fd[i] = -1;
				open_--;
			}
	}
	if (open_)
		printf("open %d\n", open_);
	else
		printf("closed\n");
	return 0;
}

static int refused(const char *path, const char *identity, int n)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct hbm_ctl_extent x = { .offset = 0, .length = 4096 };
	int fd = hbm_ctl_connect(path), i, eperm = 0;
	struct hbm_ctl_header h;
	const void *body;
	ssize_t len;

	snprintf(x.identity, sizeof(x.identity), "%s", identity);
	for (i = 0; fd >= 0 && i < n; i++) {
		len = hbm_ctl_encode(pkt, sizeof(pkt), HBM_CTL_RETIRE, i + 1, 0, &x);
		if (send(fd, pkt, len, 0) != len)
			break;
		len = recv(fd, pkt, sizeof(pkt), 0);
		if (len <= 0 || hbm_ctl_decode(pkt, len, true, &h, &body))
			break;
		eperm += h.error == -EPERM;
	}
	printf("refused %d\n", eperm);
	return eperm == n ? 0 : 1;
}

static int busy(const char *path)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	int l = socket(AF_UNIX, SOCK_SEQPACKET, 0), c;
	struct hbm_ctl_header h;
	struct sockaddr_un sa;
	const void *body;
	ssize_t n;

	unlink(path);
	if (hbm_ctl_address(path, &sa) || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(l, 1)) {
		perror(path);
		return 1;
	}
	printf("listening\n");
	c = accept(l, NULL, NULL);
	n = recv(c, pkt, sizeof(pkt), 0);
	if (n > 0) {
		hbm_ctl_decode(pkt, n, false, &h, &body);
		n = hbm_ctl_encode(pkt, sizeof(pkt), h.type | HBM_CTL_REPLY, h.seq, -EUSERS, NULL);
		send(c, pkt, n, MSG_NOSIGNAL);
	}
	close(c);
	close(l);
	unlink(path);
	return 0;
}

static int test_mode(int argc, char **argv)
{
	struct hbmguard_rank_info info;
	struct hbmguard_rank *r;
	pid_t child;
	int err;

	if (!strcmp(argv[1], "--nocap") && argc > 2) {
		if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0)) {
			perror("PR_CAPBSET_DROP");
			return 1;
		}
		execvp(argv[2], argv + 2);	/* uid 0 execs with the bounding set */
		perror(argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "--busy") && argc > 2)
		return busy(argv[2]);
	if (!strcmp(argv[1], "--ask") && argc > 4)
		return ask(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "--flood") && argc > 3)
		return flood(argv[2], atoi(argv[3]));
	if (!strcmp(argv[1], "--refused") && argc > 4)
		return refused(argv[2], argv[3], atoi(argv[4]));
	if (argc < 7)
		return 1;
	if (!strcmp(argv[1], "--rawreg") && argc > 6)
		return registers_once(argv + 2);
	if (!strcmp(argv[1], "--childreg") || !strcmp(argv[1], "--orphanreg"))
		return child_registers(argv + 2, !strcmp(argv[1], "--orphanreg"));
	if (strcmp(argv[1], "--handoff"))
		return 1;
	fill_info(&info, argv + 3);
	err = hbmguard_rank_register(argv[2], &info, &r);
	if (err) {
		printf("register: %s\n", strerror(-err));
		return 2;
	}
	child = fork();
	if (child == 0) {	/* holds the connection, never answers */
		for (;;)
			pause();
	}
	printf("child %d\n", (int)child);
	return 0;
}

int main(int argc, char **argv)
{
	struct hbmguard_rank_info info = { 0 };
	const char *behaviour = argc > 6 ? argv[6] : "obey";
	struct hbmguard_recovery req;
	struct hbmguard_rank *r;
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strncmp(argv[1], "--", 2))
		return test_mode(argc, argv);
	if (argc < 6) {
		fprintf(stderr, "usage: hbmrank SOCKET JOB RANK WORLD DEVICE [obey|silent|fail|die|stubborn]\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(behaviour, "stubborn"))
		signal(SIGTERM, SIG_IGN);
	snprintf(info.job, sizeof(info.job), "%s", argv[2]);
	snprintf(info.device, sizeof(info.device), "%s", argv[5]);
	info.rank = atoi(argv[3]);
	info.world_size = atoi(argv[4]);
	info.local_rank = info.rank;
	err = hbmguard_rank_register(argv[1], &info, &r);
	if (err) {
		printf("register: %s\n", strerror(-err));
		return 2;
	}
	printf("registered\n");
	for (;;) {
		struct pollfd p = { .fd = hbmguard_rank_fd(r), .events = POLLIN };
		uint32_t answer = 0;

		err = hbmguard_rank_next(r, &req);
		if (err == -EAGAIN) {
			poll(&p, 1, -1);
			continue;
		}
		if (err) {
			printf("next: %s\n", strerror(-err));
			return 1;
		}
		printf("request %s incident %" PRIu64 " failed_rank %u\n",
		       req.action < 5 ? actions[req.action] : "?", req.incident,
		       req.failed_rank);
		if (!strcmp(behaviour, "stubborn"))
			continue;
		if (req.action == HBMGUARD_RECOVERY_ABORT)
			return 3;
		if (req.action == HBMGUARD_RECOVERY_RESUME)
			return 0;
		if (!strcmp(behaviour, "silent"))
			continue;
		if (!strcmp(behaviour, "die"))
			return 4;
		if (req.action == HBMGUARD_RECOVERY_PAUSE)
			answer = HBMGUARD_ANSWER_PAUSED;
		else if (req.action == HBMGUARD_RECOVERY_RESTORE)
			answer = strcmp(behaviour, "fail") ? HBMGUARD_ANSWER_RESTORED :
							     HBMGUARD_ANSWER_FAILED;
		err = hbmguard_rank_answer(r, req.incident, answer);
		if (err)
			printf("answer: %s\n", strerror(-err));
	}
}
