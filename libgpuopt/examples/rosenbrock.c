// SPDX-License-Identifier: MIT
/*
 * rosenbrock.c - minimise the Rosenbrock function in 10^6 dimensions with
 * Adam on the best device, printing progress.
 *
 *   rosenbrock [-d DEVICE] [-n DIMS] [-s STEPS] [-o OPTIMIZER] [-c SETTINGS]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gpuopt.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "rosenbrock: %s: %s (%s)\n", what, gpo_errmsg(),
		strerror(-err));
	return 1;
}

int main(int argc, char **argv)
{
	const char *device = NULL, *kind = "adam", *settings = "lr=0.01";
	uint64_t dims = 1000000, steps = 2000, s;
	struct gpo_device_info info;
	struct gpo_step_info si;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_ctx *ctx;
	double loss, t0;
	float *x;
	int c, ret, k, status = 1;

	while ((c = getopt(argc, argv, "d:n:s:o:c:h")) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'n': dims = strtoull(optarg, NULL, 10); break;
		case 's': steps = strtoull(optarg, NULL, 10); break;
		case 'o': kind = optarg; break;
		case 'c': settings = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-n DIMS] [-s STEPS] [-o OPTIMIZER] [-c SETTINGS]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (dims < 2)
		dims = 2;

	ret = gpo_ctx_new(&ctx, 0);
	if (ret)
		return fail("context", ret);
	ret = gpo_device_select(ctx, device, &dev);
	if (ret) {
		fail("device", ret);
		goto out_ctx;
	}
	gpo_device_info(ctx, gpo_device_index(dev), &info);
	printf("device %s: %s (%s)\n", info.id, info.name,
	       gpo_device_type_name(info.type));

	k = gpo_optim_kind_parse(kind);
	if (k < 0) {
		fail("optimizer", k);
		goto out_ctx;
	}
	ret = gpo_optim_new(dev, k, &opt);
	if (ret) {
		fail("optimizer", ret);
		goto out_ctx;
	}
	ret = gpo_optim_add_tensor(opt, "x", 1, &dims, 0);
	if (ret < 0 || (ret = gpo_optim_configure(opt, -1, settings))) {
		fail("setup", ret);
		goto out_opt;
	}
	/* start where Rosenbrock is hard: x = -1.2, 1, -1.2, 1, ... */
	x = malloc(dims * sizeof(*x));
	if (!x)
		goto out_opt;
	for (s = 0; s < dims; s++)
		x[s] = s % 2 ? 1.0f : -1.2f;
	ret = gpo_optim_write(opt, "param", NULL, x, dims * sizeof(*x));
	free(x);
	if (ret) {
		fail("write", ret);
		goto out_opt;
	}

	printf("%s on rosenbrock:%llu, %s\n", kind, (unsigned long long)dims,
	       settings);
	t0 = now();
	for (s = 0; s <= steps; s++) {
		ret = gpo_optim_objective(opt, "rosenbrock", &loss);
		if (ret) {
			fail("objective", ret);
			goto out_opt;
		}
		if (s % (steps / 10 ? steps / 10 : 1) == 0 || s == steps)
			printf("step %6llu  loss %-14.6g  %.1f steps/s\n",
			       (unsigned long long)s, loss,
			       s / (now() - t0 + 1e-9));
		if (s == steps)
			break;
		ret = gpo_optim_step(opt, &si);
		if (ret) {
			fail("step", ret);
			goto out_opt;
		}
	}
	status = 0;
out_opt:
	gpo_optim_free(opt);
out_ctx:
	gpo_ctx_free(ctx);
	return status;
}
