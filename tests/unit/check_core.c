// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of hbmguardd's core (daemon/core.c) and the store's read of a
 * table (daemon/store.c): only the source says a device went away, a fact
 * from inside a sink is refused, and a device seen is saved from the one
 * read of its table that follows its DEVICE_SEEN.  The source is a table
 * in this file, behind the same struct hbm_source_ops the kernel link fills.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "../../daemon/core.h"	/* "core.h" alone is the module's table */
#include "daemon.h"
#include "state.h"
#include "store.h"
#include "unit.h"

/* The source: its devices, one table, and what was asked of it. */
static struct device_list listed;
static struct hbm_state_record table[4];
static size_t table_nr;
static int dumps, restores, dump_err, change_err;
static uint64_t dump_seqnum;	/* the module's last event when a dump begins */

static int fake_list(void *ctx, struct device_list *l)
{
	(void)ctx;
	*l = listed;
	return 0;
}

static int fake_dump(void *ctx, const struct device *dev, struct hbm_extents *x)
{
	size_t i;

	(void)ctx;
	(void)dev;
	dumps++;
	for (i = 0; i < table_nr; i++)
		hbm_extents_push(x, &table[i]);
	x->seqnum = dump_seqnum;
	return dump_err;
}

/*
 * As kernel.c's restore_stored(): @stored kept (k->restored) until the
 * TABLE_READ of the device's read whose DEVICE_SEEN this restore is, which
 * reads it (hbm_state_cover()) to mark what it restored KNOWN; a restore
 * outside a read (an owed one) is not kept.
 */
static const struct hbm_state *kept_restored;
static int restores_outside_read;
static struct hbm_store store;
static struct hbm_state_record sent[8];	/* the last restore's records, the first 8 */
static size_t nr_sent;

static void fake_restore(void *ctx, const struct device *dev, const struct hbm_state *stored)
{
	(void)ctx;
	(void)dev;
	restores += stored->nr != 0;
	nr_sent = stored->nr;
	if (stored->nr)
		memcpy(sent, stored->records, (stored->nr < 8 ? stored->nr : 8) * sizeof(*sent));
	if (stored->nr && store.reading.active)
		kept_restored = stored;
	restores_outside_read += stored->nr && !store.reading.active;
}

/* A CLEAR takes the page out of the table, a RETIRE puts it in. */
static int fake_change(void *ctx, const struct device *dev, uint16_t type,
		       const struct hbm_ctl_extent *x)
{
	size_t i, n = 0;

	(void)ctx;
	(void)dev;
	if (change_err)
		return change_err;	/* nothing changed, as the module's errors */
	if (type == HBM_CTL_RETIRE) {
		ck_assert_uint_lt(table_nr, sizeof(table) / sizeof(table[0]));
		table[table_nr++] = (struct hbm_state_record){
			.offset = x->offset, .length = x->length, .first_seen = 333,
			.last_seen = 333, .state = HBMGUARD_STATE_RETIRED,
			.source = HBMGUARD_SOURCE_ADMIN,
		};
		return 0;
	}
	if (type == HBM_CTL_CLEAR)
		for (i = 0; i < table_nr; i++)
			if (table[i].offset != x->offset)
				table[n++] = table[i];
	if (type == HBM_CTL_CLEAR)
		table_nr = n;
	return 0;
}

static const struct hbm_source_ops fake_ops = {
	.origin = HBM_FROM_KERNEL, .list = fake_list, .dump = fake_dump,
	.restore = fake_restore, .change = fake_change,
};

/* A sink that keeps what it was given, and may try to speak itself. */
static struct hbm_fact got[16];
static size_t nr_got;
static struct hbm_source_link src_link;
static int sink_speaks;		/* how many more facts the sink gives */

static void recorder(void *ctx, const struct hbm_fact *f)
{
	(void)ctx;
	if (nr_got < 16)
		got[nr_got++] = *f;
	if (sink_speaks && sink_speaks--)
		src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_RESYNC });
}

static struct hbmd_core core;

static void add_device(uint32_t id, const char *identity)
{
	struct device *dev = &listed.dev[listed.nr++];

	*dev = (struct device){ .id = id, .page_size = 4096 };
	snprintf(dev->identity, sizeof(dev->identity), "%s", identity);
}

static void setup(void)
{
	memset(&listed, 0, sizeof(listed));
	table_nr = 0;
	dumps = restores = dump_err = change_err = 0;
	kept_restored = NULL;
	restores_outside_read = 0;
	nr_sent = 0;
	dump_seqnum = 0;
	nr_got = 0;
	sink_speaks = 0;
	core_init(&core, &fake_ops, NULL);
	ck_assert_int_eq(core_add_sink(&core, &(struct hbm_sink){ .name = "recorder",
								.fact = recorder }), 0);
	src_link = core_link(&core);
}

START_TEST(only_the_source_says_gone)
{
	struct device_list l;

	add_device(0, "sim:a");
	add_device(1, "sim:b");
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	ck_assert_uint_eq(core_count_devices(&core), 2);
	listed.nr = 1;				/* sim:b went away */
	ck_assert_int_eq(core_devices(&core, &l), 0);
	ck_assert_uint_eq(l.nr, 1);
	ck_assert_uint_eq(nr_got, 0);		/* a sink's question is a read */
	ck_assert_uint_eq(core_count_devices(&core), 2);
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	ck_assert_uint_eq(nr_got, 1);
	ck_assert_uint_eq(got[0].type, HBM_FACT_DEVICE_GONE);
	ck_assert_uint_eq(got[0].dev.id, 1);
	ck_assert_str_eq(got[0].dev.identity, "sim:b");
	ck_assert_str_eq(core_identity(&core, 1), "");
}
END_TEST

START_TEST(an_id_naming_another_device_is_a_device_gone)
{
	struct device_list l;

	add_device(3, "sim:old");
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	snprintf(listed.dev[0].identity, sizeof(listed.dev[0].identity), "sim:new");
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	ck_assert_uint_eq(nr_got, 1);
	ck_assert_uint_eq(got[0].type, HBM_FACT_DEVICE_GONE);
	ck_assert_str_eq(got[0].dev.identity, "sim:old");
	ck_assert_str_eq(core_identity(&core, 3), "sim:new");
}
END_TEST

START_TEST(a_gone_fact_forgets_the_name)
{
	struct device_list l;

	add_device(2, "sim:c");
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_DEVICE_GONE, .dev.id = 2 });
	ck_assert_uint_eq(nr_got, 1);
	ck_assert_str_eq(got[0].dev.identity, "sim:c");	/* named for the sinks */
	ck_assert_str_eq(core_identity(&core, 2), "");
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	ck_assert_uint_eq(nr_got, 1);			/* not said twice */
}
END_TEST

/* A GPU's error heard by its driver's source reaches its module device. */
START_TEST(an_error_by_identity_is_the_module_devices)
{
	struct device_list l;

	add_device(4, "GPU-a");
	ck_assert_int_eq(src_link.devices(src_link.core, &l), 0);
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_ERROR,
						      .origin = HBM_FROM_NVML,
						      .dev = { .id = HBM_NO_DEVICE_ID,
							       .identity = "GPU-a" } });
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_ERROR,
						      .origin = HBM_FROM_NVML,
						      .dev = { .id = HBM_NO_DEVICE_ID,
							       .identity = "GPU-b" } });
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_PAGES,
						      .origin = HBM_FROM_NVML,
						      .dev = { .id = HBM_NO_DEVICE_ID,
							       .identity = "GPU-a" } });
	ck_assert_uint_eq(nr_got, 3);
	ck_assert_uint_eq(got[0].dev.id, 4);
	ck_assert_uint_eq(got[1].dev.id, HBM_NO_DEVICE_ID);	/* not the module's */
	ck_assert_uint_eq(got[2].dev.id, HBM_NO_DEVICE_ID);	/* the registrar's to record */
}
END_TEST

/* A fact given by a sink comes after the one the sinks take, to all in order. */
START_TEST(a_fact_from_a_sink_comes_after)
{
	sink_speaks = 1;
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_EVENT,
						  .event = HBMGUARD_EVENT_POLICY });
	ck_assert_uint_eq(nr_got, 2);
	ck_assert_uint_eq(got[0].type, HBM_FACT_EVENT);
	ck_assert_uint_eq(got[1].type, HBM_FACT_RESYNC);
	ck_assert_uint_eq(core.resyncs, 1);
	ck_assert_uint_eq(core.nr_queued, 0);

	/* one that speaks at every fact: bounded */
	nr_got = 0;
	sink_speaks = 100;
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_EVENT,
						  .event = HBMGUARD_EVENT_POLICY });
	ck_assert_uint_eq(nr_got, 1 + HBM_QUEUED_FACTS);
	ck_assert_uint_eq(core.nr_queued, 0);
}
END_TEST

/* The store, its state files in a directory of this test's own. */
static struct daemon d;
static char dir[64];

static void store_setup(void)
{
	setup();
	memset(&d, 0, sizeof(d));
	memset(&store, 0, sizeof(store));
	strcpy(dir, "/tmp/hbm-core-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	d.state_dir = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(d.state_dir, 0);
	d.store = &store;
	store_start(&store, &d, &core, NULL);
	ck_assert_int_eq(core_add_sink(&core, &(struct hbm_sink){ .name = "store",
								.fact = store_fact,
								.ctx = &store }), 0);
}

static void store_teardown(void)
{
	char cmd[96];

	store_stop(&store);
	close(d.state_dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static const struct hbm_state_record bad_page = {
	.offset = 0x9000, .length = 0x1000, .first_seen = 111, .last_seen = 222,
	.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE, .errors = 1,
};

/* seen(): its PAGES known (restored just before); the first seen_known_nr only, if set */
static bool seen_known;
static size_t seen_known_nr;

static void seen(enum hbm_sync why, size_t pages, uint32_t flags)
{
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_SEEN, .sync = why,
			      .dev = { .id = 0, .identity = "sim:s", .page_size = 4096 } };
	size_t i;

	src_link.fact(src_link.core, &f);
	if (kept_restored) {	/* table_facts(): hbm_state_cover() walks it */
		volatile uint64_t first = kept_restored->records[0].offset;

		(void)first;
	}
	f.type = HBM_FACT_PAGES;
	f.flags = HBM_FACT_UNHEARD;
	for (i = 0; i < pages; i++) {
		f.offset = table[i].offset;
		f.length = table[i].length;
		f.state = table[i].state;
		f.source = table[i].source;
		f.count = table[i].errors;
		f.first_seen = table[i].first_seen;
		f.last_seen = table[i].last_seen;
		f.flags = HBM_FACT_UNHEARD |
			  (seen_known && (!seen_known_nr || i < seen_known_nr) ? HBM_FACT_KNOWN : 0);
		f.restored = f.flags & HBM_FACT_KNOWN ? f.state : HBMGUARD_STATE_CLEAN;
		src_link.fact(src_link.core, &f);
	}
	f = (struct hbm_fact){ .type = HBM_FACT_TABLE_READ, .flags = flags, .sync = why,
			       .error = flags & HBM_FACT_INCOMPLETE ? -ENOBUFS : 0,
			       .dev = { .id = 0, .identity = "sim:s" } };
	src_link.fact(src_link.core, &f);
	kept_restored = NULL;	/* k->restored = NULL after the TABLE_READ */
}

START_TEST(a_device_seen_is_saved_from_its_one_read)
{
	struct hbm_state_damage damage;
	struct hbm_state s;

	add_device(0, "sim:s");
	table[table_nr++] = bad_page;
	seen(HBM_SYNC_START, 1, 0);
	ck_assert_int_eq(dumps, 0);		/* the facts were the read */
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_uint_eq(s.records[0].offset, 0x9000);
	ck_assert_uint_eq(s.records[0].first_seen, 111);
	ck_assert_uint_eq(s.records[0].last_seen, 222);
	ck_assert_uint_eq(s.records[0].source, HBMGUARD_SOURCE_UE);
	ck_assert_uint_eq(s.serial, 1);
	ck_assert_uint_eq(store.stored_pages[0], 1);
	hbm_state_free(&s);

	/* Seen again (the module came back): what was stored goes back in. */
	seen(HBM_SYNC_ADDED, 0, 0);
	ck_assert_int_eq(restores, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 1);		/* kept: only ever added to */
	ck_assert_uint_eq(s.serial, 1);		/* the union already: not written again */
	hbm_state_free(&s);
	ck_assert_uint_eq(store_unsaved(&store, NULL), 0);
}
END_TEST

/*
 * A table read that holds only what the store restored (facts KNOWN) and a
 * file that is a snapshot alone: the file is the union already, not
 * written again; its log goes on after it.  A page the table has beyond
 * them is news: a snapshot of the union.
 */
START_TEST(a_read_of_what_was_restored_writes_nothing)
{
	struct hbm_state_damage damage;
	struct hbm_state s;

	add_device(0, "sim:s");
	table[table_nr++] = bad_page;
	seen(HBM_SYNC_START, 1, 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.serial, 1);
	hbm_state_free(&s);

	seen_known = true;	/* restored, then read back */
	seen(HBM_SYNC_ADDED, 1, 0);
	ck_assert_int_eq(restores, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_uint_eq(s.serial, 1);		/* not written again */
	ck_assert_uint_eq(s.records[0].source, HBMGUARD_SOURCE_UE);
	hbm_state_free(&s);
	ck_assert_uint_eq(store.stored_pages[0], 1);
	ck_assert_uint_eq(store_unsaved(&store, NULL), 0);
	ck_assert(store.saves[0].log.open);	/* changes go after it */
	ck_assert_uint_eq(store.saves[0].log.serial, 1);

	table[table_nr++] = (struct hbm_state_record){	/* one more, not restored */
		.offset = 0x20000, .length = 0x1000, .state = HBMGUARD_STATE_RETIRED,
		.source = HBMGUARD_SOURCE_POISON,
	};
	seen_known_nr = 1;	/* the first is known, the second news */
	seen(HBM_SYNC_ADDED, 2, 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 2);
	ck_assert_uint_eq(s.serial, 2);		/* a snapshot of the union */
	ck_assert_uint_eq(s.records[1].source, HBMGUARD_SOURCE_POISON);
	hbm_state_free(&s);
	seen_known = false;
	seen_known_nr = 0;
}
END_TEST

/*
 * A stored record the module splits (fewer spares now: part retired as
 * stored, part failed): the part read back as stored is not saved again,
 * and must not be lost from the file when the changed part is.
 */
START_TEST(a_stored_record_split_by_the_module_keeps_its_unchanged_part)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_SEEN, .sync = HBM_SYNC_ADDED,
			      .dev = { .id = 0, .identity = "sim:s", .page_size = 4096 } };
	uint64_t pages = 0, failed = 0;
	size_t i;

	add_device(0, "sim:s");
	table[table_nr++] = (struct hbm_state_record){ .offset = 0x10000, .length = 0x4000,
		.state = HBMGUARD_STATE_RETIRED, .source = HBMGUARD_SOURCE_UE, .errors = 1 };
	seen(HBM_SYNC_START, 1, 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 1);
	hbm_state_free(&s);

	src_link.fact(src_link.core, &f);
	f.type = HBM_FACT_PAGES;
	f.source = HBMGUARD_SOURCE_UE;
	f.flags = HBM_FACT_UNHEARD | HBM_FACT_KNOWN;	/* as stored */
	f.offset = 0x10000;
	f.length = 0x2000;
	f.state = HBMGUARD_STATE_RETIRED;
	src_link.fact(src_link.core, &f);
	f.flags = HBM_FACT_UNHEARD;			/* changed: no spare */
	f.offset = 0x12000;
	f.state = HBMGUARD_STATE_FAILED;
	src_link.fact(src_link.core, &f);
	f = (struct hbm_fact){ .type = HBM_FACT_TABLE_READ, .sync = HBM_SYNC_ADDED,
			       .dev = { .id = 0, .identity = "sim:s" } };
	src_link.fact(src_link.core, &f);

	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	for (i = 0; i < s.nr; i++) {
		pages += s.records[i].length / 0x1000;
		if (s.records[i].state == HBMGUARD_STATE_FAILED)
			failed += s.records[i].length / 0x1000;
	}
	ck_assert_uint_eq(s.records[0].offset, 0x10000);
	hbm_state_free(&s);
	ck_assert_uint_eq(pages, 4);
	ck_assert_uint_eq(failed, 2);
}
END_TEST

START_TEST(a_read_that_failed_is_saved_from_a_dump)
{
	struct hbm_state_damage damage;
	struct hbm_state s;

	add_device(0, "sim:s");
	table[table_nr++] = bad_page;
	seen(HBM_SYNC_START, 0, HBM_FACT_INCOMPLETE);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), -ENOENT);
	ck_assert(store.saves[0].dirty);
	ck_assert_int_eq(store.saves[0].error, -ENOBUFS);	/* the read's */
	ck_assert_uint_eq(store_unsaved(&store, NULL), 1);	/* NOT SAVED in the status */
	ck_assert_int_eq(dumps, 0);
}
END_TEST

START_TEST(a_resync_puts_back_what_the_kernel_lacks)
{
	add_device(0, "sim:s");
	table[table_nr++] = bad_page;
	seen(HBM_SYNC_START, 1, 0);
	ck_assert_int_eq(restores, 0);		/* nothing stored yet */
	seen(HBM_SYNC_RESYNC, 0, 0);		/* its table came back empty */
	ck_assert_int_eq(restores, 1);
	seen(HBM_SYNC_RESYNC, 1, 0);		/* whole: nothing to put back */
	ck_assert_int_eq(restores, 1);
}
END_TEST

static int noop(sd_event_source *src, void *arg)
{
	(void)src;
	(void)arg;
	return 0;
}

/* One turn of the loop: something to dispatch, then the post sources (the saves). */
/*
 * The store on a loop of its own, for tests that run its turns; the
 * teardown's store_stop() then finds it stopped.
 */
static sd_event *store_loop(void)
{
	sd_event *loop;

	ck_assert_int_ge(sd_event_new(&loop), 0);
	d.loop = loop;
	ck_assert_int_ge(store_watch(&store), 0);
	return loop;
}

static void store_loop_end(sd_event *loop)
{
	store_stop(&store);
	memset(&store, 0, sizeof(store));
	d.loop = sd_event_unref(loop);
}

/* Names in directory @dirfd that begin with @prefix; the last one's stat in @st. */
static int count_prefixed(int dirfd, const char *prefix, struct stat *st)
{
	DIR *dir = fdopendir(openat(dirfd, ".", O_RDONLY | O_DIRECTORY));
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	while ((e = readdir(dir)))
		if (!strncmp(e->d_name, prefix, strlen(prefix))) {
			ck_assert_int_eq(fstatat(dirfd, e->d_name, st, AT_SYMLINK_NOFOLLOW), 0);
			n++;
		}
	closedir(dir);
	return n;
}

static void one_turn(sd_event *loop)
{
	sd_event_source *kick;
	int i;

	ck_assert_int_ge(sd_event_add_defer(loop, &kick, noop, NULL), 0);
	ck_assert_int_ge(sd_event_source_set_enabled(kick, SD_EVENT_ONESHOT), 0);
	for (i = 0; i < 10 && sd_event_run(loop, 0) > 0; i++)
		;
	sd_event_source_unref(kick);
}

/*
 * The store on a loop, device 0 seen with one page (bad_page): its file a
 * snapshot, its log open.
 */
static sd_event *stored_one_page(void)
{
	sd_event *loop = store_loop();

	add_device(0, "sim:s");
	table[table_nr++] = bad_page;
	seen(HBM_SYNC_START, 1, 0);
	return loop;
}

/* Device 0's file, its header overwritten: damaged.  Return: its stat then. */
static struct stat damage_header(void)
{
	struct stat st;
	char name[256];
	int fd;

	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	fd = openat(d.state_dir, name, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "damaged", 7, 0), 7);
	ck_assert_int_eq(fstat(fd, &st), 0);
	close(fd);
	return st;
}

static void heard_numbered(uint64_t offset, uint64_t seqnum)
{
	src_link.fact(src_link.core, &(struct hbm_fact){
		.type = HBM_FACT_PAGES, .event = HBMGUARD_EVENT_RETIRED,
		.origin = HBM_FROM_KERNEL, .seqnum = seqnum,
		.dev = { .id = 0, .identity = "sim:s" }, .offset = offset,
		.length = 0x1000, .source = HBMGUARD_SOURCE_UE, .count = 1 });
}

static void heard_retired(uint64_t offset)
{
	heard_numbered(offset, 0);
}

/*
 * Heard changes go onto the file's log, one fdatasync a turn, no dump; a
 * turn that heard too many makes a snapshot from a dump; a log past its
 * bound is compacted by a child while the loop goes on.
 */
START_TEST(heard_changes_are_logged_and_compacted)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	uint64_t fsyncs, serial;
	sd_event *loop;
	size_t i;
	int turns;

	loop = stored_one_page();		/* the snapshot */
	fsyncs = hbm_state_fsyncs;
	for (i = 0; i < 3; i++)
		heard_retired(0x10000 + i * 0x1000);
	one_turn(loop);
	ck_assert_uint_eq(hbm_state_fsyncs, fsyncs + 1);	/* one for the turn */
	ck_assert_int_eq(dumps, 0);
	ck_assert_uint_eq(store.counters.logged, 3);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage) && !damage.torn_bytes);
	ck_assert_uint_eq(s.snapshot_nr, 1);
	ck_assert_uint_eq(s.log_nr, 3);
	ck_assert_uint_eq(s.nr, 4);
	ck_assert_uint_eq(s.records[1].offset, 0x10000);
	ck_assert_uint_eq(s.records[1].state, HBMGUARD_STATE_RETIRED);
	ck_assert_uint_eq(store.stored_pages[0], 4);
	serial = s.serial;
	hbm_state_free(&s);

	/* more than a turn's list: a snapshot, from a dump */
	for (i = 0; i < STORE_TURN_HEARD + 1; i++)
		heard_retired(0x100000 + i * 0x1000);
	one_turn(loop);
	ck_assert_int_eq(dumps, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.serial, serial + 1);
	ck_assert_uint_eq(s.log_nr, 0);
	hbm_state_free(&s);

	/* a log longer than its snapshot and than compact_min: compacted */
	store.compact_min = 0;
	for (i = 0; i < 8; i++)	/* 8 records: longer than the 4 of the snapshot */
		heard_retired(0x200000 + i * 0x1000);
	one_turn(loop);
	ck_assert(store.compacting.pid > 0);
	heard_retired(0x300000);		/* while the child works, most likely */
	one_turn(loop);
	for (turns = 0; store.compacting.pid && turns < 1000; turns++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	ck_assert_uint_eq(store.counters.compactions, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage) && !damage.torn_bytes);
	ck_assert_uint_eq(s.serial, serial + 2);
	ck_assert_uint_eq(s.log_nr, 1);		/* what came after the fork, in either order */
	ck_assert_uint_eq(s.nr, 1 + 3 + 8 + 1);	/* the 65: the fake kernel's dump lacked them */
	hbm_state_free(&s);
	ck_assert_uint_eq(store.counters.logged, 3 + 8 + 1);
	store_loop_end(loop);
}
END_TEST

/* Whether device @identity's file reads whole, undamaged, and holds a page at @offset. */
static bool file_of_has(const char *identity, uint64_t offset)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	bool has = false;
	size_t i;

	ck_assert_int_eq(hbm_state_read(d.state_dir, identity, 0, &s, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage) && !damage.torn_bytes);
	for (i = 0; i < s.nr; i++)
		if (s.records[i].offset <= offset && offset - s.records[i].offset < s.records[i].length)
			has = true;
	hbm_state_free(&s);
	return has;
}

static bool file_has(uint64_t offset)
{
	return file_of_has("sim:s", offset);
}

/* What the store owes device @identity: a restore, clears to write. */
static bool owes_restore(const char *identity)
{
	size_t i;

	for (i = 0; i < store.nr_owed; i++)
		if (!strcmp(store.owed[i].identity, identity))
			return store.owed[i].restore;
	return false;
}

static size_t owes_clears(const char *identity)
{
	size_t i;

	for (i = 0; i < store.nr_owed; i++)
		if (!strcmp(store.owed[i].identity, identity))
			return store.owed[i].nr_cleared;
	return 0;
}

/* The store's retries run until every file is saved (a few seconds at most). */
static void retried_until_saved(sd_event *loop)
{
	int i;

	for (i = 0; i < 50 && store_unsaved(&store, NULL); i++)
		ck_assert_int_ge(sd_event_run(loop, 200000), 0);
	ck_assert_uint_eq(store_unsaved(&store, NULL), 0);
}

/*
 * Page 0x5000 retired by the kernel at #5, its event not read yet; an
 * operator clears it (#6), answered once a snapshot without it is on disk;
 * then #5 is read: the snapshot's dump began after #6, so it is not logged
 * after it, which would bring the page back at the next start.  A dump
 * whose events are not known (STATS_GET failed: kernel.c's dump_pages()
 * fails) is no snapshot: the clear is then not acknowledged as saved
 * (-EINPROGRESS: done in the kernel only).
 * Return: store_apply()'s answer; *has_5000: whether the file holds the page.
 */
static int clear_then_late_event(int dump_fails, bool *has_5000)
{
	struct hbm_ctl_extent x = { .identity = "sim:s", .offset = 0x5000, .length = 0x1000 };
	sd_event *loop;
	int answer;

	loop = stored_one_page();
	table[table_nr] = bad_page;
	table[table_nr++].offset = 0x5000;
	dump_seqnum = 4;
	heard_numbered(bad_page.offset, 4);
	one_turn(loop);				/* a file holding 0x5000? not yet */
	dump_seqnum = 6;
	dump_err = dump_fails;
	answer = store_apply(&store, HBM_CTL_CLEAR, &x);
	dump_err = 0;
	one_turn(loop);
	heard_numbered(0x5000, 5);		/* #5 read now */
	one_turn(loop);
	*has_5000 = file_has(0x5000);
	store_loop_end(loop);
	return answer;
}

START_TEST(a_cleared_page_stays_cleared_though_its_event_comes_late)
{
	bool has;

	ck_assert_int_eq(clear_then_late_event(0, &has), 0);
	ck_assert_msg(!has, "cleared page 0x5000 is back in the state file");
}
END_TEST

START_TEST(a_clear_whose_dump_fails_is_not_acknowledged_as_saved)
{
	bool has;

	ck_assert_int_eq(clear_then_late_event(-EIO, &has), -EINPROGRESS);
}
END_TEST

/* Device 0 stored with 0x9000, named @identity, which clears it and cannot save. */
static sd_event *stored_and_a_clear_unsaved(const char *identity)
{
	struct hbm_ctl_extent x = { .offset = 0x9000, .length = 0x1000 };
	sd_event *loop = stored_one_page();

	snprintf(x.identity, sizeof(x.identity), "%s", identity);
	snprintf(listed.dev[0].identity, sizeof(listed.dev[0].identity), "%s", identity);
	dump_err = -EIO;
	ck_assert_int_eq(store_apply(&store, HBM_CTL_CLEAR, &x), -EINPROGRESS);
	dump_err = 0;
	return loop;
}

/*
 * A clear the kernel made whose save failed (the dump, here; ENOSPC or EIO
 * alike) is not acknowledged, and the retry that saves the device leaves
 * the cleared page out: the file must not bring back at the next start
 * what the kernel no longer has.
 */
START_TEST(a_clear_whose_save_fails_is_saved_by_the_retry)
{
	sd_event *loop = stored_and_a_clear_unsaved("sim:s");

	ck_assert_uint_eq(table_nr, 0);		/* the kernel cleared it */
	ck_assert(file_has(0x9000));		/* not yet saved */
	retried_until_saved(loop);
	ck_assert(!file_has(0x9000));
	ck_assert_uint_eq(owes_clears("sim:s"), 0);
	store_loop_end(loop);
}
END_TEST

/*
 * An operator's retire the kernel took whose save failed answers so
 * (-EINPROGRESS: done, not on disk yet), not as a refusal, and the retry
 * saves it; one the kernel refuses answers the kernel's error, nothing
 * done and nothing unsaved.
 */
START_TEST(a_retire_whose_save_fails_is_done_not_refused)
{
	struct hbm_ctl_extent x = { .identity = "sim:s", .offset = 0x7000, .length = 0x1000 };
	sd_event *loop = stored_one_page();

	change_err = -EINVAL;
	ck_assert_int_eq(store_apply(&store, HBM_CTL_RETIRE, &x), -EINVAL);
	change_err = 0;
	ck_assert_uint_eq(table_nr, 1);
	ck_assert_uint_eq(store_unsaved(&store, NULL), 0);
	dump_err = -EIO;
	ck_assert_int_eq(store_apply(&store, HBM_CTL_RETIRE, &x), -EINPROGRESS);
	dump_err = 0;
	ck_assert_uint_eq(table_nr, 2);		/* the kernel has it */
	ck_assert_uint_eq(store_unsaved(&store, NULL), 1);
	ck_assert(!file_has(0x7000));
	retried_until_saved(loop);
	ck_assert(file_has(0x7000));
	store_loop_end(loop);
}
END_TEST

/* A clear the kernel refuses changes nothing: neither the file nor what is kept to forget. */
START_TEST(a_clear_the_kernel_refuses_changes_nothing)
{
	struct hbm_ctl_extent x = { .identity = "sim:s", .offset = 0x9000, .length = 0x1000 };
	struct hbm_state_damage damage;
	struct hbm_state before, after;
	sd_event *loop;

	loop = stored_one_page();
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &before, &damage), 0);
	change_err = -ERANGE;
	ck_assert_int_eq(store_apply(&store, HBM_CTL_CLEAR, &x), -ERANGE);
	change_err = 0;
	ck_assert_uint_eq(owes_clears("sim:s"), 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &after, &damage), 0);
	ck_assert_uint_eq(after.serial, before.serial);
	ck_assert_uint_eq(after.nr, 1);
	hbm_state_free(&before);
	hbm_state_free(&after);
	heard_retired(0x10000);			/* and the log goes on */
	one_turn(loop);
	ck_assert_uint_eq(store.counters.logged, 1);
	ck_assert(file_has(0x9000) && file_has(0x10000));
	store_loop_end(loop);
}
END_TEST

/*
 * A file found damaged is moved aside; what it held of good, with nothing
 * in the kernel's table, leaves no new file.  The changes after must then
 * make one, not go on into the log of the one moved aside, which no start
 * reads.
 */
START_TEST(a_file_moved_aside_is_no_longer_appended_to)
{
	struct hbm_state_damage damage;
	struct hbm_state st;
	struct stat damaged, aside;
	sd_event *loop;

	loop = stored_one_page();		/* a snapshot, its log open */
	damaged = damage_header();
	table_nr = 0;
	/* an event over pages of other states: saved from a dump */
	src_link.fact(src_link.core, &(struct hbm_fact){
		.type = HBM_FACT_PAGES, .event = HBMGUARD_EVENT_RETIRED,
		.origin = HBM_FROM_KERNEL, .seqnum = 7,
		.dev = { .id = 0, .identity = "sim:s" }, .offset = 0x20000,
		.length = 0x2000, .source = HBMGUARD_SOURCE_UE, .count = 1 });
	one_turn(loop);
	/* nothing of it trusted: replaced by an empty snapshot */
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &st, &damage), 0);
	ck_assert_uint_eq(st.nr, 0);
	hbm_state_free(&st);
	table[table_nr] = bad_page;
	table[table_nr++].offset = 0x9000;
	heard_numbered(0x9000, 8);
	one_turn(loop);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &st, &damage), 0);
	ck_assert_uint_eq(st.nr, 1);
	hbm_state_free(&st);
	/* the damaged file, kept aside, as it was */
	ck_assert_int_eq(count_prefixed(d.state_dir, "sim:s.state.corrupt-", &aside), 1);
	ck_assert_uint_eq(aside.st_ino, damaged.st_ino);
	ck_assert_uint_eq(aside.st_size, damaged.st_size);
	store_loop_end(loop);
}
END_TEST

/*
 * Under @name, a file the reader does not take (past hbm_read_file()'s
 * 512 MiB, sparse: -EFBIG), as one it cannot read for ENOMEM or EIO: not
 * damaged (a directory or a link there is, and is moved aside).
 */
static void unreadable(const char *name)
{
	int fd = openat(d.state_dir, name, O_WRONLY | O_CREAT | O_EXCL, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)513 << 20), 0);
	close(fd);
}

/*
 * A file that cannot be read (here one past what the reader takes; ENOMEM,
 * EIO) is not a damaged one: it stays where it is, and no save is made
 * without what it holds.
 */
START_TEST(a_file_not_read_is_not_moved_aside)
{
	struct stat st;
	char name[256];
	sd_event *loop;

	loop = store_loop();
	add_device(0, "sim:s");
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	unreadable(name);
	table[table_nr++] = bad_page;
	seen(HBM_SYNC_START, 1, 0);
	one_turn(loop);
	ck_assert_int_eq(fstatat(d.state_dir, name, &st, 0), 0);
	ck_assert_int_eq(st.st_size, (off_t)513 << 20);
	ck_assert_int_eq(count_prefixed(d.state_dir, "sim:s.state.corrupt-", &st), 0);
	ck_assert_int_eq(restores, 0);
	ck_assert_int_eq(store.saves[0].error, -EFBIG);	/* unsaved, retried */
	ck_assert_int_eq(unlinkat(d.state_dir, name, 0), 0);
	store_loop_end(loop);
}
END_TEST

/*
 * A file that cannot be read when its device is seen (unreadable(): the
 * read fails as EIO or ENOMEM would), which can be read again:
 * the store owes the device its restore.
 */
static sd_event *file_of_read_late(uint64_t length)
{
	struct hbm_state_record rec = bad_page;
	struct hbm_state st = { .identity = "sim:s", .page_size = 4096, .serial = 1,
				.records = &rec, .nr = 1 };
	char name[256];
	sd_event *loop;

	rec.length = length;
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	ck_assert_int_eq(hbm_state_write(d.state_dir, &st), 0);
	ck_assert_int_eq(renameat(d.state_dir, name, d.state_dir, "kept"), 0);
	unreadable(name);
	loop = store_loop();
	add_device(0, "sim:s");
	seen(HBM_SYNC_START, 0, 0);		/* the module reloaded: an empty table */
	ck_assert_int_eq(restores, 0);
	ck_assert(owes_restore("sim:s"));
	ck_assert_int_ne(store.saves[0].error, 0);
	ck_assert_int_ne(store.saves[0].error, -ENOMEM);	/* the read's, said */
	ck_assert_int_eq(unlinkat(d.state_dir, name, 0), 0);
	ck_assert_int_eq(renameat(d.state_dir, "kept", d.state_dir, name), 0);
	return loop;
}

/* ... its one record 0x9000, one page. */
static sd_event *file_read_late(void)
{
	return file_of_read_late(0x1000);
}

/*
 * The retry that can read it puts its pages back into the kernel before it
 * saves (they never went back, though the status said saved): once, and
 * outside a read, so the source keeps nothing of it for the device's next
 * read (a resync's), which walks no freed memory under ASan.
 */
START_TEST(a_file_read_late_is_restored_by_the_retry)
{
	struct hbm_ctl_extent x = { .identity = "sim:s", .offset = 0x20000, .length = 0x1000 };
	sd_event *loop = file_read_late();

	retried_until_saved(loop);
	ck_assert_int_eq(restores, 1);
	ck_assert_int_eq(restores_outside_read, 1);
	ck_assert(!owes_restore("sim:s"));
	ck_assert(file_has(0x9000));
	table[table_nr++] = bad_page;		/* in the kernel now */
	seen(HBM_SYNC_RESYNC, 1, 0);
	ck_assert_int_eq(store_apply(&store, HBM_CTL_RETIRE, &x), 0);
	ck_assert_int_eq(restores, 1);
	store_loop_end(loop);
}
END_TEST

/*
 * Owed, then paid by a read (a resync whose table lacks the pages): the
 * next save of the device (an operator's retire) restores nothing again.
 */
START_TEST(a_restore_owed_is_paid_once)
{
	struct hbm_ctl_extent x = { .identity = "sim:s", .offset = 0x20000, .length = 0x1000 };
	sd_event *loop = file_read_late();

	seen(HBM_SYNC_RESYNC, 0, 0);		/* read now; the kernel lacks it: restored */
	ck_assert_int_eq(restores, 1);
	ck_assert_uint_eq(store_unsaved(&store, NULL), 0);
	ck_assert(!owes_restore("sim:s"));
	ck_assert_int_eq(store_apply(&store, HBM_CTL_RETIRE, &x), 0);
	ck_assert_int_eq(restores, 1);
	ck_assert_int_eq(restores_outside_read, 0);
	store_loop_end(loop);
}
END_TEST

/*
 * Device 0 (sim:s) stored with 0x9000, sim:t's file holding it too; then
 * @identity, the device id 0 names by then, clears it and cannot save.
 */
static sd_event *sim_t_and_a_clear_unsaved(const char *identity)
{
	struct hbm_state_record rec = bad_page;
	struct hbm_state t = { .identity = "sim:t", .page_size = 4096, .serial = 1,
			       .records = &rec, .nr = 1 };

	ck_assert_int_eq(hbm_state_write(d.state_dir, &t), 0);
	return stored_and_a_clear_unsaved(identity);
}

/*
 * What is owed is a device's, by its identity.  sim:s (id 0) cleared
 * 0x9000 and could not save; its id then names sim:t (the module
 * reloaded, a range registered again) before the kernel link heard sim:s
 * gone (core_devices() is a read).  The retry saves sim:t under id 0:
 * sim:s's clear leaves sim:t's file alone (its page there stays).
 */
START_TEST(a_kept_clear_is_not_another_devices)
{
	sd_event *loop = sim_t_and_a_clear_unsaved("sim:s");

	snprintf(listed.dev[0].identity, sizeof(listed.dev[0].identity), "sim:t");
	table_nr = 0;				/* sim:t's table: not restored yet */
	retried_until_saved(loop);
	ck_assert(file_of_has("sim:t", 0x9000));
	store_loop_end(loop);
}
END_TEST

/*
 * A file cut short (a record missing), whose replacement cannot be written
 * (its temporary name taken): the changes after do not go on after what
 * is left of it, where its header says a snapshot record lies, but into a
 * snapshot of their own once one can be written.
 */
START_TEST(a_damaged_file_not_replaced_is_not_appended_to)
{
	struct hbm_state_record recs[3];
	struct hbm_state st = { .identity = "sim:s", .page_size = 4096, .serial = 5,
				.records = recs, .nr = 3 };
	char name[256], tmp[300];
	sd_event *loop;
	size_t i;
	int fd;

	for (i = 0; i < 3; i++) {
		recs[i] = bad_page;
		recs[i].offset = 0x10000 * (i + 1);
	}
	ck_assert_int_eq(hbm_state_write(d.state_dir, &st), 0);
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	fd = openat(d.state_dir, name, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, HBM_STATE_HEADER_SIZE + 2 * HBM_STATE_RECORD_SIZE), 0);
	close(fd);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	ck_assert_int_eq(mkdirat(d.state_dir, tmp, 0700), 0);
	loop = store_loop();
	add_device(0, "sim:s");
	seen(HBM_SYNC_START, 0, 0);
	ck_assert(!store.saves[0].log.open);
	ck_assert_int_eq(unlinkat(d.state_dir, tmp, AT_REMOVEDIR), 0);
	table[table_nr] = bad_page;		/* retired in the kernel, and heard */
	table[table_nr++].offset = 0x90000;
	heard_retired(0x90000);
	one_turn(loop);
	retried_until_saved(loop);
	ck_assert(file_has(0x90000));
	ck_assert(file_has(0x10000) && file_has(0x20000));
	store_loop_end(loop);
}
END_TEST

static void gone(void)
{
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_DEVICE_GONE,
		.dev = { .id = 0, .identity = "sim:s" } });
}

/* The kernel's table read again (a resync), its dump begun after event #@seqnum. */
static void read_again(uint64_t seqnum)
{
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_DEVICE_SEEN,
		.sync = HBM_SYNC_RESYNC,
		.dev = { .id = 0, .identity = "sim:s", .page_size = 4096 } });
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_TABLE_READ,
		.origin = HBM_FROM_KERNEL, .seqnum = seqnum, .sync = HBM_SYNC_RESYNC,
		.dev = { .id = 0, .identity = "sim:s" } });
}

/*
 * The events made before the table read began (a restore's) are in the
 * snapshot made from it: not logged again; those after it are.
 */
START_TEST(events_before_the_read_are_not_logged_again)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	sd_event *loop;

	loop = stored_one_page();
	read_again(10);	/* read again, at #10 */
	heard_numbered(0x9000, 9);
	heard_numbered(0x9000, 10);
	heard_numbered(0xa000, 11);
	one_turn(loop);
	ck_assert_uint_eq(store.counters.logged, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.log_nr, 1);
	ck_assert_uint_eq(s.nr, 2);
	hbm_state_free(&s);
	store_loop_end(loop);
}
END_TEST

/*
 * A change heard, then a snapshot in the same turn from a table that no
 * longer has it (cleared meanwhile): the turn's record is not logged after
 * the snapshot, which would bring the page back at the next start.
 */
START_TEST(a_turn_logs_nothing_a_later_snapshot_holds)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	sd_event *loop;

	loop = stored_one_page();
	heard_numbered(0x5000, 5);		/* retired at #5, cleared at #6 */
	read_again(7);	/* read at #7: no 0x5000 */
	heard_numbered(0xa000, 8);		/* the turn goes on: logged */
	one_turn(loop);
	ck_assert_uint_eq(store.counters.logged, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 2);
	ck_assert_uint_eq(s.records[0].offset, 0x9000);
	ck_assert_uint_eq(s.records[1].offset, 0xa000);
	hbm_state_free(&s);
	store_loop_end(loop);
}
END_TEST

static void restored_event(uint64_t seqnum)
{
	src_link.fact(src_link.core, &(struct hbm_fact){
		.type = HBM_FACT_EVENT, .event = HBMGUARD_EVENT_RESTORED,
		.origin = HBM_FROM_KERNEL, .seqnum = seqnum,
		.dev = { .id = 0, .identity = "sim:s" }, .count = 1, .aux = 1 });
}

/*
 * A RESTORED event names no range: the store's own restore, before the
 * table read its snapshot came from, is in it (no dump); one after it (of
 * another's restore) makes a snapshot from a dump.
 */
START_TEST(a_restored_event_the_snapshot_holds_is_not_saved_again)
{
	sd_event *loop;

	loop = store_loop();
	add_device(0, "sim:s");
	table[table_nr++] = bad_page;
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_DEVICE_SEEN,
		.sync = HBM_SYNC_START,
		.dev = { .id = 0, .identity = "sim:s", .page_size = 4096 } });
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_TABLE_READ,
		.origin = HBM_FROM_KERNEL, .seqnum = 10, .sync = HBM_SYNC_START,
		.dev = { .id = 0, .identity = "sim:s" } });
	restored_event(9);
	one_turn(loop);
	ck_assert_int_eq(dumps, 0);
	ck_assert(!store.saves[0].dirty);
	restored_event(11);
	one_turn(loop);
	ck_assert_int_eq(dumps, 1);
	ck_assert(!store.saves[0].dirty);
	store_loop_end(loop);
}
END_TEST

static void heard_pending(uint64_t offset, uint64_t length, uint32_t count)
{
	src_link.fact(src_link.core, &(struct hbm_fact){
		.type = HBM_FACT_PAGES, .event = HBMGUARD_EVENT_PENDING,
		.origin = HBM_FROM_KERNEL, .dev = { .id = 0, .identity = "sim:s" },
		.offset = offset, .length = length, .source = HBMGUARD_SOURCE_CE_THRESHOLD,
		.count = count });
}

/*
 * An event whose range holds pages it did not change (a PENDING over
 * 0x8000-0xc000 where 0x9000 is RETIRED: 3 pages) is not logged: its
 * record would make 0x9000 PENDING at a replay.  A snapshot instead; one
 * that changed every page of its range is logged.
 */
START_TEST(an_event_over_pages_of_other_states_makes_a_snapshot)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	sd_event *loop;
	size_t i, covering = 0;

	loop = stored_one_page();		/* 0x9000 RETIRED */
	heard_pending(0x8000, 0x4000, 3);
	one_turn(loop);
	ck_assert_uint_eq(store.counters.logged, 0);
	ck_assert_int_eq(dumps, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	for (i = 0; i < s.nr; i++)
		if (s.records[i].offset <= 0x9000 &&
		    s.records[i].offset + s.records[i].length > 0x9000) {
			ck_assert_uint_eq(s.records[i].state, HBMGUARD_STATE_RETIRED);
			covering++;
		}
	ck_assert_uint_eq(covering, 1);
	hbm_state_free(&s);

	heard_pending(0x20000, 0x4000, 4);	/* every page of it */
	one_turn(loop);
	ck_assert_uint_eq(store.counters.logged, 1);
	ck_assert_int_eq(dumps, 1);
	store_loop_end(loop);
}
END_TEST

/* The descriptors of process @pid, into @fds; their count (-1: gone). */
static int fds_of(pid_t pid, int *fds, int max)
{
	char path[64];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.' && n < max)
			fds[n++] = atoi(e->d_name);
	closedir(dir);
	return n;
}

static bool holds(const int *fds, int n, int fd)
{
	int i;

	for (i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

/*
 * A compaction's child that does not end: it waits to open the FIFO
 * "stall" of the state directory for writing, until something opens it
 * to read (a disk that hangs, for a test).  Then it fails.
 */
static int stalled(int dirfd, const char *identity, int fd, uint64_t upto,
		   struct hbm_state_count *count)
{
	(void)identity;
	(void)fd;
	(void)upto;
	(void)count;
	fd = openat(dirfd, "stall", O_WRONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return -EIO;
}

/*
 * Device 0's log past its bound, its compaction's child stuck (stalled()).
 * Return: its pid.
 */
static pid_t compaction_stuck(sd_event *loop)
{
	pid_t pid;
	int i;

	ck_assert_int_eq(mkfifoat(d.state_dir, "stall", 0600), 0);
	store.compact = stalled;
	store.compact_min = 0;
	for (i = 0; i < 8; i++)
		heard_retired(0x10000 + i * 0x1000);
	one_turn(loop);
	pid = store.compacting.pid;
	ck_assert_int_gt(pid, 0);
	return pid;
}

/*
 * The compaction's child holds none of the daemon's descriptors but the
 * state directory, the file and its pipe (a socket it kept would outlive
 * the daemon), and the loop goes on while it is stuck (stalled()): its
 * end is heard, never waited for.
 */
START_TEST(the_compaction_child_holds_only_its_files)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	int marker = eventfd(0, 0), fds[64], n = -1, tries, fifo, i;
	struct stat pipe_st;
	sd_event *loop;
	pid_t pid;

	ck_assert_int_ge(marker, 0);
	loop = stored_one_page();
	pid = compaction_stuck(loop);
	for (tries = 0; tries < 200; tries++) {	/* until it has closed them */
		n = fds_of(pid, fds, 64);
		if (n >= 0 && !holds(fds, n, marker))
			break;
		usleep(10000);
	}
	ck_assert_int_ge(n, 0);
	ck_assert(!holds(fds, n, marker));
	ck_assert(!holds(fds, n, sd_event_get_fd(loop)));
	/*
	 * Its pipe's write end is told by its inode, not by a number above the
	 * marker's: pipe2() takes the lowest free number, which may be below.
	 */
	ck_assert_int_eq(fstat(store.compacting.fd, &pipe_st), 0);
	for (i = 0; i < n; i++) {
		char path[64], link[64], want[64];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fds[i]);
		len = readlink(path, link, sizeof(link) - 1);
		link[len > 0 ? len : 0] = 0;
		snprintf(want, sizeof(want), "pipe:[%lu]", (unsigned long)pipe_st.st_ino);
		ck_assert_msg(fds[i] <= 2 || fds[i] == d.state_dir ||
			      fds[i] == store.saves[0].log.fd || !strcmp(link, want),
			      "the compaction's child holds %d (%s)", fds[i], link);
	}
	ck_assert_int_le(n, 6);

	/* stuck: the loop goes on, a turn logged */
	heard_retired(0x30000);
	one_turn(loop);
	ck_assert_uint_eq(store.counters.logged, 9);
	ck_assert_int_eq(store.compacting.pid, pid);

	/* unstuck: it fails, heard, reaped, the file as it was */
	fifo = openat(d.state_dir, "stall", O_RDONLY | O_NONBLOCK);
	ck_assert_int_ge(fifo, 0);
	for (tries = 0; store.compacting.pid && tries < 1000; tries++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	close(fifo);
	ck_assert_int_eq(store.compacting.pid, 0);
	ck_assert(store.saves[0].no_compact);
	ck_assert_int_eq(kill(pid, 0), -1);	/* reaped: no zombie left */
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage));
	ck_assert_uint_eq(s.nr, 1 + 8 + 1);
	hbm_state_free(&s);
	close(marker);
	store_loop_end(loop);
}
END_TEST

/*
 * A damaged file is kept aside under a second name, then replaced: the
 * replacement failing (a directory in the way of its temporary file), it
 * is still under its own name, not gone until a crash's next start finds
 * none; the next save that gets to disk replaces it, not kept aside twice.
 */
START_TEST(a_damaged_file_keeps_its_name_until_replaced)
{
	struct hbm_state_damage damage;
	struct hbm_state st;
	struct stat now, aside;
	char name[256], tmp[300];
	sd_event *loop;

	loop = stored_one_page();
	damage_header();
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	ck_assert_int_eq(mkdirat(d.state_dir, tmp, 0700), 0);
	seen(HBM_SYNC_RESYNC, 1, 0);
	ck_assert_int_ne(store.saves[0].error, 0);	/* not saved: retried */
	ck_assert_int_eq(fstatat(d.state_dir, name, &now, 0), 0);
	ck_assert(S_ISREG(now.st_mode));
	ck_assert_int_eq(count_prefixed(d.state_dir, "sim:s.state.corrupt-", &aside), 1);
	ck_assert_uint_eq(aside.st_ino, now.st_ino);

	ck_assert_int_eq(unlinkat(d.state_dir, tmp, AT_REMOVEDIR), 0);
	seen(HBM_SYNC_RESYNC, 1, 0);
	ck_assert_int_eq(store.saves[0].error, 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &st, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage));
	ck_assert_uint_eq(st.nr, 1);
	hbm_state_free(&st);
	ck_assert_int_eq(count_prefixed(d.state_dir, "sim:s.state.corrupt-", &aside), 1);
	ck_assert_uint_eq(aside.st_nlink, 1);		/* its own file now */
	store_loop_end(loop);
}
END_TEST

/*
 * A damaged file no second name can be made for (every name of the second
 * taken) is moved aside, not lost: the copy kept, the replacement written.
 */
START_TEST(a_damaged_file_with_no_second_name_is_moved_aside)
{
	struct hbm_state_damage damage;
	struct hbm_state st;
	struct stat damaged, x;
	char name[300];
	sd_event *loop;
	bool kept = false;
	long long t;
	DIR *dir;
	struct dirent *e;
	int fd, i;

	loop = stored_one_page();
	damaged = damage_header();
	for (t = time(NULL); t < time(NULL) + 3; t++)
		for (i = 0; i < 10; i++) {
			if (i)
				snprintf(name, sizeof(name), "sim:s.state.corrupt-%lld.%d", t, i);
			else
				snprintf(name, sizeof(name), "sim:s.state.corrupt-%lld", t);
			fd = openat(d.state_dir, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
			ck_assert_int_ge(fd, 0);
			close(fd);
		}
	seen(HBM_SYNC_RESYNC, 1, 0);
	ck_assert_int_eq(store.saves[0].error, 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &st, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage));
	hbm_state_free(&st);
	dir = fdopendir(openat(d.state_dir, ".", O_RDONLY | O_DIRECTORY));
	ck_assert_ptr_nonnull(dir);
	while ((e = readdir(dir))) {	/* by its content: an inode's number is reused */
		char head[7] = { 0 };

		if (strncmp(e->d_name, "sim:s.state.corrupt-", 20))
			continue;
		fd = openat(d.state_dir, e->d_name, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		kept |= read(fd, head, sizeof(head)) == sizeof(head) &&
			!memcmp(head, "damaged", 7) && !fstat(fd, &x) &&
			x.st_size == damaged.st_size;
		close(fd);
	}
	closedir(dir);
	ck_assert(kept);
	store_loop_end(loop);
}
END_TEST

/*
 * A compaction child that does not end (stalled()) is killed at its
 * deadline and reaped, and a later one compacts the file.  Temporary
 * files a crash left are removed at start.
 */
START_TEST(a_compaction_that_hangs_is_killed_and_tried_again)
{
	struct hbm_state_damage damage;
	struct hbm_state s;
	char tmp[300];
	sd_event *loop;
	pid_t pid;
	int tries, fd;

	ck_assert_int_eq(hbm_state_compact_name("sim:s", tmp, sizeof(tmp)), 0);
	fd = openat(d.state_dir, tmp, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	store_start(&store, &d, &core, NULL);
	ck_assert_int_eq(faccessat(d.state_dir, tmp, F_OK, 0), -1);

	loop = stored_one_page();
	store.compact_timeout_us = 1000;
	pid = compaction_stuck(loop);
	for (tries = 0; store.compacting.pid == pid && tries < 1000; tries++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	ck_assert_int_ne(store.compacting.pid, pid);
	ck_assert_int_eq(kill(pid, 0), -1);		/* reaped: no zombie left */
	ck_assert_uint_ge(store.compact_timeout_us, 2000);	/* the next, twice the time */
	ck_assert(!store.saves[0].no_compact);		/* a later one may run */
	ck_assert_uint_eq(store.counters.compactions, 0);

	/* the next compacts (one forked meanwhile stalls, and is killed too) */
	ck_assert_int_eq(faccessat(d.state_dir, tmp, F_OK, AT_SYMLINK_NOFOLLOW), -1);
	store.compact = hbm_state_compact;
	store.compact_timeout_us = 300 * 1000000ULL;
	for (tries = 0; !store.counters.compactions && tries < 1000; tries++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	ck_assert_uint_eq(store.counters.compactions, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert(!hbm_state_damaged(&damage));
	ck_assert_uint_eq(s.log_nr, 0);
	ck_assert_uint_eq(s.nr, 1 + 8);
	hbm_state_free(&s);
	store_loop_end(loop);
}
END_TEST

/*
 * The deadline's SIGKILL goes through the child's pidfd, never to a pid
 * (another's, once the child has gone and been reaped for us): a decoy
 * under the child's pid survives it, the child does not.
 */
START_TEST(a_late_compaction_is_killed_through_its_pidfd)
{
	pid_t pid, decoy;
	sd_event *loop;
	int status, tries;

	loop = stored_one_page();
	store.compact_timeout_us = 300 * 1000000ULL;
	pid = compaction_stuck(loop);
	decoy = fork();
	ck_assert_int_ge(decoy, 0);
	if (!decoy) {
		pause();
		_exit(0);
	}
	store.compacting.pid = decoy;
	sd_event_source_set_time_relative(store.compacting.deadline, 1000);
	for (tries = 0; !store.compacting.killed && tries < 1000; tries++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	ck_assert(store.compacting.killed);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_eq(waitpid(decoy, &status, WNOHANG), 0);	/* alive */
	kill(decoy, SIGKILL);
	ck_assert_int_eq(waitpid(decoy, &status, 0), decoy);
	store.compacting.pid = pid;	/* reaped here: its end is ECHILD */
	for (tries = 0; store.compacting.pid && tries < 1000; tries++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	ck_assert_int_eq(store.compacting.pid, 0);
	store_loop_end(loop);
}
END_TEST

/*
 * A page logged twice (PENDING, then RETIRED) counts twice in hbmctl
 * status until the file is counted again: a compaction counts it exactly,
 * what was logged after its fork on top.
 */
START_TEST(a_compaction_counts_the_pages_exactly)
{
	sd_event *loop;
	int tries;

	loop = stored_one_page();
	ck_assert_uint_eq(store.stored_pages[0], 1);
	store.compact_min = 0;
	heard_pending(0x10000, 0x1000, 1);
	heard_pending(0x11000, 0x1000, 1);
	one_turn(loop);
	ck_assert_uint_eq(store.stored_pages[0], 3);
	ck_assert_int_eq(store.compacting.pid, 0);	/* 2 records: shorter than the snapshot */
	heard_retired(0x10000);
	heard_retired(0x11000);
	one_turn(loop);
	ck_assert_int_gt(store.compacting.pid, 0);
	ck_assert_uint_eq(store.stored_pages[0], 5);	/* each logged twice */
	heard_retired(0x12000);				/* after the fork: on top */
	one_turn(loop);
	for (tries = 0; store.compacting.pid && tries < 1000; tries++)
		ck_assert_int_ge(sd_event_run(loop, 10000), 0);
	ck_assert_uint_eq(store.counters.compactions, 1);
	ck_assert_uint_eq(store.stored_pages[0], 4);
	ck_assert_uint_eq(store.stored_extents[0], 4);
	store_loop_end(loop);
}
END_TEST

/* A device gone in the turn that heard its changes: saved with no dump to make. */
START_TEST(a_device_gone_keeps_what_its_last_turn_heard)
{
	struct hbm_state_damage damage;
	struct hbm_state s;

	add_device(0, "sim:s");
	seen(HBM_SYNC_START, 0, 0);		/* empty: no file, nothing to log to */
	heard_retired(0x5000);
	heard_retired(0x5000);			/* twice: one record */
	heard_retired(0x3000);
	gone();
	ck_assert_int_eq(dumps, 0);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.nr, 2);
	ck_assert_uint_eq(s.records[0].offset, 0x3000);
	ck_assert_uint_eq(s.records[1].offset, 0x5000);
	hbm_state_free(&s);

	/* seen again, its file open to log to: appended */
	seen(HBM_SYNC_ADDED, 0, 0);
	heard_retired(0x9000);
	gone();
	ck_assert_int_eq(dumps, 0);
	ck_assert_uint_eq(store.counters.logged, 1);
	ck_assert_int_eq(hbm_state_read(d.state_dir, "sim:s", 0, &s, &damage), 0);
	ck_assert_uint_eq(s.log_nr, 1);
	ck_assert_uint_eq(s.nr, 3);
	hbm_state_free(&s);
}
END_TEST

/* Device @identity at id 0 seen (@why), its table empty, read whole. */
static void seen_as(const char *identity, enum hbm_sync why)
{
	struct hbm_fact f = { .type = HBM_FACT_DEVICE_SEEN, .sync = why,
			      .dev = { .id = 0, .page_size = 4096 } };

	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", identity);
	src_link.fact(src_link.core, &f);
	f = (struct hbm_fact){ .type = HBM_FACT_TABLE_READ, .sync = why, .dev = { .id = 0 } };
	snprintf(f.dev.identity, sizeof(f.dev.identity), "%s", identity);
	src_link.fact(src_link.core, &f);
	kept_restored = NULL;
}

/*
 * A clear whose save failed, then the module reloaded
 * (reloaded(): DEVICE_GONE of every id, then DEVICE_SEEN ADDED, a new
 * empty table).  The daemon still knows the page was cleared; the file
 * still holds it.  The ADDED read must not restore it into the new table.
 */
START_TEST(a_kept_clear_survives_a_module_reload)
{
	sd_event *loop = stored_and_a_clear_unsaved("sim:s");

	ck_assert_uint_eq(table_nr, 0);
	gone();					/* reloaded(): device_gone() */
	seen(HBM_SYNC_ADDED, 0, 0);		/* the new module: an empty table */
	ck_assert_msg(restores == 0, "the cleared page 0x9000 was restored into the new table");
	retried_until_saved(loop);
	ck_assert_msg(!file_has(0x9000), "the cleared page 0x9000 is still in the file, status saved");
	store_loop_end(loop);
}
END_TEST

/*
 * The kept clear is sim:t's (an operator's clear of the device id 0 names
 * now, before the kernel link heard sim:s gone); the DEVICE_GONE of sim:s
 * must not drop it: sim:t's ADDED read would then put the page it cleared
 * back.
 */
START_TEST(a_gone_device_drops_not_another_devices_kept_clear)
{
	sd_event *loop = sim_t_and_a_clear_unsaved("sim:t");

	ck_assert_uint_eq(table_nr, 0);		/* sim:t's page cleared in the kernel */
	gone();					/* the link hears sim:s gone at id 0 */
	seen_as("sim:t", HBM_SYNC_ADDED);
	ck_assert_msg(restores == 0, "sim:t's cleared page 0x9000 was restored");
	retried_until_saved(loop);
	ck_assert_msg(!file_of_has("sim:t", 0x9000), "sim:t's cleared page is still in its file");
	store_loop_end(loop);
}
END_TEST

/*
 * A resync finds the device's table empty (it came back
 * unheard, same identity, same id: HBM_SYNC_RESYNC) while its file cannot
 * be read; the retry that reads it must put its pages back, as a resync
 * that read it would (read_end(): kernel_lacks()).
 */
START_TEST(a_resync_read_late_restores_what_the_kernel_lacks)
{
	char name[256];
	sd_event *loop;

	loop = stored_one_page();		/* file and table: 0x9000 */
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	ck_assert_int_eq(renameat(d.state_dir, name, d.state_dir, "kept"), 0);
	unreadable(name);
	table_nr = 0;				/* back unheard: empty */
	seen(HBM_SYNC_RESYNC, 0, 0);
	ck_assert_int_ne(store.saves[0].error, 0);
	ck_assert_int_eq(unlinkat(d.state_dir, name, 0), 0);
	ck_assert_int_eq(renameat(d.state_dir, "kept", d.state_dir, name), 0);
	retried_until_saved(loop);
	ck_assert(file_has(0x9000));
	ck_assert_msg(restores == 1, "the kernel lacks 0x9000 and nothing puts it back (restores %d)",
		      restores);
	store_loop_end(loop);
}
END_TEST

/*
 * A restore owed (file unreadable at START) is marked paid by
 * a resync's read whose table holds a part of each stored record: a
 * 2-page record, the kernel retired its second page since; the first
 * goes back too (a part held is not all).
 */
START_TEST(a_restore_owed_is_not_paid_by_a_part)
{
	sd_event *loop = file_of_read_late(0x2000);	/* 0x9000 and 0xa000 */

	table[table_nr] = bad_page;		/* retired since: 0xa000 alone */
	table[table_nr++].offset = 0xa000;
	seen(HBM_SYNC_RESYNC, 1, 0);
	retried_until_saved(loop);
	ck_assert_msg(restores == 1, "0x9000 never went back into the kernel (restores %d, owed %d)",
		      restores, owes_restore("sim:s"));
	store_loop_end(loop);
}
END_TEST

/*
 * A restore owed (file unreadable at START: the module
 * reloaded) whose device's table meanwhile holds the stored page in a
 * lesser state: the GPU's driver has it pending (gpus.c's reconcile
 * retires it HBMGUARD_RETIRE_PENDING in the empty table).  The file says
 * RETIRED (a UE: its data destroyed, a spare serving it).  A START that
 * reads the file restores it whole (RETIRED over PENDING bypasses it);
 * the retry that reads it late must too, not pay the restore because the
 * table "holds" the page, leaving it PENDING, in service, and the file
 * rewritten PENDING from the dump.
 */
START_TEST(a_restore_owed_is_not_paid_by_a_page_held_in_a_lesser_state)
{
	sd_event *loop = file_read_late();	/* file: 0x9000 RETIRED (UE) */

	table[table_nr] = bad_page;		/* the driver's: 0x9000 pending */
	table[table_nr].state = HBMGUARD_STATE_PENDING;
	table[table_nr++].source = HBMGUARD_SOURCE_DRIVER;
	retried_until_saved(loop);
	ck_assert_msg(restores == 1, "0x9000 stays PENDING in the kernel though its file says "
		      "RETIRED (restores %d, owed %d)", restores, owes_restore("sim:s"));
	store_loop_end(loop);
}
END_TEST

/*
 * The same at a resync (read_end()'s kernel_lacks()): the
 * device came back unheard, its new table holding the stored RETIRED page
 * as PENDING (its driver's): nothing goes back, and the file is rewritten
 * PENDING from the table.
 */
START_TEST(a_resync_restores_a_page_held_in_a_lesser_state)
{
	sd_event *loop = stored_one_page();	/* file and table: 0x9000 RETIRED */

	table[0].state = HBMGUARD_STATE_PENDING;	/* back unheard: the driver's */
	table[0].source = HBMGUARD_SOURCE_DRIVER;
	seen(HBM_SYNC_RESYNC, 1, 0);
	ck_assert_msg(restores == 1, "0x9000 left PENDING (restores %d)", restores);
	store_loop_end(loop);
}
END_TEST

/* Record @i of the last restore: @offset, @length, the file's history. */
static void sent_is(size_t i, uint64_t offset, uint64_t length, uint8_t state)
{
	ck_assert_uint_gt(nr_sent, i);
	ck_assert_uint_eq(sent[i].offset, offset);
	ck_assert_uint_eq(sent[i].length, length);
	ck_assert_uint_eq(sent[i].state, state);
	ck_assert_uint_eq(sent[i].first_seen, bad_page.first_seen);
	ck_assert_uint_eq(sent[i].last_seen, bad_page.last_seen);
	ck_assert_uint_eq(sent[i].errors, bad_page.errors);
}

/*
 * A restore owed, paid by the retry, sends only what the kernel lacks of
 * the file: a 4-page record (0x9000-0xd000) of which the kernel holds
 * 0xa000 retired (since: by a UE of its own, its history the kernel's)
 * and 0xc000 pending (its driver's, in a new table).  0xa000 must not be
 * sent (the module would apply it over the page as a RETIRE: its
 * last_seen now, its errors the request's); 0x9000 and 0xb000-0xd000 are,
 * each with the file's history, RETIRED.
 */
START_TEST(an_owed_restore_sends_only_what_the_kernel_lacks)
{
	sd_event *loop = file_of_read_late(0x4000);

	table[table_nr] = bad_page;
	table[table_nr].offset = 0xa000;
	table[table_nr].first_seen = table[table_nr].last_seen = 999;
	table[table_nr++].errors = 7;
	table[table_nr] = bad_page;
	table[table_nr].offset = 0xc000;
	table[table_nr].state = HBMGUARD_STATE_PENDING;
	table[table_nr++].source = HBMGUARD_SOURCE_DRIVER;
	retried_until_saved(loop);
	ck_assert_int_eq(restores, 1);
	ck_assert_uint_eq(nr_sent, 2);
	sent_is(0, 0x9000, 0x1000, HBMGUARD_STATE_RETIRED);
	sent_is(1, 0xb000, 0x2000, HBMGUARD_STATE_RETIRED);
	store_loop_end(loop);
}
END_TEST

/* The same at a resync of a device back unheard: its table holds 0xa000 of 0x9000-0xc000. */
START_TEST(a_resync_sends_only_what_the_kernel_lacks)
{
	struct hbm_state_record rec = bad_page;
	struct hbm_state st = { .identity = "sim:s", .page_size = 4096, .serial = 1,
				.records = &rec, .nr = 1 };
	sd_event *loop = store_loop();

	rec.length = 0x3000;
	ck_assert_int_eq(hbm_state_write(d.state_dir, &st), 0);
	add_device(0, "sim:s");
	seen(HBM_SYNC_START, 0, 0);
	ck_assert_uint_eq(nr_sent, 1);		/* a start: the whole file */
	table[table_nr] = bad_page;		/* back unheard: 0xa000 alone */
	table[table_nr].offset = 0xa000;
	table[table_nr++].first_seen = table[0].last_seen = 999;
	seen(HBM_SYNC_RESYNC, 1, 0);
	ck_assert_int_eq(restores, 2);
	ck_assert_uint_eq(nr_sent, 2);
	sent_is(0, 0x9000, 0x1000, HBMGUARD_STATE_RETIRED);
	sent_is(1, 0xb000, 0x1000, HBMGUARD_STATE_RETIRED);
	store_loop_end(loop);
}
END_TEST

/*
 * The same clear asked again while the saves fail (an operator retrying on
 * a full disk) is kept once, and a refused one after it leaves the kept
 * one alone.
 */
START_TEST(a_clear_asked_again_is_kept_once)
{
	struct hbm_ctl_extent x = { .identity = "sim:s", .offset = 0x9000, .length = 0x1000 };
	sd_event *loop;

	loop = stored_one_page();
	dump_err = -EIO;
	ck_assert_int_eq(store_apply(&store, HBM_CTL_CLEAR, &x), -EINPROGRESS);
	ck_assert_int_eq(store_apply(&store, HBM_CTL_CLEAR, &x), -EINPROGRESS);
	ck_assert_uint_eq(owes_clears("sim:s"), 1);
	change_err = -EINVAL;
	ck_assert_int_eq(store_apply(&store, HBM_CTL_CLEAR, &x), -EINVAL);
	change_err = 0;
	ck_assert_uint_eq(owes_clears("sim:s"), 1);
	dump_err = 0;
	retried_until_saved(loop);
	ck_assert(!file_has(0x9000));
	ck_assert_uint_eq(owes_clears("sim:s"), 0);
	store_loop_end(loop);
}
END_TEST

/*
 * sim:s's file (0x9000) renamed @file_as, a link to "on-another-disk" under
 * its name: an operator's file moved to another disk and linked back.
 */
static void stored_behind_a_link(const char *file_as)
{
	struct hbm_state_record rec = bad_page;
	struct hbm_state st = { .identity = "sim:s", .page_size = 4096, .serial = 1,
				.records = &rec, .nr = 1 };
	char name[256];

	ck_assert_int_eq(hbm_state_write(d.state_dir, &st), 0);
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	ck_assert_int_eq(renameat(d.state_dir, name, d.state_dir, file_as), 0);
	ck_assert_int_eq(symlinkat("on-another-disk", d.state_dir, name), 0);
}

/*
 * A state file an operator moved to another disk and linked back (helper-150):
 * a link to a regular file, its pages the device's.  Taken for damage, it
 * was set aside and replaced by an empty snapshot, nothing restored.
 */
START_TEST(a_linked_state_file_is_restored)
{
	sd_event *loop = store_loop();

	stored_behind_a_link("on-another-disk");
	add_device(0, "sim:s");
	seen(HBM_SYNC_START, 0, 0);
	ck_assert_uint_eq(nr_sent, 1);		/* its page back into the kernel */
	ck_assert(file_has(0x9000));
	store_loop_end(loop);
}
END_TEST

/*
 * A resync whose table read the store could not take (the source's read
 * cut short, INCOMPLETE; the store's memory for it) on a device back
 * unheard, its table empty: the retry's save must put the stored page
 * back, as a resync read whole does (helper-150's L8).
 */
START_TEST(a_resync_read_cut_short_restores_what_the_kernel_lacks)
{
	sd_event *loop = stored_one_page();	/* file and table: 0x9000 */

	table_nr = 0;				/* back unheard: empty */
	restores = 0;
	seen(HBM_SYNC_RESYNC, 0, HBM_FACT_INCOMPLETE);
	ck_assert_int_ne(store.saves[0].error, 0);
	retried_until_saved(loop);
	ck_assert_msg(restores == 1, "the kernel lacks 0x9000 and nothing puts it back (restores %d)",
		      restores);
	ck_assert(file_has(0x9000));
	store_loop_end(loop);
}
END_TEST

/*
 * The same link while the disk it names is not mounted yet (helper-151):
 * not "no file", nothing restored and a new file renamed over the link,
 * but a file not read: the link left as it is, the save retried, the
 * restore owed, paid once the file is there.
 */
START_TEST(a_dangling_state_link_is_not_a_missing_file)
{
	sd_event *loop = store_loop();
	struct stat lst;
	char name[256];

	stored_behind_a_link("unmounted");
	ck_assert_int_eq(hbm_state_file_name("sim:s", name, sizeof(name)), 0);
	add_device(0, "sim:s");
	table[table_nr] = bad_page;		/* one of its own since */
	table[table_nr++].offset = 0x5000;
	seen(HBM_SYNC_START, 1, 0);
	one_turn(loop);
	ck_assert_int_eq(fstatat(d.state_dir, name, &lst, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_msg(S_ISLNK(lst.st_mode), "the operator's link was replaced by a new file");
	ck_assert_int_eq(store.saves[0].error, -ENOLINK);
	ck_assert_int_eq(restores, 0);
	ck_assert_int_eq(renameat(d.state_dir, "unmounted", d.state_dir, "on-another-disk"), 0);
	retried_until_saved(loop);
	ck_assert_int_eq(restores, 1);		/* owed, paid once it could be read */
	ck_assert(file_has(0x9000));
	ck_assert(file_has(0x5000));
	store_loop_end(loop);
}
END_TEST

/*
 * A save that fails before the store is started (the drain file's, set
 * aside at sched_init() on a full disk): the retry is main()'s to arm,
 * not a crash (helper-153: arm_retry() read the store's daemon, NULL).
 */
START_TEST(a_save_failed_before_the_store_starts)
{
	static struct hbm_store unstarted;
	static struct daemon dd;

	dd.store = &unstarted;
	store_save_failed(&dd);		/* what daemon_save_failed() calls */
	ck_assert_ptr_null(unstarted.retry);
}
END_TEST

/*
 * id reuse across a module reload read in one burst of the event socket:
 * sim:s (id 0) RETIRED 0x20000 (#9), a gap then a resync reads its table
 * whole (TABLE_READ #11: dirty cleared, the turn's record kept), the
 * module reloaded (reloaded(): DEVICE_GONE of sim:s, then DEVICE_SEEN
 * ADDED of sim:b under id 0, its TABLE_READ #2 of the new module), sim:b
 * RETIRED 0x40000 (#3).  The turn's end must not log sim:s's 0x20000
 * into sim:b's file.
 */
START_TEST(a_reused_id_gets_not_the_last_devices_turn)
{
	struct hbm_state_record rec = bad_page;
	struct hbm_state b = { .identity = "sim:b", .page_size = 4096, .serial = 1,
			       .records = &rec, .nr = 1 };
	struct hbm_fact f;
	sd_event *loop;
	size_t i;

	rec.offset = 0x50000;
	ck_assert_int_eq(hbm_state_write(d.state_dir, &b), 0);
	loop = stored_one_page();		/* sim:s, 0x9000, its log open */
	one_turn(loop);

	/* one burst: no on_post() until its end */
	heard_numbered(0x20000, 9);		/* RETIRED of sim:s */
	table[table_nr] = bad_page;		/* in its kernel table */
	table[table_nr++].offset = 0x20000;
	/* a gap: the resync reads sim:s whole, dump begun after #11 */
	f = (struct hbm_fact){ .type = HBM_FACT_DEVICE_SEEN, .sync = HBM_SYNC_RESYNC,
			       .origin = HBM_FROM_KERNEL,
			       .dev = { .id = 0, .identity = "sim:s", .page_size = 4096 } };
	src_link.fact(src_link.core, &f);
	for (i = 0; i < table_nr; i++) {
		f.type = HBM_FACT_PAGES;
		f.flags = HBM_FACT_UNHEARD;
		f.offset = table[i].offset;
		f.length = table[i].length;
		f.state = table[i].state;
		f.source = table[i].source;
		f.count = table[i].errors;
		src_link.fact(src_link.core, &f);
	}
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_TABLE_READ,
		.origin = HBM_FROM_KERNEL, .seqnum = 11, .sync = HBM_SYNC_RESYNC,
		.dev = { .id = 0, .identity = "sim:s" } });
	ck_assert(!store.saves[0].dirty);
	ck_assert(file_of_has("sim:s", 0x20000));

	/* NEWFAMILY: reloaded() */
	gone();
	snprintf(listed.dev[0].identity, sizeof(listed.dev[0].identity), "sim:b");
	table_nr = 0;				/* the new module's table of sim:b */
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_DEVICE_SEEN,
		.sync = HBM_SYNC_ADDED, .origin = HBM_FROM_KERNEL,
		.dev = { .id = 0, .identity = "sim:b", .page_size = 4096 } });
	kept_restored = NULL;
	src_link.fact(src_link.core, &(struct hbm_fact){ .type = HBM_FACT_TABLE_READ,
		.origin = HBM_FROM_KERNEL, .seqnum = 2, .sync = HBM_SYNC_ADDED,
		.dev = { .id = 0, .identity = "sim:b" } });
	ck_assert(store.saves[0].log.open);	/* on sim:b's file */
	ck_assert_str_eq(store.saves[0].identity, "sim:b");
	src_link.fact(src_link.core, &(struct hbm_fact){
		.type = HBM_FACT_PAGES, .event = HBMGUARD_EVENT_RETIRED,
		.origin = HBM_FROM_KERNEL, .seqnum = 3,
		.dev = { .id = 0, .identity = "sim:b" }, .offset = 0x40000,
		.length = 0x1000, .source = HBMGUARD_SOURCE_UE, .count = 1 });
	one_turn(loop);				/* on_post(): the turn logged */
	ck_assert(file_of_has("sim:b", 0x40000));
	ck_assert_msg(!file_of_has("sim:b", 0x20000),
		      "sim:s's page 0x20000 (its event #9) was logged into sim:b's file");
	store_loop_end(loop);
}
END_TEST

Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("core");
	TCase *st = tcase_create("store");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, only_the_source_says_gone);
	tcase_add_test(tc, an_id_naming_another_device_is_a_device_gone);
	tcase_add_test(tc, a_gone_fact_forgets_the_name);
	tcase_add_test(tc, a_fact_from_a_sink_comes_after);
	tcase_add_test(tc, an_error_by_identity_is_the_module_devices);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(st, store_setup, store_teardown);
	tcase_add_test(st, a_device_seen_is_saved_from_its_one_read);
	tcase_add_test(st, a_read_of_what_was_restored_writes_nothing);
	tcase_add_test(st, a_stored_record_split_by_the_module_keeps_its_unchanged_part);
	tcase_add_test(st, a_read_that_failed_is_saved_from_a_dump);
	tcase_add_test(st, a_resync_puts_back_what_the_kernel_lacks);
	tcase_add_test(st, heard_changes_are_logged_and_compacted);
	tcase_add_test(st, a_device_gone_keeps_what_its_last_turn_heard);
	tcase_add_test(st, events_before_the_read_are_not_logged_again);
	tcase_add_test(st, a_turn_logs_nothing_a_later_snapshot_holds);
	tcase_add_test(st, an_event_over_pages_of_other_states_makes_a_snapshot);
	tcase_add_test(st, the_compaction_child_holds_only_its_files);
	tcase_add_test(st, a_restored_event_the_snapshot_holds_is_not_saved_again);
	tcase_add_test(st, a_cleared_page_stays_cleared_though_its_event_comes_late);
	tcase_add_test(st, a_clear_whose_dump_fails_is_not_acknowledged_as_saved);
	tcase_add_test(st, a_clear_whose_save_fails_is_saved_by_the_retry);
	tcase_add_test(st, a_retire_whose_save_fails_is_done_not_refused);
	tcase_add_test(st, a_clear_the_kernel_refuses_changes_nothing);
	tcase_add_test(st, a_file_moved_aside_is_no_longer_appended_to);
	tcase_add_test(st, a_file_not_read_is_not_moved_aside);
	tcase_add_test(st, a_file_read_late_is_restored_by_the_retry);
	tcase_add_test(st, a_restore_owed_is_paid_once);
	tcase_add_test(st, a_kept_clear_is_not_another_devices);
	tcase_add_test(st, a_damaged_file_not_replaced_is_not_appended_to);
	tcase_add_test(st, a_damaged_file_keeps_its_name_until_replaced);
	tcase_add_test(st, a_damaged_file_with_no_second_name_is_moved_aside);
	tcase_add_test(st, a_compaction_that_hangs_is_killed_and_tried_again);
	tcase_add_test(st, a_compaction_counts_the_pages_exactly);
	tcase_add_test(st, a_late_compaction_is_killed_through_its_pidfd);
	tcase_add_test(st, a_kept_clear_survives_a_module_reload);
	tcase_add_test(st, a_gone_device_drops_not_another_devices_kept_clear);
	tcase_add_test(st, a_resync_read_late_restores_what_the_kernel_lacks);
	tcase_add_test(st, a_restore_owed_is_not_paid_by_a_part);
	tcase_add_test(st, a_restore_owed_is_not_paid_by_a_page_held_in_a_lesser_state);
	tcase_add_test(st, a_resync_restores_a_page_held_in_a_lesser_state);
	tcase_add_test(st, a_clear_asked_again_is_kept_once);
	tcase_add_test(st, an_owed_restore_sends_only_what_the_kernel_lacks);
	tcase_add_test(st, a_resync_sends_only_what_the_kernel_lacks);
	tcase_add_test(st, a_linked_state_file_is_restored);
	tcase_add_test(st, a_dangling_state_link_is_not_a_missing_file);
	tcase_add_test(st, a_resync_read_cut_short_restores_what_the_kernel_lacks);
	tcase_add_test(st, a_save_failed_before_the_store_starts);
	tcase_add_test(st, a_reused_id_gets_not_the_last_devices_turn);
	suite_add_tcase(s, st);
	return s;
}
