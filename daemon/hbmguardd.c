// SPDX-License-Identifier: GPL-2.0
/*
 * hbmguardd: keeps hbmguard's bad-page tables across reboots and module
 * reloads, and drives the recovery of the training ranks an error hits.
 * This file is main(): the configuration, and the wiring of the parts.
 *
 *   sources                      core                sinks, in this order
 *   kernel.c  hbmguard.ko's  ->  core.c: each   ->   store.c     state files
 *             netlink family     fact once, in       journal.c   journal entries
 *   nvml_facts.c  NVML's ->      order; devices      recovery.c  incidents, ranks
 *             GPUs, events                           gpus.c      GPUs, into the module
 *   kmsg.c    the kernel log:                     metrics.c   counters, and the
 *             NVRM Xid lines                                  Prometheus endpoint
 *                                                 scheduler.c the drain: Slurm, a hook
 *   amdgpu.c  amdgpu's RAS
 *             files, polled
 *
 * cluster.c links recovery.c to the other nodes of a job ([Cluster]): its
 * incidents are opened and stepped in etcd (cluster_proto.h).
 *
 * A source turns what it hears into facts (core.h) and gives each to the
 * core, which hands it to every sink through the sink's one callback.
 * control.c serves hbmctl and the ranks on the control socket; it asks the
 * store, recovery and status.c through their headers, and none of them
 * calls back into it.  A part tells the daemon that the status changed, or
 * that a save failed, through daemon.c, wired here.  Nothing reaches back
 * up: tests/shape/check.py proves there is no circle of imports.
 *
 * The main loop is sd-event; READY=1 is sent once the family is resolved,
 * the group joined and every device restored.  SIGHUP rereads the
 * configuration; SIGUSR1 says what the store did; SIGTERM ends the loop
 * (signals.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "hbmguardd.h"
#include "cluster.h"
#include "gpus.h"
#include "metrics.h"
#include "nvml_facts.h"
#include "nvml_source.h"
#include "parts.h"
#include "scheduler.h"
#include "signals.h"

/* The files beside the state files, their failed saves retried with theirs. */
static void save_others_again(struct daemon *d)
{
	recovery_save_again(d);
	sched_save_again(d->sched);
}

/*
 * The core and its sinks, in the order they take each fact: the store
 * first (a device seen has its stored pages back in the kernel before any
 * other sink reads its table), recovery after the journal (an incident's
 * entries after the event's), the registrar last (what it records of a
 * GPU's driver goes into a table the store has restored).
 */
static int wire(struct hbmguardd *g)
{
	struct daemon *d = &g->d;
	const struct hbm_sink sinks[] = {
		{ .name = "store", .fact = store_fact, .ctx = &g->store },
		{ .name = "journal", .fact = hbm_journal_fact, .ctx = &d->journald },
		{ .name = "recovery", .fact = recovery_fact, .ctx = d },
		{ .name = "gpus", .fact = gpus_fact, .ctx = &g->gpus },
		{ .name = "metrics", .fact = metrics_fact, .ctx = &g->metrics },
		{ .name = "sched", .fact = sched_fact, .ctx = &g->sched },
		/* the kernel log is read while the module has a GPU */
		{ .name = "kmsg", .fact = kmsg_fact, .ctx = &g->kmsg },
	};
	size_t i;

	core_init(&g->core, &kernel_ops, &g->kernel);
	d->core = &g->core;
	d->store = &g->store;
	d->gpus = &g->gpus;
	d->on_status = status_notify;
	d->on_save_failed = store_save_failed;
	d->on_aborted = sched_aborted;
	/* before any fact: a drain kept from before is the state facts add to */
	sched_init(&g->sched, d);
	if (store_start(&g->store, d, &g->core, save_others_again))
		return -1;
	gpus_start(&g->gpus, &g->core);
	for (i = 0; i < sizeof(sinks) / sizeof(sinks[0]); i++)
		if (core_add_sink(&g->core, &sinks[i]))
			return -1;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: hbmguardd [OPTIONS]\n"
		"  -c, --config=FILE  the configuration (default " HBM_CONFIG_PATH "\n"
		"                     and its drop-ins)\n"
		"  -h, --help         this, on stdout\n"
		"  -V, --version      hbmguardd's version\n"
		"See hbmguardd(8) and hbmguardd.conf(5).\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct hbmguardd g;
	struct daemon *d = &g.d;
	struct hbm_source_link link;
	const char *config = NULL;	/* the default file and drop-in directories */
	char err_msg[512];
	bool nvml_left;
	int opt, err;

	/* The sockets systemd passed come without FD_CLOEXEC; sd_listen_fds()
	 * sets it, before NVML or anything else may fork a child that would
	 * hold the control socket open (they are taken by name later). */
	sd_listen_fds(0);
	while ((opt = getopt_long(argc, argv, "c:hV", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("hbmguardd %s\n", HBM_VERSION);
			return 0;
		default:	/* getopt said what */
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hbmguardd: no argument expected, not '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	d->config_path = config;
	d->started = time(NULL);
	d->control = -1;
	hbm_config_defaults(&d->cfg);
	err = hbm_config_load(config, &d->cfg, err_msg, sizeof(err_msg));
	if (err) {
		fprintf(stderr, "<3>hbmguardd: %s\n", err_msg);
		return EX_CONFIG;	/* the unit does not restart on it */
	}
	mkdir(d->cfg.state_dir, 0700);
	d->state_dir = open(d->cfg.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->state_dir < 0) {
		fprintf(stderr, "<3>hbmguardd: %s: %s\n", d->cfg.state_dir, strerror(errno));
		return 1;
	}
	if (wire(&g) || kernel_start(&g.kernel, d, core_link(&g.core)))
		return 1;
	if (sd_event_default(&d->loop) < 0 || kernel_watch(&g.kernel) < 0 ||
	    signals_watch(&g) < 0 || store_watch(&g.store) < 0 ||
	    /* WATCHDOG=1 from the loop itself, when the unit asks for it */
	    sd_event_set_watchdog(d->loop, true) < 0) {
		fprintf(stderr, "<3>hbmguardd: cannot set up the event loop\n");
		return 1;
	}
	/* the log first: what a slow NVML start logs is read */
	kmsg_start(&g.kmsg, d->loop, core_link(&g.core), "/dev/kmsg");	/* or said why not */
	/* NVIDIA's GPUs, where NVML is: the library's soname only (nvml_facts.c) */
	link = core_link(&g.core);
	g.nvml = nvml_facts_start(HBM_NVML_LIBRARY, &link);
	if (g.nvml && nvml_facts_watch(g.nvml, d->loop) < 0)
		fprintf(stderr, "<3>hbmguardd: NVML's events cannot be watched\n");
	/* amdgpu's cards, their RAS files polled (amdgpu.c) */
	g.amdgpu = amdgpu_facts_start(HBM_AMDGPU_DRM_DIR, &link);
	if (g.amdgpu && amdgpu_facts_watch(g.amdgpu, d->loop) < 0)
		fprintf(stderr, "<3>hbmguardd: amdgpu's files cannot be polled\n");
	/*
	 * Without a journal (an initramfs, a container) sd_journal_send()
	 * succeeds silently: entries go to stderr then.
	 */
	d->journald = !access("/run/systemd/journal/socket", F_OK);
	/* the job's other nodes, before any rank registers ([Cluster]) */
	if (d->cfg.cluster.nr_endpoints) {
		d->cluster = cluster_start(d->loop, &d->cfg.cluster, &d->cfg.recovery,
					   &recovery_cluster_ops, d, err_msg, sizeof(err_msg));
		if (!d->cluster) {
			fprintf(stderr, "<3>hbmguardd: [Cluster]: %s\n", err_msg);
			return EX_CONFIG;
		}
	}
	/* before recovery_load(), whose incidents left open abort */
	sched_start(&g.sched);
	recovery_load(d);
	/* before the control socket, which may take systemd's sockets for its own */
	/*
	 * A port taken is no reason to stop keeping the tables: the daemon
	 * runs without its metrics, as after a reload that cannot listen.
	 */
	err = metrics_start(&g.metrics, d, d->loop);
	if (err)
		fprintf(stderr, "<3>hbmguardd: metrics: cannot listen on %s: %s: no metrics until the next reload\n",
			d->cfg.metrics.listen, strerror(-err));
	err = control_setup(d);
	if (err) {
		fprintf(stderr, "<3>hbmguardd: control socket %s: %s\n",
			d->cfg.control_socket, strerror(-err));
		return 1;
	}
	if (store_unsaved(&g.store, NULL))
		daemon_save_failed(d);
	daemon_notify_status(d);
	sd_notify(0, "READY=1");
	fprintf(stderr, "<6>hbmguardd: ready, state in %s, control socket %s\n",
		d->cfg.state_dir, d->cfg.control_socket);
	err = sd_event_loop(d->loop);
	sd_notify(0, "STOPPING=1");
	control_close(d);
	cluster_stop(d->cluster);
	d->cluster = NULL;
	recovery_stop(d);
	metrics_stop(&g.metrics);
	sched_stop(&g.sched);
	store_stop(&g.store);
	nvml_left = nvml_facts_stop(g.nvml);
	amdgpu_facts_stop(g.amdgpu);
	gpus_stop(&g.gpus);
	kmsg_stop(&g.kmsg);
	kernel_stop(&g.kernel);
	sd_event_unref(d->loop);
	close(d->state_dir);
	/* A thread left inside NVML: exit()'s handlers and NVML's destructors would run under it */
	if (nvml_left) {
		fflush(NULL);
		_exit(err < 0 ? 1 : 0);
	}
	return err < 0 ? 1 : 0;
}
