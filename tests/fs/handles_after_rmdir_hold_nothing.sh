#!/bin/sh
# Handles kept open after rmdir: the job's memory goes at once, reads and
# writes through them fail with ENOENT, no checkpoint can be written for
# it (a later job of the name inherits no file), and such removed jobs
# still count against the per-uid job limit until their handles close.
. "$(dirname "$0")/lib.sh"
need_root
fs_start --max-jobs-per-uid 2
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
J=$M/jobs/z
mkdir "$T/w" && chmod 777 "$T/w"
expect "mkdir" "$(as_nobody "$FSIO" mkdir "$J")" OK
expect "config" "$(as_nobody "$FSIO" write "$J/config" \
	"model=quadratic:4000000")" OK
cat "$J/params/x" >/dev/null || fail "read params"
# the job's memory is its worker's: a process of the job's owner
workers()
{
	pgrep -u nobody -f '^[^ ]*gpuoptfs-worker' | wc -l
}
expect "a worker" "$(workers)" 1

# hold ctl, stat and params/x open; rmdir; then use them
out=$(as_nobody "$FSIO" seq "$J/ctl" rw "x:$FSIO rmdir $J" \
	"x:pgrep -u nobody -f '^[^ ]*gpuoptfs-worker' | wc -l >$T/w/workers" \
	"p:0:checkpoint c" r "x:$FSIO mkdir $M/jobs/a" \
	"x:$FSIO mkdir $M/jobs/b" c)
expect "through a removed job's ctl" "$out" "OK
ENOENT
ENOENT
OK
EDQUOT
OK"
expect "rmdir ended the worker at once" "$(cat "$T/w/workers")" 0
wait_for 10 test "$(as_nobody "$FSIO" mkdir "$M/jobs/b")" = OK ||
	fail "the removed job still counts after its handles closed"
[ -e "$S/65534/z" ] && fail "a checkpoint of the removed job was left"
expect "again" "$(as_nobody "$FSIO" mkdir "$J")" EDQUOT
as_nobody "$FSIO" rmdir "$M/jobs/a" >/dev/null
expect "again" "$(as_nobody "$FSIO" mkdir "$J")" OK
expect "no inherited checkpoint" "$(ls "$J/checkpoints" | wc -l)" 0
fs_finish
