/* SPDX-License-Identifier: MIT */
/*
 * ew.cl - the element-wise family (abi/ew.h): unary functions over
 * strided views, binary arithmetic with broadcasting, and the unary
 * functions' derivatives. One work-item per output element in the
 * grid-stride loop of abi/tensor.h; scalar accesses, since a strided or
 * broadcast view has no float4 to load. DIV and SQRT are precision.cl's
 * cr_div and cr_sqrt: correctly rounded, the cpu backend's bits.
 */
#include "abi/ew.h"
#include "opencl/tensor.cl"
#include "opencl/precision.cl"

#define FOR_EACH_OUTPUT(i, a) \
	for (uint i = get_group_id(0) * GPO_WG_SIZE + get_local_id(0); \
	     get_group_id(0) < (a).groups && i < (a).n; \
	     i += (a).groups * GPO_WG_SIZE)

/* The element of a view with strides @s at output index @i (abi/ew.h) */
static inline uint view_at(const struct gpo_ew_args *a, const uint *s,
			   uint off, uint i)
{
	uint i3, i2, i1, i0;

	/* leading 1s (emit.c's ew_merge) skip their divisions */
	if (a->shape[0] == 1 && a->shape[1] == 1) {
		if (a->shape[2] == 1)
			return off + i * s[3];
		i3 = i % a->shape[3];
		return off + i / a->shape[3] * s[2] + i3 * s[3];
	}
	i3 = i % a->shape[3];
	i /= a->shape[3];
	i2 = i % a->shape[2];
	i /= a->shape[2];
	i1 = i % a->shape[1];
	i0 = i / a->shape[1];
	return off + i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
}

/*
 * erf, the kernels' own, accurate to 1.5e-7 absolute: below 1, x times a
 * polynomial in x^2; above, 1 - erfc. erfc(z) for z >= 1 is exp(-z^2)
 * times a fit of erfc(z) exp(z^2) (in z about the middle of [1, 2.5) and
 * [2.5, 4.5), in 1/z beyond), good to a few 1e-6 relative, so that the
 * GELU of a large negative x keeps its digits. The fits are least
 * squares on Chebyshev nodes against mpmath, made for this file.
 *
 * erf_c1: erf(x) / x below 1, in x^2.
 */
__constant float erf_c1[8] = {
	1.128379167e+00f, -3.761263859e-01f, 1.128378411e-01f,
	-2.686551743e-02f, 5.221261463e-03f, -8.487267181e-04f,
	1.128817030e-04f, -9.728394374e-06f,
};

/* erfc(z) exp(z^2): z - 1.75 on [1, 2.5), z - 3.5 on [2.5, 4.5), 1/z */
__constant float erfc_c2[12] = {
	2.849722347e-01f, -1.309763455e-01f, 5.576363196e-02f,
	-2.225999655e-02f, 8.404280623e-03f, -3.020956200e-03f,
	1.039494904e-03f, -3.436449294e-04f, 1.085226194e-04f,
	-3.342910899e-05f, 1.159940278e-05f, -3.379768337e-06f,
};

__constant float erfc_c3[10] = {
	1.552936558e-01f, -4.132357805e-02f, 1.066112373e-02f,
	-2.673070031e-03f, 6.527614906e-04f, -1.554934241e-04f,
	3.597375762e-05f, -8.182666528e-06f, 2.069196725e-06f,
	-4.556968832e-07f,
};

__constant float erfc_c4[8] = {
	5.641895859e-01f, -4.360751385e-07f, -2.820721355e-01f,
	-5.006709834e-04f, 4.282281862e-01f, -1.620351050e-02f,
	-1.179518324e+00f, 1.257030203e+00f,
};

static inline float horner(__constant const float *c, int deg, float u)
{
	float r = c[deg];

	for (int i = deg - 1; i >= 0; i--)
		r = r * u + c[i];
	return r;
}

/*
 * exp(-z * z) without the rounding of z * z: hi * hi is exact. Beyond 10
 * it is 0 in float anyway, and lo of an infinite z would be NaN.
 */
static inline float exp_neg_sq(float z)
{
	float hi = as_float(as_uint(z) & 0xfffff000u), lo = z - hi;

	if (fabs(z) > 10.0f)
		return 0.0f;
	return exp(-hi * hi) * exp(-lo * (z + hi));
}

/* erfc(z) for z >= 1 (inf gives 0) */
static inline float erfc_big(float z)
{
	float q;

	if (z < 2.5f) {
		q = horner(erfc_c2, 11, z - 1.75f);
	} else if (z < 4.5f) {
		q = horner(erfc_c3, 9, z - 3.5f);
	} else {
		float t = 1.0f / z;

		q = horner(erfc_c4, 7, t) * t;
	}
	return exp_neg_sq(z) * q;
}

/* erf(x) / x for |x| < 1, a polynomial in x^2 */
static inline float erf_small(float x)
{
	return horner(erf_c1, 7, x * x);
}

static inline float my_erf(float x)
{
	float a = fabs(x);

	if (a < 1.0f)
		return x * erf_small(x);
	return copysign(1.0f - erfc_big(a), x);
}

/* Phi(x) = 0.5 (1 + erf(x / sqrt 2)), from erfc in the lower tail */
static inline float norm_cdf(float x)
{
	float z = x * M_SQRT1_2_F;

	if (z <= -1.0f)
		return 0.5f * erfc_big(-z);
	return 0.5f * (1.0f + my_erf(z));
}

/* phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
static inline float norm_pdf(float x)
{
	return 0.3989422804f * exp_neg_sq(x * M_SQRT1_2_F);
}

/* tanh that gives +-1, not inf / inf, for large |x|; exact near 0 */
static inline float safe_tanh(float x)
{
	float e = expm1(-2.0f * fabs(x));

	return copysign(-e / (2.0f + e), x);
}

/* 1 / (1 + exp(-x)) without exp overflowing */
static inline float sigmoid(float x)
{
	float e = exp(-fabs(x));

	return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

#define GELU_K0	0.7978845608f	/* sqrt(2 / pi) */
#define GELU_K1	0.044715f

static inline float unary_f(uint fn, float x)
{
	float t;

	switch (fn) {
	case GPO_EW_COPY:
		return x;
	case GPO_EW_RELU:
		return x < 0.0f ? 0.0f : x;
	case GPO_EW_GELU:
		return x * norm_cdf(x);
	case GPO_EW_GELU_TANH:
		t = safe_tanh(GELU_K0 * (x + GELU_K1 * x * x * x));
		return 0.5f * x * (1.0f + t);
	case GPO_EW_TANH:
		return safe_tanh(x);
	case GPO_EW_SIGMOID:
		return sigmoid(x);
	case GPO_EW_EXP:
		return exp(x);
	case GPO_EW_LOG:
		return log(x);
	case GPO_EW_SQUARE:
		return x * x;
	case GPO_EW_SQRT:
		return cr_sqrt(x);
	}
	return NAN;
}

/* f'(x), the derivative of unary_f() */
static inline float unary_df(uint fn, float x)
{
	float t, s;

	switch (fn) {
	case GPO_EW_COPY:
		return 1.0f;
	case GPO_EW_RELU:
		return x > 0.0f ? 1.0f : 0.0f;
	case GPO_EW_GELU:
		return norm_cdf(x) + x * norm_pdf(x);
	case GPO_EW_GELU_TANH:
		t = safe_tanh(GELU_K0 * (x + GELU_K1 * x * x * x));
		return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) *
		       (GELU_K0 * (1.0f + 3.0f * GELU_K1 * x * x));
	case GPO_EW_TANH:
		t = safe_tanh(x);
		return 1.0f - t * t;
	case GPO_EW_SIGMOID:
		s = sigmoid(x);
		return s * (1.0f - s);
	case GPO_EW_EXP:
		return exp(x);
	case GPO_EW_LOG:
		return 1.0f / x;
	case GPO_EW_SQUARE:
		return 2.0f * x;
	case GPO_EW_SQRT:
		return cr_div(0.5f, cr_sqrt(x));
	}
	return NAN;
}

/*
 * DROPOUT: is output element @i kept? Word i & 3 of block
 * site << 32 | i >> 2 of the (key, stream) of abi/ew.h, from
 * precision's Philox (core/rng.c's gpo__philox(), bit for bit).
 */
static inline int dropout_keep(const struct gpo_ew_args *a, uint i)
{
	uint4 w = prec_philox((uint2)(a->key_lo, a->key_hi),
			      (uint4)(i >> 2, a->site, a->stream_lo,
				      a->stream_hi));
	uint k = i & 3;

	return (k == 0 ? w.s0 : k == 1 ? w.s1 : k == 2 ? w.s2 : w.s3) >=
	       a->thresh;
}

/* GPO_EW_QUADS: @v, elements 4 @q .. 4 @q + 3, the dropped ones 0 */
static inline float4 dropout_quad(const struct gpo_ew_args *a, uint q,
				  float4 v)
{
	return (float4)(dropout_keep(a, 4 * q) ? v.x : 0.0f,
			dropout_keep(a, 4 * q + 1) ? v.y : 0.0f,
			dropout_keep(a, 4 * q + 2) ? v.z : 0.0f,
			dropout_keep(a, 4 * q + 3) ? v.w : 0.0f);
}

static inline float binary_f(uint fn, float a, float b)
{
	switch (fn) {
	case GPO_EW_ADD:
		return a + b;
	case GPO_EW_SUB:
		return a - b;
	case GPO_EW_MUL:
		return a * b;
	case GPO_EW_DIV:
		return cr_div(a, b);
	}
	return NAN;
}

/*
 * alpha r, r itself when alpha is 1 (as ew.glsl): a multiply may turn a
 * NaN into the device's own (NVIDIA's 0x7fffffff, not x86's 0xffc00000)
 * and flush a subnormal where denormals are off
 */
static inline float scaled(float alpha, float r)
{
	return alpha == 1.0f ? r : alpha * r;
}

/* GPO_EW_QUADS (abi/ew.h): quads q of the outputs, 4 elements each */
#define FOR_EACH_QUAD(q, a) \
	for (uint q = get_group_id(0) * GPO_WG_SIZE + get_local_id(0); \
	     get_group_id(0) < (a).groups && q < (a).n / 4; \
	     q += (a).groups * GPO_WG_SIZE)

/* the 4 elements of a quad from element @o of @x: neighbours, or x[o] */
static inline float4 quad_at(__global const float *x, uint s3, uint o)
{
	return s3 ? vload4(0, x + o) : (float4)(x[o]);
}

static inline void quad_put(__global float *y, uint o, uint flags,
			    float alpha, float4 v)
{
	if (alpha != 1.0f)
		v = alpha * v;
	if (flags & GPO_T_ACCUM)
		v = vload4(0, y + o) + v;
	vstore4(v, 0, y + o);
}

KERNEL void unary(BUF(const float, x), BUF(float, y), struct gpo_ew_args a)
{
	VIEW(x);
	VIEW(y);
	if (a.flags & GPO_EW_QUADS) {	/* each element as alone */
		FOR_EACH_QUAD(q, a) {
			float4 v = quad_at(x, a.sa[3],
					   view_at(&a, a.sa, a.off_a, 4 * q));

			if (a.fn == GPO_EW_DROPOUT) {
				v = dropout_quad(&a, q, v);
			} else if (a.fn != GPO_EW_COPY) {
				v = (float4)(unary_f(a.fn, v.x),
					     unary_f(a.fn, v.y),
					     unary_f(a.fn, v.z),
					     unary_f(a.fn, v.w));
			}
			quad_put(y, a.off_y + 4 * q, a.flags, a.alpha, v);
		}
		return;
	}
	FOR_EACH_OUTPUT(i, a) {
		float v = x[view_at(&a, a.sa, a.off_a, i)];

		/* a select, not x * 0: a dropped inf or NaN is 0 too */
		v = a.fn == GPO_EW_DROPOUT ? (dropout_keep(&a, i) ? v : 0.0f) :
					     unary_f(a.fn, v);
		out_put(y, a.off_y + i, a.flags, scaled(a.alpha, v));
	}
}

KERNEL void binary(BUF(const float, x), BUF(const float, z),
		   BUF(float, y), struct gpo_ew_args a)
{
	VIEW(x);
	VIEW(z);
	VIEW(y);
	if (a.flags & GPO_EW_QUADS) {	/* ADD, SUB, MUL */
		FOR_EACH_QUAD(q, a) {
			float4 u = quad_at(x, a.sa[3],
					   view_at(&a, a.sa, a.off_a, 4 * q));
			float4 v = quad_at(z, a.sb[3],
					   view_at(&a, a.sb, a.off_b, 4 * q));

			u = a.fn == GPO_EW_ADD ? u + v :
			    a.fn == GPO_EW_SUB ? u - v : u * v;
			quad_put(y, a.off_y + 4 * q, a.flags, a.alpha, u);
		}
		return;
	}
	FOR_EACH_OUTPUT(i, a) {
		float u = x[view_at(&a, a.sa, a.off_a, i)];
		float v = z[view_at(&a, a.sb, a.off_b, i)];

		out_put(y, a.off_y + i, a.flags,
			scaled(a.alpha, binary_f(a.fn, u, v)));
	}
}

/*
 * all three contiguous: dx[off_y + i] (+)= alpha dy[off_b + i] f'(x);
 * DROPOUT does not read x (buffer 0 may be dy again)
 */
KERNEL void unary_bwd(BUF(const float, x), BUF(const float, dy),
		      BUF(float, dx), struct gpo_ew_args a)
{
	VIEW(x);
	VIEW(dy);
	VIEW(dx);
	if (a.flags & GPO_EW_QUADS) {	/* each element as alone */
		FOR_EACH_QUAD(q, a) {
			float4 d = a.alpha * vload4(q, dy + a.off_b), v;

			if (a.fn == GPO_EW_DROPOUT) {
				d = dropout_quad(&a, q, d);
			} else {
				v = vload4(q, x + a.off_a);
				d *= (float4)(unary_df(a.fn, v.x),
					      unary_df(a.fn, v.y),
					      unary_df(a.fn, v.z),
					      unary_df(a.fn, v.w));
			}
			quad_put(dx, a.off_y + 4 * q, a.flags, 1.0f, d);
		}
		return;
	}
	FOR_EACH_OUTPUT(i, a) {
		float d = a.alpha * dy[a.off_b + i];

		d = a.fn == GPO_EW_DROPOUT ? (dropout_keep(&a, i) ? d : 0.0f) :
					     d * unary_df(a.fn, x[a.off_a + i]);
		out_put(dx, a.off_y + i, a.flags, d);
	}
}
