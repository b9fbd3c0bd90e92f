#!/bin/sh
# Hyperparameters change while a job runs and apply from the next step;
# model, device and optimizer change only before the first step (EBUSY).
. "$(dirname "$0")/lib.sh"
fs_start
new_job h "optimizer=sgd lr=0.001 model=quadratic:1000 max_steps=max"
expect "model before start" "$(w "$M/jobs/h/config" model=quadratic:2000)" OK
expect start "$(w "$M/jobs/h/ctl" start)" OK
wait_for 10 sh -c "[ \$(awk '\$1 == \"step\" { print \$2 }' '$M/jobs/h/stat') -gt 10 ]" ||
	fail "no steps"
expect "lr" "$(w "$M/jobs/h/config" "lr=0.002 momentum=0.5")" OK
wait_for 10 grep -qx 'lr 0.002' "$M/jobs/h/stat" || fail "stat lr did not change"
grep -qx 'momentum=0.5' "$M/jobs/h/config" || fail "config momentum"
expect "model" "$(w "$M/jobs/h/config" model=quadratic:10)" EBUSY
expect "device" "$(w "$M/jobs/h/config" device=cpu:0)" EBUSY
expect "optimizer" "$(w "$M/jobs/h/config" optimizer=adam)" EBUSY
grep -q 'before the first step' "$M/jobs/h/error" || fail "error says why"
# the same model again is no change
expect "same model" "$(w "$M/jobs/h/config" "model=quadratic:2000 lr=0.003")" OK
expect stop "$(w "$M/jobs/h/ctl" stop)" OK
expect "model stopped" "$(w "$M/jobs/h/config" model=quadratic:10)" EBUSY
expect reset "$(w "$M/jobs/h/ctl" reset)" OK
expect "model after reset" "$(w "$M/jobs/h/config" "optimizer=adam model=quadratic:10")" OK
expect "params" "$(wc -c <"$M/jobs/h/params/x")" 40
fs_finish
