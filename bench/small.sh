#!/bin/bash
# small.sh BUILD - issue 14's small steps on the GPU machine, in one call:
# PyTorch's fused AdamW on 10 000 parameters replayed from a CUDA graph
# (plain and after clip_grad_norm_, bench/peer_torch.py), then
# bench_optim -S on the NVIDIA Vulkan and OpenCL devices: AdamW on 10 000
# parameters, plain and clipped, synchronous and queued, in microseconds
# beside that peer; then the same on Vulkan with the recorded steps off
# (GPUOPT_VULKAN_DEBUG=nograph), for the difference they make. Twice,
# interleaved, each round after bench_submit: the driver alone, from an
# empty submission up to the very command buffer of a replayed 10k AdamW
# step (adamw_10k/poll), beside libgpuopt's own step timed in the same
# process (gpuopt_adamw_10k): the difference is libgpuopt's share. Writes
# logs under $OUT.
set -u
build=${1:-build}
out=${OUT:-/tmp/out}
reps=${SMALL_REPS:-1000}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export GPUOPT_CACHE_DIR=${GPUOPT_CACHE_DIR:-$(mktemp -d)}
# as device-run.sh: NVIDIA's OpenCL driver where the image keeps it
if [ ! -s /etc/OpenCL/vendors/nvidia.icd ]; then
	lib=$(ls /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
		/usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
	[ -n "$lib" ] && mkdir -p /etc/OpenCL/vendors && echo "$lib" >/etc/OpenCL/vendors/nvidia.icd
fi

"$build/bin/gpuopt-devices" -v >"$out/devices.txt" 2>&1
nv_cl=$(awk '$2 ~ /^opencl:/ && /NVIDIA/ {print $2; exit}' "$out/devices.txt")
nv_vk=$(awk '$2 ~ /^vulkan:/ && /NVIDIA/ {print $2; exit}' "$out/devices.txt")
echo "NVIDIA devices: vulkan=$nv_vk opencl=$nv_cl"
devs=${nv_vk}${nv_cl:+,$nv_cl}
[ -n "$devs" ] || { echo "small.sh: no NVIDIA device" >&2; exit 1; }

python3 bench/peer_torch.py --device cuda --sizes 10K --many --reps 200 \
	>"$out/peers-small.txt" 2>&1
cat "$out/peers-small.txt"
for round in 1 2; do
	echo "## round $round" | tee -a "$out/small.txt"
	# the floor: the same command buffers through the driver alone
	"$build/bin/bench_submit" 2>&1 | tee -a "$out/small.txt"
	"$build/bin/bench_optim" -S -x -r "$reps" -d "$devs" \
		-p "$out/peers-small.txt" 2>&1 | tee -a "$out/small.txt"
	if [ -n "$nv_vk" ]; then
		echo "## $nv_vk, GPUOPT_VULKAN_DEBUG=nograph"
		GPUOPT_VULKAN_DEBUG=nograph "$build/bin/bench_optim" -S -x \
			-r "$reps" -d "$nv_vk" -p "$out/peers-small.txt" 2>&1 |
			tee -a "$out/small.txt"
	fi
done
