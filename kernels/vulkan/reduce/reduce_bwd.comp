// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * reduce_bwd.comp - reduce_bwd: for every element (o, r, i) of x
 * [outer, len, inner], grid-stride over the n of them (abi/reduce.h):
 *   SUM  dx(o, r, i) (+)= alpha * dy(o, i)
 *   MAX  dx(o, r, i) (+)= r == idx(o, i) ? alpha * dy(o, i) : 0
 */
#version 450
#include "common.glsl"
#include "abi/reduce.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, dy);
INT_IN(1, idx);
FLOAT_BUF(2, dx);

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	for (uint k = grid_first(grp, args.n); k < args.n;
	     k = grid_next(k, args.n, args.groups)) {
		uint i = k % args.inner, q = k / args.inner;
		uint r = q % args.len, o = q / args.len;
		uint out_i = o * args.inner + i;
		float g = args.alpha * dy[args.off_y + out_i];

		if (args.fn == GPO_RED_MAX &&
		    idx[args.off_idx + out_i] != int(r))
			g = 0.0;
		STORE(dx, args.off_x + k, g);
	}
}
