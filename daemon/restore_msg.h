/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A packed RESTORE as hbmguardd lays it out (kernel.c, packed_fill()), and
 * as make bench's hbmstatebench sends it for the requests' way into the
 * kernel alone: one layout, so the two cannot drift apart.
 */
#ifndef HBM_RESTORE_MSG_H
#define HBM_RESTORE_MSG_H

#include <linux/genetlink.h>
#include <linux/hbmguard.h>
#include <linux/netlink.h>

/*
 * Packed records per HBMGUARD_A_RECORDS attribute: an attribute's length is
 * 16 bits, so less than 64 KiB each; a request carries as many attributes
 * as its size allows, up to the module's 16384 extents (HBM_RESTORE_MAX,
 * kmod/netlink.c).
 */
#define RECORDS_PER_ATTR	1024
#define RESTORE_MAX_EXTENTS	16384
/* its headers, the device's attributes and each attribute's header, at most */
#define PACKED_HEAD_BYTES	1024
_Static_assert(NLA_HDRLEN + RECORDS_PER_ATTR * sizeof(struct hbmguard_restore_record) <= 0xffff,
	       "a packed RESTORE's attribute fits its 16-bit length");
_Static_assert(PACKED_HEAD_BYTES >= NLMSG_HDRLEN + GENL_HDRLEN + 2 * (NLA_HDRLEN + 4) +
	       (RESTORE_MAX_EXTENTS / RECORDS_PER_ATTR + 1) * NLA_HDRLEN,
	       "a packed RESTORE's headers fit in PACKED_HEAD_BYTES");

#endif /* HBM_RESTORE_MSG_H */
