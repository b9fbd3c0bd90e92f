// SPDX-License-Identifier: MIT
/*
 * test_device.c - the device list and device selection. Every test uses a
 * context of its own (and puts GPUOPT_DEVICE back), so that disabling a
 * device does not reach other tests sharing the process under CK_FORK=no.
 * Devices left out by GPUOPT_TEST_DEVICES are disabled in those contexts:
 * selection is then tested among the devices the run may use, and a run
 * limited to cpu (valgrind, sanitizers) opens no other driver.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* Is @info among GPUOPT_TEST_DEVICES (ids or backends, "all")? */
static int allowed(const struct gpo_device_info *info)
{
	const char *want = getenv("GPUOPT_TEST_DEVICES");
	char buf[512], *tok, *save;

	if (!want || !*want)
		return 1;
	snprintf(buf, sizeof(buf), "%s", want);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, info->id) || !strcmp(tok, info->backend) ||
		    !strcmp(tok, "all"))
			return 1;
	return 0;
}

/* a context as gpo_ctx_new gives it: for what does not open devices */
static struct gpo_ctx *raw_ctx(void)
{
	struct gpo_ctx *ctx;

	ck_assert_msg(gpo_ctx_new(&ctx, 0) == 0, "gpo_ctx_new: %s",
		      gpo_errmsg());
	return ctx;
}

static struct gpo_ctx *new_ctx(void)
{
	struct gpo_ctx *ctx = raw_ctx();
	struct gpo_device_info info;
	int i;

	for (i = 0; i < gpo_device_count(ctx); i++) {
		ck_assert_int_eq(gpo_device_info(ctx, i, &info), 0);
		if (!allowed(&info) && strcmp(info.id, "cpu:0"))
			ck_assert_int_eq(gpo_device_enable(ctx, i, 0), 0);
	}
	return ctx;
}

static int index_of(struct gpo_ctx *ctx, const char *id)
{
	struct gpo_device_info info;
	int i, n = gpo_device_count(ctx);

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(gpo_device_info(ctx, i, &info), 0);
		if (!strcmp(info.id, id))
			return i;
	}
	return -1;
}

/* gpo_device_select's order for "best": lower is preferred */
static int rank(const struct gpo_device_info *info)
{
	int r;

	switch (info->type) {
	case GPO_DEVICE_DISCRETE_GPU:
		r = 0;
		break;
	case GPO_DEVICE_INTEGRATED_GPU:
	case GPO_DEVICE_VIRTUAL_GPU:
	case GPO_DEVICE_OTHER:
		r = 1;
		break;
	case GPO_DEVICE_CPU_IMPL:
		r = 3;		/* after the cpu backend: PoCL, lavapipe */
		break;
	default:
		r = 2;
		break;
	}
	return r * 2 + (strcmp(info->backend, "vulkan") ? 1 : 0);
}

/*
 * The device "best" (or backend @backend) should give in @ctx: the best
 * ranked enabled device that opens, the earliest of equals.
 */
static int expected_best(struct gpo_ctx *ctx, const char *backend)
{
	struct gpo_device_info info;
	struct gpo_device *dev;
	int i, n = gpo_device_count(ctx), best = -1, best_rank = 0;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(gpo_device_info(ctx, i, &info), 0);
		if (!info.enabled || (backend && strcmp(info.backend, backend)))
			continue;
		if (gpo_device_get(ctx, i, &dev))
			continue;
		if (best < 0 || rank(&info) < best_rank) {
			best = i;
			best_rank = rank(&info);
		}
	}
	return best;
}

START_TEST(test_device_count_is_at_least_one)
{
	struct gpo_ctx *ctx = new_ctx();

	ck_assert_int_ge(gpo_device_count(ctx), 1);
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_cpu0_is_present)
{
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device_info info;
	struct gpo_device *dev;
	int i = index_of(ctx, "cpu:0");

	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(gpo_device_info(ctx, i, &info), 0);
	ck_assert_str_eq(info.backend, "cpu");
	ck_assert_int_eq(info.type, GPO_DEVICE_CPU);
	ck_assert_int_eq(gpo_device_get(ctx, i, &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), i);
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_device_info_is_sane)
{
	struct gpo_ctx *ctx = raw_ctx();
	struct gpo_device_info info, other;
	int i, j, n = gpo_device_count(ctx);

	for (i = 0; i < n; i++) {
		char want_id[48];
		size_t k;
		int nth = 0;

		ck_assert_int_eq(gpo_device_info(ctx, i, &info), 0);
		ck_assert_int_eq(info.index, i);
		ck_assert_msg(!strcmp(info.backend, "cpu") ||
			      !strcmp(info.backend, "opencl") ||
			      !strcmp(info.backend, "vulkan"),
			      "device %d: backend '%s'", i, info.backend);
		/* ids number each backend's devices from 0 in index order */
		for (j = 0; j < i; j++) {
			ck_assert_int_eq(gpo_device_info(ctx, j, &other), 0);
			ck_assert_str_ne(other.id, info.id);
			nth += !strcmp(other.backend, info.backend);
		}
		snprintf(want_id, sizeof(want_id), "%s:%d", info.backend, nth);
		ck_assert_str_eq(info.id, want_id);
		ck_assert_msg(info.name[0], "%s has no name", info.id);
		/* core Vulkan has no compute-unit count: 0 there is "unknown" */
		ck_assert_msg(info.compute_units >= 1 ||
			      !strcmp(info.backend, "vulkan"),
			      "%s: %u compute units", info.id,
			      info.compute_units);
		ck_assert_msg(info.mem_total_bytes > 0, "%s: no memory",
			      info.id);
		ck_assert_int_eq(info.enabled, 1);
		ck_assert_msg((unsigned int)info.type <= GPO_DEVICE_OTHER,
			      "%s: type %d", info.id, info.type);
		ck_assert_msg(strcmp(gpo_device_type_name(info.type), "other") ||
			      info.type == GPO_DEVICE_OTHER,
			      "%s: type %d has no name", info.id, info.type);
		ck_assert_msg(!info.uuid[0] || strlen(info.uuid) == 32,
			      "%s: uuid '%s'", info.id, info.uuid);
		for (k = 0; info.uuid[k]; k++)
			ck_assert_msg(isxdigit((unsigned char)info.uuid[k]),
				      "%s: uuid '%s'", info.id, info.uuid);
		ck_assert_msg(memchr(info.name, '\0', sizeof(info.name)) &&
			      memchr(info.vendor, '\0', sizeof(info.vendor)) &&
			      memchr(info.driver, '\0', sizeof(info.driver)),
			      "%s: unterminated strings", info.id);
	}
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_device_info_out_of_range_is_enodev)
{
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device_info info;
	struct gpo_device *dev;
	int n = gpo_device_count(ctx);

	ck_assert_int_eq(gpo_device_info(ctx, n, &info), -ENODEV);
	tu_check_errmsg("gpo_device_info(count)");
	ck_assert_int_eq(gpo_device_info(ctx, -1, &info), -ENODEV);
	tu_check_errmsg("gpo_device_info(-1)");
	ck_assert_int_eq(gpo_device_get(ctx, n, &dev), -ENODEV);
	tu_check_errmsg("gpo_device_get(count)");
	ck_assert_int_eq(gpo_device_enable(ctx, n, 1), -ENODEV);
	tu_check_errmsg("gpo_device_enable(count)");
	ck_assert_int_eq(gpo_device_enable(ctx, 0, 2), -EINVAL);
	tu_check_errmsg("gpo_device_enable(0, 2)");
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_type_names)
{
	ck_assert_str_eq(gpo_device_type_name(GPO_DEVICE_DISCRETE_GPU),
			 "discrete");
	ck_assert_str_eq(gpo_device_type_name(GPO_DEVICE_INTEGRATED_GPU),
			 "integrated");
	ck_assert_str_eq(gpo_device_type_name(GPO_DEVICE_VIRTUAL_GPU),
			 "virtual");
	ck_assert_str_eq(gpo_device_type_name(GPO_DEVICE_CPU_IMPL),
			 "cpu-impl");
	ck_assert_str_eq(gpo_device_type_name(GPO_DEVICE_CPU), "cpu");
	ck_assert_str_eq(gpo_device_type_name(GPO_DEVICE_OTHER), "other");
	ck_assert_str_eq(gpo_device_type_name(99), "other");
}
END_TEST

START_TEST(test_select_best_prefers_gpus_then_cpu_implementations)
{
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device *dev;
	int want = expected_best(ctx, NULL);

	ck_assert_int_ge(want, 0);
	ck_assert_msg(gpo_device_select(ctx, "best", &dev) == 0, "best: %s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_device_index(dev), want);
	gpo_ctx_free(ctx);
}
END_TEST

/*
 * gpo_device_best_rank: the enabled devices hold places 1..k in rank
 * order (the earliest of equals first), the device "best" opens comes
 * after only devices that fail to open, a disabled one holds 0 with the
 * reason, and a reason is always given
 */
START_TEST(test_best_rank_explains_the_order)
{
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device_info a, b;
	int i, j, n = gpo_device_count(ctx), k = 0, ra, rb;
	char why[160];

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(gpo_device_info(ctx, i, &a), 0);
		memset(why, 0, sizeof(why));
		ra = gpo_device_best_rank(ctx, i, why, sizeof(why));
		ck_assert_msg(*why, "%s: no reason", a.id);
		if (!a.enabled) {
			ck_assert_int_eq(ra, 0);
			ck_assert_str_eq(why, "never: disabled");
			continue;
		}
		k++;
		ck_assert_int_ge(ra, 1);
		for (j = 0; j < n; j++) {
			ck_assert_int_eq(gpo_device_info(ctx, j, &b), 0);
			if (j == i || !b.enabled)
				continue;
			rb = gpo_device_best_rank(ctx, j, NULL, 0);
			ck_assert_int_ne(ra, rb);
			ck_assert_int_eq(ra < rb, rank(&a) < rank(&b) ||
					 (rank(&a) == rank(&b) && i < j));
		}
		if (a.type == GPO_DEVICE_CPU_IMPL)
			ck_assert_ptr_nonnull(strstr(why, "after the cpu backend"));
	}
	for (i = 0; i < n; i++)
		ck_assert_int_le(gpo_device_best_rank(ctx, i, NULL, 0), k);
	/* every device placed before the one "best" opens fails to open */
	i = expected_best(ctx, NULL);
	ra = gpo_device_best_rank(ctx, i, NULL, 0);
	ck_assert_int_ge(ra, 1);
	for (j = 0; j < n; j++) {
		struct gpo_device *dev;

		rb = gpo_device_best_rank(ctx, j, NULL, 0);
		if (rb >= 1 && rb < ra)
			ck_assert_int_ne(gpo_device_get(ctx, j, &dev), 0);
	}

	/* disabling the first moves everyone else up one */
	ck_assert_int_eq(gpo_device_enable(ctx, i, 0), 0);
	ck_assert_int_eq(gpo_device_best_rank(ctx, i, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "never: disabled");
	for (j = 0; j < n; j++)
		ck_assert_int_le(gpo_device_best_rank(ctx, j, NULL, 0), k - 1);

	/* bad input */
	ck_assert_int_eq(gpo_device_best_rank(NULL, 0, why, sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(gpo_device_best_rank(ctx, 0, NULL, 8), -EINVAL);
	ck_assert_int_eq(gpo_device_best_rank(ctx, n, why, sizeof(why)),
			 -ENODEV);
	ck_assert_int_eq(gpo_device_best_rank(ctx, -1, why, sizeof(why)),
			 -ENODEV);
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_select_by_backend_and_id)
{
	static const char *const backends[] = { "cpu", "opencl", "vulkan" };
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device_info info;
	struct gpo_device *dev;
	int i, n = gpo_device_count(ctx);
	size_t b;

	ck_assert_int_eq(gpo_device_select(ctx, "cpu", &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), index_of(ctx, "cpu:0"));
	ck_assert_int_eq(gpo_device_select(ctx, "cpu:0", &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), index_of(ctx, "cpu:0"));
	for (i = 0; i < n; i++) {
		struct gpo_device *want;

		ck_assert_int_eq(gpo_device_info(ctx, i, &info), 0);
		if (gpo_device_get(ctx, i, &want))
			continue;
		ck_assert_msg(gpo_device_select(ctx, info.id, &dev) == 0,
			      "%s: %s", info.id, gpo_errmsg());
		ck_assert_int_eq(gpo_device_index(dev), i);
	}
	/* a backend name: its best device, or -ENODEV when it has none */
	for (b = 0; b < 3; b++) {
		int want = expected_best(ctx, backends[b]);
		int ret = gpo_device_select(ctx, backends[b], &dev);

		if (want < 0) {
			ck_assert_int_eq(ret, -ENODEV);
			tu_check_errmsg(backends[b]);
			continue;
		}
		ck_assert_msg(ret == 0, "%s: %s", backends[b], gpo_errmsg());
		ck_assert_int_eq(gpo_device_index(dev), want);
	}
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_select_malformed_is_einval)
{
	static const char *const specs[] = {
		"nonsense", "gpu", "cpu0", "CPU", "bestest", " cpu",
	};
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device *dev;
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		ck_assert_msg(gpo_device_select(ctx, specs[i], &dev) ==
			      -EINVAL, "'%s' was accepted", specs[i]);
		tu_check_errmsg(specs[i]);
	}
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_select_missing_device_is_enodev)
{
	static const char *const specs[] = {
		"vulkan:99", "opencl:42", "cpu:1", "cpu:-1", "nope:0",
	};
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device *dev;
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		ck_assert_msg(gpo_device_select(ctx, specs[i], &dev) ==
			      -ENODEV, "'%s' was not -ENODEV", specs[i]);
		tu_check_errmsg(specs[i]);
	}
	gpo_ctx_free(ctx);
}
END_TEST

START_TEST(test_select_follows_gpuopt_device)
{
	const char *saved = getenv("GPUOPT_DEVICE");
	char *copy = saved ? strdup(saved) : NULL;
	struct gpo_ctx *ctx = new_ctx();
	struct gpo_device *dev;
	int cpu = index_of(ctx, "cpu:0");

	setenv("GPUOPT_DEVICE", "cpu:0", 1);
	ck_assert_int_eq(gpo_device_select(ctx, NULL, &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), cpu);
	ck_assert_int_eq(gpo_device_select(ctx, "", &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), cpu);
	/* a name given beats the environment */
	setenv("GPUOPT_DEVICE", "nonsense", 1);
	ck_assert_int_eq(gpo_device_select(ctx, "cpu", &dev), 0);
	ck_assert_int_eq(gpo_device_select(ctx, NULL, &dev), -EINVAL);
	tu_check_errmsg("GPUOPT_DEVICE=nonsense");
	setenv("GPUOPT_DEVICE", "vulkan:99", 1);
	ck_assert_int_eq(gpo_device_select(ctx, "", &dev), -ENODEV);
	/* unset or empty: "best" */
	unsetenv("GPUOPT_DEVICE");
	ck_assert_int_eq(gpo_device_select(ctx, NULL, &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), expected_best(ctx, NULL));
	setenv("GPUOPT_DEVICE", "", 1);
	ck_assert_int_eq(gpo_device_select(ctx, NULL, &dev), 0);
	ck_assert_int_eq(gpo_device_index(dev), expected_best(ctx, NULL));
	if (copy)
		setenv("GPUOPT_DEVICE", copy, 1);
	else
		unsetenv("GPUOPT_DEVICE");
	free(copy);
	gpo_ctx_free(ctx);
}
END_TEST

/*
 * A disabled device is refused by index, id, backend and "best", and
 * reported as disabled; an optimizer made before goes on working.
 */
START_TEST(test_disabled_device_is_refused)
{
	struct gpo_ctx *ctx = new_ctx();
	int cpu = index_of(ctx, "cpu:0"), others;
	struct gpo_device_info info;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	uint64_t n = 61;
	float x[61] = { 0 };

	ck_assert_int_eq(gpo_device_get(ctx, cpu, &dev), 0);
	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "x", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, x, sizeof(x)), 0);

	ck_assert_int_eq(gpo_device_enable(ctx, cpu, 0), 0);
	ck_assert_int_eq(gpo_device_info(ctx, cpu, &info), 0);
	ck_assert_int_eq(info.enabled, 0);
	ck_assert_int_eq(gpo_device_get(ctx, cpu, &dev), -ENODEV);
	tu_check_errmsg("gpo_device_get of a disabled device");
	ck_assert_int_eq(gpo_device_select(ctx, "cpu:0", &dev), -ENODEV);
	tu_check_errmsg("selecting a disabled device by id");
	ck_assert_int_eq(gpo_device_select(ctx, "cpu", &dev), -ENODEV);
	tu_check_errmsg("selecting a disabled device by backend");
	others = expected_best(ctx, NULL);
	if (others < 0) {
		ck_assert_int_eq(gpo_device_select(ctx, "best", &dev), -ENODEV);
	} else {
		ck_assert_int_eq(gpo_device_select(ctx, "best", &dev), 0);
		ck_assert_int_ne(gpo_device_index(dev), cpu);
	}
	/* "Existing optimizers go on" */
	ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);

	ck_assert_int_eq(gpo_device_enable(ctx, cpu, 1), 0);
	ck_assert_int_eq(gpo_device_get(ctx, cpu, &dev), 0);
	ck_assert_int_eq(gpo_device_select(ctx, "cpu:0", &dev), 0);
	gpo_optim_free(opt);
	gpo_ctx_free(ctx);
}
END_TEST

/* contexts are independent: each has its own devices and pools */
START_TEST(test_contexts_are_independent)
{
	struct gpo_ctx *a = new_ctx(), *b = new_ctx();
	struct gpo_device *da, *db;
	struct gpo_pool_stats sa, sb;
	struct gpo_optim *opt;
	uint64_t n = 1021;
	float x[1021] = { 0 };

	ck_assert_int_eq(gpo_device_count(a), gpo_device_count(b));
	ck_assert_int_eq(gpo_device_select(a, "cpu:0", &da), 0);
	ck_assert_int_eq(gpo_device_select(b, "cpu:0", &db), 0);
	ck_assert_ptr_ne(da, db);
	ck_assert_int_eq(gpo_optim_new(da, GPO_ADAM, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "x", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, x, sizeof(x)), 0);
	ck_assert_int_eq(gpo_pool_stats(da, &sa), 0);
	ck_assert_int_eq(gpo_pool_stats(db, &sb), 0);
	ck_assert_uint_gt(sa.used_bytes, 0);
	ck_assert_uint_eq(sb.used_bytes, 0);
	ck_assert_int_eq(gpo_device_enable(b, gpo_device_index(db), 0), 0);
	ck_assert_int_eq(gpo_device_select(a, "cpu:0", &da), 0);
	gpo_optim_free(opt);
	gpo_ctx_free(a);
	gpo_ctx_free(b);
}
END_TEST

START_TEST(test_ctx_new_bad_flags_is_einval)
{
	struct gpo_ctx *ctx = NULL;

	ck_assert_int_eq(gpo_ctx_new(&ctx, 1), -EINVAL);
	tu_check_errmsg("gpo_ctx_new(flags 1)");
	ck_assert_ptr_null(ctx);
	ck_assert_ptr_nonnull(gpo_ctx_probe_log(NULL));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_device_count_is_at_least_one);
	tcase_add_test(tc, test_cpu0_is_present);
	tcase_add_test(tc, test_device_info_is_sane);
	tcase_add_test(tc, test_device_info_out_of_range_is_enodev);
	tcase_add_test(tc, test_type_names);
	tcase_add_test(tc, test_select_best_prefers_gpus_then_cpu_implementations);
	tcase_add_test(tc, test_best_rank_explains_the_order);
	tcase_add_test(tc, test_select_by_backend_and_id);
	tcase_add_test(tc, test_select_malformed_is_einval);
	tcase_add_test(tc, test_select_missing_device_is_enodev);
	tcase_add_test(tc, test_select_follows_gpuopt_device);
	tcase_add_test(tc, test_disabled_device_is_refused);
	tcase_add_test(tc, test_contexts_are_independent);
	tcase_add_test(tc, test_ctx_new_bad_flags_is_einval);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
