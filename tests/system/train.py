# SPDX-License-Identifier: GPL-2.0
"""The job that proves hbmguard: 4-rank PyTorch DDP (gloo, CPU), each rank's
weights in the aperture of its own simulated GPU (simN), and a launcher that
injects an uncorrectable error into one rank's weights mid-training.

    python3 train.py MODE OUTDIR [--steps N] [--fault-step K] [--fault DEV:OFFSET] [+ MODE OUTDIR ...]

The model has what makes a step hard to re-run bit for bit: BatchNorm's
running statistics, dropout, an AMP-style loss scaler that skips steps on
overflow (EmulatedScaler: GradScaler's interface, on the CPU), and data
drawn from torch's, NumPy's and Python's generators inside the step; the
step owns the optimizer step, as AMP's recipes write it.

MODE is how the job meets the fault:
  hbmguard    hbmguard.torch.Guard: recover in place, the step runs again
  unguarded   no hbmguard: the rank whose memory was lost dies of SIGBUS
  checkpoint  checkpoint to disk every --every steps; when a rank dies, the
              launcher kills all ranks and starts them again from it: as
              fresh processes (--restart cold, what torchrun does), or
              forked from the launcher, torch already imported (warm: the
              least a restart can cost)

The launcher writes OUTDIR/result.json (what it saw: processes started,
exit statuses, fault time, restarts) and rank 0 OUTDIR/progress.csv (one
row per committed step: wall time, step, loss, recoveries so far); each rank
OUTDIR/rankN.json (pid, sha256 of its final weights and scaler state, of
its buffers, steps re-run and skipped, memory lost under it; or why
hbmguard.torch.Aborted it, its exit status then 3).  Exit status 0 when
every rank finished.

Several runs separated by "+" share one launcher.  --world 1 is a job
without a replica; --hold-paused has rank 2 hold its
PAUSED answer until the launcher has run --at-held (by default: restarted
hbmguardd, a restart in the middle of a recovery); --shards gives each rank weights of its own, as
FSDP, ZeRO, tensor or pipeline parallelism would; --guard-commits has the
Guard make the optimizer step (Guard's default) and the step unscale and
clip the gradients first (AMP's recipe for clipping); --stop-daemon-step
stops hbmguardd for good under the running job.  A run that takes longer
than --wall seconds has its ranks killed (result.json: timed_out).
--run-at STEP:COMMAND has the launcher run a shell's COMMAND once STEP
was committed, STEP 0 before it starts the ranks (a test's hook: etcd
stopped, a daemon killed or started again); --at-held COMMAND is what the
launcher does while rank 2 holds PAUSED (--hold-paused; by default it
restarts hbmguardd), the incident surely open then (a daemon killed, a
second fault, mid-incident).
--rotate (make bench's) has the steps take turns, ROTATION's, so that the
Guard's cost per step is measured in the same processes under the same
load as the steps without it (ddp_report.py).

The launcher imports torch once and forks the ranks from it: under TCG an
import takes tens of seconds, which the first start need not pay four times.

--nnodes 2 runs this node's share of a job on two nodes, --node-rank saying
which, the other node's launcher given the same run: torchrun starts the
node's ranks (ranks node_rank * world / nnodes and up), rendezvousing at
--master-addr; the fault goes in on the node where its device's rank runs.

The fault goes in once --fault-step steps were committed, and the faulted
rank waits for it (launcher_ran()) before its next step, which so touches
the lost page.  With --fault-after-closure the fault goes in once the
faulted rank has also run that step's closure (it says so: closed_at()),
which then waits for hbmguardd's PAUSE: the Guard's check finds the
request, not a loss, and the rank recovers having touched nothing (the
fault between a step's compute and its end, a UE during the optimizer's
or the collectives' time).

--light has the launcher fork light ranks instead (light_worker()): no
torch, no model, the hbmguard package alone; for the checks of the
daemons' escalations, which ask who aborts and why, not what the weights
are.  A light run's hooks are run at the step they name: its ranks wait
for their launcher at each step's end (launcher_ran()).
"""
import argparse
import collections
import faulthandler
import hashlib
import json
import os
import pwd
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy                                    # noqa: E402
import torch                                    # noqa: E402
import torch.distributed as dist                # noqa: E402
import torch.nn.functional as F                 # noqa: E402
from torch.cuda.amp.grad_scaler import OptState, _refresh_per_optimizer_state  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import hbmguard                                 # noqa: E402
import hbmguard.torch                           # noqa: E402

APERTURE = 512 << 10            # bytes of each device the rank's weights take
# --rotate's turns, step % 4: without the Guard; without it and with one
# bare all_reduce of the Guard's flags (the floor of its check); with the
# Guard, which commits (its default); with the Guard, the closure committing.
ROTATION = ("no Guard", "no Guard, one bare all_reduce", "the Guard commits",
            "closure_steps=True")
ABORTED = 3                     # a rank's exit status after hbmguard.torch.Aborted


def parse(argv):
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["hbmguard", "unguarded", "checkpoint", "replace"])
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--fault-step", type=int, default=0, help="0: no fault")
    p.add_argument("--fault", default="sim2:0x20000")
    p.add_argument("--fault-after-closure", action="store_true",
                   help="the fault lands after the faulted rank's step, before the Guard's check")
    p.add_argument("--restart-daemon-step", type=int, default=0,
                   help="systemctl restart hbmguardd at this step (0: never)")
    p.add_argument("--every", type=int, default=10, help="checkpoint period")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--restart", choices=["cold", "warm"], default="cold")
    p.add_argument("--port", type=int, default=29500)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--nnodes", type=int, default=1, help="nodes the job's ranks are on")
    p.add_argument("--node-rank", type=int, default=0, help="this node's, of --nnodes")
    p.add_argument("--master-addr", default="127.0.0.1", help="node 0's address")
    p.add_argument("--job", default="ddp-demo")
    p.add_argument("--shards", action="store_true",
                   help="no DDP, each rank's own weights: what sharded state is to the Guard")
    p.add_argument("--hold-paused", action="store_true",
                   help="rank 2 answers PAUSED once the launcher ran --at-held")
    p.add_argument("--at-held", default="systemctl restart hbmguardd", metavar="COMMAND",
                   help="what the launcher does (a shell's) while rank 2 holds PAUSED")
    p.add_argument("--guard-commits", action="store_true",
                   help="the Guard makes the optimizer step; the step unscales and clips")
    p.add_argument("--stop-daemon-step", type=int, default=0,
                   help="systemctl stop hbmguardd at this step (0: never); it stays stopped")
    p.add_argument("--run-at", action="append", default=[], metavar="STEP:COMMAND",
                   help="the launcher runs COMMAND (a shell's) once STEP was committed here, "
                   "after the fault if at the same step; STEP 0: before the ranks start")
    p.add_argument("--wall", type=float, default=600,
                   help="seconds the run may take before its ranks are killed")
    p.add_argument("--cannot-continue", type=int, default=-1, metavar="RANK",
                   help="RANK's process cannot continue once it touched lost memory")
    p.add_argument("--rotate", action="store_true",
                   help="the steps take turns with the Guard and without (ROTATION)")
    p.add_argument("--light", action="store_true",
                   help="ranks without torch (light_worker()), on any number of nodes")
    p.add_argument("--step-seconds", type=float, default=1.0,
                   help="a light rank's step (about a DDP step's under TCG)")
    p.add_argument("--from-env", action="store_true", help=argparse.SUPPRESS)  # hbmguard.run's
    p.add_argument("--rank", type=int, help=argparse.SUPPRESS)     # a cold restart's rank
    p.add_argument("--attempt", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.argv = argv
    return args


# ---- a rank -------------------------------------------------------------

class EmulatedScaler:
    """torch.cuda.amp.GradScaler's interface and logic (torch 1.13,
    torch/cuda/amp/grad_scaler.py) on the CPU, where GradScaler disables
    itself: a scaled gradient past float16's largest value is an overflow,
    as it would be in float16; the step is then skipped and the scale backs
    off; it grows after growth_interval steps without one.  Its record of
    what each optimizer went through since update() is GradScaler's own
    (OptState, _per_optimizer_states), with the same refusals: unscale_()
    twice, or after step()."""

    FP16_MAX = 65504.0

    def __init__(self, init_scale=2.0 ** 20, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=4):
        self._scale, self._growth_tracker = init_scale, 0
        self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._per_optimizer_states = collections.defaultdict(_refresh_per_optimizer_state)
        self.skipped = 0

    def scale(self, loss):
        return loss * self._scale

    def unscale_(self, optimizer):
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer "
                               "since the last update().")
        elif state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad for g in optimizer.param_groups for p in g["params"]
                 if p.grad is not None]
        found_inf = any(not torch.isfinite(t).all() or t.abs().max() > self.FP16_MAX
                        for t in grads)
        with torch.no_grad():
            for t in grads:
                t.div_(self._scale)
        state["found_inf_per_device"] = {"cpu": found_inf}
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer):
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if any(state["found_inf_per_device"].values()):
            self.skipped += 1
        else:
            optimizer.step()
        state["stage"] = OptState.STEPPED

    def update(self):
        found = [f for state in self._per_optimizer_states.values()
                 for f in state["found_inf_per_device"].values()]
        assert found, "No inf checks were recorded prior to update."
        if any(found):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer_states = collections.defaultdict(_refresh_per_optimizer_state)

    def state_dict(self):
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker, "skipped": self.skipped}

    def load_state_dict(self, state):
        self._scale, self._growth_tracker = state["scale"], state["_growth_tracker"]
        self._growth_factor, self._backoff_factor = state["growth_factor"], state["backoff_factor"]
        self._growth_interval, self.skipped = state["growth_interval"], state["skipped"]


def hold_paused(answer, out):
    """answer (hbmguard.Rank's), that rank 2 uses to answer PAUSED only
    once the launcher ran --at-held (by default, restarted hbmguardd): what
    it does happens with the incident open (a test's hook into the rank's
    connection)."""
    def held(incident, what):
        if what == hbmguard.PAUSED:
            open(os.path.join(out, "held"), "w").close()
            for _ in range(600):
                if os.path.exists(os.path.join(out, "released")):
                    break
                time.sleep(0.1)
        return answer(incident, what)
    return held


def digest(tensors, extra=b""):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().numpy().tobytes())
    h.update(extra)
    return h.hexdigest()


# What torch raises once CUDA's context is lost to an uncorrectable ECC
# error: cudaErrorECCUncorrectable (214, CUDA's driver_types.h) in
# cudaGetErrorString()'s words, as C10_CUDA_CHECK (c10/cuda/CUDAException.h)
# words it.  The CPU has no such context: a rank told to (--cannot-continue)
# raises it itself where a GPU would, at its first use of lost memory.
CUDA_ECC_ERROR = "CUDA error: uncorrectable ECC error encountered"


def become_training_user():
    """TRAIN_USER: the ranks run as that user, as training does, not root
    (the launcher stays root: it injects faults and restarts hbmguardd)."""
    name = os.environ.get("TRAIN_USER")
    if not name or os.getuid() != 0:
        return
    pw = pwd.getpwnam(name)
    os.setgroups(os.getgrouplist(name, pw.pw_gid))
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)


def note_start(out, rank):
    """The rank's start in OUT/starts (the verdicts': no process restarted)."""
    started = time.time()
    with open(os.path.join(out, "starts"), "a") as f:
        f.write("%d %d %.6f\n" % (rank, os.getpid(), started))
    return started


def write_report(out, rank, report):
    """OUT/rankN.json, whole or not at all: a rank may be killed as it
    writes (hbmguardd ends the failed rank of an incident it escalated)."""
    path = os.path.join(out, "rank%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(report, f)
    os.replace(path + ".tmp", path)


def end_aborted(out, rank, why):
    """The rank's end when told to abort: why, in its report."""
    write_report(out, rank, {"pid": os.getpid(), "aborted": str(why)})
    print("rank %d: Aborted: %s" % (rank, why), file=sys.stderr)
    sys.stderr.flush()
    os._exit(ABORTED)


def worker(args, rank, attempt):
    become_training_user()
    torch.set_num_threads(1)
    faulthandler.register(signal.SIGUSR1)      # where a hung rank is (the wall limit)
    started = note_start(args.out, rank)
    if args.from_env:           # hbmguard.run's: as under torchrun
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % (args.port + attempt),
                                rank=rank, world_size=args.world)
    torch.manual_seed(args.seed + (rank if args.shards else 0))
    numpy.random.seed(args.seed + rank)
    random.seed(args.seed + rank)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.BatchNorm1d(256),
                                torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    teacher = torch.nn.Linear(64, 10)
    device = "sim:sim%d" % rank
    ap = hbmguard.Aperture(device, 0, APERTURE)
    ap.restore(0, APERTURE)     # a fresh start writes all of it
    hbmguard.torch.place_parameters(model, ap)
    ddp = model if args.shards else DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scaler = EmulatedScaler()

    first = 0
    ckpt = os.path.join(args.out, "checkpoint.pt")
    if args.mode == "checkpoint" and attempt and os.path.exists(ckpt):
        saved = torch.load(ckpt)
        model.load_state_dict(saved["model"])       # in place: the aperture stays
        opt.load_state_dict(saved["opt"])
        scaler.load_state_dict(saved["scaler"])
        first = saved["step"]

    guard = None
    if args.mode in ("hbmguard", "replace"):
        guard = hbmguard.torch.Guard(ddp, opt, job=args.job, device=device, apertures=[ap],
                                     scaler=scaler, closure_steps=not args.guard_commits)
        if args.hold_paused and rank == 2:
            guard._rank.answer = hold_paused(guard._rank.answer, args.out)
        first = guard.steps     # a newcomer's: the job's
    joined = time.time()
    # the node's first rank: its launcher reads it (the fault's step)
    local_rank = int(os.environ["LOCAL_RANK"]) if args.from_env else rank
    progress = open(os.path.join(args.out, "progress.csv"), "a") if local_rank == 0 else None

    fault_landed = []
    try:
        for step in range(first, args.steps):
            turn = step % len(ROTATION) if args.rotate else None
            guarded = guard is not None and turn in (None, 2, 3)
            if args.rotate:
                guard.closure_steps = turn == 3
            commits = not (guarded and not guard.closure_steps)
            # the fault in before this rank's step touches its memory: else
            # it could land while the rank waits in the Guard's all_reduce,
            # its closure done, and another rank see the PAUSE (lost_pages
            # 0, once in a CI run)
            faulted = args.fault_step and step == args.fault_step and rank == fault_rank(args)
            if faulted and not args.fault_after_closure:
                launcher_ran(args.out, step, args.wall)
            g = torch.Generator().manual_seed((args.seed * 1000 + step) * args.world + rank)
            x = torch.randn(32, 64, generator=g)
            with torch.no_grad():
                y = teacher(x)

            def closure():             # augmentation from the global generators
                opt.zero_grad()
                noise = torch.from_numpy(numpy.random.standard_normal((32, 64)).astype("float32"))
                loss = F.mse_loss(ddp(x * random.uniform(0.9, 1.1) + 0.01 * noise), y)
                if rank == args.cannot_continue and ap.lost():
                    raise RuntimeError(CUDA_ECC_ERROR)
                scaler.scale(loss).backward()
                # and after the backward pass, as a GPU's next kernel would:
                # a fault during it is seen before the Guard's step ends
                # (whose check of hbmguardd's requests would restore the
                # page first, and the process go on as if it could)
                if rank == args.cannot_continue and ap.lost():
                    raise RuntimeError(CUDA_ECC_ERROR)
                if args.guard_commits:  # AMP's recipe for clipping
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
                if commits:
                    scaler.step(opt)
                    scaler.update()
                if faulted and args.fault_after_closure and not fault_landed:
                    closed_at(args.out, step)   # the launcher's fault goes in now
                    paused(guard, args.wall)
                    fault_landed.append(step)   # the step's run again: no wait
                return loss

            loss = guard.step(closure) if guarded else closure()
            if turn == 1:
                flags = torch.zeros(2, dtype=torch.int32)
                dist.all_reduce(flags, op=dist.ReduceOp.MAX)
                flags.tolist()
            if progress:
                progress.write("%.6f,%d,%.6f,%d\n" % (time.time(), step + 1, loss.item(),
                                                      (guard.rerun if guard else 0) + attempt))
                progress.flush()
            if args.mode == "checkpoint" and (step + 1) % args.every == 0 and rank == 0:
                torch.save({"step": step + 1, "model": model.state_dict(),
                            "opt": opt.state_dict(), "scaler": scaler.state_dict()}, ckpt + ".tmp")
                os.replace(ckpt + ".tmp", ckpt)
    except hbmguard.torch.Aborted as e:
        end_aborted(args.out, rank, e)

    report = {"pid": os.getpid(), "uid": os.getuid(), "aborted": None, "steps": args.steps,
              "weights": digest(model.parameters(), json.dumps(scaler.state_dict()).encode()),
              "buffers": digest(model.buffers()), "skipped": scaler.skipped,
              "rerun": guard.rerun if guard else 0, "lost_pages": guard.lost_pages if guard else ap.lost(),
              "protected": bool(guard and guard.protected),
              "incidents": guard.incidents if guard else [],
              "reconnects": guard.reconnects if guard else 0,
              "replacements": guard.replacements if guard else [],
              "started": started, "joined": joined, "node": os.uname().nodename,
              "run_id": os.environ.get("TORCHELASTIC_RUN_ID"),
              "recovery_timeout": guard.recovery_timeout if guard else None}
    write_report(args.out, rank, report)
    dist.destroy_process_group()
    if guard:
        guard.close()


# ---- a light rank (--light) --------------------------------------------
#
# A light rank registers with its node's hbmguardd (the hbmguard package
# over libhbmguard, as pyrank.py), keeps a pattern in its device's memory,
# and steps: it reads its memory (a forward pass reading its weights), and
# every rank of the job agrees whether to recover (the Guard's check at each
# step's end, Guard._must_recover(): an all_reduce(MAX) of one byte, here
# through node 0's launcher, LightBarrier).  Its recovery is the Guard's
# protocol: PAUSED, RESTORE (the failed rank maps its lost pages back and
# writes them again, as the Guard's broadcast from a replica would),
# RESTORED, RESUME, the step run again; it ends Aborted (exit status 3) on
# ABORT, on no request within the daemon's deadlines, or with the daemon gone.

PEER_LOST = 2                   # LightBarrier's answer when a rank left the job


class LightAborted(Exception):
    pass


def write_pattern(ap, rank, lo=0, hi=APERTURE):
    """The rank's pattern into bytes [lo, hi) of its memory: through a
    memoryview, a memcpy (ctypes' own slice assignment goes a byte at a
    time: a second under TCG)."""
    pattern = (bytes(range(rank, rank + 251)) * (APERTURE // 251 + 1))[:APERTURE]
    with memoryview(ap.buffer) as view, view.cast("B") as flat:
        flat[lo:hi] = pattern[lo:hi]
    return pattern


def light_connect(args):
    """A connection to node 0's launcher (--master-addr, --port), which
    may not listen yet."""
    deadline = time.monotonic() + args.wall
    while True:
        try:
            return socket.create_connection((args.master_addr, args.port))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def light_rendezvous(args):
    """The launchers of a light run meet before it starts, as torchrun's
    agents do: no node runs the run's hooks (--run-at 0: a daemon started,
    its deadlines changed) while another is still in the run before.  Node
    0's launcher listens, its first connections the other nodes'
    launchers; its listener is the run's barrier's (serve_light_barrier())."""
    if args.node_rank:
        with light_connect(args) as c:
            if c.recv(1) != b"\0":
                raise RuntimeError("node 0's launcher went away before the run")
        return None
    listener = socket.create_server(("", args.port))
    listener.settimeout(args.wall)
    for _ in range(args.nnodes - 1):
        with listener.accept()[0] as c:
            c.sendall(b"\0")
    return listener


def serve_light_barrier(args, listener):
    """Node 0's launcher's half of LightBarrier, in a thread: once every
    rank of the job connected, each round reads a byte from each and sends
    each the largest; a rank gone (its connection closed) ends it, the
    others told PEER_LOST, as gloo tells DDP's ranks of a peer gone."""
    def rounds():
        with listener:
            ranks = [listener.accept()[0] for _ in range(args.world)]
        while True:
            flags = [c.recv(1) for c in ranks]
            gone = b"" in flags
            for c in ranks:
                try:
                    c.sendall(bytes([PEER_LOST]) if gone else max(flags))
                except OSError:
                    pass
            if gone:
                for c in ranks:
                    c.close()
                return
    threading.Thread(target=rounds, daemon=True).start()


class LightBarrier:
    """A rank's half: agree(flag) is the largest flag of all the job's ranks."""

    def __init__(self, args):
        self._sock = light_connect(args)

    def agree(self, flag):
        self._sock.sendall(bytes([flag]))
        got = self._sock.recv(1)
        if got in (b"", bytes([PEER_LOST])):
            raise LightAborted("a peer rank left the job")
        return got[0]


def launcher_writes(out, name, text):
    """OUT/NAME holds TEXT, as root writes into a directory the ranks own:
    through a name of its own made anew (a rank's link there is removed,
    never followed), renamed over NAME (a link there replaced, not
    followed)."""
    tmp = os.path.join(out, name + ".tmp")
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, name))


def launcher_ran(out, step, wall):
    """Until this node's launcher ran what is due at step (launch()); a
    launcher that never does (it failed: a fault's injection) ends the rank
    after wall seconds, which the others meet as a failed collective, rather
    than have it wait for good."""
    until = time.monotonic() + wall
    while True:
        try:
            with open(os.path.join(out, "launcher_ran")) as f:
                if int(f.read()) >= step:
                    return
        except (OSError, ValueError):
            pass
        if time.monotonic() > until:
            raise RuntimeError("the launcher has not run step %d's hooks in %.0f s" %
                               (step, wall))
        time.sleep(0.01)


def paused(guard, wall):
    """Until hbmguardd's PAUSE waits in the Guard's requests (its check at
    the step's end finds it there, Guard._must_recover()); wall seconds at
    most, as launcher_ran()."""
    until = time.monotonic() + wall
    while True:
        guard._drain()
        if any(req.action == hbmguard.PAUSE for req in guard._pending):
            return
        if time.monotonic() > until:
            raise RuntimeError("no PAUSE from hbmguardd in %.0f s" % wall)
        time.sleep(0.01)


def drain(me, pending):
    """hbmguardd's waiting requests, into pending (Guard._drain())."""
    while True:
        req = me.next()
        if req is None:
            return
        pending.append(req)


def light_recover(rank, me, ap, pending, answer, deadline):
    """The Guard's _recover() for a light rank: (incident, failed rank), or
    LightAborted."""
    def expect(action):
        while True:
            drain(me, pending)
            while pending:
                req = pending.pop(0)
                if req.action == hbmguard.ABORT:
                    raise LightAborted("rank %d: hbmguardd escalated incident %d" % (
                        rank, req.incident))
                if req.action == action:
                    return req
            left = deadline - time.monotonic()
            if left <= 0:
                raise LightAborted("rank %d: hbmguardd asked for no %s within its deadlines"
                                   % (rank, hbmguard.ACTIONS[action]))
            poller = select.poll()
            poller.register(me.fileno(), select.POLLIN)
            poller.poll(left * 1000)

    try:
        req = expect(hbmguard.PAUSE)
        answer(req.incident, hbmguard.PAUSED)
        req = expect(hbmguard.RESTORE)
        if req.failed_rank == rank:
            lo, hi = max(0, req.offset), min(APERTURE, req.offset + req.length)
            if lo < hi:
                ap.restore(lo, hi - lo)
                write_pattern(ap, rank, lo, hi)
        me.answer(req.incident, hbmguard.RESTORED)
        expect(hbmguard.RESUME)
    except OSError as e:        # ECONNRESET: hbmguardd went away
        raise LightAborted("rank %d: hbmguardd went away during the recovery (%s)" % (
            rank, e.strerror or e))
    return req.incident, req.failed_rank


def light_worker(args, rank):
    become_training_user()
    faulthandler.register(signal.SIGUSR1)      # where a hung rank is (the wall limit)
    started = note_start(args.out, rank)
    barrier = LightBarrier(args)
    device = "sim:sim%d" % rank
    ap = hbmguard.Aperture(device, 0, APERTURE, guard=True)
    ap.restore(0, APERTURE)     # a fresh start writes all of it
    pattern = write_pattern(ap, rank)
    me = hbmguard.Rank(job=args.job, rank=rank, world_size=args.world, device=device,
                       ranges=[(0, APERTURE)])
    d = hbmguard.deadlines()    # the Guard's wait (Guard._daemon_deadlines())
    recovery_timeout = max(d.longest, d.pause + d.restore) + hbmguard.torch.DEADLINE_SLACK
    answer = hold_paused(me.answer, args.out) if args.hold_paused and rank == 2 else me.answer
    barrier.agree(0)            # every rank registered before the first step
    joined = time.time()
    progress = None
    if rank == args.node_rank * args.world // args.nnodes:     # the node's first
        progress = open(os.path.join(args.out, "progress.csv"), "a")
    rerun, lost_pages, incidents, pending = 0, 0, [], []
    try:
        for step in range(args.steps):
            while True:
                time.sleep(args.step_seconds)
                bytes(ap.buffer)        # a lost page reads zero, and is counted
                try:
                    drain(me, pending)
                except OSError as e:
                    raise LightAborted("rank %d: hbmguardd went away (%s)" % (
                        rank, e.strerror or e))
                if not barrier.agree(1 if ap.lost() or pending else 0):
                    break
                began = time.monotonic()
                lost_pages += ap.lost()
                incident, failed = light_recover(rank, me, ap, pending, answer,
                                                 began + recovery_timeout)
                incidents.append((incident, failed, time.monotonic() - began))
                rerun += 1
            if progress:
                progress.write("%.6f,%d,0,%d\n" % (time.time(), step + 1, rerun))
                progress.flush()
            launcher_ran(args.out, step + 1, args.wall)
    except LightAborted as e:
        end_aborted(args.out, rank, e)
    report = {"pid": os.getpid(), "uid": os.getuid(), "aborted": None, "steps": args.steps,
              "memory_intact": bytes(ap.buffer) == pattern,
              "rerun": rerun, "lost_pages": lost_pages, "protected": True,
              "incidents": incidents, "started": started, "joined": joined,
              "node": os.uname().nodename, "recovery_timeout": recovery_timeout}
    write_report(args.out, rank, report)
    me.close()
    ap.close()


# ---- the launcher -------------------------------------------------------

class Rank:
    """A forked rank, as much of subprocess.Popen as the launcher uses."""

    def __init__(self, args, rank, attempt):
        self.returncode = None
        self.cold = None
        if attempt and args.restart == "cold":
            self.cold = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__)] +
                args.argv + ["--rank", str(rank), "--attempt", str(attempt)])
            self.pid = self.cold.pid
            return
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                if args.light:
                    light_worker(args, rank)
                else:
                    worker(args, rank, attempt)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stderr.flush()
            os._exit(code)

    def poll(self):
        if self.cold:
            self.returncode = self.cold.poll()
        elif self.returncode is None:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(st)
        return self.returncode

    def wait(self):
        if self.cold:
            self.returncode = self.cold.wait()
        elif self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)


class Launched(subprocess.Popen):
    """hbmguard.run and the ranks it starts, as one process group."""

    def __init__(self, argv):
        super().__init__(argv, start_new_session=True, preexec_fn=become_training_user)

    def kill(self):
        os.killpg(self.pid, signal.SIGKILL)

    def signal(self, sig, out):
        """sig to the ranks (as they wrote themselves down), not the launcher."""
        try:
            with open(os.path.join(out, "starts")) as f:
                pids = [int(line.split()[1]) for line in f]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


class Torchrun(Rank):
    """torchrun for this node's ranks of a job on several nodes: its own
    main() (torch 1.13, torch/distributed/run.py), in a process group
    forked from this launcher, as `python3 -m torch.distributed.run` with
    --run_path --start_method=fork would run it (config_from_args(): the
    script then runs in each rank forked from the agent, runpy's
    run_path(), not in an interpreter of its own): torch is imported once,
    here.  --rdzv_id is the job's name (its ranks' TORCHELASTIC_RUN_ID).

    --redirects 1 --tee 1 (stdout to a file, and from it to ours) as the
    default, 0 (none), cannot be: under Python 3.11 its Std.from_str()
    (torch/distributed/elastic/multiprocessing/api.py) returns None for
    "0", as iterating an IntFlag no longer yields its member of value 0,
    and start_processes() fails on it (to_map(): 'NoneType' object has no
    attribute 'get')."""

    def __init__(self, args):
        self.returncode = None
        self.cold = None
        self.pid = os.fork()
        if self.pid:
            return
        code = 0
        try:
            os.setsid()
            # the agent as the training user too: the files it makes for
            # its ranks (their error.json) are theirs to write
            become_training_user()
            import torch.distributed.run
            torch.distributed.run.main([
                "--nnodes", str(args.nnodes), "--node_rank", str(args.node_rank),
                "--nproc_per_node", str(args.world // args.nnodes),
                "--master_addr", args.master_addr, "--master_port", str(args.port),
                "--rdzv_id", args.job, "--monitor_interval", "1",
                "--redirects", "1", "--tee", "1",
                "--run_path", "--start_method", "fork",
                os.path.abspath(__file__)] + args.argv + ["--from-env"])
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)

    kill = Launched.kill
    signal = Launched.signal


def spawn(args, attempt):
    if args.light:
        per_node = args.world // args.nnodes
        return [Rank(args, args.node_rank * per_node + i, attempt) for i in range(per_node)]
    if args.nnodes > 1:
        return [Torchrun(args)]
    if args.mode == "replace":  # hbmguard.run starts the ranks, torchrun's way
        return [Launched([sys.executable, "-m", "hbmguard.run", "--nproc_per_node",
                          str(args.world), "--master_port", str(args.port),
                          "--rdzv_id", args.job, "--preload", "torch",
                          os.path.abspath(__file__)] + args.argv + ["--from-env"])]
    return [Rank(args, rank, attempt) for rank in range(args.world)]


def fault_rank(args):
    """The rank whose device (simN, rank N's) the fault is on."""
    return int(args.fault.split(":")[0][len("sim"):])


def fault_here(args):
    """Whether the fault's device is on this node."""
    return fault_rank(args) * args.nnodes // args.world == args.node_rank


def closed_at(out, step):
    """The faulted rank has run step's closure (--fault-after-closure)."""
    with open(os.path.join(out, "closed.tmp"), "w") as f:
        f.write("%d" % step)
    os.replace(os.path.join(out, "closed.tmp"), os.path.join(out, "closed"))


def closed(out):
    """The last step whose closure the faulted rank said it ran (the
    launcher reads, root, what a rank wrote: not through a link)."""
    try:
        fd = os.open(os.path.join(out, "closed"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd) as f:
            return int(f.read(16))
    except (OSError, ValueError):
        return -1


def committed(out):
    try:
        with open(os.path.join(out, "progress.csv")) as f:
            rows = f.read().split("\n")
        return int(rows[-2].split(",")[1]) if len(rows) > 1 else 0
    except (OSError, IndexError, ValueError):
        return 0


def run_commands(args, result, step):
    """--run-at's commands due at step (committed), each once, in order;
    what each returned in result["ran"]."""
    for i, at in enumerate(args.run_at):
        due, command = at.split(":", 1)
        if str(i) not in result["ran"] and step >= int(due):
            result["ran"][str(i)] = {"command": command, "time": time.time(),
                                     "status": subprocess.run(command, shell=True).returncode}


def status(rc):
    return "signal %s" % signal.Signals(-rc).name if rc < 0 else "exit %d" % rc


def launch(args):
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        os.unlink(os.path.join(args.out, name))
    if os.environ.get("TRAIN_USER"):    # the ranks write there
        pw = pwd.getpwnam(os.environ["TRAIN_USER"])
        os.chown(args.out, pw.pw_uid, pw.pw_gid)
    result = {"mode": args.mode, "steps": args.steps, "started": [], "exits": [],
              "fault_time": None, "fault_step": None, "restarts": [], "ran": {}}
    t0 = time.time()
    attempt = 0
    listener = light_rendezvous(args) if args.light else None
    run_commands(args, result, 0)
    if listener:
        serve_light_barrier(args, listener)
    procs = spawn(args, attempt)
    result["started"].append([p.pid for p in procs])
    ran_at = 0
    while True:
        step = committed(args.out)
        if args.fault_step and result["fault_time"] is None and fault_here(args) and \
                step >= args.fault_step and \
                (not args.fault_after_closure or closed(args.out) >= args.fault_step):
            dev, offset = args.fault.split(":")
            subprocess.run(["hbmctl", "inject", dev, "ue", offset], check=True)
            result["fault_time"] = time.time()
            result["fault_step"] = step
        run_commands(args, result, step)
        if args.restart_daemon_step and "daemon_restart" not in result and \
                step >= args.restart_daemon_step:
            subprocess.run(["systemctl", "restart", "hbmguardd"], check=True)
            result["daemon_restart"] = time.time()
        if args.stop_daemon_step and "daemon_stop" not in result and \
                step >= args.stop_daemon_step:
            subprocess.run(["systemctl", "stop", "hbmguardd"], check=True)
            result["daemon_stop"] = time.time()
        if step > ran_at:       # the light ranks and the faulted one wait for it
            launcher_writes(args.out, "launcher_ran", "%d" % step)
            ran_at = step
        if args.hold_paused and "held" not in result and \
                os.path.exists(os.path.join(args.out, "held")):
            result["held"] = {"command": args.at_held, "time": time.time(),
                              "status": subprocess.run(args.at_held, shell=True).returncode}
            launcher_writes(args.out, "released", "")
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            break
        if time.time() - t0 > args.wall:        # a hang: end it, the verdict says so
            result["timed_out"] = True
            print("# %s: %.0f s: where each rank is, then SIGKILL" % (args.out, args.wall),
                  file=sys.stderr, flush=True)
            for p in procs:
                if p.poll() is None:
                    if isinstance(p, (Launched, Torchrun)):
                        p.signal(signal.SIGUSR1, args.out)
                    else:
                        os.kill(p.pid, signal.SIGUSR1)
            time.sleep(5)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            time.sleep(0.1)
            continue
        failed = [c for c in codes if c not in (None, 0)]
        if failed and args.mode == "checkpoint" and attempt < 2:
            for p in procs:             # what a launcher does: all or none
                if p.poll() is None:
                    p.kill()
            codes = [p.wait() for p in procs]
            result["exits"].append([status(c) for c in codes])
            attempt += 1
            result["restarts"].append({"time": time.time(), "after_step": committed(args.out)})
            procs = spawn(args, attempt)
            result["started"].append([p.pid for p in procs])
            continue
        if failed:                      # one rank died: the others would hang
            # long enough for the others to end as they would (under TCG a
            # step takes seconds): an Aborted job's ranks leave one by one
            grace = time.time() + 20
            while time.time() < grace and any(p.poll() is None for p in procs):
                time.sleep(0.1)
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.01)
    result["exits"].append([status(p.returncode) for p in procs])
    result["wall"] = time.time() - t0
    result["daemon_active"] = subprocess.run(["systemctl", "is-active", "--quiet",
                                              "hbmguardd"]).returncode == 0
    result["start_time"] = t0
    launcher_writes(args.out, "result.json", json.dumps(result, indent=1))
    return 0 if all(p.returncode == 0 for p in procs) else 1


def main():
    """Runs separated by "+" are launched one after the other, by the same
    launcher: torch is imported once (tens of seconds under TCG).  Exit
    status 0 when every rank of every run finished."""
    runs = [[]]
    for a in sys.argv[1:]:
        if a == "+":
            runs.append([])
        else:
            runs[-1].append(a)
    # libhbmguard loaded once, here, for every rank forked from this
    # process (torchrun's too).
    hbmguard._library()
    args = parse(runs[0])
    if args.from_env:
        worker(args, int(os.environ["RANK"]), 0)
        return
    if args.rank is not None:
        worker(args, args.rank, args.attempt)
        return
    failed = 0
    for argv in runs:
        args = parse(argv)
        failed |= launch(args)
        print("# DDP run %s: %s" % (args.out, " ".join(json.load(
            open(os.path.join(args.out, "result.json")))["exits"][-1])), flush=True)
    sys.exit(failed)


if __name__ == "__main__":
    main()
