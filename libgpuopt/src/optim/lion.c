// SPDX-License-Identifier: MIT
/*
 * lion.c - Lion (kernels/abi/lion.h)
 */
#include "optim/family_i.h"
#include "abi/lion.h"

static const char *const lion_keys[] = { "beta1", "beta2", NULL };

static void lion_defaults(struct hparams *hp)
{
	hp->lr = 1e-4;
	hp->beta2 = 0.99;
}

static int lion_fill(struct gpo_optim *opt, struct optim_group *grp,
		     uint64_t t, uint32_t flags, struct op_call *call,
		     void *args)
{
	const struct hparams *hp = &grp->hp;
	struct gpo_lion_args *a = args;
	double lr = optim_group_lr(opt, grp);

	call->buf[3] = opt->scal;
	a->n = (uint32_t)grp->numel;
	a->flags = flags;
	a->q_off = 0;
	a->q_blk = 0;
	a->q_groups = 0;
	if (opt->slot_dtype[SL_EXP_AVG] == GPO_U8) {
		/* signed, as bitsandbytes' one-state optimizers */
		optim_u8_call(opt, grp, call, OP_LION8, &a->q_off, &a->q_blk,
			      &a->q_groups);
		call->buf[2] = opt->slot[SL_EXP_AVG];
		call->buf[4] = opt->absmax[SL_EXP_AVG];
		a->flags |= GPO_LION_STATE_U8;
	} else if (opt->slot_dtype[SL_EXP_AVG] == GPO_BF16) {
		call->buf[2] = optim_slot_view4(opt, SL_EXP_AVG, grp);
		a->flags |= GPO_LION_STATE_BF16;
	} else {
		call->buf[2] = optim_slot_view(opt, SL_EXP_AVG, grp);
	}
	a->lr = (float)lr;
	a->beta1 = (float)hp->beta1;
	a->beta2 = (float)hp->beta2;
	a->decay = (float)(1.0 - lr * hp->weight_decay);
	a->one_minus_beta1 = (float)(1.0 - hp->beta1);
	a->one_minus_beta2 = (float)(1.0 - hp->beta2);
	return optim_finite(opt->fam, "lr", lr);
}

static int lion_launch(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct gpo_lion_args a;

	return optim_launch_groups(opt, OP_LION, t, flags, lion_fill, &a);
}

const struct optim_family gpo__optim_lion = {
	.name = "lion",
	.slots = SLOT(SL_EXP_AVG),
	.state_dtypes = DT(GPO_BF16) | DT(GPO_U8),
	.keys = lion_keys,
	.defaults = lion_defaults,
	.launch = lion_launch,
};
