#!/bin/sh
# overlap=1 (the default): the last shard's backward runs in segments,
# and with buckets smaller than the model's layers the reductions of the
# last layers' buckets start while backward still runs. With one shard a
# rank (no rounds: nothing else overlaps) gpuopt-train reports more than
# one segment a step, buckets reduced before backward ended and time
# hidden behind compute; overlap=0 none of it. The parameters are the
# bits of one process whose backward runs in one piece, either way.
. "$(dirname "$0")/lib.sh"
gen_data
devs=$(devices)
[ -n "$devs" ] || fail "no device trains"
common="model=mlp:37x48x40x33x7 data=$T/data.safetensors batch_size=48
	optimizer=adamw lr=0.01 seed=6 max_steps=6 bucket_bytes=4096"
# the comm line's hidden time, segments and early buckets (a step)
stats()
{
	echo "$out" | sed -n "s/^comm .*hidden behind compute \([0-9.]*\) ms; backward in \([0-9.]*\) segments, \([0-9.]*\) buckets reduced before it ended.*/\1 \2 \3/p"
}
for d in $devs; do
	for np in 2 3; do
		mpi 1 $common device=$d shards=$np overlap=0 dump=$T/ref.bin
		ok "$d -np 1 shards=$np overlap=0"
		for o in 1 0; do
			rm -f "$T/np.bin"
			mpi $np $common device=$d shards=$np overlap=$o \
				dump=$T/np.bin
			ok "$d -np $np overlap=$o"
			cmp "$T/ref.bin" "$T/np.bin" ||
				fail "$d -np $np overlap=$o: parameters differ from one process"
			s=$(stats)
			[ -n "$s" ] || fail "$d -np $np: no comm line in '$out'"
			set -- $s
			echo "$d -np $np overlap=$o: hidden $1 ms, $2 segments, $3 buckets early a step; bitwise equal"
			if [ $o = 1 ]; then
				awk -v h=$1 -v s=$2 -v e=$3 \
					'BEGIN { exit !(h > 0 && s > 1 && e > 0) }' ||
					fail "$d -np $np overlap=1: hidden $1 ms, $2 segments, $3 early buckets (want all > 0, segments > 1)"
			else
				awk -v h=$1 -v s=$2 -v e=$3 \
					'BEGIN { exit !(h == 0 && s == 0 && e == 0) }' ||
					fail "$d -np $np overlap=0: hidden $1 ms, $2 segments, $3 early buckets (want 0)"
			fi
		done
	done
done
