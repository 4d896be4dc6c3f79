#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""etcd's own floor for the cluster benchmark: a put, through the JSON
gateway, seen by a watcher of the key through the same gateway (the least
one step of an incident costs: a write and every node hearing it).  Prints
"floor MILLISECONDS...", each of 30 puts.

    floor.py http://127.0.0.1:PORT
"""
import base64
import http.client
import json
import sys
import time
import urllib.parse


def b64(s):
    return base64.b64encode(s.encode()).decode()


def main():
    url = urllib.parse.urlsplit(sys.argv[1])
    watch = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    watch.request("POST", "/v3/watch",
                  json.dumps({"create_request": {"key": b64("/floor/k")}}))
    stream = watch.getresponse()
    created = json.loads(stream.readline())
    assert created["result"].get("created"), created
    put = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    times = []
    for i in range(30):
        t0 = time.monotonic()
        put.request("POST", "/v3/kv/put", json.dumps({"key": b64("/floor/k"), "value": b64(str(i))}))
        put.getresponse().read()
        while True:
            line = stream.readline()
            if b"events" in line:
                break
        times.append(time.monotonic() - t0)
    print("floor " + " ".join("%.3f" % (t * 1000) for t in times))


if __name__ == "__main__":
    main()
