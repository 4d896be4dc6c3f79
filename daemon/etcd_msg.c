// SPDX-License-Identifier: GPL-2.0
/*
 * etcd v3's JSON messages (etcd_msg.h says from which source): built with
 * json-c, bytes in base64, and read back without trusting a field's type.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_msg.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Go's base64.StdEncoding, as the gateway marshals bytes: padded. */
char *etcd_base64(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = malloc(4 * ((len + 2) / 3) + 1), *o = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		*o++ = b64[p[i] >> 2];
		*o++ = b64[(p[i] & 3) << 4 | p[i + 1] >> 4];
		*o++ = b64[(p[i + 1] & 15) << 2 | p[i + 2] >> 6];
		*o++ = b64[p[i + 2] & 63];
	}
	if (i < len) {
		*o++ = b64[p[i] >> 2];
		if (i + 1 < len) {
			*o++ = b64[(p[i] & 3) << 4 | p[i + 1] >> 4];
			*o++ = b64[(p[i + 1] & 15) << 2];
		} else {
			*o++ = b64[(p[i] & 3) << 4];
			*o++ = '=';
		}
		*o++ = '=';
	}
	*o = 0;
	return out;
}

/**
 * etcd_unbase64() - decode padded base64
 * @in: the text
 * @out: set to the bytes, NUL-terminated past @len (free())
 * @len: set to their number
 *
 * Return: 0, -EINVAL if @in is not padded base64, -ENOMEM.
 */
int etcd_unbase64(const char *in, char **out, size_t *len)
{
	size_t n = strlen(in), i, o = 0;
	unsigned int acc = 0;
	char *buf;

	if (n % 4)
		return -EINVAL;
	buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const char *c = in[i] ? strchr(b64, in[i]) : NULL;
		unsigned int pad = n - i;

		if (!c) {
			/* '=' only as the last one or two, after bits that are zero */
			if (in[i] != '=' || pad > 2 || (pad == 2 && in[i + 1] != '=') ||
			    (acc & (pad == 2 ? 0xf : 0x3)))
				goto bad;
			break;
		}
		acc = acc << 6 | (unsigned int)(c - b64);
		if (i % 4 == 3) {
			buf[o++] = acc >> 16;
			buf[o++] = acc >> 8;
			buf[o++] = acc;
			acc = 0;
		}
	}
	if (i < n) {		/* padded: 2 or 3 characters of the last group */
		if (n - i == 2) {
			buf[o++] = acc >> 4;
		} else {
			buf[o++] = acc >> 10;
			buf[o++] = acc >> 2;
		}
	}
	buf[o] = 0;
	*out = buf;
	*len = o;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}

/*
 * The range_end of every key under @prefix: the prefix with its last byte
 * plus one (rpc.proto RangeRequest.range_end); our prefixes end in '/'.
 */
char *etcd_prefix_end(const char *prefix)
{
	char *end = strdup(prefix);
	size_t n = strlen(prefix);

	if (end && n)
		end[n - 1]++;
	return end;
}

static int add_bytes_len(struct json_object *o, const char *field, const char *s, size_t len)
{
	char *enc = etcd_base64(s, len);
	struct json_object *v = enc ? json_object_new_string(enc) : NULL;

	free(enc);
	if (!v)
		return -ENOMEM;
	json_object_object_add(o, field, v);
	return 0;
}

static int add_bytes(struct json_object *o, const char *field, const char *s)
{
	return add_bytes_len(o, field, s, strlen(s));
}

static void add_int64(struct json_object *o, const char *field, int64_t v)
{
	char n[24];

	snprintf(n, sizeof(n), "%" PRId64, v);
	json_object_object_add(o, field, json_object_new_string(n));
}

static char *to_text(struct json_object *o)
{
	const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;
	char *out = s ? strdup(s) : NULL;

	json_object_put(o);
	return out;
}

static int add_range_end(struct json_object *o, const char *prefix)
{
	char *end = etcd_prefix_end(prefix);
	int err = end ? add_bytes(o, "range_end", end) : -ENOMEM;

	free(end);
	return err;
}

/**
 * etcd_txn_body() - a TxnRequest: if every compare holds, the ops
 * @cmp: the compares (a conjunction)
 * @nr_cmp: their number
 * @ops: the success branch; the failure branch is empty
 * @nr_ops: their number
 *
 * Return: the JSON text (free()), NULL without memory.
 */
char *etcd_txn_body(const struct etcd_cmp *cmp, size_t nr_cmp,
		    const struct etcd_op *ops, size_t nr_ops)
{
	static const char *const targets[] = { "CREATE", "MOD", "VERSION", "VALUE" };
	static const char *const fields[] = { "create_revision", "mod_revision", "version", "value" };
	static const char *const results[] = { "EQUAL", "NOT_EQUAL", "GREATER", "LESS" };
	static const char *const op_fields[] = {
		[ETCD_PUT] = "request_put", [ETCD_DELETE] = "request_delete_range",
		[ETCD_DELETE_PREFIX] = "request_delete_range", [ETCD_RANGE_KEY] = "request_range",
		[ETCD_COUNT_PREFIX] = "request_range",
	};
	struct json_object *txn = json_object_new_object();
	struct json_object *c = json_object_new_array(), *s = json_object_new_array();
	int err = 0;
	size_t i;

	if (!txn || !c || !s) {
		json_object_put(c);
		json_object_put(s);
		json_object_put(txn);
		return NULL;
	}
	json_object_object_add(txn, "compare", c);
	json_object_object_add(txn, "success", s);
	for (i = 0; !err && i < nr_cmp; i++) {
		struct json_object *o = json_object_new_object();

		if (!o)
			break;
		json_object_array_add(c, o);
		json_object_object_add(o, "target", json_object_new_string(targets[cmp[i].target]));
		json_object_object_add(o, "result", json_object_new_string(results[cmp[i].result]));
		if (cmp[i].target == ETCD_VALUE)
			err = add_bytes_len(o, fields[cmp[i].target], cmp[i].value,
					    cmp[i].value_len);
		else
			add_int64(o, fields[cmp[i].target], cmp[i].v);
		if (!err)
			err = add_bytes(o, "key", cmp[i].key);
	}
	for (i = 0; !err && i < nr_ops; i++) {
		struct json_object *op = json_object_new_object(), *r = json_object_new_object();

		if (!op || !r) {
			json_object_put(op);
			json_object_put(r);
			err = -ENOMEM;
			break;
		}
		json_object_array_add(s, op);
		json_object_object_add(op, op_fields[ops[i].kind], r);
		err = add_bytes(r, "key", ops[i].key);
		if (!err && ops[i].kind == ETCD_PUT)
			err = add_bytes(r, "value", ops[i].value);
		if (!err && ops[i].kind == ETCD_PUT && ops[i].lease)
			add_int64(r, "lease", ops[i].lease);
		if (!err && (ops[i].kind == ETCD_DELETE_PREFIX || ops[i].kind == ETCD_COUNT_PREFIX))
			err = add_range_end(r, ops[i].key);
		if (ops[i].kind == ETCD_RANGE_KEY || ops[i].kind == ETCD_COUNT_PREFIX) {
			if (ops[i].revision > 0)
				add_int64(r, "revision", ops[i].revision);
			json_object_object_add(r, ops[i].kind == ETCD_RANGE_KEY ? "keys_only" :
					       "count_only", json_object_new_boolean(1));
		}
	}
	if (err || i < nr_ops) {
		json_object_put(txn);
		return NULL;
	}
	return to_text(txn);
}

/*
 * A page of a RangeRequest of every key under @prefix, linearizable: at most
 * @limit keys from the one past @after (base64, as the last page's last
 * "key"; NULL: from the first), of @revision (0: now), so that the pages
 * of one read are one revision (rpc.proto RangeRequest key, range_end,
 * limit, revision; RangeResponse.more: keys are left).
 */
char *etcd_range_body(const char *prefix, const char *after, int64_t revision, int64_t limit)
{
	struct json_object *o = json_object_new_object(), *from = NULL;
	char *key, *enc;
	size_t len;

	if (after && !etcd_unbase64(after, &key, &len)) {
		/* the least key past it: it and a NUL byte (etcd_unbase64() ends it with one) */
		enc = etcd_base64(key, len + 1);
		from = enc ? json_object_new_string(enc) : NULL;
		free(key);
		free(enc);
	}
	if (!o || (after && !from) || (!after && add_bytes(o, "key", prefix)) ||
	    add_range_end(o, prefix)) {
		json_object_put(from);
		json_object_put(o);
		return NULL;
	}
	if (from)
		json_object_object_add(o, "key", from);
	if (revision > 0)
		add_int64(o, "revision", revision);
	add_int64(o, "limit", limit);
	return to_text(o);
}

/*
 * A WatchCreateRequest of every key under @prefix from @start_revision
 * (inclusive), with progress notifications: their header.revision lets a
 * watch that saw no event resume past what it has missed nothing of.
 */
char *etcd_watch_body(const char *prefix, int64_t start_revision)
{
	struct json_object *w = json_object_new_object(), *c = json_object_new_object();

	if (!w || !c || add_bytes(c, "key", prefix) || add_range_end(c, prefix)) {
		json_object_put(w);
		json_object_put(c);
		return NULL;
	}
	add_int64(c, "start_revision", start_revision);
	json_object_object_add(c, "progress_notify", json_object_new_boolean(1));
	json_object_object_add(w, "create_request", c);
	return to_text(w);
}

/**
 * etcd_int64() - an int64 field, as the gateway writes it (a string) or a number
 * @o: the object
 * @field: the field's name
 * @v: set to its value; 0 when absent (proto3's zero value is left out)
 *
 * Return: 0, or -EINVAL if it is there and not an int64.
 */
int etcd_int64(struct json_object *o, const char *field, int64_t *v)
{
	struct json_object *f;
	const char *s;
	char *end;

	*v = 0;
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, field, &f))
		return 0;
	if (json_object_is_type(f, json_type_int)) {
		*v = json_object_get_int64(f);
		return 0;
	}
	if (!json_object_is_type(f, json_type_string))
		return -EINVAL;
	s = json_object_get_string(f);
	if (!*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int bytes_field(struct json_object *o, const char *field, char **out, size_t *len)
{
	struct json_object *f;

	if (!json_object_object_get_ex(o, field, &f)) {
		*out = strdup("");
		*len = 0;
		return *out ? 0 : -ENOMEM;
	}
	/*
	 * A "\u0000" inside is no base64: decoded up to it, the field would
	 * read as another key than the one sent.
	 */
	if (!json_object_is_type(f, json_type_string) ||
	    strlen(json_object_get_string(f)) != (size_t)json_object_get_string_len(f))
		return -EINVAL;
	return etcd_unbase64(json_object_get_string(f), out, len);
}

/**
 * etcd_kv_parse() - an mvccpb.KeyValue
 * @o: its JSON
 * @kv: filled (etcd_kv_clear()); left empty on an error
 *
 * Return: 0, -EINVAL if a field is not what kv.proto says, -ENOMEM.
 */
int etcd_kv_parse(struct json_object *o, struct etcd_kv *kv)
{
	int err;

	memset(kv, 0, sizeof(*kv));
	if (!json_object_is_type(o, json_type_object))
		return -EINVAL;
	err = bytes_field(o, "key", &kv->key, &kv->key_len);
	if (!err)
		err = bytes_field(o, "value", &kv->value, &kv->value_len);
	if (!err)
		err = etcd_int64(o, "create_revision", &kv->create_revision);
	if (!err)
		err = etcd_int64(o, "mod_revision", &kv->mod_revision);
	if (!err)
		err = etcd_int64(o, "version", &kv->version);
	if (!err)
		err = etcd_int64(o, "lease", &kv->lease);
	/* an empty key is not allowed (kv.proto); one with a NUL cannot be ours */
	if (!err && (!kv->key_len || strlen(kv->key) != kv->key_len))
		err = -EINVAL;
	if (err)
		etcd_kv_clear(kv);
	return err;
}

void etcd_kv_clear(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

/* A reply's header.revision (rpc.proto ResponseHeader); -1 if it has none. */
int64_t etcd_header_revision(struct json_object *reply)
{
	struct json_object *h;
	int64_t rev;

	if (!json_object_object_get_ex(reply, "header", &h) || etcd_int64(h, "revision", &rev) ||
	    rev <= 0)
		return -1;
	return rev;
}

/* ---- a watch's fingerprint of its prefix (etcd_msg.h) ---- */

static void fp_mark(struct etcd_fingerprint *fp, const struct etcd_kv *kv)
{
	free(fp->mark);
	fp->mark = strdup(kv->key);
	if (!fp->mark)
		fp->count = -1;	/* not known: the check fails, the prefix is read again */
	fp->mark_create = kv->create_revision;
	fp->mark_mod = kv->mod_revision;
	fp->mark_version = kv->version;
	fp->mark_deleted = false;
}

/**
 * etcd_fp_read() - the fingerprint of a read of the prefix
 * @fp: set
 * @count: the keys etcd counted (RangeResponse.count: all of them, parsed or not)
 * @kvs: those parsed
 * @n: their number
 *
 * The mark is the key of the highest mod_revision.
 */
void etcd_fp_read(struct etcd_fingerprint *fp, int64_t count, const struct etcd_kv *kvs, size_t n)
{
	const struct etcd_kv *last = NULL;

	etcd_fp_clear(fp);
	fp->count = count;
	for (size_t i = 0; i < n; i++)
		if (!last || kvs[i].mod_revision > last->mod_revision)
			last = &kvs[i];
	if (last)
		fp_mark(fp, last);
}

/**
 * etcd_fp_event() - an event past the read, kept in the fingerprint
 * @fp: the fingerprint
 * @put: a PUT (else a DELETE)
 * @kv: its kv; a key etcd_kv_parse() refused as NULL, counted only
 *
 * A PUT of version 1 creates its key (mvcc/kvstore_txn.go put(), v3.4.23:
 * the version starts again at 1 after a delete); a DELETE event is of a
 * key that was there (delete() makes one only then).
 */
void etcd_fp_event(struct etcd_fingerprint *fp, bool put, const struct etcd_kv *kv)
{
	if (fp->count >= 0)
		fp->count += put ? kv->version == 1 : -1;
	if (!kv->key)
		return;
	if (put)
		fp_mark(fp, kv);
	else if (fp->mark && !strcmp(fp->mark, kv->key))
		fp->mark_deleted = true;
}

void etcd_fp_clear(struct etcd_fingerprint *fp)
{
	free(fp->mark);
	memset(fp, 0, sizeof(*fp));
}

/**
 * etcd_fp_check_body() - a TxnRequest that reads @fp back at @revision
 * @fp: the fingerprint
 * @prefix: its keys
 * @revision: the revision it is of
 *
 * No compares; the success branch: the count of @prefix's keys, then the
 * mark's key without its value (when there is a mark).  Inside a txn a
 * range of a compacted revision fails the whole txn (checkRequestRange()
 * in etcdserver/apply.go, v3.4.23: ErrCompacted, the gateway's code 11).
 *
 * Return: the JSON text (free()), NULL without memory.
 */
char *etcd_fp_check_body(const struct etcd_fingerprint *fp, const char *prefix, int64_t revision)
{
	const struct etcd_op ops[] = {
		{ .kind = ETCD_COUNT_PREFIX, .key = prefix, .revision = revision },
		{ .kind = ETCD_RANGE_KEY, .key = fp->mark, .revision = revision },
	};

	return etcd_txn_body(NULL, 0, ops, fp->mark ? 2 : 1);
}

/* The RangeResponse of a TxnResponse's responses[@i] (rpc.proto ResponseOp). */
static struct json_object *txn_range(struct json_object *responses, size_t i)
{
	struct json_object *op = json_object_array_get_idx(responses, i), *range;

	if (!json_object_is_type(op, json_type_object) ||
	    !json_object_object_get_ex(op, "response_range", &range) ||
	    !json_object_is_type(range, json_type_object))
		return NULL;
	return range;
}

/**
 * etcd_fp_judge() - the reply to etcd_fp_check_body() against @fp
 * @fp: the fingerprint
 * @reply: the TxnResponse
 * @count: set to the count etcd answered (0 if none)
 *
 * Return: ETCD_FP_SAME; ETCD_FP_COUNT, ETCD_FP_MARK where etcd's differs
 * (the count first); ETCD_FP_BAD_REPLY if @reply is not the answer to it.
 */
enum etcd_fp_verdict etcd_fp_judge(const struct etcd_fingerprint *fp, struct json_object *reply,
				   int64_t *count)
{
	struct json_object *responses, *counted, *marked, *kvs = NULL;
	size_t nr_ops = fp->mark ? 2 : 1, nr_kvs = 0;
	enum etcd_fp_verdict v = ETCD_FP_SAME;
	struct etcd_kv kv;

	*count = 0;
	if (!json_object_object_get_ex(reply, "responses", &responses) ||
	    !json_object_is_type(responses, json_type_array) ||
	    json_object_array_length(responses) != nr_ops)
		return ETCD_FP_BAD_REPLY;
	counted = txn_range(responses, 0);
	marked = fp->mark ? txn_range(responses, 1) : NULL;
	if (!counted || etcd_int64(counted, "count", count) || (fp->mark && !marked))
		return ETCD_FP_BAD_REPLY;
	if (marked && json_object_object_get_ex(marked, "kvs", &kvs)) {
		if (!json_object_is_type(kvs, json_type_array))
			return ETCD_FP_BAD_REPLY;
		nr_kvs = json_object_array_length(kvs);
	}
	if (nr_kvs > 1)
		return ETCD_FP_BAD_REPLY;	/* a range of one key */
	if (*count != fp->count)
		return ETCD_FP_COUNT;
	if (!fp->mark || (fp->mark_deleted && !nr_kvs))
		return ETCD_FP_SAME;
	if (fp->mark_deleted || !nr_kvs)
		return ETCD_FP_MARK;
	if (etcd_kv_parse(json_object_array_get_idx(kvs, 0), &kv))
		return ETCD_FP_BAD_REPLY;
	if (strcmp(kv.key, fp->mark) || kv.create_revision != fp->mark_create ||
	    kv.mod_revision != fp->mark_mod || kv.version != fp->mark_version)
		v = ETCD_FP_MARK;
	etcd_kv_clear(&kv);
	return v;
}
