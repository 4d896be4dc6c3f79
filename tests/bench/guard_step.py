# SPDX-License-Identifier: GPL-2.0
"""make bench: what hbmguard.torch.Guard adds to a training step, natively
(no TCG), beside the step of a model that takes 100 ms or more, with the
torch of the tier-3 rootfs (Debian bookworm's 1.13), in a chroot of it
(tests/bench/guard-step.sh).

    python3 guard_step.py [--path DIR] [--daemon]

DIR: where the hbmguard package is, if not installed.  Ranks: gloo on the
CPU, as many as the machine has cores, up to 4 (more would measure the
scheduler).  Without --daemon, no hbmguardd: the Guard's connection to it
is a stand-in whose queue is empty and its aperture one that lost
nothing, which leaves out one recv() that finds nothing and one atomic
load per aperture (libhbmguard's rank.c and aperture.c), microseconds.
With --daemon (make bench's systemd guest, under TCG) the ranks register
with hbmguardd and map an aperture of the simulated device simN each.
The rest is the Guard's own code, timed part by part as Guard.step() runs
it around the closure, under hbmguard.run's run directory (where it also
keeps the rank's own state for a replacement: its most a step pays):
_snapshot(), _keep_own(), _must_recover(); beside one bare all_reduce of
its 8 bytes of flags (the floor of any check among the ranks) and the
model's step without the Guard.  Medians, rank 0's, all ranks in step.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch                                    # noqa: E402
import torch.distributed as dist                # noqa: E402
import torch.multiprocessing as mp              # noqa: E402
import torch.nn.functional as F                 # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

ARGS = argparse.ArgumentParser()
ARGS.add_argument("--path")
ARGS.add_argument("--daemon", action="store_true")
ARGS = ARGS.parse_args()
if ARGS.path:
    sys.path.insert(0, ARGS.path)
import hbmguard                                 # noqa: E402
import hbmguard.torch                           # noqa: E402

WIDTH, STEP_MS = 256, 100      # the batch doubles until a step takes STEP_MS


class Daemon:
    """hbmguard.Rank's interface, an empty queue."""

    def __init__(self, **identity):
        pass

    def next(self):
        return None

    def close(self):
        pass


class Aperture:
    offset, length = 0, 1 << 20

    def lost(self):
        return 0


def median_ms(f, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def rank(r, world, port, run_dir):
    torch.set_num_threads(1)
    os.environ["HBMGUARD_RUN_DIR"] = run_dir
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                            rank=r, world_size=world)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(1024, WIDTH), torch.nn.BatchNorm1d(WIDTH),
                                torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
                                torch.nn.Linear(WIDTH, 10))
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    if ARGS.daemon:
        device = "sim:sim%d" % r
        ap = hbmguard.Aperture(device, 0, 512 << 10)
        ap.restore(0, ap.length)
    else:
        device, ap = "sim%d" % r, Aperture()
    guard = hbmguard.torch.Guard(ddp, opt, job="bench-step", device=device, apertures=[ap])
    batch = 32

    def step():
        opt.zero_grad()
        F.mse_loss(ddp(x), y).backward()
        opt.step()

    while True:
        x, y = torch.randn(batch, 1024), torch.randn(batch, 10)
        step()                  # DDP lays its buckets out again after the first
        fig = {"step": median_ms(step, 9)}
        # rank 0's figure decides, for every rank
        enough = torch.tensor([fig["step"] >= STEP_MS], dtype=torch.int32)
        dist.broadcast(enough, 0)
        if enough.item():
            break
        batch *= 2

    def guard_work():
        saved = guard._snapshot()
        guard._keep_own(saved)
        guard._must_recover()
    fig["guard"] = median_ms(guard_work, 200)
    fig["must_recover"] = median_ms(guard._must_recover, 200)
    flags = torch.zeros(2, dtype=torch.int32)
    fig["all_reduce"] = median_ms(lambda: dist.all_reduce(flags, op=dist.ReduceOp.MAX), 200)
    saved = guard._snapshot()
    fig["snapshot"] = median_ms(guard._snapshot, 200)
    fig["keep_own"] = median_ms(lambda: guard._keep_own(saved), 200)
    guard.closure_steps = True  # a copy of the parameters and the optimizer's state too
    fig["snapshot_closure"] = median_ms(guard._snapshot, 20)
    guard.closure_steps = False
    if r == 0:
        parts = "; ".join("%s %.3f ms" % kv for kv in fig.items())
        where = "in the TCG guest, hbmguardd" if ARGS.daemon else "natively"
        print("# the Guard %s, %d gloo ranks, torch %s: %s" % (where, world, torch.__version__,
                                                              parts))
        what = "a step of a %dx%d MLP, batch %d, %d gloo ranks" % (WIDTH, WIDTH, batch, world)
        print("@bench\tGuard's work per step, %s (its default, under hbmguard.run)\t"
              "%.3f\tms\t%s\t%.1f\t<= 0.01x" % (where, fig["guard"], what, fig["step"]))
        print("@bench\t  of it: one bare all_reduce of 8 bytes, back to back: its floor\t%.3f\tms\t"
              "the Guard's work per step\t%.3f\t-" % (fig["all_reduce"], fig["guard"]))
        print("@bench\tGuard's copy per step with closure_steps=True, %s\t%.3f\tms\t"
              "%s\t%.1f\t-" % (where, fig["snapshot_closure"], what, fig["step"]))
    guard.close()
    dist.destroy_process_group()


def main():
    if not ARGS.daemon:         # it asks hbmguardd's deadlines when it registers
        hbmguard.Rank = Daemon
        hbmguard.deadlines = lambda socket=None: hbmguard.Deadlines(30, 120, 10)
        hbmguard.Aperture.guard = staticmethod(lambda: None)
    world = min(4, os.cpu_count() or 1)
    if world < 2:
        print("# guard_step.py: one core, no replica to measure against")
        return
    with tempfile.TemporaryDirectory() as run_dir:
        mp.start_processes(rank, args=(world, 29400 + os.getpid() % 1000, run_dir),
                           nprocs=world, start_method="fork")


if __name__ == "__main__":
    main()
