/* SPDX-License-Identifier: MIT */
/*
 * tile.glsl - the body of matmul.comp and matmul_half.comp (their
 * comments say what it does): built twice, f32 operands only, and with
 * GPO_MM_HALF defined, the operand loads of half.glsl (binary16 operands,
 * f32 rounded to binary16) whose flag tests and aliased bindings cost
 * the f32 products 40 % on an H100.
 */
#include "common.glsl"
#include "abi/matmul.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, a);
FLOAT_IN(1, b);
FLOAT_BUF(2, c);
#ifdef GPO_MM_HALF
/* the operands as words: binary16 two a word (GPO_MM_F16_*) */
layout(set = 0, binding = 0, std430) readonly buffer a_h
	{ uint a_w[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_h
	{ uint b_w[]; };
#include "matmul/half.glsl"
#else
/* f32 operands as stored: no flag to test, no aliased binding */
#define load_a(e)	a[e]
#define load_b(e)	b[e]
#endif

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

shared vec4 as4[KS * LDS / 4u];
shared vec4 bs4[KS * LDS / 4u];

/* the slices' element (p, i) in the vec4 arrays */
#define SET(s, p, i, v)	s[((p) * LDS + (i)) >> 2][(i) & 3u] = (v)

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
				load_a(abase + p * args.lda + i) :
				load_a(abase + i * args.lda + p);
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
				load_b(bbase + j * args.ldb + p) :
				load_b(bbase + p * args.ldb + j);
	}
}

/* fetch()'s elements into the slices, at the places fetch() took them */
void stage(float ra[RB], float rb[RB])
{
	uint t = gl_LocalInvocationID.x;

	for (uint q = 0u; q < RB; q++) {
		if (FLAG(GPO_MM_TRANS_A))
			SET(as4, t / TILE + 4u * q, t % TILE, ra[q]);
		else
			SET(as4, t % KS, t / KS + 16u * q, ra[q]);
		if (FLAG(GPO_MM_TRANS_B))
			SET(bs4, t % KS, t / KS + 16u * q, rb[q]);
		else
			SET(bs4, t / TILE + 4u * q, t % TILE, rb[q]);
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
			vec4 av = as4[(p * LDS + RB * ty) >> 2];
			vec4 bv = bs4[(p * LDS + RB * tx) >> 2];

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
