// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * layernorm_bwd.comp - layernorm_bwd (abi/layernorm.h), y and stats the
 * forward's outputs:
 *   dx_j (+)= alpha * rstd * (dy_j - mean_k dy_k - y_j * mean_k dy_k y_k)
 * A team of GPO_LN_TEAM invocations a row, GPO_LN_ROWS rows a workgroup
 * (layernorm.comp); the row's sums by each invocation in order and then
 * tensor.glsl's part_sum(), a fixed tree.
 */
#version 450
#include "common.glsl"
#include "abi/layernorm.h"
#include "group.glsl"
#include "tensor.glsl"
#include "layernorm/layernorm.glsl"

FLOAT_IN(0, y);
FLOAT_IN(1, dy);
FLOAT_IN(2, stats);
FLOAT_BUF(3, dx);

void main()
{
	uint grp = group_index(), t = gl_LocalInvocationID.x;
	uint l = t % GPO_LN_TEAM, nb = ln_blocks(args.rows);

	if (grp >= args.groups)
		return;
	for (uint b = grp; b < nb; b = row_next(b, nb, args.groups)) {
		uint r = b * GPO_LN_ROWS + t / GPO_LN_TEAM;
		uint len = r < args.rows ? args.len : 0u;
		uint ro = (len != 0u ? r : 0u) * args.len;
		uint yo = args.off_y + ro, go = args.off_dy + ro;
		uint xo = args.off_x + ro;
		float s = 0.0, sy = 0.0, scale = 0.0;

		if (len != 0u)
			scale = args.alpha * stats[args.off_stats + 2u * r + 1u];
		for (uint j = l; j < len; j += GPO_LN_TEAM) {
			s += dy[go + j];
			sy += dy[go + j] * y[yo + j];
		}
		s = part_sum(s, GPO_LN_TEAM) / float(args.len);
		sy = part_sum(sy, GPO_LN_TEAM) / float(args.len);
		for (uint j = l; j < len; j += GPO_LN_TEAM)
			STORE(dx, xo + j,
			      scale * (dy[go + j] - s - y[yo + j] * sy));
	}
}
