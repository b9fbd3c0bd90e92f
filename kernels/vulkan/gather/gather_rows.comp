// SPDX-License-Identifier: MIT
// dtypes: f32 i32
// recorded: yes
/*
 * gather_rows.comp - gather_rows: dst row b = src row idx[b] - row_lo
 * when that is in [0, row_hi - row_lo), else dst row b left as it is
 * (abi/gather.h), src rows @stride apart (overlapping windows when
 * stride < width); grid-stride over the rows * width elements. Words are
 * copied as uint whatever the dtype, so every bit pattern (a NaN's
 * payload included) arrives as it left.
 */
#version 450
#include "common.glsl"
#include "abi/gather.h"
#include "group.glsl"
#include "tensor.glsl"

layout(set = 0, binding = 0, std430) readonly buffer src_u1 { uint src[]; };
INT_IN(1, idx);
layout(set = 0, binding = 2, std430) writeonly buffer dst_u1 { uint dst[]; };

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	for (uint k = grid_first(grp, args.n); k < args.n;
	     k = grid_next(k, args.n, args.groups)) {
		uint b = k / args.width, j = k % args.width;
		int v = idx[args.off_idx + b];
		uint r;

		if (v < 0 || uint(v) < args.row_lo || uint(v) >= args.row_hi)
			continue;
		r = uint(v) - args.row_lo;
		dst[args.off_dst + k] = src[args.off_src + r * args.stride + j];
	}
}
