#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""gen_train_refs.py - training trajectories from PyTorch itself.

Run with Debian's python3 and its torch 1.13 (python3-torch), with
dataset-fashion-mnist installed, from the repository root:

    /usr/bin/python3 tests/data/train/gen_train_refs.py

It writes, beside itself:

fmnist-slice.safetensors
    x U8 [800, 784] and y I64 [800]: the first 800 training samples of
    /usr/share/datasets/fashion-mnist; x_test U8 [200, 784] and y_test I64
    [200]: the first 200 test samples.

mlp_sgd.safetensors, mlp_adamw.safetensors
    torch.nn.Sequential(Linear(784, 32), ReLU(), Linear(32, 10)) with
    torch's default initialisation after torch.manual_seed(1234), trained
    on the slice without shuffling (step k takes samples [16k, 16k + 16),
    x = u8 / 255 as float32), batch 16, 50 steps, loss = cross_entropy
    (mean over the batch):
      mlp_sgd:   SGD(lr=0.05, momentum=0.9)
      mlp_adamw: AdamW(lr=1e-3, weight_decay=0.01) with
                 clip_grad_norm_(params, 1.0) before each step
    Tensors: init/<name> (before the first step), final/<name> (after the
    last), F32, for fc0.weight [32, 784], fc0.bias [32], fc1.weight
    [10, 32], fc1.bias [10] (torch calls them 0.* and 2.*); loss F64 [50],
    the loss of each step's batch before that step's update (the float32
    value torch computed, widened). __metadata__ holds every
    hyperparameter and torch's version.

The safetensors files are written here byte by byte (the format is an
8-byte little-endian header length, a JSON header, the data), so the
safetensors package is not needed.
"""
import gzip
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FMNIST = "/usr/share/datasets/fashion-mnist"
N_TRAIN, N_TEST = 800, 200
BATCH, STEPS, SEED = 16, 50, 1234
HIDDEN = 32


def read_idx(path, want_magic):
    """An IDX file (gzip or not) as a numpy array."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic, = struct.unpack(">I", raw[:4])
    assert magic == want_magic, (path, hex(magic))
    ndim = magic & 0xff
    dims = struct.unpack(">%dI" % ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    assert data.size == int(np.prod(dims)), path
    return data.reshape(dims)


def fmnist(part):
    def find(name):
        for suffix in (".gz", ""):
            p = os.path.join(FMNIST, name + suffix)
            if os.path.exists(p):
                return p
        raise SystemExit("no %s in %s (apt-get install dataset-fashion-mnist)"
                         % (name, FMNIST))
    x = read_idx(find("%s-images-idx3-ubyte" % part), 0x803)
    y = read_idx(find("%s-labels-idx1-ubyte" % part), 0x801)
    return x.reshape(x.shape[0], -1), y


DTYPES = {np.dtype(np.uint8): "U8", np.dtype(np.int64): "I64",
          np.dtype(np.float32): "F32", np.dtype(np.float64): "F64"}


def save_safetensors(path, tensors, metadata):
    """tensors: [(name, numpy array)] in file order; metadata: str -> str."""
    header = {"__metadata__": metadata}
    blobs, off = [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def write_slice():
    xtr, ytr = fmnist("train")
    xte, yte = fmnist("t10k")
    x, y = xtr[:N_TRAIN].copy(), ytr[:N_TRAIN].astype(np.int64)
    xt, yt = xte[:N_TEST].copy(), yte[:N_TEST].astype(np.int64)
    save_safetensors(os.path.join(HERE, "fmnist-slice.safetensors"),
                     [("x", x), ("y", y), ("x_test", xt), ("y_test", yt)],
                     {"source": FMNIST,
                      "train": "first %d of train-*" % N_TRAIN,
                      "test": "first %d of t10k-*" % N_TEST})
    return x, y


NAMES = [("fc0.weight", "0.weight"), ("fc0.bias", "0.bias"),
         ("fc1.weight", "2.weight"), ("fc1.bias", "2.bias")]


def run(case, x_u8, y):
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(784, HIDDEN),
                                torch.nn.ReLU(),
                                torch.nn.Linear(HIDDEN, 10))
    sd = model.state_dict()
    init = [("init/" + ours, sd[theirs].detach().numpy().copy())
            for ours, theirs in NAMES]
    params = list(model.parameters())
    meta = {"model": "Linear(784,%d) ReLU Linear(%d,10)" % (HIDDEN, HIDDEN),
            "init": "torch default, torch.manual_seed(%d)" % SEED,
            "batch_size": str(BATCH), "steps": str(STEPS), "shuffle": "0",
            "loss": "cross_entropy mean",
            "x": "u8 / 255 as float32",
            "torch": torch.__version__}
    if case == "sgd":
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
        clip = None
        meta.update(optimizer="sgd", lr="0.05", momentum="0.9",
                    dampening="0", weight_decay="0", nesterov="0")
    else:
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
        clip = 1.0
        meta.update(optimizer="adamw", lr="0.001", betas="0.9,0.999",
                    eps="1e-08", weight_decay="0.01", amsgrad="0",
                    clip_norm="1.0")
    xf = torch.from_numpy(x_u8.astype(np.float32)) / 255.0
    yt = torch.from_numpy(y)
    losses = np.zeros(STEPS, dtype=np.float64)
    for k in range(STEPS):
        xb, yb = xf[BATCH * k:BATCH * (k + 1)], yt[BATCH * k:BATCH * (k + 1)]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        losses[k] = loss.item()
    sd = model.state_dict()
    final = [("final/" + ours, sd[theirs].detach().numpy().copy())
             for ours, theirs in NAMES]
    save_safetensors(os.path.join(HERE, "mlp_%s.safetensors" % case),
                     init + final + [("loss", losses)], meta)
    print("mlp_%s: loss %.4f -> %.4f" % (case, losses[0], losses[-1]))


def main():
    torch.set_num_threads(1)
    x, y = write_slice()
    assert x.shape[0] >= BATCH * STEPS
    for case in ("sgd", "adamw"):
        run(case, x, y)


if __name__ == "__main__":
    main()
