#!/bin/sh
# run.sh BUILD - the checkpoint tests that need more than one process:
# crash consistency under SIGKILL, a full disk, interop with the safetensors
# package, the inspector's exit codes. Builds their helper program first
# (CC, CKPT_CFLAGS, CKPT_LIBS come from the Makefile's check target).
# Each script exits 0, 77 (skipped: it says why) or fails.
build=${1:-build}
cc=${CC:-cc}
cflags=${CKPT_CFLAGS:--std=gnu11 -O2 -g -pthread -D_GNU_SOURCE -Ilibgpuopt/include -Ilibgpuopt/src}
libs=${CKPT_LIBS:--lOpenCL -lvulkan -luring -ljansson -lm -lpthread}
helper=$build/tests/ckpt_helper
# a SANITIZE=1 build: the drivers' own leaks are not the helper's
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
export LSAN_OPTIONS
mkdir -p "$build/tests"
# shellcheck disable=SC2086
$cc $cflags -o "$helper" tests/ckpt/ckpt_helper.c "$build/lib/libgpuopt.a" \
	$libs || { echo "FAIL  ckpt_helper does not build"; exit 1; }

pass=0 fail=0 skip=0 failed=""
for t in inspect crash fulldisk interop; do
	log=$build/tests/ckpt_$t.log
	sh "tests/ckpt/$t.sh" "$build" >"$log" 2>&1
	rc=$?
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS  ckpt/%s\n' "$t" ;;
	77) skip=$((skip + 1))
	    printf 'SKIP  ckpt/%s: %s\n' "$t" "$(tail -n 1 "$log")" ;;
	*) fail=$((fail + 1)); failed="$failed $t"
	   printf 'FAIL  ckpt/%s (exit %d)\n' "$t" "$rc"
	   sed 's/^/      /' "$log" | tail -n 30 ;;
	esac
done
printf '%d passed, %d failed, %d skipped\n' $pass $fail $skip
[ $fail -eq 0 ] || { echo "FAILED:$failed" >&2; exit 1; }
