# SPDX-License-Identifier: GPL-2.0
"""Bad packets on hbmguardd's control socket (daemon/ctl.h): each gets the
errno ctl.h promises, a malformed one ends the connection, and the daemon
keeps answering.  As root, and with "user" as an unprivileged user, whose
well-formed mutations are refused with EPERM.

    python3 ctl_badinput.py IDENTITY [user]
"""
import errno
import socket
import struct
import sys
import time

PATH = "/run/hbmguard/control.sock"
MAGIC, VERSION, REPLY = 0x434D4248, 1, 0x8000
STATUS, RETIRE, CLEAR = 1, 2, 3
HEADER = struct.Struct("<IHHIIiI")
EXTENT = struct.Struct("<64sQQII")
STATUS_BODY = 6 * 8 + 7 * 4 + 256 + 4    # struct hbm_ctl_status, padded to 8

identity = sys.argv[1].encode()
user = len(sys.argv) > 2


def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(PATH)     # blocking: waits while the listen backlog is full
    s.settimeout(10)
    return s


def packet(ptype, body=b"", seq=7, version=VERSION, magic=MAGIC, size=None,
           error=0, reserved=0):
    size = HEADER.size + len(body) if size is None else size
    return HEADER.pack(magic, version, ptype, size, seq, error, reserved) + body


def extent(ident=identity, offset=0x7000, length=0x1000, flags=0, reserved=0):
    return EXTENT.pack(ident, offset, length, flags, reserved)


def ask(s, data):
    s.send(data)
    r = s.recv(2048)
    magic, version, ptype, size, seq, err, res = HEADER.unpack(r[:HEADER.size])
    assert magic == MAGIC and version == VERSION and size == len(r), r
    return ptype, seq, err, r[HEADER.size:]


def expect(name, data, want_errno, closes):
    s = connect()
    ptype, seq, err, body = ask(s, data)
    assert err == -want_errno, f"{name}: error {err}, want {-want_errno}"
    assert ptype & REPLY and body == b"", f"{name}: {ptype:#x} {body!r}"
    if closes:
        assert s.recv(2048) == b"", f"{name}: connection kept"
    else:   # still in step: a STATUS on the same connection works
        assert ask(s, packet(STATUS))[2] == 0, f"{name}: not in step"
    s.close()


EBADMSG, PROTO, NOTSUP = errno.EBADMSG, errno.EPROTONOSUPPORT, errno.EOPNOTSUPP
expect("garbage", b"hello", EBADMSG, True)
expect("wrong magic", packet(STATUS, magic=0x12345678), EBADMSG, True)
expect("another version", packet(STATUS, version=2), PROTO, True)
expect("unknown type", packet(9), NOTSUP, True)
expect("a reply sent as a request", packet(STATUS | REPLY), EBADMSG, True)
expect("a request carrying an error", packet(STATUS, error=-5), EBADMSG, True)
expect("reserved header field", packet(STATUS, reserved=1), EBADMSG, True)
expect("size larger than sent", packet(RETIRE, extent(), size=200), EBADMSG, True)
expect("truncated body", packet(RETIRE, extent())[:60], EBADMSG, True)
expect("body on STATUS", packet(STATUS, b"x" * 8), EBADMSG, True)
expect("oversized packet", packet(RETIRE, extent() + b"\0" * 2000), EBADMSG, True)
expect("identity not terminated", packet(RETIRE, extent(ident=b"a" * 64)), EBADMSG, True)
expect("empty identity", packet(RETIRE, extent(ident=b"")), EBADMSG, True)
expect("reserved body field", packet(RETIRE, extent(reserved=1)), EBADMSG, True)
expect("unknown flag", packet(RETIRE, extent(flags=2)), EBADMSG, True)
expect("pending on a clear", packet(CLEAR, extent(flags=1)), EBADMSG, True)
expect("zero length", packet(CLEAR, extent(length=0)), EBADMSG, True)
expect("wrapping extent", packet(RETIRE, extent(offset=2**64 - 4096, length=8192)),
       EBADMSG, True)
if user:
    expect("retire as a user", packet(RETIRE, extent()), errno.EPERM, False)
    expect("clear as a user", packet(CLEAR, extent(offset=0x5000)), errno.EPERM, False)
else:
    expect("unknown device", packet(RETIRE, extent(ident=b"nope")), errno.ENODEV, False)
    expect("misaligned", packet(RETIRE, extent(offset=0x7001)), errno.EINVAL, False)
    expect("beyond the device", packet(RETIRE, extent(offset=2**40)), errno.ERANGE, False)

# Training ranks: the registration and answers, out of order or claimed.
REGISTER, ANSWER, RANK_GET, INCIDENT_GET = 4, 5, 6, 7
RANK = struct.Struct("<64s64sIIII" + "QQ" * 8)


def rank_body(job=b"badinput", rank=0, world=2, device=identity, nr=0, ranges=()):
    flat = [v for r in ranges for v in r] + [0] * (16 - 2 * len(ranges))
    return RANK.pack(job, device, rank, world, rank, nr, *flat)


def answer_body(incident=1, answer=1, reserved=0):
    return struct.pack("<QII", incident, answer, reserved)


job = b"badinput-user" if user else b"badinput-root"
expect("answer before registering", packet(ANSWER, answer_body()), errno.ENOTCONN, False)
expect("rank beyond the world", packet(REGISTER, rank_body(job, rank=2)), EBADMSG, True)
expect("ranges beyond the count", packet(REGISTER, rank_body(job, ranges=[(0, 4096)])),
       EBADMSG, True)
expect("empty job", packet(REGISTER, rank_body(b"")), EBADMSG, True)
expect("answer out of range", packet(ANSWER, answer_body(answer=9)), EBADMSG, True)
expect("answer with reserved bits", packet(ANSWER, answer_body(reserved=1)), EBADMSG, True)
held = connect()
assert ask(held, packet(REGISTER, rank_body(job)))[2] == 0
assert ask(held, packet(REGISTER, rank_body(job, rank=1)))[2] == -errno.EALREADY
assert ask(held, packet(ANSWER, answer_body(incident=77)))[2] == -errno.ESRCH
expect("a rank another connection holds", packet(REGISTER, rank_body(job)), errno.EEXIST, False)
ptype, seq, err, body = ask(held, packet(RANK_GET, struct.pack("<II", 0, 0)))
assert err == 0 and body[:4] == b"\0\0\0\0", (err, body[:8])
assert ask(held, packet(RANK_GET, struct.pack("<II", 999, 0)))[2] == -errno.ENOENT
assert ask(held, packet(INCIDENT_GET, struct.pack("<II", 999, 0)))[2] == -errno.ENOENT
held.close()
# Gone with its connection: the rank can be taken again.
for _ in range(50):     # once the daemon has seen the close
    again = connect()
    err = ask(again, packet(REGISTER, rank_body(job)))[2]
    again.close()
    if err != -errno.EEXIST:
        break
    time.sleep(0.1)
assert err == 0, err

# More connections than the daemon holds: the extra ones are closed, and
# the daemon answers once they are gone.
many = [connect() for _ in range(80)]
dropped = 0
for s in many:
    try:
        s.send(packet(STATUS))
        dropped += s.recv(2048) == b""
    except OSError:
        dropped += 1
assert dropped >= 80 - 64, dropped
for s in many:
    s.close()
s = connect()
ptype, seq, err, body = ask(s, packet(STATUS, seq=42))
assert ptype == STATUS | REPLY and seq == 42 and err == 0 and len(body) == STATUS_BODY
print("control socket: every bad packet refused")
