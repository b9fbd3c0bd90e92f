#!/usr/bin/python3
# interop.py HELPER - gpuopt's checkpoints and the safetensors package:
# 1. the package loads every file gpuopt writes, with the values gpuopt
#    holds (dumped from the live optimizer, not read back from the file);
# 2. the package re-saves those arrays with the same metadata: gpuopt
#    restores that file strictly (checksums and all);
# 3. the package saves fresh numpy arrays with matching names and no
#    metadata: gpuopt refuses it strictly, restores it with -f (foreign).
# 4. the same three for optimizers whose buffers are F16, BF16, U8, I32
#    and I64: the package sees each tensor in its dtype (numpy has no
#    bfloat16: BF16 is checked through the package's deserialize() and
#    numpy over the file's own bytes), and its files of those dtypes
#    restore bit-exactly; an optimizer of other dtypes refuses them.
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors import deserialize, safe_open, serialize_file
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


# optimizer, then the dtype of each buffer (grad is never saved)
DTYPE_CASES = [
    ("adamw", {"param": "f16", "exp_avg": "bf16", "exp_avg_sq": "u8",
               "max_exp_avg_sq": "i32", "grad": "i64"}),
    ("rmsprop", {"param": "bf16", "square_avg": "i64",
                 "momentum_buffer": "f16", "grad_avg": "u8"}),
]
ST_NAME = {"f32": "F32", "f16": "F16", "bf16": "BF16", "u8": "U8",
           "i32": "I32", "i64": "I64"}
# what serialize() takes, as safetensors.torch passes it
PKG_NAME = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
            "u8": "uint8", "i32": "int32", "i64": "int64"}
NUMPY = {"F32": np.float32, "F16": np.float16, "U8": np.uint8,
         "I32": np.int32, "I64": np.int64}


def dumped_bytes(d):
    out = {}
    for f in os.listdir(d):
        with open(os.path.join(d, f), "rb") as fh:
            out[f[:-4].replace("__", "/")] = fh.read()
    return out


def buffer_of(name):
    return "param" if name.startswith("param/") else name.rsplit("/", 1)[1]


def dtype_of(dts, name):
    """A tensor's dtype: its buffer's, or f32 for a u8 slot's absmax
    blocks (absmax/<slot>)"""
    return "f32" if name.startswith("absmax/") else dts[buffer_of(name)]


def file_bytes(path):
    """Each tensor's bytes by the file's own header, read with numpy."""
    raw = np.fromfile(path, dtype=np.uint8)
    n = int(raw[:8].view("<u8")[0])
    hdr = json.loads(raw[8:8 + n].tobytes())
    data = raw[8 + n:]
    out = {}
    for name, e in hdr.items():
        if name != "__metadata__":
            b, end = e["data_offsets"]
            out[name] = data[b:end]
    return out


def same_bytes(a, b, what):
    if set(a) != set(b):
        sys.exit("%s: names %s vs %s" % (what, sorted(a), sorted(b)))
    for name in b:
        if bytes(a[name]) != bytes(b[name]):
            sys.exit("%s: %s differs" % (what, name))


def check_dtypes(tmp, kind, dts):
    spec = ",".join("%s=%s" % kv for kv in sorted(dts.items()))
    tag = kind + "." + "_".join(sorted(dts.values()))
    path = os.path.join(tmp, tag + ".st")
    d1 = os.path.join(tmp, tag + ".d1")
    os.mkdir(d1)
    helper("save", path, "-k", kind, "-n", "3000", "-s", "5", "-T", spec,
           "-o", d1)
    want = dumped_bytes(d1)

    # the package's own reader: dtypes, shapes, bytes of every tensor
    with open(path, "rb") as fh:
        pkg = dict(deserialize(fh.read()))
    for name, t in pkg.items():
        st = ST_NAME[dtype_of(dts, name)]
        if t["dtype"] != st:
            sys.exit("%s: %s is %s, want %s" % (tag, name, t["dtype"], st))
    same_bytes({n: t["data"] for n, t in pkg.items()}, want,
               tag + ": package deserialize")
    # numpy through the package where numpy has the dtype, else the
    # file's bytes as 16-bit words
    raw = file_bytes(path)
    got = {}
    with safe_open(path, framework="np") as f:
        meta = f.metadata()
        for name in f.keys():
            st = f.get_slice(name).get_dtype()
            if st == "BF16":
                x = raw[name].view("<u2")
                assert x.size == int(np.prod(f.get_slice(name).get_shape()))
            else:
                x = f.get_tensor(name)
                assert x.dtype == NUMPY[st], (name, x.dtype, st)
            got[name] = np.ascontiguousarray(x).tobytes()
    same_bytes(got, want, tag + ": numpy")
    assert meta["gpuopt.optimizer"] == kind and meta["gpuopt.step"] == "5"

    # an optimizer of other dtypes refuses the file: nothing is converted
    r = helper("load", path, "-k", kind, "-n", "3000", ok=False)
    if r.returncode != 1 or "errno=22" not in r.stderr:
        sys.exit("%s: load into f32 buffers: %s" % (tag, r.stderr))

    # the package writes the same tensors, in those dtypes, with gpuopt's
    # metadata: a strict restore
    shapes = {n: t["shape"] for n, t in pkg.items()}

    def pkg_dict(data):
        return {n: {"dtype": PKG_NAME[dtype_of(dts, n)], "shape": shapes[n],
                    "data": bytes(data[n])} for n in shapes}

    path2 = os.path.join(tmp, tag + ".resaved.st")
    serialize_file(pkg_dict(want), path2, metadata=meta)
    d2 = os.path.join(tmp, tag + ".d2")
    os.mkdir(d2)
    helper("load", path2, "-k", kind, "-n", "3000", "-T", spec, "-o", d2)
    same_bytes({n: b for n, b in dumped_bytes(d2).items() if n in want},
               want, tag + ": gpuopt load of the package's file")

    # fresh bytes, no metadata: strict refuses, foreign restores
    rng = np.random.default_rng(len(tag))
    fresh = {n: rng.integers(0, 256, len(b), dtype=np.uint8).tobytes()
             for n, b in want.items()}
    path3 = os.path.join(tmp, tag + ".foreign.st")
    serialize_file(pkg_dict(fresh), path3)
    r = helper("load", path3, "-k", kind, "-n", "3000", "-T", spec, ok=False)
    if r.returncode != 1 or "errno=61" not in r.stderr:
        sys.exit("%s: strict load of a foreign file: %s" % (tag, r.stderr))
    d3 = os.path.join(tmp, tag + ".d3")
    os.mkdir(d3)
    helper("load", path3, "-k", kind, "-n", "3000", "-T", spec, "-f",
           "-o", d3)
    same_bytes(dumped_bytes(d3), fresh, tag + ": gpuopt load of raw bytes")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for kind in KINDS:
            check_kind(tmp, kind)
        for kind, dts in DTYPE_CASES:
            check_dtypes(tmp, kind, dts)
    print("interop: %d optimizers, both ways; %d of other dtypes"
          % (len(KINDS), len(DTYPE_CASES)))


HELPER = sys.argv[1]
main()
