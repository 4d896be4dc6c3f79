// SPDX-License-Identifier: GPL-2.0
/*
 * The metrics endpoint: what hbmguardd knows, in Prometheus's text
 * exposition format 0.0.4 (prometheus/docs, content/docs/instrumenting/
 * exposition_formats.md) or OpenMetrics 1.0.0 (below), served over HTTP by
 * libmicrohttpd.
 *
 * The state of the daemon is single-threaded, so libmicrohttpd runs without
 * a thread of its own: started with MHD_USE_EPOLL and no
 * MHD_USE_INTERNAL_POLLING_THREAD, it is driven from the daemon's sd-event
 * loop, its epoll fd (MHD_get_daemon_info(MHD_DAEMON_INFO_EPOLL_FD)) an io
 * source and MHD_get_timeout() a timer, each calling MHD_run(), which does
 * not block (microhttpd.h of Debian bookworm's libmicrohttpd-dev 0.9.75:
 * "Run webserver operations (without blocking unless in client
 * callbacks)").  Its sockets are non-blocking: a client that reads slowly,
 * or sends half a request, holds a connection and nothing else.  A render
 * gathers and writes the whole exposition in one callback, from the core's
 * source (one device dump and one stats request to the module, the same as
 * hbmctl status costs, and blocking) and the parts' own counters: at most
 * one gather a second (METRICS_KEEP_US), whatever the scrape rate and
 * whichever formats are asked for, its pages in both formats kept and
 * served again meanwhile; and libmicrohttpd's sources are dispatched after
 * the daemon's own (SD_EVENT_PRIORITY_IDLE).
 *
 * Bounds: METRICS_CONNECTIONS at once (MHD_OPTION_CONNECTION_LIMIT; a
 * Prometheus server holds one, an operator's curl another, the rest is
 * room against a peer that holds many: 1 MiB of requests at most), each
 * METRICS_CONNECTION_MEMORY for its request (MHD_OPTION_CONNECTION_MEMORY_LIMIT:
 * a GET with its headers, no body), closed after METRICS_TIMEOUT_S idle
 * (MHD_OPTION_CONNECTION_TIMEOUT) and METRICS_DEADLINE_US after it was
 * accepted, whatever it does (below), and an exposition of at most
 * METRICS_MAX_BYTES (256 devices of some 40 series each fit many times
 * over): past it the scrape is answered 500, not cut short.
 *
 * The deadline is the daemon's own: libmicrohttpd 0.9.75's timeout is of
 * inactivity only (microhttpd.h lines 1578-1585), so a peer sending a
 * header byte every few seconds would hold its connection for hours, and
 * all of them with as many connections.  Each connection is noted with the
 * time it was accepted (MHD_OPTION_NOTIFY_CONNECTION, its socket from
 * MHD_CONNECTION_INFO_CONNECTION_FD), and one past its deadline is shut
 * down (shutdown(2)): libmicrohttpd reads its end and closes it itself.
 *
 * No limit per peer address (MHD_OPTION_PER_IP_CONNECTION_LIMIT): every
 * local user is 127.0.0.1, so one local user could hold the loopback's
 * share and have a local Prometheus's connections refused at once, where
 * without it they wait in the backlog for a connection's deadline to free
 * its slot; and a remote peer with IPv6 has addresses to spare.  The
 * deadline is what bounds a peer: no connection keeps its slot past it.
 *
 * The format is the client's choice (its Accept header,
 * metrics_negotiate()): OpenMetrics 1.0.0 (OpenObservability/OpenMetrics,
 * specification/OpenMetrics.md, v1.0.0), which Prometheus's scraper asks
 * for first, or the text format; one renderer writes both from the same
 * gather, the writer (metrics_family(), metrics_end()) doing what differs,
 * and a page is kept for each.  A series typed counter only goes up while
 * the daemon runs, except the module's own, which start again at 0 when
 * the module is reloaded (module_series() says why): the errors received
 * and dropped by path, hbmguard_events_dropped_total, and each device's
 * hbmguard_device_{corrected,uncorrected}_errors_total and
 * hbmguard_device_errors_dropped_total and
 * hbmguard_device_corrected_errors_forgotten_total, which also start again when the
 * module registers the device anew.
 *
 * Not served: compression, TLS (a reverse proxy's business).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>

#include "config.h"
#include "core.h"
#include "daemon.h"
#include "gpus.h"
#include "metrics.h"
#include "mhd_dl.h"
#include "passed.h"
#include "recovery.h"
#include "store.h"
#include "utf8.h"

/* The writer */

void metrics_buf_init(struct metrics_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void metrics_buf_free(struct metrics_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static bool reserve(struct metrics_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->failed)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	while (cap < b->len + n + 1)
		cap *= 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	if (b->len + n + 1 > cap) {
		b->failed = true;
		return false;
	}
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void put(struct metrics_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void putf(struct metrics_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void putf(struct metrics_buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {	/* only numbers and names come here */
		b->failed = true;
		return;
	}
	put(b, tmp, n);
}

/*
 * The format's escapes: in a label value backslash, double quote and line
 * feed; in a HELP text backslash and line feed, and double quote too in
 * OpenMetrics (its escaped-string, OpenMetrics.md's ABNF; the text format's
 * HELP has only the two escapes, a \" there would be read as two
 * characters).  Label values must also be
 * valid UTF-8: a scrape with one that is not is rejected whole (promtool
 * check metrics, Prometheus's parser: "text format parsing error in line 3:
 * invalid label value "GPU-\xe2\x82""; check_metrics.c), and an identity, a
 * UUID or a model name is whatever a kernel or a driver wrote: ill-formed
 * bytes become U+FFFD (utf8.c), the rest of the name kept.
 */
static void put_escaped(struct metrics_buf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			put(b, "\\\\", 2);
		else if (*s == '\n')
			put(b, "\\n", 2);
		else if (*s == '"' && quote)
			put(b, "\\\"", 2);
		else
			put(b, s, 1);
	}
}

static void put_label_value(struct metrics_buf *b, const char *s)
{
	size_t cap = 3 * strlen(s) + 1;
	char small[256], *buf = cap <= sizeof(small) ? small : malloc(cap);

	if (!buf) {
		b->failed = true;
		return;
	}
	hbm_utf8_repair(buf, cap, s);
	put_escaped(b, buf, true);
	if (buf != small)
		free(buf);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/**
 * metrics_family() - a metric family's metadata lines
 * @b: the exposition
 * @name: the family's name as its samples have it (no escaping: the
 *	caller's constant); a counter's ends in _total
 * @type: "counter", "gauge", "histogram"
 * @help: escaped here
 *
 * Every sample of the family must follow, before any other family's.
 *
 * In OpenMetrics (OpenMetrics.md, v1.0.0: "Suffixes", "Counter", "Unit"),
 * a counter family is named without the _total its samples carry, so the
 * samples, and the series Prometheus stores, are named the same in both
 * formats.  A counter whose name lacks _total is dcgm-exporter's (its
 * DCGM_FI_DEV_* names, which dashboards query as they are): typed gauge
 * there, rather than renamed.  OpenMetrics's counter needs the _total
 * suffix, and its unknown "SHOULD NOT be used" where the type is known; a
 * gauge may hold any value, so a count that only goes up is one, and
 * rate() still applies to it in PromQL (rate() does not read the type).  A family named in seconds
 * gets its UNIT line (the unit must be the name's suffix); no other unit
 * here is one of the base units OpenMetrics means.  Its metadata in the
 * order it recommends, TYPE, UNIT, HELP.
 */
void metrics_family(struct metrics_buf *b, const char *name, const char *type,
		    const char *help)
{
	size_t len = strlen(name);

	if (b->format == METRICS_TEXT) {
		putf(b, "# HELP %s ", name);
		put_escaped(b, help, false);
		putf(b, "\n# TYPE %s %s\n", name, type);
		return;
	}
	if (!strcmp(type, "counter")) {
		if (ends_with(name, "_total"))
			len -= strlen("_total");
		else
			type = "gauge";
	}
	putf(b, "# TYPE %.*s %s\n", (int)len, name, type);
	if (ends_with(name, "_seconds"))
		putf(b, "# UNIT %s seconds\n", name);
	putf(b, "# HELP %.*s ", (int)len, name);
	put_escaped(b, help, true);
	put(b, "\n", 1);
}

/**
 * metrics_end() - the exposition is complete
 * @b: the exposition
 *
 * OpenMetrics ends with "# EOF": a scrape cut short shows as such.
 */
void metrics_end(struct metrics_buf *b)
{
	if (b->format == METRICS_OPENMETRICS)
		put(b, "# EOF\n", 6);
}

static void put_value(struct metrics_buf *b, double v)
{
	if (isinf(v))
		put(b, v > 0 ? "+Inf" : "-Inf", 4);
	else if (isnan(v))
		put(b, "NaN", 3);
	else if (v >= 0 && v < 1e17 && v == floor(v))	/* counts as integers; the cast in range */
		putf(b, "%" PRIu64, (uint64_t)v);
	else
		putf(b, "%.17g", v);
}

static void put_sample(struct metrics_buf *b, const char *name, const char *suffix,
		       const struct metrics_label *l, size_t nl, const char *le, double v)
{
	size_t i;

	putf(b, "%s%s", name, suffix);
	if (nl || le) {
		put(b, "{", 1);
		for (i = 0; i < nl; i++) {
			putf(b, "%s%s=\"", i ? "," : "", l[i].name);
			put_label_value(b, l[i].value);
			put(b, "\"", 1);
		}
		if (le)
			putf(b, "%sle=\"%s\"", nl ? "," : "", le);
		put(b, "}", 1);
	}
	put(b, " ", 1);
	put_value(b, v);
	put(b, "\n", 1);
}

/**
 * metrics_sample() - one sample
 * @b: the exposition
 * @name: its family's name
 * @l: its labels (values escaped here)
 * @nl: how many
 * @value: its value
 */
void metrics_sample(struct metrics_buf *b, const char *name, const struct metrics_label *l,
		    size_t nl, double value)
{
	put_sample(b, name, "", l, nl, NULL, value);
}

/*
 * A bucket's le as OpenMetrics's "Canonical Numbers" want it (Go's %g, ".0"
 * added to an integer: 0.01, 1.0, 600.0, +Inf), in both formats: the label
 * is part of the series Prometheus stores, the same whichever format a
 * scrape negotiated.  %g's six digits suffice for the bounds here.
 */
static void canonical_le(char *le, size_t len, double bound)
{
	if (isinf(bound)) {
		snprintf(le, len, "+Inf");
		return;
	}
	snprintf(le, len, "%g", bound);
	if (!strpbrk(le, ".e"))
		strncat(le, ".0", len - strlen(le) - 1);
}

/**
 * metrics_histogram() - a histogram's samples, from its buckets' counts
 * @b: the exposition
 * @name: its family's name
 * @l: its labels
 * @nl: how many
 * @bounds: the buckets' upper bounds, ascending; +Inf is added
 * @nb: how many
 * @counts: the observations in each bucket and no lower one (@nb + 1, the
 *	last +Inf's)
 * @sum: of the observations
 *
 * Buckets are written cumulative (each counts the observations <= its
 * bound), the last is +Inf and equals _count.
 */
void metrics_histogram(struct metrics_buf *b, const char *name, const struct metrics_label *l,
		       size_t nl, const double *bounds, size_t nb, const uint64_t *counts, double sum)
{
	uint64_t c = 0;
	size_t i;

	for (i = 0; i <= nb; i++) {
		char le[32];

		c += counts[i];
		canonical_le(le, sizeof(le), i < nb ? bounds[i] : INFINITY);
		put_sample(b, name, "_bucket", l, nl, le, c);
	}
	put_sample(b, name, "_sum", l, nl, NULL, sum);
	put_sample(b, name, "_count", l, nl, NULL, c);
}

/* The sink: what only the facts tell */

static const char *const origins[METRICS_ORIGINS] = {
	[HBM_FROM_KERNEL] = "kernel", [HBM_FROM_NVML] = "nvml",
	[HBM_FROM_KMSG] = "kmsg", [HBM_FROM_AMDGPU] = "amdgpu",
};

/**
 * metrics_fact() - the metrics as a sink of the core
 * @arg: the metrics
 * @f: the fact
 *
 * A device's page counts are its identity's, kept by the module's id: they
 * start again only when the id is seen given to another identity (the
 * series is then another, its labels the new identity's).  The same device
 * seen again, after the module was reloaded, keeps counting: a counter
 * goes back to 0 only when its process, this daemon, restarts.
 */
void metrics_fact(void *arg, const struct hbm_fact *f)
{
	struct metrics_facts *x = &((struct hbm_metrics *)arg)->facts;
	uint32_t id = f->dev.id, state = hbm_event_page_state(f->event);

	if (f->type == HBM_FACT_ERROR && f->origin < METRICS_ORIGINS && f->severity <= 2)
		x->errors[f->origin][f->severity]++;
	if (id >= HBMGUARD_MAX_DEVICES)
		return;
	if (f->type == HBM_FACT_DEVICE_SEEN &&
	    strncmp(x->identity[id], f->dev.identity, sizeof(x->identity[id]))) {
		memset(x->pages[id], 0, sizeof(x->pages[id]));
		memcpy(x->identity[id], f->dev.identity, sizeof(x->identity[id]));
	}
	if (f->type == HBM_FACT_PAGES && !(f->flags & HBM_FACT_UNHEARD) && state &&
	    f->source < __HBMGUARD_SOURCE_MAX)
		x->pages[id][state][f->source] += f->count;
}

/* The exposition of the daemon */

static const char *const health_names[] = { "ok", "degraded", "rma", "reset_required" };
static const char *const state_names[__HBMGUARD_STATE_MAX] = {
	[HBMGUARD_STATE_PENDING] = "pending", [HBMGUARD_STATE_RETIRED] = "retired",
	[HBMGUARD_STATE_FAILED] = "failed",
};
static const char *const source_names[__HBMGUARD_SOURCE_MAX] = {
	"none", "ue", "ce_threshold", "poison", "admin", "restored", "driver",
};
static const char *const path_names[__HBMGUARD_PATH_MAX] = {
	"inject", "provider", "memory_failure", "mce", "edac", "nvidia_xid", "netlink",
};
static const char *const incident_states[__HBM_INCIDENT_MAX] = {
	NULL, "detected", "pausing", "isolated", "restoring", "resumed", "escalated",
};


#define DEV_LABELS(c) { { "device", (c)->name }, { "id", idbuf }, { "identity", (c)->identity } }

/* A gauge or counter of every device: @get reads it from the device's counts. */
static void per_device(struct metrics_buf *b, const struct hbm_counts *c, const char *name,
		       const char *type, const char *help,
		       double (*get)(const struct hbm_device_counts *dev))
{
	size_t i;

	metrics_family(b, name, type, help);
	for (i = 0; i < c->nr; i++) {
		char idbuf[16];
		struct metrics_label l[] = DEV_LABELS(&c->dev[i]);

		snprintf(idbuf, sizeof(idbuf), "%" PRIu32, c->dev[i].id);
		metrics_sample(b, name, l, 3, get(&c->dev[i]));
	}
}

static double get_spares_left(const struct hbm_device_counts *d)
{
	uint64_t out = (uint64_t)d->spare_used + d->spare_bad;

	return d->spare_total > out ? d->spare_total - out : 0;
}

static double get_spares_total(const struct hbm_device_counts *d)
{
	return d->spare_total;
}

static double get_ce(const struct hbm_device_counts *d)
{
	return d->ce_events;
}

static double get_ue(const struct hbm_device_counts *d)
{
	return d->ue_events;
}

static double get_dropped(const struct hbm_device_counts *d)
{
	return d->errors_dropped;
}

static double get_forgotten(const struct hbm_device_counts *d)
{
	return d->ce_forgotten;
}

static void device_series(struct metrics_buf *b, struct hbm_metrics *m, const struct hbm_counts *c)
{
	static const char pages[] = "hbmguard_device_pages";
	static const char heard[] = "hbmguard_device_page_events_pages_total";
	static const char health[] = "hbmguard_device_health";
	size_t i, s, src;

	metrics_family(b, pages, "gauge",
		       "Pages in the device's bad-page table, by state (the module's count).");
	for (i = 0; i < c->nr; i++) {
		const struct hbm_device_counts *d = &c->dev[i];
		const uint32_t n[] = { 0, d->nr_pending, d->nr_retired, d->nr_failed };
		char idbuf[16];

		snprintf(idbuf, sizeof(idbuf), "%" PRIu32, d->id);
		for (s = HBMGUARD_STATE_PENDING; s < __HBMGUARD_STATE_MAX; s++) {
			struct metrics_label l[] = { { "device", d->name }, { "id", idbuf },
						     { "identity", d->identity },
						     { "state", state_names[s] } };

			metrics_sample(b, pages, l, 4, n[s]);
		}
	}
	metrics_family(b, heard, "counter",
		       "Pages the device's events put in a state since the daemon started, by why.");
	for (i = 0; i < c->nr; i++) {
		const struct hbm_device_counts *d = &c->dev[i];
		char idbuf[16];

		if (d->id >= HBMGUARD_MAX_DEVICES)
			continue;
		snprintf(idbuf, sizeof(idbuf), "%" PRIu32, d->id);
		for (s = HBMGUARD_STATE_PENDING; s < __HBMGUARD_STATE_MAX; s++)
			for (src = 1; src < __HBMGUARD_SOURCE_MAX; src++) {
				struct metrics_label l[] = {
					{ "device", d->name }, { "id", idbuf },
					{ "identity", d->identity }, { "state", state_names[s] },
					{ "source", source_names[src] } };

				metrics_sample(b, heard, l, 5, m->facts.pages[d->id][s][src]);
			}
	}
	metrics_family(b, health, "gauge",
		       "1 for the device's health (ok, degraded, reset_required, rma), 0 for the others.");
	for (i = 0; i < c->nr; i++) {
		const struct hbm_device_counts *d = &c->dev[i];
		char idbuf[16];

		snprintf(idbuf, sizeof(idbuf), "%" PRIu32, d->id);
		for (s = 0; s < sizeof(health_names) / sizeof(health_names[0]); s++) {
			struct metrics_label l[] = { { "device", d->name }, { "id", idbuf },
						     { "identity", d->identity },
						     { "health", health_names[s] } };

			metrics_sample(b, health, l, 4, d->health == s);
		}
	}
	per_device(b, c, "hbmguard_device_spare_pages", "gauge",
		   "Spare pages in the device's pool (0 on a GPU: its driver keeps its own).",
		   get_spares_total);
	per_device(b, c, "hbmguard_device_spare_pages_left", "gauge",
		   "Spare pages neither serving a retired page nor failed.", get_spares_left);
	per_device(b, c, "hbmguard_device_corrected_errors_total", "counter",
		   "Correctable errors the module applied to the device.", get_ce);
	per_device(b, c, "hbmguard_device_uncorrected_errors_total", "counter",
		   "Uncorrectable errors and poison the module applied to the device.", get_ue);
	per_device(b, c, "hbmguard_device_errors_dropped_total", "counter",
		   "Errors reported for the device and never applied (the counts are low).",
		   get_dropped);
	per_device(b, c, "hbmguard_device_corrected_errors_forgotten_total", "counter",
		   "Correctable errors counted but no longer toward their page's threshold "
		   "(more than 10^5 pages erring at once).", get_forgotten);
}

/*
 * The module's counters (errors received and dropped by path, events
 * dropped; and each device's CE, UE and dropped counts, device_series())
 * are passed on as the module has them, not offset by the daemon: they
 * start again at 0 when the module is reloaded, its own restart, which is
 * the one reset Prometheus's convention allows a counter (rate() and
 * increase() take it as they take a restart of an exporter's process).  An
 * offset kept here would be lost with the daemon's own restart anyway, and
 * would have to guess a reload from a count that went down, which misses
 * one that went back past its old value between two scrapes.  Nothing else
 * makes them go down but a device's re-registration (its CE, UE and dropped
 * counts are the registration's, which starts at 0): the module only adds
 * to them otherwise.
 */
static void module_series(struct metrics_buf *b, struct hbm_metrics *m, const struct hbm_counts *c)
{
	static const char rx[] = "hbmguard_path_errors_received_total";
	static const char dr[] = "hbmguard_path_errors_dropped_total";
	static const char heard[] = "hbmguard_daemon_errors_heard_total";
	size_t p, o;

	if (c->have & HBM_COUNTS_PATHS) {
		metrics_family(b, rx, "counter", "Errors the module received, by intake path.");
		for (p = 0; p < __HBMGUARD_PATH_MAX; p++) {
			struct metrics_label l[] = { { "path", path_names[p] } };

			metrics_sample(b, rx, l, 1, c->received[p]);
		}
		metrics_family(b, dr, "counter",
			       "Errors the module dropped (its intake queue full), by intake path.");
		for (p = 0; p < __HBMGUARD_PATH_MAX; p++) {
			struct metrics_label l[] = { { "path", path_names[p] } };

			metrics_sample(b, dr, l, 1, c->dropped[p]);
		}
		metrics_family(b, "hbmguard_events_dropped_total", "counter",
			       "Events the module could not send (no memory).");
		metrics_sample(b, "hbmguard_events_dropped_total", NULL, 0, c->events_dropped);
	}
	metrics_family(b, heard, "counter",
		       "Errors the daemon heard, by source (kernel, nvml, kmsg, amdgpu) and severity.");
	for (o = HBM_FROM_KERNEL; o < METRICS_ORIGINS; o++)
		for (p = HBM_SEVERITY_CE; p <= HBM_SEVERITY_UE; p++) {
			struct metrics_label l[] = { { "origin", origins[o] },
						     { "severity", p == HBM_SEVERITY_CE ? "ce" : "ue" } };

			metrics_sample(b, heard, l, 2, m->facts.errors[o][p]);
		}
}

static void incident_series(struct metrics_buf *b, struct daemon *d)
{
	static const char *const outcomes[] = { "resumed", "escalated" };
	static const char ended[] = "hbmguard_incidents_total";
	static const char open[] = "hbmguard_incidents_open";
	static const char phase[] = "hbmguard_incident_phase_duration_seconds";
	size_t o, st;

	metrics_family(b, ended, "counter",
		       "Rank recoveries ended since the daemon started, by outcome.");
	for (o = 0; o < 2; o++) {
		struct metrics_label l[] = { { "outcome", outcomes[o] } };

		metrics_sample(b, ended, l, 1, d->incident_totals.ended[o]);
	}
	metrics_family(b, open, "gauge", "Rank recoveries under way.");
	metrics_sample(b, open, NULL, 0, recovery_open_incidents(d));
	metrics_family(b, phase, "histogram",
		       "How long each phase of the rank recoveries ended since the daemon started took, by outcome.");
	for (st = HBM_INCIDENT_DETECTED; st < HBM_INCIDENT_RESUMED; st++)
		for (o = 0; o < 2; o++) {
			const struct metrics_phase *p = &d->incident_totals.phase[st][o];
			struct metrics_label l[] = { { "phase", incident_states[st] },
						     { "outcome", outcomes[o] } };

			metrics_histogram(b, phase, l, 2, incident_phase_bounds,
					  sizeof(incident_phase_bounds) / sizeof(incident_phase_bounds[0]),
					  p->bucket, p->sum);
		}
}

static void store_series(struct metrics_buf *b, const struct hbm_store *s)
{
	metrics_family(b, "hbmguard_save_failures_total", "counter",
		       "Saves of a device's state file that failed (each is retried).");
	metrics_sample(b, "hbmguard_save_failures_total", NULL, 0, s->counters.failures);
	metrics_family(b, "hbmguard_last_save_timestamp_seconds", "gauge",
		       "When a state file last reached the disk (0: not since the daemon started).");
	metrics_sample(b, "hbmguard_last_save_timestamp_seconds", NULL, 0, s->counters.last_good);
	metrics_family(b, "hbmguard_unsaved_files", "gauge",
		       "State files whose last save failed.");
	metrics_sample(b, "hbmguard_unsaved_files", NULL, 0, store_unsaved(s, NULL));
}

/*
 * dcgm-exporter's names, for the GPUs NVML found, where hbmguard has the
 * same quantity DCGM reads: dashboards and alerts on them work unchanged.
 *
 * Names, types and help from NVIDIA/dcgm-exporter etc/default-counters.csv
 * (release 4.5.3-4.8.2); the labels as its gpuMetricsFormat template writes
 * them (internal/pkg/rendermetrics/render_metrics.go, same release): gpu,
 * UUID, pci_bus_id, device, modelName, and Hostname (renamed hostname after
 * that release, commit d5e5f51: not yet in a release).  The fields are
 * NVIDIA/DCGM's dcgmlib/dcgm_fields.h (v4.6.0):
 *
 *   DCGM_FI_DEV_RETIRED_SBE (390, "retired pages because of single bit
 *	errors"): NVML's pages retired for multiple single-bit errors, which
 *	hbmguard records with source CE_THRESHOLD (gpus.c: retired_ce)
 *   DCGM_FI_DEV_RETIRED_DBE (391): pages retired for a double-bit error
 *	(retired_ue)
 *   DCGM_FI_DEV_RETIRED_PENDING (392, "whether any pages are pending
 *	retirement (1=yes, 0=no)"): 1 when some page is pending, so a gauge
 *	in both formats, where default-counters.csv types it counter ("Total
 *	number of pages pending retirement."): a 0/1 value goes down
 *   DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS (393),
 *   DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS (394),
 *   DCGM_FI_DEV_ROW_REMAP_FAILURE (395): nvmlDeviceGetRemappedRows()'s, as
 *	DCGM reads them; only where NVML gave them (HBM_CTL_GPU_REMAP)
 *   DCGM_FI_DEV_XID_ERRORS (230, "the value is the specific XID error"):
 *	the last Xid heard, 0 none, as DCGM's gauge
 *
 * Not mapped: the ECC counters (DCGM_FI_DEV_ECC_*_VOL/AGG_TOTAL, commented
 * out of the default counters) — hbmguard holds NVML's aggregate total
 * only, not DCGM's volatile and per-location split; amdgpu GPUs and HBM
 * ranges have no DCGM field.  The gpu label is DCGM's GPU id, which is
 * NVML's index; the daemon does not keep that index, so it is the GPU's
 * rank among NVML's GPUs in PCI bus order, the order NVML enumerates them
 * in when nothing hides a GPU (CUDA_VISIBLE_DEVICES does not reach NVML).
 * pci_bus_id is NVML's busId as DCGM passes it on: NVML_DEVICE_PCI_BUS_ID_FMT
 * ("%08X:%02X:%02X.0", nvml.h of libnvidia-ml-dev 11.8.86), the function
 * kept.
 */
struct dcgm_field {
	const char *name, *type, *help;
	bool remap;			/* needs NVML's remapped rows */
	double (*get)(const struct hbm_ctl_gpu *g);
};

static double dcgm_sbe(const struct hbm_ctl_gpu *g)
{
	return g->retired_ce;
}

static double dcgm_dbe(const struct hbm_ctl_gpu *g)
{
	return g->retired_ue;
}

static double dcgm_pending(const struct hbm_ctl_gpu *g)
{
	return g->pending > 0;
}

static double dcgm_remap_ue(const struct hbm_ctl_gpu *g)
{
	return g->remap_uncorrected;
}

static double dcgm_remap_ce(const struct hbm_ctl_gpu *g)
{
	return g->remap_corrected;
}

static double dcgm_remap_failure(const struct hbm_ctl_gpu *g)
{
	return g->remap_failure;
}

static double dcgm_xid(const struct hbm_ctl_gpu *g)
{
	return g->last_xid;
}

static const struct dcgm_field dcgm_fields[] = {
	{ "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
	  false, dcgm_xid },
	{ "DCGM_FI_DEV_RETIRED_SBE", "counter",
	  "Total number of retired pages due to single-bit errors.", false, dcgm_sbe },
	{ "DCGM_FI_DEV_RETIRED_DBE", "counter",
	  "Total number of retired pages due to double-bit errors.", false, dcgm_dbe },
	{ "DCGM_FI_DEV_RETIRED_PENDING", "gauge",
	  "Whether any pages are pending retirement (1=yes, 0=no).", false, dcgm_pending },
	{ "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
	  "Number of remapped rows for uncorrectable errors", true, dcgm_remap_ue },
	{ "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
	  "Number of remapped rows for correctable errors", true, dcgm_remap_ce },
	{ "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
	  true, dcgm_remap_failure },
};

/* "0000:3b:00.0" as NVML wrote it: "00000000:3B:00.0". */
static void nvml_bus_id(const char *pci, char *out, size_t len)
{
	unsigned int domain, bus, dev, fn;

	if (sscanf(pci, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) == 4)
		snprintf(out, len, "%08X:%02X:%02X.%X", domain, bus, dev, fn);
	else
		snprintf(out, len, "%s", pci);
}

static void dcgm_series(struct metrics_buf *b, struct daemon *d)
{
	static struct hbm_ctl_gpu gpu[HBM_GPUS_MAX];
	char host[256] = "";
	size_t n = 0, i, j, f;

	if (!d->gpus)
		return;
	while (n < HBM_GPUS_MAX && !gpus_get(d->gpus, n, &gpu[n]))
		n++;
	gethostname(host, sizeof(host) - 1);
	for (f = 0; f < sizeof(dcgm_fields) / sizeof(dcgm_fields[0]); f++) {
		const struct dcgm_field *x = &dcgm_fields[f];
		bool family = false;

		for (i = 0; i < n; i++) {
			const struct hbm_ctl_gpu *g = &gpu[i];
			char index[16], bus[32], dev[24];
			unsigned int rank = 0;

			if (g->vendor != HBM_CTL_GPU_NVML ||
			    (x->remap && !(g->flags & HBM_CTL_GPU_REMAP)))
				continue;
			for (j = 0; j < n; j++)
				rank += gpu[j].vendor == HBM_CTL_GPU_NVML &&
					strcmp(gpu[j].pci, g->pci) < 0;
			snprintf(index, sizeof(index), "%u", rank);
			snprintf(dev, sizeof(dev), "nvidia%u", rank);
			nvml_bus_id(g->pci, bus, sizeof(bus));
			{
				struct metrics_label l[] = {
					{ "gpu", index }, { "UUID", g->identity },
					{ "pci_bus_id", bus }, { "device", dev },
					{ "modelName", g->model }, { "Hostname", host } };

				if (!family)
					metrics_family(b, x->name, x->type, x->help);
				family = true;
				metrics_sample(b, x->name, l, host[0] ? 6 : 5, x->get(g));
			}
		}
	}
}

/* The module's counts of the last metrics_gather(): one dump for both formats' pages. */
static struct hbm_counts counts;	/* 256 devices: too big for the stack */
static int counts_err = -ENODATA;

/**
 * metrics_gather() - ask the module for its counts, for metrics_render()
 * @m: the metrics
 *
 * The blocking part of a render (a netlink dump and a stats request), done
 * once for the pages of both formats: the rest is the daemon's own memory.
 */
void metrics_gather(struct hbm_metrics *m)
{
	counts_err = core_counts(m->d->core, &counts);
	if (counts_err)
		counts.nr = 0;
}

/**
 * metrics_render() - the daemon's exposition, from the last metrics_gather()
 * @m: the metrics
 * @b: appended to, in its format
 */
void metrics_render(struct hbm_metrics *m, struct metrics_buf *b)
{
	struct daemon *d = m->d;

	metrics_family(b, "hbmguard_up", "gauge",
		       "1 when the module answered the daemon's questions for this scrape.");
	metrics_sample(b, "hbmguard_up", NULL, 0, !counts_err);
	device_series(b, m, &counts);
	module_series(b, m, &counts);
	incident_series(b, d);
	store_series(b, d->store);
	dcgm_series(b, d);
	metrics_family(b, "hbmguard_scrapes_total", "counter",
		       "GET scrapes up to this page's rendering, its own included (a page is served for a second).");
	metrics_sample(b, "hbmguard_scrapes_total", NULL, 0, m->scrapes);
}

/* The server */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

/*
 * The exposition, gathered at most once per .keep_us and written then in
 * both formats from the same counts, so that clients that alternate their
 * Accept header cost no more: a gather is a blocking device dump and stats
 * request to the module, and nothing bounds how often a peer may ask.
 * Requests within it get the same page (each a copy: the next render must
 * not pull one from under a response still being sent).  Return: false
 * when the page of @format is past its bound (or no memory).
 */
static bool fresh_page(struct hbm_metrics *m, enum metrics_format format)
{
	uint64_t now = now_us();
	size_t f;

	if (m->pages_at && now - m->pages_at < m->keep_us)
		return m->pages[format].p != NULL;	/* a render that failed is kept as long */
	m->gathers++;
	if (!m->render)
		metrics_gather(m);
	m->pages_at = now;
	for (f = 0; f < __METRICS_FORMATS; f++) {
		struct metrics_page *page = &m->pages[f];
		struct metrics_buf b;

		metrics_buf_init(&b, METRICS_MAX_BYTES);
		b.format = f;
		(m->render ? m->render : metrics_render)(m, &b);
		metrics_end(&b);
		free(page->p);
		*page = (struct metrics_page){ 0 };
		if (b.failed) {
			fprintf(stderr, "<4>hbmguardd: metrics: the exposition is past %u bytes, or no memory: answered 500\n",
				METRICS_MAX_BYTES);
			metrics_buf_free(&b);
			continue;
		}
		page->p = b.p ? b.p : strdup("");
		page->len = b.len;
	}
	return m->pages[format].p != NULL;
}

static void forget_pages(struct hbm_metrics *m)
{
	size_t f;

	for (f = 0; f < __METRICS_FORMATS; f++) {
		free(m->pages[f].p);
		m->pages[f] = (struct metrics_page){ 0 };
	}
	m->pages_at = 0;
}

/*
 * A qvalue, read leniently: RFC 9110's grammar (section 12.4.2: "0" or "1",
 * at most three decimals) is what a client should send, but real ones send
 * ".2" (the JDK's HttpURLConnection) or more decimals, and their meaning is
 * plain.  In thousandths; a positive q below 0.001 is 1, not a refusal:
 * only a q that reads as 0 refuses.  One that is no number in [0, 1] ("x",
 * "2") counts as 0.001, RFC 9110's lowest acceptable q: the client did not
 * refuse the range, so it is not read as q=0, and whatever it says clearly
 * outranks it.
 */
static int read_q(const char *v, size_t vl)
{
	char num[16];
	size_t i, digits = 0, dots = 0;
	double q;

	if (!vl || vl >= sizeof(num))
		return 1;
	for (i = 0; i < vl; i++) {
		if (v[i] >= '0' && v[i] <= '9')
			digits++;
		else if (v[i] == '.')
			dots++;
		else
			return 1;
	}
	if (!digits || dots > 1)
		return 1;
	memcpy(num, v, vl);
	num[vl] = 0;
	q = strtod(num, NULL);
	if (q > 1)
		return 1;
	if (q == 0)
		return 0;
	return q * 1000 < 1 ? 1 : (int)(q * 1000 + 0.5);
}

/*
 * How much a media range of an Accept header (RFC 9110 section 12.5.1)
 * says for @format: its q in thousandths, -1 when it does not match; in
 * *@specific how closely it matched (3: type, subtype and the version
 * served; 2: type and subtype; 1: the type with any subtype; 0: any type,
 * a bare "*" too, which the JDK sends), the closest range being the
 * one that counts, whatever the order.  A version parameter must be the
 * one served; other parameters (charset: UTF-8 is all there is), and a
 * parameter without a value, are not looked at.
 */
static int range_q(const char *r, size_t len, enum metrics_format format, int *specific)
{
	static const char *const types[] = { "text/plain", "application/openmetrics-text" };
	static const char *const versions[] = { "0.0.4", "1.0.0" };
	const char *type = types[format], *slash = strchr(type, '/'), *p, *end = r + len;
	size_t tl;
	int q = 1000;

	while (r < end && (*r == ' ' || *r == '\t'))
		r++;
	for (p = r; p < end && *p != ';' && *p != ' ' && *p != '\t'; p++)
		;
	tl = p - r;
	if ((tl == 3 && !strncmp(r, "*/*", 3)) || (tl == 1 && *r == '*'))
		*specific = 0;
	else if (tl == (size_t)(slash - type) + 2 && !strncasecmp(r, type, slash - type + 1) &&
		 r[tl - 1] == '*')
		*specific = 1;
	else if (tl == strlen(type) && !strncasecmp(r, type, tl))
		*specific = 2;
	else
		return -1;
	while (p < end) {		/* ;name=value, each */
		const char *name, *value, *next;
		size_t nl, vl;

		while (p < end && (*p == ';' || *p == ' ' || *p == '\t'))
			p++;
		name = p;
		while (p < end && *p != '=' && *p != ';')
			p++;
		nl = p - name;
		while (nl && (name[nl - 1] == ' ' || name[nl - 1] == '\t'))
			nl--;
		if (p == end || *p != '=')
			continue;
		for (value = ++p; value < end && (*value == ' ' || *value == '\t'); value++)
			;
		for (next = value; next < end && *next != ';'; next++)
			;
		for (vl = next - value; vl && (value[vl - 1] == ' ' || value[vl - 1] == '\t'); vl--)
			;
		if (vl >= 2 && value[0] == '"' && value[vl - 1] == '"') {
			value++;
			vl -= 2;
		}
		p = next;
		if (nl == 1 && (*name == 'q' || *name == 'Q')) {
			q = read_q(value, vl);
		} else if (nl == 7 && !strncasecmp(name, "version", 7) && *specific == 2) {
			if (vl != strlen(versions[format]) || strncmp(value, versions[format], vl))
				return -1;
			*specific = 3;
		}
	}
	return q;
}

/**
 * metrics_negotiate() - the format an Accept header asks for
 * @accept: the header's value, or NULL (none: the text format)
 *
 * Each format gets the q of the closest media range that matches it
 * (RFC 9110 section 12.5.1); the higher q wins, a tie goes to the format
 * named more closely, then to the text format.  q=0 refuses a format.
 * Prometheus's own scraper asks for OpenMetrics first (scrape/scrape.go,
 * v2.42.0, the release Debian bookworm ships: scrapeAcceptHeader =
 * "application/openmetrics-text;version=1.0.0,application/openmetrics-text;
 * version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5," and any type at
 * q=0.1): OpenMetrics 1.0.0, which it parses as it parses 0.0.1, the text
 * format otherwise.
 *
 * When no range accepts either format (text/html only, OpenMetrics 0.0.1
 * only), the text format is served all the same, as Prometheus's own
 * client libraries do (client_golang's expfmt.Negotiate, client_python's
 * choose_encoder): a scraper that names no type of ours still reads it,
 * and RFC 9110 section 12.5.1 lets a server disregard the header.  Only a
 * format the client refused (q=0) is never served: the other one then, and
 * 406 when it refused both.
 *
 * Return: enum metrics_format, or -1: both formats refused (a 406).
 */
int metrics_negotiate(const char *accept)
{
	int q[__METRICS_FORMATS], spec[__METRICS_FORMATS], f, best = -1;

	if (!accept)
		return METRICS_TEXT;
	for (f = 0; f < __METRICS_FORMATS; f++) {
		const char *r = accept;

		q[f] = 0;
		spec[f] = -1;
		while (*r) {
			size_t len = strcspn(r, ",");
			int s, rq = range_q(r, len, f, &s);

			if (rq >= 0 && s > spec[f]) {
				spec[f] = s;
				q[f] = rq;
			}
			r += len + (r[len] == ',');
		}
		if (q[f] > 0 && (best < 0 || q[f] > q[best] ||
				 (q[f] == q[best] && spec[f] > spec[best])))
			best = f;
	}
	for (f = 0; best < 0 && f < __METRICS_FORMATS; f++)
		if (spec[f] < 0)	/* not matched, so not refused */
			best = f;
	return best;
}

static const char *const content_types[__METRICS_FORMATS] = {
	[METRICS_TEXT] = "text/plain; version=0.0.4; charset=utf-8",
	[METRICS_OPENMETRICS] = "application/openmetrics-text; version=1.0.0; charset=utf-8",
};

/*
 * MHD_AccessHandlerCallback (microhttpd.h): called once the headers are
 * in; a GET has no body, so the first call answers.  A HEAD is answered as
 * the GET would be, its status and Content-Length the same (RFC 9110
 * section 9.3.2), from the same page, rendered if none is fresh; only
 * libmicrohttpd leaves out the body, and it is no scrape.  The format is the Accept
 * header's (metrics_negotiate()); a response that depends on it says so
 * (Vary), for a cache between.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	static char not_found[] = "not found: the metrics are at /metrics\n";
	static char not_allowed[] = "only GET and HEAD\n";
	static char too_big[] = "the exposition is past its bound\n";
	static char not_acceptable[] = "served as text/plain; version=0.0.4 or "
				       "application/openmetrics-text; version=1.0.0 only\n";
	struct hbm_metrics *m = cls;
	struct MHD_Response *r;
	unsigned int code = MHD_HTTP_OK;
	enum MHD_Result ret;
	int format = METRICS_TEXT;

	(void)version;
	(void)upload_data;
	(void)req_cls;
	if (*upload_data_size)		/* a body: not ours to read */
		return MHD_NO;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = sym_MHD_create_response_from_buffer(strlen(not_allowed), not_allowed,
							MHD_RESPMEM_PERSISTENT);
	} else if (strcmp(url, "/metrics") && strcmp(url, "/")) {
		code = MHD_HTTP_NOT_FOUND;
		r = sym_MHD_create_response_from_buffer(strlen(not_found), not_found,
							MHD_RESPMEM_PERSISTENT);
	} else if ((format = metrics_negotiate(sym_MHD_lookup_connection_value(conn,
						MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT))) < 0) {
		code = MHD_HTTP_NOT_ACCEPTABLE;
		r = sym_MHD_create_response_from_buffer(strlen(not_acceptable), not_acceptable,
							MHD_RESPMEM_PERSISTENT);
	} else {
		struct metrics_page *page = &m->pages[format];

		if (strcmp(method, MHD_HTTP_METHOD_HEAD))
			m->scrapes++;
		if (!fresh_page(m, format))
			code = MHD_HTTP_INTERNAL_SERVER_ERROR;
		r = code == MHD_HTTP_OK ?
			sym_MHD_create_response_from_buffer(page->len, page->p ? page->p : "",
							    MHD_RESPMEM_MUST_COPY) :
			sym_MHD_create_response_from_buffer(strlen(too_big), too_big,
							    MHD_RESPMEM_PERSISTENT);
	}
	if (!r)
		return MHD_NO;
	sym_MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, code == MHD_HTTP_OK ?
				    content_types[format] : "text/plain");
	sym_MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT);
	ret = sym_MHD_queue_response(conn, code, r);
	sym_MHD_destroy_response(r);
	return ret;
}

static int arm(struct hbm_metrics *m);

/*
 * MHD_NotifyConnectionCallback: a connection accepted, or closed.  One
 * that cannot be noted (no slot: never past MHD_OPTION_CONNECTION_LIMIT)
 * is shut down at once rather than left without a deadline.
 */
static void on_connection(void *cls, struct MHD_Connection *conn, void **ctx,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct hbm_metrics *m = cls;
	const union MHD_ConnectionInfo *info;
	struct metrics_conn *x = NULL;
	size_t i;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		x = *ctx;
		if (x)
			x->used = false;
		*ctx = NULL;
		return;
	}
	info = sym_MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return;
	for (i = 0; i < METRICS_CONNECTIONS && !x; i++)
		if (!m->conns[i].used)
			x = &m->conns[i];
	if (!x) {
		shutdown(info->connect_fd, SHUT_RDWR);
		return;
	}
	*x = (struct metrics_conn){ .used = true, .fd = info->connect_fd, .start = now_us() };
	*ctx = x;
}

/* Shut down the connections past their deadline; the earliest one to come, or UINT64_MAX. */
static uint64_t expire(struct hbm_metrics *m)
{
	uint64_t now = now_us(), next = UINT64_MAX;
	size_t i;

	for (i = 0; i < METRICS_CONNECTIONS; i++) {
		struct metrics_conn *x = &m->conns[i];

		if (!x->used || x->shut)
			continue;
		if (now - x->start >= m->deadline_us) {
			shutdown(x->fd, SHUT_RDWR);
			x->shut = true;
		} else if (x->start + m->deadline_us < next) {
			next = x->start + m->deadline_us;
		}
	}
	return next;
}

static unsigned int connections(struct hbm_metrics *m)
{
	const union MHD_DaemonInfo *info =
		sym_MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

/*
 * MHD_run(): whatever is ready, without blocking; then its next deadline.
 * At the bound of connections libmicrohttpd (0.9.75) stops listening; a
 * run that closes one does not listen again, nor does MHD_get_timeout()
 * ask for the run that would: a client waiting in the backlog would wait
 * for some other event (tests/unit/check_metrics.c found it).  So a run
 * that went below the bound is followed by another.
 */
static int on_io(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct hbm_metrics *m = arg;
	unsigned int before = connections(m);

	(void)s;
	(void)fd;
	(void)revents;
	expire(m);
	sym_MHD_run(m->mhd);
	if (before >= METRICS_CONNECTIONS && connections(m) < METRICS_CONNECTIONS)
		sym_MHD_run(m->mhd);
	return arm(m);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *arg)
{
	(void)usec;
	return on_io(s, -1, 0, arg);
}

/*
 * MHD_get_timeout(): "MHD_run() must be called not later than timeout
 * millisecond" when it says MHD_YES; MHD_NO: nothing is due.  Or earlier,
 * for the next connection's deadline.
 */
static int arm(struct hbm_metrics *m)
{
	uint64_t at = expire(m), now = now_us();
	MHD_UNSIGNED_LONG_LONG ms;

	if (sym_MHD_get_timeout(m->mhd, &ms) == MHD_YES) {
		if (ms > 3600 * 1000ULL)
			ms = 3600 * 1000ULL;
		if (now + ms * 1000 < at)
			at = now + ms * 1000;
	}
	if (at == UINT64_MAX)
		return sd_event_source_set_enabled(m->timer, SD_EVENT_OFF);
	sd_event_source_set_time(m->timer, at);
	return sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
}

/**
 * metrics_log() - one of libmicrohttpd's complaints, to the journal
 * @m: the metrics
 * @now: CLOCK_MONOTONIC, us
 * @msg: the line
 *
 * Its complaints are mostly about what peers sent (a request cut short, a
 * header past the memory bound), and any peer that reaches the port may
 * send as many: one line a second at most, the count of those left out
 * said before the next.
 */
void metrics_log(struct hbm_metrics *m, uint64_t now, const char *msg)
{
	uint64_t missed;

	if (!hbm_ratelimit(&m->log, 1000000, 1, now, &missed))
		return;
	if (missed)
		fprintf(stderr, "<4>hbmguardd: metrics: %" PRIu64 " more such lines suppressed\n",
			missed);
	fprintf(stderr, "<4>hbmguardd: metrics: %s\n", msg);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = 0;
	metrics_log(cls, now_us(), msg);
}

/*
 * The listening socket, made here rather than by MHD_start_daemon() with
 * MHD_OPTION_SOCK_ADDR, which answers NULL whatever failed: bind()'s own
 * errno (EADDRINUSE, EACCES, EADDRNOTAVAIL) is what the operator needs.  As
 * libmicrohttpd would make it: IPv6 only for an IPv6 address (MHD_USE_IPv6
 * without MHD_USE_DUAL_STACK, microhttpd.h 0.9.75 lines 1284-1291); and
 * SO_REUSEADDR, so that a restart is not refused for the last run's
 * connections in TIME_WAIT (a socket still listening is refused all the same).
 */
static int listen_on(const struct sockaddr *addr, socklen_t len)
{
	int one = 1, err, fd;

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (addr->sa_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
	    bind(fd, addr, len) || listen(fd, SOMAXCONN)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/**
 * metrics_listen() - serve the metrics from @loop
 * @m: the metrics (.d and .render as the caller wants them)
 * @loop: the event loop that drives libmicrohttpd
 * @addr: where to listen, or NULL with @fd
 * @len: its length
 * @fd: a listening socket to take over (systemd's), or -1
 *
 * Return: 0, or a negative errno (bind()'s when the address is the trouble;
 * -ELIBACC without libmicrohttpd, which is loaded here: mhd_dl.h).
 */
int metrics_listen(struct hbm_metrics *m, sd_event *loop, const struct sockaddr *addr,
		   socklen_t len, int fd)
{
	const union MHD_DaemonInfo *info;
	unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	bool own = fd < 0;
	char why[256];
	int err;

	m->loop = loop;
	m->no_library = hbm_mhd_load(why, sizeof(why)) != 0;
	if (m->no_library) {
		fprintf(stderr, "<3>hbmguardd: metrics: %s\n", why);
		return -ELIBACC;
	}
	if (own) {
		fd = listen_on(addr, len);
		if (fd < 0)
			return fd;
		if (addr->sa_family == AF_INET6)
			flags |= MHD_USE_IPv6;
	}
	/*
	 * MHD_start_daemon(): the logger first (MHD says so when it is not),
	 * port 0 with MHD_OPTION_LISTEN_SOCKET, which overrides it; no default
	 * handler (dh) but ours.
	 */
	errno = 0;
	m->mhd = sym_MHD_start_daemon(flags, 0, NULL, NULL, on_request, m,
			MHD_OPTION_EXTERNAL_LOGGER, mhd_log, m,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
			MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTIONS,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONNECTION_MEMORY,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_TIMEOUT_S,
			MHD_OPTION_END);
	if (!m->mhd) {
		err = errno ? -errno : -EIO;	/* mhd_log() said why */
		/* whether a failed start closed the socket it was given is not said */
		if (own && fcntl(fd, F_GETFD) >= 0)
			close(fd);
		return err;
	}
	info = sym_MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		metrics_stop(m);
		return -EINVAL;
	}
	if (!m->keep_us)
		m->keep_us = METRICS_KEEP_US;
	if (!m->deadline_us)
		m->deadline_us = METRICS_DEADLINE_US;
	/*
	 * Below the daemon's own sources (priority 0): the kernel's events and
	 * the control socket's requests are dispatched first, a scrape when
	 * nothing of theirs is pending.
	 */
	err = sd_event_add_io(loop, &m->io, info->epoll_fd, EPOLLIN, on_io, m);
	if (!err)
		err = sd_event_source_set_priority(m->io, SD_EVENT_PRIORITY_IDLE);
	if (!err)
		err = sd_event_add_time(loop, &m->timer, CLOCK_MONOTONIC, UINT64_MAX,
					1 /* us: 0 would be sd-event's 250 ms, past arm()'s "not later" */,
					on_timer, m);
	if (!err)
		err = sd_event_source_set_priority(m->timer, SD_EVENT_PRIORITY_IDLE);
	if (!err)
		err = arm(m);
	if (err < 0) {
		metrics_stop(m);
		return err;
	}
	info = sym_MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	return 0;
}

/**
 * metrics_start() - the endpoint, where the configuration or systemd puts it
 * @m: the metrics
 * @d: the daemon
 * @loop: its loop
 *
 * Return: 0 (also when off), or a negative errno: it could not listen.
 */
int metrics_start(struct hbm_metrics *m, struct daemon *d, sd_event *loop)
{
	const struct hbm_metrics_config *c = &d->cfg.metrics;
	int fd = passed_socket("metrics"), err;

	m->d = d;
	m->loop = loop;		/* for a reload that turns it on */
	if (fd < 0 && !c->addr_len)
		return 0;
	err = metrics_listen(m, loop, fd < 0 ? (const struct sockaddr *)&c->addr : NULL,
			     c->addr_len, fd);
	if (!err)
		fprintf(stderr, "<6>hbmguardd: metrics at http://%s/metrics\n",
			fd >= 0 ? "(systemd's socket)" : c->listen);
	return err;
}

/**
 * metrics_reconfigure() - after a reload: listen where the configuration now says
 * @m: the metrics
 * @old: the Listen= in force before it
 *
 * The same Listen= is tried again when it could not be listened on (the
 * port was taken at start): a reload is what the error message promised.
 * A socket systemd passed is kept: it is the unit's to move, and one a
 * failed start may have closed is not taken up again under its number;
 * but one never handed over, libmicrohttpd missing, is tried again.
 *
 * Return: 0, or a negative errno: it could not listen (and does not).
 */
int metrics_reconfigure(struct hbm_metrics *m, const char *old)
{
	if ((passed_socket("metrics") >= 0 && !m->no_library) ||
	    (m->mhd && !strcmp(old, m->d->cfg.metrics.listen)))
		return 0;
	metrics_stop(m);
	return metrics_start(m, m->d, m->loop);
}

/**
 * metrics_stop() - no more scrapes
 * @m: the metrics
 */
void metrics_stop(struct hbm_metrics *m)
{
	m->io = sd_event_source_disable_unref(m->io);
	m->timer = sd_event_source_disable_unref(m->timer);
	if (m->mhd)
		sym_MHD_stop_daemon(m->mhd);
	m->mhd = NULL;
	memset(m->conns, 0, sizeof(m->conns));
	forget_pages(m);
}
