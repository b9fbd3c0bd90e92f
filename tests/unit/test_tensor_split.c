// SPDX-License-Identifier: MIT
/*
 * test_tensor_split.c - the products and sums the engine splits to fill a
 * device: a product of few tiles over a long sum (a weight's gradient)
 * and a sum of few outputs over a long axis (a bias's gradient), on every
 * device, against float64
 *
 * The split happens where the outputs are too few for the device, so the
 * shapes here (a handful of outputs, thousands of terms) split on every
 * device, the cpu backend included. The larger ones (a few 128 x 128
 * tiles) split into slices of matmul_big on a device of a few compute
 * units (the cpu backend, PoCL and lavapipe here): aligned for its vector
 * loads, and ragged, with a shorter last slice.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/gpuopt_i.h"

#define TOL	2e-5	/* of the sum of the terms' magnitudes */

static void check_close(const char *what, const char *dev, const float *got,
			const double *want, const double *mag, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_msg(fabs(got[i] - want[i]) <= TOL * mag[i] + 1e-30,
			      "%s on %s: [%zu] = %.9g, want %.9g (terms %.3g)",
			      what, dev, i, got[i], want[i], mag[i]);
}

/* the product was split: its slices summed by a reduction */
static void expect_split(struct gpo_graph *g, const char *dev)
{
	struct gpo_op_time t[8];
	int n = gpo_graph_profile(g, GPO_RUN_FORWARD, t, 8), i, red = 0;

	ck_assert_int_gt(n, 0);
	for (i = 0; i < n; i++)
		red |= !strcmp(t[i].op, "reduce");
	ck_assert_msg(red, "%s: the product was not split", dev);
}

/*
 * the slices ran on matmul_big, where the device has the few compute
 * units that make it the choice (tensor/emit.c, mm())
 */
static void expect_big(struct gpo_graph *g, struct gpo_device *dev)
{
	struct gpo_device_info info;
	struct gpo_op_time t[8];
	int n = gpo_graph_profile(g, GPO_RUN_FORWARD, t, 8), i, big = 0;

	ck_assert_int_eq(gpo_device_info(tu_ctx(), gpo_device_index(dev),
					 &info), 0);
	if (info.compute_units > 4)
		return;
	ck_assert_int_gt(n, 0);
	for (i = 0; i < n; i++)
		big |= !strcmp(t[i].op, "matmul_big");
	ck_assert_msg(big, "%s: the slices did not run on matmul_big",
		      tu_device_id(dev));
}

/* op(A) op(B) in double, and the sums of |terms| */
static void ref_mm(const float *a, const float *b, int ta, int tb, uint32_t m,
		   uint32_t n, uint32_t k, double *c, double *mag)
{
	uint32_t i, j, p;

	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			double s = 0, t = 0;

			for (p = 0; p < k; p++) {
				double v = (double)(ta ? a[p * m + i] :
							 a[i * k + p]) *
					   (tb ? b[j * k + p] : b[p * n + j]);

				s += v;
				t += fabs(v);
			}
			c[i * n + j] = s;
			mag[i * n + j] = t;
		}
}

START_TEST(test_split_product_matches_float64)
{
	static const uint32_t dims[][3] = { { 5, 7, 3001 }, { 67, 3, 1031 },
					    { 1, 1, 4099 }, { 256, 128, 4096 },
					    { 250, 120, 4100 } };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d, v, f;
	uint64_t seed = tu_seed();

	for (d = 0; d < nd; d++)
		for (v = 0; v < 5; v++)
			for (f = 0; f < 4; f++) {
				uint32_t m = dims[v][0], n = dims[v][1];
				uint32_t k = dims[v][2];
				int ta = f & 1, tb = f >> 1;
				uint64_t as[2] = { ta ? k : m, ta ? m : k };
				uint64_t bs[2] = { tb ? n : k, tb ? k : n };
				float *a = malloc(m * k * 4), *b = malloc(k * n * 4);
				float *c = malloc(m * n * 4);
				double *w = malloc(m * n * 8), *mag = malloc(m * n * 8);
				struct gpo_tensor *ta_, *tb_, *tc;
				struct gpo_graph *g;
				char what[64];

				tu_fill(a, m * k, &seed, -1, 1);
				tu_fill(b, k * n, &seed, -1, 1);
				tu_poison(c, m * n);
				ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
				ta_ = gpo_tensor_input(g, "a", GPO_F32, 2, as);
				tb_ = gpo_tensor_input(g, "b", GPO_F32, 2, bs);
				tc = gpo_matmul(g, ta_, tb_,
						(ta ? GPO_MATMUL_TA : 0) |
						(tb ? GPO_MATMUL_TB : 0));
				ck_assert_int_eq(gpo_graph_status(g), 0);
				ck_assert_int_eq(gpo_tensor_write(ta_, a, m * k * 4), 0);
				ck_assert_int_eq(gpo_tensor_write(tb_, b, k * n * 4), 0);
				ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD), 0);
				ck_assert_int_eq(gpo_tensor_read(tc, c, m * n * 4), 0);
				expect_split(g, tu_device_id(devs[d]));
				if (m >= 128)
					expect_big(g, devs[d]);
				ref_mm(a, b, ta, tb, m, n, k, w, mag);
				snprintf(what, sizeof(what), "%ux%ux%u%s%s", m, n,
					 k, ta ? " ta" : "", tb ? " tb" : "");
				check_close(what, tu_device_id(devs[d]), c, w, mag,
					    m * n);
				gpo_graph_free(g);
				free(a);
				free(b);
				free(c);
				free(w);
				free(mag);
			}
}
END_TEST

/*
 * loss = sum(x W + x2 W) + sum(sum(x, 0)) with x [R, IN], W [IN, OUT] a
 * parameter used twice: dW = (x + x2)^T 1 (two split products, the second
 * added to the first); the bias-like sum over R rows is a split reduction,
 * its value checked too
 */
START_TEST(test_split_gradients_accumulate)
{
	enum { R = 4099, IN = 9, OUT = 13 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t seed = tu_seed();
	const uint64_t xs[2] = { R, IN }, ws[2] = { IN, OUT };

	for (d = 0; d < nd; d++) {
		float *x = malloc(R * IN * 4), *x2 = malloc(R * IN * 4);
		float w[IN * OUT], gw[IN * OUT], cs[IN];
		double want[IN * OUT], mag[IN * OUT], wc[IN], mc[IN];
		struct gpo_tensor *tx, *tx2, *tw, *h, *col, *loss;
		struct gpo_optim *opt;
		struct gpo_graph *g;
		uint32_t i, j, r;

		tu_fill(x, R * IN, &seed, -1, 1);
		tu_fill(x2, R * IN, &seed, -1, 1);
		tu_fill(w, IN * OUT, &seed, -1, 1);
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, "w", 2, ws, 0), 0);
		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		tx = gpo_tensor_input(g, "x", GPO_F32, 2, xs);
		tx2 = gpo_tensor_input(g, "x2", GPO_F32, 2, xs);
		tw = gpo_tensor_param(g, opt, "w");
		h = gpo_add(g, gpo_matmul(g, tx, tw, 0),
			    gpo_matmul(g, tx2, tw, 0));
		col = gpo_sum(g, tx, 0);
		loss = gpo_add(g, gpo_sum(g, gpo_sum(g, h, 1), 0),
			       gpo_sum(g, col, 0));
		ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "w", w,
						 sizeof(w)), 0);
		tu_poison(gw, IN * OUT);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", "w", gw,
						 sizeof(gw)), 0);
		ck_assert_int_eq(gpo_tensor_write(tx, x, R * IN * 4), 0);
		ck_assert_int_eq(gpo_tensor_write(tx2, x2, R * IN * 4), 0);
		ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD |
						  GPO_RUN_BACKWARD), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", "w", gw,
						sizeof(gw)), 0);
		ck_assert_int_eq(gpo_tensor_read(col, cs, sizeof(cs)), 0);
		for (i = 0; i < IN; i++) {
			double s = 0, t = 0, s2 = 0, t2 = 0;

			for (r = 0; r < R; r++) {
				s += x[r * IN + i];
				t += fabs(x[r * IN + i]);
				s2 += x[r * IN + i] + (double)x2[r * IN + i];
				t2 += fabs(x[r * IN + i]) + fabs(x2[r * IN + i]);
			}
			wc[i] = s;
			mc[i] = t;
			for (j = 0; j < OUT; j++) {
				want[i * OUT + j] = s2;
				mag[i * OUT + j] = t2;
			}
		}
		check_close("sum over rows", tu_device_id(devs[d]), cs, wc, mc,
			    IN);
		check_close("dW of two products", tu_device_id(devs[d]), gw,
			    want, mag, IN * OUT);
		gpo_graph_free(g);
		gpo_optim_free(opt);
		free(x);
		free(x2);
	}
}
END_TEST

/*
 * an embedding's gradient over more indices than lavapipe lets one
 * work-item walk (abi/tensor.h): launches of fewer indices, each adding
 * to the last, give the sums of every index on every device
 */
START_TEST(test_split_embedding_gradient_over_many_indices)
{
	enum { V = 37, D = 300, N = 40009 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t seed = tu_seed();
	const uint64_t ts[2] = { V, D }, is[1] = { N }, rs[2] = { N, D };

	for (d = 0; d < nd; d++) {
		float *r = malloc((size_t)N * D * 4), gw[V * D], w[V * D];
		double want[V * D], mag[V * D];
		int32_t *ix = malloc(N * 4);
		struct gpo_tensor *tt, *ti, *tr, *loss;
		struct gpo_op_time pt[32];
		struct gpo_optim *opt;
		struct gpo_graph *g;
		uint32_t i, j, launches = 0;
		int n, k;

		tu_fill(r, (size_t)N * D, &seed, -1, 1);
		tu_fill(w, V * D, &seed, -1, 1);
		for (i = 0; i < N; i++)
			ix[i] = (int32_t)tu_rand(&seed, 0, V);
		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "t", 2, ts, 0), 0);
		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		tt = gpo_tensor_param(g, opt, "t");
		ti = gpo_tensor_input(g, "i", GPO_I32, 1, is);
		tr = gpo_tensor_input(g, "r", GPO_F32, 2, rs);
		loss = gpo_sum(g, gpo_sum(g, gpo_mul(g, gpo_embedding(g, tt, ti),
						     tr), 1), 0);
		ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "t", w,
						 sizeof(w)), 0);
		tu_poison(gw, V * D);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", "t", gw,
						 sizeof(gw)), 0);
		ck_assert_int_eq(gpo_tensor_write(ti, ix, N * 4), 0);
		ck_assert_int_eq(gpo_tensor_write(tr, r, (size_t)N * D * 4), 0);
		n = gpo_graph_profile(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD, pt,
				      32);
		ck_assert_int_gt(n, 0);
		for (k = 0; k < n; k++)
			if (!strcmp(pt[k].op, "embed_bwd"))
				launches = (uint32_t)pt[k].launches;
		if (devs[d]->loop_limit)
			ck_assert_uint_ge(launches, 2);
		else
			ck_assert_uint_eq(launches, 1);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", "t", gw,
						sizeof(gw)), 0);
		for (i = 0; i < V * D; i++)
			want[i] = mag[i] = 0;
		for (i = 0; i < N; i++)
			for (j = 0; j < D; j++) {
				want[ix[i] * D + j] += r[(size_t)i * D + j];
				mag[ix[i] * D + j] += fabs(r[(size_t)i * D + j]);
			}
		check_close("embedding gradient", tu_device_id(devs[d]), gw,
			    want, mag, V * D);
		gpo_graph_free(g);
		gpo_optim_free(opt);
		free(r);
		free(ix);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tensor_split");
	TCase *tc = tcase_create("tensor_split");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_split_product_matches_float64);
	tcase_add_test(tc, test_split_gradients_accumulate);
	tcase_add_test(tc, test_split_embedding_gradient_over_many_indices);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
