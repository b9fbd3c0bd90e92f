/* SPDX-License-Identifier: MIT */
/*
 * mem.cl - the memory family (abi/mem.h): copy and fill. The copy kernel
 * is also the yardstick of the benchmarks (bandwidth), so it takes the
 * same path as the updates: a T4 per work-item, then a scalar tail.
 */
#include "abi/mem.h"

/* dst[i] = src[i] in any dtype: T is the program's (common.cl) */
KERNEL void copy(BUF(T, dst), BUF(const T, src), struct gpo_mem_args a)
{
	VIEW(dst);
	VIEW(src);
	FOR_EACH_FLOAT4(i, a.n)
		*(__global T4 *)(dst + 4 * i) =
			*(__global const T4 *)(src + 4 * i);
	if (HAS_TAIL(a.n))
		for (uint e = TAIL_START(a.n); e < a.n; e++)
			dst[e] = src[e];
}

/* f32 only: a.value is a float */
KERNEL void fill(BUF(float, dst), struct gpo_mem_args a)
{
	VIEW(dst);
	FOR_EACH_FLOAT4(i, a.n)
		st4(dst, 4 * i, 4, (float4)(a.value));
	if (HAS_TAIL(a.n))
		st4(dst, TAIL_START(a.n), a.n & 3, (float4)(a.value));
}
