// SPDX-License-Identifier: MIT
/*
 * adam.c - torch.optim.Adam and AdamW, one kernel (kernels/abi/adam.h):
 * Adam adds weight_decay * p to the gradient, AdamW decays p first
 */
#include "optim/family_i.h"
#include "abi/adam.h"

static const char *const adam_keys[] = {
	"beta1", "beta2", "eps", "amsgrad", NULL
};

static void adamw_defaults(struct hparams *hp)
{
	hp->weight_decay = 1e-2;
}

static int adam_slot_needed(const struct hparams *hp, enum slot_id s)
{
	return s == SL_EXP_AVG || s == SL_EXP_AVG_SQ ||
	       (s == SL_MAX_EXP_AVG_SQ && hp->amsgrad);
}

/*
 * u8 state (check_f32(): every slot used is u8 then): adam8, a group
 * per block of the group, the code slots and absmax bound whole
 */
static int adam_fill_u8(struct gpo_optim *opt, struct optim_group *grp,
			struct op_call *call, struct gpo_adam_args *a)
{
	if (grp->hp.amsgrad)
		return gpo__err(-ENOSYS, "%s: amsgrad with state in u8: no 8-bit max_exp_avg_sq yet",
				opt->fam->name);
	optim_u8_call(opt, grp, call, OP_ADAM8, &a->q_off, &a->q_blk,
		      &a->q_groups);
	a->flags |= GPO_ADAM_STATE_U8;
	call->buf[2] = opt->slot[SL_EXP_AVG];
	call->buf[3] = opt->slot[SL_EXP_AVG_SQ];
	call->buf[6] = opt->absmax[SL_EXP_AVG];
	call->buf[7] = opt->absmax[SL_EXP_AVG_SQ];
	return 0;
}

static int adam_fill(struct gpo_optim *opt, struct optim_group *grp,
		     uint64_t t, uint32_t flags, struct op_call *call,
		     void *args)
{
	const struct optim_family *fam = opt->fam;
	const struct hparams *hp = &grp->hp;
	struct gpo_adam_args *a = args;
	double lr = optim_group_lr(opt, grp);
	double bc1 = 1.0 - pow(hp->beta1, (double)t);
	double bc2 = 1.0 - pow(hp->beta2, (double)t);
	int ret;

	ret = optim_finite(fam, "lr / bias_correction1", lr / bc1);
	if (!ret)
		ret = optim_finite(fam, "1 / sqrt(bias_correction2)",
				   1.0 / sqrt(bc2));
	if (ret)
		return ret;
	a->n = (uint32_t)grp->numel;
	a->flags = flags;
	a->q_off = 0;
	a->q_blk = 0;
	a->q_groups = 0;
	if (opt->slot_dtype[SL_EXP_AVG] == GPO_U8) {
		ret = adam_fill_u8(opt, grp, call, a);
		if (ret)
			return ret;
	} else if (opt->slot_dtype[SL_EXP_AVG] == GPO_BF16) {
		/* check_f32(): every slot used is bf16 then */
		a->flags |= GPO_ADAM_STATE_BF16;
		call->buf[2] = optim_slot_view4(opt, SL_EXP_AVG, grp);
		call->buf[3] = optim_slot_view4(opt, SL_EXP_AVG_SQ, grp);
		if (hp->amsgrad)
			call->buf[4] = optim_slot_view4(opt, SL_MAX_EXP_AVG_SQ,
							grp);
	} else {
		call->buf[2] = optim_slot_view(opt, SL_EXP_AVG, grp);
		call->buf[3] = optim_slot_view(opt, SL_EXP_AVG_SQ, grp);
		if (hp->amsgrad)
			call->buf[4] = optim_slot_view(opt, SL_MAX_EXP_AVG_SQ,
						       grp);
	}
	if (hp->amsgrad)
		a->flags |= GPO_ADAM_AMSGRAD;
	call->buf[5] = opt->scal;
	if (fam == &gpo__optim_adamw)
		a->flags |= GPO_ADAM_DECOUPLED;
	a->beta1 = (float)hp->beta1;
	a->beta2 = (float)hp->beta2;
	a->eps = (float)hp->eps;
	a->weight_decay = (float)hp->weight_decay;
	a->step_size = (float)(lr / bc1);
	a->bc2_sqrt = (float)sqrt(bc2);
	a->decay = (float)(1.0 - lr * hp->weight_decay);
	a->one_minus_beta1 = (float)(1.0 - hp->beta1);
	a->one_minus_beta2 = (float)(1.0 - hp->beta2);
	return 0;
}

static int adam_launch(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct gpo_adam_args a;

	return optim_launch_groups(opt, OP_ADAM, t, flags, adam_fill, &a);
}

const struct optim_family gpo__optim_adam = {
	.name = "adam",
	.slots = SLOT(SL_EXP_AVG) | SLOT(SL_EXP_AVG_SQ) |
		 SLOT(SL_MAX_EXP_AVG_SQ),
	.state_dtypes = DT(GPO_BF16) | DT(GPO_U8),
	.keys = adam_keys,
	.slot_needed = adam_slot_needed,
	.launch = adam_launch,
};

const struct optim_family gpo__optim_adamw = {
	.name = "adamw",
	.slots = SLOT(SL_EXP_AVG) | SLOT(SL_EXP_AVG_SQ) |
		 SLOT(SL_MAX_EXP_AVG_SQ),
	.state_dtypes = DT(GPO_BF16) | DT(GPO_U8),
	.keys = adam_keys,
	.defaults = adamw_defaults,
	.slot_needed = adam_slot_needed,
	.launch = adam_launch,
};
