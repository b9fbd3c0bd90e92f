/* SPDX-License-Identifier: MIT */
/*
 * adam.cl - torch.optim.Adam and AdamW (abi/adam.h):
 *   Adam:  g += wd * p                  (L2, in the gradient)
 *   AdamW: p *= 1 - lr * wd             (decoupled: a.decay)
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   amsgrad: vmax = max(vmax, v), used in place of v
 *   p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
 */
#include "abi/adam.h"
#include "opencl/update.cl"

static inline void adam_at(__global float *p, __global const float *g,
			   __global float *m, __global float *v,
			   __global float *vmax, uint e, uint cnt, uint flags,
			   float gm, float l2, float decay, float b1, float b2,
			   float ob1, float ob2, float eps, float step_size,
			   float bc2_sqrt,
			   const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 gi = param_g4(g, e, cnt, pc) * gm + l2 * pv;
	float4 mi = ld4(m, e, cnt) * b1 + ob1 * gi;
	float4 vi = ld4(v, e, cnt) * b2 + ob2 * gi * gi;
	float4 denom;

	st4(m, e, cnt, mi);
	st4(v, e, cnt, vi);
	if (flags & GPO_ADAM_AMSGRAD) {
		vi = fmax(ld4(vmax, e, cnt), vi);
		st4(vmax, e, cnt, vi);
	}
	denom = cr_div4(cr_sqrt4(vi), (float4)(bc2_sqrt)) + eps;
	param_st4(p, e, cnt, pv * decay - step_size * cr_div4(mi, denom), pc);
}

/*
 * GPO_ADAM_STATE_BF16: the same update with the state as bfloat16 (@m,
 * @v, @vmax point at ushorts), read exactly and stored rounded to
 * nearest even (update.cl's bf16x4_ld/st)
 */
static inline void adam_bf16_at(__global float *p, __global const float *g,
				__global ushort *m, __global ushort *v,
				__global ushort *vmax, uint e, uint cnt,
				uint flags, float gm, float l2, float decay,
				float b1, float b2, float ob1, float ob2,
				float eps, float step_size, float bc2_sqrt,
				const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 gi = param_g4(g, e, cnt, pc) * gm + l2 * pv;
	float4 mi = bf16x4_ld(m, e, cnt) * b1 + ob1 * gi;
	float4 vi = bf16x4_ld(v, e, cnt) * b2 + ob2 * gi * gi;
	float4 denom;

	bf16x4_st(m, e, cnt, mi);
	bf16x4_st(v, e, cnt, vi);
	if (flags & GPO_ADAM_AMSGRAD) {
		vi = fmax(bf16x4_ld(vmax, e, cnt), vi);
		bf16x4_st(vmax, e, cnt, vi);
	}
	denom = cr_div4(cr_sqrt4(vi), (float4)(bc2_sqrt)) + eps;
	param_st4(p, e, cnt, pv * decay - step_size * cr_div4(mi, denom), pc);
}

/*
 * one_minus_beta1/2 are 1 - x in double, as torch's Python floats:
 * 1 - (float)x is off by up to 1.3e-5 relative for x = 0.999
 */
KERNEL void adam(BUF(float, p), BUF(const float, g), BUF(float, m),
		 BUF(float, v), BUF(float, vmax), BUF(const float, scal),
		 BUF(uint, p_half),
		 struct gpo_adam_args a)
{
	const int decoupled = (a.flags & GPO_ADAM_DECOUPLED) != 0;
	const float decay = decoupled ? a.decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a.weight_decay;
	float gm;
	PARAM_CTX(pc, a, p_half + p_half_off);

	VIEW(p);
	VIEW(g);
	VIEW(m);
	VIEW(v);
	VIEW(vmax);
	VIEW(scal);
	if (!grad_mul(scal, a.flags, &gm))
		return;
	if (a.flags & GPO_ADAM_STATE_BF16) {
		/* VIEW() moved the float pointers by whole 4-byte words */
		__global ushort *mh = (__global ushort *)m;
		__global ushort *vh = (__global ushort *)v;
		__global ushort *vmh = (__global ushort *)vmax;

		FOR_EACH_FLOAT4(i, a.n)
			adam_bf16_at(p, g, mh, vh, vmh, 4 * i, 4, a.flags, gm,
				     l2, decay, a.beta1, a.beta2,
				     a.one_minus_beta1, a.one_minus_beta2,
				     a.eps, a.step_size, a.bc2_sqrt, &pc);
		if (HAS_TAIL(a.n))
			adam_bf16_at(p, g, mh, vh, vmh, TAIL_START(a.n),
				     a.n & 3, a.flags, gm, l2, decay, a.beta1,
				     a.beta2, a.one_minus_beta1,
				     a.one_minus_beta2, a.eps, a.step_size,
				     a.bc2_sqrt, &pc);
		return;
	}
	FOR_EACH_FLOAT4(i, a.n)
		adam_at(p, g, m, v, vmax, 4 * i, 4, a.flags, gm, l2, decay,
			a.beta1, a.beta2, a.one_minus_beta1,
			a.one_minus_beta2, a.eps, a.step_size, a.bc2_sqrt, &pc);
	if (HAS_TAIL(a.n))
		adam_at(p, g, m, v, vmax, TAIL_START(a.n), a.n & 3, a.flags,
			gm, l2, decay, a.beta1, a.beta2, a.one_minus_beta1,
			a.one_minus_beta2, a.eps, a.step_size, a.bc2_sqrt, &pc);
}

/* one element of adam8: adam_at()'s arithmetic in scalar form */
static inline float adam8_elem(float pi, float g0, uint mc, uint vc, float ma,
			       float va, float *mo, float *vo,
			       __local const uint *qm,
			       const struct gpo_adam_args *a, float gm,
			       float decay, float l2)
{
	float gi, mi, vi, denom;

	gi = g0 * gm + l2 * pi;
	mi = u8_dequant(qm, mc, ma, true) * a->beta1 +
	     a->one_minus_beta1 * gi;
	vi = u8_dequant(qm, vc, va, false) * a->beta2 +
	     a->one_minus_beta2 * gi * gi;
	denom = cr_div(cr_sqrt(vi), a->bc2_sqrt) + a->eps;
	*mo = mi;
	*vo = vi;
	return pi * decay - a->step_size * cr_div(mi, denom);
}

#define ADAM8_ELEM(p0, g0, mc, vc, ma0, va0, mo, vo) \
	adam8_elem(p0, g0, mc, vc, ma0, va0, mo, vo, qm, &a, gm, decay, l2)

/*
 * adam8 (abi/adam.h): blockwise 8-bit state, a work-group doing spans of
 * 8 blocks get_group_id(0), + q_groups, ... (update.cl's u8_*): each
 * element's old state dequantized (exp_avg signed, exp_avg_sq unsigned),
 * the update of adam_at() in scalar form (p from the unrounded new
 * state), then the block's absmax and codes
 */
KERNEL void adam8(BUF(float, p), BUF(const float, g), BUF(uint, mq),
		  BUF(uint, vq), BUF(float, vmax), BUF(const float, scal),
		  BUF(float, mabs), BUF(float, vabs), struct gpo_adam_args a)
{
	__local uint qm[512], red[U8_RED_SIZE];
	const int decoupled = (a.flags & GPO_ADAM_DECOUPLED) != 0;
	const float decay = decoupled ? a.decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a.weight_decay;
	uint par = 0;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(mq);
	VIEW(vq);
	VIEW(scal);
	VIEW(mabs);
	VIEW(vabs);
	u8_qmap_load(qm);
	barrier(CLK_LOCAL_MEM_FENCE);
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	for (uint s = get_group_id(0); s < u8_spans(a.n); s += a.q_groups) {
		uint k, first, cnt, blk, c[2], e[2], w[2], mw[2], vw[2];
		uint mx = 0, vx = 0;
		float4 mv[2], vv[2];
		float ma = 0.0f, va = 0.0f, na, nv;

		u8_block(s, a.n, &k, &first, &cnt);
		blk = a.q_blk + k;
		if (cnt) {
			ma = mabs[blk];
			va = vabs[blk];
		}
		for (uint h = 0; h < 2; h++) {
			float4 pv, gv;

			e[h] = u8_quad(first, cnt, h, &c[h]);
			/* q_off is a multiple of 4: a quad's codes are a word */
			w[h] = (a.q_off + e[h]) / 4;
			mv[h] = vv[h] = (float4)(0.0f);
			mw[h] = vw[h] = 0;
			if (!c[h])
				continue;
			pv = ld4(p, e[h], c[h]);
			gv = ld4(g, e[h], c[h]);
			mw[h] = mq[w[h]];
			vw[h] = vq[w[h]];
			U8_QUAD2(ADAM8_ELEM, c[h], pv, gv, mw[h], vw[h], ma, va,
				 mv[h], vv[h]);
			st4(p, e[h], c[h], pv);
			mx = max(mx, u8_bits_max(mv[h], c[h]));
			vx = max(vx, u8_bits_max(vv[h], c[h]));
		}
		/* every work-item of the block has read mabs[blk] by now */
		u8_absmax(red, par, mx, vx, &na, &nv);
		if (cnt && get_local_id(0) % U8_LANES == 0) {
			mabs[blk] = na;
			vabs[blk] = nv;
		}
		for (uint h = 0; h < 2; h++) {
			if (!c[h])
				continue;
			mq[w[h]] = u8_word(qm, mv[h], c[h], na, true, mw[h]);
			vq[w[h]] = u8_word(qm, vv[h], c[h], nv, false, vw[h]);
		}
		par ^= 1;
	}
}
