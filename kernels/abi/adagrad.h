/* SPDX-License-Identifier: MIT */
/*
 * adagrad.h - torch.optim.Adagrad
 *
 * adagrad  elements  buf0 p (rw), buf1 g (r), buf2 sum (rw), buf3 scal (r)
 *                                                            dtypes f32
 *   g += wd * p;  sum += g^2;  p -= clr * g / (sqrt(sum) + eps)
 *   clr = lr / (1 + (step - 1) * lr_decay), from double on the host
 * GPO_ADAGRAD_STATE_BF16: sum is bfloat16, read exactly and stored
 * rounded to nearest even (the update uses the unrounded sum); its view
 * covers n rounded up to 4 elements.
 *
 * adagrad8  groups  buf0 p (rw), buf1 g (r), buf2 sum codes (rw),
 *           buf3 scal (r), buf4 sum absmax (rw), buf5 the half copy
 *           (w, with GPO_UPD_PARAM_F16/BF16, abi.h)
 *                               dtypes f32 (params: f32, f16 or bf16)
 *   GPO_ADAGRAD_STATE_U8: blockwise 8-bit sum with the signed map, as
 *   bitsandbytes' one-state optimizers keep their state; blocks, codes
 *   and absmax as adam8's (abi/adam.h).
 */
#ifndef GPO_ABI_ADAGRAD_H
#define GPO_ABI_ADAGRAD_H
#include "abi.h"

#define GPO_ADAGRAD_STATE_BF16	(1u << 8)
#define GPO_ADAGRAD_STATE_U8	(1u << 9)

/* the half copy of the parameters (GPO_UPD_PARAM_F16/BF16, abi.h) */
#define GPO_ADAGRAD_BUF_HALF	4
#define GPO_ADAGRAD8_BUF_HALF	5

GPO_ARGS(gpo_adagrad_args)
	gpo_u32 n;
	gpo_u32 flags;
	gpo_f32 clr;
	gpo_f32 weight_decay;
	gpo_f32 eps;
	/* u8 state (adagrad8): the group's code and absmax offsets */
	gpo_u32 q_off;
	gpo_u32 q_blk;
	gpo_u32 q_groups;
	GPO_PARAM_FIELDS
GPO_ARGS_END(gpo_adagrad_args)

#endif
