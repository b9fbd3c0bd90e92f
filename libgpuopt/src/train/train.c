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
	int nblk;
	struct dev_buf *x, *y;		/* block i: rows [lo[i], hi[i]) */
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
	uint64_t seed;
	uint64_t spe;			/* steps per epoch */
	int on_device;
	struct part_dev train, eval;
	uint64_t order_epoch;		/* the epoch train.order holds */
	int order_valid;
	uint32_t *order;		/* host: the epoch's order */
	float *stage_x;			/* host mode: a batch */
	int32_t *stage_y;
	struct net net;			/* training */
	struct net ev[2];		/* evaluation: full batches, the rest */
};

static int parse_opts(struct gpo_train *t, const char *opts)
{
	const char *pos = opts ? opts : "";
	char key[32], val[64];
	uint64_t v;
	int ret, b;

	t->batch = 64;
	t->eval_batch = 1000;
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
		if (strcmp(key, "seed") && strcmp(key, "batch_size") &&
		    strcmp(key, "eval_batch"))
			return gpo__err(-EINVAL, "unknown training setting '%s' (batch_size, shuffle, seed, eval_batch)",
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
			return gpo__err(-EINVAL, "unknown training setting '%s' (batch_size, shuffle, seed, eval_batch)",
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

/* @p's samples to the device, and @order (NULL: 0, 1, 2, ...) */
static int part_upload(struct gpo_train *t, struct part_dev *p,
		       const struct dataset_part *h)
{
	struct gpo_device *dev = t->dev;
	uint32_t f = t->ds->features;
	uint64_t per = block_rows(dev, f), i, r;
	uint32_t *iota;
	int ret, n;

	p->host = h;
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
	ret = gpo__pool_alloc(dev, h->n * 4, &p->order);
	if (ret)
		return ret;
	iota = malloc(h->n * 4);
	if (!iota)
		return gpo__err(-ENOMEM, "out of memory");
	for (i = 0; i < h->n; i++)
		iota[i] = (uint32_t)i;
	ret = dev->ops->write(dev, &p->order, 0, iota, h->n * 4);
	free(iota);
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
	n->x = gpo_tensor_input(g, "x", GPO_F32, 2, xs);
	n->y = gpo_tensor_input(g, "y", GPO_I32, 1, ys);
	logits = gpo_model_forward(t->m, g, n->x);
	n->loss = gpo__model_loss(t->m, g, logits, n->y);
	n->acc = gpo_accuracy(g, logits, n->y);
	if (train)
		ret = gpo_graph_backward(g, n->loss);
	else
		ret = gpo_graph_status(g);
	if (ret)
		return ret;
	pthread_mutex_lock(&t->dev->lock);
	ret = gpo__graph_plan(g);
	pthread_mutex_unlock(&t->dev->lock);
	return ret;
}

/* labels the model has no output for, or a width it does not take */
static int check_fit(struct gpo_train *t)
{
	const struct gpo_dataset *ds = t->ds;
	const struct gpo_model *m = t->m;
	uint32_t out = m->width[m->nwidth - 1];

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
	ret = parse_opts(t, opts);
	if (!ret)
		ret = check_fit(t);
	if (ret)
		goto out_free;
	t->spe = ds->train.n / t->batch;
	t->order = malloc(ds->train.n * sizeof(*t->order));
	if (!t->order) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	ret = net_build(t, &t->net, t->batch, 1);
	if (!ret && ds->eval.n) {
		e = t->eval_batch < ds->eval.n ? t->eval_batch :
						 (uint32_t)ds->eval.n;
		ret = net_build(t, &t->ev[0], e, 0);
		if (!ret && ds->eval.n % e)
			ret = net_build(t, &t->ev[1],
					(uint32_t)(ds->eval.n % e), 0);
	}
	if (ret)
		goto out_free;

	pthread_mutex_lock(&t->dev->lock);
	ret = part_upload(t, &t->train, &ds->train);
	if (!ret && ds->eval.n)
		ret = part_upload(t, &t->eval, &ds->eval);
	pthread_mutex_unlock(&t->dev->lock);
	if (!ret) {
		t->on_device = 1;
	} else if (ret == -ENOMEM) {
		/* does not fit: batches go from host memory */
		part_free(t->dev, &t->train);
		part_free(t->dev, &t->eval);
		t->train.host = &ds->train;
		t->eval.host = &ds->eval;
		t->stage_x = malloc((uint64_t)t->batch * ds->features * 4);
		t->stage_y = malloc((uint64_t)t->batch * 4);
		if (!t->stage_x || !t->stage_y) {
			ret = gpo__err(-ENOMEM, "out of memory");
			goto out_free;
		}
		ret = 0;
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

static int gather_one(struct gpo_device *dev, enum gpo_dtype dt,
		      const struct dev_buf *src, uint64_t lo, uint64_t hi,
		      uint32_t width, const struct tview *idx, uint32_t rows,
		      const struct tview *dst)
{
	uint64_t n = (uint64_t)rows * width;
	struct gpo_gather_args a = { 0 };
	struct op_call c = { .op = OP_GATHER_ROWS, .dtype = dt, .args = &a };
	struct tview s = { *src, 0 };
	uint64_t gr = (n + GPO_WG_SIZE - 1) / GPO_WG_SIZE;

	a.n = (uint32_t)n;
	a.groups = (uint32_t)(gr > T_GROUPS_CAP ? T_GROUPS_CAP : gr);
	a.rows = rows;
	a.width = width;
	a.stride = width;
	a.row_lo = (uint32_t)lo;
	a.row_hi = (uint32_t)hi;
	c.work = a.groups;
	gpo__view_bind(&s, (hi - lo) * width, &c.buf[0], &a.off_src);
	gpo__view_bind(idx, rows, &c.buf[1], &a.off_idx);
	gpo__view_bind(dst, n, &c.buf[2], &a.off_dst);
	return gpo__launch(dev, &c);
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
	struct dev_buf b;
	int i, ret;

	if (t->on_device) {
		for (i = 0; i < p->nblk; i++) {
			ret = gather_one(dev, GPO_F32, &p->x[i], p->lo[i],
					 p->hi[i], f, &idx, n->rows, &n->x->st);
			if (!ret)
				ret = gather_one(dev, GPO_I32, &p->y[i],
						 p->lo[i], p->hi[i], 1, &idx,
						 n->rows, &n->y->st);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (r = 0; r < n->rows; r++) {
		uint64_t s = order ? order[first + r] : first + r;

		memcpy(t->stage_x + (uint64_t)r * f, p->host->x + s * f, f * 4);
		t->stage_y[r] = p->host->y[s];
	}
	b = n->x->st.blk;
	b.off += n->x->st.elem * 4;
	ret = dev->ops->write(dev, &b, 0, t->stage_x, (uint64_t)n->rows * f * 4);
	if (ret)
		return ret;
	b = n->y->st.blk;
	b.off += n->y->st.elem * 4;
	return dev->ops->write(dev, &b, 0, t->stage_y, (uint64_t)n->rows * 4);
}

/* the order of @epoch, on the device too when the data is there */
static int set_epoch(struct gpo_train *t, uint64_t epoch)
{
	int ret;

	if (t->order_valid && t->order_epoch == epoch)
		return 0;
	ret = gpo__dataset_order(t->ds, t->seed, epoch, t->shuffle, t->order);
	if (!ret && t->on_device)
		ret = t->dev->ops->write(t->dev, &t->train.order, 0, t->order,
					 t->ds->train.n * 4);
	if (ret)
		return ret;
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

int gpo_train_step(struct gpo_train *t, struct gpo_train_result *res)
{
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_step_info si;
	uint64_t pos, epoch;
	int ret;

	if (!t)
		return gpo__err(-EINVAL, "NULL trainer");
	dev = t->dev;
	opt = t->m->opt;
	pos = opt->step + opt->skipped;
	epoch = pos / t->spe;
	pthread_mutex_lock(&dev->lock);
	ret = set_epoch(t, epoch);
	if (!ret)
		ret = load(t, &t->train, t->order, (pos % t->spe) * t->batch,
			   &t->net);
	if (!ret)
		ret = gpo__graph_launch(t->net.g,
					GPO_RUN_FORWARD | GPO_RUN_BACKWARD);
	pthread_mutex_unlock(&dev->lock);
	if (!ret)
		ret = gpo__optim_step(opt, &si, 0);
	if (ret || !res)
		return ret;
	pthread_mutex_lock(&dev->lock);
	ret = read_scalar(dev, t->net.loss, &res->loss);
	if (!ret)
		ret = read_scalar(dev, t->net.acc, &res->accuracy);
	pthread_mutex_unlock(&dev->lock);
	if (ret)
		return ret;
	res->step = opt->step;
	pos = opt->step + opt->skipped;
	res->epoch = pos / t->spe;
	res->samples = pos * t->batch;
	res->grad_norm = si.grad_norm;
	res->lr = si.lr;
	res->skipped = si.skipped;
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
	n = t->ds->eval.n;
	if (!n)
		return gpo__err(-ENODATA, "the dataset has no evaluation part");
	dev = t->dev;
	pthread_mutex_lock(&dev->lock);
	for (first = 0; !ret && first < n;) {
		struct net *e = n - first >= t->ev[0].rows ? &t->ev[0] :
							     &t->ev[1];
		double l = 0, a = 0;

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
	res->grad_norm = NAN;
	res->lr = NAN;
	return 0;
}
