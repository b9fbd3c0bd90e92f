// SPDX-License-Identifier: MIT
/*
 * test_optim_adam.c - Adam and AdamW against the float64 reference, every
 * option that changes the math, on every device
 */
#include "ref.h"
#include "testutil.h"

#define STEPS 20

START_TEST(test_adam_matches_reference)
{
	ref_check_config("adam", GPO_ADAM, "lr=0.01", STEPS);
}
END_TEST

/* beta2 = 0.9999: 1 - beta2 must not be computed from a rounded beta2 */
START_TEST(test_adam_betas_eps_matches_reference)
{
	ref_check_config("adam_betas_eps", GPO_ADAM,
			 "lr=0.01 betas=0.8,0.9999 eps=1e-3", STEPS);
}
END_TEST

START_TEST(test_adam_weight_decay_is_l2_matches_reference)
{
	ref_check_config("adam_weight_decay", GPO_ADAM,
			 "lr=0.01 weight_decay=0.1", STEPS);
}
END_TEST

START_TEST(test_adam_amsgrad_matches_reference)
{
	ref_check_config("adam_amsgrad", GPO_ADAM, "lr=0.01 amsgrad=1", STEPS);
}
END_TEST

START_TEST(test_adam_maximize_matches_reference)
{
	ref_check_config("adam_maximize", GPO_ADAM,
			 "lr=0.01 maximize=1 weight_decay=0.05", STEPS);
}
END_TEST

START_TEST(test_adam_huge_tensor_matches_reference)
{
	ref_check_huge("adam_huge", GPO_ADAM, "lr=0.01 weight_decay=0.01", 3);
}
END_TEST

/* AdamW's defaults: weight_decay 1e-2 */
START_TEST(test_adamw_matches_reference)
{
	ref_check_config("adamw", GPO_ADAMW, "lr=0.01", STEPS);
}
END_TEST

START_TEST(test_adamw_decoupled_weight_decay_matches_reference)
{
	ref_check_config("adamw_weight_decay", GPO_ADAMW,
			 "lr=0.01 weight_decay=0.5", STEPS);
}
END_TEST

START_TEST(test_adamw_betas_eps_matches_reference)
{
	ref_check_config("adamw_betas_eps", GPO_ADAMW,
			 "lr=0.01 betas=0.7,0.95 eps=1e-4", STEPS);
}
END_TEST

/* a short beta2 makes v fall often, so the running max matters */
START_TEST(test_adamw_amsgrad_matches_reference)
{
	ref_check_config("adamw_amsgrad", GPO_ADAMW,
			 "lr=0.01 weight_decay=0.1 amsgrad=1 betas=0.9,0.8",
			 STEPS);
}
END_TEST

START_TEST(test_adamw_maximize_matches_reference)
{
	ref_check_config("adamw_maximize", GPO_ADAMW,
			 "lr=0.01 weight_decay=0.1 maximize=1 amsgrad=1", STEPS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_adam");
	TCase *tc = tcase_create("adam");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_adam_matches_reference);
	tcase_add_test(tc, test_adam_betas_eps_matches_reference);
	tcase_add_test(tc, test_adam_weight_decay_is_l2_matches_reference);
	tcase_add_test(tc, test_adam_amsgrad_matches_reference);
	tcase_add_test(tc, test_adam_maximize_matches_reference);
	tcase_add_test(tc, test_adam_huge_tensor_matches_reference);
	tcase_add_test(tc, test_adamw_matches_reference);
	tcase_add_test(tc, test_adamw_decoupled_weight_decay_matches_reference);
	tcase_add_test(tc, test_adamw_betas_eps_matches_reference);
	tcase_add_test(tc, test_adamw_amsgrad_matches_reference);
	tcase_add_test(tc, test_adamw_maximize_matches_reference);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
