// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * layernorm_bwd.comp - layernorm_bwd (abi/layernorm.h), y and stats the
 * forward's outputs:
 *   dx_j (+)= alpha * rstd * (dy_j - mean_k dy_k - y_j * mean_k dy_k y_k)
 * A workgroup per row, rows grp, grp + groups, ...; the row's sums by
 * each invocation in order and then the fixed trees of tensor.glsl.
 */
#version 450
#include "common.glsl"
#include "abi/layernorm.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, y);
FLOAT_IN(1, dy);
FLOAT_IN(2, stats);
FLOAT_BUF(3, dx);

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;

	if (grp >= args.groups)
		return;
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		uint yo = args.off_y + r * args.len;
		uint go = args.off_dy + r * args.len;
		uint xo = args.off_x + r * args.len;
		float scale = args.alpha * stats[args.off_stats + 2u * r + 1u];
		float s = 0.0, sy = 0.0;

		for (uint j = t; j < args.len; j += WG_SIZE) {
			s += dy[go + j];
			sy += dy[go + j] * y[yo + j];
		}
		s = tree_sum(s) / float(args.len);
		sy = tree_sum(sy) / float(args.len);
		for (uint j = t; j < args.len; j += WG_SIZE)
			STORE(dx, xo + j,
			      scale * (dy[go + j] - s - y[yo + j] * sy));
	}
}
