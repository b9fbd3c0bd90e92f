#!/bin/sh
# ctl.sh BUILD - what reading a job's stat costs the running job: a fresh
# gpuoptfs on a temporary mountpoint with its own state directory (always
# unmounted at exit), then bench_ctl against it.
#   BENCH_DEVICES       devices (default cpu), comma separated
#   BENCH_CTL_READERS   reader threads per window kind (default 1,4)
#   BENCH_CTL_WINDOW    seconds a window (default 2)
#   BENCH_CTL_ROUNDS    rounds of windows, median (default 5)
#   BENCH_CTL_FLAGS     more bench_ctl options (-n N, -t STEP_US, -f RATE)
#   GPUOPT_CPU_THREADS  reaches the daemon: the cpu device's threads (1
#                       leaves the readers a core on a small machine)
# Needs /dev/fuse and fusermount3.
set -u
build=${1:-build}
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "# bench_ctl: no /dev/fuse or fusermount3: skipped"
	exit 0
fi
T=$(mktemp -d /tmp/gpuopt-bench-ctl.XXXXXX) || exit 1
M=$T/mnt
mkdir "$M"
FS_PID=
BENCH_PID=

cleanup()
{
	if [ -n "$BENCH_PID" ]; then
		kill -TERM "$BENCH_PID" 2>/dev/null
		wait "$BENCH_PID" 2>/dev/null
	fi
	if [ -n "$FS_PID" ]; then
		kill -TERM "$FS_PID" 2>/dev/null
		i=0
		while kill -0 "$FS_PID" 2>/dev/null && [ "$i" -lt 100 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		kill -KILL "$FS_PID" 2>/dev/null
		wait "$FS_PID" 2>/dev/null
	fi
	if mountpoint -q "$M" 2>/dev/null || ! ls "$M" >/dev/null 2>&1; then
		umount -l "$M" 2>/dev/null || fusermount3 -u -z "$M" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$build/bin/gpuoptfs" -f --state-dir "$T/state" "$M" 2>>"$T/daemon.log" &
FS_PID=$!
i=0
while ! mountpoint -q "$M"; do
	if ! kill -0 "$FS_PID" 2>/dev/null || [ "$i" -ge 500 ]; then
		echo "bench_ctl: gpuoptfs did not mount" >&2
		cat "$T/daemon.log" >&2
		exit 1
	fi
	i=$((i + 1))
	sleep 0.02
done

# in the background, so that a signal runs the traps at once
# shellcheck disable=SC2086 # BENCH_CTL_FLAGS is words
"$build/bin/bench_ctl" -m "$M" -p "$FS_PID" -d "${BENCH_DEVICES:-cpu}" \
	-k "${BENCH_CTL_READERS:-1,4}" -w "${BENCH_CTL_WINDOW:-2}" \
	-r "${BENCH_CTL_ROUNDS:-5}" ${BENCH_CTL_FLAGS:-} &
BENCH_PID=$!
wait "$BENCH_PID"
rc=$?
BENCH_PID=
if [ $rc -ne 0 ]; then
	echo "--- daemon log (tail):" >&2
	tail -n 20 "$T/daemon.log" >&2
fi
exit $rc
