#!/bin/sh
# mkdir of an existing name is EEXIST; a name with '/' cannot be made
# (ENOENT: its parent does not exist); spaces, control characters and a
# leading dot are EINVAL; directories outside jobs/ are EPERM.
. "$(dirname "$0")/lib.sh"
fs_start
expect "mkdir a" "$("$FSIO" mkdir "$M/jobs/a")" OK
expect "again" "$("$FSIO" mkdir "$M/jobs/a")" EEXIST
expect "slash" "$("$FSIO" mkdir "$M/jobs/b/c")" ENOENT
expect "space" "$("$FSIO" mkdir "$M/jobs/b c")" EINVAL
expect "tab" "$("$FSIO" mkdir "$M/jobs/$(printf 'b\tc')")" EINVAL
expect "control" "$("$FSIO" mkdir "$M/jobs/$(printf 'b\001')")" EINVAL
expect "dot" "$("$FSIO" mkdir "$M/jobs/.b")" EINVAL
expect "long" "$("$FSIO" mkdir "$M/jobs/$(printf '%064d' 0)")" EINVAL
expect "in a job" "$("$FSIO" mkdir "$M/jobs/a/x")" EPERM
expect "in devices" "$("$FSIO" mkdir "$M/devices/9")" EPERM
expect "jobs" "$(ls "$M/jobs")" a
grep -q 'bad job name' "$M/error_log" || fail "error_log has no reason"
fs_finish
