// SPDX-License-Identifier: MIT
/*
 * hparam.c - hyperparameters: names, ranges, parsing and printing;
 * which keys, defaults and rules a family has comes from its table
 * (family_i.h)
 *
 * Defaults and checks are torch.optim's (1.13), except that sgd gets a
 * default lr (torch requires one; 1e-3 as torch 2.x) and eps must be > 0.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "optim/family_i.h"

enum hp_type { HP_DOUBLE, HP_BOOL };

/* the range a value must lie in, checked for every key a family has */
enum hp_range {
	HR_ANY,
	HR_NONNEG,		/* >= 0 */
	HR_POS,			/* > 0 */
	HR_UNIT_OPEN,		/* [0, 1) */
	HR_UNIT,		/* [0, 1] */
};

struct hp_desc {
	const char *name;
	enum hp_type type;
	size_t off;
	int common;		/* every family has it */
	int global;		/* one value for the whole optimizer */
	enum hp_range range;
	const char *note;	/* added to the range message */
};

#define D(n, c, g, r, note) \
	{ #n, HP_DOUBLE, offsetof(struct hparams, n), c, g, r, note }
#define B(n, c, g) { #n, HP_BOOL, offsetof(struct hparams, n), c, g, HR_ANY, "" }

/* every key, in the order describe() prints them */
static const struct hp_desc hp_table[] = {
	D(lr, 1, 0, HR_NONNEG, ""),
	D(weight_decay, 1, 0, HR_NONNEG, ""),
	B(maximize, 1, 0),
	D(momentum, 0, 0, HR_NONNEG, ""),
	D(dampening, 0, 0, HR_UNIT, ""),
	B(nesterov, 0, 0),
	D(beta1, 0, 0, HR_UNIT_OPEN, ""),
	D(beta2, 0, 0, HR_UNIT_OPEN, ""),
	D(eps, 0, 0, HR_POS, ""),
	B(amsgrad, 0, 0),
	D(alpha, 0, 0, HR_NONNEG, ""),
	B(centered, 0, 0),
	D(lr_decay, 0, 0, HR_NONNEG, ""),
	D(initial_accumulator_value, 0, 0, HR_NONNEG, ""),
	D(clip_norm, 1, 1, HR_NONNEG, " (0: off)"),
	D(grad_scale, 1, 1, HR_POS, ""),
	B(check_finite, 1, 1),
	D(loss_scale, 1, 1, HR_NONNEG, " (0 or 'dynamic': dynamic, 1: off)"),
	D(init_scale, 1, 1, HR_POS, ""),
	D(growth_interval, 1, 1, HR_POS, ""),
	B(master_weights, 1, 1),
};

/* the largest growth_interval: the good-step counter is an exact float */
#define GROWTH_INTERVAL_MAX 16777216.0

/* Does @fam have key @d? */
static int fam_has(const struct optim_family *fam, const struct hp_desc *d)
{
	const char *const *k;

	if (d->common)
		return 1;
	for (k = fam->keys; k && *k; k++)
		if (!strcmp(*k, d->name))
			return 1;
	return 0;
}

void gpo__hparams_defaults(enum gpo_optim_kind kind, struct hparams *hp)
{
	const struct optim_family *fam = gpo__optim_family(kind);

	memset(hp, 0, sizeof(*hp));
	hp->lr = 1e-3;
	hp->beta1 = 0.9;
	hp->beta2 = 0.999;
	hp->eps = 1e-8;
	hp->grad_scale = 1.0;
	/* torch.cuda.amp.GradScaler's defaults, scaling off */
	hp->loss_scale = 1.0;
	hp->init_scale = 65536.0;
	hp->growth_interval = 2000.0;
	hp->master_weights = 1;
	if (fam && fam->defaults)
		fam->defaults(hp);
}

static const struct hp_desc *hp_find(const struct optim_family *fam,
				     const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hp_table); i++)
		if (!strcmp(hp_table[i].name, key) && fam_has(fam, &hp_table[i]))
			return &hp_table[i];
	return NULL;
}

static int hp_unknown(const struct optim_family *fam, const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hp_table); i++)
		if (!strcmp(hp_table[i].name, key))
			return gpo__err(-EINVAL, "%s has no option '%s'",
					fam->name, key);
	return gpo__err(-EINVAL, "unknown option '%s'", key);
}

int gpo__hparams_set(enum gpo_optim_kind kind, struct hparams *hp,
		     const char *key, const char *value, int *is_global)
{
	const struct optim_family *fam = gpo__optim_family(kind);
	const struct hp_desc *d;
	double v;
	int b;

	*is_global = 0;
	if (!fam)
		return gpo__err(-EINVAL, "no optimizer kind %d", kind);
	if (!strcmp(key, "betas")) {
		char b1[64], *comma;
		double v1, v2;

		if (!hp_find(fam, "beta1"))
			return hp_unknown(fam, key);
		snprintf(b1, sizeof(b1), "%s", value);
		comma = strchr(b1, ',');
		if (!comma)
			return gpo__err(-EINVAL, "betas must be 'b1,b2', not '%s'",
					value);
		*comma = '\0';
		if (gpo__parse_double(b1, &v1) ||
		    gpo__parse_double(comma + 1, &v2))
			return gpo__err(-EINVAL, "betas: '%s' is not two numbers",
					value);
		hp->beta1 = v1;
		hp->beta2 = v2;
		return 0;
	}
	d = hp_find(fam, key);
	if (!d)
		return hp_unknown(fam, key);
	*is_global = d->global;
	if (d->off == offsetof(struct hparams, loss_scale) &&
	    !strcmp(value, "dynamic")) {
		hp->loss_scale = 0;
		return 0;
	}
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
	const struct optim_family *fam = gpo__optim_family(kind);
	const struct hp_desc *d;

	if (!fam)
		return gpo__err(-EINVAL, "no optimizer kind %d", kind);
	d = hp_find(fam, key);
	if (!d)
		return hp_unknown(fam, key);
	if (d->type == HP_BOOL)
		*value = *(const int *)((const char *)hp + d->off);
	else
		*value = *(const double *)((const char *)hp + d->off);
	return 0;
}

static int in_range(enum hp_range r, double v)
{
	switch (r) {
	case HR_NONNEG:
		return v >= 0;
	case HR_POS:
		return v > 0;
	case HR_UNIT_OPEN:
		return v >= 0 && v < 1;
	case HR_UNIT:
		return v >= 0 && v <= 1;
	default:
		return v == v;
	}
}

static const char *const range_text[] = {
	[HR_ANY] = "a number",
	[HR_NONNEG] = ">= 0",
	[HR_POS] = "> 0",
	[HR_UNIT_OPEN] = "in [0, 1)",
	[HR_UNIT] = "in [0, 1]",
};

int gpo__hparams_validate(enum gpo_optim_kind kind, const struct hparams *hp)
{
	const struct optim_family *fam = gpo__optim_family(kind);
	size_t i;

	if (!fam)
		return gpo__err(-EINVAL, "no optimizer kind %d", kind);
	for (i = 0; i < ARRAY_SIZE(hp_table); i++) {
		const struct hp_desc *d = &hp_table[i];
		double v;

		if (d->type != HP_DOUBLE || !fam_has(fam, d))
			continue;
		v = *(const double *)((const char *)hp + d->off);
		if (!in_range(d->range, v))
			return gpo__err(-EINVAL, "invalid %s %g: must be %s%s",
					d->name, v, range_text[d->range],
					d->note);
	}
	if (hp->growth_interval != floor(hp->growth_interval) ||
	    hp->growth_interval > GROWTH_INTERVAL_MAX)
		return gpo__err(-EINVAL, "invalid growth_interval %g: must be a whole number in [1, %.0f]",
				hp->growth_interval, GROWTH_INTERVAL_MAX);
	if (hp->loss_scale != 0 && !isfinite((float)hp->loss_scale))
		return gpo__err(-EINVAL, "invalid loss_scale %g: must fit a float",
				hp->loss_scale);
	if (!isfinite((float)hp->init_scale) || (float)hp->init_scale == 0)
		return gpo__err(-EINVAL, "invalid init_scale %g: must fit a float",
				hp->init_scale);
	return fam->validate ? fam->validate(hp) : 0;
}

int gpo__hparams_describe(enum gpo_optim_kind kind, const struct hparams *hp,
			   char *buf, size_t len)
{
	const struct optim_family *fam = gpo__optim_family(kind);
	size_t i, used = 0;
	char num[32];
	int n;

	if (len)
		buf[0] = '\0';
	if (!fam)
		return gpo__err(-EINVAL, "no optimizer kind %d", kind);
	for (i = 0; i < ARRAY_SIZE(hp_table); i++) {
		const struct hp_desc *d = &hp_table[i];
		const char *p = (const char *)hp + d->off;

		if (!fam_has(fam, d))
			continue;
		/* the shortest text that reads back exactly, C locale */
		if (d->type == HP_BOOL)
			snprintf(num, sizeof(num), "%d", *(const int *)p);
		else if (d->off == offsetof(struct hparams, loss_scale) &&
			 hp->loss_scale == 0)
			snprintf(num, sizeof(num), "dynamic");
		else
			gpo__fmt_double(num, sizeof(num), *(const double *)p);
		n = snprintf(used < len ? buf + used : NULL,
			     used < len ? len - used : 0, "%s=%s\n", d->name,
			     num);
		if (n < 0)
			return -EINVAL;
		used += n;
	}
	return (int)used;
}
