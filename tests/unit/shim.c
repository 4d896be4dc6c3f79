// SPDX-License-Identifier: GPL-2.0
/*
 * The userspace side of kmod/core.h's shim: allocation with failure
 * injection; mtree.c's descents and core.h's WARN_ON_ONCE()s, counted;
 * and a seen set's spare nodes dropped (daemon/seen.c).
 */
#include <stdlib.h>
#include "mtree.h"
#include "seen.h"
#include "unit.h"

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

void hbm_test_drop_spares(struct hbm_range_set *s)
{
	while (s->spare) {
		struct hbm_range_node *n = s->spare;

		s->spare = n->e[0].c.child;
		free(n);
	}
	s->nr_spare = 0;
}
