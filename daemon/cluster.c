// SPDX-License-Identifier: GPL-2.0
/*
 * The cluster link (cluster.h): etcd.c's watch and lease feed the
 * protocol's core (cluster_proto.c), and each action it answers is carried
 * out here: a transaction sent, a step for the local side, a journal line.
 * Its deadlines are one time source, set to the core's next.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cluster.h"
#include "etcd.h"

/* An incident's acknowledgements, watched by its opener (CL_WATCH). */
struct acks {
	struct cluster *cl;
	struct acks *next;
	struct etcd_watch *w;
	char prefix[2 * CL_REASON_LEN];
};

struct cluster {
	sd_event *loop;
	struct etcd *etcd;
	struct etcd_watch *watch;	/* CL_PREFIX */
	struct acks *acks;
	struct pending *pending;
	struct cl_core *core;
	const struct cluster_local_ops *ops;
	void *ctx;
	sd_event_source *timer;
	bool draining, up;
	char node[HBM_CLUSTER_NAME_LEN];
	time_t since;			/* up or down */
	char why[256];			/* down: the last failure */
};

/* A transaction on its way: the action it carries out. */
struct pending {
	struct cluster *cl;
	struct pending *next, *prev;	/* freed by cluster_stop() if unanswered */
	struct cl_action a;
};

static uint64_t now_us(struct cluster *cl)
{
	uint64_t t = 0;

	sd_event_now(cl->loop, CLOCK_MONOTONIC, &t);
	return t;
}

/* An incident's id: random, so that no restart reuses one. */
static uint64_t nonce(void)
{
	uint64_t n = 0;

	if (getrandom(&n, sizeof(n), 0) != sizeof(n))
		n = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	return n;
}

static void drain(struct cluster *cl);

static void pending_free(struct pending *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		p->cl->pending = p->next;
	if (p->next)
		p->next->prev = p->prev;
	free(p);
}
static void watch_acks(struct cluster *cl, const char *prefix);
static void unwatch_acks(struct cluster *cl, const char *prefix);

static void on_txn(void *arg, int err, struct json_object *reply)
{
	struct pending *p = arg;
	struct cluster *cl = p->cl;
	struct json_object *ok = NULL;
	int64_t rev = reply ? etcd_header_revision(reply) : -1;

	if (!err && rev < 0)
		err = -EPROTO;
	if (err == -EREMOTEIO) {
		char said[256];	/* a server's words: escaped, cut (hbm_ctl_escape()) */

		fprintf(stderr, "<4>hbmguardd: cluster: job %s: etcd refused a transaction: %s\n",
			p->a.job, hbm_ctl_escape(said, sizeof(said), reply ?
						 json_object_to_json_string(reply) : "", false));
	}
	if (reply)
		json_object_object_get_ex(reply, "succeeded", &ok);
	cl_txn_done(cl->core, &p->a, err, ok && json_object_get_boolean(ok), rev, now_us(cl));
	pending_free(p);
	drain(cl);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *arg)
{
	struct cluster *cl = arg;

	(void)s;
	(void)usec;
	cl_tick(cl->core, now_us(cl));
	drain(cl);
	return 0;
}

/* What the core asked for, in order; then its next deadline. */
static void drain(struct cluster *cl)
{
	struct cl_action a;
	uint64_t next;

	if (cl->draining)
		return;		/* a callback of the local side's, inside the loop below */
	cl->draining = true;
	while (cl_next_action(cl->core, &a)) {
		struct pending *p;

		switch (a.kind) {
		case CL_TXN:
			p = calloc(1, sizeof(*p));
			if (p) {
				p->cl = cl;
				p->a = a;
				p->a.body = NULL;
				p->next = cl->pending;
				if (p->next)
					p->next->prev = p;
				cl->pending = p;
			}
			if (!p || !etcd_call(cl->etcd, ETCD_PATH_TXN, a.body, on_txn, p)) {
				cl_txn_done(cl->core, &a, -ENOMEM, false, -1, now_us(cl));
				if (p)
					pending_free(p);
			}
			free(a.body);
			break;
		case CL_LOCAL:
			cl->ops->step(cl->ctx, &a);
			break;
		case CL_CLOSED:
			cl->ops->closed(cl->ctx, a.job, a.id, a.step == CL_RESUME);
			break;
		case CL_LOG:
			fprintf(stderr, "<%d>hbmguardd: cluster: %s\n", a.prio, a.text);
			break;
		case CL_WATCH:
			watch_acks(cl, a.text);
			break;
		case CL_UNWATCH:
			unwatch_acks(cl, a.text);
			break;
		case CL_REREAD:
			etcd_watch_reread(cl->watch);
			break;
		}
	}
	cl->draining = false;
	next = cl_next_deadline(cl->core);
	if (next == UINT64_MAX) {
		sd_event_source_set_enabled(cl->timer, SD_EVENT_OFF);
	} else if (sd_event_source_set_time(cl->timer, next) < 0 ||
		   sd_event_source_set_enabled(cl->timer, SD_EVENT_ONESHOT) < 0) {
		fprintf(stderr, "<3>hbmguardd: cluster: cannot arm the deadline\n");
	}
}

static void on_snapshot(void *arg, const struct etcd_kv *kvs, size_t n, int64_t rev)
{
	struct cluster *cl = arg;

	cl_snapshot(cl->core, kvs, n, rev, now_us(cl));
	drain(cl);
}

static void on_event(void *arg, bool put, const struct etcd_kv *kv)
{
	struct cluster *cl = arg;

	if (put)
		cl_put(cl->core, kv, now_us(cl));
	else
		cl_delete(cl->core, kv, now_us(cl));
	drain(cl);
}

static void on_synced(void *arg, int64_t rev)
{
	struct cluster *cl = arg;

	cl_synced(cl->core, rev, now_us(cl));
	drain(cl);
}

static void on_link(void *arg, bool up, const char *why)
{
	struct cluster *cl = arg;

	if (up != cl->up || !cl->since)
		cl->since = time(NULL);
	cl->up = up;
	snprintf(cl->why, sizeof(cl->why), "%s", up ? "" : why);
	if (!up)
		fprintf(stderr, "<4>hbmguardd: cluster: etcd %s: %s\n", etcd_endpoint(cl->etcd), why);
	cl_link(cl->core, up, now_us(cl));
	drain(cl);
	if (cl->ops->link)
		cl->ops->link(cl->ctx);
}

static void on_lease(void *arg, int64_t id)
{
	struct cluster *cl = arg;

	cl_lease(cl->core, id, now_us(cl));
	drain(cl);
}

static const struct etcd_watch_ops watch_ops = {
	.snapshot = on_snapshot,
	.event = on_event,
	.synced = on_synced,
	.link = on_link,
};

static void on_acks_snapshot(void *arg, const struct etcd_kv *kvs, size_t n, int64_t rev)
{
	struct acks *a = arg;

	(void)rev;
	cl_acks_snapshot(a->cl->core, a->prefix, kvs, n, now_us(a->cl));
	drain(a->cl);
}

static void on_acks_event(void *arg, bool put, const struct etcd_kv *kv)
{
	on_event(((struct acks *)arg)->cl, put, kv);
}

static const struct etcd_watch_ops acks_ops = {
	.snapshot = on_acks_snapshot,
	.event = on_acks_event,
};

static void watch_acks(struct cluster *cl, const char *prefix)
{
	struct acks *a = calloc(1, sizeof(*a));

	if (!a) {
		fprintf(stderr, "<3>hbmguardd: cluster: out of memory: %s not watched\n", prefix);
		return;
	}
	a->cl = cl;
	snprintf(a->prefix, sizeof(a->prefix), "%s", prefix);
	a->w = etcd_watch(cl->etcd, prefix, &acks_ops, a);
	if (!a->w) {
		fprintf(stderr, "<3>hbmguardd: cluster: out of memory: %s not watched\n", prefix);
		free(a);
		return;
	}
	a->next = cl->acks;
	cl->acks = a;
}

static void unwatch_acks(struct cluster *cl, const char *prefix)
{
	struct acks **p, *a;

	for (p = &cl->acks; *p && strcmp((*p)->prefix, prefix); p = &(*p)->next)
		;
	a = *p;
	if (!a)
		return;
	*p = a->next;
	etcd_unwatch(a->w);
	free(a);
}

/**
 * cluster_start() - join the cluster [Cluster] names
 * @loop: the event loop
 * @cfg: [Cluster], its endpoints set
 * @rec: [Recovery]: the steps' deadlines
 * @ops: the local side
 * @ctx: its argument
 * @err: why not, on failure
 * @errlen: its size
 *
 * Return: the link, or NULL.
 */
/* Each step's deadline from [Recovery]: isolate and resume as quick as a pause. */
static struct cl_timeouts timeouts(const struct hbm_recovery_config *rec)
{
	return (struct cl_timeouts){ .step = {
		[CL_PAUSE] = rec->pause_timeout, [CL_ISOLATE] = rec->pause_timeout,
		[CL_RESTORE] = rec->restore_timeout, [CL_RESUME] = rec->pause_timeout,
		[CL_ABORT] = rec->kill_timeout,
	} };
}

struct cluster *cluster_start(sd_event *loop, const struct hbm_cluster_config *cfg,
			      const struct hbm_recovery_config *rec,
			      const struct cluster_local_ops *ops, void *ctx, char *err,
			      size_t errlen)
{
	struct cl_timeouts t = timeouts(rec);
	struct cluster *cl = calloc(1, sizeof(*cl));

	if (!cl) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (cfg->node[0]) {
		strcpy(cl->node, cfg->node);
	} else if (gethostname(cl->node, sizeof(cl->node)) || !hbm_cluster_name_valid(cl->node)) {
		snprintf(err, errlen, "the hostname is not a node name: set [Cluster] Node=");
		goto fail;
	}
	cl->loop = sd_event_ref(loop);
	cl->since = time(NULL);
	snprintf(cl->why, sizeof(cl->why), "not reached yet");
	cl->ops = ops;
	cl->ctx = ctx;
	cl->core = cl_new(cl->node, &t, nonce);
	if (!cl->core || sd_event_add_time(loop, &cl->timer, CLOCK_MONOTONIC, UINT64_MAX, 1000,
					   on_deadline, cl) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	sd_event_source_set_enabled(cl->timer, SD_EVENT_OFF);
	cl->etcd = etcd_new(loop, cfg, err, errlen);
	if (!cl->etcd)
		goto fail;
	cl->watch = etcd_watch(cl->etcd, CL_PREFIX, &watch_ops, cl);
	if (!cl->watch || etcd_lease(cl->etcd, cfg->lease_ttl, on_lease, cl)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return cl;
fail:
	cluster_stop(cl);
	return NULL;
}

void cluster_stop(struct cluster *cl)
{
	if (!cl)
		return;
	while (cl->acks)
		unwatch_acks(cl, cl->acks->prefix);
	etcd_free(cl->etcd);	/* answers nothing more */
	while (cl->pending)
		pending_free(cl->pending);
	cl_free(cl->core);
	sd_event_source_disable_unref(cl->timer);
	if (cl->loop)
		sd_event_unref(cl->loop);
	free(cl);
}

/* This node has ranks of @job: @value ({"ranks": [...]}) published under its lease. */
int cluster_join(struct cluster *cl, const char *job, const char *value)
{
	int err = cl_job_join(cl->core, job, value, now_us(cl));

	drain(cl);
	return err;
}

/* No rank of @job is left on this node: its key goes. */
int cluster_leave(struct cluster *cl, const char *job)
{
	int err = cl_job_leave(cl->core, job, now_us(cl));

	drain(cl);
	return err;
}

/*
 * This node's ranks of @job lost data: the job's incident opens, or
 * escalates; @id is set to its id (the open one's, or the one it opens under).
 */
int cluster_error(struct cluster *cl, const char *job, uint32_t failed_rank, const char *reason,
		  char id[HBM_CLUSTER_NAME_LEN])
{
	int err = cl_error(cl->core, job, failed_rank, reason, now_us(cl), id);

	drain(cl);
	return err;
}

/* This node's ranks of @job cannot go on with its incident: it aborts everywhere. */
int cluster_fail(struct cluster *cl, const char *job, const char *reason)
{
	int err = cl_fail(cl->core, job, reason, now_us(cl));

	drain(cl);
	return err;
}

/* The local side did (@ok) or failed a step it was asked. */
int cluster_done(struct cluster *cl, const char *job, const char *id, enum cl_step step,
		 bool ok, const char *reason)
{
	int err = cl_local_done(cl->core, job, id, step, ok, reason, now_us(cl));

	drain(cl);
	return err;
}

/* [Recovery] reloaded: the steps written from now on have its deadlines. */
void cluster_reconfigure(struct cluster *cl, const struct hbm_recovery_config *rec)
{
	struct cl_timeouts t = timeouts(rec);

	if (cl)
		cl_set_timeouts(cl->core, &t);
}

bool cluster_link_up(const struct cluster *cl)
{
	return cl->up;
}

_Static_assert(CL_NR_STEPS == HBM_CTL_CLUSTER_STEPS, "ctl.h's steps are cluster_proto.h's");

/*
 * For hbmctl incidents: one node's part in an incident, open or one of the
 * last closed (cl_view_get()); .incident is the local side's to fill.
 * Return: 0, -ENOENT past the end.
 */
int cluster_node_get(const struct cluster *cl, uint32_t index, struct hbm_ctl_cluster_node *out)
{
	return cl ? cl_view_get(cl->core, index, out) : -ENOENT;
}

/* For hbmctl status and STATUS=: where the link stands (@cl NULL: off). */
void cluster_get(const struct cluster *cl, struct hbm_ctl_cluster *out)
{
	memset(out, 0, sizeof(*out));
	if (!cl)
		return;
	out->state = cl->up ? HBM_CLUSTER_UP : HBM_CLUSTER_UNREACHABLE;
	out->jobs = cl_jobs_published(cl->core);
	out->since = cl->since ? cl->since : time(NULL);
	snprintf(out->node, sizeof(out->node), "%s", cl->node);
	snprintf(out->endpoint, sizeof(out->endpoint), "%s", etcd_endpoint(cl->etcd));
	snprintf(out->why, sizeof(out->why), "%s", cl->why);	/* etcd.c's own words */
}

const char *cluster_node(const struct cluster *cl)
{
	return cl->node;
}
