#!/bin/sh
# Two threads reading one open handle of a live file (metrics.prom, stat,
# state) at once, many times, in odd sizes, while a job runs: every read
# succeeds and the daemon lives (the shared snapshot was freed twice).
. "$(dirname "$0")/lib.sh"
need_root
fs_start
new_job r "optimizer=sgd lr=0.01 model=quadratic:64 max_steps=max"
expect "start" "$(w "$M/jobs/r/ctl" start)" OK
for f in metrics.prom stat jobs/r/stat jobs/r/state jobs/r/config; do
	expect "$f as root" "$("$FSIO" seq "$M/$f" r t:200)" OK
	expect "$f as nobody" "$(setpriv --reuid=nobody --regid=nogroup \
		--clear-groups "$FSIO" seq "$M/$f" r t:200)" OK
done
cat "$M/version" >/dev/null || fail "the daemon died"
expect "stop" "$(w "$M/jobs/r/ctl" stop)" OK
fs_finish
