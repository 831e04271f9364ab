#!/usr/bin/env python3
"""The reference of bench/live.sh: the same lists as mesh-doctor's, fetched raw and all in
parallel (one thread per list, bytes read and dropped: no decoding), from a kubeconfig with a
bearer token and a CA file (the test cluster's).

    raw_lists.py KUBECONFIG PATHS_FILE whole        # one request per list, no limit
    raw_lists.py KUBECONFIG PATHS_FILE pages N      # limit=N, following continue tokens

With RAW_PROTOBUF set to a comma-separated list of paths (`/api/v1/pods,/api/v1/services`), those
lists are asked for in protobuf (`application/vnd.kubernetes.protobuf`), as mesh-doctor asks for
Pods, Services and Namespaces; the others in JSON.

PATHS_FILE holds one API path per line (`/api/v1/pods`). Prints the wall time in seconds, the
number of requests and the bytes read.
"""

import http.client
import os
import re
import ssl
import sys
import threading
import time
import urllib.parse


def kubeconfig(path):
    text = open(path).read()

    def field(name):
        m = re.search(r"^\s*" + re.escape(name) + r":\s*(\S+)\s*$", text, re.M)
        if not m:
            sys.exit(f"raw_lists.py: no {name} in {path}")
        return m.group(1)

    return field("server"), field("certificate-authority"), field("token")


CONTINUE = re.compile(rb'"continue":"([^"]*)"')


def fields(buf):
    """(number, value) of a protobuf message's fields; bytes for length-delimited ones."""
    i = 0

    def varint():
        nonlocal i
        shift = value = 0
        while True:
            b = buf[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while i < len(buf):
        key = varint()
        wire = key & 7
        if wire == 0:
            yield key >> 3, varint()
        elif wire == 2:
            n = varint()
            yield key >> 3, buf[i : i + n]
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")


def protobuf_continue(body):
    """The continue token of a protobuf list (runtime.Unknown.raw, then ListMeta.continue)."""
    raw = next((v for n, v in fields(body[4:]) if n == 2), b"")
    for n, meta in fields(raw):
        if n == 1:
            token = next((v for k, v in fields(meta) if k == 3), b"")
            return token.decode() or None
    return None


def main():
    if len(sys.argv) < 4 or sys.argv[3] not in ("whole", "pages"):
        sys.exit(__doc__)
    server, ca, token = kubeconfig(sys.argv[1])
    paths = [l.strip() for l in open(sys.argv[2]) if l.strip()]
    limit = int(sys.argv[4]) if sys.argv[3] == "pages" else 0
    url = urllib.parse.urlparse(server)
    protobuf = {p for p in os.environ.get("RAW_PROTOBUF", "").split(",") if p}
    context = ssl.create_default_context(cafile=ca)
    totals = {"requests": 0, "bytes": 0}
    lock = threading.Lock()
    errors = []

    def fetch(path):
        accept = "application/vnd.kubernetes.protobuf" if path in protobuf else "application/json"
        conn = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=120)
        token_next = None
        while True:
            query = {}
            if limit:
                query["limit"] = str(limit)
            if token_next:
                query["continue"] = token_next
            target = path + ("?" + urllib.parse.urlencode(query) if query else "")
            conn.request("GET", target, headers={"Authorization": f"Bearer {token}",
                                                 "Accept": accept})
            response = conn.getresponse()
            body = response.read()
            with lock:
                totals["requests"] += 1
                totals["bytes"] += len(body)
            if response.status != 200:
                errors.append(f"{target}: HTTP {response.status}")
                return
            if not limit:
                return
            # The list's metadata holds its continue token: first in the lists of built-in
            # kinds, last in those of custom resources (their keys come sorted).
            if body.startswith(b"k8s\0"):
                token_next = protobuf_continue(body)
            else:
                m = CONTINUE.search(body[:4096]) or CONTINUE.search(body[-4096:])
                token_next = m.group(1).decode() if m and m.group(1) else None
            if not token_next:
                return

    threads = [threading.Thread(target=fetch, args=(p,)) for p in paths]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    if errors:
        sys.exit("raw_lists.py: " + "; ".join(errors))
    print(f"{wall:.3f} {totals['requests']} {totals['bytes']}")


if __name__ == "__main__":
    main()
