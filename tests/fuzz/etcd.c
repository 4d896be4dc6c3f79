// SPDX-License-Identifier: GPL-2.0
/*
 * etcd's replies, as its JSON gateway (or whatever answers at an endpoint)
 * sends them: one JSON text per line, as a watch's stream carries them,
 * each parsed as daemon/etcd.c's parse() does (json-c, depth 64, an
 * object or nothing).  Every line is taken as each of what etcd.c reads:
 *
 *   a range's page ("kvs", "count", "more"): its kvs parsed, the read's
 *	fingerprint made of them (etcd_fp_read()), the next page's body
 *	built from its last key (etcd_range_body());
 *   a watch's response ({"result": {"events": [...]}}): each event's kv
 *	kept in the fingerprint, as deliver() does (etcd_fp_event());
 *   the answer to a resumed watch's check (a TxnResponse): judged
 *	against the fingerprint so far (etcd_fp_judge());
 *
 * and every string in it is decoded as base64, every field read as an
 * int64.  What a caller relies on is asserted: a kv parsed has its key and
 * value NUL-terminated at their lengths, its key the whole of the field
 * and free of NULs; an error leaves it empty; base64 decodes to the one
 * text that encodes it; the fingerprint counts and marks what it is told;
 * a verdict SAME means the count etcd answered is the one kept.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "etcd_msg.h"
#include "fuzz.h"

#define PREFIX	"/hbmguard/"

static bool is_b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

/* @s (@n bytes, a NUL past them) decoded: the one padded text that encodes it. */
static void check_unbase64(const char *s, size_t n)
{
	char *out = NULL, *enc;
	size_t len = 0, text = strlen(s), i;
	int err = etcd_unbase64(s, &out, &len);

	if (err) {
		assert(err == -EINVAL || err == -ENOMEM);
	} else {
		assert(out && out[len] == 0);
		assert(text % 4 == 0);
		assert(len <= text / 4 * 3 && len + 2 >= text / 4 * 3);
		for (i = 0; i < text; i++)
			assert(is_b64_char(s[i]) || (s[i] == '=' && i + 2 >= text));
		enc = etcd_base64(out, len);
		assert(enc && !strcmp(enc, s));
		free(enc);
		free(out);
	}
	/* and any bytes back from their encoding */
	enc = etcd_base64(s, n);
	assert(enc && strlen(enc) == 4 * ((n + 2) / 3));
	assert(!etcd_unbase64(enc, &out, &len));
	assert(len == n && !memcmp(out, s, n) && out[n] == 0);
	free(out);
	free(enc);
}

/* etcd_int64() of @field of @o: what it says it read is what is there. */
static void check_int64(struct json_object *o, const char *field)
{
	struct json_object *f = NULL;
	int64_t v = 42;
	int err = etcd_int64(o, field, &v);

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, field, &f)) {
		assert(!err && v == 0);
		return;
	}
	if (json_object_is_type(f, json_type_int)) {
		assert(!err && v == json_object_get_int64(f));
	} else if (!json_object_is_type(f, json_type_string)) {
		assert(err == -EINVAL);
	} else if (!err) {
		const char *s = json_object_get_string(f), *d = s + (*s == '-');
		char back[32];

		/* digits alone, a sign before them at most: no space, no '+', no "0x" */
		assert(*d);
		for (const char *p = d; *p; p++)
			assert(*p >= '0' && *p <= '9');
		while (d[0] == '0' && d[1])
			d++;	/* leading zeros read as zeros */
		snprintf(back, sizeof(back), "%" PRId64, v);
		assert(!strcmp(back + (v < 0), d));
		assert(v <= 0 || *s != '-');
	} else {
		assert(err == -EINVAL);
	}
}

/* Every string decoded, every field read as an int64, all the way down. */
static void walk(struct json_object *o)
{
	size_t i, n;

	switch (json_object_get_type(o)) {
	case json_type_string:
		check_unbase64(json_object_get_string(o), json_object_get_string_len(o));
		break;
	case json_type_array:
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			walk(json_object_array_get_idx(o, i));
		break;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			check_int64(o, key);
			walk(val);
		}
		break;
	}
	default:
		break;
	}
}

static void check_header(struct json_object *o)
{
	int64_t rev = etcd_header_revision(o), v;
	struct json_object *h;

	assert(rev == -1 || rev > 0);
	if (rev > 0) {
		assert(json_object_object_get_ex(o, "header", &h));
		assert(!etcd_int64(h, "revision", &v) && v == rev);
	}
}

/* The field @field of @o, as etcd_kv_parse() took it: a base64 string's whole text. */
static void check_bytes(struct json_object *o, const char *field, const char *got, size_t len)
{
	struct json_object *f;
	char *enc;

	assert(got[len] == 0);
	if (!json_object_object_get_ex(o, field, &f)) {
		assert(len == 0);
		return;
	}
	assert(json_object_is_type(f, json_type_string));
	enc = etcd_base64(got, len);
	assert(enc);
	/* all of the field, not what is before a NUL inside it */
	assert((size_t)json_object_get_string_len(f) == strlen(enc) &&
	       !strcmp(enc, json_object_get_string(f)));
	free(enc);
}

/* etcd_kv_parse() of @o: a kv whole, or none. */
static int kv_parse(struct json_object *o, struct etcd_kv *kv)
{
	int err = etcd_kv_parse(o, kv);
	int64_t v;

	if (err) {
		assert(err == -EINVAL || err == -ENOMEM);
		assert(!kv->key && !kv->value && !kv->key_len && !kv->value_len);
		assert(!kv->create_revision && !kv->mod_revision && !kv->version && !kv->lease);
		return err;
	}
	assert(kv->key && kv->value);
	assert(kv->key_len && strlen(kv->key) == kv->key_len);
	check_bytes(o, "key", kv->key, kv->key_len);
	check_bytes(o, "value", kv->value, kv->value_len);
	assert(!etcd_int64(o, "create_revision", &v) && v == kv->create_revision);
	assert(!etcd_int64(o, "mod_revision", &v) && v == kv->mod_revision);
	assert(!etcd_int64(o, "version", &v) && v == kv->version);
	assert(!etcd_int64(o, "lease", &v) && v == kv->lease);
	return 0;
}

static struct etcd_fingerprint fp;
static bool read_yet;

static void check_mark(const struct etcd_kv *kv)
{
	assert(fp.mark && !strcmp(fp.mark, kv->key));
	assert(fp.mark_create == kv->create_revision && fp.mark_mod == kv->mod_revision &&
	       fp.mark_version == kv->version && !fp.mark_deleted);
}

/* A page of a read, as on_range() takes it; the read's fingerprint of it. */
static void as_range(struct json_object *o)
{
	struct json_object *kvs = NULL, *more, *last;
	struct etcd_kv *kv;
	int64_t count;
	size_t n, i, nr = 0;
	char *body;

	/* a RangeResponse: its kvs or its count (an empty prefix has neither) */
	if ((!json_object_object_get_ex(o, "kvs", &kvs) &&
	     !json_object_object_get_ex(o, "count", NULL)) ||
	    json_object_object_get_ex(o, "responses", NULL))
		return;
	if (etcd_header_revision(o) < 0 || etcd_int64(o, "count", &count) || count < 0 ||
	    count > INT32_MAX)
		return;
	n = json_object_is_type(kvs, json_type_array) ? json_object_array_length(kvs) : 0;
	kv = calloc(n + 1, sizeof(*kv));
	if (!kv)
		abort();
	for (i = 0; i < n; i++)
		if (!kv_parse(json_object_array_get_idx(kvs, i), &kv[nr]))
			nr++;
	etcd_fp_read(&fp, count, kv, nr);
	read_yet = true;
	assert(fp.count == count && !fp.mark_deleted);
	if (!nr) {
		assert(!fp.mark);
	} else {
		const struct etcd_kv *hi = &kv[0];

		for (i = 1; i < nr; i++)
			if (kv[i].mod_revision > hi->mod_revision)
				hi = &kv[i];
		check_mark(hi);
	}
	for (i = 0; i < nr; i++)
		etcd_kv_clear(&kv[i]);
	free(kv);
	/* the next page: from the one past the last key, whole */
	if (n && json_object_object_get_ex(o, "more", &more) && json_object_get_boolean(more) &&
	    json_object_object_get_ex(json_object_array_get_idx(kvs, n - 1), "key", &last) &&
	    json_object_is_type(last, json_type_string)) {
		const char *after = json_object_get_string(last);
		char *key, *from;
		size_t len, flen;
		bool ok = !etcd_unbase64(after, &key, &len);

		body = etcd_range_body(PREFIX, after, 7, 1000);
		assert(!body == !ok);
		if (body) {
			struct json_object *b = json_tokener_parse(body), *f;

			assert(b && json_object_object_get_ex(b, "key", &f));
			assert(!etcd_unbase64(json_object_get_string(f), &from, &flen));
			assert(flen == len + 1 && !memcmp(from, key, len) && !from[len]);
			free(from);
			json_object_put(b);
		}
		if (ok)
			free(key);
		free(body);
	}
}

/* A watch's response, as deliver() takes it into the fingerprint. */
static void as_watch(struct json_object *o)
{
	struct json_object *res, *events, *type;
	size_t n, i;

	if (!json_object_object_get_ex(o, "result", &res))
		return;
	check_header(res);
	if (!json_object_object_get_ex(res, "events", &events) ||
	    !json_object_is_type(events, json_type_array))
		return;
	n = json_object_array_length(events);
	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i), *kvo;
		bool put = !(json_object_object_get_ex(ev, "type", &type) &&
			     json_object_is_type(type, json_type_string) &&
			     !strcmp(json_object_get_string(type), "DELETE"));
		struct etcd_kv k;
		int64_t before = fp.count;
		bool told, was_mark;

		if (!json_object_object_get_ex(ev, "kv", &kvo))
			continue;
		told = !kv_parse(kvo, &k);
		if ((!told && (etcd_int64(kvo, "mod_revision", &k.mod_revision) ||
			       etcd_int64(kvo, "version", &k.version))) ||
		    k.mod_revision == INT64_MAX) {
			etcd_kv_clear(&k);
			continue;
		}
		if (!read_yet) {
			etcd_kv_clear(&k);
			continue;	/* the watch's events follow its read */
		}
		was_mark = told && fp.mark && !strcmp(fp.mark, k.key);
		etcd_fp_event(&fp, put, &k);
		if (before < 0)
			assert(fp.count == before);
		else
			assert(fp.count == before + (put ? k.version == 1 : -1));
		if (told && put)
			check_mark(&k);
		if (told && !put && was_mark)
			assert(fp.mark_deleted);
		etcd_kv_clear(&k);
	}
}

/* The fingerprint's check: its body reads back what it keeps. */
static void check_body(void)
{
	char *body = etcd_fp_check_body(&fp, PREFIX, 41);
	struct json_object *b, *ops, *r, *k;
	char *key;
	size_t len;

	assert(body);
	b = json_tokener_parse(body);
	assert(b && json_object_object_get_ex(b, "success", &ops));
	assert(json_object_array_length(ops) == (fp.mark ? 2u : 1u));
	if (fp.mark) {
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 1), "request_range", &r));
		assert(json_object_object_get_ex(r, "key", &k));
		assert(!etcd_unbase64(json_object_get_string(k), &key, &len));
		assert(len == strlen(fp.mark) && !strcmp(key, fp.mark));
		free(key);
	}
	json_object_put(b);
	free(body);
}

/* The answer to the check. */
static void as_check(struct json_object *o)
{
	int64_t count = 42;
	enum etcd_fp_verdict v;

	if (!json_object_object_get_ex(o, "responses", NULL))
		return;
	v = etcd_fp_judge(&fp, o, &count);
	assert(v == ETCD_FP_SAME || v == ETCD_FP_COUNT || v == ETCD_FP_MARK ||
	       v == ETCD_FP_BAD_REPLY);
	if (v == ETCD_FP_SAME || v == ETCD_FP_MARK)
		assert(count == fp.count);
	if (v == ETCD_FP_COUNT)
		assert(count != fp.count);
}

static void line(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *o;

	if (!tok)
		abort();
	o = json_tokener_parse_ex(tok, text, len);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	if (!o)
		return;
	walk(o);
	check_header(o);
	as_range(o);
	as_watch(o);
	check_body();
	as_check(o);
	json_object_put(o);
}

/* json-c seeds its strings' hash at random: the same inputs, other paths. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	json_global_set_string_hash(JSON_C_STR_HASH_PERLLIKE);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t at = 0;

	memset(&fp, 0, sizeof(fp));
	fp.count = 0;
	read_yet = false;
	while (at < size) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t end = nl ? (size_t)(nl - data) : size;
		char *copy = malloc(end - at + 1);	/* its own, as received */

		if (!copy)
			abort();
		memcpy(copy, data + at, end - at);
		copy[end - at] = 0;
		if (end > at)
			line(copy, end - at);
		free(copy);
		at = end + 1;
	}
	etcd_fp_clear(&fp);
	return 0;
}
