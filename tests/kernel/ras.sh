# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: netlink and the kernel's own RAS paths.  The
# guest has a CPU-less NUMA node 1 standing for HBM exposed as memory.
fail=0
check() {
	if eval "$2"; then
		echo "ok $1"
	else
		echo "not ok $1"
		fail=$((fail + 1))
	fi
}
# Wait for a file to hold a line matching a pattern, up to ~10 s.
wait_for() {
	i=0
	while ! grep -q "$2" "$1" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q "$2" "$1"
}
echo "operator:x:1000:1000::/:/bin/sh" >>/etc/passwd

check "load" 'insmod /hbmguard.ko sim_devices=1'
check "family registered" 'hbmnl stats | grep -q "^devices=1 "'
check "netlink bad input" 'hbmnl badinput'
check "netlink refuses non-admins" 'su operator -c "hbmnl unprivileged"'

# HBM as NUMA node 1, registered as a device over netlink.
id=$(hbmnl range-node hbm0 1)
check "node 1 registered" '[ "$id" = 1 ]'
check "range device dumped" 'hbmnl devices | grep -q "^device 1 hbm0 hbm:hbm0 kind=3 "'
check "node 1 twice refused" '! hbmnl range-node hbm1 1 >/dev/null'
phys=$(hbmnl devices | sed -n 's/^device 1 .* phys=\(0x[0-9a-f]*\)$/\1/p')
pfn=$(( phys / 4096 + 100 ))

# hwpoison_inject on a page of node 1: the page is retired, and a listener
# hears "error seen" then "page retired", numbered one after the other.
hbmnl listen 2 5000 >/tmp/mf.events &
wait_for /tmp/mf.events listening
echo $pfn >/sys/kernel/debug/hwpoison/corrupt-pfn
wait
cat /tmp/mf.events
check "memory_failure: error event" 'grep -q "^event type=1 seq=.* dev=1 offset=0x64000 .*state=3 count=1 aux=2$" /tmp/mf.events'
check "memory_failure: retired event" 'grep -q "^event type=2 seq=.* dev=1 offset=0x64000 length=0x1000 source=3 " /tmp/mf.events'
s1=$(sed -n 's/^event type=1 seq=\([0-9]*\) .*/\1/p' /tmp/mf.events)
s2=$(sed -n 's/^event type=2 seq=\([0-9]*\) .*/\1/p' /tmp/mf.events)
check "memory_failure: consecutive seqnums" '[ -n "$s1" ] && [ "$s2" = $((s1 + 1)) ]'
check "memory_failure: page retired" 'hbmctl pages hbm0 | grep -q "^0x64000 *1 .*retired *poison"'

# A physical range registered by address; a pfn of node 1 outside it
# belongs to no device: nothing changes.
check "node 1 unregistered" 'hbmnl range-unregister 1'
check "range by address" '[ "$(hbmnl range-phys hbm1 $phys 0x4000000)" = 1 ]'
gen=$(hbmnl stats | sed -n 's/.* generation=\([0-9]*\) .*/\1/p')
echo $(( phys / 4096 + 0x8000 )) >/sys/kernel/debug/hwpoison/corrupt-pfn
sleep 0.5
check "memory_failure outside devices changes nothing" \
	'[ "$(hbmnl stats | sed -n "s/.* generation=\([0-9]*\) .*/\1/p")" = "$gen" ]'
check "stats count the paths" 'hbmnl stats | grep -q "^path 2 received=1 dropped=0$"'

# Netlink changes, as the daemon will make them.
check "netlink retire" 'hbmnl retire 0 0x5000 0x2000 && hbmctl pages sim0 | grep -q "^0x5000 *2 .*admin"'
check "netlink restore" 'hbmnl restore 0 0x10000 0x1000 0x20000 0x3000 && [ "$(hbmctl pages sim0 | grep -c restored)" = 2 ]'
check "netlink pages dump" 'hbmnl pages 0 | grep -q "^pages: 6 extents 3$"'
check "netlink clear beyond the device" '! hbmnl clear 0 0 0x40000000'
check "netlink clear" 'hbmnl clear 0 0 0x3fff6000 && hbmnl pages 0 | grep -q "^pages: 0 extents 0$"'

# A listener that does not read while 10^5 events are made.
fid=$(hbmctl sim-create flood 2G spares=100000)
check "flood: loss seen, every page dumped" "hbmnl flood 100000 $fid"
check "range unregister" 'hbmnl range-unregister 1 && ! hbmnl devices | grep -q hbm1'

check "unload" 'rmmod hbmguard'
check "unload clean" 'dmesg | tail -n 5 | grep -q "hbmguard: unloaded"'
echo "ras: $([ $fail = 0 ] && echo all passed || echo "$fail failed")"
exit $fail
