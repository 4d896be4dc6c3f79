# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest (busybox sh): load, test, unload.
fail=0
check() {
	if eval "$2"; then
		echo "ok $1"
	else
		echo "not ok $1"
		fail=$((fail + 1))
	fi
}

check "bad parameter refused" '! insmod /hbmguard.ko event_ring=1000 2>/dev/null'
check "bad parameter explained" 'dmesg | grep -q "event_ring=1000: must be a power of two"'
check "load" 'insmod /hbmguard.ko sim_devices=2 sim_hbm_mib=1024'
check "parameters in sysfs" '[ "$(cat /sys/module/hbmguard/parameters/sim_devices)" = 2 ]'
check "device node 0640" 'ls -l /dev/hbmguard | grep -q "^crw-r-----"'

hbmtest
rc=$?
[ $rc = 0 ] || fail=$((fail + 1))

check "unload" 'rmmod hbmguard'
check "unload clean" 'dmesg | grep -q "hbmguard: unloaded"'
check "load again with no devices" 'insmod /hbmguard.ko && rmmod hbmguard'

echo "tier2: $([ $fail = 0 ] && echo all passed || echo "$fail failed")"
exit $fail
