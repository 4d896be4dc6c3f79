// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel log as hbmguardd reads it (kmsg.c): a record of /dev/kmsg
 * (kmsg_parse()), the NVIDIA driver's line in its text (nv_log_parse()),
 * and the GPU that line names among those known (nv_bdf_find()).  Users
 * put text into the kernel's lines (a program's name the kernel prints, a
 * line a container writes to a /dev/kmsg given it), so any record may
 * come.  The input's first byte picks how it is taken:
 *
 *	0  a record as read() returns it, and its text as kmsg.c parses it
 *	1  a text as nv_log_parse() is given it, whatever its length
 *	2  fields a record is written from as the kernel writes one
 *	   (info_print_ext_header(), msg_add_ext_text()): read back exactly
 *	3  fields an Xid or GPU line is written from as the driver writes
 *	   one (krcReportXid(), _krcLogUuidOnce()), in such a record: read
 *	   back exactly
 *
 * What the callers rely on: on success, text NUL-terminated at text_len
 * (no NUL before), within KMSG_TEXT_MAX; a record's names NUL-terminated
 * within their fields (bdf is compared with strncmp(), name and text are
 * printed), an address in the kernel's form; on error, *why set and the
 * output untouched.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "nvlog.h"
#include "fuzz.h"

#define CANARY	0x5a

static struct kmsg_record rec, rec2, before_rec;
static struct nv_log_record nv, before_nv;

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
	return n;
}

/* A record as devkmsg_read() writes it, in a buffer of its own length. */
static char *write_record(uint32_t prio, uint64_t seq, uint64_t usec, bool cont,
			  const char *caller, const char *text, size_t text_len,
			  const char *dict, size_t *len)
{
	char *b = malloc(96 + strlen(caller) + 4 * text_len + strlen(dict));
	size_t n;

	if (!b)
		abort();
	n = sprintf(b, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%c%s;", prio, seq, usec,
		    cont ? 'c' : '-', caller);
	n += escape(b + n, text, text_len);
	b[n++] = '\n';
	n += sprintf(b + n, "%s", dict);
	*len = n;
	return b;
}

static bool str_in(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

/* What a record that parsed says holds, and parsed again as written, it says again. */
static void record_ok(const struct kmsg_record *r)
{
	const char *why = NULL;
	char *again;
	size_t len;

	assert(r->text_len <= KMSG_TEXT_MAX);
	assert(r->text[r->text_len] == '\0');
	assert(strlen(r->text) == r->text_len);
	assert(r->from_kernel == !(r->prio >> 3));

	again = write_record(r->prio, r->seq, r->ts_usec, r->cont, "", r->text, r->text_len,
			     "", &len);
	assert(!kmsg_parse(again, len, &rec2, &why));
	assert(rec2.prio == r->prio && rec2.seq == r->seq && rec2.ts_usec == r->ts_usec &&
	       rec2.cont == r->cont && rec2.from_kernel == r->from_kernel &&
	       rec2.text_len == r->text_len && !memcmp(rec2.text, r->text, r->text_len + 1));
	free(again);
}

/* An address as the kernel names a PCI function 0: "%04x:%02x:%02x.0". */
static void bdf_ok(const char *bdf)
{
	unsigned int dom, bus, dev;
	char again[HBMGUARD_PCI_ADDR_LEN];
	int end = 0;

	assert(str_in(bdf, HBMGUARD_PCI_ADDR_LEN));
	assert(sscanf(bdf, "%x:%x:%x.0%n", &dom, &bus, &dev, &end) == 3 &&
	       (size_t)end == strlen(bdf));
	assert(bus <= 0xff && dev <= 0x1f);
	snprintf(again, sizeof(again), "%04x:%02x:%02x.0", dom, bus, dev);
	assert(!strcmp(again, bdf));
}

static int find_ref(const char *bdf, const char (*known)[HBMGUARD_PCI_ADDR_LEN], size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strncmp(bdf, known[i], HBMGUARD_PCI_ADDR_LEN))
			return (int)i;
	return -ENODEV;
}

/*
 * The record's address among known ones, which need not be NUL-terminated
 * (a full field is compared whole): the first equal one's index, here 1
 * or 2, or -ENODEV for none.
 */
static void find(const char *bdf)
{
	char known[4][HBMGUARD_PCI_ADDR_LEN] = { "0000:86:00.0", "", "0000:3b:00.0" };
	int at;

	snprintf(known[1], sizeof(known[1]), "%s", bdf);
	memset(known[3], '0', HBMGUARD_PCI_ADDR_LEN);	/* a full field: no NUL */
	at = nv_bdf_find(bdf, (const char (*)[HBMGUARD_PCI_ADDR_LEN])known, 4);
	assert(at == find_ref(bdf, (const char (*)[HBMGUARD_PCI_ADDR_LEN])known, 4));
	assert(at == 1 || (at == 0 && !strcmp(bdf, known[0])));
	assert(nv_bdf_find(bdf, (const char (*)[HBMGUARD_PCI_ADDR_LEN])known, 0) == -ENODEV);
	assert(nv_bdf_find(bdf, (const char (*)[HBMGUARD_PCI_ADDR_LEN])known + 2, 2) ==
	       (strcmp(bdf, known[2]) ? -ENODEV : 0));
}

/*
 * What a line that parsed says holds: each field within its bounds, the
 * name and the text taken from the line as they were in it.
 */
static void line_ok(const char *line, size_t len, const struct nv_log_record *x)
{
	size_t tl;

	switch (x->type) {
	case NV_LOG_OTHER:
		/* only the type written: the rest as it was */
		assert(!memcmp((const char *)x + sizeof(x->type),
			       (const char *)&before_nv + sizeof(x->type),
			       sizeof(*x) - sizeof(x->type)));
		assert(len < 11 || memcmp(line, "NVRM: Xid (", 11));
		assert(len < 13 || memcmp(line, "NVRM: GPU at ", 13));
		return;
	case NV_LOG_XID:
		assert(len >= 15 && !memcmp(line, "NVRM: Xid (PCI:", 15));
		assert(x->xid <= INT32_MAX);
		assert(x->pid >= -1 && x->pid <= INT32_MAX);
		assert(x->gpu_instance >= -1 && x->compute_instance >= -1);
		assert(x->compute_instance == -1 || x->gpu_instance != -1);
		assert(str_in(x->name, sizeof(x->name)));
		assert(strlen(x->name) <= NV_PROC_NAME_MAX);
		assert(!strstr(x->name, ", "));
		if (x->name[0]) {
			char *at = memmem(line, len, ", name=", 7);

			assert(at && !strncmp(at + 7, x->name, strlen(x->name)));
		}
		break;
	case NV_LOG_GPU:
		assert(len >= 17 && !memcmp(line, "NVRM: GPU at PCI:", 17));
		assert(x->xid == 0 && x->pid == -1);
		assert(x->gpu_instance == -1 && x->compute_instance == -1);
		assert(x->name[0] == '\0');
		assert(x->text[0]);
		assert(strlen(x->text) < NV_UUID_MAX);
		for (const char *s = x->text; *s; s++)
			assert(*s > ' ' && *s <= '~');
		break;
	default:
		assert(0);
	}
	bdf_ok(x->bdf);
	assert(str_in(x->text, sizeof(x->text)));
	tl = strlen(x->text);
	assert(tl <= len && !memcmp(line + len - tl, x->text, tl));	/* the line's end */
	if (x->type == NV_LOG_XID)
		(void)nv_xid_hbm_meaning(x->xid);
}

/* nv_log_parse(): 0 and a record that holds, or an error and nothing written. */
static int parse_line(const char *line, size_t len)
{
	char *own = malloc(len ? len : 1);	/* so that ASan sees a read past it */
	const char *why = NULL;
	int err;

	if (!own)
		abort();
	memcpy(own, line, len);
	memset(&nv, CANARY, sizeof(nv));
	before_nv = nv;
	err = nv_log_parse(own, len, &nv, &why);
	free(own);
	if (err) {
		assert(err == -EINVAL || err == -E2BIG);
		assert(why);
		assert(!memcmp(&nv, &before_nv, sizeof(nv)));
		assert(err != -E2BIG || len > KMSG_TEXT_MAX);
		return err;
	}
	assert(len <= KMSG_TEXT_MAX && !memchr(line, '\0', len));
	line_ok(line, len, &nv);
	return 0;
}

/* kmsg_parse(): 0 and a record that holds, or an error and nothing written. */
static int parse_record(const char *buf, size_t len)
{
	char *own = malloc(len ? len : 1);	/* so that ASan sees a read past it */
	const char *why = NULL;
	int err;

	if (!own)
		abort();
	memcpy(own, buf, len);
	memset(&rec, CANARY, sizeof(rec));
	before_rec = rec;
	err = kmsg_parse(own, len, &rec, &why);
	free(own);
	if (err) {
		assert(err == -EINVAL || err == -E2BIG);
		assert(why);
		assert(!memcmp(&rec, &before_rec, sizeof(rec)));
		return err;
	}
	assert(len && buf[len - 1] == '\n');
	record_ok(&rec);
	return 0;
}

/* 0: a raw record, then its text as kmsg_record() takes it. */
static void raw_record(struct fuzz_in *in)
{
	size_t len;
	char *buf = fuzz_rest(in, &len);

	if (!parse_record(buf, len) && !parse_line(rec.text, rec.text_len) &&
	    nv.type != NV_LOG_OTHER)
		find(nv.bdf);
	free(buf);
}

/* 1: a raw line, its length the input's. */
static void raw_line(struct fuzz_in *in)
{
	size_t len;
	char *s = fuzz_rest(in, &len), *line = malloc(len ? len : 1);

	if (!line)
		abort();
	memcpy(line, s, len);
	free(s);
	if (!parse_line(line, len) && nv.type != NV_LOG_OTHER)
		find(nv.bdf);
	free(line);
}

/* 2: any record the kernel writes is read back as it was written. */
static void kernel_record(struct fuzz_in *in)
{
	uint32_t prio = fuzz_u32(in);
	uint64_t seq = fuzz_u64(in), usec = fuzz_u64(in);
	uint8_t how = fuzz_u8(in);
	char caller[32] = "";
	size_t text_len, len;
	char *text, *buf;
	int err;

	if (how & 2)
		snprintf(caller, sizeof(caller), ",caller=%c%" PRIu32, how & 4 ? 'C' : 'T',
			 fuzz_u32(in));
	text = fuzz_rest(in, &text_len);
	buf = write_record(prio, seq, usec, how & 1, caller, text, text_len,
			   how & 8 ? " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n" : "", &len);
	err = parse_record(buf, len);
	if (memchr(text, '\0', text_len)) {
		assert(err == -EINVAL);		/* an escaped NUL: no C string's */
	} else if (text_len > KMSG_TEXT_MAX) {
		assert(err == -E2BIG);
	} else {
		assert(!err);
		assert(rec.prio == prio && rec.seq == seq && rec.ts_usec == usec);
		assert(rec.cont == !!(how & 1));
		assert(rec.text_len == text_len && !memcmp(rec.text, text, text_len));
	}
	free(buf);
	free(text);
}

/* 3: any line the driver writes is read back as it was written. */
static void driver_line(struct fuzz_in *in)
{
	uint32_t dom = fuzz_u32(in), xid = fuzz_u32(in) & INT32_MAX;
	uint32_t pid = fuzz_u32(in) & INT32_MAX, gi = fuzz_u32(in), ci = fuzz_u32(in);
	uint8_t bus = fuzz_u8(in), dev = fuzz_u8(in) & 0x1f, how = fuzz_u8(in);
	char *name = fuzz_str(in), *msg, *line, *rest, *buf, attr[64], want_bdf[32];
	size_t msg_len, name_len, line_len, len;
	int n, err;

	msg = fuzz_rest(in, &msg_len);
	line = malloc(256 + strlen(name) + msg_len + 1);
	if (!line)
		abort();
	gi &= how & 16 ? 0xff : INT32_MAX;
	ci &= how & 16 ? 0xff : INT32_MAX;
	n = sprintf(attr, "PCI:%04" PRIx32 ":%02x:%02x", dom, bus, dev);
	if (how & 1)
		n += sprintf(attr + n, " GPU-I:%02" PRIu32, gi);
	if (how & 1 && how & 2)
		sprintf(attr + n, " GPU-CI:%02" PRIu32, ci);
	snprintf(want_bdf, sizeof(want_bdf), "%04" PRIx32 ":%02x:%02x.0", dom, bus, dev);

	if (how & 32) {		/* _krcLogUuidOnce(): the UUID is the rest */
		n = sprintf(line, "NVRM: GPU at PCI:%04" PRIx32 ":%02x:%02x: ", dom, bus, dev);
	} else if ((how >> 2 & 3) == 0) {	/* 570 and later, no process */
		n = sprintf(line, "NVRM: Xid (%s): %" PRIu32 ", ", attr, xid);
	} else if ((how >> 2 & 3) == 1) {	/* 515 .. 565, no process */
		n = sprintf(line, "NVRM: Xid (%s): %" PRIu32 ", pid='<unknown>', name=%s, ",
			    attr, xid, name);
	} else {
		n = sprintf(line, "NVRM: Xid (%s): %" PRIu32 ", pid=%" PRIu32 ", name=%s, ",
			    attr, xid, pid, name);
	}
	memcpy(line + n, msg, msg_len);
	line_len = n + msg_len;
	line[line_len] = '\0';		/* for strstr() here: the parsers get line_len */
	rest = line + n;

	err = parse_line(line, line_len);
	if (!err && nv.type != NV_LOG_OTHER)
		find(nv.bdf);
	if (line_len > KMSG_TEXT_MAX) {
		assert(err == -E2BIG);
	} else if (memchr(line, '\0', line_len)) {
		assert(err == -EINVAL);
	} else if (how & 32) {
		bool uuid = msg_len && msg_len < NV_UUID_MAX;

		for (size_t i = 0; i < msg_len; i++)
			uuid &= msg[i] > ' ' && msg[i] <= '~';
		assert(uuid ? !err : err == -EINVAL);
		if (!err) {
			assert(nv.type == NV_LOG_GPU && !strcmp(nv.bdf, want_bdf));
			assert(!memcmp(nv.text, msg, msg_len) && !nv.text[msg_len]);
		}
	} else {
		/* The name ends at the first ", " after it: one holding ", " is cut. */
		const char *named = (how >> 2 & 3) ? strstr(line, ", name=") + 7 : NULL;
		const char *cut = named ? strstr(named, ", ") : NULL;

		name_len = cut ? (size_t)(cut - named) : 0;
		if (named && name_len > NV_PROC_NAME_MAX) {
			assert(err == -EINVAL);
		} else if (!named && msg_len >= 4 && !memcmp(msg, "pid=", 4)) {
			/*
			 * Without a process, a message that begins "pid=" reads
			 * as a process: no message of the driver's does.
			 */
		} else {
			assert(!err && nv.type == NV_LOG_XID);
			assert(!strcmp(nv.bdf, want_bdf));
			assert(nv.xid == xid);
			assert(nv.gpu_instance == (how & 1 ? (int32_t)gi : -1));
			assert(nv.compute_instance == ((how & 3) == 3 ? (int32_t)ci : -1));
			assert(nv.pid == ((how >> 2 & 3) >= 2 ? (int64_t)pid : -1));
			if (named) {
				assert(strlen(nv.name) == name_len && !memcmp(nv.name, named, name_len));
				rest = (char *)cut + 2;
			} else {
				assert(!nv.name[0]);
			}
			assert(strlen(nv.text) == (size_t)(line + line_len - rest) &&
			       !memcmp(nv.text, rest, line + line_len - rest));
		}
	}

	/* As nv_printf() logs it: KERN_CONT, the default level. */
	buf = write_record(how & 64 ? 3 : 4, 1, 1, true, "", line, line_len, "", &len);
	err = parse_record(buf, len);
	if (!memchr(line, '\0', line_len) && line_len <= KMSG_TEXT_MAX) {
		assert(!err && rec.from_kernel && rec.cont);
		assert(rec.text_len == line_len && !memcmp(rec.text, line, line_len));
	}
	free(buf);
	free(line);
	free(msg);
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };

	switch (fuzz_u8(&in) & 3) {
	case 0:
		raw_record(&in);
		break;
	case 1:
		raw_line(&in);
		break;
	case 2:
		kernel_record(&in);
		break;
	case 3:
		driver_line(&in);
		break;
	}
	return 0;
}
