// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler sink: when a device reaches RMA (its HEALTH fact), needs a
 * reset (HEALTH RESET_REQUIRED: NVML's remap or retirement pending), or an
 * incident is aborted for the node's memory (recovery.c, through
 * daemon_incident_aborted(): no spare, a second error; not what a rank, any
 * user's, could cause), the node is taken out: drained in Slurm when
 * [Scheduler] Slurm=yes, and the Hook= executable told.  It comes back only when an administrator clears
 * the causes (hbmctl undrain, through control.c): the device may still be
 * bad, which only a person can judge.
 *
 * Slurm, as Debian bookworm ships it (22.05.8; SchedMD/slurm tag
 * slurm-22-05-8-1):
 *   - the node's state and reason: `sinfo --noheader --Node --nodes=NODE
 *     --Format=StateComplete:0|,Reason:0` (doc/man/man1/sinfo.1; a field
 *     of width 0 printed whole and its suffix after it, _parse_long_token()
 *     in src/sinfo/opts.c, _print_str() in src/sinfo/print.c).  The state
 *     is node_state_string_complete()'s (src/common/slurm_protocol_defs.c),
 *     lower case: the base state and every flag, "idle+drain",
 *     "down+drain", "mixed+drain+not_responding", where %T's short form
 *     would print "drained" for a down node too.  The reason is "none" when
 *     there is none (_print_reason()); no line at all for a node sinfo does
 *     not know;
 *   - `scontrol update NodeName=NODE State=DRAIN Reason=...` and
 *     State=RESUME (doc/man/man1/scontrol.1, "NODES - SPECIFICATIONS FOR
 *     UPDATE COMMAND").  scontrol_update_node() (src/scontrol/update_node.c)
 *     splits each argument at its first '=' and strips one leading and one
 *     trailing '"' from the reason; neither it nor slurmctld bounds its
 *     length.  Passed as one argv element, no shell, the reason needs no
 *     quoting: hbm_sched_clean() leaves no '"' to strip, no newline (which
 *     `scontrol show node` would print as a line of its own), no control
 *     character; HBM_SCHED_REASON_LEN is our bound, for sinfo's columns.
 *   - the node's name: here, the host's short name (gethostname_short() in
 *     src/slurmd/slurmd/slurmd.c, the name up to its first '.') unless
 *     SlurmNode= says otherwise.  slurmd itself maps its host to a
 *     NodeName through slurm.conf's NodeHostname= and aliases
 *     (slurm_conf_get_nodename()); hbmguardd does not read slurm.conf, so
 *     where NodeName differs from the host's name, SlurmNode= must say it
 *     (hbmguardd.conf(5)); a name sinfo does not know is retried and said.
 *
 * A reason of hbmguard's begins "hbmguard: ".  For a drain, a node with no
 * reason, one of ours, or Slurm's own "Not responding" gets ours (as
 * slurmctld's _drain_node() and set_node_down_ptr() in
 * src/slurmctld/node_mgr.c replace only a missing or "Not responding"
 * one); any other reason (an administrator's drain) is left as it is, and
 * said once.  A resume is asked only of a node drained or draining (idle,
 * mixed or allocated, drain, nothing else but completing) with the very
 * reason hbmguardd last gave it (kept in the state file): a node Slurm
 * took down, or failed, keeps the reason it had, and is not hbmguardd's to
 * resume until Slurm has it back (read again as below).  Between sinfo's
 * answer and scontrol's update an administrator may act: an admin's
 * drain in that window is overwritten by ours (the node stays drained,
 * for our reason), an admin's resume then is undone.
 *
 * While the node is to be drained, Slurm is read again every
 * RecheckInterval=: a node back in service without a reason (Slurm's
 * ReturnToService after "Not responding", an administrator's
 * State=RESUME) is drained again, since the causes stand until a person
 * clears them with hbmctl undrain.  Likewise while a resume waits for a
 * node that has our reason but Slurm's state on top.  The log says only
 * what changed.
 *
 * Nothing blocks the loop: each command is a child (fork and exec, argv,
 * no shell), stdin /dev/null, stdout and stderr the daemon's (the journal)
 * except sinfo's stdout, read through a pipe; its exit is watched through
 * a pidfd in sd-event, and past Timeout= it is killed, with its process
 * group (a hook's own children too).  One command per runner (Slurm's,
 * the hook's) at a time: a change while one runs waits
 * for it, and then only the newest state is run (a generation number).  A
 * failure (Slurm down, an exit status, the timeout) is logged once per
 * distinct failure and retried, HBM_RETRY's backoff (daemon.h), until it
 * goes or the state changes.
 *
 * The causes, what is wanted of the node, and whether the hook has run
 * for it are kept in the state directory ("drain", rewritten atomically
 * at each change), so that a restart neither forgets a drain nor resumes a
 * node; Slurm's side is read back from Slurm (sinfo) after a restart, not
 * kept, since an admin may have changed it meanwhile.
 *
 * The hook must be a regular, executable file owned by root, not writable
 * by group or others, in a directory likewise (udev's and sudo's rule: who
 * can change it would run as root): else it is refused, and said why.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "scheduler.h"
#include "state.h"

#define DRAIN_FILE	"drain"
#define OURS		"hbmguard: "
/* not /usr/local: on Debian its directories are writable by group staff */
#define PATH_ENV	"PATH=/usr/sbin:/usr/bin:/sbin:/bin"

enum { STEP_QUERY = 1, STEP_UPDATE, STEP_HOOK };

static const char *const cause_words[] = {
	[HBM_DRAIN_RMA] = "rma", [HBM_DRAIN_RESET] = "reset", [HBM_DRAIN_ABORT] = "abort",
};

/**
 * hbm_sched_clean() - a string from a device or a peer, made safe for a
 * reason, an environment value or a line of the state file
 * @out: where
 * @cap: its size (> 0)
 * @in: the string, any bytes
 *
 * Control characters are dropped, any other byte outside printable ASCII
 * and '"' become '?' and '\'', and leading and trailing blanks go: a
 * reason on one line, that scontrol takes as given (see the top).
 */
void hbm_sched_clean(char *out, size_t cap, const char *in)
{
	size_t n = 0;

	for (; *in && n + 1 < cap; in++) {
		unsigned char c = *in;

		if (c < 0x20 || c == 0x7f || (c == ' ' && !n))
			continue;
		out[n++] = c > 0x7e ? '?' : c == '"' ? '\'' : c;
	}
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = 0;
}

/*
 * A device for people: NVML's name is the model, the same for every GPU
 * of a node, so its bus id (or identity) follows it.
 */
static void device_label(char *out, size_t cap, const struct sched_cause *c)
{
	if (*c->name)
		snprintf(out, cap, "%s %s", c->name, *c->pci ? c->pci : c->identity);
	else
		snprintf(out, cap, "%s", c->identity);
}

#define LABEL_LEN	(sizeof(((struct sched_cause *)0)->name) + \
			 sizeof(((struct sched_cause *)0)->identity) + 2)

/**
 * hbm_sched_reason() - the reason given to Slurm and the hook
 * @out: where
 * @cap: its size
 * @c: the causes, oldest first
 * @nr: their number, > 0
 *
 * The newest cause, in words, and how many more there are.
 */
void hbm_sched_reason(char *out, size_t cap, const struct sched_cause *c, size_t nr)
{
	static const char *const words[] = {
		[HBM_DRAIN_RMA] = "needs RMA", [HBM_DRAIN_RESET] = "needs a GPU reset",
		[HBM_DRAIN_ABORT] = "recovery aborted",
	};
	const struct sched_cause *last = &c[nr - 1];
	char raw[320], more[32] = "", label[LABEL_LEN];

	if (nr > 1)
		snprintf(more, sizeof(more), " (+%zu more)", nr - 1);
	device_label(label, sizeof(label), last);
	snprintf(raw, sizeof(raw), OURS "%s %s%s%s%s", label,
		 last->cause < __HBM_DRAIN_CAUSE_MAX ? words[last->cause] : "?",
		 *last->detail ? ": " : "", last->detail, more);
	hbm_sched_clean(out, cap, raw);
}

/*
 * Whether a StateComplete state ("idle+drain", "down+drain") is one a
 * RESUME may end: drained, and no flag of Slurm's own trouble.  Down is
 * allowed: a node power-cycled for its GPU stays down+drain with our
 * reason (set_node_down_ptr() keeps a reason, node_mgr.c), and RESUME of a
 * down node makes slurmd register again (node_mgr.c, update_node(), Slurm
 * 22.05.8).  Refused: the flags of slurm_protocol_defs.c's
 * node_state_string_complete() that say Slurm itself holds the node
 * (not responding, failing, a reboot or power change under way, an
 * invalid registration); any other flag (reserved, maintenance, cloud,
 * completing) is no reason to keep it out.
 */
static bool drained_only(const char *state)
{
	static const char *const refused[] = {
		"not_responding", "fail", "reboot_requested", "reboot_issued",
		"power_down", "powering_down", "powered_down", "power_up",
		"powering_up", "invalid_reg",
	};
	char copy[128], *p = copy, *word;
	bool drain = false;
	size_t i;

	if (strlen(state) >= sizeof(copy))
		return false;
	strcpy(copy, state);
	word = strsep(&p, "+");
	if (strcmp(word, "idle") && strcmp(word, "mixed") && strcmp(word, "allocated") &&
	    strcmp(word, "down"))
		return false;
	while ((word = strsep(&p, "+"))) {
		if (!strcmp(word, "drain"))
			drain = true;
		for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
			if (!strcmp(word, refused[i]))
				return false;
	}
	return drain;
}

static bool has_flag(const char *state, const char *flag)
{
	size_t n = strlen(flag);

	for (const char *p = strchr(state, '+'); p; p = strchr(p + 1, '+'))
		if (!strncmp(p + 1, flag, n) && (p[n + 1] == '+' || !p[n + 1]))
			return true;
	return false;
}

/**
 * hbm_sched_verdict() - what sinfo's line says to do
 * @sinfo: its output, "STATE|REASON" lines (StateComplete; "none": no reason)
 * @want: HBM_DRAIN_WANT_DRAIN or _RESUME
 * @reason: ours, for a drain
 * @set: the reason hbmguardd last gave the node ("" none), for a resume
 * @theirs: the reason found when it is not ours, for the log
 * @len: its size
 *
 * Return: enum hbm_sched_verdict.
 */
enum hbm_sched_verdict hbm_sched_verdict(const char *sinfo, uint32_t want, const char *reason,
					 const char *set, char *theirs, size_t len)
{
	const char *bar = strchr(sinfo, '|'), *end;
	char state[128], found[512];
	size_t n;

	theirs[0] = 0;
	if (!bar)
		return HBM_SCHED_UNKNOWN;
	n = bar - sinfo;
	if (n >= sizeof(state))
		n = sizeof(state) - 1;
	memcpy(state, sinfo, n);
	state[n] = 0;
	bar++;
	end = strchr(bar, '\n');	/* a node in several partitions: a line each */
	n = end ? (size_t)(end - bar) : strlen(bar);
	if (n >= sizeof(found))
		n = sizeof(found) - 1;
	memcpy(found, bar, n);
	while (n && found[n - 1] == ' ')
		n--;
	found[n] = 0;
	if (want == HBM_DRAIN_WANT_DRAIN) {
		if (!strcmp(found, reason) && has_flag(state, "drain"))
			return HBM_SCHED_AS_WANTED;
		if (!strcmp(found, "none") || !strncmp(found, OURS, strlen(OURS)) ||
		    !strcmp(found, "Not responding"))	/* the exact words ping_nodes.c sets */
			return HBM_SCHED_ACT;
	} else {
		if (!strcmp(found, "none"))
			return HBM_SCHED_AS_WANTED;
		if (*set && !strcmp(found, set) && drained_only(state))
			return HBM_SCHED_ACT;
	}
	hbm_sched_clean(theirs, len, found);
	return HBM_SCHED_NOT_OURS;
}

/* @fd, opened O_PATH as @path: what root may run, or in what it lies. */
static int owned_safely(int fd, const char *path, bool dir, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, len, "%s is a symbolic link", path);
		return -EPERM;
	}
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s is not a %s", path, dir ? "directory" : "regular file");
		return -EPERM;
	}
	if (st.st_uid) {
		snprintf(why, len, "%s is not owned by root (uid %u)", path, (unsigned)st.st_uid);
		return -EPERM;
	}
	/* a sticky directory (/tmp) lets no one else replace root's entries */
	if (st.st_mode & (S_IWGRP | S_IWOTH) && !(dir && st.st_mode & S_ISVTX)) {
		snprintf(why, len, "%s is writable by %s", path,
			 st.st_mode & S_IWOTH ? "anyone" : "its group");
		return -EPERM;
	}
	if (!dir && !(st.st_mode & S_IXUSR)) {
		snprintf(why, len, "%s is not executable", path);
		return -EPERM;
	}
	return 0;
}

/*
 * The hook, opened O_PATH one component at a time from "/", none followed
 * if a symbolic link, each checked as it was opened: what is run is the
 * file checked (execveat()), not whatever the path names by then.
 * Return: the file's descriptor (close-on-exec), or a negative errno.
 */
static int hook_open(const char *path, char *why, size_t len)
{
	char at[PATH_MAX];
	size_t n = 0;
	int fd, next, err;

	if (path[0] != '/' || strlen(path) >= sizeof(at)) {
		snprintf(why, len, "%s is not an absolute path", path);
		return -EINVAL;
	}
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "/: %s", strerror(errno));
		return -errno;
	}
	strcpy(at, "/");
	err = owned_safely(fd, at, true, why, len);
	for (const char *p = path; !err && *p;) {
		size_t c;

		while (*p == '/')
			p++;
		c = strcspn(p, "/");
		if (!c)
			break;
		memcpy(at + n, "/", 1);
		memcpy(at + n + 1, p, c);
		n += c + 1;
		at[n] = 0;
		p += c;
		next = openat(fd, at + n - c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			err = -errno;
			snprintf(why, len, "%s: %s", at, strerror(errno));
			break;
		}
		close(fd);
		fd = next;
		while (*p == '/')
			p++;
		err = owned_safely(fd, at, *p != 0, why, len);
	}
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/**
 * hbm_sched_hook_ok() - whether the hook may be run as root
 * @path: its absolute path (config.c checked)
 * @why: the refusal, in words
 * @len: its size
 *
 * The file and every directory above it: root's, written by no one else.
 *
 * Return: 0, or a negative errno.
 */
int hbm_sched_hook_ok(const char *path, char *why, size_t len)
{
	int fd = hook_open(path, why, len);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * The state file: "hbmguard-drain 1", want, hook, the reason Slurm last
 * had of ours ("set\t..."; absent: none), then a line per cause.  One that
 * is there but could not be read (load()) is not saved over: saved once it
 * is read.  A save that fails is retried with the state files' (store.c).
 */
static void save(struct hbm_sched *s)
{
	static const char *const wants[] = { "none", "drain", "resume" };
	char *buf;
	size_t len;
	FILE *f;
	int err = -ENOMEM;

	if (s->unread)
		return;
	f = open_memstream(&buf, &len);
	if (f) {
		fprintf(f, "hbmguard-drain 1\nwant %s\nhook %s\n", wants[s->want],
			s->hook.done == s->gen ? "done" : "pending");
		if (*s->set)
			fprintf(f, "set\t%s\n", s->set);
		for (size_t i = 0; i < s->nr; i++) {
			const struct sched_cause *c = &s->causes[i];

			fprintf(f, "cause\t%s\t%" PRIu64 "\t%s\t%s\t%s\t%s\n",
				cause_words[c->cause], c->since, c->identity, c->pci, c->name,
				c->detail);
		}
		if (!fclose(f))
			err = hbm_atomic_write(s->d->state_dir, DRAIN_FILE, buf, len);
		free(buf);
	}
	if (err && err != s->d->drain_error)
		fprintf(stderr, "<3>hbmguardd: saving the node's drain state: %s: retrying\n",
			strerror(-err));
	else if (!err && s->d->drain_error)
		fprintf(stderr, "<5>hbmguardd: the node's drain state is saved\n");
	s->d->drain_error = err;
	if (err)
		daemon_save_failed(s->d);
}

static int parse_cause(char *line, struct sched_cause *c)
{
	char *field[7], *p = line;
	unsigned long long since;
	char *end;
	size_t i;

	for (i = 0; i < 7; i++)
		field[i] = strsep(&p, "\t");
	if (!field[6] || p || strcmp(field[0], "cause"))
		return -EBADMSG;
	memset(c, 0, sizeof(*c));
	for (i = 1; i < __HBM_DRAIN_CAUSE_MAX && strcmp(cause_words[i], field[1]); i++)
		;
	errno = 0;
	since = strtoull(field[2], &end, 10);
	if (i == __HBM_DRAIN_CAUSE_MAX || errno || *end || !*field[3])
		return -EBADMSG;
	c->cause = i;
	c->since = since;
	hbm_sched_clean(c->identity, sizeof(c->identity), field[3]);
	hbm_sched_clean(c->pci, sizeof(c->pci), field[4]);
	hbm_sched_clean(c->name, sizeof(c->name), field[5]);
	hbm_sched_clean(c->detail, sizeof(c->detail), field[6]);
	return 0;
}

/* What the file holds, before it is taken (take()). */
struct drain_file {
	uint32_t want;
	bool hook_done;
	char set[HBM_SCHED_REASON_LEN];
	size_t nr;
	struct sched_cause causes[HBM_SCHED_CAUSES];
};

/*
 * The file's lines into @f, up to the first that does not parse.  Return:
 * whether all did.
 */
static bool parse(const uint8_t *buf, size_t len, struct drain_file *f)
{
	char *text = calloc(1, len + 1), *line, *p;
	bool bad = false;
	int n = 0;

	if (!text)
		return false;
	memcpy(text, buf, len);
	for (p = text; !bad && (line = strsep(&p, "\n"));) {
		if (!*line && !p)
			break;
		if (n++ == 0)
			bad = strcmp(line, "hbmguard-drain 1");
		else if (!strcmp(line, "want drain"))
			f->want = HBM_DRAIN_WANT_DRAIN;
		else if (!strcmp(line, "want resume"))
			f->want = HBM_DRAIN_WANT_RESUME;
		else if (!strcmp(line, "want none"))
			f->want = HBM_DRAIN_WANT_NONE;
		else if (!strcmp(line, "hook done") || !strcmp(line, "hook pending"))
			f->hook_done = !strcmp(line, "hook done");
		else if (!strncmp(line, "set\t", 4))
			hbm_sched_clean(f->set, sizeof(f->set), line + 4);
		else if (f->nr == HBM_SCHED_CAUSES || parse_cause(line, &f->causes[f->nr]))
			bad = true;
		else
			f->nr++;
	}
	free(text);
	return !bad;
}

/* A damaged file kept aside.  Return: whether it was, to be replaced. */
static bool set_aside(struct hbm_sched *s, const char *why)
{
	char moved[300];
	int aside = hbm_file_quarantine(s->d->state_dir, DRAIN_FILE, moved, sizeof(moved));

	if (aside < 0)
		fprintf(stderr, "<3>hbmguardd: %s is damaged (%s) and cannot be kept aside: %s: "
			"left as it is\n", DRAIN_FILE, why, strerror(-aside));
	else
		fprintf(stderr, "<3>hbmguardd: %s is damaged (%s): %s %s%s\n", DRAIN_FILE, why,
			aside == HBM_QUARANTINE_MOVED ? "moved to" : "kept as", moved,
			aside == HBM_QUARANTINE_MOVED ? " (no second name could be made)" : "");
	return aside >= 0;
}

/*
 * @c one of the node's causes, unless it is one (the same cause of the
 * same device) or there are as many as are kept.  Return: whether it was
 * not and is now.
 */
static bool keep_cause(struct hbm_sched *s, const struct sched_cause *c)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (s->causes[i].cause == c->cause && !strcmp(s->causes[i].identity, c->identity))
			return false;
	if (s->nr == HBM_SCHED_CAUSES) {
		fprintf(stderr, "<4>hbmguardd: %s: %s: not one of the node's causes, which are "
			"%d already\n", c->identity, cause_words[c->cause], HBM_SCHED_CAUSES);
		return false;
	}
	s->causes[s->nr++] = *c;
	return true;
}

/*
 * The file's state taken, with what came since the start where it is read
 * late (nothing at the start): its causes first (they are older), then
 * ours that it lacks, as many as are kept; drained if either is (an
 * administrator's undrain meanwhile cleared only what was known then);
 * the reason Slurm has of ours, unless Slurm was read since.
 */
static void take(struct hbm_sched *s, const struct drain_file *f)
{
	struct sched_cause ours[HBM_SCHED_CAUSES];
	size_t nr = s->nr, i;

	if (f->nr && s->want == HBM_DRAIN_WANT_RESUME)
		fprintf(stderr, "<4>hbmguardd: %s holds %zu causes from before the start, which "
			"the undrain since did not clear: the node is to be drained again for "
			"them\n", DRAIN_FILE, f->nr);

	memcpy(ours, s->causes, sizeof(ours));
	s->nr = 0;
	for (i = 0; i < f->nr; i++)
		keep_cause(s, &f->causes[i]);
	for (i = 0; i < nr; i++)
		keep_cause(s, &ours[i]);
	if (s->nr || f->want == HBM_DRAIN_WANT_DRAIN)
		s->want = HBM_DRAIN_WANT_DRAIN;
	else if (s->want == HBM_DRAIN_WANT_NONE)
		s->want = f->want;
	if (!s->set_known)
		memcpy(s->set, f->set, sizeof(s->set));
	if (s->nr)
		hbm_sched_reason(s->reason, sizeof(s->reason), s->causes, s->nr);
	else if (s->want == HBM_DRAIN_WANT_DRAIN)	/* drained, why lost: still drained */
		snprintf(s->reason, sizeof(s->reason), OURS "its drain state was damaged: hbmctl drain");
}

static void run_anew(struct hbm_sched *s);

/*
 * The file read, at the start or, where it could not be then, at a retry
 * (sched_save_again()).  One that does not parse is set aside, and what
 * parsed before kept; one that cannot be a file of ours (not a regular
 * file, or too large) likewise, none of it kept: Slurm's side keeps a
 * drain of ours, which is not resumed then, only no longer ours to resume.
 * One that could not be read (hbm_read_again(): a link to a disk not
 * mounted yet, one that loops, a mode root may not read, an I/O error) is
 * left as it is, not saved over, and read again at the state files' next
 * retry, once mended: until then the node is neither drained nor resumed
 * for what it holds.
 */
static void load(struct hbm_sched *s)
{
	struct drain_file *f = calloc(1, sizeof(*f));
	uint8_t *buf = NULL;
	size_t len;
	int err = f ? hbm_read_file(s->d->state_dir, DRAIN_FILE, &buf, &len) : -ENOMEM;
	bool late = s->unread, ours = s->nr || s->want != HBM_DRAIN_WANT_NONE, bad;

	if (hbm_read_again(err)) {
		if (err != s->d->drain_error)
			fprintf(stderr, "<3>hbmguardd: reading %s: %s: not saved over; read again at "
				"each retry, the node neither drained nor resumed for what "
				"it holds until then\n", DRAIN_FILE, hbm_read_strerror(err));
		s->unread = true;
		s->d->drain_error = err;
		if (late)	/* at the start, main() arms the retry */
			daemon_save_failed(s->d);
		free(f);
		return;
	}
	s->unread = false;
	s->d->drain_error = 0;
	bad = err != -ENOENT && (err || !parse(buf, len, f));
	free(buf);
	if (bad)
		bad = set_aside(s, err ? hbm_read_strerror(err) : "a line that does not parse");
	take(s, f);
	s->gen = late ? s->gen + 1 : 1;
	if (f->hook_done && !ours)	/* told of this very state */
		s->hook.done = s->gen;
	free(f);
	if (late)
		fprintf(stderr, "<5>hbmguardd: %s is read at last: %zu causes in all\n", DRAIN_FILE, s->nr);
	if (s->want == HBM_DRAIN_WANT_DRAIN)
		fprintf(stderr, "<5>hbmguardd: the node stays drained: %s\n", s->reason);
	/*
	 * Kept aside: replaced by what was recovered (moved, not linked: a
	 * restart before that would find none).  Not kept aside: left as it
	 * is, read again at the next start.  Read late: saved with what came
	 * since, and Slurm and the hook told.
	 */
	if (late)
		run_anew(s);
	else if (bad)
		save(s);
}

/**
 * sched_save_again() - the retry of a failed save of the drain state, or
 * of its read (wired with the state files', store.c)
 * @s: the sink
 */
void sched_save_again(struct hbm_sched *s)
{
	if (s->unread)
		load(s);
	else if (s->d->drain_error)
		save(s);
}

static void run_next(struct hbm_sched *s, struct sched_runner *r);

static void failed(struct hbm_sched *s, struct sched_runner *r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int on_retry(sd_event_source *src, uint64_t usec, void *arg)
{
	struct hbm_sched *s = arg;
	struct sched_runner *r = src == s->slurm.retry ? &s->slurm : &s->hook;

	(void)usec;
	r->retry = sd_event_source_disable_unref(r->retry);
	run_next(s, r);
	return 0;
}

/* Once per distinct failure in the log; a retry after a backoff. */
static void failed(struct hbm_sched *s, struct sched_runner *r, const char *fmt, ...)
{
	char err[sizeof(r->error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	r->backoff = hbm_retry_after_s(r->backoff);
	if (strcmp(err, r->error))
		fprintf(stderr, "<4>hbmguardd: %s: %s: retrying (the next in %us, then "
			"backing off to %us)\n", r->what, err, r->backoff, HBM_RETRY_MAX_S);
	strcpy(r->error, err);
	r->progress = HBM_DRAIN_RETRYING;
	if (r->gen != s->gen) {		/* superseded: the newest state, now */
		run_next(s, r);
		return;
	}
	r->retry_at = hbm_monotonic_ns() / 1000 + r->backoff * 1000000ULL;
	if (sd_event_add_time(s->d->loop, &r->retry, CLOCK_MONOTONIC, r->retry_at, 0,
			      on_retry, s) < 0)
		fprintf(stderr, "<3>hbmguardd: %s: cannot arm the retry\n", r->what);
}

/*
 * Whether Slurm's side may drift from what is wanted: a drain Slurm may
 * undo, or a resume waiting for Slurm to have the node back (our reason
 * still on it, the node down or not responding meanwhile).
 */
static bool to_recheck(const struct hbm_sched *s)
{
	return s->want == HBM_DRAIN_WANT_DRAIN || (s->want == HBM_DRAIN_WANT_RESUME && *s->set);
}

static int on_recheck(sd_event_source *src, uint64_t usec, void *arg)
{
	struct hbm_sched *s = arg;

	(void)src;
	(void)usec;
	s->recheck = sd_event_source_disable_unref(s->recheck);
	if (to_recheck(s)) {
		s->slurm.recheck = true;
		run_next(s, &s->slurm);
	}
	return 0;
}

static void succeeded(struct hbm_sched *s, struct sched_runner *r, uint32_t progress)
{
	if (r->error[0])
		fprintf(stderr, "<5>hbmguardd: %s: done after a failure (%s)\n", r->what,
			r->error);
	r->error[0] = 0;
	r->backoff = 0;
	r->progress = progress;
	r->done = r->gen;
	r->recheck = false;
	if (r == &s->hook && r->done == s->gen)
		save(s);	/* a restart does not run it again */
	/* Slurm may put the node back in service by itself: read again, later */
	if (r == &s->slurm && r->done == s->gen && to_recheck(s) && !s->recheck &&
	    sd_event_add_time_relative(s->d->loop, &s->recheck, CLOCK_MONOTONIC,
				       s->d->cfg.sched.recheck * 1000000ULL, 0, on_recheck, s) < 0)
		fprintf(stderr, "<3>hbmguardd: slurm: cannot arm the re-check\n");
	run_next(s, r);
}

/* What Slurm now has of ours: a resume asks it back only of that reason. */
static void slurm_has(struct hbm_sched *s, const char *reason)
{
	s->set_known = true;
	if (strcmp(s->set, reason)) {
		snprintf(s->set, sizeof(s->set), "%s", reason);
		save(s);
	}
}

/*
 * fork and exec, no shell: @argv, @envp, stdin /dev/null, stdout a pipe
 * when @out, else the daemon's stderr (the journal), in /; @exe, when not
 * -1, the file to run (@file then only named).  Return: 0 or a negative
 * errno, said in r->error.
 */
static int spawn(struct sched_runner *r, const char *file, char *const argv[],
		 char *const envp[], bool out, int exe);

/*
 * The command and its process group (spawn()): the group's id cannot be
 * reused while its leader, unreaped, holds it.  The pidfd reaches a
 * leader that left its group.
 */
static void kill_all(struct sched_runner *r)
{
	kill(-r->pid, SIGKILL);
	syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
}

static int on_timeout(sd_event_source *src, uint64_t usec, void *arg)
{
	struct sched_runner *r = arg;

	(void)src;
	(void)usec;
	r->timed_out = true;
	kill_all(r);
	return 0;
}

static void read_out(struct sched_runner *r)
{
	ssize_t n;

	while (r->out >= 0 && r->outlen + 1 < sizeof(r->outbuf) &&
	       (n = read(r->out, r->outbuf + r->outlen, sizeof(r->outbuf) - 1 - r->outlen)) > 0)
		r->outlen += n;
	r->outbuf[r->outlen] = 0;
}

static void reap(struct sched_runner *r, int *status)
{
	read_out(r);
	waitpid(r->pid, status, 0);
	r->exited = sd_event_source_disable_unref(r->exited);
	r->timer = sd_event_source_disable_unref(r->timer);
	close(r->pidfd);
	r->pidfd = -1;
	if (r->out >= 0)
		close(r->out);
	r->out = -1;
	r->pid = 0;
}

static void slurm_update(struct hbm_sched *s, struct sched_runner *r);

static void slurm_query_done(struct hbm_sched *s, struct sched_runner *r)
{
	char theirs[HBM_SCHED_REASON_LEN];

	if (r->gen != s->gen) {	/* an answer for a state (or a node) no longer wanted */
		run_next(s, r);
		return;
	}
	switch (hbm_sched_verdict(r->outbuf, s->want, s->reason, s->set, theirs,
				  sizeof(theirs))) {
	case HBM_SCHED_ACT:
		if (r->recheck && s->want == HBM_DRAIN_WANT_DRAIN)
			fprintf(stderr, "<4>hbmguardd: slurm: node %s is back in service (%.*s) "
				"while its causes stand (hbmctl drain): drained again\n", s->node,
				(int)strcspn(r->outbuf, "\n"), r->outbuf);
		else if (r->recheck)
			fprintf(stderr, "<5>hbmguardd: slurm: node %s is up again in Slurm, "
				"drained for hbmguard's reason: resumed, as undrain asked\n",
				s->node);
		slurm_update(s, r);
		return;
	case HBM_SCHED_AS_WANTED:
		if (s->want == HBM_DRAIN_WANT_DRAIN)
			slurm_has(s, s->reason);	/* from before a restart or an upgrade */
		else
			slurm_has(s, "");
		succeeded(s, r, HBM_DRAIN_DONE);
		return;
	case HBM_SCHED_NOT_OURS:
		if (s->want == HBM_DRAIN_WANT_RESUME && *s->set && !strcmp(theirs, s->set)) {
			/* ours, but Slurm's own state on top: resumed once Slurm is done */
			if (r->progress != HBM_DRAIN_LEFT)
				fprintf(stderr, "<5>hbmguardd: slurm: node %s has hbmguard's reason "
					"but is %.*s: left to Slurm, resumed once it is drained "
					"and nothing else\n", s->node,
					(int)strcspn(r->outbuf, "|"), r->outbuf);
		} else {
			if (r->progress != HBM_DRAIN_LEFT)
				fprintf(stderr, "<5>hbmguardd: slurm: node %s is out of service for "
					"'%s', not hbmguard's reason: left as it is, not %s\n",
					s->node, theirs, s->want == HBM_DRAIN_WANT_DRAIN ?
					"drained again" : "resumed");
			if (s->want != HBM_DRAIN_WANT_DRAIN)
				slurm_has(s, "");
		}
		succeeded(s, r, HBM_DRAIN_LEFT);
		return;
	case HBM_SCHED_UNKNOWN:
		failed(s, r, "sinfo does not know node '%s' (SlurmNode=)", s->node);
		return;
	}
}

static int on_exited(sd_event_source *src, int fd, uint32_t revents, void *arg)
{
	struct hbm_sched *s = arg;
	struct sched_runner *r = src == s->slurm.exited ? &s->slurm : &s->hook;
	const char *cmd = r->step == STEP_QUERY ? "sinfo" : r->step == STEP_UPDATE ? "scontrol" :
			  "the hook";
	int status = 0;

	(void)fd;
	(void)revents;
	reap(r, &status);
	if (r->timed_out)
		failed(s, r, "%s killed after %us", cmd, s->d->cfg.sched.timeout);
	else if (WIFSIGNALED(status))
		failed(s, r, "%s killed by signal %d", cmd, WTERMSIG(status));
	else if (WEXITSTATUS(status))
		failed(s, r, "%s exited with status %d", cmd, WEXITSTATUS(status));
	else if (r->step == STEP_QUERY)
		slurm_query_done(s, r);
	else {
		if (r->step == STEP_UPDATE)
			slurm_has(s, s->sent);
		succeeded(s, r, HBM_DRAIN_DONE);
	}
	return 0;
}

/*
 * An absolute path as is; a name, in PATH_ENV's directories, found here:
 * the child of a daemon with threads (NVML's) calls nothing but
 * async-signal-safe functions between fork and exec.
 */
static int find_program(const char *file, char *path, size_t len)
{
	static const char *const dirs[] = { "/usr/sbin", "/usr/bin" };
	size_t i;

	for (i = 0; *file != '/' && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, len, "%s/%s", dirs[i], file);
		if (!access(path, X_OK))
			return 0;
	}
	snprintf(path, len, "%s", file);
	return *file == '/' ? 0 : -ENOENT;
}

static int spawn(struct sched_runner *r, const char *file, char *const argv[],
		 char *const envp[], bool out, int exe)
{
	static const char no_exec[] = "<3>hbmguardd: a scheduler command could not be run\n";
	struct hbm_sched *s = r->s;
	int pipefd[2] = { -1, -1 }, err;
	char path[PATH_MAX];
	sigset_t all;

	err = find_program(file, path, sizeof(path));
	if (err)
		return err;
	if (out && pipe2(pipefd, O_CLOEXEC))
		return -errno;
	r->timed_out = false;
	r->outlen = 0;
	r->outbuf[0] = 0;
	r->pid = fork();
	if (r->pid < 0) {
		err = -errno;
		r->pid = 0;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (!r->pid) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		/* the daemon's blocked signals (sd-event's) would be the command's */
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		/* a group of its own, killed whole (kill_all()) */
		if (setpgid(0, 0) || null < 0 || dup2(null, 0) < 0 || chdir("/") ||
		    dup2(out ? pipefd[1] : 2, 1) < 0)
			_exit(127);
		if (exe >= 0) {
			/*
			 * The file checked (hook_open()), as fd 3 and open across
			 * exec: a #! script's interpreter opens /dev/fd/3.
			 */
			if (exe == 3 ? fcntl(3, F_SETFD, 0) : dup2(exe, 3) < 0)
				_exit(127);
			syscall(SYS_close_range, 4, ~0U, 0);
			execveat(3, "", argv, envp, AT_EMPTY_PATH);
		} else {
			syscall(SYS_close_range, 3, ~0U, 0);
			execve(path, argv, envp);
		}
		if (write(2, no_exec, sizeof(no_exec) - 1) < 0)
			_exit(126);
		_exit(127);
	}
	/* the child's own setpgid() may not have run yet when kill_all() does */
	setpgid(r->pid, r->pid);
	r->out = pipefd[0];
	if (out) {
		close(pipefd[1]);
		fcntl(r->out, F_SETFL, O_NONBLOCK);
	}
	r->pidfd = syscall(SYS_pidfd_open, r->pid, 0);
	if (r->pidfd < 0 ||
	    sd_event_add_io(s->d->loop, &r->exited, r->pidfd, EPOLLIN, on_exited, s) < 0 ||
	    sd_event_add_time_relative(s->d->loop, &r->timer, CLOCK_MONOTONIC,
				       s->d->cfg.sched.timeout * 1000000ULL, 0, on_timeout, r) < 0) {
		/* cannot be watched: not left to run unwatched */
		kill(-r->pid, SIGKILL);
		kill(r->pid, SIGKILL);
		reap(r, NULL);
		return -ENOMEM;
	}
	return 0;
}

static void slurm_query(struct hbm_sched *s, struct sched_runner *r)
{
	char nodes[16 + HBM_SLURM_NODE_LEN];
	char *argv[] = { "sinfo", "--noheader", "--Node", nodes,
			 "--Format=StateComplete:0|,Reason:0", NULL };
	char *envp[] = { PATH_ENV, "LC_ALL=C", NULL };
	int err;

	r->step = STEP_QUERY;
	if (!s->node[0]) {
		failed(s, r, "the host's name is not one Slurm node's: SlurmNode= must say it");
		return;
	}
	snprintf(nodes, sizeof(nodes), "--nodes=%s", s->node);
	err = spawn(r, argv[0], argv, envp, true, -1);
	if (err)
		failed(s, r, "sinfo cannot be run: %s", strerror(-err));
}

static void slurm_update(struct hbm_sched *s, struct sched_runner *r)
{
	char node[16 + HBM_SLURM_NODE_LEN], reason[16 + HBM_SCHED_REASON_LEN];
	bool drain = s->want == HBM_DRAIN_WANT_DRAIN;
	char *argv[] = { "scontrol", "update", node, drain ? "State=DRAIN" : "State=RESUME",
			 drain ? reason : NULL, NULL };
	char *envp[] = { PATH_ENV, "LC_ALL=C", NULL };
	int err;

	snprintf(node, sizeof(node), "NodeName=%s", s->node);
	snprintf(reason, sizeof(reason), "Reason=%s", s->reason);
	snprintf(s->sent, sizeof(s->sent), "%s", drain ? s->reason : "");
	r->step = STEP_UPDATE;
	err = spawn(r, argv[0], argv, envp, false, -1);
	if (err)
		failed(s, r, "scontrol cannot be run: %s", strerror(-err));
	else
		fprintf(stderr, "<5>hbmguardd: slurm: %s node %s%s%s\n",
			drain ? "draining" : "resuming", s->node, drain ? ": " : "",
			drain ? s->reason : "");
}

/*
 * The hook's environment: the facts of the newest cause (none for a
 * resume), each cleaned; nothing of the daemon's own.
 */
static void run_hook(struct hbm_sched *s, struct sched_runner *r)
{
	const struct sched_cause *c = s->nr ? &s->causes[s->nr - 1] : NULL;
	bool drain = s->want == HBM_DRAIN_WANT_DRAIN;
	char env[9][160], why[PATH_MAX + 64];
	char *envp[11], *argv[] = { s->d->cfg.sched.hook, NULL };
	int n = 0, err, exe = hook_open(s->d->cfg.sched.hook, why, sizeof(why));

	if (exe < 0) {
		failed(s, r, "Hook= refused: %s", why);
		return;
	}
	snprintf(env[n++], sizeof(env[0]), "HBMGUARD_ACTION=%s", drain ? "drain" : "resume");
	snprintf(env[n++], sizeof(env[0]), "HBMGUARD_NODE=%s", s->node);
	snprintf(env[n++], sizeof(env[0]), "HBMGUARD_REASON=%s", drain ? s->reason : "");
	snprintf(env[n++], sizeof(env[0]), "HBMGUARD_CAUSES=%zu", s->nr);
	if (c) {
		char label[LABEL_LEN];

		device_label(label, sizeof(label), c);
		snprintf(env[n++], sizeof(env[0]), "HBMGUARD_CAUSE=%s", cause_words[c->cause]);
		snprintf(env[n++], sizeof(env[0]), "HBMGUARD_DEVICE=%s", label);
		snprintf(env[n++], sizeof(env[0]), "HBMGUARD_IDENTITY=%s", c->identity);
		/* NVIDIA's UUIDs are "GPU-" and the rest (nvmlDeviceGetUUID) */
		snprintf(env[n++], sizeof(env[0]), "HBMGUARD_UUID=%s",
			 strncmp(c->identity, "GPU-", 4) ? "" : c->identity);
		snprintf(env[n++], sizeof(env[0]), "HBMGUARD_PCI_BUS_ID=%s", c->pci);
	}
	envp[0] = PATH_ENV;
	for (int i = 0; i < n; i++)
		envp[i + 1] = env[i];
	envp[n + 1] = NULL;
	r->step = STEP_HOOK;
	err = spawn(r, argv[0], argv, envp, false, exe);
	close(exe);
	if (err)
		failed(s, r, "the hook cannot be run: %s", strerror(-err));
}

/* The newest state, unless a command runs or a retry waits. */
static void run_next(struct hbm_sched *s, struct sched_runner *r)
{
	const struct hbm_sched_config *cfg = &s->d->cfg.sched;
	bool on = r == &s->slurm ? cfg->slurm : cfg->hook[0];

	if (!s->started || r->pid || r->retry)
		return;
	if (!on) {
		r->progress = HBM_DRAIN_OFF;
		r->error[0] = 0;
		return;
	}
	if (r->done == s->gen && !r->recheck) {	/* a hook run before a restart */
		if (r->progress == HBM_DRAIN_OFF)
			r->progress = HBM_DRAIN_DONE;
		return;
	}
	if (r->gen != s->gen)	/* a change since: this is no re-check of it */
		r->recheck = false;
	r->gen = s->gen;
	if (s->want == HBM_DRAIN_WANT_NONE) {
		r->done = r->gen;
		r->progress = HBM_DRAIN_DONE;
		return;
	}
	/* a re-check shows what stands until it finds otherwise */
	if (r->progress != HBM_DRAIN_RETRYING && !r->recheck)
		r->progress = HBM_DRAIN_RUNNING;
	if (r == &s->slurm)
		slurm_query(s, r);
	else
		run_hook(s, r);
}

/* A new state, saved: what waits for a retry goes now, with it. */
static void run_anew(struct hbm_sched *s)
{
	save(s);
	for (struct sched_runner *r = &s->slurm; r; r = r == &s->slurm ? &s->hook : NULL) {
		r->retry = sd_event_source_disable_unref(r->retry);
		r->backoff = 0;
		run_next(s, r);
	}
}

static void changed(struct hbm_sched *s)
{
	s->gen++;
	if (s->nr)
		hbm_sched_reason(s->reason, sizeof(s->reason), s->causes, s->nr);
	else
		s->reason[0] = 0;
	run_anew(s);
}

/*
 * Off unless configured: with neither Slurm= nor Hook=, no cause is kept.
 * Kept regardless, causes long resolved (a GPU reset done a month ago)
 * would drain the node the moment an operator turns Slurm= on.  A device
 * bad when it is turned on is drained at its next health fact (every
 * start of the daemon gives one per device).
 */
static bool sched_on(const struct hbm_sched *s)
{
	return s->d->cfg.sched.slurm || s->d->cfg.sched.hook[0];
}

static void add_cause(struct hbm_sched *s, uint32_t cause, const char *identity,
		      const char *pci, const char *name, const char *detail)
{
	struct sched_cause c = { .cause = cause, .since = time(NULL) };

	if (!sched_on(s))
		return;
	hbm_sched_clean(c.identity, sizeof(c.identity), identity);
	hbm_sched_clean(c.pci, sizeof(c.pci), pci);
	hbm_sched_clean(c.name, sizeof(c.name), name);
	hbm_sched_clean(c.detail, sizeof(c.detail), detail);
	if (!c.identity[0]) {
		fprintf(stderr, "<3>hbmguardd: a device with no usable identity (%s): not one of "
			"the node's causes, the node not drained for it\n", cause_words[cause]);
		return;
	}
	if (!keep_cause(s, &c))
		return;		/* known: the node is drained for it already */
	s->want = HBM_DRAIN_WANT_DRAIN;
	hbm_sched_reason(s->reason, sizeof(s->reason), s->causes, s->nr);
	fprintf(stderr, "<4>hbmguardd: the node is to be drained: %s\n", s->reason);
	changed(s);
}

/**
 * sched_fact() - the sink: a device's health, RMA or a reset required
 * @ctx: the struct hbm_sched
 * @f: the fact
 */
void sched_fact(void *ctx, const struct hbm_fact *f)
{
	struct hbm_sched *s = ctx;

	/* a health read again, unchanged (its counts given: amdgpu.c): no new cause */
	if (f->type != HBM_FACT_HEALTH || (!f->sync && f->state == f->aux))
		return;
	if (f->state == HBMGUARD_HEALTH_RMA)
		add_cause(s, HBM_DRAIN_RMA, f->dev.identity, f->dev.pci, f->dev.name,
			  *f->text ? f->text : "bad pages at the retire limit");
	else if (f->state == HBMGUARD_HEALTH_RESET_REQUIRED)
		add_cause(s, HBM_DRAIN_RESET, f->dev.identity, f->dev.pci, f->dev.name,
			  *f->text ? f->text : "a retirement or remap waits for it");
}

/**
 * sched_aborted() - an incident ended in abort (wired as daemon.c's)
 * @d: the daemon
 * @x: the incident
 */
void sched_aborted(struct daemon *d, const struct hbm_ctl_incident *x)
{
	if (d->sched)
		add_cause(d->sched, HBM_DRAIN_ABORT, x->device, "", "", x->reason);
}

/**
 * sched_get() - a cause, and where the drain stands, for hbmctl drain
 * @s: the sink
 * @index: the cause's, from 0 (0 answers even with none)
 * @out: filled in
 *
 * Return: 0, or -ENOENT past the end.
 */
int sched_get(struct hbm_sched *s, uint32_t index, struct hbm_ctl_drain *out)
{
	uint64_t now = hbm_monotonic_ns() / 1000;
	const struct sched_runner *r = s->slurm.error[0] ? &s->slurm : &s->hook;

	if (index >= (s->nr ? s->nr : 1))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->index = index;
	out->total = s->nr;
	out->want = s->want;
	out->slurm = s->slurm.progress;
	out->hook = s->hook.progress;
	if (r->retry && r->retry_at > now)
		out->retry_in = (r->retry_at - now + 999999) / 1000000;
	snprintf(out->node, sizeof(out->node), "%s", s->node);
	snprintf(out->reason, sizeof(out->reason), "%s", s->reason);
	if (*r->error || !s->unread)
		snprintf(out->error, sizeof(out->error), "%s", r->error);
	else
		snprintf(out->error, sizeof(out->error), "the %s file not read (%s): its causes unknown, "
			 "read again at each retry", DRAIN_FILE, hbm_read_strerror(s->d->drain_error));
	if (s->nr) {
		const struct sched_cause *c = &s->causes[index];

		out->cause = c->cause;
		out->since = c->since;
		snprintf(out->identity, sizeof(out->identity), "%s", c->identity);
		snprintf(out->pci, sizeof(out->pci), "%s", c->pci);
		snprintf(out->detail, sizeof(out->detail), "%s", c->detail);
	}
	return 0;
}

/**
 * sched_undrain() - an administrator cleared the causes: resume the node
 * @s: the sink
 * @out: where it stands after, as sched_get()'s index 0
 *
 * Slurm resumes it only if its reason is hbmguard's (see the top).
 *
 * Return: 0, or -EALREADY when nothing was drained.
 */
int sched_undrain(struct hbm_sched *s, struct hbm_ctl_drain *out)
{
	size_t nr = s->nr;

	if (s->want != HBM_DRAIN_WANT_DRAIN)
		return -EALREADY;
	s->nr = 0;
	s->want = HBM_DRAIN_WANT_RESUME;
	changed(s);
	fprintf(stderr, "<5>hbmguardd: %zu causes cleared by an administrator: the node is "
		"to be resumed\n", nr);
	return sched_get(s, 0, out);
}

static void node_name(struct hbm_sched *s)
{
	char host[256] = "";
	const struct hbm_sched_config *cfg = &s->d->cfg.sched;

	if (cfg->slurm_node[0]) {
		snprintf(s->node, sizeof(s->node), "%s", cfg->slurm_node);
		return;
	}
	/* slurmd's gethostname_short() (see the top) */
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = 0;
	/* SlurmNode='s rules: a ',' or '[' would name other nodes too */
	if (!host[0] || strlen(host) >= sizeof(s->node) || !hbm_slurm_node_valid(host)) {
		s->node[0] = 0;
		return;
	}
	strcpy(s->node, host);
}

/**
 * sched_init() - the kept drain state; nothing run yet
 * @s: the sink
 * @d: the daemon, its state directory open
 */
void sched_init(struct hbm_sched *s, struct daemon *d)
{
	s->d = d;
	s->slurm = (struct sched_runner){ .s = s, .what = "slurm", .pidfd = -1, .out = -1 };
	s->hook = (struct sched_runner){ .s = s, .what = "hook", .pidfd = -1, .out = -1 };
	d->sched = s;
	node_name(s);
	load(s);
}

/**
 * sched_start() - Slurm told of the kept state again, the hook run if it
 * was not for it: from here on, commands run
 * @s: the sink, its daemon's loop set up
 */
void sched_start(struct hbm_sched *s)
{
	s->started = true;
	run_next(s, &s->slurm);
	run_next(s, &s->hook);
}

/**
 * sched_reconfigure() - after a reload: Slurm's side read again (another
 * node, Slurm turned on), the hook run if it has not been for this state
 * @s: the sink
 */
void sched_reconfigure(struct hbm_sched *s)
{
	node_name(s);
	for (struct sched_runner *r = &s->slurm; r; r = r == &s->slurm ? &s->hook : NULL) {
		/* the new settings tried now, not at the old backoff */
		r->retry = sd_event_source_disable_unref(r->retry);
		r->backoff = 0;
	}
	/* what runs is for the old settings: its answer starts a new query,
	 * whose success arms the re-check at the new RecheckInterval= */
	s->recheck = sd_event_source_disable_unref(s->recheck);
	s->slurm.gen = 0;
	s->slurm.done = 0;
	run_next(s, &s->slurm);
	run_next(s, &s->hook);
}

/**
 * sched_stop() - the commands still running are killed
 * @s: the sink
 */
void sched_stop(struct hbm_sched *s)
{
	int status;

	for (struct sched_runner *r = &s->slurm; r; r = r == &s->slurm ? &s->hook : NULL) {
		r->retry = sd_event_source_disable_unref(r->retry);
		if (!r->pid)
			continue;
		kill_all(r);
		reap(r, &status);
	}
	s->recheck = sd_event_source_disable_unref(s->recheck);
	s->started = false;
}
