# SPDX-License-Identifier: GPL-2.0
"""A training rank's side of the recovery through the hbmguard Python
package, for tier 3: registers, then follows hbmguardd's requests.

    python3 pyrank.py JOB RANK WORLD DEVICE

Prints "registered", then "request ACTION incident N failed_rank R" per
request; answers PAUSED and RESTORED; exits 0 on RESUME, 3 on ABORT.
"""
import selectors
import sys

import hbmguard

job, rank, world, device = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
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
        if req.action == hbmguard.RESUME:
            sys.exit(0)
        if req.action == hbmguard.ABORT:
            sys.exit(3)
        r.answer(req.incident, hbmguard.PAUSED if req.action == hbmguard.PAUSE
                 else hbmguard.RESTORED)
