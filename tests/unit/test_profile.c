// SPDX-License-Identifier: MIT
/*
 * test_profile.c - gpo_graph_profile(): the same results as a run, every
 * launch counted once under its kernel and pass, and its errors
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define ROWS	37
#define IN	29
#define OUT	11

/* loss = mean(relu(x w^T)) over a parameter w [OUT, IN] of @opt */
static struct gpo_tensor *build(struct gpo_graph *g, struct gpo_optim *opt,
				struct gpo_tensor **x)
{
	const uint64_t xs[2] = { ROWS, IN };
	struct gpo_tensor *w, *h;

	*x = gpo_tensor_input(g, "x", GPO_F32, 2, xs);
	w = gpo_tensor_param(g, opt, "w");
	h = gpo_relu(g, gpo_matmul(g, *x, w, GPO_MATMUL_TB));
	return gpo_mean(g, gpo_mean(g, h, 1), 0);
}

static const struct gpo_op_time *find(const struct gpo_op_time *t, int n,
				      const char *op, unsigned int pass)
{
	int i;

	for (i = 0; i < n; i++)
		if (t[i].pass == pass && !strcmp(t[i].op, op))
			return &t[i];
	return NULL;
}

START_TEST(test_profile_matches_run_and_counts_launches)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t seed = tu_seed();

	for (d = 0; d < nd; d++) {
		const uint64_t ws[2] = { OUT, IN };
		float xv[ROWS * IN], wv[OUT * IN], g1[OUT * IN], g2[OUT * IN];
		float l1, l2;
		struct gpo_op_time t[32];
		const struct gpo_op_time *mm;
		struct gpo_optim *opt;
		struct gpo_graph *g;
		struct gpo_tensor *x, *loss;
		uint64_t total = 0;
		int n, i;

		tu_fill(xv, ROWS * IN, &seed, -1, 1);
		tu_fill(wv, OUT * IN, &seed, -1, 1);
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "w", 2, ws, 0), 0);
		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		loss = build(g, opt, &x);
		ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "w", wv,
						 sizeof(wv)), 0);
		ck_assert_int_eq(gpo_tensor_write(x, xv, sizeof(xv)), 0);

		ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD |
						  GPO_RUN_BACKWARD), 0);
		ck_assert_int_eq(gpo_tensor_read(loss, &l1, 4), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", "w", g1,
						sizeof(g1)), 0);
		tu_poison(g2, OUT * IN);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", "w", g2,
						 sizeof(g2)), 0);

		n = gpo_graph_profile(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD,
				      t, 32);
		ck_assert_msg(n > 0, "%s: %d %s", tu_device_id(devs[d]), n,
			      gpo_errmsg());
		ck_assert_int_eq(gpo_tensor_read(loss, &l2, 4), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", "w", g2,
						sizeof(g2)), 0);
		ck_assert(memcmp(&l1, &l2, 4) == 0 && isfinite(l1));
		ck_assert(memcmp(g1, g2, sizeof(g1)) == 0);

		/* one product forward; dW = dH^T X backward (dX not wanted) */
		mm = find(t, n, "matmul", GPO_RUN_FORWARD);
		ck_assert_ptr_nonnull(mm);
		ck_assert_uint_eq(mm->launches, 1);
		mm = find(t, n, "matmul", GPO_RUN_BACKWARD);
		ck_assert_ptr_nonnull(mm);
		ck_assert_uint_eq(mm->launches, 1);
		ck_assert_ptr_nonnull(find(t, n, "unary_bwd", GPO_RUN_BACKWARD));
		for (i = 0; i < n; i++) {
			ck_assert(t[i].launches > 0);
			total += t[i].ns;
		}
		/* the cpu backend and OpenCL's events time every launch */
		if (!strncmp(tu_device_id(devs[d]), "cpu", 3))
			ck_assert_uint_gt(total, 0);

		/* forward alone has no backward entries */
		n = gpo_graph_profile(g, GPO_RUN_FORWARD, t, 32);
		ck_assert_int_gt(n, 0);
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(t[i].pass, GPO_RUN_FORWARD);

		gpo_graph_free(g);
		gpo_optim_free(opt);
	}
}
END_TEST

/*
 * A bias add's backward copies nothing: the product's gradient is the
 * sum's, in the same place (emit.c's grad_aliases), and reads the same
 */
START_TEST(test_profile_bias_add_backward_copies_nothing)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t seed = tu_seed();

	for (d = 0; d < nd; d++) {
		const uint64_t xs[2] = { ROWS, IN }, ws[2] = { OUT, IN };
		const uint64_t bs[1] = { OUT };
		float xv[ROWS * IN], wv[OUT * IN], bv[OUT];
		float gh[ROWS * OUT], gy[ROWS * OUT];
		struct gpo_op_time t[32];
		struct gpo_optim *opt;
		struct gpo_graph *g;
		struct gpo_tensor *x, *h, *y, *loss;
		int n, i, nz = 0;

		tu_fill(xv, ROWS * IN, &seed, -1, 1);
		tu_fill(wv, OUT * IN, &seed, -1, 1);
		tu_fill(bv, OUT, &seed, -1, 1);
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "w", 2, ws, 0), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "b", 1, bs, 0), 1);
		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		x = gpo_tensor_input(g, "x", GPO_F32, 2, xs);
		h = gpo_matmul(g, x, gpo_tensor_param(g, opt, "w"),
			       GPO_MATMUL_TB);
		y = gpo_add(g, h, gpo_tensor_param(g, opt, "b"));
		loss = gpo_mean(g, gpo_mean(g, gpo_relu(g, y), 1), 0);
		ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "w", wv,
						 sizeof(wv)), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "b", bv,
						 sizeof(bv)), 0);
		ck_assert_int_eq(gpo_tensor_write(x, xv, sizeof(xv)), 0);
		tu_poison(gh, ROWS * OUT);
		ck_assert_int_eq(gpo_tensor_write(gpo_tensor_grad(h), gh,
						  sizeof(gh)), 0);

		n = gpo_graph_profile(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD,
				      t, 32);
		ck_assert_msg(n > 0, "%s: %d %s", tu_device_id(devs[d]), n,
			      gpo_errmsg());
		ck_assert_msg(!find(t, n, "unary", GPO_RUN_BACKWARD),
			      "%s: a copy in backward", tu_device_id(devs[d]));
		ck_assert_int_eq(gpo_tensor_read(gpo_tensor_grad(h), gh,
						 sizeof(gh)), 0);
		ck_assert_int_eq(gpo_tensor_read(gpo_tensor_grad(y), gy,
						 sizeof(gy)), 0);
		ck_assert(memcmp(gh, gy, sizeof(gh)) == 0);
		/* relu's: 0 or 1 / (ROWS OUT), and some of each */
		for (i = 0; i < ROWS * OUT; i++) {
			ck_assert(gh[i] == 0.0f || (gh[i] > 0.0f &&
				  fabsf(gh[i] * ROWS * OUT - 1.0f) < 1e-5f));
			nz += gh[i] != 0.0f;
		}
		ck_assert(nz > 0 && nz < ROWS * OUT);
		gpo_graph_free(g);
		gpo_optim_free(opt);
	}
}
END_TEST

START_TEST(test_profile_bad_arguments_are_refused)
{
	struct gpo_device *dev;
	struct gpo_op_time t[32];
	struct gpo_optim *opt;
	struct gpo_graph *g;
	struct gpo_tensor *x, *loss;
	const uint64_t ws[2] = { OUT, IN };

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_tensor(opt, "w", 2, ws, 0), 0);
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	loss = build(g, opt, &x);
	ck_assert_ptr_nonnull(loss);
	ck_assert_int_eq(gpo_graph_profile(NULL, GPO_RUN_FORWARD, t, 32),
			 -EINVAL);
	ck_assert_int_eq(gpo_graph_profile(g, GPO_RUN_FORWARD, NULL, 32),
			 -EINVAL);
	ck_assert_int_eq(gpo_graph_profile(g, GPO_RUN_FORWARD, t, 0), -EINVAL);
	ck_assert_int_eq(gpo_graph_profile(g, 0, t, 32), -EINVAL);
	ck_assert_int_eq(gpo_graph_profile(g, 8, t, 32), -EINVAL);
	/* no gpo_graph_backward() yet */
	ck_assert_int_eq(gpo_graph_profile(g, GPO_RUN_BACKWARD, t, 32),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "backward"));
	ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
	/* three kernels at least forward: no room for them in one entry */
	ck_assert_int_eq(gpo_graph_profile(g, GPO_RUN_FORWARD, t, 1), -ENOSPC);
	ck_assert_int_gt(gpo_graph_profile(g, GPO_RUN_FORWARD |
					   GPO_RUN_BACKWARD, t, 32), 2);
	gpo_graph_free(g);
	gpo_optim_free(opt);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("profile");
	TCase *tc = tcase_create("profile");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_profile_matches_run_and_counts_launches);
	tcase_add_test(tc, test_profile_bias_add_backward_copies_nothing);
	tcase_add_test(tc, test_profile_bad_arguments_are_refused);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
