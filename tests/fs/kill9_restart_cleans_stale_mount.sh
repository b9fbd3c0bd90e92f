#!/bin/sh
# After kill -9, the unmount helper detaches the mount; if it dies too,
# the mount is stale (ENOTCONN) and a new daemon cleans it and serves.
. "$(dirname "$0")/lib.sh"
fs_start
helper=$(ps -o pid= --ppid "$FS_PID" | tr -d ' ')
[ -n "$helper" ] || fail "no unmount helper"
expect "helper" "$(cat "/proc/$helper/comm")" gpuoptfs-umount
fs_kill KILL
wait_for 5 sh -c "! mountpoint -q '$M'" || fail "helper did not unmount"

fs_start
helper=$(ps -o pid= --ppid "$FS_PID" | tr -d ' ')
kill -KILL "$helper"
fs_kill KILL
expect "stale" "$("$FSIO" stat "$M")" ENOTCONN
fs_start
grep -q 'stale mount' "$T/daemon.log" || fail "no word of the stale mount"
new_job after "model=quadratic:8 max_steps=2"
expect start "$(w "$M/jobs/after/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/after/state" || fail "not serving"
fs_finish
