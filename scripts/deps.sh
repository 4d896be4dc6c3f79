#!/bin/sh
# Install everything hbmguard needs to build and test on Debian bookworm.
# The one place where packages are installed; every make target that needs
# something calls this first.  Idempotent: a warm machine costs one dpkg query.
#
#   deps.sh         build and test
#   deps.sh demo    and what make demo draws its plot with
set -eu

# Kernels the tests boot.  The headers build the module; the images give the
# guests their vmlinuz and the stock injection modules (hwpoison-inject,
# mce-inject).  6.1 is bookworm's own kernel, 6.12 its newer LTS.
PKGS="build-essential pkg-config check libnl-3-dev libnl-genl-3-dev libnl-utils
libsystemd-dev qemu-system-x86 busybox-static cpio kmod xz-utils
python3-yaml python3-jsonschema systemd mmdebstrap e2fsprogs groff-base
linux-headers-amd64 linux-image-amd64
linux-headers-6.12-amd64 linux-image-6.12-amd64"
[ "${1:-}" = demo ] && PKGS="$PKGS python3-matplotlib"

TOP=$(cd "$(dirname "$0")/.." && pwd)

# The kernel's own ynl library and netlink schemas, to check our YNL spec
# with: taken from Debian's linux-source-6.12 into .cache/, not installed.
ynl_fetch() {
	dir=$TOP/.cache/ynl
	[ -f "$dir/linux-source-6.12/tools/net/ynl/lib/nlspec.py" ] && return 0
	mkdir -p "$dir"
	(cd "$dir" && rm -f linux-source-6.12_*.deb &&
	 apt-get download -q linux-source-6.12 >/dev/null &&
	 dpkg-deb --fsys-tarfile linux-source-6.12_*.deb |
		tar -xO --wildcards '*/linux-source-6.12.tar.xz' |
		tar -xJ --wildcards 'linux-source-6.12/tools/net/ynl/*' \
			'linux-source-6.12/Documentation/netlink/*' &&
	 rm -f linux-source-6.12_*.deb)
}

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	ynl_fetch
	exit 0
fi

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
ynl_fetch
