// SPDX-License-Identifier: GPL-2.0
/*
 * In-guest benchmark of /dev/hbmguard: retire and translate through the
 * ioctls at 10^3..10^6 retired pages, a GET_INFO ioctl as the floor of any
 * ioctl, and the kernel memory the table takes (the module's own accounting
 * and the change in the kernel's Slab + VmallocUsed).  Under qemu TCG the
 * absolute times mean little: compare the rows of one run.
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

/* Slab + VmallocUsed from /proc/meminfo, in bytes. */
static long long kernel_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long long kb, sum = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Slab: %lld kB", &kb) == 1 ||
		    sscanf(line, "VmallocUsed: %lld kB", &kb) == 1)
			sum += kb;
	if (f)
		fclose(f);
	return sum * 1024;
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

int main(void)
{
	static const uint32_t sizes[] = { 1000, 10000, 100000, 1000000 };
	double retire_ns[4], tr_ns[4], info_ns[4], acct[4], meminfo[4];
	double map_ns[4], scan_ns[4];
	int fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDWR);
	const uint32_t lookups = 200000;
	unsigned int s;

	if (fd < 0)
		die("open");
	for (s = 0; s < 4; s++) {
		uint32_t n = sizes[s], i;
		uint64_t state = 42, pages = (uint64_t)n * 64;
		struct hbmguard_sim_create sc = {
			.size = sizeof(sc), .page_size = 4096,
			.hbm_size = (pages + n) * 4096, .spare_pages = n,
		};
		struct hbmguard_device_info di = { .size = sizeof(di) };
		struct hbmguard_info info = { .size = sizeof(info) };
		struct hbmguard_device_ref ref = { .size = sizeof(ref) };
		long long before;
		double t0;

		snprintf(sc.name, sizeof(sc.name), "bench%u", s);
		before = kernel_bytes();
		if (ioctl(fd, HBMGUARD_IOC_SIM_CREATE, &sc))
			die("SIM_CREATE");
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			/* Isolated pages, one extent each, in scattered order. */
			uint64_t slot = (uint64_t)i * 2654435761u % n;
			struct hbmguard_extent_op x = {
				.size = sizeof(x), .device = sc.device,
				.source = HBMGUARD_SOURCE_ADMIN,
				.offset = (slot * 64 + rnd(&state) % 32) * 4096,
				.length = 4096,
			};

			if (ioctl(fd, HBMGUARD_IOC_RETIRE, &x))
				die("RETIRE");
		}
		retire_ns[s] = (now_ns() - t0) / n;
		meminfo[s] = (double)(kernel_bytes() - before) / n;
		di.device = sc.device;
		if (ioctl(fd, HBMGUARD_IOC_GET_DEVICE, &di))
			die("GET_DEVICE");
		if (di.nr_retired != n) {
			fprintf(stderr, "hbmbench: %u retired, expected %u\n",
				di.nr_retired, n);
			return 1;
		}
		acct[s] = (double)di.table_bytes / n;

		t0 = now_ns();
		for (i = 0; i < lookups; i++) {
			struct hbmguard_translate tr = {
				.size = sizeof(tr), .device = sc.device,
				.offset = (uint64_t)(rnd(&state) % pages) * 4096,
			};

			if (ioctl(fd, HBMGUARD_IOC_TRANSLATE, &tr))
				die("TRANSLATE");
		}
		tr_ns[s] = (now_ns() - t0) / lookups;
		t0 = now_ns();
		for (i = 0; i < lookups; i++)
			if (ioctl(fd, HBMGUARD_IOC_GET_INFO, &info))
				die("GET_INFO");
		info_ns[s] = (now_ns() - t0) / lookups;

		/* The same lookups through the mapped table, and a linear scan. */
		{
			const struct hbmguard_map_header *h;
			const struct hbmguard_map_entry *e;
			struct hbmguard_table *t;
			volatile uint64_t sink = 0;
			uint32_t st, scans = 2000, j;
			uint64_t served;

			if (hbmguard_table_open(fd, sc.device, &t))
				die("map");
			while (hbmguard_table_generation(t) != di.generation)
				usleep(1000);	/* the deferred publication */
			t0 = now_ns();
			for (i = 0; i < lookups; i++) {
				if (hbmguard_translate(t, (uint64_t)(rnd(&state) % pages) * 4096,
						       &served, &st))
					die("hbmguard_translate");
				sink += served;
			}
			map_ns[s] = (now_ns() - t0) / lookups;
			hbmguard_table_close(t);

			/* A linear scan of the same entries: what the table saves. */
			h = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
				 HBMGUARD_MMAP_TABLE(sc.device));
			if (h == MAP_FAILED)
				die("mmap");
			j = h->map_size;
			munmap((void *)h, 4096);
			h = mmap(NULL, j, PROT_READ, MAP_SHARED, fd,
				 HBMGUARD_MMAP_TABLE(sc.device));
			if (h == MAP_FAILED)
				die("mmap");
			e = (const void *)((const char *)h + h->buffer_offset[h->active]);
			t0 = now_ns();
			for (i = 0; i < scans; i++) {
				uint32_t page = rnd(&state) % pages, k;

				for (k = 0; k < h->nr[h->active]; k++)
					if (page - e[k].first < e[k].nr)
						break;
				sink += k;
			}
			scan_ns[s] = (now_ns() - t0) / scans;
			munmap((void *)h, h->map_size);
			(void)sink;
		}

		ref.device = sc.device;
		if (ioctl(fd, HBMGUARD_IOC_SIM_DESTROY, &ref))
			die("SIM_DESTROY");
	}
	aperture_bench(fd);
	printf("%-38s %10s %10s %10s %10s\n", "kernel (qemu TCG guest)", "10^3",
	       "10^4", "10^5", "10^6");
	printf("%-38s %10.0f %10.0f %10.0f %10.0f\n", "RETIRE ioctl (ns/op)",
	       retire_ns[0], retire_ns[1], retire_ns[2], retire_ns[3]);
	printf("%-38s %10.0f %10.0f %10.0f %10.0f\n", "TRANSLATE ioctl (ns/op)",
	       tr_ns[0], tr_ns[1], tr_ns[2], tr_ns[3]);
	printf("%-38s %10.0f %10.0f %10.0f %10.0f\n", "hbmguard_translate(), mapped (ns/op)",
	       map_ns[0], map_ns[1], map_ns[2], map_ns[3]);
	printf("%-38s %10.0f %10.0f %10.0f %10.0f\n", "linear scan of the mapped table (ns/op)",
	       scan_ns[0], scan_ns[1], scan_ns[2], scan_ns[3]);
	printf("%-38s %10.0f %10.0f %10.0f %10.0f\n", "floor: GET_INFO ioctl (ns/op)",
	       info_ns[0], info_ns[1], info_ns[2], info_ns[3]);
	printf("%-38s %10.1f %10.1f %10.1f %10.1f\n", "table bytes/page (module accounting)",
	       acct[0], acct[1], acct[2], acct[3]);
	printf("%-38s %10.1f %10.1f %10.1f %10.1f\n", "Slab+Vmalloc growth/page (meminfo)",
	       meminfo[0], meminfo[1], meminfo[2], meminfo[3]);
	printf("\n%-38s %10s\n", "aperture (qemu TCG guest)", "ns/page");
	printf("%-38s %10.0f\n", "first touch (fault, page allocated)", ap_first);
	printf("%-38s %10.0f\n", "RETIRE of a mapped page (zap, copy)", ap_retire);
	printf("%-38s %10.0f\n", "next touch (refault to the spare)", ap_refault);
	close(fd);
	return 0;
}
