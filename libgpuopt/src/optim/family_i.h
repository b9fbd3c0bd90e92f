/* SPDX-License-Identifier: MIT */
/*
 * family_i.h - an optimizer family as data: its slots, its keys, its
 * defaults, its rules and its launch
 *
 * One file per family (sgd.c, adam.c, ...) defines a struct optim_family;
 * families.c lists them by enum gpo_optim_kind. hparam.c and optim.c know
 * families only through this table. Adding an optimizer is its file, its
 * kernels (kernels/abi/<family>.h, kernels/opencl/<family>/,
 * kernels/vulkan/<family>/, the cpu backend's loop) and its tests.
 */
#ifndef GPUOPT_OPTIM_FAMILY_I_H
#define GPUOPT_OPTIM_FAMILY_I_H

#include <math.h>
#include <string.h>
#include "optim/optim_i.h"
#include "core/quant_i.h"
#include "abi/abi.h"

#define SLOT(s)		(1u << (s))

struct optim_family {
	const char *name;		/* gpo_optim_kind_name() */
	unsigned int slots;		/* SLOT() of every slot it may keep */
	/*
	 * DT() of the dtypes its kernels take for the state slots besides
	 * f32 (every slot the step uses in one dtype); 0: f32 only
	 */
	unsigned int state_dtypes;
	/* its hyperparameters besides the common ones (hparam.c), NULL-ended */
	const char *const *keys;
	/* its defaults, over the common ones; NULL: none */
	void (*defaults)(struct hparams *hp);
	/* rules across keys, after each key's range; NULL: none */
	int (*validate)(const struct hparams *hp);
	/* does a group configured as @hp use slot @s? NULL: every slot */
	int (*slot_needed)(const struct hparams *hp, enum slot_id s);
	/* allocate the family's own tables at first use; NULL: none */
	int (*prepare)(struct gpo_optim *opt);
	/*
	 * queue the update of every group at step @t (1-based); @flags holds
	 * GPO_UPD_USE_SCAL when the norm pass ran. Device lock held.
	 */
	int (*launch)(struct gpo_optim *opt, uint64_t t, uint32_t flags);
};

extern const struct optim_family gpo__optim_sgd;
extern const struct optim_family gpo__optim_adam;
extern const struct optim_family gpo__optim_adamw;
extern const struct optim_family gpo__optim_rmsprop;
extern const struct optim_family gpo__optim_adagrad;
extern const struct optim_family gpo__optim_lamb;
extern const struct optim_family gpo__optim_lion;

/* gpo__optim_family - the family of @kind, NULL for none */
const struct optim_family *gpo__optim_family(enum gpo_optim_kind kind);

/*
 * @grp's part of a flat buffer of @dtype elements (nothing if the buffer
 * is absent)
 */
static inline struct dev_buf optim_group_view(const struct dev_buf *buf,
					      enum gpo_dtype dtype,
					      const struct optim_group *grp)
{
	struct dev_buf v = *buf;
	size_t es = gpo_dtype_size(dtype);

	if (!v.mem)
		return v;
	v.off += grp->start * es;
	v.size = grp->numel * es;
	return v;
}

/* @grp's part of state slot @s */
static inline struct dev_buf optim_slot_view(const struct gpo_optim *opt,
					     enum slot_id s,
					     const struct optim_group *grp)
{
	return optim_group_view(&opt->slot[s], opt->slot_dtype[s], grp);
}

/*
 * @grp's part of state slot @s with its element count rounded up to 4:
 * the half-precision state views of kernels that read it a float4 (8
 * bytes) at a time; the group's padding (GROUP_ALIGN) holds the rest
 */
static inline struct dev_buf optim_slot_view4(const struct gpo_optim *opt,
					      enum slot_id s,
					      const struct optim_group *grp)
{
	struct dev_buf v = optim_slot_view(opt, s, grp);

	if (v.mem)
		v.size = ((grp->numel + 3) & ~3ull) *
			 gpo_dtype_size(opt->slot_dtype[s]);
	return v;
}

/*
 * u8 state: the launch of @grp becomes @op (the family's 8-bit kernel),
 * gpo__optim_u8_groups groups at most, each doing spans of
 * GPO_U8_GROUP_BLOCKS blocks of GPO_QBLOCK of the group in a grid-stride
 * loop (*@q_groups of them: one per span up to that); *@q_off and *@q_blk
 * are its code and absmax offsets. The code slots and absmax arrays are
 * bound whole (their group offsets need not be binding-aligned).
 */
static inline void optim_u8_call(struct gpo_optim *opt,
				 struct optim_group *grp, struct op_call *call,
				 enum gpo__op_id op, uint32_t *q_off,
				 uint32_t *q_blk, uint32_t *q_groups)
{
	uint64_t blocks = (grp->numel + GPO_QBLOCK - 1) / GPO_QBLOCK;
	uint64_t spans = (blocks + GPO_U8_GROUP_BLOCKS - 1) /
			 GPO_U8_GROUP_BLOCKS;

	call->op = op;
	call->work = spans < gpo__optim_u8_groups ? spans :
						    gpo__optim_u8_groups;
	*q_groups = (uint32_t)call->work;
	*q_off = (uint32_t)grp->start;
	*q_blk = (uint32_t)gpo__optim_u8_first(opt, (int)(grp - opt->groups));
}

/* @grp's learning rate now: its lr through the schedule, if any */
static inline double optim_group_lr(const struct gpo_optim *opt,
				    const struct optim_group *grp)
{
	if (opt->sched)
		return gpo__sched_lr_for(opt->sched, grp->hp.lr);
	return grp->hp.lr;
}

/* the update flags every family shares */
static inline uint32_t optim_upd_flags(const struct optim_group *grp,
				       uint32_t flags)
{
	return flags | (grp->hp.maximize ? GPO_UPD_MAXIMIZE : 0);
}

/*
 * The launch dtype of update op @op: the parameters' where the backend
 * has a kernel built for it (ops.c's DT_PARAM), else f32, whose kernels
 * read the half flags the caller sets either way
 */
static inline enum gpo_dtype
optim_param_dtype(const struct gpo_optim *opt, enum gpo__op_id op)
{
	if (opt->param_dtype != GPO_F32 &&
	    gpo__op_supported(opt->dev, op, opt->param_dtype))
		return opt->param_dtype;
	return GPO_F32;
}

/*
 * A step's scalars are computed in double and rounded; one that is not
 * finite (a bias correction of 0 at a step count past 2^64, a schedule
 * gone wrong) must not reach the parameters as NaN.
 */
static inline int optim_finite(const struct optim_family *fam, const char *what,
			       double v)
{
	if (isfinite(v) && isfinite((float)v))
		return 0;
	return gpo__err(-ERANGE, "%s: %s is %g at this step: refusing to step",
			fam->name, what, v);
}

/*
 * Queue the element-wise update @op over each group that has elements:
 * @fill writes the group's parameter struct and buffers.
 */
static inline int optim_launch_groups(struct gpo_optim *opt,
				      enum gpo__op_id op, uint64_t t,
				      uint32_t flags,
				      int (*fill)(struct gpo_optim *opt,
						  struct optim_group *grp,
						  uint64_t t, uint32_t flags,
						  struct op_call *call,
						  void *args),
				      void *args)
{
	struct op_call call;
	int g, ret;

	for (g = 0; g < opt->ngroups; g++) {
		struct optim_group *grp = &opt->groups[g];

		if (!grp->numel)
			continue;
		memset(&call, 0, sizeof(call));
		call.op = op;
		call.dtype = opt->param_dtype;
		call.work = grp->numel;
		call.args = args;
		call.buf[0] = optim_group_view(&opt->param, opt->param_dtype,
					       grp);
		call.buf[1] = optim_group_view(&opt->grad, opt->grad_dtype, grp);
		ret = fill(opt, grp, t, optim_upd_flags(grp, flags), &call,
			   args);
		if (!ret) {
			gpo__optim_param_call(opt, grp, t, &call, args);
			ret = gpo__launch(opt->dev, &call);
		}
		if (ret)
			return ret;
	}
	return 0;
}

#endif /* GPUOPT_OPTIM_FAMILY_I_H */
