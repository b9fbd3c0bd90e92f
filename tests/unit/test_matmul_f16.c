// SPDX-License-Identifier: MIT
/*
 * test_matmul_f16.c - matrix products of f16 values on every device: the
 * engine's gpo_matmul on f16 inputs, and f32 graphs that ask for f16
 * products (gpo_graph_set_matmul_f16), forward and backward
 *
 * The reference is the float64 product of the operands rounded to f16
 * (to nearest even), which is what every kernel multiplies: the error
 * allowed is that of f32 sums, k * 2^-22 of the sum of the magnitudes of
 * the terms. Outputs are poisoned first, sizes odd and random (1, 17,
 * 129, about 1000), every transpose, batched. Then the kernel the run
 * used: matmul_coop exactly where the device lists 16x16x16 cooperative
 * matrices, and everywhere on Vulkan when GPUOPT_TEST_REQUIRE_COOPMAT=1
 * (the GPU runs set it: a lost probe fails instead of passing slower).
 * Then the errors, each refused without harm.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/gpuopt_i.h"
#include "core/dtype_i.h"

/* an m x k (or k x m) operand of @batch matrices, as f32 and f16 */
struct opnd {
	uint32_t rows, cols;
	size_t n;
	float *f;		/* the values drawn */
	uint16_t *h;		/* rounded to f16 */
	double *v;		/* the values multiplied: h as double */
};

static void opnd_new(struct opnd *o, uint32_t batch, uint32_t rows,
		     uint32_t cols, uint64_t *rng)
{
	size_t i;

	o->rows = rows;
	o->cols = cols;
	o->n = (size_t)batch * rows * cols;
	o->f = malloc(o->n * sizeof(*o->f));
	o->h = malloc(o->n * sizeof(*o->h));
	o->v = malloc(o->n * sizeof(*o->v));
	ck_assert(o->f && o->h && o->v);
	/* some values far from 1: rounding to f16 must change them */
	tu_fill(o->f, o->n, rng, -3, 3);
	for (i = 0; i < o->n; i++) {
		if (i % 7 == 3)
			o->f[i] *= 1e-3f;
		o->h[i] = gpo__f32_to_f16(o->f[i]);
		o->v[i] = gpo__f16_to_f32(o->h[i]);
	}
}

static void opnd_free(struct opnd *o)
{
	free(o->f);
	free(o->h);
	free(o->v);
}

/*
 * c[z][i][j] = sum_p op(a)[i][p] op(b)[p][j] in float64, and mag[] the
 * sum of |terms|
 */
static void ref_mm(const struct opnd *a, const struct opnd *b, int ta,
		   int tb, uint32_t batch, uint32_t m, uint32_t n, uint32_t k,
		   double *c, double *mag)
{
	uint32_t z, i, j, p;

	for (z = 0; z < batch; z++)
		for (i = 0; i < m; i++)
			for (j = 0; j < n; j++) {
				const double *az = a->v + (size_t)z * m * k;
				const double *bz = b->v + (size_t)z * k * n;
				double s = 0, g = 0;

				for (p = 0; p < k; p++) {
					double x = ta ? az[(size_t)p * m + i] :
							az[(size_t)i * k + p];
					double y = tb ? bz[(size_t)j * k + p] :
							bz[(size_t)p * n + j];

					s += x * y;
					g += fabs(x * y);
				}
				c[((size_t)z * m + i) * n + j] = s;
				mag[((size_t)z * m + i) * n + j] = g;
			}
}

/* the last call's message says @word */
static void msg_has(const char *word)
{
	ck_assert_msg(strstr(gpo_errmsg(), word), "message '%s' lacks '%s'",
		      gpo_errmsg(), word);
}

/* every element within f32 summation error of the reference */
static void check(const char *what, const float *got, const double *want,
		  const double *mag, size_t n, uint32_t k)
{
	double tol = (k + 4) * ldexp(1.0, -22);
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_msg(isfinite(got[i]) &&
			      fabs(got[i] - want[i]) <= tol * mag[i] + 1e-30,
			      "%s: [%zu] = %.9g, want %.9g (terms %.3g)",
			      what, i, got[i], want[i], mag[i]);
}

/*
 * The kernel a profiled run of @g used for its products: must be
 * matmul_coop where @dev has 16x16x16 cooperative matrices (and on every
 * Vulkan device under GPUOPT_TEST_REQUIRE_COOPMAT=1), never elsewhere
 */
static void check_kernel(struct gpo_device *dev, struct gpo_graph *g,
			 unsigned int what)
{
	const char *req = getenv("GPUOPT_TEST_REQUIRE_COOPMAT");
	const struct gpo_device_info info = dev->info;
	struct gpo_op_time t[32];
	int n, i, coop = 0, plain = 0, want;

	want = strstr(info.coopmat, "16x16x16") != NULL;
	if (req && !strcmp(req, "1") && !strcmp(info.backend, "vulkan"))
		ck_assert_msg(want, "%s: GPUOPT_TEST_REQUIRE_COOPMAT=1, but coopmat is '%s'",
			      info.id, info.coopmat);
	n = gpo_graph_profile(g, what, t, 32);
	ck_assert_msg(n > 0, "%s: profile: %s", info.id, gpo_errmsg());
	for (i = 0; i < n; i++) {
		if (!strcmp(t[i].op, "matmul_coop"))
			coop++;
		else if (!strncmp(t[i].op, "matmul", 6))
			plain++;
	}
	ck_assert_msg(want ? coop && !plain : !coop && plain,
		      "%s (coopmat %s): %d matmul_coop, %d other matmul kernels",
		      info.id, info.coopmat, coop, plain);
}

/*
 * Case @_i: op(A) op(B) for f16 inputs (loop variants: shapes, which
 * operand is f16, transposes, batch) on every device
 */
static const struct {
	uint32_t batch, m, n, k;
	int ta, tb, f16a, f16b;
} f16_cases[] = {
	{ 1, 17, 129, 1, 0, 0, 1, 1 },
	{ 1, 1, 1, 1000, 1, 0, 1, 1 },
	{ 1, 129, 17, 1003, 0, 1, 1, 1 },
	{ 3, 17, 33, 129, 1, 1, 1, 1 },
	{ 1, 1000, 129, 17, 0, 0, 1, 0 },
	{ 2, 65, 1, 200, 1, 0, 0, 1 },
	{ 1, 257, 131, 95, 1, 1, 1, 1 },
	/* multiples of 8: matmul_coop's whole-chunk vector loads */
	{ 2, 256, 136, 264, 0, 0, 1, 1 },
	{ 1, 136, 256, 200, 1, 1, 1, 1 },
	{ 1, 264, 128, 72, 1, 0, 0, 1 },
	{ 1, 128, 264, 96, 0, 1, 1, 0 },
};

START_TEST(test_matmul_f16_inputs)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t rng = tu_rng("matmul_f16_inputs");
	uint32_t batch = f16_cases[_i].batch, m = f16_cases[_i].m;
	uint32_t n = f16_cases[_i].n, k = f16_cases[_i].k;
	int ta = f16_cases[_i].ta, tb = f16_cases[_i].tb;
	int fa = f16_cases[_i].f16a, fb = f16_cases[_i].f16b;
	struct opnd a, b;
	size_t nc = (size_t)batch * m * n;
	double *want = malloc(nc * sizeof(double));
	double *mag = malloc(nc * sizeof(double));
	float *got = malloc(nc * sizeof(float));

	ck_assert(want && mag && got);
	opnd_new(&a, batch, ta ? k : m, ta ? m : k, &rng);
	opnd_new(&b, batch, tb ? n : k, tb ? k : n, &rng);
	ref_mm(&a, &b, ta, tb, batch, m, n, k, want, mag);
	for (d = 0; d < ndev; d++) {
		const char *id = tu_device_id(devs[d]);
		uint64_t sa[3] = { batch, a.rows, a.cols };
		uint64_t sb[3] = { batch, b.rows, b.cols };
		int nd = batch > 1 ? 3 : 2;
		struct gpo_tensor *x, *y, *c;
		struct gpo_graph *g;
		char what[96];

		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		x = gpo_tensor_input(g, "a", fa ? GPO_F16 : GPO_F32, nd,
				     nd == 3 ? sa : sa + 1);
		y = gpo_tensor_input(g, "b", fb ? GPO_F16 : GPO_F32, nd,
				     nd == 3 ? sb : sb + 1);
		c = gpo_matmul(g, x, y, (ta ? GPO_MATMUL_TA : 0) |
			       (tb ? GPO_MATMUL_TB : 0));
		ck_assert_msg(c != NULL, "%s: %s", id, gpo_errmsg());
		/* f32 operands as drawn: the kernel rounds them */
		ck_assert_int_eq(fa ? gpo_tensor_write(x, a.h, a.n * 2) :
				 gpo_tensor_write(x, a.f, a.n * 4), 0);
		ck_assert_int_eq(fb ? gpo_tensor_write(y, b.h, b.n * 2) :
				 gpo_tensor_write(y, b.f, b.n * 4), 0);
		tu_poison(got, nc);
		ck_assert_int_eq(gpo_tensor_write(c, got, nc * 4), 0);
		ck_assert_msg(!gpo_graph_run(g, GPO_RUN_FORWARD), "%s: %s",
			      id, gpo_errmsg());
		tu_poison(got, nc);
		ck_assert_int_eq(gpo_tensor_read(c, got, nc * 4), 0);
		snprintf(what, sizeof(what), "%s: case %d (%ux%ux%u x%u)", id,
			 _i, m, n, k, batch);
		check(what, got, want, mag, nc, k);
		check_kernel(devs[d], g, GPO_RUN_FORWARD);
		gpo_graph_free(g);
	}
	opnd_free(&a);
	opnd_free(&b);
	free(want);
	free(mag);
	free(got);
}
END_TEST

/*
 * An f32 graph asking for f16 products: y = x W^T (W a parameter),
 * loss = sum(y * r). Forward: y against the product of the rounded
 * operands; backward: dW = r^T x, whose operands (r, x) are rounded too
 * (and dy = r is what the loss hands the matmul's backward).
 */
/* how many launches of kernel @op a profiled run (@what) of @g made */
static uint64_t launches_of(struct gpo_graph *g, unsigned int what,
			   const char *op)
{
	struct gpo_op_time t[32];
	uint64_t k = 0;
	int n, i;

	n = gpo_graph_profile(g, what, t, 32);
	ck_assert_msg(n > 0, "profile: %s", gpo_errmsg());
	for (i = 0; i < n; i++)
		if (!strcmp(t[i].op, op))
			k += t[i].launches;
	return k;
}

/*
 * Case @_i: y = x w^T, dX and dW through a graph with matmul_f16; in
 * case 1 the operands are large enough for emit.c's mm_halve() to cast x
 * and w in forward (on every device), and backward takes those copies:
 * dX = dY w casts dY where its kernel reads it 4 times or more (not on
 * matmul_coop: 300 columns are 2 tiles), and dW = dY^T x takes both
 * copies. 2 casts forward, 3 in all (2 on matmul_coop); each copy not
 * taken over would be one more.
 */
static const struct {
	uint32_t rows, in, out;
} grad_cases[] = {
	{ 131, 257, 17 },
	{ 520, 300, 1030 },
};

START_TEST(test_matmul_f16_graph_grads)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t rng = tu_rng("matmul_f16_graph");
	const uint32_t rows = grad_cases[_i].rows, in = grad_cases[_i].in;
	const uint32_t out = grad_cases[_i].out;
	struct opnd x, w, r, xt, rt;
	double *y_ref = malloc(rows * out * sizeof(double));
	double *y_mag = malloc(rows * out * sizeof(double));
	double *dw_ref = malloc(out * in * sizeof(double));
	double *dw_mag = malloc(out * in * sizeof(double));
	double *dx_ref = malloc(rows * in * sizeof(double));
	double *dx_mag = malloc(rows * in * sizeof(double));
	size_t most = (size_t)rows * (in > out ? in : out);
	float *got = malloc((most > (size_t)out * in ? most :
			     (size_t)out * in) * sizeof(float));

	ck_assert(y_ref && y_mag && dw_ref && dw_mag && dx_ref && dx_mag &&
		  got);
	opnd_new(&x, 1, rows, in, &rng);
	opnd_new(&w, 1, out, in, &rng);
	opnd_new(&r, 1, rows, out, &rng);
	ref_mm(&x, &w, 0, 1, 1, rows, out, in, y_ref, y_mag);
	/* dW[o][i] = sum_b r[b][o] x[b][i]: r^T x */
	xt = x;
	rt = r;
	ref_mm(&rt, &xt, 1, 0, 1, out, in, rows, dw_ref, dw_mag);
	/* dX[b][i] = sum_o r[b][o] w[o][i]: r w */
	ref_mm(&r, &w, 0, 0, 1, rows, in, out, dx_ref, dx_mag);
	for (d = 0; d < ndev; d++) {
		const char *id = tu_device_id(devs[d]);
		uint64_t sx[2] = { rows, in }, sr[2] = { rows, out };
		uint64_t sw[2] = { out, in }, flat = (uint64_t)rows * out;
		struct gpo_tensor *tx, *tw, *tr, *y, *loss;
		struct gpo_optim *opt;
		struct gpo_graph *g;
		char what[64];

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 2, sw, 0), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "x", 2, sx, 0), 0);
		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		ck_assert_int_eq(gpo_graph_set_matmul_f16(g, 1), 0);
		tx = gpo_tensor_param(g, opt, "x");
		tr = gpo_tensor_input(g, "r", GPO_F32, 2, sr);
		tw = gpo_tensor_param(g, opt, "w");
		y = gpo_matmul(g, tx, tw, GPO_MATMUL_TB);
		loss = gpo_sum(g, gpo_reshape(g, gpo_mul(g, y, tr), 1, &flat),
			       0);
		ck_assert_msg(loss != NULL, "%s: %s", id, gpo_errmsg());
		ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "x", x.f,
						 x.n * 4), 0);
		ck_assert_int_eq(gpo_tensor_write(tr, r.f, r.n * 4), 0);
		ck_assert_int_eq(gpo_optim_write(opt, "param", "w", w.f,
						 w.n * 4), 0);
		tu_poison(got, out * in);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", "w", got,
						 w.n * 4), 0);
		tu_poison(got, rows * in);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", "x", got,
						 x.n * 4), 0);
		ck_assert_msg(!gpo_graph_run(g, GPO_RUN_FORWARD |
					     GPO_RUN_BACKWARD),
			      "%s: %s", id, gpo_errmsg());
		/* set once the graph ran: refused, nothing changes */
		ck_assert_int_eq(gpo_graph_set_matmul_f16(g, 0), -EBUSY);
		msg_has("matmul_f16");
		tu_poison(got, rows * out);
		ck_assert_int_eq(gpo_tensor_read(y, got, rows * out * 4), 0);
		snprintf(what, sizeof(what), "%s: y", id);
		check(what, got, y_ref, y_mag, rows * out, in);
		tu_poison(got, out * in);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", "w", got,
						out * in * 4), 0);
		snprintf(what, sizeof(what), "%s: dW", id);
		/* split sums and their reduction: a few roundings more */
		check(what, got, dw_ref, dw_mag, out * in, rows + 16);
		tu_poison(got, rows * in);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", "x", got,
						rows * in * 4), 0);
		snprintf(what, sizeof(what), "%s: dX", id);
		check(what, got, dx_ref, dx_mag, rows * in, out + 16);
		check_kernel(devs[d], g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD);
		if (_i == 1) {
			int coop = strstr(devs[d]->info.coopmat,
					  "16x16x16") != NULL;
			uint64_t f = launches_of(g, GPO_RUN_FORWARD, "cast");
			uint64_t all = launches_of(g, GPO_RUN_FORWARD |
						   GPO_RUN_BACKWARD, "cast");

			ck_assert_msg(f == 2 && all == 3u - coop,
				      "%s: %llu casts forward (not 2), %llu in all (not %d)",
				      id, (unsigned long long)f,
				      (unsigned long long)all, 3 - coop);
		}
		gpo_graph_free(g);
		gpo_optim_free(opt);
	}
	opnd_free(&x);
	opnd_free(&w);
	opnd_free(&r);
	free(y_ref);
	free(y_mag);
	free(dw_ref);
	free(dw_mag);
	free(dx_ref);
	free(dx_mag);
	free(got);
}
END_TEST

/* the same graph without the setting multiplies the f32 values */
START_TEST(test_matmul_f16_off_is_f32)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t rng = tu_rng("matmul_f16_off");
	uint64_t s[2] = { 3, 5 };
	float a[15], b[15], c[9];
	int i, j, p, rounded = 0;

	tu_fill(a, 15, &rng, -3, 3);
	tu_fill(b, 15, &rng, -3, 3);
	for (d = 0; d < ndev; d++) {
		struct gpo_tensor *x, *y, *t;
		struct gpo_graph *g;

		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		x = gpo_tensor_input(g, "a", GPO_F32, 2, s);
		y = gpo_tensor_input(g, "b", GPO_F32, 2, s);
		t = gpo_matmul(g, x, y, GPO_MATMUL_TB);
		ck_assert(t != NULL);
		ck_assert_int_eq(gpo_tensor_write(x, a, sizeof(a)), 0);
		ck_assert_int_eq(gpo_tensor_write(y, b, sizeof(b)), 0);
		ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD), 0);
		tu_poison(c, 9);
		ck_assert_int_eq(gpo_tensor_read(t, c, sizeof(c)), 0);
		for (i = 0; i < 3; i++)
			for (j = 0; j < 3; j++) {
				double s64 = 0, h64 = 0;

				for (p = 0; p < 5; p++) {
					s64 += (double)a[i * 5 + p] *
					       b[j * 5 + p];
					h64 += (double)gpo__f16_to_f32(
						gpo__f32_to_f16(a[i * 5 + p])) *
					       gpo__f16_to_f32(gpo__f32_to_f16(
						b[j * 5 + p]));
				}
				ck_assert_msg(fabs(c[i * 3 + j] - s64) <= 1e-5 *
					      (fabs(s64) + 1),
					      "%s: [%d][%d] %g, want %g",
					      tu_device_id(devs[d]), i, j,
					      c[i * 3 + j], s64);
				rounded += fabs(s64 - h64) > 1e-4;
			}
		gpo_graph_free(g);
	}
	/* the values drawn are ones that f16 rounding changes */
	ck_assert_int_gt(rounded, 0);
}
END_TEST

/*
 * f32 operands of an f16 product are rounded to the nearest binary16,
 * ties to even, subnormals kept, on every kernel (matmul_coop does it by
 * the hardware's conversion under float controls, the others by integer
 * code): A times an identity, and an identity times A, give A's values
 * rounded, exactly. A holds ties both ways, just past a tie, subnormal
 * ties, the tie below the least normal, the largest finite f16 and what
 * rounds down to it, values that round to zero, then random ones. k 40
 * takes matmul_coop's whole-chunk (vector) loads, k 13 its element ones.
 * (Past 65520, infinity times an identity's zeros is NaN: not here.)
 */
START_TEST(test_matmul_f16_rounding)
{
	static const float edge[] = {
		1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-23f,
		-(1.0f + 3 * 0x1p-11f), 1.5f * 0x1p-24f, 2.5f * 0x1p-24f,
		0x1p-25f, 0x1p-25f + 0x1p-48f, 3 * 0x1p-26f,
		0x1p-14f - 0x1p-25f, -(0x1p-14f - 0x1p-25f), 65504.0f,
		65519.0f, -65519.0f, 1e-10f, -1e-10f, 2049.0f, 2051.0f,
	};
	static const uint32_t ks[2] = { 40, 13 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, ki;
	uint64_t rng = tu_rng("matmul_f16_rounding");
	const uint32_t m = 37;

	for (ki = 0; ki < 2; ki++) {
		uint32_t k = ks[ki], i;
		uint64_t sa[2] = { m, k }, sk[2] = { k, k }, sm[2] = { m, m };
		size_t n = (size_t)m * k, ne = sizeof(edge) / sizeof(edge[0]);
		float *a = malloc(n * 4), *want = malloc(n * 4);
		float *c = malloc(n * 4), *ik = calloc((size_t)k * k, 4);
		float *im = calloc((size_t)m * m, 4);

		ck_assert(a && want && c && ik && im);
		tu_fill(a, n, &rng, -4, 4);
		for (i = 0; i < n && i < 2 * ne; i++)
			a[(i * 7) % n] = edge[i % ne] * (i < ne ? 1.0f : -1.0f);
		for (i = 0; i < n; i++)
			want[i] = gpo__f16_to_f32(gpo__f32_to_f16(a[i]));
		for (i = 0; i < k; i++)
			ik[i * k + i] = 1.0f;
		for (i = 0; i < m; i++)
			im[i * m + i] = 1.0f;
		for (d = 0; d < ndev; d++) {
			struct gpo_tensor *x, *x2, *id1, *id2, *c1, *c2;
			struct gpo_graph *g;
			int which;

			ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
			ck_assert_int_eq(gpo_graph_set_matmul_f16(g, 1), 0);
			x = gpo_tensor_input(g, "a", GPO_F32, 2, sa);
			x2 = gpo_tensor_input(g, "a2", GPO_F32, 2, sa);
			id1 = gpo_tensor_input(g, "ik", GPO_F32, 2, sk);
			id2 = gpo_tensor_input(g, "im", GPO_F32, 2, sm);
			c1 = gpo_matmul(g, x, id1, 0);
			c2 = gpo_matmul(g, id2, x2, 0);
			ck_assert_msg(c1 && c2, "%s", gpo_errmsg());
			ck_assert_int_eq(gpo_tensor_write(x, a, n * 4), 0);
			ck_assert_int_eq(gpo_tensor_write(x2, a, n * 4), 0);
			ck_assert_int_eq(gpo_tensor_write(id1, ik,
							  (size_t)k * k * 4), 0);
			ck_assert_int_eq(gpo_tensor_write(id2, im,
							  (size_t)m * m * 4), 0);
			ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD), 0);
			for (which = 0; which < 2; which++) {
				tu_poison(c, n);
				ck_assert_int_eq(gpo_tensor_read(which ? c2 : c1,
								 c, n * 4), 0);
				for (i = 0; i < n; i++)
					ck_assert_msg(c[i] == want[i],
						      "%s: k %u, %s: [%u] = %a from %a, want %a",
						      tu_device_id(devs[d]), k,
						      which ? "I A" : "A I", i,
						      c[i], a[i], want[i]);
			}
			check_kernel(devs[d], g, GPO_RUN_FORWARD);
			gpo_graph_free(g);
		}
		free(a);
		free(want);
		free(c);
		free(ik);
		free(im);
	}
}
END_TEST

/*
 * x w^T on @dev, x and w given as @dt (f32 with matmul_f16, or their f16
 * roundings), into @c (poisoned first); the graph, for its profile
 */
static struct gpo_graph *xw_run(struct gpo_device *dev, const struct opnd *x,
				const struct opnd *w, enum gpo_dtype dt,
				float *c)
{
	uint64_t sx[2] = { x->rows, x->cols }, sw[2] = { w->rows, w->cols };
	size_t es = dt == GPO_F16 ? 2 : 4, nc = (size_t)x->rows * w->rows;
	const void *xv = dt == GPO_F16 ? (const void *)x->h : x->f;
	const void *wv = dt == GPO_F16 ? (const void *)w->h : w->f;
	struct gpo_tensor *tx, *tw, *y;
	struct gpo_graph *g;

	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	if (dt == GPO_F32)
		ck_assert_int_eq(gpo_graph_set_matmul_f16(g, 1), 0);
	tx = gpo_tensor_input(g, "x", dt, 2, sx);
	tw = gpo_tensor_input(g, "w", dt, 2, sw);
	y = gpo_matmul(g, tx, tw, GPO_MATMUL_TB);
	ck_assert_msg(y != NULL, "%s: %s", tu_device_id(dev), gpo_errmsg());
	ck_assert_int_eq(gpo_tensor_write(tx, xv, x->n * es), 0);
	ck_assert_int_eq(gpo_tensor_write(tw, wv, w->n * es), 0);
	ck_assert_msg(!gpo_graph_run(g, GPO_RUN_FORWARD), "%s: %s",
		      tu_device_id(dev), gpo_errmsg());
	tu_poison(c, nc);
	ck_assert_int_eq(gpo_tensor_read(y, c, nc * 4), 0);
	return g;
}

/*
 * A half product of large f32 operands read several times (emit.c's
 * mm_halve()) casts them to binary16 first: the same bits as the product
 * of f16 inputs holding the rounded values, on every device, ties and
 * subnormals of binary16 among them; and within the reference
 */
START_TEST(test_matmul_f16_halved_operands)
{
	static const float edge[] = {
		1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(1.0f + 0x1p-11f),
		1.5f * 0x1p-24f, 2.5f * 0x1p-24f, 0x1p-25f, 3 * 0x1p-26f,
		0x1p-14f - 0x1p-25f, 65519.0f, 2049.0f, 2051.0f,
	};
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t rng = tu_rng("matmul_f16_halved");
	const uint32_t m = 520, n = 790, k = 260;
	size_t nc = (size_t)m * n, i;
	struct opnd x, w;
	double *ref = malloc(nc * sizeof(double));
	double *mag = malloc(nc * sizeof(double));
	float *c1 = malloc(nc * 4), *c2 = malloc(nc * 4);

	ck_assert(ref && mag && c1 && c2);
	opnd_new(&x, 1, m, k, &rng);
	opnd_new(&w, 1, n, k, &rng);
	for (i = 0; i < 2 * sizeof(edge) / sizeof(edge[0]); i++) {
		size_t e = (i * 7919) % x.n, ne = sizeof(edge) / sizeof(edge[0]);

		x.f[e] = edge[i % ne] * (i < ne ? 1.0f : -1.0f);
		x.h[e] = gpo__f32_to_f16(x.f[e]);
		x.v[e] = gpo__f16_to_f32(x.h[e]);
	}
	ref_mm(&x, &w, 0, 1, 1, m, n, k, ref, mag);
	for (d = 0; d < ndev; d++) {
		const char *id = tu_device_id(devs[d]);
		struct gpo_graph *g1, *g2;
		char what[64];

		/* f32 operands, f16 products: cast, then multiplied */
		g1 = xw_run(devs[d], &x, &w, GPO_F32, c1);
		/* the rounded values as f16 inputs: no cast */
		g2 = xw_run(devs[d], &x, &w, GPO_F16, c2);
		snprintf(what, sizeof(what), "%s: halved", id);
		check(what, c1, ref, mag, nc, k);
		for (i = 0; i < nc; i++)
			ck_assert_msg(!memcmp(&c1[i], &c2[i], 4),
				      "%s: [%zu] = %a from cast f32 operands, %a from f16 ones",
				      id, i, c1[i], c2[i]);
		ck_assert_msg(launches_of(g1, GPO_RUN_FORWARD, "cast") == 2,
			      "%s: %llu casts, not 2", id,
			      (unsigned long long)launches_of(g1,
							      GPO_RUN_FORWARD,
							      "cast"));
		ck_assert_int_eq(launches_of(g2, GPO_RUN_FORWARD, "cast"), 0);
		check_kernel(devs[d], g1, GPO_RUN_FORWARD);
		gpo_graph_free(g1);
		gpo_graph_free(g2);
	}
	opnd_free(&x);
	opnd_free(&w);
	free(ref);
	free(mag);
	free(c1);
	free(c2);
}
END_TEST

START_TEST(test_matmul_f16_errors)
{
	struct gpo_device *dev;
	struct gpo_graph *g;
	struct gpo_tensor *h, *f, *t;
	uint64_t s[2] = { 4, 6 }, s2[2] = { 6, 4 }, flat = 24;
	uint16_t hv[24];
	float fv[24];

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	ck_assert_int_eq(gpo_graph_set_matmul_f16(NULL, 1), -EINVAL);
	msg_has("NULL");
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	ck_assert_int_eq(gpo_graph_set_matmul_f16(g, 2), -EINVAL);
	msg_has("0 or 1");
	ck_assert_int_eq(gpo_graph_status(g), 0);
	h = gpo_tensor_input(g, "h", GPO_F16, 2, s);
	f = gpo_tensor_input(g, "f", GPO_F32, 2, s2);
	ck_assert(h && f);
	/* an f16 tensor's bytes are 2 an element */
	ck_assert_int_eq(gpo_tensor_write(h, fv, sizeof(fv)), -EINVAL);
	ck_assert_int_eq(gpo_tensor_write(h, hv, sizeof(hv)), 0);
	/* f16 goes to matmul alone: other ops and views refuse it */
	ck_assert(gpo_reshape(g, h, 1, &flat) == NULL);
	ck_assert_int_eq(gpo_graph_status(g), -EINVAL);
	msg_has("f16");
	gpo_graph_free(g);

	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	h = gpo_tensor_input(g, "h", GPO_F16, 2, s);
	ck_assert(gpo_exp(g, h) == NULL);
	ck_assert_int_eq(gpo_graph_status(g), -EINVAL);
	msg_has("f16");
	gpo_graph_free(g);

	/* an i32 operand */
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	h = gpo_tensor_input(g, "h", GPO_F16, 2, s);
	f = gpo_tensor_input(g, "i", GPO_I32, 2, s2);
	ck_assert(gpo_matmul(g, h, f, 0) == NULL);
	ck_assert_int_eq(gpo_graph_status(g), -EINVAL);
	msg_has("i32");
	gpo_graph_free(g);

	/* the good one still builds */
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	h = gpo_tensor_input(g, "h", GPO_F16, 2, s);
	f = gpo_tensor_input(g, "f", GPO_F32, 2, s2);
	t = gpo_matmul(g, h, f, 0);
	ck_assert(t != NULL);
	ck_assert_int_eq(gpo_graph_status(g), 0);
	gpo_graph_free(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("matmul_f16");
	TCase *tc = tcase_create("products");
	TCase *te = tcase_create("errors");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, test_matmul_f16_inputs, 0,
			    (int)(sizeof(f16_cases) / sizeof(f16_cases[0])));
	tcase_add_loop_test(tc, test_matmul_f16_graph_grads, 0,
			    (int)(sizeof(grad_cases) / sizeof(grad_cases[0])));
	tcase_add_test(tc, test_matmul_f16_off_is_f32);
	tcase_add_test(tc, test_matmul_f16_rounding);
	tcase_add_test(tc, test_matmul_f16_halved_operands);
	tcase_add_test(te, test_matmul_f16_errors);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, te);
	return tu_run(s);
}
