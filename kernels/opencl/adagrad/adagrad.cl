/* SPDX-License-Identifier: MIT */
/*
 * adagrad.cl - torch.optim.Adagrad (abi/adagrad.h):
 *   g += wd * p;  sum += g^2;  p -= clr * g / (sqrt(sum) + eps)
 * with clr = lr / (1 + (step - 1) * lr_decay) computed on the host.
 */
#include "abi/adagrad.h"
#include "opencl/update.cl"

static inline void adagrad_at(__global float *p, __global const float *g,
			      __global float *sum, uint e, uint cnt, float gm,
			      float clr, float wd, float eps,
			      const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 gi = param_g4(g, e, cnt, pc) * gm + wd * pv;
	float4 s = ld4(sum, e, cnt) + gi * gi;

	st4(sum, e, cnt, s);
	param_st4(p, e, cnt, pv - clr * cr_div4(gi, cr_sqrt4(s) + eps), pc);
}

/* GPO_ADAGRAD_STATE_BF16: @sum points at bfloat16 (update.cl) */
static inline void adagrad_bf16_at(__global float *p, __global const float *g,
				   __global ushort *sum, uint e, uint cnt,
				   float gm, float clr, float wd, float eps,
				   const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 gi = param_g4(g, e, cnt, pc) * gm + wd * pv;
	float4 s = bf16x4_ld(sum, e, cnt) + gi * gi;

	bf16x4_st(sum, e, cnt, s);
	param_st4(p, e, cnt, pv - clr * cr_div4(gi, cr_sqrt4(s) + eps), pc);
}

KERNEL void adagrad(BUF(float, p), BUF(const float, g), BUF(float, sum),
		    BUF(const float, scal), BUF(uint, p_half),
		    struct gpo_adagrad_args a)
{
	float gm;
	PARAM_CTX(pc, a, p_half + p_half_off);

	VIEW(p);
	VIEW(g);
	VIEW(sum);
	VIEW(scal);
	if (!grad_mul(scal, a.flags, &gm))
		return;
	if (a.flags & GPO_ADAGRAD_STATE_BF16) {
		__global ushort *sh = (__global ushort *)sum;

		FOR_EACH_FLOAT4(i, a.n)
			adagrad_bf16_at(p, g, sh, 4 * i, 4, gm, a.clr,
					a.weight_decay, a.eps, &pc);
		if (HAS_TAIL(a.n))
			adagrad_bf16_at(p, g, sh, TAIL_START(a.n), a.n & 3, gm,
					a.clr, a.weight_decay, a.eps, &pc);
		return;
	}
	FOR_EACH_FLOAT4(i, a.n)
		adagrad_at(p, g, sum, 4 * i, 4, gm, a.clr, a.weight_decay,
			   a.eps, &pc);
	if (HAS_TAIL(a.n))
		adagrad_at(p, g, sum, TAIL_START(a.n), a.n & 3, gm, a.clr,
			   a.weight_decay, a.eps, &pc);
}

/*
 * adagrad8 (abi/adagrad.h): blockwise 8-bit sum (the signed map, as
 * bitsandbytes' one-state optimizers), a work-group doing blocks
 * get_group_id(0), + q_groups, ...: adagrad's update from the dequantized
 * sum, then the block's absmax and codes
 */
KERNEL void adagrad8(BUF(float, p), BUF(const float, g), BUF(uint, sq),
		     BUF(const float, scal), BUF(float, sabs), BUF(uint, ph),
		     struct gpo_adagrad_args a)
{
	__local uint red[2 * GPO_WG_SIZE], codes[2 * GPO_WG_SIZE];
	uint lid = get_local_id(0);
	uint blocks = (a.n + GPO_WG_SIZE - 1) / GPO_WG_SIZE;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(scal);
	VIEW(sabs);
	VIEW(ph);
	PARAM_CTX(pc, a, ph);
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	for (uint k = get_group_id(0); k < blocks; k += a.q_groups) {
		uint first = k * GPO_WG_SIZE, e = first + lid, q = a.q_off + e;
		uint cnt = min((uint)GPO_WG_SIZE, a.n - first);
		uint blk = a.q_blk + k;
		bool valid = lid < cnt;
		float pi, gi, si = 0.0f, sa, unused;

		if (valid) {
			pi = param_ld1(p, e, &pc);
			gi = param_g1(g, e, &pc) * gm + a.weight_decay * pi;
			si = u8_dequant(u8_byte(sq[q >> 2], q), sabs[blk], true) +
			     gi * gi;
			param_st1(p, e, pi - a.clr * cr_div(gi, cr_sqrt(si) +
							   a.eps), &pc);
		}
		u8_absmax(red, si, 0.0f, 1, valid, &sa, &unused);
		if (lid == 0)
			sabs[blk] = sa;
		u8_pack(codes, sq + (a.q_off + first) / 4,
			sq + (a.q_off + first) / 4, 1,
			valid ? quant8(si, sa, true) : 0u, 0u, cnt);
	}
}
