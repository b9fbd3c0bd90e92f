// SPDX-License-Identifier: MIT
/*
 * models.c - the model kinds a worker trains, one table of ops each
 *
 * quadratic and rosenbrock are the library's built-in objectives: the
 * device measures the loss and the gradient, the optimizer steps. external
 * models have no loss of their own: their gradients come through grad.
 * mlp and gpt models are the library's tensor engine, trained on data the
 * worker opens as the job's owner; a gpt also generates text (sample).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "worker_i.h"
#ifdef GPO_HAVE_MPI
#include <gpuopt/comm.h>
#endif

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* a seeded random start in [-2, 2) */
static int quadratic_init(struct wk *w, const struct wp_build *b, float *x)
{
	uint64_t i, s = b->seed;

	for (i = 0; i < b->numel; i++)
		x[i] = (float)((splitmix64(&s) >> 40) * 0x1p-24 * 4 - 2);
	return 0;
}

/* rosenbrock's classic starting point */
static int rosenbrock_init(struct wk *w, const struct wp_build *b, float *x)
{
	uint64_t i;

	for (i = 0; i < b->numel; i++)
		x[i] = i % 2 ? 1.0f : -1.2f;
	return 0;
}

static int zeros_init(struct wk *w, const struct wp_build *b, float *x)
{
	memset(x, 0, b->numel * sizeof(float));
	return 0;
}

static int objective_eval(struct wk *w, double *loss)
{
	int ret = gpo_optim_objective(w->opt, w->model->name, loss);

	return ret ? wk_lib_err(w, ret) : 0;
}

static int objective_step(struct wk *w, struct wp_stat *st)
{
	struct gpo_step_info si;
	double loss;
	int ret;

	wk_fault(w);
	ret = objective_eval(w, &loss);
	if (ret)
		return ret;
	if (!isfinite(loss))
		return wk_err(w, -ERANGE, "the loss is %g: the run diverged",
			      loss);
	if (w->sched)
		gpo_optim_set_metric(w->opt, loss);
	ret = gpo_optim_step(w->opt, &si);
	if (ret)
		return wk_lib_err(w, ret);
	wk_step_info(w, &si, st);
	st->loss = loss;
	return 0;
}

static int external_step(struct wk *w, struct wp_stat *st)
{
	return wk_err(w, -EINVAL,
		      "step N needs a built-in model; external models step on writes to grad");
}

static int no_eval(struct wk *w, double *loss)
{
	return wk_err(w, -ENOSYS, "model %s has no loss of its own",
		      w->model->name);
}

static void describe(struct wk *w, char *buf, size_t len)
{
	snprintf(buf, len, "%s: %u tensors, %llu params", w->model->name,
		 w->ntensors, (unsigned long long)w->numel);
}


/* ---- mlp and gpt: models of the tensor engine trained on data ------------ */

/*
 * The two differ in their own settings and in what their data is (a
 * dataset of samples; any file's bytes), not in how they train: one setup,
 * one step and one eval serve both.
 */
struct learner {
	struct gpo_model *m;
	struct gpo_dataset *ds;
	struct gpo_train *t;
	int gpt;
	uint64_t eval_every;		/* steps; 0: once an epoch */
	uint64_t per_step;		/* samples (mlp) or bytes (gpt) a step */
	double eval_loss, accuracy;	/* the last evaluation; NaN before */
	uint64_t t0_ns, t0_step;	/* where the rate counts from */
	double rate;
};

static void learner_release(void *state)
{
	struct learner *p = state;

	gpo_train_free(p->t);
	gpo_dataset_free(p->ds);
	gpo_model_free(p->m);
	free(p);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The model text (config.c writes it; the daemon checked every value), the
 * seed from the build:
 *   mlp:784x256x10 activation=relu loss=xent data=PATH batch_size=64
 *	shuffle=1 eval_every=0 matmul=f32
 *   gpt:layers=L,heads=H,dim=D,ctx=T dropout=P data=PATH batch_size=...
 */
static int learner_setup(struct wk *w, const struct wp_build *b,
			 struct gpo_optim *opt, const char *text, void **state,
			 uint64_t *spe)
{
	char spec[256], data[4096], mopts[160], topts[160];
	char act[16] = "relu", loss[8] = "xent", dropout[32] = "0";
	char mm[4] = "f32";
	unsigned long long batch = 64, every = 0, seed = b->seed;
	struct gpo_model_info info;
	int shuffle = 1, gpt, n, ret;
	struct learner *m;
	const char *p;

	if (sscanf(text, "%255s%n", spec, &n) != 1)
		return wk_err(w, -EPROTO, "no model spec");
	gpt = !strncmp(spec, "gpt:", 4);
	data[0] = '\0';
	for (p = text + n; *p;) {
		char word[4200];
		int k;

		while (*p == ' ')
			p++;
		if (!*p || sscanf(p, "%4199s%n", word, &k) != 1)
			break;
		p += k;
		if (!gpt && !strncmp(word, "activation=", 11))
			snprintf(act, sizeof(act), "%.15s", word + 11);
		else if (!gpt && !strncmp(word, "loss=", 5))
			snprintf(loss, sizeof(loss), "%.7s", word + 5);
		else if (gpt && !strncmp(word, "dropout=", 8))
			snprintf(dropout, sizeof(dropout), "%.31s", word + 8);
		else if (!strcmp(word, "matmul=f32") ||
			 !strcmp(word, "matmul=f16"))
			snprintf(mm, sizeof(mm), "%.3s", word + 7);
		else if (!strncmp(word, "data=", 5))
			snprintf(data, sizeof(data), "%.4095s", word + 5);
		else if (sscanf(word, "batch_size=%llu", &batch) == 1 ||
			 sscanf(word, "eval_every=%llu", &every) == 1 ||
			 sscanf(word, "shuffle=%d", &shuffle) == 1)
			continue;
		else
			return wk_err(w, -EPROTO, "model setting '%.64s'", word);
	}
	if (!data[0])
		return wk_err(w, -EINVAL, gpt ?
			      "model %s needs data=PATH: a file whose bytes it learns" :
			      "model %s needs data=PATH: a dataset directory, IMAGES,LABELS or a .safetensors file",
			      spec);
	m = calloc(1, sizeof(*m));
	if (!m)
		return wk_err(w, -ENOMEM, "out of memory");
	m->gpt = gpt;
	m->eval_every = every;
	m->eval_loss = NAN;
	m->accuracy = NAN;
	if (gpt)
		snprintf(mopts, sizeof(mopts), "dropout=%s seed=%llu", dropout,
			 seed);
	else
		snprintf(mopts, sizeof(mopts), "activation=%s loss=%s seed=%llu",
			 act, loss, seed);
	snprintf(topts, sizeof(topts), "batch_size=%llu shuffle=%d seed=%llu matmul=%s",
		 batch, shuffle, seed, mm);
	ret = gpo_model_new(opt, spec, mopts, &m->m);
	if (ret)
		goto out_err;
	ret = gpo_model_info(m->m, &info);
	if (ret)
		goto out_err;
	/* a gpt's sample is ctx bytes, each one predicted */
	m->per_step = batch * (gpt && info.ctx ? info.ctx : 1);
	/* opened here, as the job's owner: only what the owner may read */
	ret = gpo_dataset_open(data, gpt ? GPO_DATASET_BYTES : 0, &m->ds);
	if (ret)
		goto out_err;
	ret = gpo_train_new(m->m, m->ds, topts, &m->t);
	if (ret)
		goto out_err;
	*spe = gpo_train_steps_per_epoch(m->t);
	*state = m;
	return 0;

out_err:
	wk_lib_err(w, ret);
	learner_release(m);
	return ret;
}

static void extra(struct wp_stat *st, const char *name, double v)
{
	if (st->nextra >= WP_EXTRA_MAX)
		return;
	snprintf(st->extra[st->nextra].name, sizeof(st->extra[0].name), "%s",
		 name);
	st->extra[st->nextra++].value = v;
}

static int learner_step(struct wk *w, struct wp_stat *st)
{
	struct learner *m = w->mstate;
	struct gpo_train_result r, e;
	uint64_t spe = gpo_train_steps_per_epoch(m->t), now;
	uint64_t every = m->eval_every ? m->eval_every : spe;
	int ret;

	wk_fault(w);
#ifdef GPO_HAVE_MPI
	/*
	 * every step is then collective: each rank runs its shards. At
	 * the first step, not the build: ZeRO-1's shard optimizer copies
	 * the settings, params and state the model's optimizer has then.
	 */
	if (w->comm && !w->attached) {
		ret = gpo_comm_train_attach(w->comm, m->t);
		if (ret)
			return wk_lib_err(w, ret);
		w->attached = 1;
	}
#endif
	if (!m->t0_ns) {
		m->t0_ns = now_ns();
		m->t0_step = gpo_optim_steps_done(w->opt);
	}
	ret = gpo_train_step(m->t, &r);
	if (ret)
		return wk_lib_err(w, ret);
	if (!isfinite(r.loss))
		return wk_err(w, -ERANGE, "the loss is %g: the run diverged",
			      r.loss);
	if (w->sched)
		gpo_optim_set_metric(w->opt, r.loss);
	if (every && r.step % every == 0) {
		ret = gpo_train_eval(m->t, &e);
		if (ret && ret != -ENODATA)
			return wk_lib_err(w, ret);
		if (!ret) {
			m->eval_loss = e.loss;
			m->accuracy = e.accuracy;
		}
	}
	now = now_ns();
	if (now > m->t0_ns && r.step > m->t0_step)
		m->rate = (double)(r.step - m->t0_step) * m->per_step /
			  ((now - m->t0_ns) / 1e9);
	st->step = r.step;
	st->skipped_total = gpo_optim_steps_skipped(w->opt);
	st->skipped = r.skipped;
	st->loss = r.loss;
	st->lr = r.lr;
	st->grad_norm = r.grad_norm;
	st->loss_scale = r.loss_scale;
	st->nextra = 0;
	extra(st, "epoch", (double)r.epoch);
	extra(st, m->gpt ? "tokens_per_sec" : "samples_per_sec", m->rate);
	extra(st, "eval_loss", m->eval_loss);
	extra(st, "accuracy", m->accuracy);
	extra(st, "train_accuracy", r.accuracy);
#ifdef GPO_HAVE_MPI
	if (w->comm) {
		struct gpo_comm_stats cs;

		/* stat's time spent reducing gradients over the ranks */
		if (!gpo_comm_stats(w->comm, &cs)) {
			extra(st, "comm_seconds", cs.reduce_ns / 1e9);
			extra(st, "comm_wait_seconds", cs.wait_ns / 1e9);
		}
	}
#endif
	return 0;
}

static int learner_eval(struct wk *w, double *loss)
{
	struct learner *m = w->mstate;
	struct gpo_train_result e;
	int ret = gpo_train_eval(m->t, &e);

	if (ret)
		return wk_lib_err(w, ret);
	m->eval_loss = e.loss;
	m->accuracy = e.accuracy;
	*loss = e.loss;
	return 0;
}

static int gpt_sample(struct wk *w, const void *prompt, size_t len,
		      double temperature, uint64_t seed, void *out, size_t n)
{
	struct learner *m = w->mstate;
	int ret;

	ret = gpo_model_sample(m->m, prompt, len, temperature, seed, out, n);
	return ret ? wk_lib_err(w, ret) : 0;
}

static const struct model_ops models[] = {
	{ "quadratic", quadratic_init, NULL, NULL, objective_step,
	  objective_eval, describe, NULL },
	{ "rosenbrock", rosenbrock_init, NULL, NULL, objective_step,
	  objective_eval, describe, NULL },
	{ "external", zeros_init, NULL, NULL, external_step, no_eval,
	  describe, NULL },
	{ "mlp", NULL, learner_setup, learner_release, learner_step,
	  learner_eval, describe, NULL },
	{ "gpt", NULL, learner_setup, learner_release, learner_step,
	  learner_eval, describe, gpt_sample },
};

const struct model_ops *model_ops_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(models[i].name, name))
			return &models[i];
	return NULL;
}
