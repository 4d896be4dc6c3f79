// SPDX-License-Identifier: GPL-2.0
/*
 * hbmnvml: the operator's read-only view of what NVIDIA's management
 * library reports about each GPU's memory, through the same code as
 * hbmguardd's NVML source (daemon/nvml_source.c): identity, retired pages
 * per cause with their times, pending retirement, remapped rows, ECC totals.
 *
 *   hbmnvml [--json] [--library PATH]
 *
 * A program of its own rather than an hbmctl command: it needs only libc
 * and the library it dlopen()s, so it can be copied with its loader to a
 * node whose libc differs (scripts/gpu-check.sh), and hbmctl stays free of
 * dlopen() (its guest build is static).  It calls only NVML's read-only
 * queries.  Exit status: 0 every fact read, 1 some call failed or a GPU fell
 * off the bus (the line on stderr says which), 2 bad usage, 3 no NVML.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "nvml_source.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_NONVML = 3 };

static bool json;
static int problems;

static void log_line(void *ctx, int priority, const char *msg)
{
	(void)ctx;
	/* LOG_ERR and LOG_WARNING (3, 4): a fact was not read. */
	if (priority <= 4)
		problems++;
	fprintf(stderr, "hbmnvml: %s\n", msg);
}

static const char *esc(const char *s, bool for_json)
{
	static char out[4][512];	/* up to four in one printf() */
	static unsigned int next;

	return hbm_ctl_escape(out[next++ % 4], sizeof(out[0]), s, for_json);
}

static const char *yesno(bool v)
{
	return v ? "yes" : "no";
}

static void text_gpu(const struct hbm_nvml_gpu *g, const struct hbm_nvml_report *r)
{
	int c;
	uint32_t k;

	printf("GPU %s\n", esc(g->uuid, false));
	printf("  pci                        %s\n", esc(g->pci, false));
	printf("  name                       %s\n", esc(g->name, false));
	printf("  memory                     %" PRIu64 "\n", g->memory);
	for (c = 0; c < HBM_NVML_CAUSES; c++) {
		printf("  retired.%-18s ", hbm_nvml_cause_name(c));
		if (r->retired[c].status == HBM_NVML_OK)
			printf("%" PRIu32 "\n", r->retired[c].nr);
		else
			printf("n/a (%s)\n", hbm_nvml_status_name(r->retired[c].status));
	}
	if (r->pending_status == HBM_NVML_OK)
		printf("  retired.pending            %s\n", yesno(r->pending));
	else
		printf("  retired.pending            n/a (%s)\n",
		       hbm_nvml_status_name(r->pending_status));
	if (r->remap_status == HBM_NVML_OK) {
		printf("  remapped.corrected         %" PRIu32 "\n", r->remap_corrected);
		printf("  remapped.uncorrected       %" PRIu32 "\n", r->remap_uncorrected);
		printf("  remapped.pending           %s\n", yesno(r->remap_pending));
		printf("  remapped.failure           %s\n", yesno(r->remap_failure));
	} else {
		printf("  remapped                   n/a (%s)\n",
		       hbm_nvml_status_name(r->remap_status));
	}
	if (r->ecc_status == HBM_NVML_OK) {
		printf("  ecc.corrected.volatile     %" PRIu64 "\n", r->ecc[0][0]);
		printf("  ecc.uncorrected.volatile   %" PRIu64 "\n", r->ecc[1][0]);
		printf("  ecc.corrected.aggregate    %" PRIu64 "\n", r->ecc[0][1]);
		printf("  ecc.uncorrected.aggregate  %" PRIu64 "\n", r->ecc[1][1]);
	} else {
		printf("  ecc                        n/a (%s)\n", hbm_nvml_status_name(r->ecc_status));
	}
	for (c = 0; c < HBM_NVML_CAUSES; c++)
		for (k = 0; r->retired[c].status == HBM_NVML_OK && k < r->retired[c].nr; k++)
			printf("  page %s 0x%" PRIx64 " time %" PRIu64 "\n",
			       hbm_nvml_cause_name(c), r->retired[c].addr[k],
			       r->retired[c].time[k]);
}

static void json_status(const char *key, enum hbm_nvml_status st)
{
	printf("\"%s\":\"%s\"", key, hbm_nvml_status_name(st));
}

static void json_gpu(const struct hbm_nvml_gpu *g, const struct hbm_nvml_report *r)
{
	int c;
	uint32_t k;

	printf("{\"uuid\":\"%s\",\"pci\":\"%s\",\"name\":\"%s\",\"memory\":%" PRIu64 ",",
	       esc(g->uuid, true), esc(g->pci, true), esc(g->name, true), g->memory);
	printf("\"retired_pages\":{");
	for (c = 0; c < HBM_NVML_CAUSES; c++) {
		printf("%s\"%s\":{", c ? "," : "", hbm_nvml_cause_name(c));
		json_status("status", r->retired[c].status);
		printf(",\"pages\":[");
		for (k = 0; k < r->retired[c].nr; k++)
			printf("%s{\"address\":%" PRIu64 ",\"timestamp\":%" PRIu64 "}",
			       k ? "," : "", r->retired[c].addr[k], r->retired[c].time[k]);
		printf("]}");
	}
	printf("},\"retired_pending\":{");
	json_status("status", r->pending_status);
	printf(",\"pending\":%s},\"remapped_rows\":{", r->pending ? "true" : "false");
	json_status("status", r->remap_status);
	printf(",\"corrected\":%" PRIu32 ",\"uncorrected\":%" PRIu32
	       ",\"pending\":%s,\"failure\":%s},\"ecc\":{", r->remap_corrected,
	       r->remap_uncorrected, r->remap_pending ? "true" : "false",
	       r->remap_failure ? "true" : "false");
	json_status("status", r->ecc_status);
	printf(",\"corrected_volatile\":%" PRIu64 ",\"uncorrected_volatile\":%" PRIu64
	       ",\"corrected_aggregate\":%" PRIu64 ",\"uncorrected_aggregate\":%" PRIu64 "}}",
	       r->ecc[0][0], r->ecc[1][0], r->ecc[0][1], r->ecc[1][1]);
}

static void usage(const char *why)
{
	if (why)
		fprintf(stderr, "hbmnvml: %s\n", why);
	fprintf(stderr, "usage: hbmnvml [--json] [--library PATH]\nSee hbmnvml(8).\n");
	exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	const struct hbm_nvml_ops ops = { .log = log_line };
	const char *library = HBM_NVML_LIBRARY;
	struct hbm_nvml_report r;
	struct hbm_nvml *h;
	bool first = true;
	size_t i;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--json"))
			json = true;
		else if (!strcmp(argv[a], "--library") && a + 1 < argc)
			library = argv[++a];
		else if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h"))
			usage(NULL);
		else
			usage("unknown argument");
	}
	h = hbm_nvml_open(library, &ops, NULL);
	if (!h)
		return EXIT_NONVML;
	if (json)
		printf("{\"driver\":\"%s\",\"gpus\":[", esc(hbm_nvml_driver_version(h), true));
	else
		printf("driver %s\n", esc(hbm_nvml_driver_version(h), false));
	for (i = 0; i < hbm_nvml_count(h); i++) {
		const struct hbm_nvml_gpu *g = hbm_nvml_gpu(h, i);

		if (hbm_nvml_query(h, i, &r))
			continue;
		if (json) {
			printf("%s", first ? "" : ",");
			json_gpu(g, &r);
		} else {
			text_gpu(g, &r);
		}
		first = false;
		hbm_nvml_report_free(&r);
	}
	if (json)
		printf("]}\n");
	hbm_nvml_close(h);
	return problems ? EXIT_FAILED : 0;
}
