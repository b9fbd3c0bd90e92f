// SPDX-License-Identifier: MIT
/*
 * test_optim_rmsprop.c - RMSprop against the float64 reference, every
 * option that changes the math, on every device
 */
#include "ref.h"
#include "testutil.h"

#define STEPS 20

/* torch's defaults: lr 1e-2, alpha 0.99, eps 1e-8 */
START_TEST(test_rmsprop_matches_reference)
{
	ref_check_config("rmsprop", GPO_RMSPROP, "", STEPS);
}
END_TEST

START_TEST(test_rmsprop_alpha_eps_matches_reference)
{
	ref_check_config("rmsprop_alpha_eps", GPO_RMSPROP,
			 "alpha=0.9 eps=1e-3", STEPS);
}
END_TEST

START_TEST(test_rmsprop_weight_decay_matches_reference)
{
	ref_check_config("rmsprop_weight_decay", GPO_RMSPROP,
			 "weight_decay=0.1", STEPS);
}
END_TEST

START_TEST(test_rmsprop_momentum_matches_reference)
{
	ref_check_config("rmsprop_momentum", GPO_RMSPROP,
			 "lr=0.001 momentum=0.9", STEPS);
}
END_TEST

START_TEST(test_rmsprop_centered_matches_reference)
{
	ref_check_config("rmsprop_centered", GPO_RMSPROP, "centered=1", STEPS);
}
END_TEST

START_TEST(test_rmsprop_centered_momentum_matches_reference)
{
	ref_check_config("rmsprop_centered_momentum", GPO_RMSPROP,
			 "centered=1 momentum=0.5 weight_decay=0.01 alpha=0.95",
			 STEPS);
}
END_TEST

START_TEST(test_rmsprop_maximize_matches_reference)
{
	ref_check_config("rmsprop_maximize", GPO_RMSPROP,
			 "maximize=1 momentum=0.5 weight_decay=0.01", STEPS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_rmsprop");
	TCase *tc = tcase_create("rmsprop");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_rmsprop_matches_reference);
	tcase_add_test(tc, test_rmsprop_alpha_eps_matches_reference);
	tcase_add_test(tc, test_rmsprop_weight_decay_matches_reference);
	tcase_add_test(tc, test_rmsprop_momentum_matches_reference);
	tcase_add_test(tc, test_rmsprop_centered_matches_reference);
	tcase_add_test(tc, test_rmsprop_centered_momentum_matches_reference);
	tcase_add_test(tc, test_rmsprop_maximize_matches_reference);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
