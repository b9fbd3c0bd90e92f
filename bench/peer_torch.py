#!/usr/bin/env python3
"""peer_torch.py - PyTorch's AdamW on the same sizes, as bench_optim's peer.

Prints lines "label params ms_per_step" (median wall time of a step,
synchronised), which bench_optim -p reads:
    peer_torch.py --device cpu --sizes 1M,16M,64M [--many] [--reps 20]
With --copies SIZE (CUDA only) it times host<->device copies of SIZE
bytes instead, bench_xfer's limit and peer: lines
"torch_copy_<h2d|d2h>_<pinned|pageable> bytes seconds" (median).
On the CPU it runs torch.optim.AdamW with foreach off and on, with
torch.set_num_threads(--threads or all cores); on CUDA with fused=True
(where this torch has it) and foreach=True. With --many on CUDA, the
10 000-parameter step also as fused AdamW captured in a CUDA graph and
replayed (torch_adamw_fused_graph), and with clip_grad_norm_ before it in
the same graph (torch_adamw_clip_graph): bench_optim's small-step peers.
"""
import argparse
import os
import statistics
import sys
import time

import torch


def parse_size(s):
    mult = {"K": 1e3, "M": 1 << 20, "G": 1 << 30}
    if s[-1].upper() in mult:
        return int(float(s[:-1]) * mult[s[-1].upper()])
    return int(s)


def gpt2_shapes():
    shapes = [(50257, 768), (1024, 768)]
    for _ in range(12):
        shapes += [(768,), (768,), (768, 2304), (2304,), (768, 768), (768,),
                   (768,), (768,), (768, 3072), (3072,), (3072, 768), (768,)]
    return shapes + [(768,), (768,)]


def time_adamw(shapes, device, reps, **kw):
    gen = torch.Generator().manual_seed(1)
    params = []
    for s in shapes:
        p = (torch.rand(s, generator=gen) - 0.5).to(device).requires_grad_()
        p.grad = (torch.rand(s, generator=gen) - 0.5).to(device) * 0.01
        params.append(p)
    try:
        opt = torch.optim.AdamW(params, lr=1e-3, **kw)
    except (TypeError, RuntimeError, ValueError) as e:
        print("# AdamW(%s) unavailable: %s" % (kw, e), file=sys.stderr)
        return None
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times = []
    for i in range(reps + 3):
        sync()
        t0 = time.perf_counter()
        opt.step()
        sync()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def time_adamw_graph(shapes, reps, clip):
    """Fused, capturable AdamW (and clip_grad_norm_ to 1.0 if @clip) in a
    CUDA graph: the median wall time of a replay and its synchronisation."""
    gen = torch.Generator().manual_seed(1)
    params = []
    for s in shapes:
        p = (torch.rand(s, generator=gen) - 0.5).cuda().requires_grad_()
        p.grad = (torch.rand(s, generator=gen) - 0.5).cuda() * 0.01
        params.append(p)
    try:
        opt = torch.optim.AdamW(params, lr=1e-3, fused=True, capturable=True)
    except (TypeError, RuntimeError, ValueError) as e:
        print("# capturable fused AdamW unavailable: %s" % e, file=sys.stderr)
        return None

    def step():
        if clip:
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
    # warm up on a side stream before capture, as torch's docs do
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    times = []
    for i in range(max(reps, 200) + 20):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        if i >= 20:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def time_copies(size, reps):
    """torch's host<->device copies of @size bytes, pinned and pageable"""
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    for kind in ("pinned", "pageable"):
        host = torch.empty(size, dtype=torch.uint8,
                           pin_memory=(kind == "pinned"))
        host.fill_(7)
        for name, dst, src in (("h2d", dev, host), ("d2h", host, dev)):
            times = []
            for i in range(reps + 1):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                dst.copy_(src)
                torch.cuda.synchronize()
                if i:
                    times.append(time.perf_counter() - t0)
            print("torch_copy_%s_%s %d %.6f" % (name, kind, size,
                                                statistics.median(times)),
                  flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", default="1M,16M,64M")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--many", action="store_true")
    ap.add_argument("--copies")
    a = ap.parse_args()
    if a.copies:
        print("# torch %s host<->device copies" % torch.__version__)
        time_copies(parse_size(a.copies), min(a.reps, 10))
        return
    torch.set_num_threads(a.threads)
    variants = ([("fused", {"fused": True}), ("foreach", {"foreach": True})]
                if a.device == "cuda" else
                [("single", {"foreach": False}), ("foreach", {"foreach": True})])
    cases = [((parse_size(s),), 1) for s in a.sizes.split(",")]
    if a.many:
        cases += [((4096,), 2000), (None, 0), ((10000,), 1)]
    print("# torch %s on %s, %d threads" % (torch.__version__, a.device,
                                            a.threads))
    for shape, count in cases:
        shapes = gpt2_shapes() if shape is None else [shape] * count
        params = sum(int(torch.Size(s).numel()) for s in shapes)
        for name, kw in variants:
            ms = time_adamw(shapes, a.device, a.reps, **kw)
            if ms is not None:
                print("torch_adamw_%s %d %.4f" % (name, params, ms),
                      flush=True)
        if a.device == "cuda" and shape == (10000,):
            for label, clip in (("fused_graph", False), ("clip_graph", True)):
                ms = time_adamw_graph(shapes, a.reps, clip)
                if ms is not None:
                    print("torch_adamw_%s %d %.4f" % (label, params, ms),
                          flush=True)


if __name__ == "__main__":
    main()
