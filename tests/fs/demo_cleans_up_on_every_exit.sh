#!/bin/sh
# make run's demo (tools/run-demo.sh) unmounts and stops its daemon on
# every way out: its stdout closed early ("make run | head": SIGPIPE once
# left the demo mounted for good), SIGTERM, SIGHUP.
. "$(dirname "$0")/lib.sh"
need_root
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(dirname "$(dirname "$GPUOPTFS")")
D=$T/demo
mkdir "$D"

# demo_gone: no daemon of the demo left, nothing mounted
demo_gone()
{
	! mountpoint -q "$D" && ! pgrep -f "gpuoptfs -f --state-dir .* $D\$" >/dev/null
}

GPUOPT_DEMO_MNT=$D timeout 60 "$top/tools/run-demo.sh" "$build" | head -n 2 \
	>"$T/head.txt"
wait_for 20 demo_gone || fail "| head: still mounted or running"
expect "head" "$(wc -l <"$T/head.txt")" 2

# (a background job ignores SIGINT, as every & job of a script does)
for sig in TERM HUP; do
	GPUOPT_DEMO_MNT=$D "$top/tools/run-demo.sh" "$build" >"$T/out.txt" 2>&1 &
	demo=$!
	if ! wait_for 30 grep -q 'mkdir ' "$T/out.txt"; then
		kill -KILL $demo
		fail "$sig: the demo did not get going: $(cat "$T/out.txt")"
	fi
	kill -$sig $demo
	wait $demo
	wait_for 20 demo_gone || fail "$sig: still mounted or running"
done
