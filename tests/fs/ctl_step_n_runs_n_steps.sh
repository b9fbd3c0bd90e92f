#!/bin/sh
# "step N" returns once N steps ran and leaves the job paused; resume and
# "step N" again go on from there; max_steps ends it as done.
. "$(dirname "$0")/lib.sh"
fs_start
new_job s "optimizer=sgd lr=0.0001 model=rosenbrock:1000 max_steps=20 log_every=1"
expect "step 7" "$(w "$M/jobs/s/ctl" "step 7")" OK
expect "step" "$(stat_of s step)" 7
expect "state" "$(cat "$M/jobs/s/state")" paused
expect "step 5" "$(w "$M/jobs/s/ctl" "step 5")" OK
expect "step" "$(stat_of s step)" 12
expect "rows" "$(($(wc -l <"$M/jobs/s/history.csv") - 1))" 12
expect "step 100" "$(w "$M/jobs/s/ctl" "step 100")" OK
expect "step" "$(stat_of s step)" 20
expect "state" "$(cat "$M/jobs/s/state")" done
fs_finish
