// SPDX-License-Identifier: GPL-2.0
/*
 * hbmctl: the operator's view of hbmguard.  Reads go straight to
 * /dev/hbmguard, so they work whether or not the daemon runs; retire and
 * clear go through hbmguardd's control socket when it runs, so that they
 * are on disk before hbmctl says done, and to the kernel directly when not.
 *
 *   hbmctl [--json] status             module, daemon and device summary
 *   hbmctl [--json] devices            one line per device
 *   hbmctl [--json] pages DEV          the bad-page table of a device
 *   hbmctl [--json] translate DEV OFFSET
 *   hbmctl retire DEV OFFSET [LENGTH] [--pending]
 *   hbmctl clear DEV OFFSET LENGTH
 *   hbmctl inject DEV ce|ue|poison OFFSET [COUNT]
 *   hbmctl policy DEV [ce_threshold=N] [ce_window=SECONDS] [retire_limit=PAGES]
 *   hbmctl sim-create NAME SIZE [page_size=N] [spares=N] [identity=ID]
 *   hbmctl sim-destroy DEV
 *   hbmctl [--json] watch [COUNT]      print events as they happen
 *   hbmctl export                      every device and its table, as JSON
 *   hbmctl [--json] ranks              training ranks registered with hbmguardd
 *   hbmctl [--json] incidents          rank recoveries, each step with its time
 *   hbmctl [--json] gpus               GPUs: the driver's report beside hbmguard's
 *
 * --socket PATH names hbmguardd's control socket (default
 * /run/hbmguard/control.sock).  DEV is a device id or name.  Sizes and
 * offsets take 0x and K, M, G, T.
 * Exit status: 0 success, 1 the kernel or the daemon refused (the message
 * says why; status: some state is not on disk yet), 2 bad usage,
 * 3 /dev/hbmguard missing (module not loaded).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdalign.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/hbmguard.h>

#include "ctl.h"
#include "hbmguard.h"

#define DEV_NODE "/dev/" HBMGUARD_DEVICE_NAME

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_NODEV = 3 };

static int fd = -1;
static bool json;
static const char *control_socket = HBM_CTL_SOCKET;

static const char *const state_names[] = {
	[HBMGUARD_STATE_CLEAN] = "clean", [HBMGUARD_STATE_PENDING] = "pending",
	[HBMGUARD_STATE_RETIRED] = "retired", [HBMGUARD_STATE_FAILED] = "failed",
};
static const char *const source_names[] = {
	[HBMGUARD_SOURCE_NONE] = "-", [HBMGUARD_SOURCE_UE] = "ue",
	[HBMGUARD_SOURCE_CE_THRESHOLD] = "ce-threshold",
	[HBMGUARD_SOURCE_POISON] = "poison", [HBMGUARD_SOURCE_ADMIN] = "admin",
	[HBMGUARD_SOURCE_RESTORED] = "restored", [HBMGUARD_SOURCE_DRIVER] = "driver",
};
static const char *const health_names[] = {
	[HBMGUARD_HEALTH_OK] = "ok", [HBMGUARD_HEALTH_DEGRADED] = "degraded",
	[HBMGUARD_HEALTH_RMA] = "rma", [HBMGUARD_HEALTH_RESET_REQUIRED] = "reset-required",
};
static const char *const error_names[] = {
	[HBMGUARD_ERROR_CE] = "ce", [HBMGUARD_ERROR_UE] = "ue",
	[HBMGUARD_ERROR_POISON] = "poison",
};

#define NAME(table, i) \
	((size_t)(i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : "?")

static void usage(const char *why)
{
	if (why)
		fprintf(stderr, "hbmctl: %s\n", why);
	fprintf(stderr, "usage: hbmctl [--json] [--socket PATH] COMMAND\n"
		"  status | devices | pages DEV | translate DEV OFFSET | watch [COUNT] | export\n"
		"  ranks | incidents | gpus\n"
		"  retire DEV OFFSET [LENGTH] [--pending] | clear DEV OFFSET LENGTH\n"
		"  inject DEV ce|ue|poison OFFSET [COUNT] | policy DEV [key=value...]\n"
		"  sim-create NAME SIZE [page_size=N] [spares=N] [identity=ID] | sim-destroy DEV\n"
		"See hbmctl(8).\n");
	exit(EXIT_USAGE);
}

/* The kernel said no: say what it means for the operator. */
static void refused(const char *what)
{
	const char *hint = "";

	switch (errno) {
	case EPERM:
		hint = " (needs root: CAP_SYS_ADMIN)";
		break;
	case ENODEV:
		hint = " (no such device: see 'hbmctl devices')";
		break;
	case ERANGE:
		hint = " (outside the device's usable size)";
		break;
	case EINVAL:
		hint = " (offsets and lengths must be page aligned; see hbmctl devices)";
		break;
	case EEXIST:
		hint = " (a device with that name or identity exists)";
		break;
	}
	fprintf(stderr, "hbmctl: %s: %s%s\n", what, strerror(errno), hint);
	exit(EXIT_REFUSED);
}

static void open_node(int flags)
{
	fd = open(DEV_NODE, flags | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && (flags & O_ACCMODE) == O_RDWR)
		fd = open(DEV_NODE, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "hbmctl: %s: %s%s\n", DEV_NODE, strerror(errno),
			errno == ENOENT ? " (is the module loaded? modprobe hbmguard)" :
			errno == EACCES ? " (needs root or the hbmguard group)" : "");
		exit(errno == ENOENT ? EXIT_NODEV : EXIT_REFUSED);
	}
}

static uint64_t parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		goto bad;
	switch (*end) {
	case 'T': shift += 10; /* fall through */
	case 'G': shift += 10; /* fall through */
	case 'M': shift += 10; /* fall through */
	case 'K': shift += 10; end++; break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		goto bad;
	return (uint64_t)v << shift;
bad:
	fprintf(stderr, "hbmctl: %s '%s' is not a number (e.g. 4096, 0x1000, 2M)\n",
		what, s);
	exit(EXIT_USAGE);
}

static void get_device(uint32_t id, struct hbmguard_device_info *di)
{
	memset(di, 0, sizeof(*di));
	di->size = sizeof(*di);
	di->device = id;
	if (ioctl(fd, HBMGUARD_IOC_GET_DEVICE, di))
		refused("get device");
}

static uint32_t list_devices(uint32_t *ids, uint32_t max)
{
	struct hbmguard_device_list l = { .size = sizeof(l), .capacity = max,
					  .ids = (uintptr_t)ids };

	if (ioctl(fd, HBMGUARD_IOC_LIST_DEVICES, &l))
		refused("list devices");
	return l.count < max ? l.count : max;
}

/* A device by name, identity or id. */
static uint32_t device_arg(const char *s)
{
	struct hbmguard_device_info di = { .size = sizeof(di) };
	char *end;
	unsigned long id = strtoul(s, &end, 10);
	uint32_t found;

	if (!hbmguard_device_find(fd, s, &found))
		return found;
	di.device = id;
	if (*s && !*end && id <= UINT32_MAX && !ioctl(fd, HBMGUARD_IOC_GET_DEVICE, &di))
		return id;
	fprintf(stderr, "hbmctl: no device '%s' (see 'hbmctl devices')\n", s);
	exit(EXIT_REFUSED);
}

static const char *fmt_size(char *buf, size_t len, uint64_t bytes)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (bytes >= 1024 && !(bytes % 1024) && u < 3) {
		bytes /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, bytes);
	else
		snprintf(buf, len, "%" PRIu64 "%c", bytes, units[u]);
	return buf;
}

/*
 * JSON output: objects of numbers and strings, one document per command
 * (one per line for watch), for jq and scripts.
 */
static void json_str(const char *key, const char *v, bool more)
{
	char out[2048];

	printf("\"%s\":\"%s\"%s", key, hbm_ctl_escape(out, sizeof(out), v, true),
	       more ? "," : "");
}

/*
 * A name for the terminal: names come from the kernel and from whoever
 * talks to the daemon, and are shown escaped (see hbm_ctl_escape()).  Up
 * to four at once, for one printf().
 */
static const char *esc(const char *s)
{
	static char out[4][512];
	static unsigned int next;

	return hbm_ctl_escape(out[next++ % 4], sizeof(out[0]), s, false);
}

static void json_u64(const char *key, uint64_t v, bool more)
{
	printf("\"%s\":%" PRIu64 "%s", key, v, more ? "," : "");
}

static void device_json(uint32_t id, const struct hbmguard_device_info *di)
{
	printf("{");
	json_u64("id", id, true);
	json_str("name", di->name, true);
	json_str("identity", di->identity, true);
	json_u64("hbm_size", di->hbm_size, true);
	json_u64("usable_size", di->usable_size, true);
	json_u64("page_size", di->page_size, true);
	json_u64("retired", di->nr_retired, true);
	json_u64("pending", di->nr_pending, true);
	json_u64("failed", di->nr_failed, true);
	json_u64("spare_total", di->spare_total, true);
	json_u64("spare_used", di->spare_used, true);
	json_u64("spare_bad", di->spare_bad, true);
	json_str("health", NAME(health_names, di->health), true);
	json_u64("ce_threshold", di->policy.ce_threshold, true);
	json_u64("ce_window", di->policy.ce_window, true);
	json_u64("retire_limit", di->policy.retire_limit, true);
	json_u64("errors_dropped", di->errors_dropped, false);
	printf("}");
}

static int cmd_devices(void)
{
	uint32_t ids[HBMGUARD_MAX_DEVICES], n = list_devices(ids, HBMGUARD_MAX_DEVICES), i;
	struct hbmguard_device_info di;

	if (json) {
		printf("[");
		for (i = 0; i < n; i++) {
			get_device(ids[i], &di);
			device_json(ids[i], &di);
			printf("%s", i + 1 < n ? "," : "");
		}
		printf("]\n");
		return 0;
	}
	printf("%-4s %-10s %-20s %8s %6s %8s %8s %8s %7s %-8s %s\n", "ID", "NAME",
	       "IDENTITY", "HBM", "PAGE", "RETIRED", "PENDING", "FAILED", "SPARES",
	       "HEALTH", "DROPPED");
	for (i = 0; i < n; i++) {
		char size[24];

		get_device(ids[i], &di);
		printf("%-4u %-10s %-20s %8s %6u %8u %8u %8u %3u/%-3u %-8s %" PRIu64 "\n",
		       ids[i], esc(di.name), esc(di.identity),
		       fmt_size(size, sizeof(size), di.hbm_size), di.page_size,
		       di.nr_retired, di.nr_pending, di.nr_failed,
		       di.spare_total - di.spare_used - di.spare_bad, di.spare_total,
		       NAME(health_names, di.health), (uint64_t)di.errors_dropped);
	}
	return 0;
}

/*
 * hbmguardd's control socket: one request, one reply, sent with the proof
 * of CAP_SYS_ADMIN when hbmctl has it (ctl.h), so that an administrator
 * gets through however many connections others hold.  Returns the reply's
 * error (0 or a negative errno), 1 when no daemon listens, or -EUSERS when
 * the daemon turned the connection away for capacity (its answer, or the
 * connection closed without one).
 */
static int ask_daemon(uint16_t type, const void *body, void *reply_body)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct hbm_ctl_header h;
	const void *rbody;
	ssize_t n;
	size_t len;
	int s = hbm_ctl_connect(control_socket), err;

	if (s == -ENAMETOOLONG)
		usage("the control socket path is too long");
	if (s < 0)
		return 1;
	len = hbm_ctl_encode(pkt, sizeof(pkt), type, 1, 0, body);
	err = hbm_ctl_send(s, pkt, len, true);
	if (err) {
		errno = -err;
		n = -1;
	} else {
		n = recv(s, pkt, sizeof(pkt), 0);
	}
	close(s);
	if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
		return -EUSERS;
	if (n < 0) {
		fprintf(stderr, "hbmctl: hbmguardd at %s: %s\n", control_socket,
			strerror(errno));
		exit(EXIT_REFUSED);
	}
	err = hbm_ctl_decode(pkt, n, true, &h, &rbody);
	if (err || h.type != (type | HBM_CTL_REPLY) || h.seq != 1) {
		fprintf(stderr, "hbmctl: hbmguardd at %s answered a bad packet (%s): is it the same version?\n",
			control_socket, strerror(err ? -err : EBADMSG));
		exit(EXIT_REFUSED);
	}
	if (!h.error && reply_body)
		memcpy(reply_body, rbody, hbm_ctl_body_size(h.type));
	return h.error;
}

/* Return: 1 when some state is not on disk yet, else 0. */
static int print_daemon_status(void)
{
	struct hbm_ctl_status st;
	char started[32];
	time_t t;
	int err = ask_daemon(HBM_CTL_STATUS, NULL, &st);

	if (err) {
		if (json)
			printf("\"daemon\":null,");
		else if (err == -EUSERS)
			printf("hbmguardd: running, but it turned this request away "
			       "(too many connections)\n");
		else
			printf("hbmguardd: not running (%s): the tables are not being saved\n",
			       err == 1 ? "no answer on the control socket" : strerror(-err));
		return 0;
	}
	if (json) {
		printf("\"daemon\":{");
		json_u64("pid", st.pid, true);
		json_u64("started", st.started, true);
		json_u64("events", st.events, true);
		json_u64("resyncs", st.resyncs, true);
		json_u64("stored_extents", st.stored_extents, true);
		json_u64("stored_pages", st.stored_pages, true);
		json_u64("last_save", st.last_save, true);
		printf("\"last_save_error\":%d,", st.last_save_error);
		json_u64("unsaved", st.unsaved, true);
		json_str("state_dir", st.state_dir, false);
		printf("},");
		return st.unsaved != 0;
	}
	t = (time_t)st.started;
	strftime(started, sizeof(started), "%F %T", gmtime(&t));
	printf("hbmguardd: running, pid %u since %s UTC; %" PRIu64 " bad pages kept in %"
	       PRIu64 " extents in %s; %" PRIu64 " events, %" PRIu64 " resyncs\n",
	       st.pid, started, st.stored_pages, st.stored_extents, esc(st.state_dir),
	       st.events, st.resyncs);
	if (st.unsaved)
		printf("hbmguardd: %u state files NOT SAVED (%s): retrying\n", st.unsaved,
		       strerror(-st.last_save_error));
	return st.unsaved != 0;
}

/* Exit status 1 while some state is not durable. */
static int cmd_status(void)
{
	struct hbmguard_info info = { .size = sizeof(info) };
	int unsaved;

	if (ioctl(fd, HBMGUARD_IOC_GET_INFO, &info))
		refused("get info");
	if (json) {
		printf("{\"module\":{");
		json_u64("api", info.version, true);
		json_u64("devices", info.nr_devices, true);
		json_u64("generation", info.generation, true);
		json_u64("seqnum", info.seqnum, false);
		printf("},");
		unsaved = print_daemon_status();
		printf("\"devices\":");
		cmd_devices();
		printf("}\n");
		return unsaved;
	}
	printf("hbmguard API %u: %u devices, generation %" PRIu64
	       ", %" PRIu64 " events\n", info.version, info.nr_devices,
	       (uint64_t)info.generation, (uint64_t)info.seqnum);
	unsaved = print_daemon_status();
	printf("\n");
	return cmd_devices() || unsaved;
}

static void extent_json(const struct hbmguard_extent *e, bool more)
{
	printf("{");
	json_u64("offset", e->offset, true);
	json_u64("length", e->length, true);
	if (e->spare_offset != HBMGUARD_NO_SPARE)
		json_u64("spare_offset", e->spare_offset, true);
	json_str("state", NAME(state_names, e->state), true);
	json_str("source", NAME(source_names, e->source), true);
	json_u64("errors", e->error_count, true);
	json_u64("first_seen", e->first_seen, true);
	json_u64("last_seen", e->last_seen, false);
	printf("}%s", more ? "," : "");
}

static void extent_line(const struct hbmguard_extent *e, uint32_t page_size)
{
	time_t t = (time_t)e->last_seen;
	char when[32], spare[24] = "-";

	strftime(when, sizeof(when), "%F %T", gmtime(&t));
	if (e->spare_offset != HBMGUARD_NO_SPARE)
		snprintf(spare, sizeof(spare), "0x%" PRIx64, (uint64_t)e->spare_offset);
	printf("0x%-16" PRIx64 " %8" PRIu64 " %-18s %-8s %-12s %6u %-20s\n",
	       (uint64_t)e->offset, (uint64_t)(e->length / page_size), spare,
	       NAME(state_names, e->state), NAME(source_names, e->source),
	       e->error_count, when);
}

/* Every extent of a device, in rounds of 1024, to @each. */
static void walk_extents(uint32_t dev, const struct hbmguard_device_info *di,
			 void (*each)(const struct hbmguard_extent *, uint32_t, bool))
{
	static struct hbmguard_extent ext[1024];
	struct hbmguard_extent_query q;
	uint64_t start = 0;
	uint32_t i;
	bool first = true;

	do {
		q = (struct hbmguard_extent_query){
			.size = sizeof(q), .device = dev, .entry_size = sizeof(ext[0]),
			.start = start, .entries = (uintptr_t)ext, .capacity = 1024,
		};
		if (ioctl(fd, HBMGUARD_IOC_LIST_BAD, &q))
			refused("list bad pages");
		for (i = 0; i < q.count; i++, first = false)
			each(&ext[i], di->page_size, first);
		start = q.next;
	} while (q.count && start < di->usable_size);
}

static void each_line(const struct hbmguard_extent *e, uint32_t page_size, bool first)
{
	(void)first;
	extent_line(e, page_size);
}

static void each_json(const struct hbmguard_extent *e, uint32_t page_size, bool first)
{
	(void)page_size;
	if (!first)
		printf(",");
	extent_json(e, false);
}

static int cmd_pages(uint32_t dev)
{
	struct hbmguard_device_info di;

	get_device(dev, &di);
	if (json) {
		printf("{\"device\":");
		device_json(dev, &di);
		printf(",\"extents\":[");
		walk_extents(dev, &di, each_json);
		printf("]}\n");
		return 0;
	}
	printf("%s (%s): %u retired, %u pending, %u failed pages of %u bytes; "
	       "health %s\n", esc(di.name), esc(di.identity), di.nr_retired, di.nr_pending,
	       di.nr_failed, di.page_size, NAME(health_names, di.health));
	printf("%-18s %8s %-18s %-8s %-12s %6s %-20s\n", "OFFSET", "PAGES",
	       "SPARE", "STATE", "SOURCE", "ERRORS", "LAST SEEN (UTC)");
	walk_extents(dev, &di, each_line);
	return 0;
}

static void no_daemon(int err)
{
	fprintf(stderr, "hbmctl: hbmguardd at %s: %s\n", control_socket,
		err == 1 ? "not running (systemctl start hbmguardd)" : strerror(-err));
	exit(EXIT_REFUSED);
}

/* The index-th entry of one of the daemon's lists; false past its end. */
static bool daemon_entry(uint16_t type, uint32_t index, void *out)
{
	struct hbm_ctl_index ix = { .index = index };
	int err = ask_daemon(type, &ix, out);

	if (err == -ENOENT)
		return false;
	if (err)
		no_daemon(err);
	return true;
}

/* The training ranks registered with the daemon. */
static int cmd_ranks(void)
{
	static const char *const states[] = { "?", "running", "paused", "restored" };
	struct hbm_ctl_rank_info ri;
	uint32_t i;

	if (json)
		printf("[");
	else
		printf("%-20s %6s %6s %8s %6s %-20s %-8s\n", "JOB", "RANK", "WORLD",
		       "PID", "UID", "DEVICE", "STATE");
	for (i = 0; daemon_entry(HBM_CTL_RANK_GET, i, &ri); i++) {
		if (json) {
			printf("%s{", i ? "," : "");
			json_str("job", ri.rank.job, true);
			json_u64("rank", ri.rank.rank, true);
			json_u64("world_size", ri.rank.world_size, true);
			json_u64("local_rank", ri.rank.local_rank, true);
			json_u64("pid", ri.pid, true);
			json_u64("uid", ri.uid, true);
			json_str("device", ri.rank.device, true);
			json_str("state", NAME(states, ri.state), false);
			printf("}");
		} else {
			printf("%-20s %6u %6u %8u %6u %-20s %-8s\n", esc(ri.rank.job),
			       ri.rank.rank, ri.rank.world_size, ri.pid, ri.uid,
			       esc(ri.rank.device),
			       NAME(states, ri.state));
		}
	}
	if (json)
		printf("]\n");
	return 0;
}

/* The incidents the daemon keeps, each transition with its time. */
static int cmd_incidents(void)
{
	static const char *const states[] = {
		"?", "detected", "pausing", "isolated", "restoring", "resumed", "escalated",
	};
	struct hbm_ctl_incident in;
	uint32_t i, st;
	bool first;

	if (json)
		printf("[");
	for (i = 0; daemon_entry(HBM_CTL_INCIDENT_GET, i, &in); i++) {
		if (json) {
			printf("%s{", i ? "," : "");
			json_u64("id", in.id, true);
			json_str("job", in.job, true);
			json_u64("failed_rank", in.failed_rank, true);
			json_str("device", in.device, true);
			json_u64("offset", in.offset, true);
			json_u64("length", in.length, true);
			json_str("state", NAME(states, in.state), true);
			json_str("reason", in.reason, true);
			printf("\"at_us\":{");
			for (st = 1, first = true; st < __HBM_INCIDENT_MAX; st++)
				if (in.at[st]) {
					printf("%s\"%s\":%" PRIu64, first ? "" : ",",
					       states[st], in.at[st]);
					first = false;
				}
			printf("}}");
			continue;
		}
		if (in.length == HBM_CTL_WHOLE_DEVICE)	/* an error without an address */
			printf("incident %" PRIu64 ": job %s, rank %u, %s, whole device",
			       in.id, esc(in.job), in.failed_rank, esc(in.device));
		else
			printf("incident %" PRIu64 ": job %s, rank %u, %s at 0x%" PRIx64 "+0x%"
			       PRIx64, in.id, esc(in.job), in.failed_rank, esc(in.device),
			       in.offset, in.length);
		printf(": %s%s%s%s\n", NAME(states, in.state), in.reason[0] ? " (" : "",
		       esc(in.reason), in.reason[0] ? ")" : "");
		for (st = 1; st < __HBM_INCIDENT_MAX; st++) {
			time_t t = in.at[st] / 1000000;
			char when[32];

			if (!in.at[st])
				continue;
			strftime(when, sizeof(when), "%F %T", gmtime(&t));
			printf("  %-10s %s.%06u UTC  +%.3f s\n", states[st], when,
			       (unsigned int)(in.at[st] % 1000000),
			       (in.at[st] - in.at[1]) / 1e6);
		}
	}
	if (json)
		printf("]\n");
	return 0;
}

/*
 * The module's table of GPU @g's device: retired and pending, when this
 * user may read /dev/hbmguard and the device is still @g's; else false.
 */
static bool gpu_table(const struct hbm_ctl_gpu *g, struct hbmguard_device_info *di)
{
	int node;
	bool ok;

	if (g->device == HBM_CTL_NO_DEVICE)
		return false;
	node = open(DEV_NODE, O_RDONLY | O_CLOEXEC);
	if (node < 0)
		return false;
	memset(di, 0, sizeof(*di));
	di->size = sizeof(*di);
	di->device = g->device;
	ok = !ioctl(node, HBMGUARD_IOC_GET_DEVICE, di) &&
	     !strncmp(di->identity, g->identity, sizeof(di->identity));
	close(node);
	return ok;
}

/* struct hbm_ctl_gpu's .sources, bit by bit */
static const char *const source_words[] = { "nvml", "amdgpu", "kmsg", "tracepoint" };

static const char *gpu_sources(uint32_t sources, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(source_words) / sizeof(source_words[0]); i++)
		if (sources & (1U << i))
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "", source_words[i]);
	return n ? buf : "-";
}

static void gpu_json(const struct hbm_ctl_gpu *g, const struct hbmguard_device_info *di,
		     bool table)
{
	size_t i;

	printf("{");
	json_str("identity", g->identity, true);
	json_str("pci", g->pci, true);
	json_str("vendor", g->vendor == HBM_CTL_GPU_AMDGPU ? "amdgpu" :
		 g->vendor == HBM_CTL_GPU_NVML ? "nvidia" : "", true);
	json_str("model", g->model, true);
	json_u64("size", g->size, true);
	if (g->device == HBM_CTL_NO_DEVICE)
		printf("\"device\":null,");
	else
		json_u64("device", g->device, true);
	json_str("name", g->name, true);
	printf("\"sources\":[");
	for (i = 0; i < sizeof(source_words) / sizeof(source_words[0]); i++)
		if (g->sources & (1U << i))
			printf("%s\"%s\"", g->sources & ((1U << i) - 1) ? "," : "", source_words[i]);
	printf("],");
	if (g->vendor)
		json_str("health", NAME(health_names, g->health), true);
	else	/* no driver's facts to derive it from */
		printf("\"health\":null,");
	printf("\"lost\":%s,\"partial\":%s,", g->flags & HBM_CTL_GPU_LOST ? "true" : "false",
	       g->flags & HBM_CTL_GPU_PARTIAL ? "true" : "false");
	printf("\"driver\":{");
	json_u64("retired_ue", g->retired_ue, true);
	json_u64("retired_ce", g->retired_ce, true);
	json_u64("pending", g->pending, true);
	json_u64("failed", g->failed, true);
	if (g->flags & HBM_CTL_GPU_REMAP)
		printf("\"remapped\":{\"corrected\":%u,\"uncorrected\":%u,\"pending\":%s,"
		       "\"failure\":%s},", g->remap_corrected, g->remap_uncorrected,
		       g->remap_pending ? "true" : "false", g->remap_failure ? "true" : "false");
	else
		printf("\"remapped\":null,");
	if (g->flags & HBM_CTL_GPU_ECC)
		printf("\"errors\":{\"ue\":%" PRIu64 ",\"ce\":%" PRIu64 "}},", g->ue, g->ce);
	else
		printf("\"errors\":null},");
	if (table)
		printf("\"table\":{\"retired\":%u,\"pending\":%u,\"failed\":%u},",
		       di->nr_retired, di->nr_pending, di->nr_failed);
	else
		printf("\"table\":null,");
	if (g->last_xid)
		printf("\"last_xid\":{\"xid\":%u,\"at_us\":%" PRIu64 "}}", g->last_xid,
		       g->last_xid_at);
	else
		printf("\"last_xid\":null}");
}

static void gpu_line(const struct hbm_ctl_gpu *g, const struct hbmguard_device_info *di,
		     bool table)
{
	char src[64], dev[160], remap[96], errors[64], tab[64], xid[64];
	time_t t = g->last_xid_at / 1000000;

	if (g->device == HBM_CTL_NO_DEVICE)
		snprintf(dev, sizeof(dev), "-");
	else if (!g->name[0])	/* no source found it: 'hbmctl devices' names it */
		snprintf(dev, sizeof(dev), "%u", g->device);
	else
		snprintf(dev, sizeof(dev), "%u %s", g->device, esc(g->name));
	if (g->flags & HBM_CTL_GPU_REMAP)
		snprintf(remap, sizeof(remap), "%u ce %u ue, remap pending %s, remap failed %s",
			 g->remap_corrected, g->remap_uncorrected, g->remap_pending ? "yes" : "no",
			 g->remap_failure ? "yes" : "no");
	else
		snprintf(remap, sizeof(remap), "-");
	if (g->flags & HBM_CTL_GPU_ECC)
		snprintf(errors, sizeof(errors), "%" PRIu64 " ue %" PRIu64 " ce", g->ue, g->ce);
	else
		snprintf(errors, sizeof(errors), "-");
	if (table)
		snprintf(tab, sizeof(tab), "retired %u, pending %u, failed %u", di->nr_retired,
			 di->nr_pending, di->nr_failed);
	else
		snprintf(tab, sizeof(tab), "-");
	if (g->last_xid) {
		char when[32];

		strftime(when, sizeof(when), "%F %T", gmtime(&t));
		snprintf(xid, sizeof(xid), "%u at %s UTC", g->last_xid, when);
	} else {
		snprintf(xid, sizeof(xid), "none");
	}
	printf("%s %s device %s sources %s health %s%s%s | driver: retired %u ue %u ce, "
	       "pending %u, failed %u, rows remapped %s, errors %s | table: %s | last xid %s\n",
	       esc(g->identity), esc(g->pci), dev, gpu_sources(g->sources, src, sizeof(src)),
	       g->vendor ? NAME(health_names, g->health) : "-",
	       g->flags & HBM_CTL_GPU_LOST ? " lost" : "",
	       g->flags & HBM_CTL_GPU_PARTIAL ? " partial" : "", g->retired_ue, g->retired_ce,
	       g->pending, g->failed, remap, errors, tab, xid);
}

/*
 * The GPUs the daemon found, each with its driver's report beside what
 * hbmguard made of it and the module's table of it (read here, as
 * 'hbmctl devices' does).  They are the daemon's: without it, no list.
 */
static int cmd_gpus(void)
{
	struct hbmguard_device_info di;
	struct hbm_ctl_gpu g;
	uint32_t i;

	/* Nothing printed before the daemon answered: no half list without it. */
	for (i = 0; daemon_entry(HBM_CTL_GPU_GET, i, &g); i++) {
		bool table = gpu_table(&g, &di);

		if (json) {
			printf("%s", i ? "," : "[");
			gpu_json(&g, &di, table);
		} else {
			gpu_line(&g, &di, table);
		}
	}
	if (json)
		printf("%s]\n", i ? "" : "[");
	return 0;
}

/* Every device with its table: what an RMA ticket or an audit wants. */
static int cmd_export(void)
{
	uint32_t ids[HBMGUARD_MAX_DEVICES], n = list_devices(ids, HBMGUARD_MAX_DEVICES), i;
	struct hbmguard_device_info di;

	printf("{\"exported\":%lld,\"devices\":[", (long long)time(NULL));
	for (i = 0; i < n; i++) {
		get_device(ids[i], &di);
		printf("{\"device\":");
		device_json(ids[i], &di);
		printf(",\"extents\":[");
		walk_extents(ids[i], &di, each_json);
		printf("]}%s", i + 1 < n ? "," : "");
	}
	printf("]}\n");
	return 0;
}

static int cmd_translate(uint32_t dev, uint64_t offset)
{
	struct hbmguard_translate tr = { .size = sizeof(tr), .device = dev,
					 .offset = offset };

	if (ioctl(fd, HBMGUARD_IOC_TRANSLATE, &tr))
		refused("translate");
	if (json) {
		printf("{");
		json_u64("offset", offset, true);
		json_u64("translated", tr.translated, true);
		json_str("state", NAME(state_names, tr.state), false);
		printf("}\n");
		return 0;
	}
	printf("0x%" PRIx64 " -> 0x%" PRIx64 " (%s)\n", offset,
	       (uint64_t)tr.translated, NAME(state_names, tr.state));
	return 0;
}

/*
 * Retire or clear: through hbmguardd when it runs, which answers once the
 * change is on disk; into the kernel directly when it does not (hbmguardd
 * takes the kernel's table into its files when it starts).  A clear made
 * without the daemon is not forgotten by its files: it says so.
 */
static int cmd_extent(unsigned long cmd, uint32_t dev, uint64_t offset,
		      uint64_t length, uint32_t flags)
{
	bool retire = cmd == HBMGUARD_IOC_RETIRE;
	struct hbmguard_extent_op x = {
		.size = sizeof(x), .flags = flags, .device = dev,
		.source = retire ? HBMGUARD_SOURCE_ADMIN : 0,
		.offset = offset, .length = length,
	};
	struct hbm_ctl_extent req = {
		.offset = offset, .length = length,
		.flags = flags & HBMGUARD_RETIRE_PENDING ? HBM_CTL_PENDING : 0,
	};
	struct hbmguard_device_info di;
	int err;

	get_device(dev, &di);
	strcpy(req.identity, di.identity);
	err = ask_daemon(retire ? HBM_CTL_RETIRE : HBM_CTL_CLEAR, &req, NULL);
	if (err == 0)
		return 0;
	if (err != 1 && err != -EUSERS) {
		errno = -err;
		refused(retire ? "retire (hbmguardd)" : "clear (hbmguardd)");
	}
	if (ioctl(fd, cmd, &x))
		refused(retire ? "retire" : "clear");
	if (err == -EUSERS)	/* it runs, and takes the kernel's event */
		fprintf(stderr, "hbmctl: hbmguardd is busy (too many connections): %s\n",
			retire ? "done in the kernel; the daemon saves it from the kernel's event" :
			"done in the kernel directly");
	else
		fprintf(stderr, "hbmctl: hbmguardd is not running: %s\n", retire ?
			"done in the kernel; it is saved when the daemon starts" :
			"done in the kernel only; the daemon's files still hold these pages "
			"and restore them at its next start");
	return 0;
}

static int cmd_inject(uint32_t dev, const char *kind, uint64_t offset,
		      uint32_t count)
{
	struct hbmguard_inject in = { .size = sizeof(in), .device = dev,
				      .offset = offset, .count = count };

	for (in.kind = HBMGUARD_ERROR_CE; in.kind < __HBMGUARD_ERROR_MAX; in.kind++)
		if (!strcmp(kind, error_names[in.kind]))
			break;
	if (in.kind == __HBMGUARD_ERROR_MAX)
		usage("the error kind is one of ce, ue, poison");
	if (ioctl(fd, HBMGUARD_IOC_INJECT, &in))
		refused("inject");
	return 0;
}

static int cmd_policy(uint32_t dev, int argc, char **argv)
{
	struct hbmguard_policy p = { .size = sizeof(p), .device = dev };
	struct hbmguard_device_info di;
	int i;

	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		uint64_t v;

		if (!eq)
			usage("policy settings are key=value");
		*eq = 0;
		v = parse_size(eq + 1, argv[i]);
		if (v > UINT32_MAX)
			usage("policy values fit in 32 bits");
		if (!strcmp(argv[i], "ce_threshold")) {
			p.flags |= HBMGUARD_POLICY_CE_THRESHOLD;
			p.params.ce_threshold = v;
		} else if (!strcmp(argv[i], "ce_window")) {
			p.flags |= HBMGUARD_POLICY_CE_WINDOW;
			p.params.ce_window = v;
		} else if (!strcmp(argv[i], "retire_limit")) {
			p.flags |= HBMGUARD_POLICY_RETIRE_LIMIT;
			p.params.retire_limit = v;
		} else {
			usage("policy keys: ce_threshold, ce_window, retire_limit");
		}
	}
	if (p.flags && ioctl(fd, HBMGUARD_IOC_SET_POLICY, &p))
		refused("set policy");
	get_device(dev, &di);
	printf("%s: ce_threshold=%u ce_window=%u retire_limit=%u\n", esc(di.name),
	       di.policy.ce_threshold, di.policy.ce_window, di.policy.retire_limit);
	return 0;
}

static int cmd_sim_create(int argc, char **argv)
{
	struct hbmguard_sim_create sc = { .size = sizeof(sc), .page_size = 4096 };
	int i;

	if (argc < 2)
		usage("sim-create NAME SIZE");
	if (strlen(argv[0]) >= sizeof(sc.name))
		usage("the name is at most 31 characters");
	strcpy(sc.name, argv[0]);
	sc.hbm_size = parse_size(argv[1], "size");
	for (i = 2; i < argc; i++) {
		if (!strncmp(argv[i], "page_size=", 10))
			sc.page_size = parse_size(argv[i] + 10, "page_size");
		else if (!strncmp(argv[i], "spares=", 7))
			sc.spare_pages = parse_size(argv[i] + 7, "spares");
		else if (!strncmp(argv[i], "identity=", 9) &&
			 strlen(argv[i] + 9) < sizeof(sc.identity))
			strcpy(sc.identity, argv[i] + 9);
		else
			usage("sim-create options: page_size=N spares=N identity=ID");
	}
	if (ioctl(fd, HBMGUARD_IOC_SIM_CREATE, &sc))
		refused("create simulated device");
	printf("%u\n", sc.device);
	return 0;
}

static void print_event(const struct hbmguard_event *ev)
{
	static const char *const types[] = {
		[HBMGUARD_EVENT_ERROR] = "error", [HBMGUARD_EVENT_RETIRED] = "retired",
		[HBMGUARD_EVENT_PENDING] = "pending", [HBMGUARD_EVENT_FAILED] = "failed",
		[HBMGUARD_EVENT_CLEARED] = "cleared", [HBMGUARD_EVENT_HEALTH] = "health",
		[HBMGUARD_EVENT_POLICY] = "policy",
		[HBMGUARD_EVENT_DEVICE_ADDED] = "device-added",
		[HBMGUARD_EVENT_DEVICE_REMOVED] = "device-removed",
		[HBMGUARD_EVENT_OVERFLOW] = "overflow",
		[HBMGUARD_EVENT_DEVICE_ERROR] = "device-error",
		[HBMGUARD_EVENT_RESTORED] = "restored",
	};

	if (json) {
		printf("{");
		json_u64("seqnum", ev->seqnum, true);
		json_str("type", NAME(types, ev->type), true);
		json_u64("timestamp_ns", ev->timestamp, true);
		json_u64("device", ev->device, true);
		json_u64("offset", ev->offset, true);
		json_u64("length", ev->length, true);
		json_u64("source", ev->source, true);
		json_u64("state", ev->state, true);
		json_u64("count", ev->count, true);
		json_u64("aux", ev->aux, false);
		printf("}\n");
		return;
	}
	printf("#%-6" PRIu64 " %-14s dev %u", (uint64_t)ev->seqnum,
	       NAME(types, ev->type), ev->device);
	switch (ev->type) {
	case HBMGUARD_EVENT_ERROR:
		printf(" %s x%u at 0x%" PRIx64 "\n", NAME(error_names, ev->state),
		       ev->count, (uint64_t)ev->offset);
		break;
	case HBMGUARD_EVENT_RETIRED:
	case HBMGUARD_EVENT_PENDING:
	case HBMGUARD_EVENT_FAILED:
	case HBMGUARD_EVENT_CLEARED:
		printf(" %u pages in 0x%" PRIx64 "+0x%" PRIx64 " (%s)\n", ev->count,
		       (uint64_t)ev->offset, (uint64_t)ev->length,
		       NAME(source_names, ev->source));
		break;
	case HBMGUARD_EVENT_HEALTH:
		printf(" %s -> %s (%u bad pages)\n", NAME(health_names, ev->aux),
		       NAME(health_names, ev->state), ev->count);
		break;
	case HBMGUARD_EVENT_OVERFLOW:
		printf(": %u events lost\n", ev->count);
		break;
	case HBMGUARD_EVENT_RESTORED:
		printf(" %u pages known bad from before (%u extents)\n", ev->count, ev->aux);
		break;
	default:
		printf("\n");
	}
}

static int cmd_watch(long count)
{
	struct hbmguard_event ev[64];
	ssize_t n;
	long seen = 0;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (count <= 0 || seen < count) {
		n = read(fd, ev, sizeof(ev));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			refused("read events");
		}
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]) &&
			    (count <= 0 || seen < count); i++, seen++)
			print_event(&ev[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;
	bool reads;

	for (argc--, argv++; argc > 0 && argv[0][0] == '-' && argv[0][1] == '-'; argc--, argv++) {
		if (!strcmp(argv[0], "--json")) {
			json = true;
		} else if (!strcmp(argv[0], "--socket") && argc > 1) {
			control_socket = argv[1];
			argc--;
			argv++;
		} else if (!strcmp(argv[0], "--help")) {
			usage(NULL);
		} else {
			usage("unknown option");
		}
	}
	cmd = argc > 0 ? argv[0] : "status";
	if (!strcmp(cmd, "-h"))
		usage(NULL);
	/* These ask the daemon only: they work without the module. */
	if (!strcmp(cmd, "ranks"))
		return cmd_ranks();
	if (!strcmp(cmd, "incidents"))
		return cmd_incidents();
	if (!strcmp(cmd, "gpus")) {
		if (argc > 1)
			usage("gpus takes no argument");
		return cmd_gpus();
	}
	reads = !strcmp(cmd, "status") || !strcmp(cmd, "devices") ||
		!strcmp(cmd, "pages") || !strcmp(cmd, "translate") ||
		!strcmp(cmd, "watch") || !strcmp(cmd, "export");
	open_node(reads ? O_RDONLY : O_RDWR);
	argc--;
	argv++;

	if (!strcmp(cmd, "status"))
		return cmd_status();
	if (!strcmp(cmd, "export"))
		return cmd_export();
	if (!strcmp(cmd, "devices"))
		return cmd_devices();
	if (!strcmp(cmd, "watch"))
		return cmd_watch(argc > 0 ? atol(argv[0]) : 0);
	if (!strcmp(cmd, "sim-create"))
		return cmd_sim_create(argc, argv);
	if (argc < 1)
		usage("which device?");
	if (!strcmp(cmd, "pages"))
		return cmd_pages(device_arg(argv[0]));
	if (!strcmp(cmd, "policy"))
		return cmd_policy(device_arg(argv[0]), argc - 1, argv + 1);
	if (!strcmp(cmd, "sim-destroy")) {
		struct hbmguard_device_ref ref = { .size = sizeof(ref),
						   .device = device_arg(argv[0]) };

		if (ioctl(fd, HBMGUARD_IOC_SIM_DESTROY, &ref))
			refused("destroy simulated device");
		return 0;
	}
	if (argc < 2)
		usage("which offset?");
	if (!strcmp(cmd, "translate"))
		return cmd_translate(device_arg(argv[0]), parse_size(argv[1], "offset"));
	if (!strcmp(cmd, "retire")) {
		struct hbmguard_device_info di;
		uint32_t dev = device_arg(argv[0]);
		bool pending = argc > 2 && !strcmp(argv[argc - 1], "--pending");
		uint64_t length;

		get_device(dev, &di);
		length = argc - pending > 2 ? parse_size(argv[2], "length") : di.page_size;
		return cmd_extent(HBMGUARD_IOC_RETIRE, dev,
				  parse_size(argv[1], "offset"), length,
				  pending ? HBMGUARD_RETIRE_PENDING : 0);
	}
	if (!strcmp(cmd, "clear")) {
		if (argc < 3)
			usage("clear DEV OFFSET LENGTH");
		return cmd_extent(HBMGUARD_IOC_CLEAR, device_arg(argv[0]),
				  parse_size(argv[1], "offset"),
				  parse_size(argv[2], "length"), 0);
	}
	if (!strcmp(cmd, "inject")) {
		if (argc < 3)
			usage("inject DEV ce|ue|poison OFFSET [COUNT]");
		return cmd_inject(device_arg(argv[0]), argv[1],
				  parse_size(argv[2], "offset"),
				  argc > 3 ? parse_size(argv[3], "count") : 1);
	}
	usage("unknown command");
	return EXIT_USAGE;
}
