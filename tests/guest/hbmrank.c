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
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hbmguard.h"

static const char *const actions[] = { "?", "pause", "restore", "resume", "abort" };

int main(int argc, char **argv)
{
	struct hbmguard_rank_info info = { 0 };
	const char *behaviour = argc > 6 ? argv[6] : "obey";
	struct hbmguard_recovery req;
	struct hbmguard_rank *r;
	int err;

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
