#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh: the debug kernel of test tier 4 (KASAN, lockdep, kmemleak,
# UBSAN, KFENCE, DEBUG_VM...), built from Debian's linux-source-6.12 package
# with tests/debug/debug.config on top of tinyconfig, once per machine.
#
#   debug-kernel.sh          build it unless cached; print its directory
#   debug-kernel.sh dir      only print the directory it is (or would be) in
#
# The directory, .cache/debug-kernel/KEY, is keyed by a hash of the config
# fragment's settings, the source package's version and the compiler, and
# holds:
#   vmlinuz          the image (scripts/guest-run --kernel-dir DIR)
#   kernelrelease    its `uname -r`
#   lib/modules/R/   its modules, depmod'ed (hwpoison-inject, mce-inject)
#   build/           the configured and built tree, to build modules against
#   build.log        the build's output, and how long it took
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
frag=$TOP/tests/debug/debug.config
cache=$TOP/.cache/debug-kernel

# The package is fetched (and kept) by deps.sh, the one place that fetches.
deb=$("$TOP/scripts/deps.sh" linux-source)
srcver=$(dpkg-deb -f "$deb" Version)
# The fragment's settings, not its comments: rewording one rebuilds nothing.
# This script is an input too (its recipe and its checks), and the compiler
# Kbuild calls, gcc whatever CC says.
key=$( { grep -E '^(CONFIG_|# CONFIG_.* is not set$)' "$frag"; echo "$srcver"
	gcc --version | head -n 1; grep -v '^[[:space:]]*#' "$0"; } |
	sha256sum | cut -c1-16)
dir=$cache/$key
if [ "${1:-}" = dir ] || [ -f "$dir/kernelrelease" ]; then
	echo "$dir"
	exit 0
fi

mkdir -p "$cache"
# Another worktree sharing .cache may be building the same kernel: wait for it.
exec 9>"$cache/.lock-$key"
flock 9
if [ -f "$dir/kernelrelease" ]; then
	echo "$dir"
	exit 0
fi

tmp=$cache/.tmp-$key
rm -rf "$tmp"
mkdir -p "$tmp"
log=$tmp/build.log
start=$(date +%s)
echo "debug-kernel: building $key from linux-source $srcver (log: $dir/build.log)" >&2
# set -e holds inside the groups below only while nothing tests their status
# (an `|| ...` after one would turn it off): a failure exits through this.
trap 'tail -n 30 "$log" >&2' ERR
{
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO --wildcards '*/linux-source-6.12.tar.xz' | tar -xJ -C "$tmp"
	mv "$tmp/linux-source-6.12" "$tmp/build"
	cd "$tmp/build"
	# Plain tinyconfig is 32-bit on x86 and would then drop NUMA and KASAN.
	make ARCH=x86_64 tinyconfig
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make ARCH=x86_64 olddefconfig
} >"$log" 2>&1

# Kconfig drops what it cannot satisfy without a word: refuse such a config.
lost=0
while read -r line || [ -n "$line" ]; do
	case "$line" in
	CONFIG_*=*) want=$line ;;
	"# CONFIG_"*" is not set") want=$line ;;
	*) continue ;;
	esac
	name=${want#\# }; name=${name%%[= ]*}
	if [[ $want == \#* ]]; then
		grep -q "^$name=" "$tmp/build/.config" || continue
	else
		grep -qxF "$want" "$tmp/build/.config" && continue
	fi
	echo "debug-kernel: $want did not survive olddefconfig:" \
		"$(grep "${name}[= ]" "$tmp/build/.config" || echo unset)" >&2
	lost=1
done <"$frag"
[ $lost = 0 ] || exit 1

# Under make check's jobserver (make -j, this run a `+` recipe), its job
# slots: the guests that run meanwhile hold the others.
jobs=${DEBUG_KERNEL_JOBS:-$(nproc)}
jobs_arg=(-j"$jobs")
if [ -z "${DEBUG_KERNEL_JOBS:-}" ] && [[ ${MAKEFLAGS:-} == *--jobserver-auth=* ]]; then
	jobs=jobserver jobs_arg=()
fi
{
	make -C "$tmp/build" ARCH=x86_64 "${jobs_arg[@]}" bzImage modules
	make -C "$tmp/build" ARCH=x86_64 INSTALL_MOD_PATH="$tmp" modules_install
} >>"$log" 2>&1
trap - ERR
cp "$tmp/build/arch/x86/boot/bzImage" "$tmp/vmlinuz"
make -s -C "$tmp/build" kernelrelease >"$tmp/kernelrelease.new"
echo "debug-kernel: built in $(($(date +%s) - start))s with ${jobs_arg[*]:-the jobserver}" | tee -a "$log" >&2
# The modules' build symlink points into the temporary directory: drop it.
rm -f "$tmp"/lib/modules/*/build
# kernelrelease last: it marks the directory complete.  A directory without
# it is what an interrupted run left between these two moves: replace it
# (mv would put the new one inside it).
rm -rf "$dir"
mv "$tmp" "$dir"
mv "$dir/kernelrelease.new" "$dir/kernelrelease"
echo "$dir"
