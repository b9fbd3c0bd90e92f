#!/bin/sh
# checkpoint [NAME] saves the job under checkpoints/ (a safetensors file),
# restore NAME brings params and step back; checkpoint_every saves on its
# own and keep_checkpoints prunes; a stopping daemon checkpoints such jobs
# once more; checkpoints outlive the daemon (the job too) and go with
# purge and rmdir.
. "$(dirname "$0")/lib.sh"
fs_start
J=$M/jobs/ck
new_job ck "model=quadratic:500 max_steps=1000 checkpoint_every=10 keep_checkpoints=2"
expect "step 35" "$(w "$J/ctl" "step 35")" OK
expect "auto" "$(ls "$J/checkpoints" | tr '\n' ' ')" \
	"step-0000000020.safetensors step-0000000030.safetensors "
expect "named" "$(w "$J/ctl" "checkpoint best")" OK
cat "$J/params/x" >"$T/p35"
[ "$(head -c 8 "$J/checkpoints/best.safetensors" | od -An -tu8 | tr -d ' ')" -lt \
	"$(stat -c %s "$J/checkpoints/best.safetensors")" ] || fail "not safetensors"
[ "$(dd if="$J/checkpoints/best.safetensors" bs=1 skip=8 count=1 2>/dev/null)" = "{" ] ||
	fail "no JSON header"
expect "step 10" "$(w "$J/ctl" "step 10")" OK
cmp -s "$T/p35" "$J/params/x" && fail "params did not move"
expect "restore" "$(w "$J/ctl" "restore best")" OK
expect "step" "$(stat_of ck step)" 35
expect "state" "$(cat "$J/state")" paused
cmp "$T/p35" "$J/params/x" || fail "params are not those saved"
expect "restore .safetensors" "$(w "$J/ctl" "restore best.safetensors")" OK

expect "missing" "$(w "$J/ctl" "restore nosuch")" ENOENT
expect "slash" "$(w "$J/ctl" "checkpoint a/b")" EINVAL
expect "dots" "$(w "$J/ctl" "restore ../../x")" EINVAL
expect "dot" "$(w "$J/ctl" "checkpoint .x")" EINVAL
expect "no name" "$(w "$J/ctl" "restore")" EINVAL
expect "resume" "$(w "$J/ctl" resume)" OK
expect "running" "$(w "$J/ctl" "restore best")" EBUSY
expect "pause" "$(w "$J/ctl" pause)" OK
expect "not a dir to write" "$("$FSIO" open "$J/checkpoints/best.safetensors" w)" EACCES

# stopping checkpoints it once more; it is all there after a restart
expect "resume" "$(w "$J/ctl" resume)" OK
fs_finish
fs_start
expect "back paused" "$(cat "$J/state")" paused
ls "$J/checkpoints" >"$T/after"
grep -qx best.safetensors "$T/after" || fail "best did not survive: $(cat "$T/after")"
[ "$(grep -c '^step-' "$T/after")" -eq 2 ] || fail "keep_checkpoints: $(cat "$T/after")"
last=$(grep '^step-' "$T/after" | tail -n 1)
[ "$last" != step-0000000030.safetensors ] || fail "no final checkpoint"
expect "restore last" "$(w "$J/ctl" "restore $last")" OK
[ "$(stat_of ck step)" -gt 35 ] || fail "final checkpoint step"
expect "rmdir with checkpoints" "$("$FSIO" rmdir "$J")" ENOTEMPTY
expect purge "$(w "$J/ctl" purge)" OK
expect rmdir "$("$FSIO" rmdir "$J")" OK
[ -z "$(ls -A "$S")" ] || [ -z "$(find "$S" -type f)" ] ||
	fail "rmdir left files: $(find "$S" -type f)"
fs_finish
