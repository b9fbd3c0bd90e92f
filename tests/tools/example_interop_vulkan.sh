#!/bin/sh
# libgpuopt/examples/interop_vulkan.c on lavapipe (Mesa's Vulkan on the
# CPU): its own VkDevice adopted and its VkBuffers stepped in place, then
# its memory shared by fd with gpuopt's own device (-x); each time the
# final parameters are the same bytes as the same steps through host
# buffers (-c), the loss falls, nothing goes to stderr.
. "$(dirname "$0")/lib.sh"
built vulkan || skip "libgpuopt was built without vulkan (BACKENDS)"
EX=$BUILD/bin/interop_vulkan
[ -x "$EX" ] || fail "no $EX"
# CI (GPUOPT_TEST_REQUIRE=...vulkan...) must run it, not skip it
missing()
{
	case ${GPUOPT_TEST_REQUIRE-} in
	*vulkan*) fail "$1 (GPUOPT_TEST_REQUIRE=$GPUOPT_TEST_REQUIRE)" ;;
	esac
	skip "$1"
}
icd=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -n 1)
[ -n "$icd" ] || missing "no lavapipe ICD (mesa-vulkan-drivers)"
# lavapipe alone: device 0 for the example and for gpuopt
export VK_ICD_FILENAMES=$icd

for mode in "" -x; do
	"$EX" -d 0 -n 3001 -s 40 -c $mode >"$T/out" 2>"$T/err" ||
		fail "interop_vulkan $mode: exit $?: $(cat "$T/out" "$T/err")"
	[ ! -s "$T/err" ] || fail "interop_vulkan $mode: stderr $(cat "$T/err")"
	cat "$T/out"
	grep -q '^same bytes: yes$' "$T/out" ||
		fail "interop_vulkan $mode: not the same bytes"
	case $mode in
	-x) grep -q '^interop: memory shared by fd with vulkan:' "$T/out" ;;
	*) grep -q '^interop: adopted as vulkan:[0-9]* (adopted' "$T/out" ;;
	esac || fail "interop_vulkan $mode: not the way asked"
	awk '/^loss: / { exit !($4 < 0.8 * $2) }' "$T/out" ||
		fail "interop_vulkan $mode: the loss did not fall"
	grep -q '^host copies: [0-9.]* us a step' "$T/out" ||
		fail "interop_vulkan $mode: no timing of the host copies"
done
echo "ok: adopted and fd-shared steps are the host path's bytes"
