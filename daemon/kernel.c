// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel link, hbmguardd's source of facts from hbmguard.ko: the
 * "hbmguard" generic netlink family, its events group, its dumps.
 *
 * Each event of the module becomes one fact to the core (core.h), in the
 * module's order.  On a sequence gap or ENOBUFS events were missed: the
 * link says so (RESYNC) and reads every device again, each a DEVICE_SEEN
 * and what its table holds as unheard PAGES facts.  A module reload
 * registers the family anew: the controller's "notify" group says so, and
 * the link joins the new group and reads every device as added.  The
 * sequence numbers are the module's own, so their gaps are mended here,
 * before the event that showed one is passed on.  The link also answers
 * what the core asks of the module's devices (struct hbm_source_ops:
 * list, dump, restore, retire or clear) and registers the configured
 * ranges and policies.
 *
 * A device's table read for the sinks goes to them extent by extent as it
 * is dumped, on a socket of its own (table_facts()): 10^6 extents are never
 * held here.  Stored pages go back in packed (struct
 * hbmguard_restore_record, each keeping its times and errors) where the
 * module's family has HBMGUARD_A_RECORDS, each with its own source, as
 * extent nests (RESTORED) otherwise.
 *
 * It must not block the loop longer than one read of the devices and
 * their tables, allocates per read of the devices or a table (never per
 * page event),
 * and calls no sink: facts go out through the link the core gave at start.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <linux/hbmguard.h>

#include "config.h"
#include "core.h"
#include "daemon.h"
#include "genl.h"
#include "kernel.h"
#include "nvlog.h"
#include "restore_msg.h"
#include "seen.h"

#define ALL_DEVICES UINT32_MAX
/*
 * The event socket's read: a whole event with room to spare (the largest,
 * nlctrl's news of a family registered, lists its operations and groups).
 */
#define EVENT_READ_BYTES	(32 * 1024)
/* Forged messages dropped by one read at most, the rest at the loop's next turn. */
#define EVENT_DROPS_A_READ	64

static int transact(struct hbm_kernel *k, struct nl_msg *msg,
		    nl_recvmsg_msg_cb_t parse, void *arg)
{
	return hbm_genl_transact(k->req, msg, parse, arg);
}

static struct nl_msg *request(struct hbm_kernel *k, int cmd, int flags)
{
	return hbm_genl_request(k->family, cmd, flags);
}

/* Devices and their tables, as the kernel has them. */
static int parse_device(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct device_list *l = arg;
	struct device *dev;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) ||
	    !a[HBMGUARD_A_DEVICE_ID] || !a[HBMGUARD_A_IDENTITY] ||
	    !a[HBMGUARD_A_PAGE_SIZE] || l->nr == HBMGUARD_MAX_DEVICES)
		return NL_SKIP;
	dev = &l->dev[l->nr++];
	dev->id = nla_get_u32(a[HBMGUARD_A_DEVICE_ID]);
	snprintf(dev->identity, sizeof(dev->identity), "%s",
		 nla_get_string(a[HBMGUARD_A_IDENTITY]));
	dev->page_size = nla_get_u32(a[HBMGUARD_A_PAGE_SIZE]);
	dev->kind = a[HBMGUARD_A_KIND] ? nla_get_u32(a[HBMGUARD_A_KIND]) : 0;
	snprintf(dev->pci, sizeof(dev->pci), "%s",
		 a[HBMGUARD_A_PCI_ADDR] ? nla_get_string(a[HBMGUARD_A_PCI_ADDR]) : "");
	dev->size = a[HBMGUARD_A_HBM_SIZE] ? nla_get_u64(a[HBMGUARD_A_HBM_SIZE]) : 0;
	dev->counts_losses = a[HBMGUARD_A_DATA_LOST] && a[HBMGUARD_A_DATA_LOST_SEQNUM] &&
			     a[HBMGUARD_A_ADDED_SEQNUM];
	if (dev->counts_losses) {
		dev->losses.count = nla_get_u64(a[HBMGUARD_A_DATA_LOST]);
		dev->losses.last_seqnum = nla_get_u64(a[HBMGUARD_A_DATA_LOST_SEQNUM]);
		dev->losses.added_seqnum = nla_get_u64(a[HBMGUARD_A_ADDED_SEQNUM]);
	}
	return NL_OK;
}

/*
 * A PAGES_GET dump, read as it comes, in either of its forms
 * (uapi/linux/hbmguard.h): each extent to .take, which returns NL_OK, or
 * NL_SKIP when it can take no more.  An extent or records not in the form
 * the module says void the read: .malformed.  Either way the dump is read
 * to its end (NL_SKIP, never NL_STOP: libnl drops the rest of the datagram
 * then, the dump's DONE with it, and the next read would wait for it).
 */
struct dump_read {
	int (*take)(void *arg, const struct hbm_state_record *r);
	void *arg;
	bool malformed;
};

/* HBMGUARD_A_EXTENT: one extent nested. */
static int nested_extent(struct dump_read *d, struct nlattr *nest)
{
	struct nlattr *e[HBMGUARD_A_MAX + 1];
	struct hbm_state_record r;

	if (nla_parse_nested(e, HBMGUARD_A_MAX, nest, NULL) ||
	    !e[HBMGUARD_A_OFFSET] || !e[HBMGUARD_A_LENGTH] || !e[HBMGUARD_A_STATE]) {
		d->malformed = true;
		return NL_SKIP;
	}
	r = (struct hbm_state_record){
		.offset = nla_get_u64(e[HBMGUARD_A_OFFSET]),
		.length = nla_get_u64(e[HBMGUARD_A_LENGTH]),
		.first_seen = e[HBMGUARD_A_FIRST_SEEN] ? nla_get_u64(e[HBMGUARD_A_FIRST_SEEN]) : 0,
		.last_seen = e[HBMGUARD_A_LAST_SEEN] ? nla_get_u64(e[HBMGUARD_A_LAST_SEEN]) : 0,
		.state = nla_get_u32(e[HBMGUARD_A_STATE]),
		.source = e[HBMGUARD_A_SOURCE] ? nla_get_u32(e[HBMGUARD_A_SOURCE]) : 0,
		.errors = e[HBMGUARD_A_ERRORS] ? nla_get_u32(e[HBMGUARD_A_ERRORS]) : 0,
	};
	return d->take(d->arg, &r);
}

/*
 * HBMGUARD_A_RECORDS of @size bytes each: struct hbmguard_restore_record,
 * its own size or larger (a later module's: the bytes past it are what
 * this daemon does not know).
 */
static int packed_extents(struct dump_read *d, struct nl_msg *msg, uint32_t size)
{
	struct nlattr *a;
	int rem, ret = NL_OK;

	if (size < sizeof(struct hbmguard_restore_record) || size % 8) {
		d->malformed = true;
		return NL_SKIP;
	}
	nla_for_each_attr(a, genlmsg_attrdata(nlmsg_data(nlmsg_hdr(msg)), 0),
			  genlmsg_attrlen(nlmsg_data(nlmsg_hdr(msg)), 0), rem) {
		const char *p = nla_data(a);
		size_t i;

		if (nla_type(a) != HBMGUARD_A_RECORDS)
			continue;
		if (!nla_len(a) || nla_len(a) % size) {
			d->malformed = true;
			return NL_SKIP;
		}
		for (i = 0; ret == NL_OK && i < nla_len(a) / size; i++) {
			struct hbmguard_restore_record in;
			struct hbm_state_record r;

			memcpy(&in, p + i * size, sizeof(in));	/* 4-aligned in the message */
			r = (struct hbm_state_record){
				.offset = in.offset, .length = in.length,
				.first_seen = in.first_seen, .last_seen = in.last_seen,
				.state = in.state, .source = in.source, .errors = in.errors,
			};
			ret = d->take(d->arg, &r);
		}
	}
	return ret;
}

static int dump_extents(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct dump_read *d = arg;

	if (d->malformed)	/* the rest of the dump is read, not taken */
		return NL_SKIP;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL))
		goto malformed;
	if (a[HBMGUARD_A_EXTENT])
		return nested_extent(d, a[HBMGUARD_A_EXTENT]);
	if (a[HBMGUARD_A_RECORDS]) {
		if (!a[HBMGUARD_A_RECORD_SIZE] ||
		    nla_len(a[HBMGUARD_A_RECORD_SIZE]) < (int)sizeof(uint32_t))
			goto malformed;
		return packed_extents(d, msg, nla_get_u32(a[HBMGUARD_A_RECORD_SIZE]));
	}
	return NL_SKIP;		/* neither form: not an extent's (a later module's) */
malformed:
	d->malformed = true;
	return NL_SKIP;
}

/*
 * A device's PAGES_GET: packed where the module takes packed records (its
 * dumps may still come nested: a module with packed RESTOREs before packed
 * dumps ignores the size).
 */
static struct nl_msg *pages_request(struct hbm_kernel *k, const struct device *dev)
{
	struct nl_msg *msg = request(k, HBMGUARD_CMD_PAGES_GET, NLM_F_DUMP);

	if (msg && (nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id) ||
		    (k->packed && nla_put_u32(msg, HBMGUARD_A_RECORD_SIZE,
					      sizeof(struct hbmguard_restore_record))))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	return msg;
}

/*
 * A dump read: the transaction's error, else -EPROTO for a malformed
 * message.  One during which the table changed (uapi/linux/hbmguard.h,
 * PAGES_GET) is taken as read: each caller takes the module's SEQNUM
 * first (module_seqnum()), and each change made during the dump is an
 * event after it, which the store logs after the read it saves from, as
 * after any read.  The other readers (gpus.c's reconciliation,
 * core_bypassed()) act on a moment's table that may change as soon as
 * it is read, changed in the middle or not.  Reading again would not end
 * under a storm of changes.
 */
static int dump_read(struct nl_sock *sk, struct nl_msg *msg, struct dump_read *d)
{
	int err = hbm_genl_transact_changing(sk, msg, dump_extents, d);

	if (!err && d->malformed) {
		fprintf(stderr, "<3>hbmguardd: a PAGES_GET message not in its form: the read is void\n");
		err = -EPROTO;
	}
	return err;
}

static int push_extent(void *arg, const struct hbm_state_record *r)
{
	struct hbm_extents *x = arg;

	return !x->failed && hbm_extents_push(x, r) ? NL_OK : NL_SKIP;
}

static int parse_seqnum(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];

	if (!genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) && a[HBMGUARD_A_SEQNUM])
		*(uint64_t *)arg = nla_get_u64(a[HBMGUARD_A_SEQNUM]);
	return NL_OK;
}

/*
 * The number of the module's last event (STATS_GET).  The module makes a
 * page event after the change, under the device's lock (device_changed(),
 * kmod/device.c): a table read begun after this holds the changes of every
 * event up to it, which the store need not log again.
 */
static int module_seqnum(struct hbm_kernel *k, uint64_t *seq)
{
	*seq = 0;
	return transact(k, request(k, HBMGUARD_CMD_STATS_GET, 0), parse_seqnum, seq);
}

/*
 * A table read whose events are not known is no table read: the store
 * would log again, after a snapshot, events it holds, and a page an
 * operator cleared since would come back at the next start.
 */
static int dump_pages(void *ctx, const struct device *dev, struct hbm_extents *x)
{
	struct hbm_kernel *k = ctx;
	int err = module_seqnum(k, &x->seqnum);

	if (err)
		return err;
	err = dump_read(k->req, pages_request(k, dev),
			&(struct dump_read){ .take = push_extent, .arg = x });
	return err ? err : x->failed ? -ENOMEM : 0;	/* a table with holes is none */
}

/*
 * A request of extent nests (a module without packed records) holds as
 * many as fit in 32 KiB (some 1150), so that a restart with 10^6 stored
 * pages takes some 870 requests, not 10^6.  nl_connect() sets a 32 KiB send
 * buffer, which the kernel doubles, and a message must fit in it less 32
 * bytes, or sendmsg() fails (EMSGSIZE: nl_socket_set_buffer_size(),
 * lib/socket.c, libnl 3.7; netlink_sendmsg(), net/netlink/af_netlink.c);
 * set_request_buffer() makes it larger for packed requests.
 */
#define RESTORE_REQUEST_BYTES	(32 * 1024)

/* One stored extent into a RESTORE; false, the message as it was, if full. */
static bool put_extent(struct nl_msg *msg, const struct hbm_state_record *r)
{
	struct nlattr *n = nla_nest_start(msg, HBMGUARD_A_EXTENT);

	if (!n)
		return false;
	if (nla_put_u64(msg, HBMGUARD_A_OFFSET, r->offset) ||
	    nla_put_u64(msg, HBMGUARD_A_LENGTH, r->length) ||
	    (r->state == HBMGUARD_STATE_PENDING &&
	     nla_put_u32(msg, HBMGUARD_A_STATE, HBMGUARD_STATE_PENDING))) {
		nla_nest_cancel(msg, n);
		return false;
	}
	nla_nest_end(msg, n);
	return true;
}

/* A packed RESTORE's layout: restore_msg.h, shared with make bench. */

/*
 * The most records one packed RESTORE of this family carries; the send
 * buffer is at least 2 * RESTORE_REQUEST_BYTES (set_request_buffer()).
 */
static size_t packed_per_request(const struct hbm_kernel *k)
{
	size_t n = k->restore_bytes > PACKED_HEAD_BYTES ?
		   (k->restore_bytes - PACKED_HEAD_BYTES) / sizeof(struct hbmguard_restore_record) : 0;

	return n < RESTORE_MAX_EXTENTS ? n : RESTORE_MAX_EXTENTS;
}

/*
 * One packed RESTORE message for a device's restore, sent request after
 * request: its header and the device's attributes are put once, and each
 * request rewinds to them (hbm_genl_rewind()) and reserves its records in
 * place: a restore of 10^6 records allocates (and faults in) one message
 * of a request's size, not 62.
 */
struct packed_msg {
	struct nl_msg *msg;
	uint32_t head_len;		/* nlmsg_len after the device's attributes */
	bool gpu;			/* HBMGUARD_KIND_GPU: hbm_state_restore_record() */
};

static int packed_msg_init(struct hbm_kernel *k, const struct device *dev,
			   size_t per_request, struct packed_msg *m)
{
	/*
	 * As large as its records, not as the send buffer: 16384 records are
	 * 768 KiB of a 2 MiB buffer.  The 2 MiB one was also a mapping of
	 * exactly 2 MiB, which 6.12 aligns to 2 MiB as it does any anonymous
	 * mapping of a PMD multiple (__get_unmapped_area(), mm/mmap.c), and
	 * netlink_sendmsg()'s copy of it into a kvmalloc()ed skb (1 MiB
	 * aligned: net/netlink/af_netlink.c) ran four times slower in a TCG
	 * guest: qemu's software TLB is direct mapped by page number
	 * (tlb_index(), include/exec/cpu_ldst.h, qemu 7.2), and every page of
	 * the one evicted the other's.
	 */
	size_t size = PACKED_HEAD_BYTES + per_request * sizeof(struct hbmguard_restore_record);

	m->msg = hbm_genl_request_sized(k->family, HBMGUARD_CMD_RESTORE, 0, size);
	if (!m->msg || nla_put_u32(m->msg, HBMGUARD_A_DEVICE_ID, dev->id) ||
	    nla_put_u32(m->msg, HBMGUARD_A_RECORD_SIZE, sizeof(struct hbmguard_restore_record))) {
		nlmsg_free(m->msg);
		m->msg = NULL;
		return -ENOMEM;
	}
	m->head_len = nlmsg_hdr(m->msg)->nlmsg_len;
	m->gpu = dev->kind == HBMGUARD_KIND_GPU;
	return 0;
}

/*
 * Stored records @s->records[@from, @end) into @m's request, each kept as
 * it was stored (times, errors: hbm_state_restore_record()).
 */
static int packed_fill(struct packed_msg *m, const struct hbm_state *s, size_t from,
		       size_t end)
{
	size_t i = from;

	hbm_genl_rewind(m->msg, m->head_len);
	while (i < end) {
		size_t n = end - i < RECORDS_PER_ATTR ? end - i : RECORDS_PER_ATTR, j;
		struct nlattr *a = nla_reserve(m->msg, HBMGUARD_A_RECORDS,
					       n * sizeof(struct hbmguard_restore_record));
		struct hbmguard_restore_record *r;

		if (!a)
			return -EMSGSIZE;	/* cannot be: packed_per_request() */
		r = nla_data(a);
		for (j = 0; j < n; j++)
			hbm_state_restore_record(&s->records[i + j], m->gpu, &r[j]);
		i += n;
	}
	return 0;
}

/*
 * Records [@from, @end) of @s did not reach the table (refused, or their
 * request failed): they cover nothing of its read (hbm_state_cover()), so
 * that a page retired there since is news.  A request that failed part way
 * may have applied some: taken as news too, a recovery in doubt rather
 * than a loss missed.  Without memory for the mark, nothing restored is
 * known.
 */
static void unsent(struct hbm_kernel *k, const struct hbm_state *s, size_t from, size_t end)
{
	if (k->restored != s)
		return;		/* not kept for a read: nothing to tell it */
	if (!k->unsent)
		k->unsent = calloc((s->nr + 63) / 64, sizeof(*k->unsent));
	if (!k->unsent) {
		fprintf(stderr, "<3>hbmguardd: no memory to mark stored extents not restored:"
			" none taken as known\n");
		k->restored = NULL;
		return;
	}
	for (; from < end; from++)
		k->unsent[from / 64] |= 1ULL << (from % 64);
}

/* Stored extents refused one by one said each, up to this many a restore. */
#define REFUSED_SAID 8

/*
 * Records [@from, @end) in one packed request; one the module refuses
 * (EINVAL, ERANGE: a record past the device's usable size after its spares
 * were raised, say) is tried again in halves, so that only the records it
 * refuses are lost, each said: not the thousands beside them.
 */
static int restore_packed(struct hbm_kernel *k, const struct device *dev, struct packed_msg *m,
			  const struct hbm_state *s, size_t from, size_t end, size_t *refused)
{
	int err = packed_fill(m, s, from, end);

	if (err) {
		unsent(k, s, from, end);
		return err;
	}
	err = hbm_genl_exchange(k->req, m->msg, NULL, NULL);
	if ((err == -EINVAL || err == -ERANGE) && end - from > 1) {
		size_t half = from + (end - from) / 2;
		int err2;

		err = restore_packed(k, dev, m, s, from, half, refused);
		err2 = restore_packed(k, dev, m, s, half, end, refused);
		return err ? err : err2;
	}
	if (err)
		unsent(k, s, from, end);
	if (err && end - from == 1 && ++*refused <= REFUSED_SAID)
		fprintf(stderr, "<4>hbmguardd: stored extent 0x%" PRIx64 "+0x%" PRIx64
			" of %s refused by the module: %s: not restored%s\n",
			s->records[from].offset, s->records[from].length, dev->identity,
			hbm_genl_strerror(err),
			*refused == REFUSED_SAID ? " (the next such are counted, not said)" : "");
	return err;
}

/*
 * Put stored pages back into the kernel: raises no recovery.  Packed where
 * the module takes it (each page's source, times and errors kept);
 * otherwise (an older module) as extent nests, RESTORED.  A request refused
 * costs its own extents, not the requests after it; a packed one only the
 * records the module refuses (restore_packed()).
 *
 * Return: 0, or the first request's error.
 */
static int restore(struct hbm_kernel *k, const struct device *dev,
		   const struct hbm_state *s)
{
	size_t i = 0, refused = 0, per_request = packed_per_request(k);
	bool packed = k->packed && per_request;
	struct packed_msg m = { 0 };
	int first_err = 0;

	if (packed && s->nr && packed_msg_init(k, dev, per_request, &m)) {
		unsent(k, s, 0, s->nr);
		return -ENOMEM;
	}
	while (packed && i < s->nr) {
		size_t end = s->nr - i < per_request ? s->nr : i + per_request;
		int err = restore_packed(k, dev, &m, s, i, end, &refused);

		if (err && !first_err)
			first_err = err;
		i = end;
	}
	nlmsg_free(m.msg);
	if (refused > REFUSED_SAID)
		fprintf(stderr, "<4>hbmguardd: %zu stored extents of %s refused by the module: not restored\n",
			refused, dev->identity);
	while (i < s->nr) {
		struct nl_msg *msg = hbm_genl_request_sized(k->family, HBMGUARD_CMD_RESTORE, 0,
							    RESTORE_REQUEST_BYTES);
		size_t first = i;
		int err;

		if (!msg || nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id)) {
			nlmsg_free(msg);
			unsent(k, s, i, s->nr);
			return -ENOMEM;
		}
		while (i < s->nr && put_extent(msg, &s->records[i]))
			i++;
		if (i == first) {	/* cannot be: one extent is some 40 bytes */
			nlmsg_free(msg);
			unsent(k, s, i, s->nr);
			return -EMSGSIZE;
		}
		err = transact(k, msg, NULL, NULL);
		if (err)
			unsent(k, s, first, i);
		if (err && !first_err)
			first_err = err;
	}
	return first_err;
}

static uint64_t attr_u64(struct nlattr **a, int type)
{
	return a[type] ? nla_get_u64(a[type]) : 0;
}

static uint32_t attr_u32(struct nlattr **a, int type)
{
	return a[type] ? nla_get_u32(a[type]) : 0;
}

/*
 * What the module has of one device, to compare with the configuration:
 * the device named @name of a dump, or the one device of a do.
 */
struct registered {
	const char *name;
	bool found;
	bool claimed;
	uint32_t kind;
	int numa_node;			/* -1: none */
	uint64_t phys;
	uint64_t size;
	uint32_t spare_total;
	uint64_t pages;			/* usable: what RETIRE_LIMIT is checked against */
};

static int parse_registered(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct registered *r = arg;
	uint32_t page_size;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) || !a[HBMGUARD_A_NAME] ||
	    !a[HBMGUARD_A_PAGE_SIZE] || r->found ||
	    (r->name && strcmp(nla_get_string(a[HBMGUARD_A_NAME]), r->name)))
		return NL_SKIP;
	page_size = nla_get_u32(a[HBMGUARD_A_PAGE_SIZE]);
	r->found = true;
	r->claimed = a[HBMGUARD_A_CLAIM];
	r->kind = attr_u32(a, HBMGUARD_A_KIND);
	r->numa_node = a[HBMGUARD_A_NUMA_NODE] ? (int)nla_get_u32(a[HBMGUARD_A_NUMA_NODE]) : -1;
	r->phys = attr_u64(a, HBMGUARD_A_PHYS_ADDR);
	r->size = attr_u64(a, HBMGUARD_A_HBM_SIZE);
	r->spare_total = attr_u32(a, HBMGUARD_A_SPARE_TOTAL);
	r->pages = page_size ? attr_u64(a, HBMGUARD_A_USABLE_SIZE) / page_size : 0;
	return NL_OK;
}

/*
 * The configured policy of a device, into the kernel: every key, a key not
 * configured as 0, the device's default (uapi/linux/hbmguard.h), so that a
 * key taken out of the configuration, or a change of hbmctl policy, does
 * not outlive a reload.  A RetireLimit the device has not the pages for
 * would have the module refuse the whole request: it costs that key alone,
 * said, and the device keeps its default limit.
 */
/*
 * POLICY_SET of CE_THRESHOLD, CE_WINDOW and RETIRE_LIMIT, @values in that
 * order; a 0 (the device's default) sent only where @defaults.
 */
static int policy_set(struct hbm_kernel *k, uint32_t id, const uint32_t values[3], bool defaults)
{
	static const int attrs[3] = {
		HBMGUARD_A_CE_THRESHOLD, HBMGUARD_A_CE_WINDOW, HBMGUARD_A_RETIRE_LIMIT,
	};
	struct nl_msg *msg = request(k, HBMGUARD_CMD_POLICY_SET, 0);

	if (!msg)
		return -ENOMEM;
	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, id);
	for (int i = 0; i < 3; i++)
		if (values[i] || defaults)
			nla_put_u32(msg, attrs[i], values[i]);
	return transact(k, msg, NULL, NULL);
}

static void apply_policy(struct hbm_kernel *k, const struct device *dev)
{
	struct hbm_policy_config p = hbm_config_policy_for(&k->d->cfg, dev->identity);
	uint32_t limit = p.set & HBM_SET_RETIRE_LIMIT ? p.retire_limit : 0;
	struct registered reg = { 0 };
	uint32_t values[3];
	struct nl_msg *msg;
	int err;

	if (limit) {
		msg = request(k, HBMGUARD_CMD_DEVICE_GET, 0);
		if (msg)
			nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id);
		if (!transact(k, msg, parse_registered, &reg) && reg.found && limit > reg.pages) {
			fprintf(stderr, "<3>hbmguardd: policy of %s: RetireLimit=%" PRIu32 " is above "
				"the device's %" PRIu64 " pages: its default limit applies\n",
				dev->identity, limit, reg.pages);
			limit = 0;
		}
	}
	values[0] = p.set & HBM_SET_CE_THRESHOLD ? p.ce_threshold : 0;
	values[1] = p.set & HBM_SET_CE_WINDOW ? p.ce_window : 0;
	values[2] = limit;
	err = policy_set(k, dev->id, values, true);
	/*
	 * A module older than this daemon (an upgrade not yet followed by a
	 * reload) refuses 0: the configured keys at least, the others as the
	 * kernel has them, as before.
	 */
	if ((err == -EINVAL || err == -ERANGE) && (!values[0] || !values[1] || !values[2])) {
		fprintf(stderr, "<4>hbmguardd: policy of %s: the module does not take 0 for its "
			"default (it is older than hbmguardd): keys not set stay as the kernel has "
			"them until it is reloaded\n", dev->identity);
		err = values[0] || values[1] || values[2] ? policy_set(k, dev->id, values, false) : 0;
	}
	if (err)
		fprintf(stderr, "<3>hbmguardd: policy of %s refused by the kernel: %s\n",
			dev->identity, hbm_genl_strerror(err));
}

/* The configured policy, then the stored pages: the core's restore. */
static void restore_stored(void *ctx, const struct device *dev,
			   const struct hbm_state *stored)
{
	struct hbm_kernel *k = ctx;
	int err;

	apply_policy(k, dev);
	if (!stored->nr)
		return;
	/*
	 * Its table is read next where this is its DEVICE_SEEN's restore
	 * (table_facts(), in the same turn): what it has of these is no news.
	 * @stored is the store's, kept until that read's TABLE_READ, after
	 * which this is forgotten.  A restore outside a read (the store's,
	 * once a file it could not read when the device was seen reads) is
	 * kept for nothing: @stored is gone once this returns.
	 */
	if (k->reading && k->reading_id == dev->id) {
		free(k->unsent);
		k->unsent = NULL;
		k->restored = stored;
		k->restored_id = dev->id;
	}
	err = restore(k, dev, stored);
	if (err)
		fprintf(stderr, "<4>hbmguardd: restoring %zu extents into %s: %s\n",
			stored->nr, dev->identity, hbm_genl_strerror(err));
	else
		fprintf(stderr, "<5>hbmguardd: restored %zu extents into %s\n",
			stored->nr, dev->identity);
}

/*
 * The configuration's [Range] sections, registered with the module: at
 * start, after a reload and when the module comes back.  One registered
 * already (the daemon restarted) is EEXIST, and fine as long as the module
 * has it as configured (registered()).  A range the configuration no
 * longer names stays registered: unregistering takes its table with it.
 */
static int register_range(struct hbm_kernel *k, const struct hbm_range_config *r, bool claim)
{
	struct nl_msg *msg = request(k, HBMGUARD_CMD_RANGE_REGISTER, 0);

	if (!msg)
		return -ENOMEM;
	nla_put_string(msg, HBMGUARD_A_NAME, r->name);
	if (r->numa_node >= 0) {
		nla_put_u32(msg, HBMGUARD_A_NUMA_NODE, r->numa_node);
	} else {
		nla_put_u64(msg, HBMGUARD_A_PHYS_ADDR, r->address);
		nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, r->size);
	}
	if (r->spare_pages)
		nla_put_u32(msg, HBMGUARD_A_SPARE_PAGES, r->spare_pages);
	if (claim)
		nla_put_flag(msg, HBMGUARD_A_CLAIM);
	return transact(k, msg, NULL, NULL);
}

/* One more KEY=VALUE of what differs, appended to @buf. */
static void __attribute__((format(printf, 3, 4)))
differs(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n && n + 2 < len) {
		strcpy(buf + n, ", ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

/*
 * EEXIST from the module: range @r is registered already, or clashes with
 * a device that is (the same memory, its name or identity taken).  A range
 * registered is not registered anew (that would take its table, and the
 * pages it retired, with it): what the configuration changed in it waits
 * for the module's reload, and the operator is told so.  SparePages= unset
 * is the module's default, which the daemon does not compute: not compared.
 */
static void registered(struct hbm_kernel *k, const struct hbm_range_config *r)
{
	struct registered reg = { .name = r->name };
	char has[160] = "", wants[160] = "";
	int err = transact(k, request(k, HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP),
			   parse_registered, &reg);

	if (err) {
		fprintf(stderr, "<4>hbmguardd: range %s: registered already, but the devices "
			"cannot be read to compare: %s\n", r->name, hbm_genl_strerror(err));
		return;
	}
	if (!reg.found || reg.kind != HBMGUARD_KIND_RANGE) {
		fprintf(stderr, "<3>hbmguardd: range %s not registered: %s\n", r->name,
			reg.found ? "a device of another kind has its name" :
			"its memory overlaps a registered device's, or its identity is taken");
		return;
	}
	if (r->numa_node >= 0 && reg.numa_node != r->numa_node) {
		differs(wants, sizeof(wants), "NumaNode=%d", r->numa_node);
		if (reg.numa_node >= 0)
			differs(has, sizeof(has), "NumaNode=%d", reg.numa_node);
		else
			differs(has, sizeof(has), "Address=0x%" PRIx64, reg.phys);
	}
	if (r->numa_node < 0 && (reg.numa_node >= 0 || reg.phys != r->address ||
				 reg.size != r->size)) {
		differs(wants, sizeof(wants), "Address=0x%" PRIx64, r->address);
		differs(wants, sizeof(wants), "Size=%" PRIu64, r->size);
		if (reg.numa_node >= 0)
			differs(has, sizeof(has), "NumaNode=%d", reg.numa_node);
		differs(has, sizeof(has), "Address=0x%" PRIx64, reg.phys);
		differs(has, sizeof(has), "Size=%" PRIu64, reg.size);
	}
	if (r->spare_pages && r->spare_pages != reg.spare_total) {
		differs(wants, sizeof(wants), "SparePages=%" PRIu32, r->spare_pages);
		differs(has, sizeof(has), "SparePages=%" PRIu32, reg.spare_total);
	}
	if (r->claim != reg.claimed) {
		differs(wants, sizeof(wants), "Claim=%s", r->claim ? "yes" : "no");
		differs(has, sizeof(has), "Claim=%s", reg.claimed ? "yes" : "no");
	}
	if (*wants)
		fprintf(stderr, "<4>hbmguardd: range %s is registered with %s: the configuration's "
			"%s applies only once the module is reloaded\n", r->name, has, wants);
}

/*
 * The configuration's ranges.  A claimed range whose memory cannot be taken
 * (EBUSY: its bad frames stay out of the page allocator until reboot once
 * it was unregistered, at a module reload among others) is registered
 * without its aperture: its table, and the errors the kernel reports on
 * it, matter more than the mapping.
 */
static void register_ranges(struct hbm_kernel *k)
{
	size_t i;

	for (i = 0; i < k->d->cfg.nr_ranges; i++) {
		const struct hbm_range_config *r = &k->d->cfg.ranges[i];
		int err = register_range(k, r, r->claim);

		if (err == -EBUSY && r->claim) {
			fprintf(stderr, "<4>hbmguardd: range %s: its memory cannot be claimed "
				"(%s): registered without an aperture\n", r->name,
				hbm_genl_strerror(err));
			err = register_range(k, r, false);
		}
		if (err == -EEXIST)
			registered(k, r);
		else if (err)
			fprintf(stderr, "<3>hbmguardd: range %s not registered: %s\n", r->name,
				hbm_genl_strerror(err));
		else
			fprintf(stderr, "<6>hbmguardd: range %s registered\n", r->name);
	}
}

/* HBM_CTL_RETIRE or HBM_CTL_CLEAR, into the kernel's table: the core's change. */
static int change(void *ctx, const struct device *dev, uint16_t type,
		  const struct hbm_ctl_extent *x)
{
	struct hbm_kernel *k = ctx;
	struct nl_msg *msg = request(k, type == HBM_CTL_RETIRE ? HBMGUARD_CMD_RETIRE :
				     HBMGUARD_CMD_CLEAR, 0);

	nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id);
	nla_put_u64(msg, HBMGUARD_A_OFFSET, x->offset);
	nla_put_u64(msg, HBMGUARD_A_LENGTH, x->length);
	if (x->flags & HBM_CTL_PENDING)
		nla_put_u32(msg, HBMGUARD_A_FLAGS, HBMGUARD_RETIRE_PENDING);
	return transact(k, msg, NULL, NULL);
}

/* The module's devices: the core's list. */
static int list_devices(void *ctx, struct device_list *l)
{
	struct hbm_kernel *k = ctx;

	return transact(k, request(k, HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP), parse_device, l);
}

/*
 * The devices, read for the link itself (not for a sink's question): what
 * it reads next is compared with them, to tell a device new under an old
 * id, or one gone.
 */
static int read_devices(struct hbm_kernel *k, struct device_list *l)
{
	size_t i;
	int err = k->link.devices(k->link.core, l);

	if (err)
		return err;
	memset(k->listed, 0, sizeof(k->listed));
	memset(k->listed_added, 0, sizeof(k->listed_added));
	for (i = 0; i < l->nr; i++) {
		const struct device *dev = &l->dev[i];

		if (dev->id >= HBMGUARD_MAX_DEVICES)
			continue;
		strcpy(k->listed[dev->id], dev->identity);
		if (dev->counts_losses)
			k->listed_added[dev->id] = dev->losses.added_seqnum;
	}
	return 0;
}

/*
 * A GPU its driver bypasses, as HBMGUARD_CMD_GPU_REGISTER takes it
 * (uapi/linux/hbmguard.h): the core's gpu_register.  Its DEVICE_ADDED
 * event brings it back as a DEVICE_SEEN; one registered already is EEXIST.
 */
static int gpu_register(void *ctx, const struct hbm_fact_device *gpu)
{
	struct hbm_kernel *k = ctx;
	struct nl_msg *msg = request(k, HBMGUARD_CMD_GPU_REGISTER, 0);

	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, HBMGUARD_A_NAME, gpu->name) ||
	    nla_put_string(msg, HBMGUARD_A_IDENTITY, gpu->identity) ||
	    nla_put_string(msg, HBMGUARD_A_PCI_ADDR, gpu->pci) ||
	    nla_put_u64(msg, HBMGUARD_A_HBM_SIZE, gpu->size) ||
	    nla_put_u32(msg, HBMGUARD_A_PAGE_SIZE, gpu->page_size)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	return transact(k, msg, NULL, NULL);
}

/* What a GPU's driver says of its health: the core's gpu_health. */
static int gpu_health(void *ctx, const struct device *dev, uint32_t health)
{
	struct hbm_kernel *k = ctx;
	struct nl_msg *msg = request(k, HBMGUARD_CMD_GPU_HEALTH_SET, 0);

	if (!msg)
		return -ENOMEM;
	if (nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id) ||
	    nla_put_u32(msg, HBMGUARD_A_DRIVER_HEALTH, health)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	return transact(k, msg, NULL, NULL);
}

static void attr_string(struct nlattr **a, int type, char *out, size_t len)
{
	snprintf(out, len, "%s", a[type] ? nla_get_string(a[type]) : "");
}

/* A device's counts: DEVICE_GET (uapi/linux/hbmguard.h), absent ones 0. */
static int parse_counts(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct hbm_counts *c = arg;
	struct hbm_device_counts *dev;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) ||
	    !a[HBMGUARD_A_DEVICE_ID] || c->nr == HBMGUARD_MAX_DEVICES)
		return NL_SKIP;
	dev = &c->dev[c->nr++];
	dev->id = nla_get_u32(a[HBMGUARD_A_DEVICE_ID]);
	dev->kind = attr_u32(a, HBMGUARD_A_KIND);
	attr_string(a, HBMGUARD_A_NAME, dev->name, sizeof(dev->name));
	attr_string(a, HBMGUARD_A_IDENTITY, dev->identity, sizeof(dev->identity));
	attr_string(a, HBMGUARD_A_PCI_ADDR, dev->pci, sizeof(dev->pci));
	dev->health = attr_u32(a, HBMGUARD_A_HEALTH);
	dev->spare_total = attr_u32(a, HBMGUARD_A_SPARE_TOTAL);
	dev->spare_used = attr_u32(a, HBMGUARD_A_SPARE_USED);
	dev->spare_bad = attr_u32(a, HBMGUARD_A_SPARE_BAD);
	dev->nr_retired = attr_u32(a, HBMGUARD_A_NR_RETIRED);
	dev->nr_pending = attr_u32(a, HBMGUARD_A_NR_PENDING);
	dev->nr_failed = attr_u32(a, HBMGUARD_A_NR_FAILED);
	dev->ce_events = attr_u64(a, HBMGUARD_A_CE_EVENTS);
	dev->ue_events = attr_u64(a, HBMGUARD_A_UE_EVENTS);
	dev->errors_dropped = attr_u64(a, HBMGUARD_A_ERRORS_DROPPED);
	dev->ce_forgotten = attr_u64(a, HBMGUARD_A_CE_FORGOTTEN);
	return NL_OK;
}

/* STATS_GET: per intake path, PATH_STATS nests of PATH, RECEIVED, DROPPED. */
static int parse_path_stats(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1], *p[HBMGUARD_A_MAX + 1], *n;
	struct hbm_counts *c = arg;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) || !a[HBMGUARD_A_STATS])
		return NL_SKIP;
	nla_for_each_nested(n, a[HBMGUARD_A_STATS], rem) {
		uint32_t path;

		if (nla_parse_nested(p, HBMGUARD_A_MAX, n, NULL) || !p[HBMGUARD_A_PATH])
			continue;
		path = nla_get_u32(p[HBMGUARD_A_PATH]);
		if (path >= __HBMGUARD_PATH_MAX)	/* a newer module's: not ours to name */
			continue;
		c->received[path] = attr_u64(p, HBMGUARD_A_RECEIVED);
		c->dropped[path] = attr_u64(p, HBMGUARD_A_DROPPED);
	}
	c->events_dropped = attr_u64(a, HBMGUARD_A_EVENTS_DROPPED);
	c->have |= HBM_COUNTS_PATHS;
	return NL_OK;
}

/* One dump of the devices and one request: what a scrape costs the module. */
static int counts(void *ctx, struct hbm_counts *out)
{
	struct hbm_kernel *k = ctx;
	int err = transact(k, request(k, HBMGUARD_CMD_DEVICE_GET, NLM_F_DUMP), parse_counts, out);

	if (err)
		return err;
	if (transact(k, request(k, HBMGUARD_CMD_STATS_GET, 0), parse_path_stats, out))
		out->have &= ~HBM_COUNTS_PATHS;
	return 0;
}

const struct hbm_source_ops kernel_ops = {
	.origin = HBM_FROM_KERNEL,
	.list = list_devices,
	.dump = dump_pages,
	.restore = restore_stored,
	.change = change,
	.gpu_register = gpu_register,
	.gpu_health = gpu_health,
	.counts = counts,
};

static int join_family(struct hbm_kernel *k);

/* What the module numbers: a GPU (its vendor is its finder's business), or HBM. */
static uint32_t device_kind(const struct device *dev)
{
	return dev->kind == HBMGUARD_KIND_GPU ? HBM_DEVICE_GPU : HBM_DEVICE_RANGE;
}

/*
 * @dev as its facts name it: whole, so that the core passes them on as they
 * are (it copies a fact only to name its device).
 */
static struct hbm_fact_device fact_device(const struct device *dev)
{
	struct hbm_fact_device d = { .id = dev->id, .kind = device_kind(dev),
				     .page_size = dev->page_size, .size = dev->size };

	snprintf(d.identity, sizeof(d.identity), "%s", dev->identity);
	snprintf(d.pci, sizeof(d.pci), "%s", dev->pci);
	return d;
}

/*
 * What a device's table holds, read once after it was (re)found: PAGES
 * facts, unheard (and known, part by part, where the store restored them
 * just before), then TABLE_READ.  The store saves from them, the sinks
 * that act on lost data take what they did not hear.
 */
/* A table read as it comes: each extent a fact, the dump not held whole. */
struct table_walk {
	struct hbm_kernel *k;
	struct hbm_fact f;
	const struct hbm_state *restored;	/* what the store restored, or NULL */
	size_t j;				/* hbm_state_cover()'s walk of it */
};

static int fact_extent(void *arg, const struct hbm_state_record *r)
{
	struct table_walk *w = arg;
	uint64_t at, end;
	uint8_t restored;

	w->f.state = r->state;
	w->f.source = r->source;
	w->f.count = r->errors;
	w->f.first_seen = r->first_seen;
	w->f.last_seen = r->last_seen;
	w->f.flags = HBM_FACT_UNHEARD;
	w->f.restored = HBMGUARD_STATE_CLEAN;
	w->f.offset = r->offset;
	w->f.length = r->length;
	if (!w->restored) {
		w->k->link.fact(w->k->link.core, &w->f);
		return NL_OK;
	}
	for (at = r->offset, end = r->offset + r->length; at < end; at += w->f.length) {
		w->f.offset = at;
		w->f.length = hbm_state_cover(w->restored, w->k->unsent, &w->j, at, end,
					      &restored);
		w->f.restored = restored;
		w->f.flags = HBM_FACT_UNHEARD | (restored ? HBM_FACT_KNOWN : 0);
		w->k->link.fact(w->k->link.core, &w->f);
	}
	return NL_OK;
}

static int table_facts(struct hbm_kernel *k, const struct device *dev, enum hbm_sync why)
{
	struct table_walk w = {
		.k = k,
		.f = { .type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL, .sync = why,
		       .dev = fact_device(dev) },
		.restored = k->restored && k->restored_id == dev->id ? k->restored : NULL,
	};
	struct hbm_fact f;
	uint64_t seqnum;
	int err = module_seqnum(k, &seqnum);

	/*
	 * On a socket of its own: each extent goes to the sinks as it is read
	 * (a table of 10^6 is not held whole, here or in the store), and a
	 * sink that asks the module meanwhile does so on the request socket.
	 */
	if (!err)
		err = dump_read(k->dump, pages_request(k, dev),
				&(struct dump_read){ .take = fact_extent, .arg = &w });
	if (err)
		fprintf(stderr, "<3>hbmguardd: reading the table of %s: %s\n", dev->identity,
			hbm_genl_strerror(err));
	f = (struct hbm_fact){
		.type = HBM_FACT_TABLE_READ, .origin = HBM_FROM_KERNEL, .sync = why,
		.flags = err ? HBM_FACT_INCOMPLETE : 0, .error = err, .seqnum = err ? 0 : seqnum,
		.dev = fact_device(dev),
	};
	/*
	 * The read is over: a restore at its TABLE_READ (a resync's, of what
	 * the table lacks: store.c) is not this read's, and is kept for none.
	 */
	k->reading = false;
	k->link.fact(k->link.core, &f);
	k->restored = NULL;	/* the store lets it go at TABLE_READ */
	free(k->unsent);
	k->unsent = NULL;
	return err;
}

/* A data loss no table read can show, unheard (losses.c): where is unknown. */
static void lost_unheard(void *ctx, uint32_t id, const char *identity, uint64_t unheard)
{
	struct hbm_kernel *k = ctx;
	struct hbm_fact f = { .type = HBM_FACT_LOST_UNHEARD, .origin = HBM_FROM_KERNEL,
			      .dev = { .id = id, .kind = HBM_DEVICE_RANGE },
			      .count = unheard > UINT32_MAX ? UINT32_MAX : unheard };

	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", identity);
	k->link.fact(k->link.core, &f);
}

static int on_reread(sd_event_source *src, void *arg);

/* The event socket read again once the loop turns (on_readable()). */
static void reread(struct hbm_kernel *k)
{
	if (!k->reread && sd_event_add_defer(k->d->loop, &k->reread, on_reread, k) < 0)
		fprintf(stderr, "<3>hbmguardd: cannot read the event socket again: what it holds waits for its next event\n");
}

static void retry_resync(struct hbm_kernel *k);

/*
 * Counts left to compare whose events are not read yet: queued, or lost
 * where no later event will show it.  The module's seqnum now, and the
 * socket read empty after it, tells (drained()).  Returns 0, or why it
 * cannot (a resync, retried, reads the counts again).
 */
static int settle(struct hbm_kernel *k)
{
	uint64_t seqnum;
	int err;

	if (!k->losses.due || k->settle_at)
		return 0;
	err = module_seqnum(k, &seqnum);
	if (err || !seqnum)
		return err ?: -EAGAIN;
	k->settle_at = seqnum;
	reread(k);
	return 0;
}

/* The event socket read until empty: every event the module had made by then read or lost. */
static void drained(struct hbm_kernel *k)
{
	if (k->settle_at) {
		hbm_losses_read_to(&k->losses, k->settle_at);
		k->settle_at = 0;
	}
	if (settle(k))
		retry_resync(k);
}

/*
 * Device @id, or every device: each read as @mode says, its table's lost
 * data given unheard.  A resync finds a device under an id that named
 * another as new.  @event, when given, is the module's event that asked
 * for it: the device's DEVICE_SEEN carries it, or it goes alone.  Returns
 * the first error: of the list, or of a table (the others still read).
 */
static int sync_devices(struct hbm_kernel *k, uint32_t id, enum hbm_sync mode,
			const struct hbm_fact *event)
{
	struct device_list *l = calloc(1, sizeof(*l));
	char (*was)[HBMGUARD_IDENTITY_LEN] = malloc(sizeof(k->listed));
	size_t i;
	int err = -ENOMEM, table_err = 0, read_err;

	if (l && was) {
		memcpy(was, k->listed, sizeof(k->listed));
		err = read_devices(k, l);
	}
	for (i = 0; !err && i < l->nr; i++) {
		const struct device *dev = &l->dev[i];
		struct hbm_fact f = { .origin = HBM_FROM_KERNEL };

		if (id != ALL_DEVICES && dev->id != id)
			continue;
		if (event) {
			f = *event;
			event = NULL;
		}
		f.type = HBM_FACT_DEVICE_SEEN;
		f.sync = mode;
		if (mode == HBM_SYNC_RESYNC && dev->id < HBMGUARD_MAX_DEVICES &&
		    strcmp(was[dev->id], dev->identity))
			f.sync = HBM_SYNC_ADDED;
		f.dev = fact_device(dev);
		k->reading = true;
		k->reading_id = dev->id;
		k->link.fact(k->link.core, &f);
		if (dev->counts_losses)
			hbm_losses_seen(&k->losses, dev->id, dev->identity, &dev->losses,
					f.sync == HBM_SYNC_START);
		read_err = table_facts(k, dev, f.sync);	/* the read over at its end */
		table_err = table_err ?: read_err;
	}
	if (event)
		k->link.fact(k->link.core, event);
	free(was);
	free(l);
	daemon_notify_status(k->d);
	return err ?: table_err;
}

/* Device @id is no longer the module's: said once, whoever asks next. */
static void device_gone(struct hbm_kernel *k, uint32_t id)
{
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_GONE, .origin = HBM_FROM_KERNEL,
			      .dev.id = id };

	if (id >= HBMGUARD_MAX_DEVICES || !k->listed[id][0])
		return;
	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", k->listed[id]);
	k->listed[id][0] = 0;
	k->listed_added[id] = 0;
	k->link.fact(k->link.core, &f);
}

/*
 * The module removed device @id, its DEVICE_REMOVED @seq.  It gives an id
 * to another device only after that (device_remove(), kmod/device.c): the
 * device listed under it is the one removed if it was added before @seq;
 * one added after was listed by a resync that came first, and the one
 * removed had left the list already.  A module that does not say when its
 * devices were added (before ADDED_SEQNUM) is listed again: whoever it no
 * longer lists is gone.
 */
static void removed(struct hbm_kernel *k, uint32_t id, uint64_t seq)
{
	struct device_list *l;

	if (id >= HBMGUARD_MAX_DEVICES || !k->listed[id][0])
		return;		/* gone already (a resync's list said so) */
	if (k->listed_added[id]) {
		if (k->listed_added[id] < seq)
			device_gone(k, id);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l || read_devices(k, l))
		device_gone(k, id);	/* cannot tell: the id's device, as listed */
	free(l);
}

/*
 * A resync that could not read every table (the module short of memory, a
 * dump cut short), or a family not joined: what the lost events said is
 * still unknown, so it is tried again, later each time, until it reads all.
 */
static int on_resync_retry(sd_event_source *src, uint64_t usec, void *arg);

static void retry_resync(struct hbm_kernel *k)
{
	if (k->resync_retry)
		return;
	k->resync_delay_s = hbm_retry_after_s(k->resync_delay_s);
	if (sd_event_add_time_relative(k->d->loop, &k->resync_retry, CLOCK_MONOTONIC,
				       k->resync_delay_s * 1000000ULL, 0, on_resync_retry, k) < 0)
		fprintf(stderr, "<3>hbmguardd: cannot retry the resync: lost events may stay unheard\n");
}

/* What the last resync or reload read: all (a retry armed is moot), or not. */
static void resync_done(struct hbm_kernel *k, int err)
{
	if (err) {
		retry_resync(k);
		return;
	}
	k->resync_delay_s = 0;
	k->resync_retry = sd_event_source_disable_unref(k->resync_retry);
}

/*
 * The family registered anew (the module reloaded): new tables, and no
 * event of what happened before the group was joined again.
 */
static void reloaded(struct hbm_kernel *k)
{
	int err = join_family(k);
	uint32_t id;

	/* the old module's events are read, or lost: its counts compared */
	hbm_losses_renumbered(&k->losses);
	k->next_seq = 0;	/* what was seen goes with each device's DEVICE_SEEN */
	k->settle_at = 0;	/* the new module numbers from 1 */
	k->rejoin = err;
	if (err) {
		/*
		 * Deaf to it until joined: a resync then finds it "reloaded
		 * unheard".  The devices go then, when the sinks that ask the
		 * module about them can (gpus.c registers its GPUs again).
		 */
		fprintf(stderr, "<3>hbmguardd: cannot join the new family: retrying\n");
		k->family = -1;
		retry_resync(k);
		return;
	}
	/* after the join: a sink may ask the new family at once (gpus.c) */
	for (id = 0; id < HBMGUARD_MAX_DEVICES; id++)
		device_gone(k, id);
	register_ranges(k);
	err = sync_devices(k, ALL_DEVICES, HBM_SYNC_ADDED, NULL);
	/* a settling that fails keeps the retries' backoff: not a resync done */
	resync_done(k, err ?: settle(k));
}

/*
 * Events were lost: what they said is read from the kernel instead.  The
 * family may have been registered anew unheard (its id changed: ids are
 * handed out cyclically, idr_alloc_cyclic() in genl_register_family(),
 * net/netlink/genetlink.c, 6.1 and 6.12), a device added unheard (its
 * table lacks its stored pages), data lost unheard (a UE or poison not
 * acted upon: recovery.c tells).
 */
static void resync(struct hbm_kernel *k, const char *why)
{
	int family = k->family, err;

	fprintf(stderr, "<4>hbmguardd: %s: resyncing\n", why);
	k->link.fact(k->link.core, &(struct hbm_fact){ .type = HBM_FACT_RESYNC,
						      .origin = HBM_FROM_KERNEL });
	err = join_family(k);
	if (err) {
		/* found but not joined, or registered anew (said the controller) */
		bool retry = err == -EPERM || k->rejoin;

		fprintf(stderr, "<3>hbmguardd: the hbmguard family is %s\n",
			retry ? "not joined: retrying" : "gone");
		if (retry)
			retry_resync(k);
		return;
	}
	if (k->family != family) {
		fprintf(stderr, "<5>hbmguardd: the hbmguard module was reloaded unheard: restoring\n");
		reloaded(k);
		return;
	}
	err = sync_devices(k, ALL_DEVICES, HBM_SYNC_RESYNC, NULL);
	hbm_losses_read_to(&k->losses, 0);	/* the counts of events read or lost */
	resync_done(k, err ?: settle(k));
}

static int on_resync_retry(sd_event_source *src, uint64_t usec, void *arg)
{
	struct hbm_kernel *k = arg;

	(void)usec;
	sd_event_source_unref(src);
	k->resync_retry = NULL;
	resync(k, "the last resync or reload did not finish");
	return 0;
}

/* The genl controller: our family registered anew (the module reloaded). */
static void on_ctrl(struct hbm_kernel *k, struct nl_msg *msg)
{
	struct nlattr *a[CTRL_ATTR_MAX + 1];
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(msg));

	if (g->cmd != CTRL_CMD_NEWFAMILY ||
	    genlmsg_parse(nlmsg_hdr(msg), 0, a, CTRL_ATTR_MAX, NULL) ||
	    !a[CTRL_ATTR_FAMILY_NAME] ||
	    strcmp(nla_get_string(a[CTRL_ATTR_FAMILY_NAME]), HBMGUARD_GENL_NAME))
		return;
	/* the family a resync already found (its news queued behind the overflow) */
	if (a[CTRL_ATTR_FAMILY_ID] && nla_get_u16(a[CTRL_ATTR_FAMILY_ID]) == k->family)
		return;
	fprintf(stderr, "<5>hbmguardd: the hbmguard module is back: restoring\n");
	reloaded(k);
}

/*
 * An NVIDIA Xid the module heard on the driver's tracepoint (kmod/nvidia.c):
 * what it means, from the daemon's one table of Xids (nv_xid_hbm()).
 */
static void xid_fact(struct hbm_fact *f)
{
	const struct nv_xid_hbm *x = nv_xid_hbm(f->state);

	f->xid = f->state;
	f->severity = x && x->lost_data ? HBM_SEVERITY_UE : HBM_SEVERITY_CE;
	snprintf(f->path, sizeof(f->path), "tracepoint");
	snprintf(f->text, sizeof(f->text), "%s", x ? x->meaning : "not about HBM");
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[HBMGUARD_A_MAX + 1];
	struct hbm_kernel *k = arg;
	struct hbm_fact f;
	uint64_t seq;
	uint32_t type;

	if (nlmsg_hdr(msg)->nlmsg_type == GENL_ID_CTRL) {
		on_ctrl(k, msg);
		return NL_OK;
	}
	if (nlmsg_hdr(msg)->nlmsg_type != k->family)
		return NL_SKIP;	/* queued before the family was registered anew */
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, HBMGUARD_A_MAX, NULL) ||
	    !a[HBMGUARD_A_SEQNUM] || !a[HBMGUARD_A_EVENT_TYPE])
		return NL_SKIP;
	seq = nla_get_u64(a[HBMGUARD_A_SEQNUM]);
	type = nla_get_u32(a[HBMGUARD_A_EVENT_TYPE]);
	/* what came before it is read or lost: before a resync replaces a count */
	if (seq)
		hbm_losses_read_to(&k->losses, seq - 1);
	if (hbm_seq_lost(&k->next_seq, seq, type)) {
		char why[64];

		snprintf(why, sizeof(why), "events lost before #%" PRIu64, seq);
		resync(k, why);
		if (nlmsg_hdr(msg)->nlmsg_type != k->family)
			return NL_SKIP;	/* the module was reloaded since */
	}
	if (seq)
		hbm_losses_read_to(&k->losses, seq - 1);	/* and a count the resync read */
	f = (struct hbm_fact){
		.origin = HBM_FROM_KERNEL, .event = type, .seqnum = seq,
		.dev = { .id = attr_u32(a, HBMGUARD_A_DEVICE_ID), .kind = HBM_DEVICE_RANGE },
		.offset = attr_u64(a, HBMGUARD_A_OFFSET),
		.length = attr_u64(a, HBMGUARD_A_LENGTH),
		.source = attr_u32(a, HBMGUARD_A_SOURCE),
		.state = attr_u32(a, HBMGUARD_A_STATE),
		.count = attr_u32(a, HBMGUARD_A_COUNT),
		.aux = attr_u32(a, HBMGUARD_A_AUX),
	};
	snprintf(f.path, sizeof(f.path), "hbmguard");	/* heard from the module */
	switch (type) {
	case HBMGUARD_EVENT_DEVICE_ADDED:	/* its DEVICE_SEEN carries the event */
		f.type = HBM_FACT_EVENT;
		hbm_losses_added(&k->losses, f.dev.id, seq);
		/* learns its identity too; if not, a resync will */
		if (sync_devices(k, f.dev.id, HBM_SYNC_ADDED, &f))
			retry_resync(k);
		return NL_OK;
	case HBMGUARD_EVENT_RETIRED:
	case HBMGUARD_EVENT_PENDING:
	case HBMGUARD_EVENT_FAILED:
	case HBMGUARD_EVENT_CLEARED:
		f.type = HBM_FACT_PAGES;
		if (f.aux & HBMGUARD_PAGES_DATA_LOST) {
			f.flags |= HBM_FACT_DATA_LOST;
			hbm_losses_heard(&k->losses, f.dev.id, seq);
		}
		break;
	case HBMGUARD_EVENT_ERROR:
	case HBMGUARD_EVENT_DEVICE_ERROR:
		f.type = HBM_FACT_ERROR;
		/*
		 * An ERROR's SOURCE is the page's record after the error (why
		 * the page is bad; NONE for a page not in the table or a spare),
		 * its STATE the error's kind (hbm_device_report(),
		 * kmod/device.c): a CE on a page a UE retired is a CE, a UE on a
		 * page retired for CEs a UE.
		 */
		f.severity = type == HBMGUARD_EVENT_ERROR &&
			     (f.state == HBMGUARD_ERROR_UE || f.state == HBMGUARD_ERROR_POISON) ?
			     HBM_SEVERITY_UE : HBM_SEVERITY_CE;
		if (type == HBMGUARD_EVENT_DEVICE_ERROR && f.aux == HBMGUARD_PATH_NVIDIA_XID)
			xid_fact(&f);
		break;
	case HBMGUARD_EVENT_HEALTH:
		f.type = HBM_FACT_HEALTH;
		break;
	default:
		f.type = HBM_FACT_EVENT;
		break;
	}
	k->link.fact(k->link.core, &f);
	if (type == HBMGUARD_EVENT_DEVICE_REMOVED)
		removed(k, f.dev.id, seq);
	return NL_OK;
}

/*
 * The event socket's read (nl_cb_overwrite_recv()): one recvmsg() an event
 * into EVENT_READ_BYTES.  libnl's own, nl_recv() (lib/nl.c, libnl 3.7.0),
 * peeks at each message first to size its buffer unless given one, two
 * system calls an event on the way to its journal entry; given one, it
 * fails a message longer than it (-NLE_MSG_TRUNC) before anyone can see
 * who sent it.  Here a message cut short is lost whole: the kernel's
 * means events were missed (a resync); another sender's is a forgery
 * from_kernel() would refuse, dropped, so that sending one long message
 * cannot make the daemon read every table again (a forger can still
 * overflow the socket, 4 MiB: a resync, as any overflow).  At most
 * EVENT_DROPS_A_READ are dropped a read, so that a flood of them does not
 * hold the loop.
 */
static int event_recv(struct nl_sock *sk, struct sockaddr_nl *from, unsigned char **buf,
		      struct ucred **creds)
{
	struct iovec iov = { .iov_base = malloc(EVENT_READ_BYTES), .iov_len = EVENT_READ_BYTES };
	struct msghdr m = { .msg_name = from, .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned int dropped;
	ssize_t n = 0;
	bool cut;

	if (creds)
		*creds = NULL;
	if (!iov.iov_base)
		return -NLE_NOMEM;
	for (dropped = 0; dropped < EVENT_DROPS_A_READ; dropped++) {
		m.msg_namelen = sizeof(*from);
		n = recvmsg(nl_socket_get_fd(sk), &m, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		cut = m.msg_flags & MSG_TRUNC;
		if (!from->nl_pid && cut) {
			free(iov.iov_base);
			return -NLE_MSG_TRUNC;
		}
		if (!from->nl_pid ||
		    (!cut && nlmsg_ok((struct nlmsghdr *)iov.iov_base, (int)n)))
			break;		/* the kernel's, or whole: from_kernel() judges it */
		/*
		 * another's, cut short or no message at all (libnl would read
		 * none in it and return 0, as if the socket were drained:
		 * recvmsgs() and nlmsg_ok(), lib/nl.c and lib/msg.c, libnl
		 * 3.7.0): dropped
		 */
	}
	if (dropped == EVENT_DROPS_A_READ) {
		/* the rest at the loop's next turn; not -NLE_AGAIN: not drained */
		free(iov.iov_base);
		return -NLE_BUSY;
	}
	if (n <= 0) {
		free(iov.iov_base);
		return n < 0 ? -nl_syserr2nlerr(errno) : 0;
	}
	*buf = iov.iov_base;
	return n;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct hbm_kernel *k = arg;
	struct nl_cb *cb = nl_socket_get_cb(k->events);
	int n = 1, i;

	(void)s;
	(void)fd;
	(void)revents;
	/*
	 * One message per read: what is queued (up to a bound, for the control
	 * socket's sake) is read before on_post() saves; -NLE_AGAIN once it
	 * is all read.
	 */
	for (i = 0; i < 1024 && n > 0; i++)
		n = nl_recvmsgs_report(k->events, cb);
	nl_cb_put(cb);
	/* first: the module's seqnum a resync below reads is after this drain */
	if (n == -NLE_AGAIN)
		drained(k);
	else if (n > 0)
		reread(k);	/* the bound: the socket may be empty by now, unsaid */
	if (n == -NLE_NOMEM) {	/* ENOBUFS: the socket overflowed */
		k->next_seq = 0;
		k->overflowed = true;
		resync(k, "event socket overflowed");
	} else if (n == -NLE_MSG_TRUNC) {	/* its rest is gone with it */
		k->next_seq = 0;
		resync(k, "an event longer than the read");
	} else if ((!n || n == -NLE_AGAIN) && k->overflowed) {
		/*
		 * Until its queue is empty again a congested socket is sent
		 * nothing, and told nothing more (netlink_overrun(),
		 * netlink_rcv_wake(), net/netlink/af_netlink.c, 6.1 and
		 * 6.12): what came while the backlog was read is news only
		 * to a second look.
		 */
		k->overflowed = false;
		k->next_seq = 0;
		resync(k, "event socket drained after an overflow");
	}
	return 0;
}

static int on_reread(sd_event_source *src, void *arg)
{
	struct hbm_kernel *k = arg;

	sd_event_source_unref(src);
	k->reread = NULL;
	return on_readable(NULL, nl_socket_get_fd(k->events), EPOLLIN, k);
}

/*
 * Only the kernel (port 0) speaks to the daemon's netlink sockets.  Anyone
 * with CAP_NET_ADMIN can unicast to a generic netlink socket or multicast to
 * its groups (netlink_sendmsg() and netlink_allowed() in
 * net/netlink/af_netlink.c of 6.1 and 6.12: genetlink has no
 * NL_CFG_F_NONROOT_SEND): a forged UE event would open incidents and end
 * other users' ranks, a forged dump put made-up pages into the state files.
 * The request and dump sockets are refused such unicasts by the kernel as
 * well (hbm_genl_kernel_only()); a multicast to the events group is not.
 */
static int from_kernel(struct nl_msg *msg, void *arg)
{
	(void)arg;
	return nlmsg_get_src(msg)->nl_pid ? NL_SKIP : NL_OK;
}

/*
 * What the controller tells of a family, in one CTRL_CMD_GETFAMILY by name:
 * its id, its highest attribute and the id of one of its multicast groups
 * (ctrl_getfamily() and ctrl_fill_info(), net/netlink/genetlink.c, 6.1 and
 * 6.12: CTRL_ATTR_FAMILY_ID u16, CTRL_ATTR_MAXATTR u32, and in
 * CTRL_ATTR_MCAST_GROUPS a nest per group of CTRL_ATTR_MCAST_GRP_ID u32 and
 * CTRL_ATTR_MCAST_GRP_NAME; include/uapi/linux/genetlink.h).  libnl's
 * genl_ctrl_resolve() and genl_ctrl_resolve_grp() ask once each, and its
 * family's highest attribute only a dump of every family tells
 * (genl_ctrl_alloc_cache()): four round trips and a socket at every start,
 * a tenth of a start in a TCG guest, where one does.
 */
struct family_info {
	const char *name;	/* the family asked for */
	const char *group;	/* the group asked for */
	int id;			/* -1: not told */
	int group_id;		/* -1: no such group */
	uint32_t maxattr;
};

static int on_family(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[CTRL_ATTR_MAX + 1], *grp;
	struct family_info *f = arg;
	int rem;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, CTRL_ATTR_MAX, NULL) ||
	    genlmsg_hdr(nlmsg_hdr(msg))->cmd != CTRL_CMD_NEWFAMILY ||
	    !tb[CTRL_ATTR_FAMILY_NAME] || nla_strcmp(tb[CTRL_ATTR_FAMILY_NAME], f->name) ||
	    !tb[CTRL_ATTR_FAMILY_ID] || nla_len(tb[CTRL_ATTR_FAMILY_ID]) < 2 ||
	    nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]) < GENL_MIN_ID)
		return NL_SKIP;
	f->id = nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]);
	if (tb[CTRL_ATTR_MAXATTR] && nla_len(tb[CTRL_ATTR_MAXATTR]) >= 4)
		f->maxattr = nla_get_u32(tb[CTRL_ATTR_MAXATTR]);
	if (!tb[CTRL_ATTR_MCAST_GROUPS])
		return NL_OK;
	nla_for_each_nested(grp, tb[CTRL_ATTR_MCAST_GROUPS], rem) {
		struct nlattr *g[CTRL_ATTR_MCAST_GRP_MAX + 1];

		/*
		 * Group 0 is none (the kernel never hands it out), and
		 * nl_socket_add_membership() takes it as the end of its list:
		 * joined, it would join nothing.
		 */
		if (!nla_parse_nested(g, CTRL_ATTR_MCAST_GRP_MAX, grp, NULL) &&
		    g[CTRL_ATTR_MCAST_GRP_ID] && nla_len(g[CTRL_ATTR_MCAST_GRP_ID]) >= 4 &&
		    g[CTRL_ATTR_MCAST_GRP_NAME] &&
		    !nla_strcmp(g[CTRL_ATTR_MCAST_GRP_NAME], f->group) &&
		    nla_get_u32(g[CTRL_ATTR_MCAST_GRP_ID]) - 1 < INT_MAX)
			f->group_id = nla_get_u32(g[CTRL_ATTR_MCAST_GRP_ID]);
	}
	return NL_OK;
}

/*
 * Family @name as the controller tells it, on @k's request socket, with the
 * id of its group @group.  An exchange like any (hbm_genl_strerror()'s
 * reason is this one's after it).  Return: 0, -ENOENT (no such family), or
 * another -errno.
 */
static int family_probe(struct hbm_kernel *k, const char *name, const char *group,
			struct family_info *f)
{
	struct nl_msg *msg = hbm_genl_request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0);
	int err;

	*f = (struct family_info){ .name = name, .group = group, .id = -1, .group_id = -1 };
	if (msg && nla_put_string(msg, CTRL_ATTR_FAMILY_NAME, name)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	err = hbm_genl_transact(k->req, msg, on_family, f);
	if (!err && f->id < 0)
		err = -ENOENT;
	return err;
}

/*
 * A packed RESTORE as large as the request socket sends: 1 MiB where it may
 * force it (CAP_NET_ADMIN), else net.core.wmem_max; a message must fit in
 * the send buffer, which the kernel doubles, less 32 bytes
 * (netlink_sendmsg(), net/netlink/af_netlink.c; sk_setsockopt(),
 * net/core/sock.c, 6.1 and 6.12).
 */
static void set_request_buffer(struct hbm_kernel *k)
{
	int fd = nl_socket_get_fd(k->req), size = 1 << 20;
	socklen_t len = sizeof(size);

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len) || size < 2 * RESTORE_REQUEST_BYTES)
		size = 2 * RESTORE_REQUEST_BYTES;
	k->restore_bytes = size - 64;
}

/*
 * Resolve the family and join its events group: -ENOENT, the family gone
 * (then none is known); -EPERM, not joined, found or not (the controller
 * not answered: no memory, a full socket), the one known before staying,
 * so that joining it later tells a reload from a resync.
 */
static int join_family(struct hbm_kernel *k)
{
	struct family_info f;
	int err = family_probe(k, HBMGUARD_GENL_NAME, HBMGUARD_GENL_MCGRP_EVENTS, &f);

	if (err == -ENOENT) {
		k->family = -1;
		return -ENOENT;
	}
	if (err || f.group_id < 0 || nl_socket_add_membership(k->events, f.group_id))
		return -EPERM;
	k->family = f.id;
	/* a module that knows HBMGUARD_A_RECORDS takes packed RESTOREs */
	k->packed = f.maxattr >= HBMGUARD_A_RECORDS;
	return 0;
}

/*
 * 4 MiB for bursts of events.  SO_RCVBUF is capped by net.core.rmem_max
 * (208 KiB by default); SO_RCVBUFFORCE is not, given CAP_NET_ADMIN, which
 * joining the group needs anyway (net/core/sock.c, sk_setsockopt(), 6.1
 * and 6.12).
 */
static void set_event_buffer(struct hbm_kernel *k)
{
	int size = 4 << 20;

	if (!setsockopt(nl_socket_get_fd(k->events), SOL_SOCKET, SO_RCVBUFFORCE, &size,
			sizeof(size)))
		return;
	fprintf(stderr, "<4>hbmguardd: SO_RCVBUFFORCE: %s: the event buffer is capped by net.core.rmem_max\n",
		strerror(errno));
	nl_socket_set_buffer_size(k->events, size, 0);
}

static int setup_netlink(struct hbm_kernel *k)
{
	struct family_info ctrl;
	struct nl_cb *cb;
	int err;

	k->req = nl_socket_alloc();
	k->dump = nl_socket_alloc();
	k->events = nl_socket_alloc();
	if (!k->req || !k->dump || !k->events || genl_connect(k->req) ||
	    genl_connect(k->dump) || genl_connect(k->events))
		return -ENOMEM;
	/* the kernel itself refuses others here; from_kernel() still judges the group's */
	err = hbm_genl_kernel_only(k->req) ?: hbm_genl_kernel_only(k->dump);
	if (err)
		return err;
	nl_socket_modify_cb(k->req, NL_CB_MSG_IN, NL_CB_CUSTOM, from_kernel, NULL);
	nl_socket_modify_cb(k->dump, NL_CB_MSG_IN, NL_CB_CUSTOM, from_kernel, NULL);
	nl_socket_modify_cb(k->events, NL_CB_MSG_IN, NL_CB_CUSTOM, from_kernel, NULL);
	/* libnl's own requests too, should any be made on it (hbm_genl_match_replies()) */
	hbm_genl_match_replies(k->req, &k->req_sent);
	set_request_buffer(k);
	if (family_probe(k, "nlctrl", "notify", &ctrl) || ctrl.group_id < 0 ||
	    nl_socket_add_membership(k->events, ctrl.group_id))
		return -EPERM;
	err = join_family(k);
	if (err)
		return err;
	nl_socket_disable_seq_check(k->events);
	nl_socket_set_nonblocking(k->events);
	set_event_buffer(k);
	cb = nl_socket_get_cb(k->events);
	nl_cb_overwrite_recv(cb, event_recv);
	nl_cb_put(cb);
	nl_socket_modify_cb(k->events, NL_CB_VALID, NL_CB_CUSTOM, on_event, k);
	return 0;
}

/**
 * kernel_start() - join the module's family, register the ranges, read
 * every device
 * @k: the link
 * @d: the daemon (its configuration)
 * @link: the core's way in
 *
 * What fails is said on stderr.
 *
 * Return: 0, or -1.
 */
int kernel_start(struct hbm_kernel *k, struct daemon *d, struct hbm_source_link link)
{
	int err;

	k->d = d;
	k->link = link;
	k->losses.unheard = lost_unheard;
	k->losses.ctx = k;
	err = setup_netlink(k);
	if (err) {
		fprintf(stderr, "<3>hbmguardd: the hbmguard netlink family: %s%s\n",
			strerror(-err), err == -ENOENT ? " (is the module loaded?)" : "");
		return -1;
	}
	register_ranges(k);
	if (sync_devices(k, ALL_DEVICES, HBM_SYNC_START, NULL)) {
		fprintf(stderr, "<3>hbmguardd: cannot read the devices\n");
		return -1;
	}
	return 0;
}

/**
 * kernel_watch() - the event socket, into the loop
 * @k: the link, started
 *
 * Return: 0, or a negative errno.
 */
int kernel_watch(struct hbm_kernel *k)
{
	return sd_event_add_io(k->d->loop, &k->io, nl_socket_get_fd(k->events), EPOLLIN,
			       on_readable, k);
}

/**
 * kernel_reconfigure() - the configuration changed: ranges and policies again
 * @k: the link
 */
void kernel_reconfigure(struct hbm_kernel *k)
{
	struct device_list *l = calloc(1, sizeof(*l));
	size_t i;

	register_ranges(k);
	if (l && !list_devices(k, l))	/* a read: names change in event order only */
		for (i = 0; i < l->nr; i++)
			apply_policy(k, &l->dev[i]);
	free(l);
}

/**
 * kernel_stop() - leave the loop, close the sockets
 * @k: the link
 */
void kernel_stop(struct hbm_kernel *k)
{
	k->resync_retry = sd_event_source_disable_unref(k->resync_retry);
	k->reread = sd_event_source_disable_unref(k->reread);
	sd_event_source_disable_unref(k->io);
	nl_socket_free(k->events);
	nl_socket_free(k->dump);
	nl_socket_free(k->req);
	free(k->unsent);
	k->unsent = NULL;
}
