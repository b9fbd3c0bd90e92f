// SPDX-License-Identifier: MIT
/*
 * test_interop_opencl.c - the caller's own OpenCL objects: a context,
 * device and queue the test makes, adopted with gpo_device_adopt_opencl(),
 * and its cl_mem buffers bound as an optimizer's parameters and gradients
 * with gpo_optim_bind(). Steps on them give the same bytes as the same
 * steps on the device gpuopt opened itself; misuse is refused with
 * -EINVAL or -EBUSY and a message, and changes nothing (a valid call
 * afterwards works); references are balanced (the caller's objects are
 * back to their own counts after gpo_ctx_free()); a cl_mem the caller
 * released while bound lives until gpo_optim_free(); reads, writes and
 * checkpoints reach the caller's memory; the adopted device shares the
 * program cache of the same device probed.
 *
 * Exits 77 when there is no OpenCL device, unless GPUOPT_TEST_REQUIRE
 * names opencl.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

#define MAX_CL		16
#define STEPS		20
#define GUARD		512	/* bytes before and after the flat buffer */
#define GUARD_BYTE	0xa5
#define CONFIG		"lr=0.01 weight_decay=0.1 amsgrad=1 clip_norm=1.5"

/* ---- the caller's side: plain OpenCL --------------------------------- */

struct cl_env {
	cl_device_id device;
	cl_context context;
	cl_command_queue queue;
	char name[128];
};

/*
 * The OpenCL devices of every platform, in the order gpuopt probes them;
 * returns the count.
 */
static int cl_devices(cl_device_id *out, int max)
{
	cl_platform_id plats[16];
	cl_uint np = 0, nd, p;
	int n = 0;

	if (clGetPlatformIDs(16, plats, &np))
		return 0;
	for (p = 0; p < np && n < max; p++) {
		nd = 0;
		if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, max - n,
				   out + n, &nd))
			continue;
		n += nd;
	}
	return n;
}

/* A context of its own and an in-order queue on @d (the caller's). */
static void env_open(struct cl_env *e, cl_device_id d,
		     cl_command_queue_properties props)
{
	cl_int err;

	memset(e, 0, sizeof(*e));
	e->device = d;
	ck_assert(!clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(e->name) - 1,
				   e->name, NULL));
	e->context = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
	ck_assert_msg(e->context, "clCreateContext: %d", err);
	e->queue = clCreateCommandQueue(e->context, d, props, &err);
	ck_assert_msg(e->queue, "clCreateCommandQueue: %d", err);
}

static void env_close(struct cl_env *e)
{
	clReleaseCommandQueue(e->queue);
	clReleaseContext(e->context);
}

static cl_uint ctx_refs(cl_context c)
{
	cl_uint n = 0;

	ck_assert(!clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof(n),
				    &n, NULL));
	return n;
}

static cl_uint queue_refs(cl_command_queue q)
{
	cl_uint n = 0;

	ck_assert(!clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT,
					 sizeof(n), &n, NULL));
	return n;
}

static cl_uint mem_refs(cl_mem m)
{
	cl_uint n = 0;

	ck_assert(!clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof(n),
				      &n, NULL));
	return n;
}

/*
 * @m's reference count once the driver has let go of it: the count can
 * include the driver's own references from commands that ran on it, which
 * an implementation may drop later and from a thread of its own (PoCL
 * under load: CI saw 2 for a moment after gpo_optim_free()). Finish @q,
 * then wait up to 5 s for the count to fall to @want; a reference kept
 * for good still shows.
 */
static cl_uint mem_refs_settled(cl_command_queue q, cl_mem m, cl_uint want)
{
	cl_uint n;
	int k;

	clFinish(q);
	for (k = 0; (n = mem_refs(m)) > want && k < 5000; k++)
		usleep(1000);
	return n;
}

static cl_mem buffer(struct cl_env *e, cl_mem_flags flags, size_t bytes)
{
	cl_int err;
	cl_mem m = clCreateBuffer(e->context, flags, bytes, NULL, &err);

	ck_assert_msg(m, "clCreateBuffer(%zu): %d", bytes, err);
	return m;
}

static void cl_write(struct cl_env *e, cl_mem m, size_t off, const void *src,
		     size_t bytes, cl_bool block)
{
	ck_assert(!clEnqueueWriteBuffer(e->queue, m, block, off, bytes, src, 0,
					NULL, NULL));
}

static void cl_read(struct cl_env *e, cl_mem m, size_t off, void *dst,
		    size_t bytes)
{
	ck_assert(!clEnqueueReadBuffer(e->queue, m, CL_TRUE, off, bytes, dst,
				       0, NULL, NULL));
}

/*
 * The gpuopt device the i-th OpenCL device is when gpuopt probes it: the
 * opencl devices of @ctx come in the same order, less those it refuses
 * (none here: every device the test adopts is one gpuopt can run on).
 */
static struct gpo_device *probed(struct gpo_ctx *ctx, int i,
				 struct gpo_device_info *info)
{
	struct gpo_device *dev;
	char id[32];

	snprintf(id, sizeof(id), "opencl:%d", i);
	ck_assert_msg(!gpo_device_select(ctx, id, &dev), "%s: %s", id,
		      gpo_errmsg());
	ck_assert(!gpo_device_info(ctx, gpo_device_index(dev), info));
	return dev;
}

/* The count of gpuopt's opencl devices in @ctx. */
static int opencl_count(struct gpo_ctx *ctx)
{
	struct gpo_device_info info;
	int i, n = 0;

	for (i = 0; i < gpo_device_count(ctx); i++)
		if (!gpo_device_info(ctx, i, &info) &&
		    !strcmp(info.backend, "opencl"))
			n++;
	return n;
}

/* ---- the optimizer ----------------------------------------------------- */

/*
 * Odd sizes drawn from @rng: two tensors in group 0, one in group 1, so
 * that the flat buffer has padding between the groups.
 */
struct layout {
	uint64_t n[3];
	uint64_t total;		/* gpo_optim_numel(): packed, no padding */
	uint64_t bytes;		/* gpo_optim_buffer_bytes() */
	uint64_t off[3];	/* tensor offsets in elements */
};

static void draw_layout(struct layout *l, uint64_t *rng)
{
	int i;

	for (i = 0; i < 3; i++)
		l->n[i] = 2 * (uint64_t)tu_rand(rng, 20, 900) + 1;
}

static struct gpo_optim *new_optim(struct gpo_device *dev, struct layout *l)
{
	struct gpo_tensor_info ti;
	struct gpo_optim *opt;
	int i;

	ck_assert_msg(!gpo_optim_new(dev, GPO_ADAMW, &opt), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	ck_assert_msg(!gpo_optim_configure(opt, -1, CONFIG), "%s",
		      gpo_errmsg());
	ck_assert(!gpo_optim_set(opt, 1, "lr", 0.003));
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "a", 1, &l->n[0], 0), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "b", 1, &l->n[1], 0), 1);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "c", 1, &l->n[2], 1), 2);
	for (i = 0; i < 3; i++) {
		ck_assert(!gpo_optim_tensor_info(opt, i, &ti));
		l->off[i] = ti.offset;
	}
	l->total = gpo_optim_numel(opt);
	l->bytes = gpo_optim_buffer_bytes(opt, "param");
	ck_assert_int_eq(gpo_optim_buffer_bytes(opt, "grad"), l->bytes);
	ck_assert(l->bytes >= 4 * (l->n[0] + l->n[1] + l->n[2]));
	return opt;
}

static const char *const names[3] = { "a", "b", "c" };

/*
 * @flat (the buffer as it lies in device memory, padding and all) packed
 * as gpo_optim_read() of the whole buffer gives it: the tensors in order.
 */
static void pack(const struct layout *l, const float *flat, float *out)
{
	int i;

	for (i = 0; i < 3; i++) {
		memcpy(out, flat + l->off[i], l->n[i] * 4);
		out += l->n[i];
	}
}

static struct gpo_extbuf extbuf(cl_mem m, uint64_t size, uint64_t off)
{
	struct gpo_extbuf eb = {
		.kind = GPO_EXTBUF_CL_MEM, .handle = m, .size = size,
		.offset = off, .dtype = GPO_F32,
	};
	return eb;
}

/*
 * The inputs of a run: first parameters and each step's gradients, per
 * tensor, fresh from @seed.
 */
struct inputs {
	float *p[3];
	float *g[STEPS][3];
};

static void draw_inputs(struct inputs *in, const struct layout *l,
			uint64_t seed)
{
	uint64_t s = seed;
	int i, k;

	for (i = 0; i < 3; i++) {
		in->p[i] = malloc(l->n[i] * 4);
		ck_assert(in->p[i]);
		tu_fill(in->p[i], l->n[i], &s, -1, 1);
	}
	for (k = 0; k < STEPS; k++)
		for (i = 0; i < 3; i++) {
			in->g[k][i] = malloc(l->n[i] * 4);
			ck_assert(in->g[k][i]);
			tu_fill(in->g[k][i], l->n[i], &s, -2, 2);
		}
}

static void free_inputs(struct inputs *in)
{
	int i, k;

	for (i = 0; i < 3; i++)
		free(in->p[i]);
	for (k = 0; k < STEPS; k++)
		for (i = 0; i < 3; i++)
			free(in->g[k][i]);
}

/* The steps through host buffers on @dev: params and exp_avg_sq out. */
static void run_plain(struct gpo_device *dev, struct layout *l,
		      const struct inputs *in, float *p, float *v)
{
	struct gpo_step_info si;
	struct gpo_optim *opt = new_optim(dev, l);
	int i, k;

	for (i = 0; i < 3; i++)
		ck_assert(!gpo_optim_write(opt, "param", names[i], in->p[i],
					   l->n[i] * 4));
	for (k = 0; k < STEPS; k++) {
		for (i = 0; i < 3; i++)
			ck_assert(!gpo_optim_write(opt, "grad", names[i],
						   in->g[k][i], l->n[i] * 4));
		ck_assert_msg(!gpo_optim_step(opt, &si), "%s", gpo_errmsg());
		ck_assert(!si.skipped);
	}
	tu_poison(p, l->total);
	tu_poison(v, l->total);
	ck_assert(!gpo_optim_read(opt, "param", NULL, p, l->total * 4));
	ck_assert(!gpo_optim_read(opt, "exp_avg_sq", NULL, v, l->total * 4));
	gpo_optim_free(opt);
}

/*
 * The same steps on @adopted with param and grad in one cl_mem of the
 * caller's, at offsets past a guard, written by the caller's own
 * non-blocking writes on its queue: gpuopt's step must come after them.
 */
static void run_bound(struct cl_env *e, struct gpo_device *adopted,
		      struct layout *l, const struct inputs *in, float *p,
		      float *v)
{
	uint64_t poff, goff, size;
	unsigned char *guard, *img;
	struct gpo_extbuf eb;
	struct gpo_optim *opt;
	float *flat;
	cl_mem m;
	int k;

	opt = new_optim(adopted, l);
	/* param at GUARD, grad past it at the next multiple of 256 */
	poff = GUARD;
	goff = (poff + l->bytes + GUARD + 255) / 256 * 256;
	size = goff + l->bytes + GUARD;
	m = buffer(e, CL_MEM_READ_WRITE, size);
	img = malloc(size);
	ck_assert(img);
	memset(img, GUARD_BYTE, size);
	/* the padding is the caller's garbage until gpuopt zeroes it */
	cl_write(e, m, 0, img, size, CL_TRUE);
	for (k = 0; k < 3; k++)
		cl_write(e, m, poff + l->off[k] * 4, in->p[k], l->n[k] * 4,
			 CL_TRUE);

	eb = extbuf(m, size, poff);
	ck_assert_msg(!gpo_optim_bind(opt, "param", &eb), "%s", gpo_errmsg());
	eb.offset = goff;
	ck_assert_msg(!gpo_optim_bind(opt, "grad", &eb), "%s", gpo_errmsg());
	ck_assert_uint_eq(mem_refs(m), 3);

	for (k = 0; k < STEPS; k++) {
		struct gpo_step_info si;
		int i;

		for (i = 0; i < 3; i++)
			cl_write(e, m, goff + l->off[i] * 4, in->g[k][i],
				 l->n[i] * 4, CL_FALSE);
		ck_assert_msg(!gpo_optim_step(opt, &si), "%s", gpo_errmsg());
		ck_assert(!si.skipped);
	}
	tu_poison(p, l->total);
	tu_poison(v, l->total);
	flat = malloc(l->bytes);
	ck_assert(flat);
	tu_poison(flat, l->bytes / 4);
	cl_read(e, m, poff, flat, l->bytes);
	pack(l, flat, p);
	free(flat);
	ck_assert(!gpo_optim_read(opt, "exp_avg_sq", NULL, v, l->total * 4));

	/* nothing outside the two flat buffers was written */
	cl_read(e, m, 0, img, size);
	guard = malloc(size);
	ck_assert(guard);
	memset(guard, GUARD_BYTE, size);
	ck_assert_msg(!memcmp(img, guard, poff), "written before param");
	ck_assert_msg(!memcmp(img + poff + l->bytes, guard,
			      goff - poff - l->bytes),
		      "written between param and grad");
	ck_assert_msg(!memcmp(img + goff + l->bytes, guard, GUARD),
		      "written after grad");
	free(guard);
	free(img);

	gpo_optim_free(opt);
	ck_assert_uint_eq(mem_refs_settled(e->queue, m, 1), 1);
	clReleaseMemObject(m);
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_interop_adopt_reports_device_and_balances_refs)
{
	cl_device_id ids[MAX_CL];
	int i, n = cl_devices(ids, MAX_CL);

	ck_assert_msg(n > 0, "no OpenCL device");
	for (i = 0; i < n; i++) {
		struct gpo_device_info info, pinfo;
		struct gpo_device *dev, *best;
		struct gpo_ctx *ctx;
		struct cl_env e;
		cl_uint cr, qr;
		int nocl, ndev;

		env_open(&e, ids[i], 0);
		cr = ctx_refs(e.context);
		qr = queue_refs(e.queue);
		ck_assert(!gpo_ctx_new(&ctx, 0));
		nocl = opencl_count(ctx);
		ndev = gpo_device_count(ctx);
		probed(ctx, i, &pinfo);
		ck_assert_msg(!gpo_device_adopt_opencl(ctx,
			&(struct gpo_opencl_handles){ e.context, e.device,
						      e.queue }, &dev),
			"%s: %s", e.name, gpo_errmsg());
		ck_assert_int_eq(gpo_device_count(ctx), ndev + 1);
		ck_assert(!gpo_device_info(ctx, gpo_device_index(dev), &info));
		printf("%s: adopted as %s: %s, driver '%s', %s\n", e.name,
		       info.id, info.name, info.driver,
		       gpo_device_type_name(info.type));
		ck_assert_str_eq(info.backend, "opencl");
		{
			char want[32];

			snprintf(want, sizeof(want), "opencl:%d", nocl);
			ck_assert_str_eq(info.id, want);
		}
		ck_assert_msg(strstr(info.driver, "adopted"), "driver '%s'",
			      info.driver);
		ck_assert_str_eq(info.name, pinfo.name);
		ck_assert_int_eq(info.type, pinfo.type);
		ck_assert_uint_eq(info.mem_total_bytes, pinfo.mem_total_bytes);
		ck_assert(ctx_refs(e.context) > cr);
		ck_assert(queue_refs(e.queue) > qr);
		/* "best" never picks it; a rescan leaves it alone */
		ck_assert(!gpo_device_select(ctx, "best", &best));
		ck_assert(best != dev);
		ck_assert(!gpo_ctx_rescan(ctx));
		ck_assert(!gpo_device_info(ctx, gpo_device_index(dev), &info));
		ck_assert(info.present && strstr(info.driver, "adopted"));
		gpo_ctx_free(ctx);
		ck_assert_uint_eq(ctx_refs(e.context), cr);
		ck_assert_uint_eq(queue_refs(e.queue), qr);
		env_close(&e);
	}
}
END_TEST

/*
 * The caller's context and queue, let go by the caller right after
 * adoption: gpuopt's references keep them, and steps still run.
 */
START_TEST(test_interop_caller_releases_context_after_adopt)
{
	cl_device_id ids[MAX_CL];
	struct gpo_device *dev;
	struct gpo_step_info si;
	struct gpo_optim *opt;
	struct gpo_ctx *ctx;
	struct layout l;
	struct cl_env e;
	uint64_t rng = tu_rng("release-ctx");
	float *p;

	ck_assert(cl_devices(ids, MAX_CL) > 0);
	env_open(&e, ids[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	ck_assert_msg(!gpo_device_adopt_opencl(ctx,
		&(struct gpo_opencl_handles){ e.context, e.device, e.queue },
		&dev), "%s", gpo_errmsg());
	env_close(&e);
	draw_layout(&l, &rng);
	opt = new_optim(dev, &l);
	p = malloc(l.total * 4);
	ck_assert(p);
	tu_fill(p, l.total, &rng, -1, 1);
	ck_assert(!gpo_optim_write(opt, "param", NULL, p, l.total * 4));
	tu_fill(p, l.total, &rng, -1, 1);
	ck_assert(!gpo_optim_write(opt, "grad", NULL, p, l.total * 4));
	ck_assert_msg(!gpo_optim_step(opt, &si), "%s", gpo_errmsg());
	ck_assert_int_eq(si.step, 1);
	free(p);
	gpo_optim_free(opt);
	gpo_ctx_free(ctx);
}
END_TEST

/* One step of a fresh optimizer on @dev, from fresh random inputs. */
static void step_once(struct gpo_device *dev, uint64_t *rng)
{
	struct gpo_optim *opt;
	struct layout l;
	float *x;

	draw_layout(&l, rng);
	opt = new_optim(dev, &l);
	x = malloc(l.total * 4);
	ck_assert(x);
	tu_fill(x, l.total, rng, -1, 1);
	ck_assert(!gpo_optim_write(opt, "grad", NULL, x, l.total * 4));
	ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
	free(x);
	gpo_optim_free(opt);
}

/*
 * The adopted device uses the disk cache of the same device probed: the
 * programs a step on the plain device stored serve the adopted one, which
 * stores nothing new.
 */
START_TEST(test_interop_adopted_shares_program_cache)
{
	char dir[64], path[4200];
	struct gpo_device_info pinfo;
	cl_device_id ids[MAX_CL];
	struct gpo_device *dev;
	struct gpo_ctx *ctx;
	struct cl_env e;
	uint64_t rng = tu_rng("cache"), key;
	int n;

	ck_assert(cl_devices(ids, MAX_CL) > 0);
	tu_cache_dir_new(dir, sizeof(dir));
	ck_assert(!gpo_ctx_new(&ctx, 0));
	step_once(probed(ctx, 0, &pinfo), &rng);
	n = tu_cache_entries(dir, "opencl", path, sizeof(path), &key);
	ck_assert_msg(n > 0, "the plain device stored no program");
	env_open(&e, ids[0], 0);
	ck_assert_msg(!gpo_device_adopt_opencl(ctx,
		&(struct gpo_opencl_handles){ e.context, e.device, e.queue },
		&dev), "%s", gpo_errmsg());
	step_once(dev, &rng);
	ck_assert_int_eq(tu_cache_entries(dir, "opencl", path, sizeof(path),
					  &key), n);
	gpo_ctx_free(ctx);
	env_close(&e);
	tu_cache_dir_remove(dir);
}
END_TEST

/*
 * On every OpenCL device: 20 AdamW steps (two groups, clipping) on the
 * caller's cl_mem give the same bytes as the same steps through host
 * buffers on the device gpuopt opened itself.
 */
START_TEST(test_interop_adamw_bound_matches_plain_device)
{
	cl_device_id ids[MAX_CL];
	int i, n = cl_devices(ids, MAX_CL);

	ck_assert(n > 0);
	for (i = 0; i < n; i++) {
		struct gpo_device_info pinfo;
		struct gpo_device *plain, *adopted;
		float *pw, *vw, *pg, *vg;
		struct gpo_ctx *ctx;
		struct inputs in;
		struct layout l;
		struct cl_env e;
		uint64_t rng = tu_rng("adamw") + i, seed;
		uint64_t j;

		env_open(&e, ids[i], 0);
		ck_assert(!gpo_ctx_new(&ctx, 0));
		plain = probed(ctx, i, &pinfo);
		if (!tu_wanted(&pinfo)) {
			gpo_ctx_free(ctx);
			env_close(&e);
			continue;
		}
		ck_assert_msg(!gpo_device_adopt_opencl(ctx,
			&(struct gpo_opencl_handles){ e.context, e.device,
						      e.queue }, &adopted),
			"%s", gpo_errmsg());
		draw_layout(&l, &rng);
		seed = rng;
		draw_inputs(&in, &l, seed);
		/* layout() needs the tensors: sized by the first new_optim */
		{
			struct gpo_optim *o = new_optim(plain, &l);

			gpo_optim_free(o);
		}
		pw = malloc(l.total * 4);
		vw = malloc(l.total * 4);
		pg = malloc(l.total * 4);
		vg = malloc(l.total * 4);
		ck_assert(pw && vw && pg && vg);
		run_plain(plain, &l, &in, pw, vw);
		run_bound(&e, adopted, &l, &in, pg, vg);
		for (j = 0; j < l.total; j++) {
			ck_assert_msg(!memcmp(&pg[j], &pw[j], 4),
				      "%s: param[%llu] = %a, plain %a",
				      pinfo.id, (unsigned long long)j,
				      (double)pg[j], (double)pw[j]);
			ck_assert_msg(!memcmp(&vg[j], &vw[j], 4),
				      "%s: exp_avg_sq[%llu] = %a, plain %a",
				      pinfo.id, (unsigned long long)j,
				      (double)vg[j], (double)vw[j]);
		}
		/* the steps moved the parameters: not a copy of the inputs */
		ck_assert(memcmp(pg + l.off[0], in.p[0], l.n[0] * 4));
		printf("%s (%s): %d AdamW steps on bound cl_mem, %llu parameters: same bytes as through host buffers\n",
		       pinfo.id, pinfo.name, STEPS,
		       (unsigned long long)(l.n[0] + l.n[1] + l.n[2]));
		free(pw);
		free(vw);
		free(pg);
		free(vg);
		free_inputs(&in);
		gpo_ctx_free(ctx);
		env_close(&e);
	}
}
END_TEST

/* expect @ret == @want with a message, e.g. after a refused call */
#define REFUSED(call, want) do {					\
	int r_ = (call);						\
	ck_assert_msg(r_ == (want), "%s: %d, want %d (%s)", #call, r_,	\
		      (want), gpo_errmsg());				\
	tu_check_errmsg(#call);						\
} while (0)

START_TEST(test_interop_adopt_misuse_refused)
{
	cl_device_id ids[MAX_CL];
	struct gpo_opencl_handles h;
	struct cl_env e, other;
	struct gpo_device *dev = NULL;
	struct gpo_ctx *ctx;
	cl_command_queue ooo;
	cl_uint cr, qr;
	cl_int err;
	int ndev, n = cl_devices(ids, MAX_CL);

	ck_assert(n > 0);
	env_open(&e, ids[0], 0);
	env_open(&other, ids[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	ndev = gpo_device_count(ctx);
	cr = ctx_refs(e.context);
	qr = queue_refs(e.queue);

	REFUSED(gpo_device_adopt_opencl(NULL, &h, &dev), -EINVAL);
	REFUSED(gpo_device_adopt_opencl(ctx, NULL, &dev), -EINVAL);
	h = (struct gpo_opencl_handles){ e.context, e.device, e.queue };
	REFUSED(gpo_device_adopt_opencl(ctx, &h, NULL), -EINVAL);
	h.context = NULL;
	REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
	h = (struct gpo_opencl_handles){ e.context, NULL, e.queue };
	REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
	h = (struct gpo_opencl_handles){ e.context, e.device, NULL };
	REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
	/* a queue of another context */
	h = (struct gpo_opencl_handles){ e.context, e.device, other.queue };
	REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
	ck_assert_msg(strstr(gpo_errmsg(), "another context"), "%s",
		      gpo_errmsg());
	h = (struct gpo_opencl_handles){ other.context, e.device, e.queue };
	REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
	/* an out-of-order queue, where the driver has them */
	ooo = clCreateCommandQueue(e.context, e.device,
				   CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
				   &err);
	if (ooo) {
		h = (struct gpo_opencl_handles){ e.context, e.device, ooo };
		REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
		ck_assert_msg(strstr(gpo_errmsg(), "out of order"), "%s",
			      gpo_errmsg());
		clReleaseCommandQueue(ooo);
	} else {
		printf("%s: no out-of-order queues (%d): case left out\n",
		       e.name, err);
	}
	/* a device of another context, where there are two devices */
	if (n > 1) {
		h = (struct gpo_opencl_handles){ e.context, ids[1], e.queue };
		REFUSED(gpo_device_adopt_opencl(ctx, &h, &dev), -EINVAL);
	}
	/* nothing was added, nothing of the caller's retained */
	ck_assert_int_eq(gpo_device_count(ctx), ndev);
	ck_assert_uint_eq(ctx_refs(e.context), cr);
	ck_assert_uint_eq(queue_refs(e.queue), qr);
	ck_assert_ptr_null(dev);

	/* and a valid call works afterwards */
	h = (struct gpo_opencl_handles){ e.context, e.device, e.queue };
	ck_assert_msg(!gpo_device_adopt_opencl(ctx, &h, &dev), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_device_count(ctx), ndev + 1);
	gpo_ctx_free(ctx);
	ck_assert_uint_eq(ctx_refs(e.context), cr);
	env_close(&other);
	env_close(&e);
}
END_TEST

START_TEST(test_interop_bind_misuse_refused)
{
	cl_device_id ids[MAX_CL];
	struct gpo_device *dev, *cpu, *plain;
	struct gpo_device_info pinfo;
	struct gpo_optim *opt, *ocpu, *oplain, *empty;
	struct gpo_extbuf eb, vk;
	struct cl_env e, other;
	struct gpo_ctx *ctx;
	struct layout l;
	uint64_t rng = tu_rng("bind-misuse"), big;
	cl_mem m, foreign, ro, small;
	float *x;

	ck_assert(cl_devices(ids, MAX_CL) > 0);
	env_open(&e, ids[0], 0);
	env_open(&other, ids[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	ck_assert(!gpo_device_select(ctx, "cpu:0", &cpu));
	plain = probed(ctx, 0, &pinfo);
	ck_assert_msg(!gpo_device_adopt_opencl(ctx,
		&(struct gpo_opencl_handles){ e.context, e.device, e.queue },
		&dev), "%s", gpo_errmsg());
	draw_layout(&l, &rng);
	opt = new_optim(dev, &l);
	big = l.bytes + 1024;
	m = buffer(&e, CL_MEM_READ_WRITE, big);
	foreign = buffer(&other, CL_MEM_READ_WRITE, big);
	ro = buffer(&e, CL_MEM_READ_ONLY, big);
	small = buffer(&e, CL_MEM_READ_WRITE, l.bytes - 4);

	eb = extbuf(m, big, 256);
	REFUSED(gpo_optim_bind(NULL, "param", &eb), -EINVAL);
	REFUSED(gpo_optim_bind(opt, NULL, &eb), -EINVAL);
	REFUSED(gpo_optim_bind(opt, "param", NULL), -EINVAL);
	REFUSED(gpo_optim_bind(opt, "exp_avg", &eb), -EINVAL);
	/* a NULL cl_mem */
	eb = extbuf(NULL, big, 0);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	/* too small for offset + bytes, as said and as it is */
	eb = extbuf(m, big, 1280);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	eb = extbuf(m, big + 4096, 1024);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	ck_assert_msg(strstr(gpo_errmsg(), "the cl_mem has"), "%s",
		      gpo_errmsg());
	eb = extbuf(small, l.bytes, 0);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	/* an offset not a multiple of 256 */
	eb = extbuf(m, big, 4);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	eb = extbuf(m, big, 128);
	REFUSED(gpo_optim_bind(opt, "grad", &eb), -EINVAL);
	/* the wrong dtype */
	eb = extbuf(m, big, 0);
	eb.dtype = GPO_I32;
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	eb.dtype = GPO_F16;
	REFUSED(gpo_optim_bind(opt, "grad", &eb), -EINVAL);
	/* a cl_mem of another context */
	eb = extbuf(foreign, big, 0);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	ck_assert_msg(strstr(gpo_errmsg(), "another OpenCL context"), "%s",
		      gpo_errmsg());
	/* read-only for kernels: steps write parameters */
	eb = extbuf(ro, big, 0);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EINVAL);
	/* Vulkan's kinds, on an OpenCL device */
	vk = extbuf(m, big, 0);
	vk.kind = GPO_EXTBUF_VK_BUFFER;
	REFUSED(gpo_optim_bind(opt, "param", &vk), -EINVAL);
	vk.kind = GPO_EXTBUF_VK_FD;
	vk.fd = -1;
	REFUSED(gpo_optim_bind(opt, "grad", &vk), -EINVAL);
	/* cpu:0 and gpuopt's own opencl device take no cl_mem of this context */
	ocpu = new_optim(cpu, &l);
	eb = extbuf(m, big, 0);
	REFUSED(gpo_optim_bind(ocpu, "param", &eb), -EINVAL);
	oplain = new_optim(plain, &l);
	REFUSED(gpo_optim_bind(oplain, "param", &eb), -EINVAL);
	/* an optimizer without tensors */
	ck_assert(!gpo_optim_new(dev, GPO_ADAMW, &empty));
	REFUSED(gpo_optim_bind(empty, "param", &eb), -EINVAL);
	gpo_optim_free(empty);
	/* nothing retained by the refusals */
	ck_assert_uint_eq(mem_refs(m), 1);
	ck_assert_uint_eq(mem_refs(foreign), 1);
	ck_assert_uint_eq(mem_refs(ro), 1);

	/* a valid bind works after them; a second one of a slot is -EBUSY */
	eb = extbuf(m, big, 0);
	ck_assert_msg(!gpo_optim_bind(opt, "param", &eb), "%s", gpo_errmsg());
	ck_assert_uint_eq(mem_refs(m), 2);
	REFUSED(gpo_optim_bind(opt, "param", &eb), -EBUSY);
	ck_assert_uint_eq(mem_refs(m), 2);
	/* tensors, groups and the dtype are fixed once bound */
	REFUSED(gpo_optim_add_tensor(opt, "late", 1, &l.n[0], 0), -EBUSY);
	REFUSED(gpo_optim_add_group(opt), -EBUSY);
	REFUSED(gpo_optim_set_dtype(opt, "param", GPO_BF16), -EBUSY);
	/* the first use allocates: binding is over */
	x = malloc(l.total * 4);
	ck_assert(x);
	tu_fill(x, l.total, &rng, -1, 1);
	ck_assert(!gpo_optim_write(opt, "grad", NULL, x, l.total * 4));
	eb = extbuf(m, big, 0);
	REFUSED(gpo_optim_bind(opt, "grad", &eb), -EBUSY);
	ck_assert_uint_eq(mem_refs(m), 2);
	free(x);

	gpo_optim_free(opt);
	ck_assert_uint_eq(mem_refs_settled(e.queue, m, 1), 1);
	gpo_optim_free(ocpu);
	gpo_optim_free(oplain);
	clReleaseMemObject(m);
	clReleaseMemObject(foreign);
	clReleaseMemObject(ro);
	clReleaseMemObject(small);
	gpo_ctx_free(ctx);
	env_close(&other);
	env_close(&e);
}
END_TEST

/* may run on a thread of the driver's (NVIDIA's does) */
static void CL_CALLBACK mem_destroyed(cl_mem m, void *flag)
{
	__atomic_store_n((int *)flag, 1, __ATOMIC_RELEASE);
}

/*
 * The caller lets its cl_mem go while it is bound: gpuopt's reference
 * keeps it, steps, reads and writes still work, and gpo_optim_free()
 * lets it go for good. gpo_optim_read() and gpo_optim_write() reach the
 * caller's memory.
 */
START_TEST(test_interop_released_while_bound_and_read_write)
{
	cl_device_id ids[MAX_CL];
	struct gpo_device *dev;
	struct gpo_step_info si;
	struct gpo_optim *opt;
	struct gpo_extbuf eb;
	struct gpo_ctx *ctx;
	struct layout l;
	struct cl_env e;
	uint64_t rng = tu_rng("released"), i;
	float *x, *y, *z;
	cl_mem pm, gm;
	int gone = 0, k;

	ck_assert(cl_devices(ids, MAX_CL) > 0);
	env_open(&e, ids[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	ck_assert_msg(!gpo_device_adopt_opencl(ctx,
		&(struct gpo_opencl_handles){ e.context, e.device, e.queue },
		&dev), "%s", gpo_errmsg());
	draw_layout(&l, &rng);
	opt = new_optim(dev, &l);
	pm = buffer(&e, CL_MEM_READ_WRITE, l.bytes);
	gm = buffer(&e, CL_MEM_READ_WRITE, l.bytes + 256);
	ck_assert(!clSetMemObjectDestructorCallback(gm, mem_destroyed, &gone));
	eb = extbuf(pm, l.bytes, 0);
	ck_assert_msg(!gpo_optim_bind(opt, "param", &eb), "%s", gpo_errmsg());
	eb = extbuf(gm, l.bytes + 256, 256);
	ck_assert_msg(!gpo_optim_bind(opt, "grad", &eb), "%s", gpo_errmsg());
	clReleaseMemObject(gm);
	ck_assert_int_eq(gone, 0);

	x = malloc(l.bytes);
	y = malloc(l.bytes);
	z = malloc(l.bytes);
	ck_assert(x && y && z);
	/* the caller's write is what gpuopt reads */
	for (k = 0; k < 3; k++) {
		tu_fill(x, l.n[k], &rng, -1, 1);
		cl_write(&e, pm, l.off[k] * 4, x, l.n[k] * 4, CL_TRUE);
		tu_poison(y, l.n[k]);
		ck_assert(!gpo_optim_read(opt, "param", names[k], y,
					  l.n[k] * 4));
		ck_assert(!memcmp(x, y, l.n[k] * 4));
	}
	/* gpuopt's write is what the caller reads */
	tu_fill(x, l.n[1], &rng, -1, 1);
	ck_assert(!gpo_optim_write(opt, "param", "b", x, l.n[1] * 4));
	tu_poison(y, l.n[1]);
	cl_read(&e, pm, l.off[1] * 4, y, l.n[1] * 4);
	ck_assert(!memcmp(x, y, l.n[1] * 4));
	/* the padding between the groups is zero since the first use */
	tu_poison(z, l.bytes / 4);
	cl_read(&e, pm, 0, z, l.bytes);
	for (i = l.off[1] + l.n[1]; i < l.off[2]; i++)
		ck_assert_msg(z[i] == 0.0f && !signbit(z[i]),
			      "padding [%llu] = %g", (unsigned long long)i,
			      (double)z[i]);

	/* steps on the grad buffer the caller let go */
	for (k = 0; k < 3; k++) {
		tu_fill(x, l.total, &rng, -1, 1);
		ck_assert(!gpo_optim_write(opt, "grad", NULL, x, l.total * 4));
		tu_poison(y, l.total);
		ck_assert(!gpo_optim_read(opt, "grad", NULL, y, l.total * 4));
		ck_assert(!memcmp(x, y, l.total * 4));
		ck_assert_msg(!gpo_optim_step(opt, &si), "%s", gpo_errmsg());
	}
	ck_assert_int_eq(si.step, 3);
	tu_poison(y, l.total);
	ck_assert(!gpo_optim_read(opt, "param", NULL, y, l.total * 4));
	cl_read(&e, pm, 0, z, l.bytes);
	pack(&l, z, x);
	ck_assert(!memcmp(x, y, l.total * 4));
	ck_assert_int_eq(gone, 0);

	gpo_optim_free(opt);
	/*
	 * The last release may hand the object to the driver, which frees
	 * it (and calls back) once its queues are done with it, later and
	 * from a thread of its own (NVIDIA): give it up to 5 s.
	 */
	clFinish(e.queue);
	for (k = 0; k < 5000 && !__atomic_load_n(&gone, __ATOMIC_ACQUIRE); k++)
		usleep(1000);
	ck_assert_msg(__atomic_load_n(&gone, __ATOMIC_ACQUIRE),
		      "gpo_optim_free() kept the caller's cl_mem");
	ck_assert_uint_eq(mem_refs(pm), 1);
	clReleaseMemObject(pm);
	free(x);
	free(y);
	free(z);
	gpo_ctx_free(ctx);
	env_close(&e);
}
END_TEST

/*
 * A checkpoint of an optimizer on bound buffers: saved from the caller's
 * memory, and restored into it (the caller's cl_mem stays the buffer).
 */
START_TEST(test_interop_checkpoint_of_bound_buffers)
{
	char dir[] = "/tmp/gpuopt-interop-XXXXXX", path[64];
	cl_device_id ids[MAX_CL];
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_extbuf eb;
	struct gpo_ctx *ctx;
	struct layout l;
	struct cl_env e;
	uint64_t rng = tu_rng("ckpt");
	float *x, *saved, *got, *flat;
	cl_mem pm, gm;
	int k;

	ck_assert(cl_devices(ids, MAX_CL) > 0);
	ck_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/opt.safetensors", dir);
	env_open(&e, ids[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	ck_assert_msg(!gpo_device_adopt_opencl(ctx,
		&(struct gpo_opencl_handles){ e.context, e.device, e.queue },
		&dev), "%s", gpo_errmsg());
	draw_layout(&l, &rng);
	opt = new_optim(dev, &l);
	pm = buffer(&e, CL_MEM_READ_WRITE, l.bytes);
	gm = buffer(&e, CL_MEM_READ_WRITE, l.bytes);
	eb = extbuf(pm, l.bytes, 0);
	ck_assert_msg(!gpo_optim_bind(opt, "param", &eb), "%s", gpo_errmsg());
	eb = extbuf(gm, l.bytes, 0);
	ck_assert_msg(!gpo_optim_bind(opt, "grad", &eb), "%s", gpo_errmsg());
	x = malloc(l.bytes);
	saved = malloc(l.bytes);
	got = malloc(l.bytes);
	flat = malloc(l.bytes);
	ck_assert(x && saved && got && flat);
	tu_fill(x, l.total, &rng, -1, 1);
	ck_assert(!gpo_optim_write(opt, "param", NULL, x, l.total * 4));
	for (k = 0; k < 6; k++) {
		tu_fill(x, l.total, &rng, -1, 1);
		ck_assert(!gpo_optim_write(opt, "grad", NULL, x, l.total * 4));
		ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
		if (k == 2) {
			ck_assert_msg(!gpo_optim_save(opt, path, 0), "%s",
				      gpo_errmsg());
			ck_assert(!gpo_optim_read(opt, "param", NULL, saved,
						  l.total * 4));
		}
	}
	ck_assert_msg(!gpo_optim_restore(opt, path, 0), "%s", gpo_errmsg());
	ck_assert_int_eq(gpo_optim_steps_done(opt), 3);
	/* in the caller's buffer, where its kernels look */
	tu_poison(flat, l.bytes / 4);
	cl_read(&e, pm, 0, flat, l.bytes);
	pack(&l, flat, got);
	ck_assert_msg(!memcmp(got, saved, l.total * 4),
		      "restore did not write the caller's cl_mem");
	/* and steps go on from there in it */
	ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
	ck_assert(!gpo_optim_read(opt, "param", NULL, x, l.total * 4));
	cl_read(&e, pm, 0, flat, l.bytes);
	pack(&l, flat, got);
	ck_assert(!memcmp(got, x, l.total * 4));
	ck_assert(memcmp(got, saved, l.total * 4));

	gpo_optim_free(opt);
	ck_assert_uint_eq(mem_refs_settled(e.queue, pm, 1), 1);
	clReleaseMemObject(pm);
	clReleaseMemObject(gm);
	free(x);
	free(saved);
	free(got);
	free(flat);
	unlink(path);
	rmdir(dir);
	gpo_ctx_free(ctx);
	env_close(&e);
}
END_TEST

/* ---- main --------------------------------------------------------------- */

int main(void)
{
	int skip = tu_backend_gate("opencl");
	Suite *s;
	TCase *tc;

	if (skip)
		return skip;
	s = suite_create("interop_opencl");
	tc = tcase_create("interop_opencl");
	/* building the programs from source takes seconds on PoCL */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_interop_adopt_reports_device_and_balances_refs);
	tcase_add_test(tc, test_interop_caller_releases_context_after_adopt);
	tcase_add_test(tc, test_interop_adamw_bound_matches_plain_device);
	tcase_add_test(tc, test_interop_adopt_misuse_refused);
	tcase_add_test(tc, test_interop_bind_misuse_refused);
	tcase_add_test(tc, test_interop_released_while_bound_and_read_write);
	tcase_add_test(tc, test_interop_checkpoint_of_bound_buffers);
	tcase_add_test(tc, test_interop_adopted_shares_program_cache);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
