// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * embed_bwd.comp - embed_bwd: dw row v (+)= the sum of the dy rows b
 * whose index names v, b ascending (abi/gather.h). A workgroup per table
 * row (v = group, group + groups, ...) and an invocation per column, a
 * stretch of WG_SIZE columns at a time.
 *
 * The indices go by WG_SIZE at a time: each invocation looks at one and,
 * where it names v, sets its bit in a mask of the chunk in shared memory
 * (atomicOr: the same mask in any order); after one barrier every
 * invocation walks the set bits, lowest first, adding those dy rows. So
 * the walk costs the rows that name v, not the whole chunk, and the sums
 * are in the order of b: no float atomics, the same bits on every launch.
 * Two masks take turns: the one of the last chunk is cleared while this
 * one is walked.
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/gather.h"
#include "group.glsl"
#include "tensor.glsl"

INT_IN(0, idx);
FLOAT_IN(1, dy);
FLOAT_BUF(2, dw);

#define MW	(WG_SIZE / 32u)		/* mask words of a chunk */

shared uint mask[2u * MW];

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x, x = 0u;

	if (grp >= args.groups)
		return;
	if (t < 2u * MW)
		mask[t] = 0u;
	for (uint v = grp; v < args.row_hi;
	     v = row_next(v, args.row_hi, args.groups)) {
		/* j - t: the stretch's first column, the same for all */
		for (uint j = t; j - t < args.width; j += WG_SIZE) {
			uint go = args.off_src + j, w = args.width;
			float acc = 0.0;

			for (uint b0 = 0u; b0 < args.rows; b0 += WG_SIZE) {
				uint m[MW];

				/* mask x is clear: its last walk is over */
				group_sync();
				if (b0 + t < args.rows &&
				    idx[args.off_idx + b0 + t] == int(v))
					atomicOr(mask[x * MW + t / 32u],
						 1u << (t % 32u));
				group_sync();
				[[unroll]] for (uint q = 0u; q < MW; q++)
					m[q] = mask[x * MW + q];
				/* all hold their copy: clear mask x ^ 1 */
				if (t < MW)
					mask[(x ^ 1u) * MW + t] = 0u;
				x ^= 1u;
				if (j >= args.width)
					continue;
				[[unroll]] for (uint q = 0u; q < MW; q++) {
					while (m[q] != 0u) {
						uint k = 32u * q +
							 uint(findLSB(m[q]));

						m[q] &= m[q] - 1u;
						acc += dy[go + (b0 + k) * w];
					}
				}
			}
			if (j < args.width)
				STORE(dw, args.off_dst + v * args.width + j, acc);
		}
	}
}
