# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: the module's lifetime under load, what an open
# costs its opener, and long operations.  The kernel log is checked by
# guest-run: any WARN (a delayed work queued into the draining workqueue at
# unload), leak (a device created while unloading) or soft lockup fails.
. /lib.sh

# The debug kernel (KASAN, lockdep, kmemleak) is several times slower: each
# loop there runs fewer rounds, the long retirement is shorter, and still
# takes seconds (2^24 pages).
rounds=30 churn=40 big_size=256G big_len=0x3fffff0000
if [ "${HBM_DEBUG_KERNEL:-}" = 1 ]; then
	rounds=10 churn=12 big_size=64G big_len=0xfffff0000
fi

# The in-module selftests (kmod/selftest.c), in the debug kernel's build
# only: what no process can make happen at will.
if [ "${HBM_DEBUG_KERNEL:-}" = 1 ]; then
	check "in-module selftests" 'insmod /hbmguard.ko selftest=1 &&
		dmesg | grep -q "hbmguard: selftests passed" && rmmod hbmguard'
	# A load that fails late (fail_load: 200 ms after both device nodes,
	# or the main one, registered): the family, registered last, is never
	# announced, and /dev/hbmguard refuses its opens (the first kept until
	# insmod ends): a file let through would run its release in the freed
	# module (hbm_module_live()).
	for step in 1 2; do
		check "a load failing at step $step: no family, its node's opens refused" "
			hbmnl load-race /hbmguard.ko sim_devices=2 fail_load=$step >/tmp/race.out
			sed 's/^/#   /' /tmp/race.out
			grep -q '^insmod: exit [1-9]' /tmp/race.out &&
			grep -q '^family: never announced' /tmp/race.out &&
			grep -q '^opens: ok 0 again [1-9]' /tmp/race.out && [ ! -d /sys/module/hbmguard ]"
	done
	# Our commands do not hold genl_mutex, every family's (parallel_ops):
	# one held in the module (hold_command) while nlctrl and our family
	# answer another socket.
	check "a command held: nlctrl and our family answer meanwhile" '
		insmod /hbmguard.ko sim_devices=1 &&
		{ hbmnl parallel; held=$?; rmmod hbmguard; [ $held = 0 ]; }'
fi

# rmmod while several processes hammer netlink and the ioctls.  Open files
# pin the module, so rmmod is retried until it lands between two of them;
# netlink requests do not: the family must be gone before the devices are.
check "load for the node's address" 'insmod /hbmguard.ko sim_devices=2'
phys=$(hbmnl range-node probe 1 >/dev/null && hbmnl devices |
	sed -n 's/^device 2 .* phys=\(0x[0-9a-f]*\)$/\1/p')
check "node 1 found" '[ -n "$phys" ] && hbmnl range-unregister 2'
check "unload" 'rmmod hbmguard'
i=0; pids=""
for w in 1 2 3; do
	( while :; do
		id=$(hbmnl range-phys r$w $((phys + w * 0x1000000)) 0x1000000 2>/dev/null)
		[ -n "$id" ] && hbmnl range-unregister $id >/dev/null 2>&1
		hbmnl devices >/dev/null 2>&1
		hbmnl retire 0 $((w * 0x10000)) 0x1000 >/dev/null 2>&1
		hbmnl pages 0 >/dev/null 2>&1
	done ) &
	pids="$pids $!"
done
( while :; do
	hbmctl retire sim1 0x20000 >/dev/null 2>&1
	hbmctl clear sim1 0x20000 4K >/dev/null 2>&1
done ) &
pids="$pids $!"
loaded=0; unloaded=0
while [ $i -lt $rounds ]; do
	insmod /hbmguard.ko sim_devices=2 && loaded=$((loaded + 1))
	sleep 0.2
	n=0
	until rmmod hbmguard 2>/dev/null || [ $n -ge 500 ]; do n=$((n + 1)); done
	[ -d /sys/module/hbmguard ] || unloaded=$((unloaded + 1))
	i=$((i + 1))
done
kill $pids 2>/dev/null; wait 2>/dev/null
echo "loaded $loaded, unloaded $unloaded times under load"
check "every load unloaded under load" '[ $loaded = $rounds ] && [ $unloaded = $rounds ]'
check "every unload clean" '[ "$(dmesg | grep -c "hbmguard: unloaded")" -ge $((rounds + 1)) ] &&
	! dmesg | grep -q "hbmguard: leak"'

# Devices created and destroyed while they are dumped, over both interfaces.
check "load" 'insmod /hbmguard.ko sim_devices=2'
( while :; do hbmnl devices >/dev/null; hbmnl pages 2 >/dev/null 2>&1; done ) &
d1=$!
( while :; do hbmctl devices >/dev/null; hbmctl pages 2 >/dev/null 2>&1; done ) &
d2=$!
ok=0
for i in $(seq 1 $churn); do
	id=$(hbmctl sim-create churn 64M spares=64) && hbmctl retire "$id" 0x1000 2>/dev/null &&
		hbmctl sim-destroy "$id" && ok=$((ok + 1))
done
kill $d1 $d2; wait 2>/dev/null
check "create, retire, destroy $churn times while dumped" '[ $ok = $churn ]'
check "the dumps still work" 'hbmnl devices | grep -c "^device" | grep -qx 2'

# Ids reused while devices are removed: an id is given again only after its
# device's DEVICE_REMOVED, so each id's events run from a DEVICE_ADDED to its
# DEVICE_REMOVED (hbmguardd takes a REMOVED for the device its last ADDED
# named).  Two processes churn, each taking the lowest free id the other
# just freed.  A registration while a removal waits, which shows the order,
# is made to happen only by the debug build's selftest (below).
hbmnl listen 1000000 5000 >/tmp/ids.ev &
lpid=$!
wait_for /tmp/ids.ev listening
pids=""
for w in a b; do
	( for i in $(seq 1 $churn); do
		id=$(hbmctl sim-create ids$w 64M spares=64) && hbmctl sim-destroy "$id"
	done ) &
	pids="$pids $!"
done
wait $pids
sleep 1
kill $lpid; wait 2>/dev/null
# type 8: DEVICE_ADDED, 9: DEVICE_REMOVED (uapi/linux/hbmguard.h)
awk '$1 == "event" { split($2, t, "="); split($3, q, "="); split($4, d, "=");
	if (t[2] == 8 || t[2] == 9) print q[2], d[2], t[2] }' /tmp/ids.ev |
	sort -n >/tmp/ids.seq
added=$(grep -c ' 8$' /tmp/ids.seq) removed=$(grep -c ' 9$' /tmp/ids.seq)
echo "$added added, $removed removed"
check "each id's ADDED and REMOVED in turn ($((2 * churn)) devices)" \
	'[ $added = $((2 * churn)) ] && [ $removed = $added ] &&
	 awk "{ if ((\$3 == 8) == (up[\$2] == 1)) bad++; up[\$2] = \$3 == 8 }
	      END { exit bad > 0 }" /tmp/ids.seq'

# A retirement of 2^26 pages, one change: about 10 ms in the 6.1 guest now
# that the table holds extents, seconds when it went page by page.  Were it
# ever that long again without rescheduling, the soft-lockup detector
# (watchdog_thresh=1: after 2 s) would say so.
thresh=$(cat /proc/sys/kernel/watchdog_thresh)
echo 1 >/proc/sys/kernel/watchdog_thresh
big=$(hbmctl sim-create big $big_size spares=16)
check "retire a $big_size range" "hbmctl retire $big 0 $big_len 2>/dev/null"
echo "$thresh" >/proc/sys/kernel/watchdog_thresh
check "no soft lockup" '! dmesg | grep -q "soft lockup"'
check "clear it" "hbmctl clear $big 0 $big_len 2>/dev/null && hbmctl sim-destroy $big"
check "unload" 'rmmod hbmguard'

# Each open's event ring (1024 records of 64 bytes) is charged to the
# opener's memory cgroup.
check "load with 64 KiB rings" 'insmod /hbmguard.ko sim_devices=2 event_ring=1024'
mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null
echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
mkdir -p /sys/fs/cgroup/opener
out=$(sh -c 'echo $$ >/sys/fs/cgroup/opener/cgroup.procs && exec hbmtest open-many 200')
echo "in a cgroup of its own: $out"
kib=$(echo "$out" | sed -n 's/^opened 200, charged \([0-9]*\) KiB$/\1/p')
check "200 rings charged to the opener's cgroup" '[ -n "$kib" ] && [ "$kib" -ge $((200 * 64)) ]'
rmdir /sys/fs/cgroup/opener
check "unload" 'rmmod hbmguard'

finish lifetime
