#!/bin/sh
# A job that fails gets its last step as the last row of history.csv,
# though log_every had not come round to it. The failure: the job's
# Vulkan device (lavapipe, through a copy of its ICD file) vanishes at a
# rescan, as in tests/tools/rescan_lost_device_fails_its_jobs.sh.
. "$(dirname "$0")/lib.sh"
icd=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -n 1)
[ -n "$icd" ] || skip "no lavapipe ICD (mesa-vulkan-drivers)"
cp "$icd" "$T/icd.json"
VK_ICD_FILENAMES=$T/icd.json fs_start
grep -qx vulkan:0 "$M"/devices/*/id || skip "the daemon finds no Vulkan device"
new_job vk "model=quadratic:256 max_steps=max log_every=1000000000 device=vulkan:0"
expect start "$(w "$M/jobs/vk/ctl" start)" OK
wait_for 20 sh -c '[ "$(awk "\$1 == \"step\" { print \$2 }" "$1")" -gt 2 ]' \
	- "$M/jobs/vk/stat" || fail "vk does not step"
expect "no row yet" "$(wc -l <"$M/jobs/vk/history.csv")" 1
mv "$T/icd.json" "$T/icd.off"
expect rescan "$(w "$M/ctl" rescan)" OK
wait_for 10 grep -qx failed "$M/jobs/vk/state" || fail "vk: $(cat "$M/jobs/vk/state")"
expect "rows" "$(wc -l <"$M/jobs/vk/history.csv")" 2
row=$(tail -n 1 "$M/jobs/vk/history.csv")
expect "row step" "${row%%,*}" "$(stat_of vk step)"
expect "row loss" "$(echo "$row" | cut -d, -f2)" "$(stat_of vk loss)"
fs_finish
