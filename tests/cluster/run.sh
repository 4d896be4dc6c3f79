#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The cluster link against a real etcd (Debian's 3.4.23), on this host: no
# guest.  It runs in a network namespace of its own (unshare -n; root, as
# CI is), etcd on its loopback, and N simulated nodes (build/cluster-agent,
# one process each) of one job:
#   - N = 2, 4, 8, 16, 32, 64: an incident opened on one node, every step
#     acknowledged by all, resumed on all; each node's steps in order;
#   - TLS with client certificates (etcd --client-cert-auth), made here by
#     openssl; an agent without a certificate is refused;
#   - hostile keys (not JSON, another version's, a huge value, an incident
#     of an unknown job): refused with a line, nothing done;
#   - escalations: a node whose ranks fail a step, a node killed mid-way
#     (its lease ends): every node aborts, the reason in each one's log;
#   - etcd restarted while a node is away and compacted past its watch:
#     the watch reads again, paging past more keys than a page, and the
#     incident opened meanwhile resumes;
#   - etcd restored from a snapshot of before: every watch reads again;
#     and written past a stopped node's watch: its check at the revision it
#     had reached sees another history, it reads again;
#     etcd gone before an error: the node's ranks abort at the deadline.
#
#   tests/cluster/run.sh [--bench]
#
# --bench: only the N runs, each then timing 8 incidents more on the same
# nodes, and etcd's own floor; one line per incident, "N MS_TO_ALL_PAUSED
# MS_TO_ALL_RESUMED ETCD_CPU_MS NODES_CPU_MS" (per incident), and etcd's
# "floor MS...", to
# $HBM_CLUSTER_BENCH or stdout (tests/cluster/bench.sh makes the rows).
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=${HBM_CLUSTER_AGENT:-$TOP/build/cluster-agent}
UNWATCH=${HBM_CLUSTER_UNWATCH:-$TOP/build/cluster-unwatch}
if [ -z "${HBM_IN_NETNS:-}" ]; then
	exec env HBM_IN_NETNS=1 unshare -n "$0" "$@"
fi
BENCH=${1:-}
ip link set lo up
W=$(mktemp -d "${HBM_CLUSTER_TMP:-/tmp}/hbm-cluster.XXXXXX")
PIDS=()
cleanup() {
	# (a stopped agent, continued: it would never end, nor the wait)
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && kill -CONT "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
# what the first nodes of the job in hand said
fail() {
	echo "check-cluster: FAILED: $*" >&2
	[ -z "${LOG:-}" ] || tail -n 8 "$LOG"[0-2].{out,err} >&2
	exit 1
}

PORT=23790
EP=http://127.0.0.1:$PORT
ctl() { ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:$PORT --dial-timeout=2s "$@"; }

# etcd, plain: the scale runs and the hostile keys
start_etcd() {
	etcd --name t --data-dir "$W/etcd$1" --listen-peer-urls http://127.0.0.1:$((PORT + 10)) \
		--initial-advertise-peer-urls http://127.0.0.1:$((PORT + 10)) \
		--initial-cluster t=http://127.0.0.1:$((PORT + 10)) "${@:2}" >"$W/etcd$1.log" 2>&1 &
	ETCD=$!
	PIDS+=("$ETCD")
}
wait_for() {	# what, seconds, command...
	local what=$1 t=$(($2 * 10))
	shift 2
	until "$@" >/dev/null 2>&1; do
		t=$((t - 1))
		[ $t -gt 0 ] || fail "$what"
		sleep 0.1
	done
}
start_etcd 0 --listen-client-urls $EP --advertise-client-urls $EP
wait_for "etcd did not start" 20 ctl endpoint health

# ---- a watch unwatched from each of its own callbacks (ASan) ----
if [ "$BENCH" != --bench ]; then
	ctl put /hbmguard-unwatch/k v >/dev/null
	for where in snapshot link event synced; do
		"$UNWATCH" $EP /hbmguard-unwatch/ $where >"$W/unwatch.$where.out" \
			2>"$W/unwatch.$where.err" &
		p=$!
		PIDS+=($p)
		t=200	# watching, or already unwatched (snapshot), or ended: 20 s at most
		until grep -q "^watching$\|^unwatched in" "$W/unwatch.$where.out" ||
		      ! kill -0 $p 2>/dev/null || [ $t = 0 ]; do
			t=$((t - 1))
			sleep 0.1
		done
		ctl put /hbmguard-unwatch/k "$where" >/dev/null
		rc=0
		wait $p || rc=$?
		[ $rc = 0 ] && grep -qx "unwatched in $where" "$W/unwatch.$where.out" || {
			cat "$W/unwatch.$where.err" >&2
			fail "a watch unwatched from its own $where callback (exit status $rc)"
		}
	done
	echo "check-cluster: a watch unwatched from its own snapshot, link, event and synced callbacks ($SECONDS s)"

	# ---- a hostile gateway (tests/cluster/hostile_gateway.py) ----
	HPORT=$((PORT + 7))
	gateway() {	# mode: started, listening, as $gw
		python3 "$TOP/tests/cluster/hostile_gateway.py" $HPORT "$1" &
		gw=$!
		PIDS+=($gw)
		wait_for "the hostile gateway did not start" 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$HPORT"
	}
	watching() {	# mode [more watches [callback]]: the gateway, and a watch of it as $p, its stderr in hostile.err
		wait $gw 2>/dev/null || true
		gateway "$1"
		"$UNWATCH" http://127.0.0.1:$HPORT /hbmguard/ ${3:-event} ${2:-} >"$W/hostile.out" \
			2>"$W/hostile.err" &
		p=$!
		PIDS+=($p)
	}
	gateway nulltype
	rc=0
	"$UNWATCH" http://127.0.0.1:$HPORT /hbmguard/ event >"$W/hostile.out" 2>"$W/hostile.err" ||
		rc=$?
	[ $rc = 0 ] && grep -qx "unwatched in event" "$W/hostile.out" || {
		cat "$W/hostile.err" >&2
		fail "an event whose type is null: not a PUT (exit status $rc)"
	}
	kill $gw
	watching cancel
	wait_for "a canceled watch not said" 10 grep -q "canceled:" "$W/hostile.err"
	kill $p $gw
	grep -qF 'watch of /hbmguard/ canceled: denied\x0a<0>hbmguardd: forged' "$W/hostile.err" &&
		! grep -q '^<0>' "$W/hostile.err" ||
		fail "a server's cancel reason not shown escaped: $(cat "$W/hostile.err")"
	watching bomb
	wait_for "a message of 8 MiB of {}, not refused" 20 grep -q "past 256 MiB of JSON objects: refused" "$W/hostile.err"
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' /proc/$p/status)
	kill $p $gw
	[ "$hwm" -lt $((200 << 10)) ] || fail "a message of 8 MiB of {}, refused, but $hwm kB taken at the peak"
	bomb=$hwm
	# Fifteen watches, each sent 3 MiB of events held for a read that never
	# ends: within each watch's bounds, 1.2 GiB before the link's (MemoryMax
	# is 1G); ASan keeps 256 MiB of what was freed unless told not to.
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=1 watching hoard 14
	wait_for "the link's bound not said" 30 grep -q "the link's bound: refused" "$W/hostile.err"
	sleep 5		# the watches refused try again meanwhile
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' /proc/$p/status)
	kill $p $gw
	[ "$hwm" -lt $((512 << 10)) ] || fail "fifteen watches of a hoarding server: $hwm kB taken at the peak"
	[ $(grep -c "the link's bound" "$W/hostile.err") = 1 ] ||
		fail "the link's bound said more than once a minute: $(grep "the link's bound" "$W/hostile.err")"
	hoard=$hwm
	# Sixteen watches each sent a 12 MiB line, taken, then nothing: their
	# buffers give the room back, and a seventeenth, read again, has room
	# for its key (helper-189: 256 MiB of idle buffers, the link's bound).
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:quarantine_size_mb=1 watching pin 16 none
	wait_for "a watch's resume found compacted not said" 30 grep -q "compacted past or ahead" "$W/hostile.err"
	sleep 3		# its read again
	kill $p $gw
	! grep -q "the link's bound\|no room" "$W/hostile.err" ||
		fail "sixteen idle watches' buffers held the link's bound: $(grep "the link's bound\|no room" "$W/hostile.err")"
	echo "check-cluster: a hostile gateway: an event typed null taken as a PUT, a cancel reason escaped, a message of 8 MiB of {} refused unparsed (peak $((bomb >> 10)) MiB), fifteen watches sent 3 MiB of events each, bounded together (peak $((hoard >> 10)) MiB), sixteen idle watches' 12 MiB lines left room for a read"
fi

nodes_of() { ctl get --prefix --keys-only "/hbmguard/v1/jobs/$1/nodes/" | grep -c . || true; }
has_n() { [ "$(nodes_of "$1")" = "$2" ]; }
# etcd's revision now (from one key's header: not a get of every key)
revision() { ctl get /hbmguard/ --prefix --keys-only --limit 1 -w json |
	sed -n 's/.*"revision":\([0-9]*\).*/\1/p'; }
AGENTS=()
start_agents() {	# job n [extra args for node 0] -- started, published
	local job=$1 n=$2 i
	shift 2
	AGENTS=()
	for ((i = 0; i < n; i++)); do
		"$AGENT" --endpoint $EP --plain --node "n$i" --job "$job" --rank $i --world "$n" \
			--ttl "${TTL:-10}" $([ $i = 0 ] && echo "$@") >"$W/$job.$i.out" 2>"$W/$job.$i.err" &
		AGENTS+=($!)
		PIDS+=($!)
	done
	wait_for "$job: $n nodes not published" 30 has_n "$job" "$n"
}
stop_agents() {
	kill "${AGENTS[@]}" 2>/dev/null || true
	wait "${AGENTS[@]}" 2>/dev/null || true
}
all_closed() {	# job n outcome
	local i
	for ((i = 0; i < $2; i++)); do grep -q "^closed $3 " "$W/$1.$i.out" || return 1; done
}

# ---- N simulated nodes: opened, acknowledged by all, resumed ----
# (--bench: then INCIDENTS more on the same nodes, each timed, and the CPU
# time etcd and the nodes spent on them)
INCIDENTS=8
cpu_ticks() {	# pids: their user + system time, in clock ticks
	local t=0 p f
	for p in "$@"; do
		read -ra f <"/proc/$p/stat"
		t=$((t + f[13] + f[14]))
	done
	echo $t
}
closed_n() {	# job n count: the nodes closed count incidents each, resumed
	# (one grep for all: a poll of the timed incidents takes little CPU from them)
	[ "$(cat "$W/$1".*.out | grep -c "^closed resumed ")" -ge $(($2 * $3)) ]
}
scale() {
	local n=$1 job=$2 i k ticks
	LOG=$W/$job.
	start_agents $job $n
	kill -USR1 "${AGENTS[n - 1]}"	# a UE under the last node's rank
	wait_for "$job: not resumed on every node" 60 all_closed $job $n resumed
	for ((i = 0; i < n; i++)); do
		steps=$(awk '$1 == "step" { printf "%s ", $2 }' "$W/$job.$i.out")
		[ "$steps" = "pause isolate restore resume " ] ||
			fail "$job: node $i's steps: '$steps'"
		[ "$(awk '$1 == "step" { print $4, $5 }' "$W/$job.$i.out" | sort -u)" = \
			"rank=$((n - 1)) opener=n$((n - 1))" ] ||
			fail "$job: node $i was not told rank $((n - 1))'s state was lost on n$((n - 1))"
		! grep -q 'abort\|refused' "$W/$job.$i.out" "$W/$job.$i.err" || fail "$job: node $i"
	done
	[ "$(ctl get --prefix --keys-only /hbmguard/v1/jobs/$job/incident | grep -c .)" = 0 ] ||
		fail "$job: the incident's keys were left"
	if [ "$BENCH" = --bench ]; then
		etcd_ticks=$(cpu_ticks "$ETCD")
		ticks=$(cpu_ticks "${AGENTS[@]}")
		for ((k = 2; k <= INCIDENTS + 1; k++)); do
			kill -USR1 "${AGENTS[n - 1]}"
			wait_for "$job: incident $k not resumed on every node" 60 closed_n $job $n $k
		done
		etcd_ticks=$(($(cpu_ticks "$ETCD") - etcd_ticks))
		ticks=$(($(cpu_ticks "${AGENTS[@]}") - ticks))
		# each timed incident: N, error -> the last node told to pause, -> the
		# last node resumed (ms), and the CPU time of etcd and of the nodes (ms)
		/usr/bin/python3 - "$W" "$job" "$n" "$etcd_ticks" "$ticks" "$(getconf CLK_TCK)" \
			>>"$W/bench" <<'PY'
import sys
w, job, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
etcd_ticks, ticks, hz = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
err, paused, resumed = [], {}, {}
for i in range(n):
    p = r = 0
    for line in open(f"{w}/{job}.{i}.out"):
        f = line.split()
        if f[0] == "error": err.append(int(f[1]))
        if f[:2] == ["step", "pause"]: paused.setdefault(p, []).append(int(f[2])); p += 1
        if f[:2] == ["closed", "resumed"]: resumed.setdefault(r, []).append(int(f[2])); r += 1
timed = range(1, len(err))
for k in timed:
    print(n, (max(paused[k]) - err[k]) / 1000, (max(resumed[k]) - err[k]) / 1000,
          etcd_ticks * 1000 / hz / len(timed), ticks * 1000 / hz / len(timed))
PY
	fi
	stop_agents
}
for n in 2 4 8 16 32 64; do
	scale $n scale$n
	echo "check-cluster: $n nodes: opened, acknowledged by all, resumed ($SECONDS s)"
done
if [ "$BENCH" = --bench ]; then
	# etcd's own floor: a put seen by a watcher, through the same gateway
	/usr/bin/python3 "$TOP/tests/cluster/floor.py" $EP >>"$W/bench"
	cat "$W/bench" >"${HBM_CLUSTER_BENCH:-/dev/stdout}"
	exit 0
fi

# ---- hostile keys: refused, logged, nothing done ----
job=hostile
LOG=$W/$job.
start_agents $job 3
big=$(head -c 100000 /dev/zero | tr '\0' x)
ctl put /hbmguard/v1/jobs/$job/incident/zz/step '{"step":"abort","timeout":5}' >/dev/null
ctl put /hbmguard/v1/jobs/$job/incident 'not JSON' >/dev/null
ctl put /hbmguard/v2/jobs/$job/incident '{"id":"x","opener":"n0","nodes":["n0","n1","n2"]}' >/dev/null
ctl put /hbmguard/v1/jobs/$job/nodes/evil "{\"ranks\":[0],\"world_size\":3,\"pad\":\"$big\"}" >/dev/null
ctl put /hbmguard/v1/jobs/ghost/incident '{"id":"x","opener":"n0","nodes":["n0"]}' >/dev/null
ctl put /hbmguard/v1/jobs/$job/nodes/n9/../n1 '{"ranks":[1],"world_size":3}' >/dev/null
ctl put /hbmguard/v1/jobs/$job/incident/x/acks/pause/n1 '{"at":1}' >/dev/null
refusals() { [ "$(grep -c 'refused' "$W/$job.$1.err")" -ge 7 ]; }
for i in 0 1 2; do
	wait_for "$job: node $i did not refuse each key" 10 refusals $i
	for what in 'incident/zz/step .*not of the job.s open incident' \
		'jobs/hostile/incident .*not an incident.s value' 'v2/jobs.*not a key of version 1' \
		'nodes/evil .*not a node.s value' 'ghost/incident .*a job no node has published' \
		'n9/\.\./n1 .*not a key of the layout' 'acks/pause/n1 .*not a key of the layout'; do
		grep -q "refused.*" "$W/$job.$i.err" && grep -q "$what" "$W/$job.$i.err" ||
			fail "$job: node $i: no refusal of $what"
	done
	! grep -q . "$W/$job.$i.out" || fail "$job: node $i acted on a hostile key"
done
# what was refused is still there, and blocks no one once taken away
ctl del /hbmguard/v1/jobs/$job/incident >/dev/null
kill -USR1 "${AGENTS[1]}"
wait_for "$job: not resumed after the hostile keys" 30 all_closed $job 3 resumed
stop_agents
echo "check-cluster: hostile keys refused with a line, nothing done"

# ---- escalations: a step failed, a node gone mid-incident ----
job=failed
LOG=$W/$job.
start_agents $job 3 --fail restore
kill -USR1 "${AGENTS[1]}"
wait_for "$job: not aborted on every node" 30 all_closed $job 3 aborted
for i in 0 1 2; do
	grep -q '^step abort .*node n0 failed restore' "$W/$job.$i.out" ||
		fail "$job: node $i was not told why it aborted"
	! grep -q '^step resume' "$W/$job.$i.out" || fail "$job: node $i resumed"
done
stop_agents
echo "check-cluster: a node that fails a step aborts the incident everywhere"

job=gone
LOG=$W/$job.
# Leases of 2 s, kept alive every 0.7 s: only for the 3 nodes here, where
# the host's 2 cores keep up (64 nodes on them do not: their default, 10 s)
TTL=2 start_agents $job 3 --fail never
# node 2 never acknowledges: SIGSTOP, then killed; its lease (2 s) ends
kill -STOP "${AGENTS[2]}"
kill -USR1 "${AGENTS[0]}"
wait_for "$job: node 0 did not pause" 10 grep -q '^step pause' "$W/$job.0.out"
kill -9 "${AGENTS[2]}"
wait "${AGENTS[2]}" 2>/dev/null || true
wait_for "$job: not aborted on the living nodes" 30 all_closed $job 2 aborted
for i in 0 1; do
	grep -q '^step abort .*node n2 left the job' "$W/$job.$i.out" ||
		fail "$job: node $i was not told why it aborted"
done
stop_agents
echo "check-cluster: a node whose lease ends aborts the incident everywhere"

# ---- two daemons of one name (a cloned image's hostname), an operator's put ----
job=twin
LOG=$W/$job.
start_agents $job 2 --fail never
key_field() {	# node field: of the node's key of the job, as etcd holds it
	ctl get "/hbmguard/v1/jobs/$job/nodes/$1" -w json | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"
}
# n1's daemon killed and started again within LeaseTTL: its old key, under
# the old lease, read before its own put: not another writer
old_lease=$(key_field n1 lease)
kill -9 "${AGENTS[1]}"
wait "${AGENTS[1]}" 2>/dev/null || true
"$AGENT" --endpoint $EP --plain --node n1 --job $job --rank 1 --world 2 --ttl 10 \
	>"$W/$job.1.out" 2>"$W/$job.1.err" &
AGENTS[1]=$!
PIDS+=($!)
put_again() { [ -n "$(key_field n1 lease)" ] && [ "$(key_field n1 lease)" != "$old_lease" ]; }
wait_for "$job: n1 started again did not put its key" 20 put_again
"$AGENT" --endpoint $EP --plain --node n1 --job $job --rank 2 --world 3 --ttl 10 \
	>"$W/$job.twin.out" 2>"$W/$job.twin.err" &
AGENTS+=($!)
PIDS+=($!)
twins_said() {
	grep -q 'nodes/n1) put by another writer .*another hbmguardd named n1' "$W/$job.1.err" &&
		grep -q 'nodes/n1) put by another writer .*another hbmguardd named n1' "$W/$job.twin.err"
}
wait_for "$job: the two daemons named n1 did not both say so" 20 twins_said
settled=$(key_field n1 mod_revision)
sleep 3
[ "$(key_field n1 mod_revision)" = "$settled" ] ||
	fail "$job: the two daemons named n1 went on writing its key"
for f in 1.err twin.err; do
	[ "$(grep -c 'put by another writer' "$W/$job.$f")" = 1 ] ||
		fail "$job: a daemon named n1 said it more than once: $(cat "$W/$job.$f")"
done
! grep -q 'another writer' "$W/$job.0.err" || fail "$job: n0 took n1's twin for its own"
ctl put "/hbmguard/v1/jobs/$job/nodes/n0" '{"ranks":[0],"world_size":2}' >/dev/null
wait_for "$job: n0 did not say an operator put its key" 10 \
	grep -q "nodes/n0) put by another writer (lease 0, .*an etcd user's" "$W/$job.0.err"
stop_agents
echo "check-cluster: a daemon started again within LeaseTTL puts its key over its old one, said by" \
	"no one; two daemons of one node name both say so, once, and stop writing its key; an" \
	"operator's put of a node's key is said"

# ---- an operator's del --prefix of an incident's step: it closes, the next resumes ----
job=wedged
LOG=$W/$job.
start_agents $job 2 --timeout 3
kill -STOP "${AGENTS[1]}"
kill -USR1 "${AGENTS[0]}"
wait_for "$job: node 0 did not pause" 10 grep -q '^step pause' "$W/$job.0.out"
# the trailing slash: the step goes, the incident key stays
ctl del --prefix "/hbmguard/v1/jobs/$job/incident/" >/dev/null
kill -CONT "${AGENTS[1]}"
wait_for "$job: the incident without its step not ended on both nodes" 30 all_closed $job 2 aborted
incident_gone() { [ -z "$(ctl get "/hbmguard/v1/jobs/$job/incident" --keys-only)" ]; }
wait_for "$job: the incident without its step never closed" 10 incident_gone
cat "$W/$job.0.err" "$W/$job.1.err" | grep -q 'its step key gone: closing it' ||
	fail "$job: no node said why it closed the incident"
kill -USR1 "${AGENTS[0]}"
wait_for "$job: the next incident did not resume on both nodes" 30 all_closed $job 2 resumed
stop_agents
echo "check-cluster: an incident whose step an operator deleted aborts and is closed (its key's" \
	"create_revision, value and step key compared); the job's next incident resumes"

# ---- etcd restarted while a node is away, and compacted past its watch ----
stop_etcd() { kill "$ETCD"; wait "$ETCD" 2>/dev/null || true; }
reached() { [ "$(grep -c 'etcd reached' "$1")" -ge "$2" ]; }
job=restart
LOG=$W/$job.
# leases of 30 s: node 1 stopped across etcd's restart and a compaction of
# 32 MB of keys, on a loaded host, must not be a node gone (CI: 10 s ended)
TTL=30 start_agents $job 2
# A writer's keys sorting before jobs/, more than fill the read's first page
# (1000 keys), written first (node 1 stopped for as short as can be:
# its lease is 10 s): node 1's read below must page on past them to find
# the incident and the job's nodes.  Of 13000 bytes each, a page of 1000
# is past what a reply may be (16 MiB, base64): the read asks for fewer.
x=$(head -c 13000 /dev/zero | tr '\0' x)
for ((b = 0; b < 25; b++)); do
	for ((k = 0; k < 100; k++)); do printf 'put /hbmguard/v1/aa/%04d %s\n' $((b * 100 + k)) $x; done |
		{ echo; cat; echo; echo; } | ctl txn >/dev/null
done
[ "$(ctl get --prefix --keys-only /hbmguard/v1/aa/ | grep -c .)" = 2500 ] ||
	fail "$job: the junk keys were not written"
# node 1 away (stopped) across etcd's restart: its watch ends, unseen
kill -STOP "${AGENTS[1]}"
stop_etcd
start_etcd 0 --listen-client-urls $EP --advertise-client-urls $EP
wait_for "etcd did not start again" 20 ctl endpoint health
wait_for "$job: node 0 did not come back" 20 reached "$W/$job.0.err" 2
grep -q 'etcd unreachable' "$W/$job.0.err" || fail "$job: node 0 did not see etcd go"
# an incident opened meanwhile, the revisions it made compacted away
kill -USR1 "${AGENTS[0]}"
wait_for "$job: node 0 did not pause" 10 grep -q '^step pause' "$W/$job.0.out"
rev=$(revision)
ctl compact "$rev" >/dev/null
kill -CONT "${AGENTS[1]}"
wait_for "$job: not resumed on both after etcd's restart" 30 all_closed $job 2 resumed
# (the resumed watch's check of what it had reached, compacted, or the
# watch's own cancel, whichever etcd answers first)
grep -q 'canceled (compacted to [0-9]*): reading /hbmguard/ again\|which the watch had reached, compacted past or ahead (.*): reading /hbmguard/ again' \
	"$W/$job.1.err" || fail "$job: node 1's watch did not read again after the compaction"
grep -q 'a reply over 16777216 bytes' "$W/$job.1.err" || fail "$job: node 1's pages were not too big"
# read again at once, not after a backoff: that is for an endpoint that
# keeps saying so before a read is in (daemon/etcd.c restart_from_now())
read_later() { grep -q 'read again before the last read of it was in' "$@"; }
! read_later "$W/$job.1.err" || fail "$job: node 1 waited to read again"
# node 0, there throughout, resumed where it was: its check found etcd's history its own
! grep -q 'reading /hbmguard/ again' "$W/$job.0.err" || fail "$job: node 0 read again"
stop_agents
ctl del --prefix /hbmguard/v1/aa/ >/dev/null
echo "check-cluster: a watch resumes after etcd's restart, reads again past a compaction," \
	"paging past 2500 keys of 13 kB (pages made smaller); no incident lost"

# etcd stopped, started again from a snapshot (a data dir of its own, N)
restore_etcd() {	# snapshot N
	stop_etcd
	ETCDCTL_API=3 etcdctl snapshot restore "$1" --data-dir "$W/etcd$2" --name t \
		--initial-cluster t=http://127.0.0.1:$((PORT + 10)) \
		--initial-advertise-peer-urls http://127.0.0.1:$((PORT + 10)) >/dev/null 2>&1 ||
		fail "$job: etcdctl snapshot restore"
	start_etcd "$2" --listen-client-urls $EP --advertise-client-urls $EP
	wait_for "etcd did not start from the snapshot" 20 ctl endpoint health
}

# ---- etcd's store gone back: restored from a snapshot of before ----
# The nodes' watches had reached revisions the restored store is below: each
# reads again from now (else events at the revisions below, the second
# incident's, would never come) and the next incident resumes on both.
job=back
LOG=$W/$job.
start_agents $job 2
ctl snapshot save "$W/back.db" >/dev/null
kill -USR1 "${AGENTS[0]}"
wait_for "$job: the first incident not resumed" 30 all_closed $job 2 resumed
restore_etcd "$W/back.db" 2
behind() { grep -q 'behind the [0-9]* the watch had reached: reading /hbmguard/ again' "$1"; }
for i in 0 1; do
	wait_for "$job: node $i did not see etcd's revision go back" 30 behind "$W/$job.$i.err"
done
kill -USR1 "${AGENTS[1]}"
wait_for "$job: the incident after the restore not resumed on both" 30 closed_n $job 2 2
! read_later "$W/$job.0.err" "$W/$job.1.err" || fail "$job: a node waited to read again"
stop_agents
echo "check-cluster: etcd's store restored from a snapshot: read again, the next incident resumes"

# ---- etcd's store gone back, then written past where a node's watch was ----
# Node 1, stopped, does not see etcd go back; an incident opens in the new
# history at revisions node 1's watch had already passed, and junk keys
# outside /hbmguard/ take the revision past it.  Resumed from where it was,
# its watch would never bring the incident (node 0 would wait on node 1's
# acknowledgement until the deadline): its check of the key count at that
# revision differs, and it reads again.
job=past
LOG=$W/$job.
t0=$SECONDS
TTL=30 start_agents $job 2
ctl snapshot save "$W/past.db" >/dev/null
kill -USR1 "${AGENTS[0]}"
wait_for "$job: the first incident not resumed" 30 all_closed $job 2 resumed
reached=$(revision)
kill -STOP "${AGENTS[1]}"
restore_etcd "$W/past.db" 3
wait_for "$job: node 0 did not see etcd's revision go back" 30 behind "$W/$job.0.err"
kill -USR1 "${AGENTS[0]}"
paused_twice() { [ "$(grep -c '^step pause' "$W/$job.0.out")" = 2 ]; }
wait_for "$job: node 0 did not pause again" 10 paused_twice
[ "$(revision)" -le "$reached" ] || fail "$job: the incident is not at revisions node 1 passed"
until [ "$(revision)" -gt "$reached" ]; do ctl put /junk/past x >/dev/null; done
kill -CONT "${AGENTS[1]}"
wait_for "$job: the incident after the restore not resumed on both" 30 closed_n $job 2 2
grep -q "at revision [0-9]*, not the history the watch saw (.*): reading /hbmguard/ again" \
	"$W/$job.1.err" || fail "$job: node 1 did not see another history"
! read_later "$W/$job.0.err" "$W/$job.1.err" || fail "$job: a node waited to read again"
stop_agents
ctl del /junk/past >/dev/null
echo "check-cluster: etcd's store restored, then written past a stopped node's watch:" \
	"its check sees another history, it reads again, the next incident resumes ($((SECONDS - t0)) s)"

# ---- etcd gone before the error: the job's ranks on this node abort at the deadline ----
job=nolink
LOG=$W/$job.
start_agents $job 2 --timeout 2
stop_etcd
wait_for "$job: node 0 did not see etcd go" 20 grep -q 'etcd unreachable' "$W/$job.0.err"
kill -USR1 "${AGENTS[0]}"
wait_for "$job: node 0 did not abort without etcd" 20 \
	grep -q '^step abort .*etcd unreachable' "$W/$job.0.out"
stop_agents
echo "check-cluster: without etcd, an error aborts the node's ranks at the deadline (no hang)"

# ---- TLS, client certificates required ----
C=$W/pki
mkdir -p "$C"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=hbm-test-ca \
	-keyout "$C/ca.key" -out "$C/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$C/server.key" \
	-out "$C/server.csr" 2>/dev/null
openssl x509 -req -in "$C/server.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial \
	-days 1 -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n') \
	-out "$C/server.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=hbmguardd -keyout "$C/client.key" \
	-out "$C/client.csr" 2>/dev/null
openssl x509 -req -in "$C/client.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial \
	-days 1 -extfile <(printf 'extendedKeyUsage=clientAuth\n') -out "$C/client.crt" 2>/dev/null
EPS=https://127.0.0.1:$PORT
start_etcd 1 --listen-client-urls $EPS --advertise-client-urls $EPS \
	--cert-file "$C/server.crt" --key-file "$C/server.key" --client-cert-auth \
	--trusted-ca-file "$C/ca.crt"
tctl() { ctl --cacert "$C/ca.crt" --cert "$C/client.crt" --key "$C/client.key" "$@"; }
wait_for "etcd with TLS did not start" 20 tctl endpoint health
LOG=$W/tls.
for i in 0 1; do
	"$AGENT" --endpoint $EPS --cert "$C/client.crt" --key "$C/client.key" --ca "$C/ca.crt" \
		--node n$i --job tls --rank $i --world 2 >"$W/tls.$i.out" 2>"$W/tls.$i.err" &
	PIDS+=($!)
	eval T$i=$!
done
# no client certificate: etcd refuses the handshake, nothing is published
"$AGENT" --endpoint $EPS --ca "$C/ca.crt" --node intruder --job tls >"$W/tls.x.out" \
	2>"$W/tls.x.err" &
PIDS+=($!)
tls_n() { [ "$(tctl get --prefix --keys-only /hbmguard/v1/jobs/tls/nodes/ | grep -c .)" = 2 ]; }
wait_for "tls: 2 nodes not published" 30 tls_n
kill -USR1 "$T0"
tls_done() { grep -q '^closed resumed' "$W/tls.0.out" && grep -q '^closed resumed' "$W/tls.1.out"; }
wait_for "tls: not resumed" 30 tls_done
wait_for "tls: the intruder was not refused" 10 grep -q 'alert bad certificate' "$W/tls.x.err"
! tctl get --prefix --keys-only /hbmguard/ | grep -q intruder || fail "tls: the intruder published"
echo "check-cluster: TLS with client certificates; none, refused"

# libcurl is loaded by the first etcd_new() (daemon/curl_dl.h): without it
# the link does not start and says why (the library hidden from this
# process alone, in a mount namespace of its own).
LOG=
curl_lib=$(ldconfig -p | sed -n 's/.*libcurl\.so\.4 (libc6,x86-64) => //p' | head -n 1)
[ -n "$curl_lib" ] || fail "no libcurl.so.4 in the linker cache"
: >"$W/empty.so"
rc=0
unshare -m sh -c 'mount --bind "$1" "$2" && exec "$3" --endpoint "$4" --node n0 --job nolib' \
	sh "$W/empty.so" "$curl_lib" "$AGENT" "$EPS" >"$W/nolib.out" 2>"$W/nolib.err" || rc=$?
{ [ $rc = 1 ] && grep -q "libcurl cannot be loaded: .*libcurl\.so\.4" "$W/nolib.err"; } ||
	fail "no libcurl: exit status $rc, said: $(cat "$W/nolib.err")"
echo "check-cluster: without libcurl, the link says so and does not start"

echo "check-cluster: passed"
