#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench's cluster rows, on this host (no guest): a job's incident
# across N simulated nodes and one etcd (tests/cluster/run.sh --bench),
# error -> every node's ranks told to pause, and -> resumed on every node
# (the four steps, each acknowledged by all), the median of three runs per
# N, beside etcd's own put -> watch latency through the same gateway.
# Goals (issue 14): flat in N (64 nodes within 2x of 2), within 3x of the
# floor.  Every agent is a process of this 2-core host: at 64 they take
# turns on its cores, which is what the 64-node rows measure beside etcd.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
HBM_CLUSTER_BENCH=$out "$TOP/tests/cluster/run.sh" --bench >/dev/null
/usr/bin/python3 - "$out" <<'PY'
import statistics, sys
runs, floor = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "floor":
        floor = float(f[1])
    else:
        runs.setdefault(int(f[0]), []).append((float(f[1]), float(f[2])))
med = {n: (statistics.median(p for p, _ in r), statistics.median(q for _, q in r))
       for n, r in sorted(runs.items())}
for n, (paused, resumed) in med.items():
    print("@bench\tcluster incident, %d nodes: error -> all paused\t%.1f\tms\t"
          "etcd put -> watch (floor)\t%.1f\t<= 3x" % (n, paused, floor))
for n, (paused, resumed) in med.items():
    if n != 2:
        print("@bench\tcluster incident, %d nodes: error -> all resumed\t%.1f\tms\t"
              "at 2 nodes\t%.1f\t<= 2x" % (n, resumed, med[2][1]))
PY
