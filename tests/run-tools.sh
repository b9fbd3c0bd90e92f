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
cc -std=gnu11 -O2 -Wall -Werror -o "$FSIO" "$top/tests/fs/fsio.c" ||
	{ echo "run-tools.sh: cannot build fsio" >&2; exit 1; }

pass=0 fail=0 skip=0 failed=""
start=$(date +%s)
for t in "$top"/tests/tools/*.sh; do
	name=$(basename "$t" .sh)
	[ "$name" = lib ] && continue
	log=$out/$name.log
	t0=$(date +%s)
	timeout -k 5 120 sh "$t" >"$log" 2>&1
	rc=$?
	dt=$(($(date +%s) - t0))
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS  %s (%ds)\n' "$name" $dt ;;
	77) skip=$((skip + 1))
	    printf 'SKIP  %s: %s\n' "$name" "$(tail -n 1 "$log")" ;;
	*) fail=$((fail + 1)); failed="$failed $name"
	   printf 'FAIL  %s (exit %d)\n' "$name" "$rc"
	   sed 's/^/      /' "$log" | tail -n 40 ;;
	esac
done
printf '%d passed, %d failed, %d skipped (tools tests, %ds)\n' $pass $fail \
	$skip $(($(date +%s) - start))
[ $fail -eq 0 ] || { echo "FAILED:$failed" >&2; exit 1; }
