/* SPDX-License-Identifier: MIT */
/*
 * cast.h - the cast family: conversions between float32 and the 16-bit
 * floats, stochastic rounding to bfloat16, and blockwise 8-bit
 * quantization with bitsandbytes' dynamic map, bit for bit the library's
 * C reference (core/dtype_i.h, core/quant_i.h) on every backend
 *
 * 16-bit views are packed two to a 32-bit word (element 2k in the low
 * half), u8 views four to a word (element 4k in the low byte); their
 * offsets (in elements) must be even, respectively multiples of 4. A
 * partly covered last word keeps its other elements (read, then
 * written). quant8() and dequant8() are precision.glsl's (and
 * precision.cl's) functions of one value. All three ops are grid-stride
 * over `groups` workgroups, so the launch shape never changes a result.
 *
 * cast      groups  buf0 src (r), buf1 dst (rw)                dtypes f32
 *	dst[off_dst + i] = convert(src[off_src + i])            i < n
 *	fn F32_F16, F32_BF16: round to nearest even (NaN kept, quiet)
 *	   F16_F32, BF16_F32: exact
 *	   F32_BF16_SR: f32_to_bf16_sr(x, round_bits(seed, step,
 *	                base + i)): the 64-bit base is the view's first
 *	                element's global index, so a tensor cut into
 *	                several launches rounds as one
 * quantize8    groups  buf0 src (r), buf1 codes (rw), buf2 absmax (w)
 *	block k = elements [256 k, min(n, 256 k + 256)):
 *	absmax[off_absmax + k] = max |src| over the block, by the bits
 *	(a NaN in the block gives a NaN absmax; then every code is the
 *	code of 0.0, as quant8() gives for a NaN quotient);
 *	codes[off_dst + i] = quant8(src[off_src + i], absmax, signed)
 *	signed with GPO_CAST_SIGNED
 * dequantize8  groups  buf0 codes (r), buf1 absmax (r), buf2 dst (rw)
 *	dst[off_dst + i] = dequant8(codes[off_src + i],
 *	                            absmax[off_absmax + i / 256], signed)
 */
#ifndef GPO_ABI_CAST_H
#define GPO_ABI_CAST_H
#include "abi.h"

#define GPO_CAST_F32_F16	0u
#define GPO_CAST_F32_BF16	1u
#define GPO_CAST_F16_F32	2u
#define GPO_CAST_BF16_F32	3u
#define GPO_CAST_F32_BF16_SR	4u
#define GPO_CAST_COUNT		5u

#define GPO_CAST_SIGNED		(1u << 8)	/* quantize8, dequantize8 */

#define GPO_CAST_BLOCK		256u	/* = GPO_WG_SIZE: one group a block */

GPO_ARGS(gpo_cast_args)
	gpo_u32 n;
	gpo_u32 groups;
	gpo_u32 fn;
	gpo_u32 flags;
	gpo_u32 off_src;
	gpo_u32 off_dst;
	gpo_u32 off_absmax;
	gpo_u32 seed_lo;
	gpo_u32 seed_hi;
	gpo_u32 step_lo;
	gpo_u32 step_hi;
	gpo_u32 base_lo;
	gpo_u32 base_hi;
GPO_ARGS_END(gpo_cast_args)

#endif
