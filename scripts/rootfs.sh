#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rootfs.sh KVER: the Debian bookworm root filesystem the system tests (tier
# 3) boot, as a tarball in .cache/rootfs/; built with mmdebstrap when missing
# and reused while its recipe below stays the same.  Prints its path.
#
# systemd as init, Debian's kernel KVER with its headers and DKMS (so that
# `dkms install` can rebuild hbmguard in the guest), the libraries hbmguardd
# links or loads (libjson-c5 for hbmctl, libmicrohttpd12 for its metrics
# endpoint, loaded when it listens),
# python3 for the checks that read JSON, prometheus and curl for the metrics
# checks, slurmctld, slurmd, slurm-client and munge for the Slurm drain
# checks (a one-node cluster in the guest), etcd-server and etcd-client for
# the two-node tier (the etcd the nodes' daemons share runs in the first
# guest: tests/system/run.sh KVER cluster), and rasdaemon for make
# bench to compare with: bookworm-backports' (0.8.1), as bookworm's own
# (0.6.8) is built without memory_failure support.  hbmguard itself is not
# in it: each run installs the tree under test with `make install DESTDIR=`.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
kver=${1:?usage: rootfs.sh KVER}
PKGS="systemd systemd-sysv udev kmod procps passwd util-linux python3 man-db
rasdaemon/bookworm-backports libnl-3-200 libnl-genl-3-200 libjson-c5 libmicrohttpd12 prometheus curl
slurmctld slurmd slurm-client munge etcd-server etcd-client
dkms make python3-torch linux-image-$kver linux-headers-$kver"

MIRROR=http://deb.debian.org/debian

# Bump when what goes into the tarball changes other than through PKGS.
RECIPE=1
key=$(echo "$RECIPE $MIRROR $PKGS" | sha256sum | cut -c1-16)
out=$TOP/.cache/rootfs/bookworm-$kver-$key.tar
if [ -s "$out" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$(dirname "$out")"
# Another run (make check boots two guests at once) may be building it: wait.
exec 9>"$TOP/.cache/rootfs/.lock-$kver"
flock 9
if [ -s "$out" ]; then
	echo "$out"
	exit 0
fi
rm -f "$TOP"/.cache/rootfs/bookworm-"$kver"-*.tar*	# older versions of it
echo "rootfs.sh: building $out with mmdebstrap" >&2
# The kernel's postinst builds the initramfs the guest boots with.
# Its whole output goes to a log, shown when it fails.
if ! mmdebstrap --mode=root --variant=minbase --format=tar \
	--include="$(echo $PKGS | tr ' ' ,)" \
	bookworm "$out.tmp" "deb $MIRROR bookworm main" \
	"deb $MIRROR bookworm-updates main" "deb $MIRROR bookworm-backports main" \
	"deb http://security.debian.org/debian-security bookworm-security main" \
	>"$out.log" 2>&1; then
	tail -n 40 "$out.log" >&2
	echo "rootfs.sh: mmdebstrap failed; its log: $out.log" >&2
	rm -f "$out.tmp"
	exit 1
fi
mv "$out.tmp" "$out"
echo "$out"
