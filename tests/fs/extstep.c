// SPDX-License-Identifier: MIT
/*
 * extstep.c - the library's own steps, for comparing with gpuoptfs
 *
 *   extstep rand N SEED
 *	N float32 values in [-1, 1), little-endian, on stdout
 *   extstep step SPEC OPTIMIZER SETTINGS PARAMS GRAD...
 *	an optimizer on the cpu device with SPEC's tensors ("w:16x8,b:8"),
 *	configured with SETTINGS, params from the file PARAMS, one step per
 *	GRAD file; the params after the last step on stdout
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuopt.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "extstep: %s: %s (%d)\n", what, gpo_errmsg(), err);
	return 1;
}

static int do_rand(uint64_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1, i;
	float f;

	for (i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		f = (float)((s >> 40) * 0x1p-24 * 2.0 - 1.0);
		fwrite(&f, sizeof(f), 1, stdout);
	}
	return 0;
}

static int add_tensors(struct gpo_optim *opt, char *spec)
{
	char *t, *save = NULL, *colon, *d, *dsave;
	uint64_t shape[8];
	int nd, ret;

	for (t = strtok_r(spec, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		colon = strchr(t, ':');
		if (!colon)
			return -1;
		*colon = '\0';
		nd = 0;
		dsave = NULL;
		for (d = strtok_r(colon + 1, "x", &dsave); d && nd < 8;
		     d = strtok_r(NULL, "x", &dsave))
			shape[nd++] = strtoull(d, NULL, 10);
		ret = gpo_optim_add_tensor(opt, t, nd, shape, 0);
		if (ret < 0)
			return fail("add_tensor", ret);
	}
	return 0;
}

static void *slurp(const char *path, size_t bytes)
{
	void *buf = malloc(bytes);
	FILE *f = fopen(path, "rb");

	if (!buf || !f || fread(buf, 1, bytes, f) != bytes) {
		fprintf(stderr, "extstep: %s: cannot read %zu bytes\n", path,
			bytes);
		exit(1);
	}
	fclose(f);
	return buf;
}

static int do_step(int argc, char **argv)
{
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_ctx *ctx;
	size_t bytes;
	void *buf;
	int ret, k, i;

	ret = gpo_ctx_new(&ctx, 0);
	if (ret)
		return fail("ctx", ret);
	ret = gpo_device_select(ctx, "cpu", &dev);
	if (ret)
		return fail("device", ret);
	k = gpo_optim_kind_parse(argv[3]);
	if (k < 0)
		return fail("optimizer", k);
	ret = gpo_optim_new(dev, k, &opt);
	if (ret)
		return fail("optim", ret);
	if (add_tensors(opt, argv[2]))
		return 1;
	ret = gpo_optim_configure(opt, -1, argv[4]);
	if (ret)
		return fail("configure", ret);
	bytes = gpo_optim_numel(opt) * sizeof(float);
	buf = slurp(argv[5], bytes);
	ret = gpo_optim_write(opt, "param", NULL, buf, bytes);
	free(buf);
	if (ret)
		return fail("write params", ret);
	for (i = 6; i < argc; i++) {
		buf = slurp(argv[i], bytes);
		ret = gpo_optim_write(opt, "grad", NULL, buf, bytes);
		free(buf);
		if (!ret)
			ret = gpo_optim_step(opt, NULL);
		if (ret)
			return fail("step", ret);
	}
	buf = malloc(bytes);
	ret = gpo_optim_read(opt, "param", NULL, buf, bytes);
	if (ret)
		return fail("read params", ret);
	fwrite(buf, 1, bytes, stdout);
	free(buf);
	gpo_optim_free(opt);
	gpo_ctx_free(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "rand"))
		return do_rand(strtoull(argv[2], NULL, 10),
			       strtoull(argv[3], NULL, 10));
	if (argc >= 7 && !strcmp(argv[1], "step"))
		return do_step(argc, argv);
	fprintf(stderr, "usage: extstep rand N SEED | step SPEC OPTIMIZER SETTINGS PARAMS GRAD...\n");
	return 2;
}
