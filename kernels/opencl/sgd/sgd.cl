/* SPDX-License-Identifier: MIT */
/*
 * sgd.cl - torch.optim.SGD (abi/sgd.h):
 *   d = g + wd * p
 *   momentum: buf = first step ? d : momentum * buf + (1 - dampening) * d
 *             d = nesterov ? d + momentum * buf : buf
 *   p -= lr * d
 */
#include "abi/sgd.h"
#include "opencl/update.cl"

static inline void sgd_at(__global float *p, __global const float *g,
			  __global float *mb, uint e, uint cnt, uint flags,
			  float gm, float lr, float wd, float mom, float damp,
			  const struct param_ctx *pc)
{
	float4 pv = param_ld4(p, e, cnt, pc);
	float4 d = param_g4(g, e, cnt, pc) * gm + wd * pv;

	if (flags & GPO_SGD_MOMENTUM) {
		/* torch copies d into the fresh buffer on the first step */
		float4 b = (flags & GPO_SGD_FIRST) ? d :
			   mom * ld4(mb, e, cnt) + damp * d;

		st4(mb, e, cnt, b);
		d = (flags & GPO_SGD_NESTEROV) ? d + mom * b : b;
	}
	param_st4(p, e, cnt, pv - lr * d, pc);
}

KERNEL void sgd(BUF(float, p), BUF(const float, g), BUF(float, mb),
		BUF(const float, scal), BUF(uint, p_half),
		struct gpo_sgd_args a)
{
	/* 1 - dampening comes from the host, computed in double as torch */
	const float damp = a.one_minus_dampening;
	float gm;
	PARAM_CTX(pc, a, p_half + p_half_off);

	VIEW(p);
	VIEW(g);
	VIEW(mb);
	VIEW(scal);
	if (!grad_mul(scal, a.flags, &gm))
		return;
	FOR_EACH_FLOAT4(i, a.n)
		sgd_at(p, g, mb, 4 * i, 4, a.flags, gm, a.lr, a.weight_decay,
		       a.momentum, damp, &pc);
	if (HAS_TAIL(a.n))
		sgd_at(p, g, mb, TAIL_START(a.n), a.n & 3, a.flags, gm, a.lr,
		       a.weight_decay, a.momentum, damp, &pc);
}
