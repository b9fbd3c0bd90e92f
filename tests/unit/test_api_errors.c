// SPDX-License-Identifier: MIT
/*
 * test_api_errors.c - bad input, on every device: each call gives the
 * documented -errno, leaves a message in gpo_errmsg(), and changes nothing
 * (hyperparameters read back with gpo_optim_describe, tensors with
 * gpo_optim_tensor_info, parameters and state with gpo_optim_read).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define MAX_GROUPS	4
#define MAX_TENSORS	8
#define MAX_SLOTS	9

/* An optimizer under test and what it looked like before the bad call. */
struct fix {
	struct gpo_device *dev;
	const char *id;
	struct gpo_optim *opt;
	int allocated;
	/* the snapshot */
	int ngroups;
	char desc[MAX_GROUPS][1024];
	int ntensors;
	struct gpo_tensor_info info[MAX_TENSORS];
	uint64_t steps;
	int nslots;
	char slot[MAX_SLOTS][32];
	float *data[MAX_SLOTS];
};

static void fix_snap(struct fix *f)
{
	uint64_t n = gpo_optim_numel(f->opt);
	int i;

	for (i = 0; i < MAX_GROUPS; i++) {
		int len = gpo_optim_describe(f->opt, i, f->desc[i],
					     sizeof(f->desc[i]));

		if (len < 0)
			break;
		ck_assert_int_lt(len, (int)sizeof(f->desc[i]));
	}
	f->ngroups = i;
	f->ntensors = gpo_optim_tensor_count(f->opt);
	ck_assert_int_le(f->ntensors, MAX_TENSORS);
	for (i = 0; i < f->ntensors; i++)
		ck_assert_int_eq(gpo_optim_tensor_info(f->opt, i, &f->info[i]),
				 0);
	f->steps = gpo_optim_steps_done(f->opt);
	for (i = 0; i < MAX_SLOTS; i++) {
		free(f->data[i]);
		f->data[i] = NULL;
	}
	f->nslots = 0;
	/* reading would allocate: only once the buffers exist */
	if (!f->allocated)
		return;
	f->nslots = gpo_optim_slot_count(f->opt) + 1;
	for (i = 0; i < f->nslots; i++) {
		snprintf(f->slot[i], sizeof(f->slot[i]), "%s",
			 i ? gpo_optim_slot_name(f->opt, i - 1) : "param");
		f->data[i] = malloc(n * 4);
		ck_assert_int_eq(gpo_optim_read(f->opt, f->slot[i], NULL,
						f->data[i], n * 4), 0);
	}
}

static void fix_same(struct fix *f, const char *what)
{
	uint64_t n = gpo_optim_numel(f->opt);
	char desc[1024];
	struct gpo_tensor_info info;
	float *now;
	int i;

	for (i = 0; i < f->ngroups; i++) {
		ck_assert_int_ge(gpo_optim_describe(f->opt, i, desc,
						    sizeof(desc)), 0);
		ck_assert_msg(!strcmp(desc, f->desc[i]),
			      "%s: %s changed group %d:\n%s\nwas\n%s", f->id,
			      what, i, desc, f->desc[i]);
	}
	ck_assert_msg(gpo_optim_describe(f->opt, f->ngroups, desc,
					 sizeof(desc)) == -ENOENT,
		      "%s: %s added a group", f->id, what);
	ck_assert_msg(gpo_optim_tensor_count(f->opt) == f->ntensors,
		      "%s: %s changed the tensor count", f->id, what);
	for (i = 0; i < f->ntensors; i++) {
		ck_assert_int_eq(gpo_optim_tensor_info(f->opt, i, &info), 0);
		ck_assert_msg(!memcmp(&info, &f->info[i], sizeof(info)),
			      "%s: %s changed tensor %d", f->id, what, i);
	}
	ck_assert_msg(gpo_optim_steps_done(f->opt) == f->steps,
		      "%s: %s changed the step count", f->id, what);
	if (!f->allocated)
		return;
	ck_assert_msg(gpo_optim_slot_count(f->opt) + 1 == f->nslots,
		      "%s: %s changed the slots", f->id, what);
	now = malloc(n * 4);
	for (i = 0; i < f->nslots; i++) {
		ck_assert_int_eq(gpo_optim_read(f->opt, f->slot[i], NULL, now,
						n * 4), 0);
		ck_assert_msg(!memcmp(now, f->data[i], n * 4),
			      "%s: %s changed %s", f->id, what, f->slot[i]);
	}
	free(now);
}

/*
 * A new optimizer of @kind on @dev with tensors "w" (37) and "b" (5x7);
 * with @use, parameters written and three steps taken.
 */
static void fix_init(struct fix *f, struct gpo_device *dev,
		     enum gpo_optim_kind kind, const char *config, int use)
{
	static const uint64_t w = 37, b[2] = { 5, 7 };
	uint64_t rng = tu_rng("api_errors");
	float x[72];
	int k;

	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->id = tu_device_id(dev);
	ck_assert_int_eq(gpo_optim_new(dev, kind, &f->opt), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(f->opt, "w", 1, &w, 0), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(f->opt, "b", 2, b, 0), 1);
	if (config)
		ck_assert_msg(gpo_optim_configure(f->opt, -1, config) == 0,
			      "%s: %s", config, gpo_errmsg());
	if (use) {
		tu_fill(x, 72, &rng, -1, 1);
		ck_assert_int_eq(gpo_optim_write(f->opt, "param", NULL, x,
						 sizeof(x)), 0);
		for (k = 0; k < 3; k++) {
			tu_fill(x, 72, &rng, -1, 1);
			ck_assert_int_eq(gpo_optim_write(f->opt, "grad", NULL,
							 x, sizeof(x)), 0);
			ck_assert_int_eq(gpo_optim_step(f->opt, NULL), 0);
		}
		f->allocated = 1;
	}
	fix_snap(f);
}

static void fix_free(struct fix *f)
{
	int i;

	gpo_optim_free(f->opt);
	for (i = 0; i < MAX_SLOTS; i++)
		free(f->data[i]);
	memset(f, 0, sizeof(*f));
}

/*
 * Leave a message no call under test would write, so that a call that
 * fails without a message of its own is caught.
 */
#define MARKER "__no_message_yet__"

static void mark(void)
{
	ck_assert_int_eq(gpo_optim_kind_parse(MARKER), -EINVAL);
}

static void check_bad(struct fix *f, const char *what, int ret, int err)
{
	const char *msg = gpo_errmsg();

	ck_assert_msg(ret == err, "%s: %s returned %d, want %d (%s)",
		      f ? f->id : "-", what, ret, err, msg);
	ck_assert_msg(msg && *msg && !strstr(msg, MARKER),
		      "%s: %s failed without a message of its own",
		      f ? f->id : "-", what);
	if (f)
		fix_same(f, what);
}

/* BAD(f, err, call): the call fails with err, says why, changes nothing */
#define BAD(f, err, call)				\
	do {						\
		mark();					\
		check_bad((f), #call, (call), (err));	\
	} while (0)

static int devices(struct gpo_device **devs)
{
	int n = tu_devices(devs, TU_MAX_DEVICES);

	ck_assert_int_ge(n, 1);
	return n;
}

/* ---- hyperparameters ----------------------------------------------------- */

START_TEST(test_unknown_option_is_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, k;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		for (k = 0; k < GPO_OPTIM_KINDS; k++) {
			fix_init(&f, devs[d], k, NULL, 1);
			BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "learning_rate",
						       0.1));
			BAD(&f, -EINVAL, gpo_optim_set(f.opt, -1, "LR", 0.1));
			BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "", 0.1));
			BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "lr=1", 0.1));
			BAD(&f, -EINVAL, gpo_optim_get(f.opt, 0, "nope",
						       &(double){ 0 }));
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0,
							     "momentun=0.9"));
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, -1,
							     "lr=0.5 nope=1"));
			fix_free(&f);
		}
	}
}
END_TEST

/* keys torch does not give this optimizer */
START_TEST(test_option_of_another_optimizer_is_einval)
{
	static const char *const foreign[GPO_OPTIM_KINDS] = {
		[GPO_SGD] = "amsgrad beta1 beta2 betas eps alpha centered lr_decay initial_accumulator_value",
		[GPO_ADAM] = "momentum dampening nesterov alpha centered lr_decay initial_accumulator_value",
		[GPO_ADAMW] = "momentum nesterov alpha centered lr_decay",
		[GPO_RMSPROP] = "beta1 beta2 betas amsgrad nesterov dampening lr_decay",
		[GPO_ADAGRAD] = "beta1 betas momentum amsgrad alpha centered",
		[GPO_LAMB] = "amsgrad momentum alpha centered lr_decay",
		[GPO_LION] = "eps amsgrad momentum alpha centered lr_decay",
	};
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, k;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		for (k = 0; k < GPO_OPTIM_KINDS; k++) {
			char keys[256], text[64], *key, *save;

			fix_init(&f, devs[d], k, NULL, 1);
			snprintf(keys, sizeof(keys), "%s", foreign[k]);
			for (key = strtok_r(keys, " ", &save); key;
			     key = strtok_r(NULL, " ", &save)) {
				snprintf(text, sizeof(text), "%s=%s", key,
					 strcmp(key, "betas") ? "0" : "0.5,0.5");
				BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0,
								     text));
				if (strcmp(key, "betas"))
					BAD(&f, -EINVAL,
					    gpo_optim_set(f.opt, 0, key, 0));
			}
			fix_free(&f);
		}
	}
}
END_TEST

START_TEST(test_out_of_range_value_is_einval)
{
	static const struct {
		enum gpo_optim_kind kind;
		const char *text;
	} cases[] = {
		{ GPO_SGD, "lr=-0.1" }, { GPO_SGD, "weight_decay=-1e-4" },
		{ GPO_SGD, "momentum=-0.5" }, { GPO_ADAM, "lr=-1e-3" },
		{ GPO_ADAM, "beta1=1" }, { GPO_ADAM, "beta1=-0.1" },
		{ GPO_ADAM, "beta2=1" }, { GPO_ADAM, "beta2=1.5" },
		{ GPO_ADAM, "betas=1,0.5" }, { GPO_ADAM, "betas=0.9,1" },
		{ GPO_ADAM, "eps=0" }, { GPO_ADAM, "eps=-1e-8" },
		{ GPO_ADAM, "weight_decay=-0.01" },
		{ GPO_ADAMW, "betas=0.9,-0.1" }, { GPO_ADAMW, "eps=0" },
		{ GPO_ADAMW, "weight_decay=-1" },
		{ GPO_RMSPROP, "alpha=-0.5" }, { GPO_RMSPROP, "eps=0" },
		{ GPO_RMSPROP, "momentum=-0.1" },
		{ GPO_RMSPROP, "weight_decay=-0.1" },
		{ GPO_ADAGRAD, "lr_decay=-0.1" },
		{ GPO_ADAGRAD, "initial_accumulator_value=-1" },
		{ GPO_ADAGRAD, "eps=-1" }, { GPO_LAMB, "beta1=1" },
		{ GPO_LAMB, "eps=0" }, { GPO_LION, "beta2=1" },
		{ GPO_LION, "lr=-1" }, { GPO_LION, "weight_decay=-1" },
		{ GPO_ADAM, "grad_scale=0" }, { GPO_SGD, "grad_scale=-1" },
		{ GPO_LION, "clip_norm=-1" },
	};
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	size_t i;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char key[64], *eq;

			fix_init(&f, devs[d], cases[i].kind, NULL, 1);
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0,
							     cases[i].text));
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, -1,
							     cases[i].text));
			snprintf(key, sizeof(key), "%s", cases[i].text);
			eq = strchr(key, '=');
			*eq = '\0';
			if (!strchr(eq + 1, ','))
				BAD(&f, -EINVAL,
				    gpo_optim_set(f.opt, 0, key,
						  atof(eq + 1)));
			fix_free(&f);
		}
	}
}
END_TEST

/* torch: "Nesterov momentum requires a momentum and zero dampening" */
START_TEST(test_nesterov_needs_momentum_and_no_dampening)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_SGD, NULL, 1);
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "nesterov", 1));
		BAD(&f, -EINVAL, gpo_optim_configure(f.opt, -1,
				"momentum=0.9 dampening=0.1 nesterov=1"));
		fix_free(&f);

		/* in one call, the combination is judged as a whole */
		fix_init(&f, devs[d], GPO_SGD, "momentum=0.9 nesterov=1", 1);
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "momentum", 0));
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, -1, "dampening", 0.1));
		BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0,
						     "dampening=0.5"));
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_non_finite_value_is_einval)
{
	static const char *const texts[] = {
		"lr=inf", "lr=nan", "lr=-inf", "weight_decay=1e999",
		"eps=NaN", "betas=nan,0.9", "clip_norm=inf",
		"grad_scale=inf",
	};
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	size_t i;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "lr", NAN));
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "lr", INFINITY));
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, -1, "eps", -INFINITY));
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "grad_scale",
					       INFINITY));
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, "clip_norm", NAN));
		for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0,
							     texts[i]));
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_malformed_configure_is_einval)
{
	static const char *const texts[] = {
		"lr", "=0.1", "lr=", "lr=abc", "lr=0.1x", "lr= 0.1",
		"lr=0x", "lr=1e", "amsgrad=yes", "amsgrad=2",
		"amsgrad=0.5", "amsgrad=", "betas=0.9", "betas=0.9,",
		"betas=,0.9", "betas=0.9,abc", "betas=0.9;0.99",
		/* a bad setting after a good one: neither applies */
		"lr=0.5 eps=abc", "lr=0.5;amsgrad=maybe", "lr=0.5\nweight_decay",
	};
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	size_t i;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0,
							     texts[i]));
			BAD(&f, -EINVAL, gpo_optim_configure(f.opt, -1,
							     texts[i]));
		}
		/* empty texts are fine and change nothing */
		ck_assert_int_eq(gpo_optim_configure(f.opt, 0, ""), 0);
		ck_assert_int_eq(gpo_optim_configure(f.opt, 0, " ;\n\t"), 0);
		fix_same(&f, "an empty configure");
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_bad_group_is_enoent)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	struct fix f;
	double v;
	char buf[64];

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_SGD, NULL, 1);
		BAD(&f, -ENOENT, gpo_optim_set(f.opt, 1, "lr", 0.1));
		BAD(&f, -ENOENT, gpo_optim_set(f.opt, -2, "lr", 0.1));
		BAD(&f, -ENOENT, gpo_optim_configure(f.opt, 7, "lr=0.1"));
		BAD(&f, -ENOENT, gpo_optim_get(f.opt, 1, "lr", &v));
		BAD(&f, -ENOENT, gpo_optim_describe(f.opt, 3, buf,
						    sizeof(buf)));
		fix_free(&f);
	}
}
END_TEST

/* ---- reads and writes ---------------------------------------------------- */

START_TEST(test_wrong_size_read_write_is_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	float buf[80];
	struct fix f;

	tu_poison(buf, 80);
	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "param", NULL, buf,
						 71 * 4));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "param", NULL, buf,
						 73 * 4));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "param", NULL, buf,
						 72 * 4 - 1));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "grad", NULL, buf, 0));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "param", "w", buf,
						 36 * 4));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "exp_avg", "b", buf,
						 37 * 4));
		BAD(&f, -EINVAL, gpo_optim_read(f.opt, "param", NULL, buf,
						71 * 4));
		BAD(&f, -EINVAL, gpo_optim_read(f.opt, "exp_avg_sq", "w", buf,
						38 * 4));
		BAD(&f, -EINVAL, gpo_optim_read(f.opt, "param", "b", buf,
						37 * 4));
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_unknown_tensor_or_slot_is_enoent)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	struct gpo_tensor_info info;
	int ndev = devices(devs), d;
	float buf[72];
	struct fix f;

	tu_poison(buf, 72);
	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_SGD, NULL, 1);
		BAD(&f, -ENOENT, gpo_optim_write(f.opt, "param", "nope", buf,
						 37 * 4));
		BAD(&f, -ENOENT, gpo_optim_read(f.opt, "grad", "W", buf,
						37 * 4));
		BAD(&f, -ENOENT, gpo_optim_write(f.opt, "nope", "w", buf,
						 37 * 4));
		BAD(&f, -ENOENT, gpo_optim_read(f.opt, "params", NULL, buf,
						72 * 4));
		/* a slot of another optimizer */
		BAD(&f, -ENOENT, gpo_optim_read(f.opt, "exp_avg", NULL, buf,
						72 * 4));
		BAD(&f, -ENOENT, gpo_optim_write(f.opt, "sum", "w", buf,
						 37 * 4));
		BAD(&f, -ENOENT, gpo_optim_find_tensor(f.opt, "nope"));
		BAD(&f, -ENOENT, gpo_optim_tensor_info(f.opt, 2, &info));
		BAD(&f, -ENOENT, gpo_optim_tensor_info(f.opt, -1, &info));
		fix_free(&f);

		/* adam without amsgrad keeps no max_exp_avg_sq */
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		BAD(&f, -ENOENT, gpo_optim_read(f.opt, "max_exp_avg_sq", NULL,
						buf, 72 * 4));
		BAD(&f, -ENOENT, gpo_optim_read(f.opt, "momentum_buffer", "w",
						buf, 37 * 4));
		fix_free(&f);
	}
}
END_TEST

/* ---- tensors ------------------------------------------------------------- */

START_TEST(test_bad_tensor_name_is_einval)
{
	static const char *const names[] = {
		"", "a/b", "a b", "a\tb", "x\n", "param/w", "caf\xc3\xa9",
		"a;b", "a=b", "(x)",
		/* 64 characters: one too many */
		"a123456789b123456789c123456789d123456789e123456789f123456789g123",
	};
	static const char ok63[] =
		"a123456789b123456789c123456789d123456789e123456789f123456789g12";
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	uint64_t shape = 3;
	size_t i;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_SGD, NULL, 0);
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, names[i],
							      1, &shape, 0));
		ck_assert_int_eq(gpo_optim_add_tensor(f.opt, ok63, 1, &shape,
						      0), 2);
		ck_assert_int_eq(gpo_optim_add_tensor(f.opt, "A.b:c-d_9", 1,
						      &shape, 0), 3);
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_duplicate_tensor_name_is_eexist)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	uint64_t shape[2] = { 2, 3 };
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAM, NULL, 0);
		ck_assert_int_eq(gpo_optim_add_group(f.opt), 1);
		fix_snap(&f);
		BAD(&f, -EEXIST, gpo_optim_add_tensor(f.opt, "w", 1, shape, 0));
		BAD(&f, -EEXIST, gpo_optim_add_tensor(f.opt, "b", 2, shape, 1));
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_bad_shape_is_einval_or_eoverflow)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	uint64_t zero[2] = { 3, 0 }, nine[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	uint64_t big[2] = { 1ull << 20, 1ull << 20 }, huge = 1ull << 33;
	uint64_t max = UINT64_MAX, at32 = 1ull << 32, half = 1ull << 31;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_SGD, NULL, 0);
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 0, nine, 0));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", -1, nine, 0));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 9, nine, 0));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 1, &zero[1],
						      0));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 2, zero, 0));
		BAD(&f, -EOVERFLOW, gpo_optim_add_tensor(f.opt, "x", 1, &huge,
							 0));
		BAD(&f, -EOVERFLOW, gpo_optim_add_tensor(f.opt, "x", 1, &max,
							 0));
		BAD(&f, -EOVERFLOW, gpo_optim_add_tensor(f.opt, "x", 2, big,
							 0));
		BAD(&f, -EOVERFLOW, gpo_optim_add_tensor(f.opt, "x", 1, &at32,
							 0));
		/* 8 dimensions are fine */
		ck_assert_int_eq(gpo_optim_add_tensor(f.opt, "eight", 8, nine,
						      0), 2);
		/* 2^31 fits alone (nothing is allocated yet); twice not */
		ck_assert_int_eq(gpo_optim_add_tensor(f.opt, "h1", 1, &half,
						      0), 3);
		fix_snap(&f);
		BAD(&f, -EOVERFLOW, gpo_optim_add_tensor(f.opt, "h2", 1, &half,
							 0));
		fix_free(&f);
	}
}
END_TEST

START_TEST(test_bad_group_in_add_tensor_is_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	uint64_t shape = 5;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_RMSPROP, NULL, 0);
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 1, &shape,
						      1));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 1, &shape,
						      -1));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 1, &shape,
						      99));
		fix_free(&f);
	}
}
END_TEST

/* "Buffers are allocated on the first read, write or step" */
START_TEST(test_add_after_first_use_is_ebusy)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, use;
	uint64_t shape = 5;
	float buf[72];
	struct fix f;

	tu_poison(buf, 72);
	for (d = 0; d < ndev; d++) {
		for (use = 0; use < 3; use++) {
			fix_init(&f, devs[d], GPO_LAMB, NULL, 0);
			if (use == 0)
				ck_assert_int_eq(gpo_optim_read(f.opt, "param",
								"w", buf,
								37 * 4), 0);
			else if (use == 1)
				ck_assert_int_eq(gpo_optim_write(f.opt, "grad",
								 NULL, buf,
								 72 * 4), 0);
			else
				ck_assert_int_eq(gpo_optim_step(f.opt, NULL),
						 0);
			f.allocated = 1;
			fix_snap(&f);
			BAD(&f, -EBUSY, gpo_optim_add_tensor(f.opt, "x", 1,
							     &shape, 0));
			BAD(&f, -EBUSY, gpo_optim_add_group(f.opt));
			fix_free(&f);
		}
	}
}
END_TEST

/*
 * gpo_optim_bind's checks that need no buffer of the caller's, on every
 * device, before and after the first use: each fails with its errno and
 * a message and binds nothing (the optimizer then allocates its own)
 */
START_TEST(test_bind_bad_buffers_are_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, use;
	struct gpo_extbuf eb;
	float x[72];
	struct fix f;

	for (d = 0; d < ndev; d++) {
		for (use = 0; use < 2; use++) {
			fix_init(&f, devs[d], GPO_ADAMW, NULL, use);
			/* 37 + 35 elements, one group: 288 bytes */
			ck_assert_int_eq(gpo_optim_buffer_bytes(f.opt, "param"),
					 288);
			ck_assert_int_eq(gpo_optim_buffer_bytes(f.opt, "grad"),
					 288);
			ck_assert_int_eq(gpo_optim_buffer_bytes(f.opt, "nope"),
					 0);
			ck_assert_int_eq(gpo_optim_buffer_bytes(NULL, "grad"),
					 0);
			memset(&eb, 0, sizeof(eb));
			eb.kind = GPO_EXTBUF_CL_MEM;
			eb.size = 4096;
			eb.dtype = GPO_F32;
			BAD(&f, -EINVAL, gpo_optim_bind(NULL, "param", &eb));
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, NULL, &eb));
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, "param", NULL));
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, "exp_avg", &eb));
			eb.dtype = GPO_BF16;
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, "grad", &eb));
			eb.dtype = GPO_F32;
			eb.offset = 100;
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, "grad", &eb));
			eb.offset = 3840;	/* 256 bytes left of 4096 */
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, "grad", &eb));
			eb.offset = 8192;
			BAD(&f, -EINVAL, gpo_optim_bind(f.opt, "grad", &eb));
			/* right sizes, but no such buffer (or no import) */
			eb.offset = 0;
			BAD(&f, use ? -EBUSY : -EINVAL,
			    gpo_optim_bind(f.opt, "param", &eb));
			eb.kind = GPO_EXTBUF_VK_BUFFER;
			BAD(&f, use ? -EBUSY : -EINVAL,
			    gpo_optim_bind(f.opt, "param", &eb));
			/* nothing is bound: the optimizer's own buffers work */
			tu_fill(x, 72, &(uint64_t){ 7 }, -1, 1);
			ck_assert_int_eq(gpo_optim_write(f.opt, "grad", NULL, x,
							 sizeof(x)), 0);
			ck_assert_int_eq(gpo_optim_step(f.opt, NULL), 0);
			fix_free(&f);
		}
	}
}
END_TEST

START_TEST(test_objective_errors_are_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	double loss;
	struct gpo_optim *empty;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		BAD(&f, -EINVAL, gpo_optim_objective(f.opt, "sphere", &loss));
		BAD(&f, -EINVAL, gpo_optim_objective(f.opt, "", &loss));
		fix_free(&f);

		fix_init(&f, devs[d], GPO_ADAM, NULL, 0);
		ck_assert_int_eq(gpo_optim_add_group(f.opt), 1);
		fix_snap(&f);
		BAD(&f, -EINVAL, gpo_optim_objective(f.opt, "quadratic",
						     &loss));
		fix_free(&f);

		/* nothing to step or evaluate without tensors */
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &empty), 0);
		BAD(NULL, -EINVAL, gpo_optim_step(empty, NULL));
		BAD(NULL, -EINVAL, gpo_optim_objective(empty, "quadratic",
						       &loss));
		gpo_optim_free(empty);
	}
}
END_TEST

START_TEST(test_bad_kind_is_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	struct gpo_optim *opt = NULL;

	BAD(NULL, -EINVAL, gpo_optim_kind_parse("Adam"));
	BAD(NULL, -EINVAL, gpo_optim_kind_parse(""));
	BAD(NULL, -EINVAL, gpo_optim_kind_parse("adamax"));
	ck_assert_str_eq(gpo_optim_kind_name(GPO_OPTIM_KINDS), "unknown");
	for (d = 0; d < ndev; d++) {
		BAD(NULL, -EINVAL, gpo_optim_new(devs[d], GPO_OPTIM_KINDS,
						 &opt));
		BAD(NULL, -EINVAL, gpo_optim_new(devs[d], -1, &opt));
		ck_assert_ptr_null(opt);
	}
}
END_TEST

/* ---- NULL pointers ------------------------------------------------------- */

START_TEST(test_null_pointers_are_einval)
{
	struct gpo_device *devs[TU_MAX_DEVICES], *dev;
	struct gpo_ctx *ctx = tu_ctx();
	int ndev = devices(devs), d;
	struct gpo_device_info dinfo;
	struct gpo_tensor_info tinfo;
	struct gpo_pool_stats st;
	struct gpo_step_info info;
	uint64_t shape = 3;
	double v, loss;
	float buf[72];
	char text[64];
	struct fix f;

	tu_poison(buf, 72);
	BAD(NULL, -EINVAL, gpo_ctx_new(NULL, 0));
	BAD(NULL, -EINVAL, gpo_device_count(NULL));
	BAD(NULL, -EINVAL, gpo_device_info(NULL, 0, &dinfo));
	BAD(NULL, -EINVAL, gpo_device_info(ctx, 0, NULL));
	BAD(NULL, -EINVAL, gpo_device_get(NULL, 0, &dev));
	BAD(NULL, -EINVAL, gpo_device_get(ctx, 0, NULL));
	BAD(NULL, -EINVAL, gpo_device_select(NULL, "cpu", &dev));
	BAD(NULL, -EINVAL, gpo_device_select(ctx, "cpu", NULL));
	BAD(NULL, -EINVAL, gpo_device_enable(NULL, 0, 1));
	BAD(NULL, -EINVAL, gpo_device_index(NULL));
	BAD(NULL, -EINVAL, gpo_pool_stats(NULL, &st));
	BAD(NULL, -EINVAL, gpo_pool_set_limit(NULL, UINT64_MAX));
	BAD(NULL, -EINVAL, gpo_pool_trim(NULL));
	BAD(NULL, -EINVAL, gpo_optim_kind_parse(NULL));
	BAD(NULL, -EINVAL, gpo_optim_add_group(NULL));
	BAD(NULL, -EINVAL, gpo_optim_add_tensor(NULL, "x", 1, &shape, 0));
	BAD(NULL, -EINVAL, gpo_optim_tensor_count(NULL));
	BAD(NULL, -EINVAL, gpo_optim_tensor_info(NULL, 0, &tinfo));
	BAD(NULL, -EINVAL, gpo_optim_find_tensor(NULL, "w"));
	BAD(NULL, -EINVAL, gpo_optim_set(NULL, 0, "lr", 0.1));
	BAD(NULL, -EINVAL, gpo_optim_get(NULL, 0, "lr", &v));
	BAD(NULL, -EINVAL, gpo_optim_configure(NULL, 0, "lr=0.1"));
	BAD(NULL, -EINVAL, gpo_optim_describe(NULL, 0, text, sizeof(text)));
	BAD(NULL, -EINVAL, gpo_optim_slot_count(NULL));
	BAD(NULL, -EINVAL, gpo_optim_write(NULL, "param", NULL, buf, 4));
	BAD(NULL, -EINVAL, gpo_optim_read(NULL, "param", NULL, buf, 4));
	BAD(NULL, -EINVAL, gpo_optim_step(NULL, &info));
	BAD(NULL, -EINVAL, gpo_optim_set_step(NULL, 1));
	BAD(NULL, -EINVAL, gpo_optim_reset(NULL));
	BAD(NULL, -EINVAL, gpo_optim_objective(NULL, "quadratic", &loss));
	BAD(NULL, -EINVAL, gpo_optim_attach_sched(NULL, NULL));
	BAD(NULL, -EINVAL, gpo_optim_set_metric(NULL, 1.0));
	/* the calls that cannot fail take NULL quietly */
	ck_assert_uint_eq(gpo_optim_numel(NULL), 0);
	ck_assert_uint_eq(gpo_optim_steps_done(NULL), 0);
	ck_assert_uint_eq(gpo_optim_steps_skipped(NULL), 0);
	ck_assert_ptr_null(gpo_optim_slot_name(NULL, 0));
	ck_assert_ptr_nonnull(gpo_ctx_probe_log(NULL));
	gpo_optim_free(NULL);
	gpo_ctx_free(NULL);

	for (d = 0; d < ndev; d++) {
		BAD(NULL, -EINVAL, gpo_pool_stats(devs[d], NULL));
		BAD(NULL, -EINVAL, gpo_optim_new(devs[d], GPO_SGD, NULL));
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		BAD(&f, -EINVAL, gpo_optim_tensor_info(f.opt, 0, NULL));
		BAD(&f, -EINVAL, gpo_optim_find_tensor(f.opt, NULL));
		BAD(&f, -EINVAL, gpo_optim_set(f.opt, 0, NULL, 0.1));
		BAD(&f, -EINVAL, gpo_optim_get(f.opt, 0, NULL, &v));
		BAD(&f, -EINVAL, gpo_optim_get(f.opt, 0, "lr", NULL));
		BAD(&f, -EINVAL, gpo_optim_configure(f.opt, 0, NULL));
		BAD(&f, -EINVAL, gpo_optim_describe(f.opt, 0, NULL, 16));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, NULL, NULL, buf,
						 72 * 4));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "param", NULL, NULL,
						 72 * 4));
		BAD(&f, -EINVAL, gpo_optim_write(f.opt, "param", "w", NULL,
						 37 * 4));
		BAD(&f, -EINVAL, gpo_optim_read(f.opt, NULL, "w", buf, 37 * 4));
		BAD(&f, -EINVAL, gpo_optim_read(f.opt, "exp_avg", NULL, NULL,
						72 * 4));
		BAD(&f, -EINVAL, gpo_optim_objective(f.opt, NULL, &loss));
		BAD(&f, -EINVAL, gpo_optim_objective(f.opt, "quadratic",
						     NULL));
		fix_free(&f);

		fix_init(&f, devs[d], GPO_SGD, NULL, 0);
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, NULL, 1, &shape,
						      0));
		BAD(&f, -EINVAL, gpo_optim_add_tensor(f.opt, "x", 1, NULL, 0));
		fix_free(&f);
	}
}
END_TEST

/* a failing group is named once, before the callee's own words */
START_TEST(test_group_error_names_the_group_once)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, ret;
	char msg[512];
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_SGD, NULL, 0);
		ck_assert_int_eq(gpo_optim_add_group(f.opt), 1);
		fix_snap(&f);
		mark();
		ret = gpo_optim_configure(f.opt, 1, "nesterov=1");
		snprintf(msg, sizeof(msg), "%s", gpo_errmsg());
		check_bad(&f, "configure(1, nesterov=1)", ret, -EINVAL);
		ck_assert_msg(!strncmp(msg, "group 1: ", 9) &&
			      !strstr(msg + 9, "group 1"), "%s", msg);
		ck_assert_msg(strstr(msg, "nesterov"), "%s", msg);
		fix_free(&f);
	}
}
END_TEST

/* step 2^64-1 has no next step: t would wrap to 0 and 1 - beta^0 = 0 */
START_TEST(test_set_step_without_a_next_step_is_eoverflow)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, i;
	float x[72];
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAM, NULL, 1);
		BAD(&f, -EOVERFLOW, gpo_optim_set_step(f.opt, UINT64_MAX));
		ck_assert_int_eq(gpo_optim_set_step(f.opt, UINT64_MAX - 1), 0);
		ck_assert_int_eq(gpo_optim_step(f.opt, NULL), 0);
		ck_assert_uint_eq(gpo_optim_steps_done(f.opt), UINT64_MAX);
		ck_assert_int_eq(gpo_optim_read(f.opt, "param", NULL, x,
						 sizeof(x)), 0);
		for (i = 0; i < 72; i++)
			ck_assert_msg(isfinite(x[i]), "%s: param %d is %g",
				      f.id, i, x[i]);
		fix_free(&f);
	}
}
END_TEST

/* group -1 reads what gpo_optim_set(-1) writes: the value all groups hold */
START_TEST(test_get_all_groups_needs_one_value)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, ret;
	char all[1024], g0[1024], msg[512];
	double v;
	struct fix f;

	for (d = 0; d < ndev; d++) {
		fix_init(&f, devs[d], GPO_ADAMW, NULL, 0);
		ck_assert_int_eq(gpo_optim_add_group(f.opt), 1);
		ck_assert_int_eq(gpo_optim_set(f.opt, -1, "lr", 0.25), 0);
		ck_assert_int_eq(gpo_optim_get(f.opt, -1, "lr", &v), 0);
		ck_assert(v == 0.25);
		/* alike, group -1 describes as group 0 does */
		ck_assert_int_gt(gpo_optim_describe(f.opt, -1, all,
						    sizeof(all)), 0);
		ck_assert_int_gt(gpo_optim_describe(f.opt, 0, g0,
						    sizeof(g0)), 0);
		ck_assert_str_eq(all, g0);

		ck_assert_int_eq(gpo_optim_set(f.opt, 1, "lr", 0.5), 0);
		ck_assert_int_eq(gpo_optim_set(f.opt, 1, "amsgrad", 1), 0);
		fix_snap(&f);
		mark();
		ret = gpo_optim_get(f.opt, -1, "lr", &v);
		snprintf(msg, sizeof(msg), "%s", gpo_errmsg());
		check_bad(&f, "get(-1, lr)", ret, -EINVAL);
		ck_assert_msg(strstr(msg, "groups differ"), "%s", msg);
		BAD(&f, -EINVAL, gpo_optim_get(f.opt, -1, "amsgrad", &v));
		ck_assert_int_eq(gpo_optim_get(f.opt, -1, "eps", &v), 0);
		ck_assert_int_eq(gpo_optim_get(f.opt, 1, "lr", &v), 0);
		ck_assert(v == 0.5);
		/* optimizer-wide keys are the same in every group */
		ck_assert_int_eq(gpo_optim_set(f.opt, 1, "clip_norm", 2), 0);
		ck_assert_int_eq(gpo_optim_get(f.opt, -1, "clip_norm", &v), 0);
		ck_assert(v == 2);

		/* the lines every group shares, in group 0's order */
		ck_assert_int_eq(gpo_optim_describe(f.opt, -1, NULL, 0),
				 gpo_optim_describe(f.opt, -1, all,
						    sizeof(all)));
		ck_assert_msg(!strstr(all, "lr=") && !strstr(all, "amsgrad="),
			      "%s", all);
		ck_assert_msg(strstr(all, "eps=") && strstr(all, "clip_norm=2\n") &&
			      strstr(all, "weight_decay="), "%s", all);
		fix_snap(&f);
		BAD(&f, -ENOENT, gpo_optim_get(f.opt, -2, "lr", &v));
		BAD(&f, -ENOENT, gpo_optim_describe(f.opt, -2, all,
						    sizeof(all)));
		fix_free(&f);
	}
}
END_TEST

/* the counters that cannot fail read 0 for NULL, as for a fresh optimizer */
START_TEST(test_counters_of_null_are_zero)
{
	ck_assert_uint_eq(gpo_optim_numel(NULL), 0);
	ck_assert_uint_eq(gpo_optim_steps_done(NULL), 0);
	ck_assert_uint_eq(gpo_optim_steps_skipped(NULL), 0);
	ck_assert_uint_eq(gpo_sched_last_epoch(NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api_errors");
	TCase *tc = tcase_create("errors");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_unknown_option_is_einval);
	tcase_add_test(tc, test_option_of_another_optimizer_is_einval);
	tcase_add_test(tc, test_out_of_range_value_is_einval);
	tcase_add_test(tc, test_nesterov_needs_momentum_and_no_dampening);
	tcase_add_test(tc, test_non_finite_value_is_einval);
	tcase_add_test(tc, test_malformed_configure_is_einval);
	tcase_add_test(tc, test_bad_group_is_enoent);
	tcase_add_test(tc, test_wrong_size_read_write_is_einval);
	tcase_add_test(tc, test_unknown_tensor_or_slot_is_enoent);
	tcase_add_test(tc, test_bad_tensor_name_is_einval);
	tcase_add_test(tc, test_duplicate_tensor_name_is_eexist);
	tcase_add_test(tc, test_bad_shape_is_einval_or_eoverflow);
	tcase_add_test(tc, test_bad_group_in_add_tensor_is_einval);
	tcase_add_test(tc, test_add_after_first_use_is_ebusy);
	tcase_add_test(tc, test_bind_bad_buffers_are_einval);
	tcase_add_test(tc, test_objective_errors_are_einval);
	tcase_add_test(tc, test_bad_kind_is_einval);
	tcase_add_test(tc, test_null_pointers_are_einval);
	tcase_add_test(tc, test_group_error_names_the_group_once);
	tcase_add_test(tc, test_set_step_without_a_next_step_is_eoverflow);
	tcase_add_test(tc, test_get_all_groups_needs_one_value);
	tcase_add_test(tc, test_counters_of_null_are_zero);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
