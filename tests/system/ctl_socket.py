# SPDX-License-Identifier: GPL-2.0
"""Clients of hbmguardd's control socket across daemon restarts
(hbmguardd.socket): each connects, asks the status (daemon/ctl.h) and
reads the answer, which may come from a daemon that was not running when
it connected.

    python3 ctl_socket.py once
        one client: prints the pid of the daemon that answered
    python3 ctl_socket.py loop STOPFILE
        clients one after another, STOPFILE.up made once one is answered;
        once STOPFILE holds a pid, until that daemon has answered one (120 s
        at most).  Prints a JSON summary: answered, refused (connect()
        failed), failed (no answer), the pids that answered, the errors.
"""
import json
import os
import socket
import struct
import sys
import time

PATH = "/run/hbmguard/control.sock"
MAGIC, VERSION, REPLY, STATUS = 0x434D4248, 1, 0x8000, 1
HEADER = struct.Struct("<IHHIIiI")
STATUS_BODY = 6 * 8 + 7 * 4 + 256 + 4    # struct hbm_ctl_status, padded to 8
PID_AT = HEADER.size + 6 * 8 + 2 * 4    # its pid, after last_save_error, devices


class Refused(Exception):
    pass


def status(seq):
    """The pid of the daemon that answered; Refused if connect() failed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(60)    # a restart, and systemd starting the service
    try:
        try:
            s.connect(PATH)
        except OSError as e:
            raise Refused(str(e))
        s.send(HEADER.pack(MAGIC, VERSION, STATUS, HEADER.size, seq, 0, 0))
        r = s.recv(4096)
        if len(r) < HEADER.size:
            raise OSError("closed without an answer" if not r else "short reply")
        magic, _, typ, size, rseq, err, _ = HEADER.unpack_from(r)
        if (magic, typ, rseq, err) != (MAGIC, STATUS | REPLY, seq, 0) or \
                size != len(r) or len(r) != HEADER.size + STATUS_BODY:
            raise OSError("bad reply: %r" % ((magic, typ, rseq, err, size, len(r)),))
        return struct.unpack_from("<I", r, PID_AT)[0]
    finally:
        s.close()


if sys.argv[1] == "once":
    print(status(1))
    sys.exit(0)

stop = sys.argv[2]
out = {"answered": 0, "refused": 0, "failed": 0, "pids": [], "errors": [],
       "gave_up": False}
seq, last, deadline = 0, None, None
while True:
    if deadline is None and os.path.exists(stop):
        deadline = time.monotonic() + 120
    if deadline is not None:
        with open(stop) as f:
            want = f.read().strip()
        if want and last == int(want):
            break
        if time.monotonic() > deadline:
            out["gave_up"] = True
            break
    seq += 1
    try:
        last = status(seq)
        out["answered"] += 1
        if last not in out["pids"]:
            out["pids"].append(last)
            open(stop + ".up", "w").close()
    except Refused as e:
        out["refused"] += 1
        out["errors"].append("connect: %s" % e)
    except OSError as e:
        out["failed"] += 1
        out["errors"].append(str(e))
    del out["errors"][10:]
    time.sleep(0.05)    # the guest's vCPUs are shared: leave the daemon its turn
print(json.dumps(out))
