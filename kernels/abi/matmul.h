/* SPDX-License-Identifier: MIT */
/*
 * matmul.h - batched matrix products, no transposes materialised
 *
 * matmul      groups  buf0 a (r), buf1 b (r), buf2 c (rw with ACCUM, else w)
 *                     dtypes f32
 * matmul_big  groups  the same, in GPO_MM_TILE_BIG tiles
 * matmul_half groups  the same, in GPO_MM_TILE tiles, binary16 products
 * matmul_coop groups  the same, in tiles of 128 x 256 or 256 x 128, on
 *                     cooperative matrices (below)
 *
 * For each batch index z < batch, with A_z at a[off_a + z * bsa],
 * B_z at b[off_b + z * bsb] and C_z at c[off_c + z * bsc], all row-major:
 *
 *	op(A)[i][p] = A_z[i * lda + p]       (m x k)
 *	            = A_z[p * lda + i]       with GPO_MM_TRANS_A (A is k x m)
 *	op(B)[p][j] = B_z[p * ldb + j]       (k x n)
 *	            = B_z[j * ldb + p]       with GPO_MM_TRANS_B (B is n x k)
 *	C_z[i * ldc + j] (+)= alpha * sum_p op(A)[i][p] * op(B)[p][j]
 *
 * for i < m, j < n (GPO_T_ACCUM: +=). k may be 0 (the sum is 0).
 *
 * Grid: one workgroup per GPO_MM_TILE x GPO_MM_TILE tile of one C_z:
 * work = batch * tiles_m * tiles_n, tiles_x = ceil(x / GPO_MM_TILE);
 * group g computes z = g / (tiles_m * tiles_n), tile row
 * (g % (tiles_m * tiles_n)) / tiles_n and tile column g % tiles_n. The
 * edges are guarded: m, n and k need not be multiples of anything, and
 * the sum over p runs in the same order for every element of a device.
 * Kernels stage tiles of A and B in local (shared) memory.
 *
 * matmul_big computes the same thing with the same arguments, one
 * workgroup per GPO_MM_TILE_BIG x GPO_MM_TILE_BIG tile (tiles_m and
 * tiles_n count those): more work a work-item and fewer loads a product,
 * for products that give every compute unit several such tiles. Its own
 * op, so that its registers and local memory do not weigh on matmul's.
 * The sum over p runs in the same order as matmul's.
 *
 * Half operands, in matmul_half (matmul's tiles and order; matmul and
 * matmul_big take f32 operands as stored, their flags GPO_MM_F16_* and
 * GPO_MM_ROUND clear): with GPO_MM_F16_A (GPO_MM_F16_B) buffer a (b) holds
 * binary16 elements, element e in bits 16 (e % 2) .. of 32-bit word
 * e / 2; off_a, lda and bsa still count elements. With GPO_MM_ROUND the
 * f32 elements of an operand without its F16 flag are rounded to the
 * nearest binary16 (ties to even, overflow to infinity) as they are
 * loaded. Either way every product is of two binary16 values, exact in
 * f32, and the sums are f32 as before: what a tensor core computes, so
 * that an f32 model can ask for tensor-core products without a cast.
 * The VEC hints are ignored for a half operand.
 *
 * matmul_coop computes the same thing on cooperative matrices (tensor
 * cores: GL_NV_cooperative_matrix, f16 x f16 + f32 fragments of
 * GPO_MM_COOP_M x GPO_MM_COOP_N x GPO_MM_COOP_K), one tile of
 * GPO_MM_COOP_TILE_M(flags) rows and GPO_MM_COOP_TILE_N(flags) columns a
 * workgroup (tiles_m and tiles_n count those); f32 operands are always rounded (GPO_MM_ROUND
 * implied). Only devices that list such fragments have it (the device
 * info's coopmat); the order of its sums is the hardware's.
 */
#ifndef GPO_ABI_MATMUL_H
#define GPO_ABI_MATMUL_H
#include "tensor.h"

#define GPO_MM_TILE	64
#define GPO_MM_TILE_BIG	128
/*
 * matmul_coop's tiles: 128 rows (m) by 256 columns (n), or with
 * GPO_MM_COOP_TALL 256 by 128 (tensor/emit.c's mm_launch() chooses)
 */
#define GPO_MM_TILE_COOP_SHORT	128
#define GPO_MM_TILE_COOP_LONG	256
#define GPO_MM_COOP_TILE_M(flags) (((flags) & GPO_MM_COOP_TALL) != 0u ? \
				   256u : 128u)
#define GPO_MM_COOP_TILE_N(flags) (((flags) & GPO_MM_COOP_TALL) != 0u ? \
				   128u : 256u)
#define GPO_MM_COOP_M	16
#define GPO_MM_COOP_N	16
#define GPO_MM_COOP_K	16

#define GPO_MM_TRANS_A	(1u << 8)
#define GPO_MM_TRANS_B	(1u << 9)
/*
 * A (B) may be read 4 elements at a time: off_a, lda and bsa (off_b, ldb,
 * bsb) are multiples of 4 and the buffer's binding is 16-byte aligned.
 * A hint that kernels may ignore (matmul and the cpu backend do).
 */
#define GPO_MM_VEC_A	(1u << 10)
#define GPO_MM_VEC_B	(1u << 11)
#define GPO_MM_F16_A	(1u << 12)	/* a holds binary16 (above) */
#define GPO_MM_F16_B	(1u << 13)	/* b holds binary16 */
#define GPO_MM_ROUND	(1u << 14)	/* f32 operands rounded to f16 */
#define GPO_MM_COOP_TALL (1u << 15)	/* matmul_coop: 256 x 128 tiles */
/*
 * Never in args.flags: in a Vulkan pipeline's specialization constant,
 * that the constant holds the flags (backend/vulkan/pipeline.c)
 */
#define GPO_MM_SPEC	(1u << 31)
/*
 * Never in args.flags either: with GPO_MM_SPEC, that the product is
 * "whole" for matmul_coop: m, n and k multiples of its tile's sides
 * (GPO_MM_COOP_TILE_M(), _N()) and GPO_MM_COOP_WHOLE_K(), each operand's
 * offset, leading
 * dimension and batch stride multiples of 16 bytes (GPO_MM_COOP_ALIGN_*
 * elements), C's offset, ldc and bsc multiples of 4, and no GPO_T_ACCUM:
 * every tile inside C and every staged chunk one aligned load
 */
#define GPO_MM_WHOLE	(1u << 30)
#define GPO_MM_COOP_DEPTH	32	/* matmul_coop's k a step */
/*
 * matmul_coop fetches an f16 operand two steps deep where it is staged
 * k along its rows on the tile's 128 side: A in 128 x 256 tiles, B^T in
 * 256 x 128 ones (matmul_coop.comp's DEEP_A, DEEP_B); a whole product
 * with such an operand has k a multiple of two steps, else of one
 */
#define GPO_MM_COOP_DEEP_A(f)	(((f) & (GPO_MM_COOP_TALL | GPO_MM_TRANS_A | \
					 GPO_MM_F16_A)) == GPO_MM_F16_A)
#define GPO_MM_COOP_DEEP_B(f)	(((f) & (GPO_MM_COOP_TALL | GPO_MM_TRANS_B | \
					 GPO_MM_F16_B)) == \
				 (GPO_MM_COOP_TALL | GPO_MM_TRANS_B | GPO_MM_F16_B))
#define GPO_MM_COOP_WHOLE_K(f)	(GPO_MM_COOP_DEEP_A(f) || GPO_MM_COOP_DEEP_B(f) ? \
				 2u * GPO_MM_COOP_DEPTH : GPO_MM_COOP_DEPTH)
/*
 * 16 bytes in elements: matmul_coop loads an operand's whole chunks as
 * vectors (vec_a, vec_b) where its offset and leading dimension are
 * multiples of these, and stores the tiles inside C straight from the
 * fragments where C's offset and ldc are multiples of GPO_MM_COOP_ALIGN_F32
 */
#define GPO_MM_COOP_ALIGN_F16	8	/* binary16 operands */
#define GPO_MM_COOP_ALIGN_F32	4	/* f32 operands and C */

GPO_ARGS(gpo_matmul_args)
	gpo_u32 m;
	gpo_u32 n;
	gpo_u32 k;
	gpo_u32 batch;
	gpo_u32 tiles_m;
	gpo_u32 tiles_n;
	gpo_u32 flags;
	gpo_u32 lda;
	gpo_u32 ldb;
	gpo_u32 ldc;
	gpo_u32 off_a;
	gpo_u32 off_b;
	gpo_u32 off_c;
	gpo_u32 bsa;
	gpo_u32 bsb;
	gpo_u32 bsc;
	gpo_f32 alpha;
GPO_ARGS_END(gpo_matmul_args)

#endif
