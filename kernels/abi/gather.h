/* SPDX-License-Identifier: MIT */
/*
 * gather.h - rows picked by index, and the sum back into rows by index:
 * a batch from a dataset on the device, an embedding and its gradient
 *
 * gather_rows  groups  buf0 src (r), buf1 idx (r, i32), buf2 dst (w)
 *                      dtypes f32 i32 (words are copied as they are)
 *	for b < rows, j < width (n = rows * width, grid-stride):
 *	r = idx[off_idx + b] - row_lo;
 *	if 0 <= r < row_hi - row_lo:
 *		dst[off_dst + b * width + j] = src[off_src + r * stride + j]
 *	else dst is left as it is
 * A dataset larger than one binding lives in several blocks, each holding
 * the rows [row_lo, row_hi); a batch is one launch per block. @stride is
 * the distance of rows in src, in elements: width for a table, smaller
 * for overlapping windows of a sequence (1: row r is the window starting
 * at element r).
 *
 * embed_bwd    groups  buf0 idx (r, i32), buf1 dy (r), buf2 dw (rw/w)
 *                      dtypes f32
 *	for v < row_hi (the table's rows; group-stride:
 *	for (v = group; v < row_hi; v += groups)), j < width:
 *	dw[off_dst + v * width + j] (+)= sum over b = 0, 1, .., rows - 1
 *		(in that order) with idx[off_idx + b] == v of
 *		dy[off_src + b * width + j]
 *	A row no index names gets 0 (or is left as it is with
 *	GPO_T_ACCUM); an index outside [0, row_hi) adds nowhere. No atomics:
 *	the sums are in a fixed order, so the result is the same on every
 *	launch. n = row_hi * width; row_lo and stride are 0.
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
	gpo_u32 stride;
	gpo_u32 flags;
GPO_ARGS_END(gpo_gather_args)

#endif
