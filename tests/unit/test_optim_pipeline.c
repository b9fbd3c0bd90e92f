// SPDX-License-Identifier: MIT
/*
 * test_optim_pipeline.c - what surrounds the update, on every device:
 * unscaling and the non-finite skip, global-norm clipping, hyperparameters
 * changed between steps, parameter groups and the flat layout, reset,
 * restoring state mid-trajectory, the built-in objectives, and the
 * defaults. Optimizer results are compared with the float64 reference.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"
#include "testutil.h"

#define NDEV TU_MAX_DEVICES

/* every kind, with a configuration that exercises its state */
static const struct {
	enum gpo_optim_kind kind;
	const char *config;
} kinds[] = {
	{ GPO_SGD, "lr=0.05 momentum=0.9 dampening=0.1 weight_decay=0.01" },
	{ GPO_ADAM, "lr=0.01 amsgrad=1 weight_decay=0.01" },
	{ GPO_ADAMW, "lr=0.01 weight_decay=0.1" },
	{ GPO_RMSPROP, "momentum=0.5 centered=1 weight_decay=0.01" },
	{ GPO_ADAGRAD, "lr=0.1 initial_accumulator_value=0.2 lr_decay=0.01" },
	{ GPO_LAMB, "lr=0.01 weight_decay=0.01" },
	{ GPO_LION, "lr=0.001 weight_decay=0.1" },
};

#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

/* three tensors of odd sizes and shapes, over a float4 and a LAMB block */
static void add_three(struct ref_run *rr)
{
	static const uint64_t a = 61, b[2] = { 5, 7 }, c = 4099;

	rr_add_tensor(rr, 1, &a, 0);
	rr_add_tensor(rr, 2, b, 0);
	rr_add_tensor(rr, 1, &c, 0);
}

/*
 * @rr: kind @k on @dev with add_three()'s tensors and the kind's config,
 * then @pipeline (may be NULL); inputs from @rng
 */
static void kind_init(struct ref_run *rr, struct gpo_device *dev, int k,
		      uint64_t *rng, const char *pipeline)
{
	rr_init(rr, dev, kinds[k].kind, rng);
	add_three(rr);
	rr_configure(rr, -1, kinds[k].config);
	if (pipeline)
		rr_configure(rr, -1, pipeline);
}

static int devices(struct gpo_device **devs)
{
	int n = tu_devices(devs, NDEV);

	ck_assert_int_ge(n, 1);
	return n;
}

/* what one run of one kind on one device needs beyond the kind */
struct run_arg {
	const char *pipeline;		/* configure text */
	double scale;			/* gradients in +-scale */
	float bad;			/* the non-finite value planted */
	int bad_step;
};

typedef void (*kind_run)(struct gpo_device *dev, int k, uint64_t *rng,
			 const struct run_arg *arg);

/* @run for every kind on every device, inputs from @tag's stream */
static void each_kind(const char *tag, kind_run run,
		      const struct run_arg *arg)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d, k;
	uint64_t rng = tu_rng(tag);

	for (d = 0; d < ndev; d++)
		for (k = 0; k < NKINDS; k++)
			run(devs[d], k, &rng, arg);
}

/* The whole flat contents of "param" and every slot, in host memory. */
struct snapshot {
	int count;			/* "param" and the slots */
	char names[9][32];
	float *data[9];
	uint64_t steps;
};

static void take_snapshot(struct gpo_optim *opt, struct snapshot *s)
{
	uint64_t n = gpo_optim_numel(opt);
	int i;

	memset(s, 0, sizeof(*s));
	s->count = gpo_optim_slot_count(opt) + 1;
	ck_assert_int_le(s->count, 9);
	for (i = 0; i < s->count; i++) {
		snprintf(s->names[i], sizeof(s->names[i]), "%s",
			 i ? gpo_optim_slot_name(opt, i - 1) : "param");
		s->data[i] = malloc(n * 4);
		ck_assert_ptr_nonnull(s->data[i]);
		tu_poison(s->data[i], n);
		ck_assert_int_eq(gpo_optim_read(opt, s->names[i], NULL,
						s->data[i], n * 4), 0);
	}
	s->steps = gpo_optim_steps_done(opt);
}

/* assert that @b holds the same slots, bytes and step count as @a */
static void same_snapshot(const struct snapshot *a, const struct snapshot *b,
			  uint64_t n, const char *what)
{
	int i;

	ck_assert_int_eq(a->count, b->count);
	ck_assert_uint_eq(a->steps, b->steps);
	for (i = 0; i < a->count; i++) {
		ck_assert_str_eq(a->names[i], b->names[i]);
		ck_assert_msg(!memcmp(a->data[i], b->data[i], n * 4),
			      "%s: %s differs", what, a->names[i]);
	}
}

static void free_snapshot(struct snapshot *s)
{
	int i;

	for (i = 0; i < 9; i++)
		free(s->data[i]);
	memset(s, 0, sizeof(*s));
}

/* ---- non-finite gradients ------------------------------------------------ */

/*
 * 6 steps of kind @k with @arg->pipeline set; the gradients of step
 * @arg->bad_step hold @arg->bad in one random element. That step must be
 * skipped without a trace, and the others must match the reference, which
 * never saw it.
 */
static void skip_run(struct gpo_device *dev, int k, uint64_t *rng,
		     const struct run_arg *arg)
{
	struct gpo_step_info info;
	struct snapshot before, after;
	struct ref_run rr;
	int step, t;
	size_t i;

	kind_init(&rr, dev, k, rng, arg->pipeline);
	rr_random_params(&rr, -1, 1);
	for (step = 1; step <= 6; step++) {
		rr_random_grads(&rr, -arg->scale, arg->scale);
		if (step != arg->bad_step) {
			rr_step(&rr, &info);
			ck_assert_int_eq(info.skipped, 0);
			continue;
		}
		t = (int)tu_rand(rng, 0, 3);
		i = (size_t)tu_rand(rng, 0, (double)rr.ref.t[t].n);
		rr.grads[t][i] = arg->bad;
		take_snapshot(rr.opt, &before);
		rr_step(&rr, &info);
		ck_assert_msg(info.skipped == 1 && info.skipped_total == 1 &&
			      info.step == (uint64_t)step - 1,
			      "%s: %s: a gradient %g at %s[%zu]: skipped %d, skipped_total %llu, step %llu",
			      rr.dev_id, gpo_optim_kind_name(kinds[k].kind),
			      arg->bad, rr.names[t], i, info.skipped,
			      (unsigned long long)info.skipped_total,
			      (unsigned long long)info.step);
		take_snapshot(rr.opt, &after);
		same_snapshot(&before, &after, gpo_optim_numel(rr.opt),
			      rr.dev_id);
		free_snapshot(&before);
		free_snapshot(&after);
	}
	rr_check(&rr);
	rr_free(&rr);
}

static void skip_all(const char *tag, const char *pipeline, double scale,
		     float bad, int bad_step)
{
	struct run_arg arg = { pipeline, scale, bad, bad_step };

	each_kind(tag, skip_run, &arg);
}

START_TEST(test_inf_gradient_skips_step_with_check_finite)
{
	skip_all("skip_inf_check", "check_finite=1", 1, INFINITY, 4);
}
END_TEST

START_TEST(test_nan_gradient_skips_step_with_check_finite)
{
	skip_all("skip_nan_check", "check_finite=1", 1, NAN, 3);
}
END_TEST

/* GradScaler: any grad_scale != 1 checks for non-finite values itself */
START_TEST(test_inf_gradient_skips_step_with_grad_scale)
{
	skip_all("skip_inf_scale", "grad_scale=1024", 1024, -INFINITY, 5);
}
END_TEST

START_TEST(test_nan_gradient_skips_step_with_grad_scale)
{
	skip_all("skip_nan_scale", "grad_scale=1024", 1024, NAN, 2);
}
END_TEST

/* sgd's first-step buffer copy and the bias corrections still see step 1 */
START_TEST(test_skipped_first_step_leaves_no_trace)
{
	skip_all("skip_first", "check_finite=1 clip_norm=10", 1, NAN, 1);
}
END_TEST

/* ---- unscaling and clipping ---------------------------------------------- */

/*
 * 8 steps of kind @k with @arg->pipeline, gradients in +-@arg->scale;
 * every step's grad_norm must be the float64 norm of the unscaled
 * gradients.
 */
static void pipeline_run(struct gpo_device *dev, int k, uint64_t *rng,
			 const struct run_arg *arg)
{
	struct gpo_step_info info;
	struct ref_run rr;
	int step;

	kind_init(&rr, dev, k, rng, arg->pipeline);
	rr_random_params(&rr, -1, 1);
	for (step = 0; step < 8; step++) {
		double err;

		rr_random_grads(&rr, -arg->scale, arg->scale);
		rr_step(&rr, &info);
		err = fabs(info.grad_norm - rr.ref.last_norm) /
		      rr.ref.last_norm;
		ck_assert_msg(err < REF_TOL,
			      "%s: %s \"%s\": grad_norm %.9g, the float64 norm %.9g",
			      rr.dev_id, gpo_optim_kind_name(kinds[k].kind),
			      arg->pipeline, info.grad_norm, rr.ref.last_norm);
	}
	rr_check(&rr);
	rr_free(&rr);
}

static void pipeline_all(const char *tag, const char *pipeline,
			 double scale)
{
	struct run_arg arg = { pipeline, scale, 0, 0 };

	each_kind(tag, pipeline_run, &arg);
}

START_TEST(test_grad_scale_unscales_gradients)
{
	pipeline_all("grad_scale_pow2", "grad_scale=65536", 65536);
}
END_TEST

/* not a power of two: 1 / S is not exact in float32 */
START_TEST(test_grad_scale_not_power_of_two_unscales_gradients)
{
	pipeline_all("grad_scale_odd", "grad_scale=3.7", 3.7);
}
END_TEST

/* the norm of 4200 gradients in +-1 is about 37: 1.5 clips hard */
START_TEST(test_clip_above_threshold_matches_reference)
{
	pipeline_all("clip_above", "clip_norm=1.5", 1);
}
END_TEST

/* torch: unscale_ first, then clip_grad_norm_ sees the true gradients */
START_TEST(test_clip_after_unscale_uses_unscaled_norm)
{
	pipeline_all("clip_unscaled", "clip_norm=1.5 grad_scale=512", 512);
}
END_TEST

/*
 * Below the threshold the clip coefficient is 1: the results must be the
 * same bytes as without clipping, and grad_norm is still reported (NaN
 * without any norm pass).
 */
static void clip_below_run(struct gpo_device *dev, int k, uint64_t *rng,
			   const struct run_arg *arg)
{
	struct gpo_step_info info, plain_info;
	struct snapshot a, b;
	struct ref_run rr, plain;
	uint64_t rng2 = *rng;
	int step, t;

	/* the same stream: both draw the same parameters */
	kind_init(&rr, dev, k, rng, arg->pipeline);
	kind_init(&plain, dev, k, &rng2, NULL);
	rr_random_params(&rr, -1, 1);
	rr_random_params(&plain, -1, 1);
	for (step = 0; step < 6; step++) {
		rr_random_grads(&rr, -1, 1);
		for (t = 0; t < rr.ref.ntensors; t++)
			memcpy(plain.grads[t], rr.grads[t], rr.ref.t[t].n * 4);
		rr_step(&rr, &info);
		rr_step(&plain, &plain_info);
		ck_assert_msg(fabs(info.grad_norm - rr.ref.last_norm) <
			      REF_TOL * rr.ref.last_norm,
			      "%s: grad_norm %g, want %g", rr.dev_id,
			      info.grad_norm, rr.ref.last_norm);
		ck_assert_msg(isnan(plain_info.grad_norm),
			      "%s: grad_norm %g without a norm pass",
			      rr.dev_id, plain_info.grad_norm);
	}
	rr_check(&rr);
	take_snapshot(rr.opt, &a);
	take_snapshot(plain.opt, &b);
	same_snapshot(&a, &b, gpo_optim_numel(rr.opt), rr.dev_id);
	free_snapshot(&a);
	free_snapshot(&b);
	rr_free(&rr);
	rr_free(&plain);
}

START_TEST(test_clip_below_threshold_changes_nothing)
{
	struct run_arg arg = { "clip_norm=1000", 1, 0, 0 };

	each_kind("clip_below", clip_below_run, &arg);
}
END_TEST

/* ---- hyperparameters between steps --------------------------------------- */

/* what each kind changes after step 7: through set and through configure */
static const struct {
	const char *key;
	double value;
	const char *text;
} changes[] = {
	[GPO_SGD] = { "lr", 0.02, "weight_decay=0.1 momentum=0.5" },
	[GPO_ADAM] = { "lr", 0.003, "weight_decay=0.2 betas=0.8,0.99" },
	[GPO_ADAMW] = { "beta1", 0.5, "lr=0.02 weight_decay=0.01" },
	[GPO_RMSPROP] = { "alpha", 0.9, "lr=0.001 weight_decay=0.1" },
	[GPO_ADAGRAD] = { "lr_decay", 0.1, "lr=0.05 weight_decay=0.1" },
	[GPO_LAMB] = { "weight_decay", 0.3, "lr=0.002 betas=0.7,0.9" },
	[GPO_LION] = { "beta2", 0.9, "lr=0.01 weight_decay=0.2 beta1=0.8" },
};

static void hparam_change_run(struct gpo_device *dev, int k, uint64_t *rng,
			      const struct run_arg *arg)
{
	enum gpo_optim_kind kind = kinds[k].kind;
	const char *key = changes[kind].key;
	double value = changes[kind].value, got;
	struct ref_run rr;
	char text[96];
	int step;

	kind_init(&rr, dev, k, rng, NULL);
	rr_random_params(&rr, -1, 1);
	for (step = 1; step <= 15; step++) {
		if (step == 8) {
			ck_assert_int_eq(gpo_optim_set(rr.opt, -1, key, value),
					 0);
			snprintf(text, sizeof(text), "%s=%.17g", key, value);
			ck_assert_int_eq(ref_configure(&rr.ref, -1, text), 0);
			ck_assert_int_eq(gpo_optim_get(rr.opt, 0, key, &got),
					 0);
			ck_assert(got == value);
		}
		if (step == 11)
			rr_configure(&rr, -1, changes[kind].text);
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, NULL);
	}
	rr_check(&rr);
	rr_free(&rr);
}

START_TEST(test_hparam_change_between_steps_matches_reference)
{
	each_kind("hparam_change", hparam_change_run, NULL);
}
END_TEST

/* ---- groups and the flat layout ------------------------------------------ */

/*
 * Tensors added a(g0) b(g1) c(g0) d(g1) e(g0): gpuopt.h lays out groups in
 * order of creation and, within one, tensors in order of addition, so the
 * flat buffers read a c e b d.
 */
START_TEST(test_groups_layout_is_group_then_insertion_order)
{
	static const uint64_t sizes[5] = { 61, 1021, 7, 3, 4099 };
	static const int group[5] = { 0, 1, 0, 1, 0 };
	static const int flat[5] = { 0, 2, 4, 1, 3 };
	static const char *const names[5] = { "a", "b", "c", "d", "e" };
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d, i, j;
	uint64_t rng = tu_rng("groups_layout"), total = 0;
	float *x[5], *all, *back;

	for (i = 0; i < 5; i++) {
		x[i] = malloc(sizes[i] * 4);
		total += sizes[i];
	}
	all = malloc(total * 4);
	back = malloc(total * 4);
	for (d = 0; d < ndev; d++) {
		struct gpo_tensor_info info[5];
		struct gpo_optim *opt;
		uint64_t pos = 0;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_eq(gpo_optim_add_group(opt), 1);
		for (i = 0; i < 5; i++)
			ck_assert_int_eq(gpo_optim_add_tensor(opt, names[i], 1,
							      &sizes[i],
							      group[i]), i);
		ck_assert_uint_eq(gpo_optim_numel(opt), total);
		for (i = 0; i < 5; i++) {
			ck_assert_int_eq(gpo_optim_tensor_info(opt, i,
							       &info[i]), 0);
			ck_assert_str_eq(info[i].name, names[i]);
			ck_assert_int_eq(info[i].group, group[i]);
			ck_assert_uint_eq(info[i].numel, sizes[i]);
		}
		/* contiguous within a group, group 1 after group 0 */
		ck_assert_uint_eq(info[2].offset, info[0].offset + 61);
		ck_assert_uint_eq(info[4].offset, info[2].offset + 7);
		ck_assert_uint_eq(info[3].offset, info[1].offset + 1021);
		ck_assert_uint_ge(info[1].offset, info[4].offset + 4099);

		/* per-tensor writes come back in that order as a whole */
		for (i = 0; i < 5; i++) {
			tu_fill(x[i], sizes[i], &rng, -1, 1);
			ck_assert_int_eq(gpo_optim_write(opt, "param", names[i],
							 x[i], sizes[i] * 4),
					 0);
		}
		tu_poison(all, total);
		ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, all,
						total * 4), 0);
		for (j = 0; j < 5; j++) {
			i = flat[j];
			ck_assert_msg(!memcmp(all + pos, x[i], sizes[i] * 4),
				      "%s: tensor %s is not at flat position %llu",
				      tu_device_id(devs[d]), names[i],
				      (unsigned long long)pos);
			pos += sizes[i];
		}
		/* and a whole write lands in the tensors that order names */
		tu_fill(all, total, &rng, -1, 1);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, all,
						 total * 4), 0);
		for (j = 0, pos = 0; j < 5; j++) {
			i = flat[j];
			tu_poison(back, sizes[i]);
			ck_assert_int_eq(gpo_optim_read(opt, "grad", names[i],
							back, sizes[i] * 4),
					 0);
			ck_assert(!memcmp(back, all + pos, sizes[i] * 4));
			pos += sizes[i];
		}
		gpo_optim_free(opt);
	}
	for (i = 0; i < 5; i++)
		free(x[i]);
	free(all);
	free(back);
}
END_TEST

/*
 * Each group's lr and weight_decay apply to its tensors only; tensors are
 * added alternately to the two groups.
 */
static void groups_run(struct gpo_device *dev, int k, uint64_t *rng,
		       const struct run_arg *arg)
{
	static const uint64_t sizes[4] = { 1021, 61, 4099, 5 };
	struct ref_run rr;
	char text[64];
	int step, t;
	double lr;

	rr_init(&rr, dev, kinds[k].kind, rng);
	rr_configure(&rr, -1, kinds[k].config);
	rr_add_group(&rr);
	for (t = 0; t < 4; t++)
		rr_add_tensor(&rr, 1, &sizes[t], t % 2);
	ck_assert_int_eq(gpo_optim_get(rr.opt, 0, "lr", &lr), 0);
	rr_configure(&rr, 1, "weight_decay=0.3");
	ck_assert_int_eq(gpo_optim_set(rr.opt, 1, "lr", lr * 3), 0);
	snprintf(text, sizeof(text), "lr=%.17g", lr * 3);
	ck_assert_int_eq(ref_configure(&rr.ref, 1, text), 0);
	rr_random_params(&rr, -1, 1);
	for (step = 0; step < 10; step++) {
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, NULL);
	}
	rr_check(&rr);
	rr_free(&rr);
}

START_TEST(test_groups_use_their_own_hyperparameters)
{
	each_kind("groups_hparams", groups_run, NULL);
}
END_TEST

/* ---- reset and restore --------------------------------------------------- */

/*
 * After 5 steps (one skipped), reset zeroes every slot (adagrad's sum goes
 * back to initial_accumulator_value), the step and the skipped count, and
 * keeps the parameters; what follows is a new optimizer's trajectory.
 */
static void reset_run(struct gpo_device *dev, int k, uint64_t *rng,
		      const struct run_arg *arg)
{
	/* adagrad's initial_accumulator_value in kinds[] */
	float start = kinds[k].kind == GPO_ADAGRAD ? 0.2f : 0.0f;
	struct gpo_step_info info;
	struct snapshot before, after;
	struct ref_run rr;
	uint64_t n, i;
	int step, s;

	kind_init(&rr, dev, k, rng, "check_finite=1");
	rr_random_params(&rr, -1, 1);
	for (step = 0; step < 5; step++) {
		rr_random_grads(&rr, -1, 1);
		if (step == 2)
			rr.grads[1][3] = NAN;
		rr_step(&rr, &info);
	}
	ck_assert_uint_eq(info.skipped_total, 1);
	n = gpo_optim_numel(rr.opt);
	take_snapshot(rr.opt, &before);
	ck_assert_uint_eq(gpo_optim_steps_skipped(rr.opt), 1);
	ck_assert_int_eq(gpo_optim_reset(rr.opt), 0);
	ck_assert_uint_eq(gpo_optim_steps_done(rr.opt), 0);
	ck_assert_uint_eq(gpo_optim_steps_skipped(rr.opt), 0);
	take_snapshot(rr.opt, &after);
	ck_assert_int_eq(after.count, before.count);
	ck_assert(!memcmp(before.data[0], after.data[0], n * 4));
	for (s = 1; s < after.count; s++)
		for (i = 0; i < n; i++)
			ck_assert_msg(after.data[s][i] == start,
				      "%s: %s: %s[%llu] = %g after reset",
				      rr.dev_id,
				      gpo_optim_kind_name(kinds[k].kind),
				      after.names[s], (unsigned long long)i,
				      after.data[s][i]);
	free_snapshot(&before);
	free_snapshot(&after);
	ref_reset(&rr.ref);
	for (step = 0; step < 5; step++) {
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, &info);
	}
	ck_assert_uint_eq(info.step, 5);
	ck_assert_uint_eq(info.skipped_total, 0);
	rr_check(&rr);
	rr_free(&rr);
}

START_TEST(test_reset_zeroes_state_and_step)
{
	each_kind("reset", reset_run, NULL);
}
END_TEST

/*
 * Steps 1-5 on one optimizer, its params and state read out; a fresh
 * optimizer given them with gpo_optim_write and gpo_optim_set_step(5);
 * steps 6-10 on both with the same gradients: the same bytes.
 */
static void restore_run(struct gpo_device *dev, int k, uint64_t *rng,
			const struct run_arg *arg)
{
	struct snapshot mid, a, b;
	struct ref_run rr, re;
	uint64_t n, rng2 = *rng;
	int step, s, t, ret;

	kind_init(&rr, dev, k, rng, NULL);
	rr_random_params(&rr, -1, 1);
	for (step = 1; step <= 5; step++) {
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, NULL);
	}
	n = gpo_optim_numel(rr.opt);
	take_snapshot(rr.opt, &mid);

	kind_init(&re, dev, k, &rng2, NULL);
	for (s = 0; s < mid.count; s++) {
		ret = gpo_optim_write(re.opt, mid.names[s], NULL, mid.data[s],
				      n * 4);
		ck_assert_msg(ret == 0, "%s: write %s: %s", re.dev_id,
			      mid.names[s], gpo_errmsg());
	}
	ck_assert_int_eq(gpo_optim_set_step(re.opt, 5), 0);
	ck_assert_uint_eq(gpo_optim_steps_done(re.opt), 5);
	for (step = 6; step <= 10; step++) {
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, NULL);
		for (t = 0; t < 3; t++)
			ck_assert_int_eq(gpo_optim_write(re.opt, "grad",
							 re.names[t],
							 rr.grads[t],
							 rr.ref.t[t].n * 4), 0);
		ck_assert_int_eq(gpo_optim_step(re.opt, NULL), 0);
	}
	rr_check(&rr);
	take_snapshot(rr.opt, &a);
	take_snapshot(re.opt, &b);
	same_snapshot(&a, &b, n, rr.dev_id);
	free_snapshot(&mid);
	free_snapshot(&a);
	free_snapshot(&b);
	rr_free(&rr);
	rr_free(&re);
}

START_TEST(test_restore_mid_trajectory_matches_uninterrupted)
{
	each_kind("restore", restore_run, NULL);
}
END_TEST

/* ---- built-in objectives ------------------------------------------------- */

/*
 * The objective over the flat vector of three tensors (one group), loss
 * and gradient against float64. Gradients are compared like optimizer
 * state: relative to the larger of the value and REF_FLOOR of the sum of
 * its terms' magnitudes (ref_compare's floor, see ref.c).
 */
static void objective_check(const char *name, double lo, double hi)
{
	static const uint64_t s0 = 1021, s1[2] = { 5, 7 }, s2 = 65537;
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng(name);
	size_t n = 1021 + 35 + 65537, i;
	float *x = malloc(n * 4), *g = malloc(n * 4);
	double *want = malloc(n * 8), *mag = malloc(n * 8);

	for (d = 0; d < ndev; d++) {
		struct gpo_optim *opt;
		double loss, loss64 = 0, lmag = 0, err;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAM, &opt), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "a", 1, &s0, 0), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "b", 2, s1, 0), 1);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "c", 1, &s2, 0), 2);
		tu_fill(x, n, &rng, lo, hi);
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, x, n * 4),
				 0);
		loss = NAN;
		ck_assert_msg(gpo_optim_objective(opt, name, &loss) == 0,
			      "%s: %s: %s", tu_device_id(devs[d]), name,
			      gpo_errmsg());
		for (i = 0; i < n; i++) {
			double xi = x[i], c = 1 + (double)(i % 7);

			if (!strcmp(name, "quadratic")) {
				loss64 += 0.5 * c * (xi - 1) * (xi - 1);
				want[i] = c * (xi - 1);
				mag[i] = c * (fabs(xi) + 1);
				continue;
			}
			want[i] = mag[i] = 0;
			if (i + 1 < n) {
				double t = x[i + 1] - xi * xi, u = 1 - xi;

				loss64 += 100 * t * t + u * u;
				lmag += 100 * t * t + u * u;
				want[i] += -400 * xi * t - 2 * u;
				mag[i] += 400 * fabs(xi) *
					  (fabs(x[i + 1]) + xi * xi) +
					  2 * (1 + fabs(xi));
			}
			if (i > 0) {
				double xp = x[i - 1];

				want[i] += 200 * (xi - xp * xp);
				mag[i] += 200 * (fabs(xi) + xp * xp);
			}
		}
		err = fabs(loss - loss64) / loss64;
		ck_assert_msg(err < REF_TOL, "%s: %s loss %.9g, float64 %.9g",
			      tu_device_id(devs[d]), name, loss, loss64);
		tu_poison(g, n);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", NULL, g, n * 4),
				 0);
		err = ref_compare(g, want, mag, n, NULL);
		ck_assert_msg(err < REF_TOL,
			      "%s: %s gradient: max rel err %g (GPUOPT_TEST_SEED=%llu)",
			      tu_device_id(devs[d]), name, err,
			      (unsigned long long)tu_seed());
		fprintf(stderr, "%s on %s: loss rel err %.3g, gradient %.3g\n",
			name, tu_device_id(devs[d]),
			fabs(loss - loss64) / loss64, err);
		gpo_optim_free(opt);
	}
	free(x);
	free(g);
	free(want);
	free(mag);
}

START_TEST(test_objective_quadratic_matches_float64)
{
	objective_check("quadratic", -2, 3);
}
END_TEST

START_TEST(test_objective_rosenbrock_matches_float64)
{
	objective_check("rosenbrock", -1.5, 1.5);
}
END_TEST

/* ---- defaults ------------------------------------------------------------ */

/* the hyperparameters torch gives each kind (gpuopt.h for LAMB, Lion) */
static const char *const kind_keys[GPO_OPTIM_KINDS] = {
	[GPO_SGD] = "lr weight_decay maximize momentum dampening nesterov",
	[GPO_ADAM] = "lr weight_decay maximize beta1 beta2 eps amsgrad",
	[GPO_ADAMW] = "lr weight_decay maximize beta1 beta2 eps amsgrad",
	[GPO_RMSPROP] = "lr weight_decay maximize alpha eps momentum centered",
	[GPO_ADAGRAD] = "lr weight_decay maximize lr_decay eps "
			"initial_accumulator_value",
	[GPO_LAMB] = "lr weight_decay maximize beta1 beta2 eps",
	[GPO_LION] = "lr weight_decay maximize beta1 beta2",
};

/* torch 1.13's defaults (and gpuopt.h's for sgd's lr, LAMB and Lion) */
static void defaults_run(struct gpo_device *dev, int k, uint64_t *rng,
			 const struct run_arg *arg)
{
	enum gpo_optim_kind kind = kinds[k].kind;
	char keys[128], *key, *save;
	struct gpo_optim *opt;
	struct ref_optim ref;
	double v, want;

	ck_assert_int_eq(gpo_optim_new(dev, kind, &opt), 0);
	ref_init(&ref, kind);
	snprintf(keys, sizeof(keys), "%s", kind_keys[kind]);
	for (key = strtok_r(keys, " ", &save); key;
	     key = strtok_r(NULL, " ", &save)) {
		ck_assert_msg(gpo_optim_get(opt, 0, key, &v) == 0,
			      "%s has no %s: %s", gpo_optim_kind_name(kind),
			      key, gpo_errmsg());
		ck_assert_int_eq(ref_get(&ref, 0, key, &want), 0);
		ck_assert_msg(v == want, "%s: %s defaults to %g, torch's is %g",
			      gpo_optim_kind_name(kind), key, v, want);
	}
	ck_assert_int_eq(gpo_optim_get(opt, 0, "clip_norm", &v), 0);
	ck_assert(v == 0);
	ck_assert_int_eq(gpo_optim_get(opt, 0, "grad_scale", &v), 0);
	ck_assert(v == 1);
	ck_assert_int_eq(gpo_optim_get(opt, 0, "check_finite", &v), 0);
	ck_assert(v == 0);
	gpo_optim_free(opt);
}

START_TEST(test_new_optimizer_has_torch_defaults)
{
	each_kind("defaults", defaults_run, NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_inf_gradient_skips_step_with_check_finite);
	tcase_add_test(tc, test_nan_gradient_skips_step_with_check_finite);
	tcase_add_test(tc, test_inf_gradient_skips_step_with_grad_scale);
	tcase_add_test(tc, test_nan_gradient_skips_step_with_grad_scale);
	tcase_add_test(tc, test_skipped_first_step_leaves_no_trace);
	tcase_add_test(tc, test_grad_scale_unscales_gradients);
	tcase_add_test(tc, test_grad_scale_not_power_of_two_unscales_gradients);
	tcase_add_test(tc, test_clip_above_threshold_matches_reference);
	tcase_add_test(tc, test_clip_after_unscale_uses_unscaled_norm);
	tcase_add_test(tc, test_clip_below_threshold_changes_nothing);
	tcase_add_test(tc, test_hparam_change_between_steps_matches_reference);
	tcase_add_test(tc, test_groups_layout_is_group_then_insertion_order);
	tcase_add_test(tc, test_groups_use_their_own_hyperparameters);
	tcase_add_test(tc, test_reset_zeroes_state_and_step);
	tcase_add_test(tc, test_restore_mid_trajectory_matches_uninterrupted);
	tcase_add_test(tc, test_objective_quadratic_matches_float64);
	tcase_add_test(tc, test_objective_rosenbrock_matches_float64);
	tcase_add_test(tc, test_new_optimizer_has_torch_defaults);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
