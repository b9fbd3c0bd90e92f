/* SPDX-License-Identifier: MIT */
/*
 * layernorm.cl - rows to mean 0 and variance 1, and the backward
 * (abi/layernorm.h). A workgroup per row: work-item j takes elements j,
 * j + 256, ... in order and the sums go through the fixed trees of
 * tensor.cl, so a row gives the same bits whatever the launch. The
 * variance is a second pass over x - mean: no cancellation.
 */
#include "abi/layernorm.h"
#include "opencl/tensor.cl"

KERNEL void layernorm(BUF(const float, x), BUF(float, y), BUF(float, stats),
		      struct gpo_layernorm_args a)
{
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);

	VIEW(x);
	VIEW(y);
	VIEW(stats);
	if (grp >= a.groups)
		return;
	for (uint r = grp; r < a.rows; r += a.groups) {
		ulong base = (ulong)r * a.len;
		__global const float *xr = x + a.off_x + base;
		__global float *yr = y + a.off_y + base;
		float mean = row_sum(tmp, xr, a.len) / a.len;
		float v = 0.0f, rstd;

		for (uint j = lid; j < a.len; j += GPO_WG_SIZE) {
			float d = xr[j] - mean;

			v += d * d;
		}
		rstd = 1.0f / sqrt(wg_sum(tmp, v) / a.len + a.eps);
		for (uint j = lid; j < a.len; j += GPO_WG_SIZE)
			yr[j] = (xr[j] - mean) * rstd;
		if (lid == 0) {
			stats[a.off_stats + 2 * (ulong)r] = mean;
			stats[a.off_stats + 2 * (ulong)r + 1] = rstd;
		}
	}
}

/* dx_j (+)= alpha rstd (dy_j - mean(dy) - y_j mean(dy y)) */
KERNEL void layernorm_bwd(BUF(const float, y), BUF(const float, dy),
			  BUF(const float, stats), BUF(float, dx),
			  struct gpo_layernorm_args a)
{
	__local float2 tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);

	VIEW(y);
	VIEW(dy);
	VIEW(stats);
	VIEW(dx);
	if (grp >= a.groups)
		return;
	for (uint r = grp; r < a.rows; r += a.groups) {
		ulong base = (ulong)r * a.len;
		__global const float *yr = y + a.off_y + base;
		__global const float *dyr = dy + a.off_dy + base;
		__global float *dxr = dx + a.off_x + base;
		float scale = a.alpha * stats[a.off_stats + 2 * (ulong)r + 1];
		float2 s = (float2)(0.0f);

		for (uint j = lid; j < a.len; j += GPO_WG_SIZE)
			s += (float2)(dyr[j], dyr[j] * yr[j]);
		s = wg_sum2(tmp, s) / (float)a.len;
		for (uint j = lid; j < a.len; j += GPO_WG_SIZE)
			out_put(dxr, j, a.flags,
				scale * (dyr[j] - s.x - yr[j] * s.y));
	}
}
