/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel API differences between the kernels hbmguard supports (Debian's
 * 6.1 and 6.12), in one place.  Code elsewhere uses the names below and
 * carries no version checks of its own.
 */
#ifndef HBM_COMPAT_H
#define HBM_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>
#include <net/genetlink.h>

/* 6.3 made vm_flags writable only through helpers. */
static inline void hbm_vm_flags_set(struct vm_area_struct *vma,
				    unsigned long flags)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
	vma->vm_flags |= flags;
#else
	vm_flags_set(vma, flags);
#endif
}

static inline void hbm_vm_flags_clear(struct vm_area_struct *vma,
				      unsigned long flags)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
	vma->vm_flags &= ~flags;
#else
	vm_flags_clear(vma, flags);
#endif
}

/* 6.2 moved a dump's parsed attributes into a struct genl_info. */
static inline struct nlattr **hbm_dump_attrs(struct netlink_callback *cb)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
	return genl_dumpit_info(cb)->attrs;
#else
	return genl_dumpit_info(cb)->info.attrs;
#endif
}

/* 6.2 gave pre_doit the split form of an operation (include/net/genetlink.h). */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 2, 0)
#define hbm_genl_pre_ops genl_ops
#else
#define hbm_genl_pre_ops genl_split_ops
#endif

/*
 * Joining a multicast group is checked by the group's GENL_MCAST_CAP_* flags
 * (genl_bind(), net/netlink/genetlink.c of 6.1.192 and 6.12.117), added in
 * 6.7 and backported to the 6.1 and 6.6 stable series.  Older kernels have
 * no hook for it at all: anyone could join the events group, which carries
 * physical addresses, so the module does not build there.
 */
#ifndef GENL_MCAST_CAP_SYS_ADMIN
#error "hbmguard needs GENL_MCAST_CAP_SYS_ADMIN (Linux 6.7, or a 6.1/6.6 stable release with it)"
#endif

/*
 * But a socket may join a group no family owns unchecked (genl_bind() finds
 * no family to ask), and stays a member when a family registers it: one
 * that joined the events group's number before the module took it (at
 * boot, across a reload) would hear every event.  6.12 has a multicast that
 * skips receivers (genlmsg_multicast_netns_filtered(),
 * include/net/genetlink.h; the filter's call in do_one_broadcast(),
 * net/netlink/af_netlink.c): there an event goes only to a socket whose
 * file was opened with CAP_SYS_ADMIN in the initial user namespace
 * (@not_admin says which was not), the check do_one_broadcast() makes of a
 * receiver's file for NETLINK_LISTEN_ALL_NSID.  6.1 has none (neither in
 * its include/net/genetlink.h nor in include/linux/netlink.h): there every
 * member hears the events (README, Privileges).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#define HBM_EVENTS_FILTERED 1
#else
#define HBM_EVENTS_FILTERED 0
#endif

static inline void hbm_genl_multicast_checked(const struct genl_family *family,
					      struct sk_buff *skb, unsigned int group,
					      int (*not_admin)(struct sock *dsk,
							       struct sk_buff *skb,
							       void *data))
{
#if HBM_EVENTS_FILTERED
	genlmsg_multicast_netns_filtered(family, &init_net, skb, 0, group,
					 GFP_KERNEL, not_admin, NULL);
#else
	genlmsg_multicast(family, skb, 0, group, GFP_KERNEL);
#endif
}

/*
 * 6.10 dropped __assign_str()'s source argument (TP_fast_assign() of a trace
 * event); NVIDIA's conftest.sh calls this NV_ASSIGN_STR_ARGUMENT_COUNT.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 10, 0)
#define HBM_ASSIGN_STR_ARGUMENT_COUNT 2
#else
#define HBM_ASSIGN_STR_ARGUMENT_COUNT 1
#endif

/*
 * The MCE decode chain passes a struct mce * up to 6.12; later kernels pass
 * a struct mce_hw_err * that holds one.  Either way, what decoding needs.
 */
#ifdef HBM_MCE_DECODE_H
#include <asm/mce.h>
#include <asm/processor.h>

static inline struct hbm_mce_record hbm_mce_record_of(void *data)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
	const struct mce *m = data;
#else
	const struct mce *m = &((struct mce_hw_err *)data)->m;
#endif

	return (struct hbm_mce_record){
		.status = m->status, .addr = m->addr, .misc = m->misc,
		.ipid = m->ipid, .bank = m->bank,
		.phys_bits = boot_cpu_data.x86_phys_bits,
		.amd = m->cpuvendor == X86_VENDOR_AMD ||
		       m->cpuvendor == X86_VENDOR_HYGON,
		.smca = boot_cpu_has(X86_FEATURE_SMCA),
		.edac_handled = m->kflags & MCE_HANDLED_EDAC,
	};
}
#endif

#endif /* HBM_COMPAT_H */
