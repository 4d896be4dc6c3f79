// SPDX-License-Identifier: GPL-2.0
/*
 * A watch unwatched from one of its own callbacks, for tests/cluster/run.sh,
 * built with ASan: the frames of daemon/etcd.c that told it go on once the
 * callback returns (the rest of a response's events, the read's
 * fingerprint, the link's state), which reads freed memory unless the
 * watch is freed later (etcd_unwatch()).  Against a real etcd:
 *
 *   cluster-unwatch URL PREFIX snapshot|link|event|synced [WATCHES]
 *
 * watches PREFIX and unwatches it the first time the named callback is
 * called.  It prints "watching" once the watch is up (the snapshot told,
 * the link up): for event and synced, the test then puts a key under
 * PREFIX.  It exits 0 a second after the unwatch if nothing was told
 * since, 1 if something was or the callback never came in 20 s; ASan ends
 * it with its own report and status on a use after free, and at exit on a
 * watch never freed (nothing here points to it once unwatched).  The old
 * code failed the snapshot and event runs; link and synced guard against
 * a tell after the unwatch.  WATCHES more watches of PREFIX are kept, told
 * nothing, as cluster.c keeps one for each incident's acknowledgements: a
 * hostile gateway's load on many (tests/cluster/hostile_gateway.py, hoard).
 * A callback of another name is never unwatched from: it runs its 20 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "etcd.h"

static const char *in;		/* the callback to unwatch from */
static struct etcd_watch *watch;
static sd_event *loop;
static bool unwatched;
static unsigned int told_after;

static int on_done(sd_event_source *s, uint64_t usec, void *arg)
{
	(void)s;
	(void)usec;
	(void)arg;
	return sd_event_exit(loop, 0);
}

static void told(const char *what)
{
	if (unwatched) {
		fprintf(stderr, "cluster-unwatch: %s told after the unwatch\n", what);
		told_after++;
		return;
	}
	if (strcmp(what, in))
		return;
	etcd_unwatch(watch);
	watch = NULL;	/* LeakSanitizer finds a watch never freed */
	unwatched = true;
	printf("unwatched in %s\n", what);
	fflush(stdout);
	if (sd_event_add_time_relative(loop, NULL, CLOCK_MONOTONIC, 1000000, 0, on_done, NULL) < 0)
		sd_event_exit(loop, 1);
}

static void on_snapshot(void *ctx, const struct etcd_kv *kvs, size_t n, int64_t rev)
{
	(void)ctx;
	(void)kvs;
	(void)n;
	(void)rev;
	told("snapshot");
}

static void on_event(void *ctx, bool put, const struct etcd_kv *kv)
{
	(void)ctx;
	(void)put;
	(void)kv;
	told("event");
}

static void on_synced(void *ctx, int64_t rev)
{
	(void)ctx;
	(void)rev;
	told("synced");
}

static void on_link(void *ctx, bool up, const char *why)
{
	(void)ctx;
	(void)why;
	if (up && !unwatched) {
		printf("watching\n");
		fflush(stdout);
	}
	told("link");
}

static const struct etcd_watch_ops ops = {
	.snapshot = on_snapshot, .event = on_event, .synced = on_synced, .link = on_link,
};

static void ignore_snapshot(void *ctx, const struct etcd_kv *kvs, size_t n, int64_t rev)
{
	(void)ctx;
	(void)kvs;
	(void)n;
	(void)rev;
}

static void ignore_event(void *ctx, bool put, const struct etcd_kv *kv)
{
	(void)ctx;
	(void)put;
	(void)kv;
}

static const struct etcd_watch_ops ignored = {
	.snapshot = ignore_snapshot, .event = ignore_event,
};

int main(int argc, char **argv)
{
	struct hbm_cluster_config cfg = { .nr_endpoints = 1, .allow_plain_http = true };
	char err[256];
	struct etcd *e;
	int r, more = argc == 5 ? atoi(argv[4]) : 0;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: cluster-unwatch URL PREFIX snapshot|link|event|synced"
			" [WATCHES]\n");
		return 2;
	}
	in = argv[3];
	snprintf(cfg.endpoints[0], sizeof(cfg.endpoints[0]), "%s", argv[1]);
	if (sd_event_new(&loop) < 0 ||
	    sd_event_add_time_relative(loop, NULL, CLOCK_MONOTONIC, 20000000, 0, on_done,
				       NULL) < 0)
		return 1;
	e = etcd_new(loop, &cfg, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "cluster-unwatch: %s\n", err);
		return 1;
	}
	watch = etcd_watch(e, argv[2], &ops, NULL);
	if (!watch)
		return 1;
	while (more-- > 0)
		if (!etcd_watch(e, argv[2], &ignored, NULL))	/* etcd_free() frees it */
			return 1;
	r = sd_event_loop(loop);
	etcd_free(e);
	loop = sd_event_unref(loop);
	if (!unwatched)
		fprintf(stderr, "cluster-unwatch: the %s callback never came\n", in);
	return r || !unwatched || told_after;
}
