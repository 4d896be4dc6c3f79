/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control protocol of hbmguardd, spoken by hbmctl.
 *
 * A SOCK_SEQPACKET Unix socket, ControlSocket= in the configuration
 * (default /run/hbmguard/control.sock), mode 0666: anyone on the node may
 * ask how things stand; the daemon takes the asker's identity from the
 * kernel (SO_PEERCRED at connect, SCM_CREDENTIALS on every packet), never
 * from the packet's body.  Only an administrator may change anything: a
 * process with CAP_SYS_ADMIN in the initial user namespace, the kernel's
 * own rule for its ioctls.  It proves it on each request by sending it with
 * SCM_CREDENTIALS naming pid 1 (hbm_ctl_send()): the kernel lets a process
 * name a pid other than its own only with CAP_SYS_ADMIN over its pid
 * namespace (scm_check_creds(), net/core/scm.c, 6.1 and 6.12), and the
 * daemon sees pid 1 only when the sender shares its (the initial) pid
 * namespace, whose owner is the initial user namespace.  uid 0 alone, as in
 * a container without that capability, is not enough.  A rank's requests
 * go without the proof: the daemon knows a rank by its sender's pid.
 *
 * Connections are limited per tenant (a uid, or a user's subordinate uids)
 * and in all; one that has not registered a rank is closed a while after
 * it was made, whatever it asks.  Over a limit, a
 * connection is held for one request only: an administrator's is served,
 * any other is answered -EUSERS and closed (hbmctl then goes to the kernel
 * directly).
 *
 * Names (identities, jobs, devices) are printable ASCII without spaces, the
 * kernel's rule for device identities (identity_valid(), kmod/device.c):
 * they go into logs and onto terminals, and a peer must not be able to
 * forge a log line, a terminal escape or invalid UTF-8 with them.
 *
 * One request per packet; one reply per request, in order.  Every packet is
 * a struct hbm_ctl_header followed by the body of its type, in the host's
 * byte order (the socket never leaves the node):
 *
 *	type		request body		reply body
 *	STATUS		none			struct hbm_ctl_status
 *	RETIRE		struct hbm_ctl_extent	struct hbm_ctl_extent
 *	CLEAR		struct hbm_ctl_extent	struct hbm_ctl_extent
 *	RANK_REGISTER	struct hbm_ctl_rank	struct hbm_ctl_rank
 *	RANK_ANSWER	struct hbm_ctl_answer	struct hbm_ctl_answer
 *	RANK_GET	struct hbm_ctl_index	struct hbm_ctl_rank_info
 *	INCIDENT_GET	struct hbm_ctl_index	struct hbm_ctl_incident
 *	RECOVERY	(from the daemon, unasked, to a registered rank:
 *			 struct hbm_ctl_recovery; never answered by a reply)
 *	GPU_GET		struct hbm_ctl_index	struct hbm_ctl_gpu
 *	DRAIN_GET	struct hbm_ctl_index	struct hbm_ctl_drain
 *	UNDRAIN		none			struct hbm_ctl_drain (index 0)
 *	DEADLINES	none			struct hbm_ctl_deadlines
 *	CLUSTER		none			struct hbm_ctl_cluster
 *	CLUSTER_NODE_GET struct hbm_ctl_index	struct hbm_ctl_cluster_node
 *	RECOVERY_TIMES	none			struct hbm_ctl_recovery_times
 *	RANK_REGISTER_KEYED struct hbm_ctl_rank_keyed struct hbm_ctl_rank
 *
 * DEADLINES says how long each step of a rank recovery may take ([Recovery]
 * in the configuration), so that a rank waits for the daemon as long as the
 * daemon will and no longer.  A daemon older than this request answers it
 * -EOPNOTSUPP and closes the connection: ask on one of its own, not on a
 * rank's.  RECOVERY_TIMES says the same and the longest an incident may
 * take in all, from the error to the ranks' last request, an incident
 * across nodes included ([Cluster]): a rank that waits less gives up on a
 * recovery the daemons would have finished.  It is DEADLINES grown by a
 * field, a request of its own because DEADLINES's clients require its
 * reserved field zero; a daemon older than it answers as for DEADLINES.
 *
 * UNDRAIN (an administrator's only) forgets why hbmguardd drained the node
 * and has the scheduler resume it (scheduler.c).  DRAIN_GET lists those causes;
 * with none, index 0 still answers, with .total 0, for the rest.
 *
 * A list (RANK_GET, INCIDENT_GET, GPU_GET, DRAIN_GET) is read an entry a request, by
 * index from 0, each reply saying how many there are; -ENOENT past the end.
 * Anyone may read them: they change nothing.
 *
 * Training ranks: a process registers once (RANK_REGISTER) and keeps the
 * connection open; the daemon takes its pid and uid from SO_PEERCRED and
 * pins that process (a pidfd) when it accepts the connection.  Where the
 * kernel cannot give the pidfd from the socket (SO_PEERPIDFD, before 6.5),
 * the process is pinned by its pid, and a registration sent before the
 * accept is answered -EAGAIN: its sender may have ended and its pid gone to
 * another process since.  Sent again after that answer, it is taken.  Only the
 * process that connected may register on it, and its exit, or its closing
 * the socket, is its leaving: children that inherited the socket (data
 * loader workers) neither keep the rank nor act for it.  But for one thing
 * no kernel interface tells apart: in a container whose processes hold
 * CAP_SYS_ADMIN over its own user and pid namespaces, a child may send its
 * parent's pid in its credentials (SCM_CREDENTIALS, which SCM_PIDFD follows
 * too), and so answer or register for that container's rank, never for
 * another's (helper-188).  Its device is
 * named by identity, as the module has it (DEVICE_GET): one the module has
 * not is -ENODEV, since the rank would be told of no error there.  A rank
 * whose world size is not that of its job's ranks here is -EINVAL.  A job is
 * named by its owner and its name: two uids' jobs of the same name are two
 * jobs, so no user can take or join another's job.  A (uid, job, rank) is
 * held by one live process.
 *
 * A uid is not always one owner: every container that runs as uid 0 without
 * a user namespace of its own is uid 0.  A job's name is no secret either
 * (RANK_GET shows it to anyone), so one such container could join another's
 * job of that name, answer FAILED and have the daemon abort it and kill its
 * failed rank, or take a rank first so that the job could not register.
 * A job with a key is its key-holders' only: RANK_REGISTER_KEYED carries the
 * key (HBM_CTL_KEY_MIN to HBM_CTL_KEY_LEN - 1 printable ASCII characters but
 * space, NUL-padded), a random secret its launcher gives every rank on
 * every node, and the job is then (uid, name, key): a rank without the key,
 * or with another, is of another job.  It takes none of this job's ranks,
 * is sent none of its RECOVERY packets, cannot answer for it, and its
 * leaving escalates nothing of it (the lists below still show the job's
 * ranks and incidents to anyone, as they show every job's).  The daemon
 * keeps the key's SHA-256 digest, not the key, and names the job in etcd by
 * the uid, the digest's first 8 bytes in hex and the name ("UID-DIGEST.JOB"):
 * only key-holders join it across nodes too.  Those 8 bytes are shown (the
 * CLUSTER_NODE_GET list, etcd): a key that can be guessed can be tested
 * against them offline, hence a random one of 32 characters at least.  Its
 * reply is RANK_REGISTER's; a daemon older than it answers -EOPNOTSUPP and
 * closes the connection.  A job registered with RANK_REGISTER has no key:
 * it is (uid, name), as above.  A key does not lift the connection limits
 * below: they are per uid, whatever the job.  When
 * an uncorrectable error or poison hits a device a rank uses, the daemon
 * opens an incident and sends RECOVERY packets: PAUSE to every rank of the
 * job, which answers PAUSED at its next step boundary; RESTORE, once the
 * kernel has bypassed the page, to every rank, naming the rank whose state
 * was lost, which answers RESTORED once the state is back from a peer (its
 * peers answer RESTORED once they have helped); then RESUME.  ABORT says the
 * incident escalated: the job falls back to its launcher's restart.  A
 * RECOVERY may arrive between a request and its reply.
 *
 * A reply has HBM_CTL_REPLY added to the request's type and the request's
 * seq.  error is 0, or a negative errno saying why nothing was done (but
 * for RETIRE's and CLEAR's -EINPROGRESS, below); an error reply carries no
 * body.  A RETIRE or CLEAR is answered only once the
 * kernel has it and the state file holding it is on disk (fsync'd): its
 * reply is the acknowledgement that a power cut will not lose it.  One the
 * kernel took whose save failed is answered -EINPROGRESS: done in the
 * kernel, not on disk yet, the save retried while the daemon runs (STATUS
 * says its saves' last error; unsaved 0 once every change is on disk).  A
 * clear still unsaved when the daemon stops is undone at its next start.
 *
 * header.size is the whole packet's length and must be exactly the header
 * plus its type's body.  Reserved fields are zero and strings NUL-terminated
 * within their field.  A packet that breaks a rule is answered -EBADMSG
 * (-EPROTONOSUPPORT for another version, -EOPNOTSUPP for an unknown type)
 * and nothing is done; the daemon then closes the connection, since it can
 * no longer trust the peer to be in step.
 */
#ifndef HBM_CTL_H
#define HBM_CTL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define HBM_CTL_SOCKET		"/run/hbmguard/control.sock"
#define HBM_CTL_SOCKET_MODE	0666	/* anyone may ask (above); hbmguardd.socket's SocketMode= */
#define HBM_CTL_MAGIC		0x434d4248	/* "HBMC" */
#define HBM_CTL_VERSION		1
#define HBM_CTL_REPLY		0x8000
#define HBM_CTL_MAX_PACKET	1024

enum hbm_ctl_type {
	HBM_CTL_STATUS = 1,
	HBM_CTL_RETIRE,
	HBM_CTL_CLEAR,
	HBM_CTL_RANK_REGISTER,
	HBM_CTL_RANK_ANSWER,
	HBM_CTL_RANK_GET,
	HBM_CTL_INCIDENT_GET,
	HBM_CTL_RECOVERY,
	HBM_CTL_GPU_GET,
	HBM_CTL_DRAIN_GET,
	HBM_CTL_UNDRAIN,
	HBM_CTL_DEADLINES,
	HBM_CTL_CLUSTER,
	HBM_CTL_CLUSTER_NODE_GET,
	HBM_CTL_RECOVERY_TIMES,
	HBM_CTL_RANK_REGISTER_KEYED,
	__HBM_CTL_TYPE_MAX
};

struct hbm_ctl_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t size;
	uint32_t seq;
	int32_t error;
	uint32_t reserved;
};

#define HBM_CTL_PENDING		(1U << 0)	/* RETIRE: pending, not retired */

struct hbm_ctl_extent {
	char identity[64];	/* the device's stable identity */
	uint64_t offset;
	uint64_t length;
	uint32_t flags;		/* HBM_CTL_PENDING */
	uint32_t reserved;
};

/*
 * hbm_read_file()'s "not a regular file" (state.c), an errno no open() or
 * read() of a state file returns.
 */
#define HBM_ENOTREG	EMEDIUMTYPE

/*
 * strerror() of a state file's read or save error @err, negative: two are
 * hbm_read_file()'s own (a link to nothing is ENOLINK).
 */
static inline const char *hbm_read_strerror(int err)
{
	return err == -HBM_ENOTREG ? "not a regular file" :
	       err == -ENOLINK ? "a link to a file that is not there" : strerror(-err);
}

struct hbm_ctl_status {
	uint64_t started;		/* seconds since the epoch */
	uint64_t events;		/* taken from the kernel */
	uint64_t resyncs;		/* full dumps after a gap or overflow */
	uint64_t stored_extents;	/* in the state files, all devices; an extent
					 * logged twice (PENDING, then RETIRED) counts
					 * twice until the file's next snapshot or
					 * compaction, which count it exactly */
	uint64_t stored_pages;
	uint64_t last_save;		/* seconds since the epoch, 0: never */
	int32_t last_save_error;	/* of one of the unsaved, or 0: a negative
					 * errno, hbm_read_strerror() names it */
	uint32_t devices;
	uint32_t pid;
	uint32_t open_incidents;	/* rank recoveries under way */
	uint32_t incidents;		/* kept, open or not */
	uint32_t ranks;			/* registered */
	uint32_t unsaved;		/* state files not on disk yet, retried */
	char state_dir[256];
};

#define HBM_CTL_NAME_LEN	64
#define HBM_CTL_MAX_RANGES	8

struct hbm_ctl_range {
	uint64_t offset;
	uint64_t length;
};

struct hbm_ctl_rank {
	char job[HBM_CTL_NAME_LEN];	/* the job's id, the same on every node */
	char device[HBM_CTL_NAME_LEN];	/* identity of the rank's device */
	uint32_t rank;			/* < world_size */
	uint32_t world_size;
	uint32_t local_rank;
	uint32_t nr_ranges;		/* <= HBM_CTL_MAX_RANGES; 0: all of it */
	struct hbm_ctl_range ranges[HBM_CTL_MAX_RANGES];	/* the rank's */
};

#define HBM_CTL_KEY_MIN		32
#define HBM_CTL_KEY_LEN		64

struct hbm_ctl_rank_keyed {
	struct hbm_ctl_rank rank;
	char key[HBM_CTL_KEY_LEN];	/* the job's secret, NUL-padded */
};

enum hbm_recovery_action {
	HBM_RECOVERY_PAUSE = 1,
	HBM_RECOVERY_RESTORE,
	HBM_RECOVERY_RESUME,
	HBM_RECOVERY_ABORT,
	__HBM_RECOVERY_MAX
};

struct hbm_ctl_recovery {
	uint64_t incident;
	uint32_t action;		/* enum hbm_recovery_action */
	uint32_t failed_rank;		/* whose state was lost */
	char device[HBM_CTL_NAME_LEN];
	uint64_t offset;		/* what was lost */
	uint64_t length;		/* HBM_CTL_WHOLE_DEVICE from offset 0: all of it */
};

/*
 * An incident's length when the error had no address (an NVIDIA Xid such as
 * 48, 94, 95): the whole device, every rank on it hit.
 */
#define HBM_CTL_WHOLE_DEVICE	UINT64_MAX

enum hbm_rank_answer {
	HBM_ANSWER_PAUSED = 1,
	HBM_ANSWER_RESTORED,
	HBM_ANSWER_FAILED,
	__HBM_ANSWER_MAX
};

struct hbm_ctl_answer {
	uint64_t incident;
	uint32_t answer;		/* enum hbm_rank_answer */
	uint32_t reserved;
};

/* Seconds, each at least 1: the daemon's [Recovery] as it runs now. */
struct hbm_ctl_deadlines {
	uint32_t pause_timeout;		/* every rank paused */
	uint32_t restore_timeout;	/* every rank restored */
	uint32_t kill_timeout;		/* an escalation's SIGTERM to its SIGKILL */
	uint32_t reserved;
};

/* Seconds: the deadlines, and the longest, at least pause + restore. */
struct hbm_ctl_recovery_times {
	uint32_t pause_timeout;
	uint32_t restore_timeout;
	uint32_t kill_timeout;
	uint32_t longest;		/* the error to the ranks' RESUME or ABORT */
};

/*
 * CLUSTER's reply: the link to the other nodes of this node's jobs
 * ([Cluster], cluster.h).  Anyone may ask; a daemon older than it answers
 * -EOPNOTSUPP and closes the connection, as for DEADLINES.
 */
enum hbm_cluster_state {
	HBM_CLUSTER_OFF,		/* no [Cluster] Endpoints= */
	HBM_CLUSTER_UNREACHABLE,	/* no answer from etcd: retried, backing off */
	HBM_CLUSTER_UP,
	__HBM_CLUSTER_MAX
};

struct hbm_ctl_cluster {
	uint32_t state;			/* enum hbm_cluster_state */
	uint32_t jobs;			/* this node's jobs published in etcd now */
	uint64_t since;			/* seconds since the epoch it has been so; 0: off */
	char node[HBM_CTL_NAME_LEN];	/* this node's name there; "" when off */
	char endpoint[256];		/* reached, or tried last */
	char why[256];			/* UNREACHABLE: the last failure, in libcurl's or etcd's words */
};

/*
 * CLUSTER_NODE_GET's reply: one node's part in an incident across nodes
 * that this node takes part in, a list (below) over every such incident's
 * nodes.  The incident's opener hears every node's acknowledgements; any
 * other node knows its own.
 */
#define HBM_CTL_CLUSTER_STEPS	5	/* pause, isolate, restore, resume, abort */

struct hbm_ctl_cluster_node {
	uint32_t index;
	uint32_t total;
	uint64_t incident;		/* this node's incident of it; 0: none kept */
	char job[HBM_CTL_NAME_LEN];	/* as etcd names it: "UID.JOB", "UID-DIGEST.JOB" */
	char id[HBM_CTL_NAME_LEN];	/* the incident's, in etcd */
	char opener[HBM_CTL_NAME_LEN];	/* the node whose error opened it */
	char node[HBM_CTL_NAME_LEN];	/* the node this entry is of */
	uint32_t step;			/* the incident's now, of the five above */
	uint32_t acked;			/* 1 << step: the node acknowledged it */
	uint32_t failed_rank;		/* the global rank whose state was lost */
	uint32_t reserved;
	uint64_t acked_at[HBM_CTL_CLUSTER_STEPS];	/* ms since the epoch, as the
							 * node wrote it; 0: not known here */
	uint64_t step_at[HBM_CTL_CLUSTER_STEPS];	/* when this node read each step */
};

struct hbm_ctl_index {
	uint32_t index;
	uint32_t reserved;
};

enum hbm_rank_state {
	HBM_RANK_RUNNING = 1,
	HBM_RANK_PAUSED,
	HBM_RANK_RESTORED,
};

struct hbm_ctl_rank_info {
	uint32_t index;			/* of total */
	uint32_t total;
	uint32_t pid;
	uint32_t uid;
	uint32_t state;			/* enum hbm_rank_state */
	uint32_t reserved;
	struct hbm_ctl_rank rank;
};

enum hbm_incident_state {
	HBM_INCIDENT_DETECTED = 1,
	HBM_INCIDENT_PAUSING,
	HBM_INCIDENT_ISOLATED,
	HBM_INCIDENT_RESTORING,
	HBM_INCIDENT_RESUMED,
	HBM_INCIDENT_ESCALATED,
	__HBM_INCIDENT_MAX
};

struct hbm_ctl_incident {
	uint32_t index;			/* of total, the newest last */
	uint32_t total;
	uint64_t id;
	char job[HBM_CTL_NAME_LEN];
	char device[HBM_CTL_NAME_LEN];
	uint64_t offset;
	uint64_t length;
	uint32_t state;			/* enum hbm_incident_state */
	uint32_t failed_rank;
	uint64_t at[__HBM_INCIDENT_MAX];	/* us since the epoch each state began */
	char reason[HBM_CTL_NAME_LEN];	/* why it escalated */
};

/* struct hbm_ctl_gpu's .sources: who found or heard the GPU */
#define HBM_CTL_GPU_NVML	(1U << 0)	/* NVML found it */
#define HBM_CTL_GPU_AMDGPU	(1U << 1)	/* amdgpu's sysfs found it */
#define HBM_CTL_GPU_KMSG	(1U << 2)	/* an "NVRM: Xid" line of the kernel log */
#define HBM_CTL_GPU_TRACEPOINT	(1U << 3)	/* nvidia:nvidia_dev_xid, through the module */

/* .flags */
#define HBM_CTL_GPU_LOST	(1U << 0)	/* fallen off the bus, to its driver */
#define HBM_CTL_GPU_PARTIAL	(1U << 1)	/* some of its driver's facts could not be read */
#define HBM_CTL_GPU_REMAP	(1U << 2)	/* .remap_* read */
#define HBM_CTL_GPU_ECC		(1U << 3)	/* .ue and .ce read */

#define HBM_CTL_NO_DEVICE	UINT32_MAX	/* .device: the module has it not (yet) */

/*
 * A GPU as hbmguardd's registrar knows it (gpus.c): its identity and the
 * driver's own report (as its source last read it, and what it heard
 * since), beside what hbmguard made of it (.health, .device: the module's
 * device, whose table hbmctl reads itself).  The strings are the driver's
 * (a UUID, a unique_id, a model): NUL-terminated, shown escaped.
 */
struct hbm_ctl_gpu {
	uint32_t index;			/* of total */
	uint32_t total;
	char identity[64];		/* NVML's UUID, "amdgpu-" + unique_id or PCI slot */
	char pci[32];			/* "0000:3b:00.0" */
	char model[32];			/* as NVML names it; "" none */
	char name[32];			/* the module's device's; "" none */
	uint32_t vendor;		/* HBM_CTL_GPU_NVML or _AMDGPU; 0: no source found it
					 * (the module has it: registered by hand, a
					 * restart without its driver) */
	uint32_t device;		/* the module's id, or HBM_CTL_NO_DEVICE */
	uint32_t sources;		/* HBM_CTL_GPU_* */
	uint32_t flags;			/* HBM_CTL_GPU_LOST... */
	uint32_t health;		/* HBMGUARD_HEALTH_*, as hbmguard derived it */
	uint32_t last_xid;		/* 0: none heard */
	uint64_t last_xid_at;		/* us since the epoch */
	uint32_t retired_ue;		/* pages its driver retired (not pending) for */
	uint32_t retired_ce;		/* ... uncorrected, and repeated corrected errors */
	uint32_t pending;		/* pages its driver has pending */
	uint32_t failed;		/* pages its driver could not retire (amdgpu F) */
	uint32_t remap_corrected;	/* NVML's remapped rows */
	uint32_t remap_uncorrected;
	uint32_t remap_pending;
	uint32_t remap_failure;
	uint64_t ue;			/* its driver's error counts */
	uint64_t ce;
	uint64_t size;			/* bytes of memory, as its source said (else the module) */
};

/* Why hbmguardd drained the node: struct hbm_ctl_drain's .cause */
enum hbm_drain_cause {
	HBM_DRAIN_RMA = 1,		/* a device's bad pages reached its retire limit */
	HBM_DRAIN_RESET,		/* a GPU needs a reset (a remap or retirement pending) */
	HBM_DRAIN_ABORT,		/* a rank recovery was aborted */
	__HBM_DRAIN_CAUSE_MAX
};

/* What the node should be: .want */
enum hbm_drain_want {
	HBM_DRAIN_WANT_NONE = 0,	/* nothing asked since the daemon's state began */
	HBM_DRAIN_WANT_DRAIN,
	HBM_DRAIN_WANT_RESUME,
	__HBM_DRAIN_WANT_MAX
};

/* Where the scheduler's request stands, and the hook's: .slurm, .hook */
enum hbm_drain_progress {
	HBM_DRAIN_OFF = 0,		/* not configured */
	HBM_DRAIN_DONE,			/* the node is as wanted (or nothing wanted) */
	HBM_DRAIN_RUNNING,		/* a command is running */
	HBM_DRAIN_RETRYING,		/* the last try failed (.error): another comes */
	HBM_DRAIN_LEFT,			/* Slurm: drained or down for a reason not
					 * hbmguard's: left as the admin set it */
	__HBM_DRAIN_PROGRESS_MAX
};

/*
 * hbmguardd's drain of the node (scheduler.c): one cause an entry, and with
 * each where the node, Slurm and the hook stand.  Strings NUL-terminated,
 * printable ASCII (scheduler.c made them so).
 */
struct hbm_ctl_drain {
	uint32_t index;			/* of total; 0 of 0 when there is no cause */
	uint32_t total;
	uint32_t want;			/* enum hbm_drain_want */
	uint32_t slurm;			/* enum hbm_drain_progress */
	uint32_t hook;			/* enum hbm_drain_progress */
	uint32_t retry_in;		/* seconds to the next try; 0 none */
	uint32_t cause;			/* enum hbm_drain_cause; 0: no entry */
	uint32_t reserved;
	uint64_t since;			/* seconds since the epoch */
	char node[64];			/* the node's Slurm name */
	char identity[64];		/* the device */
	char pci[32];
	char detail[64];		/* the cause's words: "a rank failed to recover" */
	char reason[128];		/* the reason given to Slurm and the hook */
	char error[128];		/* the last failure of Slurm or the hook, else
					 * the drain file's read; "" none */
};

struct sockaddr_un;
struct ucred;

int hbm_ctl_address(const char *path, struct sockaddr_un *sa);
/* How long a client waits for hbmguardd's answer (hbm_ctl_connect()). */
#define HBM_CTL_TIMEOUT_S	30

int hbm_ctl_connect(const char *path);
int hbm_ctl_listen(const char *path);
int hbm_ctl_path_open(const char *path, char *found, size_t len);
size_t hbm_ctl_body_size(uint16_t type);
size_t hbm_ctl_encode(void *buf, size_t cap, uint16_t type, uint32_t seq,
		      int32_t error, const void *body);
int hbm_ctl_decode(const void *buf, size_t len, bool reply,
		   struct hbm_ctl_header *h, const void **body);
bool hbm_ctl_name_valid(const char *s, size_t size);
bool hbm_ctl_key_valid(const char key[HBM_CTL_KEY_LEN]);
const char *hbm_ctl_escape(char *out, size_t cap, const char *s, bool json);
int hbm_ctl_send(int fd, const void *pkt, size_t len, bool as_admin);
ssize_t hbm_ctl_recv(int fd, void *buf, size_t cap, struct ucred *sender);
bool hbm_ctl_sender_is_admin(const struct ucred *sender);

#endif /* HBM_CTL_H */
