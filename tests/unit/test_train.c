// SPDX-License-Identifier: MIT
/*
 * test_train.c - models trained on data against PyTorch's trajectories
 *
 * tests/data/train/ holds a slice of Fashion-MNIST and what torch 1.13 did
 * with it (gen_train_refs.py): the MLP 784x32x10 from torch's own initial
 * weights, batches of 16 in file order, 50 steps of SGD with momentum and
 * of AdamW with gradient clipping. On every device, the same model from
 * the same weights must follow: each step's loss and every final
 * parameter within 1e-4 relative. Then the bad inputs of a model and of
 * a trainer, and a checkpoint that resumes to the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "testutil.h"

#define REF_STEPS	50

/* the bytes of tensor @name of safetensors file @path, as @dtype */
static void *st_tensor(const char *path, const char *name, const char *dtype,
		       size_t *bytes)
{
	FILE *f = fopen(path, "rb");
	uint64_t hlen;
	char *hdr;
	json_t *root, *t;
	json_error_t jerr;
	size_t lo, hi;
	void *data;

	ck_assert_msg(f, "%s: cannot open", path);
	ck_assert(fread(&hlen, 8, 1, f) == 1 && hlen < (1u << 20));
	hdr = calloc(1, hlen + 1);
	ck_assert(hdr && fread(hdr, 1, hlen, f) == hlen);
	root = json_loads(hdr, 0, &jerr);
	ck_assert_msg(root, "%s: header: %s", path, jerr.text);
	t = json_object_get(root, name);
	ck_assert_msg(t, "%s has no tensor %s", path, name);
	ck_assert_str_eq(json_string_value(json_object_get(t, "dtype")),
			 dtype);
	lo = json_integer_value(json_array_get(
		json_object_get(t, "data_offsets"), 0));
	hi = json_integer_value(json_array_get(
		json_object_get(t, "data_offsets"), 1));
	data = malloc(hi - lo);
	ck_assert(data);
	ck_assert(!fseek(f, 8 + hlen + lo, SEEK_SET));
	ck_assert(fread(data, 1, hi - lo, f) == hi - lo);
	*bytes = hi - lo;
	json_decref(root);
	free(hdr);
	fclose(f);
	return data;
}

static const char *const mlp_names[] = {
	"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias",
};

struct run {
	struct gpo_optim *opt;
	struct gpo_model *m;
	struct gpo_dataset *ds;
	struct gpo_train *t;
};

static void run_open(struct run *r, struct gpo_device *dev,
		     enum gpo_optim_kind kind, const char *hp,
		     const char *ref, const char *train_opts)
{
	char path[512], key[64];
	size_t i, bytes;

	ck_assert(!gpo_optim_new(dev, kind, &r->opt));
	ck_assert_msg(!gpo_optim_configure(r->opt, 0, hp), "%s",
		      gpo_errmsg());
	ck_assert_msg(!gpo_model_new(r->opt, "mlp:784x32x10", NULL, &r->m),
		      "%s", gpo_errmsg());
	if (ref) {
		tu_data_path(path, sizeof(path), ref);
		for (i = 0; i < (sizeof(mlp_names) / sizeof(mlp_names[0])); i++) {
			float *w;

			snprintf(key, sizeof(key), "init/%s", mlp_names[i]);
			w = st_tensor(path, key, "F32", &bytes);
			ck_assert_msg(!gpo_optim_write(r->opt, "param",
						       mlp_names[i], w, bytes),
				      "%s", gpo_errmsg());
			free(w);
		}
	}
	tu_data_path(path, sizeof(path), "train/fmnist-slice.safetensors");
	ck_assert_msg(!gpo_dataset_open(path, 0, &r->ds), "%s", gpo_errmsg());
	ck_assert_msg(!gpo_train_new(r->m, r->ds, train_opts, &r->t), "%s",
		      gpo_errmsg());
}

static void run_close(struct run *r)
{
	gpo_train_free(r->t);
	gpo_dataset_free(r->ds);
	gpo_model_free(r->m);
	gpo_optim_free(r->opt);
}

static void follow_torch(enum gpo_optim_kind kind, const char *hp,
			 const char *ref)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	char path[512], key[64];

	tu_data_path(path, sizeof(path), ref);
	for (d = 0; d < ndev; d++) {
		struct gpo_train_result res;
		struct run r;
		size_t bytes, i, j;
		double *loss = st_tensor(path, "loss", "F64", &bytes);
		double worst = 0;

		ck_assert_uint_eq(bytes, REF_STEPS * sizeof(double));
		run_open(&r, devs[d], kind, hp, ref,
			 "batch_size=16 shuffle=0");
		for (i = 0; i < REF_STEPS; i++) {
			ck_assert_msg(!gpo_train_step(r.t, &res), "%s: %s",
				      tu_device_id(devs[d]), gpo_errmsg());
			ck_assert_msg(fabs(res.loss - loss[i]) <=
				      1e-4 * fabs(loss[i]),
				      "%s: %s step %zu: loss %.9g, torch %.9g",
				      tu_device_id(devs[d]), ref, i + 1,
				      res.loss, loss[i]);
		}
		for (i = 0; i < (sizeof(mlp_names) / sizeof(mlp_names[0])); i++) {
			float *want, *got;
			double scale = 0;

			snprintf(key, sizeof(key), "final/%s", mlp_names[i]);
			want = st_tensor(path, key, "F32", &bytes);
			got = malloc(bytes);
			ck_assert(got);
			tu_poison(got, bytes / 4);
			ck_assert(!gpo_optim_read(r.opt, "param", mlp_names[i],
						  got, bytes));
			for (j = 0; j < bytes / 4; j++)
				scale = fmax(scale, fabs(want[j]));
			/*
			 * 1e-4 of each value, and of a hundredth of the
			 * tensor's largest for values that pass near 0
			 */
			for (j = 0; j < bytes / 4; j++) {
				double e = fabs((double)got[j] - want[j]);
				double tol = 1e-4 * (fabs(want[j]) +
						     1e-2 * scale);

				worst = fmax(worst, e / tol);
				ck_assert_msg(e <= tol,
					      "%s: %s %s[%zu]: %.9g, torch %.9g",
					      tu_device_id(devs[d]), ref,
					      mlp_names[i], j, got[j],
					      want[j]);
			}
			free(want);
			free(got);
		}
		fprintf(stderr, "%s: %s: worst parameter at %.2f of the tolerance\n",
			tu_device_id(devs[d]), ref, worst);
		run_close(&r);
		free(loss);
	}
}

START_TEST(test_mlp_sgd_momentum_follows_torch)
{
	follow_torch(GPO_SGD, "lr=0.05 momentum=0.9",
		     "train/mlp_sgd.safetensors");
}
END_TEST

START_TEST(test_mlp_adamw_clipped_follows_torch)
{
	follow_torch(GPO_ADAMW, "lr=0.001 weight_decay=0.01 clip_norm=1.0",
		     "train/mlp_adamw.safetensors");
}
END_TEST

static void read_params(struct gpo_optim *opt, float *out, size_t n)
{
	ck_assert_uint_eq(gpo_optim_numel(opt), n);
	ck_assert(!gpo_optim_read(opt, "param", NULL, out, n * 4));
}

/*
 * A checkpoint at step 10 of 20, restored into a fresh optimizer, model
 * and trainer, continues to the same bytes as the run that went on: the
 * data position (across an epoch's reshuffle) comes back with the step.
 */
START_TEST(test_checkpoint_resumes_same_bytes)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, i;
	const char *opts = "batch_size=64 shuffle=1 seed=7";
	char path[] = "/tmp/gpuopt-train-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (d = 0; d < ndev; d++) {
		struct run a, b;
		size_t n;
		float *pa, *pb;

		run_open(&a, devs[d], GPO_ADAMW, "lr=0.002", NULL, opts);
		ck_assert_uint_eq(gpo_train_steps_per_epoch(a.t), 12);
		for (i = 0; i < 10; i++)
			ck_assert(!gpo_train_step(a.t, NULL));
		ck_assert_msg(!gpo_optim_save(a.opt, path, 0), "%s",
			      gpo_errmsg());
		for (i = 0; i < 10; i++)
			ck_assert(!gpo_train_step(a.t, NULL));

		run_open(&b, devs[d], GPO_ADAMW, "lr=0.002", NULL, opts);
		ck_assert_msg(!gpo_optim_restore(b.opt, path, 0), "%s",
			      gpo_errmsg());
		for (i = 0; i < 10; i++)
			ck_assert(!gpo_train_step(b.t, NULL));
		n = gpo_optim_numel(a.opt);
		pa = malloc(n * 4);
		pb = malloc(n * 4);
		ck_assert(pa && pb);
		read_params(a.opt, pa, n);
		read_params(b.opt, pb, n);
		ck_assert_msg(!memcmp(pa, pb, n * 4),
			      "%s: the resumed run differs", tu_device_id(devs[d]));
		free(pa);
		free(pb);
		run_close(&a);
		run_close(&b);
	}
	unlink(path);
}
END_TEST

/*
 * A dataset that does not fit the pool: batches go from host memory, and
 * the run is the same, bit for bit, as with the data on the device.
 */
START_TEST(test_dataset_beyond_the_pool_same_bytes)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, i;
	const char *opts = "batch_size=32 shuffle=1 seed=5";

	for (d = 0; d < ndev; d++) {
		struct gpo_pool_stats st;
		struct gpo_device *small;
		struct gpo_ctx *ctx;
		struct run a, b;
		size_t n;
		float *pa, *pb;

		run_open(&a, devs[d], GPO_SGD, "lr=0.05 momentum=0.9", NULL,
			 opts);
		for (i = 0; i < 30; i++)
			ck_assert(!gpo_train_step(a.t, NULL));
		/*
		 * the same device in a context of its own, its pool held to
		 * 2 MB: room for the model and its graphs, not for the 2.5 MB
		 * of training samples
		 */
		ck_assert(!gpo_ctx_new(&ctx, 0));
		ck_assert(!gpo_device_select(ctx, tu_device_id(devs[d]),
					     &small));
		ck_assert(!gpo_pool_set_limit(small, 2u << 20));
		run_open(&b, small, GPO_SGD, "lr=0.05 momentum=0.9", NULL,
			 opts);
		ck_assert(!gpo_pool_stats(small, &st));
		ck_assert_uint_lt(st.used_bytes, 800 * 784 * 4);
		for (i = 0; i < 30; i++)
			ck_assert_msg(!gpo_train_step(b.t, NULL), "%s: %s",
				      tu_device_id(devs[d]), gpo_errmsg());
		n = gpo_optim_numel(a.opt);
		pa = malloc(n * 4);
		pb = malloc(n * 4);
		ck_assert(pa && pb);
		read_params(a.opt, pa, n);
		read_params(b.opt, pb, n);
		ck_assert_msg(!memcmp(pa, pb, n * 4),
			      "%s: host-fed batches differ", tu_device_id(devs[d]));
		free(pa);
		free(pb);
		run_close(&a);
		run_close(&b);
		gpo_ctx_free(ctx);
	}
}
END_TEST

/* a trainer's evaluation: the 200 test samples, loss finite, 0..1 */
START_TEST(test_eval_covers_the_test_set)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, i;

	for (d = 0; d < ndev; d++) {
		struct gpo_train_result before, after;
		struct run r;

		/* batches of 64 for evaluation: 3 full and a rest of 8 */
		run_open(&r, devs[d], GPO_ADAMW, "lr=0.003", NULL,
			 "batch_size=32 eval_batch=64 seed=1");
		ck_assert(!gpo_train_eval(r.t, &before));
		ck_assert_uint_eq(before.samples, 200);
		for (i = 0; i < 50; i++)
			ck_assert(!gpo_train_step(r.t, NULL));
		ck_assert(!gpo_train_eval(r.t, &after));
		ck_assert(isfinite(after.loss));
		ck_assert_msg(after.loss < before.loss &&
			      after.accuracy > before.accuracy &&
			      after.accuracy > 0.5 && after.accuracy <= 1.0,
			      "%s: eval loss %g -> %g, accuracy %g -> %g",
			      tu_device_id(devs[d]), before.loss, after.loss,
			      before.accuracy, after.accuracy);
		run_close(&r);
	}
}
END_TEST

static void model_refused(struct gpo_device *dev, const char *spec,
			  const char *opts, int err)
{
	struct gpo_optim *opt;
	struct gpo_model *m = NULL;

	ck_assert(!gpo_optim_new(dev, GPO_SGD, &opt));
	ck_assert_int_eq(gpo_model_new(opt, spec, opts, &m), err);
	tu_check_errmsg(spec);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(gpo_optim_tensor_count(opt), 0);
	gpo_optim_free(opt);
}

START_TEST(test_bad_models_refused)
{
	struct gpo_device *dev;

	ck_assert(!gpo_device_select(tu_ctx(), "cpu", &dev));
	model_refused(dev, "cnn:784x10", NULL, -EINVAL);
	model_refused(dev, "mlp:784", NULL, -EINVAL);
	model_refused(dev, "mlp:784x0x10", NULL, -EINVAL);
	model_refused(dev, "mlp:784xx10", NULL, -EINVAL);
	model_refused(dev, "mlp:784x-1", NULL, -EINVAL);
	model_refused(dev, "mlp:784x10x", NULL, -EINVAL);
	model_refused(dev, "mlp:784x99999999999", NULL, -EINVAL);
	model_refused(dev, "mlp:784x10", "activation=swish", -EINVAL);
	model_refused(dev, "mlp:784x10", "loss=hinge", -EINVAL);
	model_refused(dev, "mlp:784x10", "seed=-3", -EINVAL);
	model_refused(dev, "mlp:784x10", "depth=3", -EINVAL);
}
END_TEST

/* too large for the pool: -ENOMEM, nothing kept, nothing leaked */
START_TEST(test_model_too_large_for_pool)
{
	struct gpo_pool_stats st0, st1;
	struct gpo_device *dev;

	ck_assert(!gpo_device_select(tu_ctx(), "cpu", &dev));
	ck_assert(!gpo_pool_stats(dev, &st0));
	ck_assert(!gpo_pool_set_limit(dev, 64u << 20));
	/* 16384 x 16384 floats are 1 GiB, each of params and grads */
	model_refused(dev, "mlp:16384x16384x10", NULL, -ENOMEM);
	ck_assert(!gpo_pool_set_limit(dev, UINT64_MAX));
	ck_assert(!gpo_pool_stats(dev, &st1));
	ck_assert_uint_eq(st1.used_bytes, st0.used_bytes);
}
END_TEST

static void trainer_refused(struct gpo_device *dev, const char *spec,
			    const char *opts)
{
	struct gpo_optim *opt;
	struct gpo_model *m;
	struct gpo_dataset *ds;
	struct gpo_train *t = NULL;
	char path[512];

	tu_data_path(path, sizeof(path), "train/fmnist-slice.safetensors");
	ck_assert(!gpo_dataset_open(path, 0, &ds));
	ck_assert(!gpo_optim_new(dev, GPO_SGD, &opt));
	ck_assert(!gpo_model_new(opt, spec, NULL, &m));
	ck_assert_int_eq(gpo_train_new(m, ds, opts, &t), -EINVAL);
	tu_check_errmsg(opts);
	ck_assert_ptr_null(t);
	gpo_model_free(m);
	gpo_optim_free(opt);
	gpo_dataset_free(ds);
}

START_TEST(test_bad_trainers_refused)
{
	struct gpo_device *dev;

	ck_assert(!gpo_device_select(tu_ctx(), "cpu", &dev));
	/* the slice has 784 values a sample, labels 0..9, 800 to train */
	trainer_refused(dev, "mlp:100x10", "batch_size=8");
	trainer_refused(dev, "mlp:784x5", "batch_size=8");
	trainer_refused(dev, "mlp:784x10", "batch_size=0");
	trainer_refused(dev, "mlp:784x10", "batch_size=801");
	trainer_refused(dev, "mlp:784x10", "batch_size=8 shuffle=2");
	trainer_refused(dev, "mlp:784x10", "batch_size=8 epochs=3");
	trainer_refused(dev, "mlp:784x10", "batch_size=ten");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("train");
	TCase *tc = tcase_create("train");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_mlp_sgd_momentum_follows_torch);
	tcase_add_test(tc, test_mlp_adamw_clipped_follows_torch);
	tcase_add_test(tc, test_checkpoint_resumes_same_bytes);
	tcase_add_test(tc, test_eval_covers_the_test_set);
	tcase_add_test(tc, test_dataset_beyond_the_pool_same_bytes);
	tcase_add_test(tc, test_bad_models_refused);
	tcase_add_test(tc, test_model_too_large_for_pool);
	tcase_add_test(tc, test_bad_trainers_refused);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
