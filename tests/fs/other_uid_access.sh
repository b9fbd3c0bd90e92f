#!/bin/sh
# Another uid (nobody) cannot write a job it does not own nor read its
# params or grad, but reads its state and stat; root-only files refuse it;
# it may make and drive a job of its own, which root may also drive.
. "$(dirname "$0")/lib.sh"
need_root
command -v setpriv >/dev/null || skip "no setpriv"
fs_start
new_job mine "model=external:w:8"
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}

expect "write config" "$(as_nobody "$FSIO" write "$M/jobs/mine/config" lr=1)" EACCES
expect "write ctl" "$(as_nobody "$FSIO" write "$M/jobs/mine/ctl" start)" EACCES
expect "open params" "$(as_nobody "$FSIO" open "$M/jobs/mine/params/w" r)" EACCES
expect "open index" "$(as_nobody "$FSIO" open "$M/jobs/mine/params/index" r)" EACCES
expect "open grad" "$(as_nobody "$FSIO" open "$M/jobs/mine/grad" r)" EACCES
expect "rmdir" "$(as_nobody "$FSIO" rmdir "$M/jobs/mine")" EPERM
as_nobody ls "$M/jobs/mine/checkpoints" >/dev/null 2>&1 &&
	fail "nobody lists checkpoints"
as_nobody ls "$M/jobs/mine/params" >/dev/null 2>&1 && fail "nobody lists params"
as_nobody cat "$M/jobs/mine/state" >/dev/null || fail "cannot read state"
as_nobody grep -q '^step 0$' "$M/jobs/mine/stat" || fail "cannot read stat"
expect "state" "$(cat "$M/jobs/mine/state")" created
grep -qx 'lr=0.001' "$M/jobs/mine/config" || fail "config changed"

expect "enabled" "$(as_nobody "$FSIO" write "$M/devices/0/enabled" 0)" EACCES
expect "pool max" "$(as_nobody "$FSIO" write "$M/pools/0/max" 1000)" EACCES
expect "pool trim" "$(as_nobody "$FSIO" write "$M/pools/0/trim" 1)" EACCES
expect "ctl" "$(as_nobody "$FSIO" write "$M/ctl" rescan)" EACCES
expect "enabled" "$(cat "$M/devices/0/enabled")" 1

expect "own job" "$(as_nobody "$FSIO" mkdir "$M/jobs/theirs")" OK
expect "owner" "$(stat -c %U "$M/jobs/theirs")" nobody
expect "own config" "$(as_nobody "$FSIO" write "$M/jobs/theirs/config" \
	"model=quadratic:16 max_steps=3")" OK
expect "own start" "$(as_nobody "$FSIO" write "$M/jobs/theirs/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/theirs/state" || fail "not done"
grep -q "uid=$(id -u nobody) ctl start" "$M/jobs/theirs/events" ||
	fail "events do not name nobody"
as_nobody cat "$M/jobs/theirs/params/x" >/dev/null || fail "own params"
expect "root resets it" "$(w "$M/jobs/theirs/ctl" reset)" OK
expect "own rmdir" "$(as_nobody "$FSIO" rmdir "$M/jobs/theirs")" OK
fs_finish
