#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: the core in userspace, the module in a qemu guest, the daemon
# in a systemd guest; then one table of every figure beside its anchor
# (tests/bench/table.py), also written to build/bench.json.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
kver=$(ls -d /usr/src/linux-headers-*-amd64 | sed 's|.*/linux-headers-||' | sort -V | tail -n 1)
system_kver=$(ls -d /usr/src/linux-headers-*-amd64 | sed 's|.*/linux-headers-||' | sort -V | head -n 1)

run() {
	local rc=0

	echo "== hbmguard benchmarks ($(date -u +%F), $(nproc) cores)"
	echo
	"$TOP/build/bench-core" || rc=$?
	echo
	echo "A job's incident across N simulated nodes (processes of this host) and one"
	echo "etcd on its loopback: error -> every node told to pause, and -> resumed"
	echo "everywhere, beside etcd's own put -> watch.  Targets: within 3x of it; flat"
	echo "in N (64 within 2x of 2)."
	"$TOP/tests/cluster/bench.sh" || rc=$?
	echo
	"$TOP/scripts/guest-run" --kernel "$kver" --mem 2048 --hbm-node 512 --timeout 2400 \
		--module hwpoison-inject \
		--file "$TOP/build/$kver/hbmguard.ko:/hbmguard.ko" \
		--file "$TOP/build/$kver/testmods/hbm_test_provider.ko:/hbm_test_provider.ko" \
		--file "$TOP/build/guest/hbmbench:/bin/hbmbench" \
		--file "$TOP/build/guest/hbmnl:/bin/hbmnl" \
		--file "$TOP/build/guest/hbmctl:/bin/hbmctl" \
		--file "$TOP/build/guest/hbmrankbench:/bin/hbmrankbench" \
		--file "$TOP/build/guest/hbmstatebench:/bin/hbmstatebench" \
		--bin "$TOP/build/hbmguardd:/bin/hbmguardd" \
		--bin "$TOP/build/bench-core:/bin/bench-core" \
		--file "$TOP/tests/bench/guest-bench.sh:/bench.sh" \
		--file "$TOP/tests/bench/guest-persist.sh:/persist.sh" \
		--log "$TOP/build/logs/bench-$kver.log" \
		-- sh /bench.sh || rc=$?
	echo
	echo "Kernel $kver.  Targets: the core's lookup at 10^6 pages <= 1.5x the anchor row"
	echo "(the machine's own cost of one random load from memory the size of the"
	echo "table); <= 32 bytes per retired page."
	echo
	echo "hbmguard.torch.Guard's work per step natively, in a chroot of the tier-3 rootfs"
	echo "(its torch), beside a step of a model that takes >= 100 ms.  Target: <= 1%."
	"$TOP/tests/bench/guard-step.sh" "$system_kver" || rc=$?
	echo
	echo "hbmguardd beside rasdaemon in a systemd guest ($system_kver):"
	echo "memory_failure() on a page of the HBM node (hwpoison_inject) -> the daemon's"
	echo "entry in the journal; RSS and idle wake-ups.  Targets: where the daemon is the"
	echo "cost, from the tracepoint both take to the entry, hbmguardd >= 10x sooner than"
	echo "rasdaemon (journald's own write shown beside); RSS <= 10 MiB; no wake-up"
	echo "beyond the watchdog's.  rasdaemon is bookworm-backports' 0.8.1."
	echo "Then the 4-rank DDP job of make demo: fault -> training resumed, hbmguard"
	echo "beside checkpoint-restart.  Targets: hbmguard under 1 s and >= 20x faster than"
	echo "a (cold) restart; the warm restart is a restart's floor, its imports spared;"
	echo "rank 2's process replaced (hbmguard.run) >= 10x faster than the cold restart."
	echo "The Guard's cost per step: its steps and steps without it taking turns in one"
	echo "job, beside one bare all_reduce of its 8 bytes of flags (any check among the"
	echo "ranks costs that).  Target: <= 1% of a step."
	echo
	"$TOP/tests/system/run.sh" "$system_kver" bench || rc=$?
	echo
	echo "The same job over two nodes (tier 3's two-node run, $system_kver: two guests,"
	echo "etcd in the first, 2 ranks each, the UE under rank 2 on node 2), beside it"
	echo "on one node: fault -> training resumed (node 2's clock), and the incident's"
	echo "pausing -> resumed in each daemon's record (the later of the two nodes)."
	if "$TOP/tests/system/run.sh" "$system_kver" cluster >"$TOP/build/logs/bench-cluster.log" 2>&1; then
		/usr/bin/python3 "$TOP/tests/bench/cluster-ddp.py" "$TOP/build/logs/tier3-cluster-share" \
			"$TOP/build/bench.log" || rc=$?
	else
		rc=$?
		echo "the two-node run failed: see build/logs/bench-cluster.log"
	fi
	return $rc
}

# tests/bench/run.sh restart: the persistence rows alone (a daemon's start
# with 10^6 stored pages, its cost per retirement), in a guest of their own:
# build/bench-restart.log and .json.
restart() {
	echo "== hbmguard benchmarks: persistence alone ($(date -u +%F), $(nproc) cores)"
	"$TOP/scripts/guest-run" --kernel "$kver" --mem 2048 --timeout 2400 \
		--file "$TOP/build/$kver/hbmguard.ko:/hbmguard.ko" \
		--file "$TOP/build/guest/hbmctl:/bin/hbmctl" \
		--file "$TOP/build/guest/hbmstatebench:/bin/hbmstatebench" \
		--bin "$TOP/build/hbmguardd:/bin/hbmguardd" \
		--bin "$TOP/build/bench-core:/bin/bench-core" \
		--file "$TOP/tests/bench/guest-persist.sh:/persist.sh" \
		--log "$TOP/build/logs/bench-restart-$kver.log" \
		-- sh -c 'dmesg -n 1; insmod /hbmguard.ko && . /persist.sh'
}

mkdir -p "$TOP/build/logs"
if [ "${1:-}" = restart ]; then
	rc=0
	restart 2>&1 | tee "$TOP/build/bench-restart.log" || rc=$?
	echo
	/usr/bin/python3 "$TOP/tests/bench/table.py" "$TOP/build/bench-restart.log" \
		"$TOP/build/bench-restart.json"
	exit $rc
fi
# A part that fails (a guest that timed out) does not stop the others, and
# the table is made of the figures printed; the run fails after it.
rc=0
run 2>&1 | tee "$TOP/build/bench.log" || rc=$?
echo
echo "== Every figure beside its anchor, measured in this run"
/usr/bin/python3 "$TOP/tests/bench/table.py" "$TOP/build/bench.log" "$TOP/build/bench.json"
if [ $rc != 0 ]; then
	echo "make bench: a part failed (exit status $rc): its figures are missing above" >&2
	exit $rc
fi
