# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest (busybox sh): load, test, unload.
. /lib.sh

check "bad parameter refused" '! insmod /hbmguard.ko event_ring=1000 2>/dev/null'
check "bad parameter explained" 'dmesg | grep -q "event_ring=1000: must be a power of two"'
check "load" 'insmod /hbmguard.ko sim_devices=2 sim_hbm_mib=1024'
check "parameters in sysfs" '[ "$(cat /sys/module/hbmguard/parameters/sim_devices)" = 2 ]'
check "device node 0640" 'ls -l /dev/hbmguard | grep -q "^crw-r-----"'
check "aperture node 0600" 'ls -l /dev/hbmguard-aperture | grep -q "^crw-------"'
# The first open through a node that then goes, filesystem and all: nothing
# of it may stay in use by what follows (the debug kernel's KASAN checks).
check "first open through a node that goes away" 'mkdir -p /tmp/n && mount -t tmpfs tmpfs /tmp/n &&
	mknod /tmp/n/hbm c $((0x$(stat -c %t /dev/hbmguard))) $((0x$(stat -c %T /dev/hbmguard))) &&
	: </tmp/n/hbm && rm /tmp/n/hbm && umount /tmp/n'

hbmtest
rc=$?
[ $rc = 0 ] || fail=$((fail + 1))

# hbmctl, as an operator uses it: output and exit statuses.
check "hbmctl devices" 'hbmctl devices | grep -q "^0 *sim0 *sim:sim0 *1G *4096 *0 *0 *0 *10/10 *ok"'
check "hbmctl retire" 'hbmctl retire sim1 0x5000 && hbmctl pages sim1 | grep -q "^0x5000 *1 .*retired *admin"'
check "hbmctl translate" 'hbmctl translate 1 0x5010 | grep -q "^0x5010 -> 0x3fff6010 (retired)"'
check "hbmctl clear" 'hbmctl clear sim1 0x5000 4K && hbmctl translate sim1 0x5000 | grep -q "(clean)"'
check "hbmctl bad usage is 2" 'hbmctl frobnicate sim0 2>/dev/null; [ $? = 2 ]'
check "hbmctl bad number is 2" 'hbmctl retire sim0 12Q 2>/dev/null; [ $? = 2 ]'
check "hbmctl refused is 1" 'hbmctl retire sim0 0x10 2>&1 | grep -q "page aligned"; hbmctl retire sim0 0x10 2>/dev/null; [ $? = 1 ]'
check "hbmctl unknown device" 'hbmctl pages gpu9 2>&1 | grep -q "no device .gpu9."'
check "hbmctl status without the daemon is 3" 'hbmctl --socket /nonexistent status >/tmp/st 2>/dev/null;
	[ $? = 3 ] && grep -q "^hbmguardd: not running" /tmp/st && grep -q "^0 *sim0 " /tmp/st'
check "... in JSON too: the daemon null" 'hbmctl status --socket /nonexistent --json >/tmp/st; [ $? = 3 ] &&
	grep -q "^{\"module\":{\"api\":[0-9]*,.*},\"daemon\":null,\"devices\":\[{\"id\":0,\"name\":\"sim0\"" /tmp/st'
check "hbmctl --json=pretty: --json's document, indented" '[ "$(hbmctl --json=pretty pages sim0 | tr -d " \n")" = "$(hbmctl --json pages sim0)" ] &&
	[ $(hbmctl --json=pretty pages sim0 | wc -l) -gt 10 ]'
check "hbmctl options after the command" '[ "$(hbmctl pages sim0 --json=short)" = "$(hbmctl --json pages sim0)" ]'
check "hbmctl --no-legend: the rows only" 'hbmctl devices --no-legend | grep -q "^0 *sim0 " &&
	[ "$(hbmctl --no-legend devices | wc -l)" = $(($(hbmctl devices | wc -l) - 1)) ] &&
	! hbmctl --no-legend devices | grep -q "^ID " &&
	[ "$(hbmctl pages sim0 --no-legend | wc -l)" = $(($(hbmctl pages sim0 | wc -l) - 2)) ] &&
	! hbmctl pages sim0 --no-legend | grep -q "OFFSET"'

check "unload" 'rmmod hbmguard'
check "unload clean" 'dmesg | grep -q "hbmguard: unloaded"'
check "load again with no devices" 'insmod /hbmguard.ko && rmmod hbmguard'
check "hbmctl without the module is 4" 'hbmctl status 2>/dev/null; [ $? = 4 ]'

finish tier2
