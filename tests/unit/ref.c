// SPDX-License-Identifier: MIT
/*
 * ref.c - the float64 reference optimizers and the harness around them
 *
 * The formulas are torch 1.13's single-tensor code paths, transcribed
 * (torch/optim/sgd.py _single_tensor_sgd, adam.py _single_tensor_adam,
 * adamw.py, rmsprop.py, adagrad.py; torch/nn/utils/clip_grad.py;
 * GradScaler.unscale_), and for LAMB and Lion the definitions in README.md
 * ("The optimizers"). Every quantity is a double computed from the float32
 * inputs; nothing is rounded to float32 on the way.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"
#include "testutil.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"

static const char *const slot_names[REF_NSLOTS] = {
	[REF_MOMENTUM_BUFFER] = "momentum_buffer",
	[REF_EXP_AVG] = "exp_avg",
	[REF_EXP_AVG_SQ] = "exp_avg_sq",
	[REF_MAX_EXP_AVG_SQ] = "max_exp_avg_sq",
	[REF_SQUARE_AVG] = "square_avg",
	[REF_GRAD_AVG] = "grad_avg",
	[REF_SUM] = "sum",
};

const char *ref_slot_name(enum ref_slot s)
{
	return (unsigned int)s < REF_NSLOTS ? slot_names[s] : "?";
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "ref: out of memory (%zu x %zu)\n", n, size);
		abort();
	}
	return p;
}

/* torch 1.13's defaults; sgd's lr and LAMB/Lion as gpuopt.h documents */
void ref_init(struct ref_optim *r, enum gpo_optim_kind kind)
{
	struct ref_hparams *hp = &r->hp[0];

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->ngroups = 1;
	r->grad_scale = 1.0;
	switch (kind) {
	case GPO_SGD:
		hp->lr = 1e-3;
		break;
	case GPO_ADAM:
	case GPO_ADAMW:
		hp->lr = 1e-3;
		hp->beta1 = 0.9;
		hp->beta2 = 0.999;
		hp->eps = 1e-8;
		hp->weight_decay = kind == GPO_ADAMW ? 1e-2 : 0;
		break;
	case GPO_RMSPROP:
		hp->lr = 1e-2;
		hp->alpha = 0.99;
		hp->eps = 1e-8;
		break;
	case GPO_ADAGRAD:
		hp->lr = 1e-2;
		hp->eps = 1e-10;
		break;
	case GPO_LAMB:
		hp->lr = 1e-3;
		hp->beta1 = 0.9;
		hp->beta2 = 0.999;
		hp->eps = 1e-6;
		break;
	case GPO_LION:
		hp->lr = 1e-4;
		hp->beta1 = 0.9;
		hp->beta2 = 0.99;
		break;
	default:
		abort();
	}
}

static void free_state(struct ref_tensor *t)
{
	int s;

	for (s = 0; s < REF_NSLOTS; s++) {
		free(t->slot[s]);
		free(t->mag[s]);
		t->slot[s] = NULL;
		t->mag[s] = NULL;
	}
}

void ref_free(struct ref_optim *r)
{
	int i;

	for (i = 0; i < r->ntensors; i++) {
		free_state(&r->t[i]);
		free(r->t[i].p);
		free(r->t[i].pmag);
		free(r->t[i].unsure);
	}
	r->ntensors = 0;
}

int ref_add_group(struct ref_optim *r)
{
	if (r->ngroups >= REF_MAX_GROUPS)
		abort();
	r->hp[r->ngroups] = r->hp[0];
	return r->ngroups++;
}

int ref_add_tensor(struct ref_optim *r, size_t n, int group)
{
	struct ref_tensor *t;

	if (r->ntensors >= REF_MAX_TENSORS || group < 0 ||
	    group >= r->ngroups)
		abort();
	t = &r->t[r->ntensors];
	memset(t, 0, sizeof(*t));
	t->n = n;
	t->group = group;
	t->p = xcalloc(n, sizeof(double));
	t->pmag = xcalloc(n, sizeof(double));
	t->unsure = xcalloc(n, 1);
	return r->ntensors++;
}

static int parse_num(const char *s, double *v)
{
	char *end;

	if (!*s)
		return -1;
	*v = strtod(s, &end);
	return *end || !isfinite(*v) ? -1 : 0;
}

static int parse_flag(const char *s, int *v)
{
	if (!strcmp(s, "1") || !strcmp(s, "true")) {
		*v = 1;
		return 0;
	}
	if (!strcmp(s, "0") || !strcmp(s, "false")) {
		*v = 0;
		return 0;
	}
	return -1;
}

/* the per-group hyperparameters by gpuopt's (and torch's) names */
static const struct {
	const char *name;
	size_t off;
	int is_bool;
} hp_fields[] = {
#define N(x) { #x, offsetof(struct ref_hparams, x), 0 }
#define B(x) { #x, offsetof(struct ref_hparams, x), 1 }
	N(lr), N(weight_decay), N(momentum), N(dampening), N(beta1),
	N(beta2), N(eps), N(alpha), N(lr_decay),
	N(initial_accumulator_value),
	B(nesterov), B(amsgrad), B(maximize), B(centered),
#undef N
#undef B
};

#define NFIELDS (sizeof(hp_fields) / sizeof(hp_fields[0]))

/* Set one key of one group's hyperparameters. */
static int set_key(struct ref_optim *r, struct ref_hparams *hp,
		   const char *key, const char *val)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++) {
		char *field = (char *)hp + hp_fields[i].off;

		if (strcmp(key, hp_fields[i].name))
			continue;
		if (hp_fields[i].is_bool)
			return parse_flag(val, (int *)field);
		return parse_num(val, (double *)field);
	}
	if (!strcmp(key, "betas")) {
		char b1[64], *comma;

		snprintf(b1, sizeof(b1), "%s", val);
		comma = strchr(b1, ',');
		if (!comma)
			return -1;
		*comma = '\0';
		if (parse_num(b1, &hp->beta1) ||
		    parse_num(comma + 1, &hp->beta2))
			return -1;
		return 0;
	}
	if (!strcmp(key, "clip_norm"))
		return parse_num(val, &r->clip_norm);
	if (!strcmp(key, "grad_scale"))
		return parse_num(val, &r->grad_scale);
	if (!strcmp(key, "check_finite"))
		return parse_flag(val, &r->check_finite);
	return -1;
}

int ref_get(const struct ref_optim *r, int group, const char *key,
	    double *v)
{
	const char *hp = (const char *)&r->hp[group];
	size_t i;

	for (i = 0; i < NFIELDS; i++) {
		if (strcmp(key, hp_fields[i].name))
			continue;
		if (hp_fields[i].is_bool)
			*v = *(const int *)(hp + hp_fields[i].off);
		else
			*v = *(const double *)(hp + hp_fields[i].off);
		return 0;
	}
	return -1;
}

int ref_configure(struct ref_optim *r, int group, const char *text)
{
	char *copy = strdup(text), *word, *save, *eq;
	int g, ret = 0;

	if (!copy)
		abort();
	for (word = strtok_r(copy, " \t\n;", &save); word && !ret;
	     word = strtok_r(NULL, " \t\n;", &save)) {
		eq = strchr(word, '=');
		if (!eq) {
			ret = -1;
			break;
		}
		*eq = '\0';
		for (g = 0; g < r->ngroups && !ret; g++)
			if (group < 0 || g == group)
				ret = set_key(r, &r->hp[g], word, eq + 1);
	}
	free(copy);
	return ret;
}

void ref_set_params(struct ref_optim *r, int t, const float *src)
{
	size_t i;

	for (i = 0; i < r->t[t].n; i++) {
		r->t[t].p[i] = src[i];
		r->t[t].pmag[i] = fabs(src[i]);
	}
}

static int slot_index(const char *name)
{
	int s;

	for (s = 0; s < REF_NSLOTS; s++)
		if (!strcmp(name, slot_names[s]))
			return s;
	return -1;
}

/* The state tensor @s of @t, created filled with @init when missing. */
static double *state(struct ref_tensor *t, enum ref_slot s, double init)
{
	size_t i;

	if (!t->slot[s]) {
		t->slot[s] = xcalloc(t->n, sizeof(double));
		t->mag[s] = xcalloc(t->n, sizeof(double));
		for (i = 0; i < t->n; i++) {
			t->slot[s][i] = init;
			t->mag[s][i] = fabs(init);
		}
	}
	return t->slot[s];
}

void ref_set_slot(struct ref_optim *r, int t, const char *name,
		  const float *src)
{
	int s = slot_index(name);
	double *d;
	size_t i;

	if (s < 0)
		abort();
	d = state(&r->t[t], s, 0);
	for (i = 0; i < r->t[t].n; i++) {
		d[i] = src[i];
		r->t[t].mag[s][i] = fabs(src[i]);
	}
}

const double *ref_data(const struct ref_optim *r, int t, const char *name)
{
	int s;

	if (!strcmp(name, "param"))
		return r->t[t].p;
	s = slot_index(name);
	return s < 0 ? NULL : r->t[t].slot[s];
}

const double *ref_mag(const struct ref_optim *r, int t, const char *name)
{
	int s;

	if (!strcmp(name, "param"))
		return r->t[t].pmag;
	s = slot_index(name);
	return s < 0 ? NULL : r->t[t].mag[s];
}

void ref_reset(struct ref_optim *r)
{
	int i;

	/*
	 * A reset keeps the parameters, so it keeps the elements whose Lion
	 * sign was a coin toss before (unsure): their values may still
	 * differ from the device's by those earlier steps.
	 */
	for (i = 0; i < r->ntensors; i++)
		free_state(&r->t[i]);
	r->step = 0;
	r->skipped = 0;
}

/* ---- the update rules, per tensor ------------------------------------------
 *
 * g is the gradient after unscaling, clipping and maximize's negation.
 * Next to each value the rules carry its magnitude companion (capitals):
 * the same recurrence over the absolute values of the terms, i.e. what a
 * sum's rounding error is relative to (|fl(a + b) - (a + b)| <= u (|a| +
 * |b|)). Through a division by a denominator that is itself rounded, the
 * companion picks up the denominator's condition kappa (its relative
 * error over u).
 */

/* sgd.py _single_tensor_sgd */
static void ref_sgd(struct ref_tensor *t, const struct ref_hparams *hp,
		    const double *g)
{
	double *buf = NULL, *B = NULL;
	int first = 0;
	size_t i;

	if (hp->momentum != 0) {
		first = !t->slot[REF_MOMENTUM_BUFFER];
		buf = state(t, REF_MOMENTUM_BUFFER, 0);
		B = t->mag[REF_MOMENTUM_BUFFER];
	}
	for (i = 0; i < t->n; i++) {
		double d = g[i] + hp->weight_decay * t->p[i];
		double D = fabs(g[i]) + hp->weight_decay * t->pmag[i];

		if (buf) {
			/* buf = clone(d_p) while torch has no buffer yet */
			if (first) {
				buf[i] = d;
				B[i] = D;
			} else {
				buf[i] = hp->momentum * buf[i] +
					 (1 - hp->dampening) * d;
				B[i] = hp->momentum * B[i] +
				       (1 - hp->dampening) * D;
			}
			if (hp->nesterov) {
				d += hp->momentum * buf[i];
				D += hp->momentum * B[i];
			} else {
				d = buf[i];
				D = B[i];
			}
		}
		t->p[i] -= hp->lr * d;
		t->pmag[i] += hp->lr * D;
	}
}

/* adam.py / adamw.py _single_tensor_adam(w), at step @step (1-based) */
static void ref_adam(struct ref_tensor *t, const struct ref_hparams *hp,
		     const double *g, uint64_t step, int decoupled)
{
	double *m = state(t, REF_EXP_AVG, 0), *v = state(t, REF_EXP_AVG_SQ, 0);
	double *vmax = hp->amsgrad ? state(t, REF_MAX_EXP_AVG_SQ, 0) : NULL;
	double *M = t->mag[REF_EXP_AVG], *V = t->mag[REF_EXP_AVG_SQ];
	double *VMAX = t->mag[REF_MAX_EXP_AVG_SQ];
	double bc1 = 1 - pow(hp->beta1, (double)step);
	double bc2 = 1 - pow(hp->beta2, (double)step);
	double step_size = hp->lr / bc1, bc2_sqrt = sqrt(bc2);
	size_t i;

	for (i = 0; i < t->n; i++) {
		double gi = g[i], G = fabs(g[i]), vv, VV, denom, kappa;

		if (decoupled) {
			t->p[i] *= 1 - hp->lr * hp->weight_decay;
			t->pmag[i] *= 1 - hp->lr * hp->weight_decay;
		} else {
			gi += hp->weight_decay * t->p[i];
			G += hp->weight_decay * t->pmag[i];
		}
		m[i] = hp->beta1 * m[i] + (1 - hp->beta1) * gi;
		M[i] = hp->beta1 * M[i] + (1 - hp->beta1) * G;
		v[i] = hp->beta2 * v[i] + (1 - hp->beta2) * gi * gi;
		V[i] = hp->beta2 * V[i] + (1 - hp->beta2) * G * G;
		vv = v[i];
		VV = V[i];
		if (vmax) {
			/* torch.maximum(max_exp_avg_sq, exp_avg_sq) */
			vmax[i] = fmax(vmax[i], v[i]);
			VMAX[i] = fmax(VMAX[i], V[i]);
			vv = vmax[i];
			VV = VMAX[i];
		}
		denom = sqrt(vv) / bc2_sqrt + hp->eps;
		kappa = vv > 0 ? VV / (2 * vv) : 0;
		t->p[i] -= step_size * m[i] / denom;
		t->pmag[i] += step_size * (M[i] + fabs(m[i]) * kappa) / denom;
	}
}

/* rmsprop.py _single_tensor_rmsprop */
static void ref_rmsprop(struct ref_tensor *t, const struct ref_hparams *hp,
			const double *g)
{
	double *sq = state(t, REF_SQUARE_AVG, 0);
	double *buf = hp->momentum > 0 ? state(t, REF_MOMENTUM_BUFFER, 0) :
					 NULL;
	double *ga = hp->centered ? state(t, REF_GRAD_AVG, 0) : NULL;
	double *SQ = t->mag[REF_SQUARE_AVG], *B = t->mag[REF_MOMENTUM_BUFFER];
	double *GA = t->mag[REF_GRAD_AVG];
	double a = hp->alpha;
	size_t i;

	for (i = 0; i < t->n; i++) {
		double gi = g[i] + hp->weight_decay * t->p[i];
		double G = fabs(g[i]) + hp->weight_decay * t->pmag[i];
		double var, VAR, avg, kappa, u, U;

		sq[i] = a * sq[i] + (1 - a) * gi * gi;
		SQ[i] = a * SQ[i] + (1 - a) * G * G;
		var = sq[i];
		VAR = SQ[i];
		if (ga) {
			/* square_avg.addcmul(grad_avg, grad_avg, value=-1) */
			ga[i] = a * ga[i] + (1 - a) * gi;
			GA[i] = a * GA[i] + (1 - a) * G;
			var = sq[i] - ga[i] * ga[i];
			VAR = SQ[i] + GA[i] * GA[i];
		}
		avg = sqrt(var) + hp->eps;
		kappa = var > 0 ? VAR / (2 * var) : 0;
		u = gi / avg;
		U = (G + fabs(gi) * kappa) / avg;
		if (buf) {
			buf[i] = hp->momentum * buf[i] + u;
			B[i] = hp->momentum * B[i] + U;
			u = buf[i];
			U = B[i];
		}
		t->p[i] -= hp->lr * u;
		t->pmag[i] += hp->lr * U;
	}
}

/* adagrad.py _single_tensor_adagrad, dense gradients */
static void ref_adagrad(struct ref_tensor *t, const struct ref_hparams *hp,
			const double *g, uint64_t step)
{
	double *sum = state(t, REF_SUM, hp->initial_accumulator_value);
	double *S = t->mag[REF_SUM];
	double clr = hp->lr / (1 + (double)(step - 1) * hp->lr_decay);
	size_t i;

	for (i = 0; i < t->n; i++) {
		double gi = g[i] + hp->weight_decay * t->p[i];
		double G = fabs(g[i]) + hp->weight_decay * t->pmag[i];
		double std, kappa;

		sum[i] += gi * gi;
		S[i] += G * G;
		std = sqrt(sum[i]) + hp->eps;
		kappa = sum[i] > 0 ? S[i] / (2 * sum[i]) : 0;
		t->p[i] -= clr * gi / std;
		t->pmag[i] += clr * (G + fabs(gi) * kappa) / std;
	}
}

/* README.md "lamb": Adam's moments, then a per-tensor trust ratio */
static void ref_lamb(struct ref_tensor *t, const struct ref_hparams *hp,
		     const double *g, uint64_t step)
{
	double *m = state(t, REF_EXP_AVG, 0), *v = state(t, REF_EXP_AVG_SQ, 0);
	double *M = t->mag[REF_EXP_AVG], *V = t->mag[REF_EXP_AVG_SQ];
	double bc1 = 1 - pow(hp->beta1, (double)step);
	double bc2 = 1 - pow(hp->beta2, (double)step);
	double *r = xcalloc(t->n, sizeof(double));
	double *R = xcalloc(t->n, sizeof(double));
	double pn = 0, rn = 0, trust;
	size_t i;

	for (i = 0; i < t->n; i++) {
		double G = fabs(g[i]), denom, kappa;

		m[i] = hp->beta1 * m[i] + (1 - hp->beta1) * g[i];
		M[i] = hp->beta1 * M[i] + (1 - hp->beta1) * G;
		v[i] = hp->beta2 * v[i] + (1 - hp->beta2) * g[i] * g[i];
		V[i] = hp->beta2 * V[i] + (1 - hp->beta2) * G * G;
		denom = sqrt(v[i] / bc2) + hp->eps;
		kappa = v[i] > 0 ? V[i] / (2 * v[i]) : 0;
		r[i] = m[i] / bc1 / denom + hp->weight_decay * t->p[i];
		R[i] = (M[i] + fabs(m[i]) * kappa) / bc1 / denom +
		       hp->weight_decay * t->pmag[i];
		/* the norms use p before the update */
		pn += t->p[i] * t->p[i];
		rn += r[i] * r[i];
	}
	pn = sqrt(pn);
	rn = sqrt(rn);
	trust = pn > 0 && rn > 0 ? pn / rn : 1;
	for (i = 0; i < t->n; i++) {
		t->p[i] -= hp->lr * trust * r[i];
		t->pmag[i] += hp->lr * trust * R[i];
	}
	free(r);
	free(R);
}

/*
 * A Lion update direction sign(c) is only defined by the math where c is
 * clear of 0 by more than float32 rounding can move it. A float32 c is
 * built from m (itself a sum of past gradients) and g, so its rounding
 * error is a few ulps of the gradients' scale, ~1e-7 * gmax; anything
 * within 1e-6 * gmax of 0 is flagged instead of judged. With gradients of
 * scale 1 that is about one element in 10^5 steps.
 */
#define LION_UNSURE 1e-6

/* README.md "lion" */
static void ref_lion(struct ref_tensor *t, const struct ref_hparams *hp,
		     const double *g)
{
	double *m = state(t, REF_EXP_AVG, 0), *M = t->mag[REF_EXP_AVG];
	double decay = 1 - hp->lr * hp->weight_decay;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (fabs(g[i]) > t->gmax)
			t->gmax = fabs(g[i]);
	for (i = 0; i < t->n; i++) {
		double c = hp->beta1 * m[i] + (1 - hp->beta1) * g[i];
		double sign = c > 0 ? 1 : (c < 0 ? -1 : 0);

		if (fabs(c) <= LION_UNSURE * t->gmax && !t->unsure[i]) {
			t->unsure[i] = 1;
			t->nunsure++;
		}
		t->p[i] = t->p[i] * decay - hp->lr * sign;
		t->pmag[i] = t->pmag[i] * decay + hp->lr;
		m[i] = hp->beta2 * m[i] + (1 - hp->beta2) * g[i];
		M[i] = hp->beta2 * M[i] + (1 - hp->beta2) * fabs(g[i]);
	}
}

int ref_step(struct ref_optim *r, const float *const *grads)
{
	double sumsq = 0, coef = 1;
	int bad = 0, i;
	size_t j;

	/* GradScaler.unscale_: g / S, non-finite found on the way */
	for (i = 0; i < r->ntensors; i++)
		for (j = 0; j < r->t[i].n; j++) {
			double x = grads[i][j];

			if (!isfinite(x))
				bad = 1;
			x /= r->grad_scale;
			sumsq += x * x;
		}
	r->last_norm = sqrt(sumsq);
	if (bad && (r->check_finite || r->grad_scale != 1.0)) {
		r->skipped++;
		return 1;
	}
	/* clip_grad_norm_: coef = max_norm / (total_norm + 1e-6), at most 1 */
	if (r->clip_norm > 0) {
		coef = r->clip_norm / (r->last_norm + 1e-6);
		if (coef > 1)
			coef = 1;
	}
	r->step++;
	for (i = 0; i < r->ntensors; i++) {
		struct ref_tensor *t = &r->t[i];
		const struct ref_hparams *hp = &r->hp[t->group];
		double *g = xcalloc(t->n, sizeof(double));

		for (j = 0; j < t->n; j++)
			g[j] = (double)grads[i][j] / r->grad_scale * coef;
		if (hp->maximize)
			for (j = 0; j < t->n; j++)
				g[j] = -g[j];
		switch (r->kind) {
		case GPO_SGD:
			ref_sgd(t, hp, g);
			break;
		case GPO_ADAM:
		case GPO_ADAMW:
			ref_adam(t, hp, g, r->step, r->kind == GPO_ADAMW);
			break;
		case GPO_RMSPROP:
			ref_rmsprop(t, hp, g);
			break;
		case GPO_ADAGRAD:
			ref_adagrad(t, hp, g, r->step);
			break;
		case GPO_LAMB:
			ref_lamb(t, hp, g, r->step);
			break;
		case GPO_LION:
			ref_lion(t, hp, g);
			break;
		default:
			abort();
		}
		free(g);
	}
	return 0;
}

/* ---- comparing ----------------------------------------------------------- */

/*
 * The absolute floor. Where the terms of a sum cancel, its float32 result
 * is near 0 while its rounding error is still a few ulps of the terms, so
 * a relative error there measures the cancellation, not the optimizer.
 * A floor relative to the largest element of the tensor does not help: a
 * tensor may hold one element, and an EMA of gradients of both signs can
 * sit near 0 while every term was of size 1. So each element's error is
 * taken relative to the larger of its value and REF_FLOOR times its own
 * magnitude companion (the sum of its terms' magnitudes, see above). An
 * element of tiny value is then held to an absolute error of REF_TOL *
 * REF_FLOOR = 1e-6 of the size of what it was computed from, about 17
 * ulps, where 20 steps of float32 arithmetic leave a few; a real mistake
 * (a wrong formula, step, slot, element or hyperparameter) moves elements
 * by 1e-4 of that or more. Elements no smaller than REF_FLOOR of their
 * companion, the vast majority, are held to the plain relative error
 * REF_TOL. Over 25 runs of every test with fresh seeds the worst error
 * seen by this measure was 2.9e-6, a third of the bound.
 */
#define REF_FLOOR 0.1

double ref_compare(const float *got, const double *want, const double *mag,
		   size_t n, const unsigned char *skip)
{
	double worst = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double d, den;

		if (skip && skip[i])
			continue;
		if (isnan(got[i]) || isnan(want[i])) {
			if (isnan(got[i]) != isnan(want[i]))
				return INFINITY;
			continue;
		}
		d = fabs((double)got[i] - want[i]);
		den = fabs(want[i]);
		if (mag && REF_FLOOR * mag[i] > den)
			den = REF_FLOOR * mag[i];
		if (d > 0 && !(den > 0))
			return INFINITY;
		if (d > 0 && d / den > worst)
			worst = d / den;
	}
	return worst;
}

/* ---- the harness --------------------------------------------------------- */

void rr_init(struct ref_run *rr, struct gpo_device *dev,
	     enum gpo_optim_kind kind, uint64_t *rng)
{
	int ret;

	memset(rr, 0, sizeof(*rr));
	rr->dev = dev;
	rr->dev_id = tu_device_id(dev);
	rr->rng = rng;
	ret = gpo_optim_new(dev, kind, &rr->opt);
	ck_assert_msg(ret == 0, "%s: gpo_optim_new: %s", rr->dev_id,
		      gpo_errmsg());
	ref_init(&rr->ref, kind);
}

void rr_free(struct ref_run *rr)
{
	int i;

	gpo_optim_free(rr->opt);
	rr->opt = NULL;
	for (i = 0; i < rr->ref.ntensors; i++) {
		free(rr->grads[i]);
		rr->grads[i] = NULL;
	}
	ref_free(&rr->ref);
}

int rr_add_group(struct ref_run *rr)
{
	int g = gpo_optim_add_group(rr->opt);

	ck_assert_msg(g >= 0, "gpo_optim_add_group: %s", gpo_errmsg());
	ck_assert_int_eq(g, ref_add_group(&rr->ref));
	return g;
}

int rr_add_tensor(struct ref_run *rr, int ndim, const uint64_t *shape,
		  int group)
{
	int t = rr->ref.ntensors, ret, i;
	uint64_t n = 1;

	for (i = 0; i < ndim; i++)
		n *= shape[i];
	snprintf(rr->names[t], sizeof(rr->names[t]), "t%d", t);
	ret = gpo_optim_add_tensor(rr->opt, rr->names[t], ndim, shape, group);
	ck_assert_msg(ret == t, "%s: gpo_optim_add_tensor(%s): %d %s",
		      rr->dev_id, rr->names[t], ret, gpo_errmsg());
	ck_assert_int_eq(ref_add_tensor(&rr->ref, n, group), t);
	rr->grads[t] = xcalloc(n, sizeof(float));
	return t;
}

void rr_configure(struct ref_run *rr, int group, const char *text)
{
	int ret = gpo_optim_configure(rr->opt, group, text);

	ck_assert_msg(ret == 0, "%s: gpo_optim_configure(%d, \"%s\"): %d %s",
		      rr->dev_id, group, text, ret, gpo_errmsg());
	ck_assert_msg(ref_configure(&rr->ref, group, text) == 0,
		      "the reference does not understand \"%s\"", text);
}

void rr_random_params(struct ref_run *rr, double lo, double hi)
{
	int t;

	for (t = 0; t < rr->ref.ntensors; t++) {
		size_t n = rr->ref.t[t].n;
		float *x = xcalloc(n, sizeof(float));

		tu_fill(x, n, rr->rng, lo, hi);
		rr_write_params(rr, t, x);
		free(x);
	}
}

void rr_write_params(struct ref_run *rr, int t, const float *x)
{
	int ret = gpo_optim_write(rr->opt, "param", rr->names[t], x,
				  rr->ref.t[t].n * 4);

	ck_assert_msg(ret == 0, "%s: write param %s: %s", rr->dev_id,
		      rr->names[t], gpo_errmsg());
	ref_set_params(&rr->ref, t, x);
}

void rr_random_grads(struct ref_run *rr, double lo, double hi)
{
	int t;

	for (t = 0; t < rr->ref.ntensors; t++)
		tu_fill(rr->grads[t], rr->ref.t[t].n, rr->rng, lo, hi);
}

void rr_step(struct ref_run *rr, struct gpo_step_info *out)
{
	struct gpo_step_info info;
	int t, ret, skipped;

	for (t = 0; t < rr->ref.ntensors; t++) {
		ret = gpo_optim_write(rr->opt, "grad", rr->names[t],
				      rr->grads[t], rr->ref.t[t].n * 4);
		ck_assert_msg(ret == 0, "%s: write grad %s: %s", rr->dev_id,
			      rr->names[t], gpo_errmsg());
	}
	memset(&info, 0xa5, sizeof(info));
	ret = gpo_optim_step(rr->opt, &info);
	ck_assert_msg(ret == 0, "%s: gpo_optim_step: %d %s", rr->dev_id, ret,
		      gpo_errmsg());
	skipped = ref_step(&rr->ref, (const float *const *)rr->grads);
	ck_assert_msg(info.skipped == skipped,
		      "%s: step %llu: skipped %d, the reference %d", rr->dev_id,
		      (unsigned long long)rr->ref.step, info.skipped, skipped);
	ck_assert_msg(info.step == rr->ref.step &&
		      info.skipped_total == rr->ref.skipped,
		      "%s: step %llu skipped_total %llu, the reference %llu %llu",
		      rr->dev_id, (unsigned long long)info.step,
		      (unsigned long long)info.skipped_total,
		      (unsigned long long)rr->ref.step,
		      (unsigned long long)rr->ref.skipped);
	ck_assert_uint_eq(gpo_optim_steps_done(rr->opt), rr->ref.step);
	ck_assert_uint_eq(gpo_optim_steps_skipped(rr->opt), rr->ref.skipped);
	if (out)
		*out = info;
}

/* Is @name among the library's state slots? */
static int lib_has_slot(struct gpo_optim *opt, const char *name)
{
	int i, n = gpo_optim_slot_count(opt);

	for (i = 0; i < n; i++)
		if (!strcmp(gpo_optim_slot_name(opt, i), name))
			return 1;
	return 0;
}

static void check_one(struct ref_run *rr, int t, const char *slot)
{
	const double *want = ref_data(&rr->ref, t, slot);
	const double *mag = ref_mag(&rr->ref, t, slot);
	struct ref_tensor *rt = &rr->ref.t[t];
	float *got = xcalloc(rt->n, sizeof(float));
	const unsigned char *skip = NULL;
	double err;
	int ret;

	tu_poison(got, rt->n);
	ret = gpo_optim_read(rr->opt, slot, rr->names[t], got, rt->n * 4);
	ck_assert_msg(ret == 0, "%s: read %s/%s: %d %s", rr->dev_id, slot,
		      rr->names[t], ret, gpo_errmsg());
	if (rr->ref.kind == GPO_LION && !strcmp(slot, "param"))
		skip = rt->unsure;
	err = ref_compare(got, want, mag, rt->n, skip);
	if (err > rr->worst || !rr->worst_what[0]) {
		rr->worst = err > rr->worst ? err : rr->worst;
		snprintf(rr->worst_what, sizeof(rr->worst_what),
			 "%s of %zu elements", slot, rt->n);
	}
	ck_assert_msg(err < REF_TOL,
		      "%s: %s %s/%s (%zu elements) after %llu steps: max rel err %g >= %g (GPUOPT_TEST_SEED=%llu)",
		      rr->dev_id, gpo_optim_kind_name(rr->ref.kind), slot,
		      rr->names[t], rt->n, (unsigned long long)rr->ref.step,
		      err, REF_TOL, (unsigned long long)tu_seed());
	free(got);
}

double rr_check(struct ref_run *rr)
{
	int t, s, any[REF_NSLOTS] = { 0 };
	size_t unsure = 0, n = 0;

	for (t = 0; t < rr->ref.ntensors; t++)
		for (s = 0; s < REF_NSLOTS; s++)
			any[s] |= rr->ref.t[t].slot[s] != NULL;
	/* exactly torch's state-dict entries, once torch would have any */
	if (rr->ref.step > 0) {
		int count = 0;

		for (s = 0; s < REF_NSLOTS; s++) {
			int has = lib_has_slot(rr->opt, slot_names[s]);

			count += any[s];
			ck_assert_msg(has == any[s],
				      "%s: %s: slot %s is %s the library's slots but %s torch's state",
				      rr->dev_id,
				      gpo_optim_kind_name(rr->ref.kind),
				      slot_names[s],
				      any[s] ? "missing from" : "among",
				      any[s] ? "in" : "not in");
		}
		ck_assert_int_eq(gpo_optim_slot_count(rr->opt), count);
	}
	for (t = 0; t < rr->ref.ntensors; t++) {
		check_one(rr, t, "param");
		for (s = 0; s < REF_NSLOTS; s++)
			if (rr->ref.t[t].slot[s])
				check_one(rr, t, slot_names[s]);
		unsure += rr->ref.t[t].nunsure;
		n += rr->ref.t[t].n;
	}
	/* the Lion exclusions must stay a rare exception */
	ck_assert_msg(unsure <= n / 1000 + 2,
		      "%s: %zu of %zu Lion elements had c within rounding of 0",
		      rr->dev_id, unsure, n);
	return rr->worst;
}

/* ---- the standard tests -------------------------------------------------- */

/* a run of @steps steps over the tensors @shapes, every slot compared */
static double run_shapes(struct gpo_device *dev, const char *tag,
			 enum gpo_optim_kind kind, const char *config,
			 int steps, int ntensors, const int *ndims,
			 const uint64_t (*shapes)[3], uint64_t *rng,
			 char *what, size_t what_len)
{
	struct ref_run rr;
	double worst;
	int t, k;

	rr_init(&rr, dev, kind, rng);
	for (t = 0; t < ntensors; t++)
		rr_add_tensor(&rr, ndims[t], shapes[t], 0);
	rr_configure(&rr, -1, config);
	rr_random_params(&rr, -1, 1);
	for (k = 0; k < steps; k++) {
		rr_random_grads(&rr, -1, 1);
		rr_step(&rr, NULL);
	}
	worst = rr_check(&rr);
	snprintf(what, what_len, "%s", rr.worst_what);
	rr_free(&rr);
	return worst;
}

void ref_check_config(const char *tag, enum gpo_optim_kind kind,
		      const char *config, int steps)
{
	/* several tensors: odd sizes and shapes, some over a LAMB block */
	static const int multi_ndims[] = { 1, 3, 1, 2, 1 };
	static const uint64_t multi_shapes[][3] = {
		{ 61 }, { 5, 7, 3 }, { 4099 }, { 1021, 3 }, { 1 },
	};
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t sizes[16], rng = tu_rng(tag);
	int ndev = tu_devices(devs, TU_MAX_DEVICES);
	int nsizes = tu_odd_sizes(sizes, 16), d, i;
	char what[96], worst_what[160] = "";
	double worst = 0, err;

	ck_assert_int_ge(ndev, 1);
	for (d = 0; d < ndev; d++) {
		for (i = 0; i < nsizes; i++) {
			int one = 1;
			uint64_t shape[1][3] = { { sizes[i] } };

			/* the largest sizes only add time under valgrind */
			if (tu_quick() && sizes[i] > 65537)
				continue;
			err = run_shapes(devs[d], tag, kind, config, steps, 1,
					 &one, (const uint64_t (*)[3])shape,
					 &rng, what, sizeof(what));
			if (err >= worst) {
				worst = err;
				snprintf(worst_what, sizeof(worst_what),
					 "%s on %s", what, tu_device_id(devs[d]));
			}
		}
		err = run_shapes(devs[d], tag, kind, config, steps, 5,
				 multi_ndims, multi_shapes, &rng, what,
				 sizeof(what));
		if (err >= worst) {
			worst = err;
			snprintf(worst_what, sizeof(worst_what),
				 "%s (5 tensors) on %s", what,
				 tu_device_id(devs[d]));
		}
	}
	fprintf(stderr, "%s: %s \"%s\", %d steps: worst rel err %.3g (%s)\n",
		tag, gpo_optim_kind_name(kind), config, steps, worst,
		worst_what);
}

void ref_check_huge(const char *tag, enum gpo_optim_kind kind,
		    const char *config, int steps)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int ndev, d, one = 1;
	uint64_t rng = tu_rng(tag);
	uint64_t shape[1][3] = { { (1ull << 24) + 3 } };
	char what[96];
	double err;

	if (tu_quick()) {
		fprintf(stderr, "%s: left out under GPUOPT_TEST_QUICK\n", tag);
		return;
	}
	ndev = tu_devices(devs, TU_MAX_DEVICES);
	ck_assert_int_ge(ndev, 1);
	for (d = 0; d < ndev; d++) {
		err = run_shapes(devs[d], tag, kind, config, steps, 1, &one,
				 (const uint64_t (*)[3])shape, &rng, what,
				 sizeof(what));
		fprintf(stderr, "%s: %s \"%s\" 2^24+3 elements, %d steps on %s: worst rel err %.3g (%s)\n",
			tag, gpo_optim_kind_name(kind), config, steps,
			tu_device_id(devs[d]), err, what);
	}
}

/* ---- what the optimizer precision tests share ---------------------------- */

const double ref_group_lr[REF_NGROUPS] = { 0.01, 0.003, 0.02 };

struct gpo_optim *ref_grouped_optim(struct gpo_device *dev,
				    enum gpo_optim_kind kind, const char *conf,
				    const uint64_t *sizes, int ntensors)
{
	struct gpo_optim *opt;
	char name[32];
	int g, t;

	ck_assert_int_eq(gpo_optim_new(dev, kind, &opt), 0);
	for (g = 1; g < REF_NGROUPS; g++)
		ck_assert_int_eq(gpo_optim_add_group(opt), g);
	for (t = 0; t < ntensors; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, name, 1, &sizes[t],
						      t % REF_NGROUPS), 0);
	}
	ck_assert_msg(!gpo_optim_configure(opt, -1, conf), "%s: %s", conf,
		      gpo_errmsg());
	for (g = 0; g < REF_NGROUPS; g++)
		ck_assert_int_eq(gpo_optim_set(opt, g, "lr", ref_group_lr[g]),
				 0);
	return opt;
}

uint64_t ref_group_numel(const uint64_t *sizes, int ntensors, int g)
{
	uint64_t n = 0;
	int t;

	for (t = g; t < ntensors; t += REF_NGROUPS)
		n += sizes[t];
	return n;
}

uint16_t ref_round_half(float x, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f32_to_f16(x) : gpo__f32_to_bf16(x);
}

float ref_widen(uint16_t h, enum gpo_dtype dt)
{
	return dt == GPO_F16 ? gpo__f16_to_f32(h) : gpo__bf16_to_f32(h);
}

void ref_fill_mixed(float *x, uint64_t n, uint64_t *s)
{
	uint64_t i;

	tu_fill(x, n, s, -1.0, 1.0);
	for (i = 0; i < n; i += 7)
		x[i] *= 100.0f;
}

void ref_fill_half(uint16_t *h, uint64_t n, uint64_t *s, enum gpo_dtype dt)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		float x = (float)tu_rand(s, -1.0, 1.0);

		if (i % 7 == 0)
			x *= 30.0f;
		h[i] = ref_round_half(x, dt);
	}
}

/* @n random values for @what of @opt, in its dtype, written */
static void write_random(struct gpo_optim *opt, const char *what, int mixed,
			 uint64_t *s)
{
	uint64_t n = gpo_optim_numel(opt);
	int dt = gpo_optim_dtype(opt, what);
	size_t bytes = n * (dt == GPO_F32 ? 4 : 2);
	void *host = malloc(bytes);

	ck_assert_ptr_nonnull(host);
	if (dt != GPO_F32)
		ref_fill_half(host, n, s, (enum gpo_dtype)dt);
	else if (mixed)
		ref_fill_mixed(host, n, s);
	else
		tu_fill(host, n, s, -1.0, 1.0);
	ck_assert_msg(!gpo_optim_write(opt, what, NULL, host, bytes),
		      "write %s: %s", what, gpo_errmsg());
	free(host);
}

void ref_random_params(struct gpo_optim *opt, uint64_t *s)
{
	write_random(opt, "param", 0, s);
}

void ref_steps(struct gpo_optim *opt, uint64_t *s, int steps)
{
	int i, ret;

	for (i = 0; i < steps; i++) {
		write_random(opt, "grad", 1, s);
		ret = gpo_optim_step(opt, NULL);
		ck_assert_msg(!ret, "step %d: %s", i + 1, gpo_errmsg());
	}
}

/* ---- named buffers read back, compared byte for byte --------------------- */

/* the next buffer of @b: @name, @dtype, @bytes of poison */
static void *bufs_add(struct ref_bufs *b, const char *name, int dtype,
		      size_t bytes)
{
	int i = b->n++;

	ck_assert_int_lt(i, REF_MAX_BUFS);
	snprintf(b->name[i], sizeof(b->name[i]), "%s", name);
	b->dtype[i] = dtype;
	b->bytes[i] = bytes;
	b->buf[i] = malloc(bytes ? bytes : 1);
	ck_assert_ptr_nonnull(b->buf[i]);
	/* poisoned: a read that writes nothing shows */
	memset(b->buf[i], 0xa5, bytes);
	return b->buf[i];
}

void ref_bufs_read(struct gpo_optim *opt, const char *name,
		   struct ref_bufs *b)
{
	int dt = gpo_optim_dtype(opt, name);
	size_t bytes;
	void *buf;

	ck_assert_msg(dt >= 0, "%s: %s", name, gpo_errmsg());
	bytes = gpo_optim_numel(opt) * gpo_dtype_size((enum gpo_dtype)dt);
	buf = bufs_add(b, name, dt, bytes);
	ck_assert_msg(!gpo_optim_read(opt, name, NULL, buf, bytes),
		      "read %s: %s", name, gpo_errmsg());
}

void ref_bufs_read_absmax(struct gpo_optim *opt, const char *slot,
			  struct ref_bufs *b)
{
	int blocks = gpo_optim_read_absmax(opt, slot, NULL, 0);
	char name[80];
	void *buf;

	ck_assert_int_gt(blocks, 0);
	snprintf(name, sizeof(name), "%s.absmax", slot);
	buf = bufs_add(b, name, GPO_F32, (size_t)blocks * 4);
	ck_assert_msg(!gpo_optim_read_absmax(opt, slot, buf, (size_t)blocks),
		      "absmax of %s: %s", slot, gpo_errmsg());
}

void ref_bufs_read_all(struct gpo_optim *opt, struct ref_bufs *b)
{
	int i, n = gpo_optim_slot_count(opt);
	double master = 0;

	memset(b, 0, sizeof(*b));
	ref_bufs_read(opt, "param", b);
	if (gpo_optim_dtype(opt, "param") != GPO_F32) {
		ck_assert_int_eq(gpo_optim_get(opt, 0, "master_weights",
					       &master), 0);
		if (master)
			ref_bufs_read(opt, "master", b);
	}
	for (i = 0; i < n; i++) {
		const char *slot = gpo_optim_slot_name(opt, i);

		if (gpo_optim_dtype(opt, slot) != GPO_U8) {
			ref_bufs_read(opt, slot, b);
			continue;
		}
		if (!strcmp(slot, "max_exp_avg_sq"))
			continue;
		ref_bufs_read(opt, slot, b);
		ref_bufs_read_absmax(opt, slot, b);
	}
}

void ref_bufs_free(struct ref_bufs *b)
{
	int i;

	for (i = 0; i < b->n; i++)
		free(b->buf[i]);
	memset(b, 0, sizeof(*b));
}

long ref_first_diff(const void *a, const void *b, size_t n, size_t esize)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (memcmp((const char *)a + i * esize,
			   (const char *)b + i * esize, esize))
			return (long)i;
	return -1;
}

void ref_bufs_same(const char *what, const char *dev_id,
		   const struct ref_bufs *want, const struct ref_bufs *got)
{
	int i;

	ck_assert_int_eq(want->n, got->n);
	for (i = 0; i < want->n; i++) {
		const char *w = want->buf[i], *g = got->buf[i];
		size_t es = gpo_dtype_size((enum gpo_dtype)want->dtype[i]);
		uint32_t wb = 0, gb = 0;
		long at;

		ck_assert_str_eq(want->name[i], got->name[i]);
		ck_assert_int_eq(want->dtype[i], got->dtype[i]);
		ck_assert_uint_eq(want->bytes[i], got->bytes[i]);
		if (!memcmp(w, g, want->bytes[i]))
			continue;
		at = ref_first_diff(w, g, want->bytes[i] / es, es);
		memcpy(&wb, w + at * es, es);
		memcpy(&gb, g + at * es, es);
		if (want->dtype[i] == GPO_F32) {
			float wf, gf;

			memcpy(&wf, &wb, 4);
			memcpy(&gf, &gb, 4);
			ck_abort_msg("%s: %s on %s differs from cpu:0 at element %ld: %.9g (0x%08x) vs %.9g (0x%08x)",
				     what, want->name[i], dev_id, at, wf, wb,
				     gf, gb);
		}
		ck_abort_msg("%s: %s on %s differs from cpu:0 at element %ld: 0x%0*x vs 0x%0*x",
			     what, want->name[i], dev_id, at, (int)es * 2, wb,
			     (int)es * 2, gb);
	}
}

static void mode_read(const struct ref_mode *m, struct gpo_optim *opt,
		      struct ref_bufs *out)
{
	if (m->read)
		m->read(opt, m->arg, out);
	else
		ref_bufs_read_all(opt, out);
}

void ref_mode_run(const struct ref_mode *m, struct gpo_device *dev, int steps,
		  struct ref_bufs *out)
{
	struct gpo_optim *opt = m->make(dev, m->arg);
	uint64_t s = m->seed;

	ref_random_params(opt, &s);
	ref_steps(opt, &s, steps);
	mode_read(m, opt, out);
	gpo_optim_free(opt);
}

static struct gpo_device *cpu0(void)
{
	struct gpo_device *cpu;

	ck_assert_msg(!gpo_device_select(tu_ctx(), "cpu:0", &cpu), "cpu:0: %s",
		      gpo_errmsg());
	return cpu;
}

void ref_same_as_cpu(const char *what, const struct ref_mode *m, int steps,
		     struct ref_bufs *cpu_out)
{
	struct gpo_device *devs[TU_MAX_DEVICES], *cpu = cpu0();
	struct ref_bufs got;
	int n, i, compared = 0;

	ref_mode_run(m, cpu, steps, cpu_out);
	n = tu_devices(devs, TU_MAX_DEVICES);
	for (i = 0; i < n; i++) {
		if (devs[i] == cpu)
			continue;
		ref_mode_run(m, devs[i], steps, &got);
		ref_bufs_same(what, tu_device_id(devs[i]), cpu_out, &got);
		ref_bufs_free(&got);
		compared++;
	}
	fprintf(stderr, "%s: %d devices bit-identical to cpu:0\n", what,
		compared);
}

void ref_ckpt_across(const char *what, const struct ref_mode *m,
		     const char *path, struct ref_bufs *cpu_out)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	struct gpo_optim *opt = m->make(cpu0(), m->arg);
	uint64_t s = m->seed, s_after;
	struct ref_bufs got;
	int n, i;

	ref_random_params(opt, &s);
	ref_steps(opt, &s, 10);
	ck_assert_msg(!gpo_optim_save(opt, path, 0), "save: %s", gpo_errmsg());
	s_after = s;
	ref_steps(opt, &s, 5);
	mode_read(m, opt, cpu_out);
	gpo_optim_free(opt);

	n = tu_devices(devs, TU_MAX_DEVICES);
	for (i = 0; i < n; i++) {
		opt = m->make(devs[i], m->arg);
		ck_assert_msg(!gpo_optim_restore(opt, path, 0),
			      "restore on %s: %s", tu_device_id(devs[i]),
			      gpo_errmsg());
		s = s_after;
		ref_steps(opt, &s, 5);
		mode_read(m, opt, &got);
		ref_bufs_same(what, tu_device_id(devs[i]), cpu_out, &got);
		ref_bufs_free(&got);
		gpo_optim_free(opt);
	}
	fprintf(stderr, "%s: restored on %d devices, 5 steps bit-identical\n",
		what, n);
}

/* ---- the 8-bit state ----------------------------------------------------- */

int ref_u8_nslots(enum gpo_optim_kind kind)
{
	return kind == GPO_ADAM || kind == GPO_ADAMW ? 2 : 1;
}

const char *ref_u8_slot(enum gpo_optim_kind kind, int k)
{
	switch (kind) {
	case GPO_RMSPROP:
		return "square_avg";
	case GPO_ADAGRAD:
		return "sum";
	default:
		return k ? "exp_avg_sq" : "exp_avg";
	}
}

int ref_u8_signed(enum gpo_optim_kind kind, int k)
{
	return !(k == 1 && ref_u8_nslots(kind) == 2);
}

double ref_dequant(uint8_t code, float absmax, int sg)
{
	return (double)gpo__qmap[sg][code] * absmax;
}

uint8_t ref_quant(float x, float absmax, int sg)
{
	const float *map = gpo__qmap[sg];
	double v, best = INFINITY;
	int c, code = 0;

	if (absmax == 0.0f)
		return sg ? GPO_QZERO_S : GPO_QZERO_U;
	/* the reciprocal first, rounded to float, then the product */
	v = (float)((double)x * (float)(1.0 / (double)absmax));
	if (isnan(v))
		return sg ? GPO_QZERO_S : GPO_QZERO_U;
	for (c = 0; c < 256; c++) {
		double d = fabs(v - (double)map[c]);

		if (d < best) {
			best = d;
			code = c;
		}
	}
	return (uint8_t)code;
}

int ref_code_fits(double x, double absmax, int sg, uint8_t code, double tol)
{
	const float *map = gpo__qmap[sg];
	double r = absmax > 0 ? x / absmax : 0, lo = -INFINITY, hi = INFINITY;

	if (code > 0)
		lo = ((double)map[code - 1] + map[code]) / 2;
	if (code < 255)
		hi = ((double)map[code] + map[code + 1]) / 2;
	return r >= lo - tol && r <= hi + tol;
}
