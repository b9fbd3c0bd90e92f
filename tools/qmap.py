#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""qmap.py - derive bitsandbytes' 8-bit dynamic quantization maps and check
(or print) the copies the library keeps of them

The maps are what bitsandbytes.functional.create_dynamic_map(signed,
max_exponent_bits=7, total_bits=8) returns, built here the same way from
its description (torch float32 arithmetic, as bitsandbytes computes them):
for each decade i = 0..6 the midpoints of torch.linspace(0.1, 1, k) with
k = 2^i + 1 points (signed) or 2^(i + 1) + 1 (unsigned), scaled by
10^(i - 6), with their negatives for the signed map; then 0 and 1; sorted.
256 values each, [0] unsigned and [1] signed, as float32 bit patterns.

The copies sit between the lines "qmap begin" and "qmap end" in
libgpuopt/src/core/quant.c, kernels/vulkan/precision.glsl and
kernels/opencl/precision.cl, unsigned first: in C as 512 hexadecimal float
literals (exact in any C99 compiler), in the kernels as 512 words, the
bit patterns (uintBitsToFloat, as_float).

  tools/qmap.py             check the three copies (exit 1 on a mismatch)
  tools/qmap.py --print     print the 512 words as the kernels hold them
  tools/qmap.py --print-c   print the 512 C literals
"""
import re
import struct
import sys

import torch

FILES = ("libgpuopt/src/core/quant.c", "kernels/vulkan/precision.glsl",
         "kernels/opencl/precision.cl")


def dynamic_map(signed):
    vals = []
    for i in range(7):
        k = 2 ** i + 1 if signed else 2 ** (i + 1) + 1
        edges = torch.linspace(0.1, 1, k)
        mids = (edges[:-1] + edges[1:]) / 2.0
        scale = 10 ** (i - 6)
        vals += (scale * mids).tolist()
        if signed:
            vals += (-scale * mids).tolist()
    vals += [0.0, 1.0]
    assert len(vals) == 256
    vals.sort()
    return torch.tensor(vals, dtype=torch.float32).tolist()


def words():
    out = []
    for signed in (0, 1):
        out += [struct.unpack("<I", struct.pack("<f", v))[0]
                for v in dynamic_map(signed)]
    return out


def word_float(w):
    return struct.unpack("<f", struct.pack("<I", w))[0]


def c_literal(w):
    m, e = word_float(w).hex().split("p")
    return m.rstrip("0").rstrip(".") + "p" + e + "f"


def text(items, per_line):
    lines = []
    for i in range(0, len(items), per_line):
        lines.append("\t" + " ".join(x + "," for x in items[i:i + per_line]))
    return "\n".join(lines)


def parse(f, block):
    if f.endswith(".c"):
        lits = re.findall(r"(-?0x[0-9a-f]+(?:\.[0-9a-f]*)?p[-+][0-9]+)f",
                          block)
        return [struct.unpack("<I", struct.pack("<f", float.fromhex(x)))[0]
                for x in lits]
    return [int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]{8})", block)]


def main():
    ws = words()
    if len(sys.argv) > 1 and sys.argv[1] == "--print":
        print(text(["0x%08x" % w for w in ws], 6))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--print-c":
        for half in (ws[:256], ws[256:]):
            print("\t{")
            print(text([c_literal(w) for w in half], 4).replace("\t", "\t\t"))
            print("\t},")
        return 0
    bad = 0
    for f in FILES:
        src = open(f).read()
        m = re.search(r"qmap begin[^\n]*\n(.*?)\n[^\n]*qmap end", src, re.S)
        got = parse(f, m.group(1)) if m else []
        if got != ws:
            print("%s: the map differs from bitsandbytes'" % f)
            bad = 1
    if not bad:
        print("qmap: the 3 copies match (%d values)" % len(ws))
    return bad


if __name__ == "__main__":
    sys.exit(main())
