#!/bin/sh
# tools/examples/resume.sh end to end: checkpoint, stop, a new daemon on
# the same state directory, restore, go on; the run ends exactly where an
# uninterrupted one does.
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
expect "lines" "$(awk '{ print $1, $2, $3, $4 }' "$T/out")" \
	"checkpoint at step 400
restored at step 400
done at step 1000"
grep -q "restored before-restart.safetensors at step 400" "$M/jobs/rs/events" ||
	fail "the new job was not restored: $(cat "$M/jobs/rs/events")"
[ -f "$M/jobs/rs/checkpoints/before-restart.safetensors" ] ||
	fail "checkpoint gone"

# the same run without the restart ends with the same loss, to the bit
ok create straight optimizer=adam lr=0.01 model=rosenbrock:1000 max_steps=1000
ok start straight
ok wait -q straight
expect "loss after the restart" "$(awk '/^done/ { print $NF }' "$T/out")" \
	"$(stat_of straight loss)"

kill -TERM "$FS_PID"
wait_for 10 sh -c "! kill -0 $FS_PID 2>/dev/null" || fail "daemon did not stop"
FS_PID=
! mountpoint -q "$M" || fail "still mounted"
! grep -q -e 'Sanitizer' -e 'runtime error' "$T/daemon.log" ||
	fail "sanitizer report in the daemon log"
