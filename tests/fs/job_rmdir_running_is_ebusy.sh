#!/bin/sh
# rmdir of a running job fails with EBUSY and the job runs on; once
# stopped, rmdir removes it.
. "$(dirname "$0")/lib.sh"
fs_start
new_job busy "model=rosenbrock:100000 max_steps=max"
expect start "$(w "$M/jobs/busy/ctl" start)" OK
expect "rmdir running" "$("$FSIO" rmdir "$M/jobs/busy")" EBUSY
expect state "$(cat "$M/jobs/busy/state")" running
grep -q 'running' "$M/jobs/busy/error" || fail "error does not say why"
grep -q '/jobs/busy.*running' "$M/error_log" || fail "error_log has no line"
expect stop "$(w "$M/jobs/busy/ctl" stop)" OK
expect "rmdir stopped" "$("$FSIO" rmdir "$M/jobs/busy")" OK
fs_finish
