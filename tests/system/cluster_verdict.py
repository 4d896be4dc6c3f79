# SPDX-License-Identifier: GPL-2.0
"""Tier 3's verdict on the job of two nodes (guest.sh cluster_runs): what a
user of hbmguard would check, as "ok"/"not ok" lines.

    python3 cluster_verdict.py PHASE SHARE

SHARE holds each node's runs of the job as train.py left them, SHARE/NODE/RUN
(ranks 0 and 1 on node1, 2 and 3 on node2; each node's launcher its own
result.json, its first rank its own progress.csv), and what each node's
hbmctl --json incidents said after them (SHARE/NODE/incidents.json) and
its hbmguardd's journal (SHARE/NODE/hbmguardd.journal).  The runs: clean/ (no
fault), ue/ (a UE under rank 2, on node 2), then the escalations (guest.sh
cluster_train): etcd/ (etcd restarted before the UE), second/ (a second
error mid-incident), kill/ (node 2's hbmguardd killed mid-incident) and
noetcd/ (etcd stopped before the UE), each with light ranks (train.py
--light: no torch, no weights; each node's launcher forks its two ranks).
"""
import json
import os
import re
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


def ended_well(part):
    """Whether what a node's launcher started (torchrun, or its light
    ranks) ended with status 0, and was started once."""
    exits = part.result["exits"]
    return len(exits) == 1 and all(s == "exit 0" for s in exits[0])


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
        return all(p and ended_well(p) for p in self.parts.values()) and None not in self.ranks

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


def journal(node):
    try:
        with open(os.path.join(share, node, "hbmguardd.journal")) as f:
            return f.read().split("\n")
    except OSError:
        return []


def journal_has(node, pattern):
    """Whether a line of node's hbmguardd journal matches pattern (a regular
    expression, JOB standing for the job's name in etcd: UID.JOB)."""
    return any(re.search(pattern, line) for line in journal(node))


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
# [Cluster] on: an incident across nodes may take 4 x PauseTimeout +
# RestoreTimeout + KillTimeout + 10 s (recovery.c, the defaults: 30, 120,
# 10), which the Guard waits out, with its own 10 s, not the steps of one
# node (160 s)
check("... the Guard waits as long as an incident across nodes may take (RECOVERY_TIMES)",
      None not in clean.ranks and
      all(r["recovery_timeout"] == 4 * 30 + 120 + 10 + 10 + 10 for r in clean.ranks),
      [r and r["recovery_timeout"] for r in clean.ranks])
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


def across(node, what):
    """node's hbmctl incidents: the job's one incident's view across nodes,
    its step and, per node, the steps it acknowledged (as heard here)."""
    mine = incidents(node, what)
    c = mine[0].get("cluster") if mine and len(mine) == 1 else None
    return c and (c["step"], c["opener"],
                  {n["node"]: sorted(n["acked_ms"]) for n in c["nodes"]}), mine


STEPS = sorted(["pause", "isolate", "restore", "resume"])
got = across("node1", "cluster-ue")
check("... node1's hbmctl incidents shows it across nodes once closed: at resume, opened "
      "by node2, node1 acknowledging each step (node2's heard by node2 alone)",
      got[0] == ("resume", "node2", {"node1": STEPS, "node2": []}), got[1])


def recovered(job, what):
    """The checks of a run of light ranks the job survived: the UE run's
    above, but for the weights (the UE run shows the Guard's restore bit
    for bit): that the failed rank's memory was written again instead."""
    check("... every rank on both nodes finished", job.finished(), job.results(), job.ranks)
    starts = job.starts()
    check("... no process restarted, all four ranks recovered once from rank 2's error, "
          "the step run again",
          None not in job.ranks and
          all(starts[r] == [job.ranks[r]["pid"]] and len(job.ranks[r]["incidents"]) == 1 and
              job.ranks[r]["incidents"][0][1] == 2 and job.ranks[r]["rerun"] == 1
              for r in range(WORLD)), starts, job.ranks)
    check("... no step lost on either node (every step committed once, in order)",
          job.ranks[0] is not None and
          all(job.steps(n) == list(range(1, job.ranks[0]["steps"] + 1)) for n in NODES),
          {n: job.steps(n) for n in NODES})
    check("... rank 2's memory was lost, restored and written again; every rank's "
          "memory holds at the end what it wrote",
          None not in job.ranks and job.ranks[2]["lost_pages"] >= 1 and
          all(r["memory_intact"] for r in job.ranks), job.ranks)
    for node in NODES:
        mine = incidents(node, what)
        check("... %s's hbmctl incidents shows the job's one incident, resumed" % node,
              mine is not None and len(mine) == 1 and mine[0]["state"] == "resumed", mine)


# how a rank ends when its job is aborted: Aborted (train.py's ABORTED), or
# the daemon's SIGTERM to the failed rank, or the launcher's SIGKILL after it
ABORT_ENDS = {"exit 3", "signal SIGTERM", "signal SIGKILL"}


def aborted(job, why=None):
    """No rank of the run finished, the launchers said so: each ended as an
    abort ends (not a traceback's exit 1), each rank that reported was
    Aborted, and rank R's reason holds why[R] (a rank in why reported)."""
    return None not in job.parts.values() and \
        not any(ended_well(p) for p in job.parts.values()) and \
        all(set(e) <= ABORT_ENDS for p in job.parts.values() for e in p.result["exits"]) and \
        all(r is None or r["aborted"] for r in job.ranks) and \
        all(job.ranks[i] is not None and w in job.ranks[i]["aborted"]
            for i, w in (why or {}).items())


def escalated_here(node, what, reason):
    """node's hbmctl incidents: the job's incident escalated for reason."""
    mine = incidents(node, what)
    return mine is not None and len(mine) == 1 and mine[0]["state"] == "escalated" and \
        mine[0]["reason"] == reason, mine


def ran(job, node, key="ran"):
    """What node's launcher ran (--run-at, --at-held), each with its status."""
    p = job.parts[node]
    got = p and p.result.get(key)
    return [got] if key == "held" and got else list(got.values()) if got else []


# ---- etcd restarted during the watch, then a UE: the job still recovers ----
job = Job("etcd")
check("cluster, etcd restarted during the job's watch (node 1): it was",
      [(r["command"], r["status"]) for r in ran(job, "node1")] ==
      [("systemctl restart etcd", 0)], ran(job, "node1"))


def link_bounced(node):
    """node's journal: its link to etcd went down and came back after the
    job's ranks registered, before its incident opened."""
    lines = journal(node)
    first = next((i for i, line in enumerate(lines)
                  if re.search(r"rank \d/4 of job cluster-etcd registered", line)), None)
    opened = next((i for i, line in enumerate(lines)
                   if re.search(r"job \d+\.cluster-etcd: incident \w+ opened", line)), None)
    if first is None or opened is None:
        return False
    between = lines[first:opened]
    down = next((i for i, line in enumerate(between) if line.endswith("cluster: etcd unreachable")),
                None)
    return down is not None and any(line.endswith("cluster: etcd reached")
                                    for line in between[down:])


for node in NODES:
    check("... %s's hbmguardd lost etcd and reached it again (its journal)" % node,
          link_bounced(node), journal(node)[-30:])
recovered(job, "cluster-etcd")

# ---- a second error mid-incident (node 2, rank 3's device) ----
job = Job("second")
check("cluster, a second error mid-incident: it went in on node 2 while rank 2 held PAUSED",
      [r["status"] for r in ran(job, "node2", "held")] == [0], job.results())
check("... the job was aborted: no rank finished, ranks 0, 1 and 3 told so by their daemons",
      aborted(job, {i: "hbmguardd escalated incident" for i in (0, 1, 3)}),
      job.results(), job.ranks)
check("... node 2's hbmguardd escalated it (hbmctl incidents)",
      *escalated_here("node2", "cluster-second", "a second error during recovery"))
check("... node 1's hbmguardd aborted it for node 2's reason (hbmctl incidents)",
      *escalated_here("node1", "cluster-second", "node node2: a second error during recovery"))
got = across("node1", "cluster-second")
check("... and shows it across nodes at abort, node1 acknowledging the pause",
      got[0] and got[0][0] == "abort" and "pause" in got[0][2].get("node1", []), got[1])
check("... the reason is in node 1's journal",
      journal_has("node1", r"job \d+\.cluster-second: incident \w+ aborted: "
                  r"node node2: a second error during recovery$"))

# ---- node 2's hbmguardd killed mid-incident: its lease ends ----
job = Job("kill")
check("cluster, node 2's hbmguardd killed (SIGKILL) while rank 2 held PAUSED",
      [r["status"] for r in ran(job, "node2", "held")] == [0] and
      journal_has("node2", r"status=9/KILL"), job.results())
check("... node 1 aborted the incident as node 2's lease ended (its journal)",
      journal_has("node1", r"job \d+\.cluster-kill: incident \w+: aborting: "
                  r"node node2 left the job \(its lease ended\)$"), journal("node1")[-30:])
check("... node 1's hbmctl incidents says why",
      *escalated_here("node1", "cluster-kill", "node node2 left the job (its lease ended)"))
check("... node 1's ranks were told to abort by their hbmguardd, node 2's saw theirs gone",
      None not in job.ranks and
      all("hbmguardd escalated incident" in (r["aborted"] or "") for r in job.ranks[:2]) and
      all("hbmguardd went away" in (r["aborted"] or "") for r in job.ranks[2:]), job.ranks)
check("... the job was aborted: no rank finished", aborted(job), job.results(), job.ranks)

# ---- etcd stopped before the UE: the job aborts at the deadline ----
job = Job("noetcd")
check("cluster, etcd stopped before the UE (node 1): it was",
      ("systemctl stop etcd", 0) in [(r["command"], r["status"]) for r in ran(job, "node1")],
      ran(job, "node1"))


def link_state(node):
    try:
        with open(os.path.join(share, node, "noetcd", "status.json")) as f:
            return json.load(f)["cluster"]["state"]
    except (OSError, ValueError, KeyError) as e:
        return repr(e)


check("... hbmctl status on both nodes meanwhile: etcd unreachable",
      [link_state(n) for n in NODES] == ["unreachable"] * 2, [link_state(n) for n in NODES])
check("... node 2's hbmguardd aborted its ranks at the pause deadline (its journal)",
      journal_has("node2", r"job \d+\.cluster-noetcd: its incident not opened by the pause "
                  r"deadline after an error \(data lost on sim:sim2 at 0x24000 under rank 2\): "
                  r"etcd unreachable: aborting this node's ranks$"), journal("node2")[-30:])
check("... node 2's hbmctl incidents says why",
      *escalated_here("node2", "cluster-noetcd",
                      "not opened across nodes: etcd unreachable"))
check("... the job was aborted: no rank finished; node 1's ranks gave up waiting, "
      "rank 3 was told by its daemon",
      aborted(job, {0: "asked for no pause within its deadlines",
                    1: "asked for no pause within its deadlines",
                    3: "hbmguardd escalated incident"}), job.results(), job.ranks)

late = [(name, Job(name).timed_out()) for name in ("clean", "ue", "etcd", "second", "kill",
                                                    "noetcd") if Job(name).timed_out()]
check("cluster: no run reached its wall-clock limit (a hang)", not late, late)
