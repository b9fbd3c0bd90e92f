#!/bin/sh
# A rank of a ranks=2 job killed mid-run fails that job within the
# timeout, with the rank and the cause in error; mpiexec's other rank is
# gone too, and the daemon goes on serving: another job keeps stepping
# and its stat reads.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
data=/usr/share/datasets/fashion-mnist
[ -r "$data/train-images-idx3-ubyte.gz" ] ||
	skip "no $data (apt-get install dataset-fashion-mnist)"
# rank N's process of job $1: its environment says which rank it is
rank_pid()
{
	for p in $(pgrep -f "^[^ ]*gpuoptfs-worker-mpi $1 "); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
			grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}
failed()
{
	[ "$(cat "$M/jobs/$1/state")" = failed ]
}

GPUOPTFS_WORKER_TIMEOUT=10 fs_start
new_job other "model=quadratic:64 max_steps=max"
new_job victim "model=mlp:784x64x10 data=$data batch_size=64 max_steps=max ranks=2"
expect "start other" "$(w "$M/jobs/other/ctl" start)" OK
expect "start victim" "$(w "$M/jobs/victim/ctl" start)" OK
wait_for 30 sh -c "[ \"\$(awk '\$1 == \"step\" { print \$2 }' '$M/jobs/victim/stat')\" -gt 20 ]" ||
	fail "victim does not step: $(cat "$M/jobs/victim/error")"
p1=$(rank_pid victim 1) || fail "no rank 1 process"
p0=$(rank_pid victim 0) || fail "no rank 0 process"
t0=$(date +%s)
kill -KILL "$p1"
wait_for 20 failed victim || fail "victim not failed: $(cat "$M/jobs/victim/state")"
t=$(($(date +%s) - t0))
[ $t -le 15 ] || fail "the failure took $t s"
err=$(cat "$M/jobs/victim/error")
case $err in
*"rank 1"*) ;;
*) fail "error lacks the rank: $err" ;;
esac
case $err in
*"signal 9"* | *Killed* | *KILL*) ;;
*) fail "error lacks the cause: $err" ;;
esac
wait_for 10 sh -c "! kill -0 $p0 2>/dev/null" || fail "rank 0 ($p0) lives on"
expect "victim worker_pid" "$(stat_of victim worker_pid)" 0

# the daemon serves: the other job steps, its stat reads
expect "other" "$(cat "$M/jobs/other/state")" running
s1=$(stat_of other step)
sleep 0.3
s2=$(stat_of other step)
[ "$s2" -gt "$s1" ] || fail "other stopped stepping ($s1 -> $s2)"
cat "$M/stat" "$M/jobs/victim/stat" >/dev/null || fail "cannot read stat"
expect "stop other" "$(w "$M/jobs/other/ctl" stop)" OK
echo "failed in $t s: $err"
fs_finish
echo PASS
