# SPDX-License-Identifier: LGPL-2.1-or-later
"""hbmguard for training processes: register a rank with hbmguardd and
follow its recovery requests, over libhbmguard (ctypes: nothing to compile).

    import hbmguard
    with hbmguard.Rank(job="run-42", rank=2, world_size=4,
                       device="pci:0000:3b:00.0") as r:
        ...
        req = r.next()                  # None, or a Recovery, at a step boundary
        if req and req.action == hbmguard.PAUSE:
            r.answer(req.incident, hbmguard.PAUSED)

device is the device's identity, as hbmctl devices shows it (a GPU's UUID;
not its name): the daemon refuses one the module does not have, ENODEV.
Rank.fileno() makes a Rank usable with select/poll/selectors.  Errors from
the library or the daemon are OSError with the errno it gave.

State kept in device memory lives in an Aperture; guarded, a page of it lost
to an uncorrectable error reads zero instead of killing the process, and
lost() says so at the next step boundary:

    ap = hbmguard.Aperture("sim2", 0, 1 << 20, guard=True)
    weights = memoryview(ap.buffer).cast("B").cast("f")
    ...
    if ap.lost():                       # discard the step, restore, re-run
        ap.restore(req.offset, req.length)

hbmguard.torch drives all of it for a PyTorch data-parallel job.
"""
import ctypes
import errno
import os
from collections import namedtuple

__all__ = ["Rank", "Recovery", "Aperture", "deadlines", "job_id", "PAUSE", "RESTORE", "RESUME",
           "ABORT", "PAUSED", "RESTORED", "FAILED", "ACTIONS"]

PAUSE, RESTORE, RESUME, ABORT = 1, 2, 3, 4
PAUSED, RESTORED, FAILED = 1, 2, 3
ACTIONS = {PAUSE: "pause", RESTORE: "restore", RESUME: "resume", ABORT: "abort"}
MAX_RANGES = 8


class _Range(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("length", ctypes.c_uint64)]


class _RankInfo(ctypes.Structure):         # struct hbmguard_rank_info
    _fields_ = [("job", ctypes.c_char * 64), ("device", ctypes.c_char * 64),
                ("rank", ctypes.c_uint32), ("world_size", ctypes.c_uint32),
                ("local_rank", ctypes.c_uint32), ("nr_ranges", ctypes.c_uint32),
                ("ranges", _Range * MAX_RANGES)]


class _Recovery(ctypes.Structure):         # struct hbmguard_recovery
    _fields_ = [("incident", ctypes.c_uint64), ("action", ctypes.c_uint32),
                ("failed_rank", ctypes.c_uint32), ("device", ctypes.c_char * 64),
                ("offset", ctypes.c_uint64), ("length", ctypes.c_uint64)]


class _Deadlines(ctypes.Structure):        # struct hbmguard_deadlines
    _fields_ = [("pause_timeout", ctypes.c_uint32), ("restore_timeout", ctypes.c_uint32),
                ("kill_timeout", ctypes.c_uint32), ("longest", ctypes.c_uint32)]


Recovery = namedtuple("Recovery", "incident action failed_rank device offset length")
class Deadlines(namedtuple("Deadlines", "pause restore kill")):
    """hbmguardd's deadlines: (pause, restore, kill), as ever (callers unpack
    three), and .longest, the longest an incident may take in all (0: not
    said)."""

    def __new__(cls, pause, restore, kill, longest=0):
        self = super().__new__(cls, pause, restore, kill)
        self.longest = longest
        return self


def _load():
    # The soname the bindings are written for, found by dlopen() as any
    # program's libraries are; not ctypes.util.find_library(), which runs
    # ldconfig -p in a subprocess (seconds under TCG, in every rank) and
    # would pick a later soname, of another ABI.
    name = os.environ.get("HBMGUARD_LIBRARY") or "libhbmguard.so.0"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.hbmguard_rank_register.argtypes = [ctypes.c_char_p, ctypes.POINTER(_RankInfo),
                                           ctypes.POINTER(ctypes.c_void_p)]
    lib.hbmguard_rank_fd.argtypes = [ctypes.c_void_p]
    lib.hbmguard_rank_next.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Recovery)]
    lib.hbmguard_rank_answer.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32]
    lib.hbmguard_rank_close.argtypes = [ctypes.c_void_p]
    lib.hbmguard_rank_close.restype = None
    if hasattr(lib, "hbmguard_recovery_deadlines"):    # a library older than it: deadlines()
        lib.hbmguard_recovery_deadlines.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Deadlines)]
    lib.hbmguard_aperture_open.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64,
                                           ctypes.POINTER(ctypes.c_void_p)]
    lib.hbmguard_aperture_addr.argtypes = [ctypes.c_void_p]
    lib.hbmguard_aperture_addr.restype = ctypes.c_void_p
    lib.hbmguard_aperture_lost.argtypes = [ctypes.c_void_p]
    lib.hbmguard_aperture_lost.restype = ctypes.c_uint64
    lib.hbmguard_aperture_restore.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                              ctypes.c_uint64]
    lib.hbmguard_aperture_close.argtypes = [ctypes.c_void_p]
    lib.hbmguard_aperture_close.restype = None
    return lib


_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib


def _check(ret, what):
    if ret < 0:
        raise OSError(-ret, "%s: %s" % (what, os.strerror(-ret)))
    return ret


class _Handle:
    """An object of the library, released once: by close(), at the end of
    a with block, or when collected."""

    _handle = None

    def _release(self):
        raise NotImplementedError

    def close(self):
        if self._handle:
            self._release()
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


def deadlines(socket=None):
    """hbmguardd's [Recovery] deadlines, in seconds: Deadlines(pause,
    restore, kill), and its .longest, an incident in all (across nodes too),
    0 from a daemon or libhbmguard too old to say it.  OSError(EOPNOTSUPP) from a daemon
    too old to say any, or a libhbmguard too old to ask."""
    lib = _library()
    if not hasattr(lib, "hbmguard_recovery_deadlines"):
        raise OSError(errno.EOPNOTSUPP, "asking hbmguardd's deadlines: %s has no "
                      "hbmguard_recovery_deadlines()" % lib._name)
    d = _Deadlines()
    _check(lib.hbmguard_recovery_deadlines(socket.encode() if socket else None,
                                                   ctypes.byref(d)),
           "asking hbmguardd's deadlines")
    return Deadlines(d.pause_timeout, d.restore_timeout, d.kill_timeout, d.longest)


def job_id():
    """The job's id as its launcher named it, the same on every node:
    torchrun's TORCHELASTIC_RUN_ID (its --rdzv_id), else Slurm's SLURM_JOB_ID
    (hbmguard_job_id()).  OSError(ENOENT) when neither names one (torchrun's
    default --rdzv_id, "none", names none), OSError(EINVAL) when it is not a
    name hbmguardd takes."""
    buf = ctypes.create_string_buffer(64)
    _check(_library().hbmguard_job_id(buf, ctypes.sizeof(buf)),
           "the job's id (TORCHELASTIC_RUN_ID, SLURM_JOB_ID)")
    return buf.value.decode()


class Rank(_Handle):
    """One training rank, registered with hbmguardd until close().  job:
    the job's id, the same on every node; None: job_id()'s.  With
    HBMGUARD_JOB_KEY in the environment the job is its key's holders' only
    (hbmguard.h); OSError(EINVAL) for a key hbmguardd would not take."""

    def __init__(self, job, rank, world_size, device, local_rank=None, ranges=(),
                 socket=None):
        _library()
        if job is None:
            job = job_id()
        if len(ranges) > MAX_RANGES:
            raise ValueError("at most %d ranges" % MAX_RANGES)
        info = _RankInfo(job=job.encode(), device=device.encode(), rank=rank,
                         world_size=world_size,
                         local_rank=rank if local_rank is None else local_rank,
                         nr_ranges=len(ranges))
        for i, (offset, length) in enumerate(ranges):
            info.ranges[i] = _Range(offset, length)
        handle = ctypes.c_void_p()
        _check(_lib.hbmguard_rank_register(socket.encode() if socket else None,
                                           ctypes.byref(info), ctypes.byref(handle)),
               "registering rank %d of %s" % (rank, job))
        self._handle = handle
        self.job, self.rank, self.world_size = job, rank, world_size

    def fileno(self):
        return _lib.hbmguard_rank_fd(self._handle)

    def next(self):
        """The next recovery request, or None when none is waiting."""
        req = _Recovery()
        ret = _lib.hbmguard_rank_next(self._handle, ctypes.byref(req))
        if ret == -errno.EAGAIN:
            return None
        _check(ret, "reading hbmguardd's requests")
        return Recovery(req.incident, req.action, req.failed_rank,
                        req.device.decode(), req.offset, req.length)

    def answer(self, incident, answer):
        _check(_lib.hbmguard_rank_answer(self._handle, incident, answer),
               "answering incident %d" % incident)

    def _release(self):
        _lib.hbmguard_rank_close(self._handle)


class Aperture(_Handle):
    """Bytes [offset, offset + length) of a memory-backed device, mapped
    read-write, as .buffer (memoryview(ap.buffer), torch.frombuffer).  With
    guard=True a lost page reads zero and is counted instead of raising
    SIGBUS (the guard is process-wide).  The buffer keeps the mapping: an
    Aperture goes only when nothing uses its memory any more, or at close(),
    after which its memory must not be touched."""

    def __init__(self, device, offset, length, guard=False):
        lib = _library()
        handle = ctypes.c_void_p()
        _check(lib.hbmguard_aperture_open(device.encode(), offset, length,
                                          ctypes.byref(handle)),
               "mapping %s's aperture" % device)
        self._handle = handle
        self.device, self.offset, self.length = device, offset, length
        self._bytes = (ctypes.c_char * length).from_address(lib.hbmguard_aperture_addr(handle))
        self._bytes.aperture = self     # what views of the buffer keep alive
        if guard:
            self.guard()

    @staticmethod
    def guard():
        """Guard every aperture of the process: a lost page reads zero.
        Idempotent; OSError(EBUSY) once a SIGBUS handler installed after
        the guard (faulthandler.enable(), for one) has replaced it: install
        such handlers before the guard."""
        _check(_library().hbmguard_aperture_guard(), "guarding apertures")

    @property
    def buffer(self):
        """The mapped bytes, as a ctypes array (a writable buffer)."""
        return self._bytes

    def lost(self):
        """Pages lost and touched since the mapping or the last restore()."""
        return _lib.hbmguard_aperture_lost(self._handle)

    def restore(self, offset, length):
        """Device bytes [offset, offset + length) are to be rewritten: they
        read zero until then."""
        _check(_lib.hbmguard_aperture_restore(self._handle, offset, length),
               "restoring %s at %#x" % (self.device, offset))

    def _release(self):
        self._bytes.aperture = None
        self._bytes = None
        _lib.hbmguard_aperture_close(self._handle)
