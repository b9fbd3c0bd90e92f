// SPDX-License-Identifier: MIT
/*
 * train.c - training a model on a dataset, every step on the device
 *
 * The dataset is copied to the device once, in blocks of whole samples
 * that each fit one binding; a batch is gathered from them by the order
 * of its epoch (written once per epoch) with one gather_rows launch per
 * block. A step is then the training graph's launches and the
 * optimizer's, queued behind each other: nothing waits unless the step's
 * loss is asked for. When the dataset does not fit the pool, each batch
 * is gathered on the host and written instead.
 *
 * A gpt trains on a bytes dataset: the bytes go to the device as i32
 * tokens, and its samples are windows of ctx + 1 of them. Window s of an
 * epoch starts at s * ctx + phase; a block holds the tokens of its
 * windows (and the few after its last that those windows reach), and
 * gather_rows picks a batch's inputs with a row stride of ctx from the
 * block's element phase, and its targets from phase + 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/train_i.h"
#include "tensor/tensor_i.h"
#include "optim/optim_i.h"

/* one part of the dataset (training or evaluation) on the device */
struct part_dev {
	const struct dataset_part *host;
	const uint8_t *bytes;		/* gpt: the part's bytes */
	uint64_t n;			/* samples (gpt: windows) */
	int nblk;
	struct dev_buf *x, *y;		/* block i: rows [lo[i], hi[i]);
					 * gpt: x the tokens of windows
					 * [lo[i], hi[i]), y unused */
	uint64_t *lo, *hi;
	struct dev_buf order;		/* i32 sample numbers, in order */
};

/* a graph of the model for @rows samples */
struct net {
	struct gpo_graph *g;
	struct gpo_tensor *x, *y, *loss, *acc;
	uint32_t rows;
};

struct gpo_train {
	struct gpo_model *m;
	struct gpo_dataset *ds;
	struct gpo_device *dev;
	uint32_t batch, eval_batch;
	int shuffle;
	int mm_f16;			/* matmul=f16 */
	uint64_t seed;
	uint64_t spe;			/* steps per epoch */
	int on_device;
	int gpt;
	uint32_t ctx;			/* gpt: T */
	uint32_t max_phase;		/* gpt: the largest phase drawn */
	uint32_t phase;			/* gpt: this epoch's */
	uint64_t ntrain, neval;		/* samples (gpt: windows) */
	struct part_dev train, eval;
	uint64_t order_epoch;		/* the epoch train.order holds */
	int order_valid;
	uint32_t *order;		/* host: the epoch's order */
	void *stage_x;			/* host mode: a batch (gpt: i32) */
	int32_t *stage_y;
	struct net net;			/* training (sharded: a shard's rows) */
	struct dev_graph *rec;		/* the plain step, recorded */
	struct train_shards sh;		/* shards 0: none */
	struct net ev[2];		/* evaluation: full batches, the rest */
};

static int parse_opts(struct gpo_train *t, const char *opts)
{
	const char *pos = opts ? opts : "";
	char key[32], val[64];
	uint64_t v;
	int ret, b;

	t->batch = 64;
	t->eval_batch = 0;		/* 1000, or a gpt's batch_size */
	t->shuffle = 1;
	while ((ret = gpo__kv_next(&pos, key, sizeof(key), val,
				   sizeof(val))) > 0) {
		if (!strcmp(key, "shuffle")) {
			if (gpo__parse_bool(val, &b))
				return gpo__err(-EINVAL, "shuffle '%s': 0 or 1",
						val);
			t->shuffle = b;
			continue;
		}
		if (!strcmp(key, "matmul")) {
			if (strcmp(val, "f32") && strcmp(val, "f16"))
				return gpo__err(-EINVAL, "matmul '%s': f32 or f16",
						val);
			t->mm_f16 = val[1] == '1';
			continue;
		}
		if (strcmp(key, "seed") && strcmp(key, "batch_size") &&
		    strcmp(key, "eval_batch"))
			return gpo__err(-EINVAL, "unknown training setting '%s' (batch_size, shuffle, seed, eval_batch, matmul)",
					key);
		if (gpo__parse_u64(val, &v))
			return gpo__err(-EINVAL, "%s '%s': a whole number", key,
					val);
		if (!strcmp(key, "seed")) {
			t->seed = v;
		} else if (!strcmp(key, "batch_size") ||
			   !strcmp(key, "eval_batch")) {
			if (!v || v > (1u << 24))
				return gpo__err(-EINVAL, "%s %llu: 1..16777216",
						key, (unsigned long long)v);
			if (key[0] == 'b')
				t->batch = (uint32_t)v;
			else
				t->eval_batch = (uint32_t)v;
		} else {
			return gpo__err(-EINVAL, "unknown training setting '%s' (batch_size, shuffle, seed, eval_batch, matmul)",
					key);
		}
	}
	return ret;
}

static void part_free(struct gpo_device *dev, struct part_dev *p)
{
	int i;

	for (i = 0; i < p->nblk; i++) {
		gpo__pool_free(dev, &p->x[i]);
		gpo__pool_free(dev, &p->y[i]);
	}
	gpo__pool_free(dev, &p->order);
	free(p->x);
	free(p->y);
	free(p->lo);
	free(p->hi);
	memset(p, 0, sizeof(*p));
}

/* rows of @features floats that one block may hold */
static uint64_t block_rows(struct gpo_device *dev, uint32_t features)
{
	uint64_t lim = 1ull << 30, rows;

	if (dev->max_binding && dev->max_binding < lim)
		lim = dev->max_binding;
	if (dev->max_alloc && dev->max_alloc < lim)
		lim = dev->max_alloc;
	rows = (lim - 256) / ((uint64_t)features * 4);
	return rows ? rows : 1;
}

/* @p's order buffer, holding 0, 1, 2, ... */
static int order_upload(struct gpo_device *dev, struct part_dev *p)
{
	uint32_t *iota;
	uint64_t i;
	int ret;

	ret = gpo__pool_alloc(dev, p->n * 4, &p->order);
	if (ret)
		return ret;
	iota = malloc(p->n * 4);
	if (!iota)
		return gpo__err(-ENOMEM, "out of memory");
	for (i = 0; i < p->n; i++)
		iota[i] = (uint32_t)i;
	ret = dev->ops->write(dev, &p->order, 0, iota, p->n * 4);
	free(iota);
	return ret;
}

/* @p's samples to the device, and its order buffer */
static int part_upload(struct gpo_train *t, struct part_dev *p,
		       const struct dataset_part *h)
{
	struct gpo_device *dev = t->dev;
	uint32_t f = t->ds->features;
	uint64_t per = block_rows(dev, f), i, r;
	int ret, n;

	p->host = h;
	p->n = h->n;
	n = (int)((h->n + per - 1) / per);
	p->x = calloc(n, sizeof(*p->x));
	p->y = calloc(n, sizeof(*p->y));
	p->lo = calloc(n, sizeof(*p->lo));
	p->hi = calloc(n, sizeof(*p->hi));
	if (!p->x || !p->y || !p->lo || !p->hi)
		return gpo__err(-ENOMEM, "out of memory");
	for (i = 0; i < (uint64_t)n; i++, p->nblk++) {
		p->lo[i] = i * per;
		p->hi[i] = p->lo[i] + per < h->n ? p->lo[i] + per : h->n;
		r = p->hi[i] - p->lo[i];
		ret = gpo__pool_alloc(dev, r * f * 4, &p->x[i]);
		if (!ret) {
			ret = gpo__pool_alloc(dev, r * 4, &p->y[i]);
			if (ret)
				gpo__pool_free(dev, &p->x[i]);
		}
		if (ret)
			return ret;
		ret = dev->ops->write(dev, &p->x[i], 0,
				      h->x + p->lo[i] * f, r * f * 4);
		if (!ret)
			ret = dev->ops->write(dev, &p->y[i], 0,
					      h->y + p->lo[i], r * 4);
		if (ret) {
			p->nblk++;
			return ret;
		}
	}
	return order_upload(dev, p);
}

/*
 * A gpt's part: the tokens of windows [lo, hi) of each block, from its
 * first window's start to the last byte a window with phase @max_phase
 * reaches, as i32
 */
static int part_upload_bytes(struct gpo_train *t, struct part_dev *p,
			     const uint8_t *bytes, uint64_t windows,
			     uint32_t max_phase)
{
	enum { CHUNK = 65536 };
	struct gpo_device *dev = t->dev;
	uint64_t T = t->ctx, per, i, k, span, c;
	int32_t *buf;
	int ret = 0, n;

	p->bytes = bytes;
	p->n = windows;
	/* a block's elements: (hi - lo) T + max_phase + 1 <= (hi - lo + 1) T */
	per = block_rows(dev, 1) / T;
	per = per > 1 ? per - 1 : 1;
	n = (int)((windows + per - 1) / per);
	p->x = calloc(n, sizeof(*p->x));
	p->y = calloc(n, sizeof(*p->y));
	p->lo = calloc(n, sizeof(*p->lo));
	p->hi = calloc(n, sizeof(*p->hi));
	buf = malloc(CHUNK * sizeof(*buf));
	if (!p->x || !p->y || !p->lo || !p->hi || !buf) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	for (i = 0; i < (uint64_t)n; i++) {
		p->lo[i] = i * per;
		p->hi[i] = p->lo[i] + per < windows ? p->lo[i] + per : windows;
		span = (p->hi[i] - p->lo[i]) * T + max_phase + 1;
		ret = gpo__pool_alloc(dev, span * 4, &p->x[i]);
		if (ret)
			goto out_free;
		p->nblk++;
		for (k = 0; !ret && k < span; k += c) {
			uint64_t j, at = p->lo[i] * T + k;

			c = span - k < CHUNK ? span - k : CHUNK;
			for (j = 0; j < c; j++)
				buf[j] = bytes[at + j];
			ret = dev->ops->write(dev, &p->x[i], k * 4, buf, c * 4);
		}
		if (ret)
			goto out_free;
	}
	ret = order_upload(dev, p);
out_free:
	free(buf);
	return ret;
}

static void net_free(struct net *n)
{
	gpo_graph_free(n->g);
	memset(n, 0, sizeof(*n));
}

static int net_build(struct gpo_train *t, struct net *n, uint32_t rows,
		     int train)
{
	uint64_t xs[2] = { rows, t->ds->features }, ys[1] = { rows };
	struct gpo_graph *g;
	struct gpo_tensor *logits;
	int ret;

	ret = gpo_graph_new(t->dev, &g);
	if (ret)
		return ret;
	n->g = g;
	n->rows = rows;
	if (t->mm_f16) {
		ret = gpo_graph_set_matmul_f16(g, 1);
		if (ret)
			return ret;
	}
	if (t->gpt) {
		/* windows: [rows, T] inputs, [rows * T] targets */
		xs[1] = t->ctx;
		ys[0] = (uint64_t)rows * t->ctx;
	}
	n->x = gpo_tensor_input(g, "x", t->gpt ? GPO_I32 : GPO_F32, 2, xs);
	n->y = gpo_tensor_input(g, "y", GPO_I32, 1, ys);
	logits = gpo__model_forward(t->m, g, n->x, train);
	n->loss = gpo__model_loss(t->m, g, logits, n->y);
	n->acc = gpo_accuracy(g, logits, n->y);
	if (train)
		ret = gpo_graph_backward(g, n->loss);
	else
		ret = gpo_graph_status(g);
	if (ret)
		return ret;
	pthread_mutex_lock(&t->dev->lock);
	/*
	 * backward starts from the loss scale the optimizer keeps on the
	 * device (1 when off): no step waits for it, and the optimizer's
	 * norm pass unscales what arrives
	 */
	if (train)
		ret = gpo__optim_ensure_allocated(t->m->opt);
	if (!ret && train)
		ret = gpo__graph_seed_from(g, &t->m->opt->scal, GPO_SCAL_LS);
	if (!ret)
		ret = gpo__graph_plan(g);
	pthread_mutex_unlock(&t->dev->lock);
	return ret;
}

/* labels the model has no output for, or a width it does not take */
/*
 * A gpt's windows: the training part's (@max_phase left free at its end
 * for the phases), and the evaluation part's (none when it is too short)
 */
static int check_fit_gpt(struct gpo_train *t)
{
	const struct gpo_dataset *ds = t->ds;
	const struct gpo_model *m = t->m;
	uint64_t T = m->ctx, n = ds->train.n;

	if (!ds->is_bytes)
		return gpo__err(-EINVAL, "the model %s trains on bytes: open %.200s with GPO_DATASET_BYTES",
				m->spec, ds->source);
	if (n < T + 1)
		return gpo__err(-EINVAL, "ctx %u needs at least %u bytes of training data, %.200s has %llu (of %llu, the last tenth held out)",
				m->ctx, m->ctx + 1, ds->source,
				(unsigned long long)n,
				(unsigned long long)(n + ds->eval.n));
	t->ctx = m->ctx;
	/* phases 0..T-1, but no window may pass the end: n - 1 - T >= 0 */
	t->max_phase = t->shuffle ? (uint32_t)(n - 1 - T < T - 1 ? n - 1 - T :
					       T - 1) : 0;
	t->ntrain = (n - 1 - t->max_phase) / T;
	t->neval = ds->eval.n > T ? (ds->eval.n - 1) / T : 0;
	if (t->batch > t->ntrain)
		return gpo__err(-EINVAL, "batch_size %u is more than the %llu windows of ctx + 1 = %u bytes in the training part",
				t->batch, (unsigned long long)t->ntrain,
				m->ctx + 1);
	return 0;
}

static int check_fit(struct gpo_train *t)
{
	const struct gpo_dataset *ds = t->ds;
	const struct gpo_model *m = t->m;
	uint32_t out;

	if (m->kind == MODEL_GPT)
		return check_fit_gpt(t);
	if (ds->is_bytes)
		return gpo__err(-EINVAL, "%.200s is a bytes dataset: only a gpt model trains on it, not %s",
				ds->source, m->spec);
	out = m->width[m->nwidth - 1];
	t->ntrain = ds->train.n;
	t->neval = ds->eval.n;

	if (ds->features != m->width[0])
		return gpo__err(-EINVAL, "the data's samples have %u values, the model %s takes %u",
				ds->features, m->spec, m->width[0]);
	if (ds->classes > out)
		return gpo__err(-EINVAL, "the data has labels up to %u, the model %s has %u outputs",
				ds->classes - 1, m->spec, out);
	if (t->batch > ds->train.n)
		return gpo__err(-EINVAL, "batch_size %u is more than the %llu training samples",
				t->batch, (unsigned long long)ds->train.n);
	return 0;
}

int gpo_train_new(struct gpo_model *m, struct gpo_dataset *ds,
		  const char *opts, struct gpo_train **out)
{
	struct gpo_train *t;
	uint64_t ne, stage, rows;
	uint32_t e;
	int ret;

	if (!m || !ds || !out)
		return gpo__err(-EINVAL, "gpo_train_new: NULL argument");
	t = calloc(1, sizeof(*t));
	if (!t)
		return gpo__err(-ENOMEM, "out of memory");
	t->m = m;
	t->ds = ds;
	t->dev = m->opt->dev;
	t->gpt = m->kind == MODEL_GPT;
	ret = parse_opts(t, opts);
	if (!ret)
		ret = check_fit(t);
	if (ret)
		goto out_free;
	if (!t->eval_batch)
		t->eval_batch = t->gpt ? t->batch : 1000;
	t->spe = t->ntrain / t->batch;
	ne = t->neval;
	t->order = malloc(t->ntrain * sizeof(*t->order));
	if (!t->order) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	ret = net_build(t, &t->net, t->batch, 1);
	if (!ret && ne) {
		e = t->eval_batch < ne ? t->eval_batch : (uint32_t)ne;
		ret = net_build(t, &t->ev[0], e, 0);
		if (!ret && ne % e)
			ret = net_build(t, &t->ev[1], (uint32_t)(ne % e), 0);
	}
	if (ret)
		goto out_free;

	pthread_mutex_lock(&t->dev->lock);
	if (t->gpt) {
		ret = part_upload_bytes(t, &t->train, ds->bytes, t->ntrain,
					t->max_phase);
		if (!ret && ne)
			ret = part_upload_bytes(t, &t->eval,
						ds->bytes + ds->train.n, ne, 0);
	} else {
		ret = part_upload(t, &t->train, &ds->train);
		if (!ret && ne)
			ret = part_upload(t, &t->eval, &ds->eval);
	}
	pthread_mutex_unlock(&t->dev->lock);
	if (!ret) {
		t->on_device = 1;
	} else if (ret == -ENOMEM) {
		/* does not fit: batches go from host memory */
		part_free(t->dev, &t->train);
		part_free(t->dev, &t->eval);
		t->train.host = &ds->train;
		t->eval.host = &ds->eval;
		t->train.bytes = ds->bytes;
		t->eval.bytes = ds->bytes ? ds->bytes + ds->train.n : NULL;
		/* a batch, or an evaluation batch when that is larger */
		rows = t->batch > t->ev[0].rows ? t->batch : t->ev[0].rows;
		stage = rows * (t->gpt ? t->ctx : ds->features);
		t->stage_x = malloc(stage * 4);
		t->stage_y = malloc((t->gpt ? stage : rows) * 4);
		if (!t->stage_x || !t->stage_y) {
			ret = gpo__err(-ENOMEM, "out of memory");
			goto out_free;
		}
	} else {
		goto out_free;
	}
	gpo__err_clear();
	*out = t;
	return 0;

out_free:
	gpo_train_free(t);
	return ret;
}

void gpo_train_free(struct gpo_train *t)
{
	if (!t)
		return;
	if (t->rec)
		t->dev->ops->graph_free(t->dev, t->rec);
	net_free(&t->net);
	net_free(&t->ev[0]);
	net_free(&t->ev[1]);
	pthread_mutex_lock(&t->dev->lock);
	part_free(t->dev, &t->train);
	part_free(t->dev, &t->eval);
	pthread_mutex_unlock(&t->dev->lock);
	free(t->order);
	free(t->stage_x);
	free(t->stage_y);
	free(t);
}

uint64_t gpo_train_steps_per_epoch(const struct gpo_train *t)
{
	return t ? t->spe : 0;
}

/*
 * rows @idx[0 .. rows) of block @src (rows [lo, hi)) into @dst: row r is
 * @width elements from element @from + (r - lo) @stride of the block
 */
static int gather_one(struct gpo_device *dev, enum gpo_dtype dt,
		      const struct dev_buf *src, uint64_t from, uint64_t span,
		      uint64_t lo, uint64_t hi, uint32_t width, uint32_t stride,
		      const struct tview *idx, uint32_t rows,
		      const struct tview *dst)
{
	uint64_t n = (uint64_t)rows * width;
	struct gpo_gather_args a = { 0 };
	struct op_call c = { .op = OP_GATHER_ROWS, .dtype = dt, .args = &a };
	struct tview s = { *src, from };
	uint64_t gr = (n + GPO_WG_SIZE - 1) / GPO_WG_SIZE;

	a.n = (uint32_t)n;
	a.groups = (uint32_t)(gr > T_GROUPS_CAP ? T_GROUPS_CAP : gr);
	a.rows = rows;
	a.width = width;
	a.stride = stride;
	a.row_lo = (uint32_t)lo;
	a.row_hi = (uint32_t)hi;
	c.work = a.groups;
	gpo__view_bind(&s, span - from, &c.buf[0], &a.off_src);
	gpo__view_bind(idx, rows, &c.buf[1], &a.off_idx);
	gpo__view_bind(dst, n, &c.buf[2], &a.off_dst);
	return gpo__launch(dev, &c);
}

/* write @bytes of host @src into tensor @x */
static int write_input(struct gpo_device *dev, struct gpo_tensor *x,
		       const void *src, uint64_t bytes)
{
	struct dev_buf b = x->st.blk;

	b.off += x->st.elem * 4;
	return dev->ops->write(dev, &b, 0, src, bytes);
}

/*
 * A gpt's windows @order[first .. first + n->rows) (NULL: in order) of
 * part @p, at phase @phase: on the device, inputs from the window's
 * start and targets from one later, with a row stride of T
 */
static int load_windows(struct gpo_train *t, struct part_dev *p,
			const uint32_t *order, uint64_t first, uint32_t phase,
			uint32_t max_phase, struct net *n)
{
	struct gpo_device *dev = t->dev;
	uint32_t T = t->ctx, r, j;
	struct tview idx = { p->order, first };
	int32_t *sx = t->stage_x, *sy = t->stage_y;
	uint64_t span;
	int i, ret;

	if (t->on_device) {
		for (i = 0; i < p->nblk; i++) {
			span = (p->hi[i] - p->lo[i]) * T + max_phase + 1;
			ret = gather_one(dev, GPO_I32, &p->x[i], phase, span,
					 p->lo[i], p->hi[i], T, T, &idx,
					 n->rows, &n->x->st);
			if (!ret)
				ret = gather_one(dev, GPO_I32, &p->x[i],
						 phase + 1, span, p->lo[i],
						 p->hi[i], T, T, &idx,
						 n->rows, &n->y->st);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (r = 0; r < n->rows; r++) {
		uint64_t s = order ? order[first + r] : first + r;
		const uint8_t *w = p->bytes + s * T + phase;

		for (j = 0; j < T; j++) {
			sx[(uint64_t)r * T + j] = w[j];
			sy[(uint64_t)r * T + j] = w[j + 1];
		}
	}
	ret = write_input(dev, n->x, sx, (uint64_t)n->rows * T * 4);
	if (!ret)
		ret = write_input(dev, n->y, sy, (uint64_t)n->rows * T * 4);
	return ret;
}

/*
 * load - samples @order[first .. first + n->rows) of part @p into @n's
 * inputs: gathered on the device, or on the host and written
 */
static int load(struct gpo_train *t, struct part_dev *p, const uint32_t *order,
		uint64_t first, struct net *n)
{
	struct gpo_device *dev = t->dev;
	uint32_t f = t->ds->features, r;
	struct tview idx = { p->order, first };
	float *sx = t->stage_x;
	int i, ret;

	if (t->on_device) {
		for (i = 0; i < p->nblk; i++) {
			uint64_t rows = p->hi[i] - p->lo[i];

			ret = gather_one(dev, GPO_F32, &p->x[i], 0, rows * f,
					 p->lo[i], p->hi[i], f, f, &idx,
					 n->rows, &n->x->st);
			if (!ret)
				ret = gather_one(dev, GPO_I32, &p->y[i], 0,
						 rows, p->lo[i], p->hi[i], 1,
						 1, &idx, n->rows, &n->y->st);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (r = 0; r < n->rows; r++) {
		uint64_t s = order ? order[first + r] : first + r;

		memcpy(sx + (uint64_t)r * f, p->host->x + s * f, f * 4);
		t->stage_y[r] = p->host->y[s];
	}
	ret = write_input(dev, n->x, sx, (uint64_t)n->rows * f * 4);
	if (!ret)
		ret = write_input(dev, n->y, t->stage_y, (uint64_t)n->rows * 4);
	return ret;
}

/* the order (and a gpt's phase) of @epoch, on the device too */
static int set_epoch(struct gpo_train *t, uint64_t epoch)
{
	int ret;

	if (t->order_valid && t->order_epoch == epoch)
		return 0;
	ret = gpo__sample_order(t->ntrain, t->seed, epoch, t->shuffle,
				t->order, t->ds->source);
	if (!ret && t->on_device)
		ret = t->dev->ops->write(t->dev, &t->train.order, 0, t->order,
					 t->ntrain * 4);
	if (ret)
		return ret;
	t->phase = gpo__window_phase(t->seed, epoch, t->max_phase);
	t->order_valid = 1;
	t->order_epoch = epoch;
	return 0;
}

static int read_scalar(struct gpo_device *dev, struct gpo_tensor *s,
		       double *out)
{
	struct dev_buf b = s->st.blk;
	float v;
	int ret;

	b.off += s->st.elem * 4;
	b.size = 4;
	ret = dev->ops->read(dev, &b, 0, &v, 4);
	*out = v;
	return ret;
}

int gpo__train_set_shards(struct gpo_train *t, const struct train_shards *s)
{
	struct net n = { 0 };
	int ret;

	if (!t || !s || !s->shards || s->lo >= s->hi || s->hi > s->shards ||
	    !s->shard_done || !s->reduce ||
	    (s->last_ready && (!s->last_begin || !s->bucket_bytes)))
		return gpo__err(-EINVAL, "gpo__train_set_shards: bad arguments");
	if (t->batch % s->shards)
		return gpo__err(-EINVAL, "batch_size %u is not a multiple of shards=%u",
				t->batch, s->shards);
	/* the shards' gradients are read back and summed as f32 */
	if (t->m->opt->grad_dtype != GPO_F32)
		return gpo__err(-ENOSYS, "shards=%u: data-parallel steps with %s parameters and gradients are not written yet (f32 only)",
				s->shards, gpo_dtype_name(t->m->opt->grad_dtype));
	ret = net_build(t, &n, t->batch / s->shards, 1);
	if (ret) {
		net_free(&n);
		return ret;
	}
	net_free(&t->net);
	t->net = n;
	t->sh = *s;
	return 0;
}

struct gpo_optim *gpo__train_optim(const struct gpo_train *t)
{
	return t ? t->m->opt : NULL;
}

/* buckets by their last writer, then by position */
struct bucket_key {
	int64_t last;
	uint64_t b;
};

static int key_cmp(const void *pa, const void *pb)
{
	const struct bucket_key *a = pa, *b = pb;

	if (a->last != b->last)
		return a->last < b->last ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

/*
 * The last shard's forward and backward in segments (dev->lock held, and
 * again on return): each segment ends at the last launch that writes
 * into one or more buckets of the grad buffer, and is submitted before
 * the comm layer reads those buckets back and starts their reduction,
 * while the device goes on. The launches are the same and in the same
 * order as gpo__graph_launch()'s: the bits do not change.
 */
static int segmented(struct gpo_train *t)
{
	struct gpo_device *dev = t->dev;
	struct gpo_graph *g = t->net.g;
	struct dev_buf gb = t->m->opt->grad;
	uint64_t bb = t->sh.bucket_bytes, nb, j, r, *order = NULL;
	struct bucket_key *key = NULL;
	int64_t *last = NULL;
	size_t from = 0, end, n;
	int ret, fwd = 1;

	ret = gpo__graph_plan(g);
	if (ret)
		return ret;
	gb.size = t->m->opt->total * 4;
	nb = (gb.size + bb - 1) / bb;
	n = gpo__graph_bwd_launches(g);
	last = malloc(nb * sizeof(*last));
	key = malloc(nb * sizeof(*key));
	order = malloc(nb * sizeof(*order));
	if (!last || !key || !order) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	ret = gpo__graph_last_writers(g, &gb, bb, nb, last);
	if (ret)
		goto out_free;
	for (j = 0; j < nb; j++) {
		/* none writes it: final after the first segment */
		key[j].last = last[j] < 0 ? 0 : last[j];
		key[j].b = j;
	}
	qsort(key, nb, sizeof(*key), key_cmp);
	for (j = 0; j < nb; j++)
		order[j] = key[j].b;
	pthread_mutex_unlock(&dev->lock);
	ret = t->sh.last_begin(t->sh.arg, order, nb);
	pthread_mutex_lock(&dev->lock);
	for (j = 0; !ret && j < nb; j = r) {
		end = (size_t)key[j].last + 1;
		if (end > n)
			end = n;
		for (r = j; r < nb && key[r].last == key[j].last; r++)
			;
		ret = gpo__graph_launch_range(g, fwd, from, end);
		fwd = 0;
		if (!ret && dev->ops->submit)
			ret = dev->ops->submit(dev);
		if (ret)
			break;
		from = end;
		pthread_mutex_unlock(&dev->lock);
		ret = t->sh.last_ready(t->sh.arg, r);
		pthread_mutex_lock(&dev->lock);
	}
	/* what writes no bucket (the input's gradient, say) */
	if (!ret && (fwd || from < n))
		ret = gpo__graph_launch_range(g, fwd, from, n);
out_free:
	free(order);
	free(key);
	free(last);
	return ret;
}

/* the inputs of the @rows rows from data position @at, windows for a gpt */
static int load_batch(struct gpo_train *t, uint64_t at)
{
	if (t->gpt)
		return load_windows(t, &t->train, t->order, at, t->phase,
				    t->max_phase, &t->net);
	return load(t, &t->train, t->order, at, &t->net);
}

/*
 * One sharded step's forward and backward: this process's shards of the
 * batch at data position @pos, each shard's gradient handed on before the
 * next overwrites it, then the reduction
 */
static int sharded_pass(struct gpo_train *t, uint64_t pos, double *loss,
			double *acc)
{
	struct gpo_device *dev = t->dev;
	uint64_t first = (pos % t->spe) * t->batch;
	uint32_t k;
	double l, a;
	int ret = 0;

	for (k = t->sh.lo; !ret && k < t->sh.hi; k++) {
		uint64_t at = first + (uint64_t)k * t->net.rows;

		pthread_mutex_lock(&dev->lock);
		/* a loss scale set since the last step, as plain steps do */
		ret = gpo__optim_ensure_allocated(t->m->opt);
		if (!ret)
			ret = set_epoch(t, pos / t->spe);
		if (!ret)
			ret = load_batch(t, at);
		if (!ret && k + 1 == t->sh.hi && t->sh.last_ready)
			ret = segmented(t);
		else if (!ret)
			ret = gpo__graph_launch(t->net.g, GPO_RUN_FORWARD |
							  GPO_RUN_BACKWARD);
		if (!ret)
			ret = read_scalar(dev, t->net.loss, &l);
		if (!ret)
			ret = read_scalar(dev, t->net.acc, &a);
		pthread_mutex_unlock(&dev->lock);
		if (!ret)
			ret = t->sh.shard_done(t->sh.arg, k, l, a);
	}
	return ret ? ret : t->sh.reduce(t->sh.arg, loss, acc);
}

/* the 4 bytes of scalar tensor @s */
static struct dev_buf scalar_buf(const struct gpo_tensor *s)
{
	struct dev_buf b = s->st.blk;

	b.off += s->st.elem * 4;
	b.size = 4;
	return b;
}

/*
 * plain_step - one step of the whole batch under dev->lock: load,
 * forward, backward and update as one recorded submission where the
 * backend records (graph_begin), the loss, the accuracy and the
 * update's scalars read back in it, and one wait, for the loss when
 * @want, for the update's scalars when a step may be skipped; else the
 * step is queued and this returns. Inputs the host writes go before the
 * recording (a recording holds no transfer); so does whatever the
 * optimizer must settle first. Where the launches could not be
 * recorded they went to the batch: what is needed is read from there.
 */
static int plain_step(struct gpo_train *t, uint64_t pos, int want,
		      double *loss, double *acc, struct gpo_step_info *si)
{
	struct gpo_device *dev = t->dev;
	struct gpo_optim *opt = t->m->opt;
	uint64_t epoch = pos / t->spe, first = (pos % t->spe) * t->batch;
	struct optim_pending ps;
	struct dev_buf rb[3];
	float scal[GPO_SCAL_SIZE], v[2];
	const void *host = NULL;
	uint64_t ns = 0;
	int ret, end = 0, rec = 0, gathers = t->on_device;

	/* a loss scale set since the last step: its state, before the seed */
	ret = gpo__optim_prepare_locked(opt, &ps);
	if (!ret)
		ret = set_epoch(t, epoch);
	if (!ret && !gathers)
		ret = load_batch(t, first);
	if (!ret && dev->ops->graph_begin) {
		ret = dev->ops->graph_begin(dev, &t->rec);
		rec = !ret;
	}
	if (!ret && gathers)
		ret = load_batch(t, first);
	if (!ret)
		ret = gpo__graph_launch(t->net.g,
					GPO_RUN_FORWARD | GPO_RUN_BACKWARD);
	if (!ret)
		ret = gpo__optim_launch_locked(opt, &ps);
	if (rec) {
		rb[0] = scalar_buf(t->net.loss);
		rb[1] = scalar_buf(t->net.acc);
		rb[2] = opt->scal;
		rb[2].size = GPO_SCAL_SIZE * sizeof(float);
		end = dev->ops->graph_end(dev, t->rec, ret != 0, rb,
					  ps.use_norm ? 3 : 2, &host);
		if (!ret && end < 0)
			ret = end;
	}
	if (ret)
		return ret;
	if (end > 0 && (want || ps.use_norm)) {
		ret = dev->ops->wait(dev, &ns);
		if (ret)
			return ret;
		memcpy(v, (const char *)host + gpo__rb_offset(rb, 0), 4);
		memcpy(v + 1, (const char *)host + gpo__rb_offset(rb, 1), 4);
		if (ps.use_norm)
			memcpy(scal, (const char *)host + gpo__rb_offset(rb, 2),
			       sizeof(scal));
		*loss = v[0];
		*acc = v[1];
	} else if (end == 0) {
		/* the scalars a skipped step leaves; the loss if asked */
		if (ps.use_norm)
			ret = dev->ops->read(dev, &opt->scal, 0, scal,
					     sizeof(scal));
		if (!ret && ps.use_norm)
			ret = dev->ops->wait(dev, &ns);
		if (!ret && want)
			ret = read_scalar(dev, t->net.loss, loss);
		if (!ret && want)
			ret = read_scalar(dev, t->net.acc, acc);
		if (ret)
			return ret;
	}
	gpo__optim_finish_locked(opt, &ps, scal, ns, si);
	return 0;
}

int gpo_train_step(struct gpo_train *t, struct gpo_train_result *res)
{
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_step_info si;
	uint64_t pos;
	double sl = 0, sa = 0;
	int ret;

	if (!t)
		return gpo__err(-EINVAL, "NULL trainer");
	dev = t->dev;
	opt = t->m->opt;
	pos = opt->step + opt->skipped;
	/* the dropout masks of this data position */
	gpo_graph_set_step(t->net.g, pos);
	if (t->sh.shards) {
		ret = sharded_pass(t, pos, &sl, &sa);
		if (!ret)
			ret = t->sh.step ? t->sh.step(t->sh.arg, &si) :
					   gpo__optim_step(opt, &si, 0);
	} else {
		ret = gpo__optim_check(opt);
		if (!ret) {
			pthread_mutex_lock(&dev->lock);
			ret = plain_step(t, pos, res != NULL, &sl, &sa,
					 &si);
			pthread_mutex_unlock(&dev->lock);
		}
	}
	if (ret || !res)
		return ret;
	res->loss = sl;
	res->accuracy = sa;
	res->step = opt->step;
	pos = opt->step + opt->skipped;
	res->epoch = pos / t->spe;
	res->samples = pos * t->batch;
	res->tokens = t->gpt ? res->samples * t->ctx : 0;
	res->grad_norm = si.grad_norm;
	res->lr = si.lr;
	res->skipped = si.skipped;
	res->loss_scale = si.loss_scale;
	return 0;
}

int gpo_train_eval(struct gpo_train *t, struct gpo_train_result *res)
{
	struct gpo_device *dev;
	uint64_t n, first;
	double loss = 0, acc = 0;
	int ret = 0;

	if (!t || !res)
		return gpo__err(-EINVAL, "NULL argument");
	n = t->neval;
	if (!n && t->gpt)
		return gpo__err(-ENODATA, "the held-out part of %.200s has %llu bytes, fewer than a window of ctx + 1 = %u",
				t->ds->source,
				(unsigned long long)t->ds->eval.n, t->ctx + 1);
	if (!n)
		return gpo__err(-ENODATA, "the dataset has no evaluation part");
	dev = t->dev;
	pthread_mutex_lock(&dev->lock);
	for (first = 0; !ret && first < n;) {
		struct net *e = n - first >= t->ev[0].rows ? &t->ev[0] :
							     &t->ev[1];
		double l = 0, a = 0;

		if (t->gpt)
			ret = load_windows(t, &t->eval, NULL, first, 0, 0, e);
		else
			ret = load(t, &t->eval, NULL, first, e);
		if (!ret)
			ret = gpo__graph_launch(e->g, GPO_RUN_FORWARD);
		if (!ret)
			ret = read_scalar(dev, e->loss, &l);
		if (!ret)
			ret = read_scalar(dev, e->acc, &a);
		loss += l * e->rows;
		acc += a * e->rows;
		first += e->rows;
	}
	pthread_mutex_unlock(&dev->lock);
	if (ret)
		return ret;
	memset(res, 0, sizeof(*res));
	res->loss = loss / (double)n;
	res->accuracy = acc / (double)n;
	res->step = t->m->opt->step;
	res->epoch = (t->m->opt->step + t->m->opt->skipped) / t->spe;
	res->samples = n;
	res->tokens = t->gpt ? n * t->ctx : 0;
	res->grad_norm = NAN;
	res->lr = NAN;
	res->loss_scale = NAN;
	return 0;
}
