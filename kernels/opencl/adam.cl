/* SPDX-License-Identifier: MIT */
/*
 * adam.cl - K_ADAM, torch.optim.Adam and AdamW:
 *   Adam:  g += wd * p                  (L2, in the gradient)
 *   AdamW: p *= 1 - lr * wd             (decoupled, s7)
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   amsgrad: vmax = max(vmax, v), used in place of v
 *   p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
 */

static inline void adam_at(__global float *p, __global const float *g,
			   __global float *m, __global float *v,
			   __global float *vmax, uint e, uint cnt, uint flags,
			   float gm, float l2, float decay, float b1, float b2,
			   float ob1, float ob2, float eps, float step_size,
			   float bc2_sqrt)
{
	float4 pv = ld4(p, e, cnt);
	float4 gi = ld4(g, e, cnt) * gm + l2 * pv;
	float4 mi = ld4(m, e, cnt) * b1 + ob1 * gi;
	float4 vi = ld4(v, e, cnt) * b2 + ob2 * gi * gi;
	float4 denom;

	st4(m, e, cnt, mi);
	st4(v, e, cnt, vi);
	if (flags & KF_AMSGRAD) {
		vi = fmax(ld4(vmax, e, cnt), vi);
		st4(vmax, e, cnt, vi);
	}
	denom = sqrt(vi) / bc2_sqrt + eps;
	st4(p, e, cnt, pv * decay - step_size * (mi / denom));
}

/*
 * s0 lr, s1 beta1, s2 beta2, s3 eps, s4 weight_decay, s5 step_size,
 * s6 bias_correction2_sqrt, s7 decay (1 - lr * wd), s8 1 - beta1,
 * s9 1 - beta2 (1 - x in double, as torch's Python floats: 1 - (float)x
 * is off by up to 1.3e-5 relative for x = 0.999)
 */
KERNEL void adam(BUF(float, p), BUF(const float, g), BUF(float, m),
		 BUF(float, v), BUF(float, vmax), BUF(const float, scal), KARGS)
{
	const int decoupled = (flags & KF_DECOUPLED) != 0;
	const float decay = decoupled ? s7 : 1.0f;
	const float l2 = decoupled ? 0.0f : s4;
	float gm;

	VIEW(p);
	VIEW(g);
	VIEW(m);
	VIEW(v);
	VIEW(vmax);
	VIEW(scal);
	if (!grad_mul(scal, flags, &gm))
		return;
	FOR_EACH_FLOAT4(i)
		adam_at(p, g, m, v, vmax, 4 * i, 4, flags, gm, l2, decay,
			s1, s2, s8, s9, s3, s5, s6);
	if (HAS_TAIL)
		adam_at(p, g, m, v, vmax, TAIL_START, n & 3, flags, gm, l2,
			decay, s1, s2, s8, s9, s3, s5, s6);
}
