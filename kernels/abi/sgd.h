/* SPDX-License-Identifier: MIT */
/*
 * sgd.h - torch.optim.SGD
 *
 * sgd  elements  buf0 p (rw), buf1 g (r), buf2 momentum_buffer (rw, with
 *      GPO_SGD_MOMENTUM), buf3 scal (r)                      dtypes f32
 *   d = g + wd * p
 *   momentum: b = d at the first step (GPO_SGD_FIRST), else
 *             b = momentum * b + (1 - dampening) * d;
 *             d = nesterov ? d + momentum * b : b
 *   p = p - lr * d
 */
#ifndef GPO_ABI_SGD_H
#define GPO_ABI_SGD_H
#include "abi.h"

#define GPO_SGD_MOMENTUM	(1u << 8)
#define GPO_SGD_NESTEROV	(1u << 9)
#define GPO_SGD_FIRST		(1u << 10)

/* the half copy of the parameters (GPO_UPD_PARAM_F16/BF16, abi.h) */
#define GPO_SGD_BUF_HALF	4

GPO_ARGS(gpo_sgd_args)
	gpo_u32 n;
	gpo_u32 flags;
	gpo_f32 lr;
	gpo_f32 weight_decay;
	gpo_f32 momentum;
	gpo_f32 one_minus_dampening;	/* 1 - dampening, from double */
	GPO_PARAM_FIELDS
GPO_ARGS_END(gpo_sgd_args)

#endif
