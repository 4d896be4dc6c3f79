// SPDX-License-Identifier: GPL-2.0
/* Unit tests of hbmguardd's journal entries (daemon/journal.c) and catalog. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <linux/hbmguard.h>

#include "journal.h"
#include "unit.h"

static char *catalog(void)
{
	FILE *f = fopen(HBM_CATALOG, "r");
	char *text = calloc(1, 1 << 16);

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_gt(fread(text, 1, (1 << 16) - 1, f), 0);
	fclose(f);
	return text;
}

/* Every event type: an entry, a MESSAGE_ID of its own, explained in the catalog. */
START_TEST(every_type_described)
{
	const char *ids[32] = { NULL };
	char *text = catalog(), needle[64];
	uint32_t type, i;

	for (type = HBMGUARD_EVENT_ERROR; type <= HBMGUARD_EVENT_RESTORED; type++) {
		struct hbm_event_view ev = { .type = type, .count = 1, .state = 1 };
		struct hbm_journal_entry e;

		ck_assert_msg(!hbm_journal_describe(&ev, "gpu0", &e), "type %u", type);
		ck_assert_uint_eq(strlen(e.message_id), 32);
		ck_assert(e.priority >= LOG_EMERG && e.priority <= LOG_DEBUG);
		ck_assert(e.message[0]);
		snprintf(needle, sizeof(needle), "-- %s\n", e.message_id);
		ck_assert_msg(strstr(text, needle), "%s not in the catalog", e.message_id);
		for (i = HBMGUARD_EVENT_ERROR; i < type; i++)
			if (ids[i] && strcmp(ids[i], e.message_id) == 0)
				/* only OVERFLOW and DROPPED share: both are "lost" */
				ck_assert(i == HBMGUARD_EVENT_OVERFLOW &&
					  type == HBMGUARD_EVENT_DROPPED);
		ids[type] = e.message_id;
	}
	free(text);
}
END_TEST

START_TEST(priorities_and_text)
{
	struct hbm_journal_entry e;
	struct hbm_event_view ev = {
		.type = HBMGUARD_EVENT_ERROR, .state = HBMGUARD_ERROR_UE,
		.offset = 0x12345678, .length = 1, .count = 1,	/* the module's: one byte */
	};

	ck_assert_int_eq(hbm_journal_describe(&ev, "0000:3b:00.0", &e), 0);
	ck_assert_int_eq(e.priority, LOG_ERR);
	ck_assert_str_eq(e.message, "0000:3b:00.0: 1 uncorrectable error at 0x12345678");
	ev.state = HBMGUARD_ERROR_CE;
	ev.count = 7;
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_int_eq(e.priority, LOG_NOTICE);
	ck_assert_str_eq(e.message, "g: 7 correctable errors at 0x12345678");
	ev.length = 0;	/* a driver's report without an address: none made up */
	ev.count = 1;
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_str_eq(e.message, "g: 1 correctable error");

	ev = (struct hbm_event_view){ .type = HBMGUARD_EVENT_HEALTH,
		.state = HBMGUARD_HEALTH_RMA, .aux = HBMGUARD_HEALTH_DEGRADED, .count = 163 };
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_int_eq(e.priority, LOG_CRIT);
	ck_assert_str_eq(e.message, "g: health degraded -> rma, 163 bad pages");

	ev = (struct hbm_event_view){ .type = HBMGUARD_EVENT_RETIRED,
		.source = HBMGUARD_SOURCE_RESTORED, .count = 2, .offset = 0x1000, .length = 0x2000 };
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_int_eq(e.priority, LOG_INFO);	/* a restore is no news */
	ck_assert_str_eq(e.message, "g: 2 pages retired in 0x1000+0x2000 (restored)");
	/* moved off a spare that failed: its data went with it */
	ev = (struct hbm_event_view){ .type = HBMGUARD_EVENT_RETIRED, .aux = HBMGUARD_PAGES_DATA_LOST,
		.source = HBMGUARD_SOURCE_CE_THRESHOLD, .count = 1, .offset = 0x1000, .length = 0x1000 };
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_int_eq(e.priority, LOG_ERR);
	ck_assert_str_eq(e.message, "g: 1 page retired in 0x1000+0x1000 (ce-threshold);"
			 " data lost: its memory failed, or it could not be moved");
	ev.type = HBMGUARD_EVENT_FAILED;
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_str_eq(e.message, "g: 1 page could not be bypassed in 0x1000+0x1000: no spare left;"
			 " data lost");
	ck_assert_int_eq(e.priority, LOG_ERR);
	/* cleared, its spare's data could not come home (no memory) */
	ev.type = HBMGUARD_EVENT_CLEARED;
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_str_eq(e.message, "g: 1 page cleared from the table in 0x1000+0x1000;"
			 " data lost: it could not be copied home");
	ck_assert_int_eq(e.priority, LOG_ERR);

	/*
	 * A GPU device's values (issue 13): a reset its driver waits for is
	 * named and is no mere notice, and its driver's retirements say so.
	 */
	ev = (struct hbm_event_view){ .type = HBMGUARD_EVENT_HEALTH,
		.state = HBMGUARD_HEALTH_RESET_REQUIRED, .aux = HBMGUARD_HEALTH_OK };
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_int_eq(e.priority, LOG_WARNING);
	ck_assert_str_eq(e.message, "g: health ok -> reset-required, 0 bad pages");
	ev.state = HBMGUARD_HEALTH_RMA;
	ev.aux = HBMGUARD_HEALTH_RESET_REQUIRED;
	hbm_journal_describe(&ev, "g", &e);
	ck_assert_str_eq(e.message, "g: health reset-required -> rma, 0 bad pages");
	ck_assert_str_eq(hbm_journal_source_name(HBMGUARD_SOURCE_DRIVER), "driver");

	/* Values from a newer module never index out of the tables. */
	ev = (struct hbm_event_view){ .type = HBMGUARD_EVENT_HEALTH, .state = 77, .aux = 99 };
	ck_assert_int_eq(hbm_journal_describe(&ev, "g", &e), 0);
	ck_assert_str_eq(e.message, "g: health ? -> ?, 0 bad pages");
	ck_assert_str_eq(hbm_journal_source_name(1000), "?");
	ev.type = 1000;
	ck_assert_int_eq(hbm_journal_describe(&ev, "g", &e), -1);
}
END_TEST

Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("entries");

	tcase_add_test(tc, every_type_described);
	tcase_add_test(tc, priorities_and_text);
	suite_add_tcase(s, tc);
	return s;
}
