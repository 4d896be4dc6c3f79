// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of daemon/nvlog.c: /dev/kmsg records and the NVIDIA driver's
 * Xid lines.  The inputs are made with the writers' own format strings:
 * the kernel's record header and escaping (kernel/printk/printk.c,
 * info_print_ext_header() and msg_add_ext_text(), 6.1 and 6.12) and the
 * driver's lines (krcReportXid() and _krcLogUuidOnce() in
 * src/nvidia/src/kernel/gpu/rc/kernel_rc.c of open-gpu-kernel-modules), so
 * that a parser that differs from them fails here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <check.h>
#include "nvlog.h"
#include "unit.h"

/* 570.123.01 .. 595.45.04: XID_PRINT_WITH_ATTR(), each attribution (570.86.15
 * and .16: without the last %s, as XID_OLD with pid= or as XID_NOPROC). */
#define XID_PROC	"NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s%s"
#define XID_NOPROC	"NVRM: Xid (PCI:%04x:%02x:%02x): %d, %s%s"
#define XID_GI		"NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u): %d, pid=%s, name=%s, %s%s"
#define XID_GICI	"NVRM: Xid (PCI:%04x:%02x:%02x GPU-I:%02u GPU-CI:%02u): %d, pid=%s, name=%s, %s%s"
/* 515.43.04 .. 565.57.01. */
#define XID_OLD		"NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s"
#define GPU_AT		"NVRM: GPU at PCI:%04x:%02x:%02x: %s"
/* info_print_ext_header(), with and without CONFIG_PRINTK_CALLER. */
#define KMSG_HDR	"%u,%llu,%llu,%c%s;"

static char line[KMSG_TEXT_MAX * 5], big[KMSG_TEXT_MAX + 1];
static const char *why;

/* msg_add_ext_text(): every byte < ' ', >= 127 and '\' as \x%02x. */
static size_t escape(char *out, const char *text, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = text[i];

		if (c < ' ' || c >= 127 || c == '\\')
			n += sprintf(out + n, "\\x%02x", c);
		else
			out[n++] = c;
	}
	out[n++] = '\n';
	out[n] = '\0';
	return n;
}

/* A record as /dev/kmsg's read() returns it. */
static size_t record(char *out, unsigned int prio, unsigned long long seq,
		     unsigned long long usec, char flag, const char *caller,
		     const char *text, size_t text_len, const char *dict)
{
	size_t n = sprintf(out, KMSG_HDR, prio, seq, usec, flag, caller);

	n += escape(out + n, text, text_len);
	n += sprintf(out + n, "%s", dict);
	return n;
}

static int nv(const char *text, struct nv_log_record *x)
{
	return nv_log_parse(text, strlen(text), x, &why);
}

START_TEST(kmsg_records)
{
	static struct kmsg_record r;
	size_t n;

	n = record(line, 4, 1234567, 89012345, '-', "", "NVRM: hello", 11,
		   " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert_uint_eq(r.prio, 4);
	ck_assert_uint_eq(r.seq, 1234567);
	ck_assert_uint_eq(r.ts_usec, 89012345);
	ck_assert(!r.cont);
	ck_assert_str_eq(r.text, "NVRM: hello");
	ck_assert_uint_eq(r.text_len, 11);
	ck_assert(r.from_kernel);

	/*
	 * What userspace writes to /dev/kmsg: devkmsg_write() gives it LOG_USER
	 * (8) without a "<N>" prefix, the prefix's facility with one, never the
	 * kernel's 0.  The same text is then no driver's.
	 */
	n = record(line, 8 | 4, 1234568, 89012346, '-', "", "NVRM: hello", 11, "");
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert(!r.from_kernel);
	n = record(line, 23 << 3 | 4, 1234569, 89012347, '-', "", "NVRM: hello", 11, "");
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert(!r.from_kernel);

	/* CONFIG_PRINTK_CALLER's field, and a fragment. */
	n = record(line, 6, 18446744073709551615ULL, 0, 'c', ",caller=T42", "x", 1, "");
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert_uint_eq(r.seq, 18446744073709551615ULL);
	ck_assert(r.cont);
	ck_assert_str_eq(r.text, "x");

	/* Escapes undone: a backslash, a tab, a byte above 126. */
	n = record(line, 4, 1, 1, '-', "", "a\\b\tc\xe9", 6, "");
	ck_assert(strstr(line, "a\\x5cb\\x09c\\xe9\n"));
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert_uint_eq(r.text_len, 6);
	ck_assert_mem_eq(r.text, "a\\b\tc\xe9", 6);

	/* The longest text the kernel keeps, and one byte more. */
	memset(big, 'z', sizeof(big));
	n = record(line, 4, 2, 2, '-', "", big, KMSG_TEXT_MAX, "");
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert_uint_eq(r.text_len, KMSG_TEXT_MAX);
	n = record(line, 4, 2, 2, '-', "", big, KMSG_TEXT_MAX + 1, "");
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), -E2BIG);
}
END_TEST

START_TEST(kmsg_malformed)
{
	static const struct {
		const char *rec;
		size_t len;	/* 0: strlen */
	} bad[] = {
		{ "4,1,1,-;text", 0 },		/* no newline */
		{ "4,1,1;text\n", 0 },		/* no flags */
		{ "4,1,1,x;text\n", 0 },		/* flags neither - nor c */
		{ "4,1,1,-text\n", 0 },		/* no ';' */
		{ "4,1,-;text\n", 0 },		/* a field missing */
		{ "a,1,1,-;text\n", 0 },		/* not a number */
		{ "4,-1,1,-;text\n", 0 },		/* a sign */
		{ "4,18446744073709551616,1,-;x\n", 0 },	/* seq beyond 64 bits */
		{ "4294967296,1,1,-;x\n", 0 },	/* prio beyond 32 bits */
		{ "4,1,1,-;a\tb\n", 0 },		/* a byte the kernel escapes */
		{ "4,1,1,-;a\x7f" "b\n", 0 },
		{ "4,1,1,-;a\\b\n", 0 },		/* '\' unescaped */
		{ "4,1,1,-;a\\x4\n", 0 },		/* short escape */
		{ "4,1,1,-;a\\xg0\n", 0 },		/* not hex */
		{ "4,1,1,-;a\\x00b\n", 0 },	/* an escaped NUL */
		{ "4,1,1,-;a\0b\n", 12 },	/* a NUL byte */
		{ "4,1,1,-;text\nSUBSYSTEM=pci\n", 0 },	/* not a continuation */
		{ "4,1,1,-;text\n SUBSYSTEM=pci", 0 },	/* continuation cut */
		{ "", 0 },
	};
	static struct kmsg_record r, before;
	unsigned int i;

	memset(&r, 0x5a, sizeof(r));
	before = r;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].rec);

		why = NULL;
		ck_assert_msg(kmsg_parse(bad[i].rec, len, &r, &why) == -EINVAL,
			      "accepted: %s", bad[i].rec);
		ck_assert_ptr_nonnull(why);
		ck_assert_msg(!memcmp(&r, &before, sizeof(r)), "changed by: %s", bad[i].rec);
	}
}
END_TEST

START_TEST(nv_xid_lines)
{
	static struct nv_log_record x;

	snprintf(line, sizeof(line), XID_PROC, 0, 0x3b, 0, 48, "4242", "python3",
		 "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
		 "");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_int_eq(x.type, NV_LOG_XID);
	ck_assert_str_eq(x.bdf, "0000:3b:00.0");
	ck_assert_uint_eq(x.xid, 48);
	ck_assert_int_eq(x.pid, 4242);
	ck_assert_str_eq(x.name, "python3");
	ck_assert_int_eq(x.gpu_instance, -1);
	ck_assert_int_eq(x.compute_instance, -1);
	ck_assert(!strncmp(x.text, "An uncorrectable double bit error", 33));
	ck_assert_ptr_nonnull(nv_xid_hbm_meaning(x.xid));

	/* Without a process: no pid= at all (570 and later). */
	snprintf(line, sizeof(line), XID_NOPROC, 0x19, 1, 0, 79,
		 "GPU has fallen off the bus.", "");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_str_eq(x.bdf, "0019:01:00.0");
	ck_assert_uint_eq(x.xid, 79);
	ck_assert_int_eq(x.pid, -1);
	ck_assert_str_eq(x.name, "");
	ck_assert_str_eq(x.text, "GPU has fallen off the bus.");
	ck_assert_ptr_null(nv_xid_hbm_meaning(x.xid));

	/* MIG attribution, and the root cause appended. */
	snprintf(line, sizeof(line), XID_GI, 0, 1, 0, 5, 94, "7194", "train",
		 "Contained: CE User Channel (0x9). RST: No, D-RST: No", "");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_int_eq(x.gpu_instance, 5);
	ck_assert_int_eq(x.compute_instance, -1);
	ck_assert_uint_eq(x.xid, 94);
	snprintf(line, sizeof(line), XID_GICI, 0x10000, 0xc1, 0x1f, 3, 2, 154, "1", "a b",
		 "recovery", " caused by previous Xid 95");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_str_eq(x.bdf, "10000:c1:1f.0");
	ck_assert_int_eq(x.gpu_instance, 3);
	ck_assert_int_eq(x.compute_instance, 2);
	ck_assert_str_eq(x.name, "a b");
	ck_assert_str_eq(x.text, "recovery caused by previous Xid 95");

	/* 515 .. 565: a process always, '<unknown>' when none. */
	snprintf(line, sizeof(line), XID_OLD, 0, 0x3b, 0, 63, "'<unknown>'", "<unknown>",
		 "Row Remapper: New row marked for remapping, reset gpu to activate.");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_int_eq(x.pid, -1);
	ck_assert_str_eq(x.name, "<unknown>");
	ck_assert_uint_eq(x.xid, 63);

	/* Address to UUID. */
	snprintf(line, sizeof(line), GPU_AT, 0, 0, 8,
		 "GPU-7f3c9a2e-1b4d-4e8f-9c6a-2d5b8e1f0a3c");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_int_eq(x.type, NV_LOG_GPU);
	ck_assert_str_eq(x.bdf, "0000:00:08.0");
	ck_assert_str_eq(x.text, "GPU-7f3c9a2e-1b4d-4e8f-9c6a-2d5b8e1f0a3c");

	/* Not the driver's Xid lines: no error, no record. */
	x.type = NV_LOG_XID;
	ck_assert_int_eq(nv("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.65.06", &x), 0);
	ck_assert_int_eq(x.type, NV_LOG_OTHER);
	ck_assert_int_eq(nv("usb 1-1: new high-speed USB device", &x), 0);
	ck_assert_int_eq(x.type, NV_LOG_OTHER);
	ck_assert_int_eq(nv("", &x), 0);
	ck_assert_int_eq(x.type, NV_LOG_OTHER);
}
END_TEST

START_TEST(nv_malformed)
{
	static const char *const bad[] = {
		"NVRM: Xid (PCI:0000:3B:00): 48, pid=1, name=a, t",	/* upper case */
		"NVRM: Xid (PCI:000:3b:00): 48, pid=1, name=a, t",	/* 3-digit domain */
		"NVRM: Xid (PCI:0000:3b:0): 48, pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:20): 48, pid=1, name=a, t",	/* device > 1f */
		"NVRM: Xid (PCI:0000:3b:00.0): 48, pid=1, name=a, t",	/* a function */
		"NVRM: Xid (PCI:0000:3b:00 GPU-I:x): 48, pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00 GPU-X:1): 48, pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00): , pid=1, name=a, t",	/* no Xid */
		"NVRM: Xid (PCI:0000:3b:00): -48, pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00): 2147483648, pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00): 48",			/* cut */
		"NVRM: Xid (PCI:0000:3b:00): 48 pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00): 48, pid=abc, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00): 48, pid=1 name=a, t",
		"NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a",	/* name not ended */
		"NVRM: Xid (PCI:0000:3b:00) 48, pid=1, name=a, t",
		"NVRM: Xid (PCI:0000:3b:00",
		"NVRM: Xid (",
		"NVRM: GPU at PCI:0000:00:08: ",				/* no UUID */
		"NVRM: GPU at PCI:0000:00:08: GPU-1 2",
		"NVRM: GPU at PCI:0000:00:08 GPU-1",
		"NVRM: GPU at PCI:0000:00:08: GPU-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	};
	static struct nv_log_record x, before;
	char name[NV_PROC_NAME_MAX + 2];
	unsigned int i;

	memset(&x, 0x5a, sizeof(x));
	before = x;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(nv(bad[i], &x) == -EINVAL, "accepted: %s", bad[i]);
		ck_assert_ptr_nonnull(why);
		ck_assert_msg(!memcmp(&x, &before, sizeof(x)), "changed by: %s", bad[i]);
	}
	/* A name one byte longer than the driver's; the longest it writes. */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(line, sizeof(line), XID_PROC, 0, 0x3b, 0, 48, "1", name, "t", "");
	ck_assert_int_eq(nv(line, &x), -EINVAL);
	name[sizeof(name) - 2] = '\0';
	snprintf(line, sizeof(line), XID_PROC, 0, 0x3b, 0, 48, "1", name, "t", "");
	ck_assert_int_eq(nv(line, &x), 0);
	ck_assert_uint_eq(strlen(x.name), NV_PROC_NAME_MAX);
	/* An embedded NUL; a line longer than a record. */
	x = before;
	ck_assert_int_eq(nv_log_parse("NVRM: Xid (PCI:0000:3b:00): 48, \0t", 34, &x, &why),
			 -EINVAL);
	ck_assert(!memcmp(&x, &before, sizeof(x)));
	memset(line, 'a', KMSG_TEXT_MAX + 1);
	ck_assert_int_eq(nv_log_parse(line, KMSG_TEXT_MAX + 1, &x, &why), -E2BIG);
}
END_TEST

/* Record to Xid, as the source will: the kmsg seq comes along for dedupe. */
START_TEST(kmsg_to_xid)
{
	static struct kmsg_record r;
	static struct nv_log_record x;
	static const char known[][HBMGUARD_PCI_ADDR_LEN] = { "0000:3b:00.0", "0000:86:00.0" };
	char text[512];
	size_t n;

	snprintf(text, sizeof(text), XID_PROC, 0, 0x86, 0, 95, "77", "rank\\3",
		 "Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No", "");
	/*
	 * As the driver prints it: nv_printf() (kernel-open/nvidia/os-interface.c,
	 * 595.45.04) prepends KERN_CONT to every line (a record of its own: 'c')
	 * and prints through printk(), no device: no dictionary.
	 */
	n = record(line, 3, 9001, 5, 'c', "", text, strlen(text), "");
	ck_assert(strstr(line, "name=rank\\x5c3, "));
	ck_assert_int_eq(kmsg_parse(line, n, &r, &why), 0);
	ck_assert(r.from_kernel);
	ck_assert(r.cont);
	ck_assert_int_eq(nv_log_parse(r.text, r.text_len, &x, &why), 0);
	ck_assert_uint_eq(r.seq, 9001);
	ck_assert_uint_eq(x.xid, 95);
	ck_assert_str_eq(x.name, "rank\\3");
	ck_assert_int_eq(nv_bdf_find(x.bdf, known, 2), 1);
	ck_assert_int_eq(nv_bdf_find("0000:3c:00.0", known, 2), -ENODEV);
	ck_assert_int_eq(nv_bdf_find(x.bdf, known, 0), -ENODEV);
}
END_TEST

/* Which Xids lost data: the errors themselves, not what became of the page. */
START_TEST(xid_table)
{
	static const uint32_t lost[] = { 48, 94, 95, 140 }, kept[] = { 63, 64, 92 };
	size_t i;

	for (i = 0; i < sizeof(lost) / sizeof(lost[0]); i++)
		ck_assert(nv_xid_hbm(lost[i]) && nv_xid_hbm(lost[i])->lost_data);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		ck_assert(nv_xid_hbm(kept[i]) && !nv_xid_hbm(kept[i])->lost_data);
	ck_assert_ptr_null(nv_xid_hbm(79));	/* fallen off the bus: not HBM */
	ck_assert_ptr_null(nv_xid_hbm(0));
	ck_assert_str_eq(nv_xid_hbm_meaning(95), "uncontained ECC error");
}
END_TEST

Suite *nvlog_suite(void)
{
	Suite *s = suite_create("nvlog");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, kmsg_records);
	tcase_add_test(tc, kmsg_malformed);
	tcase_add_test(tc, nv_xid_lines);
	tcase_add_test(tc, nv_malformed);
	tcase_add_test(tc, kmsg_to_xid);
	tcase_add_test(tc, xid_table);
	suite_add_tcase(s, tc);
	return s;
}
