// SPDX-License-Identifier: GPL-2.0
/* Unit tests of hbmctl's output conventions (daemon/cli.c) and daemon/utf8.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "utf8.h"
#include "unit.h"

static const char *repaired(const char *s)
{
	static char out[256];

	hbm_utf8_repair(out, sizeof(out), s);
	return out;
}

#define FFFD "\xef\xbf\xbd"

/*
 * Each expected string is what Python's bytes.decode("utf-8", "replace")
 * gives (Unicode's maximal subparts); the implementation was compared with
 * it on every 1- to 4-byte string of boundary bytes.
 */
START_TEST(utf8_repair)
{
	char out[8];

	/* Well formed: untouched, 1 to 4 bytes, the last code point included. */
	ck_assert_str_eq(repaired("sim:sim0"), "sim:sim0");
	ck_assert_str_eq(repaired("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
			 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	ck_assert_str_eq(repaired("\xf4\x8f\xbf\xbf\x7f"), "\xf4\x8f\xbf\xbf\x7f");
	/* A stray continuation byte, a byte never in UTF-8. */
	ck_assert_str_eq(repaired("a\x80z"), "a" FFFD "z");
	ck_assert_str_eq(repaired("\xff\xfe"), FFFD FFFD);
	/* Cut short: one U+FFFD for the whole start, the rest kept. */
	ck_assert_str_eq(repaired("GPU-\xe2\x82"), "GPU-" FFFD);
	ck_assert_str_eq(repaired("\xf0\x9f\x98" "A"), FFFD "A");
	/* Overlong forms, surrogates, past U+10FFFF: each byte replaced. */
	ck_assert_str_eq(repaired("\xc0\xaf"), FFFD FFFD);
	ck_assert_str_eq(repaired("\xe0\x80\xaf"), FFFD FFFD FFFD);
	ck_assert_str_eq(repaired("\xed\xa0\x80"), FFFD FFFD FFFD);
	ck_assert_str_eq(repaired("\xf4\x90\x80\x80"), FFFD FFFD FFFD FFFD);
	ck_assert_str_eq(repaired("\xf5\x80"), FFFD FFFD);
	/* Too little room: cut between characters, never in one. */
	ck_assert_uint_eq(hbm_utf8_repair(out, 4, "ab\xc3\xa9"), 2);
	ck_assert_str_eq(out, "ab");
	ck_assert_uint_eq(hbm_utf8_repair(out, 4, "a\xff"), 1);
	ck_assert_str_eq(out, "a");
	ck_assert_uint_eq(hbm_utf8_repair(out, 5, "a\xff"), 4);
	ck_assert_str_eq(out, "a" FFFD);
	ck_assert_uint_eq(hbm_utf8_repair(out, 1, "abc"), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(json_modes)
{
	ck_assert_int_eq(hbm_cli_json_mode(NULL), HBM_CLI_JSON_SHORT);
	ck_assert_int_eq(hbm_cli_json_mode("short"), HBM_CLI_JSON_SHORT);
	ck_assert_int_eq(hbm_cli_json_mode("pretty"), HBM_CLI_JSON_PRETTY);
	ck_assert_int_eq(hbm_cli_json_mode("off"), HBM_CLI_JSON_OFF);
	ck_assert_int_eq(hbm_cli_json_mode(""), -1);
	ck_assert_int_eq(hbm_cli_json_mode("bogus"), -1);
	ck_assert_int_eq(hbm_cli_json_mode("Pretty"), -1);
	ck_assert_int_eq(hbm_cli_json_mode("short "), -1);
}
END_TEST

/*
 * The premise: json-c copies bytes from 0x80 up as they are, so a name
 * from the kernel could make a document invalid.  If a json-c release
 * starts escaping them, this fails and the repair may go.
 */
START_TEST(jsonc_passes_bytes)
{
	struct json_object *o = json_object_new_string("\xff");

	ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "\"\xff\"");
	json_object_put(o);
}
END_TEST

/* A document with every kind of name: valid UTF-8 that says what it held. */
START_TEST(json_documents)
{
	struct json_object *doc = hbm_cli_obj(), *arr = hbm_cli_arr(), *back;
	struct json_tokener *tok = json_tokener_new();
	const char *text;

	hbm_cli_add_str(doc, "identity", "GPU-\xff\xfe-\xe2\x82");
	hbm_cli_add_str(doc, "model", "caf\xc3\xa9 \"H200\"\n\x01/x");
	hbm_cli_add_u64(doc, "size", UINT64_MAX);
	hbm_cli_add(doc, "device", NULL);
	hbm_cli_append(arr, hbm_cli_bool(true));
	hbm_cli_append(arr, hbm_cli_i64(-5));
	hbm_cli_add(doc, "list", arr);
	text = hbm_cli_json_text(doc, HBM_CLI_JSON_SHORT);
	ck_assert_str_eq(text, "{\"identity\":\"GPU-" FFFD FFFD "-" FFFD "\","
			 "\"model\":\"caf\xc3\xa9 \\\"H200\\\"\\n\\u0001/x\","
			 "\"size\":18446744073709551615,\"device\":null,\"list\":[true,-5]}");
	/* json-c's own parser, told to check UTF-8, reads it back. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	back = json_tokener_parse_ex(tok, text, strlen(text) + 1);
	ck_assert_ptr_nonnull(back);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(back, "model")),
			 "caf\xc3\xa9 \"H200\"\n\x01/x");
	json_object_put(back);
	/* ... and refuses what json-c alone would have written. */
	json_tokener_reset(tok);
	ck_assert_ptr_null(json_tokener_parse_ex(tok, "\"\xff\"", 4));
	json_tokener_free(tok);

	text = hbm_cli_json_text(doc, HBM_CLI_JSON_PRETTY);
	ck_assert_ptr_nonnull(strstr(text, "{\n  \"identity\": \"GPU-"));
	ck_assert_ptr_nonnull(strstr(text, "\n  \"list\": [\n    true,\n    -5\n  ]\n}"));
	json_object_put(doc);
}
END_TEST

/* Numbers with a fraction, as printed; what JSON has no number for is null. */
START_TEST(json_doubles)
{
	struct json_object *doc = hbm_cli_obj(), *back;

	hbm_cli_add(doc, "interval_s", hbm_cli_double(10987.713218, 1));
	hbm_cli_add(doc, "waste", hbm_cli_double(0.1042689592, 6));
	hbm_cli_add(doc, "big", hbm_cli_double(1.8446744073709552e19, 0));
	hbm_cli_add(doc, "nan", hbm_cli_double(NAN, 1));
	hbm_cli_add(doc, "inf", hbm_cli_double(-INFINITY, 1));
	ck_assert_str_eq(hbm_cli_json_text(doc, HBM_CLI_JSON_SHORT),
			 "{\"interval_s\":10987.7,\"waste\":0.104269,\"big\":18446744073709551616,"
			 "\"nan\":null,\"inf\":null}");
	back = json_tokener_parse(hbm_cli_json_text(doc, HBM_CLI_JSON_SHORT));
	ck_assert_ptr_nonnull(back);
	ck_assert(json_object_get_double(json_object_object_get(back, "interval_s")) == 10987.7);
	json_object_put(back);
	json_object_put(doc);
}
END_TEST

static char *table_text(bool legend)
{
	static const char *const head[] = { "ID", "IDENTITY", "PAGES", "HEALTH" };
	struct hbm_cli_table t;
	char *text;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	hbm_cli_legend = legend;
	hbm_cli_table_init(&t, 4, head, "llrl");
	hbm_cli_cell(&t, "%u", 0);
	hbm_cli_cell(&t, "%s", "GPU-0123456789abcdef0123456789abcdef0123");
	hbm_cli_cell(&t, "%u", 7);
	hbm_cli_cell(&t, "%s", "ok");
	hbm_cli_cell(&t, "%u", 12);
	hbm_cli_cell(&t, "%s", "sim:a");
	hbm_cli_cell(&t, "%u", 123456);
	hbm_cli_cell(&t, "%s", "reset-required");
	hbm_cli_table_print(&t, f);
	fclose(f);
	hbm_cli_legend = true;
	return text;
}

/* Columns as wide as their widest cell: a 40-character identity fits. */
START_TEST(tables)
{
	char *text = table_text(true);

	ck_assert_str_eq(text,
		"ID IDENTITY                                  PAGES HEALTH\n"
		"0  GPU-0123456789abcdef0123456789abcdef0123      7 ok\n"
		"12 sim:a                                    123456 reset-required\n");
	free(text);
	text = table_text(false);
	ck_assert_str_eq(text,
		"0  GPU-0123456789abcdef0123456789abcdef0123      7 ok\n"
		"12 sim:a                                    123456 reset-required\n");
	free(text);
}
END_TEST

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("output");

	tcase_add_test(tc, utf8_repair);
	tcase_add_test(tc, json_modes);
	tcase_add_test(tc, jsonc_passes_bytes);
	tcase_add_test(tc, json_documents);
	tcase_add_test(tc, json_doubles);
	tcase_add_test(tc, tables);
	suite_add_tcase(s, tc);
	return s;
}
