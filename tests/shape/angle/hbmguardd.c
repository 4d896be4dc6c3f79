// SPDX-License-Identifier: GPL-2.0
/* The shape check's fixture: main() calls control.c, which calls back. */
#include "hbmguardd.h"

void daemon_apply(void)
{
}

int main(void)
{
	control_setup();
	return 0;
}
