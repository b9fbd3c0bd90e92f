// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * layernorm.comp - layernorm: each row of x to mean 0 and variance 1 in
 * y, its mean and rstd in stats (abi/layernorm.h). A workgroup per row,
 * rows grp, grp + groups, ...: each invocation takes j = t, t + 256, ...
 * in order and the fixed trees of tensor.glsl join them; the variance is
 * a second pass over x - mean, so nothing cancels.
 */
#version 450
#include "common.glsl"
#include "abi/layernorm.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, x);
layout(set = 0, binding = 1, std430) writeonly buffer y_w1 { float y[]; };
layout(set = 0, binding = 2, std430) writeonly buffer st_w1 { float stats[]; };

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;

	if (grp >= args.groups)
		return;
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		uint xo = args.off_x + r * args.len;
		uint yo = args.off_y + r * args.len;
		float s = 0.0, v = 0.0, mean, rstd;

		for (uint j = t; j < args.len; j += WG_SIZE)
			s += x[xo + j];
		mean = tree_sum(s) / float(args.len);
		for (uint j = t; j < args.len; j += WG_SIZE) {
			float d = x[xo + j] - mean;

			v += d * d;
		}
		rstd = 1.0 / sqrt(tree_sum(v) / float(args.len) + args.eps);
		for (uint j = t; j < args.len; j += WG_SIZE)
			y[yo + j] = (x[xo + j] - mean) * rstd;
		if (t == 0u) {
			stats[args.off_stats + 2u * r] = mean;
			stats[args.off_stats + 2u * r + 1u] = rstd;
		}
	}
}
