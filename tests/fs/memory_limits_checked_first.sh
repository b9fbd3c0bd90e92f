#!/bin/sh
# --max-job-bytes and --max-uid-bytes: a job counts 16 bytes a parameter;
# one too big for a job is refused at the config write (EDQUOT), before
# the daemon touches any of it (a 10^9-parameter model once made it touch
# 4 GB); a user's jobs together are held to their limit when built, other
# users are not affected, and rmdir gives the memory back.
. "$(dirname "$0")/lib.sh"
need_root
fs_start --max-job-bytes 100000000 --max-uid-bytes 150000000
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
for j in big a b; do
	expect "mkdir $j" "$(as_nobody "$FSIO" mkdir "$M/jobs/$j")" OK
done
hwm0=$(awk '/^VmHWM/ { print $2 }' /proc/$FS_PID/status)
expect "10^9 parameters" "$(as_nobody "$FSIO" write "$M/jobs/big/config" \
	"model=quadratic:1000000000 device=cpu")" EDQUOT
grep -q 'a job may have' "$M/jobs/big/error" || fail "error says why"
hwm1=$(awk '/^VmHWM/ { print $2 }' /proc/$FS_PID/status)
[ "$hwm1" -lt $((hwm0 + 100000)) ] ||
	fail "the daemon touched memory: peak RSS $hwm0 -> $hwm1 kB"
expect "model unchanged" "$(stat_of big model)" none

# 80 MB each: the first fits, the second would pass the uid's 150 MB
for j in a b; do
	expect "config $j" "$(as_nobody "$FSIO" write "$M/jobs/$j/config" \
		"model=quadratic:5000000 device=cpu")" OK
done
as_nobody cat "$M/jobs/a/params/x" >/dev/null || fail "a builds"
expect "b would pass the uid's limit" "$(as_nobody "$FSIO" seq \
	"$M/jobs/b/params/x" r r)" EDQUOT
expect "start b" "$(as_nobody "$FSIO" write "$M/jobs/b/ctl" start)" EDQUOT
grep -q 'limit' "$M/jobs/b/error" || fail "b's error says why"
new_job r "model=quadratic:5000000 device=cpu"
cat "$M/jobs/r/params/x" >/dev/null || fail "root's job is not limited by nobody's"
expect "rmdir a" "$(as_nobody "$FSIO" rmdir "$M/jobs/a")" OK
as_nobody cat "$M/jobs/b/params/x" >/dev/null || fail "b builds after rmdir a"
fs_finish
