// SPDX-License-Identifier: MIT
/*
 * test_optim_async.c - gpo_optim_step_async() and gpo_optim_wait() on
 * every device: queued steps give the bytes of the same synchronous steps
 * (AdamW and other families, with and without clipping, with skipped
 * steps, with a schedule, with hyperparameters changed between steps),
 * host writes and reads after a queued step are ordered after it, several
 * threads may queue on one optimizer, and bad input is refused.
 */
#ifdef GPO_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

#define NDEV	TU_MAX_DEVICES
#define NSTEPS	7
#define NT	3

/* three tensors of odd sizes over a float4 and two groups' worth */
static const uint64_t sizes[NT] = { 61, 35, 4099 };

struct run {
	struct gpo_optim *opt;
	struct gpo_sched *sched;
	uint64_t n;
};

/* kind @kind on @dev with sizes[] and @config, params from @params */
static void run_init(struct run *r, struct gpo_device *dev,
		     enum gpo_optim_kind kind, const char *config,
		     const float *params)
{
	char name[8];
	int t;

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(gpo_optim_new(dev, kind, &r->opt), 0);
	for (t = 0; t < NT; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		ck_assert_int_ge(gpo_optim_add_tensor(r->opt, name, 1,
						      &sizes[t], 0), 0);
	}
	ck_assert_msg(!gpo_optim_configure(r->opt, -1, config), "%s: %s",
		      config, gpo_errmsg());
	r->n = gpo_optim_numel(r->opt);
	ck_assert_int_eq(gpo_optim_write(r->opt, "param", NULL, params,
					 r->n * 4), 0);
}

static void run_free(struct run *r)
{
	gpo_optim_free(r->opt);
	gpo_sched_free(r->sched);
	memset(r, 0, sizeof(*r));
}

/* assert that @a and @b hold the same bytes in param and every slot */
static void same_bytes(struct run *a, struct run *b, const char *what)
{
	float *x = malloc(a->n * 4), *y = malloc(a->n * 4);
	int i, count = gpo_optim_slot_count(a->opt);

	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(y);
	ck_assert_int_eq(count, gpo_optim_slot_count(b->opt));
	ck_assert_uint_eq(gpo_optim_steps_done(a->opt),
			  gpo_optim_steps_done(b->opt));
	ck_assert_uint_eq(gpo_optim_steps_skipped(a->opt),
			  gpo_optim_steps_skipped(b->opt));
	for (i = -1; i < count; i++) {
		const char *slot = i < 0 ? "param" :
				   gpo_optim_slot_name(a->opt, i);

		tu_poison(x, a->n);
		tu_poison(y, a->n);
		ck_assert_int_eq(gpo_optim_read(a->opt, slot, NULL, x,
						a->n * 4), 0);
		ck_assert_int_eq(gpo_optim_read(b->opt, slot, NULL, y,
						b->n * 4), 0);
		ck_assert_msg(!memcmp(x, y, a->n * 4), "%s: %s differs", what,
			      slot);
	}
	free(x);
	free(y);
}

/* what a test changes in the runs besides the kind and config */
struct variant {
	const char *sched;		/* "kind settings" or NULL */
	int bad_step;			/* gradients with an inf, 0: none */
	int lr_change_step;		/* set lr=... before it, 0: none */
	/* configure @change before step @change_step (0: none) */
	int change_step;
	const char *change;
	int change2_step;
	const char *change2;
};

static void attach_sched(struct run *r, const char *spec)
{
	char kind[32];
	const char *settings = strchr(spec, ' ');

	snprintf(kind, sizeof(kind), "%.*s", (int)(settings - spec), spec);
	ck_assert_int_eq(gpo_sched_new(kind, &r->sched), 0);
	ck_assert_msg(!gpo_sched_configure(r->sched, settings + 1), "%s: %s",
		      spec, gpo_errmsg());
	ck_assert_int_eq(gpo_optim_attach_sched(r->opt, r->sched), 0);
}

/*
 * NSTEPS steps of @kind with @config on @dev, once synchronously and once
 * queued (a new gradient written after each queued step, no wait until
 * the end): the same bytes, counts and last step's info.
 */
static void async_matches_sync(struct gpo_device *dev,
			       enum gpo_optim_kind kind, const char *config,
			       const struct variant *v, uint64_t *rng)
{
	struct gpo_step_info si, ai;
	struct run s, a;
	float *params, *grads[NSTEPS];
	char what[160];
	uint64_t n;
	int k;

	snprintf(what, sizeof(what), "%s: %s %s%s%s", tu_device_id(dev),
		 gpo_optim_kind_name(kind), config, v->sched ? " sched " : "",
		 v->sched ? v->sched : "");
	n = sizes[0] + sizes[1] + sizes[2];
	params = malloc(n * 4);
	ck_assert_ptr_nonnull(params);
	tu_fill(params, n, rng, -1, 1);
	for (k = 0; k < NSTEPS; k++) {
		grads[k] = malloc(n * 4);
		ck_assert_ptr_nonnull(grads[k]);
		tu_fill(grads[k], n, rng, -2, 2);
		if (k + 1 == v->bad_step)
			grads[k][(size_t)tu_rand(rng, 0, (double)n)] = INFINITY;
	}
	run_init(&s, dev, kind, config, params);
	run_init(&a, dev, kind, config, params);
	if (v->sched) {
		attach_sched(&s, v->sched);
		attach_sched(&a, v->sched);
	}
	for (k = 0; k < NSTEPS; k++) {
		if (k + 1 == v->lr_change_step) {
			ck_assert_int_eq(gpo_optim_set(s.opt, -1, "lr", 0.0123), 0);
			ck_assert_int_eq(gpo_optim_set(a.opt, -1, "lr", 0.0123), 0);
		}
		if (k + 1 == v->change_step || k + 1 == v->change2_step) {
			const char *c = k + 1 == v->change_step ? v->change :
							       v->change2;

			ck_assert_int_eq(gpo_optim_configure(s.opt, -1, c), 0);
			ck_assert_int_eq(gpo_optim_configure(a.opt, -1, c), 0);
		}
		ck_assert_int_eq(gpo_optim_write(s.opt, "grad", NULL, grads[k],
						 n * 4), 0);
		ck_assert_msg(!gpo_optim_step(s.opt, &si), "%s: %s", what,
			      gpo_errmsg());
		/* the write follows the queued step: it must not overtake it */
		ck_assert_int_eq(gpo_optim_write(a.opt, "grad", NULL, grads[k],
						 n * 4), 0);
		ck_assert_msg(!gpo_optim_step_async(a.opt), "%s: %s", what,
			      gpo_errmsg());
	}
	memset(&ai, 0xa5, sizeof(ai));
	ck_assert_int_eq(gpo_optim_wait(a.opt, &ai), 0);
	ck_assert_uint_eq(ai.step, si.step);
	ck_assert_uint_eq(ai.skipped_total, si.skipped_total);
	ck_assert_int_eq(ai.skipped, si.skipped);
	ck_assert_msg(ai.lr == si.lr, "%s: lr %g, sync %g", what, ai.lr,
		      si.lr);
	ck_assert_msg((isnan(ai.grad_norm) && isnan(si.grad_norm)) ||
		      ai.grad_norm == si.grad_norm,
		      "%s: grad_norm %g, sync %g", what, ai.grad_norm,
		      si.grad_norm);
	same_bytes(&s, &a, what);
	ck_assert_uint_eq(gpo_optim_steps_skipped(a.opt),
			  v->bad_step ? 1 : 0);
	run_free(&s);
	run_free(&a);
	for (k = 0; k < NSTEPS; k++)
		free(grads[k]);
	free(params);
}

static int devices(struct gpo_device **devs)
{
	int n = tu_devices(devs, NDEV);

	ck_assert_int_ge(n, 1);
	return n;
}

static void each_device(const char *tag, enum gpo_optim_kind kind,
			const char *config, const struct variant *v)
{
	static const struct variant none;
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng(tag);

	for (d = 0; d < ndev; d++)
		async_matches_sync(devs[d], kind, config, v ? v : &none, &rng);
}

START_TEST(test_async_adamw_matches_sync)
{
	each_device("async_adamw", GPO_ADAMW, "lr=0.01 weight_decay=0.1",
		    NULL);
}
END_TEST

START_TEST(test_async_adamw_clip_matches_sync)
{
	each_device("async_adamw_clip", GPO_ADAMW,
		    "lr=0.01 weight_decay=0.1 clip_norm=0.5", NULL);
}
END_TEST

START_TEST(test_async_sgd_momentum_matches_sync)
{
	each_device("async_sgd", GPO_SGD, "lr=0.05 momentum=0.9 nesterov=1",
		    NULL);
}
END_TEST

START_TEST(test_async_lion_clip_matches_sync)
{
	each_device("async_lion_clip", GPO_LION,
		    "lr=0.001 weight_decay=0.1 clip_norm=1", NULL);
}
END_TEST

START_TEST(test_async_lamb_matches_sync)
{
	each_device("async_lamb", GPO_LAMB, "lr=0.01 weight_decay=0.01",
		    NULL);
}
END_TEST

/* a skipped step among queued ones: the later steps' t is one less */
START_TEST(test_async_skipped_step_matches_sync)
{
	struct variant v = { .bad_step = 3 };

	each_device("async_skip", GPO_ADAMW,
		    "lr=0.01 check_finite=1 clip_norm=1", &v);
	each_device("async_skip_scale", GPO_SGD,
		    "lr=0.05 momentum=0.9 grad_scale=512", &v);
}
END_TEST

/* the last queued step skipped: the wait reports it */
START_TEST(test_async_skipped_last_step_reported_by_wait)
{
	struct variant v = { .bad_step = NSTEPS };

	each_device("async_skip_last", GPO_ADAM,
		    "lr=0.01 check_finite=1", &v);
}
END_TEST

/* each queued step's lr is the schedule's, as for synchronous steps */
START_TEST(test_async_schedule_matches_sync)
{
	struct variant v = { .sched = "step step_size=2 gamma=0.5" };
	struct variant w = { .sched = "cosine t_max=5 warmup_steps=2",
			     .bad_step = 2 };

	each_device("async_sched", GPO_ADAMW, "lr=0.01", &v);
	each_device("async_sched_skip", GPO_ADAMW,
		    "lr=0.01 check_finite=1", &w);
}
END_TEST

START_TEST(test_async_lr_change_between_steps_matches_sync)
{
	struct variant v = { .lr_change_step = 4 };

	each_device("async_lr", GPO_ADAMW, "lr=0.01 clip_norm=0.5", &v);
	each_device("async_lr_rms", GPO_RMSPROP,
		    "lr=0.01 momentum=0.5 centered=1", &v);
}
END_TEST

/*
 * Changes that alter the step's launches (a norm pass, a new state slot,
 * other flags) between queued steps: recorded steps are recorded again,
 * and the bytes stay those of synchronous steps.
 */
START_TEST(test_async_config_change_matches_sync)
{
	struct variant v = { .change_step = 3, .change = "clip_norm=0.5",
			     .change2_step = 5, .change2 = "amsgrad=1" };
	struct variant w = { .change_step = 2, .change = "maximize=1",
			     .change2_step = 4, .change2 = "clip_norm=0" };

	each_device("async_change", GPO_ADAM, "lr=0.01 weight_decay=0.1", &v);
	each_device("async_change_sgd", GPO_SGD,
		    "lr=0.05 momentum=0.9 clip_norm=1", &w);
}
END_TEST

/*
 * A checkpoint saved right after queued steps, one of them skipped and
 * the last one not yet settled, holds their parameters and counts: it
 * restores into a fresh optimizer as the synchronous run's state.
 */
START_TEST(test_async_checkpoint_sees_queued_steps)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d, k;
	uint64_t rng = tu_rng("async_ckpt"), n;
	const char *config = "lr=0.01 check_finite=1";
	float *params, *grads[4];
	struct run s, a, r;
	char dir[] = "/tmp/gpo-async-XXXXXX", path[64];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.safetensors", dir);
	n = sizes[0] + sizes[1] + sizes[2];
	params = malloc(n * 4);
	ck_assert_ptr_nonnull(params);
	for (k = 0; k < 4; k++) {
		grads[k] = malloc(n * 4);
		ck_assert_ptr_nonnull(grads[k]);
	}
	for (d = 0; d < ndev; d++) {
		tu_fill(params, n, &rng, -1, 1);
		for (k = 0; k < 4; k++)
			tu_fill(grads[k], n, &rng, -1, 1);
		grads[1][(size_t)tu_rand(&rng, 0, (double)n)] = NAN;
		run_init(&s, devs[d], GPO_ADAMW, config, params);
		run_init(&a, devs[d], GPO_ADAMW, config, params);
		run_init(&r, devs[d], GPO_ADAMW, config, params);
		for (k = 0; k < 4; k++) {
			ck_assert_int_eq(gpo_optim_write(s.opt, "grad", NULL,
							 grads[k], n * 4), 0);
			ck_assert_int_eq(gpo_optim_step(s.opt, NULL), 0);
			ck_assert_int_eq(gpo_optim_write(a.opt, "grad", NULL,
							 grads[k], n * 4), 0);
			ck_assert_int_eq(gpo_optim_step_async(a.opt), 0);
		}
		ck_assert_msg(!gpo_optim_save(a.opt, path, GPO_CKPT_BUFFERED),
			      "%s", gpo_errmsg());
		ck_assert_msg(!gpo_optim_restore(r.opt, path,
						 GPO_CKPT_BUFFERED),
			      "%s", gpo_errmsg());
		ck_assert_uint_eq(gpo_optim_steps_done(r.opt), 3);
		ck_assert_uint_eq(gpo_optim_steps_skipped(r.opt), 1);
		same_bytes(&s, &r, tu_device_id(devs[d]));
		ck_assert_int_eq(gpo_optim_wait(a.opt, NULL), 0);
		unlink(path);
		run_free(&s);
		run_free(&a);
		run_free(&r);
	}
	rmdir(dir);
	for (k = 0; k < 4; k++)
		free(grads[k]);
	free(params);
}
END_TEST

/* a read right after a queued step, without a wait, sees the step */
START_TEST(test_async_read_sees_queued_step)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("async_read"), n;
	struct run s, a;
	float *params, *grads, *x, *y;

	n = sizes[0] + sizes[1] + sizes[2];
	params = malloc(n * 4);
	grads = malloc(n * 4);
	x = malloc(n * 4);
	y = malloc(n * 4);
	ck_assert(params && grads && x && y);
	for (d = 0; d < ndev; d++) {
		tu_fill(params, n, &rng, -1, 1);
		tu_fill(grads, n, &rng, -1, 1);
		run_init(&s, devs[d], GPO_ADAMW, "lr=0.1 clip_norm=0.3",
			 params);
		run_init(&a, devs[d], GPO_ADAMW, "lr=0.1 clip_norm=0.3",
			 params);
		ck_assert_int_eq(gpo_optim_write(s.opt, "grad", NULL, grads,
						 n * 4), 0);
		ck_assert_int_eq(gpo_optim_write(a.opt, "grad", NULL, grads,
						 n * 4), 0);
		ck_assert_int_eq(gpo_optim_step(s.opt, NULL), 0);
		ck_assert_int_eq(gpo_optim_step_async(a.opt), 0);
		tu_poison(x, n);
		tu_poison(y, n);
		ck_assert_int_eq(gpo_optim_read(a.opt, "param", NULL, x,
						n * 4), 0);
		ck_assert_int_eq(gpo_optim_read(s.opt, "param", NULL, y,
						n * 4), 0);
		ck_assert_msg(!memcmp(x, y, n * 4), "%s: param differs",
			      tu_device_id(devs[d]));
		ck_assert_msg(memcmp(x, params, n * 4), "%s: no step seen",
			      tu_device_id(devs[d]));
		ck_assert_int_eq(gpo_optim_wait(a.opt, NULL), 0);
		run_free(&s);
		run_free(&a);
	}
	free(params);
	free(grads);
	free(x);
	free(y);
}
END_TEST

/* ---- several threads -------------------------------------------------- */

#define NTHREADS	4
#define PER_THREAD	6

static void *queue_steps(void *arg)
{
	struct gpo_optim *opt = arg;
	struct gpo_step_info info;
	long bad = 0;
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		bad += gpo_optim_step_async(opt) != 0;
		if (i % 3 == 2)
			bad += gpo_optim_wait(opt, &info) != 0;
	}
	return (void *)bad;
}

/*
 * Threads queue and wait on one optimizer whose gradients stay the same:
 * every step is alike, so whatever order the threads took, the result is
 * that of NTHREADS * PER_THREAD synchronous steps.
 */
START_TEST(test_async_threads_queue_whole_steps)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d, i;
	uint64_t rng = tu_rng("async_threads"), n;
	pthread_t th[NTHREADS];
	struct gpo_step_info info;
	struct run s, a;
	float *params, *grads;
	void *bad;

	n = sizes[0] + sizes[1] + sizes[2];
	params = malloc(n * 4);
	grads = malloc(n * 4);
	ck_assert(params && grads);
	for (d = 0; d < ndev; d++) {
		tu_fill(params, n, &rng, -1, 1);
		tu_fill(grads, n, &rng, -1, 1);
		run_init(&s, devs[d], GPO_ADAMW, "lr=0.01 clip_norm=2", params);
		run_init(&a, devs[d], GPO_ADAMW, "lr=0.01 clip_norm=2", params);
		ck_assert_int_eq(gpo_optim_write(s.opt, "grad", NULL, grads,
						 n * 4), 0);
		ck_assert_int_eq(gpo_optim_write(a.opt, "grad", NULL, grads,
						 n * 4), 0);
		for (i = 0; i < NTHREADS * PER_THREAD; i++)
			ck_assert_int_eq(gpo_optim_step(s.opt, NULL), 0);
		for (i = 0; i < NTHREADS; i++)
			ck_assert_int_eq(pthread_create(&th[i], NULL,
							queue_steps, a.opt), 0);
		for (i = 0; i < NTHREADS; i++) {
			ck_assert_int_eq(pthread_join(th[i], &bad), 0);
			ck_assert_ptr_null(bad);
		}
		ck_assert_int_eq(gpo_optim_wait(a.opt, &info), 0);
		ck_assert_uint_eq(info.step, NTHREADS * PER_THREAD);
		same_bytes(&s, &a, tu_device_id(devs[d]));
		run_free(&s);
		run_free(&a);
	}
	free(params);
	free(grads);
}
END_TEST

/* ---- the caller's OpenCL queue ------------------------------------------ */

#ifdef GPO_HAVE_OPENCL
/*
 * The cl_device_id of the first OpenCL device GPUOPT_TEST_DEVICES lets
 * tests use, matched by name (none under valgrind, which keeps to cpu:0;
 * never a driver the run leaves out, such as a GPU machine's broken PoCL)
 */
static int wanted_cl_device(cl_device_id *out)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	struct gpo_device_info info;
	int n = tu_devices(devs, TU_MAX_DEVICES), i;
	cl_platform_id plat[8];
	cl_device_id d[16];
	cl_uint np = 0, nd, p, j;
	char name[256];

	if (clGetPlatformIDs(8, plat, &np))
		return 0;
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(gpo_device_info(tu_ctx(),
						 gpo_device_index(devs[i]),
						 &info), 0);
		if (strcmp(info.backend, "opencl"))
			continue;
		for (p = 0; p < np && p < 8; p++) {
			if (clGetDeviceIDs(plat[p], CL_DEVICE_TYPE_ALL, 16, d,
					   &nd))
				continue;
			for (j = 0; j < nd && j < 16; j++) {
				memset(name, 0, sizeof(name));
				clGetDeviceInfo(d[j], CL_DEVICE_NAME,
						sizeof(name) - 1, name, NULL);
				if (!strcmp(name, info.name)) {
					*out = d[j];
					return 1;
				}
			}
		}
	}
	return 0;
}

/*
 * On a device adopted from the caller's in-order queue, with param and
 * grad bound to the caller's cl_mem, the caller's non-blocking writes of
 * each step's gradients are enqueued after the queued step before them
 * and before the next: no event, no wait until the end, and the bytes of
 * the same synchronous steps through host buffers on the same device.
 */
START_TEST(test_async_adopted_opencl_queue_orders_callers_writes)
{
	const uint64_t n = 2053;
	uint64_t rng = tu_rng("async_adopted"), bytes;
	cl_device_id d;
	cl_context context;
	cl_command_queue queue;
	cl_mem pm, gm;
	cl_int err;
	struct gpo_opencl_handles h;
	struct gpo_device *dev;
	struct gpo_extbuf eb;
	struct run s, a;
	float *params, *grads[NSTEPS], *x, *y;
	int k;

	if (!wanted_cl_device(&d)) {
		ck_assert_msg(!tu_built("opencl") ||
			      !getenv("GPUOPT_TEST_REQUIRE") ||
			      !strstr(getenv("GPUOPT_TEST_REQUIRE"), "opencl"),
			      "no OpenCL device");
		return;
	}
	context = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
	ck_assert_msg(context, "clCreateContext: %d", err);
	queue = clCreateCommandQueue(context, d, 0, &err);
	ck_assert_msg(queue, "clCreateCommandQueue: %d", err);
	h.context = context;
	h.device = d;
	h.queue = queue;
	ck_assert_msg(!gpo_device_adopt_opencl(tu_ctx(), &h, &dev), "%s",
		      gpo_errmsg());

	params = malloc(n * 4);
	x = malloc(n * 4);
	y = malloc(n * 4);
	ck_assert(params && x && y);
	tu_fill(params, n, &rng, -1, 1);
	for (k = 0; k < NSTEPS; k++) {
		grads[k] = malloc(n * 4);
		ck_assert_ptr_nonnull(grads[k]);
		tu_fill(grads[k], n, &rng, -2, 2);
	}
	/* the synchronous steps through host buffers */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(gpo_optim_new(dev, GPO_ADAMW, &s.opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(s.opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_configure(s.opt, -1,
					     "lr=0.01 clip_norm=0.5"), 0);
	s.n = n;
	ck_assert_int_eq(gpo_optim_write(s.opt, "param", NULL, params, n * 4),
			 0);
	for (k = 0; k < NSTEPS; k++) {
		ck_assert_int_eq(gpo_optim_write(s.opt, "grad", NULL, grads[k],
						 n * 4), 0);
		ck_assert_int_eq(gpo_optim_step(s.opt, NULL), 0);
	}

	/* queued steps on the caller's cl_mem, fed by the caller's queue */
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(gpo_optim_new(dev, GPO_ADAMW, &a.opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(a.opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_configure(a.opt, -1,
					     "lr=0.01 clip_norm=0.5"), 0);
	a.n = n;
	bytes = gpo_optim_buffer_bytes(a.opt, "param");
	pm = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
	ck_assert(pm);
	gm = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
	ck_assert(gm);
	ck_assert(!clEnqueueWriteBuffer(queue, pm, CL_TRUE, 0, n * 4, params,
					0, NULL, NULL));
	eb = (struct gpo_extbuf) {
		.kind = GPO_EXTBUF_CL_MEM, .handle = pm, .size = bytes,
		.offset = 0, .dtype = GPO_F32,
	};
	ck_assert_msg(!gpo_optim_bind(a.opt, "param", &eb), "%s",
		      gpo_errmsg());
	eb.handle = gm;
	ck_assert_msg(!gpo_optim_bind(a.opt, "grad", &eb), "%s",
		      gpo_errmsg());
	for (k = 0; k < NSTEPS; k++) {
		ck_assert(!clEnqueueWriteBuffer(queue, gm, CL_FALSE, 0, n * 4,
						grads[k], 0, NULL, NULL));
		ck_assert_msg(!gpo_optim_step_async(a.opt), "%s",
			      gpo_errmsg());
	}
	ck_assert_int_eq(gpo_optim_wait(a.opt, NULL), 0);
	same_bytes(&s, &a, "adopted queue");
	tu_poison(x, n);
	tu_poison(y, n);
	ck_assert(!clEnqueueReadBuffer(queue, pm, CL_TRUE, 0, n * 4, x, 0,
				       NULL, NULL));
	ck_assert_int_eq(gpo_optim_read(s.opt, "param", NULL, y, n * 4), 0);
	ck_assert_msg(!memcmp(x, y, n * 4), "the caller's cl_mem differs");

	gpo_optim_free(a.opt);
	gpo_optim_free(s.opt);
	clReleaseMemObject(pm);
	clReleaseMemObject(gm);
	for (k = 0; k < NSTEPS; k++)
		free(grads[k]);
	free(params);
	free(x);
	free(y);
	/* the device stays adopted until the test's context goes */
}
END_TEST
#endif

/* ---- edges and bad input --------------------------------------------- */

START_TEST(test_async_wait_with_nothing_queued_returns_at_once)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t rng = tu_rng("async_idle"), n;
	struct gpo_step_info info, first;
	struct run r;
	float *params;

	n = sizes[0] + sizes[1] + sizes[2];
	params = malloc(n * 4);
	ck_assert_ptr_nonnull(params);
	for (d = 0; d < ndev; d++) {
		tu_fill(params, n, &rng, -1, 1);
		run_init(&r, devs[d], GPO_ADAMW, "lr=0.01 clip_norm=1",
			 params);
		/* no step yet: counts 0, no norm */
		memset(&info, 0xa5, sizeof(info));
		ck_assert_int_eq(gpo_optim_wait(r.opt, &info), 0);
		ck_assert_uint_eq(info.step, 0);
		ck_assert_uint_eq(info.skipped_total, 0);
		ck_assert_uint_eq(info.device_ns, 0);
		ck_assert(isnan(info.grad_norm));
		ck_assert_int_eq(gpo_optim_wait(r.opt, NULL), 0);
		/* after a step: the same info again, with no device time */
		ck_assert_int_eq(gpo_optim_write(r.opt, "grad", NULL, params,
						 n * 4), 0);
		ck_assert_int_eq(gpo_optim_step_async(r.opt), 0);
		ck_assert_int_eq(gpo_optim_wait(r.opt, &first), 0);
		ck_assert_uint_eq(first.step, 1);
		ck_assert(isfinite(first.grad_norm) && first.grad_norm > 0);
		ck_assert_int_eq(gpo_optim_wait(r.opt, &info), 0);
		ck_assert_uint_eq(info.step, 1);
		ck_assert(info.grad_norm == first.grad_norm);
		ck_assert_uint_eq(info.device_ns, 0);
		run_free(&r);
	}
	free(params);
}
END_TEST

START_TEST(test_async_null_is_einval)
{
	struct gpo_step_info info;

	ck_assert_int_eq(gpo_optim_step_async(NULL), -EINVAL);
	tu_check_errmsg("gpo_optim_step_async(NULL)");
	ck_assert_int_eq(gpo_optim_wait(NULL, &info), -EINVAL);
	tu_check_errmsg("gpo_optim_wait(NULL)");
	ck_assert_int_eq(gpo_optim_wait(NULL, NULL), -EINVAL);
}
END_TEST

/* a step refused (no kernel for the dtype) queues nothing */
START_TEST(test_async_refused_step_queues_nothing)
{
	struct gpo_device *devs[NDEV];
	int ndev = devices(devs), d;
	uint64_t shape = 37;
	struct gpo_step_info info;
	struct gpo_optim *opt;

	for (d = 0; d < ndev; d++) {
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAMW, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, &shape, 0),
				 0);
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "param", GPO_F16), 0);
		ck_assert_int_eq(gpo_optim_step_async(opt), -ENOSYS);
		tu_check_errmsg("gpo_optim_step_async (f16)");
		ck_assert_int_eq(gpo_optim_wait(opt, &info), 0);
		ck_assert_uint_eq(info.step, 0);
		ck_assert_uint_eq(gpo_optim_steps_done(opt), 0);
		gpo_optim_free(opt);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_async");
	TCase *tc = tcase_create("async");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_async_adamw_matches_sync);
	tcase_add_test(tc, test_async_adamw_clip_matches_sync);
	tcase_add_test(tc, test_async_sgd_momentum_matches_sync);
	tcase_add_test(tc, test_async_lion_clip_matches_sync);
	tcase_add_test(tc, test_async_lamb_matches_sync);
	tcase_add_test(tc, test_async_skipped_step_matches_sync);
	tcase_add_test(tc, test_async_skipped_last_step_reported_by_wait);
	tcase_add_test(tc, test_async_schedule_matches_sync);
	tcase_add_test(tc, test_async_lr_change_between_steps_matches_sync);
	tcase_add_test(tc, test_async_config_change_matches_sync);
	tcase_add_test(tc, test_async_read_sees_queued_step);
	tcase_add_test(tc, test_async_checkpoint_sees_queued_steps);
	tcase_add_test(tc, test_async_threads_queue_whole_steps);
#ifdef GPO_HAVE_OPENCL
	tcase_add_test(tc,
		       test_async_adopted_opencl_queue_orders_callers_writes);
#endif
	tcase_add_test(tc, test_async_wait_with_nothing_queued_returns_at_once);
	tcase_add_test(tc, test_async_null_is_einval);
	tcase_add_test(tc, test_async_refused_step_queues_nothing);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
