/* SPDX-License-Identifier: MIT */
/*
 * gather.cl - rows picked by index (abi/gather.h). The words are copied
 * as they are, as uint, whatever the program's dtype: one kernel for f32
 * and i32, and no float load that could quiet a NaN's payload.
 */
#include "abi/gather.h"

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
			dst[a.off_dst + e] = src[a.off_src + (uint)r * a.width + j];
	}
}
