#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Tier 2: hbmguard.ko in qemu guests booting Debian's kernel KVER.
#   tests/kernel/run.sh KVER [PART]
# PART "module" runs the module's own scripts (and Intel's machine checks in a
# guest of their own), "daemon" hbmguardd's in the module; without PART, both
# one after the other.  make check runs the parts at once, a guest each.
# With KVER "debug" (make check-debug), the same on the debug kernel of
# scripts/debug-kernel.sh, whose directory the Makefile left in
# build/debug/kernel.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
kver=$1
part=${2:-all}
case $part in
module) scripts="tier2 ras providers gpu xid lifetime" ;;
daemon) scripts="daemon nvml amdgpu recovery" ;;
all) scripts="tier2 ras providers gpu xid daemon nvml amdgpu recovery lifetime" ;;
*) echo "usage: run.sh KVER [module|daemon]" >&2; exit 2 ;;
esac
ko=$TOP/build/$kver/hbmguard.ko
mkdir -p "$TOP/build/logs"

# What modinfo shows an operator, checked on the host.
for p in sim_devices sim_hbm_mib sim_page_size sim_spare_pages event_ring map \
	path_memory_failure path_mce path_edac path_nvidia xid_module; do
	modinfo -p "$ko" | grep -q "^$p:" || { echo "modinfo: no $p parameter" >&2; exit 1; }
done

# KASAN, lockdep and kmemleak under TCG make that kernel several times slower;
# the guest scripts and hbmtest shorten their 10^5-fold loops when they see
# HBM_DEBUG_KERNEL=1.
kernel=(--kernel "$kver") timeout=600 env=""
if [ -f "$TOP/build/$kver/kernel" ]; then
	kernel=(--kernel-dir "$(cat "$TOP/build/$kver/kernel")") timeout=3000
	env="export HBM_DEBUG_KERNEL=1; "
fi

# Each script in turn, its time since boot after it (to balance the parts);
# kmemleak.sh last, once every module is unloaded.
cmd="f=0; for s in $scripts; do sh /\$s.sh || f=1; echo \"# \$s.sh done at \$(cut -d' ' -f1 /proc/uptime) s\"; done; "
cmd+="sh /kmemleak.sh || f=1; exit \$f"
echo "== tier 2 on $kver${2:+ ($part)}"
start=$(date +%s)
"$TOP/scripts/guest-run" "${kernel[@]}" --timeout $timeout --hbm-node 256 \
	--module hwpoison-inject --module mce-inject \
	--file "$ko:/hbmguard.ko" \
	--file "$TOP/build/guest/hbmtest:/bin/hbmtest" \
	--file "$TOP/build/guest/hbmctl:/bin/hbmctl" \
	--file "$TOP/build/guest/hbmnl:/bin/hbmnl" \
	--file "$TOP/build/guest/hbmrank:/bin/hbmrank" \
	--file "$TOP/tests/kernel/recovery.sh:/recovery.sh" \
	--bin /usr/bin/genl-ctrl-list \
	--bin "$TOP/build/hbmguardd:/bin/hbmguardd" \
	--file "$TOP/tests/kernel/daemon.sh:/daemon.sh" \
	--file "$TOP/tests/kernel/lib.sh:/lib.sh" \
	--file "$TOP/tests/kernel/tier2.sh:/tier2.sh" \
	--file "$TOP/tests/kernel/ras.sh:/ras.sh" \
	--file "$TOP/build/$kver/testmods/hbm_test_provider.ko:/hbm_test_provider.ko" \
	--file "$TOP/build/$kver/testmods/hbm_fake_nvidia.ko:/hbm_fake_nvidia.ko" \
	--file "$TOP/build/$kver/testmods/hbm_fake_edac.ko:/hbm_fake_edac.ko" \
	--file "$TOP/tests/kernel/providers.sh:/providers.sh" \
	--file "$TOP/tests/kernel/gpu.sh:/gpu.sh" \
	--file "$TOP/tests/kernel/xid.sh:/xid.sh" \
	--file "$TOP/tests/kernel/amdgpu.sh:/amdgpu.sh" \
	--file "$TOP/build/amdgpu.tar:/amdgpu.tar" \
	--file "$TOP/tests/kernel/lifetime.sh:/lifetime.sh" \
	--file "$TOP/tests/kernel/kmemleak.sh:/kmemleak.sh" \
	--file "$TOP/tests/kernel/nvml.sh:/nvml.sh" \
	--file "$TOP/build/nvml/nodes/libnvidia-ml.so.1:/nvml/libnvidia-ml.so.1" \
	--file "$TOP/build/$kver/testmods/hbm_fake_nvdev.ko:/hbm_fake_nvdev.ko" \
	--file "$TOP/tests/nvml/node.scn:/nvml/node.scn" \
	--log "$TOP/build/logs/tier2-$kver${2:+-$part}.log" \
	-- "$env$cmd"
if [ "$part" != daemon ]; then
	# Intel's machine check encodings, in a guest whose CPU says GenuineIntel.
	"$TOP/scripts/guest-run" "${kernel[@]}" --timeout $timeout --cpu max,vendor=GenuineIntel \
		--hbm-node 256 --module mce-inject \
		--file "$ko:/hbmguard.ko" \
		--file "$TOP/build/guest/hbmctl:/bin/hbmctl" \
		--file "$TOP/build/guest/hbmnl:/bin/hbmnl" \
		--file "$TOP/tests/kernel/lib.sh:/lib.sh" \
		--file "$TOP/tests/kernel/mce_intel.sh:/mce_intel.sh" \
		--file "$TOP/tests/kernel/kmemleak.sh:/kmemleak.sh" \
		--log "$TOP/build/logs/tier2-intel-$kver.log" \
		-- "$env"'sh /mce_intel.sh; a=$?; sh /kmemleak.sh; exit $(( (a | $?) != 0 ))'
fi
echo "== tier 2 on $kver${2:+ ($part)} passed in $(($(date +%s) - start))s"
