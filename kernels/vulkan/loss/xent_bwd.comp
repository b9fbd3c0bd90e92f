// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * xent_bwd.comp - xent_bwd: dx_j (+)= alpha * dl * (softmax(x)_j -
 * (j == label)) for each row (abi/loss.h), dl the one float at off_dl. A
 * workgroup per row, rows grp, grp + groups, ...
 */
#version 450
#include "common.glsl"
#include "abi/loss.h"
#include "group.glsl"
#include "tensor.glsl"
#include "loss.glsl"

FLOAT_IN(2, dl);
FLOAT_BUF(3, dx);

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;
	float g;

	if (grp >= args.groups)
		return;
	g = args.alpha * dl[args.off_dl];
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		uint xo = args.off_x + r * args.len;
		uint yo = args.off_y + r * args.len;
		int l = row_label(r);
		float m, s, inv;

		row_lse(r, m, s);
		inv = 1.0 / s;
		for (uint j = t; j < args.len; j += WG_SIZE) {
			float p = exp_acc(x[xo + j] - m) * inv;

			if (int(j) == l)
				p -= 1.0;
			STORE(dx, yo + j, g * p);
		}
	}
}
