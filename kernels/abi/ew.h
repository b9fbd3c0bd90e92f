/* SPDX-License-Identifier: MIT */
/*
 * ew.h - element-wise ops: unary functions over strided (broadcast,
 * transposed) views, binary arithmetic with broadcasting, and the unary
 * functions' derivatives
 *
 * unary      groups  buf0 x (r), buf1 y (rw with ACCUM, else w)
 *                    dtypes f32
 *	y[off_y + i] (+)= alpha * f(x[xi(i)])                   i < n
 * binary     groups  buf0 a (r), buf1 b (r), buf2 y (rw/w)   dtypes f32
 *	y[off_y + i] (+)= alpha * (a[ai(i)] OP b[bi(i)])        i < n
 * unary_bwd  groups  buf0 x (r), buf1 dy (r), buf2 dx (rw/w) dtypes f32
 *	dx[off_y + i] (+)= alpha * dy[off_b + i] * f'(x[off_a + i])  i < n
 *	(all three contiguous: shape and strides are not used)
 *
 * y is contiguous with shape[0..3] (innermost last, unused leading
 * dimensions 1; n = the product). Output element i has the index
 * (i0, i1, i2, i3) in that shape, and the inputs are read at
 *	xi(i) = ai(i) = off_a + i0 * sa[0] + i1 * sa[1] + i2 * sa[2] + i3 * sa[3]
 *	bi(i) = off_b + i0 * sb[0] + ... + i3 * sb[3]
 * so a stride of 0 broadcasts, and swapped strides transpose. (For unary,
 * x is buffer 0 and uses off_a and sa.)
 *
 * fn for unary and unary_bwd (f' in terms of x):
 *	COPY       f = x                         f' = 1
 *	RELU       f = max(x, 0)                 f' = x > 0 ? 1 : 0
 *	GELU       f = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
 *	                                         f' = Phi(x) + x phi(x)
 *	GELU_TANH  f = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
 *	           f' = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u)
 *	                 * sqrt(2/pi) (1 + 3 * 0.044715 x^2)
 *	TANH       f = tanh x                    f' = 1 - tanh^2 x
 *	SIGMOID    f = 1 / (1 + exp(-x))         f' = f (1 - f)
 *	EXP        f = exp x                     f' = exp x
 *	LOG        f = log x                     f' = 1 / x
 *	SQUARE     f = x^2                       f' = 2 x
 *	SQRT       f = sqrt x                    f' = 0.5 / sqrt x
 *	DROPOUT    f = keep(i) ? x : 0           f' = keep(i) ? 1 : 0
 *	           with alpha = 1 / (1 - p), and keep(i) of the output
 *	           element i (0 .. n-1, so x, dy and dx are contiguous):
 *	             w = philox(key = key_lo | key_hi << 32,
 *	                        stream = stream_lo | stream_hi << 32,
 *	                        counter = site << 32 | i >> 2)[i & 3]
 *	             keep(i) = w >= thresh     (thresh = round(p * 2^32))
 *	           philox() is core/rng.c's gpo__philox() (Philox4x32-10),
 *	           bit for bit on every backend; the engine sets the stream
 *	           to GPO_RNG_STREAM(GPO_RNG_DROPOUT, step) and the site to
 *	           the dropout's number in its graph, so the mask is a
 *	           function of (seed, step, site, element) alone. unary_bwd
 *	           does not read x for DROPOUT (buffer 0 may be dy again).
 * erf is the kernels' own (the same in every backend, accurate to 1e-6
 * relative or better); tanh and sigmoid are computed so that they do not
 * overflow for large |x| (tanh -> +-1, sigmoid -> 0 or 1).
 *
 * OP for binary: ADD a + b, SUB a - b, MUL a * b, DIV a / b.
 *
 * GPO_EW_QUADS in flags (unary, binary with ADD, SUB or MUL, unary_bwd:
 * the engine sets it where it holds): n and shape[3] are multiples of 4,
 * and so are off_y and, of each input whose sa[3] (sb[3]) is 1, its
 * offset and other strides; the other inputs have a stride of 0 there.
 * Output elements 4q .. 4q + 3 then lie in one row, an input's are 4
 * neighbours from a multiple of 4 or one element 4 times, and a kernel
 * may do them together (vec4 loads and stores), the same operations on
 * each. groups then counts quads: a grid over n / 4 items. For
 * unary_bwd (x, dy and dx contiguous): n, off_a, off_b and off_y are
 * multiples of 4.
 */
#ifndef GPO_ABI_EW_H
#define GPO_ABI_EW_H
#include "tensor.h"

/* unary fn */
#define GPO_EW_COPY		0u
#define GPO_EW_RELU		1u
#define GPO_EW_GELU		2u
#define GPO_EW_GELU_TANH	3u
#define GPO_EW_TANH		4u
#define GPO_EW_SIGMOID		5u
#define GPO_EW_EXP		6u
#define GPO_EW_LOG		7u
#define GPO_EW_SQUARE		8u
#define GPO_EW_SQRT		9u
#define GPO_EW_DROPOUT		10u
#define GPO_EW_UNARY_COUNT	11u

/* flags (GPO_T_ACCUM is bit 0) */
#define GPO_EW_QUADS		(1u << 1)
/* binary fn */
#define GPO_EW_ADD		0u
#define GPO_EW_SUB		1u
#define GPO_EW_MUL		2u
#define GPO_EW_DIV		3u
#define GPO_EW_BINARY_COUNT	4u

GPO_ARGS(gpo_ew_args)
	gpo_u32 n;
	gpo_u32 groups;
	gpo_u32 fn;
	gpo_u32 flags;
	gpo_u32 shape[GPO_T_DIMS];
	gpo_u32 sa[GPO_T_DIMS];
	gpo_u32 sb[GPO_T_DIMS];
	gpo_u32 off_a;
	gpo_u32 off_b;
	gpo_u32 off_y;
	gpo_f32 alpha;
	/* DROPOUT only */
	gpo_u32 key_lo;
	gpo_u32 key_hi;
	gpo_u32 stream_lo;
	gpo_u32 stream_hi;
	gpo_u32 site;
	gpo_u32 thresh;
GPO_ARGS_END(gpo_ew_args)

#endif
