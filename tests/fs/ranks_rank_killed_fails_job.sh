#!/bin/sh
# A rank of a ranks=2 job killed mid-run fails that job within the
# timeout, with the rank and the cause in error; mpiexec's other rank is
# gone too, and the daemon goes on serving: another job keeps stepping
# and its stat reads.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data

GPUOPTFS_WORKER_TIMEOUT=10 fs_start
new_job other "model=quadratic:64 max_steps=max"
new_job victim "model=mlp:784x64x10 data=$data batch_size=64 max_steps=max ranks=2"
expect "start other" "$(w "$M/jobs/other/ctl" start)" OK
start_stepping victim
signal_rank1 victim KILL 15
case $err in
*"rank 1"*) ;;
*) fail "error lacks the rank: $err" ;;
esac
case $err in
*"signal 9"* | *Killed* | *KILL*) ;;
*) fail "error lacks the cause: $err" ;;
esac
wait_for 10 gone "$p0" || fail "rank 0 ($p0) lives on"
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
