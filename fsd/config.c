// SPDX-License-Identifier: MIT
/*
 * config.c - job configs: parse key=value words, validate all or nothing
 *
 * Optimizer hyperparameters are the library's: a new config is validated by
 * configuring a throwaway optimizer of the same kind on the cpu device, and
 * schedule settings by a throwaway schedule, so the daemon never keeps its
 * own copy of the library's rules.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fs_i.h"
#include "job_i.h"

#define MODEL_SPEC_MAX 65536
#define MODEL_TENSORS_MAX 65536
#define MODEL_NUMEL_MAX 0xffffffffull	/* the library's flat buffers */
#define SCHED_LINE_MAX 2048

static const char *const sched_kinds[] = {
	"constant", "step", "multistep", "exponential", "cosine",
	"cosine_restarts", "linear", "polynomial", "onecycle", "plateau",
};

/* schedule settings (gpuopt.h), "eps" excepted: it is the optimizer's */
static const char *const sched_keys[] = {
	"step_size", "gamma", "milestones", "t_max", "eta_min", "t_0",
	"t_mult", "start_factor", "end_factor", "total_iters", "power",
	"max_lr", "total_steps", "pct_start", "anneal_strategy", "div_factor",
	"final_div_factor", "three_phase", "mode", "factor", "patience",
	"threshold", "threshold_mode", "cooldown", "min_lr", "warmup_steps",
	"warmup_start_factor",
};

static int in_list(const char *const *list, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return 1;
	return 0;
}

/* ---- key=value lists ----------------------------------------------------- */

static struct kv *kv_find(const struct kvlist *l, const char *key)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].key, key))
			return &l->v[i];
	return NULL;
}

static void kv_del(struct kvlist *l, const char *key)
{
	struct kv *kv = kv_find(l, key);

	if (!kv)
		return;
	memmove(kv, kv + 1, (l->n - (kv - l->v) - 1) * sizeof(*kv));
	l->n--;
}

/* The newest setting goes last: "betas" after "beta1" overrides it. */
static int kv_set(struct kvlist *l, const char *key, const char *value)
{
	struct kv *v;

	kv_del(l, key);
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return fs_err(-ENOMEM, "out of memory");
	l->v = v;
	snprintf(v[l->n].key, sizeof(v[l->n].key), "%s", key);
	snprintf(v[l->n].value, sizeof(v[l->n].value), "%s", value);
	l->n++;
	return 0;
}

static int kv_copy(struct kvlist *dst, const struct kvlist *src)
{
	dst->v = NULL;
	dst->n = 0;
	if (!src->n)
		return 0;
	dst->v = malloc(src->n * sizeof(*dst->v));
	if (!dst->v)
		return fs_err(-ENOMEM, "out of memory");
	memcpy(dst->v, src->v, src->n * sizeof(*dst->v));
	dst->n = src->n;
	return 0;
}

static int kv_equal(const struct kvlist *a, const struct kvlist *b)
{
	int i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) {
		const struct kv *kv = kv_find(b, a->v[i].key);

		if (!kv || strcmp(kv->value, a->v[i].value))
			return 0;
	}
	return 1;
}

static int kv_text(const struct kvlist *l, struct gpo__sbuf *sb)
{
	int i;

	for (i = 0; i < l->n; i++)
		gpo__sbuf_printf(sb, "%s%s=%s", i ? " " : "", l->v[i].key,
			    l->v[i].value);
	return sb->err;
}

/* ---- models -------------------------------------------------------------- */

void model_free(struct model *m)
{
	free(m->t);
	free(m->spec);
	memset(m, 0, sizeof(*m));
}

static int model_copy(struct model *dst, const struct model *src)
{
	*dst = *src;
	dst->t = NULL;
	dst->spec = strdup(src->spec ? src->spec : "none");
	if (!dst->spec)
		return fs_err(-ENOMEM, "out of memory");
	if (src->ntensors) {
		dst->t = malloc(src->ntensors * sizeof(*dst->t));
		if (!dst->t) {
			free(dst->spec);
			return fs_err(-ENOMEM, "out of memory");
		}
		memcpy(dst->t, src->t, src->ntensors * sizeof(*dst->t));
	}
	return 0;
}

int model_equal(const struct model *a, const struct model *b)
{
	return !strcmp(a->spec ? a->spec : "none", b->spec ? b->spec : "none");
}

void model_shape_text(const struct model_tensor *t, char *buf, size_t len)
{
	size_t used = 0;
	int d;

	buf[0] = '\0';
	for (d = 0; d < t->ndim && used < len; d++)
		used += snprintf(buf + used, len - used, "%s%llu",
				 d ? "x" : "", (unsigned long long)t->shape[d]);
}

static int parse_dim(const char *s, size_t n, uint64_t *out)
{
	char num[24];
	uint64_t v;

	if (!n || n >= sizeof(num))
		return fs_err(-EINVAL, "bad dimension '%.*s'", (int)n, s);
	memcpy(num, s, n);
	num[n] = '\0';
	if (fs_parse_u64(num, &v) || strchr(num, '\n'))
		return fs_err(-EINVAL, "bad dimension '%s'", num);
	if (!v)
		return fs_err(-EINVAL, "a dimension is 0");
	if (v > MODEL_NUMEL_MAX)
		return fs_err(-EINVAL, "dimension %s is too large (max %llu)",
			      num, MODEL_NUMEL_MAX);
	*out = v;
	return 0;
}

static int tensor_name_valid(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 63 || s[0] == '.' || (n == 5 && !memcmp(s, "index", 5)))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return 0;
	return 1;
}

static int model_add(struct model *m, const struct model_tensor *t)
{
	struct model_tensor *v;
	int i;

	for (i = 0; i < m->ntensors; i++)
		if (!strcmp(m->t[i].name, t->name))
			return fs_err(-EINVAL, "tensor '%s' named twice",
				      t->name);
	if (m->ntensors >= MODEL_TENSORS_MAX)
		return fs_err(-EINVAL, "more than %d tensors",
			      MODEL_TENSORS_MAX);
	if (t->numel > MODEL_NUMEL_MAX - m->numel)
		return fs_err(-EINVAL, "too many parameters (max %llu)",
			      MODEL_NUMEL_MAX);
	v = realloc(m->t, (m->ntensors + 1) * sizeof(*v));
	if (!v)
		return fs_err(-ENOMEM, "out of memory");
	m->t = v;
	m->t[m->ntensors++] = *t;
	m->numel += t->numel;
	return 0;
}

/* "NAME:DxDx..." */
static int parse_tensor(const char *s, size_t n, struct model_tensor *t)
{
	const char *colon = memchr(s, ':', n), *p, *end = s + n, *x;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!colon)
		return fs_err(-EINVAL, "'%.*s' is not NAME:SHAPE", (int)n, s);
	if (!tensor_name_valid(s, colon - s))
		return fs_err(-EINVAL,
			      "bad tensor name '%.*s': 1-63 of A-Z a-z 0-9 _ . -, not index",
			      (int)(colon - s), s);
	memcpy(t->name, s, colon - s);
	t->numel = 1;
	for (p = colon + 1; p <= end; p = x + 1) {
		x = memchr(p, 'x', end - p);
		if (!x)
			x = end;
		if (t->ndim == 8)
			return fs_err(-EINVAL,
				      "tensor '%s' has more than 8 dimensions",
				      t->name);
		ret = parse_dim(p, x - p, &t->shape[t->ndim]);
		if (ret)
			return ret;
		if (t->shape[t->ndim] > MODEL_NUMEL_MAX / t->numel)
			return fs_err(-EINVAL,
				      "tensor '%s' is too large (max %llu elements)",
				      t->name, MODEL_NUMEL_MAX);
		t->numel *= t->shape[t->ndim++];
	}
	return 0;
}

static int model_parse_external(const char *list, struct model *m)
{
	const char *p = list, *comma;
	struct model_tensor t;
	int ret;

	if (!*list)
		return fs_err(-EINVAL,
			      "external: no tensors (external:NAME:SHAPE,...)");
	for (;;) {
		comma = strchr(p, ',');
		ret = parse_tensor(p, comma ? (size_t)(comma - p) : strlen(p),
				   &t);
		if (!ret)
			ret = model_add(m, &t);
		if (ret)
			return ret;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static int model_parse_builtin(const char *spec, const char *arg,
			       struct model *m)
{
	struct model_tensor t = { .name = "x", .ndim = 1 };
	uint64_t n;

	if (fs_parse_u64(arg, &n) || strchr(arg, '\n'))
		return fs_err(-EINVAL, "%s: '%s' is not a number of parameters",
			      spec, arg);
	if (n < (m->kind == MODEL_ROSENBROCK ? 2u : 1u) ||
	    n > MODEL_NUMEL_MAX)
		return fs_err(-EINVAL, "%s: N must be in [%d, %llu]", spec,
			      m->kind == MODEL_ROSENBROCK ? 2 : 1,
			      MODEL_NUMEL_MAX);
	t.shape[0] = n;
	t.numel = n;
	return model_add(m, &t);
}

/* "784x256x10": fc<l>.weight [out, in] and fc<l>.bias [out], as torch */
static int model_parse_mlp(const char *arg, struct model *m)
{
	uint64_t w[65], n = 0;
	const char *p = arg;
	char *end;
	int k = 0, l, ret;

	for (;;) {
		if (k == 65 || !isdigit((unsigned char)*p))
			goto bad;
		w[k] = strtoull(p, &end, 10);
		if (!w[k] || w[k] > (1u << 24) || end - p > 9)
			goto bad;
		k++;
		p = end;
		if (!*p)
			break;
		if (*p++ != 'x')
			goto bad;
	}
	if (k < 2)
		goto bad;
	for (l = 0; l + 1 < k; l++) {
		struct model_tensor t = { .ndim = 2 };

		snprintf(t.name, sizeof(t.name), "fc%d.weight", l);
		t.shape[0] = w[l + 1];
		t.shape[1] = w[l];
		t.numel = w[l + 1] * w[l];
		n += t.numel + w[l + 1];
		if (n > MODEL_NUMEL_MAX)
			return fs_err(-EINVAL, "mlp:%s: more than %llu parameters",
				      arg, MODEL_NUMEL_MAX);
		ret = model_add(m, &t);
		if (ret)
			return ret;
		memset(&t, 0, sizeof(t));
		t.ndim = 1;
		snprintf(t.name, sizeof(t.name), "fc%d.bias", l);
		t.shape[0] = w[l + 1];
		t.numel = w[l + 1];
		ret = model_add(m, &t);
		if (ret)
			return ret;
	}
	return 0;
bad:
	return fs_err(-EINVAL, "mlp:%.64s: widths are whole numbers 1..16777216 joined by x, an input and an output at least, 64 layers at most (mlp:784x256x10)",
		      arg);
}

/* the bounds of a gpt spec's numbers */
#define GPT_LAYERS_MAX 1024
#define GPT_HEADS_MAX 1024
#define GPT_DIM_MAX 65536
#define GPT_CTX_MAX 65536

static int gpt_tensor(struct model *m, const char *name, int ndim,
		      uint64_t d0, uint64_t d1)
{
	struct model_tensor t = { .ndim = ndim };

	snprintf(t.name, sizeof(t.name), "%s", name);
	t.shape[0] = d0;
	t.shape[1] = d1;
	t.numel = ndim == 2 ? d0 * d1 : d0;
	return model_add(m, &t);
}

/*
 * "layers=L,heads=H,dim=D,ctx=T", in any order, each once: GPT-2's
 * tensors over 256 byte values, named and shaped as gpo_model_new()
 * makes them (gpuopt/train.h), in that order
 */
static int model_parse_gpt(const char *arg, struct model *m)
{
	static const char *const keys[] = { "layers", "heads", "dim", "ctx" };
	static const uint64_t max[] = {
		GPT_LAYERS_MAX, GPT_HEADS_MAX, GPT_DIM_MAX, GPT_CTX_MAX,
	};
	uint64_t v[4] = { 0 }, L, H, D, T, n;
	const char *p = arg, *eq, *end;
	char name[64];
	size_t k, len;
	unsigned int l;
	int ret;

	while (*p) {
		end = p + strcspn(p, ",");
		eq = memchr(p, '=', end - p);
		if (!eq)
			goto bad;
		for (k = 0; k < ARRAY_SIZE(keys); k++)
			if (strlen(keys[k]) == (size_t)(eq - p) &&
			    !memcmp(p, keys[k], eq - p))
				break;
		if (k == ARRAY_SIZE(keys))
			return fs_err(-EINVAL, "gpt: unknown '%.*s' (layers heads dim ctx)",
				      (int)(eq - p) > 32 ? 32 : (int)(eq - p), p);
		if (v[k])
			return fs_err(-EINVAL, "gpt: %s given twice", keys[k]);
		len = end - eq - 1;
		if (!len || len > 9 || strspn(eq + 1, "0123456789") < len)
			goto bad;
		v[k] = strtoull(eq + 1, NULL, 10);
		if (v[k] < 1 || v[k] > max[k])
			return fs_err(-EINVAL, "gpt: %s=%llu is out of range [1, %llu]",
				      keys[k], (unsigned long long)v[k],
				      (unsigned long long)max[k]);
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad;
	}
	for (k = 0; k < ARRAY_SIZE(keys); k++)
		if (!v[k])
			return fs_err(-EINVAL, "gpt: no %s (gpt:layers=L,heads=H,dim=D,ctx=T)",
				      keys[k]);
	L = v[0];
	H = v[1];
	D = v[2];
	T = v[3];
	if (D % H)
		return fs_err(-EINVAL, "gpt: dim=%llu is not a multiple of heads=%llu",
			      (unsigned long long)D, (unsigned long long)H);
	/* wte, wpe, ln_f and L blocks of 12 D^2 + 13 D */
	n = 256 * D + T * D + 2 * D + L * (12 * D * D + 13 * D);
	if (n > MODEL_NUMEL_MAX)
		return fs_err(-EINVAL, "gpt: %llu parameters, more than %llu",
			      (unsigned long long)n, MODEL_NUMEL_MAX);
	ret = gpt_tensor(m, "wte.weight", 2, 256, D);
	if (!ret)
		ret = gpt_tensor(m, "wpe.weight", 2, T, D);
	for (l = 0; !ret && l < L; l++) {
		const struct { const char *name; int ndim; uint64_t d0, d1; } b[] = {
			{ "ln_1.weight", 1, D, 0 }, { "ln_1.bias", 1, D, 0 },
			{ "attn.c_attn.weight", 2, D, 3 * D },
			{ "attn.c_attn.bias", 1, 3 * D, 0 },
			{ "attn.c_proj.weight", 2, D, D },
			{ "attn.c_proj.bias", 1, D, 0 },
			{ "ln_2.weight", 1, D, 0 }, { "ln_2.bias", 1, D, 0 },
			{ "mlp.c_fc.weight", 2, D, 4 * D },
			{ "mlp.c_fc.bias", 1, 4 * D, 0 },
			{ "mlp.c_proj.weight", 2, 4 * D, D },
			{ "mlp.c_proj.bias", 1, D, 0 },
		};

		for (k = 0; !ret && k < ARRAY_SIZE(b); k++) {
			snprintf(name, sizeof(name), "h.%u.%s", l, b[k].name);
			ret = gpt_tensor(m, name, b[k].ndim, b[k].d0, b[k].d1);
		}
	}
	if (!ret)
		ret = gpt_tensor(m, "ln_f.weight", 1, D, 0);
	if (!ret)
		ret = gpt_tensor(m, "ln_f.bias", 1, D, 0);
	if (ret)
		return ret;
	m->gpt[0] = L;
	m->gpt[1] = H;
	m->gpt[2] = D;
	m->gpt[3] = T;
	return 0;
bad:
	return fs_err(-EINVAL, "gpt:%.64s: layers=L,heads=H,dim=D,ctx=T of whole numbers, dim a multiple of heads (gpt:layers=4,heads=4,dim=128,ctx=64)",
		      arg);
}

static int model_make_spec(struct model *m)
{
	char shape[200];
	struct gpo__sbuf sb;
	int i;

	gpo__sbuf_init(&sb);
	switch (m->kind) {
	case MODEL_NONE:
		gpo__sbuf_printf(&sb, "none");
		break;
	case MODEL_QUADRATIC:
	case MODEL_ROSENBROCK:
		gpo__sbuf_printf(&sb, "%s:%llu", m->kind == MODEL_QUADRATIC ?
			    "quadratic" : "rosenbrock",
			    (unsigned long long)m->numel);
		break;
	case MODEL_MLP:
		gpo__sbuf_printf(&sb, "mlp:%llu",
				 (unsigned long long)m->t[0].shape[1]);
		for (i = 0; i < m->ntensors; i += 2)
			gpo__sbuf_printf(&sb, "x%llu",
					 (unsigned long long)m->t[i].shape[0]);
		break;
	case MODEL_GPT:
		gpo__sbuf_printf(&sb, "gpt:layers=%llu,heads=%llu,dim=%llu,ctx=%llu",
				 (unsigned long long)m->gpt[0],
				 (unsigned long long)m->gpt[1],
				 (unsigned long long)m->gpt[2],
				 (unsigned long long)m->gpt[3]);
		break;
	case MODEL_EXTERNAL:
		gpo__sbuf_printf(&sb, "external:");
		for (i = 0; i < m->ntensors; i++) {
			model_shape_text(&m->t[i], shape, sizeof(shape));
			gpo__sbuf_printf(&sb, "%s%s:%s", i ? "," : "", m->t[i].name,
				    shape);
		}
		break;
	}
	if (sb.err) {
		gpo__sbuf_free(&sb);
		return fs_err(-ENOMEM, "out of memory");
	}
	m->spec = sb.buf;
	return 0;
}

int model_parse(const char *spec, struct model *m)
{
	const char *colon = strchr(spec, ':');
	size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
	int ret;

	memset(m, 0, sizeof(*m));
	if (strlen(spec) > MODEL_SPEC_MAX)
		return fs_err(-EINVAL, "longer than %d bytes",
			      MODEL_SPEC_MAX);
	if (!strcmp(spec, "none")) {
		m->kind = MODEL_NONE;
	} else if (colon && klen == 8 && !memcmp(spec, "external", 8)) {
		m->kind = MODEL_EXTERNAL;
		ret = model_parse_external(colon + 1, m);
		if (ret)
			goto out_free;
	} else if (colon && ((klen == 9 && !memcmp(spec, "quadratic", 9)) ||
			     (klen == 10 && !memcmp(spec, "rosenbrock", 10)))) {
		m->kind = klen == 9 ? MODEL_QUADRATIC : MODEL_ROSENBROCK;
		ret = model_parse_builtin(klen == 9 ? "quadratic" :
					  "rosenbrock", colon + 1, m);
		if (ret)
			goto out_free;
	} else if (colon && klen == 3 && !memcmp(spec, "mlp", 3)) {
		m->kind = MODEL_MLP;
		ret = model_parse_mlp(colon + 1, m);
		if (ret)
			goto out_free;
	} else if (colon && klen == 3 && !memcmp(spec, "gpt", 3)) {
		m->kind = MODEL_GPT;
		ret = model_parse_gpt(colon + 1, m);
		if (ret)
			goto out_free;
	} else {
		return fs_err(-EINVAL,
			      "unknown '%.64s' (mlp:IN x..x OUT, gpt:layers=L,heads=H,dim=D,ctx=T, external:NAME:SHAPE,..., quadratic:N, rosenbrock:N, none)",
			      spec);
	}
	ret = model_make_spec(m);
	if (ret)
		goto out_free;
	return 0;
out_free:
	model_free(m);
	return ret;
}

/* ---- configs ------------------------------------------------------------- */

void config_init(struct fsd *fs, struct job_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->optimizer = GPO_ADAM;
	snprintf(cfg->schedule, sizeof(cfg->schedule), "constant");
	snprintf(cfg->device, sizeof(cfg->device), "%s", fs->default_device);
	cfg->model.kind = MODEL_NONE;
	cfg->max_steps = MAX_STEPS_DEFAULT;
	cfg->log_every = 10;
	cfg->keep_checkpoints = 3;
	snprintf(cfg->train.activation, sizeof(cfg->train.activation), "relu");
	snprintf(cfg->train.loss, sizeof(cfg->train.loss), "xent");
	cfg->train.batch_size = 64;
	cfg->train.shuffle = 1;
	cfg->ranks = 1;
	cfg->deterministic = 1;
	cfg->overlap = 1;
	cfg->bucket_bytes = 4u << 20;
}

int config_mpi(const struct job_config *cfg)
{
	return cfg->ranks > 1 || cfg->shards > 1 || cfg->hosts[0];
}

int config_learns(const struct job_config *cfg)
{
	return cfg->model.kind == MODEL_MLP || cfg->model.kind == MODEL_GPT;
}

int config_steps_itself(const struct job_config *cfg)
{
	return cfg->model.kind == MODEL_QUADRATIC ||
	       cfg->model.kind == MODEL_ROSENBROCK || config_learns(cfg);
}

int config_model_text(const struct job_config *cfg, struct gpo__sbuf *sb)
{
	const struct train_config *t = &cfg->train;

	gpo__sbuf_printf(sb, "%s", cfg->model.spec ? cfg->model.spec : "none");
	if (cfg->model.kind == MODEL_MLP)
		gpo__sbuf_printf(sb, " activation=%s loss=%s", t->activation,
				 t->loss);
	else if (cfg->model.kind == MODEL_GPT)
		gpo__sbuf_printf(sb, " dropout=%.17g", t->dropout);
	if (config_learns(cfg))
		gpo__sbuf_printf(sb, " data=%s batch_size=%llu shuffle=%d eval_every=%llu matmul=%s",
				 t->data, (unsigned long long)t->batch_size,
				 t->shuffle, (unsigned long long)t->eval_every,
				 t->matmul_f16 ? "f16" : "f32");
	return sb->err ? fs_err(-ENOMEM, "out of memory") : 0;
}

void config_free(struct job_config *cfg)
{
	free(cfg->hp.v);
	free(cfg->sched.v);
	model_free(&cfg->model);
	memset(cfg, 0, sizeof(*cfg));
}

int config_copy(struct job_config *dst, const struct job_config *src)
{
	*dst = *src;
	dst->hp.v = NULL;
	dst->sched.v = NULL;
	memset(&dst->model, 0, sizeof(dst->model));
	if (kv_copy(&dst->hp, &src->hp) || kv_copy(&dst->sched, &src->sched) ||
	    model_copy(&dst->model, &src->model)) {
		config_free(dst);
		return fs_err(-ENOMEM, "out of memory");
	}
	return 0;
}

/*
 * constant with no warmup: the lr as configured, which no library
 * schedule needs to make (a restored config shows warmup_steps=0)
 */
static int sched_is_none(const struct job_config *cfg)
{
	const struct kv *kv;
	int i;

	if (strcmp(cfg->schedule, "constant"))
		return 0;
	for (i = 0; i < cfg->sched.n; i++) {
		kv = &cfg->sched.v[i];
		if (!strcmp(kv->key, "warmup_start_factor"))
			continue;
		if (strcmp(kv->key, "warmup_steps") || strcmp(kv->value, "0"))
			return 0;
	}
	return 1;
}

int config_uses_sched(const struct job_config *cfg)
{
	/* ZeRO-1 steps without one: a no-op schedule must not stop it */
	if (cfg->zero && sched_is_none(cfg))
		return 0;
	return strcmp(cfg->schedule, "constant") || cfg->sched.n;
}

int config_hp_text(const struct job_config *cfg, struct gpo__sbuf *sb)
{
	return kv_text(&cfg->hp, sb);
}

int config_sched_text(const struct job_config *cfg, struct gpo__sbuf *sb)
{
	return kv_text(&cfg->sched, sb);
}

/* The next key=value word of a config text (common/kv.c's words). */
static int next_word(const char **pos, struct gpo__kv *w)
{
	int ret = gpo__kv_span(pos, w);

	if (ret < 0)
		return fs_lib_err(ret);
	if (ret && w->klen >= sizeof(((struct kv *)0)->key))
		return fs_err(-EINVAL, "unknown key '%.*s'", 31, w->key);
	return ret;
}

static int word_is(const struct gpo__kv *w, const char *key)
{
	return w->klen == strlen(key) && !memcmp(w->key, key, w->klen);
}

static int word_value(const struct gpo__kv *w, char *buf, size_t len)
{
	size_t i;

	if (w->vlen >= len)
		return fs_err(-EINVAL, "%.*s: value too long", (int)w->klen,
			      w->key);
	for (i = 0; i < w->vlen; i++)
		if (!isgraph((unsigned char)w->val[i]))
			return fs_err(-EINVAL, "%.*s: bad character in value",
				      (int)w->klen, w->key);
	memcpy(buf, w->val, w->vlen);
	buf[w->vlen] = '\0';
	return 0;
}

static int parse_count(const char *key, const char *value, uint64_t min,
		       uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (fs_parse_u64(value, &v))
		return fs_err(-EINVAL, "%s: '%s' is not a whole number", key,
			      value);
	if (v < min || v > max)
		return fs_err(-EINVAL, "%s: %s is out of range [%llu, %llu]",
			      key, value, (unsigned long long)min,
			      (unsigned long long)max);
	*out = v;
	return 0;
}

/* a real number in [@min, @max] (@max itself only when @max_in) */
static int parse_real(const char *key, const char *value, double min,
		      double max, int max_in, double *out)
{
	char *end;
	double v;

	v = gpo__strtod(value, &end);
	if (end == value || *end || !isfinite(v))
		return fs_err(-EINVAL, "%s: '%s' is not a number", key, value);
	if (v < min || v > max || (!max_in && v == max))
		return fs_err(-EINVAL, "%s: %s is out of range [%g, %g%s", key,
			      value, min, max, max_in ? "]" : ")");
	*out = v;
	return 0;
}

/*
 * deterministic=, zero=, overlap=, bucket_bytes=, timeout=: gpo_comm_new()'s
 * settings, judged here by its rules so that a bad one fails the write
 * (how they fit together: validate_comm())
 */
static int parse_comm_key(struct job_config *cfg, const char *key,
			  const char *value)
{
	uint64_t v;
	int ret;

	if (!strcmp(key, "deterministic") || !strcmp(key, "zero") ||
	    !strcmp(key, "overlap")) {
		ret = parse_count(key, value, 0, 1, &v);
		if (ret)
			return ret;
		if (key[0] == 'd')
			cfg->deterministic = (int)v;
		else if (key[0] == 'z')
			cfg->zero = (int)v;
		else
			cfg->overlap = (int)v;
		return 0;
	}
	if (!strcmp(key, "bucket_bytes")) {
		ret = parse_count(key, value, 4096, 1u << 30, &v);
		if (ret)
			return ret;
		if (v % 4)
			return fs_err(-EINVAL, "bucket_bytes: %llu is not a multiple of 4 (whole floats)",
				      (unsigned long long)v);
		cfg->bucket_bytes = v;
		return 0;
	}
	if (!strcmp(key, "timeout")) {
		/* the daemon's own, whatever its watchdog is then */
		if (!strcmp(value, "auto")) {
			cfg->comm_timeout = 0;
			return 0;
		}
		return parse_count(key, value, 1, job_comm_timeout_max(),
				   &cfg->comm_timeout);
	}
	return 1;
}

static int parse_run_key(struct job_config *cfg, const char *key,
			 const char *value)
{
	if (!strcmp(key, "max_steps")) {
		cfg->max_steps_given = 1;
		if (!strcmp(value, "max")) {
			cfg->max_steps = MAX_STEPS_UNLIMITED;
			return 0;
		}
		return parse_count(key, value, 1, UINT64_MAX - 1,
				   &cfg->max_steps);
	}
	if (!strcmp(key, "log_every"))
		return parse_count(key, value, 0, UINT64_MAX, &cfg->log_every);
	if (!strcmp(key, "checkpoint_every"))
		return parse_count(key, value, 0, UINT64_MAX,
				   &cfg->checkpoint_every);
	if (!strcmp(key, "keep_checkpoints"))
		return parse_count(key, value, 0, 1000000,
				   &cfg->keep_checkpoints);
	if (!strcmp(key, "seed"))
		return parse_count(key, value, 0, UINT64_MAX, &cfg->seed);
	if (!strcmp(key, "batch_size"))
		return parse_count(key, value, 1, 1u << 24,
				   &cfg->train.batch_size);
	if (!strcmp(key, "epochs"))
		return parse_count(key, value, 0, UINT64_MAX / 2,
				   &cfg->train.epochs);
	if (!strcmp(key, "eval_every"))
		return parse_count(key, value, 0, UINT64_MAX,
				   &cfg->train.eval_every);
	if (!strcmp(key, "shuffle")) {
		uint64_t v;
		int ret = parse_count(key, value, 0, 1, &v);

		cfg->train.shuffle = (int)v;
		return ret;
	}
	if (!strcmp(key, "matmul")) {
		if (strcmp(value, "f32") && strcmp(value, "f16"))
			return fs_err(-EINVAL, "matmul: '%s' is not f32 or f16",
				      value);
		cfg->train.matmul_f16 = value[1] == '1';
		return 0;
	}
	if (!strcmp(key, "activation")) {
		static const char *const acts[] = {
			"relu", "gelu", "gelu_tanh", "tanh", "sigmoid",
		};

		if (!in_list(acts, ARRAY_SIZE(acts), value))
			return fs_err(-EINVAL, "activation: unknown '%s' (relu gelu gelu_tanh tanh sigmoid)",
				      value);
		snprintf(cfg->train.activation, sizeof(cfg->train.activation),
			 "%.15s", value);
		return 0;
	}
	if (!strcmp(key, "loss")) {
		if (strcmp(value, "xent") && strcmp(value, "mse"))
			return fs_err(-EINVAL, "loss: unknown '%s' (xent mse)",
				      value);
		snprintf(cfg->train.loss, sizeof(cfg->train.loss), "%.7s", value);
		return 0;
	}
	if (!strcmp(key, "dropout"))
		return parse_real(key, value, 0, 1, 0, &cfg->train.dropout);
	if (!strcmp(key, "temperature"))
		return parse_real(key, value, 0, 100, 1, &cfg->temperature);
	if (!strcmp(key, "restart_on_failure"))
		return parse_count(key, value, 0, 1000,
				   &cfg->restart_on_failure);
	if (!strcmp(key, "autostart"))
		return parse_count(key, value, 0, 1, &cfg->autostart);
	if (!strcmp(key, "ranks"))
		return parse_count(key, value, 1, RANKS_MAX, &cfg->ranks);
	if (!strcmp(key, "shards"))
		return parse_count(key, value, 0, 1u << 24, &cfg->shards);
	if (!strcmp(key, "memory_limit_bytes")) {
		if (!strcmp(value, "max")) {
			cfg->memory_limit_bytes = 0;
			return 0;
		}
		/* below this no worker can even load its drivers */
		return parse_count(key, value, 16u << 20, UINT64_MAX,
				   &cfg->memory_limit_bytes);
	}
	return 1;
}

/*
 * param_dtype / state_dtype: the precision mode's buffers. Which modes an
 * optimizer can step is the library's to say (-ENOSYS at the build).
 */
static int parse_dtype_key(struct job_config *cfg, const char *key,
			   const char *value)
{
	int dt = gpo_dtype_parse(value);

	if (!strcmp(key, "param_dtype")) {
		if (dt != GPO_F32 && dt != GPO_F16 && dt != GPO_BF16)
			return fs_err(-EINVAL, "param_dtype: '%s' is not f32, f16 or bf16",
				      value);
		cfg->param_dtype = dt;
		return 0;
	}
	if (!strcmp(key, "state_dtype")) {
		if (dt != GPO_F32 && dt != GPO_BF16 && dt != GPO_U8)
			return fs_err(-EINVAL, "state_dtype: '%s' is not f32, bf16 or u8",
				      value);
		cfg->state_dtype = dt;
		return 0;
	}
	return 1;
}

/*
 * device=: a spec gpo_device_select() takes ("best", "opencl",
 * "vulkan:0"), or one per rank joined by commas ("cpu:0,opencl:0"): the
 * same words as gpuopt-train's device=. What each names: validate_device().
 */
static int parse_device(struct job_config *cfg, const struct gpo__kv *w)
{
	size_t i;

	if (!w->vlen || w->vlen >= sizeof(cfg->device))
		return fs_err(-EINVAL, "device: '%.*s' is not a device (or a list of one per rank of fewer than %zu bytes)",
			      (int)(w->vlen < 64 ? w->vlen : 64), w->val,
			      sizeof(cfg->device));
	for (i = 0; i < w->vlen; i++) {
		if (isalnum((unsigned char)w->val[i]) ||
		    strchr(":_-", w->val[i]))
			continue;
		/* a comma between two devices */
		if (w->val[i] == ',' && i && i + 1 < w->vlen &&
		    w->val[i - 1] != ',')
			continue;
		return fs_err(-EINVAL, "device: '%.*s' is not a device (or devices a,b,... one per rank)",
			      (int)(w->vlen < 64 ? w->vlen : 64), w->val);
	}
	memcpy(cfg->device, w->val, w->vlen);
	cfg->device[w->vlen] = '\0';
	return 0;
}

/* how many devices device= names: 1, or one per rank */
static uint64_t device_count(const char *spec)
{
	uint64_t n = 1;

	for (; *spec; spec++)
		n += *spec == ',';
	return n;
}

/* item @k of a device= list (the whole spec for one) into @buf */
static int device_item(const char *spec, uint64_t k, char *buf, size_t len)
{
	const char *e;

	for (; k; k--) {
		spec = strchr(spec, ',');
		if (!spec)
			return fs_err(-EINVAL, "device: no item %llu",
				      (unsigned long long)k);
		spec++;
	}
	e = strchr(spec, ',');
	if (!e)
		e = spec + strlen(spec);
	if ((size_t)(e - spec) >= len)
		return fs_err(-EINVAL, "device: '%.*s' is too long", 64, spec);
	memcpy(buf, spec, e - spec);
	buf[e - spec] = '\0';
	return 0;
}

static int is_backend(const char *spec)
{
	return !strcmp(spec, "cpu") || !strcmp(spec, "opencl") ||
	       !strcmp(spec, "vulkan");
}

int config_rank_device(struct fsd *fs, const struct job_config *cfg,
		       uint64_t rank, char *buf, size_t len)
{
	struct gpo_device_info info;
	int i, n, found = 0, k = -1;
	uint64_t count = 0;

	if (device_count(cfg->device) > 1)
		return device_item(cfg->device, rank, buf, len);
	if (snprintf(buf, len, "%s", cfg->device) >= (int)len)
		return fs_err(-EINVAL, "device: '%s' is too long", cfg->device);
	if (cfg->ranks < 2 || !is_backend(cfg->device))
		return 0;
	/* the backend's devices that jobs may use, in index order */
	n = gpo_device_count(fs->ctx);
	for (i = 0; i < n; i++)
		if (!gpo_device_info(fs->ctx, i, &info) && info.present &&
		    info.enabled && !strcmp(info.backend, cfg->device))
			count++;
	if (!count)
		return 0;	/* gpo_device_select() says why */
	for (i = 0; i < n; i++) {
		if (gpo_device_info(fs->ctx, i, &info) || !info.present ||
		    !info.enabled || strcmp(info.backend, cfg->device))
			continue;
		if ((uint64_t)found++ == rank % count) {
			k = i;
			break;
		}
	}
	if (k >= 0 && snprintf(buf, len, "%s", info.id) >= (int)len)
		return fs_err(-EINVAL, "device: id '%s' is too long", info.id);
	return 0;
}

int config_comm_text(const struct job_config *cfg, char *buf, size_t len)
{
	int n;

	n = snprintf(buf, len,
		     "shards=%llu deterministic=%d zero=%d overlap=%d bucket_bytes=%llu timeout=%u",
		     (unsigned long long)(cfg->shards ? cfg->shards :
					  cfg->ranks),
		     cfg->deterministic, cfg->zero, cfg->overlap,
		     (unsigned long long)cfg->bucket_bytes,
		     cfg->comm_timeout &&
		     cfg->comm_timeout < job_comm_timeout_max() ?
		     (unsigned int)cfg->comm_timeout : job_comm_timeout_max());
	if (n < 0 || (size_t)n >= len)
		return fs_err(-ENOSPC, "the comm settings do not fit");
	return 0;
}

/*
 * hosts=: mpirun's --host list, "none" for this machine alone. Strictly
 * host[:slots] items joined by commas, a host being letters, digits, '.'
 * and '-' and starting with a letter or digit: nothing that mpirun could
 * take for an option or a shell could expand.
 */
static int parse_hosts(struct job_config *cfg, const char *value)
{
	const char *p = value, *item;
	int digits;

	if (!strcmp(value, "none")) {
		cfg->hosts[0] = '\0';
		return 0;
	}
	if (!*value || strlen(value) >= sizeof(cfg->hosts))
		return fs_err(-EINVAL, "hosts: a list of host[:slots] of fewer than %zu bytes, or none",
			      sizeof(cfg->hosts));
	for (;;) {
		item = p;
		if (!isalnum((unsigned char)*p))
			return fs_err(-EINVAL, "hosts: '%s': a host starts with a letter or digit",
				      value);
		while (isalnum((unsigned char)*p) || *p == '.' || *p == '-')
			p++;
		if (p - item > 253)
			return fs_err(-EINVAL, "hosts: a host name is too long");
		if (*p == ':') {
			digits = 0;
			for (p++; isdigit((unsigned char)*p); p++)
				digits++;
			if (!digits || digits > 4)
				return fs_err(-EINVAL, "hosts: '%s': slots after ':' are 1 to 4 digits",
					      value);
		}
		if (!*p)
			break;
		if (*p != ',')
			return fs_err(-EINVAL, "hosts: '%s': character '%c' is not allowed (host[:slots],...)",
				      value, isprint((unsigned char)*p) ? *p : '?');
		p++;
	}
	snprintf(cfg->hosts, sizeof(cfg->hosts), "%s", value);
	return 0;
}

/*
 * ranks=, shards=, hosts=: MPI must be there, the global batch must cut
 * into the shards and the shards over the ranks, and only models trained
 * on data run their steps over ranks.
 */
static int validate_ranks(const struct job_config *cfg)
{
	uint64_t shards = cfg->shards ? cfg->shards : cfg->ranks;
	uint64_t ndev = device_count(cfg->device);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const char *why;

	if (ndev > 1 && ndev != cfg->ranks)
		return fs_err(-EINVAL, "device: %llu devices for ranks=%llu: give one device for every rank, or one for all",
			      (unsigned long long)ndev,
			      (unsigned long long)cfg->ranks);
	if (!config_mpi(cfg))
		return 0;
	why = job_mpi_why();
	if (why)
		return fs_err(-EINVAL, "ranks=%llu shards=%llu%s%s: %s",
			      (unsigned long long)cfg->ranks,
			      (unsigned long long)cfg->shards,
			      cfg->hosts[0] ? " hosts=" : "", cfg->hosts, why);
	if (!cfg->hosts[0] && cpus > 0 && cfg->ranks > (uint64_t)cpus)
		return fs_err(-EINVAL, "ranks: %llu is more than this machine's %ld CPUs (hosts= spreads ranks over machines)",
			      (unsigned long long)cfg->ranks, cpus);
	if (shards % cfg->ranks)
		return fs_err(-EINVAL, "shards: %llu is not a multiple of ranks=%llu",
			      (unsigned long long)shards,
			      (unsigned long long)cfg->ranks);
	if (cfg->model.kind != MODEL_NONE && !config_learns(cfg))
		return fs_err(-EINVAL, "ranks: model=%.64s does not train over ranks (mlp and gpt models do)",
			      cfg->model.spec);
	/* the ranks' reduction sums f32 gradients (gpo_comm_optim_attach) */
	if (cfg->param_dtype != GPO_F32)
		return fs_err(-EINVAL, "ranks: param_dtype=%s trains on one rank only yet (data-parallel steps sum f32 gradients)",
			      gpo_dtype_name(cfg->param_dtype));
	if (cfg->train.batch_size % shards)
		return fs_err(-EINVAL, "batch_size: %llu does not divide into %llu shards (ranks=%llu)",
			      (unsigned long long)cfg->train.batch_size,
			      (unsigned long long)shards,
			      (unsigned long long)cfg->ranks);
	return 0;
}

/*
 * deterministic=, zero=: what ZeRO-1 needs (gpo_comm's rules: its -ENOSYS
 * cases are refused here, at the write, not at the job's first step).
 * config_hp() takes ctx_lock itself.
 */
static int validate_comm(struct fsd *fs, const struct job_config *cfg)
{
	double v;

	if (!cfg->zero)
		return 0;
	if (!cfg->deterministic)
		return fs_err(-EINVAL, "zero: zero=1 needs deterministic=1 (each rank sums its slice of every bucket in shard order)");
	if (cfg->optimizer == GPO_LAMB)
		return fs_err(-EINVAL, "zero: zero=1 does not step lamb (its trust ratio needs whole tensors)");
	if (config_uses_sched(cfg))
		return fs_err(-EINVAL, "zero: zero=1 does not run a schedule or warmup yet (schedule=%s; constant without warmup_steps has none)",
			      cfg->schedule);
	if (cfg->param_dtype != GPO_F32 || cfg->state_dtype != GPO_F32)
		return fs_err(-EINVAL, "zero: zero=1 keeps f32 params and state only yet (param_dtype=%s state_dtype=%s)",
			      gpo_dtype_name(cfg->param_dtype),
			      gpo_dtype_name(cfg->state_dtype));
	v = config_hp(fs, cfg, "clip_norm");
	if (v == v && v != 0)
		return fs_err(-EINVAL, "zero: zero=1 cannot clip_norm yet (the norm of all ranks' slices)");
	v = config_hp(fs, cfg, "loss_scale");
	if (v == v && v != 1)
		return fs_err(-EINVAL, "zero: zero=1 cannot scale the loss yet (every rank's verdict on overflow)");
	return 0;
}

/* The keys an optimizer of @kind has, as "key=value\n" lines. */
static int optim_keys(struct fsd *fs, int kind, char *buf, size_t len)
{
	struct gpo_optim *opt;
	int ret;

	ret = gpo_optim_new(fs->cpu, kind, &opt);
	if (ret)
		return fs_lib_err(ret);
	ret = gpo_optim_describe(opt, -1, buf, len);
	gpo_optim_free(opt);
	return ret < 0 ? fs_lib_err(ret) : 0;
}

static int optim_has(const char *keys, const char *key)
{
	char pat[48];

	if (!strcmp(key, "betas"))
		key = "beta1";
	snprintf(pat, sizeof(pat), "\n%s=", key);
	return !strncmp(keys, pat + 1, strlen(pat + 1)) || strstr(keys, pat);
}

/* A new optimizer keeps the settings it has, from earlier writes. */
static int drop_foreign_hp(struct fsd *fs, struct job_config *cfg,
			   const struct kvlist *given)
{
	char keys[2048];
	int i, ret;

	ret = optim_keys(fs, cfg->optimizer, keys, sizeof(keys));
	if (ret)
		return ret;
	for (i = cfg->hp.n - 1; i >= 0; i--)
		if (!kv_find(given, cfg->hp.v[i].key) &&
		    !optim_has(keys, cfg->hp.v[i].key))
			kv_del(&cfg->hp, cfg->hp.v[i].key);
	return 0;
}

static int validate_hp(struct fsd *fs, const struct job_config *cfg)
{
	struct gpo_optim *opt;
	struct gpo__sbuf text;
	int ret;

	gpo__sbuf_init(&text);
	ret = config_hp_text(cfg, &text);
	if (ret)
		goto out;
	ret = gpo_optim_new(fs->cpu, cfg->optimizer, &opt);
	if (ret) {
		fs_lib_err(ret);
		goto out;
	}
	ret = gpo_optim_configure(opt, -1, text.buf ? text.buf : "");
	if (ret)
		fs_lib_err(ret);
	gpo_optim_free(opt);
out:
	gpo__sbuf_free(&text);
	return ret;
}

/*
 * Loss scaling multiplies the loss before backward: models that learn
 * from data do (the training step seeds backward with the scale), an
 * external job's gradient must come scaled (stat shows the scale); the
 * built-in objectives compute an unscaled gradient, so they refuse it.
 */
static int validate_loss_scale(struct fsd *fs, const struct job_config *cfg)
{
	if ((cfg->model.kind == MODEL_QUADRATIC ||
	     cfg->model.kind == MODEL_ROSENBROCK) &&
	    config_hp(fs, cfg, "loss_scale") != 1)
		return fs_err(-EINVAL, "loss_scale: model=%.64s computes unscaled gradients; loss scaling needs mlp, gpt or external",
			      cfg->model.spec);
	return 0;
}

static int validate_sched(const struct job_config *cfg)
{
	struct gpo_sched *s;
	struct gpo__sbuf text;
	int ret;

	if (!config_uses_sched(cfg))
		return 0;
	ret = gpo_sched_new(cfg->schedule, &s);
	if (ret)
		return fs_lib_err(ret);
	gpo__sbuf_init(&text);
	ret = config_sched_text(cfg, &text);
	if (!ret) {
		ret = gpo_sched_configure(s, text.buf ? text.buf : "");
		if (ret)
			fs_lib_err(ret);
	}
	gpo__sbuf_free(&text);
	gpo_sched_free(s);
	return ret;
}

/*
 * ctx_lock held: device= names devices that are there and that jobs may
 * use (not disabled): each of a list, one per rank
 */
static int validate_device(struct fsd *fs, const char *spec)
{
	struct gpo_device *dev;
	uint64_t k, n = device_count(spec);
	char item[DEVICE_SPEC_MAX];
	int ret;

	for (k = 0; k < n; k++) {
		ret = device_item(spec, k, item, sizeof(item));
		if (ret)
			return ret;
		ret = gpo_device_select(fs->ctx, item, &dev);
		if (ret && n == 1)
			return fs_lib_err(ret);
		if (ret) {
			char msg[300];

			fs_lib_err(ret);
			snprintf(msg, sizeof(msg), "%s", fs_errmsg());
			return fs_err(ret, "device: rank %llu's '%s': %s",
				      (unsigned long long)k, item, msg);
		}
	}
	return 0;
}

/*
 * The schedule @cfg makes, as the library saves it: the same line means
 * the same schedule, however its settings were spelled. Returns 0, or -1
 * when the library cannot say.
 */
static int sched_saved(const struct job_config *cfg, char *buf, size_t len)
{
	struct gpo_sched *s = NULL;
	struct gpo__sbuf text;
	int n = -1;

	gpo__sbuf_init(&text);
	if (!config_sched_text(cfg, &text) &&
	    !gpo_sched_new(cfg->schedule, &s) &&
	    !gpo_sched_configure(s, text.buf ? text.buf : ""))
		n = gpo_sched_save(s, buf, len);
	gpo_sched_free(s);
	gpo__sbuf_free(&text);
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

static int sched_equal(const struct job_config *a,
		       const struct job_config *b)
{
	char la[SCHED_LINE_MAX], lb[SCHED_LINE_MAX];

	if (!sched_saved(a, la, sizeof(la)) && !sched_saved(b, lb, sizeof(lb)))
		return !strcmp(la, lb);
	return !strcmp(a->schedule, b->schedule) &&
	       kv_equal(&a->sched, &b->sched);
}

static unsigned int config_diff(const struct job_config *a,
				const struct job_config *b)
{
	unsigned int c = 0;

	/* a dtype is fixed when the buffers are made: a new optimizer */
	if (a->optimizer != b->optimizer || a->param_dtype != b->param_dtype ||
	    a->state_dtype != b->state_dtype)
		c |= CFG_OPTIMIZER;
	if (!kv_equal(&a->hp, &b->hp))
		c |= CFG_HP;
	if (!sched_equal(a, b))
		c |= CFG_SCHED;
	if (strcmp(a->device, b->device))
		c |= CFG_DEVICE;
	if (!model_equal(&a->model, &b->model) ||
	    memcmp(&a->train, &b->train, sizeof(a->train)))
		c |= CFG_MODEL;
	if (a->max_steps != b->max_steps || a->log_every != b->log_every ||
	    a->temperature != b->temperature ||
	    a->checkpoint_every != b->checkpoint_every ||
	    a->keep_checkpoints != b->keep_checkpoints || a->seed != b->seed ||
	    a->restart_on_failure != b->restart_on_failure ||
	    a->autostart != b->autostart ||
	    a->memory_limit_bytes != b->memory_limit_bytes)
		c |= CFG_RUN;
	if (a->ranks != b->ranks || a->shards != b->shards ||
	    strcmp(a->hosts, b->hosts) ||
	    a->deterministic != b->deterministic || a->zero != b->zero ||
	    a->overlap != b->overlap || a->bucket_bytes != b->bucket_bytes ||
	    a->comm_timeout != b->comm_timeout)
		c |= CFG_RANKS;
	return c;
}

/* optimizer= and schedule= first, so that the other keys meet them */
static int parse_kinds(const char *text, struct job_config *cfg,
		       int *new_sched)
{
	const char *pos = text;
	struct gpo__kv w;
	char value[128];
	int ret, k;

	while ((ret = next_word(&pos, &w)) > 0) {
		if (word_is(&w, "optimizer")) {
			ret = word_value(&w, value, sizeof(value));
			if (ret)
				return ret;
			k = gpo_optim_kind_parse(value);
			if (k < 0)
				return fs_err(-EINVAL,
					      "optimizer: unknown '%s' (sgd adam adamw rmsprop adagrad lamb lion)",
					      value);
			cfg->optimizer = k;
		} else if (word_is(&w, "schedule")) {
			ret = word_value(&w, value, sizeof(value));
			if (ret)
				return ret;
			if (!in_list(sched_kinds, ARRAY_SIZE(sched_kinds),
				     value))
				return fs_err(-EINVAL,
					      "schedule: unknown '%s' (constant step multistep exponential cosine cosine_restarts linear polynomial onecycle plateau)",
					      value);
			if (strcmp(value, cfg->schedule))
				*new_sched = 1;
			/* a known kind: it fits */
			strcpy(cfg->schedule, value);
		}
	}
	return ret;
}

static int parse_model_word(const struct gpo__kv *w, struct job_config *cfg)
{
	struct model m;
	char *spec;
	int ret;

	if (w->vlen > MODEL_SPEC_MAX)
		return fs_err(-EINVAL, "model: longer than %d bytes",
			      MODEL_SPEC_MAX);
	spec = strndup(w->val, w->vlen);
	if (!spec)
		return fs_err(-ENOMEM, "out of memory");
	ret = model_parse(spec, &m);
	free(spec);
	if (ret) {
		char msg[400];

		snprintf(msg, sizeof(msg), "%s", fs_errmsg());
		return fs_err(ret, "model: %s", msg);
	}
	model_free(&cfg->model);
	cfg->model = m;
	return 0;
}

/*
 * data=PATH: an absolute path of printable characters, checked for what
 * it names only by the worker, which opens it as the job's owner
 */
static int parse_data(struct job_config *cfg, const struct gpo__kv *w)
{
	size_t i;

	/* what config shows when none was given */
	if (w->vlen == 4 && !memcmp(w->val, "none", 4)) {
		cfg->train.data[0] = '\0';
		return 0;
	}
	if (!w->vlen || w->vlen >= TRAIN_DATA_MAX || w->val[0] != '/')
		return fs_err(-EINVAL, "data: an absolute path of fewer than %d bytes, or none",
			      TRAIN_DATA_MAX);
	for (i = 0; i < w->vlen; i++)
		if (!isgraph((unsigned char)w->val[i]))
			return fs_err(-EINVAL, "data: the path has a blank or control character");
	memcpy(cfg->train.data, w->val, w->vlen);
	cfg->train.data[w->vlen] = '\0';
	return 0;
}

static int parse_other(struct job_config *cfg, const struct gpo__kv *w,
		       struct kvlist *given_hp)
{
	char key[32], value[128];
	int ret;

	memcpy(key, w->key, w->klen);
	key[w->klen] = '\0';
	if (!strcmp(key, "optimizer") || !strcmp(key, "schedule"))
		return 0;
	if (!strcmp(key, "model"))
		return parse_model_word(w, cfg);
	if (!strcmp(key, "data"))
		return parse_data(cfg, w);
	if (!strcmp(key, "device"))
		return parse_device(cfg, w);
	ret = word_value(w, value, sizeof(value));
	if (ret)
		return ret;
	if (!strcmp(key, "hosts"))
		return parse_hosts(cfg, value);
	ret = parse_run_key(cfg, key, value);
	if (ret <= 0)
		return ret;
	ret = parse_comm_key(cfg, key, value);
	if (ret <= 0)
		return ret;
	ret = parse_dtype_key(cfg, key, value);
	if (ret <= 0)
		return ret;
	if (in_list(sched_keys, ARRAY_SIZE(sched_keys), key))
		return kv_set(&cfg->sched, key, value);
	/* the rest are the optimizer's: the library judges them */
	ret = kv_set(given_hp, key, value);
	return ret ? ret : kv_set(&cfg->hp, key, value);
}

static int parse_words(struct fsd *fs, const char *text,
		       struct job_config *cfg, int old_optimizer)
{
	struct kvlist given = { NULL, 0 };
	const char *pos = text;
	struct gpo__kv w;
	int ret;

	while ((ret = next_word(&pos, &w)) > 0) {
		ret = parse_other(cfg, &w, &given);
		if (ret)
			break;
	}
	if (!ret && cfg->optimizer != old_optimizer)
		ret = drop_foreign_hp(fs, cfg, &given);
	free(given.v);
	return ret;
}

/*
 * The keys of one kind of model given in a write that leaves the job with
 * another: refused, rather than kept for nothing (mlp's activation and
 * loss are accepted before any model, as they always were).
 */
static int model_keys_fit(const char *text, const struct job_config *cfg)
{
	const char *pos = text, *spec = cfg->model.spec ? cfg->model.spec :
					"none";
	struct gpo__kv w;
	int ret;

	while ((ret = next_word(&pos, &w)) > 0) {
		if (cfg->model.kind == MODEL_GPT &&
		    (word_is(&w, "activation") || word_is(&w, "loss")))
			return fs_err(-EINVAL,
				      "%.*s: a gpt model has GELU (tanh) and cross-entropy; activation and loss are mlp's keys",
				      (int)w.klen, w.key);
		if (cfg->model.kind != MODEL_GPT &&
		    (word_is(&w, "dropout") || word_is(&w, "temperature")))
			return fs_err(-EINVAL,
				      "%.*s: only gpt models have it (model=%.64s; give model=gpt:... first or in the same write)",
				      (int)w.klen, w.key, spec);
	}
	return ret;
}

int config_parse(struct fsd *fs, const struct job_config *cur,
		 const char *text, struct job_config *out,
		 unsigned int *changed)
{
	int ret, new_sched = 0;

	ret = config_copy(out, cur);
	if (ret)
		return ret;
	ret = parse_kinds(text, out, &new_sched);
	if (ret)
		goto out_free;
	if (new_sched) {
		free(out->sched.v);
		out->sched.v = NULL;
		out->sched.n = 0;
	}
	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = parse_words(fs, text, out, cur->optimizer);
	if (!ret)
		ret = model_keys_fit(text, out);
	if (!ret)
		ret = validate_hp(fs, out);
	if (!ret)
		ret = validate_sched(out);
	if (!ret && strcmp(out->device, cur->device))
		ret = validate_device(fs, out->device);
	pthread_rwlock_unlock(&fs->ctx_lock);
	/* config_hp() takes ctx_lock itself */
	if (!ret)
		ret = validate_loss_scale(fs, out);
	if (!ret)
		ret = validate_ranks(out);
	if (!ret)
		ret = validate_comm(fs, out);
	if (ret)
		goto out_free;
	/*
	 * Until max_steps is given, it follows the model: an external job
	 * steps as long as gradients come, a built-in one stops at the
	 * default.
	 */
	if (!out->max_steps_given)
		out->max_steps = out->model.kind == MODEL_EXTERNAL ?
				 MAX_STEPS_UNLIMITED : MAX_STEPS_DEFAULT;
	/* refused at the write, long before anything is allocated */
	if (config_mem_bytes(out) > fs->max_job_bytes) {
		ret = fs_err(-EDQUOT,
			     "model=%.64s needs %llu bytes (16 per parameter%s), more than the %llu a job may have",
			     out->model.spec ? out->model.spec : "?",
			     (unsigned long long)config_mem_bytes(out),
			     out->ranks > 1 ? " and rank" : "",
			     (unsigned long long)fs->max_job_bytes);
		goto out_free;
	}
	*changed = config_diff(cur, out);
	return 0;
out_free:
	config_free(out);
	return ret;
}

double config_loss_scale(struct fsd *fs, const struct job_config *cfg)
{
	double v = config_hp(fs, cfg, "loss_scale");

	/* 0: dynamic, starting from init_scale */
	return v == 0 ? config_hp(fs, cfg, "init_scale") : v;
}

uint64_t config_mem_bytes(const struct job_config *cfg)
{
	/*
	 * param, grad and up to two states of float32 per parameter, in
	 * every rank (on this machine or another: counted here all the same)
	 */
	return cfg->model.numel * 16 * cfg->ranks;
}

/* A saved schedule's settings into @cfg; its state words are no settings. */
static int restored_sched(struct job_config *cfg, const char *line)
{
	const char *pos = line;
	char key[32], value[128];
	struct gpo__kv w;
	int ret;

	free(cfg->sched.v);
	cfg->sched.v = NULL;
	cfg->sched.n = 0;
	snprintf(cfg->schedule, sizeof(cfg->schedule), "constant");
	while ((ret = next_word(&pos, &w)) > 0) {
		memcpy(key, w.key, w.klen);
		key[w.klen] = '\0';
		ret = word_value(&w, value, sizeof(value));
		if (ret)
			return ret;
		if (!strcmp(key, "kind")) {
			if (!in_list(sched_kinds, ARRAY_SIZE(sched_kinds),
				     value))
				return fs_err(-EINVAL,
					      "the saved schedule's kind '%s' is unknown",
					      value);
			strcpy(cfg->schedule, value);
		} else if (in_list(sched_keys, ARRAY_SIZE(sched_keys), key)) {
			ret = kv_set(&cfg->sched, key, value);
			if (ret)
				return ret;
		}
	}
	return ret;
}

int config_restored(struct fsd *fs, const struct job_config *cur,
		    const char *hp, const char *sched, struct job_config *out)
{
	const char *pos = hp;
	char key[32], value[128];
	struct gpo__kv w;
	int ret;

	ret = config_copy(out, cur);
	if (ret)
		return ret;
	free(out->hp.v);
	out->hp.v = NULL;
	out->hp.n = 0;
	while ((ret = next_word(&pos, &w)) > 0) {
		/* next_word() refused keys too long for @key */
		memcpy(key, w.key, w.klen);
		key[w.klen] = '\0';
		ret = word_value(&w, value, sizeof(value));
		if (!ret)
			ret = kv_set(&out->hp, key, value);
		if (ret)
			break;
	}
	if (!ret)
		ret = restored_sched(out, sched);
	if (ret)
		goto out_free;
	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = validate_hp(fs, out);
	if (!ret)
		ret = validate_sched(out);
	pthread_rwlock_unlock(&fs->ctx_lock);
	if (!ret)
		return 0;
out_free:
	config_free(out);
	return ret;
}

double config_lr(struct fsd *fs, const struct job_config *cfg)
{
	return config_hp(fs, cfg, "lr");
}

double config_hp(struct fsd *fs, const struct job_config *cfg,
		 const char *key)
{
	struct gpo_optim *opt;
	struct gpo__sbuf text;
	double v = NAN;

	gpo__sbuf_init(&text);
	config_hp_text(cfg, &text);
	pthread_rwlock_rdlock(&fs->ctx_lock);
	if (!gpo_optim_new(fs->cpu, cfg->optimizer, &opt)) {
		gpo_optim_configure(opt, -1, text.buf ? text.buf : "");
		gpo_optim_get(opt, -1, key, &v);
		gpo_optim_free(opt);
	}
	pthread_rwlock_unlock(&fs->ctx_lock);
	gpo__sbuf_free(&text);
	return v;
}

/* ---- showing ------------------------------------------------------------- */

static void show_hp_line(struct gpo__sbuf *sb, const char *line, double beta1)
{
	const char *eq = strchr(line, '=');
	char num[40];
	double v;

	if (!eq)
		return;
	/* a word, not a number (loss_scale=dynamic): as the library says */
	if (!strcmp(eq + 1, "dynamic")) {
		gpo__sbuf_printf(sb, "%s\n", line);
		return;
	}
	v = gpo__strtod(eq + 1, NULL);
	if (!strncmp(line, "beta1=", 6))
		return;
	gpo__fmt_double(num, sizeof(num), v);
	if (!strncmp(line, "beta2=", 6)) {
		char b1[40];

		gpo__fmt_double(b1, sizeof(b1), beta1);
		gpo__sbuf_printf(sb, "betas=%s,%s\n", b1, num);
		return;
	}
	gpo__sbuf_printf(sb, "%.*s=%s\n", (int)(eq - line), line, num);
}

static int show_hp(struct fsd *fs, const struct job_config *cfg,
		   struct gpo_optim *opt, struct gpo__sbuf *sb)
{
	struct gpo_optim *tmp = NULL;
	char desc[2048], *line, *save = NULL;
	double beta1 = 0;
	struct gpo__sbuf text;
	int ret;

	gpo__sbuf_init(&text);
	if (!opt) {
		ret = gpo_optim_new(fs->cpu, cfg->optimizer, &tmp);
		if (ret)
			return fs_lib_err(ret);
		config_hp_text(cfg, &text);
		/* validated when it was written */
		gpo_optim_configure(tmp, -1, text.buf ? text.buf : "");
		gpo__sbuf_free(&text);
		opt = tmp;
	}
	ret = gpo_optim_describe(opt, -1, desc, sizeof(desc));
	gpo_optim_get(opt, -1, "beta1", &beta1);
	gpo_optim_free(tmp);
	if (ret < 0)
		return fs_lib_err(ret);
	for (line = strtok_r(desc, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		show_hp_line(sb, line, beta1);
	return 0;
}

/* key=value, a number in its shortest form that reads back the same */
static void show_value(struct gpo__sbuf *sb, const char *key, const char *value)
{
	char num[40], *end;
	double v;

	v = gpo__strtod(value, &end);
	if (end != value && !*end && strchr(value, '.')) {
		gpo__fmt_double(num, sizeof(num), v);
		value = num;
	}
	gpo__sbuf_printf(sb, "%s=%s\n", key, value);
}

/* The schedule's settings: the library's where it can say them. */
static void show_sched(const struct job_config *cfg, struct gpo__sbuf *sb)
{
	char saved[SCHED_LINE_MAX], *word, *save = NULL, *eq;
	int i;

	gpo__sbuf_printf(sb, "schedule=%s\n", cfg->schedule);
	if (sched_saved(cfg, saved, sizeof(saved))) {
		for (i = 0; i < cfg->sched.n; i++)
			gpo__sbuf_printf(sb, "%s=%s\n", cfg->sched.v[i].key,
				    cfg->sched.v[i].value);
		return;
	}
	for (word = strtok_r(saved, " ", &save); word;
	     word = strtok_r(NULL, " ", &save)) {
		eq = strchr(word, '=');
		if (!eq)
			continue;
		*eq = '\0';
		/* its state words (last_epoch...) are not settings */
		if (in_list(sched_keys, ARRAY_SIZE(sched_keys), word))
			show_value(sb, word, eq + 1);
	}
}

int config_show(struct fsd *fs, const struct job_config *cfg,
		struct gpo_optim *opt, struct gpo__sbuf *sb)
{
	char max[24];
	int ret;

	gpo__sbuf_printf(sb, "optimizer=%s\n", gpo_optim_kind_name(cfg->optimizer));
	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = show_hp(fs, cfg, opt, sb);
	pthread_rwlock_unlock(&fs->ctx_lock);
	if (ret)
		return ret;
	show_sched(cfg, sb);
	gpo__sbuf_printf(sb, "param_dtype=%s\nstate_dtype=%s\n",
			 gpo_dtype_name(cfg->param_dtype),
			 gpo_dtype_name(cfg->state_dtype));
	/* epochs=N alone ends a data model's job: max_steps is then max */
	if (cfg->max_steps == MAX_STEPS_UNLIMITED ||
	    (config_learns(cfg) && cfg->train.epochs &&
	     !cfg->max_steps_given))
		snprintf(max, sizeof(max), "max");
	else
		snprintf(max, sizeof(max), "%llu",
			 (unsigned long long)cfg->max_steps);
	gpo__sbuf_printf(sb, "device=%s\nmodel=%s\nmax_steps=%s\nlog_every=%llu\n"
		    "checkpoint_every=%llu\nkeep_checkpoints=%llu\nseed=%llu\n",
		    cfg->device, cfg->model.spec ? cfg->model.spec : "none",
		    max, (unsigned long long)cfg->log_every,
		    (unsigned long long)cfg->checkpoint_every,
		    (unsigned long long)cfg->keep_checkpoints,
		    (unsigned long long)cfg->seed);
	if (cfg->model.kind == MODEL_MLP)
		gpo__sbuf_printf(sb, "activation=%s\nloss=%s\n",
				 cfg->train.activation, cfg->train.loss);
	if (config_learns(cfg))
		gpo__sbuf_printf(sb, "data=%s\nbatch_size=%llu\n"
				 "epochs=%llu\neval_every=%llu\nshuffle=%d\n"
				 "matmul=%s\n",
				 cfg->train.data[0] ? cfg->train.data : "none",
				 (unsigned long long)cfg->train.batch_size,
				 (unsigned long long)cfg->train.epochs,
				 (unsigned long long)cfg->train.eval_every,
				 cfg->train.shuffle,
				 cfg->train.matmul_f16 ? "f16" : "f32");
	if (cfg->model.kind == MODEL_GPT) {
		char num[40];

		gpo__fmt_double(num, sizeof(num), cfg->train.dropout);
		gpo__sbuf_printf(sb, "dropout=%s\n", num);
		gpo__fmt_double(num, sizeof(num), cfg->temperature);
		gpo__sbuf_printf(sb, "temperature=%s\n", num);
	}
	gpo__sbuf_printf(sb, "restart_on_failure=%llu\nautostart=%llu\n",
			 (unsigned long long)cfg->restart_on_failure,
			 (unsigned long long)cfg->autostart);
	gpo__sbuf_printf(sb, "ranks=%llu\nshards=%llu\nhosts=%s\n",
			 (unsigned long long)cfg->ranks,
			 (unsigned long long)(cfg->shards ? cfg->shards :
					      cfg->ranks),
			 cfg->hosts[0] ? cfg->hosts : "none");
	gpo__sbuf_printf(sb, "deterministic=%d\nzero=%d\noverlap=%d\n"
			 "bucket_bytes=%llu\n", cfg->deterministic, cfg->zero,
			 cfg->overlap, (unsigned long long)cfg->bucket_bytes);
	if (cfg->comm_timeout)
		gpo__sbuf_printf(sb, "timeout=%llu\n",
				 (unsigned long long)cfg->comm_timeout);
	else
		gpo__sbuf_printf(sb, "timeout=auto\n");
	if (cfg->memory_limit_bytes)
		gpo__sbuf_printf(sb, "memory_limit_bytes=%llu\n",
				 (unsigned long long)cfg->memory_limit_bytes);
	else
		gpo__sbuf_printf(sb, "memory_limit_bytes=max\n");
	return sb->err;
}
