#!/bin/sh
# A daemon restart (SIGTERM, then a new daemon on the same state
# directory) keeps every job: owner, config, state, events, history and
# checkpoints. A running job comes back paused at its last checkpoint and
# resume continues from its step; autostart=1 resumes by itself; a kill -9
# loses nothing written before it; rmdir with checkpoints is ENOTEMPTY
# until purge; a corrupt record is skipped with a message.
. "$(dirname "$0")/lib.sh"
need_root
fs_start
NB=$(id -u nobody)
chmod 755 "$T"
new_job run "model=quadratic:37 optimizer=sgd lr=0.02 max_steps=max log_every=1 checkpoint_every=5 keep_checkpoints=10"
new_job pau "model=rosenbrock:11 lr=0.003 max_steps=500"
expect "mkdir by nobody" \
	"$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	   "$FSIO" mkdir "$M/jobs/nob")" OK
expect "config by nobody" \
	"$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	   "$FSIO" write "$M/jobs/nob/config" "model=quadratic:5 seed=7")" OK
new_job auto "model=quadratic:9 max_steps=max checkpoint_every=3 autostart=1"
expect "step pau" "$(w "$M/jobs/pau/ctl" "step 7")" OK
expect "start run" "$(w "$M/jobs/run/ctl" start)" OK
expect "start auto" "$(w "$M/jobs/auto/ctl" start)" OK
wait_for 20 sh -c "[ \$(awk '\$1==\"step\"{print \$2}' $M/jobs/run/stat) -ge 23 ]" ||
	fail "run did not step"
for j in run pau nob auto; do
	cat "$M/jobs/$j/config" >"$T/$j.config"
	cat "$M/jobs/$j/events" >"$T/$j.events"
done
cat "$M/jobs/pau/history.csv" >"$T/pau.history"
fs_kill TERM || fail "SIGTERM"
ls "$S/0/run/checkpoints" >"$T/run.ckpts"
last=$(tail -n 1 "$T/run.ckpts")
want=$(echo "$last" | sed 's/step-0*\([0-9]*\).safetensors/\1/')

fs_start
for j in run pau nob auto; do
	[ -d "$M/jobs/$j" ] || fail "job $j is gone after the restart"
	diff "$T/$j.config" "$M/jobs/$j/config" >/dev/null ||
		fail "$j: config changed: $(diff "$T/$j.config" "$M/jobs/$j/config")"
	head -c "$(wc -c <"$T/$j.events")" "$M/jobs/$j/events" |
		cmp -s - "$T/$j.events" || fail "$j: events lost"
done
expect "owner of nob" "$(stat -c %u "$M/jobs/nob")" "$NB"
expect "owner of run" "$(stat -c %u "$M/jobs/run")" 0
expect "state of run" "$(cat "$M/jobs/run/state")" paused
expect "step of run" "$(stat_of run step)" "$want"
expect "state of pau" "$(cat "$M/jobs/pau/state")" created
grep -q "no checkpoint" "$M/jobs/pau/events" || fail "pau: no note in events"
head -c "$(wc -c <"$T/pau.history")" "$M/jobs/pau/history.csv" |
	cmp -s - "$T/pau.history" || fail "pau: history lost"
expect "state of nob" "$(cat "$M/jobs/nob/state")" created
ls "$M/jobs/run/checkpoints" >"$T/run.ckpts2"
diff "$T/run.ckpts" "$T/run.ckpts2" >/dev/null || fail "checkpoints differ"
expect "auto resumed" "$(cat "$M/jobs/auto/state")" running
expect "resume run" "$(w "$M/jobs/run/ctl" resume)" OK
wait_for 20 sh -c "[ \$(awk '\$1==\"step\"{print \$2}' $M/jobs/run/stat) -gt $((want + 3)) ]" ||
	fail "run did not go on"
grep -q "restored $last at step $want" "$M/jobs/run/events" ||
	fail "run: not restored from $last"
expect "pause run" "$(w "$M/jobs/run/ctl" pause)" OK
expect "pause auto" "$(w "$M/jobs/auto/ctl" pause)" OK

# kill -9: what was written before is there after
new_job late "model=quadratic:3 lr=0.125"
expect "ctl stop" "$(w "$M/jobs/pau/ctl" "step 2")" OK
kill -KILL "$FS_PID"
wait "$FS_PID" 2>/dev/null
FS_PID=
umount -l "$M" 2>/dev/null
fs_start
grep -q '^lr=0.125$' "$M/jobs/late/config" || fail "late: config lost on kill -9"
grep -q 'ctl step 2' "$M/jobs/pau/events" || fail "pau: events lost on kill -9"
expect "pau after kill -9" "$(cat "$M/jobs/pau/state")" created

# rmdir: ENOTEMPTY while checkpoints are there, until purge
expect "stop run" "$(w "$M/jobs/run/ctl" stop)" OK
expect "rmdir with checkpoints" "$("$FSIO" rmdir "$M/jobs/run")" ENOTEMPTY
[ -d "$S/0/run/checkpoints" ] || fail "checkpoints went"
expect "purge" "$(w "$M/jobs/run/ctl" purge)" OK
expect "rmdir after purge" "$("$FSIO" rmdir "$M/jobs/run")" OK
[ ! -e "$S/0/run" ] || fail "the record of a removed job stays"
fs_kill TERM || fail "SIGTERM"

# a corrupt record and a foreign one are skipped with a message
printf 'x' >>"$S/0/pau/job"
mkdir -p "$S/0/ghost"
ln -s /etc/passwd "$S/0/ghost/job"
fs_start
[ ! -e "$M/jobs/pau" ] || fail "a corrupt record loaded"
[ ! -e "$M/jobs/ghost" ] || fail "a symlinked record loaded"
grep -q "pau/job.*corrupt" "$M/error_log" || fail "no message: $(cat "$M/error_log")"
grep -q "ghost/job" "$M/error_log" || fail "no message for ghost"
[ -d "$M/jobs/late" ] || fail "the good record did not load"
[ -d "$M/jobs/nob" ] || fail "nobody's job did not load"
fs_finish
