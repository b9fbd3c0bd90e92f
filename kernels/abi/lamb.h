/* SPDX-License-Identifier: MIT */
/*
 * lamb.h - LAMB (You et al. 2019) in three kernels over a block table
 *
 * The flat state is cut into blocks of at most GPO_LAMB_BLOCK elements,
 * none crossing a tensor's end. blocks: 4 uint32 per block {tensor, start,
 * count, 0}; tensors: 2 uint32 per tensor {first block, block count}.
 * Blocks start at any element offset (tensor starts): no float4 alignment.
 * All take whole buffers; workgroup i of lamb_prep/lamb_apply handles
 * block first_block + i.                                     dtypes f32
 *
 * lamb_prep   groups (work = blocks of the group)
 *	buf0 p (r), buf1 g (r), buf2 exp_avg (rw), buf3 exp_avg_sq (rw),
 *	buf4 blocks (r), buf5 partials (w, 2 floats per block), buf6 scal (r)
 *	m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2 (g negated for maximize)
 *	r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 *	partials[2b] = sum p^2, partials[2b + 1] = sum r^2 over the block
 * lamb_trust  groups (work = tensors: one workgroup per tensor)
 *	buf0 tensors (r), buf1 partials (r), buf2 trust (w, 1 float per
 *	tensor), buf3 scal (r); each tensor's block partials summed in a
 *	fixed order; trust = (pn > 0 && rn > 0) ? pn / rn : 1
 * lamb_apply  groups (work = blocks of the group)
 *	buf0 p (rw), buf1 exp_avg (r), buf2 exp_avg_sq (r), buf3 blocks (r),
 *	buf4 trust (r), buf5 scal (r), buf6 p_half (w, with a master copy)
 *	p -= lr * trust[tensor] * r, r recomputed from m, v, p
 * All three change nothing when the step is skipped (GPO_UPD_USE_SCAL);
 * only lamb_prep reads GPO_UPD_MAXIMIZE.
 *
 * The sums of a block are in one order on every device: work-item j adds
 * the block's elements j, j + GPO_WG_SIZE, ... in turn, then the fixed
 * tree over the work-group (s = GPO_WG_SIZE / 2, ..., 1: x[j] += x[j + s]);
 * lamb_trust adds a tensor's blocks in the same way. With / and sqrt
 * correctly rounded and nothing fused, every device gives the same bits.
 *
 * Half parameters (abi.h GPO_UPD_PARAM_*; buffers bound whole, so element
 * e's global index is e and p_base is 0): with GPO_UPD_PARAM_F16/BF16 the
 * gradients are half words, read exactly; with a master copy p is the f32
 * master and lamb_apply also writes buf6 p_half, the new master rounded to
 * nearest even; with GPO_UPD_PARAM_SR p holds the bf16 parameters, read
 * exactly, and lamb_apply stores them with stochastic rounding
 * (gpo__round_bits(seed, step, e)). The norm of p is of the f32 value the
 * update reads (the master, or the widened bf16). Blocks start at any
 * element, so two work-groups may write the two halves of one word.
 */
#ifndef GPO_ABI_LAMB_H
#define GPO_ABI_LAMB_H
#include "abi.h"

#define GPO_LAMB_BLOCK	4096	/* elements per block */
#define GPO_LAMB_BUF_HALF	6	/* lamb_apply's half copy */

GPO_ARGS(gpo_lamb_args)
	gpo_u32 n;		/* elements in each flat buffer */
	gpo_u32 flags;
	gpo_u32 first_block;
	gpo_u32 ntensors;
	gpo_f32 lr;
	gpo_f32 beta1;
	gpo_f32 beta2;
	gpo_f32 eps;
	gpo_f32 weight_decay;
	gpo_f32 bc1;
	gpo_f32 bc2;
	gpo_f32 one_minus_beta1;
	gpo_f32 one_minus_beta2;
	GPO_PARAM_FIELDS
GPO_ARGS_END(gpo_lamb_args)

#endif
