/* SPDX-License-Identifier: MIT */
/*
 * gather.h - rows picked by index: a batch from a dataset on the device
 *
 * gather_rows  groups  buf0 src (r), buf1 idx (r, i32), buf2 dst (w)
 *                      dtypes f32 i32 (words are copied as they are)
 *	for b < rows, j < width (n = rows * width, grid-stride):
 *	r = idx[off_idx + b] - row_lo;
 *	if 0 <= r < row_hi - row_lo:
 *		dst[off_dst + b * width + j] = src[off_src + r * width + j]
 *	else dst is left as it is
 * A dataset larger than one binding lives in several blocks, each holding
 * the rows [row_lo, row_hi); a batch is one launch per block.
 */
#ifndef GPO_ABI_GATHER_H
#define GPO_ABI_GATHER_H
#include "tensor.h"

GPO_ARGS(gpo_gather_args)
	gpo_u32 n;
	gpo_u32 groups;
	gpo_u32 rows;
	gpo_u32 width;
	gpo_u32 row_lo;
	gpo_u32 row_hi;
	gpo_u32 off_src;
	gpo_u32 off_idx;
	gpo_u32 off_dst;
GPO_ARGS_END(gpo_gather_args)

#endif
