#!/bin/sh
# Every writable file takes back what it shows: config, devices/*/enabled,
# pools/*/max, params/<t>; grad reads back the last gradient written.
. "$(dirname "$0")/lib.sh"
fs_start
new_job rt "optimizer=rmsprop momentum=0.5 centered=true model=external:w:5x5"

cat "$M/jobs/rt/config" >"$T/c1"
cat "$T/c1" >"$M/jobs/rt/config" || fail "config back"
cmp "$T/c1" "$M/jobs/rt/config" || fail "config changed on its own text"
grep -qx 'centered=1' "$T/c1" || fail "boolean true is not shown as 1"

for v in 0 1; do
	echo $v >"$M/devices/0/enabled" || fail "enabled=$v"
	expect "enabled" "$(cat "$M/devices/0/enabled")" $v
done
for v in 1048576 max; do
	echo $v >"$M/pools/0/max" || fail "max=$v"
	expect "pool max" "$(cat "$M/pools/0/max")" $v
done
grep -qx 'limit_bytes max' "$M/pools/0/stat" || fail "pool stat limit"
echo 1 >"$M/pools/0/trim" || fail "trim"

"$EXTSTEP" rand 25 3 >"$T/p"
cat "$T/p" >"$M/jobs/rt/params/w" || fail "params"
cmp "$T/p" "$M/jobs/rt/params/w" || fail "params do not read back"
"$EXTSTEP" rand 25 4 >"$T/g"
cat "$T/g" >"$M/jobs/rt/grad" || fail "grad"
cmp "$T/g" "$M/jobs/rt/grad" || fail "grad does not read back"
expect "one step" "$(stat_of rt step)" 1
fs_finish
