#!/bin/sh
# tools/examples/sweep.sh end to end: parallel jobs, a table, the lowest
# loss named best, a diverging lr failed and left out, the jobs removed.
. "$(dirname "$0")/lib.sh"
need_fuse
fs_start
sweep=$TOP/tools/examples/sweep.sh

sh "$sweep" -s 1500 0.001 0.01 0.1 >"$T/out" 2>"$T/err" ||
	fail "sweep: $(cat "$T/out" "$T/err")"
expect "rows" "$(awk 'NR > 1 && NF == 4 { print $1, $2, $3 }' "$T/out")" \
	"0.001 done 1500
0.01 done 1500
0.1 done 1500"
best=$(awk 'NR > 1 && NF == 4 && (b == "" || $4 + 0 < m) { m = $4 + 0; b = $1; l = $4 }
	    END { print "best lr=" b " loss=" l }' "$T/out")
expect "best" "$(tail -n 1 "$T/out")" "$best"
expect "jobs removed" "$(ls "$M/jobs")" ""

# sgd at lr 1 diverges: failed, not ranked; -k keeps the jobs
sh "$sweep" -k -p sgd -o sgd -m rosenbrock:100 -s 300 0.0001 1 >"$T/out" \
	2>"$T/err" || fail "sweep sgd: $(cat "$T/out" "$T/err")"
expect "failed row" "$(awk '$1 == "1" { print $2 }' "$T/out")" failed
expect "best sgd" "$(tail -n 1 "$T/out" | cut -d' ' -f2)" "lr=0.0001"
expect "kept" "$(ls "$M/jobs" | tr '\n' ' ')" "sgd-0 sgd-1 "
grep -q "diverged" "$M/jobs/sgd-1/error" || fail "no reason for the failure"
fs_finish
