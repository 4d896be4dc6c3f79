# SPDX-License-Identifier: LGPL-2.1-or-later
"""Keep a data-parallel PyTorch job training through the loss of device memory.

    import hbmguard, hbmguard.torch
    ap = hbmguard.Aperture("sim2", 0, 1 << 20)
    ap.restore(0, ap.length)                        # see below
    hbmguard.torch.place_parameters(model, ap)     # the weights live on the device
    model = DistributedDataParallel(model)
    guard = hbmguard.torch.Guard(model, optimizer, job="run-42", device="sim:sim2",
                                 apertures=[ap])        # the device's identity

    def step():                                     # as for optimizer.step(closure)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss

    for x, y in data:
        loss = guard.step(step)

Guard.step() runs the closure, then asks every rank, in one small all_reduce,
whether the step is sound: no rank touched lost memory (its aperture's guard
counted a loss) and hbmguardd asked none to pause.  A sound step is committed
(optimizer.step(), or scaler.step(optimizer) and scaler.update() when a
scaler is given).  Otherwise no rank commits it, since its gradients went
through the all_reduce with the lost data in them; every rank follows the
daemon's incident instead: PAUSED; on RESTORE every rank puts back what the
step changed (below), the failed rank maps its lost pages back (zeroed), the
ranks check that they are replicas of each other (each tensor among the
ranks that still hold it: a 62-bit digest computed on the tensor's device,
one pass over the state), and every rank takes the parameters and the
optimizer's tensors from the lowest healthy rank by broadcast, which is
exact since the replicas are equal; RESTORED; on
RESUME the step runs again from the same state, so the job computes what it
would have without the fault.

What the step changed and the Guard puts back, from a copy taken before
each step: the random generators the step may draw from (torch's CPU
generator, every CUDA device's once CUDA is initialized, Python's random,
NumPy's global one when NumPy is importable; a generator object of the
job's own is its own business: draw it outside the closure), and the
module's buffers (BatchNorm's running statistics: DDP broadcasts rank 0's
before each forward, then each rank updates its own).  With
closure_steps=True the closure owns the optimizer step (optimizer.step() or
scaler.step(); scaler.update() in it, as AMP's recipes write it): the Guard
then calls neither, and puts back the parameters (the model's and any other
the optimizer steps), the optimizer's state and hyperparameters, in place,
and the scaler's state (its state_dict(): give the Guard the scaler, or the
re-run starts from the thrown-away step's scale) too, which costs a copy of
them per step; without it the Guard commits, and
a copy of the buffers and the generators is all a step copies (under
hbmguard.run, written to the run directory too: _keep_own()).  Either way
the closure may call scaler.unscale_(optimizer) to clip the gradients: a
thrown-away step's unscale_() is forgotten.

Recovered bit for bit: replicated data parallelism (DDP) on one node, with
buffers, AMP's scaler and the generators above.  Anything else ends with
Aborted, never a broadcast that would diverge or hang: a world of one rank
has no replica; states that are not replicas (FSDP, ZeRO, tensor or pipeline
parallel shards) fail the ranks' check, and so does a state of which the
loss left nothing to compare at a world of two; the daemon escalating (its
[Recovery] deadlines, a second error) or going away mid-recovery.  Every
rank agrees on it before it raises, so none is left in a collective.

The Guard waits for the daemon's requests as long as the daemon's own
deadlines allow (the longest an incident may take, hbmguard.deadlines(),
asked at each registration: PauseTimeout + RestoreTimeout on one node, more
across nodes; a daemon too old to say: its defaults), and a little
longer for the daemon's ABORT to arrive: the daemon, not the Guard, decides
when a recovery took too long.

Without hbmguardd (registration fails on any rank), Guard warns and leaves
memory unguarded: a lost page kills the rank with SIGBUS, as it would have.
When hbmguardd restarts under a running job, every rank registers again at
the next step boundary; if that fails, the job goes on unprotected, and when a
rank loses memory then, every rank stops at the step boundary (Aborted).

A fresh aperture's pages lost before the job started read SIGBUS until
written: restore() all of it before placing the parameters there.  The
collective steps use the default process group, on its backend's device
(CUDA for NCCL, the CPU otherwise); every rank in it must be one this daemon
drives (a single node).
"""
import copy
import ctypes
import errno
import gc
import json
import os
import pickle
import random
import select
import struct
import sys
import time
import traceback
import zlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import hbmguard

try:
    import numpy
except ImportError:
    numpy = None

__all__ = ["Guard", "Aborted", "place_parameters"]

RECONNECT_WAIT = 10.0   # seconds for systemd to bring hbmguardd back
# hbmguardd's [Recovery] defaults (daemon/config.c), for a daemon that does
# not report its own; and the time its ABORT takes to come after a deadline.
PAUSE_TIMEOUT, RESTORE_TIMEOUT, DEADLINE_SLACK = 30.0, 120.0, 10.0
# The longest a step may take in daemon/config.c's parser; a daemon saying
# more (or 0) is not one this module knows, and gets its defaults.
LONGEST_DEADLINE = 3600.0
# _keep_own()'s record: magic, the step it was kept at, the length and the
# CRC-32 of the pickled state that follows.
_OWN, _OWN_MAGIC = struct.Struct("<8sQQI4x"), b"hbmown1\0"
KILL_TIMEOUT = 10.0     # [Recovery] KillTimeout's default: SIGTERM to SIGKILL
EXIT_REPLACE = 75       # hbmguard.run's: this process cannot go on, another can
# What CUDA says once an uncorrectable ECC error (Xid 94, 95) has ended the
# process's context: cudaErrorECCUncorrectable (214, CUDA's driver_types.h),
# in cudaGetErrorString()'s words, which torch raises as
# RuntimeError("CUDA error: ...") (c10/cuda/CUDAException.h, C10_CUDA_CHECK).
CUDA_ECC_ERROR = "uncorrectable ECC error encountered"


class Aborted(RuntimeError):
    """The job cannot be recovered in place: it falls back to its launcher."""


def place_parameters(module, aperture, offset=0):
    """Move every parameter of module into aperture's memory, from byte
    offset; returns the bytes used.  The values are kept."""
    flat = torch.frombuffer(aperture.buffer, dtype=torch.uint8)
    for p in module.parameters():
        nbytes = p.numel() * p.element_size()
        if offset + nbytes > aperture.length:
            raise ValueError("the parameters need more than the aperture's %d bytes"
                             % aperture.length)
        view = flat[offset:offset + nbytes].view(p.dtype).view(p.shape)
        view.copy_(p.data)
        p.data = view
        offset += (nbytes + 63) // 64 * 64
    return offset


def _collective_device():
    """Where the default group's collectives take their tensors: NCCL only
    CUDA tensors of the current device, the others CPU tensors.  torch 1.13
    (Debian bookworm's python3-torch 1.13.1+dfsg-4) has no per-group device
    query; get_backend() is its way (torch/distributed/distributed_c10d.py)."""
    if dist.get_backend() == dist.Backend.NCCL:
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _rng_state():
    state = {"torch": torch.get_rng_state(), "random": random.getstate()}
    # Asking before CUDA is initialized would initialize it, in a job that
    # may not use it.
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if numpy is not None:
        state["numpy"] = numpy.random.get_state()
    return state


def _portable_rng(state):
    """_rng_state() with torch's generators' states as bytes: pickling a
    tensor goes through torch.save() (torch 1.13, torch/storage.py,
    _StorageBase.__reduce__()), at a cost _keep_own() pays at every step."""
    state = dict(state, torch=_raw(state["torch"]))
    if "cuda" in state:
        state["cuda"] = [_raw(t) for t in state["cuda"]]
    return state


def _torch_rng(state):
    """_portable_rng()'s inverse."""
    state = dict(state, torch=torch.frombuffer(bytearray(state["torch"]), dtype=torch.uint8))
    if "cuda" in state:
        state["cuda"] = [torch.frombuffer(bytearray(b), dtype=torch.uint8)
                         for b in state["cuda"]]
    return state


def _raw(t):
    """t's bytes, in the host's memory (without NumPy, which is optional)."""
    t = t.detach().cpu().contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b""


def _set_rng_state(state):
    torch.set_rng_state(state["torch"])
    random.setstate(state["random"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])
    if "numpy" in state:
        numpy.random.set_state(state["numpy"])


_DIGEST_CHUNK = 1 << 22         # elements widened to int64 at a time
_DIGEST_MASK = (1 << 62) - 1    # room for the negation in _replica_check
# splitmix64's constants (Steele, Lea, Flood 2014), as signed int64s for torch
_MIX = [c - (1 << 64) if c >= 1 << 63 else c
        for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)]


def _mix(x):
    """splitmix64's finalizer on int64s, wrapping: a bijection that spreads
    every bit of x over all of the result, so that a sum of mixed words
    does not cancel structured differences (a tensor and its double, its
    negation) as a sum of the words themselves would.  torch's >> on int64
    is arithmetic, not logical: the same fixed bijection on every device."""
    x = (x ^ (x >> 30)) * _MIX[1]
    x = (x ^ (x >> 27)) * _MIX[2]
    return x ^ (x >> 31)


def _digest(t):
    """A 62-bit digest of t's dtype, shape and values, computed where t is.
    Hashing on the host would copy every tensor there: minutes at billions
    of parameters, against a recovery's deadline of two.  The sum, wrapping,
    of _mix(word + position * golden ratio) over t's 32-bit words (bytes
    when its size is not a multiple of 4): not a cryptographic hash, but no
    accidental difference between two ranks' states leaves it equal but by
    chance; the ranks are not each other's adversaries."""
    h = torch.tensor(zlib.crc32(("%s%s" % (t.dtype, tuple(t.shape))).encode()),
                     dtype=torch.int64, device=t.device)
    flat = t.detach().resolve_conj().reshape(-1).contiguous().view(torch.uint8)
    words = flat
    if flat.numel() % 4 == 0:
        if flat.storage_offset() % 4:   # the same values digest alike wherever they lie
            flat = flat.clone()
        words = flat.view(torch.int32)
    for i in range(0, words.numel(), _DIGEST_CHUNK):
        w = words[i:i + _DIGEST_CHUNK].to(torch.int64)
        pos = torch.arange(i, i + w.numel(), dtype=torch.int64, device=t.device)
        h += _mix(w + pos * _MIX[0]).sum()
    return h & _DIGEST_MASK


class _NoLoss:
    """A request with no failed rank: every rank knows all of its state."""
    failed_rank = -1


def _context_lost(e):
    """Whether e says this process's device context is gone for good."""
    return isinstance(e, RuntimeError) and CUDA_ECC_ERROR in str(e)


def _extent(t):
    """[first, last) bytes of the address space that t's elements occupy."""
    if t.numel() == 0:
        return 0, 0
    span = 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()))
    low = t.data_ptr() - sum((n - 1) * st for n, st in zip(t.shape, t.stride())
                             if st < 0) * t.element_size()
    return low, low + span * t.element_size()


class Guard:
    """One rank's side of hbmguard's recovery; see the module's help.

    scaler: an AMP scaler (torch.cuda.amp.GradScaler's interface: step,
    update, state_dict, load_state_dict).  closure_steps: the closure makes
    the optimizer step itself.  timeout: seconds a recovery may take in all;
    None: the daemon's deadlines.  state: other objects of the job with a
    state_dict() and load_state_dict() (a learning-rate scheduler, a
    sampler), which a replaced rank's process takes from a healthy one.
    job: the job's id, the same on every node; None: the launcher's
    (hbmguard.job_id(): torchrun's --rdzv_id, or Slurm's job id)."""

    def __init__(self, model, optimizer, job, device, apertures=(), socket=None,
                 scaler=None, closure_steps=False, timeout=None, state=()):
        self.model, self.optimizer, self.scaler = model, optimizer, scaler
        self.state = list(state)
        self.closure_steps = closure_steps
        self.apertures = list(apertures)
        self.timeout = timeout
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.steps = 0          # committed
        self.rerun = 0          # steps thrown away and run again
        self.lost_pages = 0     # touches of lost memory the guard absorbed
        self.incidents = []     # (incident, failed rank, seconds paused)
        self.reconnects = 0     # registrations again after hbmguardd restarted
        self._device = _collective_device()
        # until the daemon says otherwise (_connect())
        self.recovery_timeout = timeout if timeout is not None else \
            PAUSE_TIMEOUT + RESTORE_TIMEOUT + DEADLINE_SLACK
        self._pending = []
        self._identity = dict(job=job if job is not None else hbmguard.job_id(),
                              rank=self.rank, world_size=self.world_size,
                              device=device, socket=socket,
                              ranges=[(a.offset, a.length) for a in self.apertures])
        self._rank = None
        self._guarded = False   # lost pages read zero: this process will not see SIGBUS
        self.kill_timeout = KILL_TIMEOUT
        # Under hbmguard.run a rank whose process is lost is replaced: the
        # run directory says when (its "epoch"), and keeps what is each
        # rank's own (generators, buffers) for its replacement.
        self._run_dir = os.environ.get("HBMGUARD_RUN_DIR")
        self._epoch = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        self._own_fds = [None, None]    # _keep_own()'s files
        self._own_failed = False        # one of its writes failed (said once)
        self.replacements = []  # (epoch, rank replaced, seconds from the failure to rejoined)
        self._warm_up = False   # a DDP built again: its first step is thrown away
        self._verify_in = 0     # steps to the check that a replacement left replicas
        joins = self._run_dir and os.environ.get("HBMGUARD_JOINS") == "1"
        if joins:
            self._settle(self._local(self._join), None)
        # A newcomer's predecessor may still be registered for a moment.
        self._connect(wait=RECONNECT_WAIT if joins else 0.0)
        if joins:               # hbmguard.run: a rank lost from now on may be replaced
            self._mark("joined.%d" % self._epoch)

    def _connect(self, wait=0.0):
        """Register with hbmguardd, all ranks or none: the per-step check is
        a collective, and a rank alone without it would hang the others.
        wait: seconds to give a restarting daemon."""
        deadline = time.monotonic() + wait
        while True:
            try:
                self._rank = hbmguard.Rank(**self._identity)
                break
            except OSError as e:
                if time.monotonic() >= deadline:
                    print("hbmguard: rank %d not protected: %s" % (self.rank, e),
                          file=sys.stderr)
                    break
                time.sleep(0.1)
        self._agree_registration()

    def _agree_registration(self):
        """The collective half of _connect()."""
        if not self._agree(self._rank is not None) and self._rank:
            print("hbmguard: rank %d not protected: a peer is not" % self.rank, file=sys.stderr)
            self._rank.close()
            self._rank = None
        # Whether each step ends in a check once the daemon is gone: every
        # rank's, if any rank was ever protected (a newcomer that was not
        # joins survivors that were).
        self._guarded = not self._agree(not (self._guarded or self._rank is not None))
        if self._rank and self.apertures:
            hbmguard.Aperture.guard()
        if self._rank:          # a restarted daemon may have others
            self.recovery_timeout, self.kill_timeout = self._daemon_deadlines()

    def _daemon_deadlines(self):
        """Seconds a recovery may take in all, as the daemon will allow it."""
        try:
            d = hbmguard.deadlines(self._identity["socket"])
            pause, restore, kill, longest = d.pause, d.restore, d.kill, d.longest
            if not all(0 < t <= LONGEST_DEADLINE for t in (pause, restore, kill)) or \
                    longest and not pause + restore <= longest <= 6 * LONGEST_DEADLINE:
                raise OSError("hbmguardd says PauseTimeout=%ds RestoreTimeout=%ds "
                              "KillTimeout=%ds, %ds in all" % (pause, restore, kill, longest))
        except OSError as e:    # a daemon or library too old to say: its defaults
            print("hbmguard: rank %d: waiting for hbmguardd's defaults (%gs, %gs): %s" % (
                  self.rank, PAUSE_TIMEOUT, RESTORE_TIMEOUT, e), file=sys.stderr)
            pause, restore, kill, longest = PAUSE_TIMEOUT, RESTORE_TIMEOUT, KILL_TIMEOUT, 0
        if self.timeout is not None:
            return self.timeout, kill
        # longest: an incident across nodes may take more than its steps here
        return max(longest, pause + restore) + DEADLINE_SLACK, kill

    @property
    def protected(self):
        return self._rank is not None

    def step(self, closure):
        """Run closure (zero_grad, forward, backward, and with closure_steps
        the optimizer step; returns the loss) and commit the step, running
        it again after a recovery."""
        while True:
            saved = self._snapshot()
            self._keep_own(saved)
            try:
                if self._warm_up:
                    self._warm_up_ddp(closure, saved)
                loss = closure()
                if not self._must_recover():
                    if not self.closure_steps:
                        self._commit()
                    self.steps += 1
                    if self._verify_in:
                        self._verify_replicas()
                    return loss
                self._recover(saved)
            except Exception as e:
                if _context_lost(e) and self._run_dir and self._replaceable():
                    self._cannot_continue(e)
                loss = None     # its graph may hold DDP's reducer: _leave_group()
                if not self._replaced(saved, e):
                    raise
            self.rerun += 1

    # ---- a rank replaced (under hbmguard.run) ----------------------------
    #
    # A rank whose process cannot continue (CUDA's context lost to an
    # uncorrectable error) says so in the run directory, answers FAILED to
    # the incident (hbmguardd escalates it, and would end the process) and
    # ends; hbmguard.run starts a new one for the rank, at the next epoch.  The others meet the loss
    # as a collective that fails (gloo: the peer's connection closed, and
    # each survivor closes its own at once, so that none waits on a live
    # peer; NCCL is not supported: see _replaced()), see the new epoch in
    # the run directory, and build the process group again in-process:
    # destroy_process_group(), then
    # init_process_group() through the launcher's store under the epoch's
    # prefix (TORCHELASTIC_RESTART_COUNT, as the newcomer's script does
    # unchanged), and DDP's wrapper again, its own arguments, in place: the
    # script's reference to it stays good.  The newcomer's script runs from
    # its start: init_process_group(), the model, DDP, the optimizer, the
    # Guard; the Guard takes the parameters, the optimizer's and the
    # scaler's state and the step count from the lowest healthy rank by
    # broadcast, and what was the lost rank's own (its generators, its
    # buffers, as they were when the interrupted step began) from what that
    # rank kept in the run directory at each step's start.  Every rank then
    # runs the interrupted step again.  Between init_process_group() and the
    # Guard the script must make no collective but DDP's construction.

    def _mark(self, name):
        """Leave name in the run directory, for hbmguard.run."""
        with open(os.path.join(self._run_dir, name), "w"):
            pass

    def _keep_own(self, saved):
        """Keep this rank's own state at the step's start for a replacement,
        in one of two private files (the step count's parity) written in
        place with one pwrite(): a record that says which step it is of and
        the CRC-32 of its contents, so that one torn by the process's end
        reads as no record, and the other file still holds the step
        before.  torch.save() to a file renamed over the last one cost more
        than the rest of the Guard's step together (a zip archive, and
        three system calls on the directory)."""
        if not self._run_dir:
            return
        data = pickle.dumps({"rng": _portable_rng(saved["rng"]),
                             "buffers": [(str(b.dtype), tuple(b.shape), _raw(b))
                                         for b in saved["buffers"]]},
                            protocol=pickle.HIGHEST_PROTOCOL)
        record = _OWN.pack(_OWN_MAGIC, self.steps, len(data), zlib.crc32(data)) + data
        slot = self.steps % 2
        try:
            if self._own_fds[slot] is None:
                # O_NOFOLLOW: the run directory is the launcher's, but the
                # environment that names it is the script's.
                self._own_fds[slot] = os.open(self._own_path(slot), os.O_WRONLY | os.O_CREAT |
                                              os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            if os.pwrite(self._own_fds[slot], record, 0) != len(record):
                raise OSError(errno.ENOSPC, "a short write")
        except OSError as e:
            # A full run directory must not end a job that loses nothing:
            # this step is not kept, and a replacement at it aborts the job
            # (_kept_own() finds another step) instead.
            if not self._own_failed:
                print("hbmguard: rank %d: cannot keep its state for a replacement "
                      "(%s): a loss of this process will end the job" % (self.rank, e),
                      file=sys.stderr)
            self._own_failed = True

    def _own_path(self, slot):
        return os.path.join(self._run_dir, "rank%d.own.%d" % (self.rank, slot))

    def _kept_own(self, steps):
        """What the lost rank kept of its own at the start of step steps,
        as _keep_own() wrote it."""
        found = []
        for slot in (0, 1):
            try:
                fd = os.open(self._own_path(slot), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                continue
            with os.fdopen(fd, "rb") as f:
                record = f.read()
            if len(record) < _OWN.size:
                continue
            magic, kept, length, crc = _OWN.unpack_from(record)
            data = record[_OWN.size:_OWN.size + length]
            if magic != _OWN_MAGIC or len(data) != length or zlib.crc32(data) != crc:
                continue        # torn: the process ended while writing it
            if kept == steps:
                return pickle.loads(data)
            found.append(kept)
        raise ValueError("the lost rank kept its state of step %s, not %d" % (
            " or ".join(map(str, found)) or "none", steps))

    def _cannot_continue(self, error):
        """This process's device context is gone, under hbmguard.run: say
        so to the launcher (lost.EPOCH.RANK: replace this rank) and to
        hbmguardd (FAILED to its incident: it escalates it, the other ranks
        leave it), then end.  (Under another launcher the error is the
        job's, as it would be without the Guard.)"""
        print("hbmguard: rank %d cannot continue: %s" % (self.rank, error), file=sys.stderr)
        sys.stderr.flush()
        self._mark("lost.%d.%d" % (self._epoch, self.rank))
        if self._rank:
            try:
                req = self._expect(hbmguard.PAUSE, time.monotonic() + self.recovery_timeout)
                self._rank.answer(req.incident, hbmguard.FAILED)
            except (Aborted, OSError) as e:
                print("hbmguard: rank %d: %s" % (self.rank, e), file=sys.stderr)
        os._exit(EXIT_REPLACE)

    def _read_epoch(self):
        try:
            with open(os.path.join(self._run_dir, "epoch")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def _replaceable(self):
        """Whether this job's ranks can be replaced at all (_replaced()):
        else a lost rank's error is the job's, as without hbmguard.run."""
        try:
            return dist.get_backend() != dist.Backend.NCCL and (self._ddp() or True)
        except Aborted:
            return False

    def _peer_lost(self):
        """A rank said at this epoch that it lost its device (_cannot_continue())."""
        prefix = "lost.%d." % self._epoch
        return any(n.startswith(prefix) for n in os.listdir(self._run_dir))

    def _replaced(self, saved, error):
        """After a collective failed: whether hbmguard.run replaced a lost
        peer, this rank then in the new group with it and the step to run
        again; False when there is nothing to do but raise error: not under
        hbmguard.run, no peer said it lost its device (an exception of the
        job's own, an escalation of hbmguardd's for another cause), an
        Aborted every rank agreed on, or NCCL, whose collectives a dead peer
        does not fail but hangs until its watchdog ends the process (not
        supported yet).  Waits as long as hbmguardd may take to end the
        lost rank's process, and the launcher to start another."""
        if not self._run_dir or isinstance(error, Aborted) or \
                dist.get_backend() == dist.Backend.NCCL or not self._peer_lost():
            return False
        began = time.monotonic()
        deadline = began + self.recovery_timeout + self.kill_timeout + DEADLINE_SLACK
        print("hbmguard: rank %d: a collective failed (%s): a peer lost its device, waiting "
              "for its replacement" % (self.rank, error), file=sys.stderr)
        ddp = self._ddp()       # Aborted for one that cannot be built again
        rebuilt = bool(ddp and ddp._has_rebuilt_buckets)
        backend = dist.get_backend()
        # The failed collective's frames hold the group and its work.
        traceback.clear_frames(error.__traceback__)
        self._leave_group(ddp)
        while True:
            epoch = self._read_epoch()
            if epoch and epoch["epoch"] > self._epoch:
                break
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        if epoch["rank"] == self.rank:
            return False        # this one was replaced: it is not to go on
        self._rejoin(epoch["epoch"], epoch["rank"], saved, ddp, rebuilt, backend)
        self.replacements.append((epoch["epoch"], epoch["rank"], time.monotonic() - began))
        return True

    def _ddp(self):
        """The model's DDP wrapper, if it is one this Guard can build again
        in place: on the default group, with no communication hook (the
        newcomer's script registers its own; the rebuilt one would have
        none, and their gradients' reductions would not match)."""
        ddp = self.model if isinstance(self.model, DistributedDataParallel) else None
        if ddp is None:
            return None
        if ddp.process_group is not dist.distributed_c10d._get_default_group():
            raise Aborted("rank %d: DDP on a group of its own cannot be rebuilt" % self.rank)
        if ddp._get_ddp_logging_data().get("comm_hook"):
            raise Aborted("rank %d: DDP with a communication hook cannot be rebuilt" % self.rank)
        return ddp

    def _leave_group(self, ddp):
        """Close this rank's connections of the broken group now: a peer
        blocked in a collective on them (gloo's ring: one that is not next
        to the lost rank) fails then too, and learns of the loss; it would
        wait out the group's timeout otherwise.  The group goes with its
        last reference: DDP's, its reducer's and its logger's too."""
        dist.destroy_process_group()
        if ddp is not None:
            ddp.reducer = ddp.logger = ddp.process_group = None
        gc.collect()

    def _rejoin(self, epoch, lost, saved, ddp, rebuilt, backend):
        self._put_back(saved)
        # DDP's construction broadcasts rank 0's parameters and buffers: the
        # newcomer's, when it is rank 0.
        with torch.no_grad():
            kept = [p.detach().clone() for p in self.model.parameters()]
            kept_buffers = [b.detach().clone() for b in self.model.buffers()]
        os.environ["TORCHELASTIC_RESTART_COUNT"] = str(epoch)
        dist.init_process_group(backend)
        self._epoch = epoch
        if ddp is not None:
            ddp.__init__(ddp.module, device_ids=ddp.device_ids, output_device=ddp.output_device,
                         dim=ddp.dim, broadcast_buffers=ddp.broadcast_buffers,
                         bucket_cap_mb=ddp.bucket_bytes_cap / (1 << 20),
                         find_unused_parameters=ddp.find_unused_parameters,
                         gradient_as_bucket_view=ddp.gradient_as_bucket_view,
                         static_graph=ddp.static_graph)
        with torch.no_grad():
            for p, v in zip(self.model.parameters(), kept):
                p.copy_(v)
            for b, v in zip(self.model.buffers(), kept_buffers):
                b.copy_(v)
        self._device = _collective_device()
        self._drain_quietly()   # the lost rank's incident, escalated: over
        self._pending = []
        self._settle(self._transfer(lost, rebuilt), None)
        self._agree_registration()

    def _drain_quietly(self):
        try:
            if self._rank:
                self._drain()
        except OSError:
            pass

    def _transfer(self, lost, rebuilt=False):
        """What the newcomer (rank lost) gets: the replicas' state from the
        lowest healthy rank, its own from the run directory.  A collective;
        None, or why this rank cannot go on."""
        src = 0 if lost != 0 else 1
        meta = [None]
        if self.rank == src:
            meta[0] = {"steps": self.steps, "optimizer": self.optimizer.state_dict(),
                       "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                       "state": [o.state_dict() for o in self.state], "rebuilt": rebuilt}
        dist.broadcast_object_list(meta, src)
        meta = meta[0]
        why = None
        if self.rank == lost:
            why = self._local(self._take, meta)
        elif meta["steps"] != self.steps:
            why = "rank %d: at step %d, rank %d at %d" % (self.rank, self.steps, src,
                                                         meta["steps"])
        elif any(a.lost() for a in self.apertures):     # a second loss: not a source
            why = "rank %d lost memory too" % self.rank
        if not self._agree(why is None):
            return why or "rank %d: a peer cannot take part in the replacement" % self.rank
        self._broadcast_state(src)
        # DDP lays its gradient buckets out again after its first iteration
        # (below): only a DDP that had will be warmed up.
        self._warm_up = self._ddp() is not None and meta["rebuilt"]
        self._verify_in = 2
        return None

    def _take(self, meta):
        """The newcomer's own part of _transfer()."""
        self.optimizer.load_state_dict(meta["optimizer"])
        if meta["scaler"]:
            self.scaler.load_state_dict(meta["scaler"])
        if len(meta["state"]) != len(self.state):
            raise ValueError("the job keeps %d objects' state, this rank %d" % (
                len(meta["state"]), len(self.state)))
        for o, st in zip(self.state, meta["state"]):
            o.load_state_dict(st)
        self._forget_unscale()
        own = self._kept_own(meta["steps"])
        buffers = list(self.model.buffers())
        if [k[:2] for k in own["buffers"]] != [(str(b.dtype), tuple(b.shape)) for b in buffers]:
            raise ValueError("the lost rank kept buffers of other types or shapes than this rank's")
        _set_rng_state(_torch_rng(own["rng"]))
        with torch.no_grad():
            for b, (_, _, r) in zip(buffers, own["buffers"]):
                if r:           # torch.frombuffer() refuses an empty buffer
                    b.copy_(torch.frombuffer(bytearray(r), dtype=torch.uint8)
                            .view(b.dtype).view(b.shape))
        self.steps = meta["steps"]

    def _join(self):
        """A newcomer's start: the job's state, as _transfer() hands it."""
        why = self._transfer(self.rank)
        if why:
            raise Aborted(why)

    def _warm_up_ddp(self, closure, saved):
        """Run a DDP built again through one step and throw it away, so that
        the step that counts reduces its gradients as the lost DDP did: DDP
        lays its gradient buckets out by parameter order when built, then
        again after its first iteration in the order the gradients became
        ready (torch 1.13, torch/nn/parallel/distributed.py, __init__'s
        Reducer and forward()'s reducer._rebuild_buckets(),
        _has_rebuilt_buckets), and the order of a bucket's elements decides
        where gloo's ring sums each of them from: the sums' last bits.  One
        step's compute, at a replacement only."""
        self._warm_up = False
        closure()
        self._put_back(saved)

    def _verify_replicas(self):
        """The second step after a replacement: whether every rank still
        holds the same state (a collective).  State the job keeps outside
        the Guard and did not give it (a scheduler's, say) starts afresh in
        the newcomer, and the replicas part from there: Aborted, not a
        silent divergence."""
        self._verify_in -= 1
        if self._verify_in:
            return
        why = self._replica_check(_NoLoss)
        if why:
            raise Aborted("after the replacement: %s; state kept outside the Guard? give "
                          "it as state=" % why)

    def close(self):
        if self._rank:
            self._rank.close()
            self._rank = None
        for i, fd in enumerate(self._own_fds):
            if fd is not None:
                os.close(fd)
                self._own_fds[i] = None

    def _commit(self):
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()

    def _params(self):
        """The model's parameters, then any other the optimizer steps (a
        loss's own, say): what a step changes and replicas share."""
        seen = set()
        for p in self.model.parameters():
            seen.add(id(p))
            yield p
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    yield p

    def _snapshot(self):
        """What a step may change that the broadcast does not put back."""
        with torch.no_grad():
            saved = {"rng": _rng_state(),
                     "buffers": [b.detach().clone() for b in self.model.buffers()]}
            if self.closure_steps:
                saved["params"] = [p.detach().clone() for p in self._params()]
                saved["optimizer"] = self._optimizer_state()
                if self.scaler is not None:
                    saved["scaler"] = copy.deepcopy(self.scaler.state_dict())
        return saved

    def _optimizer_state(self):
        """A copy of the optimizer's state and hyperparameters, to be put
        back in place: load_state_dict() would cast the state to each
        parameter's dtype (torch 1.13, torch/optim/optimizer.py, cast()) and
        replace the param_groups the job may hold."""
        state = [(p, {k: v.detach().clone() if torch.is_tensor(v) else copy.deepcopy(v)
                      for k, v in self.optimizer.state.get(p, {}).items()})
                 for p in self._params()]
        groups = [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
                  for g in self.optimizer.param_groups]
        return state, groups

    def _put_back_optimizer(self, saved):
        state, groups = saved
        for p, kept in state:
            live = self.optimizer.state.get(p)
            if live is None:
                if kept:
                    self.optimizer.state[p] = dict(kept)
                continue
            for k in list(live):
                if k not in kept:       # made by the thrown-away step
                    del live[k]
            for k, v in kept.items():
                if torch.is_tensor(v) and torch.is_tensor(live.get(k)) and \
                        live[k].shape == v.shape and live[k].dtype == v.dtype:
                    live[k].copy_(v)
                else:
                    live[k] = v
        for g, kept in zip(self.optimizer.param_groups, groups):
            g.update(kept)

    def _put_back(self, saved):
        with torch.no_grad():
            _set_rng_state(saved["rng"])
            for b, v in zip(self.model.buffers(), saved["buffers"]):
                b.copy_(v)
            if self.closure_steps:
                for p, v in zip(self._params(), saved["params"]):
                    p.copy_(v)
                self._put_back_optimizer(saved["optimizer"])
                if saved.get("scaler"):     # a disabled GradScaler's is empty
                    self.scaler.load_state_dict(saved["scaler"])
            self._forget_unscale()

    def _forget_unscale(self):
        """A closure that calls scaler.unscale_() (to clip the gradients, as
        AMP's recipe does) leaves the scaler refusing another unscale_()
        until update(), which the thrown-away step never reached: forget it,
        as update() does at its end, and nothing else of the step (torch
        1.13, torch/cuda/amp/grad_scaler.py: update() sets
        _per_optimizer_states to a fresh defaultdict; a disabled scaler has
        none)."""
        states = getattr(self.scaler, "_per_optimizer_states", None)
        if states is not None:
            states.clear()

    def _drain(self):
        """Take the daemon's waiting requests into _pending.  Some may sit in
        the library's queue (they came while it waited for a reply), where
        the fd does not show them: ask the library, not just the fd."""
        while True:
            req = self._rank.next()
            if req is None:
                return
            self._pending.append(req)

    def _agree(self, ok):
        """Whether every rank says ok (a collective)."""
        flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=self._device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def _must_recover(self):
        lost = any(a.lost() for a in self.apertures)
        if not self._rank:
            # Guarded once, the daemon gone since: a loss reads zero instead
            # of killing the rank, so every rank must hear of it, or the
            # others would wait for the one that stops in the next collective.
            if self._guarded and not self._agree(not lost):
                raise Aborted("rank %d: %s lost memory and hbmguardd is gone" % (
                    self.rank, "this rank" if lost else "a peer rank"))
            return False
        try:
            self._drain()
            gone = False
        except OSError:         # hbmguardd restarted: register again
            gone = True
        flags = torch.tensor([1 if lost or self._pending else 0, 1 if gone else 0],
                             dtype=torch.int32, device=self._device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        must, gone = flags.tolist()     # one copy from the device, not two
        if gone:
            self._rank.close()
            self._rank = None
            self._pending = []
            self._connect(wait=RECONNECT_WAIT)
            self.reconnects += 1
            return self._must_recover()
        return bool(must)

    def _expect(self, action, deadline):
        while True:
            self._drain()
            while self._pending:
                req = self._pending.pop(0)
                if req.action == hbmguard.ABORT:
                    raise Aborted("hbmguardd escalated incident %d" % req.incident)
                if req.action == action:
                    return req
            left = deadline - time.monotonic()
            if left <= 0:
                raise Aborted("hbmguardd asked for no %s within its deadlines"
                              % hbmguard.ACTIONS[action])
            poller = select.poll()      # select() cannot wait on an fd past 1023
            poller.register(self._rank.fileno(), select.POLLIN)
            poller.poll(left * 1000)

    def _settle(self, why, incident):
        """Go on only if every rank can (a collective): otherwise every rank
        raises Aborted.  The daemon escalates as the ranks leave; answering
        FAILED instead would have it end the failed rank's process at once,
        before the job could act on Aborted."""
        if self._agree(why is None):
            return
        raise Aborted(why or "rank %d: a peer rank cannot recover%s" % (
            self.rank, "" if incident is None else " from incident %d" % incident))

    def _follow(self, step, *args):
        """step(*args) of the daemon's protocol: None, or why it failed."""
        try:
            step(*args)
            return None
        except Aborted as e:
            return "rank %d: %s" % (self.rank, e)
        except OSError as e:    # ECONNRESET: hbmguardd went away (it escalates on return)
            return "rank %d: hbmguardd went away during the recovery (%s)" % (
                self.rank, e.strerror or e)

    def _local(self, step, *args):
        """step(*args), this rank's own part between two collectives: None,
        or why it failed.  A rank that raised here alone would leave the
        others waiting in the next collective."""
        try:
            step(*args)
            return None
        except Exception as e:
            return "rank %d: %s: %s" % (self.rank, type(e).__name__, e)

    def _recover(self, saved):
        began = time.monotonic()
        deadline = began + self.recovery_timeout
        got = {}

        def pause_restore():
            got["req"] = self._expect(hbmguard.PAUSE, deadline)
            self._rank.answer(got["req"].incident, hbmguard.PAUSED)
            got["req"] = self._expect(hbmguard.RESTORE, deadline)

        why = self._follow(pause_restore)
        req = got.get("req")
        incident = req.incident if req else None
        if why is None and self.world_size == 1:
            why = ("rank 0 lost memory and has no replica to restore it from "
                   "(world size 1)")
        self._settle(why, incident)

        self.lost_pages += sum(a.lost() for a in self.apertures)
        self._settle(self._local(self._restore_mine, req, saved), incident)
        self._settle(self._replica_check(req), incident)
        self._broadcast_state(0 if req.failed_rank != 0 else 1)

        def restored_resume():
            self._rank.answer(incident, hbmguard.RESTORED)
            self._expect(hbmguard.RESUME, deadline)

        self._settle(self._follow(restored_resume), incident)
        self.incidents.append((incident, req.failed_rank, time.monotonic() - began))

    def _restore_mine(self, req, saved):
        """Map the failed rank's lost pages back (zeroed) before anything is
        written there, then put back what the step changed."""
        if req.failed_rank == self.rank:
            for a in self.apertures:
                lo, hi = self._lost_in(a, req)
                if lo < hi:
                    a.restore(lo, hi - lo)
        self._put_back(saved)

    @staticmethod
    def _lost_in(aperture, req):
        """The device bytes [lo, hi) of req's loss within aperture."""
        return (max(aperture.offset, req.offset),
                min(aperture.offset + aperture.length, req.offset + req.length))

    def _lost_addresses(self, req):
        """[first, last) addresses of this process that req's loss hit."""
        for a in self.apertures:
            lo, hi = self._lost_in(a, req)
            if lo < hi:
                base = ctypes.addressof(a.buffer) - a.offset
                yield base + lo, base + hi

    def _state_tensors(self, owners=False):
        """What the replicas share: the parameters and the optimizer's
        tensors (with owners: (tensor, the parameter it belongs to)).
        Buffers are each rank's own, put back from its copy: DDP broadcasts
        rank 0's before each forward (broadcast_buffers), and each rank's
        forward updates its own from there."""
        params = list(self._params())
        for p in params:
            yield (p, p) if owners else p
        for p in params:
            state = self.optimizer.state.get(p, {})
            for key in sorted(state):
                if torch.is_tensor(state[key]):
                    yield (state[key], p) if owners else state[key]

    def _known(self, req):
        """For each of _state_tensors(): whether this rank still knows it.
        The failed rank does not know what its loss hit, nor any optimizer
        state of a parameter that was hit (a step it made with zeros read
        from there, committed before the loss showed, changed it); with two
        healthy ranks or more it takes no part at all."""
        pairs = list(self._state_tensors(owners=True))
        if req.failed_rank != self.rank:
            return [True] * len(pairs)
        if self.world_size > 2:
            return [False] * len(pairs)
        lost = list(self._lost_addresses(req))
        hit = {id(p) for t, p in pairs if t is p and
               any(lo < b and a < hi for a, b in lost for lo, hi in [_extent(p)])}
        return [id(p) not in hit and
                not any(lo < b and a < hi for a, b in lost for lo, hi in [_extent(t)])
                for t, p in pairs]

    def _replica_check(self, req):
        """None when the ranks hold the same state (collectives), else why
        not: a broadcast from one of them would replace the failed rank's
        shard with another's, or hang on tensors of other shapes.  Each
        tensor's dtype and shape are compared among all ranks, its values
        among the ranks that still know them (_known()): the healthy ranks,
        and with two ranks the failed one too, where its loss missed.  With
        no values compared at all, replicas cannot be told from shards and
        the job aborts."""
        whose = "" if req.failed_rank < 0 else \
            ", rank %d's cannot be restored from a peer" % req.failed_rank
        try:
            tensors = list(self._state_tensors())
            known = self._known(req)
            digests = [_digest(t).to(self._device) for t in tensors]
            shapes = [zlib.crc32(("%s%s" % (t.dtype, tuple(t.shape))).encode())
                      for t in tensors]
            error = 0
        except Exception as e:  # every rank learns it in the first collective
            print("hbmguard: rank %d: the replica check failed: %s: %s" % (
                  self.rank, type(e).__name__, e), file=sys.stderr)
            tensors, error = [], 1
        n = len(tensors) or -1  # no state at all: nothing to compare
        head = torch.tensor([n, -n, error], dtype=torch.int64, device=self._device)
        dist.all_reduce(head, op=dist.ReduceOp.MAX)
        if head[2].item():
            return "rank %d: a rank could not compare its state with its peers'" % self.rank
        if head[0].item() != -head[1].item():
            return ("rank %d: the ranks hold different numbers of tensors: not replicas "
                    "(sharded?)%s" % (self.rank, whose))
        if head[0].item() < 0:  # decided on what every rank sees, as above
            return "rank %d: the job has no state to compare" % self.rank
        # [v, -v] where known, the least value where not: the maximum of
        # both halves is then v and -v exactly when every rank that knows
        # the tensor holds the same.  Values first, then dtypes and shapes,
        # known to every rank.
        unknown = torch.full((), -(1 << 62), dtype=torch.int64, device=self._device)
        values = [d if k else unknown for d, k in zip(digests, known)] + \
            [torch.tensor(c, dtype=torch.int64, device=self._device) for c in shapes]
        mine = torch.stack(values + [-v if v is not unknown else unknown for v in values])
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        knowers = torch.tensor(known, dtype=torch.int32, device=self._device)
        dist.all_reduce(knowers, op=dist.ReduceOp.SUM)
        differ = mine[:2 * n] != -mine[2 * n:]
        if bool(differ[n:].any().item()):
            return ("rank %d: the ranks' tensors differ in dtype or shape: not replicas "
                    "(sharded?)%s" % (self.rank, whose))
        compared = knowers >= 2
        if not bool(compared.any().item()):
            return ("rank %d: nothing of rank %d's state survived to compare with a peer's: "
                    "replicas cannot be told from shards" % (self.rank, req.failed_rank))
        if bool((compared & differ[:n]).any().item()):
            return ("rank %d: the ranks' states differ: not replicas (sharded?)%s" % (
                self.rank, whose))
        return None

    def _broadcast_state(self, src):
        with torch.no_grad():
            for t in self._state_tensors():
                if t.device == self._device:
                    dist.broadcast(t, src)
                else:           # NCCL: an optimizer's CPU step count
                    staged = t.to(self._device)
                    dist.broadcast(staged, src)
                    t.copy_(staged)
