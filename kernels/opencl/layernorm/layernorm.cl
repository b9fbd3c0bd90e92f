/* SPDX-License-Identifier: MIT */
/*
 * layernorm.cl - rows to mean 0 and variance 1, and the backward
 * (abi/layernorm.h). A team of GPO_LN_TEAM work-items per row,
 * GPO_LN_ROWS rows a workgroup: work-item l of a team takes elements l,
 * l + GPO_LN_TEAM, ... in order and tensor.cl's part_sum() joins them in
 * a fixed tree, so a row gives the same bits whatever the launch. The
 * variance is a second pass over x - mean: no cancellation. (A workgroup
 * a row, as before, left most of its 256 work-items idle on rows of a few
 * hundred and waited on eight barriers a sum.)
 */
#include "abi/layernorm.h"
#include "opencl/tensor.cl"

/* the blocks of GPO_LN_ROWS rows (the last one short) */
static inline uint ln_blocks(uint rows)
{
	return rows / GPO_LN_ROWS + (rows % GPO_LN_ROWS != 0);
}

KERNEL void layernorm(BUF(const float, x), BUF(float, y), BUF(float, stats),
		      struct gpo_layernorm_args a)
{
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);
	uint l = lid % GPO_LN_TEAM, nb = ln_blocks(a.rows);

	VIEW(x);
	VIEW(y);
	VIEW(stats);
	if (grp >= a.groups)
		return;
	/* the whole group goes round together: the sums hold barriers */
	for (uint b = grp; b < nb; b = nb - b <= a.groups ? nb : b + a.groups) {
		uint r = b * GPO_LN_ROWS + lid / GPO_LN_TEAM;
		uint len = r < a.rows ? a.len : 0;
		ulong base = (ulong)(r < a.rows ? r : 0) * a.len;
		__global const float *xr = x + a.off_x + base;
		__global float *yr = y + a.off_y + base;
		float s = 0.0f, v = 0.0f, mean, rstd;

		for (uint j = l; j < len; j += GPO_LN_TEAM)
			s += xr[j];
		mean = part_sum(tmp, s, GPO_LN_TEAM) / a.len;
		for (uint j = l; j < len; j += GPO_LN_TEAM) {
			float d = xr[j] - mean;

			v += d * d;
		}
		rstd = 1.0f / sqrt(part_sum(tmp, v, GPO_LN_TEAM) / a.len +
				   a.eps);
		for (uint j = l; j < len; j += GPO_LN_TEAM)
			yr[j] = (xr[j] - mean) * rstd;
		if (l == 0 && len) {
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
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);
	uint l = lid % GPO_LN_TEAM, nb = ln_blocks(a.rows);

	VIEW(y);
	VIEW(dy);
	VIEW(stats);
	VIEW(dx);
	if (grp >= a.groups)
		return;
	for (uint b = grp; b < nb; b = nb - b <= a.groups ? nb : b + a.groups) {
		uint r = b * GPO_LN_ROWS + lid / GPO_LN_TEAM;
		uint len = r < a.rows ? a.len : 0;
		ulong base = (ulong)(r < a.rows ? r : 0) * a.len;
		__global const float *yr = y + a.off_y + base;
		__global const float *dyr = dy + a.off_dy + base;
		__global float *dxr = dx + a.off_x + base;
		float s = 0.0f, sy = 0.0f, scale = 0.0f;

		if (len)
			scale = a.alpha * stats[a.off_stats + 2 * (ulong)r + 1];
		for (uint j = l; j < len; j += GPO_LN_TEAM) {
			s += dyr[j];
			sy += dyr[j] * yr[j];
		}
		s = part_sum(tmp, s, GPO_LN_TEAM) / a.len;
		sy = part_sum(tmp, sy, GPO_LN_TEAM) / a.len;
		for (uint j = l; j < len; j += GPO_LN_TEAM)
			out_put(dxr, j, a.flags,
				scale * (dyr[j] - s - yr[j] * sy));
	}
}
