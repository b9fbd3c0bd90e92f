#!/bin/sh
# tools/examples/resume.sh end to end: checkpoint, a new daemon on the
# same state directory, the job back paused at its checkpoint, go on; the
# run ends exactly where an uninterrupted one does; rm --purge at the end.
. "$(dirname "$0")/lib.sh"
need_fuse
fs_start
echo "$FS_PID" >"$T/pid"

# what GPUOPT_RESTART does here: stop the daemon, start another one on
# the same mountpoint and state directory (systemctl restart elsewhere)
cat >"$T/restart.sh" <<EOS
kill -TERM \$(cat "$T/pid")
i=0
while mountpoint -q "$M"; do
	i=\$((i + 1)); [ \$i -lt 500 ] || exit 1; sleep 0.02
done
"$GPUOPTFS" -f -d --state-dir "$S" "$M" </dev/null >/dev/null \
	2>>"$T/daemon.log" &
echo \$! >"$T/pid"
EOS
GPUOPT_RESTART="sh $T/restart.sh" GPUOPTCTL=$C \
	sh "$TOP/tools/examples/resume.sh" -k -n rs -s 1000 -b 400 \
	>"$T/out" 2>"$T/err" || fail "resume.sh: $(cat "$T/out" "$T/err")"
FS_PID=$(cat "$T/pid")	# the new daemon: cleanup stops it
expect "lines" "$(awk '{ print $1, $2, $3, $4, $5, $6 }' "$T/out")" \
	"checkpoint at step 400 loss $(awk 'NR == 1 { print $6 }' "$T/out")
back at step 400 state paused
done at step 1000 loss $(awk 'NR == 3 { print $6 }' "$T/out")"
grep -q "the daemon restarted: paused at checkpoint before-restart.safetensors, step 400" \
	"$M/jobs/rs/events" ||
	fail "the job did not come back: $(cat "$M/jobs/rs/events")"
grep -q "restored before-restart.safetensors at step 400" "$M/jobs/rs/events" ||
	fail "the job was not restored: $(cat "$M/jobs/rs/events")"
[ -f "$M/jobs/rs/checkpoints/before-restart.safetensors" ] ||
	fail "checkpoint gone"

# the same run without the restart ends with the same loss, to the bit
ok create straight optimizer=adam lr=0.01 model=rosenbrock:1000 max_steps=1000
ok start straight
ok wait -q straight
expect "loss after the restart" "$(awk '/^done/ { print $NF }' "$T/out")" \
	"$(stat_of straight loss)"

# without -k the example removes the job, checkpoints and all
GPUOPT_RESTART="sh $T/restart.sh" GPUOPTCTL=$C \
	sh "$TOP/tools/examples/resume.sh" -n again -s 20 -b 10 \
	>"$T/out2" 2>"$T/err2" || fail "resume.sh -n again: $(cat "$T/out2" "$T/err2")"
FS_PID=$(cat "$T/pid")
expect "again" "$(awk '{ print $1, $2, $3, $4 }' "$T/out2")" \
	"checkpoint at step 10
back at step 10
done at step 20"
[ ! -e "$M/jobs/again" ] || fail "resume.sh kept the job"
# rs's checkpoint (-k) is the one left in the state directory
expect "checkpoints left" "$(find "$S" -name 'before-restart*' | wc -l)" 1

kill -TERM "$FS_PID"
wait_for 10 sh -c "! kill -0 $FS_PID 2>/dev/null" || fail "daemon did not stop"
FS_PID=
! mountpoint -q "$M" || fail "still mounted"
! grep -q -e 'Sanitizer' -e 'runtime error' "$T/daemon.log" ||
	fail "sanitizer report in the daemon log"
