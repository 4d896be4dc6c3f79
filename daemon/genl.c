// SPDX-License-Identifier: GPL-2.0
/*
 * One request to the hbmguard family and everything it answers.  libnl's own
 * nl_wait_for_ack() stops after a single reply and leaves the ACK that
 * follows it for the next request, so this takes replies until the kernel's
 * ACK, DONE or error, whichever the request brings; and keeps the kernel's
 * reason (the extended ACK's message) for the caller to print.
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

/* NLMSGERR_ATTR_MSG of an error carrying extended ACK TLVs. */
static void take_reason(const struct nlmsgerr *e)
{
	const struct nlmsghdr *nlh = (const void *)((const char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (NLMSG_HDRLEN + off >= nlh->nlmsg_len ||
	    nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)e + off),
		      nlh->nlmsg_len - NLMSG_HDRLEN - off, NULL) || !tb[NLMSGERR_ATTR_MSG])
		return;
	snprintf(reason, sizeof(reason), "%.*s", nla_len(tb[NLMSGERR_ATTR_MSG]),
		 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct outcome *o = arg;

	(void)who;
	o->kerr = e->error;
	o->done = true;
	take_reason(e);
	return NL_STOP;
}

static int on_end(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct outcome *)arg)->done = true;
	return NL_STOP;
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

/**
 * hbm_genl_exchange() - send @msg, hand each reply to @parse, keep @msg
 * @sk: the socket
 * @msg: the request, the caller's still: it may send it again, refilled
 *	(hbm_genl_rewind())
 * @parse: called for each reply, or NULL
 * @arg: for @parse
 *
 * Return: 0, the kernel's -errno, or -EIO when the socket failed; after a
 * -errno, hbm_genl_strerror() says why.
 */
int hbm_genl_exchange(struct nl_sock *sk, struct nl_msg *msg,
		      nl_recvmsg_msg_cb_t parse, void *arg)
{
	struct outcome o = { 0 };
	int err;

	reason[0] = 0;
	/*
	 * libnl 3.7 has no nl_socket_set_ext_ack().  CAP_ACK: an error's ack
	 * does not echo the request (netlink_ack(), net/netlink/af_netlink.c),
	 * which can be larger than a page (a RESTORE) and so larger than what
	 * libnl reads at once.
	 */
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &(int){ 1 }, sizeof(int));
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &(int){ 1 }, sizeof(int));
	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, &o);
	nl_socket_modify_cb(sk, NL_CB_ACK, NL_CB_CUSTOM, on_end, &o);
	nl_socket_modify_cb(sk, NL_CB_FINISH, NL_CB_CUSTOM, on_end, &o);
	nl_socket_modify_cb(sk, NL_CB_VALID, parse ? NL_CB_CUSTOM : NL_CB_DEFAULT,
			    parse, arg);
	err = nl_send_auto(sk, msg);
	while (err >= 0 && !o.done)
		err = nl_recvmsgs_default(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_DEFAULT, NULL, NULL);
	if (o.kerr)
		return o.kerr;
	return err < 0 ? -EIO : 0;
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
	int err;

	if (!msg)
		return -ENOMEM;
	err = hbm_genl_exchange(sk, msg, parse, arg);
	nlmsg_free(msg);
	return err;
}

/**
 * hbm_genl_rewind() - @msg as it was at @len bytes, to be sent again
 * @msg: a request sent (or not)
 * @len: its nlmsg_len then
 *
 * A put appends at nlmsg_len (nla_reserve(), lib/attr.c, libnl 3.7), and a
 * send numbers the message and names the port only where they are still
 * NL_AUTO_SEQ and NL_AUTO_PORT (nl_complete_msg(), lib/nl.c): both are
 * made so again, so that the next send's ack is matched to it.
 */
void hbm_genl_rewind(struct nl_msg *msg, uint32_t len)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);

	h->nlmsg_len = len;
	h->nlmsg_seq = NL_AUTO_SEQ;
	h->nlmsg_pid = NL_AUTO_PORT;
}
