/* SPDX-License-Identifier: MIT */
/*
 * gather.cl - rows picked by index, and their sum back by index
 * (abi/gather.h). gather_rows copies the words as they are, as uint,
 * whatever the program's dtype: one kernel for f32 and i32, and no float
 * load that could quiet a NaN's payload.
 */
#include "abi/gather.h"
#include "opencl/tensor.cl"

KERNEL void gather_rows(BUF(const uint, src), BUF(const int, idx),
			BUF(uint, dst), struct gpo_gather_args a)
{
	uint grp = get_group_id(0);

	VIEW(src);
	VIEW(idx);
	VIEW(dst);
	if (grp >= a.groups)
		return;
	for (uint e = grp * GPO_WG_SIZE + get_local_id(0); e < a.n;
	     e += a.groups * GPO_WG_SIZE) {
		uint b = e / a.width, j = e % a.width;
		long r = (long)idx[a.off_idx + b] - (long)a.row_lo;

		if (r >= 0 && r < (long)a.row_hi - (long)a.row_lo)
			dst[a.off_dst + e] =
				src[a.off_src + (uint)r * a.stride + j];
	}
}

/*
 * embed_bwd: a workgroup per table row v (v = group, group + groups, ...)
 * and a work-item per column, a stretch of GPO_WG_SIZE columns at a time.
 * The indices pass through local memory GPO_WG_SIZE at a time and every
 * work-item walks them in order, adding the dy rows that name v: b
 * ascending, no atomics, the same bits on every launch.
 */
KERNEL void embed_bwd(BUF(const int, idx), BUF(const float, dy),
		      BUF(float, dw), struct gpo_gather_args a)
{
	__local int ids[GPO_WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);

	VIEW(idx);
	VIEW(dy);
	VIEW(dw);
	if (grp >= a.groups)
		return;
	idx += a.off_idx;
	dy += a.off_src;
	dw += a.off_dst;
	for (uint v = grp; v < a.row_hi; v += a.groups) {
		/* j - lid: the stretch's first column, the same for all */
		for (uint j = lid; j - lid < a.width; j += GPO_WG_SIZE) {
			float acc = 0.0f;

			for (uint b0 = 0; b0 < a.rows; b0 += GPO_WG_SIZE) {
				uint cnt = min(a.rows - b0, (uint)GPO_WG_SIZE);

				/* nobody still reads the last chunk */
				barrier(CLK_LOCAL_MEM_FENCE);
				if (lid < cnt)
					ids[lid] = idx[b0 + lid];
				barrier(CLK_LOCAL_MEM_FENCE);
				if (j >= a.width)
					continue;
				for (uint k = 0; k < cnt; k++)
					if (ids[k] == (int)v)
						acc += dy[(ulong)(b0 + k) *
							  a.width + j];
			}
			if (j < a.width)
				out_put(dw, v * a.width + j, a.flags, acc);
		}
	}
}
