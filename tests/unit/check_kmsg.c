// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the kernel-log source of hbmguardd (daemon/kmsg.c): records
 * as /dev/kmsg gives them (the format of Documentation/ABI/testing/dev-kmsg,
 * the driver's line of nvlog.c) in, facts and log lines out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "../../daemon/kmsg.h"	/* "core.h" alone is the module's table */
#include "unit.h"

#define GPU "GPU-7f3c9a2e-1b4d-4e8f-9c6a-0000003b0000"
/* krcReportXid()'s line with a process (kernel_rc.c, 570 .. 595.45.04). */
#define XID_LINE "NVRM: Xid (PCI:%04x:%02x:%02x): %d, pid=%s, name=%s, %s%s"

static struct hbm_kmsg *k;
static struct hbm_fact facts[4];
static unsigned int nr_facts, lists;
static uint64_t clock_ns;
static char log_path[32];
static uint64_t seq;

static uint64_t test_clock(void)
{
	return clock_ns;
}

static void take(void *core, const struct hbm_fact *f)
{
	(void)core;
	if (nr_facts < 4)
		facts[nr_facts] = *f;
	nr_facts++;
}

/* One GPU, device 1, at 0000:3b:00.0, and a range without an address. */
static int list(void *core, struct device_list *l)
{
	(void)core;
	lists++;
	memset(l, 0, sizeof(*l));
	l->nr = 2;
	l->dev[0] = (struct device){ .id = 0, .identity = "sim:sim0", .page_size = 4096,
				     .kind = HBMGUARD_KIND_SIMULATED };
	l->dev[1] = (struct device){ .id = 1, .identity = GPU, .page_size = 65536,
				     .kind = HBMGUARD_KIND_GPU, .pci = "0000:3b:00.0",
				     .size = 1ULL << 30 };
	return 0;
}

static void setup(void)
{
	int fd;

	k = calloc(1, sizeof(*k));
	k->fd = -1;
	k->devices = calloc(1, sizeof(*k->devices));
	k->link = (struct hbm_source_link){ .fact = take, .devices = list };
	k->now = test_clock;
	clock_ns = 1000;
	nr_facts = lists = 0;
	seq = 100;
	strcpy(log_path, "/tmp/hbm-kmsg-XXXXXX");
	fd = mkstemp(log_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_ptr_nonnull(freopen(log_path, "w", stderr));
}

static void cleanup(void)
{
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	unlink(log_path);
	kmsg_stop(k);
	free(k);
}

/* Lines on stderr holding @needle. */
static unsigned int told(const char *needle)
{
	FILE *f;
	char line[512];
	unsigned int n = 0;

	fflush(stderr);
	f = fopen(log_path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* A record of syslog priority @prio (facility << 3 | level), @flag, saying @text. */
static void record_flagged(unsigned int prio, char flag, const char *text)
{
	char buf[KMSG_READ_MAX];
	int n;

	n = snprintf(buf, sizeof(buf), "%u,%llu,%llu,%c;%s\n", prio,
		     (unsigned long long)seq++, 5000000ULL, flag, text);
	kmsg_record(k, buf, n);
}

/* ... as nv_printf() prints, with KERN_CONT: the 'c' flag (os-interface.c). */
static void record(unsigned int prio, const char *text)
{
	record_flagged(prio, 'c', text);
}

static void xid_record(unsigned int prio, unsigned int bus, int xid)
{
	char text[256];

	snprintf(text, sizeof(text), XID_LINE, 0, bus, 0, xid, "4242", "python3",
		 "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
		 "");
	record(prio, text);
}

/* An Xid about HBM on a registered GPU: one fact, its meaning from the table. */
START_TEST(xid_on_a_gpu)
{
	setup();
	xid_record(4, 0x3b, 48);
	ck_assert_uint_eq(nr_facts, 1);
	ck_assert_uint_eq(facts[0].type, HBM_FACT_ERROR);
	ck_assert_uint_eq(facts[0].origin, HBM_FROM_KMSG);
	ck_assert_uint_eq(facts[0].event, HBMGUARD_EVENT_DEVICE_ERROR);
	ck_assert_uint_eq(facts[0].xid, 48);
	ck_assert_uint_eq(facts[0].state, 48);
	ck_assert_uint_eq(facts[0].severity, HBM_SEVERITY_UE);
	ck_assert_uint_eq(facts[0].dev.id, 1);
	ck_assert_str_eq(facts[0].dev.identity, GPU);
	ck_assert_str_eq(facts[0].dev.pci, "0000:3b:00.0");
	ck_assert_uint_eq(facts[0].length, 0);
	ck_assert_uint_eq(facts[0].seqnum, 100);
	ck_assert_str_eq(facts[0].path, "kmsg");
	ck_assert_str_eq(facts[0].text, "double-bit ECC error");
	xid_record(3, 0x3b, 63);
	ck_assert_uint_eq(nr_facts, 2);
	ck_assert_uint_eq(facts[1].severity, HBM_SEVERITY_CE);
	ck_assert_uint_eq(lists, 1);	/* the list kept */
	clock_ns += KMSG_LIST_FRESH_NS;
	xid_record(3, 0x3b, 95);
	ck_assert_uint_eq(lists, 2);	/* ... for a while */
	ck_assert_uint_eq(told("hbmguardd"), 0);
	cleanup();
}
END_TEST

/* What is not taken: each a line, no fact. */
START_TEST(not_taken)
{
	setup();
	record(6, "usb 1-1: new high-speed USB device");	/* not the driver's */
	ck_assert_uint_eq(told("hbmguardd"), 0);
	xid_record(4, 0x3b, 79);
	ck_assert_uint_eq(told("record #101: Xid 79 on 0000:3b:00.0 is not about HBM: not taken"), 1);
	ck_assert_uint_eq(lists, 0);	/* nobody asked for a line not about HBM */
	xid_record(4, 0x3c, 48);
	ck_assert_uint_eq(told("record #102: Xid 48 on 0000:3c:00.0: no GPU is registered at that address: not taken"), 1);
	record(4, "NVRM: Xid (PCI:0000:3b:00): forty-eight, pid=1, name=x, y");
	ck_assert_uint_eq(told("record #103: an Xid line without a decimal Xid: not taken"), 1);
	kmsg_record(k, "4,104,5,-;NVRM: Xid", 19);
	ck_assert_uint_eq(told("a record not in the kernel's format (the text does not end with a newline): skipped"), 1);
	ck_assert_uint_eq(nr_facts, 0);
	cleanup();
}
END_TEST

/*
 * A line written to /dev/kmsg (facility LOG_USER, or any but the kernel's)
 * is refused whatever it says; a flood of them is told KMSG_LINES_BURST
 * times a period, and the driver's own lines are still told.
 */
START_TEST(forged)
{
	unsigned int i;

	setup();
	xid_record(14, 0x3b, 48);	/* user.info, as devkmsg_write() gives */
	ck_assert_uint_eq(nr_facts, 0);
	ck_assert_uint_eq(told("record #100 refused: an NVRM line written by a process (facility 1), not by the driver"), 1);
	xid_record(8 * 23 + 4, 0x3b, 48);	/* local7: named by the writer */
	ck_assert_uint_eq(told("refused: an NVRM line written by a process (facility 23)"), 1);
	for (i = 0; i < 100; i++)
		xid_record(14, 0x3b, 95);
	ck_assert_uint_eq(told("refused: an NVRM line"), KMSG_LINES_BURST);
	xid_record(4, 0x3c, 48);	/* the driver's, not taken: still told */
	ck_assert_uint_eq(told("no GPU is registered at that address"), 1);
	clock_ns += KMSG_LINES_PERIOD_NS;
	xid_record(14, 0x3b, 95);
	ck_assert_uint_eq(told("92 more lines of records refused were not told"), 1);
	ck_assert_uint_eq(told("refused: an NVRM line"), KMSG_LINES_BURST + 1);
	ck_assert_uint_eq(nr_facts, 0);
	cleanup();
}
END_TEST

/*
 * A CUDA program whose faults the driver logs (Xid 13, not about HBM) takes
 * only its own share of lines: an Xid on an address of no GPU is still told.
 */
START_TEST(kinds_apart)
{
	unsigned int i;

	setup();
	for (i = 0; i < 50; i++)
		xid_record(4, 0x3b, 13);
	ck_assert_uint_eq(told("is not about HBM"), KMSG_LINES_BURST);
	xid_record(4, 0x3c, 48);
	ck_assert_uint_eq(told("no GPU is registered at that address"), 1);
	record(4, "NVRM: Xid (PCI:0000:3b:00): forty-eight, pid=1, name=x, y");
	ck_assert_uint_eq(told("an Xid line without a decimal Xid"), 1);
	ck_assert_uint_eq(nr_facts, 0);
	cleanup();
}
END_TEST

/* Records overwritten before they were read: how many, said. */
START_TEST(records_lost)
{
	setup();
	record(6, "one");
	seq += 4;
	record(6, "six");
	ck_assert_uint_eq(told("4 records lost before they were read"), 1);
	xid_record(4, 0x3b, 94);
	ck_assert_uint_eq(nr_facts, 1);
	cleanup();
}
END_TEST

/* The module's device @id seen (@kind GPU or a range) or gone, as kernel.c says it. */
static void device_fact(uint32_t type, uint32_t id, uint32_t kind, uint32_t origin)
{
	struct hbm_fact f = { .type = type, .origin = origin,
			      .dev = { .id = id, .kind = kind } };

	kmsg_fact(k, &f);
}

static int readable(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	(void)s, (void)fd, (void)revents, (void)arg;
	return 0;
}

/* Whether the log's source is on in the loop. */
static bool reading(void)
{
	int on = SD_EVENT_OFF;

	ck_assert_int_ge(sd_event_source_get_enabled(k->io, &on), 0);
	ck_assert_int_eq(on != SD_EVENT_OFF, k->reading);
	return on != SD_EVENT_OFF;
}

/*
 * The log is read while the module has a GPU: the module's DEVICE_SEEN of a
 * GPU opens it, of a range or from another source not; its last GPU gone
 * closes it, and an opening more than KMSG_OFF_GRACE_NS later reads from
 * the end (a file stands for the log there, a pipe for its readiness: the
 * loop takes no regular file).
 */
START_TEST(read_while_a_gpu)
{
	sd_event *loop;
	int pipefd[2];
	char path[] = "/tmp/hbm-kmsg-log-XXXXXX";

	setup();
	ck_assert_int_ge(sd_event_new(&loop), 0);
	ck_assert_int_eq(pipe(pipefd), 0);
	ck_assert_int_ge(sd_event_add_io(loop, &k->io, pipefd[0], EPOLLIN, readable, NULL), 0);
	ck_assert_int_ge(sd_event_source_set_enabled(k->io, SD_EVENT_OFF), 0);
	k->fd = mkstemp(path);
	ck_assert_int_ge(k->fd, 0);
	unlink(path);
	ck_assert_int_eq(write(k->fd, "before", 6), 6);
	ck_assert_int_eq(lseek(k->fd, 0, SEEK_SET), 0);
	clock_ns = 5 * KMSG_OFF_GRACE_NS;	/* long after boot */
	k->off_since = clock_ns;	/* as kmsg_start() leaves it */

	device_fact(HBM_FACT_DEVICE_SEEN, 0, HBM_DEVICE_RANGE, HBM_FROM_KERNEL);
	device_fact(HBM_FACT_DEVICE_SEEN, 2, HBM_DEVICE_NVIDIA, HBM_FROM_NVML);
	ck_assert(!reading());
	device_fact(HBM_FACT_DEVICE_SEEN, 1, HBM_DEVICE_GPU, HBM_FROM_KERNEL);
	ck_assert(reading());
	ck_assert_uint_eq(told("kernel log: a GPU registered: listening for NVIDIA Xids"), 1);
	ck_assert_int_eq(lseek(k->fd, 0, SEEK_CUR), 0);	/* a slow start: from where it was opened */
	device_fact(HBM_FACT_DEVICE_SEEN, 3, HBM_DEVICE_GPU, HBM_FROM_KERNEL);
	device_fact(HBM_FACT_DEVICE_GONE, 1, 0, HBM_FROM_KERNEL);
	device_fact(HBM_FACT_DEVICE_GONE, 0, 0, HBM_FROM_KERNEL);
	ck_assert(reading());	/* GPU 3 is left */
	device_fact(HBM_FACT_DEVICE_SEEN, 3, HBM_DEVICE_RANGE, HBM_FROM_KERNEL);
	ck_assert(!reading());	/* id 3 is a range now */
	ck_assert_uint_eq(told("kernel log: no GPU registered: not read until one is"), 1);


	/* back within KMSG_OFF_GRACE_NS (a driver's reset): read on */
	k->next_seq = 120;
	ck_assert_int_eq(pwrite(k->fd, " meanwhile", 10, 6), 10);
	clock_ns += KMSG_OFF_GRACE_NS;
	device_fact(HBM_FACT_DEVICE_SEEN, 4, HBM_DEVICE_GPU, HBM_FROM_KERNEL);
	ck_assert(reading());
	ck_assert_int_eq(lseek(k->fd, 0, SEEK_CUR), 0);
	ck_assert_uint_eq(k->next_seq, 120);
	ck_assert_uint_eq(told("kernel log: a GPU registered"), 2);

	/* back later: from the end, what was skipped not said lost */
	device_fact(HBM_FACT_DEVICE_GONE, 4, 0, HBM_FROM_KERNEL);
	ck_assert(!reading());
	clock_ns += KMSG_OFF_GRACE_NS + 1;
	device_fact(HBM_FACT_DEVICE_SEEN, 5, HBM_DEVICE_GPU, HBM_FROM_KERNEL);
	ck_assert(reading());
	ck_assert_int_eq(lseek(k->fd, 0, SEEK_CUR), 16);
	ck_assert_uint_eq(k->next_seq, 0);
	ck_assert_uint_eq(told("kernel log: a GPU registered"), 3);

	/* a device fact forgets the list kept: it may name a device gone */
	k->listed_at = 5;
	device_fact(HBM_FACT_DEVICE_SEEN, 0, HBM_DEVICE_RANGE, HBM_FROM_KERNEL);
	ck_assert_uint_eq(k->listed_at, 0);
	device_fact(HBM_FACT_DEVICE_GONE, HBMGUARD_MAX_DEVICES, 0, HBM_FROM_KERNEL);
	ck_assert(reading());
	cleanup();
	close(pipefd[0]);
	close(pipefd[1]);
	sd_event_unref(loop);
}
END_TEST

/*
 * The kernel's source sees its devices before kmsg_start(): the sink keeps
 * them, with neither a loop nor a clock yet (it once called the clock), and
 * kmsg_start() keeps what it was told.
 */
START_TEST(facts_before_start)
{
	struct hbm_kmsg *early = calloc(1, sizeof(*early));
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_SEEN, .origin = HBM_FROM_KERNEL,
			      .dev = { .id = 2, .kind = HBM_DEVICE_GPU } };

	ck_assert_ptr_nonnull(early);
	kmsg_fact(early, &f);
	ck_assert(early->gpu[2]);
	ck_assert(!early->reading);
	free(early);
}
END_TEST

/*
 * A record of the kernel's own (facility 0) whose text begins with a user's
 * string.  print_fatal_signal(), kernel/signal.c (6.1 and 6.12, no pr_fmt),
 * with kernel.print-fatal-signals=1: pr_info("%pD: %s: potentially
 * unexpected fatal signal %d.\n", exe_file, current->comm, signr) -- the
 * basename of any program a user runs and crashes.  nf_log_syslog.c's
 * "%sIN=%s OUT=%s " with a rule's prefix (128 bytes) likewise.  Both are
 * plain printk()s: flag '-'.  The driver's nv_printf() (os-interface.c,
 * 515.43.04 .. 595.45.04) always prints KERN_CONT: its records carry 'c'.
 */
START_TEST(forged_by_a_user_string_at_the_start)
{
	setup();
	record_flagged(6, '-', "NVRM: Xid (PCI:0000:3b:00): 48, x: NVRM: Xid (PCI:: "
			       "potentially unexpected fatal signal 11.");
	record_flagged(4, '-', "NVRM: Xid (PCI:0000:3b:00): 95, IN=eth0 OUT= MAC=00 "
			       "SRC=10.0.0.1 DST=10.0.0.2 LEN=60");
	ck_assert_uint_eq(nr_facts, 0);
	cleanup();
}
END_TEST

/*
 * The same with the user's string beginning KERN_SOH "c" (\001c, a byte a
 * file name may hold; helper-150): vprintk_store() (kernel/printk/printk.c,
 * 6.1 and 6.12) reads a record's level and flags from the front of its
 * formatted text, so print_fatal_signal()'s pr_info("%pD: ...") of a
 * program named "\001cNVRM: Xid ...", run through a link named sh, is a 'c'
 * record of facility 0; printk_sprint() strips the prefix.  Its level is
 * info (6): not the driver's, which nv_printf() leaves to the default
 * (warning, 4).
 */
START_TEST(forged_with_kern_cont_in_the_user_string)
{
	setup();
	record_flagged(6, 'c', "NVRM: Xid (PCI:0000:3b:00): 48, x: sh: "
			       "potentially unexpected fatal signal 11.");
	ck_assert_uint_eq(nr_facts, 0);
	ck_assert_uint_eq(told("refused: an NVRM line at level 6, below the driver's (4)"), 1);
	/* the driver's own line at its level: taken */
	xid_record(4, 0x3b, 48);
	ck_assert_uint_eq(nr_facts, 1);
	cleanup();
}
END_TEST

Suite *kmsg_suite(void)
{
	Suite *s = suite_create("kmsg");
	TCase *tc = tcase_create("records");

	tcase_add_test(tc, xid_on_a_gpu);
	tcase_add_test(tc, not_taken);
	tcase_add_test(tc, forged);
	tcase_add_test(tc, forged_by_a_user_string_at_the_start);
	tcase_add_test(tc, forged_with_kern_cont_in_the_user_string);
	tcase_add_test(tc, kinds_apart);
	tcase_add_test(tc, records_lost);
	tcase_add_test(tc, read_while_a_gpu);
	tcase_add_test(tc, facts_before_start);
	suite_add_tcase(s, tc);
	return s;
}
