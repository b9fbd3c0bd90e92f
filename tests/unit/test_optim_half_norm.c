// SPDX-License-Identifier: MIT
/*
 * test_optim_half_norm.c - the norm pass (clip_norm, grad_scale,
 * check_finite, loss_scale) with half gradients: f16 and bf16 parameters
 * with a master copy, bf16 ones with stochastic rounding.
 *
 * 20 steps of fresh random half gradients over tensors of 1000003 and 77
 * elements, multiplied by the loss scale as a training loop would, with
 * clip_norm on (some steps clipped, some not) and an inf or NaN planted
 * in two steps, which are skipped (param, master and state keep their
 * bytes, the scale halves): every device gives cpu:0's bytes (param,
 * master, every slot, the norm and the loss scale of each step); on
 * every device the run follows a float64 model of the same algorithm
 * (the norm within f32 summation error, the master within f32 rounding,
 * the half parameters the master rounded, SR ones within a bf16 step of
 * one float64 step from the last ones). Bad settings are refused and
 * change nothing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "core/dtype_i.h"

#define STEPS		20
#define MAX_DEVS	16
#define MAX_BUFS	8
#define NT		2
#define GROWTH		6	/* growth_interval: the scale grows twice */
#define CLIP		50.0

static const uint64_t sizes[NT] = { 1000003, 77 };
static const double group_lr[NT] = { 0.01, 0.003 };

/* the steps with a planted non-finite gradient (1-based) */
#define BAD_STEP1	8
#define BAD_STEP2	15

struct mode {
	const char *name;
	enum gpo_optim_kind kind;
	const char *conf;
	enum gpo_dtype dt;
	int master;
	int dynamic;		/* loss_scale=dynamic, else fixed_scale */
	double fixed_scale;
	double grad_scale;
};

/* what one device's run gives */
struct run_out {
	int n;
	char name[MAX_BUFS][64];
	void *buf[MAX_BUFS];
	size_t bytes[MAX_BUFS];
	double norm[STEPS];
	double scale[STEPS];
	int skipped[STEPS];
};

static void run_out_free(struct run_out *o)
{
	int i;

	for (i = 0; i < MAX_BUFS; i++)
		free(o->buf[i]);
	memset(o, 0, sizeof(*o));
}

static uint16_t to_half(float x, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f32_to_f16(x) : gpo__f32_to_bf16(x);
}

static double from_half(uint16_t h, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f16_to_f32(h) : gpo__bf16_to_f32(h);
}

/* one ulp of the half type at |x| (an upper bound: the binade's) */
static double half_ulp(double x, enum gpo_dtype dt)
{
	int e;

	frexp(fabs(x), &e);
	return ldexp(1.0, e - (dt == GPO_F16 ? 11 : 8));
}

static uint64_t total_numel(void)
{
	return sizes[0] + sizes[1];
}

static struct gpo_optim *make_opt(struct gpo_device *dev, const struct mode *m)
{
	struct gpo_optim *opt;
	char name[8];
	int t;

	ck_assert_int_eq(gpo_optim_new(dev, m->kind, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	for (t = 0; t < NT; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, name, 1, &sizes[t],
						      t), 0);
	}
	ck_assert_msg(!gpo_optim_configure(opt, -1, m->conf), "%s: %s",
		      m->conf, gpo_errmsg());
	ck_assert_msg(!gpo_optim_set_param_dtype(opt, m->dt, m->master, 0x5eed),
		      "set_param_dtype: %s", gpo_errmsg());
	for (t = 0; t < NT; t++)
		ck_assert_int_eq(gpo_optim_set(opt, t, "lr", group_lr[t]), 0);
	return opt;
}

/*
 * The true gradients of step @t (1-based): uniform, every 7th 30 times
 * larger, the whole step at 0.5, 1 or 2 so that clip_norm=50 clips some
 * steps and not others; written times @scale in half, which the loss
 * scales keep finite (the largest, 0.47 * 131072, is below f16's 65504).
 */
static void make_grad(uint16_t *h, uint64_t n, uint64_t *s, int t,
		      double scale, enum gpo_dtype dt)
{
	static const double step_mul[3] = { 0.5, 1.0, 2.0 };
	double f = step_mul[t % 3] / 128.0;
	uint64_t i;

	for (i = 0; i < n; i++) {
		double x = tu_rand(s, -1.0, 1.0) * f;

		if (i % 7 == 0)
			x *= 30.0;
		h[i] = to_half((float)(x * scale), dt);
	}
	/* an inf or NaN in the small tensor, then in the large one */
	if (t == BAD_STEP1)
		h[sizes[0] + 40] = dt == GPO_F16 ? 0x7e00 : 0xff80;
	if (t == BAD_STEP2)
		h[123457] = dt == GPO_F16 ? 0xfc00 : 0x7fc1;
}

/* float64 model of the step: the optimizer's state in double */
struct model {
	double *p, *m, *v;
	double scale;
	uint64_t good, t;
};

/* GradScaler's rule after a step (found_inf: it was skipped) */
static void ls_update(struct model *md, const struct mode *m, int found_inf)
{
	if (!m->dynamic)
		return;
	if (found_inf) {
		md->scale *= 0.5;
		md->good = 0;
	} else if (md->good + 1 >= GROWTH) {
		md->scale *= 2;
		md->good = 0;
	} else {
		md->good++;
	}
}

/*
 * One step of the model on gradients @h (as written); returns the norm
 * (unscaled) or -1 for a skipped step
 */
static double model_step(struct model *md, const struct mode *m,
			 const uint16_t *h)
{
	uint64_t n = total_numel(), i;
	const double b1 = 0.9, b2 = 0.999, wd = 0.1;
	double sum = 0, inv, norm, mul, bc1, bc2;
	int bad = 0;

	for (i = 0; i < n; i++) {
		double g = from_half(h[i], m->dt);

		if (!isfinite(g))
			bad = 1;
		sum += g * g;
	}
	if (bad) {
		ls_update(md, m, 1);
		return -1;
	}
	inv = 1.0 / m->grad_scale / md->scale;
	norm = sqrt(sum) * inv;
	mul = inv * fmin(1.0, CLIP / (norm + 1e-6));
	md->t++;
	bc1 = 1 - pow(b1, (double)md->t);
	bc2 = 1 - pow(b2, (double)md->t);
	for (i = 0; i < n; i++) {
		double g = from_half(h[i], m->dt) * mul;
		double lr = group_lr[i < sizes[0] ? 0 : 1];

		if (m->kind == GPO_ADAMW) {
			md->p[i] *= 1 - lr * wd;
			md->m[i] = b1 * md->m[i] + (1 - b1) * g;
			md->v[i] = b2 * md->v[i] + (1 - b2) * g * g;
			md->p[i] -= lr / bc1 * md->m[i] /
				    (sqrt(md->v[i]) / sqrt(bc2) + 1e-8);
		} else {
			g += 0.01 * md->p[i];
			md->m[i] = md->t == 1 ? g : 0.9 * md->m[i] + g;
			md->p[i] -= lr * md->m[i];
		}
	}
	ls_update(md, m, 0);
	return norm;
}

static void read_one(struct gpo_optim *opt, const char *name,
		     struct run_out *o)
{
	uint64_t n = total_numel();
	int dt = gpo_optim_dtype(opt, name), i = o->n++;

	ck_assert_int_ge(dt, 0);
	ck_assert_int_lt(i, MAX_BUFS);
	snprintf(o->name[i], sizeof(o->name[i]), "%s", name);
	/* a buffer of an earlier read is reused (no page faults per step) */
	if (!o->buf[i]) {
		o->bytes[i] = n * gpo_dtype_size((enum gpo_dtype)dt);
		o->buf[i] = malloc(o->bytes[i]);
		ck_assert_ptr_nonnull(o->buf[i]);
	}
	ck_assert_uint_eq(o->bytes[i], n * gpo_dtype_size((enum gpo_dtype)dt));
	memset(o->buf[i], 0xa5, o->bytes[i]);	/* poisoned */
	ck_assert_msg(!gpo_optim_read(opt, name, NULL, o->buf[i], o->bytes[i]),
		      "read %s: %s", name, gpo_errmsg());
}

/* param, master (if any) and every slot */
static void read_all(struct gpo_optim *opt, int master, struct run_out *o)
{
	int i, n = gpo_optim_slot_count(opt);

	o->n = 0;
	read_one(opt, "param", o);
	if (master)
		read_one(opt, "master", o);
	for (i = 0; i < n; i++)
		read_one(opt, gpo_optim_slot_name(opt, i), o);
}

static int same_bytes(const struct run_out *a, const struct run_out *b)
{
	int i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++)
		if (a->bytes[i] != b->bytes[i] ||
		    memcmp(a->buf[i], b->buf[i], a->bytes[i]))
			return 0;
	return 1;
}

/* the master (or SR param) and the state against the model, step @t */
static void check_model(const char *what, const struct mode *m,
			const struct model *md, const struct run_out *o,
			const struct run_out *prev, int t)
{
	uint64_t n = total_numel(), i;
	const uint16_t *ph = o->buf[0];
	const float *mf = m->master ? o->buf[1] : NULL;
	const float *st = o->buf[m->master ? 2 : 1];
	const uint16_t *pp = prev->buf[0];
	double worst = 0, worst_s = 0;

	/* the first slot: exp_avg or momentum_buffer, as the model's m */
	ck_assert_str_eq(o->name[m->master ? 2 : 1],
			 m->kind == GPO_SGD ? "momentum_buffer" : "exp_avg");
	for (i = 0; i < n; i++) {
		double e;

		if (m->master) {
			e = fabs(mf[i] - md->p[i]) / fmax(fabs(md->p[i]), 1e-3);
			worst = fmax(worst, e);
			/* (Check records every assertion: not per element) */
			if (ph[i] != to_half(mf[i], m->dt))
				ck_abort_msg("%s step %d: param %llu is 0x%04x, master %.9g rounds to 0x%04x",
					     what, t, (unsigned long long)i,
					     ph[i], mf[i],
					     to_half(mf[i], m->dt));
		} else {
			/*
			 * stochastic rounding: one of the two neighbours
			 * of the f32 update, which is within f32 rounding
			 * of its operands (|p| and the lr's step) of
			 * float64's
			 */
			e = fabs(from_half(ph[i], m->dt) - md->p[i]);
			if (e > half_ulp(md->p[i], m->dt) * 1.001 +
				ldexp(fabs(from_half(pp[i], m->dt)) + 0.05,
				      -22))
				ck_abort_msg("%s step %d: param %llu is %.9g, float64 %.9g",
					     what, t, (unsigned long long)i,
					     from_half(ph[i], m->dt),
					     md->p[i]);
		}
		/* f32 sums of gradients of about 1e-2 cancel to less */
		e = fabs(st[i] - md->m[i]) / fmax(fabs(md->m[i]), 1e-2);
		worst_s = fmax(worst_s, e);
	}
	ck_assert_msg(worst < 1e-4, "%s step %d: master %.3g from float64",
		      what, t, worst);
	ck_assert_msg(worst_s < 1e-4, "%s step %d: %s %.3g from float64",
		      what, t, o->name[m->master ? 2 : 1], worst_s);
}

/*
 * Run @m on @dev, checking each step against the float64 model; @o gets
 * the end state and each step's norm, scale and skip
 */
static void run_mode(struct gpo_device *dev, const struct mode *m,
		     uint64_t seed, struct run_out *o)
{
	struct gpo_optim *opt = make_opt(dev, m);
	uint64_t n = total_numel(), s = seed, i;
	uint16_t *h = malloc(n * 2);
	struct model md = { 0 };
	struct run_out before = { 0 }, after = { 0 }, tmp;
	double norms[STEPS], scales[STEPS];
	int skips[STEPS];
	char what[128];
	int t;

	snprintf(what, sizeof(what), "%s on %s", m->name, tu_device_id(dev));
	md.p = malloc(n * 8);
	md.m = calloc(n, 8);
	md.v = calloc(n, 8);
	ck_assert(h && md.p && md.m && md.v);
	md.scale = m->dynamic ? 65536.0 : m->fixed_scale;
	/* parameters in [-1, 1), exactly representable in the half type */
	for (i = 0; i < n; i++) {
		h[i] = to_half((float)tu_rand(&s, -1.0, 1.0), m->dt);
		md.p[i] = from_half(h[i], m->dt);
	}
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, h, n * 2), 0);
	read_all(opt, m->master, &before);
	for (t = 1; t <= STEPS; t++) {
		struct gpo_step_info info;
		double want, scale;
		uint64_t good;

		make_grad(h, n, &s, t, md.scale * m->grad_scale, m->dt);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, h, n * 2), 0);
		memset(&info, 0x5a, sizeof(info));
		ck_assert_msg(!gpo_optim_step(opt, &info), "%s step %d: %s",
			      what, t, gpo_errmsg());
		read_all(opt, m->master, &after);
		want = model_step(&md, m, h);
		norms[t - 1] = info.grad_norm;
		scales[t - 1] = info.loss_scale;
		skips[t - 1] = info.skipped;
		ck_assert_int_eq(info.skipped, want < 0);
		ck_assert_uint_eq(info.step, md.t);
		ck_assert_uint_eq(gpo_optim_steps_done(opt), md.t);
		ck_assert_int_eq(gpo_optim_loss_scale(opt, &scale, &good), 0);
		ck_assert_msg(scale == md.scale && info.loss_scale == md.scale,
			      "%s step %d: loss scale %g (info %g), model %g",
			      what, t, scale, info.loss_scale, md.scale);
		if (m->dynamic)
			ck_assert_uint_eq(good, md.good);
		if (want < 0) {
			/* skipped: nothing moved */
			ck_assert_msg(same_bytes(&before, &after),
				      "%s step %d: skipped but changed", what,
				      t);
		} else {
			ck_assert_msg(!same_bytes(&before, &after),
				      "%s step %d: nothing changed", what, t);
			ck_assert_msg(fabs(info.grad_norm - want) <= 1e-5 * want,
				      "%s step %d: norm %.9g, float64 %.9g",
				      what, t, info.grad_norm, want);
			check_model(what, m, &md, &after, &before, t);
		}
		/* SR: the model goes on from the device's rounded params */
		if (!m->master)
			for (i = 0; i < n; i++)
				md.p[i] = from_half(
					((const uint16_t *)after.buf[0])[i],
					m->dt);
		/* this step's end is the next one's start */
		tmp = before;
		before = after;
		after = tmp;
	}
	run_out_free(&after);
	/* the end state, with the steps' norms, scales and skips */
	*o = before;
	memcpy(o->norm, norms, sizeof(norms));
	memcpy(o->scale, scales, sizeof(scales));
	memcpy(o->skipped, skips, sizeof(skips));
	ck_assert_uint_eq(gpo_optim_steps_skipped(opt), 2);
	gpo_optim_free(opt);
	free(h);
	free(md.p);
	free(md.m);
	free(md.v);
}

static void check_mode(const struct mode *m)
{
	struct gpo_device *devs[MAX_DEVS], *cpu;
	struct run_out ref = { 0 }, got = { 0 };
	uint64_t seed = tu_rng(m->name);
	int nd, d, i, j, clipped = 0, compared = 0;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "cpu:0: %s",
		      gpo_errmsg());
	run_mode(cpu, m, seed, &ref);
	for (i = 0; i < STEPS; i++)
		clipped += !ref.skipped[i] && ref.norm[i] > CLIP;
	/* the data clip some steps and not others */
	ck_assert_msg(clipped > 0 && clipped < STEPS - 2,
		      "%s: %d of %d steps clipped", m->name, clipped, STEPS);
	nd = tu_devices(devs, MAX_DEVS);
	for (d = 0; d < nd; d++) {
		if (devs[d] == cpu)
			continue;
		run_mode(devs[d], m, seed, &got);
		for (i = 0; i < STEPS; i++) {
			ck_assert_msg(!memcmp(&got.norm[i], &ref.norm[i],
					      sizeof(double)) ||
				      (isnan(got.norm[i]) && isnan(ref.norm[i])),
				      "%s: step %d norm %.9g on %s, %.9g on cpu:0",
				      m->name, i + 1, got.norm[i],
				      tu_device_id(devs[d]), ref.norm[i]);
			ck_assert(got.scale[i] == ref.scale[i]);
		}
		ck_assert_int_eq(got.n, ref.n);
		for (j = 0; j < ref.n; j++) {
			const unsigned char *r = ref.buf[j], *g = got.buf[j];
			size_t k;

			ck_assert_str_eq(ref.name[j], got.name[j]);
			if (!memcmp(r, g, ref.bytes[j]))
				continue;
			for (k = 0; r[k] == g[k]; k++)
				;
			ck_abort_msg("%s: %s on %s differs from cpu:0 at byte %zu (0x%02x vs 0x%02x)",
				     m->name, ref.name[j],
				     tu_device_id(devs[d]), k, r[k], g[k]);
		}
		run_out_free(&got);
		compared++;
	}
	fprintf(stderr, "%s: %d steps clipped, %d devices bit-identical to cpu:0\n",
		m->name, clipped, compared);
	run_out_free(&ref);
}

#define ADAMW_DYN	"weight_decay=0.1 clip_norm=50 loss_scale=dynamic growth_interval=6"
#define SGD_DYN		"momentum=0.9 weight_decay=0.01 clip_norm=50 loss_scale=dynamic growth_interval=6"
#define ADAMW_FIXED	"weight_decay=0.1 clip_norm=50 loss_scale=1024 grad_scale=2"

static const struct mode modes[] = {
	{ "adamw_f16_master", GPO_ADAMW, ADAMW_DYN, GPO_F16, 1, 1, 0, 1 },
	{ "adamw_bf16_master", GPO_ADAMW, ADAMW_DYN, GPO_BF16, 1, 1, 0, 1 },
	{ "adamw_bf16_sr", GPO_ADAMW, ADAMW_DYN, GPO_BF16, 0, 1, 0, 1 },
	{ "sgd_f16_master", GPO_SGD, SGD_DYN, GPO_F16, 1, 1, 0, 1 },
	{ "sgd_bf16_master", GPO_SGD, SGD_DYN, GPO_BF16, 1, 1, 0, 1 },
	{ "sgd_bf16_sr", GPO_SGD, SGD_DYN, GPO_BF16, 0, 1, 0, 1 },
	{ "adamw_f16_master_fixed", GPO_ADAMW, ADAMW_FIXED, GPO_F16, 1, 0,
	  1024, 2 },
	{ "adamw_bf16_sr_fixed", GPO_ADAMW, ADAMW_FIXED, GPO_BF16, 0, 0,
	  1024, 2 },
};

START_TEST(test_half_norm)
{
	check_mode(&modes[_i]);
}
END_TEST

/*
 * check_finite alone (no scale, no clip): the planted step is skipped,
 * the others are plain steps, on every device
 */
START_TEST(test_check_finite_only)
{
	struct gpo_device *devs[MAX_DEVS];
	int nd = tu_devices(devs, MAX_DEVS), d, t;
	const uint64_t n = 4099;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *opt;
		uint16_t *g = malloc(n * 2), *p = malloc(n * 2);
		uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
		uint64_t s = tu_rng("check_finite"), i;
		struct gpo_step_info info;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
		ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 0, 3),
				 0);
		ck_assert_int_eq(gpo_optim_configure(opt, -1,
						     "lr=0.01 check_finite=1"), 0);
		for (i = 0; i < n; i++)
			p[i] = to_half((float)tu_rand(&s, -1, 1), GPO_BF16);
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, n * 2), 0);
		for (t = 1; t <= 4; t++) {
			for (i = 0; i < n; i++)
				g[i] = to_half((float)tu_rand(&s, -1, 1),
					       GPO_BF16);
			if (t == 3)
				g[n - 1] = 0x7f80;	/* inf, the tail */
			ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, n * 2), 0);
			memset(a, 0x5a, n * 2);
			memset(b, 0xa5, n * 2);
			ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, a, n * 2), 0);
			ck_assert_int_eq(gpo_optim_step(opt, &info), 0);
			ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, b, n * 2), 0);
			ck_assert_int_eq(info.skipped, t == 3);
			ck_assert_int_eq(!memcmp(a, b, n * 2), t == 3);
		}
		ck_assert_uint_eq(gpo_optim_steps_done(opt), 3);
		ck_assert_uint_eq(gpo_optim_steps_skipped(opt), 1);
		gpo_optim_free(opt);
		free(g);
		free(p);
		free(a);
		free(b);
	}
}
END_TEST

/* the last error names @sub */
static void check_msg(const char *sub)
{
	const char *msg = gpo_errmsg();

	ck_assert_msg(msg && strstr(msg, sub), "error '%s' does not say '%s'",
		      msg ? msg : "(none)", sub);
}

/* bad settings with half parameters: refused, nothing changed */
START_TEST(test_bad_input)
{
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	const uint64_t n = 61;
	uint16_t h[61], g[61], got[61];
	float mf[61], mf2[61];
	uint64_t s = tu_rng("bad"), i;
	double scale;

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_F16, 1, 0), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, -1,
		"clip_norm=1 loss_scale=dynamic"), 0);
	for (i = 0; i < n; i++) {
		h[i] = to_half((float)tu_rand(&s, -1, 1), GPO_F16);
		g[i] = to_half((float)tu_rand(&s, -1, 1), GPO_F16);
	}
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, h, sizeof(h)), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, sizeof(g)), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
	memset(mf, 0x5a, sizeof(mf));
	ck_assert_int_eq(gpo_optim_read(opt, "master", NULL, mf, sizeof(mf)), 0);

	ck_assert_int_eq(gpo_optim_set(opt, -1, "clip_norm", -1), -EINVAL);
	check_msg("clip_norm");
	ck_assert_int_eq(gpo_optim_set(opt, -1, "grad_scale", 0), -EINVAL);
	check_msg("grad_scale");
	ck_assert_int_eq(gpo_optim_configure(opt, -1, "loss_scale=-2"),
			 -EINVAL);
	check_msg("loss_scale");
	ck_assert_int_eq(gpo_optim_configure(opt, -1, "growth_interval=0"),
			 -EINVAL);
	check_msg("growth_interval");
	/* the grad dtype cannot change under the norm pass either */
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_BF16, 1, 0),
			 -EBUSY);
	/* nothing changed: the settings, the scale, the state */
	ck_assert_int_eq(gpo_optim_loss_scale(opt, &scale, NULL), 0);
	ck_assert(scale == 65536.0);
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 1);
	memset(mf2, 0xa5, sizeof(mf2));
	ck_assert_int_eq(gpo_optim_read(opt, "master", NULL, mf2, sizeof(mf2)), 0);
	ck_assert(!memcmp(mf, mf2, sizeof(mf)));
	/* and the next step is the clip and scale set before */
	ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
	memset(got, 0x5a, sizeof(got));
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got, sizeof(got)), 0);
	ck_assert(memcmp(got, h, sizeof(h)));
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 2);
	gpo_optim_free(opt);

	/* f16 parameters with f32 gradients: no kernel reads that pair */
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_F16, 1, 0), 0);
	ck_assert_int_eq(gpo_optim_set_dtype(opt, "grad", GPO_F32), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, -1, "clip_norm=1"), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), -ENOSYS);
	check_msg("gradients must be in the parameters' dtype");
	ck_assert_int_eq(gpo_optim_steps_done(opt), 0);
	ck_assert_int_eq(gpo_optim_dtype(opt, "grad"), GPO_F32);
	gpo_optim_free(opt);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_half_norm");
	TCase *tc = tcase_create("half_norm");

	tcase_set_timeout(tc, 900);
	tcase_add_loop_test(tc, test_half_norm, 0,
			    (int)(sizeof(modes) / sizeof(modes[0])));
	tcase_add_test(tc, test_check_finite_only);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
