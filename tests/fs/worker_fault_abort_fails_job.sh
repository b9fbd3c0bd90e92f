#!/bin/sh
# A worker that aborts in a kernel launch (GPUOPTFS_WORKER_FAULT, the
# fault-injection switch) fails its job with "worker killed by SIGABRT"
# and the last lines of its stderr; the other job runs to its end.
. "$(dirname "$0")/lib.sh"
export GPUOPTFS_WORKER_FAULT=abort-on-launch:bad
fs_start
new_job bad "model=quadratic:32 max_steps=100"
new_job good "model=quadratic:32 max_steps=200"
expect "start good" "$(w "$M/jobs/good/ctl" start)" OK
expect "step bad" "$(w "$M/jobs/bad/ctl" "step 10")" EIO
expect "bad" "$(cat "$M/jobs/bad/state")" failed
grep -q 'worker killed by SIGABRT' "$M/jobs/bad/error" ||
	fail "error: $(cat "$M/jobs/bad/error")"
grep -q 'injected fault: abort in a kernel launch' "$M/jobs/bad/error" ||
	fail "no stderr in error: $(cat "$M/jobs/bad/error")"
grep -q 'worker killed by SIGABRT' "$M/jobs/bad/events" ||
	fail "no cause in events"
wait_for 20 grep -qx done "$M/jobs/good/state" || fail "good not done"
expect "good steps" "$(stat_of good step)" 200
cat "$M/stat" >/dev/null || fail "daemon gone"
fs_finish
echo PASS
