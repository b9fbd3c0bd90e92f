// SPDX-License-Identifier: MIT
/*
 * sgd.c - torch.optim.SGD: momentum, dampening, nesterov (kernels/abi/sgd.h)
 */
#include "optim/family_i.h"
#include "abi/sgd.h"

static const char *const sgd_keys[] = {
	"momentum", "dampening", "nesterov", NULL
};

static int sgd_validate(const struct hparams *hp)
{
	if (hp->nesterov && (hp->momentum <= 0 || hp->dampening != 0))
		return gpo__err(-EINVAL,
				"nesterov momentum requires a momentum and zero dampening");
	return 0;
}

static int sgd_slot_needed(const struct hparams *hp, enum slot_id s)
{
	return s == SL_MOMENTUM && hp->momentum != 0;
}

static int sgd_fill(struct gpo_optim *opt, struct optim_group *grp,
		    uint64_t t, uint32_t flags, struct op_call *call,
		    void *args)
{
	const struct hparams *hp = &grp->hp;
	struct gpo_sgd_args *a = args;

	call->buf[2] = optim_slot_view(opt, SL_MOMENTUM, grp);
	call->buf[3] = opt->scal;
	a->n = (uint32_t)grp->numel;
	a->flags = flags;
	if (hp->momentum != 0)
		a->flags |= GPO_SGD_MOMENTUM |
			    (grp->momentum_started ? 0 : GPO_SGD_FIRST);
	a->flags |= hp->nesterov ? GPO_SGD_NESTEROV : 0;
	a->lr = (float)optim_group_lr(opt, grp);
	a->weight_decay = (float)hp->weight_decay;
	a->momentum = (float)hp->momentum;
	/*
	 * 1 - x in double, as torch's Python floats: 1 - (float)x is off by
	 * up to 1.3e-5 relative for x = 0.999
	 */
	a->one_minus_dampening = (float)(1.0 - hp->dampening);
	return optim_finite(&gpo__optim_sgd, "lr", optim_group_lr(opt, grp));
}

static int sgd_launch(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct gpo_sgd_args a;

	return optim_launch_groups(opt, OP_SGD, t, flags, sgd_fill, &a);
}

const struct optim_family gpo__optim_sgd = {
	.name = "sgd",
	.slots = SLOT(SL_MOMENTUM),
	.keys = sgd_keys,
	.validate = sgd_validate,
	.slot_needed = sgd_slot_needed,
	.launch = sgd_launch,
};
