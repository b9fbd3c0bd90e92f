#!/bin/sh
# A job's worker runs as the job's owner, with no_new_privs and no
# capabilities: nobody's job as nobody, root's job as root without any.
# Its checkpoints are written as the owner; the daemon still lists, reads
# and removes them.
. "$(dirname "$0")/lib.sh"
need_root
command -v setpriv >/dev/null || skip "no setpriv"
fs_start
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
uid=$(id -u nobody)
gid=$(getent group nogroup | cut -d: -f3)

expect "mkdir" "$(as_nobody "$FSIO" mkdir "$M/jobs/theirs")" OK
expect "config" "$(as_nobody "$FSIO" write "$M/jobs/theirs/config" \
	"model=quadratic:16 max_steps=max")" OK
expect "start" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" start)" OK
pid=$(stat_of theirs worker_pid)
[ "${pid:-0}" -gt 0 ] || fail "no worker"
st=/proc/$pid/status
expect "Uid" "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$st")" \
	"$uid $uid $uid $uid"
expect "Gid" "$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "$st")" \
	"$gid $gid $gid $gid"
expect "Groups" "$(awk '/^Groups:/ { print $2 }' "$st")" "$gid"
expect "NoNewPrivs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")" 1
expect "CapEff" "$(awk '/^CapEff:/ { print $2 }' "$st")" 0000000000000000
expect "CapPrm" "$(awk '/^CapPrm:/ { print $2 }' "$st")" 0000000000000000
expect "CapAmb" "$(awk '/^CapAmb:/ { print $2 }' "$st")" \
	0000000000000000
expect "pause" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" pause)" OK
expect "checkpoint" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" "checkpoint keep")" OK
f=$(find "$S" -name keep.safetensors)
[ -n "$f" ] || fail "no checkpoint file"
expect "file owner" "$(stat -c %u "$f")" "$uid"
as_nobody cat "$M/jobs/theirs/checkpoints/keep.safetensors" | cmp -s - "$f" ||
	fail "checkpoints/ does not show the file"
expect "restore" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" "restore keep")" OK
# nobody cannot reach the state directory on disk
as_nobody ls "$(dirname "$f")" >/dev/null 2>&1 && fail "nobody lists $f's dir"
expect "stop" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" stop)" OK
expect "rmdir" "$(as_nobody "$FSIO" rmdir "$M/jobs/theirs")" ENOTEMPTY
expect "purge" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" purge)" OK
expect "rmdir" "$(as_nobody "$FSIO" rmdir "$M/jobs/theirs")" OK
[ ! -e "$f" ] || fail "rmdir left $f"
kill -0 "$pid" 2>/dev/null && fail "the worker outlived its job"

new_job mine "model=quadratic:16 max_steps=max"
expect "start root" "$(w "$M/jobs/mine/ctl" start)" OK
st=/proc/$(stat_of mine worker_pid)/status
expect "root Uid" "$(awk '/^Uid:/ { print $2 }' "$st")" 0
expect "root CapEff" "$(awk '/^CapEff:/ { print $2 }' "$st")" 0000000000000000
expect "root NoNewPrivs" "$(awk '/^NoNewPrivs:/ { print $2 }' "$st")" 1
expect "stop root" "$(w "$M/jobs/mine/ctl" stop)" OK
fs_finish
echo PASS
