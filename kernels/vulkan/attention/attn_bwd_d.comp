// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * attn_bwd_d.comp - attn_bwd_d (abi/attention.h): d_r = sum_c dy_rc y_rc,
 * a row an invocation, c ascending, grid-stride over the bh * t rows.
 *
 * The group's WG_SIZE rows are neighbours in memory: it reads them DC
 * columns at a time, neighbouring invocations taking neighbouring
 * elements, and puts the products in shared memory, where each
 * invocation adds its row's in order. A row walked by one invocation
 * reads a word of a different row per invocation of a subgroup, which
 * took an H200 58 us for the byte GPT's 25 MB of y and dy.
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/attention.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, y);
FLOAT_IN(1, dy);
layout(set = 0, binding = 2, std430) writeonly buffer d_w1 { float d[]; };

#define DC	16u			/* columns a pass */
#define DS	(DC + 1u)		/* a row's slots: rows miss banks */

shared float prod[WG_SIZE * DS];

void main()
{
	uint grp = group_index(), rows = args.bh * args.t, hd = args.hd;
	uint t = gl_LocalInvocationID.x;

	if (grp >= args.groups || rows == 0u || grp > (rows - 1u) / WG_SIZE)
		return;
	/* r0 is the same in the whole group: the barriers are uniform */
	for (uint r0 = grp * WG_SIZE; r0 < rows;
	     r0 = grid_next(r0, rows, args.groups)) {
		uint nr = min(WG_SIZE, rows - r0);
		float s = 0.0;

		for (uint c0 = 0u; c0 < hd; c0 += DC) {
			uint nc = min(DC, hd - c0);

			[[unroll]] for (uint q = 0u; q < DC; q++) {
				uint e = t + q * WG_SIZE, i = e / DC, c = e % DC;

				if (i < nr && c < nc) {
					uint o = (r0 + i) * hd + c0 + c;

					prod[i * DS + c] = dy[args.off_dy + o] *
							   y[args.off_y + o];
				}
			}
			memoryBarrierShared();
			barrier();
			for (uint c = 0u; c < nc; c++)
				s += prod[t * DS + c];
			/* the next pass overwrites prod: all have read it */
			barrier();
		}
		if (t < nr)
			d[args.off_d + r0 + t] = s;
	}
}
