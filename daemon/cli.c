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

/*
 * The length of the well-formed UTF-8 sequence at @s (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), or 0 when there
 * is none; then *@bad is the number of bytes of its maximal subpart, which
 * one U+FFFD replaces (Unicode's "substitution of maximal subparts",
 * chapter 3.9, as browsers and Python decode).
 */
static size_t utf8_seq(const unsigned char *s, size_t *bad)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (s[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (s[0] == 0xf4)
			hi = 0x8f;	/* past U+10FFFF */
	} else {
		*bad = 1;
		return 0;
	}
	for (i = 1; i < len; i++, lo = 0x80, hi = 0xbf) {
		if (s[i] < lo || s[i] > hi) {	/* a NUL ends it here too */
			*bad = i;
			return 0;
		}
	}
	return len;
}

/**
 * hbm_cli_utf8_repair() - a string made valid UTF-8
 * @out: where it goes
 * @cap: @out's size: 3 * strlen(@s) + 1 always suffices
 * @s: the string, NUL-terminated, bytes from anywhere (the kernel's names)
 *
 * json-c escapes control characters, quotes and backslashes but copies
 * every byte from 0x80 up as it is (json_escape_str() in json_object.c,
 * json-c 0.16, Debian bookworm's): a name that is not UTF-8 would make the
 * whole document invalid.  Every ill-formed sequence is replaced by U+FFFD,
 * so that the rest of the name survives; cut short, never mid-character,
 * when @cap is too small.
 *
 * Return: the length written (without the NUL).
 */
size_t hbm_cli_utf8_repair(char *out, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0, len, bad;

	if (!cap)
		return 0;
	while (*p) {
		len = utf8_seq(p, &bad);
		if (len) {
			if (n + len >= cap)
				break;
			memcpy(out + n, p, len);
			p += len;
		} else {
			if (n + 3 >= cap)
				break;
			memcpy(out + n, "\xef\xbf\xbd", 3);
			p += bad;
		}
		n += len ? len : 3;
	}
	out[n] = 0;
	return n;
}

struct json_object *hbm_cli_obj(void)
{
	return need(json_object_new_object());
}

struct json_object *hbm_cli_arr(void)
{
	return need(json_object_new_array());
}

/* Every string of a document goes through here: it is valid UTF-8. */
struct json_object *hbm_cli_str(const char *s)
{
	size_t cap = 3 * strlen(s) + 1;
	char *buf = need(malloc(cap));
	struct json_object *o;

	hbm_cli_utf8_repair(buf, cap, s);
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
