// SPDX-License-Identifier: GPL-2.0
/*
 * hbm_genl_exchange() (daemon/genl.c) after an exchange cut short, against
 * this host's own generic netlink controller, nlctrl: its CTRL_CMD_GETFAMILY
 * answers any process, as a request or as a dump (genl_ctrl_ops[], no
 * GENL_ADMIN_PERM, net/netlink/genetlink.c, 6.12), so no module is loaded.
 * Each case cuts one exchange short, then asks on the same socket for the
 * controller's own family, by hbm_genl_exchange() and by libnl's
 * genl_ctrl_resolve(): both must get their own answer, and only it.  The
 * others leave a stale answer queued on a socket with no check but the
 * exchange's own (the daemon's dump socket), and read a dump's error from
 * its DONE, which rtnetlink's link dump gives any process.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/rtnetlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <linux/genetlink.h>

#include "genl.h"
#include "unit.h"

struct families {
	int replies;
	int nlctrl;	/* replies that name the controller, with its id */
};

static int count_family(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[CTRL_ATTR_MAX + 1];
	struct families *f = arg;

	f->replies++;
	if (!genlmsg_parse(nlmsg_hdr(msg), 0, a, CTRL_ATTR_MAX, NULL) &&
	    a[CTRL_ATTR_FAMILY_NAME] && a[CTRL_ATTR_FAMILY_ID] &&
	    !strcmp(nla_get_string(a[CTRL_ATTR_FAMILY_NAME]), "nlctrl") &&
	    nla_get_u16(a[CTRL_ATTR_FAMILY_ID]) == GENL_ID_CTRL)
		f->nlctrl++;
	return NL_OK;
}

static int fail_first(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return -NLE_FAILURE;
}

static struct nl_msg *get_family(int flags)
{
	return hbm_genl_request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, flags);
}

static unsigned int sent;

static struct nl_sock *controller(void)
{
	struct nl_sock *sk = nl_socket_alloc();

	ck_assert_msg(sk && !genl_connect(sk), "no generic netlink socket on this host");
	hbm_genl_match_replies(sk, &sent);
	return sk;
}

/*
 * The socket as good as new: libnl's own resolve first (it reads whatever
 * comes first), then a request and a dump.
 */
static void expect_working(struct nl_sock *sk)
{
	struct nl_msg *msg = get_family(0);
	struct families one = { 0 }, all = { 0 };
	int err;

	ck_assert_int_eq(genl_ctrl_resolve(sk, "nlctrl"), GENL_ID_CTRL);
	nla_put_string(msg, CTRL_ATTR_FAMILY_NAME, "nlctrl");
	err = hbm_genl_transact(sk, msg, count_family, &one);
	ck_assert_msg(!err, "GETFAMILY nlctrl: %s", hbm_genl_strerror(err));
	ck_assert_int_eq(one.replies, 1);
	ck_assert_int_eq(one.nlctrl, 1);
	err = hbm_genl_transact(sk, get_family(NLM_F_DUMP), count_family, &all);
	ck_assert_msg(!err, "GETFAMILY dump: %s", hbm_genl_strerror(err));
	ck_assert_int_eq(all.nlctrl, 1);
	nl_socket_free(sk);
}

START_TEST(genl_after_parse_error)
{
	struct nl_sock *sk = controller();

	ck_assert_int_eq(hbm_genl_transact(sk, get_family(NLM_F_DUMP), fail_first, NULL), -EIO);
	expect_working(sk);
}
END_TEST

/* libnl reads into a buffer of the set size, and a message larger is cut (nl_recv(), lib/nl.c, libnl 3.7). */
START_TEST(genl_after_truncated_read)
{
	struct nl_sock *sk = controller();
	struct families f = { 0 };

	nl_socket_set_msg_buf_size(sk, 64);
	ck_assert_int_eq(hbm_genl_transact(sk, get_family(NLM_F_DUMP), count_family, &f), -EIO);
	nl_socket_set_msg_buf_size(sk, 0);
	expect_working(sk);
}
END_TEST

/*
 * A message larger than the send buffer is refused (netlink_sendmsg(),
 * net/netlink/af_netlink.c, 6.12: EMSGSIZE), after libnl has numbered it.
 */
START_TEST(genl_after_failed_send)
{
	struct nl_sock *sk = controller();
	struct nl_msg *msg = hbm_genl_request_sized(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0, 1 << 16);

	ck_assert(!setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_SNDBUF, &(int){ 4096 }, sizeof(int)));
	ck_assert_ptr_nonnull(nla_reserve(msg, CTRL_ATTR_FAMILY_NAME, 60000));
	ck_assert_int_eq(hbm_genl_transact(sk, msg, NULL, NULL), -EIO);
	expect_working(sk);
}
END_TEST

/*
 * An answer never read, on a socket with no check of its own: its replies
 * and its DONE come before those of the next request, whose own check
 * must skip them.
 */
START_TEST(genl_stale_answer_skipped)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = get_family(NLM_F_DUMP);
	struct families one = { 0 };
	int err;

	ck_assert_msg(sk && !genl_connect(sk), "no generic netlink socket on this host");
	ck_assert_int_ge(nl_send_auto(sk, msg), 0);
	nlmsg_free(msg);
	msg = get_family(0);
	nla_put_string(msg, CTRL_ATTR_FAMILY_NAME, "nlctrl");
	err = hbm_genl_transact(sk, msg, count_family, &one);
	ck_assert_msg(!err, "GETFAMILY nlctrl: %s", hbm_genl_strerror(err));
	ck_assert_int_eq(one.replies, 1);
	ck_assert_int_eq(one.nlctrl, 1);
	nl_socket_free(sk);
}
END_TEST

/*
 * A request sent, its answer never read, then refilled and sent again: the
 * answer taken is the second send's.  By id, not by name: an unknown
 * name has the kernel ask modprobe for it (ctrl_getfamily(),
 * net/netlink/genetlink.c, 6.12), an unknown id is only ENOENT.
 */
START_TEST(genl_resent_request_numbered_anew)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = get_family(0);
	uint32_t head = nlmsg_hdr(msg)->nlmsg_len;
	struct families one = { 0 };
	int err;

	ck_assert_msg(sk && !genl_connect(sk), "no generic netlink socket on this host");
	nla_put_u16(msg, CTRL_ATTR_FAMILY_ID, 0xffff);
	ck_assert_int_ge(nl_send_auto(sk, msg), 0);	/* its ENOENT stays queued */
	hbm_genl_rewind(msg, head);
	nla_put_u16(msg, CTRL_ATTR_FAMILY_ID, GENL_ID_CTRL);
	err = hbm_genl_exchange(sk, msg, count_family, &one);
	ck_assert_msg(!err, "GETFAMILY nlctrl sent again: %s", hbm_genl_strerror(err));
	ck_assert_int_eq(one.nlctrl, 1);
	nlmsg_free(msg);
	nl_socket_free(sk);
}
END_TEST

static int count_reply(struct nl_msg *msg, void *arg)
{
	(void)msg;
	++*(int *)arg;
	return NL_OK;
}

/*
 * A dump's error is in its DONE, with the extended ACK's message: under
 * NETLINK_GET_STRICT_CHK the link dump refuses a header with ifi_type set
 * from its dump function (rtnl_valid_dump_ifinfo_req() in
 * rtnl_dump_ifinfo(), net/core/rtnetlink.c, 6.1 and 6.12).
 */
START_TEST(genl_dump_error_from_done)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_GETLINK, NLM_F_DUMP);
	struct ifinfomsg bad = { .ifi_type = 1 };
	int err, replies = 0;

	ck_assert_msg(sk && !nl_connect(sk, NETLINK_ROUTE), "no rtnetlink socket on this host");
	ck_assert(!setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_GET_STRICT_CHK,
			      &(int){ 1 }, sizeof(int)));
	ck_assert(!nlmsg_append(msg, &bad, sizeof(bad), NLMSG_ALIGNTO));
	err = hbm_genl_transact(sk, msg, count_reply, &replies);
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_int_eq(replies, 0);
	ck_assert_msg(strstr(hbm_genl_strerror(err), "Invalid values in header for link dump request"),
		      "the kernel's reason lost: %s", hbm_genl_strerror(err));
	nl_socket_free(sk);
}
END_TEST

/* A unicast to @to's port from another socket: 0, or -errno. */
static int unicast(struct nl_sock *from, struct nl_sock *to)
{
	struct sockaddr_nl port = { .nl_family = AF_NETLINK,
				    .nl_pid = nl_socket_get_local_port(to) };
	struct nlmsghdr hello = { .nlmsg_len = sizeof(hello), .nlmsg_type = NLMSG_NOOP };

	return sendto(nl_socket_get_fd(from), &hello, sizeof(hello), 0, (struct sockaddr *)&port,
		      sizeof(port)) < 0 ? -errno : 0;
}

/*
 * NETLINK_USERSOCK: the one protocol where any process may send to
 * another's port (netlink_add_usersock_entry(), NL_CFG_F_NONROOT_SEND,
 * net/netlink/af_netlink.c, 6.12); generic netlink asks CAP_NET_ADMIN.
 */
START_TEST(genl_kernel_only_refuses_others)
{
	struct nl_sock *other = nl_socket_alloc(), *unguarded = nl_socket_alloc(),
		       *guarded = nl_socket_alloc();

	ck_assert(other && unguarded && guarded);
	ck_assert(!nl_connect(other, NETLINK_USERSOCK) && !nl_connect(unguarded, NETLINK_USERSOCK) &&
		  !nl_connect(guarded, NETLINK_USERSOCK));
	ck_assert_int_eq(hbm_genl_kernel_only(guarded), 0);
	ck_assert_int_eq(unicast(other, unguarded), 0);
	ck_assert_int_eq(unicast(other, guarded), -ECONNREFUSED);
	nl_socket_free(other);
	nl_socket_free(unguarded);
	nl_socket_free(guarded);
	guarded = controller();
	ck_assert_int_eq(hbm_genl_kernel_only(guarded), 0);
	expect_working(guarded);
}
END_TEST

Suite *genl_suite(void)
{
	Suite *s = suite_create("genl");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, genl_after_parse_error);
	tcase_add_test(tc, genl_after_truncated_read);
	tcase_add_test(tc, genl_after_failed_send);
	tcase_add_test(tc, genl_stale_answer_skipped);
	tcase_add_test(tc, genl_resent_request_numbered_anew);
	tcase_add_test(tc, genl_dump_error_from_done);
	tcase_add_test(tc, genl_kernel_only_refuses_others);
	suite_add_tcase(s, tc);
	return s;
}
