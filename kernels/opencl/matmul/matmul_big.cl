/* SPDX-License-Identifier: MIT */
/*
 * matmul_big.cl - one matmul_big kernel (matmul.cl says how it works),
 * for matmul.cl to include once for each depth of step: define BKS (p a
 * staged step) and BIG(x) (this copy's name for its function x) first;
 * both are undefined at the end. BIG(mm)() is a kernel's whole body. A copy
 * of its own for each depth, not one body taking the depth, so that every
 * loop's count is a constant the compiler unrolls before it inlines.
 */
#define BNQ	(TB * BKS / GPO_WG_SIZE)	/* elements a work-item stages */
#define BSL	(BKS * LDB)	/* one slice, floats */

/*
 * This work-item's BNQ elements of op(M)'s step at @p0 (cf. load_step);
 * with @vec (GPO_MM_VEC_*), as BNQ / 4 float4s along the contiguous
 * direction, element by element only where one would cross an edge.
 */
static inline void BIG(load)(__global const float *mat, uint ld, int trans,
			     int vec, uint mn, uint k, uint i0, uint p0,
			     float r[BNQ])
{
	uint lid = get_local_id(0);

	if (vec) {
#pragma unroll
		for (uint q = 0; q < BNQ / 4; q++) {
			uint i, p, o, e;

			if (trans) {
				/* 32 float4s a slice row, along i */
				i = i0 + 4 * (lid % (TB / 4));
				p = p0 + lid / (TB / 4) +
				    q * (GPO_WG_SIZE / (TB / 4));
				o = p * ld + i;
			} else {
				/* BKS / 4 float4s a row, along p */
				i = i0 + lid / (BKS / 4) +
				    q * (GPO_WG_SIZE / (BKS / 4));
				p = p0 + 4 * (lid % (BKS / 4));
				o = i * ld + p;
			}
			if (trans ? i + 3 < mn && p < k : i < mn && p + 3 < k) {
				float4 v = *(__global const float4 *)(mat + o);

				r[4 * q] = v.x;
				r[4 * q + 1] = v.y;
				r[4 * q + 2] = v.z;
				r[4 * q + 3] = v.w;
				continue;
			}
#pragma unroll
			for (e = 0; e < 4; e++) {
				int in = trans ? i + e < mn && p < k :
						 i < mn && p + e < k;

				r[4 * q + e] = in ? mat[o + e] : 0.0f;
			}
		}
		return;
	}
#pragma unroll
	for (uint q = 0; q < BNQ; q++) {
		uint i, p;

		if (trans) {
			/* M[p * ld + i]: consecutive work-items, i */
			i = i0 + lid % TB;
			p = p0 + lid / TB + q * (GPO_WG_SIZE / TB);
		} else {
			/* M[i * ld + p]: BKS work-items a row, along p */
			i = i0 + lid / BKS + q * (GPO_WG_SIZE / BKS);
			p = p0 + lid % BKS;
		}
		r[q] = 0.0f;
		if (i < mn && p < k)
			r[q] = trans ? mat[p * ld + i] : mat[i * ld + p];
	}
}

/* BIG(load)()'s elements into the p-major slice @s, where they belong */
static inline void BIG(store)(__local float *s, int trans, int vec,
			      const float r[BNQ])
{
	uint lid = get_local_id(0);

	if (vec) {
#pragma unroll
		for (uint q = 0; q < BNQ / 4; q++) {
			if (trans) {
				uint i = 4 * (lid % (TB / 4));
				uint p = lid / (TB / 4) +
					 q * (GPO_WG_SIZE / (TB / 4));

				*(__local float4 *)(s + p * LDB + i) =
					(float4)(r[4 * q], r[4 * q + 1],
						 r[4 * q + 2], r[4 * q + 3]);
			} else {
				uint i = lid / (BKS / 4) +
					 q * (GPO_WG_SIZE / (BKS / 4));
				uint p = 4 * (lid % (BKS / 4));

#pragma unroll
				for (uint e = 0; e < 4; e++)
					s[(p + e) * LDB + i] = r[4 * q + e];
			}
		}
		return;
	}
#pragma unroll
	for (uint q = 0; q < BNQ; q++) {
		if (trans)
			s[(lid / TB + q * (GPO_WG_SIZE / TB)) * LDB +
			  lid % TB] = r[q];
		else
			s[(lid % BKS) * LDB + lid / BKS +
			  q * (GPO_WG_SIZE / BKS)] = r[q];
	}
}

KERNEL void BIG_KERNEL(BUF(const float, A), BUF(const float, B),
		       BUF(float, C), struct gpo_matmul_args a)
{
	__local float sm[4 * BSL] __attribute__((aligned(16)));
	/* buffer b: op(A)'s slice at sm + 2 b BSL, op(B)'s right after */
	uint g = get_group_id(0), lid = get_local_id(0);
	uint tiles = a.tiles_m * a.tiles_n, z, t, i0, j0, buf = 0;
	uint tx = lid % 16, ty = lid / 16;
	int ta = (a.flags & GPO_MM_TRANS_A) != 0;
	int tb = (a.flags & GPO_MM_TRANS_B) != 0;
	int va = (a.flags & GPO_MM_VEC_A) != 0;
	int vb = (a.flags & GPO_MM_VEC_B) != 0;
	float4 c00 = 0.0f, c01 = 0.0f, c10 = 0.0f, c11 = 0.0f;
	float4 c20 = 0.0f, c21 = 0.0f, c30 = 0.0f, c31 = 0.0f;
	float4 c40 = 0.0f, c41 = 0.0f, c50 = 0.0f, c51 = 0.0f;
	float4 c60 = 0.0f, c61 = 0.0f, c70 = 0.0f, c71 = 0.0f;
	float ra[BNQ], rb[BNQ];

	VIEW(A);
	VIEW(B);
	VIEW(C);
	/* a group past the work does nothing (abi/tensor.h) */
	if (!tiles || g / tiles >= a.batch)
		return;
	z = g / tiles;
	t = g % tiles;
	i0 = t / a.tiles_n * TB;
	j0 = t % a.tiles_n * TB;
	A += a.off_a + z * a.bsa;
	B += a.off_b + z * a.bsb;
	C += a.off_c + z * a.bsc;

	if (a.k) {
		BIG(load)(A, a.lda, ta, va, a.m, a.k, i0, 0, ra);
		BIG(load)(B, a.ldb, !tb, vb, a.n, a.k, j0, 0, rb);
		BIG(store)(sm, ta, va, ra);
		BIG(store)(sm + BSL, !tb, vb, rb);
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	/* p0 + BKS may pass 2^32 for a k near it: p0 never steps past k */
	for (uint p0 = 0; p0 < a.k; p0 = a.k - p0 > BKS ? p0 + BKS : a.k) {
		__local const float *as = sm + buf * 2 * BSL + 4 * ty;
		__local const float *bs = sm + buf * 2 * BSL + BSL + 4 * tx;
		int more = a.k - p0 > BKS;

		/* the next step's loads are in flight while this one sums */
		if (more) {
			BIG(load)(A, a.lda, ta, va, a.m, a.k, i0, p0 + BKS,
				 ra);
			BIG(load)(B, a.ldb, !tb, vb, a.n, a.k, j0, p0 + BKS,
				 rb);
		}
#pragma unroll
		for (uint p = 0; p < BKS; p++) {
			/* the next step into the other buffer (matmul.cl) */
			if (p == BIG_STAGE_AT(BKS) && more) {
				__local float *nx = sm + (buf ^ 1) * 2 * BSL;

				BIG(store)(nx, ta, va, ra);
				BIG(store)(nx + BSL, !tb, vb, rb);
			}
			float4 a0 = *(__local const float4 *)(as + p * LDB);
			float4 a1 = *(__local const float4 *)(as + p * LDB + 64);
			float4 b0 = *(__local const float4 *)(bs + p * LDB);
			float4 b1 = *(__local const float4 *)(bs + p * LDB + 64);

			BIG_FMA(c00, c01, a0.x);
			BIG_FMA(c10, c11, a0.y);
			BIG_FMA(c20, c21, a0.z);
			BIG_FMA(c30, c31, a0.w);
			BIG_FMA(c40, c41, a1.x);
			BIG_FMA(c50, c51, a1.y);
			BIG_FMA(c60, c61, a1.z);
			BIG_FMA(c70, c71, a1.w);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		buf ^= 1;
	}

	BIG_PUT(4 * ty, c00, c01);
	BIG_PUT(4 * ty + 1, c10, c11);
	BIG_PUT(4 * ty + 2, c20, c21);
	BIG_PUT(4 * ty + 3, c30, c31);
	BIG_PUT(64 + 4 * ty, c40, c41);
	BIG_PUT(64 + 4 * ty + 1, c50, c51);
	BIG_PUT(64 + 4 * ty + 2, c60, c61);
	BIG_PUT(64 + 4 * ty + 3, c70, c71);
}

#undef BNQ
#undef BSL
#undef BKS
#undef BIG
#undef BIG_KERNEL
