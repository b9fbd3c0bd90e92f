// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * layernorm.comp - layernorm: each row of x to mean 0 and variance 1 in
 * y, its mean and rstd in stats (abi/layernorm.h). A team of GPO_LN_TEAM
 * invocations a row, GPO_LN_ROWS rows a workgroup, blocks of rows grp,
 * grp + groups, ...: invocation l of a team takes j = l, l + GPO_LN_TEAM,
 * ... in order and tensor.glsl's part_sum() joins them in a fixed tree;
 * the variance is a second pass over x - mean, so nothing cancels.
 */
#version 450
#include "common.glsl"
#include "abi/layernorm.h"
#include "group.glsl"
#include "tensor.glsl"
#include "layernorm/layernorm.glsl"

FLOAT_IN(0, x);
layout(set = 0, binding = 1, std430) writeonly buffer y_w1 { float y[]; };
layout(set = 0, binding = 2, std430) writeonly buffer st_w1 { float stats[]; };

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;
	uint l = t % GPO_LN_TEAM, nb = ln_blocks(args.rows);

	if (grp >= args.groups)
		return;
	/* the whole group goes round together: the sums hold barriers */
	for (uint b = grp; b < nb; b = row_next(b, nb, args.groups)) {
		uint r = b * GPO_LN_ROWS + t / GPO_LN_TEAM;
		uint len = r < args.rows ? args.len : 0u;
		uint xo = args.off_x + (len != 0u ? r : 0u) * args.len;
		uint yo = args.off_y + (len != 0u ? r : 0u) * args.len;
		float s = 0.0, v = 0.0, mean, rstd;

		for (uint j = l; j < len; j += GPO_LN_TEAM)
			s += x[xo + j];
		mean = part_sum(s, GPO_LN_TEAM) / float(args.len);
		for (uint j = l; j < len; j += GPO_LN_TEAM) {
			float d = x[xo + j] - mean;

			v += d * d;
		}
		rstd = 1.0 / sqrt(part_sum(v, GPO_LN_TEAM) / float(args.len) +
				  args.eps);
		for (uint j = l; j < len; j += GPO_LN_TEAM)
			y[yo + j] = (x[xo + j] - mean) * rstd;
		if (l == 0u && len != 0u) {
			stats[args.off_stats + 2u * r] = mean;
			stats[args.off_stats + 2u * r + 1u] = rstd;
		}
	}
}
