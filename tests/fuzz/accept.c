// SPDX-License-Identifier: GPL-2.0
/*
 * The Accept header of a request to the metrics endpoint, as any scraper
 * that reaches its port sends it: metrics_negotiate() names one format we
 * serve, or refuses both (a 406) only where the header said q=0 of a range.
 */
#include <assert.h>

#include "fuzz.h"
#include "gpus.h"
#include "incidents.h"
#include "metrics.h"
#include "recovery.h"
#include "store.h"

/* metrics.c's gather and render, which the negotiation never calls. */
int core_counts(struct hbmd_core *c, struct hbm_counts *out)
{
	(void)c, (void)out;
	abort();
}

int gpus_get(const struct hbm_gpus *r, uint32_t index, struct hbm_ctl_gpu *out)
{
	(void)r, (void)index, (void)out;
	abort();
}

size_t recovery_open_incidents(struct daemon *d)
{
	(void)d;
	abort();
}

unsigned int store_unsaved(const struct hbm_store *s, int *first_error)
{
	(void)s, (void)first_error;
	abort();
}

const double incident_phase_bounds[METRICS_PHASE_BUCKETS - 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	char *accept = fuzz_str(&in);
	int f = metrics_negotiate(accept);

	assert(f >= -1 && f < __METRICS_FORMATS);
	if (f < 0)
		assert(strpbrk(accept, "qQ") && strchr(accept, '0'));
	free(accept);
	return 0;
}
