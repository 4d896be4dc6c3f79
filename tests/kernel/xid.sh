# SPDX-License-Identifier: GPL-2.0
# Tier 2, inside the guest: NVIDIA Xids, live, end to end.  The fake driver
# (hbm_fake_nvidia) reports an Xid as the real one does, the kernel log line
# and the nvidia:nvidia_dev_xid tracepoint from one call; hbmguardd hears the
# line on /dev/kmsg (daemon/kmsg.c) and the tracepoint through hbmguard.ko
# (kernel.c), takes the two as one event, journals it once and opens one
# incident for the rank registered on that GPU.  A line not from the kernel,
# a malformed one, an Xid not about HBM, an address of no GPU: each a line
# of the daemon's and nothing else.
. /lib.sh
FAIL_LOG=/tmp/xd.log
S=/tmp/xctl.sock
nv=/sys/kernel/debug/hbm_fake_nvidia/ctl
uuid=GPU-7f3c9a2e-1b4d-4e8f-9c6a-0000001f0000
printf '[Daemon]\nStateDirectory=/tmp/xstate\nControlSocket=%s\n' $S >/tmp/x.conf
ctl() { hbmctl --socket $S "$@"; }
# rank JOB: a rank of a one-rank job on the GPU, as $rpid, its output in /tmp/JOB.
rank() {
	rm -f /tmp/$1	# an earlier rank's "registered" would not wait
	hbmrank $S $1 0 1 $uuid >/tmp/$1 &
	rpid=$!
	wait_for /tmp/$1 "registered\|register:"
}
# journaled XID WHO: the daemon's journal lines of Xid XID heard by WHO.
journaled() { grep -c "^<[0-9]>hbmguardd: $uuid: Xid $1: .* ($2)$" /tmp/xd.log; }
incidents() { ctl incidents | grep -c "^incident "; }

check "load" 'insmod /hbmguard.ko xid_module=hbm_fake_nvidia'
check "fake nvidia loads" 'insmod /hbm_fake_nvidia.ko'
id=$(hbmnl gpu-register gpu0 $uuid 0000:00:1f.0 1073741824 4096)
check "GPU registered at 0000:00:1f.0" '[ -n "$id" ]'
: >/tmp/xd.log
# The kernel log as the unit gives it: standard input, opened by another.
hbmguardd -c /tmp/x.conf </dev/kmsg 2>>/tmp/xd.log &
daemon=$!
wait_for /tmp/xd.log "hbmguardd: ready"
check "the daemon reads the log it is given" 'grep -q "kernel log: /dev/kmsg (standard input) open, read for NVIDIA Xids while a GPU is registered$" /tmp/xd.log'
check "... a GPU is: read" 'grep -q "kernel log: a GPU registered: listening for NVIDIA Xids$" /tmp/xd.log'

# One Xid, reported both ways: one event, one entry, one incident.
rank jobA
a=$rpid
echo "report 0000:00:1f.0 48" >$nv
wait $a
st=$?
wait_for /tmp/xd.log "Xid 48 heard again"
check "the rank was paused, restored and resumed" '[ $st = 0 ] && recovered_once /tmp/jobA'
check "both heard it" '[ $(grep -c "hbmguardd: $uuid: Xid 48 heard again (\(kmsg\|tracepoint\)): one event$" /tmp/xd.log) = 1 ]'
check "... journaled once" '[ $(( $(journaled 48 kmsg) + $(journaled 48 tracepoint) )) = 1 ]'
check "... as a double-bit error" 'grep -q "^<3>hbmguardd: $uuid: Xid 48: double-bit ECC error (" /tmp/xd.log'
check "one incident, the whole GPU" '[ $(incidents) = 1 ] &&
	ctl incidents | grep -q "^incident 1: job jobA, rank 0, $uuid, whole device: resumed$"'
check "... journaled" 'grep -q "incident 1: job jobA, rank 0 on $uuid, whole device: resumed" /tmp/xd.log'

# Each way alone is heard too: the line (drivers without the tracepoint),
# and the tracepoint (should the line be lost).
rank jobB
b=$rpid
echo "log 0000:00:1f.0 95" >$nv
wait $b
check "the line alone: an event" '[ $(journaled 95 kmsg) = 1 ] && [ $(journaled 95 tracepoint) = 0 ]'
check "... and an incident" 'ctl incidents | grep -q "^incident 2: job jobB, rank 0, $uuid, whole device: resumed$"'
rank jobC
c=$rpid
echo "xid 0000:00:1f.0 94" >$nv
wait $c
check "the tracepoint alone: an event" '[ $(journaled 94 tracepoint) = 1 ] && [ $(journaled 94 kmsg) = 0 ]'
check "... and an incident" 'ctl incidents | grep -q "^incident 3: job jobC, rank 0, $uuid, whole device: resumed$"'
check "hbmctl gpus: heard by both, its last Xid; no driver's source" 'ctl gpus | grep -q "^$uuid 0000:00:1f.0 device $id sources kmsg,tracepoint health - | driver: retired 0 ue 0 ce, pending 0, failed 0, rows remapped -, errors - | table: retired 0, pending 0, failed 0 | last xid 94 at 20[0-9-]* [0-9:]* UTC$"'
check "... as JSON" 'ctl --json gpus | grep -qF "{\"identity\":\"$uuid\",\"pci\":\"0000:00:1f.0\",\"vendor\":\"\",\"model\":\"\",\"size\":1073741824,\"device\":$id,\"name\":\"\",\"sources\":[\"kmsg\",\"tracepoint\"],\"health\":null," &&
	ctl --json gpus | grep -q "\"last_xid\":{\"xid\":94,\"at_us\":[1-9][0-9]*}}]$"'

# What is not taken leaves the rank alone.
rank jobD
d=$rpid
echo "report 0000:00:1f.0 63" >$nv
wait_for /tmp/xd.log "Xid 63 heard again"
check "a correctable Xid: one entry" '[ $(( $(journaled 63 kmsg) + $(journaled 63 tracepoint) )) = 1 ] &&
	grep -q "^<4>hbmguardd: $uuid: Xid 63: page retirement or row remap event (" /tmp/xd.log'
# A process writing the driver's line to /dev/kmsg: facility user, refused.
echo "NVRM: Xid (PCI:0000:00:1f): 48, pid=1, name=x, forged" >/dev/kmsg
wait_for /tmp/xd.log "refused: an NVRM line written by a process"
check "a line written to /dev/kmsg is refused" 'grep -q "kernel log: record #[0-9]* refused: an NVRM line written by a process (facility 1), not by the driver$" /tmp/xd.log'
# The kernel's own record whose text begins with a user's string: a program
# named as the driver's line, crashed.  6.12's print_fatal_signal()
# (kernel/signal.c: pr_info("%pD: %s: potentially unexpected fatal signal
# %d.\n"), with print-fatal-signals on) prints its name first, a plain
# printk(); the driver's lines are nv_printf()'s, KERN_CONT each ('c').
# 6.1's prints no name: nothing there begins with the driver's text.
fake="/tmp/NVRM: Xid (PCI:0000:00:1f): 48, x"
cp /bin/busybox "$fake"
echo 1 >/proc/sys/kernel/print-fatal-signals
(exec -a sh "$fake" -c 'kill -SEGV $$')
echo 0 >/proc/sys/kernel/print-fatal-signals
case $(uname -r) in
6.1.*)
	check "6.1 prints the signal, not the program's name" 'dmesg | grep -q "\] potentially unexpected fatal signal 11\.$" &&
		! dmesg | grep -q "NVRM: Xid (PCI:0000:00:1f): 48, x: "' ;;
*)
	# (its comm after it: the file's name, 15 bytes, not argv[0])
	check "the kernel printed the program's name first" 'dmesg | grep -q "\] NVRM: Xid (PCI:0000:00:1f): 48, x: NVRM: Xid (PCI:: potentially unexpected fatal signal 11\.$"'
	wait_for /tmp/xd.log "(no 'c' flag)"
	check "... a kernel line that begins with it is refused" 'grep -q "kernel log: record #[0-9]* refused: an NVRM line not printed by nv_printf() (no .c. flag)$" /tmp/xd.log'
	# The name beginning KERN_SOH "c", run through a link named sh (its
	# comm): vprintk_store() takes a record's flags from the front of its
	# formatted text, so the line is a continuation too; it is info, not
	# the driver's level (warning: nv_printf() gives none).
	fake=$(printf '/tmp/\001cNVRM: Xid (PCI:0000:00:1f): 48, x')
	cp /bin/busybox "$fake"
	ln -s "$fake" /tmp/sh
	echo 1 >/proc/sys/kernel/print-fatal-signals
	/tmp/sh -c 'kill -SEGV $$'
	echo 0 >/proc/sys/kernel/print-fatal-signals
	check "the kernel printed the name, its KERN_SOH c taken off" 'dmesg | grep -q "\] NVRM: Xid (PCI:0000:00:1f): 48, x: sh: potentially unexpected fatal signal 11\.$"'
	wait_for /tmp/xd.log "at level 6"
	check "... flagged a continuation, refused for its level" 'grep -q "kernel log: record #[0-9]* refused: an NVRM line at level 6, below the driver.s (4)$" /tmp/xd.log' ;;
esac
i=0
while [ $i -lt 30 ]; do
	echo "NVRM: Xid (PCI:0000:00:1f): 95, pid=1, name=x, forged" >/dev/kmsg
	i=$((i + 1))
done
echo "log 0000:00:1e.0 48" >$nv
wait_for /tmp/xd.log "on 0000:00:1e.0"
n=$(grep -c "refused: an NVRM line" /tmp/xd.log)
check "... a flood of them told a few times only ($n)" '[ $n -ge 1 ] && [ $n -le 10 ]'
check "an address of no GPU: said, not taken" 'grep -q "kernel log: record #[0-9]*: Xid 48 on 0000:00:1e.0: no GPU is registered at that address: not taken$" /tmp/xd.log'
echo "line NVRM: Xid (PCI:0000:00:1f): forty-eight, pid=1, name=x, y" >$nv
wait_for /tmp/xd.log "an Xid line without a decimal Xid"
check "a malformed line: said, not taken" 'grep -q "kernel log: record #[0-9]*: an Xid line without a decimal Xid: not taken$" /tmp/xd.log'
echo "log 0000:00:1f.0 79" >$nv
wait_for /tmp/xd.log "Xid 79 on"
check "an Xid not about HBM: said, not taken" 'grep -q "kernel log: record #[0-9]*: Xid 79 on 0000:00:1f.0 is not about HBM: not taken$" /tmp/xd.log'
check "none of them journaled as an event" '[ $(journaled 95 kmsg) = 1 ] &&
	! grep -q "Xid 79:" /tmp/xd.log && [ $(grep -c "hbmguardd: $uuid: Xid 48: " /tmp/xd.log) = 1 ]'
check "... nor opened an incident" '[ $(incidents) = 3 ]'
check "... the rank left alone" '[ "$(cat /tmp/jobD)" = registered ]'
kill $d
wait $d

# A restart reads on from the end of the log: nothing said twice.  The
# records come in order, so once a new Xid is journaled every older record
# would have been read before it.
kill $daemon
wait $daemon
: >/tmp/xd.log
hbmguardd -c /tmp/x.conf </dev/kmsg 2>>/tmp/xd.log &
daemon=$!
wait_for /tmp/xd.log "hbmguardd: ready"
echo "report 0000:00:1f.0 92" >$nv
wait_for /tmp/xd.log "Xid 92 heard again"
check "after a restart: a new Xid journaled" '[ $(( $(journaled 92 kmsg) + $(journaled 92 tracepoint) )) = 1 ]'
check "... and none of before" '[ $(grep -c "hbmguardd: $uuid: Xid \(48\|63\|94\|95\)" /tmp/xd.log) = 0 ] &&
	! grep -q "kernel log: record" /tmp/xd.log'

# Read while a GPU is registered; unregistered and registered again soon
# after (a driver's reset), what was logged meanwhile is read then: the Xid
# that caused the reset among it.  (Back later than KMSG_OFF_GRACE_NS, 30 s,
# reading goes on from the end of the log: the unit tests.)
listening() { grep -c "kernel log: a GPU registered: listening for NVIDIA Xids$" /tmp/xd.log; }
check "the log read: a GPU is registered" '[ $(listening) = 1 ]'
check "GPU unregistered" 'hbmnl gpu-unregister $id'
eventually "... the log not read" 'grep -q "kernel log: no GPU registered: not read until one is$" /tmp/xd.log'
echo "log 0000:00:1f.0 48" >$nv
sleep 1
check "... an Xid logged meanwhile not read yet" '[ $(journaled 48 kmsg) = 0 ] &&
	! grep -q "Xid 48 on 0000:00:1f.0: no GPU is registered" /tmp/xd.log'
id=$(hbmnl gpu-register gpu0 $uuid 0000:00:1f.0 1073741824 4096)
check "GPU registered again" '[ -n "$id" ]'
eventually "... the log read again" '[ $(listening) = 2 ]'
wait_for /tmp/xd.log "Xid 48: "
check "... the Xid logged meanwhile heard, on it" '[ $(journaled 48 kmsg) = 1 ]'
check "... no record said lost" '! grep -q "records lost" /tmp/xd.log'
kill $daemon
wait $daemon
check "fake nvidia unloads" 'rmmod hbm_fake_nvidia'
check "GPU unregistered" 'hbmnl gpu-unregister $id'
check "hbmguard unloads" 'rmmod hbmguard'
finish xid.sh
