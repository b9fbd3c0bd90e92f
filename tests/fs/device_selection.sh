#!/bin/sh
# device=best runs on the device the library calls best; device=cpu on
# cpu:0; GPUOPT_DEVICE sets the default; a disabled device takes no new
# job (ENODEV); devices/<i>/ describe each device.
. "$(dirname "$0")/lib.sh"
unset GPUOPT_DEVICE
fs_start
ndev=$(ls "$M/devices" | wc -l)
[ "$ndev" -ge 1 ] || fail "no devices"
for d in "$M"/devices/*; do
	for f in id name backend vendor type uuid driver compute_units \
		coopmat mem_total_bytes mem_used_bytes busy_percent stat \
		enabled; do
		[ -r "$d/$f" ] || fail "$d/$f missing"
	done
	# "none", or the f16 x f16 + f32 sizes of a Vulkan device
	grep -Eqx 'none|(nv|khr):f16\*f16\+f32:[0-9]+x[0-9]+x[0-9]+(,[0-9]+x[0-9]+x[0-9]+)*' \
		"$d/coopmat" || fail "$d/coopmat: $(cat "$d/coopmat")"
	[ "$(cat "$d/coopmat")" = none ] || [ "$(cat "$d/backend")" = vulkan ] ||
		fail "$d/coopmat on a $(cat "$d/backend") device"
	expect "$d index" "$(basename "$d")" "$(ls "$M/devices" | grep -nx "$(basename "$d")" | cut -d: -f1 | awk '{ print $1 - 1 }')"
done
expect "cpu:0" "$(cat "$M/devices/0/id")" cpu:0
new_job best "model=quadratic:256 max_steps=3"
grep -qx 'device=best' "$M/jobs/best/config" || fail "default is best"
expect start "$(w "$M/jobs/best/ctl" start)" OK
wait_for 60 grep -qx done "$M/jobs/best/state" || fail "best: not done: $(cat "$M/jobs/best/error")"
dev=$(stat_of best device)
grep -qx "$dev" "$M"/devices/*/id || fail "best ran on '$dev', not a device"
new_job cpu "model=quadratic:256 max_steps=3 device=cpu"
expect start "$(w "$M/jobs/cpu/ctl" start)" OK
wait_for 10 grep -qx done "$M/jobs/cpu/state" || fail "cpu: not done"
expect "cpu device" "$(stat_of cpu device)" cpu:0
# both jobs' steps when best is the cpu backend too (no GPU here)
want=3
[ "$dev" = cpu:0 ] && want=6
grep -q "^steps $want\$" "$M/devices/0/stat" ||
	fail "devices/0/stat steps: $(grep steps "$M/devices/0/stat"), want $want"
fs_finish

GPUOPT_DEVICE=cpu:0 fs_start
new_job env "model=quadratic:8"
grep -qx 'device=cpu:0' "$M/jobs/env/config" || fail "GPUOPT_DEVICE default"
echo 0 >"$M/devices/0/enabled" || fail "disable"
expect "disabled" "$(w "$M/jobs/env/ctl" start)" ENODEV
grep -q disabled "$M/jobs/env/error" || fail "error does not say disabled"
echo 1 >"$M/devices/0/enabled" || fail "enable"
expect "enabled" "$(w "$M/jobs/env/ctl" start)" OK
fs_finish
