// SPDX-License-Identifier: MIT
/*
 * emit.c - planning a graph: places in the arena, and each op's forward
 * and backward launches
 *
 * Backward walks the tensors from the loss back, and each op adds its
 * inputs' gradient contributions: the first contribution to a gradient
 * writes it, later ones add to it (GPO_T_ACCUM), so no gradient is ever
 * cleared and a parameter's gradient lands in its optimizer's buffer.
 * The rules, with dC the gradient of an op's output:
 *	C = op(A) op(B)	dA = dC op(B)^T (or its transpose), dB likewise
 *	C = A + B	dA = sum_to(dC), dB = sum_to(dC) (sum over the
 *			dimensions broadcasting stretched)
 *	C = A - B	dB = -sum_to(dC)
 *	C = A * B	dA = sum_to(dC * B), dB = sum_to(dC * A)
 *	C = A / B	dA = sum_to(dC / B), dB = -sum_to(dC * C / B)
 *	C = f(A)	dA = dC f'(A)                  (unary_bwd)
 *	C = permute(A)	dA = the inverse permute of dC
 *	C = A[s:s+n]	dA[s:s+n] += dC (the rest of dA 0 if unwritten)
 *	C = T[idx]	dT = the rows of dC summed by index (embed_bwd)
 *	softmax, reductions, cross-entropy, layer norm: their _bwd kernels
 *	causal attention: attn_bwd_d, then attn_bwd_dkdv and attn_bwd_dq
 * A reshape is its source's memory, and its gradient its source's: a
 * contribution to it is one to the source, and it has no backward.
 *
 * A parameter of an optimizer with f16/bf16 parameters is f32 in the
 * graph: forward starts by widening the optimizer's half elements
 * (exactly) into the parameter's place in the arena, backward computes
 * its f32 gradient there and ends by rounding it to nearest even into
 * the optimizer's half grad buffer. Activations stay f32.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tensor/tensor_i.h"
#include "optim/optim_i.h"
#include "core/rng_i.h"

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

void gpo__view_bind(const struct tview *v, uint64_t n, struct dev_buf *out,
		    uint32_t *off)
{
	uint64_t start = v->blk.off + v->elem * 4, base = start & ~255ull;

	out->mem = v->blk.mem;
	out->off = base;
	out->size = start - base + n * 4;
	*off = (uint32_t)((start - base) / 4);
}

/*
 * place - a place for @n elements in the arena: in the block being
 * filled, or at the start of the next one when it would not fit there.
 * The dry pass counts each block's elements; a place larger than a block
 * may be, or no memory for the count, is kept in g->plan_err.
 */
static void place(struct gpo_graph *g, struct tview *v, uint64_t n)
{
	uint64_t sz = align_up(n, T_ALIGN);

	if (sz > g->blk_limit) {
		if (!g->plan_err)
			g->plan_err = gpo__err(-EFBIG, "%s: a tensor of %llu elements is more than one allocation may hold (%llu bytes)",
					       g->dev->info.id,
					       (unsigned long long)n,
					       (unsigned long long)g->blk_limit * 4);
		sz = 0;
	}
	if (g->bump && g->bump + sz > g->blk_limit) {
		g->cur++;
		g->bump = 0;
	}
	if (g->dry) {
		if (g->cur >= g->nblk) {
			uint64_t *e = realloc(g->blk_elems,
					      (g->cur + 1) * sizeof(*e));

			if (!e) {
				if (!g->plan_err)
					g->plan_err = gpo__err(-ENOMEM, "out of memory");
				return;
			}
			g->blk_elems = e;
			g->blk_elems[g->cur] = 0;
			g->nblk = g->cur + 1;
		}
		memset(&v->blk, 0, sizeof(v->blk));
	} else {
		v->blk = g->blk[g->cur];
	}
	v->elem = g->bump;
	g->bump += sz;
	if (g->dry)
		g->blk_elems[g->cur] = g->bump;
}

/* a new launch of @op at the end of @l (on the dry pass: a scratch one) */
static struct launch *push(struct gpo_graph *g, struct llist *l,
			   enum gpo__op_id op, uint64_t work)
{
	struct launch *x;

	if (g->dry) {
		x = &g->scratch;
	} else {
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 64;
			struct launch *v = realloc(l->v, cap * sizeof(*v));

			if (!v)
				return NULL;
			l->v = v;
			l->cap = cap;
		}
		x = &l->v[l->n++];
	}
	memset(x, 0, sizeof(*x));
	x->call.op = op;
	x->call.dtype = GPO_F32;
	x->call.work = work;
	return x;
}

static uint32_t groups_for(uint64_t items)
{
	uint64_t gr = (items + GPO_WG_SIZE - 1) / GPO_WG_SIZE;

	if (!gr)
		gr = 1;
	return gr > T_GROUPS_CAP ? T_GROUPS_CAP : (uint32_t)gr;
}

static uint32_t rows_groups(uint64_t rows)
{
	return rows > T_GROUPS_CAP ? T_GROUPS_CAP : (uint32_t)(rows ? rows : 1);
}

/*
 * the first contribution to @t's gradient writes it, the others add; a
 * reshape's gradient is its source's, so their contributions count as one
 */
static uint32_t acc(struct gpo_tensor *t)
{
	struct gpo_tensor *r = gpo__tensor_root(t);
	uint32_t f = r->grad_written ? GPO_T_ACCUM : 0;

	r->grad_written = 1;
	return f;
}

/* @t's shape with leading 1s to T_DIMS dimensions, and its strides */
static void pad4(const struct gpo_tensor *t, uint32_t *s)
{
	int i, k = T_DIMS - t->ndim;

	for (i = 0; i < T_DIMS; i++)
		s[i] = i < k ? 1 : t->shape[i - k];
}

static void strides4(const uint32_t *s, uint32_t *st)
{
	int i;

	st[T_DIMS - 1] = 1;
	for (i = T_DIMS - 2; i >= 0; i--)
		st[i] = st[i + 1] * s[i + 1];
}

static uint64_t prod(const uint32_t *s, int from, int to)
{
	uint64_t p = 1;
	int i;

	for (i = from; i < to; i++)
		p *= s[i];
	return p;
}

/* ---- launches of each kernel -------------------------------------------- */

/*
 * ew_merge - @shape (the output's) and the strides @sa, @sb (either may be
 * NULL) with every run of dimensions that each view walks as one merged
 * into one, and dimensions of 1 dropped, right-aligned as before: the
 * same element at each index i. A contiguous view becomes one dimension,
 * a broadcast bias two, and the kernels skip the divisions of the
 * dimensions that are 1 (ew.glsl's ew_offset, ew.cl's view_at).
 */
static void ew_merge(uint32_t *shape, uint32_t *sa, uint32_t *sb)
{
	uint32_t s[T_DIMS], a[T_DIMS], b[T_DIMS];
	int d, k = T_DIMS;

	for (d = T_DIMS - 1; d >= 0; d--) {
		uint32_t ad = sa ? sa[d] : 0, bd = sb ? sb[d] : 0;

		if (shape[d] == 1)
			continue;
		if (k < T_DIMS && (uint64_t)a[k] * s[k] == ad &&
		    (uint64_t)b[k] * s[k] == bd) {
			s[k] *= shape[d];
			continue;
		}
		k--;
		s[k] = shape[d];
		a[k] = ad;
		b[k] = bd;
	}
	for (d = 0; d < T_DIMS; d++) {
		shape[d] = d < k ? 1 : s[d];
		if (sa)
			sa[d] = d < k ? 0 : a[d];
		if (sb)
			sb[d] = d < k ? 0 : b[d];
	}
}

/* can an input at @off with strides @s be read in quads (abi/ew.h)? */
static int quad_in(const uint32_t *s, uint32_t off)
{
	return !s[3] || (s[3] == 1 && !((off | s[0] | s[1] | s[2]) % 4));
}

/* ew()'s GPO_EW_QUADS: where @e's launch may go four elements at a time */
static int quads(enum gpo__op_id op, const struct gpo_ew_args *e, int has_b)
{
	/* all three contiguous, at offsets of 4k */
	if (op == OP_UNARY_BWD)
		return !(e->n % 4) && !((e->off_a | e->off_b | e->off_y) % 4);
	if (op != OP_UNARY && !(op == OP_BINARY && e->fn != GPO_EW_DIV))
		return 0;
	return !(e->n % 4) && !(e->shape[3] % 4) && !(e->off_y % 4) &&
	       quad_in(e->sa, e->off_a) && (!has_b || quad_in(e->sb, e->off_b));
}

/*
 * ew - an element-wise launch over the contiguous output @y of shape
 * @shape: x/a at @a with strides @sa (@na elements), b likewise
 */
static int ew(struct gpo_graph *g, struct llist *l, enum gpo__op_id op,
	      uint32_t fn, uint32_t flags, const uint32_t *shape,
	      const struct tview *a, uint64_t na, const uint32_t *sa,
	      const struct tview *b, uint64_t nb, const uint32_t *sb,
	      const struct tview *y, float alpha)
{
	uint64_t n = prod(shape, 0, T_DIMS);
	uint32_t gr = groups_for(n);
	struct launch *x = push(g, l, op, gr);
	struct gpo_ew_args *e;
	int i = 0;

	if (!x)
		return -ENOMEM;
	e = &x->a.ew;
	e->n = (uint32_t)n;
	e->groups = gr;
	e->fn = fn;
	e->flags = flags;
	memcpy(e->shape, shape, sizeof(e->shape));
	if (sa)
		memcpy(e->sa, sa, sizeof(e->sa));
	if (sb)
		memcpy(e->sb, sb, sizeof(e->sb));
	ew_merge(e->shape, sa ? e->sa : NULL, sb ? e->sb : NULL);
	e->alpha = alpha;
	gpo__view_bind(a, na, &x->call.buf[i++], &e->off_a);
	if (b)
		gpo__view_bind(b, nb, &x->call.buf[i++], &e->off_b);
	gpo__view_bind(y, n, &x->call.buf[i], &e->off_y);
	if (quads(op, e, !!b)) {
		e->flags |= GPO_EW_QUADS;
		e->groups = groups_for(n / 4);
		x->call.work = e->groups;
	}
	return 0;
}

/* unary over a contiguous x of @n elements */
static int unary_flat(struct gpo_graph *g, struct llist *l, uint32_t fn,
		      uint32_t flags, const struct tview *x,
		      const struct tview *y, uint64_t n, float alpha)
{
	uint32_t s[T_DIMS] = { 1, 1, 1, (uint32_t)n }, st[T_DIMS];

	strides4(s, st);
	return ew(g, l, OP_UNARY, fn, flags, s, x, n, st, NULL, 0, NULL, y,
		  alpha);
}

static int reduce_one(struct gpo_graph *g, struct llist *l, uint32_t fn,
		      uint32_t flags, uint64_t outer, uint64_t len,
		      uint64_t inner, const struct tview *x,
		      const struct tview *y, const struct tview *idx,
		      float alpha)
{
	uint32_t gr = inner == 1 ? rows_groups(outer) :
				   groups_for(outer * inner);
	struct launch *c = push(g, l, OP_REDUCE, gr);
	struct gpo_reduce_args *r;

	if (!c)
		return -ENOMEM;
	r = &c->a.red;
	r->n = (uint32_t)(outer * inner);
	r->groups = gr;
	r->fn = fn;
	r->flags = flags;
	r->outer = (uint32_t)outer;
	r->len = (uint32_t)len;
	r->inner = (uint32_t)inner;
	r->alpha = alpha;
	gpo__view_bind(x, outer * len * inner, &c->call.buf[0], &r->off_x);
	gpo__view_bind(y, outer * inner, &c->call.buf[1], &r->off_y);
	if (idx) {
		gpo__view_bind(idx, outer * inner, &c->call.buf[2],
			       &r->off_idx);
		r->flags |= GPO_RED_IDX;
	}
	return 0;
}

/* the groups a launch should have to fill the device a few times over */
static uint64_t fill_groups(const struct gpo_graph *g)
{
	uint64_t cu = g->dev->info.compute_units;

	return 4 * (cu ? cu : 2) < 8 ? 8 : 4 * (cu ? cu : 2);
}

#define SPLIT_MIN_LEN	64	/* the least terms a work-item sums */

/*
 * reduce - a reduction, in two launches where its outputs are too few to
 * fill the device and each would sum a long axis (the gradients of biases
 * and layer-norm weights: a few hundred sums of tens of thousands of rows):
 * the axis is cut into S equal parts, each summed into a temporary, and
 * the S partial sums then summed: in order, or, where there is one outer
 * row (a bias), by reduce's row tree from the temporary written
 * transposed (the byte GPT's 126 launches on an H200: 1.61 to 1.49 ms).
 * The result is the same on every run; only sums are split (a maximum
 * keeps its index in one pass). Shorter parts and more of them, for the
 * transposed case, were slower (1.49 to 3.2 ms).
 */
static int reduce(struct gpo_graph *g, struct llist *l, uint32_t fn,
		  uint32_t flags, uint64_t outer, uint64_t len, uint64_t inner,
		  const struct tview *x, const struct tview *y,
		  const struct tview *idx, float alpha)
{
	uint64_t outs = outer * inner, want = fill_groups(g) * GPO_WG_SIZE;
	uint64_t s = 1;
	struct tview tmp;
	int ret;

	if (fn == GPO_RED_SUM && inner > 1)
		while (!(len % (2 * s)) && len / (2 * s) >= SPLIT_MIN_LEN &&
		       outs * s < want)
			s *= 2;
	if (s == 1)
		return reduce_one(g, l, fn, flags, outer, len, inner, x, y,
				  idx, alpha);
	place(g, &tmp, outs * s);
	if (outer == 1) {
		/*
		 * The partial sums transposed, each output's S in a row:
		 * the second launch is a group an output, not S loads in a
		 * row by each of a few hundred invocations
		 */
		ret = reduce_one(g, l, GPO_RED_SUM, GPO_RED_TOUT, s, len / s,
				 inner, x, &tmp, NULL, 1.0f);
		return ret ? ret : reduce_one(g, l, GPO_RED_SUM, flags, inner,
					      s, 1, &tmp, y, NULL, alpha);
	}
	ret = reduce_one(g, l, GPO_RED_SUM, 0, outer * s, len / s, inner, x,
			 &tmp, NULL, 1.0f);
	return ret ? ret : reduce_one(g, l, GPO_RED_SUM, flags, outer, s,
				      inner, &tmp, y, NULL, alpha);
}

static int reduce_bwd(struct gpo_graph *g, struct llist *l, uint32_t fn,
		      uint32_t flags, uint64_t outer, uint64_t len,
		      uint64_t inner, const struct tview *dy,
		      const struct tview *idx, const struct tview *dx,
		      float alpha)
{
	uint64_t n = outer * len * inner;
	uint32_t gr = groups_for(n);
	struct launch *c = push(g, l, OP_REDUCE_BWD, gr);
	struct gpo_reduce_args *r;

	if (!c)
		return -ENOMEM;
	r = &c->a.red;
	r->n = (uint32_t)n;
	r->groups = gr;
	r->fn = fn;
	r->flags = flags;
	r->outer = (uint32_t)outer;
	r->len = (uint32_t)len;
	r->inner = (uint32_t)inner;
	r->alpha = alpha;
	gpo__view_bind(dy, outer * inner, &c->call.buf[0], &r->off_y);
	if (idx)
		gpo__view_bind(idx, outer * inner, &c->call.buf[1],
			       &r->off_idx);
	gpo__view_bind(dx, n, &c->call.buf[2], &r->off_x);
	return 0;
}

/*
 * one operand of a product: a tensor, used as stored or transposed; @h16:
 * @v holds the tensor's values as binary16, a copy made by mm_halve()
 */
struct mm_op {
	struct gpo_tensor *t;
	const struct tview *v;
	int trans;
	int h16;
};

static void mm_dims(const struct gpo_tensor *t, uint32_t *rows,
		    uint32_t *cols)
{
	*rows = t->shape[t->ndim - 2];
	*cols = t->shape[t->ndim - 1];
}

/* the fewest tiles of matmul_big a product needs to go there; its least k */
#define MM_BIG_TILES	256
#define MM_BIG_MIN_K	256

/* the tiles of side @ts an m x n product has (@batch of them) */
static uint64_t mm_tiles(uint32_t m, uint32_t n, uint32_t batch, uint32_t ts)
{
	return (uint64_t)batch * ((m + ts - 1) / ts) * ((n + ts - 1) / ts);
}

/*
 * mm_big_fits - matmul_big's tiles cover m x n with at most an eighth of
 * their area past the edges: never 64 columns in 128-wide tiles.
 */
static int mm_big_fits(uint32_t m, uint32_t n)
{
	uint64_t area = mm_tiles(m, n, 1, GPO_MM_TILE_BIG) * GPO_MM_TILE_BIG *
			GPO_MM_TILE_BIG;

	return 8 * area <= 9 * (uint64_t)m * n;
}

/*
 * mm_big - whether an m x n product (@batch of them) summing @k terms goes
 * to matmul_big. Its tiles do 4 times the work of matmul's for half the
 * loads a product, but they are 4 times fewer: only where there are
 * enough of them to keep a large GPU busy, little is lost to ragged
 * edges, and the sum is not so short that the loads before the first
 * multiply are most of it. On an H200 (2026-11-29, the GPT's products,
 * bench/results/issue11-h200-2026-11-29.txt) matmul_big was as fast or
 * faster at the least measured, 256 tiles and 256 terms: 16384 x 384
 * over 384 terms 21.4 TFLOP/s against matmul's 20.3 on Vulkan, 26.7
 * against 23.7 on OpenCL; 16384 x 256 over 384, 25.5 against 20.1;
 * 16384 x 384 over 256, 19.4 against 19.8 on Vulkan, 24.7 against 21.9
 * on OpenCL. Fewer tiles than twice the compute units leave matmul_big's
 * groups too few to fill an H200; attention's scores (64 terms) stay on
 * matmul.
 */
static int mm_big(const struct gpo_graph *g, uint32_t m, uint32_t n,
		  uint32_t k, uint32_t batch)
{
	return mm_tiles(m, n, batch, GPO_MM_TILE_BIG) >= MM_BIG_TILES &&
	       mm_big_fits(m, n) && k >= MM_BIG_MIN_K;
}

/*
 * matmul_coop's tile for an @m x @n product (abi/matmul.h): 128 x 256,
 * or 256 x 128 (GPO_MM_COOP_TALL) where only that one divides it, so
 * that the product can be whole (pipeline.c's coop_whole())
 */
static uint32_t coop_shape(uint32_t m, uint32_t n)
{
	int wide = !(m % GPO_MM_TILE_COOP_SHORT) &&
		   !(n % GPO_MM_TILE_COOP_LONG);
	int tall = !(m % GPO_MM_TILE_COOP_LONG) &&
		   !(n % GPO_MM_TILE_COOP_SHORT);

	return tall && !wide ? GPO_MM_COOP_TALL : 0;
}

/*
 * the kernel of a half product of @x and @y (an f16 operand, or the
 * graph's matmul_f16 setting): matmul_coop where the device has it, else
 * matmul_half; OP_COUNT for an f32 product
 */
static enum gpo__op_id mm_half_op(const struct gpo_graph *g, struct mm_op x,
				  struct mm_op y)
{
	if (x.t->dtype != GPO_F16 && y.t->dtype != GPO_F16 && !g->mm_f16)
		return OP_COUNT;
	return gpo__op_supported(g->dev, OP_MATMUL_COOP, GPO_F32) ?
	       OP_MATMUL_COOP : OP_MATMUL_HALF;
}

/*
 * mm_launch - c_z = op(x_z) op(y_z) for z < @batch, m x n, summing @k
 * terms from term @p0 on; x_z at x + z @bsa, y_z at y + z @bsb (in
 * elements), c_z at c + z m n; on matmul_big when @big.
 *
 * Half products: an f16 operand (an f16 input, read as stored), or the
 * graph's matmul_f16 setting, makes every product one of two binary16
 * values (f32 operands rounded as loaded, GPO_MM_ROUND, or cast once
 * by mm_halve()), summed in f32;
 * on matmul_coop, the tensor cores, where the device has them, else on
 * matmul_half (matmul's tiles; @big is ignored). The same products
 * everywhere, so that the backends differ only by the order of the f32
 * sums.
 */
static int mm_launch(struct gpo_graph *g, struct llist *l, struct mm_op x,
		     struct mm_op y, const struct tview *c, uint32_t m,
		     uint32_t n, uint32_t k, uint32_t batch, uint32_t p0,
		     uint32_t bsa, uint32_t bsb, uint32_t flags, int big)
{
	int f16a = x.t->dtype == GPO_F16 || x.h16;
	int f16b = y.t->dtype == GPO_F16 || y.h16;
	enum gpo__op_id op = mm_half_op(g, x, y);

	if (op == OP_COUNT)
		op = big ? OP_MATMUL_BIG : OP_MATMUL;
	uint32_t shape = op == OP_MATMUL_COOP ? coop_shape(m, n) : 0;
	uint32_t ts = op == OP_MATMUL_COOP ? GPO_MM_COOP_TILE_N(shape) :
		      op == OP_MATMUL_BIG ? GPO_MM_TILE_BIG : GPO_MM_TILE;
	uint32_t tsm = op == OP_MATMUL_COOP ? GPO_MM_COOP_TILE_M(shape) : ts;
	uint32_t tm = (m + tsm - 1) / tsm, tn = (n + ts - 1) / ts;
	uint32_t xr, xc, yr, yc;
	struct gpo_matmul_args *a;
	struct launch *L;

	mm_dims(x.t, &xr, &xc);
	mm_dims(y.t, &yr, &yc);
	L = push(g, l, op, (uint64_t)batch * tm * tn);
	if (!L)
		return -ENOMEM;
	a = &L->a.mm;
	a->m = m;
	a->n = n;
	a->k = k;
	a->batch = batch;
	a->tiles_m = tm;
	a->tiles_n = tn;
	a->flags = flags | shape | (x.trans ? GPO_MM_TRANS_A : 0) |
		   (y.trans ? GPO_MM_TRANS_B : 0) |
		   (f16a ? GPO_MM_F16_A : 0) | (f16b ? GPO_MM_F16_B : 0) |
		   (op == OP_MATMUL_COOP || op == OP_MATMUL_HALF ?
		    GPO_MM_ROUND : 0);
	a->lda = xc;
	a->ldb = yc;
	a->ldc = n;
	a->bsa = bsa;
	a->bsb = bsb;
	a->bsc = m * n;
	a->alpha = 1.0f;
	gpo__view_bind(x.v, x.h16 ? (x.t->numel + 1) / 2 : x.t->numel,
		       &L->call.buf[0], &a->off_a);
	gpo__view_bind(y.v, y.h16 ? (y.t->numel + 1) / 2 : y.t->numel,
		       &L->call.buf[1], &a->off_b);
	/* an f16 tensor starts its place in the arena: offsets in halves */
	if (f16a)
		a->off_a *= 2;
	if (f16b)
		a->off_b *= 2;
	/* op(x)'s columns are x's rows when transposed, and so on */
	a->off_a += x.trans ? p0 * xc : p0;
	a->off_b += y.trans ? p0 : p0 * yc;
	gpo__view_bind(c, (uint64_t)batch * m * n, &L->call.buf[2], &a->off_c);
	/* bindings start on 256 bytes: the rest is the operand's own */
	if (op == OP_MATMUL_BIG && !(a->off_a % 4) && !(a->lda % 4) &&
	    !(a->bsa % 4))
		a->flags |= GPO_MM_VEC_A;
	if (op == OP_MATMUL_BIG && !(a->off_b % 4) && !(a->ldb % 4) &&
	    !(a->bsb % 4))
		a->flags |= GPO_MM_VEC_B;
	return 0;
}

/* c = op(x) op(y), batched over the leading dimension of 3-d operands */
static int mm_one(struct gpo_graph *g, struct llist *l, struct mm_op x,
		  struct mm_op y, const struct tview *c, uint32_t flags)
{
	uint32_t xr, xc, yr, yc, m, n, k, batch;

	mm_dims(x.t, &xr, &xc);
	mm_dims(y.t, &yr, &yc);
	m = x.trans ? xc : xr;
	k = x.trans ? xr : xc;
	n = y.trans ? yr : yc;
	batch = x.t->ndim == 3 ? x.t->shape[0] : 1;
	return mm_launch(g, l, x, y, c, m, n, k, batch, 0, xr * xc, yr * yc,
			 flags, mm_big(g, m, n, k, batch));
}

#define SPLIT_MIN_K	512	/* the least of the sum a part takes */

/*
 * mm_part - c_z = op(x) op(y) over the terms p in [p0 + z kc, p0 + (z+1) kc)
 * for z < parts: one batched launch, the batch index picking the slice of
 * the sum (the operands are 2-d); c_z at c + z m n
 */
static int mm_part(struct gpo_graph *g, struct llist *l, struct mm_op x,
		   struct mm_op y, const struct tview *c, uint32_t m,
		   uint32_t n, uint32_t p0, uint32_t kc, uint32_t parts,
		   int big)
{
	uint32_t xr, xc, yr, yc;

	mm_dims(x.t, &xr, &xc);
	mm_dims(y.t, &yr, &yc);
	return mm_launch(g, l, x, y, c, m, n, kc, parts, p0,
			 x.trans ? kc * xc : kc, y.trans ? kc : kc * yc, 0,
			 big);
}

/* the fewest slices, a power of 2, that make @tiles at least @want */
static uint32_t mm_slices(uint64_t tiles, uint64_t want, uint32_t most)
{
	uint32_t s = 1;

	while (tiles * s < want && 2 * s <= most)
		s *= 2;
	return s;
}

static int cast(struct gpo_graph *g, struct llist *l, uint32_t fn,
		const struct dev_buf *src, uint32_t os,
		const struct dev_buf *dst, uint32_t od, uint64_t n);

/*
 * How many times a half product of @x and @y, m x n, reads op(x) (@of_x)
 * or op(y): the tiles of its kernel across n or m. 0 for an f32 product.
 */
static uint64_t mm_reads(const struct gpo_graph *g, struct mm_op x,
			 struct mm_op y, uint32_t m, uint32_t n, int of_x)
{
	enum gpo__op_id op = mm_half_op(g, x, y);
	uint32_t shape = coop_shape(m, n);
	uint32_t tm = op == OP_MATMUL_COOP ? GPO_MM_COOP_TILE_M(shape) :
		      GPO_MM_TILE;
	uint32_t tn = op == OP_MATMUL_COOP ? GPO_MM_COOP_TILE_N(shape) :
		      GPO_MM_TILE;

	if (op == OP_COUNT)
		return 0;
	return of_x ? (n + tn - 1) / tn : (m + tm - 1) / tm;
}

/* the least reads, and elements, of an f32 operand that mm_halve() copies */
#define MM_HALVE_READS	4
#define MM_HALVE_NUMEL	(1u << 16)

/*
 * mm_halve - @o, an f32 operand of a half product that reads it @reads
 * times, as binary16 in a place of its own (its tensor's h16): a cast (to
 * nearest even, what the product does to each element it loads) where it
 * is read MM_HALVE_READS times or more and has MM_HALVE_NUMEL elements or
 * more. The product then loads half the bytes, its f16 operands' path.
 * The same bits either way, at the cost of a copy of half the operand's
 * size in the arena. A tensor cast once in a pass is not cast again: a
 * backward product takes the copy its forward made (an activation, a
 * weight; the backward pass runs on the values of the last forward run,
 * as it does for the activations themselves), and a gradient's second
 * product the first's. On an H200 (2026-11-30,
 * bench/results/issue12-h200-2026-11-30-tiles.txt) matmul_coop took f32
 * operands at 145 TFLOP/s and f16 ones at 255 (8192 x 1024 over 4096).
 */
static int mm_halve(struct gpo_graph *g, struct llist *l, struct mm_op *o,
		    uint64_t reads)
{
	struct gpo_tensor *t = o->t;
	uint64_t n = t->numel, w = (n + 1) / 2;
	struct dev_buf s, d;
	uint32_t os, od;
	int ret;

	/* the copy is of the tensor's own elements, the only view taken */
	if (t->dtype != GPO_F32 || !reads || o->v != &t->st)
		return 0;
	if (!t->h16_made) {
		if (reads < MM_HALVE_READS || n < MM_HALVE_NUMEL)
			return 0;
		place(g, &t->h16, w);
		gpo__view_bind(o->v, n, &s, &os);
		gpo__view_bind(&t->h16, w, &d, &od);
		/* the cast counts the destination in halves */
		ret = cast(g, l, GPO_CAST_F32_F16, &s, os, &d, od * 2, n);
		if (ret)
			return ret;
		t->h16_made = 1;
	}
	o->v = &t->h16;
	o->h16 = 1;
	return 0;
}

/*
 * mm - c = op(x) op(y). A single product whose tiles are too few to fill
 * the device but whose sum is long (a weight's gradient: features x
 * features, summed over every row of the batch) is split along the sum:
 * S slices of it are products of their own, written side by side in a
 * temporary, and then summed in order into c (reduce). The same bits on
 * every run; the sum's order differs from one launch's, as any kernel's
 * blocking does.
 *
 * S is a power of 2, so that a sum over a power of 2 of rows needs one
 * launch for the slices (else the shorter last slice is a launch of its
 * own, of few groups, as long as the others); enough for 8 groups a
 * compute unit, slices of SPLIT_MIN_K terms or more, and a temporary no
 * larger than half the operands (the arena keeps every temporary of a
 * graph: a GPT's weight gradients in 32 slices took a gigabyte more than
 * in 5). On matmul_big where its tiles fit the product and the slices'
 * are two a compute unit or more: on an H100 the weight gradients of a
 * GPT (1536 x 384 over 16384 rows) ran 1.3 times faster so, in 16
 * slices, than in the 4 slices of matmul that 4 groups a compute unit
 * gave, and 384 x 1152 1.4 times faster in 16 slices of matmul than in 5
 * and a shorter last one, a launch of its own
 * (bench/results/gemmgpt-h100-sweep.txt). On an H200 (132 compute
 * units) with matmul_big's 8-deep vec4 steps (2026-11-29), 384 x 1152
 * in 16 slices of matmul_big (432 tiles) took 27.7 TFLOP/s against
 * matmul's 19.7; 384 x 384 in 32 (288 tiles) 16.4 against 18.8, 256 x
 * 384 in 32 (192) 20.3 against 17.4 on Vulkan but 20.4 against 22.6 on
 * OpenCL. Since Vulkan's matmul_big takes these products' flags as
 * constants (backend/vulkan/pipeline.c, mm_spec()), 384 x 384 in 32
 * slices of it ran at 24.8 TFLOP/s against matmul's 18.7 on Vulkan and
 * 22.5 against 22.0 on OpenCL, the GPT's step 48.8 -> 48.2 ms on Vulkan
 * and the same on OpenCL (call 44): so two tiles a compute unit, not
 * three as before.
 */
static int mm(struct gpo_graph *g, struct llist *l, struct mm_op x,
	      struct mm_op y, const struct tview *c, uint32_t flags)
{
	uint32_t xr, xc, yr, yc, m, n, k, kc, s, full, most;
	uint64_t want = 2 * fill_groups(g), tiles, big_tiles, half;
	struct tview tmp;
	int big = 0, ret;

	mm_dims(x.t, &xr, &xc);
	mm_dims(y.t, &yr, &yc);
	m = x.trans ? xc : xr;
	k = x.trans ? xr : xc;
	n = y.trans ? yr : yc;
	ret = mm_halve(g, l, &x, mm_reads(g, x, y, m, n, 1));
	if (!ret)
		ret = mm_halve(g, l, &y, mm_reads(g, x, y, m, n, 0));
	if (ret)
		return ret;
	tiles = mm_tiles(m, n, 1, GPO_MM_TILE);
	if (x.t->ndim == 3 || tiles >= want || k < 2 * SPLIT_MIN_K)
		return mm_one(g, l, x, y, c, flags);
	most = k / SPLIT_MIN_K;
	half = (uint64_t)k * (m + n) / 2;
	if ((uint64_t)most * m * n > half)
		most = (uint32_t)(half / ((uint64_t)m * n));
	big_tiles = mm_tiles(m, n, 1, GPO_MM_TILE_BIG);
	s = mm_slices(big_tiles, want, most);
	/* two tiles a compute unit (want is 8 a compute unit) */
	if (mm_big_fits(m, n) && 8 * big_tiles * s >= 2 * want)
		big = 1;
	else
		s = mm_slices(tiles, want, most);
	if (s < 2)
		return mm_one(g, l, x, y, c, flags);
	/* slices of a multiple of 4 terms, the last one shorter */
	kc = ((k + s - 1) / s + 3) & ~3u;
	s = (k + kc - 1) / kc;
	full = k % kc ? s - 1 : s;
	place(g, &tmp, (uint64_t)s * m * n);
	ret = mm_part(g, l, x, y, &tmp, m, n, 0, kc, full, big);
	if (!ret && full < s) {
		struct tview last = tmp;

		last.elem += (uint64_t)full * m * n;
		ret = mm_part(g, l, x, y, &last, m, n, full * kc,
			      k - full * kc, 1, big);
	}
	return ret ? ret : reduce(g, l, GPO_RED_SUM, flags, 1, s,
				  (uint64_t)m * n, &tmp, c, NULL, 1.0f);
}

static int fill(struct gpo_graph *g, struct llist *l, const struct tview *v,
		uint64_t n, float value)
{
	struct launch *c = push(g, l, OP_FILL, n);

	if (!c)
		return -ENOMEM;
	c->a.mem.n = (uint32_t)n;
	c->a.mem.value = value;
	c->call.buf[0] = v->blk;
	c->call.buf[0].off += v->elem * 4;
	c->call.buf[0].size = n * 4;
	return 0;
}

/* ---- forward ------------------------------------------------------------ */

/*
 * copy_permuted - @src (contiguous in @in's shape) into @dst (contiguous
 * in @out's shape, whose dimension i is @in's @perm[i]): a permute
 * forward, and with the inverse permutation its gradient backward
 */
static int copy_permuted(struct gpo_graph *g, struct llist *l,
			 uint32_t flags, const struct gpo_tensor *in,
			 const struct tview *src, const struct gpo_tensor *out,
			 const struct tview *dst, const int *perm)
{
	uint32_t is[T_DIMS], ist[T_DIMS], sa[T_DIMS], os[T_DIMS];
	int k = T_DIMS - in->ndim, i;

	pad4(in, is);
	strides4(is, ist);
	pad4(out, os);
	for (i = 0; i < T_DIMS; i++)
		sa[i] = i < k ? 0 : ist[perm[i - k] + k];
	return ew(g, l, OP_UNARY, GPO_EW_COPY, flags, os, src, in->numel, sa,
		  NULL, 0, NULL, dst, 1.0f);
}

/* the launch @l got last (on the dry pass: the scratch one) */
static struct launch *last(struct gpo_graph *g, struct llist *l)
{
	return g->dry ? &g->scratch : &l->v[l->n - 1];
}

/*
 * the binding of @n 16-bit elements from element @elem of @buf (an
 * optimizer's half buffer): from the 256-byte boundary below, to the end
 * of the last word (the buffer is padded to whole groups, so it is there)
 */
static void half_bind(const struct dev_buf *buf, uint64_t elem, uint64_t n,
		      struct dev_buf *out, uint32_t *off)
{
	uint64_t start = buf->off + elem * 2, base = start & ~255ull;

	out->mem = buf->mem;
	out->off = base;
	out->size = ((start + n * 2 + 3) & ~3ull) - base;
	*off = (uint32_t)((start - base) / 2);
}

/* a cast of @n elements, @src's element @os on to @dst's element @od */
static int cast(struct gpo_graph *g, struct llist *l, uint32_t fn,
		const struct dev_buf *src, uint32_t os,
		const struct dev_buf *dst, uint32_t od, uint64_t n)
{
	int wide = fn == GPO_CAST_F16_F32 || fn == GPO_CAST_BF16_F32;
	uint32_t gr = groups_for(wide ? n : (n + 1) / 2);
	struct launch *x = push(g, l, OP_CAST, gr);
	struct gpo_cast_args *a;

	if (!x)
		return -ENOMEM;
	a = &x->a.cast;
	a->n = (uint32_t)n;
	a->groups = gr;
	a->fn = fn;
	a->off_src = os;
	a->off_dst = od;
	x->call.buf[0] = *src;
	x->call.buf[1] = *dst;
	return 0;
}

static uint32_t half_fn(const struct gpo_tensor *t, int wide)
{
	if (t->opt->param_dtype == GPO_F16)
		return wide ? GPO_CAST_F16_F32 : GPO_CAST_F32_F16;
	return wide ? GPO_CAST_BF16_F32 : GPO_CAST_F32_BF16;
}

/* a half parameter's elements, widened into its place */
static int fwd_half_param(struct gpo_graph *g, struct gpo_tensor *t)
{
	uint64_t off = t->opt->tensors[t->opt_index].offset;
	struct dev_buf s, d;
	uint32_t os, od;

	half_bind(&t->opt->param, off, t->numel, &s, &os);
	gpo__view_bind(&t->st, t->numel, &d, &od);
	return cast(g, &g->fwd, half_fn(t, 1), &s, os, &d, od, t->numel);
}

/*
 * A half parameter's gradient, rounded into the optimizer's grad buffer.
 * The cast writes whole words, from an even element: a tensor at an odd
 * offset shares its first word with the tensor before, whose element is
 * widened next to this one's first into t->aux and the pair written
 * back (a half value widened and rounded again is itself), then the
 * rest goes from the even element after.
 */
static int bwd_half_param(struct gpo_graph *g, struct gpo_tensor *t)
{
	const struct dev_buf *gb = &t->opt->grad;
	uint64_t off = t->opt->tensors[t->opt_index].offset, n = t->numel;
	struct tview src = t->grad->st, second = t->aux;
	struct dev_buf h, f;
	uint32_t oh, of;
	int ret;

	if (off & 1) {
		second.elem++;
		half_bind(gb, off - 1, 1, &h, &oh);
		gpo__view_bind(&t->aux, 2, &f, &of);
		ret = cast(g, &g->bwd, half_fn(t, 1), &h, oh, &f, of, 1);
		if (!ret)
			ret = unary_flat(g, &g->bwd, GPO_EW_COPY, 0, &src,
					 &second, 1, 1.0f);
		half_bind(gb, off - 1, 2, &h, &oh);
		if (!ret)
			ret = cast(g, &g->bwd, half_fn(t, 0), &f, of, &h, oh,
				   2);
		if (ret || n == 1)
			return ret;
		src.elem++;
		off++;
		n--;
	}
	gpo__view_bind(&src, n, &f, &of);
	half_bind(gb, off, n, &h, &oh);
	return cast(g, &g->bwd, half_fn(t, 0), &f, of, &h, oh, n);
}

/* a dropout's draws, in its launch @x (ew.h): the step is patched later */
static void dropout_args(struct gpo_graph *g, struct launch *x,
			 const struct gpo_tensor *t)
{
	uint64_t stream = GPO_RNG_STREAM(GPO_RNG_DROPOUT, g->step);
	struct gpo_ew_args *e = &x->a.ew;

	e->key_lo = (uint32_t)t->seed;
	e->key_hi = (uint32_t)(t->seed >> 32);
	e->stream_lo = (uint32_t)stream;
	e->stream_hi = (uint32_t)(stream >> 32);
	e->site = t->site;
	e->thresh = t->thresh;
}

void gpo__graph_patch_step(struct gpo_graph *g)
{
	uint64_t stream = GPO_RNG_STREAM(GPO_RNG_DROPOUT, g->step);
	struct llist *ls[2] = { &g->fwd, &g->bwd };
	size_t i;
	int k;

	for (k = 0; k < 2; k++)
		for (i = 0; i < ls[k]->n; i++) {
			struct launch *x = &ls[k]->v[i];

			if ((x->call.op != OP_UNARY &&
			     x->call.op != OP_UNARY_BWD) ||
			    x->a.ew.fn != GPO_EW_DROPOUT)
				continue;
			x->a.ew.stream_lo = (uint32_t)stream;
			x->a.ew.stream_hi = (uint32_t)(stream >> 32);
		}
	g->step_launched = g->step;
}

/* broadcast strides of @x into the 4-d output shape @ys */
static void bcast_strides(const struct gpo_tensor *x, const uint32_t *ys,
			  uint32_t *sa)
{
	uint32_t xs[T_DIMS];
	int i;

	pad4(x, xs);
	strides4(xs, sa);
	for (i = 0; i < T_DIMS; i++)
		if (xs[i] == 1 && ys[i] != 1)
			sa[i] = 0;
}

static int fwd_binary(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *a = t->src[0], *b = t->src[1];
	uint32_t ys[T_DIMS], sa[T_DIMS], sb[T_DIMS];

	pad4(t, ys);
	bcast_strides(a, ys, sa);
	bcast_strides(b, ys, sb);
	return ew(g, &g->fwd, OP_BINARY, t->fn, 0, ys, &a->st, a->numel, sa,
		  &b->st, b->numel, sb, &t->st, 1.0f);
}

/* a reduction's [outer, len, inner] view of its input */
static void red_dims(const struct gpo_tensor *t, uint64_t *outer,
		     uint64_t *len, uint64_t *inner)
{
	const struct gpo_tensor *x = t->src[0];

	if (t->axis == T_DIMS) {
		*outer = 1;
		*len = x->numel;
		*inner = 1;
		return;
	}
	*outer = prod(x->shape, 0, t->axis);
	*len = x->shape[t->axis];
	*inner = prod(x->shape, t->axis + 1, x->ndim);
}

static int fwd_reduce(struct gpo_graph *g, struct gpo_tensor *t)
{
	uint64_t outer, len, inner;
	int idx = t->fn == GPO_RED_MAX && t->wants_grad;

	red_dims(t, &outer, &len, &inner);
	if (idx)
		place(g, &t->aux, t->numel);
	return reduce(g, &g->fwd, t->fn, 0, outer, len, inner, &t->src[0]->st,
		      &t->st, idx ? &t->aux : NULL, (float)t->alpha);
}

/*
 * row_launch - a launch of the row op @op over @x's rows (its last
 * dimension), @per rows a workgroup up to the cap: its rows, length and
 * groups
 */
static struct launch *row_launch(struct gpo_graph *g, struct llist *l,
				 enum gpo__op_id op, const struct gpo_tensor *x,
				 uint32_t per, uint64_t *rows, uint32_t *len,
				 uint32_t *gr)
{
	*len = x->shape[x->ndim - 1];
	*rows = x->numel / *len;
	*gr = rows_groups((*rows + per - 1) / per);
	return push(g, l, op, *gr);
}

static int fwd_softmax(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];
	uint32_t len, gr;
	uint64_t rows;
	struct launch *c = row_launch(g, &g->fwd, OP_SOFTMAX, x, 1, &rows, &len,
				      &gr);
	struct gpo_softmax_args *s;

	if (!c)
		return -ENOMEM;
	s = &c->a.sm;
	s->rows = (uint32_t)rows;
	s->len = len;
	s->groups = gr;
	s->fn = t->fn;
	s->alpha = (float)t->alpha;
	gpo__view_bind(&x->st, x->numel, &c->call.buf[0], &s->off_x);
	gpo__view_bind(&t->st, t->numel, &c->call.buf[1], &s->off_y);
	return 0;
}

/* per-row xent or accuracy into t->aux, then their mean into t */
static int fwd_rows(struct gpo_graph *g, struct gpo_tensor *t,
		    enum gpo__op_id op)
{
	struct gpo_tensor *x = t->src[0], *lab = t->src[1];
	uint32_t rows = x->shape[0], gr = rows_groups(rows);
	struct launch *c;
	struct gpo_loss_args *s;

	place(g, &t->aux, rows);
	c = push(g, &g->fwd, op, gr);
	if (!c)
		return -ENOMEM;
	s = &c->a.loss;
	s->rows = rows;
	s->len = x->shape[1];
	s->groups = gr;
	gpo__view_bind(&x->st, x->numel, &c->call.buf[0], &s->off_x);
	gpo__view_bind(&lab->st, rows, &c->call.buf[1], &s->off_lab);
	gpo__view_bind(&t->aux, rows, &c->call.buf[2], &s->off_y);
	return reduce(g, &g->fwd, GPO_RED_SUM, 0, 1, rows, 1, &t->aux,
		      &t->st, NULL, 1.0f / (float)rows);
}

/*
 * gather - rows of the table @src [@nrows, @width] named by the @rows
 * indices at @idx into @dst, 0 where an index is out of range
 */
static int gather(struct gpo_graph *g, const struct tview *src,
		  uint32_t nrows, uint32_t width, const struct tview *idx,
		  uint32_t rows, const struct tview *dst)
{
	uint64_t n = (uint64_t)rows * width;
	uint32_t gr = groups_for(n);
	struct gpo_gather_args *a;
	struct launch *L;
	int ret;

	/* an index out of range leaves its row as it is: 0 */
	ret = fill(g, &g->fwd, dst, n, 0.0f);
	if (ret)
		return ret;
	L = push(g, &g->fwd, OP_GATHER_ROWS, gr);
	if (!L)
		return -ENOMEM;
	a = &L->a.gather;
	a->n = (uint32_t)n;
	a->groups = gr;
	a->rows = rows;
	a->width = width;
	a->stride = width;
	a->row_lo = 0;
	a->row_hi = nrows;
	gpo__view_bind(src, (uint64_t)nrows * width, &L->call.buf[0],
		       &a->off_src);
	gpo__view_bind(idx, rows, &L->call.buf[1], &a->off_idx);
	gpo__view_bind(dst, n, &L->call.buf[2], &a->off_dst);
	return 0;
}

static int fwd_one_hot(struct gpo_graph *g, struct gpo_tensor *t)
{
	uint32_t c = t->classes;

	place(g, &t->aux, (uint64_t)c * c);
	return gather(g, &t->aux, c, c, &t->src[0]->st, t->shape[0], &t->st);
}

static int fwd_layernorm(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];
	uint32_t len, gr;
	uint64_t rows;
	struct launch *c = row_launch(g, &g->fwd, OP_LAYERNORM, x, GPO_LN_ROWS,
				      &rows, &len, &gr);
	struct gpo_layernorm_args *a;

	place(g, &t->aux, 2 * rows);
	if (!c)
		return -ENOMEM;
	a = &c->a.ln;
	a->rows = (uint32_t)rows;
	a->len = len;
	a->groups = gr;
	a->eps = (float)t->eps;
	a->alpha = 1.0f;
	gpo__view_bind(&x->st, x->numel, &c->call.buf[0], &a->off_x);
	gpo__view_bind(&t->st, t->numel, &c->call.buf[1], &a->off_y);
	gpo__view_bind(&t->aux, 2 * rows, &c->call.buf[2], &a->off_stats);
	return 0;
}

/* the shape, scale and grid of attention @t's launches */
static void attn_args(const struct gpo_tensor *t, struct gpo_attn_args *a)
{
	memset(a, 0, sizeof(*a));
	a->bh = t->shape[0];
	a->t = t->shape[1];
	a->hd = t->shape[2];
	a->blocks = (a->t + GPO_ATTN_BLOCK - 1) / GPO_ATTN_BLOCK;
	/* bh * t * hd < 2^32: bh * blocks fits too */
	a->groups = a->bh * a->blocks;
	a->scale = (float)t->alpha;
}

/* y and each row's logsumexp (aux), which backward reads */
static int fwd_attention(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2];
	uint64_t rows = (uint64_t)t->shape[0] * t->shape[1];
	struct gpo_attn_args *a, sh;
	struct launch *c;

	attn_args(t, &sh);
	place(g, &t->aux, rows);
	c = push(g, &g->fwd, OP_ATTN_FWD, sh.groups);
	if (!c)
		return -ENOMEM;
	a = &c->a.attn;
	*a = sh;
	gpo__view_bind(&q->st, q->numel, &c->call.buf[0], &a->off_q);
	gpo__view_bind(&k->st, k->numel, &c->call.buf[1], &a->off_k);
	gpo__view_bind(&v->st, v->numel, &c->call.buf[2], &a->off_v);
	gpo__view_bind(&t->st, t->numel, &c->call.buf[3], &a->off_y);
	gpo__view_bind(&t->aux, rows, &c->call.buf[4], &a->off_l);
	return 0;
}

static int fwd_unary(struct gpo_graph *g, struct gpo_tensor *t)
{
	int ret = unary_flat(g, &g->fwd, t->fn, 0, &t->src[0]->st, &t->st,
			     t->numel, (float)t->alpha);

	if (!ret && t->fn == GPO_EW_DROPOUT)
		dropout_args(g, last(g, &g->fwd), t);
	return ret;
}

static int forward(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *a = t->src[0], *b = t->src[1];

	switch (t->op) {
	case T_INPUT:
		return 0;
	case T_PARAM:
		return t->half ? fwd_half_param(g, t) : 0;
	case T_MATMUL:
		return mm(g, &g->fwd,
			  (struct mm_op){ a, &a->st,
					  !!(t->flags & GPO_MATMUL_TA), 0 },
			  (struct mm_op){ b, &b->st,
					  !!(t->flags & GPO_MATMUL_TB), 0 },
			  &t->st, 0);
	case T_RESHAPE:
	case T_SLICE:
		return 0;	/* views */
	case T_PERMUTE:
		return copy_permuted(g, &g->fwd, 0, a, &a->st, t, &t->st,
				     t->perm);
	case T_UNARY:
		return fwd_unary(g, t);
	case T_BINARY:
		return fwd_binary(g, t);
	case T_SOFTMAX:
		return fwd_softmax(g, t);
	case T_REDUCE:
		return fwd_reduce(g, t);
	case T_XENT:
		return fwd_rows(g, t, OP_XENT);
	case T_ACCURACY:
		return fwd_rows(g, t, OP_ACCURACY);
	case T_ONE_HOT:
		return fwd_one_hot(g, t);
	case T_LAYERNORM:
		return fwd_layernorm(g, t);
	case T_EMBEDDING:
		return gather(g, &a->st, a->shape[0], a->shape[1], &b->st,
			      (uint32_t)b->numel, &t->st);
	case T_ATTENTION:
		return fwd_attention(g, t);
	}
	return gpo__err(-EINVAL, "tensor op %d", t->op);
}

/* ---- backward ----------------------------------------------------------- */

/*
 * sum_to - add @c (contiguous, 4-d shape @cs) into @x's gradient, summed
 * over the dimensions where @x was broadcast; @alpha scales it
 */
static int sum_to(struct gpo_graph *g, const struct tview *c,
		  const uint32_t *cs, struct gpo_tensor *x, float alpha)
{
	struct llist *l = &g->bwd;
	uint32_t xs[T_DIMS], cur[T_DIMS];
	struct tview src = *c, tmp;
	int d, last = -1, ret;

	pad4(x, xs);
	for (d = 0; d < T_DIMS; d++)
		if (xs[d] == 1 && cs[d] != 1)
			last = d;
	if (last < 0)
		return unary_flat(g, l, GPO_EW_COPY, acc(x), c, &x->grad->st,
				  x->numel, alpha);
	memcpy(cur, cs, sizeof(cur));
	for (d = 0; d <= last; d++) {
		uint64_t outer, inner;
		const struct tview *dst;

		if (!(xs[d] == 1 && cur[d] != 1))
			continue;
		outer = prod(cur, 0, d);
		inner = prod(cur, d + 1, T_DIMS);
		if (d == last) {
			dst = &x->grad->st;
		} else {
			place(g, &tmp, outer * inner);
			dst = &tmp;
		}
		ret = reduce(g, l, GPO_RED_SUM, d == last ? acc(x) : 0, outer,
			     cur[d], inner, &src, dst, NULL,
			     d == last ? alpha : 1.0f);
		if (ret)
			return ret;
		cur[d] = 1;
		src = *dst;
	}
	return 0;
}

/*
 * contrib - add sum_to(alpha * (d OP other)) to @x's gradient: @d in the
 * output's shape (the output's gradient, or a product of it), @other
 * broadcast into that shape by its strides @so
 */
static int contrib(struct gpo_graph *g, struct gpo_tensor *t, uint32_t fn,
		   const struct tview *d, const struct tview *other,
		   uint64_t nother, const uint32_t *so, struct gpo_tensor *x,
		   float alpha)
{
	uint32_t ys[T_DIMS], st[T_DIMS];
	struct tview tmp;
	int ret;

	pad4(t, ys);
	strides4(ys, st);
	/* nothing to sum (x is the output's shape): straight into x's */
	if (x->numel == t->numel)
		return ew(g, &g->bwd, OP_BINARY, fn, acc(x), ys, d, t->numel,
			  st, other, nother, so, &x->grad->st, alpha);
	place(g, &tmp, t->numel);
	ret = ew(g, &g->bwd, OP_BINARY, fn, 0, ys, d, t->numel, st, other,
		 nother, so, &tmp, alpha);
	return ret ? ret : sum_to(g, &tmp, ys, x, 1.0f);
}

static int bwd_binary(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *a = t->src[0], *b = t->src[1];
	const struct tview *dy = &t->grad->st;
	uint32_t ys[T_DIMS], st[T_DIMS], sa[T_DIMS], sb[T_DIMS];
	struct tview dyy;
	int ret = 0;

	pad4(t, ys);
	strides4(ys, st);
	bcast_strides(a, ys, sa);
	bcast_strides(b, ys, sb);
	switch (t->fn) {
	case GPO_EW_ADD:
	case GPO_EW_SUB:
		/* an alias's gradient is dy already (grad_aliases) */
		if (a->wants_grad && a->grad_alias == t)
			acc(a);
		else if (a->wants_grad)
			ret = sum_to(g, dy, ys, a, 1.0f);
		if (!ret && b->wants_grad && b->grad_alias == t)
			acc(b);
		else if (!ret && b->wants_grad)
			ret = sum_to(g, dy, ys, b,
				     t->fn == GPO_EW_SUB ? -1.0f : 1.0f);
		return ret;
	case GPO_EW_MUL:	/* dA = dy * b, dB = dy * a */
		if (a->wants_grad)
			ret = contrib(g, t, GPO_EW_MUL, dy, &b->st, b->numel,
				      sb, a, 1.0f);
		if (!ret && b->wants_grad)
			ret = contrib(g, t, GPO_EW_MUL, dy, &a->st, a->numel,
				      sa, b, 1.0f);
		return ret;
	case GPO_EW_DIV:	/* dA = dy / b, dB = -(dy * y) / b */
		if (a->wants_grad)
			ret = contrib(g, t, GPO_EW_DIV, dy, &b->st, b->numel,
				      sb, a, 1.0f);
		if (!ret && b->wants_grad) {
			place(g, &dyy, t->numel);
			ret = ew(g, &g->bwd, OP_BINARY, GPO_EW_MUL, 0, ys, dy,
				 t->numel, st, &t->st, t->numel, st, &dyy,
				 1.0f);
			if (!ret)
				ret = contrib(g, t, GPO_EW_DIV, &dyy, &b->st,
					      b->numel, sb, b, -1.0f);
		}
		return ret;
	}
	return gpo__err(-EINVAL, "binary fn %u", t->fn);
}

static int bwd_matmul(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *a = t->src[0], *b = t->src[1], *dc = t->grad;
	int ta = !!(t->flags & GPO_MATMUL_TA), tb = !!(t->flags & GPO_MATMUL_TB);
	struct mm_op A = { a, &a->st, 0, 0 }, B = { b, &b->st, 0, 0 };
	struct mm_op D = { dc, &dc->st, 0, 0 };
	int ret;

	if (a->wants_grad) {
		uint32_t f = acc(a);

		if (!ta) {	/* dA = dC op(B)^T */
			B.trans = !tb;
			ret = mm(g, &g->bwd, D, B, &a->grad->st, f);
		} else {	/* dA = op(B) dC^T */
			B.trans = tb;
			D.trans = 1;
			ret = mm(g, &g->bwd, B, D, &a->grad->st, f);
		}
		if (ret)
			return ret;
	}
	if (b->wants_grad) {
		uint32_t f = acc(b);

		D.trans = 0;
		if (!tb) {	/* dB = op(A)^T dC */
			A.trans = !ta;
			return mm(g, &g->bwd, A, D, &b->grad->st, f);
		}
		/* dB = dC^T op(A) */
		A.trans = ta;
		D.trans = 1;
		return mm(g, &g->bwd, D, A, &b->grad->st, f);
	}
	return 0;
}

static int bwd_unary(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];
	uint32_t s[T_DIMS] = { 1, 1, 1, (uint32_t)t->numel };
	int ret;

	ret = ew(g, &g->bwd, OP_UNARY_BWD, t->fn, acc(x), s, &x->st,
		 x->numel, NULL, &t->grad->st, t->numel, NULL, &x->grad->st,
		 (float)t->alpha);
	if (!ret && t->fn == GPO_EW_DROPOUT)	/* forward's mask */
		dropout_args(g, last(g, &g->bwd), t);
	return ret;
}

static int bwd_permute(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];
	int inv[T_DIMS], i;

	for (i = 0; i < t->ndim; i++)
		inv[t->perm[i]] = i;
	return copy_permuted(g, &g->bwd, acc(x), t, &t->grad->st, x,
			     &x->grad->st, inv);
}

/*
 * a slice's gradient into its rows of its source's; the rest of that is
 * 0 unless another contribution writes it
 */
static int bwd_slice(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0], *r = gpo__tensor_root(x);
	struct tview dst = x->grad->st;
	uint32_t flags = GPO_T_ACCUM;
	int ret;

	if (t->numel == x->numel) {
		flags = acc(x);
	} else if (!r->grad_written) {
		ret = fill(g, &g->bwd, &x->grad->st, x->numel, 0.0f);
		if (ret)
			return ret;
		r->grad_written = 1;
	}
	dst.elem += t->start * (x->numel / x->shape[0]);
	return unary_flat(g, &g->bwd, GPO_EW_COPY, flags, &t->grad->st, &dst,
			  t->numel, 1.0f);
}

static int bwd_softmax(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];
	uint32_t len, gr;
	uint64_t rows;
	struct launch *c = row_launch(g, &g->bwd, OP_SOFTMAX_BWD, x, 1, &rows,
				      &len, &gr);
	struct gpo_softmax_args *s;

	if (!c)
		return -ENOMEM;
	s = &c->a.sm;
	s->rows = (uint32_t)rows;
	s->len = len;
	s->groups = gr;
	/* causal's masked y are 0: softmax's backward, with its scale */
	s->fn = t->fn == GPO_SM_CAUSAL ? GPO_SM_SOFTMAX : t->fn;
	s->flags = acc(x);
	s->alpha = (float)t->alpha;
	gpo__view_bind(&t->st, t->numel, &c->call.buf[0], &s->off_x);
	gpo__view_bind(&t->grad->st, t->numel, &c->call.buf[1], &s->off_dy);
	gpo__view_bind(&x->grad->st, x->numel, &c->call.buf[2], &s->off_y);
	return 0;
}

static int bwd_reduce(struct gpo_graph *g, struct gpo_tensor *t)
{
	uint64_t outer, len, inner;
	struct gpo_tensor *x = t->src[0];

	red_dims(t, &outer, &len, &inner);
	return reduce_bwd(g, &g->bwd, t->fn, acc(x), outer, len, inner,
			  &t->grad->st, t->fn == GPO_RED_MAX ? &t->aux : NULL,
			  &x->grad->st, (float)t->alpha);
}

static int bwd_xent(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0], *lab = t->src[1];
	uint32_t rows = x->shape[0], gr = rows_groups(rows);
	struct launch *c = push(g, &g->bwd, OP_XENT_BWD, gr);
	struct gpo_loss_args *s;

	if (!c)
		return -ENOMEM;
	s = &c->a.loss;
	s->rows = rows;
	s->len = x->shape[1];
	s->groups = gr;
	s->flags = acc(x);
	s->alpha = 1.0f / (float)rows;
	gpo__view_bind(&x->st, x->numel, &c->call.buf[0], &s->off_x);
	gpo__view_bind(&lab->st, rows, &c->call.buf[1], &s->off_lab);
	gpo__view_bind(&t->grad->st, 1, &c->call.buf[2], &s->off_dl);
	gpo__view_bind(&x->grad->st, x->numel, &c->call.buf[3], &s->off_y);
	return 0;
}

static int bwd_layernorm(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];
	uint32_t len, gr;
	uint64_t rows;
	struct launch *c = row_launch(g, &g->bwd, OP_LAYERNORM_BWD, x,
				      GPO_LN_ROWS, &rows, &len, &gr);
	struct gpo_layernorm_args *a;

	if (!c)
		return -ENOMEM;
	a = &c->a.ln;
	a->rows = (uint32_t)rows;
	a->len = len;
	a->groups = gr;
	a->flags = acc(x);
	a->eps = (float)t->eps;
	a->alpha = 1.0f;
	gpo__view_bind(&t->st, t->numel, &c->call.buf[0], &a->off_y);
	gpo__view_bind(&t->grad->st, t->numel, &c->call.buf[1], &a->off_dy);
	gpo__view_bind(&t->aux, 2 * rows, &c->call.buf[2], &a->off_stats);
	gpo__view_bind(&x->grad->st, x->numel, &c->call.buf[3], &a->off_x);
	return 0;
}

/*
 * the indices one embed_bwd launch may walk: all of them, or where the
 * device ends long loops (lavapipe) few enough that a work-item's walks
 * (its table rows times its column stretches times the indices and their
 * chunks) stay within half its limit
 */
static uint64_t embed_rows_per_launch(const struct gpo_graph *g,
				      uint64_t vocab, uint32_t width,
				      uint32_t groups)
{
	uint64_t walks = ((vocab + groups - 1) / groups) *
			 ((width + GPO_WG_SIZE - 1) / GPO_WG_SIZE);
	uint64_t c;

	if (!g->dev->loop_limit)
		return UINT64_MAX;
	c = g->dev->loop_limit / 2 / walks;
	c -= c / GPO_WG_SIZE + 2;
	c &= ~(uint64_t)(GPO_WG_SIZE - 1);
	return c < GPO_WG_SIZE ? GPO_WG_SIZE : c;
}

/*
 * the gradient of an embedding: the rows of dY summed by index into the
 * table's, in launches of at most embed_rows_per_launch() indices, each
 * after the first adding to the sums so far: the same order
 */
static int bwd_embedding(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *tab = t->src[0], *idx = t->src[1];
	uint32_t gr = rows_groups(tab->shape[0]), width = tab->shape[1];
	uint64_t per = embed_rows_per_launch(g, tab->shape[0], width, gr);
	uint32_t flags = acc(tab);
	uint64_t b0;

	for (b0 = 0; b0 < idx->numel; b0 += per) {
		uint64_t rows = idx->numel - b0 < per ? idx->numel - b0 : per;
		struct launch *c = push(g, &g->bwd, OP_EMBED_BWD, gr);
		struct tview iv = idx->st, dv = t->grad->st;
		struct gpo_gather_args *a;

		if (!c)
			return -ENOMEM;
		iv.elem += b0;
		dv.elem += b0 * width;
		a = &c->a.gather;
		a->n = (uint32_t)tab->numel;
		a->groups = gr;
		a->rows = (uint32_t)rows;
		a->width = width;
		a->row_hi = tab->shape[0];
		a->flags = b0 ? GPO_T_ACCUM : flags;
		gpo__view_bind(&iv, rows, &c->call.buf[0], &a->off_idx);
		gpo__view_bind(&dv, rows * width, &c->call.buf[1], &a->off_src);
		gpo__view_bind(&tab->grad->st, tab->numel, &c->call.buf[2],
			       &a->off_dst);
	}
	return 0;
}

/* the six inputs of attn_bwd_dq and attn_bwd_dkdv */
static void attn_bwd_inputs(struct launch *c, const struct gpo_tensor *t,
			    const struct tview *d)
{
	const struct gpo_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2];
	uint64_t rows = (uint64_t)t->shape[0] * t->shape[1];
	struct gpo_attn_args *a = &c->a.attn;

	gpo__view_bind(&q->st, q->numel, &c->call.buf[0], &a->off_q);
	gpo__view_bind(&k->st, k->numel, &c->call.buf[1], &a->off_k);
	gpo__view_bind(&v->st, v->numel, &c->call.buf[2], &a->off_v);
	gpo__view_bind(&t->grad->st, t->numel, &c->call.buf[3], &a->off_dy);
	gpo__view_bind(&t->aux, rows, &c->call.buf[4], &a->off_l);
	gpo__view_bind(d, rows, &c->call.buf[5], &a->off_d);
}

/*
 * d = rowsum(dy * y), then dk and dv (one launch: key blocks), then dq
 * (query blocks). A gradient nobody wants is written to a temporary. The
 * dkdv kernel writes each element of dk before the same element of dv,
 * so k and v may be one tensor: acc() in that order says which adds.
 */
static int bwd_attention(struct gpo_graph *g, struct gpo_tensor *t)
{
	struct gpo_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2];
	uint64_t rows = (uint64_t)t->shape[0] * t->shape[1];
	struct tview d, dk, dv;
	struct gpo_attn_args sh, *a;
	struct launch *c;
	uint32_t gr = groups_for(rows);

	attn_args(t, &sh);
	place(g, &d, rows);
	c = push(g, &g->bwd, OP_ATTN_BWD_D, gr);
	if (!c)
		return -ENOMEM;
	a = &c->a.attn;
	*a = sh;
	a->groups = gr;
	gpo__view_bind(&t->st, t->numel, &c->call.buf[0], &a->off_y);
	gpo__view_bind(&t->grad->st, t->numel, &c->call.buf[1], &a->off_dy);
	gpo__view_bind(&d, rows, &c->call.buf[2], &a->off_d);

	if (k->wants_grad || v->wants_grad) {
		uint32_t fl = 0;

		if (k->wants_grad) {
			fl |= acc(k);
			dk = k->grad->st;
		} else {
			place(g, &dk, t->numel);
		}
		if (v->wants_grad) {
			fl |= acc(v) ? GPO_ATTN_ACC_DV : 0;
			dv = v->grad->st;
		} else {
			place(g, &dv, t->numel);
		}
		c = push(g, &g->bwd, OP_ATTN_BWD_DKDV, sh.groups);
		if (!c)
			return -ENOMEM;
		a = &c->a.attn;
		*a = sh;
		a->flags = fl;
		attn_bwd_inputs(c, t, &d);
		gpo__view_bind(&dk, t->numel, &c->call.buf[6], &a->off_dk);
		gpo__view_bind(&dv, t->numel, &c->call.buf[7], &a->off_dv);
	}
	if (q->wants_grad) {
		c = push(g, &g->bwd, OP_ATTN_BWD_DQ, sh.groups);
		if (!c)
			return -ENOMEM;
		a = &c->a.attn;
		*a = sh;
		a->flags = acc(q);
		attn_bwd_inputs(c, t, &d);
		gpo__view_bind(&q->grad->st, t->numel, &c->call.buf[6],
			       &a->off_dq);
	}
	return 0;
}

static int backward(struct gpo_graph *g, struct gpo_tensor *t)
{
	switch (t->op) {
	case T_MATMUL:
		return bwd_matmul(g, t);
	case T_PERMUTE:
		return bwd_permute(g, t);
	case T_SLICE:
		return bwd_slice(g, t);
	case T_UNARY:
		return bwd_unary(g, t);
	case T_BINARY:
		return bwd_binary(g, t);
	case T_SOFTMAX:
		return bwd_softmax(g, t);
	case T_REDUCE:
		return bwd_reduce(g, t);
	case T_XENT:
		return bwd_xent(g, t);
	case T_LAYERNORM:
		return bwd_layernorm(g, t);
	case T_EMBEDDING:
		return bwd_embedding(g, t);
	case T_ATTENTION:
		return bwd_attention(g, t);
	default:
		return 0;	/* no inputs that take gradients */
	}
}

/* ---- the two passes ----------------------------------------------------- */

/*
 * grad_aliases - which tensors take their gradient's storage from the op
 * that uses them: a tensor whose one use is as a term of an addition of
 * its own shape (the minuend of a subtraction) has that sum's gradient,
 * the same values, so it gets the same place and its contribution is no
 * copy (a bias add's product, a residual branch). It is no parameter,
 * input or view (their gradients have places of their own), and having
 * one use, no other contribution ever adds to it.
 */
static void grad_aliases(struct gpo_graph *g)
{
	int i, s;

	for (i = 0; i < g->nt; i++) {
		g->t[i]->uses = 0;
		g->t[i]->grad_alias = NULL;
	}
	for (i = 0; i < g->nt; i++)
		for (s = 0; s < 3; s++)
			if (g->t[i]->src[s])
				g->t[i]->src[s]->uses++;
	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *u = g->t[i];

		if (u->op != T_BINARY || !u->grad ||
		    (u->fn != GPO_EW_ADD && u->fn != GPO_EW_SUB))
			continue;
		for (s = 0; s < 2; s++) {
			struct gpo_tensor *x = u->src[s];

			if (s == 1 && u->fn == GPO_EW_SUB)
				break;
			if (!x->grad || !x->wants_grad || x->uses != 1 ||
			    x->numel != u->numel || x->op == T_PARAM ||
			    x->op == T_INPUT || x->op == T_RESHAPE ||
			    x->op == T_SLICE)
				continue;
			x->grad_alias = u;
		}
	}
}

static void param_views(struct gpo_tensor *t)
{
	struct gpo_optim *opt = t->opt;
	uint64_t off = opt->tensors[t->opt_index].offset;

	if (t->half) {
		t->half_of[0] = opt->param;
		t->half_of[1] = opt->grad;
		return;
	}
	t->st.blk = opt->param;
	t->st.elem = off;
	if (t->grad) {
		t->grad->st.blk = opt->grad;
		t->grad->st.elem = off;
	}
}

/*
 * a reshape is its source's elements and gradient, a slice its source's
 * rows (its gradient is its own): the source's places are set already
 */
static void view_of(struct gpo_tensor *t)
{
	struct gpo_tensor *x = t->src[0];

	t->st = x->st;
	if (t->op == T_SLICE)
		t->st.elem += t->start * (x->numel / x->shape[0]);
	else if (t->grad && x->grad)
		t->grad->st = x->grad->st;
}

static int pass_ops(struct gpo_graph *g)
{
	int i, ret;

	g->bump = 0;
	g->cur = 0;
	g->plan_err = 0;
	g->fwd.n = g->bwd.n = 0;
	g->step_launched = g->step;
	grad_aliases(g);
	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *t = g->t[i];

		t->grad_written = 0;
		t->h16_made = 0;
		if (t->grad)
			t->grad->h16_made = 0;
		if (t->op == T_PARAM && !g->dry)
			param_views(t);
		if (t->op == T_PARAM && !t->half)
			continue;
		if (t->op == T_PARAM && t->grad &&
		    (t->opt->tensors[t->opt_index].offset & 1))
			place(g, &t->aux, 2);
		if (t->op == T_RESHAPE || t->op == T_SLICE) {
			view_of(t);
			if (t->op == T_SLICE && t->grad)
				place(g, &t->grad->st, t->numel);
			continue;
		}
		place(g, &t->st, t->numel);
		if (t->grad && !t->grad_alias)
			place(g, &t->grad->st, t->numel);
	}
	/* an alias's sum comes later, and may be an alias in turn */
	for (i = g->nt - 1; i >= 0; i--)
		if (g->t[i]->grad_alias)
			g->t[i]->grad->st = g->t[i]->grad_alias->grad->st;
	for (i = 0; i < g->nt; i++) {
		ret = forward(g, g->t[i]);
		if (ret)
			return ret;
	}
	/* a loss that depends on no parameter has no backward pass */
	if (!g->loss || !g->loss->grad)
		return 0;
	/* d loss / d loss = 1, or the loss scale: gradients come scaled */
	if (g->seed_dev)
		ret = unary_flat(g, &g->bwd, GPO_EW_COPY, 0, &g->seed,
				 &g->loss->grad->st, 1, 1.0f);
	else
		ret = fill(g, &g->bwd, &g->loss->grad->st, 1, 1.0f);
	if (ret)
		return ret;
	gpo__tensor_root(g->loss)->grad_written = 1;
	for (i = g->loss->id; i >= 0; i--) {
		struct gpo_tensor *t = g->t[i];

		if (!t->wants_grad || !t->grad_written)
			continue;
		ret = backward(g, t);
		if (ret)
			return ret;
	}
	/*
	 * A parameter the loss does not reach keeps its gradient as it is
	 * (zero unless written), as torch leaves it None.
	 */
	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *t = g->t[i];

		if (t->op != T_PARAM || !t->half || !t->grad_written)
			continue;
		ret = bwd_half_param(g, t);
		if (ret)
			return ret;
	}
	return 0;
}

/* one planning pass: places, and the launch lists (none on failure) */
static int pass(struct gpo_graph *g)
{
	int ret = pass_ops(g);

	if (!ret)
		ret = g->plan_err;
	if (ret)
		g->fwd.n = g->bwd.n = 0;
	return ret;
}

int gpo__graph_make_grads(struct gpo_graph *g)
{
	int i;

	if (!g->loss)
		return 0;
	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *t = g->t[i], *d;

		if (t->grad || !(t->wants_grad || t->op == T_PARAM))
			continue;
		d = calloc(1, sizeof(*d));
		if (!d)
			return gpo__err(-ENOMEM, "out of memory");
		*d = *t;
		d->op = T_INPUT;
		d->src[0] = d->src[1] = d->src[2] = NULL;
		d->grad = NULL;
		d->wants_grad = d->needs_grad = 0;
		snprintf(d->name, sizeof(d->name), "grad of %.50s",
			 t->name[0] ? t->name : "a tensor");
		t->grad = d;
	}
	return 0;
}

/* the identities of one-hot ops, written once */
static int write_constants(struct gpo_graph *g)
{
	int i, ret;

	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *t = g->t[i];
		uint64_t c = t->classes, j;
		struct dev_buf b;
		float *eye;

		if (t->op != T_ONE_HOT)
			continue;
		eye = calloc(c * c, sizeof(*eye));
		if (!eye)
			return gpo__err(-ENOMEM, "out of memory");
		for (j = 0; j < c; j++)
			eye[j * c + j] = 1.0f;
		b = t->aux.blk;
		b.off += t->aux.elem * 4;
		b.size = c * c * 4;
		ret = g->dev->ops->write(g->dev, &b, 0, eye, c * c * 4);
		free(eye);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * gpo__graph_reemit - the launches again, the arena as it is: an
 * optimizer's buffers moved (a checkpoint restore swaps in new ones)
 */
int gpo__graph_reemit(struct gpo_graph *g)
{
	int i, ret;

	for (i = 0; i < g->nt; i++) {
		if (g->t[i]->op != T_PARAM)
			continue;
		ret = gpo__optim_ensure_allocated(g->t[i]->opt);
		if (ret)
			return ret;
	}
	ret = pass(g);
	if (ret)
		g->fwd.n = g->bwd.n = 0;
	return ret;
}

/* gpo__graph_free_arena - give the arena's blocks back to the pool */
void gpo__graph_free_arena(struct gpo_graph *g)
{
	int i;

	for (i = 0; i < g->nblk; i++)
		if (g->blk && g->blk[i].mem)
			gpo__pool_free(g->dev, &g->blk[i]);
	free(g->blk);
	free(g->blk_elems);
	g->blk = NULL;
	g->blk_elems = NULL;
	g->nblk = 0;
}

int gpo__graph_emit(struct gpo_graph *g)
{
	uint64_t lim = g->dev->max_alloc ? g->dev->max_alloc : 1ull << 34;
	int i, n, ret;

	ret = gpo__graph_make_grads(g);
	if (ret)
		return ret;
	for (i = 0; i < g->nt; i++) {
		struct gpo_tensor *t = g->t[i];

		if (t->op != T_PARAM)
			continue;
		ret = gpo__optim_ensure_allocated(t->opt);
		if (ret)
			return ret;
	}
	/* elements a block may hold: offsets in a block stay below 2^32 */
	lim /= 4;
	if (lim > UINT32_MAX)
		lim = UINT32_MAX;
	g->blk_limit = lim & ~(uint64_t)(T_ALIGN - 1);
	gpo__graph_free_arena(g);
	/* pass 1 counts each block's elements */
	g->dry = 1;
	ret = pass(g);
	g->dry = 0;
	if (ret)
		goto out_arena;
	n = g->nblk;
	g->nblk = 0;
	g->blk = calloc(n ? n : 1, sizeof(*g->blk));
	if (!g->blk) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_arena;
	}
	for (; g->nblk < n; g->nblk++) {
		ret = gpo__pool_alloc(g->dev, g->blk_elems[g->nblk] * 4,
				      &g->blk[g->nblk]);
		if (ret)
			goto out_arena;
	}
	ret = pass(g);
	if (!ret)
		ret = write_constants(g);
	if (ret)
		goto out_arena;
	return 0;

out_arena:
	gpo__graph_free_arena(g);
	g->fwd.n = g->bwd.n = 0;
	return ret;
}
