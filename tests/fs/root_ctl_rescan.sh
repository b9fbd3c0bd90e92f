#!/bin/sh
# ctl lists rescan; rescan finds the devices again when no job holds one,
# and is EBUSY while one does.
. "$(dirname "$0")/lib.sh"
fs_start
expect "ctl" "$(cat "$M/ctl")" rescan
n=$(ls "$M/devices" | wc -l)
expect "rescan" "$(w "$M/ctl" rescan)" OK
expect "devices" "$(ls "$M/devices" | wc -l)" "$n"
expect "bad verb" "$(w "$M/ctl" reboot)" EINVAL
new_job hold "model=quadratic:8 max_steps=1"
expect start "$(w "$M/jobs/hold/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/hold/state" || fail "not done"
expect "rescan held" "$(w "$M/ctl" rescan)" EBUSY
rmdir "$M/jobs/hold" || fail rmdir
expect "rescan freed" "$(w "$M/ctl" rescan)" OK
fs_finish
