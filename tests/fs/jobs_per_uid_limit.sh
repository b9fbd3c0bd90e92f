#!/bin/sh
# --max-jobs-per-uid N: the N+1-th job of one uid is EDQUOT; other users
# are not affected.
. "$(dirname "$0")/lib.sh"
need_root
fs_start --max-jobs-per-uid 3
for i in 1 2 3; do
	expect "job $i" "$("$FSIO" mkdir "$M/jobs/j$i")" OK
done
expect "job 4" "$("$FSIO" mkdir "$M/jobs/j4")" EDQUOT
grep -q 'limit' "$M/error_log" || fail "error_log has no reason"
expect "other uid" "$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$FSIO" mkdir "$M/jobs/n1")" OK
rmdir "$M/jobs/j1" || fail "rmdir"
expect "after rmdir" "$("$FSIO" mkdir "$M/jobs/j4")" OK
fs_finish
