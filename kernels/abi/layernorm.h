/* SPDX-License-Identifier: MIT */
/*
 * layernorm.h - normalisation of rows to mean 0 and variance 1, and its
 * backward (the affine part of a layer norm is the engine's mul and add)
 *
 * Rows are contiguous: row r of x is x[off_x + r * len .. + len). A
 * workgroup takes GPO_LN_ROWS rows at a time, a team of GPO_LN_TEAM
 * work-items each: blocks of rows b = group, group + groups, ... below
 * ceil(rows / GPO_LN_ROWS), team k of the group row b * GPO_LN_ROWS + k.
 * A team's work-item l sums elements l, l + GPO_LN_TEAM, ... in order and
 * the team joins those sums in a fixed tree, so a row's result does not
 * depend on the launch.
 *
 * layernorm      groups  buf0 x (r), buf1 y (w), buf2 stats (w)
 *                        dtypes f32
 *	mean = sum_j x_j / len
 *	var  = sum_j (x_j - mean)^2 / len          (biased, as torch)
 *	rstd = 1 / sqrt(var + eps)
 *	y_j  = (x_j - mean) * rstd                 y at off_y
 *	stats[off_stats + 2r] = mean, stats[off_stats + 2r + 1] = rstd
 * layernorm_bwd  groups  buf0 y (r, the forward's output), buf1 dy (r),
 *                        buf2 stats (r), buf3 dx (rw/w)   dtypes f32
 *	dx_j (+)= alpha * rstd * (dy_j - mean_k dy_k - y_j * mean_k (dy_k y_k))
 *	y at off_y, dy at off_dy, dx at off_x.
 */
#ifndef GPO_ABI_LAYERNORM_H
#define GPO_ABI_LAYERNORM_H
#include "tensor.h"

#define GPO_LN_TEAM	32u	/* work-items a row */
#define GPO_LN_ROWS	8u	/* rows a workgroup: GPO_WG_SIZE / GPO_LN_TEAM */

GPO_ARGS(gpo_layernorm_args)
	gpo_u32 rows;
	gpo_u32 len;
	gpo_u32 groups;
	gpo_u32 flags;
	gpo_u32 off_x;
	gpo_u32 off_y;
	gpo_u32 off_dy;
	gpo_u32 off_stats;
	gpo_f32 eps;
	gpo_f32 alpha;
GPO_ARGS_END(gpo_layernorm_args)

#endif
