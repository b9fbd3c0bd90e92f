// SPDX-License-Identifier: MIT
/*
 * test_optim_sgd.c - SGD against the float64 reference, every option that
 * changes the math, on every device
 */
#include <math.h>
#include <stdlib.h>
#include "ref.h"
#include "testutil.h"

#define STEPS 20

START_TEST(test_sgd_plain_matches_reference)
{
	ref_check_config("sgd_plain", GPO_SGD, "lr=0.1", STEPS);
}
END_TEST

START_TEST(test_sgd_weight_decay_matches_reference)
{
	ref_check_config("sgd_weight_decay", GPO_SGD,
			 "lr=0.1 weight_decay=0.05", STEPS);
}
END_TEST

START_TEST(test_sgd_momentum_matches_reference)
{
	ref_check_config("sgd_momentum", GPO_SGD, "lr=0.05 momentum=0.9",
			 STEPS);
}
END_TEST

START_TEST(test_sgd_dampening_matches_reference)
{
	ref_check_config("sgd_dampening", GPO_SGD,
			 "lr=0.05 momentum=0.9 dampening=0.3 weight_decay=0.01",
			 STEPS);
}
END_TEST

START_TEST(test_sgd_nesterov_matches_reference)
{
	ref_check_config("sgd_nesterov", GPO_SGD,
			 "lr=0.05 momentum=0.9 nesterov=1 weight_decay=0.01",
			 STEPS);
}
END_TEST

START_TEST(test_sgd_maximize_matches_reference)
{
	ref_check_config("sgd_maximize", GPO_SGD,
			 "lr=0.05 momentum=0.8 dampening=0.1 weight_decay=0.02 maximize=1",
			 STEPS);
}
END_TEST

/*
 * torch: the first step with momentum sets buf = d_p (a copy, without
 * dampening); later ones buf = momentum * buf + (1 - dampening) * d_p.
 * A dampening of 0.5 makes the two visibly different.
 */
START_TEST(test_sgd_momentum_first_step_copies_gradient)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, k;
	uint64_t rng = tu_rng("sgd_first_step"), shape = 1021;

	ck_assert_int_ge(ndev, 1);
	for (d = 0; d < ndev; d++) {
		struct ref_run rr;
		float buf[1021];
		float p0[1021];
		int i;

		rr_init(&rr, devs[d], GPO_SGD, &rng);
		rr_add_tensor(&rr, 1, &shape, 0);
		rr_configure(&rr, -1,
			     "lr=0.1 momentum=0.9 dampening=0.5 weight_decay=0.1");
		rr_random_params(&rr, -1, 1);
		for (i = 0; i < 1021; i++)
			p0[i] = (float)rr.ref.t[0].p[i];
		for (k = 0; k < 3; k++) {
			rr_random_grads(&rr, -1, 1);
			rr_step(&rr, NULL);
			rr_check(&rr);
			if (k)
				continue;
			tu_poison(buf, 1021);
			ck_assert_int_eq(gpo_optim_read(rr.opt, "momentum_buffer",
							"t0", buf, sizeof(buf)),
					 0);
			for (i = 0; i < 1021; i++) {
				double dp = rr.grads[0][i] + 0.1 * p0[i];

				ck_assert_msg(fabs(buf[i] - dp) <=
					      1e-6 * (fabs(rr.grads[0][i]) +
						      0.1 * fabs(p0[i])),
					      "%s: buffer[%d] = %g after the first step, want d_p = %g",
					      rr.dev_id, i, buf[i], dp);
			}
		}
		rr_free(&rr);
	}
}
END_TEST

START_TEST(test_sgd_momentum_huge_tensor_matches_reference)
{
	ref_check_huge("sgd_huge", GPO_SGD,
		       "lr=0.05 momentum=0.9 dampening=0.1 weight_decay=0.01",
		       3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_sgd");
	TCase *tc = tcase_create("sgd");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_sgd_plain_matches_reference);
	tcase_add_test(tc, test_sgd_weight_decay_matches_reference);
	tcase_add_test(tc, test_sgd_momentum_matches_reference);
	tcase_add_test(tc, test_sgd_dampening_matches_reference);
	tcase_add_test(tc, test_sgd_nesterov_matches_reference);
	tcase_add_test(tc, test_sgd_maximize_matches_reference);
	tcase_add_test(tc, test_sgd_momentum_first_step_copies_gradient);
	tcase_add_test(tc, test_sgd_momentum_huge_tensor_matches_reference);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
