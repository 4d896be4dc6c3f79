// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel log, a source of hbmguardd's facts: the NVIDIA driver's
 * "NVRM: Xid" lines, read from /dev/kmsg (the format, and the driver's
 * line: nvlog.c).  This is how Xids are heard from the drivers that have no
 * nvidia:nvidia_dev_xid tracepoint (older than 575, or the proprietary
 * modules, whose tracepoints the kernel hides); with the open modules >= 575
 * the driver reports each Xid both ways, and the core takes the two as one
 * event (core.h).
 *
 * Each record is one read() of /dev/kmsg, non-blocking, from the loop.  Only
 * a record of the kernel's facility (0) can be the driver's: anyone allowed
 * to write /dev/kmsg can put any text in it, but devkmsg_write() never
 * gives it facility 0 (nvlog.h).  And only one flagged a continuation
 * ('c', LOG_CONT): the driver prints every line through nv_printf(), which
 * prepends KERN_CONT (kernel-open/nvidia/os-interface.c, 515.43.04 to
 * 595.45.04), while the kernel's own lines that begin with a user's string
 * are plain printk()s ('-'): a crashed program's name, first in 6.12's
 * print_fatal_signal() (kernel/signal.c) with print-fatal-signals on, or a
 * firewall rule's log prefix.  A user's string can flag a line 'c' too
 * (kmsg_record()): only lines of the driver's level, warning or above, are
 * taken; a firewall rule logging at warning with its prefix first still
 * passes, and needs CAP_NET_ADMIN in the initial network namespace.  An
 * "NVRM: Xid" line of an Xid about HBM
 * (nv_xid_hbm()), on the GPU registered at the line's PCI address, becomes
 * an ERROR fact on that device: .xid, its severity from that table, .path
 * "kmsg", .seqnum the record's own.  The GPUs are the core's device list,
 * read again only when a line names an address not in the copy kept, or
 * the copy is older than KMSG_LIST_FRESH_NS (a GPU replaced at the same
 * address): never for a line that is not an Xid about HBM.
 *
 * It is read only while the module has a GPU registered (kmsg_fact(), a
 * sink of the core's): an Xid is taken only on a GPU registered at its
 * address, and every record logged wakes the daemon that reads the log.
 * A node's memory errors log lines of their own, memory_failure()'s two
 * per page (mm/memory-failure.c, 6.1 and 6.12) and the EDAC drivers':
 * read, they woke hbmguardd ahead of the module's event of the same
 * error, which then waited on them for its journal entry (make bench's
 * journal row).  Off, the log waits in the kernel; the first GPU opens it,
 * from where it was left if that is less than KMSG_OFF_GRACE_NS ago (a
 * slow start, a driver's reset: kmsg.h), else from its end.
 *
 * Where reading starts: at the end of the log, when the daemon starts.
 * An Xid logged before then has no rank to act on (a rank registers with a
 * running daemon, and its connection dies with it), what it did to the
 * memory reaches the table from the driver's own records (NVML's retired
 * pages and remapped rows), and the line itself is in the system journal,
 * which reads the same log.  Reading from the beginning instead would give
 * every restart the Xids of the whole boot again, as new journal entries:
 * a restart must not journal an Xid twice, and without a record of the
 * last one acted on kept across restarts, only the end guarantees it.
 *
 * Records overwritten before they were read (EPIPE, or a gap in the
 * sequence numbers; a record too long for a read is skipped by the kernel
 * too) are said, with how many: an Xid among them is not heard here.
 *
 * What is not taken is said on stderr, one line each: a record not in the
 * kernel's format, an NVRM line not written by the kernel (refused), a
 * malformed Xid line, an Xid not about HBM, an Xid on an address where no
 * GPU is registered.  At most KMSG_LINES_BURST lines per
 * KMSG_LINES_PERIOD_NS of each kind (kmsg.h), so that a process flooding
 * /dev/kmsg with forged lines can neither flood the journal nor hide the
 * driver's own lines; then how many were kept back.
 *
 * It must not block (the fd is O_NONBLOCK; at most KMSG_BATCH records per
 * turn of the loop), allocates only its device list, at start, and calls
 * no sink: facts go out through the link the core gave at start.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "kmsg.h"

#define KMSG_BATCH		256

static const char *const kinds[__KMSG_LINES] = {
	[KMSG_REFUSED] = "refused", [KMSG_MALFORMED] = "malformed",
	[KMSG_NOT_HBM] = "not about HBM", [KMSG_NO_GPU] = "of no GPU",
	[KMSG_LOST] = "lost",
};

/* A line of kind @kind, unless its period had its share. */
__attribute__((format(printf, 3, 4)))
static void tell(struct hbm_kmsg *k, enum kmsg_line_kind kind, const char *fmt, ...)
{
	struct kmsg_lines *l = &k->lines[kind];
	uint64_t now = k->now();
	va_list ap;

	if (!l->since || now - l->since >= KMSG_LINES_PERIOD_NS) {
		if (l->untold)
			fprintf(stderr, "<4>hbmguardd: kernel log: %u more lines of records %s were not told\n",
				l->untold, kinds[kind]);
		l->since = now ? now : 1;
		l->told = l->untold = 0;
	}
	if (l->told == KMSG_LINES_BURST) {
		l->untold++;
		return;
	}
	l->told++;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* The core's devices, and their PCI addresses for nv_bdf_find(). */
static int list_devices(struct hbm_kmsg *k)
{
	size_t i;
	int err;

	k->listed_at = 0;
	err = k->link.devices(k->link.core, k->devices);
	if (err) {
		k->devices->nr = 0;
		return err;
	}
	for (i = 0; i < k->devices->nr; i++)
		memcpy(k->pci[i], k->devices->dev[i].pci, sizeof(k->pci[i]));
	k->listed_at = k->now();
	if (!k->listed_at)
		k->listed_at = 1;
	return 0;
}

/* The GPU registered at @bdf, or NULL. */
static const struct device *gpu_at(struct hbm_kmsg *k, const char *bdf)
{
	int i = -ENODEV;

	if (k->listed_at && k->now() - k->listed_at < KMSG_LIST_FRESH_NS)
		i = nv_bdf_find(bdf, k->pci, k->devices->nr);
	if (i < 0) {
		int err = list_devices(k);

		if (err) {
			tell(k, KMSG_NO_GPU, "<4>hbmguardd: kernel log: the devices cannot be listed (%s)\n",
			     strerror(-err));
			return NULL;
		}
		i = nv_bdf_find(bdf, k->pci, k->devices->nr);
	}
	return i < 0 ? NULL : &k->devices->dev[i];
}

/* An Xid line of the driver's: a fact, or a line saying why not. */
static void xid_line(struct hbm_kmsg *k, const struct kmsg_record *r,
		     const struct nv_log_record *x)
{
	const struct nv_xid_hbm *meaning = nv_xid_hbm(x->xid);
	const struct device *dev;
	struct hbm_fact f = {
		.type = HBM_FACT_ERROR, .origin = HBM_FROM_KMSG,
		.event = HBMGUARD_EVENT_DEVICE_ERROR, .seqnum = r->seq,
		.state = x->xid, .xid = x->xid, .count = 1,
	};

	if (!meaning) {
		tell(k, KMSG_NOT_HBM, "<6>hbmguardd: kernel log: record #%" PRIu64 ": Xid %u on %s is not about HBM: not taken\n",
		     r->seq, x->xid, x->bdf);
		return;
	}
	dev = gpu_at(k, x->bdf);
	if (!dev) {
		tell(k, KMSG_NO_GPU, "<4>hbmguardd: kernel log: record #%" PRIu64 ": Xid %u on %s: no GPU is registered at that address: not taken\n",
		     r->seq, x->xid, x->bdf);
		return;
	}
	f.dev = (struct hbm_fact_device){ .id = dev->id, .kind = HBM_DEVICE_GPU,
					  .page_size = dev->page_size, .size = dev->size };
	memcpy(f.dev.identity, dev->identity, sizeof(f.dev.identity));
	memcpy(f.dev.pci, dev->pci, sizeof(f.dev.pci));
	f.severity = meaning->lost_data ? HBM_SEVERITY_UE : HBM_SEVERITY_CE;
	snprintf(f.path, sizeof(f.path), "kmsg");
	snprintf(f.text, sizeof(f.text), "%s", meaning->meaning);
	k->link.fact(k->link.core, &f);
}

/**
 * kmsg_record() - one record of /dev/kmsg, as read() returned it
 * @k: the source
 * @buf: the record
 * @len: its length
 *
 * An Xid of the driver's becomes a fact; anything else of the driver's that
 * is not taken, or not the driver's though it says so, a line on stderr.
 */
void kmsg_record(struct hbm_kmsg *k, const char *buf, size_t len)
{
	struct kmsg_record *r = &k->rec;
	const char *why;

	if (kmsg_parse(buf, len, r, &why)) {
		tell(k, KMSG_MALFORMED, "<4>hbmguardd: kernel log: a record not in the kernel's format (%s): skipped\n",
		     why);
		return;
	}
	if (k->next_seq && r->seq > k->next_seq)
		tell(k, KMSG_LOST, "<4>hbmguardd: kernel log: %" PRIu64 " records lost before they were read (overwritten): an Xid among them is not heard here\n",
		     r->seq - k->next_seq);
	k->next_seq = r->seq + 1;
	if (r->text_len < 6 || memcmp(r->text, "NVRM: ", 6))
		return;		/* not the NVIDIA driver's */
	if (!r->from_kernel) {
		tell(k, KMSG_REFUSED, "<4>hbmguardd: kernel log: record #%" PRIu64 " refused: an NVRM line written by a process (facility %u), not by the driver\n",
		     r->seq, r->prio >> 3);
		return;
	}
	/*
	 * nv_printf() (kernel-open/nvidia/os-interface.c, 515 .. 595) prints
	 * every line KERN_CONT: a record of its own has LOG_CONT ('c').  A
	 * plain printk() whose text starts with a user's string does not.
	 */
	if (!r->cont) {
		tell(k, KMSG_REFUSED, "<4>hbmguardd: kernel log: record #%" PRIu64 " refused: an NVRM line not printed by nv_printf() (no 'c' flag)\n",
		     r->seq);
		return;
	}
	/*
	 * Nor is the flag enough: vprintk_store() takes a record's level and
	 * flags from the front of its formatted text, so a user's string
	 * that begins KERN_SOH "c" flags the kernel's line a continuation
	 * (6.1 and 6.12; printk_sprint() strips it).  nv_printf() gives no
	 * level: its lines take default_message_loglevel, warning (4) in
	 * Debian's kernels (CONFIG_MESSAGE_LOGLEVEL_DEFAULT), while the
	 * kernel's lines that begin with a program's name are info
	 * (print_fatal_signal(), a segfault's).  A line of another level
	 * than the driver's is not taken: with kernel.printk's default
	 * level set below warning, the driver's Xids come by the tracepoint
	 * and NVML only.
	 */
	if ((r->prio & 7) > KMSG_DRIVER_LEVEL) {
		tell(k, KMSG_REFUSED, "<4>hbmguardd: kernel log: record #%" PRIu64 " refused: an NVRM line at level %u, below the driver's (%u)\n",
		     r->seq, r->prio & 7, KMSG_DRIVER_LEVEL);
		return;
	}
	if (nv_log_parse(r->text, r->text_len, &k->nv, &why)) {
		tell(k, KMSG_MALFORMED, "<4>hbmguardd: kernel log: record #%" PRIu64 ": %s: not taken\n",
		     r->seq, why);
		return;
	}
	if (k->nv.type == NV_LOG_XID)
		xid_line(k, r, &k->nv);
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct hbm_kmsg *k = arg;
	int i;

	(void)s;
	(void)revents;
	/* a fact taken may have closed the log (a GPU gone): read no more */
	for (i = 0; i < KMSG_BATCH && k->reading; i++) {
		ssize_t n = read(fd, k->buf, sizeof(k->buf));

		if (n > 0) {
			kmsg_record(k, k->buf, n);
			continue;
		}
		/*
		 * EPIPE: records were overwritten, the next read gives the
		 * oldest left (devkmsg_read(), kernel/printk/printk.c, 6.1 and
		 * 6.12), whose sequence number tells how many went.  EINVAL: a
		 * record longer than the read, skipped by the kernel likewise.
		 */
		if (n < 0 && (errno == EPIPE || errno == EINVAL || errno == EINTR))
			continue;
		if (n < 0 && errno != EAGAIN) {
			fprintf(stderr, "<3>hbmguardd: kernel log: %s: NVIDIA Xids are no longer heard from it\n",
				strerror(errno));
			k->io = sd_event_source_disable_unref(k->io);	/* for good */
			k->reading = false;
		}
		break;
	}
	return 0;
}

/* Whether the module has a GPU: the log is read while it has. */
static bool any_gpu(const struct hbm_kmsg *k)
{
	size_t i;

	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++)
		if (k->gpu[i])
			return true;
	return false;
}

/*
 * Reading on while the module has a GPU, off while it has none.  Opened
 * again after KMSG_OFF_GRACE_NS without one, the log is read from its end.
 */
static void gate(struct hbm_kmsg *k)
{
	bool on = any_gpu(k);
	uint64_t now;
	int err;

	if (!k->io || on == k->reading)
		return;		/* not started (its clock neither), or as it should be */
	now = k->now();
	if (on && now - k->off_since > KMSG_OFF_GRACE_NS) {
		if (lseek(k->fd, 0, SEEK_END) < 0) {
			err = -errno;
			goto fail;
		}
		k->next_seq = 0;	/* the records skipped are not lost */
	}
	err = sd_event_source_set_enabled(k->io, on ? SD_EVENT_ON : SD_EVENT_OFF);
	if (err < 0)
		goto fail;
	k->reading = on;
	if (!on)
		k->off_since = now;
	fprintf(stderr, on ? "<6>hbmguardd: kernel log: a GPU registered: listening for NVIDIA Xids\n" :
		"<6>hbmguardd: kernel log: no GPU registered: not read until one is\n");
	return;
fail:
	fprintf(stderr, "<3>hbmguardd: kernel log: %s: NVIDIA Xids are no longer heard from it\n",
		strerror(-err));
	k->io = sd_event_source_disable_unref(k->io);
	k->reading = false;
}

/**
 * kmsg_fact() - a sink of the core's: which GPUs the module has
 * @ctx: the source
 * @f: a fact
 *
 * The module's DEVICE_SEEN and DEVICE_GONE open and close the log.
 */
void kmsg_fact(void *ctx, const struct hbm_fact *f)
{
	struct hbm_kmsg *k = ctx;

	if (f->origin != HBM_FROM_KERNEL || f->dev.id >= HBMGUARD_MAX_DEVICES)
		return;
	if (f->type == HBM_FACT_DEVICE_SEEN)
		k->gpu[f->dev.id] = f->dev.kind == HBM_DEVICE_GPU;
	else if (f->type == HBM_FACT_DEVICE_GONE)
		k->gpu[f->dev.id] = false;
	else
		return;
	k->listed_at = 0;	/* the list kept may name a device gone */
	gate(k);
}

/*
 * The log as the unit gives it: standard input, opened read-only by the
 * service manager before the sandbox that keeps the daemon from opening it
 * (StandardInput=file:/dev/kmsg, ProtectKernelLogs=yes).  /dev/kmsg is
 * character device 1:11 (devlist[] of drivers/char/mem.c, 6.1 and 6.12).
 *
 * Return: a non-blocking copy of it, or -1 when standard input is not it.
 */
static int given_log(const char **how)
{
	struct stat st;
	int fl = fcntl(STDIN_FILENO, F_GETFL), fd;

	if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY || fstat(STDIN_FILENO, &st) ||
	    !S_ISCHR(st.st_mode) || major(st.st_rdev) != 1 || minor(st.st_rdev) != 11)
		return -1;
	fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*how = " (standard input)";
	return fd;
}

/**
 * kmsg_start() - read the kernel log from its end on, in the loop
 * @k: the source; its GPUs as kmsg_fact() was told them before
 * @loop: the loop
 * @link: the core's way in
 * @path: "/dev/kmsg"
 *
 * Standard input when it is the log (the unit opens it there), else @path.
 * Without the log (no permission, a container) the daemon goes on without
 * this source: said on stderr.  Read while the module has a GPU.
 *
 * Return: 0, or a negative errno.
 */
int kmsg_start(struct hbm_kmsg *k, sd_event *loop, struct hbm_source_link link,
	       const char *path)
{
	bool gpu[HBMGUARD_MAX_DEVICES];
	const char *how = "";
	int err;

	memcpy(gpu, k->gpu, sizeof(gpu));
	memset(k, 0, sizeof(*k));
	memcpy(k->gpu, gpu, sizeof(gpu));
	k->link = link;
	k->now = hbm_monotonic_ns;
	k->fd = -1;
	k->devices = calloc(1, sizeof(*k->devices));
	if (!k->devices) {
		err = -ENOMEM;
		goto fail;
	}
	k->fd = given_log(&how);
	if (k->fd < 0)
		k->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	/* SEEK_END: the next record logged (devkmsg_llseek(), 6.1 and 6.12). */
	if (k->fd < 0 || lseek(k->fd, 0, SEEK_END) < 0) {
		err = -errno;
		goto fail;
	}
	k->off_since = k->now();	/* not read yet, from here on */
	err = sd_event_add_io(loop, &k->io, k->fd, EPOLLIN, on_readable, k);
	if (err >= 0)
		err = sd_event_source_set_enabled(k->io, SD_EVENT_OFF);
	if (err < 0)
		goto fail;
	fprintf(stderr, "<6>hbmguardd: kernel log: %s%s open, read for NVIDIA Xids while a GPU is registered\n",
		path, how);
	gate(k);
	if (!k->reading && k->io)
		fprintf(stderr, "<6>hbmguardd: kernel log: no GPU registered: not read until one is\n");
	return 0;
fail:
	fprintf(stderr, "<4>hbmguardd: kernel log: %s: %s: NVIDIA Xids are not heard from it\n",
		path, strerror(-err));
	kmsg_stop(k);
	return err;
}

/**
 * kmsg_stop() - leave the loop, close the log
 * @k: the source, started or not
 */
void kmsg_stop(struct hbm_kmsg *k)
{
	k->io = sd_event_source_disable_unref(k->io);
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	free(k->devices);
	k->devices = NULL;
}
