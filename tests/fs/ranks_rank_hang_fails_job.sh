#!/bin/sh
# A rank of a ranks=2 job that hangs (SIGSTOP) fails that job within the
# communication timeout (half the watchdog's), with the cause in
# error; every rank process is gone afterwards, stopped one included, and
# the daemon goes on serving.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data

GPUOPTFS_WORKER_TIMEOUT=8 fs_start
new_job victim "model=mlp:784x64x10 data=$data batch_size=64 max_steps=max ranks=2"
new_job other "model=quadratic:16 max_steps=max"
start_stepping victim
signal_rank1 victim STOP 12
case $err in
*"no answer from the other ranks"*) ;;
*) fail "error lacks the cause: $err" ;;
esac
wait_for 15 gone "$p1" || { kill -KILL "$p1"; fail "the stopped rank lives on"; }
wait_for 5 gone "$p0" || fail "rank 0 lives on"
expect "victim worker_pid" "$(stat_of victim worker_pid)" 0
expect "step other" "$(w "$M/jobs/other/ctl" "step 3")" OK
expect "other stepped" "$(stat_of other step)" 3
echo "failed in $t s: $err"
fs_finish
echo PASS
