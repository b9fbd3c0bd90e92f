#!/bin/sh
# run-fs.sh BUILD [TEST...] - run the filesystem tests (tests/fs/*.sh, or
# the TESTs named) against real FUSE mounts of BUILD/bin/gpuoptfs; report
# each, fail loudly.
# A test exiting 77 is skipped (it says why). Needs /dev/fuse and
# fusermount3; most tests need root (mounting with allow_other, setpriv).
# Each test has GPUOPT_FS_TIMEOUT seconds (120; make check-train gives its
# training runs more).
build=${1:-build}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/.." && pwd)
only="$*"
for t in $only; do
	[ -f "$t" ] || { echo "run-fs.sh: no test $t" >&2; exit 1; }
done
case $build in
/*) ;;
*) build=$top/$build ;;
esac
out=$build/tests/fs
mkdir -p "$out" || exit 1

export GPUOPTFS="$build/bin/gpuoptfs" FSIO="$out/fsio" EXTSTEP="$out/extstep"
[ -x "$GPUOPTFS" ] || { echo "run-fs.sh: no $GPUOPTFS" >&2; exit 1; }

# the drivers' own leaks, in a SANITIZE=1 build, are not ours
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}

# The helpers link the library the way the build made it (sanitizers too).
san=
if readelf -d "$build/lib/libgpuopt.so" 2>/dev/null | grep -q asan; then
	san="-fsanitize=address,undefined $build/tests/unit/keep_drivers.o"
fi
cc -std=gnu11 -O2 -Wall -Werror -pthread -o "$FSIO" "$top/tests/fs/fsio.c" ||
	{ echo "run-fs.sh: cannot build fsio" >&2; exit 1; }
cc -std=gnu11 -O2 -Wall -Werror $san -I"$top/libgpuopt/include" \
	-o "$EXTSTEP" "$top/tests/fs/extstep.c" -L"$build/lib" -lgpuopt \
	-Wl,-rpath,"$build/lib" ||
	{ echo "run-fs.sh: cannot build extstep" >&2; exit 1; }

. "$top/tests/tally.sh"
for t in ${only:-"$top"/tests/fs/*.sh}; do
	name=$(basename "$t" .sh)
	[ "$name" = lib ] && continue
	log=$out/$name.log
	if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "SKIP: no /dev/fuse or fusermount3" >"$log"
		rc=77
	else
		timeout -k 5 "${GPUOPT_FS_TIMEOUT:-120}" sh "$t" >"$log" 2>&1
		rc=$?
	fi
	tally "$name" $rc "$log"
done
tally_end "fs tests"
