// SPDX-License-Identifier: GPL-2.0
/*
 * hbmctl: the operator's view of hbmguard.  Reads go straight to
 * /dev/hbmguard, so they work whether or not the daemon runs; retire and
 * clear go through hbmguardd's control socket when it runs, so that they
 * are on disk before hbmctl says done, and to the kernel directly when not.
 *
 *   hbmctl [OPTIONS] status             module, daemon and device summary
 *   hbmctl [OPTIONS] devices            one line per device
 *   hbmctl [OPTIONS] pages DEV          the bad-page table of a device
 *   hbmctl [OPTIONS] translate DEV OFFSET
 *   hbmctl retire DEV OFFSET [LENGTH] [--pending]
 *   hbmctl clear DEV OFFSET LENGTH
 *   hbmctl inject DEV ce|ue|poison OFFSET [COUNT]
 *   hbmctl policy DEV [ce_threshold=N] [ce_window=SECONDS] [retire_limit=PAGES]
 *   hbmctl sim-create NAME SIZE [page_size=N] [spares=N] [identity=ID]
 *   hbmctl sim-destroy DEV
 *   hbmctl [OPTIONS] watch [COUNT]      print events as they happen
 *   hbmctl export                       every device and its table, as JSON
 *   hbmctl [OPTIONS] ranks              training ranks registered with hbmguardd
 *   hbmctl [OPTIONS] incidents          rank recoveries, each step with its time
 *   hbmctl [OPTIONS] gpus               GPUs: the driver's report beside hbmguard's
 *   hbmctl [OPTIONS] drain              why hbmguardd drained the node (Slurm, hook)
 *   hbmctl undrain                      clear those causes: the node resumes
 *   hbmctl [OPTIONS] advise --checkpoint-cost=SPAN --restart-cost=SPAN [--nodes=N]
 *                           [--window=SPAN]   how often to checkpoint (advise.c)
 *
 * Options go anywhere (getopt_long), before or after the command:
 * --json[=short|pretty|off] (systemd's form; a plain --json is short),
 * --no-legend, --socket PATH (hbmguardd's control socket, default
 * /run/hbmguard/control.sock), --help, --version.  DEV is a device id or
 * name.  Sizes and offsets take 0x and K, M, G, T.
 *
 * Exit status, one meaning each, status's as systemctl status's (LSB):
 * 0 success; 1 the kernel or the daemon refused (the message says why;
 * status: the daemon runs but some state is not on disk yet); 2 bad usage;
 * 3 hbmguardd is not running (status, and ranks, incidents, gpus, drain and undrain, which
 * only it can answer); 4 /dev/hbmguard missing (module not loaded: any
 * command that reads or changes the module's tables, status included);
 * 5 retire or clear done in the kernel, its save failed (retried).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
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

#include "advise.h"
#include "cli.h"
#include "ctl.h"
#include "hbmguard.h"
#include "timespan.h"

#define DEV_NODE "/dev/" HBMGUARD_DEVICE_NAME

enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_DOWN = 3, EXIT_NODEV = 4, EXIT_UNSAVED = 5 };

static int fd = -1;
static const char *control_socket = HBM_CTL_SOCKET;
static bool retire_pending;
static struct hbm_advise_in advise_in = { .nodes = 1 };
static const char *advise_option;	/* one was given: advise's only */

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

static const char *command_name;

/*
 * Bad usage: what was wrong, then the synopsis on stderr, exit 2 (--help
 * prints it on stdout: usage_print()).
 */
static void usage_print(FILE *out, const char *cmd);

static void __attribute__((format(printf, 1, 2))) usage(const char *why, ...)
{
	va_list ap;

	if (why) {
		fputs("hbmctl: ", stderr);
		va_start(ap, why);
		vfprintf(stderr, why, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	usage_print(stderr, command_name);
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
	uint64_t v;

	if (!hbm_bytes(s, &v))
		return v;
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
 * A name for the terminal: names come from the kernel and from whoever
 * talks to the daemon, and are shown escaped (see hbm_ctl_escape()).  Up
 * to four at once, for one printf().  JSON has its own: hbm_cli_str().
 */
static const char *esc(const char *s)
{
	static char out[4][512];
	static unsigned int next;

	return hbm_ctl_escape(out[next++ % 4], sizeof(out[0]), s, false);
}

static struct json_object *device_json(uint32_t id, const struct hbmguard_device_info *di)
{
	struct json_object *o = hbm_cli_obj();

	hbm_cli_add_u64(o, "id", id);
	hbm_cli_add_str(o, "name", di->name);
	hbm_cli_add_str(o, "identity", di->identity);
	hbm_cli_add_u64(o, "hbm_size", di->hbm_size);
	hbm_cli_add_u64(o, "usable_size", di->usable_size);
	hbm_cli_add_u64(o, "page_size", di->page_size);
	hbm_cli_add_u64(o, "retired", di->nr_retired);
	hbm_cli_add_u64(o, "pending", di->nr_pending);
	hbm_cli_add_u64(o, "failed", di->nr_failed);
	hbm_cli_add_u64(o, "spare_total", di->spare_total);
	hbm_cli_add_u64(o, "spare_used", di->spare_used);
	hbm_cli_add_u64(o, "spare_bad", di->spare_bad);
	hbm_cli_add_str(o, "health", NAME(health_names, di->health));
	hbm_cli_add_u64(o, "ce_threshold", di->policy.ce_threshold);
	hbm_cli_add_u64(o, "ce_window", di->policy.ce_window);
	hbm_cli_add_u64(o, "retire_limit", di->policy.retire_limit);
	if (di->added_seqnum)	/* else a kernel that counts no data loss */
		hbm_cli_add_u64(o, "data_lost", di->data_lost);
	hbm_cli_add_u64(o, "errors_dropped", di->errors_dropped);
	hbm_cli_add_u64(o, "ce_forgotten", di->ce_forgotten);
	return o;
}

/* Every device: as a JSON array, or printed as a table (then NULL). */
static struct json_object *devices(void)
{
	static const char *const head[] = {
		"ID", "NAME", "IDENTITY", "HBM", "PAGE", "RETIRED", "PENDING", "FAILED",
		"SPARES", "HEALTH", "FORGOTTEN", "DROPPED",
	};
	uint32_t ids[HBMGUARD_MAX_DEVICES], n = list_devices(ids, HBMGUARD_MAX_DEVICES), i;
	struct hbmguard_device_info di;
	struct json_object *arr;
	struct hbm_cli_table t;
	char size[24];

	if (hbm_cli_json) {
		arr = hbm_cli_arr();
		for (i = 0; i < n; i++) {
			get_device(ids[i], &di);
			hbm_cli_append(arr, device_json(ids[i], &di));
		}
		return arr;
	}
	hbm_cli_table_init(&t, 12, head, "lllrrrrrrlrr");
	for (i = 0; i < n; i++) {
		get_device(ids[i], &di);
		hbm_cli_cell(&t, "%u", ids[i]);
		hbm_cli_cell(&t, "%s", esc(di.name));
		hbm_cli_cell(&t, "%s", esc(di.identity));
		hbm_cli_cell(&t, "%s", fmt_size(size, sizeof(size), di.hbm_size));
		hbm_cli_cell(&t, "%u", di.page_size);
		hbm_cli_cell(&t, "%u", di.nr_retired);
		hbm_cli_cell(&t, "%u", di.nr_pending);
		hbm_cli_cell(&t, "%u", di.nr_failed);
		hbm_cli_cell(&t, "%u/%u", di.spare_total - di.spare_used - di.spare_bad,
			     di.spare_total);
		hbm_cli_cell(&t, "%s", NAME(health_names, di.health));
		hbm_cli_cell(&t, "%" PRIu64, (uint64_t)di.ce_forgotten);
		hbm_cli_cell(&t, "%" PRIu64, (uint64_t)di.errors_dropped);
	}
	hbm_cli_table_print(&t, stdout);
	return NULL;
}

static int cmd_devices(int argc, char **argv)
{
	struct json_object *arr = devices();

	(void)argc;
	(void)argv;
	if (arr)
		hbm_cli_json_print(arr);
	return 0;
}

/*
 * hbmguardd's control socket: one request, one reply, sent with the proof
 * of CAP_SYS_ADMIN when hbmctl has it (ctl.h), so that an administrator
 * gets through however many connections others hold.  Returns the reply's
 * error (0 or a negative errno), 1 when no daemon listens or none answered
 * within HBM_CTL_TIMEOUT_S (hbmguardd.socket's backlog, with the daemon
 * starting or failed), or -EUSERS when the daemon turned the connection
 * away for capacity (its answer, or the connection closed without one while
 * the socket still takes connections: one systemd gave up on is closed too,
 * and then nothing listens).  A failed exchange or a bad answer exits
 * EXIT_REFUSED after saying so, or with @fatal false returns 1.
 */
static int exchange_daemon(uint16_t type, const void *body, void *reply_body, bool fatal)
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
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		fprintf(stderr, "hbmctl: hbmguardd at %s: no answer within %d s (systemctl status "
			"hbmguardd)\n", control_socket, HBM_CTL_TIMEOUT_S);
		return 1;
	}
	if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
		s = hbm_ctl_connect(control_socket);
		if (s < 0)
			return 1;
		close(s);
		return -EUSERS;
	}
	if (n < 0) {
		fprintf(stderr, "hbmctl: hbmguardd at %s: %s\n", control_socket,
			strerror(errno));
		if (fatal)
			exit(EXIT_REFUSED);
		return 1;
	}
	err = hbm_ctl_decode(pkt, n, true, &h, &rbody);
	if (err || h.type != (type | HBM_CTL_REPLY) || h.seq != 1) {
		fprintf(stderr, "hbmctl: hbmguardd at %s answered a bad packet (%s): is it the same version?\n",
			control_socket, strerror(err ? -err : EBADMSG));
		if (fatal)
			exit(EXIT_REFUSED);
		return 1;
	}
	if (!h.error && reply_body)
		memcpy(reply_body, rbody, hbm_ctl_body_size(h.type));
	return h.error;
}

static int ask_daemon(uint16_t type, const void *body, void *reply_body)
{
	return exchange_daemon(type, body, reply_body, true);
}

/*
 * The cluster link's part of status ([Cluster]), into @doc or printed; a
 * daemon too old to say (-EOPNOTSUPP) says nothing of it.
 */
static void cluster_status(struct json_object *doc)
{
	static const char *const states[] = { "off", "unreachable", "up" };
	struct hbm_ctl_cluster cl;
	struct json_object *o;
	char since[32];
	time_t t;

	if (ask_daemon(HBM_CTL_CLUSTER, NULL, &cl))
		return;
	if (doc) {
		o = hbm_cli_obj();
		hbm_cli_add_str(o, "state", states[cl.state]);
		hbm_cli_add_str(o, "node", cl.node);
		hbm_cli_add_u64(o, "jobs", cl.jobs);
		hbm_cli_add_u64(o, "since", cl.since);
		hbm_cli_add_str(o, "endpoint", cl.endpoint);
		hbm_cli_add_str(o, "why", cl.why);
		hbm_cli_add(doc, "cluster", o);
		return;
	}
	if (cl.state == HBM_CLUSTER_OFF)
		return;
	t = (time_t)cl.since;
	strftime(since, sizeof(since), "%F %T", gmtime(&t));
	if (cl.state == HBM_CLUSTER_UP)
		printf("cluster: etcd reached at %s as node %s since %s UTC; %u jobs published\n",
		       esc(cl.endpoint), esc(cl.node), since, cl.jobs);
	else
		printf("cluster: etcd UNREACHABLE at %s since %s UTC (%s): retrying; node %s\n",
		       esc(cl.endpoint), since, esc(cl.why), esc(cl.node));
}

/*
 * The daemon's part of status, into @doc (JSON) or printed.  Return: its
 * exit status: 0 running with every state on disk, 1 some state not on disk
 * yet, 3 not running.
 */
static int daemon_status(struct json_object *doc)
{
	struct hbm_ctl_status st;
	struct json_object *o;
	char started[32];
	time_t t;
	int err = ask_daemon(HBM_CTL_STATUS, NULL, &st);

	if (err) {
		if (doc)
			hbm_cli_add(doc, "daemon", NULL);
		else if (err == -EUSERS)
			printf("hbmguardd: running, but it turned this request away "
			       "(too many connections)\n");
		else
			printf("hbmguardd: not running (%s): the tables are not being saved\n",
			       err == 1 ? "no answer on the control socket" : strerror(-err));
		return err == -EUSERS ? 0 : err == 1 ? EXIT_DOWN : EXIT_REFUSED;
	}
	if (doc) {
		o = hbm_cli_obj();
		hbm_cli_add_u64(o, "pid", st.pid);
		hbm_cli_add_u64(o, "started", st.started);
		hbm_cli_add_u64(o, "events", st.events);
		hbm_cli_add_u64(o, "resyncs", st.resyncs);
		hbm_cli_add_u64(o, "stored_extents", st.stored_extents);
		hbm_cli_add_u64(o, "stored_pages", st.stored_pages);
		hbm_cli_add_u64(o, "last_save", st.last_save);
		hbm_cli_add(o, "last_save_error", hbm_cli_i64(st.last_save_error));
		hbm_cli_add_u64(o, "unsaved", st.unsaved);
		hbm_cli_add_str(o, "state_dir", st.state_dir);
		hbm_cli_add(doc, "daemon", o);
		cluster_status(doc);
		return st.unsaved ? EXIT_REFUSED : 0;
	}
	t = (time_t)st.started;
	strftime(started, sizeof(started), "%F %T", gmtime(&t));
	printf("hbmguardd: running, pid %u since %s UTC; %" PRIu64 " bad pages kept in %"
	       PRIu64 " extents in %s; %" PRIu64 " events, %" PRIu64 " resyncs\n",
	       st.pid, started, st.stored_pages, st.stored_extents, esc(st.state_dir),
	       st.events, st.resyncs);
	if (st.unsaved)
		printf("hbmguardd: %u state files NOT SAVED (%s): retrying\n", st.unsaved,
		       hbm_read_strerror(st.last_save_error));
	cluster_status(NULL);
	return st.unsaved ? EXIT_REFUSED : 0;
}

/* Exit status as systemctl status's: see the top of this file. */
static int cmd_status(int argc, char **argv)
{
	struct hbmguard_info info = { .size = sizeof(info) };
	struct json_object *doc, *o;
	int ret;

	(void)argc;
	(void)argv;
	if (ioctl(fd, HBMGUARD_IOC_GET_INFO, &info))
		refused("get info");
	if (hbm_cli_json) {
		doc = hbm_cli_obj();
		o = hbm_cli_obj();
		hbm_cli_add_u64(o, "api", info.version);
		hbm_cli_add_u64(o, "devices", info.nr_devices);
		hbm_cli_add_u64(o, "generation", info.generation);
		hbm_cli_add_u64(o, "seqnum", info.seqnum);
		hbm_cli_add(doc, "module", o);
		ret = daemon_status(doc);
		hbm_cli_add(doc, "devices", devices());
		hbm_cli_json_print(doc);
		return ret;
	}
	printf("hbmguard API %u: %u devices, generation %" PRIu64
	       ", %" PRIu64 " events\n", info.version, info.nr_devices,
	       (uint64_t)info.generation, (uint64_t)info.seqnum);
	ret = daemon_status(NULL);
	printf("\n");
	devices();
	return ret;
}

static void extent_json(const struct hbmguard_extent *e, uint32_t page_size, void *arr)
{
	struct json_object *o = hbm_cli_obj();

	(void)page_size;
	hbm_cli_add_u64(o, "offset", e->offset);
	hbm_cli_add_u64(o, "length", e->length);
	if (e->spare_offset != HBMGUARD_NO_SPARE)
		hbm_cli_add_u64(o, "spare_offset", e->spare_offset);
	hbm_cli_add_str(o, "state", NAME(state_names, e->state));
	hbm_cli_add_str(o, "source", NAME(source_names, e->source));
	hbm_cli_add_u64(o, "errors", e->error_count);
	hbm_cli_add_u64(o, "first_seen", e->first_seen);
	hbm_cli_add_u64(o, "last_seen", e->last_seen);
	hbm_cli_append(arr, o);
}

static void extent_line(const struct hbmguard_extent *e, uint32_t page_size, void *table)
{
	time_t t = (time_t)e->last_seen;
	char when[32];

	strftime(when, sizeof(when), "%F %T", gmtime(&t));
	hbm_cli_cell(table, "0x%" PRIx64, (uint64_t)e->offset);
	hbm_cli_cell(table, "%" PRIu64, (uint64_t)(e->length / page_size));
	if (e->spare_offset != HBMGUARD_NO_SPARE)
		hbm_cli_cell(table, "0x%" PRIx64, (uint64_t)e->spare_offset);
	else
		hbm_cli_cell(table, "-");
	hbm_cli_cell(table, "%s", NAME(state_names, e->state));
	hbm_cli_cell(table, "%s", NAME(source_names, e->source));
	hbm_cli_cell(table, "%u", e->error_count);
	hbm_cli_cell(table, "%s", when);
}

/* Every extent of a device, in rounds of 1024, to @each. */
static void walk_extents(uint32_t dev, const struct hbmguard_device_info *di,
			 void (*each)(const struct hbmguard_extent *, uint32_t, void *),
			 void *ctx)
{
	static struct hbmguard_extent ext[1024];
	struct hbmguard_extent_query q;
	uint64_t start = 0;
	uint32_t i;

	do {
		q = (struct hbmguard_extent_query){
			.size = sizeof(q), .device = dev, .entry_size = sizeof(ext[0]),
			.start = start, .entries = (uintptr_t)ext, .capacity = 1024,
		};
		if (ioctl(fd, HBMGUARD_IOC_LIST_BAD, &q))
			refused("list bad pages");
		for (i = 0; i < q.count; i++)
			each(&ext[i], di->page_size, ctx);
		start = q.next;
	} while (q.count && start < di->usable_size);
}

/* A device and its table, as export and pages --json give them. */
static struct json_object *table_json(uint32_t dev)
{
	struct hbmguard_device_info di;
	struct json_object *o = hbm_cli_obj(), *arr = hbm_cli_arr();

	get_device(dev, &di);
	hbm_cli_add(o, "device", device_json(dev, &di));
	walk_extents(dev, &di, extent_json, arr);
	hbm_cli_add(o, "extents", arr);
	return o;
}

/* --no-legend leaves the rows only: the summary line is the table's legend. */
static int cmd_pages(int argc, char **argv)
{
	static const char *const head[] = {
		"OFFSET", "PAGES", "SPARE", "STATE", "SOURCE", "ERRORS", "LAST SEEN (UTC)",
	};
	uint32_t dev = device_arg(argv[0]);
	struct hbmguard_device_info di;
	struct hbm_cli_table t;

	(void)argc;
	if (hbm_cli_json) {
		hbm_cli_json_print(table_json(dev));
		return 0;
	}
	get_device(dev, &di);
	hbm_cli_table_init(&t, 7, head, "lrlllrl");
	walk_extents(dev, &di, extent_line, &t);
	if (hbm_cli_legend)
		printf("%s (%s): %u retired, %u pending, %u failed pages of %u bytes; "
		       "health %s\n", esc(di.name), esc(di.identity), di.nr_retired,
		       di.nr_pending, di.nr_failed, di.page_size,
		       NAME(health_names, di.health));
	hbm_cli_table_print(&t, stdout);
	return 0;
}

static void no_daemon(int err)
{
	fprintf(stderr, "hbmctl: hbmguardd at %s: %s\n", control_socket,
		err == 1 ? "not running (systemctl start hbmguardd)" : strerror(-err));
	exit(err == 1 ? EXIT_DOWN : EXIT_REFUSED);
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

/*
 * The training ranks registered with the daemon.  The daemon's lists are
 * read whole before anything is printed: no half list when it goes away.
 */
static int cmd_ranks(int argc, char **argv)
{
	static const char *const states[] = { "?", "running", "paused", "restored" };
	static const char *const head[] = {
		"JOB", "RANK", "WORLD", "PID", "UID", "DEVICE", "STATE",
	};
	struct json_object *arr = hbm_cli_json ? hbm_cli_arr() : NULL, *o;
	struct hbm_ctl_rank_info ri;
	struct hbm_cli_table t;
	uint32_t i;

	(void)argc;
	(void)argv;
	hbm_cli_table_init(&t, 7, head, "lrrrrll");
	for (i = 0; daemon_entry(HBM_CTL_RANK_GET, i, &ri); i++) {
		if (!hbm_cli_json) {
			hbm_cli_cell(&t, "%s", esc(ri.rank.job));
			hbm_cli_cell(&t, "%u", ri.rank.rank);
			hbm_cli_cell(&t, "%u", ri.rank.world_size);
			hbm_cli_cell(&t, "%u", ri.pid);
			hbm_cli_cell(&t, "%u", ri.uid);
			hbm_cli_cell(&t, "%s", esc(ri.rank.device));
			hbm_cli_cell(&t, "%s", NAME(states, ri.state));
			continue;
		}
		o = hbm_cli_obj();
		hbm_cli_add_str(o, "job", ri.rank.job);
		hbm_cli_add_u64(o, "rank", ri.rank.rank);
		hbm_cli_add_u64(o, "world_size", ri.rank.world_size);
		hbm_cli_add_u64(o, "local_rank", ri.rank.local_rank);
		hbm_cli_add_u64(o, "pid", ri.pid);
		hbm_cli_add_u64(o, "uid", ri.uid);
		hbm_cli_add_str(o, "device", ri.rank.device);
		hbm_cli_add_str(o, "state", NAME(states, ri.state));
		hbm_cli_append(arr, o);
	}
	if (hbm_cli_json)
		hbm_cli_json_print(arr);
	else
		hbm_cli_table_print(&t, stdout);
	return 0;
}

static const char *const incident_states[] = {
	"?", "detected", "pausing", "isolated", "restoring", "resumed", "escalated",
};

static struct json_object *incident_json(const struct hbm_ctl_incident *in)
{
	struct json_object *o = hbm_cli_obj(), *at = hbm_cli_obj();
	uint32_t st;

	hbm_cli_add_u64(o, "id", in->id);
	hbm_cli_add_str(o, "job", in->job);
	hbm_cli_add_u64(o, "failed_rank", in->failed_rank);
	hbm_cli_add_str(o, "device", in->device);
	hbm_cli_add_u64(o, "offset", in->offset);
	hbm_cli_add_u64(o, "length", in->length);
	hbm_cli_add_str(o, "state", NAME(incident_states, in->state));
	hbm_cli_add_str(o, "reason", in->reason);
	for (st = 1; st < __HBM_INCIDENT_MAX; st++)
		if (in->at[st])
			hbm_cli_add_u64(at, incident_states[st], in->at[st]);
	hbm_cli_add(o, "at_us", at);
	return o;
}

static void incident_lines(const struct hbm_ctl_incident *in)
{
	uint32_t st;

	if (in->length == HBM_CTL_WHOLE_DEVICE)	/* an error without an address */
		printf("incident %" PRIu64 ": job %s, rank %u, %s, whole device",
		       in->id, esc(in->job), in->failed_rank, esc(in->device));
	else
		printf("incident %" PRIu64 ": job %s, rank %u, %s at 0x%" PRIx64 "+0x%"
		       PRIx64, in->id, esc(in->job), in->failed_rank, esc(in->device),
		       in->offset, in->length);
	printf(": %s%s%s%s\n", NAME(incident_states, in->state), in->reason[0] ? " (" : "",
	       esc(in->reason), in->reason[0] ? ")" : "");
	for (st = 1; st < __HBM_INCIDENT_MAX; st++) {
		time_t t = in->at[st] / 1000000;
		char when[32];

		if (!in->at[st])
			continue;
		strftime(when, sizeof(when), "%F %T", gmtime(&t));
		printf("  %-10s %s.%06u UTC  +%.3f s\n", incident_states[st], when,
		       (unsigned int)(in->at[st] % 1000000), (in->at[st] - in->at[1]) / 1e6);
	}
}

/*
 * @all, of @n entries of @size, with room for one more: twice the room when
 * full (at 0, 1, 2, 4...).  No memory ends hbmctl, as a refusal.
 */
static void *room_for(void *all, size_t n, size_t size)
{
	void *more;

	if (n & (n - 1))
		return all;
	more = reallocarray(all, n ? 2 * n : 1, size);
	if (!more) {
		fprintf(stderr, "hbmctl: out of memory\n");
		exit(EXIT_REFUSED);
	}
	return more;
}

/* The incidents the daemon keeps, each transition with its time. */
static const char *const cluster_steps[HBM_CTL_CLUSTER_STEPS] = {
	"pause", "isolate", "restore", "resume", "abort",
};

/*
 * The nodes of an incident across nodes ([Cluster]) whose local incident is
 * @incident (0: none kept here), into @o (JSON) or printed.
 */
static void cluster_nodes(const struct hbm_ctl_cluster_node *cn, uint32_t n, uint64_t incident,
			  struct json_object *o)
{
	struct json_object *c = NULL, *nodes = NULL, *e, *at;
	const char *head = NULL;	/* the incident whose nodes follow */
	uint32_t i, s;

	for (i = 0; i < n; i++) {
		if (cn[i].incident != incident)
			continue;
		if (head && !strcmp(head, cn[i].id)) {
			/* the same incident's next node */
		} else if (o) {
			c = hbm_cli_obj();
			nodes = hbm_cli_arr();
			hbm_cli_add_str(c, "id", cn[i].id);
			hbm_cli_add_str(c, "job", cn[i].job);
			hbm_cli_add_str(c, "opener", cn[i].opener);
			hbm_cli_add_str(c, "step", cluster_steps[cn[i].step]);
			hbm_cli_add_u64(c, "failed_rank", cn[i].failed_rank);
		} else {
			printf("%sacross nodes: %s of job %s, rank %u lost on %s: step %s\n",
			       incident ? "  " : "", esc(cn[i].id), esc(cn[i].job), cn[i].failed_rank,
			       esc(cn[i].opener), cluster_steps[cn[i].step]);
		}
		head = cn[i].id;
		if (o) {
			e = hbm_cli_obj();
			at = hbm_cli_obj();
			hbm_cli_add_str(e, "node", cn[i].node);
			for (s = 0; s < HBM_CTL_CLUSTER_STEPS; s++)
				if (cn[i].acked & 1U << s)
					hbm_cli_add_u64(at, cluster_steps[s], cn[i].acked_at[s]);
			hbm_cli_add(e, "acked_ms", at);
			hbm_cli_append(nodes, e);
			continue;
		}
		printf("    %-20s", esc(cn[i].node));
		for (s = 0; s < HBM_CTL_CLUSTER_STEPS; s++) {
			if (!(cn[i].acked & 1U << s))
				continue;
			if (cn[i].acked_at[s] && cn[i].step_at[s])	/* from when it was read here */
				printf(" %s +%.3f s", cluster_steps[s],
				       ((double)cn[i].acked_at[s] - (double)cn[i].step_at[s]) / 1e3);
			else
				printf(" %s", cluster_steps[s]);
		}
		printf("%s\n", cn[i].acked ? "" : " (nothing acknowledged, or not heard here)");
	}
	if (c) {
		hbm_cli_add(c, "nodes", nodes);
		hbm_cli_add(o, "cluster", c);
	}
}

static int cmd_incidents(int argc, char **argv)
{
	struct hbm_ctl_incident in, *all = NULL;
	struct hbm_ctl_cluster_node cn, *nodes = NULL;
	struct json_object *arr = hbm_cli_json ? hbm_cli_arr() : NULL, *o;
	struct hbm_ctl_index ix = { 0 };
	uint32_t i, n, c;

	(void)argc;
	(void)argv;
	for (n = 0; daemon_entry(HBM_CTL_INCIDENT_GET, n, &in); n++) {
		all = room_for(all, n, sizeof(*all));
		all[n] = in;
	}
	/* the incidents across nodes: none from a daemon too old to say */
	for (c = 0; ix.index = c, !ask_daemon(HBM_CTL_CLUSTER_NODE_GET, &ix, &cn); c++) {
		nodes = room_for(nodes, c, sizeof(*nodes));
		nodes[c] = cn;
	}
	for (i = 0; i < n; i++) {
		o = arr ? incident_json(&all[i]) : NULL;
		if (!arr)
			incident_lines(&all[i]);
		cluster_nodes(nodes, c, all[i].id, o);
		if (arr)
			hbm_cli_append(arr, o);
	}
	if (arr)
		hbm_cli_json_print(arr);
	else
		cluster_nodes(nodes, c, 0, NULL);	/* none kept here */
	free(all);
	free(nodes);
	return 0;
}

static const char *const drain_wants[] = { "none", "drain", "resume" };
static const char *const drain_progress[] = { "off", "done", "running", "retrying", "left" };
static const char *const drain_causes[] = { "?", "rma", "reset", "abort" };

/* Slurm's or the hook's progress, in words: "retrying in 4s (why)". */
static const char *drain_step(uint32_t progress, const struct hbm_ctl_drain *dr, bool first)
{
	static char out[2][256];
	char *o = out[first];

	snprintf(o, sizeof(out[0]), "%s", NAME(drain_progress, progress));
	if (progress == HBM_DRAIN_RETRYING)
		snprintf(o, sizeof(out[0]), "retrying in %us (%s)", dr->retry_in, esc(dr->error));
	else if (progress == HBM_DRAIN_LEFT)
		snprintf(o, sizeof(out[0]), "left: out of service for a reason not hbmguard's");
	return o;
}

/*
 * drain: why hbmguardd drained the node (scheduler.c), and where Slurm
 * and the hook stand.  The causes are read whole before anything prints.
 */
static int cmd_drain(int argc, char **argv)
{
	static const char *const head[] = { "DEVICE", "PCI", "CAUSE", "SINCE", "DETAIL" };
	/* an old daemon answering ENOENT even for index 0: an empty answer */
	struct hbm_ctl_drain dr, first = { 0 };
	struct json_object *doc = NULL, *arr = NULL, *o;
	struct hbm_cli_table t;
	char since[32];
	time_t when;
	uint32_t i;

	(void)argc;
	(void)argv;
	if (hbm_cli_json) {
		doc = hbm_cli_obj();
		arr = hbm_cli_arr();
	}
	hbm_cli_table_init(&t, 5, head, "lllll");
	for (i = 0; daemon_entry(HBM_CTL_DRAIN_GET, i, &dr); i++) {
		if (!i)
			first = dr;
		if (!dr.total)
			break;
		when = (time_t)dr.since;
		strftime(since, sizeof(since), "%F %T", gmtime(&when));
		if (arr) {
			o = hbm_cli_obj();
			hbm_cli_add_str(o, "device", dr.identity);
			hbm_cli_add_str(o, "pci", dr.pci);
			hbm_cli_add_str(o, "cause", NAME(drain_causes, dr.cause));
			hbm_cli_add_u64(o, "since", dr.since);
			hbm_cli_add_str(o, "detail", dr.detail);
			hbm_cli_append(arr, o);
			continue;
		}
		hbm_cli_cell(&t, "%s", esc(dr.identity));
		hbm_cli_cell(&t, "%s", *dr.pci ? esc(dr.pci) : "-");
		hbm_cli_cell(&t, "%s", NAME(drain_causes, dr.cause));
		hbm_cli_cell(&t, "%s", since);
		hbm_cli_cell(&t, "%s", esc(dr.detail));
	}
	if (doc) {
		hbm_cli_add_str(doc, "node", first.node);
		hbm_cli_add_str(doc, "want", NAME(drain_wants, first.want));
		hbm_cli_add_str(doc, "reason", first.reason);
		hbm_cli_add_str(doc, "slurm", NAME(drain_progress, first.slurm));
		hbm_cli_add_str(doc, "hook", NAME(drain_progress, first.hook));
		hbm_cli_add_u64(doc, "retry_in", first.retry_in);
		hbm_cli_add_str(doc, "error", first.error);
		hbm_cli_add(doc, "causes", arr);
		hbm_cli_json_print(doc);	/* no cell was added */
		return 0;
	}
	printf("node %s: %s", esc(first.node),
	       first.want == HBM_DRAIN_WANT_DRAIN ? "drained by hbmguard" :
	       first.want == HBM_DRAIN_WANT_RESUME ? "resumed: its causes were cleared" :
	       "not drained by hbmguard");
	if (first.total)
		printf(" for %u cause%s", first.total, first.total > 1 ? "s" : "");
	printf("\n  slurm: %s\n  hook: %s\n", drain_step(first.slurm, &first, true),
	       drain_step(first.hook, &first, false));
	if (*first.reason)
		printf("  reason: %s\n", esc(first.reason));
	/* not a step's failure, told above: the drain file's */
	if (*first.error && first.slurm != HBM_DRAIN_RETRYING && first.hook != HBM_DRAIN_RETRYING)
		printf("  warning: %s\n", esc(first.error));
	if (first.total)
		hbm_cli_table_print(&t, stdout);
	return 0;
}

/* undrain: an administrator's; the daemon says no to anyone else. */
static int cmd_undrain(int argc, char **argv)
{
	struct hbm_ctl_drain dr;
	int err;

	(void)argc;
	(void)argv;
	err = ask_daemon(HBM_CTL_UNDRAIN, NULL, &dr);
	if (err == -EPERM) {
		fprintf(stderr, "hbmctl: undrain refused by hbmguardd (needs root: CAP_SYS_ADMIN)\n");
		return EXIT_REFUSED;
	}
	if (err == -EALREADY) {
		fprintf(stderr, "hbmctl: hbmguardd has not drained this node: nothing to undrain\n");
		return EXIT_REFUSED;
	}
	if (err)
		no_daemon(err);
	printf("node %s: hbmguard's causes cleared; the node is to be resumed (hbmctl drain: "
	       "where it stands)\n", esc(dr.node));
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

static struct json_object *gpu_json(const struct hbm_ctl_gpu *g,
				    const struct hbmguard_device_info *di, bool table)
{
	struct json_object *o = hbm_cli_obj(), *src = hbm_cli_arr(), *drv = hbm_cli_obj(), *x;
	size_t i;

	hbm_cli_add_str(o, "identity", g->identity);
	hbm_cli_add_str(o, "pci", g->pci);
	hbm_cli_add_str(o, "vendor", g->vendor == HBM_CTL_GPU_AMDGPU ? "amdgpu" :
			g->vendor == HBM_CTL_GPU_NVML ? "nvidia" : "");
	hbm_cli_add_str(o, "model", g->model);
	hbm_cli_add_u64(o, "size", g->size);
	hbm_cli_add(o, "device", g->device == HBM_CTL_NO_DEVICE ? NULL : hbm_cli_u64(g->device));
	hbm_cli_add_str(o, "name", g->name);
	for (i = 0; i < sizeof(source_words) / sizeof(source_words[0]); i++)
		if (g->sources & (1U << i))
			hbm_cli_append(src, hbm_cli_str(source_words[i]));
	hbm_cli_add(o, "sources", src);
	/* no driver's facts to derive it from: null */
	hbm_cli_add(o, "health", g->vendor ? hbm_cli_str(NAME(health_names, g->health)) : NULL);
	hbm_cli_add(o, "lost", hbm_cli_bool(g->flags & HBM_CTL_GPU_LOST));
	hbm_cli_add(o, "partial", hbm_cli_bool(g->flags & HBM_CTL_GPU_PARTIAL));
	hbm_cli_add_u64(drv, "retired_ue", g->retired_ue);
	hbm_cli_add_u64(drv, "retired_ce", g->retired_ce);
	hbm_cli_add_u64(drv, "pending", g->pending);
	hbm_cli_add_u64(drv, "failed", g->failed);
	x = NULL;
	if (g->flags & HBM_CTL_GPU_REMAP) {
		x = hbm_cli_obj();
		hbm_cli_add_u64(x, "corrected", g->remap_corrected);
		hbm_cli_add_u64(x, "uncorrected", g->remap_uncorrected);
		hbm_cli_add(x, "pending", hbm_cli_bool(g->remap_pending));
		hbm_cli_add(x, "failure", hbm_cli_bool(g->remap_failure));
	}
	hbm_cli_add(drv, "remapped", x);
	x = NULL;
	if (g->flags & HBM_CTL_GPU_ECC) {
		x = hbm_cli_obj();
		hbm_cli_add_u64(x, "ue", g->ue);
		hbm_cli_add_u64(x, "ce", g->ce);
	}
	hbm_cli_add(drv, "errors", x);
	hbm_cli_add(o, "driver", drv);
	x = NULL;
	if (table) {
		x = hbm_cli_obj();
		hbm_cli_add_u64(x, "retired", di->nr_retired);
		hbm_cli_add_u64(x, "pending", di->nr_pending);
		hbm_cli_add_u64(x, "failed", di->nr_failed);
	}
	hbm_cli_add(o, "table", x);
	x = NULL;
	if (g->last_xid) {
		x = hbm_cli_obj();
		hbm_cli_add_u64(x, "xid", g->last_xid);
		hbm_cli_add_u64(x, "at_us", g->last_xid_at);
	}
	hbm_cli_add(o, "last_xid", x);
	return o;
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
static int cmd_gpus(int argc, char **argv)
{
	struct hbmguard_device_info di;
	struct json_object *arr = hbm_cli_json ? hbm_cli_arr() : NULL;
	struct hbm_ctl_gpu g, *all = NULL;
	uint32_t i, n;

	(void)argc;
	(void)argv;
	/* Nothing printed before the daemon answered: no half list without it. */
	for (n = 0; daemon_entry(HBM_CTL_GPU_GET, n, &g); n++) {
		if (arr) {
			bool t = gpu_table(&g, &di);

			hbm_cli_append(arr, gpu_json(&g, &di, t));
			continue;
		}
		all = room_for(all, n, sizeof(*all));
		all[n] = g;
	}
	if (arr)
		hbm_cli_json_print(arr);
	for (i = 0; i < n && !arr; i++) {
		bool table = gpu_table(&all[i], &di);

		gpu_line(&all[i], &di, table);
	}
	free(all);
	return 0;
}

/* The advice as JSON: one function, one document. */
static void advise_json(const struct hbm_advise_in *in, const struct hbm_advice *a)
{
	struct json_object *doc = hbm_cli_obj(), *inc = hbm_cli_obj(), *o;
	const struct hbm_advise_case *c[] = { &a->without, &a->with };
	int i;

	hbm_cli_add(doc, "window_s", hbm_cli_double(in->observed_s, 3));
	hbm_cli_add(doc, "window_shortened", hbm_cli_bool(in->shortened));
	hbm_cli_add(doc, "window_unwatched_s", hbm_cli_double(in->unwatched_s, 3));
	hbm_cli_add_u64(doc, "nodes", in->nodes);
	hbm_cli_add(doc, "checkpoint_s", hbm_cli_double(in->checkpoint_s, 3));
	hbm_cli_add(doc, "restart_s", hbm_cli_double(in->restart_s, 3));
	hbm_cli_add_u64(inc, "recovered", in->recovered);
	hbm_cli_add_u64(inc, "escalated", in->escalated);
	hbm_cli_add_u64(inc, "open", in->open);
	hbm_cli_add(inc, "recovery_s", hbm_cli_double(in->recovery_s, 3));
	hbm_cli_add(inc, "escalation_s", hbm_cli_double(in->escalation_s, 3));
	hbm_cli_add(doc, "incidents", inc);
	for (i = 0; i < 2; i++) {
		o = hbm_cli_obj();
		hbm_cli_add_u64(o, "restarts", c[i]->failures);
		hbm_cli_add(o, "bound", hbm_cli_bool(c[i]->bound));
		hbm_cli_add(o, "mtbf_s", hbm_cli_double(c[i]->mtbf_s, 1));
		hbm_cli_add(o, "interval_s", hbm_cli_double(c[i]->daly_s, 1));
		hbm_cli_add(o, "young_s", hbm_cli_double(c[i]->young_s, 1));
		hbm_cli_add(o, "waste", hbm_cli_double(c[i]->waste, 6));
		hbm_cli_add(doc, i ? "with" : "without", o);
	}
	hbm_cli_add(doc, "saved_per_day_s", hbm_cli_double(a->saved_per_day_s, 1));
	hbm_cli_add(doc, "saved_bound", hbm_cli_bool(a->saved_bound));
	hbm_cli_json_print(doc);
}

static void advise_row(struct hbm_cli_table *t, const char *name, const struct hbm_advise_case *c)
{
	const char *ge = c->bound ? ">= " : "";

	hbm_cli_cell(t, "%s", name);
	hbm_cli_cell(t, "%u", c->failures);
	hbm_cli_cell(t, "%s%.0f s", ge, c->mtbf_s);
	hbm_cli_cell(t, "%s%.0f s", ge, c->daly_s);
	hbm_cli_cell(t, "%s%.0f s", ge, c->young_s);
	hbm_cli_cell(t, "%s%.3f%%", c->bound ? "<= " : "", 100 * c->waste);
}

/*
 * How often a job should checkpoint, from the incidents the daemon kept
 * (advise.c has the model): exit 2 for options missing or bad, 3 without
 * the daemon; no failure seen gives bounds, said as such, and exit 0.
 */
static int cmd_advise(int argc, char **argv)
{
	static const char *const head[] = {
		"", "RESTARTS", "MTBF (JOB)", "INTERVAL (DALY)", "(YOUNG)", "LOST",
	};
	struct hbm_advise_in in = advise_in;
	struct hbm_ctl_incident *x = NULL;
	struct hbm_cli_table t;
	struct hbm_ctl_status st;
	struct hbm_advice a;
	struct timespec now;
	char from[32];
	uint32_t n;
	time_t when;
	int ret;

	(void)argc;
	(void)argv;
	if (!in.have_checkpoint || !in.have_restart)
		usage("advise needs --checkpoint-cost= and --restart-cost=: hbmguard cannot see them");
	ret = ask_daemon(HBM_CTL_STATUS, NULL, &st);
	if (ret)
		no_daemon(ret);
	for (n = 0;; n++) {
		x = room_for(x, n, sizeof(*x));
		if (!daemon_entry(HBM_CTL_INCIDENT_GET, n, &x[n]))
			break;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	hbm_advise_history(&in, x, n, now.tv_sec * 1000000ULL + now.tv_nsec / 1000,
			   st.started * 1000000ULL);
	free(x);
	if (hbm_advise(&in, &a)) {
		fprintf(stderr, "hbmctl: no window to learn from: the daemon has just started "
			"(give --window=)\n");
		return EXIT_REFUSED;
	}
	if (hbm_cli_json) {
		advise_json(&in, &a);
		return 0;
	}
	when = in.from_us / 1000000;
	strftime(from, sizeof(from), "%F %T", gmtime(&when));
	printf("history: %u incidents since %s UTC (%.0f s, %.2f days; %s): %u recovered in "
	       "place (mean pause %.3f s), %u escalated (mean %.3f s to abort), %u under way\n",
	       in.recovered + in.escalated, from, in.observed_s, in.observed_s / 86400,
	       in.window_s > 0 ? "--window" : "the daemon's start or its oldest incident kept; "
	       "give --window= for more", in.recovered, in.recovery_s, in.escalated,
	       in.escalation_s, in.open);
	if (in.shortened)
		printf("(older incidents were dropped by the daemon, which keeps the newest: the "
		       "window starts at the oldest kept)\n");
	if (in.unwatched_s > 0)
		printf("(%.0f s, %.2f days, of the window are before hbmguardd's start and its "
		       "oldest incident: counted as free of failures on --window's word)\n",
		       in.unwatched_s, in.unwatched_s / 86400);
	printf("job: %u nodes, checkpoint %.0f s, restart %.0f s\n\n", in.nodes, in.checkpoint_s,
	       in.restart_s);
	hbm_cli_table_init(&t, 6, head, "lrrrrr");
	advise_row(&t, "without hbmguard", &a.without);
	advise_row(&t, "with hbmguard", &a.with);
	hbm_cli_table_print(&t, stdout);
	printf("\n");
	if (a.without.bound)
		printf("no incident in the window: no failure rate can be measured; the "
		       "figures are 95%% bounds from the window's length\n");
	else if (a.saved_bound && a.saved_per_day_s <= 0)
		printf("no incident escalated in the window: what hbmguard saves cannot be "
		       "told from so short a history\n");
	else
		printf("checkpoint every %.0f s; hbmguard saves %s%.0f s of the job's time "
		       "a day (%.2f node-hours)\n", a.with.daly_s, a.saved_bound ? "at least " : "",
		       a.saved_per_day_s, a.saved_per_day_s * in.nodes / 3600);
	return 0;
}

/* Every device with its table: what an RMA ticket or an audit wants. */
static int cmd_export(int argc, char **argv)
{
	uint32_t ids[HBMGUARD_MAX_DEVICES], n = list_devices(ids, HBMGUARD_MAX_DEVICES), i;
	struct json_object *doc = hbm_cli_obj(), *arr = hbm_cli_arr();

	(void)argc;
	(void)argv;
	hbm_cli_add(doc, "exported", hbm_cli_i64(time(NULL)));
	for (i = 0; i < n; i++)
		hbm_cli_append(arr, table_json(ids[i]));
	hbm_cli_add(doc, "devices", arr);
	if (!hbm_cli_json)	/* JSON is all it prints */
		hbm_cli_json = HBM_CLI_JSON_SHORT;
	hbm_cli_json_print(doc);
	return 0;
}

static int cmd_translate(int argc, char **argv)
{
	uint32_t dev = device_arg(argv[0]);
	uint64_t offset = parse_size(argv[1], "offset");
	struct hbmguard_translate tr = { .size = sizeof(tr), .device = dev,
					 .offset = offset };
	struct json_object *o;

	(void)argc;
	if (ioctl(fd, HBMGUARD_IOC_TRANSLATE, &tr))
		refused("translate");
	if (hbm_cli_json) {
		o = hbm_cli_obj();
		hbm_cli_add_u64(o, "offset", offset);
		hbm_cli_add_u64(o, "translated", tr.translated);
		hbm_cli_add_str(o, "state", NAME(state_names, tr.state));
		hbm_cli_json_print(o);
		return 0;
	}
	printf("0x%" PRIx64 " -> 0x%" PRIx64 " (%s)\n", offset,
	       (uint64_t)tr.translated, NAME(state_names, tr.state));
	return 0;
}

/*
 * A retire or clear through hbmguardd that the kernel took and its save did
 * not (ctl.h): said first, whatever STATUS then answers, with the daemon's
 * last save error (perhaps another file's, as a rule the same disk's).
 * Nothing here can tell when this one is on disk; status's NOT SAVED gone
 * says that every change is.
 */
static int not_saved_yet(bool retire)
{
	struct hbm_ctl_status st;

	fprintf(stderr, "hbmctl: %s: done in the kernel, NOT on disk yet: hbmguardd retries the "
		"save until hbmctl status no longer says NOT SAVED%s\n", retire ? "retire" : "clear",
		retire ? "" : "; a daemon stopped before then brings the pages back at its start");
	if (!exchange_daemon(HBM_CTL_STATUS, NULL, &st, false) && st.unsaved &&
	    st.last_save_error)
		fprintf(stderr, "hbmctl: the daemon's saves fail: %s\n",
			hbm_read_strerror(st.last_save_error));
	return EXIT_UNSAVED;
}

/*
 * Retire or clear: through hbmguardd when it runs, which answers once the
 * change is on disk (or that it is in the kernel, not on disk yet: exit 5);
 * into the kernel directly when it does not (hbmguardd
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
	if (err == -EINPROGRESS)
		return not_saved_yet(retire);
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

static int cmd_inject(int argc, char **argv)
{
	uint32_t dev = device_arg(argv[0]);
	const char *kind = argv[1];
	uint64_t offset = parse_size(argv[2], "offset");
	uint64_t count = argc > 3 ? parse_size(argv[3], "count") : 1;
	struct hbmguard_inject in = { .size = sizeof(in), .device = dev,
				      .offset = offset, .count = count };

	if (count > UINT32_MAX)
		usage("the count fits in 32 bits");

	for (in.kind = HBMGUARD_ERROR_CE; in.kind < __HBMGUARD_ERROR_MAX; in.kind++)
		if (!strcmp(kind, error_names[in.kind]))
			break;
	if (in.kind == __HBMGUARD_ERROR_MAX)
		usage("the error kind is one of ce, ue, poison");
	if (ioctl(fd, HBMGUARD_IOC_INJECT, &in))
		refused("inject");
	return 0;
}

static int cmd_policy(int argc, char **argv)
{
	uint32_t dev = device_arg(argv[0]);
	struct hbmguard_policy p = { .size = sizeof(p), .device = dev };
	struct hbmguard_device_info di;
	struct json_object *o;
	int i;

	for (i = 1; i < argc; i++) {
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
	if (hbm_cli_json) {
		o = hbm_cli_obj();
		hbm_cli_add_str(o, "name", di.name);
		hbm_cli_add_u64(o, "ce_threshold", di.policy.ce_threshold);
		hbm_cli_add_u64(o, "ce_window", di.policy.ce_window);
		hbm_cli_add_u64(o, "retire_limit", di.policy.retire_limit);
		hbm_cli_json_print(o);
		return 0;
	}
	printf("%s: ce_threshold=%u ce_window=%u retire_limit=%u\n", esc(di.name),
	       di.policy.ce_threshold, di.policy.ce_window, di.policy.retire_limit);
	return 0;
}

static int cmd_sim_create(int argc, char **argv)
{
	struct hbmguard_sim_create sc = { .size = sizeof(sc), .page_size = 4096 };
	int i;

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
	if (hbm_cli_json) {
		struct json_object *o = hbm_cli_obj();

		hbm_cli_add_u64(o, "id", sc.device);
		hbm_cli_json_print(o);
		return 0;
	}
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

	if (hbm_cli_json) {
		struct json_object *o = hbm_cli_obj();

		hbm_cli_add_u64(o, "seqnum", ev->seqnum);
		hbm_cli_add_str(o, "type", NAME(types, ev->type));
		hbm_cli_add_u64(o, "timestamp_ns", ev->timestamp);
		hbm_cli_add_u64(o, "device", ev->device);
		hbm_cli_add_u64(o, "offset", ev->offset);
		hbm_cli_add_u64(o, "length", ev->length);
		hbm_cli_add_u64(o, "source", ev->source);
		hbm_cli_add_u64(o, "state", ev->state);
		hbm_cli_add_u64(o, "count", ev->count);
		hbm_cli_add_u64(o, "aux", ev->aux);
		hbm_cli_json_print(o);
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
		/* aux: RETIRED's, FAILED's and CLEARED's (the change lost the data) */
		printf(" %u pages in 0x%" PRIx64 "+0x%" PRIx64 " (%s)%s\n", ev->count,
		       (uint64_t)ev->offset, (uint64_t)ev->length,
		       NAME(source_names, ev->source),
		       ev->type != HBMGUARD_EVENT_PENDING &&
		       ev->aux & HBMGUARD_PAGES_DATA_LOST ? ", data lost" : "");
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

/* One document per event, each on its line (JSON Lines) unless pretty. */
static int cmd_watch(int argc, char **argv)
{
	struct hbmguard_event ev[64];
	ssize_t n;
	uint64_t count = argc ? parse_size(argv[0], "count") : 0, seen = 0;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (!count || seen < count) {
		n = read(fd, ev, sizeof(ev));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			refused("read events");
		}
		for (i = 0; i < n / (ssize_t)sizeof(ev[0]) &&
			    (!count || seen < count); i++, seen++)
			print_event(&ev[i]);
	}
	return 0;
}

/* retire DEV OFFSET [LENGTH] [--pending]: one page by default. */
static int cmd_retire(int argc, char **argv)
{
	struct hbmguard_device_info di;
	uint32_t dev = device_arg(argv[0]);
	uint64_t offset = parse_size(argv[1], "offset"), length;

	get_device(dev, &di);
	length = argc > 2 ? parse_size(argv[2], "length") : di.page_size;
	return cmd_extent(HBMGUARD_IOC_RETIRE, dev, offset, length,
			  retire_pending ? HBMGUARD_RETIRE_PENDING : 0);
}

static int cmd_clear(int argc, char **argv)
{
	(void)argc;
	return cmd_extent(HBMGUARD_IOC_CLEAR, device_arg(argv[0]),
			  parse_size(argv[1], "offset"), parse_size(argv[2], "length"), 0);
}

static int cmd_sim_destroy(int argc, char **argv)
{
	struct hbmguard_device_ref ref = { .size = sizeof(ref), .device = device_arg(argv[0]) };

	(void)argc;
	if (ioctl(fd, HBMGUARD_IOC_SIM_DESTROY, &ref))
		refused("destroy simulated device");
	return 0;
}

enum node { NODE_NONE, NODE_READ, NODE_WRITE };

/*
 * hbmctl's commands.  @args is the synopsis after the name, @min and @max
 * bound the arguments (-1: any number), @node is what the command needs of
 * /dev/hbmguard (none: it asks the daemon only, and works without the
 * module).  @run gets the arguments after the command's name, options
 * taken out.
 */
static const struct command {
	const char *name, *args, *help;
	int min, max;
	enum node node;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "status", "", "the module, the daemon, one line per device", 0, 0, NODE_READ,
	  cmd_status },
	{ "devices", "", "one line per device", 0, 0, NODE_READ, cmd_devices },
	{ "pages", "DEV", "the bad-page table of a device", 1, 1, NODE_READ, cmd_pages },
	{ "translate", "DEV OFFSET", "where an offset is served from", 2, 2, NODE_READ,
	  cmd_translate },
	{ "retire", "DEV OFFSET [LENGTH] [--pending]", "retire pages to spares", 2, 3,
	  NODE_WRITE, cmd_retire },
	{ "clear", "DEV OFFSET LENGTH", "forget bad pages", 3, 3, NODE_WRITE, cmd_clear },
	{ "inject", "DEV ce|ue|poison OFFSET [COUNT]", "feed a made-up error to the policy",
	  3, 4, NODE_WRITE, cmd_inject },
	{ "policy", "DEV [ce_threshold=N] [ce_window=SECONDS] [retire_limit=PAGES]",
	  "show or set a device's policy (runtime only)", 1, -1, NODE_WRITE, cmd_policy },
	{ "sim-create", "NAME SIZE [page_size=N] [spares=N] [identity=ID]",
	  "create a simulated device", 2, 5, NODE_WRITE, cmd_sim_create },
	{ "sim-destroy", "DEV", "remove a simulated device", 1, 1, NODE_WRITE,
	  cmd_sim_destroy },
	{ "watch", "[COUNT]", "print events as they happen", 0, 1, NODE_READ, cmd_watch },
	{ "export", "", "every device and its table, as JSON", 0, 0, NODE_READ, cmd_export },
	{ "ranks", "", "training ranks registered with hbmguardd", 0, 0, NODE_NONE,
	  cmd_ranks },
	{ "incidents", "", "rank recoveries, each step with its time", 0, 0, NODE_NONE,
	  cmd_incidents },
	{ "gpus", "", "GPUs: the driver's report beside hbmguard's", 0, 0, NODE_NONE,
	  cmd_gpus },
	{ "drain", "", "why hbmguardd drained the node, and Slurm's and the hook's progress",
	  0, 0, NODE_NONE, cmd_drain },
	{ "undrain", "", "clear hbmguard's causes: the node resumes (admin)", 0, 0, NODE_NONE,
	  cmd_undrain },
	{ "advise", "--checkpoint-cost=SPAN --restart-cost=SPAN [--nodes=N] [--window=SPAN]",
	  "how often to checkpoint, with and without hbmguard", 0, 0, NODE_NONE, cmd_advise },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/* The synopsis: of one command when one was named, else of all. */
static void usage_print(FILE *out, const char *name)
{
	const struct command *c = name ? find_command(name) : NULL;
	size_t i;

	if (c) {
		fprintf(out, "usage: hbmctl [OPTIONS] %s%s%s\n  %s\n", c->name,
			*c->args ? " " : "", c->args, c->help);
	} else {
		fprintf(out, "usage: hbmctl [OPTIONS] [COMMAND [ARGS...]]\n\ncommands:\n");
		for (i = 0; i < N_COMMANDS; i++)
			fprintf(out, "  %s%s%s\n", commands[i].name, *commands[i].args ? " " : "",
				commands[i].args);
	}
	fprintf(out, "\noptions (anywhere on the line):\n"
		"  --json[=short|pretty|off]  JSON, on one line or indented (--json: short)\n"
		"  --no-legend                tables without their header lines\n"
		"  --socket PATH              hbmguardd's control socket (default %s)\n"
		"  -h, --help                 this, on stdout\n"
		"  --version                  hbmctl's version\n"
		"\nExit status: 0 done, 1 refused, 2 bad usage, 3 hbmguardd not running,\n"
		"4 /dev/hbmguard missing, 5 retire or clear done, not on disk yet.\n"
		"See hbmctl(8).\n", HBM_CTL_SOCKET);
}

int main(int argc, char **argv)
{
	enum { OPT_JSON = 0x100, OPT_NO_LEGEND, OPT_SOCKET, OPT_VERSION, OPT_PENDING, OPT_ADVISE };
	static const struct option options[] = {
		{ "json", optional_argument, NULL, OPT_JSON },
		{ "no-legend", no_argument, NULL, OPT_NO_LEGEND },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "pending", no_argument, NULL, OPT_PENDING },
		{ "checkpoint-cost", required_argument, NULL, OPT_ADVISE },
		{ "restart-cost", required_argument, NULL, OPT_ADVISE },
		{ "nodes", required_argument, NULL, OPT_ADVISE },
		{ "window", required_argument, NULL, OPT_ADVISE },
		{ NULL, 0, NULL, 0 },
	};
	const struct command *c;
	bool help = false;
	int opt, mode, index;
	char err[256];

	opterr = 0;	/* said below, with the synopsis */
	while ((opt = getopt_long(argc, argv, ":h", options, &index)) != -1) {
		switch (opt) {
		case OPT_JSON:
			mode = hbm_cli_json_mode(optarg);
			if (mode < 0)
				usage("--json takes short, pretty or off, not '%s'", optarg);
			hbm_cli_json = mode;
			break;
		case OPT_NO_LEGEND:
			hbm_cli_legend = false;
			break;
		case OPT_SOCKET:
			control_socket = optarg;
			break;
		case 'h':
			help = true;
			break;
		case OPT_VERSION:
			printf("hbmctl %s\n", HBM_VERSION);
			return 0;
		case OPT_PENDING:
			retire_pending = true;
			break;
		case OPT_ADVISE:
			advise_option = options[index].name;
			if (hbm_advise_option(&advise_in, advise_option, optarg, err, sizeof(err)))
				usage("%s", err);
			break;
		case ':':
			usage("%s needs an argument", argv[optind - 1]);
			break;
		default:	/* optopt: a short option's letter, or a long one's val */
			if (optopt && optopt < 0x100)
				usage("unknown option '-%c'", optopt);
			usage("unknown option, or one that takes no argument: '%s'",
			      argv[optind - 1]);
		}
	}
	argc -= optind;
	argv += optind;
	command_name = argc ? argv[0] : NULL;
	c = find_command(argc ? argv[0] : "status");
	if (!c)
		usage("unknown command '%s'", argv[0]);
	if (help) {
		usage_print(stdout, command_name);
		return 0;
	}
	if (argc) {
		argc--;
		argv++;
	}
	if (retire_pending && c->run != cmd_retire)
		usage("--pending is an option of retire only");
	if (advise_option && c->run != cmd_advise)
		usage("--%s is an option of advise only", advise_option);
	if (argc < c->min || (c->max >= 0 && argc > c->max)) {
		if (!c->max)
			usage("%s takes no argument", c->name);
		usage("%s takes %s", c->name, c->args);
	}
	if (c->node != NODE_NONE)
		open_node(c->node == NODE_READ ? O_RDONLY : O_RDWR);
	return c->run(argc, argv);
}
