#!/bin/sh
# Options go anywhere on the line: before the command, after it, after
# the job's name; -- ends them.
. "$(dirname "$0")/lib.sh"
need_fuse
fs_start

ok create o model=quadratic:64 max_steps=200 lr=0.01
ok start o
ok wait o --until done --timeout 20 -q
state_is o done || fail "wait o --until done: $(cat "$M/jobs/o/state")"
ok wait o -q --until done
ok wait --until=done o -q

ok --json jobs
before=$out
ok jobs --json
expect "--json before and after" "$out" "$before"
ok jobs -J
expect "-J" "$out" "$before"
ok -o job,state jobs --noheadings
expect "-o before, -n after" "$(echo "$out" | tr -s ' ')" "o done"
ok jobs -o job,state -n
expect "-o after" "$(echo "$out" | tr -s ' ')" "o done"

# the global -m after the command, and GPUOPT_MNT loses to it
GPUOPT_MNT=$T/none "$C" jobs -m "$M" >/dev/null || fail "jobs -m MOUNT"
GPUOPT_MNT=$T/none "$C" status o --mount "$M" >/dev/null ||
	fail "status NAME --mount MOUNT"
ok logs o --history
expect "logs NAME --history" "$(echo "$out" | head -n 1 | cut -d, -f1-3)" \
	"step,loss,lr"

# -- ends the options: what follows is an operand
refused 2 "usage: gpuoptctl jobs" jobs -- --json
refused 1 "no job '-q'" status -- -q
ok help -- wait
expect "help -- wait" "$(echo "$out" | head -n 1 | cut -d' ' -f1-3)" \
	"usage: gpuoptctl wait"
# a command's option is not another's
refused 2 "wait: bad option '--json'" wait o --json
refused 2 "option '--until' needs a value" wait o --until
fs_finish
