#!/bin/sh
# -o COLUMNS: a bad column is a usage error (exit 2) that names it and
# lists the known ones, printing nothing; good ones pick and order the
# columns; +LIST adds to the defaults; --raw and --noheadings.
. "$(dirname "$0")/lib.sh"
need_fuse
fs_start
ok create c model=quadratic:16 max_steps=10

for cmd in jobs devices pools; do
	refused 2 "$cmd: unknown column 'bogus' (columns: " $cmd -o bogus
	[ -z "$out" ] || fail "$cmd -o bogus printed '$out'"
done
refused 2 "jobs: unknown column 'bogus'" --output bogus jobs
refused 2 "unknown column ''" jobs -o job,,state
refused 2 "sweep: unknown column 'nope'" sweep lr=1,2 -t c -o job,nope
[ ! -e "$M/jobs/c-0" ] || fail "a sweep with a bad column made jobs"

ok jobs -o state,JOB
expect "chosen columns" "$out" "STATE   JOB
created c"
ok jobs -o +model -n
expect "+model" "$(echo "$out" | awk '{ print $1, $NF }')" "c quadratic"
ok jobs --raw -o job,step,device
expect "raw" "$out" "JOB STEP DEVICE
c 0/10 -"
ok devices -rn -o idx,id
expect "devices raw" "$(echo "$out" | head -n 1)" "0 $(cat "$M/devices/0/id")"
fs_finish
