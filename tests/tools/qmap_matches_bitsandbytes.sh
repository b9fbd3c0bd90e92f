#!/bin/sh
# qmap_matches_bitsandbytes.sh - the three copies of bitsandbytes' dynamic
# quantization maps (core/quant.c, precision.glsl, precision.cl) are what
# tools/qmap.py derives with torch, float32 bit for bit; and a changed
# value is caught. Skipped (77) without Debian's python3 with torch.
cd "$TOP" || exit 1
py=/usr/bin/python3
$py -c 'import torch' 2>/dev/null || { echo "no torch: skipped"; exit 77; }
$py tools/qmap.py || exit 1
# a copy with one value changed must fail the check
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/libgpuopt/src/core" "$tmp/kernels/vulkan" "$tmp/kernels/opencl"
cp libgpuopt/src/core/quant.c "$tmp/libgpuopt/src/core/"
cp kernels/vulkan/precision.glsl "$tmp/kernels/vulkan/"
sed 's/0x3f7f199a/0x3f7f199b/' kernels/opencl/precision.cl \
	>"$tmp/kernels/opencl/precision.cl"
cmp -s kernels/opencl/precision.cl "$tmp/kernels/opencl/precision.cl" &&
	{ echo "the sed changed nothing"; exit 1; }
(cd "$tmp" && $py "$TOP/tools/qmap.py") && { echo "a bad copy passed"; exit 1; }
exit 0
