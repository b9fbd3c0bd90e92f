/* SPDX-License-Identifier: MIT */
/*
 * reduce.cl - sums and maxima over one axis and their backward
 * (abi/reduce.h). With inner == 1 a workgroup takes a row and sums it in
 * a fixed tree; otherwise a work-item takes an output and walks its
 * column in order. Either way the order is fixed by the shape alone.
 */
#include "abi/reduce.h"
#include "opencl/tensor.cl"

#define RED_BATCH	16

/* The result of @fn over r < len of x(o, r, i) for one work-item */
static inline float column(const struct gpo_reduce_args *a,
			   __global const float *x, uint o, uint i,
			   uint *arg)
{
	uint base = a->off_x + o * a->len * a->inner + i;
	float acc = a->fn == GPO_RED_SUM ? 0.0f : -INFINITY;

	*arg = 0;
	if (a->fn == GPO_RED_SUM) {
		uint r = 0;

		/*
		 * RED_BATCH loads in flight at once, added in order: a
		 * column of thousands walked one load at a time waits on
		 * memory for each (the gradients of biases)
		 */
		for (; a->len - r >= RED_BATCH; r += RED_BATCH) {
			float w[RED_BATCH];

#pragma unroll
			for (uint q = 0; q < RED_BATCH; q++)
				w[q] = x[base + (r + q) * a->inner];
#pragma unroll
			for (uint q = 0; q < RED_BATCH; q++)
				acc += w[q];
		}
		for (; r < a->len; r++)
			acc += x[base + r * a->inner];
		return acc;
	}
	for (uint r = 0; r < a->len; r++) {
		float v = x[base + r * a->inner];

		if (a->fn == GPO_RED_SUM) {
			acc += v;
		} else if (arg_better(v, r, acc, *arg)) {
			acc = v;
			*arg = r;
		}
	}
	return acc;
}

/* The same over a row (inner == 1) by the whole workgroup */
static inline float row(const struct gpo_reduce_args *a,
			__local float *tv, __local uint *ti,
			__global const float *x, uint o, uint *arg)
{
	uint base = a->off_x + o * a->len, best = 0;
	float acc = a->fn == GPO_RED_SUM ? 0.0f : -INFINITY;

	for (uint r = get_local_id(0); r < a->len; r += GPO_WG_SIZE) {
		float v = x[base + r];

		if (a->fn == GPO_RED_SUM) {
			acc += v;
		} else if (arg_better(v, r, acc, best)) {
			acc = v;
			best = r;
		}
	}
	*arg = best;
	if (a->fn == GPO_RED_SUM)
		return wg_sum(tv, acc);
	return wg_argmax(tv, ti, acc, arg);
}

KERNEL void reduce(BUF(const float, x), BUF(float, y), BUF(int, idx),
		   struct gpo_reduce_args a)
{
	__local float tv[GPO_WG_SIZE];
	__local uint ti[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0), arg;
	int want_idx = a.fn == GPO_RED_MAX && (a.flags & GPO_RED_IDX);
	float v;

	VIEW(x);
	VIEW(y);
	VIEW(idx);
	if (grp >= a.groups)
		return;
	if (a.inner == 1) {
		/* uniform over the group: every work-item reaches the trees */
		for (uint o = grp; o < a.outer; o += a.groups) {
			v = row(&a, tv, ti, x, o, &arg);
			if (lid != 0)
				continue;
			out_put(y, a.off_y + o, a.flags, a.alpha * v);
			if (want_idx)
				idx[a.off_idx + o] = (int)arg;
		}
		return;
	}
	for (uint e = grp * GPO_WG_SIZE + lid; e < a.n;
	     e += a.groups * GPO_WG_SIZE) {
		uint o = e / a.inner, i = e % a.inner;

		v = column(&a, x, o, i, &arg);
		out_put(y, a.off_y + ((a.flags & GPO_RED_TOUT) ?
				      i * a.outer + o : e),
			a.flags, a.alpha * v);
		if (want_idx)
			idx[a.off_idx + e] = (int)arg;
	}
}

/* For every x element: its share of dy (the argmax's alone for MAX) */
KERNEL void reduce_bwd(BUF(const float, dy), BUF(const int, idx),
		       BUF(float, dx), struct gpo_reduce_args a)
{
	VIEW(dy);
	VIEW(idx);
	VIEW(dx);
	if (get_group_id(0) >= a.groups)
		return;
	for (uint e = get_group_id(0) * GPO_WG_SIZE + get_local_id(0);
	     e < a.n; e += a.groups * GPO_WG_SIZE) {
		uint i = e % a.inner, t = e / a.inner;
		uint r = t % a.len, out = (t / a.len) * a.inner + i;
		float g = a.alpha * dy[a.off_y + out];

		if (a.fn == GPO_RED_MAX && idx[a.off_idx + out] != (int)r)
			g = 0.0f;
		out_put(dx, a.off_x + e, a.flags, g);
	}
}
