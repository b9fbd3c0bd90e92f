// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * dequantize8.comp - dequantize8 (abi/cast.h): an element per invocation,
 * grid-stride: the map's value of its code times its block's absmax.
 */
#version 450
#include "common.glsl"
#include "abi/cast.h"
#include "group.glsl"
#include "tensor.glsl"
#include "precision.glsl"
#include "cast.glsl"

UINT_BUF(0, codes);
FLOAT_IN(1, absmax);
FLOAT_BUF(2, dst);

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	for (uint i = grid_first(grp, args.n); i < args.n;
	     i = grid_next(i, args.n, args.groups)) {
		uint e = args.off_src + i;
		uint q = (codes[e >> 2] >> ((e & 3u) * 8u)) & 0xffu;

		dst[args.off_dst + i] = dequant8(q,
			absmax[args.off_absmax + i / GPO_CAST_BLOCK],
			CAST_SIGNED);
	}
}
