/* SPDX-License-Identifier: MIT */
/*
 * objective.h - built-in test objectives (demos, the daemon's quadratic:N
 * and rosenbrock:N models), laid out like norm_partial: group i covers
 * elements [i * chunk, min(n, (i + 1) * chunk)), writes the gradient there
 * and partials[2i] = the loss terms of those elements, partials[2i+1] = 0.
 *
 * obj_quadratic   groups  buf0 x (r, whole), buf1 g (w), buf2 partials (w)
 *	loss_i = 0.5 c_i (x_i - 1)^2, c_i = 1 + (i % 7); g_i = c_i (x_i - 1)
 * obj_rosenbrock  groups  the same buffers
 *	loss_i = 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 for i < n - 1, else 0
 *	g_i = -400 x_i (x_{i+1} - x_i^2) - 2 (1 - x_i)   [i < n - 1]
 *	      + 200 (x_i - x_{i-1}^2)                      [i > 0]
 * Both f32.
 */
#ifndef GPO_ABI_OBJECTIVE_H
#define GPO_ABI_OBJECTIVE_H
#include "abi.h"

GPO_ARGS(gpo_objective_args)
	gpo_u32 n;
	gpo_u32 groups;
	gpo_u32 chunk;
GPO_ARGS_END(gpo_objective_args)

#endif
