// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark of the table core (kmod/table.c) in userspace: insert and lookup
 * cost and memory per retired page at 10^3..10^6 retired pages.  Pages are
 * isolated (one extent each, the worst case) and inserted in random order.
 * Then the mapped table (kmod/mtree.c as map.c drives it, read by
 * libhbmguard's hbmguard_translate(), included): a retirement with and
 * without the map kept, and a lookup beside a random load.  And a restart's
 * work on 10^6 stored pages natively, beside reading the state file; with
 * "restart guest", that alone, in make bench's guest (restart_rows()).
 */
#include "libhbmguard/table.c"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "translate_bench.h"
#include "core.h"
#include "mtree.h"
#include "state.h"

static int reserve_both(void *arg)
{
	struct hbm_mtree *c = arg;

	return hbm_mtree_reserve(&c[0], 1) ?: hbm_mtree_reserve(&c[1], 1);
}

struct map_run {
	double plain_ns, map_ns, clean_ns, bad_ns, hot_ns, load_ns, floor_ns, bytes;
};

/*
 * @n isolated pages retired in random order into two tables, one of them
 * followed by two copies of the map as map.c follows it, a thousand at a
 * time in turn so that both see the same machine; then lookups through the
 * map laid out as the kernel maps it.
 */
static int map_bench(u32 n, struct map_run *out)
{
	u32 nr_pages = n * 64, *pages = malloc(n * sizeof(u32)), i, j;
	const u32 lookups = 2000000;
	static struct hbm_mscratch scratch;
	struct hbm_table plain, t;
	struct hbm_mtree c[2];
	struct hbmguard_map_header *h;
	struct hbmguard_table tab;
	double plain_ns = 0, map_ns = 0, t0;
	u64 state = 43, one, *offsets;
	size_t nodes, copy, k;
	char *buf;

	for (i = 0; i < n; i++)
		pages[i] = i * 64 + rnd(&state) % 32;
	for (i = n - 1; i > 0; i--) {
		u32 x = rnd(&state) % (i + 1), tmp = pages[i];

		pages[i] = pages[x];
		pages[x] = tmp;
	}
	if (hbm_table_init(&plain, nr_pages, n) || hbm_table_init(&t, nr_pages, n) ||
	    hbm_mtree_init(&c[0], hbm_mtree_max_nodes(n + 1024)) ||
	    hbm_mtree_init(&c[1], hbm_mtree_max_nodes(n + 1024)))
		return 1;
	for (i = 0; i < n; i += 1000) {
		u32 end = i + 1000 < n ? i + 1000 : n;

		t0 = now_ns();
		for (j = i; j < end; j++) {
			struct hbm_result res = { 0 };

			if (hbm_table_apply(&plain, HBM_OP_RETIRE, pages[j], 1,
					    HBMGUARD_SOURCE_UE, 1, 0, &res))
				return 1;
		}
		plain_ns += now_ns() - t0;
		t0 = now_ns();
		for (j = i; j < end; j++) {
			struct hbm_result res = { 0 };
			u32 lo = pages[j] ? pages[j] - 1 : 0, hi = pages[j] + 2;

			if (hbm_table_apply(&t, HBM_OP_RETIRE, pages[j], 1,
					    HBMGUARD_SOURCE_UE, 1, 0, &res))
				return 1;
			hbm_mtree_span(&c[j % 2], &t, &lo, &hi);
			if (hbm_mtree_sync(&c[j % 2], &t, lo, hi, &scratch, reserve_both, c) ||
			    hbm_mtree_follow(&c[!(j % 2)], &t, lo, hi, &scratch, reserve_both, c))
				return 1;
		}
		map_ns += now_ns() - t0;
	}
	out->plain_ns = plain_ns / n;
	out->map_ns = map_ns / n;

	/* The mapping: a header page, then copy 0's nodes. */
	nodes = c[0].nr_chunks * HBM_MNODES_PER_CHUNK;
	buf = aligned_alloc(4096, 4096 + nodes * HBMGUARD_MAP_NODE_SIZE);
	h = memset(buf, 0, 4096);
	*h = (struct hbmguard_map_header){
		.magic = HBMGUARD_MAP_MAGIC, .version = HBMGUARD_MAP_VERSION,
		.page_shift = 12, .usable_size = (u64)nr_pages << 12,
		.buffer_offset = { 4096, 4096 }, .root = { c[0].root, c[0].root },
		.height = { c[0].height, c[0].height }, .nodes = nodes,
		.node_size = HBMGUARD_MAP_NODE_SIZE,
	};
	for (k = 0; k < c[0].nr_chunks; k++)
		memcpy(buf + 4096 + k * HBM_MCHUNK_BYTES, c[0].chunk[k], HBM_MCHUNK_BYTES);
	tab.hdr = h;
	tab.size = 4096 + nodes * HBMGUARD_MAP_NODE_SIZE;
	/*
	 * The offsets are drawn before the clock starts and read in order:
	 * a bad one drawn inside the loop would cost a random load from
	 * pages[] (4 MiB at 10^6) that neither a lookup nor the anchor makes.
	 */
	offsets = malloc(lookups * sizeof(*offsets));
	if (!offsets)
		return 1;
	for (i = 0; i < lookups; i++)	/* clean: a page of a slot past the retired ones */
		offsets[i] = ((u64)(rnd(&state) % n) * 64 + 32 + rnd(&state) % 32) << 12;
	out->clean_ns = translate_ns(&tab, offsets, lookups, HBMGUARD_STATE_CLEAN);
	for (i = 0; i < lookups; i++)
		offsets[i] = (u64)pages[rnd(&state) % n] << 12;
	out->bad_ns = translate_ns(&tab, offsets, lookups, HBMGUARD_STATE_RETIRED);
	/* One clean offset again and again: the descent, every node in the cache. */
	one = ((u64)(rnd(&state) % n) * 64 + 32) << 12;
	for (i = 0; i < lookups; i++)
		offsets[i] = one;
	out->hot_ns = translate_ns(&tab, offsets, lookups, HBMGUARD_STATE_CLEAN);
	free(offsets);
	copy = (size_t)c[0].used * HBMGUARD_MAP_NODE_SIZE;
	out->load_ns = random_load_ns(copy);
	out->floor_ns = translate_floor_ns(&tab, one, copy, lookups);
	if (out->clean_ns < 0 || out->bad_ns < 0 || out->hot_ns < 0 || out->floor_ns < 0)
		return 1;
	out->bytes = 2.0 * copy / n;
	free(buf);
	free(pages);
	hbm_mtree_destroy(&c[0]);
	hbm_mtree_destroy(&c[1]);
	hbm_table_destroy(&t);
	hbm_table_destroy(&plain);
	return 0;
}

/*
 * A restart with @n stored pages, natively: what make bench's guest row
 * times in a TCG guest, less the syscalls.  The anchor is the daemon's read
 * of the state file (hbm_state_read(), as hbmstatebench read).  The work is
 * the rest of what a restart does to put them back: the daemon packs each
 * record (hbm_state_restore_record()), the module takes it (the fields as
 * record_take() in kmod/netlink.c converts them; its checks, a few compares
 * a record, not made here) and restores a request of 16384
 * (HBM_RESTORE_MAX) into the table (hbm_core_restore()).  Nobody has mapped
 * a table a restart restores after a module load, so the map is not
 * followed: its two copies are built at the table's first mmap() (map.c),
 * timed apart.  Pages as hbmstatebench writes them: one each, a page
 * apart, sources UE.
 */
static int restart_bench(u32 n, double *read_ns, double *work_ns, double *map_ns)
{
	const u32 per_request = 16384, nr_pages = 4 * n;
	struct hbm_state s = { .page_size = 4096, .serial = 1, .nr = n };
	struct hbmguard_restore_record *packed = malloc(per_request * sizeof(*packed));
	struct hbm_page_range *x = malloc(per_request * sizeof(*x));
	char dir[] = "/tmp/hbm-bench-XXXXXX", name[128];
	struct hbm_state_damage damage;
	struct hbm_mtree c[2];
	struct hbm_state back;
	struct hbm_core core;
	u32 i, j;
	double t0;
	int fd;

	s.records = calloc(n, sizeof(*s.records));
	if (!packed || !x || !s.records || !mkdtemp(dir))
		return 1;
	snprintf(s.identity, sizeof(s.identity), "sim:bench");
	for (i = 0; i < n; i++)
		s.records[i] = (struct hbm_state_record){
			.offset = 2ULL * i * 4096, .length = 4096, .first_seen = 1,
			.last_seen = 1, .state = HBMGUARD_STATE_RETIRED,
			.source = HBMGUARD_SOURCE_UE, .errors = 1,
		};
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || hbm_state_write(fd, &s))
		return 1;
	t0 = now_ns();
	if (hbm_state_read(fd, s.identity, 0, &back, &damage) || back.nr != n)
		return 1;
	*read_ns = now_ns() - t0;

	if (hbm_core_init(&core, nr_pages, n, 4096) ||
	    hbm_mtree_init(&c[0], hbm_mtree_max_nodes(n + 1024)) ||
	    hbm_mtree_init(&c[1], hbm_mtree_max_nodes(n + 1024)))
		return 1;
	t0 = now_ns();
	for (i = 0; i < n; i += per_request) {
		u32 m = n - i < per_request ? n - i : per_request, done = 0;
		struct hbm_result res = { 0 };

		for (j = 0; j < m; j++)
			hbm_state_restore_record(&back.records[i + j], 0, &packed[j]);
		for (j = 0; j < m; j++)
			x[j] = (struct hbm_page_range){
				.first = packed[j].offset >> 12, .nr = packed[j].length >> 12,
				.op = HBM_OP_RETIRE, .source = packed[j].source,
				.errors = packed[j].errors, .first_seen = packed[j].first_seen,
				.last_seen = packed[j].last_seen,
			};
		if (hbm_core_restore(&core, x, m, 2, &res, &done) || done != m)
			return 1;
	}
	*work_ns = now_ns() - t0;
	t0 = now_ns();
	if (hbm_mtree_rebuild(&c[0], &core.table, reserve_both, c) ||
	    hbm_mtree_rebuild(&c[1], &core.table, reserve_both, c))
		return 1;
	*map_ns = now_ns() - t0;
	if (core.table.nr_extents != n || c[0].nr != n || c[1].nr != n)
		return 1;
	hbm_mtree_destroy(&c[0]);
	hbm_mtree_destroy(&c[1]);
	hbm_core_destroy(&core);
	hbm_state_free(&back);
	free(s.records);
	free(packed);
	free(x);
	if (hbm_state_file_name(s.identity, name, sizeof(name)) || unlinkat(fd, name, 0))
		return 1;
	close(fd);
	return rmdir(dir) ? 1 : 0;
}

/*
 * A restart's rows: natively, in make bench's table beside the guest's row
 * ("daemon restart -> 10^6 pages back in the kernel"), and alone inside
 * that guest (bench-core restart guest, tests/bench/guest-persist.sh), the
 * same work on the same TCG CPU less the syscalls and the daemon's start:
 * the floor of that row on the machine it is measured on.
 */
static int restart_rows(bool guest)
{
	const char *where = guest ? "in this guest" : "natively";
	double read_ns = 0, work_ns = 0, map_ns = 0, r, w, m;
	char label[64];
	unsigned int s;

	/* The least of three: the first also pays for the heap's growth. */
	for (s = 0; s < 3; s++) {
		if (restart_bench(1000000, &r, &w, &m))
			return 1;
		read_ns = s && read_ns < r ? read_ns : r;
		map_ns = s && map_ns < m ? map_ns : m;
		work_ns = s && work_ns < w ? work_ns : w;
	}
	snprintf(label, sizeof(label), "a restart at 10^6 pages, %s: read (ms)", where);
	printf("\n%-52s %10.1f\n", label, read_ns / 1e6);
	printf("%-52s %10.1f\n", "  packed, taken, restored into the table (ms)",
	       work_ns / 1e6);
	printf("%-52s %10.1f\n", "  then the first mmap: both map copies built (ms)",
	       map_ns / 1e6);
	if (guest) {
		printf("@bench\tcore in this guest: the read, then the records packed, taken and"
		       " restored (userspace: the restart less its syscalls and start)"
		       "\t%.0f\tms\tcore in this guest: reading the state file alone"
		       " (userspace)\t%.0f\t<= 2x\n", (read_ns + work_ns) / 1e6, read_ns / 1e6);
		return 0;
	}
	printf("@bench\tcore: a restart's work on 10^6 stored pages, packed, taken and"
	       " restored into the table (userspace)\t%.1f\tms\t"
	       "core: reading the state file alone (userspace)\t%.1f\t-\n",
	       work_ns / 1e6, read_ns / 1e6);
	/*
	 * The guest's row beside its floor: the same goal on this machine's
	 * own CPU, no syscalls, no TCG (tests/bench/README.md).
	 */
	printf("@bench\tcore: a restart natively, the floor of the guest's: the read, then"
	       " the records packed, taken and restored (userspace)\t%.1f\tms\t"
	       "core: reading the state file alone (userspace)\t%.1f\t<= 2x\n",
	       (read_ns + work_ns) / 1e6, read_ns / 1e6);
	printf("@bench\t  then the table's first mmap(): both map copies built (userspace)"
	       "\t%.1f\tms\tcore: reading the state file alone (userspace)\t%.1f\t-\n",
	       map_ns / 1e6, read_ns / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	static const u32 sizes[] = { 1000, 10000, 100000, 1000000 };
	const u32 lookups = 2000000;
	volatile u32 sink = 0;
	unsigned int s;

	if (argc == 3 && !strcmp(argv[1], "restart") && !strcmp(argv[2], "guest"))
		return restart_rows(true);
	if (argc != 1) {
		fprintf(stderr, "usage: bench-core [restart guest]\n");
		return 2;
	}
	printf("%-34s %10s %10s %10s %10s\n", "core (userspace, -O2)", "10^3", "10^4",
	       "10^5", "10^6");
	double ins[4], look[4], bytes[4], floor_ns[4];

	for (s = 0; s < 4; s++) {
		u32 n = sizes[s], nr_pages = n * 64, i;
		u32 *pages = malloc(n * sizeof(*pages)), *at;
		struct hbm_table t;
		u64 state = 42;
		double t0;

		for (i = 0; i < n; i++)
			pages[i] = i * 64 + rnd(&state) % 32;
		for (i = n - 1; i > 0; i--) {
			u32 j = rnd(&state) % (i + 1), tmp = pages[i];

			pages[i] = pages[j];
			pages[j] = tmp;
		}
		if (hbm_table_init(&t, nr_pages, n))
			return 1;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			struct hbm_result res = { 0 };

			if (hbm_table_apply(&t, HBM_OP_RETIRE, pages[i], 1,
					    HBMGUARD_SOURCE_UE, 1, 0, &res))
				return 1;
		}
		ins[s] = (now_ns() - t0) / n;

		/* drawn before the clock, as the map's lookups are */
		at = malloc(lookups * sizeof(*at));
		if (!at)
			return 1;
		for (i = 0; i < lookups; i++)
			at[i] = rnd(&state) % nr_pages;
		t0 = now_ns();
		for (i = 0; i < lookups; i++) {
			struct hbm_extent e;

			sink += hbm_table_lookup(&t, at[i], &e);
			wait_for_loads();
		}
		look[s] = (now_ns() - t0) / lookups;
		free(at);
		bytes[s] = (double)t.bytes / n;
		floor_ns[s] = random_load_ns(t.bytes);
		hbm_table_destroy(&t);
		free(pages);
	}
	printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "insert, random order (ns/op)",
	       ins[0], ins[1], ins[2], ins[3]);
	printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "lookup, random page (ns/op)",
	       look[0], look[1], look[2], look[3]);
	printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "anchor: 1 random load, same size",
	       floor_ns[0], floor_ns[1], floor_ns[2], floor_ns[3]);
	printf("%-34s %10.1f %10.1f %10.1f %10.1f\n", "memory per retired page (bytes)",
	       bytes[0], bytes[1], bytes[2], bytes[3]);
	printf("%-34s %10s %10s %10s %10s\n", "targets", "", "", "", "<=1.5x, <=32 B");
	printf("@bench\tcore lookup at 10^6 pages, userspace\t%.0f\tns\t"
	       "one random load, table-sized buffer\t%.0f\t<= 1.5x\n", look[3], floor_ns[3]);
	printf("@bench\tcore table bytes per retired page at 10^6\t%.1f\tB\t"
	       "amdgpu's 24-byte record\t24\t<= 1.33x\n", bytes[3]);

	{
		struct map_run m[4];

		for (s = 0; s < 4; s++)
			if (map_bench(sizes[s], &m[s]))
				return 1;
		printf("\n%-34s %10s %10s %10s %10s\n", "mapped table (userspace, -O2)",
		       "10^3", "10^4", "10^5", "10^6");
		printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "retire, map kept (ns/op)",
		       m[0].map_ns, m[1].map_ns, m[2].map_ns, m[3].map_ns);
		printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "retire, no map (ns/op)",
		       m[0].plain_ns, m[1].plain_ns, m[2].plain_ns, m[3].plain_ns);
		printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "translate, clean (ns/op)",
		       m[0].clean_ns, m[1].clean_ns, m[2].clean_ns, m[3].clean_ns);
		printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "translate, bad (ns/op)",
		       m[0].bad_ns, m[1].bad_ns, m[2].bad_ns, m[3].bad_ns);
		printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "translate, one offset (ns/op)",
		       m[0].hot_ns, m[1].hot_ns, m[2].hot_ns, m[3].hot_ns);
		printf("%-34s %10.0f %10.0f %10.0f %10.0f\n", "anchor: 1 random load, one copy",
		       m[0].load_ns, m[1].load_ns, m[2].load_ns, m[3].load_ns);
		printf("%-34s %10.1f %10.1f %10.1f %10.1f\n", "map bytes per page (both copies)",
		       m[0].bytes, m[1].bytes, m[2].bytes, m[3].bytes);
		printf("@bench\tcore: retire at 10^6 pages, map kept (userspace)\t%.1f\tns/op\t"
		       "core: retire at 10^6 pages, no map\t%.1f\t<= 1.5x\n",
		       m[3].map_ns, m[3].plain_ns);
		printf("@bench\tcore: translate through the map, clean offsets, 10^6 pages (userspace)"
		       "\t%.1f\tns/op\tone random load from a table-sized buffer\t%.1f\t<= 1.5x\n",
		       m[3].clean_ns, m[3].load_ns);
		printf("@bench\tcore: translate through the map, bad offsets, 10^6 pages (userspace)"
		       "\t%.1f\tns/op\tone random load from a table-sized buffer\t%.1f\t<= 1.5x\n",
		       m[3].bad_ns, m[3].load_ns);
		/*
		 * A lookup at 10^6 cannot cost less than its descent with every
		 * node in the cache and the anchor's one miss after it, timed
		 * as one chain (translate_floor_ns(), tests/bench/README.md).
		 */
		printf("@bench\tcore: floor: a lookup at 10^6 pages with its nodes in the cache (one offset), then one random load"
		       "\t%.1f\tns/op\tone random load from a table-sized buffer\t%.1f\t-\n",
		       m[3].floor_ns, m[3].load_ns);
	}
	{
		/*
		 * The policy's correctable-error buckets (policy.c): 10^6 CEs
		 * taking turns over the pages, as the intake's worker hands
		 * them on in a storm, at a threshold none reaches.
		 */
		static const u32 spread[] = { 64, 4096, 100000 };
		double ce_ns[3];
		u64 forgotten[3];

		for (s = 0; s < 3; s++) {
			const u32 reports = 1000000;
			struct hbm_result res = { 0 };
			struct hbm_policy p;
			struct hbm_core c;
			u32 i, served;
			double t0;

			if (hbm_core_init(&c, 1 << 20, 0, 4096))
				return 1;
			p = c.policy;
			p.ce_threshold = HBM_CE_THRESHOLD_MAX;
			hbm_core_set_policy(&c, &p);
			t0 = now_ns();
			for (i = 0; i < reports; i++)
				if (hbm_core_report(&c, i % spread[s] * 7, HBMGUARD_ERROR_CE,
						    1, 1700000000, &res, &served))
					return 1;
			ce_ns[s] = (now_ns() - t0) / reports;
			forgotten[s] = c.ce_forgotten;
			hbm_core_destroy(&c);
		}
		printf("\n%-34s %10s %10s %10s\n", "CE buckets (userspace, -O2)", "64",
		       "4096", "10^5");
		printf("%-34s %10.0f %10.0f %10.0f\n", "a CE into its page's (ns/op)",
		       ce_ns[0], ce_ns[1], ce_ns[2]);
		printf("%-34s %10llu %10llu %10llu\n", "errors forgotten (of 10^6)",
		       (unsigned long long)forgotten[0], (unsigned long long)forgotten[1],
		       (unsigned long long)forgotten[2]);
		printf("@bench\tcore: a CE into its page's bucket, 10^5 pages erring (userspace)"
		       "\t%.1f\tns/op\tthe same, 64 pages erring\t%.1f\t-\n", ce_ns[2], ce_ns[0]);
		printf("@bench\tcore: CEs forgotten of 10^6 over 10^5 pages (userspace)"
		       "\t%llu\tCEs\t-\t-\t0\n", (unsigned long long)forgotten[2]);
	}
	if (restart_rows(false))
		return 1;
	return sink == 0xffffffff;
}
