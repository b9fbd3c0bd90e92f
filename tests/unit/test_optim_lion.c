// SPDX-License-Identifier: MIT
/*
 * test_optim_lion.c - Lion against the float64 reference (README.md's
 * definition; torch 1.13 has no Lion), every option, on every device
 */
#include "ref.h"
#include "testutil.h"

#define STEPS 20

START_TEST(test_lion_matches_reference)
{
	ref_check_config("lion", GPO_LION, "lr=1e-3", STEPS);
}
END_TEST

START_TEST(test_lion_betas_matches_reference)
{
	ref_check_config("lion_betas", GPO_LION, "lr=1e-3 betas=0.8,0.95",
			 STEPS);
}
END_TEST

START_TEST(test_lion_decoupled_weight_decay_matches_reference)
{
	ref_check_config("lion_weight_decay", GPO_LION,
			 "lr=0.01 weight_decay=0.5", STEPS);
}
END_TEST

START_TEST(test_lion_maximize_matches_reference)
{
	ref_check_config("lion_maximize", GPO_LION,
			 "lr=1e-3 maximize=1 weight_decay=0.1", STEPS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_lion");
	TCase *tc = tcase_create("lion");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_lion_matches_reference);
	tcase_add_test(tc, test_lion_betas_matches_reference);
	tcase_add_test(tc, test_lion_decoupled_weight_decay_matches_reference);
	tcase_add_test(tc, test_lion_maximize_matches_reference);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
