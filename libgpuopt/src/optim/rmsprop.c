// SPDX-License-Identifier: MIT
/*
 * rmsprop.c - torch.optim.RMSprop: momentum, centered
 * (kernels/abi/rmsprop.h)
 */
#include "optim/family_i.h"
#include "abi/rmsprop.h"

static const char *const rmsprop_keys[] = {
	"momentum", "eps", "alpha", "centered", NULL
};

static void rmsprop_defaults(struct hparams *hp)
{
	hp->lr = 1e-2;
	hp->alpha = 0.99;
}

static int rmsprop_slot_needed(const struct hparams *hp, enum slot_id s)
{
	return s == SL_SQUARE_AVG || (s == SL_MOMENTUM && hp->momentum > 0) ||
	       (s == SL_GRAD_AVG && hp->centered);
}

/*
 * u8 state: square_avg alone, signed as bitsandbytes' RMSprop8bit keeps
 * it; momentum and centered have no 8-bit kernel (nor in bitsandbytes)
 */
static int rmsprop_fill_u8(struct gpo_optim *opt, struct optim_group *grp,
			   struct op_call *call, struct gpo_rmsprop_args *a)
{
	if (grp->hp.momentum > 0 || grp->hp.centered)
		return gpo__err(-ENOSYS, "rmsprop: %s with state in u8: no 8-bit kernel yet",
				grp->hp.centered ? "centered" : "momentum");
	optim_u8_call(opt, grp, call, OP_RMSPROP8, &a->q_off, &a->q_blk,
		      &a->q_groups);
	call->buf[2] = opt->slot[SL_SQUARE_AVG];
	call->buf[6] = opt->absmax[SL_SQUARE_AVG];
	a->flags |= GPO_RMSPROP_STATE_U8;
	return 0;
}

static int rmsprop_fill(struct gpo_optim *opt, struct optim_group *grp,
			uint64_t t, uint32_t flags, struct op_call *call,
			void *args)
{
	const struct hparams *hp = &grp->hp;
	struct gpo_rmsprop_args *a = args;
	double lr = optim_group_lr(opt, grp);

	/* check_f32(): the slots used share square_avg's dtype */
	int bf16 = opt->slot_dtype[SL_SQUARE_AVG] == GPO_BF16;
	struct dev_buf (*view)(const struct gpo_optim *, enum slot_id,
			       const struct optim_group *) =
		bf16 ? optim_slot_view4 : optim_slot_view;

	call->buf[2] = view(opt, SL_SQUARE_AVG, grp);
	a->n = (uint32_t)grp->numel;
	a->flags = flags | (bf16 ? GPO_RMSPROP_STATE_BF16 : 0);
	if (hp->momentum > 0) {
		call->buf[3] = view(opt, SL_MOMENTUM, grp);
		a->flags |= GPO_RMSPROP_MOMENTUM;
	}
	if (hp->centered) {
		call->buf[4] = view(opt, SL_GRAD_AVG, grp);
		a->flags |= GPO_RMSPROP_CENTERED;
	}
	call->buf[5] = opt->scal;
	a->q_off = 0;
	a->q_blk = 0;
	a->q_groups = 0;
	if (opt->slot_dtype[SL_SQUARE_AVG] == GPO_U8) {
		int ret = rmsprop_fill_u8(opt, grp, call, a);

		if (ret)
			return ret;
	}
	a->lr = (float)lr;
	a->alpha = (float)hp->alpha;
	a->eps = (float)hp->eps;
	a->weight_decay = (float)hp->weight_decay;
	a->momentum = (float)hp->momentum;
	a->one_minus_alpha = (float)(1.0 - hp->alpha);
	return optim_finite(opt->fam, "lr", lr);
}

static int rmsprop_launch(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct gpo_rmsprop_args a;

	return optim_launch_groups(opt, OP_RMSPROP, t, flags, rmsprop_fill,
				   &a);
}

const struct optim_family gpo__optim_rmsprop = {
	.name = "rmsprop",
	.slots = SLOT(SL_SQUARE_AVG) | SLOT(SL_MOMENTUM) | SLOT(SL_GRAD_AVG),
	.state_dtypes = DT(GPO_BF16) | DT(GPO_U8),
	.keys = rmsprop_keys,
	.defaults = rmsprop_defaults,
	.slot_needed = rmsprop_slot_needed,
	.launch = rmsprop_launch,
};
