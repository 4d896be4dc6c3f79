// SPDX-License-Identifier: GPL-2.0
/*
 * In-guest benchmark of /dev/hbmguard: retire at 10^3..10^6 retired pages
 * with the mapped table on and off (map.c's parameter), translate through
 * the ioctl and through the map (clean and bad offsets apart, and one offset
 * again and again) beside a dependent random load from a buffer as large as
 * one copy of the map, a GET_INFO ioctl as the floor of any ioctl, and the
 * kernel memory the table and the map take (the module's own accounting,
 * the map's header, and the kernel's MemTotal - MemFree).  Under qemu TCG
 * the absolute times mean little: compare the rows of one run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include <linux/hbmguard.h>

#include "hbmguard.h"
#include "translate_bench.h"

/*
 * Memory the kernel took, from /proc/meminfo: MemTotal - MemFree, in bytes.
 * Slab and VmallocUsed alone would miss the map's pages, which come from
 * the page allocator.
 */
static long long kernel_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long long kb, used = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
			used += kb;
		else if (sscanf(line, "MemFree: %lld kB", &kb) == 1)
			used -= kb;
	if (f)
		fclose(f);
	return used * 1024;
}

static void die(const char *what)
{
	fprintf(stderr, "hbmbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The aperture: first touch, and the refault after a page is retired. */
static double ap_first, ap_retire, ap_refault;

static void aperture_bench(int fd)
{
	const uint32_t n = 2000;
	struct hbmguard_sim_create sc = {
		.size = sizeof(sc), .flags = HBMGUARD_SIM_BACKED, .page_size = 4096,
		.hbm_size = 64 << 20, .spare_pages = n,
	};
	struct hbmguard_device_ref ref = { .size = sizeof(ref) };
	volatile uint8_t *p;
	double t0, retire = 0, refault = 0;
	uint32_t i;

	strcpy(sc.name, "apbench");
	if (ioctl(fd, HBMGUARD_IOC_SIM_CREATE, &sc))
		die("SIM_CREATE backed");
	p = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 HBMGUARD_MMAP_APERTURE(sc.device));
	if (p == MAP_FAILED)
		die("mmap aperture");
	t0 = now_ns();
	for (i = 0; i < n; i++)
		p[(size_t)i * 4096] = i;
	ap_first = (now_ns() - t0) / n;
	for (i = 0; i < n; i++) {
		struct hbmguard_extent_op x = {
			.size = sizeof(x), .device = sc.device,
			.source = HBMGUARD_SOURCE_ADMIN,
			.offset = (uint64_t)i * 4096, .length = 4096,
		};

		t0 = now_ns();
		if (ioctl(fd, HBMGUARD_IOC_RETIRE, &x))
			die("RETIRE mapped");
		retire += now_ns() - t0;
		t0 = now_ns();
		if (p[(size_t)i * 4096] != (uint8_t)i)
			die("data lost across retirement");
		refault += now_ns() - t0;
	}
	ap_retire = retire / n;
	ap_refault = refault / n;
	munmap((void *)p, (size_t)n * 4096);
	ref.device = sc.device;
	if (ioctl(fd, HBMGUARD_IOC_SIM_DESTROY, &ref))
		die("SIM_DESTROY");
}

/* A row for make bench's table (the lead's collector reads these). */
static void bench_row(const char *figure, double value, const char *unit,
		      const char *anchor, double anchor_value, const char *goal)
{
	printf("@bench\t%s\t%.1f\t%s\t%s\t", figure, value, unit, anchor);
	if (anchor_value < 0)
		printf("-");
	else
		printf("%.1f", anchor_value);
	printf("\t%s\n", goal);
}

/* The module parameter map= (map.c): read when a device is created. */
static void set_map(int on)
{
	FILE *f = fopen("/sys/module/hbmguard/parameters/map", "w");

	if (!f || fputs(on ? "1" : "0", f) < 0 || fclose(f))
		die("parameters/map");
}

struct run {
	double retire_ns, meminfo, acct, map_bytes;
	double tr_ns, info_ns, clean_ns, bad_ns, hot_ns, load_ns, floor_ns;
};

static uint32_t create(int fd, uint32_t n, int map)
{
	uint64_t pages = (uint64_t)n * 64;
	struct hbmguard_sim_create sc = {
		.size = sizeof(sc), .page_size = 4096,
		.hbm_size = (pages + n) * 4096, .spare_pages = n,
	};

	set_map(map);
	snprintf(sc.name, sizeof(sc.name), "bench%u%c", n, map ? 'm' : 'n');
	if (ioctl(fd, HBMGUARD_IOC_SIM_CREATE, &sc))
		die("SIM_CREATE");
	set_map(1);
	return sc.device;
}

static void retire(int fd, uint32_t dev, uint64_t off)
{
	struct hbmguard_extent_op x = {
		.size = sizeof(x), .device = dev,
		.source = HBMGUARD_SOURCE_ADMIN, .offset = off, .length = 4096,
	};

	if (ioctl(fd, HBMGUARD_IOC_RETIRE, &x))
		die("RETIRE");
}

/*
 * Two devices of @n isolated pages retired in scattered order, one with the
 * map and one without, a thousand retirements on each in turn, so that
 * both see the same load on the machine; the memory each change takes is
 * charged to its device.  Then, on the mapped one, the lookups, and their
 * anchor: a dependent random load from a buffer as large as one copy of the
 * mapped table (what a lookup walks), and the same lookup again and again.
 */
static void run_pair(int fd, uint32_t n, struct run *on, struct run *off)
{
	const uint32_t lookups = 200000;
	uint64_t state = 42, pages = (uint64_t)n * 64, *bad;
	struct hbmguard_info info = { .size = sizeof(info) };
	struct hbmguard_device_ref ref = { .size = sizeof(ref) };
	struct run *r[2] = { off, on };
	const struct hbmguard_map_header *held;
	uint32_t dev[2], i, j, k;
	long long mem;
	double t0;

	bad = malloc(n * sizeof(*bad));
	if (!bad)
		die("malloc");
	for (i = 0; i < n; i++) {
		/* Isolated pages, one extent each, in scattered order. */
		uint64_t slot = (uint64_t)i * 2654435761u % n;

		bad[i] = (slot * 64 + rnd(&state) % 32) * 4096;
	}
	memset(on, 0, sizeof(*on));
	memset(off, 0, sizeof(*off));
	for (k = 0; k < 2; k++) {
		mem = kernel_bytes();
		dev[k] = create(fd, n, k);
		r[k]->meminfo += kernel_bytes() - mem;
	}
	/*
	 * Mapped first, as by an allocator: a table never mapped is only
	 * marked stale by a change, and built at its first mmap() (map.c),
	 * which would time nothing of the map here.
	 */
	held = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(dev[1]));
	if (held == MAP_FAILED)
		die("mmap");
	for (i = 0; i < n; i += 1000) {
		for (k = 0; k < 2; k++) {
			mem = kernel_bytes();
			t0 = now_ns();
			for (j = i; j < n && j < i + 1000; j++)
				retire(fd, dev[k], bad[j]);
			r[k]->retire_ns += now_ns() - t0;
			r[k]->meminfo += kernel_bytes() - mem;
		}
	}
	for (k = 0; k < 2; k++) {
		struct hbmguard_device_info di = { .size = sizeof(di), .device = dev[k] };

		if (ioctl(fd, HBMGUARD_IOC_GET_DEVICE, &di))
			die("GET_DEVICE");
		if (di.nr_retired != n) {
			fprintf(stderr, "hbmbench: %u retired, expected %u\n", di.nr_retired, n);
			exit(1);
		}
		r[k]->retire_ns /= n;
		r[k]->meminfo /= n;
		r[k]->acct = (double)di.table_bytes / n;
		if (k) {
			const struct hbmguard_map_header *h;

			h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, HBMGUARD_MMAP_TABLE(dev[k]));
			if (h == MAP_FAILED)
				die("mmap");
			/* Published within the change: no wait. */
			if (h->generation != di.generation || h->nr[h->active] != n) {
				fprintf(stderr, "hbmbench: the map is behind the table\n");
				exit(1);
			}
			r[k]->map_bytes = (2.0 * h->nodes * h->node_size + 4096) / n;
			munmap((void *)h, 4096);
		}
	}
	munmap((void *)held, 4096);

	{
		struct hbmguard_table *t;
		uint64_t one, *offsets = malloc(lookups * sizeof(*offsets));
		size_t copy = (size_t)(on->map_bytes * n - 4096) / 2;

		if (!offsets)
			die("malloc");

		t0 = now_ns();
		for (i = 0; i < lookups; i++) {
			struct hbmguard_translate tr = {
				.size = sizeof(tr), .device = dev[1],
				.offset = (uint64_t)(rnd(&state) % pages) * 4096,
			};

			if (ioctl(fd, HBMGUARD_IOC_TRANSLATE, &tr))
				die("TRANSLATE");
		}
		on->tr_ns = (now_ns() - t0) / lookups;
		t0 = now_ns();
		for (i = 0; i < lookups; i++)
			if (ioctl(fd, HBMGUARD_IOC_GET_INFO, &info))
				die("GET_INFO");
		on->info_ns = (now_ns() - t0) / lookups;

		if (hbmguard_table_open(fd, dev[1], &t))
			die("map");
		/*
		 * The offsets are drawn before the clock starts and read in
		 * order: a bad one drawn inside the loop would cost a random
		 * load from bad[] (8 MiB at 10^6) that neither a lookup nor
		 * the anchor makes.
		 */
		for (i = 0; i < lookups; i++)	/* clean: a page of a slot past the retired ones */
			offsets[i] = ((uint64_t)(rnd(&state) % n) * 64 + 32 +
				      rnd(&state) % 32) * 4096;
		on->clean_ns = translate_ns(t, offsets, lookups, HBMGUARD_STATE_CLEAN);
		for (i = 0; i < lookups; i++)
			offsets[i] = bad[rnd(&state) % n];
		on->bad_ns = translate_ns(t, offsets, lookups, HBMGUARD_STATE_RETIRED);
		/*
		 * One clean offset again and again: the descent's instructions
		 * at this height, every node it reads in the cache.
		 */
		one = ((uint64_t)(rnd(&state) % n) * 64 + 32) * 4096;
		for (i = 0; i < lookups; i++)
			offsets[i] = one;
		on->hot_ns = translate_ns(t, offsets, lookups, HBMGUARD_STATE_CLEAN);
		on->load_ns = random_load_ns(copy);
		on->floor_ns = translate_floor_ns(t, one, copy, lookups);
		if (on->clean_ns < 0 || on->bad_ns < 0 || on->hot_ns < 0 || on->floor_ns < 0)
			die("hbmguard_translate: not the state expected");
		hbmguard_table_close(t);
		free(offsets);
	}
	free(bad);
	for (k = 0; k < 2; k++) {
		ref.device = dev[k];
		if (ioctl(fd, HBMGUARD_IOC_SIM_DESTROY, &ref))
			die("SIM_DESTROY");
	}
}

int main(void)
{
	static const uint32_t sizes[] = { 1000, 10000, 100000, 1000000 };
	static const char *const names[] = { "10^3", "10^4", "10^5", "10^6" };
	struct run on[4], off[4];
	int fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDWR);
	char fig[128], anchor[128];
	unsigned int s;

	if (fd < 0)
		die("open");
	for (s = 0; s < 4; s++)
		run_pair(fd, sizes[s], &on[s], &off[s]);
	aperture_bench(fd);
	printf("%-40s %10s %10s %10s %10s\n", "kernel (qemu TCG guest)", "10^3",
	       "10^4", "10^5", "10^6");
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "RETIRE ioctl, map on (ns/op)",
	       on[0].retire_ns, on[1].retire_ns, on[2].retire_ns, on[3].retire_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "RETIRE ioctl, map off (ns/op)",
	       off[0].retire_ns, off[1].retire_ns, off[2].retire_ns, off[3].retire_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "TRANSLATE ioctl (ns/op)",
	       on[0].tr_ns, on[1].tr_ns, on[2].tr_ns, on[3].tr_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "hbmguard_translate(), clean (ns/op)",
	       on[0].clean_ns, on[1].clean_ns, on[2].clean_ns, on[3].clean_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "hbmguard_translate(), bad (ns/op)",
	       on[0].bad_ns, on[1].bad_ns, on[2].bad_ns, on[3].bad_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "hbmguard_translate(), one offset (ns/op)",
	       on[0].hot_ns, on[1].hot_ns, on[2].hot_ns, on[3].hot_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "anchor: 1 random load, one copy (ns)",
	       on[0].load_ns, on[1].load_ns, on[2].load_ns, on[3].load_ns);
	printf("%-40s %10.0f %10.0f %10.0f %10.0f\n", "floor: GET_INFO ioctl (ns/op)",
	       on[0].info_ns, on[1].info_ns, on[2].info_ns, on[3].info_ns);
	printf("%-40s %10.1f %10.1f %10.1f %10.1f\n", "table bytes/page (module accounting)",
	       on[0].acct, on[1].acct, on[2].acct, on[3].acct);
	printf("%-40s %10.1f %10.1f %10.1f %10.1f\n", "mapped table bytes/page (both copies)",
	       on[0].map_bytes, on[1].map_bytes, on[2].map_bytes, on[3].map_bytes);
	printf("%-40s %10.1f %10.1f %10.1f %10.1f\n", "kernel memory growth/page, map on",
	       on[0].meminfo, on[1].meminfo, on[2].meminfo, on[3].meminfo);
	printf("%-40s %10.1f %10.1f %10.1f %10.1f\n", "kernel memory growth/page, map off",
	       off[0].meminfo, off[1].meminfo, off[2].meminfo, off[3].meminfo);
	printf("\n%-38s %10s\n", "aperture (qemu TCG guest)", "ns/page");
	printf("%-38s %10.0f\n", "first touch (fault, page allocated)", ap_first);
	printf("%-38s %10.0f\n", "RETIRE of a mapped page (zap, copy)", ap_retire);
	printf("%-38s %10.0f\n", "next touch (refault to the spare)", ap_refault);

	for (s = 0; s < 4; s++) {
		snprintf(fig, sizeof(fig), "RETIRE at %s pages, map on (TCG guest)", names[s]);
		snprintf(anchor, sizeof(anchor), "RETIRE at %s pages, map off", names[s]);
		bench_row(fig, on[s].retire_ns, "ns/op", anchor, off[s].retire_ns,
			  s == 3 ? "<= 1.5x" : "-");
	}
	bench_row("translate through the map, clean offsets, 10^6 pages (TCG guest)",
		  on[3].clean_ns, "ns/op", "one random load from a table-sized buffer",
		  on[3].load_ns, "<= 1.5x");
	bench_row("translate through the map, bad offsets, 10^6 pages (TCG guest)",
		  on[3].bad_ns, "ns/op", "one random load from a table-sized buffer",
		  on[3].load_ns, "<= 1.5x");
	/*
	 * The guest's floor: a lookup at 10^6 cannot cost less than its
	 * descent's instructions with every node it reads in the cache (one
	 * offset again and again) and the one miss of the anchor after it,
	 * timed as one chain (translate_floor_ns()).
	 * Part of what the rows cost beyond it is
	 * a miss for each line a search probes after the first: qemu
	 * translates the prefetches of a node's lines to nothing
	 * (tests/bench/README.md).
	 */
	bench_row("floor in this guest: a lookup at 10^6 pages with its nodes in the cache (one offset), then one random load",
		  on[3].floor_ns, "ns/op",
		  "one random load from a table-sized buffer",
		  on[3].load_ns, "-");
	/*
	 * The anchor: amdgpu keeps a retired page as a 24-byte record in its
	 * EEPROM (RAS_TABLE_RECORD_SIZE, drivers/gpu/drm/amd/amdgpu/
	 * amdgpu_ras_eeprom.c, Linux 6.12.117); in memory, struct
	 * eeprom_table_record (amdgpu_ras_eeprom.h) is 31 bytes, packed.
	 */
	bench_row("kernel bytes per retired page, 10^6 pages: table + mapped table",
		  on[3].acct + on[3].map_bytes, "B", "amdgpu's 24-byte record", 24, "<= 32 B");
	bench_row("kernel bytes per retired page, 10^6 pages: table alone (map off)",
		  off[3].acct, "B", "amdgpu's 24-byte record", 24, "<= 32 B");
	/*
	 * What the map on can cost at least: the uapi's leaf (31 entries of 16
	 * bytes in a 512-byte node, the readers' contract) full, in the two
	 * copies the publication needs, beside the table that the kernel
	 * changes; already above 32 bytes (tests/bench/README.md).
	 */
	bench_row("floor with the map on: table alone + two copies of full 512-byte leaves",
		  off[3].acct + 2.0 * HBMGUARD_MAP_NODE_SIZE / HBMGUARD_MAP_LEAF_MAX, "B",
		  "amdgpu's 24-byte record", 24, "-");
	bench_row("kernel memory growth (MemTotal - MemFree) per retired page, 10^6 pages, map on",
		  on[3].meminfo, "B", "amdgpu's 24-byte record", 24, "<= 32 B");
	bench_row("kernel memory growth (MemTotal - MemFree) per retired page, 10^6 pages, map off",
		  off[3].meminfo, "B", "amdgpu's 24-byte record", 24, "<= 32 B");
	close(fd);
	return 0;
}
