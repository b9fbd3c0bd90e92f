#!/bin/sh
# Open handles of files in checkpoints/ hold no fd of the daemon: one user
# keeping more of them open than the daemon may have fds does not make
# root's checkpoint fail with EMFILE.
. "$(dirname "$0")/lib.sh"
need_root
command -v prlimit >/dev/null || skip "no prlimit"
fs_start
# the daemon may have 256 fds; the holder opens 600 files
prlimit --pid "$FS_PID" --nofile=256:256 || fail "prlimit"
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
expect "mkdir" "$(as_nobody "$FSIO" mkdir "$M/jobs/n")" OK
expect "config" "$(as_nobody "$FSIO" write "$M/jobs/n/config" \
	model=quadratic:8)" OK
expect "checkpoint" "$(as_nobody "$FSIO" write "$M/jobs/n/ctl" "checkpoint c")" OK
new_job r "model=quadratic:8"
f=$M/jobs/n/checkpoints/c.safetensors
mkdir "$T/sync" && chmod 777 "$T/sync"
as_nobody "$FSIO" hold "$f" 600 "touch $T/sync/ready; \
	while [ -e $T/sync/ready ] && [ ! -e $T/sync/done ]; do sleep 0.05; done" >"$T/held" &
holder=$!
wait_for 20 test -e "$T/sync/ready" || fail "the holder did not start"
expect "root's checkpoint while 600 are open" \
	"$(w "$M/jobs/r/ctl" checkpoint)" OK
expect "the holder's own checkpoint" "$(as_nobody "$FSIO" write \
	"$M/jobs/n/ctl" "checkpoint d")" OK
touch "$T/sync/done"
wait "$holder"
expect "all opened" "$(cat "$T/held")" opened=600
expect "still readable" "$(head -c 8 "$f" | wc -c)" 8
fs_finish
