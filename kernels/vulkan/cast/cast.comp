// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * cast.comp - cast (abi/cast.h): f32 -> f16/bf16 (nearest even or, for
 * bf16, stochastic) a word of two outputs per invocation, and f16/bf16 ->
 * f32 an element per invocation; grid-stride, precision.glsl's bits.
 */
#version 450
#include "common.glsl"
#include "abi/cast.h"
#include "group.glsl"
#include "tensor.glsl"
#include "precision.glsl"
#include "cast.glsl"

UINT_BUF(0, src);
UINT_RW(1, dst);

uint cast16(float x, uint i)
{
	uint lo, carry;

	if (args.fn == GPO_CAST_F32_F16)
		return f32_to_f16(x);
	if (args.fn == GPO_CAST_F32_BF16)
		return f32_to_bf16(x);
	/* the 64-bit global index base + i */
	lo = args.base_lo + i;
	carry = lo < i ? 1u : 0u;
	return f32_to_bf16_sr(x, round_bits(args.seed_lo, args.seed_hi,
					    args.step_lo, args.step_hi, lo,
					    args.base_hi + carry));
}

void main()
{
	uint grp = group_index();
	bool wide = args.fn == GPO_CAST_F16_F32 || args.fn == GPO_CAST_BF16_F32;
	uint items = wide ? args.n : (args.n >> 1) + (args.n & 1u);

	if (grp >= args.groups || args.fn >= GPO_CAST_COUNT)
		return;
	for (uint w = grid_first(grp, items); w < items;
	     w = grid_next(w, items, args.groups)) {
		if (wide) {
			uint e = args.off_src + w;
			uint h = (src[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu;

			dst[args.off_dst + w] = floatBitsToUint(
				args.fn == GPO_CAST_F16_F32 ? f16_to_f32(h) :
							      bf16_to_f32(h));
		} else {
			uint i = 2u * w, o = (args.off_dst >> 1) + w;
			uint lo = cast16(uintBitsToFloat(src[args.off_src + i]),
					 i);
			uint hi = i + 1u < args.n ?
				cast16(uintBitsToFloat(src[args.off_src + i + 1u]),
				       i + 1u) : dst[o] >> 16;

			dst[o] = lo | (hi << 16);
		}
	}
}
