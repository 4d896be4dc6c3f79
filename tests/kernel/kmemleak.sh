# SPDX-License-Identifier: GPL-2.0
# A guest's last step, once every script has unloaded its modules: the
# detectors are still on, no report tainted the kernel, and kmemleak (the
# debug kernel of scripts/debug-kernel.sh; Debian's kernels have none) finds
# nothing.
. /lib.sh
# Lockdep stops at its first report, and a taint stops it silently
# (kernel/panic.c, add_taint()): it must still be validating.
[ -e /proc/lockdep_stats ] &&
	check "lockdep still validating" "grep -qE '^ *debug_locks: +1$' /proc/lockdep_stats"
# Bad page (B, 32), died (D, 128), warned (W, 512), soft lockup (L, 16384):
# a report the kernel log may have lost still leaves its taint.
check "no report tainted the kernel" \
	'[ $(( $(cat /proc/sys/kernel/tainted) & (32 | 128 | 512 | 16384) )) = 0 ]'
f=/sys/kernel/debug/kmemleak
if [ ! -e $f ]; then
	if [ "${HBM_DEBUG_KERNEL:-}" = 1 ]; then
		echo "not ok kmemleak: missing on the debug kernel"
		fail=$((fail + 1))
	else
		echo "kmemleak: not in this kernel, skipped"
	fi
	finish kmemleak
fi
check "kmemleak: no hbm module left loaded" "! grep -q '^hbm' /proc/modules"
# kmemleak reports only objects older than 5 s (mm/kmemleak.c,
# MSECS_MIN_AGE): scan, let the last frees age, scan again.  A scan kmemleak
# refuses (it turned itself off) is EPERM, and its report then empty.
check "kmemleak: scan" "echo scan >$f"
sleep 6
check "kmemleak: scan again" "echo scan >$f"
# A debugfs file's size is 0 whatever it holds: read it.
check "kmemleak: report read" "cat $f >/tmp/kmemleak"
cat /tmp/kmemleak
check "kmemleak: no unreferenced object" "! grep -q unreferenced /tmp/kmemleak"
finish kmemleak
