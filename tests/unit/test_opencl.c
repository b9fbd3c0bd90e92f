// SPDX-License-Identifier: MIT
/*
 * test_opencl.c - what is particular to the OpenCL backend: the devices it
 * reports, its programs built on first use and not at open, its on-disk
 * program cache (populated, reused, and rebuilt when damaged), and a step
 * on every OpenCL device agreeing with cpu:0.
 * The kernels themselves are checked by the optimizer tests, which run
 * every optimizer on every device.
 *
 * Exits 77 when there is no OpenCL device, unless GPUOPT_TEST_REQUIRE
 * names opencl.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "core/diskcache_i.h"
#include "core/gpuopt_i.h"
#include "abi/mem.h"

#define ADAM_N		1021	/* not a multiple of 4: the tail runs */
#define FROZEN_N	61
#define ADAM_STEPS	5
#define MAX_OCL		16
#define FILL_N		1027	/* a tail again */
#define FILL_VALUE	0.375f

/* ---- helpers ------------------------------------------------------------ */

static int is_opencl(struct gpo_ctx *ctx, int i)
{
	struct gpo_device_info info;

	return !gpo_device_info(ctx, i, &info) &&
	       !strcmp(info.backend, "opencl") && tu_wanted(&info);
}

/* The one program cache entry in @dir: its path and key. */
static void cache_entry(const char *dir, char *path, size_t len,
			uint64_t *key)
{
	ck_assert_int_eq(tu_cache_entries(dir, "opencl", path, len, key), 1);
}

/*
 * One fill (the mem family, f32) on @dev, read back and checked: its first
 * launch on a device builds the family's program or loads it from the
 * disk cache.
 */
static void fill_once(struct gpo_device *dev)
{
	struct gpo_mem_args args = { .n = FILL_N, .value = FILL_VALUE };
	struct op_call call = {
		.op = OP_FILL, .dtype = GPO_F32, .work = FILL_N, .args = &args,
	};
	float got[FILL_N];
	int i, ret;

	ck_assert_msg(!gpo__pool_alloc(dev, sizeof(got), &call.buf[0]), "%s",
		      gpo_errmsg());
	tu_poison(got, FILL_N);
	pthread_mutex_lock(&dev->lock);
	ret = gpo__launch(dev, &call);
	if (!ret)
		ret = dev->ops->wait(dev, NULL);
	if (!ret)
		ret = dev->ops->read(dev, &call.buf[0], 0, got, sizeof(got));
	pthread_mutex_unlock(&dev->lock);
	ck_assert_msg(!ret, "fill: %s", gpo_errmsg());
	for (i = 0; i < FILL_N; i++)
		ck_assert_msg(got[i] == FILL_VALUE, "fill: [%d] = %g", i,
			      got[i]);
	gpo__pool_free(dev, &call.buf[0]);
}

/*
 * Open the best opencl device of a new context, fill once if @launch, and
 * close it again.
 */
static void open_close_once(int launch)
{
	struct gpo_device *dev;
	struct gpo_ctx *ctx;

	ck_assert(!gpo_ctx_new(&ctx, 0));
	ck_assert_msg(!gpo_device_select(ctx, "opencl", &dev), "%s",
		      gpo_errmsg());
	if (launch)
		fill_once(dev);
	gpo_ctx_free(ctx);
}

struct adam_result {
	float p[ADAM_N], m[ADAM_N], v[ADAM_N];
	float frozen[FROZEN_N];
};

/*
 * AdamW (weight decay and amsgrad on) for ADAM_STEPS steps with fresh
 * random gradients drawn from @seed, on @dev. A second group with lr = 0
 * lies right after the first group's tail: nothing may write it.
 * Results are read into poisoned buffers, so an element never written
 * shows as NaN.
 */
static void run_adam(struct gpo_device *dev, uint64_t seed,
		     const float *frozen, struct adam_result *r)
{
	uint64_t n = ADAM_N, nf = FROZEN_N, s = seed;
	float p[ADAM_N], g[ADAM_N], gf[FROZEN_N];
	struct gpo_step_info info;
	struct gpo_optim *opt;
	int step;

	ck_assert(!gpo_optim_new(dev, GPO_ADAMW, &opt));
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	ck_assert_msg(!gpo_optim_configure(opt, 0, "lr=0.01 weight_decay=0.1 "
					   "amsgrad=1"), "%s", gpo_errmsg());
	ck_assert(!gpo_optim_set(opt, 1, "lr", 0.0));
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "w", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "frozen", 1, &nf, 1), 1);
	tu_fill(p, ADAM_N, &s, -1, 1);
	ck_assert(!gpo_optim_write(opt, "param", "w", p, sizeof(p)));
	ck_assert(!gpo_optim_write(opt, "param", "frozen", frozen,
				   FROZEN_N * sizeof(float)));
	for (step = 0; step < ADAM_STEPS; step++) {
		tu_fill(g, ADAM_N, &s, -1, 1);
		tu_fill(gf, FROZEN_N, &s, -1, 1);
		ck_assert(!gpo_optim_write(opt, "grad", "w", g, sizeof(g)));
		ck_assert(!gpo_optim_write(opt, "grad", "frozen", gf,
					   sizeof(gf)));
		ck_assert_msg(!gpo_optim_step(opt, &info), "step: %s",
			      gpo_errmsg());
		ck_assert(!info.skipped);
	}
	ck_assert_int_eq(info.step, ADAM_STEPS);
	tu_poison(r->p, ADAM_N);
	tu_poison(r->m, ADAM_N);
	tu_poison(r->v, ADAM_N);
	tu_poison(r->frozen, FROZEN_N);
	ck_assert(!gpo_optim_read(opt, "param", "w", r->p, sizeof(r->p)));
	ck_assert(!gpo_optim_read(opt, "exp_avg", "w", r->m, sizeof(r->m)));
	ck_assert(!gpo_optim_read(opt, "exp_avg_sq", "w", r->v,
				  sizeof(r->v)));
	ck_assert(!gpo_optim_read(opt, "param", "frozen", r->frozen,
				  sizeof(r->frozen)));
	gpo_optim_free(opt);
}

/*
 * Max relative error of @got against @want, with elements below 1e-2 of
 * the largest held to an absolute error (where values cancel, a relative
 * error measures the cancellation, not the kernel).
 */
static double rel_err(const float *got, const float *want, size_t n)
{
	double w[ADAM_N], max = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		w[i] = want[i];
		if (fabs(w[i]) > max)
			max = fabs(w[i]);
	}
	return tu_max_rel_err(got, w, n, max > 0 ? 1e-2 * max : 1e-30);
}

/* Adam on @dev against cpu:0: same params within 1e-5, frozen untouched. */
static void check_adam_matches_cpu(struct gpo_device *dev,
				   struct gpo_device *cpu, const char *id)
{
	static struct adam_result want, got;
	uint64_t seed = tu_seed(), s = seed ^ 0x5eed;
	float frozen[FROZEN_N];
	double ep, em, ev;

	tu_fill(frozen, FROZEN_N, &s, -1, 1);
	run_adam(cpu, seed, frozen, &want);
	run_adam(dev, seed, frozen, &got);
	ep = rel_err(got.p, want.p, ADAM_N);
	em = rel_err(got.m, want.m, ADAM_N);
	ev = rel_err(got.v, want.v, ADAM_N);
	printf("%s: adamw max rel err vs cpu:0: param %.3g exp_avg %.3g exp_avg_sq %.3g\n",
	       id, ep, em, ev);
	ck_assert_msg(ep < 1e-5 && em < 1e-5 && ev < 1e-5,
		      "%s: adamw differs from cpu:0: param %g exp_avg %g exp_avg_sq %g",
		      id, ep, em, ev);
	ck_assert_msg(!memcmp(got.frozen, frozen, sizeof(frozen)),
		      "%s: a group with lr = 0 changed (written past a tail?)",
		      id);
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_opencl_devices_report_sane_properties)
{
	struct gpo_ctx *ctx = tu_ctx();
	int i, j, nth = 0;

	for (i = 0; i < gpo_device_count(ctx); i++) {
		struct gpo_device_info info;
		struct gpo_pool_stats st;
		struct gpo_device *dev;
		char id[32];

		if (!is_opencl(ctx, i))
			continue;
		ck_assert(!gpo_device_info(ctx, i, &info));
		/* ids count every opencl device, tested or not */
		snprintf(id, sizeof(id), "%s", info.id);
		ck_assert_msg(!strncmp(info.id, "opencl:", 7), "%s", info.id);
		nth++;
		ck_assert_int_eq(info.index, i);
		ck_assert_msg(info.name[0] && info.vendor[0] && info.driver[0],
			      "%s: empty name, vendor or driver", id);
		ck_assert_msg(info.type == GPO_DEVICE_DISCRETE_GPU ||
			      info.type == GPO_DEVICE_INTEGRATED_GPU ||
			      info.type == GPO_DEVICE_CPU_IMPL ||
			      info.type == GPO_DEVICE_OTHER,
			      "%s: type %d", id, info.type);
		ck_assert_msg(info.compute_units >= 1, "%s: no compute units",
			      id);
		ck_assert_msg(info.mem_total_bytes >= (16ull << 20),
			      "%s: %llu bytes of memory", id,
			      (unsigned long long)info.mem_total_bytes);
		ck_assert_msg(strlen(info.uuid) == 0 || strlen(info.uuid) == 32,
			      "%s: uuid '%s'", id, info.uuid);
		for (j = 0; info.uuid[j]; j++)
			ck_assert_msg(strchr("0123456789abcdef", info.uuid[j]),
				      "%s: uuid '%s'", id, info.uuid);
		printf("%s: %s, %s, driver %s, %s, %u CUs, %llu MiB, uuid %s\n",
		       id, info.name, info.vendor, info.driver,
		       gpo_device_type_name(info.type), info.compute_units,
		       (unsigned long long)(info.mem_total_bytes >> 20),
		       info.uuid[0] ? info.uuid : "-");

		ck_assert_msg(!gpo_device_get(ctx, i, &dev), "%s: %s", id,
			      gpo_errmsg());
		ck_assert(!gpo_pool_stats(dev, &st));
		ck_assert_int_eq(st.used_bytes, 0);
	}
	ck_assert_msg(nth > 0, "no OpenCL device (probe log: %s)",
		      gpo_ctx_probe_log(ctx));
}
END_TEST

START_TEST(test_opencl_open_builds_nothing)
{
	char dir[64], path[4200];
	uint64_t key;

	tu_cache_dir_new(dir, sizeof(dir));
	open_close_once(0);
	ck_assert_int_eq(tu_cache_entries(dir, "opencl", path, sizeof(path),
					  &key), 0);
	tu_cache_dir_remove(dir);
}
END_TEST

START_TEST(test_opencl_first_launch_populates_cache_then_reuses_it)
{
	char dir[64], path[4200];
	struct stat st1, st2;
	uint64_t key;

	tu_cache_dir_new(dir, sizeof(dir));
	open_close_once(1);
	/* one op launched: its family's program, in one dtype */
	cache_entry(dir, path, sizeof(path), &key);
	ck_assert(!stat(path, &st1));
	ck_assert_msg(st1.st_size > 64, "%s: %lld bytes", path,
		      (long long)st1.st_size);

	/* a hit reads the entry and leaves it alone (a store renames) */
	open_close_once(1);
	cache_entry(dir, path, sizeof(path), &key);
	ck_assert(!stat(path, &st2));
	ck_assert_msg(st1.st_ino == st2.st_ino &&
		      st1.st_mtime == st2.st_mtime,
		      "the cache entry was rewritten on a hit");
	tu_cache_dir_remove(dir);
}
END_TEST

enum damage { FLIP_BYTES, TRUNCATE_HALF, TRUNCATE_EMPTY, BAD_BINARY,
	      DAMAGE_KINDS };

static const char *const damage_names[DAMAGE_KINDS] = {
	"flipped bytes", "truncated to half", "truncated to 0",
	"a garbage binary with a valid checksum",
};

static void damage_entry(const char *path, uint64_t key, enum damage how)
{
	static const char junk[] = "this is not a program binary";
	unsigned char buf[64];
	struct stat st;
	int fd;

	ck_assert(!stat(path, &st));
	switch (how) {
	case FLIP_BYTES:
		fd = open(path, O_RDWR);
		ck_assert(fd >= 0);
		ck_assert(pread(fd, buf, sizeof(buf), st.st_size / 2) ==
			  sizeof(buf));
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] ^= 0x5a;
		ck_assert(pwrite(fd, buf, sizeof(buf), st.st_size / 2) ==
			  sizeof(buf));
		close(fd);
		break;
	case TRUNCATE_HALF:
		ck_assert(!truncate(path, st.st_size / 2));
		break;
	case TRUNCATE_EMPTY:
		ck_assert(!truncate(path, 0));
		break;
	default:
		/* passes the cache's own checks: the driver must refuse it */
		ck_assert(!gpo__diskcache_store("opencl", key, junk, sizeof(junk)));
		break;
	}
}

START_TEST(test_opencl_damaged_cache_is_rebuilt)
{
	struct gpo_device *dev, *cpu;
	char dir[64], path[4200];
	struct gpo_ctx *ctx;
	struct stat st;
	uint64_t key;
	size_t size;
	void *data;
	int how;

	tu_cache_dir_new(dir, sizeof(dir));
	open_close_once(1);
	cache_entry(dir, path, sizeof(path), &key);
	for (how = 0; how < DAMAGE_KINDS; how++) {
		damage_entry(path, key, how);
		/* the device open_close_once() used, the op it launched */
		ck_assert(!gpo_ctx_new(&ctx, 0));
		ck_assert(!gpo_device_select(ctx, "cpu:0", &cpu));
		ck_assert_msg(!gpo_device_select(ctx, "opencl", &dev), "%s",
			      gpo_errmsg());
		fill_once(dev);
		check_adam_matches_cpu(dev, cpu, damage_names[how]);
		gpo_ctx_free(ctx);

		/*
		 * rebuilt, and stored again whole under the same key (the
		 * step stored the other families' programs beside it)
		 */
		ck_assert_msg(!stat(path, &st), "after %s: %s is gone",
			      damage_names[how], path);
		ck_assert_msg(!gpo__diskcache_load("opencl", key, &data, &size),
			      "after %s: no valid entry", damage_names[how]);
		ck_assert_msg(size > 64, "after %s: %zu bytes",
			      damage_names[how], size);
		free(data);
	}
	tu_cache_dir_remove(dir);
}
END_TEST

START_TEST(test_opencl_adam_matches_cpu)
{
	struct gpo_device *devs[MAX_OCL], *cpu;
	struct gpo_ctx *ctx = tu_ctx();
	int i, n;

	n = tu_open_backend(ctx, "opencl", devs, MAX_OCL, &cpu);
	for (i = 0; i < n; i++)
		check_adam_matches_cpu(devs[i], cpu, tu_device_id(devs[i]));
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
	s = suite_create("opencl");
	tc = tcase_create("opencl");
	/* building the program from source takes seconds on PoCL */
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_opencl_devices_report_sane_properties);
	tcase_add_test(tc, test_opencl_open_builds_nothing);
	tcase_add_test(tc, test_opencl_first_launch_populates_cache_then_reuses_it);
	tcase_add_test(tc, test_opencl_damaged_cache_is_rebuilt);
	tcase_add_test(tc, test_opencl_adam_matches_cpu);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
