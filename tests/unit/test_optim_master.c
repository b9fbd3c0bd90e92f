// SPDX-License-Identifier: MIT
/*
 * test_optim_master.c - half-precision parameters in the optimizer
 * (gpo_optim_set_param_dtype()): f16/bf16 parameters with an f32 master
 * copy, and bf16 parameters with stochastic rounding.
 *
 * Every device gives cpu:0's bytes (half params, master, every slot) for
 * 20 steps of fresh random half gradients over odd sizes in 3 groups;
 * master-weight AdamW follows a float64 reference; SR steps are a host
 * loop's bits (gpo__f32_to_bf16_sr(), gpo__round_bits()) and unbiased;
 * bad input is refused and changes nothing.
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
#define MAX_DEVS	16
#define SR_SEED		0x5eedf00dull

static const uint64_t odd_sizes[] = { 1, 3, 7, 61, 1021, 4099, 65537 };
static const uint64_t tiny_sizes[] = { 1, 2, 3 };
/*
 * u8 state: a block's partial tail, blocks past a span of 8, the 1 alone;
 * the largest (469 blocks, 59 spans) keeps many workgroups busy, while
 * test_half_u8_few_groups_bitwise gives each of few groups many spans
 */
static uint64_t u8_sizes[] = { 120011, 300, 1, 4099, 257, 61 };
/* under GPUOPT_TEST_QUICK (valgrind) the largest is this instead */
#define U8_QUICK_SIZE	1031
static const uint64_t *sizes = odd_sizes;
static int ntensors = (int)(sizeof(odd_sizes) / sizeof(odd_sizes[0]));

/* one run's mode: the optimizer, its configuration, dtypes */
struct run_args {
	enum gpo_optim_kind kind;
	const char *conf;
	enum gpo_dtype pdt, sdt;
	int master;
};

static struct gpo_optim *make_opt(struct gpo_device *dev,
				  enum gpo_optim_kind kind, const char *conf,
				  enum gpo_dtype pdt, int master,
				  enum gpo_dtype sdt)
{
	struct gpo_optim *opt = ref_grouped_optim(dev, kind, conf, sizes,
						  ntensors);
	int ret;

	ret = gpo_optim_set_param_dtype(opt, pdt, master, SR_SEED);
	ck_assert_msg(!ret, "set_param_dtype: %s", gpo_errmsg());
	if (sdt != GPO_F32)
		ck_assert_msg(!gpo_optim_set_state_dtype(opt, sdt), "%s",
			      gpo_errmsg());
	return opt;
}

static struct gpo_optim *make_mode(struct gpo_device *dev, const void *arg)
{
	const struct run_args *a = arg;

	return make_opt(dev, a->kind, a->conf, a->pdt, a->master, a->sdt);
}

static void check_bitwise(const char *what, enum gpo_optim_kind kind,
			  const char *conf, enum gpo_dtype pdt, int master,
			  enum gpo_dtype sdt)
{
	const struct run_args a = {
		.kind = kind, .conf = conf, .pdt = pdt, .sdt = sdt,
		.master = master,
	};
	const struct ref_mode m = {
		.make = make_mode, .arg = &a, .seed = tu_rng(what),
	};
	struct ref_bufs ref;

	ref_same_as_cpu(what, &m, STEPS, &ref);
	ck_assert_str_eq(ref.name[0], "param");
	ref_bufs_free(&ref);
}

START_TEST(test_master_bitwise)
{
	check_bitwise("adamw_bf16_master", GPO_ADAMW, "weight_decay=0.1",
		      GPO_BF16, 1, GPO_F32);
	check_bitwise("adam_f16_master_amsgrad", GPO_ADAM,
		      "amsgrad=1 weight_decay=0.01", GPO_F16, 1, GPO_F32);
	check_bitwise("adamw_f16_master_bf16_state", GPO_ADAMW,
		      "weight_decay=0.1", GPO_F16, 1, GPO_BF16);
	check_bitwise("sgd_f16_master_momentum", GPO_SGD,
		      "momentum=0.9 nesterov=1 weight_decay=0.01", GPO_F16, 1,
		      GPO_F32);
	check_bitwise("rmsprop_bf16_master", GPO_RMSPROP,
		      "centered=1 momentum=0.9", GPO_BF16, 1, GPO_F32);
	check_bitwise("adagrad_f16_master", GPO_ADAGRAD, "lr_decay=0.01",
		      GPO_F16, 1, GPO_F32);
	check_bitwise("lion_bf16_master", GPO_LION, "weight_decay=0.1",
		      GPO_BF16, 1, GPO_F32);
}
END_TEST

START_TEST(test_sr_bitwise)
{
	check_bitwise("adamw_bf16_sr", GPO_ADAMW, "weight_decay=0.1", GPO_BF16,
		      0, GPO_F32);
	check_bitwise("adamw_bf16_sr_bf16_state", GPO_ADAMW,
		      "weight_decay=0.1", GPO_BF16, 0, GPO_BF16);
	check_bitwise("sgd_bf16_sr", GPO_SGD, "momentum=0.9", GPO_BF16, 0,
		      GPO_F32);
	check_bitwise("rmsprop_bf16_sr", GPO_RMSPROP, "weight_decay=0.01",
		      GPO_BF16, 0, GPO_F32);
	check_bitwise("adagrad_bf16_sr", GPO_ADAGRAD, "weight_decay=0.01",
		      GPO_BF16, 0, GPO_F32);
	check_bitwise("lion_bf16_sr", GPO_LION, "", GPO_BF16, 0, GPO_BF16);
}
END_TEST

/*
 * Half parameters with u8 state (the 8-bit kernels' GPO_UPD_PARAM_*):
 * each family with u8 kernels in each half mode, over a million elements
 * and odd small groups, params, master, codes and absmax cpu:0's bytes
 */
static void check_u8_modes_in(const char *family, enum gpo_optim_kind kind,
			      const char *conf, const uint64_t *sz, int nsz)
{
	static const struct {
		const char *name;
		enum gpo_dtype dt;
		int master;
	} modes[] = {
		{ "f16_master", GPO_F16, 1 },
		{ "bf16_master", GPO_BF16, 1 },
		{ "bf16_sr", GPO_BF16, 0 },
	};
	char what[64];
	size_t m;

	sizes = sz;
	ntensors = nsz;
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		snprintf(what, sizeof(what), "%s_%s_u8", family, modes[m].name);
		check_bitwise(what, kind, conf, modes[m].dt, modes[m].master,
			      GPO_U8);
	}
	sizes = odd_sizes;
	ntensors = (int)(sizeof(odd_sizes) / sizeof(odd_sizes[0]));
}

static void check_u8_modes(const char *family, enum gpo_optim_kind kind,
			   const char *conf)
{
	check_u8_modes_in(family, kind, conf, u8_sizes,
			  (int)(sizeof(u8_sizes) / sizeof(u8_sizes[0])));
}

START_TEST(test_adam_half_u8_bitwise)
{
	check_u8_modes("adam", GPO_ADAM, "weight_decay=0.05 betas=0.8,0.99");
}
END_TEST

START_TEST(test_adamw_half_u8_bitwise)
{
	check_u8_modes("adamw", GPO_ADAMW, "weight_decay=0.1 maximize=1");
}
END_TEST

START_TEST(test_rmsprop_half_u8_bitwise)
{
	check_u8_modes("rmsprop", GPO_RMSPROP, "weight_decay=0.01 alpha=0.9");
}
END_TEST

START_TEST(test_adagrad_half_u8_bitwise)
{
	check_u8_modes("adagrad", GPO_ADAGRAD,
		       "lr_decay=0.01 initial_accumulator_value=0.1");
}
END_TEST

START_TEST(test_lion_half_u8_bitwise)
{
	check_u8_modes("lion", GPO_LION, "weight_decay=0.1 betas=0.9,0.99");
}
END_TEST

/*
 * Fewer workgroups than spans: each group does several in turn (a
 * grid-stride loop), the bytes the same. Not over a million elements:
 * lavapipe (llvmpipe) ends a shader's loops after 65535 iterations in
 * all, which a workgroup doing a hundred spans of 8 blocks passes (f32
 * parameters too)
 */
START_TEST(test_half_u8_few_groups_bitwise)
{
	unsigned int keep = gpo__optim_u8_groups;
	const int nodd = (int)(sizeof(odd_sizes) / sizeof(odd_sizes[0]));

	gpo__optim_u8_groups = 3;
	check_u8_modes_in("adamw_3groups", GPO_ADAMW, "weight_decay=0.1",
			  odd_sizes, nodd);
	gpo__optim_u8_groups = 1;
	check_u8_modes_in("lion_1group", GPO_LION, "", odd_sizes, nodd);
	gpo__optim_u8_groups = keep;
}
END_TEST

/* ---- half parameters with u8 state against float64 ------------------- */

/* a family's hyperparameters, as the reference test configures them */
struct hp64 {
	double wd, beta1, beta2, eps, alpha, lr_decay;
};

/* the buffers of one u8 test step: parameters and state, as doubles */
struct u8_view {
	uint16_t *ph;		/* the half parameters */
	float *mf;		/* the master (NULL without) */
	uint8_t *q[2];
	float *am[2];
	double *x[2];		/* the state dequantized */
};

static void u8_view_read(struct gpo_optim *opt, enum gpo_optim_kind kind,
			 int master, uint64_t blocks, struct u8_view *v)
{
	uint64_t n = gpo_optim_numel(opt), e;
	int k;

	memset(v->ph, 0x5a, n * 2);
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, v->ph, n * 2), 0);
	if (master) {
		memset(v->mf, 0x5a, n * 4);
		ck_assert_int_eq(gpo_optim_read(opt, "master", NULL, v->mf,
						n * 4), 0);
	}
	for (k = 0; k < ref_u8_nslots(kind); k++) {
		const char *slot = ref_u8_slot(kind, k);
		int sg = ref_u8_signed(kind, k);

		memset(v->q[k], 0x5a, n);
		ck_assert_int_eq(gpo_optim_read(opt, slot, NULL, v->q[k], n), 0);
		ck_assert_int_eq(gpo_optim_read_absmax(opt, slot, v->am[k],
						       blocks), 0);
		for (e = 0; e < n; e++)
			v->x[k][e] = (double)gpo__qmap[sg][v->q[k][e]];
	}
}

/*
 * 20 steps on cpu:0 of @kind with half parameters and u8 state, each
 * checked against one float64 step of the same algorithm from the state
 * before it (dequantized) and the master (or the bf16 parameters): the
 * master within f32 rounding, the half parameters the master rounded to
 * nearest even (or, with SR, one of the two bf16 values around the exact
 * result), each block's absmax the largest |new state| and each code the
 * map value nearest to it, within f32 rounding
 */
static void check_u8_reference(const char *what, enum gpo_optim_kind kind,
			       const char *conf, const struct hp64 *h,
			       enum gpo_dtype pdt, int master)
{
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	struct u8_view a, b;
	uint64_t s = tu_rng(what), n, blocks, e;
	uint16_t *gh;
	double *x64[2], *p64, *tol;
	int t, k, g, ex;

	sizes = u8_sizes;
	ntensors = (int)(sizeof(u8_sizes) / sizeof(u8_sizes[0]));
	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
	opt = make_opt(cpu, kind, conf, pdt, master, GPO_U8);
	n = gpo_optim_numel(opt);
	blocks = (uint64_t)gpo_optim_read_absmax(opt, ref_u8_slot(kind, 0),
						 NULL, 0);
	gh = malloc(n * 2);
	p64 = malloc(n * 8);
	tol = malloc(n * 8);
	for (k = 0; k < 2; k++) {
		struct u8_view *v = k ? &b : &a;
		int j;

		v->ph = malloc(n * 2);
		v->mf = master ? malloc(n * 4) : NULL;
		for (j = 0; j < 2; j++) {
			v->q[j] = malloc(n);
			v->am[j] = malloc(blocks * 4);
			v->x[j] = malloc(n * 8);
		}
		x64[k] = malloc(n * 8);
	}
	ref_fill_half(gh, n, &s, pdt);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, gh, n * 2), 0);
	for (t = 1; t <= STEPS; t++) {
		uint64_t start = 0, blk = 0;

		u8_view_read(opt, kind, master, blocks, &a);
		ref_fill_half(gh, n, &s, pdt);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, gh, n * 2),
				 0);
		ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
		u8_view_read(opt, kind, master, blocks, &b);
		for (g = 0; g < REF_NGROUPS; g++) {
			uint64_t gn = ref_group_numel(sizes, ntensors, g), nb;
			double lr = ref_group_lr[g];
			double bc1 = 1 - pow(h->beta1, t), bc2 = 1 - pow(h->beta2, t);
			double clr = lr / (1 + (t - 1) * h->lr_decay);

			nb = (gn + REF_QBLOCK - 1) / REF_QBLOCK;
			for (e = start; e < start + gn; e++) {
				uint64_t bk = blk + (e - start) / REF_QBLOCK;
				double p0 = master ? a.mf[e] :
					     ref_widen(a.ph[e], pdt), p = p0;
				double gr = ref_widen(gh[e], pdt), gi, c, d, up;
				double x0 = a.x[0][e] * a.am[0][bk];
				double x1 = ref_u8_nslots(kind) == 2 ?
					    a.x[1][e] * a.am[1][bk] : 0;

				switch (kind) {
				case GPO_LION:
					c = h->beta1 * x0 + (1 - h->beta1) * gr;
					/* a sign f32 may see otherwise: skip */
					if (fabs(c) < 1e-6 * (fabs(x0) + fabs(gr)))
						p = NAN;
					else
						p = p * (1 - lr * h->wd) -
						    lr * (c > 0 ? 1 : -1);
					up = lr;
					x64[0][e] = h->beta2 * x0 +
						    (1 - h->beta2) * gr;
					break;
				case GPO_RMSPROP:
					gi = gr + h->wd * p;
					x64[0][e] = h->alpha * x0 +
						    (1 - h->alpha) * gi * gi;
					d = sqrt(x64[0][e]) + h->eps;
					p -= lr * gi / d;
					up = lr * (fabs(gr) + h->wd * fabs(p)) / d;
					break;
				case GPO_ADAGRAD:
					gi = gr + h->wd * p;
					x64[0][e] = x0 + gi * gi;
					d = sqrt(x64[0][e]) + h->eps;
					p -= clr * gi / d;
					up = clr * (fabs(gr) + h->wd * fabs(p)) / d;
					break;
				default:
					gi = gr;
					if (kind == GPO_ADAMW)
						p *= 1 - lr * h->wd;
					else
						gi += h->wd * p;
					x64[0][e] = h->beta1 * x0 +
						    (1 - h->beta1) * gi;
					x64[1][e] = h->beta2 * x1 +
						    (1 - h->beta2) * gi * gi;
					d = sqrt(x64[1][e]) / sqrt(bc2) + h->eps;
					p -= lr / bc1 * x64[0][e] / d;
					/* m's terms before they cancel */
					up = lr / bc1 * (h->beta1 * fabs(x0) +
							 (1 - h->beta1) *
							 (fabs(gr) + h->wd * fabs(p))) / d;
				}
				p64[e] = p;
				/*
				 * f32's rounding: of p and of the update's
				 * terms (relative to their size, not to a
				 * difference of them)
				 */
				tol[e] = 1e-6 * (fabs(p) + fabs(p0)) +
					 1e-5 * up + 1e-30;
			}
			/* each block: its absmax, then its codes */
			for (k = 0; k < ref_u8_nslots(kind); k++) {
				const char *slot = ref_u8_slot(kind, k);
				int sg = ref_u8_signed(kind, k);
				uint64_t bb;

				for (bb = 0; bb < nb; bb++) {
					uint64_t f = start + bb * REF_QBLOCK;
					uint64_t l = f + REF_QBLOCK;
					double mx = 0, am = b.am[k][blk + bb];

					if (l > start + gn)
						l = start + gn;
					for (e = f; e < l; e++)
						mx = fmax(mx, fabs(x64[k][e]));
					/* no ck_assert in loops: each writes a pipe */
					if (!(fabs(am - mx) <= 1e-5 * mx))
						ck_abort_msg("%s step %d: %s block %llu absmax %.9g, float64 %.9g",
						      what, t, slot,
						      (unsigned long long)(blk + bb),
						      am, mx);
					for (e = f; e < l; e++)
						if (!ref_code_fits(x64[k][e], am,
								   sg, b.q[k][e],
								   1e-5))
							ck_abort_msg("%s step %d: %s %llu code %u for %.9g (absmax %.9g)",
							      what, t, slot,
							      (unsigned long long)e,
							      b.q[k][e], x64[k][e], am);
				}
			}
			start += gn;
			blk += nb;
		}
		for (e = 0; e < n; e++) {
			double want = p64[e], got;

			if (isnan(want))
				continue;
			if (master) {
				got = b.mf[e];
				if (!(fabs(got - want) <= tol[e]))
					ck_abort_msg("%s step %d: master %llu %.9g, float64 %.9g",
					      what, t, (unsigned long long)e, got,
					      want);
				if (b.ph[e] != ref_round_half(b.mf[e], pdt))
					ck_abort_msg("%s step %d: param %llu 0x%04x, master rounds to 0x%04x",
					      what, t, (unsigned long long)e,
					      b.ph[e],
					      ref_round_half(b.mf[e], pdt));
				continue;
			}
			/* SR: one of the two bf16 values around it */
			got = ref_widen(b.ph[e], pdt);
			frexp(want, &ex);
			if (!(fabs(got - want) <= ldexp(1, ex - 8) + tol[e]))
				ck_abort_msg("%s step %d: param %llu %.9g, float64 %.9g",
				      what, t, (unsigned long long)e, got, want);
		}
	}
	fprintf(stderr, "%s: %d steps within rounding of float64\n", what,
		STEPS);
	for (k = 0; k < 2; k++) {
		struct u8_view *v = k ? &b : &a;
		int j;

		free(v->ph);
		free(v->mf);
		for (j = 0; j < 2; j++) {
			free(v->q[j]);
			free(v->am[j]);
			free(v->x[j]);
		}
		free(x64[k]);
	}
	free(p64);
	free(tol);
	free(gh);
	gpo_optim_free(opt);
	sizes = odd_sizes;
	ntensors = (int)(sizeof(odd_sizes) / sizeof(odd_sizes[0]));
}

static void check_u8_reference_modes(const char *family,
				     enum gpo_optim_kind kind,
				     const char *conf, const struct hp64 *h)
{
	char what[64];

	snprintf(what, sizeof(what), "%s_f16_master_u8_ref", family);
	check_u8_reference(what, kind, conf, h, GPO_F16, 1);
	snprintf(what, sizeof(what), "%s_bf16_master_u8_ref", family);
	check_u8_reference(what, kind, conf, h, GPO_BF16, 1);
	snprintf(what, sizeof(what), "%s_bf16_sr_u8_ref", family);
	check_u8_reference(what, kind, conf, h, GPO_BF16, 0);
}

START_TEST(test_adam_half_u8_reference)
{
	const struct hp64 h = { .wd = 0.05, .beta1 = 0.8, .beta2 = 0.99,
				.eps = 1e-8 };

	check_u8_reference_modes("adam", GPO_ADAM,
				 "weight_decay=0.05 betas=0.8,0.99", &h);
}
END_TEST

START_TEST(test_adamw_half_u8_reference)
{
	const struct hp64 h = { .wd = 0.1, .beta1 = 0.9, .beta2 = 0.999,
				.eps = 1e-8 };

	check_u8_reference_modes("adamw", GPO_ADAMW, "weight_decay=0.1", &h);
}
END_TEST

START_TEST(test_rmsprop_half_u8_reference)
{
	const struct hp64 h = { .wd = 0.01, .alpha = 0.9, .eps = 1e-8 };

	check_u8_reference_modes("rmsprop", GPO_RMSPROP,
				 "weight_decay=0.01 alpha=0.9", &h);
}
END_TEST

START_TEST(test_adagrad_half_u8_reference)
{
	const struct hp64 h = { .wd = 0.01, .lr_decay = 0.01, .eps = 1e-10 };

	check_u8_reference_modes("adagrad", GPO_ADAGRAD,
				 "weight_decay=0.01 lr_decay=0.01 initial_accumulator_value=0.1",
				 &h);
}
END_TEST

START_TEST(test_lion_half_u8_reference)
{
	const struct hp64 h = { .wd = 0.1, .beta1 = 0.9, .beta2 = 0.99 };

	check_u8_reference_modes("lion", GPO_LION,
				 "weight_decay=0.1 betas=0.9,0.99", &h);
}
END_TEST

/* groups of 1-3 elements: the tail's half words written by atomics */
START_TEST(test_tiny_groups_bitwise)
{
	sizes = tiny_sizes;
	ntensors = 3;
	check_bitwise("tiny_adam_f16_master", GPO_ADAM, "", GPO_F16, 1,
		      GPO_F32);
	check_bitwise("tiny_adam_bf16_sr_bf16_state", GPO_ADAM, "", GPO_BF16,
		      0, GPO_BF16);
	check_bitwise("tiny_sgd_bf16_sr", GPO_SGD, "", GPO_BF16, 0, GPO_F32);
	sizes = odd_sizes;
	ntensors = (int)(sizeof(odd_sizes) / sizeof(odd_sizes[0]));
}
END_TEST

/*
 * Master-weight AdamW against float64: the master follows the reference
 * within f32 rounding growth over 20 steps, and the half parameters are
 * exactly the master rounded to nearest even.
 */
START_TEST(test_master_adamw_reference)
{
	const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
	enum gpo_dtype dts[2] = { GPO_F16, GPO_BF16 };
	struct gpo_device *devs[MAX_DEVS];
	int nd = tu_devices(devs, MAX_DEVS), d, k;

	for (d = 0; d < nd; d++) {
		for (k = 0; k < 2; k++) {
			enum gpo_dtype dt = dts[k];
			struct gpo_optim *opt;
			uint64_t n = 1021 + 4099, s = tu_rng("adamw_ref"), i;
			uint64_t sz[2] = { 1021, 4099 };
			uint16_t *h = malloc(n * 2), *ph = malloc(n * 2);
			float *mf = malloc(n * 4);
			double *p = malloc(n * 8), *m = calloc(n, 8);
			double *v = calloc(n, 8), worst = 0;
			int t;

			ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAMW, &opt),
					 0);
			ck_assert_int_ge(gpo_optim_add_tensor(opt, "a", 1, &sz[0], 0), 0);
			ck_assert_int_ge(gpo_optim_add_tensor(opt, "b", 1, &sz[1], 0), 0);
			ck_assert_int_eq(gpo_optim_set_param_dtype(opt, dt, 1, 1), 0);
			ck_assert_int_eq(gpo_optim_configure(opt, -1,
				"lr=0.01 weight_decay=0.1"), 0);
			ref_fill_half(h, n, &s, dt);
			for (i = 0; i < n; i++)
				p[i] = ref_widen(h[i], dt);
			ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, h, n * 2), 0);
			for (t = 1; t <= STEPS; t++) {
				double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);

				ref_fill_half(h, n, &s, dt);
				ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, h, n * 2), 0);
				ck_assert_msg(!gpo_optim_step(opt, NULL), "%s",
					      gpo_errmsg());
				for (i = 0; i < n; i++) {
					double g = ref_widen(h[i], dt);

					p[i] *= 1 - lr * wd;
					m[i] = b1 * m[i] + (1 - b1) * g;
					v[i] = b2 * v[i] + (1 - b2) * g * g;
					p[i] -= lr / bc1 * m[i] /
						(sqrt(v[i]) / sqrt(bc2) + eps);
				}
			}
			memset(mf, 0xff, n * 4);
			memset(ph, 0xff, n * 2);
			ck_assert_int_eq(gpo_optim_read(opt, "master", NULL, mf, n * 4), 0);
			ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, ph, n * 2), 0);
			for (i = 0; i < n; i++) {
				double e = fabs(mf[i] - p[i]) /
					   fmax(fabs(p[i]), 1e-3);

				worst = fmax(worst, e);
				ck_assert_msg(ph[i] ==
					      ref_round_half(mf[i], dt),
					      "%s: param %llu is 0x%04x, master %.9g rounds to 0x%04x",
					      tu_device_id(devs[d]),
					      (unsigned long long)i, ph[i],
					      mf[i], ref_round_half(mf[i], dt));
			}
			/* f32 over 20 steps: far below half's 2^-8 / 2^-11 */
			ck_assert_msg(worst < 1e-4, "%s %s: master %.3g from float64",
				      tu_device_id(devs[d]), gpo_dtype_name(dt),
				      worst);
			gpo_optim_free(opt);
			free(h);
			free(ph);
			free(mf);
			free(p);
			free(m);
			free(v);
		}
	}
}
END_TEST

/*
 * Plain SGD in bf16 with stochastic rounding, against a host loop of
 * cpu.c's f32 arithmetic and the library's SR (bit for bit); then over
 * many steps of an update far below half a bf16 step, the mean move is
 * the exact one (round to nearest would never move).
 */
START_TEST(test_sr_host_loop_and_unbiased)
{
	struct gpo_device *devs[MAX_DEVS];
	int nd = tu_devices(devs, MAX_DEVS), d, t;
	const uint64_t n = 4099;
	const float lr = 0.01f;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *opt;
		uint16_t *p = malloc(n * 2), *g = malloc(n * 2);
		uint16_t *got = malloc(n * 2), *p0 = malloc(n * 2);
		uint64_t s = tu_rng("sr_host"), i;
		double moved = 0, want = 0;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
		ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 0, 77), 0);
		ck_assert_int_eq(gpo_optim_set(opt, -1, "lr", lr), 0);
		ref_fill_half(p, n, &s, GPO_BF16);
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, n * 2), 0);
		for (t = 1; t <= 5; t++) {
			ref_fill_half(g, n, &s, GPO_BF16);
			ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, n * 2), 0);
			ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
			for (i = 0; i < n; i++) {
				float pf = gpo__bf16_to_f32(p[i]);
				float gf = gpo__bf16_to_f32(g[i]) * 1.0f + 0.0f * pf;

				pf = pf - lr * gf;
				/* the group starts at flat element 0 */
				p[i] = gpo__f32_to_bf16_sr(pf,
					gpo__round_bits(77, (uint64_t)t, i));
			}
			memset(got, 0x5a, n * 2);
			ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got, n * 2), 0);
			for (i = 0; i < n; i++)
				ck_assert_msg(got[i] == p[i],
					      "%s step %d element %llu: 0x%04x, host 0x%04x",
					      tu_device_id(devs[d]), t,
					      (unsigned long long)i, got[i], p[i]);
		}
		/* unbiased: 1.0 minus 200 updates of 1e-4 each (bf16 step at 1 is 2^-7) */
		for (i = 0; i < n; i++) {
			p0[i] = gpo__f32_to_bf16(1.0f);
			g[i] = gpo__f32_to_bf16(1.0f);
		}
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p0, n * 2), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, n * 2), 0);
		ck_assert_int_eq(gpo_optim_set(opt, -1, "lr", 1e-4), 0);
		for (t = 0; t < 200; t++)
			ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got, n * 2), 0);
		for (i = 0; i < n; i++)
			moved += 1.0 - gpo__bf16_to_f32(got[i]);
		moved /= (double)n;
		want = 200 * (double)(float)1e-4;
		ck_assert_msg(fabs(moved - want) < 0.05 * want,
			      "%s: SR moved %.6g on average, exact %.6g",
			      tu_device_id(devs[d]), moved, want);
		gpo_optim_free(opt);
		free(p);
		free(g);
		free(got);
		free(p0);
	}
}
END_TEST

/* a write of param sets the master, one of master sets param */
START_TEST(test_master_follows_writes)
{
	struct gpo_device *devs[MAX_DEVS];
	int nd = tu_devices(devs, MAX_DEVS), d;
	const uint64_t n = 61;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *opt;
		uint16_t h[61], hb[61];
		float f[61], fb[61];
		uint64_t s = tu_rng("follows"), i;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAM, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
		ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_F16, 1, 0), 0);
		ck_assert_int_eq(gpo_optim_dtype(opt, "param"), GPO_F16);
		ck_assert_int_eq(gpo_optim_dtype(opt, "grad"), GPO_F16);
		ck_assert_int_eq(gpo_optim_dtype(opt, "master"), GPO_F32);
		ref_fill_half(h, n, &s, GPO_F16);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "w", h, n * 2), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "master", "w", fb, n * 4), 0);
		for (i = 0; i < n; i++)
			ck_assert(fb[i] == gpo__f16_to_f32(h[i]));
		tu_fill(f, n, &s, -3.0, 3.0);
		ck_assert_int_eq(gpo_optim_write(opt, "master", NULL, f, n * 4), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, hb, n * 2), 0);
		for (i = 0; i < n; i++)
			ck_assert(hb[i] == gpo__f32_to_f16(f[i]));
		gpo_optim_free(opt);
	}
}
END_TEST

/*
 * Checkpoints hold the half parameters and the master: 10 steps on
 * cpu:0, saved; restored on each device, 5 more steps there give the
 * bytes of 5 more on cpu:0 (the master too, which the half params alone
 * could not give back).
 */
static void check_ckpt_across(const char *what, enum gpo_optim_kind kind,
			      const char *conf, enum gpo_dtype pdt, int master,
			      enum gpo_dtype sdt)
{
	const struct run_args a = {
		.kind = kind, .conf = conf, .pdt = pdt, .sdt = sdt,
		.master = master,
	};
	const struct ref_mode m = {
		.make = make_mode, .arg = &a, .seed = tu_rng(what),
	};
	struct gpo_device *cpu;
	struct gpo_optim *dst;
	struct ref_bufs ref;
	char dir[256], path[300];

	tu_cache_dir_new(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ck.safetensors", dir);
	ref_ckpt_across(what, &m, path, &ref);
	/* into an optimizer of another mode: refused, nothing changed */
	if (pdt == GPO_BF16) {
		ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
		dst = make_opt(cpu, kind, conf, pdt, !master, sdt);
		ck_assert_int_ne(gpo_optim_restore(dst, path, 0), 0);
		tu_check_errmsg("restore into another mode");
		ck_assert_uint_eq(gpo_optim_steps_done(dst), 0);
		gpo_optim_free(dst);
	}
	ref_bufs_free(&ref);
	unlink(path);
	tu_cache_dir_remove(dir);
}

START_TEST(test_ckpt_across_devices)
{
	check_ckpt_across("ckpt_adamw_bf16_master", GPO_ADAMW,
			  "weight_decay=0.1 amsgrad=1", GPO_BF16, 1, GPO_F32);
	check_ckpt_across("ckpt_adam_f16_master_bf16_state", GPO_ADAM, "",
			  GPO_F16, 1, GPO_BF16);
	check_ckpt_across("ckpt_sgd_bf16_sr", GPO_SGD, "momentum=0.9",
			  GPO_BF16, 0, GPO_F32);
}
END_TEST

/*
 * Vulkan launches cut into windows (a small maxStorageBufferRange, steps
 * not recorded): each window's stochastic rounding keys on the global
 * element index, so the bytes stay cpu:0's
 */
START_TEST(test_vulkan_windows)
{
	static const struct run_args modes[] = {
		{ .kind = GPO_ADAMW, .conf = "", .pdt = GPO_BF16,
		  .sdt = GPO_F32 },
		{ .kind = GPO_SGD, .conf = "momentum=0.9", .pdt = GPO_F16,
		  .sdt = GPO_F32, .master = 1 },
	};
	static const char *const what[] = {
		"windows_adamw_bf16_sr", "windows_sgd_f16_master",
	};
	struct gpo_device *devs[MAX_DEVS], *cpu;
	struct ref_bufs ref, got;
	struct gpo_ctx *ctx;
	uint64_t seed = tu_rng("windows");
	int i, n, k;

	if (!tu_built("vulkan") || tu_backend_gate("vulkan"))
		return;
	/* 1024 floats a window: the 4099- and 65537-element groups span many */
	setenv("GPUOPT_VULKAN_DEBUG", "nograph,range=4096", 1);
	ck_assert_msg(!gpo_ctx_new(&ctx, 0), "%s", gpo_errmsg());
	n = tu_open_backend(ctx, "vulkan", devs, MAX_DEVS, &cpu);
	for (k = 0; k < 2; k++) {
		const struct ref_mode m = {
			.make = make_mode, .arg = &modes[k], .seed = seed,
		};

		ref_mode_run(&m, cpu, STEPS, &ref);
		for (i = 0; i < n; i++) {
			ref_mode_run(&m, devs[i], STEPS, &got);
			ref_bufs_same(what[k], tu_device_id(devs[i]), &ref,
				      &got);
			ref_bufs_free(&got);
		}
		ref_bufs_free(&ref);
	}
	gpo_ctx_free(ctx);
	unsetenv("GPUOPT_VULKAN_DEBUG");
}
END_TEST

/*
 * Queued steps (gpo_optim_step_async) give the synchronous steps' bytes:
 * each carries its own step count into the rounding bits
 */
START_TEST(test_async_sr)
{
	struct gpo_device *devs[MAX_DEVS];
	int nd = tu_devices(devs, MAX_DEVS), d, t;
	const uint64_t n = 1021;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *a, *b;
		uint16_t h[1021], ra[1021], rb[1021];
		uint64_t s = tu_rng("async_sr"), i;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAMW, &a), 0);
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAMW, &b), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(a, "w", 1, &n, 0), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(b, "w", 1, &n, 0), 0);
		ck_assert_int_eq(gpo_optim_set_param_dtype(a, GPO_BF16, 0, 9), 0);
		ck_assert_int_eq(gpo_optim_set_param_dtype(b, GPO_BF16, 0, 9), 0);
		ref_fill_half(h, n, &s, GPO_BF16);
		ck_assert_int_eq(gpo_optim_write(a, "param", NULL, h, n * 2), 0);
		ck_assert_int_eq(gpo_optim_write(b, "param", NULL, h, n * 2), 0);
		ref_fill_half(h, n, &s, GPO_BF16);
		ck_assert_int_eq(gpo_optim_write(a, "grad", NULL, h, n * 2), 0);
		ck_assert_int_eq(gpo_optim_write(b, "grad", NULL, h, n * 2), 0);
		for (t = 0; t < 6; t++) {
			ck_assert_int_eq(gpo_optim_step(a, NULL), 0);
			ck_assert_int_eq(gpo_optim_step_async(b), 0);
		}
		ck_assert_int_eq(gpo_optim_wait(b, NULL), 0);
		ck_assert_int_eq(gpo_optim_read(a, "param", NULL, ra, n * 2), 0);
		ck_assert_int_eq(gpo_optim_read(b, "param", NULL, rb, n * 2), 0);
		for (i = 0; i < n; i++)
			ck_assert_msg(ra[i] == rb[i], "%s: element %llu: 0x%04x queued, 0x%04x synchronous",
				      tu_device_id(devs[d]),
				      (unsigned long long)i, rb[i], ra[i]);
		gpo_optim_free(a);
		gpo_optim_free(b);
	}
}
END_TEST

START_TEST(test_bad_input)
{
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	const uint64_t n = 7;
	uint16_t h[7] = { 0 };
	float f[7];

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(NULL, GPO_BF16, 1, 0), -EINVAL);
	tu_check_errmsg("NULL optimizer");

	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_U8, 1, 0), -EINVAL);
	tu_check_errmsg("only f32, f16 or bf16");
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, (enum gpo_dtype)99, 1, 0),
			 -EINVAL);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_F16, 0, 0), -EINVAL);
	tu_check_errmsg("master_weights=1");
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 2, 0), -EINVAL);
	/* nothing changed */
	ck_assert_int_eq(gpo_optim_dtype(opt, "param"), GPO_F32);
	ck_assert_int_eq(gpo_optim_dtype(opt, "grad"), GPO_F32);
	ck_assert_int_eq(gpo_optim_read(opt, "master", NULL, f, sizeof(f)),
			 -ENOENT);
	ck_assert_int_eq(gpo_optim_set_dtype(opt, "master", GPO_BF16), -EINVAL);
	gpo_optim_free(opt);

	/* f16 without a master through the key: refused at the step */
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_F16, 1, 0), 0);
	ck_assert_int_eq(gpo_optim_set(opt, -1, "master_weights", 0), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), -EINVAL);
	tu_check_errmsg("master_weights=1");
	ck_assert_int_eq(gpo_optim_set(opt, -1, "master_weights", 1), 0);
	/* (the norm pass with half gradients: test_optim_half_norm) */
	ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, h, sizeof(h)), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
	/* after the first use */
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 1, 0), -EBUSY);
	tu_check_errmsg("after the first use");
	ck_assert_int_eq(gpo_optim_set(opt, -1, "master_weights", 0), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), -EBUSY);
	tu_check_errmsg("master_weights");
	ck_assert_int_eq(gpo_optim_dtype(opt, "param"), GPO_F16);
	ck_assert_int_eq(gpo_optim_steps_done(opt), 1);
	gpo_optim_free(opt);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_master");
	TCase *tc = tcase_create("master");

	if (tu_quick())
		u8_sizes[0] = U8_QUICK_SIZE;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_master_bitwise);
	tcase_add_test(tc, test_sr_bitwise);
	tcase_add_test(tc, test_tiny_groups_bitwise);
	tcase_add_test(tc, test_adam_half_u8_bitwise);
	tcase_add_test(tc, test_adamw_half_u8_bitwise);
	tcase_add_test(tc, test_rmsprop_half_u8_bitwise);
	tcase_add_test(tc, test_adagrad_half_u8_bitwise);
	tcase_add_test(tc, test_lion_half_u8_bitwise);
	tcase_add_test(tc, test_half_u8_few_groups_bitwise);
	tcase_add_test(tc, test_adam_half_u8_reference);
	tcase_add_test(tc, test_adamw_half_u8_reference);
	tcase_add_test(tc, test_rmsprop_half_u8_reference);
	tcase_add_test(tc, test_adagrad_half_u8_reference);
	tcase_add_test(tc, test_lion_half_u8_reference);
	tcase_add_test(tc, test_master_adamw_reference);
	tcase_add_test(tc, test_sr_host_loop_and_unbiased);
	tcase_add_test(tc, test_master_follows_writes);
	tcase_add_test(tc, test_ckpt_across_devices);
	tcase_add_test(tc, test_vulkan_windows);
	tcase_add_test(tc, test_async_sr);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
