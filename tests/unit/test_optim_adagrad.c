// SPDX-License-Identifier: MIT
/*
 * test_optim_adagrad.c - Adagrad against the float64 reference, every
 * option that changes the math, on every device
 */
#include <math.h>
#include <stdlib.h>
#include "ref.h"
#include "testutil.h"

#define STEPS 20

START_TEST(test_adagrad_matches_reference)
{
	ref_check_config("adagrad", GPO_ADAGRAD, "lr=0.1", STEPS);
}
END_TEST

START_TEST(test_adagrad_lr_decay_matches_reference)
{
	ref_check_config("adagrad_lr_decay", GPO_ADAGRAD,
			 "lr=0.1 lr_decay=0.05", STEPS);
}
END_TEST

START_TEST(test_adagrad_weight_decay_matches_reference)
{
	ref_check_config("adagrad_weight_decay", GPO_ADAGRAD,
			 "lr=0.1 weight_decay=0.1", STEPS);
}
END_TEST

START_TEST(test_adagrad_initial_accumulator_value_matches_reference)
{
	ref_check_config("adagrad_initial_accumulator", GPO_ADAGRAD,
			 "lr=0.1 initial_accumulator_value=0.3", STEPS);
}
END_TEST

START_TEST(test_adagrad_eps_matches_reference)
{
	ref_check_config("adagrad_eps", GPO_ADAGRAD, "lr=0.1 eps=0.01", STEPS);
}
END_TEST

START_TEST(test_adagrad_maximize_matches_reference)
{
	ref_check_config("adagrad_maximize", GPO_ADAGRAD,
			 "lr=0.1 maximize=1 weight_decay=0.05 lr_decay=0.01",
			 STEPS);
}
END_TEST

/* torch fills state['sum'] at construction: it is there before any step */
START_TEST(test_adagrad_sum_starts_at_initial_accumulator_value)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, i;
	uint64_t shapes[2] = { 61, 1021 };

	ck_assert_int_ge(ndev, 1);
	for (d = 0; d < ndev; d++) {
		struct gpo_optim *opt;
		float sum[1082];

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_ADAGRAD, &opt), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "a", 1, &shapes[0],
						      0), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "b", 1, &shapes[1],
						      0), 1);
		ck_assert_int_eq(gpo_optim_configure(opt, 0,
				 "initial_accumulator_value=0.25"), 0);
		tu_poison(sum, 1082);
		ck_assert_msg(gpo_optim_read(opt, "sum", NULL, sum,
					     sizeof(sum)) == 0,
			      "%s: read sum: %s", tu_device_id(devs[d]),
			      gpo_errmsg());
		for (i = 0; i < 1082; i++)
			ck_assert_msg(sum[i] == 0.25f, "%s: sum[%d] = %g",
				      tu_device_id(devs[d]), i, sum[i]);
		gpo_optim_free(opt);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_adagrad");
	TCase *tc = tcase_create("adagrad");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_adagrad_matches_reference);
	tcase_add_test(tc, test_adagrad_lr_decay_matches_reference);
	tcase_add_test(tc, test_adagrad_weight_decay_matches_reference);
	tcase_add_test(tc, test_adagrad_initial_accumulator_value_matches_reference);
	tcase_add_test(tc, test_adagrad_eps_matches_reference);
	tcase_add_test(tc, test_adagrad_maximize_matches_reference);
	tcase_add_test(tc, test_adagrad_sum_starts_at_initial_accumulator_value);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
