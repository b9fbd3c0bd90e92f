#!/bin/sh
# rescan: with nothing changed every device, index and job stays; a device
# that vanished stays listed, disabled for good, and the jobs on it fail
# with ENODEV while the others go on; a device that comes back is new.
# No GPU can be unplugged here: the daemon's Vulkan loader reads the ICD
# file of lavapipe (Mesa's Vulkan on the CPU) from a copy, and moving the
# copy away makes the next probe find no Vulkan device, as an unplugged
# GPU would.
. "$(dirname "$0")/lib.sh"
need_fuse
built vulkan || skip "libgpuopt was built without vulkan (BACKENDS)"
icd=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -n 1)
# CI (GPUOPT_TEST_REQUIRE=...vulkan...) must run it, not skip it
lost()
{
	case ${GPUOPT_TEST_REQUIRE-} in
	*vulkan*) fail "$1 (GPUOPT_TEST_REQUIRE=$GPUOPT_TEST_REQUIRE)" ;;
	esac
	skip "$1"
}
[ -n "$icd" ] || lost "no lavapipe ICD (mesa-vulkan-drivers)"
cp "$icd" "$T/icd.json"
VK_ICD_FILENAMES=$T/icd.json fs_start
vi=
for d in "$M"/devices/*; do
	[ "$(cat "$d/id")" = vulkan:0 ] && vi=${d##*/}
done
[ -n "$vi" ] || lost "the daemon finds no Vulkan device"
ids() { cat "$M"/devices/*/id | tr '\n' ' '; }
before=$(ids)
n=$(ls "$M/devices" | wc -l)

ok create vk model=quadratic:4096 max_steps=max device=vulkan:0
ok create cpu model=quadratic:4096 max_steps=max device=cpu
ok create ext model=external:w:4 device=vulkan:0
grad() { printf '\000\000\200\077\000\000\200\077\000\000\200\077\000\000\200\077' \
		>"$M/jobs/ext/grad"; }
grad || fail "ext step"
ok start vk
ok start cpu
wait_for 20 stepped vk 0 || fail "vk does not step"
wait_for 10 stepped cpu 0 || fail "cpu does not step"

# nothing changed: all stays, all goes on
ok rescan
expect "same devices" "$(ids)" "$before"
s=$(stat_of vk step)
wait_for 10 stepped vk "$s" || fail "vk stopped after a rescan"
grad || fail "ext after a rescan"

# the Vulkan device goes
mv "$T/icd.json" "$T/icd.off"
ok rescan
wait_for 10 state_is vk failed || fail "vk: $(cat "$M/jobs/vk/state")"
grep -q "device vulkan:0 (.*) is gone (ENODEV)" "$M/jobs/vk/error" ||
	fail "vk error: $(cat "$M/jobs/vk/error")"
grep -q "failed at step .*is gone (ENODEV)" "$M/jobs/vk/events" ||
	fail "vk events"
s=$(stat_of cpu step)
wait_for 10 stepped cpu "$s" || fail "cpu stopped"
state_is cpu running || fail "cpu: $(cat "$M/jobs/cpu/state")"
grad 2>/dev/null && fail "a gradient for a gone device was taken"
grep -q "is gone (ENODEV)" "$M/jobs/ext/error" ||
	fail "ext error: $(cat "$M/jobs/ext/error")"
expect "still listed" "$(ids)" "$before"
expect "disabled" "$(cat "$M/devices/$vi/enabled")" 0
expect "enable a gone device" "$(w "$M/devices/$vi/enabled" 1)" ENODEV
refused 1 "create late: device vulkan:0 is gone" \
	create late model=quadratic:8 max_steps=5 device=vulkan:0
[ ! -e "$M/jobs/late" ] || fail "late made"
ok devices
expect "devices row" "$(echo "$out" | awk -v i="$vi" '
	NR == 1 { c = index($0, " EN ") + 1 }
	$1 == i { e = substr($0, c, 5); gsub(/ /, "", e); print $2, e }')" \
	"vulkan:0 gone"

# it comes back: a new device, the next index and id
mv "$T/icd.off" "$T/icd.json"
ok rescan
expect "devices" "$(ls "$M/devices" | wc -l)" $((n + 1))
expect "new id" "$(cat "$M/devices/$n/id") $(cat "$M/devices/$n/enabled")" \
	"vulkan:1 1"
expect "old one" "$(cat "$M/devices/$vi/id") $(cat "$M/devices/$vi/enabled")" \
	"vulkan:0 0"
ok create back model=quadratic:8 max_steps=5 device=vulkan:1
ok start back
ok wait back
expect "back on" "$(stat_of back device)" vulkan:1
ok stop cpu
fs_finish
