/* SPDX-License-Identifier: GPL-2.0 */
/* Requests to the hbmguard generic netlink family, over libnl. */
#ifndef HBM_GENL_H
#define HBM_GENL_H

#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

struct nl_msg *hbm_genl_request(int family, int cmd, int flags);
struct nl_msg *hbm_genl_request_sized(int family, int cmd, int flags, size_t size);
int hbm_genl_transact(struct nl_sock *sk, struct nl_msg *msg,
		      nl_recvmsg_msg_cb_t parse, void *arg);
int hbm_genl_transact_changing(struct nl_sock *sk, struct nl_msg *msg,
			       nl_recvmsg_msg_cb_t parse, void *arg);
int hbm_genl_exchange(struct nl_sock *sk, struct nl_msg *msg,
		      nl_recvmsg_msg_cb_t parse, void *arg);
void hbm_genl_match_replies(struct nl_sock *sk, unsigned int *sent);
int hbm_genl_kernel_only(struct nl_sock *sk);
void hbm_genl_rewind(struct nl_msg *msg, uint32_t len);
const char *hbm_genl_strerror(int err);

#endif /* HBM_GENL_H */
