#!/bin/sh
# history.csv gets a last row when a job ends (done, stopped) at a step
# log_every did not log, with the values stat shows; never a row twice.
. "$(dirname "$0")/lib.sh"
steps() { awk -F, 'NR > 1 { printf "%s ", $1 }' "$M/jobs/$1/history.csv"; }
last() { tail -n 1 "$M/jobs/$1/history.csv" | cut -d, -f"$2"; }
fs_start

new_job d "model=quadratic:50 max_steps=25 log_every=10"
expect start "$(w "$M/jobs/d/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/d/state" || fail "d not done"
expect "done rows" "$(steps d)" "10 20 25 "
expect "done loss" "$(last d 2)" "$(stat_of d loss)"
expect "done lr" "$(last d 3)" "$(stat_of d lr)"

new_job e "model=quadratic:50 max_steps=20 log_every=10"
expect start "$(w "$M/jobs/e/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/e/state" || fail "e not done"
expect "no second row" "$(steps e)" "10 20 "

new_job s "model=rosenbrock:100 max_steps=1000 log_every=50"
expect "step 7" "$(w "$M/jobs/s/ctl" "step 7")" OK
expect "paused: no row" "$(steps s)" ""
expect stop "$(w "$M/jobs/s/ctl" stop)" OK
expect "stopped rows" "$(steps s)" "7 "
expect "stopped loss" "$(last s 2)" "$(stat_of s loss)"
# stat shows "-" for a grad_norm nothing measured; history.csv nan
gn=$(stat_of s grad_norm)
[ "$gn" = - ] && gn=nan
expect "stopped grad_norm" "$(last s 4)" "$gn"

# stopped before any step: nothing to plot
new_job z "model=quadratic:10"
w "$M/jobs/z/ctl" stop >/dev/null
expect "no step, no row" "$(steps z)" ""
fs_finish
