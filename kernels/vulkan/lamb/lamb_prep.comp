// SPDX-License-Identifier: MIT
// dtypes: f32 f16 bf16
// recorded: yes
/*
 * lamb_prep.comp - lamb_prep: workgroup i takes block b = first_block + i of
 * the block table {tensor, start, count, 0}, updates m and v there and
 * writes partials[2b] = sum p^2, partials[2b + 1] = sum r^2 (p before
 * the update, which lamb_apply makes). Blocks start at any element (a
 * tensor's start), so every access is scalar; consecutive invocations
 * still read consecutive floats. Invocation t adds elements t, t + WG_SIZE,
 * ... in turn, then reduce2()'s tree: abi/lamb.h's order; in the f16 and
 * bf16 modules every sum is `precise` (lamb.glsl's LAMB_EXACT), so their
 * partials are the cpu's bits.
 * The launch runs exactly one workgroup per block of the group.
 */
#version 450
#include "common.glsl"
#include "abi/lamb.h"
#include "group.glsl"
#include "lamb.glsl"

layout(set = 0, binding = 0, std430) readonly buffer p_f1 { float p[]; };
layout(set = 0, binding = 1, std430) readonly buffer g_f1 { float g[]; };
/* half parameters and gradients (abi/lamb.h) as words */
layout(set = 0, binding = 0, std430) readonly buffer p_w1 { uint pw[]; };
layout(set = 0, binding = 1, std430) readonly buffer g_w1 { uint gw[]; };
FLOAT_BUF(2, m);
FLOAT_BUF(3, v);
UINT_BUF(4, blocks);
FLOAT_BUF(5, part);
SCAL_BUF(6);

#include "update.glsl"

/* element j's p as the update reads it (master or widened bf16) */
float p_at(uint j)
{
#if defined(GPO_DTYPE_BF16)
	if (FLAG(GPO_UPD_PARAM_SR))
		return lamb_h2f(pw[j >> 1], j);
#endif
	return p[j];
}

float g_at(uint j)
{
#if defined(GPO_DTYPE_F16) || defined(GPO_DTYPE_BF16)
	return lamb_h2f(gw[j >> 1], j);
#else
	return g[j];
#endif
}

void main()
{
	uint grp = group_index();
	uint t = gl_LocalInvocationID.x;
	float b1 = args.beta1, b2 = args.beta2, eps = args.eps;
	float wd = args.weight_decay, bc1 = args.bc1, bc2 = args.bc2;
	float ob1 = args.one_minus_beta1, ob2 = args.one_minus_beta2;
	LAMB_EXACT float pn = 0.0, rn = 0.0;
	uint b, start, end;

	if (!grad_mul())
		return;
	b = args.first_block + grp;
	start = blocks[4u * b + 1u];
	end = start + blocks[4u * b + 2u];
	/*
	 * Four elements an invocation per round, all loads first: the loop
	 * bound is not a constant, so nothing else would put more than one
	 * element's loads in flight.
	 */
	uint i = start + t;
	for (; i + 3u * WG_SIZE < end; i += 4u * WG_SIZE) {
		float pa[4], ga[4], ma[4], va[4];

		for (uint k = 0u; k < 4u; k++) {
			uint j = i + k * WG_SIZE;

			pa[k] = p_at(j);
			ga[k] = g_at(j);
			ma[k] = m[j];
			va[k] = v[j];
		}
		for (uint k = 0u; k < 4u; k++) {
			uint j = i + k * WG_SIZE;
			LAMB_EXACT float gi = ga[k] * gm;
			LAMB_EXACT float mi = ma[k] * b1 + ob1 * gi;
			LAMB_EXACT float vi = va[k] * b2 + ob2 * gi * gi;
			float r = lamb_r(mi, vi, pa[k], bc1, bc2, eps, wd);

			m[j] = mi;
			v[j] = vi;
			pn += pa[k] * pa[k];
			rn += r * r;
		}
	}
	for (; i < end; i += WG_SIZE) {
		LAMB_EXACT float gi = g_at(i) * gm;
		LAMB_EXACT float mi = m[i] * b1 + ob1 * gi;
		LAMB_EXACT float vi = v[i] * b2 + ob2 * gi * gi;
		float pi = p_at(i);
		float r = lamb_r(mi, vi, pi, bc1, bc2, eps, wd);

		m[i] = mi;
		v[i] = vi;
		pn += pi * pi;
		rn += r * r;
	}
	reduce2(pn, rn);
	if (t == 0u) {
		part[2u * b] = pn;
		part[2u * b + 1u] = rn;
	}
}
