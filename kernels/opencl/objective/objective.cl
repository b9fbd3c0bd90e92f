/* SPDX-License-Identifier: MIT */
/*
 * objective.cl - the built-in objectives (demos, the daemon's quadratic:N
 * and rosenbrock:N models; abi/objective.h): each group writes the
 * gradient of its chunk [i * chunk, (i + 1) * chunk) of the n elements
 * and the sum of their loss
 * terms in partials[2i] (partials[2i + 1] = 0). Scalar loads: rosenbrock
 * reads its neighbours, and neither is on an optimizer's hot path.
 */
#include "abi/objective.h"

enum obj_kind { OBJ_QUADRATIC, OBJ_ROSENBROCK };

/* loss_i = 0.5 c_i (x_i - 1)^2, c_i = 1 + i % 7; g_i = c_i (x_i - 1) */
static inline float quadratic(__global const float *x, uint i, float *gi)
{
	float c = (float)(1 + i % 7), d = x[i] - 1.0f;

	*gi = c * d;
	return 0.5f * c * d * d;
}

/*
 * loss_i = 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 for i < n - 1;
 * g_i = -400 x_i (x_{i+1} - x_i^2) - 2 (1 - x_i)   [i < n - 1]
 *       + 200 (x_i - x_{i-1}^2)                      [i > 0]
 */
static inline float rosenbrock(__global const float *x, uint n, uint i,
			       float *gi)
{
	float xi = x[i], loss = 0.0f;

	*gi = 0.0f;
	if (i + 1 < n) {
		float t = x[i + 1] - xi * xi, u = 1.0f - xi;

		loss = 100.0f * t * t + u * u;
		*gi += -400.0f * xi * t - 2.0f * u;
	}
	if (i > 0)
		*gi += 200.0f * (xi - x[i - 1] * x[i - 1]);
	return loss;
}

/*
 * This group's chunk of objective @obj (a constant: the compiler keeps
 * one branch): the gradients, and the partials pair (loss, 0) summed by
 * the norm's tree, as the Vulkan kernels sum it with reduce2().
 */
static inline void objective(enum obj_kind obj, __local float2 *tmp,
			     __global const float *x, __global float *g,
			     __global float *part, uint n, uint chunk)
{
	uint grp = get_group_id(0), start, end;
	float loss = 0.0f, gi;
	float2 sum;

	group_range(grp, n, chunk, &start, &end);
	for (uint i = start + get_local_id(0); i < end; i += GPO_WG_SIZE) {
		loss += obj == OBJ_QUADRATIC ? quadratic(x, i, &gi) :
					       rosenbrock(x, n, i, &gi);
		g[i] = gi;
	}
	sum = wg_sum2(tmp, (float2)(loss, 0.0f));
	if (get_local_id(0) == 0)
		vstore2(sum, grp, part);
}

KERNEL void obj_quadratic(BUF(const float, x), BUF(float, g),
			  BUF(float, part), struct gpo_objective_args a)
{
	__local float2 tmp[GPO_WG_SIZE];

	objective(OBJ_QUADRATIC, tmp, x + x_off, g + g_off, part + part_off,
		  a.n, a.chunk);
}

KERNEL void obj_rosenbrock(BUF(const float, x), BUF(float, g),
			   BUF(float, part), struct gpo_objective_args a)
{
	__local float2 tmp[GPO_WG_SIZE];

	objective(OBJ_ROSENBROCK, tmp, x + x_off, g + g_off, part + part_off,
		  a.n, a.chunk);
}
