// SPDX-License-Identifier: MIT
/*
 * tensor.c - the cpu kernels of the tensor engine's ops
 *
 * The formulas are in kernels/abi/{matmul,ew,reduce,softmax,loss,gather,
 * layernorm,attention}.h.
 * Every op is a group op: a slice [lo, hi) of the launch's workgroups.
 * For the grid-stride ops a group's elements are the chunks of
 * GPO_WG_SIZE it would visit on a GPU; a slice of consecutive groups
 * visits runs of consecutive chunks, which the kernels take as one range.
 * Each output element is computed by one group, its sums in a fixed
 * order (p, r or j ascending), so the bits do not depend on the thread
 * count. Sums other than matmul's are kept in double: this backend is the
 * numerical reference. Outputs are read only with GPO_T_ACCUM.
 */
#include <math.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/rng_i.h"
#include "core/dtype_i.h"
#include "backend/cpu/cpu_i.h"
#include "abi/matmul.h"
#include "abi/ew.h"
#include "abi/reduce.h"
#include "abi/softmax.h"
#include "abi/loss.h"
#include "abi/gather.h"
#include "abi/layernorm.h"
#include "abi/attention.h"

/* see cpu.c: an AVX2 clone of the loops that matter, same results */
#define CPU_CLONES __attribute__((target_clones("avx2", "default")))

#define WG	GPO_WG_SIZE
#define TILE	GPO_MM_TILE
#define KB	64		/* matmul: the k extent staged at once */

static inline uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * Run @fn over the elements that groups [lo, hi) of a grid-stride launch
 * of @groups over @n elements cover: chunk q (elements [q WG, q WG + WG))
 * belongs to group q % groups, so the slice owns, for each round, the
 * chunks [round * groups + lo, round * groups + hi).
 */
typedef void (*range_fn)(const struct op_call *c, uint64_t s, uint64_t e);

static void grid_ranges(const struct op_call *c, uint32_t lo, uint32_t hi,
			uint64_t n, uint32_t groups, range_fn fn)
{
	uint64_t q, s, e;

	if (hi > groups)
		hi = groups;
	if (lo >= hi)
		return;
	for (q = lo;; q += groups) {
		s = q * WG;
		if (s >= n)
			break;
		e = (q + (hi - lo)) * WG;
		fn(c, s, e < n ? e : n);
	}
}

/* ---- matmul --------------------------------------------------------- */

/*
 * An operand as abi/matmul.h has it stored: f32 (@mode 0), f32 rounded
 * to binary16 (1) or binary16 (2). Only the staging reads it, so the
 * branch costs nothing beside the sums.
 */
struct mm_src {
	const void *base;
	int mode;
};

static inline float mm_ld(struct mm_src s, uint64_t o)
{
	if (s.mode == 2)
		return gpo__f16_to_f32(((const uint16_t *)s.base)[o]);
	if (s.mode == 1)
		return gpo__f16_to_f32(gpo__f32_to_f16(((const float *)
							 s.base)[o]));
	return ((const float *)s.base)[o];
}

static inline struct mm_src mm_src(const void *base, uint32_t flags,
				   uint32_t f16, uint64_t off)
{
	struct mm_src s = { base, 0 };

	if (flags & f16) {
		s.mode = 2;
		s.base = (const uint16_t *)base + off;
	} else {
		s.mode = flags & GPO_MM_ROUND ? 1 : 0;
		s.base = (const float *)base + off;
	}
	return s;
}

/*
 * The block of C_z at rows i0 .., columns j0 .. (at most TILE x TILE):
 * op(A) and op(B) are staged a KB-deep slab at a time into contiguous
 * arrays (what makes the transposes free and the inner loop
 * unit-stride), and each element sums p = 0, 1, ... in order.
 */
static inline __attribute__((always_inline)) void
mm_block(const struct gpo_matmul_args *a, const void *A, const void *B,
	 float *C, uint32_t z, uint32_t i0, uint32_t j0)
{
	const int ta = !!(a->flags & GPO_MM_TRANS_A);
	const int tb = !!(a->flags & GPO_MM_TRANS_B);
	const int accum = !!(a->flags & GPO_T_ACCUM);
	const struct mm_src az = mm_src(A, a->flags, GPO_MM_F16_A,
					a->off_a + (uint64_t)z * a->bsa);
	const struct mm_src bz = mm_src(B, a->flags, GPO_MM_F16_B,
					a->off_b + (uint64_t)z * a->bsb);
	float *cz = C + a->off_c + (uint64_t)z * a->bsc;
	float acc[TILE][TILE], as[TILE][KB], bs[KB][TILE];
	uint32_t i, j, p, mi, nj, p0, kp;

	if (i0 >= a->m || j0 >= a->n)
		return;
	mi = min_u32(TILE, a->m - i0);
	nj = min_u32(TILE, a->n - j0);
	for (i = 0; i < mi; i++)
		for (j = 0; j < nj; j++)
			acc[i][j] = 0.0f;
	for (p0 = 0; p0 < a->k; p0 += KB) {
		kp = min_u32(KB, a->k - p0);
		if (ta)
			for (p = 0; p < kp; p++)
				for (i = 0; i < mi; i++)
					as[i][p] =
						mm_ld(az, (uint64_t)(p0 + p) *
						      a->lda + i0 + i);
		else
			for (i = 0; i < mi; i++)
				for (p = 0; p < kp; p++)
					as[i][p] =
						mm_ld(az, (uint64_t)(i0 + i) *
						      a->lda + p0 + p);
		if (tb)
			for (j = 0; j < nj; j++)
				for (p = 0; p < kp; p++)
					bs[p][j] =
						mm_ld(bz, (uint64_t)(j0 + j) *
						      a->ldb + p0 + p);
		else
			for (p = 0; p < kp; p++)
				for (j = 0; j < nj; j++)
					bs[p][j] =
						mm_ld(bz, (uint64_t)(p0 + p) *
						      a->ldb + j0 + j);
		for (i = 0; i < mi; i++) {
			float *restrict row = acc[i];

			for (p = 0; p < kp; p++) {
				const float x = as[i][p];
				const float *restrict brow = bs[p];

				for (j = 0; j < nj; j++)
					row[j] += x * brow[j];
			}
		}
	}
	for (i = 0; i < mi; i++) {
		float *restrict crow = cz + (uint64_t)(i0 + i) * a->ldc + j0;

		if (accum)
			for (j = 0; j < nj; j++)
				crow[j] += a->alpha * acc[i][j];
		else
			for (j = 0; j < nj; j++)
				crow[j] = a->alpha * acc[i][j];
	}
}

/* One TILE x TILE tile of C_z per group */
CPU_CLONES
void gpo__cpu_matmul(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_matmul_args *a = c->args;
	const uint32_t tiles = a->tiles_m * a->tiles_n;
	uint32_t g;

	for (g = lo; g < hi; g++) {
		const uint32_t z = g / tiles, t = g % tiles;

		if (z < a->batch)
			mm_block(a, bp(c, 0), bp(c, 1), bp(c, 2), z,
				 t / a->tiles_n * TILE, t % a->tiles_n * TILE);
	}
}

/*
 * One GPO_MM_TILE_BIG tile per group, as its TILE x TILE blocks: the
 * same sums in the same order as matmul's.
 */
CPU_CLONES
void gpo__cpu_matmul_big(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_matmul_args *a = c->args;
	const uint32_t tiles = a->tiles_m * a->tiles_n;
	uint32_t g, bi, bj;

	for (g = lo; g < hi; g++) {
		const uint32_t z = g / tiles, t = g % tiles;
		const uint32_t i0 = t / a->tiles_n * GPO_MM_TILE_BIG;
		const uint32_t j0 = t % a->tiles_n * GPO_MM_TILE_BIG;

		if (z >= a->batch)
			continue;
		for (bi = 0; bi < GPO_MM_TILE_BIG; bi += TILE)
			for (bj = 0; bj < GPO_MM_TILE_BIG; bj += TILE)
				mm_block(a, bp(c, 0), bp(c, 1), bp(c, 2), z,
					 i0 + bi, j0 + bj);
	}
}

/* ---- element-wise --------------------------------------------------- */

/* a strided view read in output order: the index of element i, kept */
struct view {
	const uint32_t *shape;
	const uint32_t *s;
	uint32_t c[GPO_T_DIMS];
	uint64_t idx;
};

static void view_start(struct view *v, const uint32_t *shape,
		       const uint32_t *s, uint32_t off, uint64_t i)
{
	int d;

	v->shape = shape;
	v->s = s;
	v->idx = off;
	for (d = GPO_T_DIMS - 1; d >= 0; d--) {
		v->c[d] = (uint32_t)(i % shape[d]);
		v->idx += (uint64_t)v->c[d] * s[d];
		i /= shape[d];
	}
}

/* the next @cnt elements of the view into @out */
static void view_read(struct view *v, const float *x, float *out,
		      uint32_t cnt)
{
	uint32_t k;
	int d;

	for (k = 0; k < cnt; k++) {
		out[k] = x[v->idx];
		for (d = GPO_T_DIMS - 1; d >= 0; d--) {
			if (++v->c[d] < v->shape[d]) {
				v->idx += v->s[d];
				break;
			}
			v->idx -= (uint64_t)(v->shape[d] - 1) * v->s[d];
			v->c[d] = 0;
		}
	}
}

/* sigmoid without overflow: exp of a non-positive number only */
static inline float sigmoidf(float x)
{
	float e;

	if (x >= 0.0f)
		return 1.0f / (1.0f + expf(-x));
	e = expf(x);
	return e / (1.0f + e);
}

#define GELU_K		0.7978845608028654f	/* sqrt(2 / pi) */
#define GELU_C		0.044715f
#define INV_SQRT2	0.7071067811865476f
#define INV_SQRT2PI	0.3989422804014327f

/* t = f(t), the switch outside the loops */
static void un_apply(uint32_t fn, float *restrict t, uint32_t cnt)
{
	uint32_t k;

	switch (fn) {
	case GPO_EW_COPY:
		break;
	case GPO_EW_RELU:
		for (k = 0; k < cnt; k++)
			t[k] = t[k] > 0.0f ? t[k] : 0.0f;
		break;
	case GPO_EW_GELU:
		for (k = 0; k < cnt; k++)
			t[k] = 0.5f * t[k] * (1.0f + erff(t[k] * INV_SQRT2));
		break;
	case GPO_EW_GELU_TANH:
		for (k = 0; k < cnt; k++) {
			float x = t[k];

			t[k] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_C *
								 x * x * x)));
		}
		break;
	case GPO_EW_TANH:
		for (k = 0; k < cnt; k++)
			t[k] = tanhf(t[k]);
		break;
	case GPO_EW_SIGMOID:
		for (k = 0; k < cnt; k++)
			t[k] = sigmoidf(t[k]);
		break;
	case GPO_EW_EXP:
		for (k = 0; k < cnt; k++)
			t[k] = expf(t[k]);
		break;
	case GPO_EW_LOG:
		for (k = 0; k < cnt; k++)
			t[k] = logf(t[k]);
		break;
	case GPO_EW_SQUARE:
		for (k = 0; k < cnt; k++)
			t[k] = t[k] * t[k];
		break;
	case GPO_EW_SQRT:
		for (k = 0; k < cnt; k++)
			t[k] = sqrtf(t[k]);
		break;
	default:	/* unknown fn: NaN, never silence */
		for (k = 0; k < cnt; k++)
			t[k] = NAN;
	}
}

/* t = t * f'(x) */
static void un_dapply(uint32_t fn, const float *restrict x, float *restrict t,
		      uint32_t cnt)
{
	uint32_t k;

	switch (fn) {
	case GPO_EW_COPY:
		break;
	case GPO_EW_RELU:
		for (k = 0; k < cnt; k++)
			t[k] = x[k] > 0.0f ? t[k] : 0.0f;
		break;
	case GPO_EW_GELU:
		for (k = 0; k < cnt; k++) {
			float v = x[k];
			float cdf = 0.5f * (1.0f + erff(v * INV_SQRT2));

			t[k] *= cdf + v * INV_SQRT2PI * expf(-0.5f * v * v);
		}
		break;
	case GPO_EW_GELU_TANH:
		for (k = 0; k < cnt; k++) {
			float v = x[k];
			float th = tanhf(GELU_K * (v + GELU_C * v * v * v));

			t[k] *= 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) *
				GELU_K * (1.0f + 3.0f * GELU_C * v * v);
		}
		break;
	case GPO_EW_TANH:
		for (k = 0; k < cnt; k++) {
			float th = tanhf(x[k]);

			t[k] *= 1.0f - th * th;
		}
		break;
	case GPO_EW_SIGMOID:
		for (k = 0; k < cnt; k++) {
			float s = sigmoidf(x[k]);

			t[k] *= s * (1.0f - s);
		}
		break;
	case GPO_EW_EXP:
		for (k = 0; k < cnt; k++)
			t[k] *= expf(x[k]);
		break;
	case GPO_EW_LOG:
		for (k = 0; k < cnt; k++)
			t[k] *= 1.0f / x[k];
		break;
	case GPO_EW_SQUARE:
		for (k = 0; k < cnt; k++)
			t[k] *= 2.0f * x[k];
		break;
	case GPO_EW_SQRT:
		for (k = 0; k < cnt; k++)
			t[k] *= 0.5f / sqrtf(x[k]);
		break;
	default:
		for (k = 0; k < cnt; k++)
			t[k] = NAN;
	}
}

/*
 * DROPOUT: t[k] = 0 where output element s + k is dropped. The mask is
 * gpo__philox() itself, the words of one block serving four elements, so
 * every backend's kernel must give these bits.
 */
static void dropout_mask(const struct gpo_ew_args *a, uint64_t s,
			 float *restrict t, uint32_t cnt)
{
	const uint64_t key = a->key_lo | (uint64_t)a->key_hi << 32;
	const uint64_t stream = a->stream_lo | (uint64_t)a->stream_hi << 32;
	uint32_t w[4], k;

	for (k = 0; k < cnt; k++) {
		const uint64_t i = s + k;

		if (k == 0 || (i & 3) == 0)
			gpo__philox(key, stream,
				    (uint64_t)a->site << 32 | i >> 2, w);
		if (w[i & 3] < a->thresh)
			t[k] = 0.0f;
	}
}

/* y (+)= alpha * t */
static void store(float *restrict y, const float *restrict t, uint32_t cnt,
		  float alpha, uint32_t flags)
{
	uint32_t k;

	if (flags & GPO_T_ACCUM)
		for (k = 0; k < cnt; k++)
			y[k] += alpha * t[k];
	else
		for (k = 0; k < cnt; k++)
			y[k] = alpha * t[k];
}

static void unary_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_ew_args *a = c->args;
	const float *x = bp(c, 0);
	float *y = bp(c, 1) + a->off_y;
	struct view v;
	float t[WG];
	uint32_t cnt;

	view_start(&v, a->shape, a->sa, a->off_a, s);
	for (; s < e; s += cnt) {
		cnt = (uint32_t)(e - s < WG ? e - s : WG);
		view_read(&v, x, t, cnt);
		if (a->fn == GPO_EW_DROPOUT)
			dropout_mask(a, s, t, cnt);
		else
			un_apply(a->fn, t, cnt);
		store(y + s, t, cnt, a->alpha, a->flags);
	}
}

void gpo__cpu_unary(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_ew_args *a = c->args;

	grid_ranges(c, lo, hi, a->n, a->groups, unary_range);
}

static void binary_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_ew_args *a = c->args;
	const float *x = bp(c, 0), *z = bp(c, 1);
	float *y = bp(c, 2) + a->off_y;
	struct view va, vb;
	float ta[WG], tb[WG];
	uint32_t cnt, k;

	view_start(&va, a->shape, a->sa, a->off_a, s);
	view_start(&vb, a->shape, a->sb, a->off_b, s);
	for (; s < e; s += cnt) {
		cnt = (uint32_t)(e - s < WG ? e - s : WG);
		view_read(&va, x, ta, cnt);
		view_read(&vb, z, tb, cnt);
		switch (a->fn) {
		case GPO_EW_ADD:
			for (k = 0; k < cnt; k++)
				ta[k] = ta[k] + tb[k];
			break;
		case GPO_EW_SUB:
			for (k = 0; k < cnt; k++)
				ta[k] = ta[k] - tb[k];
			break;
		case GPO_EW_MUL:
			for (k = 0; k < cnt; k++)
				ta[k] = ta[k] * tb[k];
			break;
		case GPO_EW_DIV:
			for (k = 0; k < cnt; k++)
				ta[k] = ta[k] / tb[k];
			break;
		default:
			for (k = 0; k < cnt; k++)
				ta[k] = NAN;
		}
		store(y + s, ta, cnt, a->alpha, a->flags);
	}
}

void gpo__cpu_binary(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_ew_args *a = c->args;

	grid_ranges(c, lo, hi, a->n, a->groups, binary_range);
}

static void unary_bwd_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_ew_args *a = c->args;
	const float *x = bp(c, 0) + a->off_a, *dy = bp(c, 1) + a->off_b;
	float *dx = bp(c, 2) + a->off_y;
	float t[WG];
	uint32_t cnt;

	for (; s < e; s += cnt) {
		cnt = (uint32_t)(e - s < WG ? e - s : WG);
		memcpy(t, dy + s, cnt * sizeof(float));
		/* DROPOUT does not read x: buffer 0 may be dy again */
		if (a->fn == GPO_EW_DROPOUT)
			dropout_mask(a, s, t, cnt);
		else
			un_dapply(a->fn, x + s, t, cnt);
		store(dx + s, t, cnt, a->alpha, a->flags);
	}
}

void gpo__cpu_unary_bwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_ew_args *a = c->args;

	grid_ranges(c, lo, hi, a->n, a->groups, unary_bwd_range);
}

/* ---- reduce --------------------------------------------------------- */

/* max's order: NaN above everything, the first of equals kept */
static inline int red_above(float v, float best)
{
	return v > best || (isnan(v) && !isnan(best));
}

static inline void red_out(const struct gpo_reduce_args *a, float *y,
			   uint32_t *idx, uint64_t o, float v, uint32_t r)
{
	/* output o is (o / inner, o % inner): transposed, elsewhere */
	if (a->flags & GPO_RED_TOUT)
		o = o % a->inner * a->outer + o / a->inner;
	if (a->flags & GPO_T_ACCUM)
		y[a->off_y + o] += a->alpha * v;
	else
		y[a->off_y + o] = a->alpha * v;
	if (a->fn == GPO_RED_MAX && (a->flags & GPO_RED_IDX))
		idx[a->off_idx + o] = r;
}

/* inner == 1: a group per output row, grid-stride over rows */
static void reduce_rows(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_reduce_args *a = c->args;
	const float *x = bp(c, 0);
	float *y = bp(c, 1);
	uint32_t *idx = (uint32_t *)bp(c, 2);
	uint32_t g, o, r;

	for (g = lo; g < hi && g < a->groups; g++)
		for (o = g; o < a->outer; o += a->groups) {
			const float *row = x + a->off_x + (uint64_t)o * a->len;
			float best = -INFINITY;
			uint32_t bi = 0;
			double sum = 0;

			if (a->fn == GPO_RED_SUM) {
				for (r = 0; r < a->len; r++)
					sum += row[r];
				red_out(a, y, idx, o, (float)sum, 0);
				continue;
			}
			for (r = 0; r < a->len; r++)
				if (red_above(row[r], best)) {
					best = row[r];
					bi = r;
				}
			red_out(a, y, idx, o, best, bi);
		}
}

/*
 * inner > 1: outputs [s, e), taken a stretch of one o at a time so that
 * the loop over r reads rows of x
 */
static void reduce_cols(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_reduce_args *a = c->args;
	const float *x = bp(c, 0);
	float *y = bp(c, 1);
	uint32_t *idx = (uint32_t *)bp(c, 2);
	double sum[WG];
	float best[WG];
	uint32_t bi[WG], cnt, k, r;

	for (; s < e; s += cnt) {
		const uint64_t o = s / a->inner, i0 = s % a->inner;
		const float *xo = x + a->off_x + o * a->len * a->inner + i0;

		cnt = min_u32(WG, a->inner - (uint32_t)i0);
		if (e - s < cnt)
			cnt = (uint32_t)(e - s);
		for (k = 0; k < cnt; k++) {
			sum[k] = 0;
			best[k] = -INFINITY;
			bi[k] = 0;
		}
		for (r = 0; r < a->len; r++) {
			const float *xr = xo + (uint64_t)r * a->inner;

			if (a->fn == GPO_RED_SUM) {
				for (k = 0; k < cnt; k++)
					sum[k] += xr[k];
				continue;
			}
			for (k = 0; k < cnt; k++)
				if (red_above(xr[k], best[k])) {
					best[k] = xr[k];
					bi[k] = r;
				}
		}
		for (k = 0; k < cnt; k++)
			red_out(a, y, idx, s + k, a->fn == GPO_RED_SUM ?
				(float)sum[k] : best[k], bi[k]);
	}
}

void gpo__cpu_reduce(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_reduce_args *a = c->args;

	if (a->inner == 1)
		reduce_rows(c, lo, hi);
	else
		grid_ranges(c, lo, hi, (uint64_t)a->outer * a->inner,
			    a->groups, reduce_cols);
}

static void reduce_bwd_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_reduce_args *a = c->args;
	const float *dy = bp(c, 0) + a->off_y;
	const int32_t *idx = (const int32_t *)bp(c, 1);
	float *dx = bp(c, 2) + a->off_x;
	const uint64_t plane = (uint64_t)a->len * a->inner;
	const int max = a->fn == GPO_RED_MAX;
	const int accum = !!(a->flags & GPO_T_ACCUM);
	uint64_t o = s / plane;
	uint32_t r = (uint32_t)(s % plane / a->inner);
	uint32_t i = (uint32_t)(s % a->inner);

	if (max)
		idx += a->off_idx;
	for (; s < e; s++) {
		const uint64_t yo = o * a->inner + i;
		float g = a->alpha * dy[yo];

		if (max && idx[yo] != (int32_t)r)
			g = 0.0f;
		if (accum)
			dx[s] += g;
		else
			dx[s] = g;
		if (++i == a->inner) {
			i = 0;
			if (++r == a->len) {
				r = 0;
				o++;
			}
		}
	}
}

void gpo__cpu_reduce_bwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_reduce_args *a = c->args;

	grid_ranges(c, lo, hi, a->n, a->groups, reduce_bwd_range);
}

/* ---- softmax and the losses ----------------------------------------- */

/* max_j alpha x_j (alpha 1 but for CAUSAL: 1 * x is x, bit for bit) */
static float row_max(const float *x, uint32_t len, float alpha)
{
	float m = -INFINITY;
	uint32_t j;

	for (j = 0; j < len; j++)
		m = alpha * x[j] > m ? alpha * x[j] : m;
	return m;
}

/* sum_j exp(alpha x_j - m), in double, j ascending */
static double row_expsum(const float *x, uint32_t len, float alpha, float m)
{
	double s = 0;
	uint32_t j;

	for (j = 0; j < len; j++)
		s += expf(alpha * x[j] - m);
	return s;
}

void gpo__cpu_softmax(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_softmax_args *a = c->args;
	const float *x = bp(c, 0);
	float *y = bp(c, 1);
	uint32_t g, r, j;

	for (g = lo; g < hi && g < a->groups; g++)
		for (r = g; r < a->rows; r += a->groups) {
			const float *xr = x + a->off_x + (uint64_t)r * a->len;
			float *yr = y + a->off_y + (uint64_t)r * a->len;
			const int causal = a->fn == GPO_SM_CAUSAL;
			/* CAUSAL: row i of its matrix reads x_0 .. x_i only */
			const uint32_t cnt = causal ? r % a->len + 1 : a->len;
			const float al = causal ? a->alpha : 1.0f;
			float m = row_max(xr, cnt, al);
			double s = row_expsum(xr, cnt, al, m);

			if (a->fn != GPO_SM_LOG_SOFTMAX) {
				float inv = (float)(1.0 / s);

				for (j = 0; j < cnt; j++)
					yr[j] = expf(al * xr[j] - m) * inv;
				for (; j < a->len; j++)
					yr[j] = 0.0f;
			} else {
				float ls = (float)log(s);

				for (j = 0; j < a->len; j++)
					yr[j] = xr[j] - m - ls;
			}
		}
}

void gpo__cpu_softmax_bwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_softmax_args *a = c->args;
	const float *y = bp(c, 0), *dy = bp(c, 1);
	float *dx = bp(c, 2);
	const int accum = !!(a->flags & GPO_T_ACCUM);
	uint32_t g, r, j;

	for (g = lo; g < hi && g < a->groups; g++)
		for (r = g; r < a->rows; r += a->groups) {
			const uint64_t o = (uint64_t)r * a->len;
			const float *yr = y + a->off_x + o;
			const float *dyr = dy + a->off_dy + o;
			float *dxr = dx + a->off_y + o;
			double s = 0;
			float sf, v;

			for (j = 0; j < a->len; j++)
				s += a->fn == GPO_SM_SOFTMAX ?
				     (double)dyr[j] * yr[j] : dyr[j];
			sf = (float)s;
			for (j = 0; j < a->len; j++) {
				if (a->fn == GPO_SM_SOFTMAX)
					v = a->alpha * (yr[j] * (dyr[j] - sf));
				else
					v = a->alpha * (dyr[j] -
							expf(yr[j]) * sf);
				if (accum)
					dxr[j] += v;
				else
					dxr[j] = v;
			}
		}
}

static inline int label_ok(int32_t lab, uint32_t len)
{
	return lab >= 0 && (uint32_t)lab < len;
}

void gpo__cpu_xent(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_loss_args *a = c->args;
	const float *x = bp(c, 0);
	const int32_t *lab = (const int32_t *)bp(c, 1) + a->off_lab;
	float *y = bp(c, 2) + a->off_y;
	uint32_t g, r;

	for (g = lo; g < hi && g < a->groups; g++)
		for (r = g; r < a->rows; r += a->groups) {
			const float *xr = x + a->off_x + (uint64_t)r * a->len;
			float m;

			if (!label_ok(lab[r], a->len)) {
				y[r] = NAN;
				continue;
			}
			m = row_max(xr, a->len, 1.0f);
			y[r] = (float)(log(row_expsum(xr, a->len, 1.0f, m)) +
				       ((double)m - xr[lab[r]]));
		}
}

void gpo__cpu_xent_bwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_loss_args *a = c->args;
	const float *x = bp(c, 0);
	const int32_t *lab = (const int32_t *)bp(c, 1) + a->off_lab;
	const float scale = a->alpha * bp(c, 2)[a->off_dl];
	float *dx = bp(c, 3) + a->off_y;
	const int accum = !!(a->flags & GPO_T_ACCUM);
	uint32_t g, r, j;

	for (g = lo; g < hi && g < a->groups; g++)
		for (r = g; r < a->rows; r += a->groups) {
			const float *xr = x + a->off_x + (uint64_t)r * a->len;
			float *dxr = dx + (uint64_t)r * a->len;
			float m = row_max(xr, a->len, 1.0f);
			float inv = (float)(1.0 / row_expsum(xr, a->len, 1.0f,
							     m));

			for (j = 0; j < a->len; j++) {
				float p = expf(xr[j] - m) * inv;
				float v = scale * (p - ((int32_t)j == lab[r] ?
							1.0f : 0.0f));

				if (accum)
					dxr[j] += v;
				else
					dxr[j] = v;
			}
		}
}

void gpo__cpu_accuracy(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_loss_args *a = c->args;
	const float *x = bp(c, 0);
	const int32_t *lab = (const int32_t *)bp(c, 1) + a->off_lab;
	float *y = bp(c, 2) + a->off_y;
	uint32_t g, r, j;

	for (g = lo; g < hi && g < a->groups; g++)
		for (r = g; r < a->rows; r += a->groups) {
			const float *xr = x + a->off_x + (uint64_t)r * a->len;
			uint32_t best = 0;

			/* the first maximum wins: strictly greater only */
			for (j = 1; j < a->len; j++)
				if (xr[j] > xr[best])
					best = j;
			y[r] = a->len && lab[r] == (int32_t)best ? 1.0f : 0.0f;
		}
}

/* ---- gather --------------------------------------------------------- */

static void gather_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_gather_args *a = c->args;
	const uint32_t *src = bu(c, 0) + a->off_src;
	const uint32_t *idx = bu(c, 1) + a->off_idx;
	uint32_t *dst = (uint32_t *)bp(c, 2) + a->off_dst;
	const uint32_t span = a->row_hi - a->row_lo;

	while (s < e) {
		const uint64_t b = s / a->width, j = s % a->width;
		const uint64_t cnt = e - s < a->width - j ? e - s : a->width - j;
		/* unsigned: an index below row_lo wraps above the span */
		const uint32_t r = idx[b] - a->row_lo;

		if (r < span)
			memcpy(dst + s, src + (uint64_t)r * a->stride + j,
			       cnt * sizeof(uint32_t));
		s += cnt;
	}
}

void gpo__cpu_gather_rows(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_gather_args *a = c->args;

	grid_ranges(c, lo, hi, a->n, a->groups, gather_range);
}

/*
 * Row v of the table's gradient for v = group, group + groups, ...: the
 * dy rows of the indices that name v, b ascending, summed in double a
 * stretch of WG columns at a time.
 */
void gpo__cpu_embed_bwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_gather_args *a = c->args;
	const int32_t *idx = (const int32_t *)bp(c, 0) + a->off_idx;
	const float *dy = bp(c, 1) + a->off_src;
	float *dw = bp(c, 2) + a->off_dst;
	const int accum = !!(a->flags & GPO_T_ACCUM);
	double acc[WG];
	uint32_t g, v, b, j0, k, cnt;

	for (g = lo; g < hi && g < a->groups; g++)
		for (v = g; v < a->row_hi; v += a->groups)
			for (j0 = 0; j0 < a->width; j0 += cnt) {
				float *row = dw + (uint64_t)v * a->width + j0;

				cnt = min_u32(WG, a->width - j0);
				for (k = 0; k < cnt; k++)
					acc[k] = 0;
				for (b = 0; b < a->rows; b++) {
					const float *d;

					if (idx[b] != (int32_t)v)
						continue;
					d = dy + (uint64_t)b * a->width + j0;
					for (k = 0; k < cnt; k++)
						acc[k] += d[k];
				}
				for (k = 0; k < cnt; k++)
					if (accum)
						row[k] += (float)acc[k];
					else
						row[k] = (float)acc[k];
			}
}

/* ---- layernorm ------------------------------------------------------ */

/*
 * Group g's rows (abi/layernorm.h): the blocks of GPO_LN_ROWS rows b = g,
 * g + groups, ..., each block's rows in turn. Calls @row(c, r) for each.
 */
static void ln_rows(const struct op_call *c, uint32_t lo, uint32_t hi,
		    void (*row)(const struct op_call *, uint32_t))
{
	const struct gpo_layernorm_args *a = c->args;
	uint64_t nb = ((uint64_t)a->rows + GPO_LN_ROWS - 1) / GPO_LN_ROWS;
	uint64_t b, r;
	uint32_t g;

	for (g = lo; g < hi && g < a->groups; g++)
		for (b = g; b < nb; b += a->groups)
			for (r = b * GPO_LN_ROWS;
			     r < (b + 1) * GPO_LN_ROWS && r < a->rows; r++)
				row(c, (uint32_t)r);
}

/*
 * Row r: the mean, then the variance about it (two passes, no
 * cancellation), in double.
 */
static void ln_row(const struct op_call *c, uint32_t r)
{
	const struct gpo_layernorm_args *a = c->args;
	const uint64_t o = (uint64_t)r * a->len;
	const float *xr = bp(c, 0) + a->off_x + o;
	float *yr = bp(c, 1) + a->off_y + o;
	float *st = bp(c, 2) + a->off_stats;
	double s = 0, v = 0;
	float mean, rstd;
	uint32_t j;

	for (j = 0; j < a->len; j++)
		s += xr[j];
	mean = (float)(s / a->len);
	for (j = 0; j < a->len; j++) {
		double d = (double)xr[j] - mean;

		v += d * d;
	}
	rstd = (float)(1.0 / sqrt(v / a->len + a->eps));
	for (j = 0; j < a->len; j++)
		yr[j] = (xr[j] - mean) * rstd;
	st[2 * (uint64_t)r] = mean;
	st[2 * (uint64_t)r + 1] = rstd;
}

void gpo__cpu_layernorm(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	ln_rows(c, lo, hi, ln_row);
}

static void ln_bwd_row(const struct op_call *c, uint32_t r)
{
	const struct gpo_layernorm_args *a = c->args;
	const uint64_t o = (uint64_t)r * a->len;
	const float *yr = bp(c, 0) + a->off_y + o;
	const float *dyr = bp(c, 1) + a->off_dy + o;
	const float *st = bp(c, 2) + a->off_stats;
	float *dxr = bp(c, 3) + a->off_x + o;
	const int accum = !!(a->flags & GPO_T_ACCUM);
	const float scale = a->alpha * st[2 * (uint64_t)r + 1];
	double s = 0, sy = 0;
	float mdy, mdyy, v;
	uint32_t j;

	for (j = 0; j < a->len; j++) {
		s += dyr[j];
		sy += (double)dyr[j] * yr[j];
	}
	mdy = (float)(s / a->len);
	mdyy = (float)(sy / a->len);
	for (j = 0; j < a->len; j++) {
		v = scale * (dyr[j] - mdy - yr[j] * mdyy);
		if (accum)
			dxr[j] += v;
		else
			dxr[j] = v;
	}
}

void gpo__cpu_layernorm_bwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	ln_rows(c, lo, hi, ln_bwd_row);
}

/* ---- attention ------------------------------------------------------ */

/*
 * One block of GPO_ATTN_BLOCK rows (queries, or keys for dkdv) of one
 * matrix per group, each row on its own: its sums over the keys (or the
 * queries) j ascending, in double, the row's accumulators on the stack
 * (hd <= GPO_ATTN_MAX_HD). The scores are recomputed where needed rather
 * than stored: this backend is the reference, not the fast path.
 */
static double attn_dot(const float *a, const float *b, uint32_t hd)
{
	double s = 0;
	uint32_t c;

	for (c = 0; c < hd; c++)
		s += (double)a[c] * b[c];
	return s;
}

/* the rows [*lo, *hi) of group @g's block; 0 if it has none */
static int attn_block(const struct gpo_attn_args *a, uint32_t g,
		      uint32_t *z, uint32_t *lo, uint32_t *hi)
{
	if (!a->blocks || g >= a->groups || g / a->blocks >= a->bh)
		return 0;
	*z = g / a->blocks;
	*lo = g % a->blocks * GPO_ATTN_BLOCK;
	*hi = min_u32(*lo + GPO_ATTN_BLOCK, a->t);
	return *lo < *hi;
}

static inline void attn_put(float *y, uint32_t flags, uint32_t acc_flag,
			    double v)
{
	if (flags & acc_flag)
		*y += (float)v;
	else
		*y = (float)v;
}

void gpo__cpu_attn_fwd(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_attn_args *a = c->args;
	const uint32_t hd = a->hd;
	double acc[GPO_ATTN_MAX_HD];
	uint32_t g, z, i0, i1, i, j, e;

	for (g = lo; g < hi; g++) {
		if (!attn_block(a, g, &z, &i0, &i1))
			continue;
		for (i = i0; i < i1; i++) {
			const uint64_t row = (uint64_t)z * a->t;
			const float *q = bp(c, 0) + a->off_q + (row + i) * hd;
			const float *k = bp(c, 1) + a->off_k + row * hd;
			const float *v = bp(c, 2) + a->off_v + row * hd;
			float *y = bp(c, 3) + a->off_y + (row + i) * hd;
			double m = -INFINITY, l = 0;

			for (j = 0; j <= i; j++) {
				double s = a->scale * attn_dot(q, k + j * hd, hd);

				m = s > m ? s : m;
			}
			for (e = 0; e < hd; e++)
				acc[e] = 0;
			for (j = 0; j <= i; j++) {
				double p = exp(a->scale *
					       attn_dot(q, k + j * hd, hd) - m);

				l += p;
				for (e = 0; e < hd; e++)
					acc[e] += p * v[(uint64_t)j * hd + e];
			}
			for (e = 0; e < hd; e++)
				y[e] = (float)(acc[e] / l);
			bp(c, 4)[a->off_l + row + i] = (float)(m + log(l));
		}
	}
}

static void attn_d_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_attn_args *a = c->args;

	for (; s < e; s++) {
		const float *y = bp(c, 0) + a->off_y + s * a->hd;
		const float *dy = bp(c, 1) + a->off_dy + s * a->hd;

		bp(c, 2)[a->off_d + s] = (float)attn_dot(dy, y, a->hd);
	}
}

void gpo__cpu_attn_bwd_d(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_attn_args *a = c->args;

	grid_ranges(c, lo, hi, (uint64_t)a->bh * a->t, a->groups,
		    attn_d_range);
}

void gpo__cpu_attn_bwd_dq(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_attn_args *a = c->args;
	const uint32_t hd = a->hd;
	double acc[GPO_ATTN_MAX_HD];
	uint32_t g, z, i0, i1, i, j, e;

	for (g = lo; g < hi; g++) {
		if (!attn_block(a, g, &z, &i0, &i1))
			continue;
		for (i = i0; i < i1; i++) {
			const uint64_t row = (uint64_t)z * a->t;
			const float *q = bp(c, 0) + a->off_q + (row + i) * hd;
			const float *k = bp(c, 1) + a->off_k + row * hd;
			const float *v = bp(c, 2) + a->off_v + row * hd;
			const float *dy = bp(c, 3) + a->off_dy + (row + i) * hd;
			const double l = bp(c, 4)[a->off_l + row + i];
			const double d = bp(c, 5)[a->off_d + row + i];
			float *dq = bp(c, 6) + a->off_dq + (row + i) * hd;

			for (e = 0; e < hd; e++)
				acc[e] = 0;
			for (j = 0; j <= i; j++) {
				const float *kj = k + (uint64_t)j * hd;
				double p = exp(a->scale * attn_dot(q, kj, hd) - l);
				double ds = p * (attn_dot(dy, v + (uint64_t)j * hd,
							  hd) - d);

				for (e = 0; e < hd; e++)
					acc[e] += ds * kj[e];
			}
			for (e = 0; e < hd; e++)
				attn_put(&dq[e], a->flags, GPO_T_ACCUM,
					 a->scale * acc[e]);
		}
	}
}

void gpo__cpu_attn_bwd_dkdv(const struct op_call *c, uint32_t lo,
			    uint32_t hi)
{
	const struct gpo_attn_args *a = c->args;
	const uint32_t hd = a->hd;
	double ak[GPO_ATTN_MAX_HD], av[GPO_ATTN_MAX_HD];
	uint32_t g, z, j0, j1, i, j, e;

	for (g = lo; g < hi; g++) {
		if (!attn_block(a, g, &z, &j0, &j1))
			continue;
		for (j = j0; j < j1; j++) {
			const uint64_t row = (uint64_t)z * a->t;
			const float *q = bp(c, 0) + a->off_q + row * hd;
			const float *k = bp(c, 1) + a->off_k + (row + j) * hd;
			const float *v = bp(c, 2) + a->off_v + (row + j) * hd;
			const float *dy = bp(c, 3) + a->off_dy + row * hd;
			const float *l = bp(c, 4) + a->off_l + row;
			const float *d = bp(c, 5) + a->off_d + row;
			float *dk = bp(c, 6) + a->off_dk + (row + j) * hd;
			float *dv = bp(c, 7) + a->off_dv + (row + j) * hd;

			for (e = 0; e < hd; e++)
				ak[e] = av[e] = 0;
			for (i = j; i < a->t; i++) {
				const float *qi = q + (uint64_t)i * hd;
				const float *dyi = dy + (uint64_t)i * hd;
				double p = exp(a->scale * attn_dot(qi, k, hd) -
					       l[i]);
				double ds = p * (attn_dot(dyi, v, hd) - d[i]);

				for (e = 0; e < hd; e++) {
					av[e] += p * dyi[e];
					ak[e] += ds * qi[e];
				}
			}
			/* dk first: with k and v one tensor, dv adds to it */
			for (e = 0; e < hd; e++)
				attn_put(&dk[e], a->flags, GPO_T_ACCUM,
					 a->scale * ak[e]);
			for (e = 0; e < hd; e++)
				attn_put(&dv[e], a->flags, GPO_ATTN_ACC_DV,
					 av[e]);
		}
	}
}
