#!/usr/bin/python3
# torch_interop.py LIBGPUOPT_SO TOOL - tools/gpuopt-torch against torch.optim
# (torch 1.13, Debian's python3-torch) and libgpuopt (through ctypes, its
# public API only, on the cpu backend: the numerical reference).
#
# 1. gpuopt -> torch: the library takes 3 steps with known gradients and
#    saves; to-torch converts; the model and state come out bit for bit,
#    the optimizer state_dict is what torch.optim's own has after the same
#    3 steps (keys, their order, types, hyperparameters; the tensors within
#    the tolerance below); torch.optim loads it and one more step in torch
#    equals one more step in gpuopt. AdamW with two parameter groups first,
#    then sgd, adam, rmsprop and adagrad.
# 2. torch -> gpuopt: torch.optim takes 3 steps and saves {"model",
#    "optimizer"} as a training script would; from-torch converts; the
#    library restores the file strictly (metadata, header and tensor
#    checksums); its parameters, state, step and hyperparameters are
#    torch's, bit for bit; one more step on each side agrees.
# 3. to-torch then from-torch gives back a file the library restores with
#    the same bits, lamb and lion (not torch.optim's) included, and f16
#    and bf16 buffers too; 1 and 2 again before any step.
# 4. the command line: exit codes, a corrupt file refused, --help without
#    torch, the built-in safetensors reader and XXH64 agree with the
#    package and libxxhash.
#
# Tolerance: a step's float32 results may differ by a rounding or two:
# the cpu backend computes without fma (-ffp-contract=off) while torch's
# vectorized CPU kernels may fuse multiply-adds, and torch forms some
# scalars (1 - lr*wd, lr/bc1) in double where gpuopt passes them rounded
# to float. Parameters are O(1) and a step moves them by ~lr, so two ulps
# are ~2.4e-7: we allow |a - b| <= 1e-6 * max(1, |b|), four to eight ulps.
# Seen (fixed seed): parameters within one ulp; state within 1.2e-7 but
# centered RMSprop's momentum buffer, g / (sqrt(s - avg^2) + eps), whose
# cancellation amplifies a rounding to 4.8e-7. Conversions themselves are
# lossless and compared bit for bit.
import ctypes
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile

import torch

LIB, TOOL = sys.argv[1], sys.argv[2]
TOL = 1e-6
F = ctypes.c_float

loader = importlib.machinery.SourceFileLoader("gpuopt_torch", TOOL)
spec = importlib.util.spec_from_loader("gpuopt_torch", loader)
gt = importlib.util.module_from_spec(spec)
loader.exec_module(gt)

failures = []
worst = [0.0]           # the largest difference close() saw


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


# ---- libgpuopt through ctypes ----------------------------------------------

lib = ctypes.CDLL(LIB)
lib.gpo_errmsg.restype = ctypes.c_char_p
lib.gpo_optim_steps_done.restype = ctypes.c_uint64
lib.gpo_optim_get.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                              ctypes.POINTER(ctypes.c_double)]
for fn in ("gpo_optim_write", "gpo_optim_read"):
    getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.c_void_p,
                                 ctypes.c_size_t]
KIND = {k: i for i, k in enumerate(gt.KINDS)}   # enum gpo_optim_kind


def ok(ret, what):
    if ret < 0:
        raise RuntimeError("%s: errno %d: %s" % (what, -ret,
                                                 lib.gpo_errmsg().decode()))
    return ret


ctx = ctypes.c_void_p()
ok(lib.gpo_ctx_new(ctypes.byref(ctx), 0), "gpo_ctx_new")
dev = ctypes.c_void_p()
ok(lib.gpo_device_select(ctx, os.environ.get("TORCH_TEST_DEVICE",
                                             "cpu").encode(),
                         ctypes.byref(dev)), "gpo_device_select")


class Gpo:
    """An optimizer of @kind over @groups: [(settings, [(name, shape)])]."""

    def __init__(self, kind, groups):
        self.o = ctypes.c_void_p()
        ok(lib.gpo_optim_new(dev, KIND[kind], ctypes.byref(self.o)), "new")
        self.shapes = {}
        for g, (settings, tensors) in enumerate(groups):
            if g:
                ok(lib.gpo_optim_add_group(self.o), "add_group")
            for name, shape in tensors:
                arr = (ctypes.c_uint64 * len(shape))(*shape)
                ok(lib.gpo_optim_add_tensor(self.o, name.encode(), len(shape),
                                            arr, g), "add_tensor " + name)
                self.shapes[name] = shape
            ok(lib.gpo_optim_configure(self.o, g, settings.encode()),
               "configure " + settings)

    def write(self, slot, name, t):
        t = t.detach().contiguous()
        ok(lib.gpo_optim_write(self.o, slot.encode(), name.encode(),
                               ctypes.c_void_p(t.data_ptr()),
                               t.numel() * t.element_size()),
           "write %s %s" % (slot, name))

    def read(self, slot, name, dtype=torch.float32):
        t = torch.empty(self.shapes[name], dtype=dtype)
        ok(lib.gpo_optim_read(self.o, slot.encode(), name.encode(),
                              ctypes.c_void_p(t.data_ptr()),
                              t.numel() * t.element_size()),
           "read %s %s" % (slot, name))
        return t

    def set_dtype(self, buf, dt):
        ok(lib.gpo_optim_set_dtype(self.o, buf.encode(), dt), "set_dtype")

    def step(self, grads):
        for name, g in grads.items():
            self.write("grad", name, g)
        ok(lib.gpo_optim_step(self.o, None), "step")

    def get(self, g, key):
        v = ctypes.c_double()
        ok(lib.gpo_optim_get(self.o, g, key.encode(), ctypes.byref(v)), key)
        return v.value

    def save(self, path):
        ok(lib.gpo_optim_save(self.o, path.encode(), 0), "save")

    def restore(self, path, flags=0):
        return lib.gpo_optim_restore(self.o, path.encode(), flags)

    def steps(self):
        return lib.gpo_optim_steps_done(self.o)

    def free(self):
        lib.gpo_optim_free(self.o)


# ---- the cases --------------------------------------------------------------

SHAPES = [("w", [7, 5]), ("b", [5]), ("head.weight", [3, 5]),
          ("head.bias", [3])]
# (kind, gpuopt settings per group, torch kwargs per group); a new group
# starts from group 0's settings in gpuopt, from the constructor's
# arguments in torch: group 1 names what group 0 changed
# (torch 1.13's Adagrad fills every group's sum with the constructor's
# initial_accumulator_value, whatever the group says; gpuopt with the
# group's: the groups here share it)
CASES = [
    ("adamw", ["lr=0.01 betas=0.9,0.95 weight_decay=0.1",
               "lr=0.002 betas=0.9,0.999 weight_decay=0 eps=1e-6"],
     [dict(lr=0.01, betas=(0.9, 0.95), weight_decay=0.1),
      dict(lr=0.002, betas=(0.9, 0.999), weight_decay=0.0, eps=1e-6)]),
    ("sgd", ["lr=0.1 momentum=0.9 nesterov=1",
             "lr=0.05 nesterov=0 momentum=0"],
     [dict(lr=0.1, momentum=0.9, nesterov=True),
      dict(lr=0.05, nesterov=False, momentum=0.0)]),
    ("adam", ["lr=0.01 amsgrad=1 weight_decay=0.01",
              "lr=0.003 amsgrad=0 weight_decay=0"],
     [dict(lr=0.01, amsgrad=True, weight_decay=0.01),
      dict(lr=0.003, amsgrad=False, weight_decay=0.0)]),
    ("rmsprop", ["lr=0.01 centered=1 momentum=0.5",
                 "lr=0.02 centered=0 momentum=0"],
     [dict(lr=0.01, centered=True, momentum=0.5),
      dict(lr=0.02, centered=False, momentum=0.0)]),
    ("adagrad", ["lr=0.1 lr_decay=0.01 initial_accumulator_value=0.1",
                 "lr=0.05 lr_decay=0"],
     [dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1),
      dict(lr=0.05, lr_decay=0.0)]),
]
SPLIT = 2       # the first two tensors in group 0, the rest in group 1

gen = torch.Generator().manual_seed(1513)


def rand(shape):
    return torch.rand(shape, generator=gen, dtype=torch.float32) * 2 - 1


def init_params():
    return {n: rand(s) for n, s in SHAPES}


def grads_for(steps):
    return [{n: rand(s) for n, s in SHAPES} for _ in range(steps)]


def gpo_groups(settings):
    return [(settings[0], SHAPES[:SPLIT]), (settings[1], SHAPES[SPLIT:])]


def torch_optim(kind, kwargs, params):
    """As a training script makes it: group 0's settings as the
    constructor's arguments, group 1 changing some of them."""
    cls = getattr(torch.optim, gt.TORCH_CLASS[kind])
    ps = [params[n] for n, _ in SHAPES]
    return cls([{"params": ps[:SPLIT]}, dict(kwargs[1], params=ps[SPLIT:])],
               **kwargs[0])


def torch_steps(opt, params, grads):
    for gs in grads:
        for n, g in gs.items():
            params[n].grad = g.clone()
        opt.step()


def close(a, b, what):
    if a is None or b is None:
        return check(a is None and b is None, "%s: None vs tensor" % what)
    a, b = a.detach().float(), b.detach().float()
    if not check(a.shape == b.shape, "%s: shape %s vs %s" %
                 (what, list(a.shape), list(b.shape))):
        return False
    d = ((a - b).abs() / b.abs().clamp(min=1.0)).max().item()
    worst[0] = max(worst[0], d)
    return check(d <= TOL, "%s: differs by %.3g relative (tolerance %g)" %
                 (what, d, TOL))


def bits(a, b, what):
    def raw(t):
        t = t.contiguous()
        return t.view(torch.uint8) if t.dtype.is_floating_point else t
    return check(a.dtype == b.dtype and a.shape == b.shape and
                 torch.equal(raw(a), raw(b)),
                 "%s: not bit-identical" % what)


def same_structure(got, want, what):
    """Two optimizer state_dicts alike: param_groups equal with equal
    types, state keys in the same order, steps of the same type."""
    check(len(got["param_groups"]) == len(want["param_groups"]),
          what + ": number of param_groups")
    for i, (a, b) in enumerate(zip(got["param_groups"], want["param_groups"])):
        # group 0 is in torch's own key order; a group the script gave
        # settings has them first, in the script's order
        check(list(a) == list(b) if i == 0 else sorted(a) == sorted(b),
              "%s: param_groups[%d] keys %s vs torch %s" %
              (what, i, list(a), list(b)))
        for k in b:
            # 0 and 0.0 alike: which the script wrote no file records
            check((type(a.get(k)) is type(b[k]) or
                   {type(a.get(k)), type(b[k])} == {int, float}) and
                  a.get(k) == b[k],
                  "%s: param_groups[%d][%r] = %r vs torch %r" %
                  (what, i, k, a.get(k), b[k]))
    check(sorted(got["state"]) == sorted(want["state"]),
          "%s: state indices %s vs torch %s" %
          (what, sorted(got["state"]), sorted(want["state"])))
    for i in want["state"]:
        a, b = got["state"].get(i, {}), want["state"][i]
        check(list(a) == list(b), "%s: state[%d] keys %s vs torch %s" %
              (what, i, list(a), list(b)))
        for k in b:
            if k == "step":
                check(type(a[k]) is type(b[k]) and
                      (not isinstance(b[k], torch.Tensor) or
                       (a[k].dtype == b[k].dtype and a[k].shape == b[k].shape))
                      and float(a[k]) == float(b[k]),
                      "%s: state[%d].step %r vs torch %r" %
                      (what, i, a[k], b[k]))
            else:
                close(a.get(k), b[k], "%s: state[%d].%s" % (what, i, k))


def run_tool(*args, code=0):
    r = subprocess.run([sys.executable, TOOL] + list(args),
                       capture_output=True, text=True)
    check(r.returncode == code, "gpuopt-torch %s: exit %d, want %d: %s" %
          (" ".join(args), r.returncode, code, r.stderr.strip()))
    return r


def convert(*args):
    """The tool in this process (torch imported once); 0 or a failure."""
    rc = gt.main(list(args))
    check(rc == 0, "gpuopt-torch %s: exit %d" % (" ".join(args), rc))
    return rc


def gpuopt_to_torch(tmp, kind, settings, kwargs, nsteps=3):
    what = "%s gpuopt->torch after %d steps" % (kind, nsteps)
    p0 = init_params()
    grads = grads_for(nsteps)
    extra = grads_for(1)[0]
    g = Gpo(kind, gpo_groups(settings))
    for n, t in p0.items():
        g.write("param", n, t)
    for gs in grads:
        g.step(gs)
    ck = os.path.join(tmp, "%s-%d.safetensors" % (kind, nsteps))
    pt = os.path.join(tmp, "%s-%d.pt" % (kind, nsteps))
    g.save(ck)
    if convert("to-torch", ck, pt):
        return
    saved = torch.load(pt)
    check(saved["gpuopt"]["step"] == nsteps, what + ": gpuopt.step")
    # the conversion is lossless
    check(list(saved["model"]) == [n for n, _ in SHAPES], what + ": names")
    for n, _ in SHAPES:
        bits(saved["model"][n], g.read("param", n), what + ": param " + n)
    # the state_dict is torch.optim's own after the same steps
    params = {n: t.clone().requires_grad_() for n, t in p0.items()}
    ref = torch_optim(kind, kwargs, params)
    torch_steps(ref, params, grads)
    same_structure(saved["optimizer"], ref.state_dict(), what)
    for i, (n, _) in enumerate(SHAPES):
        for s, t in saved["optimizer"]["state"].get(i, {}).items():
            if isinstance(t, torch.Tensor) and s != "step":
                bits(t, g.read(s, n), "%s: state %s/%s" % (what, n, s))
    # torch continues from the converted file: one more step each side
    params = {n: t.clone().requires_grad_() for n, t in
              saved["model"].items()}
    opt = torch_optim(kind, kwargs, params)
    opt.load_state_dict(saved["optimizer"])
    torch_steps(opt, params, [extra])
    g.step(extra)
    for n, _ in SHAPES:
        close(params[n], g.read("param", n), what + ": step 4 param " + n)
    for i, (n, _) in enumerate(SHAPES):
        for s, t in opt.state_dict()["state"].get(i, {}).items():
            if isinstance(t, torch.Tensor) and s != "step":
                close(t, g.read(s, n), "%s: step 4 %s/%s" % (what, n, s))
    g.free()


def torch_to_gpuopt(tmp, kind, settings, kwargs, nsteps=3):
    what = "%s torch->gpuopt after %d steps" % (kind, nsteps)
    p0 = init_params()
    grads = grads_for(nsteps)
    extra = grads_for(1)[0]
    params = {n: t.clone().requires_grad_() for n, t in p0.items()}
    opt = torch_optim(kind, kwargs, params)
    torch_steps(opt, params, grads)
    pt = os.path.join(tmp, "%s-torch-%d.pt" % (kind, nsteps))
    ck = os.path.join(tmp, "%s-torch-%d.safetensors" % (kind, nsteps))
    model = {n: params[n].detach() for n, _ in SHAPES}
    torch.save({"model": model, "optimizer": opt.state_dict()}, pt)
    if convert("from-torch", pt, ck, "--optimizer", kind):
        return
    g = Gpo(kind, gpo_groups(settings))
    ret = g.restore(ck, 0)
    if not check(ret == 0, "%s: strict restore: errno %d: %s" %
                 (what, -ret, lib.gpo_errmsg().decode())):
        return
    if kind != "sgd":
        check(g.steps() == nsteps, "%s: step %d" % (what, g.steps()))
    for gi, kw in enumerate(kwargs):
        for k, v in kw.items():
            if k == "betas":
                check((g.get(gi, "beta1"), g.get(gi, "beta2")) == v,
                      "%s: group %d betas" % (what, gi))
            elif k != "params":
                check(g.get(gi, k) == float(v),
                      "%s: group %d %s = %r, torch %r" %
                      (what, gi, k, g.get(gi, k), v))
    sd = opt.state_dict()["state"]
    for i, (n, _) in enumerate(SHAPES):
        bits(g.read("param", n), model[n], what + ": param " + n)
        for s, t in sd.get(i, {}).items():
            if isinstance(t, torch.Tensor) and s != "step":
                bits(g.read(s, n), t, "%s: state %s/%s" % (what, n, s))
    torch_steps(opt, params, [extra])
    g.step(extra)
    for n, _ in SHAPES:
        close(g.read("param", n), params[n], what + ": step 4 param " + n)
    g.free()


def round_trip(tmp, kind, settings):
    what = "%s round trip" % kind
    g = Gpo(kind, gpo_groups(settings))
    for n, t in init_params().items():
        g.write("param", n, t)
    for gs in grads_for(2):
        g.step(gs)
    ck = os.path.join(tmp, kind + "-rt.safetensors")
    pt = os.path.join(tmp, kind + "-rt.pt")
    back = os.path.join(tmp, kind + "-rt2.safetensors")
    g.save(ck)
    if convert("to-torch", ck, pt) or convert("from-torch", pt, back):
        return
    h = Gpo(kind, gpo_groups([s.replace("lr=", "lr=9") for s in settings]))
    ret = h.restore(back, 0)
    if check(ret == 0, "%s: strict restore: errno %d: %s" %
             (what, -ret, lib.gpo_errmsg().decode())):
        check(h.steps() == g.steps(), what + ": step")
        for gi in range(2):
            check(h.get(gi, "lr") == g.get(gi, "lr"), what + ": lr")
        for n, _ in SHAPES:
            bits(h.read("param", n), g.read("param", n), what + ": " + n)
            for s in gt.KIND_SLOTS[kind]:
                try:
                    a = g.read(s, n)
                except RuntimeError:
                    continue
                bits(h.read(s, n), a, "%s: %s/%s" % (what, n, s))
    # the same metadata and tensors as the library's own file
    m1, t1 = gt.read_checkpoint(ck)
    m2, t2 = gt.read_checkpoint(back)
    for k in m1:
        if k not in (gt.META_WRITER, gt.META_HDR_XXH64, gt.META_GROUPS):
            check(m1[k] == m2.get(k), "%s: metadata %s: %r vs %r" %
                  (what, k, m1[k], m2.get(k)))
    check(sorted(t1) == sorted(t2), "%s: tensors %s vs %s" %
          (what, sorted(t1), sorted(t2)))
    g.free()
    h.free()


def dtypes(tmp):
    """Buffers of other dtypes keep them both ways (no step: the kernels
    are f32 only, so the state is written and the step count set)."""
    what = "f16/bf16 round trip"
    kinds = {"param": (1, torch.float16), "exp_avg": (2, torch.bfloat16),
             "exp_avg_sq": (0, torch.float32)}

    def make():
        g = Gpo("adamw", gpo_groups(CASES[0][1]))
        for buf, (dt, _) in kinds.items():
            g.set_dtype(buf, dt)
        return g
    g = make()
    for buf, (_, tdt) in kinds.items():
        for n, shape in SHAPES:
            g.write(buf, n, rand(shape).to(tdt))
    ok(lib.gpo_optim_set_step(g.o, ctypes.c_uint64(5)), "set_step")
    ck = os.path.join(tmp, "dt.safetensors")
    pt = os.path.join(tmp, "dt.pt")
    back = os.path.join(tmp, "dt2.safetensors")
    g.save(ck)
    if convert("to-torch", ck, pt) or convert("from-torch", pt, back):
        return
    saved = torch.load(pt)
    for i, (n, _) in enumerate(SHAPES):
        bits(saved["model"][n], g.read("param", n, torch.float16),
             what + ": param " + n)
        st = saved["optimizer"]["state"][i]
        check(float(st["step"]) == 5, what + ": step")
        for s in ("exp_avg", "exp_avg_sq"):
            bits(st[s], g.read(s, n, kinds[s][1]), "%s: %s/%s" % (what, n, s))
    h = make()
    ret = h.restore(back, 0)
    if check(ret == 0, "%s: strict restore: errno %d: %s" %
             (what, -ret, lib.gpo_errmsg().decode())):
        check(h.steps() == 5, what + ": step")
        for buf, (_, tdt) in kinds.items():
            for n, _ in SHAPES:
                bits(h.read(buf, n, tdt), g.read(buf, n, tdt),
                     "%s: restored %s/%s" % (what, n, buf))
    g.free()
    h.free()


def command_line(tmp):
    ck = os.path.join(tmp, "adamw-3.safetensors")
    r = run_tool("--help")
    check("to-torch" in r.stdout and not r.stderr, "--help on stdout")
    r = run_tool("--version")
    check(r.stdout.startswith("gpuopt-torch "), "--version")
    run_tool(code=2)
    run_tool("to-torch", ck, code=2)
    run_tool("from-torch", "x.pt", "y", "--optimizer", "nope", code=2)
    run_tool("to-torch", os.path.join(tmp, "missing"), "x.pt", code=1)
    run_tool("to-torch", ck, tmp, code=1)            # a directory
    # a flipped bit in a tensor, then in the header's metadata
    with open(ck, "rb") as f:
        data = bytearray(f.read())
    bad = os.path.join(tmp, "bad.safetensors")
    data[-1] ^= 1
    with open(bad, "wb") as f:
        f.write(data)
    r = run_tool("to-torch", bad, os.path.join(tmp, "bad.pt"), code=1)
    check("checksum" in r.stderr, "corrupt tensor: " + r.stderr)
    check(not os.path.exists(os.path.join(tmp, "bad.pt")), "no output")
    data[-1] ^= 1
    i = data.index(b'"gpuopt.step":"3"')
    data[i + 15] = ord("4")
    with open(bad, "wb") as f:
        f.write(data)
    r = run_tool("to-torch", bad, os.path.join(tmp, "bad.pt"), code=1)
    check("header" in r.stderr, "corrupt header: " + r.stderr)
    # sgd without --optimizer: a torch file of its own says nothing
    run_tool("from-torch", os.path.join(tmp, "sgd-torch-3.pt"),
             os.path.join(tmp, "x.safetensors"), code=2)
    # torch only when a command runs: without it --help works, a command
    # says what is missing
    notorch = os.path.join(tmp, "notorch")
    os.mkdir(notorch)
    with open(os.path.join(notorch, "torch.py"), "w") as f:
        f.write("raise ImportError('no torch here')\n")
    env = dict(os.environ, PYTHONPATH=notorch)
    for args, code in ((["--help"], 0), (["--version"], 0),
                       (["to-torch", ck, os.path.join(tmp, "n.pt")], 1)):
        r = subprocess.run([sys.executable, TOOL] + args, env=env,
                           capture_output=True, text=True)
        check(r.returncode == code and (code == 0 or "python3-torch" in
                                        r.stderr),
              "without torch: %s: exit %d: %s" % (args, r.returncode,
                                                  r.stderr))
    # the built-in reader and XXH64 agree with the package and libxxhash
    env = dict(os.environ, GPUOPT_TORCH_SAFETENSORS="0",
               GPUOPT_TORCH_XXH64="python")
    r = subprocess.run([sys.executable, TOOL, "to-torch", ck,
                        os.path.join(tmp, "builtin.pt")], env=env,
                       capture_output=True, text=True)
    check(r.returncode == 0, "built-in reader: " + r.stderr)
    a = torch.load(os.path.join(tmp, "adamw-3.pt"))
    b = torch.load(os.path.join(tmp, "builtin.pt"))
    for n in a["model"]:
        bits(a["model"][n], b["model"][n], "built-in reader: " + n)
    for n in (0, 1, 3, 31, 32, 33, 63, 100, 1000):
        blob = os.urandom(n)
        check(gt.xxh64_py(blob) == gt.xxh64(blob), "xxh64 of %d bytes" % n)
    check(gt.xxh64_py(b"") == 0xEF46DB3751D8E999, "xxh64 of nothing")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for kind, settings, kwargs in CASES:
            gpuopt_to_torch(tmp, kind, settings, kwargs)
            torch_to_gpuopt(tmp, kind, settings, kwargs)
            round_trip(tmp, kind, settings)
        # before any step: torch keeps no state (but Adagrad's)
        for kind, settings, kwargs in CASES:
            gpuopt_to_torch(tmp, kind, settings, kwargs, 0)
            torch_to_gpuopt(tmp, kind, settings, kwargs, 0)
        for kind in ("lamb", "lion"):
            round_trip(tmp, kind, ["lr=0.001 weight_decay=0.01", "lr=0.002"])
        dtypes(tmp)
        command_line(tmp)
    lib.gpo_ctx_free(ctx)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok: gpuopt-torch against torch %s (largest step difference "
          "%.3g)" % (torch.__version__, worst[0]))
    return 0


sys.exit(main())
