// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
// glslc: -O0
/*
 * matmul_big.comp - matmul_big: C_z (+)= alpha * op(A_z) op(B_z)
 * (abi/matmul.h), one 128 x 128 tile of one C_z a workgroup.
 *
 * The 256 invocations are a 16 x 16 grid; (tx, ty) holds the 8 x 8 block
 * of rows 4 ty .. 4 ty + 3 and 64 + 4 ty .. 64 + 4 ty + 3, columns
 * likewise with tx, so that a subgroup's vec4 reads of a slice row are
 * consecutive words. The accumulators are 16 named vec4s, never an
 * array: nothing indexes registers at run time.
 *
 * k goes by in steps of BKS, the slices of op(A) and op(B) stored k-major
 * in shared memory and double-buffered: step s multiplies buffer s % 2
 * while the next step's elements, fetched into registers before the
 * multiply, are stored into the other before its last row; one barrier a
 * step. Where matters on an H200 (2026-11-29, calls 52-53 of
 * bench/results/issue11-h200-2026-11-29.txt): the byte GPT's products
 * took 33.6 ms a step storing after the last row, 32.5 before it, 34.7
 * half-way, 37.4 before row 1 (OpenCL's kernel stores a quarter of the
 * way: each compiler has its own best place). Each
 * invocation fetches BNQ elements of each slice along the direction that
 * is contiguous in memory (as matmul.comp), as vec4s where GPO_MM_VEC_*
 * says the operand allows it (element by element where one would cross
 * an edge). Elements past m, n or k load as 0, results past m or n are
 * not stored; every element of C is a chain of fma over p = 0, 1, ...,
 * k - 1 in order.
 *
 * A pipeline may carry its flags (GPO_T_ACCUM, GPO_MM_TRANS_*,
 * GPO_MM_VEC_*) as specialization constant 4, with GPO_MM_SPEC: the
 * driver then compiles that set's loads and stores alone, not branches on
 * args.flags. backend/vulkan/pipeline.c's mm_spec() says which products
 * get one, and why.
 *
 * Every loop over registers is unrolled ([[unroll]]): one left to the
 * driver indexes its vectors at run time. Without that a version with
 * vec4 loads and 16-deep slices ran at 14 TFLOP/s on an H100 against the
 * scalar 8-deep one's 24 (bench/results/issue10-h100-sgemm2.txt). On an
 * H200 (2026-11-29, bench/results/issue11-h200-2026-11-29.txt), SGEMM
 * 4096: 8-deep with vec4 loads 34.1 TFLOP/s (127 registers: two groups a
 * multiprocessor), 16-deep 27.2 (165 registers, one group), the scalar
 * 8-deep kernel before 27.1, 8-deep without vec4 loads 25.4.
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/matmul.h"
#include "group.glsl"
#include "tensor.glsl"

/* this pipeline's flags, if it has them (GPO_MM_SPEC), for args.flags */
layout(constant_id = 4) const uint GPO_MM_FLAGS = 0u;
#undef FLAG
#define FLAG(f)	((GPO_MM_FLAGS & GPO_MM_SPEC) != 0u ? \
		 (GPO_MM_FLAGS & (f)) != 0u : (args.flags & (f)) != 0u)

FLOAT_IN(0, a);
FLOAT_IN(1, b);
FLOAT_BUF(2, c);
layout(set = 0, binding = 0, std430) readonly buffer a_r4 { vec4 a4[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_r4 { vec4 b4[]; };

#define TB	128u
#ifndef BKS
#define BKS	8u		/* k a step */
#endif
/* the elements of a slice an invocation stages */
#define BNQ	(TB * BKS / 256u)
/* a slice row of 128 floats padded to 132: stores along p miss banks */
#define LDB	(TB + 4u)
#define BSL	(BKS * LDB)	/* one slice, floats */

/* buffer x: op(A)'s slice at 2 x BSL floats, op(B)'s right after */
shared vec4 sm4[4u * BSL / 4u];

/* element o (in floats) of the shared slices */
#define SET(o, v)	sm4[(o) >> 2][(o) & 3u] = (v)

uint i0, j0, abase, bbase;

/*
 * Where element q of this invocation's share of a step lies: along the
 * slice's side (i or j) at @s, along k at @p, both from the step's
 * corner. Operand "rows" (k contiguous: A, or B with GPO_MM_TRANS_B):
 * BKS invocations a row, (s, p) = (t / BKS + q 256 / BKS, t % BKS);
 * "cols" (the side contiguous): (t % TB, t / TB + q 256 / TB). With vec4s
 * (@q counting them) the same with 4 elements in the contiguous
 * direction.
 */
void place(bool rows, bool vec, uint q, out uint s, out uint p)
{
	uint t = gl_LocalInvocationID.x;

	if (vec && rows) {
		s = t / (BKS / 4u) + q * (256u / (BKS / 4u));
		p = 4u * (t % (BKS / 4u));
	} else if (vec) {
		s = 4u * (t % (TB / 4u));
		p = t / (TB / 4u) + q * (256u / (TB / 4u));
	} else if (rows) {
		s = t / BKS + q * (256u / BKS);
		p = t % BKS;
	} else {
		s = t % TB;
		p = t / TB + q * (256u / TB);
	}
}

/* element (i, p) of op(A), 0 outside it */
float elem_a(uint i, uint p)
{
	if (i >= args.m || p >= args.k)
		return 0.0;
	return FLAG(GPO_MM_TRANS_A) ? a[abase + p * args.lda + i] :
				      a[abase + i * args.lda + p];
}

/* element (p, j) of op(B), 0 outside it */
float elem_b(uint p, uint j)
{
	if (j >= args.n || p >= args.k)
		return 0.0;
	return FLAG(GPO_MM_TRANS_B) ? b[bbase + j * args.ldb + p] :
				      b[bbase + p * args.ldb + j];
}

/* this invocation's BNQ elements of the step at @p0 of op(A), op(B) */
void fetch(uint p0, out float ra[BNQ], out float rb[BNQ])
{
	bool rows_a = !FLAG(GPO_MM_TRANS_A), rows_b = FLAG(GPO_MM_TRANS_B);
	bool va = FLAG(GPO_MM_VEC_A), vb = FLAG(GPO_MM_VEC_B);
	uint s, p;

	if (va) {
		[[unroll]] for (uint q = 0u; q < BNQ / 4u; q++) {
			vec4 v;
			uint i;

			place(rows_a, true, q, s, p);
			i = i0 + s;
			p += p0;
			if (rows_a ? i < args.m && p + 3u < args.k :
				     i + 3u < args.m && p < args.k)
				v = a4[(rows_a ? abase + i * args.lda + p :
					abase + p * args.lda + i) >> 2];
			else if (rows_a)
				v = vec4(elem_a(i, p), elem_a(i, p + 1u),
					 elem_a(i, p + 2u), elem_a(i, p + 3u));
			else
				v = vec4(elem_a(i, p), elem_a(i + 1u, p),
					 elem_a(i + 2u, p), elem_a(i + 3u, p));
			[[unroll]] for (uint e = 0u; e < 4u; e++)
				ra[4u * q + e] = v[e];
		}
	} else {
		[[unroll]] for (uint q = 0u; q < BNQ; q++) {
			place(rows_a, false, q, s, p);
			ra[q] = elem_a(i0 + s, p0 + p);
		}
	}
	if (vb) {
		[[unroll]] for (uint q = 0u; q < BNQ / 4u; q++) {
			vec4 v;
			uint j;

			place(rows_b, true, q, s, p);
			j = j0 + s;
			p += p0;
			if (rows_b ? j < args.n && p + 3u < args.k :
				     j + 3u < args.n && p < args.k)
				v = b4[(rows_b ? bbase + j * args.ldb + p :
					bbase + p * args.ldb + j) >> 2];
			else if (rows_b)
				v = vec4(elem_b(p, j), elem_b(p + 1u, j),
					 elem_b(p + 2u, j), elem_b(p + 3u, j));
			else
				v = vec4(elem_b(p, j), elem_b(p, j + 1u),
					 elem_b(p, j + 2u), elem_b(p, j + 3u));
			[[unroll]] for (uint e = 0u; e < 4u; e++)
				rb[4u * q + e] = v[e];
		}
	} else {
		[[unroll]] for (uint q = 0u; q < BNQ; q++) {
			place(rows_b, false, q, s, p);
			rb[q] = elem_b(p0 + p, j0 + s);
		}
	}
}

/* one operand's elements into slice @so, at the places fetch() took them */
void stage_one(uint so, bool rows, bool vec, float r[BNQ])
{
	uint s, p;

	if (vec && !rows) {
		/* four neighbours along the side: one vec4 */
		[[unroll]] for (uint q = 0u; q < BNQ / 4u; q++) {
			place(rows, true, q, s, p);
			sm4[(so + p * LDB + s) >> 2] =
				vec4(r[4u * q], r[4u * q + 1u],
				     r[4u * q + 2u], r[4u * q + 3u]);
		}
	} else if (vec) {
		[[unroll]] for (uint q = 0u; q < BNQ / 4u; q++) {
			place(rows, true, q, s, p);
			[[unroll]] for (uint e = 0u; e < 4u; e++)
				SET(so + (p + e) * LDB + s, r[4u * q + e]);
		}
	} else {
		[[unroll]] for (uint q = 0u; q < BNQ; q++) {
			place(rows, false, q, s, p);
			SET(so + p * LDB + s, r[q]);
		}
	}
}

/* fetch()'s elements into buffer @x */
void stage(uint x, float ra[BNQ], float rb[BNQ])
{
	uint sa = x * 2u * BSL;

	stage_one(sa, !FLAG(GPO_MM_TRANS_A), FLAG(GPO_MM_VEC_A), ra);
	stage_one(sa + BSL, FLAG(GPO_MM_TRANS_B), FLAG(GPO_MM_VEC_B), rb);
}

/* row x of the block: av times the 8 columns b0, b1 */
#define ROW(lo, hi, av) \
	lo = fma(vec4(av), b0, lo); \
	hi = fma(vec4(av), b1, hi)

/* four results of row i from column j on, those inside C */
void put4(uint cb, uint j, vec4 v)
{
	[[unroll]] for (uint q = 0u; q < 4u; q++)
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
	float ra[BNQ], rb[BNQ];
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
		[[unroll]] for (uint p = 0u; p < BKS; p++) {
			uint o = p * (LDB / 4u);

			/* the next step into the other buffer (see above) */
			if (p == BKS - 1u && more)
				stage(x ^ 1u, ra, rb);
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
