// SPDX-License-Identifier: MIT
/*
 * gpt.c - the byte-level GPT-2: "gpt:layers=L,heads=H,dim=D,ctx=T"
 *
 * GPT-2's architecture over the 256 byte values, under GPT-2's parameter
 * names and in its Conv1D layout ([in, out], y = x W + b), so that a
 * torch user maps the tensors one to one. The forward pass is written
 * with the tensor engine's ops; attention runs all heads of all
 * sequences as one batch of matrices: the [B*T, 3D] projection is viewed
 * as [B*T, 3, H, hd] and permuted to [3, H, B*T, hd], whose three slices
 * are q, k and v as [H*B, T, hd] without another copy. Without dropout
 * (evaluation, sampling, dropout=0) they go to gpo_causal_attention's
 * fused kernels, which never store the T x T weights; dropout of the
 * weights needs them, and heads wider than the kernels take
 * (GPO_ATTN_MAX_HD) cannot go there: both compose matmul,
 * causal_softmax (and dropout).
 *
 * Sampling keeps a graph of one sequence with the model: each byte is a
 * forward run on the last ctx bytes and one row of logits read back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/train_i.h"
#include "tensor/tensor_i.h"
#include "optim/optim_i.h"
#include "core/rng_i.h"

#define GPT_MAX_LAYERS	1024
#define GPT_MAX_HEADS	1024
#define GPT_MAX_DIM	65536
#define GPT_MAX_CTX	65536
#define GPT_LN_EPS	1e-5
#define GPT_INIT_STD	0.02

static const char *const gpt_form = "gpt:layers=L,heads=H,dim=D,ctx=T";

/* "gpt:layers=L,heads=H,dim=D,ctx=T", the four in any order, each once */
static int parse_spec(struct gpo_model *m, const char *spec)
{
	static const char *const keys[4] = { "layers", "heads", "dim", "ctx" };
	static const uint64_t max[4] = {
		GPT_MAX_LAYERS, GPT_MAX_HEADS, GPT_MAX_DIM, GPT_MAX_CTX,
	};
	uint64_t val[4] = { 0 };
	const char *p = spec + 4;
	char word[64], num[32];
	int i;

	while (*p) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!len || len >= sizeof(word))
			return gpo__err(-EINVAL, "model '%.100s': expected %s",
					spec, gpt_form);
		memcpy(word, p, len);
		word[len] = '\0';
		eq = strchr(word, '=');
		if (!eq)
			return gpo__err(-EINVAL, "model '%.100s': '%s' is not key=value (%s)",
					spec, word, gpt_form);
		for (i = 0; i < 4; i++)
			if (strlen(keys[i]) == (size_t)(eq - word) &&
			    !strncmp(word, keys[i], eq - word))
				break;
		if (i == 4)
			return gpo__err(-EINVAL, "model '%.100s': unknown key '%.*s' (%s)",
					spec, (int)(eq - word), word, gpt_form);
		if (val[i])
			return gpo__err(-EINVAL, "model '%.100s': %s given twice",
					spec, keys[i]);
		snprintf(num, sizeof(num), "%s", eq + 1);
		if (gpo__parse_u64(num, &val[i]) || !val[i] || val[i] > max[i])
			return gpo__err(-EINVAL, "model '%.100s': %s '%s': a whole number 1..%llu",
					spec, keys[i], eq + 1,
					(unsigned long long)max[i]);
		p += len;
		if (*p)
			p++;
		if (end && !*p)
			return gpo__err(-EINVAL, "model '%.100s': a comma at the end",
					spec);
	}
	for (i = 0; i < 4; i++)
		if (!val[i])
			return gpo__err(-EINVAL, "model '%.100s': no %s= (%s)",
					spec, keys[i], gpt_form);
	m->layers = (uint32_t)val[0];
	m->heads = (uint32_t)val[1];
	m->dim = (uint32_t)val[2];
	m->ctx = (uint32_t)val[3];
	if (m->dim % m->heads)
		return gpo__err(-EINVAL, "gpt: dim %u is not a multiple of heads %u",
				m->dim, m->heads);
	return 0;
}

static int parse_opts(struct gpo_model *m, const char *opts)
{
	const char *pos = opts ? opts : "";
	char key[32], val[64];
	int ret;

	m->loss = LOSS_XENT;
	while ((ret = gpo__kv_next(&pos, key, sizeof(key), val,
				   sizeof(val))) > 0) {
		if (!strcmp(key, "seed")) {
			if (gpo__parse_u64(val, &m->seed))
				return gpo__err(-EINVAL, "seed '%s': a whole number",
						val);
		} else if (!strcmp(key, "dropout")) {
			if (gpo__parse_double(val, &m->dropout) ||
			    !(m->dropout >= 0 && m->dropout < 1))
				return gpo__err(-EINVAL, "dropout '%s': a number 0 <= p < 1",
						val);
		} else {
			return gpo__err(-EINVAL, "unknown gpt setting '%s' (seed, dropout)",
					key);
		}
	}
	return ret;
}

/* add tensor @name of @ndim sizes to m->opt, starting as @kind, @a */
static int add(struct gpo_model *m, const char *name, int ndim, uint64_t s0,
	       uint64_t s1, enum init_kind kind, double a)
{
	uint64_t shape[2] = { s0, s1 };
	int ret;

	ret = gpo_optim_add_tensor(m->opt, name, ndim, shape, 0);
	if (ret < 0)
		return ret;
	m->init[ret].kind = kind;
	m->init[ret].a = a;
	return 0;
}

/* a linear map in GPT-2's Conv1D layout: W [in, out], b [out] */
static int add_conv1d(struct gpo_model *m, const char *prefix, uint64_t in,
		      uint64_t out, double std)
{
	char name[64];
	int ret;

	snprintf(name, sizeof(name), "%s.weight", prefix);
	ret = add(m, name, 2, in, out, INIT_NORMAL, std);
	if (ret)
		return ret;
	snprintf(name, sizeof(name), "%s.bias", prefix);
	return add(m, name, 1, out, 0, INIT_CONST, 0);
}

static int add_ln(struct gpo_model *m, const char *prefix)
{
	char name[64];
	int ret;

	snprintf(name, sizeof(name), "%s.weight", prefix);
	ret = add(m, name, 1, m->dim, 0, INIT_CONST, 1);
	if (ret)
		return ret;
	snprintf(name, sizeof(name), "%s.bias", prefix);
	return add(m, name, 1, m->dim, 0, INIT_CONST, 0);
}

int gpo__gpt_new(struct gpo_model *m, const char *spec, const char *opts)
{
	/* GPT-2 scales the residual projections by 1/sqrt(2L) */
	double proj_std;
	char pre[64];
	uint32_t l, d;
	int ret;

	ret = parse_spec(m, spec);
	if (!ret)
		ret = parse_opts(m, opts);
	if (ret)
		return ret;
	d = m->dim;
	proj_std = GPT_INIT_STD / sqrt(2.0 * m->layers);
	m->init = calloc(4 + 12 * (size_t)m->layers, sizeof(*m->init));
	if (!m->init)
		return gpo__err(-ENOMEM, "out of memory");
	ret = add(m, "wte.weight", 2, GPT_VOCAB, d, INIT_NORMAL, GPT_INIT_STD);
	if (!ret)
		ret = add(m, "wpe.weight", 2, m->ctx, d, INIT_NORMAL,
			  GPT_INIT_STD);
	for (l = 0; !ret && l < m->layers; l++) {
		snprintf(pre, sizeof(pre), "h.%u.ln_1", l);
		ret = add_ln(m, pre);
		snprintf(pre, sizeof(pre), "h.%u.attn.c_attn", l);
		if (!ret)
			ret = add_conv1d(m, pre, d, 3 * (uint64_t)d,
					 GPT_INIT_STD);
		snprintf(pre, sizeof(pre), "h.%u.attn.c_proj", l);
		if (!ret)
			ret = add_conv1d(m, pre, d, d, proj_std);
		snprintf(pre, sizeof(pre), "h.%u.ln_2", l);
		if (!ret)
			ret = add_ln(m, pre);
		snprintf(pre, sizeof(pre), "h.%u.mlp.c_fc", l);
		if (!ret)
			ret = add_conv1d(m, pre, d, 4 * (uint64_t)d,
					 GPT_INIT_STD);
		snprintf(pre, sizeof(pre), "h.%u.mlp.c_proj", l);
		if (!ret)
			ret = add_conv1d(m, pre, 4 * (uint64_t)d, d, proj_std);
	}
	if (!ret)
		ret = add_ln(m, "ln_f");
	return ret;
}

static struct gpo_tensor *param(struct gpo_model *m, struct gpo_graph *g,
				int l, const char *what)
{
	char name[96];

	if (l < 0)
		snprintf(name, sizeof(name), "%s", what);
	else
		snprintf(name, sizeof(name), "h.%d.%s", l, what);
	return gpo_tensor_param(g, m->opt, name);
}

/* x W + b of the Conv1D @what of layer @l */
static struct gpo_tensor *conv1d(struct gpo_model *m, struct gpo_graph *g,
				 int l, const char *what, struct gpo_tensor *x)
{
	char w[64], b[64];

	snprintf(w, sizeof(w), "%s.weight", what);
	snprintf(b, sizeof(b), "%s.bias", what);
	return gpo_add(g, gpo_matmul(g, x, param(m, g, l, w), 0),
		       param(m, g, l, b));
}

static struct gpo_tensor *layer_norm(struct gpo_model *m, struct gpo_graph *g,
				     int l, const char *what,
				     struct gpo_tensor *x)
{
	char w[64], b[64];

	snprintf(w, sizeof(w), "%s.weight", what);
	snprintf(b, sizeof(b), "%s.bias", what);
	return gpo_layer_norm(g, x, param(m, g, l, w), param(m, g, l, b),
			      GPT_LN_EPS);
}

static struct gpo_tensor *reshape(struct gpo_graph *g, struct gpo_tensor *x,
				  int ndim, uint64_t s0, uint64_t s1,
				  uint64_t s2, uint64_t s3)
{
	uint64_t s[4] = { s0, s1, s2, s3 };

	return gpo_reshape(g, x, ndim, s);
}

/*
 * Causal self-attention of @a [B*S, D]: the heads' outputs, joined again
 * as [B*S, D], before c_proj
 */
static struct gpo_tensor *attention(struct gpo_model *m, struct gpo_graph *g,
				    int l, struct gpo_tensor *a, uint64_t b,
				    uint64_t s, double p)
{
	static const int to_heads[4] = { 1, 2, 0, 3 }, from_heads[3] = { 1, 0, 2 };
	uint64_t h = m->heads, hd = m->dim / m->heads, n = b * s;
	struct gpo_tensor *qkv, *q, *k, *v, *att, *y;

	qkv = conv1d(m, g, l, "attn.c_attn", a);
	/* [n, 3D] = [n, 3, H, hd] -> [3, H, n, hd] = [3, H*B, S, hd] */
	qkv = gpo_permute(g, reshape(g, qkv, 4, n, 3, h, hd), to_heads);
	qkv = reshape(g, qkv, 4, 3, h * b, s, hd);
	q = reshape(g, gpo_slice(g, qkv, 0, 1), 3, h * b, s, hd, 0);
	k = reshape(g, gpo_slice(g, qkv, 1, 1), 3, h * b, s, hd, 0);
	v = reshape(g, gpo_slice(g, qkv, 2, 1), 3, h * b, s, hd, 0);
	if (p == 0 && hd <= GPO_ATTN_MAX_HD) {
		/* no dropout of the weights, a head they take: fused kernels */
		y = gpo_causal_attention(g, q, k, v, 1.0 / sqrt((double)hd));
	} else {
		att = gpo_causal_softmax(g, gpo_matmul(g, q, k, GPO_MATMUL_TB),
					 1.0 / sqrt((double)hd));
		att = gpo_dropout(g, att, p, m->seed);
		y = gpo_matmul(g, att, v, 0);
	}
	/* [H*B, S, hd] = [H, n, hd] -> [n, H, hd] = [n, D] */
	y = reshape(g, y, 3, h, n, hd, 0);
	y = gpo_permute(g, y, from_heads);
	return reshape(g, y, 2, n, m->dim, 0, 0);
}

static struct gpo_tensor *block(struct gpo_model *m, struct gpo_graph *g,
				int l, struct gpo_tensor *h, uint64_t b,
				uint64_t s, double p)
{
	struct gpo_tensor *y;

	y = attention(m, g, l, layer_norm(m, g, l, "ln_1", h), b, s, p);
	y = gpo_dropout(g, conv1d(m, g, l, "attn.c_proj", y), p, m->seed);
	h = gpo_add(g, h, y);
	y = conv1d(m, g, l, "mlp.c_fc", layer_norm(m, g, l, "ln_2", h));
	y = conv1d(m, g, l, "mlp.c_proj", gpo_gelu_tanh(g, y));
	y = gpo_dropout(g, y, p, m->seed);
	return gpo_add(g, h, y);
}

struct gpo_tensor *gpo__gpt_forward(struct gpo_model *m, struct gpo_graph *g,
				    struct gpo_tensor *x, int train)
{
	double p = train ? m->dropout : 0;
	struct gpo_tensor *h, *wte, *pos;
	uint64_t shape[T_DIMS];
	uint32_t l;

	if (!x || g->err)
		return NULL;
	if (x->dtype != GPO_I32 || gpo_tensor_shape(x, shape) != 2 ||
	    shape[1] > m->ctx) {
		gpo__err(-EINVAL, "%s: the input must be [B, S] i32 bytes, S <= %u",
			 m->spec, m->ctx);
		gpo__graph_fail(g, -EINVAL);
		return NULL;
	}
	wte = param(m, g, -1, "wte.weight");
	pos = param(m, g, -1, "wpe.weight");
	if (shape[1] < m->ctx)
		pos = gpo_slice(g, pos, 0, shape[1]);
	/* [B, S, D] + [S, D] */
	h = gpo_add(g, gpo_embedding(g, wte, x), pos);
	h = gpo_dropout(g, h, p, m->seed);
	h = reshape(g, h, 2, shape[0] * shape[1], m->dim, 0, 0);
	for (l = 0; l < m->layers; l++)
		h = block(m, g, (int)l, h, shape[0], shape[1], p);
	h = layer_norm(m, g, -1, "ln_f", h);
	/* the head is tied to the token embedding: h wte^T */
	return gpo_matmul(g, h, wte, GPO_MATMUL_TB);
}

void gpo__gpt_free(struct gpo_model *m)
{
	gpo_graph_free(m->sg);
	m->sg = NULL;
	m->sx = m->slogits = NULL;
}

/* ---- sampling ----------------------------------------------------------- */

static int sample_graph(struct gpo_model *m)
{
	uint64_t xs[2] = { 1, m->ctx };
	struct gpo_device *dev = m->opt->dev;
	struct gpo_graph *g;
	int ret;

	ret = gpo_graph_new(dev, &g);
	if (ret)
		return ret;
	m->sx = gpo_tensor_input(g, "x", GPO_I32, 2, xs);
	m->slogits = gpo__gpt_forward(m, g, m->sx, 0);
	ret = gpo_graph_status(g);
	if (!ret) {
		pthread_mutex_lock(&dev->lock);
		ret = gpo__graph_plan(g);
		pthread_mutex_unlock(&dev->lock);
	}
	if (ret) {
		gpo_graph_free(g);
		m->sx = m->slogits = NULL;
		return ret;
	}
	m->sg = g;
	return 0;
}

/* the logits of position @row of the sample graph's sequence */
static int read_row(struct gpo_model *m, uint32_t row, float *out)
{
	struct gpo_device *dev = m->opt->dev;
	struct dev_buf b = m->slogits->st.blk;
	int ret;

	b.off += (m->slogits->st.elem + (uint64_t)row * GPT_VOCAB) * 4;
	b.size = GPT_VOCAB * 4;
	pthread_mutex_lock(&dev->lock);
	ret = dev->ops->read(dev, &b, 0, out, GPT_VOCAB * 4);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/* the likeliest byte (the first on ties), or a draw at @temp from @u */
static int pick(const float *logit, double temp, double u)
{
	double p[GPT_VOCAB], max = -INFINITY, sum = 0, acc = 0;
	int i, best = 0;

	for (i = 0; i < GPT_VOCAB; i++) {
		if (logit[i] > logit[best])
			best = i;
		if (logit[i] > max)
			max = logit[i];
	}
	if (temp == 0 || !isfinite(max))
		return best;
	for (i = 0; i < GPT_VOCAB; i++) {
		p[i] = exp((logit[i] - max) / temp);
		sum += p[i];
	}
	u *= sum;
	for (i = 0; i < GPT_VOCAB; i++) {
		acc += p[i];
		if (u < acc)
			return i;
	}
	/* u within rounding of the total: the last likely byte */
	for (i = GPT_VOCAB - 1; i > 0 && !(p[i] > 0); i--)
		;
	return i;
}

int gpo_model_sample(struct gpo_model *m, const void *prompt, size_t len,
		     double temperature, uint64_t seed, void *out, size_t n)
{
	uint8_t *o = out;
	uint8_t *win;
	int32_t *x;
	float logit[GPT_VOCAB];
	size_t i, have, start, j;
	uint32_t t;
	int ret = 0;

	if (!m || (!prompt && len) || (!out && n))
		return gpo__err(-EINVAL, "gpo_model_sample: NULL argument");
	if (m->kind != MODEL_GPT)
		return gpo__err(-EINVAL, "gpo_model_sample: %s is not a gpt model",
				m->spec);
	if (!(temperature >= 0) || !isfinite(temperature))
		return gpo__err(-EINVAL, "gpo_model_sample: temperature %g: a finite number >= 0",
				temperature);
	if (!n)
		return 0;
	if (!m->sg) {
		ret = sample_graph(m);
		if (ret)
			return ret;
	}
	t = m->ctx;
	/* the last ctx bytes of prompt and output, as a ring of 2 ctx */
	win = malloc(2 * (size_t)t);
	x = calloc(t, sizeof(*x));
	if (!win || !x) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	if (len) {
		have = len < t ? len : t;
		memcpy(win, (const uint8_t *)prompt + len - have, have);
	} else {
		/* from nothing: after a line break */
		win[0] = '\n';
		have = 1;
	}
	for (i = 0; i < n; i++) {
		start = have > t ? have - t : 0;
		for (j = 0; j < t; j++)
			x[j] = start + j < have ? win[start + j] : 0;
		ret = gpo_tensor_write(m->sx, x, (size_t)t * sizeof(*x));
		if (!ret)
			ret = gpo_graph_run(m->sg, GPO_RUN_FORWARD);
		if (!ret)
			ret = read_row(m, (uint32_t)(have - start - 1), logit);
		if (ret)
			goto out_free;
		o[i] = (uint8_t)pick(logit, temperature,
				     gpo__rng_uniform(seed,
						      GPO_RNG_STREAM(GPO_RNG_SAMPLE, 0),
						      i));
		if (have == 2 * (size_t)t) {
			memmove(win, win + t, t);
			have = t;
		}
		win[have++] = o[i];
	}
out_free:
	free(win);
	free(x);
	return ret;
}
