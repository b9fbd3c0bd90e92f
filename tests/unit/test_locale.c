// SPDX-License-Identifier: MIT
/*
 * test_locale.c - numbers in the C locale whatever the program's locale
 *
 * A program that calls setlocale(LC_ALL, "") under LANG=de_DE.UTF-8 writes
 * 0,001 with printf and reads "0.001" with strtod as 0. The library must
 * not care: settings, describe, checkpoints and saved schedules keep '.'.
 * Each test runs under de_DE.UTF-8 (made with localedef when missing and
 * we may; the program is skipped only when it cannot be had).
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "common/common.h"

#define DE "de_DE.UTF-8"

static char dir[64];

static void german(void)
{
	ck_assert_ptr_nonnull(setlocale(LC_ALL, DE));
	/* the test is only worth something where the locale bites */
	ck_assert_str_eq(localeconv()->decimal_point, ",");
}

static void setup(void)
{
	german();
	snprintf(dir, sizeof(dir), "/tmp/gpuopt-locale-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/a.st", dir);
	unlink(path);
	rmdir(dir);
	setlocale(LC_ALL, "C");
}

static struct gpo_device *cpu_dev(void)
{
	struct gpo_device *dev;

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	return dev;
}

static struct gpo_optim *new_adamw(void)
{
	static const uint64_t shape[] = { 257 };
	struct gpo_optim *opt;

	ck_assert_int_eq(gpo_optim_new(cpu_dev(), GPO_ADAMW, &opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 1, shape, 0), 0);
	return opt;
}

START_TEST(test_locale_printf_bites)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%g", 0.001);
	ck_assert_str_eq(buf, "0,001");
	ck_assert(strtod("0.001", NULL) != 0.001);
	/* common/ does not */
	gpo__fmt_double(buf, sizeof(buf), 0.001);
	ck_assert_str_eq(buf, "0.001");
	gpo__snprintf(buf, sizeof(buf), "%.3f", 2.5);
	ck_assert_str_eq(buf, "2.500");
	ck_assert_str_eq(localeconv()->decimal_point, ",");	/* kept */
}
END_TEST

START_TEST(test_locale_parsers_read_c_numbers)
{
	double v;

	ck_assert_int_eq(gpo__parse_double("0.001", &v), 0);
	ck_assert(v == 0.001);
	ck_assert_int_eq(gpo__parse_double("1e-08", &v), 0);
	ck_assert(v == 1e-08);
	ck_assert_int_eq(gpo__parse_double("0,001", &v), -EINVAL);
	ck_assert(gpo__strtod("2.5x", NULL) == 2.5);
}
END_TEST

START_TEST(test_locale_configure_and_get)
{
	struct gpo_optim *opt = new_adamw();
	double lr = 0, eps = 0, b2 = 0;

	ck_assert_int_eq(gpo_optim_configure(opt, -1,
			 "lr=0.001 eps=1e-08 betas=0.9,0.999"), 0);
	ck_assert_int_eq(gpo_optim_get(opt, -1, "lr", &lr), 0);
	ck_assert(lr == 0.001);
	ck_assert_int_eq(gpo_optim_get(opt, -1, "eps", &eps), 0);
	ck_assert(eps == 1e-08);
	ck_assert_int_eq(gpo_optim_get(opt, -1, "beta2", &b2), 0);
	ck_assert(b2 == 0.999);
	/* the error message's numbers too */
	ck_assert_int_eq(gpo_optim_configure(opt, -1, "lr=-0.5"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "-0.5"));
	gpo_optim_free(opt);
}
END_TEST

START_TEST(test_locale_optim_set)
{
	struct gpo_optim *opt = new_adamw();
	double lr = 0;

	ck_assert_int_eq(gpo_optim_set(opt, -1, "lr", 0.001), 0);
	ck_assert_int_eq(gpo_optim_get(opt, -1, "lr", &lr), 0);
	ck_assert(lr == 0.001);
	gpo_optim_free(opt);
}
END_TEST

START_TEST(test_locale_describe_prints_points)
{
	struct gpo_optim *opt = new_adamw();
	char desc[1024];

	ck_assert_int_eq(gpo_optim_configure(opt, -1, "lr=0.001"), 0);
	ck_assert_int_gt(gpo_optim_describe(opt, -1, desc, sizeof(desc)), 0);
	ck_assert_msg(strstr(desc, "lr=0.001\n") != NULL, "%s", desc);
	ck_assert_msg(strchr(desc, ',') == NULL, "%s", desc);
	gpo_optim_free(opt);
}
END_TEST

START_TEST(test_locale_checkpoint_round_trip)
{
	struct gpo_optim *opt = new_adamw(), *back = new_adamw();
	uint64_t rng = tu_rng("locale_ckpt");
	double lr = 0, eps = 0, wd = 0, b1 = 0;
	char path[128];
	float w[257];

	tu_fill(w, 257, &rng, -1, 1);
	ck_assert_int_eq(gpo_optim_configure(opt, -1,
		"lr=0.001 eps=1e-08 weight_decay=0.0125 betas=0.85,0.995"), 0);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, w, sizeof(w)),
			 0);
	snprintf(path, sizeof(path), "%s/a.st", dir);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);

	ck_assert_int_eq(gpo_optim_configure(back, -1, "lr=0.5"), 0);
	ck_assert_int_eq(gpo_optim_restore(back, path, 0), 0);
	ck_assert_int_eq(gpo_optim_get(back, -1, "lr", &lr), 0);
	ck_assert_msg(lr == 0.001, "lr %a", lr);
	ck_assert_int_eq(gpo_optim_get(back, -1, "eps", &eps), 0);
	ck_assert(eps == 1e-08);
	ck_assert_int_eq(gpo_optim_get(back, -1, "weight_decay", &wd), 0);
	ck_assert(wd == 0.0125);
	ck_assert_int_eq(gpo_optim_get(back, -1, "beta1", &b1), 0);
	ck_assert(b1 == 0.85);
	gpo_optim_free(back);
	gpo_optim_free(opt);
}
END_TEST

START_TEST(test_locale_schedule_save_load)
{
	struct gpo_sched *s, *t;
	char a[2048], b[2048];
	int i;

	ck_assert_int_eq(gpo_sched_new("cosine", &s), 0);
	ck_assert_int_eq(gpo_sched_configure(s,
		"t_max=100 eta_min=0.0001 warmup_steps=3 "
		"warmup_start_factor=0.25"), 0);
	for (i = 0; i < 7; i++)
		ck_assert_int_eq(gpo_sched_step(s, 0), 0);
	ck_assert_int_gt(gpo_sched_save(s, a, sizeof(a)), 0);
	ck_assert_msg(strstr(a, "eta_min=0.0001") != NULL, "%s", a);
	ck_assert_msg(strchr(a, ',') == NULL, "%s", a);

	ck_assert_int_eq(gpo_sched_new("constant", &t), 0);
	ck_assert_int_eq(gpo_sched_load(t, a), 0);
	ck_assert(gpo_sched_lr(t, 0.1) == gpo_sched_lr(s, 0.1));
	ck_assert_int_gt(gpo_sched_save(t, b, sizeof(b)), 0);
	ck_assert_str_eq(a, b);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(gpo_sched_step(s, 0), 0);
		ck_assert_int_eq(gpo_sched_step(t, 0), 0);
		ck_assert(gpo_sched_lr(t, 0.1) == gpo_sched_lr(s, 0.1));
	}
	gpo_sched_free(t);
	gpo_sched_free(s);
}
END_TEST

/* de_DE.UTF-8, generated if it is missing and we are root: 0 or 77 */
static int locale_gate(void)
{
	if (setlocale(LC_ALL, DE))
		goto out_ok;
	if (geteuid() == 0 &&
	    !system("localedef -i de_DE -c -f UTF-8 " DE " >/dev/null 2>&1") &&
	    setlocale(LC_ALL, DE))
		goto out_ok;
	printf("SKIP: no %s locale, and it cannot be made here "
	       "(tools/deps.sh makes it as root)\n", DE);
	return 77;
out_ok:
	setlocale(LC_ALL, "C");
	return 0;
}

int main(void)
{
	Suite *s = suite_create("locale");
	TCase *tc = tcase_create("locale");
	int ret = locale_gate();

	if (ret)
		return ret;
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_locale_printf_bites);
	tcase_add_test(tc, test_locale_parsers_read_c_numbers);
	tcase_add_test(tc, test_locale_configure_and_get);
	tcase_add_test(tc, test_locale_optim_set);
	tcase_add_test(tc, test_locale_describe_prints_points);
	tcase_add_test(tc, test_locale_checkpoint_round_trip);
	tcase_add_test(tc, test_locale_schedule_save_load);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
