/* SPDX-License-Identifier: MIT */
/*
 * sgd.cl - K_SGD, torch.optim.SGD:
 *   d = g + wd * p
 *   momentum: buf = first step ? d : momentum * buf + (1 - dampening) * d
 *             d = nesterov ? d + momentum * buf : buf
 *   p -= lr * d
 */

static inline void sgd_at(__global float *p, __global const float *g,
			  __global float *mb, uint e, uint cnt, uint flags,
			  float gm, float lr, float wd, float mom, float damp)
{
	float4 pv = ld4(p, e, cnt);
	float4 d = ld4(g, e, cnt) * gm + wd * pv;

	if (flags & KF_MOMENTUM) {
		/* torch copies d into the fresh buffer on the first step */
		float4 b = (flags & KF_FIRST) ? d :
			   mom * ld4(mb, e, cnt) + damp * d;

		st4(mb, e, cnt, b);
		d = (flags & KF_NESTEROV) ? d + mom * b : b;
	}
	st4(p, e, cnt, pv - lr * d);
}

/* s0 lr, s1 weight_decay, s2 momentum, s3 dampening, s4 1 - dampening */
KERNEL void sgd(BUF(float, p), BUF(const float, g), BUF(float, mb),
		BUF(const float, scal), KARGS)
{
	/* 1 - dampening comes from the host, computed in double as torch */
	const float damp = s4;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(mb);
	VIEW(scal);
	if (!grad_mul(scal, flags, &gm))
		return;
	FOR_EACH_FLOAT4(i)
		sgd_at(p, g, mb, 4 * i, 4, flags, gm, s0, s1, s2, damp);
	if (HAS_TAIL)
		sgd_at(p, g, mb, TAIL_START, n & 3, flags, gm, s0, s1, s2,
		       damp);
}
