// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * attn_bwd_d.comp - attn_bwd_d (abi/attention.h): d_r = sum_c dy_rc y_rc,
 * a row an invocation, c ascending, grid-stride over the bh * t rows.
 *
 * OpenCL's kernel stages its group's rows through local memory, reading
 * them coalesced (the byte GPT's 6 launches on an H200: 0.35 to 0.27 ms).
 * The same here was slower, 0.35 to 0.44 ms, also unoptimized (-O0) and
 * without the unrolled loads (bench/results/issue11-h200-2026-11-30.txt,
 * calls 64-65), so this kernel stays as it is.
 */
#version 450
#include "common.glsl"
#include "abi/attention.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, y);
FLOAT_IN(1, dy);
layout(set = 0, binding = 2, std430) writeonly buffer d_w1 { float d[]; };

void main()
{
	uint grp = group_index(), rows = args.bh * args.t;

	if (grp >= args.groups)
		return;
	for (uint r = grid_first(grp, rows); r < rows;
	     r = grid_next(r, rows, args.groups)) {
		float s = 0.0;

		for (uint c = 0u; c < args.hd; c++)
			s += dy[args.off_dy + r * args.hd + c] *
			     y[args.off_y + r * args.hd + c];
		d[args.off_d + r] = s;
	}
}
