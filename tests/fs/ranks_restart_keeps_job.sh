#!/bin/sh
# A running ranks=2 job outlives a daemon restart: SIGTERM ends every
# rank (none is left behind), the new daemon brings the job back paused
# at its last checkpoint with ranks=2 in its config, restoring it on both
# ranks, and resume trains on from there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data
step_of()
{
	awk '$1 == "step" { print $2 }' "$M/jobs/$1/stat"
}

fs_start
new_job r "model=mlp:784x32x10 data=$data batch_size=32 max_steps=max ranks=2 checkpoint_every=10 keep_checkpoints=100"
expect "start" "$(w "$M/jobs/r/ctl" start)" OK
wait_for 30 sh -c "[ \$(awk '\$1==\"step\"{print \$2}' $M/jobs/r/stat) -ge 25 ]" ||
	fail "r did not step: $(cat "$M/jobs/r/error")"
cat "$M/jobs/r/config" >"$T/config"
pids=$(pgrep -f "^[^ ]*gpuoptfs-worker-mpi r " | tr '\n' ' ')
expect "rank processes" "$(echo $pids | wc -w)" 2
fs_kill TERM || fail "SIGTERM"
for p in $pids; do
	! kill -0 "$p" 2>/dev/null || fail "rank $p outlived the daemon"
done
last=$(ls "$S/0/r/checkpoints" | tail -n 1)
want=$(echo "$last" | sed 's/step-0*\([0-9]*\).safetensors/\1/')
[ -n "$want" ] || fail "no checkpoint"

fs_start
diff "$T/config" "$M/jobs/r/config" >/dev/null || fail "config changed"
expect "state" "$(cat "$M/jobs/r/state")" paused
expect "step" "$(step_of r)" "$want"
expect "resume" "$(w "$M/jobs/r/ctl" resume)" OK
wait_for 30 sh -c "[ \$(awk '\$1==\"step\"{print \$2}' $M/jobs/r/stat) -gt $((want + 5)) ]" ||
	fail "r did not go on: $(cat "$M/jobs/r/state") $(cat "$M/jobs/r/error")"
expect "ranks" "$(stat_of r ranks)" 2
expect "rank processes after" "$(pgrep -fc "^[^ ]*gpuoptfs-worker-mpi r ")" 2
expect "stop" "$(w "$M/jobs/r/ctl" stop)" OK
fs_finish
echo PASS
