// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * attn_bwd_d.comp - attn_bwd_d (abi/attention.h): d_r = sum_c dy_rc y_rc,
 * a row an invocation, c ascending, grid-stride over the bh * t rows.
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
