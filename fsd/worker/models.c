// SPDX-License-Identifier: MIT
/*
 * models.c - the model kinds a worker trains, one table of ops each
 *
 * quadratic and rosenbrock are the library's built-in objectives: the
 * device measures the loss and the gradient, the optimizer steps. external
 * models have no loss of their own: their gradients come through grad.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "worker_i.h"

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

static const struct model_ops models[] = {
	{ "quadratic", quadratic_init, objective_step, objective_eval,
	  describe },
	{ "rosenbrock", rosenbrock_init, objective_step, objective_eval,
	  describe },
	{ "external", zeros_init, external_step, no_eval, describe },
};

const struct model_ops *model_ops_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(models[i].name, name))
			return &models[i];
	return NULL;
}
