#!/bin/sh
# 20 steps of an mlp on every device: mpirun -np 2 and -np 3 give
# parameters with exactly the bits of one process (-np 1) with the same
# global batch (48) and shards (6); buckets of 4 KiB (several, pipelined)
# or one; and the model learned (its loss fell).
. "$(dirname "$0")/lib.sh"
gen_data
devs=$(devices)
[ -n "$devs" ] || fail "no device trains"
common="model=mlp:37x24x7 data=$T/data.safetensors batch_size=48 max_steps=20
	optimizer=adamw lr=0.01 weight_decay=0.01 seed=5 shards=6 log_every=1"
for d in $devs; do
	mpi 1 $common device=$d dump=$T/ref.bin
	ok "$d -np 1"
	learned "$d -np 1"
	for n in 2 3; do
		for bb in 4096 4194304; do
			rm -f "$T/np.bin"
			mpi $n $common device=$d bucket_bytes=$bb dump=$T/np.bin
			ok "$d -np $n bucket_bytes=$bb"
			cmp "$T/ref.bin" "$T/np.bin" ||
				fail "$d: -np $n (bucket_bytes=$bb) differs from -np 1"
			echo "$d -np $n bucket_bytes=$bb: bitwise equal"
		done
	done
done
