#!/bin/sh
# run.sh BUILD - the checkpoint tests that need more than one process:
# crash consistency under SIGKILL, a full disk, interop with the safetensors
# package, the inspector's exit codes. Builds their helper program first
# (CC, CKPT_CFLAGS, CKPT_LIBS come from the Makefile's check target).
# Each script exits 0, 77 (skipped: it says why) or fails.
build=${1:-build}
cc=${CC:-cc}
cflags=${CKPT_CFLAGS:--std=gnu11 -O2 -g -pthread -D_GNU_SOURCE -Ilibgpuopt/include -Ilibgpuopt/src}
libs=${CKPT_LIBS:-$(. "$build/build.conf" && echo "$LIB_LIBS")}
helper=$build/tests/ckpt_helper
# a SANITIZE=1 build: the drivers' own leaks are not the helper's
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
export LSAN_OPTIONS
mkdir -p "$build/tests"
# shellcheck disable=SC2086
$cc $cflags -o "$helper" tests/ckpt/ckpt_helper.c "$build/lib/libgpuopt.a" \
	$libs || { echo "FAIL  ckpt_helper does not build"; exit 1; }

. tests/tally.sh
for t in inspect crash fulldisk interop; do
	log=$build/tests/ckpt_$t.log
	sh "tests/ckpt/$t.sh" "$build" >"$log" 2>&1
	tally "ckpt/$t" $? "$log"
done
tally_end
