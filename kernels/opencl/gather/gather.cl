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
 * The indices go by GPO_WG_SIZE at a time: each work-item looks at one
 * and, where it names v, sets its bit in the chunk's mask in local memory
 * (atomic_or: the same mask in any order); after a barrier every
 * work-item walks the set bits, lowest first, adding those dy rows. The
 * walk costs the rows that name v, and the sums are b ascending: no
 * float atomics, the same bits on every launch. Two masks take turns
 * (vulkan/gather/embed_bwd.comp says how).
 */
#define EMB_MW	(GPO_WG_SIZE / 32)	/* mask words of a chunk */

KERNEL void embed_bwd(BUF(const int, idx), BUF(const float, dy),
		      BUF(float, dw), struct gpo_gather_args a)
{
	__local uint mask[2 * EMB_MW];
	uint grp = get_group_id(0), lid = get_local_id(0), x = 0;

	VIEW(idx);
	VIEW(dy);
	VIEW(dw);
	if (grp >= a.groups)
		return;
	idx += a.off_idx;
	dy += a.off_src;
	dw += a.off_dst;
	if (lid < 2 * EMB_MW)
		mask[lid] = 0;
	for (uint v = grp; v < a.row_hi; v += a.groups) {
		/* j - lid: the stretch's first column, the same for all */
		for (uint j = lid; j - lid < a.width; j += GPO_WG_SIZE) {
			float acc = 0.0f;

			for (uint b0 = 0; b0 < a.rows; b0 += GPO_WG_SIZE) {
				uint m[EMB_MW];

				/* mask x is clear: its last walk is over */
				barrier(CLK_LOCAL_MEM_FENCE);
				if (b0 + lid < a.rows &&
				    idx[b0 + lid] == (int)v)
					atomic_or(&mask[x * EMB_MW + lid / 32],
						  1u << (lid % 32));
				barrier(CLK_LOCAL_MEM_FENCE);
				for (uint q = 0; q < EMB_MW; q++)
					m[q] = mask[x * EMB_MW + q];
				/* all hold their copy: clear mask x ^ 1 */
				if (lid < EMB_MW)
					mask[(x ^ 1) * EMB_MW + lid] = 0;
				x ^= 1;
				if (j >= a.width)
					continue;
				for (uint q = 0; q < EMB_MW; q++) {
					while (m[q]) {
						/* the lowest set bit's index */
						uint low = m[q] & (0u - m[q]);
						uint k = 32 * q +
							 popcount(low - 1);

						m[q] &= m[q] - 1;
						acc += dy[(ulong)(b0 + k) *
							  a.width + j];
					}
				}
			}
			if (j < a.width)
				out_put(dw, v * a.width + j, a.flags, acc);
		}
	}
}
