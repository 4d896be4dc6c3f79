#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tier 3, inside the guest: run by hbmguard-test.service at every boot; the
# phase to run is kept on the root disk.  Prints "ok"/"not ok" lines and
# "@@PHASE N done@@" on the serial console for tests/system/run.sh.
exec >/dev/ttyS0 2>&1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
dir=/var/lib/hbmguard-test
mkdir -p $dir
phase=$(cat $dir/phase 2>/dev/null || echo 1)
state=/var/lib/hbmguard/sim:sim0.state
kver=$(uname -r)

# check NAME CONDITION; a failure shows the end of what CONDITION printed.
# A check that took 5 s or more, with what ran since the one before, says
# so: where the guest's time goes, for make check's budget.
last_check=$SECONDS
check() {
	local took
	if eval "$2" >/tmp/check.out 2>&1; then
		echo "ok $phase $1"
	else
		echo "not ok $phase $1"
		tail -n 15 /tmp/check.out | sed 's/^/#   /'
	fi
	took=$((SECONDS - last_check)) last_check=$SECONDS
	[ $took -lt 5 ] || echo "#   ... ${took} s"
}

# Up to $3 seconds (default 20) for CONDITION to come true.
eventually() {
	local i=0 limit=$((${3:-20} * 5))
	while ! eval "$2" >/dev/null 2>&1 && [ $i -lt $limit ]; do
		sleep 0.2
		i=$((i + 1))
	done
	check "$1" "$2"
}

# The same by the clock, for a CONDITION that may take seconds itself (a
# Slurm client waiting for its server), which eventually's count of tries
# would stretch into minutes.
within() {
	local end=$((SECONDS + ${3:-20}))
	while ! eval "$2" >/dev/null 2>&1 && [ $SECONDS -lt $end ]; do
		sleep 0.2
	done
	check "$1" "$2"
}

# Device node $1's mode, owner and group are $2 ("640 root hbmguard").
mode_is() {
	local got

	got=$(stat -c "%a %U %G" "$1") || return
	echo "$1: $got"
	[ "$got" = "$2" ]
}

active() {
	[ "$(systemctl show -P ActiveState hbmguardd)" = active ] &&
	[ "$(systemctl show -P SubState hbmguardd)" = running ]
}

# The page at offset $1 of device $3 (sim0) is in the kernel's table with
# source $2 (extents of one state and source merge: look for the one that
# covers it).
has_page() {
	hbmctl --json pages "${3:-sim0}" | python3 -c '
import json, sys
off, src = int(sys.argv[1], 0), sys.argv[2]
ext = json.load(sys.stdin)["extents"]
sys.exit(not any(e["offset"] <= off < e["offset"] + e["length"] and
                 e["source"] == src for e in ext))' "$1" "$2"
}

# The journal holds an entry of hbmguardd with these FIELD=value pairs (a
# FIELD alone: present; !FIELD: absent).
journal_has() {
	journalctl -b -o json _SYSTEMD_UNIT=hbmguardd.service | python3 -c '
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
present = [a for a in sys.argv[1:] if "=" not in a and a[0] != "!"]
absent = [a[1:] for a in sys.argv[1:] if a[0] == "!"]
for line in sys.stdin:
    e = json.loads(line)
    if all(e.get(k) == v for k, v in want.items()) and all(k in e for k in present) \
            and not any(k in e for k in absent):
        sys.exit(0)
sys.exit(1)' "$@"
}

# The metrics endpoint (hbmguardd.conf(5), [Metrics]): on at 127.0.0.1:9477.
metrics_url=http://127.0.0.1:9477/metrics

# promtool check metrics on stdin: clean, or complaining (exit 3, lint) only
# of dcgm-exporter's own names, as it complains of dcgm-exporter's output
# (counters without _total, the label modelName); a parse error fails.
promtool_ok() {
	local rc=0
	promtool check metrics >/tmp/promtool.out 2>&1 || rc=$?
	cat /tmp/promtool.out
	[ $rc = 0 ] || { [ $rc = 3 ] && ! grep -v -E '^DCGM_FI_DEV_[A-Z_]+ (counter metrics should have "_total" suffix|label names should be written in .snake_case. not .camelCase.)$' /tmp/promtool.out; }
}

# The value of one sample of a scrape: NAME, then label="value" pairs it has.
sample() {
	curl -fsS $metrics_url | python3 -c '
import re, sys
name, want = sys.argv[1], sys.argv[2:]
found = []
for line in sys.stdin:
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$", line.rstrip("\n"))
    if m and m.group(1) == name and all(w in (m.group(2) or "") for w in want):
        found.append(m.group(3))
if len(found) != 1:
    sys.exit("%d samples of %s %s" % (len(found), name, want))
print(found[0])' "$@"
}

# Each device's retired, pending and failed pages in a scrape are the module's (hbmctl).
metrics_agree_devices() {
	curl -fsS $metrics_url >/tmp/metrics.dev && hbmctl --json devices >/tmp/devices.json &&
	python3 -c '
import json, re
text = open("/tmp/metrics.dev").read()
devs = json.load(open("/tmp/devices.json"))
assert devs
for d in devs:
    for state in ("retired", "pending", "failed"):
        v = re.findall(r"^hbmguard_device_pages\{device=\"%s\",id=\"%d\",identity=\"[^\"]*\",state=\"%s\"\} (\d+)$"
                       % (re.escape(d["name"]), d["id"], state), text, re.M)
        assert v == [str(d[state])], (d, state, v)
'
}

# dcgm-exporter's series for the GPUs with UUIDs $2...: the same counts as
# hbmctl gpus gives, with its labels (gpu, UUID, pci_bus_id, device,
# modelName, Hostname).
metrics_agree_dcgm() {
	hbmctl --json gpus >/tmp/gpus.json && python3 -c '
import json, re, sys
gpus = {g["identity"]: g for g in json.load(open("/tmp/gpus.json"))}
text = open(sys.argv[1]).read()
def dcgm(name, uuid):
    v = re.findall(r"^%s\{gpu=\"\d+\",UUID=\"%s\",pci_bus_id=\"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-9A-F]\","
                   r"device=\"nvidia\d+\",modelName=\"[^\"]*\"(?:,Hostname=\"[^\"]*\")?\} (\S+)$" % (name, re.escape(uuid)),
                   text, re.M)
    assert len(v) == 1, (name, uuid, v)
    return float(v[0])
for u in sys.argv[2:]:
    g = gpus[u]
    drv = g["driver"]
    assert dcgm("DCGM_FI_DEV_RETIRED_DBE", u) == drv["retired_ue"], g
    assert dcgm("DCGM_FI_DEV_RETIRED_SBE", u) == drv["retired_ce"], g
    assert dcgm("DCGM_FI_DEV_RETIRED_PENDING", u) == (drv["pending"] > 0), g
    xid = g.get("last_xid") or {"xid": 0}
    assert dcgm("DCGM_FI_DEV_XID_ERRORS", u) == xid["xid"], g
    if drv["remapped"]:
        assert dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", u) == drv["remapped"]["uncorrected"], g
        assert dcgm("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", u) == drv["remapped"]["corrected"], g
        assert dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", u) == drv["remapped"]["failure"], g
' "$@"
}

# The metadata Prometheus keeps of a metric family: "TYPE UNIT" ("-" none).
# These and prom_query are polled (eventually) while Prometheus works on
# the same TCG core: curl and sed, not a python3 that takes a second to
# start.  The HTTP API's JSON as bookworm's prometheus (2.42.0+ds) writes
# it, read off that package's binary, the one the guest runs: metadata {"status":...,"data":{"NAME":[{"type":T,"help":H,
# "unit":U}]}}; an instant query's vector {"status":...,"data":{
# "resultType":"vector","result":[{"metric":{...},"value":[TIME,"V"]}]}}.
prom_meta() {
	local m t u
	m=$(curl -fsS -G --data-urlencode "metric=$1" http://127.0.0.1:9091/api/v1/metadata) || return
	t=$(printf '%s' "$m" | sed -n 's/^.*"data":{"[^"]*":\[{"type":"\([^"]*\)".*$/\1/p')
	u=$(printf '%s' "$m" | sed -n 's/^.*"unit":"\([^"]*\)"}\]}}$/\1/p')
	[ -n "$t" ] || { echo "no metadata for $1" >&2; return 1; }
	echo "$t ${u:--}"
}

# Prometheus's scrape Accept header: scrapeAcceptHeader, scrape/scrape.go of v2.42.0.
prom_accept='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'

# An instant query to the Prometheus server the test runs: its one value.
prom_query() {
	local r n
	r=$(curl -fsS -G --data-urlencode "query=$1" http://127.0.0.1:9091/api/v1/query) || return
	n=$(printf '%s' "$r" | grep -o '"value":\[' | wc -l)
	[ "$n" = 1 ] || { echo "$n series for $1" >&2; return 1; }
	printf '%s\n' "$r" | sed -n 's/^.*"value":\[[^,]*,"\([^"]*\)"\].*$/\1/p'
}

kernel_clean() {
	! dmesg | grep -E -A5 'WARNING:|BUG[: ]|Oops|general protection|Call Trace|[Ll]eak|refcount_t|UBSAN'
}

done_phase() {
	check "kernel log clean" kernel_clean
	echo "@@PHASE $phase done@@"
}

phase1() {
	echo "# phase 1: first boot of a node with hbmguard installed"
	check "loaded by systemd-modules-load" 'lsmod | grep -q "^hbmguard " &&
		journalctl -b -o cat | grep -q "Inserted module .hbmguard."'
	check "options from modprobe.d" '[ "$(cat /sys/module/hbmguard/parameters/sim_devices)" = 4 ]'
	# udev may still be applying the coldplug's events when the test runs
	# (multi-user.target does not wait for them): what it found is shown
	eventually "/dev/hbmguard: root:hbmguard 0640 (udev, sysusers)" \
		'mode_is /dev/hbmguard "640 root hbmguard"'
	eventually "/dev/hbmguard-aperture: root:hbmguard-aperture 0660 (udev, sysusers)" \
		'mode_is /dev/hbmguard-aperture "660 root hbmguard-aperture"'
	check "hbmguardd active after READY=1" active
	check "STATUS= says what it keeps" \
		'systemctl show -P StatusText hbmguardd | grep -q "^5 devices, 0 bad pages"'
	check "unit verifies" 'systemd-analyze verify hbmguardd.service'
	check "exposure at most 2.0" '[ "$(systemd-analyze security hbmguardd.service --no-pager |
		sed -n "s/.*Overall exposure level for hbmguardd.service: \([0-9.]*\).*/\1/p" |
		tr -d .)" -le 20 ]'

	# Errors from the module's own inject ioctl, and from the kernel's
	# memory_failure() on a CPU-less NUMA node registered as a device.
	hbmctl inject sim0 ue 0x9000
	eventually "UE journaled with its fields" 'journal_has MESSAGE_ID=e0b864666f4249d4802621cef30eff56 \
		PRIORITY=3 HBMGUARD_DEVICE=0 HBMGUARD_IDENTITY=sim:sim0 HBMGUARD_OFFSET=0x9000 \
		HBMGUARD_SEQNUM HBMGUARD_HEARD_BY=hbmguard'
	eventually "retirement journaled" 'journal_has MESSAGE_ID=f0f62b7532f845fdbddd739c151d2a8e \
		HBMGUARD_IDENTITY=sim:sim0 HBMGUARD_OFFSET=0x9000 HBMGUARD_SOURCE=ue'
	check "journalctl -x explains it" \
		'journalctl -b -x -u hbmguardd | grep -q "Pages of sim:sim0 at 0x9000 were retired"'
	id=$(hbmnl devices | sed -n "s/^device \([0-9]*\) hbm0 .*/\1/p")
	check "the configuration's range registered" '[ -n "$id" ] &&
		journalctl -b -u hbmguardd | grep -q "range hbm0 registered"'
	phys=$(hbmnl devices | sed -n "s/^device $id .* phys=\(0x[0-9a-f]*\)$/\1/p")
	modprobe hwpoison-inject
	echo $((phys / 4096 + 0x100)) >/sys/kernel/debug/hwpoison/corrupt-pfn
	eventually "poison from memory_failure() journaled" 'journal_has \
		MESSAGE_ID=f0f62b7532f845fdbddd739c151d2a8e HBMGUARD_IDENTITY=hbm:hbm0 \
		HBMGUARD_OFFSET=0x100000 HBMGUARD_SOURCE=poison'
	eventually "... and saved" '[ -s "/var/lib/hbmguard/hbm:hbm0.state" ]'

	check "retire through the daemon, saved on return" 'hbmctl retire sim0 0x5000 &&
		[ $(stat -c %s $state) = $((128 + 2 * 48)) ]'
	check "hbmctl --json agrees with the kernel" 'hbmctl --json pages sim0 >/tmp/p.json &&
		hbmnl pages 0 >/tmp/p.nl && python3 -c "
import json, re
p = json.load(open(\"/tmp/p.json\"))
n, m = map(int, re.search(r\"pages: (\d+) extents (\d+)\", open(\"/tmp/p.nl\").read()).groups())
ext = p[\"extents\"]
assert sum(e[\"length\"] for e in ext) // p[\"device\"][\"page_size\"] == n, (n, ext)
assert len(ext) == m == 2, (m, ext)
assert [e[\"offset\"] for e in ext] == [0x5000, 0x9000], ext
assert p[\"device\"][\"retired\"] == 2, p[\"device\"]"'
	check "hbmctl --json status names the daemon" 'hbmctl --json status | python3 -c "
import json, sys, subprocess
s = json.load(sys.stdin)
pid = int(subprocess.check_output([\"systemctl\", \"show\", \"-P\", \"MainPID\", \"hbmguardd\"]))
assert s[\"daemon\"][\"pid\"] == pid and s[\"daemon\"][\"stored_pages\"] == 3, s
assert len(s[\"devices\"]) == 5"'
	check "hbmctl --json=pretty: the same document, indented" 'hbmctl pages sim0 --json=pretty >/tmp/pp.json &&
		hbmctl --json pages sim0 >/tmp/ps.json && [ $(wc -l </tmp/pp.json) -gt 1 ] &&
		[ $(wc -l </tmp/ps.json) = 1 ] && python3 -c "
import json
assert json.load(open(\"/tmp/pp.json\")) == json.load(open(\"/tmp/ps.json\"))"'

	# kill -9: systemd restarts it, nothing lost.
	pid=$(systemctl show -P MainPID hbmguardd)
	kill -9 "$pid"
	eventually "kill -9: restarted by systemd" '[ "$(systemctl show -P MainPID hbmguardd)" != "$pid" ] && active'
	check "kill -9: nothing lost" 'has_page 0x5000 admin && has_page 0x9000 ue'
	hbmctl inject sim0 ue 0xc000
	eventually "the new daemon saves" '[ $(stat -c %s $state) = $((128 + 3 * 48)) ]'

	# SIGSTOP: the watchdog (5 s in this test's drop-in) restarts it.
	pid=$(systemctl show -P MainPID hbmguardd)
	kill -STOP "$pid"
	eventually "SIGSTOP: the watchdog restarts it" '[ "$(systemctl show -P MainPID hbmguardd)" != "$pid" ] && active' 60
	check "watchdog said so" 'journalctl -b -u hbmguardd | grep -q "Watchdog timeout"'

	# The module reloaded under the daemon: the table comes back.
	check "rmmod" 'rmmod hbmguard'
	check "modprobe" 'modprobe hbmguard'
	eventually "table restored after the reload, each page with its source" \
		'has_page 0x5000 admin && has_page 0x9000 ue && has_page 0xc000 ue'
	eventually "... journaled as one entry of many extents, with no range" \
		'journal_has MESSAGE_ID=263def5f9a8d4310b72d22643ee3e16a HBMGUARD_IDENTITY=sim:sim0 \
		HBMGUARD_COUNT !HBMGUARD_OFFSET !HBMGUARD_LENGTH'
	eventually "the configuration's range registered again, its table back" \
		'has_page 0x100000 restored hbm0'
	check "STATUS= after the reload" \
		'systemctl show -P StatusText hbmguardd | grep -q "^5 devices, 4 bad pages"'

	# A bad configuration: reload refused and the old one kept; a restart
	# fails with the file, line and key, and is not retried.
	mkdir -p /etc/hbmguard
	cp /etc/hbmguard/hbmguardd.conf /tmp/base.conf
	printf '[Policy]\nCEThreshold=20\n' >>/etc/hbmguard/hbmguardd.conf
	check "reload" 'systemctl reload hbmguardd'
	eventually "reloaded policy in the kernel" 'hbmctl policy sim0 | grep -q "ce_threshold=20 "'
	pid=$(systemctl show -P MainPID hbmguardd)
	echo CEWindow=soon >>/etc/hbmguard/hbmguardd.conf
	systemctl reload hbmguardd
	eventually "bad reload refused, named" 'journalctl -b -u hbmguardd |
		grep -q "reload refused, keeping the configuration: /etc/hbmguard/hbmguardd.conf:5: CEWindow"'
	check "same daemon, old policy" '[ "$(systemctl show -P MainPID hbmguardd)" = "$pid" ] && active &&
		hbmctl policy sim0 | grep -q "ce_threshold=20 "'
	check "restart with a bad config fails" '! systemctl restart hbmguardd'
	check "... and stays failed (EX_CONFIG)" '[ "$(systemctl show -P ActiveState hbmguardd)" = failed ] &&
		[ "$(systemctl show -P ExecMainStatus hbmguardd)" = 78 ]'
	check "... saying why" 'journalctl -b -u hbmguardd -p err |
		grep -q "/etc/hbmguard/hbmguardd.conf:5: CEWindow"'
	check "the table untouched meanwhile" 'has_page 0x5000 admin && has_page 0xc000 ue'
	cp /tmp/base.conf /etc/hbmguard/hbmguardd.conf
	systemctl reset-failed hbmguardd
	check "a good config: starts" 'systemctl start hbmguardd && active'

	# Drop-ins (hbmguardd.conf(5)): read after the file, by name whichever
	# their directory, in the kernel after a restart; a runtime hbmctl
	# policy is overridden by them at the next start; a /dev/null mask; a
	# bad one named by file and line, and the daemon not started on it.
	dropins=/etc/hbmguard/hbmguardd.conf.d
	mkdir -p $dropins /usr/lib/hbmguard/hbmguardd.conf.d
	printf '[Policy]\nCEThreshold=11\n' >/usr/lib/hbmguard/hbmguardd.conf.d/40-vendor.conf
	printf '[Policy]\nCEThreshold=37\nCEWindow=1h 30min\n' >$dropins/50-local.conf
	check "restart with drop-ins" 'systemctl restart hbmguardd && active'
	eventually "the later drop-in's policy in the kernel, its time span read" \
		'hbmctl policy sim0 | grep -q "ce_threshold=37 ce_window=5400 "'
	hbmctl policy sim0 ce_threshold=5 >/dev/null
	check "hbmctl policy sets it at run time" 'hbmctl policy sim0 | grep -q "ce_threshold=5 "'
	check "restart" 'systemctl restart hbmguardd && active'
	eventually "hbmctl policy: runtime only, the drop-in's again after a restart" \
		'hbmctl policy sim0 | grep -q "ce_threshold=37 "'
	ln -sf /dev/null $dropins/40-vendor.conf
	rm $dropins/50-local.conf
	printf '[Policy]\nCEThreshold=12\n' >/usr/lib/hbmguard/hbmguardd.conf.d/30-vendor.conf
	check "restart" 'systemctl restart hbmguardd && active'
	eventually "a drop-in masked by a /dev/null link in /etc" \
		'hbmctl policy sim0 | grep -q "ce_threshold=12 "'
	printf '[Policy]\nCEWindow=500ms\n' >$dropins/70-bad.conf
	check "a bad drop-in: restart fails" '! systemctl restart hbmguardd &&
		[ "$(systemctl show -P ExecMainStatus hbmguardd)" = 78 ]'
	check "... naming its file and line" 'journalctl -b -u hbmguardd -p err |
		grep -q "$dropins/70-bad.conf:2: CEWindow: .500ms. is not a whole number of seconds"'
	rm -rf $dropins /usr/lib/hbmguard/hbmguardd.conf.d
	systemctl reset-failed hbmguardd
	check "drop-ins gone: starts" 'systemctl start hbmguardd && active'

	# A damaged state file: moved aside at error priority, the records
	# that check out restored, the daemon goes on.
	systemctl stop hbmguardd
	rmmod hbmguard && modprobe hbmguard
	# The second record (0x9000) loses a bit.
	python3 -c "
f = open('$state', 'r+b'); f.seek(128 + 48 + 3); b = f.read(1); f.seek(128 + 48 + 3)
f.write(bytes([b[0] ^ 4])); f.close()"
	check "start on a damaged file" 'systemctl start hbmguardd && active'
	check "damage reported at error priority" 'journalctl -b -u hbmguardd -p err |
		grep -q "state of sim:sim0 damaged (records; 1 bad, 0 missing records)"'
	check "damaged file kept aside" 'ls /var/lib/hbmguard | grep -q "^sim:sim0.state.corrupt-"'
	check "what checks out restored" 'has_page 0x5000 admin && has_page 0xc000 ue &&
		! has_page 0x9000 ue'

	# Unprivileged users: reads for the hbmguard group, no mutations.
	useradd -M -G hbmguard hbmops
	before=$(hbmctl --json pages sim0)
	check "no group: refused, explained" '! setpriv --reuid=nobody --regid=nogroup --clear-groups \
		hbmctl retire sim0 0x7000 2>/tmp/err && grep -q "Permission denied (needs root or the hbmguard group)" /tmp/err'
	check "group member reads" 'runuser -u hbmops -- hbmctl pages sim0 | grep -q "^0x5000 "'
	check "group member cannot retire (daemon)" '! runuser -u hbmops -- hbmctl retire sim0 0x7000 2>/tmp/err &&
		grep -q "retire (hbmguardd): Operation not permitted" /tmp/err'
	check "group member cannot clear (daemon)" '! runuser -u hbmops -- hbmctl clear sim0 0x5000 4K'
	check "group member cannot inject (kernel)" '! runuser -u hbmops -- hbmctl inject sim0 ue 0x7000'
	check "refusal journaled" 'journalctl -b -u hbmguardd | grep -q "retire of sim:sim0 refused: uid $(id -u hbmops)"'
	check "bad packets on the control socket" 'python3 /usr/local/lib/hbmguard-test/ctl_badinput.py sim:sim0'
	check "... and as a user" 'runuser -u hbmops -- python3 /usr/local/lib/hbmguard-test/ctl_badinput.py sim:sim0 user'
	# uid 0 is not enough: the daemon wants CAP_SYS_ADMIN, as the kernel does.
	check "uid 0 without CAP_SYS_ADMIN cannot clear (daemon)" '! setpriv --bounding-set=-sys_admin \
		hbmctl clear sim0 0x5000 4K 2>/tmp/err && grep -q "clear (hbmguardd): Operation not permitted" /tmp/err'
	check "... nor with bad packets" 'setpriv --bounding-set=-sys_admin \
		python3 /usr/local/lib/hbmguard-test/ctl_badinput.py sim:sim0 user'
	check "nothing changed by any of it" '[ "$(hbmctl --json pages sim0)" = "$before" ] && active'

	# The state directory unwritable (the daemon has no CAP_DAC_OVERRIDE):
	# STATUS= and hbmctl status say so until a retry, with no event needed,
	# gets the state to disk.
	chmod 0500 /var/lib/hbmguard
	check "a retire whose save fails: done in the kernel, not on disk (exit 5)" \
		'hbmctl retire sim0 0x3f000 2>/tmp/err; [ $? = 5 ] &&
		grep -q "^hbmctl: retire: done in the kernel, NOT on disk yet: " /tmp/err &&
		grep -q "^hbmctl: the daemon.s saves fail: Permission denied$" /tmp/err &&
		hbmctl pages sim0 | grep -q "^0x3f000 " || { cat /tmp/err; false; }'
	check "STATUS= says what is not saved" 'systemctl show -P StatusText hbmguardd |
		grep -q "; NOT SAVED, retrying: sim:sim0 (Permission denied)$"'
	check "hbmctl status says so, and exits 1" '! hbmctl status >/tmp/st &&
		grep -q "^hbmguardd: 1 state files NOT SAVED (Permission denied): retrying$" /tmp/st'
	chmod 0700 /var/lib/hbmguard
	eventually "saved by a retry" 'hbmctl status' 150
	check "... STATUS= clean again" '! systemctl show -P StatusText hbmguardd | grep -q "NOT SAVED"'
	check "... said in the journal" 'journalctl -b -u hbmguardd | grep -q "the state of sim:sim0 is saved"'
	check "clear it again" 'hbmctl clear sim0 0x3f000 4K'

	# The metrics endpoint, off until configured, and a Prometheus server
	# (Debian's) scraping it through the UE below.
	metrics_on

	# Training ranks through the Python package, as an unprivileged user
	# in the group the README gives training users: a UE under rank 1, in
	# the device memory it keeps its state in, is recovered, with no
	# process restarted.  The aperture is the writers' group's alone.
	useradd -M -G hbmguard-aperture hbmtrain
	check "training user maps device memory, writes and reads it" \
		'runuser -u hbmtrain -- python3 -c "
import hbmguard
a = hbmguard.Aperture(\"sim:sim1\", 0x10000, 0x2000)
a.buffer[0x1ff8:0x2000] = b\"hbmtrain\"
assert hbmguard.Aperture(\"sim:sim1\", 0x11000, 0x1000).buffer[0xff8:] == b\"hbmtrain\""'
	check "monitoring user cannot map it" '! runuser -u hbmops -- python3 -c "
import hbmguard; hbmguard.Aperture(\"sim:sim1\", 0, 4096)" 2>/tmp/err &&
		grep -q "Permission denied" /tmp/err'
	check "nor a user in neither group" '! setpriv --reuid=nobody --regid=nogroup --clear-groups \
		python3 -c "import hbmguard; hbmguard.Aperture(\"sim:sim1\", 0, 4096)" 2>/tmp/err &&
		grep -q "Permission denied" /tmp/err'
	for r in 0 1; do
		dev=sim:sim1 ap=
		[ $r = 1 ] && dev=sim:sim0 ap=aperture
		runuser -u hbmtrain -- python3 /usr/local/lib/hbmguard-test/pyrank.py \
			py $r 2 $dev $ap >/tmp/py.$r 2>&1 &
		eval py$r=\$!
	done
	eventually "python ranks registered" '[ $(hbmctl ranks | grep -c "^py ") = 2 ]'
	check "... as the training user" '[ "$(hbmctl --json ranks | python3 -c "
import json, sys
print(sorted({r[\"uid\"] for r in json.load(sys.stdin) if r[\"job\"] == \"py\"}))")" = "[$(id -u hbmtrain)]" ]'
	check "STATUS= counts them" 'systemctl show -P StatusText hbmguardd | grep -q "; 2 ranks, 0 incidents open;"'
	hbmctl inject sim0 ue 0x20000
	wait $py0
	s0=$?
	wait $py1
	check "python ranks resumed, the same processes" '[ $s0 = 0 ] && [ $? = 0 ]'
	check "python rank 0 paused, restored, resumed" '[ "$(cat /tmp/py.0)" = "registered
request pause incident 1 failed_rank 1
request restore incident 1 failed_rank 1
request resume incident 1 failed_rank 1" ] || { cat /tmp/py.0; false; }'
	check "python rank 1 lost its page, restored its device memory, resumed" \
		'[ "$(cat /tmp/py.1)" = "registered
request pause incident 1 failed_rank 1
aperture lost 1
request restore incident 1 failed_rank 1
request resume incident 1 failed_rank 1
aperture intact" ] || { cat /tmp/py.1; false; }'
	check "incident journaled with its fields" 'journal_has MESSAGE_ID=7b4d2f0c9a8e4d61b3f5a2c1e0d9f8a7 \
		HBMGUARD_JOB=py HBMGUARD_RANK=1 HBMGUARD_INCIDENT=1 HBMGUARD_INCIDENT_STATE=resumed \
		HBMGUARD_IDENTITY=sim:sim0 HBMGUARD_OFFSET=0x20000'
	check "hbmctl --json incidents" 'hbmctl --json incidents | python3 -c "
import json, sys
i = json.load(sys.stdin)[0]
assert i[\"state\"] == \"resumed\" and i[\"failed_rank\"] == 1, i
assert list(i[\"at_us\"]) == [\"detected\", \"pausing\", \"isolated\", \"restoring\", \"resumed\"], i"'

	metrics_after_ue

	# Acknowledged, then a reboot.
	check "retire before the reboot" 'hbmctl retire sim0 0xa000'
	echo 2 >$dir/phase
	done_phase
	systemctl reboot
}

phase2() {
	echo "# phase 2: after a reboot"
	check "hbmguardd active" active
	check "the table is back" 'has_page 0x5000 admin && has_page 0xa000 admin &&
		has_page 0xc000 ue'
	check "the configuration's range is back, with its table" 'has_page 0x100000 poison hbm0'
	echo 3 >$dir/phase
	sync
	# Only hbmguardd's fsync can save this one: the host cuts the power as
	# soon as hbmctl returns, before ext4's 5 s commit.
	check "retire before the power cut, through the daemon" \
		'hbmctl retire sim0 0xb000 2>&1 | tee /dev/stderr | (! grep .)'
	done_phase
	echo "@@POWERCUT@@"
	sleep infinity
}

# The unit as shipped opens no IP socket (RestrictAddressFamilies=,
# IPAddressDeny=any): an operator who turns the endpoint on allows it, as
# hbmguardd.conf(5) says, by a drop-in of each.
metrics_config() {
	local dropin=/etc/systemd/system/hbmguardd.service.d/metrics.conf
	mkdir -p /etc/hbmguard/hbmguardd.conf.d "$(dirname $dropin)"
	printf '[Service]\nRestrictAddressFamilies=AF_INET AF_INET6\nIPAddressAllow=localhost\n' >$dropin
	printf '[Metrics]\nListen=127.0.0.1:9477\n' >/etc/hbmguard/hbmguardd.conf.d/60-metrics.conf
	systemctl daemon-reload
	check "restart with [Metrics]" 'systemctl restart hbmguardd && active'
}

metrics_on() {
	check "no endpoint by default" '! curl -fsS $metrics_url'
	metrics_config
	eventually "scraped" 'curl -fsS $metrics_url >/tmp/metrics.0'
	check "served as text format 0.0.4" '[ "$(curl -fsS -o /dev/null -w "%{content_type}" $metrics_url)" = \
		"text/plain; version=0.0.4; charset=utf-8" ]'
	# Prometheus's own Accept header (scrape/scrape.go, v2.42.0, as Debian's
	# prometheus sends it): OpenMetrics, ending in # EOF.
	check "OpenMetrics to Prometheus's Accept header" '[ "$(curl -fsS -o /tmp/metrics.om \
		-H "Accept: $prom_accept" -w "%{content_type}" $metrics_url)" = \
		"application/openmetrics-text; version=1.0.0; charset=utf-8" ] &&
		[ "$(tail -n 1 /tmp/metrics.om)" = "# EOF" ] && ! grep -q "^# EOF" /tmp/metrics.0 &&
		grep -qx "# TYPE hbmguard_incidents counter" /tmp/metrics.om'
	check "promtool check metrics passes" 'promtool_ok </tmp/metrics.0'
	check "every device, with the module's counts" 'metrics_agree_devices'
	# The module's counts are since it was loaded (phase 1 reloaded it): one
	# more error of its own, on a device no other check counts.
	inject_before=$(sample hbmguard_path_errors_received_total 'path="inject"')
	hbmctl inject sim3 ce 0x30000
	eventually "the module's paths: an injected error counted on its path" \
		'[ "$(sample hbmguard_path_errors_received_total "path=\"inject\"")" -gt "${inject_before:-0}" ]'
	# An error is counted by its kind, not by why its page is bad: a UE,
	# then a CE on the page it retired (whose record says UE).
	heard_ce=$(sample hbmguard_daemon_errors_heard_total 'origin="kernel"' 'severity="ce"')
	heard_ue=$(sample hbmguard_daemon_errors_heard_total 'origin="kernel"' 'severity="ue"')
	check "a UE, then a CE, on one page of sim3" \
		'hbmctl inject sim3 ue 0x31000 && hbmctl inject sim3 ce 0x31000'
	eventually "errors heard by their kind: a CE on a page a UE retired is a CE" \
		'[ "$(sample hbmguard_daemon_errors_heard_total "origin=\"kernel\"" "severity=\"ce\"")" = $((heard_ce + 1)) ] &&
		[ "$(sample hbmguard_daemon_errors_heard_total "origin=\"kernel\"" "severity=\"ue\"")" = $((heard_ue + 1)) ]'
	check "an unknown path is 404" '[ "$(curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:9477/x)" = 404 ]'
	check "a reload with Listen= off turns it off" \
		'printf "[Metrics]\nListen=\n" >/etc/hbmguard/hbmguardd.conf.d/70-off.conf &&
		systemctl reload hbmguardd && sleep 1 && ! curl -fsS $metrics_url'
	rm -f /etc/hbmguard/hbmguardd.conf.d/70-off.conf
	systemctl reload hbmguardd
	eventually "... and back on at the next reload" 'curl -fsS $metrics_url >/dev/null'

	# Debian's prometheus, an instance of the test's own (run.sh masks the
	# package's service): a scrape every second.
	printf '%s\n' 'global: { scrape_interval: 1s, evaluation_interval: 1s }' \
		'scrape_configs: [ { job_name: hbmguard, static_configs: [ { targets: ["127.0.0.1:9477"] } ] } ]' \
		>/tmp/prometheus.yml
	rm -rf /tmp/prom-data
	prometheus --config.file=/tmp/prometheus.yml --storage.tsdb.path=/tmp/prom-data \
		--web.listen-address=127.0.0.1:9091 >/tmp/prometheus.log 2>&1 &
	prometheus_pid=$!
	eventually "prometheus scrapes hbmguardd" '[ "$(prom_query "up{job=\"hbmguard\"}")" = 1 ] &&
		[ "$(prom_query "hbmguard_up")" = 1 ]' 60
	# What only an OpenMetrics scrape gives Prometheus: a counter's metadata
	# under its family's name (the text format's is under the _total sample
	# name) and a family's unit (the text format has no UNIT line).
	eventually "prometheus scraped OpenMetrics" '[ "$(prom_meta hbmguard_incidents)" = "counter -" ] &&
		[ "$(prom_meta hbmguard_incident_phase_duration_seconds)" = "histogram seconds" ]' 30
	retired_before=$(prom_query 'hbmguard_device_pages{device="sim0",state="retired"}')
	resumed_before=$(prom_query 'hbmguard_incidents_total{outcome="resumed"}')
	ue_before=$(prom_query 'hbmguard_device_uncorrected_errors_total{device="sim0"}')
	check "queried: the retired pages and incidents before the UE" \
		'[ -n "$retired_before" ] && [ -n "$resumed_before" ] && [ -n "$ue_before" ]'
}

# After the UE at 0x20000 of sim0 that the python ranks recovered from.
metrics_after_ue() {
	eventually "prometheus: one more retired page" '[ "$(prom_query \
		"hbmguard_device_pages{device=\"sim0\",state=\"retired\"}")" = $((retired_before + 1)) ]' 30
	eventually "prometheus: one more UE counted" '[ "$(prom_query \
		"hbmguard_device_uncorrected_errors_total{device=\"sim0\"}")" = $((ue_before + 1)) ]' 30
	eventually "prometheus: the retirement heard, by its source" '[ "$(prom_query \
		"sum(hbmguard_device_page_events_pages_total{device=\"sim0\",state=\"retired\",source=\"ue\"})")" -ge 1 ]' 30
	eventually "prometheus: one more incident resumed" '[ "$(prom_query \
		"hbmguard_incidents_total{outcome=\"resumed\"}")" = $((resumed_before + 1)) ]' 30
	eventually "prometheus: its phases in the histogram" '[ "$(prom_query \
		"hbmguard_incident_phase_duration_seconds_count{phase=\"pausing\",outcome=\"resumed\"}")" -ge 1 ] &&
		[ "$(prom_query "hbmguard_incident_phase_duration_seconds_bucket{phase=\"restoring\",outcome=\"resumed\",le=\"+Inf\"}")" -ge 1 ]' 30
	check "the last save's time" '[ "$(sample hbmguard_last_save_timestamp_seconds)" -gt 1700000000 ]'
	check "promtool check metrics still passes" 'curl -fsS $metrics_url | promtool_ok'
	kill $prometheus_pid
	wait $prometheus_pid 2>/dev/null
}

# The job that proves it (train.py): 4 DDP ranks, each with its weights in
# its own device's aperture; a UE under rank 2 mid-training, with hbmguardd
# and without.  ddp_verdict.py says what a user would check.
ddp() {
	local t=/usr/local/lib/hbmguard-test out=/var/tmp/ddp
	# 12 steps (each about 2.4 s of 4 ranks on one TCG core): the daemon
	# restarted at 4, the fault at 6, six steps after it (the replacement's
	# check of the replicas comes two steps after it rejoined); the same 12
	# fault-free without the Guard (its cost, and that it changes nothing
	# of the result).  Then short runs,
	# each a job of its own name (its own incidents): a world of one rank
	# (no replica); hbmguardd restarted while rank 2 holds its PAUSED; the
	# Guard making the optimizer step after the step clipped (a pair: clean
	# and faulted, two ranks, the fewest the replica check works with; and
	# the same fault landing after rank 1's step, before the Guard's check);
	# two ranks whose states are not replicas (shards, for the Guard); the
	# 12 steps under hbmguard.run, rank 2's process unable to continue after
	# the fault (replaced: the others keep theirs); hbmguardd stopped for
	# good under a job, then a loss; last, with it still stopped, no Guard:
	# the fault kills rank 2 (its step 2: nothing after it runs).  One
	# launcher runs them all (train.py's "+"): torch's import alone takes
	# about 70 s under TCG.
	rm -rf $out
	# [Recovery] deadlines other than the defaults, for the Guard to take
	# from the daemon: the clean run's restart of it reads them.
	mkdir -p /etc/hbmguard/hbmguardd.conf.d
	printf '[Recovery]\nPauseTimeout=40s\nRestoreTimeout=100s\n' \
		>/etc/hbmguard/hbmguardd.conf.d/50-ddp-recovery.conf
	# The ranks run as a training user, in the group the README gives
	# training users (train.py's TRAIN_USER); the launcher stays root.
	id hbmtrain >/dev/null 2>&1 || useradd -M -G hbmguard-aperture hbmtrain
	check "DDP: the runs (fault-free, no Guard, UE, world of one, restart, Guard commits, UE after the step, shards, replacement, daemon gone, unguarded)" \
		"TRAIN_USER=hbmtrain python3 $t/train.py hbmguard $out/clean --steps 12 --restart-daemon-step 4 \
		+ unguarded $out/plain --steps 12 \
		+ hbmguard $out/guarded --steps 12 --fault-step 6 --fault sim2:0x20000 \
		+ hbmguard $out/one --job ddp-one --world 1 --steps 8 --fault-step 2 --fault sim0:0x22000 \
		+ hbmguard $out/restart --job ddp-restart --hold-paused --steps 4 \
			--fault-step 2 --fault sim2:0x23000 \
		+ hbmguard $out/commits-clean --job ddp-commits --world 2 --guard-commits --steps 8 \
		+ hbmguard $out/commits --job ddp-commits --world 2 --guard-commits --steps 8 \
			--fault-step 4 --fault sim1:0x20000 \
		+ hbmguard $out/late --job ddp-late --world 2 --guard-commits --steps 8 \
			--fault-step 4 --fault sim1:0x21000 --fault-after-closure \
		+ hbmguard $out/shards --job ddp-shards --world 2 --shards --steps 4 \
			--fault-step 2 --fault sim1:0x24000 \
		+ replace $out/replace --job ddp-replace --steps 12 --fault-step 6 \
			--fault sim2:0x27000 --cannot-continue 2 --port 29600 --wall 300 \
		+ hbmguard $out/gone --job ddp-gone --stop-daemon-step 2 --steps 6 \
			--fault-step 3 --fault sim2:0x25000 \
		+ hbmguard $out/unguarded --steps 4 --fault-step 2 --fault sim2:0x21000 \
		>/tmp/ddp.log 2>&1;
		grep '^# DDP run' /tmp/ddp.log; test -f $out/unguarded/result.json ||
		{ tail -n 20 /tmp/ddp.log; false; }"
	# what the Guard and hbmguard.run said, for a failure below
	grep -E '^(hbmguard|# /|[A-Za-z.]*(Error|Aborted)|Thread|Current thread|  File)' /tmp/ddp.log |
		tail -n 80 | sed 's/^/#   /'
	rm /etc/hbmguard/hbmguardd.conf.d/50-ddp-recovery.conf
	systemctl start hbmguardd
	for r in clean plain guarded one restart commits-clean commits late shards replace gone unguarded; do
		python3 -c 'import json, sys; print("# DDP %s run: %.0f s" % (sys.argv[1],
			json.load(open(sys.argv[2]))["wall"]))' $r $out/$r/result.json
	done
	python3 $t/ddp_verdict.py $phase $out ||
		echo "not ok $phase DDP: the verdict ran to its end (it exited with status $?)"
	# hbmguard.run gives its run a key (hbmguard.h), every rank, the
	# replacement too; the other runs' ranks, started by train.py, none.
	check "DDP: hbmguard.run's ranks registered with the run's key, the replacement too" \
		'[ "$(journalctl -b -u hbmguardd -o cat | grep -c "of job ddp-replace (with a key) registered")" -ge 4 ] &&
		! journalctl -b -u hbmguardd -o cat | grep -q "of job ddp-replace registered"'
	check "hbmguardd active again" active
}

# NVIDIA GPUs under the unit as shipped: the daemon opens NVML's device nodes,
# registers the GPUs NVML reports, and still opens no other device.  The
# driver is the test module of its character devices (hbm_fake_nvdev.ko:
# major 195 as "nvidia" and "nvidiactl" in /proc/devices, where systemd
# resolves the unit's DeviceAllow=char-nvidia), its nodes made as
# nvidia-modprobe makes them; NVML is the fake libnvidia-ml.so.1 that opens
# them (FAKE_NODES), where the driver's package puts the library, driven by
# node.scn, named to it through the manager's environment (the unit itself
# stays as shipped).  What an operator checks: hbmctl/hbmnl devices, the
# journal; what the sandbox keeps: the daemon's /dev and its device cgroup.
nvml() {
	local t=/usr/local/lib/hbmguard-test/nvml lib=/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1
	local uuid0=GPU-a1a1a1a1-0000-4000-8000-000000000001 pid inv
	local uuid1=GPU-h200h200-0000-4000-8000-000000000002
	echo "# NVIDIA GPUs through NVML, under the unit as shipped"
	check "the driver's character devices" "insmod $t/hbm_fake_nvdev.ko gpus=2 &&
		grep -q '^195 nvidia\$' /proc/devices && grep -q '^195 nvidiactl\$' /proc/devices"
	mknod -m 666 /dev/nvidiactl c 195 255
	mknod -m 666 /dev/nvidia0 c 195 0
	mknod -m 666 /dev/nvidia1 c 195 1
	systemctl set-environment HBM_FAKE_NVML=$t/node.scn
	cp $t/libnvidia-ml.so.1 $lib
	ldconfig
	check "restarted with NVML" 'systemctl restart hbmguardd && active'
	pid=$(systemctl show -P MainPID hbmguardd)
	inv=$(systemctl show -P InvocationID hbmguardd)
	eventually "hbmnl devices: both GPUs, as GPUs, by UUID" 'hbmnl devices |
		grep -q "^device [0-9]* nvidia-0000:3b:00.0 $uuid0 kind=4 " &&
		hbmnl devices | grep -q "^device [0-9]* nvidia-0000:86:00.0 $uuid1 kind=4 "'
	check "hbmctl devices lists them" 'hbmctl devices | grep -q " nvidia-0000:3b:00.0 *$uuid0 " &&
		hbmctl devices | grep -q " nvidia-0000:86:00.0 *$uuid1 "'
	# dcgm-exporter's names, labels and values: as hbmctl gpus has the GPU
	check "metrics under DCGM's names, as hbmctl gpus says" 'curl -fsS $metrics_url >/tmp/metrics.nv &&
		promtool_ok </tmp/metrics.nv && metrics_agree_dcgm /tmp/metrics.nv $uuid0 $uuid1'
	check "journal: registered, no NVML failure" 'journalctl _SYSTEMD_INVOCATION_ID=$inv -o cat >/tmp/nv.j &&
		grep -q "GPU $uuid0 at 0000:3b:00.0 registered as nvidia-0000:3b:00.0" /tmp/nv.j &&
		! grep -q "nvml: nvmlInit_v2 failed\|nvmlDeviceGetHandleByIndex_v2.* failed" /tmp/nv.j ||
		{ cat /tmp/nv.j; false; }'
	check "the daemon holds the driver's nodes open" 'ls -l /proc/$pid/fd >/tmp/nv.fd &&
		grep -q " -> /dev/nvidiactl\$" /tmp/nv.fd && grep -q " -> /dev/nvidia0\$" /tmp/nv.fd &&
		grep -q " -> /dev/nvidia1\$" /tmp/nv.fd'
	# The sandbox kept: its /dev (PrivateDevices=) has the driver's nodes and
	# no disk or memory, read-only; its device cgroup (DevicePolicy=closed)
	# lets a process in it open the driver's nodes and not the host's disk
	# or /dev/mem.
	check "its /dev: the nodes, no disk, no memory" 'ls /proc/$pid/root/dev >/tmp/nv.dev &&
		grep -qx nvidiactl /tmp/nv.dev && grep -qx nvidia0 /tmp/nv.dev &&
		! grep -qx vda /tmp/nv.dev && ! grep -qx mem /tmp/nv.dev && ! grep -qx kmsg /tmp/nv.dev'
	check "... read-only" 'awk "\$5 == \"/dev\" { print \$6 }" /proc/$pid/mountinfo | tail -n1 | grep -q "^ro,"'
	check "... the nodes bound read-only: the host's cannot be chmodded from it" \
		'[ "$(awk "\$5 == \"/dev/nvidia0\" { print substr(\$6, 1, 3) }" /proc/$pid/mountinfo | tail -n1)" = "ro," ] &&
		[ "$(awk "\$5 == \"/dev/nvidiactl\" { print substr(\$6, 1, 3) }" /proc/$pid/mountinfo | tail -n1)" = "ro," ]'
	check "its device cgroup: the driver's nodes, not /dev/vda or /dev/mem" 'python3 -c "
import os, sys
cg = open(\"/proc/%s/cgroup\" % sys.argv[1]).read().split(\"::\")[1].strip()
open(\"/sys/fs/cgroup\" + cg + \"/cgroup.procs\", \"w\").write(str(os.getpid()))
for p in (\"/dev/nvidiactl\", \"/dev/nvidia0\"):
    os.close(os.open(p, os.O_RDWR))
for p in (\"/dev/vda\", \"/dev/mem\"):
    try:
        os.close(os.open(p, os.O_RDONLY))
    except PermissionError:
        continue
    sys.exit(p + \" opened\")
" $pid'
	# As before: no NVML, no driver.
	rm -f $lib /dev/nvidiactl /dev/nvidia0 /dev/nvidia1
	ldconfig
	systemctl unset-environment HBM_FAKE_NVML
	check "without NVML again" 'systemctl restart hbmguardd && active && rmmod hbm_fake_nvdev'
}

# The README's commands, as tests/readme/readme.py says each is run (after
# everything else: they reload the module with the README's options).
readme_commands() {
	local t=/usr/local/lib/hbmguard-test c cmds
	echo "# the README's commands"
	export KSRC=$t/ksrc	# the kernel's ynl tool, 6.12's (run.sh)
	check "README: the commands to run" "python3 $t/readme.py --guest $t/README.md >/tmp/readme.cmds &&
		[ -s /tmp/readme.cmds ]"
	mapfile -t cmds </tmp/readme.cmds
	for c in "${cmds[@]}"; do
		check "README: $c" "$c"
	done
}

# hbmguardd.socket, off as shipped: enabled, systemd holds the control
# socket and the daemon takes it; a client that connects while the daemon
# is stopped starts it and is answered, and clients that connect while it
# restarts wait for the next daemon instead of being refused.  The client
# (ctl_socket.py) connects one connection at a time: a daemon that exits
# can leave at most the one it had accepted unanswered.  Back to the
# daemon's own socket at the end, as shipped.
socket_activation() {
	local t=/usr/local/lib/hbmguard-test sock=/run/hbmguard/control.sock before inv i loop
	before=$(stat -c "%a %U %G %F" $sock)
	# systemd refuses to start the socket while the service runs.
	check "hbmguardd.socket: enabled, listening" 'systemctl stop hbmguardd &&
		systemctl enable --now hbmguardd.socket && systemctl is-active hbmguardd.socket'
	check "... the daemon started takes it" 'systemctl start hbmguardd && active'
	inv=$(systemctl show -P InvocationID hbmguardd)
	eventually "... and says so" 'journalctl _SYSTEMD_INVOCATION_ID=$inv -o cat |
		grep -q "control socket from systemd (hbmguardd.socket)"'
	check "... the socket's mode and owner as the daemon's own" \
		'[ "$(stat -c "%a %U %G %F" $sock)" = "$before" ]'
	check "... the daemon answers on it" \
		'[ "$(python3 $t/ctl_socket.py once)" = "$(systemctl show -P MainPID hbmguardd)" ]'
	check "daemon stopped: its socket left to systemd, listening" \
		'systemctl stop hbmguardd.service && ! active && [ -S $sock ] &&
		[ "$(systemctl show -P SubState hbmguardd.socket)" = listening ]'
	check "... a client then starts it through the socket, and is answered by it" \
		'timeout 120 hbmctl --json status >/tmp/sa.json && active && python3 -c "
import json, subprocess
s = json.load(open(\"/tmp/sa.json\"))
pid = int(subprocess.check_output([\"systemctl\", \"show\", \"-P\", \"MainPID\", \"hbmguardd\"]))
assert s[\"daemon\"][\"pid\"] == pid, (s[\"daemon\"], pid)"'

	# Credentials through systemd's socket: an admin's request queued
	# while no daemon runs carries its proof to the daemon it starts.
	check "an admin's retire while the daemon is stopped: it starts, answers, keeps it" \
		'systemctl stop hbmguardd.service && ! active &&
		timeout 120 hbmctl retire sim1 0x7f000 >/tmp/sa.retire 2>&1 && active &&
		! grep -q directly /tmp/sa.retire && has_page 0x7f000 admin sim1'
	check "... a group member's clear through it refused, the page kept" \
		'! runuser -u hbmops -- hbmctl clear sim1 0x7f000 4K 2>/tmp/sa.user &&
		grep -q "clear (hbmguardd): Operation not permitted" /tmp/sa.user &&
		has_page 0x7f000 admin sim1'
	check "... uid 0 without CAP_SYS_ADMIN refused, the page kept" \
		'! setpriv --bounding-set=-sys_admin hbmctl clear sim1 0x7f000 4K 2>/tmp/sa.nocap &&
		grep -q "clear (hbmguardd): Operation not permitted" /tmp/sa.nocap &&
		has_page 0x7f000 admin sim1'
	check "... nor with bad packets" 'runuser -u hbmops -- python3 $t/ctl_badinput.py sim:sim1 user'
	check "... the admin's clear" 'hbmctl clear sim1 0x7f000 0x1000 && ! has_page 0x7f000 admin sim1'

	# Two restarts under clients connecting one after another.
	rm -f /tmp/sa.stop /tmp/sa.stop.up
	python3 $t/ctl_socket.py loop /tmp/sa.stop >/tmp/sa.loop 2>&1 &
	loop=$!
	i=0
	while [ ! -e /tmp/sa.stop.up ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
	for i in 1 2; do systemctl restart hbmguardd; done
	systemctl show -P MainPID hbmguardd >/tmp/sa.stop
	wait $loop
	check "restarts under a client in a loop: none refused, each answered" 'cat /tmp/sa.loop && python3 -c "
import json
r = json.load(open(\"/tmp/sa.loop\"))
assert not r[\"gave_up\"] and r[\"refused\"] == 0 and r[\"failed\"] <= 2, r
assert len(r[\"pids\"]) >= 2 and r[\"answered\"] >= 2, r"'
	check "... the socket still systemd's, as before" \
		'[ "$(stat -c "%a %U %G %F" $sock)" = "$before" ] && systemctl is-active hbmguardd.socket'

	# As shipped again: the daemon binds its own socket.
	check "hbmguardd.socket disabled, the daemon on its own socket" \
		'systemctl disable --now hbmguardd.socket && systemctl restart hbmguardd && active &&
		[ "$(stat -c "%a %U %G %F" $sock)" = "$before" ] &&
		[ "$(python3 $t/ctl_socket.py once)" = "$(systemctl show -P MainPID hbmguardd)" ]'
	inv=$(systemctl show -P InvocationID hbmguardd)
	check "... not systemd's" '! journalctl _SYSTEMD_INVOCATION_ID=$inv -o cat |
		grep -q "control socket from systemd"'
	# What the socket spared: the same clients across a restart without it
	# (said, not checked: whether one connects in the gap is timing).
	rm -f /tmp/sa.stop /tmp/sa.stop.up
	python3 $t/ctl_socket.py loop /tmp/sa.stop >/tmp/sa.loop 2>&1 &
	loop=$!
	i=0
	while [ ! -e /tmp/sa.stop.up ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
	systemctl restart hbmguardd
	systemctl show -P MainPID hbmguardd >/tmp/sa.stop
	wait $loop
	echo "# without hbmguardd.socket, across one restart: $(cut -c1-120 /tmp/sa.loop)"
}

# The node's reason and state in Slurm (daemon/scheduler.c reads the state
# in full, StateComplete: "idle+drain"; %T's short form is enough here).
slurm_reason() {
	timeout 15 sinfo --noheader --Node --nodes="$(hostname -s)" --format=%E
}

slurm_state() {
	timeout 15 sinfo --noheader --Node --nodes="$(hostname -s)" --format=%T
}

# What went wrong with Slurm, for a failed check's lines.
slurm_said() {
	journalctl -b -o cat -u slurmctld -u munge | tail -n 4
	journalctl -b -o cat -u slurmd | grep -v "^Started\|^slurmd.service" | tail -n 4
	journalctl -b -o cat -u hbmguardd | grep -E "slurm|hook|drain" | tail -n 6
	false
}

# A simulated device of 4 MiB: one bad page is its retire limit (one page
# per 100 MiB, at least one: kmod/policy.c), so one retire puts it in RMA.
rma() {
	hbmctl sim-create "$1" 4M identity="$2" >/dev/null &&
	hbmctl retire "$1" 0 >/dev/null
}

# Slurm (daemon/scheduler.c): Debian's slurmctld, slurmd and munge, a
# cluster of this one node; hbmguardd drains it when a device reaches RMA,
# tells the hook, and resumes it only at an administrator's undrain.
slurm() {
	local node env=/run/hbmguard/hook.env hook=/usr/local/lib/hbmguard-test/drain-hook
	node=$(hostname -s)
	echo "# Slurm: a one-node cluster, drained by hbmguardd"
	# The image has no /etc/hosts, nor an nsswitch.conf (glibc's default
	# asks DNS first, and stops there): the node's name resolves here.
	grep -qs "^127.0.0.1 localhost" /etc/hosts || echo "127.0.0.1 localhost" >>/etc/hosts
	grep -q " $node\$" /etc/hosts || echo "127.0.1.1 $node" >>/etc/hosts
	grep -qs "^hosts:" /etc/nsswitch.conf || echo "hosts: files" >>/etc/nsswitch.conf
	# Slurm resolves every address with AI_ADDRCONFIG (get_addr_info(),
	# src/common/util-net.c, 22.05.8), which finds no IPv4 address on a
	# host whose only one is the loopback's (getaddrinfo(3)), as here: one
	# more, of TEST-NET-1, on lo (SIOCSIFADDR on an alias: no iproute2 here).
	python3 -c '
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
fcntl.ioctl(s, 0x8916, struct.pack("16sH2s4s8s", b"lo:1", socket.AF_INET, b"\0\0",
                                   socket.inet_aton("192.0.2.1"), b"\0" * 8))'
	[ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey -c
	mkdir -p /var/spool/slurmctld /var/spool/slurmd
	# slurmd's cgroup/v2 asks systemd for a scope over D-Bus, which this
	# image lacks: set up by hand then (cgroup.conf(5), 22.05.8)
	printf 'CgroupPlugin=cgroup/v2\nIgnoreSystemdOnFailure=yes\n' >/etc/slurm/cgroup.conf
	cat >/etc/slurm/slurm.conf <<EOF
ClusterName=hbmtest
SlurmctldHost=$node(127.0.1.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
NodeName=$node NodeAddr=127.0.1.1 CPUs=2 RealMemory=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	check "munge, slurmctld, slurmd started" 'systemctl restart munge &&
		systemctl start slurmctld slurmd'
	within "the node is idle in Slurm" '[ "$(slurm_state)" = idle ] || slurm_said' 90
	# The hook appends its environment, in a directory the unit's sandbox
	# lets it write; owned by root, 0755, as hbmguardd requires.
	printf '#!/bin/sh\n{ env | sort; echo --; } >>%s\n' $env >$hook
	chmod 0755 $hook
	mkdir -p /etc/hbmguard/hbmguardd.conf.d /etc/systemd/system/hbmguardd.service.d
	printf '[Scheduler]\nSlurm=yes\nHook=%s\nTimeout=20s\nRecheckInterval=10s\n' $hook \
		>/etc/hbmguard/hbmguardd.conf.d/slurm.conf
	# What hbmguardd.conf(5) tells an administrator to add: scontrol
	# reaches slurmctld over TCP, which the unit as shipped denies.
	printf '[Service]\nRestrictAddressFamilies=AF_INET AF_INET6\nIPAddressAllow=localhost\n' \
		>/etc/systemd/system/hbmguardd.service.d/slurm.conf
	check "restarted with the Slurm sink" 'systemctl daemon-reload &&
		systemctl restart hbmguardd && active && hbmctl drain | grep -q "not drained by hbmguard"'

	rma rma1 GPU-5af1e000-0000-4000-8000-00000000000a
	within "RMA: the node drains with hbmguard's reason" \
		'slurm_state | grep -q "^drain" &&
		slurm_reason | grep -q "^hbmguard: GPU-5af1e000-0000-4000-8000-00000000000a needs RMA: bad pages at the retire limit\$" ||
		slurm_said' 40
	check "scontrol show node agrees" 'scontrol show node -o $node |
		grep -q "State=[A-Z+*]*DRAIN .*Reason=hbmguard: GPU-5af1e000-0000-4000-8000-00000000000a needs RMA"'
	within "the hook told, in its environment" 'grep -qx HBMGUARD_ACTION=drain $env &&
		grep -qx "HBMGUARD_REASON=hbmguard: GPU-5af1e000-0000-4000-8000-00000000000a needs RMA: bad pages at the retire limit" $env &&
		grep -qx HBMGUARD_CAUSE=rma $env && grep -qx HBMGUARD_DEVICE=GPU-5af1e000-0000-4000-8000-00000000000a $env &&
		grep -qx HBMGUARD_UUID=GPU-5af1e000-0000-4000-8000-00000000000a $env &&
		grep -qx HBMGUARD_NODE=$node $env && grep -qx HBMGUARD_PCI_BUS_ID= $env'
	check "... and nothing of the daemon's environment" \
		'! grep -E "^(NOTIFY_SOCKET|INVOCATION_ID|JOURNAL_STREAM|WATCHDOG_USEC)=" $env'
	check "hbmctl drain shows the cause" 'hbmctl drain | grep -q "drained by hbmguard for 1 cause" &&
		hbmctl --json drain | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d[\"want\"] == \"drain\" and d[\"slurm\"] == \"done\" and d[\"hook\"] == \"done\", d
assert [c[\"cause\"] for c in d[\"causes\"]] == [\"rma\"], d"'
	check "a restart keeps the drain" 'systemctl restart hbmguardd && active &&
		hbmctl drain | grep -q "drained by hbmguard for 1 cause" &&
		journalctl -b -u hbmguardd | grep -q "the node stays drained: hbmguard: GPU-5af1e000-0000-4000-8000-00000000000a"'
	check "undrain refused to a user" '! runuser -u nobody -- hbmctl undrain 2>/tmp/undrain.err &&
		grep -q refused /tmp/undrain.err && slurm_reason | grep -q "^hbmguard: GPU-5af1"'
	# A resume by hand while the causes stand: undone at the next re-check
	# (RecheckInterval=, 10 s here); only hbmctl undrain clears the causes.
	# (The journal's "back in service" is what shows the resume took: the
	# node may be drained again before sinfo here could see it idle.)
	check "an administrator resumes the node by hand" \
		'scontrol update NodeName=$node State=RESUME'
	within "... and hbmguardd drains it again" 'slurm_state | grep -q "^drain" &&
		slurm_reason | grep -q "^hbmguard: GPU-5af1e000-0000-4000-8000-00000000000a needs RMA" &&
		journalctl -b -u hbmguardd | grep -q "slurm: node $node is back in service .* drained again"' 40

	# Slurm down: logged, retried; hbmctl answers meanwhile; the drain lands
	# once slurmctld is back.
	systemctl stop slurmctld
	rma rma2 sim:rma2
	within "slurmctld down: said, and retried" 'journalctl -b -u hbmguardd |
		grep -q "slurm: sinfo exited with status 1: retrying"' 60
	check "hbmctl answers meanwhile" 'timeout 2 hbmctl status >/dev/null &&
		timeout 2 hbmctl drain | grep -q "slurm: retrying in"'
	# sinfo gives up after about 9 s: a second failure within 20
	sleep 20
	systemctl start slurmctld
	within "slurmctld back: the newer reason lands" \
		'slurm_reason | grep -q "^hbmguard: sim:rma2 needs RMA: bad pages at the retire limit (+1 more)\$"' 90
	check "the failure logged once" '[ "$(journalctl -b -u hbmguardd |
		grep -c "slurm: sinfo exited with status 1: retrying")" = 1 ]'

	check "an administrator undrains" 'hbmctl undrain'
	within "the node is idle again" 'slurm_state | grep -qx "idle\*\?" && [ "$(slurm_reason)" = none ]' 30
	within "the hook told of the resume" 'grep -qx HBMGUARD_ACTION=resume $env'

	# A drain of the administrator's own is neither overwritten nor resumed.
	scontrol update NodeName=$node State=DRAIN Reason="disk swap"
	rma rma3 sim:rma3
	within "another's drain left as it is" 'journalctl -b -u hbmguardd |
		grep -q "out of service for .disk swap., not hbmguard.s reason: left as it is, not drained again"' 30
	check "an administrator undrains again" 'hbmctl undrain'
	within "... which leaves the admin's drain" 'journalctl -b -u hbmguardd |
		grep -q "out of service for .disk swap., not hbmguard.s reason: left as it is, not resumed"' 30
	check "still drained for the admin's reason" 'slurm_state | grep -q "^drain" &&
		[ "$(slurm_reason)" = "disk swap" ] && hbmctl drain | grep -q "slurm: left"'

	for d in rma1 rma2 rma3; do hbmctl sim-destroy $d; done
	scontrol update NodeName=$node State=RESUME
	systemctl stop slurmd slurmctld
	rm -f /etc/hbmguard/hbmguardd.conf.d/slurm.conf /etc/systemd/system/hbmguardd.service.d/slurm.conf
	check "without Slurm again" 'systemctl daemon-reload && systemctl restart hbmguardd && active'
}

phase3() {
	echo "# phase 3: after a power cut"
	check "hbmguardd active" active
	check "the acknowledged retire survived" 'has_page 0xb000 admin ||
		{ hbmctl pages sim0; ls -l /var/lib/hbmguard; journalctl -b -1 -u hbmguardd | tail; false; }'
	check "and the rest" 'has_page 0x5000 admin && has_page 0xa000 admin'

	# DKMS's module, built from /usr/src (make install-dkms) when the
	# image was made, as a package's postinst builds it (run.sh says why
	# not here), installed in place of make install's.
	rm -f /lib/modules/$kver/updates/hbmguard.ko
	check "dkms built it" 'dkms status | grep -q "^hbmguard/0.1, $kver, x86_64: built"'
	check "dkms install" 'dkms install hbmguard/0.1 -k $kver'
	check "dkms status" 'dkms status | grep -q "^hbmguard/0.1, $kver, x86_64: installed"'
	check "modprobe finds the dkms module" \
		'modinfo -n hbmguard | grep -q "^/lib/modules/$kver/updates/dkms/hbmguard.ko"'
	check "reload into the dkms module" 'rmmod hbmguard && modprobe hbmguard'
	eventually "restored into it" 'has_page 0xb000 admin && has_page 0x5000 admin'
	# Slurm first: NVML's GPUs (a remap pending) would be causes of its
	# drain, and its checks are of a node with none.
	slurm
	nvml
	socket_activation
	readme_commands
	done_phase
	systemctl poweroff
}

# make demo: the DDP job through a fault, hbmguard beside checkpoint-restart.
phasedemo() {
	echo "# demo: 4 DDP ranks, each with its weights on its own simulated GPU"
	/usr/local/lib/hbmguard-test/ddp_compare.sh /var/tmp/ddp
	echo "@@PHASE demo done@@"
	systemctl poweroff
}

# The DDP proof alone (run.sh KVER ddp).
phaseddp() {
	ddp
	done_phase
	systemctl poweroff
}

# Boot 3's end alone (run.sh KVER nvml): the NVIDIA GPUs' checks, the README's commands.
phasenvml() {
	metrics_config	# as phase 1 left it: the nvml checks read the metrics
	nvml
	readme_commands
	done_phase
	systemctl poweroff
}

# The Slurm checks alone (run.sh KVER slurm).
phaseslurm() {
	slurm
	done_phase
	systemctl poweroff
}

# Two nodes, one job (run.sh KVER cluster): this guest is node1 or node2
# (its hostname, from the kernel's command line), both running what
# follows at once; etcd runs in node 1; /mnt/cluster is the folder the two
# and the host share (run.sh boot_cluster).
cluster_share=/mnt/cluster
etcd_url=http://10.77.0.1:2379

# cluster_barrier NAME: this node reached NAME; wait (up to 900 s: a hang's
# bound) for the other to reach it too.
cluster_barrier() {
	local end=$((SECONDS + 900))
	touch $cluster_share/at.$1.$(hostname)
	while [ ! -e $cluster_share/at.$1.node1 ] || [ ! -e $cluster_share/at.$1.node2 ]; do
		[ $SECONDS -lt $end ] || { echo "# $(hostname): the other node never reached $1"; return 1; }
		sleep 0.5
	done
}

# The job's runs, the same on both nodes, each node launching its two ranks
# (train.py --nnodes 2: under torchrun; gloo over the link): a fault-free
# run, then a UE under rank 2 (node 2's first rank), recovered by both
# nodes' daemons as one incident (issue 14).  Each run is a job of its own
# name (its incidents its own) and port.  Then the escalations, each one
# more short run, what it does to a node given by train.py on that node
# only, checked by cluster_verdict.py (what each costs: the run's wall in
# the log, "# cluster RUN run").  Their ranks are light (train.py --light:
# the hbmguard package without torch, each step a barrier of the four
# through node 1's launcher): what they check is who aborts and why, and
# torchrun's start under TCG took most of each such run.
#   etcd      etcd restarted during the watch (node1 --run-at 1), the UE
#             after it (step 4): the job still recovers, every rank (the
#             recovery's bits are the UE run's: etcd is the daemons' only)
#   second    a second error mid-incident: rank 2 holds its PAUSED answer
#             (--hold-paused) while node2 injects a UE under rank 3 (--at-held)
#   kill      node 2's hbmguardd killed (SIGKILL, and kept down) mid-incident,
#             rank 2 holding PAUSED: its lease ends, node 1 aborts the job
#   noetcd    etcd stopped (node1 --run-at 1) before the UE (step 3): the
#             job aborts at the pause deadline; hbmctl status meanwhile
# Each UE at a page of its own: a page retired by a run before is
# another's now.
cluster_train() {
	local node=$1 t=/usr/local/lib/hbmguard-test out=/var/tmp/cluster
	local on=(--nnodes 2 --node-rank $((${node#node} - 1)) --master-addr 10.77.0.1 --steps 6)
	local light=("${on[@]}" --light)
	local etcd=() second=() kill=() noetcd=()
	# the last run's deadlines, short: nothing recovers then, and the
	# ranks of the node without the error wait as the Guard would, the
	# longest an incident across nodes may take and 10 s (RECOVERY_TIMES:
	# 4 x 5 + 5 + KillTimeout 10 + 10, asked at each registration): 55 s
	local short="printf '[Recovery]\\nPauseTimeout=5s\\nRestoreTimeout=5s\\n' \
		>/etc/hbmguard/hbmguardd.conf.d/70-short.conf"
	if [ "$node" = node1 ]; then
		etcd=(--run-at "1:systemctl restart etcd")
		noetcd=(--run-at "0:$short && systemctl reload hbmguardd"
			--run-at "1:systemctl stop etcd"
			--run-at "3:hbmctl --json status >$out/noetcd/status.json")
	else
		second=(--hold-paused --at-held "cluster-incident-open cluster-second &&
			hbmctl inject sim3 ue 0x21000")
		kill=(--hold-paused --at-held "cluster-incident-open cluster-kill &&
			systemctl kill -s KILL hbmguardd && systemctl stop hbmguardd")
		noetcd=(--run-at "0:$short && systemctl start hbmguardd"
			--run-at "3:sleep 1; hbmctl --json status >$out/noetcd/status.json")
	fi
	GLOO_SOCKET_IFNAME=$2 TRAIN_USER=hbmtrain python3 $t/train.py \
		hbmguard $out/clean --job cluster-clean "${on[@]}" --port 29510 --wall 400 \
		+ hbmguard $out/ue --job cluster-ue "${on[@]}" --port 29520 --wall 300 \
			--fault-step 3 --fault sim2:0x20000 \
		+ hbmguard $out/etcd --job cluster-etcd "${light[@]}" --port 29530 --wall 300 \
			--fault-step 4 --fault sim2:0x21000 "${etcd[@]}" \
		+ hbmguard $out/second --job cluster-second "${light[@]}" --port 29540 --wall 300 \
			--fault-step 3 --fault sim2:0x22000 "${second[@]}" \
		+ hbmguard $out/kill --job cluster-kill "${light[@]}" --port 29550 --wall 300 \
			--fault-step 3 --fault sim2:0x23000 "${kill[@]}" \
		+ hbmguard $out/noetcd --job cluster-noetcd "${light[@]}" --port 29560 --wall 300 \
			--fault-step 3 --fault sim2:0x24000 "${noetcd[@]}"
}

cluster_runs() {
	local node=$1 out=/var/tmp/cluster r
	rm -rf $out
	# cluster-incident-open JOB: until JOB's incident is open in etcd (up to 60 s)
	cat >/usr/local/bin/cluster-incident-open <<-EOF
	#!/bin/sh
	end=\$((\$(date +%s) + 60))
	until etcdctl --endpoints=$etcd_url get --prefix --keys-only /hbmguard/v1/jobs/ |
		grep -q "\\.\$1/incident\\\$"; do
		[ \$(date +%s) -lt \$end ] || exit 1
		sleep 0.2
	done
	EOF
	chmod +x /usr/local/bin/cluster-incident-open
	# the runs' ends are cluster_verdict.py's: some end in an abort
	rm -f /etc/hbmguard/hbmguardd.conf.d/70-short.conf
	check "cluster: the job's runs (fault-free; a UE under rank 2, on node 2; escalations)" \
		"cluster_train $node $2 >/tmp/cluster.log 2>&1;
		grep '^# DDP run' /tmp/cluster.log; test -f $out/noetcd/result.json ||
		{ tail -n 20 /tmp/cluster.log; false; }"
	grep -E '^(hbmguard|# /|[A-Za-z.]*(Error|Aborted)|Thread|Current thread|  File)' \
		/tmp/cluster.log | tail -n 40 | sed 's/^/#   /'
	for r in clean ue etcd second kill noetcd; do
		python3 -c 'import json, sys; print("# cluster %s run: %.0f s" % (sys.argv[1],
			json.load(open(sys.argv[2]))["wall"]))' $r $out/$r/result.json
	done
	[ "$node" = node2 ] || systemctl start etcd	# stopped by the last run
	# for the guests' -m (run.sh): what the job took at most here (cgroup v2's memory.peak)
	echo "# $node: the test's memory peak: $(($(cat /sys/fs/cgroup/system.slice/hbmguard-test.service/memory.peak) >> 20)) MiB"
	mkdir -p $cluster_share/$node
	cp -r $out/. $cluster_share/$node/
	systemctl start hbmguardd	# node 2's, killed by a run (a no-op where it runs)
	hbmctl --json incidents >$cluster_share/$node/incidents.json
	journalctl -b -u hbmguardd -o cat >$cluster_share/$node/hbmguardd.journal
}

phasecluster() {
	local node me link
	node=$(hostname)
	me=${node#node}
	phase="cluster $node"
	echo "# $node: two nodes, one job"
	mkdir -p $cluster_share
	check "the share with the other node is mounted" \
		"mount -t 9p -o trans=virtio,version=9p2000.L cluster $cluster_share"
	# the interface of the link: its MAC, as run.sh gives it (node_mac)
	link=$(basename "$(dirname "$(grep -l "52:54:00:77:00:0$me" /sys/class/net/*/address)")")
	within "$node: its address on the link (systemd-networkd)" \
		"python3 -c 'import socket; socket.socket().bind((\"10.77.0.$me\", 0))'" 60
	if [ "$node" = node1 ]; then
		check "node1: etcd started" "systemctl start etcd"
	fi
	within "$node: etcd answers over the link" "etcdctl --endpoints=$etcd_url endpoint health" 120
	if [ "$node" = node1 ]; then
		check "node1: a key put in etcd" "etcdctl --endpoints=$etcd_url put /hbmguard-test/from node1"
	fi
	cluster_barrier up
	check "$node: the key node1 put is read from etcd" \
		'[ "$(etcdctl --endpoints=$etcd_url get --print-value-only /hbmguard-test/from)" = node1 ]'
	id hbmtrain >/dev/null 2>&1 || useradd -M -G hbmguard-aperture hbmtrain
	cluster_runs $node $link
	cluster_barrier ran
	if [ "$node" = node1 ]; then
		python3 /usr/local/lib/hbmguard-test/cluster_verdict.py "$phase" $cluster_share ||
			echo "not ok $phase cluster: the verdict ran to its end (it exited with status $?)"
	fi
	done_phase
	systemctl poweroff
}

[ "$phase" = bench ] && exec /usr/local/lib/hbmguard-test/bench.sh
phase$phase
