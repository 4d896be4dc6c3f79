// SPDX-License-Identifier: GPL-2.0
/*
 * The amdgpu source of hbmguardd: every card bound to amdgpu, its RAS files
 * in sysfs read every HBM_AMDGPU_PERIOD_S seconds (amdgpu_ras.c parses
 * them), what changed given to the core as facts (core.h):
 *
 *   a card bound to amdgpu   DEVICE_SEEN: kind AMDGPU, identity
 *   with a ras/ directory    "amdgpu-" + its unique_id (else "amdgpu-pci-" +
 *                            its PCI address, which follows the slot), pci
 *                            from its uevent, size = mem_info_vram_total,
 *                            page size 4096; sync START at the first read,
 *                            ADDED for a card that comes later
 *   its bad-page list        PAGES, unheard, as DEVICE_SEEN's sync: what
 *                            amdgpu reserved before it was read; then its
 *                            HEALTH, unheard, the card's last fact: RMA
 *                            when a page could not be reserved (F: bad
 *                            memory still in use), else OK; .driver its
 *                            blocks' ue/ce counts (driver_counts())
 *   a page new to the list,  PAGES, heard: RETIRED (R), PENDING (P) or
 *   or changed state         FAILED (F), source UE (amdgpu retires a page
 *                            for an uncorrectable or deferred UMC error:
 *                            amdgpu_umc_do_page_retirement(),
 *                            drivers/gpu/drm/amd/amdgpu/amdgpu_umc.c, 6.1
 *                            and 6.12), offset pfn * page size
 *   a page that could not    HEALTH RMA, heard
 *     be reserved, later
 *   a block's count grew     ERROR: severity UE for ue: and de: (deferred:
 *                            the data is bad, its consumer not yet hit), CE
 *                            for ce:, .count the growth
 *   a card gone              DEVICE_GONE
 *
 * Counts that fall (a GPU reset clears them) start again from where they
 * are; a card in reset ("Query currently inaccessible") keeps its last.
 * The total its health carries is of the blocks read, given again with
 * its health when a block not read before (one in reset when the card was
 * first seen) reads.  A list read shorter than the last, the same as far
 * as it goes, keeps the rest of the last (keep_rest(): the driver's list
 * only grows while it has the card; a card it made anew, unbound and bound
 * again, has a new directory, and is gone, then seen).  A card whose
 * unique_id cannot be read (in reset, suspended, or after a resume that
 * failed) keeps its last read; one not seen yet is not watched until it
 * can be; either said once.
 * The files are sysfs attributes amdgpu writes whole on each read: a poll
 * reads a few KiB per card.  The device's identity and PCI address come
 * from files of the PCI core and amdgpu:
 *   uevent               "DRIVER=%s" (dev_uevent(), drivers/base/core.c),
 *                        "PCI_SLOT_NAME=%s" with pci_name() (pci_uevent(),
 *                        drivers/pci/pci-driver.c)
 *   unique_id            "%016llx\n" (amdgpu_get_unique_id(),
 *                        drivers/gpu/drm/amd/pm/amdgpu_pm.c), on ASICs
 *                        that have one
 *   mem_info_vram_total  "%llu\n" (amdgpu_mem_info_vram_total_show(),
 *                        drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c)
 * all as in Linux 6.1 and 6.12.
 *
 * It must not block beyond reading these files, allocates per read of a
 * card (its bad-page list), never per fact, and calls no sink: facts go
 * through the link the core gave at start.  A file it cannot read or parse
 * is said once, until it reads again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "amdgpu.h"
#include "amdgpu_ras.h"
#include "core.h"

#define AMDGPU_MAX_CARDS	64
#define AMDGPU_PAGE_SIZE	4096	/* AMDGPU_GPU_PAGE_SIZE, amdgpu.h */

struct card {
	char name[16];			/* "card0", under the DRM directory */
	bool present;			/* found by this poll */
	bool short_said;		/* its list read short, said */
	ino_t ino;			/* its directory's: a new one is a new driver's card */
	uint32_t told_blocks;		/* the blocks whose counts the last total had */
	int error;			/* of its last read, said once */
	uint32_t health;		/* HBMGUARD_HEALTH_*, as its list gives it */
	struct hbm_fact_device dev;
	struct amdgpu_ras last;		/* what the last good read said */
};

struct amdgpu_facts {
	char drm_dir[PATH_MAX];
	struct hbm_source_link link;
	struct card card[AMDGPU_MAX_CARDS];
	size_t nr;
	bool polled;			/* after the first poll a new card is news */
	bool full_said;
	char unnamed[AMDGPU_MAX_CARDS][16];	/* not seen, no unique_id read: said */
	size_t nr_unnamed;
	sd_event_source *timer;
};

/* A small file of @dir, NUL-terminated, without its trailing newline. */
static int read_small(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* A KEY=value line of a uevent file, into @out. */
static bool uevent_value(const char *uevent, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	const char *p = uevent;

	while (*p) {
		size_t line = strcspn(p, "\n");

		if (line > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			snprintf(out, len, "%.*s", (int)(line - klen - 1), p + klen + 1);
			return true;
		}
		p += line + (p[line] == '\n');
	}
	return false;
}

static int read_uevent(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/uevent", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static void fill(struct hbm_fact *f, uint32_t type, const struct card *c)
{
	memset(f, 0, sizeof(*f));
	f->type = type;
	f->origin = HBM_FROM_AMDGPU;
	f->dev = c->dev;
	snprintf(f->path, sizeof(f->path), "amdgpu");
}

static uint32_t page_state(enum amdgpu_page_state st)
{
	return st == AMDGPU_PAGE_RESERVED ? HBMGUARD_STATE_RETIRED :
	       st == AMDGPU_PAGE_PENDING ? HBMGUARD_STATE_PENDING : HBMGUARD_STATE_FAILED;
}

static uint32_t page_event(enum amdgpu_page_state st)
{
	return st == AMDGPU_PAGE_RESERVED ? HBMGUARD_EVENT_RETIRED :
	       st == AMDGPU_PAGE_PENDING ? HBMGUARD_EVENT_PENDING : HBMGUARD_EVENT_FAILED;
}

/*
 * A line of amdgpu's list, read at start (@sync) or polled later: always
 * a table read, never an event heard (core.h).  The registrar records the
 * page into the module, whose event is the one journaled and acted on:
 * one entry for one page.
 */
static void page_fact(struct amdgpu_facts *s, const struct card *c,
		      const struct amdgpu_bad_page *p, int sync)
{
	struct hbm_fact f;

	fill(&f, HBM_FACT_PAGES, c);
	f.event = page_event(p->state);
	f.state = page_state(p->state);
	f.source = HBMGUARD_SOURCE_UE;
	f.offset = (uint64_t)p->pfn * p->size;
	f.length = p->size;
	f.count = 1;
	f.flags = HBM_FACT_UNHEARD;
	f.sync = sync;
	s->link.fact(s->link.core, &f);
}

static void error_fact(struct amdgpu_facts *s, const struct card *c, const char *block,
		       uint32_t severity, const char *what, uint64_t grew)
{
	struct hbm_fact f;

	fill(&f, HBM_FACT_ERROR, c);
	f.event = HBMGUARD_EVENT_ERROR;	/* in the module's words: an error, no address */
	f.state = severity == HBM_SEVERITY_UE ? HBMGUARD_ERROR_UE : HBMGUARD_ERROR_CE;
	f.severity = severity;
	f.count = grew > UINT32_MAX ? UINT32_MAX : (uint32_t)grew;
	snprintf(f.text, sizeof(f.text), "%s: %" PRIu64 " new %s error%s", block, grew, what,
		 grew == 1 ? "" : "s");
	s->link.fact(s->link.core, &f);
}

static int by_page(const void *a, const void *b)
{
	const struct amdgpu_bad_page *x = a, *y = b;

	if (x->pfn != y->pfn)
		return x->pfn < y->pfn ? -1 : 1;
	return (x->size > y->size) - (x->size < y->size);
}

/*
 * The pages of @now that @was did not have, or had in another state.  Each
 * is looked up in a sorted copy of @was: the list holds up to some 10^4
 * pages (RAS_MAX_RECORD_COUNT, a 256 KiB EEPROM of 24-byte records:
 * amdgpu_ras_eeprom.c, 6.12), read every poll, where a scan per page took
 * 10^8 comparisons.  Return: 0, or -ENOMEM: nothing told (the next poll
 * tells it).
 */
static int new_pages(struct amdgpu_facts *s, const struct card *c,
		     const struct amdgpu_ras *was, const struct amdgpu_ras *now)
{
	struct amdgpu_bad_page *sorted = NULL;
	size_t i;

	if (was->nr_pages) {
		sorted = malloc(was->nr_pages * sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		memcpy(sorted, was->pages, was->nr_pages * sizeof(*sorted));
		qsort(sorted, was->nr_pages, sizeof(*sorted), by_page);
	}
	for (i = 0; i < now->nr_pages; i++) {
		const struct amdgpu_bad_page *p = &now->pages[i], *w = NULL;

		if (sorted)
			w = bsearch(p, sorted, was->nr_pages, sizeof(*sorted), by_page);
		if (!w || w->state != p->state)
			page_fact(s, c, p, 0);
	}
	free(sorted);
	return 0;
}

/* What each block's counts grew by since the last read. */
static void new_errors(struct amdgpu_facts *s, const struct card *c,
		       const struct amdgpu_ras *was, struct amdgpu_ras *now)
{
	size_t i, j;

	for (i = 0; i < now->nr_blocks; i++) {
		struct amdgpu_err_count *n = &now->block[i].count;
		const struct amdgpu_err_count *o = NULL;

		for (j = 0; j < was->nr_blocks; j++)
			if (!strcmp(was->block[j].name, now->block[i].name))
				o = &was->block[j].count;
		if (n->inaccessible) {		/* in reset: keep the last counts */
			if (o)
				*n = *o;
			continue;
		}
		if (!o || o->inaccessible)
			continue;		/* nothing to compare with yet */
		if (n->ue > o->ue)
			error_fact(s, c, now->block[i].name, HBM_SEVERITY_UE, "uncorrectable",
				   n->ue - o->ue);
		if (n->de > o->de)
			error_fact(s, c, now->block[i].name, HBM_SEVERITY_UE, "deferred",
				   n->de - o->de);
		if (n->ce > o->ce)
			error_fact(s, c, now->block[i].name, HBM_SEVERITY_CE, "correctable",
				   n->ce - o->ce);
	}
}

/*
 * A card's device: its identity, PCI address and size; 0 when not amdgpu's,
 * -EAGAIN when its unique_id exists but cannot be read now
 * (amdgpu_get_unique_id() says -EPERM in reset and in suspend).
 */
static int describe(const char *dir, const char *name, struct hbm_fact_device *dev)
{
	char uevent[4096], driver[64], buf[64];
	int err;

	if (read_uevent(dir, uevent, sizeof(uevent)) ||
	    !uevent_value(uevent, "DRIVER", driver, sizeof(driver)) || strcmp(driver, "amdgpu"))
		return 0;
	memset(dev, 0, sizeof(*dev));
	dev->id = HBM_NO_DEVICE_ID;
	dev->kind = HBM_DEVICE_AMDGPU;
	dev->page_size = AMDGPU_PAGE_SIZE;
	if (!uevent_value(uevent, "PCI_SLOT_NAME", dev->pci, sizeof(dev->pci)))
		dev->pci[0] = 0;
	err = read_small(dir, "unique_id", buf, sizeof(buf));
	if (err && err != -ENOENT)
		return -EAGAIN;
	if (!err && buf[0])
		snprintf(dev->identity, sizeof(dev->identity), "amdgpu-%.24s", buf);
	else if (dev->pci[0])
		snprintf(dev->identity, sizeof(dev->identity), "amdgpu-pci-%s", dev->pci);
	else
		return 0;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	if (!read_small(dir, "mem_info_vram_total", buf, sizeof(buf)))
		dev->size = strtoull(buf, NULL, 10);
	return 1;
}

static struct card *find_card(struct amdgpu_facts *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (!strcmp(s->card[i].name, name))
			return &s->card[i];
	return NULL;
}

static void gone(struct amdgpu_facts *s, struct card *c)
{
	struct hbm_fact f;

	fill(&f, HBM_FACT_DEVICE_GONE, c);
	s->link.fact(s->link.core, &f);
	amdgpu_ras_free(&c->last);
	*c = s->card[--s->nr];
}

/*
 * A card's health as its list gives it: a page amdgpu could not reserve
 * ('F') stays in use, bad: RMA; else OK (amdgpu's files say no more).
 */
static uint32_t list_health(const struct amdgpu_ras *ras)
{
	size_t i;

	for (i = 0; i < ras->nr_pages; i++)
		if (ras->pages[i].state == AMDGPU_PAGE_FAILED)
			return HBMGUARD_HEALTH_RMA;
	return HBMGUARD_HEALTH_OK;
}

/*
 * What its blocks count, those read (in reset since, their last: see
 * new_errors()), de: as ue (as error_fact() says it): the base that its
 * ERROR facts' growth adds to.  Return: the blocks counted, a bit each.
 */
static uint32_t driver_counts(const struct amdgpu_ras *ras, struct hbm_fact_driver *d)
{
	uint32_t counted = 0;
	size_t i;

	for (i = 0; i < ras->nr_blocks; i++) {
		const struct amdgpu_err_count *n = &ras->block[i].count;

		if (n->inaccessible)
			continue;
		d->ue += n->ue + n->de;
		d->ce += n->ce;
		counted |= 1U << i;
	}
	if (counted)
		d->have = HBM_DRIVER_ECC;
	return counted;
}

/*
 * Its health as @ras gives it, when it changed or @sync (read, not heard):
 * its last fact.  Its blocks' counts go with the first (@sync), and again,
 * with its health, changed or not, when a block first read since counts
 * too (one in reset then, or whose query fails for good, is left out of
 * the total until it reads): the registrar adds growth only to counts it
 * was given, and a block's first count is no growth.
 */
static void health_fact(struct amdgpu_facts *s, struct card *c, const struct amdgpu_ras *ras,
			int sync)
{
	struct hbm_fact_driver counts = { 0 };
	uint32_t health = list_health(ras), counted = driver_counts(ras, &counts);
	struct hbm_fact f;

	if (!sync && !(counted & ~c->told_blocks))
		counts = (struct hbm_fact_driver){ 0 };	/* the total it has stands */
	if (!sync && health == c->health && !counts.have)
		return;
	fill(&f, HBM_FACT_HEALTH, c);
	f.event = HBMGUARD_EVENT_HEALTH;
	f.state = health;
	f.aux = c->health;
	f.flags = HBM_FACT_UNHEARD;	/* read, as its pages are: the module's event says it */
	f.sync = sync;
	f.driver = counts;
	if (counts.have)
		c->told_blocks = counted;
	if (health == HBMGUARD_HEALTH_RMA)
		snprintf(f.text, sizeof(f.text), "a bad page amdgpu could not reserve");
	c->health = health;
	s->link.fact(s->link.core, &f);
}

/* A card not seen before: the device, what its list already holds, its health. */
static void seen(struct amdgpu_facts *s, const char *name, const struct hbm_fact_device *dev,
		 struct amdgpu_ras *ras, ino_t ino)
{
	struct card *c;
	struct hbm_fact f;
	size_t i;

	if (s->nr == AMDGPU_MAX_CARDS) {
		if (!s->full_said)
			fprintf(stderr, "<3>hbmguardd: amdgpu: more than %d cards: %s not watched\n",
				AMDGPU_MAX_CARDS, name);
		s->full_said = true;
		amdgpu_ras_free(ras);
		return;
	}
	c = &s->card[s->nr++];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->present = true;
	c->dev = *dev;
	c->ino = ino;
	c->last = *ras;
	if (strncmp(dev->identity, "amdgpu-pci-", 11) == 0)
		fprintf(stderr, "<5>hbmguardd: amdgpu: %s has no unique_id: its identity "
			"follows its PCI slot, %s\n", name, dev->pci);
	fill(&f, HBM_FACT_DEVICE_SEEN, c);
	f.sync = s->polled ? HBM_SYNC_ADDED : HBM_SYNC_START;
	s->link.fact(s->link.core, &f);
	for (i = 0; i < ras->nr_pages; i++)
		page_fact(s, c, &ras->pages[i], f.sync);
	health_fact(s, c, ras, f.sync);
}

/*
 * Its unique_id could not be read (in reset, suspended, or a resume that
 * failed, for good): said once while it lasts.  A card seen keeps its
 * identity and last read; one not seen yet is not, until it reads.
 */
static void unnamed(struct amdgpu_facts *s, struct card *c, const char *name)
{
	size_t i;

	if (c) {
		c->present = true;	/* the same GPU: read it next time */
		if (c->error != -EAGAIN)
			fprintf(stderr, "<4>hbmguardd: amdgpu: %s: its unique_id cannot be read "
				"(in reset or suspended): its last read kept until it can\n", name);
		c->error = -EAGAIN;
		return;
	}
	for (i = 0; i < s->nr_unnamed && strcmp(s->unnamed[i], name); i++)
		;
	if (i < s->nr_unnamed || s->nr_unnamed == AMDGPU_MAX_CARDS)
		return;		/* said; or as many said as there can be cards */
	fprintf(stderr, "<4>hbmguardd: amdgpu: %s: its unique_id cannot be read (in reset or "
		"suspended): not watched until it can\n", name);
	snprintf(s->unnamed[s->nr_unnamed++], sizeof(s->unnamed[0]), "%s", name);
}

/* Its unique_id read: said again should it fail again. */
static void named(struct amdgpu_facts *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nr_unnamed; i++)
		if (!strcmp(s->unnamed[i], name)) {
			memcpy(s->unnamed[i], s->unnamed[--s->nr_unnamed], sizeof(s->unnamed[0]));
			return;
		}
}

/*
 * amdgpu's list only grows while the driver has the card (its entries
 * appended to eh_data->bps by amdgpu_ras_add_bad_pages(), none taken out
 * until the driver lets the card go: a new card directory, poll_card()),
 * but a read of it may end early: amdgpu_ras_sysfs_badpages_read()
 * returns 0, the end, where amdgpu_ras_badpages_read() fails (its
 * kmalloc() of the whole list), for each 4 KiB read (amdgpu_ras.c, 6.1 and
 * 6.12).  Read shorter than the last, and the same pages as far as it
 * goes: the rest of the last read kept, so that its pages neither leave
 * its health nor come back as news.  Return: 0, or -ENOMEM (nothing read).
 */
static int keep_rest(struct card *c, struct amdgpu_ras *now)
{
	const struct amdgpu_ras *was = &c->last;
	struct amdgpu_bad_page *p;
	size_t i;

	for (i = 0; i < now->nr_pages && i < was->nr_pages; i++)
		if (now->pages[i].pfn != was->pages[i].pfn)
			break;
	if (now->nr_pages >= was->nr_pages || i < now->nr_pages) {
		c->short_said = false;
		return 0;	/* whole, or another list */
	}
	p = realloc(now->pages, was->nr_pages * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memcpy(p + now->nr_pages, was->pages + now->nr_pages,
	       (was->nr_pages - now->nr_pages) * sizeof(*p));
	if (!c->short_said)
		fprintf(stderr, "<4>hbmguardd: amdgpu: %s: its bad-page list read short (%zu of "
			"%zu pages: the driver had no memory for it): the rest kept from the "
			"last read\n", c->name, now->nr_pages, was->nr_pages);
	c->short_said = true;
	now->pages = p;
	now->nr_pages = was->nr_pages;
	return 0;
}

/* Card @name of the DRM directory, open as @drm. */
static void poll_card(struct amdgpu_facts *s, int drm, const char *name)
{
	struct hbm_fact_device dev;
	struct amdgpu_ras ras;
	struct card *c = find_card(s, name);
	char dir[PATH_MAX], file[64];
	const char *why = NULL;
	struct stat st;
	size_t line;
	int err;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s/device", s->drm_dir, name) >= sizeof(dir))
		return;
	err = describe(dir, name, &dev);
	if (err == -EAGAIN)
		unnamed(s, c, name);
	if (err <= 0)
		return;
	named(s, name);
	/*
	 * kernfs numbers each node it makes anew (kernfs_new_node(),
	 * fs/kernfs/dir.c, 6.1 and 6.12): another inode under the card's
	 * name is a card the driver made anew (unbound and bound again
	 * between two polls), its list read anew from its EEPROM.
	 */
	if (fstatat(drm, name, &st, 0))	/* the card's directory, not its device's */
		st.st_ino = 0;
	if (c && (strcmp(c->dev.identity, dev.identity) || c->ino != st.st_ino)) {
		gone(s, c);		/* another GPU, or the driver's anew */
		c = NULL;
	}
	err = amdgpu_ras_read(dir, &ras, &why, file, sizeof(file), &line);
	if (err == -ENOENT && !strcmp(why, "no ras directory"))
		return;			/* RAS off: nothing to watch */
	if (c)
		c->present = true;
	if (err) {
		if ((!c || c->error != err) && line)
			fprintf(stderr, "<3>hbmguardd: amdgpu: %s: %s:%zu: %s\n", name, file, line,
				why);
		else if (!c || c->error != err)
			fprintf(stderr, "<3>hbmguardd: amdgpu: %s: %s: %s\n", name, file, why);
		if (c)
			c->error = err;
		return;
	}
	if (!c) {
		seen(s, name, &dev, &ras, st.st_ino);
		return;
	}
	if (keep_rest(c, &ras) || new_pages(s, c, &c->last, &ras)) {
		amdgpu_ras_free(&ras);
		return;
	}
	c->error = 0;
	new_errors(s, c, &c->last, &ras);
	health_fact(s, c, &ras, 0);
	amdgpu_ras_free(&c->last);
	c->last = ras;
}

/**
 * amdgpu_facts_poll() - read every card's files, tell the core what changed
 * @s: the source
 *
 * Return: 0, or the negative errno of reading the DRM directory.
 */
int amdgpu_facts_poll(struct amdgpu_facts *s)
{
	DIR *dir = opendir(s->drm_dir);
	struct dirent *de;
	size_t i;

	if (!dir)
		return -errno;
	for (i = 0; i < s->nr; i++)
		s->card[i].present = false;
	while ((de = readdir(dir))) {
		unsigned int n;
		char tail;

		/* "card0", not its connectors ("card0-DP-1") */
		if (sscanf(de->d_name, "card%u%c", &n, &tail) == 1 &&
		    strlen(de->d_name) < sizeof(s->card[0].name))
			poll_card(s, dirfd(dir), de->d_name);
	}
	closedir(dir);
	for (i = s->nr; i-- > 0;)
		if (!s->card[i].present)
			gone(s, &s->card[i]);
	s->polled = true;
	return 0;
}

/**
 * amdgpu_facts_start() - the cards as they are now, told to the core
 * @drm_dir: HBM_AMDGPU_DRM_DIR, or a fixture tree
 * @link: the core's way in
 *
 * Return: the source, or NULL when out of memory (said).
 */
struct amdgpu_facts *amdgpu_facts_start(const char *drm_dir, const struct hbm_source_link *link)
{
	struct amdgpu_facts *s = calloc(1, sizeof(*s));

	if (!s) {
		fprintf(stderr, "<3>hbmguardd: amdgpu: out of memory\n");
		return NULL;
	}
	snprintf(s->drm_dir, sizeof(s->drm_dir), "%s", drm_dir);
	s->link = *link;
	amdgpu_facts_poll(s);		/* no DRM directory: no card, no line */
	return s;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *arg)
{
	(void)usec;
	amdgpu_facts_poll(arg);
	sd_event_source_set_time_relative(src, (uint64_t)HBM_AMDGPU_PERIOD_S * 1000000);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	return 0;
}

/**
 * amdgpu_facts_watch() - a read every HBM_AMDGPU_PERIOD_S seconds, from @loop
 * @s: the source
 * @loop: the daemon's loop
 *
 * Return: 0, or a negative errno.
 */
int amdgpu_facts_watch(struct amdgpu_facts *s, sd_event *loop)
{
	return sd_event_add_time_relative(loop, &s->timer, CLOCK_MONOTONIC,
					  (uint64_t)HBM_AMDGPU_PERIOD_S * 1000000, 0, on_timer, s);
}

/**
 * amdgpu_facts_stop() - no more reads
 * @s: the source, or NULL
 */
void amdgpu_facts_stop(struct amdgpu_facts *s)
{
	size_t i;

	if (!s)
		return;
	sd_event_source_disable_unref(s->timer);
	for (i = 0; i < s->nr; i++)
		amdgpu_ras_free(&s->card[i].last);
	free(s);
}
