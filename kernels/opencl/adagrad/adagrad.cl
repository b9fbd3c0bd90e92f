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

/* one element of adagrad8: adagrad's arithmetic in scalar form */
static inline float adagrad8_elem(float pi, float g0, uint code, float sa,
				  float *so, __local const uint *qm,
				  const struct gpo_adagrad_args *a, float gm)
{
	float gi, si;

	gi = g0 * gm + a->weight_decay * pi;
	si = u8_dequant(qm, code, sa, true) + gi * gi;
	*so = si;
	return pi - a->clr * cr_div(gi, cr_sqrt(si) + a->eps);
}

#define ADAGRAD8_ELEM(p0, g0, code, sa0, so) \
	adagrad8_elem(p0, g0, code, sa0, so, qm, &a, gm)

/*
 * adagrad8 (abi/adagrad.h): blockwise 8-bit sum (the signed map, as
 * bitsandbytes' one-state optimizers), a work-group doing spans of 8
 * blocks get_group_id(0), + q_groups, ... (update.cl's u8_*): adagrad's
 * update from the dequantized sum, then the block's absmax and codes
 */
KERNEL void adagrad8(BUF(float, p), BUF(const float, g), BUF(uint, sq),
		     BUF(const float, scal), BUF(float, sabs),
		     struct gpo_adagrad_args a)
{
	__local uint qm[512], red[U8_RED_SIZE];
	uint par = 0;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(scal);
	VIEW(sabs);
	u8_qmap_load(qm);
	barrier(CLK_LOCAL_MEM_FENCE);
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	for (uint s = get_group_id(0); s < u8_spans(a.n); s += a.q_groups) {
		uint k, first, cnt, blk, c[2], e[2], w[2], sw[2], sx = 0;
		float4 sv[2];
		float sa = 0.0f, na, unused;

		u8_block(s, a.n, &k, &first, &cnt);
		blk = a.q_blk + k;
		if (cnt)
			sa = sabs[blk];
		for (uint h = 0; h < 2; h++) {
			float4 pv, gv;

			e[h] = u8_quad(first, cnt, h, &c[h]);
			/* q_off is a multiple of 4: a quad's codes are a word */
			w[h] = (a.q_off + e[h]) / 4;
			sv[h] = (float4)(0.0f);
			sw[h] = 0;
			if (!c[h])
				continue;
			pv = ld4(p, e[h], c[h]);
			gv = ld4(g, e[h], c[h]);
			sw[h] = sq[w[h]];
			U8_QUAD1(ADAGRAD8_ELEM, c[h], pv, gv, sw[h], sa, sv[h]);
			st4(p, e[h], c[h], pv);
			sx = max(sx, u8_bits_max(sv[h], c[h]));
		}
		/* every work-item of the block has read sabs[blk] by now */
		u8_absmax(red, par, sx, 0u, &na, &unused);
		if (cnt && get_local_id(0) % U8_LANES == 0)
			sabs[blk] = na;
		for (uint h = 0; h < 2; h++)
			if (c[h])
				sq[w[h]] = u8_word(qm, sv[h], c[h], na, true,
						   sw[h]);
		par ^= 1;
	}
}
