#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make bench's two-node rows: the 4-rank DDP job over two nodes (tier 3's
two-node run, tests/system/run.sh KVER cluster) through a UE under rank 2,
beside the same job on one node (the bench guest's rows, in LOG).

    cluster-ddp.py SHARE LOG

SHARE is what the two nodes left (build/logs/tier3-cluster-share):
NODE/ue/ (train.py's run, as ddp_runs.load() reads it) and
NODE/incidents.json (hbmctl --json incidents).  Fault -> training resumed
is measured as ddp_report.py measures it on one node, on node 2 (the
fault's): from train.py's fault_time to its first step committed after the
recovery.  The incident's pausing -> resumed is each daemon's own record
(the guests' clocks differ: no time of one node is taken from another's);
the row is the later of the two nodes.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "system"))
import ddp_runs  # noqa: E402

share, log = sys.argv[1], sys.argv[2]


def one_node(figure):
    """The bench guest's row of @figure in LOG: its value, or None."""
    value = None
    with open(log, errors="replace") as f:
        for line in f:
            fields = line[line.find("@bench\t"):].rstrip("\n").split("\t")
            if line.find("@bench\t") >= 0 and len(fields) > 2 and fields[1] == figure:
                value = fields[2]
    return value


def row(figure, value, anchor_figure):
    anchor = one_node(anchor_figure)
    print("@bench\tDDP job over two nodes: %s\t%.3f\ts\t%s\t%s\t-"
          % (figure, value, "the same job on one node" if anchor else "-", anchor or "-"))


ue = ddp_runs.load(os.path.join(share, "node2"), "ue")
after = [r for r in ue.rows if r[3] > 0]
if after:
    row("fault -> training resumed, hbmguard", after[0][0] - ue.result["fault_time"],
        "DDP job: fault -> training resumed, hbmguard")
else:
    print("cluster-ddp.py: node 2's run committed no step after the recovery", file=sys.stderr)
spans = []
for node in ("node1", "node2"):
    with open(os.path.join(share, node, "incidents.json")) as f:
        spans += [(x["at_us"]["resumed"] - x["at_us"]["pausing"]) / 1e6
                  for x in json.load(f)
                  if x["job"] == "cluster-ue" and "pausing" in x["at_us"] and
                  "resumed" in x["at_us"]]
if len(spans) == 2:
    row("incident pausing -> resumed (each daemon's record, the later node)", max(spans),
        "DDP job: incident pausing -> resumed (hbmguardd's record), hbmguard")
else:
    print("cluster-ddp.py: not one resumed incident of cluster-ue on each node",
          file=sys.stderr)
