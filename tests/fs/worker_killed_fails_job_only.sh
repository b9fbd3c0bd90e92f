#!/bin/sh
# A job's worker killed with SIGKILL fails that job alone, with the cause
# in error and events; a second job keeps stepping, and root's reads of
# the daemon's files answer within 100 ms.
. "$(dirname "$0")/lib.sh"
fs_start
new_job victim "model=quadratic:64 max_steps=max"
new_job other "model=quadratic:64 max_steps=max"
expect "start victim" "$(w "$M/jobs/victim/ctl" start)" OK
expect "start other" "$(w "$M/jobs/other/ctl" start)" OK
wait_for 10 sh -c "[ \"\$(awk '\$1 == \"step\" { print \$2 }' '$M/jobs/victim/stat')\" -gt 10 ]" ||
	fail "victim does not step"
pid=$(stat_of victim worker_pid)
[ "${pid:-0}" -gt 0 ] || fail "no worker_pid in stat"
[ "$pid" != "$FS_PID" ] || fail "the worker is the daemon"
kill -KILL "$pid"
wait_for 10 grep -qx failed "$M/jobs/victim/state" || fail "victim not failed"
grep -q 'worker killed by SIGKILL' "$M/jobs/victim/error" ||
	fail "error: $(cat "$M/jobs/victim/error")"
grep -q 'worker killed by SIGKILL' "$M/jobs/victim/events" ||
	fail "no cause in events"
expect "victim worker_pid" "$(stat_of victim worker_pid)" 0

# the other job goes on, and the daemon answers at once
expect "other" "$(cat "$M/jobs/other/state")" running
s1=$(stat_of other step)
sleep 0.3
s2=$(stat_of other step)
[ "$s2" -gt "$s1" ] || fail "other stopped stepping ($s1 -> $s2)"
best=999999
for i in 1 2 3 4 5; do
	t0=$(date +%s%N)
	cat "$M/stat" "$M/jobs/victim/stat" >/dev/null || fail "cannot read stat"
	t=$((($(date +%s%N) - t0) / 1000000))
	[ $t -lt $best ] && best=$t
done
[ $best -lt 100 ] || fail "stat took $best ms"

# reset brings the failed job back with a new worker
expect "reset" "$(w "$M/jobs/victim/ctl" reset)" OK
expect "restart" "$(w "$M/jobs/victim/ctl" "step 5")" OK
expect "stepped again" "$(stat_of victim step)" 5
[ "$(stat_of victim worker_pid)" != "$pid" ] || fail "the same worker"
expect "stop other" "$(w "$M/jobs/other/ctl" stop)" OK
fs_finish
echo PASS
