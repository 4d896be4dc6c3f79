# SPDX-License-Identifier: GPL-2.0
"""Tier 3's verdict on the job of two nodes (guest.sh cluster_runs): what a
user of hbmguard would check, as "ok"/"not ok" lines.

    python3 cluster_verdict.py PHASE SHARE

SHARE holds each node's runs of the job as train.py left them, SHARE/NODE/RUN
(ranks 0 and 1 on node1, 2 and 3 on node2; each node's launcher its own
result.json, its first rank its own progress.csv), and what each node's
hbmctl --json incidents said after them (SHARE/NODE/incidents.json).  The runs:
clean/ (no fault) and ue/ (a UE under rank 2, on node 2).
"""
import json
import os
import sys

import ddp_runs

phase, share = sys.argv[1], sys.argv[2]
NODES = ("node1", "node2")
WORLD = 4


def check(name, ok, *show):
    print("%s %s %s" % ("ok" if ok else "not ok", phase, name))
    if not ok:
        for s in show:
            print("#   %s" % json.dumps(s)[:400])


class Job:
    """One run of the job, both nodes' parts of it put together."""

    def __init__(self, name):
        self.name = name
        self.parts = {}
        for node in NODES:
            try:
                self.parts[node] = ddp_runs.load(os.path.join(share, node), name, world=WORLD)
            except OSError:
                self.parts[node] = None
        # each rank's report from the node that ran it (the other has none)
        self.ranks = [next((p.ranks[i] for p in self.parts.values()
                            if p and p.ranks[i] is not None), None) for i in range(WORLD)]

    def results(self):
        return {n: p and p.result for n, p in self.parts.items()}

    def finished(self):
        """Both nodes' launchers saw their ranks end with status 0, and every
        rank reported."""
        return all(p and p.result["exits"] == [["exit 0"]] for p in self.parts.values()) and \
            None not in self.ranks

    def starts(self):
        """rank -> the pids it started as, from both nodes."""
        by_rank = {r: [] for r in range(WORLD)}
        for node in NODES:
            try:
                with open(os.path.join(share, node, self.name, "starts")) as f:
                    for line in f:
                        r, pid, _ = line.split()
                        by_rank[int(r)].append(int(pid))
            except OSError:
                pass
        return by_rank

    def steps(self, node):
        """The steps node's first rank committed, in order."""
        p = self.parts[node]
        return [row[1] for row in p.rows] if p else []

    def timed_out(self):
        return [n for n, p in self.parts.items() if p and p.result.get("timed_out")]


def incidents(node, job):
    try:
        with open(os.path.join(share, node, "incidents.json")) as f:
            return [i for i in json.load(f) if i["job"] == job]
    except (OSError, ValueError):
        return None


clean = Job("clean")
check("cluster: the fault-free run finished on both nodes", clean.finished(),
      clean.results(), clean.ranks)
check("... ranks 0 and 1 ran on node1, 2 and 3 on node2",
      [r and r["node"] for r in clean.ranks] == ["node1", "node1", "node2", "node2"],
      [r and r["node"] for r in clean.ranks])
check("... each rank's TORCHELASTIC_RUN_ID is the job's name (torchrun --rdzv_id)",
      [r and r["run_id"] for r in clean.ranks] == ["cluster-clean"] * WORLD,
      [r and r["run_id"] for r in clean.ranks])
check("... every rank registered with its node's hbmguardd",
      None not in clean.ranks and all(r["protected"] for r in clean.ranks), clean.ranks)
# (each rank's BatchNorm statistics are its own batches': DDP broadcasts
# rank 0's before each forward, not after the last)
check("... the four ranks' weights and scaler state bitwise equal (DDP across the link)",
      None not in clean.ranks and len({r["weights"] for r in clean.ranks}) == 1,
      [r and r["weights"] for r in clean.ranks])
check("... each node's first rank committed every step once, in order",
      all(clean.steps(n) == list(range(1, clean.ranks[0]["steps"] + 1)) for n in NODES)
      if clean.ranks[0] else False, {n: clean.steps(n) for n in NODES})

# ---- a UE under rank 2, on node 2: one incident across both nodes ----
ue = Job("ue")
node2 = ue.parts["node2"]
check("cluster, UE under rank 2: the fault went in on node 2",
      node2 is not None and node2.result["fault_time"] is not None and
      ue.parts["node1"] is not None and ue.parts["node1"].result["fault_time"] is None,
      ue.results())
check("... every rank on both nodes finished", ue.finished(), ue.results(), ue.ranks)
starts = ue.starts()
check("... no process restarted (one start per rank, the same pid at the end)",
      None not in ue.ranks and
      all(starts[r] == [ue.ranks[r]["pid"]] for r in range(WORLD)), starts, ue.ranks)
check("... rank 2's weights were really lost",
      ue.ranks[2] is not None and ue.ranks[2]["lost_pages"] >= 1, ue.ranks[2])
check("... all four ranks paused, restored and resumed: one incident, the step run again",
      None not in ue.ranks and all(len(r["incidents"]) == 1 and r["incidents"][0][1] == 2 and
                                   r["rerun"] == 1 for r in ue.ranks), ue.ranks)
check("... no step lost on either node (every step committed once, in order)",
      None not in ue.ranks and
      all(ue.steps(n) == list(range(1, ue.ranks[0]["steps"] + 1)) for n in NODES),
      {n: ue.steps(n) for n in NODES})
check("... final weights, scaler state and buffers bitwise equal to the fault-free run's",
      None not in ue.ranks + clean.ranks and
      len({r["weights"] for r in ue.ranks + clean.ranks}) == 1 and
      [r["buffers"] for r in ue.ranks] == [r["buffers"] for r in clean.ranks],
      [r and r["weights"] for r in ue.ranks + clean.ranks])
for node in NODES:
    mine = incidents(node, "cluster-ue")
    check("... %s's hbmctl incidents shows the job's one incident, resumed" % node,
          mine is not None and len(mine) == 1 and mine[0]["state"] == "resumed" and
          mine[0]["failed_rank"] == 2, mine)

late = [(name, job.timed_out()) for name, job in (("clean", clean), ("ue", ue))
        if job.timed_out()]
check("cluster: no run reached its wall-clock limit (a hang)", not late, late)
