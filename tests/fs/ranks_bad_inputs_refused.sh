#!/bin/sh
# Bad ranks=, shards= and hosts= writes fail with EINVAL, say why in
# error and change nothing: ranks 0 or above the limit (64, and this
# machine's CPUs without hosts=), a batch that does not divide into the
# shards, shards not a multiple of ranks, a model that does not train
# over ranks, hosts= with anything but host[:slots],... (no option or
# shell word gets to mpiexec), a job over --max-job-bytes once every
# rank's copy counts. ranks change only before the first step.
# A daemon without MPI (a build without gpuoptfs-worker-mpi, or
# GPUOPTFS_MPIEXEC empty: no mpiexec) refuses ranks=2 with the reason,
# and still runs ranks=1 jobs.
. "$(dirname "$0")/lib.sh"
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] ||
	skip "no $data (apt-get install dataset-fashion-mnist)"
have_mpi=1
[ -x "$(dirname "$GPUOPTFS")/gpuoptfs-worker-mpi" ] &&
	command -v mpiexec >/dev/null || have_mpi=0

if [ $have_mpi = 1 ]; then
fs_start
new_job c "model=mlp:784x16x10 data=$data batch_size=64 max_steps=3 ranks=2"
cp "$M/jobs/c/config" "$T/before"
bad()
{
	expect "$1" "$(w "$M/jobs/c/config" "$1")" EINVAL
	grep -q -- "$2" "$M/jobs/c/error" ||
		fail "$1: error '$(cat "$M/jobs/c/error")' lacks '$2'"
	cmp -s "$T/before" "$M/jobs/c/config" || fail "$1: config changed"
}
bad "ranks=0" "ranks"
bad "ranks=65" "ranks"
bad "ranks=-1" "ranks"
bad "ranks=2x" "ranks"
bad "ranks=$(($(nproc) + 1))" "CPUs"
bad "batch_size=63" "batch_size"
bad "lr=0.01 batch_size=65" "batch_size"
bad "shards=3" "shards"
bad "model=quadratic:8" "does not train over ranks"
bad "hosts=a|b" "hosts"
bad "hosts=a*" "hosts"
bad "hosts=-np" "hosts"
bad "hosts=--mca" "hosts"
bad 'hosts=$(id)' "hosts"
bad "hosts=a,,b" "hosts"
bad "hosts=a:" "hosts"
bad "hosts=a:12345" "hosts"
bad "hosts=a/b" "hosts"
bad "hosts=host\`x\`" "hosts"
# good ones
expect "hosts" "$(w "$M/jobs/c/config" "hosts=localhost:2,node-1.example:1")" OK
grep -qx "hosts=localhost:2,node-1.example:1" "$M/jobs/c/config" || fail "hosts not shown"
expect "hosts none" "$(w "$M/jobs/c/config" "hosts=none")" OK
expect "shards=4" "$(w "$M/jobs/c/config" "shards=4")" OK
# ranks change only before the first step
expect "step" "$(w "$M/jobs/c/ctl" "step 1")" OK
expect "ranks after a step" "$(w "$M/jobs/c/config" "ranks=1")" EBUSY
fs_finish

# every rank holds the model: 16 bytes a parameter and rank count
# against --max-job-bytes (784x16x10: 12730 parameters, 203680 bytes)
fs_start --max-job-bytes 300000
new_job q "model=mlp:784x16x10 data=$data batch_size=64"
cp "$M/jobs/q/config" "$T/before"
expect "ranks=2 over the job limit" "$(w "$M/jobs/q/config" "ranks=2")" EDQUOT
grep -q "407360 bytes (16 per parameter and rank)" "$M/jobs/q/error" ||
	fail "error: $(cat "$M/jobs/q/error")"
cmp -s "$T/before" "$M/jobs/q/config" || fail "ranks=2 over the limit: config changed"
fs_finish
GPUOPTFS_MPIEXEC=
export GPUOPTFS_MPIEXEC
else
	echo "no MPI here: only the refusal of a daemon without it"
fi

# a daemon without MPI
fs_start
new_job n "model=mlp:784x16x10 data=$data batch_size=64 max_steps=3"
cp "$M/jobs/n/config" "$T/before"
expect "ranks=2 without MPI" "$(w "$M/jobs/n/config" "ranks=2")" EINVAL
grep -q -e "no mpiexec" -e "no MPI worker" "$M/jobs/n/error" ||
	fail "error: $(cat "$M/jobs/n/error")"
cmp -s "$T/before" "$M/jobs/n/config" || fail "config changed"
expect "hosts without MPI" "$(w "$M/jobs/n/config" "hosts=localhost")" EINVAL
expect "ranks=1 without MPI" "$(w "$M/jobs/n/config" "ranks=1")" OK
expect "step without MPI" "$(w "$M/jobs/n/ctl" "step 2")" OK
expect "stepped" "$(stat_of n step)" 2
expect "one rank" "$(stat_of n ranks)" 1
fs_finish
echo PASS
