/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cluster link of hbmguardd: a job's incident followed across nodes
 * in etcd.  It carries out what the protocol (cluster_proto.h) asks
 * through etcd.c, and tells the local side what its ranks are to do
 * through the ops it was given (the ranks' recovery; a test's fake).
 */
#ifndef HBM_CLUSTER_H
#define HBM_CLUSTER_H

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "cluster_proto.h"
#include "config.h"
#include "ctl.h"

struct cluster;

struct cluster_local_ops {
	/*
	 * The job's local ranks: do @a->step of incident @a->id (opened on node
	 * @a->opener; the state of global rank @a->rank was lost; @a->text: an
	 * abort's reason); cluster_done() when done.
	 */
	void (*step)(void *ctx, const struct cl_action *a);
	/* the incident ended: resumed on every node, or aborted */
	void (*closed)(void *ctx, const char *job, const char *id, bool resumed);
	/* etcd reached, or no longer: what cluster_get() says changed */
	void (*link)(void *ctx);
};

struct cluster *cluster_start(sd_event *loop, const struct hbm_cluster_config *cfg,
			      const struct hbm_recovery_config *rec,
			      const struct cluster_local_ops *ops, void *ctx, char *err,
			      size_t errlen);
void cluster_stop(struct cluster *cl);
void cluster_reconfigure(struct cluster *cl, const struct hbm_recovery_config *rec);
int cluster_join(struct cluster *cl, const char *job, const char *value);
int cluster_leave(struct cluster *cl, const char *job);
int cluster_error(struct cluster *cl, const char *job, uint32_t failed_rank, const char *reason,
		  char id[HBM_CLUSTER_NAME_LEN]);
int cluster_fail(struct cluster *cl, const char *job, const char *reason);
int cluster_done(struct cluster *cl, const char *job, const char *id, enum cl_step step,
		 bool ok, const char *reason);
bool cluster_link_up(const struct cluster *cl);
void cluster_get(const struct cluster *cl, struct hbm_ctl_cluster *out);
int cluster_node_get(const struct cluster *cl, uint32_t index, struct hbm_ctl_cluster_node *out);
const char *cluster_node(const struct cluster *cl);

#endif /* HBM_CLUSTER_H */
