// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd's configuration (daemon/config.h), as an operator or a package
 * may write it: hbm_config_parse() of one file's text, and
 * hbm_config_load_files() of a file with drop-ins.  A file refused names
 * its file and line ("FILE:LINE: ...", the line one of that file's) and
 * leaves the caller's configuration as it was; one accepted holds what
 * config.h documents (the ranges of each key, paths absolute, a range a
 * node or an address and a size apart from the others, endpoints and
 * names as cluster.c and scheduler.c take them), and written out again
 * it parses to the same configuration.  The text read from a file is the
 * text parsed.
 *
 * Input: a byte of mode, then text; with bit 0 of the mode set, NULs
 * split it into the main file and drop-ins (10-1.conf, 10-2.conf, ...);
 * with bit 1, the text read from a file too.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "config.h"
#include "fuzz.h"

static void cleanup(void);

#define MAX_FILES	4

static char dir[64], dropins[96];

static void cleanup(void)
{
	char path[160];
	int i;

	for (i = 0; i < MAX_FILES; i++) {
		snprintf(path, sizeof(path), "%s/10-%d.conf", dropins, i);
		unlink(path);
	}
	rmdir(dropins);
	snprintf(path, sizeof(path), "%s/hbmguardd.conf", dir);
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_tmpdir(dir, sizeof(dir), "config");
	fuzz_on_failure = cleanup;	/* the directory, not left behind */
	snprintf(dropins, sizeof(dropins), "%s/hbmguardd.conf.d", dir);
	if (mkdir(dropins, 0700))
		abort();
	atexit(cleanup);
	return 0;
}

static unsigned int lines_of(const char *text)
{
	unsigned int n = 1;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* "FILE:LINE: ", FILE one of @files, LINE one of its lines. */
static void error_names_line(const char *err, const char *const *files,
			     const char *const *texts, size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		unsigned long line;
		char *end;

		len = strlen(files[i]);
		if (strncmp(err, files[i], len) || err[len] != ':')
			continue;
		line = strtoul(err + len + 1, &end, 10);
		CHECK(end > err + len + 1 && !strncmp(end, ": ", 2) && line >= 1 &&
		      line <= lines_of(texts[i]), "'%s': no line of %s (%u lines)", err, files[i],
		      lines_of(texts[i]));
		CHECK(end[2], "'%s' says nothing", err);
		return;
	}
	CHECK(0, "'%s' names no file read", err);
}

static bool absolute(const char *p, size_t max)
{
	return p[0] == '/' && strnlen(p, max) < max;
}

static bool in(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi;
}

static void policy_valid(const struct hbm_policy_config *p)
{
	CHECK(!(p->set & ~7u), "policy fields %#x", p->set);
	if (p->set & HBM_SET_CE_THRESHOLD)
		CHECK(in(p->ce_threshold, 1, 65535), "CEThreshold %u", p->ce_threshold);
	if (p->set & HBM_SET_CE_WINDOW)
		CHECK(in(p->ce_window, 1, 365 * 86400), "CEWindow %u", p->ce_window);
	if (p->set & HBM_SET_RETIRE_LIMIT)
		CHECK(p->retire_limit >= 1, "RetireLimit %u", p->retire_limit);
}

static bool name_chars(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

/* What config.h says an accepted configuration is. */
static void valid(const struct hbm_config *c)
{
	size_t i, j;

	CHECK(absolute(c->state_dir, PATH_MAX), "StateDirectory '%s'", c->state_dir);
	CHECK(absolute(c->control_socket, sizeof(((struct sockaddr_un *)0)->sun_path)),
	      "ControlSocket '%s'", c->control_socket);
	policy_valid(&c->policy);
	CHECK(c->nr_devices <= HBM_CONFIG_MAX_DEVICES, "%zu devices", c->nr_devices);
	for (i = 0; i < c->nr_devices; i++) {
		const char *id = c->devices[i].identity;

		CHECK(id[0] && strnlen(id, sizeof(c->devices[i].identity)) <
		      sizeof(c->devices[i].identity) && !strpbrk(id, "\" \t"), "identity '%s'", id);
		policy_valid(&c->devices[i].policy);
		for (j = 0; j < i; j++)
			CHECK(strcmp(id, c->devices[j].identity), "[Device \"%s\"] twice", id);
	}
	CHECK(c->nr_ranges <= HBM_CONFIG_MAX_RANGES, "%zu ranges", c->nr_ranges);
	for (i = 0; i < c->nr_ranges; i++) {
		const struct hbm_range_config *r = &c->ranges[i];

		CHECK(r->name[0] && strnlen(r->name, sizeof(r->name)) < sizeof(r->name) &&
		      name_chars(r->name, "_.:-"), "range name '%s'", r->name);
		if (r->numa_node >= 0) {
			CHECK(r->numa_node <= 1023 && !r->address && !r->size,
			      "range %s: node %d, address %#llx+%#llx", r->name, r->numa_node,
			      (unsigned long long)r->address, (unsigned long long)r->size);
		} else {
			CHECK(r->numa_node == -1 && r->address && r->size && !(r->address % 4096) &&
			      !(r->size % 4096) && r->address + r->size > r->address,
			      "range %s: node %d, address %#llx+%#llx", r->name, r->numa_node,
			      (unsigned long long)r->address, (unsigned long long)r->size);
		}
		for (j = 0; j < i; j++) {
			const struct hbm_range_config *o = &c->ranges[j];

			CHECK(strcmp(r->name, o->name), "range %s twice", r->name);
			if (r->numa_node >= 0)
				CHECK(r->numa_node != o->numa_node, "node %d twice", r->numa_node);
			else if (o->numa_node < 0)
				CHECK(r->address >= o->address + o->size ||
				      o->address >= r->address + r->size,
				      "ranges %s and %s overlap", r->name, o->name);
		}
	}
	CHECK(in(c->recovery.pause_timeout, 1, 3600) && in(c->recovery.restore_timeout, 1, 3600) &&
	      in(c->recovery.kill_timeout, 1, 600), "recovery %u/%u/%u",
	      c->recovery.pause_timeout, c->recovery.restore_timeout, c->recovery.kill_timeout);
	if (!c->metrics.listen[0]) {
		CHECK(!c->metrics.addr_len, "no Listen, an address");
	} else {
		const struct hbm_metrics_config *m = &c->metrics;
		const char *colon = strrchr(m->listen, ':');
		unsigned long port = colon ? strtoul(colon + 1, NULL, 10) : 0;

		CHECK(strnlen(m->listen, sizeof(m->listen)) < sizeof(m->listen), "Listen");
		CHECK(m->addr.ss_family == (m->listen[0] == '[' ? AF_INET6 : AF_INET) &&
		      m->addr_len == (m->listen[0] == '[' ? sizeof(struct sockaddr_in6) :
				      sizeof(struct sockaddr_in)), "Listen '%s': family %d",
		      m->listen, m->addr.ss_family);
		CHECK(in(port, 1, 65535) && ntohs(((const struct sockaddr_in *)&m->addr)->sin_port) ==
		      port, "Listen '%s': port", m->listen);
	}
	CHECK(strnlen(c->sched.slurm_node, HBM_SLURM_NODE_LEN) < HBM_SLURM_NODE_LEN &&
	      hbm_slurm_node_valid(c->sched.slurm_node), "SlurmNode '%s'", c->sched.slurm_node);
	CHECK(!c->sched.hook[0] || absolute(c->sched.hook, PATH_MAX), "Hook '%s'", c->sched.hook);
	CHECK(in(c->sched.timeout, 1, 600) && in(c->sched.recheck, 5, 3600), "scheduler %u/%u",
	      c->sched.timeout, c->sched.recheck);
	CHECK(c->cluster.nr_endpoints <= HBM_CLUSTER_MAX_ENDPOINTS, "%zu endpoints",
	      c->cluster.nr_endpoints);
	for (i = 0; i < c->cluster.nr_endpoints; i++) {
		const char *e = c->cluster.endpoints[i];
		bool plain = !strncmp(e, "http://", 7);

		CHECK(strnlen(e, HBM_CLUSTER_URL_LEN) < HBM_CLUSTER_URL_LEN &&
		      (plain || !strncmp(e, "https://", 8)), "endpoint '%s'", e);
		/* host[:port]: no path, user or query */
		CHECK(e[plain ? 7 : 8] && name_chars(e + (plain ? 7 : 8), ".-[]:"),
		      "endpoint '%s': more than a host and a port", e);
		CHECK(!plain || c->cluster.allow_plain_http, "'%s' without AllowPlainHTTP", e);
	}
	CHECK(!c->cluster.nr_endpoints || !c->cluster.cert[0] == !c->cluster.key[0],
	      "a certificate without its key");
	CHECK((!c->cluster.cert[0] || absolute(c->cluster.cert, PATH_MAX)) &&
	      (!c->cluster.key[0] || absolute(c->cluster.key, PATH_MAX)) &&
	      (!c->cluster.ca[0] || absolute(c->cluster.ca, PATH_MAX)), "cluster files");
	CHECK(in(c->cluster.lease_ttl, 2, 3600), "LeaseTTL %u", c->cluster.lease_ttl);
	CHECK(!c->cluster.node[0] || hbm_cluster_name_valid(c->cluster.node), "Node '%s'",
	      c->cluster.node);
}

/* ---- written out again ---- */

struct text {
	char *p;
	size_t n, cap;
};

static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < t->cap - t->n)
			break;
		t->cap = 2 * t->cap + n + 1;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	t->n += n;
}

static void policy_out(struct text *t, const struct hbm_policy_config *p)
{
	if (p->set & HBM_SET_CE_THRESHOLD)
		add(t, "CEThreshold=%u\n", p->ce_threshold);
	if (p->set & HBM_SET_CE_WINDOW)
		add(t, "CEWindow=%us\n", p->ce_window);
	if (p->set & HBM_SET_RETIRE_LIMIT)
		add(t, "RetireLimit=%u\n", p->retire_limit);
}

static char *config_out(const struct hbm_config *c)
{
	struct text t = { .p = malloc(4096), .cap = 4096 };
	size_t i;

	if (!t.p)
		abort();
	add(&t, "[Daemon]\nStateDirectory=%s\nControlSocket=%s\n", c->state_dir, c->control_socket);
	add(&t, "[Policy]\n");
	policy_out(&t, &c->policy);
	add(&t, "[Recovery]\nPauseTimeout=%u\nRestoreTimeout=%us\nKillTimeout=%u s\n",
	    c->recovery.pause_timeout, c->recovery.restore_timeout, c->recovery.kill_timeout);
	add(&t, "[Metrics]\nListen=%s\n", c->metrics.listen);
	add(&t, "[Scheduler]\nSlurm=%s\nSlurmNode=%s\nHook=%s\nTimeout=%u\nRecheckInterval=%u\n",
	    c->sched.slurm ? "yes" : "no", c->sched.slurm_node, c->sched.hook, c->sched.timeout,
	    c->sched.recheck);
	add(&t, "[Cluster]\nEndpoints=");
	for (i = 0; i < c->cluster.nr_endpoints; i++)
		add(&t, "%s%s", i ? " " : "", c->cluster.endpoints[i]);
	add(&t, "\nCertificateFile=%s\nKeyFile=%s\nTrustedCAFile=%s\nAllowPlainHTTP=%s\n"
	    "LeaseTTL=%u\nNode=%s\n", c->cluster.cert, c->cluster.key, c->cluster.ca,
	    c->cluster.allow_plain_http ? "true" : "false", c->cluster.lease_ttl, c->cluster.node);
	for (i = 0; i < c->nr_devices; i++) {
		add(&t, "[Device \"%s\"]\n", c->devices[i].identity);
		policy_out(&t, &c->devices[i].policy);
	}
	for (i = 0; i < c->nr_ranges; i++) {
		const struct hbm_range_config *r = &c->ranges[i];

		add(&t, "[Range \"%s\"]\n", r->name);
		if (r->numa_node >= 0)
			add(&t, "NumaNode=%d\n", r->numa_node);
		else
			add(&t, "Address=%#llx\nSize=%llu\n", (unsigned long long)r->address,
			    (unsigned long long)r->size);
		if (r->spare_pages)
			add(&t, "SparePages=%u\n", r->spare_pages);
		add(&t, "Claim=%s\n", r->claim ? "1" : "0");
	}
	return t.p;
}

static bool policy_same(const struct hbm_policy_config *a, const struct hbm_policy_config *b)
{
	return a->set == b->set &&
	       (!(a->set & HBM_SET_CE_THRESHOLD) || a->ce_threshold == b->ce_threshold) &&
	       (!(a->set & HBM_SET_CE_WINDOW) || a->ce_window == b->ce_window) &&
	       (!(a->set & HBM_SET_RETIRE_LIMIT) || a->retire_limit == b->retire_limit);
}

/* The same configuration, but where each range was declared. */
static void same(const struct hbm_config *a, const struct hbm_config *b)
{
	size_t i;

	CHECK(!strcmp(a->state_dir, b->state_dir) && !strcmp(a->control_socket, b->control_socket),
	      "[Daemon]");
	CHECK(policy_same(&a->policy, &b->policy), "[Policy]");
	CHECK(!memcmp(&a->recovery, &b->recovery, sizeof(a->recovery)), "[Recovery]");
	CHECK(!strcmp(a->metrics.listen, b->metrics.listen) &&
	      a->metrics.addr_len == b->metrics.addr_len &&
	      !memcmp(&a->metrics.addr, &b->metrics.addr, a->metrics.addr_len), "[Metrics]");
	CHECK(a->sched.slurm == b->sched.slurm && !strcmp(a->sched.slurm_node, b->sched.slurm_node) &&
	      !strcmp(a->sched.hook, b->sched.hook) && a->sched.timeout == b->sched.timeout &&
	      a->sched.recheck == b->sched.recheck, "[Scheduler]");
	CHECK(a->cluster.nr_endpoints == b->cluster.nr_endpoints, "endpoints");
	for (i = 0; i < a->cluster.nr_endpoints; i++)
		CHECK(!strcmp(a->cluster.endpoints[i], b->cluster.endpoints[i]), "endpoint %zu", i);
	CHECK(!strcmp(a->cluster.cert, b->cluster.cert) && !strcmp(a->cluster.key, b->cluster.key) &&
	      !strcmp(a->cluster.ca, b->cluster.ca) &&
	      a->cluster.allow_plain_http == b->cluster.allow_plain_http &&
	      a->cluster.lease_ttl == b->cluster.lease_ttl && !strcmp(a->cluster.node, b->cluster.node),
	      "[Cluster]");
	CHECK(a->nr_devices == b->nr_devices, "%zu devices, %zu", a->nr_devices, b->nr_devices);
	for (i = 0; i < a->nr_devices; i++)
		CHECK(!strcmp(a->devices[i].identity, b->devices[i].identity) &&
		      policy_same(&a->devices[i].policy, &b->devices[i].policy), "device %zu", i);
	CHECK(a->nr_ranges == b->nr_ranges, "%zu ranges, %zu", a->nr_ranges, b->nr_ranges);
	for (i = 0; i < a->nr_ranges; i++) {
		const struct hbm_range_config *x = &a->ranges[i], *y = &b->ranges[i];

		CHECK(!strcmp(x->name, y->name) && x->numa_node == y->numa_node &&
		      x->address == y->address && x->size == y->size &&
		      x->spare_pages == y->spare_pages && x->claim == y->claim, "range %zu", i);
	}
}

static struct hbm_config *conf_new(void)
{
	struct hbm_config *c = malloc(sizeof(*c));

	if (!c)
		abort();
	memset(c, 0x5a, sizeof(*c));
	return c;
}

/* A file refused leaves the caller's configuration as it was. */
static void untouched(const struct hbm_config *c)
{
	static struct hbm_config *poison;

	if (!poison) {
		poison = malloc(sizeof(*poison));
		if (!poison)
			abort();
		memset(poison, 0x5a, sizeof(*poison));
	}
	CHECK(!memcmp(c, poison, sizeof(*c)), "a refused file changed the configuration");
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t len = strlen(text);

	CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len, "writing %s", path);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	char *texts[MAX_FILES], paths[MAX_FILES][160], err[512], err2[512];
	const char *files[MAX_FILES];
	const char *dirs[] = { dropins, NULL };
	struct hbm_config *c = conf_new(), *c2 = conf_new();
	uint8_t mode = fuzz_u8(&in);
	size_t n = 0, i;
	int ret, ret2;

	if (mode & 1) {
		while (n < MAX_FILES && (in.n || !n))
			texts[n++] = fuzz_str(&in);
	} else {
		texts[n++] = fuzz_rest(&in, &i);
	}
	snprintf(paths[0], sizeof(paths[0]), "%s/hbmguardd.conf", dir);
	files[0] = paths[0];
	for (i = 1; i < n; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/10-%zu.conf", dropins, i);
		files[i] = paths[i];
	}

	/* One file's text. */
	err[0] = 0;
	ret = hbm_config_parse(texts[0], files[0], c, err, sizeof(err));
	CHECK(!ret || ret == -EINVAL, "parse: %d", ret);
	if (ret) {
		untouched(c);
		error_names_line(err, files, (const char *const *)texts, 1);
	} else {
		char *again = config_out(c);

		valid(c);
		err2[0] = 0;
		CHECK(!hbm_config_parse(again, "again.conf", c2, err2, sizeof(err2)),
		      "written out, refused: %s\n%s", err2, again);
		same(c, c2);
		free(again);
	}

	/*
	 * As files (a mode's bit 1, or drop-ins: a read costs a MiB's buffer):
	 * the main one alone reads as its text parses, then with drop-ins.
	 */
	if (!(mode & 3))
		goto out;
	write_text(files[0], texts[0]);
	for (i = 1; i < MAX_FILES; i++) {
		char p[160];

		snprintf(p, sizeof(p), "%s/10-%zu.conf", dropins, i);
		unlink(p);
	}
	memset(c2, 0x5a, sizeof(*c2));
	err2[0] = 0;
	ret2 = hbm_config_load_files(files[0], true, dirs, c2, err2, sizeof(err2));
	CHECK(ret2 == ret && !strcmp(err2, err), "loaded %d '%s', parsed %d '%s'", ret2, err2, ret,
	      err);
	if (!ret)
		same(c, c2);
	else
		untouched(c2);
	if (n > 1) {
		for (i = 1; i < n; i++)
			write_text(files[i], texts[i]);
		memset(c2, 0x5a, sizeof(*c2));
		err2[0] = 0;
		ret2 = hbm_config_load_files(files[0], true, dirs, c2, err2, sizeof(err2));
		CHECK(!ret2 || ret2 == -EINVAL, "load: %d", ret2);
		if (ret2) {
			untouched(c2);
			error_names_line(err2, files, (const char *const *)texts, n);
		} else {
			valid(c2);
		}
	}
out:
	for (i = 0; i < n; i++)
		free(texts[i]);
	free(c);
	free(c2);
	return 0;
}
