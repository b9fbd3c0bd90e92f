// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * quantize8.comp - quantize8 (abi/cast.h): one workgroup a block of 256, blocks
 * grp, grp + groups, ...: the block's absmax (max |x| by the bits, so a
 * NaN wins), then 64 invocations pack four codes each. The maps are
 * read from shared memory (precision.glsl's PREC_QMAP_SHARED).
 */
#version 450
#include "common.glsl"
#include "abi/cast.h"
#include "group.glsl"
#define PREC_QMAP_SHARED
#include "precision.glsl"
#include "cast.glsl"

UINT_BUF(0, src);
UINT_RW(1, codes);
FLOAT_BUF(2, absmax);

shared uint red[WG_SIZE];

void main()
{
	uint grp = group_index(), lid = gl_LocalInvocationID.x;
	uint blocks = (args.n + GPO_CAST_BLOCK - 1u) / GPO_CAST_BLOCK;

	prec_qmap_load();
	barrier();
	if (grp >= args.groups)
		return;
	for (uint k = grp; k < blocks; k += args.groups) {
		uint first = k * GPO_CAST_BLOCK, i = first + lid;
		float m;

		red[lid] = i < args.n ? (src[args.off_src + i] & 0x7fffffffu) :
					0u;
		barrier();
		for (uint s = WG_SIZE / 2u; s > 0u; s >>= 1) {
			if (lid < s)
				red[lid] = max(red[lid], red[lid + s]);
			barrier();
		}
		m = uintBitsToFloat(red[0]);
		if (lid == 0u)
			absmax[args.off_absmax + k] = m;
		if (lid < GPO_CAST_BLOCK / 4u && first + 4u * lid < args.n) {
			uint e = first + 4u * lid, o = (args.off_dst + e) >> 2;
			uint word = 0u;

			for (uint j = 0u; j < 4u; j++)
				word |= (e + j < args.n ?
					 quant8(uintBitsToFloat(src[args.off_src + e + j]),
						m, CAST_SIGNED) :
					 (codes[o] >> (8u * j)) & 0xffu) << (8u * j);
			codes[o] = word;
		}
		/* red[0] is read above: no one may overwrite it yet */
		barrier();
	}
}
