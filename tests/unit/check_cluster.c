// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of etcd's messages (daemon/etcd_msg.c) and of the incident
 * protocol across nodes (daemon/cluster_proto.c): several cores against
 * an etcd of the test's own, in memory, which applies their transactions
 * as etcd does (compares, then the success ops, one revision each) and
 * sends every change to every core, as the watch would.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "cluster_proto.h"
#include "ctl.h"
#include "etcd_msg.h"
#include "unit.h"

START_TEST(base64)
{
	static const char *const bad[] = { "QQ", "QQ=", "Q===", "QR==", "QUJ=", "Q!==", "====", "QQ==QQ==" };
	const char *in[] = { "", "A", "AB", "ABC", "ABCD", "\xff\x01" };
	char *enc, *dec;
	size_t len, i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		enc = etcd_base64(in[i], strlen(in[i]));
		ck_assert_int_eq(etcd_unbase64(enc, &dec, &len), 0);
		ck_assert_uint_eq(len, strlen(in[i]));
		ck_assert_mem_eq(dec, in[i], len);
		free(enc);
		free(dec);
	}
	enc = etcd_base64("foo", 3);
	ck_assert_str_eq(enc, "Zm9v");
	free(enc);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(etcd_unbase64(bad[i], &dec, &len) == -EINVAL, "accepted %s", bad[i]);
	enc = etcd_prefix_end("/hbmguard/");
	ck_assert_str_eq(enc, "/hbmguard0");
	free(enc);
}
END_TEST

START_TEST(kv_parse)
{
	static const char *const bad[] = {
		"[]", "{}", "{\"key\":\"\"}", "{\"key\":5}", "{\"key\":\"Zm9v\",\"mod_revision\":\"x\"}",
		"{\"key\":\"Zm9v\",\"mod_revision\":true}", "{\"key\":\"Zm9v\",\"value\":\"!!\"}",
		"{\"key\":\"YQBi\"}",	/* a NUL inside */
		/* one in the JSON string: "foo" up to it, the field's whole text not base64 */
		"{\"key\":\"Zm9v\\u0000QUFB\"}", "{\"key\":\"Zm9v\",\"value\":\"YmFy\\u0000\"}",
	};
	struct json_object *o = json_tokener_parse("{\"key\":\"Zm9v\",\"value\":\"YmFy\","
		"\"create_revision\":\"2\",\"mod_revision\":\"9\",\"version\":3,\"lease\":\"-1\"}");
	struct etcd_kv kv;
	size_t i;

	ck_assert_int_eq(etcd_kv_parse(o, &kv), 0);
	ck_assert_str_eq(kv.key, "foo");
	ck_assert_str_eq(kv.value, "bar");
	ck_assert_int_eq(kv.create_revision, 2);
	ck_assert_int_eq(kv.mod_revision, 9);
	ck_assert_int_eq(kv.version, 3);
	ck_assert_int_eq(kv.lease, -1);
	etcd_kv_clear(&kv);
	json_object_put(o);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = json_tokener_parse(bad[i]);
		ck_assert_msg(etcd_kv_parse(o, &kv) == -EINVAL, "accepted %s", bad[i]);
		ck_assert_ptr_null(kv.key);
		json_object_put(o);
	}
}
END_TEST

/* A read's pages: the first from the prefix, the next past the last key, of one revision. */
START_TEST(range_pages)
{
	struct json_object *o, *f;
	char *body, *last = etcd_base64("/hbmguard/v1/x", 14), *key;
	size_t len;

	body = etcd_range_body("/hbmguard/", NULL, 0, 1000);
	o = json_tokener_parse(body);
	ck_assert(json_object_object_get_ex(o, "key", &f));
	ck_assert_str_eq(json_object_get_string(f), "L2hibWd1YXJkLw==");	/* "/hbmguard/" */
	ck_assert(json_object_object_get_ex(o, "range_end", &f));
	ck_assert_str_eq(json_object_get_string(f), "L2hibWd1YXJkMA==");	/* "/hbmguard0" */
	ck_assert(!json_object_object_get_ex(o, "revision", &f));
	ck_assert(json_object_object_get_ex(o, "limit", &f));
	ck_assert_str_eq(json_object_get_string(f), "1000");
	json_object_put(o);
	free(body);

	body = etcd_range_body("/hbmguard/", last, 42, 1000);
	o = json_tokener_parse(body);
	ck_assert(json_object_object_get_ex(o, "key", &f));
	ck_assert_int_eq(etcd_unbase64(json_object_get_string(f), &key, &len), 0);
	ck_assert_uint_eq(len, 15);	/* the least key past it: a NUL byte after */
	ck_assert_mem_eq(key, "/hbmguard/v1/x", 15);
	free(key);
	ck_assert(json_object_object_get_ex(o, "range_end", &f));
	ck_assert_str_eq(json_object_get_string(f), "L2hibWd1YXJkMA==");
	ck_assert(json_object_object_get_ex(o, "revision", &f));
	ck_assert_str_eq(json_object_get_string(f), "42");
	json_object_put(o);
	free(body);
	free(last);
	ck_assert_ptr_null(etcd_range_body("/hbmguard/", "not base64!", 42, 1000));
}
END_TEST

/* ---- a watch's fingerprint of its prefix, checked when it resumes (etcd.c) ---- */

#define FP_KV(k, c, m, v) { .key = (char *)(k), .key_len = sizeof(k) - 1, .create_revision = (c), \
			    .mod_revision = (m), .version = (v) }

static void fp_assert_mark(const struct etcd_fingerprint *fp, const char *key, int64_t create,
			   int64_t mod, int64_t version, bool deleted)
{
	ck_assert_str_eq(fp->mark, key);
	ck_assert_int_eq(fp->mark_create, create);
	ck_assert_int_eq(fp->mark_mod, mod);
	ck_assert_int_eq(fp->mark_version, version);
	ck_assert_int_eq(fp->mark_deleted, deleted);
}

/* The count at the read (etcd's, unparsed keys too), then creates, re-creates, deletes. */
START_TEST(fingerprint_kept)
{
	const struct etcd_kv read[] = {
		FP_KV("/p/b", 4, 4, 1), FP_KV("/p/a", 2, 9, 3), FP_KV("/p/c", 5, 6, 2),
	};
	const struct etcd_kv created = FP_KV("/p/d", 12, 12, 1), updated = FP_KV("/p/d", 12, 13, 2),
		deleted = FP_KV("/p/d", 0, 14, 0), again = FP_KV("/p/d", 15, 15, 1),
		other = FP_KV("/p/b", 0, 16, 0), unparsed = { .mod_revision = 17, .version = 1 },
		unparsed_update = { .mod_revision = 18, .version = 2 };
	struct etcd_fingerprint fp = { 0 };

	etcd_fp_read(&fp, 4, read, 3);	/* a fourth key etcd_kv_parse() refused */
	ck_assert_int_eq(fp.count, 4);
	fp_assert_mark(&fp, "/p/a", 2, 9, 3, false);	/* the highest mod_revision */
	etcd_fp_event(&fp, true, &created);
	ck_assert_int_eq(fp.count, 5);
	fp_assert_mark(&fp, "/p/d", 12, 12, 1, false);
	etcd_fp_event(&fp, true, &updated);
	ck_assert_int_eq(fp.count, 5);
	fp_assert_mark(&fp, "/p/d", 12, 13, 2, false);
	etcd_fp_event(&fp, false, &deleted);
	ck_assert_int_eq(fp.count, 4);
	fp_assert_mark(&fp, "/p/d", 12, 13, 2, true);
	etcd_fp_event(&fp, true, &again);
	ck_assert_int_eq(fp.count, 5);
	fp_assert_mark(&fp, "/p/d", 15, 15, 1, false);
	etcd_fp_event(&fp, false, &other);	/* not the mark: still there */
	ck_assert_int_eq(fp.count, 4);
	fp_assert_mark(&fp, "/p/d", 15, 15, 1, false);
	etcd_fp_event(&fp, true, &unparsed);	/* counted, not a mark */
	etcd_fp_event(&fp, true, &unparsed_update);
	ck_assert_int_eq(fp.count, 5);
	fp_assert_mark(&fp, "/p/d", 15, 15, 1, false);
	/* a read again replaces it all; an empty prefix has no mark */
	etcd_fp_read(&fp, 0, NULL, 0);
	ck_assert_int_eq(fp.count, 0);
	ck_assert_ptr_null(fp.mark);
	etcd_fp_clear(&fp);
}
END_TEST

static struct json_object *txn_op(struct json_object *txn, size_t i, const char *field)
{
	struct json_object *ops, *op, *r;

	ck_assert(json_object_object_get_ex(txn, "success", &ops));
	op = json_object_array_get_idx(ops, i);
	ck_assert(json_object_object_get_ex(op, field, &r));
	return r;
}

static const char *field_text(struct json_object *o, const char *field)
{
	struct json_object *f;

	return json_object_object_get_ex(o, field, &f) ? json_object_get_string(f) : NULL;
}

/* One txn, no compares: the prefix's count at the revision, then the mark's key. */
START_TEST(fingerprint_check_body)
{
	const struct etcd_kv read[] = { FP_KV("/hbmguard/x", 2, 9, 3) };
	struct etcd_fingerprint fp = { 0 };
	struct json_object *o, *f, *r;
	char *body;

	etcd_fp_read(&fp, 3, read, 1);
	body = etcd_fp_check_body(&fp, "/hbmguard/", 41);
	o = json_tokener_parse(body);
	ck_assert(json_object_object_get_ex(o, "compare", &f));
	ck_assert_uint_eq(json_object_array_length(f), 0);
	ck_assert(json_object_object_get_ex(o, "success", &f));
	ck_assert_uint_eq(json_object_array_length(f), 2);
	r = txn_op(o, 0, "request_range");
	ck_assert_str_eq(field_text(r, "key"), "L2hibWd1YXJkLw==");	/* "/hbmguard/" */
	ck_assert_str_eq(field_text(r, "range_end"), "L2hibWd1YXJkMA==");	/* "/hbmguard0" */
	ck_assert_str_eq(field_text(r, "revision"), "41");
	ck_assert_str_eq(field_text(r, "count_only"), "true");
	r = txn_op(o, 1, "request_range");
	ck_assert_str_eq(field_text(r, "key"), "L2hibWd1YXJkL3g=");	/* "/hbmguard/x" */
	ck_assert_ptr_null(field_text(r, "range_end"));
	ck_assert_str_eq(field_text(r, "revision"), "41");
	ck_assert_str_eq(field_text(r, "keys_only"), "true");
	json_object_put(o);
	free(body);
	etcd_fp_read(&fp, 0, NULL, 0);	/* no mark: the count alone */
	body = etcd_fp_check_body(&fp, "/hbmguard/", 41);
	o = json_tokener_parse(body);
	ck_assert(json_object_object_get_ex(o, "success", &f));
	ck_assert_uint_eq(json_object_array_length(f), 1);
	json_object_put(o);
	free(body);
	etcd_fp_clear(&fp);
}
END_TEST

/* A TxnResponse as the gateway writes it: the count's range, then the mark's (@kvs). */
static enum etcd_fp_verdict judge(const struct etcd_fingerprint *fp, const char *count,
				  const char *kvs)
{
	char text[1024];
	struct json_object *o;
	enum etcd_fp_verdict v;
	int64_t n;

	snprintf(text, sizeof(text), "{\"header\":{\"revision\":\"50\"},\"succeeded\":true,"
		 "\"responses\":[{\"response_range\":{\"header\":{\"revision\":\"50\"}%s%s}}"
		 "%s%s%s]}", count ? ",\"count\":" : "", count ? count : "",
		 kvs ? ",{\"response_range\":{\"header\":{\"revision\":\"50\"}" : "",
		 kvs ? kvs : "", kvs ? "}}" : "");
	o = json_tokener_parse(text);
	ck_assert_ptr_nonnull(o);
	v = etcd_fp_judge(fp, o, &n);
	json_object_put(o);
	return v;
}

/* "/p/d" (L3AvZA==), created at 12, written at 13, version 2 */
#define MARK_KVS(create, mod, version) ",\"kvs\":[{\"key\":\"L3AvZA==\",\"create_revision\":\"" \
	create "\",\"mod_revision\":\"" mod "\",\"version\":\"" version "\"}],\"count\":\"1\""

START_TEST(fingerprint_judged)
{
	static const char *const hostile[] = {
		"{}", "{\"responses\":{}}", "{\"responses\":[]}", "{\"responses\":[1,2]}",
		"{\"responses\":[{\"response_put\":{}},{\"response_range\":{}}]}",
		"{\"responses\":[{\"response_range\":[]},{\"response_range\":{}}]}",
		"{\"responses\":[{\"response_range\":{\"count\":\"x\"}},{\"response_range\":{}}]}",
		"{\"responses\":[{\"response_range\":{\"count\":\"5\"}},{\"response_range\":{}},{}]}",
		"{\"responses\":[{\"response_range\":{\"count\":\"5\"}},{\"response_range\":{\"kvs\":{}}}]}",
		"{\"responses\":[{\"response_range\":{\"count\":\"5\"}},{\"response_range\":{\"kvs\":[1]}}]}",
		"{\"responses\":[{\"response_range\":{\"count\":\"5\"}},{\"response_range\":{\"kvs\":[{\"key\":\"L3AvZA==\"},{\"key\":\"L3AvZA==\"}]}}]}",
		"{\"responses\":[{\"response_range\":{\"count\":\"5\"}},{\"response_range\":{\"kvs\":[{\"key\":5}]}}]}",
		"{\"error\":\"etcdserver: mvcc: required revision has been compacted\",\"code\":11}",
	};
	const struct etcd_kv written = FP_KV("/p/d", 12, 13, 2), deleted = FP_KV("/p/d", 0, 14, 0);
	struct etcd_fingerprint fp = { 0 };
	struct json_object *o;
	int64_t n;

	etcd_fp_read(&fp, 5, &written, 1);
	ck_assert_int_eq(judge(&fp, "\"5\"", MARK_KVS("12", "13", "2")), ETCD_FP_SAME);
	ck_assert_int_eq(judge(&fp, "\"6\"", MARK_KVS("12", "13", "2")), ETCD_FP_COUNT);
	ck_assert_int_eq(judge(&fp, NULL, MARK_KVS("12", "13", "2")), ETCD_FP_COUNT);	/* 0, left out */
	/* another history's write of the key: each of its revisions differs */
	ck_assert_int_eq(judge(&fp, "\"5\"", MARK_KVS("12", "20", "2")), ETCD_FP_MARK);
	ck_assert_int_eq(judge(&fp, "\"5\"", MARK_KVS("10", "13", "2")), ETCD_FP_MARK);
	ck_assert_int_eq(judge(&fp, "\"5\"", MARK_KVS("12", "13", "1")), ETCD_FP_MARK);
	ck_assert_int_eq(judge(&fp, "\"5\"", ""), ETCD_FP_MARK);	/* absent */
	ck_assert_int_eq(judge(&fp, "\"5\"", ",\"kvs\":[{\"key\":\"L3Av\",\"create_revision\":\"12\","
			       "\"mod_revision\":\"13\",\"version\":\"2\"}]"), ETCD_FP_MARK);
	ck_assert_int_eq(judge(&fp, "\"5\"", NULL), ETCD_FP_BAD_REPLY);	/* the mark's range missing */
	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		o = json_tokener_parse(hostile[i]);
		ck_assert_msg(etcd_fp_judge(&fp, o, &n) == ETCD_FP_BAD_REPLY, "took %s", hostile[i]);
		json_object_put(o);
	}
	/* deleted since: it must be absent */
	etcd_fp_event(&fp, false, &deleted);
	ck_assert_int_eq(judge(&fp, "\"4\"", ""), ETCD_FP_SAME);
	ck_assert_int_eq(judge(&fp, "\"4\"", MARK_KVS("12", "13", "2")), ETCD_FP_MARK);
	etcd_fp_read(&fp, 0, NULL, 0);	/* no mark: one range */
	ck_assert_int_eq(judge(&fp, NULL, NULL), ETCD_FP_SAME);
	ck_assert_int_eq(judge(&fp, "\"1\"", NULL), ETCD_FP_COUNT);
	ck_assert_int_eq(judge(&fp, NULL, ""), ETCD_FP_BAD_REPLY);
	etcd_fp_clear(&fp);
}
END_TEST

/* A compare of a key's value: its bytes, a NUL among them, base64 as rpc.proto's bytes are. */
START_TEST(txn_value_compare)
{
	struct etcd_cmp cmp = { .key = "/k", .target = ETCD_VALUE, .result = ETCD_EQUAL,
				.value = "a\0b", .value_len = 3 };
	struct etcd_op op = { .kind = ETCD_DELETE, .key = "/k" };
	char *body = etcd_txn_body(&cmp, 1, &op, 1);
	struct json_object *o = json_tokener_parse(body), *cmps, *c;

	ck_assert(json_object_object_get_ex(o, "compare", &cmps));
	c = json_object_array_get_idx(cmps, 0);
	ck_assert_str_eq(field_text(c, "target"), "VALUE");
	ck_assert_str_eq(field_text(c, "result"), "EQUAL");
	ck_assert_str_eq(field_text(c, "value"), "YQBi");
	ck_assert_str_eq(field_text(c, "key"), "L2s=");
	ck_assert_int_eq(json_object_object_length(c), 4);
	json_object_put(o);
	free(body);
}
END_TEST

/* ---- an etcd of the test's own ---- */

#define NODES 4
#define KEYS 256

struct fkv {
	char *key, *value;
	int64_t create, mod, version, lease;
};

static struct fkv store[KEYS];
static unsigned int rereads[NODES];	/* CL_REREAD asked */
static int64_t rev;
static struct cl_core *cores[NODES];
static int nr_cores;
static bool linked[NODES];
static uint64_t now;
static int fail_node = -1, fail_step = -1, mute_node = -1;
static int deaf_node = -1;	/* its watch brings nothing, its link up */
static int late_node = -1;	/* its ACK of resume answered by the test, in late */
static struct cl_action late;
static char said[NODES][8192];
static unsigned int closed[NODES][2];	/* [resumed] */
static unsigned int steps[NODES][CL_NR_STEPS];
static uint32_t told_rank[NODES];	/* the failed rank of the last step asked */
static char told_why[NODES][2 * CL_REASON_LEN];	/* the text of the last step asked */
static char id[HBM_CLUSTER_NAME_LEN];	/* what cl_error() said it opens under */
static char watched[NODES][4][256];	/* the acknowledgements each core watches */
static unsigned int sent[NODES][CL_TXN_LEAVE + 1];	/* transactions, by kind */
/* each transaction answered before the watch brings what it changed */
static bool answer_first, holding;
static struct held { struct fkv f; bool put; } held[KEYS];
static int nr_held;
static void (*before_close)(void);	/* a writer's put, taken by etcd just before a close */

static bool watches(int n, const char *key)
{
	if (strncmp(key, CL_ACKS_V1, strlen(CL_ACKS_V1)))
		return true;	/* under CL_PREFIX: everyone's */
	for (int w = 0; w < 4; w++)
		if (watched[n][w][0] && !strncmp(key, watched[n][w], strlen(watched[n][w])))
			return true;
	return false;
}

static struct fkv *find(const char *k)
{
	for (int i = 0; i < KEYS; i++)
		if (store[i].key && !strcmp(store[i].key, k))
			return &store[i];
	return NULL;
}

static void deliver(const struct fkv *f, bool put)
{
	struct etcd_kv kv = { .key = f->key, .key_len = strlen(f->key), .value = f->value ? f->value : "",
			      .value_len = f->value ? strlen(f->value) : 0,
			      .create_revision = f->create, .mod_revision = f->mod, .version = f->version,
			      .lease = f->lease };

	if (holding) {
		ck_assert_int_lt(nr_held, KEYS);
		held[nr_held].f = *f;
		held[nr_held].f.key = strdup(f->key);
		held[nr_held].f.value = f->value ? strdup(f->value) : NULL;
		held[nr_held++].put = put;
		return;
	}
	for (int n = 0; n < nr_cores; n++)
		if (linked[n] && n != deaf_node && watches(n, f->key))
			(put ? cl_put : cl_delete)(cores[n], &kv, now);
}

/* What a transaction changed, to the watches, after its answer. */
static void release(void)
{
	for (int i = 0; i < nr_held; i++) {
		deliver(&held[i].f, held[i].put);
		free(held[i].f.key);
		free(held[i].f.value);
	}
	nr_held = 0;
}

/* A put under @lease (0: none), as etcd applies it: every core hears it. */
static void fput_leased(const char *k, const char *v, int64_t lease)
{
	struct fkv *f = find(k);
	int i;

	rev++;
	if (!f) {
		for (i = 0; store[i].key; i++)
			;
		f = &store[i];
		f->key = strdup(k);
		f->create = rev;
		f->version = 0;
	}
	free(f->value);
	f->value = strdup(v);
	f->mod = rev;
	f->version++;
	f->lease = lease;
	deliver(f, true);
}

/* A put of the test's, as etcdctl would: no lease. */
static void fput(const char *k, const char *v)
{
	fput_leased(k, v, 0);
}

/* Out of the fake's store (it holds KEYS), left in the cores' memory. */
static void store_forget(const char *k)
{
	struct fkv *f = find(k);

	free(f->key);
	free(f->value);
	memset(f, 0, sizeof(*f));
}

static void fdel(struct fkv *f)
{
	f->mod = rev;
	deliver(f, false);
	free(f->key);
	free(f->value);
	memset(f, 0, sizeof(*f));
}

static char *b64field(struct json_object *o, const char *field)
{
	struct json_object *f;
	char *out;
	size_t len;

	ck_assert(json_object_object_get_ex(o, field, &f));
	ck_assert_int_eq(etcd_unbase64(json_object_get_string(f), &out, &len), 0);
	return out;
}

/* Compares, then the success ops at one revision; events after. */
static bool txn(const char *body)
{
	struct json_object *t = json_tokener_parse(body), *cmps, *ops;
	bool ok = true;
	size_t i;

	ck_assert_ptr_nonnull(t);
	json_object_object_get_ex(t, "compare", &cmps);
	json_object_object_get_ex(t, "success", &ops);
	for (i = 0; i < json_object_array_length(cmps); i++) {
		struct json_object *c = json_object_array_get_idx(cmps, i), *tg, *res;
		char *k = b64field(c, "key");
		struct fkv *f = find(k);
		const char *target;
		int64_t v, have;

		json_object_object_get_ex(c, "target", &tg);
		json_object_object_get_ex(c, "result", &res);
		target = json_object_get_string(tg);
		ck_assert_str_eq(json_object_get_string(res), "EQUAL");
		if (!strcmp(target, "VALUE")) {
			char *value = b64field(c, "value");

			/* a key not there never equal (applyCompare()) */
			ok = ok && f && !strcmp(f->value, value);
			free(value);
			free(k);
			continue;
		}
		ck_assert_int_eq(etcd_int64(c, !strcmp(target, "CREATE") ? "create_revision" :
					    "mod_revision", &v), 0);
		have = !f ? 0 : !strcmp(target, "CREATE") ? f->create : f->mod;
		ok = ok && have == v;
		free(k);
	}
	if (ok && json_object_array_length(ops)) {
		rev++;
		for (i = 0; i < json_object_array_length(ops); i++) {
			struct json_object *op = json_object_array_get_idx(ops, i), *r;
			char *k;

			if (json_object_object_get_ex(op, "request_put", &r)) {
				char *v = b64field(r, "value");
				int64_t lease = 0;

				if (json_object_object_get_ex(r, "lease", NULL))
					ck_assert_int_eq(etcd_int64(r, "lease", &lease), 0);
				k = b64field(r, "key");
				rev--;	/* fput() counts it: one revision for the txn */
				fput_leased(k, v, lease);
				free(v);
			} else {
				ck_assert(json_object_object_get_ex(op, "request_delete_range", &r));
				k = b64field(r, "key");
				if (json_object_object_get_ex(r, "range_end", NULL)) {
					for (int s = 0; s < KEYS; s++)
						if (store[s].key && !strncmp(store[s].key, k, strlen(k)))
							fdel(&store[s]);
				} else if (find(k)) {
					fdel(find(k));
				}
			}
			free(k);
		}
	}
	json_object_put(t);
	return ok;
}

/* The keys under @prefix, as a range returns them (borrowed from the store). */
static size_t collect(const char *prefix, struct etcd_kv *kvs)
{
	size_t k = 0;

	for (int i = 0; i < KEYS; i++)
		if (store[i].key && !strncmp(store[i].key, prefix, strlen(prefix)))
			kvs[k++] = (struct etcd_kv){ .key = store[i].key, .key_len = strlen(store[i].key),
				.value = store[i].value, .value_len = strlen(store[i].value),
				.create_revision = store[i].create, .mod_revision = store[i].mod,
				.version = store[i].version, .lease = store[i].lease };
	return k;
}

/* A watch of acknowledgements: what is there first, as a snapshot. */
static void watch(int n, const char *prefix)
{
	struct etcd_kv kvs[KEYS];
	size_t k = collect(prefix, kvs);
	int w;

	for (w = 0; w < 4 && watched[n][w][0]; w++)
		;
	ck_assert_int_lt(w, 4);
	snprintf(watched[n][w], sizeof(watched[n][w]), "%s", prefix);
	cl_acks_snapshot(cores[n], prefix, kvs, k, now);
}

/* The prefix read again, as etcd_watch_reread() does. */
static void reread(int n)
{
	struct etcd_kv kvs[KEYS];

	rereads[n]++;
	cl_snapshot(cores[n], kvs, collect(CL_PREFIX, kvs), rev, now);
}

/* Every core's actions until none is left; the local side does each step at once. */
static void run(void)
{
	bool more = true;

	while (more) {
		more = false;
		for (int n = 0; n < nr_cores; n++) {
			struct cl_action a;

			while (cl_next_action(cores[n], &a)) {
				more = true;
				switch (a.kind) {
				case CL_TXN:
					if (a.txn == CL_TXN_CLOSE && before_close) {
						void (*f)(void) = before_close;

						before_close = NULL;
						f();
					}
					if (n == late_node && a.txn == CL_TXN_ACK && a.step == CL_RESUME) {
						/* written, answered once all else is done */
						ck_assert(txn(a.body));
						late = a;
						late_node = -1;
						free(a.body);
						break;
					}
					if (n == mute_node || !linked[n]) {
						cl_txn_done(cores[n], &a, -EHOSTUNREACH, false, -1, now);
					} else {
						bool ok;

						holding = answer_first;
						ok = txn(a.body);
						holding = false;
						cl_txn_done(cores[n], &a, 0, ok, rev, now);
						release();
					}
					sent[n][a.txn]++;
					free(a.body);
					ck_assert_uint_lt(sent[n][a.txn], 1000);	/* no loop */
					break;
				case CL_LOCAL:
					steps[n][a.step]++;
					told_rank[n] = a.rank;
					strcpy(told_why[n], a.text);
					if (n != mute_node)
						cl_local_done(cores[n], a.job, a.id, a.step,
							      !(n == fail_node && (int)a.step == fail_step),
							      "told to fail", now);
					break;
				case CL_CLOSED:
					closed[n][a.step == CL_RESUME]++;
					break;
				case CL_LOG:
					ck_assert_uint_lt(strlen(said[n]) + strlen(a.text) + 1, sizeof(said[n]));
					strcat(said[n], a.text);
					strcat(said[n], "\n");
					break;
				case CL_WATCH:
					watch(n, a.text);
					break;
				case CL_UNWATCH:
					for (int w = 0; w < 4; w++)
						if (!strcmp(watched[n][w], a.text))
							watched[n][w][0] = 0;
					break;
				case CL_REREAD:
					reread(n);
					break;
				}
			}
		}
	}
}

/* Time passes by @us; the timer of core @n fires (-1: every core's); their actions taken. */
static void tick(int n, uint64_t us)
{
	now += us;
	for (int i = 0; i < nr_cores; i++)
		if (n < 0 || i == n)
			cl_tick(cores[i], now);
	run();
}

/* Incident x1, rank 1 lost, opened by n9 (no core: it never steps) over @nodes ("n0,n9"), at pause. */
static void peer_opens_x1(const char *nodes)
{
	char v[256], list[128] = "";
	const char *p = nodes;

	while (*p) {
		size_t len = strcspn(p, ",");

		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%.*s\"",
			 list[0] ? "," : "", (int)len, p);
		p += len + (p[len] == ',');
	}
	snprintf(v, sizeof(v), "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[%s]}", list);
	fput("/hbmguard/v1/jobs/J/incident", v);
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"pause\",\"timeout\":30}");
}

static uint64_t counter;
static uint64_t nonce(void)
{
	return ++counter;
}

static void setup(void)
{
	struct cl_timeouts t = { { 30, 30, 120, 30, 10 } };
	char name[16], value[64];

	memset(store, 0, sizeof(store));
	memset(said, 0, sizeof(said));
	memset(closed, 0, sizeof(closed));
	memset(steps, 0, sizeof(steps));
	memset(told_rank, 0xff, sizeof(told_rank));
	memset(watched, 0, sizeof(watched));
	memset(sent, 0, sizeof(sent));
	memset(rereads, 0, sizeof(rereads));
	answer_first = false;
	before_close = NULL;
	rev = 1;
	now = 1000000;
	fail_node = fail_step = mute_node = deaf_node = late_node = -1;
	nr_cores = 3;
	for (int n = 0; n < nr_cores; n++) {
		snprintf(name, sizeof(name), "n%d", n);
		cores[n] = cl_new(name, &t, nonce);
		linked[n] = true;
		cl_link(cores[n], true, now);
		cl_snapshot(cores[n], NULL, 0, rev, now);
		cl_lease(cores[n], 100 + n, now);
		snprintf(value, sizeof(value), "{\"ranks\":[%d],\"world_size\":3}", n);
		ck_assert_int_eq(cl_job_join(cores[n], "J", value, now), 0);
	}
	run();
}

static void teardown(void)
{
	for (int n = 0; n < nr_cores; n++)
		cl_free(cores[n]);
	for (int i = 0; i < KEYS; i++) {
		free(store[i].key);
		free(store[i].value);
	}
}

static int keys_under(const char *prefix)
{
	int n = 0;

	for (int i = 0; i < KEYS; i++)
		n += store[i].key && !strncmp(store[i].key, prefix, strlen(prefix));
	return n;
}

START_TEST(resumed_everywhere)
{
	struct hbm_ctl_cluster_node view;
	char second[HBM_CLUSTER_NAME_LEN];

	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/nodes/"), 3);
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++) {
		for (int s = CL_PAUSE; s <= CL_RESUME; s++)
			ck_assert_uint_eq(steps[n][s], 1);
		ck_assert_uint_eq(steps[n][CL_ABORT], 0);
		ck_assert_uint_eq(closed[n][1], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "opened by n1 on 3 nodes: a UE"));
		ck_assert_uint_eq(told_rank[n], 1);	/* whose state was lost: n1's rank */
	}
	/*
	 * none open now; the closed one is still shown, at its last step: the
	 * opener heard every node acknowledge each step, another node its own
	 */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cl_view_get(cores[1], i, &view), 0);
		ck_assert_uint_eq(view.total, 3);
		ck_assert_str_eq(view.id, id);
		ck_assert_int_eq(view.step, CL_RESUME);
		ck_assert_uint_eq(view.acked, 0xfU);
		ck_assert_uint_ne(view.step_at[CL_RESUME], 0);
		ck_assert_int_eq(cl_view_get(cores[0], i, &view), 0);
		ck_assert_uint_eq(view.acked, strcmp(view.node, "n0") ? 0 : 0xfU);
	}
	ck_assert_int_eq(cl_view_get(cores[1], 3, &view), -ENOENT);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_int_eq(keys_under(CL_ACKS_V1), 0);
	ck_assert_str_eq(watched[1][0], "");	/* and no longer, once closed */
	ck_assert_uint_eq(cl_next_deadline(cores[0]), UINT64_MAX);
	/* and a second incident, later, as well */
	ck_assert_int_eq(cl_error(cores[2], "J", 2, "another UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 2);
	/* the newest first; CLOSED_KEPT (16) kept, the oldest forgotten */
	ck_assert_int_eq(cl_view_get(cores[2], 0, &view), 0);
	ck_assert_str_eq(view.id, id);
	ck_assert_uint_eq(view.total, 6);
	strcpy(second, id);
	for (int i = 0; i < 15; i++) {
		ck_assert_int_eq(cl_error(cores[2], "J", 2, "and more", now, id), 0);
		run();
	}
	ck_assert_int_eq(cl_view_get(cores[2], 45, &view), 0);
	ck_assert_str_eq(view.id, second);
	ck_assert_int_eq(cl_view_get(cores[2], 47, &view), 0);
	ck_assert_int_eq(cl_view_get(cores[2], 48, &view), -ENOENT);
	ck_assert_int_eq(cl_view_get(cores[2], 0, &view), 0);
	ck_assert_str_eq(view.id, id);
	ck_assert_int_eq(cl_error(cores[0], "nope", 0, "x", now, id), -ENOENT);
	ck_assert_int_eq(cl_error(cores[0], "J", 3, "x", now, id), -EINVAL);	/* out of its world */
}
END_TEST

/*
 * etcd's answer before the watch brings the change (separate connections):
 * no transaction is sent again that etcd took, so that an incident costs
 * one open, one acknowledgement per node and step, one write per step.
 */
START_TEST(answered_before_watched)
{
	answer_first = true;
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(closed[n][1], 1);
		ck_assert_uint_eq(sent[n][CL_TXN_ACK], CL_RESUME + 1);
		ck_assert_uint_eq(sent[n][CL_TXN_ABORT], 0);
	}
	ck_assert_uint_eq(sent[1][CL_TXN_OPEN], 1);
	ck_assert_uint_eq(sent[1][CL_TXN_ADVANCE], CL_RESUME);
	ck_assert_uint_eq(sent[1][CL_TXN_CLOSE], 1);
	ck_assert_uint_eq(sent[0][CL_TXN_OPEN] + sent[0][CL_TXN_ADVANCE] + sent[0][CL_TXN_CLOSE], 0);
}
END_TEST

/*
 * A change of ours etcd took whose event the watch never brings (its
 * link up): the ranks here are aborted once, nothing is sent again, and
 * the next deadline is ahead, not past (the loop would spin on it).
 */
START_TEST(change_taken_watch_behind)
{
	mute_node = 2;
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	deaf_node = 0;
	tick(-1, 30 * 1000000ULL);
	ck_assert_uint_eq(sent[0][CL_TXN_ABORT], 1);
	for (int i = 0; i < 5; i++) {
		unsigned int before = sent[0][CL_TXN_ABORT] + sent[0][CL_TXN_CLOSE];

		now += 10 * 1000000ULL;
		cl_tick(cores[0], now);
		run();
		ck_assert_uint_gt(cl_next_deadline(cores[0]), now);
		ck_assert_uint_eq(sent[0][CL_TXN_ABORT] + sent[0][CL_TXN_CLOSE], before);
	}
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
}
END_TEST

/*
 * etcd's store goes back (restored from a snapshot) after it took our
 * open and before the watch brought it: the read that follows is of a
 * revision below the open's answer, without the incident.  The open is
 * made again, not waited for until the pause deadline aborts the job.
 */
START_TEST(store_went_back)
{
	struct etcd_kv kvs[KEYS];
	struct cl_action a;
	bool taken = false;

	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	while (cl_next_action(cores[0], &a)) {
		if (a.kind == CL_TXN && a.txn == CL_TXN_OPEN) {
			/* taken at a revision past the store's, then lost with it */
			cl_txn_done(cores[0], &a, 0, true, rev + 5, now);
			taken = true;
		}
		if (a.kind == CL_TXN)
			free(a.body);
	}
	ck_assert(taken);
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 0);
	cl_snapshot(cores[0], kvs, collect(CL_PREFIX, kvs), rev, now);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
	ck_assert_uint_eq(sent[0][CL_TXN_OPEN], 1);	/* the second: run() counts its own */
}
END_TEST

/* A node that never acknowledges: the deadline aborts it everywhere, then it closes. */
START_TEST(deadline_aborts)
{
	struct hbm_ctl_cluster_node v;

	mute_node = 2;
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	/* the opener sees who acknowledged the pause, and when; n1 its own only */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cl_view_get(cores[0], i, &v), 0);
		ck_assert_uint_eq(v.total, 3);
		ck_assert_str_eq(v.opener, "n0");
		ck_assert_int_eq(v.step, CL_PAUSE);
		ck_assert_uint_eq(v.failed_rank, 0);
		ck_assert_uint_eq(v.acked, (strcmp(v.node, "n2") ? 1U << CL_PAUSE : 0));
		ck_assert(!strcmp(v.node, "n2") || v.acked_at[CL_PAUSE] >= v.step_at[CL_PAUSE]);
		ck_assert_uint_ne(v.step_at[CL_PAUSE], 0);
	}
	ck_assert_int_eq(cl_view_get(cores[0], 3, &v), -ENOENT);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cl_view_get(cores[1], i, &v), 0);
		ck_assert_uint_eq(v.acked, (strcmp(v.node, "n1") ? 0 : 1U << CL_PAUSE));
	}
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	ck_assert_uint_eq(steps[0][CL_ISOLATE], 0);
	/* the opener alone watches the acknowledgements */
	ck_assert_ptr_nonnull(strstr(watched[0][0], CL_ACKS_V1 "J/"));
	ck_assert_str_eq(watched[1][0], "");
	ck_assert_str_eq(watched[2][0], "");
	ck_assert_uint_eq(cl_next_deadline(cores[0]), now + 30 * 1000000ULL);
	tick(-1, 30 * 1000000ULL);
	for (int n = 0; n < 2; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "the deadline of pause passed, waiting for n2"));
		ck_assert_uint_eq(closed[n][0], 0);
	}
	/* n2 never acknowledges the abort either: its deadline closes it */
	tick(-1, 10 * 1000000ULL);
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][0], 1);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
}
END_TEST

START_TEST(failed_step_and_second_error)
{
	fail_node = 2;
	fail_step = CL_RESTORE;
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_RESUME], 0);
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(closed[n][0], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "aborted: node n2 failed restore: told to fail"));
	}
	/* a second error while one is open: every node aborts, told why */
	fail_node = -1;
	mute_node = 1;	/* holds the incident at pause */
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	ck_assert_int_eq(cl_error(cores[2], "J", 2, "another UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 2);
		ck_assert_ptr_nonnull(strstr(said[n], "a second error on node n2 (another UE)"));
	}
}
END_TEST

/* Two nodes open at once: one incident, and the other's error escalates it. */
START_TEST(two_open_at_once)
{
	struct cl_action a0, a1;

	cl_error(cores[0], "J", 0, "UE 0", now, id);
	cl_error(cores[1], "J", 1, "UE 1", now, id);
	ck_assert(cl_next_action(cores[0], &a0));
	ck_assert(cl_next_action(cores[1], &a1));
	ck_assert_int_eq(a0.txn, CL_TXN_OPEN);
	ck_assert_int_eq(a1.txn, CL_TXN_OPEN);
	ck_assert(txn(a0.body));
	cl_txn_done(cores[0], &a0, 0, true, rev, now);
	ck_assert(!txn(a1.body));
	cl_txn_done(cores[1], &a1, 0, false, rev, now);
	free(a0.body);
	free(a1.body);
	run();
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(closed[n][0], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "a second error on node n1 (UE 1)"));
	}
}
END_TEST

/* A node of the incident whose key goes (its lease ended): aborted everywhere. */
START_TEST(lease_ends)
{
	mute_node = 2;
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	linked[2] = false;
	fdel(find("/hbmguard/v1/jobs/J/nodes/n2"));
	run();
	for (int n = 0; n < 2; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "node n2 left the job (its lease ended)"));
		ck_assert_uint_eq(closed[n][0], 1);	/* n2, not alive, is not waited for */
	}
}
END_TEST

/* Without etcd past a deadline, a node aborts its own ranks; the abort is written when back. */
START_TEST(etcd_gone)
{
	cl_error(cores[0], "J", 0, "a UE", now, id);
	mute_node = 1;
	run();
	mute_node = -1;
	linked[0] = false;
	cl_link(cores[0], false, now);
	tick(0, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_ptr_nonnull(strstr(said[0], "etcd unreachable past the deadline of pause"));
	ck_assert_uint_eq(cl_next_deadline(cores[0]), UINT64_MAX);
	ck_assert_uint_eq(steps[1][CL_ABORT], 0);
	linked[0] = true;
	cl_link(cores[0], true, now);
	run();
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	ck_assert_ptr_nonnull(strstr(said[1], "could not reach etcd past the deadline of pause"));
}
END_TEST

/* etcd gone before the error: no incident can open, the local ranks abort at the deadline. */
START_TEST(etcd_gone_before)
{
	linked[1] = false;
	cl_link(cores[1], false, now);
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[1][CL_ABORT], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[1]), now + 30 * 1000000ULL);
	tick(1, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	ck_assert_ptr_nonnull(strstr(said[1], "not opened by the pause deadline after an error (a UE): etcd unreachable"));
	/* the ranks' abort says why, whole in the local incident's reason (hbmctl incidents) */
	ck_assert_str_eq(told_why[1], "not opened across nodes: etcd unreachable");
	ck_assert_uint_lt(strlen(told_why[1]), sizeof(((struct hbm_ctl_incident *)0)->reason));
	ck_assert_uint_eq(cl_next_deadline(cores[1]), UINT64_MAX);
	/* and nothing is opened once etcd is back */
	linked[1] = true;
	cl_link(cores[1], true, now);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(steps[0][CL_PAUSE], 0);
}
END_TEST

/* An incident that ended while a node was away: its read again says so, its ranks abort. */
START_TEST(closed_while_away)
{
	struct etcd_kv kvs[KEYS];

	mute_node = 2;		/* its ranks slow to pause, then its watch breaks */
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	ck_assert_uint_eq(steps[2][CL_PAUSE], 1);
	linked[2] = false;
	now += 30 * 1000000ULL;	/* the others abort at the pause deadline */
	cl_tick(cores[0], now);
	cl_tick(cores[1], now);
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	now += 10 * 1000000ULL;	/* n2 acknowledges no abort: its deadline closes it */
	cl_tick(cores[0], now);
	cl_tick(cores[1], now);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(closed[2][0], 0);
	linked[2] = true;
	cl_snapshot(cores[2], kvs, collect("/hbmguard/", kvs), rev, now);
	run();
	ck_assert_uint_eq(steps[2][CL_ABORT], 1);
	ck_assert_uint_eq(closed[2][0], 1);
	ck_assert_ptr_nonnull(strstr(said[2], "aborted"));
}
END_TEST

/*
 * An error whose incident could not open (etcd gone) aborted this node's
 * ranks: a later incident of another node's still pauses them.
 */
START_TEST(abort_before_open_is_not_sticky)
{
	linked[1] = false;
	cl_link(cores[1], false, now);
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	tick(1, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	linked[1] = true;
	cl_link(cores[1], true, now);
	run();
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a later UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
	ck_assert_uint_eq(steps[1][CL_PAUSE], 1);
}
END_TEST

/* An open in flight past the pause deadline: no deadline in the past to spin on. */
START_TEST(open_in_flight_no_spin)
{
	struct cl_action a;
	int txns = 0;

	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	while (cl_next_action(cores[0], &a)) {	/* taken, not answered */
		txns += a.kind == CL_TXN;
		free(a.body);
	}
	ck_assert_int_eq(txns, 1);
	now += 31 * 1000000ULL;
	cl_tick(cores[0], now);
	while (cl_next_action(cores[0], &a))
		free(a.body);
	ck_assert_uint_gt(cl_next_deadline(cores[0]), now);
}
END_TEST

/* A second error here while this node's abort is decided, not yet written: aborted too. */
START_TEST(second_error_while_aborting)
{
	mute_node = 2;
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	mute_node = -1;
	ck_assert_uint_eq(steps[1][CL_PAUSE], 1);
	linked[1] = false;	/* n1 loses etcd past the deadline: it aborts its ranks */
	cl_link(cores[1], false, now);
	tick(1, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a second UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[1][CL_ABORT], 2);
	ck_assert_str_ne(id, "");	/* the open incident's */
}
END_TEST

/* What is not of the layout, or not its JSON, is refused with a line and changes nothing. */
START_TEST(hostile)
{
	static const struct {
		const char *key, *value, *why;
	} bad[] = {
		{ "/hbmguard/v1/jobs/J/incident", "not JSON", "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"nodes\":[]}",
		  "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a/b\",\"opener\":\"n0\",\"nodes\":[\"n0\"]}",
		  "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"rank\":0,\"nodes\":[\"n0\",\"n0\"]}",
		  "not distinct node names" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"nodes\":[\"n0\"]} x",
		  "not an incident's value" },
		/* whose state was lost: a rank of the job's world, said */
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"nodes\":[\"n0\"]}",
		  "not an incident's value" },
		/* (one out of the world here is taken, and aborted: lost_rank_out_of_a_world_shrunk) */
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"rank\":4294967295,"
		  "\"nodes\":[\"n0\"]}", "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"rank\":-1,"
		  "\"nodes\":[\"n0\"]}", "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"rank\":\"0\","
		  "\"nodes\":[\"n0\"]}", "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"reason\":\"\\u0007\","
		  "\"nodes\":[\"n0\"]}", "not an incident's value" },
		{ "/hbmguard/v1/jobs/J/incident", "{\"id\":\"a\",\"opener\":\"evil\",\"rank\":0,\"nodes\":[\"n0\"]}",
		  "an incident whose opener is not one of its nodes" },
		/* what the journal shows of a key is printable: no line of its own */
		{ "/hbmguard/v1/jobs/J/incident\n<0>forged", "{}", "incident?<0>forged (revision" },
		{ "/hbmguard/v1/jobs/K/incident", "{\"id\":\"a\",\"opener\":\"n0\",\"nodes\":[\"n0\"]}",
		  "an incident of a job no node has published" },
		{ "/hbmguard/v2/jobs/J/incident", "{}", "not a key of version 1" },
		{ "/hbmguard/v1/jobs/J/nodes/x/y", "{}", "not a key of the layout" },
		{ "/hbmguard/v1/jobs/J/nodes/..", "{}", "not a key of the layout" },
		{ "/hbmguard/v1/jobs/J/incident/", "{}", "not a key of the layout" },
		{ "/hbmguard/v1/jobs/J/incident/a/acks/eat/n0", "{\"at\":1}", "not a key of the layout" },
		{ "/hbmguard/v1/jobs/J/incident/a/step", "{\"step\":\"abort\",\"timeout\":5}",
		  "not of the job's open incident" },
		{ "/hbmguard/v1/jobs/J/nodes/n9", "{\"ranks\":[3],\"world_size\":3}", "not a node's value" },
		{ "/hbmguard/v1/jobs/J/nodes/n9", "{\"ranks\":[\"0\"],\"world_size\":3}", "not a node's value" },
		{ "/hbmguard/v1/jobs/J/nodes/n9", "[1]", "not a node's value" },
		{ "/hbmguard/v1/jobs/J/nodes/n9", "{\"ranks\":[1,0,1],\"world_size\":3}",
		  "not a node's value" },
		{ "/hbmguard/v1/jobs/J/nodes/n9", "{\"ranks\":[],\"world_size\":3}",
		  "a node with no rank of the job" },
	};
	char big[CL_VALUE_MAX + 64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		said[0][0] = 0;
		fput(bad[i].key, bad[i].value);
		run();
		ck_assert_msg(strstr(said[0], bad[i].why) && strstr(said[0], "refused"),
			      "%s=%s: said '%s'", bad[i].key, bad[i].value, said[0]);
		for (int s = 0; s < CL_NR_STEPS; s++)
			ck_assert_uint_eq(steps[0][s], 0);
		if (strcmp(bad[i].key, "/hbmguard/v1/jobs/J/incident"))
			fdel(find(bad[i].key));
	}
	/* an incident key of garbage stays there: none opens over it */
	fdel(find("/hbmguard/v1/jobs/J/incident"));
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	memcpy(big, "{\"ranks\":[0],\"world_size\":3}", 28);
	said[0][0] = 0;
	fput("/hbmguard/v1/jobs/J/nodes/n8", big);
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "nodes/n8 (revision"));
	/* other jobs' nodes by the hundred crowd out none of this node's jobs */
	for (int i = 0; i < CL_MAX_JOBS + 8; i++) {
		snprintf(big, sizeof(big), "/hbmguard/v1/jobs/flood%d/nodes/x", i);
		fput(big, "{\"ranks\":[0],\"world_size\":1}");
		store_forget(big);
	}
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "flood256/nodes/x (revision"));
	ck_assert_ptr_nonnull(strstr(said[0], "too many jobs"));
	ck_assert_int_eq(cl_job_join(cores[0], "mine", "{\"ranks\":[0],\"world_size\":1}", now), 0);
	/* still working after all that */
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
}
END_TEST

/*
 * A read of 40 junk keys and the job's: REFUSED_SHOWN (8) lines of them,
 * one saying how many more, the job's keys taken; an event is told whole.
 */
START_TEST(junk_in_a_read)
{
	struct etcd_kv kvs[KEYS + 40];
	char keys[40][64];
	int nr = 0, lines = 0;
	const char *p;

	for (int i = 0; i < 40; i++) {
		snprintf(keys[i], sizeof(keys[i]), "/hbmguard/v1/junk/%02d", i);
		kvs[nr++] = (struct etcd_kv){ .key = keys[i], .key_len = strlen(keys[i]),
					      .value = "x", .value_len = 1, .mod_revision = 1 };
	}
	nr += collect(CL_PREFIX, kvs + nr);
	ck_assert_int_eq(nr, 43);
	said[0][0] = 0;
	cl_snapshot(cores[0], kvs, nr, rev, now);
	run();
	for (p = said[0]; (p = strstr(p, "): refused: ")); p++)
		lines++;
	ck_assert_int_eq(lines, 8);
	ck_assert_ptr_nonnull(strstr(said[0], "etcd: 32 more keys under /hbmguard/ refused in this read (the first 8 shown)"));
	ck_assert_ptr_nonnull(strstr(said[0], "/junk/07 (revision 1): refused"));
	ck_assert_ptr_null(strstr(said[0], "/junk/08"));
	said[0][0] = 0;
	fput("/hbmguard/v1/junk/x", "x");
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "/junk/x (revision"));
	/* the job's nodes were in the read: an error opens, all resume */
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
}
END_TEST

/* A node whose last rank of the job left: its key goes, and no incident waits for it. */
START_TEST(leave)
{
	ck_assert_int_eq(cl_job_leave(cores[2], "nope", now), -ENOENT);
	linked[2] = false;	/* deleted once etcd answers */
	cl_link(cores[2], false, now);
	ck_assert_int_eq(cl_job_leave(cores[2], "J", now), 0);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/nodes/"), 3);
	linked[2] = true;
	cl_link(cores[2], true, now);
	tick(2, 1000000);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/nodes/"), 2);
	ck_assert_ptr_null(find("/hbmguard/v1/jobs/J/nodes/n2"));
	ck_assert_int_eq(cl_error(cores[2], "J", 2, "x", now, id), -ENOENT);
	/*
	 * world_size 3 and two nodes' ranks: not opened without the third, and
	 * at the pause deadline this node's ranks abort (none waits on a node
	 * no one knows)
	 */
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), now + 30 * 1000000ULL);
	tick(-1, 30 * 1000000ULL);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_uint_eq(steps[1][CL_PAUSE], 0);
	ck_assert_ptr_nonnull(strstr(said[0], "not every rank's node known"));
	/* and back: published again */
	ck_assert_int_eq(cl_job_join(cores[2], "J", "{\"ranks\":[2],\"world_size\":3}", now), 0);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/nodes/"), 3);
}
END_TEST

/*
 * Three nodes' keys and three ranks, but two say rank 1: rank 2's node is
 * not known, so nothing opens and the ranks here abort at the pause
 * deadline; once the third says rank 2, an error opens an incident.
 */
START_TEST(world_of_distinct_ranks)
{
	ck_assert_int_eq(cl_job_join(cores[2], "J", "{\"ranks\":[1],\"world_size\":3}", now), 0);
	run();
	ck_assert_str_eq(find("/hbmguard/v1/jobs/J/nodes/n2")->value,
			 "{\"ranks\":[1],\"world_size\":3}");
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	tick(-1, 30 * 1000000ULL);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_ptr_nonnull(strstr(said[0], "not every rank's node known"));
	ck_assert_int_eq(cl_job_join(cores[2], "J", "{\"ranks\":[2,1],\"world_size\":3}", now), 0);
	run();
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_PAUSE], 1);
		ck_assert_uint_eq(closed[n][1], 1);
	}
	/* a job's nodes hold CL_MAX_RANKS (16384) ranks at most: 600 a key */
	for (int k = 0; k < 28; k++) {
		char key[64], value[CL_VALUE_MAX], *v = value;

		v += sprintf(v, "{\"ranks\":[");
		for (int r = 0; r < 600; r++)
			v += sprintf(v, "%s%d", r ? "," : "", 3 + 600 * k + r);
		sprintf(v, "],\"world_size\":20000}");
		snprintf(key, sizeof(key), "/hbmguard/v1/jobs/J/nodes/big%d", k);
		said[0][0] = 0;
		fput(key, value);
		run();
		ck_assert_msg(!strstr(said[0], "refused") == (k < 27), "node %d: %s", k, said[0]);
	}
	ck_assert_ptr_nonnull(strstr(said[0], "big27 (revision"));
	ck_assert_ptr_nonnull(strstr(said[0], "too many ranks in the job"));
}
END_TEST

/*
 * n1's acknowledgement of resume written, but its answer in after the
 * watch brought the close: the incident kept closed shows it all the same.
 */
START_TEST(late_ack_kept)
{
	struct hbm_ctl_cluster_node v;

	late_node = 1;
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_int_eq(late_node, -1);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(closed[1][1], 1);
	cl_txn_done(cores[1], &late, 0, true, rev, now);
	run();
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cl_view_get(cores[1], i, &v), 0);
		ck_assert_int_eq(v.step, CL_RESUME);
		ck_assert_uint_eq(v.acked, strcmp(v.node, "n1") ? 0 : 0xfU);
	}
}
END_TEST

/* The local side fails (a rank left, answered FAILED): aborted everywhere, opened or not yet. */
START_TEST(local_failure)
{
	ck_assert_int_eq(cl_fail(cores[0], "J", "no incident", now), -ESRCH);
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	ck_assert_int_eq(cl_fail(cores[0], "J", "a rank left during recovery", now), 0);
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 0);	/* its ranks aborted at once, not paused */
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(steps[n][CL_RESUME], 0);
		ck_assert_uint_eq(closed[n][0], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "node n0: a rank left during recovery"));
	}
	/* one that is open, from a node that did not open it */
	mute_node = 2;
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_int_eq(cl_fail(cores[1], "J", "a rank failed to recover", now), 0);
	run();
	for (int n = 0; n < 2; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 2);
		ck_assert_ptr_nonnull(strstr(said[n], "node n1: a rank failed to recover"));
	}
}
END_TEST

/*
 * A node's ranks of a job change while their publication is in flight: the
 * newer is published after it; and another node's count follows, so the
 * world is known and an error opens at once.
 */
START_TEST(counts_follow)
{
	struct cl_action a;
	struct fkv *f;

	ck_assert_int_eq(cl_job_join(cores[0], "K", "{\"ranks\":[0],\"world_size\":3}", now), 0);
	ck_assert(cl_next_action(cores[0], &a));
	ck_assert_int_eq(a.txn, CL_TXN_PUBLISH);
	ck_assert_int_eq(cl_job_join(cores[0], "K", "{\"ranks\":[1,0],\"world_size\":3}", now), 0);
	ck_assert(txn(a.body));
	cl_txn_done(cores[0], &a, 0, true, rev, now);
	free(a.body);
	run();
	f = find("/hbmguard/v1/jobs/K/nodes/n0");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(f->value, "{\"ranks\":[1,0],\"world_size\":3}");
	ck_assert_int_eq(cl_job_join(cores[1], "K", "{\"ranks\":[2],\"world_size\":3}", now), 0);
	run();
	ck_assert_int_eq(cl_error(cores[1], "K", 2, "a UE", now, id), 0);
	run();	/* no deadline waited for */
	ck_assert_uint_eq(closed[0][1], 1);
	ck_assert_uint_eq(closed[1][1], 1);
	ck_assert_uint_eq(steps[2][CL_PAUSE], 0);
}
END_TEST

/*
 * An error on a node while the job's incident is open: its ranks abort at
 * once, and once the abort is written, every node's.
 */
START_TEST(error_during_incident)
{
	mute_node = 1;	/* holds the incident at pause */
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[2][CL_PAUSE], 1);
	ck_assert_int_eq(cl_error(cores[2], "J", 2, "another UE", now, id), 0);
	ck_assert_uint_eq(steps[2][CL_ABORT], 0);
	{
		struct cl_action a;

		/* the local abort comes before any transaction */
		ck_assert(cl_next_action(cores[2], &a));
		while (a.kind == CL_LOG)
			ck_assert(cl_next_action(cores[2], &a));
		ck_assert_int_eq(a.kind, CL_LOCAL);
		ck_assert_int_eq(a.step, CL_ABORT);
		steps[2][CL_ABORT]++;
	}
	run();
	ck_assert_uint_eq(steps[2][CL_ABORT], 1);	/* once */
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
}
END_TEST

/* A step that goes back, or an ack of a node not in the incident, changes nothing. */
START_TEST(hostile_mid_incident)
{
	char k[128], big[256];

	mute_node = 2;
	cl_error(cores[0], "J", 0, "a UE", now, id);
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	/* the incident's id, from its step key */
	for (int i = 0; i < KEYS; i++)
		if (store[i].key && strstr(store[i].key, "/step"))
			snprintf(k, sizeof(k), "%s", store[i].key);
	fput(k, "{\"step\":\"restore\",\"timeout\":3600}");
	run();
	/* forward is etcd's word here; recovery.c refuses a step skipped */
	ck_assert_uint_eq(steps[0][CL_RESTORE], 1);
	/* a writer's timeout longer than this node's own for the step (120 s) is not taken */
	ck_assert_uint_le(cl_next_deadline(cores[1]) - now, 120 * 1000000ULL);
	said[0][0] = 0;
	fput(k, "{\"step\":\"pause\",\"timeout\":5}");
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "a step that goes back"));
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	*strstr(k, "/step") = 0;
	snprintf(big, sizeof(big), CL_ACKS_V1 "J/%s/restore/n7", strrchr(k, '/') + 1);
	fput(big, "{\"at\":1}");
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "an acknowledgement of a node not in the incident"));
	/* the incident's key put over with another id (its create_revision kept): refused */
	said[0][0] = 0;
	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x9\",\"opener\":\"n0\",\"rank\":0,\"nodes\":[\"n0\",\"n1\"]}");
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "an incident's id changed under it"));
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);
	ck_assert_uint_eq(closed[0][0], 0);
}
END_TEST

/*
 * Other jobs fill the CL_MAX_JOBS this node keeps (a writer's junk, or a
 * cluster of more jobs); n1 and n2 join job V before n0 does, their keys
 * refused there for want of room.  Once V is n0's too, n0 reads the prefix
 * again and knows V's nodes: its error opens the incident across them.
 * Before, it never read them again, and its ranks aborted at the deadline:
 * "not every rank's node known" (helper-184).
 */
START_TEST(crowded_out_before_join)
{
	char k[96];

	for (int i = 0; i < CL_MAX_JOBS; i++) {
		snprintf(k, sizeof(k), "/hbmguard/v1/jobs/junk%d/nodes/x", i);
		fput(k, "{\"ranks\":[0],\"world_size\":1}");
		store_forget(k);	/* the store here is small; n0 keeps them */
	}
	run();
	ck_assert_int_eq(cl_job_join(cores[1], "V", "{\"ranks\":[1],\"world_size\":3}", now), 0);
	ck_assert_int_eq(cl_job_join(cores[2], "V", "{\"ranks\":[2],\"world_size\":3}", now), 0);
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "V/nodes/n1 (revision"));
	ck_assert_uint_eq(rereads[0], 0);
	ck_assert_int_eq(cl_job_join(cores[0], "V", "{\"ranks\":[0],\"world_size\":3}", now), 0);
	run();
	ck_assert_uint_eq(rereads[0], 1);
	ck_assert_int_eq(cl_error(cores[0], "V", 0, "a UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);
	/* a job joined later, nothing refused since the read: no read again */
	ck_assert_int_eq(cl_job_join(cores[0], "W", "{\"ranks\":[0],\"world_size\":1}", now), 0);
	run();
	ck_assert_uint_eq(rereads[0], 1);
	/* crowded again: the next such join reads again, REREAD_MIN_US (30 s) after the last */
	for (int i = 0; i < CL_MAX_JOBS + 1; i++) {
		snprintf(k, sizeof(k), "/hbmguard/v1/jobs/more%d/nodes/x", i);
		fput(k, "{\"ranks\":[0],\"world_size\":1}");
		store_forget(k);
	}
	run();
	ck_assert_int_eq(cl_job_join(cores[0], "X", "{\"ranks\":[0],\"world_size\":2}", now), 0);
	run();
	ck_assert_uint_eq(rereads[0], 1);
	ck_assert_uint_le(cl_next_deadline(cores[0]), now + 30 * 1000000ULL);
	tick(0, 30 * 1000000ULL);
	ck_assert_uint_eq(rereads[0], 2);
}
END_TEST

/*
 * A writer's junk, event after event: REFUSED_BURST (64) lines a while,
 * then one counting those not shown.  Before, a line each, on every node,
 * and journald dropped the daemon's own past its limit (helper-184).
 */
START_TEST(junk_events_rate_limited)
{
	const char *p;
	int lines = 0;
	char k[64];

	said[0][0] = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "/hbmguard/v1/junk/%d", i);
		fput(k, "x");
		store_forget(k);
	}
	run();
	for (p = said[0]; (p = strstr(p, "): refused: ")); p++)
		lines++;
	ck_assert_int_eq(lines, 64);
	ck_assert_ptr_nonnull(strstr(said[0], "/junk/63 (revision"));
	now += 30 * 1000000ULL;
	said[0][0] = 0;
	fput("/hbmguard/v1/junk/last", "x");
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "etcd: 936 more keys refused, not shown\n"));
	ck_assert_ptr_nonnull(strstr(said[0], "/junk/last (revision"));
}
END_TEST

/*
 * A writer leaves junk at J's incident key (refused, but there): an open's
 * compare (create_revision == 0) never holds.  Each refused open waits
 * RETRY_US (0.5 s) before the next, until the pause deadline aborts the
 * ranks.  Before, with the watch synced to etcd's revision as etcd.c tells
 * it after each response, one went out per round trip: some 5000 in 5 s
 * at 1 ms (helper-184).
 */
START_TEST(junk_incident_key_opens_paced)
{
	struct cl_action a;
	int opens = 0;

	fput("/hbmguard/v1/jobs/J/incident", "junk");
	for (int n = 0; n < 3; n++)
		cl_synced(cores[n], rev, now);
	run();
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	for (int i = 0; i < 100000 && now < 6000000; i++) {
		if (!cl_next_action(cores[0], &a)) {
			now += 1000;		/* a millisecond passes */
			cl_tick(cores[0], now);
			continue;
		}
		if (a.kind == CL_TXN) {
			bool ok = txn(a.body);

			opens += a.txn == CL_TXN_OPEN;
			now += 1000;	/* a 1 ms round trip */
			cl_txn_done(cores[0], &a, 0, ok, rev, now);
			free(a.body);
		}
	}
	ck_assert_int_ge(opens, 2);
	ck_assert_int_le(opens, 12);		/* 5 s at one per 0.5 s, and the first */
}
END_TEST

/*
 * An open refused, then etcd lost: the open cannot go, and its pacing's
 * deadline, past, must not fire on every turn of the loop until the pause
 * deadline (helper-185: 1000 fires in a row).
 */
START_TEST(refused_open_then_link_down_does_not_spin)
{
	struct cl_action a;

	fput("/hbmguard/v1/jobs/J/incident", "junk");
	for (int n = 0; n < 3; n++)
		cl_synced(cores[n], rev, now);
	run();
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	while (cl_next_action(cores[0], &a))
		if (a.kind == CL_TXN) {
			ck_assert_uint_eq(a.txn, CL_TXN_OPEN);
			cl_txn_done(cores[0], &a, 0, txn(a.body), rev, now);	/* refused */
			free(a.body);
		}
	cl_link(cores[0], false, now);
	while (cl_next_action(cores[0], &a))
		free(a.kind == CL_TXN ? a.body : NULL);
	for (int i = 0; i < 10; i++) {
		uint64_t next = cl_next_deadline(cores[0]);

		if (next == UINT64_MAX)
			break;
		ck_assert_uint_gt(next, now);	/* never one past: it would fire at once */
		now = next;
		cl_tick(cores[0], now);
		while (cl_next_action(cores[0], &a))
			free(a.kind == CL_TXN ? a.body : NULL);
	}
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);	/* nothing local done: run() not called */
}
END_TEST

/*
 * Ranks of new jobs joining and leaving while etcd is away: each job
 * leaving waits for its key's delete, which needs etcd, and is this node's
 * still.  Past CL_MAX_JOBS of them a join is refused; before, the list grew
 * past its end (helper-186: index 512 out of bounds, a crash).
 */
START_TEST(jobs_leaving_without_etcd_are_bounded)
{
	int refused = 0;
	char name[32];

	cl_link(cores[0], false, now);
	for (int i = 0; i < 3 * CL_MAX_JOBS; i++) {
		snprintf(name, sizeof(name), "churn%d", i);
		if (cl_job_join(cores[0], name, "{\"ranks\":[0],\"world_size\":2}", now)) {
			refused++;
			continue;
		}
		ck_assert_int_eq(cl_job_leave(cores[0], name, now), 0);
	}
	ck_assert_int_eq(refused, 3 * CL_MAX_JOBS - (CL_MAX_JOBS - 1));	/* J is one */
	cl_link(cores[0], true, now);
	run();
	ck_assert_int_eq(cl_job_join(cores[0], "after", "{\"ranks\":[0],\"world_size\":2}", now), 0);
}
END_TEST

/*
 * A job of 120 nodes of long names: its incident's value names them all,
 * past CL_VALUE_MAX.  Every node took it, its opener too; before, every
 * node refused it ("not an incident's value"), none paused, and its key,
 * never closed, blocked every later open of the job (found by
 * tests/fuzz/cluster.c).
 */
START_TEST(incident_of_many_nodes)
{
	char k[128], v[64];

	for (int i = 0; i < 120; i++) {
		snprintf(k, sizeof(k), "/hbmguard/v1/jobs/J/nodes/gpu-node-%03d.rack-07.cluster.example.com",
			 i);
		snprintf(v, sizeof(v), "{\"ranks\":[%d],\"world_size\":123}", 3 + i);
		fput(k, v);
	}
	run();
	said[0][0] = 0;
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_int_gt(strlen(find("/hbmguard/v1/jobs/J/incident")->value), CL_VALUE_MAX);
	ck_assert_ptr_null(strstr(said[0], "refused"));
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_PAUSE], 1);
		ck_assert_ptr_nonnull(strstr(said[n], "opened by n0 on 123 nodes"));
	}
}
END_TEST

/*
 * Without etcd past a step's deadline, ranks here aborted already (an abort
 * decided here, or one read): no deadline past is left to fire on every
 * turn of the loop until etcd is back (found by tests/fuzz/cluster.c).
 */
START_TEST(aborted_here_without_etcd_no_spin)
{
	mute_node = 2;		/* holds the incident at pause */
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	linked[1] = false;
	cl_link(cores[1], false, now);
	ck_assert_int_eq(cl_fail(cores[1], "J", "a rank failed", now), 0);
	run();
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	tick(1, 30 * 1000000ULL);
	ck_assert_uint_gt(cl_next_deadline(cores[1]), now);
}
END_TEST

START_TEST(abort_read_without_etcd_no_spin)
{
	mute_node = 2;		/* holds the incident at pause, then at abort */
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_int_eq(cl_fail(cores[1], "J", "a rank failed", now), 0);
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);	/* told by the step read */
	linked[0] = false;
	cl_link(cores[0], false, now);
	tick(0, 10 * 1000000ULL);
	ck_assert_uint_gt(cl_next_deadline(cores[0]), now);
}
END_TEST

/*
 * A transaction of the job lost on the way just before a step's deadline:
 * nothing of the job runs until its retry, and the deadline, due sooner,
 * is not told as the next, which would fire on every turn of the loop
 * until then (found by tests/fuzz/cluster.c).
 */
START_TEST(deadline_before_retry_no_spin)
{
	mute_node = 2;		/* holds the incident at pause */
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	now += 29800000ULL;
	mute_node = 0;		/* its publication, again, lost on the way */
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":3}", now), 0);
	run();
	now += 200000ULL;	/* the pause's deadline, before the retry */
	cl_tick(cores[0], now);
	run();
	ck_assert_uint_gt(cl_next_deadline(cores[0]), now);
}
END_TEST

/*
 * A writer deletes the open incident's step key mid-incident: no change can
 * be written to it.  An error then aborts the ranks here at once, and no
 * abort is sent (it would be refused: before, it was sent again at each
 * answer without end, then waited for at every RETRY_US); an abort's
 * timeout later the incident closes, comparing the step key gone, and the
 * job's next error opens one again (found by tests/fuzz/cluster.c).
 */
START_TEST(step_key_deleted_closes)
{
	int i;

	mute_node = 2;
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	mute_node = -1;
	for (i = 0; i < KEYS && !(store[i].key && strstr(store[i].key, "/step")); i++)
		;
	ck_assert_int_lt(i, KEYS);
	rev++;
	fdel(&store[i]);
	run();
	ck_assert_int_eq(cl_fail(cores[1], "J", "a rank failed", now), 0);
	run();
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	ck_assert_str_eq(told_why[1], "node n1: a rank failed");
	ck_assert_uint_eq(sent[1][CL_TXN_ABORT], 0);
	ck_assert_uint_eq(sent[1][CL_TXN_CLOSE], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[1]), now + 10 * 1000000ULL);
	tick(-1, 10 * 1000000ULL);
	ck_assert_ptr_nonnull(strstr(said[1], "incident 0000000000000001: its step key gone: closing it"));
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(closed[n][0], 1);
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(cl_next_deadline(cores[n]), UINT64_MAX);
	}
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "another UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
}
END_TEST

/*
 * A writer puts a value no node takes over the step of an incident under
 * way: its nodes' ranks abort at the step's deadline, and the incident
 * closes an abort's timeout later, comparing the value refused.
 */
START_TEST(step_key_spoilt_closes)
{
	peer_opens_x1("n0,n1,n9");
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	now += 1000000;
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"pause\",\"timeout\":\"30\"}");
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "not a step's value"));
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), now + 29 * 1000000ULL);
	tick(-1, 29 * 1000000ULL);
	ck_assert_ptr_nonnull(strstr(said[0], "incident x1: aborting: the incident's step changed by another writer"));
	ck_assert_str_eq(told_why[0], "the incident's step changed by another writer");
	ck_assert_uint_lt(strlen(told_why[0]), sizeof(((struct hbm_ctl_incident *)0)->reason));
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 2);
	tick(-1, 10 * 1000000ULL);
	ck_assert_ptr_nonnull(strstr(said[0], "its step key not one this node takes: closing it"));
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int n = 0; n < 2; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(closed[n][0], 1);
		ck_assert_uint_eq(cl_next_deadline(cores[n]), UINT64_MAX);
	}
	ck_assert_uint_eq(steps[2][CL_PAUSE], 0);	/* not of the incident */
}
END_TEST

/*
 * An error of rank 2, not opened at once (etcd away); then the job's ranks
 * here register again with a world of 2.  Its incident is not opened with
 * a rank out of that world, which this node would refuse itself (and, were
 * the others' worlds as small, every node, its key left to block the job's
 * every open): the pause deadline aborts the ranks here, saying why (found
 * by tests/fuzz/cluster.c).
 */
START_TEST(lost_rank_out_of_a_smaller_world)
{
	linked[0] = false;
	cl_link(cores[0], false, now);
	ck_assert_int_eq(cl_error(cores[0], "J", 2, "a UE", now, id), 0);
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":2}", now), 0);
	linked[0] = true;
	said[0][0] = 0;
	cl_link(cores[0], true, now);
	run();
	ck_assert_ptr_null(strstr(said[0], "refused"));
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	tick(0, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_str_eq(told_why[0], "not opened across nodes: its lost rank not in the job's world");
	ck_assert_uint_lt(strlen(told_why[0]), sizeof(((struct hbm_ctl_incident *)0)->reason));
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
}
END_TEST

/*
 * An incident whose step key no node reads (another writer's doing: its
 * opener writes the two at once) asks nothing of the ranks, and no abort
 * can be written to it.  The pause deadline from when it was read aborts
 * every node's ranks, and an abort's timeout later it closes (found by
 * tests/fuzz/cluster.c: they were never told anything, nor had a
 * deadline, and its key blocked every open of the job).
 */
static void open_without_step(void)
{
	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x1\",\"opener\":\"n1\",\"rank\":1,\"nodes\":[\"n0\",\"n1\",\"n2\"]}");
	run();
	for (int n = 0; n < 3; n++) {
		for (int s = 0; s < CL_NR_STEPS; s++)
			ck_assert_uint_eq(steps[n][s], 0);
		ck_assert_uint_eq(cl_next_deadline(cores[n]), now + 30 * 1000000ULL);
	}
}

static void ticks_close_it(uint64_t after)
{
	tick(-1, after);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(closed[n][0], 1);
		ck_assert_uint_eq(cl_next_deadline(cores[n]), UINT64_MAX);
	}
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "another UE", now, id), 0);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][1], 1);
}

START_TEST(step_unknown_aborts)
{
	open_without_step();
	tick(-1, 30 * 1000000ULL);
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
	ck_assert_str_eq(told_why[1], "the incident's step not read by the pause deadline");
	ck_assert_uint_lt(strlen(told_why[1]), sizeof(((struct hbm_ctl_incident *)0)->reason));
	ck_assert_ptr_nonnull(strstr(said[2], "incident x1: aborting: the incident's step not read"));
	ticks_close_it(10 * 1000000ULL);
}
END_TEST

/* An error here meanwhile aborts the ranks here at once. */
START_TEST(step_unknown_error_aborts_at_once)
{
	open_without_step();
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	ck_assert_str_eq(id, "x1");
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_str_eq(told_why[0], "a second error on node n0 (a UE)");
	ck_assert_uint_eq(steps[1][CL_ABORT], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), now + 10 * 1000000ULL);	/* its close */
	ticks_close_it(10 * 1000000ULL);
	ck_assert_ptr_nonnull(strstr(said[0], "incident x1: its step key gone: closing it"));
}
END_TEST

/* n0's actions until none is left, but for its first transaction of @kind, held. */
static bool take_txn(enum cl_txn_kind kind, struct cl_action *held_txn)
{
	struct cl_action a;
	bool found = false;

	while (cl_next_action(cores[0], &a)) {
		if (a.kind == CL_TXN && a.txn == kind && !found) {
			*held_txn = a;
			found = true;
		} else if (a.kind == CL_TXN) {
			free(a.body);
		}
	}
	return found;
}

/*
 * Incident x1's abort in flight when another node closes it; x2 opens and
 * its abort goes in flight; then x1's is answered.  That answer is not
 * x2's: x2's abort is not sent again before its own answer (found by
 * tests/fuzz/cluster.c: the stale answer cleared x2's in flight).
 */
START_TEST(stale_answer_of_an_ended_incident)
{
	struct cl_action x1, x2;

	peer_opens_x1("n0,n9");
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	ck_assert_int_eq(cl_fail(cores[0], "J", "a rank failed", now), 0);
	ck_assert(take_txn(CL_TXN_ABORT, &x1));
	ck_assert_str_eq(x1.id, "x1");
	/* closed by another node meanwhile (its abort's deadline passed there) */
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/x1/step"));
	fdel(find("/hbmguard/v1/jobs/J/incident"));
	run();
	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x2\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n9\"]}");
	fput("/hbmguard/v1/jobs/J/incident/x2/step", "{\"step\":\"pause\",\"timeout\":30}");
	ck_assert_int_eq(cl_fail(cores[0], "J", "a rank failed again", now), 0);
	ck_assert(take_txn(CL_TXN_ABORT, &x2));
	ck_assert_str_eq(x2.id, "x2");
	cl_txn_done(cores[0], &x1, 0, txn(x1.body), rev, now);
	free(x1.body);
	ck_assert(!take_txn(CL_TXN_ABORT, &x1));
	now += 1000000;
	cl_tick(cores[0], now);
	ck_assert(!take_txn(CL_TXN_ABORT, &x1));
	/* its own answer: taken */
	ck_assert(txn(x2.body));
	cl_txn_done(cores[0], &x2, 0, true, rev, now);
	free(x2.body);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident/x2/step"), 1);
	ck_assert_ptr_nonnull(strstr(find("/hbmguard/v1/jobs/J/incident/x2/step")->value, "abort"));
}
END_TEST

/*
 * n0's open of an error of rank 2 is on its way when its ranks register
 * again with a world of 2.  Its incident is taken all the same (refused by
 * every node of that world, this one first, it would never close, and its
 * key would block every open of the job), and aborted: no node is asked to
 * restore a rank out of its world, and it closes (found by
 * tests/fuzz/cluster.c).
 */
START_TEST(lost_rank_out_of_a_world_shrunk)
{
	struct cl_action open;

	ck_assert_int_eq(cl_error(cores[0], "J", 2, "a UE", now, id), 0);
	ck_assert(take_txn(CL_TXN_OPEN, &open));
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":2}", now), 0);
	ck_assert(txn(open.body));
	cl_txn_done(cores[0], &open, 0, true, rev, now);
	free(open.body);
	run();
	for (int n = 0; n < 3; n++)
		ck_assert_ptr_null(strstr(said[n], "refused"));
	ck_assert_ptr_nonnull(strstr(said[0], "its lost rank 2 is not of the job's world on node n0 (2)"));
	ck_assert_uint_eq(steps[0][CL_PAUSE], 0);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	tick(-1, 10 * 1000000ULL);
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_RESTORE], 0);
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(closed[n][0], 1);
	}
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
}
END_TEST

/*
 * A read that left the step key out (an etcd that lies, or one restored
 * without it) wedges the incident for that node: it aborts its ranks at the
 * step's deadline and, an abort's timeout later, sends a close that etcd
 * refuses.  Not again at every RETRY_US: an abort's timeout later, with the
 * watch silent meanwhile, it reads the prefix again, finds the step, and
 * writes its abort.
 */
START_TEST(wedged_by_a_read_that_left_the_step_out)
{
	struct etcd_kv kvs[KEYS];
	size_t n, k = 0;

	mute_node = 2;
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	mute_node = -1;
	n = collect(CL_PREFIX, kvs);
	for (size_t i = 0; i < n; i++)
		if (!strstr(kvs[i].key, "/step"))
			kvs[k++] = kvs[i];
	ck_assert_uint_eq(k, n - 1);
	cl_snapshot(cores[1], kvs, k, rev, now);
	run();
	ck_assert_uint_eq(steps[1][CL_ABORT], 0);
	tick(1, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	tick(1, 10 * 1000000ULL);
	ck_assert_uint_eq(sent[1][CL_TXN_CLOSE], 1);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 2);
	ck_assert_uint_eq(cl_next_deadline(cores[1]), now + 10 * 1000000ULL);
	for (int i = 0; i < 5; i++) {
		now += 1000000;
		cl_tick(cores[1], now);
		run();
	}
	ck_assert_uint_eq(sent[1][CL_TXN_CLOSE], 1);
	ck_assert_uint_eq(rereads[1], 0);
	tick(1, 5 * 1000000ULL);
	ck_assert_uint_eq(rereads[1], 1);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(closed[i][0], 1);
		ck_assert_uint_eq(steps[i][CL_ABORT], 1);
	}
	ck_assert_ptr_nonnull(strstr(said[0], "incident 0000000000000001 aborted: the incident's step changed by another writer"));
}
END_TEST

/*
 * The ranks here register again with a world that no longer holds the lost
 * rank of an incident under way: no restore of it is asked of them, the
 * incident is aborted (helper-196).
 */
START_TEST(world_shrunk_under_an_incident)
{
	mute_node = 0;
	ck_assert_int_eq(cl_error(cores[2], "J", 2, "a UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":2}", now), 0);
	mute_node = -1;
	/* told to abort, the pause it did is not this incident's any more */
	ck_assert_int_eq(cl_local_done(cores[0], "J", id, CL_PAUSE, true, NULL, now), -ESTALE);
	run();
	ck_assert_ptr_nonnull(strstr(said[0], "its lost rank 2 is not of the job's world on node n0 (2)"));
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_RESTORE], 0);
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
	}
}
END_TEST

/*
 * A step read after the ranks here aborted for want of one is aborted at
 * once: it does not hold the job's other nodes until its own deadline
 * (helper-196).
 */
START_TEST(step_read_late_aborted)
{
	open_without_step();
	tick(-1, 30 * 1000000ULL);
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"pause\",\"timeout\":30}");
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_PAUSE], 0);
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
		ck_assert_uint_eq(closed[n][0], 1);
	}
}
END_TEST

/* A wedged incident's close in flight: no deadline past until its answer (found by tests/fuzz/cluster.c). */
START_TEST(wedged_close_in_flight_no_spin)
{
	struct cl_action close;

	open_without_step();
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	now += 10 * 1000000ULL;
	cl_tick(cores[0], now);
	ck_assert(take_txn(CL_TXN_CLOSE, &close));
	for (int i = 0; i < 3; i++) {
		now += 500000;
		cl_tick(cores[0], now);
		ck_assert_uint_gt(cl_next_deadline(cores[0]), now);
	}
	ck_assert(!take_txn(CL_TXN_CLOSE, &close));
	ck_assert(txn(close.body));
	cl_txn_done(cores[0], &close, 0, true, rev, now);
	free(close.body);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), UINT64_MAX);
}
END_TEST

/*
 * etcd lost by every node of an incident past its pause deadline (each
 * aborts its ranks), and an operator's `etcdctl del --prefix .../incident/`
 * meanwhile.  Back, every node is wedged, aborted already: one closes it
 * (helper-197: their deadline was UINT64_MAX, and none ever did).
 */
START_TEST(wedged_while_etcd_away_closes)
{
	peer_opens_x1("n0,n1,n2,n9");
	run();
	for (int n = 0; n < 3; n++) {
		ck_assert_msg(steps[n][CL_PAUSE] == 1, "n%d: %s", n, said[n]);
		linked[n] = false;
		cl_link(cores[n], false, now);
	}
	tick(-1, 30 * 1000000ULL);
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(steps[n][CL_ABORT], 1);
	/* the operator, while the nodes cannot reach etcd */
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/x1/step"));
	now += 5 * 1000000ULL;
	for (int n = 0; n < 3; n++) {
		linked[n] = true;
		cl_link(cores[n], true, now);
		reread(n);	/* the watch resumed: what it missed */
	}
	run();
	for (int i = 0; i < 20; i++) {
		now += 10 * 1000000ULL;
		for (int n = 0; n < 3; n++)
			cl_tick(cores[n], now);
		run();
	}
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(cl_next_deadline(cores[n]), UINT64_MAX);
}
END_TEST

/*
 * A writer rewrites a wedged incident's spoilt step key just before each
 * close: the close is refused, and the watch brings each change.  The node
 * does not read the whole prefix again for it (helper-197: every
 * REREAD_MIN_US, for as long as the writer kept at it; a read again is for
 * a refusal the watch brings nothing of), and its next close, comparing
 * the key the watch brought, goes at once and holds (helper-199).
 */
START_TEST(writer_moving_a_wedged_step_no_reread)
{
	struct cl_action a;
	char v[64];

	peer_opens_x1("n0,n9");
	run();
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "junk0");
	run();
	tick(0, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	for (int i = 1; i <= 12; i++) {
		now += 10 * 1000000ULL;
		cl_tick(cores[0], now);
		/* the close queued; the writer moves the key; the watch brings it */
		snprintf(v, sizeof(v), "junk%d", i);
		fput("/hbmguard/v1/jobs/J/incident/x1/step", v);
		while (cl_next_action(cores[0], &a)) {
			if (a.kind == CL_TXN) {
				bool ok = txn(a.body);

				cl_txn_done(cores[0], &a, 0, ok, rev, now);
				free(a.body);
			} else if (a.kind == CL_REREAD) {
				reread(0);
			}
		}
	}
	/* closed once the writer moved the key before an answer (helper-199): its junk left */
	ck_assert_ptr_null(find("/hbmguard/v1/jobs/J/incident"));
	ck_assert_uint_eq(rereads[0], 0);
}
END_TEST

/*
 * An incident with no step read; the ranks here told to abort by another
 * path than wedged() (cl_error(), an abort decided while process() was held
 * by a retry): its close waits an abort's timeout from then (helper-197: it
 * took a deadline no one had set for it, and went at once).
 */
START_TEST(abort_told_elsewhere_close_waits)
{
	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x1\",\"opener\":\"n1\",\"rank\":1,\"nodes\":[\"n0\",\"n1\",\"n2\"]}");
	run();
	/* a publication of n0's lost on the way: process() held RETRY_US */
	mute_node = 0;
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":4}", now), 0);
	run();
	mute_node = -1;
	ck_assert_int_eq(cl_fail(cores[0], "J", "a rank failed", now), 0);
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	tick(0, 500000);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 1);
	tick(0, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
}
END_TEST

/*
 * A node behind on its watch, wedged on incident x1 whose step key is gone,
 * closes after another node closed x1 and opened x2.  x1's step key
 * compares as 0, as it read it: the incident key's create_revision keeps
 * that close from deleting x2's key (helper-197).
 */
START_TEST(stale_wedged_close_spares_the_next_incident)
{
	deaf_node = 0;
	peer_opens_x1("n0,n1,n2,n9");
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/x1/step"));
	run();
	now += 5 * 1000000ULL;
	reread(0);		/* n0 reads x1, its step gone; its watch then behind */
	run();
	now += 25 * 1000000ULL;
	for (int n = 1; n < 3; n++)
		cl_tick(cores[n], now);
	run();
	tick(-1, 10 * 1000000ULL);
	ck_assert_uint_eq(closed[1][0], 1);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 2);	/* x2 */
	tick(0, 10 * 1000000ULL);
	ck_assert_ptr_nonnull(strstr(said[0], "incident x1: its step key gone: closing it"));
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 2);	/* x2 still */
	deaf_node = -1;
}
END_TEST

/*
 * n0's error opens its incident; its watch brings it 20 s later, its step
 * key deleted meanwhile.  Its ranks abort at the error's pause deadline,
 * not 30 s after the read (helper-197).
 */
START_TEST(error_deadline_from_the_error)
{
	uint64_t t0 = now;

	deaf_node = 0;
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/0000000000000001/step"));
	now += 20 * 1000000ULL;
	reread(0);
	run();
	deaf_node = -1;
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), t0 + 30 * 1000000ULL);
	tick(0, t0 + 30 * 1000000ULL - now);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
}
END_TEST

/*
 * etcd restored from a backup: its revisions start again below those the
 * nodes saw, and a new incident x2 gets the create_revision x1 had.  n0's
 * read takes x2 for x1 (helper-197: it kept x1, refused x2's value as "an
 * incident's id changed under it", found x1's step key gone, and its close,
 * comparing x2's create_revision and x1's absent step key, deleted x2's
 * incident key, which the nodes that read x2 were running).
 */
START_TEST(restored_store_another_id_replaces)
{
	int64_t r1;

	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"]}");
	r1 = rev;
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"pause\",\"timeout\":30}");
	run();
	/* the store restored from before x1; x2 opened there at x1's revision */
	store_forget("/hbmguard/v1/jobs/J/incident");
	store_forget("/hbmguard/v1/jobs/J/incident/x1/step");
	for (int n = 0; n < 3; n++)
		linked[n] = false;
	rev = r1 - 1;
	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x2\",\"opener\":\"n9\",\"rank\":2,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"]}");
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/incident")->create, r1);
	fput("/hbmguard/v1/jobs/J/incident/x2/step", "{\"step\":\"pause\",\"timeout\":30}");
	for (int n = 0; n < 3; n++)
		linked[n] = true;
	reread(0);
	run();
	tick(0, 40 * 1000000ULL);
	ck_assert_ptr_null(strstr(said[0], "incident x1: its step key gone: closing it"));
	ck_assert_ptr_nonnull(strstr(said[0], "incident x2 opened by n9"));
	ck_assert_ptr_null(strstr(said[0], "refused"));
	/* x1 ended here, x2 followed (aborted: its opener n9 has no key) */
	ck_assert_ptr_nonnull(strstr(said[0], "incident x1 aborted\njob J: incident x2 opened by n9"));
	ck_assert_ptr_nonnull(strstr(said[0], "incident x2 aborted: node n9 left the job"));
}
END_TEST

/*
 * Puts of revisions etcd never gives are refused (an incident of
 * create_revision -8 made its close's compare that of no key); a
 * deletion's event, which has no create_revision, is taken.
 */
START_TEST(revisions_etcd_does_not_give)
{
	static const struct { int64_t create, mod; } bad[] = { { 0, 5 }, { -8, 5 }, { 6, 5 } };
	char *v = "{\"id\":\"x1\",\"opener\":\"n0\",\"rank\":0,\"nodes\":[\"n0\"]}";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct etcd_kv kv = { .key = "/hbmguard/v1/jobs/J/incident", .value = v,
				      .key_len = 28, .value_len = strlen(v),
				      .create_revision = bad[i].create, .mod_revision = bad[i].mod,
				      .version = 1 };

		said[0][0] = 0;
		cl_put(cores[0], &kv, now);
		run();
		ck_assert_ptr_nonnull(strstr(said[0], "incident (revision 5): refused: revisions etcd does not give"));
		ck_assert_ptr_null(strstr(said[0], "opened"));
	}
}
END_TEST

/*
 * An incident wedged at resume (its step key spoilt after the ranks here
 * resumed): they are left resumed, but a second error here aborts them, as
 * with a step (found by tests/fuzz/cluster.c: resumed, they were taken for
 * done with it), and it closes an abort's timeout later.
 */
START_TEST(wedged_at_resume_second_error_aborts)
{
	static const char *const s[] = { "pause", "isolate", "restore", "resume" };
	char v[64];

	fput("/hbmguard/v1/jobs/J/incident",
	     "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n9\"]}");
	for (int i = 0; i < 4; i++) {
		snprintf(v, sizeof(v), "{\"step\":\"%s\",\"timeout\":30}", s[i]);
		fput("/hbmguard/v1/jobs/J/incident/x1/step", v);
		run();
	}
	ck_assert_uint_eq(steps[0][CL_RESUME], 1);
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "junk");
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);	/* resumed, left so */
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_str_eq(told_why[0], "a second error on node n0 (a UE)");
	tick(0, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(closed[0][0], 1);	/* aborted here, for the error */
}
END_TEST

/*
 * A resume read while process() was held by a retry, then its key rewritten
 * (refused, a step that goes back): wedged, its ranks never told it.  They
 * abort at its deadline, not taken for resumed (found by
 * tests/fuzz/cluster.c: they were left paused, with no deadline).
 */
START_TEST(wedged_at_a_resume_not_told_aborts)
{
	peer_opens_x1("n0,n9");
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	mute_node = 0;		/* its publication lost: process() held RETRY_US */
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":4}", now), 0);
	run();
	mute_node = -1;
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"resume\",\"timeout\":30}");
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"resume\",\"timeout\":30}");
	run();
	tick(0, 500000);
	ck_assert_uint_eq(steps[0][CL_RESUME], 0);
	ck_assert_uint_eq(steps[0][CL_ABORT], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), now + 29500000ULL);
	tick(0, 29500000ULL);
	ck_assert_uint_eq(steps[0][CL_RESUME], 0);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_str_eq(told_why[0], "the incident's step changed by another writer");
}
END_TEST

/*
 * An abort decided here while the step key was writable, then the incident
 * wedged (its abort refused: a writer deleted the step key): the close
 * waits an abort's timeout from the ranks' abort (helper-198: it went at
 * the step's old deadline, 0.5 s after).
 */
START_TEST(abort_decided_then_wedged_close_waits)
{
	struct cl_action a, abort_txn;
	bool held = false, told = false;
	uint64_t t_abort;

	peer_opens_x1("n0,n9");
	run();
	ck_assert_uint_eq(steps[0][CL_PAUSE], 1);
	now += 29500000ULL;
	t_abort = now;
	ck_assert_int_eq(cl_fail(cores[0], "J", "a rank failed", now), 0);
	while (cl_next_action(cores[0], &a)) {
		if (a.kind == CL_TXN && a.txn == CL_TXN_ABORT && !held) {
			abort_txn = a;
			held = true;
		} else if (a.kind == CL_TXN) {
			free(a.body);
		} else if (a.kind == CL_LOCAL && a.step == CL_ABORT) {
			told = true;
		}
	}
	ck_assert(held && told);
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/x1/step"));
	run();
	cl_txn_done(cores[0], &abort_txn, 0, txn(abort_txn.body), rev, now);
	free(abort_txn.body);
	run();
	ck_assert_uint_eq(cl_next_deadline(cores[0]), t_abort + 10 * 1000000ULL);
	tick(0, t_abort + 10 * 1000000ULL - 1 - now);
	ck_assert_uint_eq(sent[0][CL_TXN_CLOSE], 0);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 1);
	tick(0, 1);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
}
END_TEST

/*
 * An abort read while process() was held by a retry (not told the ranks),
 * then its key spoilt: wedged, the ranks here are told the abort they read
 * at once, as the writable path does (helper-198: only at its deadline).
 */
START_TEST(wedged_abort_read_not_told_at_once)
{
	peer_opens_x1("n0,n9");
	run();
	mute_node = 0;		/* its publication lost: process() held RETRY_US */
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":4}", now), 0);
	run();
	mute_node = -1;
	fput("/hbmguard/v1/jobs/J/incident/x1/step",
	     "{\"step\":\"abort\",\"timeout\":10,\"reason\":\"n9 said so\"}");
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "junk");
	run();
	tick(0, 500000);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	ck_assert_str_eq(told_why[0], "n9 said so");
}
END_TEST

/*
 * n0's error at t0 opens its incident 20 s later; its watch brings incident
 * and pause while process() is held by a retry (the pause not told), and a
 * writer rewrites the step (refused: a step that goes back).  Wedged with a
 * step read, the ranks here, told nothing, abort by their error's pause
 * deadline (t0 + 30 s), not the pause read's (t0 + 50 s) (helper-198, with
 * the fuzz target exploring b57dc66).
 */
START_TEST(wedged_step_read_not_told_error_deadline)
{
	struct cl_action open;
	uint64_t t0 = now;

	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	ck_assert(take_txn(CL_TXN_OPEN, &open));
	now += 20 * 1000000ULL;
	mute_node = 0;		/* its publication lost: process() held RETRY_US */
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":3}", now), 0);
	run();
	mute_node = -1;
	ck_assert(txn(open.body));
	cl_txn_done(cores[0], &open, 0, true, rev, now);
	free(open.body);
	fput("/hbmguard/v1/jobs/J/incident/0000000000000001/step", "{\"step\":\"pause\",\"timeout\":1}");
	run();
	tick(0, 500000);
	ck_assert_uint_eq(steps[0][CL_PAUSE], 0);
	ck_assert_uint_eq(cl_next_deadline(cores[0]), t0 + 30 * 1000000ULL);
	tick(0, t0 + 30 * 1000000ULL - now);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
}
END_TEST

/*
 * A wedged close refused, the step key's deletion event lost; a read then
 * finds the key gone: the close comparing its absence goes at once, as
 * after the event (helper-199: it waited the refusal's pacing, and asked a
 * needless read).
 */
START_TEST(read_finds_wedged_key_gone_closes)
{
	struct cl_action cl;

	peer_opens_x1("n0,n9");
	run();
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "junk");
	run();
	tick(0, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	now += 10 * 1000000ULL;
	cl_tick(cores[0], now);
	ck_assert(take_txn(CL_TXN_CLOSE, &cl));
	store_forget("/hbmguard/v1/jobs/J/incident/x1/step");	/* deleted, the event lost */
	cl_txn_done(cores[0], &cl, 0, txn(cl.body), rev, now);
	free(cl.body);
	run();
	now += 1000000;
	reread(0);		/* the read has no step key: as its deletion would */
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	ck_assert_uint_eq(rereads[0], 1);	/* the test's own */
}
END_TEST

/*
 * A wedged close refused because the key moved, the watch bringing it
 * before the answer: the close comparing the new revision goes at once,
 * as when the answer comes first (helper-199: it waited an abort's timeout
 * or not, by the order of the two).
 */
START_TEST(wedged_key_moved_before_refusal_closes)
{
	struct cl_action cl;

	peer_opens_x1("n0,n9");
	run();
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "junk");
	run();
	tick(0, 30 * 1000000ULL);
	now += 10 * 1000000ULL;
	cl_tick(cores[0], now);
	ck_assert(take_txn(CL_TXN_CLOSE, &cl));
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "junk2");	/* the watch brings it first */
	run();
	cl_txn_done(cores[0], &cl, 0, txn(cl.body), rev, now);
	free(cl.body);
	run();
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
}
END_TEST

/*
 * cl_error() tells the ranks abort while process() is held by a retry (an
 * abort decided, not yet theirs); etcd then gone past the step's deadline:
 * they are not told again (helper-199).
 */
START_TEST(error_while_aborting_not_told_twice)
{
	peer_opens_x1("n0,n9");
	run();
	mute_node = 0;
	ck_assert_int_eq(cl_job_join(cores[0], "J", "{\"ranks\":[0],\"world_size\":4}", now), 0);
	run();
	mute_node = -1;
	ck_assert_int_eq(cl_fail(cores[0], "J", "a rank failed", now), 0);
	ck_assert_int_eq(cl_error(cores[0], "J", 0, "a UE", now, id), 0);
	run();
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	linked[0] = false;
	cl_link(cores[0], false, now);
	run();
	tick(0, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[0][CL_ABORT], 1);
	linked[0] = true;
}
END_TEST

/* A daemon on another host of n1's name (a cloned image) joins J: core 3. */
static void clone_of_n1_joins(const char *value)
{
	struct cl_timeouts t = { { 30, 30, 120, 30, 10 } };
	struct etcd_kv kvs[KEYS];

	cores[3] = cl_new("n1", &t, nonce);
	linked[3] = true;
	nr_cores = 4;
	cl_link(cores[3], true, now);
	cl_snapshot(cores[3], kvs, collect(CL_PREFIX, kvs), rev, now);
	cl_lease(cores[3], 203, now);
	ck_assert_int_eq(cl_job_join(cores[3], "J", value, now), 0);
	run();
}

/*
 * Two daemons of one name: each says so once, having written the key once
 * again (so that the other hears of it), and neither writes it again after.
 */
START_TEST(name_taken_said_by_both)
{
	clone_of_n1_joins("{\"ranks\":[1],\"world_size\":3}");
	for (int n = 0; n < 4; n++) {
		const char *line = strstr(said[n], "put by another writer");

		ck_assert_msg(!line == (n == 0 || n == 2), "n%d said: %s", n, said[n]);
		ck_assert(!line || !strstr(line + 1, "put by another writer"));
	}
	ck_assert_ptr_nonnull(strstr(said[1], "(lease cb, this node's 65) after this node's: another hbmguardd named n1?"));
	ck_assert_ptr_nonnull(strstr(said[3], "(lease 65, this node's cb)"));
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH], 2);
	ck_assert_uint_eq(sent[3][CL_TXN_PUBLISH], 2);
	tick(-1, 60 * 1000000ULL);
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH], 2);
	ck_assert_uint_eq(sent[3][CL_TXN_PUBLISH], 2);
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 203);

	/* the key gone (core 3's lease ended): core 1's again, and a writer said again */
	cl_free(cores[3]);
	nr_cores = 3;
	fdel(find("/hbmguard/v1/jobs/J/nodes/n1"));
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 101);
	fput("/hbmguard/v1/jobs/J/nodes/n1", "{\"ranks\":[1],\"world_size\":3}");
	run();
	ck_assert_ptr_nonnull(strstr(said[1], "(lease 0, this node's 65) after this node's: an etcd user's"));

	/* the key gone, the deletion's event lost: a read finds it so */
	store_forget("/hbmguard/v1/jobs/J/nodes/n1");
	reread(1);
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 101);
	fput("/hbmguard/v1/jobs/J/nodes/n1", "{\"ranks\":[1],\"world_size\":3}");
	run();
	ck_assert_ptr_nonnull(strstr(strstr(said[1], "(lease 0, this node's 65)") + 1,
				     "(lease 0, this node's 65)"));
}
END_TEST

/* The other's put heard in a read (the watch lost): said at the read, written once. */
START_TEST(name_taken_seen_in_a_read)
{
	deaf_node = 1;
	clone_of_n1_joins("{\"ranks\":[1],\"world_size\":3}");
	ck_assert_ptr_null(strstr(said[1], "another writer"));
	deaf_node = -1;
	reread(1);
	run();
	ck_assert_ptr_nonnull(strstr(said[1], "(lease cb, this node's 65)"));
	ck_assert_ptr_nonnull(strstr(said[3], "(lease 65, this node's cb)"));
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH], 2);
	ck_assert_uint_eq(sent[3][CL_TXN_PUBLISH], 2);
}
END_TEST

/* Its ranks lost to the other's key: an error here aborts them saying why. */
START_TEST(name_taken_error_says_why)
{
	clone_of_n1_joins("{\"ranks\":[3],\"world_size\":4}");
	ck_assert_ptr_nonnull(strstr(said[1], "another hbmguardd named n1?"));
	ck_assert_ptr_nonnull(strstr(find("/hbmguard/v1/jobs/J/nodes/n1")->value, "[3]"));
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	tick(1, 30 * 1000000ULL);
	ck_assert_uint_eq(steps[1][CL_ABORT], 1);
	ck_assert_str_eq(told_why[1], "not opened across nodes: this node's name taken by another");
	ck_assert_uint_lt(strlen(told_why[1]), sizeof(((struct hbm_ctl_incident *)0)->reason));
}
END_TEST

/*
 * Its own key put again, by a daemon started again within LeaseTTL (the old
 * lease's key read first), under a lease etcd gave anew (a put of the old
 * lease's taken late), with a new value
 * answered before the watch brought it: none is another writer's.
 */
START_TEST(own_key_rewritten_not_taken)
{
	struct cl_timeouts t = { { 30, 30, 120, 30, 10 } };
	struct etcd_kv kvs[KEYS];

	cl_free(cores[1]);
	cores[1] = cl_new("n1", &t, nonce);
	cl_link(cores[1], true, now);
	cl_snapshot(cores[1], kvs, collect(CL_PREFIX, kvs), rev, now);
	cl_lease(cores[1], 301, now);
	ck_assert_int_eq(cl_job_join(cores[1], "J", "{\"ranks\":[1],\"world_size\":3}", now), 0);
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 301);
	cl_lease(cores[1], 0, now);
	cl_lease(cores[1], 302, now);
	/* a put sent under the old lease, taken by etcd only now */
	fput_leased("/hbmguard/v1/jobs/J/nodes/n1", "{\"ranks\":[1],\"world_size\":3}", 301);
	run();
	answer_first = true;
	ck_assert_int_eq(cl_job_join(cores[1], "J", "{\"ranks\":[1],\"world_size\":3,\"x\":1}", now), 0);
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 302);
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH], 4);	/* the first daemon's, and three */
	for (int n = 0; n < 3; n++)
		ck_assert_msg(!strstr(said[n], "another writer"), "n%d said: %s", n, said[n]);
}
END_TEST

#define X1_AS_CREATED "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"]}"
/* the same incident, put over by a writer */
#define X1_PUT_OVER "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"],\"reason\":\"put again\"}"

/* Incident x1 of n9 over n0, n1, n2 at pause, its step key then deleted by a writer: wedged. */
static int64_t x1_wedged(void)
{
	int64_t r1;

	fput("/hbmguard/v1/jobs/J/incident", X1_AS_CREATED);
	r1 = rev;	/* its create_revision */
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"pause\",\"timeout\":30}");
	run();
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/x1/step"));
	run();
	return r1;
}

/* x1 wedged, then put over by a writer; @before: the revision before the put (a backup's) */
static int64_t x1_wedged_put_over(int64_t *before)
{
	int64_t r1 = x1_wedged();

	if (before)
		*before = rev;
	fput("/hbmguard/v1/jobs/J/incident", X1_PUT_OVER);
	run();
	return r1;
}

/* The store restored from a backup of before revision @r1, its incident key gone, no core linked to hear it. */
static void restored_unseen(int64_t r1)
{
	for (int n = 0; n < 3; n++)
		linked[n] = false;
	store_forget("/hbmguard/v1/jobs/J/incident");
	rev = r1 - 1;
}

static void relinked(void)
{
	for (int n = 0; n < 3; n++)
		linked[n] = true;
}

/*
 * A wedged incident's close, the store restored meanwhile unread (the
 * watch's check missed it): another incident at the same create_revision,
 * its step key there and the wedged one's not, is spared (its value
 * differs), and read at the next try.
 */
START_TEST(wedged_close_spares_an_unread_restore)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";
	int64_t r1;

	r1 = x1_wedged();
	restored_unseen(r1);
	fput(inc, "{\"id\":\"x2\",\"opener\":\"n9\",\"rank\":2,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"]}");
	ck_assert_int_eq(find(inc)->create, r1);
	fput("/hbmguard/v1/jobs/J/incident/x2/step", "{\"step\":\"pause\",\"timeout\":30}");
	relinked();
	tick(-1, 30 * 1000000ULL);
	tick(-1, 10 * 1000000ULL);
	ck_assert_ptr_nonnull(strstr(said[0], "incident x1: its step key gone: closing it"));
	ck_assert_uint_ge(sent[0][CL_TXN_CLOSE], 1);
	ck_assert_ptr_nonnull(find(inc));
	ck_assert_ptr_nonnull(strstr(find(inc)->value, "\"x2\""));
	tick(-1, 10 * 1000000ULL);
	ck_assert_ptr_nonnull(find(inc));
	ck_assert_uint_ge(rereads[0], 1);
	ck_assert_ptr_nonnull(strstr(said[0], "incident x2 opened by n9"));
}
END_TEST

/* A wedged incident's key put again by a writer (its id, then junk): the close compares what it holds now. */
START_TEST(wedged_close_compares_the_value_put_again)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";

	x1_wedged_put_over(NULL);
	fput(inc, "not an incident");	/* refused: the incident goes on, its close compares it */
	run();
	tick(-1, 30 * 1000000ULL);
	tick(-1, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under(inc), 0);
	for (int n = 0; n < 3; n++)
		ck_assert_uint_eq(closed[n][0], 1);
}
END_TEST

static unsigned int count_of(const char *s, const char *what)
{
	unsigned int n = 0;

	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

/* core @n replaced by a daemon of name @node, lease @lease, its ranks @value (helper-200) */
static void daemon_starts(int n, const char *node, int64_t lease, const char *value)
{
	struct cl_timeouts t = { { 30, 30, 120, 30, 10 } };
	struct etcd_kv kvs[KEYS];

	if (n < nr_cores)
		cl_free(cores[n]);
	else
		nr_cores = n + 1;
	said[n][0] = 0;
	cores[n] = cl_new(node, &t, nonce);
	linked[n] = true;
	cl_link(cores[n], true, now);
	cl_snapshot(cores[n], kvs, collect(CL_PREFIX, kvs), rev, now);
	cl_lease(cores[n], lease, now);
	ck_assert_int_eq(cl_job_join(cores[n], "J", value, now), 0);
	run();
}

/* An operator's put said and put over: a twin later is said by both (helper-200). */
START_TEST(twin_said_after_an_operator_put)
{
	fput("/hbmguard/v1/jobs/J/nodes/n1", "{\"ranks\":[1],\"world_size\":3}");
	run();
	ck_assert_uint_eq(count_of(said[1], "put by another writer"), 1);
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 101);
	clone_of_n1_joins("{\"ranks\":[1],\"world_size\":3}");
	ck_assert_uint_eq(count_of(said[1], "put by another writer"), 2);
	ck_assert_uint_eq(count_of(said[3], "put by another writer"), 1);
	/* the key another's: not counted published */
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 203);
	ck_assert_uint_eq(cl_jobs_published(cores[1]), 0);
	ck_assert_uint_eq(cl_jobs_published(cores[3]), 1);
}
END_TEST

/*
 * Reads again on the daemon whose key the other holds put nothing over it;
 * the other gone (its key not: the test's etcd ends no lease), a second
 * twin is said by both (helper-200).
 */
START_TEST(twins_reads_put_nothing_next_twin_said)
{
	clone_of_n1_joins("{\"ranks\":[1],\"world_size\":3}");
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH] + sent[3][CL_TXN_PUBLISH], 4);
	for (int i = 0; i < 10; i++) {
		reread(find("/hbmguard/v1/jobs/J/nodes/n1")->lease == 101 ? 3 : 1);
		run();
	}
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH] + sent[3][CL_TXN_PUBLISH], 4);
	daemon_starts(3, "n1", 204, "{\"ranks\":[1],\"world_size\":3}");
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 204);
	ck_assert_uint_eq(count_of(said[1], "put by another writer"), 2);
	ck_assert_uint_eq(count_of(said[3], "put by another writer"), 1);
}
END_TEST

/* Three daemons of one name: each says each other once, a bounded number of puts (helper-200). */
START_TEST(three_twins_bounded)
{
	daemon_starts(2, "n1", 202, "{\"ranks\":[1],\"world_size\":3}");
	clone_of_n1_joins("{\"ranks\":[1],\"world_size\":3}");
	tick(-1, 60 * 1000000ULL);
	ck_assert_uint_le(sent[1][CL_TXN_PUBLISH] + sent[2][CL_TXN_PUBLISH] +
			  sent[3][CL_TXN_PUBLISH], 12);
	for (int n = 1; n < 4; n++)
		ck_assert_msg(count_of(said[n], "put by another writer") == 2, "core %d: %s", n, said[n]);
}
END_TEST

/* A put sent under the lease before, taken after the new one's: its own (helper-200). */
START_TEST(old_lease_put_taken_late_is_own)
{
	cl_lease(cores[1], 0, now);
	cl_lease(cores[1], 102, now);
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 102);
	fput_leased("/hbmguard/v1/jobs/J/nodes/n1", "{\"ranks\":[1],\"world_size\":3}", 101);
	run();
	ck_assert_msg(!strstr(said[1], "another writer"), "n1 said: %s", said[1]);
}
END_TEST

/* An operator's put long put over: an abort after does not blame the name (helper-200). */
START_TEST(operator_put_over_reason_not_the_name)
{
	fput("/hbmguard/v1/jobs/J/nodes/n1", "{\"ranks\":[1],\"world_size\":3}");
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 101);
	linked[2] = false;
	fdel(find("/hbmguard/v1/jobs/J/nodes/n2"));
	run();
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	tick(1, 30 * 1000000ULL);
	ck_assert_str_eq(told_why[1], "not opened across nodes: not every rank's node known");
}
END_TEST

/* One daemon leaving, joining, its lease changing, reading again, answered first or not (helper-200). */
START_TEST(one_daemon_churn_never_another)
{
	const char *v[] = { "{\"ranks\":[1],\"world_size\":3}", "{\"ranks\":[1],\"world_size\":3,\"x\":1}" };

	for (int i = 0; i < 40; i++) {
		answer_first = i & 1;
		switch (i % 5) {
		case 0:
			cl_job_leave(cores[1], "J", now);
			ck_assert_int_eq(cl_job_join(cores[1], "J", v[i & 1], now), 0);
			break;
		case 1:
			cl_lease(cores[1], 0, now);
			cl_lease(cores[1], 1000 + i, now);
			break;
		case 2:
			reread(1);
			break;
		case 3:
			ck_assert_int_eq(cl_job_join(cores[1], "J", v[i & 1], now), 0);
			cl_lease(cores[1], 1000 + i, now);
			break;
		case 4:
			cl_job_leave(cores[1], "J", now);
			run();
			ck_assert_int_eq(cl_job_join(cores[1], "J", v[i & 1], now), 0);
			break;
		}
		run();
		tick(-1, 1000000);
	}
	for (int n = 0; n < 3; n++)
		ck_assert_msg(!strstr(said[n], "another writer"), "n%d said: %s", n, said[n]);
	ck_assert_uint_eq(cl_jobs_published(cores[1]), 1);
}
END_TEST

/* The twin whose key the other holds registers new ranks: put once, over it; the other puts nothing back. */
START_TEST(twin_new_ranks_put_once)
{
	clone_of_n1_joins("{\"ranks\":[1],\"world_size\":3}");
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 203);
	ck_assert_int_eq(cl_job_join(cores[1], "J", "{\"ranks\":[1],\"world_size\":4}", now), 0);
	run();
	ck_assert_int_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->lease, 101);
	ck_assert_str_eq(find("/hbmguard/v1/jobs/J/nodes/n1")->value, "{\"ranks\":[1],\"world_size\":4}");
	ck_assert_uint_eq(sent[1][CL_TXN_PUBLISH], 3);
	ck_assert_uint_eq(sent[3][CL_TXN_PUBLISH], 2);
	ck_assert_uint_eq(count_of(said[3], "put by another writer"), 1);
}
END_TEST

static char race_key[128];

/* The incident key put over by a writer, a space more: the same incident. */
static void put_over_now(void)
{
	struct fkv *f = find(race_key);
	char v[1024];

	ck_assert_ptr_nonnull(f);
	snprintf(v, sizeof(v), "%s ", f->value);
	fput(race_key, v);
}

/*
 * The opener's close after resume, a writer's put over the incident key
 * taken just before it: its step key names it, nothing else is compared,
 * and no node aborts ranks that resumed (helper-201).
 */
START_TEST(close_races_a_put_over)
{
	snprintf(race_key, sizeof(race_key), "/hbmguard/v1/jobs/J/incident");
	before_close = put_over_now;
	ck_assert_int_eq(cl_error(cores[1], "J", 1, "a UE", now, id), 0);
	run();
	for (int i = 0; i < 10; i++)
		tick(-1, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under("/hbmguard/v1/jobs/J/incident"), 0);
	for (int n = 0; n < 3; n++) {
		ck_assert_uint_eq(steps[n][CL_ABORT], 0);
		ck_assert_uint_eq(closed[n][1], 1);
	}
}
END_TEST

/*
 * Wedged, its key put over, the store then restored to before the put
 * (the key as created, the same id): the close compares it as it is now
 * (helper-201).
 */
START_TEST(wedged_restored_before_a_put_over_closes)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";
	int64_t r1, rb;

	r1 = x1_wedged_put_over(&rb);
	restored_unseen(r1);
	fput(inc, X1_AS_CREATED);
	ck_assert_int_eq(find(inc)->create, r1);
	ck_assert_int_eq(find(inc)->version, 1);
	rev = rb;
	relinked();
	for (int i = 0; i < 30; i++)
		tick(-1, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under(inc), 0);
}
END_TEST

/*
 * Wedged and put over (its mod_revision compared), the store restored to
 * before it, another incident opened there at its create_revision, unread:
 * spared.
 */
START_TEST(wedged_put_over_spares_an_unread_restore)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";
	int64_t r1;

	r1 = x1_wedged_put_over(NULL);
	restored_unseen(r1);
	fput(inc, "{\"id\":\"x2\",\"opener\":\"n9\",\"rank\":2,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"]}");
	fput("/hbmguard/v1/jobs/J/incident/x2/step", "{\"step\":\"pause\",\"timeout\":30}");
	relinked();
	tick(-1, 30 * 1000000ULL);
	tick(-1, 10 * 1000000ULL);
	ck_assert_uint_ge(sent[0][CL_TXN_CLOSE], 1);
	ck_assert_ptr_nonnull(find(inc));
	ck_assert_ptr_nonnull(strstr(find(inc)->value, "\"x2\""));
}
END_TEST

/*
 * Wedged, put over, every node's ranks gone from the job, the store
 * restored to before the put over (x1 as created, no node key): the read's
 * key is what the close compares, though the job has no node (helper-202).
 */
START_TEST(wedged_restored_before_a_put_over_no_nodes_closes)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";
	int64_t r1, rb;

	r1 = x1_wedged_put_over(&rb);
	for (int n = 0; n < 3; n++)
		linked[n] = false;
	for (int n = 0; n < 3; n++)
		ck_assert_int_eq(cl_job_leave(cores[n], "J", now), 0);
	run();
	for (int n = 0; n < 3; n++) {
		char k[64];

		snprintf(k, sizeof(k), "/hbmguard/v1/jobs/J/nodes/n%d", n);
		if (find(k))
			store_forget(k);	/* the job over: its nodes' keys gone with their leases */
	}
	restored_unseen(r1);
	fput(inc, X1_AS_CREATED);
	ck_assert_int_eq(find(inc)->version, 1);
	rev = rb + 10;
	for (int n = 0; n < 3; n++) {
		linked[n] = true;
		cl_link(cores[n], true, now);
	}
	for (int i = 0; i < 60; i++)
		tick(-1, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under(inc), 0);
}
END_TEST

/* Wedged, a writer's put over whose event is lost: closed after a read again (helper-202). */
START_TEST(wedged_put_over_unheard_closes)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";

	x1_wedged();
	for (int n = 0; n < 3; n++)
		linked[n] = false;
	fput(inc, "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n1\",\"n2\",\"n9\"],\"reason\":\"again\"}");
	fput(inc, "\x01junk");
	relinked();
	for (int i = 0; i < 12; i++)
		tick(-1, 10 * 1000000ULL);
	ck_assert_int_eq(keys_under(inc), 0);
	ck_assert_uint_ge(rereads[0] + rereads[1] + rereads[2], 1);
	for (int n = 0; n < 3; n++)
		ck_assert_uint_lt(sent[n][CL_TXN_CLOSE], 6);
}
END_TEST

/* A put over (version 2) of 100 KiB: no value kept, the close compares the mod_revision (helper-202). */
START_TEST(wedged_put_over_value_not_kept)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";
	static char big[100 * 1024];
	struct cl_action a;
	bool seen = false;

	x1_wedged();
	memset(big, 'x', sizeof(big) - 1);
	fput(inc, big);
	run();
	for (int i = 0; i < 6 && !seen; i++) {
		now += 10 * 1000000ULL;
		cl_tick(cores[0], now);
		while (cl_next_action(cores[0], &a)) {
			if (a.kind == CL_TXN && a.txn == CL_TXN_CLOSE) {
				seen = true;
				ck_assert_ptr_null(strstr(a.body, "\"VALUE\""));
				ck_assert_uint_lt(strlen(a.body), 4096);
			}
			free(a.body);
		}
	}
	ck_assert(seen);
}
END_TEST

/* The same, its event brought after the close's answer. */
static void put_over_heard_late(void)
{
	holding = true;
	put_over_now();
	holding = false;
}

/*
 * A wedged close, a writer's put over the incident key taken just before
 * it, heard before the close's answer or after: closed at once, comparing
 * the put, not an abort's timeout later after a read again (helper-202).
 */
START_TEST(wedged_close_races_a_put_over)
{
	const char *inc = "/hbmguard/v1/jobs/J/incident";
	uint64_t t0;

	snprintf(race_key, sizeof(race_key), "%s", inc);
	if (_i)
		answer_first = true;
	fput(inc, "{\"id\":\"x1\",\"opener\":\"n9\",\"rank\":1,\"nodes\":[\"n0\",\"n9\"]}");
	fput("/hbmguard/v1/jobs/J/incident/x1/step", "{\"step\":\"pause\",\"timeout\":30}");
	run();
	rev++;
	fdel(find("/hbmguard/v1/jobs/J/incident/x1/step"));
	run();
	tick(0, 40 * 1000000ULL);	/* its ranks aborted: the close due an abort's timeout on */
	before_close = _i ? put_over_heard_late : put_over_now;
	t0 = now;
	while (find(inc) && now < t0 + 60 * 1000000ULL)
		tick(0, 1000000ULL);
	ck_assert_ptr_null(find(inc));
	ck_assert_uint_eq(sent[0][CL_TXN_CLOSE], 2);
	ck_assert_uint_eq(rereads[0], 0);
	ck_assert_uint_le(now - t0, 10 * 1000000ULL);	/* at the first's answer */
}
END_TEST

Suite *cluster_suite(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("etcd messages");

	tcase_add_test(tc, base64);
	tcase_add_test(tc, kv_parse);
	tcase_add_test(tc, range_pages);
	tcase_add_test(tc, fingerprint_kept);
	tcase_add_test(tc, fingerprint_check_body);
	tcase_add_test(tc, fingerprint_judged);
	tcase_add_test(tc, txn_value_compare);
	suite_add_tcase(s, tc);
	tc = tcase_create("protocol");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, resumed_everywhere);
	tcase_add_test(tc, answered_before_watched);
	tcase_add_test(tc, change_taken_watch_behind);
	tcase_add_test(tc, store_went_back);
	tcase_add_test(tc, deadline_aborts);
	tcase_add_test(tc, failed_step_and_second_error);
	tcase_add_test(tc, two_open_at_once);
	tcase_add_test(tc, lease_ends);
	tcase_add_test(tc, etcd_gone);
	tcase_add_test(tc, etcd_gone_before);
	tcase_add_test(tc, closed_while_away);
	tcase_add_test(tc, hostile);
	tcase_add_test(tc, hostile_mid_incident);
	tcase_add_test(tc, leave);
	tcase_add_test(tc, world_of_distinct_ranks);
	tcase_add_test(tc, junk_in_a_read);
	tcase_add_test(tc, late_ack_kept);
	tcase_add_test(tc, local_failure);
	tcase_add_test(tc, counts_follow);
	tcase_add_test(tc, error_during_incident);
	tcase_add_test(tc, abort_before_open_is_not_sticky);
	tcase_add_test(tc, open_in_flight_no_spin);
	tcase_add_test(tc, second_error_while_aborting);
	tcase_add_test(tc, crowded_out_before_join);
	tcase_add_test(tc, junk_events_rate_limited);
	tcase_add_test(tc, junk_incident_key_opens_paced);
	tcase_add_test(tc, refused_open_then_link_down_does_not_spin);
	tcase_add_test(tc, jobs_leaving_without_etcd_are_bounded);
	tcase_add_test(tc, incident_of_many_nodes);
	tcase_add_test(tc, aborted_here_without_etcd_no_spin);
	tcase_add_test(tc, abort_read_without_etcd_no_spin);
	tcase_add_test(tc, deadline_before_retry_no_spin);
	tcase_add_test(tc, step_key_deleted_closes);
	tcase_add_test(tc, step_key_spoilt_closes);
	tcase_add_test(tc, wedged_by_a_read_that_left_the_step_out);
	tcase_add_test(tc, world_shrunk_under_an_incident);
	tcase_add_test(tc, step_read_late_aborted);
	tcase_add_test(tc, wedged_close_in_flight_no_spin);
	tcase_add_test(tc, wedged_while_etcd_away_closes);
	tcase_add_test(tc, writer_moving_a_wedged_step_no_reread);
	tcase_add_test(tc, abort_told_elsewhere_close_waits);
	tcase_add_test(tc, stale_wedged_close_spares_the_next_incident);
	tcase_add_test(tc, error_deadline_from_the_error);
	tcase_add_test(tc, restored_store_another_id_replaces);
	tcase_add_test(tc, revisions_etcd_does_not_give);
	tcase_add_test(tc, wedged_at_resume_second_error_aborts);
	tcase_add_test(tc, wedged_at_a_resume_not_told_aborts);
	tcase_add_test(tc, abort_decided_then_wedged_close_waits);
	tcase_add_test(tc, wedged_abort_read_not_told_at_once);
	tcase_add_test(tc, wedged_step_read_not_told_error_deadline);
	tcase_add_test(tc, read_finds_wedged_key_gone_closes);
	tcase_add_test(tc, wedged_key_moved_before_refusal_closes);
	tcase_add_test(tc, error_while_aborting_not_told_twice);
	tcase_add_test(tc, lost_rank_out_of_a_smaller_world);
	tcase_add_test(tc, step_unknown_aborts);
	tcase_add_test(tc, step_unknown_error_aborts_at_once);
	tcase_add_test(tc, stale_answer_of_an_ended_incident);
	tcase_add_test(tc, lost_rank_out_of_a_world_shrunk);
	tcase_add_test(tc, wedged_close_spares_an_unread_restore);
	tcase_add_test(tc, wedged_close_compares_the_value_put_again);
	tcase_add_test(tc, close_races_a_put_over);
	tcase_add_loop_test(tc, wedged_close_races_a_put_over, 0, 2);
	tcase_add_test(tc, wedged_restored_before_a_put_over_closes);
	tcase_add_test(tc, wedged_put_over_spares_an_unread_restore);
	tcase_add_test(tc, wedged_restored_before_a_put_over_no_nodes_closes);
	tcase_add_test(tc, wedged_put_over_unheard_closes);
	tcase_add_test(tc, wedged_put_over_value_not_kept);
	tcase_add_test(tc, name_taken_said_by_both);
	tcase_add_test(tc, name_taken_seen_in_a_read);
	tcase_add_test(tc, name_taken_error_says_why);
	tcase_add_test(tc, own_key_rewritten_not_taken);
	tcase_add_test(tc, twin_said_after_an_operator_put);
	tcase_add_test(tc, twins_reads_put_nothing_next_twin_said);
	tcase_add_test(tc, three_twins_bounded);
	tcase_add_test(tc, twin_new_ranks_put_once);
	tcase_add_test(tc, old_lease_put_taken_late_is_own);
	tcase_add_test(tc, operator_put_over_reason_not_the_name);
	tcase_add_test(tc, one_daemon_churn_never_another);
	suite_add_tcase(s, tc);
	return s;
}
