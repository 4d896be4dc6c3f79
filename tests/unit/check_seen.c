// SPDX-License-Identifier: GPL-2.0
/* Unit tests of what hbmguardd has seen of the kernel's events (daemon/seen.c). */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <linux/hbmguard.h>

#include "seen.h"
#include "unit.h"

START_TEST(seq_in_order)
{
	uint64_t next = 0;

	ck_assert(!hbm_seq_lost(&next, 7, HBMGUARD_EVENT_RETIRED));	/* any, at first */
	ck_assert(!hbm_seq_lost(&next, 8, HBMGUARD_EVENT_RETIRED));
	ck_assert(hbm_seq_lost(&next, 10, HBMGUARD_EVENT_RETIRED));	/* 9 lost */
	ck_assert(!hbm_seq_lost(&next, 11, HBMGUARD_EVENT_PENDING));
	ck_assert_uint_eq(next, 12);
}
END_TEST

/* DROPPED carries the seqnum of the event that follows it: one resync. */
START_TEST(seq_dropped_once)
{
	uint64_t next = 5;

	ck_assert(hbm_seq_lost(&next, 9, HBMGUARD_EVENT_DROPPED));
	ck_assert(!hbm_seq_lost(&next, 9, HBMGUARD_EVENT_RETIRED));
	ck_assert(!hbm_seq_lost(&next, 10, HBMGUARD_EVENT_RETIRED));
	next = 0;	/* after an overflow, the first message is DROPPED */
	ck_assert(hbm_seq_lost(&next, 20, HBMGUARD_EVENT_DROPPED));
	ck_assert(!hbm_seq_lost(&next, 20, HBMGUARD_EVENT_FAILED));
}
END_TEST

static void expect_ranges(const struct hbm_ranges *s, size_t nr, const struct hbm_range *r)
{
	size_t i;

	ck_assert_uint_eq(s->nr, nr);
	for (i = 0; i < nr; i++) {
		ck_assert_uint_eq(s->r[i].offset, r[i].offset);
		ck_assert_uint_eq(s->r[i].length, r[i].length);
	}
}

START_TEST(ranges_add)
{
	struct hbm_ranges s = { 0 }, fresh = { 0 };

	ck_assert_int_eq(hbm_ranges_add(&s, 0x9000, 0x1000, &fresh), 0);
	expect_ranges(&fresh, 1, (struct hbm_range[]){ { 0x9000, 0x1000 } });
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_ranges_add(&s, 0x9000, 0x1000, &fresh), 0);
	ck_assert_uint_eq(fresh.nr, 0);		/* seen: nothing new */
	ck_assert_int_eq(hbm_ranges_add(&s, 0x3000, 0x1000, &fresh), 0);
	ck_assert_int_eq(hbm_ranges_add(&s, 0xc000, 0x1000, &fresh), 0);
	hbm_ranges_free(&fresh);
	/* Over all three and between them: only the gaps are new. */
	ck_assert_int_eq(hbm_ranges_add(&s, 0x2000, 0xc000, &fresh), 0);
	expect_ranges(&fresh, 4, (struct hbm_range[]){
		{ 0x2000, 0x1000 }, { 0x4000, 0x5000 }, { 0xa000, 0x2000 }, { 0xd000, 0x1000 } });
	expect_ranges(&s, 1, (struct hbm_range[]){ { 0x2000, 0xc000 } });
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_ranges_add(&s, UINT64_MAX - 0xfff, 0x2000, &fresh), -ERANGE);
	expect_ranges(&s, 1, (struct hbm_range[]){ { 0x2000, 0xc000 } });
	ck_assert_int_eq(hbm_ranges_add(&s, 0x20000, 0x1000, NULL), 0);
	expect_ranges(&s, 2, (struct hbm_range[]){ { 0x2000, 0xc000 }, { 0x20000, 0x1000 } });
	hbm_ranges_free(&s);
}
END_TEST

/*
 * A table read's ranges, in order: each appended (touching ones merged),
 * all fresh; the set then takes a range among them as any other.
 */
START_TEST(ranges_add_in_order)
{
	struct hbm_ranges s = { 0 }, fresh = { 0 };
	uint64_t i;

	for (i = 0; i < 100000; i++)
		ck_assert_int_eq(hbm_ranges_add(&s, 2 * i * 0x1000, 0x1000, &fresh), 0);
	ck_assert_uint_eq(s.nr, 100000);
	ck_assert_uint_eq(fresh.nr, 100000);
	ck_assert_uint_eq(s.r[99999].offset, 199998 * 0x1000ULL);
	hbm_ranges_free(&fresh);
	for (i = 0; i < 100000; i++)	/* read again: nothing new */
		ck_assert_int_eq(hbm_ranges_add(&s, 2 * i * 0x1000, 0x1000, &fresh), 0);
	ck_assert_uint_eq(fresh.nr, 0);
	ck_assert_uint_eq(s.nr, 100000);
	ck_assert_int_eq(hbm_ranges_add(&s, 0x1000, 0x1000, &fresh), 0);	/* fills a gap */
	expect_ranges(&fresh, 1, (struct hbm_range[]){ { 0x1000, 0x1000 } });
	ck_assert_uint_eq(s.nr, 99999);
	ck_assert_uint_eq(s.r[0].length, 0x3000);
	hbm_ranges_free(&fresh);
	ck_assert_int_eq(hbm_ranges_add(&s, 199999 * 0x1000ULL, 0x1000, NULL), 0);	/* touching */
	ck_assert_uint_eq(s.nr, 99999);
	ck_assert_uint_eq(s.r[99998].length, 0x2000);
	hbm_ranges_free(&s);
}
END_TEST

START_TEST(ranges_remove)
{
	struct hbm_ranges s = { 0 }, fresh = { 0 };

	ck_assert_int_eq(hbm_ranges_add(&s, 0x1000, 0x4000, NULL), 0);
	ck_assert_int_eq(hbm_ranges_add(&s, 0x8000, 0x1000, NULL), 0);
	ck_assert_int_eq(hbm_ranges_remove(&s, 0x2000, 0x1000), 0);	/* splits */
	expect_ranges(&s, 3, (struct hbm_range[]){
		{ 0x1000, 0x1000 }, { 0x3000, 0x2000 }, { 0x8000, 0x1000 } });
	ck_assert_int_eq(hbm_ranges_remove(&s, 0x4000, 0x10000), 0);
	expect_ranges(&s, 2, (struct hbm_range[]){ { 0x1000, 0x1000 }, { 0x3000, 0x1000 } });
	/* A page cleared and hit again is new again. */
	ck_assert_int_eq(hbm_ranges_add(&s, 0x8000, 0x1000, &fresh), 0);
	expect_ranges(&fresh, 1, (struct hbm_range[]){ { 0x8000, 0x1000 } });
	hbm_ranges_free(&fresh);
	hbm_ranges_free(&s);
}
END_TEST

Suite *seen_suite(void)
{
	Suite *s = suite_create("seen");
	TCase *tc = tcase_create("seen");

	tcase_add_test(tc, seq_in_order);
	tcase_add_test(tc, seq_dropped_once);
	tcase_add_test(tc, ranges_add);
	tcase_add_test(tc, ranges_add_in_order);
	tcase_add_test(tc, ranges_remove);
	suite_add_tcase(s, tc);
	return s;
}
