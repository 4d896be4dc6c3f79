// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the metrics endpoint (daemon/metrics.c): the exposition
 * writer, the daemon's exposition from a source of the test's own, and the
 * server on 127.0.0.1 driven by an sd-event loop as hbmguardd drives it,
 * scraped over a socket; every exposition through Debian's
 * `promtool check metrics` (package prometheus, scripts/deps.sh).
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>


#include "daemon.h"
#include "gpus.h"
#include "metrics.h"
#include "mhd_dl.h"
#include "recovery.h"
#include "store.h"
#include "unit.h"

/* What a hostile identity would do to a naive writer: end the value, add a label, a line. */
#define HOSTILE	"evil\"} 1\nhbmguard_up 0\n# \\"

static char *render_text(void (*fill)(struct metrics_buf *b))
{
	static struct metrics_buf b;

	metrics_buf_free(&b);
	metrics_buf_init(&b, METRICS_MAX_BYTES);
	fill(&b);
	ck_assert(!b.failed);
	return b.p;
}

static void fill_escapes(struct metrics_buf *b)
{
	const struct metrics_label l[] = { { "device", "a\\b\"c\nd" }, { "id", "7" } };

	metrics_family(b, "hbmguard_x_total", "counter", "Help with \\ and\nnewline and \"quotes\".");
	metrics_sample(b, "hbmguard_x_total", l, 2, 3);
	metrics_sample(b, "hbmguard_x_total", NULL, 0, 18446744073709551615.0);
	metrics_sample(b, "hbmguard_x_total", NULL, 0, 0.25);
	metrics_sample(b, "hbmguard_x_total", NULL, 0, -1);
	metrics_sample(b, "hbmguard_x_total", NULL, 0, 1e300);
}

START_TEST(writer_escapes)
{
	ck_assert_str_eq(render_text(fill_escapes),
			 "# HELP hbmguard_x_total Help with \\\\ and\\nnewline and \"quotes\".\n"
			 "# TYPE hbmguard_x_total counter\n"
			 "hbmguard_x_total{device=\"a\\\\b\\\"c\\nd\",id=\"7\"} 3\n"
			 "hbmguard_x_total 1.8446744073709552e+19\n"
			 "hbmguard_x_total 0.25\n"
			 "hbmguard_x_total -1\n"
			 "hbmguard_x_total 1.0000000000000001e+300\n");
}
END_TEST

static void fill_histogram(struct metrics_buf *b)
{
	/* observations 0.5, 1, 3, 10: two in the first bucket, one in each other */
	const double bounds[] = { 1, 2.5 };
	const uint64_t counts[] = { 2, 1, 1 }, none[3] = { 0 };
	const struct metrics_label l[] = { { "phase", "pausing" } };

	metrics_family(b, "hbmguard_h_seconds", "histogram", "h");
	metrics_histogram(b, "hbmguard_h_seconds", l, 1, bounds, 2, counts, 14.5);
	metrics_histogram(b, "hbmguard_h_seconds", NULL, 0, bounds, 2, none, 0);
}

/*
 * Cumulative buckets, +Inf equal to _count, an empty one all zeros; le in
 * OpenMetrics's canonical form in both formats (1.0, not 1).
 */
START_TEST(writer_histogram)
{
	ck_assert_str_eq(render_text(fill_histogram),
			 "# HELP hbmguard_h_seconds h\n"
			 "# TYPE hbmguard_h_seconds histogram\n"
			 "hbmguard_h_seconds_bucket{phase=\"pausing\",le=\"1.0\"} 2\n"
			 "hbmguard_h_seconds_bucket{phase=\"pausing\",le=\"2.5\"} 3\n"
			 "hbmguard_h_seconds_bucket{phase=\"pausing\",le=\"+Inf\"} 4\n"
			 "hbmguard_h_seconds_sum{phase=\"pausing\"} 14.5\n"
			 "hbmguard_h_seconds_count{phase=\"pausing\"} 4\n"
			 "hbmguard_h_seconds_bucket{le=\"1.0\"} 0\n"
			 "hbmguard_h_seconds_bucket{le=\"2.5\"} 0\n"
			 "hbmguard_h_seconds_bucket{le=\"+Inf\"} 0\n"
			 "hbmguard_h_seconds_sum 0\n"
			 "hbmguard_h_seconds_count 0\n");
}
END_TEST

static void fill_openmetrics(struct metrics_buf *b)
{
	b->format = METRICS_OPENMETRICS;
	fill_escapes(b);
	metrics_family(b, "DCGM_FI_DEV_RETIRED_SBE", "counter", "d");
	metrics_sample(b, "DCGM_FI_DEV_RETIRED_SBE", NULL, 0, 1);
	metrics_family(b, "hbmguard_last_save_timestamp_seconds", "gauge", "t");
	metrics_sample(b, "hbmguard_last_save_timestamp_seconds", NULL, 0, 5);
	metrics_end(b);
}

/*
 * OpenMetrics: a counter's family without _total, its samples with it; one
 * without (dcgm-exporter's names) gauge, its name kept; UNIT for seconds;
 * quotes escaped in HELP too; # EOF last.
 */
START_TEST(writer_openmetrics)
{
	ck_assert_str_eq(render_text(fill_openmetrics),
			 "# TYPE hbmguard_x counter\n"
			 "# HELP hbmguard_x Help with \\\\ and\\nnewline and \\\"quotes\\\".\n"
			 "hbmguard_x_total{device=\"a\\\\b\\\"c\\nd\",id=\"7\"} 3\n"
			 "hbmguard_x_total 1.8446744073709552e+19\n"
			 "hbmguard_x_total 0.25\n"
			 "hbmguard_x_total -1\n"
			 "hbmguard_x_total 1.0000000000000001e+300\n"
			 "# TYPE DCGM_FI_DEV_RETIRED_SBE gauge\n"
			 "# HELP DCGM_FI_DEV_RETIRED_SBE d\n"
			 "DCGM_FI_DEV_RETIRED_SBE 1\n"
			 "# TYPE hbmguard_last_save_timestamp_seconds gauge\n"
			 "# UNIT hbmguard_last_save_timestamp_seconds seconds\n"
			 "# HELP hbmguard_last_save_timestamp_seconds t\n"
			 "hbmguard_last_save_timestamp_seconds 5\n"
			 "# EOF\n");
}
END_TEST

/*
 * Accept headers: Prometheus's own, q values, q=0 refusing, wildcards,
 * junk; what names neither format gets the text one, 406 only when both
 * are refused.
 */
START_TEST(negotiate_accept)
{
	static const struct {
		const char *accept;
		int want;
	} cases[] = {
		/* scrape/scrape.go's scrapeAcceptHeader, prometheus v2.42.0 */
		{ "application/openmetrics-text;version=1.0.0,"
		  "application/openmetrics-text;version=0.0.1;q=0.75,"
		  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1", METRICS_OPENMETRICS },
		/* and its scrapeAcceptHeaderWithProtobuf: no protobuf here, OpenMetrics next */
		{ "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
		  "encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,"
		  "application/openmetrics-text;version=0.0.1;q=0.75,"
		  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1", METRICS_OPENMETRICS },
		{ NULL, METRICS_TEXT },
		{ "", METRICS_TEXT },
		{ "*/*", METRICS_TEXT },		/* curl's */
		{ "application/openmetrics-text", METRICS_OPENMETRICS },
		{ "Application/OpenMetrics-Text ; Version=\"1.0.0\"", METRICS_OPENMETRICS },
		{ "application/openmetrics-text, */*", METRICS_OPENMETRICS },	/* named beats matched */
		{ "application/openmetrics-text;q=0.4, text/plain;q=0.5", METRICS_TEXT },
		{ "application/openmetrics-text;q=0, */*", METRICS_TEXT },
		{ "text/*;q=0, */*;q=0.2", METRICS_OPENMETRICS },
		{ "text/plain;q=0.001,application/*;q=0.0", METRICS_TEXT },
		/* OpenMetrics 0.0.1 only, text in another version, another type: text */
		{ "application/openmetrics-text;version=0.0.1", METRICS_TEXT },
		{ "text/plain;version=0.0.5", METRICS_TEXT },
		{ "application/json", METRICS_TEXT },
		{ ",", METRICS_TEXT },
		/* Java's HttpURLConnection, its default: a bare * and a q without its 0 */
		{ "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", METRICS_TEXT },
		{ "text/html, *; q=.2, application/openmetrics-text;q=.3", METRICS_OPENMETRICS },
		{ "text/plain;q=.1, application/openmetrics-text;q=.2", METRICS_OPENMETRICS },
		/* refused: the other format, or 406 when both are */
		{ "text/plain;q=0", METRICS_OPENMETRICS },
		{ "*/*;q=0", -1 },
		{ "*;q=0, text/html", -1 },
		{ "text/*;q=0, application/openmetrics-text;q=0.000, application/json", -1 },
		/* a version served is closer than the bare type, whatever the order */
		{ "application/openmetrics-text;q=0.1, "
		  "application/openmetrics-text;version=1.0.0;q=0.9, text/plain;q=0.5",
		  METRICS_OPENMETRICS },
		{ "text/plain;q=1, text/plain;version=0.0.4;q=0", METRICS_OPENMETRICS },
		{ "text/plain;version=0.0.4;q=0, text/plain;q=1, "
		  "application/openmetrics-text;q=0", -1 },
		/* a q past three decimals, or no qvalue: acceptable, at the least q */
		{ "application/openmetrics-text;q=0.0001", METRICS_OPENMETRICS },
		{ "application/openmetrics-text;q=0.0001, text/plain;q=0.001", METRICS_TEXT },
		{ "application/openmetrics-text;q=0.0001, */*;q=0.001", METRICS_OPENMETRICS },
		{ "application/openmetrics-text;q=0.0001, text/plain;q=0.002", METRICS_TEXT },
		{ "application/openmetrics-text;q=2, text/plain;q=0.1", METRICS_TEXT },
		{ "application/openmetrics-text;q=1.5", METRICS_OPENMETRICS },
		{ "application/openmetrics-text;q=x", METRICS_OPENMETRICS },
		{ "application/openmetrics-text;q=, text/plain;q=0.002", METRICS_TEXT },
		{ "application/openmetrics-text;q=1e-1, text/plain;q=0.002", METRICS_TEXT },
		{ "text/plain;charset, application/openmetrics-text;q=0.5", METRICS_TEXT },
		{ ",,;,text/plain;q=1.000", METRICS_TEXT },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(metrics_negotiate(cases[i].accept) == cases[i].want,
			      "Accept: %s: %d, not %d", cases[i].accept ? cases[i].accept : "(none)",
			      metrics_negotiate(cases[i].accept), cases[i].want);
}
END_TEST

/* Past its bound the exposition fails whole: never half a document served. */
START_TEST(writer_bound)
{
	struct metrics_buf b;
	const struct metrics_label l[] = { { "identity", HOSTILE } };
	int i;

	metrics_buf_init(&b, 1000);
	metrics_family(&b, "hbmguard_x", "gauge", "x");
	for (i = 0; i < 100 && !b.failed; i++)
		metrics_sample(&b, "hbmguard_x", l, 1, i);
	ck_assert(b.failed);
	ck_assert_uint_le(b.len, 1000);
	metrics_buf_free(&b);
}
END_TEST

/* What @fn printed to stderr. */
static const char *stderr_of(void (*fn)(void))
{
	static char out[4096];
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	ck_assert_ptr_nonnull(f);
	fflush(stderr);
	dup2(fileno(f), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	fclose(f);
	return out;
}

static void complain(void)
{
	struct hbm_metrics lm = { 0 };
	int i;

	for (i = 0; i < 100; i++)
		metrics_log(&lm, 5000000, "a");
	metrics_log(&lm, 5999999, "b");
	metrics_log(&lm, 6000000, "c");
	metrics_log(&lm, 6000001, "d");
	metrics_log(&lm, 9000000, "e");
}

/* A peer's bad requests make one line a second at most, the rest counted. */
START_TEST(log_limited)
{
	ck_assert_str_eq(stderr_of(complain),
			 "<4>hbmguardd: metrics: a\n"
			 "<4>hbmguardd: metrics: 100 more such lines suppressed\n"
			 "<4>hbmguardd: metrics: c\n"
			 "<4>hbmguardd: metrics: 1 more such lines suppressed\n"
			 "<4>hbmguardd: metrics: e\n");
}
END_TEST

/* A daemon of the test's own: its source counts, its GPUs, its incidents. */
static struct daemon d;
static struct hbmd_core core;
static struct hbm_store store;
static struct hbm_gpus gpus;
static struct incident incidents[3];
static struct hbm_metrics m;
static uint32_t retired = 3;
static pid_t slow[METRICS_CONNECTIONS];	/* killed by the teardown, whatever failed */

static int fake_counts(void *ctx, struct hbm_counts *out)
{
	struct hbm_device_counts *dev = &out->dev[0];

	(void)ctx;
	out->nr = 2;
	dev->id = 0;
	snprintf(dev->name, sizeof(dev->name), "sim0");
	snprintf(dev->identity, sizeof(dev->identity), "%s", HOSTILE);
	dev->spare_total = 64;
	dev->spare_used = 3;
	dev->spare_bad = 1;
	dev->nr_retired = retired;
	dev->nr_pending = 1;
	dev->ce_events = 12;
	dev->ce_forgotten = 7;
	dev->ue_events = 2;
	dev->health = HBMGUARD_HEALTH_DEGRADED;
	dev = &out->dev[1];
	dev->id = 5;
	dev->kind = HBMGUARD_KIND_GPU;
	snprintf(dev->name, sizeof(dev->name), "nvidia-0000:3b:00.0");
	snprintf(dev->identity, sizeof(dev->identity), "GPU-6b2f0c1e");
	snprintf(dev->pci, sizeof(dev->pci), "0000:3b:00.0");
	out->received[HBMGUARD_PATH_INJECT] = 14;
	out->dropped[HBMGUARD_PATH_MCE] = 1;
	out->have = HBM_COUNTS_PATHS;
	return 0;
}

static const struct hbm_source_ops fake_ops = { .origin = HBM_FROM_KERNEL, .counts = fake_counts };

static void incident(size_t i, uint32_t state, const uint64_t *at)
{
	size_t s;

	incidents[i].info.state = state;
	for (s = 0; s < __HBM_INCIDENT_MAX; s++)
		incidents[i].info.at[s] = at[s];
}

/* What recovery.c counts as each ends (metrics_incident_ended()), for incidents set by hand. */
static void count_ended(void)
{
	size_t i;

	memset(&d.incident_totals, 0, sizeof(d.incident_totals));
	for (i = 0; i < d.nr_incidents; i++)
		metrics_incident_ended(&d.incident_totals, &d.incidents[i].info, true);
}

static void setup_daemon(void)
{
	/* us: detected, pausing, isolated, restoring, resumed, escalated */
	const uint64_t resumed[] = { 0, 1000000, 1000500, 1300000, 1800000, 2000000, 0 };
	const uint64_t escalated[] = { 0, 5000000, 5000100, 0, 0, 0, 35000100 };
	const uint64_t open[] = { 0, 9000000, 0, 0, 0, 0, 0 };
	struct hbm_gpu *g = &gpus.gpu[0];

	memset(&d, 0, sizeof(d));
	memset(&store, 0, sizeof(store));
	memset(&gpus, 0, sizeof(gpus));
	memset(&m, 0, sizeof(m));
	memset(incidents, 0, sizeof(incidents));
	core_init(&core, &fake_ops, NULL);
	d.core = &core;
	d.store = &store;
	d.gpus = &gpus;
	store.d = &d;
	store.counters.failures = 2;
	store.counters.last_good = 1764600000;
	store.saves[0].error = -EIO;
	incident(0, HBM_INCIDENT_RESUMED, resumed);
	incident(1, HBM_INCIDENT_ESCALATED, escalated);
	incident(2, HBM_INCIDENT_DETECTED, open);
	d.incidents = incidents;
	d.nr_incidents = 3;
	count_ended();
	/* an NVIDIA GPU as NVML found it, with one page of each kind and its remapped rows */
	gpus.nr = 2;
	g->found.kind = HBM_DEVICE_NVIDIA;
	snprintf(g->found.identity, sizeof(g->found.identity), "GPU-6b2f0c1e");
	snprintf(g->found.name, sizeof(g->found.name), "NVIDIA H100 80GB HBM3");
	snprintf(g->found.pci, sizeof(g->found.pci), "0000:3b:00.0");
	g->in_module = true;
	g->dev.id = 5;
	g->driver.have = HBM_DRIVER_REMAP | HBM_DRIVER_ECC;
	g->driver.remap_corrected = 2;
	g->driver.remap_uncorrected = 1;
	g->last_xid = 48;
	g->pages = calloc(3, sizeof(*g->pages));
	ck_assert_ptr_nonnull(g->pages);
	g->nr = g->cap = 3;
	g->pages[0].source = HBMGUARD_SOURCE_UE;
	g->pages[1].source = HBMGUARD_SOURCE_CE_THRESHOLD;
	g->pages[2].source = HBMGUARD_SOURCE_UE;
	g->pages[2].pending = true;
	/* an AMD GPU: no DCGM field is its */
	gpus.gpu[1].found.kind = HBM_DEVICE_AMDGPU;
	snprintf(gpus.gpu[1].found.identity, sizeof(gpus.gpu[1].found.identity), "amdgpu-1");
	m.d = &d;
}

static void teardown_daemon(void)
{
	size_t i;

	for (i = 0; i < METRICS_CONNECTIONS; i++)
		if (slow[i] > 0) {
			kill(slow[i], SIGKILL);
			waitpid(slow[i], NULL, 0);
			slow[i] = 0;
		}
	free(gpus.gpu[0].pages);
	gpus.gpu[0].pages = NULL;
}

/*
 * A checker's run over an exposition: @cmd (its %s the file the exposition
 * is written to) with its stdout and stderr in @out.  Return: its exit
 * status, -1 when it did not exit (127: not installed: scripts/deps.sh).
 */
static int run_over(const char *cmd, const char *text, size_t len, char *out, size_t cap)
{
	char path[] = "/tmp/hbm-metrics-XXXXXX", line[512];
	int fd = mkstemp(path), status;
	size_t n;
	FILE *p;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	snprintf(line, sizeof(line), cmd, path);
	p = popen(line, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(out, 1, cap - 1, p);
	out[n] = 0;
	status = pclose(p);
	unlink(path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * promtool check metrics: exit 0, or 3 (lint) for dcgm-exporter's own
 * names only, which it lints as it lints dcgm-exporter's output (counters
 * without _total, the label modelName); 1 or any other complaint fails.
 */
static void promtool_check(const char *text, size_t len)
{
	static char out[1 << 16];
	int rc = run_over("promtool check metrics <%s 2>&1", text, len, out, sizeof(out));
	char *line;

	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
		ck_assert_msg(!strncmp(line, "DCGM_FI_DEV_", 12) &&
			      (strstr(line, " counter metrics should have \"_total\" suffix") ||
			       strstr(line, " label names should be written in 'snake_case' not 'camelCase'")),
			      "promtool check metrics: %s", line);
	ck_assert_msg(rc == 0 || rc == 3,
		      "promtool check metrics exited %d (127: not installed: scripts/deps.sh)", rc);
}

static char *render_daemon_as(struct metrics_buf *b, enum metrics_format format)
{
	metrics_buf_init(b, METRICS_MAX_BYTES);
	b->format = format;
	metrics_gather(&m);
	metrics_render(&m, b);
	metrics_end(b);
	ck_assert(!b->failed);
	return b->p;
}

static char *render_daemon(struct metrics_buf *b)
{
	return render_daemon_as(b, METRICS_TEXT);
}

/*
 * Debian's python3-prometheus-client's parsers (tests/unit/parse_exposition.py):
 * the OpenMetrics one strict, raising on what the spec forbids.  What it
 * read, a family a line ("name type unit samples sample-names"), for the
 * caller to look into.
 */
static const char *python_parse(const char *format, const char *text, size_t len)
{
	static char out[1 << 16];
	char cmd[512];
	int rc;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/../parse_exposition.py %s %%s 2>&1",
		 HBM_FIXTURES, format);
	rc = run_over(cmd, text, len, out, sizeof(out));
	ck_assert_msg(rc == 0, "%s parser exited %d (python3-prometheus-client: scripts/deps.sh): %.2000s",
		      format, rc, out);
	return out;
}

/* Each of @want (NULL-terminated) somewhere in @text. */
static void has_all(const char *text, const char *const *want)
{
	for (; *want; want++)
		ck_assert_msg(strstr(text, *want), "not found: %s", *want);
}

START_TEST(daemon_exposition)
{
	struct hbm_fact f = { .type = HBM_FACT_PAGES, .origin = HBM_FROM_KERNEL,
			      .event = HBMGUARD_EVENT_RETIRED, .source = HBMGUARD_SOURCE_UE,
			      .count = 2, .dev = { .id = 0 } };
	struct hbm_fact e = { .type = HBM_FACT_ERROR, .origin = HBM_FROM_NVML,
			      .severity = HBM_SEVERITY_UE, .dev = { .id = HBM_NO_DEVICE_ID } };
	struct hbm_fact seen = { .type = HBM_FACT_DEVICE_SEEN, .origin = HBM_FROM_KERNEL,
				 .sync = HBM_SYNC_START, .dev = { .id = 0 } };
	struct metrics_buf b;
	char *t, *p, *q, host[256] = "", want[512];

	snprintf(seen.dev.identity, sizeof(seen.dev.identity), "%s", HOSTILE);
	metrics_fact(&m, &seen);
	f.dev = seen.dev;
	metrics_fact(&m, &f);
	f.flags = HBM_FACT_UNHEARD;	/* a table read: no event */
	metrics_fact(&m, &f);
	metrics_fact(&m, &e);
	t = render_daemon(&b);
	/* the hostile identity stays inside its quotes: no line of its own */
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_device_pages{device=\"sim0\",id=\"0\","
				     "identity=\"evil\\\"} 1\\nhbmguard_up 0\\n# \\\\\","
				     "state=\"retired\"} 3\n"));
	ck_assert_ptr_null(strstr(t, "\nhbmguard_up 0"));
	ck_assert_ptr_nonnull(strstr(t, "\nhbmguard_up 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "state=\"retired\",source=\"ue\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_device_spare_pages_left{device=\"sim0\""));
	ck_assert_ptr_nonnull(strstr(t, "health=\"degraded\"} 1\n"));
	/* What the policy forgot, per device: sim0's line ends in its 7. */
	p = strstr(t, "\nhbmguard_device_corrected_errors_forgotten_total{device=\"sim0\",");
	ck_assert_ptr_nonnull(p);
	q = strchr(p + 1, '\n');
	ck_assert(q && !strncmp(q - 3, "} 7", 3));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_path_errors_received_total{path=\"inject\"} 14\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_daemon_errors_heard_total{origin=\"nvml\",severity=\"ue\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_incidents_total{outcome=\"escalated\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_incidents_total{outcome=\"resumed\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "\nhbmguard_incidents_open 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_incident_phase_duration_seconds_bucket{phase=\"pausing\","
				     "outcome=\"resumed\",le=\"0.5\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_incident_phase_duration_seconds_sum{phase=\"pausing\","
				     "outcome=\"escalated\"} 30\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_save_failures_total 2\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_last_save_timestamp_seconds 1764600000\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_unsaved_files 1\n"));
	/* dcgm-exporter's names and labels, for the NVML GPU only */
	gethostname(host, sizeof(host) - 1);
	snprintf(want, sizeof(want), "DCGM_FI_DEV_RETIRED_DBE{gpu=\"0\",UUID=\"GPU-6b2f0c1e\","
		 "pci_bus_id=\"00000000:3B:00.0\",device=\"nvidia0\","
		 "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"%s\"} 1\n", host);
	ck_assert_ptr_nonnull(strstr(t, want));
	ck_assert_ptr_nonnull(strstr(t, "# TYPE DCGM_FI_DEV_RETIRED_SBE counter\n"));
	ck_assert_ptr_nonnull(strstr(t, "DCGM_FI_DEV_RETIRED_PENDING{gpu=\"0\""));
	ck_assert_ptr_nonnull(strstr(t, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu=\"0\""));
	ck_assert_ptr_nonnull(strstr(t, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\""));
	ck_assert_ptr_null(strstr(t, "amdgpu-1"));
	promtool_check(t, b.len);
	metrics_buf_free(&b);

	/* the same GPU without NVML's remapped rows: no remap series, rather than zeros */
	gpus.gpu[0].driver.have = 0;
	t = render_daemon(&b);
	ck_assert_ptr_null(strstr(t, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"));
	ck_assert_ptr_nonnull(strstr(t, "DCGM_FI_DEV_RETIRED_SBE{"));
	metrics_buf_free(&b);

	/*
	 * The device gone and seen again with its identity (the module
	 * reloaded): its counts go on; its id given to another: they start
	 * again, the series then the other's.
	 */
	f.type = HBM_FACT_DEVICE_GONE;
	metrics_fact(&m, &f);
	f.type = HBM_FACT_DEVICE_SEEN;
	f.sync = HBM_SYNC_ADDED;
	metrics_fact(&m, &f);
	t = render_daemon(&b);
	ck_assert_ptr_nonnull(strstr(t, "state=\"retired\",source=\"ue\"} 2\n"));
	metrics_buf_free(&b);
	snprintf(f.dev.identity, sizeof(f.dev.identity), "another");
	metrics_fact(&m, &f);
	t = render_daemon(&b);
	ck_assert_ptr_nonnull(strstr(t, "state=\"retired\",source=\"ue\"} 0\n"));
	ck_assert_ptr_null(strstr(t, "state=\"retired\",source=\"ue\"} 2\n"));
	metrics_buf_free(&b);
}
END_TEST

/*
 * One snapshot in both formats, each through a parser of its own: the
 * OpenMetrics one strict (python3-prometheus-client's), the text one by
 * promtool and python3-prometheus-client's; the samples the same.
 */
START_TEST(daemon_formats)
{
	struct metrics_buf text, om;
	char *t, *o, *line;
	size_t samples = 0;
	static const char *const om_families[] = {
		"hbmguard_incidents counter - 2 hbmguard_incidents_total\n",
		"hbmguard_incidents_open gauge - 1 hbmguard_incidents_open\n",
		"hbmguard_incident_phase_duration_seconds histogram seconds ",
		"hbmguard_last_save_timestamp_seconds gauge seconds 1 ",
		"\nhbmguard_path_errors_received counter - ",
		"\nDCGM_FI_DEV_RETIRED_SBE gauge - 1 DCGM_FI_DEV_RETIRED_SBE\n",
		"\nDCGM_FI_DEV_RETIRED_PENDING gauge - 1 DCGM_FI_DEV_RETIRED_PENDING\n",
		"\nhbmguard_scrapes counter - 1 hbmguard_scrapes_total\n",
		NULL
	};
	static const char *const text_families[] = {
		"hbmguard_incidents counter - 2 hbmguard_incidents_total\n",
		"hbmguard_incident_phase_duration_seconds histogram - ",
		NULL
	};

	t = render_daemon_as(&text, METRICS_TEXT);
	o = render_daemon_as(&om, METRICS_OPENMETRICS);
	has_all(python_parse("openmetrics", o, om.len), om_families);
	ck_assert_str_eq(o + om.len - 7, "\n# EOF\n");
	ck_assert_ptr_null(strstr(t, "# EOF"));
	ck_assert_ptr_null(strstr(t, "# UNIT"));
	has_all(python_parse("text", t, text.len), text_families);
	promtool_check(t, text.len);
	/* every sample line of one is in the other: only the metadata differs */
	for (line = strtok(t, "\n"); line; line = strtok(NULL, "\n"))
		if (line[0] != '#') {
			ck_assert_msg(strstr(o, line), "not in the OpenMetrics exposition: %s", line);
			samples++;
		}
	ck_assert_uint_gt(samples, 100);
	metrics_buf_free(&text);
	metrics_buf_free(&om);
}
END_TEST

/* The value of the sample @prefix begins (its name and labels, and the space), or -1. */
static double sample_value(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);

	return p ? strtod(p + strlen(prefix), NULL) : -1;
}

/*
 * More incidents end than the history keeps (through recovery.c, which
 * forgets the oldest past HBM_INCIDENTS_KEPT): the counters and the
 * histogram go on growing, never down, whichever format renders them.
 */
START_TEST(daemon_incidents_never_decrease)
{
	char dir[] = "/tmp/hbm-metrics-XXXXXX";
	struct hbm_ctl_rank reg = { .rank = 0, .world_size = 1, .nr_ranges = 1,
				    .ranges = { { 0, 0x1000 } }, .job = "j", .device = "dev" };
	struct client *c = calloc(1, sizeof(*c));
	double last = 0, last_count = 0;
	uint64_t i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	d.state_dir = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(d.state_dir, 0);
	ck_assert_int_ge(sd_event_new(&d.loop), 0);
	/* the journal lines, three an incident */
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	d.cfg.recovery.pause_timeout = d.cfg.recovery.restore_timeout = 60;
	d.incidents = NULL;		/* recovery.c's own, from here */
	d.nr_incidents = 0;
	memset(&d.incident_totals, 0, sizeof(d.incident_totals));
	c->d = &d;
	c->fd = c->pidfd = -1;
	c->cred.uid = getuid();
	ck_assert_int_eq(recovery_register(&d, c, &reg, NULL), 0);
	for (i = 1; i <= 2 * HBM_INCIDENTS_KEPT + 1; i++) {
		struct hbm_ctl_answer a = { .incident = i, .answer = HBM_ANSWER_FAILED };
		enum metrics_format format = i % 2 ? METRICS_OPENMETRICS : METRICS_TEXT;
		struct metrics_buf b;
		double v, count;
		char *t;

		recovery_on_lost_data(&d, "dev", 0, 0x1000);
		ck_assert_int_eq(recovery_answer(&d, c, &a), 0);	/* escalated: ended */
		ck_assert_uint_le(d.nr_incidents, HBM_INCIDENTS_KEPT);
		t = render_daemon_as(&b, format);
		v = sample_value(t, "hbmguard_incidents_total{outcome=\"escalated\"} ");
		count = sample_value(t, "hbmguard_incident_phase_duration_seconds_count"
				     "{phase=\"pausing\",outcome=\"escalated\"} ");
		ck_assert_msg(v == i && v > last, "incident %" PRIu64 ": counted %g, before %g",
			      i, v, last);
		ck_assert_msg(count == i && count > last_count, "incident %" PRIu64 ": %g phases",
			      i, count);
		last = v;
		last_count = count;
		metrics_buf_free(&b);
	}
	ck_assert_uint_eq(d.nr_incidents, HBM_INCIDENTS_KEPT);	/* it did forget */
	ck_assert_uint_eq(d.incidents[0].info.id, HBM_INCIDENTS_KEPT + 2);
	unlinkat(d.state_dir, "incidents", 0);
	close(d.state_dir);
	rmdir(dir);
	sd_event_unref(d.loop);
}
END_TEST

/*
 * Names that are not UTF-8 (an identity, a GPU's model as a driver wrote
 * them): repaired, or Prometheus would reject the whole scrape.
 */
START_TEST(daemon_not_utf8)
{
	struct metrics_buf b;
	char *t;

	snprintf(gpus.gpu[0].found.name, sizeof(gpus.gpu[0].found.name), "H100 \xc3(\xff)");
	snprintf(gpus.gpu[0].found.identity, sizeof(gpus.gpu[0].found.identity), "GPU-\xe2\x82");
	t = render_daemon(&b);
	ck_assert_ptr_nonnull(strstr(t, "UUID=\"GPU-\xef\xbf\xbd\""));
	ck_assert_ptr_nonnull(strstr(t, "modelName=\"H100 \xef\xbf\xbd(\xef\xbf\xbd)\""));
	promtool_check(t, b.len);
	metrics_buf_free(&b);
}
END_TEST

/*
 * The incidents' times are the wall clock's: one stepped back between two
 * states is no phase of 2^64 us (5.8e5 years), nor of a negative time.
 */
START_TEST(daemon_clock_step)
{
	struct metrics_buf b;
	char *t;

	incidents[0].info.at[HBM_INCIDENT_RESTORING] = 1200000;	/* before isolated's 1300000 */
	count_ended();
	t = render_daemon(&b);
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_incident_phase_duration_seconds_count{phase=\"isolated\","
				     "outcome=\"resumed\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(t, "hbmguard_incident_phase_duration_seconds_sum{phase=\"restoring\","
				     "outcome=\"resumed\"} 0.80000000000000004\n"));
	metrics_buf_free(&b);
}
END_TEST

/* The server: an HTTP exchange over a socket, in a child while the parent runs the loop */

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		_exit(90);
	return fd;
}

/* Child: send @request, copy the whole answer to @out (a pipe), exit 0. */
static pid_t client(uint16_t port, const char *request, int out)
{
	pid_t pid = fork();
	char buf[4096];
	ssize_t n;
	int fd;

	ck_assert_int_ge(pid, 0);
	if (pid)
		return pid;
	fd = connect_to(port);
	if (write(fd, request, strlen(request)) != (ssize_t)strlen(request))
		_exit(91);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			_exit(92);
	_exit(n < 0 ? 93 : 0);
}

/*
 * Run the loop until @pid exits, reading its answer from @in: the loop is
 * the only thing that serves it.  The bound only stops a broken server
 * from hanging the suite; no time is asserted.
 */
static size_t serve_until(sd_event *loop, pid_t pid, int in, char *buf, size_t cap)
{
	size_t len = 0;
	int status, i;
	ssize_t n;

	for (i = 0; i < 3000; i++) {
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
		while (len < cap - 1 && (n = read(in, buf + len, cap - 1 - len)) > 0)
			len += n;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			while (len < cap - 1 && (n = read(in, buf + len, cap - 1 - len)) > 0)
				len += n;
			buf[len] = 0;
			ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
				      "client failed: %d", status);
			return len;
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ck_abort_msg("the server never answered");
	return 0;
}

static size_t scrape(sd_event *loop, const char *request, char *buf, size_t cap)
{
	int p[2];
	pid_t pid;
	size_t len;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	pid = client(m.port, request, p[1]);
	close(p[1]);
	len = serve_until(loop, pid, p[0], buf, cap);
	close(p[0]);
	return len;
}

/* A connection that sent half a request, held open by a child until killed. */
static pid_t slow_client(uint16_t port)
{
	int ready[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* a failed test does not leave it */
		fd = connect_to(port);

		if (write(fd, "GET /metr", 9) != 9 || write(ready[1], "x", 1) != 1)
			_exit(91);
		pause();
		_exit(0);
	}
	close(ready[1]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

START_TEST(server_scrape)
{
	static char buf[1 << 20];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	sd_event *loop;
	size_t len, i;
	uint64_t acc;
	char *body;

	ck_assert_int_ge(sd_event_new(&loop), 0);
	/* the second scrape reads the first's gather: the test's pace (promtool, python) cannot outlast it */
	m.keep_us = 3600ULL * 1000000;
	ck_assert_int_eq(metrics_listen(&m, loop, (struct sockaddr *)&a, sizeof(a), -1), 0);
	ck_assert_uint_ne(m.port, 0);
	/* MHD_get_timeout()'s deadline is kept to the microsecond, not sd-event's default 250 ms */
	ck_assert_int_eq(sd_event_source_get_time_accuracy(m.timer, &acc), 0);
	ck_assert_uint_eq(acc, 1);

	/* a client stuck half way through its request holds its connection, nothing else */
	slow[0] = slow_client(m.port);
	len = scrape(loop, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		     buf, sizeof(buf));
	ck_assert_msg(!strncmp(buf, "HTTP/1.1 200 OK\r\n", 17), "got: %.200s", buf);
	ck_assert_ptr_nonnull(strcasestr(buf, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
	body = strstr(buf, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	body += 4;
	ck_assert_ptr_nonnull(strstr(body, "\nhbmguard_scrapes_total 1\n"));
	ck_assert_ptr_nonnull(strstr(body, "identity=\"evil\\\"} 1\\nhbmguard_up 0\\n# \\\\\""));
	promtool_check(body, len - (body - buf));

	/* Prometheus's scrapes (its Accept header, scrape/scrape.go v2.42.0): OpenMetrics */
	len = scrape(loop, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
		     "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
		     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n",
		     buf, sizeof(buf));
	ck_assert_msg(!strncmp(buf, "HTTP/1.1 200 OK\r\n", 17), "got: %.200s", buf);
	ck_assert_ptr_nonnull(strcasestr(buf, "\r\nContent-Type: application/openmetrics-text; "
					 "version=1.0.0; charset=utf-8\r\n"));
	ck_assert_ptr_nonnull(strcasestr(buf, "\r\nVary: Accept\r\n"));
	body = strstr(buf, "\r\n\r\n") + 4;
	/* written with the text page, from the first scrape's gather, within the second */
	ck_assert_ptr_nonnull(strstr(body, "\nhbmguard_scrapes_total 1\n"));
	ck_assert_str_eq(buf + len - 7, "\n# EOF\n");
	python_parse("openmetrics", body, len - (body - buf));
	/* a HEAD: the GET's headers, no scrape counted */
	len = scrape(loop, "HEAD /metrics HTTP/1.0\r\nAccept: application/openmetrics-text\r\n\r\n",
		     buf, sizeof(buf));
	ck_assert_ptr_nonnull(strcasestr(buf, "\r\nContent-Type: application/openmetrics-text; "
					 "version=1.0.0; charset=utf-8\r\n"));
	ck_assert_uint_eq(m.scrapes, 2);
	/* both formats refused: 406, with what is served */
	len = scrape(loop, "GET /metrics HTTP/1.0\r\nAccept: text/plain;q=0, application/*;q=0, "
		     "application/json\r\n\r\n",
		     buf, sizeof(buf));
	ck_assert_msg(strstr(buf, " 406 ") && strstr(buf, "application/openmetrics-text; version=1.0.0"),
		      "got: %.300s", buf);
	ck_assert_uint_eq(m.scrapes, 2);

	len = scrape(loop, "GET /other HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	ck_assert_msg(!strncmp(buf, "HTTP/1.0 404", 12) || !strncmp(buf, "HTTP/1.1 404", 12),
		      "got: %.200s", buf);
	len = scrape(loop, "DELETE /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, " 405 "), "got: %.200s", buf);

	/*
	 * At the bound of connections the next one waits, unserved, until one
	 * of them goes.  The slow ones are dropped only after METRICS_TIMEOUT_S
	 * idle or METRICS_DEADLINE_US from their accept: the look at the
	 * waiting one takes a small part of that.
	 */
	for (i = 1; i < METRICS_CONNECTIONS; i++)
		slow[i] = slow_client(m.port);
	/* let the loop accept them all (a loaded host: as many turns as it takes, up to 5 s) */
	for (i = 0; i < 5000 && sym_MHD_get_daemon_info(m.mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)->
				num_connections < METRICS_CONNECTIONS; i++)
		sd_event_run(loop, 1000);
	ck_assert_uint_eq(sym_MHD_get_daemon_info(m.mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)->num_connections,
			  METRICS_CONNECTIONS);
	{
		int p[2], status;
		pid_t pid;
		char c;

		ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
		pid = client(m.port, "GET /metrics HTTP/1.0\r\n\r\n", p[1]);
		close(p[1]);
		for (i = 0; i < 100; i++)
			sd_event_run(loop, 10000);
		ck_assert_int_eq(read(p[0], &c, 1), -1);
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0);
		/* once they are gone, it is served */
		for (i = 0; i < METRICS_CONNECTIONS; i++) {
			kill(slow[i], SIGKILL);
			waitpid(slow[i], NULL, 0);
			slow[i] = 0;
		}
		len = serve_until(loop, pid, p[0], buf, sizeof(buf));
		close(p[0]);
		ck_assert_msg(strstr(buf, " 200 OK\r\n"), "got: %.200s", buf);
	}
	metrics_stop(&m);
	sd_event_unref(loop);
}
END_TEST

/*
 * A reload retries: the endpoint off at start then turned on, a port
 * another holds (bind()'s EADDRINUSE said, not some other errno), the same
 * Listen= again once the port is free.
 */
START_TEST(server_reload_retries)
{
	static char buf[1 << 20];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct hbm_metrics_config *c = &d.cfg.metrics;
	socklen_t len = sizeof(a);
	int blocker = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sd_event *loop;

	ck_assert_int_ge(sd_event_new(&loop), 0);
	ck_assert_int_ge(blocker, 0);
	ck_assert_int_eq(bind(blocker, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(blocker, 1), 0);
	ck_assert_int_eq(getsockname(blocker, (struct sockaddr *)&a, &len), 0);

	ck_assert_int_eq(metrics_start(&m, &d, loop), 0);	/* no Listen=: off */
	ck_assert_ptr_null(m.mhd);
	snprintf(c->listen, sizeof(c->listen), "127.0.0.1:%u", ntohs(a.sin_port));
	memcpy(&c->addr, &a, sizeof(a));
	c->addr_len = sizeof(a);
	ck_assert_int_eq(metrics_reconfigure(&m, ""), -EADDRINUSE);
	ck_assert_ptr_null(m.mhd);
	close(blocker);
	ck_assert_int_eq(metrics_reconfigure(&m, c->listen), 0);
	ck_assert_ptr_nonnull(m.mhd);
	ck_assert_uint_eq(m.port, ntohs(a.sin_port));
	scrape(loop, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, " 200 OK\r\n"), "got: %.200s", buf);
	/* listening, the same Listen=: nothing to do */
	ck_assert_int_eq(metrics_reconfigure(&m, c->listen), 0);
	ck_assert_ptr_nonnull(m.mhd);
	metrics_stop(&m);
	sd_event_unref(loop);
}
END_TEST

/*
 * A slowloris: a request whose header never ends, a byte every 200 ms (well
 * inside libmicrohttpd's idle timeout), connected again whenever the server
 * closes it.  Until killed.
 */
static pid_t trickler(uint16_t port)
{
	static const char start[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int fd = connect_to(port);

		if (write(fd, start, strlen(start)) == (ssize_t)strlen(start))
			while (write(fd, "x", 1) == 1)
				usleep(200000);
		close(fd);
	}
}

/*
 * Every connection held by peers that trickle, reconnecting: a scrape is
 * served all the same, once a connection's deadline (from its accept, not
 * its last byte) frees a slot.
 */
START_TEST(server_slowloris)
{
	static char buf[1 << 20];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	sd_event *loop;
	size_t i;

	m.deadline_us = 2000000;	/* the default's 10 s, shorter for the suite */
	ck_assert_int_ge(sd_event_new(&loop), 0);
	ck_assert_int_eq(metrics_listen(&m, loop, (struct sockaddr *)&a, sizeof(a), -1), 0);
	for (i = 0; i < METRICS_CONNECTIONS; i++)
		slow[i] = trickler(m.port);
	for (i = 0; i < 3000 && sym_MHD_get_daemon_info(m.mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)->num_connections <
	     METRICS_CONNECTIONS; i++)
		sd_event_run(loop, 10000);
	ck_assert_uint_eq(sym_MHD_get_daemon_info(m.mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)->num_connections,
			  METRICS_CONNECTIONS);
	scrape(loop, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, " 200 OK\r\n"), "got: %.200s", buf);
	metrics_stop(&m);
	sd_event_unref(loop);
}
END_TEST

static unsigned int renders;
static bool render_fails;

/* A page per format, numbered; or one past its bound (a 500) when render_fails. */
static void counting_render(struct hbm_metrics *mm, struct metrics_buf *b)
{
	(void)mm;
	renders++;
	metrics_family(b, "hbmguard_renders", "gauge", "Renders so far.");
	metrics_sample(b, "hbmguard_renders", NULL, 0, renders);
	if (render_fails)
		b->failed = true;
}

/* The value of a response's header @name (its line from the colon on), or NULL. */
static const char *header(const char *resp, const char *name)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\r\n%s:", name);
	p = strcasestr(resp, want);
	return p ? p + strlen(want) : NULL;
}

static long content_length(const char *resp)
{
	const char *p = header(resp, "Content-Length");

	ck_assert_msg(p, "no Content-Length: %.300s", resp);
	return strtol(p, NULL, 10);
}

/*
 * A gather (the module asked, blocking) at most once per .keep_us, whatever
 * the scrape rate and whichever formats the scrapes ask for: both pages are
 * written from it.  A HEAD is answered as its GET: the same status and
 * Content-Length, rendering when no page is fresh, no scrape counted.  All
 * below the daemon's own sources.
 */
START_TEST(server_renders_kept)
{
	static char buf[1 << 16], head[1 << 12];
	static const char om[] = "Accept: application/openmetrics-text\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int64_t prio;
	sd_event *loop;
	char req[256];
	int i;

	renders = 0;
	render_fails = false;
	m.render = counting_render;
	m.keep_us = 3600ULL * 1000000;	/* the test's pace cannot outlast it */
	ck_assert_int_ge(sd_event_new(&loop), 0);
	ck_assert_int_eq(metrics_listen(&m, loop, (struct sockaddr *)&a, sizeof(a), -1), 0);
	ck_assert_int_eq(sd_event_source_get_priority(m.io, &prio), 0);
	ck_assert_int_eq(prio, SD_EVENT_PRIORITY_IDLE);
	ck_assert_int_eq(sd_event_source_get_priority(m.timer, &prio), 0);
	ck_assert_int_eq(prio, SD_EVENT_PRIORITY_IDLE);

	/* a HEAD first: it gathers, for both pages, and is no scrape */
	scrape(loop, "HEAD /metrics HTTP/1.0\r\n\r\n", head, sizeof(head));
	ck_assert_msg(strstr(head, " 200 OK\r\n"), "got: %.200s", head);
	ck_assert_uint_eq(m.gathers, 1);
	ck_assert_uint_eq(renders, 2);
	ck_assert_uint_eq(m.scrapes, 0);
	for (i = 0; i < 3; i++) {
		scrape(loop, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
		ck_assert_msg(strstr(buf, "\r\n\r\n# HELP hbmguard_renders Renders so far.\n"
				      "# TYPE hbmguard_renders gauge\nhbmguard_renders 1\n"),
			      "got: %.200s", buf);
	}
	ck_assert_int_eq(content_length(head), content_length(buf));
	ck_assert_int_gt(content_length(head), 0);
	/* the other format within the interval: its page from the same gather */
	snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\n%s\r\n", om);
	scrape(loop, req, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "\nhbmguard_renders 2\n# EOF\n"), "got: %.300s", buf);
	snprintf(req, sizeof(req), "HEAD /metrics HTTP/1.0\r\n%s\r\n", om);
	scrape(loop, req, head, sizeof(head));
	ck_assert_int_eq(content_length(head), content_length(buf));
	ck_assert_uint_eq(m.gathers, 1);
	ck_assert_uint_eq(renders, 2);
	ck_assert_uint_eq(m.scrapes, 4);

	m.keep_us = 1;			/* kept no longer: the next one gathers */
	scrape(loop, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "\nhbmguard_renders 3\n"), "got: %.200s", buf);
	ck_assert_uint_eq(m.gathers, 2);
	ck_assert_uint_eq(renders, 4);

	/* a failed render: 500 to a HEAD as to a GET, not the page before it */
	render_fails = true;
	scrape(loop, "HEAD /metrics HTTP/1.0\r\n\r\n", head, sizeof(head));
	ck_assert_msg(strstr(head, " 500 "), "got: %.200s", head);
	scrape(loop, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	ck_assert_msg(strstr(buf, " 500 "), "got: %.200s", buf);
	ck_assert_int_eq(content_length(head), content_length(buf));
	render_fails = false;
	metrics_stop(&m);
	sd_event_unref(loop);
}
END_TEST

/*
 * libmicrohttpd is loaded when the endpoint first listens (mhd_dl.h): on a
 * host without it metrics_listen() says so, returns -ELIBACC and leaves
 * nothing open, and a socket systemd passed is taken up at the next reload
 * once the library is there.  The library is hidden from this test's
 * process alone, behind an empty file in a mount namespace of its own;
 * Check runs each test in a child of its own, so none loaded it before.
 */
#define MHD_SONAME "libmicrohttpd.so.12"

static int hidden_err;

static void listen_hidden(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	sd_event *loop;

	ck_assert_int_ge(sd_event_new(&loop), 0);
	hidden_err = metrics_listen(&m, loop, (struct sockaddr *)&a, sizeof(a), -1);
	sd_event_unref(loop);
}

/* Where the dynamic loader finds @soname, asked in a child of its own: or "". */
static void library_path(const char *soname, char *path, size_t len)
{
	ssize_t n;
	pid_t pid;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
		struct link_map *lm;

		if (h && !dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm->l_name &&
		    write(p[1], lm->l_name, strlen(lm->l_name)) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], path, len - 1);
	path[n > 0 ? n : 0] = 0;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}

/*
 * In a child, systemd's socket at fd 3 (where Check has its own: no
 * ck_assert here): a passed socket the library is missing for, kept; the
 * library back (@lib unmounted), a reload takes it up.  Exit status: the
 * step that failed, or 0.
 */
static int passed_then_reload(const char *lib)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(a);
	char pid[16];
	sd_event *loop;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4) ||
	    dup2(fd, SD_LISTEN_FDS_START) < 0 || sd_event_new(&loop) < 0)
		return 10;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("LISTEN_PID", pid, 1);
	setenv("LISTEN_FDS", "1", 1);
	setenv("LISTEN_FDNAMES", "metrics", 1);
	if (metrics_start(&m, &d, loop) != -ELIBACC || m.mhd)
		return 1;
	if (fcntl(SD_LISTEN_FDS_START, F_GETFD) < 0)
		return 2;		/* systemd's socket closed */
	if (umount(lib))
		return 11;
	if (metrics_reconfigure(&m, d.cfg.metrics.listen) || !m.mhd)
		return 3;		/* not taken up at the reload */
	if (getsockname(fd, (struct sockaddr *)&a, &len) || m.port != ntohs(a.sin_port))
		return 4;		/* serving, but not on systemd's socket */
	metrics_stop(&m);
	sd_event_unref(loop);
	return 0;
}

START_TEST(server_without_library)
{
	static const char said[] = "<3>hbmguardd: metrics: libmicrohttpd cannot be loaded: ";
	char lib[PATH_MAX], empty[] = "/tmp/hbm-empty-XXXXXX";
	int fd, before, status, err = 0;
	const char *out;
	pid_t pid;

	if (dlopen(MHD_SONAME, RTLD_NOW | RTLD_NOLOAD)) {
		fprintf(stderr, "server_without_library: NOT RUN: " MHD_SONAME
			" is loaded already (CK_FORK=no?)\n");
		return;
	}
	if (geteuid()) {	/* make check runs as root */
		fprintf(stderr, "server_without_library: NOT RUN: needs root (a mount namespace)\n");
		return;
	}
	library_path(MHD_SONAME, lib, sizeof(lib));
	ck_assert_msg(*lib, MHD_SONAME " cannot be loaded, hidden or not");
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		/* a container without CAP_SYS_ADMIN, a chroot whose / is no mount */
		fprintf(stderr, "server_without_library: NOT RUN: no mount namespace here: %m\n");
		return;
	}
	fd = mkstemp(empty);
	ck_assert_int_ge(fd, 0);
	close(fd);
	if (mount(empty, lib, NULL, MS_BIND, NULL))
		err = errno;
	unlink(empty);
	ck_assert_msg(!err, "bind over %s: %s", lib, strerror(err));

	before = hbm_test_open_fds();
	out = stderr_of(listen_hidden);
	ck_assert_int_eq(hidden_err, -ELIBACC);
	ck_assert_msg(!strncmp(out, said, strlen(said)) && strstr(out, MHD_SONAME),
		      "said: %s", out);
	ck_assert_ptr_null(m.mhd);
	ck_assert(m.no_library);
	ck_assert_int_eq(hbm_test_open_fds(), before);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(passed_then_reload(lib));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "passed socket, then a reload: step %d failed (status 0x%x)",
		      WEXITSTATUS(status), status);
}
END_TEST

Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("writer");
	TCase *td = tcase_create("daemon");

	tcase_add_test(tc, writer_escapes);
	tcase_add_test(tc, writer_histogram);
	tcase_add_test(tc, writer_openmetrics);
	tcase_add_test(tc, negotiate_accept);
	tcase_add_test(tc, writer_bound);
	tcase_add_test(tc, log_limited);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(td, setup_daemon, teardown_daemon);
	tcase_add_test(td, daemon_exposition);
	tcase_add_test(td, daemon_formats);
	tcase_add_test(td, daemon_incidents_never_decrease);
	tcase_add_test(td, daemon_not_utf8);
	tcase_add_test(td, daemon_clock_step);
	tcase_add_test(td, server_scrape);
	tcase_add_test(td, server_reload_retries);
	tcase_add_test(td, server_renders_kept);
	tcase_add_test(td, server_slowloris);
	tcase_add_test(td, server_without_library);
	tcase_set_timeout(td, 60);
	suite_add_tcase(s, td);
	return s;
}
