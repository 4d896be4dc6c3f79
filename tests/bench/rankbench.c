// SPDX-License-Identifier: GPL-2.0
/*
 * hbmrankbench: the recovery's own costs, in the guest, with hbmguardd
 * running: a one-rank job on a simulated device takes a UE (the inject
 * ioctl) COUNT times, and each time the rank times the error -> PAUSE
 * request it receives (kernel event, netlink, daemon, socket), and the
 * error -> RESUME of the whole pause/isolate/restore/resume exchange with
 * the rank answering at once (its own restore work excluded).
 *
 *   hbmrankbench SOCKET DEVICE_ID IDENTITY COUNT
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/hbmguard.h>

#include "bench.h"
#include "hbmguard.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int wait_for(struct hbmguard_rank *r, uint32_t action, struct hbmguard_recovery *req)
{
	struct pollfd p = { .fd = hbmguard_rank_fd(r), .events = POLLIN };
	int err;

	for (;;) {
		err = hbmguard_rank_next(r, req);
		if (err == -EAGAIN) {
			if (poll(&p, 1, 10000) != 1)
				return -ETIMEDOUT;
			continue;
		}
		if (err)
			return err;
		if (req->action == action)
			return 0;
		if (req->action == HBMGUARD_RECOVERY_ABORT)
			return -ECANCELED;
	}
}

static void row(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	printf("%-44s %8.0f us %8.0f us %8d\n", what, v[n / 2] / 1e3,
	       v[n * 99 / 100 < n ? n * 99 / 100 : n - 1] / 1e3, n);
}

int main(int argc, char **argv)
{
	struct hbmguard_rank_info info = { .job = "bench", .world_size = 1 };
	struct hbmguard_recovery req;
	struct hbmguard_rank *r;
	double *notified, *resumed;
	int fd, n, i, err;

	if (argc < 5) {
		fprintf(stderr, "usage: hbmrankbench SOCKET DEVICE_ID IDENTITY COUNT\n");
		return 1;
	}
	n = atoi(argv[4]);
	notified = calloc(n, sizeof(*notified));
	resumed = calloc(n, sizeof(*resumed));
	snprintf(info.device, sizeof(info.device), "%s", argv[3]);
	fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	err = fd < 0 ? -errno : hbmguard_rank_register(argv[1], &info, &r);
	if (err || !notified || !resumed) {
		fprintf(stderr, "hbmrankbench: %s\n", strerror(err ? -err : ENOMEM));
		return 1;
	}
	for (i = 0; i < n; i++) {
		struct hbmguard_inject in = {
			.size = sizeof(in), .device = atoi(argv[2]),
			.kind = HBMGUARD_ERROR_UE, .offset = (uint64_t)(i + 1) * 4096,
			.count = 1,
		};
		double t0 = now_ns();

		if (ioctl(fd, HBMGUARD_IOC_INJECT, &in) ||
		    wait_for(r, HBMGUARD_RECOVERY_PAUSE, &req) ||
		    (notified[i] = now_ns() - t0,
		     hbmguard_rank_answer(r, req.incident, HBMGUARD_ANSWER_PAUSED)) ||
		    wait_for(r, HBMGUARD_RECOVERY_RESTORE, &req) ||
		    hbmguard_rank_answer(r, req.incident, HBMGUARD_ANSWER_RESTORED) ||
		    wait_for(r, HBMGUARD_RECOVERY_RESUME, &req)) {
			fprintf(stderr, "hbmrankbench: round %d failed\n", i);
			return 1;
		}
		resumed[i] = now_ns() - t0;
	}
	printf("%-44s %11s %11s %8s\n", "rank recovery (qemu TCG guest)", "p50", "p99", "samples");
	row("UE -> rank told to pause", notified, n);
	row("UE -> rank resumed (restore work excluded)", resumed, n);
	hbmguard_rank_close(r);
	return 0;
}
