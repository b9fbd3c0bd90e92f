/* SPDX-License-Identifier: MIT */
/*
 * reduce.h - sums and maxima over one axis, and their backward
 *
 * x is contiguous, seen as [outer, len, inner]; y as [outer, inner]:
 *	x(o, r, i) = x[off_x + (o * len + r) * inner + i]
 *	y(o, i)    = y[off_y + o * inner + i]
 *
 * reduce      groups  buf0 x (r), buf1 y (rw/w), buf2 idx (w, opt: i32
 *                     words, written with GPO_RED_IDX)    dtypes f32
 *	SUM  y(o, i) (+)= alpha * sum_r x(o, r, i)          (mean: alpha = 1/len)
 *	MAX  y(o, i) (+)= alpha * max_r x(o, r, i); with GPO_RED_IDX,
 *	     idx[off_idx + o * inner + i] = the first r holding the maximum
 *	     (NaN counts as larger than everything, as torch.max)
 *	len 0: SUM gives 0, MAX -inf and idx 0.
 *	GPO_RED_TOUT (SUM, inner > 1, no idx): y(o, i) is written at
 *	off_y + i * outer + o instead, the outputs transposed (the first of
 *	a split sum's two launches: the second sums rows, inner == 1).
 *	n = outer * inner outputs. Two grids, chosen by inner:
 *	inner == 1: one workgroup per output, grid-stride over o
 *	            (for (o = group; o < outer; o += groups)), the
 *	            group summing r in a fixed tree; the caller launches
 *	            min(outer, its cap) groups
 *	inner > 1:  one work-item per output, grid-stride over the n
 *	            outputs (tensor.h), each summing r = 0, 1, ... in order
 *
 * reduce_bwd  groups  buf0 dy (r), buf1 idx (r, opt), buf2 dx (rw/w)
 *                     dtypes f32
 *	for every x element (n = outer * len * inner, grid-stride):
 *	SUM  dx(o, r, i) (+)= alpha * dy(o, i)
 *	MAX  dx(o, r, i) (+)= r == idx(o, i) ? alpha * dy(o, i) : 0
 *	dy is read at off_y, idx at off_idx, dx written at off_x.
 */
#ifndef GPO_ABI_REDUCE_H
#define GPO_ABI_REDUCE_H
#include "tensor.h"

#define GPO_RED_SUM	0u
#define GPO_RED_MAX	1u

#define GPO_RED_IDX	(1u << 8)	/* MAX: write the argmax to idx */
#define GPO_RED_TOUT	(1u << 9)	/* SUM: y written transposed */

GPO_ARGS(gpo_reduce_args)
	gpo_u32 n;
	gpo_u32 groups;
	gpo_u32 fn;
	gpo_u32 flags;
	gpo_u32 outer;
	gpo_u32 len;
	gpo_u32 inner;
	gpo_u32 off_x;
	gpo_u32 off_y;
	gpo_u32 off_idx;
	gpo_f32 alpha;
GPO_ARGS_END(gpo_reduce_args)

#endif
