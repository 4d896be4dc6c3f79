// SPDX-License-Identifier: GPL-2.0
/* The shape check's fixture: an object main() uses, and a call back up. */
#include "hbmguardd.h"

static void start(void)
{
	daemon_apply();
}

const struct kernel_ops kernel_ops = { .start = start };
