#!/usr/bin/env python3
"""Peak memory and time of mesh-doctor on each hostile file of tests/it/hostile.rs.

    bench/hostile.py [BINARY]      # default: target/release/kubectl-mesh_doctor

The files are written again here (the same shapes as the test's generator, plus the 200 MB
manifest set issue 11 measured at 8.1 GiB), each run is one process, and its peak resident memory
comes from /usr/bin/time (GNU time's %M). Prints a Markdown table for docs/reliability.md. Numbers, not
assertions: the test keeps the budgets (1 GiB address space, 60 s).
"""
import os
import subprocess
import sys
import tempfile
import time

BINARY = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/kubectl-mesh_doctor")


def deep_block_sequences(depth):
    return "- " * depth + "x\n"


def deep_block_mappings(depth):
    return "".join("  " * i + "k:\n" for i in range(depth))


def nested_lists(depth):
    out = []
    for i in range(depth):
        pad = "  " * i
        dash = "" if i == 0 else "- "
        inner = "" if i == 0 else "  " * (i - 1)
        out += [f"{inner}{dash}apiVersion: v1", f"{pad}kind: List", f"{pad}items:"]
    pad = "  " * max(depth - 1, 0)
    out.append(pad + "- {apiVersion: v1, kind: Namespace, metadata: {name: x}}")
    return "\n".join(out) + "\n"


def nested_lists_json(depth):
    head = '{"apiVersion": "v1", "kind": "List", "items": [' * depth
    return head + '{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}' + "]}" * depth + "\n"


def alias_bomb(levels):
    out = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 9) + "]")
    return "\n".join(out) + "\n"


def services(count):
    return "".join(
        f"---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s{i}\n  namespace: shop\n"
        f"  labels: {{app: s{i}, tier: web}}\n  annotations: {{a: b, c: d, e: f}}\nspec:\n"
        f"  selector: {{app: s{i}}}\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n"
        for i in range(count)
    )


def duplicate_ports():
    return ("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\nspec:\n"
            "  ports:\n  - name: http\n    port: 80\n  selector:\n    app: web\n  ports:\n"
            "  - name: oops\n    port: 8080\n")


def run(args, cwd):
    # /usr/bin/time measures the binary itself (a forked Python child would count Python's own
    # memory before the exec in its peak).
    timing = os.path.join(cwd, ".time")
    started = time.monotonic()
    child = subprocess.run(["/usr/bin/time", "-o", timing, "-f", "%M", BINARY, *args], cwd=cwd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL,
                           env={**os.environ, "NO_COLOR": "1", "KUBECONFIG": "/nonexistent"})
    elapsed = time.monotonic() - started
    with open(timing) as f:
        kib = int(f.read().split()[-1])
    first = child.stderr.decode(errors="replace").strip().splitlines()
    return child.returncode, kib / 1024, elapsed, (first[0] if first else "")[:90]


def main():
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"{BINARY} is not built (cargo build --release)")
    d = tempfile.mkdtemp(prefix="mesh-doctor-hostile-")
    files = {
        "d.yaml": deep_block_sequences(40_000),
        "m.yaml": deep_block_mappings(5_000),
        "lists.yaml": nested_lists(200),
        "lists.json": nested_lists_json(200),
        "flow.yaml": "[" * 200_000 + "]" * 200_000 + "\n",
        "bomb8.yaml": alias_bomb(8),
        "bomb12.yaml": alias_bomb(12),
        "dup.yaml": duplicate_ports(),
        "bad.yaml": None,
        "many.yaml": services(20_000),
    }
    for name, text in files.items():
        if text is not None:
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
    with open(os.path.join(d, "bad.yaml"), "wb") as f:
        f.write(b"apiVersion: v1\nkind: Namespace\nmetadata: {name: \xff}\n")
    os.makedirs(os.path.join(d, "loop"))
    with open(os.path.join(d, "loop", "ns.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n")
    os.symlink(".", os.path.join(d, "loop", "a"))
    os.symlink(".", os.path.join(d, "loop", "b"))
    # The 200 MB manifest set: 20 files of ~10 MB (36,000 Services each) under the default cap.
    big = os.path.join(d, "big")
    os.makedirs(big)
    chunk = services(36_000)
    for i in range(20):
        with open(os.path.join(big, f"part{i:02}.yaml"), "w") as f:
            f.write(chunk.replace("name: s", f"name: p{i}-s"))
    size = sum(os.path.getsize(os.path.join(big, n)) for n in os.listdir(big))
    cases = [
        ("40,000 nested block sequences", ["analyze", "-f", "d.yaml"]),
        ("5,000 nested block mappings", ["analyze", "-f", "m.yaml"]),
        ("200 nested `kind: List` (block)", ["analyze", "-f", "lists.yaml"]),
        ("200 nested `kind: List` (JSON)", ["analyze", "-f", "lists.json"]),
        ("200,000 nested flow sequences", ["bootstrap", "validate", "flow.yaml"]),
        ("billion laughs, 8 levels", ["analyze", "-f", "bomb8.yaml"]),
        ("billion laughs, 8 levels", ["bootstrap", "validate", "bomb8.yaml"]),
        ("billion laughs, 12 levels", ["analyze", "-f", "bomb12.yaml"]),
        ("two symlinks to `.`", ["analyze", "-f", "loop", "-R"]),
        ("`/dev/zero`", ["analyze", "-f", "/dev/zero"]),
        ("`/dev/zero`", ["bootstrap", "validate", "/dev/zero"]),
        ("`\\xff` in a manifest", ["analyze", "-f", "bad.yaml"]),
        ("two `ports:` keys", ["analyze", "-f", "dup.yaml"]),
        ("20,000 Services in one file (5.5 MB)", ["analyze", "-f", "many.yaml", "-o", "json"]),
        (f"{size / 1e6:.0f} MB in 20 files (720,000 Services)", ["analyze", "-f", "big", "-o", "json"]),
    ]
    print(f"binary: {BINARY}; load: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| case | command | exit | peak memory | time |")
    print("|---|---|---|---|---|")
    for name, args in cases:
        code, mib, secs, first = run(args, d)
        shown = " ".join(a if "/" not in a or a.startswith("/dev") else os.path.basename(a) for a in args)
        print(f"| {name} | `{shown}` | {code} | {mib:.0f} MiB | {secs:.2f} s |", flush=True)
    subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
