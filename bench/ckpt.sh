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
sizes=${BENCH_CKPT_SIZES:-1G,4G}
# the largest size in KiB (K, M, G suffixes), for the free-space check
need=$(echo "$sizes" | tr , '\n' | awk '
	{ v = $0 + 0; u = toupper(substr($0, length($0)))
	  v *= u == "G" ? 1048576 : u == "M" ? 1024 : u == "K" ? 1 : 1 / 1024
	  if (v > m) m = v } END { printf "%d\n", m * 2 + 65536 }')
for dir in $(echo "$dirs" | tr , ' '); do
	mkdir -p "$dir" || continue
	free=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
	if [ "${free:-0}" -lt "$need" ]; then
		echo "# $dir: ${free} KiB free, the files need ${need}: skipped"
		continue
	fi
	echo "# gpuopt bench_ckpt, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores," \
		"$(df -h "$dir" | awk 'NR == 2 { print $1 }')"
	for dev in $(echo "${BENCH_DEVICES:-cpu}" | tr , ' '); do
		"$build/bin/bench_ckpt" -d "$dev" -D "$dir" \
			-s "$sizes" -r "${BENCH_CKPT_REPS:-3}"
	done
done
