// SPDX-License-Identifier: GPL-2.0
/*
 * One simulated node of a job, for tests/cluster/run.sh: hbmguardd's
 * cluster link (daemon/cluster.c, etcd.c, cluster_proto.c) against a fake
 * local side whose ranks do each step at once.  It publishes its ranks of
 * the job, opens an incident on SIGUSR1 (a UE under its ranks), and says
 * on stdout what its ranks were told, with CLOCK_MONOTONIC's time, which
 * every process of the host shares:
 *
 *	error USEC | step NAME USEC | closed resumed|aborted USEC
 *
 *   agent --endpoint URL [--plain] [--cert F --key F --ca F] --node NAME
 *         --job JOB --rank R --world W [--ttl S] [--fail STEP] [--timeout S]
 *
 * --fail: its ranks fail that step (an escalation); --timeout: the steps'
 * deadlines (20 s).  SIGTERM ends it.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"

static struct cluster *cl;
static const char *job;
static int fail_step = -1;
static int rank;			/* its one rank */

static unsigned long long usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

static void on_step(void *ctx, const struct cl_action *a)
{
	(void)ctx;
	printf("step %s %llu rank=%u opener=%s%s%s\n", cl_step_name(a->step), usec(), a->rank,
	       a->opener, a->text[0] ? " " : "", a->text);
	cluster_done(cl, a->job, a->id, a->step, (int)a->step != fail_step,
		     "the fake's ranks were told to fail");
}

static void on_closed(void *ctx, const char *j, const char *id, bool resumed)
{
	(void)ctx;
	(void)j;
	(void)id;
	printf("closed %s %llu\n", resumed ? "resumed" : "aborted", usec());
}

static const struct cluster_local_ops ops = { .step = on_step, .closed = on_closed };

static int on_usr1(sd_event_source *s, const struct signalfd_siginfo *si, void *arg)
{
	char id[HBM_CLUSTER_NAME_LEN];

	(void)s;
	(void)si;
	(void)arg;
	printf("error %llu\n", usec());
	if (cluster_error(cl, job, rank, "a simulated UE", id))
		fprintf(stderr, "agent: the job is not joined\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "endpoint", required_argument, NULL, 'e' },
		{ "plain", no_argument, NULL, 'p' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "ca", required_argument, NULL, 'A' },
		{ "node", required_argument, NULL, 'n' },
		{ "job", required_argument, NULL, 'j' },
		{ "rank", required_argument, NULL, 'r' },
		{ "world", required_argument, NULL, 'w' },
		{ "ttl", required_argument, NULL, 't' },
		{ "fail", required_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct hbm_config c;
	char err[256], value[128];
	int opt, world = 1;
	sd_event *loop;
	sigset_t mask;

	hbm_config_defaults(&c);
	c.recovery.pause_timeout = 20;
	c.recovery.restore_timeout = 20;
	c.recovery.kill_timeout = 5;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'e':
			snprintf(c.cluster.endpoints[c.cluster.nr_endpoints++], HBM_CLUSTER_URL_LEN,
				 "%s", optarg);
			break;
		case 'p':
			c.cluster.allow_plain_http = true;
			break;
		case 'C':
			snprintf(c.cluster.cert, sizeof(c.cluster.cert), "%s", optarg);
			break;
		case 'K':
			snprintf(c.cluster.key, sizeof(c.cluster.key), "%s", optarg);
			break;
		case 'A':
			snprintf(c.cluster.ca, sizeof(c.cluster.ca), "%s", optarg);
			break;
		case 'n':
			snprintf(c.cluster.node, sizeof(c.cluster.node), "%s", optarg);
			break;
		case 'j':
			job = optarg;
			break;
		case 'r':
			rank = atoi(optarg);
			break;
		case 'w':
			world = atoi(optarg);
			break;
		case 't':
			c.cluster.lease_ttl = atoi(optarg);
			break;
		case 'T':
			c.recovery.pause_timeout = c.recovery.restore_timeout = atoi(optarg);
			break;
		case 'f':
			for (fail_step = 0; fail_step < CL_NR_STEPS; fail_step++)
				if (!strcmp(optarg, cl_step_name(fail_step)))
					break;
			break;
		default:
			return 2;
		}
	}
	if (!job || !c.cluster.nr_endpoints) {
		fprintf(stderr, "agent: --endpoint and --job are needed\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if (sd_event_default(&loop) < 0 ||
	    sd_event_add_signal(loop, NULL, SIGTERM, NULL, NULL) < 0 ||
	    sd_event_add_signal(loop, NULL, SIGUSR1, on_usr1, NULL) < 0)
		return 1;
	cl = cluster_start(loop, &c.cluster, &c.recovery, &ops, NULL, err, sizeof(err));
	if (!cl) {
		fprintf(stderr, "agent: %s\n", err);
		return 1;
	}
	snprintf(value, sizeof(value), "{\"ranks\":[%d],\"world_size\":%d}", rank, world);
	if (cluster_join(cl, job, value)) {
		fprintf(stderr, "agent: cannot join %s\n", job);
		return 1;
	}
	sd_event_loop(loop);
	cluster_stop(cl);
	sd_event_unref(loop);
	return 0;
}
