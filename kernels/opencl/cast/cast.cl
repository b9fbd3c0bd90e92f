/* SPDX-License-Identifier: MIT */
/*
 * cast.cl - the cast family (abi/cast.h): f32 <-> f16/bf16, stochastic
 * rounding to bf16 and blockwise 8-bit quantization, all through
 * precision.cl, bit for bit the cpu backend. 16-bit and u8 views are
 * packed in 32-bit words; one work-item writes a whole word, so no two
 * work-items share one.
 */
#include "abi/cast.h"
#include "opencl/precision.cl"

#define FOR_EACH_ITEM(i, a, items) \
	for (uint i = get_group_id(0) * GPO_WG_SIZE + get_local_id(0); \
	     get_group_id(0) < (a).groups && i < (items); \
	     i += (a).groups * GPO_WG_SIZE)

static inline uint cast16(const struct gpo_cast_args *a, float x, uint i)
{
	uint lo, carry;

	if (a->fn == GPO_CAST_F32_F16)
		return f32_to_f16(x);
	if (a->fn == GPO_CAST_F32_BF16)
		return f32_to_bf16(x);
	/* the 64-bit global index base + i */
	lo = a->base_lo + i;
	carry = lo < i ? 1u : 0u;
	return f32_to_bf16_sr(x, round_bits(a->seed_lo, a->seed_hi,
					    a->step_lo, a->step_hi, lo,
					    a->base_hi + carry));
}

KERNEL void cast(BUF(const uint, src), BUF(uint, dst), struct gpo_cast_args a)
{
	VIEW(src);
	VIEW(dst);
	if (a.fn == GPO_CAST_F16_F32 || a.fn == GPO_CAST_BF16_F32) {
		FOR_EACH_ITEM(i, a, a.n) {
			uint e = a.off_src + i;
			uint h = (src[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu;

			dst[a.off_dst + i] = as_uint(a.fn == GPO_CAST_F16_F32 ?
						     f16_to_f32(h) :
						     bf16_to_f32(h));
		}
		return;
	}
	if (a.fn >= GPO_CAST_COUNT)
		return;
	/* a word of two 16-bit outputs each */
	FOR_EACH_ITEM(w, a, (a.n >> 1) + (a.n & 1u)) {
		uint i = 2u * w, lo, hi;
		__global uint *out = dst + (a.off_dst >> 1) + w;

		lo = cast16(&a, as_float(src[a.off_src + i]), i);
		hi = i + 1u < a.n ?
		     cast16(&a, as_float(src[a.off_src + i + 1u]), i + 1u) :
		     *out >> 16;
		*out = lo | (hi << 16);
	}
}

/*
 * one group a block of 256: its absmax, then 64 work-items pack codes,
 * with the maps and their table in __local memory (quant8_local())
 */
KERNEL void quantize8(BUF(const uint, src), BUF(uint, codes),
		   BUF(float, absmax), struct gpo_cast_args a)
{
	__local uint red[GPO_WG_SIZE];
	__local uint qm[PREC_QLOCAL];
	uint lid = get_local_id(0);
	uint blocks = (a.n + GPO_CAST_BLOCK - 1u) / GPO_CAST_BLOCK;
	bool sg = (a.flags & GPO_CAST_SIGNED) != 0u;

	VIEW(src);
	VIEW(codes);
	VIEW(absmax);
	src += a.off_src;
	prec_qlocal_load(qm, GPO_WG_SIZE);
	/* the table whole before any work-item reads it */
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint k = get_group_id(0); k < blocks; k += a.groups) {
		uint first = k * GPO_CAST_BLOCK, i = first + lid;
		float m;

		/* max |x| by the bits: integers, and a NaN wins */
		red[lid] = i < a.n ? (src[i] & 0x7fffffffu) : 0u;
		barrier(CLK_LOCAL_MEM_FENCE);
		for (uint s = GPO_WG_SIZE / 2; s > 0; s >>= 1) {
			if (lid < s)
				red[lid] = max(red[lid], red[lid + s]);
			barrier(CLK_LOCAL_MEM_FENCE);
		}
		m = as_float(red[0]);
		if (lid == 0)
			absmax[a.off_absmax + k] = m;
		if (lid < GPO_CAST_BLOCK / 4 && first + 4u * lid < a.n) {
			uint e = first + 4u * lid;
			__global uint *out = codes + ((a.off_dst + e) >> 2);
			uint word = 0;

			for (uint j = 0; j < 4u; j++)
				word |= (e + j < a.n ?
					 quant8_local(qm, as_float(src[e + j]),
						      m, sg) :
					 (*out >> (8u * j)) & 0xffu) << (8u * j);
			*out = word;
		}
		/* red[0] is read above: no one may overwrite it yet */
		barrier(CLK_LOCAL_MEM_FENCE);
	}
}

KERNEL void dequantize8(BUF(const uint, codes), BUF(const float, absmax),
		     BUF(float, dst), struct gpo_cast_args a)
{
	bool sg = (a.flags & GPO_CAST_SIGNED) != 0u;

	VIEW(codes);
	VIEW(absmax);
	VIEW(dst);
	FOR_EACH_ITEM(i, a, a.n) {
		uint e = a.off_src + i;
		uint q = (codes[e >> 2] >> ((e & 3u) * 8u)) & 0xffu;

		dst[a.off_dst + i] = dequant8(q, absmax[a.off_absmax +
						i / GPO_CAST_BLOCK], sg);
	}
}
