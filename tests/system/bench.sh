#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench, in the tier 3 guest (tests/system/run.sh KVER bench):
# hbmguardd beside Debian's rasdaemon (`rasdaemon -f -r`) for the same
# memory errors on the CPU-less NUMA node: injection -> entry in the journal,
# from journald's own receive timestamps.  The errors are corrected machine
# checks from mce-inject (a legacy AMD northbridge DRAM ECC record, as in
# tests/kernel/ras.sh): bookworm's rasdaemon records mce_record but is built
# without memory_failure support, so hwpoison_inject would leave it nothing
# to record.  Then what each costs at rest: memory, wake-ups per second.
exec >/dev/ttyS0 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
N=${N:-50}
echo "# bench: $N corrected memory errors through mce-inject"
id=$(hbmnl range-node hbm0 1)
phys=$(hbmnl devices | sed -n "s/^device $id .* phys=\(0x[0-9a-f]*\)$/\1/p")
modprobe mce-inject
systemctl start rasdaemon
sleep 3		# rasdaemon opens its tracefs instance
d=/sys/kernel/debug/mce-inject
: >/tmp/injected
for i in $(seq 1 $N); do
	addr=$((phys + 0x200000 + i * 4096))
	echo "$addr $(date +%s%6N)" >>/tmp/injected
	echo sw >$d/flags
	printf '0x%x\n' $(( (1 << 63) | (1 << 60) | (1 << 58) | (8 << 16) )) >$d/status
	printf '0x%x\n' $addr >$d/addr
	echo $i >$d/misc
	echo 4 >$d/bank
	sleep 0.2
done
sleep 5
journalctl -b -o json -u hbmguardd -u rasdaemon >/tmp/journal.json
journalctl -b -u rasdaemon -o cat | grep -v 'event disabled' | tail -n 12 | sed 's/^/# rasdaemon: /'
python3 - "$phys" <<'PY'
import json, re, sys
base = int(sys.argv[1], 0)
injected = {}
for line in open("/tmp/injected"):
    addr, t = line.split()
    injected[int(addr)] = int(t)
seen = {"hbmguardd": {}, "rasdaemon": {}}
for line in open("/tmp/journal.json"):
    e = json.loads(line)
    t = int(e["__REALTIME_TIMESTAMP"])
    unit = e.get("_SYSTEMD_UNIT", "")
    msg = e.get("MESSAGE", "")
    if not isinstance(msg, str):
        continue
    if unit == "hbmguardd.service" and e.get("HBMGUARD_IDENTITY") == "hbm:hbm0" \
            and e.get("MESSAGE_ID") == "e0b864666f4249d4802621cef30eff56":
        seen["hbmguardd"].setdefault(base + int(e["HBMGUARD_OFFSET"], 0), t)
    elif unit == "rasdaemon.service":
        for addr in injected:
            if re.search(r"\b(0x)?0*%x\b" % addr, msg, re.I):
                seen["rasdaemon"].setdefault(addr, t)
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
