/* SPDX-License-Identifier: MIT */
/*
 * softmax.cl - softmax and log-softmax over rows, and their backward
 * (abi/softmax.h). A workgroup per row: work-item j takes elements j,
 * j + 256, ... and the max and the sums go through fixed trees, so a row
 * gives the same bits whatever the launch. CAUSAL is SOFTMAX of the row's
 * first i + 1 logits scaled by alpha, zeros after them.
 */
#include "abi/softmax.h"
#include "opencl/tensor.cl"

KERNEL void softmax(BUF(const float, x), BUF(float, y),
		    struct gpo_softmax_args a)
{
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0);
	int causal = a.fn == GPO_SM_CAUSAL;
	float al = causal ? a.alpha : 1.0f;

	VIEW(x);
	VIEW(y);
	if (grp >= a.groups)
		return;
	for (uint r = grp; r < a.rows; r += a.groups) {
		__global const float *xr = x + a.off_x + (ulong)r * a.len;
		__global float *yr = y + a.off_y + (ulong)r * a.len;
		/* CAUSAL: row i of its matrix reads x_0 .. x_i only */
		uint cnt = causal ? r % a.len + 1 : a.len;
		float m = row_max(tmp, xr, cnt, al);
		float s = row_sum_exp(tmp, xr, cnt, al, m);
		float ls = log(s);

		for (uint j = get_local_id(0); j < a.len; j += GPO_WG_SIZE) {
			float d;

			if (j >= cnt) {
				yr[j] = 0.0f;
				continue;
			}
			d = al * xr[j] - m;
			yr[j] = a.fn == GPO_SM_LOG_SOFTMAX ? d - ls :
							     exp(d) / s;
		}
	}
}

/*
 * SOFTMAX      dx_j (+)= alpha y_j (dy_j - sum_k dy_k y_k)
 * LOG_SOFTMAX  dx_j (+)= alpha (dy_j - exp(y_j) sum_k dy_k)
 */
KERNEL void softmax_bwd(BUF(const float, y), BUF(const float, dy),
			BUF(float, dx), struct gpo_softmax_args a)
{
	__local float tmp[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);
	int log_sm = a.fn == GPO_SM_LOG_SOFTMAX;

	VIEW(y);
	VIEW(dy);
	VIEW(dx);
	if (grp >= a.groups)
		return;
	for (uint r = grp; r < a.rows; r += a.groups) {
		ulong base = (ulong)r * a.len;
		__global const float *yr = y + a.off_x + base;
		__global const float *dyr = dy + a.off_dy + base;
		__global float *dxr = dx + a.off_y + base;
		float s = 0.0f;

		for (uint j = lid; j < a.len; j += GPO_WG_SIZE)
			s += log_sm ? dyr[j] : dyr[j] * yr[j];
		s = wg_sum(tmp, s);
		for (uint j = lid; j < a.len; j += GPO_WG_SIZE) {
			float g = log_sm ? dyr[j] - exp(yr[j]) * s :
					   yr[j] * (dyr[j] - s);

			out_put(dxr, j, a.flags, a.alpha * g);
		}
	}
}
