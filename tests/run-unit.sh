#!/bin/sh
# run-unit.sh BUILD TEST... - run the unit test programs, report, fail loudly
#   VALGRIND=1   run each under valgrind (leaks are errors), cpu device only
# A program exiting 77 is skipped (it says why).
build=$1
shift
mkdir -p "$build/tests/logs"
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-600}
# the GPU drivers probed at gpo_ctx_new() (llvmpipe, PoCL) leak a little
# of their own; LeakSanitizer in the SANITIZE=1 build is told so
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
. "$(dirname "$0")/tally.sh"

# lsan_tracer_crashed LOG: true when the program failed only because
# LeakSanitizer crashed (its tracer caught a signal), no Check assertion
# having failed
lsan_tracer_crashed() {
	grep -q '^Tracer caught signal' "$1" &&
	grep -q 'LeakSanitizer has encountered a fatal error' "$1" &&
	! grep -q ':F:' "$1"
}
for t in "$@"; do
	name=$(basename "$t")
	log=$build/tests/logs/$name.log
	if [ -n "$VALGRIND" ]; then
		GPUOPT_TEST_DEVICES=${GPUOPT_TEST_DEVICES:-cpu} \
		GPUOPT_TEST_REQUIRE= GPUOPT_TEST_QUICK=1 CK_FORK=no \
		valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
			--suppressions=tests/valgrind.supp \
			--error-exitcode=99 "$t" >"$log" 2>&1
	else
		"$t" >"$log" 2>&1
	fi
	rc=$?
	note=
	if [ $rc -ne 0 ] && lsan_tracer_crashed "$log"; then
		# LeakSanitizer's own stop-the-world tracer sometimes dies
		# at exit while the drivers' threads wind down
		# (google/sanitizers#1353): no check failed and nothing was
		# reported. Run the program once more; the rerun must pass.
		mv "$log" "$log.tracer-crash"
		"$t" >"$log" 2>&1
		rc=$?
		note=" (rerun: LeakSanitizer's tracer crashed in the first run; $log.tracer-crash)"
	fi
	tally "$name" $rc "$log" "$note"
done
tally_end
