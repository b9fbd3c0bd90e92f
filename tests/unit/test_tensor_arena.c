// SPDX-License-Identifier: MIT
/*
 * test_tensor_arena.c - a graph whose arena is larger than the device's
 * largest allocation: it is cut into blocks, no tensor straddling two,
 * and computes the same bytes as in one block; a tensor larger than an
 * allocation is refused with -EFBIG and leaves the pool as it was
 *
 * The device's limit (Vulkan on an NVIDIA GPU: 4 GiB) is lowered here
 * through the library's own device struct, so every backend is tested
 * with small sizes.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/gpuopt_i.h"
#include "tensor/tensor_i.h"

#define ROWS	61
#define IN	53
#define HID	47
#define OUT	11
#define LIMIT	(16 * 1024)	/* bytes: the largest tensor here is 12 KiB */

struct net {
	struct gpo_graph *g;
	struct gpo_tensor *x, *y, *loss;
};

static void build(struct net *n, struct gpo_device *dev, struct gpo_optim *opt)
{
	const uint64_t xs[2] = { ROWS, IN }, ys[1] = { ROWS };
	struct gpo_tensor *h;

	ck_assert_int_eq(gpo_graph_new(dev, &n->g), 0);
	n->x = gpo_tensor_input(n->g, "x", GPO_F32, 2, xs);
	n->y = gpo_tensor_input(n->g, "y", GPO_I32, 1, ys);
	h = gpo_matmul(n->g, n->x, gpo_tensor_param(n->g, opt, "w0"),
		       GPO_MATMUL_TB);
	h = gpo_tanh(n->g, gpo_add(n->g, h, gpo_tensor_param(n->g, opt, "b0")));
	h = gpo_layer_norm(n->g, h, NULL, NULL, 1e-5);
	h = gpo_matmul(n->g, h, gpo_tensor_param(n->g, opt, "w1"),
		       GPO_MATMUL_TB);
	n->loss = gpo_cross_entropy(n->g, h, n->y);
	ck_assert_int_eq(gpo_graph_backward(n->g, n->loss), 0);
}

static void run(struct net *n, const float *x, const int32_t *y, float *loss,
		float *grads, struct gpo_optim *opt, uint64_t numel)
{
	ck_assert_int_eq(gpo_tensor_write(n->x, x, ROWS * IN * 4), 0);
	ck_assert_int_eq(gpo_tensor_write(n->y, y, ROWS * 4), 0);
	ck_assert_int_eq(gpo_graph_run(n->g, GPO_RUN_FORWARD |
					     GPO_RUN_BACKWARD), 0);
	ck_assert_int_eq(gpo_tensor_read(n->loss, loss, 4), 0);
	ck_assert_int_eq(gpo_optim_read(opt, "grad", NULL, grads, numel * 4),
			 0);
}

START_TEST(test_arena_in_blocks_gives_the_same_bytes)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d, i, k;
	uint64_t seed = tu_seed();

	for (d = 0; d < nd; d++) {
		struct gpo_device *dev = devs[d];
		const uint64_t w0[2] = { HID, IN }, b0[1] = { HID };
		const uint64_t w1[2] = { OUT, HID };
		float x[ROWS * IN], l1, l2, *p, *g1, *g2;
		uint64_t numel, save = dev->max_alloc;
		int32_t y[ROWS];
		struct gpo_optim *opt;
		struct net a, b;

		ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w0", 2, w0, 0), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "b0", 1, b0, 0), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w1", 2, w1, 0), 0);
		numel = gpo_optim_numel(opt);
		p = malloc(numel * 4);
		g1 = malloc(numel * 4);
		g2 = malloc(numel * 4);
		tu_fill(p, numel, &seed, -0.5, 0.5);
		tu_fill(x, ROWS * IN, &seed, -1, 1);
		for (i = 0; i < ROWS; i++)
			y[i] = (int32_t)(tu_rand(&seed, 0, OUT));
		ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, p,
						 numel * 4), 0);

		build(&a, dev, opt);
		run(&a, x, y, &l1, g1, opt, numel);
		ck_assert_int_eq(a.g->nblk, 1);

		/* the same graph again, planned under a 16 KiB limit */
		dev->max_alloc = LIMIT;
		build(&b, dev, opt);
		tu_poison(g2, numel);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, g2,
						 numel * 4), 0);
		run(&b, x, y, &l2, g2, opt, numel);
		dev->max_alloc = save;
		ck_assert_msg(b.g->nblk > 4, "%s: %d blocks",
			      tu_device_id(dev), b.g->nblk);
		for (k = 0; k < b.g->nblk; k++)
			ck_assert_uint_le(b.g->blk_elems[k] * 4, LIMIT);
		ck_assert(isfinite(l1));
		ck_assert_msg(!memcmp(&l1, &l2, 4), "%s: loss %.9g, in blocks %.9g",
			      tu_device_id(dev), l1, l2);
		ck_assert_msg(!memcmp(g1, g2, numel * 4),
			      "%s: gradients differ in blocks",
			      tu_device_id(dev));
		gpo_graph_free(a.g);
		gpo_graph_free(b.g);
		gpo_optim_free(opt);
		free(p);
		free(g1);
		free(g2);
	}
}
END_TEST

START_TEST(test_arena_tensor_larger_than_an_allocation_is_efbig)
{
	struct gpo_device *dev;
	struct gpo_pool_stats before, after;
	const uint64_t s[2] = { 64, 65 };	/* 16.25 KiB */
	struct gpo_tensor *x, *y;
	struct gpo_graph *g;
	uint64_t save;

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	x = gpo_tensor_input(g, "x", GPO_F32, 2, s);
	y = gpo_relu(g, x);
	ck_assert_ptr_nonnull(y);
	ck_assert_int_eq(gpo_pool_stats(dev, &before), 0);
	save = dev->max_alloc;
	dev->max_alloc = LIMIT;
	ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD), -EFBIG);
	ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "more than one allocation"));
	ck_assert_int_eq(gpo_pool_stats(dev, &after), 0);
	ck_assert_uint_eq(after.used_bytes, before.used_bytes);
	/* a failed plan is not kept: with the limit back, it runs */
	dev->max_alloc = save;
	ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD), 0);
	gpo_graph_free(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tensor_arena");
	TCase *tc = tcase_create("tensor_arena");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_arena_in_blocks_gives_the_same_bytes);
	tcase_add_test(tc, test_arena_tensor_larger_than_an_allocation_is_efbig);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
