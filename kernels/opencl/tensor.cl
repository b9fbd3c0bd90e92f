/* SPDX-License-Identifier: MIT */
/*
 * tensor.cl - what the OpenCL kernels of the tensor engine's families
 * share (abi/tensor.h): the output write with GPO_T_ACCUM, and the fixed
 * trees over a workgroup that row reductions (reduce, softmax, loss) use.
 */
#include "abi/tensor.h"

/* y = v, or y += v with GPO_T_ACCUM: y is read only when accumulating */
static inline void out_put(__global float *y, uint i, uint flags, float v)
{
	if (flags & GPO_T_ACCUM)
		v = y[i] + v;
	y[i] = v;
}

/*
 * The maximum of one value per work-item, every work-item getting it. A
 * fixed tree; fmax: a NaN among the values is ignored, as a row's NaN
 * shows up anyway in the sums that follow.
 */
static inline float wg_max(__local float *tmp, float v)
{
	uint lid = get_local_id(0);

	tmp[lid] = v;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint s = GPO_WG_SIZE / 2; s > 0; s >>= 1) {
		if (lid < s)
			tmp[lid] = fmax(tmp[lid], tmp[lid + s]);
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	v = tmp[0];
	/* tmp may be reused right after: nobody may still read tmp[0] */
	barrier(CLK_LOCAL_MEM_FENCE);
	return v;
}

/*
 * The sum of one value per work-item over each part of @width (a power
 * of two dividing GPO_WG_SIZE) of consecutive work-items, in a fixed
 * tree, to every one of the part. Every work-item of the group calls it
 * (it holds barriers).
 */
static inline float part_sum(__local float *tmp, float v, uint width)
{
	uint lid = get_local_id(0), l = lid % width;

	tmp[lid] = v;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint s = width / 2; s > 0; s >>= 1) {
		if (l < s)
			tmp[lid] += tmp[lid + s];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	v = tmp[lid - l];
	barrier(CLK_LOCAL_MEM_FENCE);
	return v;
}

/* The sum of one value per work-item in a fixed tree, to every one. */
static inline float wg_sum(__local float *tmp, float v)
{
	return part_sum(tmp, v, GPO_WG_SIZE);
}

/*
 * Does (v, i) beat the best (bv, bi) so far as torch.max and torch.argmax
 * see it? NaN is larger than everything, and of equal values (NaNs
 * included) the first index wins, whatever order they are met in.
 */
static inline int arg_better(float v, uint i, float bv, uint bi)
{
	if (isnan(bv))
		return isnan(v) && i < bi;
	if (isnan(v) || v > bv)
		return 1;
	return v == bv && i < bi;
}

/*
 * The maximum and its first index over one (value, index) pair per
 * work-item, in a fixed tree; every work-item gets both.
 */
static inline float wg_argmax(__local float *tv, __local uint *ti, float v,
			      uint *idx)
{
	uint lid = get_local_id(0);

	tv[lid] = v;
	ti[lid] = *idx;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint s = GPO_WG_SIZE / 2; s > 0; s >>= 1) {
		if (lid < s && arg_better(tv[lid + s], ti[lid + s], tv[lid],
					  ti[lid])) {
			tv[lid] = tv[lid + s];
			ti[lid] = ti[lid + s];
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	v = tv[0];
	*idx = ti[0];
	barrier(CLK_LOCAL_MEM_FENCE);
	return v;
}

/*
 * The max and the sum of exp(x - max) of a row of @len floats scaled by
 * @alpha (1 but for the causal softmax: 1 * x is x, bit for bit), and the
 * plain sum, the work of a whole workgroup: work-item j takes elements j,
 * j + 256, ... in order, then the trees. A row of -inf only gives NaN
 * (x - max).
 */
static inline float row_max(__local float *tmp, __global const float *x,
			    uint len, float alpha)
{
	float m = -INFINITY;

	for (uint j = get_local_id(0); j < len; j += GPO_WG_SIZE)
		m = fmax(m, alpha * x[j]);
	return wg_max(tmp, m);
}

static inline float row_sum_exp(__local float *tmp, __global const float *x,
				uint len, float alpha, float m)
{
	float s = 0.0f;

	for (uint j = get_local_id(0); j < len; j += GPO_WG_SIZE)
		s += exp(alpha * x[j] - m);
	return wg_sum(tmp, s);
}

static inline float row_sum(__local float *tmp, __global const float *x,
			    uint len)
{
	float s = 0.0f;

	for (uint j = get_local_id(0); j < len; j += GPO_WG_SIZE)
		s += x[j];
	return wg_sum(tmp, s);
}
