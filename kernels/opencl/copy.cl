/* SPDX-License-Identifier: MIT */
/*
 * copy.cl - K_COPY and K_FILL. The copy kernel is also the yardstick of
 * the benchmarks (bandwidth), so it takes the same path as the updates.
 */

KERNEL void copy(BUF(float, dst), BUF(const float, src), KARGS)
{
	VIEW(dst);
	VIEW(src);
	FOR_EACH_FLOAT4(i)
		st4(dst, 4 * i, 4, ld4(src, 4 * i, 4));
	if (HAS_TAIL)
		st4(dst, TAIL_START, n & 3, ld4(src, TAIL_START, n & 3));
}

/* s0: the value */
KERNEL void fill(BUF(float, dst), KARGS)
{
	VIEW(dst);
	FOR_EACH_FLOAT4(i)
		st4(dst, 4 * i, 4, (float4)(s0));
	if (HAS_TAIL)
		st4(dst, TAIL_START, n & 3, (float4)(s0));
}
