// SPDX-License-Identifier: MIT
/*
 * test_tensor.c - the tensor engine's forward values and reverse-mode
 * gradients on every device
 *
 * Each case builds one composite function twice: as a device graph whose
 * parameters are tensors of an SGD optimizer, and as a tape of this file's
 * own float64 reference (forward and analytic backward written here, not
 * taken from the engine). With fresh random values of odd shapes, and
 * every device tensor and gradient poisoned before the run, it checks
 *   - every forward value and every gradient (parameters' through
 *     gpo_optim_read("grad"), the others' through gpo_tensor_grad())
 *     against the reference,
 *   - a sample of parameter gradients against central differences of the
 *     loss computed on the device (where the reference itself shows a
 *     kink there, the device's differences must match the reference's),
 *   - every device's parameter gradients against cpu:0's.
 * Then the error paths: each one a build error that the graph keeps, or a
 * call refused without harm.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "core/rng_i.h"

#define MAXN		64	/* nodes of one case */
#define REF_TOL		2e-4	/* of the tensor's largest magnitude */
#define XDEV_TOL	1e-4
#define FD_EPS		1e-2
#define FD_TOL		2e-2
#define FD_SAMPLES	3	/* elements of each parameter */

enum hop {
	H_INPUT, H_PARAM, H_MATMUL, H_TRANSPOSE, H_BINARY, H_UNARY, H_SOFTMAX,
	H_REDUCE, H_XENT, H_MSE, H_ONE_HOT, H_ACCURACY, H_RESHAPE, H_PERMUTE,
	H_SLICE, H_CAUSAL, H_LAYERNORM, H_EMBED, H_DROPOUT, H_ATTN
};

enum { B_ADD, B_SUB, B_MUL, B_DIV };
enum {
	U_SCALE, U_RELU, U_GELU, U_GELU_TANH, U_TANH, U_SIGMOID, U_EXP, U_LOG,
	U_SQUARE, U_SQRT, U_COUNT
};
enum { R_SUM, R_MEAN, R_MAX };

/* a node of the float64 reference, and its device tensor */
struct hn {
	enum hop op;
	int fn, flags, axis, d0, d1;
	double alpha;
	int nd;
	uint32_t s[4];
	size_t n;
	struct hn *a, *b, *c;	/* c: a layer norm's shift, attention's v */
	int perm[4];		/* permute */
	uint64_t start;		/* slice */
	double eps;		/* layer norm */
	int view;		/* reshape, slice: the source's memory */
	uint8_t *keep;		/* dropout: the mask */
	double *aux;		/* layer norm: x normalised; per row 1 / std */
	double *rstd;
	double *v, *g;		/* value, gradient */
	int32_t *lab;		/* i32 inputs */
	int needs, reach;	/* depends on a parameter; on the loss's path */
	uint32_t classes;
	struct gpo_tensor *t;
	char name[16];
};

struct tc {
	struct gpo_device *dev;
	struct gpo_graph *g;
	struct gpo_optim *opt;
	struct hn *n[MAXN];
	int nn;
	uint64_t rng;
	uint64_t step;		/* gpo_graph_set_step() */
	uint32_t ndrop;		/* dropouts made: the next one's site */
};

/* ---- the reference ------------------------------------------------------ */

static struct hn *node(struct tc *c, enum hop op, int nd, const uint32_t *s,
		       struct hn *a, struct hn *b)
{
	struct hn *h = calloc(1, sizeof(*h));
	int i;

	ck_assert_ptr_nonnull(h);
	ck_assert_int_lt(c->nn, MAXN);
	h->op = op;
	h->nd = nd;
	h->n = 1;
	for (i = 0; i < nd; i++) {
		h->s[i] = s[i];
		h->n *= s[i];
	}
	h->a = a;
	h->b = b;
	h->needs = (a && a->needs) || (b && b->needs);
	h->v = calloc(h->n, sizeof(double));
	h->g = calloc(h->n, sizeof(double));
	ck_assert(h->v && h->g);
	snprintf(h->name, sizeof(h->name), "n%d", c->nn);
	c->n[c->nn++] = h;
	return h;
}

static void tc_free(struct tc *c)
{
	int i;

	for (i = 0; i < c->nn; i++) {
		free(c->n[i]->v);
		free(c->n[i]->g);
		free(c->n[i]->lab);
		free(c->n[i]->keep);
		free(c->n[i]->aux);
		free(c->n[i]->rstd);
		free(c->n[i]);
	}
	c->nn = 0;
	gpo_graph_free(c->g);
	gpo_optim_free(c->opt);
	c->g = NULL;
	c->opt = NULL;
}

/* 4-d padded shape and row-major strides */
static void pad4(const struct hn *h, uint32_t *s, uint64_t *st)
{
	int i, k = 4 - h->nd;

	for (i = 0; i < 4; i++)
		s[i] = i < k ? 1 : h->s[i - k];
	st[3] = 1;
	for (i = 2; i >= 0; i--)
		st[i] = st[i + 1] * s[i + 1];
}

static void coords(uint64_t i, const uint32_t *s, uint32_t *c)
{
	int d;

	for (d = 3; d >= 0; d--) {
		c[d] = i % s[d];
		i /= s[d];
	}
}

/* the index into @x of output coordinates @c, broadcasting */
static uint64_t bidx(const struct hn *x, const uint32_t *c)
{
	uint32_t s[4];
	uint64_t st[4], o = 0;
	int d;

	pad4(x, s, st);
	for (d = 0; d < 4; d++)
		if (s[d] != 1)
			o += c[d] * st[d];
	return o;
}

static double un_f(int fn, double x, double alpha)
{
	const double k = sqrt(2.0 / M_PI), c = 0.044715;

	switch (fn) {
	case U_SCALE: return alpha * x;
	case U_RELU: return x > 0 ? x : 0;
	case U_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
	case U_GELU_TANH: return 0.5 * x * (1 + tanh(k * (x + c * x * x * x)));
	case U_TANH: return tanh(x);
	case U_SIGMOID: return 1 / (1 + exp(-x));
	case U_EXP: return exp(x);
	case U_LOG: return log(x);
	case U_SQUARE: return x * x;
	case U_SQRT: return sqrt(x);
	}
	return NAN;
}

static double un_df(int fn, double x, double alpha)
{
	const double k = sqrt(2.0 / M_PI), c = 0.044715;
	double t, s;

	switch (fn) {
	case U_SCALE: return alpha;
	case U_RELU: return x > 0 ? 1 : 0;
	case U_GELU:
		return 0.5 * (1 + erf(x / sqrt(2.0))) +
		       x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
	case U_GELU_TANH:
		t = tanh(k * (x + c * x * x * x));
		return 0.5 * (1 + t) +
		       0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
	case U_TANH: t = tanh(x); return 1 - t * t;
	case U_SIGMOID: s = 1 / (1 + exp(-x)); return s * (1 - s);
	case U_EXP: return exp(x);
	case U_LOG: return 1 / x;
	case U_SQUARE: return 2 * x;
	case U_SQRT: return 0.5 / sqrt(x);
	}
	return NAN;
}

struct mmd {
	uint32_t batch, m, k, n, ar, ac, br, bc;
};

static struct mmd mm_dims(const struct hn *h)
{
	const struct hn *a = h->a, *b = h->b;
	struct mmd d;

	d.batch = a->nd == 3 ? a->s[0] : 1;
	d.ar = a->s[a->nd - 2];
	d.ac = a->s[a->nd - 1];
	d.br = b->s[b->nd - 2];
	d.bc = b->s[b->nd - 1];
	d.m = h->flags & GPO_MATMUL_TA ? d.ac : d.ar;
	d.k = h->flags & GPO_MATMUL_TA ? d.ar : d.ac;
	d.n = h->flags & GPO_MATMUL_TB ? d.br : d.bc;
	return d;
}

/* where op(a)(b, i, kk) and op(b)(b, kk, j) are stored */
static size_t ai(const struct hn *h, const struct mmd *d, uint32_t bt,
		 uint32_t i, uint32_t kk)
{
	return (size_t)bt * d->ar * d->ac + (h->flags & GPO_MATMUL_TA ?
		(size_t)kk * d->ac + i : (size_t)i * d->ac + kk);
}

static size_t bi(const struct hn *h, const struct mmd *d, uint32_t bt,
		 uint32_t kk, uint32_t j)
{
	return (size_t)bt * d->br * d->bc + (h->flags & GPO_MATMUL_TB ?
		(size_t)j * d->bc + kk : (size_t)kk * d->bc + j);
}

static void red_dims(const struct hn *h, uint64_t *outer, uint64_t *len,
		     uint64_t *inner)
{
	const struct hn *x = h->a;
	int i;

	*outer = *inner = 1;
	for (i = 0; i < h->axis; i++)
		*outer *= x->s[i];
	*len = x->s[h->axis];
	for (i = h->axis + 1; i < x->nd; i++)
		*inner *= x->s[i];
}

/* the index into @a of element @i of its permute @h */
static uint64_t perm_src(const struct hn *h, const struct hn *a, uint64_t i)
{
	uint32_t ys[4], as[4], c[4];
	uint64_t yst[4], ast[4], o = 0;
	int k = 4 - h->nd, d;

	pad4(h, ys, yst);
	pad4(a, as, ast);
	coords(i, ys, c);
	for (d = 0; d < h->nd; d++)
		o += c[d + k] * ast[h->perm[d] + k];
	return o;
}

/* dropout's draw for element @i (ew.h): keep when it is >= @thresh */
static int keep_ref(uint64_t seed, uint64_t step, uint32_t site, uint64_t i,
		    uint32_t thresh)
{
	uint32_t w[4];

	gpo__philox(seed, GPO_RNG_STREAM(GPO_RNG_DROPOUT, step),
		    (uint64_t)site << 32 | i >> 2, w);
	return w[i & 3] >= thresh;
}

static uint32_t thresh_of(double p)
{
	return (uint32_t)fmin(floor(p * 4294967296.0 + 0.5), 4294967295.0);
}

static void ln_forward(struct hn *h)
{
	const struct hn *x = h->a, *w = h->b, *b = h->c;
	uint64_t len = x->s[x->nd - 1], r, j;

	for (r = 0; r < x->n / len; r++) {
		const double *xr = x->v + r * len;
		double m = 0, var = 0;

		for (j = 0; j < len; j++)
			m += xr[j];
		m /= len;
		for (j = 0; j < len; j++)
			var += (xr[j] - m) * (xr[j] - m);
		var /= len;
		h->rstd[r] = 1 / sqrt(var + h->eps);
		for (j = 0; j < len; j++) {
			double xh = (xr[j] - m) * h->rstd[r];

			h->aux[r * len + j] = xh;
			h->v[r * len + j] = xh * (w ? w->v[j] : 1) +
					    (b ? b->v[j] : 0);
		}
	}
}

static void ln_backward(struct hn *h)
{
	struct hn *x = h->a, *w = h->b, *b = h->c;
	uint64_t len = x->s[x->nd - 1], r, j;

	for (r = 0; r < x->n / len; r++) {
		const double *dy = h->g + r * len, *xh = h->aux + r * len;
		double m1 = 0, m2 = 0;

		for (j = 0; j < len; j++) {
			double d = dy[j] * (w ? w->v[j] : 1);

			m1 += d;
			m2 += d * xh[j];
			if (w)
				w->g[j] += dy[j] * xh[j];
			if (b)
				b->g[j] += dy[j];
		}
		m1 /= len;
		m2 /= len;
		for (j = 0; j < len; j++)
			x->g[r * len + j] += h->rstd[r] *
				(dy[j] * (w ? w->v[j] : 1) - m1 - xh[j] * m2);
	}
}

/*
 * causal attention of q (a), k (b), v (c) [BH, T, hd]: the weights p of
 * row i of matrix z into @p (T of them, 0 past i)
 */
static void attn_p(const struct hn *h, uint32_t z, uint32_t i, double *p)
{
	const uint32_t T = h->s[1], hd = h->s[2];
	const double *q = h->a->v + ((uint64_t)z * T + i) * hd;
	const double *k = h->b->v + (uint64_t)z * T * hd;
	double m = -INFINITY, sum = 0;
	uint32_t j, e;

	for (j = 0; j < T; j++) {
		p[j] = 0;
		for (e = 0; e < hd && j <= i; e++)
			p[j] += q[e] * k[(uint64_t)j * hd + e];
		p[j] *= h->alpha;
		if (j <= i)
			m = fmax(m, p[j]);
	}
	for (j = 0; j <= i; j++)
		sum += exp(p[j] - m);
	for (j = 0; j < T; j++)
		p[j] = j <= i ? exp(p[j] - m) / sum : 0;
}

static void attn_forward(struct hn *h)
{
	const uint32_t T = h->s[1], hd = h->s[2];
	double *p = calloc(T, sizeof(double));
	uint32_t z, i, j, e;

	ck_assert_ptr_nonnull(p);
	for (z = 0; z < h->s[0]; z++)
		for (i = 0; i < T; i++) {
			double *y = h->v + ((uint64_t)z * T + i) * hd;

			attn_p(h, z, i, p);
			for (e = 0; e < hd; e++) {
				y[e] = 0;
				for (j = 0; j <= i; j++)
					y[e] += p[j] * h->c->v[((uint64_t)z * T +
								j) * hd + e];
			}
		}
	free(p);
}

/* dv = P^T dy, dS = P (dy v^T - rowsum(P (dy v^T))), dq = a dS k, dk = a dS^T q */
static void attn_backward(struct hn *h)
{
	const uint32_t T = h->s[1], hd = h->s[2];
	double *p = calloc(T, sizeof(double)), *dp = calloc(T, sizeof(double));
	uint32_t z, i, j, e;

	ck_assert(p && dp);
	for (z = 0; z < h->s[0]; z++)
		for (i = 0; i < T; i++) {
			const uint64_t base = (uint64_t)z * T * hd;
			const double *dy = h->g + base + (uint64_t)i * hd;
			double s = 0;

			attn_p(h, z, i, p);
			for (j = 0; j <= i; j++) {
				dp[j] = 0;
				for (e = 0; e < hd; e++)
					dp[j] += dy[e] *
						 h->c->v[base + (uint64_t)j * hd + e];
				s += p[j] * dp[j];
			}
			for (j = 0; j <= i; j++) {
				double ds = h->alpha * p[j] * (dp[j] - s);

				for (e = 0; e < hd; e++) {
					uint64_t ie = base + (uint64_t)i * hd + e;
					uint64_t je = base + (uint64_t)j * hd + e;

					h->a->g[ie] += ds * h->b->v[je];
					h->b->g[je] += ds * h->a->v[ie];
					h->c->g[je] += p[j] * dy[e];
				}
			}
		}
	free(p);
	free(dp);
}

static void h_forward(struct hn *h)
{
	struct hn *a = h->a, *b = h->b;
	uint32_t ys[4], c[4], cx[4], tmp;
	uint64_t yst[4], o, r, in, outer, len, inner;
	size_t i;

	switch (h->op) {
	case H_INPUT:
	case H_PARAM:
		return;
	case H_MATMUL: {
		struct mmd d = mm_dims(h);
		uint32_t bt, ii, j, kk;

		for (bt = 0; bt < d.batch; bt++)
			for (ii = 0; ii < d.m; ii++)
				for (j = 0; j < d.n; j++) {
					double s = 0;

					for (kk = 0; kk < d.k; kk++)
						s += a->v[ai(h, &d, bt, ii, kk)] *
						     b->v[bi(h, &d, bt, kk, j)];
					h->v[((size_t)bt * d.m + ii) * d.n + j] = s;
				}
		return;
	}
	case H_TRANSPOSE: {
		int k = 4 - h->nd;

		pad4(h, ys, yst);
		for (i = 0; i < h->n; i++) {
			coords(i, ys, c);
			memcpy(cx, c, sizeof(cx));
			tmp = cx[h->d0 + k];
			cx[h->d0 + k] = cx[h->d1 + k];
			cx[h->d1 + k] = tmp;
			h->v[i] = a->v[bidx(a, cx)];
		}
		return;
	}
	case H_BINARY:
		pad4(h, ys, yst);
		for (i = 0; i < h->n; i++) {
			double x, y;

			coords(i, ys, c);
			x = a->v[bidx(a, c)];
			y = b->v[bidx(b, c)];
			h->v[i] = h->fn == B_ADD ? x + y : h->fn == B_SUB ?
				  x - y : h->fn == B_MUL ? x * y : x / y;
		}
		return;
	case H_UNARY:
		for (i = 0; i < h->n; i++)
			h->v[i] = un_f(h->fn, a->v[i], h->alpha);
		return;
	case H_SOFTMAX:
		len = a->s[a->nd - 1];
		for (r = 0; r < a->n / len; r++) {
			const double *x = a->v + r * len;
			double m = -INFINITY, s = 0;

			for (o = 0; o < len; o++)
				m = fmax(m, x[o]);
			for (o = 0; o < len; o++)
				s += exp(x[o] - m);
			for (o = 0; o < len; o++)
				h->v[r * len + o] = h->fn ? x[o] - m - log(s) :
					exp(x[o] - m) / s;
		}
		return;
	case H_REDUCE:
		red_dims(h, &outer, &len, &inner);
		for (o = 0; o < outer; o++)
			for (in = 0; in < inner; in++) {
				double s = h->fn == R_MAX ? -INFINITY : 0;

				for (r = 0; r < len; r++) {
					double x = a->v[(o * len + r) * inner + in];

					s = h->fn == R_MAX ? fmax(s, x) : s + x;
				}
				h->v[o * inner + in] = h->fn == R_MEAN ?
						       s / len : s;
			}
		return;
	case H_XENT:
	case H_ACCURACY:
		len = a->s[1];
		h->v[0] = 0;
		for (r = 0; r < a->s[0]; r++) {
			const double *x = a->v + r * len;
			double m = -INFINITY, s = 0;
			uint64_t am = 0;

			for (o = 0; o < len; o++)
				if (x[o] > m) {
					m = x[o];
					am = o;
				}
			for (o = 0; o < len; o++)
				s += exp(x[o] - m);
			if (h->op == H_XENT)
				h->v[0] += -(x[b->lab[r]] - m - log(s));
			else
				h->v[0] += am == (uint64_t)b->lab[r];
		}
		h->v[0] /= a->s[0];
		return;
	case H_MSE:
		h->v[0] = 0;
		for (i = 0; i < a->n; i++)
			h->v[0] += (a->v[i] - b->v[i]) * (a->v[i] - b->v[i]);
		h->v[0] /= a->n;
		return;
	case H_ONE_HOT:
		for (i = 0; i < h->n; i++)
			h->v[i] = (uint32_t)a->lab[i / h->classes] ==
				  i % h->classes;
		return;
	case H_RESHAPE:
		memcpy(h->v, a->v, h->n * sizeof(double));
		return;
	case H_SLICE:
		memcpy(h->v, a->v + h->start * (a->n / a->s[0]),
		       h->n * sizeof(double));
		return;
	case H_PERMUTE:
		for (i = 0; i < h->n; i++)
			h->v[i] = a->v[perm_src(h, a, i)];
		return;
	case H_CAUSAL:
		len = a->s[a->nd - 1];
		for (r = 0; r < a->n / len; r++) {
			const double *x = a->v + r * len;
			double m = -INFINITY, s = 0;
			uint64_t row = r % len;

			for (o = 0; o <= row; o++)
				m = fmax(m, h->alpha * x[o]);
			for (o = 0; o <= row; o++)
				s += exp(h->alpha * x[o] - m);
			for (o = 0; o < len; o++)
				h->v[r * len + o] = o <= row ?
					exp(h->alpha * x[o] - m) / s : 0;
		}
		return;
	case H_LAYERNORM:
		ln_forward(h);
		return;
	case H_EMBED:
		len = a->s[1];
		for (r = 0; r < b->n; r++)
			for (o = 0; o < len; o++)
				h->v[r * len + o] = b->lab[r] >= 0 &&
					(uint32_t)b->lab[r] < a->s[0] ?
					a->v[(uint64_t)b->lab[r] * len + o] : 0;
		return;
	case H_DROPOUT:
		for (i = 0; i < h->n; i++)
			h->v[i] = h->keep[i] ? h->alpha * a->v[i] : 0;
		return;
	case H_ATTN:
		attn_forward(h);
		return;
	}
}

/* add @h's gradient contributions to its inputs' */
static void h_backward(struct hn *h)
{
	struct hn *a = h->a, *b = h->b;
	uint32_t ys[4], c[4], cx[4], tmp;
	uint64_t yst[4], o, r, in, outer, len, inner;
	size_t i;

	switch (h->op) {
	case H_MATMUL: {
		struct mmd d = mm_dims(h);
		uint32_t bt, ii, j, kk;

		for (bt = 0; bt < d.batch; bt++)
			for (ii = 0; ii < d.m; ii++)
				for (j = 0; j < d.n; j++) {
					double dc = h->g[((size_t)bt * d.m + ii) *
							 d.n + j];

					for (kk = 0; kk < d.k; kk++) {
						size_t x = ai(h, &d, bt, ii, kk);
						size_t y = bi(h, &d, bt, kk, j);

						a->g[x] += dc * b->v[y];
						b->g[y] += dc * a->v[x];
					}
				}
		return;
	}
	case H_TRANSPOSE: {
		int k = 4 - h->nd;

		pad4(h, ys, yst);
		for (i = 0; i < h->n; i++) {
			coords(i, ys, c);
			memcpy(cx, c, sizeof(cx));
			tmp = cx[h->d0 + k];
			cx[h->d0 + k] = cx[h->d1 + k];
			cx[h->d1 + k] = tmp;
			a->g[bidx(a, cx)] += h->g[i];
		}
		return;
	}
	case H_BINARY:
		pad4(h, ys, yst);
		for (i = 0; i < h->n; i++) {
			uint64_t ia, ib;
			double x, y, dy = h->g[i];

			coords(i, ys, c);
			ia = bidx(a, c);
			ib = bidx(b, c);
			x = a->v[ia];
			y = b->v[ib];
			switch (h->fn) {
			case B_ADD: a->g[ia] += dy; b->g[ib] += dy; break;
			case B_SUB: a->g[ia] += dy; b->g[ib] -= dy; break;
			case B_MUL: a->g[ia] += dy * y; b->g[ib] += dy * x; break;
			case B_DIV:
				a->g[ia] += dy / y;
				b->g[ib] -= dy * x / (y * y);
				break;
			}
		}
		return;
	case H_UNARY:
		for (i = 0; i < h->n; i++)
			a->g[i] += h->g[i] * un_df(h->fn, a->v[i], h->alpha);
		return;
	case H_SOFTMAX:
		len = a->s[a->nd - 1];
		for (r = 0; r < a->n / len; r++) {
			const double *y = h->v + r * len, *dy = h->g + r * len;
			double s = 0;

			if (h->fn) {	/* dx = dy - softmax * sum(dy) */
				for (o = 0; o < len; o++)
					s += dy[o];
				for (o = 0; o < len; o++)
					a->g[r * len + o] += dy[o] - exp(y[o]) * s;
			} else {	/* dx = y (dy - sum(dy y)) */
				for (o = 0; o < len; o++)
					s += dy[o] * y[o];
				for (o = 0; o < len; o++)
					a->g[r * len + o] += y[o] * (dy[o] - s);
			}
		}
		return;
	case H_REDUCE:
		red_dims(h, &outer, &len, &inner);
		for (o = 0; o < outer; o++)
			for (in = 0; in < inner; in++) {
				double dy = h->g[o * inner + in];
				uint64_t first = 0;

				if (h->fn != R_MAX) {
					for (r = 0; r < len; r++)
						a->g[(o * len + r) * inner + in] +=
							h->fn == R_MEAN ? dy / len : dy;
					continue;
				}
				for (r = 1; r < len; r++)
					if (a->v[(o * len + r) * inner + in] >
					    a->v[(o * len + first) * inner + in])
						first = r;
				a->g[(o * len + first) * inner + in] += dy;
			}
		return;
	case H_XENT:
		len = a->s[1];
		for (r = 0; r < a->s[0]; r++) {
			const double *x = a->v + r * len;
			double m = -INFINITY, s = 0;

			for (o = 0; o < len; o++)
				m = fmax(m, x[o]);
			for (o = 0; o < len; o++)
				s += exp(x[o] - m);
			for (o = 0; o < len; o++)
				a->g[r * len + o] += h->g[0] / a->s[0] *
					(exp(x[o] - m) / s -
					 (o == (uint64_t)b->lab[r]));
		}
		return;
	case H_MSE:
		for (i = 0; i < a->n; i++) {
			double d = 2 * (a->v[i] - b->v[i]) / a->n * h->g[0];

			a->g[i] += d;
			b->g[i] -= d;
		}
		return;
	case H_RESHAPE:
		for (i = 0; i < h->n; i++)
			a->g[i] += h->g[i];
		return;
	case H_SLICE:
		for (i = 0; i < h->n; i++)
			a->g[h->start * (a->n / a->s[0]) + i] += h->g[i];
		return;
	case H_PERMUTE:
		for (i = 0; i < h->n; i++)
			a->g[perm_src(h, a, i)] += h->g[i];
		return;
	case H_CAUSAL:
		len = a->s[a->nd - 1];
		for (r = 0; r < a->n / len; r++) {
			const double *y = h->v + r * len, *dy = h->g + r * len;
			double s = 0;

			for (o = 0; o < len; o++)
				s += dy[o] * y[o];
			for (o = 0; o < len; o++)
				a->g[r * len + o] += h->alpha * y[o] *
						     (dy[o] - s);
		}
		return;
	case H_LAYERNORM:
		ln_backward(h);
		return;
	case H_EMBED:
		len = a->s[1];
		for (r = 0; r < b->n; r++)
			for (o = 0; o < len && b->lab[r] >= 0 &&
			     (uint32_t)b->lab[r] < a->s[0]; o++)
				a->g[(uint64_t)b->lab[r] * len + o] +=
					h->g[r * len + o];
		return;
	case H_DROPOUT:
		for (i = 0; i < h->n; i++)
			a->g[i] += h->keep[i] ? h->alpha * h->g[i] : 0;
		return;
	case H_ATTN:
		attn_backward(h);
		return;
	default:
		return;
	}
}

static void h_run(struct tc *c, struct hn *loss, int grads)
{
	int i;

	for (i = 0; i < c->nn; i++)
		h_forward(c->n[i]);
	if (!grads)
		return;
	for (i = 0; i < c->nn; i++)
		memset(c->n[i]->g, 0, c->n[i]->n * sizeof(double));
	loss->g[0] = 1;
	for (i = c->nn - 1; i >= 0; i--)
		if (c->n[i]->reach)
			h_backward(c->n[i]);
}

/* ---- building both ------------------------------------------------------ */

static void got(struct tc *c, struct hn *h, struct gpo_tensor *t)
{
	ck_assert_msg(t != NULL, "%s: building %s: %s", tu_device_id(c->dev),
		      h->name, gpo_errmsg());
	h->t = t;
}

static struct hn *P(struct tc *c, int nd, const uint32_t *s, double lo,
		    double hi)
{
	struct hn *h = node(c, H_PARAM, nd, s, NULL, NULL);
	uint64_t s64[4];
	size_t i;
	int k;

	h->needs = 1;
	snprintf(h->name, sizeof(h->name), "p%d", c->nn - 1);
	for (k = 0; k < nd; k++)
		s64[k] = s[k];
	ck_assert_int_ge(gpo_optim_add_tensor(c->opt, h->name, nd, s64, 0), 0);
	for (i = 0; i < h->n; i++)
		h->v[i] = (float)tu_rand(&c->rng, lo, hi);
	got(c, h, gpo_tensor_param(c->g, c->opt, h->name));
	return h;
}

static struct hn *IN(struct tc *c, int nd, const uint32_t *s, double lo,
		     double hi)
{
	struct hn *h = node(c, H_INPUT, nd, s, NULL, NULL);
	uint64_t s64[4];
	size_t i;
	int k;

	for (k = 0; k < nd; k++)
		s64[k] = s[k];
	for (i = 0; i < h->n; i++)
		h->v[i] = (float)tu_rand(&c->rng, lo, hi);
	got(c, h, gpo_tensor_input(c->g, h->name, GPO_F32, nd, s64));
	return h;
}

static struct hn *LABELS(struct tc *c, uint32_t rows, uint32_t classes)
{
	struct hn *h = node(c, H_INPUT, 1, &rows, NULL, NULL);
	uint64_t s64 = rows;
	uint32_t i;

	h->lab = calloc(rows, sizeof(int32_t));
	ck_assert_ptr_nonnull(h->lab);
	for (i = 0; i < rows; i++)
		h->lab[i] = (int32_t)(tu_rand(&c->rng, 0, classes));
	got(c, h, gpo_tensor_input(c->g, h->name, GPO_I32, 1, &s64));
	return h;
}

static struct hn *MATMUL(struct tc *c, struct hn *a, struct hn *b,
			 unsigned int flags)
{
	struct hn tmp = { .a = a, .b = b, .flags = (int)flags }, *h;
	struct mmd d = mm_dims(&tmp);
	uint32_t s[3] = { d.batch, d.m, d.n };

	h = node(c, H_MATMUL, a->nd, a->nd == 3 ? s : s + 1, a, b);
	h->flags = (int)flags;
	got(c, h, gpo_matmul(c->g, a->t, b->t, flags));
	return h;
}

static struct hn *TRANSPOSE(struct tc *c, struct hn *x, int d0, int d1)
{
	uint32_t s[4], t;
	struct hn *h;
	int e0 = d0 < 0 ? d0 + x->nd : d0, e1 = d1 < 0 ? d1 + x->nd : d1;

	memcpy(s, x->s, sizeof(s));
	t = s[e0];
	s[e0] = s[e1];
	s[e1] = t;
	h = node(c, H_TRANSPOSE, x->nd, s, x, NULL);
	h->d0 = e0;
	h->d1 = e1;
	got(c, h, gpo_transpose(c->g, x->t, d0, d1));
	return h;
}

static struct hn *BIN(struct tc *c, int fn, struct hn *a, struct hn *b)
{
	static struct gpo_tensor *(*const f[])(struct gpo_graph *,
		struct gpo_tensor *, struct gpo_tensor *) = {
		gpo_add, gpo_sub, gpo_mul, gpo_div
	};
	int nd = a->nd > b->nd ? a->nd : b->nd, i;
	uint32_t s[4];
	struct hn *h;

	for (i = 0; i < nd; i++) {
		int ia = i - (nd - a->nd), ib = i - (nd - b->nd);
		uint32_t sa = ia >= 0 ? a->s[ia] : 1, sb = ib >= 0 ? b->s[ib] : 1;

		s[i] = sa > sb ? sa : sb;
	}
	h = node(c, H_BINARY, nd, s, a, b);
	h->fn = fn;
	got(c, h, f[fn](c->g, a->t, b->t));
	return h;
}

static struct hn *UN(struct tc *c, int fn, struct hn *x, double alpha)
{
	static struct gpo_tensor *(*const f[U_COUNT])(struct gpo_graph *,
		struct gpo_tensor *) = {
		NULL, gpo_relu, gpo_gelu, gpo_gelu_tanh, gpo_tanh, gpo_sigmoid,
		gpo_exp, gpo_log, gpo_square, gpo_sqrt
	};
	struct hn *h = node(c, H_UNARY, x->nd, x->s, x, NULL);

	h->fn = fn;
	h->alpha = fn == U_SCALE ? alpha : 1.0;
	got(c, h, fn == U_SCALE ? gpo_scale(c->g, x->t, alpha) :
				  f[fn](c->g, x->t));
	return h;
}

static struct hn *SOFTMAX(struct tc *c, struct hn *x, int log_sm)
{
	struct hn *h = node(c, H_SOFTMAX, x->nd, x->s, x, NULL);

	h->fn = log_sm;
	got(c, h, log_sm ? gpo_log_softmax(c->g, x->t) :
			   gpo_softmax(c->g, x->t));
	return h;
}

static struct hn *RED(struct tc *c, int fn, struct hn *x, int axis)
{
	uint32_t s[4];
	int nd = 0, i, e = axis < 0 ? axis + x->nd : axis;
	struct hn *h;

	for (i = 0; i < x->nd; i++)
		if (i != e)
			s[nd++] = x->s[i];
	if (!nd)
		s[nd++] = 1;
	h = node(c, H_REDUCE, nd, s, x, NULL);
	h->fn = fn;
	h->axis = e;
	got(c, h, fn == R_SUM ? gpo_sum(c->g, x->t, axis) :
		  fn == R_MEAN ? gpo_mean(c->g, x->t, axis) :
		  gpo_max(c->g, x->t, axis));
	return h;
}

static struct hn *XENT(struct tc *c, struct hn *x, struct hn *lab, int acc)
{
	uint32_t one = 1;
	struct hn *h = node(c, acc ? H_ACCURACY : H_XENT, 1, &one, x, lab);

	if (acc)
		h->needs = 0;
	got(c, h, acc ? gpo_accuracy(c->g, x->t, lab->t) :
			gpo_cross_entropy(c->g, x->t, lab->t));
	return h;
}

static struct hn *MSE(struct tc *c, struct hn *a, struct hn *b)
{
	uint32_t one = 1;
	struct hn *h = node(c, H_MSE, 1, &one, a, b);

	got(c, h, gpo_mse(c->g, a->t, b->t));
	return h;
}

static struct hn *ONE_HOT(struct tc *c, struct hn *lab, uint32_t classes)
{
	uint32_t s[2] = { lab->s[0], classes };
	struct hn *h = node(c, H_ONE_HOT, 2, s, lab, NULL);

	h->needs = 0;
	h->classes = classes;
	got(c, h, gpo_one_hot(c->g, lab->t, classes));
	return h;
}

static struct hn *RESHAPE(struct tc *c, struct hn *x, int nd,
			  const uint32_t *s)
{
	struct hn *h = node(c, H_RESHAPE, nd, s, x, NULL);
	uint64_t s64[4];
	int k;

	for (k = 0; k < nd; k++)
		s64[k] = s[k];
	h->view = 1;
	got(c, h, gpo_reshape(c->g, x->t, nd, s64));
	return h;
}

/* @perm as torch's: negative numbers count from the end */
static struct hn *PERMUTE(struct tc *c, struct hn *x, const int *perm)
{
	uint32_t s[4];
	struct hn *h;
	int e[4], k;

	for (k = 0; k < x->nd; k++) {
		e[k] = perm[k] < 0 ? perm[k] + x->nd : perm[k];
		s[k] = x->s[e[k]];
	}
	h = node(c, H_PERMUTE, x->nd, s, x, NULL);
	memcpy(h->perm, e, sizeof(e));
	got(c, h, gpo_permute(c->g, x->t, perm));
	return h;
}

static struct hn *SLICE(struct tc *c, struct hn *x, uint32_t start,
			uint32_t len)
{
	uint32_t s[4];
	struct hn *h;

	memcpy(s, x->s, sizeof(s));
	s[0] = len;
	h = node(c, H_SLICE, x->nd, s, x, NULL);
	h->start = start;
	h->view = 1;
	got(c, h, gpo_slice(c->g, x->t, start, len));
	return h;
}

static struct hn *CAUSAL(struct tc *c, struct hn *x, double scale)
{
	struct hn *h = node(c, H_CAUSAL, x->nd, x->s, x, NULL);

	h->alpha = scale;
	got(c, h, gpo_causal_softmax(c->g, x->t, scale));
	return h;
}

static struct hn *ATTN(struct tc *c, struct hn *q, struct hn *k,
			struct hn *v, double scale)
{
	struct hn *h = node(c, H_ATTN, q->nd, q->s, q, k);

	h->c = v;
	h->needs |= v->needs;
	h->alpha = scale;
	got(c, h, gpo_causal_attention(c->g, q->t, k->t, v->t, scale));
	return h;
}

/* gpo_layer_norm(x, w, b) as one node: @w and @b may be NULL */
static struct hn *LAYERNORM(struct tc *c, struct hn *x, struct hn *w,
			    struct hn *b, double eps)
{
	struct hn *h = node(c, H_LAYERNORM, x->nd, x->s, x, w);

	h->c = b;
	h->needs |= b && b->needs;
	h->eps = eps;
	h->aux = calloc(h->n, sizeof(double));
	h->rstd = calloc(h->n / x->s[x->nd - 1], sizeof(double));
	ck_assert(h->aux && h->rstd);
	got(c, h, gpo_layer_norm(c->g, x->t, w ? w->t : NULL,
				 b ? b->t : NULL, eps));
	return h;
}

/* i32 indices of shape @s into a table of @rows, one in 8 out of range */
static struct hn *IDX(struct tc *c, int nd, const uint32_t *s, uint32_t rows)
{
	struct hn *h = node(c, H_INPUT, nd, s, NULL, NULL);
	uint64_t s64[4];
	size_t i;
	int k;

	for (k = 0; k < nd; k++)
		s64[k] = s[k];
	h->lab = calloc(h->n, sizeof(int32_t));
	ck_assert_ptr_nonnull(h->lab);
	for (i = 0; i < h->n; i++)
		h->lab[i] = (int32_t)tu_rand(&c->rng, -(double)rows / 8,
					     rows + (double)rows / 8);
	got(c, h, gpo_tensor_input(c->g, h->name, GPO_I32, nd, s64));
	return h;
}

static struct hn *EMBED(struct tc *c, struct hn *tab, struct hn *idx)
{
	uint32_t s[4];
	struct hn *h;

	memcpy(s, idx->s, sizeof(s));
	s[idx->nd] = tab->s[1];
	h = node(c, H_EMBED, idx->nd + 1, s, tab, idx);
	got(c, h, gpo_embedding(c->g, tab->t, idx->t));
	return h;
}

/* its mask drawn here, for the step the case runs at (c->step) */
static struct hn *DROPOUT(struct tc *c, struct hn *x, double p,
			  uint64_t seed)
{
	struct hn *h = node(c, H_DROPOUT, x->nd, x->s, x, NULL);
	uint32_t site = c->ndrop++;
	size_t i;

	h->alpha = 1 / (1 - p);
	h->keep = calloc(h->n, 1);
	ck_assert_ptr_nonnull(h->keep);
	for (i = 0; i < h->n; i++)
		h->keep[i] = keep_ref(seed, c->step, site, i, thresh_of(p));
	got(c, h, gpo_dropout(c->g, x->t, p, seed));
	return h;
}

/*
 * a scalar loss of @y with gradients that differ from element to element:
 * the sum of y * r over all of it, r random, reduced with gpo_sum and
 * gpo_mean over one axis at a time
 */
static struct hn *lin_loss(struct tc *c, struct hn *y)
{
	struct hn *z = BIN(c, B_MUL, y, IN(c, y->nd, y->s, -1, 1));
	int k = 0;

	for (; z->nd > 1; k++)
		z = RED(c, k & 1 ? R_MEAN : R_SUM, z, k & 1 ? 0 : -1);
	return RED(c, R_SUM, z, 0);
}

/* ---- running and checking ------------------------------------------------ */

static double terms(const struct hn *h);

/* the largest of |@h| and of its terms */
static double magnitude(const struct hn *h)
{
	double m = terms(h);
	size_t i;

	for (i = 0; i < h->n; i++)
		m = fmax(m, fabs(h->v[i]));
	return m;
}

/*
 * the size of the terms behind @h's values, which may cancel to a small
 * result: for a reduction the mean over its outputs of sum |input|, for a
 * sum or difference |a| + |b|; an input counts at least its own terms (its
 * error is of their size, not of its value's)
 */
static double terms(const struct hn *h)
{
	double sum = 0, below;
	size_t i;

	if (h->op == H_BINARY && (h->fn == B_ADD || h->fn == B_SUB))
		return magnitude(h->a) + magnitude(h->b);
	if (h->op != H_REDUCE)
		return 0;
	below = terms(h->a);
	for (i = 0; i < h->a->n; i++)
		sum += fmax(fabs(h->a->v[i]), below);
	return sum / (double)h->n;
}

/*
 * @got within @tol of the largest |@want|, or of @floor when that is
 * larger: a sum's terms, which may cancel to a small result
 */
static void check_vals(const char *dev, const char *what, const char *name,
		       const float *got, const double *want, size_t n,
		       double tol, double floor)
{
	double scale = floor > 1e-30 ? floor : 1e-30, worst = 0;
	size_t i, wi = 0;

	for (i = 0; i < n; i++)
		scale = fmax(scale, fabs(want[i]));
	for (i = 0; i < n; i++) {
		double e = fabs((double)got[i] - want[i]);

		if (!(e <= worst)) {	/* NaN is the worst */
			worst = isnan(e) ? INFINITY : e;
			wi = i;
		}
	}
	ck_assert_msg(worst <= tol * scale,
		      "%s: %s of %s: [%zu] = %.9g, want %.9g (error %.3g of scale %.3g)",
		      dev, what, name, wi, got[wi], want[wi], worst / scale,
		      scale);
}

static float *poisoned(size_t n)
{
	float *f = malloc(n * sizeof(float));

	ck_assert_ptr_nonnull(f);
	tu_poison(f, n);
	return f;
}

static void write_param(struct tc *c, struct hn *h, const double *v)
{
	float *f = malloc(h->n * sizeof(float));
	size_t i;

	ck_assert_ptr_nonnull(f);
	for (i = 0; i < h->n; i++)
		f[i] = (float)v[i];
	ck_assert_int_eq(gpo_optim_write(c->opt, "param", h->name, f,
					 h->n * sizeof(float)), 0);
	free(f);
}

static double dev_loss(struct tc *c, struct hn *loss)
{
	float l = NAN;

	ck_assert_int_eq(gpo_graph_run(c->g, GPO_RUN_FORWARD), 0);
	ck_assert_int_eq(gpo_tensor_read(loss->t, &l, sizeof(l)), 0);
	return l;
}

/* central differences of the loss against the gradient, on a sample */
static void check_fd(struct tc *c, struct hn *loss, const char *dev)
{
	int i, k;

	for (i = 0; i < c->nn; i++) {
		struct hn *p = c->n[i];
		double gs = 1e-30;
		float *gd;
		size_t j;

		if (p->op != H_PARAM)
			continue;
		gd = poisoned(p->n);
		ck_assert_int_eq(gpo_optim_read(c->opt, "grad", p->name, gd,
						p->n * sizeof(float)), 0);
		for (j = 0; j < p->n; j++)
			gs = fmax(gs, fabs(p->g[j]));
		for (k = 0; k < FD_SAMPLES && k < (int)p->n; k++) {
			size_t e = (size_t)tu_rand(&c->rng, 0, p->n);
			double x = p->v[e], hp = (float)(x + FD_EPS);
			double hm = (float)(x - FD_EPS), lp, lm, fd, hfd, tol;

			/* an element an op never reads (causal's NaN) */
			if (isnan(x)) {
				ck_assert_msg(gd[e] == 0 && p->g[e] == 0,
					      "%s: d loss / d %s[%zu] (NaN, unread) is %g",
					      dev, p->name, e, gd[e]);
				continue;
			}
			p->v[e] = hp;
			write_param(c, p, p->v);
			lp = dev_loss(c, loss);
			h_run(c, loss, 0);
			hfd = loss->v[0];
			p->v[e] = hm;
			write_param(c, p, p->v);
			lm = dev_loss(c, loss);
			h_run(c, loss, 0);
			hfd = (hfd - loss->v[0]) / (hp - hm);
			p->v[e] = x;
			write_param(c, p, p->v);
			h_run(c, loss, 0);
			fd = (lp - lm) / (hp - hm);
			/* the float32 loss's rounding, divided by 2 eps */
			tol = FD_TOL * gs + 4e-7 * (1 + fabs(lp)) / (hp - hm);
			if (fabs(fd - gd[e]) <= tol)
				continue;
			/* a kink (relu at 0, a tie of max) the reference sees */
			ck_assert_msg(fabs(hfd - p->g[e]) > tol &&
				      fabs(fd - hfd) <= tol,
				      "%s: d loss / d %s[%zu]: differences %.6g, gradient %.6g (reference %.6g, its differences %.6g)",
				      dev, p->name, e, fd, gd[e], p->g[e], hfd);
		}
		free(gd);
	}
}

struct result {
	char dev[64];
	float *grads;		/* every parameter's, in order */
	size_t n;
};

typedef struct hn *(*build_fn)(struct tc *c, int arg);

/* run case @build on one device: returns its parameter gradients */
static void run_case(const char *tag, build_fn build, int arg,
		     struct gpo_device *dev, struct result *res)
{
	const char *id = tu_device_id(dev);
	struct tc c = { .dev = dev };
	struct hn *loss;
	size_t off = 0;
	int i;

	c.rng = tu_rng(tag);	/* the same values on every device */
	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &c.opt), 0);
	ck_assert_int_eq(gpo_graph_new(dev, &c.g), 0);
	loss = build(&c, arg);
	ck_assert_int_eq(gpo_graph_status(c.g), 0);
	ck_assert_int_eq(gpo_graph_backward(c.g, loss->t), 0);
	gpo_graph_set_step(c.g, c.step);
	loss->reach = loss->needs;
	for (i = c.nn - 1; i >= 0; i--) {
		struct hn *h = c.n[i];

		if (h->reach && h->a && h->a->needs)
			h->a->reach = 1;
		if (h->reach && h->b && h->b->needs)
			h->b->reach = 1;
		if (h->reach && h->c && h->c->needs)
			h->c->reach = 1;
	}
	h_run(&c, loss, 1);

	/* values in (the first input's write plans the graph) */
	for (i = 0; i < c.nn; i++) {
		struct hn *h = c.n[i];
		float *f = poisoned(h->n);
		size_t j;

		if (h->op == H_PARAM) {
			write_param(&c, h, h->v);
		} else if (h->op == H_INPUT && h->lab) {
			ck_assert_int_eq(gpo_tensor_write(h->t, h->lab,
							  h->n * 4), 0);
		} else if (h->op == H_INPUT) {
			for (j = 0; j < h->n; j++)
				f[j] = (float)h->v[j];
			ck_assert_int_eq(gpo_tensor_write(h->t, f, h->n * 4), 0);
		}
		free(f);
	}
	/* everything else poisoned on the device (not views: their sources) */
	for (i = 0; i < c.nn; i++) {
		struct hn *h = c.n[i];
		struct gpo_tensor *gt = gpo_tensor_grad(h->t);
		float *f = poisoned(h->n);

		ck_assert_msg(!gt == !(h->reach || h->op == H_PARAM),
			      "%s %s: %s has %s gradient", id, tag, h->name,
			      gt ? "a" : "no");
		if (h->op == H_PARAM)
			ck_assert_int_eq(gpo_optim_write(c.opt, "grad", h->name,
							 f, h->n * 4), 0);
		else if (h->op != H_INPUT && !h->view)
			ck_assert_int_eq(gpo_tensor_write(h->t, f, h->n * 4), 0);
		if (gt && h->op != H_PARAM)
			ck_assert_int_eq(gpo_tensor_write(gt, f, h->n * 4), 0);
		free(f);
	}
	ck_assert_msg(gpo_graph_run(c.g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD) == 0,
		      "%s %s: run: %s", id, tag, gpo_errmsg());

	res->n = 0;
	for (i = 0; i < c.nn; i++)
		if (c.n[i]->op == H_PARAM)
			res->n += c.n[i]->n;
	res->grads = malloc(res->n * sizeof(float));
	ck_assert_ptr_nonnull(res->grads);
	snprintf(res->dev, sizeof(res->dev), "%s", id);
	for (i = 0; i < c.nn; i++) {
		struct hn *h = c.n[i];
		struct gpo_tensor *gt = gpo_tensor_grad(h->t);
		float *f;

		if (h->op == H_INPUT)
			continue;
		f = poisoned(h->n);
		if (h->op != H_PARAM) {
			ck_assert_int_eq(gpo_tensor_read(h->t, f, h->n * 4), 0);
			check_vals(id, "value", h->name, f, h->v, h->n,
				   h->op == H_ACCURACY ? 1e-6 : REF_TOL,
				   terms(h));
		}
		if (h->op == H_PARAM) {
			ck_assert_int_eq(gpo_optim_read(c.opt, "grad", h->name,
							f, h->n * 4), 0);
			memcpy(res->grads + off, f, h->n * 4);
			off += h->n;
			check_vals(id, "gradient", h->name, f, h->g, h->n,
				   REF_TOL, 0);
		} else if (gt) {
			const struct hn *r = h;

			/* a reshape's gradient is its source's, all of it */
			while (r->op == H_RESHAPE)
				r = r->a;
			tu_poison(f, h->n);
			ck_assert_int_eq(gpo_tensor_read(gt, f, h->n * 4), 0);
			check_vals(id, "gradient", h->name, f, r->g, h->n,
				   REF_TOL, 0);
		}
		free(f);
	}
	check_fd(&c, loss, id);
	tc_free(&c);
}

/* @build on every device, and every device's gradients against cpu:0's */
static void check_case(const char *tag, build_fn build, int arg)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	struct result res[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, cpu = -1;
	char t[64];

	ck_assert_int_ge(ndev, 1);
	snprintf(t, sizeof(t), "%s.%d", tag, arg);
	for (d = 0; d < ndev; d++) {
		run_case(t, build, arg, devs[d], &res[d]);
		if (!strcmp(res[d].dev, "cpu:0"))
			cpu = d;
	}
	for (d = 0; cpu >= 0 && d < ndev; d++) {
		double *w = malloc(res[cpu].n * sizeof(double));
		size_t i;

		ck_assert_ptr_nonnull(w);
		ck_assert_uint_eq(res[d].n, res[cpu].n);
		for (i = 0; i < res[cpu].n; i++)
			w[i] = res[cpu].grads[i];
		check_vals(res[d].dev, "gradient against cpu:0's", t,
			   res[d].grads, w, res[d].n, XDEV_TOL, 0);
		free(w);
	}
	for (d = 0; d < ndev; d++)
		free(res[d].grads);
}

/* ---- the cases ---------------------------------------------------------- */

static const unsigned int mm_flags[4] = {
	0, GPO_MATMUL_TA, GPO_MATMUL_TB, GPO_MATMUL_TA | GPO_MATMUL_TB
};

/* C = op(A) op(B), both parameters: 13 x 37 times 37 x 19 */
static struct hn *b_matmul(struct tc *c, int arg)
{
	unsigned int f = mm_flags[arg];
	uint32_t sa[2] = { 13, 37 }, sb[2] = { 37, 19 }, t;

	if (f & GPO_MATMUL_TA) {
		t = sa[0]; sa[0] = sa[1]; sa[1] = t;
	}
	if (f & GPO_MATMUL_TB) {
		t = sb[0]; sb[0] = sb[1]; sb[1] = t;
	}
	return lin_loss(c, MATMUL(c, P(c, 2, sa, -1, 1), P(c, 2, sb, -1, 1),
				  f));
}

/* batched: [3, 11, 23] by [3, 23, 9], as stored or transposed */
static struct hn *b_matmul3(struct tc *c, int arg)
{
	unsigned int f = mm_flags[arg];
	uint32_t sa[3] = { 3, 11, 23 }, sb[3] = { 3, 23, 9 }, t;

	if (f & GPO_MATMUL_TA) {
		t = sa[1]; sa[1] = sa[2]; sa[2] = t;
	}
	if (f & GPO_MATMUL_TB) {
		t = sb[1]; sb[1] = sb[2]; sb[2] = t;
	}
	return lin_loss(c, MATMUL(c, P(c, 3, sa, -1, 1), P(c, 3, sb, -1, 1),
				  f));
}

/* a matmul of an input by a parameter: only one side takes a gradient */
static struct hn *b_matmul_input(struct tc *c, int arg)
{
	uint32_t sx[2] = { 17, 5 }, sw[2] = { 5, 7 };
	struct hn *x = IN(c, 2, sx, -1, 1), *w = P(c, 2, sw, -1, 1);

	return lin_loss(c, arg ? MATMUL(c, w, x, GPO_MATMUL_TA |
					GPO_MATMUL_TB) :
			MATMUL(c, x, w, 0));
}

/* y = x * x + x: x's gradient gathers three contributions */
static struct hn *b_reuse(struct tc *c, int arg)
{
	uint32_t s[2] = { 17, 29 };
	struct hn *x = P(c, 2, s, -1, 1);

	return lin_loss(c, BIN(c, B_ADD, BIN(c, B_MUL, x, x), x));
}

/*
 * terms of sums that share the sum's gradient (emit.c's grad_aliases)
 * and ones that must not: @arg 0, a product's one use a bias add whose
 * one use is a residual add, a chain of aliases; 1, a product used by
 * the sum and by a multiply (its gradient adds both); 2, the minuend of
 * a subtraction (an alias) and its subtrahend (-dy, not); 3, a sum of a
 * tensor with itself; 4, a term broadcast into the sum
 */
static struct hn *b_alias(struct tc *c, int arg)
{
	uint32_t a[2] = { 9, 13 }, b[2] = { 13, 11 }, r[2] = { 9, 11 };
	uint32_t v[1] = { 11 }, w[2] = { 1, 11 };
	struct hn *m = MATMUL(c, P(c, 2, a, -1, 1), P(c, 2, b, -1, 1), 0), *y;

	switch (arg) {
	case 0:
		y = BIN(c, B_ADD, m, P(c, 1, v, -1, 1));
		y = BIN(c, B_ADD, P(c, 2, r, -1, 1),
			UN(c, U_TANH, BIN(c, B_ADD, y, P(c, 2, r, -1, 1)),
			   1.0));
		return lin_loss(c, y);
	case 1:
		y = BIN(c, B_ADD, m, P(c, 1, v, -1, 1));
		return lin_loss(c, BIN(c, B_MUL, y, m));
	case 2:
		y = UN(c, U_TANH, P(c, 2, r, -1, 1), 1.0);
		return lin_loss(c, BIN(c, B_SUB, m, y));
	case 3:
		return lin_loss(c, BIN(c, B_ADD, m, m));
	}
	y = UN(c, U_TANH, P(c, 2, w, -1, 1), 1.0);
	return lin_loss(c, BIN(c, B_ADD, y, m));
}

/*
 * broadcasting both ways: @arg the op; [r, c] with [c], [r, 1] with
 * [r, c], [1, c] with [r, 1], a 3-d with a 1-d
 */
static struct hn *b_bcast(struct tc *c, int arg)
{
	uint32_t rc[2] = { 13, 21 }, cc[1] = { 21 }, r1[2] = { 13, 1 };
	uint32_t c1[2] = { 1, 21 }, s3[3] = { 3, 5, 7 }, s1[1] = { 7 };
	double lo = arg == B_DIV ? 0.5 : -1, hi = arg == B_DIV ? 1.5 : 1;
	struct hn *y1, *y2, *y3, *y4, *y5;

	y1 = BIN(c, arg, P(c, 2, rc, -1, 1), P(c, 1, cc, lo, hi));
	y2 = BIN(c, arg, P(c, 2, r1, -1, 1), P(c, 2, rc, lo, hi));
	y3 = BIN(c, arg, P(c, 2, c1, -1, 1), P(c, 2, r1, lo, hi));
	y4 = BIN(c, arg, P(c, 3, s3, -1, 1), P(c, 1, s1, lo, hi));
	y5 = BIN(c, arg, P(c, 1, s1, -1, 1), P(c, 3, s3, lo, hi));
	return BIN(c, B_ADD, BIN(c, B_ADD, lin_loss(c, y1), lin_loss(c, y2)),
		   BIN(c, B_ADD, lin_loss(c, y3),
		       BIN(c, B_ADD, lin_loss(c, y4), lin_loss(c, y5))));
}

/* each element-wise function (and scale) of a parameter */
static struct hn *b_unary(struct tc *c, int arg)
{
	uint32_t s[2] = { 23, 31 };
	int pos = arg == U_LOG || arg == U_SQRT;
	struct hn *x = P(c, 2, s, pos ? 0.2 : -2, 2);

	return lin_loss(c, UN(c, arg, x, -1.7));
}

/* transposes of 2-d and 3-d tensors, negative dimensions too */
static struct hn *b_transpose(struct tc *c, int arg)
{
	uint32_t s2[2] = { 13, 7 }, s3[3] = { 3, 5, 7 };

	if (!arg)
		return lin_loss(c, TRANSPOSE(c, P(c, 2, s2, -1, 1), 0, 1));
	if (arg == 1)
		return lin_loss(c, TRANSPOSE(c, P(c, 3, s3, -1, 1), 0, 2));
	/* transposed into a product: the gradient flows through both */
	return lin_loss(c, MATMUL(c, TRANSPOSE(c, P(c, 3, s3, -1, 1), -1, -2),
				  P(c, 3, s3, -1, 1), 0));
}

static struct hn *b_softmax(struct tc *c, int arg)
{
	uint32_t s2[2] = { 11, 19 }, s3[3] = { 2, 5, 13 };

	return BIN(c, B_ADD,
		   lin_loss(c, SOFTMAX(c, P(c, 2, s2, -3, 3), arg)),
		   lin_loss(c, SOFTMAX(c, P(c, 3, s3, -3, 3), arg)));
}

/* sum, mean and max over each axis of a 3-d tensor */
static struct hn *b_reduce(struct tc *c, int arg)
{
	uint32_t s[3] = { 5, 7, 9 };
	struct hn *x = P(c, 3, s, -1, 1);

	return BIN(c, B_ADD, BIN(c, B_ADD, lin_loss(c, RED(c, arg, x, 0)),
				 lin_loss(c, RED(c, arg, x, 1))),
		   lin_loss(c, RED(c, arg, x, -1)));
}

/* max with ties: the gradient goes to the first maximum only */
static struct hn *b_max_ties(struct tc *c, int arg)
{
	uint32_t s[2] = { 7, 11 };
	struct hn *x = P(c, 2, s, -1, 1);
	uint32_t r;

	for (r = 0; r < s[0]; r++) {
		/* two or three equal maxima in each row (column with axis 0) */
		if (arg == 1) {
			x->v[r * s[1] + 2] = 1.5;
			x->v[r * s[1] + 5 + r % 3] = 1.5;
			x->v[r * s[1] + 9] = r & 1 ? 1.5 : 0.25;
		} else {
			x->v[3 * s[1] + r] = 1.25;
			x->v[(4 + r % 3) * s[1] + r] = 1.25;
		}
	}
	return lin_loss(c, RED(c, R_MAX, x, arg));
}

/* logits = x w + b, cross-entropy with i32 labels; accuracy on the side */
static struct hn *b_xent(struct tc *c, int arg)
{
	uint32_t sx[2] = { 19, 23 }, sw[2] = { 23, 10 }, sb[1] = { 10 };
	struct hn *x = IN(c, 2, sx, -1, 1), *lab = LABELS(c, 19, 10), *lg;

	lg = BIN(c, B_ADD, MATMUL(c, x, P(c, 2, sw, -1, 1), 0),
		 P(c, 1, sb, -1, 1));
	XENT(c, lg, lab, 1);
	if (arg)	/* through a hidden layer of relu */
		lg = MATMUL(c, UN(c, U_RELU, lg, 1),
			    P(c, 2, (uint32_t[]){ 10, 10 }, -1, 1), 0);
	return XENT(c, lg, lab, 0);
}

/* mse against a one-hot target, both ways round */
static struct hn *b_mse(struct tc *c, int arg)
{
	uint32_t sx[2] = { 15, 9 }, sw[2] = { 9, 6 };
	struct hn *x = IN(c, 2, sx, -1, 1), *lab = LABELS(c, 15, 6), *y, *oh;

	y = UN(c, U_TANH, MATMUL(c, x, P(c, 2, sw, -1, 1), 0), 1);
	oh = ONE_HOT(c, lab, 6);
	XENT(c, y, lab, 1);
	return arg ? MSE(c, oh, y) : MSE(c, y, oh);
}

/*
 * reshapes: of a parameter into 3 dimensions; a chain of them, the
 * source used directly too (one gradient, two ways in); a reshape of an
 * op's result, and the loss itself a reshape
 */
static struct hn *b_reshape(struct tc *c, int arg)
{
	uint32_t s[2] = { 6, 11 }, s3[3] = { 3, 2, 11 }, s1[1] = { 66 };
	uint32_t s2[2] = { 11, 6 }, one[2] = { 1, 1 };
	struct hn *x = P(c, 2, s, -1, 1), *r;

	if (!arg)
		return lin_loss(c, RESHAPE(c, x, 3, s3));
	if (arg == 1) {
		r = RESHAPE(c, RESHAPE(c, x, 1, s1), 2, s2);
		return BIN(c, B_ADD, lin_loss(c, UN(c, U_TANH, r, 1)),
			   lin_loss(c, BIN(c, B_MUL, x, x)));
	}
	r = RESHAPE(c, UN(c, U_SIGMOID, x, 1), 3, s3);
	return RESHAPE(c, lin_loss(c, BIN(c, B_MUL, r, r)), 2, one);
}

/* permutes of 4, 3 and 2 dimensions, negative numbers too */
static struct hn *b_permute(struct tc *c, int arg)
{
	static const int p4[][4] = {
		{ 2, 0, 3, 1 }, { 3, 2, 1, 0 }, { 0, 2, 1, 3 }, { 0, 1, 2, 3 },
	};
	uint32_t s4[4] = { 3, 5, 2, 7 }, s3[3] = { 4, 3, 5 }, s2[2] = { 9, 5 };
	const int p3[3] = { 1, -1, 0 }, p2[2] = { -1, -2 };

	if (arg < 4)
		return lin_loss(c, PERMUTE(c, P(c, 4, s4, -1, 1), p4[arg]));
	/* into a product, its gradient through both */
	return BIN(c, B_ADD, lin_loss(c, PERMUTE(c, P(c, 3, s3, -1, 1), p3)),
		   lin_loss(c, MATMUL(c, PERMUTE(c, P(c, 2, s2, -1, 1), p2),
				      P(c, 2, s2, -1, 1), 0)));
}

/*
 * slices along the first dimension: two of them with rows between and
 * after that no slice takes (their gradient is 0); a slice after a
 * direct use (the direct one writes first); slices of slices and of a
 * reshape; one of all the rows
 */
static struct hn *b_slice(struct tc *c, int arg)
{
	uint32_t s[3] = { 11, 3, 4 }, s2[2] = { 33, 4 };
	struct hn *x = P(c, 3, s, -1, 1), *y;

	switch (arg) {
	case 0:
		return BIN(c, B_ADD, lin_loss(c, SLICE(c, x, 2, 5)),
			   lin_loss(c, UN(c, U_TANH, SLICE(c, x, 8, 2), 1)));
	case 1:
		y = SLICE(c, x, 3, 7);
		return BIN(c, B_ADD, lin_loss(c, y),
			   lin_loss(c, UN(c, U_TANH, x, 1)));
	case 2:
		y = SLICE(c, RESHAPE(c, x, 2, s2), 4, 20);
		return BIN(c, B_ADD, lin_loss(c, SLICE(c, y, 1, 9)),
			   lin_loss(c, SLICE(c, SLICE(c, x, 1, 9), 6, 3)));
	}
	return lin_loss(c, BIN(c, B_MUL, SLICE(c, x, 0, 11), x));
}

/*
 * causal softmax of [T, T], [B, T, T] and [B, H, T, T] parameters; with
 * NaN above the diagonal, which must never be read
 */
static struct hn *b_causal(struct tc *c, int arg)
{
	uint32_t s2[2] = { 9, 9 }, s3[3] = { 3, 7, 7 }, s4[4] = { 2, 3, 5, 5 };
	struct hn *x;
	size_t i;

	if (arg == 0)
		return lin_loss(c, CAUSAL(c, P(c, 2, s2, -3, 3), 0.7));
	if (arg == 1)
		return lin_loss(c, CAUSAL(c, P(c, 3, s3, -3, 3), -1.3));
	x = P(c, 4, s4, -3, 3);
	for (i = 0; i < x->n; i++)
		if (i % 5 > (i / 5) % 5)
			x->v[i] = NAN;
	return lin_loss(c, CAUSAL(c, x, 1 / sqrt(5.0)));
}

/*
 * causal self-attention of one layer, as a GPT builds it in 4
 * dimensions: qkv [B T, 3 C] -> [B, T, 3 H, hd] -> [3 H, B, T, hd] ->
 * [3, H B, T, hd] -> q, k, v [H B, T, hd] -> softmax(q k^T / sqrt hd) v
 * -> [H, B, T, hd] -> [B, T, H, hd] -> [B T, C]
 */
static struct hn *b_attention(struct tc *c, int arg)
{
	const uint32_t B = 2, T = 5, H = 3, hd = 7, C = H * hd;
	uint32_t sx[2] = { B * T, 3 * C }, s4[4] = { B, T, 3 * H, hd };
	uint32_t s3[4] = { 3, H * B, T, hd }, sq[3] = { H * B, T, hd };
	uint32_t so[4] = { H, B, T, hd }, sy[2] = { B * T, C };
	const int pin[4] = { 2, 0, 1, 3 }, pout[4] = { 1, 2, 0, 3 };
	struct hn *qkv, *q, *k, *v, *a, *y;

	if (!arg)
		qkv = P(c, 2, sx, -1, 1);
	else	/* through a product, as the model's c_attn */
		qkv = MATMUL(c, IN(c, 2, (uint32_t[]){ B * T, 11 }, -1, 1),
			     P(c, 2, (uint32_t[]){ 3 * C, 11 }, -1, 1),
			     GPO_MATMUL_TB);
	y = RESHAPE(c, PERMUTE(c, RESHAPE(c, qkv, 4, s4), pin), 4, s3);
	q = RESHAPE(c, SLICE(c, y, 0, 1), 3, sq);
	k = RESHAPE(c, SLICE(c, y, 1, 1), 3, sq);
	v = RESHAPE(c, SLICE(c, y, 2, 1), 3, sq);
	a = CAUSAL(c, MATMUL(c, q, k, GPO_MATMUL_TB), 1 / sqrt(hd));
	y = MATMUL(c, a, v, 0);
	y = RESHAPE(c, PERMUTE(c, RESHAPE(c, y, 4, so), pout), 2, sy);
	return lin_loss(c, y);
}

/*
 * the fused op: as a GPT builds it (b_attention's shapes, through
 * c_attn's product); q, k and v one tensor (their gradients summed in one
 * buffer); odd T over two blocks and an odd head size; hd 70 (both
 * column halves) with only k and v parameters
 */
static struct hn *b_fused_attention(struct tc *c, int arg)
{
	const uint32_t B = 2, T = 5, H = 3, hd = 7, C = H * hd;
	uint32_t s4[4] = { B, T, 3 * H, hd }, s3[4] = { 3, H * B, T, hd };
	uint32_t sq[3] = { H * B, T, hd }, so[4] = { H, B, T, hd };
	uint32_t sy[2] = { B * T, C }, s1[3] = { 2, 67, 9 };
	uint32_t s2[3] = { 2, 11, 70 };
	const int pin[4] = { 2, 0, 1, 3 }, pout[4] = { 1, 2, 0, 3 };
	struct hn *qkv, *q, *k, *v, *y;

	if (arg == 1) {
		q = P(c, 3, s1, -1.5, 1.5);
		return lin_loss(c, ATTN(c, q, q, q, 0.8));
	}
	if (arg == 2)
		return lin_loss(c, ATTN(c, P(c, 3, s1, -1, 1),
					P(c, 3, s1, -1, 1),
					P(c, 3, s1, -1, 1), -0.6));
	if (arg == 3)
		return lin_loss(c, ATTN(c, IN(c, 3, s2, -0.5, 0.5),
					P(c, 3, s2, -0.5, 0.5),
					P(c, 3, s2, -1, 1), 0.3));
	qkv = MATMUL(c, IN(c, 2, (uint32_t[]){ B * T, 11 }, -1, 1),
		     P(c, 2, (uint32_t[]){ 3 * C, 11 }, -1, 1), GPO_MATMUL_TB);
	y = RESHAPE(c, PERMUTE(c, RESHAPE(c, qkv, 4, s4), pin), 4, s3);
	q = RESHAPE(c, SLICE(c, y, 0, 1), 3, sq);
	k = RESHAPE(c, SLICE(c, y, 1, 1), 3, sq);
	v = RESHAPE(c, SLICE(c, y, 2, 1), 3, sq);
	y = ATTN(c, q, k, v, 1 / sqrt(hd));
	y = RESHAPE(c, PERMUTE(c, RESHAPE(c, y, 4, so), pout), 2, sy);
	return lin_loss(c, y);
}

/* layer norm with w and b, without either, with w only of a 3-d x */
static struct hn *b_layer_norm(struct tc *c, int arg)
{
	uint32_t s2[2] = { 7, 13 }, s3[3] = { 2, 5, 13 }, sd[1] = { 13 };

	if (arg == 0)
		return lin_loss(c, LAYERNORM(c, P(c, 2, s2, -2, 2),
					     P(c, 1, sd, 0.5, 1.5),
					     P(c, 1, sd, -1, 1), 1e-5));
	if (arg == 1)
		return lin_loss(c, LAYERNORM(c, P(c, 2, s2, -2, 2), NULL, NULL,
					     1e-5));
	return lin_loss(c, LAYERNORM(c, P(c, 3, s3, -2, 2),
				     P(c, 1, sd, 0.5, 1.5), NULL, 0.1));
}

/*
 * embeddings of [B, T] indices (some out of range): alone; with the
 * table used again as a tied output layer, after or before the lookup
 * (the table's gradient is written by one and added to by the other)
 */
static struct hn *b_embedding(struct tc *c, int arg)
{
	const uint32_t V = 13, D = 6, B = 3, T = 5;
	uint32_t st[2] = { V, D }, si[2] = { B, T }, sh[2] = { B * T, D };
	struct hn *wte = P(c, 2, st, -1, 1), *idx = IDX(c, 2, si, V), *h, *x;
	struct hn *lab = LABELS(c, B * T, V), *l2;

	if (!arg)
		return lin_loss(c, EMBED(c, wte, idx));
	if (arg == 1) {
		h = RESHAPE(c, EMBED(c, wte, idx), 2, sh);
		return XENT(c, MATMUL(c, UN(c, U_TANH, h, 1), wte,
				      GPO_MATMUL_TB), lab, 0);
	}
	x = IN(c, 2, sh, -1, 1);
	l2 = XENT(c, MATMUL(c, x, wte, GPO_MATMUL_TB), lab, 0);
	return BIN(c, B_ADD, l2, lin_loss(c, EMBED(c, wte, idx)));
}

/*
 * two dropouts (sites 0 and 1) at a step of the case's own; the mask
 * is the reference's (Philox here), so the values and gradients check
 * it exactly
 */
static struct hn *b_dropout(struct tc *c, int arg)
{
	uint32_t s[2] = { 13, 17 }, s3[3] = { 3, 5, 11 };
	struct hn *x = P(c, 2, s, -1, 1);

	c->step = 1000003ull * (arg + 1);
	return BIN(c, B_ADD, lin_loss(c, DROPOUT(c, x, 0.3, 42 + arg)),
		   lin_loss(c, DROPOUT(c, UN(c, U_TANH, P(c, 3, s3, -1, 1),
					     1), arg ? 0.9 : 0.5,
				       (uint64_t)arg << 40 | 7)));
}

#define CASE(name, build, nargs) \
START_TEST(name) \
{ \
	check_case(#name, build, _i); \
} \
END_TEST

CASE(test_tensor_matmul_grads, b_matmul, 4)
CASE(test_tensor_matmul_batched_grads, b_matmul3, 4)
CASE(test_tensor_matmul_input_grads, b_matmul_input, 2)
CASE(test_tensor_reuse_accumulates, b_reuse, 1)
CASE(test_tensor_sum_terms_share_grads, b_alias, 5)
CASE(test_tensor_broadcast_grads, b_bcast, 4)
CASE(test_tensor_unary_grads, b_unary, U_COUNT)
CASE(test_tensor_transpose_grads, b_transpose, 3)
CASE(test_tensor_softmax_grads, b_softmax, 2)
CASE(test_tensor_reduce_grads, b_reduce, 3)
CASE(test_tensor_max_ties_first, b_max_ties, 2)
CASE(test_tensor_cross_entropy_grads, b_xent, 2)
CASE(test_tensor_mse_one_hot_grads, b_mse, 2)
CASE(test_tensor_reshape_grads, b_reshape, 3)
CASE(test_tensor_permute_grads, b_permute, 5)
CASE(test_tensor_slice_grads, b_slice, 4)
CASE(test_tensor_causal_softmax_grads, b_causal, 3)
CASE(test_tensor_attention_grads, b_attention, 2)
CASE(test_tensor_fused_attention_grads, b_fused_attention, 4)
CASE(test_tensor_layer_norm_grads, b_layer_norm, 3)
CASE(test_tensor_embedding_grads, b_embedding, 3)
CASE(test_tensor_dropout_grads, b_dropout, 2)

/* ---- dropout's masks, views of i32 -------------------------------------- */

#define DROP_N		4099
#define DROP_P		0.3

/*
 * one run of x [DROP_N] (a parameter) through two dropouts of one seed,
 * loss = sum(y1 w1 + y2 w2), at @step: y1, y2 and d loss / dx
 */
struct drop_run {
	float y1[DROP_N], y2[DROP_N], dx[DROP_N];
};

struct drop_case {
	struct gpo_graph *g;
	struct gpo_optim *opt;
	struct gpo_tensor *y1, *y2;
	float x[DROP_N], w1[DROP_N], w2[DROP_N];
};

static void drop_build(struct drop_case *d, struct gpo_device *dev)
{
	uint64_t n = DROP_N, rng = tu_rng("dropout_masks");
	struct gpo_tensor *x, *w1, *w2, *l;

	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &d->opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(d->opt, "x", 1, &n, 0), 0);
	ck_assert_int_eq(gpo_graph_new(dev, &d->g), 0);
	x = gpo_tensor_param(d->g, d->opt, "x");
	w1 = gpo_tensor_input(d->g, "w1", GPO_F32, 1, &n);
	w2 = gpo_tensor_input(d->g, "w2", GPO_F32, 1, &n);
	d->y1 = gpo_dropout(d->g, x, DROP_P, 0x5eed);
	d->y2 = gpo_dropout(d->g, x, DROP_P, 0x5eed);
	l = gpo_add(d->g, gpo_sum(d->g, gpo_mul(d->g, d->y1, w1), 0),
		    gpo_sum(d->g, gpo_mul(d->g, d->y2, w2), 0));
	ck_assert_int_eq(gpo_graph_backward(d->g, l), 0);
	/* never 0: a 0 in y is a dropped element */
	tu_fill(d->x, n, &rng, 0.5, 1.5);
	tu_fill(d->w1, n, &rng, 0.5, 1.5);
	tu_fill(d->w2, n, &rng, -1.5, -0.5);
	ck_assert_int_eq(gpo_optim_write(d->opt, "param", "x", d->x,
					 sizeof(d->x)), 0);
	ck_assert_int_eq(gpo_tensor_write(w1, d->w1, sizeof(d->w1)), 0);
	ck_assert_int_eq(gpo_tensor_write(w2, d->w2, sizeof(d->w2)), 0);
}

static void drop_run(struct drop_case *d, uint64_t step, struct drop_run *r)
{
	tu_poison(r->y1, DROP_N);
	tu_poison(r->y2, DROP_N);
	tu_poison(r->dx, DROP_N);
	ck_assert_int_eq(gpo_optim_write(d->opt, "grad", "x", r->dx,
					 sizeof(r->dx)), 0);
	gpo_graph_set_step(d->g, step);
	ck_assert_int_eq(gpo_graph_run(d->g, GPO_RUN_FORWARD |
				       GPO_RUN_BACKWARD), 0);
	ck_assert_int_eq(gpo_tensor_read(d->y1, r->y1, sizeof(r->y1)), 0);
	ck_assert_int_eq(gpo_tensor_read(d->y2, r->y2, sizeof(r->y2)), 0);
	ck_assert_int_eq(gpo_optim_read(d->opt, "grad", "x", r->dx,
					sizeof(r->dx)), 0);
}

/* @r against the reference masks of @step: values, gradient, fraction */
static void drop_check(const char *id, const struct drop_case *d,
		       uint64_t step, const struct drop_run *r)
{
	const double a = 1 / (1 - DROP_P);
	uint32_t th = thresh_of(DROP_P);
	size_t i, kept = 0;

	for (i = 0; i < DROP_N; i++) {
		int k1 = keep_ref(0x5eed, step, 0, i, th);
		int k2 = keep_ref(0x5eed, step, 1, i, th);
		double dx = a * (k1 * d->w1[i] + k2 * d->w2[i]);

		ck_assert_msg(k1 ? fabs(r->y1[i] - a * d->x[i]) < 1e-6 :
			      r->y1[i] == 0, "%s step %llu: y1[%zu] = %g, keep %d", id,
			      (unsigned long long)step, i, r->y1[i], k1);
		ck_assert_msg(k2 ? fabs(r->y2[i] - a * d->x[i]) < 1e-6 :
			      r->y2[i] == 0, "%s step %llu: y2[%zu] = %g, keep %d",
			      id, (unsigned long long)step, i, r->y2[i], k2);
		/* backward through forward's masks, 0 where both dropped */
		ck_assert_msg(k1 || k2 ? fabs(r->dx[i] - dx) < 1e-5 :
			      r->dx[i] == 0, "%s step %llu: dx[%zu] = %g, want %g",
			      id, (unsigned long long)step, i, r->dx[i], dx);
		kept += k1 + k2;
	}
	/* 0.7 of 2 DROP_N draws, within 6 standard deviations */
	ck_assert_msg(fabs((double)kept / (2 * DROP_N) - (1 - DROP_P)) <
		      6 * sqrt(DROP_P * (1 - DROP_P) / (2 * DROP_N)),
		      "%s: %zu of %d kept", id, kept, 2 * DROP_N);
}

static size_t mask_diff(const float *a, const float *b)
{
	size_t i, n = 0;

	for (i = 0; i < DROP_N; i++)
		n += (a[i] == 0) != (b[i] == 0);
	return n;
}

/*
 * the masks are the reference's on every device, bit for bit the same
 * bytes; they differ between the two sites and from step to step, and
 * come back when a step comes back
 */
START_TEST(test_tensor_dropout_masks)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	struct drop_run *first = malloc(sizeof(*first));
	struct drop_run *r = malloc(sizeof(*r)), *r2 = malloc(sizeof(*r2));
	const uint64_t steps[2] = { 0, 977 };
	struct drop_case *c = malloc(sizeof(*c));
	int k;

	ck_assert(first && r && r2 && c);
	for (d = 0; d < ndev; d++) {
		const char *id = tu_device_id(devs[d]);

		drop_build(c, devs[d]);
		for (k = 0; k < 2; k++) {
			drop_run(c, steps[k], r);
			drop_check(id, c, steps[k], r);
			if (!d && !k)
				memcpy(first, r, sizeof(*r));
			if (!k)
				ck_assert_msg(!memcmp(r->y1, first->y1,
						      sizeof(r->y1)) &&
					      !memcmp(r->y2, first->y2,
						      sizeof(r->y2)),
					      "%s: masks differ from %s's", id,
					      tu_device_id(devs[0]));
			/* sites: independent masks, ~2 p (1 - p) differ */
			ck_assert_uint_gt(mask_diff(r->y1, r->y2), DROP_N / 4);
		}
		/* r is step 977's: another mask than step 0's */
		ck_assert_uint_gt(mask_diff(r->y1, first->y1), DROP_N / 4);
		/* step 0 again, once more the same bytes */
		drop_run(c, 0, r2);
		ck_assert(!memcmp(r2->y1, first->y1, sizeof(r2->y1)) &&
			  !memcmp(r2->y2, first->y2, sizeof(r2->y2)));
		drop_check(id, c, 0, r2);
		gpo_graph_free(c->g);
		gpo_optim_free(c->opt);
	}
	free(first);
	free(r);
	free(r2);
	free(c);
}
END_TEST

/*
 * i32 indices cut with gpo_slice and shaped with gpo_reshape: views of
 * the input, read and written through; their embedding's rows
 */
START_TEST(test_tensor_i32_views)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t si[2] = { 5, 7 }, sr[2] = { 3, 7 }, st[2] = { 11, 3 }, flat = 21;
	uint64_t rng = tu_rng("i32_views");
	int32_t idx[35], got[21], again[35];
	float tab[33], e[63];
	int i, j;

	for (i = 0; i < 35; i++)
		idx[i] = (int32_t)tu_rand(&rng, -2, 13);
	tu_fill(tab, 33, &rng, -1, 1);
	for (d = 0; d < ndev; d++) {
		const char *id = tu_device_id(devs[d]);
		struct gpo_tensor *x, *s, *r, *t, *emb;
		struct gpo_graph *g;

		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		x = gpo_tensor_input(g, "idx", GPO_I32, 2, si);
		t = gpo_tensor_input(g, "table", GPO_F32, 2, st);
		s = gpo_slice(g, x, 1, 3);
		r = gpo_reshape(g, s, 1, &flat);
		emb = gpo_embedding(g, t, gpo_reshape(g, r, 2, sr));
		ck_assert_msg(emb != NULL, "%s: %s", id, gpo_errmsg());
		ck_assert_int_eq(gpo_tensor_write(x, idx, sizeof(idx)), 0);
		ck_assert_int_eq(gpo_tensor_write(t, tab, sizeof(tab)), 0);
		ck_assert_int_eq(gpo_graph_run(g, GPO_RUN_FORWARD), 0);
		ck_assert_int_eq(gpo_tensor_read(r, got, sizeof(got)), 0);
		ck_assert(!memcmp(got, idx + 7, sizeof(got)));
		tu_poison(e, 63);
		ck_assert_int_eq(gpo_tensor_read(emb, e, sizeof(e)), 0);
		for (i = 0; i < 21; i++)
			for (j = 0; j < 3; j++)
				ck_assert_msg(e[i * 3 + j] ==
					      (got[i] >= 0 && got[i] < 11 ?
					       tab[got[i] * 3 + j] : 0.0f),
					      "%s: row %d (index %d) [%d] = %g",
					      id, i, got[i], j, e[i * 3 + j]);
		/* written through the view: the input's rows 1..3 */
		for (i = 0; i < 21; i++)
			got[i] = -got[i];
		ck_assert_int_eq(gpo_tensor_write(r, got, sizeof(got)), 0);
		ck_assert_int_eq(gpo_tensor_read(x, again, sizeof(again)), 0);
		for (i = 0; i < 35; i++)
			ck_assert_int_eq(again[i], i >= 7 && i < 28 ?
					 -idx[i] : idx[i]);
		gpo_graph_free(g);
	}
}
END_TEST

/* ---- fused attention against the composed ops ------------------------------ */

#define FC_BH	3
#define FC_T	100	/* two blocks, the second partial */
#define FC_HD	16
#define FC_N	(FC_BH * FC_T * FC_HD)

/*
 * loss = sum(w * attention(q, k, v)), q, k, v parameters, by the fused
 * op (@fused) or by matmul, causal_softmax and matmul: y and the three
 * gradients
 */
static void fc_run(struct gpo_device *dev, int fused, float *const in[4],
		   float *y, float *const grad[3])
{
	static const char *const names[3] = { "q", "k", "v" };
	uint64_t s[3] = { FC_BH, FC_T, FC_HD };
	struct gpo_tensor *p[3], *w, *out, *loss;
	struct gpo_optim *opt;
	struct gpo_graph *g;
	const char *id = tu_device_id(dev);
	int i;

	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &opt), 0);
	ck_assert_int_eq(gpo_graph_new(dev, &g), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_ge(gpo_optim_add_tensor(opt, names[i], 3, s, 0),
				 0);
		p[i] = gpo_tensor_param(g, opt, names[i]);
	}
	w = gpo_tensor_input(g, "w", GPO_F32, 3, s);
	if (fused) {
		out = gpo_causal_attention(g, p[0], p[1], p[2], 0.3);
	} else {
		out = gpo_matmul(g, p[0], p[1], GPO_MATMUL_TB);
		out = gpo_causal_softmax(g, out, 0.3);
		out = gpo_matmul(g, out, p[2], 0);
	}
	loss = gpo_sum(g, gpo_sum(g, gpo_sum(g, gpo_mul(g, out, w), -1), -1),
		       -1);
	ck_assert_msg(loss != NULL, "%s: %s", id, gpo_errmsg());
	ck_assert_int_eq(gpo_graph_backward(g, loss), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(gpo_optim_write(opt, "param", names[i], in[i],
						 FC_N * 4), 0);
	ck_assert_int_eq(gpo_tensor_write(w, in[3], FC_N * 4), 0);
	ck_assert_msg(gpo_graph_run(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD) == 0,
		      "%s: %s", id, gpo_errmsg());
	tu_poison(y, FC_N);
	ck_assert_int_eq(gpo_tensor_read(out, y, FC_N * 4), 0);
	for (i = 0; i < 3; i++) {
		tu_poison(grad[i], FC_N);
		ck_assert_int_eq(gpo_optim_read(opt, "grad", names[i], grad[i],
						FC_N * 4), 0);
	}
	gpo_graph_free(g);
	gpo_optim_free(opt);
}

/* the fused op's value and gradients are the composition's */
START_TEST(test_tensor_attention_fused_matches_composed)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev = tu_devices(devs, TU_MAX_DEVICES), d, i;
	uint64_t rng = tu_rng("fused_composed");
	float *in[4], *out[2][4];
	double *want = malloc(FC_N * sizeof(double));
	size_t e;

	ck_assert_ptr_nonnull(want);
	for (i = 0; i < 4; i++) {
		in[i] = malloc(FC_N * 4);
		out[0][i] = malloc(FC_N * 4);
		out[1][i] = malloc(FC_N * 4);
		ck_assert(in[i] && out[0][i] && out[1][i]);
		tu_fill(in[i], FC_N, &rng, -2, 2);
	}
	for (d = 0; d < ndev; d++) {
		const char *id = tu_device_id(devs[d]);

		fc_run(devs[d], 1, in, out[0][0], out[0] + 1);
		fc_run(devs[d], 0, in, out[1][0], out[1] + 1);
		for (i = 0; i < 4; i++) {
			for (e = 0; e < FC_N; e++)
				want[e] = out[1][i][e];
			check_vals(id, i ? "fused gradient" : "fused value",
				   i ? (const char *[]){ "q", "k", "v" }[i - 1] :
				   "y", out[0][i], want, FC_N, 1e-5, 0);
		}
	}
	for (i = 0; i < 4; i++) {
		free(in[i]);
		free(out[0][i]);
		free(out[1][i]);
	}
	free(want);
}
END_TEST

/* ---- error paths ----------------------------------------------------------- */

struct ectx {
	struct gpo_ctx *ctx;
	struct gpo_device *dev;
	struct gpo_graph *g;
	struct gpo_optim *opt;
};

static void e_open(struct ectx *e)
{
	memset(e, 0, sizeof(*e));
	ck_assert_int_eq(gpo_ctx_new(&e->ctx, 0), 0);
	ck_assert_int_eq(gpo_device_select(e->ctx, "cpu:0", &e->dev), 0);
	ck_assert_int_eq(gpo_graph_new(e->dev, &e->g), 0);
}

static void e_close(struct ectx *e)
{
	gpo_graph_free(e->g);
	gpo_optim_free(e->opt);
	gpo_ctx_free(e->ctx);
}

static struct gpo_tensor *e_in(struct ectx *e, enum gpo_dtype dt, int nd,
			       uint64_t d0, uint64_t d1, uint64_t d2)
{
	uint64_t s[3] = { d0, d1, d2 };
	struct gpo_tensor *t = gpo_tensor_input(e->g, "x", dt, nd, s);

	ck_assert_msg(t != NULL, "input: %s", gpo_errmsg());
	return t;
}

/* @t is NULL, and the graph keeps @err: at status and on run */
static void e_kept(struct ectx *e, struct gpo_tensor *t, int err,
		   const char *needle)
{
	char msg[512];

	ck_assert_ptr_null(t);
	tu_check_errmsg("the failed op");
	snprintf(msg, sizeof(msg), "%s", gpo_errmsg());
	ck_assert_msg(strstr(msg, needle), "message '%s' lacks '%s'", msg,
		      needle);
	ck_assert_int_eq(gpo_graph_status(e->g), err);
	ck_assert_str_eq(gpo_errmsg(), msg);
	ck_assert_int_eq(gpo_graph_run(e->g, GPO_RUN_FORWARD), err);
	tu_check_errmsg("gpo_graph_run");
	/* later ops given the failure's NULL fail too, the first error stays */
	ck_assert_ptr_null(gpo_relu(e->g, t));
	ck_assert_int_eq(gpo_graph_status(e->g), err);
	ck_assert_str_eq(gpo_errmsg(), msg);
	ck_assert_int_eq(gpo_graph_backward(e->g, t), err);
}

START_TEST(test_tensor_err_null_tensor)
{
	struct ectx e;

	e_open(&e);
	e_kept(&e, gpo_add(e.g, e_in(&e, GPO_F32, 1, 5, 0, 0), NULL),
	       -EINVAL, "NULL");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_no_broadcast)
{
	struct ectx e;
	struct gpo_tensor *a, *b;

	e_open(&e);
	a = e_in(&e, GPO_F32, 2, 3, 4, 0);
	b = e_in(&e, GPO_F32, 1, 5, 0, 0);
	e_kept(&e, gpo_mul(e.g, a, b), -EINVAL, "broadcast");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_matmul_inner)
{
	struct ectx e;
	struct gpo_tensor *a, *b;

	e_open(&e);
	a = e_in(&e, GPO_F32, 2, 3, 4, 0);
	b = e_in(&e, GPO_F32, 2, 5, 6, 0);
	/* with TB the inner sizes would be 4 and 6: still wrong */
	ck_assert_ptr_nonnull(gpo_matmul(e.g, a, a, GPO_MATMUL_TB));
	e_kept(&e, gpo_matmul(e.g, a, b, GPO_MATMUL_TB), -EINVAL, "inner");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_matmul_2d_3d)
{
	struct ectx e;
	struct gpo_tensor *a, *b;

	e_open(&e);
	a = e_in(&e, GPO_F32, 2, 3, 4, 0);
	b = e_in(&e, GPO_F32, 3, 2, 4, 5);
	e_kept(&e, gpo_matmul(e.g, a, b, 0), -EINVAL, "dimensions");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_other_graph)
{
	struct ectx e;
	struct gpo_graph *g2;
	struct gpo_tensor *a, *b;
	uint64_t s = 5;

	e_open(&e);
	ck_assert_int_eq(gpo_graph_new(e.dev, &g2), 0);
	b = gpo_tensor_input(g2, "y", GPO_F32, 1, &s);
	ck_assert_ptr_nonnull(b);
	a = e_in(&e, GPO_F32, 1, 5, 0, 0);
	e_kept(&e, gpo_add(e.g, a, b), -EINVAL, "another graph");
	ck_assert_int_eq(gpo_graph_status(g2), 0);
	gpo_graph_free(g2);
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_i32_for_f32)
{
	struct ectx e;

	e_open(&e);
	e_kept(&e, gpo_exp(e.g, e_in(&e, GPO_I32, 1, 5, 0, 0)), -EINVAL,
	       "i32");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_labels)
{
	struct ectx e;
	struct gpo_tensor *x;

	e_open(&e);
	x = e_in(&e, GPO_F32, 2, 4, 3, 0);
	e_kept(&e, gpo_cross_entropy(e.g, x, e_in(&e, GPO_I32, 1, 5, 0, 0)),
	       -EINVAL, "labels");
	gpo_graph_free(e.g);
	ck_assert_int_eq(gpo_graph_new(e.dev, &e.g), 0);
	x = e_in(&e, GPO_F32, 2, 4, 3, 0);
	e_kept(&e, gpo_accuracy(e.g, x, e_in(&e, GPO_F32, 1, 4, 0, 0)),
	       -EINVAL, "labels");
	gpo_graph_free(e.g);
	ck_assert_int_eq(gpo_graph_new(e.dev, &e.g), 0);
	e_kept(&e, gpo_one_hot(e.g, e_in(&e, GPO_I32, 2, 4, 1, 0), 3),
	       -EINVAL, "labels");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_param_unknown)
{
	struct ectx e;
	uint64_t s = 7;

	e_open(&e);
	ck_assert_int_eq(gpo_optim_new(e.dev, GPO_SGD, &e.opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(e.opt, "w", 1, &s, 0), 0);
	ck_assert_ptr_nonnull(gpo_tensor_param(e.g, e.opt, "w"));
	e_kept(&e, gpo_tensor_param(e.g, e.opt, "nosuch"), -ENOENT,
	       "nosuch");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_axis)
{
	struct ectx e;
	struct gpo_tensor *x;

	e_open(&e);
	x = e_in(&e, GPO_F32, 2, 4, 3, 0);
	ck_assert_ptr_nonnull(gpo_sum(e.g, x, -2));
	e_kept(&e, gpo_max(e.g, x, 2), -EINVAL, "dimension");
	gpo_graph_free(e.g);
	ck_assert_int_eq(gpo_graph_new(e.dev, &e.g), 0);
	x = e_in(&e, GPO_F32, 2, 4, 3, 0);
	e_kept(&e, gpo_mean(e.g, x, -3), -EINVAL, "dimension");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_huge)
{
	struct ectx e;
	uint64_t s[2] = { 65536, 65537 };

	e_open(&e);
	e_kept(&e, gpo_tensor_input(e.g, "big", GPO_F32, 2, s), -EFBIG,
	       "2^32");
	gpo_graph_free(e.g);
	ck_assert_int_eq(gpo_graph_new(e.dev, &e.g), 0);
	s[0] = 1ull << 33;
	s[1] = 1;
	e_kept(&e, gpo_tensor_input(e.g, "big", GPO_F32, 2, s), -EFBIG,
	       "big");
	e_close(&e);
}
END_TEST

/* a fresh graph on @e's device */
static void e_renew(struct ectx *e)
{
	gpo_graph_free(e->g);
	ck_assert_int_eq(gpo_graph_new(e->dev, &e->g), 0);
}

START_TEST(test_tensor_err_reshape)
{
	struct ectx e;
	struct gpo_tensor *x;
	uint64_t s[5] = { 4, 5, 1, 1, 1 };

	e_open(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	/* 20 elements for 24 */
	e_kept(&e, gpo_reshape(e.g, x, 2, s), -EINVAL, "elements");
	e_renew(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	s[1] = 6;
	ck_assert_ptr_nonnull(gpo_reshape(e.g, x, 4, s));
	e_kept(&e, gpo_reshape(e.g, x, 5, s), -EINVAL, "dimensions");
	e_renew(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	s[1] = 0;
	e_kept(&e, gpo_reshape(e.g, x, 2, s), -EINVAL, "dimension 1 is 0");
	e_renew(&e);
	/* sizes whose product wraps 64 bits are too many, not equal */
	x = e_in(&e, GPO_F32, 1, 16, 0, 0);
	s[0] = s[1] = s[2] = 1ull << 32 >> 1;
	s[3] = 128;
	e_kept(&e, gpo_reshape(e.g, x, 4, s), -EINVAL, "more than");
	e_renew(&e);
	e_kept(&e, gpo_reshape(e.g, NULL, 1, s), -EINVAL, "NULL");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_permute)
{
	static const int bad[][3] = {
		{ 0, 0, 1 }, { 0, 1, 3 }, { 2, 1, -4 }, { 1, -1, 2 },
	};
	const int good[3] = { 2, 0, 1 };
	struct ectx e;
	struct gpo_tensor *x;
	size_t i;

	e_open(&e);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		x = e_in(&e, GPO_F32, 3, 2, 3, 4);
		ck_assert_ptr_nonnull(gpo_permute(e.g, x, good));
		e_kept(&e, gpo_permute(e.g, x, bad[i]), -EINVAL,
		       "not a permutation");
		e_renew(&e);
	}
	e_kept(&e, gpo_permute(e.g, e_in(&e, GPO_F32, 2, 2, 3, 0), NULL),
	       -EINVAL, "NULL");
	e_renew(&e);
	e_kept(&e, gpo_permute(e.g, e_in(&e, GPO_I32, 2, 2, 3, 0), good),
	       -EINVAL, "i32");
	e_renew(&e);
	/* transpose is a permute: its own checks stay */
	e_kept(&e, gpo_transpose(e.g, e_in(&e, GPO_F32, 2, 2, 3, 0), 0, 2),
	       -EINVAL, "transpose");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_slice)
{
	static const uint64_t bad[][2] = {
		{ 0, 0 }, { 7, 1 }, { 5, 3 }, { 1, UINT64_MAX }, { UINT64_MAX, 2 },
	};
	struct ectx e;
	struct gpo_tensor *x;
	size_t i;

	e_open(&e);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		x = e_in(&e, GPO_F32, 2, 7, 3, 0);
		ck_assert_ptr_nonnull(gpo_slice(e.g, x, 6, 1));
		ck_assert_ptr_nonnull(gpo_slice(e.g, x, 0, 7));
		e_kept(&e, gpo_slice(e.g, x, bad[i][0], bad[i][1]), -EINVAL,
		       "slice");
		e_renew(&e);
	}
	e_kept(&e, gpo_slice(e.g, NULL, 0, 1), -EINVAL, "NULL");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_causal_softmax)
{
	struct ectx e;

	e_open(&e);
	ck_assert_ptr_nonnull(gpo_causal_softmax(e.g, e_in(&e, GPO_F32, 3, 2,
							   5, 5), 0.5));
	e_kept(&e, gpo_causal_softmax(e.g, e_in(&e, GPO_F32, 3, 5, 5, 4),
				      1.0), -EINVAL, "[5, 5, 4]");
	e_renew(&e);
	e_kept(&e, gpo_causal_softmax(e.g, e_in(&e, GPO_F32, 1, 5, 0, 0),
				      1.0), -EINVAL, "T, T");
	e_renew(&e);
	e_kept(&e, gpo_causal_softmax(e.g, e_in(&e, GPO_F32, 2, 5, 5, 0),
				      INFINITY), -EINVAL, "scale");
	e_renew(&e);
	e_kept(&e, gpo_causal_softmax(e.g, e_in(&e, GPO_I32, 2, 5, 5, 0),
				      1.0), -EINVAL, "i32");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_causal_attention)
{
	struct ectx e;
	struct gpo_tensor *q;

	e_open(&e);
	q = e_in(&e, GPO_F32, 3, 2, 5, 7);
	ck_assert_ptr_nonnull(gpo_causal_attention(e.g, q, q, q, 0.5));
	e_kept(&e, gpo_causal_attention(e.g, q, e_in(&e, GPO_F32, 3, 2, 5, 6),
					q, 1.0), -EINVAL, "not one shape");
	e_renew(&e);
	q = e_in(&e, GPO_F32, 3, 2, 5, 7);
	e_kept(&e, gpo_causal_attention(e.g, q, q,
					e_in(&e, GPO_F32, 3, 2, 4, 7), 1.0),
	       -EINVAL, "[2, 4, 7]");
	e_renew(&e);
	q = e_in(&e, GPO_F32, 2, 5, 7, 0);
	e_kept(&e, gpo_causal_attention(e.g, q, q, q, 1.0), -EINVAL,
	       "[BH, T, hd]");
	e_renew(&e);
	q = e_in(&e, GPO_F32, 3, 2, 5, 129);
	e_kept(&e, gpo_causal_attention(e.g, q, q, q, 1.0), -EINVAL,
	       "head size of 129");
	e_renew(&e);
	q = e_in(&e, GPO_F32, 3, 2, 5, 7);
	e_kept(&e, gpo_causal_attention(e.g, q, q, q, NAN), -EINVAL, "scale");
	e_renew(&e);
	q = e_in(&e, GPO_F32, 3, 2, 5, 7);
	e_kept(&e, gpo_causal_attention(e.g, q, q,
					e_in(&e, GPO_I32, 3, 2, 5, 7), 1.0),
	       -EINVAL, "i32");
	e_renew(&e);
	q = e_in(&e, GPO_F32, 3, 2, 5, 7);
	e_kept(&e, gpo_causal_attention(e.g, q, NULL, q, 1.0), -EINVAL,
	       "NULL");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_layer_norm)
{
	struct ectx e;
	struct gpo_tensor *x, *w;

	e_open(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	w = e_in(&e, GPO_F32, 1, 6, 0, 0);
	ck_assert_ptr_nonnull(gpo_layer_norm(e.g, x, w, w, 1e-5));
	e_kept(&e, gpo_layer_norm(e.g, x, e_in(&e, GPO_F32, 1, 4, 0, 0), NULL,
				  1e-5), -EINVAL, "w is [4], not [6]");
	e_renew(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	e_kept(&e, gpo_layer_norm(e.g, x, NULL,
				  e_in(&e, GPO_F32, 2, 1, 6, 0), 1e-5),
	       -EINVAL, "b is [1, 6]");
	e_renew(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	e_kept(&e, gpo_layer_norm(e.g, x, e_in(&e, GPO_I32, 1, 6, 0, 0), NULL,
				  1e-5), -EINVAL, "i32");
	e_renew(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	e_kept(&e, gpo_layer_norm(e.g, x, NULL, NULL, -1e-5), -EINVAL, "eps");
	e_renew(&e);
	x = e_in(&e, GPO_F32, 2, 4, 6, 0);
	e_kept(&e, gpo_layer_norm(e.g, x, NULL, NULL, NAN), -EINVAL, "eps");
	e_renew(&e);
	e_kept(&e, gpo_layer_norm(e.g, e_in(&e, GPO_I32, 2, 4, 6, 0), NULL,
				  NULL, 1e-5), -EINVAL, "i32");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_embedding)
{
	struct ectx e;
	struct gpo_tensor *t, *i4;
	uint64_t s4[4] = { 2, 2, 2, 2 };

	e_open(&e);
	t = e_in(&e, GPO_F32, 2, 9, 4, 0);
	ck_assert_ptr_nonnull(gpo_embedding(e.g, t, e_in(&e, GPO_I32, 3, 2,
							  3, 5)));
	e_kept(&e, gpo_embedding(e.g, t, e_in(&e, GPO_F32, 1, 5, 0, 0)),
	       -EINVAL, "not i32");
	e_renew(&e);
	e_kept(&e, gpo_embedding(e.g, e_in(&e, GPO_F32, 3, 9, 4, 2),
				 e_in(&e, GPO_I32, 1, 5, 0, 0)), -EINVAL,
	       "[9, 4, 2], not [rows, width]");
	e_renew(&e);
	e_kept(&e, gpo_embedding(e.g, e_in(&e, GPO_I32, 2, 9, 4, 0),
				 e_in(&e, GPO_I32, 1, 5, 0, 0)), -EINVAL,
	       "i32");
	e_renew(&e);
	/* the result would have 5 dimensions */
	t = e_in(&e, GPO_F32, 2, 9, 4, 0);
	i4 = gpo_tensor_input(e.g, "i", GPO_I32, 4, s4);
	ck_assert_ptr_nonnull(i4);
	e_kept(&e, gpo_embedding(e.g, t, i4), -EINVAL, "4 dimensions");
	e_renew(&e);
	e_kept(&e, gpo_embedding(e.g, e_in(&e, GPO_F32, 2, 9, 4, 0), NULL),
	       -EINVAL, "NULL");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_dropout)
{
	static const double bad[] = { -0.1, 1.0, 1.5, NAN, -INFINITY };
	struct ectx e;
	struct gpo_tensor *x;
	size_t i;

	e_open(&e);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		x = e_in(&e, GPO_F32, 2, 4, 6, 0);
		/* p = 0 is x itself */
		ck_assert_ptr_eq(gpo_dropout(e.g, x, 0.0, 1), x);
		ck_assert_ptr_nonnull(gpo_dropout(e.g, x, 0.999, 1));
		e_kept(&e, gpo_dropout(e.g, x, bad[i], 1), -EINVAL,
		       "0 <= p < 1");
		e_renew(&e);
	}
	e_kept(&e, gpo_dropout(e.g, e_in(&e, GPO_I32, 1, 4, 0, 0), 0.5, 1),
	       -EINVAL, "i32");
	gpo_graph_set_step(NULL, 3);	/* nothing */
	e_close(&e);
}
END_TEST

/* refused calls that leave the graph as it was: it still runs */
static void e_still_runs(struct ectx *e, struct gpo_tensor *x,
			 struct gpo_tensor *y, const float *xv, size_t n)
{
	float *got = poisoned(n);
	size_t i;

	ck_assert_int_eq(gpo_graph_status(e->g), 0);
	ck_assert_int_eq(gpo_graph_run(e->g, GPO_RUN_FORWARD), 0);
	ck_assert_int_eq(gpo_tensor_read(y, got, n * 4), 0);
	for (i = 0; i < n; i++)
		ck_assert_float_eq_tol(got[i], 2 * xv[i], 1e-6);
	free(got);
	(void)x;
}

START_TEST(test_tensor_err_write_bytes)
{
	struct ectx e;
	struct gpo_tensor *x, *y;
	float v[13], bad[14];
	uint64_t rng = tu_rng("err_write_bytes");

	e_open(&e);
	x = e_in(&e, GPO_F32, 1, 13, 0, 0);
	y = gpo_scale(e.g, x, 2.0);
	tu_fill(v, 13, &rng, -1, 1);
	tu_fill(bad, 14, &rng, -1, 1);
	ck_assert_int_eq(gpo_tensor_write(x, v, sizeof(v)), 0);
	ck_assert_int_eq(gpo_tensor_write(x, bad, sizeof(bad)), -EINVAL);
	tu_check_errmsg("gpo_tensor_write");
	ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "bytes"));
	ck_assert_int_eq(gpo_tensor_write(x, bad, 12 * 4), -EINVAL);
	ck_assert_int_eq(gpo_tensor_read(y, bad, sizeof(bad)), -EINVAL);
	tu_check_errmsg("gpo_tensor_read");
	ck_assert_int_eq(gpo_tensor_write(NULL, v, sizeof(v)), -EINVAL);
	ck_assert_int_eq(gpo_tensor_write(x, NULL, sizeof(v)), -EINVAL);
	e_still_runs(&e, x, y, v, 13);
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_backward_misuse)
{
	struct ectx e;
	struct gpo_tensor *x, *y, *l;
	float v[13], gx[13];
	uint64_t rng = tu_rng("err_backward"), s = 13;
	int i;

	e_open(&e);
	ck_assert_int_eq(gpo_optim_new(e.dev, GPO_SGD, &e.opt), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(e.opt, "w", 1, &s, 0), 0);
	x = gpo_tensor_param(e.g, e.opt, "w");
	y = gpo_scale(e.g, x, 2.0);
	l = gpo_sum(e.g, y, 0);
	/* of a non-scalar */
	ck_assert_int_eq(gpo_graph_backward(e.g, y), -EINVAL);
	tu_check_errmsg("gpo_graph_backward");
	ck_assert_int_eq(gpo_graph_backward(e.g, NULL), -EINVAL);
	/* a run with BACKWARD before any backward */
	ck_assert_int_eq(gpo_graph_run(e.g, GPO_RUN_BACKWARD), -EINVAL);
	tu_check_errmsg("gpo_graph_run");
	ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "backward"));
	ck_assert_int_eq(gpo_graph_run(e.g, 0), -EINVAL);
	ck_assert_int_eq(gpo_graph_run(e.g, 4), -EINVAL);
	ck_assert_int_eq(gpo_graph_status(e.g), 0);
	ck_assert_int_eq(gpo_graph_backward(e.g, l), 0);
	/* twice */
	ck_assert_int_eq(gpo_graph_backward(e.g, l), -EINVAL);
	tu_check_errmsg("gpo_graph_backward again");
	tu_fill(v, 13, &rng, -1, 1);
	ck_assert_int_eq(gpo_optim_write(e.opt, "param", "w", v, sizeof(v)),
			 0);
	e_still_runs(&e, x, y, v, 13);
	/* the first backward is in effect: d sum(2 x) / dx = 2 */
	tu_poison(gx, 13);
	ck_assert_int_eq(gpo_tensor_write(gpo_tensor_grad(x), gx, sizeof(gx)),
			 0);
	ck_assert_int_eq(gpo_graph_run(e.g, GPO_RUN_FORWARD |
				       GPO_RUN_BACKWARD), 0);
	ck_assert_int_eq(gpo_tensor_read(gpo_tensor_grad(x), gx, sizeof(gx)),
			 0);
	for (i = 0; i < 13; i++)
		ck_assert_float_eq(gx[i], 2.0f);
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_ops_after_run)
{
	struct ectx e;
	struct gpo_tensor *x, *y;
	float v[13];
	uint64_t rng = tu_rng("err_after_run");

	e_open(&e);
	x = e_in(&e, GPO_F32, 1, 13, 0, 0);
	y = gpo_scale(e.g, x, 2.0);
	tu_fill(v, 13, &rng, -1, 1);
	ck_assert_int_eq(gpo_tensor_write(x, v, sizeof(v)), 0);
	e_still_runs(&e, x, y, v, 13);
	ck_assert_int_eq(gpo_graph_backward(e.g, gpo_sum(e.g, y, 0)),
			 -EBUSY);
	e_kept(&e, gpo_relu(e.g, y), -EBUSY, "run");
	e_close(&e);
}
END_TEST

START_TEST(test_tensor_err_pool_limit)
{
	struct ectx e;
	struct gpo_pool_stats st0, st;
	struct gpo_tensor *x, *y;
	uint64_t s = 300001, rng = tu_rng("pool_limit");
	float *v;

	e_open(&e);
	x = gpo_tensor_input(e.g, "x", GPO_F32, 1, &s);
	y = gpo_sum(e.g, gpo_mul(e.g, gpo_tanh(e.g, x), x), 0);
	ck_assert_ptr_nonnull(y);
	v = malloc(s * 4);
	ck_assert_ptr_nonnull(v);
	tu_fill(v, s, &rng, -1, 1);
	ck_assert_int_eq(gpo_pool_stats(e.dev, &st0), 0);
	ck_assert_int_eq(gpo_pool_set_limit(e.dev, st0.used_bytes + 4096), 0);
	ck_assert_int_eq(gpo_graph_run(e.g, GPO_RUN_FORWARD), -ENOMEM);
	tu_check_errmsg("gpo_graph_run");
	ck_assert_int_eq(gpo_pool_stats(e.dev, &st), 0);
	ck_assert_uint_eq(st.used_bytes, st0.used_bytes);
	ck_assert_int_eq(gpo_tensor_write(x, v, s * 4), -ENOMEM);
	ck_assert_int_eq(gpo_pool_stats(e.dev, &st), 0);
	ck_assert_uint_eq(st.used_bytes, st0.used_bytes);
	/* with room it plans and runs after all */
	ck_assert_int_eq(gpo_pool_set_limit(e.dev, UINT64_MAX), 0);
	ck_assert_int_eq(gpo_tensor_write(x, v, s * 4), 0);
	ck_assert_int_eq(gpo_graph_run(e.g, GPO_RUN_FORWARD), 0);
	ck_assert_int_eq(gpo_tensor_read(y, v, 4), 0);
	ck_assert(isfinite(v[0]) && v[0] > 0);
	gpo_graph_free(e.g);
	e.g = NULL;
	ck_assert_int_eq(gpo_pool_stats(e.dev, &st), 0);
	ck_assert_uint_eq(st.used_bytes, st0.used_bytes);
	free(v);
	e_close(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tensor");
	TCase *tc = tcase_create("grads");
	TCase *te = tcase_create("errors");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_tensor_matmul_grads, 0, 4);
	tcase_add_loop_test(tc, test_tensor_matmul_batched_grads, 0, 4);
	tcase_add_loop_test(tc, test_tensor_matmul_input_grads, 0, 2);
	tcase_add_test(tc, test_tensor_reuse_accumulates);
	tcase_add_loop_test(tc, test_tensor_sum_terms_share_grads, 0, 5);
	tcase_add_loop_test(tc, test_tensor_broadcast_grads, 0, 4);
	tcase_add_loop_test(tc, test_tensor_unary_grads, 0, U_COUNT);
	tcase_add_loop_test(tc, test_tensor_transpose_grads, 0, 3);
	tcase_add_loop_test(tc, test_tensor_softmax_grads, 0, 2);
	tcase_add_loop_test(tc, test_tensor_reduce_grads, 0, 3);
	tcase_add_loop_test(tc, test_tensor_max_ties_first, 0, 2);
	tcase_add_loop_test(tc, test_tensor_cross_entropy_grads, 0, 2);
	tcase_add_loop_test(tc, test_tensor_mse_one_hot_grads, 0, 2);
	tcase_add_loop_test(tc, test_tensor_reshape_grads, 0, 3);
	tcase_add_loop_test(tc, test_tensor_permute_grads, 0, 5);
	tcase_add_loop_test(tc, test_tensor_slice_grads, 0, 4);
	tcase_add_loop_test(tc, test_tensor_causal_softmax_grads, 0, 3);
	tcase_add_loop_test(tc, test_tensor_attention_grads, 0, 2);
	tcase_add_loop_test(tc, test_tensor_fused_attention_grads, 0, 4);
	tcase_add_loop_test(tc, test_tensor_layer_norm_grads, 0, 3);
	tcase_add_loop_test(tc, test_tensor_embedding_grads, 0, 3);
	tcase_add_loop_test(tc, test_tensor_dropout_grads, 0, 2);
	tcase_add_test(tc, test_tensor_dropout_masks);
	tcase_add_test(tc, test_tensor_i32_views);
	tcase_add_test(tc, test_tensor_attention_fused_matches_composed);
	suite_add_tcase(s, tc);

	tcase_set_timeout(te, 60);
	tcase_add_test(te, test_tensor_err_null_tensor);
	tcase_add_test(te, test_tensor_err_no_broadcast);
	tcase_add_test(te, test_tensor_err_matmul_inner);
	tcase_add_test(te, test_tensor_err_matmul_2d_3d);
	tcase_add_test(te, test_tensor_err_other_graph);
	tcase_add_test(te, test_tensor_err_i32_for_f32);
	tcase_add_test(te, test_tensor_err_labels);
	tcase_add_test(te, test_tensor_err_param_unknown);
	tcase_add_test(te, test_tensor_err_axis);
	tcase_add_test(te, test_tensor_err_huge);
	tcase_add_test(te, test_tensor_err_write_bytes);
	tcase_add_test(te, test_tensor_err_backward_misuse);
	tcase_add_test(te, test_tensor_err_ops_after_run);
	tcase_add_test(te, test_tensor_err_pool_limit);
	tcase_add_test(te, test_tensor_err_reshape);
	tcase_add_test(te, test_tensor_err_permute);
	tcase_add_test(te, test_tensor_err_slice);
	tcase_add_test(te, test_tensor_err_causal_softmax);
	tcase_add_test(te, test_tensor_err_causal_attention);
	tcase_add_test(te, test_tensor_err_layer_norm);
	tcase_add_test(te, test_tensor_err_embedding);
	tcase_add_test(te, test_tensor_err_dropout);
	suite_add_tcase(s, te);
	return tu_run(s);
}
