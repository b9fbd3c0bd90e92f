// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * norm_final.comp - norm_final, one workgroup: reduce args.groups
 * partials in a fixed order and write scal:
 *   scal[NORM] = sqrt(total) * inv_scale            (the gradient norm)
 *   scal[MUL]  = inv_scale * (clip_norm > 0 ?
 *                min(1, clip_norm / (scal[NORM] + 1e-6)) : 1)
 *   scal[SKIP] = any non-finite && GPO_NORM_CHECK_FINITE ? 1 : 0
 *   scal[TOTAL] = total
 */
#version 450
#include "common.glsl"
#include "abi/norm.h"
#include "group.glsl"

layout(set = 0, binding = 0, std430) readonly buffer part_f1
	{ float part[]; };
layout(set = 0, binding = 1, std430) writeonly buffer scal_f1
	{ float scal[]; };

void main()
{
	uint t = gl_LocalInvocationID.x;
	float total = 0.0, bad = 0.0;

	for (uint i = t; i < args.groups; i += WG_SIZE) {
		total += part[2u * i];
		if (part[2u * i + 1u] != 0.0)
			bad = 1.0;
	}
	reduce2(total, bad);
	if (t == 0u) {
		float norm = sqrt(total) * args.inv_scale;
		float mul = args.inv_scale;

		if (args.clip_norm > 0.0) {
			float coef = args.clip_norm / (norm + 1e-6);

			if (coef < 1.0)
				mul *= coef;
		}
		scal[GPO_SCAL_MUL] = mul;
		scal[GPO_SCAL_SKIP] = bad != 0.0 &&
				      FLAG(GPO_NORM_CHECK_FINITE) ? 1.0 : 0.0;
		scal[GPO_SCAL_NORM] = norm;
		scal[GPO_SCAL_TOTAL] = total;
	}
}
