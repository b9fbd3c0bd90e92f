#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""gen_optim_refs.py - record optimizer trajectories from PyTorch itself.

Run with Debian's python3 and its torch 1.13 (python3-torch), from the
repository root:

    /usr/bin/python3 tests/data/gen_optim_refs.py

For every case below it builds two parameters, "w" (37) and "b" (5x7), with
fixed random values, feeds the torch optimizer a fixed sequence of random
gradients for STEPS steps, and writes tests/data/torch/<case>.txt:

    # comments
    optimizer <gpuopt kind>
    config <gpuopt configure text: every hyperparameter, clip_norm, grad_scale>
    steps <N>
    tensor <name> <ndim> <dims...>
    init <tensor> <values>               parameters before the first step
    grad <step> <tensor> <values>        the gradients given to gpuopt
    norm <step> <value>                  torch's total norm (clipping cases)
    skip <step>                          a step GradScaler skipped
    param <step> <tensor> <values>       parameters after the step
    state <slot> <tensor> <values>       torch's state after the last step

Values are float32 written with %.9g (exact). tests/data/torch/MANIFEST lists
the cases. test_optim_torch.c replays each one through gpuopt on every
device.

The pipeline cases follow what a training loop does with torch: GradScaler
(the gradients are the true ones times S; unscale_ multiplies by 1/S and a
step with inf/NaN is skipped) and torch.nn.utils.clip_grad_norm_ before
optimizer.step().
"""
import math
import os
import sys

import torch

STEPS = 20
SHAPES = [("w", (37,)), ("b", (5, 7))]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "torch")

# name, torch class, constructor arguments, extra: clip, scale, bad steps
CASES = [
    ("sgd", "SGD", dict(lr=0.1), {}),
    ("sgd_momentum_dampening", "SGD",
     dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01), {}),
    ("sgd_nesterov_maximize", "SGD",
     dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01,
          maximize=True), {}),
    ("adam", "Adam", dict(lr=0.01), {}),
    ("adam_amsgrad_l2", "Adam",
     dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1,
          amsgrad=True), {}),
    ("adam_maximize", "Adam",
     dict(lr=0.01, betas=(0.9, 0.9999), maximize=True), {}),
    ("adamw", "AdamW", dict(lr=0.01, weight_decay=0.1), {}),
    ("adamw_amsgrad_maximize", "AdamW",
     dict(lr=0.01, betas=(0.9, 0.95), eps=1e-4, weight_decay=0.5,
          amsgrad=True, maximize=True), {}),
    ("rmsprop", "RMSprop", dict(lr=0.01), {}),
    ("rmsprop_centered_momentum", "RMSprop",
     dict(lr=0.001, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.5,
          centered=True), {}),
    ("rmsprop_momentum_maximize", "RMSprop",
     dict(lr=0.01, momentum=0.9, maximize=True), {}),
    ("adagrad", "Adagrad", dict(lr=0.1), {}),
    ("adagrad_options", "Adagrad",
     dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
          initial_accumulator_value=0.5, eps=1e-6, maximize=True), {}),
    # clip_grad_norm_ above the threshold (the norm of 72 gradients in
    # +-1 is about 4.9) and below it
    ("adam_clip", "Adam", dict(lr=0.01), dict(clip=1.0)),
    ("sgd_momentum_clip_below", "SGD", dict(lr=0.05, momentum=0.9),
     dict(clip=100.0)),
    # GradScaler-style unscaling, with an inf and a NaN step skipped
    ("adamw_grad_scale", "AdamW", dict(lr=0.01, weight_decay=0.1),
     dict(scale=65536.0, bad={7: math.inf, 13: math.nan})),
    ("sgd_grad_scale_clip", "SGD",
     dict(lr=0.05, momentum=0.9, weight_decay=0.01),
     dict(scale=1024.0, clip=2.0, bad={4: -math.inf})),
]

KIND = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw", "RMSprop": "rmsprop",
        "Adagrad": "adagrad"}

# torch's state-dict slots, by optimizer, in the order gpuopt.h lists them
SLOTS = ["momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
         "square_avg", "grad_avg", "sum"]

# hyperparameters gpuopt has, by torch's names
HPARAMS = ["lr", "weight_decay", "momentum", "dampening", "nesterov", "eps",
           "amsgrad", "maximize", "alpha", "centered", "lr_decay",
           "initial_accumulator_value"]


def fmt(x):
    return "%.9g" % x


def values(t):
    return " ".join(fmt(v) for v in t.detach().reshape(-1).tolist())


def gpuopt_config(opt, extra):
    """Every hyperparameter of the torch optimizer, in gpuopt's words."""
    d = opt.defaults
    words = []
    for key in HPARAMS:
        if key not in d:
            continue
        v = d[key]
        if isinstance(v, bool):
            words.append("%s=%d" % (key, int(v)))
        else:
            words.append("%s=%.17g" % (key, v))
    if "betas" in d:
        words.append("betas=%.17g,%.17g" % d["betas"])
    words.append("clip_norm=%.17g" % extra.get("clip", 0.0))
    words.append("grad_scale=%.17g" % extra.get("scale", 1.0))
    return " ".join(words)


def run_case(name, cls, kwargs, extra, seed):
    gen = torch.Generator().manual_seed(seed)
    params = []
    for _, shape in SHAPES:
        p = (torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1)
        params.append(torch.nn.Parameter(p))
    kwargs = dict(kwargs)
    kwargs["foreach"] = False   # the single-tensor code, as written out
    opt = getattr(torch.optim, cls)(params, **kwargs)
    scale = extra.get("scale", 1.0)
    clip = extra.get("clip", 0.0)
    bad = extra.get("bad", {})

    lines = ["# %s: torch %s, torch.optim.%s(%s)%s" %
             (name, torch.__version__, cls,
              ", ".join("%s=%r" % kv for kv in sorted(kwargs.items())),
              "".join(", %s=%r" % kv for kv in sorted(extra.items()))),
             "# generated by tests/data/gen_optim_refs.py; do not edit",
             "optimizer " + KIND[cls],
             "config " + gpuopt_config(opt, extra),
             "steps %d" % STEPS]
    for (tname, shape) in SHAPES:
        lines.append("tensor %s %d %s" %
                     (tname, len(shape), " ".join(str(s) for s in shape)))
    for (tname, _), p in zip(SHAPES, params):
        lines.append("init %s %s" % (tname, values(p)))

    for step in range(1, STEPS + 1):
        grads = [(torch.rand(p.shape, generator=gen, dtype=torch.float32)
                  * 2 - 1) for p in params]
        # what gpuopt gets: the loss-scaled gradients, S * g in float32
        scaled = [g * scale if scale != 1.0 else g for g in grads]
        if step in bad:
            scaled[1].view(-1)[11] = bad[step]
        for (tname, _), g in zip(SHAPES, scaled):
            lines.append("grad %d %s %s" % (step, tname, values(g)))
        finite = all(bool(torch.isfinite(g).all()) for g in scaled)
        if scale != 1.0 and not finite:
            # GradScaler.step: found_inf, so optimizer.step() is skipped
            lines.append("skip %d" % step)
        else:
            # GradScaler.unscale_: grad * (1 / S) with 1 / S in float32
            inv = torch.tensor(1.0 / scale, dtype=torch.float64).float()
            for p, g in zip(params, scaled):
                p.grad = g * inv if scale != 1.0 else g.clone()
            if clip > 0:
                norm = torch.nn.utils.clip_grad_norm_(params, clip)
                lines.append("norm %d %s" % (step, fmt(float(norm))))
            opt.step()
        for (tname, _), p in zip(SHAPES, params):
            lines.append("param %d %s %s" % (step, tname, values(p)))

    for slot in SLOTS:
        for (tname, _), p in zip(SHAPES, params):
            t = opt.state[p].get(slot)
            if isinstance(t, torch.Tensor):
                lines.append("state %s %s %s" % (slot, tname, values(t)))
    return "\n".join(lines) + "\n"


def main():
    if not torch.__version__.startswith("1.13"):
        sys.exit("gen_optim_refs.py: needs torch 1.13 (/usr/bin/python3), "
                 "found %s" % torch.__version__)
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    names = []
    for i, (name, cls, kwargs, extra) in enumerate(CASES):
        text = run_case(name, cls, kwargs, extra, 1000 + i)
        with open(os.path.join(OUT, name + ".txt"), "w") as f:
            f.write(text)
        names.append(name)
    with open(os.path.join(OUT, "MANIFEST"), "w") as f:
        f.write("# torch trajectories replayed by tests/unit/"
                "test_optim_torch.c;\n# regenerate with /usr/bin/python3 "
                "tests/data/gen_optim_refs.py\n")
        for name in names:
            f.write(name + "\n")


if __name__ == "__main__":
    main()
