/* SPDX-License-Identifier: MIT */
/*
 * loss.cl - cross-entropy with integer labels, its backward, and
 * accuracy (abi/loss.h). A workgroup per row, its max and sum in fixed
 * trees (tensor.cl), as softmax.cl.
 */
#include "abi/loss.h"
#include "opencl/tensor.cl"

/* The row's label, or -1 when outside [0, len) */
static inline int row_label(__global const int *lab,
			    const struct gpo_loss_args *a, uint r)
{
	int l = lab[a->off_lab + r];

	return l >= 0 && (uint)l < a->len ? l : -1;
}

/* y = log sum_j exp(x_j - m) + m - x_label; NaN for a bad label */
KERNEL void xent(BUF(const float, x), BUF(const int, lab), BUF(float, y),
		 struct gpo_loss_args a)
{
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0);

	VIEW(x);
	VIEW(lab);
	VIEW(y);
	if (grp >= a.groups)
		return;
	for (uint r = grp; r < a.rows; r += a.groups) {
		__global const float *xr = x + a.off_x + (ulong)r * a.len;
		float m = row_max(tmp, xr, a.len, 1.0f);
		float s = row_sum_exp(tmp, xr, a.len, 1.0f, m);
		int l = row_label(lab, &a, r);

		if (get_local_id(0) == 0)
			y[a.off_y + r] = l < 0 ? NAN : log(s) + m - xr[l];
	}
}

/* dx_j (+)= alpha dl (softmax(x)_j - (j == label)) */
KERNEL void xent_bwd(BUF(const float, x), BUF(const int, lab),
		     BUF(const float, dl), BUF(float, dx),
		     struct gpo_loss_args a)
{
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0);
	float scale;

	VIEW(x);
	VIEW(lab);
	VIEW(dl);
	VIEW(dx);
	if (grp >= a.groups)
		return;
	scale = a.alpha * dl[a.off_dl];
	for (uint r = grp; r < a.rows; r += a.groups) {
		__global const float *xr = x + a.off_x + (ulong)r * a.len;
		__global float *dxr = dx + a.off_y + (ulong)r * a.len;
		float m = row_max(tmp, xr, a.len, 1.0f);
		float s = row_sum_exp(tmp, xr, a.len, 1.0f, m);
		int l = row_label(lab, &a, r);

		for (uint j = get_local_id(0); j < a.len; j += GPO_WG_SIZE) {
			float p = exp(xr[j] - m) / s;

			if ((int)j == l)
				p -= 1.0f;
			out_put(dxr, j, a.flags, scale * p);
		}
	}
}

/* y = 1 when the row's first maximum is at its label, else 0 */
KERNEL void accuracy(BUF(const float, x), BUF(const int, lab),
		     BUF(float, y), struct gpo_loss_args a)
{
	__local float tv[GPO_WG_SIZE];
	__local uint ti[GPO_WG_SIZE];
	uint grp = get_group_id(0);

	VIEW(x);
	VIEW(lab);
	VIEW(y);
	if (grp >= a.groups)
		return;
	for (uint r = grp; r < a.rows; r += a.groups) {
		__global const float *xr = x + a.off_x + (ulong)r * a.len;
		float best = -INFINITY;
		uint arg = 0;

		for (uint j = get_local_id(0); j < a.len; j += GPO_WG_SIZE) {
			if (arg_better(xr[j], j, best, arg)) {
				best = xr[j];
				arg = j;
			}
		}
		wg_argmax(tv, ti, best, &arg);
		if (get_local_id(0) == 0)
			y[a.off_y + r] = a.len && (int)arg ==
				row_label(lab, &a, r) ? 1.0f : 0.0f;
	}
}
