// SPDX-License-Identifier: MIT
/*
 * cpu.c - the cpu backend: the numerical reference and fallback
 *
 * Kernels run synchronously on a pool of threads, one slice each. The
 * loops are plain float loops over restrict pointers so that gcc
 * vectorises them (-O3 -fno-math-errno: sqrtf must not set errno, or no
 * loop with a square root vectorises; check with -fopt-info-vec). Per-element branches
 * depend only on launch flags, which -O3 unswitches out of the loops.
 * Nothing is allocated per launch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/gpuopt_i.h"
#include "core/quant_i.h"
#include "backend/cpu/cpu_i.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"
#include "core/rng_i.h"
#include "abi/mem.h"
#include "abi/norm.h"
#include "abi/sgd.h"
#include "abi/adam.h"
#include "abi/rmsprop.h"
#include "abi/adagrad.h"
#include "abi/lion.h"
#include "abi/lamb.h"
#include "abi/objective.h"

#define CPU_MAX_THREADS 256
#define SLICE_ALIGN	16	/* elements: slices start on cache lines */

struct cpu_dev;

struct cpu_dev {
	int nthreads;
	pthread_t threads[CPU_MAX_THREADS];
	pthread_mutex_t lock;
	pthread_cond_t work_cv;
	pthread_cond_t done_cv;
	uint64_t generation;
	int pending;
	int stopping;
	/* the launch being run */
	slice_fn fn;
	const struct op_call *call;
	uint32_t units;			/* elements, items or groups */
	uint32_t align;			/* slice boundaries */
	uint64_t ns;			/* time of launches since last wait */
};

/*
 * The gradient multiplier: scal[0] (unscale and clip) when the norm pass
 * ran, negated for maximize. Returns 0 if the step is to be skipped.
 */
static int grad_mul(const struct op_call *c, uint32_t flags, int scal_buf,
		    float *gm)
{
	float m = 1.0f;

	if (flags & GPO_UPD_USE_SCAL) {
		const float *scal = bp(c, scal_buf);

		if (scal[GPO_SCAL_SKIP] != 0.0f)
			return 0;
		m = scal[GPO_SCAL_MUL];
	}
	*gm = (flags & GPO_UPD_MAXIMIZE) ? -m : m;
	return 1;
}

/* with GPO_UPD_USE_SCAL, a non-finite gradient skips the whole step */
static int step_skipped(const struct op_call *c, uint32_t flags, int scal_buf)
{
	return (flags & GPO_UPD_USE_SCAL) &&
	       bp(c, scal_buf)[GPO_SCAL_SKIP] != 0.0f;
}

/* ---- kernels ---------------------------------------------------------- */

/*
 * The copy is the bandwidth limit the optimizer loops are measured
 * against. A plain store loop would pay a read-for-ownership of every
 * destination line (12 bytes of traffic per 8 counted) while the
 * optimizers write lines they have just read; streaming stores move
 * exactly the 8 bytes, as a GPU copy does.
 */
#ifdef __SSE__
#include <immintrin.h>

static void k_copy(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	float *d = bp(c, 0);
	const float *s = bp(c, 1);
	uint32_t i = lo;

	for (; i < hi && ((uintptr_t)(d + i) & 15); i++)
		d[i] = s[i];
	for (; i + 4 <= hi; i += 4)
		_mm_stream_ps(d + i, _mm_loadu_ps(s + i));
	for (; i < hi; i++)
		d[i] = s[i];
	_mm_sfence();
}
#else
static void k_copy(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	memcpy(bp(c, 0) + lo, bp(c, 1) + lo, (size_t)(hi - lo) * 4);
}
#endif

static void k_fill(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_mem_args *a = c->args;
	float *restrict d = bp(c, 0);
	const float v = a->value;
	uint32_t i;

	for (i = lo; i < hi; i++)
		d[i] = v;
}

/*
 * The update loops do a division (and most a square root) per element:
 * with SSE alone two cores are compute bound once the data sits in cache,
 * so each (and the norm pass) also gets an AVX2 clone, picked at load time. -ffp-contract=off
 * keeps the clones' results identical to the baseline's.
 */
#define CPU_CLONES __attribute__((target_clones("avx2", "default")))

/* Four float lanes in one register: gcc's vector extension. */
typedef float v4f __attribute__((vector_size(16)));

/*
 * One group of the norm pass: sum of squares, and inf/NaN detection
 * (g * 0 is NaN exactly when g is inf or NaN). Explicit vector lanes
 * because gcc will not reassociate a float sum without -ffast-math; the
 * lane order is fixed, so the result is deterministic.
 */
static inline __attribute__((always_inline)) void
norm_range(const float *restrict g, uint64_t start, uint64_t end,
	   float *sum_out, int *bad_out)
{
	v4f acc0 = { 0 }, acc1 = { 0 }, bad = { 0 }, x, y;
	float sum = 0, nan = 0;
	uint64_t i;
	int j;

	for (i = start; i + 8 <= end; i += 8) {
		__builtin_memcpy(&x, g + i, 16);
		__builtin_memcpy(&y, g + i + 4, 16);
		acc0 += x * x;
		acc1 += y * y;
		bad += x * 0.0f + y * 0.0f;
	}
	acc0 += acc1;
	for (j = 0; j < 4; j++) {
		sum += acc0[j];
		nan += bad[j];
	}
	for (; i < end; i++) {
		sum += g[i] * g[i];
		nan += g[i] * 0.0f;
	}
	*sum_out = sum;
	*bad_out = isnan(nan);
}

/* element @i of the gradient @g as f32: half words widened exactly */
static inline float norm_load(const void *g, uint64_t i, uint32_t flags)
{
	const uint16_t *h = g;

	if (!(flags & GPO_NORM_HALF))
		return ((const float *)g)[i];
	return flags & GPO_NORM_BF16 ? gpo__bf16_to_f32(h[i]) :
				       gpo__f16_to_f32(h[i]);
}

/* the GPU kernels' tree over their GPO_WG_SIZE lanes (group.glsl) */
static float lane_tree(float *red)
{
	uint32_t s, t;

	for (s = GPO_WG_SIZE / 2; s > 0; s >>= 1)
		for (t = 0; t < s; t++)
			red[t] += red[t + s];
	return red[0];
}

/*
 * One group of the norm pass with GPO_NORM_EXACT: the GPU kernels' own
 * order (abi/norm.h), lane by lane, so that every backend gives the same
 * bits; a non-finite element is seen by its exponent.
 */
static void norm_exact(const void *g, uint32_t flags, uint64_t start,
		       uint64_t end, float *sum_out, int *bad_out)
{
	float red[GPO_WG_SIZE] = { 0 }, x[4];
	uint64_t mid = start + ((end - start) & ~3ull), i;
	int bad = 0, k;

	for (i = start; i < end; i += 4) {
		for (k = 0; k < 4; k++) {
			x[k] = i + k < end ? norm_load(g, i + k, flags) : 0.0f;
			bad |= !isfinite(x[k]);
		}
		/* the tail's quad is lane 0's, after its own quads */
		red[i < mid ? ((i - start) / 4) % GPO_WG_SIZE : 0] +=
			(x[0] * x[0] + x[1] * x[1]) +
			(x[2] * x[2] + x[3] * x[3]);
	}
	*sum_out = lane_tree(red);
	*bad_out = bad;
}

CPU_CLONES
static void k_norm_partial(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_norm_args *a = c->args;
	const float *restrict g = bp(c, 0);
	float *restrict part = bp(c, 1);
	uint32_t grp;

	for (grp = lo; grp < hi; grp++) {
		uint64_t start = (uint64_t)grp * a->chunk;
		uint64_t end = start + a->chunk;
		float sum;
		int bad;

		if (end > a->n)
			end = a->n;
		if (start > end)
			start = end;
		if (a->flags & GPO_NORM_EXACT)
			norm_exact(g, a->flags, start, end, &sum, &bad);
		else
			norm_range(g, start, end, &sum, &bad);
		part[2 * grp] = sum;
		part[2 * grp + 1] = bad ? 1.0f : 0.0f;
	}
}

/* the step's scalars from the sum of squares and the bad flag */
static void put_scal(float *scal, const struct gpo_norm_args *a, float total,
		     int bad)
{
	float norm, inv = a->inv_scale, mul;

	if (a->flags & GPO_NORM_LOSS_SCALE)
		inv *= scal[GPO_SCAL_LS_INV];
	mul = inv;
	norm = sqrtf(total) * inv;
	if (a->clip_norm > 0) {
		float coef = a->clip_norm / (norm + 1e-6f);

		if (coef < 1.0f)
			mul *= coef;
	}
	scal[GPO_SCAL_MUL] = mul;
	scal[GPO_SCAL_SKIP] = bad && (a->flags & GPO_NORM_CHECK_FINITE) ?
			      1.0f : 0.0f;
	scal[GPO_SCAL_NORM] = norm;
	scal[GPO_SCAL_TOTAL] = total;
	if (!(a->flags & GPO_NORM_DYNAMIC))
		return;
	/* GradScaler's update, after the old scale unscaled this step */
	if (bad) {
		scal[GPO_SCAL_LS] *= 0.5f;
		scal[GPO_SCAL_LS_INV] *= 2.0f;
		scal[GPO_SCAL_LS_GOOD] = 0.0f;
	} else if (scal[GPO_SCAL_LS_GOOD] + 1.0f >= (float)a->growth_interval) {
		if (isfinite(scal[GPO_SCAL_LS] * 2.0f)) {
			scal[GPO_SCAL_LS] *= 2.0f;
			scal[GPO_SCAL_LS_INV] *= 0.5f;
		}
		scal[GPO_SCAL_LS_GOOD] = 0.0f;
	} else {
		scal[GPO_SCAL_LS_GOOD] += 1.0f;
	}
}

static void k_norm_final(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_norm_args *a = c->args;
	const float *part = bp(c, 0);
	float total = 0;
	int bad = 0;
	uint32_t i;

	if (a->flags & GPO_NORM_EXACT) {
		float red[GPO_WG_SIZE] = { 0 };

		/* lane i % GPO_WG_SIZE adds partial i, then the tree */
		for (i = 0; i < a->groups; i++) {
			red[i % GPO_WG_SIZE] += part[2 * i];
			bad |= part[2 * i + 1] != 0.0f;
		}
		put_scal(bp(c, 1), a, lane_tree(red), bad);
		return;
	}
	for (i = 0; i < a->groups; i++) {
		total += part[2 * i];
		bad |= part[2 * i + 1] != 0.0f;
	}
	put_scal(bp(c, 1), a, total, bad);
}

/* norm_partial over all n as one group, then norm_final */
CPU_CLONES
static void k_norm_small(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_norm_args *a = c->args;
	float total;
	int bad;

	if (a->flags & GPO_NORM_EXACT)
		norm_exact(bp(c, 0), a->flags, 0, a->n, &total, &bad);
	else
		norm_range(bp(c, 0), 0, a->n, &total, &bad);
	put_scal(bp(c, 1), a, total, bad);
}

CPU_CLONES
static void k_sgd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_sgd_args *a = c->args;
	float *restrict p = bp(c, 0), *restrict buf = bp(c, 2);
	const float *restrict g = bp(c, 1);
	const float lr = a->lr, wd = a->weight_decay, mom = a->momentum;
	const float damp = a->one_minus_dampening;
	const int use_mom = a->flags & GPO_SGD_MOMENTUM;
	const int first = a->flags & GPO_SGD_FIRST;
	const int nesterov = a->flags & GPO_SGD_NESTEROV;
	float gm;
	uint32_t i;

	if (!grad_mul(c, a->flags, 3, &gm))
		return;
	for (i = lo; i < hi; i++) {
		float d = g[i] * gm + wd * p[i];

		if (use_mom) {
			float b = first ? d : mom * buf[i] + damp * d;

			buf[i] = b;
			d = nesterov ? d + mom * b : b;
		}
		p[i] = p[i] - lr * d;
	}
}

/*
 * bfloat16 state in the update loops: core/dtype.c's gpo__f32_to_bf16
 * and gpo__bf16_to_f32, inline and branch-free so the loops vectorise
 * (the same bits: NaN made quiet, else round to nearest even)
 */
static inline uint16_t bf16_rne(float f)
{
	uint32_t x, r;

	memcpy(&x, &f, 4);
	r = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
	return (uint16_t)((x & 0x7fffffff) > 0x7f800000 ? (x >> 16 | 0x40) :
			  r);
}

static inline float bf16_f32(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

/*
 * Adam with bfloat16 state (GPO_ADAM_STATE_BF16): the f32 loop's
 * arithmetic, the state read exactly and stored rounded to nearest even
 */
CPU_CLONES
static void k_adam_bf16(const struct op_call *c, uint32_t lo, uint32_t hi,
			float gm)
{
	const struct gpo_adam_args *a = c->args;
	float *restrict p = bp(c, 0);
	const float *restrict g = bp(c, 1);
	uint16_t *restrict m = (uint16_t *)(void *)bp(c, 2);
	uint16_t *restrict v = (uint16_t *)(void *)bp(c, 3);
	uint16_t *restrict vmax = (uint16_t *)(void *)bp(c, 4);
	const float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
	const float step_size = a->step_size, bc2_sqrt = a->bc2_sqrt;
	const float ob1 = a->one_minus_beta1, ob2 = a->one_minus_beta2;
	const int amsgrad = a->flags & GPO_ADAM_AMSGRAD;
	const int decoupled = a->flags & GPO_ADAM_DECOUPLED;
	const float decay = decoupled ? a->decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a->weight_decay;
	uint32_t i;

	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + l2 * p[i];
		float mi = bf16_f32(m[i]) * b1 + ob1 * gi;
		float vi = bf16_f32(v[i]) * b2 + ob2 * gi * gi;
		float denom;

		m[i] = bf16_rne(mi);
		v[i] = bf16_rne(vi);
		if (amsgrad) {
			float vm = bf16_f32(vmax[i]);

			vi = vm > vi ? vm : vi;
			vmax[i] = bf16_rne(vi);
		}
		denom = sqrtf(vi) / bc2_sqrt + eps;
		p[i] = p[i] * decay - step_size * (mi / denom);
	}
}

/*
 * The blocks of units [lo, hi) of a u8 launch: unit w does blocks w, w +
 * @groups, ... of the group's (n + 255) / 256, as the GPU kernels' groups
 */
#define FOR_EACH_U8_BLOCK(k, w, lo, hi, n, groups) \
	for (w = lo; w < hi; w++) \
		for (k = w; k < ((n) + GPO_QBLOCK - 1) / GPO_QBLOCK; \
		     k += (groups))

/* u8 state: the largest |x| of a block by the bits, so a NaN wins */
static float u8_absmax(const float *x, uint32_t cnt)
{
	uint32_t m = 0, b, i;
	float f;

	for (i = 0; i < cnt; i++) {
		memcpy(&b, &x[i], 4);
		b &= 0x7fffffffu;
		m = b > m ? b : m;
	}
	memcpy(&f, &m, 4);
	return f;
}

/*
 * adam8 (abi/adam.h): groups [lo, hi) are blocks of 256; each is
 * dequantized, updated as k_adam does, and requantized against the new
 * state's absmax
 */
static void k_adam8(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_adam_args *a = c->args;
	float *p = bp(c, 0);
	const float *g = bp(c, 1);
	uint8_t *mq = (uint8_t *)(void *)bp(c, 2) + a->q_off;
	uint8_t *vq = (uint8_t *)(void *)bp(c, 3) + a->q_off;
	float *mabs = bp(c, 6) + a->q_blk, *vabs = bp(c, 7) + a->q_blk;
	const float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
	const float step_size = a->step_size, bc2_sqrt = a->bc2_sqrt;
	const float ob1 = a->one_minus_beta1, ob2 = a->one_minus_beta2;
	const int decoupled = a->flags & GPO_ADAM_DECOUPLED;
	const float decay = decoupled ? a->decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a->weight_decay;
	float m[GPO_QBLOCK], v[GPO_QBLOCK], gm;
	uint32_t k, w, i;

	if (!grad_mul(c, a->flags, 5, &gm))
		return;
	FOR_EACH_U8_BLOCK(k, w, lo, hi, a->n, a->q_groups) {
		uint32_t first = k * GPO_QBLOCK;
		uint32_t cnt = a->n - first < GPO_QBLOCK ? a->n - first :
							  GPO_QBLOCK;
		float ma, va;

		for (i = 0; i < cnt; i++) {
			uint32_t e = first + i;
			float gi = g[e] * gm + l2 * p[e];
			float denom;

			m[i] = gpo__dequant8(mq[e], mabs[k], 1) * b1 + ob1 * gi;
			v[i] = gpo__dequant8(vq[e], vabs[k], 0) * b2 +
			       ob2 * gi * gi;
			denom = sqrtf(v[i]) / bc2_sqrt + eps;
			p[e] = p[e] * decay - step_size * (m[i] / denom);
		}
		ma = u8_absmax(m, cnt);
		va = u8_absmax(v, cnt);
		mabs[k] = ma;
		vabs[k] = va;
		for (i = 0; i < cnt; i++) {
			mq[first + i] = gpo__quant8(m[i], ma, 1);
			vq[first + i] = gpo__quant8(v[i], va, 0);
		}
	}
}

CPU_CLONES
static void k_adam(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_adam_args *a = c->args;
	float *restrict p = bp(c, 0), *restrict m = bp(c, 2);
	float *restrict v = bp(c, 3), *restrict vmax = bp(c, 4);
	const float *restrict g = bp(c, 1);
	const float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
	const float step_size = a->step_size, bc2_sqrt = a->bc2_sqrt;
	const float ob1 = a->one_minus_beta1, ob2 = a->one_minus_beta2;
	const int amsgrad = a->flags & GPO_ADAM_AMSGRAD;
	/* AdamW decays p first; Adam adds wd * p to g (L2) */
	const int decoupled = a->flags & GPO_ADAM_DECOUPLED;
	const float decay = decoupled ? a->decay : 1.0f;
	const float l2 = decoupled ? 0.0f : a->weight_decay;
	float gm;
	uint32_t i;

	if (!grad_mul(c, a->flags, 5, &gm))
		return;
	if (a->flags & GPO_ADAM_STATE_BF16) {
		k_adam_bf16(c, lo, hi, gm);
		return;
	}
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + l2 * p[i];
		float mi = m[i] * b1 + ob1 * gi;
		float vi = v[i] * b2 + ob2 * gi * gi;
		float denom;

		m[i] = mi;
		v[i] = vi;
		if (amsgrad) {
			/* torch.maximum; a ternary vectorises, fmaxf not */
			vi = vmax[i] > vi ? vmax[i] : vi;
			vmax[i] = vi;
		}
		denom = sqrtf(vi) / bc2_sqrt + eps;
		p[i] = p[i] * decay - step_size * (mi / denom);
	}
}

CPU_CLONES
static void k_rmsprop(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_rmsprop_args *a = c->args;
	float *restrict p = bp(c, 0), *restrict sq = bp(c, 2);
	float *restrict buf = bp(c, 3), *restrict ga = bp(c, 4);
	const float *restrict g = bp(c, 1);
	const float lr = a->lr, alpha = a->alpha, eps = a->eps;
	const float wd = a->weight_decay, mom = a->momentum;
	const float oa = a->one_minus_alpha;
	const int use_mom = a->flags & GPO_RMSPROP_MOMENTUM;
	const int centered = a->flags & GPO_RMSPROP_CENTERED;
	float gm;
	uint32_t i;

	if (!grad_mul(c, a->flags, 5, &gm))
		return;
	if (a->flags & GPO_RMSPROP_STATE_BF16) {
		uint16_t *restrict sqh = (uint16_t *)(void *)sq;
		uint16_t *restrict bh = (uint16_t *)(void *)buf;
		uint16_t *restrict gah = (uint16_t *)(void *)ga;

		for (i = lo; i < hi; i++) {
			float gi = g[i] * gm + wd * p[i];
			float s = bf16_f32(sqh[i]) * alpha +
				  oa * gi * gi;
			float avg;

			sqh[i] = bf16_rne(s);
			if (centered) {
				float ca = bf16_f32(gah[i]) * alpha +
					   oa * gi;

				gah[i] = bf16_rne(ca);
				s = s - ca * ca;
			}
			avg = sqrtf(s) + eps;
			if (use_mom) {
				float b = bf16_f32(bh[i]) * mom +
					  gi / avg;

				bh[i] = bf16_rne(b);
				p[i] = p[i] - lr * b;
			} else {
				p[i] = p[i] - lr * (gi / avg);
			}
		}
		return;
	}
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + wd * p[i];
		float s = sq[i] * alpha + oa * gi * gi;
		float avg;

		sq[i] = s;
		if (centered) {
			float ca = ga[i] * alpha + oa * gi;

			ga[i] = ca;
			s = s - ca * ca;
		}
		avg = sqrtf(s) + eps;
		if (use_mom) {
			float b = buf[i] * mom + gi / avg;

			buf[i] = b;
			p[i] = p[i] - lr * b;
		} else {
			p[i] = p[i] - lr * (gi / avg);
		}
	}
}

CPU_CLONES
static void k_adagrad(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_adagrad_args *a = c->args;
	float *restrict p = bp(c, 0), *restrict sum = bp(c, 2);
	const float *restrict g = bp(c, 1);
	const float clr = a->clr, wd = a->weight_decay, eps = a->eps;
	float gm;
	uint32_t i;

	if (!grad_mul(c, a->flags, 3, &gm))
		return;
	if (a->flags & GPO_ADAGRAD_STATE_BF16) {
		uint16_t *restrict sh = (uint16_t *)(void *)sum;

		for (i = lo; i < hi; i++) {
			float gi = g[i] * gm + wd * p[i];
			float s = bf16_f32(sh[i]) + gi * gi;

			sh[i] = bf16_rne(s);
			p[i] = p[i] - clr * (gi / (sqrtf(s) + eps));
		}
		return;
	}
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + wd * p[i];
		float s = sum[i] + gi * gi;

		sum[i] = s;
		p[i] = p[i] - clr * (gi / (sqrtf(s) + eps));
	}
}

/* sign with sign(0) = 0, branch-free so that the loop vectorises */
static inline float sign_of(float x)
{
	return (float)(x > 0.0f) - (float)(x < 0.0f);
}

CPU_CLONES
static void k_lion(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_lion_args *a = c->args;
	float *restrict p = bp(c, 0), *restrict m = bp(c, 2);
	const float *restrict g = bp(c, 1);
	const float lr = a->lr, b1 = a->beta1, b2 = a->beta2;
	const float decay = a->decay;
	const float ob1 = a->one_minus_beta1, ob2 = a->one_minus_beta2;
	float gm;
	uint32_t i;

	if (!grad_mul(c, a->flags, 3, &gm))
		return;
	if (a->flags & GPO_LION_STATE_BF16) {
		uint16_t *restrict mh = (uint16_t *)(void *)m;

		for (i = lo; i < hi; i++) {
			float gi = g[i] * gm;
			float mi = bf16_f32(mh[i]);
			float u = mi * b1 + ob1 * gi;

			p[i] = p[i] * decay - lr * sign_of(u);
			mh[i] = bf16_rne(mi * b2 + ob2 * gi);
		}
		return;
	}
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm;
		float u = m[i] * b1 + ob1 * gi;

		p[i] = p[i] * decay - lr * sign_of(u);
		m[i] = m[i] * b2 + ob2 * gi;
	}
}

/* a block's new state @x of @cnt elements: its absmax, then its codes */
static void u8_store(uint8_t *q, float *absmax, const float *x, uint32_t cnt,
		     int sg)
{
	float m = u8_absmax(x, cnt);
	uint32_t i;

	*absmax = m;
	for (i = 0; i < cnt; i++)
		q[i] = gpo__quant8(x[i], m, sg);
}

/* the elements of block @k of a group of @n: its first and its count */
static uint32_t u8_block(uint32_t n, uint32_t k, uint32_t *first)
{
	*first = k * GPO_QBLOCK;
	return n - *first < GPO_QBLOCK ? n - *first : GPO_QBLOCK;
}

/* rmsprop8 (abi/rmsprop.h): k_rmsprop's update, neither momentum nor centered */
static void k_rmsprop8(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_rmsprop_args *a = c->args;
	float *p = bp(c, 0), *sabs = bp(c, 6) + a->q_blk;
	const float *g = bp(c, 1);
	uint8_t *sq = (uint8_t *)(void *)bp(c, 2) + a->q_off;
	const float lr = a->lr, alpha = a->alpha, eps = a->eps;
	const float wd = a->weight_decay, oa = a->one_minus_alpha;
	float s[GPO_QBLOCK], gm;
	uint32_t k, w, i, first, cnt;

	if (!grad_mul(c, a->flags, 5, &gm))
		return;
	FOR_EACH_U8_BLOCK(k, w, lo, hi, a->n, a->q_groups) {
		cnt = u8_block(a->n, k, &first);
		for (i = 0; i < cnt; i++) {
			uint32_t e = first + i;
			float gi = g[e] * gm + wd * p[e];
			float avg;

			s[i] = gpo__dequant8(sq[e], sabs[k], 1) * alpha +
			       oa * gi * gi;
			avg = sqrtf(s[i]) + eps;
			p[e] = p[e] - lr * (gi / avg);
		}
		u8_store(sq + first, &sabs[k], s, cnt, 1);
	}
}

/* adagrad8 (abi/adagrad.h): k_adagrad's update */
static void k_adagrad8(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_adagrad_args *a = c->args;
	float *p = bp(c, 0), *sabs = bp(c, 4) + a->q_blk;
	const float *g = bp(c, 1);
	uint8_t *sq = (uint8_t *)(void *)bp(c, 2) + a->q_off;
	const float clr = a->clr, wd = a->weight_decay, eps = a->eps;
	float s[GPO_QBLOCK], gm;
	uint32_t k, w, i, first, cnt;

	if (!grad_mul(c, a->flags, 3, &gm))
		return;
	FOR_EACH_U8_BLOCK(k, w, lo, hi, a->n, a->q_groups) {
		cnt = u8_block(a->n, k, &first);
		for (i = 0; i < cnt; i++) {
			uint32_t e = first + i;
			float gi = g[e] * gm + wd * p[e];

			s[i] = gpo__dequant8(sq[e], sabs[k], 1) + gi * gi;
			p[e] = p[e] - clr * (gi / (sqrtf(s[i]) + eps));
		}
		u8_store(sq + first, &sabs[k], s, cnt, 1);
	}
}

/* lion8 (abi/lion.h): k_lion's update */
static void k_lion8(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_lion_args *a = c->args;
	float *p = bp(c, 0), *mabs = bp(c, 4) + a->q_blk;
	const float *g = bp(c, 1);
	uint8_t *mq = (uint8_t *)(void *)bp(c, 2) + a->q_off;
	const float lr = a->lr, b1 = a->beta1, b2 = a->beta2;
	const float decay = a->decay;
	const float ob1 = a->one_minus_beta1, ob2 = a->one_minus_beta2;
	float m[GPO_QBLOCK], gm;
	uint32_t k, w, i, first, cnt;

	if (!grad_mul(c, a->flags, 3, &gm))
		return;
	FOR_EACH_U8_BLOCK(k, w, lo, hi, a->n, a->q_groups) {
		cnt = u8_block(a->n, k, &first);
		for (i = 0; i < cnt; i++) {
			uint32_t e = first + i;
			float gi = g[e] * gm;
			float mi = gpo__dequant8(mq[e], mabs[k], 1);
			float u = mi * b1 + ob1 * gi;

			p[e] = p[e] * decay - lr * sign_of(u);
			m[i] = mi * b2 + ob2 * gi;
		}
		u8_store(mq + first, &mabs[k], m, cnt, 1);
	}
}


/* LAMB's update direction from the updated moments. */
static inline float lamb_r(float m, float v, float p, float bc1, float bc2,
			   float eps, float wd)
{
	return (m / bc1) / (sqrtf(v / bc2) + eps) + wd * p;
}

/*
 * The sums of squares of @x and @y (n each) in abi/lamb.h's order: lane j
 * of GPO_WG_SIZE adds elements j, j + GPO_WG_SIZE, ... in turn, then the
 * work-group's tree, as the device kernels do. Eight lanes at a time down
 * the rows, their sums in registers; then the last, partial row.
 */
static void lamb_sums(const float *x, const float *y, uint32_t n,
		      float *sx, float *sy)
{
	float ax[GPO_WG_SIZE], ay[GPO_WG_SIZE];
	uint32_t rows = n / GPO_WG_SIZE, i, l, s;

	for (l = 0; l < GPO_WG_SIZE; l += 8) {
		v4f x0 = { 0 }, x1 = { 0 }, y0 = { 0 }, y1 = { 0 }, u, w;

		for (i = 0; i < rows; i++) {
			const float *xr = x + i * GPO_WG_SIZE + l;
			const float *yr = y + i * GPO_WG_SIZE + l;

			__builtin_memcpy(&u, xr, 16);
			__builtin_memcpy(&w, xr + 4, 16);
			x0 += u * u;
			x1 += w * w;
			__builtin_memcpy(&u, yr, 16);
			__builtin_memcpy(&w, yr + 4, 16);
			y0 += u * u;
			y1 += w * w;
		}
		__builtin_memcpy(ax + l, &x0, 16);
		__builtin_memcpy(ax + l + 4, &x1, 16);
		__builtin_memcpy(ay + l, &y0, 16);
		__builtin_memcpy(ay + l + 4, &y1, 16);
	}
	for (l = 0; l < n - rows * GPO_WG_SIZE; l++) {
		i = rows * GPO_WG_SIZE + l;
		ax[l] += x[i] * x[i];
		ay[l] += y[i] * y[i];
	}
	for (s = GPO_WG_SIZE / 2; s > 0; s >>= 1)
		for (l = 0; l < s; l++) {
			ax[l] += ax[l + s];
			ay[l] += ay[l + s];
		}
	*sx = ax[0];
	*sy = ay[0];
}

static inline float lamb_h2f(uint16_t h, int f16)
{
	return f16 ? gpo__f16_to_f32(h) : gpo__bf16_to_f32(h);
}

CPU_CLONES
static void k_lamb_prep(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_lamb_args *a = c->args;
	const float *restrict p = bp(c, 0), *restrict g = bp(c, 1);
	float *restrict m = bp(c, 2), *restrict v = bp(c, 3);
	const uint32_t *blocks = bu(c, 4);
	float *part = bp(c, 5);
	const float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
	const float wd = a->weight_decay, bc1 = a->bc1, bc2 = a->bc2;
	const float ob1 = a->one_minus_beta1, ob2 = a->one_minus_beta2;
	const int half = !!(a->flags & GPO_UPD_PARAM_HALF);
	const int sr = !!(a->flags & GPO_UPD_PARAM_SR);
	const int f16 = !!(a->flags & GPO_UPD_PARAM_F16);
	const uint16_t *ph = (const uint16_t *)(const void *)p;
	const uint16_t *gh = (const uint16_t *)(const void *)g;
	uint32_t i, grp;
	float gm;

	if (!grad_mul(c, a->flags, 6, &gm))
		return;
	for (grp = lo; grp < hi; grp++) {
		uint32_t b = a->first_block + grp;
		uint32_t start = blocks[4 * b + 1];
		uint32_t n = blocks[4 * b + 2];
		float r[GPO_LAMB_BLOCK], pt[GPO_LAMB_BLOCK];
		float gt[GPO_LAMB_BLOCK];
		const float *restrict pb = p + start, *restrict gb = g + start;
		float *restrict mb = m + start, *restrict vb = v + start;

		/* half parameters and gradients widened exactly */
		if (sr) {
			for (i = 0; i < n; i++)
				pt[i] = gpo__bf16_to_f32(ph[start + i]);
			pb = pt;
		}
		if (half) {
			for (i = 0; i < n; i++)
				gt[i] = lamb_h2f(gh[start + i], f16);
			gb = gt;
		}
		/* the update vectorises; the sums go through fixed lanes */
		for (i = 0; i < n; i++) {
			float gi = gb[i] * gm;
			float mi = mb[i] * b1 + ob1 * gi;
			float vi = vb[i] * b2 + ob2 * gi * gi;

			mb[i] = mi;
			vb[i] = vi;
			r[i] = lamb_r(mi, vi, pb[i], bc1, bc2, eps, wd);
		}
		lamb_sums(pb, r, n, &part[2 * b], &part[2 * b + 1]);
	}
}

static void k_lamb_trust(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_lamb_args *a = c->args;
	const uint32_t *tb = bu(c, 0);
	const float *part = bp(c, 1);
	float *trust = bp(c, 2);
	uint32_t t, b, l, s;

	if (step_skipped(c, a->flags, 3))
		return;
	for (t = lo; t < hi; t++) {
		float ap[GPO_WG_SIZE] = { 0 }, ar[GPO_WG_SIZE] = { 0 };
		float pn, rn;

		/* lane l adds blocks l, l + GPO_WG_SIZE, ..., then the tree */
		for (b = 0; b < tb[2 * t + 1]; b++) {
			ap[b % GPO_WG_SIZE] += part[2 * (tb[2 * t] + b)];
			ar[b % GPO_WG_SIZE] += part[2 * (tb[2 * t] + b) + 1];
		}
		for (s = GPO_WG_SIZE / 2; s > 0; s >>= 1)
			for (l = 0; l < s; l++) {
				ap[l] += ap[l + s];
				ar[l] += ar[l + s];
			}
		pn = sqrtf(ap[0]);
		rn = sqrtf(ar[0]);
		trust[t] = pn > 0 && rn > 0 ? pn / rn : 1.0f;
	}
}

CPU_CLONES
static void k_lamb_apply(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_lamb_args *a = c->args;
	float *restrict p = bp(c, 0);
	const float *restrict m = bp(c, 1), *restrict v = bp(c, 2);
	const uint32_t *blocks = bu(c, 3);
	const float *trust = bp(c, 4);
	const float lr = a->lr, eps = a->eps, wd = a->weight_decay;
	const float bc1 = a->bc1, bc2 = a->bc2;
	const int half = !!(a->flags & GPO_UPD_PARAM_HALF);
	const int sr = !!(a->flags & GPO_UPD_PARAM_SR);
	const int f16 = !!(a->flags & GPO_UPD_PARAM_F16);
	const uint64_t seed = a->p_seed_lo | (uint64_t)a->p_seed_hi << 32;
	const uint64_t tstep = a->p_step_lo | (uint64_t)a->p_step_hi << 32;
	uint16_t *ph = NULL;
	uint32_t i, grp;

	if (step_skipped(c, a->flags, 5))
		return;
	if (sr)
		ph = (uint16_t *)(void *)p;
	else if (half)
		ph = (uint16_t *)(void *)bp(c, GPO_LAMB_BUF_HALF);
	for (grp = lo; grp < hi; grp++) {
		uint32_t b = a->first_block + grp;
		uint32_t start = blocks[4 * b + 1];
		uint32_t n = blocks[4 * b + 2];
		float pt[GPO_LAMB_BLOCK];
		float *restrict pb = sr ? pt : p + start;
		const float *restrict mb = m + start;
		const float *restrict vb = v + start;
		float step = lr * trust[blocks[4 * b]];

		if (sr)
			for (i = 0; i < n; i++)
				pt[i] = gpo__bf16_to_f32(ph[start + i]);
		for (i = 0; i < n; i++)
			pb[i] = pb[i] - step * lamb_r(mb[i], vb[i], pb[i], bc1,
						       bc2, eps, wd);
		if (sr) {
			uint32_t rw[4];

			/* gpo__round_bits(): one Philox block per 4 elements */
			for (i = 0; i < n; i++) {
				uint64_t e = (uint64_t)start + i;

				if (i == 0 || e % 4 == 0)
					gpo__philox(seed,
						    GPO_RNG_STREAM(GPO_RNG_ROUND,
								   tstep),
						    e / 4, rw);
				ph[e] = gpo__f32_to_bf16_sr(pt[i], rw[e % 4]);
			}
		} else if (half) {
			for (i = 0; i < n; i++)
				ph[start + i] = f16 ? gpo__f32_to_f16(pb[i]) :
						      gpo__f32_to_bf16(pb[i]);
		}
	}
}

static inline void obj_range(const struct gpo_objective_args *a, uint32_t grp,
			     uint32_t *start, uint32_t *end)
{
	uint64_t s = (uint64_t)grp * a->chunk, e = s + a->chunk;

	*start = (uint32_t)(s < a->n ? s : a->n);
	*end = (uint32_t)(e < a->n ? e : a->n);
}

static void k_obj_quadratic(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_objective_args *a = c->args;
	const float *x = bp(c, 0);
	float *g = bp(c, 1), *part = bp(c, 2);
	uint32_t grp, i, start, end;

	for (grp = lo; grp < hi; grp++) {
		float loss = 0;

		obj_range(a, grp, &start, &end);
		for (i = start; i < end; i++) {
			float ci = (float)(1 + i % 7), d = x[i] - 1.0f;

			g[i] = ci * d;
			loss += 0.5f * ci * d * d;
		}
		part[2 * grp] = loss;
		part[2 * grp + 1] = 0;
	}
}

static void k_obj_rosenbrock(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_objective_args *a = c->args;
	const float *x = bp(c, 0);
	float *g = bp(c, 1), *part = bp(c, 2);
	uint32_t grp, i, start, end, n = a->n;

	for (grp = lo; grp < hi; grp++) {
		float loss = 0;

		obj_range(a, grp, &start, &end);
		for (i = start; i < end; i++) {
			float xi = x[i], gi = 0;

			if (i + 1 < n) {
				float t = x[i + 1] - xi * xi, u = 1.0f - xi;

				loss += 100.0f * t * t + u * u;
				gi += -400.0f * xi * t - 2.0f * u;
			}
			if (i > 0)
				gi += 200.0f * (xi - x[i - 1] * x[i - 1]);
			g[i] = gi;
		}
		part[2 * grp] = loss;
		part[2 * grp + 1] = 0;
	}
}

/*
 * The cpu kernels by op name: the backend finds an op's kernel here and
 * knows nothing else about it. Each works on f32 (copy and gather_rows
 * on any 4-byte type). The tensor ops are in tensor.c.
 */
static const struct cpu_kernel {
	const char *name;
	slice_fn fn;
	unsigned int dtypes;
} cpu_kernels[] = {
	{ "copy", k_copy, DT(GPO_F32) | DT(GPO_I32) },
	{ "fill", k_fill, DT(GPO_F32) },
	{ "norm_partial", k_norm_partial, DT(GPO_F32) },
	{ "norm_final", k_norm_final, DT(GPO_F32) },
	{ "norm_small", k_norm_small, DT(GPO_F32) },
	{ "sgd", k_sgd, DT(GPO_F32) },
	{ "adam", k_adam, DT(GPO_F32) },
	{ "adam8", k_adam8, DT(GPO_F32) },
	{ "rmsprop", k_rmsprop, DT(GPO_F32) },
	{ "adagrad", k_adagrad, DT(GPO_F32) },
	{ "lion", k_lion, DT(GPO_F32) },
	{ "rmsprop8", k_rmsprop8, DT(GPO_F32) },
	{ "adagrad8", k_adagrad8, DT(GPO_F32) },
	{ "lion8", k_lion8, DT(GPO_F32) },
	{ "lamb_prep", k_lamb_prep, DT(GPO_F32) },
	{ "lamb_trust", k_lamb_trust, DT(GPO_F32) },
	{ "lamb_apply", k_lamb_apply, DT(GPO_F32) },
	{ "obj_quadratic", k_obj_quadratic, DT(GPO_F32) },
	{ "obj_rosenbrock", k_obj_rosenbrock, DT(GPO_F32) },
	{ "matmul", gpo__cpu_matmul, DT(GPO_F32) },
	{ "matmul_big", gpo__cpu_matmul_big, DT(GPO_F32) },
	{ "matmul_half", gpo__cpu_matmul, DT(GPO_F32) },
	{ "unary", gpo__cpu_unary, DT(GPO_F32) },
	{ "binary", gpo__cpu_binary, DT(GPO_F32) },
	{ "unary_bwd", gpo__cpu_unary_bwd, DT(GPO_F32) },
	{ "reduce", gpo__cpu_reduce, DT(GPO_F32) },
	{ "reduce_bwd", gpo__cpu_reduce_bwd, DT(GPO_F32) },
	{ "softmax", gpo__cpu_softmax, DT(GPO_F32) },
	{ "softmax_bwd", gpo__cpu_softmax_bwd, DT(GPO_F32) },
	{ "xent", gpo__cpu_xent, DT(GPO_F32) },
	{ "xent_bwd", gpo__cpu_xent_bwd, DT(GPO_F32) },
	{ "accuracy", gpo__cpu_accuracy, DT(GPO_F32) },
	{ "gather_rows", gpo__cpu_gather_rows, DT(GPO_F32) | DT(GPO_I32) },
	{ "embed_bwd", gpo__cpu_embed_bwd, DT(GPO_F32) },
	{ "layernorm", gpo__cpu_layernorm, DT(GPO_F32) },
	{ "layernorm_bwd", gpo__cpu_layernorm_bwd, DT(GPO_F32) },
	{ "attn_fwd", gpo__cpu_attn_fwd, DT(GPO_F32) },
	{ "attn_bwd_d", gpo__cpu_attn_bwd_d, DT(GPO_F32) },
	{ "attn_bwd_dq", gpo__cpu_attn_bwd_dq, DT(GPO_F32) },
	{ "attn_bwd_dkdv", gpo__cpu_attn_bwd_dkdv, DT(GPO_F32) },
	{ "cast", gpo__cpu_cast, DT(GPO_F32) },
	{ "quantize8", gpo__cpu_quant8, DT(GPO_F32) },
	{ "dequantize8", gpo__cpu_dequant8, DT(GPO_F32) },
};

/* the kernel of each op, looked up by name once */
static const struct cpu_kernel *op_kernel[OP_COUNT];
static pthread_once_t op_kernel_once = PTHREAD_ONCE_INIT;

static void op_kernel_init(void)
{
	size_t i;
	int op;

	for (op = 0; op < OP_COUNT; op++)
		for (i = 0; i < ARRAY_SIZE(cpu_kernels); i++)
			if (!strcmp(cpu_kernels[i].name, gpo__ops[op].name))
				op_kernel[op] = &cpu_kernels[i];
}

static int cpu_supports(struct gpo_device *dev, enum gpo__op_id op,
			enum gpo_dtype dtype)
{
	pthread_once(&op_kernel_once, op_kernel_init);
	return op_kernel[op] && (op_kernel[op]->dtypes & DT(dtype));
}

/* ---- half-precision parameters (abi.h GPO_UPD_PARAM_*) ----------------- */

#define PARAM_CHUNK	512	/* elements converted at a time (stack) */

/*
 * An update op with half parameters or gradients: the family's f32 loop,
 * unchanged, over chunks of f32 copies. @c's gradients (and, with
 * GPO_UPD_PARAM_SR, its bf16 parameters) are widened exactly into arrays
 * that the family loop sees at the same element indices; with a master
 * copy buffer 0 is the f32 master itself. Then the half copy gets the new
 * master rounded to nearest even, or the bf16 parameters the new values
 * rounded stochastically with gpo__round_bits() of their global index.
 */
struct param_half {
	const struct op_call *c;
	struct op_call cc;	/* @c with the chunk arrays bound */
	const uint16_t *gh;	/* the half gradients */
	uint16_t *ph;		/* the half parameters or copy */
	uint32_t base;
	uint64_t seed, step;
	int f16, sr;
	float pt[PARAM_CHUNK], gt[PARAM_CHUNK];
	struct dev_mem pm, gmem;
};

/* NULL when the step is skipped (it changes nothing) */
static struct param_half *param_half_init(struct param_half *h,
					  const struct op_call *c)
{
	const struct gpo__op *op = &gpo__ops[c->op];
	const uint32_t *w = c->args;
	uint32_t flags = w[1];
	unsigned int b;

	h->c = c;
	h->cc = *c;
	h->base = w[op->base_word];
	h->seed = w[op->base_word + 1] | (uint64_t)w[op->base_word + 2] << 32;
	h->step = w[op->base_word + 3] | (uint64_t)w[op->base_word + 4] << 32;
	h->f16 = !!(flags & GPO_UPD_PARAM_F16);
	h->sr = !!(flags & GPO_UPD_PARAM_SR);
	h->gh = (const uint16_t *)(void *)bp(c, 1);
	h->ph = h->sr ? (uint16_t *)(void *)bp(c, 0) : NULL;
	for (b = 0; b < op->nbuf; b++) {
		if (op->buf[b].name && !strcmp(op->buf[b].name, "scal") &&
		    (flags & GPO_UPD_USE_SCAL) &&
		    bp(c, b)[GPO_SCAL_SKIP] != 0.0f)
			return NULL;
		if (!h->sr && op->buf[b].name &&
		    !strcmp(op->buf[b].name, "p_half"))
			h->ph = (uint16_t *)(void *)bp(c, b);
	}
	return h->ph ? h : NULL;
}

/*
 * Elements [c0, c1) (at most PARAM_CHUNK): widened, the family's loop
 * run over its units [u0, u1) (which must touch only those elements),
 * then rounded back
 */
static void param_half_run(struct param_half *h, uint32_t c0, uint32_t c1,
			   uint32_t u0, uint32_t u1)
{
	struct op_call *cc = &h->cc;
	uint32_t i;

	/* chunk array element i is element c0 + i of the view */
	h->gmem.ptr = h->gt - c0;
	h->gmem.size = (uint64_t)c1 * 4;
	cc->buf[1] = (struct dev_buf){ &h->gmem, 0, h->gmem.size };
	for (i = c0; i < c1; i++)
		h->gt[i - c0] = h->f16 ? gpo__f16_to_f32(h->gh[i]) :
					 gpo__bf16_to_f32(h->gh[i]);
	if (h->sr) {
		h->pm.ptr = h->pt - c0;
		h->pm.size = h->gmem.size;
		cc->buf[0] = (struct dev_buf){ &h->pm, 0, h->pm.size };
		for (i = c0; i < c1; i++)
			h->pt[i - c0] = gpo__bf16_to_f32(h->ph[i]);
	}
	op_kernel[h->c->op]->fn(cc, u0, u1);
	if (h->sr) {
		uint32_t rw[4];

		/* gpo__round_bits(): one Philox block per 4 elements */
		for (i = c0; i < c1; i++) {
			uint64_t e = (uint64_t)h->base + i;

			if (i == c0 || e % 4 == 0)
				gpo__philox(h->seed,
					    GPO_RNG_STREAM(GPO_RNG_ROUND,
							   h->step),
					    e / 4, rw);
			h->ph[i] = gpo__f32_to_bf16_sr(h->pt[i - c0],
						       rw[e % 4]);
		}
	} else {
		const float *m = bp(h->c, 0);

		for (i = c0; i < c1; i++)
			h->ph[i] = h->f16 ? gpo__f32_to_f16(m[i]) :
					    gpo__f32_to_bf16(m[i]);
	}
}

static void k_param_half(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	struct param_half h;
	uint32_t c0, c1;

	if (!param_half_init(&h, c))
		return;
	for (c0 = lo; c0 < hi; c0 = c1) {
		c1 = hi - c0 < PARAM_CHUNK ? hi : c0 + PARAM_CHUNK;
		param_half_run(&h, c0, c1, c0, c1);
	}
}

/*
 * The same around a u8 kernel (adam8 ...): unit w does blocks w, w +
 * q_groups, ... (FOR_EACH_U8_BLOCK); each block is run alone, as the
 * kernel's unit k with q_groups at least the block count, so that the
 * kernel touches that block's elements only
 */
static void k_param_half_u8(const struct op_call *c, uint32_t lo,
			    uint32_t hi)
{
	const struct gpo__op *op = &gpo__ops[c->op];
	uint32_t args[GPO_ARGS_MAX / 4], n, groups, blocks, w, k;
	struct param_half h;

	if (!param_half_init(&h, c))
		return;
	memcpy(args, c->args, op->args_size);
	n = args[0];
	groups = args[op->base_word - 1];
	blocks = (n + GPO_QBLOCK - 1) / GPO_QBLOCK;
	args[op->base_word - 1] = blocks;
	h.cc.args = args;
	FOR_EACH_U8_BLOCK(k, w, lo, hi, n, groups) {
		uint32_t first = k * GPO_QBLOCK;

		param_half_run(&h, first, n - first < GPO_QBLOCK ? n :
				   first + GPO_QBLOCK, k, k + 1);
	}
}

/* the slice function of @call: the op's, or k_param_half() around it */
static slice_fn launch_fn(const struct op_call *call)
{
	const struct gpo__op *op = &gpo__ops[call->op];

	if (op->base_word &&
	    (((const uint32_t *)call->args)[1] & GPO_UPD_PARAM_HALF))
		return op->grid == GRID_GROUPS ? k_param_half_u8 :
						 k_param_half;
	return op_kernel[call->op]->fn;
}

/* ---- the thread pool ---------------------------------------------------- */

static void run_slice(struct cpu_dev *cd, int idx)
{
	uint64_t units = cd->units, per, lo, hi;

	per = (units + cd->nthreads - 1) / cd->nthreads;
	per = (per + cd->align - 1) / cd->align * cd->align;
	lo = per * idx;
	hi = lo + per;
	if (hi > units)
		hi = units;
	if (lo < hi)
		cd->fn(cd->call, (uint32_t)lo, (uint32_t)hi);
}

static void *worker(void *arg)
{
	struct cpu_dev *cd = ((void **)arg)[0];
	int idx = (int)(intptr_t)((void **)arg)[1];
	uint64_t seen = 0;

	free(arg);
	pthread_mutex_lock(&cd->lock);
	for (;;) {
		while (cd->generation == seen && !cd->stopping)
			pthread_cond_wait(&cd->work_cv, &cd->lock);
		if (cd->stopping)
			break;
		seen = cd->generation;
		pthread_mutex_unlock(&cd->lock);
		run_slice(cd, idx);
		pthread_mutex_lock(&cd->lock);
		if (--cd->pending == 0)
			pthread_cond_signal(&cd->done_cv);
	}
	pthread_mutex_unlock(&cd->lock);
	return NULL;
}

static int cpu_launch(struct gpo_device *dev, const struct op_call *call)
{
	struct cpu_dev *cd = dev->priv;
	const int elements = gpo__ops[call->op].grid == GRID_ELEMENTS;
	uint32_t units = (uint32_t)call->work;
	uint64_t t0 = gpo__now_ns();

	cd->fn = launch_fn(call);
	cd->call = call;
	cd->units = units;
	cd->align = elements ? SLICE_ALIGN : 1;
	/* small launches are not worth waking threads for */
	if (cd->nthreads == 1 || (elements && units < 32768) || units == 1) {
		cd->fn(call, 0, units);
		cd->ns += gpo__now_ns() - t0;
		return 0;
	}
	pthread_mutex_lock(&cd->lock);
	cd->pending = cd->nthreads - 1;
	cd->generation++;
	pthread_cond_broadcast(&cd->work_cv);
	pthread_mutex_unlock(&cd->lock);
	run_slice(cd, 0);
	pthread_mutex_lock(&cd->lock);
	while (cd->pending)
		pthread_cond_wait(&cd->done_cv, &cd->lock);
	pthread_mutex_unlock(&cd->lock);
	cd->ns += gpo__now_ns() - t0;
	return 0;
}

static int cpu_wait(struct gpo_device *dev, uint64_t *device_ns)
{
	struct cpu_dev *cd = dev->priv;

	if (device_ns)
		*device_ns = cd->ns;
	cd->ns = 0;
	return 0;
}

static int cpu_thread_count(void)
{
	const char *env = getenv("GPUOPT_CPU_THREADS");
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (env && atoi(env) > 0)
		n = atoi(env);
	if (n < 1)
		n = 1;
	if (n > CPU_MAX_THREADS)
		n = CPU_MAX_THREADS;
	return (int)n;
}

static void cpu_name(char *name, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(name, len, "cpu");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 2;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(name, len, "%s", colon);
		break;
	}
	fclose(f);
}

static int cpu_probe(struct gpo_ctx *ctx)
{
	struct gpo_device_info info;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	memset(&info, 0, sizeof(info));
	cpu_name(info.name, sizeof(info.name));
	snprintf(info.vendor, sizeof(info.vendor), "gpuopt");
	snprintf(info.driver, sizeof(info.driver), "gpuopt %s", gpo_version());
	info.type = GPO_DEVICE_CPU;
	info.compute_units = cpu_thread_count();
	info.mem_total_bytes = pages > 0 && psize > 0 ?
			       (uint64_t)pages * psize : 0;
	return gpo__ctx_add_device(ctx, &gpo__cpu_backend_ops, &info, NULL);
}

static void cpu_stop_threads(struct cpu_dev *cd, int started)
{
	int i;

	pthread_mutex_lock(&cd->lock);
	cd->stopping = 1;
	pthread_cond_broadcast(&cd->work_cv);
	pthread_mutex_unlock(&cd->lock);
	for (i = 1; i < started; i++)
		pthread_join(cd->threads[i], NULL);
}

static int cpu_open(struct gpo_device *dev)
{
	struct cpu_dev *cd;
	int i, ret;

	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return gpo__err(-ENOMEM, "out of memory");
	cd->nthreads = cpu_thread_count();
	pthread_mutex_init(&cd->lock, NULL);
	pthread_cond_init(&cd->work_cv, NULL);
	pthread_cond_init(&cd->done_cv, NULL);
	/* thread 0 is the caller */
	for (i = 1; i < cd->nthreads; i++) {
		void **arg = malloc(2 * sizeof(void *));

		if (!arg) {
			ret = gpo__err(-ENOMEM, "out of memory");
			goto out_stop;
		}
		arg[0] = cd;
		arg[1] = (void *)(intptr_t)i;
		ret = pthread_create(&cd->threads[i], NULL, worker, arg);
		if (ret) {
			free(arg);
			ret = gpo__err(-ret, "cpu: cannot start thread %d", i);
			goto out_stop;
		}
	}
	dev->priv = cd;
	dev->mem_align = 256;
	dev->max_alloc = 0;
	return 0;

out_stop:
	cpu_stop_threads(cd, i);
	free(cd);
	return ret;
}

static void cpu_close(struct gpo_device *dev)
{
	struct cpu_dev *cd = dev->priv;

	if (!cd)
		return;
	cpu_stop_threads(cd, cd->nthreads);
	pthread_mutex_destroy(&cd->lock);
	pthread_cond_destroy(&cd->work_cv);
	pthread_cond_destroy(&cd->done_cv);
	free(cd);
	dev->priv = NULL;
}

static int cpu_alloc(struct gpo_device *dev, uint64_t bytes,
		     struct dev_mem **out)
{
	struct dev_mem *mem = malloc(sizeof(*mem));
	uint64_t size = (bytes + 4095) / 4096 * 4096;

	if (!mem)
		return -ENOMEM;
	mem->ptr = aligned_alloc(4096, size);
	if (!mem->ptr) {
		free(mem);
		return -ENOMEM;
	}
	mem->size = size;
	*out = mem;
	return 0;
}

static void cpu_free(struct gpo_device *dev, struct dev_mem *mem)
{
	if (!mem)
		return;
	free(mem->ptr);
	free(mem);
}

static int cpu_write(struct gpo_device *dev, const struct dev_buf *dst,
		     uint64_t off, const void *src, uint64_t bytes)
{
	memcpy((char *)dst->mem->ptr + dst->off + off, src, bytes);
	return 0;
}

static int cpu_read(struct gpo_device *dev, const struct dev_buf *src,
		    uint64_t off, void *dst, uint64_t bytes)
{
	memcpy(dst, (char *)src->mem->ptr + src->off + off, bytes);
	return 0;
}

const struct backend_ops gpo__cpu_backend_ops = {
	.name = "cpu",
	.probe = cpu_probe,
	.open = cpu_open,
	.close = cpu_close,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.write = cpu_write,
	.read = cpu_read,
	.supports = cpu_supports,
	.launch = cpu_launch,
	.wait = cpu_wait,
};
