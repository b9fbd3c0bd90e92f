// SPDX-License-Identifier: MIT
/*
 * test_pool.c - the per-device memory pools, on every device: statistics
 * follow allocations, trim gives the cache back, a limit gives -ENOMEM
 * with a message and leaks nothing, and many optimizer lifetimes leave the
 * pool where it was.
 *
 * The pool belongs to the device, which the tests of this program share
 * when they run in one process (CK_FORK=no, as under valgrind), so every
 * test looks at differences, puts the limit back and ends with no
 * optimizer alive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static int devices(struct gpo_device **devs)
{
	int n = tu_devices(devs, TU_MAX_DEVICES);

	ck_assert_int_ge(n, 1);
	return n;
}

static void stats(struct gpo_device *dev, struct gpo_pool_stats *st)
{
	ck_assert_int_eq(gpo_pool_stats(dev, st), 0);
	/* what holds at every moment */
	ck_assert_uint_eq(st->cached_bytes,
			  st->capacity_bytes - st->used_bytes);
	ck_assert_uint_ge(st->capacity_bytes, st->used_bytes);
	ck_assert_uint_ge(st->peak_bytes, st->used_bytes);
	ck_assert_uint_ge(st->allocs, st->frees);
}

/*
 * An optimizer of @kind with one tensor of @n elements and its buffers
 * allocated (by writing the parameters). Returns 0 or the write's error,
 * with *@out NULL then.
 */
static int make_opt(struct gpo_device *dev, enum gpo_optim_kind kind,
		    uint64_t n, struct gpo_optim **out)
{
	struct gpo_optim *opt;
	float *x = calloc(n, 4);
	int ret;

	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(gpo_optim_new(dev, kind, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "x", 1, &n, 0), 0);
	ret = gpo_optim_write(opt, "param", NULL, x, n * 4);
	free(x);
	if (ret) {
		gpo_optim_free(opt);
		*out = NULL;
		return ret;
	}
	*out = opt;
	return 0;
}

START_TEST(test_pool_stats_follow_allocations)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;
	uint64_t n = 10007;

	for (d = 0; d < ndev; d++) {
		struct gpo_pool_stats a, b, c;
		struct gpo_optim *opt;

		stats(devs[d], &a);
		ck_assert_uint_eq(a.limit_bytes, UINT64_MAX);
		/* adam: param, grad, exp_avg, exp_avg_sq at least */
		ck_assert_int_eq(make_opt(devs[d], GPO_ADAM, n, &opt), 0);
		stats(devs[d], &b);
		ck_assert_uint_ge(b.used_bytes, a.used_bytes + 4 * n * 4);
		ck_assert_uint_ge(b.allocs, a.allocs + 4);
		ck_assert_uint_eq(b.frees, a.frees);
		ck_assert_uint_ge(b.peak_bytes, b.used_bytes);
		ck_assert_uint_eq(b.failures, a.failures);
		gpo_optim_free(opt);
		stats(devs[d], &c);
		ck_assert_uint_eq(c.used_bytes, a.used_bytes);
		ck_assert_uint_eq(c.frees - a.frees, b.allocs - a.allocs);
		ck_assert_uint_eq(c.allocs, b.allocs);
		/* freed memory stays cached until trimmed */
		ck_assert_uint_eq(c.capacity_bytes, b.capacity_bytes);
		ck_assert_uint_eq(c.peak_bytes, b.peak_bytes);
	}
}
END_TEST

START_TEST(test_pool_trim_releases_cached_bytes)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;

	for (d = 0; d < ndev; d++) {
		struct gpo_pool_stats a, b, c;
		struct gpo_device_info info;
		struct gpo_optim *opt;

		ck_assert_int_eq(make_opt(devs[d], GPO_SGD, 4099, &opt), 0);
		gpo_optim_free(opt);
		stats(devs[d], &a);
		ck_assert_uint_gt(a.cached_bytes, 0);
		ck_assert_int_eq(gpo_pool_trim(devs[d]), 0);
		stats(devs[d], &b);
		ck_assert_uint_lt(b.cached_bytes, a.cached_bytes);
		ck_assert_uint_eq(b.used_bytes, a.used_bytes);
		if (!b.used_bytes)
			ck_assert_uint_eq(b.capacity_bytes, 0);
		/* the device's mem_used_bytes is what its pool holds */
		ck_assert_int_eq(gpo_device_info(tu_ctx(),
						 gpo_device_index(devs[d]),
						 &info), 0);
		ck_assert_uint_eq(info.mem_used_bytes, b.capacity_bytes);
		/* trimming twice is harmless */
		ck_assert_int_eq(gpo_pool_trim(devs[d]), 0);
		stats(devs[d], &c);
		ck_assert_uint_eq(c.capacity_bytes, b.capacity_bytes);
	}
}
END_TEST

/*
 * Under a limit of 1 MiB more than in use, optimizers of 16 Ki parameters
 * (128 KiB of params and grads each) fit a few times, then the first use
 * fails with -ENOMEM and a message; that optimizer holds nothing, works
 * once the limit is lifted, and freeing all gives every byte back.
 */
START_TEST(test_pool_limit_gives_enomem_with_message)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, i, n;
	uint64_t elems = 16384;

	for (d = 0; d < ndev; d++) {
		struct gpo_optim *opts[64], *last;
		struct gpo_pool_stats a, b, c;
		uint64_t limit;
		float *x;
		int ret = 0;

		ck_assert_int_eq(gpo_pool_trim(devs[d]), 0);
		stats(devs[d], &a);
		limit = a.capacity_bytes + (1 << 20);
		ck_assert_int_eq(gpo_pool_set_limit(devs[d], limit), 0);
		stats(devs[d], &b);
		ck_assert_uint_eq(b.limit_bytes, limit);
		for (n = 0; n < 64; n++) {
			ret = make_opt(devs[d], GPO_SGD, elems, &opts[n]);
			if (ret)
				break;
		}
		ck_assert_msg(ret == -ENOMEM && n >= 2 && n < 16,
			      "%s: %d optimizers, then %d (%s)",
			      tu_device_id(devs[d]), n, ret, gpo_errmsg());
		tu_check_errmsg("allocating past the pool limit");
		stats(devs[d], &b);
		ck_assert_uint_gt(b.failures, a.failures);
		ck_assert_uint_le(b.capacity_bytes, limit);

		/* a failed first use changes nothing: it works later */
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &last), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(last, "x", 1, &elems, 0),
				 0);
		x = calloc(elems, 4);
		ck_assert_int_eq(gpo_optim_write(last, "param", NULL, x,
						 elems * 4), -ENOMEM);
		tu_check_errmsg("a write past the pool limit");
		stats(devs[d], &c);
		ck_assert_uint_eq(c.used_bytes, b.used_bytes);
		ck_assert_int_eq(gpo_pool_set_limit(devs[d], UINT64_MAX), 0);
		ck_assert_int_eq(gpo_optim_write(last, "param", NULL, x,
						 elems * 4), 0);
		free(x);
		gpo_optim_free(last);
		for (i = 0; i < n; i++)
			gpo_optim_free(opts[i]);
		stats(devs[d], &c);
		ck_assert_uint_eq(c.used_bytes, a.used_bytes);
		ck_assert_uint_eq(c.allocs - a.allocs, c.frees - a.frees);
		ck_assert_int_eq(gpo_pool_trim(devs[d]), 0);
	}
}
END_TEST

START_TEST(test_pool_limit_below_used_is_ebusy)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;

	for (d = 0; d < ndev; d++) {
		struct gpo_pool_stats a, b;
		struct gpo_optim *opt;

		ck_assert_int_eq(make_opt(devs[d], GPO_ADAM, 1021, &opt), 0);
		stats(devs[d], &a);
		ck_assert_int_eq(gpo_pool_set_limit(devs[d], a.used_bytes - 1),
				 -EBUSY);
		tu_check_errmsg("a limit below the bytes in use");
		stats(devs[d], &b);
		ck_assert_uint_eq(b.limit_bytes, UINT64_MAX);
		ck_assert_uint_eq(b.capacity_bytes, a.capacity_bytes);
		gpo_optim_free(opt);
	}
}
END_TEST

/* a limit under the capacity, but over the bytes in use, trims the cache */
START_TEST(test_pool_limit_trims_cache)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d;

	for (d = 0; d < ndev; d++) {
		struct gpo_pool_stats a, b;
		struct gpo_optim *opt;

		ck_assert_int_eq(make_opt(devs[d], GPO_SGD, 65537, &opt), 0);
		gpo_optim_free(opt);
		stats(devs[d], &a);
		ck_assert_uint_gt(a.cached_bytes, 0);
		ck_assert_int_eq(gpo_pool_set_limit(devs[d],
						    a.used_bytes + 4096), 0);
		stats(devs[d], &b);
		ck_assert_uint_le(b.capacity_bytes, a.used_bytes + 4096);
		ck_assert_int_eq(gpo_pool_set_limit(devs[d], UINT64_MAX), 0);
	}
}
END_TEST

/*
 * 1000 lifetimes of optimizers of every kind and a few sizes, each used
 * for a step: used bytes end where they started, every alloc has its free,
 * and the cache is reused rather than grown.
 */
START_TEST(test_pool_1000_rounds_leave_used_where_it_started)
{
	static const uint64_t sizes[] = { 4099, 1, 61, 1021, 3 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = devices(devs), d, r;
	float *x = calloc(4099, 4);

	for (r = 0; r < 4099; r++)
		x[r] = 0.5f;
	for (d = 0; d < ndev; d++) {
		struct gpo_pool_stats a, b, c;

		stats(devs[d], &a);
		for (r = 0; r < 1000; r++) {
			uint64_t n = sizes[r % 5];
			struct gpo_optim *opt;

			ck_assert_int_eq(make_opt(devs[d], r % GPO_OPTIM_KINDS,
						  n, &opt), 0);
			ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, x,
							 n * 4), 0);
			ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
			gpo_optim_free(opt);
			if (r == 0)
				stats(devs[d], &b);
		}
		stats(devs[d], &c);
		ck_assert_uint_eq(c.used_bytes, a.used_bytes);
		ck_assert_uint_eq(c.allocs - a.allocs, c.frees - a.frees);
		ck_assert_uint_ge(c.allocs - a.allocs, 2000);
		ck_assert_uint_eq(c.failures, a.failures);
		ck_assert_uint_eq(c.capacity_bytes, b.capacity_bytes);
	}
	free(x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_pool_stats_follow_allocations);
	tcase_add_test(tc, test_pool_trim_releases_cached_bytes);
	tcase_add_test(tc, test_pool_limit_gives_enomem_with_message);
	tcase_add_test(tc, test_pool_limit_below_used_is_ebusy);
	tcase_add_test(tc, test_pool_limit_trims_cache);
	tcase_add_test(tc, test_pool_1000_rounds_leave_used_where_it_started);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
