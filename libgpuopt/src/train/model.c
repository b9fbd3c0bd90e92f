// SPDX-License-Identifier: MIT
/*
 * model.c - models from a spec: "mlp:784x256x10", "gpt:..." (gpt.c)
 *
 * A model is its parameters (tensors of its optimizer) and a function
 * that adds its forward pass to a graph for any batch size: the trainer
 * builds one graph to train and others to evaluate, all on the same
 * parameters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "train/train_i.h"
#include "optim/optim_i.h"
#include "core/rng_i.h"
#include "core/dtype_i.h"

#define MLP_MAX_LAYERS	64

static const char *const act_names[] = {
	[ACT_RELU] = "relu", [ACT_GELU] = "gelu",
	[ACT_GELU_TANH] = "gelu_tanh", [ACT_TANH] = "tanh",
	[ACT_SIGMOID] = "sigmoid",
};

static int parse_width(const char *s, const char *end, uint32_t *out)
{
	char buf[16];
	uint64_t v;

	if (end - s <= 0 || end - s >= (long)sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, end - s);
	buf[end - s] = '\0';
	if (gpo__parse_u64(buf, &v) || !v || v > (1u << 24))
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* "mlp:784x256x10" into widths[0..n) */
static int parse_spec(const char *spec, uint32_t *w, int *n)
{
	const char *p, *x;
	int k = 0;

	if (strncmp(spec, "mlp:", 4))
		return gpo__err(-EINVAL, "unknown model '%s' (mlp:IN x ... x OUT, e.g. mlp:784x256x10, or gpt:layers=L,heads=H,dim=D,ctx=T)",
				spec);
	for (p = spec + 4;; p = x + 1) {
		x = strchr(p, 'x');
		if (!x)
			x = p + strlen(p);
		if (k == MLP_MAX_LAYERS + 1 || parse_width(p, x, &w[k]))
			return gpo__err(-EINVAL, "model '%s': widths are whole numbers 1..16777216 joined by x, at most %d layers",
					spec, MLP_MAX_LAYERS);
		k++;
		if (!*x)
			break;
	}
	if (k < 2)
		return gpo__err(-EINVAL, "model '%s': an input and an output width at least",
				spec);
	*n = k;
	return 0;
}

static int parse_opts(struct gpo_model *m, const char *opts)
{
	const char *pos = opts ? opts : "";
	char key[32], val[64];
	int ret, i;

	m->act = ACT_RELU;
	m->loss = LOSS_XENT;
	m->seed = 0;
	while ((ret = gpo__kv_next(&pos, key, sizeof(key), val,
				   sizeof(val))) > 0) {
		if (!strcmp(key, "activation")) {
			for (i = 0; i < ACT_COUNT; i++)
				if (!strcmp(val, act_names[i]))
					break;
			if (i == ACT_COUNT)
				return gpo__err(-EINVAL, "unknown activation '%s' (relu, gelu, gelu_tanh, tanh, sigmoid)",
						val);
			m->act = i;
		} else if (!strcmp(key, "loss")) {
			if (!strcmp(val, "xent"))
				m->loss = LOSS_XENT;
			else if (!strcmp(val, "mse"))
				m->loss = LOSS_MSE;
			else
				return gpo__err(-EINVAL, "unknown loss '%s' (xent, mse)",
						val);
		} else if (!strcmp(key, "seed")) {
			if (gpo__parse_u64(val, &m->seed))
				return gpo__err(-EINVAL, "seed '%s': a whole number",
						val);
		} else {
			return gpo__err(-EINVAL, "unknown model setting '%s' (activation, loss, seed%s)",
					key, strcmp(key, "dropout") ? "" :
					"; dropout is a gpt's");
		}
	}
	return ret;
}

/*
 * A normal(0, 1) draw for element @i of (@seed, @stream): Box-Muller of
 * the block's two 53-bit fractions u (words 0, 1) and v (words 2, 3),
 * sqrt(-2 ln(1 - u)) cos(2 pi v); 1 - u is in (0, 1], so the log is finite
 */
static double normal_draw(uint64_t seed, uint64_t stream, uint64_t i)
{
	uint32_t w[4];
	double u, v;

	gpo__philox(seed, stream, i, w);
	u = (double)((((uint64_t)w[0] << 32) | w[1]) >> 11) * 0x1p-53;
	v = (double)((((uint64_t)w[2] << 32) | w[3]) >> 11) * 0x1p-53;
	return sqrt(-2.0 * log1p(-u)) * cos(2.0 * M_PI * v);
}

static double init_value(const struct init_spec *is, uint64_t seed,
			 uint64_t stream, uint64_t i)
{
	switch (is->kind) {
	case INIT_UNIFORM:
		return (2.0 * gpo__rng_uniform(seed, stream, i) - 1.0) * is->a;
	case INIT_NORMAL:
		return normal_draw(seed, stream, i) * is->a;
	default:
		return is->a;
	}
}

/*
 * @n f32 values of the parameters from element @at: f32 parameters, or
 * half ones rounded to nearest even and, with a master copy, the f32
 * values as their master (the half ones are the master rounded, as after
 * every step)
 */
static int write_init(struct gpo_optim *opt, uint64_t at, const float *f,
		      uint16_t *h, uint64_t n)
{
	struct gpo_device *dev = opt->dev;
	uint64_t j;

	if (opt->param_dtype == GPO_F32)
		return dev->ops->write(dev, &opt->param, at * 4, f, n * 4);
	for (j = 0; j < n; j++)
		h[j] = opt->param_dtype == GPO_F16 ? gpo__f32_to_f16(f[j]) :
						     gpo__f32_to_bf16(f[j]);
	if (opt->master.mem) {
		int ret = dev->ops->write(dev, &opt->master, at * 4, f, n * 4);

		if (ret)
			return ret;
	}
	return dev->ops->write(dev, &opt->param, at * 2, h, n * 2);
}

/*
 * Every tensor as m->init says, element i of tensor t drawn from (seed,
 * GPO_RNG_STREAM(GPO_RNG_INIT, t), i), written in pieces: the same
 * values whatever the parameters' dtype, rounded for half ones
 */
static int init_params(struct gpo_model *m)
{
	struct gpo_optim *opt = m->opt;
	struct gpo_device *dev = opt->dev;
	enum { CHUNK = 16384 };
	float *buf;
	uint16_t *half;
	int t, ret = 0;

	buf = malloc(CHUNK * sizeof(*buf));
	half = malloc(CHUNK * sizeof(*half));
	if (!buf || !half) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	pthread_mutex_lock(&dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	for (t = 0; !ret && t < opt->ntensors; t++) {
		const struct optim_tensor *ot = &opt->tensors[t];
		uint64_t stream = GPO_RNG_STREAM(GPO_RNG_INIT, t), i, j, n;

		for (i = 0; !ret && i < ot->numel; i += n) {
			n = ot->numel - i < CHUNK ? ot->numel - i : CHUNK;
			for (j = 0; j < n; j++)
				buf[j] = (float)init_value(&m->init[t], m->seed,
							   stream, i + j);
			ret = write_init(opt, ot->offset + i, buf, half, n);
		}
	}
	pthread_mutex_unlock(&dev->lock);
out_free:
	free(half);
	free(buf);
	return ret;
}

/*
 * The parameter modes a model trains: f32, or f16/bf16 parameters with
 * gradients of the same dtype (gpo_optim_set_param_dtype()'s mode), f16
 * with a master copy
 */
static int check_dtypes(const struct gpo_optim *opt)
{
	enum gpo_dtype pd = opt->param_dtype, gd = opt->grad_dtype;

	if (pd != GPO_F32 && pd != GPO_F16 && pd != GPO_BF16)
		return gpo__err(-ENOSYS, "gpo_model_new: parameters in %s: models train f32, f16 or bf16 parameters",
				gpo_dtype_name(pd));
	if (gd != pd)
		return gpo__err(-ENOSYS, "gpo_model_new: parameters in %s, gradients in %s: a model's gradients are in its parameters' dtype",
				gpo_dtype_name(pd), gpo_dtype_name(gd));
	if (pd == GPO_F16 && !opt->groups[0].hp.master_weights)
		return gpo__err(-EINVAL, "gpo_model_new: f16 parameters need master_weights=1 (stochastic rounding is for bf16)");
	return 0;
}

/* torch.nn.Linear's layout and init: U(-1/sqrt(in), 1/sqrt(in)) */
static int mlp_new(struct gpo_model *m, const char *spec, const char *opts)
{
	struct gpo_optim *opt = m->opt;
	char name[32];
	int l, ret;

	ret = parse_spec(spec, m->width, &m->nwidth);
	if (!ret)
		ret = parse_opts(m, opts);
	if (ret)
		return ret;
	m->init = calloc(2 * (m->nwidth - 1), sizeof(*m->init));
	if (!m->init)
		return gpo__err(-ENOMEM, "out of memory");
	for (l = 0; l + 1 < m->nwidth; l++) {
		uint64_t ws[2] = { m->width[l + 1], m->width[l] };

		snprintf(name, sizeof(name), "fc%d.weight", l);
		ret = gpo_optim_add_tensor(opt, name, 2, ws, 0);
		if (ret < 0)
			return ret;
		snprintf(name, sizeof(name), "fc%d.bias", l);
		ret = gpo_optim_add_tensor(opt, name, 1, &ws[0], 0);
		if (ret < 0)
			return ret;
		m->init[2 * l].a = m->init[2 * l + 1].a =
			1.0 / sqrt((double)m->width[l]);
	}
	return 0;
}

int gpo_model_new(struct gpo_optim *opt, const char *spec, const char *opts,
		  struct gpo_model **out)
{
	struct gpo_model *m;
	int ret;

	if (!opt || !spec || !out)
		return gpo__err(-EINVAL, "gpo_model_new: NULL argument");
	if (opt->ntensors || opt->allocated)
		return gpo__err(-EINVAL, "gpo_model_new: the optimizer has tensors already");
	ret = check_dtypes(opt);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m)
		return gpo__err(-ENOMEM, "out of memory");
	m->opt = opt;
	if (!strncmp(spec, "gpt:", 4)) {
		m->kind = MODEL_GPT;
		ret = gpo__gpt_new(m, spec, opts);
	} else {
		m->kind = MODEL_MLP;
		ret = mlp_new(m, spec, opts);
	}
	if (!ret)
		ret = init_params(m);
	if (ret)
		goto out_tensors;
	snprintf(m->spec, sizeof(m->spec), "%s", spec);
	*out = m;
	return 0;

out_tensors:
	gpo__optim_drop_tensors(opt);
	free(m->init);
	free(m);
	return ret;
}

void gpo_model_free(struct gpo_model *m)
{
	if (!m)
		return;
	gpo__gpt_free(m);
	free(m->init);
	free(m);
}

int gpo_model_info(const struct gpo_model *m, struct gpo_model_info *info)
{
	if (!m || !info)
		return gpo__err(-EINVAL, "NULL argument");
	memset(info, 0, sizeof(*info));
	info->params = gpo_optim_numel(m->opt);
	if (m->kind == MODEL_GPT) {
		info->inputs = m->ctx;
		info->outputs = GPT_VOCAB;
		info->layers = m->layers;
		info->ctx = m->ctx;
		info->heads = m->heads;
		info->dim = m->dim;
		return 0;
	}
	info->inputs = m->width[0];
	info->outputs = m->width[m->nwidth - 1];
	info->layers = m->nwidth - 1;
	return 0;
}

static struct gpo_tensor *activation(struct gpo_model *m, struct gpo_graph *g,
				     struct gpo_tensor *h)
{
	switch (m->act) {
	case ACT_GELU:
		return gpo_gelu(g, h);
	case ACT_GELU_TANH:
		return gpo_gelu_tanh(g, h);
	case ACT_TANH:
		return gpo_tanh(g, h);
	case ACT_SIGMOID:
		return gpo_sigmoid(g, h);
	default:
		return gpo_relu(g, h);
	}
}

static struct gpo_tensor *mlp_forward(struct gpo_model *m,
				      struct gpo_graph *g,
				      struct gpo_tensor *x)
{
	struct gpo_tensor *h = x;
	char name[32];
	int l;

	for (l = 0; l + 1 < m->nwidth; l++) {
		struct gpo_tensor *w, *b;

		snprintf(name, sizeof(name), "fc%d.weight", l);
		w = gpo_tensor_param(g, m->opt, name);
		snprintf(name, sizeof(name), "fc%d.bias", l);
		b = gpo_tensor_param(g, m->opt, name);
		/* x W^T + b, as torch.nn.Linear */
		h = gpo_add(g, gpo_matmul(g, h, w, GPO_MATMUL_TB), b);
		if (l + 2 < m->nwidth)
			h = activation(m, g, h);
	}
	return h;
}

struct gpo_tensor *gpo__model_forward(struct gpo_model *m, struct gpo_graph *g,
				      struct gpo_tensor *x, int train)
{
	if (!m || !g)
		return NULL;
	if (m->kind == MODEL_GPT)
		return gpo__gpt_forward(m, g, x, train);
	return mlp_forward(m, g, x);
}

/* the training form: a gpt's dropout is in it */
struct gpo_tensor *gpo_model_forward(struct gpo_model *m, struct gpo_graph *g,
				     struct gpo_tensor *x)
{
	return gpo__model_forward(m, g, x, 1);
}

struct gpo_tensor *gpo__model_loss(struct gpo_model *m, struct gpo_graph *g,
				   struct gpo_tensor *logits,
				   struct gpo_tensor *labels)
{
	if (m->kind == MODEL_MLP && m->loss == LOSS_MSE)
		return gpo_mse(g, logits,
			       gpo_one_hot(g, labels,
					   m->width[m->nwidth - 1]));
	return gpo_cross_entropy(g, logits, labels);
}
