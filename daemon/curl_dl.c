// SPDX-License-Identifier: GPL-2.0
/* libcurl loaded when first needed: curl_dl.h says why. */
#include "curl_dl.h"
#include "dl.h"

#define HBM_CURL_DEFINE(f) __typeof__(f) *sym_##f;
HBM_CURL_FUNCTIONS(HBM_CURL_DEFINE)
#undef HBM_CURL_DEFINE

static const struct hbm_dl_function curl_functions[] = {
	HBM_CURL_FUNCTIONS(HBM_DL_FUNCTION)
};

/* libcurl4's, of curl 7.88 as bookworm's libcurl4-openssl-dev has it */
static struct hbm_dl_library curl = {
	.soname = "libcurl.so.4", .what = "libcurl", .functions = curl_functions,
	.nr = sizeof(curl_functions) / sizeof(curl_functions[0]),
};

/**
 * hbm_curl_load() - make sym_curl_*() callable
 * @err: why not, on failure
 * @errlen: its size
 *
 * A reload keeps the cluster link (signals.c refuses a [Cluster] change), so
 * libcurl, once loaded, stays.
 *
 * Return: 0, or -1 (@err says why: no libcurl.so.4, or one without a
 * function this daemon calls).
 */
int hbm_curl_load(char *err, size_t errlen)
{
	return hbm_dl_load(&curl, err, errlen);
}
