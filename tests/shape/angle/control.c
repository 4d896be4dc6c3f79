// SPDX-License-Identifier: GPL-2.0
/* The shape check's fixture: reaches back up into hbmguardd.c, through -I. */
#include <hbmguardd.h>

void control_setup(void)
{
	daemon_apply();
}
