#!/bin/sh
# run.sh FUZZER [SECONDS] - run the checkpoint reader's fuzzer (make fuzz)
#
# Seeds: tests/fuzz/corpus (committed) and tests/fuzz/regress (every crash
# found so far). New interesting inputs go to a scratch corpus beside the
# fuzzer binary, not into the tree. A crash is copied into tests/fuzz/regress/
# so that it becomes a regression test (test_ckpt_corrupt replays that
# folder): commit it with the fix.
fuzzer=$1
secs=${2:-180}
work=$(dirname "$fuzzer")/work
mkdir -p "$work/corpus" "$work/artifacts" tests/fuzz/regress
rm -f "$work"/artifacts/*
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-max_len=16384 -print_final_stats=1 -dict=tests/fuzz/ckpt.dict \
	-artifact_prefix="$work/artifacts/" \
	"$work/corpus" tests/fuzz/corpus tests/fuzz/regress
rc=$?
found=$(ls "$work/artifacts" 2>/dev/null)
if [ -n "$found" ]; then
	for f in $found; do
		cp "$work/artifacts/$f" tests/fuzz/regress/
		echo "fuzz: $f copied to tests/fuzz/regress/ (a regression test now)"
	done
	exit 1
fi
[ $rc -eq 0 ] && echo "fuzz: no crash in ${secs}s"
exit $rc
