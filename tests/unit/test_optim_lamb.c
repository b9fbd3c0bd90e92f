// SPDX-License-Identifier: MIT
/*
 * test_optim_lamb.c - LAMB against the float64 reference (gpuopt.h and
 * README.md define it; torch 1.13 has none), every option, on every device.
 * The standard runs hold several tensors, some over a 4096-element block,
 * so per-tensor trust ratios and multi-block norms both count.
 */
#include <stdlib.h>
#include "ref.h"
#include "testutil.h"

#define STEPS 20

START_TEST(test_lamb_matches_reference)
{
	ref_check_config("lamb", GPO_LAMB, "lr=0.01", STEPS);
}
END_TEST

START_TEST(test_lamb_weight_decay_matches_reference)
{
	ref_check_config("lamb_weight_decay", GPO_LAMB,
			 "lr=0.01 weight_decay=0.1", STEPS);
}
END_TEST

START_TEST(test_lamb_betas_eps_matches_reference)
{
	ref_check_config("lamb_betas_eps", GPO_LAMB,
			 "lr=0.01 betas=0.8,0.99 eps=1e-3", STEPS);
}
END_TEST

START_TEST(test_lamb_maximize_matches_reference)
{
	ref_check_config("lamb_maximize", GPO_LAMB,
			 "lr=0.01 maximize=1 weight_decay=0.01", STEPS);
}
END_TEST

/*
 * Tensors whose parameters differ in scale by 10^4 get trust ratios that
 * differ as much: one ratio for all, or one per block, would be far off.
 */
START_TEST(test_lamb_trust_ratio_is_per_tensor)
{
	static const uint64_t sizes[] = { 61, 4099, 9001, 3 };
	static const double scale[] = { 0.01, 1, 100, 10 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, t, k;
	uint64_t rng = tu_rng("lamb_trust_per_tensor");

	ck_assert_int_ge(ndev, 1);
	for (d = 0; d < ndev; d++) {
		struct ref_run rr;

		rr_init(&rr, devs[d], GPO_LAMB, &rng);
		for (t = 0; t < 4; t++)
			rr_add_tensor(&rr, 1, &sizes[t], 0);
		rr_configure(&rr, -1, "lr=0.01 weight_decay=0.01");
		for (t = 0; t < 4; t++) {
			float *x = malloc(sizes[t] * sizeof(float));

			tu_fill(x, sizes[t], &rng, -scale[t], scale[t]);
			rr_write_params(&rr, t, x);
			free(x);
		}
		for (k = 0; k < STEPS; k++) {
			rr_random_grads(&rr, -1, 1);
			rr_step(&rr, NULL);
		}
		rr_check(&rr);
		rr_free(&rr);
	}
}
END_TEST

/* ||p|| = 0: the trust ratio is 1, so p moves by exactly lr * r */
START_TEST(test_lamb_zero_params_use_trust_one)
{
	static const uint64_t sizes[] = { 1021, 61 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t rng = tu_rng("lamb_zero_params");

	ck_assert_int_ge(ndev, 1);
	for (d = 0; d < ndev; d++) {
		struct ref_run rr;
		float zero[1021] = { 0 }, x[61];

		rr_init(&rr, devs[d], GPO_LAMB, &rng);
		rr_add_tensor(&rr, 1, &sizes[0], 0);
		rr_add_tensor(&rr, 1, &sizes[1], 0);
		rr_configure(&rr, -1, "lr=0.01 weight_decay=0.1");
		rr_write_params(&rr, 0, zero);
		tu_fill(x, 61, &rng, -1, 1);
		rr_write_params(&rr, 1, x);
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, NULL);
		rr_check(&rr);
		rr_free(&rr);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("optim_lamb");
	TCase *tc = tcase_create("lamb");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_lamb_matches_reference);
	tcase_add_test(tc, test_lamb_weight_decay_matches_reference);
	tcase_add_test(tc, test_lamb_betas_eps_matches_reference);
	tcase_add_test(tc, test_lamb_maximize_matches_reference);
	tcase_add_test(tc, test_lamb_trust_ratio_is_per_tensor);
	tcase_add_test(tc, test_lamb_zero_params_use_trust_one);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
