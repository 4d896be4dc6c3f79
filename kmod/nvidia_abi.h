/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVIDIA driver's error callback registration, as hbmguard expects it:
 * open-gpu-kernel-modules 565 and later name it nvidia_register_error_cb(),
 * earlier ones nv_register_error_cb().  One slot; the callback may be called
 * in atomic context with the GPU's PCI address ("0000:3b:00.0") and the Xid.
 *
 * This is not a published ABI: it is stated here, once, for nvidia.c and the
 * test module that stands in for the driver; check it against the driver
 * release in use.
 */
#ifndef HBM_NVIDIA_ABI_H
#define HBM_NVIDIA_ABI_H

#include <linux/types.h>

typedef void (*hbm_nv_error_cb)(void *ctx, const char *pci_bdf, u32 xid);

int nvidia_register_error_cb(hbm_nv_error_cb cb, void *ctx);
void nvidia_unregister_error_cb(hbm_nv_error_cb cb);
int nv_register_error_cb(hbm_nv_error_cb cb, void *ctx);
void nv_unregister_error_cb(hbm_nv_error_cb cb);

#endif /* HBM_NVIDIA_ABI_H */
