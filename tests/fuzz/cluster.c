// SPDX-License-Identifier: GPL-2.0
/*
 * The incident protocol across nodes (daemon/cluster_proto.c) as node n0
 * runs it, against an etcd of the target's own, in memory, that every
 * other writer shares: cooperative peers (n1..n3, who publish, open,
 * step, acknowledge and close as the layout says) and hostile ones (any
 * key under the prefixes, any value, the layout's JSON mutated), and an
 * etcd that may lie (events of its own, answers not applied, snapshots
 * with keys left out).  The input is a sequence of operations, an op byte
 * then its arguments; the core's actions are drained after each, its
 * transactions applied to the store (or held, failed, answered falsely),
 * its steps answered by a local side (or held), its watches served.
 *
 * What a caller (cluster.c, recovery.c, hbmctl) relies on is asserted:
 * every action is well formed (names that are names, texts printable and
 * whole, a transaction's body the layout's keys and values, each value one
 * every node takes, this one too as the watch brings it back); no
 * transaction is sent while the same one is in
 * flight; a job's incident's steps never go back; an incident closes
 * "resumed" only if the ranks here resumed it, and only one they were
 * told of; a new incident's steps are told only once the last one ended
 * for the ranks here (its resume or an abort); watches are balanced;
 * hbmctl's view is whole and its names NUL-terminated; and the event loop
 * never spins on a deadline past.
 *
 * And that it never hangs: each input ends with a settle phase (settle()),
 * time running from deadline to deadline once what was in flight is
 * answered, by whose end the ranks here have every answer they are owed.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>

#include "cluster_proto.h"
#include "etcd_msg.h"
#include "fuzz.h"

#define SELF		"n0"
#define STORE_MAX	2048
#define EVENTS_MAX	8192
#define PENDING_MAX	32
#define LOCALS_MAX	32
#define WATCHED_MAX	16
#define TRACKED_MAX	64
#define OPS_MAX		400
#define ACTIONS_MAX	200000	/* drained at one time: more is a loop that spins */
#define ERRORS_MAX	64
#define RETRY_US	500000	/* cluster_proto.c's: a transaction that did not reach etcd, again */
#define SETTLE_ROUNDS	1000	/* of answers and events at one time: more is a loop at etcd's pace */
#define SETTLE_TICKS	20000	/* of the timer in a settle phase: more never lets time pass */

static const char *const jobs[] = { "J", "K", "1000.run-42" };
static const char *const peers[] = { "n0", "n1", "n2", "n3" };
static const char *const step_names[] = { "pause", "isolate", "restore", "resume", "abort" };

struct fkv {
	char *key, *value;
	uint64_t hash;		/* of key: find() compares it first */
	size_t value_len;
	int64_t create, mod, version, lease;
	bool ours;		/* written by a transaction of the core's */
	unsigned int told;	/* times the core was given it since */
};

struct event {
	struct fkv f;
	bool put;
};

/* What the harness knows of a job's incidents here, from the actions. */
struct tracked {
	char job[HBM_CLUSTER_NAME_LEN];
	char value[CL_VALUE_MAX + 1];	/* joined with: "" none */
	uint32_t world;
	char local_id[HBM_CLUSTER_NAME_LEN];	/* the incident the last step asked was of */
	int local_step;				/* and that step; -1 none */
	char told[8][HBM_CLUSTER_NAME_LEN];	/* incidents the ranks were told of */
	unsigned int nr_told;
	char resumed[HBM_CLUSTER_NAME_LEN];	/* the ranks resumed it here */
	char owed[HBM_CLUSTER_NAME_LEN];	/* told a step of it, not yet its resume or an abort */
	char open_here[HBM_CLUSTER_NAME_LEN];	/* said opened with this node in it, not closed */
};

static struct cl_core *core;
static struct fkv store[STORE_MAX];
static size_t nr_store;
static int64_t rev;
static struct event *events;
static size_t nr_events;
static uint64_t now;
static int64_t lease, lease_next;
static bool link_up;
static struct cl_timeouts timeouts;
static bool auto_txn, auto_local, auto_deliver, answer_first, auto_watch;
static struct cl_action pending[PENDING_MAX];	/* transactions in flight */
static unsigned int pending_gen[PENDING_MAX];
static size_t nr_pending;
static struct {			/* steps asked of the ranks here, not answered */
	char job[HBM_CLUSTER_NAME_LEN], id[HBM_CLUSTER_NAME_LEN];
	enum cl_step step;
} locals[LOCALS_MAX];
static size_t nr_locals;
static char watched[WATCHED_MAX][2 * CL_REASON_LEN];
static size_t nr_watched;
static struct tracked tracked[TRACKED_MAX];
static size_t nr_tracked;
static char ids[8][HBM_CLUSTER_NAME_LEN];	/* incident ids seen, for keys */
static unsigned int ids_next;
static unsigned int closes[TRACKED_MAX];	/* CL_CLOSED or CL_UNWATCH of each job */
static uint64_t nonce_ctr;
static bool want_reread;
static unsigned int flooded;
static bool trace;		/* FUZZ_TRACE=1: the operations and actions, on stderr */
static size_t in_size;
/* the liveness of the settle phase */
static struct {			/* cl_error()s the core took: answered by a step of theirs or an abort */
	char job[HBM_CLUSTER_NAME_LEN], id[HBM_CLUSTER_NAME_LEN];
	uint64_t at, answered_at;
	bool answered;
} errors_taken[ERRORS_MAX];
static size_t nr_errors;
static bool end_unreachable, end_peers_silent, end_ranks_silent;	/* how the input ends */
static bool owed_read;		/* events lost, or etcd lied: only a read again makes up */
static uint32_t tmax;		/* the longest timeout configured in the run, s */
static unsigned long actions_taken;
static int64_t synced_told, peers_rev;
static bool in_apply, foreign_self;	/* a put of this node's key not the core's: "another writer" may be said */

static bool self_key(const char *k)
{
	size_t n = strlen(k), m = strlen("/nodes/" SELF);

	return n > m && !strcmp(k + n - m, "/nodes/" SELF);
}

static uint64_t nonce(void)
{
	return ++nonce_ctr;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort();
	return d;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	return s;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

static bool whole(const char *s, size_t size)
{
	return memchr(s, 0, size) != NULL;
}

static struct tracked *track(const char *job)
{
	size_t i;

	for (i = 0; i < nr_tracked; i++)
		if (!strcmp(tracked[i].job, job))
			return &tracked[i];
	if (nr_tracked == TRACKED_MAX || strlen(job) >= HBM_CLUSTER_NAME_LEN)
		return NULL;
	memset(&tracked[nr_tracked], 0, sizeof(tracked[0]));
	strcpy(tracked[nr_tracked].job, job);
	tracked[nr_tracked].local_step = -1;
	return &tracked[nr_tracked++];
}

static void id_seen(const char *id)
{
	if (!id[0] || strlen(id) >= HBM_CLUSTER_NAME_LEN)
		return;
	for (unsigned int i = 0; i < 8; i++)
		if (!strcmp(ids[i], id))
			return;
	strcpy(ids[ids_next++ % 8], id);
}

/* ---- the store: an etcd of the target's own ---- */

/* FNV-1a: a store's worth of strcmp() at every look-up was most of a run's time */
static uint64_t key_hash(const char *k)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *k; k++)
		h = (h ^ (uint8_t)*k) * 1099511628211ULL;
	return h;
}

static struct fkv *find(const char *k)
{
	uint64_t h = key_hash(k);

	for (size_t i = 0; i < nr_store; i++)
		if (store[i].hash == h && !strcmp(store[i].key, k))
			return &store[i];
	return NULL;
}

static void event(const struct fkv *f, bool put)
{
	struct event *e;

	if (nr_events == EVENTS_MAX) {
		owed_read = true;	/* a watch that lost them: a read again makes up */
		return;
	}
	e = &events[nr_events++];
	e->f = *f;
	e->f.key = xstrdup(f->key);
	e->f.value = malloc(f->value_len + 1);
	if (!e->f.value)
		abort();
	memcpy(e->f.value, f->value, f->value_len + 1);
	e->put = put;
}

/* One write at this revision (the caller counts it). */
static void sput(const char *k, const char *v, size_t len, int64_t lease_id)
{
	struct fkv *f = find(k);

	if (!f) {
		if (nr_store == STORE_MAX)
			return;
		f = &store[nr_store++];
		memset(f, 0, sizeof(*f));
		f->key = xstrdup(k);
		f->hash = key_hash(k);
		f->create = rev;
	}
	free(f->value);
	f->value = malloc(len + 1);
	if (!f->value)
		abort();
	memcpy(f->value, v, len);
	f->value[len] = 0;
	f->value_len = len;
	f->mod = rev;
	f->version++;
	f->lease = lease_id;
	if (!in_apply && self_key(k))
		foreign_self = true;
	f->ours = false;
	f->told = 0;
	if (trace)
		fprintf(stderr, "put %s at %" PRId64 ": %.*s\n", k, rev, (int)len, v);
	event(f, true);
}

static void sdel_at(size_t i)
{
	struct fkv *f = &store[i];

	f->mod = rev;
	if (trace)
		fprintf(stderr, "delete %s at %" PRId64 "\n", f->key, rev);
	event(f, false);
	free(f->key);
	free(f->value);
	store[i] = store[--nr_store];
}

static bool sdel(const char *k, bool prefix)
{
	bool any = false;

	for (size_t i = nr_store; i-- > 0;)
		if (prefix ? !strncmp(store[i].key, k, strlen(k)) : !strcmp(store[i].key, k)) {
			sdel_at(i);
			any = true;
		}
	return any;
}

static void store_free(void)
{
	for (size_t i = 0; i < nr_store; i++) {
		free(store[i].key);
		free(store[i].value);
	}
	nr_store = 0;
	for (size_t i = 0; i < nr_events; i++) {
		free(events[i].f.key);
		free(events[i].f.value);
	}
	nr_events = 0;
}

static struct etcd_kv kv_of(const struct fkv *f)
{
	return (struct etcd_kv){ .key = f->key, .key_len = strlen(f->key), .value = f->value,
				 .value_len = f->value_len, .create_revision = f->create,
				 .mod_revision = f->mod, .version = f->version, .lease = f->lease };
}

static bool is_watched(const char *k)
{
	if (!strncmp(k, CL_PREFIX, strlen(CL_PREFIX)))
		return true;
	for (size_t w = 0; w < nr_watched; w++)
		if (!strncmp(k, watched[w], strlen(watched[w])))
			return true;
	return false;
}

/* The watches' events, the first @n (SIZE_MAX: all). */
static void deliver(size_t n)
{
	size_t i;

	for (i = 0; i < nr_events && i < n; i++) {
		struct etcd_kv kv = kv_of(&events[i].f);
		struct fkv *f = find(kv.key);

		if (!is_watched(kv.key))
			continue;
		if (f && f->mod == kv.mod_revision)
			f->told++;
		(events[i].put ? cl_put : cl_delete)(core, &kv, now);
	}
	for (size_t k = 0; k < i; k++) {
		free(events[k].f.key);
		free(events[k].f.value);
	}
	memmove(events, events + i, (nr_events - i) * sizeof(*events));
	nr_events -= i;
}

static void drop_events(void)
{
	deliver(0);
	owed_read |= nr_events != 0;
	for (size_t i = 0; i < nr_events; i++) {
		free(events[i].f.key);
		free(events[i].f.value);
	}
	nr_events = 0;
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct etcd_kv *)a)->key, ((const struct etcd_kv *)b)->key);
}

/*
 * A read of the prefix, its keys as etcd's range returns them: sorted by
 * their bytes (etcd.c reads it a page at a time from past the last key),
 * so that an incident's key comes before its step's.
 */
static void snapshot(uint64_t skip, int64_t at)
{
	struct etcd_kv *kvs = calloc(nr_store + 1, sizeof(*kvs));
	size_t n = 0;

	if (!kvs)
		abort();
	for (size_t i = 0; i < nr_store; i++)
		if (!strncmp(store[i].key, CL_PREFIX, strlen(CL_PREFIX)) &&
		    !(i < 64 && skip & 1ULL << i)) {
			kvs[n++] = kv_of(&store[i]);
			store[i].told++;
		}
	qsort(kvs, n, sizeof(*kvs), kv_cmp);
	cl_snapshot(core, kvs, n, at, now);
	free(kvs);
}

static void acks_snapshot(const char *prefix)
{
	struct etcd_kv *kvs = calloc(nr_store + 1, sizeof(*kvs));
	size_t n = 0;

	if (!kvs)
		abort();
	for (size_t i = 0; i < nr_store; i++)
		if (!strncmp(store[i].key, prefix, strlen(prefix))) {
			kvs[n++] = kv_of(&store[i]);
			store[i].told++;
		}
	qsort(kvs, n, sizeof(*kvs), kv_cmp);
	cl_acks_snapshot(core, prefix, kvs, n, now);
	free(kvs);
}

/* ---- a transaction's body: the layout's, and what it does ---- */

static char *b64(struct json_object *o, const char *field, size_t *len)
{
	struct json_object *f;
	char *out;
	size_t l;

	assert(json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_string));
	assert(!etcd_unbase64(json_object_get_string(f), &out, &l));
	if (len)
		*len = l;
	return out;
}

static bool has(struct json_object *o, const char *field)
{
	return json_object_object_get_ex(o, field, NULL);
}

/* What every node takes for a value of the layout: whole, short, one JSON object. */
static struct json_object *layout_value(const char *v, size_t len, size_t max)
{
	struct json_tokener *tok;
	struct json_object *o;

	assert(strlen(v) == len);
	assert(len <= max);	/* else every node refuses it, this one too */
	tok = json_tokener_new_ex(4);
	assert(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, v, len);
	assert(o && json_object_is_type(o, json_type_object));
	assert(json_tokener_get_parse_end(tok) == len);
	json_tokener_free(tok);
	return o;
}

static const char *str_of(struct json_object *o, const char *field)
{
	struct json_object *f;

	assert(json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_string));
	return json_object_get_string(f);
}

static int64_t int_of(struct json_object *o, const char *field)
{
	struct json_object *f;

	assert(json_object_object_get_ex(o, field, &f) && json_object_is_type(f, json_type_int));
	return json_object_get_int64(f);
}

static void check_step_value(const char *v, size_t len, enum cl_step want)
{
	struct json_object *o = layout_value(v, len, CL_VALUE_MAX);
	int64_t t = int_of(o, "timeout");

	assert(!strcmp(str_of(o, "step"), step_names[want]));
	assert(t >= 1 && t <= 3600);
	if (has(o, "reason"))
		assert(printable(str_of(o, "reason")) && strlen(str_of(o, "reason")) < CL_REASON_LEN);
	json_object_put(o);
}

/*
 * The body of @a: each kind's compares and ops, on the keys of its job
 * and incident, with values any node takes.
 */
static void check_txn(const struct cl_action *a)
{
	struct json_object *t = json_tokener_parse(a->body), *cmps, *ops, *op, *r, *c;
	char *inc = xprintf(CL_PREFIX_V1 "jobs/%s/incident", a->job);
	char *step = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/step", a->job, a->id);
	char *k, *v;
	size_t nc, no, len;
	struct tracked *tr = track(a->job);

	assert(t && json_object_object_get_ex(t, "compare", &cmps) &&
	       json_object_object_get_ex(t, "success", &ops));
	nc = json_object_array_length(cmps);
	no = json_object_array_length(ops);
	assert(hbm_cluster_name_valid(a->job));
	switch (a->txn) {
	case CL_TXN_PUBLISH:
		assert(nc == 0 && no == 1);
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 0), "request_put", &r));
		k = xprintf(CL_PREFIX_V1 "jobs/%s/nodes/" SELF, a->job);
		v = b64(r, "key", NULL);
		assert(!strcmp(k, v));
		free(k);
		free(v);
		v = b64(r, "value", &len);
		json_object_put(layout_value(v, len, CL_VALUE_MAX));
		if (tr)
			assert(!strcmp(v, tr->value));	/* what the ranks here registered */
		free(v);
		{
			int64_t l;

			assert(!etcd_int64(r, "lease", &l) && l == lease && l);
		}
		break;
	case CL_TXN_LEAVE:
		assert(nc == 0 && no == 1);
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 0),
						 "request_delete_range", &r));
		k = b64(r, "key", NULL);
		v = xprintf(CL_PREFIX_V1 "jobs/%s/nodes/" SELF, a->job);
		assert(!strcmp(k, v) && !has(r, "range_end"));
		free(k);
		free(v);
		break;
	case CL_TXN_OPEN: {
		struct json_object *o, *nodes;
		const char *id;
		bool self = false;

		assert(nc == 1 && no == 2);
		c = json_object_array_get_idx(cmps, 0);
		k = b64(c, "key", NULL);
		assert(!strcmp(k, inc));
		free(k);
		assert(!strcmp(str_of(c, "target"), "CREATE") && !strcmp(str_of(c, "result"), "EQUAL"));
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 0), "request_put", &r));
		k = b64(r, "key", NULL);
		assert(!strcmp(k, inc));
		free(k);
		v = b64(r, "value", &len);
		o = layout_value(v, len, CL_INCIDENT_MAX);
		free(v);
		id = str_of(o, "id");
		assert(hbm_cluster_name_valid(id));
		assert(!strcmp(str_of(o, "opener"), SELF));
		assert(json_object_object_get_ex(o, "nodes", &nodes));
		assert(json_object_array_length(nodes) >= 1 &&
		       json_object_array_length(nodes) <= CL_MAX_NODES);
		for (size_t i = 0; i < json_object_array_length(nodes); i++) {
			const char *n = json_object_get_string(json_object_array_get_idx(nodes, i));

			assert(hbm_cluster_name_valid(n));
			self |= !strcmp(n, SELF);
		}
		assert(self);
		assert(int_of(o, "rank") >= 0 && (!tr || !tr->world || int_of(o, "rank") < tr->world));
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 1), "request_put", &r));
		k = b64(r, "key", NULL);
		v = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/step", a->job, id);
		assert(!strcmp(k, v));
		free(k);
		free(v);
		v = b64(r, "value", &len);
		check_step_value(v, len, CL_PAUSE);
		free(v);
		id_seen(id);
		json_object_put(o);
		break;
	}
	case CL_TXN_ACK:
		assert(nc == 1 && no == 1 && a->id[0] && a->step < CL_NR_STEPS);
		c = json_object_array_get_idx(cmps, 0);
		k = b64(c, "key", NULL);
		assert(!strcmp(k, inc) && !strcmp(str_of(c, "target"), "CREATE"));
		free(k);
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 0), "request_put", &r));
		k = b64(r, "key", NULL);
		v = xprintf(CL_ACKS_V1 "%s/%s/%s/" SELF, a->job, a->id, step_names[a->step]);
		assert(!strcmp(k, v));
		free(k);
		free(v);
		v = b64(r, "value", &len);
		{
			struct json_object *o = layout_value(v, len, CL_VALUE_MAX);

			assert(int_of(o, "at") == (int64_t)a->at);
			json_object_put(o);
		}
		free(v);
		break;
	case CL_TXN_ADVANCE:
	case CL_TXN_ABORT: {
		struct json_object *o;
		const char *s;

		assert(nc == 1 && no == 1 && a->id[0]);
		c = json_object_array_get_idx(cmps, 0);
		k = b64(c, "key", NULL);
		assert(!strcmp(k, step) && !strcmp(str_of(c, "target"), "MOD"));
		free(k);
		{
			int64_t m;

			assert(!etcd_int64(c, "mod_revision", &m) && m == a->from_rev);
		}
		assert(json_object_object_get_ex(json_object_array_get_idx(ops, 0), "request_put", &r));
		k = b64(r, "key", NULL);
		assert(!strcmp(k, step));
		free(k);
		v = b64(r, "value", &len);
		o = layout_value(v, len, CL_VALUE_MAX);
		s = str_of(o, "step");
		if (a->txn == CL_TXN_ABORT) {
			check_step_value(v, len, CL_ABORT);
		} else {
			assert(strcmp(s, "pause") && strcmp(s, "abort"));	/* forward, past pause */
			for (int i = CL_ISOLATE; i <= CL_RESUME; i++)
				if (!strcmp(s, step_names[i]))
					check_step_value(v, len, i);
		}
		json_object_put(o);
		free(v);
		break;
	}
	case CL_TXN_CLOSE: {
		int64_t m;

		/*
		 * The incident it was sent for, its step key as read; none
		 * there (0), the incident key as read: its value as created
		 * (an incident's), or its mod_revision put over since.
		 */
		assert(no == 3 && a->id[0]);
		c = json_object_array_get_idx(cmps, 0);
		k = b64(c, "key", NULL);
		assert(!strcmp(k, inc) && !strcmp(str_of(c, "target"), "CREATE"));
		assert(!etcd_int64(c, "create_revision", &m) && m > 0);
		free(k);
		c = json_object_array_get_idx(cmps, 1);
		k = b64(c, "key", NULL);
		assert(!strcmp(k, step) && !strcmp(str_of(c, "target"), "MOD"));
		assert(!etcd_int64(c, "mod_revision", &m) && m >= 0);
		free(k);
		assert(nc == (m ? 2 : 3));
		if (!m) {
			c = json_object_array_get_idx(cmps, 2);
			k = b64(c, "key", NULL);
			assert(!strcmp(k, inc));
			free(k);
			if (!strcmp(str_of(c, "target"), "VALUE")) {
				v = b64(c, "value", &len);
				json_object_put(layout_value(v, len, CL_INCIDENT_MAX));
				free(v);
			} else {
				assert(!strcmp(str_of(c, "target"), "MOD"));
				assert(!etcd_int64(c, "mod_revision", &m) && m > 0);
			}
		}
		op = json_object_array_get_idx(ops, 0);
		assert(json_object_object_get_ex(op, "request_delete_range", &r));
		k = b64(r, "key", NULL);
		assert(!strcmp(k, inc) && !has(r, "range_end"));
		free(k);
		op = json_object_array_get_idx(ops, 1);
		assert(json_object_object_get_ex(op, "request_delete_range", &r));
		k = b64(r, "key", NULL);
		v = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/", a->job, a->id);
		assert(!strcmp(k, v) && has(r, "range_end"));
		free(k);
		free(v);
		op = json_object_array_get_idx(ops, 2);
		assert(json_object_object_get_ex(op, "request_delete_range", &r));
		k = b64(r, "key", NULL);
		v = xprintf(CL_ACKS_V1 "%s/%s/", a->job, a->id);
		assert(!strcmp(k, v) && has(r, "range_end"));
		free(k);
		free(v);
		break;
	}
	default:
		assert(!"a transaction of no kind");
	}
	json_object_put(t);
	free(inc);
	free(step);
}

/*
 * As etcd does: every compare, then the success ops at one revision.
 * Return: whether the compares held; -ENOENT a put under a lease ended
 * ("requested lease not found": nothing done).
 */
static int apply_txn(const char *body)
{
	struct json_object *t = json_tokener_parse(body), *cmps, *ops;
	bool ok = true;
	size_t i;

	assert(t);
	json_object_object_get_ex(t, "compare", &cmps);
	json_object_object_get_ex(t, "success", &ops);
	for (i = 0; i < json_object_array_length(ops); i++) {
		struct json_object *r;
		int64_t l;

		if (json_object_object_get_ex(json_object_array_get_idx(ops, i), "request_put", &r) &&
		    !etcd_int64(r, "lease", &l) && l && l != lease) {
			json_object_put(t);
			return -ENOENT;
		}
	}
	for (i = 0; i < json_object_array_length(cmps); i++) {
		struct json_object *c = json_object_array_get_idx(cmps, i);
		char *k = b64(c, "key", NULL);
		const char *target = str_of(c, "target");
		struct fkv *f = find(k);
		int64_t v, have;

		if (!strcmp(target, "VALUE")) {
			size_t len;
			char *value = b64(c, "value", &len);

			/* a key not there never equal (applyCompare(), etcdserver/apply.go, 3.4) */
			assert(!strcmp(str_of(c, "result"), "EQUAL"));
			ok = ok && f && f->value_len == len && !memcmp(f->value, value, len);
			free(value);
			free(k);
			continue;
		}
		if (!strcmp(target, "CREATE")) {
			assert(!etcd_int64(c, "create_revision", &v));
			have = f ? f->create : 0;
		} else if (!strcmp(target, "MOD")) {
			assert(!etcd_int64(c, "mod_revision", &v));
			have = f ? f->mod : 0;
		} else {
			assert(!etcd_int64(c, "version", &v));
			have = f ? f->version : 0;
		}
		assert(!strcmp(str_of(c, "result"), "EQUAL"));
		ok = ok && have == v;
		free(k);
	}
	if (ok && json_object_array_length(ops)) {
		rev++;
		for (i = 0; i < json_object_array_length(ops); i++) {
			struct json_object *op = json_object_array_get_idx(ops, i), *r;
			char *k, *v;
			size_t len;
			int64_t l;

			if (json_object_object_get_ex(op, "request_put", &r)) {
				k = b64(r, "key", NULL);
				v = b64(r, "value", &len);
				assert(!etcd_int64(r, "lease", &l));
				in_apply = true;
				sput(k, v, len, l);
				in_apply = false;
				if (find(k))
					find(k)->ours = true;
				free(v);
			} else {
				assert(json_object_object_get_ex(op, "request_delete_range", &r));
				k = b64(r, "key", NULL);
				sdel(k, has(r, "range_end"));
			}
			free(k);
		}
	}
	json_object_put(t);
	return ok;
}

/* ---- the core's actions ---- */

static unsigned int *closes_of(const char *job)
{
	struct tracked *t = track(job);

	return t ? &closes[t - tracked] : NULL;
}

static void answer(struct cl_action *a, int how)
{
	bool ok = false;
	int err;

	switch (how) {
	case 0:		/* answered: applied */
		err = apply_txn(a->body);
		if (err < 0) {
			cl_txn_done(core, a, -EREMOTEIO, false, rev, now);
			break;
		}
		ok = err;
		if (trace)
			fprintf(stderr, "answered %d at %" PRId64 "\n", ok, rev);
		if (!answer_first && auto_deliver)
			deliver(SIZE_MAX);
		cl_txn_done(core, a, 0, ok, rev, now);
		if (answer_first && auto_deliver)
			deliver(SIZE_MAX);
		break;
	case 1:		/* lost on the way */
		cl_txn_done(core, a, -EHOSTUNREACH, false, -1, now);
		break;
	case 2:		/* answered falsely: succeeded, not applied */
		owed_read = true;
		cl_txn_done(core, a, 0, true, rev, now);
		break;
	default:	/* answered falsely: refused, not applied */
		owed_read = true;
		cl_txn_done(core, a, 0, false, rev, now);
		break;
	}
	free(a->body);
	a->body = NULL;
}

static void pending_answer(size_t i, int how)
{
	struct cl_action a = pending[i];

	pending[i] = pending[--nr_pending];
	pending_gen[i] = pending_gen[nr_pending];
	answer(&a, how);
}

static void local_answer(size_t i, bool ok, const char *reason)
{
	struct tracked *t = track(locals[i].job);
	char job[HBM_CLUSTER_NAME_LEN], id[HBM_CLUSTER_NAME_LEN];
	enum cl_step s = locals[i].step;
	int err;

	strcpy(job, locals[i].job);
	strcpy(id, locals[i].id);
	locals[i] = locals[--nr_locals];
	err = cl_local_done(core, job, id, s, ok, reason, now);
	assert(!err || err == -ESTALE);
	if (!err && ok && s == CL_RESUME && t)
		strcpy(t->resumed, id);
}

static void check_action(const struct cl_action *a)
{
	assert(a->kind >= CL_TXN && a->kind <= CL_REREAD);
	assert(whole(a->job, sizeof(a->job)) && whole(a->id, sizeof(a->id)) &&
	       whole(a->opener, sizeof(a->opener)) && whole(a->text, sizeof(a->text)));
	assert(!a->job[0] || hbm_cluster_name_valid(a->job));
	assert(!a->id[0] || hbm_cluster_name_valid(a->id));
	assert(!a->opener[0] || hbm_cluster_name_valid(a->opener));
	assert((a->kind == CL_TXN) == (a->body != NULL));
	/* a journal line, a step's reason: nothing a peer wrote makes a line of its own */
	assert(printable(a->text));
	switch (a->kind) {
	case CL_TXN:
		check_txn(a);
		break;
	case CL_LOCAL:
		assert(a->job[0] && a->step < CL_NR_STEPS);
		assert(a->step == CL_ABORT || (a->id[0] && a->opener[0]));
		break;
	case CL_CLOSED:
		assert(a->job[0] && a->id[0] && (a->step == CL_RESUME || a->step == CL_ABORT));
		break;
	case CL_LOG:
		assert(a->prio >= LOG_EMERG && a->prio <= LOG_DEBUG && a->text[0]);
		break;
	case CL_WATCH:
	case CL_UNWATCH: {
		char *p = xprintf(CL_ACKS_V1 "%s/%s/", a->job, a->id);

		assert(a->job[0] && a->id[0] && !strcmp(a->text, p));
		free(p);
		break;
	}
	case CL_REREAD:
		break;
	}
}

/*
 * A value this node wrote, as the watch brings it back, is one it takes:
 * else every node refuses it too, and what it was for never happens (an
 * incident's key, refused, is never closed and blocks every open).  As it
 * first comes back: read again later, it may be refused for what changed
 * here since (the ranks here registered again, with another world).
 */
static void check_refusal(const char *text)
{
	static const char *const malformed[] = {
		"not a node's value", "not an incident's value", "not a step's value",
		"an incident's nodes are not distinct", "an incident whose opener is not one",
	};
	const char *why = strstr(text, "): refused: "), *p = NULL, *q;
	char key[160];
	long long mod;
	struct fkv *f;
	size_t i;

	/* the key's end: the last " (revision " before why (a key may say it too) */
	for (q = text; why && (q = strstr(q, " (revision ")) && q < why; q++)
		p = q;
	if (strncmp(text, "etcd: ", 6) || !p || p < text + 6 || p - text - 6 >= (long)sizeof(key))
		return;
	memcpy(key, text + 6, p - text - 6);
	key[p - text - 6] = 0;
	if (sscanf(p, " (revision %lld)", &mod) != 1 || !(f = find(key)) || !f->ours ||
	    f->mod != mod || f->told > 1)
		return;
	for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
		assert(!strstr(why, malformed[i]));	/* a value of this node's, refused by it */
}

/* No transaction twice in flight: of a job and kind (and incident). */
static void check_not_twice(const struct cl_action *a)
{
	unsigned int *cl = closes_of(a->job);

	for (size_t i = 0; i < nr_pending; i++) {
		const struct cl_action *p = &pending[i];

		if (strcmp(p->job, a->job))
			continue;
		/* a publication and a leave: etcd may take the two in either order */
		if ((a->txn == CL_TXN_PUBLISH || a->txn == CL_TXN_LEAVE) &&
		    (p->txn == CL_TXN_PUBLISH || p->txn == CL_TXN_LEAVE))
			assert(!"a publication or leave sent with one in flight");
		if (a->txn == CL_TXN_OPEN && p->txn == CL_TXN_OPEN)
			assert(!"an open sent with one in flight");
		/* of one incident, while the harness saw it go on */
		if (p->txn == a->txn && !strcmp(p->id, a->id) && cl && pending_gen[i] == *cl)
			assert(!"a step's transaction sent twice");
	}
}

static void on_local(const struct cl_action *a)
{
	struct tracked *t = track(a->job);

	/* an error taken is answered: a step of its incident, or an abort */
	for (size_t i = 0; i < nr_errors; i++)
		if (!errors_taken[i].answered && !strcmp(errors_taken[i].job, a->job) &&
		    (a->step == CL_ABORT || !strcmp(errors_taken[i].id, a->id))) {
			errors_taken[i].answered = true;
			errors_taken[i].answered_at = now;
		}
	if (!t)
		return;
	/*
	 * An incident's steps end for the ranks in its resume or an abort; a
	 * new one's are told only once the last ended for them (incident_gone()
	 * tells its abort).
	 */
	if (a->step == CL_ABORT) {
		t->owed[0] = 0;
	} else if (a->step == CL_RESUME) {
		if (!strcmp(t->owed, a->id))
			t->owed[0] = 0;
	} else {
		assert(!t->owed[0] || !strcmp(t->owed, a->id));
		if (!t->owed[0])
			strcpy(t->owed, a->id);
	}
	if (a->id[0] && !strcmp(t->local_id, a->id) && t->local_step >= 0)
		assert((int)a->step >= t->local_step);	/* an incident's steps never go back */
	if (a->id[0] && strcmp(a->text, "the job's incident is open without this node")) {
		unsigned int i;

		strcpy(t->local_id, a->id);
		t->local_step = a->step;
		for (i = 0; i < t->nr_told && strcmp(t->told[i], a->id); i++)
			;
		if (i == t->nr_told)
			strcpy(t->told[t->nr_told++ % 8], a->id);
		if (t->nr_told > 8)
			t->nr_told = 8;
	} else {
		t->local_id[0] = 0;
		t->local_step = -1;
	}
}

static void on_closed(const struct cl_action *a)
{
	struct tracked *t = track(a->job);
	unsigned int i;

	if (!t)
		return;
	if (!strcmp(t->open_here, a->id))
		t->open_here[0] = 0;
	/* closed: an incident the ranks here were told of */
	for (i = 0; i < t->nr_told && strcmp(t->told[i], a->id); i++)
		;
	assert(i < t->nr_told);
	/* resumed: only if they resumed it */
	if (a->step == CL_RESUME)
		assert(!strcmp(t->resumed, a->id));
	t->resumed[0] = 0;
	t->local_id[0] = 0;
	t->local_step = -1;
	t->nr_told = 0;
}

/* "job J: incident ID opened by NODE on N nodes: ...": this node is one of them */
static void on_opened(const char *text)
{
	char job[HBM_CLUSTER_NAME_LEN], id[HBM_CLUSTER_NAME_LEN];
	struct tracked *t;
	int end = 0;

	if (sscanf(text, "job %63[A-Za-z0-9._-]: incident %63[A-Za-z0-9._-] opened by %n", job, id,
		   &end) != 2 || !end || !(t = track(job)))
		return;
	strcpy(t->open_here, id);	/* (the one before, if any, closed first: incident_gone()) */
}

static void drain(void)
{
	struct cl_action a;
	unsigned int n = 0;

	while (cl_next_action(core, &a)) {
		assert(++n < ACTIONS_MAX);
		actions_taken++;
		if (trace)
			fprintf(stderr, "%" PRIu64 " action %d txn %d job %s id %s step %d: %s\n", now,
				a.kind, a.txn, a.job, a.id, a.step, a.kind == CL_TXN ? a.body : a.text);
		check_action(&a);
		id_seen(a.id);
		switch (a.kind) {
		case CL_TXN:
			check_not_twice(&a);
			if (auto_txn) {
				answer(&a, 0);
			} else if (nr_pending < PENDING_MAX) {
				unsigned int *cl = closes_of(a.job);

				pending_gen[nr_pending] = cl ? *cl : 0;
				pending[nr_pending++] = a;
			} else {
				answer(&a, 1);	/* etcd_call() failed */
			}
			break;
		case CL_LOCAL:
			on_local(&a);
			if (auto_local) {
				char job[HBM_CLUSTER_NAME_LEN], id[HBM_CLUSTER_NAME_LEN];
				int err;

				strcpy(job, a.job);
				strcpy(id, a.id);
				err = cl_local_done(core, job, id, a.step, true, "", now);
				if (!err && a.step == CL_RESUME && track(job))
					strcpy(track(job)->resumed, id);
			} else if (nr_locals < LOCALS_MAX) {
				strcpy(locals[nr_locals].job, a.job);
				strcpy(locals[nr_locals].id, a.id);
				locals[nr_locals++].step = a.step;
			}
			break;
		case CL_CLOSED:
			on_closed(&a);
			if (closes_of(a.job))
				(*closes_of(a.job))++;
			break;
		case CL_LOG:
			/* its own puts never said another writer's (helper-200); job names have no ':' */
			assert(foreign_self || !strchr(a.text, ':') ||
			       strncmp(strchr(a.text, ':'), ": this node's key (nodes/" SELF
				       ") put by another writer",
				       strlen(": this node's key (nodes/" SELF ") put by another writer")));
			check_refusal(a.text);
			on_opened(a.text);
			break;
		case CL_WATCH:
			for (size_t w = 0; w < nr_watched; w++)
				assert(strcmp(watched[w], a.text));	/* once: else two watches, one unwatched */
			if (nr_watched < WATCHED_MAX)
				strcpy(watched[nr_watched++], a.text);
			if (auto_watch)
				acks_snapshot(a.text);
			else
				owed_read = true;	/* its read, not served */
			break;
		case CL_UNWATCH: {
			size_t w;

			for (w = 0; w < nr_watched && strcmp(watched[w], a.text); w++)
				;
			assert(w < nr_watched || nr_watched == WATCHED_MAX);
			if (w < nr_watched && w != --nr_watched)
				strcpy(watched[w], watched[nr_watched]);
			if (closes_of(a.job))
				(*closes_of(a.job))++;
			break;
		}
		case CL_REREAD:
			want_reread = true;
			break;
		}
	}
	if (want_reread && auto_watch) {
		want_reread = false;
		snapshot(0, rev);
		drain();
	}
}

/* hbmctl incidents: every entry whole, the count the same throughout. */
static void check_view(void)
{
	struct hbm_ctl_cluster_node v;
	uint32_t total, i;
	int err = cl_view_get(core, 0, &v);

	if (err) {
		assert(err == -ENOENT);
		return;
	}
	total = v.total;
	assert(total > 0);
	for (i = 0; i < total; i++) {
		if (i == 48 && total > 64)
			i = total - 16;		/* the first and the last */
		memset(&v, 0xa5, sizeof(v));
		assert(!cl_view_get(core, i, &v));
		assert(v.index == i && v.total == total && v.incident == 0);
		assert(whole(v.job, sizeof(v.job)) && whole(v.id, sizeof(v.id)) &&
		       whole(v.opener, sizeof(v.opener)) && whole(v.node, sizeof(v.node)));
		assert(hbm_cluster_name_valid(v.job) && hbm_cluster_name_valid(v.id) &&
		       hbm_cluster_name_valid(v.opener) && hbm_cluster_name_valid(v.node));
		assert(v.step < CL_NR_STEPS && v.acked < 1U << CL_NR_STEPS);
	}
	assert(cl_view_get(core, total, &v) == -ENOENT);
}

/* The event loop's timer: due once more at most, never one past after that. */
static void check_no_spin(void)
{
	for (int k = 0; k < 3 && cl_next_deadline(core) <= now; k++) {
		cl_tick(core, now);
		drain();
	}
	assert(cl_next_deadline(core) > now);
}

/* ---- the input's operations ---- */

static char *pick(struct fuzz_in *in, const char *const *table, size_t n)
{
	uint8_t b = fuzz_u8(in);

	if (b < 0xf0)
		return xstrdup(table[b % n]);
	return fuzz_str(in);
}

static char *pick_id(struct fuzz_in *in)
{
	uint8_t b = fuzz_u8(in);

	if (b < 0xf0 && ids[b % 8][0])
		return xstrdup(ids[b % 8]);
	if (b < 0xf0)
		return xstrdup("0000000000000001");
	return fuzz_str(in);
}

static char *key_build(struct fuzz_in *in)
{
	uint8_t kind = fuzz_u8(in) % 8;
	char *job = pick(in, jobs, 3), *node, *id, *s, *k;

	switch (kind) {
	case 0:
		node = pick(in, peers, 4);
		k = xprintf(CL_PREFIX_V1 "jobs/%s/nodes/%s", job, node);
		free(node);
		break;
	case 1:
		k = xprintf(CL_PREFIX_V1 "jobs/%s/incident", job);
		break;
	case 2:
		id = pick_id(in);
		k = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/step", job, id);
		free(id);
		break;
	case 3:
		id = pick_id(in);
		s = pick(in, step_names, 5);
		node = pick(in, peers, 4);
		k = xprintf(CL_ACKS_V1 "%s/%s/%s/%s", job, id, s, node);
		free(id);
		free(s);
		free(node);
		break;
	case 4:
		s = fuzz_str(in);
		k = xprintf(CL_PREFIX "%s", s);
		free(s);
		break;
	case 5:
		s = fuzz_str(in);
		k = xprintf(CL_PREFIX_V1 "jobs/%s/%s", job, s);
		free(s);
		break;
	case 6:
		s = fuzz_str(in);
		k = xprintf(CL_ACKS_V1 "%s", s);
		free(s);
		break;
	default:
		k = fuzz_str(in);
		break;
	}
	free(job);
	return k;
}

/* Ranks as recovery.c registers them: each once, one at least, of the world. */
static char *own_ranks_value(struct fuzz_in *in, uint32_t world)
{
	uint8_t n = fuzz_u8(in) % 5;
	uint32_t seen = 0;
	char buf[256];
	size_t at = 0;

	at += snprintf(buf + at, sizeof(buf) - at, "{\"ranks\":[");
	for (uint8_t i = 0; i < n || !seen; i++) {
		uint32_t r = i < n ? fuzz_u8(in) % world : 0;

		if (r < 32 && seen & 1U << r)
			continue;
		at += snprintf(buf + at, sizeof(buf) - at, "%s%u", seen ? "," : "", r);
		seen |= 1U << (r % 32);
	}
	snprintf(buf + at, sizeof(buf) - at, "],\"world_size\":%u}", world);
	return xstrdup(buf);
}

static char *ranks_value(struct fuzz_in *in, uint32_t world)
{
	uint8_t n = fuzz_u8(in) % 5;
	char buf[256];
	size_t at = 0;

	at += snprintf(buf + at, sizeof(buf) - at, "{\"ranks\":[");
	for (uint8_t i = 0; i < n; i++)
		at += snprintf(buf + at, sizeof(buf) - at, "%s%u", i ? "," : "",
			       world ? fuzz_u8(in) % world : fuzz_u8(in));
	snprintf(buf + at, sizeof(buf) - at, "],\"world_size\":%u}", world);
	return xstrdup(buf);
}

/* The job's nodes in the store, as a JSON array of their names. */
static char *nodes_of(const char *job)
{
	char *prefix = xprintf(CL_PREFIX_V1 "jobs/%s/nodes/", job), *out = xstrdup("["), *t;
	bool first = true;

	for (size_t i = 0; i < nr_store; i++)
		if (!strncmp(store[i].key, prefix, strlen(prefix))) {
			t = xprintf("%s%s\"%s\"", out, first ? "" : ",", store[i].key + strlen(prefix));
			free(out);
			out = t;
			first = false;
		}
	t = xprintf("%s]", out);
	free(out);
	free(prefix);
	return t;
}

/* A value, mostly of the layout's: @len set (a NUL may be inside). */
static char *value_build(struct fuzz_in *in, size_t *len)
{
	uint8_t kind = fuzz_u8(in) % 7;
	char *v, *a, *b, *c;

	switch (kind) {
	case 0:
		v = ranks_value(in, 1 + fuzz_u8(in) % 8);
		break;
	case 1:
		a = pick_id(in);
		b = pick(in, peers, 4);
		c = fuzz_str(in);
		v = xprintf("{\"id\":\"%s\",\"opener\":\"%s\",\"reason\":\"%s\",\"rank\":%u,"
			    "\"nodes\":[\"n0\",\"n1\",\"%s\"]}", a, b, c, fuzz_u8(in) % 8, b);
		free(a);
		free(b);
		free(c);
		break;
	case 2:
		a = pick(in, step_names, 5);
		b = fuzz_str(in);
		v = xprintf("{\"step\":\"%s\",\"timeout\":%d,\"reason\":\"%s\"}", a,
			    (int)(int8_t)fuzz_u8(in), b);
		free(a);
		free(b);
		break;
	case 3:
		v = xprintf("{\"at\":%" PRId64 "}", (int64_t)fuzz_u64(in));
		break;
	case 4: {
		size_t n = fuzz_u8(in);

		v = calloc(n + 1, 1);
		if (!v)
			abort();
		*len = fuzz_take(in, v, n);
		return v;
	}
	default:
		v = fuzz_str(in);
		break;
	}
	*len = strlen(v);
	if (kind < 4 && *len && fuzz_u8(in) >= 0xc0) {	/* one byte mutated */
		uint8_t at = fuzz_u8(in);

		v[at % *len] = fuzz_u8(in);
		*len = strlen(v);
	}
	return v;
}

static char *reason_build(struct fuzz_in *in)
{
	char *s = fuzz_str(in);

	for (char *p = s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';	/* the local side's own words */
	return s;
}

static void peer_open(struct fuzz_in *in)
{
	char *job = pick(in, jobs, 3), *node = pick(in, peers, 4), *nodes, *inc, *step, *v, *sv;
	char id[24];

	snprintf(id, sizeof(id), "%016" PRIx64, fuzz_u64(in));
	inc = xprintf(CL_PREFIX_V1 "jobs/%s/incident", job);
	if (!find(inc) && nr_store + 2 <= STORE_MAX) {
		nodes = nodes_of(job);
		v = xprintf("{\"id\":\"%s\",\"opener\":\"%s\",\"reason\":\"peer UE\",\"rank\":%u,"
			    "\"nodes\":%s}", id, node, fuzz_u8(in) % 4, nodes);
		step = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/step", job, id);
		sv = xprintf("{\"step\":\"pause\",\"timeout\":%u}", 1 + fuzz_u8(in) % 60);
		rev++;
		sput(inc, v, strlen(v), 0);
		sput(step, sv, strlen(sv), 0);
		id_seen(id);
		free(nodes);
		free(v);
		free(step);
		free(sv);
	}
	free(inc);
	free(job);
	free(node);
}

/* A peer acknowledges, steps or closes the job's open incident (found in the store). */
static void peer_incident(struct fuzz_in *in, uint8_t what)
{
	char *job = pick(in, jobs, 3), *node = pick(in, peers, 4), *inc, *k, *v;
	struct json_object *o;
	struct fkv *f;
	uint8_t s = fuzz_u8(in) % CL_NR_STEPS;

	inc = xprintf(CL_PREFIX_V1 "jobs/%s/incident", job);
	f = find(inc);
	o = f ? json_tokener_parse(f->value) : NULL;
	if (o && json_object_object_get_ex(o, "id", NULL) &&
	    hbm_cluster_name_valid(json_object_get_string(json_object_object_get(o, "id")))) {
		const char *id = json_object_get_string(json_object_object_get(o, "id"));

		rev++;
		if (what == 0) {
			k = xprintf(CL_ACKS_V1 "%s/%s/%s/%s", job, id, step_names[s], node);
			v = xprintf("{\"at\":%" PRIu64 "}", 1700000000000 + now / 1000);
			sput(k, v, strlen(v), 0);
		} else if (what == 1) {
			k = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/step", job, id);
			v = xprintf("{\"step\":\"%s\",\"timeout\":%u%s}", step_names[s],
				    1 + fuzz_u8(in) % 60, s == CL_ABORT ? ",\"reason\":\"peer\"" : "");
			sput(k, v, strlen(v), 0);
		} else {
			k = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/", job, id);
			v = xprintf(CL_ACKS_V1 "%s/%s/", job, id);
			sdel(inc, false);
			sdel(k, true);
			sdel(v, true);
		}
		free(k);
		free(v);
	}
	json_object_put(o);
	free(inc);
	free(job);
	free(node);
}

/* Nodes of jobs by the hundred: other jobs' (crowding), or one job's many. */
static void flood(struct fuzz_in *in, bool one_job)
{
	unsigned int n = fuzz_u8(in) + (one_job ? 0 : 64);
	char *base = fuzz_str(in), *job = pick(in, jobs, 3);
	uint32_t world = 1 + fuzz_u8(in);

	if (flooded++)
		n = 0;		/* one a run: each key's event goes over every job kept */
	if (!base[0] || strlen(base) > 40 || !hbm_cluster_name_valid(base)) {
		free(base);
		base = xstrdup(one_job ? "gpu-node-0000.rack-00.cluster.example.com" : "other");
	}
	for (unsigned int i = 0; i < n && nr_store < STORE_MAX; i++) {
		char *k = one_job ? xprintf(CL_PREFIX_V1 "jobs/%s/nodes/%s-%u", job, base, i) :
				    xprintf(CL_PREFIX_V1 "jobs/%s%u/nodes/n1", base, i);
		char *v = xprintf("{\"ranks\":[%u],\"world_size\":%u}", i % world, world);

		rev++;
		sput(k, v, strlen(v), 0);
		free(k);
		free(v);
		if (nr_events > EVENTS_MAX / 2)
			deliver(SIZE_MAX);
	}
	free(base);
	free(job);
}

/*
 * The operations, by their byte modulo 30 (the seeds' generator follows
 * it): 0 the link up or down, 1 a new lease, 2 the lease ended (its keys
 * go), 3 the ranks here register (job, world, ranks), 4 they leave, 5 an
 * error here (job, reason, rank), 6 a failure of the ranks here, 7 a step
 * held answered (ok or not), 8 a transaction held answered (applied, lost,
 * falsely taken or refused), 9 a writer's key and value, 10 a writer's
 * delete, 11 the prefix read again (keys left out), 12 the watch synced,
 * 13 time passes, 14 the timer fires, 15 a tick, 16 events delivered,
 * 17 events lost, 18 what is answered at once (a bit each: transactions,
 * steps, events, an answer before its events, watches not served; and
 * how the input ends: etcd unreachable, peers silent, the ranks here
 * silent, settle() says what each means), 19 and
 * 20 floods of keys (other jobs; one job's nodes), 21 an acknowledgements'
 * read again, 22 the deadlines, 23 a peer publishes, 24 a peer opens,
 * 25 to 27 a peer acknowledges, steps or closes, 28 an event of etcd's
 * own, else a step held answered ok.
 */
static void op(struct fuzz_in *in)
{
	size_t at = in_size - in->n;
	uint8_t o = fuzz_u8(in) % 30;
	char *job, *k, *v, *r;
	size_t len;

	if (trace)
		fprintf(stderr, "%" PRIu64 " op %u (byte %zu)\n", now, o, at);
	switch (o) {
	case 0:
		link_up = !link_up;
		cl_link(core, link_up, now);
		break;
	case 1:
		drain();	/* what was sent under the lease before */
		lease = ++lease_next;
		cl_lease(core, lease, now);
		break;
	case 2:		/* the lease ends: its keys go, and it */
		if (lease) {
			rev++;
			for (size_t i = nr_store; i-- > 0;)
				if (store[i].lease == lease)
					sdel_at(i);
		}
		if (auto_deliver)
			deliver(SIZE_MAX);
		drain();
		lease = 0;
		cl_lease(core, 0, now);
		break;
	case 3: {	/* ranks here register */
		struct tracked *t;
		uint32_t world;
		int err;

		job = pick(in, jobs, 3);
		world = 1 + fuzz_u8(in) % 8;
		v = fuzz_u8(in) < 0xf0 ? own_ranks_value(in, world) : fuzz_str(in);
		err = cl_job_join(core, job, v, now);
		assert(!err || err == -EINVAL || err == -ENOMEM);
		t = track(job);
		if (!err && t) {
			struct json_object *w, *o2 = json_tokener_parse(v);

			assert(strlen(v) <= CL_VALUE_MAX);	/* every node takes it */
			snprintf(t->value, sizeof(t->value), "%s", v);
			t->world = o2 && json_object_object_get_ex(o2, "world_size", &w) ?
				   json_object_get_int64(w) : 0;
			json_object_put(o2);
		}
		free(job);
		free(v);
		break;
	}
	case 4:
		job = pick(in, jobs, 3);
		if (!cl_job_leave(core, job, now) && track(job))
			track(job)->value[0] = 0;
		free(job);
		break;
	case 5: {
		char id[HBM_CLUSTER_NAME_LEN];
		int err;

		job = pick(in, jobs, 3);
		r = reason_build(in);
		memset(id, 0x5a, sizeof(id));
		err = cl_error(core, job, fuzz_u8(in) % 8, r, now, id);
		if (trace)
			fprintf(stderr, "%" PRIu64 " error of %s (%s): %d, id %.16s\n", now, job, r, err, err ? "" : id);
		assert(!err || err == -ENOENT || err == -EINVAL);
		if (!err) {
			assert(whole(id, sizeof(id)) && hbm_cluster_name_valid(id));
			id_seen(id);
			if (nr_errors < ERRORS_MAX && strlen(job) < HBM_CLUSTER_NAME_LEN) {
				strcpy(errors_taken[nr_errors].job, job);
				strcpy(errors_taken[nr_errors].id, id);
				errors_taken[nr_errors].at = now;
				errors_taken[nr_errors++].answered = false;
			}
		}
		free(job);
		free(r);
		break;
	}
	case 6: {
		int err;

		job = pick(in, jobs, 3);
		r = reason_build(in);
		err = cl_fail(core, job, r, now);
		assert(!err || err == -ESRCH);
		free(job);
		free(r);
		break;
	}
	case 7:
		if (nr_locals) {
			size_t i = fuzz_u8(in) % nr_locals;
			bool ok = fuzz_u8(in) & 1;

			r = reason_build(in);
			local_answer(i, ok, r);
			free(r);
		}
		break;
	case 8:
		if (nr_pending) {
			size_t i = fuzz_u8(in) % nr_pending;

			pending_answer(i, fuzz_u8(in) % 4);
		}
		break;
	case 9:		/* a writer's key */
		k = key_build(in);
		v = value_build(in, &len);
		if (k[0]) {
			rev++;
			sput(k, v, len, fuzz_u8(in) & 1 ? lease : 0);
		}
		free(k);
		free(v);
		break;
	case 10:	/* a writer deletes a key */
		if (nr_store) {
			rev++;
			sdel_at(fuzz_u8(in) % nr_store);
		}
		break;
	case 11: {
		uint64_t skip = fuzz_u8(in) < 0xe0 ? 0 : fuzz_u64(in);

		/* keys left out, or events of before it delivered after it: etcd's lies */
		owed_read |= skip || nr_events;
		snapshot(skip, rev);
		break;
	}
	case 12: {
		int64_t synced = fuzz_u8(in) < 0xe0 ? rev : (int64_t)fuzz_u64(in);

		owed_read |= synced != rev;
		cl_synced(core, synced, now);
		break;
	}
	case 13:
		now += fuzz_u32(in) % 2000000;
		break;
	case 14: {	/* the timer fires */
		uint64_t next = cl_next_deadline(core);

		if (next != UINT64_MAX && next > now)
			now = next;
		cl_tick(core, now);
		break;
	}
	case 15:
		cl_tick(core, now);
		break;
	case 16:
		deliver(fuzz_u8(in) < 0x80 ? SIZE_MAX : fuzz_u8(in));
		break;
	case 17:	/* the watch lost them (a read again makes up) */
		drop_events();
		break;
	case 18: {
		uint8_t m = fuzz_u8(in);

		auto_txn = m & 1;
		auto_local = m & 2;
		auto_deliver = m & 4;
		answer_first = m & 8;
		auto_watch = !(m & 16);
		end_unreachable = m & 32;
		end_peers_silent = m & 64;
		end_ranks_silent = m & 128;
		break;
	}
	case 19:
		flood(in, false);
		break;
	case 20:
		flood(in, true);
		break;
	case 21:
		if (nr_watched) {
			owed_read |= nr_events != 0;
			acks_snapshot(watched[fuzz_u8(in) % nr_watched]);
		}
		break;
	case 22:
		for (int s = 0; s < CL_NR_STEPS; s++) {
			timeouts.step[s] = 1 + fuzz_u8(in) % 120;
			if (timeouts.step[s] > tmax)
				tmax = timeouts.step[s];
		}
		cl_set_timeouts(core, &timeouts);
		break;
	case 23: {	/* a peer's ranks publish */
		char *node = pick(in, peers, 4);

		job = pick(in, jobs, 3);
		k = xprintf(CL_PREFIX_V1 "jobs/%s/nodes/%s", job, node);
		v = ranks_value(in, track(job) && track(job)->world ? track(job)->world :
				1 + fuzz_u8(in) % 8);
		rev++;
		sput(k, v, strlen(v), 1000 + (fuzz_u8(in) & 3));
		free(node);
		free(job);
		free(k);
		free(v);
		break;
	}
	case 24:
		peer_open(in);
		break;
	case 25:
	case 26:
	case 27:
		peer_incident(in, o - 25);
		break;
	case 28: {	/* an event of etcd's own: any kv, any revisions */
		struct etcd_kv kv;

		k = key_build(in);
		v = value_build(in, &len);
		kv = (struct etcd_kv){ .key = k, .key_len = strlen(k), .value = v, .value_len = len };
		kv.create_revision = (int64_t)fuzz_u32(in) - 8;
		kv.mod_revision = (int64_t)fuzz_u32(in) - 8;
		kv.version = fuzz_u8(in);
		kv.lease = fuzz_u8(in) & 1 ? lease : 0;
		if (k[0] && find(k))
			find(k)->told += 2;	/* its refusal is of this one, not the store's */
		if (k[0]) {
			owed_read = true;
			if (self_key(k))
				foreign_self = true;
			(fuzz_u8(in) & 1 ? cl_delete : cl_put)(core, &kv, now);
		}
		free(k);
		free(v);
		break;
	}
	default:
		if (nr_locals)
			local_answer(fuzz_u8(in) % nr_locals, true, "");
		break;
	}
	if (auto_deliver)
		deliver(SIZE_MAX);
	drain();
	if (auto_deliver && nr_events) {
		deliver(SIZE_MAX);
		drain();
	}
	check_no_spin();
	check_view();
	if (nr_tracked < TRACKED_MAX) {
		size_t joined = 0;

		for (size_t i = 0; i < nr_tracked; i++)
			joined += tracked[i].value[0] != 0;
		assert(cl_jobs_published(core) <= joined);
	}
}

/* ---- the end of an input: the rest of the time ---- */

/* A value as every node reads one: one JSON object, strict and whole; NULL if not. */
static struct json_object *strict_value(const struct fkv *f)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (!f || strlen(f->value) != f->value_len)
		return NULL;
	tok = json_tokener_new_ex(4);
	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, f->value, f->value_len);
	if (o && (!json_object_is_type(o, json_type_object) ||
		  json_tokener_get_parse_end(tok) != f->value_len)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

static const char *name_field(struct json_object *o, const char *field)
{
	struct json_object *f;

	if (!json_object_object_get_ex(o, field, &f) || !json_object_is_type(f, json_type_string) ||
	    !hbm_cluster_name_valid(json_object_get_string(f)))
		return NULL;
	return json_object_get_string(f);
}

/* The names after @prefix of the store's keys, as a set (an object's keys). */
static struct json_object *names_under(const char *prefix)
{
	struct json_object *set = json_object_new_object();
	size_t len = strlen(prefix);

	if (!set)
		abort();
	for (size_t i = 0; i < nr_store; i++)
		if (!strncmp(store[i].key, prefix, len))
			json_object_object_add(set, store[i].key + len, NULL);
	return set;
}

/*
 * The cooperative peers' turn at @job's incident, as the layout has them:
 * each node of it whose key is there (its daemon alive) acknowledges the
 * step; its opener, if not this node and alive, writes the next step once
 * every node acknowledged this one (an abort: every node alive), and after
 * resume or abort closes it.  An incident or step key that is not the
 * layout's is left as it is (a hostile writer's: every node refuses it).
 * Return: whether they wrote.
 */
static bool peers_turn(const char *job)
{
	char *inc = xprintf(CL_PREFIX_V1 "jobs/%s/incident", job), *sk = NULL, *k;
	struct json_object *o = strict_value(find(inc)), *so = NULL, *nodes;
	struct json_object *alive = NULL, *acks = NULL;
	const char *id, *opener, *sname;
	bool wrote = false, all = true;
	int step = -1;
	size_t n, i;

	if (!o || !(id = name_field(o, "id")) || !(opener = name_field(o, "opener")) ||
	    !json_object_object_get_ex(o, "nodes", &nodes) ||
	    !json_object_is_type(nodes, json_type_array) || !(n = json_object_array_length(nodes)))
		goto out;
	sk = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/step", job, id);
	so = strict_value(find(sk));
	if (!so || !(sname = name_field(so, "step")))
		goto out;
	for (int s = 0; s < CL_NR_STEPS; s++)
		if (!strcmp(sname, step_names[s]))
			step = s;
	if (step < 0)
		goto out;
	k = xprintf(CL_PREFIX_V1 "jobs/%s/nodes/", job);
	alive = names_under(k);
	free(k);
	k = xprintf(CL_ACKS_V1 "%s/%s/%s/", job, id, step_names[step]);
	acks = names_under(k);
	free(k);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(nodes, i);
		const char *node = json_object_get_string(e);
		bool up = json_object_object_get_ex(alive, node, NULL);

		if (!json_object_is_type(e, json_type_string) || !hbm_cluster_name_valid(node))
			goto out;
		if (strcmp(node, SELF) && up && !json_object_object_get_ex(acks, node, NULL)) {
			char v[64];

			k = xprintf(CL_ACKS_V1 "%s/%s/%s/%s", job, id, step_names[step], node);
			snprintf(v, sizeof(v), "{\"at\":%" PRIu64 "}", 1700000000000 + now / 1000);
			rev++;
			sput(k, v, strlen(v), 0);
			free(k);
			json_object_object_add(acks, node, NULL);
			wrote = true;
		}
		if (!json_object_object_get_ex(acks, node, NULL) && (step != CL_ABORT || up))
			all = false;
	}
	if (all && strcmp(opener, SELF) && json_object_object_get_ex(alive, opener, NULL)) {
		rev++;
		if (step < CL_RESUME) {
			k = xprintf("{\"step\":\"%s\",\"timeout\":30}", step_names[step + 1]);
			sput(sk, k, strlen(k), 0);
			free(k);
		} else {
			sdel(inc, false);
			k = xprintf(CL_PREFIX_V1 "jobs/%s/incident/%s/", job, id);
			sdel(k, true);
			free(k);
			k = xprintf(CL_ACKS_V1 "%s/%s/", job, id);
			sdel(k, true);
			free(k);
		}
		wrote = true;
	}
out:
	json_object_put(o);
	json_object_put(so);
	json_object_put(alive);
	json_object_put(acks);
	free(inc);
	free(sk);
	return wrote;
}

/* Every job's incident in the store, the cooperative peers' turn at each. */
static bool peers_act(void)
{
	const size_t plen = strlen(CL_PREFIX_V1 "jobs/");
	char job[16][HBM_CLUSTER_NAME_LEN];
	size_t n = 0, i;
	bool wrote = false;

	for (i = 0; i < nr_store && n < 16; i++) {
		const char *k = store[i].key, *slash;

		if (strncmp(k, CL_PREFIX_V1 "jobs/", plen) || !(slash = strchr(k + plen, '/')) ||
		    strcmp(slash, "/incident") || (size_t)(slash - k) - plen >= HBM_CLUSTER_NAME_LEN)
			continue;
		memcpy(job[n], k + plen, slash - k - plen);
		job[n][slash - k - plen] = 0;
		n += hbm_cluster_name_valid(job[n]);
	}
	for (i = 0; i < n; i++)
		wrote |= peers_turn(job[i]);
	return wrote;
}

/*
 * What is in flight answered, the events etcd owes delivered, the local
 * ranks' steps and the peers' turns taken, until nothing more comes of
 * them at this time.
 */
static void quiesce(void)
{
	for (int round = 0;; round++) {
		unsigned long before = actions_taken;
		bool more = false;

		/* else a transaction sent at etcd's round trip's pace, without end */
		assert(round < SETTLE_ROUNDS);
		drain();
		for (; nr_pending; more = true)
			pending_answer(0, end_unreachable ? 1 : 0);
		if (!end_unreachable) {
			if (nr_events) {
				deliver(SIZE_MAX);
				more = true;
			}
			if (rev > synced_told) {	/* the watch's progress */
				synced_told = rev;
				cl_synced(core, rev, now);
				more = true;
			}
			/* the peers' turn: of what the store holds, once at each revision */
			if (!end_peers_silent && rev != peers_rev) {
				peers_rev = rev;
				more |= peers_act();
			}
		}
		for (; !end_ranks_silent && nr_locals; more = true)
			local_answer(0, true, "");
		drain();
		if (!more && actions_taken == before)
			break;
	}
}

static bool owes_ranks(void)
{
	for (size_t i = 0; i < nr_tracked; i++)
		if (tracked[i].owed[0])
			return true;
	for (size_t i = 0; i < nr_errors; i++)
		if (!errors_taken[i].answered)
			return true;
	return false;
}

/* FUZZ_TRACE: the incidents' keys left at the end, for a look at those wedged. */
static void trace_left(void)
{
	const size_t plen = strlen(CL_PREFIX_V1 "jobs/");

	for (size_t i = 0; i < nr_store; i++) {
		const char *k = store[i].key, *slash, *id, *sname = NULL;
		struct json_object *o, *so = NULL, *nodes;
		bool member = false;
		char *sk;

		if (strncmp(k, CL_PREFIX_V1 "jobs/", plen) || !(slash = strchr(k + plen, '/')) ||
		    strcmp(slash, "/incident"))
			continue;
		o = strict_value(&store[i]);
		if (!o || !(id = name_field(o, "id")) || !name_field(o, "opener") ||
		    !json_object_object_get_ex(o, "nodes", &nodes) ||
		    !json_object_is_type(nodes, json_type_array)) {
			fprintf(stderr, "left at the end: %s: not the layout's\n", k);
			json_object_put(o);
			continue;
		}
		for (size_t n = 0; n < json_object_array_length(nodes); n++)
			member |= !strcmp(json_object_get_string(json_object_array_get_idx(nodes, n)),
					  SELF);
		sk = xprintf("%s/%s/step", k, id);
		so = strict_value(find(sk));
		if (so)
			sname = name_field(so, "step");
		fprintf(stderr, "left at the end: %s %s, step %s, %s\n", k, id,
			!find(sk) ? "none" : sname ? sname : "not the layout's",
			member ? "this node's" : "without this node");
		free(sk);
		json_object_put(so);
		json_object_put(o);
	}
}

/*
 * The settle phase, at the end of each input: no more writers' keys, no
 * more errors; what is in flight answered; then time runs, from one
 * cl_next_deadline() to the next (a tick and the same processing as the
 * operations'), up to a bound.  How it ends is the input's (op 18):
 *
 *   cooperative (the default): etcd answers again (the link up, a lease,
 *	every transaction applied as it is sent, its events delivered, the
 *	watch's progress told; a read again of the prefix and of each
 *	acknowledgements' watch where events were lost or etcd lied, as
 *	after a compaction), the peers whose key is there acknowledge every
 *	step and an opener of theirs steps and closes (peers_turn());
 *   etcd unreachable: the link down from now on, what is in flight lost;
 *   peers silent: no peer writes again (with etcd reachable);
 *   the ranks here silent: the steps asked of them never answered.
 *
 * What holds in each, and is asserted: a node never stays without a
 * deadline (cl_next_deadline() UINT64_MAX) while it owes its ranks an
 * answer; every incident whose step the ranks here were told of ends for
 * them in its resume or an abort by the bound (cooperative peers and ranks
 * may resume it; else, or without etcd, a step's deadline aborts it);
 * every cl_error() the core took is answered (a step of its incident, or
 * an abort) by max(its pause deadline, the end + RETRY_US) + RETRY_US: the
 * pause deadline from the error, with cl_timeouts' pause at the end (what
 * process() reads then); what was in flight at the end, lost, is sent
 * again RETRY_US later, and an open refused then waits RETRY_US more (an
 * open held in flight before the end waits for its answer, as it must).
 * In the cooperative ending, with the ranks answering, every job joined
 * is published too.  With etcd reachable, nothing is left to come of time
 * by the end (no deadline): an incident of this node's closes, one whose
 * step key a writer deleted or spoilt too (the close compares the key as
 * read).  Keys this node refuses whole (an incident's value not the
 * layout's) may stay, and FUZZ_TRACE says which are left.
 *
 * The bound: 4 x the longest timeout configured in the run (tmax; a
 * step's deadline is its writer's timeout capped by this node's own when
 * it read it, and 120 s is restore's at the start) + 8 x RETRY_US.  The
 * ranks wait at most an open's retries (RETRY_US each: a transaction lost
 * at the end, an open refused), an error's pause deadline or a step's
 * (tmax each; a read again a join asked, REREAD_MIN_US = 30 s < tmax, may
 * let an open through later) and then an abort's own deadline before a
 * node closes the incident (tmax): 3 x tmax covers each in turn.  One more
 * where a close of a step key seen gone is refused for a step etcd holds
 * that this node refused (read before the incident it names was taken
 * here): the prefix is read again an abort's timeout later (close_at),
 * and the step then read is aborted and closed in turn.
 */
static void settle(void)
{
	uint64_t t0 = now, horizon = now + 4ULL * tmax * 1000000 + 8ULL * RETRY_US, next;
	size_t i;
	int ticks = 0;

	if (trace)
		fprintf(stderr, "%" PRIu64 " settle:%s%s%s%s, to %" PRIu64 "\n", now,
			end_unreachable ? " etcd unreachable" : " etcd back",
			end_peers_silent ? ", peers silent" : "",
			end_ranks_silent ? ", ranks silent" : "", owed_read ? ", read again" : "",
			horizon);
	drain();
	auto_txn = auto_deliver = auto_watch = !end_unreachable;
	auto_local = !end_ranks_silent;
	synced_told = peers_rev = -1;
	if (end_unreachable) {
		if (link_up) {
			link_up = false;
			cl_link(core, false, now);
		}
	} else {
		if (!link_up) {
			link_up = true;
			cl_link(core, true, now);
			drain();
		}
		if (!lease) {
			lease = ++lease_next;
			cl_lease(core, lease, now);
		}
		for (; nr_pending; drain())
			pending_answer(0, 0);
		if (owed_read || want_reread) {
			drop_events();
			want_reread = false;
			snapshot(0, rev);
			drain();
			for (size_t w = 0; w < nr_watched; w++) {
				acks_snapshot(watched[w]);
				drain();
			}
		}
	}
	quiesce();
	check_no_spin();
	for (;;) {
		next = cl_next_deadline(core);
		/* no deadline: nothing is to come of time, the ranks owed nothing */
		assert(next != UINT64_MAX || !owes_ranks());
		if (next == UINT64_MAX || next > horizon)
			break;
		assert(++ticks < SETTLE_TICKS);
		if (next > now)
			now = next;
		if (trace)
			fprintf(stderr, "%" PRIu64 " tick\n", now);
		cl_tick(core, now);
		quiesce();
		check_no_spin();
	}
	/* with etcd, nothing is left to come of time: an incident of this node's closed */
	assert(end_unreachable || next == UINT64_MAX);
	for (i = 0; i < nr_tracked && !end_unreachable; i++)
		assert(!tracked[i].open_here[0]);
	/* every incident told of ended for the ranks here */
	for (i = 0; i < nr_tracked; i++)
		assert(!tracked[i].owed[0]);
	/* every error taken answered, by its pause deadline or the end's */
	for (i = 0; i < nr_errors; i++) {
		uint64_t by = errors_taken[i].at + timeouts.step[CL_PAUSE] * 1000000ULL;

		if (by < t0 + RETRY_US)
			by = t0 + RETRY_US;
		assert(errors_taken[i].answered && errors_taken[i].answered_at <= by + RETRY_US);
	}
	if (!end_unreachable && !end_ranks_silent && nr_tracked < TRACKED_MAX) {
		size_t joined = 0;

		for (i = 0; i < nr_tracked; i++)
			joined += tracked[i].value[0] != 0;
		/* a job's key another writer holds is not this node's to put over */
		assert(cl_jobs_published(core) == joined || foreign_self);
	}
	if (trace)
		trace_left();
}

static void reset(void)
{
	memset(tracked, 0, sizeof(tracked));
	nr_tracked = 0;
	memset(closes, 0, sizeof(closes));
	memset(ids, 0, sizeof(ids));
	ids_next = 0;
	nr_pending = nr_locals = nr_watched = 0;
	rev = 1;
	now = 1000000;
	lease = 0;
	lease_next = 100;
	nonce_ctr = 0;
	want_reread = false;
	flooded = 0;
	auto_txn = auto_local = auto_deliver = auto_watch = true;
	answer_first = false;
	nr_errors = 0;
	end_unreachable = end_peers_silent = end_ranks_silent = false;
	owed_read = false;
	foreign_self = in_apply = false;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	trace = getenv("FUZZ_TRACE") != NULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	int ops = 0;

	if (!events) {
		events = calloc(EVENTS_MAX, sizeof(*events));
		if (!events)
			abort();
	}
	reset();
	in_size = size;
	tmax = 0;
	for (int s = 0; s < CL_NR_STEPS; s++) {
		timeouts.step[s] = (uint32_t[]){ 30, 30, 120, 30, 10 }[s];
		if (timeouts.step[s] > tmax)
			tmax = timeouts.step[s];
	}
	core = cl_new(SELF, &timeouts, nonce);
	assert(core);
	/* as cluster.c starts: etcd reached, the prefix read, a lease */
	link_up = true;
	cl_link(core, true, now);
	snapshot(0, rev);
	lease = ++lease_next;
	cl_lease(core, lease, now);
	drain();
	while (in.n && ops++ < OPS_MAX)
		op(&in);
	settle();
	cl_free(core);
	core = NULL;
	for (size_t i = 0; i < nr_pending; i++)
		free(pending[i].body);
	store_free();
	return 0;
}
