/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel log (kmsg.c): the NVIDIA driver's "NVRM: Xid" lines read from
 * /dev/kmsg, a source of facts.
 */
#ifndef HBM_KMSG_H
#define HBM_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>
#include <linux/hbmguard.h>

#include "core.h"
#include "nvlog.h"

/*
 * A read of /dev/kmsg needs room for the whole record or fails (-EINVAL).
 * devkmsg_read() formats a record into CONSOLE_EXT_LOG_MAX (8192) bytes in
 * 6.1 (include/linux/printk.h), into struct printk_buffers' outbuf,
 * PRINTK_MESSAGE_MAX (2048) bytes, in 6.12 (kernel/printk/internal.h):
 * the larger of the two.
 */
#define KMSG_READ_MAX		8192

/* Lines of one kind: at most KMSG_LINES_BURST per KMSG_LINES_PERIOD_NS. */
#define KMSG_LINES_BURST	10
#define KMSG_LINES_PERIOD_NS	(60 * 1000000000ULL)
/*
 * Not read for longer (no GPU registered), the log is read on from its end:
 * what was logged meanwhile had no GPU to be taken on.  Within it (a GPU
 * unregistered and registered again by its driver's reset or a module
 * reload, the first GPU of a slow start) it is read on from where it was
 * left, the Xid that caused it among the records.
 */
#define KMSG_OFF_GRACE_NS	(30 * 1000000000ULL)
/*
 * The level of the driver's lines: nv_printf() gives none, so they take
 * default_message_loglevel, 4 (KERN_WARNING) by CONFIG_MESSAGE_LOGLEVEL_DEFAULT
 * in Debian's 6.1 and 6.12 configs; a more urgent one is taken too.
 */
#define KMSG_DRIVER_LEVEL	4

/* The device list kept is read again when older (a GPU replaced at an address). */
#define KMSG_LIST_FRESH_NS	(1000000000ULL)

/*
 * The kinds of lines, each with its own share: what one party can cause
 * (a process writing /dev/kmsg, a CUDA program whose faults the driver
 * logs as Xids not about HBM) does not hide the others.
 */
enum kmsg_line_kind {
	KMSG_REFUSED,		/* an NVRM line not from the kernel */
	KMSG_MALFORMED,		/* a record or an NVRM line not in its format */
	KMSG_NOT_HBM,		/* an Xid not about HBM */
	KMSG_NO_GPU,		/* an Xid at an address of no GPU; no device list */
	KMSG_LOST,		/* records overwritten before they were read */
	__KMSG_LINES
};

struct kmsg_lines {
	uint64_t since;			/* the current period began; 0: none yet */
	unsigned int told;		/* lines in it */
	unsigned int untold;		/* lines kept back in it */
};

struct hbm_kmsg {
	struct hbm_source_link link;	/* to the core */
	int fd;
	sd_event_source *io;
	/*
	 * The module's GPUs, by device id, as their DEVICE_SEEN and
	 * DEVICE_GONE told kmsg_fact(): the log is read while there is one.
	 * Kept from before kmsg_start() (the kernel's source sees its
	 * devices when it starts, first).
	 */
	bool gpu[HBMGUARD_MAX_DEVICES];
	bool reading;			/* .io is on */
	uint64_t off_since;		/* CLOCK_MONOTONIC ns: not read since */
	uint64_t next_seq;		/* the record expected next; 0: none read yet */
	struct device_list *devices;	/* as last listed */
	char pci[HBMGUARD_MAX_DEVICES][HBMGUARD_PCI_ADDR_LEN];	/* their addresses */
	uint64_t listed_at;		/* CLOCK_MONOTONIC ns; 0: never */
	struct kmsg_lines lines[__KMSG_LINES];	/* by kind */
	uint64_t (*now)(void);		/* CLOCK_MONOTONIC ns; a test's own clock */
	char buf[KMSG_READ_MAX];
	struct kmsg_record rec;
	struct nv_log_record nv;
};

int kmsg_start(struct hbm_kmsg *k, sd_event *loop, struct hbm_source_link link,
	       const char *path);
void kmsg_record(struct hbm_kmsg *k, const char *buf, size_t len);
void kmsg_fact(void *ctx, const struct hbm_fact *f);
void kmsg_stop(struct hbm_kmsg *k);

#endif /* HBM_KMSG_H */
