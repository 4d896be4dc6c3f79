// SPDX-License-Identifier: GPL-2.0
/*
 * hbmstatebench: what guest-bench.sh needs to measure hbmguardd's state
 * files at 10^6 pages (issue 17).
 *
 *   hbmstatebench write DIR IDENTITY PAGES   a snapshot of PAGES one-page extents,
 *                                            every other page (apart: the kernel
 *                                            keeps them as PAGES extents)
 *   hbmstatebench read DIR IDENTITY          ns to read it (hbm_state_read(), what
 *                                            the daemon does first at a start)
 *   hbmstatebench inject DEV COUNT FIRST     COUNT UEs, at FIRST, FIRST + 2 pages...
 *   hbmstatebench until DEV PAGES            CLOCK_MONOTONIC ns once device DEV's
 *                                            table holds PAGES bad pages (for up
 *                                            to 600 s; the last RESTORED event's
 *                                            time): when a restart's restore is
 *                                            done; and when it first held some
 *                                            (the first RESTORED event's)
 *   hbmstatebench map DEV                    ns the first mmap() of DEV's table takes
 *                                            (a table never mapped before is built
 *                                            then: map.c), and its extents
 *   hbmstatebench proc PID                   the daemon's CPU ns (its main thread and
 *                                            its children waited for), bytes written
 *                                            (wchar, write_bytes), VmRSS and VmHWM (KiB)
 *   hbmstatebench send PAGES                 ns to send the packed RESTOREs of a
 *                                            restart of PAGES, as large as the
 *                                            daemon's, and have each refused at
 *                                            once (a device that is not there):
 *                                            their way into the kernel alone
 *   hbmstatebench now                        CLOCK_MONOTONIC ns
 *   hbmstatebench run CMD [ARG...]           ns from before CMD's fork until it was
 *                                            waited for, its stdout thrown away
 *                                            (hbmguardd --version: the daemon's
 *                                            exec, its libraries loaded, and exit)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/genetlink.h>
#include <linux/hbmguard.h>
#include <linux/netlink.h>

#include "bench.h"
#include "restore_msg.h"
#include "state.h"

static int open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		perror(dir);
	return fd;
}

static int cmd_write(const char *dir, const char *identity, size_t pages)
{
	struct hbm_state s = { .page_size = 4096, .serial = 1, .nr = pages };
	int fd = open_dir(dir), err;
	size_t i;

	if (fd < 0)
		return 1;
	snprintf(s.identity, sizeof(s.identity), "%s", identity);
	s.records = calloc(pages ? pages : 1, sizeof(*s.records));
	if (!s.records)
		return 1;
	for (i = 0; i < pages; i++)
		s.records[i] = (struct hbm_state_record){
			.offset = 2 * i * 4096, .length = 4096, .first_seen = 1, .last_seen = 1,
			.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE, .errors = 1,
		};
	err = hbm_state_write(fd, &s);
	if (err)
		fprintf(stderr, "hbmstatebench: write: %s\n", strerror(-err));
	return err ? 1 : 0;
}

static int cmd_read(const char *dir, const char *identity)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	int fd = open_dir(dir), err;
	double t;

	if (fd < 0)
		return 1;
	t = now_ns();
	err = hbm_state_read(fd, identity, 0, &s, &damage);
	t = now_ns() - t;
	if (err) {
		fprintf(stderr, "hbmstatebench: read: %s\n", strerror(-err));
		return 1;
	}
	printf("%.0f %zu\n", t, s.nr);
	hbm_state_free(&s);
	return 0;
}

static int cmd_inject(uint32_t dev, size_t count, uint64_t first)
{
	int fd = open("/dev/hbmguard", O_RDWR | O_CLOEXEC);
	size_t i;

	if (fd < 0) {
		perror("/dev/hbmguard");
		return 1;
	}
	for (i = 0; i < count; i++) {
		struct hbmguard_inject in = {
			.size = sizeof(in), .device = dev, .kind = HBMGUARD_ERROR_UE,
			.offset = first + 2 * i * 4096, .count = 1,
		};

		if (ioctl(fd, HBMGUARD_IOC_INJECT, &in)) {
			perror("HBMGUARD_IOC_INJECT");
			return 1;
		}
	}
	close(fd);
	return 0;
}

/* The pages device @dev's table holds bad; -1 on error (said). */
static int64_t bad_pages(int fd, uint32_t dev)
{
	struct hbmguard_device_info di = { .size = sizeof(di), .device = dev };

	if (ioctl(fd, HBMGUARD_IOC_GET_DEVICE, &di)) {
		perror("HBMGUARD_IOC_GET_DEVICE");
		return -1;
	}
	return (int64_t)di.nr_retired + di.nr_pending + di.nr_failed;
}

/*
 * CLOCK_MONOTONIC less CLOCK_REALTIME, ns (an event's timestamp is the
 * latter): the realtime read between two monotonic ones, the closest pair
 * of five, taken at their midpoint.
 */
static double monotonic_less_real(void)
{
	double best = 0, best_gap = -1;
	int i;

	for (i = 0; i < 5; i++) {
		struct timespec real;
		double before = now_ns(), after;

		clock_gettime(CLOCK_REALTIME, &real);
		after = now_ns();
		if (best_gap < 0 || after - before < best_gap) {
			best_gap = after - before;
			best = (before + after) / 2 - (real.tv_sec * 1e9 + real.tv_nsec);
		}
	}
	return best;
}

/* What cmd_until() knows from the events it read. */
struct until_state {
	double to_monotonic;	/* monotonic_less_real() */
	double first, last;	/* the first and latest RESTORED event, CLOCK_MONOTONIC */
	uint64_t told;		/* pages the RESTORED events say were recorded */
	bool lost;		/* an OVERFLOW: some event not read */
};

/* What until_read() found. */
enum until_news {
	UNTIL_NOTHING,		/* poll()'s timeout, or EINTR */
	UNTIL_COUNTED,		/* RESTORED events counted, or other devices' */
	UNTIL_ASK,		/* an event of another kind of the device's, or one lost */
};

/* Device @dev's events from @fd into @u, waiting up to @timeout_ms; -1 on error. */
static int until_read(int fd, uint32_t dev, int timeout_ms, struct until_state *u)
{
	struct hbmguard_event ev[64];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ready = poll(&p, 1, timeout_ms), news = UNTIL_COUNTED;
	ssize_t n;
	size_t i;

	if (ready < 0 && errno == EINTR)
		return UNTIL_NOTHING;
	if (ready <= 0)
		return ready ? -1 : UNTIL_NOTHING;
	n = read(fd, ev, sizeof(ev));
	if (n < 0)
		return -1;
	for (i = 0; i < (size_t)n / sizeof(ev[0]); i++) {
		if (ev[i].type == HBMGUARD_EVENT_RESTORED && ev[i].device == dev) {
			u->last = ev[i].timestamp + u->to_monotonic;
			if (!u->first)
				u->first = u->last;
			u->told += ev[i].count;
		} else if (ev[i].type == HBMGUARD_EVENT_OVERFLOW) {
			u->lost = true;
			news = UNTIL_ASK;
		} else if (ev[i].device == dev) {
			news = UNTIL_ASK;
		}
	}
	return news;
}

/*
 * The times are the kernel's own: the timestamps of the RESTORED events
 * (each a request's extents in, stamped under the device's lock), not the
 * moment this woke and asked.  The device is asked again only once the
 * events' COUNTs add up to what is waited for, or after an event of another
 * kind or a lost one: GET_DEVICE takes the device's lock, which a restore
 * holds, and a poll of the device every millisecond, while a restore held
 * it, spun (mutex_spin_on_owner()) on the vCPU the restore needed, both
 * emulated on qemu's one thread: a tenth of the restart's time in a
 * profile was the poller's.  An ask that finds them all may follow
 * requests whose events are still unread (each was sent before the lock
 * the ask took was let go): they are read before the last one's time is
 * taken.  Where no RESTORED event was heard, or one was lost, the times
 * are those of the asking.
 */
static int cmd_until(uint32_t dev, uint64_t pages)
{
	int fd = open("/dev/hbmguard", O_RDONLY | O_CLOEXEC);
	struct until_state u = { .to_monotonic = monotonic_less_real() };
	double deadline = now_ns() + 600e9, asked;
	int64_t have;
	int got;

	if (fd < 0) {
		perror("/dev/hbmguard");
		return 1;
	}
	while ((have = bad_pages(fd, dev)) >= 0 && (uint64_t)have < pages) {
		if (have && !u.first)	/* some before this opened: late by this ask */
			u.first = now_ns();
		if ((uint64_t)have > u.told)
			u.told = have;
		do {
			double left_ms = (deadline - now_ns()) / 1e6;

			got = left_ms > 0 ? until_read(fd, dev, (int)left_ms + 1, &u) : -1;
			if (got < 0) {
				fprintf(stderr, "hbmstatebench: device %u: not %" PRIu64
					" pages in 600 s (%s)\n", dev, pages,
					left_ms <= 0 ? "timed out" : strerror(errno));
				return 1;
			}
		} while (got != UNTIL_ASK && u.told < pages);
	}
	asked = now_ns();
	while (have >= 0 && until_read(fd, dev, 0, &u) > UNTIL_NOTHING)
		;	/* the events of the requests the last ask followed */
	if (have >= 0) {
		double done = u.last && !u.lost ? u.last : asked;

		if (u.lost)
			fprintf(stderr, "hbmstatebench: events lost: the times are the asking's\n");
		printf("%.0f %.0f\n", done, u.first && !u.lost ? u.first : done);
	}
	close(fd);
	return have >= 0 ? 0 : 1;
}

static int cmd_map(uint32_t dev)
{
	int fd = open("/dev/hbmguard", O_RDONLY | O_CLOEXEC);
	const struct hbmguard_map_header *h;
	double t;

	if (fd < 0) {
		perror("/dev/hbmguard");
		return 1;
	}
	t = now_ns();
	h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(dev));
	t = now_ns() - t;
	if (h == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("%.0f %u\n", t, h->overflow ? 0 : h->nr[h->active]);
	munmap((void *)h, 4096);
	close(fd);
	return 0;
}

/* CPU: schedstat's ns on a CPU, the threads'; children's from stat (ticks) */
static int cmd_proc(const char *pid)
{
	unsigned long long ns = 0, cu = 0, cs = 0, wchar = 0, wbytes = 0, rss = 0, hwm = 0, v;
	char path[64], line[512], *p;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%s/schedstat", pid);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &ns) != 1)
		return 1;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f) || !(p = strrchr(line, ')')))
		return 1;
	fclose(f);
	/* after ")": state is field 3; cutime 16, cstime 17 */
	for (i = 3, p += 2; i <= 17 && p; i++, p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL)
		if (i == 16)
			cu = strtoull(p, NULL, 10);
		else if (i == 17)
			cs = strtoull(p, NULL, 10);
	snprintf(path, sizeof(path), "/proc/%s/io", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "wchar: %llu", &v) == 1)
			wchar = v;
		if (sscanf(line, "write_bytes: %llu", &v) == 1)
			wbytes = v;
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmRSS: %llu", &v) == 1)
			rss = v;
		if (sscanf(line, "VmHWM: %llu", &v) == 1)
			hwm = v;
	}
	if (f)
		fclose(f);
	printf("%llu %llu %llu %llu %llu\n",
	       ns + (cu + cs) * (1000000000ULL / sysconf(_SC_CLK_TCK)), wchar, wbytes, rss, hwm);
	return 0;
}

/*
 * The way a restart's records go into the kernel, without the restore:
 * the same messages as the daemon's packed RESTOREs (daemon/kernel.c,
 * packed_fill(), with restore_msg.h's layout: 16384 records a request in
 * attributes of 1024, a request rewound and sent again from one buffer,
 * each answered before the next),
 * for a device id no device has, so the module refuses each once genetlink
 * has parsed it (attr_device(), kmod/netlink.c).  What any request pays on
 * this path: the syscall, netlink_sendmsg()'s copy into an skb
 * (net/netlink/af_netlink.c), genetlink's parse, and the acknowledgement,
 * capped (NETLINK_CAP_ACK) as the daemon's are.  Its time beside the
 * restore's work in userspace (bench-core restart guest) and the daemon's
 * exec is the restart row's floor in the guest.
 */
#define SEND_NO_DEVICE		(HBMGUARD_MAX_DEVICES - 1)	/* the last id, made last */

struct nl_request {
	struct nlmsghdr n;
	struct genlmsghdr g;
};

static void *put_attr(char *at, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *a = (struct nlattr *)at;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (data)
		memcpy(at + NLA_HDRLEN, data, len);
	return at + NLA_ALIGN(a->nla_len);
}

/* One request on @fd, answered: the answer's error (0: an ack), or -errno. */
static int nl_exchange(int fd, const void *req, size_t len, char *reply, size_t cap)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)reply;
	ssize_t n;

	if (send(fd, req, len, 0) != (ssize_t)len)
		return -errno;
	n = recv(fd, reply, cap, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < NLMSG_HDRLEN || !NLMSG_OK(h, (size_t)n))
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR)
		return h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)) ? -EBADMSG :
		       ((const struct nlmsgerr *)NLMSG_DATA(h))->error;
	return 0;
}

/* HBMGUARD_GENL_NAME's id, asked of the controller; 0 if not found. */
static uint16_t family_id(int fd)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nl_request *r = (struct nl_request *)buf;
	char *end = buf + NLMSG_SPACE(GENL_HDRLEN), *p;
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

	memset(buf, 0, sizeof(buf));
	end = put_attr(end, CTRL_ATTR_FAMILY_NAME, HBMGUARD_GENL_NAME, sizeof(HBMGUARD_GENL_NAME));
	r->n = (struct nlmsghdr){ .nlmsg_len = end - buf, .nlmsg_type = GENL_ID_CTRL,
				  .nlmsg_flags = NLM_F_REQUEST };
	r->g = (struct genlmsghdr){ .cmd = CTRL_CMD_GETFAMILY, .version = 1 };
	if (nl_exchange(fd, buf, end - buf, buf, sizeof(buf)) || h->nlmsg_type != GENL_ID_CTRL)
		return 0;
	for (p = (char *)NLMSG_DATA(h) + GENL_HDRLEN; p + NLA_HDRLEN <= buf + h->nlmsg_len;) {
		const struct nlattr *a = (const struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
			return *(const uint16_t *)(p + NLA_HDRLEN);
		p += NLA_ALIGN(a->nla_len);
	}
	return 0;
}

static int cmd_send(size_t pages)
{
	const size_t rec = sizeof(struct hbmguard_restore_record);
	size_t bytes = PACKED_HEAD_BYTES + RESTORE_MAX_EXTENTS * rec, sent, size;
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC), on = 1, sndbuf;
	char *buf = malloc(bytes), reply[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	uint32_t no_device = SEND_NO_DEVICE, record_size = rec;
	uint16_t family;
	double t;
	int err;

	if (fd < 0 || !buf) {
		perror("hbmstatebench: send");
		return 1;
	}
	/* The daemon's socket as set_request_buffer() and exchange() set it */
	sndbuf = 2 * bytes;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &on, sizeof(on)) ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &on, sizeof(on))) {
		perror("hbmstatebench: send: setsockopt");
		return 1;
	}
	family = family_id(fd);
	if (!family) {
		fprintf(stderr, "hbmstatebench: send: no %s family\n", HBMGUARD_GENL_NAME);
		return 1;
	}
	memset(buf, 0, bytes);	/* faulted in, as the daemon's packing does */
	t = now_ns();
	for (sent = 0; sent < pages; sent += size) {
		struct nl_request *r = (struct nl_request *)buf;
		char *end = buf + NLMSG_SPACE(GENL_HDRLEN);
		size_t i;

		size = pages - sent < RESTORE_MAX_EXTENTS ? pages - sent : RESTORE_MAX_EXTENTS;
		end = put_attr(end, HBMGUARD_A_DEVICE_ID, &no_device, sizeof(no_device));
		end = put_attr(end, HBMGUARD_A_RECORD_SIZE, &record_size, sizeof(record_size));
		for (i = 0; i < size; i += RECORDS_PER_ATTR)
			end = put_attr(end, HBMGUARD_A_RECORDS, NULL,
				       (size - i < RECORDS_PER_ATTR ? size - i : RECORDS_PER_ATTR) * rec);
		r->n = (struct nlmsghdr){ .nlmsg_len = end - buf, .nlmsg_type = family,
					  .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK };
		r->g = (struct genlmsghdr){ .cmd = HBMGUARD_CMD_RESTORE,
					    .version = HBMGUARD_GENL_VERSION };
		err = nl_exchange(fd, buf, end - buf, reply, sizeof(reply));
		if (err != -ENODEV) {
			fprintf(stderr, "hbmstatebench: send: %s, not the refusal expected\n",
				err ? strerror(-err) : "accepted");
			return 1;
		}
	}
	printf("%.0f\n", now_ns() - t);
	free(buf);
	close(fd);
	return 0;
}

static int cmd_run(char **argv)
{
	double t0 = now_ns();
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "hbmstatebench: %s did not exit 0\n", argv[0]);
		return 1;
	}
	printf("%.0f\n", now_ns() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "write"))
		return cmd_write(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "inject"))
		return cmd_inject(strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0),
				  strtoull(argv[4], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "until"))
		return cmd_until(strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "map"))
		return cmd_map(strtoul(argv[2], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "proc"))
		return cmd_proc(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "send")) {
		char *end;
		unsigned long long pages = strtoull(argv[2], &end, 0);

		if (!*argv[2] || *end || argv[2][0] == '-' || pages > 1ULL << 32) {
			fprintf(stderr, "hbmstatebench: send: PAGES: 0 to 2^32, not '%s'\n", argv[2]);
			return 2;
		}
		return cmd_send(pages);
	}
	if (argc >= 3 && !strcmp(argv[1], "run"))
		return cmd_run(argv + 2);
	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%.0f\n", now_ns());
		return 0;
	}
	fprintf(stderr, "usage: hbmstatebench write DIR IDENTITY PAGES | read DIR IDENTITY |\n"
		"       inject DEV COUNT FIRST | until DEV PAGES | map DEV | proc PID | now |\n"
		"       send PAGES | run CMD [ARG...]\n");
	return 2;
}
