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
layout(set = 0, binding = 1, std430) buffer scal_f1	/* LS*: read */
	{ float scal[]; };

/* the step's scalars (abi/norm.h), the loss scale's update last */
void put_scal(float total, bool bad)
{
	float inv = args.inv_scale, mul, norm;

	if (FLAG(GPO_NORM_LOSS_SCALE))
		inv *= scal[GPO_SCAL_LS_INV];
	mul = inv;
	norm = sqrt(total) * inv;
	if (args.clip_norm > 0.0) {
		float coef = args.clip_norm / (norm + 1e-6);

		if (coef < 1.0)
			mul *= coef;
	}
	scal[GPO_SCAL_MUL] = mul;
	scal[GPO_SCAL_SKIP] = bad && FLAG(GPO_NORM_CHECK_FINITE) ? 1.0 : 0.0;
	scal[GPO_SCAL_NORM] = norm;
	scal[GPO_SCAL_TOTAL] = total;
	if (!FLAG(GPO_NORM_DYNAMIC))
		return;
	/* GradScaler's update, after the old scale unscaled this step */
	if (bad) {
		scal[GPO_SCAL_LS] *= 0.5;
		scal[GPO_SCAL_LS_INV] *= 2.0;
		scal[GPO_SCAL_LS_GOOD] = 0.0;
	} else if (scal[GPO_SCAL_LS_GOOD] + 1.0 >=
		   float(args.growth_interval)) {
		if (!not_finite(scal[GPO_SCAL_LS] * 2.0)) {
			scal[GPO_SCAL_LS] *= 2.0;
			scal[GPO_SCAL_LS_INV] *= 0.5;
		}
		scal[GPO_SCAL_LS_GOOD] = 0.0;
	} else {
		scal[GPO_SCAL_LS_GOOD] += 1.0;
	}
}

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
