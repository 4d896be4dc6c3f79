// SPDX-License-Identifier: GPL-2.0
/*
 * x86 machine checks as the decode chain hands them to the module
 * (kmod/ras_mce.c): hbm_mce_decode() of the raw MCA registers, whatever
 * they hold, against what kmod/mce_decode.c documents, written out again
 * here from the manuals it cites:
 *
 *	- not valid, or not a memory controller's DRAM error (Intel's compound
 *	  code 0000_0000_1MMM_CCCC, bit 12 the filter bit; an AMD UMC of
 *	  either type with extended code 0; AMD's northbridge, bank 4, with
 *	  extended code 8): HBM_MCE_NOT_MEMORY, whatever else is set;
 *	- a memory error's kind: UE when UC is set, or on AMD when DEFERRED is
 *	  (poison), CE otherwise; EDAC's when an EDAC driver decoded it; no
 *	  address without ADDRV; SMCA's address normalized;
 *	- the address: AMD's northbridge MC4_ADDR[47:1]; Intel's only in
 *	  physical mode (MISC valid, mode 2), its bits below MISC's LSB (at
 *	  most 12: a page) cleared; either without the bits at and above the
 *	  CPU's physical width (a KeyID's), so it never reaches above it.
 *
 * And what it must not look at: the error count of Intel's
 * MCi_STATUS[52:38] (one record is one error), a KeyID above the physical
 * width, AMD's MCA_ADDR[61:56] on the northbridge: changed, the answer is
 * the same.
 */
#include <assert.h>
#include <stdio.h>

#include "mce_decode.h"
#include "fuzz.h"

#define VAL		(1ULL << 63)
#define UC		(1ULL << 61)
#define MISCV		(1ULL << 59)
#define ADDRV		(1ULL << 58)
#define DEFERRED	(1ULL << 44)
#define COUNT_MASK	(0x7fffULL << 38)	/* Intel: corrected error count */

struct answer {
	enum hbm_mce_class class;
	u32 kind;
	u64 phys;
};

/* The decoder's contract, from the Intel SDM and AMD's BKDG/PPR. */
static struct answer expected(const struct hbm_mce_record *r)
{
	struct answer a = { HBM_MCE_NOT_MEMORY, 0, 0 };
	u64 s = r->status;
	bool memory;

	if (!(s & VAL))
		return a;
	if (!r->amd) {
		u32 code = (u32)(s & 0xffff) & ~0x1000u;	/* bit 12: filtering */

		memory = code >> 7 == 1;			/* 0000_0000_1MMM_CCCC */
	} else if (r->smca) {
		u32 hwid = (u32)(r->ipid >> 32) & 0xfff, type = (u32)(r->ipid >> 48) & 0xffff;

		memory = hwid == 0x96 && type <= 1 && ((s >> 16) & 0x3f) == 0;
	} else {
		memory = r->bank == 4 && ((s >> 16) & 0x1f) == 8;
	}
	if (!memory)
		return a;
	a.kind = s & UC || (r->amd && s & DEFERRED) ? HBMGUARD_ERROR_UE : HBMGUARD_ERROR_CE;
	if (r->edac_handled) {
		a.class = HBM_MCE_EDAC;
		return a;
	}
	a.class = HBM_MCE_NO_ADDRESS;
	if (!(s & ADDRV))
		return a;
	if (r->amd && r->smca) {
		a.class = HBM_MCE_NORMALIZED;
		return a;
	}
	if (r->amd) {
		a.phys = r->addr & 0x0000fffffffffffeULL;
	} else {
		u32 lsb = r->misc & 0x3f;

		if (!(s & MISCV) || ((r->misc >> 6) & 7) != 2 || lsb > 12)
			return a;
		a.phys = r->addr >> lsb << lsb;
	}
	if (r->phys_bits && r->phys_bits < 64)
		a.phys &= ~0ULL >> (64 - r->phys_bits);
	a.class = HBM_MCE_MEMORY;
	return a;
}

static struct answer decode(const struct hbm_mce_record *r)
{
	struct hbm_mce_record copy = *r;
	struct answer a = { 0, 0xdead, 0xdeadbeef };

	a.class = hbm_mce_decode(&copy, &a.kind, &a.phys);
	CHECK(!memcmp(&copy, r, sizeof(copy)), "the record changed");
	CHECK(a.class <= HBM_MCE_MEMORY, "class %d", a.class);
	return a;
}

static void same(const struct answer *a, const struct answer *b, const char *what)
{
	CHECK(a->class == b->class, "%s: class %d, %d expected", what, a->class, b->class);
	if (a->class == HBM_MCE_NOT_MEMORY)
		return;
	CHECK(a->kind == b->kind, "%s: kind %u, %u expected", what, a->kind, b->kind);
	if (a->class == HBM_MCE_MEMORY)
		CHECK(a->phys == b->phys, "%s: address %#llx, %#llx expected", what,
		      (unsigned long long)a->phys, (unsigned long long)b->phys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct hbm_mce_record r = { 0 }, v;
	struct answer got, want, other;
	u8 flags;
	u64 noise;

	r.status = fuzz_u64(&in);
	r.addr = fuzz_u64(&in);
	r.misc = fuzz_u64(&in);
	r.ipid = fuzz_u64(&in);
	r.bank = fuzz_u8(&in);
	r.phys_bits = fuzz_u8(&in);
	flags = fuzz_u8(&in);
	r.amd = flags & 1;
	r.smca = flags & 2;
	r.edac_handled = flags & 4;
	noise = fuzz_u64(&in);

	got = decode(&r);
	want = expected(&r);
	same(&got, &want, "decode");
	if (got.class == HBM_MCE_MEMORY) {
		u64 width = r.phys_bits && r.phys_bits < 64 ? ~0ULL >> (64 - r.phys_bits) : ~0ULL;

		CHECK(got.kind == HBMGUARD_ERROR_CE || got.kind == HBMGUARD_ERROR_UE, "kind %u",
		      got.kind);
		/* an address the record gave, its page whole, within the width */
		CHECK(!(got.phys & ~r.addr) && !(got.phys & ~width), "address %#llx of %#llx",
		      (unsigned long long)got.phys, (unsigned long long)r.addr);
		CHECK(r.amd ? !((got.phys ^ r.addr) & width & 0x0000fffffffffffeULL) :
			      ((got.phys ^ r.addr) & width) < 4096,
		      "the page of %#llx moved to %#llx", (unsigned long long)r.addr,
		      (unsigned long long)got.phys);
	}

	/* Intel's error count is the bank's, not the record's. */
	if (!r.amd) {
		v = r;
		v.status = (v.status & ~COUNT_MASK) | (noise & COUNT_MASK);
		other = decode(&v);
		same(&other, &got, "another error count");
	}
	/* A KeyID above the physical width is not the address. */
	if (r.phys_bits && r.phys_bits < 64) {
		v = r;
		v.addr = (v.addr & (~0ULL >> (64 - r.phys_bits))) | (noise << r.phys_bits);
		other = decode(&v);
		same(&other, &got, "another KeyID");
	}
	/* MC4_ADDR[63:48] are not the northbridge's address. */
	if (r.amd && !r.smca) {
		v = r;
		v.addr = (v.addr & 0x0000ffffffffffffULL) | (noise << 48);
		other = decode(&v);
		same(&other, &got, "other high address bits");
	}
	/* Not valid is nothing, whatever else it says. */
	v = r;
	v.status &= ~VAL;
	other = decode(&v);
	CHECK(other.class == HBM_MCE_NOT_MEMORY, "a record not valid: class %d", other.class);
	return 0;
}
