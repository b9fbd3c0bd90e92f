// SPDX-License-Identifier: MIT
/*
 * norm_final.comp - K_NORM_FINAL, one workgroup: reduce aux0 partials in
 * a fixed order and write scal:
 *   scal[2] = sqrt(total) * inv_scale              (the gradient norm)
 *   scal[0] = inv_scale * (clip_norm > 0 ?
 *             min(1, clip_norm / (scal[2] + 1e-6)) : 1)
 *   scal[1] = any non-finite && KF_CHECK_FINITE ? 1 : 0
 *   scal[3] = total
 * s0 inv_scale, s1 clip_norm.
 */
#version 450
#include "common.glsl"
#include "group.glsl"

layout(set = 0, binding = 0, std430) readonly buffer part_f1
	{ float part[]; };
layout(set = 0, binding = 1, std430) writeonly buffer scal_f1
	{ float scal[]; };

void main()
{
	uint t = gl_LocalInvocationID.x;
	float total = 0.0, bad = 0.0;

	for (uint i = t; i < args.aux0; i += WG_SIZE) {
		total += part[2u * i];
		if (part[2u * i + 1u] != 0.0)
			bad = 1.0;
	}
	reduce2(total, bad);
	if (t == 0u) {
		float norm = sqrt(total) * args.s[0];
		float mul = args.s[0];

		if (args.s[1] > 0.0) {
			float coef = args.s[1] / (norm + 1e-6);

			if (coef < 1.0)
				mul *= coef;
		}
		scal[0] = mul;
		scal[1] = bad != 0.0 && FLAG(KF_CHECK_FINITE) ? 1.0 : 0.0;
		scal[2] = norm;
		scal[3] = total;
	}
}
