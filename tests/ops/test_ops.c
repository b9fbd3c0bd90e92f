// SPDX-License-Identifier: MIT
/*
 * test_ops.c - every op on every device against a float64 reference
 *
 * One table entry per op variant (the model is ggml's test-backend-ops):
 * a setup that draws fresh random inputs of odd sizes and the op's
 * parameter struct, and a reference in double. For each device and each
 * dtype the op has there, the harness
 *   - places every buffer of the descriptor between poisoned guards,
 *   - poisons what the op only writes, and passes the optional buffers a
 *     variant leaves unused, poisoned too,
 *   - launches through gpo__launch() and reads everything back,
 *   - checks the written buffers against the reference (poison left in
 *     an element the op must write fails), and that read-only buffers,
 *     unused buffers and every guard are bit-for-bit unchanged: the
 *     descriptor's roles are checked, not assumed.
 * Adding an op adds one entry here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/gpuopt_i.h"
#include "core/rng_i.h"
#include "core/dtype_i.h"
#include "abi/mem.h"
#include "abi/norm.h"
#include "abi/sgd.h"
#include "abi/adam.h"
#include "abi/rmsprop.h"
#include "abi/adagrad.h"
#include "abi/lion.h"
#include "abi/lamb.h"
#include "abi/objective.h"
#include "abi/matmul.h"
#include "abi/ew.h"
#include "abi/reduce.h"
#include "abi/softmax.h"
#include "abi/loss.h"
#include "abi/gather.h"
#include "abi/layernorm.h"
#include "abi/attention.h"
#include "abi/cast.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"

#define GUARD		64	/* elements of poison before and after */
#define LP_LOOP_LIMIT	65535	/* lavapipe's loop iterations a work-item */
#define POISON		0x7fa5a5a5u
#define DONTCARE	1e300
#define MUSTNAN		(-1e300)	/* want: written, and NaN */

struct tbuf {
	uint64_t n;		/* elements the op may touch (4 bytes each) */
	int unused;		/* optional, not enabled by the variant */
	int exact;		/* compare bits (integers, flags) */
	uint32_t *in;		/* the contents before the launch */
	double *want;		/* expected after (NaN: must stay as in[]) */
	double *mag;		/* NULL, or the size of each want[i]'s terms:
				 * the error allowed where terms cancel */
	unsigned char *exact_at;	/* NULL, or 1 where want[i] is the
					 * float's exact value (a masked 0) */
	uint32_t *got;		/* read back, guards included */
};

union targs {
	struct gpo_mem_args mem;
	struct gpo_norm_args norm;
	struct gpo_sgd_args sgd;
	struct gpo_adam_args adam;
	struct gpo_rmsprop_args rmsprop;
	struct gpo_adagrad_args adagrad;
	struct gpo_lion_args lion;
	struct gpo_lamb_args lamb;
	struct gpo_objective_args obj;
	struct gpo_matmul_args mm;
	struct gpo_ew_args ew;
	struct gpo_reduce_args reduce;
	struct gpo_softmax_args sm;
	struct gpo_loss_args loss;
	struct gpo_gather_args gather;
	struct gpo_layernorm_args ln;
	struct gpo_attn_args attn;
	struct gpo_cast_args cast;
};

struct tcase {
	const struct op_case *oc;
	enum gpo_dtype dtype;
	uint64_t n;		/* the size drawn for this run */
	uint64_t work;
	union targs a;
	struct tbuf b[OP_MAX_BUF];
	uint64_t rng;
	double tol;
};

struct op_case {
	enum gpo__op_id op;
	const char *variant;
	/* set sizes, args and inputs (in[]), and mark unused buffers */
	void (*setup)(struct tcase *tc);
	/* fill want[] from in[] and the args */
	void (*ref)(struct tcase *tc);
	unsigned int flags;	/* the variant's flags, given to setup */
};

/* ---- helpers for setups and references ---------------------------------- */

static float f(const struct tbuf *b, uint64_t i)
{
	float v;

	memcpy(&v, &b->in[i], 4);
	return v;
}

static void put(struct tbuf *b, uint64_t i, float v)
{
	memcpy(&b->in[i], &v, 4);
}

static uint32_t wbits(float v)
{
	uint32_t x;

	memcpy(&x, &v, 4);
	return x;
}

static float bitsw(uint32_t x)
{
	float v;

	memcpy(&v, &x, 4);
	return v;
}

static void tb_alloc(struct tbuf *b, uint64_t n)
{
	uint64_t i;

	b->n = n;
	b->in = malloc(n * 4 + 4);
	b->want = malloc(n * sizeof(double) + 8);
	b->got = malloc((n + 2 * GUARD) * 4);
	ck_assert(b->in && b->want && b->got);
	for (i = 0; i < n; i++) {
		b->in[i] = POISON;
		b->want[i] = NAN;
	}
}

static void tb_free(struct tbuf *b)
{
	free(b->in);
	free(b->want);
	free(b->got);
	free(b->mag);
	free(b->exact_at);
	memset(b, 0, sizeof(*b));
}

static void tb_random(struct tcase *tc, struct tbuf *b, uint64_t n,
		      double lo, double hi)
{
	uint64_t i;

	tb_alloc(b, n);
	for (i = 0; i < n; i++)
		put(b, i, (float)tu_rand(&tc->rng, lo, hi));
}

/* a buffer the op must write: poisoned in[], want[] set by the reference */
static void tb_out(struct tbuf *b, uint64_t n)
{
	tb_alloc(b, n);
}

/* the scal buffer an update reads: a multiplier and a skip flag */
static void tb_scal(struct tcase *tc, struct tbuf *b, int skip)
{
	tb_alloc(b, GPO_SCAL_COUNT);
	put(b, GPO_SCAL_MUL, (float)tu_rand(&tc->rng, 0.5, 1.5));
	put(b, GPO_SCAL_SKIP, skip ? 1.0f : 0.0f);
	put(b, GPO_SCAL_NORM, 1.0f);
	put(b, GPO_SCAL_TOTAL, 1.0f);
}

/* every element of @b as the reference's starting point */
static void want_in(struct tbuf *b)
{
	uint64_t i;

	for (i = 0; i < b->n; i++)
		b->want[i] = b->in[i] == POISON ? NAN : f(b, i);
}

/* an odd element count: small, around a float4 edge, or a few thousand */
static uint64_t odd_n(struct tcase *tc)
{
	static const uint64_t sizes[] = { 1, 3, 5, 67, 1021, 4099, 70001 };
	uint64_t n = sizes[(uint64_t)tu_rand(&tc->rng, 0, ARRAY_SIZE(sizes))];

	if (tu_quick() && n > 5000)
		n = 1021;
	return n;
}

/* the gradient multiplier the update kernels apply */
static double gmul(const struct tcase *tc, uint32_t flags, int scal)
{
	double m = 1.0;

	if (flags & GPO_UPD_USE_SCAL)
		m = f(&tc->b[scal], GPO_SCAL_MUL);
	return (flags & GPO_UPD_MAXIMIZE) ? -m : m;
}

static int skipped(const struct tcase *tc, uint32_t flags, int scal)
{
	return (flags & GPO_UPD_USE_SCAL) &&
	       f(&tc->b[scal], GPO_SCAL_SKIP) != 0.0f;
}

/* the common part of an element-wise update's setup */
static void update_setup(struct tcase *tc, int nbuf)
{
	int i;

	tc->n = odd_n(tc);
	tc->work = tc->n;
	for (i = 0; i < nbuf - 1; i++)
		tb_random(tc, &tc->b[i], tc->n, -1.0, 1.0);
	tb_scal(tc, &tc->b[nbuf - 1],
		!!(tc->oc->flags & (1u << 31)));
	/* the half parameters' copy (abi.h GPO_UPD_PARAM_*): f32 leaves it */
	for (i = nbuf; i < (int)gpo__ops[tc->oc->op].nbuf; i++) {
		tb_random(tc, &tc->b[i], tc->n, -1.0, 1.0);
		tc->b[i].unused = 1;
	}
}

#define SKIP_FLAG	(1u << 31)	/* a variant: scal says skip */
/* a variant of the u8 updates: n a multiple of 4 (pipeline.c's quads()) */
#define QUADS_FLAG	(1u << 29)
#define VARIANT(tc)	((tc)->oc->flags & ~(SKIP_FLAG | QUADS_FLAG))

/* ---- mem ------------------------------------------------------------------ */

static void copy_setup(struct tcase *tc)
{
	uint64_t i;

	tc->n = odd_n(tc);
	tc->work = tc->n;
	tc->a.mem.n = (uint32_t)tc->n;
	tb_out(&tc->b[0], tc->n);
	tb_alloc(&tc->b[1], tc->n);
	for (i = 0; i < tc->n; i++)
		tc->b[1].in[i] = (uint32_t)(tu_rand(&tc->rng, 0, 4294967296.0));
	/* any 32-bit pattern for i32; finite floats for f32 */
	if (tc->dtype == GPO_F32)
		for (i = 0; i < tc->n; i++)
			put(&tc->b[1], i, (float)tu_rand(&tc->rng, -1e6, 1e6));
	tc->b[0].exact = 1;
	tc->b[1].exact = 1;
}

static void copy_ref(struct tcase *tc)
{
	uint64_t i;

	for (i = 0; i < tc->n; i++)
		tc->b[0].want[i] = tc->b[1].in[i];
}

static void fill_setup(struct tcase *tc)
{
	tc->n = odd_n(tc);
	tc->work = tc->n;
	tc->a.mem.n = (uint32_t)tc->n;
	tc->a.mem.value = (float)tu_rand(&tc->rng, -10, 10);
	tb_out(&tc->b[0], tc->n);
}

static void fill_ref(struct tcase *tc)
{
	uint64_t i;

	for (i = 0; i < tc->n; i++)
		tc->b[0].want[i] = tc->a.mem.value;
}

/* ---- norm ----------------------------------------------------------------- */

/*
 * The norm variants' gradients: bit 4 GPO_NORM_EXACT (the order the half
 * path sums in), bit 5 half gradients in f16, bit 6 in bf16 (two a word,
 * the last word's high half a 0 when n is odd)
 */
#define NV_EXACT	(1u << 4)
#define NV_F16		(1u << 5)
#define NV_BF16		(1u << 6)

static uint32_t norm_vflags(const struct tcase *tc)
{
	uint32_t fl = 0;

	if (VARIANT(tc) & (NV_EXACT | NV_F16 | NV_BF16))
		fl |= GPO_NORM_EXACT;
	if (VARIANT(tc) & (NV_F16 | NV_BF16))
		fl |= GPO_NORM_HALF;
	if (VARIANT(tc) & NV_BF16)
		fl |= GPO_NORM_BF16;
	return fl;
}

/* gradient @i as the kernel reads it (half words widened) */
static double norm_g(const struct tcase *tc, uint64_t i)
{
	uint16_t h = (uint16_t)(tc->b[0].in[i / 2] >> (16 * (i % 2)));

	if (VARIANT(tc) & NV_F16)
		return gpo__f16_to_f32(h);
	if (VARIANT(tc) & NV_BF16)
		return gpo__bf16_to_f32(h);
	return f(&tc->b[0], i);
}

/* @n random gradients in [-2, 2) in buffer 0, in the variant's dtype */
static void norm_grads(struct tcase *tc, uint64_t n)
{
	uint64_t i;

	if (!(VARIANT(tc) & (NV_F16 | NV_BF16))) {
		tb_random(tc, &tc->b[0], n, -2, 2);
		return;
	}
	tb_alloc(&tc->b[0], (n + 1) / 2);
	for (i = 0; i < (n + 1) / 2; i++)
		tc->b[0].in[i] = 0;
	for (i = 0; i < n; i++) {
		float x = (float)tu_rand(&tc->rng, -2, 2);
		uint32_t h = VARIANT(tc) & NV_F16 ? gpo__f32_to_f16(x) :
						    gpo__f32_to_bf16(x);

		tc->b[0].in[i / 2] |= h << (16 * (i % 2));
	}
}

/* gradient @i made inf (@nan 0) or NaN, in the variant's dtype */
static void norm_put_bad(struct tcase *tc, uint64_t i, int nan)
{
	uint32_t h;

	if (!(VARIANT(tc) & (NV_F16 | NV_BF16))) {
		put(&tc->b[0], i, nan ? NAN : INFINITY);
		return;
	}
	if (VARIANT(tc) & NV_F16)
		h = nan ? 0x7e00 : 0xfc00;
	else
		h = nan ? 0xffc1 : 0x7f80;
	tc->b[0].in[i / 2] &= ~(0xffffu << (16 * (i % 2)));
	tc->b[0].in[i / 2] |= h << (16 * (i % 2));
}

/*
 * An odd count of elements in groups of a random chunk (a multiple of 4),
 * the last one partial, and random inputs for them in buffer 0
 */
static uint32_t chunked_setup(struct tcase *tc, uint32_t *n, uint32_t *chunk)
{
	uint64_t c = ((uint64_t)tu_rand(&tc->rng, 1, 600) + 3) / 4 * 4;

	tc->n = odd_n(tc);
	*n = (uint32_t)tc->n;
	*chunk = (uint32_t)c;
	tc->work = (tc->n + c - 1) / c;
	norm_grads(tc, tc->n);
	return (uint32_t)tc->work;
}

static void norm_partial_setup(struct tcase *tc)
{
	struct gpo_norm_args *a = &tc->a.norm;

	a->groups = chunked_setup(tc, &a->n, &a->chunk);
	a->flags = norm_vflags(tc);
	if (VARIANT(tc) & 3)	/* one non-finite gradient */
		norm_put_bad(tc, (uint64_t)tu_rand(&tc->rng, 0, tc->n),
			     (VARIANT(tc) & 3) == 2);
	tb_out(&tc->b[1], 2 * a->groups);
	tc->b[1].exact = 0;
}

static void norm_partial_ref(struct tcase *tc)
{
	const struct gpo_norm_args *a = &tc->a.norm;
	uint32_t grp;
	uint64_t i;

	for (grp = 0; grp < a->groups; grp++) {
		uint64_t lo = (uint64_t)grp * a->chunk, hi = lo + a->chunk;
		double sum = 0;
		int bad = 0;

		if (hi > tc->n)
			hi = tc->n;
		for (i = lo; i < hi; i++) {
			double g = norm_g(tc, i);

			if (!isfinite(g))
				bad = 1;
			else
				sum += g * g;
		}
		/* a non-finite group's sum is whatever it is: not compared */
		tc->b[1].want[2 * grp] = bad ? DONTCARE : sum;
		tc->b[1].want[2 * grp + 1] = bad;
	}
}

static void norm_final_setup(struct tcase *tc)
{
	struct gpo_norm_args *a = &tc->a.norm;
	uint32_t i;

	a->groups = (uint32_t)tu_rand(&tc->rng, 1, GPO_NORM_MAX_GROUPS);
	a->inv_scale = (float)(1.0 / tu_rand(&tc->rng, 0.5, 1000));
	a->clip_norm = VARIANT(tc) & 1 ? (float)tu_rand(&tc->rng, 0.1, 5) : 0;
	a->flags = VARIANT(tc) & 2 ? GPO_NORM_CHECK_FINITE : 0;
	a->flags |= norm_vflags(tc);
	tc->work = 1;
	tb_alloc(&tc->b[0], 2 * a->groups);
	for (i = 0; i < a->groups; i++) {
		put(&tc->b[0], 2 * i, (float)tu_rand(&tc->rng, 0, 3));
		put(&tc->b[0], 2 * i + 1, 0.0f);
	}
	if (VARIANT(tc) & 4)
		put(&tc->b[0], 2 * (uint32_t)tu_rand(&tc->rng, 0, a->groups) + 1,
		    1.0f);
	tb_out(&tc->b[1], GPO_SCAL_COUNT);
}

static void norm_final_ref(struct tcase *tc)
{
	const struct gpo_norm_args *a = &tc->a.norm;
	double total = 0, norm, mul = a->inv_scale;
	int bad = 0;
	uint32_t i;

	for (i = 0; i < a->groups; i++) {
		total += f(&tc->b[0], 2 * i);
		bad |= f(&tc->b[0], 2 * i + 1) != 0.0f;
	}
	norm = sqrt(total) * a->inv_scale;
	if (a->clip_norm > 0 && a->clip_norm / (norm + 1e-6) < 1)
		mul *= a->clip_norm / (norm + 1e-6);
	tc->b[1].want[GPO_SCAL_MUL] = mul;
	tc->b[1].want[GPO_SCAL_SKIP] = bad && (a->flags & GPO_NORM_CHECK_FINITE);
	tc->b[1].want[GPO_SCAL_NORM] = norm;
	tc->b[1].want[GPO_SCAL_TOTAL] = total;
}

/*
 * norm_small: flags bit 0 clip, bit 1 check finite, bit 2 an inf, bit 3
 * a NaN among the gradients
 */
static void norm_small_setup(struct tcase *tc)
{
	struct gpo_norm_args *a = &tc->a.norm;

	tc->n = odd_n(tc);
	a->n = (uint32_t)tc->n;
	a->groups = 1;
	a->chunk = (uint32_t)((tc->n + 3) / 4 * 4);
	a->inv_scale = (float)(1.0 / tu_rand(&tc->rng, 0.5, 1000));
	a->clip_norm = VARIANT(tc) & 1 ? (float)tu_rand(&tc->rng, 0.1, 5) : 0;
	a->flags = VARIANT(tc) & 2 ? GPO_NORM_CHECK_FINITE : 0;
	a->flags |= norm_vflags(tc);
	tc->work = 1;
	norm_grads(tc, tc->n);
	if (VARIANT(tc) & 12)
		norm_put_bad(tc, (uint64_t)tu_rand(&tc->rng, 0, tc->n),
			     !(VARIANT(tc) & 4));
	tb_out(&tc->b[1], GPO_SCAL_COUNT);
	tc->b[1].exact = 0;
}

static void norm_small_ref(struct tcase *tc)
{
	const struct gpo_norm_args *a = &tc->a.norm;
	double total = 0, norm, mul = a->inv_scale;
	int bad = 0;
	uint64_t i;

	for (i = 0; i < tc->n; i++) {
		double g = norm_g(tc, i);

		if (!isfinite(g))
			bad = 1;
		else
			total += g * g;
	}
	norm = sqrt(total) * a->inv_scale;
	if (a->clip_norm > 0 && a->clip_norm / (norm + 1e-6) < 1)
		mul *= a->clip_norm / (norm + 1e-6);
	/* with a non-finite gradient only the skip flag is defined */
	tc->b[1].want[GPO_SCAL_MUL] = bad ? DONTCARE : mul;
	tc->b[1].want[GPO_SCAL_SKIP] = bad &&
				       (a->flags & GPO_NORM_CHECK_FINITE);
	tc->b[1].want[GPO_SCAL_NORM] = bad ? DONTCARE : norm;
	tc->b[1].want[GPO_SCAL_TOTAL] = bad ? DONTCARE : total;
}

/* ---- the element-wise updates ------------------------------------------- */

static uint32_t upd_flags(struct tcase *tc)
{
	uint32_t fl = tu_rand(&tc->rng, 0, 1) < 0.5 ? GPO_UPD_MAXIMIZE : 0;

	/* the skip variant needs the scal buffer read */
	if ((tc->oc->flags & SKIP_FLAG) || tu_rand(&tc->rng, 0, 1) < 0.5)
		fl |= GPO_UPD_USE_SCAL;
	return fl;
}

static void sgd_setup(struct tcase *tc)
{
	struct gpo_sgd_args *a = &tc->a.sgd;

	update_setup(tc, 4);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | VARIANT(tc);
	a->lr = (float)tu_rand(&tc->rng, 1e-3, 0.5);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->momentum = (float)tu_rand(&tc->rng, 0.5, 0.99);
	a->one_minus_dampening = (float)tu_rand(&tc->rng, 0.5, 1);
	tc->b[2].unused = !(a->flags & GPO_SGD_MOMENTUM);
}

static void sgd_ref(struct tcase *tc)
{
	const struct gpo_sgd_args *a = &tc->a.sgd;
	double gm = gmul(tc, a->flags, 3);
	uint64_t i;

	want_in(&tc->b[0]);
	want_in(&tc->b[2]);
	if (skipped(tc, a->flags, 3))
		return;
	for (i = 0; i < tc->n; i++) {
		double p = f(&tc->b[0], i), d = f(&tc->b[1], i) * gm +
			   a->weight_decay * p;

		if (a->flags & GPO_SGD_MOMENTUM) {
			double b = a->flags & GPO_SGD_FIRST ? d :
				   a->momentum * f(&tc->b[2], i) +
				   a->one_minus_dampening * d;

			tc->b[2].want[i] = b;
			d = a->flags & GPO_SGD_NESTEROV ? d + a->momentum * b : b;
		}
		tc->b[0].want[i] = p - a->lr * d;
	}
}

static void adam_setup(struct tcase *tc)
{
	struct gpo_adam_args *a = &tc->a.adam;
	uint64_t i, t = (uint64_t)tu_rand(&tc->rng, 1, 1000);
	double b1 = tu_rand(&tc->rng, 0.5, 0.95), b2 = tu_rand(&tc->rng, 0.9, 0.9999);
	double lr = tu_rand(&tc->rng, 1e-4, 1e-1);

	update_setup(tc, 6);
	/* second moments are >= 0 */
	for (i = 0; i < tc->n; i++) {
		put(&tc->b[3], i, fabsf(f(&tc->b[3], i)));
		put(&tc->b[4], i, fabsf(f(&tc->b[4], i)));
	}
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | VARIANT(tc);
	a->beta1 = (float)b1;
	a->beta2 = (float)b2;
	a->eps = (float)tu_rand(&tc->rng, 1e-8, 1e-3);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->step_size = (float)(lr / (1 - pow(b1, (double)t)));
	a->bc2_sqrt = (float)sqrt(1 - pow(b2, (double)t));
	a->decay = (float)(1 - lr * a->weight_decay);
	a->one_minus_beta1 = (float)(1 - b1);
	a->one_minus_beta2 = (float)(1 - b2);
	tc->b[4].unused = !(a->flags & GPO_ADAM_AMSGRAD);
}

static void adam_ref(struct tcase *tc)
{
	const struct gpo_adam_args *a = &tc->a.adam;
	int dec = !!(a->flags & GPO_ADAM_DECOUPLED);
	double gm = gmul(tc, a->flags, 5);
	uint64_t i;
	int k;

	for (k = 0; k < 5; k++)
		if (k != 1)
			want_in(&tc->b[k]);
	if (skipped(tc, a->flags, 5))
		return;
	for (i = 0; i < tc->n; i++) {
		double p = f(&tc->b[0], i);
		double g = f(&tc->b[1], i) * gm + (dec ? 0 : a->weight_decay * p);
		double m = a->beta1 * f(&tc->b[2], i) + a->one_minus_beta1 * g;
		double v = a->beta2 * f(&tc->b[3], i) +
			   a->one_minus_beta2 * g * g;

		tc->b[2].want[i] = m;
		tc->b[3].want[i] = v;
		if (a->flags & GPO_ADAM_AMSGRAD) {
			v = fmax(f(&tc->b[4], i), v);
			tc->b[4].want[i] = v;
		}
		tc->b[0].want[i] = p * (dec ? a->decay : 1.0) -
				   a->step_size * m / (sqrt(v) / a->bc2_sqrt +
						       a->eps);
	}
}

static void rmsprop_setup(struct tcase *tc)
{
	struct gpo_rmsprop_args *a = &tc->a.rmsprop;
	uint64_t i;

	update_setup(tc, 6);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | VARIANT(tc);
	a->lr = (float)tu_rand(&tc->rng, 1e-4, 1e-1);
	a->alpha = (float)tu_rand(&tc->rng, 0.8, 0.99);
	a->eps = (float)tu_rand(&tc->rng, 1e-6, 1e-2);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->momentum = (float)tu_rand(&tc->rng, 0.1, 0.9);
	a->one_minus_alpha = (float)(1.0 - a->alpha);
	/* square_avg >= grad_avg^2 keeps the centered root real */
	for (i = 0; i < tc->n; i++) {
		double ga = f(&tc->b[4], i) * 0.5;

		put(&tc->b[4], i, (float)ga);
		put(&tc->b[2], i, (float)(fabs(f(&tc->b[2], i)) + ga * ga +
					  0.5));
	}
	tc->b[3].unused = !(a->flags & GPO_RMSPROP_MOMENTUM);
	tc->b[4].unused = !(a->flags & GPO_RMSPROP_CENTERED);
}

static void rmsprop_ref(struct tcase *tc)
{
	const struct gpo_rmsprop_args *a = &tc->a.rmsprop;
	double gm = gmul(tc, a->flags, 5);
	uint64_t i;
	int k;

	for (k = 0; k < 5; k++)
		if (k != 1)
			want_in(&tc->b[k]);
	if (skipped(tc, a->flags, 5))
		return;
	for (i = 0; i < tc->n; i++) {
		double p = f(&tc->b[0], i);
		double g = f(&tc->b[1], i) * gm + a->weight_decay * p;
		double s = a->alpha * f(&tc->b[2], i) + a->one_minus_alpha * g * g;
		double avg;

		tc->b[2].want[i] = s;
		if (a->flags & GPO_RMSPROP_CENTERED) {
			double ca = a->alpha * f(&tc->b[4], i) +
				    a->one_minus_alpha * g;

			tc->b[4].want[i] = ca;
			s -= ca * ca;
		}
		avg = sqrt(s) + a->eps;
		if (a->flags & GPO_RMSPROP_MOMENTUM) {
			double b = a->momentum * f(&tc->b[3], i) + g / avg;

			tc->b[3].want[i] = b;
			tc->b[0].want[i] = p - a->lr * b;
		} else {
			tc->b[0].want[i] = p - a->lr * g / avg;
		}
	}
}

static void adagrad_setup(struct tcase *tc)
{
	struct gpo_adagrad_args *a = &tc->a.adagrad;
	uint64_t i;

	update_setup(tc, 4);
	for (i = 0; i < tc->n; i++)
		put(&tc->b[2], i, fabsf(f(&tc->b[2], i)));
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc);
	a->clr = (float)tu_rand(&tc->rng, 1e-3, 0.5);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->eps = (float)tu_rand(&tc->rng, 1e-10, 1e-3);
}

static void adagrad_ref(struct tcase *tc)
{
	const struct gpo_adagrad_args *a = &tc->a.adagrad;
	double gm = gmul(tc, a->flags, 3);
	uint64_t i;

	want_in(&tc->b[0]);
	want_in(&tc->b[2]);
	if (skipped(tc, a->flags, 3))
		return;
	for (i = 0; i < tc->n; i++) {
		double p = f(&tc->b[0], i);
		double g = f(&tc->b[1], i) * gm + a->weight_decay * p;
		double s = f(&tc->b[2], i) + g * g;

		tc->b[2].want[i] = s;
		tc->b[0].want[i] = p - a->clr * g / (sqrt(s) + a->eps);
	}
}

static void lion_setup(struct tcase *tc)
{
	struct gpo_lion_args *a = &tc->a.lion;
	double lr = tu_rand(&tc->rng, 1e-4, 1e-2);

	update_setup(tc, 4);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc);
	a->lr = (float)lr;
	a->beta1 = (float)tu_rand(&tc->rng, 0.8, 0.95);
	a->beta2 = (float)tu_rand(&tc->rng, 0.9, 0.999);
	a->decay = (float)(1 - lr * tu_rand(&tc->rng, 0, 0.5));
	a->one_minus_beta1 = (float)(1.0 - a->beta1);
	a->one_minus_beta2 = (float)(1.0 - a->beta2);
}

static void lion_ref(struct tcase *tc)
{
	const struct gpo_lion_args *a = &tc->a.lion;
	double gm = gmul(tc, a->flags, 3);
	uint64_t i;

	want_in(&tc->b[0]);
	want_in(&tc->b[2]);
	if (skipped(tc, a->flags, 3))
		return;
	for (i = 0; i < tc->n; i++) {
		double g = f(&tc->b[1], i) * gm, m = f(&tc->b[2], i);
		double u = a->beta1 * m + a->one_minus_beta1 * g;

		/*
		 * Where the two terms cancel to within float rounding, the
		 * sign is the float sum's, as the kernels compute it (no
		 * contraction): float64 cannot say which way float goes
		 */
		if (fabs(u) <= 1e-6 * (fabs(a->beta1 * m) +
				       fabs(a->one_minus_beta1 * g))) {
			volatile float gf = (float)f(&tc->b[1], i) * (float)gm;
			volatile float t1 = (float)m * a->beta1;
			volatile float t2 = a->one_minus_beta1 * gf;

			u = t1 + t2;
		}

		tc->b[0].want[i] = f(&tc->b[0], i) * a->decay -
				   a->lr * (u > 0 ? 1 : u < 0 ? -1 : 0);
		tc->b[2].want[i] = a->beta2 * m + a->one_minus_beta2 * g;
	}
}

/* ---- half parameters ----------------------------------------------------- */

/*
 * An update op that comes in its parameters' dtype (ops.c's DT_PARAM),
 * launched in f16 or bf16, is one with a master copy: p the f32 master,
 * g half words, the half copy (p_half) written rounded to nearest even.
 * (Stochastic rounding is checked bit for bit on every device by
 * test_optim_master and test_lamb_half.)
 */
static int half_case(const struct tcase *tc)
{
	return tc->dtype == GPO_F16 || tc->dtype == GPO_BF16;
}

static uint32_t half_flags(const struct tcase *tc)
{
	if (!half_case(tc))
		return 0;
	return tc->dtype == GPO_F16 ? GPO_UPD_PARAM_F16 : GPO_UPD_PARAM_BF16;
}

static uint16_t to_half(const struct tcase *tc, float x)
{
	return tc->dtype == GPO_F16 ? gpo__f32_to_f16(x) : gpo__f32_to_bf16(x);
}

/* half element @e of a buffer of packed half words, as f32 */
static float half_at(const struct tcase *tc, const struct tbuf *b,
		     uint64_t e)
{
	uint16_t h = (uint16_t)(b->in[e / 2] >> (16 * (e % 2)));

	return tc->dtype == GPO_F16 ? gpo__f16_to_f32(h) : gpo__bf16_to_f32(h);
}

/* a view of @n half elements, as the kernels read it (quads of them) */
static void half_buf(struct tcase *tc, struct tbuf *b, uint64_t n)
{
	uint64_t i;

	tb_alloc(b, (n + 3) / 4 * 2);
	for (i = 0; i < b->n; i++)
		b->in[i] = (uint32_t)to_half(tc, (float)tu_rand(&tc->rng,
						    -1.0, 1.0)) |
			   (uint32_t)to_half(tc, (float)tu_rand(&tc->rng,
						    -1.0, 1.0)) << 16;
	b->exact = 1;
}

/* p_half's element @e is the half of @p; its word's other half stays */
static void half_want(const struct tcase *tc, struct tbuf *b, uint64_t e,
		      float p)
{
	uint32_t sh = 16 * (e % 2), old;

	old = isnan(b->want[e / 2]) ? b->in[e / 2] : (uint32_t)b->want[e / 2];
	b->want[e / 2] = (old & ~(0xffffu << sh)) |
			 (uint32_t)to_half(tc, p) << sh;
}

/* ---- lamb ----------------------------------------------------------------- */

/*
 * A flat state of a few tensors of odd sizes, one spanning several
 * blocks, and its block tables (either may be NULL: not kept); the
 * launched "group" is blocks [first_block, first_block + work).
 */
static void lamb_common(struct tcase *tc, struct tbuf *blocks_out,
			struct tbuf *tensors_out, uint32_t *nblocks)
{
	struct gpo_lamb_args *a = &tc->a.lamb;
	struct tbuf tmp_b = { 0 }, tmp_t = { 0 };
	struct tbuf *blocks = blocks_out ? blocks_out : &tmp_b;
	struct tbuf *tensors = tensors_out ? tensors_out : &tmp_t;
	uint32_t nt = (uint32_t)tu_rand(&tc->rng, 1, 4), t, b = 0;
	uint64_t sizes[4], off = 0, d;

	for (t = 0; t < nt; t++) {
		sizes[t] = (uint64_t)tu_rand(&tc->rng, 1, t == 0 ? 9000 : 300);
		if (tu_quick() && sizes[t] > 5000)
			sizes[t] = 4097;
		b += (uint32_t)((sizes[t] + GPO_LAMB_BLOCK - 1) / GPO_LAMB_BLOCK);
	}
	tb_alloc(blocks, 4 * b);
	tb_alloc(tensors, 2 * nt);
	blocks->exact = tensors->exact = 1;
	b = 0;
	for (t = 0; t < nt; t++) {
		tensors->in[2 * t] = b;
		tensors->in[2 * t + 1] = (uint32_t)((sizes[t] + GPO_LAMB_BLOCK - 1) /
						    GPO_LAMB_BLOCK);
		for (d = 0; d < sizes[t]; d += GPO_LAMB_BLOCK, b++) {
			blocks->in[4 * b] = t;
			blocks->in[4 * b + 1] = (uint32_t)(off + d);
			blocks->in[4 * b + 2] = (uint32_t)(sizes[t] - d <
							   GPO_LAMB_BLOCK ?
							   sizes[t] - d :
							   GPO_LAMB_BLOCK);
			blocks->in[4 * b + 3] = 0;
		}
		off += sizes[t];
	}
	*nblocks = b;
	tc->n = off;
	a->n = (uint32_t)off;
	a->ntensors = nt;
	/* launch a sub-range of the blocks: a parameter group */
	a->first_block = (uint32_t)tu_rand(&tc->rng, 0, b);
	tc->work = b - a->first_block;
	a->flags = upd_flags(tc) | half_flags(tc);
	a->lr = (float)tu_rand(&tc->rng, 1e-3, 0.1);
	a->beta1 = (float)tu_rand(&tc->rng, 0.8, 0.95);
	a->beta2 = (float)tu_rand(&tc->rng, 0.9, 0.999);
	a->eps = (float)tu_rand(&tc->rng, 1e-6, 1e-3);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->bc1 = (float)tu_rand(&tc->rng, 0.1, 1);
	a->bc2 = (float)tu_rand(&tc->rng, 0.01, 1);
	a->one_minus_beta1 = (float)(1.0 - a->beta1);
	a->one_minus_beta2 = (float)(1.0 - a->beta2);
	tb_free(&tmp_b);
	tb_free(&tmp_t);
}

/* @count state buffers from @first, random; buffer @v (exp_avg_sq) >= 0 */
static void lamb_state(struct tcase *tc, int first, int count, int v)
{
	uint64_t i;
	int k;

	for (k = first; k < first + count; k++)
		tb_random(tc, &tc->b[k], tc->n, -1, 1);
	for (i = 0; i < tc->n; i++)
		put(&tc->b[v], i, fabsf(f(&tc->b[v], i)));
}

static double lamb_r(const struct gpo_lamb_args *a, double m, double v,
		     double p)
{
	return (m / a->bc1) / (sqrt(v / a->bc2) + a->eps) + a->weight_decay * p;
}

static void lamb_prep_setup(struct tcase *tc)
{
	uint32_t nb;

	/* p g m v blocks partials scal */
	lamb_common(tc, &tc->b[4], NULL, &nb);
	lamb_state(tc, 0, 4, 3);
	if (half_case(tc)) {
		tb_free(&tc->b[1]);
		half_buf(tc, &tc->b[1], tc->n);
	}
	tb_out(&tc->b[5], 2 * nb);
	tb_scal(tc, &tc->b[6], !!(tc->oc->flags & SKIP_FLAG));
}

static void lamb_prep_ref(struct tcase *tc)
{
	const struct gpo_lamb_args *a = &tc->a.lamb;
	double gm = gmul(tc, a->flags, 6);
	uint64_t b, i;

	want_in(&tc->b[2]);
	want_in(&tc->b[3]);
	want_in(&tc->b[5]);
	if (skipped(tc, a->flags, 6))
		return;
	for (b = a->first_block; b < a->first_block + tc->work; b++) {
		uint32_t start = tc->b[4].in[4 * b + 1];
		uint32_t cnt = tc->b[4].in[4 * b + 2];
		double pn = 0, rn = 0;

		for (i = start; i < start + cnt; i++) {
			double p = f(&tc->b[0], i), g = gm *
				(half_case(tc) ? half_at(tc, &tc->b[1], i) :
						 f(&tc->b[1], i));
			double m = a->beta1 * f(&tc->b[2], i) +
				   a->one_minus_beta1 * g;
			double v = a->beta2 * f(&tc->b[3], i) +
				   a->one_minus_beta2 * g * g;
			double r = lamb_r(a, m, v, p);

			tc->b[2].want[i] = m;
			tc->b[3].want[i] = v;
			pn += p * p;
			rn += r * r;
		}
		tc->b[5].want[2 * b] = pn;
		tc->b[5].want[2 * b + 1] = rn;
	}
}

static void lamb_trust_setup(struct tcase *tc)
{
	uint32_t nb, i;

	/* tensors partials trust scal */
	lamb_common(tc, NULL, &tc->b[0], &nb);
	tc->work = tc->a.lamb.ntensors;
	tb_alloc(&tc->b[1], 2 * nb);
	for (i = 0; i < 2 * nb; i++)
		put(&tc->b[1], i, (float)tu_rand(&tc->rng, 0, 2));
	if (nb > 1)	/* a zero norm gives trust 1 */
		put(&tc->b[1], 0, 0.0f);
	tb_out(&tc->b[2], tc->a.lamb.ntensors);
	tb_scal(tc, &tc->b[3], !!(tc->oc->flags & SKIP_FLAG));
}

static void lamb_trust_ref(struct tcase *tc)
{
	const struct gpo_lamb_args *a = &tc->a.lamb;
	uint32_t t, b;

	want_in(&tc->b[2]);
	if (skipped(tc, a->flags, 3))
		return;
	for (t = 0; t < a->ntensors; t++) {
		double pn = 0, rn = 0;

		for (b = tc->b[0].in[2 * t];
		     b < tc->b[0].in[2 * t] + tc->b[0].in[2 * t + 1]; b++) {
			pn += f(&tc->b[1], 2 * b);
			rn += f(&tc->b[1], 2 * b + 1);
		}
		pn = sqrt(pn);
		rn = sqrt(rn);
		tc->b[2].want[t] = pn > 0 && rn > 0 ? pn / rn : 1.0;
	}
}

static void lamb_apply_setup(struct tcase *tc)
{
	uint32_t nb;

	/* p m v blocks trust scal p_half */
	lamb_common(tc, &tc->b[3], NULL, &nb);
	lamb_state(tc, 0, 3, 2);
	tb_random(tc, &tc->b[4], tc->a.lamb.ntensors, 0.1, 3);
	tb_scal(tc, &tc->b[5], !!(tc->oc->flags & SKIP_FLAG));
	/* the half parameters' copy (abi/lamb.h): f32 leaves it */
	if (half_case(tc)) {
		half_buf(tc, &tc->b[GPO_LAMB_BUF_HALF], tc->n);
		tc->b[0].exact = 1;
	} else {
		tb_random(tc, &tc->b[GPO_LAMB_BUF_HALF], tc->b[0].n, -1.0,
			  1.0);
		tc->b[GPO_LAMB_BUF_HALF].unused = 1;
	}
	tc->a.lamb.flags &= ~GPO_UPD_MAXIMIZE;
}

/*
 * The half modules' element, bit for bit: IEEE float operations in the
 * kernels' order (their / and sqrt are correctly rounded, nothing fused)
 */
static float lamb_apply_f(const struct gpo_lamb_args *a, float step, float m,
			  float v, float p)
{
	float r = (m / a->bc1) / (sqrtf(v / a->bc2) + a->eps) +
		  a->weight_decay * p;

	return p - step * r;
}

static void lamb_apply_ref(struct tcase *tc)
{
	const struct gpo_lamb_args *a = &tc->a.lamb;
	uint64_t b, i;

	/* exact (half modules): NaN, elements the group leaves stay as in */
	if (!half_case(tc))
		want_in(&tc->b[0]);
	if (skipped(tc, a->flags, 5))
		return;
	for (b = a->first_block; b < a->first_block + tc->work; b++) {
		uint32_t start = tc->b[3].in[4 * b + 1];
		uint32_t cnt = tc->b[3].in[4 * b + 2];
		double step = a->lr * f(&tc->b[4], tc->b[3].in[4 * b]);

		float fstep = a->lr * f(&tc->b[4], tc->b[3].in[4 * b]);

		for (i = start; i < start + cnt; i++) {
			float x;

			if (!half_case(tc)) {
				tc->b[0].want[i] = f(&tc->b[0], i) - step *
					lamb_r(a, f(&tc->b[1], i),
					       f(&tc->b[2], i),
					       f(&tc->b[0], i));
				continue;
			}
			x = lamb_apply_f(a, fstep, f(&tc->b[1], i),
					 f(&tc->b[2], i), f(&tc->b[0], i));
			tc->b[0].want[i] = wbits(x);
			half_want(tc, &tc->b[GPO_LAMB_BUF_HALF], i, x);
		}
	}
}

/* ---- objectives ----------------------------------------------------------- */

static void obj_setup(struct tcase *tc)
{
	struct gpo_objective_args *a = &tc->a.obj;

	a->groups = chunked_setup(tc, &a->n, &a->chunk);
	tb_out(&tc->b[1], tc->n);
	tb_out(&tc->b[2], 2 * a->groups);
}

static void obj_ref(struct tcase *tc)
{
	const struct gpo_objective_args *a = &tc->a.obj;
	int rosen = tc->oc->op == OP_OBJ_ROSENBROCK;
	uint32_t grp;
	uint64_t i, n = tc->n;

	tc->b[1].mag = calloc(n, sizeof(double));
	ck_assert(tc->b[1].mag);
	for (grp = 0; grp < a->groups; grp++) {
		uint64_t lo = (uint64_t)grp * a->chunk, hi = lo + a->chunk;
		double loss = 0;

		if (hi > n)
			hi = n;
		for (i = lo; i < hi; i++) {
			double x = f(&tc->b[0], i), g = 0;

			double mag = 0;

			if (!rosen) {
				double c = 1 + (double)(i % 7);

				g = c * (x - 1);
				mag = c * (fabs(x) + 1);
				loss += 0.5 * c * (x - 1) * (x - 1);
			} else {
				if (i + 1 < n) {
					double xn = f(&tc->b[0], i + 1);
					double t = xn - x * x;

					loss += 100 * t * t + (1 - x) * (1 - x);
					g += -400 * x * t - 2 * (1 - x);
					mag += 400 * fabs(x) * (fabs(xn) + x * x) +
					       2 * (1 + fabs(x));
				}
				if (i > 0) {
					double xp = f(&tc->b[0], i - 1);

					g += 200 * (x - xp * xp);
					mag += 200 * (fabs(x) + xp * xp);
				}
			}
			tc->b[1].want[i] = g;
			tc->b[1].mag[i] = mag;
		}
		tc->b[2].want[2 * grp] = loss;
		tc->b[2].want[2 * grp + 1] = 0;
	}
}

/* ---- the tensor ops (abi/tensor.h) ---------------------------------------- */

/*
 * A variant's bits in op_case.flags: the op's own flags as they are
 * (GPO_T_ACCUM, GPO_MM_TRANS_*, GPO_RED_IDX), V_* for the shapes and
 * inputs a setup draws, and the fn in the top bits.
 */
#define V_A		(1u << 16)
#define V_B		(1u << 17)
#define V_C		(1u << 18)
#define V_D		(1u << 19)
#define V_E		(1u << 20)
#define V_F		(1u << 21)
#define V_G		(1u << 22)
#define V_H		(1u << 23)
#define V_FN(fn)	((uint32_t)(fn) << 24)
#define FN_OF(tc)	(((tc)->oc->flags >> 24) & 0x7f)
#define HAS(tc, v)	(!!((tc)->oc->flags & (v)))
#define OP_FLAGS(tc)	((tc)->oc->flags & 0xffffu)

/* where an op's tensor starts in its buffer: odd, so nothing is aligned */
static uint32_t odd_off(struct tcase *tc)
{
	return 2 * (uint32_t)tu_rand(&tc->rng, 0, 6) + 1;
}

static uint64_t tail(struct tcase *tc)
{
	return (uint64_t)tu_rand(&tc->rng, 1, 5);
}

static uint32_t urand(struct tcase *tc, uint32_t lo, uint32_t hi)
{
	return (uint32_t)tu_rand(&tc->rng, lo, hi + 1);	/* [lo, hi] */
}

/* a random value in [lo, hi) with a random sign */
static double srand2(struct tcase *tc, double lo, double hi)
{
	double v = tu_rand(&tc->rng, lo, hi);

	return tu_rand(&tc->rng, 0, 1) < 0.5 ? -v : v;
}

/* an input of @len elements at an odd offset; its padding random too */
static uint32_t tb_in_at(struct tcase *tc, struct tbuf *b, uint64_t len,
			 double lo, double hi)
{
	uint32_t off = odd_off(tc);

	tb_random(tc, b, off + len + tail(tc), lo, hi);
	return off;
}

/* tb_in_at() at a multiple of 4 (GPO_EW_QUADS' inputs) */
static uint32_t tb_in_at4(struct tcase *tc, struct tbuf *b, uint64_t len,
			  double lo, double hi)
{
	uint32_t off = 4 * urand(tc, 1, 4);

	tb_random(tc, b, off + len + tail(tc), lo, hi);
	return off;
}

/* an output of @len elements at an odd offset, poisoned everywhere */
static uint32_t tb_out_at(struct tcase *tc, struct tbuf *b, uint64_t len)
{
	uint32_t off = odd_off(tc);

	tb_alloc(b, off + len + tail(tc));
	return off;
}

/* tb_out_at() at a multiple of 4 */
static uint32_t tb_out_at4(struct tcase *tc, struct tbuf *b, uint64_t len)
{
	uint32_t off = 4 * urand(tc, 1, 4);

	tb_alloc(b, off + len + tail(tc));
	return off;
}

/* an i32 buffer of @len words at an odd offset, random bits everywhere */
static uint32_t tb_int_at(struct tcase *tc, struct tbuf *b, uint64_t len)
{
	uint32_t off = odd_off(tc);
	uint64_t i;

	tb_alloc(b, off + len + tail(tc));
	for (i = 0; i < b->n; i++)
		b->in[i] = (uint32_t)tu_rand(&tc->rng, 0, 4294967296.0);
	b->exact = 1;
	return off;
}

/* with GPO_T_ACCUM, output element @i starts from a random value */
static void accum_start(struct tcase *tc, struct tbuf *b, uint64_t i)
{
	if (tc->oc->flags & GPO_T_ACCUM)
		put(b, i, (float)tu_rand(&tc->rng, -1, 1));
}

static void tb_mag(struct tbuf *b)
{
	b->mag = calloc(b->n + 1, sizeof(double));
	ck_assert(b->mag);
}

/* element @i of @b must be want[i] exactly (a masked output's 0) */
static void want_exact(struct tbuf *b, uint64_t i)
{
	if (!b->exact_at) {
		b->exact_at = calloc(b->n + 1, 1);
		ck_assert(b->exact_at);
	}
	b->exact_at[i] = 1;
}

/*
 * The expected value of output element @i: the op's result @r (whose
 * terms are of size @mag), added to the element's old value with
 * GPO_T_ACCUM.
 */
static void want_res(struct tcase *tc, struct tbuf *b, uint64_t i, double r,
		     double mag)
{
	double w = r;

	if (tc->oc->flags & GPO_T_ACCUM) {
		w += f(b, i);
		mag += fabs(f(b, i));
	}
	b->want[i] = isnan(w) ? MUSTNAN : w;
	if (b->mag)
		b->mag[i] = mag;
}

/* the inputs as doubles, for the references below */
static double *tb_d(const struct tbuf *b)
{
	double *d = malloc((b->n + 1) * sizeof(double));
	uint64_t i;

	ck_assert(d);
	for (i = 0; i < b->n; i++)
		d[i] = f(b, i);
	return d;
}

static int32_t tb_i(const struct tbuf *b, uint64_t i)
{
	return (int32_t)b->in[i];
}

/*
 * The float64 references, on plain arrays so that the finite-difference
 * test below can check the backward ones against the forward ones.
 */

static double phi_cdf(double x)
{
	return 0.5 * (1 + erf(x / sqrt(2.0)));
}

#define GELU_K	0.7978845608028654	/* sqrt(2 / pi) */

static double un_f(uint32_t fn, double x)
{
	switch (fn) {
	case GPO_EW_COPY:	return x;
	case GPO_EW_RELU:	return x > 0 ? x : 0;
	case GPO_EW_GELU:	return x * phi_cdf(x);
	case GPO_EW_GELU_TANH:
		return 0.5 * x * (1 + tanh(GELU_K * (x + 0.044715 * x * x * x)));
	case GPO_EW_TANH:	return tanh(x);
	case GPO_EW_SIGMOID:	return 1 / (1 + exp(-x));
	case GPO_EW_EXP:	return exp(x);
	case GPO_EW_LOG:	return log(x);
	case GPO_EW_SQUARE:	return x * x;
	case GPO_EW_SQRT:	return sqrt(x);
	}
	ck_abort_msg("unary fn %u", fn);
	return 0;
}

static double un_df(uint32_t fn, double x)
{
	double t, s;

	switch (fn) {
	case GPO_EW_COPY:	return 1;
	case GPO_EW_RELU:	return x > 0 ? 1 : 0;
	case GPO_EW_GELU:
		return phi_cdf(x) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
	case GPO_EW_GELU_TANH:
		t = tanh(GELU_K * (x + 0.044715 * x * x * x));
		return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_K *
		       (1 + 3 * 0.044715 * x * x);
	case GPO_EW_TANH:
		t = tanh(x);
		return 1 - t * t;
	case GPO_EW_SIGMOID:
		s = 1 / (1 + exp(-x));
		return s * (1 - s);
	case GPO_EW_EXP:	return exp(x);
	case GPO_EW_LOG:	return 1 / x;
	case GPO_EW_SQUARE:	return 2 * x;
	case GPO_EW_SQRT:	return 0.5 / sqrt(x);
	}
	ck_abort_msg("unary fn %u", fn);
	return 0;
}

static double bin_f(uint32_t fn, double a, double b)
{
	switch (fn) {
	case GPO_EW_ADD:	return a + b;
	case GPO_EW_SUB:	return a - b;
	case GPO_EW_MUL:	return a * b;
	case GPO_EW_DIV:	return a / b;
	}
	ck_abort_msg("binary fn %u", fn);
	return 0;
}

/* C_z (i, j) = alpha * sum_p op(A)(i, p) op(B)(p, j), into c[] (and mag[]) */
static void mm_d(const struct gpo_matmul_args *a, const double *A,
		 const double *B, double *C, double *mag)
{
	uint32_t z, i, j, p;

	for (z = 0; z < a->batch; z++) {
		const double *az = A + a->off_a + (uint64_t)z * a->bsa;
		const double *bz = B + a->off_b + (uint64_t)z * a->bsb;

		for (i = 0; i < a->m; i++)
			for (j = 0; j < a->n; j++) {
				uint64_t o = a->off_c + (uint64_t)z * a->bsc +
					     (uint64_t)i * a->ldc + j;
				double s = 0, m = 0;

				for (p = 0; p < a->k; p++) {
					double x = a->flags & GPO_MM_TRANS_A ?
						   az[(uint64_t)p * a->lda + i] :
						   az[(uint64_t)i * a->lda + p];
					double y = a->flags & GPO_MM_TRANS_B ?
						   bz[(uint64_t)j * a->ldb + p] :
						   bz[(uint64_t)p * a->ldb + j];

					s += x * y;
					m += fabs(x * y);
				}
				C[o] = a->alpha * s;
				if (mag)
					mag[o] = fabs(a->alpha) * m;
			}
	}
}

/* y(o, i) = alpha * sum or max over r; idx (may be NULL) the argmax */
static void red_d(const struct gpo_reduce_args *a, const double *x, double *y,
		  double *idx, double *mag)
{
	uint32_t o, i, r;

	for (o = 0; o < a->outer; o++)
		for (i = 0; i < a->inner; i++) {
			uint64_t yo = (uint64_t)o * a->inner + i;
			double s = 0, m = 0, best = -INFINITY;
			uint32_t bi = 0;

			for (r = 0; r < a->len; r++) {
				double v = x[a->off_x + ((uint64_t)o * a->len + r) *
					     a->inner + i];

				s += v;
				m += fabs(v);
				/* NaN is larger than everything; first wins */
				if (!isnan(best) && (isnan(v) || v > best)) {
					best = v;
					bi = r;
				}
			}
			y[a->off_y + yo] = a->alpha * (a->fn == GPO_RED_SUM ?
						       s : best);
			if (mag)
				mag[a->off_y + yo] = fabs(a->alpha) * m;
			if (idx)
				idx[a->off_idx + yo] = bi;
		}
}

static void red_bwd_d(const struct gpo_reduce_args *a, const double *dy,
		      const double *idx, double *dx)
{
	uint32_t o, i, r;

	for (o = 0; o < a->outer; o++)
		for (r = 0; r < a->len; r++)
			for (i = 0; i < a->inner; i++) {
				uint64_t yo = (uint64_t)o * a->inner + i;
				double g = a->alpha * dy[a->off_y + yo];

				if (a->fn == GPO_RED_MAX &&
				    idx[a->off_idx + yo] != r)
					g = 0;
				dx[a->off_x + ((uint64_t)o * a->len + r) *
				   a->inner + i] = g;
			}
}

static void sm_d(uint32_t fn, const double *x, uint32_t len, double *y)
{
	double m = -INFINITY, s = 0;
	uint32_t j;

	for (j = 0; j < len; j++)
		m = fmax(m, x[j]);
	for (j = 0; j < len; j++)
		s += exp(x[j] - m);
	for (j = 0; j < len; j++)
		y[j] = fn == GPO_SM_SOFTMAX ? exp(x[j] - m) / s :
		       x[j] - m - log(s);
}

static void sm_bwd_d(uint32_t fn, const double *y, const double *dy,
		     uint32_t len, double alpha, double *dx, double *mag)
{
	double s = 0, sa = 0;
	uint32_t j;

	for (j = 0; j < len; j++) {
		s += fn == GPO_SM_SOFTMAX ? dy[j] * y[j] : dy[j];
		sa += fabs(fn == GPO_SM_SOFTMAX ? dy[j] * y[j] : dy[j]);
	}
	for (j = 0; j < len; j++) {
		if (fn == GPO_SM_SOFTMAX) {
			dx[j] = alpha * y[j] * (dy[j] - s);
			if (mag)
				mag[j] = fabs(alpha * y[j]) * (fabs(dy[j]) + sa);
		} else {
			dx[j] = alpha * (dy[j] - exp(y[j]) * s);
			if (mag)
				mag[j] = fabs(alpha) * (fabs(dy[j]) +
							exp(y[j]) * sa);
		}
	}
}

static double xent_d(const double *x, uint32_t len, int32_t lab)
{
	double m = -INFINITY, s = 0;
	uint32_t j;

	if (lab < 0 || (uint32_t)lab >= len)
		return NAN;
	for (j = 0; j < len; j++)
		m = fmax(m, x[j]);
	for (j = 0; j < len; j++)
		s += exp(x[j] - m);
	return log(s) + m - x[lab];
}

/* dx_j = scale * (softmax(x)_j - (j == lab)) */
static void xent_bwd_d(const double *x, uint32_t len, int32_t lab,
		       double scale, double *dx)
{
	uint32_t j;

	sm_d(GPO_SM_SOFTMAX, x, len, dx);
	for (j = 0; j < len; j++)
		dx[j] = scale * (dx[j] - ((int32_t)j == lab));
}

/* ---- matmul ---- */

#define MM_BATCH	V_A
#define MM_PAD		V_B
#define MM_ODD		V_C	/* m 67, n 131, k 45 */
#define MM_TINY		V_D	/* 1 to 3 */
#define MM_K0		V_E
#define MM_WIDE		V_F	/* m, n 129 to 400: several big tiles */
/* m 1100 to 1300, n 1 to 137: tall and narrow (OpenCL's matmul_big16) */
#define MM_TALL		V_G
/*
 * matmul_coop's whole products (abi/matmul.h's GPO_MM_WHOLE): m, n and k
 * multiples of its tile and step, every offset, ld and batch stride a
 * multiple of 8 elements (C's of 4)
 */
#define MM_WHOLE	V_H

/*
 * A stored matrix of @rows x @cols with row stride @ld, @batch of them;
 * with @vec (GPO_MM_VEC_*), its offset, ld and batch stride multiples of
 * 4 (cols need not be: the kernels' 4-wide reads must stop at the edge).
 */
static uint32_t mm_operand(struct tcase *tc, struct tbuf *b, uint32_t rows,
			   uint32_t cols, int vec, uint32_t *ld, uint32_t *bs)
{
	uint32_t batch = tc->a.mm.batch, off;
	uint64_t per, len;

	uint32_t q = HAS(tc, MM_WHOLE) ? 8 : 4;

	*ld = cols + (HAS(tc, MM_PAD) ? urand(tc, 1, 5) : 0);
	if (vec || HAS(tc, MM_WHOLE))
		*ld = (*ld + q - 1) & ~(q - 1);
	per = (uint64_t)rows * *ld;
	*bs = (uint32_t)per + (batch > 1 ? urand(tc, 0, 7) : urand(tc, 0, 99));
	if (vec || HAS(tc, MM_WHOLE))
		*bs = (*bs + q - 1) & ~(q - 1);
	len = (uint64_t)(batch - 1) * *bs + per;
	if (!vec && !HAS(tc, MM_WHOLE))
		return tb_in_at(tc, b, len, -1, 1);
	off = odd_off(tc) & ~(q - 1);
	tb_random(tc, b, off + len + tail(tc), -1, 1);
	return off;
}

/*
 * An operand's floats as binary16 (GPO_MM_F16_*): element e of in[]
 * rounded into halfword e, little-endian, two a word. Going up, halfword
 * e never overwrites a word not yet read. The words past half the
 * buffer keep their floats: the kernel reads none of them.
 */
static void mm_halve(struct tbuf *b)
{
	uint64_t e;

	for (e = 0; e < b->n; e++) {
		float x;
		uint16_t h;

		memcpy(&x, &b->in[e], 4);
		h = gpo__f32_to_f16(x);
		memcpy((unsigned char *)b->in + 2 * e, &h, 2);
	}
}

/*
 * The values the kernel multiplies: binary16 halfwords (@f16), or the
 * floats, rounded to binary16 where @round
 */
static double *mm_vals(const struct tbuf *b, int f16, int round)
{
	double *d = malloc((b->n + 1) * sizeof(double));
	uint64_t e;

	ck_assert(d);
	for (e = 0; e < b->n; e++) {
		uint16_t h;
		float x;

		if (f16) {
			memcpy(&h, (const unsigned char *)b->in + 2 * e, 2);
			d[e] = gpo__f16_to_f32(h);
			continue;
		}
		memcpy(&x, &b->in[e], 4);
		d[e] = round ? gpo__f16_to_f32(gpo__f32_to_f16(x)) : x;
	}
	return d;
}

static void matmul_setup(struct tcase *tc)
{
	struct gpo_matmul_args *a = &tc->a.mm;
	uint32_t z, i, j, f = OP_FLAGS(tc);
	uint64_t per;
	uint32_t tile = tc->oc->op == OP_MATMUL_BIG ? GPO_MM_TILE_BIG :
			tc->oc->op == OP_MATMUL_COOP ? GPO_MM_COOP_TILE_N(f) :
			GPO_MM_TILE;
	uint32_t tile_m = tc->oc->op == OP_MATMUL_COOP ? GPO_MM_COOP_TILE_M(f) :
			  tile;
	int va, vb;

	a->flags = OP_FLAGS(tc);
	if (HAS(tc, MM_WIDE)) {
		a->m = urand(tc, 129, 400);
		a->n = urand(tc, 129, 400);
		a->k = urand(tc, 1, 70);
	} else if (HAS(tc, MM_TALL)) {
		a->m = urand(tc, 1100, 1300);
		a->n = urand(tc, 1, 137);
		a->k = urand(tc, 1, 70);
	} else if (HAS(tc, MM_ODD)) {
		a->m = 67;
		a->n = 131;
		a->k = 45;
	} else if (HAS(tc, MM_TINY)) {
		a->m = urand(tc, 1, 3);
		a->n = urand(tc, 1, 3);
		a->k = urand(tc, 1, 3);
	} else if (HAS(tc, MM_WHOLE)) {
		a->m = tile_m * urand(tc, 1, 2);
		a->n = tile * urand(tc, 1, 3);
		a->k = GPO_MM_COOP_WHOLE_K(f) * urand(tc, 1, 4);
	} else {
		a->m = urand(tc, 1, 150);
		a->n = urand(tc, 1, 150);
		a->k = urand(tc, 1, 100);
	}
	if (HAS(tc, MM_K0))
		a->k = 0;
	a->batch = HAS(tc, MM_BATCH) ? urand(tc, 2, 4) : 1;
	a->alpha = (float)srand2(tc, 0.5, 2);
	a->tiles_m = (a->m + tile_m - 1) / tile_m;
	a->tiles_n = (a->n + tile - 1) / tile;
	tc->work = (uint64_t)a->batch * a->tiles_m * a->tiles_n;
	tc->n = (uint64_t)a->m * a->n * a->batch;
	va = !!(a->flags & GPO_MM_VEC_A);
	vb = !!(a->flags & GPO_MM_VEC_B);
	if (a->flags & GPO_MM_TRANS_A)
		a->off_a = mm_operand(tc, &tc->b[0], a->k, a->m, va, &a->lda,
				      &a->bsa);
	else
		a->off_a = mm_operand(tc, &tc->b[0], a->m, a->k, va, &a->lda,
				      &a->bsa);
	if (a->flags & GPO_MM_TRANS_B)
		a->off_b = mm_operand(tc, &tc->b[1], a->n, a->k, vb, &a->ldb,
				      &a->bsb);
	else
		a->off_b = mm_operand(tc, &tc->b[1], a->k, a->n, vb, &a->ldb,
				      &a->bsb);
	if (a->flags & GPO_MM_F16_A)
		mm_halve(&tc->b[0]);
	if (a->flags & GPO_MM_F16_B)
		mm_halve(&tc->b[1]);
	a->ldc = a->n + (HAS(tc, MM_PAD) ? urand(tc, 1, 5) : 0);
	if (HAS(tc, MM_WHOLE))
		a->ldc = (a->ldc + 3) & ~3u;
	per = (uint64_t)a->m * a->ldc;
	a->bsc = (uint32_t)per + (a->batch > 1 ? urand(tc, 0, 7) : 0);
	if (HAS(tc, MM_WHOLE)) {
		a->bsc = (a->bsc + 3) & ~3u;
		a->off_c = tb_out_at4(tc, &tc->b[2],
				      (uint64_t)(a->batch - 1) * a->bsc + per);
	} else {
		a->off_c = tb_out_at(tc, &tc->b[2],
				     (uint64_t)(a->batch - 1) * a->bsc + per);
	}
	for (z = 0; z < a->batch; z++)
		for (i = 0; i < a->m; i++)
			for (j = 0; j < a->n; j++)
				accum_start(tc, &tc->b[2], a->off_c +
					    (uint64_t)z * a->bsc +
					    (uint64_t)i * a->ldc + j);
}

static void matmul_ref(struct tcase *tc)
{
	const struct gpo_matmul_args *a = &tc->a.mm;
	/* matmul_coop rounds f32 operands whatever the flags */
	int rnd = !!(a->flags & GPO_MM_ROUND) || tc->oc->op == OP_MATMUL_COOP;
	double *A = mm_vals(&tc->b[0], !!(a->flags & GPO_MM_F16_A), rnd);
	double *B = mm_vals(&tc->b[1], !!(a->flags & GPO_MM_F16_B), rnd);
	double *C = calloc(tc->b[2].n + 1, sizeof(double));
	double *M = calloc(tc->b[2].n + 1, sizeof(double));
	uint32_t z, i, j;

	ck_assert(C && M);
	tb_mag(&tc->b[2]);
	mm_d(a, A, B, C, M);
	for (z = 0; z < a->batch; z++)
		for (i = 0; i < a->m; i++)
			for (j = 0; j < a->n; j++) {
				uint64_t o = a->off_c + (uint64_t)z * a->bsc +
					     (uint64_t)i * a->ldc + j;

				want_res(tc, &tc->b[2], o, C[o], M[o]);
			}
	free(A);
	free(B);
	free(C);
	free(M);
}

/* ---- element-wise ---- */

#define EW_TRANSP	V_A	/* unary: x read transposed */
#define EW_BCAST	V_B	/* unary: x a row broadcast over rows */
#define EW_BIAS		V_A	/* binary: b a [cols] row, broadcast */
#define EW_COL		V_B	/* binary: a a [rows, 1] column, broadcast */
#define DO_HALF		V_C	/* dropout: p = 0.5, else 0.1 */
#define EW_QUADS	V_D	/* GPO_EW_QUADS: rows of 4k, offsets of 4k */

static void contiguous(const uint32_t *shape, uint32_t *s)
{
	int d;

	s[GPO_T_DIMS - 1] = 1;
	for (d = GPO_T_DIMS - 2; d >= 0; d--)
		s[d] = s[d + 1] * shape[d + 1];
}

/* elements a view with strides @s over @shape reaches, from its offset */
static uint64_t extent(const uint32_t *shape, const uint32_t *s)
{
	uint64_t e = 1;
	int d;

	for (d = 0; d < GPO_T_DIMS; d++)
		e += (uint64_t)(shape[d] - 1) * s[d];
	return e;
}

/* a 4-d shape, or a 2-d one [1, 1, rows, cols] */
static void ew_shape(struct tcase *tc, struct gpo_ew_args *a, int two_d)
{
	a->shape[0] = two_d ? 1 : urand(tc, 1, 3);
	a->shape[1] = two_d ? 1 : urand(tc, 1, 4);
	a->shape[2] = urand(tc, 1, two_d ? 70 : 30);
	a->shape[3] = urand(tc, 1, two_d ? 90 : 60);
	a->n = a->shape[0] * a->shape[1] * a->shape[2] * a->shape[3];
	tc->n = a->n;
	/* some launches fewer groups than the elements need: grid-stride */
	a->groups = urand(tc, 1, (a->n + GPO_WG_SIZE - 1) / GPO_WG_SIZE + 1);
	tc->work = a->groups;
	a->alpha = (float)srand2(tc, 0.5, 2);
	a->flags = OP_FLAGS(tc);
	if (HAS(tc, EW_QUADS)) {	/* a grid of quads (abi/ew.h) */
		a->shape[3] = 4 * ((a->shape[3] + 3) / 4);
		a->n = a->shape[0] * a->shape[1] * a->shape[2] * a->shape[3];
		tc->n = a->n;
		a->groups = urand(tc, 1, (a->n / 4 + GPO_WG_SIZE - 1) /
				  GPO_WG_SIZE + 1);
		tc->work = a->groups;
		a->flags |= GPO_EW_QUADS;
	}
}

/* an input value in the domain of unary fn @fn */
static double un_input(struct tcase *tc, uint32_t fn)
{
	switch (fn) {
	case GPO_EW_LOG:
	case GPO_EW_SQRT:
		return tu_rand(&tc->rng, 0.05, 5);
	case GPO_EW_RELU:
		/* around 0, and 0 itself */
		return tu_rand(&tc->rng, 0, 1) < 0.1 ? 0 : tu_rand(&tc->rng, -1, 1);
	case GPO_EW_GELU:
	case GPO_EW_GELU_TANH:
	case GPO_EW_TANH:
	case GPO_EW_SIGMOID:
		/* large |x| too: must saturate, not overflow */
		return tu_rand(&tc->rng, 0, 1) < 0.3 ? srand2(tc, 10, 90) :
		       tu_rand(&tc->rng, -4, 4);
	case GPO_EW_EXP:
	case GPO_EW_SQUARE:
		return tu_rand(&tc->rng, -10, 10);
	}
	return tu_rand(&tc->rng, -100, 100);
}

/*
 * DROPOUT's fields as the engine sets them: a key, the stream of a step
 * (its high word matters too) and a site anywhere in 32 bits, thresh of
 * p = 0.1 or 0.5, and alpha = 1 / (1 - p)
 */
static void dropout_setup(struct tcase *tc, struct gpo_ew_args *a)
{
	double p = HAS(tc, DO_HALF) ? 0.5 : 0.1;
	uint64_t stream = GPO_RNG_STREAM(GPO_RNG_DROPOUT,
					 tu_rand(&tc->rng, 0, 1e12));

	a->key_lo = (uint32_t)tu_rand(&tc->rng, 0, 4294967296.0);
	a->key_hi = (uint32_t)tu_rand(&tc->rng, 0, 4294967296.0);
	a->stream_lo = (uint32_t)stream;
	a->stream_hi = (uint32_t)(stream >> 32);
	a->site = (uint32_t)tu_rand(&tc->rng, 0, 4294967296.0);
	a->thresh = (uint32_t)llround(p * 4294967296.0);
	a->alpha = (float)(1 / (1 - p));
}

/* is output element @i kept? gpo__philox() is the definition */
static int dropout_keep(const struct gpo_ew_args *a, uint64_t i)
{
	uint32_t w[4];

	gpo__philox(a->key_lo | (uint64_t)a->key_hi << 32,
		    a->stream_lo | (uint64_t)a->stream_hi << 32,
		    (uint64_t)a->site << 32 | i >> 2, w);
	return w[i & 3] >= a->thresh;
}

/*
 * out[off_y + i] (+)= alpha * in[off + i] where kept; where dropped the
 * output must be exactly 0 (or exactly what it held, with GPO_T_ACCUM).
 * The mask must also look like one of p: a binomial count of kept
 * elements within 6 sigma.
 */
static void dropout_ref(struct tcase *tc, const struct tbuf *in,
			uint32_t off, struct tbuf *out)
{
	const struct gpo_ew_args *a = &tc->a.ew;
	double p = a->thresh / 4294967296.0, n = a->n;
	uint64_t i, kept = 0;

	for (i = 0; i < a->n; i++) {
		int keep = dropout_keep(a, i);

		kept += keep;
		want_res(tc, out, a->off_y + i,
			 keep ? a->alpha * (double)f(in, off + i) : 0, 0);
		if (!keep)
			want_exact(out, a->off_y + i);
	}
	ck_assert_msg(fabs(kept - n * (1 - p)) <= 6 * sqrt(n * p * (1 - p)) + 1,
		      "dropout p %g: %llu of %llu kept", p,
		      (unsigned long long)kept, (unsigned long long)a->n);
}

static void unary_setup(struct tcase *tc)
{
	struct gpo_ew_args *a = &tc->a.ew;
	uint32_t fn = FN_OF(tc);
	uint64_t i;

	ew_shape(tc, a, HAS(tc, EW_TRANSP | EW_BCAST));
	a->fn = fn;
	contiguous(a->shape, a->sa);
	if (HAS(tc, EW_TRANSP)) {	/* x is [cols, rows] */
		a->sa[2] = 1;
		a->sa[3] = a->shape[2];
	} else if (HAS(tc, EW_BCAST)) {	/* x is one row */
		a->sa[2] = 0;
	}
	a->off_a = (HAS(tc, EW_QUADS) ? tb_in_at4 : tb_in_at)(tc, &tc->b[0],
			extent(a->shape, a->sa), -1, 1);
	for (i = 0; i < tc->b[0].n; i++)
		put(&tc->b[0], i, (float)un_input(tc, fn));
	a->off_y = (HAS(tc, EW_QUADS) ? tb_out_at4 : tb_out_at)(tc, &tc->b[1],
								a->n);
	for (i = 0; i < a->n; i++)
		accum_start(tc, &tc->b[1], a->off_y + i);
	/* a buffer the op does not take stays untouched: b's fields unused */
	a->off_b = 0xdeadbeef;
	if (fn == GPO_EW_DROPOUT) {
		dropout_setup(tc, a);
		/* a dropped NaN is 0 (a select, not x * 0); a kept one NaN */
		for (i = 0; i < tc->b[0].n; i++)
			if (tu_rand(&tc->rng, 0, 1) < 0.02)
				put(&tc->b[0], i, NAN);
	}
}

/* the input index of output element @i of a view with strides @s */
static uint64_t ew_index(const struct gpo_ew_args *a, const uint32_t *s,
			 uint32_t off, uint64_t i)
{
	uint64_t idx = off;
	int d;

	for (d = GPO_T_DIMS - 1; d >= 0; d--) {
		idx += (i % a->shape[d]) * s[d];
		i /= a->shape[d];
	}
	return idx;
}

static void unary_ref(struct tcase *tc)
{
	const struct gpo_ew_args *a = &tc->a.ew;
	uint64_t i;

	if (a->fn == GPO_EW_DROPOUT) {
		dropout_ref(tc, &tc->b[0], a->off_a, &tc->b[1]);
		return;
	}
	for (i = 0; i < a->n; i++) {
		double x = f(&tc->b[0], ew_index(a, a->sa, a->off_a, i));

		want_res(tc, &tc->b[1], a->off_y + i,
			 a->alpha * un_f(a->fn, x), 0);
	}
}

static void binary_setup(struct tcase *tc)
{
	struct gpo_ew_args *a = &tc->a.ew;
	uint64_t i;

	ew_shape(tc, a, HAS(tc, EW_BIAS | EW_COL));
	a->fn = FN_OF(tc);
	contiguous(a->shape, a->sa);
	contiguous(a->shape, a->sb);
	if (HAS(tc, EW_BIAS))
		a->sb[2] = 0;
	if (HAS(tc, EW_COL))
		a->sa[3] = 0, a->sa[2] = 1;
	a->off_a = (HAS(tc, EW_QUADS) ? tb_in_at4 : tb_in_at)(tc, &tc->b[0],
			extent(a->shape, a->sa), -2, 2);
	a->off_b = (HAS(tc, EW_QUADS) ? tb_in_at4 : tb_in_at)(tc, &tc->b[1],
			extent(a->shape, a->sb), -2, 2);
	if (a->fn == GPO_EW_DIV)	/* denominators away from 0 */
		for (i = 0; i < tc->b[1].n; i++)
			put(&tc->b[1], i, (float)srand2(tc, 0.5, 2));
	a->off_y = (HAS(tc, EW_QUADS) ? tb_out_at4 : tb_out_at)(tc, &tc->b[2],
								a->n);
	for (i = 0; i < a->n; i++)
		accum_start(tc, &tc->b[2], a->off_y + i);
}

static void binary_ref(struct tcase *tc)
{
	const struct gpo_ew_args *a = &tc->a.ew;
	uint64_t i;

	for (i = 0; i < a->n; i++) {
		double x = f(&tc->b[0], ew_index(a, a->sa, a->off_a, i));
		double y = f(&tc->b[1], ew_index(a, a->sb, a->off_b, i));

		want_res(tc, &tc->b[2], a->off_y + i,
			 a->alpha * bin_f(a->fn, x, y), 0);
	}
}

static void unary_bwd_setup(struct tcase *tc)
{
	struct gpo_ew_args *a = &tc->a.ew;
	uint64_t i;

	ew_shape(tc, a, 0);
	a->fn = FN_OF(tc);
	contiguous(a->shape, a->sa);
	contiguous(a->shape, a->sb);
	a->off_a = (HAS(tc, EW_QUADS) ? tb_in_at4 : tb_in_at)(tc, &tc->b[0],
							      a->n, -1, 1);
	for (i = 0; i < tc->b[0].n; i++)
		put(&tc->b[0], i, (float)un_input(tc, a->fn));
	a->off_b = (HAS(tc, EW_QUADS) ? tb_in_at4 : tb_in_at)(tc, &tc->b[1],
							      a->n, -1, 1);
	a->off_y = (HAS(tc, EW_QUADS) ? tb_out_at4 : tb_out_at)(tc, &tc->b[2],
								a->n);
	for (i = 0; i < a->n; i++)
		accum_start(tc, &tc->b[2], a->off_y + i);
	if (a->fn == GPO_EW_DROPOUT) {
		dropout_setup(tc, a);
		/* x is not read: NaN there would show in dx if it were */
		for (i = 0; i < tc->b[0].n; i++)
			put(&tc->b[0], i, NAN);
	}
}

static void unary_bwd_ref(struct tcase *tc)
{
	const struct gpo_ew_args *a = &tc->a.ew;
	uint64_t i;

	if (a->fn == GPO_EW_DROPOUT) {
		dropout_ref(tc, &tc->b[1], a->off_b, &tc->b[2]);
		return;
	}
	for (i = 0; i < a->n; i++) {
		double x = f(&tc->b[0], a->off_a + i);
		double dy = f(&tc->b[1], a->off_b + i);

		want_res(tc, &tc->b[2], a->off_y + i,
			 a->alpha * dy * un_df(a->fn, x), 0);
	}
}

/* ---- reduce ---- */

#define RED_INNER	V_A	/* inner > 1 */
#define RED_MEAN	V_B	/* alpha = 1 / len */
#define RED_TIES	V_C	/* inputs from {-1, 0, 1} */
#define RED_NAN		V_D	/* a NaN in one slice */
#define RED_LEN0	V_E

static void reduce_shape(struct tcase *tc, struct gpo_reduce_args *a)
{
	a->fn = FN_OF(tc);
	a->flags = OP_FLAGS(tc);
	a->outer = urand(tc, 1, 40);
	a->len = HAS(tc, RED_LEN0) ? 0 : urand(tc, 1, 300);
	a->inner = HAS(tc, RED_INNER) ? urand(tc, 2, 20) : 1;
	a->n = a->outer * a->inner;
	tc->n = a->n;
	if (a->inner == 1)	/* a group per output, fewer at times */
		a->groups = urand(tc, 1, a->outer);
	else
		a->groups = urand(tc, 1, (a->n + GPO_WG_SIZE - 1) /
				  GPO_WG_SIZE + 1);
	tc->work = a->groups;
	if (HAS(tc, RED_MEAN))
		a->alpha = 1.0f / (float)a->len;
	else if (a->fn == GPO_RED_MAX)
		a->alpha = (float)tu_rand(&tc->rng, 0.5, 2);
	else
		a->alpha = (float)srand2(tc, 0.5, 2);
}

static void reduce_setup(struct tcase *tc)
{
	struct gpo_reduce_args *a = &tc->a.reduce;
	uint64_t i, nx;

	reduce_shape(tc, a);
	nx = (uint64_t)a->outer * a->len * a->inner;
	a->off_x = tb_in_at(tc, &tc->b[0], nx, -1, 1);
	if (HAS(tc, RED_TIES))
		for (i = 0; i < tc->b[0].n; i++)
			put(&tc->b[0], i, (float)(int)tu_rand(&tc->rng, -1, 2));
	if (HAS(tc, RED_NAN) && nx)
		put(&tc->b[0], a->off_x + (uint64_t)tu_rand(&tc->rng, 0, nx),
		    NAN);
	a->off_y = tb_out_at(tc, &tc->b[1], a->n);
	for (i = 0; i < a->n; i++)
		accum_start(tc, &tc->b[1], a->off_y + i);
	a->off_idx = tb_out_at(tc, &tc->b[2], a->n);
	tc->b[2].exact = 1;
	tc->b[2].unused = !(a->flags & GPO_RED_IDX);
}

static void reduce_ref(struct tcase *tc)
{
	const struct gpo_reduce_args *a = &tc->a.reduce;
	double *x = tb_d(&tc->b[0]);
	double *y = calloc(tc->b[1].n + 1, sizeof(double));
	double *m = calloc(tc->b[1].n + 1, sizeof(double));
	double *idx = calloc(tc->b[2].n + 1, sizeof(double));
	uint64_t i;

	ck_assert(y && m && idx);
	tb_mag(&tc->b[1]);
	red_d(a, x, y, idx, m);
	for (i = 0; i < a->n; i++) {
		/* output (i / inner, i % inner): transposed, elsewhere */
		uint64_t at = a->flags & GPO_RED_TOUT ?
			      i % a->inner * a->outer + i / a->inner : i;

		want_res(tc, &tc->b[1], a->off_y + at, y[a->off_y + i],
			 m[a->off_y + i]);
		if (a->flags & GPO_RED_IDX)
			tc->b[2].want[a->off_idx + i] = idx[a->off_idx + i];
	}
	free(x);
	free(y);
	free(m);
	free(idx);
}

static void reduce_bwd_setup(struct tcase *tc)
{
	struct gpo_reduce_args *a = &tc->a.reduce;
	uint64_t i, nx;

	reduce_shape(tc, a);
	nx = (uint64_t)a->outer * a->len * a->inner;
	/* the grid is over the x elements */
	a->n = (uint32_t)nx;
	tc->n = nx;
	a->groups = urand(tc, 1, (a->n + GPO_WG_SIZE - 1) / GPO_WG_SIZE + 1);
	tc->work = a->groups;
	a->off_y = tb_in_at(tc, &tc->b[0], (uint64_t)a->outer * a->inner, -1, 1);
	a->off_idx = tb_int_at(tc, &tc->b[1], (uint64_t)a->outer * a->inner);
	for (i = 0; i < tc->b[1].n; i++)
		tc->b[1].in[i] = (uint32_t)tu_rand(&tc->rng, 0, a->len);
	tc->b[1].unused = a->fn != GPO_RED_MAX;
	a->off_x = tb_out_at(tc, &tc->b[2], nx);
	for (i = 0; i < nx; i++)
		accum_start(tc, &tc->b[2], a->off_x + i);
}

static void reduce_bwd_ref(struct tcase *tc)
{
	const struct gpo_reduce_args *a = &tc->a.reduce;
	double *dy = tb_d(&tc->b[0]);
	double *idx = calloc(tc->b[1].n + 1, sizeof(double));
	double *dx = calloc(tc->b[2].n + 1, sizeof(double));
	uint64_t i;

	ck_assert(idx && dx);
	for (i = 0; i < tc->b[1].n; i++)
		idx[i] = tb_i(&tc->b[1], i);
	red_bwd_d(a, dy, idx, dx);
	for (i = 0; i < a->n; i++)
		want_res(tc, &tc->b[2], a->off_x + i, dx[a->off_x + i], 0);
	free(dy);
	free(idx);
	free(dx);
}

/* ---- softmax and the losses ---- */

#define SM_BIG		V_A	/* rows around +-80: must subtract the max */
#define SM_MANY		V_B	/* many rows, few groups */
#define SM_BADLAB	V_C	/* xent: a label out of range */
#define SM_TIES		V_D	/* accuracy: inputs from {0, 1, 2} */
#define SM_LONG		V_E	/* causal: odd len from 257 to 401 */

/* rows x len logits at x's offset, and the launch's groups */
static void rows_setup(struct tcase *tc, uint32_t *rows, uint32_t *len,
		       uint32_t *groups, struct tbuf *x, uint32_t *off_x)
{
	uint32_t r, j;

	*rows = HAS(tc, SM_MANY) ? urand(tc, 300, 700) : urand(tc, 1, 40);
	*len = urand(tc, 1, 300);
	*groups = HAS(tc, SM_MANY) ? urand(tc, 1, *rows / 5) :
		  urand(tc, 1, *rows);
	tc->work = *groups;
	tc->n = (uint64_t)*rows * *len;
	*off_x = tb_in_at(tc, x, tc->n, -5, 5);
	for (r = 0; r < *rows; r++) {
		double c = HAS(tc, SM_BIG) ? srand2(tc, 75, 80) : 0;
		int spread = HAS(tc, SM_BIG) && r % 3 == 0;

		for (j = 0; j < *len; j++) {
			double v = spread ? tu_rand(&tc->rng, -80, 80) :
				   c + tu_rand(&tc->rng, -5, 5);

			if (HAS(tc, SM_TIES))
				v = (int)tu_rand(&tc->rng, 0, 3);
			put(x, *off_x + (uint64_t)r * *len + j, (float)v);
		}
	}
}

static void softmax_setup(struct tcase *tc)
{
	struct gpo_softmax_args *a = &tc->a.sm;

	a->fn = FN_OF(tc);
	a->flags = OP_FLAGS(tc);
	rows_setup(tc, &a->rows, &a->len, &a->groups, &tc->b[0], &a->off_x);
	a->off_y = tb_out_at(tc, &tc->b[1], tc->n);
	a->alpha = 1;
	a->off_dy = 0xdeadbeef;
}

static void softmax_ref(struct tcase *tc)
{
	const struct gpo_softmax_args *a = &tc->a.sm;
	double *x = tb_d(&tc->b[0]);
	double *y = malloc((a->len + 1) * sizeof(double));
	uint32_t r, j;

	ck_assert(y);
	for (r = 0; r < a->rows; r++) {
		uint64_t o = (uint64_t)r * a->len;

		sm_d(a->fn, x + a->off_x + o, a->len, y);
		for (j = 0; j < a->len; j++)
			tc->b[1].want[a->off_y + o + j] = y[j];
	}
	free(x);
	free(y);
}

static void softmax_bwd_setup(struct tcase *tc)
{
	struct gpo_softmax_args *a = &tc->a.sm;
	double *x, *y;
	uint64_t i;
	uint32_t r;

	a->fn = FN_OF(tc);
	a->flags = OP_FLAGS(tc);
	a->alpha = (float)srand2(tc, 0.5, 2);
	/* y is a forward's output: softmax of random logits */
	rows_setup(tc, &a->rows, &a->len, &a->groups, &tc->b[0], &a->off_x);
	x = tb_d(&tc->b[0]);
	y = malloc((a->len + 1) * sizeof(double));
	ck_assert(y);
	for (r = 0; r < a->rows; r++) {
		uint64_t o = a->off_x + (uint64_t)r * a->len, j;

		sm_d(a->fn, x + o, a->len, y);
		for (j = 0; j < a->len; j++)
			put(&tc->b[0], o + j, (float)y[j]);
	}
	free(x);
	free(y);
	a->off_dy = tb_in_at(tc, &tc->b[1], tc->n, -1, 1);
	a->off_y = tb_out_at(tc, &tc->b[2], tc->n);
	for (i = 0; i < tc->n; i++)
		accum_start(tc, &tc->b[2], a->off_y + i);
}

static void softmax_bwd_ref(struct tcase *tc)
{
	const struct gpo_softmax_args *a = &tc->a.sm;
	double *y = tb_d(&tc->b[0]), *dy = tb_d(&tc->b[1]);
	double *dx = malloc((a->len + 1) * sizeof(double));
	double *m = malloc((a->len + 1) * sizeof(double));
	uint32_t r, j;

	ck_assert(dx && m);
	tb_mag(&tc->b[2]);
	for (r = 0; r < a->rows; r++) {
		uint64_t o = (uint64_t)r * a->len;

		sm_bwd_d(a->fn, y + a->off_x + o, dy + a->off_dy + o, a->len,
			 a->alpha, dx, m);
		for (j = 0; j < a->len; j++)
			want_res(tc, &tc->b[2], a->off_y + o + j, dx[j], m[j]);
	}
	free(y);
	free(dy);
	free(dx);
	free(m);
}

/*
 * CAUSAL's input: square matrices of odd len, alpha of either sign, and
 * the masked logits (j > i) NaN, which the kernel must never read
 */
static void causal_rows(struct tcase *tc, struct gpo_softmax_args *a,
			struct tbuf *x)
{
	uint32_t nm, r, j;

	if (HAS(tc, SM_LONG)) {
		nm = urand(tc, 1, 2);
		a->len = 2 * urand(tc, 128, 200) + 1;
	} else if (HAS(tc, SM_MANY)) {
		nm = urand(tc, 20, 40);
		a->len = 2 * urand(tc, 0, 15) + 1;
	} else {
		nm = urand(tc, 1, 5);
		a->len = 2 * urand(tc, 0, 49) + 1;
	}
	a->rows = nm * a->len;
	a->groups = HAS(tc, SM_MANY) ? urand(tc, 1, a->rows / 5) :
		    urand(tc, 1, a->rows);
	a->alpha = (float)srand2(tc, 0.1, 2);
	tc->work = a->groups;
	tc->n = (uint64_t)a->rows * a->len;
	a->off_x = tb_in_at(tc, x, tc->n, -5, 5);
	for (r = 0; r < a->rows; r++)
		for (j = r % a->len + 1; j < a->len; j++)
			put(x, a->off_x + (uint64_t)r * a->len + j, NAN);
}

/* row r of the causal softmax of x into y[0 .. len), in double */
static void causal_d(const double *x, uint32_t len, uint32_t r, double alpha,
		     double *y)
{
	uint32_t i = r % len, j;

	for (j = 0; j <= i; j++)
		y[j] = alpha * x[j];
	sm_d(GPO_SM_SOFTMAX, y, i + 1, y);
	for (j = i + 1; j < len; j++)
		y[j] = 0;
}

static void causal_setup(struct tcase *tc)
{
	struct gpo_softmax_args *a = &tc->a.sm;

	a->fn = GPO_SM_CAUSAL;
	a->flags = OP_FLAGS(tc);
	causal_rows(tc, a, &tc->b[0]);
	a->off_y = tb_out_at(tc, &tc->b[1], tc->n);
	a->off_dy = 0xdeadbeef;
}

/* the masked outputs exactly 0 */
static void causal_ref(struct tcase *tc)
{
	const struct gpo_softmax_args *a = &tc->a.sm;
	double *x = tb_d(&tc->b[0]);
	double *y = malloc((a->len + 1) * sizeof(double));
	uint32_t r, j;

	ck_assert(y);
	for (r = 0; r < a->rows; r++) {
		uint64_t o = a->off_y + (uint64_t)r * a->len;

		causal_d(x + a->off_x + (uint64_t)r * a->len, a->len, r,
			 a->alpha, y);
		for (j = 0; j < a->len; j++) {
			tc->b[1].want[o + j] = y[j];
			if (j > r % a->len)
				want_exact(&tc->b[1], o + j);
		}
	}
	free(x);
	free(y);
}

/* SOFTMAX's backward with alpha, of a causal forward's y (0 above) */
static void causal_bwd_setup(struct tcase *tc)
{
	struct gpo_softmax_args *a = &tc->a.sm;
	double *x, *y;
	uint64_t i;
	uint32_t r, j;

	a->flags = OP_FLAGS(tc);
	causal_rows(tc, a, &tc->b[0]);
	a->fn = GPO_SM_SOFTMAX;
	x = tb_d(&tc->b[0]);
	y = malloc((a->len + 1) * sizeof(double));
	ck_assert(y);
	for (r = 0; r < a->rows; r++) {
		uint64_t o = a->off_x + (uint64_t)r * a->len;

		causal_d(x + o, a->len, r, a->alpha, y);
		for (j = 0; j < a->len; j++)
			put(&tc->b[0], o + j, (float)y[j]);
	}
	free(x);
	free(y);
	a->off_dy = tb_in_at(tc, &tc->b[1], tc->n, -1, 1);
	a->off_y = tb_out_at(tc, &tc->b[2], tc->n);
	for (i = 0; i < tc->n; i++)
		accum_start(tc, &tc->b[2], a->off_y + i);
}

/* the masked gradients exactly 0 (or what was there) */
static void causal_bwd_ref(struct tcase *tc)
{
	const struct gpo_softmax_args *a = &tc->a.sm;
	uint32_t r, j;

	softmax_bwd_ref(tc);
	for (r = 0; r < a->rows; r++)
		for (j = r % a->len + 1; j < a->len; j++)
			want_exact(&tc->b[2],
				   a->off_y + (uint64_t)r * a->len + j);
}

/* labels in [0, len), one out of range with SM_BADLAB */
static void labels_setup(struct tcase *tc, struct tbuf *b, uint32_t rows,
			 uint32_t len, uint32_t *off)
{
	uint32_t r;

	*off = tb_int_at(tc, b, rows);
	for (r = 0; r < rows; r++)
		b->in[*off + r] = (uint32_t)tu_rand(&tc->rng, 0, len);
	if (HAS(tc, SM_BADLAB))
		b->in[*off + (uint32_t)tu_rand(&tc->rng, 0, rows)] =
			tu_rand(&tc->rng, 0, 1) < 0.5 ? len : (uint32_t)-1;
}

static void xent_setup(struct tcase *tc)
{
	struct gpo_loss_args *a = &tc->a.loss;

	a->flags = OP_FLAGS(tc);
	rows_setup(tc, &a->rows, &a->len, &a->groups, &tc->b[0], &a->off_x);
	labels_setup(tc, &tc->b[1], a->rows, a->len, &a->off_lab);
	a->off_y = tb_out_at(tc, &tc->b[2], a->rows);
	a->alpha = 1;
	a->off_dl = 0xdeadbeef;
}

static void xent_ref(struct tcase *tc)
{
	const struct gpo_loss_args *a = &tc->a.loss;
	double *x = tb_d(&tc->b[0]);
	uint32_t r;

	for (r = 0; r < a->rows; r++) {
		const double *row = x + a->off_x + (uint64_t)r * a->len;
		int32_t lab = tb_i(&tc->b[1], a->off_lab + r);

		want_res(tc, &tc->b[2], a->off_y + r, xent_d(row, a->len, lab),
			 0);
	}
	free(x);
}

static void xent_bwd_setup(struct tcase *tc)
{
	struct gpo_loss_args *a = &tc->a.loss;
	uint64_t i;

	a->flags = OP_FLAGS(tc);
	rows_setup(tc, &a->rows, &a->len, &a->groups, &tc->b[0], &a->off_x);
	labels_setup(tc, &tc->b[1], a->rows, a->len, &a->off_lab);
	a->off_dl = tb_in_at(tc, &tc->b[2], 1, 0.5, 3);
	a->alpha = 1.0f / (float)a->rows;
	a->off_y = tb_out_at(tc, &tc->b[3], tc->n);
	for (i = 0; i < tc->n; i++)
		accum_start(tc, &tc->b[3], a->off_y + i);
}

static void xent_bwd_ref(struct tcase *tc)
{
	const struct gpo_loss_args *a = &tc->a.loss;
	double *x = tb_d(&tc->b[0]);
	double *dx = malloc((a->len + 1) * sizeof(double));
	double scale = a->alpha * f(&tc->b[2], a->off_dl);
	uint32_t r, j;

	ck_assert(dx);
	for (r = 0; r < a->rows; r++) {
		uint64_t o = (uint64_t)r * a->len;

		xent_bwd_d(x + a->off_x + o, a->len,
			   tb_i(&tc->b[1], a->off_lab + r), scale, dx);
		for (j = 0; j < a->len; j++)
			want_res(tc, &tc->b[3], a->off_y + o + j, dx[j], 0);
	}
	free(x);
	free(dx);
}

static void accuracy_setup(struct tcase *tc)
{
	struct gpo_loss_args *a = &tc->a.loss;
	uint32_t r, j;

	a->flags = OP_FLAGS(tc);
	rows_setup(tc, &a->rows, &a->len, &a->groups, &tc->b[0], &a->off_x);
	labels_setup(tc, &tc->b[1], a->rows, a->len, &a->off_lab);
	/* with ties, label the first maximum or the last one at times */
	for (r = 0; r < a->rows && HAS(tc, SM_TIES); r++) {
		const uint64_t o = a->off_x + (uint64_t)r * a->len;
		uint32_t first = 0, last = 0;
		double pick = tu_rand(&tc->rng, 0, 3);

		for (j = 1; j < a->len; j++) {
			if (f(&tc->b[0], o + j) > f(&tc->b[0], o + first))
				first = last = j;
			else if (f(&tc->b[0], o + j) == f(&tc->b[0], o + first))
				last = j;
		}
		if (pick < 1)
			tc->b[1].in[a->off_lab + r] = first;
		else if (pick < 2)
			tc->b[1].in[a->off_lab + r] = last;
	}
	a->off_y = tb_out_at(tc, &tc->b[2], a->rows);
	a->alpha = 1;
	a->off_dl = 0xdeadbeef;
}

static void accuracy_ref(struct tcase *tc)
{
	const struct gpo_loss_args *a = &tc->a.loss;
	uint32_t r, j;

	for (r = 0; r < a->rows; r++) {
		const uint64_t o = a->off_x + (uint64_t)r * a->len;
		uint32_t best = 0;

		for (j = 1; j < a->len; j++)
			if (f(&tc->b[0], o + j) > f(&tc->b[0], o + best))
				best = j;
		tc->b[2].want[a->off_y + r] =
			tb_i(&tc->b[1], a->off_lab + r) == (int32_t)best;
	}
}

/* ---- gather ---- */

#define GA_WIN		V_A	/* windows: stride < width */
#define GA_SEQ		V_B	/* windows of a sequence: stride 1 */

static void gather_setup(struct tcase *tc)
{
	struct gpo_gather_args *a = &tc->a.gather;
	uint32_t nsrc, b;
	uint64_t i;

	a->rows = urand(tc, 1, 200);
	a->width = urand(tc, HAS(tc, GA_WIN | GA_SEQ) ? 2 : 1, 70);
	a->stride = HAS(tc, GA_SEQ) ? 1 : HAS(tc, GA_WIN) ?
		    urand(tc, 1, a->width - 1) : a->width;
	a->row_lo = urand(tc, 0, 20);
	nsrc = urand(tc, 1, 50);
	a->row_hi = a->row_lo + nsrc;
	a->n = a->rows * a->width;
	a->groups = urand(tc, 1, (a->n + GPO_WG_SIZE - 1) / GPO_WG_SIZE + 1);
	tc->n = a->n;
	tc->work = a->groups;
	/* the last row ends width past its start */
	a->off_src = tb_int_at(tc, &tc->b[0], (uint64_t)(nsrc - 1) * a->stride +
			       a->width);
	if (tc->dtype == GPO_F32)
		for (i = 0; i < tc->b[0].n; i++)
			put(&tc->b[0], i, (float)tu_rand(&tc->rng, -1e3, 1e3));
	/* indices below, inside and above the window, negative ones too */
	a->off_idx = tb_int_at(tc, &tc->b[1], a->rows);
	for (b = 0; b < a->rows; b++)
		tc->b[1].in[a->off_idx + b] =
			(uint32_t)(int32_t)tu_rand(&tc->rng, -3,
						   a->row_hi + 6);
	/* dst holds an earlier block's rows: left as they are */
	a->off_dst = tb_int_at(tc, &tc->b[2], a->n);
}

static void gather_ref(struct tcase *tc)
{
	const struct gpo_gather_args *a = &tc->a.gather;
	uint32_t b, j;

	for (b = 0; b < a->rows; b++) {
		int64_t r = (int64_t)tb_i(&tc->b[1], a->off_idx + b) - a->row_lo;

		if (r < 0 || r >= (int64_t)(a->row_hi - a->row_lo))
			continue;
		for (j = 0; j < a->width; j++)
			tc->b[2].want[a->off_dst + (uint64_t)b * a->width + j] =
				tc->b[0].in[a->off_src + r * a->stride + j];
	}
}

#define EB_WIDE		V_A	/* rows wider than a workgroup */
#define EB_MANY		V_B	/* many indices, few groups */

/*
 * Indices with repeats (half of them from a few rows), one out of range
 * at least, and a row that no index names; dw's rows no index names must
 * come out 0 (or as they were, with GPO_T_ACCUM).
 */
static void embed_bwd_setup(struct tcase *tc)
{
	struct gpo_gather_args *a = &tc->a.gather;
	uint32_t b, hole;
	uint64_t i;

	a->rows = HAS(tc, EB_MANY) ? urand(tc, 500, 1500) : urand(tc, 1, 300);
	a->width = HAS(tc, EB_WIDE) ? urand(tc, 257, 700) : urand(tc, 1, 120);
	a->row_hi = urand(tc, 1, 90);
	a->row_lo = 0;
	a->stride = 0;
	a->flags = OP_FLAGS(tc);
	a->n = a->row_hi * a->width;
	a->groups = HAS(tc, EB_MANY) ? urand(tc, 1, 4) :
		    urand(tc, 1, a->row_hi + 2);
	/*
	 * lavapipe ends a work-item's loops after LP_LOOP_LIMIT iterations
	 * in all (abi/tensor.h): each group's rows times the indices each
	 * walks stay below it, as the engine's launches do
	 */
	while ((uint64_t)((a->row_hi + a->groups - 1) / a->groups) *
	       (a->rows + a->rows / GPO_WG_SIZE + 2) > LP_LOOP_LIMIT / 2)
		a->groups++;
	tc->n = a->n;
	tc->work = a->groups;
	hole = urand(tc, 0, a->row_hi - 1);
	a->off_idx = tb_int_at(tc, &tc->b[0], a->rows);
	for (b = 0; b < a->rows; b++) {
		uint32_t few = a->row_hi < 4 ? a->row_hi - 1 : 3;
		uint32_t top = tu_rand(&tc->rng, 0, 1) < 0.5 ? few :
			       a->row_hi - 1;
		int32_t v = (int32_t)urand(tc, 0, top);

		if (v == (int32_t)hole)
			v = tu_rand(&tc->rng, 0, 1) < 0.5 ?
			    -(int32_t)urand(tc, 1, 5) :
			    (int32_t)(a->row_hi + urand(tc, 0, 5));
		tc->b[0].in[a->off_idx + b] = (uint32_t)v;
	}
	tc->b[0].in[a->off_idx + urand(tc, 0, a->rows - 1)] =
		(uint32_t)(int32_t)(tu_rand(&tc->rng, 0, 1) < 0.5 ? -1 :
				    (int32_t)a->row_hi);
	a->off_src = tb_in_at(tc, &tc->b[1], (uint64_t)a->rows * a->width,
			      -1, 1);
	a->off_dst = tb_out_at(tc, &tc->b[2], a->n);
	for (i = 0; i < a->n; i++)
		accum_start(tc, &tc->b[2], a->off_dst + i);
}

static void embed_bwd_ref(struct tcase *tc)
{
	const struct gpo_gather_args *a = &tc->a.gather;
	uint32_t v, b, j;

	tb_mag(&tc->b[2]);
	for (v = 0; v < a->row_hi; v++)
		for (j = 0; j < a->width; j++) {
			double sum = 0, mag = 0;

			for (b = 0; b < a->rows; b++) {
				double d;

				if (tb_i(&tc->b[0], a->off_idx + b) !=
				    (int32_t)v)
					continue;
				d = f(&tc->b[1], a->off_src +
				      (uint64_t)b * a->width + j);
				sum += d;
				mag += fabs(d);
			}
			want_res(tc, &tc->b[2], a->off_dst +
				 (uint64_t)v * a->width + j, sum, mag);
		}
}

/* ---- layernorm ---- */

#define LN_LONG		V_A	/* a few rows of 1000 to 3000 */
#define LN_ONE		V_B	/* one row of up to 40000 */
#define LN_MANY		V_C	/* many rows, few groups */

/* a row's y, mean and rstd (the forward), in double */
static void ln_d(const double *x, uint32_t len, double eps, double *y,
		 double *mean, double *rstd)
{
	double s = 0, v = 0;
	uint32_t j;

	for (j = 0; j < len; j++)
		s += x[j];
	*mean = s / len;
	for (j = 0; j < len; j++)
		v += (x[j] - *mean) * (x[j] - *mean);
	*rstd = 1 / sqrt(v / len + eps);
	for (j = 0; j < len; j++)
		y[j] = (x[j] - *mean) * *rstd;
}

/*
 * dx_j = alpha rstd (dy_j - mean(dy) - y_j mean(dy y)), and in @mag the
 * size of its terms
 */
static void ln_bwd_d(const double *y, const double *dy, uint32_t len,
		     double rstd, double alpha, double *dx, double *mag)
{
	double s = 0, sy = 0, sa = 0, sya = 0;
	uint32_t j;

	for (j = 0; j < len; j++) {
		s += dy[j];
		sy += dy[j] * y[j];
		sa += fabs(dy[j]);
		sya += fabs(dy[j] * y[j]);
	}
	for (j = 0; j < len; j++) {
		dx[j] = alpha * rstd * (dy[j] - s / len - y[j] * sy / len);
		if (mag)
			mag[j] = fabs(alpha * rstd) * (fabs(dy[j]) + sa / len +
						       fabs(y[j]) * sya / len);
	}
}

/* rows of odd lengths around a random mean, at x's offset */
static void ln_rows(struct tcase *tc, struct gpo_layernorm_args *a,
		    struct tbuf *x)
{
	uint32_t r, j;

	if (HAS(tc, LN_ONE)) {
		a->rows = 1;
		a->len = urand(tc, 257, 40000) | 1;
	} else if (HAS(tc, LN_LONG)) {
		a->rows = urand(tc, 1, 5);
		a->len = urand(tc, 1000, 3000) | 1;
	} else {
		a->rows = HAS(tc, LN_MANY) ? urand(tc, 300, 700) :
			  urand(tc, 1, 40);
		a->len = urand(tc, 1, 300);
	}
	a->groups = HAS(tc, LN_MANY) ? urand(tc, 1, a->rows / 5) :
		    urand(tc, 1, a->rows);
	a->flags = OP_FLAGS(tc);
	a->eps = (float)tu_rand(&tc->rng, 1e-6, 1e-3);
	tc->work = a->groups;
	tc->n = (uint64_t)a->rows * a->len;
	a->off_x = tb_in_at(tc, x, tc->n, -1, 1);
	for (r = 0; r < a->rows; r++) {
		double c = srand2(tc, 0, 10), w = tu_rand(&tc->rng, 0.1, 3);

		for (j = 0; j < a->len; j++)
			put(x, a->off_x + (uint64_t)r * a->len + j,
			    (float)(c + w * tu_rand(&tc->rng, -1, 1)));
	}
}

static void layernorm_setup(struct tcase *tc)
{
	struct gpo_layernorm_args *a = &tc->a.ln;

	ln_rows(tc, a, &tc->b[0]);
	a->off_y = tb_out_at(tc, &tc->b[1], tc->n);
	a->off_stats = tb_out_at(tc, &tc->b[2], 2 * (uint64_t)a->rows);
	a->alpha = 1;
	a->off_dy = 0xdeadbeef;
}

static void layernorm_ref(struct tcase *tc)
{
	const struct gpo_layernorm_args *a = &tc->a.ln;
	double *x = tb_d(&tc->b[0]);
	double *y = malloc((a->len + 1) * sizeof(double));
	double mean, rstd;
	uint32_t r, j;

	ck_assert(y);
	for (r = 0; r < a->rows; r++) {
		const uint64_t o = (uint64_t)r * a->len;

		ln_d(x + a->off_x + o, a->len, a->eps, y, &mean, &rstd);
		for (j = 0; j < a->len; j++)
			tc->b[1].want[a->off_y + o + j] = y[j];
		tc->b[2].want[a->off_stats + 2 * r] = mean;
		tc->b[2].want[a->off_stats + 2 * r + 1] = rstd;
	}
	free(x);
	free(y);
}

/* y and stats a forward's output (in float, as a kernel wrote them) */
static void layernorm_bwd_setup(struct tcase *tc)
{
	struct gpo_layernorm_args *a = &tc->a.ln;
	double *x, *y, mean, rstd;
	uint64_t i;
	uint32_t r, j;

	ln_rows(tc, a, &tc->b[0]);
	a->off_y = a->off_x;
	a->off_x = 0xdeadbeef;
	a->alpha = (float)srand2(tc, 0.5, 2);
	x = tb_d(&tc->b[0]);
	y = malloc((a->len + 1) * sizeof(double));
	ck_assert(y);
	a->off_stats = tb_out_at(tc, &tc->b[2], 2 * (uint64_t)a->rows);
	for (r = 0; r < a->rows; r++) {
		const uint64_t o = a->off_y + (uint64_t)r * a->len;

		ln_d(x + o, a->len, a->eps, y, &mean, &rstd);
		for (j = 0; j < a->len; j++)
			put(&tc->b[0], o + j, (float)y[j]);
		put(&tc->b[2], a->off_stats + 2 * r, (float)mean);
		put(&tc->b[2], a->off_stats + 2 * r + 1, (float)rstd);
	}
	free(x);
	free(y);
	a->off_dy = tb_in_at(tc, &tc->b[1], tc->n, -1, 1);
	a->off_x = tb_out_at(tc, &tc->b[3], tc->n);
	for (i = 0; i < tc->n; i++)
		accum_start(tc, &tc->b[3], a->off_x + i);
}

static void layernorm_bwd_ref(struct tcase *tc)
{
	const struct gpo_layernorm_args *a = &tc->a.ln;
	double *y = tb_d(&tc->b[0]), *dy = tb_d(&tc->b[1]);
	double *dx = malloc((a->len + 1) * sizeof(double));
	double *m = malloc((a->len + 1) * sizeof(double));
	uint32_t r, j;

	ck_assert(dx && m);
	tb_mag(&tc->b[3]);
	for (r = 0; r < a->rows; r++) {
		const uint64_t o = (uint64_t)r * a->len;

		ln_bwd_d(y + a->off_y + o, dy + a->off_dy + o, a->len,
			 f(&tc->b[2], a->off_stats + 2 * r + 1), a->alpha, dx,
			 m);
		for (j = 0; j < a->len; j++)
			want_res(tc, &tc->b[3], a->off_x + o + j, dx[j], m[j]);
	}
	free(y);
	free(dy);
	free(dx);
	free(m);
}


/* ---- attention ---- */

#define AT_LONG		V_A	/* t 257: five blocks, the last of one row */
#define AT_WIDE		V_B	/* hd 128: both column halves */
#define AT_ODD		V_C	/* an odd hd: 1, 5, 37, 73 or 101 */

static double attn_dotd(const double *a, const double *b, uint32_t n)
{
	double s = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* the scaled score of query i and key j of one matrix */
static double attn_s(const double *q, const double *k, uint32_t hd,
		     uint32_t i, uint32_t j, double scale)
{
	return scale * attn_dotd(q + (uint64_t)i * hd, k + (uint64_t)j * hd, hd);
}

/* y [t, hd] and l [t] of one matrix, in double */
static void attn_fwd_d(const double *q, const double *k, const double *v,
		       uint32_t t, uint32_t hd, double scale, double *y,
		       double *l)
{
	uint32_t i, j, c;

	for (i = 0; i < t; i++) {
		double m = -INFINITY, s = 0;

		for (j = 0; j <= i; j++)
			m = fmax(m, attn_s(q, k, hd, i, j, scale));
		for (j = 0; j <= i; j++)
			s += exp(attn_s(q, k, hd, i, j, scale) - m);
		l[i] = m + log(s);
		for (c = 0; c < hd; c++)
			y[(uint64_t)i * hd + c] = 0;
		for (j = 0; j <= i; j++) {
			double p = exp(attn_s(q, k, hd, i, j, scale) - l[i]);

			for (c = 0; c < hd; c++)
				y[(uint64_t)i * hd + c] +=
					p * v[(uint64_t)j * hd + c];
		}
	}
}

/*
 * dq, dk and dv of one matrix from l and d as given (the kernels' inputs),
 * in double, each with the size of its terms in mq, mk, mv (may be NULL)
 */
static void attn_bwd_ref_d(const double *q, const double *k, const double *v,
			   const double *dy, const double *l, const double *d,
			   uint32_t t, uint32_t hd, double scale, double *dq,
			   double *dk, double *dv, double *mq, double *mk,
			   double *mv)
{
	uint64_t n = (uint64_t)t * hd, e;
	uint32_t i, j, c;

	for (e = 0; e < n; e++) {
		dq[e] = dk[e] = dv[e] = 0;
		if (mq)
			mq[e] = mk[e] = mv[e] = 0;
	}
	for (i = 0; i < t; i++)
		for (j = 0; j <= i; j++) {
			double p = exp(attn_s(q, k, hd, i, j, scale) - l[i]);
			double dp = attn_dotd(dy + (uint64_t)i * hd,
					v + (uint64_t)j * hd, hd);
			double ds = p * (dp - d[i]), dsm = p * (fabs(dp) +
								fabs(d[i]));

			for (c = 0; c < hd; c++) {
				uint64_t ic = (uint64_t)i * hd + c;
				uint64_t jc = (uint64_t)j * hd + c;

				dq[ic] += scale * ds * k[jc];
				dk[jc] += scale * ds * q[ic];
				dv[jc] += p * dy[ic];
				if (!mq)
					continue;
				mq[ic] += fabs(scale * k[jc]) * dsm;
				mk[jc] += fabs(scale * q[ic]) * dsm;
				mv[jc] += fabs(p * dy[ic]);
			}
		}
}

static void attn_shape(struct tcase *tc, struct gpo_attn_args *a)
{
	static const uint32_t ts[] = { 1, 37, 64, 100 };
	static const uint32_t odd[] = { 1, 5, 37, 73, 101 };

	memset(a, 0xff, sizeof(*a));	/* offsets a kernel must not use */
	a->bh = HAS(tc, AT_LONG) ? urand(tc, 1, 2) : urand(tc, 1, 4);
	a->t = HAS(tc, AT_LONG) ? 257 : ts[urand(tc, 0, 3)];
	if (HAS(tc, AT_WIDE))
		a->hd = 128;
	else if (HAS(tc, AT_ODD))
		a->hd = odd[urand(tc, 0, 4)];
	else
		a->hd = urand(tc, 0, 1) ? 64 : 16;
	a->blocks = (a->t + GPO_ATTN_BLOCK - 1) / GPO_ATTN_BLOCK;
	a->groups = a->bh * a->blocks;
	a->flags = OP_FLAGS(tc);
	a->scale = (float)(srand2(tc, 0.3, 2) / sqrt(a->hd));
	tc->work = a->groups;
	tc->n = (uint64_t)a->bh * a->t * a->hd;
}

static void attn_fwd_setup(struct tcase *tc)
{
	struct gpo_attn_args *a = &tc->a.attn;

	attn_shape(tc, a);
	a->off_q = tb_in_at(tc, &tc->b[0], tc->n, -2, 2);
	a->off_k = tb_in_at(tc, &tc->b[1], tc->n, -2, 2);
	a->off_v = tb_in_at(tc, &tc->b[2], tc->n, -1, 1);
	a->off_y = tb_out_at(tc, &tc->b[3], tc->n);
	a->off_l = tb_out_at(tc, &tc->b[4], (uint64_t)a->bh * a->t);
}

static void attn_fwd_ref(struct tcase *tc)
{
	const struct gpo_attn_args *a = &tc->a.attn;
	double *q = tb_d(&tc->b[0]), *k = tb_d(&tc->b[1]), *v = tb_d(&tc->b[2]);
	double *y = malloc(((uint64_t)a->t * a->hd + 1) * sizeof(double));
	double *l = malloc((a->t + 1) * sizeof(double));
	uint64_t mat = (uint64_t)a->t * a->hd, e;
	uint32_t z, i;

	ck_assert(y && l);
	for (z = 0; z < a->bh; z++) {
		attn_fwd_d(q + a->off_q + z * mat, k + a->off_k + z * mat,
			   v + a->off_v + z * mat, a->t, a->hd, a->scale, y, l);
		for (e = 0; e < mat; e++)
			tc->b[3].want[a->off_y + z * mat + e] = y[e];
		for (i = 0; i < a->t; i++)
			tc->b[4].want[a->off_l + (uint64_t)z * a->t + i] = l[i];
	}
	free(q);
	free(k);
	free(v);
	free(y);
	free(l);
}

static void attn_d_setup(struct tcase *tc)
{
	struct gpo_attn_args *a = &tc->a.attn;
	uint64_t rows;

	attn_shape(tc, a);
	rows = (uint64_t)a->bh * a->t;
	/* a grid-stride launch: sometimes fewer groups than rows need */
	a->groups = urand(tc, 1, (uint32_t)((rows + GPO_WG_SIZE - 1) /
					    GPO_WG_SIZE));
	tc->work = a->groups;
	a->off_y = tb_in_at(tc, &tc->b[0], tc->n, -1, 1);
	a->off_dy = tb_in_at(tc, &tc->b[1], tc->n, -1, 1);
	a->off_d = tb_out_at(tc, &tc->b[2], rows);
}

static void attn_d_ref(struct tcase *tc)
{
	const struct gpo_attn_args *a = &tc->a.attn;
	uint64_t r, c;

	tb_mag(&tc->b[2]);
	for (r = 0; r < (uint64_t)a->bh * a->t; r++) {
		double s = 0, m = 0;

		for (c = 0; c < a->hd; c++) {
			double x = (double)f(&tc->b[0], a->off_y + r * a->hd + c) *
				   f(&tc->b[1], a->off_dy + r * a->hd + c);

			s += x;
			m += fabs(x);
		}
		tc->b[2].want[a->off_d + r] = s;
		tc->b[2].mag[a->off_d + r] = m;
	}
}

/*
 * q, k, v, dy random; l and d those of the forward of q, k, v (in
 * float, as the kernels wrote them)
 */
static void attn_bwd_setup(struct tcase *tc)
{
	struct gpo_attn_args *a = &tc->a.attn;
	uint64_t mat, rows;
	double *q, *k, *v, *dy, *y, *l;
	uint32_t z, i;

	attn_shape(tc, a);
	mat = (uint64_t)a->t * a->hd;
	rows = (uint64_t)a->bh * a->t;
	a->off_q = tb_in_at(tc, &tc->b[0], tc->n, -2, 2);
	a->off_k = tb_in_at(tc, &tc->b[1], tc->n, -2, 2);
	a->off_v = tb_in_at(tc, &tc->b[2], tc->n, -1, 1);
	a->off_dy = tb_in_at(tc, &tc->b[3], tc->n, -1, 1);
	a->off_l = tb_in_at(tc, &tc->b[4], rows, 0, 1);
	a->off_d = tb_in_at(tc, &tc->b[5], rows, 0, 1);
	q = tb_d(&tc->b[0]);
	k = tb_d(&tc->b[1]);
	v = tb_d(&tc->b[2]);
	dy = tb_d(&tc->b[3]);
	y = malloc((mat + 1) * sizeof(double));
	l = malloc((a->t + 1) * sizeof(double));
	ck_assert(y && l);
	for (z = 0; z < a->bh; z++) {
		attn_fwd_d(q + a->off_q + z * mat, k + a->off_k + z * mat,
			   v + a->off_v + z * mat, a->t, a->hd, a->scale, y, l);
		for (i = 0; i < a->t; i++) {
			uint64_t r = (uint64_t)z * a->t + i;

			put(&tc->b[4], a->off_l + r, (float)l[i]);
			put(&tc->b[5], a->off_d + r,
			    (float)attn_dotd(dy + a->off_dy + z * mat +
				       (uint64_t)i * a->hd,
				       y + (uint64_t)i * a->hd, a->hd));
		}
	}
	free(q);
	free(k);
	free(v);
	free(dy);
	free(y);
	free(l);
}

/* an output of the tensor's size; random where @acc adds to it */
static uint32_t attn_out(struct tcase *tc, struct tbuf *b, int acc)
{
	uint32_t off = tb_out_at(tc, b, tc->n);
	uint64_t e;

	for (e = 0; acc && e < tc->n; e++)
		put(b, off + e, (float)tu_rand(&tc->rng, -1, 1));
	return off;
}

static void attn_dq_setup(struct tcase *tc)
{
	struct gpo_attn_args *a = &tc->a.attn;

	attn_bwd_setup(tc);
	a->off_dq = attn_out(tc, &tc->b[6], a->flags & GPO_T_ACCUM);
}

static void attn_dkdv_setup(struct tcase *tc)
{
	struct gpo_attn_args *a = &tc->a.attn;

	attn_bwd_setup(tc);
	a->off_dk = attn_out(tc, &tc->b[6], a->flags & GPO_T_ACCUM);
	a->off_dv = attn_out(tc, &tc->b[7], a->flags & GPO_ATTN_ACC_DV);
}

/* want[] of one output from the reference's r[] and mag[], (+ old) */
static void attn_want(struct tbuf *b, uint32_t off, uint64_t e, int acc,
		      double r, double mag)
{
	if (acc) {
		r += f(b, off + e);
		mag += fabs(f(b, off + e));
	}
	b->want[off + e] = r;
	b->mag[off + e] = mag;
}

/* the reference backward of every matrix; @dkdv: dk and dv, else dq */
static void attn_bwd_ref(struct tcase *tc, int dkdv)
{
	const struct gpo_attn_args *a = &tc->a.attn;
	uint64_t mat = (uint64_t)a->t * a->hd, e, n = mat + 1;
	double *in[6], *g[3], *m[3];
	uint32_t z;
	int i;

	for (i = 0; i < 6; i++)
		in[i] = tb_d(&tc->b[i]);
	for (i = 0; i < 3; i++) {
		g[i] = malloc(n * sizeof(double));
		m[i] = malloc(n * sizeof(double));
		ck_assert(g[i] && m[i]);
	}
	tb_mag(&tc->b[6]);
	if (dkdv)
		tb_mag(&tc->b[7]);
	for (z = 0; z < a->bh; z++) {
		uint64_t zo = z * mat;

		attn_bwd_ref_d(in[0] + a->off_q + zo, in[1] + a->off_k + zo,
			       in[2] + a->off_v + zo, in[3] + a->off_dy + zo,
			       in[4] + a->off_l + (uint64_t)z * a->t,
			       in[5] + a->off_d + (uint64_t)z * a->t, a->t,
			       a->hd, a->scale, g[0], g[1], g[2], m[0], m[1],
			       m[2]);
		for (e = 0; e < mat; e++) {
			if (!dkdv) {
				attn_want(&tc->b[6], a->off_dq, zo + e,
					  a->flags & GPO_T_ACCUM, g[0][e],
					  m[0][e]);
				continue;
			}
			attn_want(&tc->b[6], a->off_dk, zo + e,
				  a->flags & GPO_T_ACCUM, g[1][e], m[1][e]);
			attn_want(&tc->b[7], a->off_dv, zo + e,
				  a->flags & GPO_ATTN_ACC_DV, g[2][e],
				  m[2][e]);
		}
	}
	for (i = 0; i < 6; i++)
		free(in[i]);
	for (i = 0; i < 3; i++) {
		free(g[i]);
		free(m[i]);
	}
}

static void attn_dq_ref(struct tcase *tc)
{
	attn_bwd_ref(tc, 0);
}

static void attn_dkdv_ref(struct tcase *tc)
{
	attn_bwd_ref(tc, 1);
}

/* ---- the backward references against finite differences ----------------- */

/*
 * The backward references above are only as good as their formulas: each
 * is checked here against central differences of its forward reference,
 * d/dx_k sum_i w_i fwd(x)_i, in float64 on small random inputs.
 */
#define FD_H	1e-6

static void fd_check(const char *what, double analytic, double numeric)
{
	ck_assert_msg(fabs(analytic - numeric) <=
		      1e-6 * fmax(1.0, fabs(numeric)),
		      "%s: backward %.12g, finite differences %.12g", what,
		      analytic, numeric);
}

static void fd_unary(uint64_t *rng)
{
	uint32_t fn;
	int t;

	for (fn = 0; fn < GPO_EW_UNARY_COUNT; fn++)
		for (t = 0; t < 50; t++) {
			struct tcase tc = { .rng = *rng };
			double x = un_input(&tc, fn), h = FD_H * fmax(1, fabs(x));
			char what[64];

			*rng = tc.rng;
			/*
			 * relu's kink, and the saturated tails, say nothing;
			 * DROPOUT's mask is no function of x
			 */
			if ((fn == GPO_EW_RELU && fabs(x) < 1e-3) ||
			    fabs(x) > 9 || fn == GPO_EW_DROPOUT)
				continue;
			snprintf(what, sizeof(what), "unary_bwd fn %u x %g", fn, x);
			fd_check(what, un_df(fn, x),
				 (un_f(fn, x + h) - un_f(fn, x - h)) / (2 * h));
		}
}

static double *fd_rand(uint64_t *rng, uint64_t n, double lo, double hi)
{
	double *v = malloc((n + 1) * sizeof(double));
	uint64_t i;

	ck_assert(v);
	for (i = 0; i < n; i++)
		v[i] = tu_rand(rng, lo, hi);
	return v;
}

static double dot(const double *a, const double *b, uint64_t n)
{
	double s = 0;
	uint64_t i;

	for (i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

static double fd_red_loss(const struct gpo_reduce_args *a, const double *x,
			  const double *w, double *y)
{
	red_d(a, x, y, NULL, NULL);
	return dot(w, y, (uint64_t)a->outer * a->inner);
}

static void fd_reduce(uint64_t *rng)
{
	uint32_t fn;

	for (fn = GPO_RED_SUM; fn <= GPO_RED_MAX; fn++) {
		struct gpo_reduce_args a = {
			.fn = fn, .outer = 3, .len = 5, .inner = 4,
			.alpha = (float)tu_rand(rng, 0.5, 2),
		};
		uint64_t ny = 12, nx = 60, k;
		/* distinct values: no ties where max is not differentiable */
		double *x = fd_rand(rng, nx, -1, 1), *w = fd_rand(rng, ny, -1, 1);
		double *y = fd_rand(rng, ny, 0, 1), *idx = fd_rand(rng, ny, 0, 1);
		double *dx = fd_rand(rng, nx, 0, 1);

		red_d(&a, x, y, idx, NULL);
		red_bwd_d(&a, w, idx, dx);
		for (k = 0; k < nx; k++) {
			double x0 = x[k], lp, lm;

			x[k] = x0 + FD_H;
			lp = fd_red_loss(&a, x, w, y);
			x[k] = x0 - FD_H;
			lm = fd_red_loss(&a, x, w, y);
			x[k] = x0;
			fd_check(fn == GPO_RED_SUM ? "reduce_bwd sum" :
				 "reduce_bwd max", dx[k], (lp - lm) / (2 * FD_H));
		}
		free(x);
		free(w);
		free(y);
		free(idx);
		free(dx);
	}
}

static void fd_softmax(uint64_t *rng)
{
	const uint32_t len = 7;
	uint32_t fn, k;

	for (fn = GPO_SM_SOFTMAX; fn <= GPO_SM_LOG_SOFTMAX; fn++) {
		double *x = fd_rand(rng, len, -3, 3), *w = fd_rand(rng, len, -1, 1);
		double *y = fd_rand(rng, len, 0, 1), *dx = fd_rand(rng, len, 0, 1);
		double alpha = tu_rand(rng, 0.5, 2);

		sm_d(fn, x, len, y);
		sm_bwd_d(fn, y, w, len, alpha, dx, NULL);
		for (k = 0; k < len; k++) {
			double x0 = x[k], lp, lm;

			x[k] = x0 + FD_H;
			sm_d(fn, x, len, y);
			lp = alpha * dot(w, y, len);
			x[k] = x0 - FD_H;
			sm_d(fn, x, len, y);
			lm = alpha * dot(w, y, len);
			x[k] = x0;
			fd_check(fn == GPO_SM_SOFTMAX ? "softmax_bwd" :
				 "softmax_bwd log", dx[k], (lp - lm) / (2 * FD_H));
		}
		free(x);
		free(w);
		free(y);
		free(dx);
	}
}

static void fd_layernorm(uint64_t *rng)
{
	const uint32_t len = 9;
	double *x = fd_rand(rng, len, -2, 2), *w = fd_rand(rng, len, -1, 1);
	double *y = fd_rand(rng, len, 0, 1), *dx = fd_rand(rng, len, 0, 1);
	double alpha = tu_rand(rng, 0.5, 2), eps = tu_rand(rng, 1e-5, 1e-2);
	double mean, rstd;
	uint32_t k;

	ln_d(x, len, eps, y, &mean, &rstd);
	ln_bwd_d(y, w, len, rstd, alpha, dx, NULL);
	for (k = 0; k < len; k++) {
		double x0 = x[k], lp, lm;

		x[k] = x0 + FD_H;
		ln_d(x, len, eps, y, &mean, &rstd);
		lp = alpha * dot(w, y, len);
		x[k] = x0 - FD_H;
		ln_d(x, len, eps, y, &mean, &rstd);
		lm = alpha * dot(w, y, len);
		x[k] = x0;
		fd_check("layernorm_bwd", dx[k], (lp - lm) / (2 * FD_H));
	}
	free(x);
	free(w);
	free(y);
	free(dx);
}

static void fd_xent(uint64_t *rng)
{
	const uint32_t len = 9;
	double *x = fd_rand(rng, len, -3, 3), *dx = fd_rand(rng, len, 0, 1);
	double scale = tu_rand(rng, 0.1, 3);
	int32_t lab = (int32_t)tu_rand(rng, 0, len);
	uint32_t k;

	xent_bwd_d(x, len, lab, scale, dx);
	for (k = 0; k < len; k++) {
		double x0 = x[k], lp, lm;

		x[k] = x0 + FD_H;
		lp = scale * xent_d(x, len, lab);
		x[k] = x0 - FD_H;
		lm = scale * xent_d(x, len, lab);
		x[k] = x0;
		fd_check("xent_bwd", dx[k], (lp - lm) / (2 * FD_H));
	}
	free(x);
	free(dx);
}

/*
 * C = alpha op(A) op(B) for each TRANS combination, L = sum W .* C: the
 * gradients as the engine will launch them, matmuls of W with the
 * operands, transposes done by the flags alone:
 *	dop(A) = alpha W op(B)^T   dA = dop(A), or its transpose with TRANS_A
 *	dop(B) = alpha op(A)^T W   dB = dop(B), or its transpose with TRANS_B
 */
static void fd_matmul(uint64_t *rng)
{
	const uint32_t m = 4, n = 5, k = 3;
	uint32_t fl;

	for (fl = 0; fl < 4; fl++) {
		const uint32_t ta = fl & 1 ? GPO_MM_TRANS_A : 0;
		const uint32_t tb = fl & 2 ? GPO_MM_TRANS_B : 0;
		struct gpo_matmul_args fw = {
			.m = m, .n = n, .k = k, .batch = 1, .flags = ta | tb,
			.lda = ta ? m : k, .ldb = tb ? k : n, .ldc = n,
			.alpha = (float)tu_rand(rng, 0.5, 2),
		};
		struct gpo_matmul_args ga = fw, gb = fw;
		double *A = fd_rand(rng, m * k, -1, 1), *B = fd_rand(rng, k * n, -1, 1);
		double *W = fd_rand(rng, m * n, -1, 1), *C = fd_rand(rng, m * n, 0, 1);
		double *dA = fd_rand(rng, m * k, 0, 1), *dB = fd_rand(rng, k * n, 0, 1);
		uint32_t i;

		/* dA: m x k = W (m x n) op(B)^T, or k x m = op(B) W^T */
		if (!ta) {
			ga.m = m, ga.n = k, ga.k = n;
			ga.flags = tb ? 0 : GPO_MM_TRANS_B;
			ga.lda = n, ga.ldb = tb ? k : n, ga.ldc = k;
			mm_d(&ga, W, B, dA, NULL);
		} else {
			ga.m = k, ga.n = m, ga.k = n;
			ga.flags = (tb ? GPO_MM_TRANS_A : 0) | GPO_MM_TRANS_B;
			ga.lda = tb ? k : n, ga.ldb = n, ga.ldc = m;
			mm_d(&ga, B, W, dA, NULL);
		}
		/* dB: k x n = op(A)^T W, or n x k = W^T op(A) */
		if (!tb) {
			gb.m = k, gb.n = n, gb.k = m;
			gb.flags = ta ? 0 : GPO_MM_TRANS_A;
			gb.lda = ta ? m : k, gb.ldb = n, gb.ldc = n;
			mm_d(&gb, A, W, dB, NULL);
		} else {
			gb.m = n, gb.n = k, gb.k = m;
			gb.flags = GPO_MM_TRANS_A | (ta ? GPO_MM_TRANS_B : 0);
			gb.lda = n, gb.ldb = ta ? m : k, gb.ldc = k;
			mm_d(&gb, W, A, dB, NULL);
		}
		for (i = 0; i < m * k + k * n; i++) {
			double *v = i < m * k ? &A[i] : &B[i - m * k];
			double v0 = *v, lp, lm;
			char what[64];

			*v = v0 + FD_H;
			mm_d(&fw, A, B, C, NULL);
			lp = dot(W, C, m * n);
			*v = v0 - FD_H;
			mm_d(&fw, A, B, C, NULL);
			lm = dot(W, C, m * n);
			*v = v0;
			snprintf(what, sizeof(what), "matmul flags %#x d%s[%u]",
				 fw.flags, i < m * k ? "A" : "B",
				 i < m * k ? i : i - m * k);
			fd_check(what, i < m * k ? dA[i] : dB[i - m * k],
				 (lp - lm) / (2 * FD_H));
		}
		free(A);
		free(B);
		free(W);
		free(C);
		free(dA);
		free(dB);
	}
}

/*
 * attention of one matrix, L = sum W .* y: the backward reference (with l
 * and d of the forward) against differences of the forward, for every
 * element of q, k and v
 */
static void fd_attention(uint64_t *rng)
{
	const uint32_t t = 6, hd = 3, n = t * hd;
	double scale = tu_rand(rng, 0.3, 1.5);
	double *q = fd_rand(rng, n, -1, 1), *k = fd_rand(rng, n, -1, 1);
	double *v = fd_rand(rng, n, -1, 1), *w = fd_rand(rng, n, -1, 1);
	double *y = fd_rand(rng, n, 0, 1), *l = fd_rand(rng, t, 0, 1);
	double *d = fd_rand(rng, t, 0, 1), *g[3];
	uint32_t i, x;

	for (x = 0; x < 3; x++)
		g[x] = fd_rand(rng, n, 0, 1);
	attn_fwd_d(q, k, v, t, hd, scale, y, l);
	for (i = 0; i < t; i++)
		d[i] = dot(w + i * hd, y + i * hd, hd);
	attn_bwd_ref_d(q, k, v, w, l, d, t, hd, scale, g[0], g[1], g[2], NULL,
		       NULL, NULL);
	for (x = 0; x < 3; x++)
		for (i = 0; i < n; i++) {
			double *p = x == 0 ? &q[i] : x == 1 ? &k[i] : &v[i];
			double p0 = *p, lp, lm;
			char what[64];

			*p = p0 + FD_H;
			attn_fwd_d(q, k, v, t, hd, scale, y, l);
			lp = dot(w, y, n);
			*p = p0 - FD_H;
			attn_fwd_d(q, k, v, t, hd, scale, y, l);
			lm = dot(w, y, n);
			*p = p0;
			snprintf(what, sizeof(what), "attention d%c[%u]",
				 "qkv"[x], i);
			fd_check(what, g[x][i], (lp - lm) / (2 * FD_H));
		}
	free(q);
	free(k);
	free(v);
	free(w);
	free(y);
	free(l);
	free(d);
	for (x = 0; x < 3; x++)
		free(g[x]);
}

START_TEST(test_backward_refs_match_finite_differences)
{
	uint64_t rng = tu_rng("ops-fd");
	int rep;

	for (rep = 0; rep < 5; rep++) {
		fd_unary(&rng);
		fd_reduce(&rng);
		fd_softmax(&rng);
		fd_layernorm(&rng);
		fd_xent(&rng);
		fd_matmul(&rng);
		fd_attention(&rng);
	}
}
END_TEST

/* ---- the table ------------------------------------------------------------ */

/*
 * a unary fn forward and backward, without and with GPO_T_ACCUM, and
 * with GPO_EW_QUADS
 */
#define UNARY(fn, name) \
	{ OP_UNARY, name, unary_setup, unary_ref, V_FN(fn) }, \
	{ OP_UNARY, name " accum", unary_setup, unary_ref, \
	  V_FN(fn) | GPO_T_ACCUM }, \
	{ OP_UNARY_BWD, name, unary_bwd_setup, unary_bwd_ref, V_FN(fn) }, \
	{ OP_UNARY_BWD, name " accum", unary_bwd_setup, unary_bwd_ref, \
	  V_FN(fn) | GPO_T_ACCUM }, \
	{ OP_UNARY, name " quads accum", unary_setup, unary_ref, \
	  V_FN(fn) | EW_QUADS | GPO_T_ACCUM }, \
	{ OP_UNARY_BWD, name " quads", unary_bwd_setup, unary_bwd_ref, \
	  V_FN(fn) | EW_QUADS }, \
	{ OP_UNARY_BWD, name " quads accum", unary_bwd_setup, \
	  unary_bwd_ref, V_FN(fn) | EW_QUADS | GPO_T_ACCUM }

/* the same with GPO_EW_QUADS (ADD, SUB, MUL) */
#define QUADS(fn, name) \
	{ OP_BINARY, name " quads", binary_setup, binary_ref, \
	  V_FN(fn) | EW_QUADS }, \
	{ OP_BINARY, name " bias quads accum", binary_setup, binary_ref, \
	  V_FN(fn) | EW_BIAS | EW_QUADS | GPO_T_ACCUM }, \
	{ OP_BINARY, name " column quads", binary_setup, binary_ref, \
	  V_FN(fn) | EW_COL | EW_QUADS }

/* a binary op on full shapes, a bias row and a column */
#define BINARY(fn, name) \
	{ OP_BINARY, name, binary_setup, binary_ref, V_FN(fn) }, \
	{ OP_BINARY, name " bias accum", binary_setup, binary_ref, \
	  V_FN(fn) | EW_BIAS | GPO_T_ACCUM }, \
	{ OP_BINARY, name " column", binary_setup, binary_ref, \
	  V_FN(fn) | EW_COL }


/* ---- bit-exact ops: div and sqrt, and the cast family ------------------ */

/*
 * A float of any kind for the bit-exact ops: ordinary values, subnormals,
 * huge and tiny magnitudes, ties of the 16-bit roundings, zeros,
 * infinities and NaNs (quiet and signalling, with payloads).
 */
static float special(struct tcase *tc)
{
	uint32_t r = (uint32_t)tu_rand(&tc->rng, 0, 4294967296.0);
	uint32_t sign = r & 0x80000000u, m = r & 0x7fffff;

	switch (urand(tc, 0, 11)) {
	case 0:
		return bitsw(sign | m);				/* subnormal */
	case 1:
		return bitsw(sign | urand(tc, 0xf0, 0xfe) << 23 | m);
	case 2:
		return bitsw(sign | urand(tc, 1, 10) << 23 | m);
	case 3:		/* ties and near-ties of bf16 and f16 rounding */
		return bitsw((r & 0xffff0000u) | (urand(tc, 0, 1) ?
			     0x8000 : 0x7fff + urand(tc, 0, 2)));
	case 4:
		return bitsw((r & 0xffffe000u) | 0x1000);
	case 5:
		return bitsw(sign | 0x7f800000u | (urand(tc, 0, 2) ? m : 0));
	case 6:
		return bitsw(sign | (urand(tc, 0, 1) ? 0 : 0x7fc00000u));
	case 7:		/* f16's range edges: 65520, 2^-25, 2^-14 */
		return bitsw(sign | urand(tc, 0x66, 0x71) << 23 | m);
	case 8:
		return bitsw(sign | urand(tc, 0x8e, 0x90) << 23 | m);
	}
	return (float)srand2(tc, 1e-3, 1e3);
}

/*
 * Near-ties for the kernels' cr_div and cr_sqrt, whose fast paths round
 * by an exact residual (kernels/opencl/precision.cl): a dividend A
 * 2^(25+j) whose quotient by B 2^e (B odd) is within 16 / B ulp of a
 * midpoint between two floats (A 2^25 = M B + eps, M odd in [2^24, 2^25),
 * eps small and odd), and a square (M^2 + eps) 2^(2j) with M odd, 25 bits.
 */
static float div_near_tie(struct tcase *tc, uint32_t B)
{
	uint32_t inv = B, M;
	int64_t eps;
	int i;

	for (i = 0; i < 5; i++)		/* B^-1 mod 2^32, Newton's way */
		inv *= 2 - B * inv;
	for (i = 0; i < 32; i++) {
		eps = ((int64_t)urand(tc, 0, 32) - 16) | 1;
		M = ((uint32_t)-eps * inv) & 0x1ffffffu;
		if (M >= 0x1000000u)
			return ldexpf((float)(((uint64_t)M * B +
					       (uint64_t)eps) >> 25),
				      (int)urand(tc, 0, 40) + 5);
	}
	return 3.0f;
}

static float sqrt_near_tie(struct tcase *tc)
{
	int k = 25 + (int)urand(tc, 0, 1), i;
	uint64_t m = (1ull << k) - 1, c = 1 + 8 * urand(tc, 0, 7), x = 1;
	uint64_t M, A;

	if (urand(tc, 0, 1))
		c = (1ull << k) - 7 - 8 * urand(tc, 0, 7);
	for (i = 3; i < k; i++)		/* x^2 = c (mod 2^(i+1)) */
		if (((x * x - c) & ((2ull << i) - 1)) != 0)
			x += 1ull << (i - 1);
	for (i = 0; i < 4; i++) {
		M = ((i & 1 ? (1ull << k) - x : x) +
		     (i & 2 ? 1ull << (k - 1) : 0)) & m;
		A = (M * M + (c < 1ull << (k - 1) ? -c : (1ull << k) - c)) >> k;
		if (M >= 1ull << 24 && M < 1ull << 25 && A < 1ull << 24)
			return ldexpf((float)A, k - 90 +
				      2 * (int)urand(tc, 0, 40));
	}
	return 2.0f;
}

/*
 * div and sqrt: any operands, alpha 1, the cpu's IEEE bits exactly; half
 * the divisors one B 2^e and half the dividends near-ties for it (so a
 * quarter of the quotients are, whatever the broadcast), a third of the
 * roots near-ties
 */
static void div_exact_setup(struct tcase *tc)
{
	uint32_t B = 0x800001u | (urand(tc, 0, 0xffffff) & 0x7ffffeu);
	float b = ldexpf((float)B, (int)urand(tc, 0, 40) - 20);
	uint64_t k;

	binary_setup(tc);
	tc->a.ew.alpha = 1.0f;
	for (k = 0; k < tc->b[0].n; k++)
		put(&tc->b[0], k, urand(tc, 0, 1) ? special(tc) :
		    bitsw(wbits(div_near_tie(tc, B)) |
			  urand(tc, 0, 1) << 31));
	for (k = 0; k < tc->b[1].n; k++)
		put(&tc->b[1], k, urand(tc, 0, 1) ? special(tc) : b);
}

static void div_exact_ref(struct tcase *tc)
{
	const struct gpo_ew_args *a = &tc->a.ew;
	struct tbuf *y = &tc->b[2];
	uint64_t i;

	y->exact = 1;
	for (i = 0; i < a->n; i++) {
		float u = f(&tc->b[0], ew_index(a, a->sa, a->off_a, i));
		float v = f(&tc->b[1], ew_index(a, a->sb, a->off_b, i));

		y->want[a->off_y + i] = wbits(u / v);
	}
}

static void sqrt_exact_setup(struct tcase *tc)
{
	uint64_t k;

	unary_setup(tc);
	tc->a.ew.alpha = 1.0f;
	for (k = 0; k < tc->b[0].n; k++)
		put(&tc->b[0], k, urand(tc, 0, 2) ? special(tc) :
		    sqrt_near_tie(tc));
}

static void sqrt_exact_ref(struct tcase *tc)
{
	const struct gpo_ew_args *a = &tc->a.ew;
	struct tbuf *y = &tc->b[1];
	uint64_t i;

	y->exact = 1;
	for (i = 0; i < a->n; i++)
		y->want[a->off_y + i] = wbits(sqrtf(f(&tc->b[0],
			ew_index(a, a->sa, a->off_a, i))));
}

static void cast_groups(struct tcase *tc, struct gpo_cast_args *a,
			uint64_t items)
{
	a->groups = urand(tc, 1, (uint32_t)((items + GPO_WG_SIZE - 1) /
					    GPO_WG_SIZE) + 1);
	tc->work = a->groups;
}

static int cast_to16(uint32_t fn)
{
	return fn == GPO_CAST_F32_F16 || fn == GPO_CAST_F32_BF16 ||
	       fn == GPO_CAST_F32_BF16_SR;
}

/*
 * cast: n odd or even, 16-bit views at even element offsets (a random
 * number of words in), f32 views at odd ones; seed, step and the base
 * 64-bit random.
 */
static void cast_setup(struct tcase *tc)
{
	struct gpo_cast_args *a = &tc->a.cast;
	uint32_t fn = FN_OF(tc), wo, k;
	uint64_t n = odd_n(tc) + urand(tc, 0, 1), i;

	a->n = (uint32_t)n;
	tc->n = n;
	a->fn = fn;
	a->seed_lo = urand(tc, 0, 0xfffffffeu);
	a->seed_hi = urand(tc, 0, 0xfffffffeu);
	a->step_lo = urand(tc, 0, 0xfffffffeu);
	a->step_hi = urand(tc, 0, 0xfffffffeu);
	/* a base near a 2^32 boundary now and then: the carry */
	a->base_lo = urand(tc, 0, 1) ? 0xffffffffu - urand(tc, 0, 300) :
				       urand(tc, 0, 0xfffffffeu);
	a->base_hi = urand(tc, 0, 0xfffffffeu);
	wo = urand(tc, 0, 5);
	if (cast_to16(fn)) {
		a->off_src = tb_in_at(tc, &tc->b[0], n, -1, 1);
		for (i = 0; i < tc->b[0].n; i++)
			put(&tc->b[0], i, special(tc));
		tb_alloc(&tc->b[1], wo + (n + 1) / 2 + tail(tc));
		a->off_dst = 2 * wo;
		cast_groups(tc, a, (n + 1) / 2);
	} else {
		tb_alloc(&tc->b[0], wo + (n + 1) / 2 + tail(tc));
		for (k = 0; k < tc->b[0].n; k++)
			tc->b[0].in[k] = urand(tc, 0, 0xfffffffeu);
		a->off_src = 2 * wo + urand(tc, 0, 1);
		if (a->off_src + n > 2 * tc->b[0].n)
			a->off_src--;
		a->off_dst = tb_out_at(tc, &tc->b[1], n);
		cast_groups(tc, a, n);
	}
	a->off_absmax = 0xdeadbeef;
	tc->b[0].exact = 1;
	tc->b[1].exact = 1;
}

static void cast_ref(struct tcase *tc)
{
	const struct gpo_cast_args *a = &tc->a.cast;
	struct tbuf *d = &tc->b[1];
	uint64_t seed = (uint64_t)a->seed_hi << 32 | a->seed_lo;
	uint64_t step = (uint64_t)a->step_hi << 32 | a->step_lo;
	uint64_t base = (uint64_t)a->base_hi << 32 | a->base_lo, i;

	for (i = 0; i < a->n; i++) {
		if (cast_to16(a->fn)) {
			float x = f(&tc->b[0], a->off_src + i);
			uint64_t w = a->off_dst / 2 + i / 2;
			uint32_t h, old;

			if (a->fn == GPO_CAST_F32_F16)
				h = gpo__f32_to_f16(x);
			else if (a->fn == GPO_CAST_F32_BF16)
				h = gpo__f32_to_bf16(x);
			else
				h = gpo__f32_to_bf16_sr(x,
					gpo__round_bits(seed, step, base + i));
			old = isnan(d->want[w]) ? d->in[w] :
						  (uint32_t)d->want[w];
			old = i & 1 ? (old & 0xffff) | h << 16 :
				      (old & 0xffff0000u) | h;
			d->want[w] = old;
		} else {
			uint64_t e = a->off_src + i;
			uint16_t h = (uint16_t)(tc->b[0].in[e / 2] >>
						(e & 1 ? 16 : 0));

			d->want[a->off_dst + i] = wbits(a->fn == GPO_CAST_F16_F32 ?
				gpo__f16_to_f32(h) : gpo__bf16_to_f32(h));
		}
	}
}

#define Q_SIGNED	V_A
#define Q_SPECIAL	V_B	/* blocks of zeros, infinities, NaNs */
#define Q_EDGES	V_C	/* quotients at and next to the map's */

/* quant8's codes @wo words in and absmax; its groups */
static void quant8_outputs(struct tcase *tc, uint32_t wo, uint64_t blocks)
{
	struct gpo_cast_args *a = &tc->a.cast;

	tb_alloc(&tc->b[1], wo + (a->n + 3) / 4 + tail(tc));
	a->off_dst = 4 * wo;
	a->off_absmax = tb_out_at(tc, &tc->b[2], blocks);
	cast_groups(tc, a, blocks * GPO_WG_SIZE);
	if (a->groups > blocks + 1)
		a->groups = (uint32_t)blocks + 1;
	tc->work = a->groups;
	tc->b[0].exact = tc->b[1].exact = tc->b[2].exact = 1;
}

/* quant8: blocks of their own scale; u8 codes at a word boundary */
static void quant8_setup(struct tcase *tc)
{
	struct gpo_cast_args *a = &tc->a.cast;
	uint64_t n = odd_n(tc) * urand(tc, 1, 3) + urand(tc, 0, 1), i;
	uint64_t blocks = (n + GPO_CAST_BLOCK - 1) / GPO_CAST_BLOCK;
	uint32_t wo = urand(tc, 0, 5);
	double scale = 1;

	a->n = (uint32_t)n;
	tc->n = n;
	a->flags = HAS(tc, Q_SIGNED) ? GPO_CAST_SIGNED : 0;
	a->off_src = tb_in_at(tc, &tc->b[0], n, -1, 1);
	for (i = 0; i < n; i++) {
		float x;

		if (i % GPO_CAST_BLOCK == 0)
			scale = pow(10, tu_rand(&tc->rng, -30, 30));
		x = (float)(tu_rand(&tc->rng, HAS(tc, Q_SIGNED) ? -1 : 0, 1) *
			    scale);
		if (HAS(tc, Q_SPECIAL)) {
			switch ((i / GPO_CAST_BLOCK) % 4) {
			case 0:
				x = 0;
				break;
			case 1:
				if (tu_rand(&tc->rng, 0, 1) < 0.02)
					x = special(tc);
				break;
			}
		}
		put(&tc->b[0], a->off_src + i, x);
	}
	quant8_outputs(tc, wo, blocks);
}

/*
 * @x and its @d float neighbours each side (below 0: negative
 * subnormals), both signs, into @v from @k; none above 1 in magnitude,
 * where it would be the block's absmax. The new count.
 */
static uint64_t put_near(float *v, uint64_t k, float x, int d)
{
	uint32_t b;
	int j;

	memcpy(&b, &x, 4);
	for (j = -d; j <= d; j++) {
		uint32_t y = b + (uint32_t)j;

		if (b == 0 && j < 0)
			y = 0x80000000u | (uint32_t)-j;
		if ((y & 0x7fffffffu) > 0x3f800000u)
			continue;
		memcpy(&v[k], &y, 4);
		v[k + 1] = -v[k];
		k += 2;
	}
	return k;
}

/*
 * The quotients that would show a wrong step in the kernels' search (the
 * bucket table and its scan, precision.cl): every map value and the
 * midpoint of every two neighbours, each with two floats either side;
 * every float in [2^-24, 1) of 6 significand bits or fewer (the ends of
 * the table's buckets) and one either side; zeros, subnormals and tiny
 * normals; all in both signs. The count, at most QEDGE_MAX.
 */
#define QEDGE_MAX	16384

static uint64_t quant8_edges(const float *q, float *v)
{
	uint64_t k = 0;
	int i, e;

	for (i = 0; i < 256; i++) {
		k = put_near(v, k, q[i], 2);
		if (i < 255)
			k = put_near(v, k, q[i] + (q[i + 1] - q[i]) / 2, 2);
	}
	for (e = -24; e < 0; e++)
		for (i = 0; i < 64; i++)
			k = put_near(v, k, ldexpf(1 + i / 64.0f, e), 1);
	for (i = 0; i < 8; i++) {
		k = put_near(v, k, ldexpf(1, -149 + 3 * i), 0);
		k = put_near(v, k, ldexpf(1, -126 + 13 * i), 1);
	}
	k = put_near(v, k, 0.0f, 0);
	ck_assert_uint_le(k, QEDGE_MAX);
	return k;
}

/*
 * quant8 at the map's edges (quant8_edges()): each block's first element
 * is +-absmax, a power of 2 (1 in every other block), and the rest are
 * quotients times it, so that x / absmax is the quotient exactly.
 */
static void quant8_edges_setup(struct tcase *tc)
{
	static float v[QEDGE_MAX];
	struct gpo_cast_args *a = &tc->a.cast;
	uint64_t nv = quant8_edges(gpo__qmap[HAS(tc, Q_SIGNED)], v);
	uint64_t blocks = (nv + GPO_CAST_BLOCK - 2) / (GPO_CAST_BLOCK - 1);
	uint64_t n = nv + blocks, i, k = 0;
	uint32_t wo = urand(tc, 0, 5);
	float scale = 1;

	a->n = (uint32_t)n;
	tc->n = n;
	a->flags = HAS(tc, Q_SIGNED) ? GPO_CAST_SIGNED : 0;
	a->off_src = tb_in_at(tc, &tc->b[0], n, -1, 1);
	for (i = 0; i < n; i++) {
		if (i % GPO_CAST_BLOCK == 0) {
			scale = i / GPO_CAST_BLOCK % 2 ?
				ldexpf(1, (int)urand(tc, 0, 80) - 40) : 1;
			put(&tc->b[0], a->off_src + i,
			    urand(tc, 0, 1) ? scale : -scale);
		} else {
			put(&tc->b[0], a->off_src + i, v[k++] * scale);
		}
	}
	quant8_outputs(tc, wo, blocks);
}

static void quant8_ref(struct tcase *tc)
{
	const struct gpo_cast_args *a = &tc->a.cast;
	int sg = !!(a->flags & GPO_CAST_SIGNED);
	uint64_t i, k;

	for (i = 0; i < tc->b[1].n; i++)
		tc->b[1].want[i] = NAN;
	for (k = 0; k * GPO_CAST_BLOCK < a->n; k++) {
		uint64_t e = (k + 1) * GPO_CAST_BLOCK < a->n ?
			     (k + 1) * GPO_CAST_BLOCK : a->n;
		uint32_t m = 0;

		for (i = k * GPO_CAST_BLOCK; i < e; i++)
			if ((tc->b[0].in[a->off_src + i] & 0x7fffffff) > m)
				m = tc->b[0].in[a->off_src + i] & 0x7fffffff;
		tc->b[2].want[a->off_absmax + k] = m;
		for (i = k * GPO_CAST_BLOCK; i < e; i++) {
			uint64_t w = (a->off_dst + i) / 4;
			uint32_t sh = 8 * ((a->off_dst + i) % 4), old;
			uint8_t q = gpo__quant8(f(&tc->b[0], a->off_src + i),
						bitsw(m), sg);

			old = isnan(tc->b[1].want[w]) ? tc->b[1].in[w] :
				(uint32_t)tc->b[1].want[w];
			tc->b[1].want[w] = (old & ~(0xffu << sh)) |
					   (uint32_t)q << sh;
		}
	}
}

static void dequant8_setup(struct tcase *tc)
{
	struct gpo_cast_args *a = &tc->a.cast;
	uint64_t n = odd_n(tc) * urand(tc, 1, 3) + urand(tc, 0, 1), i;
	uint64_t blocks = (n + GPO_CAST_BLOCK - 1) / GPO_CAST_BLOCK;
	uint32_t wo = urand(tc, 0, 5);

	a->n = (uint32_t)n;
	tc->n = n;
	a->flags = HAS(tc, Q_SIGNED) ? GPO_CAST_SIGNED : 0;
	tb_alloc(&tc->b[0], wo + (n + 3) / 4 + tail(tc));
	for (i = 0; i < tc->b[0].n; i++)
		tc->b[0].in[i] = urand(tc, 0, 0xfffffffeu);
	a->off_src = 4 * wo;
	a->off_absmax = tb_in_at(tc, &tc->b[1], blocks, 0, 1);
	for (i = 0; i < blocks; i++)
		put(&tc->b[1], a->off_absmax + i, i % 5 == 4 ? 0.0f :
		    /* tiny scales: subnormal products, on every device */
		    i % 5 == 3 ? (float)pow(10, tu_rand(&tc->rng, -44, -32)) :
		    (float)pow(10, tu_rand(&tc->rng, -30, 30)));
	a->off_dst = tb_out_at(tc, &tc->b[2], n);
	cast_groups(tc, a, n);
	tc->b[0].exact = tc->b[1].exact = tc->b[2].exact = 1;
}

static void dequant8_ref(struct tcase *tc)
{
	const struct gpo_cast_args *a = &tc->a.cast;
	int sg = !!(a->flags & GPO_CAST_SIGNED);
	uint64_t i;

	for (i = 0; i < a->n; i++) {
		uint64_t e = a->off_src + i;
		uint8_t q = (uint8_t)(tc->b[0].in[e / 4] >> (8 * (e % 4)));

		tc->b[2].want[a->off_dst + i] = wbits(gpo__dequant8(q,
			f(&tc->b[1], a->off_absmax + i / GPO_CAST_BLOCK), sg));
	}
}

/* ---- blockwise 8-bit state: adam8, rmsprop8, adagrad8, lion8 ------------ */

/*
 * The u8 updates (abi/adam.h): p and g views of n elements, code slots
 * and absmax arrays bound whole with the group at q_off (bytes, a
 * multiple of 4) and q_blk; q_groups workgroups over the blocks. The
 * reference is the cpu backend's arithmetic in float, so every buffer is
 * compared bit for bit.
 */
struct u8_layout {
	int p, g, q[2], scal, absmax[2], nq, half;
};

static const struct u8_layout *u8_layout_of(enum gpo__op_id op)
{
	static const struct u8_layout adam = { 0, 1, { 2, 3 }, 5, { 6, 7 }, 2,
					       GPO_ADAM8_BUF_HALF };
	static const struct u8_layout rms = { 0, 1, { 2, -1 }, 5, { 6, -1 }, 1,
					      GPO_RMSPROP8_BUF_HALF };
	static const struct u8_layout ada = { 0, 1, { 2, -1 }, 3, { 4, -1 }, 1,
					      GPO_ADAGRAD8_BUF_HALF };
	static const struct u8_layout one = { 0, 1, { 2, -1 }, 3, { 4, -1 }, 1,
					      GPO_LION8_BUF_HALF };

	return op == OP_ADAM8 ? &adam : op == OP_RMSPROP8 ? &rms :
	       op == OP_ADAGRAD8 ? &ada : &one;
}

/* the q_off, q_blk and q_groups words of the op's struct */
static uint32_t *u8_args(struct tcase *tc)
{
	switch (tc->oc->op) {
	case OP_ADAM8:
		return &tc->a.adam.q_off;
	case OP_RMSPROP8:
		return &tc->a.rmsprop.q_off;
	case OP_ADAGRAD8:
		return &tc->a.adagrad.q_off;
	default:
		return &tc->a.lion.q_off;
	}
}

static void u8_setup(struct tcase *tc, uint32_t flags)
{
	const struct u8_layout *l = u8_layout_of(tc->oc->op);
	uint64_t n = odd_n(tc) + urand(tc, 0, 300), i, blocks;
	uint32_t *q = u8_args(tc), wo = urand(tc, 0, 5), bo = urand(tc, 0, 7);

	/*
	 * whole quads only, or a last quad of 1 to 3 elements: on Vulkan
	 * each has a pipeline of its own (update.glsl's GPO_U8_QUADS)
	 */
	if (HAS(tc, QUADS_FLAG))
		n = (n + 3) & ~3ull;
	else if (!(n % 4))
		n += urand(tc, 1, 3);
	blocks = (n + 255) / 256;
	int k;

	tc->n = n;
	tb_random(tc, &tc->b[l->p], n, -1.0, 1.0);
	if (half_case(tc)) {
		half_buf(tc, &tc->b[l->g], n);
		half_buf(tc, &tc->b[l->half], n);
	} else {
		tb_random(tc, &tc->b[l->g], n, -1.0, 1.0);
	}
	tb_scal(tc, &tc->b[l->scal], !!(tc->oc->flags & SKIP_FLAG));
	for (k = 0; k < l->nq; k++) {
		struct tbuf *c = &tc->b[l->q[k]], *m = &tc->b[l->absmax[k]];

		tb_alloc(c, wo + (n + 3) / 4 + tail(tc));
		for (i = 0; i < c->n; i++)
			c->in[i] = (uint32_t)tu_rand(&tc->rng, 0, 4294967296.0);
		/*
		 * RMSprop's square_avg and Adagrad's sum are never negative
		 * (sums of squares): codes of the signed map's upper half
		 * (127: 0.0 on). A negative one would make sqrt's NaN, whose
		 * bits after further arithmetic are the hardware's own
		 * (NVIDIA's 0x7fffffff, x86's the operand's).
		 */
		if (tc->oc->op == OP_RMSPROP8 || tc->oc->op == OP_ADAGRAD8)
			for (i = 0; i < c->n; i++) {
				uint32_t w = 0;
				int b;

				for (b = 0; b < 4; b++)
					w |= (127u + (c->in[i] >> (8 * b) &
						      0xffu) % 129u) << (8 * b);
				c->in[i] = w;
			}
		tb_alloc(m, bo + blocks + tail(tc));
		for (i = 0; i < m->n; i++)
			put(m, i, (float)pow(10, tu_rand(&tc->rng, -3, 1)));
		/*
		 * a block in 6 of scale 0 or 2^-110: dequantized by the
		 * integer product, states tiny or zero (the kernels' paths
		 * for what their fast ones cannot do)
		 */
		for (i = 0; i < blocks; i++)
			if (urand(tc, 0, 5) == 0)
				put(m, bo + i, urand(tc, 0, 1) ?
					       0.0f : ldexpf(1, -110));
		c->exact = m->exact = 1;
	}
	/*
	 * zero gradients on zero states here and there (f32 gradients):
	 * zero moments, whose quotients and roots take the full paths
	 */
	for (i = 0; !half_case(tc) && i < n; i++) {
		if (urand(tc, 0, 40) != 0)
			continue;
		put(&tc->b[l->g], i, 0.0f);
		for (k = 0; k < l->nq; k++) {
			uint32_t *w = &tc->b[l->q[k]].in[wo + i / 4];
			uint32_t z = tc->oc->op == OP_ADAM8 && k == 1 ? 0 : 127;

			*w = (*w & ~(0xffu << (8 * (i % 4)))) |
			     z << (8 * (i % 4));
		}
	}
	/* the slots the 8-bit kernel never touches */
	for (k = 2; k < (int)gpo__ops[tc->oc->op].nbuf; k++)
		if (!tc->b[k].n) {
			tb_random(tc, &tc->b[k], 4, -1.0, 1.0);
			tc->b[k].unused = 1;
		}
	tc->b[l->p].exact = 1;
	q[0] = 4 * wo;
	q[1] = bo;
	q[2] = urand(tc, 1, blocks < 6 ? (uint32_t)blocks : 6);
	tc->work = q[2];
	(void)flags;
}

static float u8_sign(float x)
{
	return (float)(x > 0.0f) - (float)(x < 0.0f);
}

static void u8_ref(struct tcase *tc)
{
	const struct u8_layout *l = u8_layout_of(tc->oc->op);
	const uint32_t *q = u8_args(tc);
	enum gpo__op_id op = tc->oc->op;
	uint32_t flags = tc->a.adam.flags;	/* every struct: n, flags */
	float gm = (float)gmul(tc, flags, l->scal);
	struct tbuf *pb = &tc->b[l->p];
	uint64_t n = tc->n, i, k;
	int j;

	if (skipped(tc, flags, l->scal))
		return;
	for (k = 0; k * 256 < n; k++) {
		uint64_t first = k * 256, cnt = n - first < 256 ? n - first : 256;
		float x[2][256], am[2] = { 0, 0 };

		for (i = 0; i < cnt; i++) {
			uint64_t e = first + i, qe = q[0] + e;
			float p = f(pb, e), d[2];
			float g = half_case(tc) ? half_at(tc, &tc->b[l->g], e) :
						f(&tc->b[l->g], e);

			for (j = 0; j < l->nq; j++) {
				uint32_t w = tc->b[l->q[j]].in[qe / 4];

				d[j] = gpo__dequant8((uint8_t)(w >> (8 * (qe % 4))),
						     f(&tc->b[l->absmax[j]],
						       q[1] + k),
						     !(op == OP_ADAM8 && j == 1));
			}
			if (op == OP_ADAM8) {
				const struct gpo_adam_args *a = &tc->a.adam;
				int dec = !!(a->flags & GPO_ADAM_DECOUPLED);
				float gi = g * gm + (dec ? 0.0f : a->weight_decay) * p;
				float denom;

				x[0][i] = d[0] * a->beta1 + a->one_minus_beta1 * gi;
				x[1][i] = d[1] * a->beta2 +
					  a->one_minus_beta2 * gi * gi;
				denom = sqrtf(x[1][i]) / a->bc2_sqrt + a->eps;
				p = p * (dec ? a->decay : 1.0f) -
				    a->step_size * (x[0][i] / denom);
			} else if (op == OP_RMSPROP8) {
				const struct gpo_rmsprop_args *a = &tc->a.rmsprop;
				float gi = g * gm + a->weight_decay * p;

				x[0][i] = d[0] * a->alpha + a->one_minus_alpha * gi * gi;
				p = p - a->lr * (gi / (sqrtf(x[0][i]) + a->eps));
			} else if (op == OP_ADAGRAD8) {
				const struct gpo_adagrad_args *a = &tc->a.adagrad;
				float gi = g * gm + a->weight_decay * p;

				x[0][i] = d[0] + gi * gi;
				p = p - a->clr * (gi / (sqrtf(x[0][i]) + a->eps));
			} else {
				const struct gpo_lion_args *a = &tc->a.lion;
				float gi = g * gm;

				p = p * a->decay - a->lr *
				    u8_sign(d[0] * a->beta1 + a->one_minus_beta1 * gi);
				x[0][i] = d[0] * a->beta2 + a->one_minus_beta2 * gi;
			}
			pb->want[e] = wbits(p);
			if (half_case(tc))
				half_want(tc, &tc->b[l->half], e, p);
			for (j = 0; j < l->nq; j++)
				if ((wbits(x[j][i]) & 0x7fffffffu) >
				    wbits(am[j]))
					am[j] = bitsw(wbits(x[j][i]) &
						      0x7fffffffu);
		}
		for (j = 0; j < l->nq; j++) {
			struct tbuf *c = &tc->b[l->q[j]];

			tc->b[l->absmax[j]].want[q[1] + k] = wbits(am[j]);
			for (i = 0; i < cnt; i++) {
				uint64_t qe = q[0] + first + i;
				uint32_t sh = 8 * (qe % 4), old;
				uint8_t code = gpo__quant8(x[j][i], am[j],
						!(op == OP_ADAM8 && j == 1));

				old = isnan(c->want[qe / 4]) ? c->in[qe / 4] :
					(uint32_t)c->want[qe / 4];
				c->want[qe / 4] = (old & ~(0xffu << sh)) |
						  (uint32_t)code << sh;
			}
		}
	}
}

static void adam8_setup(struct tcase *tc)
{
	struct gpo_adam_args *a = &tc->a.adam;
	uint64_t t = (uint64_t)tu_rand(&tc->rng, 1, 1000);
	double b1 = tu_rand(&tc->rng, 0.5, 0.95), b2 = tu_rand(&tc->rng, 0.9, 0.9999);
	double lr = tu_rand(&tc->rng, 1e-4, 1e-1);

	u8_setup(tc, 0);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | VARIANT(tc) | GPO_ADAM_STATE_U8 |
		   half_flags(tc);
	a->beta1 = (float)b1;
	a->beta2 = (float)b2;
	a->eps = (float)tu_rand(&tc->rng, 1e-8, 1e-3);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->step_size = (float)(lr / (1 - pow(b1, (double)t)));
	a->bc2_sqrt = (float)sqrt(1 - pow(b2, (double)t));
	a->decay = (float)(1 - lr * a->weight_decay);
	a->one_minus_beta1 = (float)(1 - b1);
	a->one_minus_beta2 = (float)(1 - b2);
}

static void rmsprop8_setup(struct tcase *tc)
{
	struct gpo_rmsprop_args *a = &tc->a.rmsprop;

	u8_setup(tc, 0);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | GPO_RMSPROP_STATE_U8 |
		   half_flags(tc);
	a->lr = (float)tu_rand(&tc->rng, 1e-4, 1e-1);
	a->alpha = (float)tu_rand(&tc->rng, 0.8, 0.99);
	a->eps = (float)tu_rand(&tc->rng, 1e-6, 1e-2);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->one_minus_alpha = (float)(1.0 - a->alpha);
}

static void adagrad8_setup(struct tcase *tc)
{
	struct gpo_adagrad_args *a = &tc->a.adagrad;

	u8_setup(tc, 0);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | GPO_ADAGRAD_STATE_U8 |
		   half_flags(tc);
	a->clr = (float)tu_rand(&tc->rng, 1e-4, 1e-1);
	a->weight_decay = (float)tu_rand(&tc->rng, 0, 0.1);
	a->eps = (float)tu_rand(&tc->rng, 1e-10, 1e-3);
}

static void lion8_setup(struct tcase *tc)
{
	struct gpo_lion_args *a = &tc->a.lion;
	double lr = tu_rand(&tc->rng, 1e-5, 1e-2);

	u8_setup(tc, 0);
	a->n = (uint32_t)tc->n;
	a->flags = upd_flags(tc) | GPO_LION_STATE_U8 |
		   half_flags(tc);
	a->lr = (float)lr;
	a->beta1 = (float)tu_rand(&tc->rng, 0.8, 0.95);
	a->beta2 = (float)tu_rand(&tc->rng, 0.9, 0.999);
	a->decay = (float)(1 - lr * tu_rand(&tc->rng, 0, 0.1));
	a->one_minus_beta1 = (float)(1 - a->beta1);
	a->one_minus_beta2 = (float)(1 - a->beta2);
}

static const struct op_case cases[] = {
	{ OP_COPY, "", copy_setup, copy_ref, 0 },
	{ OP_FILL, "", fill_setup, fill_ref, 0 },
	{ OP_NORM_PARTIAL, "finite", norm_partial_setup, norm_partial_ref, 0 },
	{ OP_NORM_PARTIAL, "inf", norm_partial_setup, norm_partial_ref, 1 },
	{ OP_NORM_PARTIAL, "nan", norm_partial_setup, norm_partial_ref, 2 },
	{ OP_NORM_FINAL, "", norm_final_setup, norm_final_ref, 0 },
	{ OP_NORM_FINAL, "clip", norm_final_setup, norm_final_ref, 1 },
	{ OP_NORM_FINAL, "clip check bad", norm_final_setup, norm_final_ref, 7 },
	{ OP_NORM_FINAL, "bad unchecked", norm_final_setup, norm_final_ref, 4 },
	{ OP_NORM_SMALL, "", norm_small_setup, norm_small_ref, 0 },
	{ OP_NORM_SMALL, "clip", norm_small_setup, norm_small_ref, 1 },
	{ OP_NORM_SMALL, "clip check inf", norm_small_setup, norm_small_ref,
	  7 },
	{ OP_NORM_SMALL, "check nan", norm_small_setup, norm_small_ref, 10 },
	{ OP_NORM_SMALL, "inf unchecked", norm_small_setup, norm_small_ref, 4 },
	/* GPO_NORM_EXACT's order, over f32 and half gradients */
	{ OP_NORM_PARTIAL, "exact", norm_partial_setup, norm_partial_ref,
	  NV_EXACT },
	{ OP_NORM_PARTIAL, "f16", norm_partial_setup, norm_partial_ref,
	  NV_F16 },
	{ OP_NORM_PARTIAL, "f16 nan", norm_partial_setup, norm_partial_ref,
	  NV_F16 | 2 },
	{ OP_NORM_PARTIAL, "bf16", norm_partial_setup, norm_partial_ref,
	  NV_BF16 },
	{ OP_NORM_PARTIAL, "bf16 inf", norm_partial_setup, norm_partial_ref,
	  NV_BF16 | 1 },
	{ OP_NORM_FINAL, "exact clip check bad", norm_final_setup,
	  norm_final_ref, NV_EXACT | 7 },
	{ OP_NORM_FINAL, "exact clip", norm_final_setup, norm_final_ref,
	  NV_EXACT | 1 },
	{ OP_NORM_SMALL, "exact clip", norm_small_setup, norm_small_ref,
	  NV_EXACT | 1 },
	{ OP_NORM_SMALL, "f16 clip", norm_small_setup, norm_small_ref,
	  NV_F16 | 1 },
	{ OP_NORM_SMALL, "f16 clip check inf", norm_small_setup,
	  norm_small_ref, NV_F16 | 7 },
	{ OP_NORM_SMALL, "bf16 clip", norm_small_setup, norm_small_ref,
	  NV_BF16 | 1 },
	{ OP_NORM_SMALL, "bf16 check nan", norm_small_setup, norm_small_ref,
	  NV_BF16 | 10 },
	{ OP_SGD, "", sgd_setup, sgd_ref, 0 },
	{ OP_SGD, "momentum first", sgd_setup, sgd_ref,
	  GPO_SGD_MOMENTUM | GPO_SGD_FIRST },
	{ OP_SGD, "nesterov", sgd_setup, sgd_ref,
	  GPO_SGD_MOMENTUM | GPO_SGD_NESTEROV },
	{ OP_SGD, "skip", sgd_setup, sgd_ref, GPO_SGD_MOMENTUM | SKIP_FLAG },
	{ OP_ADAM, "adam", adam_setup, adam_ref, 0 },
	{ OP_ADAM, "adamw amsgrad", adam_setup, adam_ref,
	  GPO_ADAM_DECOUPLED | GPO_ADAM_AMSGRAD },
	{ OP_ADAM, "adamw", adam_setup, adam_ref, GPO_ADAM_DECOUPLED },
	{ OP_ADAM, "skip", adam_setup, adam_ref, GPO_ADAM_AMSGRAD | SKIP_FLAG },
	{ OP_RMSPROP, "", rmsprop_setup, rmsprop_ref, 0 },
	{ OP_RMSPROP, "momentum centered", rmsprop_setup, rmsprop_ref,
	  GPO_RMSPROP_MOMENTUM | GPO_RMSPROP_CENTERED },
	{ OP_RMSPROP, "centered", rmsprop_setup, rmsprop_ref,
	  GPO_RMSPROP_CENTERED },
	{ OP_ADAGRAD, "", adagrad_setup, adagrad_ref, 0 },
	{ OP_ADAGRAD, "skip", adagrad_setup, adagrad_ref, SKIP_FLAG },
	{ OP_LION, "", lion_setup, lion_ref, 0 },
	{ OP_LAMB_PREP, "", lamb_prep_setup, lamb_prep_ref, 0 },
	{ OP_LAMB_PREP, "skip", lamb_prep_setup, lamb_prep_ref, SKIP_FLAG },
	{ OP_LAMB_TRUST, "", lamb_trust_setup, lamb_trust_ref, 0 },
	{ OP_LAMB_APPLY, "", lamb_apply_setup, lamb_apply_ref, 0 },
	{ OP_LAMB_APPLY, "skip", lamb_apply_setup, lamb_apply_ref, SKIP_FLAG },
	{ OP_OBJ_QUADRATIC, "", obj_setup, obj_ref, 0 },
	{ OP_OBJ_ROSENBROCK, "", obj_setup, obj_ref, 0 },
	{ OP_MATMUL, "", matmul_setup, matmul_ref, 0 },
	{ OP_MATMUL, "accum", matmul_setup, matmul_ref, GPO_T_ACCUM },
	{ OP_MATMUL, "trans_a", matmul_setup, matmul_ref, GPO_MM_TRANS_A },
	{ OP_MATMUL, "trans_b accum", matmul_setup, matmul_ref,
	  GPO_MM_TRANS_B | GPO_T_ACCUM },
	{ OP_MATMUL, "trans_a trans_b", matmul_setup, matmul_ref,
	  GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	{ OP_MATMUL, "batch padded", matmul_setup, matmul_ref,
	  MM_BATCH | MM_PAD },
	{ OP_MATMUL, "batch padded trans_a accum", matmul_setup, matmul_ref,
	  MM_BATCH | MM_PAD | GPO_MM_TRANS_A | GPO_T_ACCUM },
	{ OP_MATMUL, "batch trans_b", matmul_setup, matmul_ref,
	  MM_BATCH | GPO_MM_TRANS_B },
	{ OP_MATMUL, "67x131x45 padded", matmul_setup, matmul_ref,
	  MM_ODD | MM_PAD },
	{ OP_MATMUL, "67x131x45 trans_a trans_b accum", matmul_setup,
	  matmul_ref, MM_ODD | GPO_MM_TRANS_A | GPO_MM_TRANS_B | GPO_T_ACCUM },
	{ OP_MATMUL, "tiny", matmul_setup, matmul_ref, MM_TINY },
	{ OP_MATMUL, "tiny batch trans_a", matmul_setup, matmul_ref,
	  MM_TINY | MM_BATCH | GPO_MM_TRANS_A },
	{ OP_MATMUL, "k 0", matmul_setup, matmul_ref, MM_K0 },
	{ OP_MATMUL, "k 0 accum batch", matmul_setup, matmul_ref,
	  MM_K0 | GPO_T_ACCUM | MM_BATCH },
	{ OP_MATMUL, "wide trans_b", matmul_setup, matmul_ref,
	  MM_WIDE | GPO_MM_TRANS_B },
	{ OP_MATMUL_BIG, "", matmul_setup, matmul_ref, 0 },
	{ OP_MATMUL_BIG, "accum", matmul_setup, matmul_ref, GPO_T_ACCUM },
	{ OP_MATMUL_BIG, "wide", matmul_setup, matmul_ref, MM_WIDE },
	{ OP_MATMUL_BIG, "wide padded trans_a accum", matmul_setup,
	  matmul_ref, MM_WIDE | MM_PAD | GPO_MM_TRANS_A | GPO_T_ACCUM },
	{ OP_MATMUL_BIG, "wide batch trans_b", matmul_setup, matmul_ref,
	  MM_WIDE | MM_BATCH | GPO_MM_TRANS_B },
	{ OP_MATMUL_BIG, "wide trans_a trans_b", matmul_setup, matmul_ref,
	  MM_WIDE | GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	{ OP_MATMUL_BIG, "wide vec", matmul_setup, matmul_ref,
	  MM_WIDE | GPO_MM_VEC_A | GPO_MM_VEC_B },
	{ OP_MATMUL_BIG, "wide padded vec trans_a trans_b accum",
	  matmul_setup, matmul_ref, MM_WIDE | MM_PAD | GPO_MM_VEC_A |
	  GPO_MM_VEC_B | GPO_MM_TRANS_A | GPO_MM_TRANS_B | GPO_T_ACCUM },
	{ OP_MATMUL_BIG, "wide batch vec_a trans_b", matmul_setup,
	  matmul_ref, MM_WIDE | MM_BATCH | GPO_MM_VEC_A | GPO_MM_TRANS_B },
	{ OP_MATMUL_BIG, "batch vec_b trans_a", matmul_setup, matmul_ref,
	  MM_BATCH | GPO_MM_VEC_B | GPO_MM_TRANS_A },
	/* tall and narrow: 16-deep steps on OpenCL (opencl.c's deep()) */
	{ OP_MATMUL_BIG, "tall", matmul_setup, matmul_ref, MM_TALL },
	{ OP_MATMUL_BIG, "tall vec accum", matmul_setup, matmul_ref,
	  MM_TALL | GPO_MM_VEC_A | GPO_MM_VEC_B | GPO_T_ACCUM },
	{ OP_MATMUL_BIG, "tall padded batch vec_a trans_b", matmul_setup,
	  matmul_ref, MM_TALL | MM_PAD | MM_BATCH | GPO_MM_VEC_A |
	  GPO_MM_TRANS_B },
	{ OP_MATMUL_BIG, "tall vec_b trans_a", matmul_setup, matmul_ref,
	  MM_TALL | GPO_MM_VEC_B | GPO_MM_TRANS_A },
	/* half operands, f32 ones rounded to half (abi/matmul.h) */
	{ OP_MATMUL_HALF, "f16", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B },
	{ OP_MATMUL_HALF, "f16_a round batch padded trans_a accum",
	  matmul_setup, matmul_ref, GPO_MM_F16_A | GPO_MM_ROUND | MM_BATCH | MM_PAD |
	  GPO_MM_TRANS_A | GPO_T_ACCUM },
	{ OP_MATMUL_HALF, "f16 67x131x45 trans_a trans_b", matmul_setup,
	  matmul_ref, GPO_MM_F16_A | GPO_MM_F16_B | MM_ODD |
	  GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	{ OP_MATMUL_HALF, "round trans_b", matmul_setup, matmul_ref,
	  GPO_MM_ROUND | GPO_MM_TRANS_B },
	{ OP_MATMUL_HALF, "f16 tiny batch", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_TINY | MM_BATCH },
	{ OP_MATMUL_HALF, "f16 wide", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_WIDE },
	{ OP_MATMUL_HALF, "f16_b round wide batch trans_b accum",
	  matmul_setup, matmul_ref, GPO_MM_F16_B | GPO_MM_ROUND | MM_WIDE |
	  MM_BATCH | GPO_MM_TRANS_B | GPO_T_ACCUM },
	{ OP_MATMUL_HALF, "round wide vec trans_a", matmul_setup, matmul_ref,
	  GPO_MM_ROUND | MM_WIDE | GPO_MM_VEC_A | GPO_MM_VEC_B |
	  GPO_MM_TRANS_A },
	{ OP_MATMUL_HALF, "f16 wide vec padded trans_a trans_b",
	  matmul_setup, matmul_ref, GPO_MM_F16_A | GPO_MM_F16_B | GPO_MM_VEC_A |
	  GPO_MM_VEC_B | MM_WIDE | MM_PAD | GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	/* tensor cores: only where the device lists cooperative matrices */
	{ OP_MATMUL_COOP, "f16", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B },
	{ OP_MATMUL_COOP, "f16 wide batch padded accum", matmul_setup,
	  matmul_ref, GPO_MM_F16_A | GPO_MM_F16_B | MM_WIDE | MM_BATCH |
	  MM_PAD | GPO_T_ACCUM },
	{ OP_MATMUL_COOP, "f16 wide trans_a trans_b", matmul_setup,
	  matmul_ref, GPO_MM_F16_A | GPO_MM_F16_B | MM_WIDE |
	  GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "f16 odd trans_a", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_ODD | GPO_MM_TRANS_A },
	{ OP_MATMUL_COOP, "f32 rounded wide trans_b", matmul_setup,
	  matmul_ref, GPO_MM_ROUND | MM_WIDE | GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "f32 rounded tiny batch", matmul_setup, matmul_ref,
	  GPO_MM_ROUND | MM_TINY | MM_BATCH },
	{ OP_MATMUL_COOP, "f16_a k 0 accum", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | MM_K0 | GPO_T_ACCUM },
	/* whole products: pipelines of their own (pipeline.c's mm_spec()) */
	{ OP_MATMUL_COOP, "whole f16", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_WHOLE },
	{ OP_MATMUL_COOP, "whole f16 batch padded trans_a trans_b",
	  matmul_setup, matmul_ref, GPO_MM_F16_A | GPO_MM_F16_B | MM_WHOLE |
	  MM_BATCH | MM_PAD | GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "whole f32 rounded trans_a", matmul_setup,
	  matmul_ref, GPO_MM_ROUND | MM_WHOLE | GPO_MM_TRANS_A },
	{ OP_MATMUL_COOP, "whole f32 rounded batch padded trans_b",
	  matmul_setup, matmul_ref, GPO_MM_ROUND | MM_WHOLE | MM_BATCH |
	  MM_PAD | GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "whole f16_a padded trans_b", matmul_setup,
	  matmul_ref, GPO_MM_F16_A | GPO_MM_ROUND | MM_WHOLE | MM_PAD |
	  GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "whole f16_b batch trans_a", matmul_setup,
	  matmul_ref, GPO_MM_F16_B | GPO_MM_ROUND | MM_WHOLE | MM_BATCH |
	  GPO_MM_TRANS_A },
	/* tiles of 256 x 128: B^T fetched two steps deep */
	{ OP_MATMUL_COOP, "whole tall f16 trans_b", matmul_setup,
	  matmul_ref, GPO_MM_COOP_TALL | GPO_MM_F16_A | GPO_MM_F16_B |
	  MM_WHOLE | GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "whole tall f32 rounded batch padded trans_a",
	  matmul_setup, matmul_ref, GPO_MM_COOP_TALL | GPO_MM_ROUND |
	  MM_WHOLE | MM_BATCH | MM_PAD | GPO_MM_TRANS_A },
	{ OP_MATMUL_COOP, "tall f16 odd trans_b", matmul_setup, matmul_ref,
	  GPO_MM_COOP_TALL | GPO_MM_F16_A | GPO_MM_F16_B | MM_ODD |
	  GPO_MM_TRANS_B },
	{ OP_MATMUL_COOP, "tall f16_a round wide batch padded accum",
	  matmul_setup, matmul_ref, GPO_MM_COOP_TALL | GPO_MM_F16_A |
	  GPO_MM_ROUND | MM_WIDE | MM_BATCH | MM_PAD | GPO_T_ACCUM },
	{ OP_MATMUL_COOP, "tall f16 trans_b", matmul_setup, matmul_ref,
	  GPO_MM_COOP_TALL | GPO_MM_F16_A | GPO_MM_F16_B | GPO_MM_TRANS_B },
	/* 9 to 11 rows of tiles: a group of 8, then the rest */
	{ OP_MATMUL_COOP, "f16 tall", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_TALL },
	/* no operand fetched two deep: k a multiple of 32 may be odd steps */
	{ OP_MATMUL_COOP, "whole f16 trans_a", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_WHOLE | GPO_MM_TRANS_A },
	/* accumulating: never whole, the general pipeline */
	{ OP_MATMUL_COOP, "whole f16 accum", matmul_setup, matmul_ref,
	  GPO_MM_F16_A | GPO_MM_F16_B | MM_WHOLE | GPO_T_ACCUM },
	{ OP_MATMUL, "wide vec", matmul_setup, matmul_ref,
	  MM_WIDE | GPO_MM_VEC_A | GPO_MM_VEC_B },
	{ OP_MATMUL_BIG, "batch padded trans_a trans_b", matmul_setup,
	  matmul_ref, MM_BATCH | MM_PAD | GPO_MM_TRANS_A | GPO_MM_TRANS_B },
	{ OP_MATMUL_BIG, "67x131x45 padded", matmul_setup, matmul_ref,
	  MM_ODD | MM_PAD },
	{ OP_MATMUL_BIG, "tiny batch trans_a", matmul_setup, matmul_ref,
	  MM_TINY | MM_BATCH | GPO_MM_TRANS_A },
	{ OP_MATMUL_BIG, "k 0 accum batch", matmul_setup, matmul_ref,
	  MM_K0 | GPO_T_ACCUM | MM_BATCH },
	UNARY(GPO_EW_COPY, "copy"),
	UNARY(GPO_EW_RELU, "relu"),
	UNARY(GPO_EW_GELU, "gelu"),
	UNARY(GPO_EW_GELU_TANH, "gelu_tanh"),
	UNARY(GPO_EW_TANH, "tanh"),
	UNARY(GPO_EW_SIGMOID, "sigmoid"),
	UNARY(GPO_EW_EXP, "exp"),
	UNARY(GPO_EW_LOG, "log"),
	UNARY(GPO_EW_SQUARE, "square"),
	UNARY(GPO_EW_SQRT, "sqrt"),
	{ OP_UNARY, "dropout 0.1", unary_setup, unary_ref,
	  V_FN(GPO_EW_DROPOUT) },
	{ OP_UNARY, "dropout 0.5 accum", unary_setup, unary_ref,
	  V_FN(GPO_EW_DROPOUT) | DO_HALF | GPO_T_ACCUM },
	{ OP_UNARY, "dropout 0.5", unary_setup, unary_ref,
	  V_FN(GPO_EW_DROPOUT) | DO_HALF },
	{ OP_UNARY_BWD, "dropout 0.1 accum", unary_bwd_setup, unary_bwd_ref,
	  V_FN(GPO_EW_DROPOUT) | GPO_T_ACCUM },
	{ OP_UNARY_BWD, "dropout 0.5", unary_bwd_setup, unary_bwd_ref,
	  V_FN(GPO_EW_DROPOUT) | DO_HALF },
	{ OP_UNARY_BWD, "dropout 0.1", unary_bwd_setup, unary_bwd_ref,
	  V_FN(GPO_EW_DROPOUT) },
	{ OP_UNARY, "dropout 0.5 quads", unary_setup, unary_ref,
	  V_FN(GPO_EW_DROPOUT) | DO_HALF | EW_QUADS },
	{ OP_UNARY_BWD, "dropout 0.5 quads accum", unary_bwd_setup,
	  unary_bwd_ref, V_FN(GPO_EW_DROPOUT) | DO_HALF | EW_QUADS |
	  GPO_T_ACCUM },
	{ OP_UNARY, "copy transposed", unary_setup, unary_ref,
	  V_FN(GPO_EW_COPY) | EW_TRANSP },
	{ OP_UNARY, "gelu transposed accum", unary_setup, unary_ref,
	  V_FN(GPO_EW_GELU) | EW_TRANSP | GPO_T_ACCUM },
	{ OP_UNARY, "copy broadcast", unary_setup, unary_ref,
	  V_FN(GPO_EW_COPY) | EW_BCAST },
	{ OP_UNARY, "copy quads", unary_setup, unary_ref,
	  V_FN(GPO_EW_COPY) | EW_QUADS },
	{ OP_UNARY, "copy quads accum", unary_setup, unary_ref,
	  V_FN(GPO_EW_COPY) | EW_QUADS | GPO_T_ACCUM },
	{ OP_UNARY, "copy broadcast quads", unary_setup, unary_ref,
	  V_FN(GPO_EW_COPY) | EW_BCAST | EW_QUADS },
	{ OP_UNARY, "exp broadcast accum", unary_setup, unary_ref,
	  V_FN(GPO_EW_EXP) | EW_BCAST | GPO_T_ACCUM },
	BINARY(GPO_EW_ADD, "add"),
	BINARY(GPO_EW_SUB, "sub"),
	BINARY(GPO_EW_MUL, "mul"),
	BINARY(GPO_EW_DIV, "div"),
	QUADS(GPO_EW_ADD, "add"),
	QUADS(GPO_EW_SUB, "sub"),
	QUADS(GPO_EW_MUL, "mul"),
	{ OP_BINARY, "div bit-exact", div_exact_setup, div_exact_ref,
	  V_FN(GPO_EW_DIV) },
	{ OP_BINARY, "div bit-exact bias", div_exact_setup, div_exact_ref,
	  V_FN(GPO_EW_DIV) | EW_BIAS },
	{ OP_UNARY, "sqrt bit-exact", sqrt_exact_setup, sqrt_exact_ref,
	  V_FN(GPO_EW_SQRT) },
	{ OP_UNARY, "sqrt bit-exact transposed", sqrt_exact_setup,
	  sqrt_exact_ref, V_FN(GPO_EW_SQRT) | EW_TRANSP },
	{ OP_CAST, "f32 f16", cast_setup, cast_ref, V_FN(GPO_CAST_F32_F16) },
	{ OP_CAST, "f32 bf16", cast_setup, cast_ref, V_FN(GPO_CAST_F32_BF16) },
	{ OP_CAST, "f16 f32", cast_setup, cast_ref, V_FN(GPO_CAST_F16_F32) },
	{ OP_CAST, "bf16 f32", cast_setup, cast_ref, V_FN(GPO_CAST_BF16_F32) },
	{ OP_CAST, "f32 bf16 sr", cast_setup, cast_ref,
	  V_FN(GPO_CAST_F32_BF16_SR) },
	{ OP_ADAM8, "adam", adam8_setup, u8_ref, 0 },
	{ OP_ADAM8, "adamw", adam8_setup, u8_ref, GPO_ADAM_DECOUPLED },
	{ OP_ADAM8, "skip", adam8_setup, u8_ref, SKIP_FLAG },
	{ OP_RMSPROP8, "", rmsprop8_setup, u8_ref, 0 },
	{ OP_ADAGRAD8, "", adagrad8_setup, u8_ref, 0 },
	{ OP_LION8, "", lion8_setup, u8_ref, 0 },
	{ OP_ADAM8, "adamw quads", adam8_setup, u8_ref,
	  GPO_ADAM_DECOUPLED | QUADS_FLAG },
	{ OP_ADAM8, "adam skip quads", adam8_setup, u8_ref,
	  SKIP_FLAG | QUADS_FLAG },
	{ OP_RMSPROP8, "quads", rmsprop8_setup, u8_ref, QUADS_FLAG },
	{ OP_ADAGRAD8, "quads", adagrad8_setup, u8_ref, QUADS_FLAG },
	{ OP_LION8, "quads", lion8_setup, u8_ref, QUADS_FLAG },
	{ OP_QUANT8, "unsigned", quant8_setup, quant8_ref, 0 },
	{ OP_QUANT8, "signed", quant8_setup, quant8_ref, Q_SIGNED },
	{ OP_QUANT8, "signed specials", quant8_setup, quant8_ref,
	  Q_SIGNED | Q_SPECIAL },
	{ OP_QUANT8, "unsigned specials", quant8_setup, quant8_ref, Q_SPECIAL },
	{ OP_QUANT8, "unsigned edges", quant8_edges_setup, quant8_ref,
	  Q_EDGES },
	{ OP_QUANT8, "signed edges", quant8_edges_setup, quant8_ref,
	  Q_SIGNED | Q_EDGES },
	{ OP_DEQUANT8, "unsigned", dequant8_setup, dequant8_ref, 0 },
	{ OP_DEQUANT8, "signed", dequant8_setup, dequant8_ref, Q_SIGNED },
	{ OP_REDUCE, "sum", reduce_setup, reduce_ref, V_FN(GPO_RED_SUM) },
	{ OP_REDUCE, "sum accum", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | GPO_T_ACCUM },
	{ OP_REDUCE, "sum inner", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_INNER },
	{ OP_REDUCE, "sum inner transposed", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_INNER | GPO_RED_TOUT },
	{ OP_REDUCE, "sum inner transposed accum", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_INNER | GPO_RED_TOUT | GPO_T_ACCUM },
	{ OP_REDUCE, "mean", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_MEAN },
	{ OP_REDUCE, "mean inner accum", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_MEAN | RED_INNER | GPO_T_ACCUM },
	{ OP_REDUCE, "sum len 0", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_LEN0 },
	{ OP_REDUCE, "sum inner len 0 accum", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_SUM) | RED_LEN0 | RED_INNER | GPO_T_ACCUM },
	{ OP_REDUCE, "max", reduce_setup, reduce_ref, V_FN(GPO_RED_MAX) },
	{ OP_REDUCE, "max inner accum", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | RED_INNER | GPO_T_ACCUM },
	{ OP_REDUCE, "max idx ties", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | GPO_RED_IDX | RED_TIES },
	{ OP_REDUCE, "max inner idx ties", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | GPO_RED_IDX | RED_TIES | RED_INNER },
	{ OP_REDUCE, "max idx nan", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | GPO_RED_IDX | RED_NAN },
	{ OP_REDUCE, "max inner idx nan accum", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | GPO_RED_IDX | RED_NAN | RED_INNER |
	  GPO_T_ACCUM },
	{ OP_REDUCE, "max idx len 0", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | GPO_RED_IDX | RED_LEN0 },
	{ OP_REDUCE, "max inner idx len 0", reduce_setup, reduce_ref,
	  V_FN(GPO_RED_MAX) | GPO_RED_IDX | RED_LEN0 | RED_INNER },
	{ OP_REDUCE_BWD, "sum", reduce_bwd_setup, reduce_bwd_ref,
	  V_FN(GPO_RED_SUM) },
	{ OP_REDUCE_BWD, "sum inner accum", reduce_bwd_setup, reduce_bwd_ref,
	  V_FN(GPO_RED_SUM) | RED_INNER | GPO_T_ACCUM },
	{ OP_REDUCE_BWD, "max", reduce_bwd_setup, reduce_bwd_ref,
	  V_FN(GPO_RED_MAX) },
	{ OP_REDUCE_BWD, "max inner accum", reduce_bwd_setup, reduce_bwd_ref,
	  V_FN(GPO_RED_MAX) | RED_INNER | GPO_T_ACCUM },
	{ OP_SOFTMAX, "softmax", softmax_setup, softmax_ref,
	  V_FN(GPO_SM_SOFTMAX) },
	{ OP_SOFTMAX, "softmax big", softmax_setup, softmax_ref,
	  V_FN(GPO_SM_SOFTMAX) | SM_BIG },
	{ OP_SOFTMAX, "softmax many rows", softmax_setup, softmax_ref,
	  V_FN(GPO_SM_SOFTMAX) | SM_MANY },
	{ OP_SOFTMAX, "log_softmax", softmax_setup, softmax_ref,
	  V_FN(GPO_SM_LOG_SOFTMAX) },
	{ OP_SOFTMAX, "log_softmax big many rows", softmax_setup, softmax_ref,
	  V_FN(GPO_SM_LOG_SOFTMAX) | SM_BIG | SM_MANY },
	{ OP_SOFTMAX, "causal", causal_setup, causal_ref, 0 },
	{ OP_SOFTMAX, "causal long", causal_setup, causal_ref, SM_LONG },
	{ OP_SOFTMAX, "causal many rows", causal_setup, causal_ref, SM_MANY },
	{ OP_SOFTMAX_BWD, "softmax", softmax_bwd_setup, softmax_bwd_ref,
	  V_FN(GPO_SM_SOFTMAX) },
	{ OP_SOFTMAX_BWD, "causal", causal_bwd_setup, causal_bwd_ref, 0 },
	{ OP_SOFTMAX_BWD, "causal long accum", causal_bwd_setup,
	  causal_bwd_ref, SM_LONG | GPO_T_ACCUM },
	{ OP_SOFTMAX_BWD, "causal many rows accum", causal_bwd_setup,
	  causal_bwd_ref, SM_MANY | GPO_T_ACCUM },
	{ OP_SOFTMAX_BWD, "softmax many rows accum", softmax_bwd_setup,
	  softmax_bwd_ref, V_FN(GPO_SM_SOFTMAX) | SM_MANY | GPO_T_ACCUM },
	{ OP_SOFTMAX_BWD, "log_softmax accum", softmax_bwd_setup,
	  softmax_bwd_ref, V_FN(GPO_SM_LOG_SOFTMAX) | GPO_T_ACCUM },
	{ OP_SOFTMAX_BWD, "log_softmax big many rows", softmax_bwd_setup,
	  softmax_bwd_ref, V_FN(GPO_SM_LOG_SOFTMAX) | SM_BIG | SM_MANY },
	{ OP_XENT, "", xent_setup, xent_ref, 0 },
	{ OP_XENT, "big many rows", xent_setup, xent_ref, SM_BIG | SM_MANY },
	{ OP_XENT, "bad label", xent_setup, xent_ref, SM_BADLAB },
	{ OP_XENT_BWD, "", xent_bwd_setup, xent_bwd_ref, 0 },
	{ OP_XENT_BWD, "big many rows accum", xent_bwd_setup, xent_bwd_ref,
	  SM_BIG | SM_MANY | GPO_T_ACCUM },
	{ OP_ACCURACY, "", accuracy_setup, accuracy_ref, 0 },
	{ OP_ACCURACY, "ties", accuracy_setup, accuracy_ref, SM_TIES },
	{ OP_ACCURACY, "ties many rows bad label", accuracy_setup,
	  accuracy_ref, SM_TIES | SM_MANY | SM_BADLAB },
	{ OP_GATHER_ROWS, "", gather_setup, gather_ref, 0 },
	{ OP_GATHER_ROWS, "windows", gather_setup, gather_ref, GA_WIN },
	{ OP_GATHER_ROWS, "stride 1", gather_setup, gather_ref, GA_SEQ },
	{ OP_EMBED_BWD, "", embed_bwd_setup, embed_bwd_ref, 0 },
	{ OP_EMBED_BWD, "accum", embed_bwd_setup, embed_bwd_ref, GPO_T_ACCUM },
	{ OP_EMBED_BWD, "wide", embed_bwd_setup, embed_bwd_ref, EB_WIDE },
	{ OP_EMBED_BWD, "many accum", embed_bwd_setup, embed_bwd_ref,
	  EB_MANY | GPO_T_ACCUM },
	{ OP_LAYERNORM, "", layernorm_setup, layernorm_ref, 0 },
	{ OP_LAYERNORM, "long", layernorm_setup, layernorm_ref, LN_LONG },
	{ OP_LAYERNORM, "one row", layernorm_setup, layernorm_ref, LN_ONE },
	{ OP_LAYERNORM, "many rows", layernorm_setup, layernorm_ref, LN_MANY },
	{ OP_LAYERNORM_BWD, "", layernorm_bwd_setup, layernorm_bwd_ref, 0 },
	{ OP_LAYERNORM_BWD, "accum", layernorm_bwd_setup, layernorm_bwd_ref,
	  GPO_T_ACCUM },
	{ OP_LAYERNORM_BWD, "long accum", layernorm_bwd_setup,
	  layernorm_bwd_ref, LN_LONG | GPO_T_ACCUM },
	{ OP_LAYERNORM_BWD, "one row", layernorm_bwd_setup, layernorm_bwd_ref,
	  LN_ONE },
	{ OP_LAYERNORM_BWD, "many rows", layernorm_bwd_setup,
	  layernorm_bwd_ref, LN_MANY },
	{ OP_ATTN_FWD, "", attn_fwd_setup, attn_fwd_ref, 0 },
	{ OP_ATTN_FWD, "odd hd", attn_fwd_setup, attn_fwd_ref, AT_ODD },
	{ OP_ATTN_FWD, "hd 128", attn_fwd_setup, attn_fwd_ref, AT_WIDE },
	{ OP_ATTN_FWD, "t 257", attn_fwd_setup, attn_fwd_ref, AT_LONG },
	{ OP_ATTN_BWD_D, "", attn_d_setup, attn_d_ref, 0 },
	{ OP_ATTN_BWD_D, "odd hd", attn_d_setup, attn_d_ref, AT_ODD },
	{ OP_ATTN_BWD_DQ, "", attn_dq_setup, attn_dq_ref, 0 },
	{ OP_ATTN_BWD_DQ, "odd hd accum", attn_dq_setup, attn_dq_ref,
	  AT_ODD | GPO_T_ACCUM },
	{ OP_ATTN_BWD_DQ, "hd 128", attn_dq_setup, attn_dq_ref, AT_WIDE },
	{ OP_ATTN_BWD_DQ, "t 257 accum", attn_dq_setup, attn_dq_ref,
	  AT_LONG | GPO_T_ACCUM },
	{ OP_ATTN_BWD_DKDV, "", attn_dkdv_setup, attn_dkdv_ref, 0 },
	{ OP_ATTN_BWD_DKDV, "odd hd accum", attn_dkdv_setup, attn_dkdv_ref,
	  AT_ODD | GPO_T_ACCUM | GPO_ATTN_ACC_DV },
	{ OP_ATTN_BWD_DKDV, "hd 128 accum dv", attn_dkdv_setup,
	  attn_dkdv_ref, AT_WIDE | GPO_ATTN_ACC_DV },
	{ OP_ATTN_BWD_DKDV, "t 257 accum dk", attn_dkdv_setup,
	  attn_dkdv_ref, AT_LONG | GPO_T_ACCUM },
};

/* ---- the harness ---------------------------------------------------------- */

static void tc_free(struct tcase *tc)
{
	int i;

	for (i = 0; i < OP_MAX_BUF; i++)
		tb_free(&tc->b[i]);
}

/*
 * Compare one buffer; returns a failure text or NULL. want[i] is NaN where
 * the op must leave the element as it was, DONTCARE where it must write
 * something but its value is not defined (a sum over an inf and a NaN),
 * MUSTNAN where it must write a NaN; infinities must match exactly.
 */
static const char *check_buf(const struct tcase *tc, const struct tbuf *b,
			     unsigned int role, uint64_t *where)
{
	uint64_t i;

	for (i = 0; i < GUARD; i++)
		if (b->got[i] != POISON || b->got[GUARD + b->n + i] != POISON) {
			*where = i;
			return "a guard was overwritten";
		}
	for (i = 0; i < b->n; i++) {
		uint32_t got = b->got[GUARD + i];
		double want = b->want[i];
		float g;

		*where = i;
		if (!(role & OP_W) || b->unused) {
			if (got != b->in[i])
				return b->unused ? "an unused buffer changed" :
						   "a read-only buffer changed";
			continue;
		}
		if (isnan(want)) {
			if (got != b->in[i])
				return "an element outside the op's range changed";
			continue;
		}
		/*
		 * a word of bytes may be the poison itself: a lone code of
		 * 0xa5 on a partial last word of quantize8's (seed
		 * 1405095804359918)
		 */
		if (got == POISON && !(b->exact && want == (double)POISON))
			return "an element was not written";
		if (want == DONTCARE)
			continue;
		if (b->exact) {
			static char msg[64];

			if (got == (uint32_t)want)
				continue;
			snprintf(msg, sizeof(msg),
				 "bits differ: 0x%08x, want 0x%08x", got,
				 (uint32_t)want);
			return msg;
		}
		memcpy(&g, &got, 4);
		if (b->exact_at && b->exact_at[i]) {
			if (g != (float)want)
				return "not exactly the reference's value";
			continue;
		}
		if (want == MUSTNAN) {
			if (!isnan(g))
				return "not NaN, as the reference";
			continue;
		}
		if (isinf(want)) {
			if (g != want)
				return "not the reference's infinity";
			continue;
		}
		if (!(fabs(g - want) <= tc->tol * fmax(fmax(fabs(want), 1.0),
						     b->mag ? b->mag[i] : 0)))
			return "differs from the float64 reference";
	}
	return NULL;
}

static const char *dt_name(enum gpo_dtype dt)
{
	static const char *const names[GPO_DTYPES] = {
		"f32", "f16", "bf16", "u8", "i32", "i64",
	};

	return (unsigned int)dt < GPO_DTYPES ? names[dt] : "?";
}

/* @tc set up for @oc in @dtype, its inputs drawn from @seed */
static void case_init(struct tcase *tc, const struct op_case *oc,
		      enum gpo_dtype dtype, uint64_t seed)
{
	memset(tc, 0, sizeof(*tc));
	tc->oc = oc;
	tc->dtype = dtype;
	tc->rng = seed;
	/* reductions sum in the backend's own fixed order */
	tc->tol = gpo__ops[oc->op].grid == GRID_GROUPS ? 1e-4 : 1e-5;
	oc->setup(tc);
}

/*
 * @tc's buffers onto @dev between poisoned guards, as @db, and @call
 * launching its op on them
 */
static void case_put(struct gpo_device *dev, struct tcase *tc,
		     struct dev_buf *db, struct op_call *call)
{
	const struct gpo__op *op = &gpo__ops[tc->oc->op];
	unsigned int i;

	memset(call, 0, sizeof(*call));
	call->op = tc->oc->op;
	call->dtype = tc->dtype;
	call->work = tc->work;
	call->args = &tc->a;
	for (i = 0; i < op->nbuf; i++) {
		struct tbuf *b = &tc->b[i];
		uint64_t bytes = (b->n + 2 * GUARD) * 4, k;

		ck_assert_msg(b->in, "%s %s: setup left buffer %s out",
			      op->name, tc->oc->variant, op->buf[i].name);
		for (k = 0; k < GUARD; k++) {
			b->got[k] = POISON;
			b->got[GUARD + b->n + k] = POISON;
		}
		memcpy(b->got + GUARD, b->in, b->n * 4);
		if (!db[i].mem)
			ck_assert_msg(!gpo__pool_alloc(dev, bytes, &db[i]),
				      "%s: %s", tu_device_id(dev),
				      gpo_errmsg());
		ck_assert(!dev->ops->write(dev, &db[i], 0, b->got, bytes));
		call->buf[i] = db[i];
		call->buf[i].off += GUARD * 4;
		call->buf[i].size = b->n * 4;
	}
}

/* @db read back and checked against @tc's reference (@seed: its draw) */
static void case_check(struct gpo_device *dev, struct tcase *tc,
		       struct dev_buf *db, uint64_t seed)
{
	const struct gpo__op *op = &gpo__ops[tc->oc->op];
	unsigned int i;

	for (i = 0; i < op->nbuf; i++) {
		struct tbuf *b = &tc->b[i];
		const char *why;
		uint64_t where = 0;

		ck_assert(!dev->ops->read(dev, &db[i], 0, b->got,
					  (b->n + 2 * GUARD) * 4));
		why = check_buf(tc, b, op->buf[i].role, &where);
		ck_assert_msg(!why,
			      "%s: %s %s (%s, n %llu, seed %llu): buffer %s[%llu]: %s",
			      tu_device_id(dev), op->name, tc->oc->variant,
			      dt_name(tc->dtype), (unsigned long long)tc->n,
			      (unsigned long long)seed, op->buf[i].name,
			      (unsigned long long)where, why);
	}
}

static void run_case(struct gpo_device *dev, const struct op_case *oc,
		     enum gpo_dtype dtype, uint64_t seed)
{
	const struct gpo__op *op = &gpo__ops[oc->op];
	struct dev_buf db[OP_MAX_BUF];
	struct op_call call;
	struct tcase tc;
	unsigned int i;
	int ret;

	memset(db, 0, sizeof(db));
	case_init(&tc, oc, dtype, seed);
	oc->ref(&tc);
	case_put(dev, &tc, db, &call);
	ret = gpo__launch(dev, &call);
	ck_assert_msg(!ret, "%s: %s %s: %s", tu_device_id(dev), op->name,
		      oc->variant, gpo_errmsg());
	ck_assert(!dev->ops->wait(dev, NULL));
	case_check(dev, &tc, db, seed);
	for (i = 0; i < op->nbuf; i++)
		gpo__pool_free(dev, &db[i]);
	tc_free(&tc);
}

/*
 * GPUOPT_TEST_OPS=cast,quant8,...: only the cases of these ops (by their
 * descriptor's name), e.g. to check bit-identity on a GPU quickly
 */
static int op_wanted(enum gpo__op_id op)
{
	const char *want = getenv("GPUOPT_TEST_OPS"), *p;
	size_t len = strlen(gpo__ops[op].name);

	if (!want || !*want)
		return 1;
	for (p = want; (p = strstr(p, gpo__ops[op].name)); p += len)
		if ((p == want || p[-1] == ',') &&
		    (p[len] == ',' || p[len] == 0))
			return 1;
	return 0;
}

/*
 * Whether @dev must have matmul_coop: GPUOPT_TEST_REQUIRE_COOPMAT=1 says
 * that every Vulkan device of the run has cooperative matrices (the GPU
 * runs set it, so that a lost probe fails instead of skipping).
 */
static int require_coop(struct gpo_device *dev)
{
	const char *e = getenv("GPUOPT_TEST_REQUIRE_COOPMAT");

	return e && !strcmp(e, "1") && !strcmp(dev->info.backend, "vulkan");
}

/*
 * A recorded launch whose new parameters choose another pipeline is
 * recorded again (backend/vulkan/graph.c; pipeline.c's
 * gpo__vk_pipeline_key()). Each scenario launches one case three times
 * over the same buffers inside a recorded step: 0 with its parameters,
 * recorded with them; 1 after change[0], a new alpha or step size,
 * recorded again reading parameters from the parameter buffer; 2 after
 * change[1], parameters that choose another specialized pipeline, which
 * a replay of 1 would run in 1's. Every result against the reference
 * (case_check()), on every device that records steps (OpenCL queues
 * them: the same answers). A change that needs a case of other flags
 * makes it in @oc2.
 */
struct key_scen {
	enum gpo__op_id op;
	const char *variant;
	void (*change[2])(struct tcase *tc, struct op_case *oc2);
};

static void mm_alpha(struct tcase *tc, struct op_case *oc2)
{
	tc->a.mm.alpha *= 0.5f;
}

/* matmul_big's flags are its pipeline's constant: no longer accumulating */
static void mm_no_accum(struct tcase *tc, struct op_case *oc2)
{
	*oc2 = *tc->oc;
	oc2->flags &= ~GPO_T_ACCUM;
	tc->oc = oc2;
	tc->a.mm.flags &= ~GPO_T_ACCUM;
}

static void adam_step_size(struct tcase *tc, struct op_case *oc2)
{
	tc->a.adam.step_size *= 0.5f;
}

/* an 8-bit update of whole quads (constant 6) with n one less */
static void adam_n_less(struct tcase *tc, struct op_case *oc2)
{
	tc->n--;
	tc->a.adam.n--;
}

static const struct key_scen key_scens[] = {
	{ OP_MATMUL_BIG, "wide padded vec trans_a trans_b accum",
	  { mm_alpha, mm_no_accum } },
	{ OP_ADAM8, "adamw quads", { adam_step_size, adam_n_less } },
};

/*
 * @change made to @tc: the reference starts again, with no wants,
 * magnitudes or exact marks
 */
static void key_step(struct tcase *tc, struct op_case *oc2,
		     void (*change)(struct tcase *, struct op_case *))
{
	unsigned int i;

	change(tc, oc2);
	for (i = 0; i < gpo__ops[tc->oc->op].nbuf; i++) {
		struct tbuf *b = &tc->b[i];

		memset(b->want, 0xff, b->n * sizeof(double));
		free(b->mag);
		free(b->exact_at);
		b->mag = NULL;
		b->exact_at = NULL;
	}
}

START_TEST(test_recorded_launch_follows_pipeline_key)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, tested = 0;
	uint64_t rng = tu_rng("ops-key");
	size_t c, k;

	for (k = 0; k < ARRAY_SIZE(key_scens); k++) {
		const struct key_scen *sc = &key_scens[k];
		const struct op_case *oc = NULL;

		for (c = 0; c < ARRAY_SIZE(cases); c++)
			if (cases[c].op == sc->op &&
			    !strcmp(cases[c].variant, sc->variant))
				oc = &cases[c];
		ck_assert(oc);
		for (d = 0; d < ndev; d++) {
			struct gpo_device *dev = devs[d];
			const struct gpo__op *op = &gpo__ops[oc->op];
			struct dev_buf db[OP_MAX_BUF];
			struct dev_graph *g = NULL;
			const void *host = NULL;
			struct op_case oc2;
			struct op_call call;
			struct tcase tc;
			uint64_t seed = (uint64_t)tu_rand(&rng, 1,
							  9007199254740992.0);
			unsigned int i;
			int step, ret;

			if (!dev->ops->graph_begin ||
			    !gpo__op_supported(dev, oc->op, GPO_F32))
				continue;
			memset(db, 0, sizeof(db));
			case_init(&tc, oc, GPO_F32, seed);
			for (step = 0; step < 3; step++) {
				if (step)
					key_step(&tc, &oc2,
						 sc->change[step - 1]);
				oc->ref(&tc);
				case_put(dev, &tc, db, &call);
				/* the sizes of step 0, every time */
				for (i = 0; i < op->nbuf; i++)
					call.buf[i].size = tc.b[i].n * 4;
				ck_assert(dev->ops->graph_begin(dev, &g) >= 0);
				ret = gpo__launch(dev, &call);
				ck_assert_msg(!ret, "%s: %s", tu_device_id(dev),
					      gpo_errmsg());
				ret = dev->ops->graph_end(dev, g, 0, NULL, 0,
							  &host);
				ck_assert_msg(ret >= 0, "%s: %s",
					      tu_device_id(dev), gpo_errmsg());
				tested += ret == 1;
				ck_assert(!dev->ops->wait(dev, NULL));
				case_check(dev, &tc, db, seed);
			}
			if (g)
				dev->ops->graph_free(dev, g);
			for (i = 0; i < op->nbuf; i++)
				gpo__pool_free(dev, &db[i]);
			tc.oc = oc;
			tc_free(&tc);
		}
	}
	fprintf(stderr, "recorded launches, new pipeline keys: %d recorded steps checked\n",
		tested);
}
END_TEST

/* every case on every device, each dtype its op has there */
START_TEST(test_every_op_every_device)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, rep;
	uint64_t rng = tu_rng("ops");
	int covered[OP_COUNT] = { 0 };
	size_t c;

	ck_assert_int_gt(ndev, 0);
	for (d = 0; d < ndev; d++) {
		for (c = 0; c < ARRAY_SIZE(cases); c++) {
			const struct op_case *oc = &cases[c];
			int dt;

			if (!op_wanted(oc->op)) {
				covered[oc->op] = 1;
				continue;
			}
			for (dt = 0; dt < GPO_DTYPES; dt++) {
				if (!gpo__op_supported(devs[d], oc->op, dt))
					continue;
				covered[oc->op] = 1;
				/*
				 * a few sizes and argument draws each; one
				 * of the half-parameter modules, whose
				 * arithmetic is the f32 one's
				 */
				for (rep = 0; rep < (tu_quick() ||
						     dt == GPO_F16 ||
						     dt == GPO_BF16 ? 1 : 3);
				     rep++)
					run_case(devs[d], oc, dt,
						 (uint64_t)tu_rand(&rng, 1,
							 9007199254740992.0));
			}
		}
		/*
		 * every op has an f32 kernel on every backend, but for
		 * matmul_coop: on devices with cooperative matrices, and
		 * there when the run says so (GPUOPT_TEST_REQUIRE_COOPMAT)
		 */
		for (c = 0; c < OP_COUNT; c++)
			ck_assert_msg((c == OP_MATMUL_COOP &&
				       !require_coop(devs[d])) ||
				      gpo__op_supported(devs[d], c, GPO_F32),
				      "%s: no f32 %s", tu_device_id(devs[d]),
				      gpo__ops[c].name);
	}
	for (c = 0; c < OP_COUNT; c++)
		ck_assert_msg(covered[c] || c == OP_MATMUL_COOP,
			      "op %s has no test entry",
			      gpo__ops[c].name);
}
END_TEST

/* the descriptors themselves: one source of truth, checked once */
START_TEST(test_descriptors_are_consistent)
{
	int o;
	unsigned int i;

	for (o = 0; o < OP_COUNT; o++) {
		const struct gpo__op *op = &gpo__ops[o];

		ck_assert_msg(op->name && op->family, "op %d unnamed", o);
		ck_assert_uint_le(op->nbuf, OP_MAX_BUF);
		ck_assert_uint_le(op->args_size, GPO_ARGS_MAX);
		ck_assert_uint_eq(op->args_size % 4, 0);
		ck_assert_msg(op->dtypes & DT(GPO_F32), "%s: no f32", op->name);
		for (i = 0; i < op->nbuf; i++)
			ck_assert_msg(op->buf[i].name &&
				      (op->buf[i].role & OP_RW),
				      "%s: buffer %u has no role", op->name, i);
	}
}
END_TEST

/* misuse of the launch path is refused before any backend sees it */
START_TEST(test_bad_launches_refused)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	struct gpo_mem_args a = { .n = 16, .value = 1 };
	struct dev_buf buf;

	for (d = 0; d < ndev; d++) {
		struct gpo_device *dev = devs[d];
		struct op_call call = {
			.op = OP_FILL, .dtype = GPO_F32, .work = 16, .args = &a,
		};

		ck_assert(!gpo__pool_alloc(dev, 1024, &buf));
		/* a required buffer missing */
		ck_assert_int_eq(gpo__launch(dev, &call), -EINVAL);
		tu_check_errmsg("missing buffer");
		/* a float4 buffer off its 16-byte alignment */
		call.buf[0] = buf;
		call.buf[0].off += 4;
		ck_assert_int_eq(gpo__launch(dev, &call), -EINVAL);
		/* more buffers than the op takes */
		call.buf[0] = buf;
		call.buf[1] = buf;
		ck_assert_int_eq(gpo__launch(dev, &call), -EINVAL);
		call.buf[1].mem = NULL;
		/* a dtype the op does not come in */
		call.dtype = GPO_BF16;
		ck_assert_int_eq(gpo__launch(dev, &call), -ENOSYS);
		call.dtype = GPO_DTYPES;
		ck_assert_int_eq(gpo__launch(dev, &call), -ENOSYS);
		call.dtype = GPO_F32;
		call.op = OP_COUNT;
		ck_assert_int_eq(gpo__launch(dev, &call), -EINVAL);
		/* more than one launch can count */
		call.op = OP_FILL;
		call.work = 1ull << 32;
		ck_assert_int_eq(gpo__launch(dev, &call), -EINVAL);
		/* an element struct's n that is not the launch's count */
		call.work = 15;
		ck_assert_int_eq(gpo__launch(dev, &call), -EINVAL);
		gpo__pool_free(dev, &buf);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("ops");

	tcase_add_test(tc, test_descriptors_are_consistent);
	tcase_add_test(tc, test_backward_refs_match_finite_differences);
	tcase_add_test(tc, test_bad_launches_refused);
	tcase_add_test(tc, test_every_op_every_device);
	tcase_add_test(tc, test_recorded_launch_follows_pipeline_key);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
