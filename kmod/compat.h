/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel API differences between the kernels hbmguard supports (Debian's
 * 6.1 and 6.12), in one place.  Code elsewhere uses the names below and
 * carries no version checks of its own.
 */
#ifndef HBM_COMPAT_H
#define HBM_COMPAT_H

#include <linux/version.h>
#include <net/genetlink.h>

/* 6.2 moved a dump's parsed attributes into a struct genl_info. */
static inline struct nlattr **hbm_dump_attrs(struct netlink_callback *cb)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
	return genl_dumpit_info(cb)->attrs;
#else
	return genl_dumpit_info(cb)->info.attrs;
#endif
}

#endif /* HBM_COMPAT_H */
