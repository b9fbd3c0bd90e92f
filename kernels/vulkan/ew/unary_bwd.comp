// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * unary_bwd.comp - unary_bwd: dx[off_y + i] (+)= alpha * dy[off_b + i] *
 * f'(x[off_a + i]) for i < n, all three contiguous (abi/ew.h),
 * grid-stride over i. DROPOUT does not read x (buffer 0 may be dy
 * again).
 */
#version 450
#include "common.glsl"
#include "abi/ew.h"
#include "group.glsl"
#include "tensor.glsl"
#include "ew.glsl"

FLOAT_IN(0, x);
FLOAT_IN(1, dy);
FLOAT_BUF(2, dx);

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	for (uint i = grid_first(grp, args.n); i < args.n;
	     i = grid_next(i, args.n, args.groups)) {
		float r = args.alpha * dy[args.off_b + i];

		if (args.fn == GPO_EW_DROPOUT)
			r = dropout_keep(i) ? r : 0.0;
		else
			r *= ew_unary_dx(args.fn, x[args.off_a + i]);

		STORE(dx, args.off_y + i, r);
	}
}
