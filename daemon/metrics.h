/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metrics endpoint (metrics.c): Prometheus's text exposition format
 * 0.0.4, or OpenMetrics 1.0.0 to a client that asks for it, over HTTP, from
 * libmicrohttpd driven by the daemon's sd-event loop; a sink of facts for
 * what only the facts tell (events by path and source).
 * Off unless [Metrics] Listen= is set or systemd passes a socket named
 * "metrics".
 *
 * The writer (metrics_family() ... metrics_histogram()) is pure code, for
 * the unit tests: it appends to a bounded buffer and escapes what it is
 * given, whatever a kernel or a driver put in an identity.
 */
#ifndef HBM_METRICS_H
#define HBM_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "core.h"
#include "ctl.h"
#include "ratelimit.h"

struct daemon;
struct MHD_Daemon;

enum metrics_format {
	METRICS_TEXT,		/* Prometheus's text format 0.0.4 */
	METRICS_OPENMETRICS,	/* OpenMetrics 1.0.0's text format */
	__METRICS_FORMATS
};

/* An exposition being written; .failed once it would pass .max bytes. */
struct metrics_buf {
	char *p;
	size_t len, cap, max;
	bool failed;
	enum metrics_format format;	/* set after metrics_buf_init(); TEXT by default */
};

struct metrics_label {
	const char *name;
	const char *value;
};

void metrics_buf_init(struct metrics_buf *b, size_t max);
void metrics_buf_free(struct metrics_buf *b);
void metrics_family(struct metrics_buf *b, const char *name, const char *type,
		    const char *help);
void metrics_sample(struct metrics_buf *b, const char *name, const struct metrics_label *l,
		    size_t nl, double value);
void metrics_histogram(struct metrics_buf *b, const char *name, const struct metrics_label *l,
		       size_t nl, const double *bounds, size_t nb, const uint64_t *counts, double sum);
void metrics_end(struct metrics_buf *b);
int metrics_negotiate(const char *accept);


/*
 * What the facts alone tell: the pages each device's events put in a state,
 * by why (the module's device id; a GPU not yet numbered has none), and the
 * errors each source heard (by enum hbm_fact_origin and enum hbm_severity).
 */
#define METRICS_ORIGINS	5
struct metrics_facts {
	uint64_t pages[HBMGUARD_MAX_DEVICES][__HBMGUARD_STATE_MAX][__HBMGUARD_SOURCE_MAX];
	char identity[HBMGUARD_MAX_DEVICES][HBMGUARD_IDENTITY_LEN];	/* whose .pages */
	uint64_t errors[METRICS_ORIGINS][3];
};

/* Bounds on what a scrape may take (metrics.c says why these). */
#define METRICS_CONNECTIONS	64
#define METRICS_CONNECTION_MEMORY	(16 * 1024)
#define METRICS_TIMEOUT_S	10
#define METRICS_DEADLINE_US	(10 * 1000000ULL)
#define METRICS_MAX_BYTES	(4 * 1024 * 1024)
#define METRICS_KEEP_US		1000000

struct hbm_metrics {
	struct daemon *d;		/* NULL in a test that renders its own */
	sd_event *loop;
	struct MHD_Daemon *mhd;
	sd_event_source *io;		/* on MHD's epoll fd */
	sd_event_source *timer;		/* MHD_get_timeout()'s */
	uint16_t port;			/* bound, once started */
	bool no_library;		/* the last start could not load libmicrohttpd */
	/* the exposition: a test's own (no gather then), or NULL: metrics_render() */
	void (*render)(struct hbm_metrics *m, struct metrics_buf *b);
	uint64_t scrapes;
	/* the last exposition in each format, served again for .keep_us (metrics.c says why) */
	struct metrics_page {
		char *p;		/* NULL: its render failed */
		size_t len;
	} pages[__METRICS_FORMATS];
	uint64_t pages_at;		/* their gather, CLOCK_MONOTONIC, us; 0: none */
	uint64_t gathers;		/* of the module's counts, for both pages */
	uint64_t keep_us;		/* 0: METRICS_KEEP_US (a test sets its own) */
	uint64_t deadline_us;		/* 0: METRICS_DEADLINE_US (likewise) */
	/* each connection's socket and when it was accepted, for its deadline */
	struct metrics_conn {
		bool used, shut;
		int fd;
		uint64_t start;		/* CLOCK_MONOTONIC, us */
	} conns[METRICS_CONNECTIONS];
	struct hbm_ratelimit log;	/* libmicrohttpd's lines */
	struct metrics_facts facts;
};

int metrics_start(struct hbm_metrics *m, struct daemon *d, sd_event *loop);
int metrics_listen(struct hbm_metrics *m, sd_event *loop, const struct sockaddr *addr,
		   socklen_t len, int fd);
int metrics_reconfigure(struct hbm_metrics *m, const char *old);
void metrics_stop(struct hbm_metrics *m);
void metrics_fact(void *m, const struct hbm_fact *f);
void metrics_gather(struct hbm_metrics *m);
void metrics_render(struct hbm_metrics *m, struct metrics_buf *b);
void metrics_log(struct hbm_metrics *m, uint64_t now, const char *msg);

#endif /* HBM_METRICS_H */
