#!/bin/sh
# The reduction through libgpuopt-mpi's C API (test_reduce.c): odd tensor
# sizes, buckets that cut through tensors, uneven slices, fresh random
# gradients: bit for bit the ordered f32 sum / S (deterministic=1), and
# within rounding of the float64 mean (both modes), on every device.
. "$(dirname "$0")/lib.sh"
gen_data
bin=$MPI_BUILD/tests/mpi/test_reduce
[ -x "$bin" ] || fail "no $bin"
devs=$(devices)
[ -n "$devs" ] || fail "no device"
seed=$DATA_SEED
for d in $devs; do
	for run in "1 6 4100 1" "2 6 4100 1" "3 6 4100 1" "3 12 1048576 1" \
		"2 4 4100 0" "3 3 8192 0"; do
		set -- $run
		$MPIRUN -np $1 "$bin" $d $seed $2 $3 $4 >"$T/out" 2>"$T/err" </dev/null ||
			fail "$d -np $1 shards=$2 bucket_bytes=$3 deterministic=$4: $(cat "$T/err")"
		echo "$d -np $1 shards=$2 bucket_bytes=$3 deterministic=$4: $(cat "$T/out")"
	done
done
