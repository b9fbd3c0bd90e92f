/* SPDX-License-Identifier: MIT */
/*
 * rmsprop.h - torch.optim.RMSprop
 *
 * rmsprop  elements  buf0 p (rw), buf1 g (r), buf2 square_avg (rw),
 *          buf3 momentum_buffer (rw, GPO_RMSPROP_MOMENTUM),
 *          buf4 grad_avg (rw, GPO_RMSPROP_CENTERED), buf5 scal (r)
 *                                                            dtypes f32
 *   g += wd * p;  sq = alpha sq + (1 - alpha) g^2
 *   centered: ga = alpha ga + (1 - alpha) g;  avg = sqrt(sq - ga^2) + eps
 *   else avg = sqrt(sq) + eps
 *   momentum: b = momentum b + g / avg; p -= lr b   else p -= lr g / avg
 * GPO_RMSPROP_STATE_BF16: the state slots used are bfloat16, read exactly
 * and stored rounded to nearest even (the update uses the unrounded
 * values); their views cover n rounded up to 4 elements.
 *
 * rmsprop8  groups  buf0 p (rw), buf1 g (r), buf2 square_avg codes (rw),
 *           buf3 the half copy (w, with GPO_UPD_PARAM_F16/BF16, abi.h;
 *           momentum_buffer's in rmsprop, which 8 bits have not),
 *           buf5 scal (r), buf6 square_avg absmax (rw)
 *                               dtypes f32 (params: f32, f16 or bf16)
 *   GPO_RMSPROP_STATE_U8: blockwise 8-bit square_avg with the signed
 *   map, as bitsandbytes' RMSprop8bit; blocks, codes and absmax as
 *   adam8's (abi/adam.h). Neither momentum nor centered (bitsandbytes
 *   has neither in 8 bits).
 */
#ifndef GPO_ABI_RMSPROP_H
#define GPO_ABI_RMSPROP_H
#include "abi.h"

#define GPO_RMSPROP_MOMENTUM	(1u << 8)
#define GPO_RMSPROP_CENTERED	(1u << 9)
#define GPO_RMSPROP_STATE_BF16	(1u << 10)
#define GPO_RMSPROP_STATE_U8	(1u << 11)

/* the half copy of the parameters (GPO_UPD_PARAM_F16/BF16, abi.h) */
#define GPO_RMSPROP_BUF_HALF	6
#define GPO_RMSPROP8_BUF_HALF	3

GPO_ARGS(gpo_rmsprop_args)
	gpo_u32 n;
	gpo_u32 flags;
	gpo_f32 lr;
	gpo_f32 alpha;
	gpo_f32 eps;
	gpo_f32 weight_decay;
	gpo_f32 momentum;
	gpo_f32 one_minus_alpha;
	/* u8 state (rmsprop8): the group's code and absmax offsets */
	gpo_u32 q_off;
	gpo_u32 q_blk;
	gpo_u32 q_groups;
	GPO_PARAM_FIELDS
GPO_ARGS_END(gpo_rmsprop_args)

#endif
