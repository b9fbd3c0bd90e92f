#!/bin/sh
# Outside systemd (no NOTIFY_SOCKET, no JOURNAL_STREAM) a job's state
# changes go to the daemon's stderr, one line each with job and uid; a
# failure says why.
. "$(dirname "$0")/lib.sh"
unset NOTIFY_SOCKET JOURNAL_STREAM
fs_start
new_job lg "model=quadratic:10 max_steps=4"
expect start "$(w "$M/jobs/lg/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/lg/state" || fail "not done"
grep -q ': job lg uid=0: created -> running at step 0$' "$T/daemon.log" ||
	fail "no line for running"
grep -q ': job lg uid=0: running -> done at step 4$' "$T/daemon.log" ||
	fail "no line for done"
expect "lines" "$(grep -c ': job lg uid=0: ' "$T/daemon.log")" 2
fs_finish
