/* SPDX-License-Identifier: MIT */
/*
 * lion.cl - Lion (Chen et al. 2023, as lion-pytorch; abi/lion.h):
 *   c = b1 m + (1 - b1) g;  p = p (1 - lr wd) - lr sign(c)
 *   m = b2 m + (1 - b2) g
 * sign(0) = 0 (and sign(NaN) = 0), like the cpu backend's.
 */
#include "abi/lion.h"
#define U8_ONE_STATE	struct gpo_lion_args
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

/*
 * lion8 (abi/lion.h): blockwise 8-bit exp_avg (the signed map); spans of
 * 8 blocks a work-group (update.cl's u8_*, which say the design and
 * why): lion_at()'s update from the dequantized state, then the block's
 * absmax and codes. u8_elem1: a quad's update.
 */
static inline float4 u8_elem1(float4 p, float4 g, float4 m, float gm,
			      const struct gpo_lion_args *a, float4 *so)
{
	float4 gi = g * gm;
	float4 c = m * a->beta1 + a->one_minus_beta1 * gi;

	*so = m * a->beta2 + a->one_minus_beta2 * gi;
	return p * a->decay - a->lr * sign(c);
}

/*
 * OpenCL's 8-bit kernels read the half-parameter flags at run time: one
 * program, f32 (ops.c's DT_PARAM lets Vulkan build one module per
 * parameter dtype; here the f16/bf16 programs are LAMB's alone)
 */
#if defined(GPO_DTYPE_F32)
KERNEL void lion8(BUF(float, p), BUF(const float, g), BUF(uint, mq),
		  BUF(const float, scal), BUF(float, mabs), BUF(uint, ph),
		  struct gpo_lion_args a)
{
	__local uint qm[U8_QMAP];
	__local uint4 red[U8_RED];

	VIEW(p);
	VIEW(g);
	VIEW(mq);
	VIEW(scal);
	VIEW(mabs);
	VIEW(ph);
	PARAM_CTX(pc, a, ph);
	u8_main1(p, g, mq, mabs, scal, &a, &pc, qm, red);
}
#endif
