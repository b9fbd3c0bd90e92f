#!/bin/sh
# poll(2) on events blocks at the end of the log and wakes when a line is
# appended; with nothing appended it times out.
. "$(dirname "$0")/lib.sh"
fs_start
new_job p "model=quadratic:10"
expect "quiet" "$("$FSIO" poll "$M/jobs/p/events" 300)" TIMEOUT
"$FSIO" poll "$M/jobs/p/events" 10000 >"$T/poll" &
poller=$!
sleep 0.3
expect "start" "$(w "$M/jobs/p/ctl" "step 3")" OK
wait $poller
expect "woken" "$(cat "$T/poll")" READY
fs_finish
