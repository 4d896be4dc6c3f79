#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make demo: hbmguard.ko in a qemu guest with simulated HBM; faults are
# injected through /dev/hbmguard and hbmctl shows what the module did.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
kver=$(ls -d /usr/src/linux-headers-*-amd64 | sed 's|.*/linux-headers-||' | sort -V | tail -n 1)
mkdir -p "$TOP/build/logs"
echo "== hbmguard demo: Debian kernel $kver in qemu, two simulated 16 GiB HBM devices"
exec "$TOP/scripts/guest-run" --kernel "$kver" \
	--file "$TOP/build/$kver/hbmguard.ko:/hbmguard.ko" \
	--file "$TOP/build/guest/hbmctl:/bin/hbmctl" \
	--file "$TOP/scripts/demo-guest.sh:/demo.sh" \
	--log "$TOP/build/logs/demo-$kver.log" \
	-- sh /demo.sh
