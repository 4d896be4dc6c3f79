#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""
A hostile etcd JSON gateway for tests/cluster/run.sh: what a malicious
server, or a man in the middle of plain HTTP, may send the daemon's watch
(helper-184).  The messages are etcd 3.4's gateway JSON, as etcd.c reads it:
WatchResponse {result: {header, created, canceled, cancel_reason, events}}
of api/etcdserverpb/rpc.proto, mvccpb.Event {type, kv} and KeyValue of
api/mvccpb/kv.proto (int64 as strings, bytes as base64), one per line of a
chunked stream; RangeResponse {header, count, kvs} for the read.

    hostile_gateway.py PORT nulltype|cancel|bomb|hoard|pin

nulltype: once the watch is created and read, an event whose "type" is
    JSON null (proto3 leaves a PUT's out; null is no EventType): a PUT to
    the daemon, not a crash (etcd.c took the null for a string);
cancel: the watch canceled with a reason holding a newline and a forged
    journal line, which the daemon's line shows escaped;
bomb: a message of 8 MiB of "{}," (REPLY_MAX is 16), some 2 GiB of json-c
    objects had the daemon parsed it: refused unparsed (etcd.c's
    parse_cost()).
hoard: the read never answered, and each watch sent 3 messages of 1 MiB
    of events, all held for the read: each within a watch's bounds, as
    many times as the daemon has watches (one per incident's
    acknowledgements), gigabytes at a few: the link's bound (etcd.c's
    KEPT_MAX) refuses what would pass it, said once.
pin: the first 16 watches each sent one 12 MiB line of one event, taken
    (their reads done), then nothing; the 17th's stream ended once they
    all were, and its resume answered "compacted", its read again then
    given a key: room for it, the long lines' buffers given back
    (helper-189: kept, they held the link's bound for good).
"""
import base64
import http.server
import json
import socketserver
import sys
import threading
import time

MODE = sys.argv[2]


def b64(s):
    return base64.b64encode(s.encode()).decode()


def line_of(obj):
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


# hoard's message: 1 MiB of events, made once (each watch's within the
# daemon's 5 s for the read it holds them for, however loaded the host)
HOARD = line_of({"result": {"header": {"revision": "6"}, "events": [
    {"kv": {"key": b64("/hbmguard/x"), "value": b64("v"), "create_revision": "6",
            "mod_revision": "6", "version": "1"}}] * ((1 << 20) // 110)}})


# pin's long line, and its count of watches sent it
PIN = 16
BIG = line_of({"result": {"header": {"revision": "6"}, "events": [
    {"kv": {"key": b64("/hbmguard/big"), "value": b64("x" * (9 << 20)),
            "create_revision": "6", "mod_revision": "6", "version": "1"}}]}})
lock = threading.Lock()
watches = [0]
pinned = [0]


class Gateway(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, obj, code=200):
        out = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def chunk(self, obj):
        self.raw_chunk(line_of(obj))

    def raw_chunk(self, line):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if MODE == "pin" and self.path == "/v3/kv/txn":     # the resume check
            self.reply({"code": 11, "message": "mvcc: required revision has been compacted"},
                       400)
            return
        if MODE == "pin" and self.path == "/v3/kv/range" and pinned[0] >= PIN:
            self.reply({"header": {"revision": "7"}, "count": "1", "kvs": [
                {"key": b64("/hbmguard/k"), "value": b64("v"), "create_revision": "7",
                 "mod_revision": "7", "version": "1"}]})
            return
        if self.path != "/v3/watch":
            # the read (/v3/kv/range), and anything else: nothing there
            if MODE == "hoard":
                time.sleep(60)
            self.reply({"header": {"revision": "5"}, "count": "0"})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.chunk({"result": {"header": {"revision": "5"}, "created": True}})
        time.sleep(0.5)         # the read answered meanwhile
        if MODE == "pin":
            with lock:
                k = watches[0]
                watches[0] += 1
            if k == PIN:
                while pinned[0] < PIN:
                    time.sleep(0.1)
                time.sleep(1)
                self.wfile.write(b"0\r\n\r\n")     # the stream's end
                self.wfile.flush()
                return
            if k < PIN:
                self.raw_chunk(BIG)
                with lock:
                    pinned[0] += 1
        elif MODE == "hoard":
            for _ in range(3):
                self.raw_chunk(HOARD)
        elif MODE == "bomb":
            self.chunk({"result": {"header": {"revision": "6"},
                                   "x": [{}] * ((8 << 20) // 3)}})
        elif MODE == "nulltype":
            kv = {"key": b64("/hbmguard/x"), "value": b64("v"), "create_revision": "6",
                  "mod_revision": "6", "version": "1"}
            self.chunk({"result": {"header": {"revision": "6"},
                                   "events": [{"type": None, "kv": kv}]}})
        else:
            self.chunk({"result": {"header": {"revision": "5"}, "canceled": True,
                                   "cancel_reason": "denied\n<0>hbmguardd: forged"}})
        time.sleep(30)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # the watch refused, ended
            super().handle_error(request, client_address)


Server(("127.0.0.1", int(sys.argv[1])), Gateway).serve_forever()
