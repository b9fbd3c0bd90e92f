#!/bin/sh
# ckpt.sh BUILD - checkpoint save/restore throughput against the disk
#   BENCH_CKPT_DIR     where the files go (default BUILD/bench-ckpt: the
#                      disk under the build tree); needs 2x the largest size
#   BENCH_CKPT_SIZES   default 1G,4G
#   BENCH_CKPT_REPS    runs per figure, median (default 3)
#   BENCH_DEVICES      devices (default cpu), comma separated
set -e
build=${1:-build}
dir=${BENCH_CKPT_DIR:-$build/bench-ckpt}
mkdir -p "$dir"
echo "# gpuopt bench_ckpt, $(date -u +%Y-%m-%d), $(uname -n), $(nproc) cores," \
	"$(df -h "$dir" | awk 'NR == 2 { print $1 }')"
for dev in $(echo "${BENCH_DEVICES:-cpu}" | tr , ' '); do
	"$build/bin/bench_ckpt" -d "$dev" -D "$dir" \
		-s "${BENCH_CKPT_SIZES:-1G,4G}" -r "${BENCH_CKPT_REPS:-3}"
done
