/* SPDX-License-Identifier: MIT */
/*
 * lion.cl - Lion (Chen et al. 2023, as lion-pytorch; abi/lion.h):
 *   c = b1 m + (1 - b1) g;  p = p (1 - lr wd) - lr sign(c)
 *   m = b2 m + (1 - b2) g
 * sign(0) = 0 (and sign(NaN) = 0), like the cpu backend's.
 */
#include "abi/lion.h"
#include "opencl/update.cl"

static inline void lion_at(__global float *p, __global const float *g,
			   __global float *m, uint e, uint cnt, float gm,
			   float lr, float b1, float b2, float ob1, float ob2,
			   float decay,
			   const struct param_ctx *pc)
{
	float4 gi = param_g4(g, e, cnt, pc) * gm;
	float4 mv = ld4(m, e, cnt);
	float4 c = mv * b1 + ob1 * gi;

	param_st4(p, e, cnt, param_ld4(p, e, cnt, pc) * decay - lr * sign(c),
		  pc);
	st4(m, e, cnt, mv * b2 + ob2 * gi);
}

/* GPO_LION_STATE_BF16: @m points at bfloat16 (update.cl) */
static inline void lion_bf16_at(__global float *p, __global const float *g,
				__global ushort *m, uint e, uint cnt, float gm,
				float lr, float b1, float b2, float ob1,
				float ob2, float decay,
				const struct param_ctx *pc)
{
	float4 gi = param_g4(g, e, cnt, pc) * gm;
	float4 mv = bf16x4_ld(m, e, cnt);
	float4 c = mv * b1 + ob1 * gi;

	param_st4(p, e, cnt, param_ld4(p, e, cnt, pc) * decay - lr * sign(c),
		  pc);
	bf16x4_st(m, e, cnt, mv * b2 + ob2 * gi);
}

KERNEL void lion(BUF(float, p), BUF(const float, g), BUF(float, m),
		 BUF(const float, scal), BUF(uint, p_half),
		 struct gpo_lion_args a)
{
	float gm;
	PARAM_CTX(pc, a, p_half + p_half_off);

	VIEW(p);
	VIEW(g);
	VIEW(m);
	VIEW(scal);
	if (!grad_mul(scal, a.flags, &gm))
		return;
	if (a.flags & GPO_LION_STATE_BF16) {
		__global ushort *mh = (__global ushort *)m;

		FOR_EACH_FLOAT4(i, a.n)
			lion_bf16_at(p, g, mh, 4 * i, 4, gm, a.lr, a.beta1,
				     a.beta2, a.one_minus_beta1,
				     a.one_minus_beta2, a.decay, &pc);
		if (HAS_TAIL(a.n))
			lion_bf16_at(p, g, mh, TAIL_START(a.n), a.n & 3, gm,
				     a.lr, a.beta1, a.beta2, a.one_minus_beta1,
				     a.one_minus_beta2, a.decay, &pc);
		return;
	}
	FOR_EACH_FLOAT4(i, a.n)
		lion_at(p, g, m, 4 * i, 4, gm, a.lr, a.beta1, a.beta2,
			a.one_minus_beta1, a.one_minus_beta2, a.decay, &pc);
	if (HAS_TAIL(a.n))
		lion_at(p, g, m, TAIL_START(a.n), a.n & 3, gm, a.lr, a.beta1,
			a.beta2, a.one_minus_beta1, a.one_minus_beta2, a.decay,
			&pc);
}

/* one element of lion8: lion_at()'s arithmetic in scalar form */
static inline float lion8_elem(float pi, float g0, uint code, float sa,
			       float *so, __local const uint *qm,
			       const struct gpo_lion_args *a, float gm)
{
	float gi = g0 * gm, m0 = u8_dequant(qm, code, sa, true), c;

	c = m0 * a->beta1 + a->one_minus_beta1 * gi;
	*so = m0 * a->beta2 + a->one_minus_beta2 * gi;
	return pi * a->decay - a->lr * sign(c);
}

#define LION8_ELEM(p0, g0, code, sa0, so) \
	lion8_elem(p0, g0, code, sa0, so, qm, &a, gm)

/*
 * lion8 (abi/lion.h): blockwise 8-bit exp_avg (the signed map), a
 * work-group doing spans of 8 blocks get_group_id(0), + q_groups, ...
 * (update.cl's u8_*): lion_at()'s update from the dequantized state,
 * then the block's absmax and codes
 */
KERNEL void lion8(BUF(float, p), BUF(const float, g), BUF(uint, sq),
		  BUF(const float, scal), BUF(float, sabs),
		  struct gpo_lion_args a)
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
			U8_QUAD1(LION8_ELEM, c[h], pv, gv, sw[h], sa, sv[h]);
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
