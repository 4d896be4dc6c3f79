/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol of hbmguardd, spoken by hbmctl.
 *
 * A SOCK_SEQPACKET Unix socket, ControlSocket= in the configuration
 * (default /run/hbmguard/control.sock), mode 0666: anyone on the node may
 * ask how things stand; the daemon takes the asker's identity from
 * SO_PEERCRED, never from the packet, and only root may change anything.
 *
 * One request per packet; one reply per request, in order.  Every packet is
 * a struct hbm_ctl_header followed by the body of its type, in the host's
 * byte order (the socket never leaves the node):
 *
 *	type		request body		reply body
 *	STATUS		none			struct hbm_ctl_status
 *	RETIRE		struct hbm_ctl_extent	struct hbm_ctl_extent
 *	CLEAR		struct hbm_ctl_extent	struct hbm_ctl_extent
 *
 * A reply has HBM_CTL_REPLY added to the request's type and the request's
 * seq.  error is 0, or a negative errno saying why nothing was done; an
 * error reply carries no body.  A RETIRE or CLEAR is answered only once the
 * kernel has it and the state file holding it is on disk (fsync'd): its
 * reply is the acknowledgement that a power cut will not lose it.
 *
 * header.size is the whole packet's length and must be exactly the header
 * plus its type's body.  Reserved fields are zero and strings NUL-terminated
 * within their field.  A packet that breaks a rule is answered -EBADMSG
 * (-EPROTONOSUPPORT for another version, -EOPNOTSUPP for an unknown type)
 * and nothing is done; the daemon then closes the connection, since it can
 * no longer trust the peer to be in step.
 */
#ifndef HBM_CTL_H
#define HBM_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HBM_CTL_SOCKET		"/run/hbmguard/control.sock"
#define HBM_CTL_MAGIC		0x434d4248	/* "HBMC" */
#define HBM_CTL_VERSION		1
#define HBM_CTL_REPLY		0x8000
#define HBM_CTL_MAX_PACKET	1024

enum hbm_ctl_type {
	HBM_CTL_STATUS = 1,
	HBM_CTL_RETIRE,
	HBM_CTL_CLEAR,
	__HBM_CTL_TYPE_MAX
};

struct hbm_ctl_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t size;
	uint32_t seq;
	int32_t error;
	uint32_t reserved;
};

#define HBM_CTL_PENDING		(1U << 0)	/* RETIRE: pending, not retired */

struct hbm_ctl_extent {
	char identity[64];	/* the device's stable identity */
	uint64_t offset;
	uint64_t length;
	uint32_t flags;		/* HBM_CTL_PENDING */
	uint32_t reserved;
};

struct hbm_ctl_status {
	uint64_t started;		/* seconds since the epoch */
	uint64_t events;		/* taken from the kernel */
	uint64_t resyncs;		/* full dumps after a gap or overflow */
	uint64_t stored_extents;	/* in the state files, all devices */
	uint64_t stored_pages;
	uint64_t last_save;		/* seconds since the epoch, 0: never */
	int32_t last_save_error;	/* 0 or a negative errno */
	uint32_t devices;
	uint32_t pid;
	uint32_t reserved;
	char state_dir[256];
};

size_t hbm_ctl_body_size(uint16_t type);
size_t hbm_ctl_encode(void *buf, size_t cap, uint16_t type, uint32_t seq,
		      int32_t error, const void *body);
int hbm_ctl_decode(const void *buf, size_t len, bool reply,
		   struct hbm_ctl_header *h, const void **body);

#endif /* HBM_CTL_H */
