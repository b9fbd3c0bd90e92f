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
 */
#include "abi/matmul.h"
#include "opencl/tensor.cl"

#define TS	GPO_MM_TILE	/* C tile side */
#define KS	16		/* p per staged step */
#define LDS	(TS + 4)	/* local row stride, floats */
#define TPR	(TS / 4)	/* work-items per tile row: 16 */

/*
 * Operands (abi/matmul.h): MM_F32 as stored, MM_RND f32 rounded to the
 * nearest binary16, MM_F16 binary16 read by vload_half (core OpenCL C,
 * no cl_khr_fp16: NVIDIA's OpenCL has none). The rounding is integer
 * code, not vstore_half_rte, which would need a half in private memory.
 */
#define MM_F32	0
#define MM_RND	1
#define MM_F16	2

/* binary16 bits -> its value, exactly */
static inline float mm_h2f(uint h)
{
	uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	float v;

	if (!e) {
		v = (float)m * (1.0f / 16777216.0f);
		return s ? -v : v;
	}
	if (e == 31)
		return as_float(s | 0x7f800000u | (m << 13));
	return as_float(s | ((e + 112) << 23) | (m << 13));
}

/* f32 -> the nearest binary16 (ties to even; past 65520 infinity) */
static inline uint mm_f2h(float f)
{
	uint x = as_uint(f), s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
	uint e = a >> 23, h, rem, hw, sh, m;

	if (a > 0x7f800000u)
		return s | 0x7e00u | ((a >> 13) & 0x3ffu);
	if (a >= 0x477ff000u)
		return s | 0x7c00u;
	if (a >= 0x38800000u) {
		h = (a - 0x38000000u) >> 13;
		rem = a & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
			h++;
		return s | h;
	}
	/* 2^-25 (half the least subnormal, a tie) and below: 0 */
	if (a <= 0x33000000u)
		return s;
	m = (a & 0x7fffffu) | 0x800000u;
	sh = 126 - e;
	h = m >> sh;
	rem = m & ((1u << sh) - 1);
	hw = 1u << (sh - 1);
	if (rem > hw || (rem == hw && (h & 1)))
		h++;
	return s | h;
}

/* element @o of an operand stored as @mode says */
static inline float mm_ld(__global const float *mat, uint o, int mode)
{
	if (mode == MM_F16)
		return vload_half(o, (__global const half *)mat);
	if (mode == MM_RND)
		return mm_h2f(mm_f2h(mat[o]));
	return mat[o];
}

/* the mode of operand a (@f16 GPO_MM_F16_A) or b under @flags */
static inline int mm_mode(uint flags, uint f16)
{
	if (flags & f16)
		return MM_F16;
	return (flags & GPO_MM_ROUND) ? MM_RND : MM_F32;
}

/* @mat advanced by @off elements of its mode */
static inline __global const float *mm_at(__global const float *mat,
					   uint off, int mode)
{
	if (mode == MM_F16)
		return (__global const float *)((__global const uchar *)mat +
						2 * (size_t)off);
	return mat + off;
}

/*
 * This work-item's 4 elements of the next step of op(A) (or op(B), the
 * same with i for j), from @m: @mn rows (i), @k columns (p) of op(M),
 * stored with leading dimension @ld, transposed or not.
 */
static inline void load_step(__global const float *mat, int mode, uint ld,
			     int trans, uint mn, uint k, uint i0, uint p0,
			     float r[4])
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
			r[q] = trans ? mm_ld(mat, p * ld + i, mode) :
				       mm_ld(mat, i * ld + p, mode);
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

/*
 * One 64 x 64 tile of C (matmul, matmul_half): @h16 (a constant in each
 * kernel, so each gets its own code) says whether the operands are as
 * the half flags say (matmul_half) or f32 as stored (matmul).
 */
static inline void mm_tile(__global const float *A, __global const float *B,
			   __global float *C, struct gpo_matmul_args a,
			   __local float *as, __local float *bs, const int h16)
{
	uint g = get_group_id(0), lid = get_local_id(0);
	uint tiles = a.tiles_m * a.tiles_n, z, t, i0, j0;
	uint tx = lid % TPR, ty = lid / TPR;
	int ta = (a.flags & GPO_MM_TRANS_A) != 0;
	int tb = (a.flags & GPO_MM_TRANS_B) != 0;
	int fa = h16 ? mm_mode(a.flags, GPO_MM_F16_A) : MM_F32;
	int fb = h16 ? mm_mode(a.flags, GPO_MM_F16_B) : MM_F32;
	float4 c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
	float ra[4], rb[4];

	/* a group past the work does nothing (abi/tensor.h) */
	if (!tiles || g / tiles >= a.batch)
		return;
	z = g / tiles;
	t = g % tiles;
	i0 = t / a.tiles_n * TS;
	j0 = t % a.tiles_n * TS;
	A = mm_at(A, a.off_a + z * a.bsa, fa);
	B = mm_at(B, a.off_b + z * a.bsb, fb);
	C += a.off_c + z * a.bsc;

	load_step(A, fa, a.lda, ta, a.m, a.k, i0, 0, ra);
	load_step(B, fb, a.ldb, !tb, a.n, a.k, j0, 0, rb);
	for (uint p0 = 0; p0 < a.k; p0 += KS) {
		store_step(as, ta, ra);
		store_step(bs, !tb, rb);
		barrier(CLK_LOCAL_MEM_FENCE);
		/* the next step's loads are in flight while this one sums */
		if (p0 + KS < a.k) {
			load_step(A, fa, a.lda, ta, a.m, a.k, i0, p0 + KS, ra);
			load_step(B, fb, a.ldb, !tb, a.n, a.k, j0, p0 + KS, rb);
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

KERNEL void matmul(BUF(const float, A), BUF(const float, B), BUF(float, C),
		   struct gpo_matmul_args a)
{
	__local float as[KS * LDS] __attribute__((aligned(16)));
	__local float bs[KS * LDS] __attribute__((aligned(16)));

	VIEW(A);
	VIEW(B);
	VIEW(C);
	mm_tile(A, B, C, a, as, bs, 0);
}

KERNEL void matmul_half(BUF(const float, A), BUF(const float, B),
			BUF(float, C), struct gpo_matmul_args a)
{
	__local float as[KS * LDS] __attribute__((aligned(16)));
	__local float bs[KS * LDS] __attribute__((aligned(16)));

	VIEW(A);
	VIEW(B);
	VIEW(C);
	mm_tile(A, B, C, a, as, bs, 1);
}

/*
 * matmul_big: one 128 x 128 tile of C a workgroup (GPO_MM_TILE_BIG).
 * Work-item (tx, ty) of the 16 x 16 grid holds the 8 x 8 block of rows
 * 4 ty .. 4 ty + 3 and 64 + 4 ty .. 64 + 4 ty + 3, columns likewise with
 * tx: a warp's float4 reads of a slice row are then consecutive words
 * (no bank conflicts), and each p costs 4 float4 reads for 64 fmas. The
 * accumulators are 16 named float4s, never an array, so that nothing
 * indexes registers at run time.
 *
 * Slices are 8 or 16 deep and double-buffered: step s multiplies buffer
 * s % 2 while its work-items store step s + 1 (loaded into registers
 * before the multiply) into the other one, a quarter of the way through
 * the step (BIG_STAGE_AT); one barrier a step. Where matters on an H200
 * (2026-11-29, bench/results/issue11-h200-2026-11-29.txt, calls 52-53):
 * the byte GPT's products took 32.1 ms a step storing after the last
 * row, 30.2 half-way, 29.8 a quarter of the way, 36.8 three quarters
 * (matmul_big.comp stores before its last row). Loads go
 * along the direction that is contiguous in memory, as matmul's (as
 * float4s where GPO_MM_VEC_* says the operand allows it), and
 * out-of-range elements load as 0 (they add exact zeros at p >= k).
 * Every element of C is a chain of fma over p = 0 .. k - 1 in order.
 *
 * Two kernels from one source (matmul_big.cl, included twice):
 * matmul_big in steps 8 deep and matmul_big16 in steps 16 deep, which
 * the backend launches for tall, narrow products (backend/opencl/
 * opencl.c's deep()). On an H200
 * (2026-11-29, bench/results/issue11-h200-2026-11-29.txt, calls 38-39
 * and 42) 8 deep took SGEMM 4096 from 34.1 to 38.1 TFLOP/s and the MLP
 * 1024x4096^3x1024 b8192 step from 58.5 to 52.5 ms, but the byte GPT's
 * products of 16384 x 384 over k >= 384 ran 11-17 % faster 16 deep.
 */
#define TB	GPO_MM_TILE_BIG
#define BIG_STAGE_AT(bks)	((bks) / 4)	/* the row before which to store */
#define LDB	(TB + 4)	/* local row stride: stores along p miss banks */

/* row x of the block: av times the 8 columns b0, b1 */
#define BIG_FMA(lo, hi, av) \
	do { \
		lo = fma((float4)(av), b0, lo); \
		hi = fma((float4)(av), b1, hi); \
	} while (0)

/* row @r (local) of the block, columns 4 tx .. and 64 + 4 tx .. */
#define BIG_PUT(r, lo, hi) \
	do { \
		uint i_ = i0 + (r); \
		if (i_ < a.m) { \
			big_put(C, i_ * a.ldc, j0 + 4 * tx, a, lo); \
			big_put(C, i_ * a.ldc, j0 + 64 + 4 * tx, a, hi); \
		} \
	} while (0)

static inline void big_put(__global float *C, uint row, uint j,
			   struct gpo_matmul_args a, float4 v)
{
	if (j < a.n)
		out_put(C, row + j, a.flags, a.alpha * v.x);
	if (j + 1 < a.n)
		out_put(C, row + j + 1, a.flags, a.alpha * v.y);
	if (j + 2 < a.n)
		out_put(C, row + j + 2, a.flags, a.alpha * v.z);
	if (j + 3 < a.n)
		out_put(C, row + j + 3, a.flags, a.alpha * v.w);
}

/*
 * Declared here, defined by matmul_big.cl: the backend looks for an op's
 * kernel in its family's own file (opencl.c's kernel_in_source())
 */
KERNEL void matmul_big(BUF(const float, A), BUF(const float, B),
		       BUF(float, C), struct gpo_matmul_args a);
/* matmul_big in steps 16 deep (not an op of its own: opencl.c's deep()) */
KERNEL void matmul_big16(BUF(const float, A), BUF(const float, B),
			 BUF(float, C), struct gpo_matmul_args a);

#define BKS	8
#define BIG(x)	big8_##x
#define BIG_KERNEL	matmul_big
#include "matmul_big.cl"

#define BKS	16
#define BIG(x)	big16_##x
#define BIG_KERNEL	matmul_big16
#include "matmul_big.cl"
