#!/bin/sh
# Names and values with newlines and escape bytes cannot forge lines of
# error_log, events or error, nor put a raw ESC into what root reads:
# they are written as \n and \x1b.
. "$(dirname "$0")/lib.sh"
need_root
fs_start
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
esc=$(printf '\033')
bad=$(printf 'x\033[2J\nTIME uid=0 FORGED')
expect "mkdir" "$(as_nobody "$FSIO" mkdir "$M/jobs/n")" OK
expect "config" "$(as_nobody "$FSIO" write "$M/jobs/n/config" \
	model=quadratic:8)" OK
expect "ctl" "$(as_nobody "$FSIO" write "$M/jobs/n/ctl" "checkpoint $bad")" \
	EINVAL
expect "mkdir of a bad name" "$(as_nobody "$FSIO" mkdir "$M/jobs/$bad")" \
	EINVAL
expect "config value" "$(as_nobody "$FSIO" write "$M/jobs/n/config" \
	"lr=$bad")" EINVAL
for f in error_log jobs/n/events jobs/n/error; do
	grep -q "$esc" "$M/$f" && fail "$f has a raw ESC"
	grep -q '^TIME' "$M/$f" && fail "$f has a forged line"
done
grep -qF 'x\x1b[2J\nTIME' "$M/error_log" || fail "error_log: not escaped"
grep -qF 'x\x1b[2J' "$M/jobs/n/events" || fail "events: not escaped"
expect "error is one line" "$(wc -l <"$M/jobs/n/error")" 1
expect "error_log lines" "$(wc -l <"$M/error_log")" 3
fs_finish
