/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel log as the NVIDIA driver writes its Xids into it, parsed: pure
 * code, no I/O, for the kernel-log source of hbmguardd (issue 13).  Two
 * steps, each with its own record:
 *
 *   kmsg_parse()    one read() of /dev/kmsg -> struct kmsg_record
 *   nv_log_parse()  a record's text          -> struct nv_log_record
 *
 * Every function returns 0 or a negative errno, and on error sets *why to a
 * sentence saying what was wrong (a static string): the caller logs it and
 * skips the record.  Nothing is ever read past the length given, and an
 * output is written only on success.
 */
#ifndef HBM_NVLOG_H
#define HBM_NVLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/hbmguard.h>

/*
 * Room for the longest text a record carries, unescaped: the kernel keeps
 * at most PRINTKRB_RECORD_MAX (1024) bytes of a record's text
 * (kernel/printk/internal.h, 6.12), LOG_LINE_MAX (1024 less the prefix) in
 * 6.1 (kernel/printk/printk.c).  Twice that here: a longer one is refused,
 * never cut.
 */
#define KMSG_TEXT_MAX		2048

/**
 * struct kmsg_record - one /dev/kmsg record
 * @prio: syslog facility << 3 | level
 * @seq: the record's 64-bit sequence number: a reader that keeps the last
 *	one it acted on skips what it saw before a restart, and sees a gap
 *	as records lost
 * @ts_usec: CLOCK_MONOTONIC microseconds when it was logged
 * @cont: the 'c' flag: a fragment of a line
 * @from_kernel: the facility (@prio >> 3) is the kernel's, 0.  Any process
 *	allowed to open /dev/kmsg for writing (root; a container it is bound
 *	into) can write a record, text and all, but devkmsg_write() in
 *	kernel/printk/printk.c (6.1 and 6.12) never gives one facility 0:
 *	LOG_USER unless the writer names another.  A line not from the kernel
 *	is not the NVIDIA driver's, whatever it says: trust only these.
 * @text: the message, its \xNN escapes undone, NUL-terminated
 * @text_len: bytes of @text
 */
struct kmsg_record {
	uint32_t prio;
	uint64_t seq;
	uint64_t ts_usec;
	bool cont;
	bool from_kernel;
	char text[KMSG_TEXT_MAX + 1];
	size_t text_len;
};

int kmsg_parse(const char *buf, size_t len, struct kmsg_record *r,
	       const char **why);

enum nv_log_type {
	NV_LOG_OTHER = 0,	/* not a line this parser knows: not an error */
	NV_LOG_XID,		/* "NVRM: Xid (PCI:...): N, ..." */
	NV_LOG_GPU,		/* "NVRM: GPU at PCI:...: GPU-<uuid>" */
};

/* NV_PROC_NAME_MAX_LENGTH of NVIDIA's kernel-open/common/inc/nvlimits.h. */
#define NV_PROC_NAME_MAX	100
#define NV_UUID_MAX		HBMGUARD_IDENTITY_LEN

/**
 * struct nv_log_record - what an NVRM line says
 * @type: enum nv_log_type
 * @bdf: the GPU's PCI address as the kernel names it ("0000:3b:00.0"): the
 *	driver logs domain, bus and device; a GPU is function 0
 * @xid: NV_LOG_XID: the Xid
 * @pid: NV_LOG_XID: the process, or -1 when the line says none or
 *	'<unknown>'
 * @gpu_instance: MIG "GPU-I:", or -1
 * @compute_instance: MIG "GPU-CI:", or -1
 * @name: the process's name, "" when the line has none
 * @text: NV_LOG_XID: the rest of the line; NV_LOG_GPU: the UUID
 */
struct nv_log_record {
	enum nv_log_type type;
	char bdf[HBMGUARD_PCI_ADDR_LEN];
	uint32_t xid;
	int64_t pid;
	int32_t gpu_instance;
	int32_t compute_instance;
	char name[NV_PROC_NAME_MAX + 1];
	char text[KMSG_TEXT_MAX + 1];
};

int nv_log_parse(const char *text, size_t len, struct nv_log_record *x,
		 const char **why);

/**
 * struct nv_xid_hbm - an Xid about HBM
 * @xid: its number
 * @meaning: in words
 * @lost_data: whether the error destroyed data (uncorrectable)
 */
struct nv_xid_hbm {
	uint32_t xid;
	const char *meaning;
	bool lost_data;
	bool tables;		/* what the driver retired, remapped or needs may change */
};

const struct nv_xid_hbm *nv_xid_hbm(uint32_t xid);
/* What an Xid means for HBM, or NULL when it is none of those (not HBM). */
const char *nv_xid_hbm_meaning(uint32_t xid);

int nv_bdf_find(const char *bdf, const char (*known)[HBMGUARD_PCI_ADDR_LEN],
		size_t n);

#endif /* HBM_NVLOG_H */
