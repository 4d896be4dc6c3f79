#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench, in the tier 3 guest (tests/system/run.sh KVER bench):
# hbmguardd beside Debian's rasdaemon (`rasdaemon -f -r`, bookworm-backports'
# 0.8.1, built with memory_failure support) for the same memory failures on
# the CPU-less NUMA node: hwpoison_inject hands a free page of the node to
# memory_failure(), which reports it on ras:memory_failure_event; hbmguard's
# probe and rasdaemon's tracefs instance both take it from there.
# Injection -> the daemon's entry in the journal, p50/p99: hbmguardd sends
# one per error (sd_journal_send), rasdaemon prints the event on its stdout
# once it has stored it in its database; journald stamps both on receipt.
# Then what each costs at rest: memory, and wake-ups per second.
exec >/dev/ttyS0 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
N=${N:-200}
echo "# bench: $N memory failures through hwpoison_inject"
id=$(hbmnl devices | sed -n "s/^device \([0-9]*\) hbm0 .*/\1/p")	# from hbmguardd.conf
phys=$(hbmnl devices | sed -n "s/^device $id .* phys=\(0x[0-9a-f]*\)$/\1/p")
modprobe hwpoison-inject
# Until rasdaemon records: it says "Recording memory_failure_event events"
# before it reads them, and a first start has been seen to record none of a
# pass; so one error is injected until rasdaemon prints one ("pfn=0x...",
# ras_memory_failure_event_handler(), ras-memory-failure-handler.c,
# rasdaemon 0.8.1), for up to 60 s.
rasdaemon_start() {
	local n

	n=$(journalctl -b -u rasdaemon | grep -cE "memory_failure_event.* pfn=0x")
	# Its tracefs instance made first, whole: its unit starts `rasdaemon
	# -f -r` and `rasdaemon --enable` (ExecStartPost) at once
	# (misc/rasdaemon.service.in), each mkdir()s "instances/rasdaemon" and
	# takes EEXIST as made (get_tracing_dir(), ras-events.c, v0.8.1), and
	# the directory exists before its files do: the kernel makes them
	# after it, holding trace_types_lock, which a mkdir() that finds it
	# never takes (trace_array_create_dir(), instance_mkdir(),
	# kernel/trace/trace.c; tracefs_syscall_mkdir(), fs/tracefs/inode.c;
	# 6.12).  The loser of that race said "Can't open trace_clock" and
	# recorded nothing, on two first starts of eight.
	mkdir -p /sys/kernel/tracing/instances/rasdaemon
	systemctl start rasdaemon
	# When it hands its entry to journald: the write() of the event's line
	# to its stdout, journald's stream (trace_seq_do_printf(), printf("\n"),
	# fflush(stdout) once its handler stored the event in its database:
	# parse_ras_data() in ras-events.c, ras_memory_failure_event_handler(),
	# rasdaemon v0.8.1), traced as hbmguardd's sendmsg() below.
	rpid=$(systemctl show -P MainPID rasdaemon)
	echo "$rpid" >>/tmp/rasdaemon.pids
	echo "common_pid == $rpid && fd == 1" >$tr/events/syscalls/sys_enter_write/filter &&
		echo 1 >$tr/events/syscalls/sys_enter_write/enable ||
		echo "bench: rasdaemon's write() not traced: its handed rows are missing"
	for i in $(seq 60); do
		python3 /tmp/inject.py 1 "$phys" /tmp/injected.warmup
		sleep 1
		# its threads, once it reads (a reader a CPU where poll() on the
		# trace buffers fails: read_ras_event(), ras-events.c, 0.8.1)
		[ "$(journalctl -b -u rasdaemon | grep -cE "memory_failure_event.* pfn=0x")" -gt "$n" ] &&
			ls /proc/$rpid/task >>/tmp/rasdaemon.pids && return 0
	done
	echo "# bench: rasdaemon recorded nothing in 60 s; what it said:"
	journalctl -b -u rasdaemon --no-pager | grep -v "memory_failure_event" | head -n 30 |
		sed 's/^/# rasdaemon: /'
}
# When memory_failure() reported each error: ras:memory_failure_event, which
# hbmguard's probe and rasdaemon both take, in a tracefs instance of our own
# on the clock "mono" (CLOCK_MONOTONIC, as Python's time.monotonic_ns();
# Documentation/trace/ftrace.rst, 6.12).  What comes before it is
# memory_failure()'s own work, neither daemon's.
tr=/sys/kernel/tracing/instances/hbmbench
mkdir $tr && echo mono >$tr/trace_clock && echo 65536 >$tr/buffer_size_kb &&
	echo 1 >$tr/events/ras/memory_failure_event/enable ||
	echo "bench: no tracefs instance: the tracepoint's rows are missing"
# And where the path from it to a listener waits: hbmguard's worker taking
# the report (workqueue_execute_start of hbm_intake_drain, kmod/intake.c: an
# unbound workqueue's, a kworker/u*), the listener (hbmnl) woken by the event
# sent, and for each when its wake-up is asked (sched_waking, in the waker),
# done (sched_wakeup: on the vCPU it wakes on, which an idle other vCPU does
# when it takes the waker's IPI: ttwu_queue_wakelist(), kernel/sched/core.c,
# 6.12), and when it is put on a vCPU (sched_switch: every task's, to tell
# when the other vCPU ran one); filtered on their fields
# (include/trace/events/workqueue.h and sched.h, linux-headers-6.1.0-57-common;
# the filters' syntax, "~" a glob: Documentation/trace/events.rst, 6.12).
# hbmguardd likewise, and when it sends its entry (sys_enter_sendmsg: sd_journal_sendv()
# is one sendmsg(), src/libsystemd/sd-journal/journal-send.c, systemd v252),
# what of the hearing -> entry is the daemon's own work, and what waiting.
drain=$(awk '$3 == "hbm_intake_drain" { print "0x" $1 }' /proc/kallsyms)
daemon=$(systemctl show -P MainPID hbmguardd)
echo "$daemon" >/tmp/daemon.pid
{ echo "function == $drain" >$tr/events/workqueue/workqueue_execute_start/filter &&
	echo 1 >$tr/events/workqueue/workqueue_execute_start/enable &&
	for ev in sched_waking sched_wakeup; do
		echo 'comm == "hbmnl" || comm ~ "kworker/u*" || comm == "hbmguardd"' \
			>$tr/events/sched/$ev/filter &&
			echo 1 >$tr/events/sched/$ev/enable || break
	done &&
	echo 1 >$tr/events/sched/sched_switch/enable &&
	echo "common_pid == $daemon" >$tr/events/syscalls/sys_enter_sendmsg/filter &&
	echo 1 >$tr/events/syscalls/sys_enter_sendmsg/enable; } ||
	echo "bench: the worker's, the listener's and the daemon's scheduling not traced: their rows are missing"
# And each vCPU's interrupts, which run inside whatever task is on it and
# count as its time: devices' and soft ones (include/trace/events/irq.h,
# 6.1), and the local APIC's vectors, its timer's and IPIs among them
# (arch/x86/include/asm/trace/irq_vectors.h, 6.1).
# Every exit before any entry: an entry recorded without its exit would
# leave the vCPU in an interrupt for good.
for edge in exit entry; do
	for ev in irq/irq_handler irq/softirq irq_vectors/local_timer irq_vectors/reschedule \
		irq_vectors/call_function irq_vectors/call_function_single; do
		echo 1 >$tr/events/${ev}_$edge/enable ||
			echo "bench: ${ev}_$edge not traced: the interrupt rows miss it"
	done
done
# The trace read out (appended to /tmp/trace), and its ring emptied.
# Events it lost (it overwrites when full): rows thinned.
rm -f /tmp/trace
read_trace() {
	local lost

	cat $tr/trace >>/tmp/trace 2>/dev/null
	lost=$(cat $tr/per_cpu/cpu*/stats 2>/dev/null |
		awk '/^overrun:/ { n += $2; k++ } END { print k ? n : "an unknown number of" }')
	[ "$lost" = 0 ] || echo "# bench: the trace lost $lost events (its ring overran or could not be read): errors may be missing from every traced row, the judged one too"
	echo >$tr/trace
}
# A bare netlink listener hears the same events as the daemons: the floor
# of any netlink consumer (the kernel's path and the socket's delivery).
hbmnl listen-times 1000000 60000 >/tmp/heard &	# until killed: each error makes 2 events or more
listener=$!
sleep 1
# One error every 200 ms, each on a page of the node the allocator holds
# free (KPF_BUDDY in /proc/kpageflags): poisoning a page in use could
# kill whatever uses it, and would measure that instead.
cat >/tmp/inject.py <<'PY'
import os, struct, sys, time
n, phys, name = int(sys.argv[1]), int(sys.argv[2], 0), sys.argv[3]
KPF_BUDDY = 1 << 10
kpageflags = open("/proc/kpageflags", "rb", buffering=0)
def free(pfn):
    return struct.unpack("<Q", os.pread(kpageflags.fileno(), 8, pfn * 8))[0] & KPF_BUDDY
pfn = int(open("/tmp/pfn").read()) if os.path.exists("/tmp/pfn") else phys // 4096 + 0x200
with open("/tmp/clock", "w") as out:      # CLOCK_REALTIME - CLOCK_MONOTONIC, us
    out.write("%d\n" % ((time.time_ns() - time.monotonic_ns()) // 1000))
with open(name, "w") as out:
    for i in range(n):
        while not free(pfn):
            pfn += 1
        t0 = time.time_ns()
        with open("/sys/kernel/debug/hwpoison/corrupt-pfn", "w") as f:
            f.write("%d\n" % pfn)      # memory_failure() runs in this write
        out.write("%d %d\n" % (pfn, t0 // 1000))
        pfn += 1
        time.sleep(0.2)
open("/tmp/pfn", "w").write("%d\n" % pfn)
PY
rm -f /tmp/pfn /tmp/rasdaemon.pids
rasdaemon_start
# Three passes: both daemons on the same events, then each alone (the other
# stopped), and a fourth of no daemon (the floor, below).  Both vCPUs run on
# one host thread (scripts/guest-run): when both daemons, journald and the
# listener wake for one event, they take turns.
python3 /tmp/inject.py "$N" "$phys" /tmp/injected.both
systemctl stop rasdaemon
python3 /tmp/inject.py "$N" "$phys" /tmp/injected.hbmguardd
systemctl stop hbmguardd
# The trace so far read out and its ring emptied: 64 MiB a vCPU holds about
# three passes, and one more would overwrite the first.
read_trace
# Between the two, the floor: no daemon but a bare listener that hands
# journald an entry for each error it hears (hbmnl listen-journal: one
# recvmsg(), one sendto() over journald's native protocol), the least a
# daemon can do on the same path, beside the bench's listener as each
# daemon is; its sendto() traced as hbmguardd's sendmsg() (it runs
# without hbmguardd's seccomp filter, SystemCallFilter=: a few system
# calls the cheaper).
hbmnl listen-journal 1000000 60000 >/tmp/heard.floor 2>&1 &
floor=$!
echo "$floor" >/tmp/floor.pid
{ echo "common_pid == $floor" >$tr/events/syscalls/sys_enter_sendto/filter &&
	echo 1 >$tr/events/syscalls/sys_enter_sendto/enable; } ||
	echo "bench: the floor's sendto() not traced: its rows are missing"
sleep 1
python3 /tmp/inject.py "$N" "$phys" /tmp/injected.floor
kill $floor 2>/dev/null
wait $floor 2>/dev/null
grep -m 3 -v '^event \|^listening' /tmp/heard.floor | sed 's/^/# bench: the floor said: /'
rasdaemon_start
python3 /tmp/inject.py "$N" "$phys" /tmp/injected.rasdaemon
systemctl start hbmguardd
journalctl -b -u rasdaemon --no-pager | grep -v memory_failure_event | tail -n 12 | sed 's/^/# rasdaemon: /'
# journald's own cost: entries sent over its native protocol (datagrams of
# FIELD=value lines to /run/systemd/journal/socket, as sd_journal_send()
# does: systemd v252 docs/JOURNAL_NATIVE_PROTOCOL.md), each carrying the
# time it was sent, at the same pace; journald stamps each on receipt.
python3 - "$N" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for i in range(int(sys.argv[1])):
    sent = time.time_ns() // 1000
    s.sendto(b"MESSAGE=journald latency probe\nSYSLOG_IDENTIFIER=hbmbench\n"
             b"HBMBENCH_SENT_USEC=%d\n" % sent, "/run/systemd/journal/socket")
    time.sleep(0.2)
PY
sleep 5
kill $listener 2>/dev/null
read_trace
echo 0 >$tr/events/enable && rmdir $tr
journalctl -b -o json -u hbmguardd -u rasdaemon >/tmp/journal.json
journalctl -b -o json SYSLOG_IDENTIFIER=hbmbench >/tmp/probe.json
python3 - "$phys" <<'PY' || echo "# bench: the journal latency's analysis failed: its rows are missing (the traceback is in the guest's log)"
import bisect, json, os, re, sys
base = int(sys.argv[1], 0)
injected = {}	# per pass: pfn -> when it was written (us)
for name in ("both", "hbmguardd", "rasdaemon", "floor"):
    injected[name] = {}
    for line in open("/tmp/injected." + name):
        pfn, t = line.split()
        injected[name][int(pfn)] = int(t)
seen = {"hbmguardd": {}, "rasdaemon": {}, "netlink": {}}
for line in open("/tmp/heard"):
    m = re.match(r"event type=1 .* offset=(0x[0-9a-f]+) .* heard_us=(\d+)$", line)
    if m:
        seen["netlink"].setdefault((base + int(m.group(1), 16)) // 4096, int(m.group(2)))
for line in open("/tmp/journal.json"):
    e = json.loads(line)
    t = int(e["__REALTIME_TIMESTAMP"])
    unit = e.get("_SYSTEMD_UNIT", "")
    msg = e.get("MESSAGE", "")
    if not isinstance(msg, str):
        continue
    if unit == "hbmguardd.service" and e.get("HBMGUARD_IDENTITY") == "hbm:hbm0" \
            and e.get("MESSAGE_ID") == "e0b864666f4249d4802621cef30eff56":
        pfn = (base + int(e["HBMGUARD_OFFSET"], 0)) // 4096
        seen["hbmguardd"].setdefault(pfn, t)
    m = re.search(r"memory_failure_event.* pfn=(0x[0-9a-f]+)", msg)
    if unit == "rasdaemon.service" and m:
        seen["rasdaemon"].setdefault(int(m.group(1), 16), t)
# A trace line: "TASK-PID [CPU] FLAGS SECONDS.USEC: EVENT: " and the event's
# TP_printk() (Documentation/trace/ftrace.rst, 6.12): here
# "python3-412 [001] ..... 81.123456: memory_failure_event: pfn 0x1a2b:
# recovery action for free buddy page: Recovered" (include/ras/ras_event.h,
# 6.12; the guest's 6.1 prints the same, as its runs parse), "...:
# workqueue_execute_start: work struct 00000000a1b2c3d4: function
# hbm_intake_drain", "...: sched_wakeup: comm=hbmnl pid=301 prio=120
# target_cpu=001" and "...: sched_switch: prev_comm=swapper/1 prev_pid=0
# prev_prio=120 prev_state=R ==> next_comm=hbmnl next_pid=301 next_prio=120"
# (include/trace/events/workqueue.h and sched.h, 6.1).  Times in CLOCK_REALTIME.
offset = int(open("/tmp/clock").read())
tracepoint = {}
trace = []	# (time, cpu, task's pid, event, its fields)
for line in open("/tmp/trace") if os.path.exists("/tmp/trace") else []:
    # a syscall's entry prints as "sys_sendmsg(fd: 3, msg: 7ffd..., flags:
    # 4000)" (print_syscall_enter(), kernel/trace/trace_syscalls.c, 6.12)
    m = re.match(r"\s*.+?-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+)\.(\d{6}): (\w+)(?:: |\()(.*)$", line)
    if not m:
        continue
    t = int(m.group(3)) * 1000000 + int(m.group(4)) + offset
    event, fields = m.group(5), m.group(6)
    trace.append((t, int(m.group(2)), int(m.group(1)), event, fields))
    m = re.match(r"pfn (0x[0-9a-f]+):", fields) if event == "memory_failure_event" else None
    if m:
        tracepoint.setdefault(int(m.group(1), 16), t)

def field(fields, name):
    return re.search(r"\b%s=(\S+)" % name, fields).group(1)

def arg(fields, name):	# a syscall's argument: "fd: 3", in hex without 0x
    m = re.search(r"\b%s: ([0-9a-f]+)" % name, fields)	# print_syscall_enter(), 6.12
    return int(m.group(1), 16) if m else None

# For each error, from its tracepoint: hbmguard's worker's wake-up asked,
# done, the worker on a vCPU, running the drain; the listener's wake-up asked
# (the event sent), done, the listener on a vCPU.  An error whose worker or
# listener was awake already is left out of their rows, as is one whose
# drain or listener's wake-up came after it was heard (not its event's).
when = {k: {} for k in ("worker waking", "worker woken", "worker on", "worker runs",
                        "listener waking", "listener woken", "listener on",
                        "daemon waking", "daemon woken", "daemon on", "daemon sent")}
daemon_cpu = {}	# hbmguardd's time on a vCPU from its wake-up to its entry sent
daemon_pid = int(open("/tmp/daemon.pid").read() or 0)
ras_pids = {int(p) for p in open("/tmp/rasdaemon.pids").read().split()}	# and threads
ras_handed = {}	# rasdaemon's write() of its entry to its stdout
floor_pid = int(open("/tmp/floor.pid").read() or 0) if os.path.exists("/tmp/floor.pid") else 0
floor_handed = {}	# the floor's sendto() of its entry to journald
sends = {}	# hbmguardd's sendmsg() calls after the tracepoint until its entry
by_ipi = {"worker": {}, "listener": {}, "daemon": {}}	# woken on another vCPU than the waker's
trace.sort(key=lambda e: e[0])
starts = [e[0] for e in trace]

def wake(events, who, since, until, last=False):
    """(waking, woken, on a vCPU) events of task who (a test of one), in
    [since, until], from its first wake-up asked there or its last, or None"""
    asked = [e for e in events if since <= e[0] <= until and e[3] == "sched_waking" and
             who(e, "pid", "comm")]
    waking = asked and asked[-1 if last else 0]
    woken = waking and next((e for e in events if waking[0] <= e[0] <= until and
                             e[3] == "sched_wakeup" and who(e, "pid", "comm")), None)
    on = woken and next((e for e in events if woken[0] <= e[0] <= until and
                         e[3] == "sched_switch" and who(e, "next_pid", "next_comm")), None)
    return (waking, woken, on) if on else None

# Each vCPU's tasks over time, from its sched_switch events: qemu runs both
# vCPUs on one host thread, taking turns (tests/bench/README.md), so while one
# runs a task, a task on the other is not running though its clock goes on.
switches = {}	# vCPU -> [(time, the task put on it: pid, comm)]
for e in trace:
    if e[3] == "sched_switch":
        switches.setdefault(e[1], []).append((e[0], int(field(e[4], "next_pid")),
                                               field(e[4], "next_comm")))
switch_times = {cpu: [s[0] for s in l] for cpu, l in switches.items()}

# Each vCPU's time in interrupts (hard, and soft ones run on their way out
# or by ksoftirqd's loop inside it), nested ones as one: (start, end) lists.
INTERRUPTS = ("irq_handler", "softirq", "local_timer", "reschedule", "call_function",
              "call_function_single")
interrupts = {}
depth = {}
counted = {}
for e in trace:
    kind, _, edge = e[3].rpartition("_")
    if kind not in INTERRUPTS:
        continue
    counted[kind] = counted.get(kind, 0) + (edge == "entry")
    if edge == "entry":
        if depth.get(e[1]) and e[0] - interrupts[e[1]][-1][0] > 50000:
            depth[e[1]] = 0	# 50 ms in one: an exit lost, the interval dropped
            interrupts[e[1]].pop()
        if not depth.get(e[1]):
            interrupts.setdefault(e[1], []).append([e[0], None])
        depth[e[1]] = depth.get(e[1], 0) + 1
    elif edge == "exit" and depth.get(e[1]):
        depth[e[1]] -= 1
        if not depth[e[1]]:
            interrupts[e[1]][-1][1] = e[0]
print("# bench: interrupts traced: %s" % (", ".join("%s %d" % kv for kv in sorted(counted.items()))
                                         or "none"))
interrupts = {cpu: [i for i in l if i[1] is not None] for cpu, l in interrupts.items()}
interrupt_starts = {cpu: [i[0] for i in l] for cpu, l in interrupts.items()}

def in_interrupts(cpu, since, until):
    """vCPU cpu's time in interrupts within [since, until]"""
    l = interrupts.get(cpu, [])
    i = max(0, bisect.bisect_right(interrupt_starts.get(cpu, []), since) - 1)
    total = 0
    for start, end in l[i:]:
        if start >= until:
            break
        total += max(0, min(end, until) - max(start, since))
    return total

def busy(cpu, since, until, by):
    """add to by (comm -> us) the time vCPU cpu ran a task (not idle) in [since, until]"""
    l = switches.get(cpu, [])
    i = bisect.bisect_right(switch_times.get(cpu, []), since) - 1
    if i < 0:	# its task then is not known: counted as idle
        return
    t, task = since, l[i]
    for i in range(i + 1, len(l)):
        if l[i][0] >= until:
            break
        if task[1]:
            by[task[2]] = by.get(task[2], 0) + l[i][0] - t
        t, task = l[i][0], l[i]
    if task[1]:
        by[task[2]] = by.get(task[2], 0) + until - t

def own_time(pids, since, until):
    """the time tasks pids ran in [since, until], over every vCPU, without
    the time another vCPU ran a task not theirs meanwhile (its turn on
    qemu's one thread)"""
    total = 0
    for cpu, l in switches.items():
        i = bisect.bisect_right(switch_times[cpu], since) - 1
        t, task = since, l[i] if i >= 0 else (since, 0, "")
        for j in range(i + 1, len(l) + 1):
            end = min(l[j][0], until) if j < len(l) else until
            if task[1] in pids and end > t:
                others = {}
                for c in switches:
                    if c != cpu:
                        busy(c, t, end, others)
                total += end - t - sum(us for comm, us in others.items()
                                       if comm not in ras_comms)
            if j == len(l) or l[j][0] >= until:
                break
            t, task = l[j][0], l[j]
    return total

def on_vcpu(events, pid, on, until, off=None, irq=None):
    """task pid's time on a vCPU from on (the sched_switch that put it on
    one) until until, and what the other vCPUs ran meanwhile (comm -> us);
    its time off a vCPU meanwhile into off, by the state it left in (R:
    preempted, S or D: it waited)"""
    cpu, others, t, where, left = 0, {}, on[0], on[1], None
    for e in events:
        if not on[0] < e[0] <= until or e[3] != "sched_switch":
            continue
        if int(field(e[4], "prev_pid")) == pid and t is not None:
            cpu += e[0] - t
            for c in switches:
                if c != where:
                    busy(c, t, e[0], others)
            if irq is not None:
                irq[0] += in_interrupts(where, t, e[0])
            t, left = None, (e[0], field(e[4], "prev_state")[0])
        elif int(field(e[4], "next_pid")) == pid and t is None:
            t, where = e[0], e[1]
            if left and off is not None:
                off[left[1]] = off.get(left[1], 0) + e[0] - left[0]
    if t is not None:
        cpu += until - t
        for c in switches:
            if c != where:
                busy(c, t, until, others)
        if irq is not None:
            irq[0] += in_interrupts(where, t, until)
    return cpu, others

shared = {"worker": {}, "daemon": {}}	# per error: what other vCPUs ran meanwhile
worker_on = {}	# per error: the worker's pid, the sched_switch that put it on a vCPU
worker_cpu = {}	# per error: its time on a vCPU until it sent hbmguardd the event
queued = {}	# per error: what hbmguardd's vCPU ran while it waited there, woken
daemon_off = {}	# per error: hbmguardd's time off a vCPU before its entry, by state
irq_time = {}	# per error: [the worker's and hbmguardd's vCPU's time in interrupts meanwhile]

for pfn, t0 in tracepoint.items():
    # its events: within a second (errors come 200 ms apart; the worst of
    # hundreds took 0.1 s), and from 1 ms before: hbmguard's probe, which
    # asks the worker's wake-up, runs before the instance's, which records
    # the tracepoint (probes of one priority run in the order they were
    # registered: func_add(), kernel/tracepoint.c, 6.12)
    after = trace[bisect.bisect_left(starts, t0 - 1000):bisect.bisect_right(starts, t0 + 1000000)]
    # rasdaemon's write() of this error's line: its first on stdout (the
    # trace's filter keeps no other) after the tracepoint
    ras = seen["rasdaemon"].get(pfn, 0)
    handed = next((e[0] for e in after if t0 <= e[0] <= ras and e[2] in ras_pids and
                   e[3] == "sys_write"), None)
    if handed:
        ras_handed[pfn] = handed
    # the floor's: its first sendto() after the tracepoint (it sends one
    # an error, nothing else)
    handed = next((e[0] for e in after if t0 <= e[0] and e[2] == floor_pid and
                   e[3] == "sys_sendto"), None)
    if handed:
        floor_handed[pfn] = handed
    # hbmguardd's sendmsg() calls until its entry, on which descriptor
    entry = seen["hbmguardd"].get(pfn, 0)
    sends[pfn] = [(e[0], arg(e[4], "fd")) for e in after if t0 <= e[0] <= entry and
                  e[3] == "sys_sendmsg" and e[2] == daemon_pid]
    heard = seen["netlink"].get(pfn, 0)
    runs = next((e for e in after if e[3] == "workqueue_execute_start"), None)
    if not runs or runs[0] > heard:	# not its drain
        continue
    tw, worker = runs[0], runs[2]
    when["worker runs"][pfn] = tw
    w = wake(after, lambda e, pid, comm: int(field(e[4], pid)) == worker, t0 - 1000, tw, True)
    if w:
        for k, e in zip(("worker waking", "worker woken", "worker on"), w):
            when[k][pfn] = e[0]
        by_ipi["worker"][pfn] = w[0][1] != w[1][1]
        worker_on[pfn] = (worker, w[2])
    w = wake(after, lambda e, pid, comm: field(e[4], comm) == "hbmnl", tw, heard)
    if w:
        for k, e in zip(("listener waking", "listener woken", "listener on"), w):
            when[k][pfn] = e[0]
        by_ipi["listener"][pfn] = w[0][1] != w[1][1]
# hbmguardd's entry: its first sendmsg() after the tracepoint on the
# journal's socket, the descriptor most errors' first sendmsg() used (the
# watchdog's ping and a resync's requests are sendmsg() calls too); then its
# wake-up by the event (asked once the drain runs), on a vCPU, and its turns
# on a vCPU until it sent
firsts = [c[0][1] for c in sends.values() if c]
journal_fd = max(set(firsts), key=firsts.count) if firsts else None
for pfn, t0 in tracepoint.items():
    sent = next((c for c in sends.get(pfn, []) if c[1] == journal_fd), None)
    if not sent:
        continue
    when["daemon sent"][pfn] = sent[0]
    after = trace[bisect.bisect_left(starts, t0 - 1000):bisect.bisect_right(starts, sent[0])]
    tw = when["worker runs"].get(pfn, t0)
    w = wake(after, lambda e, pid, comm: int(field(e[4], pid)) == daemon_pid, tw, sent[0])
    if w:
        for k, e in zip(("daemon waking", "daemon woken", "daemon on"), w):
            when[k][pfn] = e[0]
        by_ipi["daemon"][pfn] = w[0][1] != w[1][1]
        daemon_cpu[pfn], shared["daemon"][pfn] = on_vcpu(after, daemon_pid, w[2], sent[0],
                                                         daemon_off.setdefault(pfn, {}),
                                                         irq_time.setdefault(pfn, [0]))
        # what hbmguardd's vCPU ran while it waited there, woken
        busy(w[2][1], w[1][0], w[2][0], queued.setdefault(pfn, {}))
        if pfn in worker_on:	# the worker from its vCPU until the event sent
            worker_cpu[pfn], shared["worker"][pfn] = on_vcpu(after, worker_on[pfn][0],
                                                             worker_on[pfn][1], w[0][0],
                                                             irq=irq_time.setdefault(pfn, [0]))
print("# bench: hbmguardd's entries on descriptor %s: the first sendmsg() of %d errors of %d" %
      (journal_fd, firsts.count(journal_fd) if firsts else 0, len(firsts)))
journald = [int(e["__REALTIME_TIMESTAMP"]) - int(e["HBMBENCH_SENT_USEC"])
            for e in map(json.loads, open("/tmp/probe.json"))]

def pct(lat):
    lat = sorted(lat)
    if not lat:
        return None, None
    return lat[len(lat) // 2], lat[min(len(lat) - 1, (len(lat) * 99) // 100)]

def lat(what, since, among):
    return pct([what[p] - since[p] for p in what if p in since and p in among])

both = injected["both"]
print("| %-22s | %8s | %10s | %10s |" % ("daemon", "errors", "p50 (us)", "p99 (us)"))
for name, among in (("hbmguardd", both), ("rasdaemon", both),
                    ("hbmguardd", injected["hbmguardd"]), ("rasdaemon", injected["rasdaemon"])):
    n = len([p for p in seen[name] if p in among])
    p50, p99 = lat(seen[name], among, among)
    print("| %-22s | %8d | %10s | %10s |" % (name + (", both" if among is both else ", alone"), n,
                                             "-" if p50 is None else p50,
                                             "-" if p99 is None else p99))

def row(figure, value, anchor, anchor_value, goal):
    print("@bench\t%s\t%s\tus\t%s\t%s\t%s" % (figure, "-" if value is None else value,
                                            anchor, "-" if anchor_value is None else anchor_value, goal))

journald = pct(journald)
others_ran = {who: {e: sum(by.values()) for e, by in shared[who].items()} for who in shared}
split = (	# the tracepoint -> event heard, part by part
    ("  the tracepoint -> hbmguard's worker runs", when["worker runs"], tracepoint),
    ("    of it: the tracepoint -> its wake-up done (its vCPU woken)", when["worker woken"],
     tracepoint),
    ("    of it: woken -> on a vCPU", when["worker on"], when["worker woken"]),
    ("    of it: on a vCPU -> runs the drain", when["worker runs"], when["worker on"]),
    ("  worker runs -> the listener's wake-up asked (the event sent)", when["listener waking"],
     when["worker runs"]),
    ("  the listener's wake-up asked -> done (its vCPU woken)", when["listener woken"],
     when["listener waking"]),
    ("  the listener woken -> on a vCPU", when["listener on"], when["listener woken"]),
    ("  on a vCPU -> heard (its read returned)", seen["netlink"], when["listener on"]))
daemon_split = (	# the tracepoint -> hbmguardd's entry, part by part
    ("the tracepoint -> hbmguardd's wake-up asked (the event sent to it)", when["daemon waking"],
     tracepoint),
    ("  its wake-up asked -> done (its vCPU woken)", when["daemon woken"], when["daemon waking"]),
    ("  hbmguardd woken -> on a vCPU", when["daemon on"], when["daemon woken"]),
    ("  on a vCPU -> its entry sent (sendmsg() to journald)", when["daemon sent"],
     when["daemon on"]),
    ("    of it, hbmguardd on a vCPU (its own work, at most)", daemon_cpu,
     dict.fromkeys(daemon_cpu, 0)),
    ("      of it, another vCPU running a task meanwhile (their turns on qemu's thread, at most)",
     others_ran["daemon"], dict.fromkeys(others_ran["daemon"], 0)),
    ("  its entry sent -> in the journal (journald's receipt)", seen["hbmguardd"],
     when["daemon sent"]))
for i, p in enumerate(("p50", "p99")):
    for alone, among in ((False, both), (True, injected["hbmguardd"])):
        ras = injected["rasdaemon"] if alone else both
        row("memory_failure() -> hbmguardd journal entry, %s, %s" %
            ("each daemon alone" if alone else "both on the same events", p),
            lat(seen["hbmguardd"], among, among)[i],
            "rasdaemon, %s, %s" % ("alone" if alone else "same events", p),
            lat(seen["rasdaemon"], ras, ras)[i], "<= 0.1x")
        of = "  of it (%s): " % ("alone" if alone else "both")
        row(of + "memory_failure() -> its tracepoint (neither daemon's), " + p,
            lat(tracepoint, among, among)[i], "-", "-", "-")
        row(of + "the tracepoint -> event heard, bare netlink listener, " + p,
            lat(seen["netlink"], tracepoint, among)[i], "-", "-", "-")
        for name, until, since in split:
            row(of + name + ", " + p, lat(until, since, among)[i], "-", "-", "-")
        row(of + "event heard -> hbmguardd entry in the journal, " + p,
            lat(seen["hbmguardd"], seen["netlink"], among)[i],
            "journald's own write latency, " + p, journald[i], "-")
        for name, until, since in daemon_split:
            row(of + name + ", " + p, lat(until, since, among)[i], "-", "-", "-")
# Where the daemon is the cost: from the tracepoint, which both daemons take
# (what memory_failure() does before it is neither's), each alone; journald's
# own write is part of both and shown beside, as the share of hbmguardd's.
# The daemon's cost ends where it hands its entry to journald: hbmguardd's
# sendmsg(), rasdaemon's write() of its line; journald's is what follows.
alone = injected["hbmguardd"], injected["rasdaemon"]

def ipi_wait(e):
    """error e's waits for a wake-up by IPI on its way to hbmguardd's entry"""
    return sum(when[w + " woken"][e] - when[w + " waking"][e] for w in ("worker", "daemon")
               if by_ipi[w].get(e) and e in when[w + " woken"])

# What of the judged row is the guest's: a wake-up asked on one vCPU and
# done by the other, idle, only once qemu's one thread turns to it
# (tests/bench/README.md), microseconds on hardware.  Each error's such waits (hbmguard's
# worker's, hbmguardd's) taken out of its own time; rasdaemon's are left in
# its figure.
without_ipi = pct([when["daemon sent"][e] - t - ipi_wait(e) for e, t in tracepoint.items()
                   if e in when["daemon sent"] and e in alone[0]])
# And what is left of it on a vCPU, the worker's and hbmguardd's, counts the
# other vCPU's tasks' turns on qemu's one thread as theirs: without the time
# another vCPU ran a task meanwhile, what is left is at least their own work.
def other_turns(e):
    return sum(others_ran[who].get(e, 0) for who in others_ran)

without_turns = pct([when["daemon sent"][e] - t - ipi_wait(e) - other_turns(e)
                     for e, t in tracepoint.items() if e in when["daemon sent"] and e in alone[0]])
# What is left beside it is waiting on a vCPU's run queue: the two vCPUs are
# shared by the injecting task, journald (the kernel's lines of each
# failure), the bench's listener, the worker and hbmguardd.  Their own work
# on the way is the worker's and hbmguardd's time on a vCPU, without the
# other vCPU's turns.
own = pct([worker_cpu[e] + daemon_cpu[e] - other_turns(e) for e in daemon_cpu
           if e in worker_cpu and e in alone[0]])
# Beside them, like for like: rasdaemon's own work from the tracepoint
# until its entry handed (its threads on a vCPU, without the other vCPU's
# turns), each alone.
ras_comms = {"rasdaemon"}
irqs = pct([irq_time[e][0] for e in daemon_cpu if e in worker_cpu and e in alone[0]
            and e in irq_time])
own_no_irq = pct([worker_cpu[e] + daemon_cpu[e] - other_turns(e) - irq_time.get(e, [0])[0]
                  for e in daemon_cpu if e in worker_cpu and e in alone[0]])
ras_own = pct([own_time(ras_pids, tracepoint[e], h) for e, h in ras_handed.items()
               if e in tracepoint and e in alone[1]])
for i, p in enumerate(("p50", "p99")):
    ours = lat(when["daemon sent"], tracepoint, alone[0])[i]
    theirs = lat(ras_handed, tracepoint, alone[1])[i]
    row("the tracepoint -> the entry handed to journald (the daemon's cost), each alone, " + p,
        ours, "rasdaemon, the tracepoint -> its entry handed to journald, alone, " + p,
        theirs, "<= 0.1x")
    # the least a daemon can do here, and hbmguardd beside it
    floor = lat(floor_handed, tracepoint, injected["floor"])[i]
    row("  the least a daemon does: a bare listener handing journald an entry, alone, " + p,
        floor, "rasdaemon, the tracepoint -> its entry handed to journald, alone, " + p,
        theirs, "-")
    row("  the judged row beside it, " + p, ours, "the bare listener's entry handed, " + p,
        floor, "-")
    row("  of it, without its waits for a wake-up by IPI (the guest's floor), alone, " + p,
        without_ipi[i], "rasdaemon, the tracepoint -> its entry handed to journald, alone, " + p,
        theirs, "-")
    if not i:
        print("# bench: entries handed: hbmguardd %d of %d errors, rasdaemon %d of %d, "
              "the floor %d of %d" %
              (len([p for p in when["daemon sent"] if p in tracepoint and p in alone[0]]),
               len(alone[0]), len([p for p in ras_handed if p in alone[1]]), len(alone[1]),
               len([p for p in floor_handed if p in injected["floor"]]), len(injected["floor"])))
    row("  of it, without those waits nor another vCPU's turns on qemu's thread (at least "
        "its own), alone, " + p, without_turns[i],
        "rasdaemon, the tracepoint -> its entry handed to journald, alone, " + p, theirs, "-")
    row("  of it, the worker's and hbmguardd's own work (on a vCPU, without another's turns), "
        "alone, " + p, own[i], "rasdaemon's own work, the tracepoint -> its entry handed "
        "(the same), alone, " + p, ras_own[i], "<= 0.1x")
    row("    of it, their vCPU in interrupts meanwhile, alone, " + p, irqs[i], "-", "-", "-")
    row("    without those, alone, " + p, own_no_irq[i], "-", "-", "-")
    row("  then journald: handed -> in the journal, hbmguardd's entry, " + p,
        lat(seen["hbmguardd"], when["daemon sent"], alone[0])[i],
        "rasdaemon's entry, " + p, lat(seen["rasdaemon"], ras_handed, alone[1])[i], "-")
    entry = lat(seen["hbmguardd"], tracepoint, alone[0])[i]
    row("the tracepoint -> hbmguardd journal entry, each daemon alone, " + p, entry,
        "rasdaemon, the tracepoint -> its entry, alone, " + p,
        lat(seen["rasdaemon"], tracepoint, alone[1])[i], "-")
    row("  beside it: journald's own write latency, " + p, journald[i],
        "hbmguardd, the tracepoint -> its entry, alone, " + p, entry, "-")
# Which tasks those turns were, over the slowest 2% of the errors (p99 and
# beyond) and over all, each alone
slowest = sorted((when["daemon sent"][e] - t, e) for e, t in tracepoint.items()
                 if e in when["daemon sent"] and e in alone[0])
def ms(by):
    return ", ".join("%s %.2f" % (c, us / 1000) for c, us in
                     sorted(by.items(), key=lambda x: -x[1])[:4] if us >= 10) or "-"

for total, e in slowest[-4:]:
    t0 = tracepoint[e]
    print("# bench: a slow error, alone: %.2f ms to the entry handed: the worker on a vCPU at "
          "%.2f, the event sent at %.2f, hbmguardd woken at %.2f (by IPI: %s), on a vCPU at %.2f "
          "(its vCPU ran meanwhile: %s); on a vCPU %.2f ms of it (the worker %.2f), the other "
          "vCPU ran meanwhile: %s; hbmguardd off its vCPU then: %s; in interrupts %.2f" %
          (total / 1000, *((when[k].get(e, t0) - t0) / 1000 for k in
                           ("worker on", "daemon waking", "daemon woken")),
           by_ipi["daemon"].get(e), (when["daemon on"].get(e, t0) - t0) / 1000,
           ms(queued.get(e, {})), daemon_cpu.get(e, 0) / 1000, worker_cpu.get(e, 0) / 1000,
           ms({c: sum(shared[w].get(e, {}).get(c, 0) for w in shared)
               for w in shared for c in shared[w].get(e, {})}),
           ms({{"R": "preempted", "S": "asleep", "D": "blocked"}.get(k, k): v
               for k, v in daemon_off.get(e, {}).items()}),
           irq_time.get(e, [0])[0] / 1000))
for name, errors in (("the slowest 2%", [e for _, e in slowest[-max(1, len(slowest) // 50):]]),
                     ("all", [e for _, e in slowest])):
    by = {}
    for e in errors:
        for who in shared:
            for comm, us in shared[who].get(e, {}).items():
                by[comm] = by.get(comm, 0) + us
    print("# bench (alone, %s of %d errors: %d us from the tracepoint to the entry handed): "
          "another vCPU ran meanwhile: %s" %
          (name, len(errors), sum(when["daemon sent"][e] - tracepoint[e] for e in errors),
           ", ".join("%s %d us" % (c, us) for c, us in
                     sorted(by.items(), key=lambda x: -x[1])[:6]) or "nothing"))
for name, among in (("both", both), ("alone", injected["hbmguardd"])):
    print("# bench (%s, %d errors): woken by an IPI to another vCPU: the worker %d of %d, "
          "the listener %d of %d" % (name, len(among),
          *(x for who in ("worker", "listener")
            for x in (sum(v for p, v in by_ipi[who].items() if p in among),
                      len([p for p in by_ipi[who] if p in among])))))
    print("# bench (%s): hbmguardd woken by an IPI to another vCPU %d of %d" %
          (name, sum(v for p, v in by_ipi["daemon"].items() if p in among),
           len([p for p in by_ipi["daemon"] if p in among])))
PY

# At rest: memory, and wake-ups (context switches) over 30 s of nothing.
pid=$(systemctl show -P MainPID hbmguardd)
rpid=$(systemctl show -P MainPID rasdaemon)
switches() {
	awk '/ctxt_switches/ { n += $2 } END { print n }' /proc/$1/status
}
a=$(switches $pid)
b=$(switches $rpid)
sleep 30
a=$(( $(switches $pid) - a ))
b=$(( $(switches $rpid) - b ))
rss() {
	awk '/^VmRSS/ { print $2 }' /proc/$1/status
}
printf '| %-10s | %10s | %14s | %s\n' "daemon" "RSS (KiB)" "wakeups/s idle" "watchdog"
printf '| %-10s | %10s | %14s | %s\n' hbmguardd "$(rss $pid)" \
	"$(awk "BEGIN { printf \"%.2f\", $a / 30 }")" \
	"$(systemctl show -P WatchdogUSec hbmguardd)"
printf '| %-10s | %10s | %14s | %s\n' rasdaemon "$(rss $rpid)" \
	"$(awk "BEGIN { printf \"%.2f\", $b / 30 }")" "-"
printf '@bench\thbmguardd RSS at rest\t%s\tKiB\trasdaemon RSS at rest\t%s\t-\n' \
	"$(rss $pid)" "$(rss $rpid)"
printf '@bench\thbmguardd wake-ups/s at rest\t%s\t/s\trasdaemon wake-ups/s at rest\t%s\t-\n' \
	"$(awk "BEGIN { printf \"%.2f\", $a / 30 }")" "$(awk "BEGIN { printf \"%.2f\", $b / 30 }")"
if [ "$(cat /var/lib/hbmguard-test/bench-parts 2>/dev/null)" = journal ]; then
	echo "@@PHASE bench done@@"	# BENCH_PARTS=journal (tests/system/run.sh)
	systemctl poweroff
	exit 0
fi

# The Guard's own work per step, part by part, beside a step of its model
# (make bench runs the same natively, with a stand-in for hbmguardd): here
# with hbmguardd, and with TCG's cost of every system call and wake-up.
python3 /usr/local/lib/hbmguard-test/guard_step.py --daemon

# The DDP job through a UE under rank 2: fault -> training resumed and steps
# run again, hbmguard beside checkpoint-restart (make demo's runs).
echo "| "
HBMGUARD_BENCH_ROWS=1 /usr/local/lib/hbmguard-test/ddp_compare.sh /var/tmp/ddp
echo "@@PHASE bench done@@"
systemctl poweroff
