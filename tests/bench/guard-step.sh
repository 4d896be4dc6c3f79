#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: tests/bench/guard_step.py in a chroot of the tier-3 rootfs
# (scripts/rootfs.sh), whose Debian torch is the one the guests train with,
# run natively: what the Guard adds to a step, without TCG's cost of every
# system call and wake-up.  A mount namespace of its own keeps /dev and
# /proc off the host.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
kver=${1:?usage: guard-step.sh KVER}
tarball=$("$TOP/scripts/rootfs.sh" "$kver")
root=$(mktemp -d "$TOP/build/guard-step.XXXXXX")
trap 'rm -rf "$root"' EXIT
tar -xf "$tarball" -C "$root" ./usr ./etc ./lib ./lib64 ./bin ./dev ./proc ./tmp
mkdir -p "$root/opt/hbmguard"
cp -r "$TOP/daemon/libhbmguard/python/hbmguard" "$TOP/tests/bench/guard_step.py" \
	"$root/opt/hbmguard/"
unshare --mount --propagation private sh -c '
	mount --bind /dev "$1/dev" && mount -t proc proc "$1/proc" &&
	chroot "$1" /usr/bin/python3 /opt/hbmguard/guard_step.py --path /opt/hbmguard' sh "$root" 2>&1 |
	grep -v -e 'Logging before InitGoogleLogging' -e 'Unable to resolve hostname'
