/* SPDX-License-Identifier: MIT */
/*
 * rmsprop.cl - K_RMSPROP, torch.optim.RMSprop:
 *   g += wd * p;  sq = alpha sq + (1 - alpha) g^2
 *   centered: ga = alpha ga + (1 - alpha) g; avg = sqrt(sq - ga^2) + eps
 *   else avg = sqrt(sq) + eps
 *   momentum: buf = momentum buf + g / avg; p -= lr buf
 *   else p -= lr g / avg
 */

static inline void rmsprop_at(__global float *p, __global const float *g,
			      __global float *sq, __global float *mb,
			      __global float *ga, uint e, uint cnt,
			      uint flags, float gm, float lr, float alpha,
			      float oa, float eps, float wd, float mom)
{
	float4 pv = ld4(p, e, cnt);
	float4 gi = ld4(g, e, cnt) * gm + wd * pv;
	float4 s = ld4(sq, e, cnt) * alpha + oa * gi * gi;
	float4 avg;

	st4(sq, e, cnt, s);
	if (flags & KF_CENTERED) {
		float4 ca = ld4(ga, e, cnt) * alpha + oa * gi;

		st4(ga, e, cnt, ca);
		s = s - ca * ca;
	}
	avg = sqrt(s) + eps;
	if (flags & KF_MOMENTUM) {
		float4 b = ld4(mb, e, cnt) * mom + gi / avg;

		st4(mb, e, cnt, b);
		st4(p, e, cnt, pv - lr * b);
	} else {
		st4(p, e, cnt, pv - lr * (gi / avg));
	}
}

/* s0 lr, s1 alpha, s2 eps, s3 weight_decay, s4 momentum, s5 1 - alpha */
KERNEL void rmsprop(BUF(float, p), BUF(const float, g), BUF(float, sq),
		    BUF(float, mb), BUF(float, ga), BUF(const float, scal),
		    KARGS)
{
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(sq);
	VIEW(mb);
	VIEW(ga);
	VIEW(scal);
	if (!grad_mul(scal, flags, &gm))
		return;
	FOR_EACH_FLOAT4(i)
		rmsprop_at(p, g, sq, mb, ga, 4 * i, 4, flags, gm, s0, s1, s5,
			   s2, s3, s4);
	if (HAS_TAIL)
		rmsprop_at(p, g, sq, mb, ga, TAIL_START, n & 3, flags, gm, s0,
			   s1, s5, s2, s3, s4);
}
