// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * embed_bwd.comp - embed_bwd: dw row v (+)= the sum of the dy rows b
 * whose index names v, b ascending (abi/gather.h). A workgroup per table
 * row (v = group, group + groups, ...) and an invocation per column, a
 * stretch of WG_SIZE columns at a time. The indices pass through shared
 * memory WG_SIZE at a time and every invocation walks them in order: no
 * atomics, the same bits on every launch.
 */
#version 450
#include "common.glsl"
#include "abi/gather.h"
#include "group.glsl"
#include "tensor.glsl"

INT_IN(0, idx);
FLOAT_IN(1, dy);
FLOAT_BUF(2, dw);

shared int ids[WG_SIZE];

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;

	if (grp >= args.groups)
		return;
	for (uint v = grp; v < args.row_hi;
	     v = row_next(v, args.row_hi, args.groups)) {
		/* j - t: the stretch's first column, the same for all */
		for (uint j = t; j - t < args.width; j += WG_SIZE) {
			uint go = args.off_src + j, w = args.width;
			float acc = 0.0;

			for (uint b0 = 0u; b0 < args.rows; b0 += WG_SIZE) {
				uint cnt = min(args.rows - b0, WG_SIZE);

				/* nobody still reads the last chunk */
				group_sync();
				if (t < cnt)
					ids[t] = idx[args.off_idx + b0 + t];
				group_sync();
				if (j >= args.width)
					continue;
				for (uint k = 0u; k < cnt; k++)
					if (ids[k] == int(v))
						acc += dy[go + (b0 + k) * w];
			}
			if (j < args.width)
				STORE(dw, args.off_dst + v * args.width + j, acc);
		}
	}
}
