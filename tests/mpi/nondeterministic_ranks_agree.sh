#!/bin/sh
# deterministic=0 (MPI_Iallreduce of the ranks' sums): every rank ends
# with the same parameters (gpuopt-train compares them), the loss falls,
# and the result is within float rounding of the deterministic one.
. "$(dirname "$0")/lib.sh"
gen_data
common="model=mlp:37x24x7 data=$T/data.safetensors batch_size=48 max_steps=20
	optimizer=adamw lr=0.01 seed=2 device=cpu:0 shards=6 log_every=1"
mpi 3 $common deterministic=1 dump=$T/det.bin
ok "deterministic=1"
mpi 3 $common deterministic=0 bucket_bytes=4096 dump=$T/nd.bin
ok "deterministic=0"
case $err in *differ*) fail "ranks differ: $err" ;; esac
learned "deterministic=0"
/usr/bin/python3 - "$T/det.bin" "$T/nd.bin" <<'PY' || fail "too far apart"
import struct, sys
a = open(sys.argv[1], "rb").read()
b = open(sys.argv[2], "rb").read()
assert len(a) == len(b) and len(a) > 0
x = struct.unpack("<%df" % (len(a) // 4), a)
y = struct.unpack("<%df" % (len(b) // 4), b)
d = max(abs(p - q) / (abs(p) + 1e-3) for p, q in zip(x, y))
print("max relative difference %.3g" % d)
sys.exit(0 if d < 1e-3 else 1)
PY
