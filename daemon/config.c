// SPDX-License-Identifier: GPL-2.0
/*
 * The configuration parser (config.h).  It parses into a copy and only a
 * whole, valid file replaces the caller's configuration, so a bad reload
 * keeps the old one.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "config.h"
#include "ctl.h"
#include "timespan.h"

#define CE_THRESHOLD_MAX	65535
#define CE_WINDOW_MAX		(365 * 86400)

void hbm_config_defaults(struct hbm_config *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->state_dir, "/var/lib/hbmguard");
	strcpy(c->control_socket, HBM_CTL_SOCKET);
	c->recovery.pause_timeout = 30;
	c->recovery.restore_timeout = 120;
	c->recovery.kill_timeout = 10;
	c->sched.timeout = 30;
	c->sched.recheck = 120;
	c->cluster.lease_ttl = 10;
}

struct parser {
	const char *file;
	unsigned int line;
	char *err;
	size_t errlen;
	unsigned int nr_files;			/* read so far */
	/* Where each range was last declared, for range_check(). */
	const char *range_file[HBM_CONFIG_MAX_RANGES];
	unsigned int range_file_nr[HBM_CONFIG_MAX_RANGES];
	/* Where [Cluster]'s Endpoints= was last set, for cluster_check(). */
	const char *cluster_file;
	unsigned int cluster_line;
};

static int fail(struct parser *p, const char *key, const char *fmt, ...)
{
	size_t n = snprintf(p->err, p->errlen, "%s:%u: ", p->file, p->line);
	va_list ap;

	if (key && n < p->errlen)
		n += snprintf(p->err + n, p->errlen - n, "%s: ", key);
	va_start(ap, fmt);
	if (n < p->errlen)
		vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = 0;
	return s;
}

/* A whole number in [min, max]. */
static int number(struct parser *p, const char *key, const char *v,
		  uint64_t min, uint64_t max, uint32_t *out)
{
	unsigned long long n;
	char *end;

	if (!isdigit((unsigned char)*v))
		return fail(p, key, "'%s' is not a number", v);
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end)
		return fail(p, key, "'%s' is not a number", v);
	if (n < min || n > max)
		return fail(p, key, "%s is out of range (%llu..%llu)", v,
			    (unsigned long long)min, (unsigned long long)max);
	*out = n;
	return 0;
}

/*
 * A time span in whole seconds, in [min, max]: systemd's syntax
 * (hbm_time_span()), whose "90" is 90 seconds and "30m" 30 minutes as before.
 */
static int seconds(struct parser *p, const char *key, const char *v,
		   uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t usec;
	int err = hbm_time_span(v, &usec);

	if (err == -EINVAL)
		return fail(p, key, "'%s' is not a time span (e.g. 90, 30s, 2min, 1h 30min)", v);
	if (!err && usec % USEC_PER_SEC)
		return fail(p, key, "'%s' is not a whole number of seconds", v);
	if (err || usec / USEC_PER_SEC < min || usec / USEC_PER_SEC > max)
		return fail(p, key, "%s is out of range (%u..%u seconds)", v, min, max);
	*out = usec / USEC_PER_SEC;
	return 0;
}

/* Bytes: a whole number (0x for hex), optionally with K, M, G or T. */
static int bytes(struct parser *p, const char *key, const char *v, uint64_t *out)
{
	if (!isdigit((unsigned char)*v))
		return fail(p, key, "'%s' is not a number of bytes", v);
	if (hbm_bytes(v, out))
		return fail(p, key, "'%s' is not a number of bytes (e.g. 4096, 0x1000, 96G)", v);
	return 0;
}

static int yes_no(struct parser *p, const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0")) {
		*out = false;
		return 0;
	}
	return fail(p, key, "'%s' is not yes or no", v);
}

static int path(struct parser *p, const char *key, const char *v, char *out)
{
	if (*v != '/')
		return fail(p, key, "'%s' is not an absolute path", v);
	if (strlen(v) >= PATH_MAX)
		return fail(p, key, "the path is too long");
	if (!strcmp(key, "ControlSocket") && strlen(v) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return fail(p, key, "the path is longer than a socket's address (%zu bytes)",
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	strcpy(out, v);
	return 0;
}

static int policy_key(struct parser *p, const char *key, const char *v,
		      struct hbm_policy_config *pol)
{
	int err;

	if (!strcmp(key, "CEThreshold")) {
		err = number(p, key, v, 1, CE_THRESHOLD_MAX, &pol->ce_threshold);
		pol->set |= err ? 0 : HBM_SET_CE_THRESHOLD;
	} else if (!strcmp(key, "CEWindow")) {
		err = seconds(p, key, v, 1, CE_WINDOW_MAX, &pol->ce_window);
		pol->set |= err ? 0 : HBM_SET_CE_WINDOW;
	} else if (!strcmp(key, "RetireLimit")) {
		err = number(p, key, v, 1, UINT32_MAX, &pol->retire_limit);
		pol->set |= err ? 0 : HBM_SET_RETIRE_LIMIT;
	} else {
		err = fail(p, key, "unknown key (CEThreshold, CEWindow, RetireLimit)");
	}
	return err;
}

static int range_key(struct parser *p, const char *key, const char *v,
		     struct hbm_range_config *r)
{
	uint32_t node;
	int err;

	if (!strcmp(key, "NumaNode")) {
		err = number(p, key, v, 0, 1023, &node);
		r->numa_node = err ? r->numa_node : (int)node;
		return err;
	}
	if (!strcmp(key, "Address")) {
		err = bytes(p, key, v, &r->address);
		if (!err && r->address % 4096)
			err = fail(p, key, "'%s' is not page aligned", v);
		return err;
	}
	if (!strcmp(key, "Size")) {
		err = bytes(p, key, v, &r->size);
		if (!err && (!r->size || r->size % 4096))
			err = fail(p, key, "'%s' is not a whole number of pages", v);
		return err;
	}
	if (!strcmp(key, "SparePages"))
		return number(p, key, v, 1, UINT32_MAX, &r->spare_pages);
	if (!strcmp(key, "Claim"))
		return yes_no(p, key, v, &r->claim);
	return fail(p, key, "unknown key (NumaNode, Address, Size, SparePages, Claim)");
}

/*
 * A range is a node, or an address and a size that does not wrap, and is
 * memory no range before it holds: said once every file is read, at the
 * [Range] line that last declared it.  The module would refuse a second
 * range over the same memory (EEXIST), which a daemon registering a range
 * again at each start cannot tell from one registered already.  A node's
 * addresses are the kernel's: a node against an address range is the
 * module's to refuse.
 */
static int range_check(struct parser *p, const struct hbm_config *c, size_t i)
{
	const struct hbm_range_config *r = &c->ranges[i];
	bool by_node = r->numa_node >= 0, by_address = r->address || r->size;
	size_t j;

	p->file = p->range_file[i];
	p->line = r->line;
	if (by_node == by_address || (by_address && (!r->address || !r->size)))
		return fail(p, NULL, "[Range \"%s\"] takes NumaNode=, or Address= and Size=",
			    r->name);
	if (by_address && r->size > UINT64_MAX - r->address)
		return fail(p, NULL, "[Range \"%s\"]: Address=0x%" PRIx64 " and Size=%" PRIu64
			    " go past the end of the address space", r->name, r->address, r->size);
	for (j = 0; j < i; j++) {
		const struct hbm_range_config *o = &c->ranges[j];

		if (by_node && o->numa_node == r->numa_node)
			return fail(p, NULL, "[Range \"%s\"]: NumaNode=%d is [Range \"%s\"]'s (%s:%u)",
				    r->name, r->numa_node, o->name, p->range_file[j], o->line);
		if (by_address && o->numa_node < 0 && r->address < o->address + o->size &&
		    o->address < r->address + r->size)
			return fail(p, NULL, "[Range \"%s\"]: 0x%" PRIx64 "+%" PRIu64 " overlaps "
				    "[Range \"%s\"] (%s:%u): 0x%" PRIx64 "+%" PRIu64, r->name,
				    r->address, r->size, o->name, p->range_file[j], o->line,
				    o->address, o->size);
	}
	return 0;
}

/* Deadlines of a rank recovery's steps, in seconds. */
static int recovery_key(struct parser *p, const char *key, const char *v,
			struct hbm_recovery_config *r)
{
	if (!strcmp(key, "PauseTimeout"))
		return seconds(p, key, v, 1, 3600, &r->pause_timeout);
	if (!strcmp(key, "RestoreTimeout"))
		return seconds(p, key, v, 1, 3600, &r->restore_timeout);
	if (!strcmp(key, "KillTimeout"))
		return seconds(p, key, v, 1, 600, &r->kill_timeout);
	return fail(p, key, "unknown key (PauseTimeout, RestoreTimeout, KillTimeout)");
}

/*
 * ADDRESS:PORT, an IPv4 address or a bracketed IPv6 one, numeric (no name
 * to resolve at start, when the network may not be up); "" turns it off,
 * so that a drop-in can undo the file's.
 */
static int listen_address(struct parser *p, const char *key, const char *v,
			  struct hbm_metrics_config *out)
{
	struct hbm_metrics_config m = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&m.addr;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&m.addr;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(v, ':'), *h = v;
	size_t hlen;
	uint32_t port;

	if (!*v) {
		*out = m;
		return 0;
	}
	if (strlen(v) >= sizeof(m.listen) || !colon || colon == v)
		return fail(p, key, "'%s' is not ADDRESS:PORT", v);
	hlen = colon - v;
	if (*v == '[') {		/* [v6]:port */
		if (hlen < 3 || v[hlen - 1] != ']')
			return fail(p, key, "'%s' is not ADDRESS:PORT", v);
		h = v + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return fail(p, key, "'%.*s' is not a numeric IP address", (int)hlen, h);
	memcpy(host, h, hlen);
	host[hlen] = 0;
	if (number(p, key, colon + 1, 1, 65535, &port))
		return -EINVAL;
	if (*v != '[' && inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		m.addr_len = sizeof(*in4);
	} else if (*v == '[' && inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		m.addr_len = sizeof(*in6);
	} else {
		return fail(p, key, "'%s' is not a numeric IP address (an IPv6 one in brackets)",
			    host);
	}
	strcpy(m.listen, v);
	*out = m;
	return 0;
}

/**
 * hbm_slurm_node_valid() - whether @v names one Slurm node
 * @v: the name
 *
 * A single name, never a hostlist expression ("gpu[1-4]", "a,b") that
 * would drain others with it: letters, digits, '-', '_' and '.'.  The
 * length is the caller's.
 *
 * Return: true if so.
 */
bool hbm_slurm_node_valid(const char *v)
{
	for (; *v; v++)
		if (!isalnum((unsigned char)*v) && !strchr("-_.", *v))
			return false;
	return true;
}

static int slurm_node(struct parser *p, const char *key, const char *v, char *out)
{
	if (strlen(v) >= HBM_SLURM_NODE_LEN)
		return fail(p, key, "'%s' is longer than %d characters", v, HBM_SLURM_NODE_LEN - 1);
	if (!hbm_slurm_node_valid(v))
		return fail(p, key, "'%s' is not one node's name (letters, digits, -_.)", v);
	strcpy(out, v);
	return 0;
}

/* [Scheduler]; Hook= and SlurmNode= empty undo a file before's. */
static int sched_key(struct parser *p, const char *key, const char *v,
		     struct hbm_sched_config *s)
{
	if (!strcmp(key, "Slurm"))
		return yes_no(p, key, v, &s->slurm);
	if (!strcmp(key, "SlurmNode"))
		return slurm_node(p, key, v, s->slurm_node);
	if (!strcmp(key, "Hook")) {
		if (!*v) {
			s->hook[0] = 0;
			return 0;
		}
		return path(p, key, v, s->hook);
	}
	if (!strcmp(key, "Timeout"))
		return seconds(p, key, v, 1, 600, &s->timeout);
	if (!strcmp(key, "RecheckInterval"))
		return seconds(p, key, v, 5, 3600, &s->recheck);
	return fail(p, key, "unknown key (Slurm, SlurmNode, Hook, Timeout, RecheckInterval)");
}

/**
 * hbm_cluster_name_valid() - whether @v can be a node's or a job's name in etcd
 * @v: the name
 *
 * It is one component of a key (cluster_proto.h): 1 to 63 of letters,
 * digits, '.', '_' and '-', and not "." or "..", so that no name can
 * reach into another's keys.
 *
 * Return: true if so.
 */
bool hbm_cluster_name_valid(const char *v)
{
	size_t n = strlen(v);

	if (!n || n >= HBM_CLUSTER_NAME_LEN || !strcmp(v, ".") || !strcmp(v, ".."))
		return false;
	for (; *v; v++)
		if (!isalnum((unsigned char)*v) && !strchr("-_.", *v))
			return false;
	return true;
}

/*
 * One endpoint: http:// or https://, a host name or numeric address (IPv6
 * in brackets) and an optional port; no path, user or query, which etcd's
 * gateway would not serve (its paths start at /v3/).
 */
static int endpoint(struct parser *p, const char *key, const char *v, char *out)
{
	const char *h = !strncmp(v, "https://", 8) ? v + 8 : !strncmp(v, "http://", 7) ? v + 7 : NULL;
	const char *end, *q;
	uint32_t port;

	if (!h)
		return fail(p, key, "'%s' is not an http:// or https:// URL", v);
	if (strlen(v) >= HBM_CLUSTER_URL_LEN)
		return fail(p, key, "'%s' is longer than %d characters", v, HBM_CLUSTER_URL_LEN - 1);
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end || end == h + 1)
			return fail(p, key, "'%s': an IPv6 address ends with ]", v);
		for (q = h + 1; q < end; q++)
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
				return fail(p, key, "'%s' is not host[:port]", v);
		end++;
	} else {
		for (end = h; isalnum((unsigned char)*end) || *end == '.' || *end == '-'; end++)
			;
		if (end == h)
			return fail(p, key, "'%s' has no host", v);
	}
	if (*end == ':') {
		if (number(p, key, end + 1, 1, 65535, &port))
			return -EINVAL;
	} else if (*end) {
		return fail(p, key, "'%s' is not host[:port] (no path, user or query)", v);
	}
	strcpy(out, v);
	return 0;
}

/* Endpoints=: a list separated by spaces or commas; empty turns [Cluster] off. */
static int endpoints(struct parser *p, const char *key, const char *v,
		     struct hbm_cluster_config *c)
{
	struct hbm_cluster_config next = *c;
	char *copy = strdup(v), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	next.nr_endpoints = 0;
	for (tok = strtok_r(copy, " \t,", &save); tok && !err; tok = strtok_r(NULL, " \t,", &save)) {
		if (next.nr_endpoints == HBM_CLUSTER_MAX_ENDPOINTS)
			err = fail(p, key, "more than %d endpoints", HBM_CLUSTER_MAX_ENDPOINTS);
		else
			err = endpoint(p, key, tok, next.endpoints[next.nr_endpoints++]);
	}
	free(copy);
	if (!err) {
		*c = next;
		p->cluster_file = p->file;
		p->cluster_line = p->line;
	}
	return err;
}

/* [Cluster]; a file's key empty undoes what a file before set. */
static int cluster_key(struct parser *p, const char *key, const char *v,
		       struct hbm_cluster_config *c)
{
	char *file = !strcmp(key, "CertificateFile") ? c->cert :
		     !strcmp(key, "KeyFile") ? c->key :
		     !strcmp(key, "TrustedCAFile") ? c->ca : NULL;

	if (file) {
		if (!*v) {
			file[0] = 0;
			return 0;
		}
		return path(p, key, v, file);
	}
	if (!strcmp(key, "Endpoints"))
		return endpoints(p, key, v, c);
	if (!strcmp(key, "AllowPlainHTTP"))
		return yes_no(p, key, v, &c->allow_plain_http);
	/* 2 s at least: keep-alives go every third of it (etcd.c) */
	if (!strcmp(key, "LeaseTTL"))
		return seconds(p, key, v, 2, 3600, &c->lease_ttl);
	if (!strcmp(key, "Node")) {
		if (*v && !hbm_cluster_name_valid(v))
			return fail(p, key, "'%s' is not a node name (1 to %d letters, digits, -_.)",
				    v, HBM_CLUSTER_NAME_LEN - 1);
		strcpy(c->node, v);
		return 0;
	}
	return fail(p, key, "unknown key (Endpoints, CertificateFile, KeyFile, TrustedCAFile, "
		    "AllowPlainHTTP, LeaseTTL, Node)");
}

/*
 * What one key cannot say alone, once every file is read: an http://
 * endpoint only with AllowPlainHTTP=yes (a job's incidents in the clear,
 * and anyone on the path could write them), a certificate with its key.
 */
static int cluster_check(struct parser *p, const struct hbm_cluster_config *c)
{
	size_t i;

	if (!c->nr_endpoints)
		return 0;
	p->file = p->cluster_file;
	p->line = p->cluster_line;
	for (i = 0; i < c->nr_endpoints; i++)
		if (!strncmp(c->endpoints[i], "http://", 7) && !c->allow_plain_http)
			return fail(p, "Endpoints", "'%s' is plain HTTP: use https://, or set "
				    "AllowPlainHTTP=yes (tests only)", c->endpoints[i]);
	if (!c->cert[0] != !c->key[0])
		return fail(p, NULL, "[Cluster] takes CertificateFile= and KeyFile= together");
	return 0;
}

static struct hbm_device_config *device_section(struct hbm_config *c,
						 const char *identity)
{
	size_t i;

	for (i = 0; i < c->nr_devices; i++)
		if (!strcmp(c->devices[i].identity, identity))
			return &c->devices[i];
	if (c->nr_devices == HBM_CONFIG_MAX_DEVICES)
		return NULL;
	strcpy(c->devices[c->nr_devices].identity, identity);
	return &c->devices[c->nr_devices++];
}

enum section { NONE, DAEMON, POLICY, RECOVERY, DEVICE, RANGE, METRICS, SCHEDULER, CLUSTER };

/* The quoted argument of [@what "..."], or NULL. */
static char *quoted(char *s, const char *what)
{
	size_t len = strlen(what), n;

	if (strncmp(s, what, len) || !isspace((unsigned char)s[len]))
		return NULL;
	s = trim(s + len);
	n = strlen(s);
	if (n < 3 || s[0] != '"' || s[n - 1] != '"')
		return NULL;
	s[n - 1] = 0;
	return s + 1;
}

/*
 * A range of a name a file before declared is amended by this one, key by
 * key, as a drop-in amends what it does not set again; twice in one file
 * it is a mistake.
 */
static int range_section(struct parser *p, struct hbm_config *c, const char *name,
			 size_t *index)
{
	struct hbm_range_config *r;
	const char *q;
	size_t i;

	if (!*name || strlen(name) >= sizeof(r->name))
		return fail(p, NULL, "'%s' is not a range name", name);
	for (q = name; *q; q++)
		if (!isalnum((unsigned char)*q) && !strchr("_.:-", *q))
			return fail(p, NULL, "'%s' is not a range name (letters, digits, _.:-)",
				    name);
	for (i = 0; i < c->nr_ranges; i++)
		if (!strcmp(c->ranges[i].name, name))
			break;
	if (i < c->nr_ranges && p->range_file_nr[i] == p->nr_files)
		return fail(p, NULL, "[Range \"%s\"] twice", name);
	if (i == c->nr_ranges) {
		if (c->nr_ranges == HBM_CONFIG_MAX_RANGES)
			return fail(p, NULL, "more than %d [Range] sections",
				    HBM_CONFIG_MAX_RANGES);
		r = &c->ranges[c->nr_ranges++];
		memset(r, 0, sizeof(*r));
		strcpy(r->name, name);
		r->numa_node = -1;
	}
	c->ranges[i].line = p->line;
	p->range_file[i] = p->file;
	p->range_file_nr[i] = p->nr_files;
	*index = i;
	return 0;
}

static int section(struct parser *p, char *s, struct hbm_config *c,
		   enum section *sec, struct hbm_device_config **dev, size_t *range)
{
	size_t len = strlen(s);
	char *id;

	if (s[len - 1] != ']')
		return fail(p, NULL, "'%s': a section is [Daemon], [Policy], [Recovery], [Metrics], [Scheduler], [Cluster], [Device \"identity\"] or [Range \"name\"]", s);
	s[len - 1] = 0;
	s = trim(s + 1);
	if (!strcmp(s, "Daemon")) {
		*sec = DAEMON;
		return 0;
	}
	if (!strcmp(s, "Policy")) {
		*sec = POLICY;
		return 0;
	}
	if (!strcmp(s, "Recovery")) {
		*sec = RECOVERY;
		return 0;
	}
	if (!strcmp(s, "Metrics")) {
		*sec = METRICS;
		return 0;
	}
	if (!strcmp(s, "Scheduler")) {
		*sec = SCHEDULER;
		return 0;
	}
	if (!strcmp(s, "Cluster")) {
		*sec = CLUSTER;
		return 0;
	}
	id = quoted(s, "Range");
	if (id) {
		*sec = RANGE;
		return range_section(p, c, id, range);
	}
	if (!strncmp(s, "Range", 5) && (!s[5] || isspace((unsigned char)s[5])))
		return fail(p, NULL, "[Range ...] takes a quoted name");
	if (strncmp(s, "Device", 6) || !isspace((unsigned char)s[6]))
		return fail(p, NULL, "unknown section [%s]", s);
	id = quoted(s, "Device");
	if (!id)
		return fail(p, NULL, "[Device ...] takes a quoted identity");
	if (!*id || strlen(id) >= sizeof((*dev)->identity) || strpbrk(id, "\" \t"))
		return fail(p, NULL, "'%s' is not a device identity", id);
	*dev = device_section(c, id);
	if (!*dev)
		return fail(p, NULL, "more than %d [Device] sections", HBM_CONFIG_MAX_DEVICES);
	*sec = DEVICE;
	return 0;
}

/*
 * One file's text, applied over what the files before it set: a key set
 * again takes the later value, a [Device] or [Range] section of a name
 * seen before amends it.  Sections do not carry over from one file to the
 * next.
 */
static int parse_text(struct parser *p, const char *text, const char *file,
		      struct hbm_config *c)
{
	struct hbm_device_config *dev = NULL;
	enum section sec = NONE;
	char *copy = strdup(text), *line, *save = NULL;
	size_t range = 0;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	p->file = file;
	p->line = 0;
	p->nr_files++;
	/* strtok_r would skip empty lines and so miscount them. */
	for (line = copy; line && !ret; line = save) {
		char *eq, *key, *value;

		save = strchr(line, '\n');
		if (save)
			*save++ = 0;
		p->line++;
		line = trim(line);
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (*line == '[') {
			ret = section(p, line, c, &sec, &dev, &range);
			continue;
		}
		eq = strchr(line, '=');
		if (!eq) {
			ret = fail(p, NULL, "'%s' is not KEY=VALUE", line);
			continue;
		}
		*eq = 0;
		key = trim(line);
		value = trim(eq + 1);
		if (!*key) {
			ret = fail(p, NULL, "a value without a key");
		} else if (sec == NONE) {
			ret = fail(p, key, "outside any section");
		} else if (sec == DAEMON) {
			if (!strcmp(key, "StateDirectory"))
				ret = path(p, key, value, c->state_dir);
			else if (!strcmp(key, "ControlSocket"))
				ret = path(p, key, value, c->control_socket);
			else
				ret = fail(p, key, "unknown key (StateDirectory, ControlSocket)");
		} else if (sec == RECOVERY) {
			ret = recovery_key(p, key, value, &c->recovery);
		} else if (sec == METRICS) {
			if (!strcmp(key, "Listen"))
				ret = listen_address(p, key, value, &c->metrics);
			else
				ret = fail(p, key, "unknown key (Listen)");
		} else if (sec == SCHEDULER) {
			ret = sched_key(p, key, value, &c->sched);
		} else if (sec == CLUSTER) {
			ret = cluster_key(p, key, value, &c->cluster);
		} else if (sec == RANGE) {
			ret = range_key(p, key, value, &c->ranges[range]);
		} else {
			ret = policy_key(p, key, value,
					 sec == POLICY ? &c->policy : &dev->policy);
		}
	}
	free(copy);
	return ret;
}

static int check_whole(struct parser *p, const struct hbm_config *c)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < c->nr_ranges; i++)
		ret = range_check(p, c, i);
	return ret ? ret : cluster_check(p, &c->cluster);
}

int hbm_config_parse(const char *text, const char *file, struct hbm_config *out,
		     char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	struct hbm_config *c = malloc(sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	hbm_config_defaults(c);
	ret = parse_text(&p, text, file, c);
	if (!ret)
		ret = check_whole(&p, c);
	if (!ret)
		*out = *c;
	free(c);
	return ret;
}

#define TEXT_MAX (1 << 20)

/*
 * One file's text, up to 1 MiB; -ENOENT where it is not, error unset.  What
 * is read is what was opened, not what a name pointed to when the drop-ins
 * were listed: O_NONBLOCK, so that a FIFO put there cannot hold the start or
 * a reload; only a regular file is read, /dev/null (a mask) being empty.
 */
static int read_text(const char *path, char **text, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int ret = 0;

	if (fd < 0) {
		ret = -errno;
		if (ret != -ENOENT)
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode) && !(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errlen, "%s: %s", path, S_ISDIR(st.st_mode) ? strerror(EISDIR) :
			 "not a regular file");
		goto out;
	}
	/* One byte more than allowed: a file of exactly 1 MiB is read whole. */
	*text = calloc(1, TEXT_MAX + 2);
	if (!*text) {
		ret = -ENOMEM;
		goto out;
	}
	while (len <= TEXT_MAX && (n = read(fd, *text + len, TEXT_MAX + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
			break;
		}
		len += n;
	}
	if (!ret && len > TEXT_MAX) {
		snprintf(err, errlen, "%s: larger than 1 MiB", path);
		ret = -EFBIG;
	} else if (!ret && memchr(*text, 0, len)) {
		snprintf(err, errlen, "%s: not a text file", path);
		ret = -EINVAL;
	}
	if (ret) {
		free(*text);
		*text = NULL;
	}
out:
	close(fd);
	return ret;
}

static int parse_file(struct parser *p, const char *path, struct hbm_config *c)
{
	char *text = NULL;
	int ret = read_text(path, &text, p->err, p->errlen);

	if (!ret)
		ret = parse_text(p, text, path, c);
	free(text);
	return ret;
}

/* A drop-in: its name, and its path in the directory of most priority. */
struct dropin {
	char *name;
	char *path;			/* NULL: masked */
};

static int dropin_order(const void *a, const void *b)
{
	return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

static void dropins_free(struct dropin *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(d[i].name);
		free(d[i].path);
	}
	free(d);
}

/*
 * The drop-ins of @dirs (most priority first) in the order they apply, as
 * systemd finds its own (systemd-system.conf(5), "CONFIGURATION DIRECTORIES
 * AND PRECEDENCE"; conf_files_list_strv() and files_add() in
 * src/basic/conf-files.c, systemd 252): the files named *.conf, not hidden;
 * of those of the same name only the one in the directory listed first; one
 * that is a character device (a symlink to /dev/null) or empty masks the
 * name; one that is neither that nor a regular file (a directory) is passed
 * over, and masks nothing; all of them sorted by name (strcmp, not the
 * locale), whichever their directory.  Unlike systemd, a directory or file
 * that cannot be read (a dangling symlink, EACCES) is an error, not a debug
 * line: a setting silently dropped is worse than a refused reload.
 */
static int dropins_list(const char *const *dirs, struct dropin **out, size_t *nr,
			char *err, size_t errlen)
{
	struct dropin *d = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	for (; *dirs && !ret; dirs++) {
		DIR *dir = opendir(*dirs);
		struct dirent *de;

		if (!dir) {
			if (errno == ENOENT)
				continue;
			ret = -errno;
			snprintf(err, errlen, "%s: %s", *dirs, strerror(errno));
			break;
		}
		while (!ret && (errno = 0, de = readdir(dir))) {
			size_t len = strlen(de->d_name), i;
			struct stat st;
			char *path;

			if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 5, ".conf"))
				continue;
			for (i = 0; i < n && strcmp(d[i].name, de->d_name); i++)
				;
			if (i < n)
				continue;
			if (asprintf(&path, "%s/%s", *dirs, de->d_name) < 0) {
				ret = -ENOMEM;
				break;
			}
			if (stat(path, &st)) {
				ret = -errno;
				snprintf(err, errlen, "%s: %s", path, strerror(errno));
				free(path);
				break;
			}
			if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
				free(path);
				continue;
			}
			if (!S_ISREG(st.st_mode) || !st.st_size) {
				free(path);
				path = NULL;
			}
			if (n == cap) {
				struct dropin *more = reallocarray(d, cap ? 2 * cap : 16, sizeof(*d));

				if (!more) {
					free(path);
					ret = -ENOMEM;
					break;
				}
				d = more;
				cap = cap ? 2 * cap : 16;
			}
			d[n].path = path;
			d[n].name = strdup(de->d_name);
			if (!d[n++].name)
				ret = -ENOMEM;
		}
		if (!ret && errno) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", *dirs, strerror(errno));
		}
		closedir(dir);
	}
	if (ret) {
		dropins_free(d, n);
		return ret;
	}
	if (n)
		qsort(d, n, sizeof(*d), dropin_order);
	*out = d;
	*nr = n;
	return 0;
}

int hbm_config_load_files(const char *file, bool file_required,
			  const char *const *dirs, struct hbm_config *out,
			  char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	struct hbm_config *c = malloc(sizeof(*c));
	struct dropin *d = NULL;
	size_t n = 0, i;
	int ret;

	if (!c)
		return -ENOMEM;
	hbm_config_defaults(c);
	err[0] = 0;
	ret = parse_file(&p, file, c);
	if (ret == -ENOENT) {
		if (file_required)
			snprintf(err, errlen, "%s: %s", file, strerror(ENOENT));
		else
			ret = 0;
	}
	if (!ret)
		ret = dropins_list(dirs, &d, &n, err, errlen);
	for (i = 0; !ret && i < n; i++) {
		if (!d[i].path)
			continue;
		ret = parse_file(&p, d[i].path, c);
		if (ret == -ENOENT)	/* gone since it was listed */
			snprintf(err, errlen, "%s: %s", d[i].path, strerror(ENOENT));
	}
	if (!ret)
		ret = check_whole(&p, c);	/* names files d still holds */
	if (!ret)
		*out = *c;
	else if (!err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	dropins_free(d, n);
	free(c);
	return ret;
}

const char *const hbm_config_dropin_dirs[] = {
	"/etc/" HBM_CONFIG_DROPIN,
	"/run/" HBM_CONFIG_DROPIN,
	"/usr/local/lib/" HBM_CONFIG_DROPIN,
	"/usr/lib/" HBM_CONFIG_DROPIN,
	NULL
};

int hbm_config_load(const char *path, struct hbm_config *c, char *err,
		    size_t errlen)
{
	const char *dirs[2] = { NULL, NULL };
	char *dir;
	int ret;

	if (!path)
		return hbm_config_load_files(HBM_CONFIG_PATH, false, hbm_config_dropin_dirs,
					     c, err, errlen);
	if (asprintf(&dir, "%s.d", path) < 0)
		return -ENOMEM;
	dirs[0] = dir;
	ret = hbm_config_load_files(path, true, dirs, c, err, errlen);
	free(dir);
	return ret;
}

/* The policy of a device: [Policy], overridden by its [Device] section. */
struct hbm_policy_config hbm_config_policy_for(const struct hbm_config *c,
					       const char *identity)
{
	struct hbm_policy_config p = c->policy;
	size_t i;

	for (i = 0; i < c->nr_devices; i++) {
		const struct hbm_policy_config *d = &c->devices[i].policy;

		if (strcmp(c->devices[i].identity, identity))
			continue;
		if (d->set & HBM_SET_CE_THRESHOLD)
			p.ce_threshold = d->ce_threshold;
		if (d->set & HBM_SET_CE_WINDOW)
			p.ce_window = d->ce_window;
		if (d->set & HBM_SET_RETIRE_LIMIT)
			p.retire_limit = d->retire_limit;
		p.set |= d->set;
	}
	return p;
}
