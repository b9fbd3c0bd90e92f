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

/*
 * adam8 (abi/adam.h): blockwise 8-bit state, spans of 8 blocks a
 * work-group (update.cl's u8_*, which say the design and why): each
 * work-item its two quads of a block, dequantizing exp_avg (signed map)
 * and exp_avg_sq (unsigned map), updating them and p exactly as adam_at()
 * does (p from the unrounded new state); then the block's absmax of the
 * new values and its words of codes
 */
static inline void adam8_span(uint s, uint par, bool hp, __global float *p,
			      __global const float *g, __global uint *mq,
			      __global uint *vq, __global float *mabs,
			      __global float *vabs, float gm, float l2,
			      float decay, const struct gpo_adam_args *a,
			      const struct param_ctx *pc,
			      __local const uint *qm, __local uint4 *red)
{
	uint k, cnt, blk, c[2], e[2], w[2], mw[2], vw[2], mx = 0u, vx = 0u;
	float4 pv[2], gv[2], mv[2], vv[2];
	float ma = 0.0f, va = 0.0f, na, nv;

	cnt = u8_block(s, a->n, &k);
	blk = a->q_blk + k;
	if (cnt != 0u) {
		ma = mabs[blk];
		va = vabs[blk];
	}
	for (uint h = 0u; h < 2u; h++) {
		e[h] = u8_quad_first(k, h);
		c[h] = u8_quad_cnt(k, cnt, e[h]);
		/* q_off is a multiple of 4: the quad's codes are one word */
		w[h] = (a->q_off + e[h]) / 4u;
		if (c[h] == 0u)
			continue;
		u8_quad_load(hp, p, g, e[h], c[h], pc, &pv[h], &gv[h]);
		mw[h] = mq[w[h]];
		vw[h] = vq[w[h]];
	}
	for (uint h = 0u; h < 2u; h++) {
		float4 gi, denom;

		if (c[h] == 0u)
			continue;
		gi = gv[h] * gm + l2 * pv[h];
		mv[h] = u8_dequant4(qm, mw[h], ma, true) * a->beta1 +
			a->one_minus_beta1 * gi;
		vv[h] = u8_dequant4(qm, vw[h], va, false) * a->beta2 +
			a->one_minus_beta2 * gi * gi;
		denom = cr_div4(cr_sqrt4(vv[h]), (float4)(a->bc2_sqrt)) +
			a->eps;
		pv[h] = pv[h] * decay - a->step_size * cr_div4(mv[h], denom);
		u8_quad_store(hp, p, e[h], c[h], pv[h], pc);
		mx = max(mx, u8_bits_max(mv[h], c[h]));
		vx = max(vx, u8_bits_max(vv[h], c[h]));
	}
	/* every work-item of the block has read mabs[blk] by now */
	u8_absmax(red, par, true, mx, vx, &na, &nv);
	if (cnt != 0u && get_local_id(0) % U8_LANES == 0u) {
		mabs[blk] = na;
		vabs[blk] = nv;
	}
	for (uint h = 0u; h < 2u; h++)
		if (c[h] != 0u)
			mq[w[h]] = u8_word(qm, mv[h], c[h], na, true, mw[h]);
	for (uint h = 0u; h < 2u; h++)
		if (c[h] != 0u)
			vq[w[h]] = u8_word(qm, vv[h], c[h], nv, false, vw[h]);
}

/*
 * OpenCL's 8-bit kernels read the half-parameter flags at run time: one
 * program, f32 (ops.c's DT_PARAM lets Vulkan build one module per
 * parameter dtype; here the f16/bf16 programs are LAMB's alone)
 */
#if defined(GPO_DTYPE_F32)
KERNEL void adam8(BUF(float, p), BUF(const float, g), BUF(uint, mq),
		  BUF(uint, vq), BUF(uint, ph), BUF(const float, scal),
		  BUF(float, mabs), BUF(float, vabs), struct gpo_adam_args a)
{
	__local uint qm[U8_QMAP];
	__local uint4 red[U8_RED];
	const int decoupled = (a.flags & GPO_ADAM_DECOUPLED) != 0;
	const float decay = decoupled ? a.decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a.weight_decay;
	uint par = 0u, spans = u8_spans(a.n);
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(mq);
	VIEW(vq);
	VIEW(ph);
	VIEW(scal);
	VIEW(mabs);
	VIEW(vabs);
	PARAM_CTX(pc, a, ph);
	u8_qmap_load(qm);
	barrier(CLK_LOCAL_MEM_FENCE);
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	/* one loop: see u8_main1() */
	for (uint s = get_group_id(0); s < spans; s += a.q_groups) {
		adam8_span(s, par, (a.flags & GPO_UPD_PARAM_HALF) != 0, p, g,
			   mq, vq, mabs, vabs, gm, l2, decay, &a, &pc, qm, red);
		par ^= 1u;
	}
}
#endif
