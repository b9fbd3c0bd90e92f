// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * xent.comp - xent: y[off_y + r] = log sum_j exp(x_j - m) + m - x_label
 * for each row r (abi/loss.h), NaN for a label outside the row. A
 * workgroup per row, rows grp, grp + groups, ...
 */
#version 450
#include "common.glsl"
#include "abi/loss.h"
#include "group.glsl"
#include "tensor.glsl"
#include "loss.glsl"

layout(set = 0, binding = 2, std430) writeonly buffer y_w1 { float y[]; };

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		int l = row_label(r);
		float m, s, v;

		row_lse(r, m, s);
		if (gl_LocalInvocationID.x != 0u)
			continue;
		v = f_nan();
		if (l >= 0)
			v = log_acc(s) + m -
			    x[args.off_x + r * args.len + uint(l)];
		y[args.off_y + r] = v;
	}
}
