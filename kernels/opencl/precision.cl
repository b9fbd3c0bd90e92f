/* SPDX-License-Identifier: MIT */
/*
 * precision.cl - the precision library for the OpenCL kernels: bit for
 * bit what the cpu backend and libgpuopt/src/core/quant.c compute, and
 * the same functions as kernels/vulkan/precision.glsl
 *
 *	float cr_div(float a, float b)    a / b, correctly rounded (IEEE)
 *	float cr_sqrt(float a)            sqrt(a), correctly rounded
 *	uint f32_to_f16(float), f32_to_bf16(float)   round to nearest even
 *	float f16_to_f32(uint), bf16_to_f32(uint)    exact
 *	uint f32_to_bf16_sr(float x, uint rnd)       stochastic rounding
 *	uint round_bits(seed_lo, seed_hi, step_lo, step_hi, i_lo, i_hi)
 *	uint quant8(float x, float absmax, bool is_signed)
 *	float dequant8(uint q, float absmax, bool is_signed)
 * (core/quant_i.h and core/dtype_i.h say what each one means.)
 * Also prec_mul(a, b), a correctly rounded product whatever the denormal
 * mode (dequant8 uses it), and quant8_local(), quant8 with the maps and a
 * threshold table in __local memory (prec_qlocal_load(), below).
 *
 * OpenCL's / and sqrt are 2.5 and 3 ulp unless the device reports
 * CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, when the backend builds with
 * -cl-fp32-correctly-rounded-divide-sqrt and defines GPO_CR_DIVSQRT:
 * there cr_div and cr_sqrt are the plain operators. Elsewhere they are
 * precision.glsl's algorithms: for normal operands in a wide range (a
 * and b in [2^-76, 2^126) and more: prec_div() says) a fast path of exact
 * float operations on an estimate (the device's reciprocal or rsqrt)
 * and its exact residual; for the rest (zeros, subnormals, inf, NaN,
 * extreme exponents) the integer algorithm: the 24-bit significands
 * divided (or square-rooted) from a float estimate corrected by an exact
 * integer remainder, then rounded to nearest even at the result's own
 * precision, subnormal or not; NaNs as x86 SSE gives them. The
 * conversions are integer only, so flushed denormals cannot change them.
 *
 * Include it after common.cl (which turns FP_CONTRACT off).
 * tests/unit/test_precision.c builds it as C too, against the cpu's
 * IEEE / and sqrt.
 */
#ifndef GPO_PRECISION_CL
#define GPO_PRECISION_CL

#define PREC_QNAN	0xffc00000u	/* x86's default NaN */

/* the device's estimates (the tests put in worse ones) */
#ifndef PREC_RCP
#define PREC_RCP(x)	(1.0f / (x))
#define PREC_RSQRT(x)	rsqrt(x)
#endif

/*
 * @Q * 2^(@e - 24) (Q in [2^24, 2^25): 24 significand bits and a round
 * bit; @sticky: nonzero bits below) rounded to nearest even as a float
 * with @sign: subnormal when e < -126, inf when it overflows.
 */
static inline uint prec_round(uint sign, int e, uint Q, bool sticky)
{
	uint shift, kept, rem, hlf;

	if (e > 127)
		return sign | 0x7f800000u;
	shift = e >= -126 ? 1u : (uint)(-e - 125);
	if (shift > 25u)
		return sign;		/* below half the least subnormal */
	kept = Q >> shift;
	rem = Q & ((1u << shift) - 1u);
	hlf = 1u << (shift - 1u);
	if (rem > hlf || (rem == hlf && (sticky || (kept & 1u) != 0u)))
		kept++;
	if (shift > 1u)
		return sign | kept;	/* a carry to 2^23 is the least normal */
	if (kept == 0x1000000u) {	/* carried into the next binade */
		kept = 0x800000u;
		e++;
		if (e > 127)
			return sign | 0x7f800000u;
	}
	return sign | ((uint)(e + 127) << 23) | (kept & 0x7fffffu);
}

/* finite nonzero |bits| = *m * 2^(*e - 23), *m in [2^23, 2^24) */
static inline void prec_unpack(uint bits, uint *m, int *e)
{
	uint ex = (bits >> 23) & 0xffu, f = bits & 0x7fffffu;
	int p;

	if (ex != 0u) {
		*m = f | 0x800000u;
		*e = (int)ex - 127;
		return;
	}
	p = 31 - (int)clz(f);
	*m = f << (uint)(23 - p);
	*e = p - 149;
}

static inline float prec_div_int(float a, float b)
{
	uint ua = as_uint(a), ub = as_uint(b);
	uint sign = (ua ^ ub) & 0x80000000u;
	uint xa = ua & 0x7fffffffu, xb = ub & 0x7fffffffu;
	uint A, B, Q, N, s;
	int ea, eb, e, R, k;
	float qf;

	if (xa > 0x7f800000u)
		return as_float(ua | 0x400000u);
	if (xb > 0x7f800000u)
		return as_float(ub | 0x400000u);
	if (xa == 0x7f800000u)
		return as_float(xb == 0x7f800000u ? PREC_QNAN :
				sign | 0x7f800000u);
	if (xb == 0x7f800000u)
		return as_float(sign);
	if (xb == 0u)
		return as_float(xa == 0u ? PREC_QNAN : sign | 0x7f800000u);
	if (xa == 0u)
		return as_float(sign);
	prec_unpack(xa, &A, &ea);
	prec_unpack(xb, &B, &eb);
	/* Q = floor(A 2^s / B) in [2^24, 2^25) */
	s = A >= B ? 24u : 25u;
	e = ea - eb - (int)(s - 24u);
	qf = (float)A / (float)B;
	Q = (uint)(qf * (s == 24u ? 16777216.0f : 33554432.0f));
	/*
	 * The remainder A 2^s - Q B, off by a few B at most, fits in an
	 * int: its low 32 bits, which wrap-around arithmetic gets right.
	 */
	N = A << s;
	R = (int)(N - Q * B);
	for (k = 0; k < 64 && R < 0; k++) {
		Q--;
		R += (int)B;
	}
	for (k = 0; k < 64 && R >= (int)B; k++) {
		Q++;
		R -= (int)B;
	}
	return as_float(prec_round(sign, e, Q, R != 0));
}

/*
 * a * b correctly rounded, subnormal results included, in integers: what
 * any IEEE multiply gives, but immune to a device that flushes denormals
 * (dequant8's products of tiny scales)
 */
static inline float prec_mul(float a, float b)
{
	uint ua = as_uint(a), ub = as_uint(b);
	uint sign = (ua ^ ub) & 0x80000000u;
	uint xa = ua & 0x7fffffffu, xb = ub & 0x7fffffffu;
	uint A, B, hi, lo, Q, shift;
	int ea, eb;

	if (xa > 0x7f800000u)
		return as_float(ua | 0x400000u);
	if (xb > 0x7f800000u)
		return as_float(ub | 0x400000u);
	if (xa == 0x7f800000u || xb == 0x7f800000u)
		return as_float(xa == 0u || xb == 0u ? PREC_QNAN :
				sign | 0x7f800000u);
	if (xa == 0u || xb == 0u)
		return as_float(sign);
	prec_unpack(xa, &A, &ea);
	prec_unpack(xb, &B, &eb);
	/* A B in [2^46, 2^48): its top 25 bits and a sticky bit */
	hi = mul_hi(A, B);
	lo = A * B;
	shift = hi >= 0x8000u ? 23u : 22u;
	Q = (hi << (32u - shift)) | (lo >> shift);
	return as_float(prec_round(sign, ea + eb + (int)shift - 22, Q,
				   (lo & ((1u << shift) - 1u)) != 0u));
}

static inline float prec_sqrt_int(float a)
{
	uint ua = as_uint(a), xa = ua & 0x7fffffffu;
	uint A, Q, N, t;
	int ea, E, R, k;

	if (xa == 0u)
		return a;			/* +-0 */
	if (xa > 0x7f800000u)
		return as_float(ua | 0x400000u);
	if ((ua & 0x80000000u) != 0u)
		return as_float(PREC_QNAN);
	if (xa == 0x7f800000u)
		return a;
	prec_unpack(xa, &A, &ea);
	/* a = A 2^E = N 2^(E - t), E - t even, N in [2^48, 2^50) */
	E = ea - 23;
	t = 25u + (uint)((E - 25) & 1);
	Q = (uint)sqrt((float)A * (t == 25u ? 33554432.0f : 67108864.0f));
	/* N - Q^2, off by a few Q at most: again the low 32 bits will do */
	N = A << t;
	R = (int)(N - Q * Q);
	for (k = 0; k < 64 && R < 0; k++) {
		Q--;
		R += (int)(2u * Q + 1u);
	}
	for (k = 0; k < 64 && R > (int)(2u * Q); k++) {
		R -= (int)(2u * Q + 1u);
		Q++;
	}
	/* Q 2^((E - t) / 2) = Q 2^(e - 24) */
	return as_float(prec_round(0u, ((E - (int)t) >> 1) + 24, Q, R != 0));
}

/*
 * The fast paths: float add, sub and mul only where they are exact (every
 * IEEE device rounds those correctly; `precise` in the GLSL copy and
 * FP_CONTRACT OFF here keep them from being fused), the device's own
 * reciprocal and rsqrt only as estimates. PREC_RCP within 2.5 ulp and
 * PREC_RSQRT within 2 ulp (OpenCL's and Vulkan's bounds) are all they
 * need; tests/unit/test_precision.c runs them on estimates that are off
 * by that much on purpose.
 *
 * Division, a = A 2^(ea-23) and b = B 2^(eb-23) positive normal (A, B in
 * [2^23, 2^24)). In units U = 2^(eq+eb-46) (eq: q's exponent), a float q
 * in [2^eq, 2^(eq+1)) is Q U / 2^(eb-23), Q its 24-bit significand, and a
 * is a multiple of 2^22 U (a >= 2^(eq+eb-1) as a / b is within a few ulp
 * of q).
 * 1. y = 1/b within 2.5 ulp, q0 = a y within 6 ulp of a / b.
 * 2. q' = q0 rounded to 19 bits (Q' a multiple of 2^5): within 22 ulp.
 *    Split q' = qh + ql, b = bh + bl at bit 12 of the significands by
 *    masking (Qh, Bh multiples of 2^12; Ql < 2^12, a multiple of 2^5;
 *    Bl < 2^12): the four products have at most 24 bits, so are exact.
 * 3. R' = a - q' b, the four products subtracted one by one, each
 *    difference exact as it fits 24 bits at its granularity (|R'| < 22 B
 *    < 2^29, a multiple of 2^5):
 *      a - qh bh   = R' + QhBl + QlBh + QlBl  < 2^37.1, multiple of 2^22
 *      .. - ql bh  = R' + QhBl + QlBl         < 2^36.1, multiple of 2^17
 *      .. - qh bl  = R' + QlBl                < 2^30,   multiple of 2^12
 *      .. - ql bl  = R'                       < 2^29,   multiple of 2^5
 * 4. q1 = q' + R' y rounds a value within 2^-16 ulp of a / b: a / b is
 *    less than one step of the float grid from q1, on either side. d =
 *    q1 - q' is exact (Sterbenz), at most 23 ulp u of q' and a multiple
 *    of u/2 (6 bits): d bh and d bl are exact, and so is R1 = a - q1 b:
 *      R' - d bh   = R1 + d Bl   < 2^24.1, a multiple of 2^5
 *      .. - d bl   = R1          < 2^24,   a multiple of 1/2, 1 or 2
 *    (|R1| < B/4, B/2 or B as q1 fell a binade below q', stayed, or rose
 *    one: 2^23 multiples at most).
 * 5. a / b is above the midpoint q1 + u1/2 (u1 = ulp(q1)) iff R1 > h =
 *    b u1/2 and below q1 - u1/2 iff -R1 > h: an exact scaling of b by a
 *    power of 2. A quotient is never a tie (a would need an odd
 *    significand above 2^24), so -R1 >= h is the same test; it is also
 *    right where q1 = 2^j and the step below is u1/2: a quotient below
 *    2^j is at most 2^j - u1/2 (A / B < 1 means A <= B - 1), so there
 *    a / b < q1 means -R1 >= h and a step down.
 * No subnormal arises where a is in [2^-76, 2^126), b in [2^-100, 2^126)
 * and q0 in [2^-83, 2^126): the least nonzero product or difference is
 * U/2 >= 2^-125 (eq + eb >= ea - 2), the least parts bl >= 2^(eb-23),
 * ql >= 2^(eq-18) and |d| >= 2^(eq-24), the least |R' y| 2^(eq-42), and
 * nothing exceeds 2^126 (b u1 is about 2^-23 a). Anything else (zeros,
 * subnormals, inf, NaN, extreme exponents) takes the integer path.
 * Count: 1 reciprocal, 18 float ops (8 mul, 10 add/sub) and 2 compares;
 * 23 integer ops (masks, range checks, exponent arithmetic, the final
 * +-1 and the sign).
 */
static inline float prec_div_by(float a, float b, bool fused)
{
	uint ua = as_uint(a), ub = as_uint(b);
	uint xa = ua & 0x7fffffffu, xb = ub & 0x7fffffffu, qb;
	float fa = as_float(xa), fb = as_float(xb);
	float y, q0, qp, qh, ql, bh, bl, r, q1, d, h;

	if (xa - 0x19800000u >= 0x65000000u ||
	    xb - 0x0d800000u >= 0x71000000u)
		return prec_div_int(a, b);
	y = PREC_RCP(fb);
	q0 = fa * y;
	if (as_uint(q0) - 0x16000000u >= 0x68800000u)
		return prec_div_int(a, b);
	if (fused) {		/* prec_div_fma's steps 2-4 (below) */
		r = fma(-q0, fb, fa);
		q1 = fma(r, y, q0);
		r = fma(-q1, fb, fa);
	} else {
		qb = (as_uint(q0) + 0x10u) & 0xffffffe0u;
		qp = as_float(qb);
		qh = as_float(qb & 0xfffff000u);
		ql = qp - qh;
		bh = as_float(xb & 0xfffff000u);
		bl = fb - bh;
		r = fa - qh * bh;
		r = r - ql * bh;
		r = r - qh * bl;
		r = r - ql * bl;
		q1 = qp + r * y;
		d = q1 - qp;
		r = r - d * bh;
		r = r - d * bl;
	}
	/* h = b u1/2: q1's exponent - 24 added to b's, a normal float */
	h = as_float(xb + (as_uint(q1) & 0x7f800000u) - 0x4b800000u);
	qb = as_uint(q1) + (r > h ? 1u : 0u) - (-r >= h ? 1u : 0u);
	return as_float(qb | ((ua ^ ub) & 0x80000000u));
}

static inline float prec_div(float a, float b)
{
	return prec_div_by(a, b, false);
}

/*
 * Square root, the same way: a = A 2^(ea-23) positive normal, units U =
 * u^2 = 2^(2es-46) (es: the root's exponent), a float s in [2^es,
 * 2^(es+1)) is S u, a is a multiple of 2^22 U.
 * 1. r = rsqrt(a) within 2 ulp, s0 = a r within 5 ulp of sqrt(a).
 * 2. s' = s0 rounded to 21 bits (S' a multiple of 8): within k <= 9 ulp.
 *    sh, sl split at bit 12 (Sl < 2^12 a multiple of 8): sh sh, sh 2sl
 *    and sl sl are exact.
 * 3. R' = a - s'^2 (|R'| <= k (2S' + k) < 2^28.3, a multiple of 2^6):
 *      a - sh sh    = R' + 2ShSl + Sl^2  < 2^37.1, multiple of 2^22
 *      .. - sh 2sl  = R' + Sl^2          < 2^28.4, multiple of 2^16
 *      .. - sl sl   = R'                 < 2^28.3, multiple of 2^6
 * 4. s1 = s' + R' r/2 rounds a value within 2^-16 ulp of sqrt(a); d =
 *    s1 - s' (exact) is at most 20 halves of u; d 2sh, d 2sl and d d are
 *    exact, and R1 = a - s1^2 = R' - d 2sh - d 2sl - d d:
 *      R' - d 2sh   < 2^25.1, a multiple of 2^6
 *      .. - d 2sl   < 2^25.1, a multiple of 2^3
 *      .. - d d     = R1, one rounding of the exact value (|R1| <= 2^25)
 * 5. In units u1^2 of s1 (S1 its significand) R1 is an integer, and
 *    sqrt(a) > s1 + u1/2 iff R1 > S1 + 1/4 iff R1 > s1 u1; sqrt(a) < s1 -
 *    u1/2 iff R1 <= -S1 (R1 <= -S1/2 where s1 is a power of 2 and the
 *    step below is u1/2). A rounding of R1 (only beyond 2^24, as it is an
 *    integer) keeps those comparisons, as S1 < 2^24. No ties either: a
 *    would need bits below 2^22 U.
 * No subnormal where a is in [2^-76, 2^126) (es >= -38): the least
 * product or difference is U/4 >= 2^-124, the least parts sl >= 2^(es-20)
 * and |d| >= 2^(es-24), the least |R' r/2| 2^(es-42); nothing exceeds a.
 * Count: 1 rsqrt, 18 float ops (8 mul, 10 add/sub) and 2 compares; 18
 * integer ops (range check, masks, exponent arithmetic, the final +-1).
 */
static inline float prec_sqrt_by(float a, bool fused)
{
	uint ua = as_uint(a), sb;
	float r, s0, sp, sh, sh2, sl, sl2, x, s1, d, hu, hl;

	if (ua - 0x19800000u >= 0x65000000u)
		return prec_sqrt_int(a);
	r = PREC_RSQRT(a);
	s0 = a * r;
	if (fused) {		/* prec_sqrt_fma's steps 2-4 (below) */
		x = fma(-s0, s0, a);
		s1 = fma(x, as_float(as_uint(r) - 0x800000u), s0);
		x = fma(-s1, s1, a);
	} else {
		sb = (as_uint(s0) + 4u) & 0xfffffff8u;
		sp = as_float(sb);
		sh = as_float(sb & 0xfffff000u);
		sh2 = as_float((sb & 0xfffff000u) + 0x800000u);
		sl = sp - sh;
		sl2 = sl + sl;
		x = a - sh * sh;
		x = x - sh * sl2;
		x = x - sl * sl;
		s1 = sp + x * as_float(as_uint(r) - 0x800000u); /* r/2 */
		d = s1 - sp;
		x = x - d * sh2;
		x = x - d * sl2;
		x = x - d * d;
	}
	/* s1 u1 and half that: exponents added, normal floats */
	sb = as_uint(s1);
	hu = as_float(sb + (sb & 0x7f800000u) - 0x4b000000u);
	hl = as_float(as_uint(hu) -
			    ((sb & 0x7fffffu) == 0u ? 0x800000u : 0u));
	sb += (x > hu ? 1u : 0u) - (-x >= hl ? 1u : 0u);
	return as_float(sb);
}

static inline float prec_sqrt(float a)
{
	return prec_sqrt_by(a, false);
}

/*
 * prec_div() and prec_sqrt() where fma(x, y, z) is x y + z rounded once
 * (OpenCL's is; the Vulkan kernels use this where the device's is:
 * precision.glsl's PREC_FMA): prec_div_by() and prec_sqrt_by() with
 * @fused. Same ranges, same last step, fewer operations: the residuals
 * come from fused products, not split ones.
 * Division, a and b positive normal in the ranges above:
 * 1. y = 1/b within 2.5 ulp, q0 = a y: |q0 - a/b| < 2^-21.4 a/b.
 * 2. r0 = fma(-q0, b, a) = (a - q0 b)(1 + d0), |d0| <= 2^-24.
 * 3. q1 = fma(r0, y, q0) rounds q0 + (a/b - q0)(1 + d0)(1 + e) = a/b +
 *    (a/b - q0)(d0 + e + d0 e), within 2^-43 a/b of a/b: q1 is a/b
 *    faithfully rounded (off by less than one ulp).
 * 4. R1 = a - q1 b is then a float (a faithful quotient's remainder is),
 *    a multiple of 2^(ea-47) >= 2^-123: fma(-q1, b, a) gives it exactly,
 *    normal or zero. prec_div()'s step 5 then rounds.
 * Square root, a positive normal in [2^-76, 2^126):
 * 1. r = rsqrt(a) within 2 ulp, s0 = a r = sqrt(a)(1 + n), |n| < 2^-21.4.
 * 2. x = fma(-s0, s0, a) = a(-2n - n^2)(1 + d0).
 * 3. s1 = fma(x, r/2, s0) rounds sqrt(a)(1 - n^2/2 - n(d0 + e) + ...),
 *    within 2^-42.8 of sqrt(a): faithful.
 * 4. x = fma(-s1, s1, a): R1 = a - s1^2 rounded once (|R1| < 2^25 in
 *    units u1^2, a multiple of 2^-122), as prec_sqrt()'s step 4 has it;
 *    its step 5 then rounds.
 * Count: 1 estimate, 1 mul, 4 fma (division) or 3 (sqrt), the integer
 * range checks and the last step: about half of prec_div()'s.
 */
static inline float prec_div_fma(float a, float b)
{
	return prec_div_by(a, b, true);
}

static inline float prec_sqrt_fma(float a)
{
	return prec_sqrt_by(a, true);
}

#ifdef GPO_CR_DIVSQRT
/* a NaN result gets the bits the cpu's gives, not the device's own NaN */
static inline float cr_div(float a, float b)
{
	float q = a / b;

	return isnan(q) ? prec_div_int(a, b) : q;
}

static inline float cr_sqrt(float a)
{
	float r = sqrt(a);

	return isnan(r) ? prec_sqrt_int(a) : r;
}
#else
static inline float cr_div(float a, float b)
{
	return prec_div(a, b);
}

static inline float cr_sqrt(float a)
{
	return prec_sqrt(a);
}
#endif

/* @v >> @shift rounded to nearest, ties to even; 1 <= shift <= 31 */
static inline uint prec_shift_rne(uint v, uint shift)
{
	uint q = v >> shift, rem = v & ((1u << shift) - 1u);
	uint hlf = 1u << (shift - 1u);

	return q + ((rem > hlf || (rem == hlf && (q & 1u) != 0u)) ? 1u : 0u);
}

static inline uint f32_to_f16(float f)
{
	uint x = as_uint(f);
	uint sign = (x >> 16) & 0x8000u;

	x &= 0x7fffffffu;
	if (x > 0x7f800000u)		/* NaN: quiet, top payload bits */
		return sign | 0x7e00u | ((x >> 13) & 0x3ffu);
	if (x >= 0x477ff000u)		/* >= 65520 rounds to inf */
		return sign | 0x7c00u;
	if (x >= 0x38800000u)		/* normal in f16 */
		return sign | prec_shift_rne(x - 0x38000000u, 13u);
	if (x < 0x33000000u)		/* <= 2^-25 rounds to zero */
		return sign;
	return sign | prec_shift_rne((x & 0x7fffffu) | 0x800000u,
				     126u - (x >> 23));
}

static inline float f16_to_f32(uint h)
{
	uint sign = (h & 0x8000u) << 16;
	uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	int p;

	if (e == 0x1fu)
		return as_float(sign | 0x7f800000u | (m << 13));
	if (e != 0u)
		return as_float(sign | ((e + 112u) << 23) | (m << 13));
	if (m == 0u)
		return as_float(sign);
	/* m 2^-24, normal in f32: no float arithmetic to flush it */
	p = 31 - (int)clz(m);
	return as_float(sign | ((uint)(p + 103) << 23) |
			((m << (uint)(23 - p)) & 0x7fffffu));
}

static inline uint f32_to_bf16(float f)
{
	uint x = as_uint(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (x >> 16) | 0x40u;
	return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

static inline float bf16_to_f32(uint h)
{
	return as_float((h & 0xffffu) << 16);
}

static inline uint f32_to_bf16_sr(float f, uint rnd)
{
	uint x = as_uint(f);

	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (x >> 16) | 0x40u;
	return (x + (rnd & 0xffffu)) >> 16;
}

/*
 * The vector parts are left out where tests/unit/test_precision.c builds
 * this file as C (GPO_PREC_HOST) to test the rest on the host.
 */
#ifndef GPO_PREC_HOST
/* Philox4x32-10, bit for bit core/rng.c's gpo__philox() */
static inline uint4 prec_philox(uint2 key, uint4 c)
{
	for (int r = 0; r < 10; r++) {
		uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
		uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;

		c = (uint4)(hi1 ^ c.y ^ key.x, lo1, hi0 ^ c.w ^ key.y, lo0);
		key += (uint2)(0x9E3779B9u, 0xBB67AE85u);
	}
	return c;
}

/*
 * gpo__round_bits(): word i % 4 of block i / 4 of stream
 * GPO_RNG_STREAM(GPO_RNG_ROUND = 4, step) (core/rng_i.h)
 */
static inline uint round_bits(uint seed_lo, uint seed_hi, uint step_lo,
			      uint step_hi, uint i_lo, uint i_hi)
{
	uint4 w = prec_philox((uint2)(seed_lo, seed_hi),
			      (uint4)((i_lo >> 2) | (i_hi << 30), i_hi >> 2,
				      step_lo, (step_hi & 0xffffu) | (4u << 16)));

	switch (i_lo & 3u) {
	case 0:
		return w.x;
	case 1:
		return w.y;
	case 2:
		return w.z;
	}
	return w.w;
}
#endif /* GPO_PREC_HOST */

/*
 * bitsandbytes' dynamic maps, unsigned then signed, as float bits
 * (core/quant.c's gpo__qmap; tools/qmap.py checks this copy)
 */
__constant uint prec_qmap_bits[512] = {
/* qmap begin */
	0x00000000, 0x34ae7baa, 0x35500998, 0x360e9b38, 0x3692ccf6, 0x36de4c51,
	0x3714e5d5, 0x3783126e, 0x37e171a0, 0x381fe868, 0x384f1800, 0x387e479a,
	0x3896bb99, 0x38ae5364, 0x38c5eb31, 0x3906594b, 0x394154ca, 0x397c5048,
	0x399ba5e4, 0x39b923a2, 0x39d6a162, 0x39f41f22, 0x3a08ce71, 0x3a178d50,
	0x3a264c30, 0x3a350b10, 0x3a43c9ef, 0x3a5288d0, 0x3a6147af, 0x3a70068e,
	0x3a7ec56e, 0x3a958106, 0x3aba5e35, 0x3adf3b64, 0x3b020c49, 0x3b147ae1,
	0x3b26e978, 0x3b39580f, 0x3b4bc6a7, 0x3b5e353e, 0x3b70a3d7, 0x3b818937,
	0x3b8ac082, 0x3b93f7cf, 0x3b9d2f1a, 0x3ba66666, 0x3baf9db2, 0x3bb8d4fd,
	0x3bc20c4a, 0x3bcb4394, 0x3bd47ae1, 0x3bddb22e, 0x3be6e978, 0x3bf020c5,
	0x3bf9580f, 0x3c0147ae, 0x3c05e353, 0x3c0a7ef9, 0x3c0f1aa0, 0x3c13b645,
	0x3c1851eb, 0x3c1ced90, 0x3c218937, 0x3c2f5c2a, 0x3c466667, 0x3c5d70a3,
	0x3c747ae2, 0x3c85c28f, 0x3c9147ae, 0x3c9ccccd, 0x3ca851eb, 0x3cb3d70b,
	0x3cbf5c2a, 0x3ccae148, 0x3cd66667, 0x3ce1eb87, 0x3ced70a3, 0x3cf8f5c3,
	0x3d023d70, 0x3d080000, 0x3d0dc28f, 0x3d13851f, 0x3d1947af, 0x3d1f0a3d,
	0x3d24cccd, 0x3d2a8f5b, 0x3d3051eb, 0x3d36147b, 0x3d3bd70a, 0x3d41999a,
	0x3d475c2a, 0x3d4d1eb8, 0x3d52e148, 0x3d58a3d7, 0x3d5e6667, 0x3d6428f7,
	0x3d69eb87, 0x3d6fae15, 0x3d7570a3, 0x3d7b3333, 0x3d807ae2, 0x3d835c29,
	0x3d863d71, 0x3d891eb9, 0x3d8c0000, 0x3d8ee148, 0x3d91c290, 0x3d94a3d7,
	0x3d97851f, 0x3d9a6667, 0x3d9d47af, 0x3da028f6, 0x3da30a3d, 0x3da5eb85,
	0x3da8cccd, 0x3dabae14, 0x3dae8f5c, 0x3db170a3, 0x3db451eb, 0x3db73333,
	0x3dba147b, 0x3dbcf5c3, 0x3dbfd70a, 0x3dc2b852, 0x3dc5999a, 0x3dc87ae1,
	0x3dcb5c29, 0x3dd40000, 0x3de26666, 0x3df0cccd, 0x3dff3333, 0x3e06cccc,
	0x3e0e0000, 0x3e153334, 0x3e1c6666, 0x3e23999a, 0x3e2acccc, 0x3e320000,
	0x3e393334, 0x3e406666, 0x3e47999a, 0x3e4ecccc, 0x3e560000, 0x3e5d3334,
	0x3e646666, 0x3e6b999a, 0x3e72ccce, 0x3e7a0000, 0x3e80999a, 0x3e843333,
	0x3e87cccd, 0x3e8b6667, 0x3e8f0000, 0x3e92999a, 0x3e963334, 0x3e99cccd,
	0x3e9d6667, 0x3ea10000, 0x3ea4999a, 0x3ea83333, 0x3eabcccc, 0x3eaf6666,
	0x3eb30000, 0x3eb69999, 0x3eba3333, 0x3ebdcccc, 0x3ec16666, 0x3ec50000,
	0x3ec8999a, 0x3ecc3333, 0x3ecfcccc, 0x3ed36666, 0x3ed70000, 0x3eda9999,
	0x3ede3333, 0x3ee1cccd, 0x3ee56666, 0x3ee90000, 0x3eec999a, 0x3ef03333,
	0x3ef3cccd, 0x3ef76666, 0x3efb0000, 0x3efe9999, 0x3f01199a, 0x3f02e666,
	0x3f04b332, 0x3f068000, 0x3f084ccc, 0x3f0a199a, 0x3f0be666, 0x3f0db334,
	0x3f0f8000, 0x3f114ccd, 0x3f13199a, 0x3f14e666, 0x3f16b334, 0x3f188000,
	0x3f1a4ccd, 0x3f1c199a, 0x3f1de666, 0x3f1fb333, 0x3f218000, 0x3f234ccc,
	0x3f25199a, 0x3f26e666, 0x3f28b334, 0x3f2a8000, 0x3f2c4cce, 0x3f2e199a,
	0x3f2fe666, 0x3f31b334, 0x3f338000, 0x3f354cce, 0x3f37199a, 0x3f38e666,
	0x3f3ab334, 0x3f3c8000, 0x3f3e4ccc, 0x3f40199a, 0x3f41e666, 0x3f43b334,
	0x3f458000, 0x3f474ccc, 0x3f49199a, 0x3f4ae666, 0x3f4cb332, 0x3f4e8000,
	0x3f504ccc, 0x3f52199a, 0x3f53e666, 0x3f55b334, 0x3f578000, 0x3f594ccd,
	0x3f5b199a, 0x3f5ce666, 0x3f5eb334, 0x3f608000, 0x3f624ccd, 0x3f64199a,
	0x3f65e666, 0x3f67b333, 0x3f698000, 0x3f6b4ccc, 0x3f6d199a, 0x3f6ee666,
	0x3f70b334, 0x3f728000, 0x3f744cce, 0x3f76199a, 0x3f77e666, 0x3f79b334,
	0x3f7b8000, 0x3f7d4cce, 0x3f7f199a, 0x3f800000, 0xbf7e3333, 0xbf7a9999,
	0xbf770000, 0xbf736666, 0xbf6fcccc, 0xbf6c3333, 0xbf68999a, 0xbf650000,
	0xbf616666, 0xbf5dcccc, 0xbf5a3333, 0xbf569999, 0xbf530000, 0xbf4f6666,
	0xbf4bcccc, 0xbf483333, 0xbf44999a, 0xbf410000, 0xbf3d6667, 0xbf39cccd,
	0xbf363334, 0xbf32999a, 0xbf2f0000, 0xbf2b6667, 0xbf27cccd, 0xbf243333,
	0xbf20999a, 0xbf1d0000, 0xbf196666, 0xbf15cccd, 0xbf123334, 0xbf0e999a,
	0xbf0b0000, 0xbf076666, 0xbf03cccd, 0xbf003333, 0xbef93334, 0xbef20000,
	0xbeeacccc, 0xbee3999a, 0xbedc6666, 0xbed53332, 0xbece0000, 0xbec6cccc,
	0xbebf999a, 0xbeb86666, 0xbeb13332, 0xbeaa0000, 0xbea2cccc, 0xbe9b999a,
	0xbe946666, 0xbe8d3334, 0xbe860000, 0xbe7d999a, 0xbe6f3334, 0xbe60cccd,
	0xbe526666, 0xbe440000, 0xbe359999, 0xbe273333, 0xbe18cccd, 0xbe0a6666,
	0xbdf80000, 0xbddb3334, 0xbdc9eb85, 0xbdc428f5, 0xbdbe6667, 0xbdb8a3d7,
	0xbdb2e148, 0xbdad1eb8, 0xbda75c28, 0xbda1999a, 0xbd9bd70a, 0xbd96147b,
	0xbd9051eb, 0xbd8a8f5d, 0xbd84cccd, 0xbd7e147a, 0xbd728f5d, 0xbd670a3d,
	0xbd5b851f, 0xbd500000, 0xbd447ae1, 0xbd38f5c3, 0xbd2d70a3, 0xbd21eb85,
	0xbd166667, 0xbd0ae147, 0xbcfeb852, 0xbce7ae13, 0xbcd0a3d7, 0xbcb9999a,
	0xbca28f5c, 0xbc8b851f, 0xbc68f5c3, 0xbc3ae148, 0xbc1f3b64, 0xbc160418,
	0xbc0ccccd, 0xbc039581, 0xbbf4bc6a, 0xbbe24dd3, 0xbbcfdf3b, 0xbbbd70a4,
	0xbbab020d, 0xbb989374, 0xbb8624dd, 0xbb676c8a, 0xbb428f5c, 0xbb1db22d,
	0xbaf1a9fc, 0xbaa7ef9d, 0xba7765ff, 0xba59e83e, 0xba3c6a80, 0xba1eecc1,
	0xba016f01, 0xb9c7e283, 0xb98ce705, 0xb923d70b, 0xb8ba1f4b, 0xb88aefb3,
	0xb8378034, 0xb7b24206, 0xb70205ff, 0xb65a1a94, 0xb513a3b7, 0x00000000,
	0x3513a3b7, 0x365a1a94, 0x370205ff, 0x37b24206, 0x38378034, 0x388aefb3,
	0x38ba1f4b, 0x3923d70b, 0x398ce705, 0x39c7e283, 0x3a016f01, 0x3a1eecc1,
	0x3a3c6a80, 0x3a59e83e, 0x3a7765ff, 0x3aa7ef9d, 0x3af1a9fc, 0x3b1db22d,
	0x3b428f5c, 0x3b676c8a, 0x3b8624dd, 0x3b989374, 0x3bab020d, 0x3bbd70a4,
	0x3bcfdf3b, 0x3be24dd3, 0x3bf4bc6a, 0x3c039581, 0x3c0ccccd, 0x3c160418,
	0x3c1f3b64, 0x3c3ae148, 0x3c68f5c3, 0x3c8b851f, 0x3ca28f5c, 0x3cb9999a,
	0x3cd0a3d7, 0x3ce7ae13, 0x3cfeb852, 0x3d0ae147, 0x3d166667, 0x3d21eb85,
	0x3d2d70a3, 0x3d38f5c3, 0x3d447ae1, 0x3d500000, 0x3d5b851f, 0x3d670a3d,
	0x3d728f5d, 0x3d7e147a, 0x3d84cccd, 0x3d8a8f5d, 0x3d9051eb, 0x3d96147b,
	0x3d9bd70a, 0x3da1999a, 0x3da75c28, 0x3dad1eb8, 0x3db2e148, 0x3db8a3d7,
	0x3dbe6667, 0x3dc428f5, 0x3dc9eb85, 0x3ddb3334, 0x3df80000, 0x3e0a6666,
	0x3e18cccd, 0x3e273333, 0x3e359999, 0x3e440000, 0x3e526666, 0x3e60cccd,
	0x3e6f3334, 0x3e7d999a, 0x3e860000, 0x3e8d3334, 0x3e946666, 0x3e9b999a,
	0x3ea2cccc, 0x3eaa0000, 0x3eb13332, 0x3eb86666, 0x3ebf999a, 0x3ec6cccc,
	0x3ece0000, 0x3ed53332, 0x3edc6666, 0x3ee3999a, 0x3eeacccc, 0x3ef20000,
	0x3ef93334, 0x3f003333, 0x3f03cccd, 0x3f076666, 0x3f0b0000, 0x3f0e999a,
	0x3f123334, 0x3f15cccd, 0x3f196666, 0x3f1d0000, 0x3f20999a, 0x3f243333,
	0x3f27cccd, 0x3f2b6667, 0x3f2f0000, 0x3f32999a, 0x3f363334, 0x3f39cccd,
	0x3f3d6667, 0x3f410000, 0x3f44999a, 0x3f483333, 0x3f4bcccc, 0x3f4f6666,
	0x3f530000, 0x3f569999, 0x3f5a3333, 0x3f5dcccc, 0x3f616666, 0x3f650000,
	0x3f68999a, 0x3f6c3333, 0x3f6fcccc, 0x3f736666, 0x3f770000, 0x3f7a9999,
	0x3f7e3333, 0x3f800000,
/* qmap end */
};

#define PREC_QZERO_U	0u	/* the code of 0.0 in each map */
#define PREC_QZERO_S	127u

static inline float prec_qmap(uint base, uint i)
{
	return as_float(prec_qmap_bits[base + i]);
}

/*
 * quant8's last step: of codes @c and c + 1 (values @lo <= @v < @hi) the
 * nearer, ties to the lower: |v - lo| against |hi - v|, exactly, by
 * TwoSum's (sum, error)
 */
static inline uint prec_qnear(float v, float lo, float hi, uint c)
{
	float s0, e0, s1, e1, bb;

	s0 = v - lo;
	bb = s0 - v;
	e0 = (v - (s0 - bb)) + (-lo - bb);
	s1 = hi - v;
	bb = s1 - hi;
	e1 = (hi - (s1 - bb)) + (-v - bb);
	return (s1 < s0 || (s1 == s0 && e1 < e0)) ? c + 1u : c;
}

/*
 * ---- quant8 with the maps in __local memory: a threshold table ----
 *
 * The code of v is the number of thresholds at or below it: threshold i
 * (i < 255) is the least float above the exact midpoint of map[i] and
 * map[i + 1], where the nearest code turns from i to i + 1 (at the
 * midpoint itself it is still i: ties go to the lower). A binary search
 * of them is 8 dependent lookups, each a bank conflict for a warp.
 * Instead a key of v's bits picks a bucket, whose table byte is the code
 * c of the bucket's least value; at most PREC_QSCAN = 2 thresholds lie
 * above it in the bucket, thresholds c and c + 1, read at once and
 * compared with v. Three __local reads and two comparisons a value,
 * where the maps' pair and the TwoSum of their distances made five and
 * a dozen operations.
 *
 * The key: |v| < 1 here, so its bits are below 1.0's; bits below 2^-22
 * count as 2^-22. Then the exponent and the top 6 significand bits,
 * PREC_QT_NB = 22 * 64 buckets of each sign, ascending in v: the signed
 * map's negative buckets, its positive ones, then the unsigned map's
 * positive ones (its v is > 0 here). A bucket's least value is its most
 * negative one, or 0.0 for the lowest positive bucket, which the values
 * below 2^-22 share with it; the comparisons are with v itself, so they
 * count right anywhere in the bucket. With 64 buckets a binade a bucket
 * holds 2 thresholds at most (the densest, the unsigned map's in
 * [0.5, 1), are 0.0035 apart, its buckets there 0.0078 wide); 128 would
 * hold one, but at twice the memory, and the u8 kernels' speed on an
 * H200 falls with every KB of shared memory a work-group holds (a 24 KB
 * table ran them at half speed: bench/results/issue12-h200-2026-11-29.txt).
 * tests/unit/test_precision.c checks every bucket with this file's code.
 *
 * __local words: the maps (512), the thresholds (256 a map, the last
 * +inf), the table (3 * PREC_QT_NB bytes): 8.1 KB, built per work-group
 * from the __constant maps, so that nothing generated is kept in the
 * source.
 */
#define PREC_QT_LOW	0x34800000u	/* 2^-22 */
#define PREC_QT_SHIFT	17u		/* 23 - 6 significand bits */
#define PREC_QT_NB	((0x3f800000u - PREC_QT_LOW) >> PREC_QT_SHIFT)
#define PREC_QT_WORDS	(3u * PREC_QT_NB / 4u)
#define PREC_QSCAN	2u		/* thresholds in a bucket, at most */
#define PREC_QT_THR	512u			/* the thresholds in qm */
#define PREC_QT_TAB	1024u			/* the table */
#define PREC_QLOCAL	(PREC_QT_TAB + PREC_QT_WORDS)

/*
 * The bits of the least float above the exact midpoint of @lo < @hi
 * (adjacent map values: normal or zero, not both zero). s = lo + hi
 * rounded, e its error (TwoSum, exact), h = s / 2 exactly, so the
 * midpoint is h + e / 2 with |e / 2| at most half an ulp of h: above h
 * when e > 0, h itself when e = 0, so the answer is the float after h;
 * below h when e < 0, but above the float before h, so it is h.
 */
static inline uint prec_qthr_bits(float lo, float hi)
{
	float s = lo + hi, bb = s - lo, e = (lo - (s - bb)) + (hi - bb);
	uint u = as_uint(s * 0.5f);

	if (e < 0.0f)
		return u;
	return (u >> 31) != 0u ? u - 1u : u + 1u;
}

/*
 * Word @i of the thresholds: the unsigned map's, then the signed one's;
 * from the maps at @qm (as precision.glsl, whose lavapipe build took 20 s
 * longer with the constant array read at run-time indices)
 */
static inline uint prec_qthr(__local const uint *qm, uint i)
{
	if ((i & 255u) == 255u)
		return 0x7f800000u;		/* +inf: never at or below */
	return prec_qthr_bits(as_float(qm[i]), as_float(qm[i + 1u]));
}

/* the bucket of @v (finite, |v| < 1; > 0 for the unsigned map) */
static inline uint prec_qkey(float v, bool is_signed)
{
	uint u = as_uint(v) & 0x7fffffffu, m;

	m = ((u > PREC_QT_LOW ? u : PREC_QT_LOW) - PREC_QT_LOW) >>
	    PREC_QT_SHIFT;
	if ((as_uint(v) >> 31) != 0u)
		return PREC_QT_NB - 1u - m;
	return (is_signed ? PREC_QT_NB : 2u * PREC_QT_NB) + m;
}

/* the bits of the least value of bucket @b (precision.glsl's twin) */
static inline uint prec_qt_least(uint b)
{
	uint m = b < PREC_QT_NB ? PREC_QT_NB - 1u - b :
				  (b - PREC_QT_NB) % PREC_QT_NB;

	if (b < PREC_QT_NB)	/* negative: the largest magnitude */
		return 0x80000000u |
		       (PREC_QT_LOW + ((m + 1u) << PREC_QT_SHIFT) - 1u);
	return m != 0u ? PREC_QT_LOW + (m << PREC_QT_SHIFT) : 0u;
}

/* the number of thresholds at @t (ascending, t[255] +inf) at or below @x */
static inline uint prec_qt_count(__local const uint *t, float x)
{
	uint c = 0u;

	for (uint step = 128u; step != 0u; step >>= 1)
		if (as_float(t[c + step - 1u]) <= x)
			c += step;
	return c;
}

/*
 * Table words @w0 .. @w1 - 1 (entries 4 w0 .. 4 w1 - 1; a map's entries
 * start on a word: PREC_QT_NB is a multiple of 4) into @qm + PREC_QT_TAB,
 * from the thresholds at @qm + PREC_QT_THR: each entry the code of its
 * bucket's least value. Buckets ascend within a map, so one search finds
 * the first and a walk the rest: a work-item builds a run of the table
 * in about a read an entry, not eight.
 */
static inline void prec_qt_build(__local uint *qm, uint w0, uint w1)
{
	__local const uint *t = qm + PREC_QT_THR;
	uint c = 0u, base = 512u;

	for (uint w = w0; w < w1; w++) {
		uint word = 0u;

		for (uint j = 0u; j < 4u; j++) {
			uint b = 4u * w + j;
			uint map = b < 2u * PREC_QT_NB ? 256u : 0u;
			float lo = as_float(prec_qt_least(b));

			if (base != map) {
				/* the first of a map: a search */
				base = map;
				c = prec_qt_count(t + base, lo);
			}
			/* then on (t[base + 255] is inf) */
			while (as_float(t[base + c]) <= lo)
				c++;
			word |= c << (8u * j);
		}
		qm[PREC_QT_TAB + w] = word;
	}
}

/*
 * The nearest code to @v (finite) in the map of @is_signed, from the
 * table at @qm: quant8()'s steps after its product, the search and the
 * choice of the nearer by the table. The map's ends are constants
 * (folded); then the table's byte, and the two thresholds after it at
 * once.
 */
static inline uint prec_qlocal(__local const uint *qm, float v,
			       bool is_signed)
{
	__local const uint *t = qm + PREC_QT_THR + (is_signed ? 256u : 0u);
	uint b, c;

	if (v <= as_float(is_signed ? prec_qmap_bits[256] : prec_qmap_bits[0]))
		return 0u;
	if (v >= as_float(prec_qmap_bits[255]))		/* 1.0 in both */
		return 255u;
	b = prec_qkey(v, is_signed);
	c = (qm[PREC_QT_TAB + (b >> 2)] >> (8u * (b & 3u))) & 0xffu;
	return c + (v >= as_float(t[c]) ? 1u : 0u) +
	       (v >= as_float(t[c < 255u ? c + 1u : 255u]) ? 1u : 0u);
}

#ifndef GPO_PREC_HOST
/*
 * The maps, thresholds and table into @qm[PREC_QLOCAL] (barriers
 * between), by the whole work-group (of @wg work-items): every work-item
 * calls it before any returns, and calls barrier() after it before
 * prec_qlocal() reads the table
 */
static inline void prec_qlocal_load(__local uint *qm, uint wg)
{
	uint run = (PREC_QT_WORDS + wg - 1u) / wg;
	uint w0 = min((uint)get_local_id(0) * run, PREC_QT_WORDS);

	for (uint i = get_local_id(0); i < 512u; i += wg)
		qm[i] = prec_qmap_bits[i];
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint i = get_local_id(0); i < 512u; i += wg)
		qm[PREC_QT_THR + i] = prec_qthr(qm, i);
	barrier(CLK_LOCAL_MEM_FENCE);
	/* a run of the table each */
	prec_qt_build(qm, w0, min(w0 + run, PREC_QT_WORDS));
}
#endif

/*
 * The value quant8 finds the code of (quant_i.h): @x times @r, the
 * reciprocal of the block's @absmax (cr_div(1, absmax), found once a
 * block where a kernel can), both IEEE. Where absmax is in [2^-100,
 * 2^126) the device's multiply gives it whatever its denormal mode: r is
 * normal and at most 2^100, so a subnormal x (flushed or not) or a
 * subnormal product is below 2^-26, which has the code of 0.0 either
 * way. Elsewhere (r may be subnormal, as for absmax 2^127, whose largest
 * x has code 255) prec_mul.
 */
static inline float prec_qv(float x, float r, float absmax)
{
	if (absmax >= 0x1p-100f && absmax < 0x1p126f)
		return x * r;
	return prec_mul(x, r);
}

/* quant_i.h's quant8: the nearest code, ties to the lower */
static inline uint quant8(float x, float absmax, bool is_signed)
{
	uint base = is_signed ? 256u : 0u;
	uint zero = is_signed ? PREC_QZERO_S : PREC_QZERO_U;
	uint c = 0u;
	float v;

	if ((as_uint(absmax) & 0x7fffffffu) == 0u)
		return zero;
	v = prec_qv(x, cr_div(1.0f, absmax), absmax);
	/* by the bits: a compiler may assume there are no NaNs */
	if ((as_uint(v) & 0x7fffffffu) > 0x7f800000u)
		return zero;
	if (v <= prec_qmap(base, 0u))
		return 0u;
	if (v >= prec_qmap(base, 255u))
		return 255u;
	for (uint step = 128u; step != 0u; step >>= 1)
		if (prec_qmap(base, c + step) <= v)
			c += step;
	return prec_qnear(v, prec_qmap(base, c), prec_qmap(base, c + 1u), c);
}

/*
 * quant8() with the maps and table in __local memory (prec_qlocal_load()):
 * the same code, found in fewer reads
 */
static inline uint quant8_local(__local const uint *qm, float x,
				float absmax, bool is_signed)
{
	float v;

	if ((as_uint(absmax) & 0x7fffffffu) == 0u)
		return is_signed ? PREC_QZERO_S : PREC_QZERO_U;
	v = prec_qv(x, cr_div(1.0f, absmax), absmax);
	if ((as_uint(v) & 0x7fffffffu) > 0x7f800000u)
		return is_signed ? PREC_QZERO_S : PREC_QZERO_U;
	return prec_qlocal(qm, v, is_signed);
}

static inline float dequant8(uint q, float absmax, bool is_signed)
{
	return prec_mul(prec_qmap(is_signed ? 256u : 0u, q & 0xffu), absmax);
}

#endif /* GPO_PRECISION_CL */
