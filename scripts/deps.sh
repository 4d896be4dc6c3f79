#!/bin/sh
# Install everything hbmguard needs to build and test on Debian bookworm.
# The one place where packages are installed; every make target that needs
# something calls this first.  Idempotent: a warm machine costs one dpkg query.
#
#   deps.sh         build and test
#   deps.sh demo    and what make demo draws its plot with
#   deps.sh linux-source
#                   and print the path of Debian's linux-source-6.12 package,
#                   fetched into .cache/ once (the debug kernel's source)
#   deps.sh nvml    only NVIDIA's nvml.h, into .cache/nvml/include (no root needed)
set -eu

# libmicrohttpd-dev: hbmguardd's metrics endpoint (daemon/metrics.c); prometheus:
# its promtool checks what the endpoint serves, and python3-prometheus-client's
# strict parsers both its formats (tests/unit/check_metrics.c).
# etcd-server, etcd-client (3.4.23): the store hbmguardd's cluster link
# speaks to (daemon/etcd.c, through libcurl4-openssl-dev), run by
# tests/cluster/run.sh in a network namespace (iproute2) with certificates
# made by openssl; the package's etcd.service is not what the test runs.
# clang, libclang-rt-14-dev: libFuzzer and its sanitizers, for tier 1's fuzz
# targets (tests/fuzz/); GCC has no fuzzing engine.
# Kernels the tests boot.  The headers build the module; the images give the
# guests their vmlinuz and the stock injection modules (hwpoison-inject,
# mce-inject).  6.1 is bookworm's own kernel, 6.12 its newer LTS.
PKGS="build-essential pkg-config check libnl-3-dev libnl-genl-3-dev libnl-utils
libsystemd-dev libjson-c-dev qemu-system-x86 busybox-static cpio kmod xz-utils
python3-yaml python3-jsonschema systemd mmdebstrap e2fsprogs groff-base
linux-headers-amd64 linux-image-amd64
linux-headers-6.12-amd64 linux-image-6.12-amd64
flex bison bc libelf-dev
libmicrohttpd-dev prometheus python3-prometheus-client
etcd-server etcd-client libcurl4-openssl-dev iproute2 openssl
clang libclang-rt-14-dev"
[ "${1:-}" = demo ] && PKGS="$PKGS python3-matplotlib"

TOP=$(cd "$(dirname "$0")/.." && pwd)

# Debian's linux-source-6.12, kept in .cache/linux-source/ (not installed):
# the kernel's own ynl library and netlink schemas check our YNL spec, and
# tier 4 builds its debug kernel from it.  Prints the package's path.
linux_source() {
	dir=$TOP/.cache/linux-source
	deb=$(ls "$dir"/linux-source-6.12_*_all.deb 2>/dev/null | tail -n 1)
	if [ -z "$deb" ]; then
		# Into a private directory first: .cache is shared with other trees.
		mkdir -p "$dir"
		tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
		(cd "$tmp" && apt-get download -q linux-source-6.12 >/dev/null) ||
			{ rm -rf "$tmp"; return 1; }
		mv "$tmp"/linux-source-6.12_*_all.deb "$dir/"
		rmdir "$tmp"
		deb=$(ls "$dir"/linux-source-6.12_*_all.deb | tail -n 1)
	fi
	echo "$deb"
}

ynl_fetch() {
	dir=$TOP/.cache/ynl
	[ -f "$dir/linux-source-6.12/tools/net/ynl/lib/nlspec.py" ] && return 0
	deb=$(linux_source)
	mkdir -p "$dir"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO --wildcards '*/linux-source-6.12.tar.xz' |
		tar -xJ -C "$dir" --wildcards 'linux-source-6.12/tools/net/ynl/*' \
			'linux-source-6.12/Documentation/netlink/*'
}

# NVIDIA's nvml.h, the header the NVML source and its test double are built
# against: Debian bookworm non-free's libnvidia-ml-dev (11.8.86, header only)
# into .cache/nvml/include.  Not installed, and the system's apt sources are
# left alone: a private sources list, index and archive under .cache/nvml/apt.
# apt verifies the index against Debian's keys in the system's trusted.gpg.d
# and the .deb against the sha256 in that index; nothing else is trusted.
NVML_SOURCES="deb http://deb.debian.org/debian bookworm non-free"
nvml_header() {
	dir=$TOP/.cache/nvml
	[ -f "$dir/include/nvml.h" ] && return 0
	mkdir -p "$dir"
	# A private directory first: .cache is shared with other trees.
	tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/deb"
	echo "$NVML_SOURCES" >"$tmp/sources.list"
	set -- -q -o Dir::Etc::SourceList="$tmp/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$tmp/lists" \
		-o Dir::Cache="$tmp/cache" -o APT::Sandbox::User="$(id -un)"
	if ! apt-get "$@" update >"$tmp/log" 2>&1 ||
	   ! (cd "$tmp/deb" && apt-get "$@" download libnvidia-ml-dev) >>"$tmp/log" 2>&1 ||
	   ! dpkg-deb -x "$tmp"/deb/libnvidia-ml-dev_*_amd64.deb "$tmp/x" ||
	   ! [ -f "$tmp/x/usr/include/nvml.h" ]; then
		cat "$tmp/log" >&2
		echo "deps.sh: could not fetch nvml.h from Debian's libnvidia-ml-dev" >&2
		rm -rf "$tmp"
		return 1
	fi
	basename "$tmp"/deb/libnvidia-ml-dev_*_amd64.deb >"$tmp/x/usr/include/nvml.h.from"
	rm -rf "$dir/include"
	mv "$tmp/x/usr/include" "$dir/include"
	rm -rf "$tmp"
}

# What the caller asked for, once every package is there.
finish() {
	ynl_fetch
	nvml_header
	if [ "${1:-}" = linux-source ]; then
		linux_source
	fi
}

if [ "${1:-}" = nvml ]; then
	nvml_header
	exit
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	finish "${1:-}"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages:$missing; run as root to install them" >&2
	exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# The guests boot their own initramfs: skip building one for the host.
export INITRD=No
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
finish "${1:-}"
