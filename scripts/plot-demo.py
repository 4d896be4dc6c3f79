# SPDX-License-Identifier: GPL-2.0
"""make demo's plot: training progress against wall time, for the DDP job
without a fault and through one, met by hbmguard and by checkpoint-restart.

    python3 plot-demo.py DIR PNG

DIR is what tests/system/ddp_compare.sh left (clean/, hbmguard/, ...).
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../tests/system"))
import ddp_runs  # noqa: E402

top, png = sys.argv[1], sys.argv[2]
RUNS = [("clean", "no fault", "0.6"), ("hbmguard", "UE, hbmguard", "tab:green"),
        ("ckpt-warm", "UE, checkpoint-restart (warm)", "tab:orange"),
        ("ckpt-cold", "UE, checkpoint-restart (cold)", "tab:red")]

fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
for run, label, colour in RUNS:
    if not os.path.isdir(os.path.join(top, run)):
        continue
    result, _, rows = ddp_runs.load(top, run)
    t0 = result["start_time"]
    points = [(t - t0, step, rec) for t, step, _, rec in rows]
    # A restart starts a new line from its checkpoint; dashed: the fall back.
    prev = None
    for attempt in sorted({p[2] for p in points}) if run != "hbmguard" else [None]:
        seg = [p for p in points if attempt is None or p[2] == attempt]
        if attempt and prev:
            ax.plot([prev[-1][0], seg[0][0]], [prev[-1][1], seg[0][1]], "--",
                    color=colour, linewidth=0.8)
        ax.plot([p[0] for p in seg], [p[1] for p in seg], ".-", color=colour,
                label=label if not attempt else None, markersize=3, linewidth=1.2)
        prev = seg
    if result.get("fault_time"):
        ax.axvline(result["fault_time"] - t0, color=colour, linestyle=":", linewidth=1)
ax.set_xlabel("wall time since the job started (s); dotted: the UE; dashed: back to the checkpoint")
ax.set_ylabel("training steps committed")
ax.set_title("4-rank DDP job, rank 2's weights on a simulated GPU that loses a page")
ax.grid(alpha=0.3)
ax.legend(loc="lower right")
fig.tight_layout()
fig.savefig(png)
print("wrote %s" % png)
