// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * norm_small.comp - norm_small, one workgroup: norm_partial over all
 * args.n elements as one group, then norm_final's scal, in one launch
 * (a small step's norm pass without a second dispatch and its barrier):
 *   scal[NORM] = sqrt(total) * inv_scale, scal[MUL], scal[SKIP] and
 *   scal[TOTAL] as norm_final writes them
 */
#version 450
#include "common.glsl"
#include "abi/norm.h"
#include "group.glsl"

FLOAT4_BUF(0, g);
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
	uint n = args.n, i;
	float total = 0.0, bad = 0.0;

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
