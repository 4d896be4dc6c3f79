/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A library loaded when a feature first needs it, not by the dynamic loader
 * at every start (curl_dl.h, mhd_dl.h say which and why): its functions are
 * resolved by name into pointers typed from its own header, as it is built
 * against, and a library without one of them is refused whole.
 */
#ifndef HBM_DL_H
#define HBM_DL_H

#include <stddef.h>

struct hbm_dl_function {
	const char *name;
	void **sym;		/* where its address goes */
};

struct hbm_dl_library {
	const char *soname;	/* of the header's package (objdump -p: SONAME) */
	const char *what;	/* its name in an error: "libcurl" */
	const struct hbm_dl_function *functions;
	size_t nr;
	void *handle;		/* once loaded, never unloaded */
};

/* The entry of a function f, for a table built from a list of names. */
#define HBM_DL_FUNCTION(f) { #f, (void **)&sym_##f },

int hbm_dl_load(struct hbm_dl_library *lib, char *err, size_t errlen);

#endif
