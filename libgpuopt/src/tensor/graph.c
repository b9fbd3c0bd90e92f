// SPDX-License-Identifier: MIT
/*
 * graph.c - building a graph of tensors (the public op functions: shapes
 * checked and inferred, nothing on the device yet), running it, and
 * moving tensors between host and device
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tensor/tensor_i.h"
#include "optim/optim_i.h"

int gpo_graph_new(struct gpo_device *dev, struct gpo_graph **out)
{
	struct gpo_graph *g;
	int ret;

	if (!dev || !out)
		return gpo__err(-EINVAL, "gpo_graph_new: NULL argument");
	ret = gpo__device_open(dev);
	if (ret)
		return ret;
	g = calloc(1, sizeof(*g));
	if (!g)
		return gpo__err(-ENOMEM, "out of memory");
	g->dev = dev;
	*out = g;
	return 0;
}

void gpo_graph_free(struct gpo_graph *g)
{
	int i;

	if (!g)
		return;
	for (i = 0; i < g->nt; i++) {
		free(g->t[i]->grad);
		free(g->t[i]);
	}
	free(g->t);
	free(g->fwd.v);
	free(g->bwd.v);
	if (g->nblk) {
		/* runs still queued may use the arena: let them finish */
		pthread_mutex_lock(&g->dev->lock);
		g->dev->ops->wait(g->dev, NULL);
		gpo__graph_free_arena(g);
		pthread_mutex_unlock(&g->dev->lock);
	}
	free(g->blk);
	free(g->blk_elems);
	free(g);
}

/*
 * gpo__graph_fail - keep @err (and the message gpo__err() just set) as
 * the graph's first error; returns @err
 */
int gpo__graph_fail(struct gpo_graph *g, int err)
{
	if (!g->err) {
		g->err = err;
		snprintf(g->errmsg, sizeof(g->errmsg), "%s", gpo_errmsg());
	}
	return err;
}

int gpo_graph_status(struct gpo_graph *g)
{
	if (!g)
		return gpo__err(-EINVAL, "NULL graph");
	if (g->err)
		return gpo__err(g->err, "%s", g->errmsg);
	return 0;
}

/* record a failure while building: returns NULL for the op to return */
static struct gpo_tensor *fail(struct gpo_graph *g, int err, const char *fmt,
			       ...) GPO_PRINTF(3, 4);
static struct gpo_tensor *fail(struct gpo_graph *g, int err, const char *fmt,
			       ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpo__err(err, "%s", msg);
	gpo__graph_fail(g, err);
	return NULL;
}

struct gpo_tensor *gpo__tensor_new(struct gpo_graph *g, enum t_op op,
				   enum gpo_dtype dtype, int ndim,
				   const uint32_t *shape)
{
	struct gpo_tensor *t;
	uint64_t numel = 1;
	int i;

	if (g->planned)
		return fail(g, -EBUSY, "the graph has run: it takes no new ops");
	if (ndim < 1 || ndim > T_DIMS)
		return fail(g, -EINVAL, "%d dimensions (1..%d)", ndim, T_DIMS);
	for (i = 0; i < ndim; i++) {
		if (!shape[i])
			return fail(g, -EINVAL, "dimension %d is 0", i);
		numel *= shape[i];
		if (numel > UINT32_MAX)
			return fail(g, -EFBIG, "a tensor of more than 2^32 elements");
	}
	if (g->nt == g->cap) {
		int cap = g->cap ? 2 * g->cap : 32;
		struct gpo_tensor **v = realloc(g->t, cap * sizeof(*v));

		if (!v)
			return fail(g, -ENOMEM, "out of memory");
		g->t = v;
		g->cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return fail(g, -ENOMEM, "out of memory");
	t->g = g;
	t->id = g->nt;
	t->op = op;
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->shape, shape, ndim * sizeof(*shape));
	t->numel = numel;
	t->alpha = 1.0;
	t->axis = -1;
	g->t[g->nt++] = t;
	return t;
}

/* the inputs of an op: all there, all of this graph, all f32 */
static int check_in(struct gpo_graph *g, struct gpo_tensor *a,
		    struct gpo_tensor *b, int nin)
{
	if (!g)
		return gpo__err(-EINVAL, "NULL graph");
	if (g->err)
		return g->err;
	if (!a || (nin > 1 && !b)) {
		fail(g, -EINVAL, "an op was given a NULL tensor");
		return g->err;
	}
	if (a->g != g || (nin > 1 && b->g != g)) {
		fail(g, -EINVAL, "a tensor of another graph");
		return g->err;
	}
	if (a->dtype != GPO_F32 || (nin > 1 && b->dtype != GPO_F32)) {
		fail(g, -EINVAL, "%s: an %s tensor where f32 is needed",
		     a->dtype != GPO_F32 ? a->name : b->name,
		     gpo_dtype_name(a->dtype != GPO_F32 ? a->dtype :
				    b->dtype));
		return g->err;
	}
	return 0;
}

/* check_in() for gpo_matmul(), whose operands may also be f16 inputs */
static int check_mm_in(struct gpo_graph *g, struct gpo_tensor *a,
		       struct gpo_tensor *b)
{
	struct gpo_tensor *bad;

	if (!g)
		return gpo__err(-EINVAL, "NULL graph");
	if (g->err)
		return g->err;
	if (!a || !b) {
		fail(g, -EINVAL, "an op was given a NULL tensor");
		return g->err;
	}
	if (a->g != g || b->g != g) {
		fail(g, -EINVAL, "a tensor of another graph");
		return g->err;
	}
	bad = a->dtype != GPO_F32 && a->dtype != GPO_F16 ? a :
	      b->dtype != GPO_F32 && b->dtype != GPO_F16 ? b : NULL;
	if (bad) {
		fail(g, -EINVAL, "matmul: %s is %s (f32 or f16)", bad->name,
		     gpo_dtype_name(bad->dtype));
		return g->err;
	}
	return 0;
}

static struct gpo_tensor *derive(struct gpo_graph *g, enum t_op op, int ndim,
				 const uint32_t *shape, struct gpo_tensor *a,
				 struct gpo_tensor *b)
{
	struct gpo_tensor *t = gpo__tensor_new(g, op, GPO_F32, ndim, shape);

	if (!t)
		return NULL;
	t->src[0] = a;
	t->src[1] = b;
	t->needs_grad = (a && a->needs_grad) || (b && b->needs_grad);
	return t;
}

struct gpo_tensor *gpo_tensor_input(struct gpo_graph *g, const char *name,
				    enum gpo_dtype dtype, int ndim,
				    const uint64_t *shape)
{
	uint32_t s[T_DIMS];
	struct gpo_tensor *t;
	int i;

	if (!g) {
		gpo__err(-EINVAL, "NULL graph");
		return NULL;
	}
	if (g->err)
		return NULL;
	if (dtype != GPO_F32 && dtype != GPO_I32 && dtype != GPO_F16)
		return fail(g, -EINVAL, "input %s: dtype %s (f32, i32 or f16)",
			    name ? name : "?", gpo_dtype_name(dtype));
	if (!shape || ndim < 1 || ndim > T_DIMS)
		return fail(g, -EINVAL, "input %s: %d dimensions (1..%d)",
			    name ? name : "?", ndim, T_DIMS);
	for (i = 0; i < ndim; i++) {
		if (shape[i] > UINT32_MAX)
			return fail(g, -EFBIG, "input %s: dimension %d is %llu",
				    name ? name : "?", i,
				    (unsigned long long)shape[i]);
		s[i] = (uint32_t)shape[i];
	}
	t = gpo__tensor_new(g, T_INPUT, dtype, ndim, s);
	if (t && name)
		snprintf(t->name, sizeof(t->name), "%s", name);
	return t;
}

struct gpo_tensor *gpo_tensor_param(struct gpo_graph *g,
				    struct gpo_optim *opt, const char *name)
{
	uint32_t s[T_DIMS];
	struct gpo_tensor *t;
	struct optim_tensor *ot;
	int idx, i;

	if (!g || g->err)
		return NULL;
	if (!opt || !name)
		return fail(g, -EINVAL, "gpo_tensor_param: NULL argument");
	if (opt->dev != g->dev)
		return fail(g, -EINVAL, "parameter %s: its optimizer is on %s, the graph on %s",
			    name, opt->dev->info.id, g->dev->info.id);
	/* half parameters: f32 in the graph, cast at its ends (emit.c) */
	if (opt->param_dtype != GPO_F32 && opt->param_dtype != GPO_F16 &&
	    opt->param_dtype != GPO_BF16)
		return fail(g, -ENOSYS, "parameter %s: parameters in %s (f32, f16 or bf16)",
			    name, gpo_dtype_name(opt->param_dtype));
	if (opt->grad_dtype != opt->param_dtype)
		return fail(g, -ENOSYS, "parameter %s: parameters in %s with gradients in %s: a graph writes gradients in the parameters' dtype",
			    name, gpo_dtype_name(opt->param_dtype),
			    gpo_dtype_name(opt->grad_dtype));
	idx = gpo_optim_find_tensor(opt, name);
	if (idx < 0)
		return fail(g, -ENOENT, "the optimizer has no tensor '%s'",
			    name);
	/* one view per optimizer tensor: its gradient has one writer */
	for (i = 0; i < g->nt; i++)
		if (g->t[i]->op == T_PARAM && g->t[i]->opt == opt &&
		    g->t[i]->opt_index == idx)
			return g->t[i];
	ot = &opt->tensors[idx];
	if (ot->ndim < 1 || ot->ndim > T_DIMS)
		return fail(g, -EINVAL, "parameter %s has %d dimensions (1..%d)",
			    name, ot->ndim, T_DIMS);
	for (i = 0; i < ot->ndim; i++)
		s[i] = (uint32_t)ot->shape[i];
	t = gpo__tensor_new(g, T_PARAM, GPO_F32, ot->ndim, s);
	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->opt = opt;
	t->opt_index = idx;
	t->half = opt->param_dtype != GPO_F32;
	t->needs_grad = 1;
	return t;
}

/* the trailing 2 dimensions and the batch of a matmul operand */
static int mat_dims(const struct gpo_tensor *t, uint32_t *batch,
		    uint32_t *rows, uint32_t *cols)
{
	if (t->ndim == 2) {
		*batch = 1;
	} else if (t->ndim == 3) {
		*batch = t->shape[0];
	} else {
		return -1;
	}
	*rows = t->shape[t->ndim - 2];
	*cols = t->shape[t->ndim - 1];
	return 0;
}

struct gpo_tensor *gpo_matmul(struct gpo_graph *g, struct gpo_tensor *a,
			      struct gpo_tensor *b, unsigned int flags)
{
	uint32_t ba, ra, ca, bb, rb, cb, m, k, k2, n, s[3];
	struct gpo_tensor *t;

	if (check_mm_in(g, a, b))
		return NULL;
	if (flags & ~(GPO_MATMUL_TA | GPO_MATMUL_TB))
		return fail(g, -EINVAL, "matmul: unknown flags 0x%x", flags);
	if (mat_dims(a, &ba, &ra, &ca) || mat_dims(b, &bb, &rb, &cb) ||
	    a->ndim != b->ndim)
		return fail(g, -EINVAL, "matmul: operands of %d and %d dimensions (2 and 2, or 3 and 3)",
			    a->ndim, b->ndim);
	if (ba != bb)
		return fail(g, -EINVAL, "matmul: batches of %u and %u", ba, bb);
	m = flags & GPO_MATMUL_TA ? ca : ra;
	k = flags & GPO_MATMUL_TA ? ra : ca;
	k2 = flags & GPO_MATMUL_TB ? cb : rb;
	n = flags & GPO_MATMUL_TB ? rb : cb;
	if (k != k2)
		return fail(g, -EINVAL, "matmul: inner sizes %u and %u differ",
			    k, k2);
	if (a->ndim == 3) {
		s[0] = ba;
		s[1] = m;
		s[2] = n;
	} else {
		s[0] = m;
		s[1] = n;
	}
	t = derive(g, T_MATMUL, a->ndim, s, a, b);
	if (t)
		t->flags = flags;
	return t;
}

/* the input of a view: there and of this graph, of either dtype */
static int check_view(struct gpo_graph *g, struct gpo_tensor *x,
		      const char *what)
{
	if (!g)
		return gpo__err(-EINVAL, "%s: NULL graph", what);
	if (g->err)
		return g->err;
	if (!x) {
		fail(g, -EINVAL, "%s: an op was given a NULL tensor", what);
		return g->err;
	}
	if (x->g != g) {
		fail(g, -EINVAL, "%s: a tensor of another graph", what);
		return g->err;
	}
	/* f16 inputs are read by the matmul kernels alone, as stored */
	if (x->dtype == GPO_F16) {
		fail(g, -EINVAL, "%s: %s is f16, which only matmul takes",
		     what, x->name);
		return g->err;
	}
	return 0;
}

struct gpo_tensor *gpo__tensor_root(struct gpo_tensor *t)
{
	while (t->op == T_RESHAPE)
		t = t->src[0];
	return t;
}

/* a view of @x of the shape @s: its elements, no launch of its own */
static struct gpo_tensor *view(struct gpo_graph *g, enum t_op op,
			       struct gpo_tensor *x, int ndim,
			       const uint32_t *s)
{
	struct gpo_tensor *t = gpo__tensor_new(g, op, x->dtype, ndim, s);

	if (!t)
		return NULL;
	t->src[0] = x;
	t->needs_grad = x->needs_grad;
	snprintf(t->name, sizeof(t->name), "%s", x->name);
	return t;
}

struct gpo_tensor *gpo_reshape(struct gpo_graph *g, struct gpo_tensor *x,
			       int ndim, const uint64_t *shape)
{
	uint32_t s[T_DIMS];
	uint64_t numel = 1;
	int i;

	if (check_view(g, x, "reshape"))
		return NULL;
	if (!shape || ndim < 1 || ndim > T_DIMS)
		return fail(g, -EINVAL, "reshape: %d dimensions (1..%d)", ndim,
			    T_DIMS);
	for (i = 0; i < ndim; i++) {
		if (!shape[i] || shape[i] > UINT32_MAX)
			return fail(g, -EINVAL, "reshape: dimension %d is %llu",
				    i, (unsigned long long)shape[i]);
		s[i] = (uint32_t)shape[i];
		/* both at most 2^32: the product does not wrap */
		numel = numel > x->numel ? numel : numel * shape[i];
	}
	if (numel != x->numel)
		return fail(g, -EINVAL, "reshape: a shape of %s%llu elements for a tensor of %llu",
			    numel > x->numel ? "more than " : "",
			    (unsigned long long)numel,
			    (unsigned long long)x->numel);
	return view(g, T_RESHAPE, x, ndim, s);
}

static struct gpo_tensor *permute(struct gpo_graph *g, struct gpo_tensor *x,
				  const int *perm)
{
	uint32_t s[T_DIMS];
	struct gpo_tensor *t;
	int i;

	for (i = 0; i < x->ndim; i++)
		s[i] = x->shape[perm[i]];
	t = derive(g, T_PERMUTE, x->ndim, s, x, NULL);
	if (t)
		memcpy(t->perm, perm, x->ndim * sizeof(*perm));
	return t;
}

struct gpo_tensor *gpo_permute(struct gpo_graph *g, struct gpo_tensor *x,
			       const int *perm)
{
	int p[T_DIMS], i, seen = 0;
	char msg[64];
	size_t len = 0;

	if (check_in(g, x, NULL, 1))
		return NULL;
	if (!perm)
		return fail(g, -EINVAL, "permute: NULL permutation");
	for (i = 0; i < x->ndim; i++) {
		/* negative dimensions count from the end, as torch's */
		p[i] = perm[i] < 0 ? perm[i] + x->ndim : perm[i];
		if (p[i] < 0 || p[i] >= x->ndim || (seen & (1 << p[i])))
			break;
		seen |= 1 << p[i];
	}
	if (i == x->ndim)
		return permute(g, x, p);
	for (i = 0; i < x->ndim && len < sizeof(msg); i++)
		len += snprintf(msg + len, sizeof(msg) - len, "%s%d",
				i ? ", " : "", perm[i]);
	return fail(g, -EINVAL, "permute: (%s) is not a permutation of %d dimensions",
		    msg, x->ndim);
}

struct gpo_tensor *gpo_slice(struct gpo_graph *g, struct gpo_tensor *x,
			     uint64_t start, uint64_t length)
{
	uint32_t s[T_DIMS];
	struct gpo_tensor *t;

	if (check_view(g, x, "slice"))
		return NULL;
	if (!length || start >= x->shape[0] || length > x->shape[0] - start)
		return fail(g, -EINVAL, "slice: %llu rows from row %llu of a tensor of %u",
			    (unsigned long long)length,
			    (unsigned long long)start, x->shape[0]);
	memcpy(s, x->shape, sizeof(s));
	s[0] = (uint32_t)length;
	t = view(g, T_SLICE, x, x->ndim, s);
	if (t)
		t->start = start;
	return t;
}

struct gpo_tensor *gpo_transpose(struct gpo_graph *g, struct gpo_tensor *x,
				 int d0, int d1)
{
	int perm[T_DIMS], i;

	if (check_in(g, x, NULL, 1))
		return NULL;
	if (d0 < 0)
		d0 += x->ndim;
	if (d1 < 0)
		d1 += x->ndim;
	if (d0 < 0 || d1 < 0 || d0 >= x->ndim || d1 >= x->ndim)
		return fail(g, -EINVAL, "transpose: dimensions %d and %d of %d",
			    d0, d1, x->ndim);
	for (i = 0; i < x->ndim; i++)
		perm[i] = i;
	perm[d0] = d1;
	perm[d1] = d0;
	return permute(g, x, perm);
}

static struct gpo_tensor *binary(struct gpo_graph *g, struct gpo_tensor *a,
				 struct gpo_tensor *b, uint32_t fn)
{
	uint32_t s[T_DIMS];
	int nd, i;
	struct gpo_tensor *t;

	if (check_in(g, a, b, 2))
		return NULL;
	nd = a->ndim > b->ndim ? a->ndim : b->ndim;
	for (i = 0; i < nd; i++) {
		int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
		uint32_t sa = ia >= 0 ? a->shape[ia] : 1;
		uint32_t sb = ib >= 0 ? b->shape[ib] : 1;

		if (sa != sb && sa != 1 && sb != 1)
			return fail(g, -EINVAL, "shapes do not broadcast: dimension %d is %u and %u",
				    i, sa, sb);
		s[i] = sa > sb ? sa : sb;
	}
	t = derive(g, T_BINARY, nd, s, a, b);
	if (t)
		t->fn = fn;
	return t;
}

struct gpo_tensor *gpo_add(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b)
{
	return binary(g, a, b, GPO_EW_ADD);
}

struct gpo_tensor *gpo_sub(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b)
{
	return binary(g, a, b, GPO_EW_SUB);
}

struct gpo_tensor *gpo_mul(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b)
{
	return binary(g, a, b, GPO_EW_MUL);
}

struct gpo_tensor *gpo_div(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b)
{
	return binary(g, a, b, GPO_EW_DIV);
}

static struct gpo_tensor *unary(struct gpo_graph *g, struct gpo_tensor *x,
				uint32_t fn, double alpha)
{
	struct gpo_tensor *t;

	if (check_in(g, x, NULL, 1))
		return NULL;
	t = derive(g, T_UNARY, x->ndim, x->shape, x, NULL);
	if (t) {
		t->fn = fn;
		t->alpha = alpha;
	}
	return t;
}

struct gpo_tensor *gpo_scale(struct gpo_graph *g, struct gpo_tensor *x,
			     double alpha)
{
	if (g && !g->err && !isfinite(alpha))
		return fail(g, -EINVAL, "scale by %g", alpha);
	return unary(g, x, GPO_EW_COPY, alpha);
}

#define UNARY_FN(name, fn) \
struct gpo_tensor *gpo_##name(struct gpo_graph *g, struct gpo_tensor *x) \
{ \
	return unary(g, x, fn, 1.0); \
}

UNARY_FN(relu, GPO_EW_RELU)
UNARY_FN(gelu, GPO_EW_GELU)
UNARY_FN(gelu_tanh, GPO_EW_GELU_TANH)
UNARY_FN(tanh, GPO_EW_TANH)
UNARY_FN(sigmoid, GPO_EW_SIGMOID)
UNARY_FN(exp, GPO_EW_EXP)
UNARY_FN(log, GPO_EW_LOG)
UNARY_FN(square, GPO_EW_SQUARE)
UNARY_FN(sqrt, GPO_EW_SQRT)

static struct gpo_tensor *softmax(struct gpo_graph *g, struct gpo_tensor *x,
				  uint32_t fn)
{
	struct gpo_tensor *t;

	if (check_in(g, x, NULL, 1))
		return NULL;
	t = derive(g, T_SOFTMAX, x->ndim, x->shape, x, NULL);
	if (t)
		t->fn = fn;
	return t;
}

struct gpo_tensor *gpo_softmax(struct gpo_graph *g, struct gpo_tensor *x)
{
	return softmax(g, x, GPO_SM_SOFTMAX);
}

struct gpo_tensor *gpo_log_softmax(struct gpo_graph *g, struct gpo_tensor *x)
{
	return softmax(g, x, GPO_SM_LOG_SOFTMAX);
}

/* @t's shape as "[a, b, c]" into @buf */
static const char *shape_str(const struct gpo_tensor *t, char *buf,
			     size_t size)
{
	size_t len = 0;
	int i;

	for (i = 0; i < t->ndim && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%u", i ? ", " : "[",
				t->shape[i]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
	return buf;
}

struct gpo_tensor *gpo_causal_softmax(struct gpo_graph *g,
				      struct gpo_tensor *x, double scale)
{
	struct gpo_tensor *t;
	char sh[64];

	if (check_in(g, x, NULL, 1))
		return NULL;
	if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2])
		return fail(g, -EINVAL, "causal_softmax: x is %s, not [..., T, T]",
			    shape_str(x, sh, sizeof(sh)));
	if (!isfinite(scale))
		return fail(g, -EINVAL, "causal_softmax: scale %g", scale);
	t = softmax(g, x, GPO_SM_CAUSAL);
	if (t)
		t->alpha = scale;
	return t;
}

/* the scale or the shift of a layer norm over rows of @len: [len] f32 */
static int check_affine(struct gpo_graph *g, struct gpo_tensor *v,
			const char *what, uint32_t len)
{
	char sh[64];

	if (!v)
		return 0;
	if (check_in(g, v, NULL, 1))
		return g->err;
	if (v->ndim != 1 || v->shape[0] != len) {
		fail(g, -EINVAL, "layer_norm: %s is %s, not [%u]", what,
		     shape_str(v, sh, sizeof(sh)), len);
		return g->err;
	}
	return 0;
}

struct gpo_tensor *gpo_layer_norm(struct gpo_graph *g, struct gpo_tensor *x,
				  struct gpo_tensor *w, struct gpo_tensor *b,
				  double eps)
{
	struct gpo_tensor *y;
	uint32_t len;

	if (check_in(g, x, NULL, 1))
		return NULL;
	len = x->shape[x->ndim - 1];
	if (check_affine(g, w, "w", len) || check_affine(g, b, "b", len))
		return NULL;
	if (!(eps >= 0) || !isfinite(eps))
		return fail(g, -EINVAL, "layer_norm: eps %g (finite, >= 0)",
			    eps);
	/* the affine part is mul and add: their gradients come with them */
	y = derive(g, T_LAYERNORM, x->ndim, x->shape, x, NULL);
	if (y)
		y->eps = eps;
	if (w)
		y = gpo_mul(g, y, w);
	if (b)
		y = gpo_add(g, y, b);
	return y;
}

struct gpo_tensor *gpo_embedding(struct gpo_graph *g, struct gpo_tensor *table,
				 struct gpo_tensor *idx)
{
	uint32_t s[T_DIMS];
	char sh[64];

	if (check_in(g, table, NULL, 1))
		return NULL;
	if (table->ndim != 2)
		return fail(g, -EINVAL, "embedding: the table is %s, not [rows, width]",
			    shape_str(table, sh, sizeof(sh)));
	if (!idx || idx->g != g)
		return fail(g, -EINVAL, "embedding: the indices are NULL or of another graph");
	if (idx->dtype != GPO_I32)
		return fail(g, -EINVAL, "embedding: the indices are %s, not i32",
			    gpo_dtype_name(idx->dtype));
	if (idx->ndim >= T_DIMS)
		return fail(g, -EINVAL, "embedding: indices of %d dimensions (at most %d)",
			    idx->ndim, T_DIMS - 1);
	memcpy(s, idx->shape, idx->ndim * sizeof(*s));
	s[idx->ndim] = table->shape[1];
	return derive(g, T_EMBEDDING, idx->ndim + 1, s, table, idx);
}

struct gpo_tensor *gpo_dropout(struct gpo_graph *g, struct gpo_tensor *x,
			       double p, uint64_t seed)
{
	struct gpo_tensor *t;
	double th;

	if (check_in(g, x, NULL, 1))
		return NULL;
	if (!(p >= 0 && p < 1))
		return fail(g, -EINVAL, "dropout: p %g (0 <= p < 1)", p);
	if (p == 0)
		return x;
	t = unary(g, x, GPO_EW_DROPOUT, 1.0 / (1.0 - p));
	if (!t)
		return NULL;
	/* an element is dropped when its draw is below p 2^32 */
	th = floor(p * 4294967296.0 + 0.5);
	t->thresh = th > UINT32_MAX ? UINT32_MAX : (uint32_t)th;
	t->seed = seed;
	t->site = g->ndropout++;
	return t;
}

struct gpo_tensor *gpo_causal_attention(struct gpo_graph *g,
					struct gpo_tensor *q,
					struct gpo_tensor *k,
					struct gpo_tensor *v, double scale)
{
	char sq[64], sk[64], sv[64];
	struct gpo_tensor *t;

	if (check_in(g, q, k, 2) || check_in(g, v, NULL, 1))
		return NULL;
	if (q->ndim != 3)
		return fail(g, -EINVAL, "causal_attention: q is %s, not [BH, T, hd]",
			    shape_str(q, sq, sizeof(sq)));
	if (k->ndim != 3 || v->ndim != 3 ||
	    memcmp(q->shape, k->shape, 3 * sizeof(q->shape[0])) ||
	    memcmp(q->shape, v->shape, 3 * sizeof(q->shape[0])))
		return fail(g, -EINVAL, "causal_attention: q is %s, k %s, v %s: not one shape",
			    shape_str(q, sq, sizeof(sq)),
			    shape_str(k, sk, sizeof(sk)),
			    shape_str(v, sv, sizeof(sv)));
	if (q->shape[2] > GPO_ATTN_MAX_HD)
		return fail(g, -EINVAL, "causal_attention: a head size of %u (at most %d)",
			    q->shape[2], GPO_ATTN_MAX_HD);
	if (!isfinite(scale))
		return fail(g, -EINVAL, "causal_attention: scale %g", scale);
	t = derive(g, T_ATTENTION, 3, q->shape, q, k);
	if (t) {
		t->src[2] = v;
		t->needs_grad |= v->needs_grad;
		t->alpha = scale;
	}
	return t;
}

void gpo_graph_set_step(struct gpo_graph *g, uint64_t step)
{
	if (g)
		g->step = step;
}

int gpo_graph_set_matmul_f16(struct gpo_graph *g, int on)
{
	if (!g)
		return gpo__err(-EINVAL, "NULL graph");
	if (on != 0 && on != 1)
		return gpo__err(-EINVAL, "matmul_f16: %d (0 or 1)", on);
	if (g->planned)
		return gpo__err(-EBUSY, "matmul_f16: the graph has run; set it before");
	g->mm_f16 = on;
	return 0;
}

/* a reduction over @axis, or over everything (@all: axis T_DIMS) */
static struct gpo_tensor *reduce(struct gpo_graph *g, struct gpo_tensor *x,
				 int axis, uint32_t fn, int mean, int all)
{
	uint32_t s[T_DIMS], one = 1;
	struct gpo_tensor *t;
	int nd = 0, i;

	if (check_in(g, x, NULL, 1))
		return NULL;
	if (all) {
		axis = T_DIMS;
		t = derive(g, T_REDUCE, 1, &one, x, NULL);
		if (t)
			t->alpha = mean ? 1.0 / (double)x->numel : 1.0;
	} else {
		if (axis < 0)
			axis += x->ndim;
		if (axis < 0 || axis >= x->ndim)
			return fail(g, -EINVAL, "reduction over dimension %d of %d",
				    axis, x->ndim);
		for (i = 0; i < x->ndim; i++)
			if (i != axis)
				s[nd++] = x->shape[i];
		if (!nd)
			s[nd++] = 1;
		t = derive(g, T_REDUCE, nd, s, x, NULL);
		if (t)
			t->alpha = mean ? 1.0 / (double)x->shape[axis] : 1.0;
	}
	if (t) {
		t->fn = fn;
		t->axis = axis;
	}
	return t;
}

struct gpo_tensor *gpo_sum(struct gpo_graph *g, struct gpo_tensor *x,
			   int axis)
{
	return reduce(g, x, axis, GPO_RED_SUM, 0, 0);
}

struct gpo_tensor *gpo_mean(struct gpo_graph *g, struct gpo_tensor *x,
			    int axis)
{
	return reduce(g, x, axis, GPO_RED_SUM, 1, 0);
}

struct gpo_tensor *gpo_max(struct gpo_graph *g, struct gpo_tensor *x,
			   int axis)
{
	return reduce(g, x, axis, GPO_RED_MAX, 0, 0);
}

/* logits [rows, classes] f32 and labels [rows] i32 */
static int check_labels(struct gpo_graph *g, const char *what,
			struct gpo_tensor *logits, struct gpo_tensor *labels)
{
	if (!g)
		return gpo__err(-EINVAL, "%s: NULL graph", what);
	if (g->err)
		return g->err;
	if (!logits || !labels || logits->g != g || labels->g != g) {
		fail(g, -EINVAL, "%s: a NULL tensor or one of another graph",
		     what);
		return g->err;
	}
	if (logits->dtype != GPO_F32 || logits->ndim != 2) {
		fail(g, -EINVAL, "%s: logits must be f32 [rows, classes]", what);
		return g->err;
	}
	if (labels->dtype != GPO_I32 || labels->ndim != 1 ||
	    labels->shape[0] != logits->shape[0]) {
		fail(g, -EINVAL, "%s: labels must be i32 [%u]", what,
		     logits->shape[0]);
		return g->err;
	}
	return 0;
}

struct gpo_tensor *gpo_cross_entropy(struct gpo_graph *g,
				     struct gpo_tensor *logits,
				     struct gpo_tensor *labels)
{
	uint32_t one = 1;

	if (check_labels(g, "cross_entropy", logits, labels))
		return NULL;
	return derive(g, T_XENT, 1, &one, logits, labels);
}

struct gpo_tensor *gpo_accuracy(struct gpo_graph *g, struct gpo_tensor *logits,
				struct gpo_tensor *labels)
{
	uint32_t one = 1;
	struct gpo_tensor *t;

	if (check_labels(g, "accuracy", logits, labels))
		return NULL;
	t = derive(g, T_ACCURACY, 1, &one, logits, labels);
	if (t)
		t->needs_grad = 0;
	return t;
}

struct gpo_tensor *gpo_one_hot(struct gpo_graph *g, struct gpo_tensor *labels,
			       uint32_t classes)
{
	uint32_t s[2];
	struct gpo_tensor *t;

	if (!g) {
		gpo__err(-EINVAL, "one_hot: NULL graph");
		return NULL;
	}
	if (g->err)
		return NULL;
	if (!labels || labels->g != g || labels->dtype != GPO_I32 ||
	    labels->ndim != 1)
		return fail(g, -EINVAL, "one_hot: labels must be an i32 vector of this graph");
	if (!classes || classes > 4096)
		return fail(g, -EINVAL, "one_hot: %u classes (1..4096)",
			    classes);
	s[0] = labels->shape[0];
	s[1] = classes;
	t = derive(g, T_ONE_HOT, 2, s, labels, NULL);
	if (t) {
		t->classes = classes;
		t->needs_grad = 0;
	}
	return t;
}

struct gpo_tensor *gpo_mse(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b)
{
	if (check_in(g, a, b, 2))
		return NULL;
	if (a->numel != b->numel || a->ndim != b->ndim ||
	    memcmp(a->shape, b->shape, a->ndim * sizeof(a->shape[0])))
		return fail(g, -EINVAL, "mse: the two tensors differ in shape");
	return reduce(g, gpo_square(g, gpo_sub(g, a, b)), 0, GPO_RED_SUM, 1,
		      1);
}

int gpo_graph_backward(struct gpo_graph *g, struct gpo_tensor *loss)
{
	int i, ret;

	if (!g)
		return gpo__err(-EINVAL, "NULL graph");
	if (g->err)
		return gpo_graph_status(g);
	if (g->planned || g->loss)
		return gpo__err(-EINVAL, "backward: once per graph, before it runs");
	if (!loss || loss->g != g || loss->numel != 1 ||
	    loss->dtype != GPO_F32)
		return gpo__err(-EINVAL, "backward: the loss must be an f32 [1] tensor of this graph");
	/* which tensors lie between a parameter and the loss */
	loss->wants_grad = loss->needs_grad;
	for (i = loss->id; i >= 0; i--) {
		struct gpo_tensor *t = g->t[i];
		int s;

		if (!t->wants_grad)
			continue;
		for (s = 0; s < 3; s++)
			if (t->src[s] && t->src[s]->needs_grad)
				t->src[s]->wants_grad = 1;
	}
	g->loss = loss;
	ret = gpo__graph_make_grads(g);
	if (ret) {
		g->loss = NULL;
		for (i = 0; i < g->nt; i++) {
			g->t[i]->wants_grad = 0;
			free(g->t[i]->grad);
			g->t[i]->grad = NULL;
		}
	}
	return ret;
}

/* do the parameters' views still show their optimizers' buffers? */
static int params_moved(struct gpo_graph *g)
{
	int i;

	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *t = g->t[i];

		if (t->op == T_PARAM && t->half) {
			if (t->half_of[0].mem != t->opt->param.mem ||
			    t->half_of[0].off != t->opt->param.off ||
			    t->half_of[1].mem != t->opt->grad.mem ||
			    t->half_of[1].off != t->opt->grad.off)
				return 1;
			continue;
		}
		if (t->op == T_PARAM &&
		    (t->st.blk.mem != t->opt->param.mem ||
		     t->st.blk.off != t->opt->param.off ||
		     (t->grad && (t->grad->st.blk.mem != t->opt->grad.mem ||
				  t->grad->st.blk.off != t->opt->grad.off))))
			return 1;
	}
	return 0;
}

int gpo__graph_seed_from(struct gpo_graph *g, const struct dev_buf *buf,
			 uint64_t elem)
{
	if (g->planned)
		return gpo__err(-EBUSY, "the backward seed is set before the graph is planned");
	g->seed_dev = 1;
	g->seed.blk = *buf;
	g->seed.elem = elem;
	return 0;
}

int gpo__graph_plan(struct gpo_graph *g)
{
	int ret;

	if (g->planned) {
		ret = params_moved(g) ? gpo__graph_reemit(g) : 0;
		/* the dropouts draw for the step set last */
		if (!ret && g->step != g->step_launched)
			gpo__graph_patch_step(g);
		return ret;
	}
	if (g->err)
		return gpo_graph_status(g);
	if (!g->nt)
		return gpo__err(-EINVAL, "an empty graph");
	ret = gpo__graph_emit(g);
	if (ret)
		return ret;
	g->planned = 1;
	return 0;
}

static int launch_list(struct gpo_device *dev, struct llist *l)
{
	size_t i;
	int ret;

	for (i = 0; i < l->n; i++) {
		l->v[i].call.args = &l->v[i].a;
		ret = gpo__launch(dev, &l->v[i].call);
		if (ret)
			return ret;
	}
	return 0;
}

int gpo__graph_launch(struct gpo_graph *g, unsigned int what)
{
	int ret;

	ret = gpo__graph_plan(g);
	if (ret)
		return ret;
	if (what & GPO_RUN_FORWARD) {
		ret = launch_list(g->dev, &g->fwd);
		if (ret)
			return ret;
	}
	if (what & GPO_RUN_BACKWARD)
		ret = launch_list(g->dev, &g->bwd);
	return ret;
}

int gpo__graph_launch_range(struct gpo_graph *g, int forward, size_t from,
			    size_t to)
{
	struct llist part;
	int ret;

	ret = gpo__graph_plan(g);
	if (ret)
		return ret;
	if (from > to || to > g->bwd.n)
		return gpo__err(-EINVAL, "backward launches %zu..%zu of %zu",
				from, to, g->bwd.n);
	if (forward) {
		ret = launch_list(g->dev, &g->fwd);
		if (ret)
			return ret;
	}
	/* a window of the list: launch_list() only reads v and n */
	part.v = g->bwd.v + from;
	part.n = to - from;
	part.cap = part.n;
	return launch_list(g->dev, &part);
}

size_t gpo__graph_bwd_launches(const struct gpo_graph *g)
{
	return g->bwd.n;
}

int gpo__graph_last_writers(const struct gpo_graph *g,
			    const struct dev_buf *buf, uint64_t unit,
			    uint64_t n, int64_t *last)
{
	uint64_t k, lo, hi, b0, b1;
	size_t i;
	unsigned int j;

	if (!g || !buf || !buf->mem || !unit || !last)
		return gpo__err(-EINVAL, "gpo__graph_last_writers: bad arguments");
	if (n != (buf->size + unit - 1) / unit)
		return gpo__err(-EINVAL, "%llu ranges of %llu bytes do not cover %llu bytes",
				(unsigned long long)n, (unsigned long long)unit,
				(unsigned long long)buf->size);
	for (k = 0; k < n; k++)
		last[k] = -1;
	/*
	 * Every written binding that overlaps @buf: a binding starts at a
	 * 256-byte boundary below its tensor (gpo__view_bind), so it may
	 * reach into a neighbour's bytes; that only makes a range's last
	 * write later than it is, never earlier. A later launch that
	 * writes a range again (a gradient added to, as the tied
	 * embedding's) moves its entry on: the list is in launch order.
	 */
	for (i = 0; i < g->bwd.n; i++) {
		const struct op_call *c = &g->bwd.v[i].call;
		const struct gpo__op *d = &gpo__ops[c->op];

		for (j = 0; j < d->nbuf; j++) {
			const struct dev_buf *b = &c->buf[j];

			if (!(d->buf[j].role & OP_W) || b->mem != buf->mem ||
			    !b->size)
				continue;
			lo = b->off > buf->off ? b->off : buf->off;
			hi = b->off + b->size < buf->off + buf->size ?
			     b->off + b->size : buf->off + buf->size;
			if (lo >= hi)
				continue;
			b0 = (lo - buf->off) / unit;
			b1 = (hi - buf->off - 1) / unit;
			for (k = b0; k <= b1; k++)
				last[k] = (int64_t)i;
		}
	}
	return 0;
}

int gpo_graph_run(struct gpo_graph *g, unsigned int what)
{
	int ret;

	if (!g)
		return gpo__err(-EINVAL, "NULL graph");
	if (!what || (what & ~(GPO_RUN_FORWARD | GPO_RUN_BACKWARD)))
		return gpo__err(-EINVAL, "gpo_graph_run: what 0x%x", what);
	/* an op that failed after the first run is not in the plan: refuse */
	if (g->err)
		return gpo_graph_status(g);
	if ((what & GPO_RUN_BACKWARD) && !g->loss)
		return gpo__err(-EINVAL, "no backward pass: call gpo_graph_backward() first");
	pthread_mutex_lock(&g->dev->lock);
	ret = gpo__graph_launch(g, what);
	pthread_mutex_unlock(&g->dev->lock);
	return ret;
}

static int tensor_io(struct gpo_tensor *t, void *host, size_t bytes,
		     int write)
{
	struct gpo_device *dev;
	struct dev_buf b;
	uint64_t es;
	int ret;

	if (!t || !host)
		return gpo__err(-EINVAL, "NULL argument");
	es = gpo_dtype_size(t->dtype);
	if (bytes != t->numel * es)
		return gpo__err(-EINVAL, "%s: %zu bytes, the tensor holds %llu",
				t->name[0] ? t->name : "tensor", bytes,
				(unsigned long long)(t->numel * es));
	dev = t->g->dev;
	pthread_mutex_lock(&dev->lock);
	ret = gpo__graph_plan(t->g);
	if (ret)
		goto out_unlock;
	b = t->st.blk;
	/* the arena counts 4-byte elements: an f16 tensor fills half its place */
	b.off += t->st.elem * 4;
	b.size = bytes;
	if (write)
		ret = dev->ops->write(dev, &b, 0, host, bytes);
	else
		ret = dev->ops->read(dev, &b, 0, host, bytes);
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int gpo_tensor_write(struct gpo_tensor *t, const void *src, size_t bytes)
{
	return tensor_io(t, (void *)src, bytes, 1);
}

int gpo_tensor_read(struct gpo_tensor *t, void *dst, size_t bytes)
{
	return tensor_io(t, dst, bytes, 0);
}

struct gpo_tensor *gpo_tensor_grad(struct gpo_tensor *t)
{
	return t ? t->grad : NULL;
}

int gpo_tensor_shape(const struct gpo_tensor *t, uint64_t *shape)
{
	int i;

	if (!t)
		return gpo__err(-EINVAL, "NULL tensor");
	for (i = 0; shape && i < t->ndim; i++)
		shape[i] = t->shape[i];
	return t->ndim;
}

uint64_t gpo_tensor_numel(const struct gpo_tensor *t)
{
	return t ? t->numel : 0;
}
