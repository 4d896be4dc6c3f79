# SPDX-License-Identifier: GPL-2.0
"""Tier 3's verdict on the DDP job (train.py): what a user of hbmguard
would check, as "ok"/"not ok" lines.

    python3 ddp_verdict.py PHASE DIR

DIR holds four runs of the same job: clean/ (no fault; hbmguardd restarted
under it), plain/ (no fault, no Guard), guarded/ (a UE under rank 2, hbmguardd running) and unguarded/
(the same fault, hbmguardd stopped); and short ones: one/ (a world of
one rank meets a UE), restart/ (hbmguardd restarted while a UE's
recovery waits for rank 2's PAUSED), commits-clean/ and commits/ (two
ranks, the Guard making the optimizer step after the step unscaled and
clipped; the second with a UE under rank 1), late/ (the same UE landing
after rank 1's step, before the Guard's check), shards/ (two ranks, no DDP:
each rank's weights its own), replace/ (the 12 steps under hbmguard.run, a
UE under rank 2 whose process cannot continue after it) and gone/ (hbmguardd stopped under the job,
then a UE under rank 2).
"""
import json
import pwd
import subprocess
import sys

import ddp_runs

phase, top = sys.argv[1], sys.argv[2]


def check(name, ok, *show):
    print("%s %s %s" % ("ok" if ok else "not ok", phase, name))
    if not ok:
        for s in show:
            print("#   %s" % json.dumps(s)[:400])


def load(name):
    run = ddp_runs.load(top, name)
    return run.result, run.ranks, [row[1] for row in run.rows]


clean, clean_ranks, clean_steps = load("clean")
res, ranks, steps = load("guarded")
bad, bad_ranks, _ = load("unguarded")
n = clean["steps"]
finished = ["exit 0"] * 4

check("DDP: the fault-free run finished", clean["exits"] == [finished] and
      None not in clean_ranks, clean)
check("DDP: hbmguardd restarted mid-job: every rank registered again",
      None not in clean_ranks and "daemon_restart" in clean and
      all(r["reconnects"] == 1 and r["protected"] for r in clean_ranks), clean, clean_ranks)
# PauseTimeout=40s, RestoreTimeout=100s (guest.sh) and DEADLINE_SLACK, not
# the daemon's defaults (30 s, 2 min): asked again at each registration
check("DDP: the Guard waits as long as hbmguardd's [Recovery] deadlines say",
      None not in clean_ranks and None not in ranks and
      all(r["recovery_timeout"] == 40 + 100 + 10 for r in clean_ranks + ranks),
      [r and r["recovery_timeout"] for r in clean_ranks + ranks])
plain = ddp_runs.load(top, "plain")
check("DDP: the Guard changes nothing of a fault-free run: weights, scaler state and "
      "buffers bitwise equal without it", plain.result["exits"] == [finished] and
      None not in plain.ranks + clean_ranks and
      [r["weights"] for r in plain.ranks] == [r["weights"] for r in clean_ranks] and
      [r["buffers"] for r in plain.ranks] == [r["buffers"] for r in clean_ranks],
      plain.result, plain.ranks)


with_guard, without = (ddp_runs.per_step(ddp_runs.load(top, "clean").rows) or float("nan"),
                       ddp_runs.per_step(plain.rows) or float("nan"))
print("# DDP per step, fault-free, 4 ranks under TCG: %.0f ms with the Guard, %.0f ms "
      "without (%+.1f%%; closure_steps=True: a copy of the state per step)" % (
          with_guard * 1e3, without * 1e3, (with_guard / without - 1) * 100))

check("DDP: every rank ran as the training user (hbmtrain), not root",
      None not in ranks + clean_ranks and
      {r["uid"] for r in ranks + clean_ranks} == {pwd.getpwnam("hbmtrain").pw_uid},
      [r and r.get("uid") for r in ranks + clean_ranks])
check("DDP: with the fault, every rank finished", res["exits"] == [finished] and
      None not in ranks, res)
check("DDP: no process restarted (same 4 PIDs)", len(res["started"]) == 1 and
      None not in ranks and [r["pid"] for r in ranks] == res["started"][0], res, ranks)
check("DDP: rank 2's weights were really lost (touches absorbed)",
      ranks[2] is not None and ranks[2]["lost_pages"] >= 1, ranks[2])
check("DDP: one incident, recovered, the interrupted step run again",
      None not in ranks and all(len(r["incidents"]) == 1 and r["incidents"][0][1] == 2 and
                                r["rerun"] == 1 for r in ranks), ranks)
check("DDP: no step lost (every step committed once, in order)",
      steps == list(range(1, n + 1)), steps)
check("DDP: the scaler skipped steps on overflow (AMP's skip path ran)",
      None not in clean_ranks and all(r["skipped"] >= 1 for r in clean_ranks), clean_ranks)
check("DDP: final weights and scaler state bitwise equal to the fault-free run",
      None not in ranks and None not in clean_ranks and
      len({r["weights"] for r in ranks + clean_ranks}) == 1,
      [r and r["weights"] for r in ranks + clean_ranks])
check("DDP: each rank's buffers (BatchNorm statistics) bitwise equal to the fault-free run's",
      None not in ranks and None not in clean_ranks and
      [r["buffers"] for r in ranks] == [r["buffers"] for r in clean_ranks],
      [r and r["buffers"] for r in ranks + clean_ranks])

incidents = json.loads(subprocess.run(["hbmctl", "--json", "incidents"], check=True,
                                      capture_output=True, text=True).stdout)
mine = [i for i in incidents if i["job"] == "ddp-demo"]
check("DDP: hbmctl incidents shows it resumed",
      len(mine) == 1 and mine[0]["state"] == "resumed" and mine[0]["failed_rank"] == 2 and
      mine[0]["device"] == "sim:sim2", incidents)

one = ddp_runs.load(top, "one", world=1)
check("DDP, world size 1: the UE ends the job with Aborted: no replica to restore from",
      one.result["exits"] == [["exit 3"]] and one.ranks[0] is not None and
      "no replica" in (one.ranks[0].get("aborted") or ""), one.result, one.ranks)
mine = [i for i in incidents if i["job"] == "ddp-one"]
check("... and hbmguardd escalated it as the rank left",
      len(mine) == 1 and mine[0]["state"] == "escalated" and
      mine[0]["reason"] == "a rank left during recovery", mine)

restart = ddp_runs.load(top, "restart")
check("DDP: hbmguardd restarted mid-recovery: every rank Aborted, or every rank "
      "finished; none died of an OSError", restart.result.get("held", {}).get("status") == 0 and
      None not in restart.ranks and
      restart.result["exits"][-1] in (["exit 0"] * 4, ["exit 3"] * 4) and
      all((r["aborted"] is None) == (e == "exit 0")
          for r, e in zip(restart.ranks, restart.result["exits"][-1])),
      restart.result, restart.ranks)
check("... and hbmguardd was active after it", restart.result.get("daemon_active"),
      restart.result)
check("... rank 2, whose answer found the daemon gone, says so",
      restart.ranks[2] is not None and
      "hbmguardd went away" in (restart.ranks[2].get("aborted") or ""), restart.ranks)
mine = [i for i in incidents if i["job"] == "ddp-restart"]
check("... and the restarted hbmguardd escalated the incident",
      len(mine) == 1 and mine[0]["state"] == "escalated" and
      mine[0]["reason"] == "hbmguardd restarted during recovery", mine)

commits_clean = ddp_runs.load(top, "commits-clean", world=2)
commits = ddp_runs.load(top, "commits", world=2)
check("DDP, the Guard commits, the step clips: both runs finished",
      commits_clean.result["exits"] == [["exit 0"] * 2] and
      commits.result["exits"] == [["exit 0"] * 2] and
      None not in commits_clean.ranks + commits.ranks,
      commits_clean.result, commits.result)
# the fault lands before rank 1's step (train.py's launcher_ran()), which
# touches the lost page: once it could land after, nothing absorbed
check("... the UE under rank 1 was recovered, its lost page touched (absorbed), the "
      "step run again (its unscale_ too)",
      None not in commits.ranks and commits.ranks[1]["lost_pages"] >= 1 and
      all(len(r["incidents"]) == 1 and r["incidents"][0][1] == 1 and r["rerun"] == 1
          for r in commits.ranks), commits.ranks)
check("... weights, scaler state and buffers bitwise equal to the fault-free run's",
      None not in commits.ranks + commits_clean.ranks and
      len({r["weights"] for r in commits.ranks + commits_clean.ranks}) == 1 and
      [r["buffers"] for r in commits.ranks] == [r["buffers"] for r in commits_clean.ranks],
      commits.ranks, commits_clean.ranks)

# The same fault landing after rank 1's step, once hbmguardd's PAUSE waits
# for it (train.py's --fault-after-closure): the Guard's check at the
# step's end recovers on the request alone, nothing of the page touched.
late = ddp_runs.load(top, "late", world=2)
check("DDP, a UE under rank 1 after its step, before the Guard's check: the run finished",
      late.result["exits"] == [["exit 0"] * 2] and None not in late.ranks, late.result)
check("... recovered on hbmguardd's PAUSE alone: nothing touched, the step run again once",
      None not in late.ranks and late.ranks[1]["lost_pages"] == 0 and
      all(len(r["incidents"]) == 1 and r["incidents"][0][1] == 1 and r["rerun"] == 1
          for r in late.ranks),
      [r and (r["lost_pages"], r["rerun"], r["incidents"]) for r in late.ranks])
mine = [i for i in incidents if i["job"] == "ddp-late"]
check("... hbmguardd's incident resumed, rank 1's",
      len(mine) == 1 and mine[0]["state"] == "resumed" and mine[0]["failed_rank"] == 1, mine)
check("... weights, scaler state and buffers bitwise equal to the fault-free run's",
      None not in late.ranks + commits_clean.ranks and
      len({r["weights"] for r in late.ranks + commits_clean.ranks}) == 1 and
      [r["buffers"] for r in late.ranks] == [r["buffers"] for r in commits_clean.ranks],
      late.ranks, commits_clean.ranks)

# Two ranks: one healthy rank, whose state the lost rank's surviving
# tensors (its optimizer's momentum, its parameters off the lost page)
# must match before the healthy one's is broadcast.
shards = ddp_runs.load(top, "shards", world=2)
check("DDP: two ranks whose states differ (shards): both Aborted, not a replica's broadcast",
      shards.result["exits"][-1] == ["exit 3"] * 2 and None not in shards.ranks and
      all("not replicas" in (r.get("aborted") or "") for r in shards.ranks),
      shards.result, shards.ranks)

replace = ddp_runs.load(top, "replace")
with open("%s/replace/starts" % top) as f:
    starts = [(int(r), int(pid), float(t)) for r, pid, t in (line.split() for line in f)]
by_rank = {r: [(pid, t) for rr, pid, t in starts if rr == r] for r in range(4)}
check("DDP, rank 2's process cannot continue: a new process took rank 2, the job finished",
      replace.result["exits"] == [["exit 0"]] and None not in replace.ranks and
      len(by_rank[2]) == 2 and replace.ranks[2]["pid"] == by_rank[2][1][0],
      replace.result, starts, replace.ranks)
check("... the other three kept their processes (one start each, the same pid at the end)",
      None not in replace.ranks and
      all(len(by_rank[r]) == 1 and replace.ranks[r]["pid"] == by_rank[r][0][0]
          for r in (0, 1, 3)), starts, replace.ranks)
check("... each of them rebuilt its process group once, at epoch 1, for rank 2",
      None not in replace.ranks and
      all([e[:2] for e in replace.ranks[r]["replacements"]] == [[1, 2]] and
          replace.ranks[r]["rerun"] == 1 for r in (0, 1, 3)), replace.ranks)
check("... no step lost (every step committed once, in order)",
      [row[1] for row in replace.rows] == list(range(1, n + 1)), replace.rows)
check("... weights, scaler state and buffers bitwise equal to the fault-free run's",
      None not in replace.ranks + clean_ranks and
      len({r["weights"] for r in replace.ranks + clean_ranks}) == 1 and
      [r["buffers"] for r in replace.ranks] == [r["buffers"] for r in clean_ranks],
      [r and r["weights"] for r in replace.ranks + clean_ranks])
mine = [i for i in incidents if i["job"] == "ddp-replace"]
check("... hbmguardd escalated its incident (rank 2 answered FAILED)",
      len(mine) == 1 and mine[0]["state"] == "escalated" and
      mine[0]["reason"] == "a rank failed to recover" and mine[0]["failed_rank"] == 2, mine)
if None not in replace.ranks and len(by_rank[2]) == 2 and replace.result["fault_time"]:
    fault = replace.result["fault_time"]
    resumed = [row[0] for row in replace.rows if row[0] > replace.ranks[2]["joined"]]
    print("# DDP replacement, from the fault: rank 2's new process started at %.1f s, "
          "joined at %.1f s, the next step committed at %.1f s" % (
              by_rank[2][1][1] - fault, replace.ranks[2]["joined"] - fault,
              (resumed[0] - fault) if resumed else float("nan")))

gone = ddp_runs.load(top, "gone")
check("DDP: hbmguardd stopped under the job, then a UE: every rank Aborted, none hangs",
      "daemon_stop" in gone.result and gone.result["exits"][-1] == ["exit 3"] * 4 and
      None not in gone.ranks and
      all("hbmguardd is gone" in (r.get("aborted") or "") for r in gone.ranks) and
      "this rank lost memory" in gone.ranks[2]["aborted"], gone.result, gone.ranks)

hung = [name for name in ("clean", "plain", "guarded", "one", "restart", "commits-clean", "commits",
                          "late", "shards", "replace", "gone", "unguarded")
        if ddp_runs.load(top, name, world=1).result.get("timed_out")]
check("DDP: no run reached its wall-clock limit (a hang)", not hung, hung)

check("DDP: without hbmguardd the same fault kills rank 2 (SIGBUS)",
      bad["exits"] and bad["exits"][-1][2] == "signal SIGBUS" and bad_ranks[2] is None, bad)
check("... and the job does not finish", bad["exits"][-1] != finished, bad)
