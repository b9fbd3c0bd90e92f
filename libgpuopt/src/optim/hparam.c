// SPDX-License-Identifier: MIT
/*
 * hparam.c - hyperparameters: names, defaults and validation
 *
 * Defaults and checks are torch.optim's (1.13), except that sgd gets a
 * default lr (torch requires one; 1e-3 as torch 2.x) and eps must be > 0.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"

#define K(x) (1u << GPO_##x)
#define ALL (K(SGD) | K(ADAM) | K(ADAMW) | K(RMSPROP) | K(ADAGRAD) | \
	     K(LAMB) | K(LION))
#define BETAS (K(ADAM) | K(ADAMW) | K(LAMB) | K(LION))

enum hp_type { HP_DOUBLE, HP_BOOL };

struct hp_desc {
	const char *name;
	enum hp_type type;
	size_t off;
	unsigned int kinds;	/* optimizers that have it */
	int global;		/* one value for the whole optimizer */
};

#define D(n, k, g) { #n, HP_DOUBLE, offsetof(struct hparams, n), k, g }
#define B(n, k, g) { #n, HP_BOOL, offsetof(struct hparams, n), k, g }

static const struct hp_desc hp_table[] = {
	D(lr, ALL, 0),
	D(weight_decay, ALL, 0),
	B(maximize, ALL, 0),
	D(momentum, K(SGD) | K(RMSPROP), 0),
	D(dampening, K(SGD), 0),
	B(nesterov, K(SGD), 0),
	D(beta1, BETAS, 0),
	D(beta2, BETAS, 0),
	D(eps, K(ADAM) | K(ADAMW) | K(RMSPROP) | K(ADAGRAD) | K(LAMB), 0),
	B(amsgrad, K(ADAM) | K(ADAMW), 0),
	D(alpha, K(RMSPROP), 0),
	B(centered, K(RMSPROP), 0),
	D(lr_decay, K(ADAGRAD), 0),
	D(initial_accumulator_value, K(ADAGRAD), 0),
	D(clip_norm, ALL, 1),
	D(grad_scale, ALL, 1),
	B(check_finite, ALL, 1),
};

void gpo__hparams_defaults(enum gpo_optim_kind kind, struct hparams *hp)
{
	memset(hp, 0, sizeof(*hp));
	hp->lr = 1e-3;
	hp->beta1 = 0.9;
	hp->beta2 = 0.999;
	hp->eps = 1e-8;
	hp->grad_scale = 1.0;
	switch (kind) {
	case GPO_ADAMW:
		hp->weight_decay = 1e-2;
		break;
	case GPO_RMSPROP:
		hp->lr = 1e-2;
		hp->alpha = 0.99;
		break;
	case GPO_ADAGRAD:
		hp->lr = 1e-2;
		hp->eps = 1e-10;
		break;
	case GPO_LAMB:
		hp->eps = 1e-6;
		break;
	case GPO_LION:
		hp->lr = 1e-4;
		hp->beta2 = 0.99;
		break;
	default:
		break;
	}
}

static const struct hp_desc *hp_find(enum gpo_optim_kind kind,
				     const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hp_table); i++)
		if (!strcmp(hp_table[i].name, key) &&
		    (hp_table[i].kinds & (1u << kind)))
			return &hp_table[i];
	return NULL;
}

static int hp_unknown(enum gpo_optim_kind kind, const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hp_table); i++)
		if (!strcmp(hp_table[i].name, key))
			return gpo__err(-EINVAL, "%s has no option '%s'",
				       gpo_optim_kind_name(kind), key);
	return gpo__err(-EINVAL, "unknown option '%s'", key);
}

int gpo__hparams_set(enum gpo_optim_kind kind, struct hparams *hp,
		const char *key, const char *value, int *is_global)
{
	const struct hp_desc *d;
	double v;
	int b;

	*is_global = 0;
	if (!strcmp(key, "betas")) {
		char b1[64], *comma;
		double v1, v2;

		if (!(BETAS & (1u << kind)))
			return hp_unknown(kind, key);
		snprintf(b1, sizeof(b1), "%s", value);
		comma = strchr(b1, ',');
		if (!comma)
			return gpo__err(-EINVAL, "betas must be 'b1,b2', not '%s'",
				       value);
		*comma = '\0';
		if (gpo__parse_double(b1, &v1) || gpo__parse_double(comma + 1, &v2))
			return gpo__err(-EINVAL, "betas: '%s' is not two numbers",
				       value);
		hp->beta1 = v1;
		hp->beta2 = v2;
		return 0;
	}
	d = hp_find(kind, key);
	if (!d)
		return hp_unknown(kind, key);
	*is_global = d->global;
	if (d->type == HP_BOOL) {
		if (gpo__parse_bool(value, &b))
			return gpo__err(-EINVAL, "%s: '%s' is not 0, 1, true or false",
				       key, value);
		*(int *)((char *)hp + d->off) = b;
		return 0;
	}
	if (gpo__parse_double(value, &v))
		return gpo__err(-EINVAL, "%s: '%s' is not a finite number", key,
			       value);
	*(double *)((char *)hp + d->off) = v;
	return 0;
}

int gpo__hparams_get(enum gpo_optim_kind kind, const struct hparams *hp,
		const char *key, double *value)
{
	const struct hp_desc *d = hp_find(kind, key);

	if (!d)
		return hp_unknown(kind, key);
	if (d->type == HP_BOOL)
		*value = *(const int *)((const char *)hp + d->off);
	else
		*value = *(const double *)((const char *)hp + d->off);
	return 0;
}

static int has(enum gpo_optim_kind kind, const char *key)
{
	return hp_find(kind, key) != NULL;
}

int gpo__hparams_validate(enum gpo_optim_kind kind, const struct hparams *hp)
{
	if (!(hp->lr >= 0))
		return gpo__err(-EINVAL, "invalid lr %g: must be >= 0", hp->lr);
	if (!(hp->weight_decay >= 0))
		return gpo__err(-EINVAL, "invalid weight_decay %g: must be >= 0",
			       hp->weight_decay);
	if (has(kind, "beta1") && !(hp->beta1 >= 0 && hp->beta1 < 1))
		return gpo__err(-EINVAL, "invalid beta1 %g: must be in [0, 1)",
			       hp->beta1);
	if (has(kind, "beta2") && !(hp->beta2 >= 0 && hp->beta2 < 1))
		return gpo__err(-EINVAL, "invalid beta2 %g: must be in [0, 1)",
			       hp->beta2);
	if (has(kind, "eps") && !(hp->eps > 0))
		return gpo__err(-EINVAL, "invalid eps %g: must be > 0", hp->eps);
	if (has(kind, "momentum") && !(hp->momentum >= 0))
		return gpo__err(-EINVAL, "invalid momentum %g: must be >= 0",
			       hp->momentum);
	if (has(kind, "dampening") &&
	    !(hp->dampening >= 0 && hp->dampening <= 1))
		return gpo__err(-EINVAL, "invalid dampening %g: must be in [0, 1]",
			       hp->dampening);
	if (hp->nesterov && (hp->momentum <= 0 || hp->dampening != 0))
		return gpo__err(-EINVAL,
			       "nesterov momentum requires a momentum and zero dampening");
	if (has(kind, "alpha") && !(hp->alpha >= 0))
		return gpo__err(-EINVAL, "invalid alpha %g: must be >= 0",
			       hp->alpha);
	if (has(kind, "lr_decay") && !(hp->lr_decay >= 0))
		return gpo__err(-EINVAL, "invalid lr_decay %g: must be >= 0",
			       hp->lr_decay);
	if (has(kind, "initial_accumulator_value") &&
	    !(hp->initial_accumulator_value >= 0))
		return gpo__err(-EINVAL,
			       "invalid initial_accumulator_value %g: must be >= 0",
			       hp->initial_accumulator_value);
	if (!(hp->clip_norm >= 0))
		return gpo__err(-EINVAL, "invalid clip_norm %g: must be >= 0 (0: off)",
			       hp->clip_norm);
	if (!(hp->grad_scale > 0))
		return gpo__err(-EINVAL, "invalid grad_scale %g: must be > 0",
			       hp->grad_scale);
	return 0;
}

/* the shortest text that reads back as exactly @v: 0.999, not 0.99899.. */
static const char *shortest(double v, char *buf)
{
	int prec;

	for (prec = 6; prec < 17; prec++) {
		snprintf(buf, 32, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return buf;
	}
	snprintf(buf, 32, "%.17g", v);
	return buf;
}

int gpo__hparams_describe(enum gpo_optim_kind kind, const struct hparams *hp,
		     char *buf, size_t len)
{
	size_t i, used = 0;
	char num[32];
	int n;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(hp_table); i++) {
		const struct hp_desc *d = &hp_table[i];
		const char *p = (const char *)hp + d->off;

		if (!(d->kinds & (1u << kind)))
			continue;
		if (d->type == HP_BOOL)
			n = snprintf(used < len ? buf + used : NULL,
				     used < len ? len - used : 0, "%s=%d\n",
				     d->name, *(const int *)p);
		else
			n = snprintf(used < len ? buf + used : NULL,
				     used < len ? len - used : 0, "%s=%s\n",
				     d->name, shortest(*(const double *)p, num));
		if (n < 0)
			return -EINVAL;
		used += n;
	}
	return (int)used;
}
