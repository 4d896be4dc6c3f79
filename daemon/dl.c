// SPDX-License-Identifier: GPL-2.0
/* Libraries loaded when first needed: dl.h says why. */
#include <dlfcn.h>
#include <stdio.h>

#include "dl.h"

/**
 * hbm_dl_load() - make a library's sym_*() callable
 * @lib: the library and its functions
 * @err: why not, on failure
 * @errlen: its size
 *
 * Once loaded, a library stays: what it set up (curl_global_init()) is
 * never undone, and a second call costs nothing.
 *
 * Return: 0, or -1 (@err says why: no such library, or one without a
 * function this daemon calls); no pointer is left set then.
 */
int hbm_dl_load(struct hbm_dl_library *lib, char *err, size_t errlen)
{
	void *h;
	size_t i;

	if (lib->handle)
		return 0;
	h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "%s cannot be loaded: %s", lib->what, dlerror());
		return -1;
	}
	for (i = 0; i < lib->nr; i++) {
		/* POSIX's way to a function's address (dlsym(3)) */
		*lib->functions[i].sym = dlsym(h, lib->functions[i].name);
		if (*lib->functions[i].sym)
			continue;
		dlerror();	/* said here, not left for the next dlerror() */
		snprintf(err, errlen, "%s has no %s", lib->soname, lib->functions[i].name);
		while (i)
			*lib->functions[--i].sym = NULL;
		dlclose(h);
		return -1;
	}
	lib->handle = h;
	return 0;
}
