#!/bin/sh
# Bad config writes fail with their errno, say why in error and error_log,
# and change nothing, even when other words of the write were good.
. "$(dirname "$0")/lib.sh"
fs_start
new_job c "optimizer=adam lr=0.01 model=external:w:4x4 max_steps=50"
cp "$M/jobs/c/config" "$T/before"

bad()
{
	expect "$1" "$(w "$M/jobs/c/config" "$1")" "$2"
	[ -s "$M/jobs/c/error" ] || fail "$1: error is empty"
	grep -qF "$(cat "$M/jobs/c/error")" "$M/error_log" ||
		fail "$1: not in error_log"
	cmp -s "$T/before" "$M/jobs/c/config" || fail "$1: config changed"
}

bad "lr=0.5 nosuchkey=1" EINVAL
bad "lr=abc" EINVAL
bad "max_steps=12x" EINVAL
bad "lr=-1" EINVAL
bad "betas=0.9,1.5" EINVAL
bad "max_steps=0" EINVAL
bad "momentum=0.9" EINVAL
bad "optimizer=adamax" EINVAL
bad "device=nosuchdevice" EINVAL
bad "device=cpu:99" ENODEV
bad "model=external:w:0x4" EINVAL
bad "model=external:w:99999999999999999999" EINVAL
bad "model=external:w:65536x65536" EINVAL
bad "model=external:w:4,w:4" EINVAL
bad "model=external:index:4" EINVAL
bad "model=quadratic:0" EINVAL
bad "model=cubic:3" EINVAL
bad "lr" EINVAL
grep -qx 'lr=0.01' "$M/jobs/c/config" || fail "lr changed"
# a good write after all that works
expect "good" "$(w "$M/jobs/c/config" "lr=0.02")" OK
grep -qx 'lr=0.02' "$M/jobs/c/config" || fail "lr did not change"
fs_finish
