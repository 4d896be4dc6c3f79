// SPDX-License-Identifier: GPL-2.0
/*
 * Which x86 machine checks are memory errors, correctable or not, and at
 * what address.  Plain C over the raw MCA registers, so the unit tests can
 * feed it what Intel, legacy AMD and AMD SMCA (UMC) banks report without
 * having such hardware: in a VM the SMCA bank type is unknown, so the UMC
 * is recognised here from MCA_IPID instead of the kernel's bank tables.
 *
 * The checks follow the kernel's mce_is_memory_error() and
 * mce_usable_address(), narrowed to what HBM can be charged with: the
 * kernel's test also takes Intel cache-hierarchy errors (a bad line of L1,
 * L2 or LLC that happens to log a physical address), which say nothing about
 * the memory behind the address, so only memory-controller errors count.
 *
 * A UMC reports a normalized (channel) address that only the data fabric
 * can turn into a system address; such errors are classed
 * HBM_MCE_NORMALIZED and left to paths that have the translation (EDAC's
 * mc_event, memory_failure()).  So are records an EDAC driver decoded
 * (HBM_MCE_EDAC): it reports them on mc_event itself.
 */
#include "mce_decode.h"

#define MCI_VAL		(1ULL << 63)
#define MCI_UC		(1ULL << 61)
#define MCI_MISCV	(1ULL << 59)
#define MCI_ADDRV	(1ULL << 58)
#define MCI_DEFERRED	(1ULL << 44)	/* AMD: poison, data already lost */

#define SMCA_HWID(ipid)		(((ipid) >> 32) & 0xfff)
#define SMCA_MCATYPE(ipid)	(((ipid) >> 48) & 0xffff)
#define SMCA_HWID_UMC		0x96
#define AMD_XEC(status, mask)	(((status) >> 16) & (mask))

/*
 * Intel SDM Vol. 3B, "Compound Error Codes" (16.9.2 in current editions,
 * 15.9.2 in older ones, which the kernel's mce_is_memory_error() cites):
 * memory controller errors are 0000_0000_1MMM_CCCC.  Bit 12 is the
 * correction-report filtering bit and may be set; bits 11 (bus and
 * interconnect), 8 (cache hierarchy, 0000_0001_RRRR_TTLL), 4 (TLB) and the
 * generic cache hierarchy code 0000_0000_0000_11LL are other units' errors.
 */
static bool intel_memory(u64 status)
{
	return (status & 0xef80) == 0x0080;
}

/* SMCA_UMC or SMCA_UMC_V2: HWID_MCATYPE(0x96, 0x0) or (0x96, 0x1), mce/amd.c */
static bool amd_umc(const struct hbm_mce_record *r)
{
	return SMCA_HWID(r->ipid) == SMCA_HWID_UMC && SMCA_MCATYPE(r->ipid) <= 1;
}

/*
 * AMD's memory-controller errors, as 6.12's amd_mce_is_memory_error()
 * (arch/x86/kernel/cpu/mce/amd.c) has them: on SMCA a UMC bank (either
 * version) with extended error code 0 (DRAM ECC; ErrorCodeExt[21:16]);
 * before SMCA the northbridge, bank 4, with extended error code 8 (DRAM
 * ECC; BKDG for Family 10h-16h, MC4_STATUS[20:16]).  6.1's takes the first
 * UMC version alone and five bits of the code: its UMC errors are ours
 * too, and are left to EDAC all the same (below).  Cache errors come from
 * other banks (DC, IC, BU/L2, L3) and fail the test whatever their code.
 */
static bool amd_memory(const struct hbm_mce_record *r)
{
	if (r->smca)
		return amd_umc(r) && AMD_XEC(r->status, 0x3f) == 0;
	return r->bank == 4 && AMD_XEC(r->status, 0x1f) == 0x8;	/* NB DRAM ECC */
}

/**
 * hbm_mce_decode() - class, kind and address of a machine check
 * @r: the registers
 * @kind: HBMGUARD_ERROR_UE or HBMGUARD_ERROR_CE, for memory errors
 * @phys: the system physical address, for HBM_MCE_MEMORY
 *
 * A record is one error of its page, whatever Intel's MCi_STATUS[52:38]
 * says: that is the bank's count (a memory channel's, since the bank was
 * last read: thousands in a CMCI storm's records, or after a long idle),
 * while MCi_ADDR is one error's address; charged to that page, one record
 * would retire it though the errors lie across the channel.  The kernel's
 * collector counts so too (drivers/ras/cec.c, one per record and page).
 *
 * Return: enum hbm_mce_class.
 */
enum hbm_mce_class hbm_mce_decode(const struct hbm_mce_record *r, u32 *kind,
				  u64 *phys)
{
	unsigned int lsb = 0;

	if (!(r->status & MCI_VAL))
		return HBM_MCE_NOT_MEMORY;
	if (r->amd ? !amd_memory(r) : !intel_memory(r->status))
		return HBM_MCE_NOT_MEMORY;
	*kind = r->status & (MCI_UC | (r->amd ? MCI_DEFERRED : 0)) ?
		HBMGUARD_ERROR_UE : HBMGUARD_ERROR_CE;
	if (r->edac_handled)
		return HBM_MCE_EDAC;
	if (!(r->status & MCI_ADDRV))
		return HBM_MCE_NO_ADDRESS;
	if (r->amd && r->smca)
		return HBM_MCE_NORMALIZED;

	if (r->amd) {
		/*
		 * The northbridge's MC4_ADDR[47:1], as amd64_edac's
		 * get_error_address() takes it (6.1 and 6.12; MCA_ADDR[61:56],
		 * an address LSB, is SMCA's alone).
		 */
		*phys = r->addr & (((1ULL << 48) - 1) & ~1ULL);
	} else {
		/* Intel: MISC says the address mode; only physical is usable. */
		if (!(r->status & MCI_MISCV) || ((r->misc >> 6) & 0x7) != 2)
			return HBM_MCE_NO_ADDRESS;
		lsb = r->misc & 0x3f;
		*phys = r->addr;
	}
	if (lsb > 12)
		return HBM_MCE_NO_ADDRESS;	/* coarser than a page */
	*phys &= ~((1ULL << lsb) - 1);
	/*
	 * Bits at and above the physical address width are a memory
	 * encryption KeyID's (MKTME, TDX: the kernel lowers x86_phys_bits by
	 * them), which the controller logs with the address; 6.12's own
	 * handlers mask them (MCI_ADDR_PHYSADDR, arch/x86/include/asm/mce.h).
	 */
	if (r->phys_bits && r->phys_bits < 64)
		*phys &= (1ULL << r->phys_bits) - 1;
	return HBM_MCE_MEMORY;
}
