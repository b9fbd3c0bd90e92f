#!/bin/sh
# A job's whole life through the shell alone: mkdir, echo config, start,
# poll stat until done, read params, rmdir.
. "$(dirname "$0")/lib.sh"
fs_start

mkdir "$M/jobs/life" || fail "mkdir"
[ "$(cat "$M/jobs/life/state")" = created ] || fail "a new job is created"
echo "optimizer=adam lr=0.05 model=quadratic:4096 max_steps=300 log_every=100" \
	>"$M/jobs/life/config" || fail "echo config"
grep -qx 'model=quadratic:4096' "$M/jobs/life/config" || fail "config shows the model"
echo start >"$M/jobs/life/ctl" || fail "echo start"
wait_for 30 grep -qx 'state done' "$M/jobs/life/stat" || fail "not done in 30 s"

expect "step" "$(stat_of life step)" 300
expect "device" "$(stat_of life device)" cpu:0
loss=$(stat_of life loss)
awk -v l="$loss" 'BEGIN { exit !(l < 1e-2) }' || fail "loss $loss did not fall"
expect "history rows" "$(wc -l <"$M/jobs/life/history.csv")" 4
expect "history header" "$(head -n 1 "$M/jobs/life/history.csv")" \
	"step,loss,lr,grad_norm,elapsed_s"
expect "params/index" "$(cat "$M/jobs/life/params/index")" \
	"x float32 4096 16384"
expect "params bytes" "$(wc -c <"$M/jobs/life/params/x")" 16384
# quadratic's minimum is x = 1: every parameter got close
od -An -v -f "$M/jobs/life/params/x" |
	awk '{ for (i = 1; i <= NF; i++) if ($i < 0.9 || $i > 1.1) bad++ }
	     END { exit bad > 0 }' || fail "params are not near 1"
grep -q 'state created -> running' "$M/jobs/life/events" || fail "events: start"
grep -q 'state running -> done' "$M/jobs/life/events" || fail "events: done"
[ ! -s "$M/jobs/life/error" ] || fail "error is not empty"

rmdir "$M/jobs/life" || fail "rmdir"
[ ! -e "$M/jobs/life" ] || fail "the job is still there"
fs_finish
