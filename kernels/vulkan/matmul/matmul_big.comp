// SPDX-License-Identifier: MIT
// dtypes: f32
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
 * invocation fetches eight elements of each slice along the direction
 * that is contiguous in memory (as matmul.comp), as two vec4s where the
 * engine says the operand allows it (GPO_MM_VEC_*). Elements past m, n or k
 * load as 0, results past m or n are not stored; every element of C is
 * a chain of fma over p = 0, 1, ..., k - 1 in order.
 */
#version 450
#include "common.glsl"
#include "abi/matmul.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, a);
FLOAT_IN(1, b);
FLOAT_BUF(2, c);
/* a and b 4 floats at a time, for GPO_MM_VEC_A and GPO_MM_VEC_B */
layout(set = 0, binding = 0, std430) readonly buffer a_v4 { vec4 a4[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_v4 { vec4 b4[]; };

#define TB	128u
#define BKS	16u		/* k a step */
/* a slice row of 128 floats padded to 132: stores along p miss banks */
#define LDB	(TB + 4u)
#define BSL	(BKS * LDB)	/* one slice, floats */

/* buffer x: op(A)'s slice at 2 x BSL floats, op(B)'s right after */
shared vec4 sm4[4u * BSL / 4u];

/* element o (in floats) of the shared slices */
#define SET(o, v)	sm4[(o) >> 2][(o) & 3u] = (v)

uint i0, j0, abase, bbase;

/*
 * Where this invocation's q-th element (scalar: q < 8) or 4-vector
 * (vec: q < 2) of a step's slice lies, as (row of op(M), p) relative to
 * the tile and the step. @along_p: the slice is read along p (A plain,
 * B transposed); else along the row index. Scalar, along p: 16
 * invocations a row, (t / 16 + 16 q, t % 16); along the rows,
 * (t % 128, t / 128 + 2 q). Vec, along p: (t / 4 + 64 q, 4 (t % 4));
 * along the rows: (4 (t % 32), t / 32 + 8 q).
 */
uvec2 place(bool vec, bool along_p, uint q)
{
	uint t = gl_LocalInvocationID.x;

	if (vec)
		return along_p ? uvec2(t / 4u + 64u * q, 4u * (t % 4u)) :
				 uvec2(4u * (t % 32u), t / 32u + 8u * q);
	return along_p ? uvec2(t / BKS + 16u * q, t % BKS) :
			 uvec2(t % TB, t / TB + 2u * q);
}

/*
 * This invocation's 8 elements of the step at @p0 of op(A) into ra, of
 * op(B) into rb, 0 outside the matrices: read along the direction that
 * is contiguous in memory, 4 at a time with GPO_MM_VEC_A (_B) except
 * where 4 would cross an edge.
 */
void fetch(uint p0, out vec4 ra[2], out vec4 rb[2])
{
	bool va = FLAG(GPO_MM_VEC_A), vb = FLAG(GPO_MM_VEC_B);
	bool pa = !FLAG(GPO_MM_TRANS_A), pb = FLAG(GPO_MM_TRANS_B);

	for (uint q = 0u; q < 8u; q++) {
		uvec2 w = place(va, pa, va ? q / 4u : q);
		uint e = va ? q % 4u : 0u, i = i0 + w.x, p = p0 + w.y;
		uint o = pa ? abase + i * args.lda + p :
			      abase + p * args.lda + i;
		bool full = pa ? i < args.m && p + 3u < args.k :
				 i + 3u < args.m && p < args.k;
		float v = 0.0;

		if (va && full) {
			if (e == 0u)
				ra[q / 4u] = a4[o >> 2];
			continue;
		}
		if (va) {
			o += e;
			if (pa)
				p += e;
			else
				i += e;
		}
		if (i < args.m && p < args.k)
			v = a[o];
		ra[q / 4u][q % 4u] = v;
	}
	for (uint q = 0u; q < 8u; q++) {
		uvec2 w = place(vb, pb, vb ? q / 4u : q);
		uint e = vb ? q % 4u : 0u, j = j0 + w.x, p = p0 + w.y;
		uint o = pb ? bbase + j * args.ldb + p :
			      bbase + p * args.ldb + j;
		bool full = pb ? j < args.n && p + 3u < args.k :
				 j + 3u < args.n && p < args.k;
		float v = 0.0;

		if (vb && full) {
			if (e == 0u)
				rb[q / 4u] = b4[o >> 2];
			continue;
		}
		if (vb) {
			o += e;
			if (pb)
				p += e;
			else
				j += e;
		}
		if (j < args.n && p < args.k)
			v = b[o];
		rb[q / 4u][q % 4u] = v;
	}
}

/* one slice's 8 elements into the slice at @s, where fetch() took them */
void stage1(uint s, bool vec, bool along_p, vec4 r[2])
{
	for (uint q = 0u; q < 8u; q++) {
		uvec2 w = place(vec, along_p, vec ? q / 4u : q);
		uint e = vec ? q % 4u : 0u;

		/* (row, p) goes to p-major (p, row) */
		if (vec && !along_p)
			SET(s + w.y * LDB + w.x + e, r[q / 4u][q % 4u]);
		else if (vec)
			SET(s + (w.y + e) * LDB + w.x, r[q / 4u][q % 4u]);
		else
			SET(s + w.y * LDB + w.x, r[q / 4u][q % 4u]);
	}
}

/* fetch()'s elements into buffer @x */
void stage(uint x, vec4 ra[2], vec4 rb[2])
{
	stage1(x * 2u * BSL, FLAG(GPO_MM_VEC_A), !FLAG(GPO_MM_TRANS_A), ra);
	stage1(x * 2u * BSL + BSL, FLAG(GPO_MM_VEC_B), FLAG(GPO_MM_TRANS_B),
	       rb);
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
	vec4 ra[2], rb[2];
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
