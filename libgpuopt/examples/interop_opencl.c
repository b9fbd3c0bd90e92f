// SPDX-License-Identifier: MIT
/*
 * interop_opencl.c - a program with its own OpenCL context, queue, buffers
 * and gradient kernel, stepped by gpuopt with no copy through the host.
 *
 * It makes a context and an in-order queue on one OpenCL device, keeps
 * the parameters and gradients of the Rosenbrock function in DIMS
 * dimensions (from a random start) in two cl_mem buffers, and computes
 * the gradient (and the loss, summed per work-group) in its own kernel
 * each step. gpuopt adopts the context and queue
 * (gpo_device_adopt_opencl) and steps AdamW on the two buffers in place
 * (gpo_optim_bind): the loop enqueues the program's kernel and calls
 * gpo_optim_step(), and the in-order queue orders the two. Parameters and
 * gradients never leave the device; only the loss partials are read, on
 * the steps that print.
 *
 * With -c it runs the same steps again the usual way, through host
 * buffers: the same kernel, then the gradients read to the host and
 * written into gpuopt's own device for the same hardware (opencl:K,
 * opened by gpuopt), a step, and the parameters read back and written to
 * the program's buffer. The final parameters of both runs must be the
 * same bytes; it prints the time of a step both ways.
 *
 *   interop_opencl [-d N] [-g ID] [-n DIMS] [-s STEPS] [-p EVERY] [-r SEED]
 *                  [-o SETTINGS] [-c]
 *
 *   -d N     the N-th OpenCL device of all platforms (default: the first
 *            GPU, else the first device)
 *   -g ID    gpuopt's own device for -c (default: the opencl device of the
 *            same name and uuid)
 *   -n DIMS  parameters (default 100000)
 *   -s STEPS steps (default 200)
 *   -p EVERY print the loss every EVERY steps (default 50; 0: never)
 *   -r SEED  the random start (default 1)
 *   -o SETTINGS  AdamW's settings (default "lr=0.01 weight_decay=0")
 *   -c       compare with the same steps through host buffers
 *
 * Exits 0; 1 on an error or, with -c, when the parameters differ; 2 on
 * bad usage.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gpuopt.h>

#define WG	256
#define MAX_DEVS 64

/*
 * The program's own kernel: the gradient of sum over i < n-1 of
 * 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, and that sum per work-group.
 * x and g are the optimizer's flat buffers, the tensor at element @off.
 */
static const char kernel_src[] =
"__kernel __attribute__((reqd_work_group_size(256, 1, 1)))\n"
"void rosenbrock_grad(__global const float *x, __global float *g,\n"
"		     uint off, uint n, __global float *part)\n"
"{\n"
"	__local float sum[256];\n"
"	uint i = get_global_id(0), l = get_local_id(0), s;\n"
"	float t = 0.0f;\n"
"\n"
"	x += off;\n"
"	g += off;\n"
"	if (i < n) {\n"
"		float xi = x[i], gi = 0.0f;\n"
"\n"
"		if (i + 1 < n) {\n"
"			float d = x[i + 1] - xi * xi;\n"
"\n"
"			gi = -400.0f * xi * d - 2.0f * (1.0f - xi);\n"
"			t = 100.0f * d * d + (1.0f - xi) * (1.0f - xi);\n"
"		}\n"
"		if (i > 0)\n"
"			gi += 200.0f * (xi - x[i - 1] * x[i - 1]);\n"
"		g[i] = gi;\n"
"	}\n"
"	sum[l] = t;\n"
"	barrier(CLK_LOCAL_MEM_FENCE);\n"
"	for (s = 128; s > 0; s >>= 1) {\n"
"		if (l < s)\n"
"			sum[l] += sum[l + s];\n"
"		barrier(CLK_LOCAL_MEM_FENCE);\n"
"	}\n"
"	if (l == 0)\n"
"		part[get_group_id(0)] = sum[0];\n"
"}\n";

struct app {
	/* the program's own OpenCL objects */
	cl_device_id device;
	cl_context context;
	cl_command_queue queue;
	cl_program program;
	cl_kernel kernel;
	cl_mem part;		/* the loss per work-group */
	float *host_part;
	/* the problem */
	uint64_t dims, steps, every, seed;
	const char *settings;
	size_t groups;
};

/* one run: its buffers and the optimizer that steps them */
struct run {
	cl_mem x, g;
	struct gpo_optim *opt;
	uint32_t off;		/* the tensor's offset in the flat buffers */
	uint64_t bytes;		/* gpo_optim_buffer_bytes() */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "interop_opencl: %s: %s (%s)\n", what, gpo_errmsg(),
		strerror(-err));
	return -1;
}

static int cl_fail(const char *what, cl_int err)
{
	fprintf(stderr, "interop_opencl: %s: OpenCL error %d\n", what,
		(int)err);
	return -1;
}

/* The OpenCL devices of every platform, in order. */
static int list_devices(cl_device_id *out, int max)
{
	cl_platform_id plats[16];
	cl_uint np = 0, nd, p;
	int n = 0;

	if (clGetPlatformIDs(16, plats, &np))
		return 0;
	for (p = 0; p < np && p < 16 && n < max; p++)
		if (!clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, max - n,
				    out + n, &nd))
			n += nd;
	return n;
}

/* The program's setup: device @pick (-1: the first GPU), context, queue. */
static int app_open(struct app *a, int pick)
{
	cl_device_id devs[MAX_DEVS];
	cl_device_type type;
	char name[128] = "";
	cl_int err;
	int n, i;

	n = list_devices(devs, MAX_DEVS);
	if (!n)
		return cl_fail("no OpenCL device", CL_DEVICE_NOT_FOUND);
	if (pick >= n) {
		fprintf(stderr, "interop_opencl: -d %d: there are %d OpenCL devices\n",
			pick, n);
		return -1;
	}
	for (i = 0; pick < 0 && i < n; i++)
		if (!clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof(type),
				     &type, NULL) && (type & CL_DEVICE_TYPE_GPU))
			pick = i;
	a->device = devs[pick < 0 ? 0 : pick];
	clGetDeviceInfo(a->device, CL_DEVICE_NAME, sizeof(name) - 1, name,
			NULL);
	printf("OpenCL device %d: %s\n", pick < 0 ? 0 : pick, name);

	a->context = clCreateContext(NULL, 1, &a->device, NULL, NULL, &err);
	if (!a->context)
		return cl_fail("clCreateContext", err);
	a->queue = clCreateCommandQueue(a->context, a->device, 0, &err);
	if (!a->queue)
		return cl_fail("clCreateCommandQueue", err);
	a->program = clCreateProgramWithSource(a->context, 1,
					       (const char *[]){ kernel_src },
					       NULL, &err);
	if (!a->program)
		return cl_fail("clCreateProgramWithSource", err);
	err = clBuildProgram(a->program, 1, &a->device, "-cl-std=CL1.2",
			     NULL, NULL);
	if (err)
		return cl_fail("clBuildProgram", err);
	a->kernel = clCreateKernel(a->program, "rosenbrock_grad", &err);
	if (!a->kernel)
		return cl_fail("clCreateKernel", err);
	a->groups = (a->dims + WG - 1) / WG;
	a->part = clCreateBuffer(a->context, CL_MEM_READ_WRITE,
				 a->groups * sizeof(float), NULL, &err);
	if (!a->part)
		return cl_fail("clCreateBuffer", err);
	a->host_part = malloc(a->groups * sizeof(float));
	return a->host_part ? 0 : fail("loss partials", -ENOMEM);
}

static void app_close(struct app *a)
{
	free(a->host_part);
	if (a->part)
		clReleaseMemObject(a->part);
	if (a->kernel)
		clReleaseKernel(a->kernel);
	if (a->program)
		clReleaseProgram(a->program);
	if (a->queue)
		clReleaseCommandQueue(a->queue);
	if (a->context)
		clReleaseContext(a->context);
}

/* The random start, the same for both runs. */
static float *start_point(const struct app *a)
{
	uint64_t s = a->seed * 0x9e3779b97f4a7c15ull + 1, i;
	float *x = malloc(a->dims * sizeof(float));

	for (i = 0; x && i < a->dims; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		x[i] = (float)((s >> 11) * (4.0 / 9007199254740992.0) - 2.0);
	}
	return x;
}

/*
 * An AdamW optimizer on @dev over one tensor "x" of a->dims, and two
 * cl_mem of the program's for its flat param and grad buffers, the
 * parameters at the random start.
 */
static int run_setup(struct app *a, struct gpo_device *dev, struct run *r)
{
	struct gpo_tensor_info ti;
	cl_int err;
	float *x;
	int ret;

	ret = gpo_optim_new(dev, GPO_ADAMW, &r->opt);
	if (ret)
		return fail("optimizer", ret);
	ret = gpo_optim_add_tensor(r->opt, "x", 1, &a->dims, 0);
	if (ret < 0 || (ret = gpo_optim_configure(r->opt, -1, a->settings)))
		return fail("optimizer setup", ret);
	ret = gpo_optim_tensor_info(r->opt, 0, &ti);
	if (ret)
		return fail("tensor", ret);
	r->off = (uint32_t)ti.offset;
	r->bytes = gpo_optim_buffer_bytes(r->opt, "param");
	r->x = clCreateBuffer(a->context, CL_MEM_READ_WRITE, r->bytes, NULL,
			      &err);
	if (r->x)
		r->g = clCreateBuffer(a->context, CL_MEM_READ_WRITE, r->bytes,
				      NULL, &err);
	if (!r->x || !r->g)
		return cl_fail("clCreateBuffer", err);
	x = start_point(a);
	if (!x)
		return fail("start", -ENOMEM);
	err = clEnqueueWriteBuffer(a->queue, r->x, CL_TRUE,
				   r->off * sizeof(float),
				   a->dims * sizeof(float), x, 0, NULL, NULL);
	free(x);
	return err ? cl_fail("writing the start", err) : 0;
}

static void run_free(struct run *r)
{
	gpo_optim_free(r->opt);
	if (r->x)
		clReleaseMemObject(r->x);
	if (r->g)
		clReleaseMemObject(r->g);
}

/* Enqueue the program's gradient kernel on @r's buffers. */
static int enqueue_grad(struct app *a, struct run *r)
{
	size_t global = a->groups * WG, local = WG;
	cl_uint n = (cl_uint)a->dims;
	cl_int err;

	err = clSetKernelArg(a->kernel, 0, sizeof(cl_mem), &r->x);
	if (!err)
		err = clSetKernelArg(a->kernel, 1, sizeof(cl_mem), &r->g);
	if (!err)
		err = clSetKernelArg(a->kernel, 2, sizeof(cl_uint), &r->off);
	if (!err)
		err = clSetKernelArg(a->kernel, 3, sizeof(cl_uint), &n);
	if (!err)
		err = clSetKernelArg(a->kernel, 4, sizeof(cl_mem), &a->part);
	if (!err)
		err = clEnqueueNDRangeKernel(a->queue, a->kernel, 1, NULL,
					     &global, &local, 0, NULL, NULL);
	return err ? cl_fail("the gradient kernel", err) : 0;
}

/* The loss of the last gradient kernel: its partials, summed here. */
static int read_loss(struct app *a, double *loss)
{
	cl_int err;
	size_t i;

	err = clEnqueueReadBuffer(a->queue, a->part, CL_TRUE, 0,
				  a->groups * sizeof(float), a->host_part, 0,
				  NULL, NULL);
	if (err)
		return cl_fail("reading the loss", err);
	*loss = 0;
	for (i = 0; i < a->groups; i++)
		*loss += a->host_part[i];
	return 0;
}

/*
 * The interop loop: the program's kernel writes the gradients into the
 * bound grad buffer, gpuopt steps the bound param buffer. No host copy.
 * Steps after the first (which builds gpuopt's kernels) are timed.
 */
static int run_interop(struct app *a, struct gpo_device *dev, struct run *r,
		       double *per_step)
{
	struct gpo_extbuf eb = { .kind = GPO_EXTBUF_CL_MEM, .dtype = GPO_F32 };
	double loss, t0 = 0;
	uint64_t s;
	int ret;

	ret = run_setup(a, dev, r);
	if (ret)
		return ret;
	/* the whole cl_mem, the flat buffer from its start */
	eb.size = r->bytes;
	eb.handle = r->x;
	ret = gpo_optim_bind(r->opt, "param", &eb);
	if (ret)
		return fail("binding the parameters", ret);
	eb.handle = r->g;
	ret = gpo_optim_bind(r->opt, "grad", &eb);
	if (ret)
		return fail("binding the gradients", ret);
	for (s = 0; s < a->steps; s++) {
		if (s == 1)
			t0 = now();
		ret = enqueue_grad(a, r);
		if (ret)
			return ret;
		if (a->every && s % a->every == 0) {
			if (read_loss(a, &loss))
				return -1;
			printf("step %6llu  loss %.6g\n",
			       (unsigned long long)s, loss);
		}
		ret = gpo_optim_step(r->opt, NULL);
		if (ret)
			return fail("step", ret);
	}
	*per_step = a->steps > 1 ? (now() - t0) / (a->steps - 1) : 0;
	ret = enqueue_grad(a, r);
	if (!ret)
		ret = read_loss(a, &loss);
	if (ret)
		return ret;
	printf("final loss %.6g after %llu steps\n", loss,
	       (unsigned long long)a->steps);
	return 0;
}

/*
 * The same steps the usual way: the gradients to the host and into
 * gpuopt's own device, the parameters back into the program's buffer.
 */
static int run_host(struct app *a, struct gpo_device *dev, struct run *r,
		    float *x, double *per_step)
{
	size_t bytes = a->dims * sizeof(float), off = r->off * sizeof(float);
	double t0 = 0;
	float *g;
	uint64_t s;
	cl_int err;
	int ret;

	ret = run_setup(a, dev, r);
	if (ret)
		return ret;
	ret = clEnqueueReadBuffer(a->queue, r->x, CL_TRUE, off, bytes, x, 0,
				  NULL, NULL);
	if (ret)
		return cl_fail("reading the start", ret);
	ret = gpo_optim_write(r->opt, "param", "x", x, bytes);
	if (ret)
		return fail("writing the start", ret);
	g = malloc(bytes);
	if (!g)
		return fail("gradients", -ENOMEM);
	for (s = 0; s < a->steps && !ret; s++) {
		if (s == 1)
			t0 = now();
		ret = enqueue_grad(a, r);
		if (ret)
			break;
		err = clEnqueueReadBuffer(a->queue, r->g, CL_TRUE, off, bytes,
					  g, 0, NULL, NULL);
		if (err) {
			ret = cl_fail("reading the gradients", err);
			break;
		}
		ret = gpo_optim_write(r->opt, "grad", "x", g, bytes);
		if (!ret)
			ret = gpo_optim_step(r->opt, NULL);
		if (!ret)
			ret = gpo_optim_read(r->opt, "param", "x", x, bytes);
		if (ret) {
			ret = fail("host step", ret);
			break;
		}
		err = clEnqueueWriteBuffer(a->queue, r->x, CL_TRUE, off, bytes,
					   x, 0, NULL, NULL);
		if (err)
			ret = cl_fail("writing the parameters", err);
	}
	*per_step = a->steps > 1 ? (now() - t0) / (a->steps - 1) : 0;
	free(g);
	return ret;
}

/*
 * gpuopt's own device for the hardware of the adopted one: the opencl
 * device of the same name and uuid that is not adopted.
 */
static int own_device(struct gpo_ctx *ctx, struct gpo_device *adopted,
		      const char *id, struct gpo_device **out)
{
	struct gpo_device_info want, info;
	char spec[32];
	int i;

	if (id)
		return gpo_device_select(ctx, id, out);
	gpo_device_info(ctx, gpo_device_index(adopted), &want);
	for (i = 0; i < gpo_device_count(ctx); i++) {
		if (gpo_device_info(ctx, i, &info) || i == want.index ||
		    strcmp(info.backend, "opencl") ||
		    strcmp(info.name, want.name) ||
		    strcmp(info.uuid, want.uuid))
			continue;
		snprintf(spec, sizeof(spec), "%s", info.id);
		return gpo_device_select(ctx, spec, out);
	}
	return -ENODEV;
}

int main(int argc, char **argv)
{
	struct app a = {
		.dims = 100000, .steps = 200, .every = 50, .seed = 1,
		.settings = "lr=0.01 weight_decay=0",
	};
	struct run ri = { 0 }, rh = { 0 };
	struct gpo_device *adopted, *own;
	struct gpo_device_info info;
	struct gpo_ctx *ctx = NULL;
	const char *own_id = NULL;
	double t_interop = 0, t_host = 0;
	float *xi = NULL, *xh = NULL;
	int c, pick = -1, compare = 0, ret, status = 1;

	while ((c = getopt(argc, argv, "d:g:n:s:p:r:o:ch")) != -1) {
		switch (c) {
		case 'd': pick = atoi(optarg); break;
		case 'g': own_id = optarg; break;
		case 'n': a.dims = strtoull(optarg, NULL, 10); break;
		case 's': a.steps = strtoull(optarg, NULL, 10); break;
		case 'p': a.every = strtoull(optarg, NULL, 10); break;
		case 'r': a.seed = strtoull(optarg, NULL, 10); break;
		case 'o': a.settings = optarg; break;
		case 'c': compare = 1; break;
		default:
			fprintf(stderr, "usage: %s [-d N] [-g ID] [-n DIMS] [-s STEPS] [-p EVERY] [-r SEED] [-o SETTINGS] [-c]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (a.dims < 2 || a.dims > UINT32_MAX || pick < -1) {
		fprintf(stderr, "interop_opencl: DIMS must be 2 to 2^32-1, N >= 0\n");
		return 2;
	}

	if (app_open(&a, pick))
		goto out;
	ret = gpo_ctx_new(&ctx, 0);
	if (ret) {
		fail("context", ret);
		goto out;
	}
	ret = gpo_device_adopt_opencl(ctx, &(struct gpo_opencl_handles){
		.context = a.context, .device = a.device, .queue = a.queue,
	}, &adopted);
	if (ret) {
		fail("adopting the context", ret);
		goto out;
	}
	gpo_device_info(ctx, gpo_device_index(adopted), &info);
	printf("gpuopt device %s: %s (driver %s)\n", info.id, info.name,
	       info.driver);
	printf("AdamW (%s) on rosenbrock:%llu from a random start, %llu steps\n",
	       a.settings, (unsigned long long)a.dims,
	       (unsigned long long)a.steps);

	if (run_interop(&a, adopted, &ri, &t_interop))
		goto out;
	printf("interop: %.1f us/step (the program's kernel and gpuopt's step on its buffers)\n",
	       t_interop * 1e6);
	if (!compare) {
		status = 0;
		goto out;
	}

	ret = own_device(ctx, adopted, own_id, &own);
	if (ret) {
		fail(own_id ? own_id : "gpuopt's own device for this one", ret);
		goto out;
	}
	gpo_device_info(ctx, gpo_device_index(own), &info);
	xi = malloc(a.dims * sizeof(float));
	xh = malloc(a.dims * sizeof(float));
	if (!xi || !xh)
		goto out;
	if (run_host(&a, own, &rh, xh, &t_host))
		goto out;
	printf("host copies on %s: %.1f us/step (the same kernel, gradients through the host into gpuopt, parameters back)\n",
	       info.id, t_host * 1e6);
	if (t_interop > 0)
		printf("interop step %.2fx the speed of the step with host copies\n",
		       t_host / t_interop);
	ret = clEnqueueReadBuffer(a.queue, ri.x, CL_TRUE,
				  ri.off * sizeof(float),
				  a.dims * sizeof(float), xi, 0, NULL, NULL);
	if (ret) {
		cl_fail("reading the parameters", ret);
		goto out;
	}
	if (memcmp(xi, xh, a.dims * sizeof(float))) {
		uint64_t i = 0;

		while (!memcmp(&xi[i], &xh[i], sizeof(float)))
			i++;
		printf("compare: DIFFERENT: x[%llu] = %a through interop, %a through host buffers\n",
		       (unsigned long long)i, (double)xi[i], (double)xh[i]);
		goto out;
	}
	printf("compare: same bytes (%llu bytes of parameters)\n",
	       (unsigned long long)(a.dims * sizeof(float)));
	status = 0;
out:
	free(xi);
	free(xh);
	/* the optimizers first: they hold references to the buffers */
	run_free(&ri);
	run_free(&rh);
	gpo_ctx_free(ctx);
	app_close(&a);
	return status;
}
