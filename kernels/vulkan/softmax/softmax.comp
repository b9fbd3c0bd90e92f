// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * softmax.comp - softmax: SOFTMAX or LOG_SOFTMAX of each row of x into y
 * (abi/softmax.h). A workgroup per row, rows grp, grp + groups, ...:
 * the row's max, then the sum of exp(x_j - max), each invocation taking
 * j = t, t + 256, ... in order and a fixed tree joining them. CAUSAL is
 * SOFTMAX of the row's first i + 1 logits scaled by alpha (i = r mod
 * len), zeros after them: x_j for j > i is never read.
 */
#version 450
#include "common.glsl"
#include "abi/softmax.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, x);
layout(set = 0, binding = 1, std430) writeonly buffer y_w1 { float y[]; };

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;

	if (grp >= args.groups)
		return;
	for (uint r = grp; r < args.rows;
	     r = row_next(r, args.rows, args.groups)) {
		uint xo = args.off_x + r * args.len;
		uint yo = args.off_y + r * args.len;
		/* 1 * x is x, bit for bit: alpha only scales CAUSAL */
		bool causal = args.fn == GPO_SM_CAUSAL;
		uint cnt = causal ? r % args.len + 1u : args.len;
		float al = causal ? args.alpha : 1.0;
		float m = -f_inf(), s = 0.0;

		for (uint j = t; j < cnt; j += WG_SIZE)
			m = max_nan(m, al * x[xo + j]);
		m = tree_max(m);
		for (uint j = t; j < cnt; j += WG_SIZE)
			s += exp_acc(al * x[xo + j] - m);
		s = tree_sum(s);
		if (args.fn == GPO_SM_LOG_SOFTMAX) {
			float ls = log_acc(s);

			for (uint j = t; j < args.len; j += WG_SIZE)
				y[yo + j] = x[xo + j] - m - ls;
		} else {
			float inv = 1.0 / s;

			for (uint j = t; j < args.len; j += WG_SIZE)
				y[yo + j] = j < cnt ?
					exp_acc(al * x[xo + j] - m) * inv : 0.0;
		}
	}
}
