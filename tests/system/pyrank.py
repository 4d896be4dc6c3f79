# SPDX-License-Identifier: GPL-2.0
"""A training rank's side of the recovery through the hbmguard Python
package, for tier 3: registers, then follows hbmguardd's requests.

    python3 pyrank.py JOB RANK WORLD DEVICE [aperture]

Prints "registered", then "request ACTION incident N failed_rank R" per
request; answers PAUSED and RESTORED; exits 0 on RESUME, 3 on ABORT.

With "aperture", the rank keeps a pattern in the first MiB of its device's
memory, mapped (guarded) before it registers: at PAUSE it reads all of it
and prints "aperture lost N" (pages it found lost); at RESTORE of its own
state it restores the range and writes the pattern back; at RESUME it
prints "aperture intact", or exits 5 if the memory differs.
"""
import selectors
import sys

import hbmguard

APERTURE = 1 << 20

job, rank, world, device = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ap = None
if sys.argv[5:] == ["aperture"]:
    pattern = (bytes(range(251)) * (APERTURE // 251 + 1))[:APERTURE]
    ap = hbmguard.Aperture(device, 0, APERTURE, guard=True)
    ap.buffer[:] = pattern
    assert bytes(ap.buffer) == pattern
with hbmguard.Rank(job=job, rank=rank, world_size=world, device=device) as r:
    print("registered", flush=True)
    sel = selectors.DefaultSelector()
    sel.register(r, selectors.EVENT_READ)
    while True:
        req = r.next()
        if req is None:
            sel.select()
            continue
        print("request %s incident %d failed_rank %d" %
              (hbmguard.ACTIONS[req.action], req.incident, req.failed_rank), flush=True)
        if ap and req.action == hbmguard.PAUSE:
            bytes(ap.buffer)
            print("aperture lost %d" % ap.lost(), flush=True)
        if ap and req.action == hbmguard.RESTORE and req.failed_rank == rank:
            ap.restore(req.offset, req.length)
            end = req.offset + req.length
            ap.buffer[req.offset:end] = pattern[req.offset:end]
        if req.action == hbmguard.RESUME:
            if ap:
                if bytes(ap.buffer) != pattern:
                    sys.exit(5)
                print("aperture intact", flush=True)
            sys.exit(0)
        if req.action == hbmguard.ABORT:
            sys.exit(3)
        r.answer(req.incident, hbmguard.PAUSED if req.action == hbmguard.PAUSE
                 else hbmguard.RESTORED)
