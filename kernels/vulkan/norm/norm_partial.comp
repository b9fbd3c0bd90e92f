// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * norm_partial.comp - norm_partial: group i sums g^2 over elements
 * [i * chunk, min(n, (i + 1) * chunk)) and notes any inf or NaN:
 *   partials[2i] = sum of g^2, partials[2i + 1] = 1 if any is not finite
 * chunk is a multiple of 4, so a group's range starts on a float4.
 * GPO_NORM_EXACT (f32 or half g): norm.glsl's norm_exact() order.
 */
#version 450
#include "common.glsl"
#include "abi/norm.h"
#include "group.glsl"
#include "precision.glsl"

FLOAT4_BUF(0, g);
FLOAT_BUF(1, part);

#define NORM_G
#include "norm.glsl"

void main()
{
	uint grp = group_index();
	uint t = gl_LocalInvocationID.x;
	uint start, end, i;
	float sum = 0.0, bad = 0.0;

	if (grp >= args.groups)
		return;
	group_range(grp, args.n, args.chunk, start, end);
	if (FLAG(GPO_NORM_EXACT)) {
		norm_exact(start, end, sum, bad);
		reduce2(sum, bad);
		if (t == 0u) {
			part[2u * grp] = sum;
			part[2u * grp + 1u] = bad != 0.0 ? 1.0 : 0.0;
		}
		return;
	}
	for (i = start / 4u + t; i < end / 4u; i += WG_SIZE) {
		vec4 x = g4[i];

		sum += x.x * x.x + x.y * x.y + x.z * x.z + x.w * x.w;
		if (not_finite(x.x) || not_finite(x.y) ||
		    not_finite(x.z) || not_finite(x.w))
			bad = 1.0;
	}
	/* the n % 4 elements at the very end */
	i = (end & ~3u) + t;
	if (i >= start && i < end) {
		sum += g[i] * g[i];
		if (not_finite(g[i]))
			bad = 1.0;
	}
	reduce2(sum, bad);
	if (t == 0u) {
		part[2u * grp] = sum;
		part[2u * grp + 1u] = bad != 0.0 ? 1.0 : 0.0;
	}
}
