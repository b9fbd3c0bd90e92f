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
 * as bitsandbytes' RMSprop8bit), neither momentum nor centered; a
 * work-group doing blocks get_group_id(0), + q_groups, ...: rmsprop's
 * update from the dequantized state, then the block's absmax and codes
 */
KERNEL void rmsprop8(BUF(float, p), BUF(const float, g), BUF(uint, sq),
		     BUF(uint, ph), BUF(float, ga), BUF(const float, scal),
		     BUF(float, sabs), struct gpo_rmsprop_args a)
{
	__local uint red[2 * GPO_WG_SIZE], codes[2 * GPO_WG_SIZE];
	uint lid = get_local_id(0);
	uint blocks = (a.n + GPO_WG_SIZE - 1) / GPO_WG_SIZE;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(ph);
	VIEW(scal);
	VIEW(sabs);
	PARAM_CTX(pc, a, ph);
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	for (uint k = get_group_id(0); k < blocks; k += a.q_groups) {
		uint first = k * GPO_WG_SIZE, e = first + lid, q = a.q_off + e;
		uint cnt = min((uint)GPO_WG_SIZE, a.n - first);
		uint blk = a.q_blk + k;
		bool valid = lid < cnt;
		float pi, gi, si = 0.0f, avg, sa, unused;

		if (valid) {
			pi = param_ld1(p, e, &pc);
			gi = param_g1(g, e, &pc) * gm + a.weight_decay * pi;
			si = u8_dequant(u8_byte(sq[q >> 2], q), sabs[blk], true) *
			     a.alpha + a.one_minus_alpha * gi * gi;
			avg = cr_sqrt(si) + a.eps;
			param_st1(p, e, pi - a.lr * cr_div(gi, avg), &pc);
		}
		u8_absmax(red, si, 0.0f, 1, valid, &sa, &unused);
		if (lid == 0)
			sabs[blk] = sa;
		u8_pack(codes, sq + (a.q_off + first) / 4,
			sq + (a.q_off + first) / 4, 1,
			valid ? quant8(si, sa, true) : 0u, 0u, cnt);
	}
}
