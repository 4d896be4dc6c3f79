// SPDX-License-Identifier: GPL-2.0
/*
 * Packets of the control protocol (ctl.h): built and checked here, once,
 * for hbmguardd and hbmctl both.
 */
#include <errno.h>
#include <string.h>

#include "ctl.h"

size_t hbm_ctl_body_size(uint16_t type)
{
	switch (type & ~HBM_CTL_REPLY) {
	case HBM_CTL_STATUS:
		return type & HBM_CTL_REPLY ? sizeof(struct hbm_ctl_status) : 0;
	case HBM_CTL_RETIRE:
	case HBM_CTL_CLEAR:
		return sizeof(struct hbm_ctl_extent);
	}
	return 0;
}

/**
 * hbm_ctl_encode() - build a packet
 * @buf: where, at least HBM_CTL_MAX_PACKET bytes
 * @cap: its size
 * @type: the packet's type, with HBM_CTL_REPLY for a reply
 * @seq: the request's sequence number
 * @error: 0, or the negative errno of a refused request (then @body is unused)
 * @body: the body of @type, or NULL for none
 *
 * Return: the packet's length, or 0 if it does not fit in @cap.
 */
size_t hbm_ctl_encode(void *buf, size_t cap, uint16_t type, uint32_t seq,
		      int32_t error, const void *body)
{
	size_t body_size = error ? 0 : hbm_ctl_body_size(type);
	struct hbm_ctl_header h = {
		.magic = HBM_CTL_MAGIC, .version = HBM_CTL_VERSION, .type = type,
		.size = sizeof(h) + body_size, .seq = seq, .error = error,
	};

	if (h.size > cap)
		return 0;
	memcpy(buf, &h, sizeof(h));
	if (body_size)
		memcpy((char *)buf + sizeof(h), body, body_size);
	return h.size;
}

static bool terminated(const char *s, size_t len)
{
	return memchr(s, 0, len) != NULL;
}

static int check_extent(uint16_t type, const struct hbm_ctl_extent *x)
{
	uint32_t flags = (type & ~HBM_CTL_REPLY) == HBM_CTL_RETIRE ? HBM_CTL_PENDING : 0;

	if (!terminated(x->identity, sizeof(x->identity)) || !x->identity[0] ||
	    x->reserved || (x->flags & ~flags) || !x->length ||
	    x->offset + x->length < x->offset)
		return -EBADMSG;
	return 0;
}

static int check_status(const struct hbm_ctl_status *s)
{
	if (s->reserved || !terminated(s->state_dir, sizeof(s->state_dir)))
		return -EBADMSG;
	return 0;
}

/**
 * hbm_ctl_decode() - check a received packet against every rule of ctl.h
 * @buf: the packet
 * @len: its length as received
 * @reply: whether a reply is expected (hbmctl) or a request (hbmguardd)
 * @h: the packet's header, copied out
 * @body: where its body starts (aligned as @buf is); NULL when it has none
 *
 * Return: 0; -EBADMSG for a malformed packet, -EPROTONOSUPPORT for another
 * protocol version, -EOPNOTSUPP for a type this version does not know.  @h
 * is filled in whenever a header could be read, so a refusal can name the
 * request's seq.
 */
int hbm_ctl_decode(const void *buf, size_t len, bool reply,
		   struct hbm_ctl_header *h, const void **body)
{
	uint16_t base;
	size_t want;

	*body = NULL;
	memset(h, 0, sizeof(*h));
	if (len < sizeof(*h))
		return -EBADMSG;
	memcpy(h, buf, sizeof(*h));
	if (h->magic != HBM_CTL_MAGIC)
		return -EBADMSG;
	if (h->version != HBM_CTL_VERSION)
		return -EPROTONOSUPPORT;
	if (h->reserved || h->size != len || !(h->type & HBM_CTL_REPLY) != !reply ||
	    (!reply && h->error) || h->error > 0)
		return -EBADMSG;
	base = h->type & ~HBM_CTL_REPLY;
	if (base < HBM_CTL_STATUS || base >= __HBM_CTL_TYPE_MAX)
		return -EOPNOTSUPP;
	want = h->error ? 0 : hbm_ctl_body_size(h->type);
	if (len != sizeof(*h) + want)
		return -EBADMSG;
	if (!want)
		return 0;
	*body = (const char *)buf + sizeof(*h);
	switch (base) {
	case HBM_CTL_STATUS:
		return check_status(*body);
	default:
		return check_extent(h->type, *body);
	}
}
