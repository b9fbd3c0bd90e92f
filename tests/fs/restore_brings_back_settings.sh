#!/bin/sh
# restore brings back the checkpoint's hyperparameters and schedule, as
# torch's load_state_dict: config shows the saved ones (whatever was
# configured since), the schedule goes on from its saved state, and the
# steps after it are those of the run never interrupted. A job without a
# schedule gets the saved one; a file saved without one takes the job's
# away. A config write after it changes them again; the job's record
# keeps them over a daemon restart.
. "$(dirname "$0")/lib.sh"
# the lr column of history.csv at step $2 of job $1 (the last such row)
lr_at() { awk -F, -v s="$2" 'NR > 1 && $1 == s { v = $3 } END { print v }' \
	"$M/jobs/$1/history.csv"; }
fs_start
A=$M/jobs/a
new_job a "optimizer=sgd lr=0.01 momentum=0.9 model=quadratic:37 max_steps=100 log_every=1 schedule=cosine t_max=30 eta_min=0"
expect "step 12" "$(w "$A/ctl" "step 12")" OK
expect "checkpoint" "$(w "$A/ctl" "checkpoint mid")" OK
cat "$A/config" >"$T/config12"
grep -qx 'lr=0.01' "$T/config12" || fail "config12: $(cat "$T/config12")"
expect "step 8" "$(w "$A/ctl" "step 8")" OK
cat "$A/params/x" >"$T/p20"
lr13=$(lr_at a 13)
lr20=$(lr_at a 20)
[ -n "$lr13" ] && [ "$lr13" != "$(lr_at a 12)" ] ||
	fail "the schedule does not move the lr: '$lr13'"

# configured otherwise since; the restore brings the saved ones back
expect "lr=0.5" "$(w "$A/config" "lr=0.5 momentum=0")" OK
grep -qx 'lr=0.5' "$A/config" || fail "lr=0.5 not shown"
expect "restore" "$(w "$A/ctl" "restore mid")" OK
diff "$T/config12" "$A/config" >"$T/diff" ||
	fail "config is not the saved one: $(cat "$T/diff")"
expect "step" "$(stat_of a step)" 12
# stat's lr: the one the next step takes, the schedule's at step 13
expect "stat lr" "$(stat_of a lr)" "$lr13"
grep -q 'restored mid.safetensors at step 12' "$A/events" || fail "no event"
expect "step 8 again" "$(w "$A/ctl" "step 8")" OK
cmp "$T/p20" "$A/params/x" || fail "the restored run went elsewhere"
expect "lr 20" "$(lr_at a 20)" "$lr20"

# the record keeps the restored config over a restart
cat "$A/config" >"$T/config20"
fs_finish
fs_start
diff "$T/config20" "$A/config" >"$T/diff" ||
	fail "the record lost the restored config: $(cat "$T/diff")"

# a config write after a restore changes them again, schedule kept:
# with eta_min=0, cosine's lr is proportional to the base lr
expect "restore again" "$(w "$A/ctl" "restore mid")" OK
expect "lr=0.2" "$(w "$A/config" "lr=0.2")" OK
grep -qx 'lr=0.2' "$A/config" || fail "lr=0.2 not shown"
expect "step 1" "$(w "$A/ctl" "step 1")" OK
awk -v a="$(lr_at a 13)" -v b="$lr13" \
	'BEGIN { d = a - 20 * b; exit !(d < 1e-9 && d > -1e-9) }' ||
	fail "lr after lr=0.2: $(lr_at a 13), want 20 x $lr13"

# a job without a schedule, configured otherwise, gets the saved one
B=$M/jobs/b
new_job b "optimizer=sgd lr=0.3 model=quadratic:37 max_steps=100"
grep -qx 'schedule=constant' "$B/config" || fail "b has a schedule"
expect "checkpoint b" "$(w "$B/ctl" "checkpoint plain")" OK
cp "$S/0/a/checkpoints/mid.safetensors" "$S/0/b/checkpoints/" ||
	fail "cp"
expect "restore in b" "$(w "$B/ctl" "restore mid")" OK
sed -n '/^optimizer=/,/^device=/p' "$T/config12" >"$T/want"
sed -n '/^optimizer=/,/^device=/p' "$B/config" >"$T/got"
diff "$T/want" "$T/got" >"$T/diff" ||
	fail "b's settings are not the saved ones: $(cat "$T/diff")"
expect "b stat lr" "$(stat_of b lr)" "$lr13"
expect "b step 8" "$(w "$B/ctl" "step 8")" OK
cmp "$T/p20" "$B/params/x" || fail "b's restored run went elsewhere"

# a file saved without a schedule leaves the job without one
cp "$S/0/b/checkpoints/plain.safetensors" "$S/0/a/checkpoints/" ||
	fail "cp plain"
expect "restore plain" "$(w "$A/ctl" "restore plain")" OK
grep -qx 'schedule=constant' "$A/config" || fail "a kept its schedule"
grep -q '^t_max=' "$A/config" && fail "a kept t_max"
grep -qx 'lr=0.3' "$A/config" || fail "a's lr is not plain's"
grep -qx 'momentum=0' "$A/config" || fail "a's momentum is not plain's"
expect "a step" "$(stat_of a step)" 0
expect "a stat lr" "$(stat_of a lr)" 0.3
# a schedule may be set again: the job is at step 0
expect "schedule again" "$(w "$A/config" "schedule=step step_size=2")" OK

# a refused restore changes nothing
cat "$B/config" >"$T/bconf"
expect "missing" "$(w "$B/ctl" "restore nosuch")" ENOENT
printf 'not a checkpoint' >"$S/0/b/checkpoints/junk.safetensors"
[ "$(w "$B/ctl" "restore junk")" != OK ] || fail "junk restored"
diff "$T/bconf" "$B/config" >/dev/null || fail "a refused restore changed config"
fs_finish
