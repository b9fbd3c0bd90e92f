// SPDX-License-Identifier: MIT
// dtypes: f32
/*
 * matmul.comp - matmul: C_z (+)= alpha * op(A_z) op(B_z) (abi/matmul.h),
 * one 64 x 64 tile of one C_z a workgroup.
 *
 * The 256 invocations are a 16 x 16 grid, each owning a 4 x 4 block of
 * the tile (rows 4 ty .. 4 ty + 3, columns 4 tx .. 4 tx + 3) in
 * registers. k goes by in steps of KS: the step's 64 x KS slice of op(A)
 * and KS x 64 slice of op(B) are staged in shared memory, k-major
 * (as[p][i], bs[p][j]), so that the inner loop reads four rows' A values
 * and four columns' B values as two 16-byte words. Each invocation
 * loads four elements of each slice; which four depends on the
 * transpose, so that neighbouring invocations read neighbouring
 * addresses of the matrix in memory either way. The next step's slices
 * are fetched into registers while the current one is multiplied.
 *
 * Elements past m, n or k load as 0 and results past m or n are not
 * stored, so no size needs to be a multiple of anything. Every element
 * of C sums p = 0, 1, ..., k - 1 in order: the same order everywhere.
 */
#version 450
#include "common.glsl"
#include "abi/matmul.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, a);
FLOAT_IN(1, b);
FLOAT_BUF(2, c);

#define TILE	64u
#define KS	16u		/* k a step */
#define RB	4u		/* a register block is RB x RB */
/*
 * A slice row of 64 floats padded to 68: the stores of the non-
 * transposed A (and transposed B) slice, 16 rows of the slice at a time,
 * then hit different banks, and rows stay 16-byte aligned for the vec4
 * reads.
 */
#define LDS	(TILE + 4u)

#define TILEB	128u		/* GPO_MM_TILE_BIG */
#define LDSB	(TILEB + 4u)
#define SLICEB	(KS * LDSB / 4u)	/* vec4s a big slice */

/*
 * The big tile's two buffers of two slices (A's, then B's); the 64-wide
 * path uses the start: its A slice at 0, its B slice at BS4.
 */
shared vec4 sm4[4u * SLICEB];
#define BS4	(KS * LDS / 4u)

/* the slices' element (p, i) in the vec4 array, a slice at vec4 @o */
#define SET(o, p, i, v)	sm4[(o) + (((p) * LDS + (i)) >> 2)][(i) & 3u] = (v)
#define SETB(o, p, i, v) sm4[(o) + (((p) * LDSB + (i)) >> 2)][(i) & 3u] = (v)

uint i0, j0, abase, bbase;

/*
 * This invocation's four elements of the step at @p0 of op(A) and op(B),
 * 0 outside the matrices. Without GPO_MM_TRANS_A, A[i][p] is read along
 * p: 16 invocations a row, (i, p) = (t / 16 + 16 q, t % 16); with it,
 * along i: (i, p) = (t % 64, t / 64 + 4 q). B likewise, the other way
 * round.
 */
void fetch(uint p0, out float ra[RB], out float rb[RB])
{
	uint t = gl_LocalInvocationID.x;

	for (uint q = 0u; q < RB; q++) {
		uint il, pl, i, p;

		if (FLAG(GPO_MM_TRANS_A)) {
			il = t % TILE;
			pl = t / TILE + 4u * q;
		} else {
			il = t / KS + 16u * q;
			pl = t % KS;
		}
		i = i0 + il;
		p = p0 + pl;
		ra[q] = 0.0;
		if (i < args.m && p < args.k)
			ra[q] = FLAG(GPO_MM_TRANS_A) ?
				a[abase + p * args.lda + i] :
				a[abase + i * args.lda + p];
	}
	for (uint q = 0u; q < RB; q++) {
		uint jl, pl, j, p;

		if (FLAG(GPO_MM_TRANS_B)) {
			jl = t / KS + 16u * q;
			pl = t % KS;
		} else {
			jl = t % TILE;
			pl = t / TILE + 4u * q;
		}
		j = j0 + jl;
		p = p0 + pl;
		rb[q] = 0.0;
		if (j < args.n && p < args.k)
			rb[q] = FLAG(GPO_MM_TRANS_B) ?
				b[bbase + j * args.ldb + p] :
				b[bbase + p * args.ldb + j];
	}
}

/* fetch()'s elements into the slices, at the places fetch() took them */
void stage(float ra[RB], float rb[RB])
{
	uint t = gl_LocalInvocationID.x;

	for (uint q = 0u; q < RB; q++) {
		if (FLAG(GPO_MM_TRANS_A))
			SET(0u, t / TILE + 4u * q, t % TILE, ra[q]);
		else
			SET(0u, t % KS, t / KS + 16u * q, ra[q]);
		if (FLAG(GPO_MM_TRANS_B))
			SET(BS4, t % KS, t / KS + 16u * q, rb[q]);
		else
			SET(BS4, t / TILE + 4u * q, t % TILE, rb[q]);
	}
}

/* ---- GPO_MM_BIG: 128 x 128 tiles ---- */

/*
 * fetch() for the 128-wide slices: eight elements of each. Along p:
 * (i, p) = (t / 16 + 16 q, t % 16); along i: (t % 128, t / 128 + 2 q).
 */
void fetch_big(uint p0, out float ra[8], out float rb[8])
{
	uint t = gl_LocalInvocationID.x;

	for (uint q = 0u; q < 8u; q++) {
		uint il, pl, i, p;

		if (FLAG(GPO_MM_TRANS_A)) {
			il = t % TILEB;
			pl = t / TILEB + 2u * q;
		} else {
			il = t / KS + 16u * q;
			pl = t % KS;
		}
		i = i0 + il;
		p = p0 + pl;
		ra[q] = 0.0;
		if (i < args.m && p < args.k)
			ra[q] = FLAG(GPO_MM_TRANS_A) ?
				a[abase + p * args.lda + i] :
				a[abase + i * args.lda + p];
	}
	for (uint q = 0u; q < 8u; q++) {
		uint jl, pl, j, p;

		if (FLAG(GPO_MM_TRANS_B)) {
			jl = t / KS + 16u * q;
			pl = t % KS;
		} else {
			jl = t % TILEB;
			pl = t / TILEB + 2u * q;
		}
		j = j0 + jl;
		p = p0 + pl;
		rb[q] = 0.0;
		if (j < args.n && p < args.k)
			rb[q] = FLAG(GPO_MM_TRANS_B) ?
				b[bbase + j * args.ldb + p] :
				b[bbase + p * args.ldb + j];
	}
}

/* fetch_big()'s elements into buffer @buf's slices */
void stage_big(uint buf, float ra[8], float rb[8])
{
	uint t = gl_LocalInvocationID.x, oa = buf * 2u * SLICEB;
	uint ob = oa + SLICEB;

	for (uint q = 0u; q < 8u; q++) {
		if (FLAG(GPO_MM_TRANS_A))
			SETB(oa, t / TILEB + 2u * q, t % TILEB, ra[q]);
		else
			SETB(oa, t % KS, t / KS + 16u * q, ra[q]);
		if (FLAG(GPO_MM_TRANS_B))
			SETB(ob, t % KS, t / KS + 16u * q, rb[q]);
		else
			SETB(ob, t / TILEB + 2u * q, t % TILEB, rb[q]);
	}
}

/*
 * Each invocation holds 8 x 8 elements: rows 4 ty .. 4 ty + 3 and
 * 64 + 4 ty .. 64 + 4 ty + 3, columns likewise with tx, so that a
 * subgroup's vec4 reads of a slice row are consecutive (no bank
 * conflicts): 64 fmas for 4 vec4 reads a p. The slices are double-
 * buffered, one barrier a step: a step stages into the buffer the
 * previous step did not read.
 */
void main_big(uint z, uint rem)
{
	uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
	uint buf = 0u;
	float ra[8], rb[8];
	vec4 acc[16];

	i0 = rem / args.tiles_n * TILEB;
	j0 = rem % args.tiles_n * TILEB;
	abase = args.off_a + z * args.bsa;
	bbase = args.off_b + z * args.bsb;
	for (uint r = 0u; r < 16u; r++)
		acc[r] = vec4(0.0);
	if (args.k > 0u) {
		fetch_big(0u, ra, rb);
		stage_big(0u, ra, rb);
		group_sync();
	}
	for (uint p0 = 0u; p0 < args.k;
	     p0 = args.k - p0 > KS ? p0 + KS : args.k) {
		uint oa = buf * 2u * SLICEB, ob = oa + SLICEB;
		bool more = args.k - p0 > KS;

		/* the next step's loads fly while this one multiplies */
		if (more)
			fetch_big(p0 + KS, ra, rb);
		for (uint p = 0u; p < KS; p++) {
			uint rowv = p * LDSB / 4u;
			vec4 a0 = sm4[oa + rowv + ty];
			vec4 a1 = sm4[oa + rowv + 16u + ty];
			vec4 b0 = sm4[ob + rowv + tx];
			vec4 b1 = sm4[ob + rowv + 16u + tx];

			acc[0] += a0.x * b0;
			acc[1] += a0.x * b1;
			acc[2] += a0.y * b0;
			acc[3] += a0.y * b1;
			acc[4] += a0.z * b0;
			acc[5] += a0.z * b1;
			acc[6] += a0.w * b0;
			acc[7] += a0.w * b1;
			acc[8] += a1.x * b0;
			acc[9] += a1.x * b1;
			acc[10] += a1.y * b0;
			acc[11] += a1.y * b1;
			acc[12] += a1.z * b0;
			acc[13] += a1.z * b1;
			acc[14] += a1.w * b0;
			acc[15] += a1.w * b1;
		}
		if (more)
			stage_big(buf ^ 1u, ra, rb);
		group_sync();
		buf ^= 1u;
	}
	for (uint r = 0u; r < 8u; r++) {
		uint i = i0 + (r < 4u ? 4u * ty + r : 64u + 4u * ty + r - 4u);
		uint cb = args.off_c + z * args.bsc + i * args.ldc;

		if (i >= args.m)
			continue;
		for (uint h = 0u; h < 2u; h++)
			for (uint q = 0u; q < 4u; q++) {
				uint j = j0 + 64u * h + 4u * tx + q;

				if (j < args.n)
					STORE(c, cb + j,
					      args.alpha * acc[2u * r + h][q]);
			}
	}
}

void main()
{
	uint g = group_index(), t = gl_LocalInvocationID.x;
	uint tiles = args.tiles_m * args.tiles_n, z, rem;
	uint tx = t % 16u, ty = t / 16u;
	float ra[RB], rb[RB];
	vec4 acc[RB];

	if (g >= args.batch * tiles)
		return;
	z = g / tiles;
	rem = g % tiles;
	if (FLAG(GPO_MM_BIG)) {
		main_big(z, rem);
		return;
	}
	i0 = rem / args.tiles_n * TILE;
	j0 = rem % args.tiles_n * TILE;
	abase = args.off_a + z * args.bsa;
	bbase = args.off_b + z * args.bsb;
	for (uint r = 0u; r < RB; r++)
		acc[r] = vec4(0.0);
	/* p0 + KS may pass 2^32 for a k near it: p0 never steps past k */
	for (uint p0 = 0u; p0 < args.k;
	     p0 = args.k - p0 > KS ? p0 + KS : args.k) {
		if (p0 == 0u)
			fetch(0u, ra, rb);
		stage(ra, rb);
		group_sync();
		/* the next step's loads fly while this one multiplies */
		if (args.k - p0 > KS)
			fetch(p0 + KS, ra, rb);
		for (uint p = 0u; p < KS; p++) {
			vec4 av = sm4[(p * LDS + RB * ty) >> 2];
			vec4 bv = sm4[BS4 + ((p * LDS + RB * tx) >> 2)];

			acc[0] += av.x * bv;
			acc[1] += av.y * bv;
			acc[2] += av.z * bv;
			acc[3] += av.w * bv;
		}
		group_sync();
	}
	for (uint r = 0u; r < RB; r++) {
		uint i = i0 + RB * ty + r;
		uint cb = args.off_c + z * args.bsc + i * args.ldc;

		if (i >= args.m)
			break;
		for (uint q = 0u; q < RB; q++) {
			uint j = j0 + RB * tx + q;

			if (j < args.n)
				STORE(c, cb + j, args.alpha * acc[r][q]);
		}
	}
}
