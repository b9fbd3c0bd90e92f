// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * norm_small.comp - norm_small, one workgroup: norm_partial over all
 * args.n elements as one group, then norm_final's scal, in one launch
 * (a small step's norm pass without a second dispatch and its barrier):
 *   scal[NORM] = sqrt(total) * inv_scale, scal[MUL], scal[SKIP] and
 *   scal[TOTAL] as norm_final writes them
 * GPO_NORM_EXACT (f32 or half g): norm.glsl's norm_exact() order.
 */
#version 450
#include "common.glsl"
#include "abi/norm.h"
#include "group.glsl"
#include "precision.glsl"

FLOAT4_BUF(0, g);
layout(set = 0, binding = 1, std430) buffer scal_f1	/* LS*: read */
	{ float scal[]; };

#define NORM_G
#define NORM_SCAL
#include "norm.glsl"


void main()
{
	uint t = gl_LocalInvocationID.x;
	uint n = args.n, i;
	float total = 0.0, bad = 0.0;

	if (FLAG(GPO_NORM_EXACT)) {
		norm_exact(0u, n, total, bad);
		reduce2(total, bad);
		if (t == 0u)
			put_scal(total, bad != 0.0);
		return;
	}
	for (i = t; i < n / 4u; i += WG_SIZE) {
		vec4 x = g4[i];

		total += x.x * x.x + x.y * x.y + x.z * x.z + x.w * x.w;
		if (not_finite(x.x) || not_finite(x.y) ||
		    not_finite(x.z) || not_finite(x.w))
			bad = 1.0;
	}
	/* the n % 4 elements at the end */
	i = (n & ~3u) + t;
	if (i < n) {
		total += g[i] * g[i];
		if (not_finite(g[i]))
			bad = 1.0;
	}
	reduce2(total, bad);
	if (t == 0u)
		put_scal(total, bad != 0.0);
}
