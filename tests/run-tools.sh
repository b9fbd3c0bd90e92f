#!/bin/sh
# run-tools.sh BUILD - run the tools' tests (tests/tools/*.sh): gpuoptctl
# against real mounts of BUILD/bin/gpuoptfs, the example scripts, `make
# install`, the udev rules and the service unit. Report each, fail loudly.
# A test exiting 77 is skipped (it says why).
build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
case $build in
/*) ;;
*) build=$top/$build ;;
esac
out=$build/tests/tools
mkdir -p "$out" || exit 1

export TOP="$top" BUILD="$build" GPUOPTFS="$build/bin/gpuoptfs" \
	GPUOPTCTL="$build/bin/gpuoptctl" FSIO="$out/fsio"
for b in "$GPUOPTFS" "$GPUOPTCTL"; do
	[ -x "$b" ] || { echo "run-tools.sh: no $b" >&2; exit 1; }
done
cc -std=gnu11 -O2 -Wall -Werror -pthread -o "$FSIO" "$top/tests/fs/fsio.c" ||
	{ echo "run-tools.sh: cannot build fsio" >&2; exit 1; }

. "$top/tests/tally.sh"
for t in "$top"/tests/tools/*.sh; do
	name=$(basename "$t" .sh)
	[ "$name" = lib ] && continue
	log=$out/$name.log
	t0=$(date +%s)
	timeout -k 5 120 sh "$t" >"$log" 2>&1
	rc=$?
	tally "$name" $rc "$log" " ($(($(date +%s) - t0))s)"
done
tally_end "tools tests"
