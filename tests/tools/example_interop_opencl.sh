#!/bin/sh
# libgpuopt/examples/interop_opencl.c (the program's own OpenCL context,
# queue, buffers and gradient kernel; gpuopt adopts them and steps AdamW
# on the program's cl_mem with no host copy) on the first OpenCL device
# here (PoCL in CI), from a fresh random start of an odd size: it exits 0,
# the Rosenbrock loss falls, and with -c the final parameters are the
# same bytes as the same steps through host buffers on gpuopt's own
# device for that hardware. Then a size below one work-group.
. "$(dirname "$0")/lib.sh"
EX=$BUILD/bin/interop_opencl
built opencl || skip "libgpuopt was built without opencl"
[ -x "$EX" ] || fail "no $EX"
seed=$(date +%s%N | cut -c 10-18)
echo "seed $seed"
for args in "-n 10001 -s 200 -p 50" "-n 77 -s 100 -p 25"; do
	# shellcheck disable=SC2086
	"$EX" -c -r "$seed" $args >"$T/out" 2>"$T/err"
	rc=$?
	if grep -q "no OpenCL device" "$T/err"; then
		case ",$GPUOPT_TEST_REQUIRE," in
		*,opencl,*) fail "no OpenCL device, and GPUOPT_TEST_REQUIRE names opencl" ;;
		esac
		skip "no OpenCL device"
	fi
	[ $rc -eq 0 ] || fail "interop_opencl $args: exit $rc: $(cat "$T/err") $(cat "$T/out")"
	[ ! -s "$T/err" ] || fail "interop_opencl $args: stderr $(cat "$T/err")"
	cat "$T/out"
	grep -q "driver adopted" "$T/out" || fail "$args: not on an adopted device"
	grep -q "^compare: same bytes" "$T/out" || fail "$args: no 'same bytes'"
	grep -q "^interop: .* us/step" "$T/out" || fail "$args: no interop timing"
	grep -q "^host copies on opencl:[0-9]*: .* us/step" "$T/out" ||
		fail "$args: no host-copy timing"
	first=$(awk '/^step / { print $4; exit }' "$T/out")
	last=$(awk '/^final loss / { print $3 }' "$T/out")
	[ -n "$first" ] && [ -n "$last" ] || fail "$args: no loss lines"
	awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 0 && l < 0.5 * f) }' ||
		fail "$args: the loss did not fall: $first to $last"
	! grep -qi nan "$T/out" || fail "$args: NaN in the output"
	echo "ok: $args: loss $first to $last, same bytes as through host buffers"
done
