#!/bin/bash
# device-run.sh BUILD - everything the GPU machine run needs, in one call:
# the devices, the unit suite on the GPU's Vulkan and OpenCL devices, and
# the benchmark table beside PyTorch's AdamW. Writes logs under $OUT.
#   DEVICE_RUN=tests|bench|all (default all), or xfer: only the transfer
#              and checkpoint benchmarks (bench/xfer.sh, bench/ckpt.sh of
#              4 GiB to /dev/shm and the disk) on the NVIDIA devices
#   BENCH_BEFORE=PATH  also run an earlier build's bench_optim on the same
#                      devices and sizes, in the same call (before/after)
set -u
build=${1:-build}
out=${OUT:-/tmp/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUOPT_CACHE_DIR=$(mktemp -d)
# gpu-env.sh registers NVIDIA's OpenCL driver where it knows the path; on
# other images it lives elsewhere
if [ ! -s /etc/OpenCL/vendors/nvidia.icd ]; then
	lib=$(ls /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
		/usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
	[ -n "$lib" ] && mkdir -p /etc/OpenCL/vendors && echo "$lib" >/etc/OpenCL/vendors/nvidia.icd
fi

"$build/bin/gpuopt-devices" -v | tee "$out/devices.txt"
nv_cl=$(awk '$2 ~ /^opencl:/ && /NVIDIA/ {print $2; exit}' "$out/devices.txt")
nv_vk=$(awk '$2 ~ /^vulkan:/ && /NVIDIA/ {print $2; exit}' "$out/devices.txt")
echo "NVIDIA devices: vulkan=$nv_vk opencl=$nv_cl"
devs=cpu${nv_vk:+,$nv_vk}${nv_cl:+,$nv_cl}

case ${DEVICE_RUN:-all} in
tests|all)
	GPUOPT_TEST_DEVICES=$devs GPUOPT_TEST_REQUIRE=opencl,vulkan \
		bash tests/run-unit.sh "$build" "$build"/tests/test_* 2>&1 |
		tee "$out/unit.txt"
	;;
esac
case ${DEVICE_RUN:-all} in
bench|all)
	sizes=${BENCH_SIZES:-16M,64M,256M}
	python3 bench/peer_torch.py --device cuda --sizes "$sizes" --many \
		>"$out/peers.txt" 2>&1
	cat "$out/peers.txt"
	if [ -n "${BENCH_BEFORE:-}" ]; then
		echo "## before: $BENCH_BEFORE"
		"$BENCH_BEFORE" -d "${nv_vk}${nv_cl:+,$nv_cl}" -s "$sizes" -m -r 50 \
			-p "$out/peers.txt" 2>&1 | tee "$out/bench-before.txt"
		echo "## after: $build/bin/bench_optim"
	fi
	"$build/bin/bench_optim" -d "${nv_vk}${nv_cl:+,$nv_cl}" -s "$sizes" -m -r 50 \
		-p "$out/peers.txt" 2>&1 | tee "$out/bench.txt"
	;;
esac
case ${DEVICE_RUN:-all} in
xfer)
	BENCH_PYTHON=python3 BENCH_FLAGS=-x sh bench/xfer.sh "$build" 2>&1 |
		tee "$out/xfer.txt"
	# Vulkan with its pool unmapped: staging where ReBAR would be used
	[ -n "$nv_vk" ] && GPUOPT_VULKAN_DEBUG=nomap \
		"$build/bin/bench_xfer" -d "$nv_vk" -r 3 2>&1 |
		tee "$out/xfer-vk-nomap.txt"
	BENCH_DEVICES=${nv_vk}${nv_cl:+,$nv_cl} \
		BENCH_CKPT_SIZES=${BENCH_CKPT_SIZES:-4G} \
		BENCH_CKPT_REPS=${BENCH_CKPT_REPS:-2} \
		BENCH_CKPT_DIR=/dev/shm/gpo-bench-ckpt,$build/bench-ckpt \
		sh bench/ckpt.sh "$build" 2>&1 | tee "$out/ckpt.txt"
	rm -rf /dev/shm/gpo-bench-ckpt "$build/bench-ckpt"
	;;
esac
