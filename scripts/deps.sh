#!/bin/sh
# Install everything hbmguard needs to build and test on Debian bookworm.
# The one place where packages are installed; every make target that needs
# something calls this first.  Idempotent: a warm machine costs one dpkg query.
set -eu

# Kernels the tests boot.  The headers build the module; the images give the
# guests their vmlinuz and the stock injection modules (hwpoison-inject,
# mce-inject).  6.1 is bookworm's own kernel, 6.12 its newer LTS.
PKGS="build-essential pkg-config check libnl-3-dev libnl-genl-3-dev libnl-utils
libsystemd-dev qemu-system-x86 busybox-static cpio kmod xz-utils
linux-headers-amd64 linux-image-amd64
linux-headers-6.12-amd64 linux-image-6.12-amd64"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages:$missing; run as root to install them" >&2
	exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# The guests boot their own initramfs: skip building one for the host.
export INITRD=No
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
