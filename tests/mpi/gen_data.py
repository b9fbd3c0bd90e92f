#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""gen_data.py OUT N F C SEED - a small learnable safetensors dataset: x
[N, F] f32 uniform in [-1, 1), y [N] i32 the argmax of C fixed random
projections of x (so an mlp can learn it)"""
import json
import random
import struct
import sys

out, n, f, c, seed = sys.argv[1], *map(int, sys.argv[2:6])
rng = random.Random(seed)
w = [[rng.uniform(-1, 1) for _ in range(f)] for _ in range(c)]
xs, ys = [], []
for _ in range(n):
    x = [rng.uniform(-1, 1) for _ in range(f)]
    s = [sum(a * b for a, b in zip(row, x)) for row in w]
    xs.extend(x)
    ys.append(max(range(c), key=lambda k: s[k]))
xb = struct.pack("<%df" % len(xs), *xs)
yb = struct.pack("<%di" % len(ys), *ys)
hdr = {"x": {"dtype": "F32", "shape": [n, f], "data_offsets": [0, len(xb)]},
       "y": {"dtype": "I32", "shape": [n],
             "data_offsets": [len(xb), len(xb) + len(yb)]}}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(out, "wb") as fp:
    fp.write(struct.pack("<Q", len(h)) + h + xb + yb)
