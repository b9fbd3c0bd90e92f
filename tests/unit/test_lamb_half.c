// SPDX-License-Identifier: MIT
/*
 * test_lamb_half.c - LAMB with half-precision parameters
 * (gpo_optim_set_param_dtype()): f16 and bf16 with an f32 master copy,
 * bf16 with stochastic rounding.
 *
 * Every device gives cpu:0's bytes (half params, master, exp_avg and
 * exp_avg_sq) for 20 steps of fresh random half gradients over tensors of
 * odd sizes in 2 groups: LAMB's norms are summed in one order everywhere
 * (abi/lamb.h). On cpu:0 each step is checked against a float64 LAMB step
 * from the state before it: the state and the master within f32
 * rounding, the half parameters exactly the master rounded to nearest
 * even (or, with SR, one of the two bf16 values around the exact result).
 * Bad input (u8 or bf16 state) is refused and changes nothing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/dtype_i.h"

#define STEPS		20
#define NGROUPS		2
#define NTENSORS	4
#define MAX_DEVS	16
#define SR_SEED		0x1a3bf00dull
#define CONF		"weight_decay=0.01 betas=0.9,0.999 eps=1e-6"

/* the largest is 25 blocks of 4096 (under GPUOPT_TEST_QUICK, 2) */
static uint64_t sizes[NTENSORS] = { 1, 77, 4099, 100003 };
#define QUICK_SIZE	5003
static const double group_lr[NGROUPS] = { 0.01, 0.003 };
static const double beta1 = 0.9, beta2 = 0.999, eps = 1e-6, wd = 0.01;

static const struct mode {
	const char *name;
	enum gpo_dtype dt;
	int master;
} modes[] = {
	{ "f16_master", GPO_F16, 1 },
	{ "bf16_master", GPO_BF16, 1 },
	{ "bf16_sr", GPO_BF16, 0 },
};

static void setup_sizes(void)
{
	if (tu_quick())
		sizes[NTENSORS - 1] = QUICK_SIZE;
}

static uint16_t to_half(float x, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f32_to_f16(x) : gpo__f32_to_bf16(x);
}

static float from_half(uint16_t h, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f16_to_f32(h) : gpo__bf16_to_f32(h);
}

static const char *tname(int t)
{
	static const char *const names[NTENSORS] = { "t0", "t1", "t2", "t3" };

	return names[t];
}

static struct gpo_optim *make_opt(struct gpo_device *dev,
				  const struct mode *m)
{
	struct gpo_optim *opt;
	int g, t, ret;

	ck_assert_int_eq(gpo_optim_new(dev, GPO_LAMB, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	for (t = 0; t < NTENSORS; t++)
		ck_assert_int_ge(gpo_optim_add_tensor(opt, tname(t), 1,
						      &sizes[t],
						      t % NGROUPS), 0);
	ck_assert_msg(!gpo_optim_configure(opt, -1, CONF), "%s",
		      gpo_errmsg());
	ret = gpo_optim_set_param_dtype(opt, m->dt, m->master, SR_SEED);
	ck_assert_msg(!ret, "set_param_dtype: %s", gpo_errmsg());
	for (g = 0; g < NGROUPS; g++)
		ck_assert_int_eq(gpo_optim_set(opt, g, "lr", group_lr[g]), 0);
	return opt;
}

/* @n random half values (mixed scales) from *@s */
static void fill_half(uint16_t *h, uint64_t n, uint64_t *s, enum gpo_dtype dt)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		float x = (float)tu_rand(s, -1.0, 1.0);

		if (i % 7 == 0)
			x *= 30.0f;
		h[i] = to_half(x, dt);
	}
}

/* fresh gradients for every tensor, then one step */
static void grads_and_step(struct gpo_optim *opt, const struct mode *m,
			   uint64_t *s, uint16_t **gh)
{
	int t;

	for (t = 0; t < NTENSORS; t++) {
		fill_half(gh[t], sizes[t], s, m->dt);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", tname(t), gh[t],
						 sizes[t] * 2), 0);
	}
	ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
}

/* tensor @t of @slot into @dst (poisoned first) */
static void read_tensor(struct gpo_optim *opt, const char *slot, int t,
			void *dst, size_t bytes)
{
	memset(dst, 0xa5, bytes);
	ck_assert_msg(!gpo_optim_read(opt, slot, tname(t), dst, bytes),
		      "read %s/%s: %s", slot, tname(t), gpo_errmsg());
}

/* ---- every device gives cpu:0's bytes ---------------------------------- */

#define NOUT	4	/* param, master, exp_avg, exp_avg_sq */

struct run_out {
	void *buf[NOUT];
	size_t bytes[NOUT];
};

static const char *const out_names[NOUT] = {
	"param", "master", "exp_avg", "exp_avg_sq"
};

static void run_steps(struct gpo_device *dev, const struct mode *m,
		      uint64_t seed, struct run_out *o)
{
	struct gpo_optim *opt = make_opt(dev, m);
	uint64_t s = seed, n = gpo_optim_numel(opt);
	uint16_t *gh[NTENSORS];
	int t, i;

	for (t = 0; t < NTENSORS; t++) {
		gh[t] = malloc(sizes[t] * 2);
		ck_assert_ptr_nonnull(gh[t]);
		fill_half(gh[t], sizes[t], &s, m->dt);
		ck_assert_msg(!gpo_optim_write(opt, "param", tname(t), gh[t],
					       sizes[t] * 2), "%s",
			      gpo_errmsg());
	}
	for (i = 0; i < STEPS; i++)
		grads_and_step(opt, m, &s, gh);
	memset(o, 0, sizeof(*o));
	for (i = 0; i < NOUT; i++) {
		if (i == 1 && !m->master)
			continue;
		o->bytes[i] = n * (i == 0 ? 2 : 4);
		o->buf[i] = malloc(o->bytes[i]);
		ck_assert_ptr_nonnull(o->buf[i]);
		memset(o->buf[i], 0xa5, o->bytes[i]);
		ck_assert_msg(!gpo_optim_read(opt, out_names[i], NULL,
					      o->buf[i], o->bytes[i]),
			      "read %s: %s", out_names[i], gpo_errmsg());
	}
	for (t = 0; t < NTENSORS; t++)
		free(gh[t]);
	gpo_optim_free(opt);
}

static void run_out_free(struct run_out *o)
{
	int i;

	for (i = 0; i < NOUT; i++)
		free(o->buf[i]);
}

static void check_bitwise(const struct mode *m)
{
	struct gpo_device *devs[MAX_DEVS], *cpu;
	struct run_out ref, got;
	char what[64];
	uint64_t seed;
	int n, d, i, compared = 0;

	snprintf(what, sizeof(what), "lamb_%s", m->name);
	seed = tu_rng(what);
	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
	run_steps(cpu, m, seed, &ref);
	n = tu_devices(devs, MAX_DEVS);
	for (d = 0; d < n; d++) {
		if (devs[d] == cpu)
			continue;
		run_steps(devs[d], m, seed, &got);
		for (i = 0; i < NOUT; i++) {
			const unsigned char *r = ref.buf[i], *g = got.buf[i];
			size_t j;

			if (!r || !memcmp(r, g, ref.bytes[i]))
				continue;
			for (j = 0; r[j] == g[j]; j++)
				;
			ck_abort_msg("%s: %s on %s differs from cpu:0 at byte %zu (0x%02x vs 0x%02x)",
				     what, out_names[i],
				     tu_device_id(devs[d]), j, r[j], g[j]);
		}
		run_out_free(&got);
		compared++;
	}
	fprintf(stderr, "%s: %d devices bit-identical to cpu:0\n", what,
		compared);
	run_out_free(&ref);
}

START_TEST(test_lamb_half_bitwise)
{
	setup_sizes();
	check_bitwise(&modes[_i]);
}
END_TEST

/* ---- cpu:0 against float64 ---------------------------------------------- */

/* one tensor's buffers: before and after a step */
struct tview {
	uint16_t *ph;
	float *p, *m, *v;	/* p: the master, or the widened bf16 */
};

static void tview_read(struct gpo_optim *opt, const struct mode *m, int t,
		       struct tview *x)
{
	uint64_t n = sizes[t], i;

	read_tensor(opt, "param", t, x->ph, n * 2);
	if (m->master) {
		read_tensor(opt, "master", t, x->p, n * 4);
	} else {
		for (i = 0; i < n; i++)
			x->p[i] = from_half(x->ph[i], m->dt);
	}
	read_tensor(opt, "exp_avg", t, x->m, n * 4);
	read_tensor(opt, "exp_avg_sq", t, x->v, n * 4);
}

static void tview_alloc(struct tview *x, uint64_t n)
{
	x->ph = malloc(n * 2);
	x->p = malloc(n * 4);
	x->m = malloc(n * 4);
	x->v = malloc(n * 4);
	ck_assert(x->ph && x->p && x->m && x->v);
}

static void tview_free(struct tview *x)
{
	free(x->ph);
	free(x->p);
	free(x->m);
	free(x->v);
}

/*
 * ck_assert_msg() without check's location message for every pass: the
 * loops below test millions of elements
 */
#define CHECK(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

static int close_to(double got, double want, double tol)
{
	return fabs(got - want) <= tol;
}

/*
 * Tensor @t's step @step checked: from @a (before) and the gradients
 * @gh, the float64 LAMB step, against @b (after)
 */
static void check_tensor(const struct mode *m, int t, int step,
			 const struct tview *a, const struct tview *b,
			 const uint16_t *gh)
{
	uint64_t n = sizes[t], i;
	double bc1 = 1 - pow(beta1, step), bc2 = 1 - pow(beta2, step);
	double lr = group_lr[t % NGROUPS], pn = 0, rn = 0, trust;
	double *r = malloc(n * 8), *m64 = malloc(n * 8), *v64 = malloc(n * 8);

	ck_assert(r && m64 && v64);
	for (i = 0; i < n; i++) {
		double g = from_half(gh[i], m->dt), p = a->p[i];

		m64[i] = beta1 * a->m[i] + (1 - beta1) * g;
		v64[i] = beta2 * a->v[i] + (1 - beta2) * g * g;
		r[i] = (m64[i] / bc1) / (sqrt(v64[i] / bc2) + eps) + wd * p;
		pn += p * p;
		rn += r[i] * r[i];
	}
	pn = sqrt(pn);
	rn = sqrt(rn);
	trust = pn > 0 && rn > 0 ? pn / rn : 1;
	for (i = 0; i < n; i++) {
		double p = a->p[i], want = p - lr * trust * r[i];
		double g = from_half(gh[i], m->dt);
		/*
		 * f32 arithmetic: m within the rounding of its terms (it may
		 * cancel), r within that carried through, trust within the
		 * rounding of the norms' sums
		 */
		double mtol = 1e-6 * (beta1 * fabs(a->m[i]) +
				      (1 - beta1) * fabs(g)) + 1e-30;
		double rtol = mtol / bc1 / (sqrt(v64[i] / bc2) + eps) +
			      1e-5 * fabs(r[i]);
		double tol = 1e-6 * fabs(p) + lr * trust * rtol + 1e-30;
		double got = m->master ? b->p[i] : from_half(b->ph[i], m->dt);

		CHECK(close_to(b->m[i], m64[i], mtol),
			      "%s %s step %d: exp_avg[%llu] %.9g, want %.9g",
			      m->name, tname(t), step, (unsigned long long)i,
			      b->m[i], m64[i]);
		CHECK(close_to(b->v[i], v64[i], 1e-6 * v64[i] + 1e-30),
			      "%s %s step %d: exp_avg_sq[%llu] %.9g, want %.9g",
			      m->name, tname(t), step, (unsigned long long)i,
			      b->v[i], v64[i]);
		if (m->master) {
			CHECK(close_to(got, want, tol),
				      "%s %s step %d: master[%llu] %.9g, want %.9g",
				      m->name, tname(t), step,
				      (unsigned long long)i, got, want);
			/* the half copy: the master rounded to nearest even */
			CHECK(b->ph[i] == to_half(b->p[i], m->dt),
				      "%s %s step %d: param[%llu] 0x%04x is not the master %.9g rounded",
				      m->name, tname(t), step,
				      (unsigned long long)i, b->ph[i],
				      b->p[i]);
		} else {
			/*
			 * SR: one of the two bf16 values around the result,
			 * so within one bf16 step (8 significant bits) of it
			 */
			double span = ldexp(1.0, ilogb(want) - 7) + tol;

			CHECK(fabs(got - want) <= span,
				      "%s %s step %d: param[%llu] %.9g, want %.9g (one bf16 step)",
				      m->name, tname(t), step,
				      (unsigned long long)i, got, want);
		}
	}
	free(r);
	free(m64);
	free(v64);
}

START_TEST(test_lamb_half_reference)
{
	const struct mode *m = &modes[_i];
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	struct tview a[NTENSORS], b[NTENSORS];
	uint16_t *gh[NTENSORS];
	char what[64];
	uint64_t s;
	int t, step;

	setup_sizes();
	snprintf(what, sizeof(what), "lamb_ref_%s", m->name);
	s = tu_rng(what);
	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
	opt = make_opt(cpu, m);
	for (t = 0; t < NTENSORS; t++) {
		tview_alloc(&a[t], sizes[t]);
		tview_alloc(&b[t], sizes[t]);
		gh[t] = malloc(sizes[t] * 2);
		ck_assert_ptr_nonnull(gh[t]);
		fill_half(gh[t], sizes[t], &s, m->dt);
		ck_assert_int_eq(gpo_optim_write(opt, "param", tname(t), gh[t],
						 sizes[t] * 2), 0);
	}
	for (step = 1; step <= STEPS; step++) {
		for (t = 0; t < NTENSORS; t++)
			tview_read(opt, m, t, &a[t]);
		grads_and_step(opt, m, &s, gh);
		for (t = 0; t < NTENSORS; t++) {
			tview_read(opt, m, t, &b[t]);
			check_tensor(m, t, step, &a[t], &b[t], gh[t]);
		}
	}
	for (t = 0; t < NTENSORS; t++) {
		tview_free(&a[t]);
		tview_free(&b[t]);
		free(gh[t]);
	}
	gpo_optim_free(opt);
}
END_TEST

/* ---- bad input ----------------------------------------------------------- */

/* LAMB keeps f32 state: u8 and bf16 are refused, nothing changes */
START_TEST(test_lamb_half_bad_state)
{
	static const enum gpo_dtype bad[] = { GPO_U8, GPO_BF16 };
	const struct mode *m = &modes[_i];
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	uint16_t h[77], back[77];
	uint64_t s = tu_rng("lamb_half_bad_state");
	size_t k;

	setup_sizes();
	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu:0", &cpu), 0);
	opt = make_opt(cpu, m);
	fill_half(h, 77, &s, m->dt);
	ck_assert_int_eq(gpo_optim_write(opt, "param", "t1", h, sizeof(h)), 0);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(gpo_optim_set_state_dtype(opt, bad[k]),
				 -EINVAL);
		tu_check_errmsg("lamb");
		ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg"), GPO_F32);
		ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg_sq"), GPO_F32);
		ck_assert_int_eq(gpo_optim_dtype(opt, "param"), m->dt);
		memset(back, 0x5a, sizeof(back));
		ck_assert_int_eq(gpo_optim_read(opt, "param", "t1", back,
						sizeof(back)), 0);
		ck_assert_mem_eq(back, h, sizeof(h));
	}
	/* and the optimizer still steps in its mode */
	{
		uint16_t *gh[NTENSORS];
		int t;

		for (t = 0; t < NTENSORS; t++)
			gh[t] = malloc(sizes[t] * 2);
		grads_and_step(opt, m, &s, gh);
		for (t = 0; t < NTENSORS; t++)
			free(gh[t]);
	}
	ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg"), GPO_F32);
	gpo_optim_free(opt);

	/* f16 without a master copy: refused as for every family */
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_LAMB, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &sizes[1], 0), 0);
	ck_assert_int_eq(gpo_optim_set_param_dtype(opt, GPO_F16, 0, 0),
			 -EINVAL);
	tu_check_errmsg("master_weights=1");
	ck_assert_int_eq(gpo_optim_dtype(opt, "param"), GPO_F32);
	gpo_optim_free(opt);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lamb_half");
	TCase *tc = tcase_create("lamb_half");
	int nm = (int)(sizeof(modes) / sizeof(modes[0]));

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_lamb_half_bitwise, 0, nm);
	tcase_add_loop_test(tc, test_lamb_half_reference, 0, nm);
	tcase_add_loop_test(tc, test_lamb_half_bad_state, 0, nm);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
