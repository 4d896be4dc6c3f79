// SPDX-License-Identifier: GPL-2.0
/*
 * How hbmguardd stands, gathered from the core (devices, events), the store
 * (what is on disk) and recovery (ranks, incidents): for hbmctl status
 * (control.c asks) and for sd_notify's STATUS= (daemon_notify_status(),
 * wired here by main()).  Asks, and is never called back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "cluster.h"
#include "core.h"
#include "daemon.h"
#include "recovery.h"
#include "status.h"
#include "store.h"

/**
 * status_get() - how the daemon stands, for STATUS= and hbmctl status
 * @d: the daemon
 * @st: filled in
 */
void status_get(struct daemon *d, struct hbm_ctl_status *st)
{
	const struct hbm_store *s = d->store;
	size_t i;

	memset(st, 0, sizeof(*st));
	st->started = d->started;
	st->events = d->core->events_seen;
	st->resyncs = d->core->resyncs;
	st->last_save = s->last_save;
	st->unsaved = store_unsaved(s, &st->last_save_error);
	st->devices = core_count_devices(d->core);
	st->pid = getpid();
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++) {
		st->stored_extents += s->stored_extents[i];
		st->stored_pages += s->stored_pages[i];
	}
	st->open_incidents = recovery_open_incidents(d);
	st->incidents = d->nr_incidents;
	st->ranks = recovery_ranks(d);
	snprintf(st->state_dir, sizeof(st->state_dir), "%.255s", d->cfg.state_dir);
}

/**
 * status_notify() - STATUS= to the service manager
 * @d: the daemon
 */
void status_notify(struct daemon *d)
{
	struct hbm_ctl_cluster cl;
	struct hbm_ctl_status st;
	char unsaved[512], cluster[160] = "";

	status_get(d, &st);
	store_describe_unsaved(d->store, unsaved, sizeof(unsaved));
	cluster_get(d->cluster, &cl);
	if (cl.state != HBM_CLUSTER_OFF)
		snprintf(cluster, sizeof(cluster), "; cluster: %s as %s, %u jobs",
			 cl.state == HBM_CLUSTER_UP ? "etcd reached" : "etcd UNREACHABLE, retrying",
			 cl.node, cl.jobs);
	sd_notifyf(0, "STATUS=%u devices, %" PRIu64 " bad pages kept in %" PRIu64
		   " extents; %u ranks, %u incidents open; %" PRIu64 " events%s%s",
		   st.devices, st.stored_pages, st.stored_extents, st.ranks,
		   st.open_incidents, st.events, cluster, unsaved);
}
