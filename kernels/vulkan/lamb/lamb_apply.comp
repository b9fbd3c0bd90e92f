// SPDX-License-Identifier: MIT
// dtypes: f32 f16 bf16
// recorded: yes
/*
 * lamb_apply.comp - lamb_apply: workgroup i takes block
 * b = first_block + i and applies p = p - lr * trust[tensor] * r, r
 * recomputed from the m and v that lamb_prep left. Scalar accesses, as in
 * lamb_prep; exactly one workgroup per block of the group.
 * Half parameters (the f16 and bf16 modules): an invocation does the two
 * elements of a word, so it writes whole words; a word the block shares
 * with its neighbour (the block starts or ends at an odd element) gets
 * its half with atomics.
 */
#version 450
#include "common.glsl"
#include "abi/lamb.h"
#include "group.glsl"
#include "lamb.glsl"

FLOAT_BUF(0, p);
layout(set = 0, binding = 1, std430) readonly buffer m_f1 { float m[]; };
layout(set = 0, binding = 2, std430) readonly buffer v_f1 { float v[]; };
UINT_BUF(3, blocks);
layout(set = 0, binding = 4, std430) readonly buffer trust_f1
	{ float trust[]; };
SCAL_BUF(5);
/* half parameters (abi/lamb.h): p as bf16 words (SR), the half copy */
layout(set = 0, binding = 0, std430) buffer p_w1 { uint pw[]; };
layout(set = 0, binding = GPO_LAMB_BUF_HALF, std430) buffer ph_w1
	{ uint phw[]; };

#include "update.glsl"

#if defined(GPO_DTYPE_F16) || defined(GPO_DTYPE_BF16)
/* half word @h of element e into word e / 2, the other half kept */
void put_half(uint e, uint h)
{
	uint sh = (e & 1u) * 16u, keep = ~(0xffffu << sh);

	if (FLAG(GPO_UPD_PARAM_SR)) {
		atomicAnd(pw[e >> 1], keep);
		atomicOr(pw[e >> 1], h << sh);
	} else {
		atomicAnd(phw[e >> 1], keep);
		atomicOr(phw[e >> 1], h << sh);
	}
}

void apply_half(uint start, uint end, float step)
{
	float eps = args.eps, wd = args.weight_decay;
	float bc1 = args.bc1, bc2 = args.bc2;
	bool sr = FLAG(GPO_UPD_PARAM_SR);

	for (uint w = (start >> 1) + gl_LocalInvocationID.x;
	     2u * w < end; w += WG_SIZE) {
		uint old = sr ? pw[w] : 0u, h[2] = uint[2](0u, 0u);
		bool in0 = 2u * w >= start, in1 = 2u * w + 1u < end;

		for (uint k = 0u; k < 2u; k++) {
			uint e = 2u * w + k;

			if (k == 0u ? !in0 : !in1)
				continue;
			float pi = sr ? lamb_h2f(old, e) : p[e];
			LAMB_EXACT float x = pi - step * lamb_r(m[e], v[e], pi,
							     bc1, bc2, eps,
							     wd);

			if (!sr)
				p[e] = x;
			h[k] = lamb_round(x, e);
		}
		if (in0 && in1) {
			if (sr)
				pw[w] = h[0] | (h[1] << 16);
			else
				phw[w] = h[0] | (h[1] << 16);
		} else {
			put_half(in0 ? 2u * w : 2u * w + 1u,
				 in0 ? h[0] : h[1]);
		}
	}
}

#endif

void main()
{
	uint grp = group_index();
	float lr = args.lr, eps = args.eps, wd = args.weight_decay;
	float bc1 = args.bc1, bc2 = args.bc2;
	uint b, start, end;
	float step;

	if (step_skipped())
		return;
	b = args.first_block + grp;
	start = blocks[4u * b + 1u];
	end = start + blocks[4u * b + 2u];
	step = lr * trust[blocks[4u * b]];
#if defined(GPO_DTYPE_F16) || defined(GPO_DTYPE_BF16)
	apply_half(start, end, step);
	return;
#endif
	/* four elements a round, loads first, as in lamb_prep.comp */
	uint i = start + gl_LocalInvocationID.x;
	for (; i + 3u * WG_SIZE < end; i += 4u * WG_SIZE) {
		float pa[4], ma[4], va[4];

		for (uint k = 0u; k < 4u; k++) {
			uint j = i + k * WG_SIZE;

			pa[k] = p[j];
			ma[k] = m[j];
			va[k] = v[j];
		}
		for (uint k = 0u; k < 4u; k++) {
			LAMB_EXACT float x = pa[k] - step *
				lamb_r(ma[k], va[k], pa[k], bc1, bc2, eps, wd);

			p[i + k * WG_SIZE] = x;
		}
	}
	for (; i < end; i += WG_SIZE) {
		LAMB_EXACT float x = p[i] - step * lamb_r(m[i], v[i], p[i], bc1,
						       bc2, eps, wd);

		p[i] = x;
	}
}
