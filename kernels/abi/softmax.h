/* SPDX-License-Identifier: MIT */
/*
 * softmax.h - softmax and log-softmax over rows, stable, and backward
 *
 * Rows are contiguous: row r of x is x[off_x + r * len .. + len).
 * One workgroup per row, grid-stride over rows
 * (for (r = group; r < rows; r += groups)); the max and the sum of a row
 * are taken in a fixed tree, so a row's result does not depend on the
 * launch.
 *
 * softmax      groups  buf0 x (r), buf1 y (w)              dtypes f32
 *	m = max_j x_j, s = sum_j exp(x_j - m)
 *	SOFTMAX      y_j = exp(x_j - m) / s
 *	LOG_SOFTMAX  y_j = x_j - m - log s
 *	CAUSAL       the rows are those of square len x len matrices, row
 *	             r being row i = r mod len of its matrix, scaled by
 *	             alpha and masked above the diagonal:
 *	             y_j = exp(alpha x_j - m) / s for j <= i, y_j = 0 for
 *	             j > i, with m and s over j <= i only (x_j for j > i is
 *	             never read: it may be anything, NaN included)
 * softmax_bwd  groups  buf0 y (r, the forward's output), buf1 dy (r),
 *                      buf2 dx (rw/w)                     dtypes f32
 *	SOFTMAX      dx_j (+)= alpha * y_j (dy_j - sum_k dy_k y_k)
 *	             (also CAUSAL's backward, with its alpha: masked y_j
 *	             are 0, so their dx_j are 0 (+ what was there))
 *	LOG_SOFTMAX  dx_j (+)= alpha * (dy_j - exp(y_j) sum_k dy_k)
 *	y at off_x, dy at off_dy, dx at off_y.
 */
#ifndef GPO_ABI_SOFTMAX_H
#define GPO_ABI_SOFTMAX_H
#include "tensor.h"

#define GPO_SM_SOFTMAX		0u
#define GPO_SM_LOG_SOFTMAX	1u
#define GPO_SM_CAUSAL		2u	/* forward only */

GPO_ARGS(gpo_softmax_args)
	gpo_u32 rows;
	gpo_u32 len;
	gpo_u32 groups;
	gpo_u32 fn;
	gpo_u32 flags;
	gpo_u32 off_x;
	gpo_u32 off_y;
	gpo_u32 off_dy;
	gpo_f32 alpha;
GPO_ARGS_END(gpo_softmax_args)

#endif
