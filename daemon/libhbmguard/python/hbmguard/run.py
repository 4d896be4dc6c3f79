# SPDX-License-Identifier: LGPL-2.1-or-later
"""Start a job's ranks on this node as torchrun does, and replace a rank
whose process cannot continue while its peers keep theirs.

    python3 -m hbmguard.run --nproc_per_node N [--master_addr ADDR]
        [--master_port PORT] [--rdzv_id ID] [--max_replacements K]
        [--preload MODULE]... SCRIPT [ARG]...

Each rank is SCRIPT run with torchrun's environment (torch 1.13,
torch/distributed/elastic/agent/server/local_elastic_agent.py,
_start_workers(): RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_USE_AGENT_STORE
and the rest), so that a script written for torchrun runs unchanged: its
dist.init_process_group() with the env:// rendezvous connects, as under
torchrun, to the TCPStore this launcher hosts (a process of its own), under
the prefix of TORCHELASTIC_RESTART_COUNT (torch/distributed/rendezvous.py,
_create_c10d_store()).  One node only: --nnodes is not taken.

Where torchrun restarts every rank when one fails, hbmguard.run replaces
that one only, when the rank said before it ended that its device is lost:
hbmguard.torch.Guard, on CUDA's ECC error, leaves "lost.EPOCH.RANK" in
HBMGUARD_RUN_DIR, answers FAILED to hbmguardd (which ends the process) and
exits EXIT_REPLACE.  The replacement is a new process for the same rank,
started with TORCHELASTIC_RESTART_COUNT one higher (a new rendezvous
prefix: the epoch) and HBMGUARD_JOINS=1; the Guard in the surviving ranks
sees the epoch change in the run directory, builds the process group again
in-process at that epoch, and hands the newcomer the job's state (see
there); the newcomer leaves "joined.EPOCH" once it has it.  Any other end
(an exception, a signal, hbmguard.torch.Aborted), two ranks lost at once,
or a rank ending while a replacement has not joined yet ends the job as
torchrun would: the other ranks get SIGTERM, then SIGKILL, and the launcher
exits with the failed rank's status.  Every rank and the store get SIGKILL
if the launcher itself dies (PR_SET_PDEATHSIG).

--preload imports modules once in the launcher and forks each rank from
it, SCRIPT then run by runpy: a replacement starts without paying torch's
import (seconds, or a minute under emulation) while its peers wait.  The
launcher stays single-threaded for that: the store lives in a child.

HBMGUARD_RUN_DIR (a private directory the launcher makes and removes) holds
"epoch" (the launcher's: the current epoch, the rank replaced last and its
new pid) and what each rank keeps there of its own (hbmguard.torch).

Every rank, a replacement too, gets the run's HBMGUARD_JOB_KEY: the
launcher's own if its environment has one, else 32 hex digits drawn once
for the run (hbmguard.h: the job is then its key's holders' only, whatever
else runs as the same uid).
"""
import argparse
import ctypes
import json
import os
import runpy
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

EXIT_REPLACE = 75   # sysexits.h EX_TEMPFAIL: this process cannot go on; another can
TERM_GRACE = 10.0   # seconds from SIGTERM to SIGKILL when the job ends
STORE_WAIT = 600.0  # seconds for the store's process to listen (an import of torch)
PR_SET_PDEATHSIG = 1    # <linux/prctl.h>
STOPS = {signal.SIGTERM, signal.SIGINT}


LAUNCHER = os.getpid()


def die_with_parent():
    """In a child: SIGKILL when the launcher dies, not an orphan training
    on (prctl(2), PR_SET_PDEATHSIG); a launcher already gone: now.  And
    SIGTERM and SIGINT as a fresh interpreter has them, let through."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != LAUNCHER:
        os._exit(1)


def parse(argv):
    p = argparse.ArgumentParser(prog="python3 -m hbmguard.run",
                                description="torchrun's local launch, replacing a lost rank")
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, required=True)
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1")
    p.add_argument("--master_port", "--master-port", type=int, default=29500)
    p.add_argument("--rdzv_id", "--rdzv-id", "--run_id", default="none",
                   help="the job's id (TORCHELASTIC_RUN_ID)")
    p.add_argument("--max_replacements", "--max-replacements", type=int, default=3)
    p.add_argument("--preload", action="append", default=[],
                   help="a module to import once, the ranks forked after it")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if not 1 <= a.nproc_per_node <= 4096:
        p.error("--nproc_per_node: %d is not 1..4096" % a.nproc_per_node)
    if not 0 < a.master_port < 65536:
        p.error("--master_port: %d is not a port" % a.master_port)
    if a.max_replacements < 0:
        p.error("--max_replacements: %d is negative" % a.max_replacements)
    return a


def describe(status):
    """A wait status as subprocess gives it: exit N, or a signal's name."""
    return "signal %s" % signal.Signals(-status).name if status < 0 else "exit %d" % status


class Process:
    """A child: a fresh interpreter, or forked from this one (--preload)."""

    def __init__(self, argv, env, fork, pass_fds=(), close_fd=None):
        self.status = None
        if not fork:
            self._popen = subprocess.Popen(argv, env=env, pass_fds=pass_fds,
                                           preexec_fn=die_with_parent)
            self.pid = self._popen.pid
            return
        self._popen = None
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                # As a fresh interpreter would have it, and the launcher's
                # pipe to its store not held open by a rank.
                die_with_parent()
                if close_fd is not None:
                    os.close(close_fd)
                os.environ.clear()
                os.environ.update(env)
                sys.argv = argv[1:]
                runpy.run_path(argv[1], run_name="__main__")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def poll(self):
        if self.status is None:
            if self._popen:
                self.status = self._popen.poll()
            else:
                pid, st = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.status = os.waitstatus_to_exitcode(st)
        return self.status

    def signal(self, sig):
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


def serve_store(addr, port, fd, ready):
    """The rendezvous' TCPStore, as torchrun's agent hosts it, until the
    launcher is gone (fd, its pipe, reads end of file).  Writes a byte to
    ready once it listens: a port taken (another job's store) must fail
    this job, not join that one."""
    from datetime import timedelta
    from torch.distributed import TCPStore
    store = TCPStore(addr, port, None, True, timedelta(hours=24), wait_for_workers=False)
    os.write(ready, b"1")
    os.close(ready)
    while os.read(fd, 4096):
        pass
    del store


class Interrupted(Exception):
    """The launcher was told to stop (SIGTERM, SIGINT): so is the job."""


def interrupted(sig, frame):
    raise Interrupted(signal.Signals(sig).name)


class Launcher:
    def __init__(self, a):
        self.a = a
        self.world = a.nproc_per_node
        self.epoch = 0
        self.replaced = []      # (time, rank, how the old one ended, old pid, new pid)
        self.dir = tempfile.mkdtemp(prefix="hbmguard-run-", dir=self._tmp())
        self.key = os.environ.get("HBMGUARD_JOB_KEY") or secrets.token_hex(16)
        self.fork = bool(a.preload)
        for m in a.preload:
            __import__(m)

    @staticmethod
    def _tmp():
        for d in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
            if d and os.access(d, os.W_OK):
                return d
        return None

    def _env(self, rank, joins):
        env = dict(os.environ)
        env.update({
            "LOCAL_RANK": str(rank), "RANK": str(rank), "GROUP_RANK": "0",
            "ROLE_RANK": str(rank), "ROLE_NAME": "default",
            "LOCAL_WORLD_SIZE": str(self.world), "WORLD_SIZE": str(self.world),
            "GROUP_WORLD_SIZE": "1", "ROLE_WORLD_SIZE": str(self.world),
            "MASTER_ADDR": self.a.master_addr, "MASTER_PORT": str(self.a.master_port),
            "TORCHELASTIC_RESTART_COUNT": str(self.epoch),
            "TORCHELASTIC_MAX_RESTARTS": "0",
            "TORCHELASTIC_RUN_ID": self.a.rdzv_id,
            "TORCHELASTIC_USE_AGENT_STORE": "True",
            "NCCL_ASYNC_ERROR_HANDLING": os.environ.get("NCCL_ASYNC_ERROR_HANDLING", "1"),
            "HBMGUARD_RUN_DIR": self.dir,
            "HBMGUARD_JOB_KEY": self.key,
        })
        env.pop("HBMGUARD_JOINS", None)
        if joins:
            env["HBMGUARD_JOINS"] = "1"
        return env

    def _start(self, rank, joins=False):
        return Process([sys.executable, self.a.script] + self.a.args,
                       self._env(rank, joins), self.fork, close_fd=self.alive)

    def _publish_epoch(self, rank, pid):
        tmp = os.path.join(self.dir, ".epoch")
        with open(tmp, "w") as f:
            json.dump({"epoch": self.epoch, "rank": rank, "pid": pid}, f)
        os.replace(tmp, os.path.join(self.dir, "epoch"))

    def _end(self, procs):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)     # a second ^C: SIGKILL comes anyway
        for p in procs:
            p.signal(signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in procs:
            p.signal(signal.SIGKILL)
        for p in procs:
            while p.poll() is None:
                time.sleep(0.01)

    def run(self):
        self.procs = []
        self.alive, self.store = None, None
        signal.signal(signal.SIGTERM, interrupted)
        signal.signal(signal.SIGINT, interrupted)
        try:
            self._store()
            return self._supervise(self.procs)
        except Interrupted as e:
            print("hbmguard.run: %s: the job ends" % e, file=sys.stderr, flush=True)
            self._end(self.procs)
            return 1
        except RuntimeError as e:
            print("hbmguard.run: %s" % e, file=sys.stderr, flush=True)
            self._end(self.procs)
            return 1
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)     # nothing left half done
            if self.alive is not None:
                os.close(self.alive)
            if self.store is not None:
                self.store.signal(signal.SIGTERM)
                while self.store.poll() is None:
                    time.sleep(0.01)
            shutil.rmtree(self.dir, ignore_errors=True)

    def _store(self):
        """The store's process, listening, and the pipe whose closing ends it."""
        r, w = os.pipe()
        ready_r, ready_w = os.pipe()
        if self.fork:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.close(w)
                    os.close(ready_r)
                    die_with_parent()
                    serve_store(self.a.master_addr, self.a.master_port, r, ready_w)
                    code = 0
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(code)
            store = Process.__new__(Process)
            store.pid, store.status, store._popen = pid, None, None
        else:
            store = Process([sys.executable, "-c", "import sys, hbmguard.run as r; "
                             "r.serve_store(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), "
                             "int(sys.argv[4]))", self.a.master_addr, str(self.a.master_port),
                             str(r), str(ready_w)], dict(os.environ), False,
                            pass_fds=(r, ready_w))
        os.close(r)
        os.close(ready_w)
        self.alive = w
        self.store = store
        ready = select.select([ready_r], [], [], STORE_WAIT)[0] and os.read(ready_r, 1)
        os.close(ready_r)
        if ready != b"1":
            raise RuntimeError("the store did not listen on %s:%d" % (
                self.a.master_addr, self.a.master_port))

    def _lost(self, rank):
        """Whether rank said it lost its device at this epoch (the Guard)."""
        return os.path.exists(os.path.join(self.dir, "lost.%d.%d" % (self.epoch, rank)))

    def _joined(self):
        return self.epoch == 0 or os.path.exists(os.path.join(self.dir, "joined.%d" % self.epoch))

    def _supervise(self, procs):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)     # a start is a child known
        procs.extend(self._start(r) for r in range(self.world))
        self._publish_epoch(None, None)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
        while True:
            if all(p.poll() == 0 for p in procs):
                return 0
            ended = [(r, p) for r, p in enumerate(procs) if p.poll() not in (None, 0)]
            if self.store.poll() is not None:
                raise RuntimeError("the store's process ended (%s)" % describe(self.store.status))
            if len(ended) == 1:
                r, p = ended[0]
                alive = [q for q in procs if q.poll() is None]
                why = None
                if not self._lost(r):
                    why = "the job ends"
                elif not self._joined():
                    why = "epoch %d's replacement has not joined: the job ends" % self.epoch
                elif not alive:
                    why = "no rank left to hand it the job's state: the job ends"
                elif len(self.replaced) >= self.a.max_replacements:
                    why = "%d replacements made: the job ends" % len(self.replaced)
                if why is None:
                    signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
                    self.epoch += 1
                    new = self._start(r, joins=True)
                    procs[r] = new
                    self._publish_epoch(r, new.pid)
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)
                    self.replaced.append((time.time(), r, describe(p.status), p.pid, new.pid))
                    print("hbmguard.run: rank %d (pid %d) lost its device (%s): pid %d "
                          "replaces it, epoch %d" % (r, p.pid, describe(p.status), new.pid,
                                                      self.epoch), file=sys.stderr, flush=True)
                    continue
                ended_by = "rank %d (pid %d) ended (%s): %s" % (r, p.pid, describe(p.status), why)
            elif ended:
                r, p = ended[0]
                ended_by = "ranks %s ended at once: the job ends" % ", ".join(
                    "%d (%s)" % (rr, describe(pp.status)) for rr, pp in ended)
            else:
                time.sleep(0.05)
                continue
            print("hbmguard.run: %s" % ended_by, file=sys.stderr, flush=True)
            self._end(procs)
            return p.status if p.status > 0 else 128 - p.status


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    sys.exit(Launcher(a).run())


if __name__ == "__main__":
    main()
