#!/bin/sh
# restart_on_failure=1: a job whose worker dies starts a new one from its
# newest automatic checkpoint and runs on, counted in stat's restarts; the
# second death, past the limit, fails it.
. "$(dirname "$0")/lib.sh"
fs_start
new_job j "model=quadratic:32 max_steps=max checkpoint_every=50 keep_checkpoints=2 restart_on_failure=1"
expect "config" "$(grep '^restart_on_failure=' "$M/jobs/j/config")" \
	restart_on_failure=1
expect "start" "$(w "$M/jobs/j/ctl" start)" OK
wait_for 10 sh -c "ls '$M/jobs/j/checkpoints' | grep -q step-" ||
	fail "no automatic checkpoint"
pid=$(stat_of j worker_pid)
kill -KILL "$pid"
wait_for 10 sh -c "grep -q 'restart 1 of 1' '$M/jobs/j/events'" ||
	fail "no restart: $(tail -n 3 "$M/jobs/j/events")"
from=$(sed -n 's/.*restart 1 of 1: a new worker from \(step-[0-9]*\).safetensors at step \([0-9]*\)$/\1 \2/p' \
	"$M/jobs/j/events")
[ -n "$from" ] || fail "restart line: $(grep 'restart 1' "$M/jobs/j/events")"
set -- $from
expect "restored at its checkpoint's step" "$2" "$(echo "$1" | sed 's/step-0*//')"
expect "restarts" "$(stat_of j restarts)" 1
wait_for 5 grep -qx running "$M/jobs/j/state" || fail "not running again"
new=$(stat_of j worker_pid)
[ "$new" != "$pid" ] && [ "$new" -gt 0 ] || fail "no new worker"
grep -q 'worker killed by SIGKILL' "$M/jobs/j/error" || fail "cause forgotten"
s1=$(stat_of j step)
sleep 0.3
[ "$(stat_of j step)" -gt "$s1" ] || fail "not stepping after the restart"

kill -KILL "$new"
wait_for 10 grep -qx failed "$M/jobs/j/state" || fail "not failed at the limit"
expect "restarts" "$(stat_of j restarts)" 1
fs_finish
echo PASS
