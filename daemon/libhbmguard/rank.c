// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libhbmguard's rank client: hbmguardd's control protocol (daemon/ctl.h)
 * seen from a training process.  Requests may arrive while the client waits
 * for the reply to its answer: they are queued, in order, for
 * hbmguard_rank_next().
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl.h"
#include "hbmguard.h"

#define QUEUED 8

_Static_assert(sizeof(struct hbmguard_rank_info) == sizeof(struct hbm_ctl_rank),
	       "the library's rank info is the protocol's");
_Static_assert(sizeof(struct hbmguard_recovery) == sizeof(struct hbm_ctl_recovery),
	       "the library's request is the protocol's");
_Static_assert(sizeof(struct hbmguard_deadlines) == sizeof(struct hbm_ctl_recovery_times) &&
	       offsetof(struct hbmguard_deadlines, longest) ==
	       offsetof(struct hbm_ctl_recovery_times, longest),
	       "the library's deadlines are the protocol's");

struct hbmguard_rank {
	int fd;
	uint32_t seq;
	struct hbmguard_recovery queue[QUEUED];
	unsigned int head, count;
};

/* One packet from the daemon: a RECOVERY is queued, a reply returned. */
static int receive(struct hbmguard_rank *r, int flags, struct hbm_ctl_header *h,
		   void *reply_body, size_t reply_size)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	const void *body;
	ssize_t n = recv(r->fd, pkt, sizeof(pkt), flags);
	int err;

	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return -errno;
	err = hbm_ctl_decode(pkt, n, true, h, &body);
	if (err)
		return err;
	if (h->type == HBM_CTL_RECOVERY) {
		if (r->count == QUEUED)
			return -ENOBUFS;
		memcpy(&r->queue[(r->head + r->count++) % QUEUED], body,
		       sizeof(struct hbmguard_recovery));
		return 1;
	}
	if (body && reply_body)
		memcpy(reply_body, body, reply_size);
	return 0;
}

static int transact(struct hbmguard_rank *r, uint16_t type, const void *body,
		    void *reply_body, size_t reply_size)
{
	alignas(8) unsigned char pkt[HBM_CTL_MAX_PACKET];
	struct hbm_ctl_header h;
	size_t len = hbm_ctl_encode(pkt, sizeof(pkt), type, ++r->seq, 0, body);
	int err;

	if (send(r->fd, pkt, len, MSG_NOSIGNAL) != (ssize_t)len)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	do
		err = receive(r, 0, &h, reply_body, reply_size);
	while (err == 1);
	if (err == -EAGAIN)	/* HBM_CTL_TIMEOUT_S passed (hbm_ctl_connect()) */
		return -ETIMEDOUT;
	if (err)
		return err;
	if (h.type != (type | HBM_CTL_REPLY) || h.seq != r->seq)
		return -EPROTO;
	return h.error;
}

/*
 * The launchers' own words: torch 1.13's torch/distributed/run.py gives
 * --rdzv_id the default "none" and
 * torch/distributed/elastic/agent/server/local_elastic_agent.py passes it to
 * each worker as TORCHELASTIC_RUN_ID; Slurm 22.05's srun(1), OUTPUT
 * ENVIRONMENT VARIABLES: "SLURM_JOB_ID  Job id of the executing job.",
 * "SLURM_STEP_ID  The step ID of the current job."
 */
int hbmguard_job_id(char *out, size_t size)
{
	const char *id = getenv("TORCHELASTIC_RUN_ID"), *step = getenv("SLURM_STEP_ID");
	char slurm[HBM_CTL_NAME_LEN];

	if (!id || !strcmp(id, "none") || !id[0]) {
		/* every srun of an allocation has its job id: the step's is the job's */
		id = getenv("SLURM_JOB_ID");
		if (id && id[0] && step && step[0] &&
		    snprintf(slurm, sizeof(slurm), "%s.%s", id, step) < (int)sizeof(slurm))
			id = slurm;
	}
	if (!id || !id[0])
		return -ENOENT;
	if (strlen(id) >= size || strlen(id) >= HBM_CTL_NAME_LEN ||
	    !hbm_ctl_name_valid(id, HBM_CTL_NAME_LEN))
		return -EINVAL;
	strcpy(out, id);
	return 0;
}

/*
 * The job's key from HBMGUARD_JOB_KEY (hbmguard.h): 0 and none, 1 and
 * @out's, -EINVAL if it is not one the daemon takes.  A set-user-ID or
 * file-capability program does not take its caller's environment
 * (secure_getenv()): -EPERM, never the job without its key.
 */
static int job_key(struct hbm_ctl_rank_keyed *out)
{
	const char *set = getenv("HBMGUARD_JOB_KEY"), *key = secure_getenv("HBMGUARD_JOB_KEY");

	if (!set || !set[0])
		return 0;
	if (!key)
		return -EPERM;
	if (strlen(key) >= sizeof(out->key))
		return -EINVAL;
	strcpy(out->key, key);
	return hbm_ctl_key_valid(out->key) ? 1 : -EINVAL;
}

int hbmguard_rank_register(const char *socket_path, const struct hbmguard_rank_info *info,
			   struct hbmguard_rank **out)
{
	struct hbm_ctl_rank_keyed reg = { 0 };
	struct hbmguard_rank *r;
	int err, keyed;

	memcpy(&reg.rank, info, sizeof(reg.rank));
	if (!reg.rank.job[0]) {
		err = hbmguard_job_id(reg.rank.job, sizeof(reg.rank.job));
		if (err)
			return err;
	}
	keyed = job_key(&reg);
	if (keyed < 0)
		return keyed;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = hbm_ctl_connect(socket_path ? socket_path : HBMGUARD_RANK_SOCKET);
	if (r->fd < 0) {
		err = r->fd;
		goto fail;
	}
	err = transact(r, keyed ? HBM_CTL_RANK_REGISTER_KEYED : HBM_CTL_RANK_REGISTER,
		       keyed ? (const void *)&reg : &reg.rank, NULL, 0);
	/*
	 * Sent before the daemon took this process for the connection's, on a
	 * kernel that cannot tell it (ctl.h): sent again, after its answer.
	 */
	if (err == -EAGAIN)
		err = transact(r, keyed ? HBM_CTL_RANK_REGISTER_KEYED : HBM_CTL_RANK_REGISTER,
			       keyed ? (const void *)&reg : &reg.rank, NULL, 0);
	if (err)
		goto fail;
	*out = r;
	return 0;
fail:
	if (r->fd >= 0)
		close(r->fd);
	free(r);
	return err;
}

int hbmguard_rank_fd(const struct hbmguard_rank *r)
{
	return r->fd;
}

int hbmguard_rank_next(struct hbmguard_rank *r, struct hbmguard_recovery *out)
{
	struct hbm_ctl_header h;
	int err;

	while (!r->count) {
		err = receive(r, MSG_DONTWAIT, &h, NULL, 0);
		if (err == -EAGAIN || err < 0)
			return err;
		if (err == 0)
			return -EPROTO;	/* a reply nobody asked for */
	}
	*out = r->queue[r->head];
	r->head = (r->head + 1) % QUEUED;
	r->count--;
	return 0;
}

int hbmguard_rank_answer(struct hbmguard_rank *r, uint64_t incident, uint32_t answer)
{
	struct hbm_ctl_answer a = { .incident = incident, .answer = answer };

	return transact(r, HBM_CTL_RANK_ANSWER, &a, NULL, 0);
}

/* One request on a connection of its own: a daemon older than it closes the connection. */
static int ask_alone(const char *socket_path, uint16_t type, void *reply, size_t size)
{
	struct hbmguard_rank r = { .fd = hbm_ctl_connect(socket_path ? socket_path :
							   HBMGUARD_RANK_SOCKET) };
	int err;

	if (r.fd < 0)
		return r.fd;
	err = transact(&r, type, NULL, reply, size);
	close(r.fd);
	return err;
}

int hbmguard_recovery_deadlines(const char *socket_path, struct hbmguard_deadlines *out)
{
	struct hbm_ctl_deadlines dl;
	int err = ask_alone(socket_path, HBM_CTL_RECOVERY_TIMES, out, sizeof(*out));

	if (err != -EOPNOTSUPP)
		return err;
	/* a daemon older than RECOVERY_TIMES: its deadlines, the longest unsaid */
	err = ask_alone(socket_path, HBM_CTL_DEADLINES, &dl, sizeof(dl));
	if (!err)
		*out = (struct hbmguard_deadlines){ .pause_timeout = dl.pause_timeout,
						    .restore_timeout = dl.restore_timeout,
						    .kill_timeout = dl.kill_timeout };
	return err;
}

void hbmguard_rank_close(struct hbmguard_rank *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r);
}
