// SPDX-License-Identifier: GPL-2.0
/*
 * The userspace side of kmod/core.h's shim: allocation with failure
 * injection; mtree.c's descents and core.h's WARN_ON_ONCE()s, counted.
 */
#include <stdlib.h>
#include "mtree.h"

long hbm_test_alloc_fail_in = -1;
unsigned long hbm_mtree_descents;
unsigned long hbm_test_warnings;

void *hbm_test_alloc(size_t size, bool zero)
{
	if (hbm_test_alloc_fail_in >= 0 && hbm_test_alloc_fail_in-- == 0)
		return NULL;
	return zero ? calloc(1, size) : malloc(size);
}

void hbm_test_free(void *ptr)
{
	free(ptr);
}
