#!/bin/sh
# fulldisk.sh BUILD - on a 1 MiB tmpfs, a save that does not fit fails
# with ENOSPC, leaves the previous checkpoint byte for byte, and leaves no
# temporary behind: caught by fallocate, and (-P) by the writes themselves
build=$1
helper=$build/tests/ckpt_helper
[ "$(id -u)" = 0 ] || { echo "needs root to mount a tmpfs"; exit 77; }
mnt=$(mktemp -d)
if ! mount -t tmpfs -o size=1m gpuopt-test "$mnt" 2>/dev/null; then
	rmdir "$mnt"
	echo "mount -t tmpfs is not permitted here"
	exit 77
fi
trap 'umount "$mnt"; rmdir "$mnt"; rm -f "$mnt.old" "$mnt.err"' EXIT
set -e
"$helper" save "$mnt/ck.st" -k sgd -n 20000
cp "$mnt/ck.st" "$mnt.old"
for flags in "" "-P" "-b" "-P -b"; do
	rc=0
	# shellcheck disable=SC2086
	"$helper" save "$mnt/ck.st" -k adamw -n 200000 $flags 2>"$mnt.err" || rc=$?
	cat "$mnt.err"
	[ $rc -eq 1 ] && grep -q 'errno=28 ' "$mnt.err" || {
		echo "save '$flags' on a full disk: exit $rc, not ENOSPC"; exit 1; }
	cmp "$mnt/ck.st" "$mnt.old"
	[ "$(ls -A "$mnt")" = "ck.st" ] || { ls -la "$mnt"; exit 1; }
	"$helper" load "$mnt/ck.st" -k sgd -n 20000
done
rm -f "$mnt.err"
echo "full disk: ENOSPC, old checkpoint intact, nothing left behind"
