/* SPDX-License-Identifier: MIT */
/*
 * math.glsl - the tensor kernels' own exp, expm1, log, erf/erfc, tanh and
 * sigmoid, accurate to a few float ulps over the whole range
 *
 * Vulkan only bounds the built-ins loosely (exp: 3 + 2|x| ulp, log: an
 * absolute 2^-21 near 1), GLSL has no erf, and tanh written as a ratio of
 * exponentials gives inf / inf = NaN for large |x|. These are written so
 * that nothing overflows on the way: tanh goes to +-1 and sigmoid to 0 or
 * 1, and each function's error stays near the float rounding of its
 * result. `precise` keeps the compiler from reassociating the argument
 * reductions, whose cancellation is the point.
 */
#define M_LN2_HI	0.693145751953125	/* 16 bits: n * hi is exact */
#define M_LN2_LO	1.428606820309417232e-6
#define M_LOG2E		1.442695040888963407
#define M_SQRT1_2	0.7071067811865475244
#define M_1_SQRTPI	0.5641895835477562869	/* 1 / sqrt(pi) */
#define M_1_SQRT2PI	0.3989422804014326779	/* 1 / sqrt(2 pi) */
#define M_SQRT2_PI	0.7978845608028653559	/* sqrt(2 / pi) */

float f_inf()
{
	return uintBitsToFloat(0x7f800000u);
}

float f_nan()
{
	return uintBitsToFloat(0x7fc00000u);
}

/* a bit test, which no "no NaNs" assumption of a compiler can drop */
bool is_nan(float x)
{
	return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u;
}

/* 2^k for -126 <= k <= 127, from its bits */
float pow2i(int k)
{
	return uintBitsToFloat(uint(k + 127) << 23);
}

/*
 * exp_acc - e^x: x = n ln2 + r with |r| <= ln2 / 2 (Cody and Waite's two
 * part ln2), e^r by its Taylor series to r^8 (the first term left out is
 * below 2^-31 relative), times 2^n in two steps so that subnormal results
 * and n = 128 need no ldexp outside its defined range. No branches: the
 * same arithmetic for every x (whatever it gives outside the range),
 * NaN, overflow and underflow chosen at the end, so that a kernel's
 * unrolled block of them is straight-line code (the attention kernels
 * ran 4 % faster so on an H200).
 */
float exp_acc(float x)
{
	precise float n, r;
	float p, e;
	int k, k1;

	n = round(x * M_LOG2E);
	r = x - n * M_LN2_HI;
	r = r - n * M_LN2_LO;
	p = 1.0 / 40320.0;
	p = p * r + 1.0 / 5040.0;
	p = p * r + 1.0 / 720.0;
	p = p * r + 1.0 / 120.0;
	p = p * r + 1.0 / 24.0;
	p = p * r + 1.0 / 6.0;
	p = p * r + 0.5;
	p = p * r + 1.0;
	p = p * r + 1.0;
	k = int(n);
	k1 = k / 2;
	e = p * pow2i(k1) * pow2i(k - k1);
	e = x < -104.0 ? 0.0 : e;
	e = x > 88.7228394 ? f_inf() : e;
	return is_nan(x) ? x : e;
}

/*
 * expm1_acc - e^x - 1, accurate where it is near 0: the Taylor series
 * without its 1 for |x| < 0.7 (the first term left out, x^13 / 13!, is
 * below 2^-34 of the result), exp_acc(x) - 1 elsewhere, where e^x is
 * far enough from 1 that the subtraction loses under two bits.
 */
float expm1_acc(float x)
{
	float p;

	if (abs(x) >= 0.7)
		return exp_acc(x) - 1.0;
	p = 1.0 / 479001600.0;
	p = p * x + 1.0 / 39916800.0;
	p = p * x + 1.0 / 3628800.0;
	p = p * x + 1.0 / 362880.0;
	p = p * x + 1.0 / 40320.0;
	p = p * x + 1.0 / 5040.0;
	p = p * x + 1.0 / 720.0;
	p = p * x + 1.0 / 120.0;
	p = p * x + 1.0 / 24.0;
	p = p * x + 1.0 / 6.0;
	p = p * x + 0.5;
	p = p * x + 1.0;
	return p * x;
}

/*
 * log_acc - ln x = e ln2 + ln m with m in [sqrt(1/2), sqrt(2)) taken from
 * the bits (subnormals scaled up first); ln m = 2 atanh(s), s = (m - 1) /
 * (m + 1), |s| < 0.172, by its odd series to s^15 (the next term is below
 * 2^-40 relative).
 */
float log_acc(float x)
{
	precise float f, s, lm;
	float s2, p;
	uint bits;
	int e;

	if (is_nan(x) || x < 0.0)
		return f_nan();
	if (x == 0.0)
		return -f_inf();
	if (x == f_inf())
		return x;
	e = 0;
	if (x < 1.17549435e-38) {
		x *= 16777216.0;	/* 2^24: subnormal to normal */
		e = -24;
	}
	bits = floatBitsToUint(x);
	e += int(bits >> 23) - 127;
	f = uintBitsToFloat((bits & 0x007fffffu) | 0x3f800000u);
	if (f > 1.41421356) {
		f *= 0.5;
		e += 1;
	}
	f = f - 1.0;		/* exact: f in [0.707, 1.414) */
	s = f / (2.0 + f);
	s2 = s * s;
	p = 1.0 / 15.0;
	p = p * s2 + 1.0 / 13.0;
	p = p * s2 + 1.0 / 11.0;
	p = p * s2 + 1.0 / 9.0;
	p = p * s2 + 1.0 / 7.0;
	p = p * s2 + 1.0 / 5.0;
	p = p * s2 + 1.0 / 3.0;
	lm = 2.0 * s + 2.0 * s * (s2 * p);
	return float(e) * M_LN2_HI + (float(e) * M_LN2_LO + lm);
}

/*
 * e^(-y^2) for y >= 0 without the rounding of y^2 (relative error 2 y^2
 * ulp done directly): y = h + d with h on a 1/16 grid, so h^2 is exact,
 * and y^2 = h^2 + d (y + h) (W. J. Cody's split).
 */
float exp_negsq(float y)
{
	precise float h, d;

	h = trunc(y * 16.0) / 16.0;
	d = (y - h) * (y + h);
	return exp_acc(-h * h) * exp_acc(-d);
}

/*
 * erf and erfc from W. J. Cody's rational approximations (Math. Comp. 23,
 * 1969): erf(x) = x P(x^2) / Q(x^2) for |x| <= 0.46875, erfc(y) =
 * e^(-y^2) P(y) / Q(y) for 0.46875 < y <= 4, and erfc(y) = e^(-y^2) / y
 * (1/sqrt(pi) - z P(z) / Q(z)), z = 1/y^2, beyond; their own error is
 * far below float's, so what is left is the rounding of the evaluation.
 */
float erf_small(float x)
{
	float y = x * x, n, d;

	n = 1.85777706184603153e-1 * y;
	d = y;
	n = (n + 3.16112374387056560e00) * y;
	d = (d + 2.36012909523441209e01) * y;
	n = (n + 1.13864154151050156e02) * y;
	d = (d + 2.44024637934444173e02) * y;
	n = (n + 3.77485237685302021e02) * y;
	d = (d + 1.28261652607737228e03) * y;
	return x * (n + 3.20937758913846947e03) /
	       (d + 2.84423683343917062e03);
}

/* erfc(y) for y > 0.46875 */
float erfc_large(float y)
{
	float n, d, z;

	if (y >= 10.06)		/* erfc < 2^-149: zero */
		return 0.0;
	if (y <= 4.0) {
		n = 2.15311535474403846e-8 * y;
		d = y;
		n = (n + 5.64188496988670089e-1) * y;
		d = (d + 1.57449261107098347e01) * y;
		n = (n + 8.88314979438837594e00) * y;
		d = (d + 1.17693950891312499e02) * y;
		n = (n + 6.61191906371416295e01) * y;
		d = (d + 5.37181101862009858e02) * y;
		n = (n + 2.98635138197400131e02) * y;
		d = (d + 1.62138957456669019e03) * y;
		n = (n + 8.81952221241769090e02) * y;
		d = (d + 3.29079923573345963e03) * y;
		n = (n + 1.71204761263407058e03) * y;
		d = (d + 4.36261909014324716e03) * y;
		n = (n + 2.05107837782607147e03) * y;
		d = (d + 3.43936767414372164e03) * y;
		return exp_negsq(y) * (n + 1.23033935479799725e03) /
		       (d + 1.23033935480374942e03);
	}
	z = 1.0 / (y * y);
	n = 1.63153871373020978e-2 * z;
	d = z;
	n = (n + 3.05326634961232344e-1) * z;
	d = (d + 2.56852019228982242e00) * z;
	n = (n + 3.60344899949804439e-1) * z;
	d = (d + 1.87295284992346725e00) * z;
	n = (n + 1.25781726111229246e-1) * z;
	d = (d + 5.27905102951428412e-1) * z;
	n = (n + 1.60837851487422766e-2) * z;
	d = (d + 6.05183413124413191e-2) * z;
	n = z * (n + 6.58749161529837803e-4) /
	    (d + 2.33520497626869185e-3);
	return exp_negsq(y) * ((M_1_SQRTPI - n) / y);
}

float erf_acc(float x)
{
	float y = abs(x), r;

	if (is_nan(x))
		return x;
	if (y <= 0.46875)
		return erf_small(x);
	r = 1.0 - erfc_large(y);
	return x < 0.0 ? -r : r;
}

float erfc_acc(float x)
{
	if (is_nan(x))
		return x;
	if (abs(x) <= 0.46875)
		return 1.0 - erf_small(x);
	if (x > 0.0)
		return erfc_large(x);
	return 2.0 - erfc_large(-x);
}

/* Phi(x), the standard normal distribution function, = erfc(-x/sqrt 2)/2 */
float phi_cdf(float x)
{
	return 0.5 * erfc_acc(-x * M_SQRT1_2);
}

/* phi(x), the standard normal density */
float phi_pdf(float x)
{
	return M_1_SQRT2PI * exp_negsq(abs(x) * M_SQRT1_2);
}

/*
 * tanh_acc - tanh x = -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of
 * x: the exponential is of a negative number, so it cannot overflow, and
 * expm1 keeps small |x| accurate; tanh goes to +-1 exactly.
 */
float tanh_acc(float x)
{
	float e = expm1_acc(-2.0 * abs(x)), t;

	if (is_nan(x))
		return x;
	t = -e / (2.0 + e);
	return x < 0.0 ? -t : t;
}

/* 1 - tanh^2 x = 4 e / (1 + e)^2 with e = e^(-2|x|): no cancellation */
float tanh_dx(float x)
{
	float e = exp_acc(-2.0 * abs(x));

	return 4.0 * e / ((1.0 + e) * (1.0 + e));
}

/*
 * sigmoid2 - s = 1 / (1 + e^-x) and 1 - s, each from e = e^(-|x|) <= 1,
 * so neither overflows and neither is taken as a difference from 1.
 */
void sigmoid2(float x, out float s, out float sc)
{
	float e = exp_acc(-abs(x)), d = 1.0 + e;

	if (x >= 0.0) {
		s = 1.0 / d;
		sc = e / d;
	} else {
		s = e / d;
		sc = 1.0 / d;
	}
	if (is_nan(x)) {
		s = x;
		sc = x;
	}
}
