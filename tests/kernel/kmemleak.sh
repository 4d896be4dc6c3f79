# SPDX-License-Identifier: GPL-2.0
# Tier 2's last step, inside the guest, once every script has unloaded its
# modules: what kmemleak finds (the debug kernel of scripts/debug-kernel.sh;
# Debian's kernels have no kmemleak and skip it).
. /lib.sh
f=/sys/kernel/debug/kmemleak
if [ ! -e $f ]; then
	echo "kmemleak: not in this kernel, skipped"
	exit 0
fi
check "kmemleak: no hbm module left loaded" "! grep -q '^hbm' /proc/modules"
# kmemleak reports only objects older than 5 s (mm/kmemleak.c,
# MSECS_MIN_AGE): scan, let the last frees age, scan again.
echo scan >$f
sleep 6
echo scan >$f
# A debugfs file's size is 0 whatever it holds: read it.
cat $f >/tmp/kmemleak
cat /tmp/kmemleak
check "kmemleak: no unreferenced object" "! grep -q unreferenced /tmp/kmemleak"
finish kmemleak
