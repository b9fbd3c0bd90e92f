#!/bin/sh
# deterministic=, zero=, bucket_bytes= and timeout= of a job with ranks
# reach libgpuopt-mpi: a ranks=2 job with zero=1 (each rank steps its
# slice of the optimizer state, then the parameters are gathered) and
# small buckets (several per reduction) trains an MLP to the same bits
# as ranks=1, and as ranks=2 without ZeRO. config and stat show the
# settings; a ranks=2 job with deterministic=0 (MPI's own sum) trains
# to within float noise of them, not necessarily the same bits.
# A checkpoint of a zero=1 job gathers every rank's slice of the state:
# the same bytes as ranks=1's. After its first step a zero=1 job refuses
# new optimizer settings, a restore and a reset (EBUSY, config unchanged:
# each rank's shard optimizer holds them); after a daemon restart the
# job's new ranks restore its last checkpoint and go on in step with
# ranks=1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data
not_running()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}
run()
{
	expect "start $1" "$(w "$M/jobs/$1/ctl" start)" OK
	wait_for 60 not_running "$1" || fail "$1: still running"
	expect "$1 state" "$(cat "$M/jobs/$1/state")" done
	expect "$1 step" "$(stat_of "$1" step)" 30
	for t in fc0.weight fc0.bias fc1.weight fc1.bias; do
		cat "$M/jobs/$1/params/$t" || fail "read $1/$t"
	done >"$T/$1.bin"
	[ -s "$T/$1.bin" ] || fail "$1: no params"
}

fs_start
cfg="model=mlp:784x24x10 data=$data optimizer=adam lr=0.002 batch_size=48 max_steps=30 eval_every=30 log_every=10 seed=3 shards=4 device=cpu:0"
new_job one "$cfg ranks=1"
new_job dp "$cfg ranks=2 bucket_bytes=8192"
new_job zero "$cfg ranks=2 zero=1 bucket_bytes=8192 timeout=5"
new_job nondet "$cfg ranks=2 deterministic=0"
for k in deterministic=1 zero=1 bucket_bytes=8192 timeout=5; do
	grep -qx "$k" "$M/jobs/zero/config" || fail "zero's config lacks $k"
done
grep -qx "deterministic=0" "$M/jobs/nondet/config" || fail "nondet's config"
for j in one dp zero nondet; do
	run "$j"
done
expect "zero's zero" "$(stat_of zero zero)" 1
expect "zero's bucket_bytes" "$(stat_of zero bucket_bytes)" 8192
expect "zero's timeout" "$(stat_of zero timeout)" 5
expect "zero's deterministic" "$(stat_of zero deterministic)" 1
expect "zero's shards" "$(stat_of zero shards)" 4
expect "dp's zero" "$(stat_of dp zero)" 0
expect "nondet's deterministic" "$(stat_of nondet deterministic)" 0
cmp -s "$T/one.bin" "$T/dp.bin" || fail "ranks=2 differs from ranks=1"
cmp -s "$T/one.bin" "$T/zero.bin" || fail "ranks=2 zero=1 differs from ranks=1"
od -An -v -f -w4 "$T/one.bin" >"$T/a"
od -An -v -f -w4 "$T/nondet.bin" >"$T/b"
d=$(paste "$T/a" "$T/b" | awk '
	{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d;
	  a = $1 < 0 ? -$1 : $1; if (a > s) s = a }
	END { printf "%.3g\n", m / s }')
awk -v d="$d" 'BEGIN { exit !(d < 1e-4) }' ||
	fail "deterministic=0 is $d away from ranks=1"
echo "deterministic=0: $d from ranks=1"

# checkpoints: every rank's state, gathered
cfg="$cfg max_steps=max"
new_job zc "$cfg ranks=2 zero=1"
new_job oc "$cfg ranks=1"
for j in zc oc; do
	expect "$j step 7" "$(w "$M/jobs/$j/ctl" "step 7")" OK
	expect "$j checkpoint" "$(w "$M/jobs/$j/ctl" "checkpoint c7")" OK
done
cmp -s "$M/jobs/zc/checkpoints/c7.safetensors" \
	"$M/jobs/oc/checkpoints/c7.safetensors" ||
	fail "zero=1's checkpoint differs from ranks=1's"
cp "$M/jobs/zc/config" "$T/before"
expect "lr after a step" "$(w "$M/jobs/zc/config" "lr=0.001")" EBUSY
grep -q "zero=1: optimizer settings" "$M/jobs/zc/error" ||
	fail "error: $(cat "$M/jobs/zc/error")"
cmp -s "$T/before" "$M/jobs/zc/config" || fail "lr: config changed"
expect "restore after a step" "$(w "$M/jobs/zc/ctl" "restore c7")" EBUSY
grep -q "zero=1: a restore" "$M/jobs/zc/error" ||
	fail "error: $(cat "$M/jobs/zc/error")"
expect "reset after a step" "$(w "$M/jobs/zc/ctl" "reset")" EBUSY
# still stepping, in step with ranks=1
for j in zc oc; do
	expect "$j step 3" "$(w "$M/jobs/$j/ctl" "step 3")" OK
	for t in fc0.weight fc0.bias fc1.weight fc1.bias; do
		cat "$M/jobs/$j/params/$t" || fail "read $j/$t"
	done >"$T/$j.bin"
done
cmp -s "$T/zc.bin" "$T/oc.bin" || fail "zero=1 after the refusals differs"

# a daemon restart: the job comes back from its last checkpoint, its
# new ranks take the state and go on as ranks=1 does
new_job zr "$cfg ranks=2 zero=1 checkpoint_every=5"
new_job or "$cfg ranks=1 checkpoint_every=5"
for j in zr or; do
	expect "$j step 10" "$(w "$M/jobs/$j/ctl" "step 10")" OK
done
fs_finish
fs_start
for j in zr or; do
	expect "$j back at" "$(stat_of "$j" step)" 10
	expect "$j step 4" "$(w "$M/jobs/$j/ctl" "step 4")" OK
	expect "$j at" "$(stat_of "$j" step)" 14
	for t in fc0.weight fc0.bias fc1.weight fc1.bias; do
		cat "$M/jobs/$j/params/$t" || fail "read $j/$t"
	done >"$T/$j.bin"
done
cmp -s "$T/zr.bin" "$T/or.bin" || fail "zero=1 after a restart differs from ranks=1"
fs_finish
echo PASS
