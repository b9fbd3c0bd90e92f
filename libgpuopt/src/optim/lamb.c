// SPDX-License-Identifier: MIT
/*
 * lamb.c - LAMB: moments and norms per block, trust per tensor, then the
 * update (kernels/abi/lamb.h); f32, f16 or bf16 parameters (with an f32
 * master copy, or bf16 rounded stochastically), f32 state
 */
#include <stdlib.h>
#include "optim/family_i.h"
#include "abi/lamb.h"

static const char *const lamb_keys[] = { "beta1", "beta2", "eps", NULL };

static void lamb_defaults(struct hparams *hp)
{
	hp->eps = 1e-6;
}

static uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

/* Cut each tensor into blocks and upload the tables. */
static int lamb_prepare(struct gpo_optim *opt)
{
	struct gpo_device *dev = opt->dev;
	uint32_t *blocks = NULL, *tb = NULL, nb = 0, b;
	int t, g, ret;

	for (t = 0; t < opt->ntensors; t++)
		nb += div_up(opt->tensors[t].numel, GPO_LAMB_BLOCK);
	blocks = calloc(nb ? nb : 1, 16);
	tb = calloc(opt->ntensors ? opt->ntensors : 1, 8);
	if (!blocks || !tb) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	/* blocks in flat order: by group, then tensor */
	b = 0;
	for (g = 0; g < opt->ngroups; g++) {
		opt->groups[g].first_block = b;
		for (t = 0; t < opt->ntensors; t++) {
			const struct optim_tensor *ten = &opt->tensors[t];
			uint64_t done;

			if (ten->group != g)
				continue;
			tb[2 * t] = b;
			tb[2 * t + 1] = div_up(ten->numel, GPO_LAMB_BLOCK);
			for (done = 0; done < ten->numel;
			     done += GPO_LAMB_BLOCK) {
				uint64_t left = ten->numel - done;

				blocks[4 * b] = t;
				blocks[4 * b + 1] = (uint32_t)(ten->offset + done);
				blocks[4 * b + 2] = left < GPO_LAMB_BLOCK ?
						    (uint32_t)left : GPO_LAMB_BLOCK;
				b++;
			}
		}
		opt->groups[g].nblocks = b - opt->groups[g].first_block;
	}
	opt->nblocks = nb;
	ret = gpo__pool_alloc(dev, (uint64_t)(nb ? nb : 1) * 16, &opt->blocks);
	if (!ret)
		ret = gpo__pool_alloc(dev, (uint64_t)(opt->ntensors ?
					opt->ntensors : 1) * 8,
				      &opt->tensor_blocks);
	if (!ret)
		ret = gpo__pool_alloc(dev, (uint64_t)(nb ? nb : 1) * 8,
				      &opt->lamb_partials);
	if (!ret)
		ret = gpo__pool_alloc(dev, (uint64_t)(opt->ntensors ?
					opt->ntensors : 1) * 4, &opt->trust);
	if (!ret && nb)
		ret = dev->ops->write(dev, &opt->blocks, 0, blocks,
				      (uint64_t)nb * 16);
	if (!ret && opt->ntensors)
		ret = dev->ops->write(dev, &opt->tensor_blocks, 0, tb,
				      (uint64_t)opt->ntensors * 8);
out_free:
	free(blocks);
	free(tb);
	return ret;
}

static int lamb_args(struct gpo_optim *opt, const struct optim_group *grp,
		     uint64_t t, uint32_t flags, struct gpo_lamb_args *a)
{
	const struct hparams *hp = &grp->hp;
	double lr = optim_group_lr(opt, grp);
	double bc1 = 1.0 - pow(hp->beta1, (double)t);
	double bc2 = 1.0 - pow(hp->beta2, (double)t);
	int ret;

	ret = optim_finite(opt->fam, "1 / bias_correction1", 1.0 / bc1);
	if (!ret)
		ret = optim_finite(opt->fam, "1 / bias_correction2", 1.0 / bc2);
	if (!ret)
		ret = optim_finite(opt->fam, "lr", lr);
	if (ret)
		return ret;
	memset(a, 0, sizeof(*a));
	a->n = (uint32_t)opt->total;
	a->flags = optim_upd_flags(grp, flags);
	a->first_block = grp->first_block;
	a->ntensors = (uint32_t)opt->ntensors;
	a->lr = (float)lr;
	a->beta1 = (float)hp->beta1;
	a->beta2 = (float)hp->beta2;
	a->eps = (float)hp->eps;
	a->weight_decay = (float)hp->weight_decay;
	a->bc1 = (float)bc1;
	a->bc2 = (float)bc2;
	a->one_minus_beta1 = (float)(1.0 - hp->beta1);
	a->one_minus_beta2 = (float)(1.0 - hp->beta2);
	/* half parameters (abi/lamb.h): whole buffers, p_base 0 */
	if (opt->param_dtype == GPO_F16 || opt->param_dtype == GPO_BF16) {
		a->flags |= opt->param_dtype == GPO_F16 ? GPO_UPD_PARAM_F16 :
							  GPO_UPD_PARAM_BF16;
		if (!opt->master_on)
			a->flags |= GPO_UPD_PARAM_SR;
		a->p_seed_lo = (uint32_t)opt->sr_seed;
		a->p_seed_hi = (uint32_t)(opt->sr_seed >> 32);
		a->p_step_lo = (uint32_t)t;
		a->p_step_hi = (uint32_t)(t >> 32);
	}
	return 0;
}

/* p as the update reads it: the f32 master copy, or the parameters */
static struct dev_buf lamb_p(const struct gpo_optim *opt)
{
	return opt->master_on ? opt->master : opt->param;
}

/* lamb_prep or lamb_apply for every group that has blocks */
static int lamb_launch_blocks(struct gpo_optim *opt, uint64_t t,
			      uint32_t flags, enum gpo__op_id op)
{
	struct gpo_lamb_args a;
	struct op_call call;
	int g, i, ret;

	for (g = 0; g < opt->ngroups; g++) {
		struct optim_group *grp = &opt->groups[g];

		if (!grp->nblocks)
			continue;
		ret = lamb_args(opt, grp, t, flags, &a);
		if (ret)
			return ret;
		memset(&call, 0, sizeof(call));
		call.op = op;
		/*
		 * the kernels of half parameters where the backend has them
		 * (the GPUs' f32 ones sum in their own order, the half ones
		 * in abi/lamb.h's), else the cpu's, which read the flags
		 */
		call.dtype = optim_param_dtype(opt, op);
		call.work = grp->nblocks;
		call.args = &a;
		i = 0;
		call.buf[i++] = lamb_p(opt);
		if (op == OP_LAMB_PREP)
			call.buf[i++] = opt->grad;
		call.buf[i++] = opt->slot[SL_EXP_AVG];
		call.buf[i++] = opt->slot[SL_EXP_AVG_SQ];
		call.buf[i++] = opt->blocks;
		call.buf[i++] = op == OP_LAMB_PREP ? opt->lamb_partials :
						     opt->trust;
		call.buf[i++] = opt->scal;
		if (op == OP_LAMB_APPLY && opt->master_on)
			call.buf[GPO_LAMB_BUF_HALF] = opt->param;
		ret = gpo__launch(opt->dev, &call);
		if (ret)
			return ret;
	}
	return 0;
}

static int lamb_launch(struct gpo_optim *opt, uint64_t t, uint32_t flags)
{
	struct gpo_lamb_args a;
	struct op_call call;
	int ret;

	ret = lamb_launch_blocks(opt, t, flags, OP_LAMB_PREP);
	if (ret)
		return ret;
	ret = lamb_args(opt, &opt->groups[0], t, flags, &a);
	if (ret)
		return ret;
	/* one workgroup per tensor; never negates: maximize is in prep */
	a.flags &= ~GPO_UPD_MAXIMIZE;
	memset(&call, 0, sizeof(call));
	call.op = OP_LAMB_TRUST;
	call.dtype = GPO_F32;
	call.work = (uint64_t)opt->ntensors;
	call.args = &a;
	call.buf[0] = opt->tensor_blocks;
	call.buf[1] = opt->lamb_partials;
	call.buf[2] = opt->trust;
	call.buf[3] = opt->scal;
	ret = gpo__launch(opt->dev, &call);
	if (ret)
		return ret;
	return lamb_launch_blocks(opt, t, flags, OP_LAMB_APPLY);
}

const struct optim_family gpo__optim_lamb = {
	.name = "lamb",
	.slots = SLOT(SL_EXP_AVG) | SLOT(SL_EXP_AVG_SQ),
	.keys = lamb_keys,
	.defaults = lamb_defaults,
	.prepare = lamb_prepare,
	.launch = lamb_launch,
};
