#!/bin/sh
# SIGTERM stops the running jobs, unmounts and exits 0; so does SIGINT.
. "$(dirname "$0")/lib.sh"
fs_start
new_job t "model=rosenbrock:10000 max_steps=max"
expect start "$(w "$M/jobs/t/ctl" start)" OK
exec 3<"$M/jobs/t/stat"	# an open file does not hold the daemon up
fs_kill TERM || fail "exit status $? on SIGTERM"
exec 3<&-
! mountpoint -q "$M" || fail "still mounted"
expect "mountpoint" "$("$FSIO" stat "$M")" OK

fs_start
fs_kill INT || fail "exit status $? on SIGINT"
! mountpoint -q "$M" || fail "still mounted after SIGINT"
! grep -q -e Sanitizer -e 'runtime error' "$T/daemon.log" ||
	fail "sanitizer report"
