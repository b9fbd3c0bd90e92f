// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * unary_bwd.comp - unary_bwd: dx[off_y + i] (+)= alpha * dy[off_b + i] *
 * f'(x[off_a + i]) for i < n, all three contiguous (abi/ew.h),
 * grid-stride over i; with GPO_EW_QUADS over quads of i, vec4s (each
 * element as alone: the same bits). DROPOUT does not read x (buffer 0
 * may be dy again).
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/ew.h"
#include "group.glsl"
#include "tensor.glsl"
#include "ew.glsl"

FLOAT_IN(0, x);
FLOAT_IN(1, dy);
FLOAT_BUF(2, dx);
/* GPO_EW_QUADS: four elements a vec4 */
layout(set = 0, binding = 0, std430) readonly buffer x_r4 { vec4 x4[]; };
layout(set = 0, binding = 1, std430) readonly buffer dy_r4 { vec4 dy4[]; };
layout(set = 0, binding = 2, std430) buffer dx_f4 { vec4 dx4[]; };

void quads()
{
	uint nq = args.n / 4u;

	for (uint q = grid_first(group_index(), nq); q < nq;
	     q = grid_next(q, nq, args.groups)) {
		vec4 r = args.alpha * dy4[(args.off_b >> 2) + q], v;

		if (args.fn == GPO_EW_DROPOUT) {
			r = dropout_quad(q, r);
		} else {
			v = x4[(args.off_a >> 2) + q];
			[[unroll]] for (uint k = 0u; k < 4u; k++)
				r[k] *= ew_unary_dx(args.fn, v[k]);
		}
		STORE(dx4, (args.off_y >> 2) + q, r);
	}
}

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	if (FLAG(GPO_EW_QUADS)) {
		quads();
		return;
	}
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
