// SPDX-License-Identifier: MIT
/*
 * test_precision.c - the precision library's C reference (core/quant.c)
 * against hand-checked cases and brute force, and the kernels' own
 * algorithms (kernels/opencl/precision.cl, built here as C; precision.glsl
 * is the same text in GLSL) against the cpu's IEEE division and sqrt and
 * core/dtype.c's conversions, bit for bit. The devices' kernels are
 * compared with this reference in tests/ops (the cast family, and ew's div
 * and sqrt).
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include "testutil.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"
#include "core/rng_i.h"

/* ---- precision.cl as C ---------------------------------------------------- */

typedef uint32_t uint;

static inline uint prec_as_uint(float f)
{
	uint x;

	memcpy(&x, &f, sizeof(x));
	return x;
}

static inline float prec_as_float(uint x)
{
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

static inline uint clz(uint x)
{
	return (uint)__builtin_clz(x);
}

static inline uint mul_hi(uint a, uint b)
{
	return (uint)(((uint64_t)a * b) >> 32);
}

/*
 * The fast paths take the device's reciprocal and rsqrt as estimates, good
 * to 2.5 and 2 ulp: here the exact value moved by up to 1.99 and 1.49 ulp
 * before rounding (random, or all the way up or down), or correctly
 * rounded (est_mode 0). est_calls counts the fast paths' attempts.
 */
static int est_mode;
static uint64_t est_rng = 0x5eed;
static long est_calls;

static float est(double x, double max_ulp)
{
	double ulp = ldexp(1.0, ilogb(x) - 23), off = 0;
	uint64_t z;

	switch (est_mode) {
	case 1:
		z = (est_rng += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
		off = ((double)(z >> 11) / 4503599627370496.0 - 1) * max_ulp;
		break;
	case 2:
		off = max_ulp;
		break;
	case 3:
		off = -max_ulp;
		break;
	}
	return (float)(x + off * ulp);
}

static float est_rcp(float x)
{
	est_calls++;
	return est(1.0 / x, 1.99);
}

static float est_rsqrt(float x)
{
	return est(1.0 / sqrt(x), 1.49);
}

#define PREC_RCP(x)	est_rcp(x)
#define PREC_RSQRT(x)	est_rsqrt(x)
#define fma(x, y, z)	fmaf(x, y, z)	/* OpenCL's fma on floats */
#define as_uint(x)	prec_as_uint(x)
#define as_float(x)	prec_as_float(x)
#define __constant	static const
#define __local
#define GPO_PREC_HOST
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "opencl/precision.cl"
#pragma GCC diagnostic pop
#undef as_uint
#undef as_float
#undef fma

/*
 * Devices may flush denormals (shaderDenormFlushToZero, OpenCL without
 * CL_FP_DENORM): with ftz set, kdiv() and ksqrt() run the kernels' code
 * with x86's FTZ and DAZ on, so that a fast path that made or read a
 * subnormal would show. With fused set, they run the fma versions
 * (prec_div_fma, prec_sqrt_fma: precision.glsl's PREC_FMA path).
 */
static int ftz, fused;

static float kdiv1(float a, float b)
{
	return fused ? prec_div_fma(a, b) : prec_div(a, b);
}

static float ksqrt1(float a)
{
	return fused ? prec_sqrt_fma(a) : prec_sqrt(a);
}

static __attribute__((noinline)) float kdiv(float a, float b)
{
	volatile float x = a, y = b, q;
#if defined(__SSE__)
	unsigned int csr = _mm_getcsr();

	if (ftz)
		_mm_setcsr(csr | 0x8040);	/* FTZ | DAZ */
	q = kdiv1(x, y);
	_mm_setcsr(csr);
#else
	q = kdiv1(x, y);
#endif
	return q;
}

static __attribute__((noinline)) float ksqrt(float a)
{
	volatile float x = a, r;
#if defined(__SSE__)
	unsigned int csr = _mm_getcsr();

	if (ftz)
		_mm_setcsr(csr | 0x8040);
	r = ksqrt1(x);
	_mm_setcsr(csr);
#else
	r = ksqrt1(x);
#endif
	return r;
}

/* precision.cl's quant8, with flushed denormals where ftz is set */
static __attribute__((noinline)) unsigned int kquant8(float x, float absmax,
						      int sg)
{
	volatile float a = x, m = absmax;
	unsigned int c;
#if defined(__SSE__)
	unsigned int csr = _mm_getcsr();

	if (ftz)
		_mm_setcsr(csr | 0x8040);
	c = quant8(a, m, sg);
	_mm_setcsr(csr);
#else
	c = quant8(a, m, sg);
#endif
	return c;
}

static uint64_t next64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t fbits(float f)
{
	return prec_as_uint(f);
}

static float bitsf(uint32_t x)
{
	return prec_as_float(x);
}

/*
 * A float of every kind: random bits (all classes), subnormals, values near
 * 1, huge and tiny magnitudes, zeros, infinities, NaNs.
 */
static float any_float(uint64_t *s)
{
	uint64_t r = next64(s);
	uint32_t sign = (uint32_t)(r >> 63) << 31, m = (uint32_t)r & 0x7fffff;

	switch ((r >> 32) % 10) {
	case 0:
		return bitsf(sign | m);				/* subnormal */
	case 1:
		return bitsf(sign | (uint32_t)(0x7e + (r >> 40) % 4) << 23 | m);
	case 2:
		return bitsf(sign | (uint32_t)(0xf0 + (r >> 40) % 15) << 23 | m);
	case 3:
		return bitsf(sign | (uint32_t)(1 + (r >> 40) % 8) << 23 | m);
	case 4:
		switch ((r >> 40) % 5) {
		case 0:
			return bitsf(sign);
		case 1:
			return bitsf(sign | 0x7f800000);
		case 2:
			return bitsf(sign | 0x7f800000 | (m ? m : 1));
		case 3:
			return bitsf(sign | 0x7fc00000 | (m >> 1));
		}
		return bitsf(sign | 0x7f7fffff);
	}
	return bitsf((uint32_t)r);
}

/* The bits the cpu gives; NaN bits only where the cpu is x86 (SSE's). */
static int same(float got, float want)
{
#if defined(__x86_64__) || defined(__i386__)
	return fbits(got) == fbits(want);
#else
	return isnan(want) ? isnan(got) : fbits(got) == fbits(want);
#endif
}

/* ---- the map ------------------------------------------------------------ */

START_TEST(test_qmap_has_bitsandbytes_values)
{
	int s, i;

	for (s = 0; s < 2; s++) {
		const float *q = gpo__qmap[s];
		int zeros = 0, ones = 0;

		for (i = 0; i < 256; i++) {
			ck_assert(isfinite(q[i]));
			zeros += q[i] == 0.0f;
			ones += q[i] == 1.0f;
			if (i)
				ck_assert_msg(q[i - 1] < q[i],
					      "map %d not ascending at %d", s, i);
		}
		ck_assert_int_eq(zeros, 1);
		ck_assert_int_eq(ones, 1);
		ck_assert(q[255] == 1.0f);
		ck_assert(q[s ? GPO_QZERO_S : GPO_QZERO_U] == 0.0f);
	}
	/*
	 * By hand from create_dynamic_map: decade 10^-6 has the midpoints of
	 * linspace(0.1, 1, 3) (unsigned: 0.325, 0.775) or of linspace(0.1,
	 * 1, 2) (signed: +-0.55); decade 10^0 ends at the last midpoint of
	 * linspace(0.1, 1, 129) (1 - 0.9 / 256) or of 65 points (1 - 0.9 /
	 * 128); the signed map starts at minus that.
	 */
	ck_assert(gpo__qmap[0][0] == 0.0f);
	ck_assert(fabs(gpo__qmap[0][1] - 0.325e-6) < 1e-13);
	ck_assert(fabs(gpo__qmap[0][2] - 0.775e-6) < 1e-13);
	ck_assert(fabs(gpo__qmap[0][254] - (1 - 0.9 / 256)) < 1e-7);
	ck_assert(fabs(gpo__qmap[1][128] - 0.55e-6) < 1e-13);
	ck_assert(fabs(gpo__qmap[1][126] + 0.55e-6) < 1e-13);
	ck_assert(fabs(gpo__qmap[1][254] - (1 - 0.9 / 128)) < 1e-7);
	ck_assert(gpo__qmap[1][0] == -gpo__qmap[1][254]);
	/* and the exact float32 values torch computes (tools/qmap.py) */
	ck_assert_uint_eq(fbits(gpo__qmap[0][1]), 0x34ae7baa);
	ck_assert_uint_eq(fbits(gpo__qmap[0][254]), 0x3f7f199a);
	ck_assert_uint_eq(fbits(gpo__qmap[1][0]), 0xbf7e3333);
	/* the signed map is symmetric but for 1.0 */
	for (i = 0; i < 127; i++)
		ck_assert(gpo__qmap[1][i] == -gpo__qmap[1][254 - i]);
	/* the kernels' copy (precision.cl) is the same */
	for (i = 0; i < 512; i++)
		ck_assert_uint_eq(prec_qmap_bits[i],
				  fbits(gpo__qmap[i / 256][i % 256]));
}
END_TEST

/* ---- quant8 -------------------------------------------------------------- */

/* The nearest code by search over all 256 (ties: the lower), in double. */
static unsigned int brute_code(const float *q, float v, unsigned int zero)
{
	unsigned int c, best = 0;
	double d, bd = INFINITY;

	if (isnan(v))
		return zero;
	/* beyond an end (where double would lose |v - q|), that end */
	if (v >= q[255])
		return 255;
	if (v <= q[0])
		return 0;
	for (c = 0; c < 256; c++) {
		d = fabs((double)v - q[c]);
		if (d < bd) {
			bd = d;
			best = c;
		}
	}
	return best;
}

/*
 * What quant8 rounds to a code: x times the reciprocal of absmax, each
 * rounded to float (in double, where the product of two floats is exact;
 * a subnormal absmax's reciprocal may be inf)
 */
static float qv(float x, float absmax)
{
	return (float)((double)x * (float)(1.0 / (double)absmax));
}

START_TEST(test_quant8_is_the_nearest_code)
{
	uint64_t s = tu_rng("quant8");
	int sg, n, i;

	for (sg = 0; sg < 2; sg++) {
		const float *q = gpo__qmap[sg];
		unsigned int zero = sg ? GPO_QZERO_S : GPO_QZERO_U;

		for (n = 0; n < (tu_quick() ? 20000 : 200000); n++) {
			float absmax = (float)tu_rand(&s, 1e-3, 1e3);
			float x = (float)tu_rand(&s, sg ? -1.0 : 0.0, 1.0);
			unsigned int want, got;

			switch (n % 8) {
			case 0:		/* beyond the block's absmax */
				x *= 3.0f;
				break;
			case 1:		/* small values, down to subnormal */
				x = ldexpf(x, -(int)(next64(&s) % 150));
				break;
			case 2:		/* a map value, exactly */
				x = q[next64(&s) % 256];
				absmax = 1.0f;
				break;
			case 3:		/* a specials */
				x = any_float(&s);
				break;
			case 4:		/* a subnormal absmax: 1/absmax may be inf */
				absmax = bitsf((uint32_t)(next64(&s) %
							  0x7fffff) + 1);
				break;
			case 5:		/* absmax >= 2^126: 1/absmax subnormal */
				absmax = bitsf(0x7e800000u + (uint32_t)
					       (next64(&s) % 0xffffff));
				break;
			}
			x *= absmax;
			ftz = n % 3 == 0;	/* as a device that flushes */
			want = brute_code(q, absmax ? qv(x, absmax) : NAN, zero);
			got = gpo__quant8(x, absmax, sg);
			if (got != want || kquant8(x, absmax, sg) != want)
				ck_abort_msg("signed %d: quant8(%a, %a) = %u (kernel %u, ftz %d), nearest %u",
					     sg, x, absmax, got,
					     kquant8(x, absmax, sg), ftz, want);
			if (fbits(gpo__dequant8((uint8_t)got, absmax, sg)) !=
			    fbits(q[got] * absmax) ||
			    !same(dequant8(got, absmax, sg),
				  gpo__dequant8((uint8_t)got, absmax, sg)))
				ck_abort_msg("dequant8(%u, %a)", got, absmax);
		}
		ftz = 0;
		/* ties (midpoints exact in float) go to the lower code */
		for (i = 0; i < 255; i++) {
			double mid = ((double)q[i] + q[i + 1]) / 2;

			if ((float)mid != mid)
				continue;
			ck_assert_uint_eq(gpo__quant8((float)mid, 1.0f, sg), i);
			ck_assert_uint_eq(quant8((float)mid, 1.0f, sg), i);
			ck_assert_uint_eq(gpo__quant8(nextafterf((float)mid, 2),
						      1.0f, sg), i + 1);
		}
		/* absmax 0 and NaN quotients: the code of 0.0 */
		ck_assert_uint_eq(gpo__quant8(0.5f, 0.0f, sg), zero);
		ck_assert_uint_eq(gpo__quant8(NAN, 1.0f, sg), zero);
		ck_assert_uint_eq(gpo__quant8(1.0f, NAN, sg), zero);
		ck_assert_uint_eq(gpo__quant8(INFINITY, 1.0f, sg), 255);
		ck_assert_uint_eq(gpo__quant8(-INFINITY, 1.0f, sg), 0);
		ck_assert_uint_eq(gpo__quant8(1.0f, 1.0f, sg), 255);
		ck_assert_uint_eq(gpo__quant8(0.0f, 7.0f, sg), zero);
		ck_assert_uint_eq(quant8(0.5f, 0.0f, sg), zero);
		ck_assert_uint_eq(quant8(NAN, 1.0f, sg), zero);
	}
}
END_TEST

/* ---- quant8's threshold table (precision.cl, precision.glsl) ---------- */

/* the maps, thresholds and table, as a work-group's prec_qlocal_load() */
static uint qlocal[PREC_QLOCAL];

static void qlocal_build_runs(uint run)
{
	uint i;

	for (i = 0; i < 512; i++)
		qlocal[i] = prec_qmap_bits[i];
	for (i = 0; i < 512; i++)
		qlocal[PREC_QT_THR + i] = prec_qthr(qlocal, i);
	for (i = 0; i < PREC_QT_WORDS; i += run)
		prec_qt_build(qlocal, i, i + run < PREC_QT_WORDS ?
				       i + run : PREC_QT_WORDS);
}

/* as a work-group of 256 builds it: 5 words a work-item */
static void qlocal_build(void)
{
	qlocal_build_runs((PREC_QT_WORDS + 255) / 256);
}

static uint qtab(uint b)
{
	return (qlocal[PREC_QT_TAB + b / 4] >> (8 * (b % 4))) & 0xff;
}

/* v's place in the float order, -0 and +0 alike */
static int64_t ord(uint x)
{
	return x >> 31 ? -(int64_t)(x & 0x7fffffff) : (int64_t)x;
}

/*
 * The bits of the greatest value of bucket @b, from the key's definition
 * (prec_qkey): a magnitude's bucket is (|v| - LOW) >> SHIFT, the lowest
 * one reaching down to 0; the negative ones in reverse.
 */
static uint qt_greatest(uint b)
{
	uint m = b < PREC_QT_NB ? PREC_QT_NB - 1 - b : (b - PREC_QT_NB) %
						       PREC_QT_NB;

	if (b < PREC_QT_NB)
		return 0x80000000u | (m ? PREC_QT_LOW + (m << PREC_QT_SHIFT) :
				      0);
	return PREC_QT_LOW + ((m + 1) << PREC_QT_SHIFT) - 1;
}

/* the thresholds of map @sg at or below @v, counted one by one */
static uint thr_le(int sg, float v)
{
	uint i, n = 0;

	for (i = 0; i < 255; i++)
		n += bitsf(qlocal[PREC_QT_THR + 256 * sg + i]) <= v;
	return n;
}

/*
 * Each threshold is the least float above its pair's exact midpoint
 * (in double, exactly: the map values are floats), strictly between the
 * pair; the kernels' way of finding it (TwoSum) has no special cases.
 */
START_TEST(test_quant8_thresholds_are_the_midpoints)
{
	uint i;
	int sg;

	qlocal_build();
	for (sg = 0; sg < 2; sg++) {
		const float *q = gpo__qmap[sg];

		for (i = 0; i < 255; i++) {
			double mid = ((double)q[i] + q[i + 1]) / 2;
			float t = bitsf(qlocal[PREC_QT_THR + 256 * sg + i]);

			ck_assert_msg(t > mid && nextafterf(t, -INFINITY) <= mid,
				      "map %d: threshold %u %a, midpoint %a",
				      sg, i, t, mid);
			ck_assert(q[i] < t && t <= q[i + 1]);
		}
		ck_assert_uint_eq(qlocal[PREC_QT_THR + 256 * sg + 255],
				  0x7f800000u);
	}
	/* a midpoint that is a float: the next one up, either sign */
	ck_assert_uint_eq(prec_qthr_bits(0.25f, 0.75f), fbits(0.5f) + 1);
	ck_assert_uint_eq(prec_qthr_bits(-0.75f, -0.25f), fbits(-0.5f) - 1);
	/* one that is not: rounded up, by TwoSum's sign of the error */
	ck_assert_uint_eq(prec_qthr_bits(1.0f, bitsf(fbits(1.0f) + 1)),
			  fbits(1.0f) + 1);
	ck_assert_uint_eq(prec_qthr_bits(bitsf(fbits(1.0f) + 1),
					 bitsf(fbits(1.0f) + 2)),
			  fbits(1.0f) + 2);
}
END_TEST

/*
 * What prec_qlocal() relies on, bucket by bucket: the keys cut (-1, 1)
 * into intervals in order (the lowest positive one reaching down to 0);
 * each holds PREC_QSCAN thresholds at most above its least value, and
 * its entry is the code there.
 */
START_TEST(test_quant8_table_bounds_the_thresholds)
{
	uint b, most = 0;

	qlocal_build();
	ck_assert_uint_eq(PREC_QT_NB % 4, 0);
	ck_assert_uint_eq(PREC_QT_NB, 22 * 64);
	for (b = 0; b < 3 * PREC_QT_NB; b++) {
		int sg = b < 2 * PREC_QT_NB;
		uint lo = prec_qt_least(b), hi = qt_greatest(b);
		uint c = thr_le(sg, bitsf(lo)), n = thr_le(sg, bitsf(hi)) - c;

		/* the interval's ends have its key, and follow the last's */
		ck_assert_uint_eq(prec_qkey(bitsf(lo), sg), b);
		ck_assert_uint_eq(prec_qkey(bitsf(hi), sg), b);
		ck_assert(ord(lo) <= ord(hi));
		if (b != 0 && b != 2 * PREC_QT_NB)
			ck_assert_int_eq(ord(lo), ord(qt_greatest(b - 1)) +
						  (lo == 0 ? 0 : 1));
		ck_assert_msg(n <= PREC_QSCAN, "bucket %u: %u thresholds", b,
			      n);
		ck_assert_uint_eq(qtab(b), c);
		most = n > most ? n : most;
	}
	/* the resolution is no finer than it needs to be */
	ck_assert_uint_eq(most, PREC_QSCAN);
	/* the same table whatever the runs the work-items build */
	{
		static const uint runs[] = { 1, 2, 5, 97, PREC_QT_WORDS };
		static uint want[PREC_QT_WORDS];
		uint r;

		memcpy(want, qlocal + PREC_QT_TAB, sizeof(want));
		for (r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
			qlocal_build_runs(runs[r]);
			ck_assert_msg(!memcmp(want, qlocal + PREC_QT_TAB,
					      sizeof(want)),
				      "runs of %u: another table", runs[r]);
		}
	}
	/* the unsigned table starts where the signed one ends */
	ck_assert_uint_eq(prec_qkey(0x1p-30f, 0), 2 * PREC_QT_NB);
	ck_assert_uint_eq(prec_qkey(0x1p-30f, 1), PREC_QT_NB);
	ck_assert_uint_eq(prec_qkey(-0x1p-30f, 1), PREC_QT_NB - 1);
	ck_assert_uint_eq(prec_qkey(-0x1.fffffep-1f, 1), 0);
	ck_assert_uint_eq(prec_qkey(0x1.fffffep-1f, 0), 3 * PREC_QT_NB - 1);
}
END_TEST

/* prec_qlocal() takes no NaN (quant8_local() returns before it) */
static void check_qlocal(float v, int sg)
{
	uint want = gpo__quant8(v, 1.0f, sg), got;

	if (isnan(v))
		return;
	got = prec_qlocal(qlocal, v, sg);
	if (got != want)
		ck_abort_msg("signed %d: prec_qlocal(%a) = %u, quant8 %u",
			     sg, v, got, want);
}

/*
 * prec_qlocal() against the reference: at and next to every map value,
 * midpoint, threshold and bucket end, then floats all over (-1, 1) by a
 * stride
 */
START_TEST(test_quant8_table_gives_the_searched_code)
{
	uint64_t x;
	uint b, i, d;
	int sg;

	qlocal_build();
	for (sg = 0; sg < 2; sg++) {
		const float *q = gpo__qmap[sg];

		for (i = 0; i < 256; i++) {
			float mid = i < 255 ? q[i] + (q[i + 1] - q[i]) / 2 : 1;
			uint t = qlocal[PREC_QT_THR + 256 * sg + i];

			for (d = 0; d < 5; d++) {
				int k = (int)d - 2;

				check_qlocal(bitsf(fbits(q[i]) + k), sg);
				check_qlocal(-bitsf(fbits(q[i]) + k), sg);
				check_qlocal(bitsf(fbits(mid) + k), sg);
				if (i < 255)
					check_qlocal(bitsf(t + k), sg);
			}
		}
		for (b = 0; b < 3 * PREC_QT_NB; b++)
			for (d = 0; d < 3; d++) {
				uint lo = prec_qt_least(b) + d - 1;
				uint hi = qt_greatest(b) + d - 1;

				check_qlocal(bitsf(lo), sg);
				check_qlocal(bitsf(hi), sg);
			}
		/* zeros, subnormals, tiny normals */
		for (i = 0; i < 64; i++) {
			check_qlocal(bitsf(i), sg);
			check_qlocal(bitsf(0x80000000u | i), sg);
			check_qlocal(ldexpf(1.0f, -(int)(i + 86)), sg);
			check_qlocal(-ldexpf(1.0f, -(int)(i + 86)), sg);
		}
		for (x = 0; x < 0x3f800000u; x += tu_quick() ? 65537 : 4099) {
			check_qlocal(bitsf((uint)x), sg);
			check_qlocal(bitsf(0x80000000u | (uint)x), sg);
		}
	}
}
END_TEST

/* ---- the kernels' division, sqrt and conversions ----------------------- */

START_TEST(test_kernel_div_mul_sqrt_are_correctly_rounded)
{
	uint64_t s = tu_rng("cr_div");
	long n;

	fused = _i;

	for (n = 0; n < (tu_quick() ? 200000 : 3000000); n++) {
		float a = any_float(&s), b = any_float(&s);

		if (n % 7 == 0)		/* results near the subnormal range */
			b = bitsf((fbits(b) & 0x807fffff) |
				  (uint32_t)(0x80 + next64(&s) % 30) << 23);
		ftz = (int)(n & 1);	/* half of them as with flushed denormals */
		if (!same(kdiv(a, b), a / b))
			ck_abort_msg("cr_div(%a, %a) = %a, IEEE %a (ftz %d)", a,
				     b, kdiv(a, b), a / b, ftz);
		/* two NaNs: the compiler may have swapped a * b's operands */
		if (isnan(a) && isnan(b) ? !isnan(prec_mul(a, b)) :
		    !same(prec_mul(a, b), a * b))
			ck_abort_msg("prec_mul(%a, %a) = %a, IEEE %a", a, b,
				     prec_mul(a, b), a * b);
		if (!same(ksqrt(a), sqrtf(a)))
			ck_abort_msg("cr_sqrt(%a) = %a, IEEE %a (ftz %d)", a,
				     ksqrt(a), sqrtf(a), ftz);
	}
	ftz = 0;
	/* hand-checked: ties in the subnormal range, overflow, exact */
	ck_assert(prec_div(bitsf(3), 2.0f) == bitsf(2));	/* 1.5 -> 2 */
	ck_assert(prec_div(bitsf(5), 2.0f) == bitsf(2));	/* 2.5 -> 2 */
	ck_assert(prec_div(bitsf(1), 2.0f) == 0.0f);		/* 0.5 -> 0 */
	ck_assert(prec_div(bitsf(1), 4.0f) == 0.0f);
	ck_assert(prec_div(FLT_MAX, 0.5f) == INFINITY);
	ck_assert(prec_div(-FLT_MAX, 0.5f) == -INFINITY);
	ck_assert(prec_div(FLT_MIN, 2.0f) == FLT_MIN / 2);
	ck_assert(prec_div(1.0f, 3.0f) == 1.0f / 3.0f);
	ck_assert(prec_div(6.0f, 3.0f) == 2.0f);
	ck_assert(prec_sqrt(bitsf(1)) == sqrtf(bitsf(1)));
	ck_assert(prec_sqrt(2.0f) == sqrtf(2.0f));
	ck_assert(prec_sqrt(16.0f) == 4.0f);
	ck_assert_uint_eq(fbits(prec_sqrt(-0.0f)), 0x80000000);
	ck_assert_uint_eq(fbits(prec_div(0.0f, 0.0f)), 0xffc00000);
	ck_assert_uint_eq(fbits(prec_sqrt(-1.0f)), 0xffc00000);
	ck_assert_uint_eq(fbits(prec_div(bitsf(0x7f800001), 1.0f)),
			  0x7fc00001);
	ck_assert_uint_eq(fbits(prec_div(1.0f, bitsf(0xff800001))),
			  0xffc00001);
}
END_TEST

/* ---- the fast paths of cr_div and cr_sqrt ------------------------------- */

/* a random float of significand 1.m with unbiased exponent e (normal) */
static float with_exp(uint64_t *s, int e)
{
	return bitsf((uint32_t)(e + 127) << 23 | ((uint32_t)next64(s) & 0x7fffff));
}

static int rand_in(uint64_t *s, int lo, int hi)
{
	return lo + (int)(next64(s) % (uint64_t)(hi - lo + 1));
}

/* the inverse of odd @b modulo 2^32 (Newton on the 2-adic integers) */
static uint32_t inv_odd(uint32_t b)
{
	uint32_t x = b;
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - b * x;
	return x;
}

/* kdiv(a, b) against a / b, and with a and b one ulp either side */
static void check_div_near(float a, float b)
{
	int i, j;

	for (i = -1; i <= 1; i++)
		for (j = -1; j <= 1; j++) {
			float x = bitsf(fbits(a) + (uint32_t)i);
			float y = bitsf(fbits(b) + (uint32_t)j);

			if (!same(kdiv(x, y), x / y))
				ck_abort_msg("cr_div(%a, %a) = %a, IEEE %a (estimates %d, ftz %d)",
					     x, y, kdiv(x, y), x / y, est_mode,
					     ftz);
		}
}

static void check_sqrt_near(float a)
{
	int i;

	for (i = -2; i <= 2; i++) {
		float x = bitsf(fbits(a) + (uint32_t)i);

		if (!same(ksqrt(x), sqrtf(x)))
			ck_abort_msg("cr_sqrt(%a) = %a, IEEE %a (estimates %d, ftz %d)",
				     x, ksqrt(x), sqrtf(x), est_mode, ftz);
	}
}

/* @x (positive) within 2^-16 ulp of a midpoint between two floats */
static int near_tie(double x)
{
	double t = ldexp(x, 23 - ilogb(x));	/* [2^23, 2^24) */

	return fabs(t - floor(t) - 0.5) < 0x1p-16;
}

/* the odd root of @c (c = 1 mod 8) modulo 2^k, by lifting bit by bit */
static uint64_t sqrt_mod2k(uint64_t c, int k)
{
	uint64_t x = 1, m = (1ull << k) - 1;
	int i;

	for (i = 3; i < k; i++)
		if (((x * x - c) & ((2ull << i) - 1)) != 0)
			x += 1ull << (i - 1);
	return x & m;
}

START_TEST(test_kernel_div_sqrt_fast_paths_are_exact)
{
	uint64_t s = tu_rng("cr_fast");
	long n, per = tu_quick() ? 10000 : 150000, fast = 0;
	int pass;

	fused = _i;

	for (pass = 0; pass < 8; pass++) {
		est_mode = pass / 2;
		ftz = pass & 1;
		est_calls = 0;
		fast = 0;
		for (n = 0; n < per; n++) {
			uint32_t B, M, e;
			uint64_t A, MB;
			int64_t eps;
			float a, b;

			/* operands and quotients across the fast range */
			a = with_exp(&s, rand_in(&s, -76, 125));
			b = with_exp(&s, rand_in(&s, -126, 125));
			if (n & 1)
				a = bitsf(fbits(a) | (uint32_t)(n & 2) << 30);
			if (!same(kdiv(a, b), a / b))
				ck_abort_msg("cr_div(%a, %a) = %a, IEEE %a (estimates %d, ftz %d)",
					     a, b, kdiv(a, b), a / b, est_mode,
					     ftz);
			/* everyday magnitudes: always fast */
			a = with_exp(&s, rand_in(&s, -40, 40));
			b = with_exp(&s, rand_in(&s, -40, 40));
			fast++;
			check_div_near(a, b);
			/*
			 * Near-ties: A 2^25 = M B + eps for an odd M in [2^24,
			 * 2^25) and a small odd eps, so a / b is within eps / B
			 * of the midpoint M 2^(e-25) between two floats.
			 */
			B = 0x800001u | ((uint32_t)next64(&s) & 0x7ffffe);
			eps = (int64_t)(next64(&s) % 33) - 16;
			eps |= 1;
			M = (uint32_t)((uint64_t)(-eps) * inv_odd(B)) & 0x1ffffffu;
			if (M >= 0x1000000u) {
				MB = (uint64_t)M * B + (uint64_t)eps;
				A = MB >> 25;
				e = (uint32_t)rand_in(&s, -50, 50);
				a = ldexpf((float)A, (int)e + 25);
				b = ldexpf((float)B, (int)e - (int)rand_in(&s, -40, 40));
				ck_assert(near_tie((double)a / b));
				check_div_near(a, b);
				fast++;
			}
			/* quotients at and around powers of 2 (q1 = 2^k) */
			b = with_exp(&s, rand_in(&s, -30, 30));
			a = ldexpf(b, rand_in(&s, -30, 30));
			check_div_near(a, b);
			a = bitsf(fbits(a) + (uint32_t)rand_in(&s, -8, 8));
			check_div_near(a, b);
			/* exact quotients: q with 12 bits, b with 12 bits */
			a = (float)(next64(&s) % 4096 + 1) * (float)(next64(&s) % 4096 + 1);
			b = (float)(next64(&s) % 4096 + 1);
			check_div_near(a, b);
			/* the edges of the fast range: a, b and a / b */
			a = with_exp(&s, rand_in(&s, -79, -73));
			b = with_exp(&s, rand_in(&s, -5, 5));
			check_div_near(a, b);
			a = with_exp(&s, rand_in(&s, -100, -70));
			b = with_exp(&s, rand_in(&s, -103, -10));
			check_div_near(a, b);	/* tiny a b, q in range */
			a = with_exp(&s, rand_in(&s, 122, 127));
			b = with_exp(&s, rand_in(&s, -5, 5));
			check_div_near(a, b);
			a = with_exp(&s, rand_in(&s, -5, 5));
			b = with_exp(&s, n & 1 ? rand_in(&s, -126, -122) :
				     rand_in(&s, 122, 127));
			check_div_near(a, b);
			a = with_exp(&s, rand_in(&s, -70, -60));
			b = with_exp(&s, rand_in(&s, 10, 30));
			check_div_near(a, b);	/* q near 2^-83 */
			a = with_exp(&s, rand_in(&s, 100, 125));
			b = with_exp(&s, rand_in(&s, -30, -10));
			check_div_near(a, b);	/* q near 2^126 */
		}
		ck_assert_msg(est_calls > 8 * per, "fast div tried %ld times",
			      est_calls);

		for (n = 0; n < per; n++) {
			uint64_t c, x, M, MM, A;
			int k, sh;
			float a;

			a = with_exp(&s, rand_in(&s, -80, 127));
			if (!same(ksqrt(a), sqrtf(a)))
				ck_abort_msg("cr_sqrt(%a) = %a, IEEE %a (estimates %d, ftz %d)",
					     a, ksqrt(a), sqrtf(a), est_mode,
					     ftz);
			check_sqrt_near(with_exp(&s, rand_in(&s, -40, 40)));
			/*
			 * Near-ties: M^2 + eps = A 2^k for an odd M in [2^24,
			 * 2^25), eps = -c small (c = 1 mod 8, as odd squares
			 * are), so sqrt(a) is within eps / 2M of M 2^j, a
			 * midpoint.
			 */
			k = 25 + (int)(n & 1);
			c = 1 + 8 * (next64(&s) % 8);
			if (next64(&s) & 1)
				c = (1ull << k) - (8 * (next64(&s) % 8) + 7);
			x = sqrt_mod2k(c, k);
			for (sh = 0; sh < 4; sh++) {
				M = (sh & 1 ? (1ull << k) - x : x) +
				    (sh & 2 ? 1ull << (k - 1) : 0);
				M &= (1ull << k) - 1;
				if (M < 1ull << 24 || M >= 1ull << 25)
					continue;
				MM = M * M;
				A = MM + (c < 1ull << (k - 1) ? -c : (1ull << k) - c);
				if ((A & ((1ull << k) - 1)) != 0)
					ck_abort_msg("root %llx of %llx mod 2^%d",
						     (unsigned long long)M,
						     (unsigned long long)c, k);
				A >>= k;
				if (A >= 1ull << 24)
					continue;
				a = ldexpf((float)A, k + 2 * rand_in(&s, -50, 50) - 50);
				ck_assert(near_tie(sqrt(a)));
				check_sqrt_near(a);
				fast++;
			}
			/* perfect squares and roots near powers of 2 */
			a = (float)(next64(&s) % 4096 + 1);
			check_sqrt_near(ldexpf(a * a, 2 * rand_in(&s, -30, 30)));
			check_sqrt_near(ldexpf(1.0f, rand_in(&s, -60, 60)));
			/* the range's edges */
			check_sqrt_near(with_exp(&s, rand_in(&s, -79, -73)));
			check_sqrt_near(with_exp(&s, rand_in(&s, 123, 127)));
		}
	}
	est_mode = 0;
	ftz = 0;
	ck_assert(fast > per);
	/* the edges exactly */
	ck_assert(same(ksqrt(bitsf(0x19800000)), sqrtf(bitsf(0x19800000))));
	ck_assert(same(ksqrt(bitsf(0x197fffff)), sqrtf(bitsf(0x197fffff))));
	ck_assert(same(ksqrt(bitsf(0x7e7fffff)), sqrtf(bitsf(0x7e7fffff))));
	ck_assert(same(kdiv(bitsf(0x19800000), 3.0f), bitsf(0x19800000) / 3.0f));
	ck_assert(same(kdiv(1.0f, bitsf(0x00800000)), 1.0f / bitsf(0x00800000)));
}
END_TEST

START_TEST(test_rne_conversions_hand_checked)
{
	static const struct {
		uint32_t f;
		uint16_t h, b;
	} cases[] = {
		{ 0x3f800000, 0x3c00, 0x3f80 },	/* 1 */
		{ 0x3f801000, 0x3c00, 0x3f80 },	/* 1 + 2^-11: f16 tie, even */
		{ 0x3f803000, 0x3c02, 0x3f80 },	/* 1 + 3 2^-11: tie, up */
		{ 0x3f808000, 0x3c04, 0x3f80 },	/* 1 + 2^-8: bf16 tie, even */
		{ 0x3f818000, 0x3c0c, 0x3f82 },	/* 1 + 3 2^-8: tie, up */
		{ 0x477fe000, 0x7bff, 0x4780 },	/* 65504 */
		{ 0x477fefff, 0x7bff, 0x4780 },	/* just below 65520 */
		{ 0x477ff000, 0x7c00, 0x4780 },	/* 65520: f16 inf */
		{ 0x7f7fffff, 0x7c00, 0x7f80 },	/* FLT_MAX: inf in both */
		{ 0x7f7f7fff, 0x7c00, 0x7f7f },	/* below bf16's half ulp */
		{ 0x33800000, 0x0001, 0x3380 },	/* 2^-24 */
		{ 0x33000000, 0x0000, 0x3300 },	/* 2^-25: tie, to 0 */
		{ 0x33c00000, 0x0002, 0x33c0 },	/* 3 2^-25: tie, to 2 */
		{ 0x387fe000, 0x0400, 0x3880 },	/* tie, carries to f16 normal */
		{ 0x00000001, 0x0000, 0x0000 },	/* f32 subnormal */
		{ 0x00008000, 0x0000, 0x0000 },	/* bf16 tie at 0, even */
		{ 0x00018000, 0x0000, 0x0002 },	/* bf16 tie, up */
		{ 0x80000000, 0x8000, 0x8000 },	/* -0 */
		{ 0xff800000, 0xfc00, 0xff80 },	/* -inf */
		{ 0x7f800001, 0x7e00, 0x7fc0 },	/* sNaN: quiet */
		{ 0xffa02000, 0xff01, 0xffe0 },	/* payload kept, quiet */
		{ 0x7fc00000, 0x7e00, 0x7fc0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		float f = bitsf(cases[i].f);

		ck_assert_msg(gpo__f32_to_f16(f) == cases[i].h,
			      "f16(%08x) = %04x, want %04x", cases[i].f,
			      gpo__f32_to_f16(f), cases[i].h);
		ck_assert_msg(gpo__f32_to_bf16(f) == cases[i].b,
			      "bf16(%08x) = %04x, want %04x", cases[i].f,
			      gpo__f32_to_bf16(f), cases[i].b);
		ck_assert_uint_eq(f32_to_f16(f), cases[i].h);
		ck_assert_uint_eq(f32_to_bf16(f), cases[i].b);
	}
}
END_TEST

START_TEST(test_kernel_conversions_match_the_reference)
{
	uint64_t s = tu_rng("conv");
	uint32_t h;
	long n;

	for (h = 0; h < 65536; h++)
		if (fbits(f16_to_f32(h)) != fbits(gpo__f16_to_f32((uint16_t)h)) ||
		    fbits(bf16_to_f32(h)) != fbits(gpo__bf16_to_f32((uint16_t)h)))
			ck_abort_msg("16-bit pattern %04x", h);
	for (n = 0; n < (tu_quick() ? 200000 : 4000000); n++) {
		float f = n & 1 ? any_float(&s) : bitsf((uint32_t)next64(&s));
		uint32_t r = (uint32_t)next64(&s);

		if (f32_to_f16(f) != gpo__f32_to_f16(f) ||
		    f32_to_bf16(f) != gpo__f32_to_bf16(f) ||
		    f32_to_bf16_sr(f, r) != gpo__f32_to_bf16_sr(f, r))
			ck_abort_msg("f32 %08x (rnd %08x)", fbits(f), r);
	}
}
END_TEST

/* ---- stochastic rounding ------------------------------------------------ */

START_TEST(test_round_bits_are_philox_words)
{
	uint64_t s = tu_rng("round_bits");
	int n, k;

	for (n = 0; n < 20000; n++) {
		uint64_t seed = next64(&s), step = next64(&s) >> 20;
		uint64_t i = next64(&s) >> (n % 40);
		uint32_t w[4];

		gpo__philox(seed, ((uint64_t)4 << 48) |
			    (step & ((1ull << 48) - 1)), i / 4, w);
		if (gpo__round_bits(seed, step, i) != w[i % 4])
			ck_abort_msg("round_bits(%llx, %llx, %llx)",
				     (unsigned long long)seed,
				     (unsigned long long)step,
				     (unsigned long long)i);
		for (k = 0; k < 4; k++)
			if (gpo__round_bits(seed, step, (i & ~3ull) + k) != w[k])
				ck_abort_msg("word %d", k);
	}
	/* another step or seed draws other bits */
	ck_assert_uint_ne(gpo__round_bits(1, 2, 3), gpo__round_bits(1, 3, 3));
	ck_assert_uint_ne(gpo__round_bits(1, 2, 3), gpo__round_bits(2, 2, 3));
}
END_TEST

START_TEST(test_sr_is_unbiased_and_exact_where_it_must_be)
{
	uint64_t s = tu_rng("sr");
	int t;

	for (t = 0; t < (tu_quick() ? 8 : 40); t++) {
		float x = (float)tu_rand(&s, -100.0, 100.0);
		uint16_t lo = (uint16_t)(fbits(x) >> 16);
		double step = fabs((double)gpo__bf16_to_f32(lo + 1) -
				   gpo__bf16_to_f32(lo));
		uint64_t seed = next64(&s);
		double sum = 0;
		int i, n = 100000;

		for (i = 0; i < n; i++) {
			uint16_t b = gpo__f32_to_bf16_sr(x,
					gpo__round_bits(seed, t, i));

			if (b != lo && b != lo + 1)
				ck_abort_msg("SR(%a) = %04x", x, b);
			sum += gpo__bf16_to_f32(b);
		}
		/* one rounding's sd is at most step / 2: 6 sigma of the mean */
		ck_assert_msg(fabs(sum / n - x) < 6 * step / 2 / sqrt(n),
			      "mean of SR(%a) = %a, step %g", x, sum / n, step);
	}
	/* bf16 values stay; specials stay; rnd 0 truncates */
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(1.5f, 0xffffffff), 0x3fc0);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(INFINITY, 0xffff), 0x7f80);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(-INFINITY, 0xffff), 0xff80);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(bitsf(0x7f800001), 0xffff),
			  0x7fc0);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(bitsf(0xffffffff), 0), 0xffff);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(bitsf(0x3f80ffff), 0), 0x3f80);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(bitsf(0x3f800001), 0xffff),
			  0x3f81);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(bitsf(0x3f800001), 0xfffe),
			  0x3f80);
	ck_assert_uint_eq(gpo__f32_to_bf16_sr(-0.0f, 0xffff), 0x8000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("precision");
	TCase *tc = tcase_create("precision");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_qmap_has_bitsandbytes_values);
	tcase_add_test(tc, test_quant8_is_the_nearest_code);
	tcase_add_test(tc, test_quant8_thresholds_are_the_midpoints);
	tcase_add_test(tc, test_quant8_table_bounds_the_thresholds);
	tcase_add_test(tc, test_quant8_table_gives_the_searched_code);
	/* 0: the split products; 1: the fma versions */
	tcase_add_loop_test(tc, test_kernel_div_mul_sqrt_are_correctly_rounded,
			    0, 2);
	tcase_add_loop_test(tc, test_kernel_div_sqrt_fast_paths_are_exact, 0,
			    2);
	tcase_add_test(tc, test_rne_conversions_hand_checked);
	tcase_add_test(tc, test_kernel_conversions_match_the_reference);
	tcase_add_test(tc, test_round_bits_are_philox_words);
	tcase_add_test(tc, test_sr_is_unbiased_and_exact_where_it_must_be);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
