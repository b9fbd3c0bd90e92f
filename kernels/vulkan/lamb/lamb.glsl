/* SPDX-License-Identifier: MIT */
/*
 * lamb.glsl - LAMB's update direction from the updated moments, as
 * the cpu backend's lamb_r():
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 * lamb_prep and lamb_apply come in one module per parameter dtype
 * (their dtypes line: f32 f16 bf16), which differ in how exact they are.
 *
 * f32: the device's / and sqrt (Vulkan: within 2.5 and 3 ulp), not
 * precision.glsl's correctly rounded ones, and sums the compiler may
 * fuse. f32 LAMB's trust ratio divides norms that are sums in a
 * device-dependent order, so its steps differ from the cpu's in the last
 * bits whatever r does (test_optim_lamb checks them against float64),
 * and the emulated division and root, three and one an element in both
 * passes, made the step compute-bound: 256M parameters on an H100 took
 * 5.1 ms with them, 3.67 ms (98 % of the copy limit) without
 * (2026-11-25). The trust ratio keeps cr_div and cr_sqrt: they run once
 * a tensor.
 *
 * f16 and bf16 (half parameters, abi/lamb.h): the correctly rounded /
 * and sqrt and every sum `precise` (LAMB_EXACT), in abi/lamb.h's order,
 * so that half LAMB gives the cpu's bytes on every device; and the half
 * words: element e is the low (e even) or high half of word e / 2 of a
 * binding seen as uints.
 */
#include "precision.glsl"

#if defined(GPO_DTYPE_F16) || defined(GPO_DTYPE_BF16)
#define LAMB_HALF	true
#define LAMB_EXACT	precise

float lamb_r(float m, float v, float p, float bc1, float bc2, float eps,
	     float wd)
{
	precise float r = cr_div(cr_div(m, bc1),
				 cr_sqrt(cr_div(v, bc2)) + eps) + wd * p;

	return r;
}

/* element e's half of word @w, widened exactly */
float lamb_h2f(uint w, uint e)
{
	uint h = (w >> ((e & 1u) * 16u)) & 0xffffu;

#ifdef GPO_DTYPE_F16
	return f16_to_f32(h);
#else
	return bf16_to_f32(h);
#endif
}

/* @x as element e's half word: nearest even, or stochastically (SR) */
uint lamb_round(float x, uint e)
{
#ifdef GPO_DTYPE_F16
	return f32_to_f16(x);
#else
	if (FLAG(GPO_UPD_PARAM_SR))
		return f32_to_bf16_sr(x, round_bits(args.p_seed_lo,
					args.p_seed_hi, args.p_step_lo,
					args.p_step_hi, args.p_base + e, 0u));
	return f32_to_bf16(x);
#endif
}
#else
#define LAMB_HALF	false
#define LAMB_EXACT

float lamb_r(float m, float v, float p, float bc1, float bc2, float eps,
	     float wd)
{
	precise float r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p;

	return r;
}
#endif
