#!/bin/sh
# A job with ranks=2 (its worker under mpiexec, rank 0 speaking to the
# daemon) trains an MLP on Fashion-MNIST to the same parameters, bit for
# bit, and the same accuracy as ranks=1, both with shards=2
# (deterministic reduction), on hosts=localhost:2. stat shows ranks and
# the time spent reducing gradients.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data
not_running()
{
	[ "$(cat "$M/jobs/$1/state")" != running ]
}

fs_start
cfg="model=mlp:784x64x10 data=$data optimizer=adam lr=0.002 batch_size=64 max_steps=60 eval_every=60 log_every=20 seed=5 shards=2"
new_job one "$cfg ranks=1"
new_job two "$cfg ranks=2 hosts=localhost:2"
grep -qx 'ranks=2' "$M/jobs/two/config" || fail "config lacks ranks=2"
grep -qx 'shards=2' "$M/jobs/two/config" || fail "config lacks shards=2"
for j in one two; do
	expect "start $j" "$(w "$M/jobs/$j/ctl" start)" OK
	wait_for 50 not_running "$j" || fail "$j: still running"
	expect "$j state" "$(cat "$M/jobs/$j/state")" done
	expect "$j step" "$(stat_of "$j" step)" 60
done
expect "ranks in stat" "$(stat_of two ranks)" 2
expect "ranks=1 in stat" "$(stat_of one ranks)" 1
cs=$(stat_of two comm_seconds)
awk -v c="$cs" 'BEGIN { exit !(c > 0) }' || fail "comm_seconds '$cs'"
a1=$(stat_of one accuracy)
a2=$(stat_of two accuracy)
expect "accuracy" "$a2" "$a1"
awk -v a="$a1" 'BEGIN { exit !(a >= 0.6 && a <= 1) }' ||
	fail "accuracy $a1 < 0.6: it did not learn"
for t in fc0.weight fc0.bias fc1.weight fc1.bias; do
	cat "$M/jobs/one/params/$t" >"$T/one.$t" || fail "read one/$t"
	cat "$M/jobs/two/params/$t" >"$T/two.$t" || fail "read two/$t"
	[ -s "$T/one.$t" ] || fail "empty $t"
	cmp -s "$T/one.$t" "$T/two.$t" || fail "$t differs between ranks=1 and ranks=2"
done
# the workers stay for params: two processes of ranks=2, one of ranks=1,
# running as the job's owner; stopping the daemon ends every rank
pids=$(pgrep -f "^[^ ]*gpuoptfs-worker-mpi two " | tr '\n' ' ')
expect "rank processes of two" "$(echo $pids | wc -w)" 2
expect "rank processes of one" "$(pgrep -fc "^[^ ]*gpuoptfs-worker-mpi one ")" 1
fs_finish
for p in $pids; do
	! kill -0 "$p" 2>/dev/null || fail "rank process $p outlived the daemon"
done
echo "accuracy $a1 on both, comm $cs s"
echo PASS
