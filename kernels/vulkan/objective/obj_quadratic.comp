// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * obj_quadratic.comp - obj_quadratic over x[0..n): group i covers
 * [i * chunk, min(n, (i + 1) * chunk)) and writes
 *   g_j = c_j (x_j - 1), c_j = 1 + (j mod 7)
 *   partials[2i] = sum of 0.5 c_j (x_j - 1)^2, partials[2i + 1] = 0
 */
#version 450
#include "common.glsl"
#include "abi/objective.h"
#include "group.glsl"

layout(set = 0, binding = 0, std430) readonly buffer x_f1 { float x[]; };
FLOAT_BUF(1, g);
FLOAT_BUF(2, part);

void main()
{
	uint grp = group_index();
	uint t = gl_LocalInvocationID.x;
	float loss = 0.0, zero = 0.0;
	uint start, end;

	if (grp >= args.groups)
		return;
	group_range(grp, args.n, args.chunk, start, end);
	for (uint i = start + t; i < end; i += WG_SIZE) {
		float c = float(1u + i % 7u), d = x[i] - 1.0;

		g[i] = c * d;
		loss += 0.5 * c * d * d;
	}
	reduce2(loss, zero);
	if (t == 0u) {
		part[2u * grp] = loss;
		part[2u * grp + 1u] = 0.0;
	}
}
