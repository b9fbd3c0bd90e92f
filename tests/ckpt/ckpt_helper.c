// SPDX-License-Identifier: MIT
/*
 * ckpt_helper - the program the checkpoint shell tests drive
 *
 *   ckpt_helper save  PATH [options]   make an optimizer, take steps, save
 *   ckpt_helper load  PATH [options]   make the same optimizer, restore
 *   ckpt_helper loop  PATH [options]   save forever, each time with every
 *                                      param = step and every state = -step
 *   ckpt_helper check PATH [options]   restore, then check that pattern
 *
 * options:
 *   -k KIND     optimizer (default adamw)
 *   -n NUMEL    about how many parameters (default 4096)
 *   -s STEPS    steps before saving (default 3)
 *   -d DEVICE   device (default cpu)
 *   -o DIR      dump every tensor's raw bytes (in its dtype) into
 *               DIR/<name>.bin, with '/' in names as "__" (after the
 *               save, or after the load)
 *   -T LIST     buffer dtypes, "param=f16,exp_avg=bf16,..."; save then
 *               fills param and every slot in use with random bytes and
 *               sets the step count instead of stepping (the step
 *               kernels are f32 only)
 *   -f          GPO_CKPT_FOREIGN      -b  GPO_CKPT_BUFFERED
 *   -P          no fallocate (the write itself hits ENOSPC)
 *   -L          the fuzz harness's small layout (fuzz_ckpt.h) instead
 *   -R FILE     loop: create FILE once the first save is done
 *
 * Exit: 0, or 1 with "error: errno=N message" on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gpuopt.h>
#include "ckpt/ckpt_i.h"
#include "../fuzz/fuzz_ckpt.h"

struct args {
	const char *cmd;
	const char *path;
	const char *kind;
	const char *device;
	const char *dump;
	int fuzz_layout;
	const char *ready;
	const char *dtypes;
	uint64_t numel;
	int steps;
	unsigned int flags;
};

static const char *settings(const char *kind, int group)
{
	if (!strcmp(kind, "sgd"))
		return group ? "lr=0.05 momentum=0.9 dampening=0.1" :
			       "lr=0.1 momentum=0.9 nesterov=1";
	if (!strcmp(kind, "adam") || !strcmp(kind, "adamw"))
		return group ? "lr=0.002 amsgrad=1 weight_decay=0.1" :
			       "lr=0.001 amsgrad=1";
	if (!strcmp(kind, "rmsprop"))
		return group ? "lr=0.01 centered=1 momentum=0.5" :
			       "lr=0.02 centered=1 momentum=0.9";
	if (!strcmp(kind, "adagrad"))
		return group ? "lr=0.1 initial_accumulator_value=0.5" :
			       "lr=0.05";
	return group ? "lr=0.0005" : "lr=0.001";
}

static int fail(const char *what, int ret)
{
	fprintf(stderr, "error: errno=%d %s: %s\n", -ret, what, gpo_errmsg());
	return 1;
}

/* -T: "buffer=dtype,..." */
static int set_dtypes(struct gpo_optim *opt, const char *list)
{
	char *copy = strdup(list), *item, *save, *eq;
	int ret = copy ? 0 : -ENOMEM;

	for (item = copy ? strtok_r(copy, ",", &save) : NULL; item && !ret;
	     item = strtok_r(NULL, ",", &save)) {
		eq = strchr(item, '=');
		if (!eq)
			ret = -EINVAL;
		else
			*eq = '\0';
		if (!ret)
			ret = gpo_dtype_parse(eq + 1);
		if (ret >= 0)
			ret = gpo_optim_set_dtype(opt, item, ret);
	}
	free(copy);
	return ret;
}

static size_t elem_size(struct gpo_optim *opt, const char *slot)
{
	return gpo_dtype_size(gpo_optim_dtype(opt, slot));
}

/* Two groups: a.weight [r,7] a.bias [7] in 0, b.weight [r,3,5] b.bias [5]. */
static int make_optim(const struct args *a, struct gpo_ctx **ctx,
		      struct gpo_optim **opt)
{
	uint64_t ra = a->numel / 2 / 7 + 1, rb = a->numel / 2 / 15 + 1;
	uint64_t s0[2] = { ra, 7 }, s1[1] = { 7 }, s2[3] = { rb, 3, 5 };
	uint64_t s3[1] = { 5 };
	struct gpo_device *dev;
	int ret, kind = 0;

	ret = gpo_ctx_new(ctx, 0);
	if (!ret)
		ret = gpo_device_select(*ctx, a->device, &dev);
	if (!ret)
		ret = kind = gpo_optim_kind_parse(a->kind);
	if (ret < 0)
		return fail("setup", ret);
	if (a->fuzz_layout) {
		*opt = fuzz_make_optim(*ctx, kind);
		ret = *opt ? 0 : -EINVAL;
		goto out_configure;
	}
	ret = gpo_optim_new(dev, kind, opt);
	if (!ret)
		ret = gpo_optim_add_group(*opt) == 1 ? 0 : -EINVAL;
	if (!ret)
		ret = gpo_optim_add_tensor(*opt, "a.weight", 2, s0, 0);
	if (ret >= 0)
		ret = gpo_optim_add_tensor(*opt, "a.bias", 1, s1, 0);
	if (ret >= 0)
		ret = gpo_optim_add_tensor(*opt, "b.weight", 3, s2, 1);
	if (ret >= 0)
		ret = gpo_optim_add_tensor(*opt, "b.bias", 1, s3, 1);
out_configure:
	if (ret >= 0)
		ret = gpo_optim_configure(*opt, 0, settings(a->kind, 0));
	if (!ret)
		ret = gpo_optim_configure(*opt, 1, settings(a->kind, 1));
	if (!ret && a->dtypes)
		ret = set_dtypes(*opt, a->dtypes);
	return ret < 0 ? fail("optimizer", ret) : 0;
}

static uint64_t rng = 88172645463325252ull;

static float next_float(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * (1.0 / 9007199254740992.0) * 2 - 1);
}

/* random floats, or in a slot of another dtype random bytes */
static int fill_slot(struct gpo_optim *opt, const char *slot, float value,
		     int random)
{
	uint64_t i, n = gpo_optim_numel(opt);
	size_t es = elem_size(opt, slot);
	float *x;
	int ret;

	if (gpo_optim_dtype(opt, slot) != GPO_F32 && !random)
		return -EINVAL;
	x = malloc(n * es);
	if (!x)
		return -ENOMEM;
	if (gpo_optim_dtype(opt, slot) != GPO_F32) {
		for (i = 0; i < n * es; i++) {
			next_float();
			((unsigned char *)x)[i] = (unsigned char)(rng >> 56);
		}
	} else {
		for (i = 0; i < n; i++)
			x[i] = random ? next_float() : value;
	}
	ret = gpo_optim_write(opt, slot, NULL, x, n * es);
	free(x);
	return ret;
}

static int take_steps(struct gpo_optim *opt, int steps, int dtypes)
{
	int i, ret = fill_slot(opt, "param", 0, 1);

	/* with other dtypes than f32 there is no kernel: state by hand */
	for (i = 0; dtypes && i < gpo_optim_slot_count(opt) && !ret; i++)
		ret = fill_slot(opt, gpo_optim_slot_name(opt, i), 0, 1);
	if (dtypes)
		return ret ? ret : gpo_optim_set_step(opt, (uint64_t)steps);
	for (i = 0; i < steps && !ret; i++) {
		ret = fill_slot(opt, "grad", 0, 1);
		if (!ret)
			ret = gpo_optim_step(opt, NULL);
	}
	return ret;
}

static int dump_one(struct gpo_optim *opt, const char *dir, const char *slot,
		    const char *tensor, uint64_t numel)
{
	size_t es = elem_size(opt, slot);
	char path[4096];
	char *x = malloc(numel * es);
	FILE *f;
	int ret;

	if (!x)
		return -ENOMEM;
	ret = gpo_optim_read(opt, slot, tensor, x, numel * es);
	if (!strcmp(slot, "param"))
		snprintf(path, sizeof(path), "%s/param__%s.bin", dir, tensor);
	else
		snprintf(path, sizeof(path), "%s/state__%s__%s.bin", dir,
			 tensor, slot);
	if (!ret && (!(f = fopen(path, "wb")) ||
		     fwrite(x, es, numel, f) != numel || fclose(f)))
		ret = -EIO;
	free(x);
	return ret;
}

/* a u8 slot's absmax blocks (the file's absmax/<slot>), as f32 */
static int dump_absmax(struct gpo_optim *opt, const char *dir,
		       const char *slot)
{
	int n = gpo_optim_read_absmax(opt, slot, NULL, 0), ret;
	char path[4096];
	float *x;
	FILE *f;

	if (n <= 0)
		return n;
	x = malloc((size_t)n * sizeof(*x));
	if (!x)
		return -ENOMEM;
	ret = gpo_optim_read_absmax(opt, slot, x, (size_t)n);
	snprintf(path, sizeof(path), "%s/absmax__%s.bin", dir, slot);
	if (!ret && (!(f = fopen(path, "wb")) ||
		     fwrite(x, sizeof(*x), n, f) != (size_t)n || fclose(f)))
		ret = -EIO;
	free(x);
	return ret;
}

static int dump(struct gpo_optim *opt, const char *dir)
{
	struct gpo_tensor_info ti;
	int t, s, ret = 0;

	for (t = 0; t < gpo_optim_tensor_count(opt) && !ret; t++) {
		gpo_optim_tensor_info(opt, t, &ti);
		ret = dump_one(opt, dir, "param", ti.name, ti.numel);
		for (s = 0; s < gpo_optim_slot_count(opt) && !ret; s++)
			ret = dump_one(opt, dir, gpo_optim_slot_name(opt, s),
				       ti.name, ti.numel);
	}
	for (s = 0; s < gpo_optim_slot_count(opt) && !ret; s++)
		if (gpo_optim_dtype(opt, gpo_optim_slot_name(opt, s)) ==
		    GPO_U8)
			ret = dump_absmax(opt, dir,
					  gpo_optim_slot_name(opt, s));
	return ret;
}

/* every param = step, every state slot = -step: a torn file shows */
static int save_pattern(struct gpo_optim *opt, const char *path,
			uint64_t step, unsigned int flags)
{
	int s, ret = fill_slot(opt, "param", (float)step, 0);

	for (s = 0; s < gpo_optim_slot_count(opt) && !ret; s++)
		ret = fill_slot(opt, gpo_optim_slot_name(opt, s),
				-(float)step, 0);
	if (!ret)
		ret = gpo_optim_set_step(opt, step);
	if (!ret)
		ret = gpo_optim_save(opt, path, flags);
	return ret;
}

static int check_slot(struct gpo_optim *opt, const char *slot, float want)
{
	uint64_t i, n = gpo_optim_numel(opt);
	float *x = malloc(n * 4);
	int ret;

	if (!x)
		return -ENOMEM;
	ret = gpo_optim_read(opt, slot, NULL, x, n * 4);
	for (i = 0; i < n && !ret; i++)
		if (x[i] != want)
			ret = -EBADMSG;
	if (ret == -EBADMSG)
		fprintf(stderr, "%s[%llu] = %g, want %g\n", slot,
			(unsigned long long)i - 1, x[i - 1], want);
	free(x);
	return ret;
}

static int check_pattern(struct gpo_optim *opt)
{
	float step = (float)gpo_optim_steps_done(opt);
	int s, ret = check_slot(opt, "param", step);

	for (s = 0; s < gpo_optim_slot_count(opt) && !ret; s++)
		ret = check_slot(opt, gpo_optim_slot_name(opt, s), -step);
	return ret;
}

static int run(const struct args *a, struct gpo_optim *opt)
{
	uint64_t step;
	int ret;

	if (!strcmp(a->cmd, "save")) {
		ret = take_steps(opt, a->steps, a->dtypes != NULL);
		if (ret)
			return fail("steps", ret);
		ret = gpo_optim_save(opt, a->path, a->flags);
		if (ret)
			return fail("save", ret);
	} else if (!strcmp(a->cmd, "loop")) {
		for (step = 1;; step++) {
			ret = save_pattern(opt, a->path, step, a->flags);
			if (ret)
				return fail("save", ret);
			if (step == 1 && a->ready)
				fclose(fopen(a->ready, "w"));
		}
	} else {
		ret = gpo_optim_restore(opt, a->path, a->flags);
		if (ret)
			return fail("restore", ret);
		if (!strcmp(a->cmd, "check") && check_pattern(opt))
			return fail("check", -EBADMSG);
	}
	if (a->dump && (ret = dump(opt, a->dump)))
		return fail("dump", ret);
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int c;

	a->kind = "adamw";
	a->device = "cpu";
	a->numel = 4096;
	a->steps = 3;
	while ((c = getopt(argc, argv, "k:n:s:d:o:fbPLR:T:")) != -1) {
		switch (c) {
		case 'k': a->kind = optarg; break;
		case 'n': a->numel = strtoull(optarg, NULL, 0); break;
		case 's': a->steps = atoi(optarg); break;
		case 'd': a->device = optarg; break;
		case 'o': a->dump = optarg; break;
		case 'f': a->flags |= GPO_CKPT_FOREIGN; break;
		case 'b': a->flags |= GPO_CKPT_BUFFERED; break;
		case 'P': gpo__ckpt_tune.no_prealloc = 1; break;
		case 'L': a->fuzz_layout = 1; break;
		case 'R': a->ready = optarg; break;
		case 'T': a->dtypes = optarg; break;
		default: return -1;
		}
	}
	if (argc - optind != 2)
		return -1;
	a->cmd = argv[optind];
	a->path = argv[optind + 1];
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct gpo_optim *opt = NULL;
	struct gpo_ctx *ctx = NULL;
	int ret;

	if (parse_args(argc, argv, &a)) {
		fprintf(stderr, "usage: %s save|load|loop|check PATH [-k KIND] [-n NUMEL] [-s STEPS] [-d DEV] [-o DIR] [-f] [-b] [-P] [-T DTYPES]\n",
			argv[0]);
		return 2;
	}
	ret = make_optim(&a, &ctx, &opt);
	if (!ret)
		ret = run(&a, opt);
	gpo_optim_free(opt);
	gpo_ctx_free(ctx);
	return ret;
}
