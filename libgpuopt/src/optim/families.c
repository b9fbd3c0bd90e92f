// SPDX-License-Identifier: MIT
/*
 * families.c - the optimizer families by kind, and their names
 */
#include "optim/family_i.h"

static const struct optim_family *const families[GPO_OPTIM_KINDS] = {
	[GPO_SGD] = &gpo__optim_sgd,
	[GPO_ADAM] = &gpo__optim_adam,
	[GPO_ADAMW] = &gpo__optim_adamw,
	[GPO_RMSPROP] = &gpo__optim_rmsprop,
	[GPO_ADAGRAD] = &gpo__optim_adagrad,
	[GPO_LAMB] = &gpo__optim_lamb,
	[GPO_LION] = &gpo__optim_lion,
};

const struct optim_family *gpo__optim_family(enum gpo_optim_kind kind)
{
	if ((unsigned int)kind >= GPO_OPTIM_KINDS)
		return NULL;
	return families[kind];
}

int gpo_optim_kind_parse(const char *name)
{
	int i;

	if (!name)
		return gpo__err(-EINVAL, "NULL optimizer name");
	for (i = 0; i < GPO_OPTIM_KINDS; i++)
		if (!strcmp(name, families[i]->name))
			return i;
	return gpo__err(-EINVAL,
			"unknown optimizer '%s' (sgd adam adamw rmsprop adagrad lamb lion)",
			name);
}

const char *gpo_optim_kind_name(enum gpo_optim_kind kind)
{
	const struct optim_family *fam = gpo__optim_family(kind);

	return fam ? fam->name : "unknown";
}

int gpo__optim_slot_possible(enum gpo_optim_kind kind, int s)
{
	const struct optim_family *fam = gpo__optim_family(kind);

	return fam && s >= 0 && s < SL_COUNT && (fam->slots & SLOT(s));
}

int gpo__optim_slot_needed(enum gpo_optim_kind kind, const struct hparams *hp,
			   int s)
{
	const struct optim_family *fam = gpo__optim_family(kind);

	if (!gpo__optim_slot_possible(kind, s))
		return 0;
	return fam->slot_needed ? fam->slot_needed(hp, s) : 1;
}
