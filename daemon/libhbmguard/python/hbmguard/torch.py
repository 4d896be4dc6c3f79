# SPDX-License-Identifier: LGPL-2.1-or-later
"""Keep a data-parallel PyTorch job training through the loss of device memory.

    import hbmguard, hbmguard.torch
    ap = hbmguard.Aperture("sim2", 0, 1 << 20)
    hbmguard.torch.place_parameters(model, ap)     # the weights live on the device
    model = DistributedDataParallel(model)
    guard = hbmguard.torch.Guard(model, optimizer, job="run-42", device="sim2",
                                 apertures=[ap])

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
(optimizer.step()).  Otherwise no rank commits it, since its gradients went
through the all_reduce with the lost data in them; every rank follows the
daemon's incident instead: PAUSED; on RESTORE the failed rank maps its lost
pages back (zeroed) and every rank takes the model and optimizer state from
the lowest healthy rank by broadcast, which is exact since the replicas are
equal; RESTORED; on RESUME the step runs again from the same state and random
generator, so the job computes what it would have without the fault.  ABORT
(the daemon escalated) raises Aborted: the launcher restarts the job.

Without hbmguardd (registration fails on any rank), Guard warns and leaves
memory unguarded: a lost page kills the rank with SIGBUS, as it would have.
When hbmguardd restarts under a running job, every rank registers again at
the next step boundary; if that fails, the job goes on unprotected, and a
rank that loses memory then stops at its step boundary (Aborted).

The collective steps use the default process group; every rank in it must be
one this daemon drives (a single node).
"""
import select
import sys
import time

import torch
import torch.distributed as dist

import hbmguard

__all__ = ["Guard", "Aborted", "place_parameters"]

RECONNECT_WAIT = 10.0   # seconds for systemd to bring hbmguardd back


class Aborted(RuntimeError):
    """hbmguardd escalated the incident: the job falls back to its launcher."""


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


class Guard:
    """One rank's side of hbmguard's recovery; see the module's help."""

    def __init__(self, model, optimizer, job, device, apertures=(), socket=None,
                 timeout=60.0):
        self.model, self.optimizer = model, optimizer
        self.apertures = list(apertures)
        self.timeout = timeout
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.steps = 0          # committed
        self.rerun = 0          # steps thrown away and run again
        self.lost_pages = 0     # touches of lost memory the guard absorbed
        self.incidents = []     # (incident, failed rank, seconds paused)
        self.reconnects = 0     # registrations again after hbmguardd restarted
        self._pending = []
        self._identity = dict(job=job, rank=self.rank, world_size=self.world_size,
                              device=device, socket=socket,
                              ranges=[(a.offset, a.length) for a in self.apertures])
        self._rank = None
        self._connect()

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
        everyone = torch.tensor([1 if self._rank else 0], dtype=torch.int32)
        dist.all_reduce(everyone, op=dist.ReduceOp.MIN)
        if not everyone.item() and self._rank:
            print("hbmguard: rank %d not protected: a peer is not" % self.rank, file=sys.stderr)
            self._rank.close()
            self._rank = None
        if self._rank and self.apertures:
            hbmguard.Aperture.guard()

    @property
    def protected(self):
        return self._rank is not None

    def step(self, closure):
        """Run closure (zero_grad, forward, backward; returns the loss) and
        commit the step, running it again after a recovery."""
        while True:
            rng = torch.get_rng_state()
            loss = closure()
            if not self._must_recover():
                self.optimizer.step()
                self.steps += 1
                return loss
            self._recover()
            torch.set_rng_state(rng)
            self.rerun += 1

    def close(self):
        if self._rank:
            self._rank.close()
            self._rank = None

    def _drain(self):
        """Take the daemon's waiting requests into _pending.  Some may sit in
        the library's queue (they came while it waited for a reply), where
        the fd does not show them: ask the library, not just the fd."""
        while True:
            req = self._rank.next()
            if req is None:
                return
            self._pending.append(req)

    def _must_recover(self):
        lost = any(a.lost() for a in self.apertures)
        if not self._rank:
            if lost:            # guarded once, the daemon gone since
                raise Aborted("rank %d lost memory and hbmguardd is gone" % self.rank)
            return False
        try:
            self._drain()
            gone = False
        except OSError:         # hbmguardd restarted: register again
            gone = True
        flags = torch.tensor([1 if lost or self._pending else 0, 1 if gone else 0],
                             dtype=torch.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        if flags[1].item():
            self._rank.close()
            self._rank = None
            self._pending = []
            self._connect(wait=RECONNECT_WAIT)
            self.reconnects += 1
            return self._must_recover()
        return bool(flags[0].item())

    def _expect(self, action):
        deadline = time.monotonic() + self.timeout
        while True:
            self._drain()
            while self._pending:
                req = self._pending.pop(0)
                if req.action == hbmguard.ABORT:
                    raise Aborted("incident %d escalated" % req.incident)
                if req.action == action:
                    return req
            left = deadline - time.monotonic()
            if left <= 0:
                raise Aborted("hbmguardd asked for no %s in %.0f s"
                              % (hbmguard.ACTIONS[action], self.timeout))
            select.select([self._rank], [], [], left)

    def _recover(self):
        began = time.monotonic()
        req = self._expect(hbmguard.PAUSE)
        self._rank.answer(req.incident, hbmguard.PAUSED)
        req = self._expect(hbmguard.RESTORE)
        self.lost_pages += sum(a.lost() for a in self.apertures)
        if req.failed_rank == self.rank:
            for a in self.apertures:
                lo, hi = max(a.offset, req.offset), min(a.offset + a.length,
                                                         req.offset + req.length)
                if lo < hi:
                    a.restore(lo, hi - lo)
        self._broadcast_state(0 if req.failed_rank != 0 else 1)
        self._rank.answer(req.incident, hbmguard.RESTORED)
        self._expect(hbmguard.RESUME)
        self.incidents.append((req.incident, req.failed_rank, time.monotonic() - began))

    def _state_tensors(self):
        for t in self.model.state_dict().values():
            yield t
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                state = self.optimizer.state.get(p, {})
                for key in sorted(state):
                    if torch.is_tensor(state[key]):
                        yield state[key]

    def _broadcast_state(self, src):
        with torch.no_grad():
            for t in self._state_tensors():
                dist.broadcast(t, src)
