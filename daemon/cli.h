/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The output conventions of hbmctl's commands, one place for all of them:
 * JSON (--json=short|pretty, systemd's form), built with json-c as one
 * object and printed whole at the end, so that an error midway prints no
 * half document; and tables (--no-legend) whose columns are as wide as
 * their widest cell, so that a 40-character identity never shifts a row.
 */
#ifndef HBM_CLI_H
#define HBM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

enum hbm_cli_json {
	HBM_CLI_JSON_OFF,
	HBM_CLI_JSON_SHORT,	/* one line */
	HBM_CLI_JSON_PRETTY,	/* indented */
};

/* What --json= asked for, and whether the tables print their headers. */
extern enum hbm_cli_json hbm_cli_json;
extern bool hbm_cli_legend;

int hbm_cli_json_mode(const char *arg);

struct json_object *hbm_cli_obj(void);
struct json_object *hbm_cli_arr(void);
struct json_object *hbm_cli_str(const char *s);
struct json_object *hbm_cli_u64(uint64_t v);
struct json_object *hbm_cli_i64(int64_t v);
struct json_object *hbm_cli_double(double v, int decimals);
struct json_object *hbm_cli_bool(bool v);
void hbm_cli_add(struct json_object *obj, const char *key, struct json_object *v);
void hbm_cli_add_str(struct json_object *obj, const char *key, const char *s);
void hbm_cli_add_u64(struct json_object *obj, const char *key, uint64_t v);
void hbm_cli_append(struct json_object *arr, struct json_object *v);
void hbm_cli_json_print(struct json_object *doc);
const char *hbm_cli_json_text(struct json_object *doc, enum hbm_cli_json mode);

/*
 * A table: cells added row after row with hbm_cli_cell(), printed with
 * hbm_cli_table_print() (which frees them).  @align has one letter per
 * column, 'l' or 'r'.
 */
struct hbm_cli_table {
	unsigned int cols;
	const char *const *head;
	const char *align;
	char **cells;
	size_t n, cap;
};

void hbm_cli_table_init(struct hbm_cli_table *t, unsigned int cols, const char *const *head,
			const char *align);
void hbm_cli_cell(struct hbm_cli_table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hbm_cli_table_print(struct hbm_cli_table *t, FILE *out);

#endif /* HBM_CLI_H */
