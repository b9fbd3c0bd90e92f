// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * matmul_coop.comp - matmul_coop: C_z (+)= alpha * op(A_z) op(B_z)
 * (abi/matmul.h) on cooperative matrices (GL_NV_cooperative_matrix,
 * tensor cores), one tile of TBM x TBN (128 x 256 or 256 x 128: below)
 * of one C_z a workgroup, the tiles of one C_z in groups of SWZ rows of
 * tiles, a column of a group after another, so that the workgroups in
 * flight share their slices of A and B in the cache. Built everywhere, run only where the device lists f16
 * x f16 + f32 fragments of 16 x 16 x 16 (backend/vulkan/device.c's probe;
 * pipeline.c).
 *
 * The 8 subgroups of 32 are a grid over the tile: each holds a WM x WN
 * block (64 x 64) as FA x FB accumulator fragments of 16 x 16 f32. k goes
 * by in steps of BK. A step's TBM x BK slice of op(A) and BK x TBN slice
 * of op(B) are staged in shared memory as binary16, eight to a uvec4
 * "chunk": the next step's chunks are fetched into registers before this
 * step's fragments multiply and stored after, into the same buffer after
 * a barrier (48 KiB of shared memory hold no second one).
 *
 * A chunk is 8 elements that are neighbours in memory, so each operand
 * is staged the way it is stored: "rows" (the tile's rows of BK, k along
 * a row) when k is its contiguous index (A, or B with GPO_MM_TRANS_B),
 * "cols" (BK rows of the tile's side) when the other index is (B, or A
 * with GPO_MM_TRANS_A). The fragment loads read either layout, a
 * transposed one as column-major: no transpose is ever made. 256
 * invocations fetch the chunks of a slice, neighbours taking neighbouring
 * chunks. A whole chunk of an operand that starts on 16 bytes (its offset
 * and leading dimension multiples of 8 binary16 or 4 f32) is one or two
 * vector loads; chunks on the edges (past m, n or k: zeros) and other
 * operands go element by element.
 *
 * Operands are f16 (GPO_MM_F16_*), their bits taken as they are, or f32
 * rounded to the nearest binary16 (ties to even, subnormals kept) by the
 * hardware's conversion, which the module pins to that rounding with
 * SPV_KHR_float_controls' RoundingModeRTE and DenormPreserve for 16 bits
 * (a device runs this kernel only where it honours both: device.c's
 * coop_probe). That is bit for bit half.glsl's integer rounding, which
 * the other kernels use, so the products are theirs; it is one
 * instruction for two elements instead of a dozen for one, and took the
 * f16 MLP 1024x4096x4096x4096x1024 b8192 step on an H100 from 65 to 37
 * ms (2026-11-25). NaNs keep their sign, not their payload.
 *
 * Results: a tile inside C goes from the fragments straight to memory
 * (times alpha) where C's rows start on 16 bytes; a tile on C's edge,
 * one of a C that is not so aligned, and every tile with GPO_T_ACCUM,
 * goes a fragment at a time through shared memory, element by element
 * with guards. The fragments are indexed only by constants (unrolled
 * loops): an array of them indexed at run time would live in local
 * memory. (Adding C's fragment to the result as matrices crashes
 * glslc 2023.2's optimizer, as does a fragment passed to a function.)
 */
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
#include "abi/matmul.h"

layout(constant_id = 0) const uint GPO_GROUP_ROW = 65535u;
/*
 * Specialization constant 4: GPO_MM_SPEC | GPO_MM_WHOLE and the product's
 * flags for a whole product (abi/matmul.h; backend/vulkan/pipeline.c's
 * mm_spec()), else 0. A whole product's pipeline has neither the
 * element-by-element loads of edge chunks nor the guarded stores of edge
 * tiles, and its flags are the driver's constants: on an H200
 * (2026-11-30, bench/results/issue12-h200-2026-11-30.txt) HGEMM 4096 went
 * from 120 to 156 TFLOP/s so, against 131 with the edge code gone but the
 * flags read at run time and 120 with the flags constant but the edge
 * code kept.
 */
layout(constant_id = 4) const uint GPO_MM_FLAGS = 0u;
#undef FLAG
#define WHOLE	((GPO_MM_FLAGS & (GPO_MM_SPEC | GPO_MM_WHOLE)) == \
		 (GPO_MM_SPEC | GPO_MM_WHOLE))
#define FLAG(f)	(WHOLE ? (GPO_MM_FLAGS & (f)) != 0u : (args.flags & (f)) != 0u)

layout(set = 0, binding = 0, std430) readonly buffer a_r1 { float a[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_r1 { float b[]; };
layout(set = 0, binding = 2, std430) buffer c_f1 { float c[]; };
/* the operands as words: binary16 two a word (GPO_MM_F16_*) */
layout(set = 0, binding = 0, std430) readonly buffer a_h { uint a_w[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_h { uint b_w[]; };
/* and as 16-byte vectors, for the whole chunks of aligned operands */
layout(set = 0, binding = 0, std430) readonly buffer a_r4 { vec4 a4[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_r4 { vec4 b4[]; };
layout(set = 0, binding = 0, std430) readonly buffer a_h4 { uvec4 a_w4[]; };
layout(set = 0, binding = 1, std430) readonly buffer b_h4 { uvec4 b_w4[]; };
#include "matmul/half.glsl"

/* f32 -> f16 conversions round to nearest even, f16 subnormals are kept */
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
		     capabilities = [4467], 4462, 16);	/* RoundingModeRTE */
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"],
		     capabilities = [4464], 4459, 16);	/* DenormPreserve */

/*
 * The tile: 128 x 256, or 256 x 128 with GPO_MM_COOP_TALL (emit.c's
 * coop_shape() picks the one that makes the product whole). Its shape is
 * always the constant's: pipeline.c's mm_spec() sets that bit for every
 * pipeline. On an H200 (2026-11-30,
 * bench/results/issue12-h200-2026-11-30-tiles.txt, a standalone kernel of
 * this scheme) 4096^3 f16 went from 225 TFLOP/s in 256 x 128 tiles to 249
 * in 128 x 256, 270 with A fetched two steps deep and 276 with the tiles
 * in groups; tiles of 128 x 128 (4 subgroups, or 8 of 64 x 32) gave
 * 141-183. On the H100 (2026-11-24) 256 x 128 tiles gained nothing from
 * BK 64 in one buffer or BK 32 in two, and 48 KiB of shared memory allows
 * neither in these tiles.
 */
#define TBM	GPO_MM_COOP_TILE_M(GPO_MM_FLAGS)	/* rows */
#define TBN	GPO_MM_COOP_TILE_N(GPO_MM_FLAGS)	/* columns */
#define BK	uint(GPO_MM_COOP_DEPTH)	/* k a step */
/* 16 bytes in binary16 and in f32 elements: aligned operands and C */
#define ALH	uint(GPO_MM_COOP_ALIGN_F16)
#define ALF	uint(GPO_MM_COOP_ALIGN_F32)
#define WM	64u		/* a subgroup's block: rows */
#define WN	64u		/* and columns */
#define SGN	(TBN / WN)	/* subgroups across the tile */
#define FA	(WM / 16u)	/* its fragments of op(A) */
#define FB	(WN / 16u)	/* of op(B) */
#define FR	16u		/* a fragment's side */
#define CPR	(BK / 8u)	/* chunks a "rows" row, a step */
/*
 * A binary16 operand staged "rows" whose side of the tile is 128 (A in
 * 128 x 256 tiles, B^T in 256 x 128 ones) is fetched two steps at a
 * time: rows of 128 bytes, whole cache lines, not 64. Its registers hold
 * both steps' chunks; each step stores the half that is the next step's.
 * (An f32 operand's rows of a step are 128 bytes already, and fetched
 * two deep its loads in flight would take 16 more registers.)
 */
#define ROWS_A	(!FLAG(GPO_MM_TRANS_A))
#define ROWS_B	FLAG(GPO_MM_TRANS_B)
/* (abi/matmul.h; args.flags has the shape's bit too, the constant's) */
#define DEEP_A	GPO_MM_COOP_DEEP_A(WHOLE ? GPO_MM_FLAGS : args.flags)
#define DEEP_B	GPO_MM_COOP_DEEP_B(WHOLE ? GPO_MM_FLAGS : args.flags)
#define CPRA	(DEEP_A ? 2u * CPR : CPR)	/* chunks a fetched row */
#define CPRB	(DEEP_B ? 2u * CPR : CPR)
/* chunks an invocation fetches at once: at most 4 of each operand */
#define CPTA	(TBM * BK / 8u / 256u * (DEEP_A ? 2u : 1u))
#define CPTB	(TBN * BK / 8u / 256u * (DEEP_B ? 2u : 1u))
#define CPT_MAX	4u
/* tiles of SWZ rows of tiles go by together, column after column */
#define SWZ	8u
/*
 * Rows of a staged slice in chunks (8 binary16), padded by one chunk:
 * rows and fragments start on 16 bytes, as cooperative matrix loads
 * want, and neighbouring rows miss each other's banks
 */
#define RS	(CPR + 1u)		/* "rows": k along a row */
#define CSA	(TBM / 8u + 1u)		/* "cols" of op(A): BK rows */
#define CSB	(TBN / 8u + 1u)		/* of op(B) */
#define SA	max(TBM * RS, BK * CSA)	/* op(A)'s slice, chunks */
#define SB	max(TBN * RS, BK * CSB)
/* both slices, in either shape ("rows" is the larger layout) */
#define SAB	((GPO_MM_TILE_COOP_SHORT + GPO_MM_TILE_COOP_LONG) * \
		 (GPO_MM_COOP_DEPTH / 8 + 1))

/*
 * Subgroup fragments. glslang declares the Vulkan memory model for any
 * cooperative matrix: the device enables it with them (device.c).
 *
 * B's fragments are a type of their own: their depth is specialization
 * constant 7, which the host never sets (so 16, as A's). The driver sees
 * the same 16 x 16 x 16 product, but the module then has one matrix type
 * for each use, which coopkhr.c needs to give each its KHR use.
 */
layout(constant_id = 7) const uint GPO_FRAG_KB = 16u;
#define FRAG_A	fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_B	fcoopmatNV<16, gl_ScopeSubgroup, GPO_FRAG_KB, 16>
#define FRAG_F	fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

/* op(A)'s slice from 0, op(B)'s from SA */
shared uvec4 sab[SAB];
/* an edge tile's fragments on their way out, one 16 x 16 a subgroup */
shared float cs[8u * FR * FR];

uint i0, j0, abase, bbase;
bool vec_a, vec_b;

uint group_index()
{
	return gl_WorkGroupID.y * GPO_GROUP_ROW + gl_WorkGroupID.x;
}

/* the nearest binary16s of @x, @y: x in the low half */
uint cvt2(float x, float y)
{
	return packFloat2x16(f16vec2(x, y));
}

/*
 * Element @e of operand a (b) as binary16 bits: as they are, or the f32
 * value's nearest binary16.
 */
uint bits_a(uint e)
{
	if (FLAG(GPO_MM_F16_A))
		return (a_w[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu;
	return cvt2(a[e], 0.0) & 0xffffu;
}

uint bits_b(uint e)
{
	if (FLAG(GPO_MM_F16_B))
		return (b_w[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu;
	return cvt2(b[e], 0.0) & 0xffffu;
}

uvec4 pack8(uint h[8])
{
	return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16),
		     h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

uvec4 pack_f32(vec4 x, vec4 y)
{
	return uvec4(cvt2(x.x, x.y), cvt2(x.z, x.w), cvt2(y.x, y.y),
		     cvt2(y.z, y.w));
}

/*
 * The chunk of operand a (b) at element @e0: its first @cnt elements
 * (neighbours in memory), zeros after. One or two vector loads when the
 * chunk is whole and the operand aligned (vec_a: @e0 then is a multiple
 * of 8 binary16 or 4 f32).
 */
uvec4 chunk_a(uint e0, uint cnt)
{
	uint h[8];

	if (WHOLE || (cnt == 8u && vec_a)) {
		if (FLAG(GPO_MM_F16_A))
			return a_w4[e0 >> 3];
		return pack_f32(a4[e0 >> 2], a4[(e0 >> 2) + 1u]);
	}
	[[unroll]] for (uint q = 0u; q < 8u; q++)
		h[q] = q < cnt ? bits_a(e0 + q) : 0u;
	return pack8(h);
}

uvec4 chunk_b(uint e0, uint cnt)
{
	uint h[8];

	if (WHOLE || (cnt == 8u && vec_b)) {
		if (FLAG(GPO_MM_F16_B))
			return b_w4[e0 >> 3];
		return pack_f32(b4[e0 >> 2], b4[(e0 >> 2) + 1u]);
	}
	[[unroll]] for (uint q = 0u; q < 8u; q++)
		h[q] = q < cnt ? bits_b(e0 + q) : 0u;
	return pack8(h);
}

/* the elements left of @len from @x, at most a chunk's */
uint left(uint x, uint len)
{
	return x < len ? min(8u, len - x) : 0u;
}

/*
 * Chunk @ch of the fetch at @p0: in "rows" (k contiguous) chunk ch is
 * row ch / CPRA, chunk ch % CPRA of the row (CPRA: 4 a step, 8 for two);
 * in "cols" row (k) ch / (T / 8), chunk ch % (T / 8), T the tile's side.
 */
uvec4 fetch_a(uint p0, uint ch)
{
	uint i, p;

	if (!ROWS_A) {
		p = p0 + ch / (TBM / 8u);
		i = i0 + ch % (TBM / 8u) * 8u;
		return chunk_a(abase + p * args.lda + i,
			       p < args.k ? left(i, args.m) : 0u);
	}
	i = i0 + ch / CPRA;
	p = p0 + (ch % CPRA) * 8u;
	return chunk_a(abase + i * args.lda + p,
		       i < args.m ? left(p, args.k) : 0u);
}

uvec4 fetch_b(uint p0, uint ch)
{
	uint j, p;

	if (ROWS_B) {
		j = j0 + ch / CPRB;
		p = p0 + (ch % CPRB) * 8u;
		return chunk_b(bbase + j * args.ldb + p,
			       j < args.n ? left(p, args.k) : 0u);
	}
	p = p0 + ch / (TBN / 8u);
	j = j0 + ch % (TBN / 8u) * 8u;
	return chunk_b(bbase + p * args.ldb + j,
		       p < args.k ? left(j, args.n) : 0u);
}

/*
 * where fetched chunk @ch goes in the staged slice: past the padding
 * chunk of its row; and which of a two-step fetch's steps it is of
 */
uint slot_a(uint ch)
{
	if (!ROWS_A)
		return ch / (TBM / 8u) * CSA + ch % (TBM / 8u);
	return ch / CPRA * RS + ch % CPR;
}

uint slot_b(uint ch)
{
	if (ROWS_B)
		return SA + ch / CPRB * RS + ch % CPR;
	return SA + ch / (TBN / 8u) * CSB + ch % (TBN / 8u);
}

uint step_a(uint ch)
{
	return ch % CPRA / CPR;
}

uint step_b(uint ch)
{
	return ch % CPRB / CPR;
}

void sync()
{
	memoryBarrierShared();
	barrier();
}

/* the chunks in flight from memory to the staged slices */
uvec4 ra[CPT_MAX], rb[CPT_MAX];

/*
 * The fetch at @p0 into ra and rb: a step's chunks, or two steps' of a
 * deep operand. @deep_too: the deep operands' as well.
 */
void fetch(uint p0, uint t, bool deep_too)
{
	[[unroll]] for (uint h = 0u; h < CPT_MAX; h++)
		if (h < CPTA && (deep_too || !DEEP_A))
			ra[h] = fetch_a(p0, t + 256u * h);
	[[unroll]] for (uint h = 0u; h < CPT_MAX; h++)
		if (h < CPTB && (deep_too || !DEEP_B))
			rb[h] = fetch_b(p0, t + 256u * h);
}

/*
 * the fetched chunks stored: all of an operand fetched a step at a time,
 * step @s's (0 or 1) of one fetched two steps at a time
 */
void stage(uint t, uint s)
{
	[[unroll]] for (uint h = 0u; h < CPT_MAX; h++)
		if (h < CPTA && (!DEEP_A || step_a(t + 256u * h) == s))
			sab[slot_a(t + 256u * h)] = ra[h];
	[[unroll]] for (uint h = 0u; h < CPT_MAX; h++)
		if (h < CPTB && (!DEEP_B || step_b(t + 256u * h) == s))
			sab[slot_b(t + 256u * h)] = rb[h];
}

void main()
{
	uint g = group_index(), sg = gl_SubgroupID, l = gl_SubgroupInvocationID;
	uint t = gl_LocalInvocationID.x;
	uint tiles = args.tiles_m * args.tiles_n, z, rem, gid, fm, gs, s = 0u;
	uint wr = sg / SGN * WM, wc = sg % SGN * WN, cb;
	FRAG_F acc[FA * FB];
	bool inside;

	if (g >= args.batch * tiles)
		return;
	z = g / tiles;
	rem = g % tiles;
	/* SWZ rows of tiles (fewer at the bottom), a column of them at a time */
	gid = rem / (SWZ * args.tiles_n);
	fm = gid * SWZ;
	gs = min(args.tiles_m - fm, SWZ);
	rem %= SWZ * args.tiles_n;
	i0 = (fm + rem % gs) * TBM;
	j0 = rem / gs * TBN;
	abase = args.off_a + z * args.bsa;
	bbase = args.off_b + z * args.bsb;
	/* whole chunks start on 16 bytes: 8 binary16 or 4 f32 */
	vec_a = FLAG(GPO_MM_F16_A) ? abase % ALH == 0u && args.lda % ALH == 0u :
				     abase % ALF == 0u && args.lda % ALF == 0u;
	vec_b = FLAG(GPO_MM_F16_B) ? bbase % ALH == 0u && args.ldb % ALH == 0u :
				     bbase % ALF == 0u && args.ldb % ALF == 0u;
	[[unroll]] for (uint f = 0u; f < FA * FB; f++)
		acc[f] = FRAG_F(0.0);
	if (args.k > 0u) {
		fetch(0u, t, true);
		stage(t, 0u);
		sync();
	}
	/*
	 * p0 + BK may pass 2^32 for a k near it: p0 never steps past k. @s:
	 * the step's place in a deep operand's pair, 0 then 1.
	 */
	for (uint p0 = 0u; p0 < args.k;
	     p0 = args.k - p0 > BK ? p0 + BK : args.k, s ^= 1u) {
		bool more = args.k - p0 > BK;

		/* the next step's loads fly while this one multiplies */
		if (more)
			fetch(p0 + BK, t, s == 1u);
		[[unroll]] for (uint kk = 0u; kk < BK; kk += FR) {
			FRAG_A fa[FA];
			FRAG_B fb[FB];

			[[unroll]] for (uint r = 0u; r < FA; r++) {
				uint i = wr + r * FR;

				if (!ROWS_A)
					coopMatLoadNV(fa[r], sab, kk * CSA +
						      i / 8u, CSA, true);
				else
					coopMatLoadNV(fa[r], sab, i * RS +
						      kk / 8u, RS, false);
			}
			[[unroll]] for (uint q = 0u; q < FB; q++) {
				uint j = wc + q * FR;

				if (ROWS_B)
					coopMatLoadNV(fb[q], sab, SA + j * RS +
						      kk / 8u, RS, true);
				else
					coopMatLoadNV(fb[q], sab, SA + kk * CSB +
						      j / 8u, CSB, false);
			}
			[[unroll]] for (uint r = 0u; r < FA; r++)
				[[unroll]] for (uint q = 0u; q < FB; q++)
					acc[FB * r + q] = coopMatMulAddNV(
						fa[r], fb[q], acc[FB * r + q]);
		}
		if (more) {
			/* one buffer: everyone has read it first */
			sync();
			stage(t, s ^ 1u);
		}
		sync();
	}
	cb = args.off_c + z * args.bsc;
	/* fragments go to memory on 16-byte rows (SPV_NV_cooperative_matrix) */
	inside = WHOLE || (i0 + TBM <= args.m && j0 + TBN <= args.n &&
			   !FLAG(GPO_T_ACCUM) && cb % ALF == 0u &&
			   args.ldc % ALF == 0u);
	[[unroll]] for (uint r = 0u; r < FA; r++) {
		[[unroll]] for (uint q = 0u; q < FB; q++) {
			uint f = FB * r + q, r0 = wr + r * FR, c0 = wc + q * FR;

			if (inside) {
				FRAG_F v = acc[f] * args.alpha;

				coopMatStoreNV(v, c, cb + (i0 + r0) * args.ldc +
					       j0 + c0, args.ldc, false);
				continue;
			}
			coopMatStoreNV(acc[f], cs, sg * FR * FR, FR, false);
			subgroupMemoryBarrierShared();
			subgroupBarrier();
			for (uint e = l; e < FR * FR; e += gl_SubgroupSize) {
				uint i = i0 + r0 + e / FR, j = j0 + c0 + e % FR;
				float v = args.alpha * cs[sg * FR * FR + e];

				if (i < args.m && j < args.n) {
					uint o = cb + i * args.ldc + j;

					if (FLAG(GPO_T_ACCUM))
						c[o] += v;
					else
						c[o] = v;
				}
			}
			/* the next fragment overwrites cs: all have read it */
			subgroupMemoryBarrierShared();
			subgroupBarrier();
		}
	}
}
