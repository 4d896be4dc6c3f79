/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hbmguardd's configuration, /etc/hbmguard/hbmguardd.conf, in the format of
 * systemd's unit files:
 *
 *	[Daemon]
 *	StateDirectory=/var/lib/hbmguard
 *	ControlSocket=/run/hbmguard/control.sock
 *
 *	[Policy]			# every device
 *	CEThreshold=50			# 1..65535
 *	CEWindow=24h			# a time span, 1s..365d
 *	RetireLimit=1000		# pages; unset: one per 100 MiB
 *
 *	[Device "0000:3b:00.0"]		# one device, by identity: the same keys
 *	CEThreshold=10			# as [Policy], which it overrides
 *
 *	[Range "hbm0"]			# physical memory to register as a device
 *	NumaNode=1			# HBM as a CPU-less node, or:
 *	Address=0x4000000000		#   a physical range, page aligned,
 *	Size=96G			#   bytes, or with K, M, G, T
 *	SparePages=512			# unset: the module's default
 *	Claim=yes			# take the memory for the aperture (no)
 *
 *	[Recovery]			# deadlines of a rank recovery's steps
 *	PauseTimeout=30s		# every rank paused at a step boundary
 *	RestoreTimeout=2m		# the lost state restored from a peer
 *	KillTimeout=10s			# SIGTERM to SIGKILL of a failed rank
 *
 *	[Scheduler]			# take the node out when a device goes bad (scheduler.c)
 *	Slurm=no			# drain it in Slurm (scontrol)
 *	SlurmNode=gpu042		# its Slurm name; unset: the short hostname
 *	Hook=/usr/local/sbin/drain-hook	# an executable told in its environment
 *	Timeout=30s			# a command's time, then SIGKILL and a retry
 *	RecheckInterval=2min		# Slurm read again while the node is to be drained
 *
 *	[Cluster]			# incidents across nodes through etcd (cluster.c); off
 *	Endpoints=https://10.0.0.1:2379 https://10.0.0.2:2379	# unless set
 *	CertificateFile=/etc/hbmguard/etcd.crt	# the client's certificate, PEM
 *	KeyFile=/etc/hbmguard/etcd.key	# and its key
 *	TrustedCAFile=/etc/hbmguard/etcd-ca.crt	# the servers' CA; unset: the system's
 *	AllowPlainHTTP=no		# http:// endpoints (tests only)
 *	LeaseTTL=10s			# this node's lease: its keys go this long after it
 *	Node=gpu042			# its name in the cluster; unset: the hostname
 *
 * Blank lines and lines starting with # or ; are ignored; a key set twice
 * takes the last value.  Time spans are in systemd's syntax ("90", "30s",
 * "2min", "1h 30min": systemd.time(7)), in whole seconds.  After the file,
 * the drop-ins of hbmguardd.conf.d/ directories apply, in systemd's order
 * (hbm_config_load_files()).  Anything else wrong is an error naming the
 * file, the line and the key, and the whole configuration is refused.
 * The manual is hbmguardd.conf(5).
 */
#ifndef HBM_CONFIG_H
#define HBM_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HBM_CONFIG_PATH		"/etc/hbmguard/hbmguardd.conf"
/* Under /etc, /run, /usr/local/lib and /usr/lib (hbm_config_dropin_dirs). */
#define HBM_CONFIG_DROPIN	"hbmguard/hbmguardd.conf.d"
#define HBM_CONFIG_MAX_DEVICES	256
#define HBM_CONFIG_MAX_RANGES	16

/* Which fields of a policy are set. */
#define HBM_SET_CE_THRESHOLD	(1U << 0)
#define HBM_SET_CE_WINDOW	(1U << 1)
#define HBM_SET_RETIRE_LIMIT	(1U << 2)

struct hbm_policy_config {
	uint32_t set;
	uint32_t ce_threshold;
	uint32_t ce_window;
	uint32_t retire_limit;
};

struct hbm_device_config {
	char identity[64];
	struct hbm_policy_config policy;
};

/* Registered at start, and again when the module comes back. */
struct hbm_range_config {
	char name[32];			/* the device's name; identity "hbm:NAME" */
	int numa_node;			/* -1: Address= and Size= */
	uint64_t address;
	uint64_t size;
	uint32_t spare_pages;		/* 0: the module's default */
	bool claim;
	unsigned int line;		/* of the section, for errors */
};

struct hbm_recovery_config {
	uint32_t pause_timeout;		/* seconds */
	uint32_t restore_timeout;
	uint32_t kill_timeout;
};

/*
 * [Metrics]: where the Prometheus endpoint listens (metrics.c); .listen ""
 * (the default): nowhere, unless systemd passes a socket named "metrics".
 */
struct hbm_metrics_config {
	char listen[64];		/* as written: "127.0.0.1:9477", "[::1]:9477" */
	struct sockaddr_storage addr;	/* parsed */
	socklen_t addr_len;		/* 0: none */
};

/*
 * [Scheduler]: whether and how the node is drained when a device reaches
 * RMA, needs a reset, or an incident is aborted (scheduler.c).
 */
/* 63 characters: struct hbm_ctl_drain's node[64] (ctl.h) carries it whole */
#define HBM_SLURM_NODE_LEN	64

struct hbm_sched_config {
	bool slurm;
	char slurm_node[HBM_SLURM_NODE_LEN];	/* "": the short hostname */
	char hook[PATH_MAX];		/* "": none */
	uint32_t timeout;		/* seconds */
	uint32_t recheck;		/* seconds */
};

/*
 * [Cluster]: the etcd servers a job's incident is coordinated through
 * (cluster.c, etcd.c); no endpoint (the default): off.
 */
#define HBM_CLUSTER_MAX_ENDPOINTS	8
#define HBM_CLUSTER_URL_LEN		128
/* A key's path component (cluster_proto.h): 63 characters of [A-Za-z0-9._-] */
#define HBM_CLUSTER_NAME_LEN		64

struct hbm_cluster_config {
	char endpoints[HBM_CLUSTER_MAX_ENDPOINTS][HBM_CLUSTER_URL_LEN];
	size_t nr_endpoints;
	char cert[PATH_MAX];		/* "": no client certificate */
	char key[PATH_MAX];
	char ca[PATH_MAX];		/* "": the system's trust store */
	bool allow_plain_http;
	uint32_t lease_ttl;		/* seconds */
	char node[HBM_CLUSTER_NAME_LEN];	/* "": the hostname */
};

struct hbm_config {
	char state_dir[PATH_MAX];
	char control_socket[PATH_MAX];
	struct hbm_policy_config policy;
	struct hbm_recovery_config recovery;
	struct hbm_metrics_config metrics;
	struct hbm_sched_config sched;
	struct hbm_cluster_config cluster;
	struct hbm_device_config devices[HBM_CONFIG_MAX_DEVICES];
	size_t nr_devices;
	struct hbm_range_config ranges[HBM_CONFIG_MAX_RANGES];
	size_t nr_ranges;
};

void hbm_config_defaults(struct hbm_config *c);
bool hbm_slurm_node_valid(const char *v);
bool hbm_cluster_name_valid(const char *v);
int hbm_config_parse(const char *text, const char *file, struct hbm_config *c,
		     char *err, size_t errlen);
/*
 * @file (missing: the defaults, unless @file_required), then the *.conf
 * drop-ins of @dirs (NULL-ended, most priority first) in systemd's order;
 * all of it or, on an error, nothing.
 */
int hbm_config_load_files(const char *file, bool file_required,
			  const char *const *dirs, struct hbm_config *c,
			  char *err, size_t errlen);
extern const char *const hbm_config_dropin_dirs[];
/*
 * The daemon's: @path NULL, HBM_CONFIG_PATH if there and the drop-ins of
 * hbm_config_dropin_dirs; else @path, which must be there, and @path.d/.
 */
int hbm_config_load(const char *path, struct hbm_config *c, char *err,
		    size_t errlen);
struct hbm_policy_config hbm_config_policy_for(const struct hbm_config *c,
					       const char *identity);

#endif /* HBM_CONFIG_H */
