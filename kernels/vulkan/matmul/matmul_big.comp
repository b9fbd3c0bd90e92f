// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * matmul_big.comp - matmul_big: C_z (+)= alpha * op(A_z) op(B_z)
 * (abi/matmul.h), one 128 x 128 tile of one C_z a workgroup.
 *
 * The 256 invocations are a 16 x 16 grid; (tx, ty) holds the 8 x 8 block
 * of rows 4 ty .. 4 ty + 3 and 64 + 4 ty .. 64 + 4 ty + 3, columns
 * likewise with tx, so that a subgroup's vec4 reads of a slice row are
 * consecutive words. The accumulators are 16 named vec4s, never an
 * array: nothing indexes registers at run time, and no loop needs to be
 * unrolled for them to stay in registers.
 *
 * k goes by in steps of BKS, the slices of op(A) and op(B) stored k-major
 * in shared memory and double-buffered: step s multiplies buffer s % 2
 * while the next step's elements, fetched into registers before the
 * multiply, are stored into the other; one barrier a step. Each
 * invocation fetches four elements of each slice along the direction
 * that is contiguous in memory (as matmul.comp). Elements past m, n or k
 * load as 0, results past m or n are not stored; every element of C is
 * a chain of fma over p = 0, 1, ..., k - 1 in order.
 *
 * GPO_MM_VEC_* is ignored here: a version with vec4 loads and 16-deep
 * slices (as the OpenCL kernel has) ran at 14 TFLOP/s on an H100 against
 * this one's 24 (bench/results/issue10-h100-sgemm2.txt).
 */
#version 450
#include "common.glsl"
#include "abi/matmul.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, a);
FLOAT_IN(1, b);
FLOAT_BUF(2, c);

#define TB	128u
#define BKS	8u		/* k a step */
/* a slice row of 128 floats padded to 132: stores along p miss banks */
#define LDB	(TB + 4u)
#define BSL	(BKS * LDB)	/* one slice, floats */

/* buffer x: op(A)'s slice at 2 x BSL floats, op(B)'s right after */
shared vec4 sm4[4u * BSL / 4u];

/* element o (in floats) of the shared slices */
#define SET(o, v)	sm4[(o) >> 2][(o) & 3u] = (v)

uint i0, j0, abase, bbase;

/*
 * This invocation's four elements of the step at @p0 of op(A), then of
 * op(B), 0 outside the matrices. Without GPO_MM_TRANS_A, A[i][p] is read
 * along p, 8 invocations a row: (i, p) = (t / 8 + 32 q, t % 8); with it,
 * along i: (i, p) = (t % 128, t / 128 + 2 q). B likewise, the other way
 * round.
 */
void fetch(uint p0, out vec4 ra, out vec4 rb)
{
	uint t = gl_LocalInvocationID.x;

	for (uint q = 0u; q < 4u; q++) {
		uint i, p;
		float v = 0.0;

		if (FLAG(GPO_MM_TRANS_A)) {
			i = i0 + t % TB;
			p = p0 + t / TB + 2u * q;
		} else {
			i = i0 + t / BKS + 32u * q;
			p = p0 + t % BKS;
		}
		if (i < args.m && p < args.k)
			v = FLAG(GPO_MM_TRANS_A) ? a[abase + p * args.lda + i] :
						   a[abase + i * args.lda + p];
		ra[q] = v;
	}
	for (uint q = 0u; q < 4u; q++) {
		uint j, p;
		float v = 0.0;

		if (FLAG(GPO_MM_TRANS_B)) {
			j = j0 + t / BKS + 32u * q;
			p = p0 + t % BKS;
		} else {
			j = j0 + t % TB;
			p = p0 + t / TB + 2u * q;
		}
		if (j < args.n && p < args.k)
			v = FLAG(GPO_MM_TRANS_B) ? b[bbase + j * args.ldb + p] :
						   b[bbase + p * args.ldb + j];
		rb[q] = v;
	}
}

/* fetch()'s elements into buffer @x, at the places fetch() took them */
void stage(uint x, vec4 ra, vec4 rb)
{
	uint t = gl_LocalInvocationID.x, sa = x * 2u * BSL, sb = sa + BSL;

	for (uint q = 0u; q < 4u; q++) {
		if (FLAG(GPO_MM_TRANS_A))
			SET(sa + (t / TB + 2u * q) * LDB + t % TB, ra[q]);
		else
			SET(sa + (t % BKS) * LDB + t / BKS + 32u * q, ra[q]);
		if (FLAG(GPO_MM_TRANS_B))
			SET(sb + (t % BKS) * LDB + t / BKS + 32u * q, rb[q]);
		else
			SET(sb + (t / TB + 2u * q) * LDB + t % TB, rb[q]);
	}
}

/* row x of the block: av times the 8 columns b0, b1 */
#define ROW(lo, hi, av) \
	lo = fma(vec4(av), b0, lo); \
	hi = fma(vec4(av), b1, hi)

/* four results of row i from column j on, those inside C */
void put4(uint cb, uint j, vec4 v)
{
	for (uint q = 0u; q < 4u; q++)
		if (j + q < args.n)
			STORE(c, cb + j + q, args.alpha * v[q]);
}

/* local row @r of the block: columns j0 + 4 tx .. and j0 + 64 + 4 tx .. */
void put_row(uint z, uint r, uint tx, vec4 lo, vec4 hi)
{
	uint i = i0 + r, cb = args.off_c + z * args.bsc + i * args.ldc;

	if (i < args.m) {
		put4(cb, j0 + 4u * tx, lo);
		put4(cb, j0 + 64u + 4u * tx, hi);
	}
}

void main()
{
	uint g = group_index(), t = gl_LocalInvocationID.x;
	uint tiles = args.tiles_m * args.tiles_n, z, rem, x = 0u;
	uint tx = t % 16u, ty = t / 16u;
	vec4 ra, rb;
	vec4 c00 = vec4(0.0), c01 = vec4(0.0), c10 = vec4(0.0), c11 = vec4(0.0);
	vec4 c20 = vec4(0.0), c21 = vec4(0.0), c30 = vec4(0.0), c31 = vec4(0.0);
	vec4 c40 = vec4(0.0), c41 = vec4(0.0), c50 = vec4(0.0), c51 = vec4(0.0);
	vec4 c60 = vec4(0.0), c61 = vec4(0.0), c70 = vec4(0.0), c71 = vec4(0.0);

	if (g >= args.batch * tiles)
		return;
	z = g / tiles;
	rem = g % tiles;
	i0 = rem / args.tiles_n * TB;
	j0 = rem % args.tiles_n * TB;
	abase = args.off_a + z * args.bsa;
	bbase = args.off_b + z * args.bsb;
	if (args.k > 0u) {
		fetch(0u, ra, rb);
		stage(0u, ra, rb);
		group_sync();
	}
	/* p0 + BKS may pass 2^32 for a k near it: p0 never steps past k */
	for (uint p0 = 0u; p0 < args.k;
	     p0 = args.k - p0 > BKS ? p0 + BKS : args.k) {
		uint ao = (x * 2u * BSL + 4u * ty) >> 2;
		uint bo = (x * 2u * BSL + BSL + 4u * tx) >> 2;
		bool more = args.k - p0 > BKS;

		/* the next step's loads fly while this one multiplies */
		if (more)
			fetch(p0 + BKS, ra, rb);
		for (uint p = 0u; p < BKS; p++) {
			uint o = p * (LDB / 4u);
			vec4 a0 = sm4[ao + o], a1 = sm4[ao + o + 16u];
			vec4 b0 = sm4[bo + o], b1 = sm4[bo + o + 16u];

			ROW(c00, c01, a0.x);
			ROW(c10, c11, a0.y);
			ROW(c20, c21, a0.z);
			ROW(c30, c31, a0.w);
			ROW(c40, c41, a1.x);
			ROW(c50, c51, a1.y);
			ROW(c60, c61, a1.z);
			ROW(c70, c71, a1.w);
		}
		if (more)
			stage(x ^ 1u, ra, rb);
		group_sync();
		x ^= 1u;
	}
	put_row(z, 4u * ty, tx, c00, c01);
	put_row(z, 4u * ty + 1u, tx, c10, c11);
	put_row(z, 4u * ty + 2u, tx, c20, c21);
	put_row(z, 4u * ty + 3u, tx, c30, c31);
	put_row(z, 64u + 4u * ty, tx, c40, c41);
	put_row(z, 64u + 4u * ty + 1u, tx, c50, c51);
	put_row(z, 64u + 4u * ty + 2u, tx, c60, c61);
	put_row(z, 64u + 4u * ty + 3u, tx, c70, c71);
}
