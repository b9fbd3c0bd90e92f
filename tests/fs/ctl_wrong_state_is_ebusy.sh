#!/bin/sh
# A verb in the wrong state fails with EBUSY and moves nothing; an unknown
# verb is EINVAL; every control write is in events with its uid.
. "$(dirname "$0")/lib.sh"
fs_start
new_job v "model=quadratic:64 max_steps=5"
for verb in pause resume stop; do
	expect "$verb when created" "$(w "$M/jobs/v/ctl" $verb)" EBUSY
	expect state "$(cat "$M/jobs/v/state")" created
done
grep -q 'created' "$M/jobs/v/error" || fail "error does not name the state"
expect "unknown verb" "$(w "$M/jobs/v/ctl" jump)" EINVAL
expect "step 0" "$(w "$M/jobs/v/ctl" "step 0")" EINVAL
expect "step x" "$(w "$M/jobs/v/ctl" "step x")" EINVAL
expect "start" "$(w "$M/jobs/v/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/v/state" || fail "not done"
for verb in start pause resume stop; do
	expect "$verb when done" "$(w "$M/jobs/v/ctl" $verb)" EBUSY
done
expect "state" "$(cat "$M/jobs/v/state")" done
grep -q 'uid=0 ctl pause: ' "$M/jobs/v/events" || fail "events: failed ctl"
grep -q 'uid=0 ctl start$' "$M/jobs/v/events" || fail "events: ctl start"
# reading ctl lists the verbs
grep -qx 'step N' "$M/jobs/v/ctl" || fail "ctl does not list step N"
# reset brings it back to created, params kept
expect "reset" "$(w "$M/jobs/v/ctl" reset)" OK
expect "state" "$(cat "$M/jobs/v/state")" created
expect "step" "$(stat_of v step)" 0
fs_finish
