/* SPDX-License-Identifier: MIT */
/*
 * lion.cl - K_LION (Chen et al. 2023, as lion-pytorch):
 *   c = b1 m + (1 - b1) g;  p = p (1 - lr wd) - lr sign(c)
 *   m = b2 m + (1 - b2) g
 * sign(0) = 0 (and sign(NaN) = 0), like the cpu backend's.
 */

static inline void lion_at(__global float *p, __global const float *g,
			   __global float *m, uint e, uint cnt, float gm,
			   float lr, float b1, float b2, float ob1, float ob2,
			   float decay)
{
	float4 gi = ld4(g, e, cnt) * gm;
	float4 mv = ld4(m, e, cnt);
	float4 c = mv * b1 + ob1 * gi;

	st4(p, e, cnt, ld4(p, e, cnt) * decay - lr * sign(c));
	st4(m, e, cnt, mv * b2 + ob2 * gi);
}

/*
 * s0 lr, s1 beta1, s2 beta2, s3 decay (1 - lr * wd), s4 1 - beta1,
 * s5 1 - beta2
 */
KERNEL void lion(BUF(float, p), BUF(const float, g), BUF(float, m),
		 BUF(const float, scal), KARGS)
{
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(m);
	VIEW(scal);
	if (!grad_mul(scal, flags, &gm))
		return;
	FOR_EACH_FLOAT4(i)
		lion_at(p, g, m, 4 * i, 4, gm, s0, s1, s2, s4, s5, s3);
	if (HAS_TAIL)
		lion_at(p, g, m, TAIL_START, n & 3, gm, s0, s1, s2, s4, s5,
			s3);
}
