// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * accuracy.comp - accuracy: y[off_y + r] = 1 if the row's first maximum
 * is at its label, else 0 (abi/loss.h; NaN counts as the largest, as in
 * torch.argmax). A workgroup per row, rows grp, grp + groups, ...; each
 * invocation takes j = t, t + 256, ... in order and a fixed tree joins
 * them.
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
	uint grp = group_index(), t = gl_LocalInvocationID.x;

	if (grp >= args.groups)
		return;
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		uint xo = args.off_x + r * args.len, at = 0xffffffffu;
		float v = -f_inf();
		int l = row_label(r);

		for (uint j = t; j < args.len; j += WG_SIZE) {
			float w = x[xo + j];

			if (arg_before(w, j, v, at)) {
				v = w;
				at = j;
			}
		}
		tree_argmax(v, at);
		if (t == 0u)
			y[args.off_y + r] =
				(l >= 0 && uint(l) == at) ? 1.0 : 0.0;
	}
}
