#!/bin/sh
# Job names are one namespace: mkdir of a name another user's job has is
# EEXIST for anyone, root too, and adopts nothing: the job keeps its owner.
# (mkdir -p treats an existing directory as success: the kernel answers
# EEXIST from its own lookup and coreutils accepts any directory, so
# gpuoptfs.8 tells scripts to use plain mkdir.)
. "$(dirname "$0")/lib.sh"
need_root
fs_start
as_nobody()
{
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
expect "nobody's nightly" "$(as_nobody "$FSIO" mkdir "$M/jobs/nightly")" OK
expect "root's mkdir" "$("$FSIO" mkdir "$M/jobs/nightly")" EEXIST
expect "a second user's mkdir" "$(setpriv --reuid=daemon --regid=daemon \
	--clear-groups "$FSIO" mkdir "$M/jobs/nightly")" EEXIST
expect "owner" "$(stat -c %U "$M/jobs/nightly")" nobody
expect "still one job" "$(ls "$M/jobs" | grep -c nightly)" 1
fs_finish
