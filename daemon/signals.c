// SPDX-License-Identifier: GPL-2.0
/*
 * What an operator asks of the running daemon by signal: SIGHUP (systemctl
 * reload) a new configuration, SIGUSR1 a report of what the store did;
 * SIGTERM and SIGINT end the loop.  Blocked, so that sd-event takes them
 * as events.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "cluster.h"
#include "parts.h"
#include "signals.h"

/* SIGHUP, systemctl reload: a new configuration, or the old one kept. */
static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si,
		     void *arg)
{
	struct hbmguardd *g = arg;
	struct daemon *d = &g->d;
	struct hbm_config *next = malloc(sizeof(*next));
	char err[512], listen[sizeof(d->cfg.metrics.listen)];
	int err_nr;

	(void)s;
	(void)si;
	if (!next)
		return 0;
	sd_notify(0, "RELOADING=1");
	if (hbm_config_load(d->config_path, next, err, sizeof(err))) {
		fprintf(stderr, "<3>hbmguardd: reload refused, keeping the configuration: %s\n",
			err);
	} else if (strcmp(next->state_dir, d->cfg.state_dir) ||
		   strcmp(next->control_socket, d->cfg.control_socket) ||
		   memcmp(&next->cluster, &d->cfg.cluster, sizeof(next->cluster))) {
		fprintf(stderr, "<3>hbmguardd: reload refused: StateDirectory, ControlSocket and [Cluster] changes need a restart\n");
	} else {
		strcpy(listen, d->cfg.metrics.listen);
		d->cfg = *next;
		kernel_reconfigure(&g->kernel);
		sched_reconfigure(&g->sched);
		cluster_reconfigure(d->cluster, &d->cfg.recovery);
		err_nr = metrics_reconfigure(&g->metrics, listen);
		if (err_nr)
			fprintf(stderr, "<3>hbmguardd: metrics: cannot listen on %s: %s: no metrics until the next reload\n",
				d->cfg.metrics.listen, strerror(-err_nr));
		fprintf(stderr, "<6>hbmguardd: configuration reloaded from %s\n",
			d->config_path ? d->config_path : HBM_CONFIG_PATH);
	}
	free(next);
	sd_notify(0, "READY=1");
	return 0;
}

/* SIGUSR1: what the store did, to the journal (the bench reads it). */
static int on_report(sd_event_source *s, const struct signalfd_siginfo *si, void *arg)
{
	struct hbmguardd *g = arg;

	(void)s;
	(void)si;
	store_report(&g->store);
	return 0;
}

/**
 * signals_watch() - the daemon's signals, taken by its loop
 * @g: the daemon, its loop made
 *
 * Return: 0, or a negative errno.
 */
int signals_watch(struct hbmguardd *g)
{
	static const int taken[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	sd_event *loop = g->d.loop;
	sigset_t mask;
	size_t i;

	sigemptyset(&mask);
	for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
		sigaddset(&mask, taken[i]);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -1;
	if (sd_event_add_signal(loop, NULL, SIGTERM, NULL, NULL) < 0 ||
	    sd_event_add_signal(loop, NULL, SIGINT, NULL, NULL) < 0 ||
	    sd_event_add_signal(loop, NULL, SIGHUP, on_reload, g) < 0 ||
	    sd_event_add_signal(loop, NULL, SIGUSR1, on_report, g) < 0)
		return -1;
	return 0;
}
