#!/usr/bin/python3
# interop.py HELPER - gpuopt's checkpoints and the safetensors package:
# 1. the package loads every file gpuopt writes, with the values gpuopt
#    holds (dumped from the live optimizer, not read back from the file);
# 2. the package re-saves those arrays with the same metadata: gpuopt
#    restores that file strictly (checksums and all);
# 3. the package saves fresh numpy arrays with matching names and no
#    metadata: gpuopt refuses it strictly, restores it with -f (foreign).
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

KINDS = ["sgd", "adam", "adamw", "rmsprop", "adagrad", "lamb", "lion"]


def helper(*args, ok=True):
    r = subprocess.run([HELPER] + list(args), capture_output=True, text=True)
    if ok and r.returncode:
        sys.exit("helper %s: %s" % (" ".join(args), r.stderr))
    return r


def dumped(d):
    out = {}
    for f in os.listdir(d):
        name = f[:-4].replace("__", "/")
        out[name] = np.fromfile(os.path.join(d, f), dtype="<f4")
    return out


def same(a, b, what):
    for name in b:
        if name not in a:
            sys.exit("%s: %s missing" % (what, name))
        x = np.ascontiguousarray(a[name]).reshape(-1).view(np.uint32)
        y = np.ascontiguousarray(b[name]).reshape(-1).view(np.uint32)
        if x.shape != y.shape or not np.array_equal(x, y):
            sys.exit("%s: %s differs" % (what, name))
    if set(a) != set(b):
        sys.exit("%s: names %s vs %s" % (what, sorted(a), sorted(b)))


def check_kind(tmp, kind):
    path = os.path.join(tmp, kind + ".st")
    d1 = os.path.join(tmp, kind + ".d1")
    os.mkdir(d1)
    helper("save", path, "-k", kind, "-n", "3000", "-s", "3", "-o", d1)
    tensors = load_file(path)
    same(tensors, dumped(d1), kind + ": package load")
    for name, t in tensors.items():
        assert t.dtype == np.float32, name
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
    assert meta["format"] == "pt" and meta["gpuopt.optimizer"] == kind

    path2 = os.path.join(tmp, kind + ".resaved.st")
    save_file(tensors, path2, metadata=meta)
    d2 = os.path.join(tmp, kind + ".d2")
    os.mkdir(d2)
    helper("load", path2, "-k", kind, "-n", "3000", "-o", d2)
    same(dumped(d2), tensors, kind + ": gpuopt load of the package's file")

    rng = np.random.default_rng(len(kind))
    fresh = {n: rng.standard_normal(t.shape).astype(np.float32)
             for n, t in tensors.items()}
    if kind == "adagrad":	# a sum of squares is never negative
        fresh = {n: np.abs(t) for n, t in fresh.items()}
    path3 = os.path.join(tmp, kind + ".numpy.st")
    save_file(fresh, path3)
    r = helper("load", path3, "-k", kind, "-n", "3000", ok=False)
    if r.returncode != 1 or "errno=61" not in r.stderr:
        sys.exit("%s: strict load of a foreign file: %s" % (kind, r.stderr))
    d3 = os.path.join(tmp, kind + ".d3")
    os.mkdir(d3)
    helper("load", path3, "-k", kind, "-n", "3000", "-f", "-o", d3)
    same(dumped(d3), fresh, kind + ": gpuopt load of numpy arrays")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for kind in KINDS:
            check_kind(tmp, kind)
    print("interop: %d optimizers, both ways" % len(KINDS))


HELPER = sys.argv[1]
main()
