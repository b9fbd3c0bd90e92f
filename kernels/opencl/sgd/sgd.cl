/* SPDX-License-Identifier: MIT */
/*
 * sgd.cl - torch.optim.SGD (abi/sgd.h):
 *   d = g + wd * p
 *   momentum: buf = first step ? d : momentum * buf + (1 - dampening) * d
 *             d = nesterov ? d + momentum * buf : buf
 *   p -= lr * d
 */
#include "abi/sgd.h"

static inline void sgd_at(__global float *p, __global const float *g,
			  __global float *mb, uint e, uint cnt, uint flags,
			  float gm, float lr, float wd, float mom, float damp)
{
	float4 pv = ld4(p, e, cnt);
	float4 d = ld4(g, e, cnt) * gm + wd * pv;

	if (flags & GPO_SGD_MOMENTUM) {
		/* torch copies d into the fresh buffer on the first step */
		float4 b = (flags & GPO_SGD_FIRST) ? d :
			   mom * ld4(mb, e, cnt) + damp * d;

		st4(mb, e, cnt, b);
		d = (flags & GPO_SGD_NESTEROV) ? d + mom * b : b;
	}
	st4(p, e, cnt, pv - lr * d);
}

KERNEL void sgd(BUF(float, p), BUF(const float, g), BUF(float, mb),
		BUF(const float, scal), struct gpo_sgd_args a)
{
	/* 1 - dampening comes from the host, computed in double as torch */
	const float damp = a.one_minus_dampening;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(mb);
	VIEW(scal);
	if (!grad_mul(scal, a.flags, &gm))
		return;
	FOR_EACH_FLOAT4(i, a.n)
		sgd_at(p, g, mb, 4 * i, 4, a.flags, gm, a.lr, a.weight_decay,
		       a.momentum, damp);
	if (HAS_TAIL(a.n))
		sgd_at(p, g, mb, TAIL_START(a.n), a.n & 3, a.flags, gm, a.lr,
		       a.weight_decay, a.momentum, damp);
}
