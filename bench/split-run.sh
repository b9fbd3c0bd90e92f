#!/bin/bash
# split-run.sh [BIN] - one GPU call for the kernels built per parameter
# dtype (2026-11-28): the op and LAMB tests on the NVIDIA devices, then
# bench_optim at 256M beside torch's AdamW measured in the same call,
# twice (the driver's first compile of a module runs slow in that process
# only), and A/B rows of the Vulkan 8-bit kernels through
# GPUOPT_VULKAN_DEBUG=spv=DIR for each DIR in $SPV_AB (modules of earlier
# commits, built here with glslc). BIN holds stripped copies of
# gpuopt-devices, bench_optim, test_ops and test_lamb_half (the build
# folder is too large to travel), .gpu/lib the libsubunit.so.0 the tests
# need (not on that machine). Logs under $OUT.
set -u
b=${1:-.gpu/b}
out=${OUT:-/tmp/out}
mkdir -p "$out"
export GPUOPT_CACHE_DIR=$(mktemp -d)
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -s /etc/OpenCL/vendors/nvidia.icd ]; then
	lib=$(ls /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
		/usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
	[ -n "$lib" ] && mkdir -p /etc/OpenCL/vendors && echo "$lib" >/etc/OpenCL/vendors/nvidia.icd
fi
"$b/gpuopt-devices" -v >"$out/devices.txt" 2>&1
cat "$out/devices.txt"
nv_cl=$(awk '$2 ~ /^opencl:/ && /NVIDIA/ {print $2; exit}' "$out/devices.txt")
nv_vk=$(awk '$2 ~ /^vulkan:/ && /NVIDIA/ {print $2; exit}' "$out/devices.txt")
devs=${nv_vk}${nv_cl:+,$nv_cl}
[ -n "$devs" ] || { echo "split-run.sh: no NVIDIA device" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem \
	--format=csv 2>&1 | tee -a "$out/devices.txt"

# never PoCL or llvmpipe there (PoCL aborts on that machine)
export CK_DEFAULT_TIMEOUT=600
GPUOPT_TEST_DEVICES=cpu,$devs GPUOPT_TEST_REQUIRE=opencl,vulkan \
	GPUOPT_TEST_OPS=adam8,rmsprop8,adagrad8,lion8,lamb_prep,lamb_apply,lamb_trust,quantize8,dequantize8 \
	"$b/test_ops" >"$out/tests.txt" 2>&1
GPUOPT_TEST_DEVICES=cpu,$devs GPUOPT_TEST_REQUIRE=opencl,vulkan \
	"$b/test_lamb_half" >>"$out/tests.txt" 2>&1
grep -E "Checks|:F:|:E:" "$out/tests.txt"

python3 bench/peer_torch.py --device cuda --sizes 256M >"$out/peers.txt" 2>&1
cases=${SPLIT_CASES:-adamw,lamb,lamb_bf16p,adamw_u8s,rmsprop_u8s,lion_u8s,adamw_bf16p_u8s,adamw_bf16sr_u8s}
for r in 1 2; do
	echo "## main, run $r" | tee -a "$out/bench.txt"
	"$b/bench_optim" -d "$devs" -s 256M -c "$cases" -p "$out/peers.txt" \
		2>&1 | tee -a "$out/bench.txt"
done
u8=${SPLIT_AB_CASES:-adamw_u8s,rmsprop_u8s,lion_u8s}
for d in ${SPV_AB:-}; do
	for r in 1 2; do
		echo "## $d, run $r" | tee -a "$out/bench.txt"
		GPUOPT_VULKAN_DEBUG=spv=$d "$b/bench_optim" -d "$nv_vk" \
			-s 256M -c "$u8" 2>&1 | tee -a "$out/bench.txt"
	done
done
