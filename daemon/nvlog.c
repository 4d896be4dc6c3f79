// SPDX-License-Identifier: GPL-2.0
/*
 * The NVIDIA driver's Xid lines in the kernel log, from /dev/kmsg.
 *
 * The record, as Documentation/ABI/testing/dev-kmsg (identical in 6.1 and
 * 6.12) describes it and info_print_ext_header() / msg_add_ext_text() in
 * kernel/printk/printk.c write it:
 *
 *	"%u,%llu,%llu,%c[,caller=T1];" prio, seq, monotonic usec, flag ('-' or
 *	'c'), more comma-separated fields later kernels may add (ignored)
 *	text, every byte < ' ', >= 127 and '\' itself written "\x%02x", then
 *	'\n'
 *	" KEY=VALUE\n" continuation lines (SUBSYSTEM=, DEVICE=), ignored
 *
 * One read() returns one whole record.  The driver's line, from
 * krcReportXid() in src/nvidia/src/kernel/gpu/rc/kernel_rc.c of NVIDIA's
 * open-gpu-kernel-modules:
 *
 *   570.123.01 .. 595.45.04 (and later):
 *	"NVRM: Xid (" attr "): %d, pid=%s, name=%s, %s%s\n" with a process,
 *	"NVRM: Xid (" attr "): %d, %s%s\n" without one (no pid= at all);
 *	the last %s a root cause " caused by previous Xid %d" or nothing
 *   570.86.15, 570.86.16: the same without the root cause's %s
 *   515.43.04 .. 565.57.01:
 *	"NVRM: Xid (" attr "): %d, pid=%s, name=%s, %s\n", always with a
 *	process, pid "'<unknown>'" and name "<unknown>" when there is none
 *   attr, both: "PCI:%04x:%02x:%02x" (domain, bus, device), then
 *	" GPU-I:%02u" and " GPU-CI:%02u" when MIG attributes the error
 *
 * and once per GPU before its first Xid (_krcLogUuidOnce(), same file,
 * every release above): "NVRM: GPU at PCI:%04x:%02x:%02x: %s\n", the %s its
 * UUID ("GPU-..."), which ties the address to the identity NVML reports.
 * The process name ends at the first ", " after "name=": a name holding
 * ", " itself cannot be told from the text, and is cut there.  DCGM reads
 * the same lines with ";NVRM: Xid \(PCI:(.*)\): (\d+)," (DcgmKmsgReader.cpp).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nvlog.h"

#define FAIL(msg) do { *why = (msg); return -EINVAL; } while (0)

/* A decimal number of at most @max, at *p below @end; advances *p. */
static bool parse_dec(const char **p, const char *end, uint64_t max, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s == end || *s < '0' || *s > '9')
		return false;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		unsigned int d = *s - '0';

		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*p = s;
	*out = v;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Lower-case hex digits as %0Nx writes them: @min..@max of them. */
static bool parse_hex(const char **p, const char *end, unsigned int min,
		      unsigned int max, uint32_t *out)
{
	const char *s = *p;
	uint32_t v = 0;
	unsigned int n;

	for (n = 0; s < end && n < max && hexval(*s) >= 0 && !(*s >= 'A' && *s <= 'F');
	     n++, s++)
		v = v << 4 | hexval(*s);
	if (n < min || (s < end && hexval(*s) >= 0))
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool skip(const char **p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(end - *p) < n || memcmp(*p, lit, n))
		return false;
	*p += n;
	return true;
}

/**
 * kmsg_parse() - one record of /dev/kmsg
 * @buf: what one read() returned
 * @len: its length
 * @r: the record, on success
 * @why: on error, what was wrong
 *
 * Return: 0, or -EINVAL for a record that is not in the kernel's format
 * (a NUL byte, a bad header, a byte the kernel would have escaped, a bad
 * escape, an escaped NUL, no newline, a line after the text that is no
 * continuation) or -E2BIG for a text longer than KMSG_TEXT_MAX.
 */
int kmsg_parse(const char *buf, size_t len, struct kmsg_record *r, const char **why)
{
	const char *p = buf, *end = buf + len, *nl;
	uint64_t prio, seq, ts;
	size_t n = 0;
	bool cont;

	if (memchr(buf, '\0', len))
		FAIL("a NUL byte in the record");
	if (!parse_dec(&p, end, UINT32_MAX, &prio) || !skip(&p, end, ",") ||
	    !parse_dec(&p, end, UINT64_MAX, &seq) || !skip(&p, end, ",") ||
	    !parse_dec(&p, end, UINT64_MAX, &ts) || !skip(&p, end, ","))
		FAIL("the header is not \"prio,seq,usec,flags;\"");
	if (p == end || (*p != '-' && *p != 'c'))
		FAIL("the header's flags are neither '-' nor 'c'");
	cont = *p++ == 'c';
	/* Fields a later kernel adds (",caller=T1") up to the ';': ignored. */
	if (p < end && *p == ',') {
		while (p < end && *p != ';' && *p != '\n')
			p++;
	}
	if (!skip(&p, end, ";"))
		FAIL("the header does not end with ';'");
	nl = memchr(p, '\n', end - p);
	if (!nl)
		FAIL("the text does not end with a newline");

	/* Check everything before writing anything. */
	for (const char *s = p; s < nl; s++, n++) {
		if (*s == '\\') {
			if (nl - s < 4 || s[1] != 'x' || hexval(s[2]) < 0 || hexval(s[3]) < 0)
				FAIL("a '\\' that is not a \\xNN escape");
			if (!hexval(s[2]) && !hexval(s[3]))
				FAIL("an escaped NUL in the text");
			s += 3;
		} else if ((unsigned char)*s < ' ' || (unsigned char)*s >= 127) {
			FAIL("a byte the kernel would have escaped");
		}
	}
	if (n > KMSG_TEXT_MAX) {
		*why = "a text longer than the kernel writes";
		return -E2BIG;
	}
	for (const char *s = nl + 1; s < end; ) {
		const char *e = memchr(s, '\n', end - s);

		if (*s != ' ' || !e)
			FAIL("after the text, a line that is not a continuation");
		s = e + 1;
	}

	r->prio = prio;
	r->seq = seq;
	r->ts_usec = ts;
	r->cont = cont;
	r->from_kernel = !(prio >> 3);	/* a write to /dev/kmsg never has 0 */
	for (n = 0; p < nl; n++) {
		if (*p == '\\') {
			r->text[n] = hexval(p[2]) << 4 | hexval(p[3]);
			p += 4;
		} else {
			r->text[n] = *p++;
		}
	}
	r->text[n] = '\0';
	r->text_len = n;
	return 0;
}

/* "PCI:%04x:%02x:%02x" -> "dddd:bb:dd.0"; advances *p. */
static bool parse_pci(const char **p, const char *end, char bdf[HBMGUARD_PCI_ADDR_LEN])
{
	uint32_t dom, bus, devno;

	if (!skip(p, end, "PCI:") || !parse_hex(p, end, 4, 8, &dom) ||
	    !skip(p, end, ":") || !parse_hex(p, end, 2, 2, &bus) ||
	    !skip(p, end, ":") || !parse_hex(p, end, 2, 2, &devno) || devno > 0x1f)
		return false;
	snprintf(bdf, HBMGUARD_PCI_ADDR_LEN, "%04x:%02x:%02x.0", dom, bus, devno);
	return true;
}

/* MIG: " GPU-I:%02u" and " GPU-CI:%02u", each when present. */
static bool parse_mig(const char **p, const char *end, int32_t *gi, int32_t *ci)
{
	uint64_t v;

	*gi = *ci = -1;
	if (skip(p, end, " GPU-I:")) {
		if (!parse_dec(p, end, INT32_MAX, &v))
			return false;
		*gi = v;
		if (skip(p, end, " GPU-CI:")) {
			if (!parse_dec(p, end, INT32_MAX, &v))
				return false;
			*ci = v;
		}
	}
	return true;
}

static int parse_xid(const char *p, const char *end, struct nv_log_record *x,
		     const char **why)
{
	const char *name, *comma;
	uint64_t v;

	if (!parse_pci(&p, end, x->bdf))
		FAIL("an Xid line whose PCI address is not %04x:%02x:%02x");
	if (!parse_mig(&p, end, &x->gpu_instance, &x->compute_instance))
		FAIL("an Xid line with a bad GPU-I or GPU-CI");
	if (!skip(&p, end, "): "))
		FAIL("an Xid line without \"): \" after its address");
	if (!parse_dec(&p, end, INT32_MAX, &v))
		FAIL("an Xid line without a decimal Xid");
	x->xid = v;
	if (!skip(&p, end, ", "))
		FAIL("an Xid line without \", \" after its Xid");
	x->pid = -1;
	x->name[0] = '\0';
	if (skip(&p, end, "pid=")) {
		if (!skip(&p, end, "'<unknown>'")) {
			if (!parse_dec(&p, end, INT32_MAX, &v))
				FAIL("an Xid line whose pid is neither a number nor '<unknown>'");
			x->pid = v;
		}
		if (!skip(&p, end, ", "))
			FAIL("an Xid line without \", \" after its pid");
		if (skip(&p, end, "name=")) {
			name = p;
			for (comma = p; comma + 1 < end; comma++)
				if (comma[0] == ',' && comma[1] == ' ')
					break;
			if (comma + 1 >= end)
				FAIL("an Xid line without \", \" after its process name");
			if (comma - name > NV_PROC_NAME_MAX)
				FAIL("an Xid line whose process name is longer than the driver's");
			memcpy(x->name, name, comma - name);
			x->name[comma - name] = '\0';
			p = comma + 2;
		}
	}
	memcpy(x->text, p, end - p);
	x->text[end - p] = '\0';
	x->type = NV_LOG_XID;
	return 0;
}

static int parse_gpu(const char *p, const char *end, struct nv_log_record *x,
		     const char **why)
{
	const char *s;

	if (!parse_pci(&p, end, x->bdf))
		FAIL("a GPU line whose PCI address is not %04x:%02x:%02x");
	if (!skip(&p, end, ": ") || p == end)
		FAIL("a GPU line without \": \" and a UUID after its address");
	if (end - p >= NV_UUID_MAX)
		FAIL("a GPU line whose UUID is longer than an identity");
	for (s = p; s < end; s++)
		if (*s <= ' ' || *s > '~')
			FAIL("a GPU line whose UUID has a space or a byte not printable");
	memcpy(x->text, p, end - p);
	x->text[end - p] = '\0';
	x->xid = 0;
	x->pid = -1;
	x->gpu_instance = x->compute_instance = -1;
	x->name[0] = '\0';
	x->type = NV_LOG_GPU;
	return 0;
}

/**
 * nv_log_parse() - what a kernel log line of the NVIDIA driver says
 * @text: the record's text (struct kmsg_record's), without the newline; only
 *	a record from_kernel can be the driver's (userspace can write any text
 *	to /dev/kmsg)
 * @len: its length, at most KMSG_TEXT_MAX
 * @x: the record, on success; for a line that is not the driver's, only
 *	its type, NV_LOG_OTHER
 * @why: on error, what was wrong
 *
 * Return: 0 (the type says what it was), -EINVAL for an "NVRM: Xid" or
 * "NVRM: GPU at" line not in the driver's format, -E2BIG for a text longer
 * than a record holds.
 */
int nv_log_parse(const char *text, size_t len, struct nv_log_record *x,
		 const char **why)
{
	struct nv_log_record tmp;
	const char *p = text, *end = text + len;
	int err;

	if (len > KMSG_TEXT_MAX) {
		*why = "a line longer than a kernel log record";
		return -E2BIG;
	}
	if (memchr(text, '\0', len))
		FAIL("a NUL byte in the line");
	if (skip(&p, end, "NVRM: Xid ("))
		err = parse_xid(p, end, &tmp, why);
	else if (skip(&p, end, "NVRM: GPU at "))
		err = parse_gpu(p, end, &tmp, why);
	else
		err = 1;	/* not a line of the driver's */
	if (err > 0) {
		x->type = NV_LOG_OTHER;
		return 0;
	}
	if (!err)
		*x = tmp;
	return err;
}

/*
 * The Xids about HBM, the one table of them in hbmguardd.  Numbers and names:
 * src/common/sdk/nvidia/inc/nverror.h of NVIDIA's open-gpu-kernel-modules
 * (595.45.04); what each means: NVIDIA's Xid catalog
 * (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html).  "Data
 * lost" is whether the error itself destroyed data some process held: a
 * double-bit error, contained (94: the driver ended the processes that
 * used the memory) or not (95: every process on the GPU, which needs a
 * reset), or one the driver could not even retire the page for (140).  A
 * retirement or remap (63), its failure (64: the GPU is for RMA) and too
 * many single-bit errors (92) say what happened to the memory, not to
 * anyone's data; so do their successors on Blackwell (156, 157), a changed
 * recovery action (154: a reset may be needed) and memory lost to
 * retirement (168).  171 names HBM (DRAM) as the place of an uncorrectable
 * error that 48 reported; 172 (SRAM) is not HBM.  kmod/nvidia.c's
 * xid_is_hbm() passes the same Xids from the tracepoint.  "Tables": after
 * it, the driver's retired pages, remapped rows or recovery action may
 * have changed (nvml_facts.c reads them again); 92 only counts errors, and
 * it comes in storms.
 */
static const struct nv_xid_hbm xid_hbm[] = {
	{ 48, "double-bit ECC error", true, true },		/* ROBUST_CHANNEL_GPU_ECC_DBE */
	{ 63, "page retirement or row remap event", false, true },
							/* INFOROM_PAGE_RETIREMENT_EVENT */
	{ 64, "page retirement or row remap failure", false, true },
							/* INFOROM_PAGE_RETIREMENT_FAILURE */
	{ 92, "excessive single-bit ECC errors", false, false },	/* EXCESSIVE_SBE_INTERRUPTS */
	{ 94, "contained ECC error", true, true },		/* ROBUST_CHANNEL_CONTAINED_ERROR */
	{ 95, "uncontained ECC error", true, true },		/* ROBUST_CHANNEL_UNCONTAINED_ERROR */
	{ 140, "unrecovered ECC error", true, true },		/* UNRECOVERABLE_ECC_ERROR_ESCAPE */
	{ 154, "GPU recovery action changed", false, true },	/* GPU_RECOVERY_ACTION_CHANGED */
	{ 156, "resource retirement event", false, true },	/* RESOURCE_RETIREMENT_EVENT */
	{ 157, "resource retirement failure", false, true },	/* RESOURCE_RETIREMENT_FAILURE */
	{ 168, "reduced GPU memory capacity", false, true },	/* REDUCED_GPU_MEMORY_CAPACITY */
	{ 171, "uncorrectable DRAM error", true, true },	/* UNCORRECTABLE_DRAM_ERROR */
};

/**
 * nv_xid_hbm() - what an Xid means for HBM
 * @xid: the Xid
 *
 * Return: its entry, or NULL for an Xid that is not about HBM.
 */
const struct nv_xid_hbm *nv_xid_hbm(uint32_t xid)
{
	size_t i;

	for (i = 0; i < sizeof(xid_hbm) / sizeof(xid_hbm[0]); i++)
		if (xid_hbm[i].xid == xid)
			return &xid_hbm[i];
	return NULL;
}

/* What an Xid means for HBM, or NULL when it is none of those (not HBM). */
const char *nv_xid_hbm_meaning(uint32_t xid)
{
	const struct nv_xid_hbm *x = nv_xid_hbm(xid);

	return x ? x->meaning : NULL;
}

/**
 * nv_bdf_find() - which known GPU an address is
 * @bdf: the address of an nv_log_record
 * @known: the addresses of the GPUs known (registered)
 * @n: how many
 *
 * Return: its index in @known, or -ENODEV for a GPU of no known device.
 */
int nv_bdf_find(const char *bdf, const char (*known)[HBMGUARD_PCI_ADDR_LEN], size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strncmp(bdf, known[i], HBMGUARD_PCI_ADDR_LEN))
			return (int)i;
	return -ENODEV;
}
