// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * obj_rosenbrock.comp - obj_rosenbrock over x[0..n), groups as
 * obj_quadratic:
 *   loss_j = 100 (x_{j+1} - x_j^2)^2 + (1 - x_j)^2   for j < n - 1
 *   g_j = -400 x_j (x_{j+1} - x_j^2) - 2 (1 - x_j)   [j < n - 1]
 *         + 200 (x_j - x_{j-1}^2)                     [j > 0]
 * Neighbours across group boundaries are read from x, which no group
 * writes, so groups need no ordering.
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
	uint start, end, n = args.n;

	if (grp >= args.groups)
		return;
	group_range(grp, args.n, args.chunk, start, end);
	for (uint i = start + t; i < end; i += WG_SIZE) {
		float xi = x[i], gi = 0.0;

		if (i + 1u < n) {
			float s = x[i + 1u] - xi * xi, u = 1.0 - xi;

			loss += 100.0 * s * s + u * u;
			gi += -400.0 * xi * s - 2.0 * u;
		}
		if (i > 0u)
			gi += 200.0 * (xi - x[i - 1u] * x[i - 1u]);
		g[i] = gi;
	}
	reduce2(loss, zero);
	if (t == 0u) {
		part[2u * grp] = loss;
		part[2u * grp + 1u] = 0.0;
	}
}
