// SPDX-License-Identifier: MIT
/*
 * adagrad.c - torch.optim.Adagrad: lr_decay, initial_accumulator_value
 * (kernels/abi/adagrad.h)
 */
#include "optim/family_i.h"
#include "abi/adagrad.h"

static const char *const adagrad_keys[] = {
	"eps", "lr_decay", "initial_accumulator_value", NULL
};

static void adagrad_defaults(struct hparams *hp)
{
	hp->lr = 1e-2;
	hp->eps = 1e-10;
}

static int adagrad_fill(struct gpo_optim *opt, struct optim_group *grp,
			uint64_t t, uint32_t flags, struct op_call *call,
			void *args)
{
	const struct hparams *hp = &grp->hp;
	struct gpo_adagrad_args *a = args;
	double clr = optim_group_lr(opt, grp) /
		     (1.0 + (double)(t - 1) * hp->lr_decay);

	call->buf[3] = opt->scal;
	a->n = (uint32_t)grp->numel;
	a->flags = flags;
	a->q_off = 0;
	a->q_blk = 0;
	a->q_groups = 0;
	if (opt->slot_dtype[SL_SUM] == GPO_U8) {
		/* signed, as bitsandbytes' one-state optimizers */
		optim_u8_call(opt, grp, call, OP_ADAGRAD8, &a->q_off,
			      &a->q_blk, &a->q_groups);
		call->buf[2] = opt->slot[SL_SUM];
		call->buf[4] = opt->absmax[SL_SUM];
		a->flags |= GPO_ADAGRAD_STATE_U8;
	} else if (opt->slot_dtype[SL_SUM] == GPO_BF16) {
		call->buf[2] = optim_slot_view4(opt, SL_SUM, grp);
		a->flags |= GPO_ADAGRAD_STATE_BF16;
	} else {
		call->buf[2] = optim_slot_view(opt, SL_SUM, grp);
	}
	a->clr = (float)clr;
	a->weight_decay = (float)hp->weight_decay;
	a->eps = (float)hp->eps;
	return optim_finite(opt->fam, "lr / (1 + (step - 1) * lr_decay)", clr);
}

static int adagrad_launch(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct gpo_adagrad_args a;

	return optim_launch_groups(opt, OP_ADAGRAD, t, flags, adagrad_fill,
				   &a);
}

const struct optim_family gpo__optim_adagrad = {
	.name = "adagrad",
	.slots = SLOT(SL_SUM),
	.state_dtypes = DT(GPO_BF16) | DT(GPO_U8),
	.keys = adagrad_keys,
	.defaults = adagrad_defaults,
	.launch = adagrad_launch,
};
