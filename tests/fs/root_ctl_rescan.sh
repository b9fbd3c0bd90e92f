#!/bin/sh
# ctl lists rescan; a rescan that finds the same devices keeps every
# device, index and id, and a running job and a finished one go on.
. "$(dirname "$0")/lib.sh"
fs_start
expect "ctl" "$(cat "$M/ctl")" rescan
ids() { cat "$M"/devices/*/id | tr '\n' ' '; }
past() { [ "$(stat_of run step)" -gt "$1" ]; }
before=$(ids)
expect "rescan" "$(w "$M/ctl" rescan)" OK
expect "devices" "$(ids)" "$before"
expect "bad verb" "$(w "$M/ctl" reboot)" EINVAL
new_job hold "model=quadratic:8 max_steps=1"
expect start "$(w "$M/jobs/hold/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/hold/state" || fail "not done"
new_job run "model=quadratic:64 max_steps=max"
expect start "$(w "$M/jobs/run/ctl" start)" OK
wait_for 10 past 0 || fail "run does not step"
expect "rescan held" "$(w "$M/ctl" rescan)" OK
expect "devices held" "$(ids)" "$before"
s1=$(stat_of run step)
wait_for 10 past "$s1" || fail "run stopped stepping"
expect "run state" "$(cat "$M/jobs/run/state")" running
expect "run error" "$(cat "$M/jobs/run/error")" ""
expect stop "$(w "$M/jobs/run/ctl" stop)" OK
fs_finish
