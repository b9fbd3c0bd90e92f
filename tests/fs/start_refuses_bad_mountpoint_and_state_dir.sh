#!/bin/sh
# At start, with a clear message and exit 1, nothing mounted: a mountpoint
# that is a regular file (it mounted, then every access was EIO); a state
# directory another user owns, or one others may write.
. "$(dirname "$0")/lib.sh"
need_root

# start_fails WHAT WANT-IN-MESSAGE ARGS...: gpuoptfs exits 1 at once
start_fails()
{
	what=$1 want=$2
	shift 2
	timeout 10 "$GPUOPTFS" -f "$@" >"$T/out" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "$what: exit $rc, want 1"
	grep -q "$want" "$T/out" || fail "$what: message: $(cat "$T/out")"
}

touch "$T/file"
start_fails "file mountpoint" "not a directory" --state-dir "$S" "$T/file"
mountpoint -q "$T/file" && fail "a file was mounted on"

mkdir -p "$T/other"
chown nobody "$T/other"
start_fails "foreign state dir" "belongs to uid" --state-dir "$T/other" "$M"
chown root "$T/other"
chmod 0777 "$T/other"
start_fails "world-writable state dir" "writable by others" \
	--state-dir "$T/other" "$M"
! mountpoint -q "$M" || fail "mounted anyway"
chmod 0755 "$T/other"
fs_start
fs_finish
