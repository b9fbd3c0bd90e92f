// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

static struct gpo_ctx *ctx;

struct gpo_ctx *tu_ctx(void)
{
	if (!ctx) {
		int ret = gpo_ctx_new(&ctx, 0);

		if (ret) {
			fprintf(stderr, "gpo_ctx_new: %s\n", gpo_errmsg());
			abort();
		}
	}
	return ctx;
}

static int listed(const char *list, const char *id, const char *backend)
{
	char buf[512], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, id) || !strcmp(tok, backend) ||
		    !strcmp(tok, "all"))
			return 1;
	return 0;
}

int tu_wanted(const struct gpo_device_info *info)
{
	const char *want = getenv("GPUOPT_TEST_DEVICES");

	return !want || !*want || listed(want, info->id, info->backend);
}

int tu_built(const char *backend)
{
	if (!strcmp(backend, "cpu"))
		return 1;
#ifdef GPO_HAVE_OPENCL
	if (!strcmp(backend, "opencl"))
		return 1;
#endif
#ifdef GPO_HAVE_VULKAN
	if (!strcmp(backend, "vulkan"))
		return 1;
#endif
	return 0;
}

int tu_devices(struct gpo_device **devs, int max)
{
	const char *want = getenv("GPUOPT_TEST_DEVICES");
	const char *require = getenv("GPUOPT_TEST_REQUIRE");
	struct gpo_ctx *c = tu_ctx();
	int i, n = 0, count = gpo_device_count(c);

	for (i = 0; i < count && n < max; i++) {
		struct gpo_device_info info;

		gpo_device_info(c, i, &info);
		if (want && *want && !listed(want, info.id, info.backend))
			continue;
		if (gpo_device_get(c, i, &devs[n])) {
			fprintf(stderr, "skipping %s: %s\n", info.id,
				gpo_errmsg());
			continue;
		}
		n++;
	}
	if (require && *require) {
		char buf[256], *tok, *save;

		snprintf(buf, sizeof(buf), "%s", require);
		for (tok = strtok_r(buf, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			int found = 0;

			if (!tu_built(tok)) {
				fprintf(stderr, "GPUOPT_TEST_REQUIRE=%s: not checking %s, left out of this build\n",
					require, tok);
				continue;
			}
			for (i = 0; i < n; i++) {
				struct gpo_device_info info;

				gpo_device_info(c, gpo_device_index(devs[i]),
						&info);
				found |= !strcmp(info.backend, tok);
			}
			ck_assert_msg(found,
				      "no %s device, but GPUOPT_TEST_REQUIRE=%s (probe log: %s)",
				      tok, require, gpo_ctx_probe_log(c));
		}
	}
	return n;
}

/* does the comma list @list name @word, a prefix of it, or "all"? */
static int names(const char *list, const char *word)
{
	char buf[512], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", list ? list : "");
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strncmp(tok, word, strlen(word)) || !strcmp(tok, "all"))
			return 1;
	return 0;
}

static int backend_device_count(const char *backend)
{
	pid_t pid = fork();
	int status, i, n = 0;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct gpo_device_info info;
		struct gpo_ctx *c;

		if (gpo_ctx_new(&c, 0))
			_exit(0);
		for (i = 0; i < gpo_device_count(c); i++)
			n += !gpo_device_info(c, i, &info) &&
			     !strcmp(info.backend, backend) && tu_wanted(&info);
		gpo_ctx_free(c);
		_exit(n > 100 ? 100 : n);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int tu_backend_gate(const char *backend)
{
	const char *want = getenv("GPUOPT_TEST_DEVICES");

	if (!tu_built(backend)) {
		printf("skipped: libgpuopt was built without %s (BACKENDS)\n",
		       backend);
		return 77;
	}
	if (names(getenv("GPUOPT_TEST_REQUIRE"), backend))
		return 0;
	if (want && *want && !names(want, backend)) {
		printf("skipped: GPUOPT_TEST_DEVICES=%s has no %s device\n",
		       want, backend);
		return 77;
	}
	if (backend_device_count(backend) <= 0) {
		printf("skipped: no %s device found\n", backend);
		return 77;
	}
	return 0;
}

int tu_open_backend(struct gpo_ctx *c, const char *backend,
		    struct gpo_device **devs, int max, struct gpo_device **cpu)
{
	struct gpo_device_info info;
	int i, n = 0;

	ck_assert_msg(!gpo_device_select(c, "cpu:0", cpu), "cpu:0: %s",
		      gpo_errmsg());
	for (i = 0; i < gpo_device_count(c) && n < max; i++) {
		if (gpo_device_info(c, i, &info) ||
		    strcmp(info.backend, backend) || !tu_wanted(&info))
			continue;
		ck_assert_msg(!gpo_device_get(c, i, &devs[n]),
			      "opening %s: %s", info.id, gpo_errmsg());
		n++;
	}
	ck_assert_msg(n > 0, "no %s device (probe log: %s)", backend,
		      gpo_ctx_probe_log(c));
	return n;
}

void tu_cache_dir_new(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/gpuopt-test-cache-XXXXXX");
	ck_assert(mkdtemp(dir) != NULL);
	setenv("GPUOPT_CACHE_DIR", dir, 1);
}

void tu_cache_dir_remove(const char *dir)
{
	struct dirent *de;
	char path[4200];
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

int tu_cache_entries(const char *dir, const char *kind, char *path,
		     size_t len, uint64_t *key)
{
	unsigned long long k = 0;
	char fmt[64];
	struct dirent *de;
	int found = 0;
	DIR *d = opendir(dir);

	ck_assert_msg(d != NULL, "cannot open %s", dir);
	snprintf(fmt, sizeof(fmt), "%s-%%16llx.bin", kind);
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, fmt, &k) != 1 ||
		    strlen(de->d_name) != strlen(kind) + 5 + 16)
			continue;
		if (!found++) {
			snprintf(path, len, "%s/%s", dir, de->d_name);
			*key = k;
		}
	}
	closedir(d);
	return found;
}

const char *tu_device_id(struct gpo_device *dev)
{
	static __thread struct gpo_device_info info;

	gpo_device_info(tu_ctx(), gpo_device_index(dev), &info);
	return info.id;
}

uint64_t tu_seed(void)
{
	static uint64_t seed;
	const char *env;

	if (seed)
		return seed;
	env = getenv("GPUOPT_TEST_SEED");
	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003ull ^ ts.tv_nsec;
	}
	if (!seed)
		seed = 1;
	fprintf(stderr, "GPUOPT_TEST_SEED=%llu\n", (unsigned long long)seed);
	return seed;
}

double tu_rand(uint64_t *s, double lo, double hi)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return lo + (hi - lo) * ((x >> 11) * (1.0 / 9007199254740992.0));
}

void tu_fill(float *x, size_t n, uint64_t *s, double lo, double hi)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = (float)tu_rand(s, lo, hi);
}

void tu_poison(float *x, size_t n)
{
	uint32_t pattern = 0x7fa5a5a5;	/* a NaN */
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(&x[i], &pattern, 4);
}

double tu_max_rel_err(const float *got, const double *want, size_t n,
		      double floor)
{
	double worst = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d, den;

		if (isnan(got[i]) != isnan(want[i]))
			return INFINITY;
		if (isnan(got[i]))
			continue;
		d = fabs((double)got[i] - want[i]);
		den = fabs(want[i]) > floor ? fabs(want[i]) : floor;
		if (d / den > worst)
			worst = d / den;
	}
	return worst;
}

int tu_odd_sizes(uint64_t *out, int max)
{
	static const uint64_t sizes[] = { 1, 3, 7, 61, 1021, 4099, 65537,
					  262147 };
	int i;

	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])) && i < max;
	     i++)
		out[i] = sizes[i];
	return i;
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	tu_seed();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (ctx) {
		gpo_ctx_free(ctx);
		ctx = NULL;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- added with the optimizer tests ------------------------------------ */

int tu_quick(void)
{
	const char *env = getenv("GPUOPT_TEST_QUICK");

	return env && *env && strcmp(env, "0");
}

uint64_t tu_rng(const char *tag)
{
	/* FNV-1a of the tag, then splitmix64 with the seed */
	uint64_t h = 1469598103934665603ull, z;

	for (; *tag; tag++)
		h = (h ^ (unsigned char)*tag) * 1099511628211ull;
	z = tu_seed() + h * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

void tu_data_path(char *buf, size_t len, const char *rel)
{
	const char *dir = getenv("GPUOPT_TEST_DATA");

	if (!dir || !*dir)
		dir = "tests/data";
	snprintf(buf, len, "%s/%s", dir, rel);
}

void tu_check_errmsg(const char *what)
{
	const char *msg = gpo_errmsg();

	ck_assert_msg(msg && *msg, "%s failed without a gpo_errmsg() message",
		      what);
}
