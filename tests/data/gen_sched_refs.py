#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""gen_sched_refs.py - torch's learning rates for test_sched.c

Runs torch.optim.lr_scheduler (torch 1.13: Debian's python3-torch, so run
it as /usr/bin/python3, not a pyenv python3) on an SGD optimizer with two
parameter groups and writes, for each case, tests/data/sched/<case>.csv:

    # kind=cosine t_max=50 eta_min=0.001
    # torch=1.13.0a0 base_lr0=0.1 base_lr1=0.037
    epoch,lr0,lr1,metric
    0,0.1,0.037,0.0
    ...

Row e holds each group's lr after e scheduler steps, i.e. the lr that
optimizer step e + 1 uses; after it, the scheduler steps with that row's
metric (read only by plateau). The first line is the libgpuopt
configuration: kind=, then words for gpo_sched_configure().

warmup_steps=W (start factor s) is torch's
    SequentialLR([LinearLR(opt, s, 1.0, total_iters=W), main],
                 milestones=[W])
except for plateau, which SequentialLR cannot drive (it calls step()
without a metric, and step(0) at the milestone): there it is LinearLR for
W steps, then the lrs go back to the base lrs (as SequentialLR does) and
ReduceLROnPlateau gets the metrics of steps W, W + 1, ...

Usage: tests/data/gen_sched_refs.py [OUTDIR]   (default: next to this file)
"""
import os
import random
import sys
import warnings

import torch
from torch.optim import lr_scheduler as L

BASE_LRS = (0.1, 0.037)
ROWS = 201          # lrs at epochs 0..200: 200 scheduler steps
WARMUP_START = 0.001  # libgpuopt's default warmup_start_factor

# (file name, libgpuopt config). Keys are libgpuopt's (torch's, lower case).
CASES = [
    ('constant', 'kind=constant'),
    ('constant_warmup', 'kind=constant warmup_steps=10'),
    ('step', 'kind=step step_size=30 gamma=0.5'),
    ('step_warmup', 'kind=step step_size=7 warmup_steps=5 '
     'warmup_start_factor=0.2'),
    ('multistep', 'kind=multistep milestones=30,80,150 gamma=0.3'),
    ('multistep_warmup', 'kind=multistep milestones=0,40,41,100 '
     'warmup_steps=12 warmup_start_factor=0.05'),
    ('exponential', 'kind=exponential gamma=0.97'),
    ('exponential_warmup', 'kind=exponential gamma=1.004 warmup_steps=30'),
    ('cosine', 'kind=cosine t_max=50 eta_min=0.001'),
    ('cosine_warmup', 'kind=cosine t_max=150 warmup_steps=20 '
     'warmup_start_factor=0.1'),
    ('cosine_restarts', 'kind=cosine_restarts t_0=10 t_mult=2 '
     'eta_min=0.0005'),
    ('cosine_restarts_warmup', 'kind=cosine_restarts t_0=25 warmup_steps=8 '
     'warmup_start_factor=0.3'),
    ('linear', 'kind=linear start_factor=0.25 end_factor=0.5 '
     'total_iters=120'),
    ('linear_warmup', 'kind=linear warmup_steps=4 warmup_start_factor=0.5'),
    ('polynomial', 'kind=polynomial total_iters=150 power=2'),
    ('polynomial_warmup', 'kind=polynomial total_iters=100 power=0.5 '
     'warmup_steps=10'),
    ('onecycle', 'kind=onecycle max_lr=0.5 total_steps=201'),
    ('onecycle_warmup', 'kind=onecycle max_lr=0.2 total_steps=191 '
     'pct_start=0.25 anneal_strategy=linear three_phase=1 div_factor=10 '
     'final_div_factor=100 warmup_steps=10 warmup_start_factor=0.2'),
    ('plateau', 'kind=plateau factor=0.5 patience=3 cooldown=2 '
     'min_lr=0.001'),
    ('plateau_max_abs', 'kind=plateau mode=max threshold_mode=abs '
     'threshold=0.01 factor=0.3 patience=2 cooldown=4 eps=0.0001'),
    ('plateau_warmup', 'kind=plateau threshold_mode=abs threshold=0.002 '
     'factor=0.2 patience=4 min_lr=0.0005 warmup_steps=15 '
     'warmup_start_factor=0.01'),
    ('plateau_max_rel', 'kind=plateau mode=max threshold=0.02 factor=0.7 '
     'patience=1 cooldown=1 eps=0.002'),
]


def parse(config):
    words = dict(w.split('=', 1) for w in config.split())
    return words.pop('kind'), words


def metrics(name, mode):
    """A loss-like sequence: improving stretches between noisy stalls."""
    rng = random.Random(name)
    level, out = 1.0, []
    while len(out) < ROWS:
        improving = rng.random() < 0.45
        for _ in range(rng.randint(3, 14)):
            if improving:
                level *= 1.0 - rng.uniform(0.01, 0.06)
                out.append(level)
            else:
                out.append(level * (1.0 + rng.uniform(-0.004, 0.05)))
    out = out[:ROWS]
    if mode == 'max':  # an accuracy-like metric that rises
        out = [1.0 - 0.8 * m for m in out]
    return out


def main_scheduler(opt, kind, k):
    i = lambda key, d=None: int(k.get(key, d))
    f = lambda key, d=None: float(k.get(key, d))
    if kind == 'constant':
        return L.LambdaLR(opt, lambda e: 1.0)
    if kind == 'step':
        return L.StepLR(opt, i('step_size'), f('gamma', 0.1))
    if kind == 'multistep':
        ms = [int(m) for m in k['milestones'].split(',')]
        return L.MultiStepLR(opt, ms, f('gamma', 0.1))
    if kind == 'exponential':
        return L.ExponentialLR(opt, f('gamma'))
    if kind == 'cosine':
        return L.CosineAnnealingLR(opt, i('t_max'), f('eta_min', 0))
    if kind == 'cosine_restarts':
        return L.CosineAnnealingWarmRestarts(opt, i('t_0'), i('t_mult', 1),
                                             f('eta_min', 0))
    if kind == 'linear':
        return L.LinearLR(opt, f('start_factor', 1.0 / 3),
                          f('end_factor', 1.0), i('total_iters', 5))
    if kind == 'polynomial':
        return L.PolynomialLR(opt, i('total_iters', 5), f('power', 1.0))
    if kind == 'onecycle':
        return L.OneCycleLR(opt, max_lr=f('max_lr'),
                            total_steps=i('total_steps'),
                            pct_start=f('pct_start', 0.3),
                            anneal_strategy=k.get('anneal_strategy', 'cos'),
                            cycle_momentum=False,
                            div_factor=f('div_factor', 25.0),
                            final_div_factor=f('final_div_factor', 1e4),
                            three_phase=bool(i('three_phase', 0)))
    if kind == 'plateau':
        return L.ReduceLROnPlateau(opt, mode=k.get('mode', 'min'),
                                   factor=f('factor', 0.1),
                                   patience=i('patience', 10),
                                   threshold=f('threshold', 1e-4),
                                   threshold_mode=k.get('threshold_mode',
                                                        'rel'),
                                   cooldown=i('cooldown', 0),
                                   min_lr=f('min_lr', 0),
                                   eps=f('eps', 1e-8))
    raise ValueError(kind)


def run(config):
    kind, k = parse(config)
    w = int(k.pop('warmup_steps', 0))
    s = float(k.pop('warmup_start_factor', WARMUP_START))
    params = [torch.zeros(3, requires_grad=True) for _ in BASE_LRS]
    opt = torch.optim.SGD([{'params': [p], 'lr': lr}
                           for p, lr in zip(params, BASE_LRS)],
                          lr=BASE_LRS[0])
    for p in params:
        p.grad = torch.zeros_like(p)
    warm = L.LinearLR(opt, s, 1.0, total_iters=w) if w else None
    main = main_scheduler(opt, kind, k)
    plateau = kind == 'plateau'
    sched = main
    if warm and not plateau:
        sched = L.SequentialLR(opt, [warm, main], milestones=[w])
    ms = metrics(config, k.get('mode', 'min')) if plateau else [0.0] * ROWS
    rows = []
    for e in range(ROWS):
        rows.append((e, *[g['lr'] for g in opt.param_groups], ms[e]))
        if e == ROWS - 1:
            break
        opt.step()
        if not plateau:
            sched.step()
        elif e + 1 < w:
            warm.step()
        elif e + 1 == w:
            for g in opt.param_groups:
                g['lr'] = g['initial_lr']
        else:
            main.step(ms[e])
    return rows


def main():
    # SequentialLR's step(0) at the milestone warns about the epoch argument
    warnings.filterwarnings('ignore', category=UserWarning)
    out = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sched')
    os.makedirs(out, exist_ok=True)
    for name, config in CASES:
        rows = run(config)
        with open(os.path.join(out, name + '.csv'), 'w') as fp:
            fp.write('# %s\n' % config)
            fp.write('# torch=%s base_lr0=%r base_lr1=%r\n' %
                     (torch.__version__, *BASE_LRS))
            fp.write('epoch,lr0,lr1,metric\n')
            for e, lr0, lr1, m in rows:
                fp.write('%d,%r,%r,%r\n' % (e, lr0, lr1, m))


if __name__ == '__main__':
    main()
