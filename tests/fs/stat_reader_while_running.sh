#!/bin/sh
# Readers polling stat, events and metrics.prom as fast as they can while
# two jobs run: no read fails, both jobs finish, no step is lost.
. "$(dirname "$0")/lib.sh"
fs_start
new_job r1 "model=rosenbrock:20000 max_steps=2000 log_every=100"
new_job r2 "optimizer=sgd lr=0.001 model=quadratic:20000 max_steps=2000 log_every=1"
reader()
{
	n=0
	while [ ! -e "$T/stop" ]; do
		cat "$M/jobs/r1/stat" "$M/jobs/r2/stat" "$M/jobs/r1/events" \
			"$M/metrics.prom" "$M/jobs/r2/history.csv" >/dev/null ||
			{ echo fail >"$T/readfail"; break; }
		n=$((n + 1))
	done
	echo $n >>"$T/reads"
}
reader &
r1=$!
reader &
r2=$!
expect start "$(w "$M/jobs/r1/ctl" start)" OK
expect start "$(w "$M/jobs/r2/ctl" start)" OK
wait_for 60 grep -qx done "$M/jobs/r1/state" || fail "r1 not done"
wait_for 60 grep -qx done "$M/jobs/r2/state" || fail "r2 not done"
touch "$T/stop"
wait $r1 $r2
[ ! -e "$T/readfail" ] || fail "a read failed"
expect "r1 steps" "$(stat_of r1 step)" 2000
expect "r2 steps" "$(stat_of r2 step)" 2000
expect "r2 rows" "$(($(wc -l <"$M/jobs/r2/history.csv") - 1))" 2000
awk -F, 'NR > 1 && $1 != NR - 1 { exit 1 }' "$M/jobs/r2/history.csv" ||
	fail "history skips a step"
grep -q '^steps 4000$' "$M/stat" || fail "daemon steps"
echo "reads: $(tr '\n' ' ' <"$T/reads")"
fs_finish
