#!/bin/sh
# Bad deterministic=, zero=, overlap=, bucket_bytes=, timeout= and device= lists
# fail the config write with a clear error and change nothing: values out
# of gpo_comm's ranges, zero=1 without deterministic=1 or with what
# ZeRO-1 cannot step yet (lamb, a schedule, clip_norm, loss scaling,
# half precision), half parameters over ranks at all, a device list whose length is not ranks (nor 1), an
# empty item, an unknown device (ENODEV) and a disabled one (ENODEV, an
# operator's devices/<i>/enabled: the owner may not use it). Good values
# show in config and stat and outlive a daemon restart (timeout=auto: the daemon's, half its
# watchdog's time); the comm settings change only before the
# first step.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ranks.inc"
need_data

fs_start
new_job c "model=mlp:784x16x10 data=$data batch_size=64 max_steps=3 ranks=2 device=cpu:0"
cp "$M/jobs/c/config" "$T/before"
# bad WORDS ERRNO TEXT: refused with ERRNO, error has TEXT, config as before
bad()
{
	expect "$1" "$(w "$M/jobs/c/config" "$1")" "$2"
	grep -q -- "$3" "$M/jobs/c/error" ||
		fail "$1: error '$(cat "$M/jobs/c/error")' lacks '$3'"
	cmp -s "$T/before" "$M/jobs/c/config" || fail "$1: config changed"
}
# timeout=auto: half the watchdog's time, which stat shows
grep -qx "timeout=auto" "$M/jobs/c/config" || fail "timeout not auto"
max=$(stat_of c timeout)
[ "$max" -ge 1 ] || fail "timeout $max in stat"
bad "deterministic=2" EINVAL "deterministic"
bad "deterministic=yes" EINVAL "deterministic"
bad "zero=-1" EINVAL "zero"
bad "zero=2" EINVAL "zero"
bad "overlap=2" EINVAL "overlap"
bad "overlap=on" EINVAL "overlap"
bad "bucket_bytes=4095" EINVAL "bucket_bytes"
bad "bucket_bytes=4098" EINVAL "multiple of 4"
bad "bucket_bytes=1073741828" EINVAL "bucket_bytes"
bad "bucket_bytes=1e6" EINVAL "bucket_bytes"
bad "timeout=0" EINVAL "timeout"
bad "timeout=$((max + 1))" EINVAL "timeout"
bad "zero=1 deterministic=0" EINVAL "zero=1 needs deterministic=1"
bad "deterministic=0 zero=1" EINVAL "zero=1 needs deterministic=1"
bad "zero=1 optimizer=lamb" EINVAL "lamb"
bad "zero=1 schedule=cosine t_max=10" EINVAL "schedule"
bad "zero=1 warmup_steps=5" EINVAL "warmup"
bad "zero=1 clip_norm=1" EINVAL "clip_norm"
bad "zero=1 loss_scale=dynamic" EINVAL "scale the loss"
bad "zero=1 param_dtype=bf16" EINVAL "f32"
bad "param_dtype=bf16" EINVAL "param_dtype=bf16 trains on one rank only"
bad "param_dtype=f16" EINVAL "param_dtype=f16 trains on one rank only"
bad "zero=1 state_dtype=bf16" EINVAL "f32"
bad "device=cpu:0,cpu:0,cpu:0" EINVAL "3 devices for ranks=2"
bad "ranks=3 device=cpu:0,cpu:0" EINVAL "2 devices for ranks=3"
bad "device=cpu:0,,cpu:0" EINVAL "not a device"
bad "device=cpu:0," EINVAL "not a device"
bad "device=,cpu:0" EINVAL "not a device"
bad "device=cpu:0/cpu:0" EINVAL "not a device"
bad "device=cpu:0,cpu:7" ENODEV "rank 1's 'cpu:7'"
bad "device=nosuch:0,cpu:0" ENODEV "rank 0's 'nosuch:0'"
# a list is one device a rank: not for one process
expect "ranks=1" "$(w "$M/jobs/c/config" "device=cpu:0 ranks=1")" OK
cp "$M/jobs/c/config" "$T/before"
bad "device=cpu:0,cpu:0" EINVAL "2 devices for ranks=1"
expect "ranks=2" "$(w "$M/jobs/c/config" "ranks=2")" OK
cp "$M/jobs/c/config" "$T/before"
# a device an operator disabled: no rank may use it
echo 0 >"$M/devices/0/enabled" || fail "disable cpu:0"
other=$(cat "$M/devices/1/id" 2>/dev/null)
if [ -n "$other" ]; then
	bad "device=$other,cpu:0" ENODEV "rank 1's 'cpu:0'"
fi
echo 1 >"$M/devices/0/enabled" || fail "enable cpu:0"

# good ones
grep -qx "overlap=1" "$M/jobs/c/config" || fail "overlap not 1 by default"
expect "good" "$(w "$M/jobs/c/config" "zero=1 overlap=0 bucket_bytes=65536 timeout=$max device=cpu:0,cpu:0")" OK
for k in zero=1 deterministic=1 overlap=0 bucket_bytes=65536 "timeout=$max" device=cpu:0,cpu:0; do
	grep -qx "$k" "$M/jobs/c/config" || fail "config lacks $k"
done
expect "zero in stat" "$(stat_of c zero)" 1
expect "overlap in stat" "$(stat_of c overlap)" 0
expect "timeout in stat" "$(stat_of c timeout)" "$max"
expect "bucket_bytes in stat" "$(stat_of c bucket_bytes)" 65536
expect "rank_devices before a build" "$(stat_of c rank_devices)" -
# the comm's settings change only before the first step
expect "step" "$(w "$M/jobs/c/ctl" "step 1")" OK
expect "rank_devices" "$(stat_of c rank_devices)" cpu:0,cpu:0
for kv in zero=0 "zero=0 deterministic=0" overlap=1 bucket_bytes=8192 timeout=1 device=cpu:0; do
	expect "$kv after a step" "$(w "$M/jobs/c/config" "$kv")" EBUSY
done
grep -qx "zero=1" "$M/jobs/c/config" || fail "zero changed"
grep -v '^#' "$M/jobs/c/config" >"$T/kept"
fs_finish
# the job's record keeps them all
fs_start
grep -v '^#' "$M/jobs/c/config" >"$T/back"
cmp -s "$T/kept" "$T/back" || fail "config after a restart: $(diff "$T/kept" "$T/back")"
fs_finish
echo PASS
