#!/bin/sh
# pools/<i>/: the jobs' memory is in their workers, each with its own pool
# on the device; stat adds them up to the daemon's, devices/<i>/
# mem_used_bytes with it, a worker that ends gives its share back, and
# max caps each job's worker built after it (ENOMEM, nothing runs).
. "$(dirname "$0")/lib.sh"
fs_start
cap() { awk -v k="$1" '$1 == k { print $2 }' "$M/pools/0/stat"; }
c0=$(cap capacity_bytes)
u0=$(cap used_bytes)
# 100003 floats: params, grads and adam's two moments, at least 1.6 MB
new_job a "model=quadratic:100003 optimizer=adam device=cpu:0 max_steps=max"
expect "step a" "$(w "$M/jobs/a/ctl" "step 2")" OK
c1=$(cap capacity_bytes)
u1=$(cap used_bytes)
[ $((u1 - u0)) -ge 1600048 ] || fail "used $u0 -> $u1: a's memory not shown"
[ "$c1" -ge "$u1" ] || fail "capacity $c1 below used $u1"
expect "mem_used_bytes" "$(cat "$M/devices/0/mem_used_bytes")" "$c1"
new_job b "model=quadratic:50001 optimizer=adam device=cpu:0 max_steps=max"
expect "step b" "$(w "$M/jobs/b/ctl" "step 1")" OK
u2=$(cap used_bytes)
[ $((u2 - u1)) -ge 800016 ] || fail "used $u1 -> $u2: b's memory not added"
grep -q '^gpuopt_pool_used_bytes{device="cpu:0"} '"$u2"'$' "$M/metrics.prom" ||
	fail "metrics: $(grep pool_used "$M/metrics.prom")"
# rmdir ends b's worker: its memory goes from the sum
rmdir "$M/jobs/b" || fail "rmdir b"
expect "b gone" "$(cap used_bytes)" "$u1"

# a limit below a job's needs: that job's worker cannot get its memory
echo 1048576 >"$M/pools/0/max" || fail "max"
expect "limit shown" "$(cap limit_bytes)" 1048576
new_job big "model=quadratic:100003 optimizer=adam device=cpu:0 max_steps=5"
expect "start big" "$(w "$M/jobs/big/ctl" "step 1")" ENOMEM
expect "big not stepped" "$(stat_of big step)" 0
# a small one fits under it
new_job small "model=quadratic:1001 optimizer=adam device=cpu:0 max_steps=5"
expect "step small" "$(w "$M/jobs/small/ctl" "step 5")" OK
fs_finish
echo PASS
