/* SPDX-License-Identifier: MIT */
/*
 * lamb.cl - LAMB (You et al. 2019) in three kernels over the block table
 * of abi/lamb.h: PREP updates m and v and sums |p|^2 and |r|^2 per block,
 * TRUST turns each tensor's block sums into its trust ratio, APPLY does
 * p -= lr * trust * r with r recomputed from the new m, v and the old p.
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 *
 * PREP and APPLY come in one program per parameter dtype (ops.c's
 * DT_PARAM; lamb.c launches the parameters' dtype):
 *
 * f32: a block starts where its tensor starts, at any element, so its
 * first (up to 3) elements before a float4 boundary and the last (up to
 * 3) after one are done one at a time; the body in between is float4s.
 * Its sums are in this device's order (its steps are checked against
 * float64, not bytes).
 *
 * f16 and bf16: work-item j does the block's elements j, j + GPO_WG_SIZE,
 * ..., one at a time, which is also abi/lamb.h's order of the sums, so
 * half LAMB gives the cpu's bytes. Half parameters through update.cl's
 * param_ld1/param_g1/param_st1 (whole buffers: p_base 0); a half word is
 * stored as a ushort, so two work-groups may write the two halves of one
 * word. (One program for both would cost f32 LAMB a fifth of its speed:
 * 3.61 -> 4.38 ms on an H100 at 256M, 2026-11-25.)
 */
#include "abi/lamb.h"
#include "opencl/update.cl"

#if defined(GPO_DTYPE_F32)

/* The direction r of every lane. */
static inline float4 lamb_r(float4 m, float4 v, float4 p, float bc1,
			    float bc2, float eps, float wd)
{
	return cr_div4(cr_div4(m, (float4)(bc1)),
		       cr_sqrt4(cr_div4(v, (float4)(bc2))) + eps) + wd * p;
}

/*
 * The parts of block [start, end): scalar head [start, a), float4 body
 * [a, b), scalar tail [b, end). a and b are multiples of 4 (or end).
 */
static inline void lamb_split(uint start, uint end, uint *a, uint *b)
{
	*a = min((start + 3) & ~3u, end);
	*b = max(*a, end & ~3u);
}

/* The element a work-item does of the head and tail, if any (~0u). */
static inline uint lamb_single(uint start, uint end, uint a, uint b)
{
	uint lid = get_local_id(0), head = a - start;

	if (lid < head)
		return start + lid;
	if (lid - head < end - b)
		return b + (lid - head);
	return ~0u;
}

/*
 * Update m and v of @cnt lanes at @e; returns the sums of p^2 and r^2 of
 * those lanes (unused lanes are left out: they could be NaN for eps = 0).
 */
static inline float2 lamb_prep_at(__global const float *p,
				  __global const float *g, __global float *m,
				  __global float *v, uint e, uint cnt,
				  float gm, float b1, float b2, float ob1,
				  float ob2, float eps, float wd, float bc1,
				  float bc2)
{
	float4 pv = ld4(p, e, cnt);
	float4 gi = ld4(g, e, cnt) * gm;
	float4 mi = ld4(m, e, cnt) * b1 + ob1 * gi;
	float4 vi = ld4(v, e, cnt) * b2 + ob2 * gi * gi;
	float4 r = lamb_r(mi, vi, pv, bc1, bc2, eps, wd);
	float4 pp = pv * pv, rr = r * r;

	st4(m, e, cnt, mi);
	st4(v, e, cnt, vi);
	if (cnt == 4)
		return (float2)((pp.x + pp.y) + (pp.z + pp.w),
				(rr.x + rr.y) + (rr.z + rr.w));
	return (float2)(pp.x, rr.x);
}

/* Group i: block a.first_block + i. */
KERNEL void lamb_prep(BUF(const float, p), BUF(const float, g),
		      BUF(float, m), BUF(float, v), BUF(const uint, blocks),
		      BUF(float, part), BUF(const float, scal),
		      struct gpo_lamb_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint blk = a.first_block + get_group_id(0), lid = get_local_id(0);
	uint start, end, lo, hi, e;
	float2 acc = (float2)(0.0f);
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(m);
	VIEW(v);
	VIEW(blocks);
	VIEW(part);
	VIEW(scal);
	/* uniform over the group: no work-item misses a barrier */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	start = blocks[4 * blk + 1];
	end = start + blocks[4 * blk + 2];
	lamb_split(start, end, &lo, &hi);
	for (uint i = lo / 4 + lid; i < hi / 4; i += GPO_WG_SIZE)
		acc += lamb_prep_at(p, g, m, v, 4 * i, 4, gm, a.beta1, a.beta2,
				    a.one_minus_beta1, a.one_minus_beta2,
				    a.eps, a.weight_decay, a.bc1, a.bc2);
	e = lamb_single(start, end, lo, hi);
	if (e != ~0u)
		acc += lamb_prep_at(p, g, m, v, e, 1, gm, a.beta1, a.beta2,
				    a.one_minus_beta1, a.one_minus_beta2,
				    a.eps, a.weight_decay, a.bc1, a.bc2);
	acc = wg_sum2(tmp, acc);
	if (lid == 0) {
		part[2 * blk] = acc.x;
		part[2 * blk + 1] = acc.y;
	}
}
#else
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
#endif

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

#if defined(GPO_DTYPE_F32)

static inline void lamb_apply_at(__global float *p, __global const float *m,
				 __global const float *v, uint e, uint cnt,
				 float step, float eps, float wd, float bc1,
				 float bc2)
{
	float4 pv = ld4(p, e, cnt);
	float4 r = lamb_r(ld4(m, e, cnt), ld4(v, e, cnt), pv, bc1, bc2, eps,
			  wd);

	st4(p, e, cnt, pv - step * r);
}

/* Group i: block a.first_block + i. */
KERNEL void lamb_apply(BUF(float, p), BUF(const float, m),
		       BUF(const float, v), BUF(const uint, blocks),
		       BUF(const float, trust), BUF(const float, scal),
		       BUF(uint, ph), struct gpo_lamb_args a)
{
	uint blk = a.first_block + get_group_id(0), lid = get_local_id(0);
	uint start, end, lo, hi, e;
	float step;

	VIEW(p);
	VIEW(m);
	VIEW(v);
	VIEW(blocks);
	VIEW(trust);
	VIEW(scal);
	if (step_skipped(scal, a.flags))
		return;
	start = blocks[4 * blk + 1];
	end = start + blocks[4 * blk + 2];
	step = a.lr * trust[blocks[4 * blk]];
	lamb_split(start, end, &lo, &hi);
	for (uint i = lo / 4 + lid; i < hi / 4; i += GPO_WG_SIZE)
		lamb_apply_at(p, m, v, 4 * i, 4, step, a.eps, a.weight_decay,
			      a.bc1, a.bc2);
	e = lamb_single(start, end, lo, hi);
	if (e != ~0u)
		lamb_apply_at(p, m, v, e, 1, step, a.eps, a.weight_decay,
			      a.bc1, a.bc2);
}
#else
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
#endif
