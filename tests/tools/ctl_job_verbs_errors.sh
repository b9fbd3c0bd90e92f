#!/bin/sh
# create, set, start, pause, resume, stop, reset, step, checkpoint,
# restore, status, logs (-f), rm and rescan against a real mount; every
# refusal prints the daemon's own reason and the errno's words, exits 1
# and changes nothing.
. "$(dirname "$0")/lib.sh"
need_fuse
fs_start

# create: the config as key=value words; refused configs leave no job
ok create v optimizer=sgd lr=0.1 momentum=0.9 model=quadratic:1000 \
	max_steps=max log_every=1
expect "created" "$(cat "$M/jobs/v/state")" created
grep -qx momentum=0.9 "$M/jobs/v/config" || fail "config not written"
refused 1 "create v: File exists" create v
refused 1 "create bad!name: bad job name 'bad!name'" create 'bad!name'
refused 1 "bad job name '.x'" create .x
refused 1 "create w: invalid lr -1: must be >= 0 (Invalid argument)" \
	create w lr=-1 model=quadratic:8
[ ! -e "$M/jobs/w" ] || fail "a refused create left the job"

# set: all or nothing, the reason from error_log
ok set v lr=0.05 momentum=0.5
grep -qx lr=0.05 "$M/jobs/v/config" || fail "set"
refused 1 "set v: invalid lr -1: must be >= 0 (Invalid argument)" \
	set v momentum=0.8 lr=-1
grep -qx momentum=0.5 "$M/jobs/v/config" || fail "a refused set changed"
refused 1 "no job 'nosuch'" set nosuch lr=1
refused 1 "no job 'nosuch'" start nosuch

# step N, then the verbs in and out of turn
ok step v 5
expect "step 5" "$(stat_of v step)" 5
expect "paused" "$(cat "$M/jobs/v/state")" paused
refused 1 "start v: start: the job is paused (Device or resource busy)" \
	start v
refused 1 "the job is paused (Device or resource busy)" pause v
ok resume v
wait_for 10 stepped v 5 || fail "resume: no steps"
refused 1 "the job is running (Device or resource busy)" step v 3
refused 1 "rm v: job 'v' is running: stop it first (Device or resource busy)" \
	rm v
refused 1 "rm v: job 'v' is running: stop it first (Device or resource busy)" \
	rm --purge v
ok pause v
expect "paused" "$(cat "$M/jobs/v/state")" paused

# checkpoints: named, automatic, restore
at=$(stat_of v step)
ok checkpoint v c1
[ -f "$M/jobs/v/checkpoints/c1.safetensors" ] || fail "no c1"
ok checkpoint v
[ -f "$M/jobs/v/checkpoints/step-$(printf '%010d' "$at").safetensors" ] ||
	fail "no automatic checkpoint"
ok step v 4
refused 1 "restore v nosuch: restore: no checkpoint 'nosuch' (No such file or directory)" \
	restore v nosuch
refused 1 "is not a plain name" restore v ../x
ok restore v c1
expect "restored step" "$(stat_of v step)" "$at"

# status: owner, stat, the last error, checkpoints
ok status v
echo "$out" >"$T/status.txt"
no_escapes "$T/status.txt" || fail "escapes in a pipe"
expect "status" "$(echo "$out" | awk '$1 ~ /^(job|owner|state|step|optimizer|device)$/ { print $1, $2 }')" \
	"job v
owner root
state paused
step $at
device cpu:0
optimizer sgd"
expect "status error" "$(echo "$out" | awk '$1 == "error"' | cut -c 16-)" \
	"$(cat "$M/jobs/v/error")"
expect "status checkpoints" "$(echo "$out" | awk '$1 == "checkpoints"')" \
	"checkpoints    c1 step-$(printf '%010d' "$at")"

# logs, and logs -f following until the job goes
ok logs v
echo "$out" | grep -q "uid=0 ctl step 5$" || fail "logs: $out"
echo "$out" | grep -q "ctl restore nosuch: restore: no checkpoint" ||
	fail "logs: no failed verb"
ok logs --history v
expect "history header" "$(echo "$out" | head -n 1)" \
	"step,loss,lr,grad_norm,elapsed_s"
"$C" logs -f v >"$T/follow.txt" 2>&1 &
follow=$!
wait_for 5 grep -q "ctl restore c1" "$T/follow.txt" || fail "logs -f: nothing"
ok set v lr=0.02
wait_for 5 grep -q "config lr=0.02" "$T/follow.txt" ||
	fail "logs -f missed a line"
ok stop v
refused 1 "stop: the job is stopped (Device or resource busy)" stop v
ok reset v
expect "reset" "$(cat "$M/jobs/v/state") $(stat_of v step)" "created 0"
# checkpoints outlive the daemon: rm keeps them and the job, --purge not
n=$(ls "$M/jobs/v/checkpoints" | wc -l)
[ "$n" -gt 0 ] || fail "no checkpoints to keep"
refused 1 "rm v: the job has checkpoints: gpuoptctl rm --purge deletes them with it" \
	rm v
[ -e "$M/jobs/v" ] || fail "rm without --purge removed the job"
expect "checkpoints kept" "$(ls "$M/jobs/v/checkpoints" | wc -l)" "$n"
refused 1 "no job 'nosuch'" rm --purge nosuch
ok rm --purge v
[ ! -e "$M/jobs/v" ] || fail "rm --purge"
wait_for 5 sh -c "! kill -0 $follow 2>/dev/null" ||
	fail "logs -f did not end with the job"
wait "$follow" || fail "logs -f exit"

# another user may look but not touch; rescan is root's
ok create mine model=quadratic:8 max_steps=10
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	as() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	as "$C" status mine >/dev/null || fail "another user cannot read"
	as "$C" start mine 2>"$T/eacces" && fail "another user started it"
	grep -q "start mine: Permission denied" "$T/eacces" ||
		fail "EACCES: $(cat "$T/eacces")"
	as "$C" rescan 2>"$T/eacces" && fail "another user rescanned"
	grep -q "rescan: Permission denied" "$T/eacces" ||
		fail "rescan EACCES: $(cat "$T/eacces")"
fi
ok rescan
ok start mine
ok wait -q mine
refused 1 "create mine: File exists" create mine
fs_finish
