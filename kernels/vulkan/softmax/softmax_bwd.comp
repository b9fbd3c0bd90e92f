// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * softmax_bwd.comp - softmax_bwd (abi/softmax.h), y the forward's output:
 *   SOFTMAX      dx_j (+)= alpha * y_j (dy_j - sum_k dy_k y_k)
 *   LOG_SOFTMAX  dx_j (+)= alpha * (dy_j - exp(y_j) sum_k dy_k)
 * A workgroup per row, rows grp, grp + groups, ...; the row's sum by each
 * invocation in order and then a fixed tree.
 */
#version 450
#include "common.glsl"
#include "abi/softmax.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, y);
FLOAT_IN(1, dy);
FLOAT_BUF(2, dx);

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;
	bool lsm = args.fn == GPO_SM_LOG_SOFTMAX;

	if (grp >= args.groups)
		return;
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		uint yo = args.off_x + r * args.len;
		uint go = args.off_dy + r * args.len;
		uint xo = args.off_y + r * args.len;
		float s = 0.0;

		for (uint j = t; j < args.len; j += WG_SIZE)
			s += lsm ? dy[go + j] : dy[go + j] * y[yo + j];
		s = tree_sum(s);
		for (uint j = t; j < args.len; j += WG_SIZE) {
			float v = y[yo + j], g = dy[go + j], d;

			d = lsm ? g - exp_acc(v) * s : v * (g - s);
			STORE(dx, xo + j, args.alpha * d);
		}
	}
}
