/* SPDX-License-Identifier: MIT */
/*
 * ew.glsl - what the element-wise kernels share (abi/ew.h): an output
 * element's input offset in a strided view, and the unary functions with
 * their derivatives (math.glsl does the hard parts), and DROPOUT's mask.
 * SQRT and DIV are precision.glsl's correctly rounded cr_sqrt and cr_div,
 * so they give the cpu backend's bits.
 */
#include "precision.glsl"

/*
 * alpha * @r, but @r itself for alpha 1: the same value, and a device
 * that flushes denormals in a multiply would lose a subnormal @r
 */
float ew_scale(float r)
{
	return args.alpha == 1.0 ? r : args.alpha * r;
}

/* ew_scale() of a quad (GPO_EW_QUADS) */
vec4 ew_scale4(vec4 r)
{
	return args.alpha == 1.0 ? r : args.alpha * r;
}

/*
 * GPO_EW_QUADS: the 4 elements of an input from its element @o, through
 * its float view @x and vec4 view @x4: neighbours, or x[o] 4 times where
 * stride @s3 is 0
 */
#define EW_QUAD(x, x4, s3, o)	((s3) == 0u ? vec4(x[o]) : x4[(o) >> 2])

/*
 * The offset of output element @i of the contiguous shape args.shape in
 * a view with strides @s: i split into (i0, i1, i2, i3), innermost last.
 * The sum wraps like the C reference's uint32 would, and cannot for any
 * view the engine hands out (its elements lie below 2^32).
 */
uint ew_offset(uint i, uint s0, uint s1, uint s2, uint s3)
{
	uint i3, q, i2, i1, i0;

	/*
	 * The engine merges what it can (emit.c's ew_merge): leading 1s
	 * skip their divisions, each a dozen instructions or more
	 */
	if (args.shape[0] == 1u && args.shape[1] == 1u) {
		if (args.shape[2] == 1u)
			return i * s3;
		i3 = i % args.shape[3];
		return i / args.shape[3] * s2 + i3 * s3;
	}
	i3 = i % args.shape[3];
	q = i / args.shape[3];
	i2 = q % args.shape[2];
	q /= args.shape[2];
	i1 = q % args.shape[1];
	i0 = q / args.shape[1];
	return i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3;
}

/*
 * DROPOUT: is output element @i kept? Word i & 3 of block
 * site << 32 | i >> 2 of the (key, stream) of abi/ew.h, from
 * precision's Philox (core/rng.c's gpo__philox(), bit for bit).
 */
bool dropout_keep(uint i)
{
	uvec4 w = prec_philox(uvec2(args.key_lo, args.key_hi),
			      uvec4(i >> 2, args.site, args.stream_lo,
				    args.stream_hi));

	return w[i & 3u] >= args.thresh;
}

/* GPO_EW_QUADS: @v, elements 4 @q .. 4 @q + 3, the dropped ones 0 */
vec4 dropout_quad(uint q, vec4 v)
{
	return vec4(dropout_keep(4u * q) ? v.x : 0.0,
		    dropout_keep(4u * q + 1u) ? v.y : 0.0,
		    dropout_keep(4u * q + 2u) ? v.z : 0.0,
		    dropout_keep(4u * q + 3u) ? v.w : 0.0);
}

/* GELU_TANH's u = sqrt(2/pi) (x + 0.044715 x^3) */
float gelu_u(float x)
{
	return M_SQRT2_PI * (x + 0.044715 * x * x * x);
}

float ew_unary(uint fn, float x)
{
	float s, sc;

	switch (fn) {
	case GPO_EW_COPY:
		return x;
	case GPO_EW_RELU:
		return x > 0.0 ? x : (is_nan(x) ? x : 0.0);
	case GPO_EW_GELU:
		return x * phi_cdf(x);
	case GPO_EW_GELU_TANH:
		/* 0.5 (1 + tanh u) = sigmoid(2u): no 1 - 1 for x << 0 */
		sigmoid2(2.0 * gelu_u(x), s, sc);
		return x * s;
	case GPO_EW_TANH:
		return tanh_acc(x);
	case GPO_EW_SIGMOID:
		sigmoid2(x, s, sc);
		return s;
	case GPO_EW_EXP:
		return exp_acc(x);
	case GPO_EW_LOG:
		return log_acc(x);
	case GPO_EW_SQUARE:
		return x * x;
	case GPO_EW_SQRT:
		return cr_sqrt(x);
	}
	return f_nan();
}

/* f'(x) of ew.h's table */
float ew_unary_dx(uint fn, float x)
{
	float s, sc;

	switch (fn) {
	case GPO_EW_COPY:
		return 1.0;
	case GPO_EW_RELU:
		return x > 0.0 ? 1.0 : 0.0;
	case GPO_EW_GELU:
		return phi_cdf(x) + x * phi_pdf(x);
	case GPO_EW_GELU_TANH:
		/* 0.5 (1 + tanh u) = s, 1 - tanh^2 u = 4 s (1 - s) */
		sigmoid2(2.0 * gelu_u(x), s, sc);
		return s + 2.0 * x * s * sc * M_SQRT2_PI *
		       (1.0 + 3.0 * 0.044715 * x * x);
	case GPO_EW_TANH:
		return tanh_dx(x);
	case GPO_EW_SIGMOID:
		sigmoid2(x, s, sc);
		return s * sc;
	case GPO_EW_EXP:
		return exp_acc(x);
	case GPO_EW_LOG:
		return 1.0 / x;
	case GPO_EW_SQUARE:
		return 2.0 * x;
	case GPO_EW_SQRT:
		return cr_div(0.5, cr_sqrt(x));
	}
	return f_nan();
}
