/* SPDX-License-Identifier: MIT */
/*
 * lamb.cl - LAMB (You et al. 2019) in three kernels over the block table
 * of abi/lamb.h: PREP updates m and v and sums |p|^2 and |r|^2 per block,
 * TRUST turns each tensor's block sums into its trust ratio, APPLY does
 * p -= lr * trust * r with r recomputed from the new m, v and the old p.
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 *
 * A block starts where its tensor starts, at any element: work-item j
 * does the block's elements j, j + GPO_WG_SIZE, ..., one at a time, which
 * is also abi/lamb.h's order of the sums. Half parameters through
 * update.cl's param_ld1/param_g1/param_st1 (whole buffers: p_base 0);
 * a half word is stored as a ushort, so two work-groups may write the
 * two halves of one word.
 */
#include "abi/lamb.h"
#include "opencl/update.cl"

/* The direction r of one element. */
static inline float lamb_r(float m, float v, float p, float bc1, float bc2,
			   float eps, float wd)
{
	return cr_div(cr_div(m, bc1), cr_sqrt(cr_div(v, bc2)) + eps) + wd * p;
}

/* Group i: block a.first_block + i. */
KERNEL void lamb_prep(BUF(float, p), BUF(const float, g),
		      BUF(float, m), BUF(float, v), BUF(const uint, blocks),
		      BUF(float, part), BUF(const float, scal),
		      struct gpo_lamb_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint blk = a.first_block + get_group_id(0), lid = get_local_id(0);
	uint start, end;
	float2 acc = (float2)(0.0f);
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(m);
	VIEW(v);
	VIEW(blocks);
	VIEW(part);
	VIEW(scal);
	PARAM_CTX(pc, a, p);
	/* uniform over the group: no work-item misses a barrier */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	start = blocks[4 * blk + 1];
	end = start + blocks[4 * blk + 2];
	for (uint e = start + lid; e < end; e += GPO_WG_SIZE) {
		float pv = param_ld1(p, e, &pc);
		float gi = param_g1(g, e, &pc) * gm;
		float mi = m[e] * a.beta1 + a.one_minus_beta1 * gi;
		float vi = v[e] * a.beta2 + a.one_minus_beta2 * gi * gi;
		float r = lamb_r(mi, vi, pv, a.bc1, a.bc2, a.eps,
				 a.weight_decay);

		m[e] = mi;
		v[e] = vi;
		acc += (float2)(pv * pv, r * r);
	}
	acc = wg_sum2(tmp, acc);
	if (lid == 0) {
		part[2 * blk] = acc.x;
		part[2 * blk + 1] = acc.y;
	}
}

/*
 * One group per tensor (launched with work = a.ntensors groups):
 * work-item j adds the tensor's blocks j, j + 256, ... in order, then the
 * tree; trust = |p| / |r|, or 1 when either is 0. One work-item per tensor
 * would add a 256M-parameter tensor's 65536 blocks one load at a time.
 */
KERNEL void lamb_trust(BUF(const uint, tb), BUF(const float, part),
		       BUF(float, trust), BUF(const float, scal),
		       struct gpo_lamb_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint t = get_group_id(0), lid = get_local_id(0);
	float2 acc = (float2)(0.0f);
	uint first, last;

	VIEW(tb);
	VIEW(part);
	VIEW(trust);
	VIEW(scal);
	if (step_skipped(scal, a.flags) || t >= a.ntensors)
		return;
	first = tb[2 * t];
	last = first + tb[2 * t + 1];
	for (uint b = first + lid; b < last; b += GPO_WG_SIZE)
		acc += (float2)(part[2 * b], part[2 * b + 1]);
	acc = wg_sum2(tmp, acc);
	if (lid == 0) {
		float pn = cr_sqrt(acc.x), rn = cr_sqrt(acc.y);

		trust[t] = pn > 0.0f && rn > 0.0f ? cr_div(pn, rn) : 1.0f;
	}
}

/* Group i: block a.first_block + i. */
KERNEL void lamb_apply(BUF(float, p), BUF(const float, m),
		       BUF(const float, v), BUF(const uint, blocks),
		       BUF(const float, trust), BUF(const float, scal),
		       BUF(uint, ph), struct gpo_lamb_args a)
{
	uint blk = a.first_block + get_group_id(0), lid = get_local_id(0);
	uint start, end;
	float step;

	VIEW(p);
	VIEW(m);
	VIEW(v);
	VIEW(blocks);
	VIEW(trust);
	VIEW(scal);
	VIEW(ph);
	PARAM_CTX(pc, a, ph);
	if (step_skipped(scal, a.flags))
		return;
	start = blocks[4 * blk + 1];
	end = start + blocks[4 * blk + 2];
	step = a.lr * trust[blocks[4 * blk]];
	for (uint e = start + lid; e < end; e += GPO_WG_SIZE) {
		float pv = param_ld1(p, e, &pc);

		param_st1(p, e, pv - step * lamb_r(m[e], v[e], pv, a.bc1,
						   a.bc2, a.eps,
						   a.weight_decay), &pc);
	}
}
