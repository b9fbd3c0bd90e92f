#!/bin/sh
# A rank that runs two or more shards sends each shard before its last
# while the next one computes: gpuopt-train reports the step's
# communication and the part of it hidden behind compute, which is more
# than 0 and at most the whole then, and 0 with one shard a rank (the
# model's gradient is one bucket: nothing to overlap with backward; see
# overlap_backward.sh for more buckets); the parameters are the bits of
# one process either way.
. "$(dirname "$0")/lib.sh"
gen_data
common="model=mlp:37x64x7 data=$T/data.safetensors batch_size=48
	optimizer=adamw lr=0.01 seed=4 max_steps=6 device=cpu:0"
field()
{
	echo "$out" | sed -n "s/^comm .*a step's communication \([0-9.]*\) ms, hidden behind compute \([0-9.]*\) ms.*/\\$1/p"
}
hash()
{
	echo "$out" | sed -n 's/^params .* fnv1a \([0-9a-f]*\).*/\1/p'
}
for run in "2 8 1" "3 6 1" "2 2 0"; do
	set -- $run
	mpi 1 $common shards=$2
	ok "-np 1 shards=$2"
	ref=$(hash)
	mpi $1 $common shards=$2
	ok "-np $1 shards=$2"
	[ "$(hash)" = "$ref" ] ||
		fail "-np $1 shards=$2: parameters differ from one process"
	comm=$(field 1)
	hidden=$(field 2)
	[ -n "$comm" ] && [ -n "$hidden" ] || fail "-np $1: no comm line in '$out'"
	echo "-np $1 shards=$2: communication $comm ms a step, hidden $hidden ms"
	awk -v c="$comm" -v h="$hidden" -v want="$3" 'BEGIN {
		if (h > c + 0.0005) exit 1
		if (want && h <= 0) exit 1
		if (!want && h != 0) exit 1
	}' || fail "-np $1 shards=$2: hidden $hidden ms of $comm ms (want $([ "$3" = 1 ] && echo '> 0' || echo 0))"
done
