#!/bin/sh
# ZeRO-1 (zero=1): each rank steps its slice of the optimizer state and
# the parameters are all-gathered; 20 steps give the bits of plain data
# parallel on one process, on every device; a checkpoint of zero=1 on 2
# ranks (the state gathered first) resumed on 3 ranks with zero=1 and on
# one without gives the same bits; what it cannot do yet is refused.
. "$(dirname "$0")/lib.sh"
gen_data
devs=$(devices)
[ -n "$devs" ] || fail "no device trains"
common="model=mlp:37x24x7 data=$T/data.safetensors batch_size=48
	optimizer=adamw lr=0.01 weight_decay=0.01 seed=4 shards=6 log_every=1"
for d in $devs; do
	mpi 1 $common max_steps=20 device=$d dump=$T/ref.bin
	ok "$d -np 1"
	learned "$d -np 1"
	for n in 2 3; do
		rm -f "$T/z.bin"
		mpi $n $common max_steps=20 device=$d zero=1 bucket_bytes=4096 \
			dump=$T/z.bin
		ok "$d -np $n zero=1"
		cmp "$T/ref.bin" "$T/z.bin" || fail "$d: -np $n zero=1 differs"
		echo "$d -np $n zero=1: bitwise equal"
	done
done

mpi 2 $common max_steps=10 device=cpu:0 zero=1 checkpoint_dir=$T/ck
ok "-np 2 zero=1 10 steps"
ck=$T/ck/step-00000010.safetensors
for run in "3 zero=1" "1 zero=0"; do
	set -- $run
	rm -f "$T/z.bin"
	mpi $1 $common max_steps=20 device=cpu:0 $2 resume=$ck dump=$T/z.bin
	ok "resume -np $1 $2"
	mpi 1 $common max_steps=20 device=cpu:0 dump=$T/ref.bin
	cmp "$T/ref.bin" "$T/z.bin" ||
		fail "zero=1's checkpoint resumed on $1 ranks ($2) differs"
	echo "resumed on -np $1 $2: bitwise equal"
done

mpi 2 $common max_steps=2 device=cpu:0 zero=1 deterministic=0
refused "zero=1 deterministic=0" "zero=1 needs deterministic=1"
mpi 2 $common max_steps=2 device=cpu:0 zero=1 optimizer=lamb
refused "zero=1 lamb" "not lamb"
mpi 2 $common max_steps=2 device=cpu:0 zero=1 clip_norm=1
refused "zero=1 clip_norm=1" "zero=1: clip_norm needs the global norm"
