/* SPDX-License-Identifier: MIT */
/*
 * rmsprop.cl - torch.optim.RMSprop (abi/rmsprop.h):
 *   g += wd * p;  sq = alpha sq + (1 - alpha) g^2
 *   centered: ga = alpha ga + (1 - alpha) g; avg = sqrt(sq - ga^2) + eps
 *   else avg = sqrt(sq) + eps
 *   momentum: buf = momentum buf + g / avg; p -= lr buf
 *   else p -= lr g / avg
 */
#include "abi/rmsprop.h"
#define U8_ONE_STATE	struct gpo_rmsprop_args
#include "opencl/update.cl"

static inline void rmsprop_at(__global float *p, __global const float *g,
			      __global float *sq, __global float *mb,
			      __global float *ga, uint e, uint cnt,
			      uint flags, float gm, float lr, float alpha,
			      float oa, float eps, float wd, float mom,
			      const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 gi = param_g4(g, e, cnt, pc) * gm + wd * pv;
	float4 s = ld4(sq, e, cnt) * alpha + oa * gi * gi;
	float4 avg;

	st4(sq, e, cnt, s);
	if (flags & GPO_RMSPROP_CENTERED) {
		float4 ca = ld4(ga, e, cnt) * alpha + oa * gi;

		st4(ga, e, cnt, ca);
		s = s - ca * ca;
	}
	avg = cr_sqrt4(s) + eps;
	if (flags & GPO_RMSPROP_MOMENTUM) {
		float4 b = ld4(mb, e, cnt) * mom + cr_div4(gi, avg);

		st4(mb, e, cnt, b);
		param_st4(p, e, cnt, pv - lr * b, pc);
	} else {
		param_st4(p, e, cnt, pv - lr * cr_div4(gi, avg), pc);
	}
}

/* GPO_RMSPROP_STATE_BF16: the state points at bfloat16 (update.cl) */
static inline void rmsprop_bf16_at(__global float *p, __global const float *g,
				   __global ushort *sq, __global ushort *mb,
				   __global ushort *ga, uint e, uint cnt,
				   uint flags, float gm, float lr, float alpha,
				   float oa, float eps, float wd, float mom,
				   const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 gi = param_g4(g, e, cnt, pc) * gm + wd * pv;
	float4 s = bf16x4_ld(sq, e, cnt) * alpha + oa * gi * gi;
	float4 avg;

	bf16x4_st(sq, e, cnt, s);
	if (flags & GPO_RMSPROP_CENTERED) {
		float4 ca = bf16x4_ld(ga, e, cnt) * alpha + oa * gi;

		bf16x4_st(ga, e, cnt, ca);
		s = s - ca * ca;
	}
	avg = cr_sqrt4(s) + eps;
	if (flags & GPO_RMSPROP_MOMENTUM) {
		float4 b = bf16x4_ld(mb, e, cnt) * mom + cr_div4(gi, avg);

		bf16x4_st(mb, e, cnt, b);
		param_st4(p, e, cnt, pv - lr * b, pc);
	} else {
		param_st4(p, e, cnt, pv - lr * cr_div4(gi, avg), pc);
	}
}

KERNEL void rmsprop(BUF(float, p), BUF(const float, g), BUF(float, sq),
		    BUF(float, mb), BUF(float, ga), BUF(const float, scal),
		    BUF(uint, p_half),
		    struct gpo_rmsprop_args a)
{
	float gm;
	PARAM_CTX(pc, a, p_half + p_half_off);

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(mb);
	VIEW(ga);
	VIEW(scal);
	if (!grad_mul(scal, a.flags, &gm))
		return;
	if (a.flags & GPO_RMSPROP_STATE_BF16) {
		__global ushort *sqh = (__global ushort *)sq;
		__global ushort *mbh = (__global ushort *)mb;
		__global ushort *gah = (__global ushort *)ga;

		FOR_EACH_FLOAT4(i, a.n)
			rmsprop_bf16_at(p, g, sqh, mbh, gah, 4 * i, 4, a.flags,
					gm, a.lr, a.alpha, a.one_minus_alpha,
					a.eps, a.weight_decay, a.momentum, &pc);
		if (HAS_TAIL(a.n))
			rmsprop_bf16_at(p, g, sqh, mbh, gah, TAIL_START(a.n),
					a.n & 3, a.flags, gm, a.lr, a.alpha,
					a.one_minus_alpha, a.eps,
					a.weight_decay, a.momentum, &pc);
		return;
	}
	FOR_EACH_FLOAT4(i, a.n)
		rmsprop_at(p, g, sq, mb, ga, 4 * i, 4, a.flags, gm, a.lr,
			   a.alpha, a.one_minus_alpha, a.eps, a.weight_decay,
			   a.momentum, &pc);
	if (HAS_TAIL(a.n))
		rmsprop_at(p, g, sq, mb, ga, TAIL_START(a.n), a.n & 3, a.flags,
			   gm, a.lr, a.alpha, a.one_minus_alpha, a.eps,
			   a.weight_decay, a.momentum, &pc);
}

/*
 * rmsprop8 (abi/rmsprop.h): blockwise 8-bit square_avg (the signed map,
 * as bitsandbytes' RMSprop8bit), neither momentum nor centered; spans of
 * 8 blocks a work-group (update.cl's u8_*, which say the design and
 * why): rmsprop's update from the dequantized state, then the block's
 * absmax and codes. u8_elem1: a quad's update.
 */
static inline float4 u8_elem1(float4 p, float4 g, float4 s, float gm,
			      const struct gpo_rmsprop_args *a, float4 *so)
{
	float4 gi = g * gm + a->weight_decay * p;

	*so = s * a->alpha + a->one_minus_alpha * gi * gi;
	return p - a->lr * cr_div4(gi, cr_sqrt4(*so) + a->eps);
}

/*
 * OpenCL's 8-bit kernels read the half-parameter flags at run time: one
 * program, f32 (ops.c's DT_PARAM lets Vulkan build one module per
 * parameter dtype; here the f16/bf16 programs are LAMB's alone)
 */
#if defined(GPO_DTYPE_F32)
KERNEL void rmsprop8(BUF(float, p), BUF(const float, g), BUF(uint, sq),
		     BUF(uint, ph), BUF(float, ga), BUF(const float, scal),
		     BUF(float, sabs), struct gpo_rmsprop_args a)
{
	__local uint qm[U8_QMAP];
	__local uint4 red[U8_RED];

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(ph);
	VIEW(scal);
	VIEW(sabs);
	PARAM_CTX(pc, a, ph);
	u8_main1(p, g, sq, sabs, scal, &a, &pc, qm, red);
}
#endif
