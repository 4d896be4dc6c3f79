/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The NVIDIA driver's Xid tracepoint, nvidia:nvidia_dev_xid, as NVIDIA's
 * open-gpu-kernel-modules declare it in kernel-open/nvidia/nv-tracepoint.h
 * (first in 575.51.02, unchanged up to 595.45.04) and fire it from
 * nv_report_error() in kernel-open/nvidia/nv-report-err.c for every Xid:
 *
 *   TP_PROTO(const struct pci_dev *pdev, uint32_t error_code, const char *msg)
 *
 * A module's tracepoints are not exported symbols: hbmguard finds this one by
 * name in whichever module offers it, and registers a probe of the type
 * below.  The test module that stands in for the driver declares the event
 * from a verbatim copy of NVIDIA's header and checks at build time that the
 * probe type it generates is this one.
 */
#ifndef HBM_NVIDIA_XID_H
#define HBM_NVIDIA_XID_H

#include <linux/types.h>

struct pci_dev;

#define HBM_NV_XID_TRACEPOINT	"nvidia_dev_xid"

typedef void (*hbm_nv_xid_probe_t)(void *data, const struct pci_dev *pdev,
				   uint32_t error_code, const char *msg);

#endif /* HBM_NVIDIA_XID_H */
