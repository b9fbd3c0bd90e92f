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
			      float clr, float wd, float eps)
{
	float4 pv = ld4(p, e, cnt);
	float4 gi = ld4(g, e, cnt) * gm + wd * pv;
	float4 s = ld4(sum, e, cnt) + gi * gi;

	st4(sum, e, cnt, s);
	st4(p, e, cnt, pv - clr * cr_div4(gi, cr_sqrt4(s) + eps));
}

/* GPO_ADAGRAD_STATE_BF16: @sum points at bfloat16 (update.cl) */
static inline void adagrad_bf16_at(__global float *p, __global const float *g,
				   __global ushort *sum, uint e, uint cnt,
				   float gm, float clr, float wd, float eps)
{
	float4 pv = ld4(p, e, cnt);
	float4 gi = ld4(g, e, cnt) * gm + wd * pv;
	float4 s = bf16x4_ld(sum, e, cnt) + gi * gi;

	bf16x4_st(sum, e, cnt, s);
	st4(p, e, cnt, pv - clr * cr_div4(gi, cr_sqrt4(s) + eps));
}

KERNEL void adagrad(BUF(float, p), BUF(const float, g), BUF(float, sum),
		    BUF(const float, scal), struct gpo_adagrad_args a)
{
	float gm;

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
					a.weight_decay, a.eps);
		if (HAS_TAIL(a.n))
			adagrad_bf16_at(p, g, sh, TAIL_START(a.n), a.n & 3, gm,
					a.clr, a.weight_decay, a.eps);
		return;
	}
	FOR_EACH_FLOAT4(i, a.n)
		adagrad_at(p, g, sum, 4 * i, 4, gm, a.clr, a.weight_decay,
			   a.eps);
	if (HAS_TAIL(a.n))
		adagrad_at(p, g, sum, TAIL_START(a.n), a.n & 3, gm, a.clr,
			   a.weight_decay, a.eps);
}
