// SPDX-License-Identifier: GPL-2.0
/* Unit tests of the machine check decoder (kmod/mce_decode.c). */
#include <check.h>
#include "mce_decode.h"
#include "unit.h"

#define VAL	(1ULL << 63)
#define UC	(1ULL << 61)
#define EN	(1ULL << 60)
#define MISCV	(1ULL << 59)
#define ADDRV	(1ULL << 58)
#define DEFERRED (1ULL << 44)
#define MISC_PHYS(lsb) ((2ULL << 6) | (lsb))	/* address mode: physical */

static enum hbm_mce_class decode(struct hbm_mce_record r, u32 *kind, u64 *phys)
{
	*kind = 0;
	*phys = 0;
	return hbm_mce_decode(&r, kind, phys);
}

START_TEST(intel_memory_controller)
{
	u32 kind;
	u64 phys;

	/* Memory controller read error, channel unspecified (MCACOD 0x9f). */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | UC | EN | MISCV | ADDRV | 0x9f,
		.addr = 0x123456789a, .misc = MISC_PHYS(6) }, &kind, &phys),
		HBM_MCE_MEMORY);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_UE);
	ck_assert_uint_eq(phys, 0x1234567880);	/* below 64 bytes masked */

	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | MISCV | ADDRV | 0x9f,
		.addr = 0x5000, .misc = MISC_PHYS(12) }, &kind, &phys),
		HBM_MCE_MEMORY);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_CE);
	ck_assert_uint_eq(phys, 0x5000);
}
END_TEST

START_TEST(intel_unusable_addresses)
{
	u32 kind;
	u64 phys;

	/* No MISC: the address mode is unknown. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV | 0x9f, .addr = 0x5000 }, &kind, &phys),
		HBM_MCE_NO_ADDRESS);
	/* A linear (not physical) address. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | MISCV | ADDRV | 0x9f, .addr = 0x5000,
		.misc = (1ULL << 6) | 6 }, &kind, &phys), HBM_MCE_NO_ADDRESS);
	/* Coarser than a page. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | MISCV | ADDRV | 0x9f, .addr = 0x5000,
		.misc = MISC_PHYS(20) }, &kind, &phys), HBM_MCE_NO_ADDRESS);
	/* No address at all: still a memory error, with its kind. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | UC | 0x9f }, &kind, &phys), HBM_MCE_NO_ADDRESS);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_UE);
}
END_TEST

START_TEST(not_memory)
{
	u32 kind;
	u64 phys;

	/* Not valid. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = UC | ADDRV | 0x9f }, &kind, &phys), HBM_MCE_NOT_MEMORY);
	/* Intel bus/interconnect error. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | UC | ADDRV | 0x0e0b }, &kind, &phys),
		HBM_MCE_NOT_MEMORY);
	/* AMD: DRAM ECC code on a bank other than the northbridge. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV | (8 << 16), .bank = 5, .amd = true },
		&kind, &phys), HBM_MCE_NOT_MEMORY);
	/* AMD SMCA: a load-store unit bank. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV, .ipid = 0xb0ULL << 32, .amd = true,
		.smca = true }, &kind, &phys), HBM_MCE_NOT_MEMORY);
}
END_TEST

START_TEST(amd_legacy_northbridge)
{
	u32 kind;
	u64 phys;

	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | ADDRV | (8 << 16), .bank = 4, .amd = true,
		.addr = (6ULL << 56) | 0x40300000 }, &kind, &phys), HBM_MCE_MEMORY);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_CE);
	ck_assert_uint_eq(phys, 0x40300000);
	/* Deferred: the data is poisoned, as good as uncorrected. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | DEFERRED | ADDRV | (8 << 16), .bank = 4,
		.amd = true, .addr = 0x1000 }, &kind, &phys), HBM_MCE_MEMORY);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_UE);
}
END_TEST

START_TEST(amd_smca_umc)
{
	u32 kind;
	u64 phys;

	/* UMC (HWID 0x96, MCATYPE 0), DRAM ECC: normalized address. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | UC | ADDRV, .ipid = 0x96ULL << 32, .bank = 15,
		.amd = true, .smca = true, .addr = 0x1234000 }, &kind, &phys),
		HBM_MCE_NORMALIZED);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_UE);
	/* UMC, another extended error code: not a DRAM ECC error. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV | (5 << 16), .ipid = 0x96ULL << 32,
		.amd = true, .smca = true }, &kind, &phys), HBM_MCE_NOT_MEMORY);
	/* SMCA_UMC_V2 (MCATYPE 1), as 6.12's smca_mce_is_memory_error(). */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV, .ipid = (1ULL << 48) | (0x96ULL << 32),
		.amd = true, .smca = true }, &kind, &phys), HBM_MCE_NORMALIZED);
	/* UMC of another MCATYPE. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV, .ipid = (2ULL << 48) | (0x96ULL << 32),
		.amd = true, .smca = true }, &kind, &phys), HBM_MCE_NOT_MEMORY);
	/* ErrorCodeExt is six bits on SMCA: 0x20 is not DRAM ECC. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV | (0x20 << 16), .ipid = 0x96ULL << 32,
		.amd = true, .smca = true }, &kind, &phys), HBM_MCE_NOT_MEMORY);
}
END_TEST

/*
 * The legacy northbridge's address is MC4_ADDR[47:1] (amd64_edac's
 * get_error_address()); its extended error code five bits (MC4_STATUS
 * [20:16], legacy_mce_is_memory_error()): bit 21 is not part of it.
 * Bits 61:56 are no address LSB there (SMCA's MCA_ADDR alone has one):
 * set, the address is still the page's.
 */
START_TEST(amd_legacy_address_and_code)
{
	u32 kind;
	u64 phys;

	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | ADDRV | (8 << 16), .bank = 4, .amd = true,
		.addr = (0x3fULL << 56) | (1ULL << 50) | 0x40300001 }, &kind, &phys),
		HBM_MCE_MEMORY);
	ck_assert_uint_eq(phys, 0x40300000);
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | ADDRV | (0x28 << 16), .bank = 4, .amd = true,
		.addr = 0x1000 }, &kind, &phys), HBM_MCE_MEMORY);
}
END_TEST

/*
 * A memory encryption KeyID (MKTME, TDX) in the bits above the CPU's
 * physical address width: logged with the address, not part of it.
 */
START_TEST(keyid_bits_are_not_the_address)
{
	u32 kind;
	u64 phys;

	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | MISCV | ADDRV | 0x9f, .phys_bits = 46,
		.addr = (0x20ULL << 46) | 0x2080001000, .misc = MISC_PHYS(12) },
		&kind, &phys), HBM_MCE_MEMORY);
	ck_assert_uint_eq(phys, 0x2080001000);
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | ADDRV | (8 << 16), .bank = 4, .amd = true,
		.phys_bits = 40, .addr = (1ULL << 43) | 0x1000 }, &kind, &phys),
		HBM_MCE_MEMORY);
	ck_assert_uint_eq(phys, 0x1000);
}
END_TEST

/*
 * Intel SDM Vol. 3B, "Compound Error Codes" (16.9.2; 15.9.2 in older
 * editions): cache hierarchy 0000_0001_RRRR_TTLL (RRRR 0011 data read,
 * TT 01 data, LL 01 L1 / 10 L2 / 11 generic, i.e. the LLC), generic cache
 * hierarchy 0000_0000_0000_11LL, TLB 0000_0000_0001_TTLL, bus and
 * interconnect 0000_1PPT_RRRR_IILL; memory controller 0000_0000_1MMM_CCCC
 * (MMM 001 read, 100 scrub; CCCC the channel, 1111 unspecified).  Bit 12 is
 * the filtering bit of corrected errors and may be set on any of them.
 */
START_TEST(intel_only_memory_controller_errors)
{
	static const u16 others[] = {
		0x0135,		/* L1 data cache, data read */
		0x0136,		/* L2, data read */
		0x0137,		/* LLC, data read */
		0x1137,		/* LLC, data read, filtered */
		0x0117,		/* LLC, generic, read */
		0x000e,		/* generic cache hierarchy, L2 */
		0x000f,		/* generic cache hierarchy, LLC */
		0x0014,		/* instruction TLB, L0 */
		0x0e0f,		/* bus: generic, timeout, memory access */
		0x0405,		/* internal unclassified */
	};
	static const u16 memory[] = { 0x009f, 0x0091, 0x00c1, 0x10c1, 0x00a3 };
	unsigned int i;
	u32 kind;
	u64 phys;

	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		ck_assert_msg(decode((struct hbm_mce_record){
			.status = VAL | EN | MISCV | ADDRV | others[i],
			.addr = 0x5000, .misc = MISC_PHYS(6) }, &kind, &phys) ==
			HBM_MCE_NOT_MEMORY, "MCACOD 0x%04x charged", others[i]);
	for (i = 0; i < sizeof(memory) / sizeof(memory[0]); i++)
		ck_assert_msg(decode((struct hbm_mce_record){
			.status = VAL | EN | MISCV | ADDRV | memory[i],
			.addr = 0x5000, .misc = MISC_PHYS(6) }, &kind, &phys) ==
			HBM_MCE_MEMORY, "MCACOD 0x%04x not charged", memory[i]);
}
END_TEST

/*
 * AMD: cache errors carry the memory error code 0000_0001_RRRR_TTLL (AMD64
 * APM Vol. 2, "Error Codes") from the DC, IC and BU (L2) banks 0-2 of the
 * legacy layout, or from SMCA L2/L3 banks; only the northbridge's DRAM ECC
 * (bank 4, XEC 8) and the UMC's (XEC 0) are memory errors.
 */
START_TEST(amd_cache_errors)
{
	u32 kind;
	u64 phys;
	u8 bank;

	for (bank = 0; bank < 3; bank++)
		ck_assert_int_eq(decode((struct hbm_mce_record){
			.status = VAL | EN | ADDRV | 0x0135, .bank = bank,
			.amd = true, .addr = 0x1000 }, &kind, &phys),
			HBM_MCE_NOT_MEMORY);
	/* The northbridge with another extended error code (GART, 5). */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | ADDRV | (5 << 16) | 0x0135, .bank = 4,
		.amd = true, .addr = 0x1000 }, &kind, &phys), HBM_MCE_NOT_MEMORY);
	/* SMCA L3 cache: HWID 0x07, MCATYPE 0 (smca_hwid_mcatypes, mce/amd.c). */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | ADDRV | 0x0137, .ipid = 0x07ULL << 32,
		.amd = true, .smca = true }, &kind, &phys), HBM_MCE_NOT_MEMORY);
}
END_TEST

/*
 * A record an EDAC driver decoded (MCE_HANDLED_EDAC) is a memory error
 * that driver reports on ras:mc_event: not a second report here.
 */
START_TEST(edac_handled)
{
	u32 kind;
	u64 phys;

	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | MISCV | ADDRV | 0x9f, .addr = 0x5000,
		.misc = MISC_PHYS(6), .edac_handled = true }, &kind, &phys),
		HBM_MCE_EDAC);
	ck_assert_uint_eq(kind, HBMGUARD_ERROR_CE);
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | ADDRV | (8 << 16), .bank = 4, .amd = true,
		.addr = 0x1000, .edac_handled = true }, &kind, &phys),
		HBM_MCE_EDAC);
	/* Not memory stays not memory, whoever decoded it. */
	ck_assert_int_eq(decode((struct hbm_mce_record){
		.status = VAL | EN | MISCV | ADDRV | 0x0136, .addr = 0x5000,
		.misc = MISC_PHYS(6), .edac_handled = true }, &kind, &phys),
		HBM_MCE_NOT_MEMORY);
}
END_TEST

Suite *mce_suite(void)
{
	Suite *s = suite_create("mce");
	TCase *tc = tcase_create("decode");

	tcase_add_test(tc, intel_memory_controller);
	tcase_add_test(tc, intel_unusable_addresses);
	tcase_add_test(tc, not_memory);
	tcase_add_test(tc, amd_legacy_northbridge);
	tcase_add_test(tc, amd_smca_umc);
	tcase_add_test(tc, intel_only_memory_controller_errors);
	tcase_add_test(tc, amd_cache_errors);
	tcase_add_test(tc, edac_handled);
	tcase_add_test(tc, amd_legacy_address_and_code);
	tcase_add_test(tc, keyid_bits_are_not_the_address);
	suite_add_tcase(s, tc);
	return s;
}
