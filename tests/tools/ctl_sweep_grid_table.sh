#!/bin/sh
# sweep: 4 lr x 5 momentum = 20 jobs from a template, at most 4 running
# at once, a line per finished job on stderr, then a 20-row table ranked
# by loss (done jobs first); --json parses; a refused point makes nothing.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v python3 >/dev/null || skip "no python3"
fs_start

ok create base optimizer=sgd model=rosenbrock:50 max_steps=300 log_every=50
ctl sweep lr=0.0001,0.0003,0.001,0.003 momentum=0,0.5,0.9,0.95,0.99 \
	--template base --parallel 4
[ $rc -eq 0 ] || fail "sweep: exit $rc: $err"
echo "$out" >"$T/table"
expect "rows" "$(($(wc -l <"$T/table") - 1))" 20
expect "header" "$(head -n 1 "$T/table" | awk '{ print $1, $2, $3, $4, $5, $6 }')" \
	"JOB LR MOMENTUM STATE STEP LOSS"
expect "jobs" "$(awk 'NR > 1 { print $1 }' "$T/table" | sort -t- -k2n | tr '\n' ' ')" \
	"$(i=0; while [ $i -lt 20 ]; do printf 'base-%d ' $i; i=$((i + 1)); done)"
# the point of base-7 is lr 0.0003 (the first key varies slowest), momentum 0.9
expect "grid" "$(awk '$1 == "base-7" { print $2, $3 }' "$T/table")" "0.0003 0.9"
grep -qx momentum=0.9 "$M/jobs/base-7/config" || fail "base-7's config"
grep -qx lr=0.0003 "$M/jobs/base-7/config" || fail "base-7's lr"
grep -qx model=rosenbrock:50 "$M/jobs/base-7/config" || fail "not the template's"
# ranked: the done jobs first, by loss
awk 'NR > 1 { print $4, $6 }' "$T/table" >"$T/ranked"
awk '$1 != "done" { seen = 1; next }
     seen { print "done after not done"; exit 1 }
     prev != "" && $2 + 0 < prev + 0 { print "not sorted: " prev " " $2; exit 1 }
     { prev = $2 }' "$T/ranked" || fail "ranking: $(cat "$T/table")"
expect "a line per job" "$(echo "$err" | grep -c '^sweep: base-[0-9]* ')" 20
ok sweep lr=0.001,0.01 momentum=0.9 --template base --prefix js -J -q
echo "$out" >"$T/s.json"
python3 -m json.tool "$T/s.json" >/dev/null || fail "--json: $out"
expect "json rows" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["sweep"]))' "$T/s.json")" 2

# a point the daemon refuses: nothing made, nothing run
refused 1 "create bad-1: invalid lr -1" sweep lr=0.1,-1 -t base -P bad
[ -z "$(ls "$M/jobs" | grep '^bad-')" ] || fail "a refused sweep left jobs"
refused 2 "--template NAME is needed" sweep lr=1,2
fs_finish
