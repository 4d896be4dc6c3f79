/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The in-guest tests' other identities: root with fewer capabilities (a
 * container with CAP_NET_ADMIN only) and root of a user namespace, without
 * libcap (the guest has none).
 */
#ifndef HBM_TEST_CAPS_H
#define HBM_TEST_CAPS_H

#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

/* Keep only the capabilities of @keep (1 << CAP_*), as uid 0 stays. */
static inline int caps_keep_only(uint64_t keep)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = {
		{ .effective = (uint32_t)keep, .permitted = (uint32_t)keep },
		{ .effective = keep >> 32, .permitted = keep >> 32 },
	};

	return syscall(SYS_capset, &h, d);
}

/* Root of a new user namespace: every capability, none in the initial one. */
static inline int become_userns_root(void)
{
	return unshare(CLONE_NEWUSER);
}

#endif /* HBM_TEST_CAPS_H */
