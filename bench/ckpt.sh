#!/bin/sh
# ckpt.sh BUILD - checkpoint save/restore throughput against the disk
#   BENCH_CKPT_DIR     where the files go, comma separated (default
#                      /dev/shm and BUILD/bench-ckpt: memory, and the disk
#                      under the build tree); each needs 2x the largest size
#   BENCH_CKPT_SIZES   default 1G,4G
#   BENCH_CKPT_REPS    runs per figure, median (default 3)
#   BENCH_DEVICES      devices (default cpu), comma separated
set -e
build=${1:-build}
dirs=${BENCH_CKPT_DIR:-/dev/shm,$build/bench-ckpt}
for dir in $(echo "$dirs" | tr , ' '); do
	mkdir -p "$dir"
	echo "# gpuopt bench_ckpt, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores," \
		"$(df -h "$dir" | awk 'NR == 2 { print $1 }')"
	for dev in $(echo "${BENCH_DEVICES:-cpu}" | tr , ' '); do
		"$build/bin/bench_ckpt" -d "$dev" -D "$dir" \
			-s "${BENCH_CKPT_SIZES:-1G,4G}" -r "${BENCH_CKPT_REPS:-3}"
	done
done
