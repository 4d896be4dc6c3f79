# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside a guest whose CPU says GenuineIntel (guest-run --cpu
# max,vendor=GenuineIntel): machine checks in Intel's encoding, through
# mce-inject, on a range device over the CPU-less node 1.  Only memory
# controller errors (MCACOD 0000_0000_1MMM_CCCC) are HBM errors; cache
# hierarchy errors (0000_0001_RRRR_TTLL) are not, whatever their address
# (Intel SDM Vol. 3B, "Compound Error Codes").
. /lib.sh

check "the guest's CPU is Intel's" 'grep -q "^vendor_id.*GenuineIntel" /proc/cpuinfo'
check "load" 'insmod /hbmguard.ko'
# The first 64 MiB of node 1, so that the markers below lie outside.
phys=$(hbmnl range-node hbm 1 >/dev/null && hbmnl devices |
	sed -n 's/^device 0 .* phys=\(0x[0-9a-f]*\)$/\1/p')
check "range registered" 'hbmnl range-unregister 0 && [ "$(hbmnl range-phys hbm0 $phys 0x4000000 16)" = 0 ]'

# MISC: a physical address (mode 2, bits 8:6), valid from bit 12 (a page)
# up, and above that a number of its own so no two records are equal.
VAL=$((1 << 63)) UC=$((1 << 61)) EN=$((1 << 60)) MISCV=$((1 << 59)) ADDRV=$((1 << 58))
mce_seq=0
mce_intel() {	# $1: status bits beyond VAL|EN|MISCV|ADDRV, $2: address
	d=/sys/kernel/debug/mce-inject
	mce_seq=$((mce_seq + 1))
	echo sw >$d/flags
	printf '0x%x\n' $(( VAL | EN | MISCV | ADDRV | $1 )) >$d/status
	printf '0x%x\n' $2 >$d/addr
	printf '0x%x\n' $(( (mce_seq << 16) | (2 << 6) | 12 )) >$d/misc
	echo 5 >$d/bank
}
# The marker: an uncorrected cache error outside the device, which nothing
# takes before the default notifier logs it (RAS_CEC takes corrected ones
# Intel calls memory errors, caches included).  When its line shows, every
# record before it has been through our notifier, the last in the chain.
# (No uncorrected cache error inside the device: the kernel may hand its
# page to memory_failure(), whose poison is then ours to count, rightly.)
wait_for_dmesg() { i=0; while ! dmesg | grep -q "$1" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done; }
mce_mark() {
	mark=$((phys + 0x8100000 + mce_seq * 0x1000))
	mce_intel $((UC | 0x0136)) $mark
	wait_for_dmesg "ADDR $(printf %x $mark) "
}

mce_intel 0x009f $((phys + 0x100000))		# memory read, channel unspecified
mce_mark
check "a memory controller error is charged" 'hbmnl devices | grep -q "^device 0 .* ce=1 ue=0 "'
mce_intel 0x0136 $((phys + 0x200000))		# L2, data read
mce_intel 0x0137 $((phys + 0x200000))		# LLC, data read
mce_intel 0x000e $((phys + 0x200000))		# generic cache hierarchy, L2
mce_intel 0x1135 $((phys + 0x200000))		# L1 data, filtered
mce_mark
check "cache errors are not charged" 'hbmnl devices | grep -q "^device 0 .* ce=1 ue=0 "'
check "nor retired" '! hbmctl pages hbm0 | grep -q "^0x200000"'
mce_intel $((UC | 0x10c1)) $((phys + 0x300000))	# scrub, channel 1, filtered
mce_mark
check "an uncorrected memory error retires" 'hbmctl pages hbm0 | grep -q "^0x300000 *1 .*retired"'
check "counted on the MCE path" 'hbmnl stats | grep -q "^path 3 received=2 dropped=0$"'

# A corrected error counts once toward its page, whatever MCi_STATUS[52:38]
# says: that is the bank's count, the errors corrected across the channel
# since it was last read, and MCi_ADDR one error's (kmod/mce_decode.c).
mce_intel $(( (5000 << 38) | 0x009f )) $((phys + 0x400000))
mce_mark
check "a corrected error counts once, not the bank's count" 'hbmnl devices | grep -q "^device 0 .* ce=2 ue=1 "'
check "... its page not retired" '! hbmctl pages hbm0 | grep -q "^0x400000"'
# A memory encryption KeyID (MKTME, TDX) is logged in the address's bits
# above the CPU's physical address width; the kernel's own handlers mask it
# (6.12's MCI_ADDR_PHYSADDR): the error is the page's below.
bits=$(sed -n 's/^address sizes[^:]*: \([0-9]*\) bits physical.*/\1/p' /proc/cpuinfo | head -n 1)
check "the CPU's physical address width ($bits bits)" '[ "$bits" -ge 36 ] && [ "$bits" -le 50 ]'
mce_intel $((UC | 0x009f)) $(( (1 << bits) | (phys + 0x500000) ))
mce_mark
check "an error whose address carries a KeyID is the page's" 'hbmctl pages hbm0 | grep -q "^0x500000 *1 .*retired"'

check "unload" 'rmmod hbmguard'
finish mce_intel
