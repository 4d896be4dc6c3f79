# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: hbmguardd keeps the tables across kill -9,
# module reloads and restarts, and moves a damaged state file aside.
. /lib.sh
printf '[Daemon]\nStateDirectory=/tmp/state\n' >/tmp/hbmguardd.conf
state=/tmp/state/sim:sim0.state
start_daemon() {
	: >/tmp/daemon.log
	hbmguardd -c /tmp/hbmguardd.conf 2>>/tmp/daemon.log &
	daemon=$!
	wait_for /tmp/daemon.log "hbmguardd: ready"
}
restored() {	# the pages this test retires, back as RESTORED
	hbmctl pages sim0 | grep -q "^0x5000 *1 .*retired *restored" &&
	hbmctl pages sim0 | grep -q "^0x9000 *1 .*retired *restored" &&
	hbmctl pages sim0 | grep -q "^0x20000 *4 .*pending *restored"
}

check "bad config refused" '! hbmguardd -c /nonexistent 2>/dev/null'
printf '[Policy]\nCEThreshold=0\n' >/tmp/bad.conf
check "bad config explained" 'hbmguardd -c /tmp/bad.conf 2>&1 | grep -q "/tmp/bad.conf:2: CEThreshold: 0 is out of range"'
check "without the module it says so" 'hbmguardd -c /tmp/hbmguardd.conf 2>&1 | grep -q "is the module loaded"'

check "load" 'insmod /hbmguard.ko sim_devices=1'
printf '[Daemon]\nStateDirectory=/tmp/state\n[Device "sim:sim0"]\nCEWindow=1h\n' >/tmp/hbmguardd.conf
start_daemon
check "configured policy applied at start" 'hbmctl policy sim0 | grep -q "ce_window=3600 "'
printf '[Daemon]\nStateDirectory=/tmp/state\n' >/tmp/hbmguardd.conf
check "daemon ready" 'grep -q "hbmguardd: ready" /tmp/daemon.log'
hbmctl retire sim0 0x5000
hbmctl inject sim0 ue 0x9000
hbmctl retire sim0 0x20000 16K --pending
eventually "events journaled (stderr without journald)" 'grep -q "^<3>hbmguardd: sim:sim0: 1 uncorrectable error at 0x9000$" /tmp/daemon.log'
eventually "state written on change" '[ -s $state ] && [ $(stat -c %s $state) = $((128 + 3 * 48)) ]'

# kill -9, the module reloaded while the daemon is down, a new daemon.
kill -9 $daemon
wait $daemon 2>/dev/null
check "reload" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
check "the kernel forgot" '! hbmctl pages sim0 | grep -q "^0x"'
start_daemon
eventually "restored by a new daemon" restored

# The module reloaded under a running daemon: it notices and restores.
check "reload under the daemon" 'rmmod hbmguard && insmod /hbmguard.ko sim_devices=1'
eventually "restored after the reload" restored
check "no recovery raised: restored pages make no UE" '! hbmctl pages sim0 | grep -q " ue "'

# SIGHUP: a good file is taken, a bad one refused with the old kept.
printf '[Daemon]\nStateDirectory=/tmp/state\n[Policy]\nCEThreshold=0\n' >/tmp/hbmguardd.conf
kill -HUP $daemon
wait_for /tmp/daemon.log "reload refused"
check "bad reload refused, named" 'grep -q "reload refused, keeping the configuration: /tmp/hbmguardd.conf:4: CEThreshold: 0 is out of range" /tmp/daemon.log'
check "daemon alive after a bad reload" 'kill -0 $daemon'
printf '[Daemon]\nStateDirectory=/tmp/state\n[Policy]\nCEThreshold=9\n' >/tmp/hbmguardd.conf
kill -HUP $daemon
wait_for /tmp/daemon.log "configuration reloaded"
check "good reload taken" 'grep -q "configuration reloaded from /tmp/hbmguardd.conf" /tmp/daemon.log'
check "reloaded policy in the kernel" 'hbmctl policy sim0 | grep -q "ce_threshold=9 "'
printf '[Daemon]\nStateDirectory=/tmp/state\n' >/tmp/hbmguardd.conf

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
check "unload" 'rmmod hbmguard'
finish daemon
