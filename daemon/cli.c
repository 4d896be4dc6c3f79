// SPDX-License-Identifier: GPL-2.0
/*
 * hbmctl's output conventions (cli.h): JSON through json-c, tables sized to
 * their cells.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "utf8.h"

enum hbm_cli_json hbm_cli_json;
bool hbm_cli_legend = true;

/* Nothing half built is ever printed: out of memory ends the program. */
static void *need(void *p)
{
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		exit(1);
	}
	return p;
}

/**
 * hbm_cli_json_mode() - the mode --json asked for
 * @arg: the option's argument, NULL for a plain --json
 *
 * systemd's words (systemctl(1), journalctl(1) --json=): "short", "pretty"
 * and "off".  A plain --json is "short", as hbmctl's --json always was.
 *
 * Return: an enum hbm_cli_json, or -1 for any other word.
 */
int hbm_cli_json_mode(const char *arg)
{
	if (!arg || !strcmp(arg, "short"))
		return HBM_CLI_JSON_SHORT;
	if (!strcmp(arg, "pretty"))
		return HBM_CLI_JSON_PRETTY;
	if (!strcmp(arg, "off"))
		return HBM_CLI_JSON_OFF;
	return -1;
}

struct json_object *hbm_cli_obj(void)
{
	return need(json_object_new_object());
}

struct json_object *hbm_cli_arr(void)
{
	return need(json_object_new_array());
}

/*
 * Every string of a document goes through here: it is valid UTF-8.  json-c
 * escapes control characters, quotes and backslashes but copies every byte
 * from 0x80 up as it is (json_escape_str() in json_object.c, json-c 0.16,
 * Debian bookworm's): a name that is not UTF-8 would make the whole
 * document invalid.
 */
struct json_object *hbm_cli_str(const char *s)
{
	size_t cap = 3 * strlen(s) + 1;
	char *buf = need(malloc(cap));
	struct json_object *o;

	hbm_utf8_repair(buf, cap, s);
	o = need(json_object_new_string(buf));
	free(buf);
	return o;
}

struct json_object *hbm_cli_u64(uint64_t v)
{
	return need(json_object_new_uint64(v));
}

struct json_object *hbm_cli_i64(int64_t v)
{
	return need(json_object_new_int64(v));
}

/* A number of @decimals decimals, as printed; JSON's null when not finite. */
struct json_object *hbm_cli_double(double v, int decimals)
{
	char text[64];

	if (!isfinite(v))
		return NULL;
	snprintf(text, sizeof(text), "%.*f", decimals, v);
	return need(json_object_new_double_s(v, text));
}

struct json_object *hbm_cli_bool(bool v)
{
	return need(json_object_new_boolean(v));
}

/* @v NULL is JSON's null. */
void hbm_cli_add(struct json_object *obj, const char *key, struct json_object *v)
{
	if (json_object_object_add(obj, key, v))
		need(NULL);
}

void hbm_cli_add_str(struct json_object *obj, const char *key, const char *s)
{
	hbm_cli_add(obj, key, hbm_cli_str(s));
}

void hbm_cli_add_u64(struct json_object *obj, const char *key, uint64_t v)
{
	hbm_cli_add(obj, key, hbm_cli_u64(v));
}

void hbm_cli_append(struct json_object *arr, struct json_object *v)
{
	if (json_object_array_add(arr, v))
		need(NULL);
}

/*
 * The document's text, owned by @doc.  Slashes are left as they are (a
 * path reads as a path); "pretty" indents by two spaces, json-c's.
 */
const char *hbm_cli_json_text(struct json_object *doc, enum hbm_cli_json mode)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	if (mode == HBM_CLI_JSON_PRETTY)
		flags |= JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;
	return need((void *)json_object_to_json_string_ext(doc, flags));
}

/* @doc printed whole, on one line or indented, then freed. */
void hbm_cli_json_print(struct json_object *doc)
{
	printf("%s\n", hbm_cli_json_text(doc, hbm_cli_json));
	json_object_put(doc);
}

void hbm_cli_table_init(struct hbm_cli_table *t, unsigned int cols, const char *const *head,
			const char *align)
{
	*t = (struct hbm_cli_table){ .cols = cols, .head = head, .align = align };
}

void hbm_cli_cell(struct hbm_cli_table *t, const char *fmt, ...)
{
	va_list ap;
	char *cell;

	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->cells = need(realloc(t->cells, t->cap * sizeof(*t->cells)));
	}
	va_start(ap, fmt);
	if (vasprintf(&cell, fmt, ap) < 0)
		cell = NULL;
	va_end(ap);
	t->cells[t->n++] = need(cell);
}

/*
 * Each column as wide as its widest cell (and its header, when printed),
 * one space between columns, no space after the last.  Cells are ASCII:
 * names reach them escaped (hbm_ctl_escape()), so bytes are columns.
 */
void hbm_cli_table_print(struct hbm_cli_table *t, FILE *out)
{
	size_t width[t->cols], i;
	unsigned int c;

	for (c = 0; c < t->cols; c++)
		width[c] = hbm_cli_legend ? strlen(t->head[c]) : 0;
	for (i = 0; i < t->n; i++)
		if (strlen(t->cells[i]) > width[i % t->cols])
			width[i % t->cols] = strlen(t->cells[i]);
	for (i = hbm_cli_legend ? 0 : t->cols; i < t->n + t->cols; i++) {
		const char *s = i < t->cols ? t->head[i] : t->cells[i - t->cols];
		bool last = i % t->cols == t->cols - 1;

		c = i % t->cols;
		if (t->align[c] == 'r')
			fprintf(out, "%*s", (int)width[c], s);
		else if (last)
			fputs(s, out);
		else
			fprintf(out, "%-*s", (int)width[c], s);
		fputs(last ? "\n" : " ", out);
	}
	for (i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n = t->cap = 0;
}
