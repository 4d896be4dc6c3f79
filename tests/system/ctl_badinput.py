# SPDX-License-Identifier: GPL-2.0
"""Bad packets on hbmguardd's control socket (daemon/ctl.h): each gets the
errno ctl.h promises, a malformed one ends the connection, and the daemon
keeps answering.  As root, and with "user" as an unprivileged user or uid 0
without CAP_SYS_ADMIN, whose well-formed mutations are refused with EPERM
and who cannot claim to be an administrator.  Hostile peers too: names that
would forge log lines or terminal escapes, descriptors passed along, more
connections than a uid may hold, silence.

    python3 ctl_badinput.py IDENTITY [user]
"""
import errno
import os
import socket
import struct
import sys
import time

PATH = "/run/hbmguard/control.sock"
MAGIC, VERSION, REPLY = 0x434D4248, 1, 0x8000
STATUS, RETIRE, CLEAR, DEADLINES, CLUSTER, CLUSTER_NODE_GET, RECOVERY_TIMES = \
    1, 2, 3, 12, 13, 14, 15
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


def send_as_admin(s, data):
    """With the proof of CAP_SYS_ADMIN of ctl.h: SCM_CREDENTIALS naming pid 1."""
    cred = struct.pack("iII", 1, os.getuid(), os.getgid())
    s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, cred)])


def ask(s, data, admin=None):
    """A request, and its reply; as root, mutations with the proof."""
    if admin is None:
        admin = not user and struct.unpack_from("<H", data, 6)[0] in (RETIRE, CLEAR) \
            if len(data) >= 8 else False
    for again in (False, True):
        if admin:
            send_as_admin(s, data)
        else:
            s.send(data)
        r = s.recv(2048)
        magic, version, ptype, size, seq, err, res = HEADER.unpack(r[:HEADER.size])
        assert magic == MAGIC and version == VERSION and size == len(r), r
        # a registration sent before the daemon pinned us by pid (ctl.h,
        # kernels before 6.5): again, as libhbmguard sends it
        if again or err != -errno.EAGAIN or ptype & ~REPLY not in (4, 16):
            break
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
# anyone may ask the [Recovery] deadlines: each set, reserved zero
s = connect()
ptype, seq, err, body = ask(s, packet(DEADLINES))
dl = struct.unpack("<4I", body) if len(body) == 16 else None
assert ptype == DEADLINES | REPLY and err == 0 and dl and all(dl[:3]) and not dl[3], \
    (ptype, err, body)
s.close()
# and them with the longest an incident may take: one node's ([Cluster] off)
s = connect()
ptype, seq, err, body = ask(s, packet(RECOVERY_TIMES))
rt = struct.unpack("<4I", body) if len(body) == 16 else None
assert ptype == RECOVERY_TIMES | REPLY and err == 0 and rt and rt[:3] == dl[:3] and \
    rt[3] == dl[0] + dl[1], (ptype, err, body)
s.close()
# and the cluster link's state: off here ([Cluster] unset), all of it zero
s = connect()
ptype, seq, err, body = ask(s, packet(CLUSTER))
assert ptype == CLUSTER | REPLY and err == 0 and len(body) == 4 + 4 + 8 + 64 + 256 + 256 and \
    not any(body), (ptype, err, body[:16])
s.close()
expect("garbage", b"hello", EBADMSG, True)
expect("wrong magic", packet(STATUS, magic=0x12345678), EBADMSG, True)
expect("another version", packet(STATUS, version=2), PROTO, True)
expect("unknown type", packet(0x7fff), NOTSUP, True)
expect("a reply sent as a request", packet(STATUS | REPLY), EBADMSG, True)
expect("a request carrying an error", packet(STATUS, error=-5), EBADMSG, True)
expect("reserved header field", packet(STATUS, reserved=1), EBADMSG, True)
expect("size larger than sent", packet(RETIRE, extent(), size=200), EBADMSG, True)
expect("truncated body", packet(RETIRE, extent())[:60], EBADMSG, True)
expect("body on STATUS", packet(STATUS, b"x" * 8), EBADMSG, True)
expect("body on DEADLINES", packet(DEADLINES, b"\0" * 16), EBADMSG, True)
expect("body on CLUSTER", packet(CLUSTER, b"\0" * 8), EBADMSG, True)
expect("body on RECOVERY_TIMES", packet(RECOVERY_TIMES, b"\0" * 16), EBADMSG, True)
expect("CLUSTER_NODE_GET without its index", packet(CLUSTER_NODE_GET), EBADMSG, True)
expect("CLUSTER_NODE_GET, reserved set", packet(CLUSTER_NODE_GET, struct.pack("<II", 0, 1)),
       EBADMSG, True)
expect("CLUSTER_NODE_GET without [Cluster]", packet(CLUSTER_NODE_GET, struct.pack("<II", 0, 0)),
       errno.ENOENT, False)
expect("oversized packet", packet(RETIRE, extent() + b"\0" * 2000), EBADMSG, True)
expect("identity not terminated", packet(RETIRE, extent(ident=b"a" * 64)), EBADMSG, True)
expect("empty identity", packet(RETIRE, extent(ident=b"")), EBADMSG, True)
expect("reserved body field", packet(RETIRE, extent(reserved=1)), EBADMSG, True)
expect("unknown flag", packet(RETIRE, extent(flags=2)), EBADMSG, True)
expect("pending on a clear", packet(CLEAR, extent(flags=1)), EBADMSG, True)
expect("zero length", packet(CLEAR, extent(length=0)), EBADMSG, True)
expect("wrapping extent", packet(RETIRE, extent(offset=2**64 - 4096, length=8192)),
       EBADMSG, True)
expect("identity with a terminal escape", packet(RETIRE, extent(ident=b"\x1b[2Jsim")),
       EBADMSG, True)
expect("identity with a newline", packet(CLEAR, extent(ident=b"sim\n<0>forged")),
       EBADMSG, True)
if user:
    expect("retire as a user", packet(RETIRE, extent()), errno.EPERM, False)
    expect("clear as a user", packet(CLEAR, extent(offset=0x5000)), errno.EPERM, False)
else:
    s = connect()   # root, but without the proof of CAP_SYS_ADMIN: refused
    assert ask(s, packet(RETIRE, extent()), admin=False)[2] == -errno.EPERM
    s.close()
    expect("unknown device", packet(RETIRE, extent(ident=b"nope")), errno.ENODEV, False)
    expect("misaligned", packet(RETIRE, extent(offset=0x7001)), errno.EINVAL, False)
    expect("beyond the device", packet(RETIRE, extent(offset=2**40)), errno.ERANGE, False)

# Training ranks: the registration and answers, out of order or claimed.
REGISTER, ANSWER, RANK_GET, INCIDENT_GET, REGISTER_KEYED = 4, 5, 6, 7, 16
RANK = struct.Struct("<64s64sIIII" + "QQ" * 8)


def rank_body(job=b"badinput", rank=0, world=2, device=identity, nr=0, ranges=()):
    flat = [v for r in ranges for v in r] + [0] * (16 - 2 * len(ranges))
    return RANK.pack(job, device, rank, world, rank, nr, *flat)


def keyed_body(job, key, **rank):
    """struct hbm_ctl_rank_keyed: the rank, its job's key NUL-padded to 64."""
    return rank_body(job, **rank) + key.ljust(64, b"\0")[:64]


def answer_body(incident=1, answer=1, reserved=0):
    return struct.pack("<QII", incident, answer, reserved)


job = b"badinput-user" if user else b"badinput-root"
expect("answer before registering", packet(ANSWER, answer_body()), errno.ENOTCONN, False)
expect("rank beyond the world", packet(REGISTER, rank_body(job, rank=2)), EBADMSG, True)
expect("ranges beyond the count", packet(REGISTER, rank_body(job, ranges=[(0, 4096)])),
       EBADMSG, True)
expect("empty job", packet(REGISTER, rank_body(b"")), EBADMSG, True)
expect("job forging a log line", packet(REGISTER, rank_body(b"x\n<0>hbmguardd: forged")),
       EBADMSG, True)
expect("device not UTF-8", packet(REGISTER, rank_body(job, device=b"\xff\xfe")),
       EBADMSG, True)
expect("job with a space", packet(REGISTER, rank_body(b"two words")), EBADMSG, True)
expect("rank on no device of the module's", packet(REGISTER, rank_body(job, device=b"nope")),
       errno.ENODEV, False)
expect("answer out of range", packet(ANSWER, answer_body(answer=9)), EBADMSG, True)
expect("answer with reserved bits", packet(ANSWER, answer_body(reserved=1)), EBADMSG, True)
held = connect()
assert ask(held, packet(REGISTER, rank_body(job)))[2] == 0
assert ask(held, packet(REGISTER, rank_body(job, rank=1)))[2] == -errno.EALREADY
assert ask(held, packet(ANSWER, answer_body(incident=77)))[2] == -errno.ESRCH
expect("a rank another connection holds", packet(REGISTER, rank_body(job)), errno.EEXIST, False)
expect("a rank of another world than its job's", packet(REGISTER, rank_body(job, rank=1, world=3)),
       errno.EINVAL, False)
ptype, seq, err, body = ask(held, packet(RANK_GET, struct.pack("<II", 0, 0)))
assert err == 0 and body[:4] == b"\0\0\0\0", (err, body[:8])
assert ask(held, packet(RANK_GET, struct.pack("<II", 999, 0)))[2] == -errno.ENOENT
assert ask(held, packet(INCIDENT_GET, struct.pack("<II", 999, 0)))[2] == -errno.ENOENT
# hbmctl gpus' list, read by anyone: past its end ENOENT, a bad request refused.
GPU_GET = 9
assert ask(held, packet(GPU_GET, struct.pack("<II", 999, 0)))[2] == -errno.ENOENT
expect("GPU_GET without its index", packet(GPU_GET), EBADMSG, True)
expect("GPU_GET reserved field", packet(GPU_GET, struct.pack("<II", 0, 1)), EBADMSG, True)
expect("GPU_GET oversized", packet(GPU_GET, struct.pack("<II", 0, 0) + b"\0" * 2000),
       EBADMSG, True)
# A job with a key (ctl.h): a key of 32 to 63 characters of a name's, the
# rest of its field NUL; the same job's rank 0 without the key, or with
# another, is another job's, not held.
KEY = b"badinput-key-0123456789abcdef0123"
expect("key too short",
       packet(REGISTER_KEYED, keyed_body(job, b"0123456789abcdef0123456789abcde")), EBADMSG, True)
expect("key with a space",
       packet(REGISTER_KEYED, keyed_body(job, b"0123456789abcdef 0123456789abcdef")), EBADMSG, True)
expect("key with an escape",
       packet(REGISTER_KEYED, keyed_body(job, b"0123456789abcdef0123456789abcdef\x1b[2J")),
       EBADMSG, True)
expect("key unterminated", packet(REGISTER_KEYED, keyed_body(job, b"k" * 64)), EBADMSG, True)
expect("key with bytes after its end",
       packet(REGISTER_KEYED, keyed_body(job, KEY + b"\0" * 8 + b"x")), EBADMSG, True)
expect("keyed rank without its key", packet(REGISTER_KEYED, rank_body(job)), EBADMSG, True)
keyed = connect()
ptype, seq, err, body = ask(keyed, packet(REGISTER_KEYED, keyed_body(job, KEY)))
assert err == 0 and ptype == REGISTER_KEYED | REPLY and body == rank_body(job), (err, body)
expect("a keyed rank another connection holds",
       packet(REGISTER_KEYED, keyed_body(job, KEY)), errno.EEXIST, False)
other = connect()
OTHER_KEY = b"another-key-0123456789abcdef0123"
assert ask(other, packet(REGISTER_KEYED, keyed_body(job, OTHER_KEY)))[2] == 0
other.close()
keyed.close()
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

def status_pid():
    s = connect()
    ptype, seq, err, body = ask(s, packet(STATUS))
    s.close()
    assert err == 0, err
    return struct.unpack_from("<I", body, 6 * 8 + 2 * 4)[0]


# Descriptors passed along: no request passes any, so the packet is refused
# unread and the connection closed, its files released by the daemon's
# child (fdsink.c), none kept by the daemon (its child's socket and pidfd
# are new at most).
if not user:
    fds = f"/proc/{status_pid()}/fd"
    before = len(os.listdir(fds))
for _ in range(20):
    s = connect()
    s.settimeout(10)
    s.sendmsg([packet(STATUS)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                  struct.pack("10i", *[0] * 10))])
    try:    # left unread in the connection's queue: a reset, as the kernel says it
        assert s.recv(2048) == b"", "a packet with files answered"
    except ConnectionResetError:
        pass
    s.close()
if not user:
    after = len(os.listdir(fds))
    assert after <= before + 2, (before, after)
assert status_pid() > 0, "the daemon answers after it"

# Silence: a connection that is not a rank is closed before long.
s = connect()
s.settimeout(60)
assert s.recv(2048) == b"", "an idle connection kept"
s.close()

# More connections than one uid may hold (32): the extra ones are answered
# EUSERS or closed, never served; an administrator gets through meanwhile,
# and nobody else can claim to be one.
many = [connect() for _ in range(80)]
served = turned = 0
for s in many:
    try:
        s.send(packet(STATUS))
        r = s.recv(2048)
        err = HEADER.unpack(r[:HEADER.size])[5] if r else -errno.EUSERS
    except OSError:
        err = -errno.EUSERS
    assert err in (0, -errno.EUSERS), err
    served += err == 0
    turned += err == -errno.EUSERS
assert served <= 32 and turned >= 80 - 32, (served, turned)
s = connect()
if user:
    try:
        send_as_admin(s, packet(STATUS))
        assert False, "claimed to be an administrator"
    except PermissionError:
        pass
else:
    send_as_admin(s, packet(STATUS, seq=43))
    r = s.recv(2048)
    assert HEADER.unpack(r[:HEADER.size])[4:6] == (43, 0), r[:HEADER.size]
s.close()
for s in many:
    s.close()
for _ in range(50):     # once the daemon has seen them close
    s = connect()
    ptype, seq, err, body = ask(s, packet(STATUS, seq=42))
    s.close()
    if err != -errno.EUSERS:
        break
    time.sleep(0.1)
assert ptype == STATUS | REPLY and seq == 42 and err == 0 and len(body) == STATUS_BODY
print("control socket: every bad packet refused")
