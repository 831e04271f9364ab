#!/usr/bin/env python3
"""What TLS handshakes cost an API server: opens N TLS connections to it in parallel (nothing
asked), three times, and prints the wall time, this process's CPU time and the API server's
(from /proc), beside the API server's CPU time over the same span when idle.
Usage: handshakes.py TESTENV_DIR [N]   (TESTENV_DIR holds kubeconfig, pki/ca.crt, kube-apiserver.pid)
"""
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse

if len(sys.argv) not in (2, 3) or sys.argv[1].startswith("-"):
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(64)
env = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) == 3 else 39
pid = int(open(os.path.join(env, "kube-apiserver.pid")).read())
server = next(l.split()[1] for l in open(os.path.join(env, "kubeconfig")) if l.strip().startswith("server:"))
url = urllib.parse.urlparse(server)
context = ssl.create_default_context(cafile=os.path.join(env, "pki", "ca.crt"))


def server_cpu():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def handshake():
    with socket.create_connection((url.hostname, url.port)) as raw:
        context.wrap_socket(raw, server_hostname=url.hostname).close()


for _ in range(3):
    time.sleep(1.5)
    before, start, cpu = server_cpu(), time.monotonic(), time.process_time()
    threads = [threading.Thread(target=handshake) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.monotonic() - start, time.process_time() - cpu
    time.sleep(0.3)
    busy = server_cpu() - before
    time.sleep(1.5)
    idle_before = server_cpu()
    time.sleep(0.3 + wall)
    idle = server_cpu() - idle_before
    print(f"{count} handshakes: {wall:.3f} s wall, client {cpu:.3f} CPU-s, "
          f"API server {busy:.2f} CPU-s (idle over the same span: {idle:.2f})")
