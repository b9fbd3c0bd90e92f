#!/bin/sh
# device= one per rank: each rank of a ranks=2 job runs on its own device.
# The backends' ops are not the same bits (the cpu backend sums in
# double, OpenCL's exp is PoCL's own), so the proof is in what the bits
# do: rank 0 on the cpu backend and rank 1 on PoCL (or lavapipe) give
# parameters that differ from ranks=1 on either device alone, stay within
# float noise of them, and are the same bits every time; both ranks on
# one device give exactly ranks=1's bits on it. stat's rank_devices says
# where each rank runs, and the bits are those of gpuopt-train under
# mpirun -np 2 with the same device= (the library's own per-rank device
# choice; GPUOPT_TRAIN_MPI, else build-mpi's beside this build, if there
# is one). A rank's memory counts against its own device's
# pool: pools/<i>/max of rank 1's device below the model fails the
# build (ENOMEM, naming rank 1, nothing stepped), while the same ranks
# on the cpu backend alone are not held by it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data
not_running()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}
# the id of the first device of backend $1, or nothing
dev_of()
{
	for d in "$M"/devices/*; do
		[ "$(cat "$d/backend")" = "$1" ] || continue
		cat "$d/id"
		return
	done
}
tensors="fc0.weight fc0.bias fc1.weight fc1.bias"
# every tensor of job $1, end to end, in $T/$1.bin
params()
{
	for t in $tensors; do
		cat "$M/jobs/$1/params/$t" || fail "read $1/$t"
	done >"$T/$1.bin"
	[ -s "$T/$1.bin" ] || fail "$1: no params"
}
run()
{
	expect "start $1" "$(w "$M/jobs/$1/ctl" start)" OK
	wait_for 100 not_running "$1" || fail "$1: still running"
	expect "$1 state" "$(cat "$M/jobs/$1/state")" done
	expect "$1 step" "$(stat_of "$1" step)" 12
	params "$1"
}
# the largest |a - b| of two jobs' params, over the largest |a|
maxdiff()
{
	od -An -v -f -w4 "$T/$1.bin" >"$T/a"
	od -An -v -f -w4 "$T/$2.bin" >"$T/b"
	paste "$T/a" "$T/b" | awk '
		{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d;
		  a = $1 < 0 ? -$1 : $1; if (a > s) s = a }
		END { printf "%.3g\n", m / s }'
}

fs_start
# GPUOPT_FS_RANK_DEVICES: the ids to put rank 1 on (a GPU machine's
# PoCL may not run); else the first OpenCL and the first Vulkan device
devs=${GPUOPT_FS_RANK_DEVICES:-$(dev_of opencl) $(dev_of vulkan)}
first=$(echo $devs | cut -d' ' -f1)
[ -n "$first" ] || skip "no OpenCL or Vulkan device beside the cpu backend"
cfg="model=mlp:784x32x10 data=$data optimizer=adam lr=0.002 batch_size=32 max_steps=12 eval_every=12 log_every=4 seed=11 shards=2"
new_job cpu "$cfg ranks=1 device=cpu:0"
run cpu
new_job cpu2 "$cfg ranks=2 device=cpu:0,cpu:0"
run cpu2
cmp -s "$T/cpu.bin" "$T/cpu2.bin" || fail "ranks=2 on cpu:0,cpu:0 is not ranks=1's bits"
expect "cpu2 rank_devices" "$(stat_of cpu2 rank_devices)" cpu:0,cpu:0
expect "cpu rank_devices" "$(stat_of cpu rank_devices)" cpu:0
for id in $devs; do
	j=$(echo "$id" | tr -d :)
	new_job "$j" "$cfg ranks=1 device=$id"
	new_job "${j}2" "$cfg ranks=2 device=$id,$id"
	new_job "mix$j" "$cfg ranks=2 device=cpu:0,$id"
	new_job "again$j" "$cfg ranks=2 device=cpu:0,$id"
	grep -qx "device=cpu:0,$id" "$M/jobs/mix$j/config" ||
		fail "mix$j: config shows $(grep ^device= "$M/jobs/mix$j/config")"
	for k in "$j" "${j}2" "mix$j" "again$j"; do
		run "$k"
	done
	expect "${j}2 rank_devices" "$(stat_of "${j}2" rank_devices)" "$id,$id"
	expect "mix$j rank_devices" "$(stat_of "mix$j" rank_devices)" "cpu:0,$id"
	expect "mix$j device (rank 0's)" "$(stat_of "mix$j" device)" cpu:0
	cmp -s "$T/$j.bin" "$T/${j}2.bin" ||
		fail "ranks=2 on $id,$id is not ranks=1's bits on $id"
	cmp -s "$T/mix$j.bin" "$T/again$j.bin" ||
		fail "ranks=2 on cpu:0,$id: two runs differ"
	# rank 1 did not run on cpu:0 (that would be cpu's bits), nor
	# rank 0 on $id
	! cmp -s "$T/mix$j.bin" "$T/cpu.bin" ||
		fail "ranks=2 on cpu:0,$id gives cpu:0's bits: rank 1 ran on cpu:0"
	! cmp -s "$T/mix$j.bin" "$T/$j.bin" ||
		fail "ranks=2 on cpu:0,$id gives $id's bits: rank 0 ran on $id"
	for ref in cpu "$j"; do
		d=$(maxdiff "mix$j" "$ref")
		awk -v d="$d" 'BEGIN { exit !(d < 1e-4) }' ||
			fail "ranks=2 on cpu:0,$id is $d away from $ref's params"
		echo "cpu:0,$id vs $ref: $d"
	done
done

# the same keys to gpuopt-train under mpirun: the same bits
train=${GPUOPT_TRAIN_MPI:-$(dirname "$GPUOPTFS")/../../build-mpi/bin/gpuopt-train}
if [ -x "$train" ]; then
	id=$first
	j=mix$(echo "$id" | tr -d :)
	root=
	[ "$(id -u)" = 0 ] && root=--allow-run-as-root
	mpiexec $root --oversubscribe --bind-to none -np 2 "$train" -q $cfg \
		device=cpu:0,$id dump="$T/train.bin" </dev/null >"$T/train.out" 2>&1 ||
		fail "gpuopt-train: $(tail -3 "$T/train.out")"
	cmp -s "$T/$j.bin" "$T/train.bin" ||
		fail "ranks=2 on cpu:0,$id differs from gpuopt-train's"
	echo "gpuopt-train -np 2 device=cpu:0,$id: the same bits"
else
	echo "no gpuopt-train with MPI ($train): not compared"
fi

# rank 1's device's pool below the model (adam: 4 floats a parameter)
id=$first
dev=$(grep -lx "$id" "$M"/devices/*/id | head -1 | xargs dirname | xargs basename)
echo 65536 >"$M/pools/$dev/max" || fail "pools/$dev/max"
new_job capped "$cfg ranks=2 device=cpu:0,$id"
expect "rank 1 over its device's limit" "$(w "$M/jobs/capped/ctl" "step 1")" ENOMEM
expect "capped not stepped" "$(stat_of capped step)" 0
grep -q "rank 1" "$M/jobs/capped/error" ||
	fail "error does not name rank 1: $(cat "$M/jobs/capped/error")"
# both ranks on the cpu backend (a backend's name: rank modulo its
# devices, one here): pools/$dev/max is not theirs
new_job free "$cfg ranks=2 device=cpu"
expect "ranks on cpu:0" "$(w "$M/jobs/free/ctl" "step 1")" OK
expect "free stepped" "$(stat_of free step)" 1
expect "free rank_devices" "$(stat_of free rank_devices)" cpu:0,cpu:0
fs_finish
echo PASS
