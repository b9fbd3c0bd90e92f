// SPDX-License-Identifier: MIT
/*
 * test_optim_precision.c - the optimizer's steps give the same bytes on
 * every device: each family and mode, 20 steps of fresh random gradients
 * over tensors of odd sizes in several groups with different lrs, run on
 * cpu:0 (the reference) and on every test device, then parameters and
 * every state slot compared with memcmp.
 *
 * No clipping or loss scale here: the global norm is a reduction whose
 * order differs by device. The update kernels' / and sqrt are correctly
 * rounded on every device (precision.glsl, precision.cl) and no a * b + c
 * is fused, so the bits can agree.
 *
 * LAMB is not here: with f32 parameters its norms are sums in each
 * device's order (test_optim_lamb checks it against float64); with half
 * parameters its kernels sum in one order on every backend, and
 * test_lamb_half checks those bytes on every device against cpu:0.
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

#define STEPS		20

static const uint64_t odd_sizes[] = { 1, 3, 7, 61, 1021, 4099, 65537 };
/* groups of 1, 2 and 3 elements: a float4's tail alone in a group */
static const uint64_t tiny_sizes[] = { 1, 2, 3 };
/* the tensors make_opt() adds, one per group in turn */
static const uint64_t *sizes = odd_sizes;
static int ntensors = (int)(sizeof(odd_sizes) / sizeof(odd_sizes[0]));

/* every state slot name (gpo_optim_slot_count() counts allocated ones) */
static const char *const all_slots[] = {
	"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
	"square_avg", "grad_avg", "sum",
};

/* every state slot @opt's kind has in @dt; returns how many */
static int set_state_dtype(struct gpo_optim *opt, enum gpo_dtype dt)
{
	int i, ret, n = 0;

	for (i = 0; i < (int)(sizeof(all_slots) / sizeof(all_slots[0])); i++) {
		ret = gpo_optim_set_dtype(opt, all_slots[i], dt);
		if (ret == -ENOENT)
			continue;
		ck_assert_msg(!ret, "%s: %s", all_slots[i], gpo_errmsg());
		n++;
	}
	return n;
}

/* an optimizer of @kind on @dev: the test's tensors, groups, lrs, dtypes */
static struct gpo_optim *make_opt(struct gpo_device *dev,
				  enum gpo_optim_kind kind, const char *conf,
				  enum gpo_dtype sdt)
{
	struct gpo_optim *opt = ref_grouped_optim(dev, kind, conf, sizes,
						  ntensors);

	if (sdt != GPO_F32)
		ck_assert_int_gt(set_state_dtype(opt, sdt), 0);
	return opt;
}

/* one run's mode: the optimizer, its configuration, state dtype */
struct run_args {
	enum gpo_optim_kind kind;
	const char *conf;
	enum gpo_dtype sdt;
};

static struct gpo_optim *make_mode(struct gpo_device *dev, const void *arg)
{
	const struct run_args *a = arg;

	return make_opt(dev, a->kind, a->conf, a->sdt);
}

/* @kind under @conf: every test device's bytes are cpu:0's */
static void check_bitwise_dt(const char *what, enum gpo_optim_kind kind,
			     const char *conf, enum gpo_dtype sdt)
{
	const struct run_args a = { .kind = kind, .conf = conf, .sdt = sdt };
	const struct ref_mode m = {
		.make = make_mode, .arg = &a, .seed = tu_rng(what),
	};
	struct ref_bufs ref;
	int i;

	/* STEPS steps of fresh gradients from the same inputs everywhere */
	ref_same_as_cpu(what, &m, STEPS, &ref);
	/* the mode is the one asked for: every slot (after param) in @sdt */
	ck_assert(sdt == GPO_F32 || ref.n > 1);
	for (i = 1; i < ref.n; i++)
		ck_assert_msg(ref.dtype[i] == (int)sdt, "%s: %s is %s", what,
			      ref.name[i],
			      gpo_dtype_name((enum gpo_dtype)ref.dtype[i]));
	ref_bufs_free(&ref);
}

static void check_bitwise(const char *what, enum gpo_optim_kind kind,
			  const char *conf)
{
	check_bitwise_dt(what, kind, conf, GPO_F32);
}

START_TEST(test_sgd_bitwise)
{
	check_bitwise("sgd", GPO_SGD, "weight_decay=0.01");
}
END_TEST

START_TEST(test_sgd_momentum_bitwise)
{
	check_bitwise("sgd_momentum", GPO_SGD,
		      "momentum=0.9 dampening=0.1 weight_decay=0.01");
}
END_TEST

START_TEST(test_sgd_nesterov_bitwise)
{
	check_bitwise("sgd_nesterov", GPO_SGD,
		      "momentum=0.8 nesterov=1 maximize=1");
}
END_TEST

START_TEST(test_adam_bitwise)
{
	check_bitwise("adam", GPO_ADAM, "weight_decay=0.05 betas=0.8,0.99");
}
END_TEST

START_TEST(test_adam_amsgrad_bitwise)
{
	check_bitwise("adam_amsgrad", GPO_ADAM, "amsgrad=1 eps=1e-6");
}
END_TEST

START_TEST(test_adamw_bitwise)
{
	check_bitwise("adamw", GPO_ADAMW, "weight_decay=0.1");
}
END_TEST

START_TEST(test_adamw_amsgrad_bitwise)
{
	check_bitwise("adamw_amsgrad", GPO_ADAMW,
		      "weight_decay=0.1 amsgrad=1 betas=0.9,0.8 maximize=1");
}
END_TEST

START_TEST(test_rmsprop_bitwise)
{
	check_bitwise("rmsprop", GPO_RMSPROP, "weight_decay=0.01");
}
END_TEST

START_TEST(test_rmsprop_centered_momentum_bitwise)
{
	check_bitwise("rmsprop_centered", GPO_RMSPROP,
		      "centered=1 momentum=0.9 alpha=0.9");
}
END_TEST

START_TEST(test_adagrad_bitwise)
{
	check_bitwise("adagrad", GPO_ADAGRAD,
		      "lr_decay=0.01 weight_decay=0.01 initial_accumulator_value=0.1");
}
END_TEST

START_TEST(test_lion_bitwise)
{
	check_bitwise("lion", GPO_LION, "weight_decay=0.1 betas=0.9,0.99");
}
END_TEST

/* ---- state_dtype bf16 ---------------------------------------------------- */

START_TEST(test_adam_bf16_state_bitwise)
{
	check_bitwise_dt("adam_bf16", GPO_ADAM, "weight_decay=0.05", GPO_BF16);
}
END_TEST

START_TEST(test_adamw_bf16_state_bitwise)
{
	check_bitwise_dt("adamw_bf16", GPO_ADAMW,
			 "weight_decay=0.1 amsgrad=1 betas=0.9,0.8", GPO_BF16);
}
END_TEST

START_TEST(test_lion_bf16_state_bitwise)
{
	check_bitwise_dt("lion_bf16", GPO_LION, "weight_decay=0.1", GPO_BF16);
}
END_TEST

START_TEST(test_adagrad_bf16_state_bitwise)
{
	check_bitwise_dt("adagrad_bf16", GPO_ADAGRAD,
			 "lr_decay=0.01 weight_decay=0.01 initial_accumulator_value=0.1",
			 GPO_BF16);
}
END_TEST

START_TEST(test_rmsprop_bf16_state_bitwise)
{
	check_bitwise_dt("rmsprop_bf16", GPO_RMSPROP,
			 "centered=1 momentum=0.9 alpha=0.9 weight_decay=0.01",
			 GPO_BF16);
	check_bitwise_dt("rmsprop_bf16_plain", GPO_RMSPROP, "", GPO_BF16);
}
END_TEST

START_TEST(test_tiny_groups_bf16_state_bitwise)
{
	sizes = tiny_sizes;
	ntensors = 3;
	check_bitwise_dt("adamw_bf16_tiny", GPO_ADAMW, "amsgrad=1", GPO_BF16);
	check_bitwise_dt("rmsprop_bf16_tiny", GPO_RMSPROP,
			 "centered=1 momentum=0.5", GPO_BF16);
	check_bitwise_dt("lion_bf16_tiny", GPO_LION, "", GPO_BF16);
	check_bitwise_dt("adagrad_bf16_tiny", GPO_ADAGRAD, "", GPO_BF16);
	check_bitwise_dt("adam_tiny", GPO_ADAM, "", GPO_F32);
}
END_TEST

/*
 * The cpu backend's AdamW with bf16 state is the documented mode: the
 * f32 update from the exactly read state, the new state rounded to
 * nearest even (and the update uses the unrounded values); a host loop
 * of those float operations gives the same bytes.
 */
START_TEST(test_adamw_bf16_state_is_the_mode)
{
	const uint64_t n = 4099;
	/* the host's doubles, rounded as adam.c rounds them */
	const double lr = 0.01, b1d = 0.9, b2d = 0.999, wd = 0.1;
	const float b1 = (float)b1d, b2 = (float)b2d, eps = 1e-8f;
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	uint64_t s = tu_rng("adamw_bf16_mode"), t, i;
	float *p = malloc(n * 4), *g = malloc(n * 4), *got = malloc(n * 4);
	uint16_t *m = calloc(n, 2), *v = calloc(n, 2), *mg = malloc(n * 2);

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, 0, "lr=0.01 weight_decay=0.1"),
			 0);
	ck_assert_int_eq(gpo_optim_set_dtype(opt, "exp_avg", GPO_BF16), 0);
	ck_assert_int_eq(gpo_optim_set_dtype(opt, "exp_avg_sq", GPO_BF16), 0);
	tu_fill(p, n, &s, -1.0, 1.0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, n * 4), 0);
	for (t = 1; t <= 5; t++) {
		double bc1 = 1.0 - pow(b1d, (double)t);
		double bc2 = 1.0 - pow(b2d, (double)t);
		float step_size = (float)(lr / bc1);
		float bc2_sqrt = (float)sqrt(bc2);
		float decay = (float)(1.0 - lr * wd);
		float ob1 = (float)(1.0 - b1d), ob2 = (float)(1.0 - b2d);

		tu_fill(g, n, &s, -1.0, 1.0);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, n * 4),
				 0);
		ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
		for (i = 0; i < n; i++) {
			float gi = g[i] * 1.0f + 0.0f * p[i];
			float mi = gpo__bf16_to_f32(m[i]) * b1 + ob1 * gi;
			float vi = gpo__bf16_to_f32(v[i]) * b2 +
				   ob2 * gi * gi;
			float denom = sqrtf(vi) / bc2_sqrt + eps;

			m[i] = gpo__f32_to_bf16(mi);
			v[i] = gpo__f32_to_bf16(vi);
			p[i] = p[i] * decay - step_size * (mi / denom);
		}
	}
	tu_poison(got, n);
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got, n * 4), 0);
	ck_assert_msg(!memcmp(got, p, n * 4), "param differs at %ld",
		      ref_first_diff(got, p, n, 4));
	ck_assert_int_eq(gpo_optim_read(opt, "exp_avg", NULL, mg, n * 2), 0);
	ck_assert_msg(!memcmp(mg, m, n * 2), "exp_avg differs at %ld",
		      ref_first_diff(mg, m, n, 2));
	ck_assert_int_eq(gpo_optim_read(opt, "exp_avg_sq", NULL, mg, n * 2),
			 0);
	ck_assert_msg(!memcmp(mg, v, n * 2), "exp_avg_sq differs at %ld",
		      ref_first_diff(mg, v, n, 2));
	gpo_optim_free(opt);
	free(p);
	free(g);
	free(got);
	free(m);
	free(v);
	free(mg);
}
END_TEST

/* gpo_optim_set_state_dtype(): the whole state at once, or a clear no */
START_TEST(test_set_state_dtype)
{
	static const char *const slots[] = { "exp_avg", "exp_avg_sq",
					     "max_exp_avg_sq" };
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	const uint64_t n = 61;
	float p[61];
	uint64_t s = tu_rng("set_state_dtype");
	int i;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_set_state_dtype(NULL, GPO_BF16), -EINVAL);
	/* SGD and LAMB: f32 state only; nothing changes */
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_SGD, &opt), 0);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8), -EINVAL);
	tu_check_errmsg("gpo_optim_set_state_dtype(sgd, u8)");
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_BF16), -EINVAL);
	ck_assert_int_eq(gpo_optim_dtype(opt, "momentum_buffer"), GPO_F32);
	gpo_optim_free(opt);
	ck_assert_int_eq(gpo_optim_new(cpu, GPO_LAMB, &opt), 0);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_U8), -EINVAL);
	ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg"), GPO_F32);
	gpo_optim_free(opt);

	ck_assert_int_eq(gpo_optim_new(cpu, GPO_ADAMW, &opt), 0);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_DTYPES), -EINVAL);
	/* u8 state: test_optim_u8 */
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_F16), -EINVAL);
	tu_check_errmsg("gpo_optim_set_state_dtype(adamw, f16)");
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(gpo_optim_dtype(opt, slots[i]), GPO_F32);
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_BF16), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(gpo_optim_dtype(opt, slots[i]), GPO_BF16);
	ck_assert_int_eq(gpo_optim_dtype(opt, "param"), GPO_F32);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	tu_fill(p, n, &s, -1.0, 1.0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, sizeof(p)), 0);
	/* after the first use: -EBUSY, the mode stays */
	ck_assert_int_eq(gpo_optim_set_state_dtype(opt, GPO_F32), -EBUSY);
	tu_check_errmsg("gpo_optim_set_state_dtype after use");
	ck_assert_int_eq(gpo_optim_dtype(opt, "exp_avg"), GPO_BF16);
	ck_assert_uint_eq(gpo_optim_buffer_bytes(opt, "exp_avg_sq"),
			  gpo_optim_buffer_bytes(opt, "param") / 2);
	gpo_optim_free(opt);
}
END_TEST

/*
 * A checkpoint holds every buffer in its dtype and restores on any
 * device: 10 steps on cpu:0, saved; restored on each device, 5 more
 * steps there and on cpu:0 give the same bytes.
 */
static void check_ckpt_across(const char *what, enum gpo_optim_kind kind,
			      const char *conf, enum gpo_dtype sdt)
{
	const struct run_args a = { .kind = kind, .conf = conf, .sdt = sdt };
	const struct ref_mode m = {
		.make = make_mode, .arg = &a, .seed = tu_rng(what),
	};
	struct ref_bufs ref;
	char dir[256], path[300];

	tu_cache_dir_new(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/ck.safetensors", dir);
	ref_ckpt_across(what, &m, path, &ref);
	ref_bufs_free(&ref);
	unlink(path);
	tu_cache_dir_remove(dir);
}

START_TEST(test_ckpt_bf16_state_across_devices)
{
	check_ckpt_across("ckpt_adamw_bf16", GPO_ADAMW,
			  "weight_decay=0.1 amsgrad=1", GPO_BF16);
}
END_TEST

START_TEST(test_ckpt_f32_across_devices)
{
	check_ckpt_across("ckpt_rmsprop", GPO_RMSPROP,
			  "centered=1 momentum=0.9", GPO_F32);
}
END_TEST

/*
 * bf16 state's trajectory stays near f32's: AdamW, 100 steps of lr 1e-3
 * from the same inputs. Each step moves a parameter by about lr times
 * m / sqrt(v); bf16 state perturbs that ratio by at most a few 2^-8
 * relative, so after T steps |p_bf16 - p_f32| <= T * lr * 2^-6 (with
 * room), while the parameters themselves moved by up to T * lr.
 */
START_TEST(test_adamw_bf16_state_tracks_f32)
{
	const int steps = 100;
	struct gpo_device *cpu;
	struct gpo_optim *o32, *o16;
	uint64_t s = tu_rng("bf16_tracks"), s32, s16, numel, i;
	float *a, *b;
	double worst = 0, moved = 0;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	o32 = make_opt(cpu, GPO_ADAMW, "lr=0.001 weight_decay=0.01", GPO_F32);
	o16 = make_opt(cpu, GPO_ADAMW, "lr=0.001 weight_decay=0.01", GPO_BF16);
	for (i = 0; i < REF_NGROUPS; i++) {
		ck_assert_int_eq(gpo_optim_set(o32, (int)i, "lr", 1e-3), 0);
		ck_assert_int_eq(gpo_optim_set(o16, (int)i, "lr", 1e-3), 0);
	}
	numel = gpo_optim_numel(o32);
	a = malloc(numel * 4);
	b = malloc(numel * 4);
	ck_assert(a && b);
	tu_fill(a, numel, &s, -1.0, 1.0);
	ck_assert_int_eq(gpo_optim_write(o32, "param", NULL, a, numel * 4), 0);
	ck_assert_int_eq(gpo_optim_write(o16, "param", NULL, a, numel * 4), 0);
	memcpy(b, a, numel * 4);
	s32 = s16 = s;
	ref_steps(o32, &s32, steps);
	ref_steps(o16, &s16, steps);
	tu_poison(a, numel);
	ck_assert_int_eq(gpo_optim_read(o32, "param", NULL, a, numel * 4), 0);
	for (i = 0; i < numel; i++)
		moved = fmax(moved, fabs((double)a[i] - b[i]));
	ck_assert_int_eq(gpo_optim_read(o16, "param", NULL, b, numel * 4), 0);
	for (i = 0; i < numel; i++) {
		ck_assert(isfinite(b[i]));
		worst = fmax(worst, fabs((double)a[i] - b[i]));
	}
	fprintf(stderr, "bf16 state vs f32, %d steps: max |dp| %.3g (moved up to %.3g)\n",
		steps, worst, moved);
	/*
	 * random gradients: the parameters random-walk, m / sqrt(v) well
	 * below 1; the largest move of 100 steps was 0.0095 and 0.043 in
	 * two runs, so 0.002 says only that they moved (a dead step gives 0)
	 */
	ck_assert_msg(moved > steps * 1e-3 * 0.02,
		      "the parameters hardly moved (%.3g)", moved);
	ck_assert_msg(worst <= steps * 1e-3 / 64.0,
		      "bf16 state drifted %.3g from f32", worst);
	ck_assert_msg(worst > 0, "bf16 state gave f32's bytes");
	free(a);
	free(b);
	gpo_optim_free(o32);
	gpo_optim_free(o16);
}
END_TEST

/*
 * Modes the kernels do not have: refused by the step with a message,
 * nothing changed (the parameters keep their bytes, no step counted)
 */
static void check_refused(enum gpo_optim_kind kind, const char *slot,
			  enum gpo_dtype dt, const char *slot2,
			  enum gpo_dtype dt2)
{
	struct gpo_device *cpu;
	struct gpo_optim *opt;
	const uint64_t n = 61;
	float p[61], g[61], got[61];
	uint64_t s = tu_rng("refused");
	size_t pbytes;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_new(cpu, kind, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_set_dtype(opt, slot, dt), 0);
	if (slot2)
		ck_assert_int_eq(gpo_optim_set_dtype(opt, slot2, dt2), 0);
	pbytes = n * gpo_dtype_size(gpo_optim_dtype(opt, "param"));
	tu_fill(p, n, &s, -1.0, 1.0);
	tu_fill(g, n, &s, -1.0, 1.0);
	/* a half param takes the first bytes as they are: any bits do */
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p, pbytes), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g, sizeof(g)), 0);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), -ENOSYS);
	tu_check_errmsg("gpo_optim_step");
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 0);
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, got, pbytes), 0);
	ck_assert(!memcmp(got, p, pbytes));
	/* and a dtype change after first use is -EBUSY */
	ck_assert_int_eq(gpo_optim_set_dtype(opt, slot, GPO_F32), -EBUSY);
	ck_assert_int_eq(gpo_optim_dtype(opt, slot), (int)dt);
	gpo_optim_free(opt);
}

START_TEST(test_unsupported_state_dtypes_refused)
{
	/* bf16 state: Adam, AdamW, Lion, Adagrad and RMSprop only so far */
	/* u8 state: test_optim_u8; mixed with f32 or bf16 it is refused */
	check_refused(GPO_ADAMW, "exp_avg", GPO_U8, NULL, GPO_F32);
	check_refused(GPO_ADAMW, "exp_avg_sq", GPO_U8, "exp_avg", GPO_BF16);
	check_refused(GPO_ADAGRAD, "sum", GPO_F16, NULL, GPO_F32);
	/* one state dtype a step */
	check_refused(GPO_ADAMW, "exp_avg", GPO_BF16, NULL, GPO_F32);
	/* half parameters: no kernels yet */
	check_refused(GPO_ADAMW, "param", GPO_BF16, NULL, GPO_F32);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_precision");
	TCase *tc = tcase_create("bitwise");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_sgd_bitwise);
	tcase_add_test(tc, test_sgd_momentum_bitwise);
	tcase_add_test(tc, test_sgd_nesterov_bitwise);
	tcase_add_test(tc, test_adam_bitwise);
	tcase_add_test(tc, test_adam_amsgrad_bitwise);
	tcase_add_test(tc, test_adamw_bitwise);
	tcase_add_test(tc, test_adamw_amsgrad_bitwise);
	tcase_add_test(tc, test_rmsprop_bitwise);
	tcase_add_test(tc, test_rmsprop_centered_momentum_bitwise);
	tcase_add_test(tc, test_adagrad_bitwise);
	tcase_add_test(tc, test_lion_bitwise);
	tcase_add_test(tc, test_adam_bf16_state_bitwise);
	tcase_add_test(tc, test_adamw_bf16_state_bitwise);
	tcase_add_test(tc, test_lion_bf16_state_bitwise);
	tcase_add_test(tc, test_adagrad_bf16_state_bitwise);
	tcase_add_test(tc, test_rmsprop_bf16_state_bitwise);
	tcase_add_test(tc, test_tiny_groups_bf16_state_bitwise);
	tcase_add_test(tc, test_adamw_bf16_state_is_the_mode);
	tcase_add_test(tc, test_adamw_bf16_state_tracks_f32);
	tcase_add_test(tc, test_unsupported_state_dtypes_refused);
	tcase_add_test(tc, test_set_state_dtype);
	tcase_add_test(tc, test_ckpt_bf16_state_across_devices);
	tcase_add_test(tc, test_ckpt_f32_across_devices);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
