#!/bin/sh
# ZeRO-1's state around a checkpoint through the C API (test_zero1_save.c):
# a save or a restore while the ranks hold the state is refused, one after
# gpo_comm_sync_state() holds every rank's state bit for bit, and the next
# step frees the gathered slots again; on 2 and 3 ranks, every device.
. "$(dirname "$0")/lib.sh"
gen_data
bin=$MPI_BUILD/tests/mpi/test_zero1_save
[ -x "$bin" ] || fail "no $bin"
devs=$(devices)
[ -n "$devs" ] || fail "no device"
for d in $devs; do
	for n in 2 3; do
		rm -f "$T/ck.safetensors"
		$MPIRUN -np $n "$bin" $d "$T/data.safetensors" "$T/ck.safetensors" \
			>"$T/out" 2>"$T/err" </dev/null ||
			fail "$d -np $n: $(cat "$T/err")"
		echo "$d -np $n: $(cat "$T/out" | head -n 1)"
	done
done
