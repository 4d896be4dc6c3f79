#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make install DESTDIR=...: every file an operator's node needs, in place,
# the module built for the kernel KDIR names, and modinfo reading it.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"; make -s -C "$TOP" clean-module >/dev/null 2>&1 || true' EXIT
make -s -C "$TOP" install DESTDIR="$dest" PREFIX=/usr >/dev/null
fail=0
for f in usr/sbin/hbmguardd usr/sbin/hbmctl usr/sbin/hbmnvml usr/share/man/man8/hbmnvml.8 \
	usr/lib/systemd/system/hbmguardd.service usr/lib/systemd/system/hbmguardd.socket \
	usr/lib/systemd/catalog/hbmguard.catalog \
	usr/lib/udev/rules.d/60-hbmguard.rules \
	usr/lib/sysusers.d/hbmguard.conf \
	usr/lib/modules-load.d/hbmguard.conf \
	etc/modprobe.d/hbmguard.conf \
	usr/include/linux/hbmguard.h usr/include/hbmguard.h \
	usr/lib/libhbmguard.a usr/lib/libhbmguard.so.0 usr/lib/libhbmguard.so \
	usr/lib/pkgconfig/hbmguard.pc \
	usr/share/man/man8/hbmctl.8 usr/share/man/man8/hbmguardd.8 \
	usr/share/man/man5/hbmguardd.conf.5 \
	usr/share/man/man4/hbmguard.4 \
	usr/lib/python3/dist-packages/hbmguard/__init__.py usr/lib/python3/dist-packages/hbmguard/torch.py \
	usr/lib/python3/dist-packages/hbmguard/run.py; do
	[ -e "$dest/$f" ] || { echo "missing: /$f" >&2; fail=1; }
done
# The pages read without a warning.
for m in "$dest"/usr/share/man/man*/*; do
	[ -z "$(groff -man -Tutf8 -ww -z "$m" 2>&1)" ] || { echo "man page warnings: $m" >&2; fail=1; }
done
ko=$(find "$dest/lib/modules" -path '*/updates/hbmguard.ko*' | head -n 1)
[ -n "$ko" ] || { echo "missing: /lib/modules/*/updates/hbmguard.ko" >&2; fail=1; }
[ -z "$ko" ] || modinfo -F name "$ko" | grep -qx hbmguard || { echo "modinfo cannot read $ko" >&2; fail=1; }
grep -q '^prefix=/usr$' "$dest/usr/lib/pkgconfig/hbmguard.pc" || { echo "hbmguard.pc prefix" >&2; fail=1; }
files=$(find "$dest" -type f | wc -l)

# The default prefix, /usr/local: the package where Debian's python3 itself
# searches (not through PYTHONPATH), the library where the loader does
# (/etc/ld.so.conf.d/libc.conf), and the two working together: imported,
# the library found by the name the package asks for.
local_dest=$(mktemp -d)
trap 'rm -rf "$dest" "$local_dest"; make -s -C "$TOP" clean-module >/dev/null 2>&1 || true' EXIT
make -s -C "$TOP" install DESTDIR="$local_dest" >/dev/null
site=$(find "$local_dest/usr/local/lib" -path '*/dist-packages/hbmguard/__init__.py' | head -n 1)
site=${site%/hbmguard/__init__.py}
if [ -z "$site" ]; then
	echo "default prefix: no Python package under /usr/local/lib" >&2
	fail=1
else
	/usr/bin/python3 -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "${site#"$local_dest"}" ||
		{ echo "default prefix: python3 does not search ${site#"$local_dest"}" >&2; fail=1; }
	grep -qx /usr/local/lib /etc/ld.so.conf.d/*.conf ||
		{ echo "default prefix: the loader does not search /usr/local/lib" >&2; fail=1; }
	( cd / && LD_LIBRARY_PATH=$local_dest/usr/local/lib PYTHONPATH=$site /usr/bin/python3 -c '
import hbmguard, sys
hbmguard._load()
sys.exit(sys.argv[1] + "/usr/local/lib/libhbmguard.so.0" not in open("/proc/self/maps").read())
' "$local_dest" ) ||
		{ echo "default prefix: the package does not load the library installed beside it" >&2; fail=1; }
fi

# A package's build (a build directory of its own in the tree, as a
# package's is, the packager's flags as dpkg-buildflags gives them, a later
# release's _FORTIFY_SOURCE): what is installed alone is built, none of the
# tests' programs, and no program or library carries the tree's path
# (-ffile-prefix-map: the same package from any tree; the module is kbuild's
# and DKMS's, built on the node).
mkdir -p "$TOP/build"
pkg_build=$(mktemp -d "$TOP/build/package.XXXXXX") pkg_dest=$(mktemp -d)
trap 'rm -rf "$dest" "$local_dest" "$pkg_build" "$pkg_dest"; make -s -C "$TOP" clean-module >/dev/null 2>&1 || true' EXIT
make -s -C "$TOP" clean-module >/dev/null
make -s -C "$TOP" install DESTDIR="$pkg_dest" PREFIX=/usr BUILD="$pkg_build" \
	CPPFLAGS="-Wdate-time -D_FORTIFY_SOURCE=3" CFLAGS="-g -O2 -ffile-prefix-map=$TOP=." \
	LDFLAGS="-Wl,-z,relro -Wl,-z,now" >/dev/null
for t in unit unit-san bench-core guest cluster-agent; do
	[ ! -e "$pkg_build/$t" ] || { echo "make install built a test's program: $t" >&2; fail=1; }
done
for f in usr/sbin/hbmguardd usr/sbin/hbmctl usr/sbin/hbmnvml usr/lib/libhbmguard.so.0 \
	usr/lib/libhbmguard.a; do
	! grep -qF "$TOP" "$pkg_dest/$f" || { echo "/$f holds the build tree's path" >&2; fail=1; }
done
[ $fail = 0 ] && echo "install: $files files in place, module $(basename "$(dirname "$(dirname "$ko")")"); default prefix: python3 and the loader find it; a package's build: the programs alone, no build path in them or the libraries"
exit $fail
