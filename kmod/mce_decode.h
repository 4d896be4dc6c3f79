/* SPDX-License-Identifier: GPL-2.0 */
#ifndef HBM_MCE_DECODE_H
#define HBM_MCE_DECODE_H

#include "core.h"

/* What decoding needs of an x86 machine check, whatever the kernel's struct. */
struct hbm_mce_record {
	u64 status;
	u64 addr;
	u64 misc;
	u64 ipid;
	u8 bank;
	u8 phys_bits;	/* the CPU's physical address width: above it, KeyID bits */
	bool amd;	/* AMD or Hygon */
	bool smca;	/* Scalable MCA */
	bool edac_handled;	/* an EDAC driver decoded it (MCE_HANDLED_EDAC) */
};

enum hbm_mce_class {
	HBM_MCE_NOT_MEMORY,	/* not a DRAM/HBM error */
	HBM_MCE_NO_ADDRESS,	/* memory, but no usable system address */
	HBM_MCE_NORMALIZED,	/* SMCA UMC: a normalized address, not a system one */
	HBM_MCE_EDAC,		/* memory, decoded by EDAC, which reports it on mc_event */
	HBM_MCE_MEMORY,		/* memory, *phys is the system physical address */
};

enum hbm_mce_class hbm_mce_decode(const struct hbm_mce_record *r, u32 *kind,
				  u64 *phys);

#endif /* HBM_MCE_DECODE_H */
