/* SPDX-License-Identifier: MIT */
/*
 * norm.cl - the global gradient norm in two deterministic passes
 *
 * norm_partial: group i sums g^2 over its chunk [i * chunk, (i + 1) *
 * chunk) and flags inf/NaN; norm_final: one group adds the partials in a
 * fixed order and turns them into the step's scalars (abi/norm.h);
 * norm_small: both in one group over all elements, for small steps. The
 * work-item to element mapping and the reduction trees are fixed, so a
 * given input always gives the same bits.
 *
 * GPO_NORM_EXACT (the half path): the order abi/norm.h gives, over f32
 * or half gradients (GPO_NORM_HALF: g holds half words), and correctly
 * rounded sqrt and /, so every backend gives the same bits.
 */
#include "abi/norm.h"
#include "opencl/precision.cl"

/* a half word widened exactly (f16, or bf16 with GPO_NORM_BF16) */
static inline float norm_h2f(uint h, uint flags)
{
	return (flags & GPO_NORM_BF16) ? bf16_to_f32(h) : f16_to_f32(h);
}

/* elements 4q .. 4q + 3 of g as f32; @gw: g's words */
static inline float4 norm_quad(__global const float *g,
			       __global const uint *gw, uint q, uint flags)
{
	uint2 w;

	if (!(flags & GPO_NORM_HALF))
		return ld4(g, 4 * q, 4);
	w = (uint2)(gw[2 * q], gw[2 * q + 1]);
	return (float4)(norm_h2f(w.x & 0xffffu, flags),
			norm_h2f(w.x >> 16, flags),
			norm_h2f(w.y & 0xffffu, flags),
			norm_h2f(w.y >> 16, flags));
}

static inline float norm_elem(__global const float *g,
			      __global const uint *gw, uint e, uint flags)
{
	if (!(flags & GPO_NORM_HALF))
		return g[e];
	return norm_h2f((gw[e >> 1] >> ((e & 1) * 16)) & 0xffffu, flags);
}

/* inf or NaN, by the exponent bits */
static inline int norm_bad4(float4 x)
{
	uint4 b = as_uint4(x) & 0x7f800000u;

	return b.x == 0x7f800000u || b.y == 0x7f800000u ||
	       b.z == 0x7f800000u || b.w == 0x7f800000u;
}

/*
 * This work-item's part of the sum over [start, end) in GPO_NORM_EXACT's
 * order (start a multiple of 4): its quads in turn, then work-item 0 the
 * tail as a quad padded with zeros; .y 1 if any is not finite.
 * wg_sum2()'s tree then.
 */
static inline float2 norm_exact(__global const float *g, uint start,
				uint end, uint flags)
{
	__global const uint *gw = (__global const uint *)g;
	uint lid = get_local_id(0), mid = start + ((end - start) & ~3u);
	float2 r = (float2)(0.0f);
	float4 x;

	for (uint q = start / 4 + lid; q < mid / 4; q += GPO_WG_SIZE) {
		x = norm_quad(g, gw, q, flags);
		r.x = r.x + ((x.x * x.x + x.y * x.y) + (x.z * x.z + x.w * x.w));
		if (norm_bad4(x))
			r.y = 1.0f;
	}
	if (lid == 0 && mid < end) {
		x = (float4)(0.0f);
		x.x = norm_elem(g, gw, mid, flags);
		if (end - mid > 1)
			x.y = norm_elem(g, gw, mid + 1, flags);
		if (end - mid > 2)
			x.z = norm_elem(g, gw, mid + 2, flags);
		r.x = r.x + ((x.x * x.x + x.y * x.y) + (x.z * x.z + x.w * x.w));
		if (norm_bad4(x))
			r.y = 1.0f;
	}
	return r;
}

KERNEL void norm_partial(BUF(const float, g), BUF(float, part),
			 struct gpo_norm_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);
	uint start, end, mid;
	float4 acc = (float4)(0.0f);
	/* g * 0 is NaN exactly when g is inf or NaN, and NaN sticks */
	float4 bad = (float4)(0.0f);
	float2 r;

	VIEW(g);
	VIEW(part);
	group_range(grp, a.n, a.chunk, &start, &end);
	/* one wg_sum2 for both paths: PoCL loses barriers in branches */
	if (a.flags & GPO_NORM_EXACT) {
		r = norm_exact(g, start, end, a.flags);
	} else {
		/* chunk is a multiple of 4: start is float4-aligned */
		mid = start + ((end - start) & ~3u);
		for (uint i = start / 4 + lid; i < mid / 4;
		     i += GPO_WG_SIZE) {
			float4 v = ld4(g, 4 * i, 4);

			acc += v * v;
			bad += v * 0.0f;
		}
		if (lid == 0 && mid < end) {
			float4 v = ld4(g, mid, end - mid);

			acc += v * v;
			bad += v * 0.0f;
		}
		r.x = (acc.x + acc.y) + (acc.z + acc.w);
		r.y = isnan((bad.x + bad.y) + (bad.z + bad.w)) ? 1.0f : 0.0f;
	}
	r = wg_sum2(tmp, r);
	if (lid == 0) {
		part[2 * grp] = r.x;
		part[2 * grp + 1] = r.y != 0.0f ? 1.0f : 0.0f;
	}
}

/* the step's scalars from the total sum of squares and the bad flag */
static inline void put_scal(__global float *scal, const struct gpo_norm_args *a,
			    float total, int bad)
{
	float inv = a->inv_scale, mul, norm;

	if (a->flags & GPO_NORM_LOSS_SCALE)
		inv *= scal[GPO_SCAL_LS_INV];
	mul = inv;
	norm = ((a->flags & GPO_NORM_EXACT) ? cr_sqrt(total) : sqrt(total)) *
	       inv;
	if (a->clip_norm > 0.0f) {
		float coef = (a->flags & GPO_NORM_EXACT) ?
			     cr_div(a->clip_norm, norm + 1e-6f) :
			     a->clip_norm / (norm + 1e-6f);

		if (coef < 1.0f)
			mul *= coef;
	}
	scal[GPO_SCAL_MUL] = mul;
	scal[GPO_SCAL_SKIP] = bad && (a->flags & GPO_NORM_CHECK_FINITE) ?
			      1.0f : 0.0f;
	scal[GPO_SCAL_NORM] = norm;
	scal[GPO_SCAL_TOTAL] = total;
	if (!(a->flags & GPO_NORM_DYNAMIC))
		return;
	/* GradScaler's update, after the old scale unscaled this step */
	if (bad) {
		scal[GPO_SCAL_LS] *= 0.5f;
		scal[GPO_SCAL_LS_INV] *= 2.0f;
		scal[GPO_SCAL_LS_GOOD] = 0.0f;
	} else if (scal[GPO_SCAL_LS_GOOD] + 1.0f >=
		   (float)a->growth_interval) {
		if (isfinite(scal[GPO_SCAL_LS] * 2.0f)) {
			scal[GPO_SCAL_LS] *= 2.0f;
			scal[GPO_SCAL_LS_INV] *= 0.5f;
		}
		scal[GPO_SCAL_LS_GOOD] = 0.0f;
	} else {
		scal[GPO_SCAL_LS_GOOD] += 1.0f;
	}
}

/* One group over all a.n elements: norm_partial and norm_final at once. */
KERNEL void norm_small(BUF(const float, g), BUF(float, scal),
		       struct gpo_norm_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint lid = get_local_id(0), mid = a.n & ~3u;
	float4 acc = (float4)(0.0f);
	float4 bad = (float4)(0.0f);
	float2 r;

	VIEW(g);
	VIEW(scal);
	/* one wg_sum2 for both paths: PoCL loses barriers in branches */
	if (a.flags & GPO_NORM_EXACT) {
		r = norm_exact(g, 0, a.n, a.flags);
	} else {
		for (uint i = lid; i < mid / 4; i += GPO_WG_SIZE) {
			float4 v = ld4(g, 4 * i, 4);

			acc += v * v;
			bad += v * 0.0f;
		}
		if (lid == 0 && mid < a.n) {
			float4 v = ld4(g, mid, a.n - mid);

			acc += v * v;
			bad += v * 0.0f;
		}
		r.x = (acc.x + acc.y) + (acc.z + acc.w);
		r.y = isnan((bad.x + bad.y) + (bad.z + bad.w)) ? 1.0f : 0.0f;
	}
	r = wg_sum2(tmp, r);
	if (lid == 0)
		put_scal(scal, &a, r.x, r.y != 0.0f);
}

/*
 * One group over a.groups partials; clip_norm 0 means no clipping.
 * Work-item j adds partials j, j + 256, ... then the tree: a fixed order.
 */
KERNEL void norm_final(BUF(const float, part), BUF(float, scal),
		       struct gpo_norm_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint lid = get_local_id(0);
	float2 r = (float2)(0.0f);

	VIEW(part);
	VIEW(scal);
	for (uint i = lid; i < a.groups; i += GPO_WG_SIZE) {
		r.x += part[2 * i];
		r.y += part[2 * i + 1] != 0.0f ? 1.0f : 0.0f;
	}
	r = wg_sum2(tmp, r);
	if (lid == 0)
		put_scal(scal, &a, r.x, r.y != 0.0f);
}
