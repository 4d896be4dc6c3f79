#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench, in the tier 3 guest (tests/system/run.sh KVER bench):
# hbmguardd beside Debian's rasdaemon (`rasdaemon -f -r`, which records the
# same ras:memory_failure_event through tracefs), for the same poisoned
# pages of the CPU-less NUMA node: injection -> entry in the journal, from
# journald's own receive timestamps.  Then what hbmguardd costs at rest:
# its memory and its wake-ups per second while nothing happens.
exec >/dev/ttyS0 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
N=${N:-50}
echo "# bench: $N poisoned pages"
id=$(hbmnl range-node hbm0 1)
phys=$(hbmnl devices | sed -n "s/^device $id .* phys=\(0x[0-9a-f]*\)$/\1/p")
modprobe hwpoison-inject
systemctl start rasdaemon
sleep 3		# rasdaemon opens its tracefs instance
: >/tmp/injected
for i in $(seq 1 $N); do
	pfn=$((phys / 4096 + 0x200 + i))
	echo "$pfn $(date +%s%6N)" >>/tmp/injected
	echo $pfn >/sys/kernel/debug/hwpoison/corrupt-pfn
	sleep 0.2
done
sleep 5
journalctl -b -o json -u hbmguardd -u rasdaemon >/tmp/journal.json
python3 - "$phys" <<'PY'
import json, sys
base = int(sys.argv[1], 0) // 4096
injected = {}
for line in open("/tmp/injected"):
    pfn, t = line.split()
    injected[int(pfn)] = int(t)
seen = {"hbmguardd": {}, "rasdaemon": {}}
for line in open("/tmp/journal.json"):
    e = json.loads(line)
    t = int(e["__REALTIME_TIMESTAMP"])
    unit = e.get("_SYSTEMD_UNIT", "")
    msg = e.get("MESSAGE", "")
    if not isinstance(msg, str):
        continue
    if unit == "hbmguardd.service" and e.get("HBMGUARD_SOURCE") == "poison" \
            and "retired" in msg:
        pfn = base + int(e["HBMGUARD_OFFSET"], 0) // 4096
        seen["hbmguardd"].setdefault(pfn, t)
    elif unit == "rasdaemon.service":
        for pfn in injected:
            if "%#x" % pfn in msg or "pfn=%#x" % pfn in msg or str(pfn) in msg.split():
                seen["rasdaemon"].setdefault(pfn, t)
print("| %-10s | %8s | %10s | %10s |" % ("daemon", "entries", "p50 (us)", "p99 (us)"))
for name, got in seen.items():
    lat = sorted(got[p] - injected[p] for p in got if p in injected)
    if not lat:
        print("| %-10s | %8d | %10s | %10s |" % (name, 0, "-", "-"))
        continue
    p50 = lat[len(lat) // 2]
    p99 = lat[min(len(lat) - 1, (len(lat) * 99) // 100)]
    print("| %-10s | %8d | %10d | %10d |" % (name, len(lat), p50, p99))
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
echo "@@PHASE bench done@@"
systemctl poweroff
