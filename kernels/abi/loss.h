/* SPDX-License-Identifier: MIT */
/*
 * loss.h - cross-entropy with integer labels and accuracy, per row
 *
 * logits are rows of len classes (row r at x[off_x + r * len]); labels
 * are i32 (lab[off_lab + r]). One workgroup per row, grid-stride over
 * rows (softmax.h); a row's max and sum are taken in a fixed tree.
 *
 * xent      groups  buf0 x (r), buf1 lab (r, i32), buf2 y (w)  dtypes f32
 *	y[off_y + r] = log sum_j exp(x_j - m) + m - x_label   (m = max_j x_j)
 *	a label outside [0, len) gives NaN (never a read out of the row)
 * xent_bwd  groups  buf0 x (r), buf1 lab (r, i32), buf2 dl (r: one float
 *                   at off_dl, the upstream gradient), buf3 dx (rw/w)
 *                   dtypes f32
 *	dx_j (+)= alpha * dl * (softmax(x)_j - (j == label))    dx at off_y
 *	(the mean over rows is alpha = 1 / rows)
 * accuracy  groups  buf0 x (r), buf1 lab (r, i32), buf2 y (w)  dtypes f32
 *	y[off_y + r] = argmax_j x_j == label ? 1 : 0, the first maximum
 *	winning ties (torch.argmax)
 */
#ifndef GPO_ABI_LOSS_H
#define GPO_ABI_LOSS_H
#include "tensor.h"

GPO_ARGS(gpo_loss_args)
	gpo_u32 rows;
	gpo_u32 len;
	gpo_u32 groups;
	gpo_u32 flags;
	gpo_u32 off_x;
	gpo_u32 off_lab;
	gpo_u32 off_dl;
	gpo_u32 off_y;
	gpo_f32 alpha;
GPO_ARGS_END(gpo_loss_args)

#endif
