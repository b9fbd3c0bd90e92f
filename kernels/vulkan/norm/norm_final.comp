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
 * (norm.glsl's put_scal). Invocation t adds partials t, t + WG_SIZE, ...
 * in turn, then reduce2's tree: GPO_NORM_EXACT's order already.
 */
#version 450
#include "common.glsl"
#include "abi/norm.h"
#include "group.glsl"
#include "precision.glsl"

layout(set = 0, binding = 0, std430) readonly buffer part_f1
	{ float part[]; };
layout(set = 0, binding = 1, std430) buffer scal_f1	/* LS*: read */
	{ float scal[]; };

#define NORM_SCAL
#include "norm.glsl"


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
	if (t == 0u)
		put_scal(total, bad != 0.0);
}
