# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: hbmguardd keeps the tables across kill -9,
# module reloads and restarts, and moves a damaged state file aside.
. /lib.sh
FAIL_LOG=/tmp/daemon.log
conf='[Daemon]\nStateDirectory=/tmp/state\nControlSocket=/tmp/control.sock\n'
printf "$conf" >/tmp/hbmguardd.conf
state=/tmp/state/sim:sim0.state
ctl() { hbmctl --socket /tmp/control.sock "$@"; }
start_daemon() {
	: >/tmp/daemon.log
	hbmguardd -c /tmp/hbmguardd.conf 2>>/tmp/daemon.log &
	daemon=$!
	wait_for /tmp/daemon.log "hbmguardd: ready"
}
restored() {	# the pages this test retires, back with what they were retired for
	hbmctl pages sim0 | grep -q "^0x5000 *1 .*retired *admin" &&
	hbmctl pages sim0 | grep -q "^0x9000 *1 .*retired *ue" &&
	hbmctl pages sim0 | grep -q "^0x20000 *4 .*pending *admin"
}

check "bad config refused" '! hbmguardd -c /nonexistent 2>/dev/null'
printf '[Policy]\nCEThreshold=0\n' >/tmp/bad.conf
check "bad config explained" 'hbmguardd -c /tmp/bad.conf 2>&1 | grep -q "/tmp/bad.conf:2: CEThreshold: 0 is out of range"'
check "without the module it says so" 'hbmguardd -c /tmp/hbmguardd.conf 2>&1 | grep -q "is the module loaded"'

check "load" 'insmod /hbmguard.ko sim_devices=1'
printf "$conf"'[Device "sim:sim0"]\nCEWindow=1h\n' >/tmp/hbmguardd.conf
start_daemon
check "configured policy applied at start" 'hbmctl policy sim0 | grep -q "ce_window=3600 "'
printf "$conf" >/tmp/hbmguardd.conf
check "daemon ready" 'grep -q "hbmguardd: ready" /tmp/daemon.log'
check "a socket under /tmp (1777) is warned of" 'grep -q "^<4>hbmguardd: control socket /tmp/control.sock: /tmp may be changed by a user other than root" /tmp/daemon.log'
# Through the control socket, a retire is on disk when hbmctl returns.
check "retire through the daemon" 'ctl retire sim0 0x5000 2>/tmp/err && [ ! -s /tmp/err ]'
check "saved before the answer" '[ $(stat -c %s $state) = $((128 + 1 * 48)) ]'
check "status from the daemon" 'ctl status | grep -q "^hbmguardd: running, pid $daemon .* 1 bad pages kept in 1 extents in /tmp/state"'
check "status as JSON" 'ctl --json status | grep -q "\"daemon\":{\"pid\":$daemon,.*\"stored_pages\":1,"'
hbmctl inject sim0 ue 0x9000
check "pending through the daemon" 'ctl retire sim0 0x20000 16K --pending'
eventually "events journaled (stderr without journald)" 'grep -q "^<3>hbmguardd: sim:sim0: 1 uncorrectable error at 0x9000$" /tmp/daemon.log'
eventually "state written on change" '[ -s $state ] && [ $(stat -c %s $state) = $((128 + 3 * 48)) ]'
check "a clear through the daemon leaves the file" 'ctl retire sim0 0x40000 && ctl clear sim0 0x40000 4K && [ $(stat -c %s $state) = $((128 + 3 * 48)) ]'
check "a refusal from the kernel, through the daemon" '! ctl retire sim0 0x40001 2>/tmp/err && grep -q "retire (hbmguardd): Invalid argument" /tmp/err'
check "an unknown device, through the daemon" '! ctl retire sim9 0x4000 2>/dev/null'
check "without the daemon: a warning" 'hbmctl --socket /tmp/none retire sim0 0x50000 2>&1 | grep -q "hbmguardd is not running: done in the kernel"'
check "... and the daemon takes it" 'ctl clear sim0 0x50000 4K && ! hbmctl pages sim0 | grep -q "^0x50000 "'

# Only CAP_SYS_ADMIN changes the table through the daemon, as in the
# kernel: uid 0 without it (a container's root) is refused, nothing changed.
check "uid 0 without CAP_SYS_ADMIN cannot clear through the daemon" '! hbmrank --nocap hbmctl --socket /tmp/control.sock clear sim0 0x5000 4K 2>/tmp/err &&
	grep -q "clear (hbmguardd): Operation not permitted" /tmp/err && hbmctl pages sim0 | grep -q "^0x5000 "'
check "... nor retire" '! hbmrank --nocap hbmctl --socket /tmp/control.sock retire sim0 0x60000 2>/dev/null &&
	! hbmctl pages sim0 | grep -q "^0x60000 "'
# Each refusal is logged, and a peer can send as many as it likes: the lines
# a uid's peers cause are at most 20 per 10 s, those of the uids past the
# first 32 at once 100 together (client_may_log()), the rest counted, so
# that journald's limit is not spent on them, the memory's lines with
# them, and one uid's do not hide another's.
refusals() { grep -c "^<4>hbmguardd: retire of sim0 refused: uid $1 (pid .*) did not show CAP_SYS_ADMIN$" /tmp/daemon.log; }
r0=$(refusals 0)
sleep 10	# uid 0's interval began with the refusals above: one of its own
check "a peer's 300 refused retires on one connection" '[ "$(hbmrank --refused /tmp/control.sock sim0 300)" = "refused 300" ]'
check "... logged 20 at most" '[ $(($(refusals 0) - r0)) -le 20 ] && [ $(($(refusals 0) - r0)) -ge 10 ]'
grep -q "^operator:" /etc/passwd || echo "operator:x:1000:1000::/:/bin/sh" >>/etc/passwd
check "... another uid's refusal still logged" \
	'su operator -c "hbmrank --refused /tmp/control.sock sim0 1" >/dev/null && [ $(refusals 1000) = 1 ]'
sleep 10
hbmrank --refused /tmp/control.sock sim0 1 >/dev/null
check "... the rest counted once the next one is" \
	'grep -q "^<4>hbmguardd: control: [0-9][0-9][0-9] lines about uid 0.s connections suppressed$" /tmp/daemon.log &&
	[ $(($(refusals 0) - r0)) -le 21 ]'

# The daemon at its connection limit: hbmctl goes to the kernel itself.
hbmrank --busy /tmp/busy.sock >/tmp/busy &
wait_for /tmp/busy listening
check "a daemon turning hbmctl away for capacity: done in the kernel" 'hbmctl --socket /tmp/busy.sock retire sim0 0x70000 2>/tmp/err &&
	grep -q "hbmguardd is busy (too many connections): done in the kernel" /tmp/err &&
	hbmctl pages sim0 | grep -q "^0x70000 "'
ctl clear sim0 0x70000 4K

# A user holding a hundred connections locks nobody out: root's requests
# and other users get through, and the idle ones are closed.
grep -q "^operator:" /etc/passwd || echo "operator:x:1000:1000::/:/bin/sh" >>/etc/passwd
grep -q "^other:" /etc/passwd || echo "other:x:1001:1001::/:/bin/sh" >>/etc/passwd
su operator -c "hbmrank --flood /tmp/control.sock 100" >/tmp/flood &
wait_for /tmp/flood "held"
check "a user's flood: all its connections were made" 'grep -q "^held 100$" /tmp/flood'
check "... root's retire goes through the daemon" 'ctl retire sim0 0x60000 2>/tmp/err && [ ! -s /tmp/err ]'
check "... another user is answered" 'su other -c "hbmctl --socket /tmp/control.sock ranks >/dev/null"'
i=0
while ! grep -q "^closed$" /tmp/flood && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
check "... and its idle connections are closed" 'grep -q "^closed$" /tmp/flood'
ctl clear sim0 0x60000 4K

# A user given subordinate uids (/etc/subuid: a rootless container runs as
# them) counts once with all of them: two of them hold 32 connections
# between them, not 32 each, eight of which would fill the daemon.  And a
# connection that asks on, never idle, is closed all the same.
echo "operator:100000:65536" >/etc/subuid
for u in 1 2; do
	grep -q "^sub$u:" /etc/passwd || echo "sub$u:x:10000$u:10000$u::/:/bin/sh" >>/etc/passwd
done
su sub1 -c "hbmrank --ask /tmp/control.sock 20 30" >/tmp/ask1 &
ask1=$!
wait_for /tmp/ask1 served
su sub2 -c "hbmrank --ask /tmp/control.sock 20 30" >/tmp/ask2 &
ask2=$!
wait_for /tmp/ask2 served
check "two uids of one subordinate range: 32 connections between them" 'grep -q "^served 20 refused 0$" /tmp/ask1 &&
	grep -q "^served 12 refused 8$" /tmp/ask2'
check "... another user is answered meanwhile" 'su other -c "hbmctl --socket /tmp/control.sock ranks >/dev/null"'
wait $ask1 $ask2
check "... and their connections, asking every second, are closed" 'grep -q "^closed$" /tmp/ask1 &&
	grep -q "^closed$" /tmp/ask2'
rm /etc/subuid

# Out of descriptors: a connection the daemon cannot take waits in the
# backlog, and the listener, readable all the while, rests 100 ms between
# tries (helper-188: it woke the loop at once, for ever), said once; once
# descriptors are free again, requests are answered.
kill $daemon
wait $daemon 2>/dev/null
: >/tmp/daemon.log
(ulimit -n 64 && exec hbmguardd -c /tmp/hbmguardd.conf 2>>/tmp/daemon.log) &
daemon=$!
wait_for /tmp/daemon.log "hbmguardd: ready"
hbmrank --flood /tmp/control.sock 60 >/tmp/flood &
flood=$!
wait_for /tmp/daemon.log "a connection not taken"
cpu() { awk '{ print $14 + $15 }' /proc/$daemon/stat; }	# utime, stime: ticks
t0=$(cpu)
sleep 2
t1=$(cpu)
check "out of descriptors: said once" '[ $(grep -c "a connection not taken: Too many open files" /tmp/daemon.log) = 1 ]'
check "... no spin: $((t1 - t0)) ticks of CPU in 2 s" '[ $((t1 - t0)) -lt 100 ]'
kill $flood
check "... once free, a request is answered" 'ctl ranks >/dev/null'
kill $daemon
wait $daemon 2>/dev/null
start_daemon

# kill -9, the module reloaded while the daemon is down, a new daemon.
kill -9 $daemon
wait $daemon 2>/dev/null
check "reload" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
check "the kernel forgot" '! hbmctl pages sim0 | grep -q "^0x"'
start_daemon
eventually "restored by a new daemon" restored

# The module reloaded under a running daemon: it notices and restores.
# The restore's event is heard on a turn of the daemon's loop after the one
# that restored and read the table: its line says the read was taken in.
restores() { grep -c "sim:sim0: .* known bad from before restored" /tmp/daemon.log; }
n=$(restores)
check "reload under the daemon" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
eventually "restored after the reload" restored
eventually "... and its table read by the daemon" '[ "$(restores)" -gt $n ]'
check "no recovery raised: a restored UE is no loss of data now" \
	'! grep -q "data lost at" /tmp/daemon.log'
# The daemon joins the new family's group as soon as the controller says it
# is new, and restores at once, while the module may still be registering
# it: the RESTORED event of that restore was once lost unsaid (about one
# reload in fifteen beside another guest).  Twenty more, each heard.
r=0
while [ $r -lt 20 ]; do
	n=$(restores)
	t=0	# a dump of the daemon's holds the module a moment
	until rmmod hbmguard 2>/dev/null || [ $t = 10 ]; do
		sleep 0.2
		t=$((t + 1))
	done
	insmod /hbmguard.ko sim_devices=1 || break
	j=0
	while [ "$(restores)" -le $n ] && [ $j -lt 100 ]; do
		sleep 0.1
		j=$((j + 1))
	done
	[ "$(restores)" -gt $n ] || break
	r=$((r + 1))
done
check "twenty reloads under the daemon: each restore heard and journaled" '[ $r = 20 ]'
eventually "... the pages restored after the last" restored

# The daemon's socket buffer under 2000 and 16000 events: the kernel's part
# (a listener overflowing) is ras.sh's flood, so the debug kernel, where each
# retirement takes ~10 ms, skips these two (not indented: a small diff).
if [ "${HBM_DEBUG_KERNEL:-}" != 1 ]; then
# A burst of events while the daemon cannot read: its 4 MiB buffer is real
# (SO_RCVBUFFORCE past net.core.rmem_max), so nothing is lost.
bid=$(hbmctl sim-create burst 1G spares=4096)
wait_for /tmp/daemon.log "sim:burst: device added"
resyncs() { ctl status | sed -n 's/.* \([0-9]*\) resyncs$/\1/p'; }
r0=$(resyncs)
kill -STOP $daemon
hbmnl flood 2000 $bid >/dev/null
kill -CONT $daemon
# At least a record per page (a change heard during a snapshot's dump can be
# in it and in the log after it, until a compaction): the restore below says
# which pages the file holds.
eventually "a burst of 2000 events saved" '[ "$(stat -c %s /tmp/state/sim:burst.state 2>/dev/null || echo 0)" -ge $((128 + 2000 * 48)) ]' 60
check "... with no loss" '[ "$(resyncs)" = "$r0" ] && ! grep -q "overflowed" /tmp/daemon.log'
hbmctl sim-destroy $bid
back_whole() {	# DEV IDENTITY N: N extents in the kernel, all N said restored
	[ "$(hbmnl pages $1 | sed -n "s/^pages: \([0-9]*\) .*/\1/p")" = $3 ] &&
	grep -q "restored $3 extents into $2" /tmp/daemon.log
}
# The device back: its 2000 extents restored, more than one page-sized
# netlink message holds (a request filled past it once lost the rest) and
# more than one request.
bid=$(hbmctl sim-create burst 1G spares=4096)
eventually "... and all 2000 back with the device" \
	'back_whole $bid sim:burst 2000' 60
hbmctl sim-destroy $bid
# More than one 32 KiB request holds (some 1150 extents): the requests
# after the first, each filled until a put fails.
kept() { n=$(ctl status | sed -n 's/.* bad pages kept in \([0-9]*\) extents.*/\1/p'); echo ${n:-0}; }
k0=$(kept)
mid=$(hbmctl sim-create many 1G spares=6000)
hbmnl flood 5000 $mid >/dev/null
# At least: a record logged while a snapshot's dump held it counts again in
# the status until the next snapshot (the restore below says which pages).
eventually "5000 retirements saved" '[ "$(kept)" -ge $((k0 + 5000)) ]' 60
hbmctl sim-destroy $mid
mid=$(hbmctl sim-create many 1G spares=6000)
eventually "... all 5000 back with the device, in five requests" \
	'back_whole $mid sim:many 5000' 60
hbmctl sim-destroy $mid

# Pages retired and their device removed, all read in one turn of the loop:
# the device can no longer be dumped when the turn's saves come; the pages
# reach its state file all the same, over what it held (a pending extent,
# one page of it now retired), and come back when the device does.
gid=$(hbmctl sim-create gone 64M spares=8)
wait_for /tmp/daemon.log "sim:gone: device added"
check "a pending extent saved" 'ctl retire gone 0x10000 0x4000 --pending'
gsize=$(stat -c %s /tmp/state/sim:gone.state)
kill -STOP $daemon
hbmctl inject gone ue 0x7000
hbmctl inject gone ue 0x11000
hbmctl sim-destroy $gid
kill -CONT $daemon
# The file grows (a snapshot or its log: the restore below says with what).
eventually "retired then removed in one turn: saved" \
	'[ "$(stat -c %s /tmp/state/sim:gone.state 2>/dev/null || echo 0)" -gt $gsize ]'
check "... not said lost" '! grep -q "sim:gone is gone before" /tmp/daemon.log'
gid=$(hbmctl sim-create gone 64M spares=8)
# Each page with the source its table had: 0x11000, pending (an operator's)
# when its UE came, has the UE's, which lost its data in service.
eventually "... restored with the device, the pending pages around kept" \
	'hbmctl pages gone >/tmp/gone && grep -q "^0x7000 *1 .*retired *ue" /tmp/gone &&
	grep -q "^0x10000 *1 .*pending *admin" /tmp/gone &&
	grep -q "^0x11000 *1 .*retired *ue" /tmp/gone &&
	grep -q "^0x12000 *2 .*pending *admin" /tmp/gone'
check "... its file whole" '! grep -q "state of sim:gone damaged" /tmp/daemon.log'
hbmctl sim-destroy $gid

# The module reloaded while the daemon could not read and its socket
# overflowed: the family's re-announcement is lost; the daemon finds the
# new family all the same, and restores.
fid=$(hbmctl sim-create flood 1G spares=20000)
wait_for /tmp/daemon.log "sim:flood: device added"
kill -STOP $daemon
hbmnl flood 16000 $fid >/dev/null
check "reload unheard" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
kill -CONT $daemon
eventually "restored after a reload it did not hear of" restored 60
check "... said so" 'grep -q "hbmguard module was reloaded unheard: restoring" /tmp/daemon.log'
hbmctl retire sim0 0x3000 2>/dev/null
eventually "... and hears again" '[ $(stat -c %s $state) = $((128 + 4 * 48)) ]' 60
check "clear" 'ctl clear sim0 0x3000 4K'
fi

# A stored page past its device's usable size (its spares raised since) is
# refused by the module, and only it: the pages beside it in the same
# packed request come back, the one refused is said.
sid=$(hbmctl sim-create shrunk 64M spares=8)
wait_for /tmp/daemon.log "sim:shrunk: device added"
check "three pages saved, one near the device's end" \
	'ctl retire shrunk 0x1000 && ctl retire shrunk 0x5000 && ctl retire shrunk 0x3ff0000'
hbmctl sim-destroy $sid
sid=$(hbmctl sim-create shrunk 64M spares=64)
eventually "spares raised: the two pages still inside are back" \
	'hbmctl pages shrunk >/tmp/shrunk && grep -q "^0x1000 *1 .*retired *admin" /tmp/shrunk &&
	grep -q "^0x5000 *1 .*retired *admin" /tmp/shrunk'
check "... the one past it refused alone, said" 'grep -q "stored extent 0x3ff0000+0x1000 of sim:shrunk refused by the module: .*: not restored$" /tmp/daemon.log &&
	! grep -q "stored extent 0x[15]000+" /tmp/daemon.log && ! grep -q "^0x3ff0000 " /tmp/shrunk'
hbmctl sim-destroy $sid

# A stored extent the module splits: four pages saved retired, the device
# back with 2 spares (2 retired as stored, 2 failed for want of a spare),
# then with 8: all four back retired.  The part read back as stored is not
# saved again, and must stay in the file beside the part that changed.
sid=$(hbmctl sim-create split 64M spares=8)
wait_for /tmp/daemon.log "sim:split: device added"
check "four pages saved retired" 'ctl retire split 0x10000 0x4000'
hbmctl sim-destroy $sid
sid=$(hbmctl sim-create split 64M spares=2)
eventually "back with 2 spares: 2 retired, 2 failed" \
	'hbmctl pages split >/tmp/split && grep -q "^0x10000 *2 .*retired" /tmp/split &&
	grep -q "^0x12000 *2 .*failed" /tmp/split'
eventually "... the file a snapshot of both parts" \
	'[ "$(stat -c %s /tmp/state/sim:split.state)" = $((128 + 2 * 48)) ]'
hbmctl sim-destroy $sid
sid=$(hbmctl sim-create split 64M spares=8)
eventually "... back with 8 spares: all four retired" \
	'hbmctl pages split | grep -q "^0x10000 *4 .*retired"'
hbmctl sim-destroy $sid

# A page saved PENDING that a UE retires while the daemon is down: at its
# start the restore asks PENDING, the module keeps it retired, and the read
# that follows is news, not what was restored: the file says retired after
# it, and the device comes back with the page retired, not in service, by
# the UE (which lost its data in service), no longer the operator's.
mid=$(hbmctl sim-create moved 64M spares=8)
wait_for /tmp/daemon.log "sim:moved: device added"
check "a pending page saved" 'ctl retire moved 0x20000 0x1000 --pending'
kill $daemon
wait $daemon 2>/dev/null
hbmctl inject moved ue 0x20000
check "... a UE retires it while the daemon is down" 'hbmctl pages moved | grep -q "^0x20000 *1 .*retired"'
start_daemon
hbmctl sim-destroy $mid
mid=$(hbmctl sim-create moved 64M spares=8)
eventually "... saved retired: back retired with its device" \
	'hbmctl pages moved | grep -q "^0x20000 *1 .*retired *ue"'
hbmctl sim-destroy $mid

# A UE page stored FAILED (no spare left), its device back with spares: the
# restore sends it RETIRED and the module bypasses it; its data was lost
# before, so the read after the restore is no news to recovery.
fid=$(hbmctl sim-create failed 64M spares=1)
wait_for /tmp/daemon.log "sim:failed: device added"
hbmctl inject failed ue 0x1000
hbmctl inject failed ue 0x3000
eventually "a UE page with no spare left saved failed" \
	'[ "$(stat -c %s /tmp/state/sim:failed.state 2>/dev/null || echo 0)" -ge $((128 + 2 * 48)) ] &&
	hbmctl pages failed | grep -q "^0x3000 *1 .*failed *ue"'
hbmctl sim-destroy $fid
fid=$(hbmctl sim-create failed 64M spares=8)
eventually "... back retired with spares, its table read by the daemon" \
	'hbmctl pages failed | grep -q "^0x3000 *1 .*retired *ue" &&
	grep -q "sim:failed: .* known bad from before restored" /tmp/daemon.log'
check "... no news: no data said lost" '! grep -q "sim:failed: data lost at" /tmp/daemon.log'
hbmctl sim-destroy $fid

# SIGHUP: a good file is taken, a bad one refused with the old kept.
printf "$conf"'[Policy]\nCEThreshold=0\n' >/tmp/hbmguardd.conf
kill -HUP $daemon
wait_for /tmp/daemon.log "reload refused"
check "bad reload refused, named" 'grep -q "reload refused, keeping the configuration: /tmp/hbmguardd.conf:5: CEThreshold: 0 is out of range" /tmp/daemon.log'
check "daemon alive after a bad reload" 'kill -0 $daemon'
printf "$conf"'[Policy]\nCEThreshold=9\n' >/tmp/hbmguardd.conf
kill -HUP $daemon
wait_for /tmp/daemon.log "configuration reloaded"
check "good reload taken" 'grep -q "configuration reloaded from /tmp/hbmguardd.conf" /tmp/daemon.log'
check "reloaded policy in the kernel" 'hbmctl policy sim0 | grep -q "ce_threshold=9 "'
# A key taken out of the file, or set by hbmctl policy: the module's default
# after a reload, not what the kernel had.
hbmctl policy sim0 ce_window=600 >/dev/null
printf "$conf" >/tmp/hbmguardd.conf
kill -HUP $daemon
eventually "a key removed: the module's default after a reload" 'hbmctl policy sim0 | grep -q "ce_threshold=50 ce_window=86400 retire_limit=10$"'
# A RetireLimit the device has not the pages for costs that key alone.
printf "$conf"'[Policy]\nCEThreshold=7\nCEWindow=1h\nRetireLimit=1000000\n' >/tmp/hbmguardd.conf
kill -HUP $daemon
eventually "RetireLimit too large: the other keys applied" 'hbmctl policy sim0 | grep -q "ce_threshold=7 ce_window=3600 retire_limit=10$"'
check "... the limit refused in the log: device, value, its pages" 'grep -q "^<3>hbmguardd: policy of sim:sim0: RetireLimit=1000000 is above the device.s 262134 pages: its default limit applies$" /tmp/daemon.log'
printf "$conf" >/tmp/hbmguardd.conf
kill -HUP $daemon
eventually "... and back to the defaults" 'hbmctl policy sim0 | grep -q "ce_threshold=50 ce_window=86400 retire_limit=10$"'

# A damaged state file: moved aside, said at error priority, daemon goes on.
kill $daemon
wait $daemon 2>/dev/null
printf 'HBMGSTAT garbage' >$state
check "reload" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
start_daemon
check "damaged file reported" 'grep -q "^<3>hbmguardd: state of sim:sim0 damaged" /tmp/daemon.log'
check "damaged file kept aside" 'ls /tmp/state | grep -q "^sim:sim0.state.corrupt-"'
check "daemon goes on" 'kill -0 $daemon'
kill $daemon
wait $daemon 2>/dev/null

# A state directory that fills up: the save fails, hbmctl status says so
# (and exits 1) until a retry, with no further event, gets it to disk.
mkdir -p /tmp/fstate
mount -t tmpfs -o size=64k tmpfs /tmp/fstate
printf '[Daemon]\nStateDirectory=/tmp/fstate\nControlSocket=/tmp/control.sock\n' >/tmp/hbmguardd.conf
start_daemon
fstate=/tmp/fstate/sim:sim0.state
check "a retire saved" 'ctl retire sim0 0x4000 && [ -s $fstate ]'
# The module's event of that retire comes after the answer and saves the
# file once more, at the end of the loop's turn: let it, before filling the
# disk, or that save's freed page takes the next retire.  The status is
# answered a turn later.
wait_for /tmp/daemon.log "1 page retired in 0x4000+0x1000 (admin)"
ctl status >/dev/null
size=$(stat -c %s $fstate)
dd if=/dev/zero of=/tmp/fstate/fill bs=4k 2>/dev/null
# Through the daemon: an operator's retire is a snapshot, a new file the
# full disk refuses (a change heard is an append to the file's last block,
# which may still have room: below).
check "a retire on a full disk: done in the kernel, the answer says not on disk yet" \
	'ctl retire sim0 0x7000 2>/tmp/err; [ $? = 5 ] &&
	grep -q "^hbmctl: retire: done in the kernel, NOT on disk yet: hbmguardd retries the save until hbmctl status no longer says NOT SAVED$" /tmp/err &&
	grep -q "^hbmctl: the daemon.s saves fail: No space left on device$" /tmp/err &&
	hbmctl pages sim0 | grep -q "^0x7000 *1 .*retired *admin"'
check "... said by the daemon" \
	'grep -q "^<4>hbmguardd: sim:sim0: 0x7000+0x1000 retired for pid [0-9]*, NOT saved yet: retrying$" /tmp/daemon.log'
eventually "a failed save in hbmctl status" 'ctl status | grep -q "^hbmguardd: 1 state files NOT SAVED (No space left on device): retrying$"'
check "... which exits 1 then" 'ctl status >/dev/null; [ $? = 1 ]'
check "... and in its JSON" 'ctl --json status | grep -q "\"unsaved\":1,"'
check "... said at error priority" 'grep -q "^<3>hbmguardd: saving the state of sim:sim0: No space left on device: retrying$" /tmp/daemon.log'
check "... the old file kept" '[ $(stat -c %s $fstate) = $size ]'
rm /tmp/fstate/fill
# Retries back off up to a minute apart.
eventually "saved by a retry, no event needed" '[ $(stat -c %s $fstate) = $((size + 48)) ]' 150
check "hbmctl status clean again" 'ctl status >/dev/null && ! ctl status | grep -q "NOT SAVED"'
check "... said" 'grep -q "^<5>hbmguardd: the state of sim:sim0 is saved$" /tmp/daemon.log'
# A change heard on a full disk: appended to its file's last block, saved.
dd if=/dev/zero of=/tmp/fstate/fill bs=4k 2>/dev/null
hbmctl retire sim0 0x8000 2>/dev/null
eventually "a change heard on a full disk, in the file's last block: saved" '[ $(stat -c %s $fstate) = $((size + 2 * 48)) ]'
check "... nothing unsaved" 'ctl status >/dev/null && ! ctl status | grep -q "NOT SAVED"'
rm /tmp/fstate/fill
kill $daemon
wait $daemon 2>/dev/null

# Files named by links to a disk not mounted yet: none is saved over (a save
# renames a new file over its name), the status says why, each said once;
# once the disk is there the next retry reads each, and saves it whole.
mkdir -p /tmp/lstate
for f in incidents drain sim:sim0.state; do ln -s /tmp/ldisk/$f /tmp/lstate/$f; done
printf '[Daemon]\nStateDirectory=/tmp/lstate\nControlSocket=/tmp/control.sock\n' >/tmp/hbmguardd.conf
start_daemon
eventually "files behind links to nothing: not saved, said why" \
	'ctl status | grep -q "^hbmguardd: 3 state files NOT SAVED (a link to a file that is not there): retrying$"'
check "... nothing written over the links" \
	'[ -L /tmp/lstate/incidents ] && [ -L /tmp/lstate/drain ] && [ -L /tmp/lstate/sim:sim0.state ]'
sleep 4		# two retries of the saves: 1 s, then 2 s later
check "... each said once, not at each retry" '[ $(grep -c "^<3>hbmguardd: reading the incidents: a link to a file that is not there: not saved over" /tmp/daemon.log) = 1 ] &&
	[ $(grep -c "^<3>hbmguardd: reading drain: a link to a file that is not there: not saved over" /tmp/daemon.log) = 1 ] &&
	[ $(grep -c "^<3>hbmguardd: reading the state of sim:sim0: a link to a file that is not there$" /tmp/daemon.log) = 1 ]'
check "... hbmctl drain says so" 'ctl drain | grep -q "the drain file not read (a link to a file that is not there)"'
mkdir /tmp/ldisk
cp $fstate /tmp/ldisk/
printf 'hbmguard-drain 1\nwant drain\nhook pending\ncause\trma\t100\tGPU-x\t0000:01:00.0\tH100\tfrom the disk\n' \
	>/tmp/ldisk/drain
printf 'HBMGINCI\001\000\000\000\000\000\000\000' >/tmp/ldisk/incidents	# incidents.h: none
eventually "the disk there: read and saved by a retry" 'ctl status >/dev/null && ! ctl status | grep -q "NOT SAVED"' 150
check "... each now a file of the state directory, none damaged" \
	'(for f in incidents drain sim:sim0.state; do [ -f /tmp/lstate/$f ] && [ ! -L /tmp/lstate/$f ] || exit 1; done) &&
	[ -s /tmp/lstate/sim:sim0.state ] && ! ls /tmp/lstate | grep -q corrupt'
check "... what the drain file held taken" 'ctl drain >/tmp/drain && ! grep -q warning /tmp/drain &&
	grep -q "drained by hbmguard for 1 cause" /tmp/drain && grep -q "^GPU-x .*from the disk" /tmp/drain &&
	grep -q "from the disk" /tmp/lstate/drain'
kill $daemon
wait $daemon 2>/dev/null
rm -rf /tmp/lstate /tmp/ldisk
umount /tmp/fstate
printf "$conf" >/tmp/hbmguardd.conf

# A claimed [Range] across a module reload: its bad frames stay out of the
# page allocator, so its memory cannot be claimed again; the range comes back
# without its aperture, and with its table (the page the kernel kept poisoned
# is read in at registration as restored, as the daemon's restore has it).
phys=$(node1_phys)
printf "$conf"'[Range "hbmc"]\nAddress=0x%x\nSize=0x400000\nSparePages=2\nClaim=yes\n' \
	$((phys + 0xc000000)) >/tmp/hbmguardd.conf
start_daemon
check "a claimed range registered" 'grep -q "^<6>hbmguardd: range hbmc registered$" /tmp/daemon.log'
check "... a page of it retired through the daemon" 'ctl retire hbmc 0x3000'
kill $daemon
wait $daemon 2>/dev/null
check "reload the module" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
start_daemon
check "the range back, without its aperture" 'grep -q "^<4>hbmguardd: range hbmc: its memory cannot be claimed (Device or resource busy.*): registered without an aperture$" /tmp/daemon.log &&
	grep -q "^<6>hbmguardd: range hbmc registered$" /tmp/daemon.log'
eventually "... with its table" 'hbmctl pages hbmc | grep -q "^0x3000 *1 .*retired *restored"'
# The range changed under the module: not registered anew (its table would
# go with it), said with what applies once the module is reloaded; a range
# over another's memory: an error.
printf "$conf"'[Range "hbmc"]\nAddress=0x%x\nSize=0x400000\nSparePages=4\nClaim=yes\n[Range "hbmd"]\nNumaNode=1\n' \
	$((phys + 0xc000000)) >/tmp/hbmguardd.conf
kill -HUP $daemon
eventually "a changed range: what the module has and what waits for its reload, said" \
	'grep -q "^<4>hbmguardd: range hbmc is registered with SparePages=2, Claim=no: the configuration.s SparePages=4, Claim=yes applies only once the module is reloaded$" /tmp/daemon.log'
check "a range over a registered range: an error" \
	'grep -q "^<3>hbmguardd: range hbmd not registered: its memory overlaps a registered device.s, or its identity is taken$" /tmp/daemon.log'
check "... the table kept" 'hbmctl pages hbmc | grep -q "^0x3000 *1 .*retired *restored"'
kill $daemon
wait $daemon 2>/dev/null
mkdir -p /run/hbmguard && chmod 0755 / /run /run/hbmguard
printf '[Daemon]\nStateDirectory=/tmp/state\nControlSocket=/run/hbmguard/c.sock\n' >/tmp/hbmguardd.conf
start_daemon
check "a socket in root's own directory is not warned of" 'hbmctl --socket /run/hbmguard/c.sock status >/dev/null &&
	! grep -q "may be changed by a user other than root" /tmp/daemon.log'
kill $daemon
wait $daemon 2>/dev/null
printf "$conf" >/tmp/hbmguardd.conf
check "unload" 'rmmod hbmguard'
finish daemon
