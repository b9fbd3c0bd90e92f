#!/bin/bash
# run-unit.sh BUILD TEST... - run the unit test programs, report, fail loudly
#   VALGRIND=1   run each under valgrind (leaks are errors), cpu device only
#   GPUOPT_TEST_JOBS=N   programs run at once (default: the CPUs, at most 4);
#                each has its own log, and each is reported as it ends
#   CK_FORK=yes  each check in a process of its own (default no: a program's
#                checks share its process and its devices, as a program
#                using the library does; the drivers start once, not once
#                a check, which on lavapipe is most of the time)
#   GPUOPT_TEST_TIMEOUT=S   a program still running after S seconds (default
#                1800, 3600 under valgrind) is killed and fails
# A program exiting 77 is skipped (it says why).
build=$1
shift
mkdir -p "$build/tests/logs"
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-600}
export CK_FORK=${CK_FORK:-no}
limit=${GPUOPT_TEST_TIMEOUT:-$([ -n "$VALGRIND" ] && echo 3600 || echo 1800)}
# the GPU drivers probed at gpo_ctx_new() (llvmpipe, PoCL) leak a little
# of their own; LeakSanitizer in the SANITIZE=1 build is told so
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
jobs=${GPUOPT_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in
''|*[!0-9]*|0) echo "run-unit.sh: GPUOPT_TEST_JOBS=$jobs is not a count" >&2
	exit 2 ;;
esac
[ -n "${GPUOPT_TEST_JOBS:-}" ] || [ "$jobs" -le 4 ] || jobs=4
. "$(dirname "$0")/tally.sh"

# lsan_tracer_crashed LOG: true when the program failed only because
# LeakSanitizer crashed (its tracer caught a signal), no Check assertion
# having failed
lsan_tracer_crashed() {
	grep -q '^Tracer caught signal' "$1" &&
	grep -q 'LeakSanitizer has encountered a fatal error' "$1" &&
	! grep -q ':F:' "$1"
}

# run_one TEST: run it to its log; its exit status in LOG.rc, a note for
# the report in LOG.note
run_one() {
	local t=$1 log=$build/tests/logs/$(basename "$1").log rc note=
	if [ -n "$VALGRIND" ]; then
		GPUOPT_TEST_DEVICES=${GPUOPT_TEST_DEVICES:-cpu} \
		GPUOPT_TEST_REQUIRE= GPUOPT_TEST_QUICK=1 CK_FORK=no \
		timeout -k 10 "$limit" valgrind -q --leak-check=full \
			--errors-for-leak-kinds=definite,indirect \
			--suppressions=tests/valgrind.supp \
			--error-exitcode=99 "$t" >"$log" 2>&1
	else
		timeout -k 10 "$limit" "$t" >"$log" 2>&1
	fi
	rc=$?
	[ $rc -ne 124 ] && [ $rc -ne 137 ] ||
		echo "run-unit.sh: killed after $limit s (GPUOPT_TEST_TIMEOUT)" >>"$log"
	if [ $rc -ne 0 ] && lsan_tracer_crashed "$log"; then
		# LeakSanitizer's own stop-the-world tracer sometimes dies
		# at exit while the drivers' threads wind down
		# (google/sanitizers#1353): no check failed and nothing was
		# reported. Run the program once more; the rerun must pass.
		mv "$log" "$log.tracer-crash"
		timeout -k 10 "$limit" "$t" >"$log" 2>&1
		rc=$?
		note=" (rerun: LeakSanitizer's tracer crashed in the first run; $log.tracer-crash)"
	fi
	printf '%s' "$note" >"$log.note"
	echo $rc >"$log.rc"
}

# report PID: tally the program that ran as PID
declare -A running
report() {
	local t=${running[$1]} log
	unset "running[$1]"
	log=$build/tests/logs/$(basename "$t").log
	tally "$(basename "$t")" "$(cat "$log.rc" 2>/dev/null || echo 1)" \
		"$log" "$(cat "$log.note" 2>/dev/null)"
	rm -f "$log.rc" "$log.note"
}

for t in "$@"; do
	while [ ${#running[@]} -ge "$jobs" ]; do
		wait -n -p pid "${!running[@]}"
		report "$pid"
	done
	run_one "$t" &
	running[$!]=$t
done
while [ ${#running[@]} -gt 0 ]; do
	wait -n -p pid "${!running[@]}"
	report "$pid"
done
tally_end "unit tests, $jobs at once"
