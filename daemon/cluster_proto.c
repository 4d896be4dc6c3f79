// SPDX-License-Identifier: GPL-2.0
/*
 * The incident protocol across nodes (cluster_proto.h says what it is and
 * the key layout).  Level-triggered: whatever happens, the job's state is
 * what etcd last said plus what the local side did, and process() works
 * out from it what is still to do.  A transaction in flight is not sent
 * twice; one that failed on the way is sent again after a pause, and one
 * that etcd refused (a compare that did not hold) needs nothing: the watch
 * brings what changed, and process() runs again on it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <json-c/json.h>

#include "cluster_proto.h"
#include "ratelimit.h"

#define RETRY_US	500000		/* a transaction that did not reach etcd, again */
#define REREAD_MIN_US	(30 * 1000000ULL)	/* between reads again a join asks */
/* queued and not taken: a caller that does not drain */
#define MAX_ACTIONS	65536
/*
 * Keys refused one line each, in a read, up to this many; then one line
 * says how many more.  A writer's junk under the prefix would otherwise
 * put a line per key in every node's journal at every read (a reconnect,
 * a compaction).
 */
#define REFUSED_SHOWN	8
/*
 * Outside a read, refused events: any writer under the prefix makes one a
 * write on every node (128 in a transaction), and journald's limit for the
 * service (10000 lines per 30 s) would drop the daemon's own lines past it
 * (helper-184): REFUSED_BURST per REFUSED_INTERVAL_US, then one line
 * counting those not shown.
 */
#define REFUSED_BURST		64
#define REFUSED_INTERVAL_US	(30 * 1000000ULL)
/* Incidents this node took part in, kept for hbmctl incidents once closed. */
#define CLOSED_KEPT	16

static const char *const step_names[CL_NR_STEPS] = {
	"pause", "isolate", "restore", "resume", "abort"
};

struct member {
	char name[HBM_CLUSTER_NAME_LEN];
	unsigned int acked;		/* 1 << step */
	uint64_t acked_at[CL_NR_STEPS];	/* ms since the epoch, as it wrote it; 0 unknown */
};

struct node_ranks {
	uint32_t *rank;
	size_t nr;
};

struct job {
	char name[HBM_CLUSTER_NAME_LEN];
	/* the nodes whose key is there: the job's nodes now */
	char (*nodes)[HBM_CLUSTER_NAME_LEN];
	struct node_ranks *ranks;	/* the global ranks each has, ascending */
	size_t nr_nodes, cap_nodes;
	size_t nr_ranks;		/* theirs, all told: CL_MAX_RANKS at most */
	bool world_dirty;		/* nodes or world changed since world_full */
	bool world_full;		/* every rank of world on a node there */
	/* this node's ranks of it */
	char *value;			/* NULL: not joined */
	uint32_t world;			/* its world_size */
	bool published;			/* under the present lease */
	bool republish;			/* changed while a publication was in flight */
	int64_t ours_rev;		/* the key last known ours at (its put's revision), 0 not */
	/*
	 * Other writers of this node's key after it was ours: a second daemon
	 * given this node's name (a cloned image's hostname), or an etcd user.
	 * Each (its lease) said once, until the key goes (delete_node()).
	 */
	int64_t writers[8];
	unsigned int nr_writers;
	bool held_by_other;		/* the key's last put one of theirs: not put over again */
	bool leaving;			/* its key to delete: no rank of it here now */
	/* the open incident, as etcd has it */
	bool open;
	char id[HBM_CLUSTER_NAME_LEN];
	char opener[HBM_CLUSTER_NAME_LEN];
	uint32_t failed_rank;		/* the global rank whose state was lost */
	int64_t create_rev;
	/* its key as last read (a member's): inc_key_seen() */
	char *inc_value;		/* as created (version 1); NULL put over since, or no memory */
	size_t inc_value_len;
	int64_t inc_mod;
	/*
	 * Which of the incidents this core read it is: not its create_revision,
	 * which a store restored from a snapshot, or a read that left its
	 * deletion out, gives again.
	 */
	uint64_t incident;
	int64_t snap_create;		/* of the incident in a snapshot being read */
	struct member *parts;
	size_t nr_parts;
	bool member;			/* this node is one of parts */
	bool step_known;
	enum cl_step step;
	uint64_t step_at[CL_NR_STEPS];	/* ms since the epoch this node read each */
	int64_t step_mod_rev;
	int64_t step_key_rev;		/* its key's as last seen, taken or refused; 0 none */
	int64_t changed_from;		/* a step change of ours etcd answered from this mod_revision */
	uint64_t deadline;		/* of the step, from when it was read */
	uint64_t read_at;		/* the incident, read here */
	uint64_t error_at;		/* the error here it answers (an open of ours), 0 none */
	bool close_refused;		/* its close, wedged, refused (cl_txn_done()) */
	uint64_t close_at;		/* its close, wedged, again then (0: not sent) */
	char reason[CL_REASON_LEN];	/* the abort's */
	/* this node's part in it */
	int asked, done;		/* the step asked of, done by the local ranks; -1 none */
	unsigned int acked;		/* 1 << step: this node's acknowledgement answered */
	bool watching;			/* the acknowledgements (the opener) */
	bool local_aborted;		/* told to abort without etcd */
	uint64_t aborted_at;		/* when, 0 never */
	char escalate[CL_REASON_LEN];	/* an abort to write */
	/* an error of ours waiting to open one */
	bool want_open;
	uint64_t want_since;
	char want_id[HBM_CLUSTER_NAME_LEN];
	char want_reason[CL_REASON_LEN];
	uint32_t want_rank;
	char want_fail[CL_REASON_LEN];	/* the local side failed before it opened */
	int64_t open_answered_rev;	/* an open of ours, answered: the watch brings the incident by it */
	/*
	 * An open refused (the key there), not sent again before: a key held
	 * by what is no incident (refused here, never deleted) would have it
	 * sent at etcd's round trip's pace until the pause deadline.
	 */
	uint64_t open_retry_at;
	unsigned int inflight;		/* 1 << cl_txn_kind */
	uint64_t retry_at;		/* 0: none */
};

/* An incident across nodes as hbmctl incidents shows it, open or closed. */
struct incident_view {
	const char *job, *id, *opener;
	enum cl_step step;
	uint32_t failed_rank;
	const uint64_t *step_at;
	const struct member *parts;
	size_t nr_parts;
};

struct closed_incident {
	char job[HBM_CLUSTER_NAME_LEN];
	char id[HBM_CLUSTER_NAME_LEN];
	char opener[HBM_CLUSTER_NAME_LEN];
	enum cl_step step;		/* its last: resume or abort */
	uint32_t failed_rank;
	uint64_t step_at[CL_NR_STEPS];
	struct member *parts;
	size_t nr_parts;
};

struct cl_core {
	char node[HBM_CLUSTER_NAME_LEN];
	struct cl_timeouts t;
	uint64_t (*nonce)(void);
	int64_t lease;			/* 0: none */
	int64_t old_lease;		/* the one before: its puts, taken late, are still ours */
	bool link;
	int64_t synced;			/* the revision the watch has reached */
	/* this node's jobs, and at most CL_MAX_JOBS others: none crowds out its own */
	struct job *jobs[2 * CL_MAX_JOBS];
	size_t nr_jobs;
	struct cl_action *q;		/* actions, a ring */
	size_t q_head, q_len, q_cap;
	uint64_t incidents_read;		/* a count: struct job's .incident */
	/* the newest CLOSED_KEPT closed, a ring */
	struct closed_incident closed[CLOSED_KEPT];
	size_t closed_next, nr_closed;
	/* in a read: the refusals still told, and those not */
	bool reading;
	unsigned int refused_shown;
	size_t refused_hidden;
	/* outside one: their budget, and the time of the event applied */
	struct hbm_ratelimit refusals;
	uint64_t applied_at;
	/* a node's key refused since the last read for want of room for its job */
	bool crowded;
	/* the read again that asks, due then (0: none); the last asked */
	uint64_t reread_due, reread_at;
};

const char *cl_step_name(enum cl_step s)
{
	return s < CL_NR_STEPS ? step_names[s] : "?";
}

static struct cl_action *push(struct cl_core *c, enum cl_action_kind kind, const struct job *j)
{
	struct cl_action *a;

	if (c->q_len == c->q_cap) {
		size_t cap = c->q_cap ? 2 * c->q_cap : 64, i;
		struct cl_action *q;

		if (cap > MAX_ACTIONS || !(q = calloc(cap, sizeof(*q))))
			return NULL;
		for (i = 0; i < c->q_len; i++)
			q[i] = c->q[(c->q_head + i) % c->q_cap];
		free(c->q);
		c->q = q;
		c->q_cap = cap;
		c->q_head = 0;
	}
	a = &c->q[(c->q_head + c->q_len++) % c->q_cap];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	if (j) {
		strcpy(a->job, j->name);
		strcpy(a->id, j->open ? j->id : "");
		a->incident = j->open ? j->incident : 0;
		a->rank = j->open ? j->failed_rank : j->want_rank;
		strcpy(a->opener, j->open ? j->opener : "");
	}
	return a;
}

/**
 * cl_next_action() - take the oldest action
 * @c: the core
 * @a: set to it; a CL_TXN's body is then the caller's
 *
 * Return: false when there is none.
 */
bool cl_next_action(struct cl_core *c, struct cl_action *a)
{
	if (!c->q_len)
		return false;
	*a = c->q[c->q_head];
	c->q_head = (c->q_head + 1) % c->q_cap;
	c->q_len--;
	return true;
}

static void __attribute__((format(printf, 4, 5)))
say(struct cl_core *c, const struct job *j, int prio, const char *fmt, ...)
{
	struct cl_action *a = push(c, CL_LOG, j);
	va_list ap;

	if (!a)
		return;
	a->prio = prio;
	va_start(ap, fmt);
	vsnprintf(a->text, sizeof(a->text), fmt, ap);
	va_end(ap);
}

struct cl_core *cl_new(const char *node, const struct cl_timeouts *t, uint64_t (*nonce)(void))
{
	struct cl_core *c;

	if (!hbm_cluster_name_valid(node))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	strcpy(c->node, node);
	c->t = *t;
	c->nonce = nonce;
	return c;
}

/*
 * Steps written from now on have these deadlines, and those read from now on
 * at most these; a step read already keeps its deadline.
 */
void cl_set_timeouts(struct cl_core *c, const struct cl_timeouts *t)
{
	c->t = *t;
}

static void nodes_clear(struct job *j)
{
	for (size_t i = 0; i < j->nr_nodes; i++)
		free(j->ranks[i].rank);
	j->nr_nodes = 0;
	j->nr_ranks = 0;
	j->world_dirty = true;
}

static void job_free(struct job *j)
{
	nodes_clear(j);
	free(j->nodes);
	free(j->ranks);
	free(j->parts);
	free(j->value);
	free(j->inc_value);
	free(j);
}

void cl_free(struct cl_core *c)
{
	struct cl_action a;
	size_t i;

	if (!c)
		return;
	while (cl_next_action(c, &a))
		free(a.body);
	free(c->q);
	for (i = 0; i < c->nr_jobs; i++)
		job_free(c->jobs[i]);
	for (i = 0; i < CLOSED_KEPT; i++)
		free(c->closed[i].parts);
	free(c);
}

static struct job *job_find(struct cl_core *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->nr_jobs; i++)
		if (!strcmp(c->jobs[i]->name, name))
			return c->jobs[i];
	return NULL;
}

static struct job *job_get(struct cl_core *c, const char *name, bool ours)
{
	struct job *j = job_find(c, name);
	size_t i, others = 0, mine = 0;

	if (j)
		return j;
	/*
	 * A job leaving is still this node's: its key's delete needs etcd, and
	 * while etcd is away a user's ranks joining and leaving new jobs would
	 * otherwise grow the list past its end (helper-186).
	 */
	for (i = 0; i < c->nr_jobs; i++) {
		bool own = c->jobs[i]->value || c->jobs[i]->leaving;

		others += !own;
		mine += own;
	}
	if ((ours ? mine : others) >= CL_MAX_JOBS ||
	    c->nr_jobs >= sizeof(c->jobs) / sizeof(c->jobs[0]))
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	strcpy(j->name, name);
	j->asked = j->done = -1;
	c->jobs[c->nr_jobs++] = j;
	return j;
}

/* A job nothing refers to any more goes. */
static void job_gc(struct cl_core *c, struct job *j)
{
	size_t i;

	if (j->nr_nodes || j->open || j->value || j->want_open || j->inflight || j->leaving)
		return;
	for (i = 0; i < c->nr_jobs && c->jobs[i] != j; i++)
		;
	c->jobs[i] = c->jobs[--c->nr_jobs];
	job_free(j);
}

static bool node_alive(const struct job *j, const char *node)
{
	for (size_t i = 0; i < j->nr_nodes; i++)
		if (!strcmp(j->nodes[i], node))
			return true;
	return false;
}

static int rank_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * Whether every rank of this node's world is on a node whose key is
 * there: each of 0 .. world - 1, not a count (two nodes that both say
 * rank 0, a job id used twice, make up no rank 1).  Worked out again only
 * after the nodes or the world changed, not at every event: a bitmap of
 * the world, which is at most nr_ranks (CL_MAX_RANKS) by then.
 */
static bool world_known(struct job *j)
{
	unsigned char *seen;
	uint32_t missing;
	size_t i, r;

	if (!j->world_dirty)
		return j->world_full;
	j->world_full = false;
	if (j->nr_ranks < j->world)
		goto out;
	seen = calloc(j->world / 8 + 1, 1);
	if (!seen)
		return false;	/* dirty still: again at the next look */
	missing = j->world;
	for (i = 0; i < j->nr_nodes; i++)
		for (r = 0; r < j->ranks[i].nr; r++) {
			uint32_t k = j->ranks[i].rank[r];

			if (k < j->world && !(seen[k / 8] & 1U << k % 8)) {
				seen[k / 8] |= 1U << k % 8;
				missing--;
			}
		}
	free(seen);
	j->world_full = !missing;
out:
	j->world_dirty = false;
	return j->world_full;
}

/*
 * A node's value: {"ranks": [...], "world_size": N}; the number of ranks,
 * -EINVAL for a bad value, -ENOMEM.  @rank, unless NULL, gets them
 * ascending in an array of the caller's, and then a rank said twice is a
 * bad value (another node's: this node's own are its registered ranks).
 */
static int64_t ranks_of(struct json_object *o, uint32_t *world, uint32_t **rank)
{
	struct json_object *ranks, *w;
	uint32_t *r;
	size_t n, i;
	bool bad;

	if (!json_object_object_get_ex(o, "ranks", &ranks) ||
	    !json_object_is_type(ranks, json_type_array) ||
	    !json_object_object_get_ex(o, "world_size", &w) || !json_object_is_type(w, json_type_int) ||
	    json_object_get_int64(w) < 1 || json_object_get_int64(w) > UINT32_MAX ||
	    json_object_array_length(ranks) > (size_t)json_object_get_int64(w))
		return -EINVAL;
	n = json_object_array_length(ranks);
	r = calloc(n + 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(ranks, i);

		if (!json_object_is_type(e, json_type_int) || json_object_get_int64(e) < 0 ||
		    json_object_get_int64(e) >= json_object_get_int64(w))
			break;
		r[i] = json_object_get_int64(e);
	}
	bad = i < n;
	if (!bad && rank) {
		qsort(r, n, sizeof(*r), rank_cmp);
		for (i = 1; i < n && !bad; i++)
			bad = r[i] == r[i - 1];
	}
	if (bad || !rank)
		free(r);
	if (bad)
		return -EINVAL;
	if (world)
		*world = json_object_get_int64(w);
	if (rank)
		*rank = r;
	return n;
}

static struct member *part(struct job *j, const char *node)
{
	for (size_t i = 0; i < j->nr_parts; i++)
		if (!strcmp(j->parts[i].name, node))
			return &j->parts[i];
	return NULL;
}

/* ---- keys ---- */

enum key_kind { K_NODE, K_INCIDENT, K_STEP, K_ACK };

struct key {
	enum key_kind kind;
	char job[HBM_CLUSTER_NAME_LEN];
	char id[HBM_CLUSTER_NAME_LEN];
	char node[HBM_CLUSTER_NAME_LEN];
	enum cl_step step;
};

/* The next component of @k into @out; NULL if it is not a name. */
static const char *component(const char *k, char *out)
{
	const char *slash = strchr(k, '/');
	size_t n = slash ? (size_t)(slash - k) : strlen(k);

	if (!n || n >= HBM_CLUSTER_NAME_LEN)
		return NULL;
	memcpy(out, k, n);
	out[n] = 0;
	if (!hbm_cluster_name_valid(out))
		return NULL;
	return slash ? slash + 1 : k + n;
}

static int step_parse(const char *s, enum cl_step *step)
{
	for (int i = 0; i < CL_NR_STEPS; i++)
		if (!strcmp(s, step_names[i])) {
			*step = i;
			return 0;
		}
	return -EINVAL;
}

/* Return: 0, -EPROTO another version's, -EINVAL not a key of the layout. */
static int key_parse(const char *k, struct key *out)
{
	char word[HBM_CLUSTER_NAME_LEN];

	memset(out, 0, sizeof(*out));
	if (!strncmp(k, CL_ACKS_V1, strlen(CL_ACKS_V1))) {
		k += strlen(CL_ACKS_V1);
		if (!(k = component(k, out->job)) || !(k = component(k, out->id)) ||
		    !(k = component(k, word)) || step_parse(word, &out->step) ||
		    !(k = component(k, out->node)) || *k || k[-1] == '/')
			return -EINVAL;
		out->kind = K_ACK;
		return 0;
	}
	if (strncmp(k, CL_PREFIX_V1, strlen(CL_PREFIX_V1)))
		return -EPROTO;
	k += strlen(CL_PREFIX_V1);
	if (strncmp(k, "jobs/", 5) || !(k = component(k + 5, out->job)) || !*k)
		return -EINVAL;
	if (!(k = component(k, word)))
		return -EINVAL;
	if (!strcmp(word, "nodes")) {
		out->kind = K_NODE;
		return (k = component(k, out->node)) && !*k && k[-1] != '/' ? 0 : -EINVAL;
	}
	if (strcmp(word, "incident"))
		return -EINVAL;
	if (!*k) {
		out->kind = K_INCIDENT;
		return k[-1] == '/' ? -EINVAL : 0;
	}
	if (!(k = component(k, out->id)) || !(k = component(k, word)))
		return -EINVAL;
	if (strcmp(word, "step") || *k || k[-1] == '/')
		return -EINVAL;
	out->kind = K_STEP;
	return 0;
}

static char *key_of(const char *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *key_of(const char *job, const char *fmt, ...)
{
	char tail[3 * HBM_CLUSTER_NAME_LEN + 32], *k;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	if (asprintf(&k, CL_PREFIX_V1 "jobs/%s/%s", job, tail) < 0)
		return NULL;
	return k;
}

/* ---- values ---- */

/* A JSON object of at most @max bytes, nothing after it; NULL if not. */
static struct json_object *value_parse(const struct etcd_kv *kv, size_t max)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (kv->value_len > max || strlen(kv->value) != kv->value_len)
		return NULL;
	tok = json_tokener_new_ex(4);
	if (!tok)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, kv->value, kv->value_len);
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
		  json_tokener_get_parse_end(tok) != kv->value_len ||
		  !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	} else if (!o && json_tokener_get_error(tok) == json_tokener_continue) {
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* A string field: @required, at most @size - 1 bytes of printable ASCII. */
static int str_field(struct json_object *o, const char *field, bool required, char *out,
		     size_t size)
{
	struct json_object *f;
	const char *s;

	out[0] = 0;
	if (!json_object_object_get_ex(o, field, &f))
		return required ? -EINVAL : 0;
	if (!json_object_is_type(f, json_type_string) ||
	    (size_t)json_object_get_string_len(f) >= size)
		return -EINVAL;
	for (s = json_object_get_string(f); *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return -EINVAL;
	strcpy(out, json_object_get_string(f));
	return 0;
}

/* ---- transactions ---- */

static struct cl_action *txn(struct cl_core *c, struct job *j, enum cl_txn_kind kind,
			     const struct etcd_cmp *cmp, size_t nr_cmp, const struct etcd_op *ops,
			     size_t nr_ops)
{
	struct cl_action *a;
	char *body = etcd_txn_body(cmp, nr_cmp, ops, nr_ops);

	if (!body || !(a = push(c, CL_TXN, j))) {
		free(body);
		j->retry_at = 1;	/* at the next tick */
		return NULL;
	}
	a->txn = kind;
	a->body = body;
	j->inflight |= 1U << kind;
	return a;
}

static char *json_text(struct json_object *o)
{
	char *s = o ? strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : NULL;

	json_object_put(o);
	return s;
}

static char *step_value(enum cl_step s, uint32_t timeout, const char *reason)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "step", json_object_new_string(step_names[s]));
	json_object_object_add(o, "timeout", json_object_new_int64(timeout));
	if (reason)
		json_object_object_add(o, "reason", json_object_new_string(reason));
	return json_text(o);
}

static void publish(struct cl_core *c, struct job *j)
{
	char *k = key_of(j->name, "nodes/%s", c->node);
	struct etcd_op op = { .kind = ETCD_PUT, .key = k, .value = j->value, .lease = c->lease };

	if (k)
		txn(c, j, CL_TXN_PUBLISH, NULL, 0, &op, 1);
	free(k);
}

/* Not with a publication in flight: etcd may take the two in either order. */
static void leave(struct cl_core *c, struct job *j)
{
	char *k = key_of(j->name, "nodes/%s", c->node);
	struct etcd_op op = { .kind = ETCD_DELETE, .key = k };

	if (k)
		txn(c, j, CL_TXN_LEAVE, NULL, 0, &op, 1);
	free(k);
}

static void open_incident(struct cl_core *c, struct job *j)
{
	struct json_object *o = json_object_new_object(), *nodes = json_object_new_array();
	char *inc = key_of(j->name, "incident"), *step = NULL, *v = NULL, *sv = NULL;
	struct etcd_cmp cmp;
	size_t i;

	if (!o || !nodes || !inc) {
		json_object_put(nodes);
		goto out;
	}
	for (i = 0; i < j->nr_nodes; i++)
		json_object_array_add(nodes, json_object_new_string(j->nodes[i]));
	json_object_object_add(o, "id", json_object_new_string(j->want_id));
	json_object_object_add(o, "opener", json_object_new_string(c->node));
	json_object_object_add(o, "reason", json_object_new_string(j->want_reason));
	json_object_object_add(o, "rank", json_object_new_int64(j->want_rank));
	json_object_object_add(o, "nodes", nodes);
	v = json_text(o);
	o = NULL;
	step = key_of(j->name, "incident/%s/step", j->want_id);
	sv = step_value(CL_PAUSE, c->t.step[CL_PAUSE], NULL);
	if (v && step && sv) {
		struct etcd_op ops[] = {
			{ .kind = ETCD_PUT, .key = inc, .value = v },
			{ .kind = ETCD_PUT, .key = step, .value = sv },
		};

		cmp = (struct etcd_cmp){ .key = inc, .target = ETCD_CREATE, .result = ETCD_EQUAL };
		txn(c, j, CL_TXN_OPEN, &cmp, 1, ops, 2);
	}
out:
	json_object_put(o);
	free(inc);
	free(step);
	free(v);
	free(sv);
}

/* The step key changes only from the step this node read: compare-and-swap. */
static void set_step(struct cl_core *c, struct job *j, enum cl_txn_kind kind, enum cl_step s,
		     const char *reason)
{
	char *k = key_of(j->name, "incident/%s/step", j->id);
	char *v = step_value(s, c->t.step[s], reason);
	struct etcd_cmp cmp = { .key = k, .target = ETCD_MOD, .result = ETCD_EQUAL,
				.v = j->step_mod_rev };
	struct etcd_op op = { .kind = ETCD_PUT, .key = k, .value = v };
	struct cl_action *a = k && v ? txn(c, j, kind, &cmp, 1, &op, 1) : NULL;

	if (a)
		a->from_rev = j->step_mod_rev;
	free(k);
	free(v);
}

static char *acks_of(const struct job *j)
{
	char *k;

	return asprintf(&k, CL_ACKS_V1 "%s/%s/", j->name, j->id) < 0 ? NULL : k;
}

/*
 * @step_rev: the step key's mod_revision compared, 0 for none there: etcd
 * compares a key that is not there as a KeyValue of zeros (applyCompare(),
 * etcdserver/apply.go, 3.4).  A step key there is this incident's (its id
 * in its name).  None there, another incident that a store restored from a
 * snapshot opened at the same create_revision compares equal as well: the
 * incident key as last read tells them apart (inc_key_seen()).
 */
static void close_incident(struct cl_core *c, struct job *j, int64_t step_rev)
{
	char *step = key_of(j->name, "incident/%s/step", j->id);
	char *inc = key_of(j->name, "incident");
	char *sub = key_of(j->name, "incident/%s/", j->id);
	char *acks = acks_of(j);
	struct etcd_cmp cmp[] = {
		{ .key = inc, .target = ETCD_CREATE, .result = ETCD_EQUAL, .v = j->create_rev },
		{ .key = step, .target = ETCD_MOD, .result = ETCD_EQUAL, .v = step_rev },
		{ .key = inc, .target = ETCD_MOD, .result = ETCD_EQUAL, .v = j->inc_mod },
	};
	struct etcd_op ops[] = {
		{ .kind = ETCD_DELETE, .key = inc },
		{ .kind = ETCD_DELETE_PREFIX, .key = sub },
		{ .kind = ETCD_DELETE_PREFIX, .key = acks },
	};
	struct cl_action *a = NULL;

	if (j->inc_value)
		cmp[2] = (struct etcd_cmp){ .key = inc, .target = ETCD_VALUE, .result = ETCD_EQUAL,
					    .value = j->inc_value, .value_len = j->inc_value_len };
	if (step && inc && sub && acks)
		a = txn(c, j, CL_TXN_CLOSE, cmp, step_rev ? 2 : 3, ops, 3);
	if (a) {
		a->from_rev = step_rev;
		a->inc_mod = j->inc_mod;
	}
	free(step);
	free(inc);
	free(sub);
	free(acks);
}

static uint64_t realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ack(struct cl_core *c, struct job *j, enum cl_step s)
{
	char *inc = key_of(j->name, "incident");
	uint64_t at = realtime_ms();
	char *k = NULL;
	char v[64];

	if (asprintf(&k, CL_ACKS_V1 "%s/%s/%s/%s", j->name, j->id, step_names[s], c->node) < 0)
		k = NULL;
	snprintf(v, sizeof(v), "{\"at\":%" PRIu64 "}", at);
	if (inc && k) {
		struct etcd_cmp cmp = { .key = inc, .target = ETCD_CREATE, .result = ETCD_EQUAL,
					.v = j->create_rev };
		struct etcd_op op = { .kind = ETCD_PUT, .key = k, .value = v };

		struct cl_action *a = txn(c, j, CL_TXN_ACK, &cmp, 1, &op, 1);

		if (a) {
			a->step = s;	/* answered: acked */
			a->at = at;
		}
	}
	free(inc);
	free(k);
}

/* ---- what is to do ---- */

static void local(struct cl_core *c, struct job *j, enum cl_step s, const char *why)
{
	struct cl_action *a = push(c, CL_LOCAL, j);

	if (!a)
		return;
	a->step = s;
	snprintf(a->text, sizeof(a->text), "%s", why ? why : "");
	j->asked = s;
}

/* The ranks here told to abort by this node's decision, not etcd's step. */
static void abort_here(struct cl_core *c, struct job *j, const char *why, uint64_t now)
{
	local(c, j, CL_ABORT, why);
	j->local_aborted = true;
	j->aborted_at = now;
}

static void escalate(struct cl_core *c, struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void escalate(struct cl_core *c, struct job *j, const char *fmt, ...)
{
	va_list ap;

	if (j->escalate[0] || (j->step_known && j->step == CL_ABORT))
		return;		/* the first reason is the one told */
	va_start(ap, fmt);
	vsnprintf(j->escalate, sizeof(j->escalate), fmt, ap);
	va_end(ap);
	say(c, j, LOG_ERR, "job %s: incident %s: aborting: %s", j->name, j->id, j->escalate);
}

static bool all_acked(const struct job *j, enum cl_step s)
{
	for (size_t i = 0; i < j->nr_parts; i++)
		if (!(j->parts[i].acked & 1U << s) &&
		    (s != CL_ABORT || node_alive(j, j->parts[i].name)))
			return false;
	return true;
}

#define BUSY(j, k)	((j)->inflight & 1U << (k))

/* The read again asked, once due. */
static void reread_if_due(struct cl_core *c, uint64_t now)
{
	if (!c->reread_due || now < c->reread_due || !push(c, CL_REREAD, NULL))
		return;
	c->reread_due = 0;
	c->reread_at = now;
}

/* A read again of the prefix, REREAD_MIN_US after the last at the soonest. */
static void reread_soon(struct cl_core *c, uint64_t now)
{
	if (!c->reread_due)
		c->reread_due = c->reread_at && now < c->reread_at + REREAD_MIN_US ?
				c->reread_at + REREAD_MIN_US : now;
}

/*
 * Whether the incident's step key is as this node took it: else (none read,
 * deleted since, or a value refused here: another writer's doing, as the
 * opener writes the two at once and every change compares the key) no
 * change of ours to it can hold, and no step comes of it again.
 */
static bool step_writable(const struct job *j)
{
	return j->step_known && j->step_key_rev == j->step_mod_rev;
}

/*
 * The ranks here have what they get of a wedged incident: an abort, or
 * their resume (told: a resume read and not told them is not theirs).
 */
static bool wedged_ended_here(const struct job *j)
{
	return j->local_aborted || j->asked == CL_ABORT || j->asked == CL_RESUME;
}

/*
 * When a wedged incident has something to do here.  The ranks' abort,
 * with etcd or not: at the step's deadline, or with no step read the
 * pause deadline from when the incident was read; told nothing yet, the
 * pause deadline from the error here it answers, if sooner (as for an
 * error not opened, with the timeouts as they are now).  Then its close,
 * with etcd, none in flight (its answer runs process() again).
 */
static uint64_t wedged_due(const struct cl_core *c, const struct job *j)
{
	uint64_t pause = c->t.step[CL_PAUSE] * 1000000ULL, due;

	if (!wedged_ended_here(j)) {
		due = j->step_known ? j->deadline : j->read_at + pause;
		/* told nothing yet (a step read while process() was held, or none) */
		if (j->error_at && j->asked < 0 && j->error_at + pause < due)
			due = j->error_at + pause;
		return due;
	}
	if (!c->link || BUSY(j, CL_TXN_CLOSE))
		return UINT64_MAX;
	if (j->close_at)	/* sent: again if no answer closes it */
		return j->close_at;
	/* aborted here, an abort's timeout from then, whatever decided it; resumed, the resume's */
	return j->local_aborted ? j->aborted_at + c->t.step[CL_ABORT] * 1000000ULL : j->deadline;
}

/*
 * An incident whose step key is not writable asks nothing more of the
 * ranks here, and no abort can be written to it: they abort at once on an
 * abort decided here, else at the step's deadline (the pause's from when
 * the incident was read, if no step was), as a step's deadline aborts
 * them; resumed ones are left resumed.  An abort's timeout after that, a
 * node closes it, comparing the step key as it last saw it: else the key
 * would block every open of the job, and a node whose change was refused
 * would wait for one at every RETRY_US without end.
 */
static void wedged(struct cl_core *c, struct job *j, uint64_t now)
{
	bool aborted = j->local_aborted || j->asked == CL_ABORT;
	bool abort_read = j->step_known && j->step == CL_ABORT;	/* not told: held by a retry */

	/* (an abort decided here aborts even resumed ranks, as with a step) */
	if (!aborted && (j->escalate[0] || abort_read ||
			 (!wedged_ended_here(j) && now >= wedged_due(c, j)))) {
		/* (written, should its step key be one again) */
		escalate(c, j, "the incident's step %s", j->step_known ?
			 "changed by another writer" : "not read by the pause deadline");
		abort_here(c, j, j->escalate[0] ? j->escalate : abort_read ? j->reason :
			   "the incident's step changed by another writer", now);
		return;
	}
	if (!j->local_aborted && j->asked == CL_ABORT) {
		/* told to abort elsewhere (cl_error(), a step read): its close an abort's timeout on */
		j->local_aborted = true;
		j->aborted_at = now;
	}
	if (!wedged_ended_here(j) || now < wedged_due(c, j))
		return;
	if (j->close_refused) {	/* and the watch has brought nothing since */
		reread_soon(c, now);
		reread_if_due(c, now);
	}
	say(c, j, LOG_WARNING, "job %s: incident %s: its step key %s: closing it",
	    j->name, j->id, j->step_key_rev ? "not one this node takes" : "gone");
	close_incident(c, j, j->step_key_rev);
	j->close_at = now + RETRY_US;	/* and again, until etcd says it changed */
}

static void process(struct cl_core *c, struct job *j, uint64_t now)
{
	if (j->retry_at && now < j->retry_at)
		return;
	j->retry_at = 0;
	if (j->value && !j->published && !j->held_by_other && c->lease && c->link &&
	    !BUSY(j, CL_TXN_PUBLISH) && !BUSY(j, CL_TXN_LEAVE))
		publish(c, j);
	if (j->leaving && c->link && !BUSY(j, CL_TXN_LEAVE) && !BUSY(j, CL_TXN_PUBLISH))
		leave(c, j);
	if (j->want_open && j->open) {
		j->want_open = false;
		if (strcmp(j->id, j->want_id) && j->member)
			escalate(c, j, "a second error on node %s (%s)", c->node, j->want_reason);
		else if (j->want_fail[0] && j->member)
			escalate(c, j, "node %s: %s", c->node, j->want_fail);
		else if (!strcmp(j->id, j->want_id) && j->member)
			j->error_at = j->want_since;	/* its pause deadline holds, its step not read */
		else {
			/* its ranks here cannot follow an incident that does not wait for them */
			say(c, j, LOG_ERR, "job %s: incident %s is open without this node: its error (%s) aborts its ranks here",
			    j->name, j->id, j->want_reason);
			local(c, j, CL_ABORT, "the job's incident is open without this node");
		}
	}
	/*
	 * Opened once this node's key is there (the incident's nodes include
	 * it) and the watch has brought every node of the job (their ranks
	 * make up the world), while the rank lost is of that world: its ranks
	 * here registered again since, with a smaller one, every node would
	 * refuse the incident, this one too, and none would ever close it (its
	 * key would block every open of the job).  Not by the pause deadline:
	 * without etcd, or without every rank's node known, its ranks cannot
	 * recover together and this node's abort (a job never hangs on etcd,
	 * nor waits for a node it does not know).
	 */
	if (j->open_retry_at && now >= j->open_retry_at)
		j->open_retry_at = 0;	/* due: a deadline past would fire every turn (helper-185) */
	if (j->want_open && c->link && !BUSY(j, CL_TXN_OPEN) && c->synced >= j->open_answered_rev &&
	    !j->open_retry_at && node_alive(j, c->node) && world_known(j) &&
	    j->want_rank < j->world) {
		open_incident(c, j);
	} else if (j->want_open && !BUSY(j, CL_TXN_OPEN) &&
		   now >= j->want_since + c->t.step[CL_PAUSE] * 1000000ULL) {
		const char *why = !c->link ? "etcd unreachable" :
				  !node_alive(j, c->node) ? "this node's ranks not published" :
				  !world_known(j) && j->held_by_other ? "this node's name taken by another" :
				  !world_known(j) ? "not every rank's node known" :
				  j->want_rank >= j->world ? "its lost rank not in the job's world" :
				  "another incident's end not seen";
		struct cl_action *a;

		say(c, j, LOG_ERR, "job %s: its incident not opened by the pause deadline after an error (%s): %s: aborting this node's ranks",
		    j->name, j->want_reason, why);
		j->want_open = false;
		a = push(c, CL_LOCAL, j);
		if (a) {
			a->step = CL_ABORT;	/* of no incident: nothing asked of one */
			/* short: the local incident's reason, which hbmctl shows, keeps 63 characters */
			snprintf(a->text, sizeof(a->text), "not opened across nodes: %s", why);
		}
	}
	if (!j->open || !j->member)
		return;
	if (!step_writable(j)) {
		wedged(c, j, now);
		return;
	}
	/* an abort this node decided is its ranks' at once, not after etcd's round trip */
	if (j->escalate[0] && !j->local_aborted && j->asked != CL_ABORT)
		abort_here(c, j, j->escalate, now);
	/* the local ranks follow the step this node read */
	if (j->asked < (int)j->step && !j->local_aborted)
		local(c, j, j->step, j->step == CL_ABORT ? j->reason : NULL);
	if (!c->link) {
		if (now >= j->deadline && !j->local_aborted && j->step != CL_ABORT) {
			say(c, j, LOG_ERR, "job %s: incident %s: etcd unreachable past the deadline of %s: aborting this node's ranks",
			    j->name, j->id, step_names[j->step]);
			abort_here(c, j, "etcd unreachable past a step's deadline", now);
			escalate(c, j, "node %s could not reach etcd past the deadline of %s", c->node,
				 step_names[j->step]);
			/*
			 * The abort is written when etcd is back; a close of an
			 * incident wedged meanwhile, an abort's timeout on.
			 */
			j->deadline = now + c->t.step[CL_ABORT] * 1000000ULL;
		}
		return;
	}
	/*
	 * A change of ours from the step read is answered, taken or refused:
	 * the watch brings what follows, and nothing is sent meanwhile.  Not
	 * brought by the step's deadline, the watch is behind (the link up,
	 * its events lost): this node's ranks do not wait on it (resumed ones
	 * are left resumed), and the deadline moves on rather than fire on
	 * every turn of the loop.
	 */
	if (j->changed_from == j->step_mod_rev) {
		if (now < j->deadline)
			return;
		j->deadline = now + RETRY_US;
		if (!j->local_aborted && j->step != CL_ABORT && j->step != CL_RESUME) {
			say(c, j, LOG_ERR, "job %s: incident %s: etcd answered this node's change of %s, its watch has not brought what followed by the deadline: aborting this node's ranks",
			    j->name, j->id, step_names[j->step]);
			abort_here(c, j, "the watch of etcd behind past a step's deadline", now);
			escalate(c, j, "node %s: its watch of etcd behind past the deadline of %s",
				 c->node, step_names[j->step]);
		}
		return;
	}
	if (j->escalate[0] && j->step != CL_ABORT && !BUSY(j, CL_TXN_ABORT)) {
		set_step(c, j, CL_TXN_ABORT, CL_ABORT, j->escalate);
		return;
	}
	if (j->done == (int)j->step && !(j->acked & 1U << j->step) && !BUSY(j, CL_TXN_ACK))
		ack(c, j, j->step);
	/* the opener alone hears the acknowledgements: N, not N x N, events a step */
	if (!strcmp(j->opener, c->node) && !j->watching) {
		struct cl_action *a = push(c, CL_WATCH, j);
		char *acks = acks_of(j);

		if (a && acks) {
			snprintf(a->text, sizeof(a->text), "%s", acks);
			j->watching = true;
		}
		free(acks);
	}
	if (!strcmp(j->opener, c->node) && all_acked(j, j->step) &&
	    !BUSY(j, CL_TXN_ADVANCE) && !BUSY(j, CL_TXN_CLOSE)) {
		if (j->step == CL_RESUME || j->step == CL_ABORT)
			close_incident(c, j, j->step_mod_rev);
		else
			set_step(c, j, CL_TXN_ADVANCE, j->step + 1, NULL);
		return;
	}
	if (now >= j->deadline) {
		j->deadline = now + RETRY_US;	/* and again, until etcd says it changed */
		if (j->step == CL_ABORT) {
			if (!BUSY(j, CL_TXN_CLOSE))
				close_incident(c, j, j->step_mod_rev);
		} else {
			char late[CL_REASON_LEN] = "";
			size_t n = 0;

			for (size_t i = 0; i < j->nr_parts && n < sizeof(late) &&
			     !strcmp(j->opener, c->node); i++)
				if (!(j->parts[i].acked & 1U << j->step))
					n += snprintf(late + n, sizeof(late) - n, "%s%s", n ? " " : "",
						      j->parts[i].name);
			escalate(c, j, "the deadline of %s passed%s%s", step_names[j->step],
				 late[0] ? ", waiting for " : "", late);
			if (!BUSY(j, CL_TXN_ABORT))
				set_step(c, j, CL_TXN_ABORT, CL_ABORT, j->escalate);
		}
	}
}

static void process_all(struct cl_core *c, uint64_t now)
{
	reread_if_due(c, now);
	for (size_t i = 0; i < c->nr_jobs; i++)
		process(c, c->jobs[i], now);
}

/* ---- what etcd says ---- */

/* As written: the opener hears all. */
static void acked(struct member *m, enum cl_step s, uint64_t at)
{
	if (m && !(m->acked & 1U << s)) {
		m->acked |= 1U << s;
		m->acked_at[s] = at;
	}
}

/* @node's part in a closed incident kept, or NULL. */
static struct member *closed_part(struct cl_core *c, const char *job, const char *id,
				  const char *node)
{
	for (size_t k = 0; k < c->nr_closed; k++) {
		struct closed_incident *x = &c->closed[k];

		if (strcmp(x->job, job) || strcmp(x->id, id))
			continue;
		for (size_t p = 0; p < x->nr_parts; p++)
			if (!strcmp(x->parts[p].name, node))
				return &x->parts[p];
	}
	return NULL;
}

/* Its view kept, its parts taken from it. */
static void keep_closed(struct cl_core *c, struct job *j, enum cl_step last)
{
	struct closed_incident *k = &c->closed[c->closed_next];

	free(k->parts);
	strcpy(k->job, j->name);
	strcpy(k->id, j->id);
	strcpy(k->opener, j->opener);
	k->step = last;
	k->failed_rank = j->failed_rank;
	memcpy(k->step_at, j->step_at, sizeof(k->step_at));
	k->parts = j->parts;
	k->nr_parts = j->nr_parts;
	j->parts = NULL;
	j->nr_parts = 0;
	c->closed_next = (c->closed_next + 1) % CLOSED_KEPT;
	if (c->nr_closed < CLOSED_KEPT)
		c->nr_closed++;
}

static void incident_gone(struct cl_core *c, struct job *j)
{
	struct cl_action *a;
	bool resumed = j->step_known && j->step == CL_RESUME && j->done == CL_RESUME;

	if (j->member) {
		if (!resumed && !j->local_aborted && j->asked != CL_ABORT)
			local(c, j, CL_ABORT, "the incident closed before this node resumed");
		a = push(c, CL_CLOSED, j);
		if (a)
			a->step = resumed ? CL_RESUME : CL_ABORT;
		say(c, j, resumed ? LOG_INFO : LOG_WARNING, "job %s: incident %s %s", j->name, j->id,
		    resumed ? "resumed on every node" : "aborted");
		if (j->step_known)	/* else nothing of it was seen here to show */
			keep_closed(c, j, resumed ? CL_RESUME : CL_ABORT);
	}
	if (j->watching) {
		struct cl_action *u = push(c, CL_UNWATCH, j);
		char *acks = acks_of(j);

		if (u && acks)
			snprintf(u->text, sizeof(u->text), "%s", acks);
		free(acks);
	}
	free(j->parts);
	j->parts = NULL;
	j->nr_parts = 0;
	free(j->inc_value);
	j->inc_value = NULL;
	j->acked = 0;
	memset(j->step_at, 0, sizeof(j->step_at));
	j->open = j->member = j->step_known = j->local_aborted = j->watching = false;
	j->id[0] = j->opener[0] = j->reason[0] = j->escalate[0] = 0;
	j->asked = j->done = -1;
	j->inflight &= ~(1U << CL_TXN_ACK | 1U << CL_TXN_ADVANCE | 1U << CL_TXN_ABORT |
			 1U << CL_TXN_CLOSE);
}

/*
 * A key as the journal may show it: 128 bytes at most, anything unprintable
 * as '?'; in a read, REFUSED_SHOWN of them; else REFUSED_BURST a while.
 */
static void refuse(struct cl_core *c, const struct etcd_kv *kv, const char *why)
{
	uint64_t missed = 0;
	char key[129];
	size_t i;

	for (i = 0; i < kv->key_len && i < sizeof(key) - 1; i++)
		key[i] = kv->key[i] >= 0x20 && kv->key[i] < 0x7f ? kv->key[i] : '?';
	key[i] = 0;
	if (c->reading && c->refused_shown++ >= REFUSED_SHOWN) {
		c->refused_hidden++;
		return;
	}
	if (!c->reading && !hbm_ratelimit(&c->refusals, REFUSED_INTERVAL_US, REFUSED_BURST,
					  c->applied_at, &missed))
		return;
	if (missed)
		say(c, NULL, LOG_WARNING, "etcd: %" PRIu64 " more keys refused, not shown", missed);
	say(c, NULL, LOG_WARNING, "etcd: %s%s (revision %" PRId64 "): refused: %s", key,
	    kv->key_len > 128 ? "..." : "", kv->mod_revision, why);
}

/*
 * This node's key of @j put: by this daemon (under its lease, or a put of
 * the lease before taken late), or by another writer after it was ours.
 * A writer's key stands (two daemons of one name would write it in turn
 * without end): this node's is put once again when that writer is new
 * here, so that a second daemon of the name hears of the first and says
 * so too, and then only for a change of its own (cl_job_join()).  A daemon
 * started again within LeaseTTL reads its old key under the old lease, but
 * before any put of its own: not another writer.
 */
static void own_key_put(struct cl_core *c, struct job *j, const struct etcd_kv *kv)
{
	char who[HBM_CLUSTER_NAME_LEN + 80];
	unsigned int i;

	if (kv->lease && (kv->lease == c->lease || kv->lease == c->old_lease)) {
		j->held_by_other = false;
		if (kv->lease != c->lease)
			return;		/* goes with that lease; put again under this one */
		j->ours_rev = kv->mod_revision;
		/* what this node last asked etcd to hold */
		if (j->value && kv->value_len == strlen(j->value) &&
		    !memcmp(kv->value, j->value, kv->value_len))
			j->published = true;
		return;
	}
	if (!j->ours_rev || kv->mod_revision <= j->ours_rev)
		return;
	j->published = false;
	j->held_by_other = true;
	for (i = 0; i < j->nr_writers && j->writers[i] != kv->lease; i++)
		;
	if (i < j->nr_writers || i == sizeof(j->writers) / sizeof(j->writers[0]))
		return;
	j->writers[j->nr_writers++] = kv->lease;
	j->held_by_other = false;	/* put over once: the writer hears of this node */
	if (kv->lease)
		snprintf(who, sizeof(who), "another hbmguardd named %s? Give each node its own [Cluster] Node=",
			 c->node);
	else
		snprintf(who, sizeof(who), "an etcd user's (a daemon's puts are under its lease)");
	say(c, j, LOG_ERR, "job %s: this node's key (nodes/%s) put by another writer (lease %" PRIx64 ", this node's %" PRIx64 ") after this node's: %s; while it holds the key, the job's incidents may not recover",
	    j->name, c->node, (uint64_t)kv->lease, (uint64_t)c->lease, who);
}

static void put_node(struct cl_core *c, const struct key *k, const struct etcd_kv *kv)
{
	struct json_object *o = value_parse(kv, CL_VALUE_MAX);
	uint32_t *rank = NULL;
	int64_t ranks = o ? ranks_of(o, NULL, &rank) : -EINVAL;
	const char *why = NULL;
	struct job *j = NULL;
	size_t i = 0;

	json_object_put(o);
	if (ranks == -ENOMEM)
		return refuse(c, kv, "out of memory");
	if (ranks < 0)
		return refuse(c, kv, "not a node's value ({\"ranks\": [...], each once, \"world_size\": N})");
	if (!ranks)
		why = "a node with no rank of the job";
	else if (!(j = job_get(c, k->job, false)))
		why = "too many jobs", c->crowded = true;
	for (; j && i < j->nr_nodes && strcmp(j->nodes[i], k->node); i++)
		;
	if (j && j->nr_ranks - (i < j->nr_nodes ? j->ranks[i].nr : 0) + ranks > CL_MAX_RANKS)
		why = "too many ranks in the job";
	else if (j && i == j->nr_nodes && j->nr_nodes == CL_MAX_NODES)
		why = "too many nodes in the job";
	if (why) {
		free(rank);
		return refuse(c, kv, why);
	}
	j->world_dirty = true;
	if (i < j->nr_nodes) {		/* a node's ranks of the job changed */
		j->nr_ranks -= j->ranks[i].nr;
		j->nr_ranks += ranks;
		free(j->ranks[i].rank);
		j->ranks[i] = (struct node_ranks){ rank, ranks };
		goto known;
	}
	if (j->nr_nodes == j->cap_nodes) {
		size_t cap = j->cap_nodes ? 2 * j->cap_nodes : 8;
		void *n = reallocarray(j->nodes, cap, sizeof(*j->nodes));
		void *r = n ? reallocarray(j->ranks, cap, sizeof(*j->ranks)) : NULL;

		if (n)
			j->nodes = n;
		if (r)
			j->ranks = r;
		if (!r) {
			free(rank);
			return refuse(c, kv, "out of memory");
		}
		j->cap_nodes = cap;
	}
	j->ranks[j->nr_nodes] = (struct node_ranks){ rank, ranks };
	j->nr_ranks += ranks;
	strcpy(j->nodes[j->nr_nodes++], k->node);
known:
	if (!strcmp(k->node, c->node))
		own_key_put(c, j, kv);
}

static void delete_node(struct cl_core *c, struct job *j, const char *node)
{
	size_t i;

	for (i = 0; i < j->nr_nodes && strcmp(j->nodes[i], node); i++)
		;
	if (i == j->nr_nodes)
		return;
	memmove(j->nodes[i], j->nodes[i + 1], (j->nr_nodes - i - 1) * sizeof(*j->nodes));
	j->nr_ranks -= j->ranks[i].nr;
	j->world_dirty = true;
	free(j->ranks[i].rank);
	memmove(&j->ranks[i], &j->ranks[i + 1], (j->nr_nodes - i - 1) * sizeof(*j->ranks));
	j->nr_nodes--;
	if (!strcmp(node, c->node)) {
		j->published = false;
		j->ours_rev = 0;
		j->nr_writers = 0;
		j->held_by_other = false;
	}
	if (j->open && j->member && part(j, node))
		escalate(c, j, "node %s left the job (its lease ended)", node);
	job_gc(c, j);
}

/*
 * The incident's step key as seen now (its mod_revision, 0 none): a close
 * refused for the key as it was is paced and read again for no more.
 */
static void step_key_seen(struct job *j, int64_t rev)
{
	j->step_key_rev = rev;
	j->close_refused = false;
	j->close_at = 0;
}

/*
 * A lost rank out of the world the ranks here registered with, when the
 * incident is read or when they register again: they cannot restore it,
 * and the incident is aborted, not refused.  Every node may read one so
 * (the ranks here registered again, with a smaller world, while its open
 * was on the way): refused by all, it would never close, and its key would
 * block every open of the job.
 */
static void lost_rank_in_world(struct cl_core *c, struct job *j)
{
	if (j->open && j->member && j->value && j->failed_rank >= j->world)
		escalate(c, j, "its lost rank %" PRIu32 " is not of the job's world on node %s (%" PRIu32 ")",
			 j->failed_rank, c->node, j->world);
}

/*
 * The key of the incident known, put again: etcd keeps a key's
 * create_revision and counts its version up when it is put again (put() in
 * mvcc/kvstore_txn.go, v3.4.23).  A key created anew at the same
 * create_revision (a store restored from a snapshot) is at version 1.
 */
static bool put_over(const struct job *j, const struct etcd_kv *kv)
{
	return j->open && kv->create_revision == j->create_rev && kv->version > 1;
}

/*
 * The incident key of a member as read now, its create_revision the
 * incident's: what a close with no step key compares, so that it deletes no
 * other incident a store restored from a snapshot opened at that
 * create_revision, unread here.  As created (version 1) the other differs in
 * its value, kept (an incident's: CL_INCIDENT_MAX at most); put over since
 * (put_over()), in its mod_revision, the put's own.  Not told apart: a put
 * over the other read here first (put_over() cannot tell whose key it put
 * over: a writer may put any value over this one's), or no memory for the
 * value (the mod_revision compared, the create_revision's then).
 */
static void inc_key_seen(struct job *j, const struct etcd_kv *kv)
{
	if (kv->mod_revision != j->inc_mod) {	/* a close refused for the key as it was: again */
		j->close_refused = false;
		j->close_at = 0;
	}
	free(j->inc_value);
	j->inc_value = NULL;
	j->inc_mod = kv->mod_revision;
	if (kv->version == 1 && (j->inc_value = malloc(kv->value_len + 1))) {
		memcpy(j->inc_value, kv->value, kv->value_len);
		j->inc_value_len = kv->value_len;
	}
}

static void put_incident(struct cl_core *c, const struct key *k, const struct etcd_kv *kv,
			 uint64_t now)
{
	struct json_object *o = value_parse(kv, CL_INCIDENT_MAX), *nodes, *rank;
	char id[HBM_CLUSTER_NAME_LEN], opener[HBM_CLUSTER_NAME_LEN], reason[CL_REASON_LEN];
	struct job *j = job_find(c, k->job);
	struct member *parts = NULL;
	size_t n = 0, i, m;
	uint32_t failed;

	/* what a close of the incident known compares now, whatever else is refused */
	if (j && put_over(j, kv) && j->member)
		inc_key_seen(j, kv);
	if (!j) {
		json_object_put(o);
		return refuse(c, kv, "an incident of a job no node has published");
	}
	if (!o || str_field(o, "id", true, id, sizeof(id)) || !hbm_cluster_name_valid(id) ||
	    str_field(o, "opener", true, opener, sizeof(opener)) || !hbm_cluster_name_valid(opener) ||
	    str_field(o, "reason", false, reason, sizeof(reason)) ||
	    !json_object_object_get_ex(o, "rank", &rank) ||
	    !json_object_is_type(rank, json_type_int) || json_object_get_int64(rank) < 0 ||
	    json_object_get_int64(rank) >= (int64_t)UINT32_MAX ||
	    !json_object_object_get_ex(o, "nodes", &nodes) ||
	    !json_object_is_type(nodes, json_type_array) ||
	    !(n = json_object_array_length(nodes)) || n > CL_MAX_NODES) {
		json_object_put(o);
		return refuse(c, kv, "not an incident's value");
	}
	failed = json_object_get_int64(rank);
	if (j->open && kv->create_revision == j->create_rev && !strcmp(id, j->id)) {
		json_object_put(o);
		/* the same incident written again (or restored to before a put over) */
		if (j->member)
			inc_key_seen(j, kv);
		return;
	}
	if (!j->nr_nodes) {
		json_object_put(o);
		return refuse(c, kv, "an incident of a job no node has published");
	}
	/*
	 * Another id at the create_revision of the one known.  Put over it
	 * (version past 1: put_over()), a writer's doing, refused: the
	 * incident goes on.  Created (version 1), a store restored from a
	 * snapshot, whose revisions began again below those read here, opened
	 * another since: it replaces the one known, whose close would compare
	 * its create_revision, and delete it (helper-197).
	 */
	if (put_over(j, kv)) {
		json_object_put(o);
		return refuse(c, kv, "an incident's id changed under it");
	}
	parts = calloc(n, sizeof(*parts));
	for (i = 0; parts && i < n; i++) {
		struct json_object *e = json_object_array_get_idx(nodes, i);

		if (!json_object_is_type(e, json_type_string) ||
		    !hbm_cluster_name_valid(json_object_get_string(e)))
			break;
		strcpy(parts[i].name, json_object_get_string(e));
		for (m = 0; m < i && strcmp(parts[m].name, parts[i].name); m++)
			;
		if (m < i)
			break;
	}
	json_object_put(o);
	if (!parts || i < n) {
		free(parts);
		return refuse(c, kv, "an incident's nodes are not distinct node names");
	}
	for (m = 0; m < n && strcmp(parts[m].name, opener); m++)
		;
	if (m == n) {
		free(parts);
		return refuse(c, kv, "an incident whose opener is not one of its nodes");
	}
	if (j->open)	/* deleted and created again between two reads */
		incident_gone(c, j);
	/* a new incident: nothing of this node's part in an earlier one stands */
	j->asked = j->done = -1;
	j->acked = 0;
	j->local_aborted = false;
	j->escalate[0] = 0;
	j->open = true;
	j->incident = ++c->incidents_read;
	j->step_mod_rev = 0;
	step_key_seen(j, 0);
	strcpy(j->id, id);
	strcpy(j->opener, opener);
	j->create_rev = kv->create_revision;
	j->failed_rank = failed;
	j->parts = parts;
	j->nr_parts = n;
	j->member = part(j, c->node) != NULL;
	j->read_at = now;
	j->error_at = 0;
	if (!j->member)
		return;
	inc_key_seen(j, kv);
	say(c, j, LOG_WARNING, "job %s: incident %s opened by %s on %zu nodes: %s", j->name, id,
	    opener, n, reason);
	lost_rank_in_world(c, j);
}

static void put_step(struct cl_core *c, struct job *j, const struct etcd_kv *kv, uint64_t now)
{
	struct json_object *o = value_parse(kv, CL_VALUE_MAX), *t;
	char name[16], reason[CL_REASON_LEN];
	enum cl_step s;
	int64_t timeout;

	step_key_seen(j, kv->mod_revision);
	if (!o || str_field(o, "step", true, name, sizeof(name)) || step_parse(name, &s) ||
	    str_field(o, "reason", false, reason, sizeof(reason)) ||
	    !json_object_object_get_ex(o, "timeout", &t) || !json_object_is_type(t, json_type_int) ||
	    (timeout = json_object_get_int64(t)) < 1 || timeout > 3600) {
		json_object_put(o);
		return refuse(c, kv, "not a step's value");
	}
	json_object_put(o);
	if (j->step_known && (s < j->step || (s == j->step && kv->mod_revision != j->step_mod_rev &&
					      s != CL_ABORT)))
		return refuse(c, kv, "a step that goes back");
	if (!j->step_known || s != j->step) {
		/* the writer's, or this node's own if shorter: no peer holds its ranks longer */
		if (c->t.step[s] && timeout > c->t.step[s])
			timeout = c->t.step[s];
		j->deadline = now + (uint64_t)timeout * 1000000;
		j->step_at[s] = realtime_ms();
	}
	j->step_known = true;
	j->step = s;
	j->step_mod_rev = kv->mod_revision;
	if (s == CL_ABORT) {
		snprintf(j->reason, sizeof(j->reason), "%s", reason);
		if (j->member)
			say(c, j, LOG_ERR, "job %s: incident %s aborted: %s", j->name, j->id, reason);
	}
}

static void put_ack(struct cl_core *c, struct job *j, const struct key *k,
		    const struct etcd_kv *kv)
{
	struct json_object *o = value_parse(kv, CL_VALUE_MAX), *at;
	struct member *m = part(j, k->node);
	int64_t ms;

	if (!o || !json_object_object_get_ex(o, "at", &at) || !json_object_is_type(at, json_type_int)) {
		json_object_put(o);
		return refuse(c, kv, "not an acknowledgement's value");
	}
	ms = json_object_get_int64(at);
	json_object_put(o);
	if (!m)
		return refuse(c, kv, "an acknowledgement of a node not in the incident");
	m->acked |= 1U << k->step;
	m->acked_at[k->step] = ms > 0 ? ms : 0;
}

static void apply(struct cl_core *c, const struct etcd_kv *kv, bool put, uint64_t now)
{
	struct job *j;
	struct key k;
	int err = key_parse(kv->key, &k);

	c->applied_at = now;
	/* (a deletion's event has no create_revision) */
	if (put && (kv->create_revision < 1 || kv->mod_revision < kv->create_revision))
		return refuse(c, kv, "revisions etcd does not give");
	if (err == -EPROTO) {
		if (put)
			refuse(c, kv, "not a key of version 1");
		return;
	}
	if (err)
		return put ? refuse(c, kv, "not a key of the layout (cluster_proto.h)") : (void)0;
	if (k.kind == K_NODE) {
		if (put)
			return put_node(c, &k, kv);
		j = job_find(c, k.job);
		if (j)
			delete_node(c, j, k.node);
		return;
	}
	j = job_find(c, k.job);
	if (k.kind == K_INCIDENT) {
		if (put)
			return put_incident(c, &k, kv, now);
		if (j && j->open && kv->mod_revision > j->create_rev) {
			incident_gone(c, j);
			job_gc(c, j);
		}
		return;
	}
	if (!j || !j->open || strcmp(j->id, k.id))
		return put ? refuse(c, kv, "not of the job's open incident") : (void)0;
	if (!put) {
		/* the incident's own deletion says it ended; its step's alone wedges it */
		if (k.kind == K_STEP)
			step_key_seen(j, 0);
		return;
	}
	if (k.kind == K_STEP)
		put_step(c, j, kv, now);
	else
		put_ack(c, j, &k, kv);
}

static void read_begin(struct cl_core *c)
{
	c->reading = true;
	c->refused_shown = 0;
	c->refused_hidden = 0;
}

static void read_end(struct cl_core *c, const char *prefix)
{
	c->reading = false;
	if (c->refused_hidden)
		say(c, NULL, LOG_WARNING, "etcd: %zu more keys under %s refused in this read (the first %d shown)",
		    c->refused_hidden, prefix, REFUSED_SHOWN);
}

/**
 * cl_snapshot() - what etcd holds under CL_PREFIX, replacing what was known
 * @c: the core
 * @kvs: the keys, as a range of the prefix returned them
 * @n: their number
 * @rev: the revision they are of
 * @now: the time
 *
 * The nodes first, whatever the keys' order: an incident is only taken for
 * a job whose nodes are known.
 */
void cl_snapshot(struct cl_core *c, const struct etcd_kv *kvs, size_t n, int64_t rev, uint64_t now)
{
	struct key k;
	size_t i;

	for (i = 0; i < c->nr_jobs; i++)
		c->jobs[i]->snap_create = 0;
	for (i = 0; i < n; i++) {
		struct job *j;

		if (!key_parse(kvs[i].key, &k) && k.kind == K_INCIDENT && (j = job_find(c, k.job)))
			j->snap_create = kvs[i].create_revision;
	}
	for (i = 0; i < c->nr_jobs; i++) {
		struct job *j = c->jobs[i];

		nodes_clear(j);
		/*
		 * ours_rev kept: another writer's put after it, read now, is
		 * one; after a store restored, the read's own key corrects it.
		 */
		j->published = false;
		/*
		 * What etcd answered before is in the read, or its store went
		 * back (a snapshot restored) and never will be: revisions of
		 * before say nothing now.
		 */
		j->open_answered_rev = 0;
		j->changed_from = 0;
		step_key_seen(j, 0);	/* the read's, if there */
		/* the incident known is not the one there (if any): it ended unseen */
		if (j->open && j->snap_create != j->create_rev)
			incident_gone(c, j);
	}
	read_begin(c);
	c->crowded = false;
	for (i = 0; i < n; i++)
		if (!key_parse(kvs[i].key, &k) && k.kind == K_NODE)
			apply(c, &kvs[i], true, now);
	for (i = 0; i < n; i++)
		if (key_parse(kvs[i].key, &k) || k.kind != K_NODE)
			apply(c, &kvs[i], true, now);
	read_end(c, CL_PREFIX);
	for (i = c->nr_jobs; i-- > 0;) {
		struct job *j = c->jobs[i];

		if (!node_alive(j, c->node)) {	/* the key gone: as delete_node() */
			j->nr_writers = 0;
			j->held_by_other = false;
		}
		/* a node of the incident whose key is gone while this one was away */
		for (size_t p = 0; j->open && j->member && p < j->nr_parts; p++)
			if (!node_alive(j, j->parts[p].name))
				escalate(c, j, "node %s left the job (its lease ended)", j->parts[p].name);
		job_gc(c, j);
	}
	c->synced = rev;	/* the read's, even below a revision seen before it */
	process_all(c, now);
}

/**
 * cl_acks_snapshot() - the acknowledgements of an incident, as a read of
 * its CL_WATCH prefix returned them, replacing what was known of them
 * @c: the core
 * @prefix: the CL_WATCH action's
 * @kvs: the keys
 * @n: their number
 * @now: the time
 */
void cl_acks_snapshot(struct cl_core *c, const char *prefix, const struct etcd_kv *kvs, size_t n,
		      uint64_t now)
{
	for (size_t i = 0; i < c->nr_jobs; i++) {
		struct job *j = c->jobs[i];
		char *acks = j->open ? acks_of(j) : NULL;

		if (acks && !strcmp(acks, prefix))
			for (size_t p = 0; p < j->nr_parts; p++)
				j->parts[p].acked = 0;
		free(acks);
	}
	read_begin(c);
	for (size_t i = 0; i < n; i++)
		if (!strncmp(kvs[i].key, prefix, strlen(prefix)))
			apply(c, &kvs[i], true, now);
	read_end(c, prefix);
	process_all(c, now);
}

void cl_put(struct cl_core *c, const struct etcd_kv *kv, uint64_t now)
{
	apply(c, kv, true, now);
	process_all(c, now);
}

void cl_delete(struct cl_core *c, const struct etcd_kv *kv, uint64_t now)
{
	apply(c, kv, false, now);
	process_all(c, now);
}

/* The watch has seen everything up to @rev. */
void cl_synced(struct cl_core *c, int64_t rev, uint64_t now)
{
	if (rev > c->synced)
		c->synced = rev;
	process_all(c, now);
}

/* Whether etcd answers; while it does not, deadlines abort the local ranks. */
void cl_link(struct cl_core *c, bool up, uint64_t now)
{
	if (c->link != up)
		say(c, NULL, up ? LOG_INFO : LOG_WARNING, "etcd %s", up ? "reached" : "unreachable");
	c->link = up;
	process_all(c, now);
}

/* A new lease (0: lost): this node's jobs are published under it again. */
void cl_lease(struct cl_core *c, int64_t lease, uint64_t now)
{
	if (c->lease)
		c->old_lease = c->lease;
	c->lease = lease;
	for (size_t i = 0; i < c->nr_jobs; i++) {
		c->jobs[i]->published = false;
		c->jobs[i]->ours_rev = 0;	/* a put under the old lease looks another's */
	}
	process_all(c, now);
}

/**
 * cl_txn_done() - a transaction's answer
 * @c: the core
 * @a: the action it was sent for
 * @err: 0 answered; else it may not have reached etcd
 * @succeeded: its compares held
 * @rev: the revision of the answer
 * @now: the time
 */
void cl_txn_done(struct cl_core *c, const struct cl_action *a, int err, bool succeeded,
		 int64_t rev, uint64_t now)
{
	struct job *j = job_find(c, a->job);
	bool of_incident = a->txn == CL_TXN_ACK || a->txn == CL_TXN_ADVANCE ||
			   a->txn == CL_TXN_ABORT || a->txn == CL_TXN_CLOSE;

	if (!j)
		return;
	if (of_incident && (!j->open || j->incident != a->incident)) {
		/*
		 * Of an incident that ended meanwhile (incident_gone() forgot
		 * what it had in flight): the next one's may be, and is not
		 * this, nor is there anything to send again.
		 */
		if (a->txn == CL_TXN_ACK && !err && succeeded)
			/* written before the incident closed, answered after the watch said so */
			acked(closed_part(c, j->name, a->id, c->node), a->step, a->at);
		return;
	}
	j->inflight &= ~(1U << a->txn);
	if (err) {
		j->retry_at = now + RETRY_US;
	} else if (a->txn == CL_TXN_OPEN) {
		/* ours or one open already: the watch brings it by @rev */
		j->open_answered_rev = rev;
		if (!succeeded)
			j->open_retry_at = now + RETRY_US;
	} else if (a->txn == CL_TXN_PUBLISH && succeeded) {
		/*
		 * The revision its put took: a txn that changed something
		 * answers txn.Rev() + 1 (applierV3backend.Txn(),
		 * etcdserver/apply.go, v3.4.23).
		 */
		if (rev > j->ours_rev)
			j->ours_rev = rev;
		j->published = !j->republish;	/* else the newer value goes next */
		j->republish = false;
	} else if (a->txn == CL_TXN_LEAVE) {
		j->leaving = false;
	} else if (a->txn == CL_TXN_ADVANCE || a->txn == CL_TXN_ABORT || a->txn == CL_TXN_CLOSE) {
		/*
		 * Until the watch brings it, the step read is the one it
		 * changed; refused, it is not etcd's, and the watch brings
		 * what is.  Not sent again from it meanwhile: a step key the
		 * watch says nothing of here (deleted, or a value refused) had
		 * it sent again at etcd's round trip's pace, without end.
		 */
		j->changed_from = a->from_rev;
		/*
		 * A wedged incident's close refused: another node's won (its
		 * deletion on the way), a writer changed the step key (the
		 * watch brought it, or will), or etcd holds what the watch
		 * never brought (a read that left a key out).  Sent again an
		 * abort's timeout later, not at every RETRY_US; after a read
		 * again if the key is still as it compared it, and the watch
		 * brings no change by then (close_refused, cleared by one).
		 */
		if (a->txn == CL_TXN_CLOSE && !succeeded && !step_writable(j)) {
			j->close_refused = j->step_key_rev == a->from_rev && j->inc_mod == a->inc_mod;
			/* a key moved since (the watch brought it first): at once, comparing that */
			j->close_at = j->close_refused ? now + c->t.step[CL_ABORT] * 1000000ULL : 0;
		}
	} else if (a->txn == CL_TXN_ACK) {
		j->acked |= 1U << a->step;	/* or the incident changed: nothing to ack */
		acked(part(j, c->node), a->step, a->at);
	}
	process(c, j, now);
	job_gc(c, j);
}

/**
 * cl_job_join() - this node has ranks of @job
 * @c: the core
 * @job: its name
 * @value: what to publish: {"ranks": [...], ...}
 * @now: the time
 *
 * Return: 0, -EINVAL a bad name or value, -ENOMEM.
 */
int cl_job_join(struct cl_core *c, const char *job, const char *value, uint64_t now)
{
	struct etcd_kv kv = { .key = "", .value = (char *)value, .value_len = strlen(value) };
	struct json_object *o = value_parse(&kv, CL_VALUE_MAX);
	uint32_t world = 0;
	bool ok = o && ranks_of(o, &world, NULL) >= 0;
	struct job *j;
	char *v;

	json_object_put(o);
	if (!hbm_cluster_name_valid(job) || !ok)
		return -EINVAL;
	j = job_find(c, job);
	/*
	 * Other nodes' keys of a job new here may have been refused, while it
	 * was theirs alone, for want of room among the CL_MAX_JOBS others
	 * (junk under the prefix, or more jobs than that across the cluster):
	 * read them again, now that it has room of its own.  At most once per
	 * REREAD_MIN_US: a read of a prefix a writer filled holds the loop
	 * for a second, and any local user may register ranks of new jobs.
	 */
	if (!j && c->crowded && !c->reread_due) {
		c->crowded = false;
		reread_soon(c, now);
		reread_if_due(c, now);
	}
	if (!j)
		j = job_get(c, job, true);
	v = strdup(value);
	if (!j || !v) {
		free(v);
		return -ENOMEM;
	}
	free(j->value);
	j->value = v;
	j->world = world;
	j->world_dirty = true;
	j->published = false;
	j->held_by_other = false;	/* a change of its own: put once, over another's */
	j->republish = BUSY(j, CL_TXN_PUBLISH);
	j->leaving = false;
	lost_rank_in_world(c, j);
	process(c, j, now);
	return 0;
}

/**
 * cl_job_leave() - this node has no rank of @job any more
 * @c: the core
 * @job: its name
 * @now: the time
 *
 * Its key is deleted (again after a failure, until etcd answers), so that
 * an incident opened later does not wait for this node.
 *
 * Return: 0, -ENOENT a job this node has not joined.
 */
int cl_job_leave(struct cl_core *c, const char *job, uint64_t now)
{
	struct job *j = job_find(c, job);

	if (!j || !j->value)
		return -ENOENT;
	free(j->value);
	j->value = NULL;
	j->published = false;
	j->leaving = true;
	process(c, j, now);
	job_gc(c, j);
	return 0;
}

/**
 * cl_fail() - this node's ranks of @job cannot go on with its incident
 * @c: the core
 * @job: the job
 * @reason: why (a rank failed or left, a second error here), for every node's journal
 * @now: the time
 *
 * The incident is aborted on every node; one this node is still opening,
 * once it is open.
 *
 * Return: 0, -ESRCH no incident of @job involves this node.
 */
int cl_fail(struct cl_core *c, const char *job, const char *reason, uint64_t now)
{
	struct job *j = job_find(c, job);

	if (j && j->open && j->member)
		escalate(c, j, "node %s: %s", c->node, reason);
	else if (j && j->want_open)
		snprintf(j->want_fail, sizeof(j->want_fail), "%s", reason);
	else
		return -ESRCH;
	process(c, j, now);
	return 0;
}

/**
 * cl_error() - this node's ranks of @job lost data: open its incident
 * @c: the core
 * @job: the job
 * @rank: the global rank whose state was lost (< the job's world size)
 * @reason: what happened, for every node's journal
 * @now: the time
 * @id: set to the incident's id: the open one's, or the one it will open under
 *
 * A second error while one is open escalates it.
 *
 * Return: 0, -ENOENT a job this node has not joined, -EINVAL @rank out of its world.
 */
int cl_error(struct cl_core *c, const char *job, uint32_t rank, const char *reason,
	     uint64_t now, char id[HBM_CLUSTER_NAME_LEN])
{
	struct job *j = job_find(c, job);

	if (!j || !j->value)
		return -ENOENT;
	if (rank >= j->world)
		return -EINVAL;
	if (j->open && j->member && ((j->step_known && j->step == CL_ABORT) || j->escalate[0] ||
				     j->local_aborted)) {
		/* aborting already (or deciding to): this error's ranks too */
		local(c, j, CL_ABORT, j->escalate[0] ? j->escalate : j->reason);
		if (!j->local_aborted && !(j->step_known && j->step == CL_ABORT)) {
			/* by this node's decision: not told again at a deadline (helper-199) */
			j->local_aborted = true;
			j->aborted_at = now;
		}
	} else if (j->open && j->member) {
		escalate(c, j, "a second error on node %s (%s)", c->node, reason);
	} else if (!j->want_open) {
		j->want_open = true;
		j->want_since = now;
		j->open_answered_rev = 0;
		j->open_retry_at = 0;
		snprintf(j->want_id, sizeof(j->want_id), "%016" PRIx64, c->nonce());
		snprintf(j->want_reason, sizeof(j->want_reason), "%s", reason);
		j->want_rank = rank;
		j->want_fail[0] = 0;
	}
	strcpy(id, j->open && j->member ? j->id : j->want_id);
	process(c, j, now);
	return 0;
}

/**
 * cl_local_done() - the local ranks did a step (or failed it)
 * @c: the core
 * @job: the job
 * @id: the incident
 * @step: the step
 * @ok: whether they did
 * @reason: why not
 * @now: the time
 *
 * Return: 0, -ESTALE not the incident's step now (nothing done).
 */
int cl_local_done(struct cl_core *c, const char *job, const char *id, enum cl_step step,
		  bool ok, const char *reason, uint64_t now)
{
	struct job *j = job_find(c, job);

	if (!j || !j->open || strcmp(j->id, id) || step != (enum cl_step)j->asked)
		return -ESTALE;
	if (ok)
		j->done = step;
	else
		escalate(c, j, "node %s failed %s: %s", c->node, step_names[step], reason);
	process(c, j, now);
	return 0;
}

/**
 * cl_view_get() - one node's part in an incident this node takes part in
 * @c: the core
 * @index: from 0, over every such incident's nodes in turn: those open,
 *	then the newest CLOSED_KEPT closed (the newest first), whose step is
 *	their last (resume or abort)
 * @out: filled in, but for .incident (the local side's)
 *
 * The opener hears every node's acknowledgements; another node knows its own.
 *
 * Return: 0, -ENOENT past the end.
 */
int cl_view_get(const struct cl_core *c, uint32_t index, struct hbm_ctl_cluster_node *out)
{
	struct incident_view v, hit = { 0 };
	size_t total = 0, at = index, i;

	for (i = 0; i < c->nr_jobs + c->nr_closed; i++) {
		if (i < c->nr_jobs) {
			const struct job *j = c->jobs[i];

			if (!j->open || !j->member || !j->step_known)
				continue;
			v = (struct incident_view){ j->name, j->id, j->opener, j->step,
						    j->failed_rank, j->step_at, j->parts,
						    j->nr_parts };
		} else {
			const struct closed_incident *x =
				&c->closed[(c->closed_next + 2 * CLOSED_KEPT - 1 -
					    (i - c->nr_jobs)) % CLOSED_KEPT];

			v = (struct incident_view){ x->job, x->id, x->opener, x->step,
						    x->failed_rank, x->step_at, x->parts,
						    x->nr_parts };
		}
		if (!hit.job && at < v.nr_parts)
			hit = v;
		else if (!hit.job)
			at -= v.nr_parts;
		total += v.nr_parts;
	}
	if (!hit.job)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->index = index;
	out->total = total;
	strcpy(out->job, hit.job);
	strcpy(out->id, hit.id);
	strcpy(out->opener, hit.opener);
	strcpy(out->node, hit.parts[at].name);
	out->step = hit.step;
	out->failed_rank = hit.failed_rank;
	out->acked = hit.parts[at].acked;
	memcpy(out->acked_at, hit.parts[at].acked_at, sizeof(out->acked_at));
	memcpy(out->step_at, hit.step_at, sizeof(out->step_at));
	return 0;
}

/* This node's jobs whose key etcd holds under the present lease. */
size_t cl_jobs_published(const struct cl_core *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nr_jobs; i++)
		n += c->jobs[i]->value && c->jobs[i]->published;
	return n;
}

uint64_t cl_next_deadline(const struct cl_core *c)
{
	uint64_t next = c->reread_due ? c->reread_due : UINT64_MAX;

	for (size_t i = 0; i < c->nr_jobs; i++) {
		const struct job *j = c->jobs[i];

		/*
		 * Nothing of the job runs before retry_at: a deadline of its due
		 * sooner would fire on every turn of the loop until then.
		 */
		if (j->retry_at) {
			if (j->retry_at < next)
				next = j->retry_at;
			continue;
		}
		/* (an open in flight: its answer runs process() again) */
		if (j->want_open && !j->open && !BUSY(j, CL_TXN_OPEN) &&
		    j->want_since + c->t.step[CL_PAUSE] * 1000000ULL < next)
			next = j->want_since + c->t.step[CL_PAUSE] * 1000000ULL;
		/* (process() clears it once due) */
		if (j->want_open && !j->open && !BUSY(j, CL_TXN_OPEN) && j->open_retry_at &&
		    j->open_retry_at < next)
			next = j->open_retry_at;
		/*
		 * Without etcd, a deadline only aborts the ranks here: none once
		 * they are (an abort decided here) or were told to (one read),
		 * else a deadline past would fire on every turn until it is back.
		 */
		if (j->open && j->member && step_writable(j) && j->deadline < next &&
		    (c->link || (!j->local_aborted && j->step != CL_ABORT)))
			next = j->deadline;
		/* wedged: the ranks' abort, with etcd or not; then its close */
		if (j->open && j->member && !step_writable(j) && wedged_due(c, j) < next)
			next = wedged_due(c, j);
	}
	return next;
}

void cl_tick(struct cl_core *c, uint64_t now)
{
	process_all(c, now);
}
