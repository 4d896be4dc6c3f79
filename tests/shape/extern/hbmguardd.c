// SPDX-License-Identifier: GPL-2.0
/* The shape check's fixture: main() reaches kernel.c only through an object. */
#include "hbmguardd.h"

void daemon_apply(void)
{
}

int main(void)
{
	kernel_ops.start();
	return 0;
}
