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
#include "testutil.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"
#include "optim/optim_i.h"

#define STEPS		20
#define NGROUPS		3
#define MAX_DEVS	16
#define MAX_BUFS	12
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
static const double group_lr[NGROUPS] = { 0.01, 0.003, 0.02 };

struct run_out {
	int n;
	char name[MAX_BUFS][64];
	void *buf[MAX_BUFS];
	size_t bytes[MAX_BUFS];
};

static void run_out_free(struct run_out *o)
{
	int i;

	for (i = 0; i < o->n; i++)
		free(o->buf[i]);
	memset(o, 0, sizeof(*o));
}

static uint16_t to_half(float x, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f32_to_f16(x) : gpo__f32_to_bf16(x);
}

static float from_half(uint16_t h, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f16_to_f32(h) : gpo__bf16_to_f32(h);
}

static struct gpo_optim *make_opt(struct gpo_device *dev,
				  enum gpo_optim_kind kind, const char *conf,
				  enum gpo_dtype pdt, int master,
				  enum gpo_dtype sdt)
{
	struct gpo_optim *opt;
	char name[32];
	int g, t, ret;

	ck_assert_int_eq(gpo_optim_new(dev, kind, &opt), 0);
	for (g = 1; g < NGROUPS; g++)
		ck_assert_int_eq(gpo_optim_add_group(opt), g);
	for (t = 0; t < ntensors; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, name, 1, &sizes[t],
						      t % NGROUPS), 0);
	}
	ck_assert_msg(!gpo_optim_configure(opt, -1, conf), "%s: %s", conf,
		      gpo_errmsg());
	ret = gpo_optim_set_param_dtype(opt, pdt, master, SR_SEED);
	ck_assert_msg(!ret, "set_param_dtype: %s", gpo_errmsg());
	if (sdt != GPO_F32)
		ck_assert_msg(!gpo_optim_set_state_dtype(opt, sdt), "%s",
			      gpo_errmsg());
	for (g = 0; g < NGROUPS; g++)
		ck_assert_int_eq(gpo_optim_set(opt, g, "lr", group_lr[g]), 0);
	return opt;
}

/* @n random half values (mixed scales) from *@s */
static void fill_half(uint16_t *h, uint64_t n, uint64_t *s, enum gpo_dtype dt,
		      double scale)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		float x = (float)tu_rand(s, -1.0, 1.0) * (float)scale;

		if (i % 7 == 0)
			x *= 30.0f;
		h[i] = to_half(x, dt);
	}
}

static void do_steps(struct gpo_optim *opt, enum gpo_dtype dt, uint64_t *s,
		     int steps)
{
	uint64_t numel = gpo_optim_numel(opt);
	uint16_t *h = malloc(numel * 2);
	int i, ret;

	ck_assert_ptr_nonnull(h);
	for (i = 0; i < steps; i++) {
		fill_half(h, numel, s, dt, 1.0);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, h,
						 numel * 2), 0);
		ret = gpo_optim_step(opt, NULL);
		ck_assert_msg(!ret, "step %d: %s", i + 1, gpo_errmsg());
	}
	free(h);
}

static void read_one(struct gpo_optim *opt, const char *name,
		     struct run_out *o)
{
	uint64_t numel = gpo_optim_numel(opt);
	int dt = gpo_optim_dtype(opt, name), i = o->n++;

	ck_assert_int_ge(dt, 0);
	ck_assert_int_lt(i, MAX_BUFS);
	snprintf(o->name[i], sizeof(o->name[i]), "%s", name);
	o->bytes[i] = numel * gpo_dtype_size((enum gpo_dtype)dt);
	o->buf[i] = malloc(o->bytes[i]);
	/* poisoned: a read that writes nothing shows */
	memset(o->buf[i], 0xa5, o->bytes[i]);
	ck_assert_msg(!gpo_optim_read(opt, name, NULL, o->buf[i], o->bytes[i]),
		      "read %s: %s", name, gpo_errmsg());
}

/* the absmax blocks of u8 slot @slot, as "<slot>.absmax" */
static void read_absmax(struct gpo_optim *opt, const char *slot,
			struct run_out *o)
{
	int blocks = gpo_optim_read_absmax(opt, slot, NULL, 0), i = o->n++;

	ck_assert_int_gt(blocks, 0);
	ck_assert_int_lt(i, MAX_BUFS);
	snprintf(o->name[i], sizeof(o->name[i]), "%s.absmax", slot);
	o->bytes[i] = (size_t)blocks * 4;
	o->buf[i] = malloc(o->bytes[i]);
	memset(o->buf[i], 0xa5, o->bytes[i]);
	ck_assert_msg(!gpo_optim_read_absmax(opt, slot, o->buf[i],
					     (size_t)blocks),
		      "absmax of %s: %s", slot, gpo_errmsg());
}

/*
 * param, master (if any) and every slot the step uses (a u8 one with its
 * absmax blocks)
 */
static void read_all(struct gpo_optim *opt, int master, struct run_out *o)
{
	int i, n = gpo_optim_slot_count(opt);

	memset(o, 0, sizeof(*o));
	read_one(opt, "param", o);
	if (master)
		read_one(opt, "master", o);
	for (i = 0; i < n; i++) {
		const char *slot = gpo_optim_slot_name(opt, i);

		if (gpo_optim_dtype(opt, slot) != GPO_U8) {
			read_one(opt, slot, o);
			continue;
		}
		/* amsgrad's max_exp_avg_sq: no u8 kernel, never in use */
		if (!strcmp(slot, "max_exp_avg_sq"))
			continue;
		read_one(opt, slot, o);
		read_absmax(opt, slot, o);
	}
}

static void run_steps(struct gpo_device *dev, enum gpo_optim_kind kind,
		      const char *conf, enum gpo_dtype pdt, int master,
		      enum gpo_dtype sdt, uint64_t seed, struct run_out *o)
{
	struct gpo_optim *opt = make_opt(dev, kind, conf, pdt, master, sdt);
	uint64_t s = seed, numel = gpo_optim_numel(opt);
	uint16_t *h = malloc(numel * 2);

	ck_assert_ptr_nonnull(h);
	fill_half(h, numel, &s, pdt, 1.0);
	ck_assert_msg(!gpo_optim_write(opt, "param", NULL, h, numel * 2), "%s",
		      gpo_errmsg());
	free(h);
	do_steps(opt, pdt, &s, STEPS);
	read_all(opt, master, o);
	gpo_optim_free(opt);
}

static void compare(const char *what, const char *dev_id,
		    const struct run_out *ref, const struct run_out *got)
{
	int i;
	size_t j;

	ck_assert_int_eq(ref->n, got->n);
	for (i = 0; i < ref->n; i++) {
		const unsigned char *r = ref->buf[i], *g = got->buf[i];

		ck_assert_str_eq(ref->name[i], got->name[i]);
		ck_assert_uint_eq(ref->bytes[i], got->bytes[i]);
		if (!memcmp(r, g, ref->bytes[i]))
			continue;
		for (j = 0; j < ref->bytes[i] && r[j] == g[j]; j++)
			;
		ck_abort_msg("%s: %s on %s differs from cpu:0 at byte %zu (0x%02x vs 0x%02x)",
			     what, ref->name[i], dev_id, j, r[j], g[j]);
	}
}

static void check_bitwise(const char *what, enum gpo_optim_kind kind,
			  const char *conf, enum gpo_dtype pdt, int master,
			  enum gpo_dtype sdt)
{
	struct gpo_device *devs[MAX_DEVS], *cpu;
	struct run_out ref, got;
	uint64_t seed = tu_rng(what);
	int n, i, compared = 0;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "cpu:0: %s",
		      gpo_errmsg());
	run_steps(cpu, kind, conf, pdt, master, sdt, seed, &ref);
	ck_assert_str_eq(ref.name[0], "param");
	n = tu_devices(devs, MAX_DEVS);
	for (i = 0; i < n; i++) {
		if (devs[i] == cpu)
			continue;
		run_steps(devs[i], kind, conf, pdt, master, sdt, seed, &got);
		compare(what, tu_device_id(devs[i]), &ref, &got);
		run_out_free(&got);
		compared++;
	}
	fprintf(stderr, "%s: %d devices bit-identical to cpu:0\n", what,
		compared);
	run_out_free(&ref);
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

static int u8_nslots(enum gpo_optim_kind kind)
{
	return kind == GPO_ADAM || kind == GPO_ADAMW ? 2 : 1;
}

static const char *u8_slot(enum gpo_optim_kind kind, int k)
{
	switch (kind) {
	case GPO_RMSPROP:
		return "square_avg";
	case GPO_ADAGRAD:
		return "sum";
	default:
		return k ? "exp_avg_sq" : "exp_avg";
	}
}

/* exp_avg_sq alone has the unsigned map (abi/adam.h) */
static int u8_signed(enum gpo_optim_kind kind, int k)
{
	return !(k == 1 && u8_nslots(kind) == 2);
}

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
	for (k = 0; k < u8_nslots(kind); k++) {
		const char *slot = u8_slot(kind, k);
		int sg = u8_signed(kind, k);

		memset(v->q[k], 0x5a, n);
		ck_assert_int_eq(gpo_optim_read(opt, slot, NULL, v->q[k], n), 0);
		ck_assert_int_eq(gpo_optim_read_absmax(opt, slot, v->am[k],
						       blocks), 0);
		for (e = 0; e < n; e++)
			v->x[k][e] = (double)gpo__qmap[sg][v->q[k][e]];
	}
}

/*
 * Is @code the map value nearest x / absmax, within @tol? The map is
 * sorted: x / absmax lies between the midpoints to its neighbours.
 */
static int code_fits(double x, double absmax, int sg, uint8_t code,
		     double tol)
{
	const float *map = gpo__qmap[sg];
	double r = absmax > 0 ? x / absmax : 0, lo = -INFINITY, hi = INFINITY;

	if (code > 0)
		lo = ((double)map[code - 1] + map[code]) / 2;
	if (code < 255)
		hi = ((double)map[code] + map[code + 1]) / 2;
	return r >= lo - tol && r <= hi + tol;
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
	blocks = (uint64_t)gpo_optim_read_absmax(opt, u8_slot(kind, 0), NULL,
						 0);
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
	fill_half(gh, n, &s, pdt, 1.0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, gh, n * 2), 0);
	for (t = 1; t <= STEPS; t++) {
		uint64_t start = 0, blk = 0;

		u8_view_read(opt, kind, master, blocks, &a);
		fill_half(gh, n, &s, pdt, 1.0);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, gh, n * 2),
				 0);
		ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
		u8_view_read(opt, kind, master, blocks, &b);
		for (g = 0; g < NGROUPS; g++) {
			uint64_t gn = 0, nb;
			double lr = group_lr[g];
			double bc1 = 1 - pow(h->beta1, t), bc2 = 1 - pow(h->beta2, t);
			double clr = lr / (1 + (t - 1) * h->lr_decay);
			int i;

			for (i = g; i < ntensors; i += NGROUPS)
				gn += sizes[i];
			nb = (gn + 255) / 256;
			for (e = start; e < start + gn; e++) {
				uint64_t bk = blk + (e - start) / 256;
				double p = master ? a.mf[e] : from_half(a.ph[e], pdt);
				double gr = from_half(gh[e], pdt), gi, c, d, up;
				double x0 = a.x[0][e] * a.am[0][bk];
				double x1 = u8_nslots(kind) == 2 ?
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
				tol[e] = 1e-6 * (fabs(p) +
						 fabs(master ? a.mf[e] :
						      from_half(a.ph[e], pdt))) +
					 1e-5 * up + 1e-30;
			}
			/* each block: its absmax, then its codes */
			for (k = 0; k < u8_nslots(kind); k++) {
				int sg = u8_signed(kind, k);
				uint64_t bb;

				for (bb = 0; bb < nb; bb++) {
					uint64_t f = start + bb * 256;
					uint64_t l = f + 256 < start + gn ?
						     f + 256 : start + gn;
					double mx = 0, am = b.am[k][blk + bb];

					for (e = f; e < l; e++)
						mx = fmax(mx, fabs(x64[k][e]));
					/* no ck_assert in loops: each writes a pipe */
					if (!(fabs(am - mx) <= 1e-5 * mx))
						ck_abort_msg("%s step %d: %s block %llu absmax %.9g, float64 %.9g",
						      what, t, u8_slot(kind, k),
						      (unsigned long long)(blk + bb),
						      am, mx);
					for (e = f; e < l; e++)
						if (!code_fits(x64[k][e], am, sg,
							       b.q[k][e], 1e-5))
							ck_abort_msg("%s step %d: %s %llu code %u for %.9g (absmax %.9g)",
							      what, t, u8_slot(kind, k),
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
				if (b.ph[e] != to_half(b.mf[e], pdt))
					ck_abort_msg("%s step %d: param %llu 0x%04x, master rounds to 0x%04x",
					      what, t, (unsigned long long)e,
					      b.ph[e], to_half(b.mf[e], pdt));
				continue;
			}
			/* SR: one of the two bf16 values around it */
			got = from_half(b.ph[e], pdt);
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
			fill_half(h, n, &s, dt, 1.0);
			for (i = 0; i < n; i++)
				p[i] = from_half(h[i], dt);
			ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, h, n * 2), 0);
			for (t = 1; t <= STEPS; t++) {
				double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);

				fill_half(h, n, &s, dt, 1.0);
				ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, h, n * 2), 0);
				ck_assert_msg(!gpo_optim_step(opt, NULL), "%s",
					      gpo_errmsg());
				for (i = 0; i < n; i++) {
					double g = from_half(h[i], dt);

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
				ck_assert_msg(ph[i] == to_half(mf[i], dt),
					      "%s: param %llu is 0x%04x, master %.9g rounds to 0x%04x",
					      tu_device_id(devs[d]),
					      (unsigned long long)i, ph[i],
					      mf[i], to_half(mf[i], dt));
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
		fill_half(p, n, &s, GPO_BF16, 1.0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, n * 2), 0);
		for (t = 1; t <= 5; t++) {
			fill_half(g, n, &s, GPO_BF16, 1.0);
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
		fill_half(h, n, &s, GPO_F16, 1.0);
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
	struct gpo_device *devs[MAX_DEVS], *cpu;
	struct gpo_optim *src, *dst;
	struct run_out ref, got;
	uint64_t s = tu_rng(what), s_after, numel;
	char dir[256], path[300];
	uint16_t *h;
	int n, i;

	tu_cache_dir_new(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ck.safetensors", dir);
	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	src = make_opt(cpu, kind, conf, pdt, master, sdt);
	numel = gpo_optim_numel(src);
	h = malloc(numel * 2);
	ck_assert_ptr_nonnull(h);
	fill_half(h, numel, &s, pdt, 1.0);
	ck_assert_int_eq(gpo_optim_write(src, "param", NULL, h, numel * 2), 0);
	free(h);
	do_steps(src, pdt, &s, 10);
	ck_assert_msg(!gpo_optim_save(src, path, 0), "save: %s", gpo_errmsg());
	s_after = s;
	do_steps(src, pdt, &s, 5);
	read_all(src, master, &ref);
	gpo_optim_free(src);

	n = tu_devices(devs, MAX_DEVS);
	for (i = 0; i < n; i++) {
		dst = make_opt(devs[i], kind, conf, pdt, master, sdt);
		ck_assert_msg(!gpo_optim_restore(dst, path, 0), "restore on %s: %s",
			      tu_device_id(devs[i]), gpo_errmsg());
		s = s_after;
		do_steps(dst, pdt, &s, 5);
		read_all(dst, master, &got);
		compare(what, tu_device_id(devs[i]), &ref, &got);
		run_out_free(&got);
		gpo_optim_free(dst);
	}
	/* into an optimizer of another mode: refused, nothing changed */
	if (pdt == GPO_BF16) {
		dst = make_opt(cpu, kind, conf, pdt, !master, sdt);
		ck_assert_int_ne(gpo_optim_restore(dst, path, 0), 0);
		tu_check_errmsg("restore into another mode");
		ck_assert_uint_eq(gpo_optim_steps_done(dst), 0);
		gpo_optim_free(dst);
	}
	run_out_free(&ref);
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
	struct gpo_device *devs[MAX_DEVS], *cpu;
	struct run_out ref, got;
	struct gpo_ctx *ctx;
	uint64_t seed = tu_rng("windows");
	int i, n;

	if (!tu_built("vulkan") || tu_backend_gate("vulkan"))
		return;
	/* 1024 floats a window: the 4099- and 65537-element groups span many */
	setenv("GPUOPT_VULKAN_DEBUG", "nograph,range=4096", 1);
	ck_assert_msg(!gpo_ctx_new(&ctx, 0), "%s", gpo_errmsg());
	n = tu_open_backend(ctx, "vulkan", devs, MAX_DEVS, &cpu);
	run_steps(cpu, GPO_ADAMW, "", GPO_BF16, 0, GPO_F32, seed, &ref);
	for (i = 0; i < n; i++) {
		run_steps(devs[i], GPO_ADAMW, "", GPO_BF16, 0, GPO_F32, seed,
			  &got);
		compare("windows_adamw_bf16_sr", tu_device_id(devs[i]), &ref,
			&got);
		run_out_free(&got);
	}
	run_out_free(&ref);
	run_steps(cpu, GPO_SGD, "momentum=0.9", GPO_F16, 1, GPO_F32, seed,
		  &ref);
	for (i = 0; i < n; i++) {
		run_steps(devs[i], GPO_SGD, "momentum=0.9", GPO_F16, 1,
			  GPO_F32, seed, &got);
		compare("windows_sgd_f16_master", tu_device_id(devs[i]), &ref,
			&got);
		run_out_free(&got);
	}
	run_out_free(&ref);
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
		fill_half(h, n, &s, GPO_BF16, 1.0);
		ck_assert_int_eq(gpo_optim_write(a, "param", NULL, h, n * 2), 0);
		ck_assert_int_eq(gpo_optim_write(b, "param", NULL, h, n * 2), 0);
		fill_half(h, n, &s, GPO_BF16, 1.0);
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

	ck_assert_int_eq(gpo_optim_new(cpu, GPO_LAMB, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 1, 0), -EINVAL);
	tu_check_errmsg("LAMB");
	ck_assert_int_eq(gpo_optim_dtype(opt, "param"), GPO_F32);
	gpo_optim_free(opt);

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
