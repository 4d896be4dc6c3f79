// SPDX-License-Identifier: GPL-2.0
/*
 * The "hbmguard" generic netlink family: the daemon's view of the module.
 * The protocol is documented in uapi/linux/hbmguard.h and, for ynl, in
 * uapi/netlink/hbmguard.yaml.
 *
 * Every command is strictly validated against one attribute policy.  Every
 * command, reads included, and joining the "events" group need CAP_SYS_ADMIN
 * in the initial user namespace: changes take physical memory (CLAIM) or
 * decide which memory the system trusts, and reads and events carry physical
 * addresses.  A socket has no file mode to give reads to a group, as
 * /dev/hbmguard does; CAP_NET_ADMIN, which host-network containers commonly
 * hold, is not enough.  netlink_capable() asks it of the sender, and of the
 * socket's opener unless the sender named its destination (hbm_nl_pre_doit()).
 * Events are built only when someone listens, under the same mutex that
 * numbers them, so listeners get them in sequence order.
 *
 * The family is parallel_ops: its commands do not take genl_mutex, which
 * every generic netlink family without the flag shares (genl_rcv_msg(),
 * net/netlink/genetlink.c, 6.1 and 6.12).  Some run long (a claim of a
 * NUMA node's memory, a walk of it for frames poisoned already, a CLEAR of
 * a whole device), and under genl_mutex each would stall every such
 * family's requests on the host, nlctrl's lookups included.  Each command
 * takes the locks of what it touches, as the ioctls that do the same do
 * (kmod/device.c: a device's lock, the registry's, one range registered
 * at a time).  What stays is cb_lock, taken for reading by every request:
 * a family registered or unregistered meanwhile waits for a long command,
 * and every request behind it for that (a module load, which any user's
 * nlctrl lookup of a family not loaded may start: ctrl_getfamily()'s
 * request_module()); and our own unregistration waits for the commands
 * in flight, which unload relies on.  That is the kernel's own practice:
 * devlink, parallel_ops too, runs a flash update, minutes long, inside its
 * command (devlink_nl_flash_update_doit(), net/devlink/dev.c, 6.12).  A
 * claim is one command per range, at the daemon's start; answering it by
 * event from a worker instead would spare that wait at the price of a
 * second protocol for one command.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/nodemask.h>
#include <linux/mmzone.h>
#include <linux/sort.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "hbm.h"

static struct genl_family hbm_genl;

static const struct nla_policy hbm_extent_policy[HBMGUARD_A_MAX + 1] = {
	[HBMGUARD_A_OFFSET] = { .type = NLA_U64 },
	[HBMGUARD_A_LENGTH] = { .type = NLA_U64 },
	[HBMGUARD_A_STATE] = NLA_POLICY_RANGE(NLA_U32, HBMGUARD_STATE_PENDING,
					      HBMGUARD_STATE_RETIRED),
};

/* Bounds beyond s16, which NLA_POLICY_RANGE holds on 6.1 (not const there). */
static struct netlink_range_validation hbm_page_size_range = {
	.min = HBMGUARD_PAGE_SIZE_MIN, .max = HBMGUARD_PAGE_SIZE_MAX,
};
/* 0 in POLICY_SET: the device's default (hbm_device_set_policy()). */
static struct netlink_range_validation hbm_ce_threshold_range = {
	.min = 0, .max = HBM_CE_THRESHOLD_MAX,
};
static struct netlink_range_validation hbm_ce_window_range = {
	.min = 0, .max = HBM_CE_WINDOW_MAX,
};

static const struct nla_policy hbm_policy[HBMGUARD_A_MAX + 1] = {
	[HBMGUARD_A_DEVICE_ID] = NLA_POLICY_MAX(NLA_U32, HBMGUARD_MAX_DEVICES - 1),
	[HBMGUARD_A_NAME] = { .type = NLA_NUL_STRING, .len = HBMGUARD_NAME_LEN - 1 },
	[HBMGUARD_A_IDENTITY] = { .type = NLA_NUL_STRING,
				  .len = HBMGUARD_IDENTITY_LEN - 1 },
	[HBMGUARD_A_HBM_SIZE] = { .type = NLA_U64 },
	[HBMGUARD_A_PAGE_SIZE] = NLA_POLICY_FULL_RANGE(NLA_U32, &hbm_page_size_range),
	[HBMGUARD_A_SPARE_PAGES] = { .type = NLA_U32 },
	[HBMGUARD_A_CE_THRESHOLD] = NLA_POLICY_FULL_RANGE(NLA_U32, &hbm_ce_threshold_range),
	[HBMGUARD_A_CE_WINDOW] = NLA_POLICY_FULL_RANGE(NLA_U32, &hbm_ce_window_range),
	[HBMGUARD_A_RETIRE_LIMIT] = { .type = NLA_U32 },
	[HBMGUARD_A_PHYS_ADDR] = { .type = NLA_U64 },
	[HBMGUARD_A_NUMA_NODE] = NLA_POLICY_MAX(NLA_U32, MAX_NUMNODES - 1),
	[HBMGUARD_A_EXTENT] = NLA_POLICY_NESTED(hbm_extent_policy),
	[HBMGUARD_A_OFFSET] = { .type = NLA_U64 },
	[HBMGUARD_A_LENGTH] = { .type = NLA_U64 },
	[HBMGUARD_A_SOURCE] = NLA_POLICY_RANGE(NLA_U32, HBMGUARD_SOURCE_ADMIN,
					       HBMGUARD_SOURCE_DRIVER),
	[HBMGUARD_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, HBMGUARD_RETIRE_PENDING),
	[HBMGUARD_A_CLAIM] = { .type = NLA_FLAG },
	[HBMGUARD_A_PCI_ADDR] = { .type = NLA_NUL_STRING,
				  .len = HBMGUARD_PCI_ADDR_LEN - 1 },
	[HBMGUARD_A_DRIVER_HEALTH] = NLA_POLICY_MAX(NLA_U32,
						    HBMGUARD_HEALTH_RESET_REQUIRED),
	/* checked in restore_records(), each with its own message */
	[HBMGUARD_A_RECORD_SIZE] = { .type = NLA_U32 },
	[HBMGUARD_A_RECORDS] = { .type = NLA_BINARY },
};

/*
 * Replies.
 */
static int put_u64(struct sk_buff *skb, int type, u64 value)
{
	return nla_put_u64_64bit(skb, type, value, HBMGUARD_A_PAD);
}

int hbm_device_fill(struct sk_buff *skb, struct hbm_device *dev)
{
	const struct hbm_core *c = &dev->core;
	int err;

	mutex_lock(&dev->lock);
	err = nla_put_u32(skb, HBMGUARD_A_DEVICE_ID, dev->id) ||
	      nla_put_string(skb, HBMGUARD_A_NAME, dev->name) ||
	      nla_put_string(skb, HBMGUARD_A_IDENTITY, dev->identity) ||
	      nla_put_u32(skb, HBMGUARD_A_KIND, dev->kind) ||
	      put_u64(skb, HBMGUARD_A_HBM_SIZE, dev->hbm_size) ||
	      put_u64(skb, HBMGUARD_A_USABLE_SIZE, hbm_usable_size(dev)) ||
	      nla_put_u32(skb, HBMGUARD_A_PAGE_SIZE, 1U << dev->page_shift) ||
	      nla_put_u32(skb, HBMGUARD_A_SPARE_TOTAL, c->table.spare_total) ||
	      nla_put_u32(skb, HBMGUARD_A_SPARE_USED, c->table.spare_used) ||
	      nla_put_u32(skb, HBMGUARD_A_SPARE_BAD, c->table.spare_bad) ||
	      nla_put_u32(skb, HBMGUARD_A_NR_RETIRED,
			  c->table.pages[HBMGUARD_STATE_RETIRED]) ||
	      nla_put_u32(skb, HBMGUARD_A_NR_PENDING,
			  c->table.pages[HBMGUARD_STATE_PENDING]) ||
	      nla_put_u32(skb, HBMGUARD_A_NR_FAILED,
			  c->table.pages[HBMGUARD_STATE_FAILED]) ||
	      nla_put_u32(skb, HBMGUARD_A_NR_EXTENTS, c->table.nr_extents) ||
	      nla_put_u32(skb, HBMGUARD_A_HEALTH, c->health) ||
	      nla_put_u32(skb, HBMGUARD_A_CE_THRESHOLD, c->policy.ce_threshold) ||
	      nla_put_u32(skb, HBMGUARD_A_CE_WINDOW, c->policy.ce_window) ||
	      nla_put_u32(skb, HBMGUARD_A_RETIRE_LIMIT, c->policy.retire_limit) ||
	      put_u64(skb, HBMGUARD_A_GENERATION, dev->generation) ||
	      put_u64(skb, HBMGUARD_A_CE_EVENTS, c->ce_events) ||
	      put_u64(skb, HBMGUARD_A_UE_EVENTS, c->ue_events) ||
	      put_u64(skb, HBMGUARD_A_ERRORS_DROPPED,
		      atomic64_read(&dev->errors_dropped)) ||
	      put_u64(skb, HBMGUARD_A_CE_FORGOTTEN, c->ce_forgotten) ||
	      put_u64(skb, HBMGUARD_A_DATA_LOST, dev->data_lost) ||
	      put_u64(skb, HBMGUARD_A_DATA_LOST_SEQNUM, dev->data_lost_seqnum) ||
	      put_u64(skb, HBMGUARD_A_ADDED_SEQNUM, dev->added_seqnum);
	if (!err && dev->kind == HBMGUARD_KIND_RANGE)
		err = put_u64(skb, HBMGUARD_A_PHYS_ADDR, dev->phys_start) ||
		      (dev->numa_node >= 0 &&
		       nla_put_u32(skb, HBMGUARD_A_NUMA_NODE, dev->numa_node)) ||
		      (dev->claimed && nla_put_flag(skb, HBMGUARD_A_CLAIM));
	if (!err && dev->kind == HBMGUARD_KIND_GPU)
		err = nla_put_string(skb, HBMGUARD_A_PCI_ADDR, dev->pci_addr) ||
		      nla_put_u32(skb, HBMGUARD_A_DRIVER_HEALTH, c->driver_health);
	mutex_unlock(&dev->lock);
	return err ? -EMSGSIZE : 0;
}

/*
 * Every command: CAP_SYS_ADMIN in the initial namespace, of the sender and
 * of the socket's opener; of the sender alone where it named its
 * destination (netlink_capable(): __netlink_ns_capable(),
 * net/netlink/af_netlink.c, 6.1 and 6.12).
 */
static int hbm_nl_pre_doit(const struct hbm_genl_pre_ops *ops, struct sk_buff *skb,
			   struct genl_info *info)
{
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(info->extack, "needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	hbm_selftest_command(ops->cmd);	/* debug builds: a test may hold it here */
	return 0;
}

/* The same for dumps, which pre_doit does not see. */
static int hbm_nl_dump_start(struct netlink_callback *cb)
{
	if (netlink_capable(cb->skb, CAP_SYS_ADMIN))
		return 0;
	NL_SET_ERR_MSG(cb->extack, "needs CAP_SYS_ADMIN");
	return -EPERM;
}

/* The device an attribute names, with a reference, or an extack message. */
static struct hbm_device *attr_device(struct nlattr **attrs,
				      struct netlink_ext_ack *extack)
{
	struct hbm_device *dev;

	if (!attrs[HBMGUARD_A_DEVICE_ID]) {
		NL_SET_ERR_MSG(extack, "HBMGUARD_A_DEVICE_ID is required");
		return ERR_PTR(-EINVAL);
	}
	dev = hbm_device_get(nla_get_u32(attrs[HBMGUARD_A_DEVICE_ID]));
	if (!dev) {
		NL_SET_ERR_MSG_ATTR(extack, attrs[HBMGUARD_A_DEVICE_ID],
				    "no such device");
		return ERR_PTR(-ENODEV);
	}
	return dev;
}

static int hbm_nl_device_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct hbm_device *dev = attr_device(info->attrs, info->extack);
	struct sk_buff *msg;
	void *hdr;
	int err;

	if (IS_ERR(dev))
		return PTR_ERR(dev);
	err = -ENOMEM;
	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		goto out;
	hdr = genlmsg_put_reply(msg, info, &hbm_genl, 0, HBMGUARD_CMD_DEVICE_GET);
	if (!hdr || hbm_device_fill(msg, dev)) {
		nlmsg_free(msg);
		err = -EMSGSIZE;
		goto out;
	}
	genlmsg_end(msg, hdr);
	err = genlmsg_reply(msg, info);
out:
	hbm_device_put(dev);
	return err;
}

/* cb->args[0]: the next device id to dump. */
static int hbm_nl_device_get_dumpit(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	u32 id;

	for (id = cb->args[0]; id < HBMGUARD_MAX_DEVICES; id++) {
		struct hbm_device *dev = hbm_device_get(id);
		void *hdr;

		if (!dev)
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &hbm_genl, NLM_F_MULTI,
				  HBMGUARD_CMD_DEVICE_GET);
		if (!hdr || hbm_device_fill(skb, dev)) {
			hbm_device_put(dev);
			if (hdr)
				genlmsg_cancel(skb, hdr);
			break;
		}
		hbm_device_put(dev);
		genlmsg_end(skb, hdr);
	}
	cb->args[0] = id;
	return skb->len;
}

static int extent_fill(struct sk_buff *skb, const struct hbm_device *dev,
		       const struct hbm_extent *e)
{
	struct nlattr *nest = nla_nest_start(skb, HBMGUARD_A_EXTENT);

	if (!nest)
		return -EMSGSIZE;
	if (put_u64(skb, HBMGUARD_A_OFFSET, (u64)e->first << dev->page_shift) ||
	    put_u64(skb, HBMGUARD_A_LENGTH, (u64)e->nr << dev->page_shift) ||
	    (e->spare != HBM_NO_SPARE &&
	     put_u64(skb, HBMGUARD_A_SPARE_OFFSET, hbm_usable_size(dev) +
		     ((u64)e->spare << dev->page_shift))) ||
	    nla_put_u32(skb, HBMGUARD_A_STATE, e->state) ||
	    nla_put_u32(skb, HBMGUARD_A_SOURCE, e->source) ||
	    nla_put_u32(skb, HBMGUARD_A_ERRORS, e->errors) ||
	    put_u64(skb, HBMGUARD_A_FIRST_SEEN, e->first_seen) ||
	    put_u64(skb, HBMGUARD_A_LAST_SEEN, e->last_seen)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * HBMGUARD_A_RECORD_SIZE: the size of the caller's struct
 * hbmguard_restore_record, in packed RESTOREs and PAGES_GET dumps alike.
 */
static int record_size(const struct nlattr *a, struct netlink_ext_ack *extack, u32 *size)
{
	*size = nla_get_u32(a);
	if (*size < HBMGUARD_RESTORE_RECORD_SIZE_VER0 ||
	    *size > HBMGUARD_RESTORE_RECORD_SIZE_MAX || *size % 8) {
		NL_SET_ERR_MSG_ATTR(extack, a,
				    "record size below HBMGUARD_RESTORE_RECORD_SIZE_VER0, above HBMGUARD_RESTORE_RECORD_SIZE_MAX or not a multiple of 8");
		return -EINVAL;
	}
	return 0;
}

/* Records of @size bytes one HBMGUARD_A_RECORDS holds: its length is 16 bits. */
static u32 records_per_attr(u32 size)
{
	return (U16_MAX - NLA_HDRLEN) / size;
}

/*
 * NLM_F_DUMP_INTR (nl_dump_check_consistent(), include/net/netlink.h, 6.1
 * and 6.12): @cb->seq is the device's generation as the dump last read the
 * table, folded into 1..U32_MAX (0 is "not set"), and @cb->prev_seq starts
 * as the one of its first read, so that a change between two reads of the
 * first message is told too.  Each message is checked as it is closed, and
 * the DONE by netlink_dump_done() (net/netlink/af_netlink.c): the first
 * closed after a change is flagged.  The generation counts changes of
 * pages' states (device_publish(), kmod/device.c), not errors counted on a
 * page already in the table.
 */
static void dump_seen(struct netlink_callback *cb, u64 generation)
{
	cb->seq = (u32)(generation % U32_MAX) + 1;	/* never 0, never two in a row alike */
	if (!cb->prev_seq)
		cb->prev_seq = cb->seq;
}

/*
 * The table's extents from page @from on, at most @max.  One that begins
 * before @from grew down since the last round, over pages sent in it: it
 * is cut at @from, its spare with it, so that a dump's extents never
 * overlap (the pages it grew over were sent with the extent they were in).
 */
static int dump_list(struct hbm_device *dev, u32 from, struct hbm_extent *out, u32 max,
		     struct netlink_callback *cb)
{
	u32 n, next, cut;

	mutex_lock(&dev->lock);
	if (dev->dead) {	/* removed between rounds */
		mutex_unlock(&dev->lock);
		return -ENODEV;
	}
	n = hbm_table_list(&dev->core.table, from, dev->core.table.nr_pages, out, max,
			   &next);
	dump_seen(cb, dev->generation);
	mutex_unlock(&dev->lock);
	if (n && out[0].first < from) {
		cut = from - out[0].first;
		out[0].first = from;
		out[0].nr -= cut;
		if (out[0].spare != HBM_NO_SPARE)
			out[0].spare += cut;
	}
	return n;
}

/* One extent, a message of its own: HBMGUARD_A_EXTENT nested. */
static int extent_msg(struct sk_buff *skb, struct netlink_callback *cb,
		      const struct hbm_device *dev, const struct hbm_extent *e)
{
	void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				&hbm_genl, NLM_F_MULTI, HBMGUARD_CMD_PAGES_GET);

	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, HBMGUARD_A_DEVICE_ID, dev->id) || extent_fill(skb, dev, e)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genl_dump_check_consistent(cb, hdr);
	genlmsg_end(skb, hdr);
	return 0;
}

/* A packed dump's message being filled: its open HBMGUARD_A_RECORDS. */
struct records_msg {
	u32 size;		/* the caller's record size */
	void *hdr;		/* NULL: none open */
	struct nlattr *attr;	/* NULL: none open */
	u32 in_attr, in_msg;	/* records */
};

/* An extent as a struct hbmguard_restore_record, @size bytes at @to. */
static void record_put(void *to, u32 size, const struct hbm_device *dev,
		       const struct hbm_extent *e)
{
	struct hbmguard_restore_record r = {
		.offset = (u64)e->first << dev->page_shift,
		.length = (u64)e->nr << dev->page_shift,
		.first_seen = e->first_seen,
		.last_seen = e->last_seen,
		.state = e->state,
		.source = e->source,
		.errors = e->errors,
	};

	BUILD_BUG_ON(sizeof(r) != HBMGUARD_RESTORE_RECORD_SIZE_VER0);
	memcpy(to, &r, sizeof(r));
	memset((u8 *)to + sizeof(r), 0, size - sizeof(r));	/* what we do not know */
}

/*
 * One extent into the packed message, opened at the first: the records
 * grow an HBMGUARD_A_RECORDS in place (nla_nest_start_noflag() and
 * nla_nest_end() only put its header and set its length), another opened
 * when one is full.  -EMSGSIZE when the skb has no room for it.
 */
static int record_add(struct sk_buff *skb, struct netlink_callback *cb,
		      struct records_msg *m, const struct hbm_device *dev,
		      const struct hbm_extent *e)
{
	if (!m->hdr) {
		m->hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				     &hbm_genl, NLM_F_MULTI, HBMGUARD_CMD_PAGES_GET);
		if (!m->hdr)
			return -EMSGSIZE;
		if (nla_put_u32(skb, HBMGUARD_A_DEVICE_ID, dev->id) ||
		    nla_put_u32(skb, HBMGUARD_A_RECORD_SIZE, m->size)) {
			genlmsg_cancel(skb, m->hdr);
			m->hdr = NULL;
			return -EMSGSIZE;
		}
	}
	if (m->attr && m->in_attr == records_per_attr(m->size)) {
		nla_nest_end(skb, m->attr);
		m->attr = NULL;
	}
	if (!m->attr) {
		if (skb_tailroom(skb) < nla_total_size(m->size))
			return -EMSGSIZE;
		m->attr = nla_nest_start_noflag(skb, HBMGUARD_A_RECORDS);
		m->in_attr = 0;
	}
	if (skb_tailroom(skb) < m->size)
		return -EMSGSIZE;
	record_put(skb_put(skb, m->size), m->size, dev, e);
	m->in_attr++;
	m->in_msg++;
	return 0;
}

/* The packed message closed: sent when it holds a record, else taken back. */
static void records_end(struct sk_buff *skb, struct netlink_callback *cb,
			struct records_msg *m)
{
	if (!m->hdr)
		return;
	if (m->attr && m->in_attr)
		nla_nest_end(skb, m->attr);
	else if (m->attr)
		nla_nest_cancel(skb, m->attr);
	if (m->in_msg) {
		genl_dump_check_consistent(cb, m->hdr);
		genlmsg_end(skb, m->hdr);
	} else {
		genlmsg_cancel(skb, m->hdr);
	}
}

/*
 * The packed form's first message must fit a record of the caller's size
 * in an empty skb (NLMSG_GOODSIZE may be less than a page).  The size is
 * checked in the first round: 6.1 drops a start callback's extack
 * (genl_start(), net/netlink/genetlink.c).
 */
static int hbm_nl_pages_get_start(struct netlink_callback *cb)
{
	struct nlattr **attrs = hbm_dump_attrs(cb);
	int err = hbm_nl_dump_start(cb);
	u32 size;

	if (!err && attrs[HBMGUARD_A_RECORD_SIZE]) {
		size = clamp_t(u32, nla_get_u32(attrs[HBMGUARD_A_RECORD_SIZE]),
			       HBMGUARD_RESTORE_RECORD_SIZE_VER0,
			       HBMGUARD_RESTORE_RECORD_SIZE_MAX);
		cb->min_dump_alloc = NLMSG_HDRLEN + GENL_HDRLEN + 2 * nla_total_size(4) +
				     nla_total_size(size);
	}
	return err;
}

/*
 * cb->args[0]: the device, its reference held from the first round to
 * .done (looked up again by id, a round could go on in another device's
 * table: a device removed meanwhile leaves its id to the next one);
 * cb->args[1]: next page; cb->args[2]: the caller's record size, 0 for the
 * nested form; cb->args[3]: the table was read to its end.  A round stops
 * when the skb is full and the next resumes from the page after the last
 * extent sent.  The round after the one that read the end only ends the
 * dump: read again, a change since, or the device gone since, would mark
 * or fail a dump that was whole.
 */
static int hbm_nl_pages_get_dumpit(struct sk_buff *skb,
				   struct netlink_callback *cb)
{
	struct hbm_extent batch[32];
	struct records_msg m = {};
	struct hbm_device *dev;
	int n, i, err = 0;
	u32 size;

	if (cb->args[3])
		return 0;
	if (!cb->args[0]) {
		struct nlattr **attrs = hbm_dump_attrs(cb);

		if (attrs[HBMGUARD_A_RECORD_SIZE]) {
			err = record_size(attrs[HBMGUARD_A_RECORD_SIZE], cb->extack, &size);
			if (err)
				return err;
			cb->args[2] = size;
		}
		dev = attr_device(attrs, cb->extack);
		if (IS_ERR(dev))
			return PTR_ERR(dev);
		cb->args[0] = (unsigned long)dev;
	}
	dev = (struct hbm_device *)cb->args[0];
	m.size = cb->args[2];
	while ((n = dump_list(dev, cb->args[1], batch, ARRAY_SIZE(batch), cb)) > 0) {
		for (i = 0; i < n; i++) {
			err = m.size ? record_add(skb, cb, &m, dev, &batch[i]) :
				       extent_msg(skb, cb, dev, &batch[i]);
			if (err)
				goto full;
			cb->args[1] = batch[i].first + batch[i].nr;
		}
	}
	cb->args[3] = !n;
full:
	records_end(skb, cb, &m);
	/*
	 * The device gone after some records: those go first, the error in
	 * an empty round of its own (a reader that stops at a record does not
	 * miss the DONE that would follow it in the same datagram).
	 */
	if (n < 0 && !skb->len)
		return n;
	/* nothing fit in an empty skb: an error, not the end of the table */
	return skb->len ?: err;
}

static int hbm_nl_pages_get_done(struct netlink_callback *cb)
{
	if (cb->args[0])
		hbm_device_put((struct hbm_device *)cb->args[0]);
	return 0;
}

/* Offset and length of an extent operation, as the ioctl takes them. */
static int attr_range(struct nlattr **attrs, struct netlink_ext_ack *extack,
		      u64 *offset, u64 *length)
{
	if (!attrs[HBMGUARD_A_OFFSET] || !attrs[HBMGUARD_A_LENGTH]) {
		NL_SET_ERR_MSG(extack, "HBMGUARD_A_OFFSET and HBMGUARD_A_LENGTH are required");
		return -EINVAL;
	}
	*offset = nla_get_u64(attrs[HBMGUARD_A_OFFSET]);
	*length = nla_get_u64(attrs[HBMGUARD_A_LENGTH]);
	return 0;
}

static int range_error(struct netlink_ext_ack *extack, int err)
{
	if (err == -EINVAL)
		NL_SET_ERR_MSG(extack, "offset and length must be page aligned, length non-zero");
	else if (err == -ERANGE)
		NL_SET_ERR_MSG(extack, "range outside the device's usable size");
	return err;
}

static int hbm_nl_extent_op(struct genl_info *info, enum hbm_op op)
{
	struct nlattr **attrs = info->attrs;
	struct hbm_device *dev;
	u64 offset, length;
	u8 source;
	int err;

	if (op == HBM_OP_CLEAR &&
	    (attrs[HBMGUARD_A_SOURCE] || attrs[HBMGUARD_A_FLAGS])) {
		NL_SET_ERR_MSG(info->extack, "CLEAR takes no source or flags");
		return -EINVAL;
	}
	if (attrs[HBMGUARD_A_FLAGS] &&
	    nla_get_u32(attrs[HBMGUARD_A_FLAGS]) & HBMGUARD_RETIRE_PENDING)
		op = HBM_OP_PENDING;
	err = attr_range(attrs, info->extack, &offset, &length);
	if (err)
		return err;
	dev = attr_device(attrs, info->extack);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	/* A GPU's pages are the driver's to retire: DRIVER by default there. */
	source = dev->kind == HBMGUARD_KIND_GPU ? HBMGUARD_SOURCE_DRIVER :
						 HBMGUARD_SOURCE_ADMIN;
	if (attrs[HBMGUARD_A_SOURCE])
		source = nla_get_u32(attrs[HBMGUARD_A_SOURCE]);
	if (op != HBM_OP_CLEAR &&
	    (dev->kind == HBMGUARD_KIND_GPU) != (source == HBMGUARD_SOURCE_DRIVER) &&
	    source != HBMGUARD_SOURCE_RESTORED) {
		if (dev->kind == HBMGUARD_KIND_GPU)
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[HBMGUARD_A_SOURCE],
					    "a GPU's pages are retired by its driver: source DRIVER or RESTORED");
		else
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[HBMGUARD_A_SOURCE],
					    "source DRIVER is only a GPU device's");
		hbm_device_put(dev);
		return -EINVAL;
	}
	if (op != HBM_OP_CLEAR)
		hbm_path_count(HBMGUARD_PATH_NETLINK, false);
	err = hbm_device_apply(dev, op, offset, length, source);
	hbm_device_put(dev);
	return range_error(info->extack, err);
}

static int hbm_nl_retire_doit(struct sk_buff *skb, struct genl_info *info)
{
	return hbm_nl_extent_op(info, HBM_OP_RETIRE);
}

static int hbm_nl_clear_doit(struct sk_buff *skb, struct genl_info *info)
{
	return hbm_nl_extent_op(info, HBM_OP_CLEAR);
}

static int hbm_nl_policy_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct hbm_policy p = {};
	struct hbm_device *dev;
	u32 fields = 0;
	int err;

	if (attrs[HBMGUARD_A_CE_THRESHOLD]) {
		fields |= HBMGUARD_POLICY_CE_THRESHOLD;
		p.ce_threshold = nla_get_u32(attrs[HBMGUARD_A_CE_THRESHOLD]);
	}
	if (attrs[HBMGUARD_A_CE_WINDOW]) {
		fields |= HBMGUARD_POLICY_CE_WINDOW;
		p.ce_window = nla_get_u32(attrs[HBMGUARD_A_CE_WINDOW]);
	}
	if (attrs[HBMGUARD_A_RETIRE_LIMIT]) {
		fields |= HBMGUARD_POLICY_RETIRE_LIMIT;
		p.retire_limit = nla_get_u32(attrs[HBMGUARD_A_RETIRE_LIMIT]);
	}
	if (!fields) {
		NL_SET_ERR_MSG(info->extack, "nothing to set");
		return -EINVAL;
	}
	dev = attr_device(attrs, info->extack);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	err = hbm_device_set_policy(dev, &p, fields);
	if (err)
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[HBMGUARD_A_RETIRE_LIMIT],
				    "retire limit above the device's pages");
	hbm_device_put(dev);
	return err;
}

static int hbm_nl_stats_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *stats, *path;
	struct sk_buff *msg;
	void *hdr;
	u32 i;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &hbm_genl, 0, HBMGUARD_CMD_STATS_GET);
	if (!hdr)
		goto nospace;
	if (nla_put_u32(msg, HBMGUARD_A_NR_DEVICES, hbm_device_count()) ||
	    put_u64(msg, HBMGUARD_A_SEQNUM, hbm_event_seqnum()) ||
	    put_u64(msg, HBMGUARD_A_GENERATION, hbm_generation()) ||
	    put_u64(msg, HBMGUARD_A_EVENTS_DROPPED, hbm_netlink_dropped()))
		goto nospace;
	stats = nla_nest_start(msg, HBMGUARD_A_STATS);
	if (!stats)
		goto nospace;
	for (i = 0; i < __HBMGUARD_PATH_MAX; i++) {
		u64 received, dropped;

		hbm_path_stats(i, &received, &dropped);
		path = nla_nest_start(msg, HBMGUARD_A_PATH_STATS);
		if (!path || nla_put_u32(msg, HBMGUARD_A_PATH, i) ||
		    put_u64(msg, HBMGUARD_A_RECEIVED, received) ||
		    put_u64(msg, HBMGUARD_A_DROPPED, dropped))
			goto nospace;
		nla_nest_end(msg, path);
	}
	nla_nest_end(msg, stats);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
nospace:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

/*
 * Extents of one RESTORE: the bound keeps one request's allocation and its
 * hold of the device's lock small whatever socket buffer the sender forced.
 */
#define HBM_RESTORE_MAX		16384

/*
 * The extents of a RESTORE, checked whole before any is applied.  Counting
 * stops once past HBM_RESTORE_MAX (the request is refused then), so @n
 * stays far from overflowing whatever the message holds; filling never
 * goes past @cap, what was allocated.
 */
struct restore_req {
	struct hbm_device *dev;
	struct genl_info *info;
	struct hbm_page_range *x;	/* NULL: only counting */
	u32 cap;			/* @x's length */
	u32 n;
	u32 now;
	u64 mask;			/* the device's page size less one */
	u32 page_shift;			/* log2 of the device's page size */
	u64 usable;			/* hbm_usable_size(), as each record is checked */
};

static int range_cmp(const void *a, const void *b)
{
	const struct hbm_page_range *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * The nests, in any order, sorted and refused where two overlap: each
 * page is then restored, and walked by the aperture's move, once a
 * request.  Overlapping, 16384 nests over a whole device each were as many
 * walks of it under the device's lock: minutes, its errors, ioctls and
 * mapped readers' faults waiting meanwhile.
 */
static int nests_apart(struct restore_req *q)
{
	u32 i;

	sort(q->x, q->n, sizeof(*q->x), range_cmp, NULL);
	for (i = 1; i < q->n; i++)
		if (q->x[i].first < q->x[i - 1].first + q->x[i - 1].nr) {
			NL_SET_ERR_MSG(q->info->extack, "HBMGUARD_A_EXTENT nests overlap");
			return -EINVAL;
		}
	return 0;
}

/* HBMGUARD_A_EXTENT nests: retired with source RESTORED, seen now. */
static int restore_nests(struct restore_req *q)
{
	u64 mask = q->mask, usable = q->usable;
	struct nlattr *tb[HBMGUARD_A_MAX + 1], *nest;
	int rem, err;

	nlmsg_for_each_attr(nest, q->info->nlhdr, GENL_HDRLEN, rem) {
		u64 offset, length;

		if (nla_type(nest) != HBMGUARD_A_EXTENT)
			continue;
		err = nla_parse_nested(tb, HBMGUARD_A_MAX, nest,
				       hbm_extent_policy, q->info->extack);
		if (err)
			return err;
		err = attr_range(tb, q->info->extack, &offset, &length);
		if (err)
			return err;
		if (!length || (offset | length) & mask) {
			NL_SET_ERR_MSG_ATTR(q->info->extack, nest,
					    "extent not page aligned or empty");
			return -EINVAL;
		}
		if (offset >= usable || length > usable - offset) {
			NL_SET_ERR_MSG_ATTR(q->info->extack, nest,
					    "extent outside the device");
			return -ERANGE;
		}
		if (q->n < q->cap)
			q->x[q->n] = (struct hbm_page_range){
				.first = offset >> q->page_shift,
				.nr = length >> q->page_shift,
				.op = tb[HBMGUARD_A_STATE] &&
				      nla_get_u32(tb[HBMGUARD_A_STATE]) == HBMGUARD_STATE_PENDING ?
				      HBM_OP_PENDING : HBM_OP_RETIRE,
				.source = HBMGUARD_SOURCE_RESTORED,
				.first_seen = q->now, .last_seen = q->now,
			};
		if (++q->n > HBM_RESTORE_MAX)
			return 0;
	}
	return q->x && q->n <= q->cap ? nests_apart(q) : 0;
}

/* Field @f of the packed record at @p, 4-byte aligned in the message. */
#define RECORD_FIELD(p, f) ({							\
	typeof_member(struct hbmguard_restore_record, f) v_;			\
										\
	memcpy(&v_, (p) + offsetof(struct hbmguard_restore_record, f), sizeof(v_)); \
	v_;									\
})

/*
 * One packed record of attribute @a, checked (an extack message) and taken
 * into @x.  Its fields are read one by one, not copied whole to the stack
 * first; inline, on records_take()'s copy of the request: 10^6 records a
 * restart.
 */
static __always_inline int record_take(const struct restore_req *q, const struct nlattr *a,
				       const u8 *p, u32 size, u64 *prev_end,
				       struct hbm_page_range *x)
{
	u64 offset = RECORD_FIELD(p, offset), length = RECORD_FIELD(p, length);
	u64 first_seen = RECORD_FIELD(p, first_seen), last_seen = RECORD_FIELD(p, last_seen);
	u32 state = RECORD_FIELD(p, state), source = RECORD_FIELD(p, source);

#define REFUSE(err, msg) do { NL_SET_ERR_MSG_ATTR(q->info->extack, a, msg); return err; } while (0)
	/* a larger struct would read what it knows and check the rest is zero */
	BUILD_BUG_ON(sizeof(struct hbmguard_restore_record) != HBMGUARD_RESTORE_RECORD_SIZE_VER0);
	if (RECORD_FIELD(p, reserved))
		REFUSE(-EINVAL, "a record's reserved field is not zero");
	if (size > HBMGUARD_RESTORE_RECORD_SIZE_VER0 &&
	    memchr_inv(p + HBMGUARD_RESTORE_RECORD_SIZE_VER0, 0,
		       size - HBMGUARD_RESTORE_RECORD_SIZE_VER0))
		REFUSE(-EINVAL, "a record's bytes past what this kernel knows are not zero");
	if (!length || (offset | length) & q->mask)
		REFUSE(-EINVAL, "a record not page aligned or empty");
	if (offset < *prev_end)
		REFUSE(-EINVAL, "records out of order or overlapping: each must start at or after the end of the one before");
	if (state != HBMGUARD_STATE_RETIRED && state != HBMGUARD_STATE_PENDING)
		REFUSE(-EINVAL, "a record's state is neither RETIRED nor PENDING");
	if (source == HBMGUARD_SOURCE_NONE || source >= __HBMGUARD_SOURCE_MAX)
		REFUSE(-EINVAL, "a record's source is NONE or unknown");
	if (source == HBMGUARD_SOURCE_DRIVER && q->dev->kind != HBMGUARD_KIND_GPU)
		REFUSE(-EINVAL, "a record's source DRIVER is only a GPU device's");
	if ((first_seen | last_seen) > U32_MAX)
		REFUSE(-EINVAL, "a record's time is 2^32 seconds or later");
	if (first_seen && last_seen && first_seen > last_seen)
		REFUSE(-EINVAL, "a record's first_seen is after its last_seen");
	if (offset >= q->usable || length > q->usable - offset)
		REFUSE(-ERANGE, "a record outside the device");
#undef REFUSE
	*prev_end = offset + length;
	*x = (struct hbm_page_range){
		.first = offset >> q->page_shift,
		.nr = length >> q->page_shift,
		.op = state == HBMGUARD_STATE_PENDING ? HBM_OP_PENDING : HBM_OP_RETIRE,
		.source = source,
		.errors = min_t(u32, RECORD_FIELD(p, errors), 0xffff),
		/* an unknown time: the other one, else now; never first > last */
		.first_seen = first_seen ?: (last_seen ?: q->now),
		.last_seen = last_seen ?: max_t(u32, q->now, first_seen),
	};
	return 0;
}
#undef RECORD_FIELD

/*
 * The records of attribute @a checked, counted and taken into @q->x, as far
 * as it has room (all: hbm_nl_restore_doit() counted them first).  The loop
 * runs on a copy of @q: the kernel is built with -fno-strict-aliasing, and
 * each range stored through @q->x would reload the request's fields, 16384
 * times a request.
 */
static int records_take(struct restore_req *q, const struct nlattr *a, u32 size,
			u64 *prev_end)
{
	const struct restore_req c = *q;
	const u8 *p = nla_data(a), *end = p + nla_len(a);
	struct hbm_page_range past_cap;
	u32 n = c.n;
	int err = 0;

	for (; p < end; p += size, n++) {
		err = record_take(&c, a, p, size, prev_end, n < c.cap ? &c.x[n] : &past_cap);
		if (err)
			break;
	}
	q->n = n;
	return err;
}

/*
 * HBMGUARD_A_RECORDS: struct hbmguard_restore_record arrays, each record kept.
 * Counting (@q->x NULL) reads the attributes' lengths alone: 16384 records
 * are checked once, when they are taken.
 */
static int restore_records(struct restore_req *q)
{
	struct nlattr **attrs = q->info->attrs, *a;
	u64 prev_end = 0;
	u32 size;
	int rem, err;

	if (!attrs[HBMGUARD_A_RECORD_SIZE]) {
		NL_SET_ERR_MSG(q->info->extack,
			       "HBMGUARD_A_RECORDS needs HBMGUARD_A_RECORD_SIZE");
		return -EINVAL;
	}
	err = record_size(attrs[HBMGUARD_A_RECORD_SIZE], q->info->extack, &size);
	if (err)
		return err;
	nlmsg_for_each_attr(a, q->info->nlhdr, GENL_HDRLEN, rem) {
		if (nla_type(a) != HBMGUARD_A_RECORDS)
			continue;
		if (!nla_len(a) || nla_len(a) % size) {
			NL_SET_ERR_MSG_ATTR(q->info->extack, a,
					    "HBMGUARD_A_RECORDS not a non-empty multiple of the record size");
			return -EINVAL;
		}
		if (!q->x) {
			q->n += nla_len(a) / size;
			if (q->n > HBM_RESTORE_MAX)
				return 0;
			continue;
		}
		err = records_take(q, a, size, &prev_end);
		if (err)
			return err;
	}
	return 0;
}

/* The extents, counted (@q->x NULL) or filled in; an extack message if bad. */
static int restore_parse(struct restore_req *q)
{
	q->n = 0;
	if (q->info->attrs[HBMGUARD_A_RECORDS] || q->info->attrs[HBMGUARD_A_RECORD_SIZE]) {
		if (q->info->attrs[HBMGUARD_A_EXTENT]) {
			NL_SET_ERR_MSG(q->info->extack,
				       "HBMGUARD_A_EXTENT nests or packed HBMGUARD_A_RECORDS, not both");
			return -EINVAL;
		}
		if (!q->info->attrs[HBMGUARD_A_RECORDS]) {
			NL_SET_ERR_MSG(q->info->extack,
				       "HBMGUARD_A_RECORD_SIZE without HBMGUARD_A_RECORDS");
			return -EINVAL;
		}
		return restore_records(q);
	}
	return restore_nests(q);
}

static int hbm_nl_restore_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct restore_req q = { .info = info, .now = (u32)ktime_get_real_seconds() };
	u32 count;
	int err;

	q.dev = attr_device(info->attrs, info->extack);
	if (IS_ERR(q.dev))
		return PTR_ERR(q.dev);
	q.page_shift = q.dev->page_shift;
	q.mask = (1ULL << q.page_shift) - 1;
	q.usable = hbm_usable_size(q.dev);
	err = restore_parse(&q);
	count = q.n;
	if (!err && !count) {
		NL_SET_ERR_MSG(info->extack, "nothing to restore: no HBMGUARD_A_EXTENT or HBMGUARD_A_RECORDS");
		err = -EINVAL;
	}
	if (!err && count > HBM_RESTORE_MAX) {
		NL_SET_ERR_MSG(info->extack, "more than " __stringify(HBM_RESTORE_MAX)
			       " extents in one request");
		err = -E2BIG;
	}
	if (!err) {	/* charged to the sender, as an open file's ring */
		q.x = hbm_kalloc_user(array_size(count, sizeof(*q.x)));
		q.cap = q.x ? count : 0;
		err = q.x ? restore_parse(&q) : -ENOMEM;
	}
	if (!err)	/* the same message counted twice: q.n == count */
		err = hbm_device_restore(q.dev, q.x, min(q.n, q.cap));
	hbm_kfree(q.x);
	hbm_device_put(q.dev);
	return err;
}

/*
 * The reply to a command that created @dev: its id.  A device whose id
 * cannot be told (no memory, or the reply not delivered: the requester's
 * socket full) is removed again, so that a failed reply leaves nothing.
 */
static int hbm_nl_reply_created(struct genl_info *info, u8 cmd, struct hbm_device *dev)
{
	struct sk_buff *msg;
	int err = -ENOMEM;
	void *hdr;

	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		goto undo;
	hdr = genlmsg_put_reply(msg, info, &hbm_genl, 0, cmd);
	if (!hdr || nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, dev->id)) {
		nlmsg_free(msg);
		goto undo;
	}
	genlmsg_end(msg, hdr);
	err = genlmsg_reply(msg, info);
	if (!err)
		return 0;
undo:
	hbm_device_remove(dev);
	return err;
}

/*
 * Frames memory_failure() took before the range was registered.  Should the
 * table refuse them (out of memory), the range stays registered: they are
 * still kept from the allocator, only its table lacks them, as it says.
 */
static void range_import_poisoned(struct hbm_device *dev)
{
	long found = hbm_memory_failure_import(dev);

	if (found == -ENODEV)
		return;	/* unregistered already: nothing to read in */
	if (found > 0)
		pr_info("device %u %s: %ld frames poisoned before its registration read in\n",
			dev->id, dev->name, found);
	else if (found < 0)
		pr_warn("device %u %s: reading in its frames poisoned before: %ld: its table may lack some\n",
			dev->id, dev->name, found);
}

static int hbm_nl_range_register_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct hbm_device_spec spec = {
		.kind = HBMGUARD_KIND_RANGE,
		.page_size = PAGE_SIZE,
		.numa_node = -1,
	};
	struct hbm_device *dev;
	int err;

	if (!attrs[HBMGUARD_A_NAME]) {
		NL_SET_ERR_MSG(info->extack, "HBMGUARD_A_NAME is required");
		return -EINVAL;
	}
	spec.name = nla_data(attrs[HBMGUARD_A_NAME]);
	if (attrs[HBMGUARD_A_IDENTITY])
		spec.identity = nla_data(attrs[HBMGUARD_A_IDENTITY]);
	if (attrs[HBMGUARD_A_PAGE_SIZE])
		spec.page_size = nla_get_u32(attrs[HBMGUARD_A_PAGE_SIZE]);
	if (attrs[HBMGUARD_A_SPARE_PAGES])
		spec.spare_pages = nla_get_u32(attrs[HBMGUARD_A_SPARE_PAGES]);
	spec.claim = nla_get_flag(attrs[HBMGUARD_A_CLAIM]);

	if (attrs[HBMGUARD_A_NUMA_NODE]) {
		int nid = nla_get_u32(attrs[HBMGUARD_A_NUMA_NODE]);

		if (attrs[HBMGUARD_A_PHYS_ADDR] || attrs[HBMGUARD_A_HBM_SIZE]) {
			NL_SET_ERR_MSG(info->extack, "a NUMA node or a physical range, not both");
			return -EINVAL;
		}
		if (!node_online(nid) || !node_spanned_pages(nid)) {
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[HBMGUARD_A_NUMA_NODE],
					    "no memory on that node");
			return -ENODEV;
		}
		spec.numa_node = nid;
		spec.phys_start = PFN_PHYS(node_start_pfn(nid));
		spec.hbm_size = PFN_PHYS(node_spanned_pages(nid));
	} else if (attrs[HBMGUARD_A_PHYS_ADDR] && attrs[HBMGUARD_A_HBM_SIZE]) {
		spec.phys_start = nla_get_u64(attrs[HBMGUARD_A_PHYS_ADDR]);
		spec.hbm_size = nla_get_u64(attrs[HBMGUARD_A_HBM_SIZE]);
		if (spec.phys_start & (spec.page_size - 1) ||
		    spec.phys_start + spec.hbm_size < spec.phys_start) {
			NL_SET_ERR_MSG(info->extack, "physical range not page aligned or wraps");
			return -EINVAL;
		}
	} else {
		NL_SET_ERR_MSG(info->extack,
			       "HBMGUARD_A_NUMA_NODE, or HBMGUARD_A_PHYS_ADDR and HBMGUARD_A_HBM_SIZE, are required");
		return -EINVAL;
	}

	dev = hbm_device_create(&spec);
	err = PTR_ERR_OR_ZERO(dev);
	if (err == -EEXIST)
		NL_SET_ERR_MSG(info->extack, "name, identity or range already registered");
	else if (err == -EINVAL && spec.claim)
		NL_SET_ERR_MSG(info->extack,
			       "bad name, identity, size or spare pages, or a range to claim that is not all online RAM of one zone");
	else if (err == -EINVAL)
		NL_SET_ERR_MSG(info->extack, "bad name, identity, size or spare pages");
	else if (spec.claim && err == -EBUSY)
		NL_SET_ERR_MSG(info->extack,
			       "the range's memory cannot be claimed: kernel memory or poisoned pages in it");
	else if (err == -EOPNOTSUPP)
		NL_SET_ERR_MSG(info->extack, "this kernel cannot claim memory (no CONFIG_CONTIG_ALLOC)");
	if (err)
		return err;
	range_import_poisoned(dev);
	err = hbm_nl_reply_created(info, HBMGUARD_CMD_RANGE_REGISTER, dev);
	hbm_device_put(dev);
	return err;
}

static int hbm_nl_range_unregister_doit(struct sk_buff *skb,
					struct genl_info *info)
{
	int err;

	if (!info->attrs[HBMGUARD_A_DEVICE_ID]) {
		NL_SET_ERR_MSG(info->extack, "HBMGUARD_A_DEVICE_ID is required");
		return -EINVAL;
	}
	err = hbm_device_destroy(nla_get_u32(info->attrs[HBMGUARD_A_DEVICE_ID]),
				 HBMGUARD_KIND_RANGE);
	if (err == -EOPNOTSUPP)
		NL_SET_ERR_MSG(info->extack, "not a range device");
	return err;
}

static int hbm_nl_gpu_register_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct hbm_device_spec spec = {
		.kind = HBMGUARD_KIND_GPU,
		.numa_node = -1,
	};
	static const int required[] = {
		HBMGUARD_A_NAME, HBMGUARD_A_IDENTITY, HBMGUARD_A_PCI_ADDR,
		HBMGUARD_A_HBM_SIZE, HBMGUARD_A_PAGE_SIZE,
	};
	static const int refused[] = {
		HBMGUARD_A_SPARE_PAGES, HBMGUARD_A_CLAIM, HBMGUARD_A_PHYS_ADDR,
		HBMGUARD_A_NUMA_NODE,
	};
	unsigned int i;
	struct hbm_device *dev;
	int err;

	for (i = 0; i < ARRAY_SIZE(required); i++) {
		if (!attrs[required[i]]) {
			NL_SET_ERR_MSG(info->extack,
				       "NAME, IDENTITY, PCI_ADDR, HBM_SIZE and PAGE_SIZE are required");
			return -EINVAL;
		}
	}
	for (i = 0; i < ARRAY_SIZE(refused); i++) {
		if (attrs[refused[i]]) {
			NL_SET_ERR_MSG_ATTR(info->extack, attrs[refused[i]],
					    "a GPU has no spares or memory of ours: its driver bypasses bad pages");
			return -EINVAL;
		}
	}
	spec.name = nla_data(attrs[HBMGUARD_A_NAME]);
	spec.identity = nla_data(attrs[HBMGUARD_A_IDENTITY]);
	spec.pci_addr = nla_data(attrs[HBMGUARD_A_PCI_ADDR]);
	spec.hbm_size = nla_get_u64(attrs[HBMGUARD_A_HBM_SIZE]);
	spec.page_size = nla_get_u32(attrs[HBMGUARD_A_PAGE_SIZE]);
	if (!hbm_pci_addr_valid(spec.pci_addr)) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[HBMGUARD_A_PCI_ADDR],
				    "not a PCI address as the kernel names it (0000:3b:00.0)");
		return -EINVAL;
	}
	if (!*spec.identity) {
		NL_SET_ERR_MSG_ATTR(info->extack, attrs[HBMGUARD_A_IDENTITY],
				    "a GPU's identity (its UUID) is required");
		return -EINVAL;
	}

	dev = hbm_device_create(&spec);
	err = PTR_ERR_OR_ZERO(dev);
	if (err == -EEXIST)
		NL_SET_ERR_MSG(info->extack, "name, identity or PCI address already registered");
	else if (err == -EINVAL)
		NL_SET_ERR_MSG(info->extack,
			       "bad name or identity, or a size that is not a non-zero multiple of the page size below 2^32 pages");
	if (err)
		return err;

	err = hbm_nl_reply_created(info, HBMGUARD_CMD_GPU_REGISTER, dev);
	hbm_device_put(dev);
	return err;
}

static int hbm_nl_gpu_unregister_doit(struct sk_buff *skb, struct genl_info *info)
{
	int err;

	if (!info->attrs[HBMGUARD_A_DEVICE_ID]) {
		NL_SET_ERR_MSG(info->extack, "HBMGUARD_A_DEVICE_ID is required");
		return -EINVAL;
	}
	err = hbm_device_destroy(nla_get_u32(info->attrs[HBMGUARD_A_DEVICE_ID]),
				 HBMGUARD_KIND_GPU);
	if (err == -EOPNOTSUPP)
		NL_SET_ERR_MSG(info->extack, "not a GPU device");
	else if (err == -ENODEV)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[HBMGUARD_A_DEVICE_ID],
				    "no such device");
	return err;
}

static int hbm_nl_gpu_health_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct hbm_device *dev;
	int err;

	if (!info->attrs[HBMGUARD_A_DRIVER_HEALTH]) {
		NL_SET_ERR_MSG(info->extack, "HBMGUARD_A_DRIVER_HEALTH is required");
		return -EINVAL;
	}
	dev = attr_device(info->attrs, info->extack);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	err = hbm_device_driver_health(dev,
				       nla_get_u32(info->attrs[HBMGUARD_A_DRIVER_HEALTH]));
	if (err == -EOPNOTSUPP)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[HBMGUARD_A_DEVICE_ID],
				    "not a GPU device: its health is its table's");
	hbm_device_put(dev);
	return err;
}

static const struct genl_ops hbm_genl_ops[] = {
	{
		.cmd = HBMGUARD_CMD_DEVICE_GET,
		.doit = hbm_nl_device_get_doit,
		.start = hbm_nl_dump_start,
		.dumpit = hbm_nl_device_get_dumpit,
	},
	{
		.cmd = HBMGUARD_CMD_PAGES_GET,
		.start = hbm_nl_pages_get_start,
		.dumpit = hbm_nl_pages_get_dumpit,
		.done = hbm_nl_pages_get_done,
	},
	{
		.cmd = HBMGUARD_CMD_RETIRE,
		.doit = hbm_nl_retire_doit,
	},
	{
		.cmd = HBMGUARD_CMD_CLEAR,
		.doit = hbm_nl_clear_doit,
	},
	{
		.cmd = HBMGUARD_CMD_POLICY_SET,
		.doit = hbm_nl_policy_set_doit,
	},
	{
		.cmd = HBMGUARD_CMD_STATS_GET,
		.doit = hbm_nl_stats_get_doit,
	},
	{
		.cmd = HBMGUARD_CMD_RESTORE,
		.doit = hbm_nl_restore_doit,
	},
	{
		.cmd = HBMGUARD_CMD_RANGE_REGISTER,
		.doit = hbm_nl_range_register_doit,
	},
	{
		.cmd = HBMGUARD_CMD_RANGE_UNREGISTER,
		.doit = hbm_nl_range_unregister_doit,
	},
	{
		.cmd = HBMGUARD_CMD_GPU_REGISTER,
		.doit = hbm_nl_gpu_register_doit,
	},
	{
		.cmd = HBMGUARD_CMD_GPU_UNREGISTER,
		.doit = hbm_nl_gpu_unregister_doit,
	},
	{
		.cmd = HBMGUARD_CMD_GPU_HEALTH_SET,
		.doit = hbm_nl_gpu_health_set_doit,
	},
};

enum { HBM_MCGRP_EVENTS };

static const struct genl_multicast_group hbm_genl_mcgrps[] = {
	[HBM_MCGRP_EVENTS] = {
		.name = HBMGUARD_GENL_MCGRP_EVENTS,
		.flags = GENL_MCAST_CAP_SYS_ADMIN,	/* see compat.h */
	},
};

static struct genl_family hbm_genl __ro_after_init = {
	.name = HBMGUARD_GENL_NAME,
	.version = HBMGUARD_GENL_VERSION,
	.maxattr = HBMGUARD_A_MAX,
	.policy = hbm_policy,
	.pre_doit = hbm_nl_pre_doit,
	.parallel_ops = true,	/* see the top of this file */
	.module = THIS_MODULE,
	.ops = hbm_genl_ops,
	.n_ops = ARRAY_SIZE(hbm_genl_ops),
	.resv_start_op = HBMGUARD_CMD_DEVICE_GET,	/* every command strict */
	.mcgrps = hbm_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(hbm_genl_mcgrps),
};

/*
 * Events.
 */
static u64 hbm_nl_dropped;	/* under the events mutex */
static u64 hbm_nl_dropped_total;
static bool hbm_nl_ready;

u64 hbm_netlink_dropped(void)
{
	return READ_ONCE(hbm_nl_dropped_total);
}

/*
 * A receiver of the events group not opened by an admin (compat.h).  A
 * socket on the group's list has its file until it leaves the list
 * (netlink_release() removes it, waiting for the walk, before
 * sock_orphan()); one without is a kernel socket, not a listener of ours.
 */
static int hbm_nl_not_admin(struct sock *dsk, struct sk_buff *skb, void *data)
{
	struct socket *sock = dsk->sk_socket;

	return !sock || !sock->file ||
	       !file_ns_capable(sock->file, &init_user_ns, CAP_SYS_ADMIN);
}

static int event_send(u32 type, const struct hbmguard_event *ev, u32 count)
{
	struct sk_buff *msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	void *hdr;

	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put(msg, 0, 0, &hbm_genl, 0, HBMGUARD_CMD_EVENT);
	if (!hdr ||
	    nla_put_u32(msg, HBMGUARD_A_EVENT_TYPE, type) ||
	    put_u64(msg, HBMGUARD_A_SEQNUM, ev->seqnum) ||
	    put_u64(msg, HBMGUARD_A_TIMESTAMP, ev->timestamp) ||
	    nla_put_u32(msg, HBMGUARD_A_DEVICE_ID, ev->device) ||
	    put_u64(msg, HBMGUARD_A_OFFSET, ev->offset) ||
	    put_u64(msg, HBMGUARD_A_LENGTH, ev->length) ||
	    nla_put_u32(msg, HBMGUARD_A_SOURCE, ev->source) ||
	    nla_put_u32(msg, HBMGUARD_A_STATE, ev->state) ||
	    nla_put_u32(msg, HBMGUARD_A_COUNT, count) ||
	    nla_put_u32(msg, HBMGUARD_A_AUX, ev->aux)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	genlmsg_end(msg, hdr);
	/* A listener whose buffer is full loses it and sees ENOBUFS: its affair. */
	hbm_genl_multicast_checked(&hbm_genl, msg, HBM_MCGRP_EVENTS, hbm_nl_not_admin);
	return 0;
}

/**
 * hbm_netlink_event() - send an event to the "events" group
 * @ev: the event, numbered
 *
 * Called by hbm_event() under the events mutex, in process context, so
 * events leave in order.
 * An event the module could not send is counted and announced by a DROPPED
 * event before the next one.
 */
void hbm_netlink_event(const struct hbmguard_event *ev)
{
	if (!READ_ONCE(hbm_nl_ready) ||
	    !genl_has_listeners(&hbm_genl, &init_net, HBM_MCGRP_EVENTS))
		return;
	if (hbm_nl_dropped) {
		if (event_send(HBMGUARD_EVENT_DROPPED, ev, hbm_nl_dropped))
			goto drop;
		hbm_nl_dropped = 0;
	}
	if (!event_send(ev->type, ev, ev->count))
		return;
drop:
	hbm_nl_dropped++;
	WRITE_ONCE(hbm_nl_dropped_total, hbm_nl_dropped_total + 1);
}

/*
 * Ready before the family is registered: a listener may join the group as
 * soon as the controller says the family is new, and ask for a change (a
 * RESTORE) whose event is its own news, while genl_register_family() is
 * still announcing the group (the locks are let go before the news:
 * net/netlink/genetlink.c, 6.1 and 6.12); ready after it, that event was
 * lost, unsaid.  Until the group is assigned, hbm_genl.mcgrp_offset is 0
 * and genl_has_listeners() asks of group 0, which never has any
 * (netlink_has_listeners(), net/netlink/af_netlink.c: group - 1 is past
 * the groups).
 */
int __init hbm_netlink_init(void)
{
	int err;

	WRITE_ONCE(hbm_nl_ready, true);
	err = genl_register_family(&hbm_genl);
	if (err) {
		WRITE_ONCE(hbm_nl_ready, false);
		hbm_events_quiesce();
	} else if (!HBM_EVENTS_FILTERED) {
		pr_notice("events: a socket that joined their group before the module was loaded hears them: this kernel cannot check receivers (compat.h)\n");
	}
	return err;
}

/*
 * A sender past its check (an intake worker still draining) sends before
 * the family goes: once unregistered, its group may be another family's,
 * or joined by anyone (genl_bind() lets any socket join a group no family
 * owns, net/netlink/genetlink.c, 6.12), and the event with its addresses
 * would go to them.
 */
void hbm_netlink_exit(void)
{
	WRITE_ONCE(hbm_nl_ready, false);
	hbm_events_quiesce();
	genl_unregister_family(&hbm_genl);
}
