#!/bin/bash
# coop-run.sh BUILD - the tensor-core GEMM on the GPU machine, in one call:
# the devices (coopmat column), the f16 matmul tests on cpu:0 and the
# NVIDIA Vulkan and OpenCL devices with GPUOPT_TEST_REQUIRE_COOPMAT=1 (the
# Vulkan device must list 16x16x16 and the engine must run matmul_coop
# there), then bench_train's sgemm and hgemm rows beside torch's f32 and
# fp16 matmuls measured in the same call. Logs under $OUT.
#   COOP_SIZES   hgemm sizes (default 4096,8192)
set -u
build=${1:-build}
out=${OUT:-/tmp/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUOPT_CACHE_DIR=$(mktemp -d)
# as device-run.sh: NVIDIA's OpenCL driver where the image keeps it
if [ ! -s /etc/OpenCL/vendors/nvidia.icd ]; then
	lib=$(ls /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
		/usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
	[ -n "$lib" ] && mkdir -p /etc/OpenCL/vendors && echo "$lib" >/etc/OpenCL/vendors/nvidia.icd
fi

"$build/bin/gpuopt-devices" -v | tee "$out/coop-devices.txt"
nv_cl=$(awk '$2 ~ /^opencl:/ && /NVIDIA/ {print $2; exit}' "$out/coop-devices.txt")
nv_vk=$(awk '$2 ~ /^vulkan:/ && /NVIDIA/ {print $2; exit}' "$out/coop-devices.txt")
echo "NVIDIA devices: vulkan=$nv_vk opencl=$nv_cl"
# never PoCL or llvmpipe there (PoCL aborts on that machine)
devs=cpu${nv_vk:+,$nv_vk}${nv_cl:+,$nv_cl}

for t in test_matmul_f16 test_ops; do
	GPUOPT_TEST_DEVICES=$devs GPUOPT_TEST_REQUIRE=opencl,vulkan \
		GPUOPT_TEST_REQUIRE_COOPMAT=1 "$build/tests/$t" 2>&1 |
		tee "$out/coop-$t.txt"
done

sizes=${COOP_SIZES:-4096,8192}
python3 bench/train_torch.py --device cuda --sizes 4096 --hsizes "$sizes" \
	--mlps "" >"$out/coop-peers.txt" 2>&1
cat "$out/coop-peers.txt"
"$build/bin/bench_train" -d "${nv_vk}${nv_cl:+,$nv_cl}" -s 4096 -H "$sizes" \
	-m 0 -p "$out/coop-peers.txt" 2>&1 | tee "$out/coop-bench.txt"
