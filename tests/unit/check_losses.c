// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of data lost unheard (daemon/losses.c): the module's count of
 * a device's DATA_LOST events against those heard, in the orders the kernel
 * link can see them in (kernel.c: a count read by a resync before or after
 * its events, a registration replaced heard or unheard, a reload).
 */
#include <check.h>
#include <string.h>

#include "losses.h"
#include "unit.h"

struct told {
	unsigned int calls;
	uint32_t id;
	char identity[HBMGUARD_IDENTITY_LEN];
	uint64_t unheard;
};

static void record(void *ctx, uint32_t id, const char *identity, uint64_t unheard)
{
	struct told *t = ctx;

	t->calls++;
	t->id = id;
	strcpy(t->identity, identity);
	t->unheard = unheard;
}

static struct hbm_losses *losses(struct told *t)
{
	static struct hbm_losses l;

	memset(&l, 0, sizeof(l));
	memset(t, 0, sizeof(*t));
	l.unheard = record;
	l.ctx = t;
	return &l;
}

/* DEVICE_GET's count of device @id, registered by event @added. */
static void seen(struct hbm_losses *l, uint32_t id, uint64_t added, uint64_t count,
		 uint64_t last, bool at_start)
{
	struct hbm_loss_count c = { .count = count, .last_seqnum = last, .added_seqnum = added };

	hbm_losses_seen(l, id, "gpu:A", &c, at_start);
}

/* Losses before the daemon started are old news, whatever is read after. */
START_TEST(start_is_old_news)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 3, 10, 4, 50, true);
	hbm_losses_read_to(l, 60);
	seen(l, 3, 10, 4, 50, false);
	hbm_losses_read_to(l, 70);
	ck_assert_uint_eq(t.calls, 0);
	ck_assert_uint_eq(l->due, 0);
}
END_TEST

/* A loss whose event was lost: told once every event up to it is read or lost. */
START_TEST(lost_event_told_once_read_to)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 3, 10, 0, 0, true);
	hbm_losses_read_to(l, 25);		/* events up to 25 read */
	seen(l, 3, 10, 1, 30, false);		/* a resync: one since, the 30th */
	hbm_losses_read_to(l, 29);
	ck_assert_uint_eq(t.calls, 0);		/* 30 may still be queued */
	ck_assert_uint_eq(l->due, 1);
	hbm_losses_read_to(l, 31);		/* read past it, unheard: lost */
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(t.id, 3);
	ck_assert_str_eq(t.identity, "gpu:A");
	ck_assert_uint_eq(t.unheard, 1);
	ck_assert_uint_eq(l->due, 0);
	seen(l, 3, 10, 1, 30, false);		/* the next resync: nothing new */
	hbm_losses_read_to(l, 40);
	ck_assert_uint_eq(t.calls, 1);
}
END_TEST

/* A count read while its event was still queued: the event, read after, makes it up. */
START_TEST(queued_event_makes_it_up)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 3, 10, 0, 0, true);
	seen(l, 3, 10, 2, 30, false);		/* 20 heard below, 30 queued */
	hbm_losses_heard(l, 3, 20);
	ck_assert_uint_eq(t.calls, 0);
	hbm_losses_heard(l, 3, 30);
	ck_assert_uint_eq(t.calls, 0);
	ck_assert_uint_eq(l->due, 0);
}
END_TEST

/* Heard before the count was read: not counted twice, never more than the count. */
START_TEST(heard_before_the_count)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 3, 10, 0, 0, true);
	hbm_losses_heard(l, 3, 20);
	seen(l, 3, 10, 1, 20, false);		/* holds the one heard */
	hbm_losses_read_to(l, 20);
	ck_assert_uint_eq(t.calls, 0);
	hbm_losses_heard(l, 3, 20);		/* its duplicate, were one read: old */
	seen(l, 3, 10, 1, 20, false);
	hbm_losses_read_to(l, 50);
	ck_assert_uint_eq(t.calls, 0);
	/* queued at start, read after: in the count already */
	l = losses(&t);
	seen(l, 4, 10, 1, 30, true);
	hbm_losses_heard(l, 4, 30);
	seen(l, 4, 10, 2, 40, false);		/* one more since, lost */
	hbm_losses_read_to(l, 41);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(t.unheard, 1);
}
END_TEST

/* Of three since the last look, one heard: two told. */
START_TEST(counts_the_unheard_only)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 7, 10, 5, 12, true);
	hbm_losses_heard(l, 7, 40);
	seen(l, 7, 10, 8, 60, false);
	hbm_losses_read_to(l, 61);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(t.id, 7);
	ck_assert_uint_eq(t.unheard, 2);
}
END_TEST

/* A registration heard: it counts from its DEVICE_ADDED, the old one's count forgotten. */
START_TEST(registration_heard)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 2, 10, 6, 30, true);
	hbm_losses_added(l, 2, 40);
	hbm_losses_heard(l, 2, 45);
	seen(l, 2, 40, 1, 45, false);
	hbm_losses_read_to(l, 50);
	ck_assert_uint_eq(t.calls, 0);
	hbm_losses_read_to(l, 60);
	seen(l, 2, 40, 2, 55, false);		/* 55 lost */
	hbm_losses_read_to(l, 60);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(t.unheard, 1);
}
END_TEST

/*
 * A registration unheard (its DEVICE_ADDED lost, found by a resync): every
 * loss since its DEVICE_ADDED is to be heard, none of the old count's.
 */
START_TEST(registration_unheard)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 2, 10, 6, 30, true);
	seen(l, 2, 40, 1, 45, false);		/* another registration, one loss */
	hbm_losses_read_to(l, 44);
	ck_assert_uint_eq(t.calls, 0);
	hbm_losses_read_to(l, 46);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(t.unheard, 1);
	/* the old registration's events heard late are not the new one's */
	l = losses(&t);
	seen(l, 2, 40, 0, 0, true);
	hbm_losses_heard(l, 2, 35);
	seen(l, 2, 40, 1, 50, false);
	hbm_losses_read_to(l, 50);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(t.unheard, 1);
}
END_TEST

/*
 * A reload: the old module's counts compared (its events are all read or
 * lost), then forgotten; an id none was counted for then, read by a
 * resync, is taken as at start: a loss missed, never one made up.
 */
START_TEST(reload)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 1, 10, 0, 0, true);
	seen(l, 1, 10, 1, 90, false);		/* its event not read yet */
	hbm_losses_read_to(l, 80);
	ck_assert_uint_eq(t.calls, 0);
	hbm_losses_renumbered(l);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(l->due, 0);
	ck_assert_uint_eq(l->read_to, 0);
	seen(l, 1, 3, 2, 7, false);		/* the new module numbers from 1 */
	hbm_losses_read_to(l, 8);
	ck_assert_uint_eq(t.calls, 1);
	seen(l, 1, 3, 3, 9, false);		/* counted since: 9 lost */
	hbm_losses_read_to(l, 9);
	ck_assert_uint_eq(t.calls, 2);
	ck_assert_uint_eq(t.unheard, 1);
}
END_TEST

/* A count due outlives its device: told under the identity it was read with. */
START_TEST(outlives_its_device)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, 5, 10, 0, 0, true);
	hbm_losses_seen(l, 5, "gpu:B", &(struct hbm_loss_count){ 1, 20, 10 }, false);
	hbm_losses_read_to(l, 21);		/* the device gone meanwhile */
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_str_eq(t.identity, "gpu:B");
	/* its next registration replaces the entry: nothing of it due */
	seen(l, 5, 10, 0, 0, true);
	seen(l, 5, 10, 1, 30, false);
	hbm_losses_added(l, 5, 25);
	hbm_losses_read_to(l, 40);
	ck_assert_uint_eq(t.calls, 1);
	ck_assert_uint_eq(l->due, 0);
}
END_TEST

/* Ids past the module's limit are not the module's: ignored, nothing written. */
START_TEST(ids_out_of_range)
{
	struct told t;
	struct hbm_losses *l = losses(&t);

	seen(l, HBMGUARD_MAX_DEVICES, 1, 1, 1, false);
	hbm_losses_added(l, UINT32_MAX, 2);
	hbm_losses_heard(l, HBMGUARD_MAX_DEVICES, 3);
	hbm_losses_read_to(l, UINT64_MAX);
	ck_assert_uint_eq(t.calls, 0);
	ck_assert_uint_eq(l->due, 0);
}
END_TEST

Suite *losses_suite(void)
{
	Suite *s = suite_create("losses");
	TCase *tc = tcase_create("losses");

	tcase_add_test(tc, start_is_old_news);
	tcase_add_test(tc, lost_event_told_once_read_to);
	tcase_add_test(tc, queued_event_makes_it_up);
	tcase_add_test(tc, heard_before_the_count);
	tcase_add_test(tc, counts_the_unheard_only);
	tcase_add_test(tc, registration_heard);
	tcase_add_test(tc, registration_unheard);
	tcase_add_test(tc, reload);
	tcase_add_test(tc, outlives_its_device);
	tcase_add_test(tc, ids_out_of_range);
	suite_add_tcase(s, tc);
	return s;
}
