#!/usr/bin/env python3
"""Scales the syncz answer captured from a real istiod (tests/fixtures/syncz/) up to N proxies,
with the matching pods (tests/fixtures/syncz/pods.json), for bench/proxy_status.sh.

Per 100 proxies: 97 SYNCED (the real web-1 entry), 2 STALE (the real web-2 entry of stale.json),
1 ERROR (the real web-1 entry of error.json). Pods: one per proxy (the real web-1 pod), plus
2% more sidecar pods that no istiod knows (the real crash-looping pod), 100 namespaces.

Usage: gen_syncz.py N OUT_DIR  -> OUT_DIR/syncz-N.json, OUT_DIR/pods-N.json
"""
import copy
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
fixtures = os.path.join(here, "..", "tests", "fixtures", "syncz")


def load(name):
    with open(os.path.join(fixtures, name)) as f:
        return json.load(f)


synced = next(e for e in load("synced.json") if e["proxy"] == "web-1.shop")
stale = next(e for e in load("stale.json") if e["proxy"] == "web-2.shop")
error = next(e for e in load("error.json") if e["proxy"] == "web-1.shop")
pods = {p["metadata"]["name"]: p for p in load("pods.json")["items"]}
pod_ok, pod_crash = pods["web-1"], pods["web-crash"]

n = int(sys.argv[1])
out = sys.argv[2]
os.makedirs(out, exist_ok=True)

entries, items = [], []
for i in range(n):
    ns = f"ns-{i % 100:03d}"
    name = f"app-{i:05d}"
    template = error if i % 100 == 99 else stale if i % 100 in (97, 98) else synced
    e = copy.deepcopy(template)
    e["proxy"] = f"{name}.{ns}"
    entries.append(e)
    p = copy.deepcopy(pod_ok)
    p["metadata"].update(name=name, namespace=ns, uid=f"uid-{i}")
    p["metadata"]["labels"] = {"app": f"app-{i // 100}"}
    items.append(p)
for i in range(n // 50):
    p = copy.deepcopy(pod_crash)
    ns = f"ns-{i % 100:03d}"
    p["metadata"].update(name=f"crash-{i:05d}", namespace=ns, uid=f"uid-crash-{i}")
    items.append(p)

with open(os.path.join(out, f"syncz-{n}.json"), "w") as f:
    json.dump(entries, f)
with open(os.path.join(out, f"pods-{n}.json"), "w") as f:
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
