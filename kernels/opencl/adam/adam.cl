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
 * adam8 (abi/adam.h): blockwise 8-bit state, a work-group doing blocks
 * get_group_id(0), + q_groups, ...: the old state dequantized (exp_avg
 * signed, exp_avg_sq unsigned), the update of adam_at() in scalar form (p
 * from the unrounded new state), then the block's absmax and codes
 */
KERNEL void adam8(BUF(float, p), BUF(const float, g), BUF(uint, mq),
		  BUF(uint, vq), BUF(uint, ph), BUF(const float, scal),
		  BUF(float, mabs), BUF(float, vabs), struct gpo_adam_args a)
{
	__local uint red[2 * GPO_WG_SIZE], codes[2 * GPO_WG_SIZE];
	const int decoupled = (a.flags & GPO_ADAM_DECOUPLED) != 0;
	const float decay = decoupled ? a.decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a.weight_decay;
	uint lid = get_local_id(0);
	uint blocks = (a.n + GPO_WG_SIZE - 1) / GPO_WG_SIZE;
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
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a.flags, &gm))
		return;
	for (uint k = get_group_id(0); k < blocks; k += a.q_groups) {
		uint first = k * GPO_WG_SIZE, e = first + lid, q = a.q_off + e;
		uint cnt = min((uint)GPO_WG_SIZE, a.n - first);
		uint blk = a.q_blk + k;
		bool valid = lid < cnt;
		float pi, gi, mi = 0.0f, vi = 0.0f, denom, ma, va;

		if (valid) {
			pi = param_ld1(p, e, &pc);
			gi = param_g1(g, e, &pc) * gm + l2 * pi;
			mi = u8_dequant(u8_byte(mq[q >> 2], q), mabs[blk], true) *
			     a.beta1 + a.one_minus_beta1 * gi;
			vi = u8_dequant(u8_byte(vq[q >> 2], q), vabs[blk],
				      false) * a.beta2 +
			     a.one_minus_beta2 * gi * gi;
			denom = cr_div(cr_sqrt(vi), a.bc2_sqrt) + a.eps;
			param_st1(p, e, pi * decay -
					   a.step_size * cr_div(mi, denom), &pc);
		}
		u8_absmax(red, mi, vi, 2, valid, &ma, &va);
		if (lid == 0) {
			mabs[blk] = ma;
			vabs[blk] = va;
		}
		u8_pack(codes, mq + (a.q_off + first) / 4,
			vq + (a.q_off + first) / 4, 2,
			valid ? quant8(mi, ma, true) : 0u,
			valid ? quant8(vi, va, false) : 0u, cnt);
	}
}
