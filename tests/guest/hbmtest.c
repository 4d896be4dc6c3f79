// SPDX-License-Identifier: GPL-2.0
/*
 * hbmtest: drives /dev/hbmguard in a qemu guest, as root and as other users.
 *
 * Expects the module loaded with sim_devices=2 sim_hbm_mib=1024 (the default
 * 4 KiB pages, ten spares each).  Every test leaves the devices as it found
 * them.  Usage: hbmtest [test...]; with no argument, all.  Prints one line
 * per test and a closing "N passed, N failed"; exits non-zero on a failure.
 */
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <inttypes.h>
#include <time.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>

#include "hbmtest.h"
#include "hbmguard.h"
#include "caps.h"

int hbm_failures;
const char *hbm_test_name;

#define PAGE 4096ULL
#define SIM_SPARES 10
#define DEV_NODE "/dev/" HBMGUARD_DEVICE_NAME

static int ctl;		/* the test's own fd for ioctls */
static void *volatile bad_address = (void *)8;	/* unmapped; opaque to gcc */

/*
 * On the debug kernel (tests/kernel/run.sh debug sets HBM_DEBUG_KERNEL=1 in
 * the guest) KASAN, lockdep and kmemleak under TCG make each ioctl tens of
 * times slower: the tests that repeat one path 10^5 times repeat it fewer
 * times there, enough to run every branch of it under the detectors.
 */
static bool debug_kernel(void)
{
	const char *v = getenv("HBM_DEBUG_KERNEL");

	return v && !strcmp(v, "1");
}

static int open_dev(int flags)
{
	int fd = open(DEV_NODE, flags | O_CLOEXEC);

	if (fd < 0) {
		perror(DEV_NODE);
		exit(2);
	}
	return fd;
}

static int get_info(int fd, struct hbmguard_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return ioctl(fd, HBMGUARD_IOC_GET_INFO, info);
}

static struct hbmguard_device_info dev_info(uint32_t id)
{
	struct hbmguard_device_info di = { .size = sizeof(di), .device = id };

	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_GET_DEVICE, &di));
	return di;
}

static int extent_op(int fd, unsigned long cmd, uint32_t dev, uint64_t off,
		     uint64_t len, uint32_t flags)
{
	struct hbmguard_extent_op x = {
		.size = sizeof(x), .flags = flags, .device = dev,
		.source = cmd == HBMGUARD_IOC_RETIRE ? HBMGUARD_SOURCE_ADMIN : 0,
		.offset = off, .length = len,
	};

	return ioctl(fd, cmd, &x);
}

static int retire(uint32_t dev, uint64_t off, uint64_t len)
{
	return extent_op(ctl, HBMGUARD_IOC_RETIRE, dev, off, len, 0);
}

static int clear(uint32_t dev, uint64_t off, uint64_t len)
{
	return extent_op(ctl, HBMGUARD_IOC_CLEAR, dev, off, len, 0);
}

static int clear_all(uint32_t dev)
{
	return clear(dev, 0, dev_info(dev).usable_size);
}

static struct hbmguard_translate translate(uint32_t dev, uint64_t off)
{
	struct hbmguard_translate tr = { .size = sizeof(tr), .device = dev,
					 .offset = off };

	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_TRANSLATE, &tr));
	return tr;
}

static int inject(int fd, uint32_t dev, uint32_t kind, uint64_t off,
		  uint32_t count)
{
	struct hbmguard_inject in = { .size = sizeof(in), .device = dev,
				      .kind = kind, .offset = off,
				      .count = count };

	return ioctl(fd, HBMGUARD_IOC_INJECT, &in);
}

static int set_policy(uint32_t dev, uint32_t flags, uint32_t threshold,
		      uint32_t window, uint32_t limit)
{
	struct hbmguard_policy p = {
		.size = sizeof(p), .flags = flags, .device = dev,
		.params = { threshold, window, limit, 0 },
	};

	return ioctl(ctl, HBMGUARD_IOC_SET_POLICY, &p);
}

static int sim_create(const char *name, uint64_t size, uint32_t page_size,
		      uint32_t spares, uint32_t *id)
{
	struct hbmguard_sim_create sc = {
		.size = sizeof(sc), .hbm_size = size, .page_size = page_size,
		.spare_pages = spares,
	};
	int r;

	strncpy(sc.name, name, sizeof(sc.name) - 1);
	r = ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc);
	if (!r && id)
		*id = sc.device;
	return r;
}

static int sim_destroy(uint32_t id)
{
	struct hbmguard_device_ref ref = { .size = sizeof(ref), .device = id };

	return ioctl(ctl, HBMGUARD_IOC_SIM_DESTROY, &ref);
}

static int list_bad(int fd, uint32_t dev, uint64_t start, uint64_t end,
		    struct hbmguard_extent *out, uint32_t cap,
		    struct hbmguard_extent_query *q)
{
	*q = (struct hbmguard_extent_query){
		.size = sizeof(*q), .device = dev, .entry_size = sizeof(*out),
		.start = start, .end = end, .entries = (uintptr_t)out,
		.capacity = cap,
	};
	return ioctl(fd, HBMGUARD_IOC_LIST_BAD, q);
}

/* Everything a user could observe, to prove a failed call changed nothing. */
struct snapshot {
	struct hbmguard_info info;
	struct hbmguard_device_info dev[2];
};

static struct snapshot snap(void)
{
	struct snapshot s;
	int i;

	CHECK_OK(get_info(ctl, &s.info));
	for (i = 0; i < 2; i++)
		s.dev[i] = dev_info(i);
	return s;
}

#define CHECK_UNCHANGED(before) do {					\
	struct snapshot _now = snap();					\
	CHECK(!memcmp(&(before), &_now, sizeof(_now)));			\
} while (0)

/* Read every waiting event from the non-blocking @fd. */
static int drain(int fd, struct hbmguard_event *evs, int max)
{
	int n = 0;

	for (;;) {
		struct hbmguard_event ev;
		ssize_t r = read(fd, &ev, sizeof(ev));

		if (r < 0) {
			CHECK_EQ(errno, EAGAIN);
			return n;
		}
		CHECK_EQ(r, sizeof(ev));
		if (n < max)
			evs[n] = ev;
		n++;
	}
}

/*
 * The tests.
 */
static void test_info(void)
{
	struct hbmguard_info info;
	struct hbmguard_device_info di;

	CHECK_OK(get_info(ctl, &info));
	CHECK_EQ(info.version, HBMGUARD_API_VERSION);
	CHECK_EQ(info.nr_devices, 2);
	CHECK_EQ(info.event_size, sizeof(struct hbmguard_event));
	CHECK_EQ(info.max_devices, HBMGUARD_MAX_DEVICES);
	/* what a library asks before it opens the aperture's node */
	CHECK_EQ(info.features, HBMGUARD_FEATURE_APERTURE_NODE |
				HBMGUARD_FEATURE_APERTURE_NEEDS_WRITE);
	CHECK(!info.reserved[0] && !info.reserved[1] && !info.reserved[2] && !info.reserved[3]);

	di = dev_info(0);
	CHECK(!strcmp(di.name, "sim0"));
	CHECK(!strcmp(di.identity, "sim:sim0"));
	CHECK_EQ(di.kind, HBMGUARD_KIND_SIMULATED);
	CHECK_EQ(di.hbm_size, 1024ULL << 20);
	CHECK_EQ(di.page_size, PAGE);
	CHECK_EQ(di.spare_total, SIM_SPARES);
	CHECK_EQ(di.usable_size, di.hbm_size - SIM_SPARES * PAGE);
	CHECK_EQ(di.health, HBMGUARD_HEALTH_OK);
	CHECK_EQ(di.policy.ce_threshold, 50);
	CHECK_EQ(di.policy.ce_window, 86400);
	CHECK_EQ(di.policy.retire_limit, 10);
	CHECK(!strcmp(dev_info(1).name, "sim1"));
}

static void test_list_devices(void)
{
	uint32_t ids[4] = { 99, 99, 99, 99 };
	struct hbmguard_device_list l = { .size = sizeof(l), .capacity = 4,
					  .ids = (uintptr_t)ids };

	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_LIST_DEVICES, &l));
	CHECK_EQ(l.count, 2);
	CHECK_EQ(ids[0], 0);
	CHECK_EQ(ids[1], 1);
	CHECK_EQ(ids[2], 99);

	/* Capacity 0 counts; capacity 1 writes one. */
	l.capacity = 0;
	l.ids = 0;
	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_LIST_DEVICES, &l));
	CHECK_EQ(l.count, 2);
	ids[0] = ids[1] = 99;
	l.capacity = 1;
	l.ids = (uintptr_t)ids;
	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_LIST_DEVICES, &l));
	CHECK_EQ(ids[0], 0);
	CHECK_EQ(ids[1], 99);

	l.capacity = 4;
	l.ids = 8;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_LIST_DEVICES, &l), EFAULT);
	l.ids = (uintptr_t)ids;
	l.flags = 1;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_LIST_DEVICES, &l), EINVAL);
}

static void test_retire_translate_clear(void)
{
	struct hbmguard_device_info di = dev_info(0);
	struct hbmguard_translate tr;
	struct hbmguard_extent ext[8];
	struct hbmguard_extent_query q;
	uint64_t gen = di.generation;

	tr = translate(0, 5 * PAGE + 123);
	CHECK_EQ(tr.state, HBMGUARD_STATE_CLEAN);
	CHECK_EQ(tr.translated, 5 * PAGE + 123);

	CHECK_OK(retire(0, 5 * PAGE, PAGE));
	tr = translate(0, 5 * PAGE + 123);
	CHECK_EQ(tr.state, HBMGUARD_STATE_RETIRED);
	CHECK_EQ(tr.translated, di.usable_size + 0 * PAGE + 123);
	di = dev_info(0);
	CHECK_EQ(di.nr_retired, 1);
	CHECK_EQ(di.spare_used, 1);
	CHECK(di.generation > gen);

	/* A row of four pages: one extent with consecutive spares. */
	CHECK_OK(retire(0, 100 * PAGE, 4 * PAGE));
	CHECK_OK(list_bad(ctl, 0, 0, 0, ext, 8, &q));
	CHECK_EQ(q.count, 2);
	CHECK_EQ(q.next, di.usable_size);
	CHECK_EQ(ext[1].offset, 100 * PAGE);
	CHECK_EQ(ext[1].length, 4 * PAGE);
	CHECK_EQ(ext[1].spare_offset, di.usable_size + PAGE);
	CHECK_EQ(ext[1].state, HBMGUARD_STATE_RETIRED);
	CHECK_EQ(ext[1].source, HBMGUARD_SOURCE_ADMIN);
	CHECK(ext[1].first_seen > 1600000000);
	tr = translate(0, 102 * PAGE);
	CHECK_EQ(tr.translated, di.usable_size + 3 * PAGE);

	/* Listing a range translates it: only the remaps inside it. */
	CHECK_OK(list_bad(ctl, 0, 50 * PAGE, 200 * PAGE, ext, 8, &q));
	CHECK_EQ(q.count, 1);
	CHECK_EQ(ext[0].offset, 100 * PAGE);
	CHECK_EQ(q.next, 200 * PAGE);

	/* PENDING: recorded, no spare; a plain retire then bypasses it. */
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RETIRE, 0, 300 * PAGE, PAGE,
			   HBMGUARD_RETIRE_PENDING));
	tr = translate(0, 300 * PAGE);
	CHECK_EQ(tr.state, HBMGUARD_STATE_PENDING);
	CHECK_EQ(tr.translated, 300 * PAGE);
	CHECK_EQ(dev_info(0).nr_pending, 1);
	CHECK_OK(retire(0, 300 * PAGE, PAGE));
	CHECK_EQ(translate(0, 300 * PAGE).state, HBMGUARD_STATE_RETIRED);

	/* Clearing the middle of the row splits it and frees two spares. */
	CHECK_OK(clear(0, 101 * PAGE, 2 * PAGE));
	di = dev_info(0);
	CHECK_EQ(di.nr_retired, 4);
	CHECK_EQ(di.spare_used, 4);
	CHECK_EQ(translate(0, 101 * PAGE).state, HBMGUARD_STATE_CLEAN);
	CHECK_EQ(translate(0, 103 * PAGE).translated, di.usable_size + 4 * PAGE);

	/* The pool is ten spares: the rest of a long range is FAILED. */
	CHECK_OK(retire(0, 1000 * PAGE, 10 * PAGE));
	di = dev_info(0);
	CHECK_EQ(di.nr_retired, 10);
	CHECK_EQ(di.nr_failed, 4);
	CHECK_EQ(di.spare_used, SIM_SPARES);
	CHECK_EQ(di.health, HBMGUARD_HEALTH_RMA);
	tr = translate(0, 1009 * PAGE);
	CHECK_EQ(tr.state, HBMGUARD_STATE_FAILED);

	CHECK_OK(clear_all(0));
	di = dev_info(0);
	CHECK_EQ(di.nr_retired + di.nr_failed + di.nr_pending + di.spare_used, 0);
	CHECK_EQ(di.nr_extents, 0);
	CHECK_EQ(di.health, HBMGUARD_HEALTH_OK);
}

static void test_inject_policy(void)
{
	struct hbmguard_extent ext[2];
	struct hbmguard_extent_query q;
	struct hbmguard_device_info di;
	int i;

	/* CEs below the threshold are counted, not retired. */
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_CE_THRESHOLD, 5, 0, 0));
	CHECK_EQ(dev_info(1).policy.ce_threshold, 5);
	CHECK_EQ(dev_info(1).policy.ce_window, 86400);
	for (i = 0; i < 4; i++)
		CHECK_OK(inject(ctl, 1, HBMGUARD_ERROR_CE, 7 * PAGE + 8, 1));
	di = dev_info(1);
	CHECK_EQ(di.ce_events, 4);
	CHECK_EQ(di.nr_retired, 0);
	CHECK_OK(inject(ctl, 1, HBMGUARD_ERROR_CE, 7 * PAGE + 16, 1));
	CHECK_EQ(translate(1, 7 * PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK_OK(list_bad(ctl, 1, 0, 0, ext, 2, &q));
	CHECK_EQ(q.count, 1);
	CHECK_EQ(ext[0].source, HBMGUARD_SOURCE_CE_THRESHOLD);
	CHECK_EQ(ext[0].error_count, 5);

	/* One UE or poison retires at once. */
	CHECK_OK(inject(ctl, 1, HBMGUARD_ERROR_UE, 9 * PAGE, 1));
	CHECK_EQ(translate(1, 9 * PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK_OK(inject(ctl, 1, HBMGUARD_ERROR_POISON, 11 * PAGE + 4095, 1));
	CHECK_OK(list_bad(ctl, 1, 11 * PAGE, 0, ext, 2, &q));
	CHECK_EQ(ext[0].source, HBMGUARD_SOURCE_POISON);
	di = dev_info(1);
	CHECK_EQ(di.ue_events, 2);
	CHECK_EQ(di.nr_retired, 3);

	/* Health: a limit of 4 pages makes 3 DEGRADED (>= 90%), 4 RMA. */
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_RETIRE_LIMIT, 0, 0, 3));
	CHECK_EQ(dev_info(1).health, HBMGUARD_HEALTH_RMA);
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_RETIRE_LIMIT, 0, 0, 4));
	CHECK_EQ(dev_info(1).health, HBMGUARD_HEALTH_OK);
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_ALL, 50, 86400, 10));
	CHECK_EQ(dev_info(1).health, HBMGUARD_HEALTH_OK);
	CHECK_OK(retire(1, 100 * PAGE, 6 * PAGE));	/* 9 of 10 */
	CHECK_EQ(dev_info(1).health, HBMGUARD_HEALTH_DEGRADED);
	CHECK_OK(clear_all(1));
	CHECK_EQ(dev_info(1).health, HBMGUARD_HEALTH_OK);

	/*
	 * 0 in a field named is the device's default, what it was registered
	 * with; a limit above its pages refuses the whole request.
	 */
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_ALL, 7, 600, 4));
	CHECK_ERRNO(set_policy(1, HBMGUARD_POLICY_ALL, 8, 700,
			       dev_info(1).usable_size / PAGE + 1), EINVAL);
	di = dev_info(1);
	CHECK_EQ(di.policy.ce_threshold, 7);
	CHECK_EQ(di.policy.ce_window, 600);
	CHECK_EQ(di.policy.retire_limit, 4);
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_CE_THRESHOLD, 0, 0, 0));
	di = dev_info(1);
	CHECK_EQ(di.policy.ce_threshold, 50);
	CHECK_EQ(di.policy.ce_window, 600);
	CHECK_OK(set_policy(1, HBMGUARD_POLICY_CE_WINDOW | HBMGUARD_POLICY_RETIRE_LIMIT, 0, 0, 0));
	di = dev_info(1);
	CHECK_EQ(di.policy.ce_window, 86400);
	CHECK_EQ(di.policy.retire_limit, 10);
}

/* Every ioctl with bad input: a clear errno, and nothing changes. */
static void test_bad_input(void)
{
	struct snapshot before = snap();
	uint64_t usable = before.dev[0].usable_size;
	struct hbmguard_extent ext[2];
	struct hbmguard_extent_query q;
	struct hbmguard_translate tr;
	struct hbmguard_policy p;
	struct hbmguard_inject in;
	struct hbmguard_extent_op x;
	struct hbmguard_device_ref ref;
	struct hbmguard_device_info di;
	unsigned char big[PAGE + 64];
	uint32_t id;

	/* Unknown commands and wrong directions. */
	CHECK_ERRNO(ioctl(ctl, _IOWR(HBMGUARD_IOC_MAGIC, 0x3f, struct hbmguard_info), &before), ENOTTY);
	CHECK_ERRNO(ioctl(ctl, _IOWR('x', 0x00, struct hbmguard_info), &before), ENOTTY);
	CHECK_ERRNO(ioctl(ctl, _IOR(HBMGUARD_IOC_MAGIC, 0x00, struct hbmguard_info), &before), ENOTTY);
	CHECK_ERRNO(ioctl(ctl, _IO(HBMGUARD_IOC_MAGIC, 0x10), 0), ENOTTY);

	/* The size field: too small, too large, a newer struct. */
	memset(big, 0, sizeof(big));
	((struct hbmguard_info *)big)->size = HBMGUARD_INFO_SIZE_VER0 - 8;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_INFO, big), EINVAL);
	((struct hbmguard_info *)big)->size = PAGE + 8;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_INFO, big), EINVAL);
	((struct hbmguard_info *)big)->size = sizeof(struct hbmguard_info) + 16;
	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_GET_INFO, big));
	CHECK_EQ(((struct hbmguard_info *)big)->version, HBMGUARD_API_VERSION);
	big[sizeof(struct hbmguard_info) + 8] = 1;	/* unknown and set */
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_INFO, big), E2BIG);
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_INFO, (void *)8), EFAULT);
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_RETIRE, (void *)8), EFAULT);

	/* GET_DEVICE, TRANSLATE: unknown device, flags, range. */
	di = (struct hbmguard_device_info){ .size = sizeof(di), .device = 7 };
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_DEVICE, &di), ENODEV);
	di.device = 0;
	di.flags = 2;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_DEVICE, &di), EINVAL);
	tr = (struct hbmguard_translate){ .size = sizeof(tr), .offset = usable };
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_TRANSLATE, &tr), ERANGE);
	tr.offset = 0;
	tr.device = 1000;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_TRANSLATE, &tr), ENODEV);

	/* LIST_BAD. */
	CHECK_ERRNO(list_bad(ctl, 0, 1, 0, ext, 2, &q), EINVAL);
	CHECK_ERRNO(list_bad(ctl, 0, usable + PAGE, 0, ext, 2, &q), ERANGE);
	CHECK_ERRNO(list_bad(ctl, 0, 2 * PAGE, PAGE, ext, 2, &q), ERANGE);
	CHECK_ERRNO(list_bad(ctl, 0, 0, 0, ext, 0, &q), EINVAL);
	CHECK_ERRNO(list_bad(ctl, 0, 0, 0, ext, HBMGUARD_LIST_MAX + 1, &q), EINVAL);
	CHECK_ERRNO(list_bad(ctl, 9, 0, 0, ext, 2, &q), ENODEV);
	q.entry_size = 8;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_LIST_BAD, &q), EINVAL);

	/* RETIRE and CLEAR. */
	CHECK_ERRNO(retire(0, 1, PAGE), EINVAL);
	CHECK_ERRNO(retire(0, 0, PAGE + 1), EINVAL);
	CHECK_ERRNO(retire(0, 0, 0), EINVAL);
	CHECK_ERRNO(retire(0, usable, PAGE), ERANGE);
	CHECK_ERRNO(retire(0, usable - PAGE, 2 * PAGE), ERANGE);
	CHECK_ERRNO(retire(0, PAGE, ~0ULL & ~(PAGE - 1)), ERANGE);
	CHECK_ERRNO(retire(5, 0, PAGE), ENODEV);
	CHECK_ERRNO(extent_op(ctl, HBMGUARD_IOC_RETIRE, 0, 0, PAGE, 0x80), EINVAL);
	CHECK_ERRNO(extent_op(ctl, HBMGUARD_IOC_CLEAR, 0, 0, PAGE,
			      HBMGUARD_RETIRE_PENDING), EINVAL);
	x = (struct hbmguard_extent_op){ .size = sizeof(x), .length = PAGE,
					 .source = HBMGUARD_SOURCE_UE };
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_RETIRE, &x), EINVAL);
	x.source = HBMGUARD_SOURCE_ADMIN;
	x.reserved[1] = 1;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_RETIRE, &x), EINVAL);
	x.reserved[1] = 0;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_CLEAR, &x), EINVAL);	/* source */

	/* SET_POLICY. */
	CHECK_ERRNO(set_policy(0, 0, 0, 0, 0), EINVAL);
	CHECK_ERRNO(set_policy(0, 0x8, 0, 0, 0), EINVAL);
	CHECK_ERRNO(set_policy(0, HBMGUARD_POLICY_CE_THRESHOLD, 65536, 0, 0), EINVAL);
	CHECK_ERRNO(set_policy(0, HBMGUARD_POLICY_CE_THRESHOLD, 5, 60, 0), EINVAL);
	CHECK_ERRNO(set_policy(0, HBMGUARD_POLICY_CE_WINDOW, 0, 366 * 86400, 0), EINVAL);
	CHECK_ERRNO(set_policy(0, HBMGUARD_POLICY_RETIRE_LIMIT, 0, 0,
			       usable / PAGE + 1), EINVAL);
	CHECK_ERRNO(set_policy(3, HBMGUARD_POLICY_CE_THRESHOLD, 5, 0, 0), ENODEV);
	p = (struct hbmguard_policy){ .size = sizeof(p), .flags = 1,
				      .params.ce_threshold = 5 };
	p.params.reserved = 1;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SET_POLICY, &p), EINVAL);

	/* INJECT. */
	CHECK_ERRNO(inject(ctl, 0, 0, 0, 1), EINVAL);
	CHECK_ERRNO(inject(ctl, 0, __HBMGUARD_ERROR_MAX, 0, 1), EINVAL);
	CHECK_ERRNO(inject(ctl, 0, HBMGUARD_ERROR_CE, 0, 0), EINVAL);
	CHECK_ERRNO(inject(ctl, 0, HBMGUARD_ERROR_CE, 0, 65536), EINVAL);
	CHECK_ERRNO(inject(ctl, 0, HBMGUARD_ERROR_UE, 0, 2), EINVAL);
	CHECK_ERRNO(inject(ctl, 0, HBMGUARD_ERROR_UE, before.dev[0].hbm_size, 1), ERANGE);
	CHECK_ERRNO(inject(ctl, 0, HBMGUARD_ERROR_UE, ~0ULL, 1), ERANGE);
	CHECK_ERRNO(inject(ctl, 2, HBMGUARD_ERROR_UE, 0, 1), ENODEV);
	in = (struct hbmguard_inject){ .size = sizeof(in), .kind = 1, .count = 1,
				       .reserved0 = 1 };
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_INJECT, &in), EINVAL);

	/* SIM_CREATE and SIM_DESTROY. */
	CHECK_ERRNO(sim_create("x", 1 << 30, 3000, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("x", 1 << 30, 2048, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("x", 1 << 30, 4 << 20, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("x", 0, 4096, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("x", (1 << 30) + 512, 4096, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("x", 1ULL << 45, 4096, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("x", 16 * PAGE, 4096, 16, &id), EINVAL);
	CHECK_ERRNO(sim_create("", 1 << 30, 4096, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("a b", 1 << 30, 4096, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("a/b", 1 << 30, 4096, 0, &id), EINVAL);
	CHECK_ERRNO(sim_create("sim0", 1 << 30, 4096, 0, &id), EEXIST);
	{
		struct hbmguard_sim_create sc = { .size = sizeof(sc),
			.hbm_size = 1 << 30, .page_size = 4096 };

		memset(sc.name, 'a', sizeof(sc.name));	/* no NUL */
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc), EINVAL);
		strcpy(sc.name, "ok");
		strcpy(sc.identity, "sim:sim1");	/* taken */
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc), EEXIST);
		strcpy(sc.identity, "has space");
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc), EINVAL);
		sc.identity[0] = 0;
		sc.reserved[0] = 1;
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc), EINVAL);
		sc.reserved[0] = 0;
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, (void *)4096), EFAULT);
	}
	CHECK_ERRNO(sim_destroy(200), ENODEV);
	CHECK_ERRNO(sim_destroy(HBMGUARD_MAX_DEVICES + 5), ENODEV);
	ref = (struct hbmguard_device_ref){ .size = sizeof(ref), .device = 0,
					    .reserved = 1 };
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_DESTROY, &ref), EINVAL);

	CHECK_UNCHANGED(before);

	/*
	 * A request it can read but not answer (on a read-only page): the
	 * device made is taken back, its id told to nobody, its name free.
	 */
	{
		struct hbmguard_sim_create *ro = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
						      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int ev_fd = open_dev(O_RDONLY | O_NONBLOCK);
		struct hbmguard_event evs[4];
		struct hbmguard_info info;

		CHECK(ro != MAP_FAILED);
		*ro = (struct hbmguard_sim_create){ .size = sizeof(*ro), .hbm_size = 1 << 30,
						    .page_size = 4096 };
		strcpy(ro->name, "readonly");
		CHECK_OK(mprotect(ro, PAGE, PROT_READ));
		drain(ev_fd, evs, 4);
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, ro), EFAULT);
		CHECK_EQ(ro->device, 0);
		CHECK_OK(get_info(ctl, &info));
		CHECK_EQ(info.nr_devices, before.info.nr_devices);
		/* made and taken back, as its events say; its id free again */
		CHECK_EQ(drain(ev_fd, evs, 4), 2);
		CHECK_EQ(evs[0].type, HBMGUARD_EVENT_DEVICE_ADDED);
		CHECK_EQ(evs[1].type, HBMGUARD_EVENT_DEVICE_REMOVED);
		CHECK_EQ(evs[1].device, evs[0].device);
		CHECK_OK(sim_create("readonly", 1 << 30, 4096, 0, &id));
		CHECK_EQ(id, evs[0].device);
		CHECK_OK(sim_destroy(id));
		close(ev_fd);
		munmap(ro, PAGE);
	}
}

static void test_sim_devices(void)
{
	struct hbmguard_device_info di;
	uint32_t id, ids[HBMGUARD_MAX_DEVICES];
	int i, n = 0;

	CHECK_OK(sim_create("big2m", 4ULL << 30, 2 << 20, 0, &id));
	di = dev_info(id);
	CHECK(!strcmp(di.identity, "sim:big2m"));
	CHECK_EQ(di.page_size, 2 << 20);
	CHECK_EQ(di.spare_total, 40);	/* 4 GiB / 100 MiB */
	CHECK_EQ(di.usable_size, (4ULL << 30) - 40 * (2ULL << 20));
	CHECK_OK(retire(id, 3ULL << 21, 1ULL << 21));
	CHECK_EQ(translate(id, (3ULL << 21) + 5).translated,
		 di.usable_size + 5);
	CHECK_OK(sim_destroy(id));
	CHECK_ERRNO(sim_destroy(id), ENODEV);
	di = (struct hbmguard_device_info){ .size = sizeof(di), .device = id };
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_GET_DEVICE, &di), ENODEV);

	/* The registry holds HBMGUARD_MAX_DEVICES, then ENOSPC. */
	for (i = 0; i < HBMGUARD_MAX_DEVICES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "many%d", i);
		if (sim_create(name, 1 << 20, 4096, 0, &ids[n]) == 0)
			n++;
		else
			break;
	}
	CHECK_EQ(n, HBMGUARD_MAX_DEVICES - 2);
	CHECK_ERRNO(sim_create("onemore", 1 << 20, 4096, 0, &id), ENOSPC);
	for (i = 0; i < n; i++)
		CHECK_OK(sim_destroy(ids[i]));
	CHECK_EQ(snap().info.nr_devices, 2);
}

static void test_events(void)
{
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK);
	struct hbmguard_event evs[16], ev;
	struct hbmguard_info info;
	struct pollfd pfd = { .fd = ev_fd, .events = POLLIN };
	int n;

	CHECK_EQ(poll(&pfd, 1, 0), 0);
	CHECK_ERRNO(read(ev_fd, &ev, sizeof(ev)), EAGAIN);
	CHECK_ERRNO(read(ev_fd, &ev, sizeof(ev) - 1), EINVAL);

	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_UE, 42 * PAGE + 7, 1));
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK(pfd.revents & POLLIN);
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(n, 2);
	CHECK_EQ(evs[0].type, HBMGUARD_EVENT_ERROR);
	CHECK_EQ(evs[0].device, 0);
	CHECK_EQ(evs[0].offset, 42 * PAGE + 7);
	CHECK_EQ(evs[0].state, HBMGUARD_ERROR_UE);
	CHECK_EQ(evs[0].source, HBMGUARD_SOURCE_UE);
	CHECK_EQ(evs[1].type, HBMGUARD_EVENT_RETIRED);
	CHECK_EQ(evs[1].offset, 42 * PAGE);
	CHECK_EQ(evs[1].length, PAGE);
	CHECK_EQ(evs[1].count, 1);
	CHECK_EQ(evs[1].seqnum, evs[0].seqnum + 1);
	CHECK_OK(get_info(ctl, &info));
	CHECK_EQ(info.seqnum, evs[1].seqnum);

	/* Several records in one read. */
	CHECK_OK(clear(0, 42 * PAGE, PAGE));
	CHECK_OK(set_policy(0, HBMGUARD_POLICY_CE_WINDOW, 0, 3600, 0));
	n = read(ev_fd, evs, sizeof(evs));
	CHECK_EQ(n, 2 * sizeof(ev));
	CHECK_EQ(evs[0].type, HBMGUARD_EVENT_CLEARED);
	CHECK_EQ(evs[1].type, HBMGUARD_EVENT_POLICY);
	CHECK_EQ(evs[1].seqnum, evs[0].seqnum + 1);
	/* A policy set to what it is changes nothing: no event. */
	CHECK_OK(set_policy(0, HBMGUARD_POLICY_CE_WINDOW, 0, 3600, 0));
	CHECK_ERRNO(read(ev_fd, &ev, sizeof(ev)), EAGAIN);
	CHECK_OK(set_policy(0, HBMGUARD_POLICY_CE_WINDOW, 0, 86400, 0));
	CHECK_EQ(drain(ev_fd, evs, 16), 1);
	CHECK_EQ(evs[0].type, HBMGUARD_EVENT_POLICY);

	/* A bad pointer is EFAULT and loses nothing. */
	CHECK_OK(retire(0, 8 * PAGE, PAGE));
	CHECK_ERRNO(read(ev_fd, bad_address, sizeof(ev)), EFAULT);
	CHECK_EQ(drain(ev_fd, evs, 16), 1);
	CHECK_EQ(evs[0].type, HBMGUARD_EVENT_RETIRED);
	CHECK_OK(clear_all(0));
	close(ev_fd);
}

/* A blocked reader wakes for an event made by another thread. */
static void *retire_later(void *arg)
{
	(void)arg;
	usleep(200 * 1000);
	CHECK_OK(retire(1, 77 * PAGE, PAGE));
	return NULL;
}

static void test_blocking_read(void)
{
	int ev_fd = open_dev(O_RDONLY);
	struct hbmguard_event ev;
	pthread_t th;

	pthread_create(&th, NULL, retire_later, NULL);
	CHECK_EQ(read(ev_fd, &ev, sizeof(ev)), sizeof(ev));
	CHECK_EQ(ev.type, HBMGUARD_EVENT_RETIRED);
	CHECK_EQ(ev.offset, 77 * PAGE);
	pthread_join(th, NULL);
	CHECK_OK(clear_all(1));
	close(ev_fd);
}

static void test_overflow(void)
{
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK);
	static struct hbmguard_event evs[4096];
	struct hbmguard_info info;
	uint64_t first;
	int i, n, ring;

	CHECK_OK(get_info(ctl, &info));
	ring = info.event_ring;
	first = info.seqnum + 1;
	/* CEs below the threshold: one ERROR event each. */
	for (i = 0; i < ring + 100; i++)
		CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, (i % 512) * PAGE, 1));
	CHECK_OK(get_info(ctl, &info));
	CHECK_EQ(info.seqnum, first + ring + 100 - 1);

	/* The ring holds the oldest; catching up delivers the loss. */
	n = drain(ev_fd, evs, 4096);
	CHECK_EQ(n, ring + 1);
	CHECK_EQ(evs[0].seqnum, first);
	CHECK_EQ(evs[ring - 1].seqnum, first + ring - 1);
	CHECK_EQ(evs[ring].type, HBMGUARD_EVENT_OVERFLOW);
	CHECK_EQ(evs[ring].count, 100);
	CHECK_EQ(evs[ring].seqnum, info.seqnum);

	/* Later events follow, numbered on. */
	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, 600 * PAGE, 1));
	n = drain(ev_fd, evs, 4096);
	CHECK_EQ(n, 1);
	CHECK_EQ(evs[0].type, HBMGUARD_EVENT_ERROR);
	CHECK_EQ(evs[0].seqnum, info.seqnum + 1);

	/* A loss while the reader is behind: OVERFLOW comes before newer events. */
	for (i = 0; i < ring + 5; i++)
		CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, (i % 512) * PAGE, 1));
	n = read(ev_fd, evs, 10 * sizeof(evs[0]));
	CHECK_EQ(n, 10 * sizeof(evs[0]));
	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, 601 * PAGE, 1));
	n = drain(ev_fd, evs, 4096);
	CHECK_EQ(n, ring - 10 + 2);
	CHECK_EQ(evs[ring - 10].type, HBMGUARD_EVENT_OVERFLOW);
	CHECK_EQ(evs[ring - 10].count, 5);
	CHECK_EQ(evs[ring - 9].type, HBMGUARD_EVENT_ERROR);
	CHECK_EQ(evs[ring - 9].seqnum, evs[ring - 10].seqnum + 1);

	CHECK_OK(clear_all(0));
	close(ev_fd);
}

static void no_op(int sig)
{
	(void)sig;
}

/* @pid's /proc wchan is @fn: it sleeps there.  Up to 10 s. */
static bool sleeps_in(pid_t pid, const char *fn)
{
	char path[64], at[128];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	for (i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		bool there = f && fgets(at, sizeof(at), f) && !strcmp(at, fn);

		if (f)
			fclose(f);
		if (there)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * A non-blocking read beside a blocking one of the same open file, asleep
 * for want of events: EAGAIN at once, not once the other's event has come.
 * Were it made to wait, it would wait for ever here: the alarm (no restart)
 * ends it with EINTR.
 */
static void test_nonblock_beside_blocked(void)
{
	struct sigaction alarm_on = { .sa_handler = no_op }, old;
	int fd = open_dev(O_RDONLY), status;
	struct hbmguard_event ev;
	pid_t pid = fork();

	if (!pid)
		_exit(read(fd, &ev, sizeof(ev)) == sizeof(ev) && ev.type == HBMGUARD_EVENT_ERROR ?
		      0 : 1);
	CHECK(sleeps_in(pid, "hbm_reader_read"));
	CHECK_OK(fcntl(fd, F_SETFL, O_NONBLOCK));	/* the open file's, the child's too */
	sigaction(SIGALRM, &alarm_on, &old);
	alarm(5);
	CHECK_ERRNO(read(fd, &ev, sizeof(ev)), EAGAIN);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	CHECK_EQ(waitpid(pid, &status, WNOHANG), 0);	/* still waiting for its event */
	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, 602 * PAGE, 1));
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_OK(clear_all(0));
	close(fd);
}

struct faulting_read {
	int fd;
	void *buf;
	size_t len;		/* 0: one record */
	pid_t tid;
	ssize_t n;
	int err;
};

static void *read_into(void *arg)
{
	struct faulting_read *r = arg;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_RELEASE);
	r->n = read(r->fd, r->buf, r->len ?: sizeof(struct hbmguard_event));
	r->err = errno;
	return NULL;
}

/*
 * @r read into a page of its own by thread @th, its copy held there by a
 * userfaultfd until the caller lets it go (UFFDIO_ZEROPAGE, or the page
 * unmapped and the fd closed: then it fails).  Return: the userfaultfd.
 */
static int read_held(struct faulting_read *r, pthread_t *th)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_api api = { .api = UFFD_API };
	int uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	struct uffd_msg msg;

	CHECK(uffd >= 0);
	CHECK_OK(ioctl(uffd, UFFDIO_API, &api));
	r->buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r->buf != MAP_FAILED);
	reg.range = (struct uffdio_range){ .start = (uintptr_t)r->buf, .len = PAGE };
	CHECK_OK(ioctl(uffd, UFFDIO_REGISTER, &reg));
	pthread_create(th, NULL, read_into, r);
	CHECK_EQ(read(uffd, &msg, sizeof(msg)), sizeof(msg));	/* the copy waits */
	CHECK_EQ(msg.event, UFFD_EVENT_PAGEFAULT);
	return uffd;
}

/*
 * A non-blocking read while another read of the same open file has its
 * copy held (a userfaultfd on its buffer): it waits for that copy, as a
 * pipe's reader does, and takes what is left; EAGAIN would say the ring
 * empty, and an edge-triggered poller would never hear of the rest.
 */
static void test_nonblock_beside_copying(void)
{
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK), uffd;
	static struct hbmguard_event evs[16];
	struct faulting_read held = { .fd = ev_fd }, other = { .fd = ev_fd, .buf = evs,
								 .len = sizeof(evs) };
	struct uffdio_zeropage zero = { .range.len = PAGE };
	pthread_t th[2];

	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, 700 * PAGE, 1));
	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, 701 * PAGE, 1));
	uffd = read_held(&held, &th[0]);
	pthread_create(&th[1], NULL, read_into, &other);
	while (!__atomic_load_n(&other.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	CHECK(sleeps_in(other.tid, "hbm_reader_read"));	/* behind the copy */
	zero.range.start = (uintptr_t)held.buf;
	CHECK_OK(ioctl(uffd, UFFDIO_ZEROPAGE, &zero));	/* the copy goes on */
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	CHECK_EQ(held.n, (ssize_t)sizeof(evs[0]));
	CHECK_EQ(((struct hbmguard_event *)held.buf)->offset, 700 * PAGE);
	CHECK_EQ(other.n, (ssize_t)sizeof(evs[0]));
	CHECK_EQ(evs[0].offset, 701 * PAGE);
	close(uffd);
	munmap(held.buf, PAGE);
	CHECK_OK(clear_all(0));
	close(ev_fd);
}

/*
 * A reader caught up with a loss owed, its OVERFLOW's copy to userspace
 * failing: an event made while the copy waited still comes after the
 * OVERFLOW.  The copy is held by a userfaultfd on the reader's buffer,
 * whose page is unmapped meanwhile, so that it fails once let go.
 */
static void test_overflow_copy_fails(void)
{
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK), uffd;
	static struct hbmguard_event evs[4096];
	struct faulting_read r = { .fd = ev_fd };
	struct hbmguard_info info;
	pthread_t th;
	int i, n, ring;

	CHECK_OK(get_info(ctl, &info));
	ring = info.event_ring;
	for (i = 0; i < ring + 5; i++)
		CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, (i % 512) * PAGE, 1));
	CHECK_EQ(read(ev_fd, evs, ring * sizeof(evs[0])), (ssize_t)(ring * sizeof(evs[0])));

	uffd = read_held(&r, &th);
	CHECK_OK(inject(ctl, 0, HBMGUARD_ERROR_CE, 603 * PAGE, 1));
	CHECK_OK(munmap(r.buf, PAGE));
	close(uffd);		/* lets the copy go, to no page: EFAULT */
	pthread_join(th, NULL);
	CHECK_EQ(r.n, -1);
	CHECK_EQ(r.err, EFAULT);

	n = drain(ev_fd, evs, 4096);
	CHECK_EQ(n, 2);
	CHECK_EQ(evs[0].type, HBMGUARD_EVENT_OVERFLOW);
	CHECK_EQ(evs[0].count, 5);
	CHECK_EQ(evs[1].type, HBMGUARD_EVENT_ERROR);
	CHECK_EQ(evs[1].offset, 603 * PAGE);
	CHECK_EQ(evs[1].seqnum, evs[0].seqnum + 1);
	CHECK_OK(clear_all(0));
	close(ev_fd);
}

static void test_rmmod_with_open_file(void)
{
	CHECK_ERRNO(syscall(SYS_delete_module, "hbmguard", O_NONBLOCK), EWOULDBLOCK);
}

/* A device destroyed while other threads use it: they get ENODEV, nothing else. */
struct hammer {
	uint32_t dev;
	volatile bool stop;
	long ok, gone, other;
};

static void *hammer_dev(void *arg)
{
	struct hammer *h = arg;
	int fd = open_dev(O_RDWR);
	struct hbmguard_extent ext[16];
	struct hbmguard_extent_query q;
	long i = 0;

	while (!h->stop) {
		struct hbmguard_translate tr = { .size = sizeof(tr),
						 .device = h->dev,
						 .offset = (i % 64) * PAGE };
		int r;

		switch (i++ % 4) {
		case 0:
			r = ioctl(fd, HBMGUARD_IOC_TRANSLATE, &tr);
			break;
		case 1:
			r = inject(fd, h->dev, HBMGUARD_ERROR_UE, (i % 64) * PAGE, 1);
			break;
		case 2:
			r = list_bad(fd, h->dev, 0, 0, ext, 16, &q);
			break;
		default:
			r = extent_op(fd, HBMGUARD_IOC_CLEAR, h->dev, 0, 64 * PAGE, 0);
			break;
		}
		if (!r)
			__atomic_add_fetch(&h->ok, 1, __ATOMIC_RELAXED);
		else if (errno == ENODEV)
			__atomic_add_fetch(&h->gone, 1, __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(&h->other, 1, __ATOMIC_RELAXED);
	}
	close(fd);
	return NULL;
}

static void test_destroy_in_use(void)
{
	int round;

	for (round = 0; round < 20; round++) {
		struct hammer h = { .stop = false };
		pthread_t th[3];
		int i;

		CHECK_OK(sim_create("victim", 64 << 20, 4096, 64, &h.dev));
		for (i = 0; i < 3; i++)
			pthread_create(&th[i], NULL, hammer_dev, &h);
		usleep(20 * 1000);
		CHECK_OK(sim_destroy(h.dev));
		usleep(20 * 1000);
		h.stop = true;
		for (i = 0; i < 3; i++)
			pthread_join(th[i], NULL);
		CHECK(h.gone > 0);
		CHECK_EQ(h.other, 0);
	}
	CHECK_EQ(snap().info.nr_devices, 2);
}

/* Concurrent retirements of distinct pages: each gets its own spare. */
struct retirer {
	uint32_t dev;
	int base;
};

static void *retire_many(void *arg)
{
	struct retirer *r = arg;
	int fd = open_dev(O_RDWR), i;

	for (i = 0; i < 500; i++)
		CHECK_OK(extent_op(fd, HBMGUARD_IOC_RETIRE, r->dev,
				   (uint64_t)(r->base + 4 * i) * PAGE, PAGE, 0));
	close(fd);
	return NULL;
}

static void test_concurrent(void)
{
	static struct hbmguard_extent ext[4096];
	struct hbmguard_extent_query q;
	struct retirer r[4];
	pthread_t th[4];
	static char used[4000];
	uint32_t id;
	uint64_t usable, total = 0;
	int i, j;

	CHECK_OK(sim_create("busy", 256 << 20, 4096, 4000, &id));
	for (i = 0; i < 4; i++) {
		r[i] = (struct retirer){ .dev = id, .base = i };
		pthread_create(&th[i], NULL, retire_many, &r[i]);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(dev_info(id).nr_retired, 2000);
	usable = dev_info(id).usable_size;
	CHECK_OK(list_bad(ctl, id, 0, 0, ext, 4096, &q));
	for (i = 0; i < (int)q.count; i++) {
		for (j = 0; j < (int)(ext[i].length / PAGE); j++) {
			uint64_t s = (ext[i].spare_offset - usable) / PAGE + j;

			CHECK(s < 4000 && !used[s]);
			if (s < 4000)
				used[s] = 1;
		}
		total += ext[i].length / PAGE;
	}
	CHECK_EQ(total, 2000);
	CHECK_OK(sim_destroy(id));
}

/* A large table read back in pieces through the cursor. */
static void test_large_table(void)
{
	enum { CHUNK = 4096 };
	/* Past one CHUNK even on the debug kernel: the cursor is what is read. */
	const uint32_t pages = debug_kernel() ? CHUNK + 100 : 200000;
	static struct hbmguard_extent ext[CHUNK];
	struct hbmguard_extent_query q;
	struct hbmguard_device_info di;
	uint64_t start = 0, seen = 0, expect_off = 0;
	uint32_t id, i;
	int calls = 0;

	CHECK_OK(sim_create("large", 4ULL << 30, 4096, pages + 8, &id));
	for (i = 0; i < pages; i++)
		if (extent_op(ctl, HBMGUARD_IOC_RETIRE, id, (uint64_t)i * 2 * PAGE,
			      PAGE, 0)) {
			CHECK(!"retire failed");
			break;
		}
	di = dev_info(id);
	CHECK_EQ(di.nr_retired, pages);
	CHECK_EQ(di.nr_extents, pages);
	printf("  %u retired pages: %llu bytes of table, %.1f bytes/page\n",
	       pages, (unsigned long long)di.table_bytes,
	       (double)di.table_bytes / pages);
	do {
		CHECK_OK(list_bad(ctl, id, start, 0, ext, CHUNK, &q));
		for (i = 0; i < q.count; i++, expect_off += 2 * PAGE)
			if (ext[i].offset != expect_off) {
				CHECK_EQ(ext[i].offset, expect_off);
				break;
			}
		seen += q.count;
		CHECK(q.next > start);
		start = q.next;
		calls++;
	} while (q.count && start < di.usable_size);
	CHECK_EQ(seen, pages);
	CHECK_EQ(calls, (pages + CHUNK - 1) / CHUNK);
	CHECK_OK(sim_destroy(id));
}

/* Reads for the device node's group; mutations need CAP_SYS_ADMIN. */
static void test_unprivileged(void)
{
	struct snapshot before = snap();
	pid_t pid;
	int status;

	CHECK_OK(chown(DEV_NODE, 0, 1000));
	pid = fork();
	if (pid == 0) {
		struct hbmguard_info info;
		int fd;

		if (setgid(1000) || setuid(1000))
			_exit(10);
		fd = open(DEV_NODE, O_RDWR);
		if (fd >= 0 || errno != EACCES)	/* 0640: no write for the group */
			_exit(11);
		fd = open(DEV_NODE, O_RDONLY);
		if (fd < 0)
			_exit(12);
		if (get_info(fd, &info) || info.nr_devices != 2)
			_exit(13);
		ctl = fd;
		if (translate(0, 0).state != HBMGUARD_STATE_CLEAN)
			_exit(14);
		if (extent_op(fd, HBMGUARD_IOC_RETIRE, 0, 0, PAGE, 0) != -1 ||
		    errno != EPERM)
			_exit(15);
		if (inject(fd, 0, HBMGUARD_ERROR_UE, 0, 1) != -1 || errno != EPERM)
			_exit(16);
		if (extent_op(fd, HBMGUARD_IOC_CLEAR, 0, 0, PAGE, 0) != -1 ||
		    errno != EPERM)
			_exit(17);
		if (sim_destroy(0) != -1 || errno != EPERM)
			_exit(18);
		if (extent_op(fd, HBMGUARD_IOC_RESTORED, 0, 0, PAGE, 0) != -1 ||
		    errno != EBADF)	/* the aperture's writers only */
			_exit(19);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), 0);

	pid = fork();
	if (pid == 0) {	/* neither owner nor group */
		if (setgid(2000) || setuid(2000))
			_exit(10);
		_exit(open(DEV_NODE, O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
	CHECK_OK(chown(DEV_NODE, 0, 0));
	CHECK_UNCHANGED(before);
}

/*
 * Root that is not the administrator (uapi PRIVILEGES): with CAP_NET_ADMIN
 * only, with every capability but CAP_SYS_ADMIN, and root of a user
 * namespace.  Each reads; each is refused every change with EPERM.
 */
static int refused_changes(int fd, uint32_t nr_devices)
{
	struct hbmguard_info info;
	uint32_t id;

	ctl = fd;
	if (get_info(fd, &info) || info.nr_devices != nr_devices)
		return 20;
	if (translate(0, 0).state != HBMGUARD_STATE_CLEAN)
		return 21;
	if (extent_op(fd, HBMGUARD_IOC_RETIRE, 0, 0, PAGE, 0) != -1 || errno != EPERM)
		return 22;
	if (extent_op(fd, HBMGUARD_IOC_CLEAR, 0, 0, PAGE, 0) != -1 || errno != EPERM)
		return 23;
	if (set_policy(0, HBMGUARD_POLICY_CE_THRESHOLD, 3, 0, 0) != -1 || errno != EPERM)
		return 24;
	if (inject(fd, 0, HBMGUARD_ERROR_UE, 0, 1) != -1 || errno != EPERM)
		return 25;
	if (sim_create("intruder", 1 << 30, 4096, 0, &id) != -1 || errno != EPERM)
		return 26;
	if (sim_destroy(0) != -1 || errno != EPERM)
		return 27;
	return 0;
}

static void test_privileges(void)
{
	static const struct {
		uint64_t keep;		/* capabilities root keeps */
		bool userns;
	} who[] = {
		{ 1ULL << CAP_NET_ADMIN, false },
		{ ~(1ULL << CAP_SYS_ADMIN) & ((1ULL << (CAP_LAST_CAP + 1)) - 1), false },
		{ 0, true },
	};
	struct snapshot before = snap();
	unsigned int i;
	int status;

	for (i = 0; i < sizeof(who) / sizeof(who[0]); i++) {
		pid_t pid = fork();

		if (pid == 0) {
			int fd = open(DEV_NODE, O_RDWR);	/* root's, before */

			if (fd < 0)
				_exit(10);
			if (who[i].userns ? become_userns_root() : caps_keep_only(who[i].keep))
				_exit(11);
			_exit(refused_changes(fd, 2));
		}
		waitpid(pid, &status, 0);
		CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), 0);
	}
	CHECK_UNCHANGED(before);
}

/*
 * An fd a process without CAP_SYS_ADMIN opened, handed to one with it (over
 * SCM_RIGHTS, as to a privileged helper): no change through it, as netlink
 * asks of a socket's opener (helper-187: the caller alone was checked).
 */
static void test_privileges_of_opener(void)
{
	struct snapshot before = snap();
	char cbuf[CMSG_SPACE(sizeof(int))], b = 0;
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	int sv[2], status, fd;
	pid_t pid;

	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	pid = fork();
	if (pid == 0) {
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		if (caps_keep_only(0))
			_exit(10);
		fd = open(DEV_NODE, O_RDWR);	/* uid 0, its owner: READ and WRITE */
		if (fd < 0)
			_exit(11);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &mh, 0) == 1 ? 0 : 12);
	}
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), 0);
	CHECK_EQ(recvmsg(sv[0], &mh, 0), 1);
	CHECK(CMSG_FIRSTHDR(&mh) && CMSG_FIRSTHDR(&mh)->cmsg_type == SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(int));
	pid = fork();
	if (pid == 0)		/* with every capability: the fd's opener had none */
		_exit(refused_changes(fd, 2));
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), 0);
	close(fd), close(sv[0]), close(sv[1]);
	CHECK_UNCHANGED(before);
}

/*
 * A non-admin holds at most HBMGUARD_MAX_OPENS event rings: one more is ENFILE, and
 * the administrator still gets in.
 */
static void test_open_limit(void)
{
	int up[2], down[2], status, fd;
	pid_t pid;
	char c;

	CHECK_OK(pipe(up));
	CHECK_OK(pipe(down));
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { HBMGUARD_MAX_OPENS + 64, HBMGUARD_MAX_OPENS + 64 };
		int n = 0, err = 0;

		/*
		 * Node 1 stands for HBM that ras.sh claims later: a thousand
		 * files' slab pages left there would make it unclaimable.
		 */
		unsigned long node0 = 1;

		if (syscall(SYS_set_mempolicy, MPOL_BIND, &node0, 2) ||
		    setrlimit(RLIMIT_NOFILE, &rl) || caps_keep_only(1ULL << CAP_NET_ADMIN))
			_exit(10);
		while (n <= HBMGUARD_MAX_OPENS) {
			if (open(DEV_NODE, O_RDONLY) < 0) {
				err = errno;
				break;
			}
			n++;
		}
		printf("  a non-admin opened %d, then %s\n", n, strerror(err));
		c = n == HBMGUARD_MAX_OPENS && err == ENFILE;
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(12);
		_exit(0);	/* closes them all */
	}
	CHECK_EQ(read(up[0], &c, 1), 1);
	CHECK_EQ(c, 1);
	fd = open(DEV_NODE, O_RDONLY);	/* the administrator, at the limit */
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(write(down[1], &c, 1), 1);
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
	close(up[0]), close(up[1]), close(down[0]), close(down[1]);

	pid = fork();	/* the rings were given back */
	if (pid == 0)
		_exit(caps_keep_only(0) || open(DEV_NODE, O_RDONLY) < 0);
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
}

/*
 * The limit is each user's: one member of the node's group holding all its
 * opens does not lock another member (another job's Guard) out.
 */
static void test_open_limit_per_user(void)
{
	int up[2], down[2], status;
	pid_t pid, other;
	char c;

	CHECK_OK(chown(DEV_NODE, 0, 1000));
	CHECK_OK(pipe(up));
	CHECK_OK(pipe(down));
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { HBMGUARD_MAX_OPENS + 64, HBMGUARD_MAX_OPENS + 64 };
		unsigned long node0 = 1;	/* as test_open_limit() */
		int n = 0;

		if (syscall(SYS_set_mempolicy, MPOL_BIND, &node0, 2) ||
		    setrlimit(RLIMIT_NOFILE, &rl) || setgid(1000) || setuid(1000))
			_exit(10);
		while (n <= HBMGUARD_MAX_OPENS && open(DEV_NODE, O_RDONLY) >= 0)
			n++;
		c = n == HBMGUARD_MAX_OPENS && errno == ENFILE;
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(12);
		_exit(0);
	}
	CHECK_EQ(read(up[0], &c, 1), 1);
	CHECK_EQ(c, 1);
	other = fork();
	if (other == 0)
		_exit(setgid(1000) || setuid(1001) || open(DEV_NODE, O_RDONLY) < 0);
	waitpid(other, &status, 0);
	printf("  another group member, while the first is at the limit: %s\n",
	       WIFEXITED(status) && !WEXITSTATUS(status) ? "opens" : "refused");
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
	CHECK_EQ(write(down[1], &c, 1), 1);
	waitpid(pid, &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
	close(up[0]), close(up[1]), close(down[0]), close(down[1]);
	CHECK_OK(chown(DEV_NODE, 0, 0));
}

/* @text into /proc/@pid/@name, as newuidmap writes a namespace's map. */
static int write_map(pid_t pid, const char *name, const char *text)
{
	char path[64];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (int)strlen(text) ? 0 : -1;
}

/*
 * A process of uid @maker (group 1000, the node's) that makes a user
 * namespace of uids 0 and 1 (@base and @base + 1: the maps written here as
 * newuidmap writes them) and holds every ring it can there as its uid 0.
 * Return: 1 if its uid 1 was refused one more too, 0 if not, -1 if the
 * test failed; the process in *@pid, holding its rings until a byte on
 * @down[1].
 */
static int namespace_at_limit(uid_t maker, uid_t base, int down[2], pid_t *pid)
{
	int up[2], status, ret = -1;
	char map[32], c = 0;

	if (pipe(up))
		return -1;
	*pid = fork();
	if (*pid == 0) {
		struct rlimit rl = { HBMGUARD_MAX_OPENS + 64, HBMGUARD_MAX_OPENS + 64 };
		unsigned long node0 = 1;	/* as test_open_limit() */
		int n = 0;
		pid_t sub;

		if (syscall(SYS_set_mempolicy, MPOL_BIND, &node0, 2) ||
		    setrlimit(RLIMIT_NOFILE, &rl) || setgid(1000) || setuid(maker) ||
		    unshare(CLONE_NEWUSER) || write(up[1], &c, 1) != 1 ||
		    read(down[0], &c, 1) != 1 || setresuid(0, 0, 0))
			_exit(10);
		while (n <= HBMGUARD_MAX_OPENS && open(DEV_NODE, O_RDONLY) >= 0)
			n++;
		if (n != HBMGUARD_MAX_OPENS || errno != ENFILE)
			_exit(11);
		sub = fork();	/* another of its uids */
		if (sub == 0)
			_exit(setresuid(1, 1, 1) ? 2 : open(DEV_NODE, O_RDONLY) >= 0 ? 3 :
			      errno == ENFILE ? 0 : 4);
		waitpid(sub, &status, 0);
		printf("  uid 0 of a namespace uid %u made opened %d; its uid 1: %s\n",
		       (unsigned int)maker, n,
		       WIFEXITED(status) && WEXITSTATUS(status) == 3 ? "opens" :
		       WIFEXITED(status) && !WEXITSTATUS(status) ? "ENFILE" : "failed");
		c = WIFEXITED(status) && !WEXITSTATUS(status);
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(12);
		_exit(0);
	}
	snprintf(map, sizeof(map), "0 %u 2\n", (unsigned int)base);
	if (*pid > 0 && read(up[0], &c, 1) == 1 && !write_map(*pid, "uid_map", map) &&
	    !write_map(*pid, "gid_map", "0 1000 1\n") && write(down[1], &c, 1) == 1 &&
	    read(up[0], &c, 1) == 1)
		ret = c;
	close(up[0]), close(up[1]);
	return ret;
}

/* Whether a process of @uid, group 1000, is refused a ring (ENFILE). */
static bool refused_a_ring(uid_t uid)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(setgid(1000) || setuid(uid) || caps_keep_only(0) ? 2 :
		      open(DEV_NODE, O_RDONLY) >= 0 ? 3 : errno == ENFILE ? 0 : 4);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * A user namespace's uids count as the user who made it, as the kernel's
 * ucounts do: a group member that maps its subordinate uids (newuidmap,
 * /etc/subuid) holds no more rings than itself (helper-187: each
 * subordinate uid held HBMGUARD_MAX_OPENS of its own).  One root made (a
 * container runtime's) counts as the user its uid 0 maps to: not as root,
 * nor with another container's of another range.
 */
static void test_open_limit_namespaces(void)
{
	int down[2][2], status, i;
	pid_t pid[2];

	CHECK_OK(chown(DEV_NODE, 0, 1000));
	CHECK_OK(pipe(down[0]));
	CHECK_OK(pipe(down[1]));
	CHECK_EQ(namespace_at_limit(1000, 100000, down[0], &pid[0]), 1);
	CHECK(refused_a_ring(1000));		/* the user itself, outside */
	CHECK(!refused_a_ring(0));
	CHECK_EQ(write(down[0][1], "x", 1), 1);
	waitpid(pid[0], &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);

	CHECK_EQ(namespace_at_limit(0, 100000, down[0], &pid[0]), 1);
	CHECK(!refused_a_ring(0));		/* root, outside */
	CHECK_EQ(namespace_at_limit(0, 200000, down[1], &pid[1]), 1);	/* another's range */
	for (i = 0; i < 2; i++) {
		CHECK_EQ(write(down[i][1], "x", 1), 1);
		waitpid(pid[i], &status, 0);
		CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
	}
	/* one whose uid 0 is root, as uid 0 without CAP_SYS_ADMIN makes: root's */
	CHECK_EQ(namespace_at_limit(0, 0, down[0], &pid[0]), 1);
	CHECK(refused_a_ring(0));
	CHECK_EQ(write(down[0][1], "x", 1), 1);
	waitpid(pid[0], &status, 0);
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0);
	for (i = 0; i < 2; i++)
		close(down[i][0]), close(down[i][1]);
	CHECK_OK(chown(DEV_NODE, 0, 0));
}

/*
 * Spare pools bounded by HBMGUARD_SPARE_PAGES_MAX: the mapped table follows
 * them (two entries of 16 bytes a spare).  Too many is EINVAL; a default
 * pool is clamped to it.
 */
static void test_spare_bounds(void)
{
	struct snapshot before = snap();
	struct hbmguard_device_info di;
	uint32_t id;

	CHECK_ERRNO(sim_create("x", 8ULL << 30, 4096, HBMGUARD_SPARE_PAGES_MAX + 1, &id),
		    EINVAL);
	/* 2^32 - 1 pages, all but one spare: spare_total + 1024 wrapped. */
	CHECK_ERRNO(sim_create("x", 0xffffffffULL * PAGE, 4096, 0xfffffffeU, &id), EINVAL);
	CHECK_UNCHANGED(before);

	/* One spare per 100 MiB of 4 PiB would be 43 million. */
	if (sim_create("huge", 1ULL << 52, 2 << 20, 0, &id)) {
		CHECK(!"sim_create of a 4 PiB device");
		return;
	}
	di = dev_info(id);
	CHECK_EQ(di.spare_total, HBMGUARD_SPARE_PAGES_MAX);
	CHECK_OK(sim_destroy(id));
	CHECK_OK(sim_create("most", 8ULL << 30, 4096, HBMGUARD_SPARE_PAGES_MAX, &id));
	CHECK_OK(sim_destroy(id));
}

/* The mapped table answers as the ioctl does, and follows changes. */
static void test_mapped_table(void)
{
	struct hbmguard_table *t;
	uint64_t served, usable = dev_info(0).usable_size;
	uint32_t state;
	int fd = hbmguard_open();
	pid_t pid;
	int status;

	CHECK(fd >= 0);
	CHECK_OK(hbmguard_table_open(fd, 0, &t));
	CHECK_OK(hbmguard_translate(t, 5 * PAGE + 7, &served, &state));
	CHECK_EQ(state, HBMGUARD_STATE_CLEAN);
	CHECK_EQ(served, 5 * PAGE + 7);
	CHECK_EQ(hbmguard_range_is_clean(t, 0, 64 * PAGE), 1);

	CHECK_OK(retire(0, 5 * PAGE, PAGE));
	CHECK_OK(hbmguard_translate(t, 5 * PAGE + 7, &served, &state));
	CHECK_EQ(state, HBMGUARD_STATE_RETIRED);
	CHECK_EQ(served, translate(0, 5 * PAGE + 7).translated);
	CHECK_EQ(hbmguard_range_is_clean(t, 0, 64 * PAGE), 0);
	CHECK_EQ(hbmguard_range_is_clean(t, 6 * PAGE, 64 * PAGE), 1);
	CHECK_EQ(hbmguard_range_is_clean(t, 4 * PAGE, PAGE + 1), 0);
	CHECK_EQ(hbmguard_range_is_clean(t, 4 * PAGE, PAGE), 1);
	CHECK_EQ(hbmguard_table_generation(t), dev_info(0).generation);
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RETIRE, 0, 9 * PAGE, PAGE,
			   HBMGUARD_RETIRE_PENDING));
	CHECK_OK(hbmguard_translate(t, 9 * PAGE, &served, &state));
	CHECK_EQ(state, HBMGUARD_STATE_PENDING);
	CHECK_EQ(hbmguard_translate(t, usable, &served, &state), -ERANGE);
	CHECK_EQ(hbmguard_range_is_clean(t, usable - PAGE, 2 * PAGE), -ERANGE);
	CHECK_EQ(hbmguard_range_is_clean(t, 0, 0), -ERANGE);

	/* A forked child reads the same mapping. */
	pid = fork();
	if (pid == 0) {
		_exit(hbmguard_translate(t, 5 * PAGE, &served, &state) ||
		      state != HBMGUARD_STATE_RETIRED);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	CHECK_OK(clear_all(0));
	CHECK_OK(hbmguard_translate(t, 5 * PAGE, &served, &state));
	CHECK_EQ(state, HBMGUARD_STATE_CLEAN);
	hbmguard_table_close(t);
	close(fd);
}

/* mmap with bad arguments: a clear errno, never a kernel warning. */
static void test_map_bad_input(void)
{
	struct hbmguard_table *t;
	uint64_t served;
	uint32_t state, id;
	int fd = hbmguard_open(), rw = open_dev(O_RDWR);
	void *p;

	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(0) + 4096);
	CHECK(p == MAP_FAILED && errno == EINVAL);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(77));
	CHECK(p == MAP_FAILED && errno == ENODEV);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(100000));
	CHECK(p == MAP_FAILED && errno == EINVAL);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, HBMGUARD_MMAP_TABLE(0));
	CHECK(p == MAP_FAILED && errno == EACCES);
	p = mmap(NULL, 1 << 30, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(0));
	CHECK(p == MAP_FAILED && errno == EINVAL);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rw, HBMGUARD_MMAP_TABLE(0));
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		CHECK(mprotect(p, 4096, PROT_READ | PROT_WRITE) && errno == EACCES);
		CHECK_EQ(((struct hbmguard_map_header *)p)->magic, HBMGUARD_MAP_MAGIC);
		munmap(p, 4096);
	}

	/* A mapping outlives its device; a new one cannot be made. */
	CHECK_OK(sim_create("mapped", 64 << 20, 4096, 64, &id));
	CHECK_OK(retire(id, 3 * PAGE, PAGE));
	CHECK_OK(hbmguard_table_open(fd, id, &t));
	CHECK(!hbmguard_table_removed(t));
	CHECK_OK(sim_destroy(id));
	CHECK(hbmguard_table_removed(t));
	CHECK_OK(hbmguard_translate(t, 3 * PAGE, &served, &state));
	CHECK_EQ(state, HBMGUARD_STATE_RETIRED);
	hbmguard_table_close(t);
	CHECK_EQ(hbmguard_table_open(fd, id, &t), -ENODEV);
	close(rw);
	close(fd);
}

/*
 * Readers of the mapped table while 10^5 pages are retired (2000 on the debug
 * kernel): every answer is the old mapping (clean) or the new one, checked
 * against the final table.
 */
static uint32_t map_pages = 100000;
#define SAMPLES 20000

struct map_reader {
	struct hbmguard_table *t;
	uint32_t page[SAMPLES], state[SAMPLES];
	uint64_t served[SAMPLES];
	long n, lookups;
	volatile bool *stop;
};

static void *read_map(void *arg)
{
	struct map_reader *r = arg;
	uint64_t seed = (uintptr_t)arg;

	while (!*r->stop) {
		uint32_t page = (seed = seed * 6364136223846793005ULL + 1) >> 33;
		uint64_t served;
		uint32_t state;

		page %= 2 * map_pages;
		if (hbmguard_translate(r->t, page * PAGE, &served, &state)) {
			r->state[r->n % SAMPLES] = 99;	/* an error: recorded */
			r->page[r->n++ % SAMPLES] = page;
			continue;
		}
		r->lookups++;
		if (r->lookups % 97 == 0 && r->n < SAMPLES) {
			r->page[r->n] = page;
			r->served[r->n] = served;
			r->state[r->n++] = state;
		}
	}
	return NULL;
}

static void test_map_concurrent(void)
{
	static struct map_reader readers[2];
	volatile bool stop = false;
	pthread_t th[2];
	uint64_t usable;
	long bad = 0, retired_seen = 0, lookups = 0;
	uint32_t id, i;
	int fd = hbmguard_open(), k;

	if (debug_kernel())
		map_pages = 2000;
	CHECK_OK(sim_create("racing", 2ULL << 30, 4096, map_pages, &id));
	usable = dev_info(id).usable_size;
	for (k = 0; k < 2; k++) {
		readers[k] = (struct map_reader){ .stop = &stop };
		CHECK_OK(hbmguard_table_open(fd, id, &readers[k].t));
		pthread_create(&th[k], NULL, read_map, &readers[k]);
	}
	/* Scattered, so that each publication moves most entries. */
	for (i = 0; i < map_pages; i++)
		if (extent_op(ctl, HBMGUARD_IOC_RETIRE, id,
			      (uint64_t)(i * 7919ULL % map_pages) * 2 * PAGE, PAGE, 0)) {
			CHECK(!"retire failed");
			break;
		}
	/* Published within the change (map.c): the last one is there already. */
	CHECK_EQ(hbmguard_table_generation(readers[0].t), dev_info(id).generation);
	stop = true;
	for (k = 0; k < 2; k++) {
		struct map_reader *r = &readers[k];
		long j;

		pthread_join(th[k], NULL);
		lookups += r->lookups;
		for (j = 0; j < r->n && j < SAMPLES; j++) {
			uint64_t off = (uint64_t)r->page[j] * PAGE;

			if (r->state[j] == HBMGUARD_STATE_CLEAN) {
				bad += r->served[j] != off;
			} else if (r->state[j] == HBMGUARD_STATE_RETIRED) {
				retired_seen++;
				bad += r->page[j] % 2 ||
				       r->served[j] != translate(id, off).translated ||
				       r->served[j] < usable;
			} else {
				bad++;
			}
		}
		/* After the last publication the table is the final one. */
		{
			uint64_t served;
			uint32_t state;

			CHECK_OK(hbmguard_translate(r->t, 2 * PAGE * (map_pages - 1),
						    &served, &state));
			CHECK_EQ(state, HBMGUARD_STATE_RETIRED);
			CHECK_EQ(hbmguard_table_generation(r->t), dev_info(id).generation);
		}
		hbmguard_table_close(r->t);
	}
	printf("  %ld lookups by 2 readers during %u retirements, %ld retired seen, %ld wrong\n",
	       lookups, map_pages, retired_seen, bad);
	CHECK_EQ(bad, 0);
	CHECK(retired_seen > 0);
	CHECK_OK(sim_destroy(id));
	close(fd);
}

/*
 * Every publication is the table of its generation.  One thread retires and
 * clears pages and rows in a known order (isolated pages, neighbours that
 * merge, clears that split), each change one generation, and records what
 * TRANSLATE says of each page it changed.  Readers take snapshots through a
 * reader written again from the uapi's text (libhbmguard has its own): the
 * generation and four pages inside one seq section.  Afterwards every
 * snapshot is checked against the table replayed to its generation: a torn
 * publication, one whose generation runs ahead of its table or one whose
 * second copy fell behind shows as a page in the wrong state or served by
 * the wrong spare.
 */
#define GEN_PAGES 3000
#define GEN_SAMPLES 200000

struct gen_change {
	uint32_t page, state;
	uint64_t served;
};

struct gen_sample {
	uint64_t gen, served;
	uint32_t page, state;
};

struct gen_reader {
	const struct hbmguard_map_header *h;
	size_t size;
	struct gen_sample *s;
	long n, torn, bad_checks, went_back;
	volatile bool *stop;
};

/* The uapi's lookup: 1 (and *@out), 0 for none, -1 for a failed check. */
static int map_find(const struct hbmguard_map_header *h, size_t size, uint32_t page,
		    struct hbmguard_map_entry *out)
{
	uint32_t c = h->active & 1, n = h->root[c], level = h->height[c];
	uint32_t nodes = __atomic_load_n(&h->nodes, __ATOMIC_ACQUIRE);
	const struct hbmguard_map_node *base;

	if (!level)
		return 0;
	if (level > HBMGUARD_MAP_HEIGHT_MAX || h->buffer_offset[c] > size ||
	    (uint64_t)nodes * sizeof(*base) > size - h->buffer_offset[c])
		return -1;
	base = (const void *)((const char *)h + h->buffer_offset[c]);
	for (;;) {
		const struct hbmguard_map_node *node = &base[n];
		uint32_t i, nr;

		if (n >= nodes)
			return -1;
		nr = node->nr;
		level--;
		if (node->level != level || !nr ||
		    nr > (level ? HBMGUARD_MAP_INNER_MAX : HBMGUARD_MAP_LEAF_MAX))
			return -1;
		/* From the end, where libhbmguard bisects: a second opinion. */
		if (!level) {
			for (i = nr; i > 0 && node->ext[i - 1].first > page; i--)
				;
			if (!i)
				return 0;
			*out = node->ext[i - 1];
			return 1;
		}
		for (i = nr; i > 0 && node->in.first[i - 1] > page; i--)
			;
		if (!i)
			return 0;
		n = node->in.child[i - 1];
	}
}

/*
 * The mapped table @h of device @id is its table now: the generation, and
 * each of its first @pages pages as TRANSLATE has it (state, and the spare
 * serving a retired one).
 */
static void map_agrees(const struct hbmguard_map_header *h, size_t size, uint32_t id,
		       uint32_t pages)
{
	uint64_t usable = dev_info(id).usable_size;
	uint32_t i;

	CHECK_EQ(h->overflow, 0);
	CHECK_EQ(h->generation, dev_info(id).generation);
	for (i = 0; i < pages; i++) {
		struct hbmguard_map_entry e;
		struct hbmguard_translate tr = translate(id, (uint64_t)i * PAGE);
		int found = map_find(h, size, i, &e);
		bool in = found > 0 && i - e.first < e.nr;

		CHECK(found >= 0);
		if (in != (tr.state != HBMGUARD_STATE_CLEAN) ||
		    (in && (e.state != tr.state ||
			    (e.state == HBMGUARD_STATE_RETIRED &&
			     usable + (uint64_t)(e.spare + i - e.first) * PAGE != tr.translated)))) {
			printf("  page %u: the map says %s, TRANSLATE state %u\n", i,
			       in ? "bad" : "clean", tr.state);
			CHECK(!"the mapped table disagrees with TRANSLATE");
			break;
		}
	}
}

/* A whole mapping of device @id's table; MAP_FAILED, checked, if none. */
static struct hbmguard_map_header *map_table(int fd, uint32_t id, size_t *size)
{
	struct hbmguard_map_header *h;

	h = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(id));
	CHECK(h != MAP_FAILED);
	if (h == MAP_FAILED)
		return h;
	*size = h->map_size;
	munmap(h, PAGE);
	h = mmap(NULL, *size, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(id));
	CHECK(h != MAP_FAILED);
	return h;
}

static void *read_generations(void *arg)
{
	struct gen_reader *r = arg;
	const struct hbmguard_map_header *h = r->h;
	uint64_t seed = (uintptr_t)arg, last = 0, kept = 0;

	while (!*r->stop) {
		struct gen_sample s[4];
		uint32_t seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE), i;
		bool failed = false;

		if (seq & 1)
			continue;
		s[0].gen = h->generation;
		for (i = 0; i < 4; i++) {
			struct hbmguard_map_entry e;
			uint32_t page = (seed = seed * 6364136223846793005ULL + 1) >> 33;
			int found;

			page %= GEN_PAGES + 2;
			found = map_find(h, r->size, page, &e);
			failed |= found < 0 || h->overflow;
			s[i].gen = s[0].gen;
			s[i].page = page;
			s[i].state = HBMGUARD_STATE_CLEAN;
			s[i].served = (uint64_t)page * PAGE;
			if (found > 0 && page - e.first < e.nr) {
				s[i].state = e.state;
				if (e.state == HBMGUARD_STATE_RETIRED)
					s[i].served = h->usable_size +
						      (uint64_t)(e.spare + page - e.first) * PAGE;
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) != seq) {
			r->torn++;
			continue;
		}
		r->bad_checks += failed;	/* consistent, yet a check failed */
		r->went_back += s[0].gen < last;
		/* Each generation's first snapshot, and one in 64 of the rest. */
		if (s[0].gen != last || !(++kept % 64))
			for (i = 0; i < 4 && r->n < GEN_SAMPLES; i++)
				r->s[r->n++] = s[i];
		last = s[0].gen;
	}
	return NULL;
}

static int gen_cmp(const void *a, const void *b)
{
	const struct gen_sample *x = a, *y = b;

	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

static void test_map_generations(void)
{
	static struct gen_reader readers[2];
	static uint32_t cur[GEN_PAGES], op_first[20001], op_nr[20001];
	static uint64_t served[GEN_PAGES];
	uint32_t ops = debug_kernel() ? 1500 : 20000, id, k, i, last = 0, spans = 0;
	struct gen_change *changes = calloc(4 * (size_t)ops, sizeof(*changes));
	struct gen_sample *all;
	volatile bool stop = false;
	uint64_t g0, seed = 99, gens_seen = 0;
	long n = 0, bad = 0;
	size_t size;
	pthread_t th[2];
	int fd = hbmguard_open();
	struct hbmguard_map_header *h;

	CHECK_OK(sim_create("gens", 64ULL << 20, 4096, 4096, &id));
	g0 = dev_info(id).generation;
	h = map_table(fd, id, &size);
	if (h == MAP_FAILED || !changes)
		return;
	for (k = 0; k < 2; k++) {
		readers[k] = (struct gen_reader){ .h = h, .size = size, .stop = &stop,
						  .s = calloc(GEN_SAMPLES, sizeof(struct gen_sample)) };
		pthread_create(&th[k], NULL, read_generations, &readers[k]);
	}
	for (k = 1; k <= ops; k++) {
		uint32_t r = (seed = seed * 6364136223846793005ULL + 1) >> 33, p, len = 1;
		bool any_clean = false, any_bad = false, do_retire;

		p = r % 3 == 0 && last + 1 < GEN_PAGES ? last + 1 : (r >> 4) % GEN_PAGES;
		if (r % 8 == 1)
			len = 1 + (r >> 20) % 4;
		if (p + len > GEN_PAGES)
			p = GEN_PAGES - len;
		for (i = p; i < p + len; i++) {
			any_clean |= cur[i] == HBMGUARD_STATE_CLEAN;
			any_bad |= cur[i] != HBMGUARD_STATE_CLEAN;
		}
		do_retire = any_clean && (!any_bad || (r >> 12) & 1);
		spans += len > 1;
		if (extent_op(ctl, do_retire ? HBMGUARD_IOC_RETIRE : HBMGUARD_IOC_CLEAR, id,
			      (uint64_t)p * PAGE, len * PAGE, 0)) {
			CHECK(!"retire or clear failed");
			break;
		}
		if (dev_info(id).generation != g0 + k) {
			CHECK(!"a change that is not one generation");
			break;
		}
		op_first[k] = n;
		op_nr[k] = len;
		for (i = p; i < p + len; i++) {
			struct hbmguard_translate tr = translate(id, (uint64_t)i * PAGE);

			changes[n++] = (struct gen_change){ i, tr.state, tr.translated };
			cur[i] = tr.state;
		}
		last = p + len - 1;
	}
	stop = true;
	for (k = 0; k < 2; k++)
		pthread_join(th[k], NULL);

	/* Replay the changes in order of generation beside the sorted snapshots. */
	all = calloc(2 * GEN_SAMPLES, sizeof(*all));
	n = 0;
	for (k = 0; k < 2; k++) {
		memcpy(all + n, readers[k].s, readers[k].n * sizeof(*all));
		n += readers[k].n;
	}
	qsort(all, n, sizeof(*all), gen_cmp);
	for (i = 0; i < GEN_PAGES; i++) {
		cur[i] = HBMGUARD_STATE_CLEAN;
		served[i] = (uint64_t)i * PAGE;
	}
	k = 0;
	for (long j = 0; j < n; j++) {
		const struct gen_sample *s = &all[j];
		uint32_t want_state = HBMGUARD_STATE_CLEAN;
		uint64_t want_served = (uint64_t)s->page * PAGE;

		if (s->gen < g0 || s->gen > g0 + ops) {
			bad++;
			continue;
		}
		gens_seen += j == 0 || s->gen != all[j - 1].gen;
		for (; g0 + k < s->gen; k++)
			for (i = 0; i < op_nr[k + 1]; i++) {
				const struct gen_change *c = &changes[op_first[k + 1] + i];

				cur[c->page] = c->state;
				served[c->page] = c->served;
			}
		if (s->page < GEN_PAGES) {
			want_state = cur[s->page];
			want_served = served[s->page];
		}
		if (s->state != want_state || s->served != want_served) {
			if (bad < 5)
				printf("  generation %" PRIu64 " page %u: state %u served %#" PRIx64
				       ", the table had %u %#" PRIx64 "\n", s->gen, s->page,
				       s->state, s->served, want_state, want_served);
			bad++;
		}
	}
	printf("  %u changes (%u rows), %ld snapshots of %" PRIu64 " generations, "
	       "%ld + %ld torn, %ld wrong\n", ops, spans, n, gens_seen,
	       readers[0].torn, readers[1].torn, bad);
	CHECK_EQ(bad, 0);
	CHECK_EQ(readers[0].bad_checks + readers[1].bad_checks, 0);
	CHECK_EQ(readers[0].went_back + readers[1].went_back, 0);
	CHECK(gens_seen > 1);
	/* Within the change: the last generation is published, and every page agrees. */
	map_agrees(h, size, id, GEN_PAGES + 2);
	munmap(h, size);
	for (k = 0; k < 2; k++)
		free(readers[k].s);
	free(all);
	free(changes);
	CHECK_OK(sim_destroy(id));
	close(fd);
}

/*
 * A table never mapped is not followed, and built at its first mmap()
 * (map.c): every kind of change made before (retired, pending, failed past
 * the spares, cleared) is in the map that mmap() returns.  From then on
 * changes are followed: with a second mapping (a spare failed under a
 * page), and after the last mapping went.  Past capacity before the first
 * mmap(): mmap() says overflow, and the change back within it rebuilds.
 */
static void test_map_built_at_first_mmap(void)
{
	struct hbmguard_map_header *h, *h2;
	uint32_t id, i, cap;
	size_t size, size2;
	int fd = hbmguard_open();

	CHECK_OK(sim_create("lazy", 64ULL << 20, 4096, 16, &id));
	for (i = 0; i < 20; i++)	/* 16 retired, then 4 failed */
		CHECK_OK(retire(id, (uint64_t)(7 * i + 3) * PAGE, i % 5 ? PAGE : 3 * PAGE));
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RETIRE, id, 200 * PAGE, 4 * PAGE,
			   HBMGUARD_RETIRE_PENDING));
	CHECK_OK(clear(id, 10 * PAGE, 2 * PAGE));
	h = map_table(fd, id, &size);
	if (h == MAP_FAILED)
		return;
	map_agrees(h, size, id, 300);

	/* Built: a second mapping builds nothing, and the change is followed. */
	h2 = map_table(fd, id, &size2);
	if (h2 != MAP_FAILED) {
		CHECK_OK(clear(id, 3 * PAGE, PAGE));
		/* The spare serving page 4 fails: page 4 moves to spare 0. */
		CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, dev_info(id).usable_size + PAGE, 1));
		CHECK_EQ(translate(id, 4 * PAGE).translated, dev_info(id).usable_size);
		map_agrees(h2, size2, id, 300);
		munmap(h2, size2);
	}
	map_agrees(h, size, id, 300);
	munmap(h, size);

	/* Unmapped: changes after the last mapping went are followed still. */
	CHECK_OK(clear(id, 0, 100 * PAGE));
	CHECK_OK(retire(id, 250 * PAGE, 2 * PAGE));
	h = map_table(fd, id, &size);
	if (h == MAP_FAILED)
		return;
	map_agrees(h, size, id, 300);
	cap = h->capacity;
	munmap(h, size);

	CHECK_OK(sim_destroy(id));

	/* Past capacity before the first mmap(): pending pages two apart, cap + 1. */
	CHECK_OK(sim_create("lazy", 64ULL << 20, 4096, 16, &id));
	CHECK(2ULL * (cap + 1) * PAGE < dev_info(id).usable_size);
	for (i = 0; i <= cap; i++)
		if (extent_op(ctl, HBMGUARD_IOC_RETIRE, id, 2ULL * i * PAGE, PAGE,
			      HBMGUARD_RETIRE_PENDING)) {
			CHECK(!"pending failed");
			break;
		}
	h = map_table(fd, id, &size);
	if (h != MAP_FAILED) {
		CHECK_EQ(h->overflow, 1);
		CHECK_EQ(h->generation, dev_info(id).generation);
		/* Mapped now: the change back within capacity rebuilds it. */
		CHECK_OK(clear(id, 0, 4 * PAGE));
		map_agrees(h, size, id, 2 * (cap + 1));
		munmap(h, size);
	}
	CHECK_OK(sim_destroy(id));
	close(fd);
}

/*
 * Past capacity the map says overflow and readers go to the ioctl; once the
 * table is back within it, the next change rebuilds both copies and the
 * map answers as TRANSLATE does again.
 */
static void test_map_overflow(void)
{
	struct hbmguard_table *t;
	uint64_t served;
	uint32_t id, cap, i, state;
	int fd = hbmguard_open();
	struct hbmguard_map_header *h;

	CHECK_OK(sim_create("overflow", 64ULL << 20, 4096, 16, &id));
	CHECK_OK(hbmguard_table_open(fd, id, &t));
	h = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(id));
	CHECK(h != MAP_FAILED);
	if (h == MAP_FAILED)
		return;
	cap = h->capacity;
	/* Pending pages two apart: an extent each, capacity + 1 of them. */
	for (i = 0; i <= cap; i++)
		if (extent_op(ctl, HBMGUARD_IOC_RETIRE, id, 2ULL * i * PAGE, PAGE,
			      HBMGUARD_RETIRE_PENDING)) {
			CHECK(!"pending failed");
			break;
		}
	CHECK_EQ(h->overflow, 1);
	CHECK_EQ(hbmguard_translate(t, 0, &served, &state), -EOVERFLOW);
	CHECK_EQ(h->generation, dev_info(id).generation);
	/* Two fewer: within capacity, rebuilt. */
	CHECK_OK(clear(id, 0, 4 * PAGE));
	CHECK_EQ(h->overflow, 0);
	CHECK_EQ(h->nr[h->active], cap - 1);
	CHECK_EQ(h->nr[!h->active], cap - 1);
	for (i = 0; i < 2 * cap + 4; i += 1 + i % 7) {
		CHECK_OK(hbmguard_translate(t, (uint64_t)i * PAGE, &served, &state));
		if (state != translate(id, (uint64_t)i * PAGE).state) {
			CHECK(!"the rebuilt map disagrees with TRANSLATE");
			break;
		}
	}
	munmap(h, PAGE);
	hbmguard_table_close(t);
	CHECK_OK(sim_destroy(id));
	close(fd);
}

/*
 * map=0: devices created then have no mapped table (EOPNOTSUPP), TRANSLATE
 * still answers; the parameter takes only booleans; devices keep what they
 * were created with.
 */
static void test_map_off(void)
{
	const char *param = "/sys/module/hbmguard/parameters/map";
	struct hbmguard_table *t;
	uint32_t on, off;
	int fd = hbmguard_open(), p;
	void *m;

	CHECK_OK(sim_create("mapon", 64 << 20, 4096, 64, &on));
	p = open(param, O_WRONLY);
	CHECK(p >= 0);
	if (p < 0)
		return;
	CHECK(write(p, "maybe", 5) < 0 && errno == EINVAL);
	CHECK_EQ(write(p, "0", 1), 1);
	CHECK_OK(sim_create("mapoff", 64 << 20, 4096, 64, &off));
	CHECK_EQ(write(p, "1", 1), 1);
	close(p);

	m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(off));
	CHECK(m == MAP_FAILED && errno == EOPNOTSUPP);
	CHECK_EQ(hbmguard_table_open(fd, off, &t), -EOPNOTSUPP);
	CHECK_OK(retire(off, 3 * PAGE, PAGE));
	CHECK_EQ(translate(off, 3 * PAGE).state, HBMGUARD_STATE_RETIRED);
	/* The device created before keeps its map. */
	CHECK_OK(hbmguard_table_open(fd, on, &t));
	hbmguard_table_close(t);
	CHECK_OK(sim_destroy(off));
	CHECK_OK(sim_destroy(on));
	close(fd);
}

/*
 * The aperture.  A SIGBUS handler records what the kernel said and jumps
 * back to the test, in the thread that faulted: a writer thread's fault
 * ends that thread (write_loop()), not hbmtest with every test after it.
 */
static _Thread_local sigjmp_buf bus_jump;
static void *volatile bus_addr;
static volatile int bus_code;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	bus_addr = si->si_addr;
	bus_code = si->si_code;
	siglongjmp(bus_jump, 1);
}

/* Read a word; true and the word, or false after a SIGBUS. */
static bool read_word(volatile uint64_t *w, uint64_t *out)
{
	if (sigsetjmp(bus_jump, 1))
		return false;
	*out = *w;
	return true;
}

static uint32_t backed_device(const char *name, uint32_t spares)
{
	struct hbmguard_sim_create sc = {
		.size = sizeof(sc), .flags = HBMGUARD_SIM_BACKED,
		.hbm_size = 64 << 20, .page_size = 4096, .spare_pages = spares,
	};

	strcpy(sc.name, name);
	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc));
	return sc.device;
}

static void test_aperture(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("aperture", 64);
	uint64_t usable = dev_info(id).usable_size, w, i;
	struct hbmguard_extent_op x = { .size = sizeof(x), .device = id,
					.offset = 10 * PAGE, .length = PAGE };
	uint8_t *p;
	bool ok = true;
	int status;
	pid_t pid;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, usable, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < 64 * PAGE / 8; i++)
		((uint64_t *)p)[i] = i ^ 0xabcdef;

	/* A UE: the page's data is gone, and touching it says so, as poison. */
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 10 * PAGE + 8, 1));
	CHECK(!read_word((uint64_t *)(p + 10 * PAGE + 24), &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK(bus_addr == p + 10 * PAGE + 24);
	for (i = 0; i < 64 * PAGE / 8; i++) {
		if (i / (PAGE / 8) == 10)
			continue;
		ok &= read_word((uint64_t *)p + i, &w) && w == (i ^ 0xabcdef);
	}
	CHECK(ok);	/* every other page as it was */
	CHECK_EQ(translate(id, 10 * PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK(translate(id, 10 * PAGE).translated >= usable);

	/*
	 * Restored by its owner, who needs no privilege beyond writing the
	 * memory: the spare, zeroed, then what the owner writes.
	 */
	pid = fork();
	if (pid == 0)
		_exit(setuid(1000) || ioctl(ctl, HBMGUARD_IOC_RESTORED, &x) ? 1 : 0);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(read_word((uint64_t *)(p + 10 * PAGE + 24), &w) && w == 0);
	((uint64_t *)(p + 10 * PAGE))[3] = 0x1234;
	CHECK(read_word((uint64_t *)(p + 10 * PAGE + 24), &w) && w == 0x1234);

	/* Bad input. */
	x.device = 0;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_RESTORED, &x), EINVAL);	/* no memory */
	x.device = id;
	x.offset = usable;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_RESTORED, &x), ERANGE);
	x.offset = 1;
	CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_RESTORED, &x), EINVAL);
	CHECK(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, ctl, HBMGUARD_MMAP_APERTURE(0)) == MAP_FAILED &&
	      errno == EINVAL);
	CHECK(mmap(NULL, 2 * PAGE, PROT_READ, MAP_SHARED, ctl,
		   HBMGUARD_MMAP_APERTURE(id) + usable - PAGE) == MAP_FAILED && errno == EINVAL);
	CHECK(mmap(NULL, PAGE, PROT_READ, MAP_SHARED, ctl, HBMGUARD_MMAP_APERTURE(200)) == MAP_FAILED &&
	      errno == ENODEV);
	{
		struct hbmguard_sim_create sc = {
			.size = sizeof(sc), .flags = HBMGUARD_SIM_BACKED,
			.hbm_size = HBMGUARD_SIM_BACKED_MAX * 2, .page_size = 4096,
		};
		uint32_t before = snap().info.nr_devices;

		strcpy(sc.name, "toobig");
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc), EINVAL);
		sc.hbm_size = 64 << 20;
		sc.flags = 0x2;		/* unknown */
		CHECK_ERRNO(ioctl(ctl, HBMGUARD_IOC_SIM_CREATE, &sc), EINVAL);
		CHECK_EQ(snap().info.nr_devices, before);
	}

	/* The device goes: its mapping faults, and nothing else happens. */
	CHECK_OK(sim_destroy(id));
	CHECK(!read_word((uint64_t *)p, &w));
	CHECK_EQ(bus_code, BUS_ADRERR);
	munmap(p, usable);
	signal(SIGBUS, SIG_DFL);
}

/*
 * libhbmguard's guarded aperture: a lost page reads zero and is counted
 * instead of killing, other SIGBUSes reach the handler installed before,
 * and a restore brings the device's memory back under the same address.
 */
static void test_aperture_guard(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("guarded", 64), found;
	struct hbmguard_aperture *a, *other;
	uint64_t *p, *raw, w, i;
	bool ok = true;

	CHECK_EQ(hbmguard_aperture_open("no-such-device", 0, PAGE, &a), -ENODEV);
	CHECK_EQ(hbmguard_aperture_open("guarded", 0, 128 << 20, &a), -EINVAL);
	CHECK_OK(hbmguard_device_find(ctl, "guarded", &found));
	CHECK_EQ(found, id);
	CHECK_OK(hbmguard_aperture_open("guarded", 32 * PAGE, PAGE, &other));
	if (hbmguard_aperture_open("guarded", 0, 16 * PAGE, &a)) {
		CHECK(!"aperture_open");
		return;
	}
	p = hbmguard_aperture_addr(a);
	raw = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, ctl, HBMGUARD_MMAP_APERTURE(id));
	CHECK(raw != MAP_FAILED);
	for (i = 0; i < 16 * PAGE / 8; i++)
		p[i] = i * 3;
	sigaction(SIGBUS, &sa, NULL);
	CHECK_OK(hbmguard_aperture_guard());
	CHECK_OK(hbmguard_aperture_guard());	/* once is enough */

	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 5 * PAGE, 1));
	bus_code = 0;
	CHECK(read_word(p + 5 * PAGE / 8 + 7, &w) && w == 0);	/* absorbed */
	CHECK_EQ(bus_code, 0);
	p[5 * PAGE / 8 + 1] = 42;				/* goes nowhere */
	CHECK_EQ(hbmguard_aperture_lost(a), 1);
	CHECK_EQ(hbmguard_aperture_lost(other), 0);
	CHECK(!read_word(raw + 5 * PAGE / 8, &w));		/* unguarded */
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	for (i = 0; i < 16 * PAGE / 8; i++)
		ok &= i / (PAGE / 8) == 5 || p[i] == i * 3;
	CHECK(ok);

	CHECK_EQ(hbmguard_aperture_restore(a, 15 * PAGE, 2 * PAGE), -ERANGE);
	CHECK_EQ(hbmguard_aperture_restore(a, 5 * PAGE + 8, PAGE), -EINVAL);
	CHECK_OK(hbmguard_aperture_restore(a, 5 * PAGE, PAGE));
	CHECK_EQ(hbmguard_aperture_lost(a), 0);
	CHECK_EQ(p[5 * PAGE / 8 + 1], 0);			/* the spare, zeroed */
	p[5 * PAGE / 8 + 1] = 4242;
	CHECK(read_word(raw + 5 * PAGE / 8 + 1, &w) && w == 4242);	/* the device's */

	/* Not a lost page: the handler that was there before gets it. */
	CHECK_OK(sim_destroy(id));
	bus_code = 0;
	CHECK(!read_word(p, &w));
	CHECK_EQ(bus_code, BUS_ADRERR);
	hbmguard_aperture_close(other);
	hbmguard_aperture_close(a);
	munmap(raw, 16 * PAGE);
	signal(SIGBUS, SIG_DFL);
	CHECK_EQ(hbmguard_aperture_guard(), -EBUSY);	/* replaced, and says so */
}

/*
 * The guard and the SIGBUSes that are not a touch of a lost page, each in a
 * child of its own (the guard is for the life of a process): they go on as if
 * the guard were not there.
 */
enum bus_how { BUS_KILL, BUS_RAISE, BUS_QUEUE, BUS_AO };

static void send_bus(enum bus_how how, void *addr)
{
	siginfo_t si = { .si_signo = SIGBUS, .si_code = BUS_MCEERR_AO };

	si.si_addr = addr;
	switch (how) {
	case BUS_KILL:
		kill(getpid(), SIGBUS);
		break;
	case BUS_RAISE:
		raise(SIGBUS);
		break;
	case BUS_QUEUE:
		sigqueue(getpid(), SIGBUS, (union sigval){ .sival_int = 1 });
		break;
	case BUS_AO:	/* as memory_failure() sends it: one's own thread only */
		syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &si);
		break;
	}
}

/* A child's exit status: 0 when its checks passed. */
static int child_done(void)
{
	_exit(hbm_failures ? 1 : 0);
}

/* A child counts its own checks: an earlier test's failures are not its. */
static void child_failures_reset(void)
{
	hbm_failures = 0;
}

static int wait_child(pid_t pid)
{
	int status = -1;

	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

static int read_sysctl(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	return atoi(buf);
}

static void write_sysctl(const char *path, int value)
{
	char buf[32];
	int fd = open(path, O_WRONLY), n = snprintf(buf, sizeof(buf), "%d\n", value);

	CHECK(fd >= 0 && write(fd, buf, n) == n);
	close(fd);
}

#define MAX_MAP_COUNT "/proc/sys/vm/max_map_count"

/*
 * hbmguard_aperture_close() racing a thread whose touch of a lost page the
 * guard is absorbing: while the handler is between finding the aperture and
 * mapping its zero page, close must not unmap (the range could be reused, and
 * the zero page would land on someone else's memory).  ptrace holds the
 * handler at its mmap() and watches what close does meanwhile: wait for it
 * (sched_yield()) or unmap.
 */
struct race {
	volatile uint64_t *lost;
	int go, tid;
};

static void *touch_lost(void *arg)
{
	struct race *r = arg;
	pid_t tid = gettid();
	char c;

	uint64_t w;

	/* Its touch goes on after the handler, maybe after close(): SIGSEGV. */
	if (write(r->tid, &tid, sizeof(tid)) == sizeof(tid) && read(r->go, &c, 1) == 1)
		(void)read_word(r->lost, &w);
	return NULL;
}

/* Resume @tid (delivering @sig) to its next stop; its syscall's number at a
 * syscall entry, -1 at another stop, -2 when it is not stopped. */
static long trace_step(pid_t tid, int sig, int *status)
{
	struct __ptrace_syscall_info info;

	if (ptrace(PTRACE_SYSCALL, tid, 0, sig) || waitpid(tid, status, __WALL) != tid ||
	    !WIFSTOPPED(*status))
		return -2;
	if (WSTOPSIG(*status) != (SIGTRAP | 0x80))
		return -1;
	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof(info), &info) <= 0 ||
	    info.op != PTRACE_SYSCALL_INFO_ENTRY)
		return -1;
	return info.entry.nr;
}

static void test_aperture_guard_close_race(void)
{
	uint32_t id = backed_device("guardrace", 64);
	int go_b[2], go_main[2], tids[2], status, i;
	struct hbmguard_aperture *a;
	pid_t pid, tid = 0;
	long nr = -1;
	char c = 'g';

	CHECK_OK(pipe(go_b));
	CHECK_OK(pipe(go_main));
	CHECK_OK(pipe(tids));
	pid = fork();
	if (!pid) {
		struct sigaction segv = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
		struct race r = { .go = go_b[0], .tid = tids[1] };
		pthread_t b;

		signal(SIGBUS, SIG_DFL);
		sigaction(SIGSEGV, &segv, NULL);
		if (hbmguard_aperture_open("guardrace", 0, 4 * PAGE, &a) ||
		    hbmguard_aperture_guard() || inject(ctl, id, HBMGUARD_ERROR_UE, PAGE, 1))
			_exit(2);
		r.lost = (uint64_t *)hbmguard_aperture_addr(a) + PAGE / 8;
		if (pthread_create(&b, NULL, touch_lost, &r) || read(go_main[0], &c, 1) != 1)
			_exit(3);
		hbmguard_aperture_close(a);
		pthread_join(b, NULL);
		_exit(0);
	}
	close(tids[1]);
	CHECK_EQ(read(tids[0], &tid, sizeof(tid)), sizeof(tid));
	if (tid <= 0) {		/* the child failed before its thread ran */
		kill(pid, SIGKILL);
		tid = pid;
	}
	CHECK_OK(ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD));
	CHECK_OK(ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD));
	CHECK_OK(ptrace(PTRACE_INTERRUPT, pid, 0, 0));
	CHECK_OK(ptrace(PTRACE_INTERRUPT, tid, 0, 0));
	CHECK_EQ(waitpid(pid, &status, __WALL), pid);
	CHECK_EQ(waitpid(tid, &status, __WALL), tid);

	/* The thread touches the lost page; its handler is held at mmap(). */
	CHECK_EQ(write(go_b[1], &c, 1), 1);
	for (i = 0; i < 100 && nr != -2; i++)
		if ((nr = trace_step(tid, 0, &status)) == -1 && WSTOPSIG(status) == SIGBUS)
			break;
	CHECK(nr == -1 && WSTOPSIG(status) == SIGBUS);
	for (i = 0, nr = trace_step(tid, SIGBUS, &status); i < 100 && nr != SYS_mmap && nr != -2;
	     i++)
		nr = trace_step(tid, 0, &status);
	CHECK_EQ(nr, SYS_mmap);

	/* Meanwhile, close(): it must wait, not unmap. */
	CHECK_EQ(write(go_main[1], &c, 1), 1);
	for (i = 0, nr = -1; i < 1000 && nr != SYS_sched_yield && nr != SYS_munmap && nr != -2;
	     i++)
		nr = trace_step(pid, 0, &status);
	CHECK_EQ(nr, SYS_sched_yield);

	CHECK_OK(ptrace(PTRACE_DETACH, tid, 0, 0));
	CHECK_OK(ptrace(PTRACE_DETACH, pid, 0, 0));
	status = wait_child(pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(tids[0]);
	close(go_b[0]);
	close(go_b[1]);
	close(go_main[0]);
	close(go_main[1]);
	CHECK_OK(sim_destroy(id));
}

/*
 * hbmguard_aperture_restore() racing a thread whose touch of the lost page
 * the guard is absorbing: ptrace lets restore map the aperture back, then
 * the handler put its zero page over it and count it, then restore finish.
 * A zero page hides the restored page, so the aperture still counts a loss.
 */
static void test_aperture_guard_restore_race(void)
{
	uint32_t id = backed_device("guardrestore", 64);
	int go_b[2], go_main[2], tids[2], status, i;
	struct hbmguard_aperture *a;
	pid_t pid, tid = 0;
	long nr = -1;
	char c = 'g';

	CHECK_OK(pipe(go_b));
	CHECK_OK(pipe(go_main));
	CHECK_OK(pipe(tids));
	pid = fork();
	if (!pid) {
		struct race r = { .go = go_b[0], .tid = tids[1] };
		pthread_t b;

		signal(SIGBUS, SIG_DFL);
		if (hbmguard_aperture_open("guardrestore", 0, 4 * PAGE, &a) ||
		    hbmguard_aperture_guard() || inject(ctl, id, HBMGUARD_ERROR_UE, PAGE, 1))
			_exit(2);
		r.lost = (uint64_t *)hbmguard_aperture_addr(a) + PAGE / 8;
		if (pthread_create(&b, NULL, touch_lost, &r) || read(go_main[0], &c, 1) != 1)
			_exit(3);
		if (hbmguard_aperture_restore(a, PAGE, PAGE))
			_exit(4);
		pthread_join(b, NULL);
		_exit(hbmguard_aperture_lost(a) ? 0 : 5);
	}
	close(tids[1]);
	CHECK_EQ(read(tids[0], &tid, sizeof(tid)), sizeof(tid));
	if (tid <= 0) {		/* the child failed before its thread ran */
		kill(pid, SIGKILL);
		tid = pid;
	}
	CHECK_OK(ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD));
	CHECK_OK(ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD));
	CHECK_OK(ptrace(PTRACE_INTERRUPT, pid, 0, 0));
	CHECK_OK(ptrace(PTRACE_INTERRUPT, tid, 0, 0));
	CHECK_EQ(waitpid(pid, &status, __WALL), pid);
	CHECK_EQ(waitpid(tid, &status, __WALL), tid);

	/* The thread touches the lost page; its handler is held at mmap(). */
	CHECK_EQ(write(go_b[1], &c, 1), 1);
	for (i = 0; i < 100 && nr != -2; i++)
		if ((nr = trace_step(tid, 0, &status)) == -1 && WSTOPSIG(status) == SIGBUS)
			break;
	CHECK(nr == -1 && WSTOPSIG(status) == SIGBUS);
	for (i = 0, nr = trace_step(tid, SIGBUS, &status); i < 100 && nr != SYS_mmap && nr != -2;
	     i++)
		nr = trace_step(tid, 0, &status);
	CHECK_EQ(nr, SYS_mmap);

	/* restore() maps the aperture back, to the return of its mmap(). */
	CHECK_EQ(write(go_main[1], &c, 1), 1);
	for (i = 0, nr = -1; i < 1000 && nr != SYS_mmap && nr != -2; i++)
		nr = trace_step(pid, 0, &status);
	CHECK_EQ(nr, SYS_mmap);
	CHECK_EQ(trace_step(pid, 0, &status), -1);

	/* The handler's zero page goes over it, counted, up to its return. */
	for (i = 0, nr = -1; i < 100 && nr != SYS_rt_sigreturn && nr != -2; i++)
		nr = trace_step(tid, 0, &status);
	CHECK_EQ(nr, SYS_rt_sigreturn);

	CHECK_OK(ptrace(PTRACE_DETACH, tid, 0, 0));
	CHECK_OK(ptrace(PTRACE_DETACH, pid, 0, 0));
	status = wait_child(pid);
	/* 5: no loss counted, a zero page over the restored one */
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status), 0);
	close(tids[0]);
	close(go_b[0]);
	close(go_b[1]);
	close(go_main[0]);
	close(go_main[1]);
	CHECK_OK(sim_destroy(id));
}

static void test_aperture_guard_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("guardsig", 64);
	int map_count = read_sysctl(MAX_MAP_COUNT), status, ready[2];
	struct hbmguard_aperture *a;
	enum bus_how how;
	uint64_t *p, w;
	bool absorbed;
	pid_t pid;

	/* With no handler before the guard: killed, with a core, as unguarded. */
	for (how = BUS_KILL; how <= BUS_AO; how++) {
		CHECK_OK(pipe(ready));
		pid = fork();
		if (!pid) {
			struct rlimit core = { RLIM_INFINITY, RLIM_INFINITY };

			setrlimit(RLIMIT_CORE, &core);
			CHECK_OK(chdir("/tmp"));
			signal(SIGBUS, SIG_DFL);
			CHECK_OK(hbmguard_aperture_open("guardsig", 0, 4 * PAGE, &a));
			CHECK_OK(hbmguard_aperture_guard());
			if (how == BUS_KILL) {	/* kill -BUS from another process */
				CHECK_EQ(write(ready[1], "r", 1), 1);
				pause();
			} else {
				send_bus(how, (char *)hbmguard_aperture_addr(a) + PAGE);
			}
			child_done();
		}
		if (how == BUS_KILL) {
			CHECK_EQ(read(ready[0], &w, 1), 1);
			kill(pid, SIGBUS);
		}
		close(ready[0]);
		close(ready[1]);
		status = wait_child(pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS && WCOREDUMP(status));
		unlink("/tmp/core");
	}

	/* Ignored, they stay ignored, and the guard stays. */
	pid = fork();
	if (!pid) {
		signal(SIGBUS, SIG_IGN);
		CHECK_OK(hbmguard_aperture_open("guardsig", 0, 4 * PAGE, &a));
		p = hbmguard_aperture_addr(a);
		p[2 * PAGE / 8] = 7;
		CHECK_OK(hbmguard_aperture_guard());
		for (how = BUS_KILL; how <= BUS_AO; how++)
			send_bus(how, p + PAGE / 8);
		CHECK_OK(hbmguard_aperture_guard());
		CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 2 * PAGE, 1));
		CHECK_EQ(p[2 * PAGE / 8 + 1], 0);	/* absorbed */
		CHECK_EQ(hbmguard_aperture_lost(a), 1);
		child_done();
	}
	CHECK_EQ(wait_child(pid), 0);

	/*
	 * errno, across a guarded fault and across one the guard cannot absorb
	 * (no map may be split: the zero page cannot go in), which goes on to
	 * the handler before the guard.
	 */
	pid = fork();
	if (!pid) {
		sigaction(SIGBUS, &sa, NULL);
		CHECK_OK(hbmguard_aperture_open("guardsig", 0, 16 * PAGE, &a));
		p = hbmguard_aperture_addr(a);
		CHECK_OK(hbmguard_aperture_guard());
		CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 5 * PAGE, 1));
		CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 9 * PAGE, 1));
		errno = EDOM;
		CHECK(read_word(p + 5 * PAGE / 8, &w) && w == 0);
		CHECK_EQ(errno, EDOM);
		write_sysctl(MAX_MAP_COUNT, 1);
		errno = EDOM;
		bus_code = 0;
		absorbed = read_word(p + 9 * PAGE / 8, &w);
		CHECK_EQ(errno, EDOM);
		write_sysctl(MAX_MAP_COUNT, map_count);
		CHECK(!absorbed);
		CHECK_EQ(bus_code, BUS_MCEERR_AR);
		CHECK_EQ(hbmguard_aperture_lost(a), 1);
		child_done();
	}
	CHECK_EQ(wait_child(pid), 0);
	write_sysctl(MAX_MAP_COUNT, map_count);

	CHECK_OK(sim_destroy(id));
}

/*
 * The aperture of a range device registered with CLAIM (ras.sh registers it
 * over netlink): its own frames back it, and memory_failure() on one of them,
 * as hwpoison_inject makes it, retires the page under the mapping.
 */
static void test_aperture_range(uint32_t id, uint64_t phys)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	struct hbmguard_extent_op x = { .size = sizeof(x), .device = id,
					.offset = 7 * PAGE, .length = PAGE };
	uint64_t usable = dev_info(id).usable_size, *p, w, i;
	bool zero = true, ok = true;
	char pfn[32];
	int fd, tries;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, 32 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < 32 * PAGE / 8; i++)
		zero &= p[i] == 0;
	CHECK(zero);		/* whatever the frames held before, gone */
	for (i = 0; i < 32 * PAGE / 8; i++)
		p[i] = i ^ 0x5a5a;

	fd = open("/sys/kernel/debug/hwpoison/corrupt-pfn", O_WRONLY);
	CHECK(fd >= 0);
	snprintf(pfn, sizeof(pfn), "%llu\n", (unsigned long long)(phys / PAGE + 7));
	/* EBUSY: memory_failure() cannot handle a page it does not own, and says so */
	CHECK(write(fd, pfn, strlen(pfn)) == (ssize_t)strlen(pfn) || errno == EBUSY);
	close(fd);
	for (tries = 0; tries < 100 && translate(id, 7 * PAGE).state != HBMGUARD_STATE_RETIRED;
	     tries++)
		usleep(50000);
	CHECK_EQ(translate(id, 7 * PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK(translate(id, 7 * PAGE).translated >= usable);	/* a spare of the range */

	CHECK(!read_word(p + 7 * PAGE / 8 + 3, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK(bus_addr == p + 7 * PAGE / 8 + 3);
	for (i = 0; i < 32 * PAGE / 8; i++)
		ok &= i / (PAGE / 8) == 7 || (read_word(p + i, &w) && w == (i ^ 0x5a5a));
	CHECK(ok);

	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_RESTORED, &x));
	CHECK(read_word(p + 7 * PAGE / 8 + 3, &w) && w == 0);
	p[7 * PAGE / 8 + 3] = 0xfeed;
	CHECK(read_word(p + 7 * PAGE / 8 + 3, &w) && w == 0xfeed);
	munmap(p, 32 * PAGE);
	signal(SIGBUS, SIG_DFL);
}

/* A CE-threshold retirement under a writer: its data moves, unseen. */
struct writer {
	volatile uint64_t *word;
	volatile bool stop;
	uint64_t last;
	long mismatches;
	volatile bool faulted;		/* a write raised SIGBUS (on_sigbus()) */
};

static void *write_loop(void *arg)
{
	struct writer *wr = arg;

	if (sigsetjmp(bus_jump, 1)) {
		wr->faulted = true;
		return NULL;
	}
	while (!wr->stop) {
		*wr->word = ++wr->last;
		if (*wr->word != wr->last)
			wr->mismatches++;
	}
	return NULL;
}

/* The events of @type for page @off among the first @n of @evs: how many, their aux ORed. */
static int page_events(const struct hbmguard_event *evs, int n, uint32_t type,
		       uint64_t off, uint32_t *aux)
{
	int i, found = 0;

	*aux = 0;
	for (i = 0; i < n && i < 16; i++)
		if (evs[i].type == type && evs[i].offset == off) {
			found++;
			*aux |= evs[i].aux;
		}
	return found;
}

/* Until the writer has made @writes more writes; false after 30 s without. */
static bool writes_made(const struct writer *wr, uint64_t writes)
{
	uint64_t from = wr->last;
	int waited;

	for (waited = 0; wr->last - from < writes; waited++) {
		if (waited == 30000)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * Correctable errors retire a page under a writer, then fail the spare
 * serving it: each time its data moves, unseen, and no event says it was
 * lost.  An uncorrectable error in the spare after does lose it.
 */
static void test_aperture_ce(void)
{
	static const char *const whose[] = { "its own", "its spare's" };
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("moving", 64), aux;
	uint64_t usable = dev_info(id).usable_size, i, w, spare = 0, before;
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK), round, n;
	struct hbmguard_event evs[16];
	struct writer wr = { .stop = false };
	pthread_t th;
	uint8_t *p;
	bool ok;

	sigaction(SIGBUS, &sa, NULL);	/* a move that loses the page fails, not kills */
	p = mmap(NULL, usable, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < PAGE / 8; i++)
		((uint64_t *)(p + 20 * PAGE))[i] = i * 3;
	wr.word = (uint64_t *)(p + 20 * PAGE + 8 * 100);
	CHECK_OK(set_policy(id, HBMGUARD_POLICY_CE_THRESHOLD, 5, 0, 0));
	drain(ev_fd, evs, 16);
	for (round = 0; round < 2; round++) {
		before = wr.last;
		wr.stop = false;
		pthread_create(&th, NULL, write_loop, &wr);
		CHECK(writes_made(&wr, 1000));
		CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_CE, round ? spare : 20 * PAGE, 5));
		CHECK(writes_made(&wr, 1000));	/* on its new home */
		wr.stop = true;
		pthread_join(th, NULL);
		CHECK(!wr.faulted);
		CHECK_EQ(translate(id, 20 * PAGE).state, HBMGUARD_STATE_RETIRED);
		CHECK(translate(id, 20 * PAGE).translated >= usable &&
		      translate(id, 20 * PAGE).translated != spare);
		spare = translate(id, 20 * PAGE).translated;
		CHECK_EQ(wr.mismatches, 0);
		CHECK(read_word(wr.word, &w) && w == wr.last);
		ok = true;
		for (i = 0; i < PAGE / 8; i++)
			if (i != 100)
				ok &= ((uint64_t *)(p + 20 * PAGE))[i] == i * 3;
		CHECK(ok);	/* the rest of the page moved with it */
		n = drain(ev_fd, evs, 16);
		CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_RETIRED, 20 * PAGE, &aux), 1);
		CHECK_EQ(aux, 0);	/* nothing lost */
		printf("  %s CEs: %" PRIu64 " writes across the move, none lost\n",
		       whose[round], wr.last - before);
	}

	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, spare, 1));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_RETIRED, 20 * PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	CHECK(translate(id, 20 * PAGE).translated != spare);
	CHECK(!read_word(wr.word, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	signal(SIGBUS, SIG_DFL);
	close(ev_fd);
	munmap(p, usable);
	CHECK_OK(sim_destroy(id));
}

/* fork, a second process with its own fd, partial munmap, mremap. */
static void test_aperture_vm(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("shared", 64);
	uint64_t w;
	uint8_t *p, *q;
	pid_t pid;
	int status;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	((uint64_t *)(p + 3 * PAGE))[0] = 0x5151;

	/* A forked child shares the pages, and its writes are seen. */
	pid = fork();
	if (pid == 0) {
		int ok = ((uint64_t *)(p + 3 * PAGE))[0] == 0x5151;

		((uint64_t *)(p + 4 * PAGE))[0] = 0x4242;
		_exit(!ok);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(((uint64_t *)(p + 4 * PAGE))[0], 0x4242);

	/* Another process, its own open and mapping, at an offset. */
	pid = fork();
	if (pid == 0) {
		int fd = open(DEV_NODE, O_RDWR);
		uint8_t *r = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
				  HBMGUARD_MMAP_APERTURE(id) + 3 * PAGE);

		_exit(r == MAP_FAILED || ((uint64_t *)r)[0] != 0x5151);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Retirement reaches every mapping, the other process's too. */
	CHECK_OK(retire(id, 3 * PAGE, PAGE));
	CHECK_EQ(((uint64_t *)(p + 3 * PAGE))[0], 0x5151);
	CHECK(translate(id, 3 * PAGE).translated >= dev_info(id).usable_size);

	/* Partial munmap: the rest still works; the hole is a hole. */
	CHECK_OK(munmap(p + 8 * PAGE, 4 * PAGE));
	CHECK_EQ(((uint64_t *)(p + 4 * PAGE))[0], 0x4242);
	CHECK(read_word((uint64_t *)(p + 12 * PAGE), &w) && w == 0);

	/* mremap: moving works, growing is refused (VM_DONTEXPAND). */
	q = mremap(p, 8 * PAGE, 8 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
		   p + 32 * PAGE);
	CHECK(q != MAP_FAILED);
	if (q != MAP_FAILED) {
		CHECK_EQ(((uint64_t *)(q + 3 * PAGE))[0], 0x5151);
		CHECK(mremap(q, 8 * PAGE, 64 * PAGE, 0) == MAP_FAILED);
		munmap(q, 8 * PAGE);
	}
	/* A mapping whose fd is closed still holds the module. */
	{
		int fd = open_dev(O_RDWR);
		void *m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd,
			       HBMGUARD_MMAP_APERTURE(id));

		close(fd);
		CHECK(m != MAP_FAILED);
		CHECK_ERRNO(syscall(SYS_delete_module, "hbmguard", O_NONBLOCK),
			    EWOULDBLOCK);
		munmap(m, PAGE);
	}
	munmap(p + 12 * PAGE, 4 * PAGE);
	CHECK_OK(sim_destroy(id));
	signal(SIGBUS, SIG_DFL);
}

/*
 * Every way of mapping both regions, from a read-only and a read-write fd:
 * what must work works, the rest fails with exactly the errno documented
 * (or the kernel's own, where do_mmap(), mprotect() or mremap() refuse
 * first: cited at each).  A private mapping of the aperture used to be
 * accepted, and its first touch BUG()ed in vmf_insert_pfn_prot(): it is
 * never touched here when it is wrongly accepted.
 */
struct mmap_case {
	int prot, flags, ro_errno, rw_errno;	/* 0: must succeed */
};

static void check_mmap_case(int fd, bool ro, const struct mmap_case *c, size_t len,
			    uint64_t off, const char *region)
{
	int want = ro ? c->ro_errno : c->rw_errno;
	void *p = mmap(NULL, len, c->prot, c->flags, fd, off);
	int err = p == MAP_FAILED ? errno : 0;

	if (err != want) {
		printf("  FAIL %s: %s mmap prot %#x flags %#x on %s fd: %s, expected %s\n",
		       hbm_test_name, region, c->prot, c->flags, ro ? "O_RDONLY" : "O_RDWR",
		       err ? strerror(err) : "mapped", want ? strerror(want) : "mapped");
		hbm_failures++;
	}
	if (p != MAP_FAILED)
		munmap(p, len);
}

/* mprotect() and mremap() on a read-only shared mapping of @len at @off. */
static void check_vm_ops(int fd, bool ro, size_t len, uint64_t off, bool table)
{
	uint8_t *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off), *q;
	uint64_t w;

	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	/* Writable only where a writable mapping could have been made. */
	if (ro || table) {
		CHECK_ERRNO(mprotect(p, len, PROT_READ | PROT_WRITE), EACCES);
	} else {
		CHECK_OK(mprotect(p, len, PROT_READ | PROT_WRITE));
		((volatile uint64_t *)p)[1] = 0x77;
		CHECK(read_word((uint64_t *)p + 1, &w) && w == 0x77);
		CHECK_OK(mprotect(p, len, PROT_READ));
	}
	CHECK_ERRNO(mprotect(p, len, PROT_READ | PROT_EXEC), EACCES);	/* VM_MAYEXEC gone */
	CHECK_ERRNO(mprotect(p, PAGE, PROT_EXEC), EACCES);
	CHECK_OK(mprotect(p, len, PROT_NONE));
	CHECK_OK(mprotect(p, len, PROT_READ));

	/* Growing (VM_DONTEXPAND): EFAULT, in place or moved (mm/mremap.c vma_to_resize()). */
	CHECK(mremap(p, len, len + PAGE, 0) == MAP_FAILED && errno == EFAULT);
	CHECK(mremap(p, len, len + PAGE, MREMAP_MAYMOVE) == MAP_FAILED && errno == EFAULT);
	CHECK(mremap(p, 0, PAGE, MREMAP_MAYMOVE) == MAP_FAILED && errno == EFAULT);
	CHECK(mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_DONTUNMAP) == MAP_FAILED &&
	      errno == EINVAL);
	/* Shrinking and moving keep what is mapped. */
	w = *(volatile uint64_t *)p;
	q = mremap(p, len, len - PAGE, 0);
	CHECK(q == p);
	q = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);	/* a place */
	CHECK(q != MAP_FAILED);
	q = mremap(p, len - PAGE, len - PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, q);
	CHECK(q != MAP_FAILED);
	if (q == MAP_FAILED) {
		munmap(p, len);
		return;
	}
	CHECK_EQ(*(volatile uint64_t *)q, w);
	munmap(q, len - PAGE);
}

static void test_mmap_variants(void)
{
	static const struct mmap_case aperture[] = {
		/* hbm_mmap(): device memory, even read, needs a writable file */
		{ PROT_READ, MAP_SHARED, EACCES, 0 },
		{ PROT_NONE, MAP_SHARED, EACCES, 0 },
		{ PROT_READ, MAP_SHARED_VALIDATE, EACCES, 0 },
		/* do_mmap(): a shared writable mapping needs a writable file */
		{ PROT_READ | PROT_WRITE, MAP_SHARED, EACCES, 0 },
		{ PROT_WRITE, MAP_SHARED, EACCES, 0 },
		{ PROT_READ | PROT_EXEC, MAP_SHARED, EACCES, EACCES },
		{ PROT_EXEC, MAP_SHARED, EACCES, EACCES },
		{ PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, EACCES, EACCES },
		{ PROT_READ, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_NONE, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_READ | PROT_WRITE, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_READ | PROT_EXEC, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_READ, MAP_PRIVATE | MAP_POPULATE, EINVAL, EINVAL },
	};
	static const struct mmap_case table[] = {
		{ PROT_READ, MAP_SHARED, 0, 0 },
		{ PROT_NONE, MAP_SHARED, 0, 0 },
		{ PROT_READ, MAP_SHARED_VALIDATE, 0, 0 },
		{ PROT_READ | PROT_WRITE, MAP_SHARED, EACCES, EACCES },
		{ PROT_WRITE, MAP_SHARED, EACCES, EACCES },
		{ PROT_READ | PROT_EXEC, MAP_SHARED, EACCES, EACCES },
		{ PROT_EXEC, MAP_SHARED, EACCES, EACCES },
		{ PROT_READ, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_NONE, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_READ | PROT_WRITE, MAP_PRIVATE, EINVAL, EINVAL },
		{ PROT_READ | PROT_EXEC, MAP_PRIVATE, EINVAL, EINVAL },
	};
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("mmapped", 64), absent = HBMGUARD_MAX_DEVICES - 1;
	uint64_t usable = dev_info(id).usable_size, ap = HBMGUARD_MMAP_APERTURE(id);
	uint64_t window = 1ULL << 44;	/* the aperture offsets of one device */
	struct hbmguard_map_header *h;
	int fds[2] = { open_dev(O_RDONLY), open_dev(O_RDWR) };
	size_t map_size, i;
	int f;

	sigaction(SIGBUS, &sa, NULL);
	h = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fds[0], HBMGUARD_MMAP_TABLE(id));
	CHECK(h != MAP_FAILED);
	if (h == MAP_FAILED)
		return;
	map_size = h->map_size;
	munmap(h, PAGE);
	for (f = 0; f < 2; f++) {
		for (i = 0; i < sizeof(aperture) / sizeof(aperture[0]); i++)
			check_mmap_case(fds[f], !f, &aperture[i], 4 * PAGE, ap, "aperture");
		for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
			check_mmap_case(fds[f], !f, &table[i], PAGE, HBMGUARD_MMAP_TABLE(id),
					"table");
		if (f)	/* the read-only file maps no aperture */
			check_vm_ops(fds[f], !f, 4 * PAGE, ap + 8 * PAGE, false);
		check_vm_ops(fds[f], !f, map_size, HBMGUARD_MMAP_TABLE(id), true);
	}

	/*
	 * Offsets and lengths at and past every boundary: the aperture's on the
	 * read-write fd, the table's on the read-only one.
	 */
	{
		static const struct mmap_case ok = { PROT_READ, MAP_SHARED, 0, 0 },
			inval = { PROT_READ, MAP_SHARED, EINVAL, EINVAL },
			nodev = { PROT_READ, MAP_SHARED, ENODEV, ENODEV },
			over = { PROT_READ, MAP_SHARED, EOVERFLOW, EOVERFLOW };
		int fd = fds[1];

		check_mmap_case(fd, false, &ok, usable, ap, "whole aperture");
		check_mmap_case(fd, false, &inval, usable + PAGE, ap, "aperture + 1 page");
		check_mmap_case(fd, false, &ok, PAGE, ap + usable - PAGE, "last page");
		check_mmap_case(fd, false, &inval, 2 * PAGE, ap + usable - PAGE, "last page + 1");
		check_mmap_case(fd, false, &inval, PAGE, ap + usable, "first spare");
		check_mmap_case(fd, false, &inval, PAGE, ap + window - PAGE, "end of window");
		check_mmap_case(fd, false, &inval, PAGE, ap + 1, "misaligned");	/* do_mmap() */
		check_mmap_case(fd, false, &inval, 0, ap, "empty");		/* do_mmap() */
		check_mmap_case(fd, false, &nodev, PAGE, HBMGUARD_MMAP_APERTURE(absent),
				"absent device");
		check_mmap_case(fd, false, &inval, PAGE,
				HBMGUARD_MMAP_APERTURE(HBMGUARD_MAX_DEVICES), "device 256");
		check_mmap_case(fd, false, &inval, PAGE, ap | 1ULL << 63, "bit 63");
		check_mmap_case(fd, false, &over, 2 * PAGE, -PAGE, "offset wraps");	/* do_mmap() */
		close(fds[1]);
		fd = fds[0];

		check_mmap_case(fd, true, &ok, map_size, HBMGUARD_MMAP_TABLE(id), "whole table");
		check_mmap_case(fd, true, &inval, map_size + PAGE, HBMGUARD_MMAP_TABLE(id),
				"table + 1 page");
		check_mmap_case(fd, true, &inval, PAGE, HBMGUARD_MMAP_TABLE(id) + PAGE,
				"table + offset");
		check_mmap_case(fd, true, &nodev, PAGE, HBMGUARD_MMAP_TABLE(absent),
				"absent table");
		check_mmap_case(fd, true, &inval, PAGE, HBMGUARD_MMAP_TABLE(HBMGUARD_MAX_DEVICES),
				"table 256");
	}
	close(fds[0]);
	CHECK_OK(sim_destroy(id));
	signal(SIGBUS, SIG_DFL);
}

/*
 * The access model (kmod/chardev.c) as the users it names meet it, the
 * nodes' groups and modes as the udev rule makes them: a member of
 * hbmguard-aperture's group maps device memory read-write and restores its
 * lost pages, and is refused every change; a member of hbmguard's group
 * reads the table but never the memory; a user in neither opens neither;
 * uid 0 without CAP_SYS_ADMIN, the nodes' owner, is a writer, not an admin.
 */
#define APERTURE_NODE "/dev/" HBMGUARD_APERTURE_DEVICE_NAME
#define READERS_GID 1000
#define WRITERS_GID 1100

enum node_user { NODE_WRITER, NODE_READER, NODE_NOBODY, NODE_ROOT_NOCAP };

/*
 * What a writer may do, from an open of the aperture node: map @id's memory,
 * write and read it, find lost @page's SIGBUS and restore it; and what it
 * may not: map from a read-only file, restore through one, or change
 * anything (refused_changes()).  0 or the step that failed.
 */
static int writer_uses(uint32_t id, uint64_t page, uint32_t nr_devices)
{
	struct hbmguard_extent_op x = { .size = sizeof(x), .device = id,
					.offset = page * PAGE, .length = PAGE };
	int fd = open(APERTURE_NODE, O_RDWR | O_CLOEXEC), ro;
	volatile uint64_t *p;
	uint64_t w;

	if (fd < 0)
		return 30;
	p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 HBMGUARD_MMAP_APERTURE(id));
	if (p == MAP_FAILED)
		return 31;
	p[page] = 0x600d;	/* a word of its own on a good page */
	if (!read_word(p + page, &w) || w != 0x600d)
		return 32;
	bus_code = 0;
	if (read_word(p + page * PAGE / 8, &w) || bus_code != BUS_MCEERR_AR)
		return 33;
	ro = open(APERTURE_NODE, O_RDONLY | O_CLOEXEC);
	if (ro < 0)
		return 34;
	if (mmap(NULL, PAGE, PROT_READ, MAP_SHARED, ro, HBMGUARD_MMAP_APERTURE(id)) !=
	    MAP_FAILED || errno != EACCES)
		return 35;
	if (ioctl(ro, HBMGUARD_IOC_RESTORED, &x) != -1 || errno != EBADF)
		return 36;
	close(ro);
	if (read_word(p + page * PAGE / 8, &w))	/* still lost */
		return 37;
	if (ioctl(fd, HBMGUARD_IOC_RESTORED, &x))
		return 38;
	if (!read_word(p + page * PAGE / 8, &w) || w)
		return 39;
	p[page * PAGE / 8] = 0x1234;
	if (!read_word(p + page * PAGE / 8, &w) || w != 0x1234)
		return 40;
	munmap((void *)p, 16 * PAGE);
	ro = hbmguard_open();	/* the aperture's node: the reads need no other group */
	if (ro < 0)
		return 41;
	close(ro);
	return refused_changes(fd, nr_devices);
}

/* A reader sees the table, never the memory, and cannot restore. */
static int reader_uses(uint32_t id, uint64_t page)
{
	struct hbmguard_extent_op x = { .size = sizeof(x), .device = id,
					.offset = page * PAGE, .length = PAGE };
	int fd;

	if (open(APERTURE_NODE, O_RDONLY) != -1 || errno != EACCES)
		return 50;
	if (open(DEV_NODE, O_RDWR) != -1 || errno != EACCES)
		return 51;
	fd = open(DEV_NODE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 52;
	ctl = fd;
	if (translate(id, page * PAGE).state != HBMGUARD_STATE_RETIRED)
		return 53;
	if (mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_APERTURE(id)) !=
	    MAP_FAILED || errno != EACCES)
		return 54;
	if (ioctl(fd, HBMGUARD_IOC_RESTORED, &x) != -1 || errno != EBADF)
		return 55;
	return 0;
}

static int node_user(enum node_user who, uint32_t id, uint64_t page, uint32_t nr_devices)
{
	gid_t group = who == NODE_WRITER ? WRITERS_GID : READERS_GID;

	switch (who) {
	case NODE_WRITER:	/* a member by its supplementary groups, as useradd -G */
	case NODE_READER:
		if (setgroups(1, &group) || setgid(3000) || setuid(3000))
			return 10;
		return who == NODE_WRITER ? writer_uses(id, page, nr_devices) :
					    reader_uses(id, page);
	case NODE_NOBODY:
		if (setgroups(0, NULL) || setgid(2000) || setuid(2000))
			return 10;
		if (open(APERTURE_NODE, O_RDWR) != -1 || errno != EACCES ||
		    open(APERTURE_NODE, O_RDONLY) != -1 || errno != EACCES ||
		    open(DEV_NODE, O_RDONLY) != -1 || errno != EACCES ||
		    hbmguard_open() != -EACCES)
			return 11;
		return 0;
	case NODE_ROOT_NOCAP:	/* setpriv --inh-caps=-all --bounding-set=-all */
		if (caps_keep_only(0))
			return 10;
		return writer_uses(id, page, nr_devices);
	}
	return 99;
}

static void test_aperture_users(void)
{
	static const struct {
		enum node_user who;
		uint64_t page;		/* a lost page of its own */
	} users[] = {
		{ NODE_WRITER, 10 }, { NODE_READER, 11 }, { NODE_NOBODY, 0 },
		{ NODE_ROOT_NOCAP, 12 },
	};
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("users", 64);
	struct hbmguard_info info;
	struct snapshot before;
	unsigned int i;
	uint64_t w;
	int status;
	uint64_t *p;

	sigaction(SIGBUS, &sa, NULL);
	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++)
		if (users[i].page)
			CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, users[i].page * PAGE, 1));
	CHECK_OK(get_info(ctl, &info));
	before = snap();
	CHECK_OK(chown(APERTURE_NODE, 0, WRITERS_GID));	/* as 60-hbmguard.rules */
	CHECK_OK(chmod(APERTURE_NODE, 0660));
	CHECK_OK(chown(DEV_NODE, 0, READERS_GID));
	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(node_user(users[i].who, id, users[i].page, info.nr_devices));
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			printf("  user %u: %s %d\n", i, WIFEXITED(status) ? "step" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	}
	CHECK_OK(chown(DEV_NODE, 0, 0));
	CHECK_OK(chown(APERTURE_NODE, 0, 0));
	CHECK_OK(chmod(APERTURE_NODE, 0600));
	CHECK_UNCHANGED(before);

	/* What the writers did is in the memory; the reader's page stays lost. */
	p = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, ctl, HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p != MAP_FAILED) {
		CHECK(read_word(p + 10 * PAGE / 8, &w) && w == 0x1234);
		CHECK(read_word(p + 12 * PAGE / 8, &w) && w == 0x1234);
		CHECK(!read_word(p + 11 * PAGE / 8, &w));
		CHECK(read_word(p + 10, &w) && w == 0x600d);
		CHECK(read_word(p + 12, &w) && w == 0x600d);
		munmap(p, 16 * PAGE);
	}
	CHECK_OK(sim_destroy(id));
	signal(SIGBUS, SIG_DFL);
}

/*
 * Every open shares one address_space that the module owns, whichever node
 * was opened: a node made with mknod in a tmpfs, mapped, removed and its
 * filesystem unmounted leaves nothing behind that later zaps or faults use.
 * (The debug kernel's KASAN sees the use after free this used to be when
 * such a node was the first opened; tier2.sh makes it the first.)
 */
static void test_aperture_nodes(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	const char *dir = "/tmp/hbmnodes", *node = "/tmp/hbmnodes/hbm";
	uint32_t id = backed_device("nodes", 64);
	uint64_t *p, *q, *r, w;
	struct stat st;
	int fd, fd2;

	sigaction(SIGBUS, &sa, NULL);
	CHECK_OK(stat(DEV_NODE, &st));
	mkdir(dir, 0700);
	CHECK_OK(mount("tmpfs", dir, "tmpfs", 0, NULL));
	CHECK_OK(mknod(node, S_IFCHR | 0600, st.st_rdev));
	fd = open(node, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (fd < 0 || p == MAP_FAILED)
		return;
	CHECK_OK(unlink(node));
	fd2 = open_dev(O_RDWR);
	q = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd2,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(q != MAP_FAILED);
	if (q == MAP_FAILED)
		return;
	p[2 * PAGE / 8] = 0x2222;
	q[3 * PAGE / 8] = 0x3333;

	/* A retirement zaps both mappings; both refault onto the spares. */
	CHECK_OK(retire(id, 2 * PAGE, 2 * PAGE));
	CHECK(read_word(q + 2 * PAGE / 8, &w) && w == 0x2222);
	CHECK(read_word(p + 3 * PAGE / 8, &w) && w == 0x3333);
	p[2 * PAGE / 8 + 1] = 0x2223;
	CHECK(read_word(q + 2 * PAGE / 8 + 1, &w) && w == 0x2223);

	/* The removed node's last file goes, and its filesystem. */
	munmap(p, 16 * PAGE);
	close(fd);
	CHECK_OK(umount(dir));
	rmdir(dir);

	/* Zaps and faults after it: retire, clear, a new mapping. */
	CHECK_OK(retire(id, 5 * PAGE, PAGE));
	q[5 * PAGE / 8] = 0x5555;
	CHECK_OK(clear(id, 2 * PAGE, 4 * PAGE));
	r = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, fd2, HBMGUARD_MMAP_APERTURE(id));
	CHECK(r != MAP_FAILED);
	if (r != MAP_FAILED) {
		CHECK(read_word(r + 2 * PAGE / 8 + 1, &w) && w == 0x2223);
		CHECK(read_word(r + 3 * PAGE / 8, &w) && w == 0x3333);
		CHECK(read_word(r + 5 * PAGE / 8, &w) && w == 0x5555);
		munmap(r, 16 * PAGE);
	}
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 6 * PAGE, 1));
	CHECK(!read_word(q + 6 * PAGE / 8, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	munmap(q, 16 * PAGE);
	close(fd2);
	CHECK_OK(sim_destroy(id));
	signal(SIGBUS, SIG_DFL);
}

/*
 * A page's data follows it wherever it is served from: to its spare when
 * retired, back home when cleared, to the same spare again when retired
 * again (one spare only, so it is the same), and a lost page cleared is
 * lost no more: it gets its own frame back, as it was when lost.
 */
static void test_aperture_clear(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("clearing", 1);
	uint64_t *p, w, i;
	bool ok = true;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < 16 * PAGE / 8; i++)
		p[i] = i ^ 0xc1ea;

	p[4 * PAGE / 8] = 0xa;
	CHECK_OK(retire(id, 4 * PAGE, PAGE));
	CHECK(read_word(p + 4 * PAGE / 8, &w) && w == 0xa);
	p[4 * PAGE / 8] = 0xb;				/* to the spare */
	CHECK_OK(clear(id, 4 * PAGE, PAGE));
	CHECK(read_word(p + 4 * PAGE / 8, &w) && w == 0xb);	/* came home */
	p[4 * PAGE / 8] = 0xc;				/* to the page */
	CHECK_OK(retire(id, 4 * PAGE, PAGE));		/* the same spare */
	CHECK(read_word(p + 4 * PAGE / 8, &w) && w == 0xc);
	p[4 * PAGE / 8] = 0xd;
	CHECK_OK(clear(id, 4 * PAGE, PAGE));
	CHECK(read_word(p + 4 * PAGE / 8, &w) && w == 0xd);

	/* Lost, then cleared: not lost any more, and as it was. */
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 9 * PAGE, 1));
	CHECK(!read_word(p + 9 * PAGE / 8 + 2, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK_OK(clear(id, 9 * PAGE, PAGE));
	CHECK(read_word(p + 9 * PAGE / 8 + 2, &w) && w == ((9 * PAGE / 8 + 2) ^ 0xc1ea));
	CHECK_OK(retire(id, 9 * PAGE, PAGE));		/* copied, as any page */
	CHECK(read_word(p + 9 * PAGE / 8 + 2, &w) && w == ((9 * PAGE / 8 + 2) ^ 0xc1ea));
	CHECK_OK(clear(id, 9 * PAGE, PAGE));
	/* Lost, restored, written, cleared: what was written comes home. */
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 9 * PAGE, 1));
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, 9 * PAGE, PAGE, 0));
	CHECK(read_word(p + 9 * PAGE / 8 + 2, &w) && w == 0);
	p[9 * PAGE / 8 + 2] = 0x99;
	CHECK_OK(clear(id, 9 * PAGE, PAGE));
	CHECK(read_word(p + 9 * PAGE / 8 + 2, &w) && w == 0x99);
	CHECK(read_word(p + 9 * PAGE / 8 + 3, &w) && w == 0);	/* the spare's zero */

	for (i = 0; i < 16 * PAGE / 8; i++)
		ok &= i / (PAGE / 8) == 4 || i / (PAGE / 8) == 9 ||
		      (read_word(p + i, &w) && w == (i ^ 0xc1ea));
	CHECK(ok);
	munmap(p, 16 * PAGE);
	CHECK_OK(sim_destroy(id));
	signal(SIGBUS, SIG_DFL);
}

/*
 * The one event of @evs that said data was lost, counted by GET_DEVICE with
 * its seqnum (netlink's DATA_LOST), for a reader whose ring overflowed to
 * learn whether such an event was among those it lost; a caller of the
 * first size gets the count in what was reserved, nothing past it.
 */
static void data_lost_counted(uint32_t id, const struct hbmguard_event *evs, int n)
{
	struct hbmguard_device_info di = dev_info(id);
	union {
		struct hbmguard_device_info di;
		unsigned char b[sizeof(di) + 16];
	} old;
	unsigned char tail[sizeof(old) - HBMGUARD_DEVICE_INFO_SIZE_VER0];
	uint64_t seq = 0;
	int i;

	for (i = 0; i < n; i++)
		if (evs[i].aux & HBMGUARD_PAGES_DATA_LOST)
			seq = evs[i].seqnum;
	CHECK_EQ(di.data_lost, 1);
	CHECK_EQ(di.data_lost_seqnum, seq);
	CHECK(di.added_seqnum > 0 && di.added_seqnum < seq);
	old.di = (struct hbmguard_device_info){ .size = HBMGUARD_DEVICE_INFO_SIZE_VER0,
						.device = id };
	memset(tail, 0xaa, sizeof(tail));
	memcpy(old.b + HBMGUARD_DEVICE_INFO_SIZE_VER0, tail, sizeof(tail));
	CHECK_OK(ioctl(ctl, HBMGUARD_IOC_GET_DEVICE, &old));
	CHECK_EQ(old.di.data_lost, 1);
	CHECK(!memcmp(old.b + HBMGUARD_DEVICE_INFO_SIZE_VER0, tail, sizeof(tail)));
}

/*
 * Correctable errors that fail the spare of a page when none is free take
 * its data home to its own frame, which serves it FAILED, nothing lost; a
 * spare freed, the page retired onto it takes it along.  Data that went
 * with its spare (a UE there) stays lost until its owner restores it, and
 * whatever serves the page next holds no older data: moved to the next
 * spare, and cleared.  On the last spare, failed by CEs: home again.
 */
static void test_aperture_spare_lost(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("sparelost", 3), aux;
	uint64_t usable = dev_info(id).usable_size, *p, *a, w, i;
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK), n;
	struct hbmguard_event evs[16];
	bool ok = true;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	a = p + 3 * PAGE / 8;	/* page 3's first word */
	for (i = 0; i < 16 * PAGE / 8; i++)
		p[i] = i ^ 0x5ba4e;
	CHECK_OK(set_policy(id, HBMGUARD_POLICY_CE_THRESHOLD, 5, 0, 0));
	CHECK_OK(retire(id, 3 * PAGE, PAGE));		/* spare 0 */
	*a = 0xa1;
	CHECK_OK(retire(id, 5 * PAGE, PAGE));		/* spare 1 */
	CHECK_OK(retire(id, 7 * PAGE, PAGE));		/* spare 2 */
	drain(ev_fd, evs, 16);

	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_CE, usable, 5));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, 3 * PAGE, &aux), 1);
	CHECK_EQ(aux, 0);				/* home: nothing lost */
	CHECK_EQ(dev_info(id).data_lost, 0);
	CHECK(read_word(a, &w) && w == 0xa1);
	*a = 0xa4;
	CHECK_OK(clear(id, 5 * PAGE, PAGE));
	CHECK_OK(retire(id, 3 * PAGE, PAGE));
	CHECK_EQ(translate(id, 3 * PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK(read_word(a, &w) && w == 0xa4);		/* along to the spare */
	*a = 0xa2;

	/* A UE in its spare: on the next, lost; cleared, lost still. */
	CHECK_OK(clear(id, 7 * PAGE, PAGE));
	drain(ev_fd, evs, 16);
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, translate(id, 3 * PAGE).translated, 1));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_RETIRED, 3 * PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	data_lost_counted(id, evs, n < 16 ? n : 16);
	CHECK(!read_word(a, &w));
	CHECK_OK(clear(id, 3 * PAGE, PAGE));
	CHECK_EQ(translate(id, 3 * PAGE).state, HBMGUARD_STATE_CLEAN);
	CHECK(!read_word(a, &w));
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, 3 * PAGE, PAGE, 0));
	CHECK(read_word(a, &w) && w == 0);	/* zeroed, not its older data */
	*a = 0xa3;
	CHECK(read_word(a, &w) && w == 0xa3);

	/* On the last spare, failed by CEs: FAILED, home; cleared, its own. */
	CHECK_OK(retire(id, 3 * PAGE, PAGE));
	CHECK(read_word(a, &w) && w == 0xa3);
	drain(ev_fd, evs, 16);
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_CE, translate(id, 3 * PAGE).translated, 5));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, 3 * PAGE, &aux), 1);
	CHECK_EQ(aux, 0);
	CHECK(read_word(a, &w) && w == 0xa3);
	CHECK_OK(clear(id, 3 * PAGE, PAGE));
	CHECK(read_word(a, &w) && w == 0xa3);
	CHECK_EQ(dev_info(id).data_lost, 1);	/* the UE's alone */

	for (i = 0; i < 16 * PAGE / 8; i++)
		ok &= i / (PAGE / 8) == 3 || (read_word(p + i, &w) && w == (i ^ 0x5ba4e));
	CHECK(ok);	/* the other pages came home as they were */
	signal(SIGBUS, SIG_DFL);
	close(ev_fd);
	munmap(p, 16 * PAGE);
	CHECK_OK(sim_destroy(id));
}

/*
 * A page no spare serves (FAILED) is served by its own frame, which holds
 * its data: failed by an operator's retire or by correctable errors with
 * the pool empty, it reads and writes as before, and nothing is said lost.
 * An uncorrectable error there destroys the data: said lost (counted) on
 * one event, FAILED still, or RETIRED where a spare freed meanwhile took
 * the page; a frame that failed so serves nobody while the page is FAILED,
 * restored or not, until a clear; a spare does, once the owner restores
 * the page (an operator's retire onto one says the loss again), and no
 * data goes home to such a frame.
 */
static void test_aperture_failed(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint32_t id = backed_device("failed", 1), aux;
	int ev_fd = open_dev(O_RDONLY | O_NONBLOCK), n, i;
	struct hbmguard_event evs[16];
	uint64_t *p, w;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < 4; i++)
		p[i * PAGE / 8] = 0xf0 + i;
	CHECK_OK(set_policy(id, HBMGUARD_POLICY_CE_THRESHOLD, 2, 0, 0));
	CHECK_OK(retire(id, 0, PAGE));			/* the only spare */
	drain(ev_fd, evs, 16);

	CHECK_OK(retire(id, PAGE, PAGE));
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_CE, 2 * PAGE, 2));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, PAGE, &aux), 1);
	CHECK_EQ(aux, 0);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, 2 * PAGE, &aux), 1);
	CHECK_EQ(aux, 0);
	CHECK_EQ(translate(id, PAGE).state, HBMGUARD_STATE_FAILED);
	CHECK_EQ(translate(id, 2 * PAGE).state, HBMGUARD_STATE_FAILED);
	bus_code = 0;
	CHECK(read_word(p + PAGE / 8, &w) && w == 0xf1);
	CHECK(read_word(p + 2 * PAGE / 8, &w) && w == 0xf2);
	CHECK_EQ(bus_code, 0);
	p[PAGE / 8] = 0xe1;
	CHECK(read_word(p + PAGE / 8, &w) && w == 0xe1);
	CHECK(read_word(p, &w) && w == 0xf0);		/* on its spare */
	CHECK_EQ(dev_info(id).data_lost, 0);

	/* A UE on the page failed before: lost now, said on one event, counted. */
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, PAGE, 1));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	data_lost_counted(id, evs, n < 16 ? n : 16);
	CHECK(!read_word(p + PAGE / 8, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK(read_word(p + 2 * PAGE / 8, &w) && w == 0xf2);	/* not its neighbour */
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, PAGE, 1));	/* destroyed already */
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, PAGE, &aux), 0);
	CHECK_EQ(dev_info(id).data_lost, 1);
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, PAGE, PAGE, 0));
	CHECK(!read_word(p + PAGE / 8, &w));		/* its frame serves nobody */

	/* A UE on a page no spare can take: failed, its source says lost. */
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 3 * PAGE, 1));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, 3 * PAGE, &aux), 1);
	CHECK_EQ(aux, 0);
	CHECK(!read_word(p + 3 * PAGE / 8, &w));

	/*
	 * The spare freed, a UE on the page failed by CEs: a retirement onto
	 * it, one RETIRED event saying the data lost, no FAILED one; the
	 * spare serves it once restored, zero until written.
	 */
	CHECK_OK(clear(id, 0, PAGE));
	CHECK(read_word(p, &w) && w == 0xf0);		/* home */
	drain(ev_fd, evs, 16);
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 2 * PAGE, 1));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_RETIRED, 2 * PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, 2 * PAGE, &aux), 0);
	CHECK_EQ(dev_info(id).data_lost, 2);
	CHECK_EQ(translate(id, 2 * PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK(!read_word(p + 2 * PAGE / 8, &w));
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, 2 * PAGE, PAGE, 0));
	CHECK(read_word(p + 2 * PAGE / 8, &w) && w == 0);

	/*
	 * That spare freed again: an operator's retire of the page a UE took
	 * on its frame moves nothing of the frame to it: lost until restored,
	 * and said again, counted: its owner's restore when the UE came left
	 * it on a frame that serves nobody; on the spare one takes.  The page
	 * beside it, retired with it, fails (no spare left) on its frame, its
	 * data whole: its FAILED event says no loss.
	 */
	CHECK_OK(clear(id, 2 * PAGE, PAGE));
	drain(ev_fd, evs, 16);
	CHECK_OK(retire(id, PAGE, 2 * PAGE));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_RETIRED, PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, PAGE, &aux), 1);
	CHECK_EQ(aux, 0);
	CHECK_EQ(translate(id, PAGE).state, HBMGUARD_STATE_RETIRED);
	CHECK_EQ(translate(id, 2 * PAGE).state, HBMGUARD_STATE_FAILED);
	CHECK(!read_word(p + PAGE / 8, &w));
	CHECK(read_word(p + 2 * PAGE / 8, &w) && w == 0);	/* as restored */
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, PAGE, PAGE, 0));
	CHECK(read_word(p + PAGE / 8, &w) && w == 0);
	CHECK_EQ(dev_info(id).data_lost, 3);
	CHECK_OK(clear(id, 2 * PAGE, PAGE));

	/* A failed page whose frame a UE took, cleared: the frame is its again. */
	CHECK_OK(clear(id, 3 * PAGE, PAGE));
	CHECK(read_word(p + 3 * PAGE / 8, &w) && w == 0xf3);

	/*
	 * A UE at the frame of a page its spare serves changes nothing for
	 * it; CEs failing that spare then, none left: its data does not go
	 * home to the frame the UE took, it is lost, said.
	 */
	CHECK_OK(clear(id, PAGE, PAGE));
	CHECK_OK(retire(id, 0, PAGE));			/* an operator's: its data along */
	CHECK(read_word(p, &w) && w == 0xf0);
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_UE, 0, 1));
	CHECK(read_word(p, &w) && w == 0xf0);
	drain(ev_fd, evs, 16);
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_CE, dev_info(id).usable_size, 2));
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_FAILED, 0, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	CHECK(!read_word(p, &w));
	CHECK_EQ(dev_info(id).data_lost, 4);

	signal(SIGBUS, SIG_DFL);
	close(ev_fd);
	munmap(p, 4 * PAGE);
	CHECK_OK(sim_destroy(id));
}

/*
 * A retirement that cannot get memory for the spare loses the page (SIGBUS)
 * rather than serve zeroes, and so does a CLEAR that cannot get memory for
 * the page its spare's data goes back to.  The memory is charged to the
 * process that retires or clears, here one in a memory cgroup allowed
 * nothing.
 */
#define NOMEM_CGROUP "/sys/fs/cgroup/hbmtest"

/* A memory cgroup allowed nothing: its cgroup.procs open for writing. */
static int cgroup_without_memory(void)
{
	char path[64];
	int fd;

	mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL);	/* EBUSY: mounted */
	fd = open("/sys/fs/cgroup/cgroup.subtree_control", O_WRONLY);
	CHECK(fd >= 0 && write(fd, "+memory", 7) == 7);
	close(fd);
	CHECK(!mkdir(NOMEM_CGROUP, 0755) || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/memory.max", NOMEM_CGROUP);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && write(fd, "0", 1) == 1);
	close(fd);
	snprintf(path, sizeof(path), "%s/cgroup.procs", NOMEM_CGROUP);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	return fd;
}

static void test_aperture_nomem(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	const char *cg = NOMEM_CGROUP;
	uint32_t id = backed_device("nomem", 8);
	struct hbmguard_inject in = { .size = sizeof(in), .device = id,
				      .kind = HBMGUARD_ERROR_CE, .offset = 6 * PAGE,
				      .count = 2 };
	struct hbmguard_extent_op x = { .size = sizeof(x), .device = id,
					.offset = 3 * PAGE, .length = PAGE };
	int ev_fd, procs, status, n;
	struct hbmguard_event evs[16];
	uint64_t *p, w;
	uint32_t aux;
	pid_t pid;

	sigaction(SIGBUS, &sa, NULL);
	procs = cgroup_without_memory();

	p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED || procs < 0)
		return;
	ev_fd = open_dev(O_RDONLY | O_NONBLOCK);
	p[6 * PAGE / 8] = 0x6666;	/* the page has memory, its spare none yet */
	CHECK_OK(retire(id, 3 * PAGE, PAGE));
	p[3 * PAGE / 8] = 0x3333;	/* its spare has memory, the page none */
	CHECK_OK(set_policy(id, HBMGUARD_POLICY_CE_THRESHOLD, 2, 0, 0));
	drain(ev_fd, evs, 16);
	pid = fork();
	if (pid == 0)	/* into the cgroup, then retire and clear: nothing else touched */
		_exit(write(procs, "0", 1) != 1 ? 2 : ioctl(ctl, HBMGUARD_IOC_INJECT, &in) ? 3 :
		      ioctl(ctl, HBMGUARD_IOC_CLEAR, &x) ? 4 : 0);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(procs);
	/* Each loss said on its change's event, counted, though a CE or a clear. */
	n = drain(ev_fd, evs, 16);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_RETIRED, 6 * PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	CHECK_EQ(page_events(evs, n, HBMGUARD_EVENT_CLEARED, 3 * PAGE, &aux), 1);
	CHECK_EQ(aux, HBMGUARD_PAGES_DATA_LOST);
	CHECK_EQ(dev_info(id).data_lost, 2);
	close(ev_fd);
	CHECK_EQ(translate(id, 6 * PAGE).state, HBMGUARD_STATE_RETIRED);
	bus_code = 0;
	CHECK(!read_word(p + 6 * PAGE / 8, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, 6 * PAGE, PAGE, 0));
	CHECK(read_word(p + 6 * PAGE / 8, &w) && w == 0);
	CHECK_EQ(translate(id, 3 * PAGE).state, HBMGUARD_STATE_CLEAN);
	bus_code = 0;
	CHECK(!read_word(p + 3 * PAGE / 8, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, 3 * PAGE, PAGE, 0));
	CHECK(read_word(p + 3 * PAGE / 8, &w) && w == 0);
	munmap(p, 16 * PAGE);
	CHECK_OK(rmdir(cg));
	CHECK_OK(sim_destroy(id));
	signal(SIGBUS, SIG_DFL);
}

/*
 * A first touch from a process whose memory cgroup cannot pay for the page
 * is SIGBUS at the access, not VM_FAULT_OOM: with no OOM kill behind it,
 * the fault would be retried for ever ("Huh VM_FAULT_OOM leaked out").  The
 * child moves into the cgroup having written all the memory it uses, with
 * the page tables of the mapping in place (page 0 touched), and exits once
 * its SIGBUS handler (on a stack of its own) has jumped back: dying of the
 * signal instead would dump core, or try to, and what that charges to the
 * cgroup (a cred, a stack page for nothing) can bring the memcg OOM
 * killer's SIGKILL first (seen on the debug kernel).  The alarm only
 * bounds the test when it would hang.
 */
static void test_aperture_nomem_fault(void)
{
	uint32_t id = backed_device("nomemf", 8);
	static uint8_t altstack[64 << 10];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	struct rlimit nocore = { 0, 0 };
	volatile uint64_t *p;
	uint64_t w;
	int procs, status;
	pid_t pid;

	procs = cgroup_without_memory();
	p = mmap(NULL, 16 * PAGE, PROT_READ, MAP_SHARED, ctl, HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED || procs < 0)
		return;
	w = p[0];
	pid = fork();
	if (pid == 0) {
		uint64_t v;

		memset(altstack, 0, sizeof(altstack));
		if (sigaltstack(&ss, NULL) || sigaction(SIGBUS, &sa, NULL))
			_exit(3);
		setrlimit(RLIMIT_CORE, &nocore);
		alarm(60);
		if (!read_word(p, &v))	/* read_word's stack and jump buffer, written */
			_exit(4);
		bus_addr = NULL;	/* and what the handler writes */
		bus_code = 0;
		if (write(procs, "0", 1) != 1)
			_exit(2);
		_exit(read_word(p + PAGE / 8, &v) ? 0 : 7);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	close(procs);
	CHECK(!p[PAGE / 8] && !w);	/* out of the cgroup, the page has memory */
	munmap((void *)p, 16 * PAGE);
	CHECK_OK(rmdir(NOMEM_CGROUP));
	CHECK_OK(sim_destroy(id));
}

/*
 * A RESTORE over a range with an aperture (ras.sh: hbmnl restore-records
 * between the two halves): what the daemon puts back after a restart lost
 * no data now, whatever it was retired for.  @fill writes each of the first
 * RESTORE_PAGES pages; otherwise each still reads what was written, a
 * retired one from its spare (hbm_aperture_changed() copied it there), and
 * none raises SIGBUS or counts a loss (a RESTORE marks no frame dead).
 */
#define RESTORE_PAGES	16

static void test_aperture_restore(uint32_t id, bool fill)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint64_t usable = dev_info(id).usable_size, *p, w, i;
	/* what ras.sh restores: 3 (a UE), 5 and 6 (RESTORED) retired, 9 pending */
	static const uint64_t retired[] = { 3, 5, 6 };
	struct hbmguard_translate tr;
	long bad = 0;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, RESTORE_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < RESTORE_PAGES * PAGE / 8; i++) {
		if (fill)
			p[i] = i ^ 0xa5a5a5a5;
		else if (!read_word(p + i, &w) || w != (i ^ 0xa5a5a5a5))
			bad++;
	}
	CHECK_EQ(bad, 0);
	for (i = 0; !fill && i < sizeof(retired) / sizeof(retired[0]); i++) {
		tr = translate(id, retired[i] * PAGE);
		CHECK_EQ(tr.state, HBMGUARD_STATE_RETIRED);
		CHECK(tr.translated >= usable);		/* on a spare */
	}
	if (!fill) {
		CHECK_EQ(dev_info(id).data_lost, 0);
		tr = translate(id, 9 * PAGE);
		CHECK_EQ(tr.state, HBMGUARD_STATE_PENDING);
		CHECK_EQ(tr.translated, 9 * PAGE);
	}
	munmap(p, RESTORE_PAGES * PAGE);
	signal(SIGBUS, SIG_DFL);
}

/*
 * A claimed range's frame poisoned (hwpoison_inject) under the aperture:
 * retired as poison, then cleared by an operator, it is still poison: the
 * fault path does not map it, and a retirement for correctable errors does
 * not copy it (the copy would read poisoned memory): the page is lost.
 */
static void test_aperture_range_poison(uint32_t id, uint64_t phys)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
	uint64_t *p, w, pg = 5;
	char pfn[32];
	int fd, tries;

	sigaction(SIGBUS, &sa, NULL);
	p = mmap(NULL, 32 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ctl,
		 HBMGUARD_MMAP_APERTURE(id));
	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	p[pg * PAGE / 8] = 0x5a5a;
	fd = open("/sys/kernel/debug/hwpoison/corrupt-pfn", O_WRONLY);
	CHECK(fd >= 0);
	snprintf(pfn, sizeof(pfn), "%llu\n", (unsigned long long)(phys / PAGE + pg));
	CHECK(write(fd, pfn, strlen(pfn)) == (ssize_t)strlen(pfn) || errno == EBUSY);
	close(fd);
	for (tries = 0; tries < 100 && translate(id, pg * PAGE).state != HBMGUARD_STATE_RETIRED;
	     tries++)
		usleep(50000);
	CHECK_EQ(translate(id, pg * PAGE).state, HBMGUARD_STATE_RETIRED);

	/* Cleared: its own frame again, which is poison. */
	CHECK_OK(clear(id, pg * PAGE, PAGE));
	CHECK_EQ(translate(id, pg * PAGE).state, HBMGUARD_STATE_CLEAN);
	bus_code = 0;
	CHECK(!read_word(p + pg * PAGE / 8, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, pg * PAGE, PAGE, 0));
	bus_code = 0;
	CHECK(!read_word(p + pg * PAGE / 8, &w));	/* restored or not, poison */
	CHECK_EQ(bus_code, BUS_MCEERR_AR);

	/* Correctable errors retire it: nothing to copy, the page is lost. */
	CHECK_OK(set_policy(id, HBMGUARD_POLICY_CE_THRESHOLD, 2, 0, 0));
	CHECK_OK(inject(ctl, id, HBMGUARD_ERROR_CE, pg * PAGE, 2));
	CHECK_EQ(translate(id, pg * PAGE).state, HBMGUARD_STATE_RETIRED);
	bus_code = 0;
	CHECK(!read_word(p + pg * PAGE / 8, &w));
	CHECK_EQ(bus_code, BUS_MCEERR_AR);
	CHECK(bus_addr == p + pg * PAGE / 8);
	CHECK_OK(extent_op(ctl, HBMGUARD_IOC_RESTORED, id, pg * PAGE, PAGE, 0));
	CHECK(read_word(p + pg * PAGE / 8, &w) && w == 0);	/* the spare */
	p[pg * PAGE / 8] = 0xabc;
	CHECK(read_word(p + pg * PAGE / 8, &w) && w == 0xabc);
	munmap(p, 32 * PAGE);
	signal(SIGBUS, SIG_DFL);
}

/* memory.current of this process's cgroup (v2), in KiB; -1 without one. */
static long long cgroup_kib(void)
{
	char line[256], path[512] = "";
	long long bytes = -1;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.current",
				 line + 3);
		}
	fclose(f);
	f = *path ? fopen(path, "r") : NULL;
	if (f && fscanf(f, "%lld", &bytes) != 1)
		bytes = -1;
	if (f)
		fclose(f);
	return bytes < 0 ? -1 : bytes / 1024;
}

/* Open the node @n times: how many opened, and what they cost this cgroup. */
static int open_many(long n)
{
	long long before = cgroup_kib(), after;
	int err = 0;
	long i;

	for (i = 0; i < n; i++)
		if (open(DEV_NODE, O_RDONLY) < 0) {
			err = errno;
			break;
		}
	after = cgroup_kib();
	printf("opened %ld%s%s, charged %lld KiB\n", i, err ? ", then " : "",
	       err ? strerror(err) : "", before < 0 || after < 0 ? -1 : after - before);
	return 0;
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "info", test_info },
	{ "list_devices", test_list_devices },
	{ "retire_translate_clear", test_retire_translate_clear },
	{ "inject_policy", test_inject_policy },
	{ "bad_input", test_bad_input },
	{ "sim_devices", test_sim_devices },
	{ "events", test_events },
	{ "blocking_read", test_blocking_read },
	{ "overflow", test_overflow },
	{ "nonblock_beside_blocked", test_nonblock_beside_blocked },
	{ "overflow_copy_fails", test_overflow_copy_fails },
	{ "nonblock_beside_copying", test_nonblock_beside_copying },
	{ "rmmod_with_open_file", test_rmmod_with_open_file },
	{ "destroy_in_use", test_destroy_in_use },
	{ "concurrent", test_concurrent },
	{ "large_table", test_large_table },
	{ "unprivileged", test_unprivileged },
	{ "privileges", test_privileges },
	{ "privileges_of_opener", test_privileges_of_opener },
	{ "open_limit", test_open_limit },
	{ "open_limit_per_user", test_open_limit_per_user },
	{ "open_limit_namespaces", test_open_limit_namespaces },
	{ "spare_bounds", test_spare_bounds },
	{ "mapped_table", test_mapped_table },
	{ "map_bad_input", test_map_bad_input },
	{ "map_concurrent", test_map_concurrent },
	{ "map_generations", test_map_generations },
	{ "map_off", test_map_off },
	{ "map_overflow", test_map_overflow },
	{ "map_built_at_first_mmap", test_map_built_at_first_mmap },
	{ "aperture", test_aperture },
	{ "aperture_guard_signals", test_aperture_guard_signals },
	{ "aperture_guard_close_race", test_aperture_guard_close_race },
	{ "aperture_guard_restore_race", test_aperture_guard_restore_race },
	{ "aperture_guard", test_aperture_guard },
	{ "aperture_ce", test_aperture_ce },
	{ "aperture_vm", test_aperture_vm },
	{ "mmap_variants", test_mmap_variants },
	{ "aperture_nodes", test_aperture_nodes },
	{ "aperture_users", test_aperture_users },
	{ "aperture_clear", test_aperture_clear },
	{ "aperture_spare_lost", test_aperture_spare_lost },
	{ "aperture_failed", test_aperture_failed },
	{ "aperture_nomem", test_aperture_nomem },
	{ "aperture_nomem_fault", test_aperture_nomem_fault },
};

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	size_t i;
	int a;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_atfork(NULL, NULL, child_failures_reset)) {
		fprintf(stderr, "hbmtest: pthread_atfork failed\n");
		return 1;
	}
	ctl = open_dev(O_RDWR);
	if (argc == 3 && !strcmp(argv[1], "open-many"))	/* lifetime.sh's */
		return open_many(strtol(argv[2], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "aperture-range")) {	/* ras.sh's */
		hbm_test_name = argv[1];
		test_aperture_range(strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
		printf("%s %s\n", hbm_failures ? "not ok" : "ok", argv[1]);
		return hbm_failures ? 1 : 0;
	}
	if (argc == 3 && !strncmp(argv[1], "aperture-restore-", 17)) {	/* ras.sh's */
		hbm_test_name = argv[1];
		test_aperture_restore(strtoul(argv[2], NULL, 0),
				      !strcmp(argv[1], "aperture-restore-fill"));
		printf("%s %s\n", hbm_failures ? "not ok" : "ok", argv[1]);
		return hbm_failures ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[1], "aperture-range-poison")) {	/* ras.sh's */
		hbm_test_name = argv[1];
		test_aperture_range_poison(strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0));
		printf("%s %s\n", hbm_failures ? "not ok" : "ok", argv[1]);
		return hbm_failures ? 1 : 0;
	}
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int before = hbm_failures;

		if (argc > 1) {
			for (a = 1; a < argc; a++)
				if (!strcmp(argv[a], tests[i].name))
					break;
			if (a == argc)
				continue;
		}
		hbm_test_name = tests[i].name;
		tests[i].fn();
		if (hbm_failures == before) {
			printf("ok %s\n", tests[i].name);
			passed++;
		} else {
			printf("not ok %s\n", tests[i].name);
			failed++;
		}
	}
	close(ctl);
	printf("hbmtest: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
