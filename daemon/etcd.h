/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A client of etcd v3's JSON gateway, driven by sd-event: libcurl's multi
 * interface, its sockets and timer mapped to the loop's io and time
 * sources, so that no request holds the loop or a thread.  Watches of a
 * prefix that survive reconnects (each resumes from the revision after
 * the last it delivered, its history there checked first) and compaction
 * or a store gone back (watched from now, and the prefix read again), and
 * one lease kept alive.  The messages are etcd_msg.h's.
 */
#ifndef HBM_ETCD_H
#define HBM_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "etcd_msg.h"

struct etcd;
struct etcd_req;

/* A request's end: @err 0 and @reply etcd's answer (borrowed), or an -errno. */
typedef void (*etcd_reply_fn)(void *ctx, int err, struct json_object *reply);

/* What a watch tells; every member is called from the loop. */
struct etcd_watch_ops {
	/* every key under the prefix as of @rev, replacing what was known */
	void (*snapshot)(void *ctx, const struct etcd_kv *kvs, size_t n, int64_t rev);
	void (*event)(void *ctx, bool put, const struct etcd_kv *kv);
	/* nothing under the prefix changed up to @rev but what was delivered */
	void (*synced)(void *ctx, int64_t rev);
	void (*link)(void *ctx, bool up, const char *why);	/* watching, or not */
};

struct etcd_watch;

struct etcd *etcd_new(sd_event *loop, const struct hbm_cluster_config *cfg, char *err,
		      size_t errlen);
void etcd_free(struct etcd *e);
struct etcd_req *etcd_call(struct etcd *e, const char *path, const char *body,
			   etcd_reply_fn done, void *ctx);
void etcd_cancel(struct etcd_req *r);
struct etcd_watch *etcd_watch(struct etcd *e, const char *prefix,
			      const struct etcd_watch_ops *ops, void *ctx);
void etcd_unwatch(struct etcd_watch *w);
void etcd_watch_reread(struct etcd_watch *w);
int etcd_lease(struct etcd *e, uint32_t ttl, void (*on_lease)(void *ctx, int64_t id), void *ctx);
const char *etcd_endpoint(const struct etcd *e);

#endif /* HBM_ETCD_H */
