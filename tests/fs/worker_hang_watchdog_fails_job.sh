#!/bin/sh
# A worker that stops answering is killed by the command's watchdog
# (GPUOPTFS_WORKER_TIMEOUT shortens it for the test) and its job fails
# with "worker stopped answering"; reads answer meanwhile, the other job
# goes on.
. "$(dirname "$0")/lib.sh"
export GPUOPTFS_WORKER_FAULT=hang:bad GPUOPTFS_WORKER_TIMEOUT=2
fs_start
new_job bad "model=quadratic:32 max_steps=100"
new_job good "model=quadratic:32 max_steps=max"
expect "start good" "$(w "$M/jobs/good/ctl" start)" OK
expect "start bad" "$(w "$M/jobs/bad/ctl" start)" OK
pid=$(stat_of bad worker_pid)
t0=$(date +%s%N)
cat "$M/jobs/bad/stat" "$M/jobs/bad/state" >/dev/null || fail "no stat"
t=$((($(date +%s%N) - t0) / 1000000))
[ $t -lt 100 ] || fail "stat of the hung job took $t ms"
wait_for 15 grep -qx failed "$M/jobs/bad/state" || fail "bad not failed"
grep -q 'worker stopped answering after 2 s' "$M/jobs/bad/error" ||
	fail "error: $(cat "$M/jobs/bad/error")"
grep -q 'injected fault: hang' "$M/jobs/bad/error" ||
	fail "no stderr in error: $(cat "$M/jobs/bad/error")"
! kill -0 "$pid" 2>/dev/null || fail "the hung worker lives on"
expect "good" "$(cat "$M/jobs/good/state")" running
expect "stop good" "$(w "$M/jobs/good/ctl" stop)" OK
fs_finish
echo PASS
