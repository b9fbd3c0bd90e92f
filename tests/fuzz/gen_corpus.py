#!/usr/bin/python3
# gen_corpus.py IN OUT - seeds from the checkpoints in IN: each with its
# header padding cut to 8 bytes (small inputs fuzz faster), variants
# without gpuopt metadata, and hand-made files of every dtype.
import json
import os
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def write(path, header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main(src, out):
    os.makedirs(out, exist_ok=True)
    for name in sorted(os.listdir(src)):
        header, data = read(os.path.join(src, name))
        write(os.path.join(out, name), header, data)
    header, data = read(os.path.join(src, "adamw.st"))
    del header["__metadata__"]
    write(os.path.join(out, "foreign_adamw.st"), header, data)
    params = {k: v for k, v in header.items() if k.startswith("param/")}
    end = max(v["data_offsets"][1] for v in params.values())
    write(os.path.join(out, "foreign_params.st"), params, data[:end])
    sizes = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
             "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4,
             "F32": 4, "I64": 8, "U64": 8, "F64": 8}
    hdr, pos = {"__metadata__": {"format": "np"}}, 0
    for dt, sz in sizes.items():
        hdr["x_" + dt] = {"dtype": dt, "shape": [2, 1],
                          "data_offsets": [pos, pos + 2 * sz]}
        pos += 2 * sz
    hdr["scalar"] = {"dtype": "F32", "shape": [], "data_offsets": [pos, pos + 4]}
    hdr["empty"] = {"dtype": "F32", "shape": [0, 3],
                    "data_offsets": [pos + 4, pos + 4]}
    write(os.path.join(out, "dtypes.st"), hdr, bytes(range(pos + 4)))
    write(os.path.join(out, "nothing.st"), {}, b"")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
