/* SPDX-License-Identifier: MIT */
/*
 * adam.h - torch.optim.Adam and AdamW
 *
 * adam  elements  buf0 p (rw), buf1 g (r), buf2 exp_avg (rw),
 *       buf3 exp_avg_sq (rw), buf4 max_exp_avg_sq (rw, with GPO_ADAM_AMSGRAD),
 *       buf5 scal (r)                                        dtypes f32
 *   GPO_ADAM_STATE_BF16: exp_avg, exp_avg_sq and max_exp_avg_sq are
 *   bfloat16 (read exactly, the new values rounded to nearest even when
 *   stored; the update itself uses the unrounded f32 values). Their views
 *   then cover n rounded up to 4 elements (the group's padding), so a
 *   float4 of them is 8 whole bytes; the lanes past n keep their bits.
 *   Adam:  g += weight_decay * p        AdamW (GPO_ADAM_DECOUPLED): p *= decay
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   amsgrad: vmax = max(vmax, v), used in place of v
 *   p -= step_size * m / (sqrt(v) / bc2_sqrt + eps)
 * step_size = lr / bias_correction1, bc2_sqrt = sqrt(bias_correction2),
 * decay = 1 - lr * weight_decay; every "1 - x" is computed in double on
 * the host and then rounded, as torch does with Python floats.
 *
 * adam8  groups  buf0 p (rw), buf1 g (r), buf2 exp_avg codes (rw),
 *        buf3 exp_avg_sq codes (rw), buf4 the half copy (w, with
 *        GPO_UPD_PARAM_F16/BF16), buf5 scal (r), buf6 exp_avg absmax
 *        (rw), buf7 exp_avg_sq absmax (rw)
 *                               dtypes f32 (params: f32, f16 or bf16)
 *   GPO_ADAM_STATE_U8 (set on every adam8 launch): blockwise 8-bit state
 *   (core/quant_i.h): workgroup k does elements [256 k, min(n, 256 k +
 *   256)) of the group, with absmax index q_blk + k (q_groups workgroups
 *   run, group w doing blocks w, w + q_groups, ...: the launch shape
 *   never changes a result, and each group loads the maps once). It
 *   dequantizes the
 *   old state (exp_avg with the signed map, exp_avg_sq the unsigned one,
 *   as bitsandbytes' Adam8bit), updates in f32 exactly as adam does
 *   (p with the unrounded new state), then stores each block's max |new
 *   state| (by the bits: a NaN wins) and the codes quant8(new, absmax).
 *   The code views are the whole slot (u8, four to a word, element e of
 *   the group at byte q_off + e; q_off is the group's start, a multiple
 *   of 64); bytes past n keep their bits. amsgrad: not in 8 bits.
 *   Half parameters (abi.h GPO_UPD_PARAM_*) as adam's: the half copy
 *   takes buf4, which max_exp_avg_sq has in adam but not in 8 bits.
 */
#ifndef GPO_ABI_ADAM_H
#define GPO_ABI_ADAM_H
#include "abi.h"

#define GPO_ADAM_AMSGRAD	(1u << 8)
#define GPO_ADAM_DECOUPLED	(1u << 9)
#define GPO_ADAM_STATE_BF16	(1u << 10)
#define GPO_ADAM_STATE_U8	(1u << 11)

/* the half copy of the parameters (GPO_UPD_PARAM_F16/BF16, abi.h) */
#define GPO_ADAM_BUF_HALF	6
#define GPO_ADAM8_BUF_HALF	4

GPO_ARGS(gpo_adam_args)
	gpo_u32 n;
	gpo_u32 flags;
	gpo_f32 beta1;
	gpo_f32 beta2;
	gpo_f32 eps;
	gpo_f32 weight_decay;
	gpo_f32 step_size;
	gpo_f32 bc2_sqrt;
	gpo_f32 decay;
	gpo_f32 one_minus_beta1;
	gpo_f32 one_minus_beta2;
	/* u8 state (adam8): the group's code and absmax offsets */
	gpo_u32 q_off;
	gpo_u32 q_blk;
	gpo_u32 q_groups;
	GPO_PARAM_FIELDS
GPO_ARGS_END(gpo_adam_args)

#endif
