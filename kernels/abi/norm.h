/* SPDX-License-Identifier: MIT */
/*
 * norm.h - the global gradient norm and non-finite check
 *
 * norm_partial  groups (work = groups)  buf0 g (r), buf1 partials (w)
 *	group i covers elements [i * chunk, min(n, (i + 1) * chunk)), chunk
 *	a multiple of 4; partials[2i] = the sum of g^2 over them,
 *	partials[2i + 1] = 1 if any of them is inf or NaN, else 0.
 * norm_final    groups (work = 1)       buf0 partials (r), buf1 scal (w)
 *	total = the sum of partials[2i] over i < groups in a fixed order,
 *	bad = any partials[2i + 1] != 0;
 *	scal[NORM] = sqrt(total) * inv_scale (the gradient norm)
 *	scal[MUL]  = inv_scale * (clip_norm > 0 ?
 *		     min(1, clip_norm / (scal[NORM] + 1e-6)) : 1)
 *	scal[SKIP] = bad && (flags & GPO_NORM_CHECK_FINITE) ? 1 : 0
 *	scal[TOTAL] = total
 *	with GPO_NORM_LOSS_SCALE, inv_scale above is inv_scale *
 *	scal[LS_INV] (scal is then read and written); with GPO_NORM_DYNAMIC
 *	too, the loss scale then moves as torch's GradScaler moves it
 *	(_amp_update_scale_), after the old one unscaled this step:
 *	    bad:  LS *= 0.5, LS_INV *= 2, LS_GOOD = 0
 *	    else if LS_GOOD + 1 >= growth_interval:
 *		  LS *= 2 and LS_INV *= 0.5 unless LS * 2 is inf; LS_GOOD = 0
 *	    else: LS_GOOD += 1
 * norm_small    groups (work = 1)       buf0 g (r), buf1 scal (w)
 *	both in one group over all n elements (small steps: one dispatch)
 * All f32, but with GPO_NORM_HALF g holds f16 words (bf16 with
 * GPO_NORM_BF16 too), two a 32-bit word (element 2i in the low half),
 * widened exactly; the view covers whole words.
 *
 * GPO_NORM_EXACT (the half path sets it): the same bits on every backend.
 * Each group's sum is the one order the GPU kernels use, which the cpu
 * backend follows: lane t of GPO_WG_SIZE adds, in turn, the quads q = t,
 * t + GPO_WG_SIZE, ... of the group (elements 4q .. 4q + 3 from its
 * start), each as (x0^2 + x1^2) + (x2^2 + x3^2); lane 0 then adds the
 * last (end - start) % 4 elements as one more quad padded with zeros;
 * then the lanes are summed by the tree red[t] += red[t + s], s =
 * GPO_WG_SIZE / 2, ..., 1. norm_final adds partial i into lane i %
 * GPO_WG_SIZE in order of i, then the same tree. sqrt and / are
 * correctly rounded. Squares of half values are exact in f32 (bf16 ones
 * unless below 2^-126 or overflowing), so fusing a product into an add
 * changes nothing.
 */
#ifndef GPO_ABI_NORM_H
#define GPO_ABI_NORM_H
#include "abi.h"

#define GPO_NORM_CHECK_FINITE	(1u << 0)
#define GPO_NORM_LOSS_SCALE	(1u << 1)	/* unscale by scal[LS_INV] */
#define GPO_NORM_DYNAMIC	(1u << 2)	/* and update the loss scale */
#define GPO_NORM_EXACT		(1u << 3)	/* one order everywhere */
#define GPO_NORM_HALF		(1u << 4)	/* g in f16 words */
#define GPO_NORM_BF16		(1u << 5)	/* with HALF: bf16 words */
#define GPO_NORM_MAX_GROUPS	1024

GPO_ARGS(gpo_norm_args)
	gpo_u32 n;
	gpo_u32 flags;
	gpo_u32 groups;
	gpo_u32 chunk;
	gpo_f32 inv_scale;
	gpo_f32 clip_norm;
	gpo_u32 growth_interval;	/* GPO_NORM_DYNAMIC: >= 1 */
GPO_ARGS_END(gpo_norm_args)

#endif
