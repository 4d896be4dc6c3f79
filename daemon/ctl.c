// SPDX-License-Identifier: GPL-2.0
/*
 * Packets of the control protocol (ctl.h): built and checked here, once,
 * for hbmguardd and hbmctl both.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"

/**
 * hbm_ctl_address() - the sockaddr of a control socket path
 * @path: the socket's path
 * @sa: filled in
 *
 * Return: 0, or -ENAMETOOLONG when @path does not fit.
 */
int hbm_ctl_address(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/**
 * hbm_ctl_connect() - a client's connection to hbmguardd
 * @path: the control socket
 *
 * Return: a blocking, close-on-exec SOCK_SEQPACKET fd, or a negative errno.
 */
int hbm_ctl_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd, err = hbm_ctl_address(path, &sa);

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

size_t hbm_ctl_body_size(uint16_t type)
{
	bool reply = type & HBM_CTL_REPLY;

	switch (type & ~HBM_CTL_REPLY) {
	case HBM_CTL_STATUS:
		return reply ? sizeof(struct hbm_ctl_status) : 0;
	case HBM_CTL_RETIRE:
	case HBM_CTL_CLEAR:
		return sizeof(struct hbm_ctl_extent);
	case HBM_CTL_RANK_REGISTER:
		return sizeof(struct hbm_ctl_rank);
	case HBM_CTL_RANK_ANSWER:
		return sizeof(struct hbm_ctl_answer);
	case HBM_CTL_RANK_GET:
		return reply ? sizeof(struct hbm_ctl_rank_info) : sizeof(struct hbm_ctl_index);
	case HBM_CTL_INCIDENT_GET:
		return reply ? sizeof(struct hbm_ctl_incident) : sizeof(struct hbm_ctl_index);
	case HBM_CTL_RECOVERY:
		return sizeof(struct hbm_ctl_recovery);
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
	if (!terminated(s->state_dir, sizeof(s->state_dir)))
		return -EBADMSG;
	return 0;
}

static bool name_ok(const char *s)
{
	return terminated(s, HBM_CTL_NAME_LEN) && s[0];
}

static int check_rank(const struct hbm_ctl_rank *r)
{
	static const struct hbm_ctl_range none;
	uint32_t i;

	if (!name_ok(r->job) || !name_ok(r->device) || !r->world_size ||
	    r->rank >= r->world_size || r->local_rank >= r->world_size ||
	    r->nr_ranges > HBM_CTL_MAX_RANGES)
		return -EBADMSG;
	for (i = 0; i < HBM_CTL_MAX_RANGES; i++) {
		const struct hbm_ctl_range *x = &r->ranges[i];

		if (i >= r->nr_ranges ? memcmp(x, &none, sizeof(none)) :
		    !x->length || x->offset + x->length < x->offset)
			return -EBADMSG;
	}
	return 0;
}

static int check_body(uint16_t type, const void *body)
{
	const struct hbm_ctl_answer *a = body;
	const struct hbm_ctl_index *ix = body;
	const struct hbm_ctl_recovery *rc = body;
	const struct hbm_ctl_rank_info *ri = body;
	const struct hbm_ctl_incident *in = body;

	switch (type) {
	case HBM_CTL_STATUS | HBM_CTL_REPLY:
		return check_status(body);
	case HBM_CTL_RETIRE:
	case HBM_CTL_CLEAR:
	case HBM_CTL_RETIRE | HBM_CTL_REPLY:
	case HBM_CTL_CLEAR | HBM_CTL_REPLY:
		return check_extent(type, body);
	case HBM_CTL_RANK_REGISTER:
	case HBM_CTL_RANK_REGISTER | HBM_CTL_REPLY:
		return check_rank(body);
	case HBM_CTL_RANK_ANSWER:
	case HBM_CTL_RANK_ANSWER | HBM_CTL_REPLY:
		return a->incident && a->answer && a->answer < __HBM_ANSWER_MAX &&
		       !a->reserved ? 0 : -EBADMSG;
	case HBM_CTL_RANK_GET:
	case HBM_CTL_INCIDENT_GET:
		return ix->reserved ? -EBADMSG : 0;
	case HBM_CTL_RANK_GET | HBM_CTL_REPLY:
		return ri->reserved || ri->index >= ri->total ? -EBADMSG : check_rank(&ri->rank);
	case HBM_CTL_INCIDENT_GET | HBM_CTL_REPLY:
		return in->index < in->total && name_ok(in->job) && name_ok(in->device) &&
		       terminated(in->reason, sizeof(in->reason)) && in->state &&
		       in->state < __HBM_INCIDENT_MAX ? 0 : -EBADMSG;
	case HBM_CTL_RECOVERY:
		return rc->action && rc->action < __HBM_RECOVERY_MAX &&
		       name_ok(rc->device) ? 0 : -EBADMSG;
	}
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
	bool from_daemon;
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
	/* From the daemon: replies, and RECOVERY; from a client, neither. */
	from_daemon = (h->type & HBM_CTL_REPLY) || h->type == HBM_CTL_RECOVERY;
	if (h->reserved || h->size != len || from_daemon != reply ||
	    (!(h->type & HBM_CTL_REPLY) && h->error) || h->error > 0 ||
	    h->type == (HBM_CTL_RECOVERY | HBM_CTL_REPLY))
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
	return check_body(h->type, *body);
}
