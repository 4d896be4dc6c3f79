#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: the core in userspace, then the module in a qemu guest.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
kver=$(ls -d /usr/src/linux-headers-*-amd64 | sed 's|.*/linux-headers-||' | sort -V | tail -n 1)

echo "== hbmguard benchmarks ($(date -u +%F), $(nproc) cores)"
echo
"$TOP/build/bench-core"
echo
"$TOP/scripts/guest-run" --kernel "$kver" --mem 2048 \
	--file "$TOP/build/$kver/hbmguard.ko:/hbmguard.ko" \
	--file "$TOP/build/guest/hbmbench:/bin/hbmbench" \
	--log "$TOP/build/logs/bench-$kver.log" \
	-- 'insmod /hbmguard.ko && hbmbench && rmmod hbmguard'
echo
echo "Kernel $kver.  Targets: core lookup <= 100 ns at 10^6 where the table"
echo "fits the cache (the floor row is the machine's own cost of one random"
echo "load from memory the size of the table); <= 32 bytes per retired page."
