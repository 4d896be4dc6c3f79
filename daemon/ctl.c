// SPDX-License-Identifier: GPL-2.0
/*
 * Packets of the control protocol (ctl.h): built and checked here, once,
 * for hbmguardd and hbmctl both.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
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
 * A blocking send or receive on it gives up after HBM_CTL_TIMEOUT_S
 * (EAGAIN): with hbmguardd.socket, connect() succeeds into systemd's
 * backlog whether or not a daemon will ever accept it (one starting, or one
 * whose starts failed), and a client must not wait for that without end.
 *
 * Return: a blocking, close-on-exec SOCK_SEQPACKET fd, or a negative errno.
 */
int hbm_ctl_connect(const char *path)
{
	struct timeval tv = { .tv_sec = HBM_CTL_TIMEOUT_S };
	struct sockaddr_un sa;
	int fd, err = hbm_ctl_address(path, &sa);

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/**
 * hbm_ctl_listen() - hbmguardd's listening socket, mode HBM_CTL_SOCKET_MODE
 * @path: where, not there yet
 *
 * SO_PASSCRED is set on the listener, not on each accepted connection: an
 * accepted socket inherits it (unix_sock_inherit_flags() in unix_accept(),
 * net/unix/af_unix.c of 6.1 and 6.12), so no packet arrives without its
 * sender's credentials.  Set after accept(), a packet sent in between came
 * without them (maybe_add_creds() adds them only while the receiver has the
 * flag or is not accepted yet) and read as pid 0: a rank's registration then
 * failed as sent by another process.
 *
 * Return: a non-blocking, close-on-exec SOCK_SEQPACKET fd, or a negative errno.
 */
int hbm_ctl_listen(const char *path)
{
	struct sockaddr_un sa;
	int fd, one = 1, err = hbm_ctl_address(path, &sa);
	mode_t mask;

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/*
	 * Mode 0666: anyone may ask; what they may do is checked per request.
	 * Made so by bind() under a umask, not by a chmod() of the path after
	 * it, which follows a link put there meanwhile: in a directory another
	 * user may write, the daemon made any file of root's 0666 (helper-194).
	 * The backlog is systemd's Backlog= default (systemd.socket(5)): one
	 * peer connecting in a loop fills a short one, and others' connect()s
	 * wait or fail behind it.
	 */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)))
		goto fail;
	mask = umask(0777 & ~HBM_CTL_SOCKET_MODE);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(mask);
	if (err || listen(fd, SOMAXCONN))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

/*
 * Whether a user other than root may change what @dir holds.  Group write
 * counts whatever the group: with an ACL, that bit is the mask of what it
 * grants others (helper-194).  Sticky (/tmp), others may not move or
 * remove root's entries, only add theirs: open only as the socket's own.
 */
static bool open_to_others(const struct stat *st, bool sockets_own)
{
	return st->st_uid != 0 || ((st->st_mode & (S_IWGRP | S_IWOTH)) &&
				   (sockets_own || !(st->st_mode & S_ISVTX)));
}

/* @dir into @found, and 1: the first directory found open to others. */
static int found_open(const char *dir, char *found, size_t len)
{
	snprintf(found, len, "%s", dir);
	return 1;
}

/**
 * hbm_ctl_path_open() - a directory on the way to a control socket that a
 * user other than root may change
 * @path: the socket's path, absolute
 * @found: that directory, the first found
 * @len: its size
 *
 * Whoever may change what @path names can answer hbmctl and the ranks in
 * hbmguardd's place: a socket of their own bound there before the daemon
 * binds it (the sticky bit of /tmp does not stop that, only the removal of
 * the daemon's), or put there after by renaming a directory they may write
 * or changing a link in one.  They would then be asked by hbmctl and tell
 * ranks to pause and restore.  So every directory the path's resolution
 * passes through, the socket's own, those above it and those holding a
 * link it follows, one component at a time, must be root's and writable by
 * root alone (sshd's StrictModes asks as much of a user's keys).
 *
 * Return: 0: none; 1: @found names one; or the negative errno of a
 * directory that could not be looked at (@path's own not there yet).
 */
int hbm_ctl_path_open(const char *path, char *found, size_t len)
{
	char at[PATH_MAX] = "/", rest[PATH_MAX], next[PATH_MAX], link[PATH_MAX];
	unsigned int links = 0;
	struct stat st;
	char *p = rest;
	ssize_t n;

	if (path[0] != '/' || !strrchr(path, '/')[1])
		return -EINVAL;
	/* the socket's directory: the path up to its last component */
	n = strrchr(path, '/') - path;
	if ((size_t)n >= sizeof(rest))
		return -ENAMETOOLONG;
	memcpy(rest, path, n);
	rest[n] = 0;
	if (stat("/", &st))
		return -errno;
	if (open_to_others(&st, !rest[0]))
		return found_open("/", found, len);
	while (*p) {
		char *name = p, *slash = strchr(p, '/');

		if (slash) {
			*slash = 0;
			p = slash + 1;
		} else {
			p += strlen(p);
		}
		if (!*name || !strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {	/* its parent was entered on the way */
			*strrchr(at, '/') = 0;
			if (!at[0])
				strcpy(at, "/");
			continue;
		}
		if (snprintf(next, sizeof(next), "%s/%s", strcmp(at, "/") ? at : "",
			     name) >= (int)sizeof(next))
			return -ENAMETOOLONG;
		if (lstat(next, &st))
			return -errno;
		if (S_ISLNK(st.st_mode)) {
			/* its target resolved in turn, from @at or /, then the rest */
			n = readlink(next, link, sizeof(link) - 1);
			if (n < 0)
				return -errno;
			link[n] = 0;
			if (++links > 40)	/* the kernel's MAXSYMLINKS */
				return -ELOOP;
			if (snprintf(next, sizeof(next), "%s/%s", link, p) >= (int)sizeof(next))
				return -ENAMETOOLONG;
			strcpy(rest, next);
			p = rest;
			if (link[0] == '/')
				strcpy(at, "/");
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (open_to_others(&st, !*p))
			return found_open(next, found, len);
		strcpy(at, next);
	}
	return 0;
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
	case HBM_CTL_RANK_REGISTER_KEYED:
		return reply ? sizeof(struct hbm_ctl_rank) : sizeof(struct hbm_ctl_rank_keyed);
	case HBM_CTL_RANK_ANSWER:
		return sizeof(struct hbm_ctl_answer);
	case HBM_CTL_RANK_GET:
		return reply ? sizeof(struct hbm_ctl_rank_info) : sizeof(struct hbm_ctl_index);
	case HBM_CTL_INCIDENT_GET:
		return reply ? sizeof(struct hbm_ctl_incident) : sizeof(struct hbm_ctl_index);
	case HBM_CTL_RECOVERY:
		return sizeof(struct hbm_ctl_recovery);
	case HBM_CTL_GPU_GET:
		return reply ? sizeof(struct hbm_ctl_gpu) : sizeof(struct hbm_ctl_index);
	case HBM_CTL_DRAIN_GET:
		return reply ? sizeof(struct hbm_ctl_drain) : sizeof(struct hbm_ctl_index);
	case HBM_CTL_UNDRAIN:
		return reply ? sizeof(struct hbm_ctl_drain) : 0;
	case HBM_CTL_DEADLINES:
		return reply ? sizeof(struct hbm_ctl_deadlines) : 0;
	case HBM_CTL_RECOVERY_TIMES:
		return reply ? sizeof(struct hbm_ctl_recovery_times) : 0;
	case HBM_CTL_CLUSTER:
		return reply ? sizeof(struct hbm_ctl_cluster) : 0;
	case HBM_CTL_CLUSTER_NODE_GET:
		return reply ? sizeof(struct hbm_ctl_cluster_node) : sizeof(struct hbm_ctl_index);
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

/**
 * hbm_ctl_name_valid() - whether a name field follows the rule of ctl.h
 * @s: the field
 * @size: its size
 *
 * Return: true for a non-empty string of printable ASCII without spaces,
 * NUL-terminated within @size.
 */
bool hbm_ctl_name_valid(const char *s, size_t size)
{
	size_t i;

	for (i = 0; i < size && s[i]; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	return i > 0 && i < size;
}

/**
 * hbm_ctl_key_valid() - whether a job key follows the rule of ctl.h
 * @key: the field
 *
 * Return: true for HBM_CTL_KEY_MIN to HBM_CTL_KEY_LEN - 1 printable ASCII
 * characters without spaces, the rest of the field NUL: one key, one
 * spelling.
 */
bool hbm_ctl_key_valid(const char key[HBM_CTL_KEY_LEN])
{
	size_t i, len;

	if (!hbm_ctl_name_valid(key, HBM_CTL_KEY_LEN))
		return false;
	len = strlen(key);
	for (i = len; i < HBM_CTL_KEY_LEN; i++)
		if (key[i])
			return false;
	return len >= HBM_CTL_KEY_MIN;
}

/**
 * hbm_ctl_escape() - a string made safe to print
 * @out: where
 * @cap: its size, at least 1
 * @s: the string, as received
 * @json: for the inside of a JSON string (\uXXXX), else for a terminal (\xXX)
 *
 * Every byte outside printable ASCII is escaped, and so are the escape
 * character and, for JSON, the quote: the result is one line of ASCII that
 * says exactly which bytes @s held, cut short (never mid-escape) when @cap
 * is too small.
 *
 * Return: @out.
 */
const char *hbm_ctl_escape(char *out, size_t cap, const char *s, bool json)
{
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = *s;
		char one[8];
		size_t len;

		if (c == '\\' || (json && c == '"'))
			len = snprintf(one, sizeof(one), "\\%c", c);
		else if (c < ' ' || c > '~')
			len = snprintf(one, sizeof(one), json ? "\\u%04x" : "\\x%02x", c);
		else
			len = snprintf(one, sizeof(one), "%c", c);
		if (n + len >= cap)
			break;
		memcpy(out + n, one, len);
		n += len;
	}
	out[n] = 0;
	return out;
}

static int check_extent(uint16_t type, const struct hbm_ctl_extent *x)
{
	uint32_t flags = (type & ~HBM_CTL_REPLY) == HBM_CTL_RETIRE ? HBM_CTL_PENDING : 0;

	if (!hbm_ctl_name_valid(x->identity, sizeof(x->identity)) || x->reserved ||
	    (x->flags & ~flags) || !x->length || x->offset + x->length < x->offset)
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
	return hbm_ctl_name_valid(s, HBM_CTL_NAME_LEN);
}

static int check_cluster_node(const struct hbm_ctl_cluster_node *n)
{
	if (n->index >= n->total || !name_ok(n->job) || !name_ok(n->id) || !name_ok(n->opener) ||
	    !name_ok(n->node) || n->step >= HBM_CTL_CLUSTER_STEPS ||
	    n->acked >> HBM_CTL_CLUSTER_STEPS || n->reserved)
		return -EBADMSG;
	return 0;
}

static int check_cluster(const struct hbm_ctl_cluster *cl)
{
	bool off = cl->state == HBM_CLUSTER_OFF;

	if (cl->state >= __HBM_CLUSTER_MAX || (off && (cl->node[0] || cl->jobs || cl->since)) ||
	    (!off && !name_ok(cl->node)) || !terminated(cl->endpoint, sizeof(cl->endpoint)) ||
	    !terminated(cl->why, sizeof(cl->why)))
		return -EBADMSG;
	return 0;
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

/* The driver's strings may be anything but unterminated: hbmctl escapes them. */
static int check_gpu(const struct hbm_ctl_gpu *g)
{
	if (g->index >= g->total || !g->identity[0] ||
	    !terminated(g->identity, sizeof(g->identity)) || !terminated(g->pci, sizeof(g->pci)) ||
	    !terminated(g->model, sizeof(g->model)) || !terminated(g->name, sizeof(g->name)) ||
	    (g->vendor && g->vendor != HBM_CTL_GPU_NVML && g->vendor != HBM_CTL_GPU_AMDGPU))
		return -EBADMSG;
	return 0;
}

static int check_drain(const struct hbm_ctl_drain *dr)
{
	bool none = !dr->total;

	return !dr->reserved && dr->index < (none ? 1 : dr->total) &&
	       (none ? !dr->cause : dr->cause && dr->cause < __HBM_DRAIN_CAUSE_MAX) &&
	       dr->want < __HBM_DRAIN_WANT_MAX && dr->slurm < __HBM_DRAIN_PROGRESS_MAX &&
	       dr->hook < __HBM_DRAIN_PROGRESS_MAX &&
	       terminated(dr->node, sizeof(dr->node)) &&
	       terminated(dr->identity, sizeof(dr->identity)) &&
	       terminated(dr->pci, sizeof(dr->pci)) &&
	       terminated(dr->detail, sizeof(dr->detail)) &&
	       terminated(dr->reason, sizeof(dr->reason)) &&
	       terminated(dr->error, sizeof(dr->error)) ? 0 : -EBADMSG;
}

static int check_body(uint16_t type, const void *body)
{
	const struct hbm_ctl_answer *a = body;
	const struct hbm_ctl_index *ix = body;
	const struct hbm_ctl_recovery *rc = body;
	const struct hbm_ctl_rank_info *ri = body;
	const struct hbm_ctl_incident *in = body;
	const struct hbm_ctl_deadlines *dl = body;
	const struct hbm_ctl_recovery_times *rt = body;

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
	case HBM_CTL_RANK_REGISTER_KEYED | HBM_CTL_REPLY:
		return check_rank(body);
	case HBM_CTL_RANK_REGISTER_KEYED:
		return hbm_ctl_key_valid(((const struct hbm_ctl_rank_keyed *)body)->key) ?
		       check_rank(body) : -EBADMSG;
	case HBM_CTL_RANK_ANSWER:
	case HBM_CTL_RANK_ANSWER | HBM_CTL_REPLY:
		return a->incident && a->answer && a->answer < __HBM_ANSWER_MAX &&
		       !a->reserved ? 0 : -EBADMSG;
	case HBM_CTL_RANK_GET:
	case HBM_CTL_INCIDENT_GET:
	case HBM_CTL_GPU_GET:
	case HBM_CTL_DRAIN_GET:
	case HBM_CTL_CLUSTER_NODE_GET:
		return ix->reserved ? -EBADMSG : 0;
	case HBM_CTL_CLUSTER_NODE_GET | HBM_CTL_REPLY:
		return check_cluster_node(body);
	case HBM_CTL_DRAIN_GET | HBM_CTL_REPLY:
	case HBM_CTL_UNDRAIN | HBM_CTL_REPLY:
		return check_drain(body);
	case HBM_CTL_GPU_GET | HBM_CTL_REPLY:
		return check_gpu(body);
	case HBM_CTL_RANK_GET | HBM_CTL_REPLY:
		return ri->reserved || ri->index >= ri->total ? -EBADMSG : check_rank(&ri->rank);
	case HBM_CTL_INCIDENT_GET | HBM_CTL_REPLY:
		return in->index < in->total && name_ok(in->job) && name_ok(in->device) &&
		       terminated(in->reason, sizeof(in->reason)) && in->state &&
		       in->state < __HBM_INCIDENT_MAX ? 0 : -EBADMSG;
	case HBM_CTL_RECOVERY:
		return rc->action && rc->action < __HBM_RECOVERY_MAX &&
		       name_ok(rc->device) ? 0 : -EBADMSG;
	case HBM_CTL_DEADLINES | HBM_CTL_REPLY:
		return dl->pause_timeout && dl->restore_timeout && dl->kill_timeout &&
		       !dl->reserved ? 0 : -EBADMSG;
	case HBM_CTL_RECOVERY_TIMES | HBM_CTL_REPLY:
		/* between one node's steps and an incident across nodes (recovery_longest()) */
		return rt->pause_timeout && rt->restore_timeout && rt->kill_timeout &&
		       rt->longest >= (uint64_t)rt->pause_timeout + rt->restore_timeout &&
		       rt->longest <= 4ULL * rt->pause_timeout + rt->restore_timeout +
				      rt->kill_timeout + 10 ? 0 : -EBADMSG;
	case HBM_CTL_CLUSTER | HBM_CTL_REPLY:
		return check_cluster(body);
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

/**
 * hbm_ctl_send() - send a packet, as an administrator when one can
 * @fd: the connection
 * @pkt: the packet
 * @len: its length
 * @as_admin: prove CAP_SYS_ADMIN (ctl.h) if the caller has it
 *
 * The proof is SCM_CREDENTIALS naming pid 1, which the kernel refuses
 * (EPERM) to a sender without the capability: the packet is then sent
 * without it, and the daemon treats the sender as anyone.
 *
 * Return: 0, or a negative errno.
 */
int hbm_ctl_send(int fd, const void *pkt, size_t len, bool as_admin)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)pkt, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct ucred *cred;
	ssize_t n = -1;

	if (as_admin) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_CREDENTIALS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(*cred));
		cred = (struct ucred *)CMSG_DATA(&ctl.h);
		*cred = (struct ucred){ .pid = 1, .uid = getuid(), .gid = getgid() };
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n < 0 && errno != EPERM)
			return -errno;
		msg.msg_control = NULL;
		msg.msg_controllen = 0;
	}
	if (n < 0)
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

/**
 * hbm_ctl_recv() - receive a packet and who sent it
 * @fd: a non-blocking connection with SO_PASSCRED set
 * @buf: where
 * @cap: its size
 * @sender: the sender's credentials as the kernel gives them (pid 0 when
 *	it gave none)
 *
 * A packet with descriptors passed along is not taken: it is looked at
 * first (MSG_PEEK, which leaves it queued and its files held by it), and
 * with room for the credentials only (SO_PASSCRED puts them first in every
 * packet: without it a descriptor would fit there) the kernel says it had more
 * (MSG_CTRUNC; scm_detach_fds() in net/core/scm.c of 6.1 and 6.12 installs
 * none when no room is left after SCM_CREDENTIALS, which scm_recv() puts
 * first).  Taken, its files would be released here if dropped (a lingering
 * TCP socket's release waits out its linger time) and ->flush()ed if
 * close()d (a FUSE server can hold that forever, and the daemon's POSIX
 * locks on the file would go): the connection is to be let go with the
 * packet still queued, where such a release harms nothing (fdsink.c).
 *
 * Return: the packet's whole length (more than @cap when it was cut short),
 * 0 at the end of the connection, -ETOOMANYREFS for a packet with
 * descriptors (left queued), or another negative errno.
 */
ssize_t hbm_ctl_recv(int fd, void *buf, size_t cap, struct ucred *sender)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_TRUNC | MSG_PEEK);

	memset(sender, 0, sizeof(*sender));
	if (n < 0)
		return -errno;
	if (msg.msg_flags & MSG_CTRUNC)
		return -ETOOMANYREFS;
	msg.msg_controllen = sizeof(ctl.buf);
	n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	if (msg.msg_flags & MSG_CTRUNC)	/* files the peek did not show (no memory) */
		return -ETOOMANYREFS;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(*sender)))
			memcpy(sender, CMSG_DATA(c), sizeof(*sender));
	return n;
}

/**
 * hbm_ctl_sender_is_admin() - whether a packet came with the proof of ctl.h
 * @sender: its credentials from hbm_ctl_recv()
 *
 * Return: true when the kernel vouched for pid 1 of the receiver's pid
 * namespace: only a process of that namespace with CAP_SYS_ADMIN over it
 * (or its init itself) can send that.
 */
bool hbm_ctl_sender_is_admin(const struct ucred *sender)
{
	return sender->pid == 1;
}
