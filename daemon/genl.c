// SPDX-License-Identifier: GPL-2.0
/*
 * One request to the hbmguard family and everything it answers.  libnl's own
 * nl_wait_for_ack() stops after a single reply and leaves the ACK that
 * follows it for the next request, so this takes replies until the kernel's
 * ACK, DONE or error, whichever the request brings, a DONE's own error
 * too (a dump that failed part way is no dump read whole); and keeps the
 * kernel's reason (the extended ACK's message) for the caller to print.
 *
 * A request's replies are those that carry its sequence number.  libnl's own
 * check is stricter and frailer: it wants each message's number to be
 * s_seq_expect, which only the end of an answer (DONE, ERROR) moves on,
 * while every send moves s_seq_next (recvmsgs() and nl_complete_msg(),
 * lib/nl.c, libnl 3.7).  An exchange cut short -- a send that failed, a
 * parse callback's error, a truncated read, ENOBUFS -- leaves the two apart
 * for good, and every later request on the socket failed NLE_SEQ_MISMATCH.
 * So each exchange runs on a callback set of its own (a clone of the
 * socket's: the port filter and the like stay) whose NL_CB_SEQ_CHECK takes
 * only its request's number and skips the rest, the stale answer of an
 * exchange cut short; what an exchange cut short leaves queued is thrown
 * away before it returns.  Its own set also leaves the socket no callback
 * that points into an exchange that has returned, which a later
 * genl_ctrl_resolve() would clone and call.  And libnl's own requests on the same socket
 * (genl_ctrl_resolve() sends with the socket's callbacks and reads with a
 * clone of them, genl_ctrl_probe_by_name(), lib/genl/ctrl.c, libnl 3.7)
 * get the same check where the socket's owner asks for it:
 * hbm_genl_match_replies().  Reopening the socket instead would lose what
 * was set on it (its buffer sizes) and still not mend the sequence
 * numbers, which nl_connect() leaves as they are.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/hbmguard.h>
#include <linux/netlink.h>

#include "genl.h"

struct outcome {
	int kerr;
	bool done;
	bool changed;	/* a message said NLM_F_DUMP_INTR */
};

static char reason[256];

/**
 * hbm_genl_strerror() - what a failed request's -errno means
 * @err: hbm_genl_transact()'s return
 *
 * Return: strerror(-@err), with the kernel's reason when it gave one, in a
 * buffer the next call reuses.
 */
const char *hbm_genl_strerror(int err)
{
	static char buf[sizeof(reason) + 64];

	snprintf(buf, sizeof(buf), "%s%s%s", strerror(-err), *reason ? ": " : "", reason);
	return buf;
}

/*
 * NLMSGERR_ATTR_MSG among the extended ACK's attributes of @nlh, which
 * start @off bytes into its payload.  The kernel may set NLM_F_ACK_TLVS
 * and leave them out when they do not fit (netlink_dump_done()): whatever
 * the message's length holds is read.
 */
static void take_reason(const struct nlmsghdr *nlh, size_t off)
{
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS) || NLMSG_HDRLEN + off >= nlh->nlmsg_len ||
	    nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)NLMSG_DATA(nlh) + off),
		      nlh->nlmsg_len - NLMSG_HDRLEN - off, NULL) || !tb[NLMSGERR_ATTR_MSG])
		return;
	snprintf(reason, sizeof(reason), "%.*s", nla_len(tb[NLMSGERR_ATTR_MSG]),
		 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
}

/* An error's ack: the request echoed unless NLM_F_CAPPED, then the TLVs (netlink_ack()). */
static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	const struct nlmsghdr *nlh = (const void *)((const char *)e - NLMSG_HDRLEN);
	struct outcome *o = arg;
	size_t off = sizeof(*e);

	(void)who;
	o->kerr = e->error;
	o->done = true;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	take_reason(nlh, off);
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct outcome *)arg)->done = true;
	return NL_STOP;
}

/*
 * A dump's NLMSG_DONE carries its dump function's return, 0 or a -errno,
 * as an int, and with NLM_F_ACK_TLVS the extended ACK's attributes after
 * it (netlink_dump_done(), net/netlink/af_netlink.c, 6.1 and 6.12): a dump
 * that failed part way -- its device removed between rounds, an unknown
 * device on the first -- ends in a DONE like any other.
 */
static int on_done(struct nl_msg *msg, void *arg)
{
	const struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct outcome *o = arg;
	int err;

	o->done = true;
	if (nlmsg_datalen(nlh) < (int)sizeof(err))
		return NL_STOP;		/* no error to tell */
	memcpy(&err, nlmsg_data(nlh), sizeof(err));
	if (err < 0) {
		o->kerr = err;
		take_reason(nlh, NLMSG_ALIGN(sizeof(err)));
	}
	return NL_STOP;
}

/*
 * NL_CB_DUMP_INTR: noted, and the message taken.  Without it libnl makes
 * the whole read's result -NLE_DUMP_INTR, whatever else failed in it
 * (recvmsgs(), lib/nl.c, libnl 3.7).
 */
static int on_changed(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct outcome *)arg)->changed = true;
	return NL_OK;
}

/* NL_CB_SEQ_CHECK: a reply to the request numbered *@arg, or stale. */
static int is_reply(struct nl_msg *msg, void *arg)
{
	return nlmsg_hdr(msg)->nlmsg_seq == *(unsigned int *)arg ? NL_OK : NL_SKIP;
}

/* NL_CB_MSG_OUT: its number, numbered by now (nl_send_auto()). */
static int note_sent(struct nl_msg *msg, void *arg)
{
	*(unsigned int *)arg = nlmsg_hdr(msg)->nlmsg_seq;
	return NL_OK;
}

/**
 * hbm_genl_match_replies() - libnl's own requests on @sk too take only
 * their replies
 * @sk: a socket for requests, never for events
 * @sent: where the number of the request sent last is kept, for as long as
 *	@sk is used
 *
 * Without it, hbm_genl_exchange() still works after an exchange cut short,
 * but libnl's own requests (genl_ctrl_resolve()) on @sk fail
 * NLE_SEQ_MISMATCH ever after.
 */
void hbm_genl_match_replies(struct nl_sock *sk, unsigned int *sent)
{
	nl_socket_modify_cb(sk, NL_CB_MSG_OUT, NL_CB_CUSTOM, note_sent, sent);
	nl_socket_modify_cb(sk, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, is_reply, sent);
}

/*
 * What is left of an answer cut short, all on the socket by now: a request
 * is handled in the sender's sendmsg() (netlink_unicast_kernel()), and each
 * read of a dump's part has the kernel put the next one (netlink_recvmsg(),
 * net/netlink/af_netlink.c, 6.12), so reading until nothing is left reads
 * a dump to its end.
 */
static void discard_pending(struct nl_sock *sk)
{
	char buf[64];

	while (recv(nl_socket_get_fd(sk), buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC) >= 0 ||
	       errno == EINTR || errno == ENOBUFS)
		;
}

/**
 * hbm_genl_kernel_only() - @sk refuses unicasts from anyone but the kernel
 * @sk: a socket nl_connect() bound: it binds, it does not connect (nl_connect(),
 *	lib/nl.c, libnl 3.7)
 *
 * A socket connected to port 0, the kernel's, is refused any unicast from
 * another port (ECONNREFUSED to its sender: netlink_getsockbyportid(),
 * net/netlink/af_netlink.c, 6.1 and 6.12); the kernel's replies, acks and
 * dumps come from port 0 or straight from its dump.  Sends still go to the
 * kernel.
 *
 * Return: 0, or -errno.
 */
int hbm_genl_kernel_only(struct nl_sock *sk)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	if (connect(nl_socket_get_fd(sk), (struct sockaddr *)&kernel, sizeof(kernel)))
		return -errno;
	return 0;
}

struct nl_msg *hbm_genl_request(int family, int cmd, int flags)
{
	return hbm_genl_request_sized(family, cmd, flags, 0);
}

/**
 * hbm_genl_request_sized() - a request with room for @size bytes
 * @family: the family's id
 * @cmd: the command
 * @flags: NLM_F_* beyond NLM_F_REQUEST
 * @size: bytes of the whole message, or 0 for libnl's default (a page)
 *
 * A libnl message never grows: a put past its size fails and leaves the
 * message as it was (nla_reserve(), lib/attr.c, libnl 3.7), so whoever
 * fills one with a variable number of attributes checks every put.
 *
 * Return: the message, or NULL without memory.
 */
struct nl_msg *hbm_genl_request_sized(int family, int cmd, int flags, size_t size)
{
	struct nl_msg *msg = size ? nlmsg_alloc_size(size) : nlmsg_alloc();

	if (msg)
		genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd,
			    HBMGUARD_GENL_VERSION);
	return msg;
}

/* hbm_genl_exchange(); @take_changed: an interrupted dump is no -EAGAIN. */
static int exchange(struct nl_sock *sk, struct nl_msg *msg, nl_recvmsg_msg_cb_t parse,
		    void *arg, bool take_changed)
{
	struct nl_cb *socket_cb = nl_socket_get_cb(sk), *cb = nl_cb_clone(socket_cb);
	struct outcome o = { 0 };
	unsigned int seq;
	int err;

	nl_cb_put(socket_cb);
	reason[0] = 0;
	if (!cb)
		return -ENOMEM;
	/*
	 * libnl 3.7 has no nl_socket_set_ext_ack().  CAP_ACK: an error's ack
	 * does not echo the request (netlink_ack(), net/netlink/af_netlink.c),
	 * which can be larger than a page (a RESTORE) and so larger than what
	 * libnl reads at once.
	 */
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &(int){ 1 }, sizeof(int));
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &(int){ 1 }, sizeof(int));
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &o);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &o);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &o);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, on_changed, &o);
	nl_cb_set(cb, NL_CB_VALID, parse ? NL_CB_CUSTOM : NL_CB_DEFAULT, parse, arg);
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, is_reply, &seq);
	/*
	 * A send numbers the message and names the port only where they are
	 * still NL_AUTO_SEQ and NL_AUTO_PORT (nl_complete_msg(), lib/nl.c,
	 * libnl 3.7): a message sent before would keep its old number, and
	 * the stale answer to that send would be taken for this one's.
	 */
	nlmsg_hdr(msg)->nlmsg_seq = NL_AUTO_SEQ;
	nlmsg_hdr(msg)->nlmsg_pid = NL_AUTO_PORT;
	err = nl_send_auto(sk, msg);
	seq = nlmsg_hdr(msg)->nlmsg_seq;
	while (err >= 0 && !o.done)
		err = nl_recvmsgs(sk, cb);
	nl_cb_put(cb);
	if (!o.done)
		discard_pending(sk);
	if (o.kerr)
		return o.kerr;
	if (err < 0)
		return -EIO;
	if (o.changed && !take_changed) {
		snprintf(reason, sizeof(reason), "it changed during the dump: read it again");
		return -EAGAIN;
	}
	return 0;
}

/**
 * hbm_genl_exchange() - send @msg, hand each reply to @parse, keep @msg
 * @sk: the socket
 * @msg: the request, the caller's still: it may send it again, refilled
 *	(hbm_genl_rewind()) or not; each send numbers it anew
 * @parse: called for each reply, or NULL
 * @arg: for @parse
 *
 * @sk stays usable after any failure: a later request gets its own answer.
 *
 * Return: 0, the kernel's -errno, -ENOMEM, -EIO when the socket or @parse
 * failed, or -EAGAIN for a dump read whole during which what it answers
 * changed (NLM_F_DUMP_INTR); after a -errno, hbm_genl_strerror() says why.
 */
int hbm_genl_exchange(struct nl_sock *sk, struct nl_msg *msg,
		      nl_recvmsg_msg_cb_t parse, void *arg)
{
	return exchange(sk, msg, parse, arg, false);
}

static int transact(struct nl_sock *sk, struct nl_msg *msg, nl_recvmsg_msg_cb_t parse,
		    void *arg, bool take_changed)
{
	int err;

	if (!msg)
		return -ENOMEM;
	err = exchange(sk, msg, parse, arg, take_changed);
	nlmsg_free(msg);
	return err;
}

/**
 * hbm_genl_transact() - hbm_genl_exchange(), @msg freed
 * @sk: the socket
 * @msg: the request, freed here; NULL (its allocation failed): -ENOMEM
 * @parse: called for each reply, or NULL
 * @arg: for @parse
 *
 * Return: as hbm_genl_exchange().
 */
int hbm_genl_transact(struct nl_sock *sk, struct nl_msg *msg,
		      nl_recvmsg_msg_cb_t parse, void *arg)
{
	return transact(sk, msg, parse, arg, false);
}

/**
 * hbm_genl_transact_changing() - hbm_genl_transact() of a dump whose
 * reader takes what it read while it changed (NLM_F_DUMP_INTR) as read
 * @sk: the socket
 * @msg: the request, freed here; NULL: -ENOMEM
 * @parse: called for each reply, or NULL
 * @arg: for @parse
 *
 * For a reader that applies, after the dump, every change made since a
 * point before it (the module's events after its SEQNUM): the dump and
 * those are the table, and a storm of changes cannot keep it reading.
 *
 * Return: as hbm_genl_exchange(), never -EAGAIN.
 */
int hbm_genl_transact_changing(struct nl_sock *sk, struct nl_msg *msg,
			       nl_recvmsg_msg_cb_t parse, void *arg)
{
	return transact(sk, msg, parse, arg, true);
}

/**
 * hbm_genl_rewind() - @msg as it was at @len bytes, to be refilled
 * @msg: a request sent (or not)
 * @len: its nlmsg_len then
 *
 * A put appends at nlmsg_len (nla_reserve(), lib/attr.c, libnl 3.7);
 * hbm_genl_exchange() numbers it anew when it is sent again.
 */
void hbm_genl_rewind(struct nl_msg *msg, uint32_t len)
{
	nlmsg_hdr(msg)->nlmsg_len = len;
}
