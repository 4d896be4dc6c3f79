# SPDX-License-Identifier: GPL-2.0
"""What a run of train.py left in its directory, read one way for the
verdict (ddp_verdict.py), the report (ddp_report.py) and the plot
(scripts/plot-demo.py)."""
import json
import os
from collections import namedtuple

# result: the launcher's result.json; ranks: each rankN.json, or None for a
# rank that did not finish; rows: (wall time, step, loss, recoveries so
# far) per committed step.
Run = namedtuple("Run", "result ranks rows")


def load(top, name, world=4):
    d = os.path.join(top, name)
    with open(os.path.join(d, "result.json")) as f:
        result = json.load(f)
    ranks = []
    for i in range(world):
        try:
            with open(os.path.join(d, "rank%d.json" % i)) as f:
                ranks.append(json.load(f))
        except OSError:
            ranks.append(None)
    try:
        with open(os.path.join(d, "progress.csv")) as f:
            rows = [(float(t), int(step), float(loss), int(rec))
                    for t, step, loss, rec in (line.split(",") for line in f.read().split())]
    except OSError:
        rows = []
    return Run(result, ranks, rows)


def per_step(rows, turns=1, turn=0):
    """The median wall time between two committed steps (rank 0's), or None;
    of the steps of one turn (train.py --rotate): step numbers s, counted
    from 1, with (s - 1) % turns == turn."""
    gaps = sorted(b[0] - a[0] for a, b in zip(rows, rows[1:]) if (b[1] - 1) % turns == turn)
    return gaps[len(gaps) // 2] if gaps else None
