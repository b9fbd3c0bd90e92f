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
#include "abi/mem.h"
#include "abi/norm.h"
#include "abi/sgd.h"
#include "abi/adam.h"
#include "abi/rmsprop.h"
#include "abi/adagrad.h"
#include "abi/lion.h"
#include "abi/lamb.h"
#include "abi/objective.h"

#define GUARD		64	/* elements of poison before and after */
#define POISON		0x7fa5a5a5u
#define DONTCARE	1e300

struct tbuf {
	uint64_t n;		/* elements the op may touch (4 bytes each) */
	int unused;		/* optional, not enabled by the variant */
	int exact;		/* compare bits (integers, flags) */
	uint32_t *in;		/* the contents before the launch */
	double *want;		/* expected after (NaN: must stay as in[]) */
	double *mag;		/* NULL, or the size of each want[i]'s terms:
				 * the error allowed where terms cancel */
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
}

#define SKIP_FLAG	(1u << 31)	/* a variant: scal says skip */
#define VARIANT(tc)	((tc)->oc->flags & ~SKIP_FLAG)

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
	tb_random(tc, &tc->b[0], tc->n, -2, 2);
	return (uint32_t)tc->work;
}

static void norm_partial_setup(struct tcase *tc)
{
	struct gpo_norm_args *a = &tc->a.norm;

	a->groups = chunked_setup(tc, &a->n, &a->chunk);
	if (VARIANT(tc))	/* one non-finite gradient */
		put(&tc->b[0], (uint64_t)tu_rand(&tc->rng, 0, tc->n),
		    VARIANT(tc) == 1 ? INFINITY : NAN);
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
			double g = f(&tc->b[0], i);

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

		tc->b[0].want[i] = f(&tc->b[0], i) * a->decay -
				   a->lr * (u > 0 ? 1 : u < 0 ? -1 : 0);
		tc->b[2].want[i] = a->beta2 * m + a->one_minus_beta2 * g;
	}
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
	a->flags = upd_flags(tc);
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
			double p = f(&tc->b[0], i), g = f(&tc->b[1], i) * gm;
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

	/* p m v blocks trust scal */
	lamb_common(tc, &tc->b[3], NULL, &nb);
	lamb_state(tc, 0, 3, 2);
	tb_random(tc, &tc->b[4], tc->a.lamb.ntensors, 0.1, 3);
	tb_scal(tc, &tc->b[5], !!(tc->oc->flags & SKIP_FLAG));
	tc->a.lamb.flags &= ~GPO_UPD_MAXIMIZE;
}

static void lamb_apply_ref(struct tcase *tc)
{
	const struct gpo_lamb_args *a = &tc->a.lamb;
	uint64_t b, i;

	want_in(&tc->b[0]);
	if (skipped(tc, a->flags, 5))
		return;
	for (b = a->first_block; b < a->first_block + tc->work; b++) {
		uint32_t start = tc->b[3].in[4 * b + 1];
		uint32_t cnt = tc->b[3].in[4 * b + 2];
		double step = a->lr * f(&tc->b[4], tc->b[3].in[4 * b]);

		for (i = start; i < start + cnt; i++)
			tc->b[0].want[i] = f(&tc->b[0], i) - step *
				lamb_r(a, f(&tc->b[1], i), f(&tc->b[2], i),
				       f(&tc->b[0], i));
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

/* ---- the table ------------------------------------------------------------ */

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
 * something but its value is not defined (a sum over an inf and a NaN).
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
		if (got == POISON)
			return "an element was not written";
		if (want == DONTCARE)
			continue;
		if (b->exact) {
			if (got != (uint32_t)want)
				return "bits differ";
			continue;
		}
		memcpy(&g, &got, 4);
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

static void run_case(struct gpo_device *dev, const struct op_case *oc,
		     enum gpo_dtype dtype, uint64_t seed)
{
	const struct gpo__op *op = &gpo__ops[oc->op];
	struct dev_buf db[OP_MAX_BUF];
	struct op_call call;
	struct tcase tc;
	unsigned int i;
	int ret;

	memset(&tc, 0, sizeof(tc));
	memset(db, 0, sizeof(db));
	tc.oc = oc;
	tc.dtype = dtype;
	tc.rng = seed;
	/* reductions sum in the backend's own fixed order */
	tc.tol = op->grid == GRID_GROUPS ? 1e-4 : 1e-5;
	oc->setup(&tc);
	oc->ref(&tc);

	memset(&call, 0, sizeof(call));
	call.op = oc->op;
	call.dtype = dtype;
	call.work = tc.work;
	call.args = &tc.a;
	for (i = 0; i < op->nbuf; i++) {
		struct tbuf *b = &tc.b[i];
		uint64_t bytes = (b->n + 2 * GUARD) * 4, k;

		ck_assert_msg(b->in, "%s %s: setup left buffer %s out",
			      op->name, oc->variant, op->buf[i].name);
		for (k = 0; k < GUARD; k++) {
			b->got[k] = POISON;
			b->got[GUARD + b->n + k] = POISON;
		}
		memcpy(b->got + GUARD, b->in, b->n * 4);
		ck_assert_msg(!gpo__pool_alloc(dev, bytes, &db[i]), "%s: %s",
			      tu_device_id(dev), gpo_errmsg());
		ck_assert(!dev->ops->write(dev, &db[i], 0, b->got, bytes));
		call.buf[i] = db[i];
		call.buf[i].off += GUARD * 4;
		call.buf[i].size = b->n * 4;
	}
	ret = gpo__launch(dev, &call);
	ck_assert_msg(!ret, "%s: %s %s: %s", tu_device_id(dev), op->name,
		      oc->variant, gpo_errmsg());
	ck_assert(!dev->ops->wait(dev, NULL));
	for (i = 0; i < op->nbuf; i++) {
		struct tbuf *b = &tc.b[i];
		const char *why;
		uint64_t where = 0;

		ck_assert(!dev->ops->read(dev, &db[i], 0, b->got,
					  (b->n + 2 * GUARD) * 4));
		why = check_buf(&tc, b, op->buf[i].role, &where);
		ck_assert_msg(!why,
			      "%s: %s %s (%s, n %llu, seed %llu): buffer %s[%llu]: %s",
			      tu_device_id(dev), op->name, oc->variant,
			      dt_name(dtype), (unsigned long long)tc.n,
			      (unsigned long long)seed, op->buf[i].name,
			      (unsigned long long)where, why);
		gpo__pool_free(dev, &db[i]);
	}
	tc_free(&tc);
}

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

			for (dt = 0; dt < GPO_DTYPES; dt++) {
				if (!gpo__op_supported(devs[d], oc->op, dt))
					continue;
				covered[oc->op] = 1;
				/* a few sizes and argument draws each */
				for (rep = 0; rep < (tu_quick() ? 1 : 3); rep++)
					run_case(devs[d], oc, dt,
						 (uint64_t)tu_rand(&rng, 1,
							 9007199254740992.0));
			}
		}
		/* every op has an f32 kernel on every backend */
		for (c = 0; c < OP_COUNT; c++)
			ck_assert_msg(gpo__op_supported(devs[d], c, GPO_F32),
				      "%s: no f32 %s", tu_device_id(devs[d]),
				      gpo__ops[c].name);
	}
	for (c = 0; c < OP_COUNT; c++)
		ck_assert_msg(covered[c], "op %s has no test entry",
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
	tcase_add_test(tc, test_bad_launches_refused);
	tcase_add_test(tc, test_every_op_every_device);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
