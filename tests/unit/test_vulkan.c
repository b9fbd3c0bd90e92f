// SPDX-License-Identifier: MIT
/*
 * test_vulkan.c - what is particular to the Vulkan backend: the devices it
 * reports, its on-disk pipeline cache (written once pipelines were built,
 * which happens at an op's first launch; a damaged or foreign one is
 * ignored), a step on every Vulkan device agreeing with cpu:0, and the
 * paths a given machine does not take on its own (descriptor-set cache,
 * staging ring, views split over several bindings), forced through
 * GPUOPT_VULKAN_DEBUG.
 * The kernels themselves are checked by the optimizer tests, which run
 * every optimizer on every device.
 *
 * Exits 77 when there is no Vulkan device, unless GPUOPT_TEST_REQUIRE
 * names vulkan.
 */
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vulkan/vulkan.h>
#include "testutil.h"
#include "core/diskcache_i.h"
#include "backend/embedded_i.h"
#include "backend/vulkan/vulkan_i.h"

#define ADAM_N		1021	/* not a multiple of 4: a tail */
#define ADAM_STEPS	5
#define MAX_VK		16
#define TOL		1e-5

/* ---- helpers ------------------------------------------------------------ */

static int is_vulkan(struct gpo_ctx *ctx, int i)
{
	struct gpo_device_info info;

	return !gpo_device_info(ctx, i, &info) &&
	       !strcmp(info.backend, "vulkan") && tu_wanted(&info);
}

static struct gpo_ctx *new_ctx(void)
{
	struct gpo_ctx *ctx;

	ck_assert_msg(!gpo_ctx_new(&ctx, 0), "%s", gpo_errmsg());
	return ctx;
}

struct adam_result {
	float *p, *m, *v;
};

/*
 * @kind (Adam or AdamW with amsgrad, or LAMB) with weight decay for
 * ADAM_STEPS steps over @n parameters, random parameters and fresh random
 * gradients drawn from @seed, on @dev, with @config on top. Results are
 * read into poisoned buffers, so an element never written shows as NaN.
 */
static void run_opt(struct gpo_device *dev, enum gpo_optim_kind kind,
		    uint64_t seed, uint64_t n, const char *config,
		    struct adam_result *r)
{
	const char *base = kind == GPO_LAMB ? "lr=0.01 weight_decay=0.1" :
			   "lr=0.01 weight_decay=0.1 amsgrad=1";
	size_t bytes = n * sizeof(float);
	float *p = malloc(bytes), *g = malloc(bytes);
	struct gpo_step_info info;
	struct gpo_optim *opt;
	uint64_t s = seed;
	int step;

	r->p = malloc(bytes);
	r->m = malloc(bytes);
	r->v = malloc(bytes);
	ck_assert(p && g && r->p && r->m && r->v);
	ck_assert(!gpo_optim_new(dev, kind, &opt));
	ck_assert_msg(!gpo_optim_configure(opt, 0, base), "%s",
		      gpo_errmsg());
	ck_assert_msg(!gpo_optim_configure(opt, 0, config), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	tu_fill(p, n, &s, -1, 1);
	ck_assert(!gpo_optim_write(opt, "param", "w", p, bytes));
	for (step = 0; step < ADAM_STEPS; step++) {
		tu_fill(g, n, &s, -1, 1);
		ck_assert(!gpo_optim_write(opt, "grad", "w", g, bytes));
		ck_assert_msg(!gpo_optim_step(opt, &info), "step: %s",
			      gpo_errmsg());
		ck_assert(!info.skipped);
	}
	ck_assert_int_eq(info.step, ADAM_STEPS);
	tu_poison(r->p, n);
	tu_poison(r->m, n);
	tu_poison(r->v, n);
	ck_assert(!gpo_optim_read(opt, "param", "w", r->p, bytes));
	ck_assert(!gpo_optim_read(opt, "exp_avg", "w", r->m, bytes));
	ck_assert(!gpo_optim_read(opt, "exp_avg_sq", "w", r->v, bytes));
	gpo_optim_free(opt);
	free(p);
	free(g);
}

static void free_result(struct adam_result *r)
{
	free(r->p);
	free(r->m);
	free(r->v);
}

/*
 * Max relative error of @got against @want, elements below @floor of the
 * largest held to that as an absolute error: where terms cancel, a
 * relative error measures the cancellation, not the kernel.
 */
static double rel_err(const float *got, const float *want, size_t n,
		      double floor)
{
	double *w = malloc(n * sizeof(*w)), max = 0, err;
	size_t i;

	ck_assert(w != NULL);
	for (i = 0; i < n; i++) {
		w[i] = want[i];
		if (fabs(w[i]) > max)
			max = fabs(w[i]);
	}
	err = tu_max_rel_err(got, w, n, max > 0 ? floor * max : 1e-30);
	free(w);
	return err;
}

/* @kind on @dev against cpu:0 over @n, with @config: all within TOL. */
static void check_kind_matches_cpu(struct gpo_device *dev,
				   struct gpo_device *cpu,
				   enum gpo_optim_kind kind, uint64_t n,
				   const char *config)
{
	struct adam_result want, got;
	uint64_t seed = tu_rng("vulkan adam");
	double ep, em, ev, floor = 1e-2;

	/*
	 * The global norm is a float sum in another order than the cpu's:
	 * the clip factor differs by ~1e-7, which a moment that cancels to
	 * 1e-2 of its terms turns into 1e-5. Hold such elements to 1e-1.
	 */
	if (strstr(config, "clip_norm"))
		floor = 1e-1;
	run_opt(cpu, kind, seed, n, config, &want);
	run_opt(dev, kind, seed, n, config, &got);
	ep = rel_err(got.p, want.p, n, floor);
	em = rel_err(got.m, want.m, n, floor);
	ev = rel_err(got.v, want.v, n, floor);
	fprintf(stderr, "%s %s n=%llu \"%s\" vs cpu:0: param %.3g exp_avg %.3g exp_avg_sq %.3g\n",
		tu_device_id(dev), gpo_optim_kind_name(kind),
		(unsigned long long)n, config, ep, em, ev);
	ck_assert_msg(ep < TOL && em < TOL && ev < TOL,
		      "%s: %s n=%llu \"%s\" differs from cpu:0: param %g exp_avg %g exp_avg_sq %g",
		      tu_device_id(dev), gpo_optim_kind_name(kind),
		      (unsigned long long)n, config, ep, em, ev);
	free_result(&want);
	free_result(&got);
}

static void check_adam(struct gpo_device *dev, struct gpo_device *cpu,
		       uint64_t n, const char *config)
{
	check_kind_matches_cpu(dev, cpu, GPO_ADAMW, n, config);
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_vulkan_devices_report_sane_properties)
{
	struct gpo_ctx *ctx = tu_ctx();
	struct gpo_device_info info;
	struct gpo_pool_stats st;
	struct gpo_device *dev;
	int i, k, n = 0;

	for (i = 0; i < gpo_device_count(ctx); i++) {
		char id[32];

		if (!is_vulkan(ctx, i))
			continue;
		ck_assert(!gpo_device_info(ctx, i, &info));
		snprintf(id, sizeof(id), "vulkan:%d", n++);
		ck_assert_str_eq(info.id, id);
		ck_assert_int_eq(info.index, i);
		ck_assert_msg(info.name[0] && info.vendor[0] && info.driver[0],
			      "%s: name '%s' vendor '%s' driver '%s'", id,
			      info.name, info.vendor, info.driver);
		ck_assert_msg(strlen(info.uuid) == 32, "%s: uuid '%s'", id,
			      info.uuid);
		for (k = 0; k < 32; k++)
			ck_assert_msg(isxdigit((unsigned char)info.uuid[k]) &&
				      !isupper((unsigned char)info.uuid[k]),
				      "%s: uuid '%s'", id, info.uuid);
		ck_assert_msg(info.type == GPO_DEVICE_DISCRETE_GPU ||
			      info.type == GPO_DEVICE_INTEGRATED_GPU ||
			      info.type == GPO_DEVICE_VIRTUAL_GPU ||
			      info.type == GPO_DEVICE_CPU_IMPL ||
			      info.type == GPO_DEVICE_OTHER,
			      "%s: type %d", id, info.type);
		ck_assert_msg(info.mem_total_bytes >= (64ull << 20),
			      "%s: %llu bytes of memory", id,
			      (unsigned long long)info.mem_total_bytes);
		ck_assert_msg(info.compute_units < 100000, "%s: %u units", id,
			      info.compute_units);
		ck_assert_int_eq(info.enabled, 1);

		ck_assert_msg(!gpo_device_get(ctx, i, &dev), "%s: %s", id,
			      gpo_errmsg());
		ck_assert(!gpo_pool_stats(dev, &st));
		fprintf(stderr, "%s: %s / %s / %s / %s, %u units, %llu MiB\n",
			id, info.name, info.vendor, info.driver,
			gpo_device_type_name(info.type), info.compute_units,
			(unsigned long long)(info.mem_total_bytes >> 20));
	}
	ck_assert_msg(n > 0, "no Vulkan device (probe log: %s)",
		      gpo_ctx_probe_log(ctx));
}
END_TEST

START_TEST(test_vulkan_adam_matches_cpu)
{
	struct gpo_device *devs[MAX_VK], *cpu;
	int i, n = tu_open_backend(tu_ctx(), "vulkan", devs, MAX_VK, &cpu);

	for (i = 0; i < n; i++) {
		check_kind_matches_cpu(devs[i], cpu, GPO_ADAM, ADAM_N, "");
		check_adam(devs[i], cpu, ADAM_N, "");
		check_adam(devs[i], cpu, ADAM_N, "clip_norm=0.5");
	}
}
END_TEST

/*
 * Open every Vulkan device and run a step on each: pipelines are built at
 * an op's first launch, and the pipeline cache written after them.
 */
static int open_and_step(struct gpo_ctx *ctx, struct gpo_device **devs,
			 struct gpo_device **cpu)
{
	int i, n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, cpu);

	for (i = 0; i < n; i++)
		check_adam(devs[i], *cpu, ADAM_N, "");
	return n;
}

START_TEST(test_vulkan_first_open_writes_no_pipeline_cache)
{
	struct gpo_device *devs[MAX_VK], *cpu;
	char dir[64], path[4200];
	struct gpo_ctx *ctx;
	uint64_t key;
	int n;

	/* pipelines come on first use: opening alone builds none */
	tu_cache_dir_new(dir, sizeof(dir));
	ctx = new_ctx();
	n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, &cpu);
	gpo_ctx_free(ctx);
	ck_assert_msg(tu_cache_entries(dir, "vulkan", path, sizeof(path),
				       &key) == 0,
		      "a pipeline cache in %s after opening %d devices", dir,
		      n);
	tu_cache_dir_remove(dir);
}
END_TEST

START_TEST(test_vulkan_first_launch_writes_pipeline_cache)
{
	struct gpo_device *devs[MAX_VK], *cpu;
	char dir[64], path[4200];
	struct gpo_ctx *ctx;
	uint64_t key;
	size_t size;
	void *data;
	int n;

	tu_cache_dir_new(dir, sizeof(dir));
	ctx = new_ctx();
	n = open_and_step(ctx, devs, &cpu);
	gpo_ctx_free(ctx);
	/* one entry per kind of device, each a whole pipeline cache */
	ck_assert_msg(tu_cache_entries(dir, "vulkan", path, sizeof(path),
				       &key) >= 1,
		      "no pipeline cache in %s after a step on %d devices",
		      dir, n);
	ck_assert(!gpo__diskcache_load("vulkan", key, &data, &size));
	ck_assert_uint_ge(size, sizeof(VkPipelineCacheHeaderVersionOne));
	free(data);
	tu_cache_dir_remove(dir);
}
END_TEST

enum damage { WRONG_HEADER, WRONG_VERSION, GARBAGE_BODY, FLIPPED_BYTES,
	      TRUNCATED, DAMAGE_KINDS };

static const char *const damage_names[DAMAGE_KINDS] = {
	"wrong header", "wrong header version", "garbage after the header",
	"flipped bytes", "truncated",
};

/*
 * Damage the cache entry (@path, @key). The first three keep the entry a
 * valid disk-cache file (so only the backend's header check or the
 * driver can catch them); the last two break the file itself.
 */
static void damage_entry(const char *path, uint64_t key, enum damage how,
			 uint64_t *rng)
{
	VkPipelineCacheHeaderVersionOne h;
	unsigned char *bytes;
	size_t size, i;
	void *data;
	long len;
	FILE *f;

	ck_assert(!gpo__diskcache_load("vulkan", key, &data, &size));
	ck_assert_uint_ge(size, sizeof(h));
	bytes = data;
	memcpy(&h, bytes, sizeof(h));
	switch (how) {
	case WRONG_HEADER:
		/* another vendor's, another device's cache */
		h.vendorID ^= 0x5a5a;
		h.deviceID ^= 0x1234;
		h.pipelineCacheUUID[3] ^= 0xff;
		memcpy(bytes, &h, sizeof(h));
		break;
	case WRONG_VERSION:
		h.headerVersion = (VkPipelineCacheHeaderVersion)7;
		memcpy(bytes, &h, sizeof(h));
		break;
	case GARBAGE_BODY:
		/* a driver that caches nothing (lavapipe) wrote no body */
		if (size < (size_t)h.headerSize + 64) {
			bytes = realloc(data, h.headerSize + 64);
			ck_assert(bytes != NULL);
			data = bytes;
			size = h.headerSize + 64;
		}
		for (i = h.headerSize; i < size; i++)
			bytes[i] = (unsigned char)tu_rand(rng, 0, 256);
		break;
	default:
		break;
	}
	if (how <= GARBAGE_BODY) {
		ck_assert(!gpo__diskcache_store("vulkan", key, data, size));
		free(data);
		return;
	}
	free(data);
	f = fopen(path, "r+b");
	ck_assert(f != NULL);
	ck_assert(!fseek(f, 0, SEEK_END));
	len = ftell(f);
	ck_assert_int_gt(len, 0);
	if (how == FLIPPED_BYTES) {
		for (i = 0; i < 8; i++) {
			long at = (long)tu_rand(rng, 0, (double)len);
			int c;

			ck_assert(!fseek(f, at, SEEK_SET));
			c = fgetc(f);
			ck_assert(!fseek(f, at, SEEK_SET));
			fputc(c ^ 0xff, f);
		}
		fclose(f);
	} else {
		fclose(f);
		ck_assert(!truncate(path, len / 2));
	}
}

START_TEST(test_vulkan_damaged_pipeline_cache_is_ignored)
{
	struct gpo_device *devs[MAX_VK], *cpu;
	uint64_t key, rng = tu_rng("vulkan cache damage");
	char dir[64], path[4200];
	struct gpo_ctx *ctx;
	size_t size;
	void *data;
	int how, i, n;

	tu_cache_dir_new(dir, sizeof(dir));
	ctx = new_ctx();
	open_and_step(ctx, devs, &cpu);
	gpo_ctx_free(ctx);
	ck_assert_int_ge(tu_cache_entries(dir, "vulkan", path, sizeof(path),
					  &key), 1);

	for (how = 0; how < DAMAGE_KINDS; how++) {
		/* damage every device's entry the same way */
		DIR *d = opendir(dir);
		struct dirent *de;
		unsigned long long k;

		ck_assert(d != NULL);
		while ((de = readdir(d))) {
			if (sscanf(de->d_name, "vulkan-%16llx.bin", &k) != 1)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir,
				 de->d_name);
			damage_entry(path, k, how, &rng);
		}
		closedir(d);

		/*
		 * the device opens, ignores it when the step builds its
		 * pipelines, and computes correctly
		 */
		ctx = new_ctx();
		n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, &cpu);
		for (i = 0; i < n; i++)
			check_adam(devs[i], cpu, ADAM_N, "");
		gpo_ctx_free(ctx);
		fprintf(stderr, "pipeline cache damaged (%s): ignored\n",
			damage_names[how]);

		/* and it was written anew, whole */
		ck_assert_int_ge(tu_cache_entries(dir, "vulkan", path,
						  sizeof(path), &key),
				 1);
		ck_assert_msg(!gpo__diskcache_load("vulkan", key, &data, &size),
			      "after %s: no valid entry", damage_names[how]);
		free(data);
	}
	tu_cache_dir_remove(dir);
}
END_TEST

/*
 * The paths this machine's device may not take by itself: descriptor
 * sets from the cache instead of push descriptors, every transfer through
 * a small staging ring (several chunks and flushes per read and write),
 * element ops split into several windows and dispatches of few groups,
 * and group ops in rows (a dispatch of full rows and one based at the
 * last, partial row). Must match cpu:0.
 */
START_TEST(test_vulkan_fallback_paths_match_cpu)
{
	struct gpo_device *devs[MAX_VK], *cpu;
	struct gpo_ctx *ctx;
	int i, k, n;

	/*
	 * 40000 parameters: AdamW's views in 3 windows of 16384, transfers
	 * in 10 chunks; the norm pass's 10 groups of 4000 floats in runs
	 * that fit 65536 bytes (optim.c)
	 */
	setenv("GPUOPT_VULKAN_DEBUG",
	       "nopush,nomap,staging=16384,range=65536,groups=2", 1);
	ctx = new_ctx();
	n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, &cpu);
	for (i = 0; i < n; i++) {
		check_adam(devs[i], cpu, 40000, "");
		check_adam(devs[i], cpu, 40000, "clip_norm=0.5");
		check_adam(devs[i], cpu, 40000, "grad_scale=64");
	}
	gpo_ctx_free(ctx);

	/*
	 * With the full range: the norm's 10 groups run as 5 rows of 2,
	 * LAMB's 10 blocks too; groups=3 leaves a partial row of one
	 * (dispatched with a base)
	 */
	for (k = 0; k < 2; k++) {
		setenv("GPUOPT_VULKAN_DEBUG", k ?
		       "nopush,nomap,staging=16384,groups=3" :
		       "nopush,nomap,staging=16384,groups=2", 1);
		ctx = new_ctx();
		n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, &cpu);
		for (i = 0; i < n; i++) {
			check_adam(devs[i], cpu, 40000, "clip_norm=0.5");
			check_adam(devs[i], cpu, 40000, "grad_scale=64");
			check_kind_matches_cpu(devs[i], cpu, GPO_LAMB, 40000,
					       "");
			check_kind_matches_cpu(devs[i], cpu, GPO_LAMB, 40000,
					       "clip_norm=0.5");
		}
		gpo_ctx_free(ctx);
	}
	unsetenv("GPUOPT_VULKAN_DEBUG");
}
END_TEST

/*
 * Where mapped device memory runs out before the device does (NVIDIA's
 * resizable-BAR window, which every process's mapped blocks share), pool
 * blocks come unmapped and their transfers go through staging, made when
 * first needed. maplimit= refuses mapped blocks as the driver would:
 * none at all (0), or a first block of 64 MiB mapped and the next not.
 * Steps still match cpu:0, and an unmapped block of 20M floats gives
 * back the bytes written into it, whole and at an odd offset.
 */
START_TEST(test_vulkan_unmapped_blocks_when_mapping_runs_out)
{
	struct gpo_device *devs[MAX_VK], *cpu;
	const uint64_t big = 20u << 20;
	struct gpo_ctx *ctx;
	int i, k, n;

	for (k = 0; k < 2; k++) {
		setenv("GPUOPT_VULKAN_DEBUG",
		       k ? "maplimit=67108864" : "maplimit=0", 1);
		ctx = new_ctx();
		n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, &cpu);
		for (i = 0; i < n; i++) {
			struct gpo_pool_stats st;
			struct gpo_optim *opt;
			float *w = malloc(big * 4), *r = malloc(big * 4);
			uint64_t seed = tu_rng("unmapped"), nb = big;

			ck_assert(w && r);
			/* an 80 MiB block past the limit: unmapped */
			ck_assert(!gpo_optim_new(devs[i], GPO_SGD, &opt));
			ck_assert(!gpo_optim_add_tensor(opt, "w", 1, &nb, 0));
			tu_fill(w, big, &seed, -1, 1);
			ck_assert_msg(!gpo_optim_write(opt, "param", "w", w,
						       big * 4),
				      "%s", gpo_errmsg());
			tu_poison(r, big);
			ck_assert_msg(!gpo_optim_read(opt, "param", "w", r,
						      big * 4),
				      "%s", gpo_errmsg());
			ck_assert(!memcmp(w, r, big * 4));
			/* then a 64 MiB block, mapped when k is 1 */
			check_adam(devs[i], cpu, 40000, "");
			check_adam(devs[i], cpu, 40000, "clip_norm=0.5");
			ck_assert(!gpo_pool_stats(devs[i], &st));
			ck_assert_uint_ge(st.capacity_bytes, big * 4);
			ck_assert(!gpo_optim_read(opt, "param", "w", r,
						  big * 4));
			ck_assert(!memcmp(w, r, big * 4));
			gpo_optim_free(opt);
			free(w);
			free(r);
		}
		gpo_ctx_free(ctx);
	}
	unsetenv("GPUOPT_VULKAN_DEBUG");
}
END_TEST

/* ---- kernels that size themselves by shared memory ---------------------- */

#define AT_BH	3
#define AT_T	77	/* a block of 64 rows and a partial one */
#define AT_HD	24
#define AT_N	(AT_BH * AT_T * AT_HD)

/*
 * loss = sum(w * attention(q, k, v)) on @dev, q, k, v parameters of an
 * SGD optimizer, w an input: y and the three gradients into @out (read
 * only when the run succeeds). Returns the run's result; @param gets the
 * parameters as they are after it.
 */
static int attn_run(struct gpo_device *dev, float *const in[4],
		    float *const out[4], float *const param[3])
{
	static const char *const names[3] = { "q", "k", "v" };
	uint64_t s[3] = { AT_BH, AT_T, AT_HD };
	struct gpo_tensor *p[3], *w, *y, *loss;
	struct gpo_optim *opt;
	struct gpo_graph *g;
	int i, ret;

	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &opt), 0);
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_ge(gpo_optim_add_tensor(opt, names[i], 3, s, 0),
				 0);
		p[i] = gpo_tensor_param(g, opt, names[i]);
	}
	w = gpo_tensor_input(g, "w", GPO_F32, 3, s);
	y = gpo_causal_attention(g, p[0], p[1], p[2], 0.2);
	loss = gpo_sum(g, gpo_sum(g, gpo_sum(g, gpo_mul(g, y, w), -1), -1),
		       -1);
	ck_assert_msg(loss != NULL, "%s", gpo_errmsg());
	ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(gpo_optim_write(opt, "param", names[i], in[i],
						 AT_N * 4), 0);
	ck_assert_int_eq(gpo_tensor_write(w, in[3], AT_N * 4), 0);
	ret = gpo_graph_run(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD);
	for (i = 0; i < 4; i++)
		tu_poison(out[i], AT_N);
	if (!ret) {
		ck_assert_int_eq(gpo_tensor_read(y, out[0], AT_N * 4), 0);
		for (i = 0; i < 3; i++)
			ck_assert_int_eq(gpo_optim_read(opt, "grad", names[i],
							out[i + 1], AT_N * 4),
					 0);
	}
	for (i = 0; i < 3; i++) {
		tu_poison(param[i], AT_N);
		ck_assert_int_eq(gpo_optim_read(opt, "param", names[i],
						param[i], AT_N * 4), 0);
	}
	gpo_graph_free(g);
	gpo_optim_free(opt);
	return ret;
}

/*
 * The attention kernels step by 32 columns where shared memory holds it,
 * by 16 where only that fits (shared= below 35 KiB): the same sums in the
 * same order, so the same bits, on every device, and cpu:0's values. With
 * less than the 27 KiB that 16 needs, the attention ops fail with
 * -ENODEV and a message, the parameters stay as they were, and the
 * device still runs everything else.
 */
START_TEST(test_vulkan_attention_fits_shared_memory)
{
	static const char *const envs[3] = { NULL, "shared=30000",
					     "shared=16384" };
	struct gpo_device *devs[MAX_VK], *cpu;
	uint64_t rng = tu_rng("attn_shared");
	float *in[4], *ref[4], *got[3][MAX_VK][4], *par[3];
	struct gpo_ctx *ctx;
	int e, i, k, n = 0, ret;
	size_t j;

	for (k = 0; k < 4; k++) {
		in[k] = malloc(AT_N * 4);
		ref[k] = malloc(AT_N * 4);
		ck_assert(in[k] && ref[k]);
		tu_fill(in[k], AT_N, &rng, -2, 2);
	}
	for (k = 0; k < 3; k++) {
		par[k] = malloc(AT_N * 4);
		ck_assert(par[k]);
	}
	for (e = 0; e < 3; e++) {
		if (envs[e])
			setenv("GPUOPT_VULKAN_DEBUG", envs[e], 1);
		else
			unsetenv("GPUOPT_VULKAN_DEBUG");
		ctx = new_ctx();
		n = tu_open_backend(ctx, "vulkan", devs, MAX_VK, &cpu);
		if (!e)
			ck_assert_int_eq(attn_run(cpu, in, ref, par), 0);
		for (i = 0; i < n; i++) {
			const char *id = tu_device_id(devs[i]);

			for (k = 0; k < 4; k++) {
				got[e][i][k] = malloc(AT_N * 4);
				ck_assert(got[e][i][k]);
			}
			ret = attn_run(devs[i], in, got[e][i], par);
			for (k = 0; k < 3; k++)
				ck_assert_msg(!memcmp(par[k], in[k], AT_N * 4),
					      "%s %s: parameter %d changed", id,
					      envs[e] ? envs[e] : "", k);
			if (e == 2) {
				ck_assert_msg(ret == -ENODEV, "%s shared=16384: %d",
					      id, ret);
				ck_assert_msg(strstr(gpo_errmsg(),
						     "shared memory") != NULL,
					      "%s: %s", id, gpo_errmsg());
				continue;
			}
			ck_assert_msg(!ret, "%s %s: %s", id,
				      envs[e] ? envs[e] : "", gpo_errmsg());
			for (k = 0; k < 4; k++)
				for (j = 0; j < AT_N; j++)
					ck_assert_msg(fabs(got[e][i][k][j] -
							   ref[k][j]) <=
						      1e-4 * (1 + fabs(ref[k][j])),
						      "%s %s: output %d [%zu] %g, cpu:0 %g",
						      id, envs[e] ? envs[e] : "",
						      k, j, got[e][i][k][j],
						      ref[k][j]);
			if (e == 1)
				for (k = 0; k < 4; k++)
					ck_assert_msg(!memcmp(got[1][i][k],
							      got[0][i][k],
							      AT_N * 4),
						      "%s: output %d: other bits at step 16",
						      id, k);
		}
		if (e == 2) {
			/* the rest still runs: AdamW steps as cpu:0's */
			for (i = 0; i < n; i++)
				check_adam(devs[i], cpu, 1021, "");
		}
		gpo_ctx_free(ctx);
	}
	unsetenv("GPUOPT_VULKAN_DEBUG");
	for (e = 0; e < 3; e++)
		for (i = 0; i < n; i++)
			for (k = 0; k < 4; k++)
				free(got[e][i][k]);
	for (k = 0; k < 4; k++) {
		free(in[k]);
		free(ref[k]);
	}
	for (k = 0; k < 3; k++)
		free(par[k]);
}
END_TEST

/* ---- matmul_coop's module for VK_KHR_cooperative_matrix (coopkhr.c) ---- */

#define SPV_LEN(w)	((w) >> 16)
#define SPV_OP(w)	((w) & 0xffffu)

/* the embedded module @name, as words in a new array of *@n */
static uint32_t *spv_words(const char *name, size_t *n)
{
	const struct embedded_file *f;
	uint32_t *w;

	f = gpo__embedded_find(gpo__embedded_spv, name);
	ck_assert_msg(f && f->size >= 20 && f->size % 4 == 0, "no %s", name);
	w = malloc(f->size);
	ck_assert(w);
	memcpy(w, f->data, f->size);
	*n = f->size / 4;
	return w;
}

/* does every instruction of @w end inside it? */
static int spv_walks(const uint32_t *w, size_t n)
{
	size_t i = 5;

	while (i < n) {
		if (!SPV_LEN(w[i]) || SPV_LEN(w[i]) > n - i)
			return 0;
		i += SPV_LEN(w[i]);
	}
	return n >= 5;
}

/*
 * the first instruction of opcode @op at or after word @from (where an
 * instruction starts), or 0
 */
static size_t spv_next(const uint32_t *w, size_t n, size_t from, uint32_t op)
{
	size_t i;

	for (i = from < 5 ? 5 : from; i < n; i += SPV_LEN(w[i]))
		if (SPV_OP(w[i]) == op)
			return i;
	return 0;
}

static size_t spv_count(const uint32_t *w, size_t n, uint32_t op)
{
	size_t i, c = 0;

	for (i = spv_next(w, n, 5, op); i;
	     i = spv_next(w, n, i + SPV_LEN(w[i]), op))
		c++;
	return c;
}

/*
 * the instruction that defines @id: a type (result in word 1) or a value
 * (result type, then result)
 */
static const uint32_t *spv_def(const uint32_t *w, size_t n, uint32_t id)
{
	/* the instructions with a result type that these tests look for */
	static const uint32_t valued[] = {
		1, 41, 42, 43, 50, 61, 81, 83, 169, 245, 4457, 4459, 5359,
		5361,
	};
	size_t i, k;

	for (i = 5; i < n; i += SPV_LEN(w[i])) {
		uint32_t op = SPV_OP(w[i]);
		int type = (op >= 19 && op <= 39) || op == 4456 || op == 5358;
		int at = type ? 1 : 0;

		for (k = 0; !at && k < sizeof(valued) / sizeof(valued[0]); k++)
			if (op == valued[k])
				at = 2;
		if (at && SPV_LEN(w[i]) > (uint32_t)at && w[i + at] == id)
			return &w[i];
	}
	return NULL;
}

/* the value of the OpConstant @id */
static uint32_t spv_const(const uint32_t *w, size_t n, uint32_t id)
{
	const uint32_t *x = spv_def(w, n, id);

	ck_assert_msg(x && SPV_OP(x[0]) == 43 && SPV_LEN(x[0]) == 4,
		      "%%%u is not a 32-bit constant", id);
	return x[3];
}

/*
 * the use of the KHR matrix type of value @v, a 32-bit unsigned
 * constant declared before the type
 */
static uint32_t spv_use(const uint32_t *w, size_t n, uint32_t v, int is_type)
{
	const uint32_t *x = is_type ? NULL : spv_def(w, n, v), *c, *u;
	uint32_t t = is_type ? v : x[1];

	x = spv_def(w, n, t);
	ck_assert_msg(x && SPV_OP(x[0]) == 4456 && SPV_LEN(x[0]) == 7,
		      "%%%u is not a KHR matrix type", t);
	c = spv_def(w, n, x[6]);
	u = c ? spv_def(w, n, c[1]) : NULL;
	ck_assert_msg(c && c < x && u && SPV_OP(u[0]) == 21 && u[2] == 32 &&
		      u[3] == 0, "%%%u's use %%%u", t, x[6]);
	return spv_const(w, n, x[6]);
}

/* is the string of OpExtension @name in @w? */
static int spv_has_ext(const uint32_t *w, size_t n, const char *name)
{
	size_t i;

	for (i = spv_next(w, n, 5, 10); i;
	     i = spv_next(w, n, i + SPV_LEN(w[i]), 10))
		if (!strcmp((const char *)&w[i + 1], name))
			return 1;
	return 0;
}

/*
 * Each NV instruction @nv of @w against its KHR one @khr of @o, in order:
 * the same words, but for the stride and the column-major boolean at @s,
 * which become the layout constant (true: 1, false: 0) and the stride
 */
static void check_layouts(const uint32_t *w, size_t n, const uint32_t *o,
			  size_t on, uint32_t nv, uint32_t khr, uint32_t s)
{
	size_t j, k;
	uint32_t i;

	for (j = spv_next(w, n, 5, nv), k = spv_next(o, on, 5, khr); j && k;
	     j = spv_next(w, n, j + SPV_LEN(w[j]), nv),
	     k = spv_next(o, on, k + SPV_LEN(o[k]), khr)) {
		const uint32_t *b = spv_def(w, n, w[j + s + 1]);

		ck_assert(b && (SPV_OP(b[0]) == 41 || SPV_OP(b[0]) == 42));
		ck_assert_uint_eq(spv_const(o, on, o[k + s]),
				  SPV_OP(b[0]) == 41);
		ck_assert_uint_eq(o[k + s + 1], w[j + s]);
		ck_assert_uint_eq(SPV_LEN(o[k]), SPV_LEN(w[j]));
		for (i = 1; i < SPV_LEN(w[j]); i++)
			if (i != s && i != s + 1)
				ck_assert_uint_eq(o[k + i], w[j + i]);
	}
	ck_assert(!j && !k);
}

START_TEST(test_vulkan_coop_modules_become_khr)
{
	static const char *const names[] = {
		"matmul_coop.f32", "matmul_coop.f32.ab",
	};
	size_t t;

	for (t = 0; t < sizeof(names) / sizeof(names[0]); t++) {
		size_t n, on, i, j, k;
		uint32_t *w = spv_words(names[t], &n), *o;

		ck_assert_msg(!gpo__spv_coop_khr(w, n, &o, &on), "%s",
			      names[t]);
		ck_assert(spv_walks(o, on));
		ck_assert_uint_eq(o[0], w[0]);
		ck_assert_uint_eq(o[3], w[3] + 3);
		/* nothing of the NV extension is left */
		for (i = 5358; i <= 5362; i++)
			ck_assert_uint_eq(spv_count(o, on, i), 0);
		for (i = spv_next(o, on, 5, 17); i;
		     i = spv_next(o, on, i + SPV_LEN(o[i]), 17))
			ck_assert_uint_ne(o[i + 1], 5357);
		ck_assert(spv_has_ext(o, on, "SPV_KHR_cooperative_matrix"));
		ck_assert(!spv_has_ext(o, on, "SPV_NV_cooperative_matrix"));
		/* one KHR instruction for each NV one: types, load, store... */
		for (i = 0; i < 5; i++)
			ck_assert_uint_eq(spv_count(o, on, 4456 + i),
					  spv_count(w, n, 5358 + i));
		ck_assert_uint_eq(spv_count(o, on, 43), spv_count(w, n, 43) + 3);
		/* each type, in order: the NV one's operands, and a use */
		for (j = spv_next(w, n, 5, 5358), k = spv_next(o, on, 5, 4456);
		     j && k; j = spv_next(w, n, j + SPV_LEN(w[j]), 5358),
		     k = spv_next(o, on, k + SPV_LEN(o[k]), 4456))
			ck_assert(!memcmp(&o[k + 1], &w[j + 1], 5 * 4) &&
				  spv_use(o, on, o[k + 1], 1) <= 2);
		ck_assert(!j && !k);
		ck_assert(spv_count(o, on, 4459) > 0);
		/* each product's matrices have the uses of their places */
		for (i = spv_next(o, on, 5, 4459); i;
		     i = spv_next(o, on, i + SPV_LEN(o[i]), 4459)) {
			ck_assert_uint_eq(spv_use(o, on, o[i + 1], 1), 2);
			ck_assert_uint_eq(spv_use(o, on, o[i + 3], 0), 0);
			ck_assert_uint_eq(spv_use(o, on, o[i + 4], 0), 1);
			ck_assert_uint_eq(spv_use(o, on, o[i + 5], 0), 2);
		}
		/* each load and store: the layout is what the boolean said */
		check_layouts(w, n, o, on, 5359, 4457, 4);
		check_layouts(w, n, o, on, 5360, 4458, 3);
		/* and a KHR module is not rewritten again */
		free(w);
		w = o;
		ck_assert_int_eq(gpo__spv_coop_khr(w, on, &o, &n), -EINVAL);
		ck_assert(!o && !n);
		free(w);
	}
}
END_TEST

/* gpo__spv_coop_khr() on @w, which must fail and leave nothing */
static void khr_refused(const uint32_t *w, size_t n, const char *what)
{
	uint32_t *o = (uint32_t *)(uintptr_t)1;
	size_t on = 1;

	ck_assert_msg(gpo__spv_coop_khr(w, n, &o, &on) == -EINVAL,
		      "%s: rewritten", what);
	ck_assert_msg(!o && !on, "%s: output left", what);
}

/* append the instruction @op of @len words (@len - 1 operands) */
static size_t put(uint32_t *w, size_t n, uint32_t op, uint32_t len, ...)
{
	va_list ap;
	uint32_t i;

	w[n++] = len << 16 | op;
	va_start(ap, len);
	for (i = 1; i < len; i++)
		w[n++] = va_arg(ap, uint32_t);
	va_end(ap);
	return n;
}

/*
 * A small module of one NV product, in @w: %1 half (a signed 32-bit int
 * if @int_type) and %10 float; %2 the 32-bit unsigned int, after the
 * matrix types if @uint_late (the constants then of a signed %6); %3 16,
 * %4 3 (Subgroup), %8 16; the types %5 (A), %7 (B, its own rows) and %9
 * (accumulator), %5 twice if @dup; undefined values of each and their
 * product. Without the NV extension if @no_ext. Returns its words.
 */
static size_t khr_tiny(uint32_t *w, int no_ext, int int_type, int uint_late,
		       int dup)
{
	static const char ext[] = "SPV_NV_cooperative_matrix";
	uint32_t ct = uint_late ? 6 : 2;
	size_t n = 5;

	w[0] = 0x07230203;
	w[1] = 0x00010300;
	w[2] = 0;
	w[3] = 16;
	w[4] = 0;
	n = put(w, n, 17, 2, 5357u);
	if (!no_ext) {
		w[n++] = 8u << 16 | 10;
		memset(&w[n], 0, 28);
		memcpy(&w[n], ext, sizeof(ext));
		n += 7;
	}
	if (int_type)
		n = put(w, n, 21, 4, 1u, 32u, 1u);
	else
		n = put(w, n, 22, 3, 1u, 16u);
	n = put(w, n, 22, 3, 10u, 32u);
	n = put(w, n, 21, 4, ct, 32u, uint_late ? 1u : 0u);
	n = put(w, n, 43, 4, ct, 3u, 16u);
	n = put(w, n, 43, 4, ct, 4u, 3u);
	n = put(w, n, 43, 4, ct, 8u, 16u);
	n = put(w, n, 5358, 6, 5u, 1u, 4u, 3u, 3u);
	if (dup)
		n = put(w, n, 5358, 6, 5u, 1u, 4u, 3u, 3u);
	n = put(w, n, 5358, 6, 7u, 1u, 4u, 8u, 3u);
	n = put(w, n, 5358, 6, 9u, 10u, 4u, 3u, 3u);
	if (uint_late)
		n = put(w, n, 21, 4, 2u, 32u, 0u);
	n = put(w, n, 1, 3, 5u, 11u);
	n = put(w, n, 1, 3, 7u, 12u);
	n = put(w, n, 1, 3, 9u, 13u);
	return put(w, n, 5361, 6, 9u, 14u, 11u, 12u, 13u);
}

START_TEST(test_vulkan_coop_khr_refuses_what_it_cannot_be_sure_of)
{
	size_t n, i, m;
	uint32_t *w = spv_words("matmul_coop.f32", &n), *c, *o;
	uint64_t rng = tu_rng("coopkhr");
	int kept = 0;

	c = malloc(n * 4);
	ck_assert(c);
	khr_refused(w, 4, "4 words");
	memcpy(c, w, n * 4);
	c[0] ^= 1;
	khr_refused(c, n, "bad magic");
	i = spv_next(w, n, 5, 5361);
	ck_assert(i);
	khr_refused(w, i + 2, "cut inside an instruction");
	memcpy(c, w, n * 4);
	c[5] &= 0xffffu;
	khr_refused(c, n, "an instruction of no words");
	/* a product with A and B swapped: a type of two uses */
	memcpy(c, w, n * 4);
	i = spv_next(c, n, 5, 5361);
	ck_assert(i);
	m = c[i + 3];
	c[i + 3] = c[i + 4];
	c[i + 4] = (uint32_t)m;
	khr_refused(c, n, "A and B swapped");
	/* a load whose column-major operand is no boolean constant */
	memcpy(c, w, n * 4);
	i = spv_next(c, n, 5, 5359);
	ck_assert(i);
	c[i + 5] = c[i + 4];
	khr_refused(c, n, "a run-time layout");
	/* a small module rewrites; each of its faults is refused */
	{
		uint32_t t[96];
		size_t tn = khr_tiny(t, 0, 0, 0, 0);

		ck_assert(!gpo__spv_coop_khr(t, tn, &o, &m));
		ck_assert(spv_walks(o, m) && m == tn + 3 + 12);
		free(o);
		khr_refused(t, khr_tiny(t, 1, 0, 0, 0), "no NV extension");
		khr_refused(t, khr_tiny(t, 0, 1, 0, 0), "integer matrices");
		khr_refused(t, khr_tiny(t, 0, 0, 1, 0),
			    "the matrix types before the constants' type");
		khr_refused(t, khr_tiny(t, 0, 0, 0, 1), "a type twice");
	}
	/* a bound past what the words could declare: refused at once */
	memcpy(c, w, n * 4);
	c[3] = 0xfffffffcu;
	khr_refused(c, n, "a bound of 2^32 - 4");
	/* a module without cooperative matrices */
	free(c);
	c = spv_words("copy.f32", &m);
	khr_refused(c, m, "copy.f32");
	free(c);
	/*
	 * Words changed at random: refused, or a module whose every
	 * instruction ends inside it; never a fault (ASan, valgrind)
	 */
	c = malloc(n * 4);
	ck_assert(c);
	/* a last instruction of one word that would have operands */
	memcpy(c, w, n * 4);
	c[n - 1] = 1u << 16 | 21;
	i = (size_t)gpo__spv_coop_khr(c, n, &o, &m);
	ck_assert((int)i == 0 || (int)i == -EINVAL);
	free(o);
	for (i = 0; i < 400; i++) {
		size_t at = 5 + (size_t)tu_rand(&rng, 0, (double)(n - 5)), on;
		uint32_t v = (uint32_t)tu_rand(&rng, 0, 4294967296.0);
		int ret;

		memcpy(c, w, n * 4);
		/* small numbers too: word counts, ids and opcodes */
		c[at] = i % 2 ? v : (v & 0x3ffffu);
		ret = gpo__spv_coop_khr(c, n, &o, &on);
		ck_assert_msg(ret == 0 || ret == -EINVAL, "%d", ret);
		if (!ret) {
			ck_assert(spv_walks(o, on));
			kept++;
		}
		free(o);
	}
	fprintf(stderr, "coopkhr: %d of 400 changed modules rewritten\n",
		kept);
	free(c);
	free(w);
}
END_TEST

/* ---- main --------------------------------------------------------------- */

int main(void)
{
	int skip = tu_backend_gate("vulkan");
	Suite *s;
	TCase *tc;

	if (skip)
		return skip;
	s = suite_create("vulkan");
	tc = tcase_create("vulkan");
	tcase_add_test(tc, test_vulkan_devices_report_sane_properties);
	tcase_add_test(tc, test_vulkan_adam_matches_cpu);
	tcase_add_test(tc, test_vulkan_first_open_writes_no_pipeline_cache);
	tcase_add_test(tc, test_vulkan_first_launch_writes_pipeline_cache);
	tcase_add_test(tc, test_vulkan_damaged_pipeline_cache_is_ignored);
	tcase_add_test(tc, test_vulkan_fallback_paths_match_cpu);
	tcase_add_test(tc, test_vulkan_unmapped_blocks_when_mapping_runs_out);
	tcase_add_test(tc, test_vulkan_attention_fits_shared_memory);
	suite_add_tcase(s, tc);
	/* no device needed: CK_RUN_CASE=coopkhr runs these alone */
	tc = tcase_create("coopkhr");
	tcase_add_test(tc, test_vulkan_coop_modules_become_khr);
	tcase_add_test(tc, test_vulkan_coop_khr_refuses_what_it_cannot_be_sure_of);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
