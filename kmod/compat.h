/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel API differences between the kernels hbmguard supports (Debian's
 * 6.1 and 6.12), in one place.  Code elsewhere uses the names below and
 * carries no version checks of its own.
 */
#ifndef HBM_COMPAT_H
#define HBM_COMPAT_H

#include <linux/version.h>

#endif /* HBM_COMPAT_H */
