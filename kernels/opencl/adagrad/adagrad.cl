/* SPDX-License-Identifier: MIT */
/*
 * adagrad.cl - torch.optim.Adagrad (abi/adagrad.h):
 *   g += wd * p;  sum += g^2;  p -= clr * g / (sqrt(sum) + eps)
 * with clr = lr / (1 + (step - 1) * lr_decay) computed on the host.
 */
#include "abi/adagrad.h"
#define U8_ONE_STATE	struct gpo_adagrad_args
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
 * bitsandbytes' one-state optimizers); spans of 8 blocks a work-group
 * (update.cl's u8_*, which say the design and why): adagrad's update
 * from the dequantized sum, then the block's absmax and codes.
 * u8_elem1: a quad's update.
 */
static inline float4 u8_elem1(float4 p, float4 g, float4 s, float gm,
			      const struct gpo_adagrad_args *a, float4 *so)
{
	float4 gi = g * gm + a->weight_decay * p;

	*so = s + gi * gi;
	return p - a->clr * cr_div4(gi, cr_sqrt4(*so) + a->eps);
}

/*
 * OpenCL's 8-bit kernels read the half-parameter flags at run time: one
 * program, f32 (ops.c's DT_PARAM lets Vulkan build one module per
 * parameter dtype; here the f16/bf16 programs are LAMB's alone)
 */
#if defined(GPO_DTYPE_F32)
KERNEL void adagrad8(BUF(float, p), BUF(const float, g), BUF(uint, sq),
		     BUF(const float, scal), BUF(float, sabs), BUF(uint, ph),
		     struct gpo_adagrad_args a)
{
	__local uint qm[U8_QMAP];
	__local uint4 red[U8_RED];

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(scal);
	VIEW(sabs);
	VIEW(ph);
	PARAM_CTX(pc, a, ph);
	u8_main1(p, g, sq, sabs, scal, &a, &pc, qm, red);
}
#endif
