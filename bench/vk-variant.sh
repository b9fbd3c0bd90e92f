#!/bin/bash
# vk-variant.sh NAME OP DTYPE [FILE:SED]... - a variant of one Vulkan
# module for GPUOPT_VULKAN_DEBUG=spv=DIR timing: copies kernels/vulkan
# (the .glsl files and the op's folder) to .gpu/var/NAME/src, applies each
# sed expression SED to its FILE there (relative to that copy, e.g.
# precision.glsl:'s/^\treturn prec_mul(x, r);/\treturn x * r;/'), and
# builds .gpu/var/NAME/OP.DTYPE.spv and .ab.spv with the Makefile's glslc
# flags. A patch that matches nothing fails. Used for the ablations in
# bench/results/issue12-h200-2026-11-29.txt.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 NAME OP DTYPE [FILE:SED]..." >&2; exit 2; }
name=$1 op=$2 dt=$3
shift 3
comp=$(ls kernels/vulkan/*/"$op".comp)
dir=$(basename "$(dirname "$comp")")
v=.gpu/var/$name
src=$v/src
rm -rf "$v"
mkdir -p "$src/$dir"
cp kernels/vulkan/*.glsl "$src/"
cp kernels/vulkan/"$dir"/* "$src/$dir/"
for s in "$@"; do
	f=${s%%:*}
	e=${s#*:}
	cp "$src/$f" "$src/$f.orig"
	sed -i "$e" "$src/$f"
	if cmp -s "$src/$f" "$src/$f.orig"; then
		echo "$0: $f: '$e' changed nothing" >&2
		exit 1
	fi
done
up=$(echo "$dt" | tr a-z A-Z)
half=
if sed -n '1,5s|^// dtypes: *||p' "$comp" | grep -qw f16; then
	half=-DGPO_HALF_VARIANTS
fi
for ab in "" -DGPO_ARGS_BUF; do
	glslc --target-env=vulkan1.1 -O -I"$src" -Ikernels -Ikernels/vulkan \
		-DGPO_DTYPE_"$up" $half $ab \
		-o "$v/$op.$dt${ab:+.ab}.spv" "$src/$dir/$op.comp"
done
echo "$v/$op.$dt.spv"
