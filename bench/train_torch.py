#!/usr/bin/env python3
"""train_torch.py - PyTorch's SGEMM and MLP training step, bench_train's peer.

Prints lines "label key ms" that bench_train -p reads:
    torch_sgemm sgemm:4096 2.66        C = A B, f32, TF32 off (the limit)
    torch_hgemm hgemm:4096 0.184       C = A B, fp16 (tensor cores): the
                                       limit of bench_train's hgemm
    torch_eager mlp:784x256x10@128 0.881
    torch_graph mlp:784x256x10@128 0.111
    torch_eager gpt:6x6x384x256@64 120.0
    torch_mm mm:384x1152x16384ta 0.712  torch.matmul of that shape
    torch_attn_fwd attn:384x256x64 0.09 causal scaled_dot_product_attention,
    torch_attn attn:384x256x64 0.35     f32: forward; forward + backward
    train_torch.py [--device cuda] [--sizes 1024,4096,8192]
                   [--hsizes 4096,8192]
                   [--mlps 784x256x10@128,784x1024x1024x10@4096]
                   [--gpts 6x6x384x256@64]
                   [--products 16384x384x1152tb,256x256x64tb@384]
                   [--attns 384x256x64] [--colsums 16384x1536]
The MLP step is zero_grad, forward (Linear and ReLU), cross-entropy,
backward and AdamW (lr 1e-3, weight decay 0.01) on the next batch of a
dataset already on the device, as bench_train's. Eager: the foreach
AdamW; graph: the whole step captured in a CUDA graph (capturable AdamW)
and replayed. Times: many steps (products) queued, one synchronisation,
the median of --rounds rounds.

The GPT step (LAYERSxHEADSxDIMxCTX@BATCH) is bench_train's: GPT-2's
architecture over 256 byte values (pre-LN blocks, causal self-attention
through torch's scaled_dot_product_attention, a GELU-tanh MLP of 4 D, the
head tied to the token embedding), dropout 0, f32 with TF32 off, AdamW
(lr 3e-4, weight decay 0.01), on sequential windows of random bytes
already on the device.

A product MxNxK[ta][tb][@BATCH][:f16] (bench_train -M) is C = op(A) op(B),
C M x N, A stored K x M with "ta" (M x K without), B stored N x K with
"tb", @BATCH products of 3-d operands; torch.matmul on transposed views
(no copies: cuBLAS takes the transposes as flags), into a C allocated
once, f32 with TF32 off (f16 in and out with ":f16" or ":r16"), timed as
the SGEMM.
"""
import argparse
import math
import os
import re
import statistics
import sys
import time

import torch

ROUND_S = 0.25


def timed(fn, sync, rounds):
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 0.3 or n < 3:
        fn()
        sync()
        n += 1
    reps = int(ROUND_S / ((time.perf_counter() - t0) / n)) + 1
    times = []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times) * 1e3


def sgemm(n, device, rounds, sync):
    gen = torch.Generator().manual_seed(1)
    a = (torch.rand(n, n, generator=gen) - 0.5).to(device)
    b = (torch.rand(n, n, generator=gen) - 0.5).to(device)
    c = torch.empty(n, n, device=device)
    return timed(lambda: torch.mm(a, b, out=c), sync, rounds)


def hgemm(n, device, rounds, sync):
    """torch's fp16 matmul (cuBLAS on tensor cores, fp16 out), the limit
    of bench_train's hgemm, whose C is f32: a little more to write"""
    gen = torch.Generator().manual_seed(1)
    a = (torch.rand(n, n, generator=gen) - 0.5).to(device, torch.float16)
    b = (torch.rand(n, n, generator=gen) - 0.5).to(device, torch.float16)
    c = torch.empty(n, n, device=device, dtype=torch.float16)
    return timed(lambda: torch.mm(a, b, out=c), sync, rounds)


def parse_product(spec):
    m = re.fullmatch(r"(\d+)x(\d+)x(\d+)((?:ta|tb)*)(?:@(\d+))?"
                     r"(:f16|:r16)?", spec)
    if not m or m.group(4) not in ("", "ta", "tb", "tatb", "tbta"):
        raise ValueError("bad product %s" % spec)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)),
            "ta" in m.group(4), "tb" in m.group(4), int(m.group(5) or 1),
            m.group(6) is not None)


def product(spec, device, rounds, sync):
    m, n, k, ta, tb, batch, half = parse_product(spec)
    dt = torch.float16 if half else torch.float32
    gen = torch.Generator().manual_seed(1)
    lead = (batch,) if batch > 1 else ()
    a = (torch.rand(*lead, *((k, m) if ta else (m, k)), generator=gen)
         - 0.5).to(device, dt)
    b = (torch.rand(*lead, *((n, k) if tb else (k, n)), generator=gen)
         - 0.5).to(device, dt)
    if ta:
        a = a.transpose(-2, -1)
    if tb:
        b = b.transpose(-2, -1)
    c = torch.empty(*lead, m, n, device=device, dtype=dt)
    return timed(lambda: torch.matmul(a, b, out=c), sync, rounds)


def attn_times(spec, device, rounds, sync):
    """torch's causal scaled_dot_product_attention in f32 on [1, BH, T, hd]
    (the kernel torch picks: memory-efficient attention on CUDA), the
    forward alone and forward + backward; bench_train -A's peer"""
    bh, t, hd = (int(v) for v in spec.split("x"))
    gen = torch.Generator().manual_seed(1)
    q, k, v, w = ((torch.rand(1, bh, t, hd, generator=gen) - 0.5).to(device)
                  for _ in range(4))
    for x in (q, k, v):
        x.requires_grad_(True)
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def fwd():
        with torch.no_grad():
            sdpa(q, k, v, is_causal=True)

    def both():
        y = sdpa(q, k, v, is_causal=True)
        torch.autograd.grad(y, (q, k, v), w)

    return timed(fwd, sync, rounds), timed(both, sync, rounds)


def colsum(spec, device, rounds, sync):
    """torch's x.sum(0) of a ROWSxCOLS f32 matrix (a bias's gradient);
    bench_train -R's peer"""
    rows, cols = (int(v) for v in spec.split("x"))
    gen = torch.Generator().manual_seed(1)
    x = (torch.rand(rows, cols, generator=gen) - 0.5).to(device)
    return timed(lambda: x.sum(0), sync, rounds)


def autocast(device, amp):
    """Mixed precision as torch users write it: autocast to bfloat16 (the
    peer of gpuopt's matmul=f16), or nothing."""
    return torch.autocast(device_type="cuda" if device == "cuda" else "cpu",
                          dtype=torch.bfloat16, enabled=amp)


def stepper(step, window, nb, graph):
    """A function that runs step() on batch k = 0, 1, .. (mod nb) of
    window(k): eagerly, or replaying step() captured in a CUDA graph, the
    next batch copied into the captured inputs as part of the step."""
    pos = [0]

    def next_batch():
        k = pos[0] % nb
        pos[0] += 1
        return window(k)

    if not graph:
        return lambda: step(*next_batch())
    sx, sy = (w.clone() for w in window(0))
    # warm up on a side stream before capture, as torch's docs do
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(sx, sy)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step(sx, sy)

    def replay():
        xb, yb = next_batch()
        sx.copy_(xb, non_blocking=True)
        sy.copy_(yb, non_blocking=True)
        g.replay()
    return replay


def mlp_step_fn(sizes, batch, device, graph, amp=False):
    torch.manual_seed(1)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(device)
    n = max(4096, batch * 16)
    x = torch.rand(n, sizes[0], device=device) - 0.5
    y = torch.randint(0, sizes[-1], (n,), device=device)
    kw = {"capturable": True} if graph else {"foreach": True}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01,
                            **kw)
    lossf = torch.nn.CrossEntropyLoss()
    nb = n // batch

    def step(xb, yb):
        opt.zero_grad(set_to_none=False)
        with autocast(device, amp):
            loss = lossf(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    return stepper(step, lambda k: (x[k * batch:(k + 1) * batch],
                                    y[k * batch:(k + 1) * batch]), nb, graph)


def attention(q, k, v):
    f = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if f:
        return f(q, k, v, is_causal=True)
    # torch before 2.0 (Debian's 1.13): the same, written out
    t = q.shape[-2]
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Block(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln_1 = torch.nn.LayerNorm(d)
        self.c_attn = torch.nn.Linear(d, 3 * d)
        self.c_proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d)
        self.c_fc = torch.nn.Linear(d, 4 * d)
        self.m_proj = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
        y = attention(q, k, v)
        y = y.transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.c_proj(y)
        m = torch.nn.functional.gelu(self.c_fc(self.ln_2(x)),
                                     approximate="tanh")
        return x + self.m_proj(m)


class GPT(torch.nn.Module):
    def __init__(self, layers, heads, dim, ctx):
        super().__init__()
        self.wte = torch.nn.Embedding(256, dim)
        self.wpe = torch.nn.Embedding(ctx, dim)
        self.h = torch.nn.ModuleList(Block(dim, heads)
                                     for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(dim)
        self.register_buffer("pos", torch.arange(ctx))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(self.pos[:idx.shape[1]])
        for blk in self.h:
            x = blk(x)
        return self.ln_f(x) @ self.wte.weight.t()


def gpt_step_fn(layers, heads, dim, ctx, batch, device, graph, amp=False):
    torch.manual_seed(1)
    model = GPT(layers, heads, dim, ctx).to(device)
    nb = 16
    data = torch.randint(0, 256, (nb * batch * ctx + 1,), device=device)
    kw = {"capturable": True} if graph else {"foreach": True}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01,
                            **kw)
    lossf = torch.nn.CrossEntropyLoss()

    def window(k):
        w = data[k * batch * ctx:(k + 1) * batch * ctx + 1]
        return w[:-1].view(batch, ctx), w[1:].reshape(batch * ctx)

    def step(xb, yb):
        opt.zero_grad(set_to_none=False)
        with autocast(device, amp):
            loss = lossf(model(xb).view(-1, 256), yb)
        loss.backward()
        opt.step()
        return loss

    return stepper(step, window, nb, graph)


def labels(amp):
    """The peer labels of a training step: f32, or (":f16") autocast."""
    if amp:
        return (("torch_amp", False), ("torch_amp_graph", True))
    return (("torch_eager", False), ("torch_graph", True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", default="1024,4096,8192")
    ap.add_argument("--hsizes", default="")
    ap.add_argument("--mlps", default="784x256x10@128,784x1024x1024x10@4096")
    ap.add_argument("--gpts", default="")
    ap.add_argument("--products", default="")
    ap.add_argument("--attns", default="")
    ap.add_argument("--colsums", default="")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cuda = a.device == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    name = torch.cuda.get_device_name() if cuda else "cpu"
    print("# torch %s on %s (%s), %d threads, tf32 off" %
          (torch.__version__, a.device, name, a.threads), flush=True)
    for s in filter(None, a.sizes.split(",")):
        n = int(s)
        if n:
            print("torch_sgemm sgemm:%d %.4f" % (n, sgemm(n, a.device,
                                                            a.rounds, sync)),
                  flush=True)
    for s in filter(None, a.hsizes.split(",")):
        n = int(s)
        if not n:
            continue
        try:
            ms = hgemm(n, a.device, a.rounds, sync)
        except RuntimeError as e:
            # Debian's CPU torch has no fp16 matmul: no limit there
            print("# torch_hgemm hgemm:%d: %s" % (n, str(e).splitlines()[0]),
                  flush=True)
            continue
        print("torch_hgemm hgemm:%d %.4f" % (n, ms), flush=True)
    for p in filter(None, a.products.split(",")):
        if p != "0":
            print("torch_mm mm:%s %.4f" % (p, product(p, a.device, a.rounds,
                                                       sync)), flush=True)
    for p in filter(None, a.attns.split(",")):
        if p != "0":
            f, fb = attn_times(p, a.device, a.rounds, sync)
            print("torch_attn_fwd attn:%s %.4f" % (p, f), flush=True)
            print("torch_attn attn:%s %.4f" % (p, fb), flush=True)
    for p in filter(None, a.colsums.split(",")):
        if p != "0":
            print("torch_colsum colsum:%s %.4f" % (p, colsum(p, a.device,
                                                          a.rounds, sync)),
                  flush=True)
    for m in filter(None, a.mlps.split(",")):
        if "@" not in m:
            continue
        spec, batch = m.split("@")
        amp = batch.endswith(":f16")
        batch = batch.split(":")[0]
        sizes = [int(v) for v in spec.split("x")]
        for label, graph in labels(amp):
            if graph and not cuda:
                continue
            try:
                fn = mlp_step_fn(sizes, int(batch), a.device, graph, amp)
                ms = timed(fn, sync, a.rounds)
            except (RuntimeError, TypeError) as e:
                print("# %s %s: %s" % (label, m, e), file=sys.stderr)
                continue
            print("%s mlp:%s %.4f" % (label, m, ms), flush=True)
    for m in filter(None, a.gpts.split(",")):
        if "@" not in m:
            continue
        spec, batch = m.split("@")
        amp = batch.endswith(":f16")
        batch = batch.split(":")[0]
        l, h, d, t = (int(v) for v in spec.split("x"))
        for label, graph in labels(amp):
            if graph and not cuda:
                continue
            try:
                fn = gpt_step_fn(l, h, d, t, int(batch), a.device, graph,
                                 amp)
                ms = timed(fn, sync, a.rounds)
            except (RuntimeError, TypeError) as e:
                print("# %s %s: %s" % (label, m, e), file=sys.stderr)
                continue
            print("%s gpt:%s %.4f" % (label, m, ms), flush=True)


if __name__ == "__main__":
    main()
