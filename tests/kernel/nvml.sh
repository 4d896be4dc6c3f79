# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: NVIDIA GPUs that NVML reports become devices of the
# module, through hbmguardd, with what their driver retired and their health;
# once, however often the daemon starts.  NVML is the fake libnvidia-ml.so.1
# (tests/nvml/fake_nvml.c, built from the real nvml.h), put where the driver
# puts the library, under its soname: hbmguardd loads nothing else
# (daemon/nvml_facts.c).  It reads its scenario from $HBM_FAKE_NVML.
. /lib.sh
FAIL_LOG=/tmp/nv.log
lib=/lib/x86_64-linux-gnu/libnvidia-ml.so.1
uuid0=GPU-a1a1a1a1-0000-4000-8000-000000000001	# the A100 of node.scn
uuid1=GPU-h200h200-0000-4000-8000-000000000002	# the H200
gpu0=nvidia-0000:3b:00.0
state=/tmp/nvstate/$uuid0.state
printf '[Daemon]\nStateDirectory=/tmp/nvstate\nControlSocket=/tmp/nv.sock\n' >/tmp/nv.conf
n=0
start_daemon() {	# SCENARIO: the daemon's log is /tmp/nv.log, afresh
	: >/tmp/nv.log
	HBM_FAKE_NVML=$1 hbmguardd -c /tmp/nv.conf 2>>/tmp/nv.log &
	daemon=$!
	wait_for /tmp/nv.log "hbmguardd: ready"
}
stop_daemon() {
	kill $daemon
	wait $daemon
	cat /tmp/nv.log >>/tmp/nv.logs
}
# The daemon has read what it asked the module for before the mark: one more
# device, and its lines.  (What it asked for on reading the GPUs' own
# DEVICE_ADDED may come after the mark: those checks are "eventually".)
settled() {
	n=$((n + 1))
	hbmctl sim-destroy "$(hbmctl sim-create mark$n 1G)"
	wait_for /tmp/nv.log "sim:mark$n: device removed"
}
scenario() {	# FILE LINES...: node.scn, then the lines
	f=$1
	shift
	cp /nvml/node.scn "$f"
	for l in "$@"; do
		echo "$l" >>"$f"
	done
}
seqnum() { hbmnl stats | sed -n 's/.* seqnum=\([0-9]*\) .*/\1/p'; }
lines() { grep -c "$1" /tmp/nv.log; }

check "load" 'insmod /hbmguard.ko'

# No library: one line, the daemon as before.
rm -f $lib
start_daemon /nonexistent
check "no NVML: one info line" '[ "$(lines "nvml")" = 1 ] && grep -q "^<6>hbmguardd: nvml: no NVIDIA management library" /tmp/nv.log'
check "... and the daemon runs" 'kill -0 $daemon'
stop_daemon

cp /nvml/libnvidia-ml.so.1 $lib

# The library opens the driver's nodes (fake_nvml.c, FAKE_NODES): without
# them nvmlInit_v2 fails as nvml.h says, one line, nothing registered.
start_daemon /nvml/node.scn
check "no /dev/nvidiactl: nvmlInit fails, driver not loaded" '[ "$(lines "nvml")" = 1 ] &&
	grep -q "^<3>hbmguardd: nvml: nvmlInit_v2 failed: Driver Not Loaded: NVML not used" /tmp/nv.log &&
	! hbmnl devices | grep -q "kind=4"'
stop_daemon
# The driver's character devices (tests/kmod/hbm_fake_nvdev.c: major 195,
# "nvidia" and "nvidiactl" as nv.c registers them) and their nodes, made as
# nvidia-modprobe makes them (0666).
check "the driver's character devices" 'insmod /hbm_fake_nvdev.ko gpus=2 &&
	grep -q "^195 nvidia$" /proc/devices && grep -q "^195 nvidiactl$" /proc/devices'
mknod -m 666 /dev/nvidiactl c 195 255
mknod -m 666 /dev/nvidia0 c 195 0
mknod -m 666 /dev/nvidia1 c 195 1
nodes_open() {	# the daemon holds the control node and each GPU's open
	for n in nvidiactl nvidia0 nvidia1; do
		for f in /proc/$daemon/fd/*; do
			[ "$(readlink $f)" = /dev/$n ] && continue 2
		done
		return 1
	done
}

# NVML that cannot start: one line, nothing registered.
scenario /tmp/init.scn "fail nvmlInit_v2 999"
start_daemon /tmp/init.scn
check "nvmlInit failing: one error line" '[ "$(lines "nvml")" = 1 ] && grep -q "^<3>hbmguardd: nvml: nvmlInit_v2 failed: .*: NVML not used" /tmp/nv.log'
check "... no GPU registered" '! hbmnl devices | grep -q "kind=4"'
stop_daemon

# Every call for a GPU's facts failing: a line each, the GPUs registered with
# nothing more (no page, no health said).
scenario /tmp/fail.scn "fail nvmlDeviceGetRetiredPages_v2 999" \
	"fail nvmlDeviceGetRetiredPagesPendingStatus 999" "fail nvmlDeviceGetRemappedRows 999" \
	"fail nvmlDeviceGetTotalEccErrors 999"
start_daemon /tmp/fail.scn
settled
each_said() {
	for c in nvmlDeviceGetRetiredPages_v2 nvmlDeviceGetRetiredPagesPendingStatus \
		nvmlDeviceGetRemappedRows nvmlDeviceGetTotalEccErrors; do
		grep -q "^<3>hbmguardd: nvml: $c on GPU $uuid0 (00000000:3B:00.0) failed: " \
			/tmp/nv.log || return 1
	done
}
check "failing calls: a line naming each" each_said
check "... the GPUs registered, nothing recorded" 'hbmnl devices | grep -q " $gpu0 $uuid0 kind=4 .* retired=0 pending=0 .* driver_health=0 " &&
	! grep -q ": 1 page \|: health " /tmp/nv.log'
stop_daemon
check "a fresh module" 'rmmod hbmguard && insmod /hbmguard.ko'

# node.scn: the A100 retired 2 pages for SBEs and 1 for a DBE, some pending
# a reboot; the H200 retires no pages and has a row remap pending.
start_daemon /nvml/node.scn
settled
check "both GPUs registered" 'grep -q "GPU $uuid0 at 0000:3b:00.0 registered as $gpu0" /tmp/nv.log &&
	grep -q "GPU $uuid1 at 0000:86:00.0 registered as nvidia-0000:86:00.0" /tmp/nv.log'
check "... through the driver's nodes, held open" nodes_open
check "listed as GPUs with UUID and PCI address, sized from NVML" 'hbmnl devices | grep -q "^device [0-9]* $gpu0 $uuid0 kind=4 size=0x1400000000 page=4096 .* spares=0 pci=0000:3b:00.0 " &&
	hbmnl devices | grep -q "^device [0-9]* nvidia-0000:86:00.0 $uuid1 kind=4 size=0x2319b00000 page=4096 .* spares=0 pci=0000:86:00.0 "'
# (0x1a2b000 and 0x1a2c000 are neighbours: one extent of 2 pages in the table)
check "the driver's pages, pending, source driver" 'hbmctl pages $gpu0 | grep -q "^0x1a2b000 *2 .*pending *driver" &&
	hbmctl pages $gpu0 | grep -q "^0x3f00000 *1 .*pending *driver" && [ "$(hbmctl pages $gpu0 | grep -c "^0x")" = 2 ]'
check "both need a reset: a retirement, a row remap pending" 'hbmnl devices | grep " $uuid0 " | grep -q " driver_health=3 " &&
	hbmnl devices | grep " $uuid1 " | grep -q " driver_health=3 " &&
	[ "$(hbmctl devices | grep -c "reset-required")" = 2 ]'
eventually "journaled: each page, each health" '[ "$(lines "^<4>hbmguardd: $uuid0: 1 page pending retirement in 0x[0-9a-f]*+0x1000 (driver)$")" = 3 ] &&
	grep -q "^<4>hbmguardd: $uuid0: health ok -> reset-required" /tmp/nv.log &&
	grep -q "^<4>hbmguardd: $uuid1: health ok -> reset-required" /tmp/nv.log'
eventually "kept in the state file" '[ "$(stat -c %s $state 2>/dev/null)" = $((128 + 2 * 48)) ]'
# hbmctl gpus: node.scn's GPUs as NVML reports them (its "retired", "pending",
# "remap" and "ecc" lines: aggregate counts), beside the module's table.
gctl() { hbmctl --socket /tmp/nv.sock "$@"; }
devid() { hbmnl devices | sed -n "s/^device \([0-9]*\) $1 .*/\1/p"; }
check "hbmctl gpus: the A100, its driver's report beside the table" 'gctl gpus | grep -qxF "$uuid0 0000:3b:00.0 device $(devid $gpu0) $gpu0 sources nvml health reset-required | driver: retired 0 ue 0 ce, pending 3, failed 0, rows remapped 3 ce 1 ue, remap pending no, remap failed no, errors 2 ue 40 ce | table: retired 0, pending 3, failed 0 | last xid none"'
check "... the H200: no page, a row remap pending" 'gctl gpus | grep -qxF "$uuid1 0000:86:00.0 device $(devid nvidia-0000:86:00.0) nvidia-0000:86:00.0 sources nvml health reset-required | driver: retired 0 ue 0 ce, pending 0, failed 0, rows remapped 0 ce 2 ue, remap pending yes, remap failed no, errors 2 ue 7 ce | table: retired 0, pending 0, failed 0 | last xid none"'
check "... one line each" '[ "$(gctl gpus | wc -l)" = 2 ]'
check "... as JSON, one object each" 'gctl --json gpus >/tmp/gpus.json &&
	grep -qF "[{\"identity\":\"$uuid0\",\"pci\":\"0000:3b:00.0\",\"vendor\":\"nvidia\",\"model\":\"NVIDIA A100-SXM4-80GB\",\"size\":85899345920,\"device\":$(devid $gpu0),\"name\":\"$gpu0\",\"sources\":[\"nvml\"],\"health\":\"reset-required\",\"lost\":false,\"partial\":false,\"driver\":{\"retired_ue\":0,\"retired_ce\":0,\"pending\":3,\"failed\":0,\"remapped\":{\"corrected\":3,\"uncorrected\":1,\"pending\":false,\"failure\":false},\"errors\":{\"ue\":2,\"ce\":40}},\"table\":{\"retired\":0,\"pending\":3,\"failed\":0},\"last_xid\":null},{\"identity\":\"$uuid1\"" /tmp/gpus.json &&
	[ "$(tail -c 3 /tmp/gpus.json)" = "}]" ] && [ "$(wc -l </tmp/gpus.json)" = 1 ]'
grep -q "^operator:" /etc/passwd || echo "operator:x:1000:1000::/:/bin/sh" >>/etc/passwd
check "... a user reads them too (read-only)" 'su operator -c "hbmctl --socket /tmp/nv.sock gpus" |
	grep -q "^$uuid0 0000:3b:00.0 device [0-9]* $gpu0 sources nvml health reset-required | driver: retired 0 ue 0 ce, pending 3, "'
check "... an argument it does not take: usage, nothing asked" '! gctl gpus extra 2>/tmp/gerr && grep -q "^hbmctl: gpus takes no argument$" /tmp/gerr'
stop_daemon
check "without the daemon: the GPUs are its to list, said, non-zero" '! gctl gpus >/tmp/gout 2>/tmp/gerr && [ ! -s /tmp/gout ] &&
	grep -q "^hbmctl: hbmguardd at /tmp/nv.sock: not running (systemctl start hbmguardd)$" /tmp/gerr &&
	! gctl --json gpus >/tmp/gout 2>/dev/null && [ ! -s /tmp/gout ]'

# A restart reads the same facts: nothing imported twice.  A record's
# last_seen (and its CRC, and the file's serial) move at every start whatever
# the GPUs: the store's RESTORE touches each stored page (hbm_table_apply()).
# The rest of each record (state.h: offset, length, first_seen; state,
# source, errors) must not.
records() { od -An -v -tx1 -w48 -j128 $state | cut -c1-72,97-108; }
records >/tmp/records.before
seq0=$(seqnum)
start_daemon /nvml/node.scn
settled
check "restart: no event of the module but the mark's" '[ "$(seqnum)" = $((seq0 + 2)) ]'
check "... no journal entry of a page or a health" '! grep -q ": 1 page \|: health \|registered as" /tmp/nv.log'
check "... the state file's records unchanged" 'records | cmp -s - /tmp/records.before && [ -s /tmp/records.before ]'
stop_daemon

# The module reloaded (a reboot, for the module): the GPUs registered anew,
# their stored pages restored first (each with its source: driver), the
# driver's then found there.
check "reload the module" 'rmmod hbmguard && insmod /hbmguard.ko'
start_daemon /nvml/node.scn
settled
check "reload: registered anew" '[ "$(lines "registered as")" = 2 ]'
# One restore, one change, one event.
eventually "... the pages restored from the state file, not imported again" 'grep -q "^<6>hbmguardd: $uuid0: 3 pages known bad from before restored (2 extents)$" /tmp/nv.log &&
	hbmctl pages $gpu0 | grep -q "^0x1a2b000 *2 .*pending *driver" &&
	! grep -q "(driver)" /tmp/nv.log && [ "$(stat -c %s $state)" = $((128 + 2 * 48)) ]'
check "... the health from the driver again" 'hbmnl devices | grep " $uuid0 " | grep -q " driver_health=3 "'
# The module reloaded under the running daemon: the same, without a restart.
check "reload under the daemon" 'rmmod hbmguard && insmod /hbmguard.ko'
eventually "... the GPUs registered again" '[ "$(lines "registered as")" = 4 ] &&
	[ "$(hbmnl devices | grep -c " kind=4 ")" = 2 ]'
eventually "... their pages restored, not imported again" '[ "$(lines "^<6>hbmguardd: $uuid0: 3 pages known bad from before restored (2 extents)$")" = 2 ] &&
	! grep -q "(driver)" /tmp/nv.log && hbmctl pages $gpu0 | grep -q "^0x3f00000 *1 .*pending *driver"'
check "... and their health" 'hbmnl devices | grep " $uuid1 " | grep -q " driver_health=3 "'
stop_daemon

# Rebooted: the driver completed the retirements, the H200's remap too; then
# live events: an Xid 48, a DBE, the H200 falls off the bus, and the A100
# retires a page (its Xid 63: NVML is read again).
scenario /tmp/live.scn "pending 0 0" "remap 1 0 2 0 0" "event 500 0 xid 48" "event 500 0 dbe" "lost 1000 1" \
	"event 1500 0 xid 63 retire dbe 0x5000000 1700000400"
start_daemon /tmp/live.scn
eventually "retirements completed: RETIRED, journaled" '[ "$(lines "^<4>hbmguardd: $uuid0: 1 page retired in 0x[1-3][0-9a-f]*+0x1000 (driver)$")" = 3 ] &&
	[ "$(hbmctl pages $gpu0 | grep -c "retired *driver")" = 3 ]'
eventually "... health back to ok" 'grep -q "^<5>hbmguardd: $uuid0: health reset-required -> ok" /tmp/nv.log &&
	grep -q "^<5>hbmguardd: $uuid1: health reset-required -> ok" /tmp/nv.log'
eventually "Xid 48 journaled, with what it means" 'grep -q "^<3>hbmguardd: $uuid0: Xid 48: double-bit ECC error (nvml)$" /tmp/nv.log'
eventually "the DBE journaled" 'grep -q "^<3>hbmguardd: $uuid0: 1 uncorrectable error$" /tmp/nv.log'
eventually "GPU lost: said" 'grep -q "^<4>hbmguardd: nvml: GPU $uuid1 (00000000:86:00.0) has fallen off the bus: gone" /tmp/nv.log &&
	grep -q "^<3>hbmguardd: GPU $uuid1 (0000:86:00.0) is lost to its driver: health reset-required" /tmp/nv.log'
eventually "... and its health changed" 'grep -q "^<4>hbmguardd: $uuid1: health ok -> reset-required" /tmp/nv.log &&
	hbmnl devices | grep " $uuid1 " | grep -q " driver_health=3 "'
check "... the daemon runs on" 'kill -0 $daemon && hbmctl --socket /tmp/nv.sock status >/dev/null'
eventually "a page retired live (Xid 63): recorded, journaled once" 'hbmctl pages $gpu0 | grep -q "^0x5000000 *1 .*retired *driver" &&
	[ "$(lines "^<4>hbmguardd: $uuid0: 1 page retired in 0x5000000+0x1000 (driver)$")" = 1 ] &&
	grep -q "^<4>hbmguardd: $uuid0: Xid 63: page retirement or row remap event (nvml)$" /tmp/nv.log'
eventually "hbmctl gpus: the A100's pages retired, its Xids and DBE heard" 'gctl gpus | grep -q "^$uuid0 0000:3b:00.0 device [0-9]* $gpu0 sources nvml health ok | driver: retired 2 ue 2 ce, pending 0, failed 0, rows remapped 3 ce 1 ue, remap pending no, remap failed no, errors 3 ue 40 ce | table: retired 4, pending 0, failed 0 | last xid 63 at 20[0-9-]* [0-9:]* UTC$"'
check "... the H200 lost" 'gctl gpus | grep -q "^$uuid1 0000:86:00.0 device [0-9]* nvidia-0000:86:00.0 sources nvml health reset-required lost | driver: retired 0 ue 0 ce, pending 0, failed 0, rows remapped 0 ce 2 ue, remap pending no, "'
stop_daemon

# A wedged GPU (the fake's "hang"): the A100's table reads block 30 s from
# just before its Xid 63 retires a page; the H200's Xid 48 comes meanwhile,
# and its own read (queued behind the A100's) hangs for good.  NVML is read
# again off the daemon's loop (nvml_source.c's reader): the daemon answers,
# the H200's event is journaled, the A100's read is said once to be slow
# (after nvml_facts.c's NVML_READ_SLOW_NS, 20 s), and applied when it comes
# back.  Each "meanwhile" is ordered against the page: with the read on the
# loop, nothing is answered or journaled before the page is in the table.
scenario /tmp/hang.scn "pending 0 0" "remap 1 0 2 0 0" "hang 500 0 30000" \
	"event 1000 0 xid 63 retire dbe 0x6000000 1700000500" "hang 3000 1 600000" \
	"event 5000 1 xid 48"
start_daemon /tmp/hang.scn
slow="^<4>hbmguardd: nvml: GPU $uuid0 (00000000:3B:00.0) has not answered the read of its tables for 20 s"
eventually "a GPU's read hangs: said, a warning naming it" '[ "$(lines "$slow")" = 1 ]' 40
check "... meanwhile the daemon answers, the page not yet read" 'gctl status >/dev/null &&
	! hbmctl pages $gpu0 | grep -q "^0x6000000"'
check "... and the other GPU's event is journaled" 'grep -q "^<3>hbmguardd: $uuid1: Xid 48: double-bit ECC error (nvml)$" /tmp/nv.log &&
	! hbmctl pages $gpu0 | grep -q "^0x6000000"'
eventually "... the read come back: its page recorded" 'hbmctl pages $gpu0 | grep -q "^0x6000000 *1 .*retired *driver"' 60
check "... the slow read said once" '[ "$(lines "$slow")" = 1 ]'
# The H200's read, next in the queue, now hangs for good: a stop does not
# wait for it (nvml_source.c: a bounded join, the thread left to the exit).
kill $daemon
ended() { ! grep -q "^State:.*[RSD]" /proc/$daemon/status 2>/dev/null; }
eventually "stopped while a read hangs: the daemon ends" ended 30
check "... and says which GPU it left" 'grep -q "^<4>hbmguardd: nvml: GPU $uuid1 (00000000:86:00.0) has not answered its read 5 s after the stop: NVML is left to end with the process$" /tmp/nv.log'
ended || kill -9 $daemon
wait $daemon
cat /tmp/nv.log >>/tmp/nv.logs

rm -f $lib /dev/nvidiactl /dev/nvidia0 /dev/nvidia1
check "unload" 'rmmod hbm_fake_nvdev && rmmod hbmguard'
finish nvml.sh
