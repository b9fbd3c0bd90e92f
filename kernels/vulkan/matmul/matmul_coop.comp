// SPDX-License-Identifier: MIT
// dtypes: f32
/*
 * matmul_coop.comp - matmul_coop: C_z (+)= alpha * op(A_z) op(B_z)
 * (abi/matmul.h) on cooperative matrices (GL_NV_cooperative_matrix,
 * tensor cores), one 128 x 128 tile of one C_z a workgroup. Built
 * everywhere, run only where the device lists f16 x f16 + f32 fragments
 * of 16 x 16 x 16 (backend/vulkan/device.c's probe; pipeline.c).
 *
 * The 8 subgroups of 32 are a 2 x 4 grid over the tile: each holds a
 * 64 x 32 block as 4 x 2 accumulator fragments of 16 x 16 f32. k goes by
 * in steps of BK = 32; the step's 128 x BK slice of op(A) (row-major,
 * k along a row) and BK x 128 slice of op(B) (k-major) are staged in
 * shared memory as float16_t, double-buffered: the next step's elements
 * are fetched into registers before this step's fragments multiply and
 * stored into the other buffer after, one barrier a step. Each
 * invocation fetches 16 elements of each slice along the direction that
 * is contiguous in memory, so neighbours read neighbouring words
 * whatever the transposes. Elements past m, n or k load as 0.
 *
 * Operands are f16 (GPO_MM_F16_*), their bits taken as they are, or f32
 * rounded to the nearest binary16 by integer code (half.glsl), never by
 * a float16_t conversion whose rounding is the driver's: the products
 * are those of the other kernels.
 *
 * Results: a tile inside C goes from the fragments straight to memory
 * (times alpha) where C's rows start on 16 bytes; a tile on C's edge,
 * one of a C that is not so aligned, and every tile with GPO_T_ACCUM,
 * goes a fragment at a time through shared memory, element by element
 * with guards. (Adding C's fragment to the result as matrices crashes
 * glslc 2023.2's optimizer, as does a fragment passed to a function.)
 */
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#include "abi/matmul.h"

layout(constant_id = 0) const uint GPO_GROUP_ROW = 65535u;

layout(set = 0, binding = 0, std430) readonly buffer a_r1 { float a[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_r1 { float b[]; };
layout(set = 0, binding = 2, std430) buffer c_f1 { float c[]; };
/* the operands as words: binary16 two a word (GPO_MM_F16_*) */
layout(set = 0, binding = 0, std430) readonly buffer a_h { uint a_w[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_h { uint b_w[]; };
#include "matmul/half.glsl"

#define TB	128u		/* the tile */
#define BK	32u		/* k a step */
#define FR	16u		/* a fragment's side */
#define NQ	16u		/* elements of a slice an invocation stages */
/*
 * Slice rows padded by 8 halves: rows, fragments and buffers all start on
 * 16 bytes, as cooperative matrix loads want, and rows miss each other's
 * banks
 */
#define LDA	(BK + 8u)	/* op(A)'s slice: 128 rows of BK */
#define LDBS	(TB + 8u)	/* op(B)'s slice: BK rows of 128 */
#define SA	(TB * LDA)	/* one buffer of op(A), halves */
#define SB	(BK * LDBS)

/*
 * Subgroup fragments. glslang declares the Vulkan memory model for any
 * cooperative matrix: the device enables it with them (device.c).
 */
#define FRAG_H	fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_F	fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

shared float16_t sa[2u * SA];
shared float16_t sb[2u * SB];
/* an edge tile's fragments on their way out, one 16 x 16 a subgroup */
shared float cs[8u * FR * FR];

uint i0, j0, abase, bbase;
/*
 * The accumulators, 2 r + q for the fragment at rows 16 r, columns 16 q
 * of the subgroup's block. Here rather than a parameter of put(): glslc
 * 2023.2's optimizer crashes on a cooperative matrix passed to a
 * function.
 */
FRAG_F acc[8];

uint group_index()
{
	return gl_WorkGroupID.y * GPO_GROUP_ROW + gl_WorkGroupID.x;
}

/*
 * Element @e of operand a (b) as float16_t: binary16 bits as they are
 * (unpackFloat2x16 reinterprets, it does not convert), or the f32 value's
 * nearest binary16 by half.glsl's integer rounding. No f32 in between:
 * the staging is most of this kernel's arithmetic.
 */
float16_t ld_a(uint e)
{
	if (FLAG(GPO_MM_F16_A))
		return unpackFloat2x16(a_w[e >> 1])[e & 1u];
	return unpackFloat2x16(mm_f2h(a[e])).x;
}

float16_t ld_b(uint e)
{
	if (FLAG(GPO_MM_F16_B))
		return unpackFloat2x16(b_w[e >> 1])[e & 1u];
	return unpackFloat2x16(mm_f2h(b[e])).x;
}

/*
 * This invocation's elements of the step at @p0. Without
 * GPO_MM_TRANS_A, A[i][p] is read along p, BK invocations a row:
 * (i, p) = (t / BK + 8 q, t % BK); with it along i: (t % 128,
 * t / 128 + 2 q). B likewise, the other way round.
 */
void fetch(uint p0, out float16_t ra[NQ], out float16_t rb[NQ])
{
	uint t = gl_LocalInvocationID.x;

	for (uint q = 0u; q < NQ; q++) {
		uint i, p;
		float16_t v = float16_t(0.0);

		if (FLAG(GPO_MM_TRANS_A)) {
			i = i0 + t % TB;
			p = p0 + t / TB + 2u * q;
		} else {
			i = i0 + t / BK + 8u * q;
			p = p0 + t % BK;
		}
		if (i < args.m && p < args.k)
			v = FLAG(GPO_MM_TRANS_A) ?
				ld_a(abase + p * args.lda + i) :
				ld_a(abase + i * args.lda + p);
		ra[q] = v;
	}
	for (uint q = 0u; q < NQ; q++) {
		uint j, p;
		float16_t v = float16_t(0.0);

		if (FLAG(GPO_MM_TRANS_B)) {
			j = j0 + t / BK + 8u * q;
			p = p0 + t % BK;
		} else {
			j = j0 + t % TB;
			p = p0 + t / TB + 2u * q;
		}
		if (j < args.n && p < args.k)
			v = FLAG(GPO_MM_TRANS_B) ?
				ld_b(bbase + j * args.ldb + p) :
				ld_b(bbase + p * args.ldb + j);
		rb[q] = v;
	}
}

/* fetch()'s elements into buffer @x */
void stage(uint x, float16_t ra[NQ], float16_t rb[NQ])
{
	uint t = gl_LocalInvocationID.x, oa = x * SA, ob = x * SB;

	for (uint q = 0u; q < NQ; q++) {
		if (FLAG(GPO_MM_TRANS_A))
			sa[oa + (t % TB) * LDA + t / TB + 2u * q] = ra[q];
		else
			sa[oa + (t / BK + 8u * q) * LDA + t % BK] = ra[q];
		if (FLAG(GPO_MM_TRANS_B))
			sb[ob + (t % BK) * LDBS + t / BK + 8u * q] = rb[q];
		else
			sb[ob + (t / TB + 2u * q) * LDBS + t % TB] = rb[q];
	}
}

void sync()
{
	memoryBarrierShared();
	barrier();
}

/* fragment @f at rows @r, columns @col of the tile (z's C at @cb) */
void put(uint f, uint cb, uint r, uint col, bool inside)
{
	uint sg = gl_SubgroupID, l = gl_SubgroupInvocationID;

	if (inside) {
		uint o = cb + (i0 + r) * args.ldc + j0 + col;
		FRAG_F v = acc[f] * args.alpha;

		coopMatStoreNV(v, c, o, args.ldc, false);
		return;
	}
	coopMatStoreNV(acc[f], cs, sg * FR * FR, FR, false);
	subgroupMemoryBarrierShared();
	subgroupBarrier();
	for (uint e = l; e < FR * FR; e += gl_SubgroupSize) {
		uint i = i0 + r + e / FR, j = j0 + col + e % FR;
		float v = args.alpha * cs[sg * FR * FR + e];

		if (i < args.m && j < args.n) {
			uint o = cb + i * args.ldc + j;

			if (FLAG(GPO_T_ACCUM))
				c[o] += v;
			else
				c[o] = v;
		}
	}
	/* the next fragment overwrites cs: everyone has read this one */
	subgroupMemoryBarrierShared();
	subgroupBarrier();
}

void main()
{
	uint g = group_index(), sg = gl_SubgroupID;
	uint tiles = args.tiles_m * args.tiles_n, z, rem, x = 0u, cb;
	uint wr = (sg / 4u) * 64u, wc = (sg % 4u) * 32u;
	float16_t ra[NQ], rb[NQ];
	bool inside;

	if (g >= args.batch * tiles)
		return;
	z = g / tiles;
	rem = g % tiles;
	i0 = rem / args.tiles_n * TB;
	j0 = rem % args.tiles_n * TB;
	abase = args.off_a + z * args.bsa;
	bbase = args.off_b + z * args.bsb;
	for (uint f = 0u; f < 8u; f++)
		acc[f] = FRAG_F(0.0);
	if (args.k > 0u) {
		fetch(0u, ra, rb);
		stage(0u, ra, rb);
		sync();
	}
	/* p0 + BK may pass 2^32 for a k near it: p0 never steps past k */
	for (uint p0 = 0u; p0 < args.k;
	     p0 = args.k - p0 > BK ? p0 + BK : args.k) {
		bool more = args.k - p0 > BK;

		/* the next step's loads fly while this one multiplies */
		if (more)
			fetch(p0 + BK, ra, rb);
		for (uint kk = 0u; kk < BK; kk += FR) {
			FRAG_H fa[4], fb[2];

			for (uint r = 0u; r < 4u; r++)
				coopMatLoadNV(fa[r], sa, x * SA +
					      (wr + r * FR) * LDA + kk, LDA,
					      false);
			for (uint q = 0u; q < 2u; q++)
				coopMatLoadNV(fb[q], sb, x * SB + kk * LDBS +
					      wc + q * FR, LDBS, false);
			for (uint r = 0u; r < 4u; r++)
				for (uint q = 0u; q < 2u; q++)
					acc[2u * r + q] = coopMatMulAddNV(
						fa[r], fb[q], acc[2u * r + q]);
		}
		if (more)
			stage(x ^ 1u, ra, rb);
		sync();
		x ^= 1u;
	}
	cb = args.off_c + z * args.bsc;
	/* fragments go to memory on 16-byte rows (SPV_NV_cooperative_matrix) */
	inside = i0 + TB <= args.m && j0 + TB <= args.n &&
		 !FLAG(GPO_T_ACCUM) && cb % 4u == 0u && args.ldc % 4u == 0u;
	for (uint r = 0u; r < 4u; r++)
		for (uint q = 0u; q < 2u; q++)
			put(2u * r + q, cb, wr + r * FR, wc + q * FR, inside);
}
