#!/bin/sh
# A text file takes one whole value at offset 0: a write elsewhere is
# EINVAL and changes nothing.
. "$(dirname "$0")/lib.sh"
fs_start
new_job o "model=quadratic:8"
cp "$M/jobs/o/config" "$T/before"
expect "config at 3" "$(w "$M/jobs/o/config" "lr=0.5" 3)" EINVAL
cmp -s "$T/before" "$M/jobs/o/config" || fail "config changed"
grep -q 'offset 0' "$M/jobs/o/error" || fail "error does not say why"
expect "ctl at 1" "$(w "$M/jobs/o/ctl" "start" 1)" EINVAL
expect "state" "$(cat "$M/jobs/o/state")" created
expect "enabled at 1" "$(w "$M/devices/0/enabled" "1" 1)" EINVAL
# "echo >>" appends at the file's size, 0: that is a whole write
echo "lr=0.25" >>"$M/jobs/o/config" || fail "append"
grep -qx 'lr=0.25' "$M/jobs/o/config" || fail "append did not apply"
fs_finish
