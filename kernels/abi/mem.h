/* SPDX-License-Identifier: MIT */
/*
 * mem.h - the memory family: copy and fill
 *
 * copy  elements  buf0 dst (w), buf1 src (r)            dtypes f32 i32
 *       dst[i] = src[i] for i < n
 * fill  elements  buf0 dst (w)                           dtypes f32
 *       dst[i] = value for i < n
 */
#ifndef GPO_ABI_MEM_H
#define GPO_ABI_MEM_H
#include "abi.h"

GPO_ARGS(gpo_mem_args)
	gpo_u32 n;
	gpo_f32 value;
GPO_ARGS_END(gpo_mem_args)

#endif
