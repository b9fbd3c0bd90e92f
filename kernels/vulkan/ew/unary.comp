// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * unary.comp - unary: y[off_y + i] (+)= alpha * f(x[xi(i)]) for i < n,
 * x read through its strides (abi/ew.h), grid-stride over i; with
 * GPO_EW_QUADS over quads of i, a vec4 each (f of each element as
 * alone: the same bits).
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/ew.h"
#include "group.glsl"
#include "tensor.glsl"
#include "ew.glsl"

FLOAT_IN(0, x);
FLOAT_BUF(1, y);
/* GPO_EW_QUADS: four elements a vec4 */
layout(set = 0, binding = 0, std430) readonly buffer x_r4 { vec4 x4[]; };
layout(set = 0, binding = 1, std430) buffer y_f4 { vec4 y4[]; };

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	if (FLAG(GPO_EW_QUADS)) {
		uint nq = args.n / 4u;

		for (uint q = grid_first(grp, nq); q < nq;
		     q = grid_next(q, nq, args.groups)) {
			uint xi = args.off_a + ew_offset(4u * q, args.sa[0],
							 args.sa[1], args.sa[2],
							 args.sa[3]);
			vec4 v = EW_QUAD(x, x4, args.sa[3], xi), r;

			if (args.fn == GPO_EW_COPY) {
				r = v;
			} else if (args.fn == GPO_EW_DROPOUT) {
				r = dropout_quad(q, v);
			} else {
				[[unroll]] for (uint k = 0u; k < 4u; k++)
					r[k] = ew_unary(args.fn, v[k]);
			}
			STORE(y4, (args.off_y >> 2) + q, ew_scale4(r));
		}
		return;
	}
	for (uint i = grid_first(grp, args.n); i < args.n;
	     i = grid_next(i, args.n, args.groups)) {
		uint xi = args.off_a + ew_offset(i, args.sa[0], args.sa[1],
						 args.sa[2], args.sa[3]);
		float v = x[xi], r;

		/* a select, not x * 0: a dropped inf or NaN is 0 too */
		if (args.fn == GPO_EW_DROPOUT)
			r = dropout_keep(i) ? v : 0.0;
		else
			r = ew_unary(args.fn, v);
		r = ew_scale(r);

		STORE(y, args.off_y + i, r);
	}
}
