#!/bin/sh
# tail -f follows events as control writes and state changes append lines.
. "$(dirname "$0")/lib.sh"
fs_start
new_job ev "model=quadratic:100 max_steps=max"
tail -n +1 -s 0.1 -f "$M/jobs/ev/events" >"$T/tail" 2>&1 &
tail_pid=$!
wait_for 5 grep -q 'config model=quadratic:100' "$T/tail" ||
	fail "tail did not print the existing lines"
expect start "$(w "$M/jobs/ev/ctl" start)" OK
expect pause "$(w "$M/jobs/ev/ctl" pause)" OK
expect stop "$(w "$M/jobs/ev/ctl" stop)" OK
wait_for 10 grep -q 'state paused -> stopped' "$T/tail" ||
	fail "tail -f did not follow: $(cat "$T/tail")"
for line in 'uid=0 ctl start$' 'state created -> running' 'uid=0 ctl pause$' \
	'state running -> paused' 'uid=0 ctl stop$'; do
	grep -q "$line" "$T/tail" || fail "tail: no '$line'"
done
kill $tail_pid
wait $tail_pid 2>/dev/null
cmp -s "$T/tail" "$M/jobs/ev/events" || fail "tail saw other bytes"
fs_finish
