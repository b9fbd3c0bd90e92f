/* SPDX-License-Identifier: MIT */
/*
 * lion.h - Lion (Chen et al. 2023, as lucidrains/lion-pytorch)
 *
 * lion  elements  buf0 p (rw), buf1 g (r), buf2 exp_avg (rw), buf3 scal (r)
 *                                                            dtypes f32
 *   p *= decay (1 - lr * wd)
 *   p -= lr * sign(b1 m + (1 - b1) g)
 *   m = b2 m + (1 - b2) g
 * GPO_LION_STATE_BF16: exp_avg is bfloat16, read exactly and stored
 * rounded to nearest even; its view covers n rounded up to 4 elements.
 *
 * lion8  groups  buf0 p (rw), buf1 g (r), buf2 exp_avg codes (rw),
 *        buf3 scal (r), buf4 exp_avg absmax (rw), buf5 the half copy
 *        (w, with GPO_UPD_PARAM_F16/BF16, abi.h)
 *                               dtypes f32 (params: f32, f16 or bf16)
 *   GPO_LION_STATE_U8: blockwise 8-bit exp_avg, the signed map (as
 *   bitsandbytes' Lion8bit); blocks, codes and absmax as adam8's
 *   (abi/adam.h): the update from the dequantized state, then the new
 *   state's block absmax and codes.
 */
#ifndef GPO_ABI_LION_H
#define GPO_ABI_LION_H
#include "abi.h"

#define GPO_LION_STATE_BF16	(1u << 8)
#define GPO_LION_STATE_U8	(1u << 9)

/* the half copy of the parameters (GPO_UPD_PARAM_F16/BF16, abi.h) */
#define GPO_LION_BUF_HALF	4
#define GPO_LION8_BUF_HALF	5

GPO_ARGS(gpo_lion_args)
	gpo_u32 n;
	gpo_u32 flags;
	gpo_f32 lr;
	gpo_f32 beta1;
	gpo_f32 beta2;
	gpo_f32 decay;
	gpo_f32 one_minus_beta1;
	gpo_f32 one_minus_beta2;
	/* u8 state (lion8): the group's code and absmax offsets */
	gpo_u32 q_off;
	gpo_u32 q_blk;
	gpo_u32 q_groups;
	GPO_PARAM_FIELDS
GPO_ARGS_END(gpo_lion_args)

#endif
