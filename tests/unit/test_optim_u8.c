// SPDX-License-Identifier: MIT
/*
 * test_optim_u8.c - state_dtype u8: blockwise 8-bit optimizer state
 * (bitsandbytes' dynamic maps, blocks of 256, an f32 absmax per block,
 * quantized inside the update kernel; abi/adam.h's adam8)
 *
 * - every test device gives cpu:0's bytes (param, both code slots and
 *   both absmax arrays) after 20 steps over odd sizes in three groups;
 * - cpu:0 matches a host reference step for step, byte for byte: the
 *   codes dequantized, the update in f32 as the kernel does it, the new
 *   block absmax, and codes chosen by a float64 nearest-value search of
 *   the map written here (not the library's quant8);
 * - 8-bit AdamW over 100 steps stays within bitsandbytes' tolerances of
 *   the f32 optimizer, tested their way;
 * - what u8 state does not do is refused with a message, nothing changed.
 *
 * Blocks never span groups: group g's blocks start at its first element
 * and follow those of groups 0 .. g - 1 (gpo_optim_read_absmax()).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ref.h"
#include "testutil.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"
#include "optim/optim_i.h"

#define STEPS		20
#define BLK		REF_QBLOCK
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* odd sizes, some past a block, one group a 1-element tail */
static const uint64_t sizes[] = { 1, 3, 7, 61, 1021, 4099, 257, 513, 65537 };
#define NTENSORS	((int)(sizeof(sizes) / sizeof(sizes[0])))

/* a kind's hyperparameters, as the test configures them */
struct ref_hp {
	double wd, beta1, beta2, eps, alpha, lr_decay;
	double init;		/* adagrad's initial_accumulator_value */
};

static struct gpo_optim *make_opt(struct gpo_device *dev,
				  enum gpo_optim_kind kind, const char *conf)
{
	struct gpo_optim *opt = ref_grouped_optim(dev, kind, conf, sizes,
						  NTENSORS);

	ck_assert_msg(!gpo_optim_set_state_dtype(opt, GPO_U8), "%s",
		      gpo_errmsg());
	return opt;
}

/* blocks never span groups: each group's blocks, in order */
static uint64_t total_blocks(void)
{
	uint64_t b = 0;
	int g;

	for (g = 0; g < REF_NGROUPS; g++)
		b += (ref_group_numel(sizes, NTENSORS, g) + BLK - 1) / BLK;
	return b;
}

/*
 * param, then each u8 slot of @kind's step (ref_u8_slot()) and its
 * absmax blocks: buffers 0, 1 + 2 k and 2 + 2 k of @o
 */
static void read_u8(struct gpo_optim *opt, enum gpo_optim_kind kind,
		    struct ref_bufs *o)
{
	int k;

	memset(o, 0, sizeof(*o));
	ref_bufs_read(opt, "param", o);
	ck_assert_int_eq(gpo_optim_read_absmax(opt, ref_u8_slot(kind, 0), NULL,
					       0), (int)total_blocks());
	for (k = 0; k < ref_u8_nslots(kind); k++) {
		const char *slot = ref_u8_slot(kind, k);

		ck_assert_int_eq(gpo_optim_dtype(opt, slot), GPO_U8);
		ref_bufs_read(opt, slot, o);
		ref_bufs_read_absmax(opt, slot, o);
	}
}

/* one run's mode: the optimizer and its configuration */
struct run_args {
	enum gpo_optim_kind kind;
	const char *conf;
};

static struct gpo_optim *make_mode(struct gpo_device *dev, const void *arg)
{
	const struct run_args *a = arg;

	return make_opt(dev, a->kind, a->conf);
}

static void read_mode(struct gpo_optim *opt, const void *arg,
		      struct ref_bufs *o)
{
	const struct run_args *a = arg;

	read_u8(opt, a->kind, o);
}

static void check_bitwise(const char *what, enum gpo_optim_kind kind,
			  const char *conf)
{
	const struct run_args a = { .kind = kind, .conf = conf };
	const struct ref_mode m = {
		.make = make_mode, .read = read_mode, .arg = &a,
		.seed = tu_rng(what),
	};
	struct ref_bufs ref;

	ref_same_as_cpu(what, &m, STEPS, &ref);
	ref_bufs_free(&ref);
}

START_TEST(test_adam_u8_bitwise)
{
	check_bitwise("adam_u8", GPO_ADAM, "weight_decay=0.05 betas=0.8,0.99");
}
END_TEST

START_TEST(test_adamw_u8_bitwise)
{
	check_bitwise("adamw_u8", GPO_ADAMW, "weight_decay=0.1 maximize=1");
}
END_TEST

/*
 * Fewer workgroups than blocks: each does several in turn, and the bytes
 * are the same (the launch shape never changes a result)
 */
START_TEST(test_few_groups_u8_bitwise)
{
	unsigned int keep = gpo__optim_u8_groups;

	gpo__optim_u8_groups = 3;
	check_bitwise("adamw_u8_3groups", GPO_ADAMW, "weight_decay=0.1");
	check_bitwise("lion_u8_3groups", GPO_LION, "weight_decay=0.1");
	gpo__optim_u8_groups = 1;
	check_bitwise("adagrad_u8_1group", GPO_ADAGRAD, "lr_decay=0.01");
	gpo__optim_u8_groups = keep;
}
END_TEST

static void check_reference(const char *what, enum gpo_optim_kind kind,
			    const char *conf, const struct ref_hp *h,
			    int maximize);

/* and cpu:0 with 3 groups is still the host reference */
START_TEST(test_few_groups_u8_reference)
{
	const struct ref_hp h = { .wd = 0.1, .beta1 = 0.9, .beta2 = 0.999,
				  .eps = 1e-8 };

	gpo__optim_u8_groups = 3;
	check_reference("adamw_u8_ref_3groups", GPO_ADAMW, "weight_decay=0.1",
			&h, 0);
}
END_TEST

START_TEST(test_lion_u8_bitwise)
{
	check_bitwise("lion_u8", GPO_LION, "weight_decay=0.1 betas=0.9,0.99");
}
END_TEST

START_TEST(test_rmsprop_u8_bitwise)
{
	check_bitwise("rmsprop_u8", GPO_RMSPROP, "weight_decay=0.01 alpha=0.9");
}
END_TEST

START_TEST(test_adagrad_u8_bitwise)
{
	check_bitwise("adagrad_u8", GPO_ADAGRAD,
		      "weight_decay=0.01 lr_decay=0.01 maximize=1");
	check_bitwise("adagrad_u8_init", GPO_ADAGRAD,
		      "initial_accumulator_value=0.1");
}
END_TEST

/* ---- checkpoints ---------------------------------------------------------- */

/*
 * The codes and the absmax blocks are in the file: saved on cpu:0 after
 * 10 steps, restored on every device, 5 more steps there give the bytes
 * of 5 more on cpu:0
 */
static void check_ckpt_across(const char *what, enum gpo_optim_kind kind,
			      const char *conf)
{
	const struct run_args a = { .kind = kind, .conf = conf };
	const struct ref_mode m = {
		.make = make_mode, .read = read_mode, .arg = &a,
		.seed = tu_rng(what),
	};
	struct gpo_device *cpu;
	struct gpo_optim *dst;
	struct ref_bufs ref;
	char dir[256], path[300];
	struct gpo_ckpt_tensor ct;
	struct gpo_ckpt *ck;
	int t, absmax = 0;

	tu_cache_dir_new(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ck.safetensors", dir);
	ref_ckpt_across(what, &m, path, &ref);

	/* the codes as U8, each u8 slot's absmax/<slot> as F32 [blocks] */
	ck_assert_int_eq(gpo_ckpt_open(path, 0, &ck), 0);
	ck_assert_int_eq(gpo_ckpt_verify(ck), 0);
	for (t = 0; !gpo_ckpt_tensor(ck, t, &ct); t++) {
		if (!strncmp(ct.name, "state/", 6))
			ck_assert_str_eq(ct.dtype, "U8");
		if (strncmp(ct.name, "absmax/", 7))
			continue;
		ck_assert_str_eq(ct.dtype, "F32");
		ck_assert_int_eq(ct.ndim, 1);
		ck_assert_uint_eq(ct.shape[0], total_blocks());
		absmax++;
	}
	gpo_ckpt_close(ck);
	ck_assert_int_eq(absmax, ref_u8_nslots(kind));

	/* into f32 state: refused, nothing changed */
	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	dst = ref_grouped_optim(cpu, kind, conf, sizes, NTENSORS);
	ck_assert_int_lt(gpo_optim_restore(dst, path, 0), 0);
	tu_check_errmsg("gpo_optim_restore(u8 file, f32 state)");
	ck_assert_uint_eq(gpo_optim_steps_done(dst), 0);
	gpo_optim_free(dst);

	ref_bufs_free(&ref);
	unlink(path);
	tu_cache_dir_remove(dir);
}

START_TEST(test_ckpt_adamw_u8_across_devices)
{
	check_ckpt_across("ckpt_adamw_u8", GPO_ADAMW, "weight_decay=0.1");
}
END_TEST

START_TEST(test_ckpt_lion_u8_across_devices)
{
	check_ckpt_across("ckpt_lion_u8", GPO_LION, "weight_decay=0.1");
}
END_TEST

/* ---- the host reference ------------------------------------------------ */

struct ref_state {
	float *p;
	uint8_t *q[2];
	float *absmax[2];
};

static float deq(const struct ref_state *r, int k, uint64_t e, uint64_t b,
		 int sg)
{
	return (float)ref_dequant(r->q[k][e], r->absmax[k][b], sg);
}

static float sign_of(float x)
{
	return (float)(x > 0.0f) - (float)(x < 0.0f);
}

/*
 * One step of group g (elements [start, start + n), blocks from blk) as
 * the kernel does it, in f32: the state dequantized, the update, then
 * each block's new absmax and codes
 */
static void ref_step_group(struct ref_state *r, enum gpo_optim_kind kind,
			   const float *grad, uint64_t start, uint64_t n,
			   uint64_t blk, double lr, const struct ref_hp *h,
			   uint64_t t)
{
	double bc1 = 1.0 - pow(h->beta1, (double)t);
	double bc2 = 1.0 - pow(h->beta2, (double)t);
	const float b1 = (float)h->beta1, b2 = (float)h->beta2;
	const float ob1 = (float)(1.0 - h->beta1);
	const float ob2 = (float)(1.0 - h->beta2);
	const float step_size = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2);
	const int decoupled = kind == GPO_ADAMW || kind == GPO_LION;
	const float decay = decoupled ? (float)(1.0 - lr * h->wd) : 1.0f;
	const float l2 = decoupled ? 0.0f : (float)h->wd, fe = (float)h->eps;
	const float alpha = (float)h->alpha, oa = (float)(1.0 - h->alpha);
	const float flr = (float)lr;
	const float clr = (float)(lr / (1.0 + (double)(t - 1) * h->lr_decay));
	const int two = kind == GPO_ADAM || kind == GPO_ADAMW;
	float x[2][BLK];
	uint64_t k, i;
	int j;

	for (k = 0; k * BLK < n; k++) {
		uint64_t first = k * BLK, cnt = n - first < BLK ? n - first :
								   BLK;
		uint64_t b = blk + k;
		float am[2] = { 0, 0 };

		for (i = 0; i < cnt; i++) {
			uint64_t e = start + first + i;
			float gi = grad[e] + l2 * r->p[e], denom, m0;

			switch (kind) {
			case GPO_LION:
				gi = grad[e];
				m0 = deq(r, 0, e, b, 1);
				r->p[e] = r->p[e] * decay -
					  flr * sign_of(m0 * b1 + ob1 * gi);
				x[0][i] = m0 * b2 + ob2 * gi;
				break;
			case GPO_RMSPROP:
				x[0][i] = deq(r, 0, e, b, 1) * alpha +
					  oa * gi * gi;
				r->p[e] = r->p[e] -
					  flr * (gi / (sqrtf(x[0][i]) + fe));
				break;
			case GPO_ADAGRAD:
				x[0][i] = deq(r, 0, e, b, 1) + gi * gi;
				r->p[e] = r->p[e] -
					  clr * (gi / (sqrtf(x[0][i]) + fe));
				break;
			default:
				x[0][i] = deq(r, 0, e, b, 1) * b1 + ob1 * gi;
				x[1][i] = deq(r, 1, e, b, 0) * b2 +
					  ob2 * gi * gi;
				denom = sqrtf(x[1][i]) / bc2_sqrt + fe;
				r->p[e] = r->p[e] * decay -
					  step_size * (x[0][i] / denom);
			}
			for (j = 0; j < 1 + two; j++)
				am[j] = fabsf(x[j][i]) > am[j] ?
					fabsf(x[j][i]) : am[j];
		}
		for (j = 0; j < 1 + two; j++) {
			r->absmax[j][b] = am[j];
			/* exp_avg_sq alone has the unsigned map */
			for (i = 0; i < cnt; i++)
				r->q[j][start + first + i] =
					ref_quant(x[j][i], am[j], j == 0);
		}
	}
}

/* @n elements of @es bytes of the host reference @want are @got's */
static void same_as_host(const char *what, int step, const char *name,
			 const void *want, const void *got, uint64_t n,
			 size_t es)
{
	long at = ref_first_diff(want, got, n, es);

	if (at >= 0)
		ck_abort_msg("%s step %d: %s differs from the host reference at %ld",
			     what, step, name, at);
}

static void check_reference(const char *what, enum gpo_optim_kind kind,
			    const char *conf, const struct ref_hp *h,
			    int maximize)
{
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	struct ref_state r;
	struct ref_bufs got;
	uint64_t s = tu_rng(what), numel, blocks = total_blocks();
	float *host, *gm;
	int i, k, g;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	opt = make_opt(cpu, kind, conf);
	numel = gpo_optim_numel(opt);
	host = malloc(numel * 4);
	gm = malloc(numel * 4);
	r.p = malloc(numel * 4);
	for (k = 0; k < 2; k++) {
		r.q[k] = calloc(numel, 1);
		r.absmax[k] = calloc(blocks, 4);
	}
	/* adagrad's initial sum: every block's absmax, every code 1.0's */
	for (uint64_t e = 0; h->init != 0 && e < numel; e++)
		r.q[0][e] = 255;
	for (uint64_t b = 0; h->init != 0 && b < blocks; b++)
		r.absmax[0][b] = (float)h->init;
	tu_fill(host, numel, &s, -1.0, 1.0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, host, numel * 4),
			 0);
	/* the flat buffer is group after group, no padding */
	memcpy(r.p, host, numel * 4);
	for (i = 1; i <= STEPS; i++) {
		uint64_t start = 0, blk = 0;

		ref_fill_mixed(host, numel, &s);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, host,
						 numel * 4), 0);
		ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
		memcpy(gm, host, numel * 4);
		if (maximize)
			for (uint64_t e = 0; e < numel; e++)
				gm[e] = -gm[e];
		for (g = 0; g < REF_NGROUPS; g++) {
			uint64_t n = ref_group_numel(sizes, NTENSORS, g);

			ref_step_group(&r, kind, gm, start, n, blk,
				       ref_group_lr[g], h, (uint64_t)i);
			start += n;
			blk += (n + BLK - 1) / BLK;
		}
		read_u8(opt, kind, &got);
		same_as_host(what, i, "param", r.p, got.buf[0], numel, 4);
		for (k = 0; k < ref_u8_nslots(kind); k++) {
			same_as_host(what, i, got.name[1 + 2 * k], r.q[k],
				     got.buf[1 + 2 * k], numel, 1);
			same_as_host(what, i, got.name[2 + 2 * k], r.absmax[k],
				     got.buf[2 + 2 * k], blocks, 4);
		}
		ref_bufs_free(&got);
	}
	fprintf(stderr, "%s: %d steps byte for byte the host reference\n",
		what, STEPS);
	for (k = 0; k < 2; k++) {
		free(r.q[k]);
		free(r.absmax[k]);
	}
	free(r.p);
	free(gm);
	free(host);
	gpo_optim_free(opt);
}

START_TEST(test_adamw_u8_reference)
{
	const struct ref_hp h = { .wd = 0.1, .beta1 = 0.9, .beta2 = 0.999,
				  .eps = 1e-8 };

	check_reference("adamw_u8_ref", GPO_ADAMW,
			"weight_decay=0.1 maximize=1", &h, 1);
}
END_TEST

START_TEST(test_adam_u8_reference)
{
	const struct ref_hp h = { .wd = 0.05, .beta1 = 0.8, .beta2 = 0.99,
				  .eps = 1e-8 };

	check_reference("adam_u8_ref", GPO_ADAM,
			"weight_decay=0.05 betas=0.8,0.99", &h, 0);
}
END_TEST

START_TEST(test_lion_u8_reference)
{
	const struct ref_hp h = { .wd = 0.1, .beta1 = 0.9, .beta2 = 0.99 };

	check_reference("lion_u8_ref", GPO_LION,
			"weight_decay=0.1 betas=0.9,0.99", &h, 0);
}
END_TEST

START_TEST(test_rmsprop_u8_reference)
{
	const struct ref_hp h = { .wd = 0.01, .alpha = 0.9, .eps = 1e-8 };

	check_reference("rmsprop_u8_ref", GPO_RMSPROP,
			"weight_decay=0.01 alpha=0.9", &h, 0);
}
END_TEST

START_TEST(test_adagrad_u8_reference)
{
	const struct ref_hp h = { .wd = 0.01, .lr_decay = 0.01, .eps = 1e-10 };
	const struct ref_hp hi = { .eps = 1e-10, .init = 0.1 };

	check_reference("adagrad_u8_ref", GPO_ADAGRAD,
			"weight_decay=0.01 lr_decay=0.01 maximize=1", &h, 1);
	check_reference("adagrad_u8_init_ref", GPO_ADAGRAD,
			"initial_accumulator_value=0.1", &hi, 0);
}
END_TEST

/* ---- bitsandbytes' tolerances ------------------------------------------ */

static double randn(uint64_t *s)
{
	double u1 = tu_rand(s, 1e-12, 1.0), u2 = tu_rand(s, 0.0, 1.0);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/*
 * bitsandbytes' tests/test_optim.py, test_optimizer8bit (blocksize 256,
 * float32): p = randn * 0.1, g = randn * 0.01 for 100 steps, torch's
 * f32 optimizer and the 8-bit one stepped from the same point (after each
 * step p1 is copied into p2 and the 8-bit state, dequantized, into the
 * f32 optimizer's), and per step:
 *   params: isclose(atol 1e-5, rtol 1e-3) but for at most 5 elements;
 *   each state dequantized: isclose(atol 3e-3, rtol 1e-3) but for < 20;
 *   mean |p1 - p2| < 1.2e-4, mean |p1 - p2| / (|p1| + 1e-9) < 1.2e-3.
 * Here the f32 optimizer is AdamW in float64 and torch's defaults (lr
 * 1e-3, betas 0.9, 0.999, eps 1e-8, weight_decay 1e-2), on 1024 x 33 + 5
 * (odd: a partial last block).
 */
START_TEST(test_adamw_u8_bnb_tolerance)
{
	/* bitsandbytes' 1024 x 32 and up; smaller under valgrind */
	const uint64_t n = tu_quick() ? 2048 + 33 : 1024 * 33 + 5;
	const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 1e-2;
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	uint64_t s = tu_rng("adamw_u8_bnb"), e, blocks = (n + BLK - 1) / BLK;
	float *p = malloc(n * 4), *g = malloc(n * 4), *am[2];
	double *m = calloc(n, 8), *v = calloc(n, 8), *p1 = malloc(n * 8);
	uint8_t *q[2];
	int t, k;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8), 0);
	for (k = 0; k < 2; k++) {
		q[k] = malloc(n);
		am[k] = malloc(blocks * 4);
	}
	for (e = 0; e < n; e++)
		p[e] = (float)(randn(&s) * 0.1);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, n * 4), 0);
	for (t = 1; t <= 100; t++) {
		double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
		double err = 0, rel = 0;
		int pbad = 0, sbad[2] = { 0, 0 };

		for (e = 0; e < n; e++)
			g[e] = (float)(randn(&s) * 0.01);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, n * 4),
				 0);
		ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
		/* the f32 optimizer's step from the same point */
		for (e = 0; e < n; e++) {
			double x = p[e];

			x *= 1.0 - lr * wd;
			m[e] = b1 * m[e] + (1.0 - b1) * g[e];
			v[e] = b2 * v[e] + (1.0 - b2) * (double)g[e] * g[e];
			p1[e] = x - lr / bc1 * m[e] /
				    (sqrt(v[e]) / sqrt(bc2) + eps);
		}
		ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, p, n * 4),
				 0);
		for (k = 0; k < 2; k++) {
			const char *slot = ref_u8_slot(GPO_ADAMW, k);

			ck_assert_int_eq(gpo_optim_read(opt, slot, NULL, q[k],
							n), 0);
			ck_assert_int_eq(gpo_optim_read_absmax(opt, slot, am[k],
							       blocks), 0);
		}
		for (e = 0; e < n; e++) {
			double d = fabs(p1[e] - p[e]);
			double s8[2];

			pbad += d > 1e-5 + 1e-3 * fabs(p[e]);
			err += d;
			rel += d / (fabs(p1[e]) + 1e-9);
			s8[0] = ref_dequant(q[0][e], am[0][e / BLK], 1);
			s8[1] = ref_dequant(q[1][e], am[1][e / BLK], 0);
			sbad[0] += fabs(m[e] - s8[0]) > 3e-3 + 1e-3 * fabs(s8[0]);
			sbad[1] += fabs(v[e] - s8[1]) > 3e-3 + 1e-3 * fabs(s8[1]);
			/* the next step starts from the same point again */
			m[e] = s8[0];
			v[e] = s8[1];
			p[e] = (float)p1[e];
		}
		ck_assert_msg(pbad <= 5, "step %d: %d params not close", t, pbad);
		ck_assert_msg(sbad[0] < 20 && sbad[1] < 20,
			      "step %d: %d, %d state elements not close", t,
			      sbad[0], sbad[1]);
		ck_assert_msg(err / n < 1.2e-4, "step %d: mean error %g", t,
			      err / n);
		ck_assert_msg(rel / n < 1.2e-3, "step %d: mean relative error %g",
			      t, rel / n);
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, n * 4),
				 0);
	}
	for (k = 0; k < 2; k++) {
		free(q[k]);
		free(am[k]);
	}
	free(p);
	free(g);
	free(m);
	free(v);
	free(p1);
	gpo_optim_free(opt);
}
END_TEST

/* ---- what u8 state refuses ---------------------------------------------- */

START_TEST(test_u8_refusals)
{
	static const enum gpo_optim_kind none[] = { GPO_SGD, GPO_LAMB };
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	const uint64_t n = 300;
	float p[300], g[300], got[300], am[2];
	uint64_t s = tu_rng("u8_refusals");
	size_t i;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	/* SGD and LAMB keep f32 state only: -EINVAL, nothing changes */
	for (i = 0; i < ARRAY_SIZE(none); i++) {
		ck_assert_int_eq(gpo_optim_new(cpu, none[i], &opt), 0);
		ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8),
				 -EINVAL);
		tu_check_errmsg("gpo_optim_set_state_dtype(u8)");
		ck_assert_int_eq(gpo_optim_dtype(opt, none[i] == GPO_SGD ?
						 "momentum_buffer" : "exp_avg"),
				 GPO_F32);
		gpo_optim_free(opt);
	}

	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	/* absmax of f32 state: there is none */
	ck_assert_int_eq(gpo_optim_read_absmax(opt, "exp_avg", NULL, 0),
			 -EINVAL);
	ck_assert_int_eq(gpo_optim_read_absmax(opt, "momentum_buffer", NULL,
					       0), -ENOENT);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8), 0);
	ck_assert_int_eq(gpo_optim_read_absmax(opt, "exp_avg", NULL, 0), 2);
	tu_fill(p, n, &s, -1.0, 1.0);
	tu_fill(g, n, &s, -1.0, 1.0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, sizeof(p)), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, sizeof(g)), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
	/* after the first use: -EBUSY, the mode stays */
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_BF16), -EBUSY);
	tu_check_errmsg("gpo_optim_set_state_dtype after use");
	ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg"), GPO_U8);
	ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg_sq"), GPO_U8);
	/* a wrong count reads nothing */
	am[0] = am[1] = -1.0f;
	ck_assert_int_eq(gpo_optim_read_absmax(opt, "exp_avg", am, 1),
			 -EINVAL);
	ck_assert(am[0] == -1.0f);
	ck_assert_int_eq(gpo_optim_read_absmax(opt, "exp_avg", am, 2), 0);
	ck_assert(am[0] > 0.0f && am[1] > 0.0f);
	/* amsgrad has no 8-bit max_exp_avg_sq: the step is refused */
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, p, sizeof(p)), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, -1, "amsgrad=1"), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), -ENOSYS);
	tu_check_errmsg("gpo_optim_step(amsgrad, u8)");
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got, sizeof(got)),
			 0);
	ck_assert(!memcmp(got, p, sizeof(p)));
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 1);
	gpo_optim_free(opt);

	/* RMSprop's momentum and centered slots have no 8-bit kernel */
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(gpo_optim_new(cpu, GPO_RMSPROP, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
		ck_assert_int_eq(gpo_optim_configure(opt, -1, i ?
						     "centered=1" :
						     "momentum=0.9"), 0);
		ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p,
						 sizeof(p)), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g,
						 sizeof(g)), 0);
		ck_assert_int_eq(gpo_optim_step(opt, NULL), -ENOSYS);
		tu_check_errmsg("gpo_optim_step(rmsprop, u8)");
		ck_assert_uint_eq(gpo_optim_steps_done(opt), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got,
						sizeof(got)), 0);
		ck_assert(!memcmp(got, p, sizeof(p)));
		gpo_optim_free(opt);
	}
}
END_TEST

/*
 * Half parameters with u8 state step (test_optim_master.c); what the
 * 8-bit kernels lack stays refused with them too: -ENOSYS at the step,
 * a message, parameters and master unchanged, no step counted
 */
static void check_half_u8_refused(enum gpo_optim_kind kind, const char *conf,
				  const char *what)
{
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	const uint64_t n = 300;
	uint16_t hp[300], hg[300], hgot[300];
	float mf[300], mgot[300];
	uint64_t s = tu_rng(what);
	size_t i;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	tu_fill(mf, n, &s, -1.0, 1.0);
	for (i = 0; i < n; i++) {
		hp[i] = gpo__f32_to_bf16(mf[i]);
		hg[i] = gpo__f32_to_bf16((float)tu_rand(&s, -1.0, 1.0));
	}
	ck_assert_int_eq(gpo_optim_new(cpu, kind, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, -1, conf), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 1, 7), 0);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "master", NULL, mf, sizeof(mf)),
			 0);
	ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, hg, sizeof(hg)),
			 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), -ENOSYS);
	tu_check_errmsg(what);
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 0);
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, hgot,
					sizeof(hgot)), 0);
	ck_assert(!memcmp(hgot, hp, sizeof(hp)));
	ck_assert_int_eq(gpo_optim_read(opt, "master", NULL, mgot,
					sizeof(mgot)), 0);
	ck_assert(!memcmp(mgot, mf, sizeof(mf)));
	gpo_optim_free(opt);
}

START_TEST(test_half_u8_amsgrad_refused)
{
	check_half_u8_refused(GPO_ADAMW, "amsgrad=1",
			      "gpo_optim_step(bf16 params, u8 state, amsgrad)");
}
END_TEST

START_TEST(test_half_u8_rmsprop_momentum_refused)
{
	check_half_u8_refused(GPO_RMSPROP, "momentum=0.9",
			      "gpo_optim_step(bf16 params, u8 square_avg, momentum)");
}
END_TEST

START_TEST(test_half_u8_rmsprop_centered_refused)
{
	check_half_u8_refused(GPO_RMSPROP, "centered=1",
			      "gpo_optim_step(bf16 params, u8 square_avg, centered)");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_u8");
	TCase *tc = tcase_create("u8");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_adam_u8_bitwise);
	tcase_add_test(tc, test_adamw_u8_bitwise);
	tcase_add_test(tc, test_lion_u8_bitwise);
	tcase_add_test(tc, test_few_groups_u8_bitwise);
	tcase_add_test(tc, test_rmsprop_u8_bitwise);
	tcase_add_test(tc, test_adagrad_u8_bitwise);
	tcase_add_test(tc, test_adam_u8_reference);
	tcase_add_test(tc, test_adamw_u8_reference);
	tcase_add_test(tc, test_lion_u8_reference);
	tcase_add_test(tc, test_rmsprop_u8_reference);
	tcase_add_test(tc, test_adagrad_u8_reference);
	tcase_add_test(tc, test_few_groups_u8_reference);
	tcase_add_test(tc, test_adamw_u8_bnb_tolerance);
	tcase_add_test(tc, test_ckpt_adamw_u8_across_devices);
	tcase_add_test(tc, test_ckpt_lion_u8_across_devices);
	tcase_add_test(tc, test_u8_refusals);
	tcase_add_test(tc, test_half_u8_amsgrad_refused);
	tcase_add_test(tc, test_half_u8_rmsprop_momentum_refused);
	tcase_add_test(tc, test_half_u8_rmsprop_centered_refused);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
