// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * binary.comp - binary: y[off_y + i] (+)= alpha * (a[ai(i)] OP b[bi(i)])
 * for i < n, a and b read through their strides (abi/ew.h: a stride of 0
 * broadcasts), grid-stride over i; with GPO_EW_QUADS over quads of i,
 * vec4s.
 */
#version 450
#include "common.glsl"
#include "abi/ew.h"
#include "group.glsl"
#include "tensor.glsl"
#include "ew.glsl"

FLOAT_IN(0, a);
FLOAT_IN(1, b);
FLOAT_BUF(2, y);
/* GPO_EW_QUADS: four elements a vec4 */
layout(set = 0, binding = 0, std430) readonly buffer a_r4 { vec4 a4[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_r4 { vec4 b4[]; };
layout(set = 0, binding = 2, std430) buffer y_f4 { vec4 y4[]; };

float ew_binary(uint fn, float u, float v)
{
	switch (fn) {
	case GPO_EW_ADD:
		return u + v;
	case GPO_EW_SUB:
		return u - v;
	case GPO_EW_MUL:
		return u * v;
	case GPO_EW_DIV:
		return cr_div(u, v);
	}
	return f_nan();
}

/* ADD, SUB, MUL of quads: each element as ew_binary() does it */
vec4 ew_binary4(uint fn, vec4 u, vec4 v)
{
	switch (fn) {
	case GPO_EW_ADD:
		return u + v;
	case GPO_EW_SUB:
		return u - v;
	case GPO_EW_MUL:
		return u * v;
	}
	return vec4(f_nan());
}

void quads()
{
	uint nq = args.n / 4u;

	for (uint q = grid_first(group_index(), nq); q < nq;
	     q = grid_next(q, nq, args.groups)) {
		uint ai = args.off_a + ew_offset(4u * q, args.sa[0], args.sa[1],
						 args.sa[2], args.sa[3]);
		uint bi = args.off_b + ew_offset(4u * q, args.sb[0], args.sb[1],
						 args.sb[2], args.sb[3]);
		vec4 r = ew_binary4(args.fn, EW_QUAD(a, a4, args.sa[3], ai),
				    EW_QUAD(b, b4, args.sb[3], bi));

		STORE(y4, (args.off_y >> 2) + q, ew_scale4(r));
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
		uint ai = args.off_a + ew_offset(i, args.sa[0], args.sa[1],
						 args.sa[2], args.sa[3]);
		uint bi = args.off_b + ew_offset(i, args.sb[0], args.sb[1],
						 args.sb[2], args.sb[3]);
		float r = ew_scale(ew_binary(args.fn, a[ai], b[bi]));

		STORE(y, args.off_y + i, r);
	}
}
