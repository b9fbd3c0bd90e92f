/* SPDX-License-Identifier: MIT */
/*
 * lamb.glsl - LAMB's update direction from the updated moments, as
 * the cpu backend's lamb_r():
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 * with the correctly rounded / and sqrt of precision.glsl; and the half
 * words of half parameters (abi/lamb.h): element e is the low (e even)
 * or high half of word e / 2 of a binding seen as uints.
 */
#include "precision.glsl"

float lamb_r(float m, float v, float p, float bc1, float bc2, float eps,
	     float wd)
{
	precise float r = cr_div(cr_div(m, bc1), cr_sqrt(cr_div(v, bc2)) + eps) +
			  wd * p;

	return r;
}

/* element e's half of word @w, widened exactly */
float lamb_h2f(uint w, uint e)
{
	uint h = (w >> ((e & 1u) * 16u)) & 0xffffu;

	return FLAG(GPO_UPD_PARAM_F16) ? f16_to_f32(h) : bf16_to_f32(h);
}

/* @x as element e's half word: nearest even, or stochastically (SR) */
uint lamb_round(float x, uint e)
{
	if (FLAG(GPO_UPD_PARAM_SR))
		return f32_to_bf16_sr(x, round_bits(args.p_seed_lo,
					args.p_seed_hi, args.p_step_lo,
					args.p_step_hi, args.p_base + e, 0u));
	return FLAG(GPO_UPD_PARAM_F16) ? f32_to_f16(x) : f32_to_bf16(x);
}
