// SPDX-License-Identifier: GPL-2.0
/*
 * hbmnl: a small libnl client of the "hbmguard" generic netlink family, for
 * the tests in the qemu guests.
 *
 *   hbmnl listen COUNT [TIMEOUT_MS]    print events; exit 0 after COUNT
 *   hbmnl listen-times COUNT TIMEOUT_MS  the same, each line ending in
 *                                      heard_us=CLOCK_REALTIME when it was read
 *   hbmnl listen-journal COUNT TIMEOUT_MS  the same, each ERROR event first
 *                                      handed to journald as an entry: make
 *                                      bench's floor of a daemon
 *   hbmnl devices                      dump devices, one line each
 *   hbmnl pages DEV                    dump extents; prints "pages: N extents M"
 *   hbmnl pages-compare DEV            the table dumped nested and packed (48, 64
 *                                      and 4096-byte records): the same extents
 *   hbmnl pages-changed DEV OFFSET     the table dumped while the page at OFFSET
 *                                      (clean, past the table's last extent)
 *                                      is retired, then cleared: NLM_F_DUMP_INTR
 *                                      after the change, not before, not without
 *   hbmnl pages-done-after DEV OFFSET  a table put whole in the dump's first round,
 *                                      page OFFSET retired before its DONE: no flag
 *   hbmnl range-node NAME NODE [SPARES]  register a NUMA node; prints the id
 *   hbmnl range-phys NAME ADDR SIZE [SPARES [PAGE_SIZE]]  a physical range; prints the id
 *   hbmnl range-claim NAME ADDR SIZE [SPARES [PAGE_SIZE]] the same, its memory claimed
 *                                      for the aperture
 *   hbmnl range-unregister DEV
 *   hbmnl retire|clear DEV OFFSET LENGTH
 *   hbmnl restore DEV OFFSET LENGTH [OFFSET LENGTH...]
 *   hbmnl restore-records DEV OFFSET LENGTH STATE SOURCE FIRST LAST [...]
 *                                      the same, packed: each record kept
 *   hbmnl stats
 *   hbmnl badinput                     every bad request: errno, nothing changed
 *   hbmnl unprivileged                 as root: every command and the join
 *                                      EPERM for a CAP_NET_ADMIN-only root, a
 *                                      group member, a stranger and a user
 *                                      namespace's root; nothing changed
 *   hbmnl flood COUNT DEV              a listener that does not read
 *   hbmnl latency DEV PFN COUNT        hwpoison_inject each of COUNT pfns from
 *                                      PFN, time until "retired" is heard
 *   hbmnl echo-latency DEV COUNT       the floor: a POLICY event made in the
 *                                      caller's own netlink request
 *   hbmnl forge DEV OFFSET [PAD]       multicast a forged UE retirement event to
 *                                      the "events" group, as a CAP_NET_ADMIN
 *                                      process can (PAD: that many bytes more)
 *   hbmnl prejoin GROUP UID WAIT       as UID, join generic netlink group GROUP
 *                                      by number; say "joined", then once sent
 *                                      SIGUSR1 (or after WAIT ms) each message
 *                                      its socket holds and its sender's port,
 *                                      or "heard nothing"
 *   hbmnl unicast PORT                 send a NOOP to generic netlink port PORT from
 *                                      a socket of its own; prints "refused" or
 *                                      "delivered"
 *   hbmnl gpu-register NAME UUID PCI SIZE PAGE_SIZE  a discrete GPU; prints the id
 *   hbmnl gpu-unregister DEV
 *   hbmnl gpu-health DEV HEALTH        the health its driver's facts give
 *   hbmnl gpu SIMDEV                   GPU devices: register, duplicates, every bad
 *                                      value, driver retirements without spares,
 *                                      driver health, unregister (SIMDEV: a
 *                                      simulated device, for what is a GPU's only)
 *   hbmnl load-race KO [ARG...]        insmod KO ARG... (whose init a test makes
 *                                      fail late), opening /dev/hbmguard until
 *                                      insmod ends: "insmod: exit N", "family:
 *                                      never announced|announced" (then the
 *                                      dumps sent at its news: "dump: ..." and
 *                                      "policy dump: ..."), "opens: ok N again
 *                                      N other N"
 *   hbmnl parallel                     a STATS_GET held in the module (the debug
 *                                      build's hold_command) while nlctrl and
 *                                      our family answer another socket:
 *                                      "parallel: ok" or FAIL lines
 *
 * Exit status: 0 as expected, 1 otherwise (the reason is printed).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <linux/hbmguard.h>

#include "genl.h"
#include "caps.h"
#include "hbmguard.h"

static int family;
static int failures;

#define FAIL(...) do { printf("FAIL: " __VA_ARGS__); printf("\n"); failures++; } while (0)

/* A generic netlink socket, never read yet: a dump's first round is sized by its reads. */
static struct nl_sock *unread_socket(void)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (!sk || genl_connect(sk)) {
		fprintf(stderr, "hbmnl: cannot open a netlink socket\n");
		exit(1);
	}
	return sk;
}

static struct nl_sock *connect_family(void)
{
	struct nl_sock *sk = unread_socket();

	family = genl_ctrl_resolve(sk, HBMGUARD_GENL_NAME);
	if (family < 0) {
		fprintf(stderr, "hbmnl: family %s: %s\n", HBMGUARD_GENL_NAME,
			nl_geterror(family));
		exit(1);
	}
	return sk;
}

static struct nl_msg *request(int cmd, int flags)
{
	return hbm_genl_request(family, cmd, flags);
}

static int transact(struct nl_sock *sk, struct nl_msg *msg,
		    nl_recvmsg_msg_cb_t parse, void *arg)
{
	return hbm_genl_transact(sk, msg, parse, arg);
}

static struct nlattr *attrs[HBMGUARD_A_MAX + 1];

static int parse_attrs(struct nl_msg *msg)
{
	return genlmsg_parse(nlmsg_hdr(msg), 0, attrs, HBMGUARD_A_MAX, NULL);
}

static uint64_t get_u64(int type)
{
	return attrs[type] ? nla_get_u64(attrs[type]) : 0;
}

static uint32_t get_u32(int type)
{
	return attrs[type] ? nla_get_u32(attrs[type]) : 0;
}

struct listening {
	long left;
	bool times;	/* when each was read, for make bench */
	int journal;	/* >= 0: each ERROR said to journald on it */
};

static long long usec(const struct timespec *t)
{
	return t->tv_sec * 1000000LL + t->tv_nsec / 1000;
}

/*
 * An entry over journald's native protocol: one datagram of FIELD=value
 * lines to its socket, what sd_journal_send() sends for a small entry
 * (systemd v252, docs/JOURNAL_NATIVE_PROTOCOL.md).  make bench's floor: a
 * daemon that only says what it heard, at once (make bench traces the
 * sendto()).  A failure is said on stderr.
 */
static void journal_entry(int fd, uint64_t offset)
{
	static const struct sockaddr_un journald = {
		.sun_family = AF_UNIX, .sun_path = "/run/systemd/journal/socket",
	};
	char entry[160];
	int len = snprintf(entry, sizeof(entry),
			   "MESSAGE=hbmguard error at 0x%" PRIx64 "\nSYSLOG_IDENTIFIER=hbmnl\n"
			   "HBMNL_OFFSET=0x%" PRIx64 "\n", offset, offset);

	if (sendto(fd, entry, len, 0, (const struct sockaddr *)&journald, sizeof(journald)) < 0)
		fprintf(stderr, "hbmnl: journald: %s\n", strerror(errno));
}

static int print_event(struct nl_msg *msg, void *arg)
{
	struct listening *l = arg;
	struct timespec heard;

	if (l->journal < 0)
		clock_gettime(CLOCK_REALTIME, &heard);
	if (parse_attrs(msg))
		return NL_SKIP;
	if (l->journal >= 0) {
		if (get_u32(HBMGUARD_A_EVENT_TYPE) == HBMGUARD_EVENT_ERROR)
			journal_entry(l->journal, get_u64(HBMGUARD_A_OFFSET));
		clock_gettime(CLOCK_REALTIME, &heard);	/* after: its entry first */
	}
	printf("event type=%u seq=%" PRIu64 " dev=%u offset=0x%" PRIx64
	       " length=0x%" PRIx64 " source=%u state=%u count=%u aux=%u",
	       get_u32(HBMGUARD_A_EVENT_TYPE), get_u64(HBMGUARD_A_SEQNUM),
	       get_u32(HBMGUARD_A_DEVICE_ID), get_u64(HBMGUARD_A_OFFSET),
	       get_u64(HBMGUARD_A_LENGTH), get_u32(HBMGUARD_A_SOURCE),
	       get_u32(HBMGUARD_A_STATE), get_u32(HBMGUARD_A_COUNT),
	       get_u32(HBMGUARD_A_AUX));
	if (l->times)
		printf(" heard_us=%lld", usec(&heard));
	printf("\n");
	fflush(stdout);
	if (l->left > 0)
		l->left--;
	return NL_OK;
}

static int join_events(struct nl_sock *sk)
{
	int grp = genl_ctrl_resolve_grp(sk, HBMGUARD_GENL_NAME,
					HBMGUARD_GENL_MCGRP_EVENTS);

	if (grp < 0)
		return grp;
	return nl_socket_add_membership(sk, grp);
}

static int cmd_listen(long count, int timeout_ms, bool times, bool journal)
{
	struct listening l = { .left = count, .times = times, .journal = -1 };
	struct nl_sock *sk = connect_family();
	struct pollfd pfd;
	int err;

	if (join_events(sk)) {
		fprintf(stderr, "hbmnl: cannot join the events group\n");
		return 1;
	}
	if (journal) {
		l.journal = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (l.journal < 0) {
			perror("hbmnl: journald's socket");
			return 1;
		}
		nl_socket_disable_msg_peek(sk);	/* one recvmsg() an event, as hbmguardd */
	}
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, print_event, &l);
	printf("listening\n");
	fflush(stdout);
	pfd.fd = nl_socket_get_fd(sk);
	pfd.events = POLLIN;
	while (l.left > 0) {
		if (poll(&pfd, 1, timeout_ms) <= 0) {
			printf("timeout with %ld events to go\n", l.left);
			return 1;
		}
		err = nl_recvmsgs_default(sk);
		if (err < 0 && err != -NLE_NOMEM) {
			printf("recv: %s\n", nl_geterror(err));
			return 1;
		}
	}
	nl_socket_free(sk);
	return 0;
}

static int print_device(struct nl_msg *msg, void *arg)
{
	(void)arg;
	if (parse_attrs(msg))
		return NL_SKIP;
	printf("device %u %s %s kind=%u size=0x%" PRIx64 " page=%u dropped=%" PRIu64
	       " forgotten=%" PRIu64 " retired=%u pending=%u failed=%u health=%u ce=%" PRIu64 " ue=%" PRIu64
	       " spare_bad=%u spares=%u pci=%s driver_health=%u phys=0x%" PRIx64 "\n",
	       get_u32(HBMGUARD_A_DEVICE_ID), nla_get_string(attrs[HBMGUARD_A_NAME]),
	       nla_get_string(attrs[HBMGUARD_A_IDENTITY]), get_u32(HBMGUARD_A_KIND),
	       get_u64(HBMGUARD_A_HBM_SIZE), get_u32(HBMGUARD_A_PAGE_SIZE),
	       get_u64(HBMGUARD_A_ERRORS_DROPPED), get_u64(HBMGUARD_A_CE_FORGOTTEN),
	       get_u32(HBMGUARD_A_NR_RETIRED), get_u32(HBMGUARD_A_NR_PENDING),
	       get_u32(HBMGUARD_A_NR_FAILED), get_u32(HBMGUARD_A_HEALTH),
	       get_u64(HBMGUARD_A_CE_EVENTS), get_u64(HBMGUARD_A_UE_EVENTS),
	       get_u32(HBMGUARD_A_SPARE_BAD), get_u32(HBMGUARD_A_SPARE_TOTAL),
	       attrs[HBMGUARD_A_PCI_ADDR] ? nla_get_string(attrs[HBMGUARD_A_PCI_ADDR]) : "-",
	       get_u32(HBMGUARD_A_DRIVER_HEALTH), get_u64(HBMGUARD_A_PHYS_ADDR));
	return NL_OK;
}

struct page_count {
	uint64_t extents;
	uint64_t pages;
	uint64_t last_end;
	bool sorted;
	bool verbose;
};

static int count_page(struct nl_msg *msg, void *arg)
{
	struct page_count *pc = arg;
	struct nlattr *ext[HBMGUARD_A_MAX + 1];
	uint64_t offset, length;

	if (parse_attrs(msg) || !attrs[HBMGUARD_A_EXTENT] ||
	    nla_parse_nested(ext, HBMGUARD_A_MAX, attrs[HBMGUARD_A_EXTENT], NULL))
		return NL_SKIP;
	offset = nla_get_u64(ext[HBMGUARD_A_OFFSET]);
	length = nla_get_u64(ext[HBMGUARD_A_LENGTH]);
	if (offset < pc->last_end)
		pc->sorted = false;
	pc->last_end = offset + length;
	pc->extents++;
	pc->pages += length / 4096;
	if (pc->verbose)
		printf("extent 0x%" PRIx64 "+0x%" PRIx64 " state=%u source=%u\n",
		       offset, length, nla_get_u32(ext[HBMGUARD_A_STATE]),
		       nla_get_u32(ext[HBMGUARD_A_SOURCE]));
	return NL_OK;
}

static int dump_pages(struct nl_sock *sk, uint32_t dev, struct page_count *pc)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	pc->sorted = true;
	return transact(sk, msg, count_page, pc);
}

/*
 * A dump of device @dev's extents as records, in either form, and how many
 * messages brought them: what pages-compare sets side by side.
 */
struct dump_records {
	uint32_t dev, size;		/* size: the packed form's; 0: nested */
	struct hbmguard_restore_record *r;
	size_t nr, cap, messages;
	bool bad;			/* a message not as the form says: said */
};

static void dump_push(struct dump_records *d, const struct hbmguard_restore_record *r)
{
	if (d->nr == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 1024;
		d->r = realloc(d->r, d->cap * sizeof(*d->r));
		if (!d->r) {
			fprintf(stderr, "hbmnl: out of memory\n");
			exit(1);
		}
	}
	d->r[d->nr++] = *r;
}

#define DUMP_BAD(d, ...) do { if (!(d)->bad) FAIL(__VA_ARGS__); (d)->bad = true; } while (0)

/* One message of @d's form: its extent, or its records, each checked. */
static int dump_record(struct nl_msg *msg, void *arg)
{
	struct dump_records *d = arg;
	struct nlattr *ext[HBMGUARD_A_MAX + 1], *a;
	int rem;

	d->messages++;
	if (parse_attrs(msg) || get_u32(HBMGUARD_A_DEVICE_ID) != d->dev) {
		DUMP_BAD(d, "a dump message of another device, or unreadable");
		return NL_OK;
	}
	if (!d->size) {
		if (!attrs[HBMGUARD_A_EXTENT] || attrs[HBMGUARD_A_RECORDS] ||
		    nla_parse_nested(ext, HBMGUARD_A_MAX, attrs[HBMGUARD_A_EXTENT], NULL)) {
			DUMP_BAD(d, "a nested dump message without one extent");
			return NL_OK;
		}
		dump_push(d, &(struct hbmguard_restore_record){
			.offset = nla_get_u64(ext[HBMGUARD_A_OFFSET]),
			.length = nla_get_u64(ext[HBMGUARD_A_LENGTH]),
			.first_seen = nla_get_u64(ext[HBMGUARD_A_FIRST_SEEN]),
			.last_seen = nla_get_u64(ext[HBMGUARD_A_LAST_SEEN]),
			.state = nla_get_u32(ext[HBMGUARD_A_STATE]),
			.source = nla_get_u32(ext[HBMGUARD_A_SOURCE]),
			.errors = nla_get_u32(ext[HBMGUARD_A_ERRORS]) });
		return NL_OK;
	}
	if (attrs[HBMGUARD_A_EXTENT] || get_u32(HBMGUARD_A_RECORD_SIZE) != d->size ||
	    !attrs[HBMGUARD_A_RECORDS]) {
		DUMP_BAD(d, "a packed dump message (size %u) without its size echoed, or nested",
			 d->size);
		return NL_OK;
	}
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlmsg_hdr(msg)), 0),
			  genlmsg_attrlen(nlmsg_data(nlmsg_hdr(msg)), 0), rem) {
		const unsigned char *p = nla_data(a);
		int i, j;

		if (nla_type(a) != HBMGUARD_A_RECORDS)
			continue;
		if (!nla_len(a) || nla_len(a) % d->size) {
			DUMP_BAD(d, "records of %d bytes, not a non-empty multiple of %u",
				 nla_len(a), d->size);
			return NL_OK;
		}
		for (i = 0; i < nla_len(a); i += d->size) {
			struct hbmguard_restore_record r;

			memcpy(&r, p + i, sizeof(r));
			for (j = sizeof(r); j < (int)d->size; j++)
				if (p[i + j])
					DUMP_BAD(d, "a record's byte %d past the kernel's record is not 0", j);
			if (r.reserved)
				DUMP_BAD(d, "a record's reserved field set");
			dump_push(d, &r);
		}
	}
	return NL_OK;
}

/*
 * On a socket of its own, never read before: the dump's first round runs
 * as the request is sent, in an skb sized by what the socket's reads asked
 * so far (none: NLMSG_GOODSIZE, less than a 4096-byte record's message,
 * unless the module asks more: netlink_dump(), net/netlink/af_netlink.c).
 */
static int dump_records(struct dump_records *d)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	struct nl_sock *sk = unread_socket();
	int err;

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, d->dev);
	if (d->size)
		nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, d->size);
	err = transact(sk, msg, dump_record, d);
	nl_socket_free(sk);
	return err;
}

/*
 * Device @dev's table dumped nested and packed at 48, 64 and 4096 bytes a
 * record: the same extents, field by field, sorted, none overlapping; the
 * packed dumps in fewer messages.  The table must not change meanwhile.
 */
static int cmd_pages_compare(uint32_t dev)
{
	static const uint32_t sizes[] = { 48, 64, 4096 };
	struct nl_sock *sk = connect_family();	/* the family's number */
	struct dump_records nested = { .dev = dev };
	size_t messages[3], i, j;
	int err;

	err = dump_records(&nested);
	if (err)
		FAIL("the nested dump: %s", hbm_genl_strerror(err));
	for (j = 1; j < nested.nr; j++)
		if (nested.r[j].offset < nested.r[j - 1].offset + nested.r[j - 1].length)
			FAIL("extent %zu at 0x%llx overlaps or precedes the one before", j,
			     (unsigned long long)nested.r[j].offset);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct dump_records packed = { .dev = dev, .size = sizes[i] };

		err = dump_records(&packed);
		if (err)
			FAIL("the packed dump (%u): %s", sizes[i], hbm_genl_strerror(err));
		messages[i] = packed.messages;
		if (packed.nr != nested.nr)
			FAIL("packed (%u): %zu extents, nested %zu", sizes[i], packed.nr,
			     nested.nr);
		for (j = 0; j < packed.nr && j < nested.nr; j++)
			if (memcmp(&packed.r[j], &nested.r[j], sizeof(packed.r[j]))) {
				FAIL("packed (%u): extent %zu at 0x%llx is not the nested one (0x%llx)",
				     sizes[i], j, (unsigned long long)packed.r[j].offset,
				     (unsigned long long)nested.r[j].offset);
				break;
			}
		/*
		 * One record a message would be no packing: some 300 of 48
		 * bytes fit in the 16 KiB that libnl's first read offers
		 * (netlink_dump() sizes the skb by it), 3 of 4096.
		 */
		if (nested.nr > 50 && packed.messages * (sizes[i] > 64 ? 2 : 10) > nested.messages)
			FAIL("packed (%u): %zu messages for %zu extents", sizes[i],
			     packed.messages, packed.nr);
		free(packed.r);
	}
	printf("pages-compare: %zu extents, nested in %zu messages, packed in %zu (48 bytes a record), %zu (64), %zu (4096)\n",
	       nested.nr, nested.messages, messages[0], messages[1], messages[2]);
	free(nested.r);
	nl_socket_free(sk);
	return failures ? 1 : 0;
}

struct stats {
	uint64_t seqnum, generation;
	uint32_t devices;
};

static int parse_stats(struct nl_msg *msg, void *arg)
{
	struct stats *st = arg;

	if (parse_attrs(msg))
		return NL_SKIP;
	st->seqnum = get_u64(HBMGUARD_A_SEQNUM);
	st->generation = get_u64(HBMGUARD_A_GENERATION);
	st->devices = get_u32(HBMGUARD_A_NR_DEVICES);
	if (attrs[HBMGUARD_A_STATS] && !st->devices)
		st->devices = 0;
	return NL_OK;
}

static struct stats get_stats(struct nl_sock *sk)
{
	struct stats st = { 0 };
	int err = transact(sk, request(HBMGUARD_CMD_STATS_GET, 0), parse_stats, &st);

	if (err)
		FAIL("stats: %s", strerror(-err));
	return st;
}

static int print_stats(struct nl_msg *msg, void *arg)
{
	struct nlattr *path, *p[HBMGUARD_A_MAX + 1];
	int rem;

	(void)arg;
	if (parse_attrs(msg))
		return NL_SKIP;
	printf("devices=%u seqnum=%" PRIu64 " generation=%" PRIu64
	       " events_dropped=%" PRIu64 "\n", get_u32(HBMGUARD_A_NR_DEVICES),
	       get_u64(HBMGUARD_A_SEQNUM), get_u64(HBMGUARD_A_GENERATION),
	       get_u64(HBMGUARD_A_EVENTS_DROPPED));
	nla_for_each_nested(path, attrs[HBMGUARD_A_STATS], rem) {
		nla_parse_nested(p, HBMGUARD_A_MAX, path, NULL);
		printf("path %u received=%" PRIu64 " dropped=%" PRIu64 "\n",
		       nla_get_u32(p[HBMGUARD_A_PATH]), nla_get_u64(p[HBMGUARD_A_RECEIVED]),
		       nla_get_u64(p[HBMGUARD_A_DROPPED]));
	}
	return NL_OK;
}

static int reply_id(struct nl_msg *msg, void *arg)
{
	if (!parse_attrs(msg))
		*(uint32_t *)arg = get_u32(HBMGUARD_A_DEVICE_ID);
	return NL_OK;
}

static struct nl_msg *extent_request(int cmd, uint32_t dev, uint64_t offset,
				     uint64_t length)
{
	struct nl_msg *msg = request(cmd, 0);

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	nla_put_u64(msg, HBMGUARD_A_OFFSET, offset);
	nla_put_u64(msg, HBMGUARD_A_LENGTH, length);
	return msg;
}

/*
 * A dump during which page @offset of @dev is changed (@change: RETIRE or
 * CLEAR; 0: nothing), on a socket of its own, once its first message is
 * taken.  Each read puts the dump's next round (netlink_recvmsg(),
 * net/netlink/af_netlink.c): the first datagram was put as the request
 * was sent, the second by the read of the first, both before the change.
 */
struct changed_dump {
	uint32_t dev, size;	/* size: the packed form's; 0: nested */
	uint64_t offset;
	int change;
	unsigned int change_at;	/* the datagram read when the change was made */
	size_t messages, flagged, flagged_before, extents;
};

static unsigned int datagrams;	/* read by counting_recv() */

static int counting_recv(struct nl_sock *sk, struct sockaddr_nl *from, unsigned char **buf,
			 struct ucred **creds)
{
	int n = nl_recv(sk, from, buf, creds);

	datagrams += n > 0;
	return n;
}

static int changed_message(struct nl_msg *msg, void *arg)
{
	struct changed_dump *c = arg;
	struct nlattr *a;
	int rem;

	c->messages++;
	if (nlmsg_hdr(msg)->nlmsg_flags & NLM_F_DUMP_INTR) {
		c->flagged++;
		c->flagged_before += !c->change_at || datagrams <= c->change_at + 1;
	}
	if (parse_attrs(msg))
		return NL_OK;
	if (attrs[HBMGUARD_A_EXTENT])
		c->extents++;
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlmsg_hdr(msg)), 0),
			  genlmsg_attrlen(nlmsg_data(nlmsg_hdr(msg)), 0), rem)
		if (nla_type(a) == HBMGUARD_A_RECORDS && c->size)
			c->extents += nla_len(a) / c->size;
	if (c->change && !c->change_at) {
		struct nl_sock *q = connect_family();
		int err = transact(q, extent_request(c->change, c->dev, c->offset, 4096),
				   NULL, NULL);

		if (err)
			FAIL("the change during the dump: %s", hbm_genl_strerror(err));
		c->change_at = datagrams;
		nl_socket_free(q);
	}
	return NL_OK;
}

/* @taking: read as hbmguardd reads, an interrupted dump taken as read. */
static int pages_changed_once(struct changed_dump *c, bool taking)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	struct nl_sock *sk = unread_socket();
	struct nl_cb *cb;
	int err;

	cb = nl_socket_get_cb(sk);
	nl_cb_overwrite_recv(cb, counting_recv);
	nl_cb_put(cb);
	datagrams = 0;
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, c->dev);
	if (c->size)
		nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, c->size);
	err = taking ? hbm_genl_transact_changing(sk, msg, changed_message, c) :
		       transact(sk, msg, changed_message, c);
	nl_socket_free(sk);
	if (c->flagged_before)
		FAIL("%s dump: %zu messages put before the change say NLM_F_DUMP_INTR",
		     c->size ? "packed" : "nested", c->flagged_before);
	return err;
}

/*
 * Device @dev's table (many rounds: the flood's) dumped while page
 * @offset, clean and past its last extent, is retired, then cleared: each
 * dump says it was interrupted (hbm_genl_exchange(): EAGAIN) in a message
 * put after the change, none put before it, and one without a change says
 * nothing.  Read as hbmguardd reads (hbm_genl_transact_changing()), the
 * dump is taken, with the page retired meanwhile past where it was.
 */
static int cmd_pages_changed(uint32_t dev, uint64_t offset)
{
	struct changed_dump still = { .dev = dev, .size = 48 };
	struct changed_dump nested = { .dev = dev, .offset = offset,
				       .change = HBMGUARD_CMD_RETIRE };
	struct changed_dump packed = { .dev = dev, .size = 48, .offset = offset,
				       .change = HBMGUARD_CMD_CLEAR };
	struct changed_dump taken = { .dev = dev, .size = 48, .offset = offset,
				      .change = HBMGUARD_CMD_RETIRE };
	struct nl_sock *sk = connect_family();
	int err;

	err = pages_changed_once(&still, false);
	if (err || still.flagged)
		FAIL("a dump of a table that did not change: %s, %zu messages flagged",
		     hbm_genl_strerror(err), still.flagged);
	if (still.messages < 4)
		FAIL("%zu messages: too few rounds to change the table during one",
		     still.messages);
	/*
	 * A message put after the change says so, not only the DONE: a
	 * reader that stops at a record still learns it.
	 */
	err = pages_changed_once(&nested, false);
	if (err != -EAGAIN || !nested.flagged)
		FAIL("a nested dump the table changed under: %s, %zu messages flagged",
		     err ? hbm_genl_strerror(err) : "read whole", nested.flagged);
	err = pages_changed_once(&packed, false);
	if (err != -EAGAIN || !packed.flagged)
		FAIL("a packed dump the table changed under: %s, %zu messages flagged",
		     err ? hbm_genl_strerror(err) : "read whole", packed.flagged);
	err = pages_changed_once(&taken, true);
	if (err || !taken.flagged || taken.extents != still.extents + 1)
		FAIL("a dump taken with its change: %s, %zu flagged, %zu extents, not %zu",
		     hbm_genl_strerror(err), taken.flagged, taken.extents, still.extents + 1);
	err = transact(sk, extent_request(HBMGUARD_CMD_CLEAR, dev, offset, 4096), NULL, NULL);
	if (err)
		FAIL("clear 0x%" PRIx64 ": %s", offset, hbm_genl_strerror(err));
	printf("pages-changed: %zu extents in %zu messages; messages flagged after the change: nested %zu of %zu, packed %zu of %zu\n",
	       still.extents, still.messages, nested.flagged, nested.messages,
	       packed.flagged, packed.messages);
	nl_socket_free(sk);
	return failures ? 1 : 0;
}

/*
 * Device @dev's table, small enough for the first round, put whole as the
 * request is sent; page @offset (clean) retired before anything is read,
 * so before the round that puts the DONE: the dump was one moment's table,
 * and neither its messages nor its DONE say otherwise.  Read raw: libnl's
 * first read peeks, which would put the DONE before the change.
 */
static int cmd_pages_done_after(uint32_t dev, uint64_t offset)
{
	struct nl_sock *sk = connect_family(), *d = unread_socket();
	struct nl_msg *msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	size_t messages = 0, flagged = 0;
	bool done = false;
	int err, status = 1;

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, 48);
	if (nl_send_auto(d, msg) < 0)
		FAIL("the dump request not sent");
	nlmsg_free(msg);
	err = transact(sk, extent_request(HBMGUARD_CMD_RETIRE, dev, offset, 4096), NULL, NULL);
	if (err)
		FAIL("retire 0x%" PRIx64 ": %s", offset, hbm_genl_strerror(err));
	while (!done && !failures) {
		char buf[65536];
		ssize_t n = recv(nl_socket_get_fd(d), buf, sizeof(buf), 0);
		struct nlmsghdr *nlh;
		int len = n;

		if (n <= 0) {
			FAIL("the dump's read: %s", n ? strerror(errno) : "nothing");
			break;
		}
		for (nlh = (struct nlmsghdr *)buf; nlmsg_ok(nlh, len); nlh = nlmsg_next(nlh, &len)) {
			messages++;
			flagged += !!(nlh->nlmsg_flags & NLM_F_DUMP_INTR);
			if (nlh->nlmsg_type == NLMSG_DONE) {
				memcpy(&status, nlmsg_data(nlh), sizeof(status));
				done = true;
			} else if (nlh->nlmsg_type == NLMSG_ERROR) {
				FAIL("the dump failed");
				break;
			}
		}
	}
	if (done && (status || flagged || messages != 2))
		FAIL("a dump put whole before a change: DONE %d, %zu of %zu messages flagged (one message and the DONE expected)",
		     status, flagged, messages);
	err = transact(sk, extent_request(HBMGUARD_CMD_CLEAR, dev, offset, 4096), NULL, NULL);
	if (err)
		FAIL("clear 0x%" PRIx64 ": %s", offset, hbm_genl_strerror(err));
	printf("pages-done-after: %zu messages, %zu flagged\n", messages, flagged);
	nl_socket_free(d);
	nl_socket_free(sk);
	return failures ? 1 : 0;
}

#define EXPECT_ERR(sk, msg, err, what) do {				\
	int _r = transact(sk, msg, NULL, NULL);				\
	if (_r != -(err))						\
		FAIL("%s: got %s, expected %s", what, strerror(-_r), strerror(err)); \
} while (0)

/* The same, and the kernel's extack message says @why. */
#define EXPECT_WHY(sk, msg, err, what, why) do {			\
	int _r = transact(sk, msg, NULL, NULL);				\
	if (_r != -(err))						\
		FAIL("%s: got %s, expected %s", what, strerror(-_r), strerror(err)); \
	else if (!strstr(hbm_genl_strerror(_r), why))			\
		FAIL("%s: the kernel said \"%s\", not \"%s\"", what,	\
		     hbm_genl_strerror(_r), why);			\
} while (0)

/*
 * A packed RESTORE of device @dev: @n records of @size bytes (the first
 * sizeof(struct hbmguard_restore_record) of each from @r, the rest @tail),
 * in one HBMGUARD_A_RECORDS of @bytes bytes (-1: all of them).
 */
static struct nl_msg *records_request(uint32_t dev, uint32_t size,
				      const struct hbmguard_restore_record *r, size_t n,
				      uint8_t tail, long bytes)
{
	struct nl_msg *msg = hbm_genl_request_sized(family, HBMGUARD_CMD_RESTORE, 0,
						    n * size + 4096);
	struct nlattr *a;
	size_t i;

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, size);
	a = nla_reserve(msg, HBMGUARD_A_RECORDS, bytes < 0 ? (long)(n * size) : bytes);
	if (!a)
		return msg;
	memset(nla_data(a), tail, nla_len(a));
	for (i = 0; i < n && (i + 1) * size <= (size_t)nla_len(a); i++)
		memcpy((char *)nla_data(a) + i * size, &r[i],
		       size < sizeof(*r) ? size : sizeof(*r));
	return msg;
}

/* Every bad packed RESTORE: refused, with a message that says why. */
static void bad_records(struct nl_sock *sk)
{
	const struct hbmguard_restore_record good = {
		.offset = 0x10000, .length = 0x1000, .first_seen = 100, .last_seen = 200,
		.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE, .errors = 1,
	};
	struct hbmguard_restore_record r[2] = { good, good }, *many;
	struct nl_msg *msg;
	size_t i;

	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put(msg, HBMGUARD_A_RECORDS, sizeof(good), &good);
	EXPECT_WHY(sk, msg, EINVAL, "records without a record size", "needs HBMGUARD_A_RECORD_SIZE");
	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, sizeof(good));
	EXPECT_WHY(sk, msg, EINVAL, "a record size without records", "without HBMGUARD_A_RECORDS");
	EXPECT_WHY(sk, records_request(0, 40, &good, 1, 0, -1), EINVAL,
		   "a record size too small", "record size below");
	EXPECT_WHY(sk, records_request(0, 52, &good, 1, 0, -1), EINVAL,
		   "a record size not a multiple of 8", "not a multiple of 8");
	EXPECT_WHY(sk, records_request(0, 8192, &good, 1, 0, -1), EINVAL,
		   "a record size too large", "above HBMGUARD_RESTORE_RECORD_SIZE_MAX");
	EXPECT_WHY(sk, records_request(0, sizeof(good), &good, 1, 0, sizeof(good) + 8), EINVAL,
		   "records not a multiple of the record size", "multiple of the record size");
	EXPECT_WHY(sk, records_request(0, sizeof(good), &good, 1, 0, 0), EINVAL,
		   "an empty records attribute", "non-empty multiple");
	EXPECT_WHY(sk, records_request(0, sizeof(good) + 8, &good, 1, 0xff, -1), EINVAL,
		   "a longer record with bytes the kernel does not know", "past what this kernel knows");
	r[1].reserved = 1;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a reserved field set (after a good record)", "reserved field");
	r[1] = good;
	r[1].offset = good.offset + 1;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record not page aligned", "not page aligned");
	r[1] = good;
	r[1].length = 0;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "an empty record", "not page aligned or empty");
	r[1] = good;
	r[1].offset = good.offset;	/* the same page again */
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "overlapping records", "out of order or overlapping");
	r[1] = good;
	r[1].offset = good.offset - 0x2000;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "records not sorted", "out of order or overlapping");
	r[1] = good;
	r[1].offset = good.offset + 0x1000;
	r[1].state = HBMGUARD_STATE_FAILED;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record FAILED", "neither RETIRED nor PENDING");
	r[1].state = HBMGUARD_STATE_PENDING;
	r[1].source = HBMGUARD_SOURCE_NONE;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record of source NONE", "source is NONE or unknown");
	r[1].source = __HBMGUARD_SOURCE_MAX;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record of an unknown source", "source is NONE or unknown");
	r[1].source = HBMGUARD_SOURCE_DRIVER;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record of source DRIVER off a GPU", "only a GPU device's");
	r[1].source = HBMGUARD_SOURCE_ADMIN;
	r[1].first_seen = 300;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record first seen after it was last seen", "after its last_seen");
	r[1].first_seen = 1ULL << 32;
	r[1].last_seen = 0;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), EINVAL,
		   "a record of a time past 2^32 s", "2^32 seconds");
	r[1].first_seen = 0;
	r[1].offset = 1ULL << 40;
	EXPECT_WHY(sk, records_request(0, sizeof(good), r, 2, 0, -1), ERANGE,
		   "a record outside the device", "outside the device");
	msg = records_request(0, sizeof(good), &good, 1, 0, -1);
	{
		struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

		nla_put_u64(msg, HBMGUARD_A_OFFSET, 0x30000);
		nla_put_u64(msg, HBMGUARD_A_LENGTH, 0x1000);
		nla_nest_end(msg, n);
	}
	EXPECT_WHY(sk, msg, EINVAL, "extent nests and records in one request", "not both");
	/* Past the bound, in attributes of 1024 (one holds less than 64 KiB). */
	many = calloc(16385, sizeof(*many));
	msg = hbm_genl_request_sized(family, HBMGUARD_CMD_RESTORE, 0, 1 << 20);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, sizeof(good));
	for (i = 0; many && i < 16385; i++)
		many[i] = (struct hbmguard_restore_record){
			.offset = i * 0x2000, .length = 0x1000,
			.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE,
		};
	for (i = 0; many && i < 16385; i += 1024)
		if (nla_put(msg, HBMGUARD_A_RECORDS,
			    (16385 - i < 1024 ? 16385 - i : 1024) * sizeof(*many), &many[i]))
			FAIL("a RESTORE of 16385 records does not fit in 1 MiB");
	EXPECT_WHY(sk, msg, E2BIG, "more than 16384 records", "more than 16384");
	free(many);
}

static struct nl_msg *gpu_health_msg(uint32_t dev, uint32_t health)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_GPU_HEALTH_SET, 0);

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	nla_put_u32(msg, HBMGUARD_A_DRIVER_HEALTH, health);
	return msg;
}

static struct nl_msg *gpu_request(const char *name, const char *uuid,
				  const char *pci, uint64_t size, uint32_t page)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_GPU_REGISTER, 0);

	if (name)
		nla_put_string(msg, HBMGUARD_A_NAME, name);
	if (uuid)
		nla_put_string(msg, HBMGUARD_A_IDENTITY, uuid);
	if (pci)
		nla_put_string(msg, HBMGUARD_A_PCI_ADDR, pci);
	if (size)
		nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, size);
	if (page)
		nla_put_u32(msg, HBMGUARD_A_PAGE_SIZE, page);
	return msg;
}

/* Every kind of bad request: the right errno, and nothing changes. */
static int cmd_badinput(void)
{
	static const int reply_only[] = {
		HBMGUARD_A_DATA_LOST, HBMGUARD_A_DATA_LOST_SEQNUM, HBMGUARD_A_ADDED_SEQNUM,
	};
	struct nl_sock *sk = connect_family();
	struct stats before = get_stats(sk), after;
	struct nl_msg *msg;
	char big[HBMGUARD_NAME_LEN + 8];
	size_t i;

	msg = request(__HBMGUARD_CMD_MAX + 3, 0);
	EXPECT_ERR(sk, msg, EOPNOTSUPP, "unknown command");
	msg = request(HBMGUARD_CMD_EVENT, 0);
	EXPECT_ERR(sk, msg, EOPNOTSUPP, "EVENT is not a request");

	msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	EXPECT_ERR(sk, msg, EINVAL, "device get without a device");
	msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 200);
	EXPECT_ERR(sk, msg, ENODEV, "device get, no such device");
	msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 4000);
	EXPECT_ERR(sk, msg, ERANGE, "device id above the maximum");
	/* a dump's own error, in its DONE: no table, not an empty one */
	msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 200);
	EXPECT_WHY(sk, msg, ENODEV, "pages dump, no such device", "no such device");
	msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	EXPECT_WHY(sk, msg, EINVAL, "pages dump without a device", "HBMGUARD_A_DEVICE_ID is required");
	{
		static const uint32_t bad_sizes[] = { 40, 52, 4104, 0 };
		size_t i;

		for (i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
			msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
			nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
			nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE, bad_sizes[i]);
			EXPECT_WHY(sk, msg, EINVAL, "a packed pages dump of a bad record size",
				   "record size below");
		}
	}
	msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u16(msg, HBMGUARD_A_RECORD_SIZE, 48);
	EXPECT_ERR(sk, msg, EINVAL, "a packed pages dump, its record size a u16");
	msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	nla_put_u16(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EINVAL, "device id of the wrong size");
	msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_MAX + 5, 0);
	EXPECT_ERR(sk, msg, EINVAL, "unknown attribute");
	/* what only replies carry, given in a request */
	for (i = 0; i < sizeof(reply_only) / sizeof(reply_only[0]); i++) {
		msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
		nla_put_u64(msg, reply_only[i], 1);
		EXPECT_ERR(sk, msg, EINVAL, "device get with an attribute only replies carry");
	}

	msg = extent_request(HBMGUARD_CMD_RETIRE, 0, 1, 4096);
	EXPECT_ERR(sk, msg, EINVAL, "retire, misaligned");
	msg = extent_request(HBMGUARD_CMD_RETIRE, 0, 0, 0);
	EXPECT_ERR(sk, msg, EINVAL, "retire, empty");
	msg = extent_request(HBMGUARD_CMD_RETIRE, 0, 1ULL << 40, 4096);
	EXPECT_ERR(sk, msg, ERANGE, "retire, outside the device");
	msg = extent_request(HBMGUARD_CMD_RETIRE, 9, 0, 4096);
	EXPECT_ERR(sk, msg, ENODEV, "retire, no such device");
	msg = request(HBMGUARD_CMD_RETIRE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EINVAL, "retire without a range");
	msg = extent_request(HBMGUARD_CMD_RETIRE, 0, 0, 4096);
	nla_put_u32(msg, HBMGUARD_A_SOURCE, HBMGUARD_SOURCE_UE);
	EXPECT_ERR(sk, msg, ERANGE, "retire with source UE");
	msg = extent_request(HBMGUARD_CMD_RETIRE, 0, 0, 4096);
	nla_put_u32(msg, HBMGUARD_A_FLAGS, 0x80);
	EXPECT_ERR(sk, msg, EINVAL, "retire with unknown flags");
	msg = extent_request(HBMGUARD_CMD_CLEAR, 0, 0, 4096);
	nla_put_u32(msg, HBMGUARD_A_FLAGS, HBMGUARD_RETIRE_PENDING);
	EXPECT_ERR(sk, msg, EINVAL, "clear with flags");

	msg = request(HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EINVAL, "policy with nothing to set");
	msg = request(HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_CE_THRESHOLD, 65536);
	EXPECT_ERR(sk, msg, ERANGE, "policy threshold too high");
	msg = request(HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_CE_WINDOW, 365 * 86400 + 1);
	EXPECT_ERR(sk, msg, ERANGE, "policy window too long");
	msg = request(HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_RETIRE_LIMIT, 0xffffffff);
	EXPECT_ERR(sk, msg, EINVAL, "policy limit above the pages");
	/* One request, one change: the good keys with it are refused too. */
	msg = request(HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_CE_THRESHOLD, 0);
	nla_put_u32(msg, HBMGUARD_A_CE_WINDOW, 600);
	nla_put_u32(msg, HBMGUARD_A_RETIRE_LIMIT, 0xffffffff);
	EXPECT_ERR(sk, msg, EINVAL, "policy limit above the pages, other keys with it");

	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EINVAL, "restore of nothing");
	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	{
		struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

		nla_put_u64(msg, HBMGUARD_A_OFFSET, 0);
		nla_put_u64(msg, HBMGUARD_A_LENGTH, 4096);
		nla_nest_end(msg, n);
		n = nla_nest_start(msg, HBMGUARD_A_EXTENT);	/* a bad one after */
		nla_put_u64(msg, HBMGUARD_A_OFFSET, 3);
		nla_put_u64(msg, HBMGUARD_A_LENGTH, 4096);
		nla_nest_end(msg, n);
	}
	EXPECT_ERR(sk, msg, EINVAL, "restore with one bad extent");
	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	{
		/* in any order, but not overlapping: the third lies in the first */
		static const uint64_t x[][2] = {
			{ 0x40000, 0x2000 }, { 0x20000, 0x1000 }, { 0x41000, 0x1000 },
		};
		unsigned int i;

		for (i = 0; i < 3; i++) {
			struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

			nla_put_u64(msg, HBMGUARD_A_OFFSET, x[i][0]);
			nla_put_u64(msg, HBMGUARD_A_LENGTH, x[i][1]);
			nla_nest_end(msg, n);
		}
	}
	EXPECT_WHY(sk, msg, EINVAL, "restore with two extents overlapping", "overlap");
	{
		/* Past the bound, through a send buffer forced large enough. */
		int sndbuf = 2 << 20, i;

		setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf,
			   sizeof(sndbuf));
		msg = hbm_genl_request_sized(family, HBMGUARD_CMD_RESTORE, 0, 1 << 20);
		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
		for (i = 0; i < 16385; i++) {
			struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

			if (!n || nla_put_u64(msg, HBMGUARD_A_OFFSET, (uint64_t)i * 4096) ||
			    nla_put_u64(msg, HBMGUARD_A_LENGTH, 4096))
				FAIL("a RESTORE of 16385 extents does not fit in 1 MiB");
			nla_nest_end(msg, n);
		}
		EXPECT_ERR(sk, msg, E2BIG, "restore of more than 16384 extents");
	}
	bad_records(sk);

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, big);
	nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, 1);
	EXPECT_ERR(sk, msg, EINVAL, "range with a name too long");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	EXPECT_ERR(sk, msg, EINVAL, "range without memory");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, 7);
	EXPECT_ERR(sk, msg, ENODEV, "range on a node without memory");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, 0x1001);
	nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, 1 << 20);
	EXPECT_ERR(sk, msg, EINVAL, "range not aligned");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, 0xfee00000);	/* the local APIC */
	nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, 1 << 20);
	nla_put_flag(msg, HBMGUARD_A_CLAIM);
	EXPECT_ERR(sk, msg, EINVAL, "claim of a range that is not RAM");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, 0xfee00000);
	nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, 1 << 20);
	nla_put_u32(msg, HBMGUARD_A_CLAIM, 1);
	EXPECT_ERR(sk, msg, ERANGE, "claim flag with a payload");
	msg = request(HBMGUARD_CMD_RANGE_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EOPNOTSUPP, "unregister of a simulated device");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, 1ULL << 40);
	nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, 8ULL << 30);
	nla_put_u32(msg, HBMGUARD_A_SPARE_PAGES, HBMGUARD_SPARE_PAGES_MAX + 1);
	EXPECT_ERR(sk, msg, EINVAL, "range with more spares than a table maps");

	after = get_stats(sk);
	if (before.seqnum != after.seqnum || before.generation != after.generation ||
	    before.devices != after.devices)
		FAIL("bad requests changed something: seqnum %" PRIu64 " -> %" PRIu64
		     ", generation %" PRIu64 " -> %" PRIu64, before.seqnum,
		     after.seqnum, before.generation, after.generation);
	printf("badinput: %s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}

/* Everything refused with EPERM, as whoever this process is now. */
static int refused_everything(void)
{
	struct nl_sock *sk = connect_family();
	struct nl_msg *msg;
	struct nlattr *n;
	int err;

	msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EPERM, "device get");
	EXPECT_ERR(sk, request(HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP), EPERM,
		   "device dump");
	msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EPERM, "pages dump");
	EXPECT_ERR(sk, request(HBMGUARD_CMD_STATS_GET, 0), EPERM, "stats");
	EXPECT_ERR(sk, extent_request(HBMGUARD_CMD_RETIRE, 0, 0, 4096), EPERM,
		   "retire");
	EXPECT_ERR(sk, extent_request(HBMGUARD_CMD_CLEAR, 0, 0, 4096), EPERM,
		   "clear");
	msg = request(HBMGUARD_CMD_POLICY_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_CE_THRESHOLD, 3);
	EXPECT_ERR(sk, msg, EPERM, "policy");
	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	n = nla_nest_start(msg, HBMGUARD_A_EXTENT);
	nla_put_u64(msg, HBMGUARD_A_OFFSET, 0);
	nla_put_u64(msg, HBMGUARD_A_LENGTH, 4096);
	nla_nest_end(msg, n);
	EXPECT_ERR(sk, msg, EPERM, "restore");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, 1);
	EXPECT_ERR(sk, msg, EPERM, "range register");
	msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "x");
	nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, 1ULL << 32);
	nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, 1 << 20);
	nla_put_flag(msg, HBMGUARD_A_CLAIM);
	EXPECT_ERR(sk, msg, EPERM, "range register with CLAIM");
	msg = request(HBMGUARD_CMD_RANGE_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EPERM, "range unregister");
	EXPECT_ERR(sk, gpu_request("gpux", "GPU-x", "0000:00:02.0", 1 << 20, 4096),
		   EPERM, "gpu register");
	msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	EXPECT_ERR(sk, msg, EPERM, "gpu unregister");
	msg = request(HBMGUARD_CMD_GPU_HEALTH_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
	nla_put_u32(msg, HBMGUARD_A_DRIVER_HEALTH, HBMGUARD_HEALTH_RMA);
	EXPECT_ERR(sk, msg, EPERM, "gpu health set");
	err = join_events(sk);
	if (err != -NLE_PERM)
		FAIL("join the events group: %s", nl_geterror(err));
	nl_socket_free(sk);
	return failures;
}

/*
 * One privilege model (uapi/linux/hbmguard.h, PRIVILEGES): every command and
 * the events group need CAP_SYS_ADMIN in the initial user namespace.  Run as
 * root; each identity is a child.
 */
static int cmd_unprivileged(void)
{
	static const struct {
		const char *name;
		uid_t uid;		/* 0: stays root */
		uint64_t caps;		/* for root: what it keeps */
		bool userns;
	} who[] = {
		{ "root with CAP_NET_ADMIN only", 0, 1ULL << CAP_NET_ADMIN, false },
		{ "root without CAP_SYS_ADMIN", 0,
		  ~(1ULL << CAP_SYS_ADMIN) & ((1ULL << (CAP_LAST_CAP + 1)) - 1), false },
		{ "the node's group (uid 1000)", 1000, 0, false },
		{ "a stranger (uid 2000)", 2000, 0, false },
		{ "root of a user namespace", 0, 0, true },
	};
	struct nl_sock *sk = connect_family(), *lis = connect_family();
	struct stats before = get_stats(sk), after;
	unsigned int i;
	int status;

	for (i = 0; i < sizeof(who) / sizeof(who[0]); i++) {
		pid_t pid = fork();

		if (pid == 0) {
			int r = who[i].userns ? become_userns_root() :
				who[i].uid ? (setgid(who[i].uid) || setuid(who[i].uid)) :
				caps_keep_only(who[i].caps);

			if (r) {
				printf("cannot become %s\n", who[i].name);
				_exit(2);
			}
			_exit(refused_everything() ? 1 : 0);
		}
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			FAIL("as %s: not everything refused (above)", who[i].name);
		else
			printf("as %s: everything refused\n", who[i].name);
	}
	/* The administrator: reads and the events group. */
	if (transact(sk, request(HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP), NULL, NULL))
		FAIL("root's dump refused");
	if (join_events(lis))
		FAIL("root's join refused");
	after = get_stats(sk);
	if (before.seqnum != after.seqnum || before.generation != after.generation ||
	    before.devices != after.devices)
		FAIL("refused requests changed something");
	printf("unprivileged: %s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}

/*
 * A listener that does not read while COUNT pages are retired through the
 * ioctl: it must learn of its loss (ENOBUFS or a sequence gap), and a dump
 * afterwards must show every page.
 */
static int cmd_flood(long count, uint32_t dev)
{
	struct nl_sock *sk = connect_family(), *q = connect_family();
	int fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDWR);
	uint64_t expect_seq = 0, gaps = 0, seen = 0;
	struct page_count pc = { 0 };
	bool enobufs = false;
	long i;

	if (fd < 0 || join_events(sk)) {
		FAIL("setup");
		return 1;
	}
	nl_socket_disable_seq_check(sk);
	nl_socket_set_nonblocking(sk);
	for (i = 0; i < count; i++) {
		struct hbmguard_extent_op x = {
			.size = sizeof(x), .device = dev,
			.source = HBMGUARD_SOURCE_ADMIN,
			.offset = (uint64_t)i * 2 * 4096, .length = 4096,
		};

		if (ioctl(fd, HBMGUARD_IOC_RETIRE, &x)) {
			FAIL("retire %ld: %s", i, strerror(errno));
			return 1;
		}
	}
	for (;;) {
		char buf[65536];
		ssize_t n = recv(nl_socket_get_fd(sk), buf, sizeof(buf), 0);
		struct nlmsghdr *nlh;
		int len;

		if (n < 0 && errno == ENOBUFS) {
			enobufs = true;
			continue;
		}
		if (n <= 0)
			break;
		len = n;
		for (nlh = (struct nlmsghdr *)buf; nlmsg_ok(nlh, len);
		     nlh = nlmsg_next(nlh, &len)) {
			uint64_t seq;

			if (genlmsg_parse(nlh, 0, attrs, HBMGUARD_A_MAX, NULL))
				continue;
			seq = get_u64(HBMGUARD_A_SEQNUM);
			if (expect_seq && seq != expect_seq)
				gaps++;
			expect_seq = seq + 1;
			seen++;
		}
	}
	if (dump_pages(q, dev, &pc))
		FAIL("dump");
	printf("flood: %ld retired, listener saw %" PRIu64 " events, %s, %" PRIu64
	       " gaps; dump: %" PRIu64 " extents %" PRIu64 " pages%s\n", count, seen,
	       enobufs ? "ENOBUFS" : "no ENOBUFS", gaps, pc.extents, pc.pages,
	       pc.sorted ? " sorted" : " UNSORTED");
	if (!enobufs && !gaps)
		FAIL("the listener did not learn of its loss");
	if (pc.pages != (uint64_t)count || pc.extents != (uint64_t)count || !pc.sorted)
		FAIL("the dump does not show every page");
	return failures != 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Receive events until one of @type arrives; false on timeout. */
static bool await_event(struct nl_sock *sk, uint32_t type)
{
	char buf[8192];

	for (;;) {
		struct pollfd pfd = { .fd = nl_socket_get_fd(sk), .events = POLLIN };
		struct nlmsghdr *nlh;
		ssize_t n;
		int len;

		if (poll(&pfd, 1, 5000) <= 0)
			return false;
		n = recv(pfd.fd, buf, sizeof(buf), 0);
		if (n <= 0)
			continue;
		len = n;
		for (nlh = (struct nlmsghdr *)buf; nlmsg_ok(nlh, len);
		     nlh = nlmsg_next(nlh, &len))
			if (!genlmsg_parse(nlh, 0, attrs, HBMGUARD_A_MAX, NULL) &&
			    get_u32(HBMGUARD_A_EVENT_TYPE) == type)
				return true;
	}
}

static void print_latency(const char *what, double *us, long n)
{
	qsort(us, n, sizeof(*us), cmp_double);
	printf("%-44s %10.0f %10.0f %8ld\n", what, us[n / 2], us[n * 99 / 100], n);
}

/* hwpoison_inject -> "retired" heard by a listener, per page. */
static int cmd_latency(uint32_t dev, unsigned long pfn, long count)
{
	struct nl_sock *sk = connect_family();
	double *us = calloc(count, sizeof(*us));
	long i;

	if (join_events(sk))
		return 1;
	for (i = 0; i < count; i++) {
		FILE *f = fopen("/sys/kernel/debug/hwpoison/corrupt-pfn", "w");
		double t0;

		if (!f)
			return 1;
		fprintf(f, "%lu\n", pfn + i);
		fclose(f);	/* the write happens, and returns, here */
		t0 = now_us();
		if (!await_event(sk, HBMGUARD_EVENT_RETIRED)) {
			printf("latency: no event for pfn %lu\n", pfn + i);
			return 1;
		}
		us[i] = now_us() - t0;
	}
	print_latency("hwpoison write -> 'retired' heard (us)", us, count);
	(void)dev;
	return 0;
}

/* The floor: an event made synchronously in a netlink request. */
static int cmd_echo_latency(uint32_t dev, long count)
{
	struct nl_sock *sk = connect_family(), *req = connect_family();
	double *us = calloc(count, sizeof(*us));
	long i;

	if (join_events(sk))
		return 1;
	for (i = 0; i < count; i++) {
		struct nl_msg *msg = request(HBMGUARD_CMD_POLICY_SET, 0);
		double t0;

		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
		/* Never the default (86400): a policy set to what it is makes no event. */
		nla_put_u32(msg, HBMGUARD_A_CE_WINDOW, 86398 + (i % 2));
		t0 = now_us();
		if (transact(req, msg, NULL, NULL) || !await_event(sk, HBMGUARD_EVENT_POLICY)) {
			fprintf(stderr, "hbmnl: echo-latency: no POLICY event for request %ld\n", i);
			return 1;
		}
		us[i] = now_us() - t0;
	}
	print_latency("floor: netlink request -> its event heard (us)", us, count);
	return 0;
}

/* A UE retirement the kernel never sent: what a CAP_NET_ADMIN process can multicast. */
static int cmd_forge(uint32_t dev, uint64_t offset, size_t pad)
{
	struct nl_sock *sk = connect_family();
	int grp = genl_ctrl_resolve_grp(sk, HBMGUARD_GENL_NAME, HBMGUARD_GENL_MCGRP_EVENTS);
	struct nl_msg *msg = hbm_genl_request_sized(family, HBMGUARD_CMD_EVENT, 0, pad + 4096);
	int err;

	if (grp <= 0 || grp > 32 || !msg) {
		fprintf(stderr, "hbmnl: forge: events group %d\n", grp);
		return 1;
	}
	nla_put_u64(msg, HBMGUARD_A_SEQNUM, 1000000);
	nla_put_u32(msg, HBMGUARD_A_EVENT_TYPE, HBMGUARD_EVENT_RETIRED);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	nla_put_u64(msg, HBMGUARD_A_OFFSET, offset);
	nla_put_u64(msg, HBMGUARD_A_LENGTH, 0x1000);
	nla_put_u32(msg, HBMGUARD_A_SOURCE, HBMGUARD_SOURCE_UE);
	nla_put_u32(msg, HBMGUARD_A_STATE, HBMGUARD_STATE_RETIRED);
	if (pad && !nla_reserve(msg, HBMGUARD_A_RECORDS, pad)) {
		fprintf(stderr, "hbmnl: forge: %zu bytes do not fit\n", pad);
		return 1;
	}
	nl_socket_set_buffer_size(sk, 0, pad + 65536);
	nl_socket_set_peer_groups(sk, 1u << (grp - 1));
	err = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (err < 0) {
		fprintf(stderr, "hbmnl: forge: %s\n", nl_geterror(err));
		return 1;
	}
	return 0;
}

/*
 * What a user can do before the family exists: join generic netlink group
 * GROUP by its number (genl_bind() asks no family for a group none owns),
 * then keep the membership.  As UID: says "joined"; once sent SIGUSR1 (or
 * after WAIT ms, said), what its socket holds: each message with its
 * sender's port ("heard type=... from=PORT", 0 the kernel), an overrun
 * ("heard ENOBUFS"), or "heard nothing".
 */
static int cmd_prejoin(int group, uid_t uid, int wait_ms)
{
	struct sockaddr_nl me = { .nl_family = AF_NETLINK }, from;
	struct timespec wait = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };
	socklen_t from_len;
	sigset_t usr1;
	char buf[8192];
	int fd, heard = 0;
	ssize_t n;

	/* Blocked from here: a signal sent before the wait is taken by it. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) {
		fprintf(stderr, "hbmnl: prejoin: cannot become uid %u\n", uid);
		return 1;
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
	    setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof(group))) {
		printf("join refused: %s\n", strerror(errno));
		return 1;
	}
	printf("joined\n");
	if (sigtimedwait(&usr1, NULL, &wait) != SIGUSR1)
		printf("not told to stop in %d ms\n", wait_ms);
	for (;;) {
		from_len = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
			     &from_len);
		if (n < 0 && errno == ENOBUFS) {
			printf("heard ENOBUFS\n");
			heard++;
			continue;
		}
		if (n < (ssize_t)sizeof(struct nlmsghdr))
			break;
		printf("heard type=0x%x from=%u\n", ((struct nlmsghdr *)buf)->nlmsg_type,
		       from.nl_pid);
		heard++;
	}
	if (n < 0 && errno != EAGAIN)
		printf("recv: %s\n", strerror(errno));
	else if (!heard)
		printf("heard nothing\n");
	close(fd);
	return 0;
}

/* The controller's news of the family: its id in *@arg. */
static int on_newfamily(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[CTRL_ATTR_MAX + 1];
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));
	int *id = arg;

	if (g->cmd != CTRL_CMD_NEWFAMILY ||
	    genlmsg_parse(nlmsg_hdr(msg), 0, a, CTRL_ATTR_MAX, NULL) ||
	    !a[CTRL_ATTR_FAMILY_NAME] || !a[CTRL_ATTR_FAMILY_ID] ||
	    strcmp(nla_get_string(a[CTRL_ATTR_FAMILY_NAME]), HBMGUARD_GENL_NAME))
		return NL_SKIP;
	*id = nla_get_u16(a[CTRL_ATTR_FAMILY_ID]);
	return NL_STOP;
}

/* @msg sent on @sk (and freed), its answer read later; 0 or a libnl error. */
static int sent(struct nl_sock *sk, struct nl_msg *msg)
{
	int err = msg ? nl_send_auto(sk, msg) : -NLE_NOMEM;

	nlmsg_free(msg);
	return err < 0 ? err : 0;
}

/* A DEVICE_GET dump of family @id on @dump, nlctrl's policy dump of it on @policy. */
static void dumps_sent(struct nl_sock *dump, struct nl_sock *policy, int id, int err[2])
{
	struct nl_msg *msg = hbm_genl_request(GENL_ID_CTRL, CTRL_CMD_GETPOLICY, NLM_F_DUMP);

	err[0] = sent(dump, hbm_genl_request(id, HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP));
	if (msg)
		nla_put_string(msg, CTRL_ATTR_FAMILY_NAME, HBMGUARD_GENL_NAME);
	err[1] = sent(policy, msg);
}

/*
 * Opens made while a module's init is under way, which then fails: a
 * failed init frees the module whatever its files hold, so it refuses an
 * open until its init is over (hbm_module_live(), kmod/main.c).  The first
 * file opened is closed only once insmod has ended, when a file the module
 * let through would run its release in the freed module (a test guest's
 * Oops).  The family is registered last, after anything that may fail: it
 * must never be announced in a load that fails.  Were it, a DEVICE_GET
 * dump and nlctrl's policy dump of it (which any user may ask) are sent
 * then and read once insmod has ended: their next rounds would run in the
 * freed module.
 */
static int cmd_load_race(char **argv)
{
	struct nl_sock *ctl = unread_socket(), *dump = unread_socket(), *policy = unread_socket();
	int grp = genl_ctrl_resolve_grp(ctl, "nlctrl", "notify"), id = -1, status, err;
	unsigned int opened = 0, again = 0, other = 0;
	int kept = -1, dump_err[2];
	pid_t pid;

	if (grp < 0 || nl_socket_add_membership(ctl, grp)) {
		fprintf(stderr, "hbmnl: the controller's notify group: %s\n", nl_geterror(grp));
		return 1;
	}
	nl_socket_disable_seq_check(ctl);
	nl_socket_set_nonblocking(ctl);
	nl_socket_modify_cb(ctl, NL_CB_VALID, NL_CB_CUSTOM, on_newfamily, &id);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		argv[0] = "insmod";	/* "load-race" KO ARG... */
		execvp("insmod", argv);
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) != pid) {
		int fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			opened++;
			if (kept < 0)
				kept = fd;	/* closed once insmod has ended */
			else
				close(fd);
		} else if (errno == EAGAIN) {
			again++;
		} else {
			other++;
		}
		if (id < 0 && nl_recvmsgs_default(ctl) >= 0 && id >= 0)
			dumps_sent(dump, policy, id, dump_err);
	}
	printf("insmod: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (kept >= 0)
		close(kept);
	while (id < 0 && nl_recvmsgs_default(ctl) >= 0)
		if (id >= 0)	/* news queued since the last look */
			dumps_sent(dump, policy, id, dump_err);
	printf("family: %s\n", id < 0 ? "never announced" : "announced");
	if (id >= 0) {
		err = dump_err[0] ?: nl_recvmsgs_default(dump);
		printf("dump: %s\n", err >= 0 ? "ok" : nl_geterror(err));
		err = dump_err[1] ?: nl_recvmsgs_default(policy);
		printf("policy dump: %s\n", err >= 0 ? "ok" : nl_geterror(err));
	}
	printf("opens: ok %u again %u other %u\n", opened, again, other);
	nl_socket_free(policy);
	nl_socket_free(dump);
	nl_socket_free(ctl);
	return 0;
}

#define HOLD_COMMAND	"/sys/module/hbmguard/parameters/hold_command"
#define COMMAND_HELD	"/sys/module/hbmguard/parameters/command_held"

/* The debug build's hold_command set to @cmd (0: none); false, said why, if not. */
static bool hold_command(int cmd)
{
	FILE *f = fopen(HOLD_COMMAND, "w");
	bool ok = f && fprintf(f, "%d\n", cmd) > 0;

	if (f && fclose(f))
		ok = false;
	if (!ok)
		printf("FAIL: %s: %s\n", HOLD_COMMAND, strerror(errno));
	return ok;
}

/* The debug build's command_held: 'Y' while a command is held. */
static bool command_held(void)
{
	FILE *f = fopen(COMMAND_HELD, "r");
	int c = f ? fgetc(f) : EOF;

	if (f)
		fclose(f);
	return c == 'Y';
}

/*
 * Our commands do not take genl_mutex (the family's parallel_ops): one held
 * in the module (the debug build's hold_command, for 10 s at most) while
 * another socket asks nlctrl for our family, and us for a device; under
 * genl_mutex the lookup would wait out the hold.  The held command must
 * still be held once both have answered, and answer after.
 */
static int cmd_parallel(void)
{
	struct nl_sock *sk = connect_family(), *other = unread_socket();
	int status, waited, err;
	struct nl_msg *msg;
	pid_t pid;

	if (!hold_command(HBMGUARD_CMD_STATS_GET))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid)
		_exit(transact(sk, request(HBMGUARD_CMD_STATS_GET, 0), NULL, NULL) ? 1 : 0);
	for (waited = 0; !command_held() && waited < 10000; waited += 10)
		usleep(10000);
	if (!command_held()) {
		FAIL("the STATS_GET was never held (not a debug build?)");
	} else {
		err = genl_ctrl_resolve(other, HBMGUARD_GENL_NAME);
		if (err != family)
			FAIL("nlctrl's lookup of our family: %s", err < 0 ? nl_geterror(err) : "another id");
		msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, 0);
		err = transact(other, msg, NULL, NULL);
		if (err)
			FAIL("DEVICE_GET of device 0: %s", hbm_genl_strerror(err));
		if (!command_held())
			FAIL("answered only once the held command was let go");
	}
	hold_command(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("the held STATS_GET got no answer");
	nl_socket_free(other);
	nl_socket_free(sk);
	printf("parallel: %s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}

/* What a CAP_NET_ADMIN process can unicast to another's generic netlink socket. */
static int cmd_unicast(uint32_t port)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK, .nl_pid = port };
	struct nlmsghdr noop = { .nlmsg_len = sizeof(noop), .nlmsg_type = NLMSG_NOOP };
	struct nl_sock *sk = unread_socket();

	if (sendto(nl_socket_get_fd(sk), &noop, sizeof(noop), 0, (struct sockaddr *)&to,
		   sizeof(to)) == sizeof(noop))
		puts("delivered");
	else if (errno == ECONNREFUSED)
		puts("refused");
	else {
		fprintf(stderr, "hbmnl: unicast to %u: %s\n", port, strerror(errno));
		return 1;
	}
	nl_socket_free(sk);
	return 0;
}

/* One device's attributes, as DEVICE_GET gives them. */
struct gpu_info {
	uint32_t kind, health, driver_health, spare_total, spare_used;
	uint32_t retired, pending, failed;
	uint64_t hbm_size, usable_size;
	char pci[HBMGUARD_PCI_ADDR_LEN + 8], identity[HBMGUARD_IDENTITY_LEN];
};

static int parse_gpu(struct nl_msg *msg, void *arg)
{
	struct gpu_info *g = arg;

	if (parse_attrs(msg))
		return NL_SKIP;
	g->kind = get_u32(HBMGUARD_A_KIND);
	g->health = get_u32(HBMGUARD_A_HEALTH);
	g->driver_health = attrs[HBMGUARD_A_DRIVER_HEALTH] ?
			   get_u32(HBMGUARD_A_DRIVER_HEALTH) : ~0u;
	g->spare_total = get_u32(HBMGUARD_A_SPARE_TOTAL);
	g->spare_used = get_u32(HBMGUARD_A_SPARE_USED);
	g->retired = get_u32(HBMGUARD_A_NR_RETIRED);
	g->pending = get_u32(HBMGUARD_A_NR_PENDING);
	g->failed = get_u32(HBMGUARD_A_NR_FAILED);
	g->hbm_size = get_u64(HBMGUARD_A_HBM_SIZE);
	g->usable_size = get_u64(HBMGUARD_A_USABLE_SIZE);
	snprintf(g->pci, sizeof(g->pci), "%s", attrs[HBMGUARD_A_PCI_ADDR] ?
		 nla_get_string(attrs[HBMGUARD_A_PCI_ADDR]) : "");
	snprintf(g->identity, sizeof(g->identity), "%s",
		 nla_get_string(attrs[HBMGUARD_A_IDENTITY]));
	return NL_OK;
}

static struct gpu_info gpu_get(struct nl_sock *sk, uint32_t dev)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	struct gpu_info g = { 0 };

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	if (transact(sk, msg, parse_gpu, &g))
		FAIL("device get %u", dev);
	return g;
}

static int gpu_health(struct nl_sock *sk, uint32_t dev, uint32_t health)
{
	return transact(sk, gpu_health_msg(dev, health), NULL, NULL);
}

static int dump_pages_cb(struct nl_sock *sk, uint32_t dev, nl_recvmsg_msg_cb_t cb,
			 void *arg)
{
	struct nl_msg *msg = request(HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev);
	return transact(sk, msg, cb, arg);
}

/* Extents of a dump: each one's source and whether it has a spare. */
struct gpu_pages {
	unsigned int extents, driver, restored, with_spare;
};

static int gpu_page(struct nl_msg *msg, void *arg)
{
	struct gpu_pages *gp = arg;
	struct nlattr *ext[HBMGUARD_A_MAX + 1];

	if (parse_attrs(msg) || !attrs[HBMGUARD_A_EXTENT] ||
	    nla_parse_nested(ext, HBMGUARD_A_MAX, attrs[HBMGUARD_A_EXTENT], NULL))
		return NL_SKIP;
	gp->extents++;
	gp->driver += nla_get_u32(ext[HBMGUARD_A_SOURCE]) == HBMGUARD_SOURCE_DRIVER;
	gp->restored += nla_get_u32(ext[HBMGUARD_A_SOURCE]) == HBMGUARD_SOURCE_RESTORED;
	gp->with_spare += ext[HBMGUARD_A_SPARE_OFFSET] != NULL;
	return NL_OK;
}

#define GPU_UUID "GPU-7f3c9a2e-1b4d-4e8f-9c6a-2d5b8e1f0a3c"
#define GPU_PCI "0000:00:02.0"
#define GPU_SIZE (1ULL << 30)

/*
 * GPU devices (HBMGUARD_CMD_GPU_*): what registers, what clashes, every bad
 * value refused with nothing changed, pages the driver retired recorded
 * without a spare, the driver's health, and unregistration.  @sim: a
 * simulated device, where what is a GPU's alone must be refused.
 */
/*
 * A registration whose reply cannot be delivered (the requester's receive
 * buffer full: netlink_attachskb() drops it, net/netlink/af_netlink.c, 6.1
 * and 6.12) is taken back: the requester never learns the id, so nothing
 * is left registered, and the same GPU registers afterwards.  The buffer,
 * as small as the kernel allows, is filled by an unread DEVICE_GET reply.
 */
static void full_reply_registers_nothing(struct nl_sock *sk, uint32_t sim)
{
	struct nl_sock *full = unread_socket();
	int one = 1, fd = nl_socket_get_fd(full);
	struct nl_msg *msg = request(HBMGUARD_CMD_DEVICE_GET, 0);
	uint32_t id = ~0u;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, sim);
	if (nl_send_auto(full, msg) < 0)
		FAIL("full socket: DEVICE_GET not sent");
	nlmsg_free(msg);
	msg = gpu_request("gpu-full", "GPU-full", "0000:00:04.0", GPU_SIZE, 4096);
	if (nl_send_auto(full, msg) < 0)
		FAIL("full socket: GPU_REGISTER not sent");
	nlmsg_free(msg);
	nl_socket_free(full);
	if (transact(sk, gpu_request("gpu-full", "GPU-full", "0000:00:04.0", GPU_SIZE, 4096),
		     reply_id, &id)) {
		FAIL("a registration whose reply was not delivered was left registered");
		return;
	}
	msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	if (transact(sk, msg, NULL, NULL))
		FAIL("gpu-full registered again, not unregistered");
}

static int cmd_gpu(uint32_t sim)
{
	static const char *const bad_pci[] = {
		"0000:00:02.0 ", "0000:00:1F.0", "0000:00:20.0", "0000:00:02.8",
		"000:00:02.0", "00000:00:02.0", "0000-00-02.0", "0000:00:02:0",
		"0000:0:02.0", "0000:00:2.0", "", "3b:00.0", "0000:00:0g.0",
	};
	struct nl_sock *sk = connect_family();
	int fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDONLY);
	struct stats before, after;
	struct gpu_pages gp = { 0 };
	struct gpu_info g;
	struct nl_msg *msg;
	uint32_t id = ~0u, id2 = ~0u;
	char big[HBMGUARD_PCI_ADDR_LEN + 4];
	unsigned int i;
	int err;

	before = get_stats(sk);
	err = transact(sk, gpu_request("gpu0", GPU_UUID, GPU_PCI, GPU_SIZE, 4096),
		       reply_id, &id);
	if (err) {
		FAIL("register: %s", strerror(-err));
		return 1;
	}
	g = gpu_get(sk, id);
	if (g.kind != HBMGUARD_KIND_GPU || g.spare_total || g.usable_size != GPU_SIZE ||
	    g.hbm_size != GPU_SIZE || strcmp(g.pci, GPU_PCI) || strcmp(g.identity, GPU_UUID) ||
	    g.driver_health != HBMGUARD_HEALTH_OK || g.health != HBMGUARD_HEALTH_OK)
		FAIL("registered: kind %u spares %u usable 0x%" PRIx64 " pci '%s' identity '%s'",
		     g.kind, g.spare_total, g.usable_size, g.pci, g.identity);
	before = get_stats(sk);

	/* Clashes: the same UUID, PCI address or name. */
	EXPECT_ERR(sk, gpu_request("gpu1", GPU_UUID, "0000:00:03.0", GPU_SIZE, 4096),
		   EEXIST, "the same UUID again");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-other", GPU_PCI, GPU_SIZE, 4096),
		   EEXIST, "the same PCI address again");
	EXPECT_ERR(sk, gpu_request("gpu0", "GPU-other", "0000:00:03.0", GPU_SIZE, 4096),
		   EEXIST, "the same name again");
	EXPECT_ERR(sk, gpu_request("gpu1", GPU_PCI, "0000:00:03.0", GPU_SIZE, 4096),
		   EEXIST, "an identity that is a GPU's PCI address");

	/* Each required attribute missing. */
	EXPECT_ERR(sk, gpu_request(NULL, "GPU-b", "0000:00:03.0", GPU_SIZE, 4096),
		   EINVAL, "no name");
	EXPECT_ERR(sk, gpu_request("gpu1", NULL, "0000:00:03.0", GPU_SIZE, 4096),
		   EINVAL, "no identity");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", NULL, GPU_SIZE, 4096),
		   EINVAL, "no PCI address");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", 0, 4096),
		   EINVAL, "no size");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 0),
		   EINVAL, "no page size");
	/* Bad values. */
	for (i = 0; i < sizeof(bad_pci) / sizeof(bad_pci[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "PCI address '%s'", bad_pci[i]);
		EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", bad_pci[i], GPU_SIZE, 4096),
			   EINVAL, what);
	}
	memset(big, '0', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", big, GPU_SIZE, 4096), EINVAL,
		   "PCI address too long");
	msg = request(HBMGUARD_CMD_GPU_REGISTER, 0);
	nla_put_string(msg, HBMGUARD_A_NAME, "gpu1");
	nla_put_string(msg, HBMGUARD_A_IDENTITY, "GPU-b");
	nla_put_u32(msg, HBMGUARD_A_PCI_ADDR, 0x3b00);
	nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, GPU_SIZE);
	nla_put_u32(msg, HBMGUARD_A_PAGE_SIZE, 4096);
	EXPECT_ERR(sk, msg, EINVAL, "PCI address not a string");
	EXPECT_ERR(sk, gpu_request("gpu1", "", "0000:00:03.0", GPU_SIZE, 4096),
		   EINVAL, "empty identity");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU b", "0000:00:03.0", GPU_SIZE, 4096),
		   EINVAL, "identity with a space");
	EXPECT_ERR(sk, gpu_request("gpu 1", "GPU-b", "0000:00:03.0", GPU_SIZE, 4096),
		   EINVAL, "name with a space");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE + 512, 4096),
		   EINVAL, "size not a multiple of the page size");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", 1ULL << 45, 4096),
		   EINVAL, "2^33 pages");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 12288),
		   EINVAL, "page size not a power of two");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 1024),
		   ERANGE, "page size below 4 KiB");
	EXPECT_ERR(sk, gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 4U << 20),
		   ERANGE, "page size above 2 MiB");
	msg = gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 4096);
	nla_put_u32(msg, HBMGUARD_A_SPARE_PAGES, 16);
	EXPECT_ERR(sk, msg, EINVAL, "a GPU with spares");
	msg = gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 4096);
	nla_put_flag(msg, HBMGUARD_A_CLAIM);
	EXPECT_ERR(sk, msg, EINVAL, "a GPU with CLAIM");
	msg = gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 4096);
	nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, 1ULL << 32);
	EXPECT_ERR(sk, msg, EINVAL, "a GPU with a physical address");
	msg = gpu_request("gpu1", "GPU-b", "0000:00:03.0", GPU_SIZE, 4096);
	nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, 0);
	EXPECT_ERR(sk, msg, EINVAL, "a GPU with a NUMA node");

	/* What is a GPU's alone, on another device; another kind's, on a GPU. */
	EXPECT_ERR(sk, gpu_health_msg(sim, HBMGUARD_HEALTH_RMA), EOPNOTSUPP,
		   "driver health of a simulated device");
	EXPECT_ERR(sk, gpu_health_msg(id, HBMGUARD_HEALTH_RESET_REQUIRED + 1), ERANGE,
		   "driver health not a health");
	msg = request(HBMGUARD_CMD_GPU_HEALTH_SET, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	EXPECT_ERR(sk, msg, EINVAL, "driver health missing");
	EXPECT_ERR(sk, gpu_health_msg(200, HBMGUARD_HEALTH_RMA), ENODEV,
		   "driver health of no device");
	msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, sim);
	EXPECT_ERR(sk, msg, EOPNOTSUPP, "gpu unregister of a simulated device");
	msg = request(HBMGUARD_CMD_RANGE_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	EXPECT_ERR(sk, msg, EOPNOTSUPP, "range unregister of a GPU");
	msg = extent_request(HBMGUARD_CMD_RETIRE, id, 0, 4096);
	nla_put_u32(msg, HBMGUARD_A_SOURCE, HBMGUARD_SOURCE_ADMIN);
	EXPECT_ERR(sk, msg, EINVAL, "retire on a GPU as ADMIN");
	msg = extent_request(HBMGUARD_CMD_RETIRE, sim, 0, 4096);
	nla_put_u32(msg, HBMGUARD_A_SOURCE, HBMGUARD_SOURCE_DRIVER);
	EXPECT_ERR(sk, msg, EINVAL, "retire as DRIVER on a simulated device");
	msg = extent_request(HBMGUARD_CMD_RETIRE, id, 0, 4096);
	nla_put_u32(msg, HBMGUARD_A_SOURCE, HBMGUARD_SOURCE_DRIVER + 1);
	EXPECT_ERR(sk, msg, ERANGE, "retire with a source past DRIVER");
	if (fd >= 0) {
		struct hbmguard_extent_op x = {
			.size = sizeof(x), .device = id, .source = HBMGUARD_SOURCE_ADMIN,
			.offset = 0, .length = 4096,
		};

		if (ioctl(fd, HBMGUARD_IOC_RETIRE, &x) != -1 || errno != EINVAL)
			FAIL("ioctl retire on a GPU as ADMIN: not EINVAL");
	}
	after = get_stats(sk);
	if (before.seqnum != after.seqnum || before.generation != after.generation ||
	    before.devices != after.devices)
		FAIL("bad GPU requests changed something: seqnum %" PRIu64 " -> %" PRIu64
		     ", devices %u -> %u", before.seqnum, after.seqnum, before.devices,
		     after.devices);
	full_reply_registers_nothing(sk, sim);

	/* The driver's retirements: RETIRED, source DRIVER, no spare. */
	if (transact(sk, extent_request(HBMGUARD_CMD_RETIRE, id, 0x10000, 0x2000), NULL, NULL))
		FAIL("retire on a GPU");
	msg = extent_request(HBMGUARD_CMD_RETIRE, id, 0x40000, 0x1000);
	nla_put_u32(msg, HBMGUARD_A_FLAGS, HBMGUARD_RETIRE_PENDING);
	if (transact(sk, msg, NULL, NULL))
		FAIL("pending retirement on a GPU");
	msg = request(HBMGUARD_CMD_RESTORE, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	{
		struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

		nla_put_u64(msg, HBMGUARD_A_OFFSET, 0x80000);
		nla_put_u64(msg, HBMGUARD_A_LENGTH, 0x1000);
		nla_nest_end(msg, n);
	}
	if (transact(sk, msg, NULL, NULL))
		FAIL("restore on a GPU");
	g = gpu_get(sk, id);
	if (g.retired != 3 || g.pending != 1 || g.failed || g.spare_used || g.spare_total)
		FAIL("after retirements: retired %u pending %u failed %u spares %u/%u",
		     g.retired, g.pending, g.failed, g.spare_used, g.spare_total);
	dump_pages_cb(sk, id, gpu_page, &gp);
	if (gp.extents != 3 || gp.driver != 2 || gp.restored != 1 || gp.with_spare)
		FAIL("pages: %u extents, %u driver, %u restored, %u with a spare",
		     gp.extents, gp.driver, gp.restored, gp.with_spare);
	if (fd >= 0) {
		struct hbmguard_translate tr = {
			.size = sizeof(tr), .device = id, .offset = 0x11008,
		};

		struct hbmguard_table *t;
		uint64_t served = 0;
		uint32_t state = 0;

		if (ioctl(fd, HBMGUARD_IOC_TRANSLATE, &tr) ||
		    tr.state != HBMGUARD_STATE_RETIRED || tr.translated != 0x11008)
			FAIL("translate on a GPU: state %u translated 0x%llx", tr.state,
			     (unsigned long long)tr.translated);
		/* The mapped table (libhbmguard) too: HBMGUARD_MAP_NO_SPARE is no spare. */
		if (hbmguard_table_open(fd, id, &t)) {
			FAIL("map a GPU's table");
		} else {
			if (hbmguard_translate(t, 0x11008, &served, &state) ||
			    state != HBMGUARD_STATE_RETIRED || served != 0x11008)
				FAIL("mapped translate on a GPU: state %u served 0x%" PRIx64,
				     state, served);
			hbmguard_table_close(t);
		}
	} else {
		FAIL("open /dev/hbmguard");
	}

	/* Health: the worse of the table's and the driver's. */
	if (gpu_health(sk, id, HBMGUARD_HEALTH_RESET_REQUIRED))
		FAIL("driver health RESET_REQUIRED");
	g = gpu_get(sk, id);
	if (g.health != HBMGUARD_HEALTH_RESET_REQUIRED ||
	    g.driver_health != HBMGUARD_HEALTH_RESET_REQUIRED)
		FAIL("reset required: health %u driver %u", g.health, g.driver_health);
	if (gpu_health(sk, id, HBMGUARD_HEALTH_RMA) ||
	    gpu_get(sk, id).health != HBMGUARD_HEALTH_RMA)
		FAIL("driver health RMA");
	if (gpu_health(sk, id, HBMGUARD_HEALTH_OK) ||
	    gpu_get(sk, id).health != HBMGUARD_HEALTH_OK)
		FAIL("driver health back to OK");

	/* A second GPU, then both gone. */
	if (transact(sk, gpu_request("gpu1", "GPU-b", "10000:c1:1f.7", GPU_SIZE, 2 << 20),
		     reply_id, &id2))
		FAIL("a second GPU, domain 10000, 2 MiB pages");
	before = get_stats(sk);
	msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	if (transact(sk, msg, NULL, NULL))
		FAIL("unregister");
	msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	EXPECT_ERR(sk, msg, ENODEV, "unregister twice");
	msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id2);
	if (transact(sk, msg, NULL, NULL))
		FAIL("unregister the second");
	after = get_stats(sk);
	if (after.devices + 2 != before.devices)
		FAIL("devices %u -> %u after two unregistrations", before.devices,
		     after.devices);
	if (fd >= 0)
		close(fd);
	nl_socket_free(sk);
	printf("gpu: %s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	struct nl_sock *sk;
	int err = 0, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(cmd, "listen"))
		return cmd_listen(argc > 2 ? atol(argv[2]) : 1,
				  argc > 3 ? atoi(argv[3]) : 10000, false, false);
	if (!strcmp(cmd, "listen-times") && argc > 3)
		return cmd_listen(atol(argv[2]), atoi(argv[3]), true, false);
	if (!strcmp(cmd, "listen-journal") && argc > 3)
		return cmd_listen(atol(argv[2]), atoi(argv[3]), true, true);
	if (!strcmp(cmd, "badinput"))
		return cmd_badinput();
	if (!strcmp(cmd, "unprivileged"))
		return cmd_unprivileged();
	if (!strcmp(cmd, "flood") && argc > 3)
		return cmd_flood(atol(argv[2]), atoi(argv[3]));
	if (!strcmp(cmd, "latency") && argc > 4)
		return cmd_latency(atoi(argv[2]), strtoul(argv[3], NULL, 0),
				   atol(argv[4]));
	if (!strcmp(cmd, "echo-latency") && argc > 3)
		return cmd_echo_latency(atoi(argv[2]), atol(argv[3]));
	if (!strcmp(cmd, "forge") && argc > 3)
		return cmd_forge(atoi(argv[2]), strtoull(argv[3], NULL, 0),
				 argc > 4 ? strtoul(argv[4], NULL, 0) : 0);
	if (!strcmp(cmd, "prejoin") && argc > 4)
		return cmd_prejoin(atoi(argv[2]), strtoul(argv[3], NULL, 0), atoi(argv[4]));
	if (!strcmp(cmd, "load-race") && argc > 2)
		return cmd_load_race(argv + 1);
	if (!strcmp(cmd, "parallel"))
		return cmd_parallel();
	if (!strcmp(cmd, "unicast") && argc > 2)
		return cmd_unicast(strtoul(argv[2], NULL, 0));
	if (!strcmp(cmd, "gpu") && argc > 2)
		return cmd_gpu(atoi(argv[2]));
	if (!strcmp(cmd, "pages-compare") && argc > 2)
		return cmd_pages_compare(atoi(argv[2]));
	if (!strcmp(cmd, "pages-changed") && argc > 3)
		return cmd_pages_changed(atoi(argv[2]), strtoull(argv[3], NULL, 0));
	if (!strcmp(cmd, "pages-done-after") && argc > 3)
		return cmd_pages_done_after(atoi(argv[2]), strtoull(argv[3], NULL, 0));

	sk = connect_family();
	if (!strcmp(cmd, "devices")) {
		err = transact(sk, request(HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP),
			       print_device, NULL);
	} else if (!strcmp(cmd, "stats")) {
		err = transact(sk, request(HBMGUARD_CMD_STATS_GET, 0), print_stats, NULL);
	} else if (!strcmp(cmd, "pages") && argc > 2) {
		struct page_count pc = { .verbose = argc > 3 };

		err = dump_pages(sk, atoi(argv[2]), &pc);
		printf("pages: %" PRIu64 " extents %" PRIu64 "%s\n", pc.pages,
		       pc.extents, pc.sorted ? "" : " UNSORTED");
	} else if (!strcmp(cmd, "range-node") && argc > 3) {
		struct nl_msg *msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
		uint32_t id = ~0u;

		nla_put_string(msg, HBMGUARD_A_NAME, argv[2]);
		nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, atoi(argv[3]));
		if (argc > 4)
			nla_put_u32(msg, HBMGUARD_A_SPARE_PAGES, atoi(argv[4]));
		err = transact(sk, msg, reply_id, &id);
		if (!err)
			printf("%u\n", id);
	} else if ((!strcmp(cmd, "range-phys") || !strcmp(cmd, "range-claim")) && argc > 4) {
		struct nl_msg *msg = request(HBMGUARD_CMD_RANGE_REGISTER, 0);
		uint32_t id = ~0u;

		if (!strcmp(cmd, "range-claim"))
			nla_put_flag(msg, HBMGUARD_A_CLAIM);
		nla_put_string(msg, HBMGUARD_A_NAME, argv[2]);
		nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, strtoull(argv[3], NULL, 0));
		nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, strtoull(argv[4], NULL, 0));
		if (argc > 5)
			nla_put_u32(msg, HBMGUARD_A_SPARE_PAGES, atoi(argv[5]));
		if (argc > 6)
			nla_put_u32(msg, HBMGUARD_A_PAGE_SIZE, strtoul(argv[6], NULL, 0));
		err = transact(sk, msg, reply_id, &id);
		if (!err)
			printf("%u\n", id);
	} else if (!strcmp(cmd, "gpu-register") && argc > 6) {
		uint32_t id = ~0u;

		err = transact(sk, gpu_request(argv[2], argv[3], argv[4],
					       strtoull(argv[5], NULL, 0),
					       strtoul(argv[6], NULL, 0)), reply_id, &id);
		if (!err)
			printf("%u\n", id);
	} else if (!strcmp(cmd, "gpu-unregister") && argc > 2) {
		struct nl_msg *msg = request(HBMGUARD_CMD_GPU_UNREGISTER, 0);

		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, atoi(argv[2]));
		err = transact(sk, msg, NULL, NULL);
	} else if (!strcmp(cmd, "gpu-health") && argc > 3) {
		err = transact(sk, gpu_health_msg(atoi(argv[2]), atoi(argv[3])), NULL, NULL);
	} else if (!strcmp(cmd, "range-unregister") && argc > 2) {
		struct nl_msg *msg = request(HBMGUARD_CMD_RANGE_UNREGISTER, 0);

		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, atoi(argv[2]));
		err = transact(sk, msg, NULL, NULL);
	} else if ((!strcmp(cmd, "retire") || !strcmp(cmd, "clear")) && argc > 4) {
		err = transact(sk, extent_request(!strcmp(cmd, "retire") ?
						  HBMGUARD_CMD_RETIRE : HBMGUARD_CMD_CLEAR,
						  atoi(argv[2]), strtoull(argv[3], NULL, 0),
						  strtoull(argv[4], NULL, 0)), NULL, NULL);
	} else if (!strcmp(cmd, "restore") && argc > 4) {
		struct nl_msg *msg = request(HBMGUARD_CMD_RESTORE, 0);

		nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, atoi(argv[2]));
		for (i = 3; i + 1 < argc; i += 2) {
			struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

			nla_put_u64(msg, HBMGUARD_A_OFFSET, strtoull(argv[i], NULL, 0));
			nla_put_u64(msg, HBMGUARD_A_LENGTH, strtoull(argv[i + 1], NULL, 0));
			nla_nest_end(msg, n);
		}
		err = transact(sk, msg, NULL, NULL);
	} else if (!strcmp(cmd, "restore-records") && argc > 8) {
		struct hbmguard_restore_record *r = calloc(argc, sizeof(*r));
		size_t n = 0;

		for (i = 3; r && i + 5 < argc; i += 6)
			r[n++] = (struct hbmguard_restore_record){
				.offset = strtoull(argv[i], NULL, 0),
				.length = strtoull(argv[i + 1], NULL, 0),
				.state = atoi(argv[i + 2]), .source = atoi(argv[i + 3]),
				.first_seen = strtoull(argv[i + 4], NULL, 0),
				.last_seen = strtoull(argv[i + 5], NULL, 0),
			};
		err = r ? transact(sk, records_request(atoi(argv[2]), sizeof(*r), r, n, 0, -1),
				   NULL, NULL) : -ENOMEM;
		free(r);
	} else {
		fprintf(stderr, "hbmnl: see the top of tests/guest/hbmnl.c for usage\n");
		return 2;
	}
	if (err) {
		printf("hbmnl %s: %s\n", cmd, hbm_genl_strerror(err));
		return 1;
	}
	return 0;
}
