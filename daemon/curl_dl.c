// SPDX-License-Identifier: GPL-2.0
/* libcurl loaded when first needed: curl_dl.h says why. */
#include <dlfcn.h>
#include <stdio.h>

#include "curl_dl.h"

/* The soname of what the header is of: libcurl4's (objdump -p: SONAME). */
#define HBM_CURL_LIBRARY	"libcurl.so.4"

#define HBM_CURL_DEFINE(f) __typeof__(f) *sym_##f;
HBM_CURL_FUNCTIONS(HBM_CURL_DEFINE)
#undef HBM_CURL_DEFINE

/**
 * hbm_curl_load() - make sym_curl_*() callable
 * @err: why not, on failure
 * @errlen: its size
 *
 * Once loaded, libcurl stays, as curl_global_init() is never undone (a
 * reload keeps the cluster link: signals.c refuses a [Cluster] change).
 *
 * Return: 0, or -1 (@err says why: no libcurl.so.4, or one without a
 * function this daemon calls).
 */
int hbm_curl_load(char *err, size_t errlen)
{
	static void *lib;
	void *h;

	if (lib)
		return 0;
	h = dlopen(HBM_CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "libcurl cannot be loaded: %s", dlerror());
		return -1;
	}
#define HBM_CURL_RESOLVE(f)							\
	sym_##f = (__typeof__(sym_##f))dlsym(h, #f);				\
	if (!sym_##f) {								\
		snprintf(err, errlen, "%s has no %s", HBM_CURL_LIBRARY, #f);	\
		dlclose(h);							\
		return -1;							\
	}
	HBM_CURL_FUNCTIONS(HBM_CURL_RESOLVE)
#undef HBM_CURL_RESOLVE
	lib = h;
	return 0;
}
