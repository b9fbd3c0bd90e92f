// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * binary.comp - binary: y[off_y + i] (+)= alpha * (a[ai(i)] OP b[bi(i)])
 * for i < n, a and b read through their strides (abi/ew.h: a stride of 0
 * broadcasts), grid-stride over i.
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

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
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
