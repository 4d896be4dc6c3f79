// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of daemon/amdgpu_ras.c against the fixture tree
 * tests/unit/fixtures/amdgpu (its README says what each card is).  What is
 * parsed is printed back with amdgpu_ras.c's own format strings (Linux
 * 6.12, drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c) and must give the
 * fixture's bytes: the fixture cannot drift from the driver's format, nor
 * the parser from the fixture.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <check.h>
#include "amdgpu.h"
#include "amdgpu_ras.h"
#include "unit.h"

/* amdgpu_ras_sysfs_badpages_read() and amdgpu_ras_sysfs_read(). */
#define BAD_PAGE_FMT	"0x%08x : 0x%08x : %1s\n"
#define COUNT_FMT	"%s: %lu\n%s: %lu\n"
#define COUNT_UMC_FMT	"%s: %lu\n%s: %lu\n%s: %lu\n"
#define BUSY		"Query currently inaccessible\n"

static const char *why;
static size_t line;
static char file[256];

static char *slurp(const char *path, size_t *len)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static const char *card(int n)
{
	static char dir[512];

	snprintf(dir, sizeof(dir), "%s/amdgpu/card%d/device", HBM_FIXTURES, n);
	return dir;
}

/* Every file of a card, printed back from what was parsed. */
static void round_trip(int n, const struct amdgpu_ras *r)
{
	static const char *const flag[] = { "R", "P", "F" };
	char path[600], out[65536];
	size_t i, o = 0, len;
	const char *in;

	for (i = 0; i < r->nr_pages; i++)
		o += sprintf(out + o, BAD_PAGE_FMT, r->pages[i].pfn, r->pages[i].size,
			     flag[r->pages[i].state]);
	snprintf(path, sizeof(path), "%s/ras/gpu_vram_bad_pages", card(n));
	if (access(path, F_OK) == 0) {
		in = slurp(path, &len);
		ck_assert_uint_eq(len, o);
		ck_assert_uint_eq(len % AMDGPU_BAD_PAGE_LINE, 0);
		ck_assert(!memcmp(in, out, len));
	}
	for (i = 0; i < r->nr_blocks; i++) {
		const struct amdgpu_err_count *c = &r->block[i].count;

		if (c->inaccessible)
			o = sprintf(out, BUSY);
		else if (c->has_de)
			o = sprintf(out, COUNT_UMC_FMT, "ue", (unsigned long)c->ue,
				    "ce", (unsigned long)c->ce, "de", (unsigned long)c->de);
		else
			o = sprintf(out, COUNT_FMT, "ue", (unsigned long)c->ue, "ce",
				    (unsigned long)c->ce);
		snprintf(path, sizeof(path), "%s/ras/%s_err_count", card(n), r->block[i].name);
		in = slurp(path, &len);
		ck_assert_uint_eq(len, o);
		ck_assert(!memcmp(in, out, len));
	}
}

START_TEST(fixture_cards)
{
	struct amdgpu_ras r;

	/* 6.12, with bad pages of every state and UMC's deferred errors. */
	ck_assert_int_eq(amdgpu_ras_read(card(0), &r, &why, file, sizeof(file), &line), 0);
	ck_assert_uint_eq(r.nr_pages, 4);
	ck_assert_uint_eq(r.pages[0].pfn, 0x12345);
	ck_assert_uint_eq(r.pages[0].size, 4096);
	ck_assert_int_eq(r.pages[0].state, AMDGPU_PAGE_RESERVED);
	ck_assert_int_eq(r.pages[2].state, AMDGPU_PAGE_PENDING);
	ck_assert_uint_eq(r.pages[2].pfn, 0x7fffe);
	ck_assert_int_eq(r.pages[3].state, AMDGPU_PAGE_FAILED);
	ck_assert_uint_eq(r.nr_blocks, 3);
	ck_assert_str_eq(r.block[0].name, "gfx");
	ck_assert_str_eq(r.block[1].name, "sdma");
	ck_assert_str_eq(r.block[2].name, "umc");
	ck_assert_uint_eq(r.block[2].count.ue, 2);
	ck_assert_uint_eq(r.block[2].count.ce, 17);
	ck_assert(r.block[2].count.has_de);
	ck_assert_uint_eq(r.block[2].count.de, 1);
	ck_assert(!r.block[0].count.has_de);
	ck_assert_uint_eq(r.block[0].count.ce, 3);
	round_trip(0, &r);
	amdgpu_ras_free(&r);

	/* 6.1: no bad page, no "de:". */
	ck_assert_int_eq(amdgpu_ras_read(card(1), &r, &why, file, sizeof(file), &line), 0);
	ck_assert_uint_eq(r.nr_pages, 0);
	ck_assert_uint_eq(r.nr_blocks, 1);
	ck_assert(!r.block[0].count.has_de);
	ck_assert_uint_eq(r.block[0].count.ue, 1);
	round_trip(1, &r);
	amdgpu_ras_free(&r);

	/* In reset: counters inaccessible; no bad-page list. */
	ck_assert_int_eq(amdgpu_ras_read(card(2), &r, &why, file, sizeof(file), &line), 0);
	ck_assert_uint_eq(r.nr_pages, 0);
	ck_assert(r.block[0].count.inaccessible);
	round_trip(2, &r);
	amdgpu_ras_free(&r);

	/* No ras/ at all. */
	ck_assert_int_eq(amdgpu_ras_read(card(3), &r, &why, file, sizeof(file), &line),
			 -ENOENT);
	ck_assert_str_eq(why, "no ras directory");
}
END_TEST

START_TEST(bad_pages_malformed)
{
	static const struct {
		const char *text;
		size_t len;	/* 0: strlen */
		size_t line;
	} bad[] = {
		{ "0x0001234A : 0x00001000 : R\n", 0, 1 },	/* upper case */
		{ "0x00012345 : 0x00001000 : R", 0, 1 },	/* no newline */
		{ "0x00012345 : 0x00001000 : X\n", 0, 1 },	/* flag */
		{ "0x00012345 : 0x00000000 : R\n", 0, 1 },	/* size 0 */
		{ "0x00012345 : 0x00001000 : R\n0x1 : 0x1000 : R\n", 0, 2 },
		{ "0x00012345 : 0x00001000 : RR\n", 0, 1 },
		{ "0x00012345: 0x00001000 : R\n", 0, 1 },
		{ "0x000123456 : 0x0001000 : R\n", 0, 1 },	/* %08x of more */
		{ "00x0012345 : 0x00001000 : R\n", 0, 1 },
		{ "0x00012345 : 0x00001000 : \0\n", 28, 1 },	/* a NUL */
		{ "0x00012345 : 0x00001000 : R\n\0", 29, 2 },
		{ "\n", 0, 1 },
	};
	struct amdgpu_bad_page p[4], before[4];
	size_t count = 99, i;

	memset(p, 0x5a, sizeof(p));
	memcpy(before, p, sizeof(p));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);

		why = NULL;
		ck_assert_msg(amdgpu_ras_parse_bad_pages(bad[i].text, len, p, 4, &count,
							 &why, &line) == -EINVAL,
			      "accepted %zu", i);
		ck_assert_ptr_nonnull(why);
		ck_assert_msg(line == bad[i].line, "case %zu: line %zu", i, line);
		ck_assert(!memcmp(p, before, sizeof(p)));
		ck_assert_uint_eq(count, 99);
	}
	/* Two pages where one fits. */
	ck_assert_int_eq(amdgpu_ras_parse_bad_pages(
		"0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : P\n", 56, p, 1,
		&count, &why, &line), -E2BIG);
	ck_assert(!memcmp(p, before, sizeof(p)));
	/* An empty list: no page. */
	ck_assert_int_eq(amdgpu_ras_parse_bad_pages("", 0, p, 4, &count, &why, &line), 0);
	ck_assert_uint_eq(count, 0);
}
END_TEST

START_TEST(err_count_malformed)
{
	static const char *const bad[] = {
		"ue: -1\nce: 0\n", "ue: 01\nce: 0\n", "ue: 1\n", "ue: 1\nce: 0\nde: 0\nxe: 0\n",
		"ue:1\nce: 0\n", "ce: 0\nue: 1\n", "ue: 18446744073709551616\nce: 0\n",
		"ue: 1\nce: 0", "ue: 1\nce: 0\nde: \n", "ue: 1 \nce: 0\n", "",
		"Query currently inaccessible", "query currently inaccessible\n",
		"ue: 1\nce: 0\n\n",
	};
	struct amdgpu_err_count c, before;
	size_t i;

	memset(&c, 0x5a, sizeof(c));
	before = c;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(amdgpu_ras_parse_err_count(bad[i], strlen(bad[i]), &c, &why,
							 &line) == -EINVAL,
			      "accepted: %s", bad[i]);
		ck_assert_ptr_nonnull(why);
		ck_assert(!memcmp(&c, &before, sizeof(c)));
	}
	ck_assert_int_eq(amdgpu_ras_parse_err_count("ue: 1\n\0ce: 0\n", 13, &c, &why, &line),
			 -EINVAL);
	ck_assert_int_eq(amdgpu_ras_parse_err_count("ue: 18446744073709551615\nce: 0\n", 31,
						    &c, &why, &line), 0);
	ck_assert_uint_eq(c.ue, 18446744073709551615ULL);
}
END_TEST

/* A card whose file is malformed: the error names the file and the line. */
START_TEST(read_names_the_file)
{
	char dir[] = "/tmp/hbm-amdgpu-XXXXXX", path[128];
	struct amdgpu_ras r;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ras", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/ras/gpu_vram_bad_pages", dir);
	f = fopen(path, "w");
	fputs("0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : Q\n", f);
	fclose(f);
	ck_assert_int_eq(amdgpu_ras_read(dir, &r, &why, file, sizeof(file), &line), -EINVAL);
	ck_assert_str_eq(file, "ras/gpu_vram_bad_pages");
	ck_assert_uint_eq(line, 2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ras/umc_err_count", dir);
	f = fopen(path, "w");
	fputs("ue: 0\nce: x\n", f);
	fclose(f);
	ck_assert_int_eq(amdgpu_ras_read(dir, &r, &why, file, sizeof(file), &line), -EINVAL);
	ck_assert_str_eq(file, "ras/umc_err_count");
	ck_assert_uint_eq(line, 2);
	unlink(path);
	snprintf(path, sizeof(path), "%s/ras", dir);
	rmdir(path);
	rmdir(dir);
}
END_TEST

/*
 * The source (amdgpu.c) over a copy of the fixture tree: what it tells the
 * core at start, and what a later read finds changed.
 */
static struct hbm_fact told[32];
static size_t nr_told;

static void tell(void *core, const struct hbm_fact *f)
{
	(void)core;
	if (nr_told < 32)
		told[nr_told++] = *f;
}

static char tree[64];

static void tree_setup(void)
{
	char cmd[256];

	nr_told = 0;
	strcpy(tree, "/tmp/hbm-drm-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	snprintf(cmd, sizeof(cmd), "cp -r %s/amdgpu/card* %s/", HBM_FIXTURES, tree);
	ck_assert_int_eq(system(cmd), 0);
}

static void tree_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tree);
	ck_assert_int_eq(system(cmd), 0);
}

static void tree_write(const char *card_file, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, card_file);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static const struct hbm_fact *told_of(uint32_t type, const char *identity, size_t nth)
{
	size_t i;

	for (i = 0; i < nr_told; i++)
		if (told[i].type == type && !strcmp(told[i].dev.identity, identity) && !nth--)
			return &told[i];
	return NULL;
}

#define CARD0 "amdgpu-3f2e1d0c4b5a6978"
#define CARD1 "amdgpu-pci-0000:03:00.0"	/* 6.1's card has no unique_id */
#define CARD2 "amdgpu-0a1b2c3d4e5f6071"

static struct amdgpu_facts *start(void)
{
	struct hbm_source_link link = { .fact = tell };
	struct amdgpu_facts *s = amdgpu_facts_start(tree, &link);

	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(source_at_start)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;

	/* cards 0, 1, 2; not 3 (RAS off), 4 (nvidia's), card0-DP-1 (a connector) */
	ck_assert_uint_eq(nr_told, 3 + 4 + 3);
	f = told_of(HBM_FACT_DEVICE_SEEN, CARD0, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->origin, HBM_FROM_AMDGPU);
	ck_assert_uint_eq(f->dev.id, HBM_NO_DEVICE_ID);
	ck_assert_uint_eq(f->dev.kind, HBM_DEVICE_AMDGPU);
	ck_assert_str_eq(f->dev.pci, "0000:c1:00.0");
	ck_assert_uint_eq(f->dev.size, 68702699520ULL);
	ck_assert_uint_eq(f->dev.page_size, 4096);
	ck_assert_uint_eq(f->sync, HBM_SYNC_START);
	ck_assert_ptr_nonnull(told_of(HBM_FACT_DEVICE_SEEN, CARD1, 0));
	ck_assert_ptr_nonnull(told_of(HBM_FACT_DEVICE_SEEN, CARD2, 0));
	/* card0's list, old news: R, R, P, F */
	f = told_of(HBM_FACT_PAGES, CARD0, 2);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->offset, 0x7fffeULL * 4096);
	ck_assert_uint_eq(f->length, 4096);
	ck_assert_uint_eq(f->state, HBMGUARD_STATE_PENDING);
	ck_assert_uint_eq(f->flags, HBM_FACT_UNHEARD);
	ck_assert_uint_eq(f->sync, HBM_SYNC_START);
	ck_assert_uint_eq(told_of(HBM_FACT_PAGES, CARD0, 3)->state, HBMGUARD_STATE_FAILED);
	ck_assert_ptr_null(told_of(HBM_FACT_ERROR, CARD0, 0));	/* counts are a baseline */
	/* each card's last fact, its health: card0's F page is in use, bad */
	f = told_of(HBM_FACT_HEALTH, CARD0, 0);
	ck_assert(f > told_of(HBM_FACT_PAGES, CARD0, 3));	/* after its pages */
	ck_assert_uint_eq(f->state, HBMGUARD_HEALTH_RMA);
	ck_assert_uint_eq(f->flags, HBM_FACT_UNHEARD);
	ck_assert_uint_eq(told_of(HBM_FACT_HEALTH, CARD1, 0)->state, HBMGUARD_HEALTH_OK);
	/* with the driver's counts, every block's, de: as ue (hbmctl gpus) */
	ck_assert_uint_eq(f->driver.have, HBM_DRIVER_ECC);
	ck_assert_uint_eq(f->driver.ue, 2 + 1);		/* umc ue, de */
	ck_assert_uint_eq(f->driver.ce, 17 + 3);	/* umc, gfx */
	f = told_of(HBM_FACT_HEALTH, CARD1, 0);
	ck_assert_uint_eq(f->driver.have, HBM_DRIVER_ECC);
	ck_assert_uint_eq(f->driver.ue, 1);
	ck_assert_uint_eq(f->driver.ce, 0);
	f = told_of(HBM_FACT_HEALTH, CARD2, 0);		/* in reset: none */
	ck_assert_uint_eq(f->driver.have, 0);
	ck_assert_uint_eq(f->driver.ue, 0);
	nr_told = 0;
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 0);		/* nothing changed, nothing told */
	amdgpu_facts_stop(s);
}
END_TEST

START_TEST(source_hears_what_changed)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;
	char cmd[128];

	nr_told = 0;
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n"
		   "0x0007fffe : 0x00001000 : R\n0x00000001 : 0x00001000 : F\n"
		   "0x00020000 : 0x00001000 : P\n");
	tree_write("card0/device/ras/umc_err_count", "ue: 3\nce: 20\nde: 1\n");
	snprintf(cmd, sizeof(cmd), "rm -rf %s/card1", tree);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 5);
	f = told_of(HBM_FACT_PAGES, CARD0, 0);	/* pending, now reserved */
	ck_assert_uint_eq(f->offset, 0x7fffeULL * 4096);
	ck_assert_uint_eq(f->event, HBMGUARD_EVENT_RETIRED);
	ck_assert_uint_eq(f->flags, HBM_FACT_UNHEARD);	/* the module's event is journaled */
	ck_assert_uint_eq(f->sync, 0);
	ck_assert_uint_eq(f->source, HBMGUARD_SOURCE_UE);
	f = told_of(HBM_FACT_PAGES, CARD0, 1);	/* new */
	ck_assert_uint_eq(f->offset, 0x20000ULL * 4096);
	ck_assert_uint_eq(f->event, HBMGUARD_EVENT_PENDING);
	f = told_of(HBM_FACT_ERROR, CARD0, 0);
	ck_assert_uint_eq(f->severity, HBM_SEVERITY_UE);
	ck_assert_uint_eq(f->count, 1);
	ck_assert_str_eq(f->text, "umc: 1 new uncorrectable error");
	f = told_of(HBM_FACT_ERROR, CARD0, 1);
	ck_assert_uint_eq(f->severity, HBM_SEVERITY_CE);
	ck_assert_uint_eq(f->count, 3);
	ck_assert_ptr_nonnull(told_of(HBM_FACT_DEVICE_GONE, CARD1, 0));

	/* A reset: counts inaccessible, then cleared; no error told. */
	nr_told = 0;
	tree_write("card0/device/ras/umc_err_count", "Query currently inaccessible\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	tree_write("card0/device/ras/umc_err_count", "ue: 0\nce: 0\nde: 0\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	tree_write("card0/device/ras/umc_err_count", "ue: 1\nce: 0\nde: 0\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 1);		/* counted from the reset on */
	ck_assert_uint_eq(told[0].count, 1);

	/*
	 * Its health read anew (the page it could not reserve, reserved at a
	 * later try): a table read too, no event of its own.
	 */
	nr_told = 0;
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n"
		   "0x0007fffe : 0x00001000 : R\n0x00000001 : 0x00001000 : R\n"
		   "0x00020000 : 0x00001000 : P\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	f = told_of(HBM_FACT_HEALTH, CARD0, 0);
	ck_assert_uint_eq(f->state, HBMGUARD_HEALTH_OK);
	ck_assert_uint_eq(f->aux, HBMGUARD_HEALTH_RMA);
	ck_assert_uint_eq(f->flags, HBM_FACT_UNHEARD);
	ck_assert_uint_eq(f->sync, 0);
	amdgpu_facts_stop(s);
}
END_TEST

/* A list of @n pages from pfn 0x10000, in reverse if @reverse, page @pending 'P'; and pfn @extra. */
static void write_many(size_t n, bool reverse, size_t pending, uint32_t extra)
{
	char *text = malloc((n + 1) * AMDGPU_BAD_PAGE_LINE + 1), *at = text;
	size_t i;

	ck_assert_ptr_nonnull(text);
	*at = 0;
	for (i = 0; i < n; i++) {
		size_t k = reverse ? n - 1 - i : i;

		at += sprintf(at, "0x%08zx : 0x00001000 : %s\n", 0x10000 + k,
			      k == pending ? "P" : "R");
	}
	if (extra)
		sprintf(at, "0x%08x : 0x00001000 : R\n", extra);
	tree_write("card0/device/ras/gpu_vram_bad_pages", text);
	free(text);
}

/*
 * A list as long as amdgpu's EEPROM holds (some 10^4 records), read again
 * in another order with one page new and one reserved since: those two
 * told, none of the others.
 */
START_TEST(source_long_list_tells_what_changed)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;

	write_many(10000, false, 4321, 0);
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	nr_told = 0;
	write_many(10000, true, SIZE_MAX, 0x7000);
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 2);
	f = told_of(HBM_FACT_PAGES, CARD0, 0);
	ck_assert_uint_eq(f->offset, (0x10000ULL + 4321) * 4096);
	ck_assert_uint_eq(f->event, HBMGUARD_EVENT_RETIRED);
	f = told_of(HBM_FACT_PAGES, CARD0, 1);
	ck_assert_uint_eq(f->offset, 0x7000ULL * 4096);
	amdgpu_facts_stop(s);
}
END_TEST

/*
 * amdgpu_ras_sysfs_read() fails EINVAL where the driver's query fails
 * (amdgpu_ras_query_error_status(), amdgpu_ras.c of 6.12: in reset, the
 * reset domain's lock not taken): that block's counts are unknown, as
 * while "inaccessible"; the card's list is still read, its new page
 * told.  (A directory stands for the file whose read() fails.)
 */
START_TEST(source_err_count_unreadable_blinds_one_block)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;
	char cmd[256];

	nr_told = 0;
	snprintf(cmd, sizeof(cmd), "rm %s/card0/device/ras/umc_err_count && "
		 "mkdir %s/card0/device/ras/umc_err_count", tree, tree);
	ck_assert_int_eq(system(cmd), 0);
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n"
		   "0x0007fffe : 0x00001000 : P\n0x00000001 : 0x00001000 : F\n"
		   "0x00020000 : 0x00001000 : P\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	f = told_of(HBM_FACT_PAGES, CARD0, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->offset, 0x20000ULL * 4096);
	ck_assert_uint_eq(f->event, HBMGUARD_EVENT_PENDING);
	ck_assert_ptr_null(told_of(HBM_FACT_ERROR, CARD0, 0));
	ck_assert_ptr_null(told_of(HBM_FACT_DEVICE_GONE, CARD0, 0));
	amdgpu_facts_stop(s);
}
END_TEST

/*
 * A read of the list that ends early (amdgpu_ras_badpages_read() without
 * memory: the driver's read returns 0, the end, amdgpu_ras.c 6.1 and
 * 6.12): the list only grows, so the rest is the last read's.  Before the
 * fix its F page left it: health OK, then RMA again at the next full read.
 */
START_TEST(source_short_list_read_keeps_the_rest)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;

	nr_told = 0;
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 0);		/* its health still RMA, no news */
	tree_write("card0/device/ras/gpu_vram_bad_pages", "");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 0);
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n"
		   "0x0007fffe : 0x00001000 : P\n0x00000001 : 0x00001000 : F\n"
		   "0x00020000 : 0x00001000 : P\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 1);		/* the one new page, once */
	f = told_of(HBM_FACT_PAGES, CARD0, 0);
	ck_assert_uint_eq(f->offset, 0x20000ULL * 4096);
	amdgpu_facts_stop(s);
}
END_TEST

/*
 * A card first seen in reset, its counts unknown: once they all read,
 * they go to the registrar with its health, unchanged, once (it adds
 * growth only to counts it was given: hbmctl gpus showed none before).
 */
START_TEST(source_counts_told_once_readable)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;

	nr_told = 0;
	tree_write("card2/device/ras/umc_err_count", "ue: 4\nce: 9\nde: 2\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 1);
	f = told_of(HBM_FACT_HEALTH, CARD2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->state, HBMGUARD_HEALTH_OK);
	ck_assert_uint_eq(f->aux, HBMGUARD_HEALTH_OK);
	ck_assert_uint_eq(f->sync, 0);
	ck_assert_uint_eq(f->driver.have, HBM_DRIVER_ECC);
	ck_assert_uint_eq(f->driver.ue, 4 + 2);
	ck_assert_uint_eq(f->driver.ce, 9);
	nr_told = 0;
	tree_write("card2/device/ras/umc_err_count", "ue: 4\nce: 10\nde: 2\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 1);		/* the growth only */
	ck_assert_ptr_nonnull(told_of(HBM_FACT_ERROR, CARD2, 0));
	amdgpu_facts_stop(s);
}
END_TEST

/*
 * The driver's card made anew between two polls (unbound and bound
 * again: a new card directory), its list read anew from its EEPROM,
 * shorter: not the last list cut short (helper-154: its tail was kept, a
 * stale F page kept the card at RMA); the card gone, then seen.  And a
 * shorter list that is not the last's beginning is not padded either.
 */
START_TEST(source_card_made_anew_is_not_padded)
{
	struct amdgpu_facts *s = start();
	char cmd[512];

	nr_told = 0;
	snprintf(cmd, sizeof(cmd), "mv %s/card0 %s/old && cp -r %s/old %s/card0 && rm -r %s/old",
		 tree, tree, tree, tree, tree);
	ck_assert_int_eq(system(cmd), 0);
	tree_write("card0/device/ras/gpu_vram_bad_pages", "0x00012345 : 0x00001000 : R\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_ptr_nonnull(told_of(HBM_FACT_DEVICE_GONE, CARD0, 0));
	ck_assert_ptr_nonnull(told_of(HBM_FACT_DEVICE_SEEN, CARD0, 0));
	ck_assert_uint_eq(told_of(HBM_FACT_HEALTH, CARD0, 0)->state, HBMGUARD_HEALTH_OK);

	nr_told = 0;
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00000001 : 0x00001000 : F\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(told_of(HBM_FACT_HEALTH, CARD0, 0)->state, HBMGUARD_HEALTH_RMA);
	nr_told = 0;
	tree_write("card0/device/ras/gpu_vram_bad_pages", "0x00000777 : 0x00001000 : R\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(told_of(HBM_FACT_HEALTH, CARD0, 0)->state, HBMGUARD_HEALTH_OK);
	amdgpu_facts_stop(s);
}
END_TEST

/*
 * Counts of the blocks read: one whose query fails (for good, or in
 * reset) is left out of the total until it reads, then the total is given
 * again with it (helper-154: one such block hid every count).
 */
START_TEST(source_counts_of_the_blocks_read)
{
	struct amdgpu_facts *s = start();
	const struct hbm_fact *f;

	nr_told = 0;
	tree_write("card2/device/ras/umc_err_count", "ue: 4\nce: 9\nde: 2\n");
	tree_write("card2/device/ras/gfx_err_count", "Query currently inaccessible\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	f = told_of(HBM_FACT_HEALTH, CARD2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->driver.have, HBM_DRIVER_ECC);
	ck_assert_uint_eq(f->driver.ue, 4 + 2);
	ck_assert_uint_eq(f->driver.ce, 9);
	nr_told = 0;
	tree_write("card2/device/ras/gfx_err_count", "ue: 1\nce: 2\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 1);
	f = told_of(HBM_FACT_HEALTH, CARD2, 0);
	ck_assert_uint_eq(f->driver.ue, 4 + 2 + 1);
	ck_assert_uint_eq(f->driver.ce, 9 + 2);
	nr_told = 0;
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 0);
	amdgpu_facts_stop(s);
}
END_TEST

START_TEST(source_malformed_tells_nothing)
{
	struct amdgpu_facts *s = start();

	nr_told = 0;
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00099999 : 0x00001000 : Z\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 0);		/* not gone either: still there */
	tree_write("card0/device/ras/gpu_vram_bad_pages",
		   "0x00012345 : 0x00001000 : R\n0x00012346 : 0x00001000 : R\n"
		   "0x0007fffe : 0x00001000 : P\n0x00000001 : 0x00001000 : F\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_uint_eq(nr_told, 0);
	/* another GPU under card2's name: the old one is gone, the new one seen */
	tree_write("card2/device/unique_id", "00000000000000aa\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_ptr_nonnull(told_of(HBM_FACT_DEVICE_GONE, CARD2, 0));
	ck_assert_uint_eq(told_of(HBM_FACT_DEVICE_SEEN, "amdgpu-00000000000000aa", 0)->sync,
			  HBM_SYNC_ADDED);
	amdgpu_facts_stop(s);
}
END_TEST

/*
 * amdgpu_get_unique_id() (drivers/gpu/drm/amd/pm/amdgpu_pm.c, 6.1 and 6.12)
 * returns -EPERM while the GPU is in reset (amdgpu_in_reset()) or suspended;
 * amdgpu resets a GPU after a UE, or after a job timeout a user's hung queue
 * causes.  The card is the same GPU all along: no GONE, no second GPU named
 * by its slot.  (A directory stands for the file whose read() fails.)
 */
START_TEST(source_unique_id_unreadable_in_reset)
{
	struct amdgpu_facts *s = start();
	char cmd[256];

	nr_told = 0;
	snprintf(cmd, sizeof(cmd), "rm %s/card0/device/unique_id && mkdir %s/card0/device/unique_id",
		 tree, tree);
	ck_assert_int_eq(system(cmd), 0);
	tree_write("card0/device/ras/umc_err_count", "Query currently inaccessible\n");
	ck_assert_int_eq(amdgpu_facts_poll(s), 0);
	ck_assert_ptr_null(told_of(HBM_FACT_DEVICE_GONE, CARD0, 0));
	ck_assert_ptr_null(told_of(HBM_FACT_DEVICE_SEEN, "amdgpu-pci-0000:c1:00.0", 0));
	ck_assert_uint_eq(nr_told, 0);
	amdgpu_facts_stop(s);
}
END_TEST

Suite *amdgpu_suite(void)
{
	Suite *s = suite_create("amdgpu");
	TCase *tc = tcase_create("core");
	TCase *src = tcase_create("source");

	tcase_add_test(tc, fixture_cards);
	tcase_add_test(tc, bad_pages_malformed);
	tcase_add_test(tc, err_count_malformed);
	tcase_add_test(tc, read_names_the_file);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(src, tree_setup, tree_teardown);
	tcase_add_test(src, source_at_start);
	tcase_add_test(src, source_hears_what_changed);
	tcase_add_test(src, source_long_list_tells_what_changed);
	tcase_add_test(src, source_malformed_tells_nothing);
	tcase_add_test(src, source_unique_id_unreadable_in_reset);
	tcase_add_test(src, source_err_count_unreadable_blinds_one_block);
	tcase_add_test(src, source_short_list_read_keeps_the_rest);
	tcase_add_test(src, source_counts_told_once_readable);
	tcase_add_test(src, source_card_made_anew_is_not_padded);
	tcase_add_test(src, source_counts_of_the_blocks_read);
	suite_add_tcase(s, src);
	return s;
}
