#!/bin/sh
# A gradient too short, too long or out of order never steps: EINVAL (at
# close(2) for a short one, the only moment it is known to be short), a
# readable error, the params unchanged.
. "$(dirname "$0")/lib.sh"
fs_start
new_job g "optimizer=sgd lr=0.1 model=external:w:10,b:6"
"$EXTSTEP" rand 16 7 >"$T/g"
head -c 60 "$T/g" >"$T/short"
cat "$T/g" "$T/g" >"$T/long"
cat "$M/jobs/g/params/w" >"$T/w0"

expect "short" "$("$FSIO" writefile "$M/jobs/g/grad" "$T/short" 4096)" \
	"write=OK close=EINVAL"
grep -q 'short' "$M/jobs/g/error" || fail "error does not say short"
expect "long" "$("$FSIO" writefile "$M/jobs/g/grad" "$T/long" 4096)" \
	"write=EINVAL close=OK"
grep -q 'too long' "$M/jobs/g/error" || fail "error does not say too long"
expect "out of order" "$("$FSIO" writefile "$M/jobs/g/grad" "$T/g" 16 16)" \
	"write=EINVAL close=OK"
grep -q 'out of order' "$M/jobs/g/error" || fail "error does not say order"
expect "steps" "$(stat_of g step)" 0
cmp -s "$T/w0" "$M/jobs/g/params/w" || fail "params changed"
[ "$(grep -c /jobs/g/grad "$M/error_log")" -eq 3 ] || fail "error_log lines"

# in pieces, in order: exactly one step
expect "pieces" "$("$FSIO" writefile "$M/jobs/g/grad" "$T/g" 24)" \
	"write=OK close=OK"
expect "steps" "$(stat_of g step)" 1
# a non-external job takes no gradient
new_job q "model=quadratic:16"
expect "builtin" "$("$FSIO" writefile "$M/jobs/q/grad" "$T/g" 64)" \
	"write=EINVAL close=OK"
fs_finish
