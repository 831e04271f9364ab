#!/usr/bin/env python3
"""Pack a root filesystem directory into an image tarball that `ctr image import` loads.

Usage: mkimage.py --name REF --rootfs DIR --out FILE.tar [--entrypoint JSON] [--cmd JSON]
                  [--env K=V ...] [--user UID] [--workdir DIR]

The tarball is in the `docker save` layout (manifest.json + config + one layer), which
containerd's importer reads. One uncompressed layer; file owners are root unless the
rootfs says otherwise; mtimes are fixed so the same inputs give the same image id.
"""
import argparse
import hashlib
import io
import json
import os
import tarfile


def layer_bytes(rootfs):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in os.walk(rootfs):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                full = os.path.join(dirpath, name)
                arc = os.path.relpath(full, rootfs)
                info = tar.gettarinfo(full, arcname=arc)
                info.mtime = 0
                info.uname = info.gname = ""
                if info.isreg():
                    with open(full, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
    return buf.getvalue()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--name", required=True)
    p.add_argument("--rootfs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--entrypoint", default="null")
    p.add_argument("--cmd", default="null")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--user", default="")
    p.add_argument("--workdir", default="/")
    a = p.parse_args()

    layer = layer_bytes(a.rootfs)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + a.env
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "Entrypoint": json.loads(a.entrypoint),
            "Cmd": json.loads(a.cmd),
            "Env": env,
            "User": a.user,
            "WorkingDir": a.workdir,
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "testenv/node/mkimage.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [a.name], "Layers": ["layer.tar"]}]

    def add(tar, name, data):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))

    tmp = a.out + ".tmp"
    with tarfile.open(tmp, "w") as tar:
        add(tar, "layer.tar", layer)
        add(tar, config_name, config_bytes)
        add(tar, "manifest.json", json.dumps(manifest).encode())
    os.replace(tmp, a.out)
    print(diff_id)


if __name__ == "__main__":
    main()
