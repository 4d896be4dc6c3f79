/* SPDX-License-Identifier: GPL-2.0 */
/*
 * etcd v3's messages as its JSON gateway speaks them: pure code, no I/O
 * (etcd.c sends them; cluster_proto.c builds transactions with them).
 *
 * Written from etcd v3.4.23 (Debian bookworm's etcd-server 3.4.23):
 * etcdserver/etcdserverpb/rpc.proto (RangeRequest, TxnRequest, Compare,
 * RequestOp, TxnResponse, ResponseOp, WatchCreateRequest, WatchResponse, LeaseGrant*,
 * LeaseKeepAlive*) and mvcc/mvccpb/kv.proto (KeyValue, Event); the paths
 * are rpc.proto's google.api.http options, served under "/v3/" by
 * embed/serve.go's createMux().  The gateway is grpc-gateway v1.9.5
 * (etcd's go.mod): its default marshaler is JSONPb{OrigName: true}
 * (runtime/marshaler_registry.go), so fields carry their proto names
 * (create_revision), bytes are base64, int64 are JSON strings, enums are
 * their names, and a field at its zero value is left out (a PUT event has
 * no "type", a failed txn no "succeeded").  A stream (watch, keepalive)
 * answers one {"result": MESSAGE} or {"error": ...} per line
 * (runtime/handler.go ForwardResponseStream, the JSONPb delimiter "\n").
 */
#ifndef HBM_ETCD_MSG_H
#define HBM_ETCD_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* The gateway's paths (rpc.proto, v3.4.23). */
#define ETCD_PATH_RANGE		"/v3/kv/range"
#define ETCD_PATH_TXN		"/v3/kv/txn"
#define ETCD_PATH_WATCH		"/v3/watch"
#define ETCD_PATH_GRANT		"/v3/lease/grant"
#define ETCD_PATH_KEEPALIVE	"/v3/lease/keepalive"
#define ETCD_PATH_REVOKE	"/v3/lease/revoke"

/* mvccpb.KeyValue, decoded; key and value NUL-terminated past their length. */
struct etcd_kv {
	char *key;
	size_t key_len;
	char *value;
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

/*
 * A Compare of a TxnRequest: its target against @v, or against @value
 * (ETCD_VALUE: a key not there never compares equal, applyCompare(),
 * etcdserver/apply.go, 3.4).
 */
enum etcd_target { ETCD_CREATE, ETCD_MOD, ETCD_VERSION, ETCD_VALUE };
enum etcd_result { ETCD_EQUAL, ETCD_NOT_EQUAL, ETCD_GREATER, ETCD_LESS };

struct etcd_cmp {
	const char *key;
	enum etcd_target target;
	enum etcd_result result;
	int64_t v;
	const char *value;	/* ETCD_VALUE: @value_len bytes */
	size_t value_len;
};

/*
 * A RequestOp: a put (under @lease, 0: none), a delete of one key or of a
 * prefix; a range of one key without its value (keys_only), or the count
 * of a prefix's keys (count_only), both of @revision (0: now).
 */
enum etcd_op_kind { ETCD_PUT, ETCD_DELETE, ETCD_DELETE_PREFIX, ETCD_RANGE_KEY, ETCD_COUNT_PREFIX };

struct etcd_op {
	enum etcd_op_kind kind;
	const char *key;
	const char *value;
	int64_t lease;
	int64_t revision;
};

/*
 * What a watch knows of its prefix at the revision through which it has
 * every event, to tell on resuming whether etcd's history up to there is
 * still the one it watched (etcd.c, resume_check()).  The mark is the last
 * key written that the watch knows of.
 */
struct etcd_fingerprint {
	int64_t count;			/* keys under the prefix; -1: not known */
	char *mark;			/* NULL: none known */
	int64_t mark_create, mark_mod, mark_version;
	bool mark_deleted;		/* since written: then absent */
};

enum etcd_fp_verdict { ETCD_FP_SAME, ETCD_FP_COUNT, ETCD_FP_MARK, ETCD_FP_BAD_REPLY };

char *etcd_base64(const void *data, size_t len);
int etcd_unbase64(const char *in, char **out, size_t *len);
char *etcd_prefix_end(const char *prefix);
char *etcd_txn_body(const struct etcd_cmp *cmp, size_t nr_cmp,
		    const struct etcd_op *ops, size_t nr_ops);
char *etcd_range_body(const char *prefix, const char *after, int64_t revision, int64_t limit);
char *etcd_watch_body(const char *prefix, int64_t start_revision);
int etcd_int64(struct json_object *o, const char *field, int64_t *v);
int etcd_kv_parse(struct json_object *o, struct etcd_kv *kv);
void etcd_kv_clear(struct etcd_kv *kv);
int64_t etcd_header_revision(struct json_object *reply);
void etcd_fp_read(struct etcd_fingerprint *fp, int64_t count, const struct etcd_kv *kvs, size_t n);
void etcd_fp_event(struct etcd_fingerprint *fp, bool put, const struct etcd_kv *kv);
void etcd_fp_clear(struct etcd_fingerprint *fp);
char *etcd_fp_check_body(const struct etcd_fingerprint *fp, const char *prefix, int64_t revision);
enum etcd_fp_verdict etcd_fp_judge(const struct etcd_fingerprint *fp, struct json_object *reply,
				   int64_t *count);

#endif /* HBM_ETCD_MSG_H */
