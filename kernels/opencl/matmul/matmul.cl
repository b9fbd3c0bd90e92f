/* SPDX-License-Identifier: MIT */
/*
 * matmul.cl - batched C (+)= alpha op(A) op(B) (abi/matmul.h), tiled.
 *
 * A workgroup computes one 64 x 64 tile of C. Its 256 work-items form a
 * 16 x 16 grid; work-item (tx, ty) holds the 4 x 4 block of rows
 * 4 ty .. 4 ty + 3 and columns 4 tx .. 4 tx + 3 in registers. The sum
 * over p runs in steps of KS: each step stages op(A)'s 64 x KS and
 * op(B)'s KS x 64 slices in local memory, both stored p-major (as[p][i],
 * bs[p][j]), so that the inner loop reads one float4 of each per p and
 * does 16 fmas with them. While a step computes, the next one's global
 * loads are already in registers (one step of prefetch).
 *
 * Transposes are only load indexing: each slice is read along the
 * direction that is contiguous in memory (p for plain A and transposed
 * B, i or j for the others), so that consecutive work-items read
 * consecutive words; out-of-range elements load as 0, and only those
 * multiply each other (p >= k), so they add exact zeros. Every element
 * of C is a chain of fma over p = 0, 1, ..., k - 1 in order: the same
 * order everywhere, whatever the tile.
 *
 * Local rows are padded to LDS floats: the float4 reads stay aligned,
 * and the column-wise stores of plain A and transposed B fall on
 * different banks.
 *
 * With GPO_MM_BIG the tile is 128 x 128 (mm128): each work-item holds
 * 8 x 8 elements, rows 4 ty .. 4 ty + 3 and 64 + 4 ty .. 64 + 4 ty + 3,
 * columns likewise with tx (so that a warp's float4 reads of a slice row
 * are consecutive words: no bank conflicts), 64 fmas for 4 float4 reads
 * a p. The slices are double-buffered, one barrier a step: a step's
 * stores go to the buffer the previous step did not read.
 */
#include "abi/matmul.h"
#include "opencl/tensor.cl"

#define TS	GPO_MM_TILE	/* C tile side */
#define KS	16		/* p per staged step */
#define LDS	(TS + 4)	/* local row stride, floats */
#define TPR	(TS / 4)	/* work-items per tile row: 16 */

/*
 * This work-item's 4 elements of the next step of op(A) (or op(B), the
 * same with i for j), from @m: @mn rows (i), @k columns (p) of op(M),
 * stored with leading dimension @ld, transposed or not.
 */
static inline void load_step(__global const float *mat, uint ld, int trans,
			     uint mn, uint k, uint i0, uint p0, float r[4])
{
	uint lid = get_local_id(0);

	for (uint q = 0; q < 4; q++) {
		uint i, p;

		if (trans) {
			/* M[p * ld + i]: consecutive work-items, i */
			i = lid % TS;
			p = lid / TS + q * (GPO_WG_SIZE / TS);
		} else {
			/* M[i * ld + p]: consecutive work-items, p */
			p = lid % KS;
			i = lid / KS + q * (GPO_WG_SIZE / KS);
		}
		i += i0;
		p += p0;
		r[q] = 0.0f;
		if (i < mn && p < k)
			r[q] = trans ? mat[p * ld + i] : mat[i * ld + p];
	}
}

/* Where load_step's elements go in the p-major local slice */
static inline void store_step(__local float *s, int trans, const float r[4])
{
	uint lid = get_local_id(0);

	for (uint q = 0; q < 4; q++) {
		if (trans)
			s[(lid / TS + q * (GPO_WG_SIZE / TS)) * LDS + lid % TS] =
				r[q];
		else
			s[(lid % KS) * LDS + lid / KS +
			  q * (GPO_WG_SIZE / KS)] = r[q];
	}
}

static void mm64(__global const float *A, __global const float *B,
		 __global float *C, struct gpo_matmul_args a,
		 __local float *as, __local float *bs)
{
	uint g = get_group_id(0), lid = get_local_id(0);
	uint tiles = a.tiles_m * a.tiles_n, z, t, i0, j0;
	uint tx = lid % TPR, ty = lid / TPR;
	int ta = (a.flags & GPO_MM_TRANS_A) != 0;
	int tb = (a.flags & GPO_MM_TRANS_B) != 0;
	float4 c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
	float ra[4], rb[4];

	/* a group past the work does nothing (abi/tensor.h) */
	if (!tiles || g / tiles >= a.batch)
		return;
	z = g / tiles;
	t = g % tiles;
	i0 = t / a.tiles_n * TS;
	j0 = t % a.tiles_n * TS;
	A += a.off_a + z * a.bsa;
	B += a.off_b + z * a.bsb;
	C += a.off_c + z * a.bsc;

	load_step(A, a.lda, ta, a.m, a.k, i0, 0, ra);
	load_step(B, a.ldb, !tb, a.n, a.k, j0, 0, rb);
	for (uint p0 = 0; p0 < a.k; p0 += KS) {
		store_step(as, ta, ra);
		store_step(bs, !tb, rb);
		barrier(CLK_LOCAL_MEM_FENCE);
		/* the next step's loads are in flight while this one sums */
		if (p0 + KS < a.k) {
			load_step(A, a.lda, ta, a.m, a.k, i0, p0 + KS, ra);
			load_step(B, a.ldb, !tb, a.n, a.k, j0, p0 + KS, rb);
		}
#pragma unroll
		for (uint p = 0; p < KS; p++) {
			float4 av = *(__local const float4 *)(as + p * LDS +
							     4 * ty);
			float4 bv = *(__local const float4 *)(bs + p * LDS +
							     4 * tx);

			c0 = fma((float4)(av.x), bv, c0);
			c1 = fma((float4)(av.y), bv, c1);
			c2 = fma((float4)(av.z), bv, c2);
			c3 = fma((float4)(av.w), bv, c3);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}

	for (uint r = 0; r < 4; r++) {
		uint i = i0 + 4 * ty + r;
		float4 v = r == 0 ? c0 : r == 1 ? c1 : r == 2 ? c2 : c3;
		float e[4] = { v.x, v.y, v.z, v.w };

		if (i >= a.m)
			break;
		for (uint q = 0; q < 4; q++) {
			uint j = j0 + 4 * tx + q;

			if (j < a.n)
				out_put(C, i * a.ldc + j, a.flags,
					a.alpha * e[q]);
		}
	}
}

#define TSB	GPO_MM_TILE_BIG
#define LDSB	(TSB + 4)

/* load_step() for the 128-wide slices: 8 elements a work-item */
static inline void load_big(__global const float *mat, uint ld, int trans,
			    uint mn, uint k, uint i0, uint p0, float r[8])
{
	uint lid = get_local_id(0);

	for (uint q = 0; q < 8; q++) {
		uint i, p;

		if (trans) {
			i = lid % TSB;
			p = lid / TSB + q * (GPO_WG_SIZE / TSB);
		} else {
			p = lid % KS;
			i = lid / KS + q * (GPO_WG_SIZE / KS);
		}
		i += i0;
		p += p0;
		r[q] = 0.0f;
		if (i < mn && p < k)
			r[q] = trans ? mat[p * ld + i] : mat[i * ld + p];
	}
}

static inline void store_big(__local float *s, int trans, const float r[8])
{
	uint lid = get_local_id(0);

	for (uint q = 0; q < 8; q++) {
		if (trans)
			s[(lid / TSB + q * (GPO_WG_SIZE / TSB)) * LDSB +
			  lid % TSB] = r[q];
		else
			s[(lid % KS) * LDSB + lid / KS +
			  q * (GPO_WG_SIZE / KS)] = r[q];
	}
}

static void mm128(__global const float *A, __global const float *B,
		  __global float *C, struct gpo_matmul_args a,
		  __local float *sm)
{
	uint g = get_group_id(0), lid = get_local_id(0);
	uint tiles = a.tiles_m * a.tiles_n, z, t, i0, j0, buf = 0;
	uint tx = lid % TPR, ty = lid / TPR;
	int ta = (a.flags & GPO_MM_TRANS_A) != 0;
	int tb = (a.flags & GPO_MM_TRANS_B) != 0;
	float4 c[8][2];
	float ra[8], rb[8];

	if (!tiles || g / tiles >= a.batch)
		return;
	z = g / tiles;
	t = g % tiles;
	i0 = t / a.tiles_n * TSB;
	j0 = t % a.tiles_n * TSB;
	A += a.off_a + z * a.bsa;
	B += a.off_b + z * a.bsb;
	C += a.off_c + z * a.bsc;
#pragma unroll
	for (uint r = 0; r < 8; r++)
		c[r][0] = c[r][1] = 0.0f;

	/* buffer b: as at sm + 2 b KS LDSB, bs right after it */
	if (a.k) {
		load_big(A, a.lda, ta, a.m, a.k, i0, 0, ra);
		load_big(B, a.ldb, !tb, a.n, a.k, j0, 0, rb);
		store_big(sm, ta, ra);
		store_big(sm + KS * LDSB, !tb, rb);
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	/* p0 + KS may pass 2^32 for a k near it: p0 never steps past k */
	for (uint p0 = 0; p0 < a.k; p0 = a.k - p0 > KS ? p0 + KS : a.k) {
		__local const float *as = sm + buf * 2 * KS * LDSB;
		__local const float *bs = as + KS * LDSB;
		int more = a.k - p0 > KS;

		/* the next step's loads are in flight while this one sums */
		if (more) {
			load_big(A, a.lda, ta, a.m, a.k, i0, p0 + KS, ra);
			load_big(B, a.ldb, !tb, a.n, a.k, j0, p0 + KS, rb);
		}
#pragma unroll
		for (uint p = 0; p < KS; p++) {
			float4 a0 = *(__local const float4 *)(as + p * LDSB + 4 * ty);
			float4 a1 = *(__local const float4 *)(as + p * LDSB + 64 + 4 * ty);
			float4 b0 = *(__local const float4 *)(bs + p * LDSB + 4 * tx);
			float4 b1 = *(__local const float4 *)(bs + p * LDSB + 64 + 4 * tx);
			float av[8] = { a0.x, a0.y, a0.z, a0.w,
					a1.x, a1.y, a1.z, a1.w };

#pragma unroll
			for (uint r = 0; r < 8; r++) {
				c[r][0] = fma((float4)(av[r]), b0, c[r][0]);
				c[r][1] = fma((float4)(av[r]), b1, c[r][1]);
			}
		}
		if (more) {
			__local float *nx = sm + (buf ^ 1) * 2 * KS * LDSB;

			store_big(nx, ta, ra);
			store_big(nx + KS * LDSB, !tb, rb);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		buf ^= 1;
	}

#pragma unroll
	for (uint r = 0; r < 8; r++) {
		uint i = i0 + (r < 4 ? 4 * ty + r : 64 + 4 * ty + r - 4);

		if (i >= a.m)
			continue;
#pragma unroll
		for (uint h = 0; h < 2; h++) {
			float4 v = c[r][h];
			float e[4] = { v.x, v.y, v.z, v.w };

			for (uint q = 0; q < 4; q++) {
				uint j = j0 + 64 * h + 4 * tx + q;

				if (j < a.n)
					out_put(C, i * a.ldc + j, a.flags,
						a.alpha * e[q]);
			}
		}
	}
}

KERNEL void matmul(BUF(const float, A), BUF(const float, B), BUF(float, C),
		   struct gpo_matmul_args a)
{
	/* mm128's two buffers of two slices; mm64 uses the first 2 KS LDS */
	__local float sm[4 * KS * LDSB] __attribute__((aligned(16)));

	VIEW(A);
	VIEW(B);
	VIEW(C);
	if (a.flags & GPO_MM_BIG)
		mm128(A, B, C, a, sm);
	else
		mm64(A, B, C, a, sm, sm + KS * LDS);
}
