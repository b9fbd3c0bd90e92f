#!/bin/sh
# Bad input is refused with a message and trains nothing: a global batch
# not divisible by the shards, shards not a multiple of the ranks, more
# ranks than max_ranks, an unknown comm value, half parameters over
# ranks (-ENOSYS); and a build without MPI
# refuses the MPI keys and refuses to run as one of several ranks.
. "$(dirname "$0")/lib.sh"
gen_data
common="model=mlp:37x8x7 data=$T/data.safetensors max_steps=3 device=cpu:0"
mpi 2 $common batch_size=50 shards=4 dump=$T/x.bin
refused "batch 50, shards 4" "batch_size 50 is not a multiple of shards=4"
[ ! -e "$T/x.bin" ] || fail "batch 50: trained anyway"
mpi 3 $common batch_size=48 shards=4
refused "-np 3 shards=4" "shards=4 is not a multiple of the 3 ranks"
mpi 3 $common batch_size=48 max_ranks=2
refused "-np 3 max_ranks=2" "3 ranks: more than max_ranks=2"
mpi 2 $common batch_size=48 bucket_bytes=100
refused "bucket_bytes=100" "bucket_bytes 100: 4096..1073741824"
mpi 2 $common batch_size=48 deterministic=maybe
refused "deterministic=maybe" "deterministic 'maybe': 0 or 1"
mpi 2 $common batch_size=48 overlap=2
refused "overlap=2" "overlap '2': 0 or 1"
# half parameters: data-parallel steps sum f32 gradients (not yet)
mpi 2 $common batch_size=48 param_dtype=bf16 dump=$T/h.bin
refused "-np 2 param_dtype=bf16" "data-parallel steps with bf16 gradients are not written yet"
[ ! -e "$T/h.bin" ] || fail "param_dtype=bf16: trained anyway"
# default shards = ranks: 3 ranks, batch 50
mpi 3 $common batch_size=50
refused "-np 3 batch 50" "batch_size 50 is not a multiple of shards=3"

[ -x "$PLAIN_TRAIN" ] || fail "no $PLAIN_TRAIN"
plain $common batch_size=48 shards=2
refused "plain shards=2" "shards= needs MPI: this gpuopt-train was built without it"
[ "$rc" -eq 2 ] || fail "plain shards=2: exit $rc, want 2"
plain $common batch_size=48 deterministic=1
refused "plain deterministic=1" "deterministic= needs MPI"
plain $common batch_size=48 overlap=1
refused "plain overlap=1" "overlap= needs MPI"
$MPIRUN -np 2 "$PLAIN_TRAIN" $common batch_size=48 >"$T/out" 2>"$T/err"
rc=$?
err=$(cat "$T/err")
refused "plain under mpirun -np 2" "started as one of 2 ranks, but built without MPI"
# and the plain build still trains alone
plain $common batch_size=48 dump=$T/p.bin
ok "plain alone"
[ -s "$T/p.bin" ] || fail "plain alone: no dump"
