// SPDX-License-Identifier: GPL-2.0
/* libmicrohttpd loaded when first needed: mhd_dl.h says why. */
#include "dl.h"
#include "mhd_dl.h"

#define HBM_MHD_DEFINE(f) __typeof__(f) *sym_##f;
HBM_MHD_FUNCTIONS(HBM_MHD_DEFINE)
#undef HBM_MHD_DEFINE

static const struct hbm_dl_function mhd_functions[] = {
	HBM_MHD_FUNCTIONS(HBM_DL_FUNCTION)
};

/* libmicrohttpd12's, of 0.9.75 as bookworm's libmicrohttpd-dev has it */
static struct hbm_dl_library mhd = {
	.soname = "libmicrohttpd.so.12", .what = "libmicrohttpd", .functions = mhd_functions,
	.nr = sizeof(mhd_functions) / sizeof(mhd_functions[0]),
};

/**
 * hbm_mhd_load() - make sym_MHD_*() callable
 * @err: why not, on failure
 * @errlen: its size
 *
 * Return: 0, or -1 (@err says why: no libmicrohttpd.so.12, or one without
 * a function this daemon calls).
 */
int hbm_mhd_load(char *err, size_t errlen)
{
	return hbm_dl_load(&mhd, err, errlen);
}
