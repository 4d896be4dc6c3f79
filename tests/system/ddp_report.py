# SPDX-License-Identifier: GPL-2.0
"""The DDP job's fault, met by hbmguard and by checkpoint-restart: the
incident's timeline and the comparison, from runs of train.py.

    python3 ddp_report.py DIR

DIR holds clean/ (no fault), overhead/ (no fault, train.py --rotate: the
Guard's cost per step) and any of hbmguard/, replaced/ (rank 2's process unable to
continue, replaced under hbmguard.run), ckpt-warm/, ckpt-cold/ (the same UE
under rank 2 mid-training).  Prints the report and writes DIR/summary.json.
"""
import json
import os
import subprocess
import sys

import ddp_runs

top = sys.argv[1]
RUNS = [("hbmguard", "hbmguard"), ("replaced", "hbmguard, rank replaced"),
        ("ckpt-cold", "checkpoint-restart (cold)"), ("ckpt-warm", "checkpoint-restart (warm)")]


def said_against(what, took, other, name):
    """what took against other's name, as a reader reads it: "20x faster",
    or slower where it is (a warm restart, its imports spared, can be)."""
    if took <= other:
        return "%s %.*fx faster than %s" % (what, 0 if other / took >= 10 else 1,
                                             other / took, name)
    return "%s %.1fx slower than %s" % (what, took / other, name)


def load(name):
    run = ddp_runs.load(top, name)
    run.result["rows"] = run.rows
    run.result["weights"] = {r and r["weights"] for r in run.ranks}
    try:
        with open(os.path.join(top, name, "starts")) as f:
            run.result["starts"] = f.read().split("\n")[:-1]
    except OSError:
        run.result["starts"] = []
    return run.result



def measure(r, reference):
    """Fault -> the first step committed after the recovery; steps re-run."""
    after = [row for row in r["rows"] if row[3] > 0]
    before = [row for row in r["rows"] if row[3] == 0]
    resumed = after[0][0] - r["fault_time"] if after else None
    if r["mode"] in ("hbmguard", "replace"):
        rerun = after[0][3] if after else None
    else:                       # committed before the restart, done again after it
        rerun = before[-1][1] - (after[0][1] - 1) if after and before else None
    if r["mode"] == "replace":  # hbmguard.run's newcomers
        restarted = len(r["starts"]) - 4
    else:
        restarted = sum(len(s) for s in r["started"][1:])
    finished = r["exits"][-1] == (["exit 0"] if r["mode"] == "replace" else ["exit 0"] * 4)
    return {"resumed_s": resumed, "steps_rerun": rerun, "restarted": restarted,
            "wall_s": r["wall"], "finished": finished,
            "bitwise_equal": r["weights"] == reference}


clean = load("clean")
summary = {}
for run, _ in RUNS:
    if os.path.isdir(os.path.join(top, run)):
        summary[run] = measure(load(run), clean["weights"])

if "hbmguard" in summary:
    hg = load("hbmguard")
    incidents = json.loads(subprocess.run(["hbmctl", "--json", "incidents"], check=True,
                                          capture_output=True, text=True).stdout)
    x = [i for i in incidents if i["job"] == "ddp-demo"][-1]
    fault = hg["fault_time"]
    print("Incident %d: UE at %s offset %#x, under rank %d's weights (step %d)"
          % (x["id"], x["device"], x["offset"], x["failed_rank"], hg["fault_step"]))
    print("  %-26s %+9.3f s" % ("hbmctl inject returned", 0))
    for state, us in x["at_us"].items():
        print("  %-26s %+9.3f s" % (state, us / 1e6 - fault))
    first = [row for row in hg["rows"] if row[3] > 0][0]
    print("  %-26s %+9.3f s" % ("step %d committed" % first[1], first[0] - fault))
    summary["incident"] = {k: v / 1e6 - fault for k, v in x["at_us"].items()}
    print()
    if os.environ.get("HBMGUARD_BENCH_ROWS") and "resumed" in x["at_us"]:
        # beside the same job over two nodes (tests/bench/cluster-ddp.py)
        print("@bench\tDDP job: incident pausing -> resumed (hbmguardd's record), hbmguard\t"
              "%.3f\ts\t-\t-\t-" % ((x["at_us"]["resumed"] - x["at_us"]["pausing"]) / 1e6))

cols = [(run, name) for run, name in RUNS if run in summary]
print("%-30s" % "" + "".join("%-28s" % name for _, name in cols))


def row(label, fmt):
    print("%-30s" % label + "".join("%-28s" % fmt(summary[run]) for run, _ in cols))


row("fault -> training resumed", lambda m: "%.2f s" % m["resumed_s"] if m["resumed_s"] else "-")
row("steps run again", lambda m: "%s" % m["steps_rerun"])
row("processes restarted", lambda m: "%d" % m["restarted"])
row("job finished", lambda m: "yes" if m["finished"] else "NO")
row("final weights == fault-free", lambda m: "bitwise" if m["bitwise_equal"] else "last bits differ (*)")
row("job wall time", lambda m: "%.1f s" % m["wall_s"])
if any(not summary[run]["bitwise_equal"] for run, _ in cols if run != "hbmguard"):
    print("(*) a fresh DDP's first step reduces its gradients in another order than")
    print("    a running one's: training continues, but not bit for bit")
if "hbmguard" in summary and summary["hbmguard"]["resumed_s"]:
    for run, name in cols[1:]:
        if run.startswith("ckpt") and summary[run]["resumed_s"]:
            print(said_against("hbmguard resumes", summary["hbmguard"]["resumed_s"],
                               summary[run]["resumed_s"], name))
            if os.environ.get("HBMGUARD_BENCH_ROWS"):    # make bench's table
                print("@bench\tDDP job: fault -> training resumed, hbmguard\t%.3f\ts\t%s\t%.3f\t%s"
                      % (summary["hbmguard"]["resumed_s"], name, summary[run]["resumed_s"],
                         "<= 0.05x" if "cold" in run else "-"))
if "replaced" in summary and "ckpt-cold" in summary and summary["replaced"]["resumed_s"] \
        and summary["ckpt-cold"]["resumed_s"]:
    replaced, cold = summary["replaced"]["resumed_s"], summary["ckpt-cold"]["resumed_s"]
    print(said_against("rank 2's process replaced, the job resumes", replaced, cold,
                       "checkpoint-restart (cold)"))
    if os.environ.get("HBMGUARD_BENCH_ROWS"):
        print("@bench\tDDP job: fault -> training resumed, rank 2's process replaced\t%.3f\ts\t"
              "checkpoint-restart (cold)\t%.3f\t<= 0.1x" % (replaced, cold))
if os.path.isdir(os.path.join(top, "overhead")):
    # train.py --rotate: its turns (ROTATION) in the same processes, under
    # the same load; the medians of each turn's steps
    rows = load("overhead")["rows"]
    plain, floor, default, closure = (ddp_runs.per_step(rows, 4, turn) for turn in range(4))
    if all((plain, floor, default, closure)):
        summary["guard_per_step_s"] = {"without": plain, "bare_all_reduce": floor,
                                       "with": default, "closure_steps": closure}

        def more(t):
            return "%+.1f ms (%+.1f%%)" % ((t - plain) * 1e3, (t / plain - 1) * 100)
        print("Per step, fault-free, the steps of one job taking turns under hbmguard.run:")
        print("  %.3f s without the Guard; with it, committing (its default) %s; "
              "closure_steps=True %s;" % (plain, more(default), more(closure)))
        print("  the floor of any check among the ranks, one bare all_reduce of the "
              "Guard's 8 bytes: %s" % more(floor))
        if os.environ.get("HBMGUARD_BENCH_ROWS"):
            for figure, t, goal in (
                    ("a step with the Guard (its default: it commits)", default, "<= 1.01x"),
                    ("a step with the Guard, closure_steps=True", closure, "-")):
                print("@bench\tDDP job: %s\t%.3f\ts\tthe same job's steps without it\t%.3f\t%s"
                      % (figure, t, plain, goal))
            print("@bench\tDDP job: the Guard's cost per step (its default)\t%.1f\tms\t"
                  "its floor: one bare all_reduce of 8 bytes\t%.1f\t-"
                  % ((default - plain) * 1e3, (floor - plain) * 1e3))
with open(os.path.join(top, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
