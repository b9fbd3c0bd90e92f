/* SPDX-License-Identifier: MIT */
/*
 * attention.cl - fused causal attention, forward and backward
 * (abi/attention.h), flash-attention style: the scores of one 64 x 64
 * block of queries and keys live in registers and local memory only.
 *
 * A workgroup's 256 work-items are a 16 x 16 grid; work-item (tx, ty)
 * holds rows 4 ty .. 4 ty + 3 of its block and, of a 64 x 64 block of
 * scores, columns 4 tx .. 4 tx + 3; of a 64 x hd block of outputs,
 * columns 4 tx .. 4 tx + 3 and 64 + 4 tx .. 64 + 4 tx + 3 (hd > 64).
 * Two products make up everything:
 *	rows_dot   S = X Y^T of 64 rows of X and 64 of Y (hd long), the
 *		   rows staged KS columns at a time in local memory
 *	block_mul  O += P^T B for a 64 x 64 P in local memory (row j of P
 *		   at ps[j * LDS ..]) and 64 rows of B, staged KS rows at
 *		   a time
 * Rows past t and columns past hd load as 0 and are never stored. Each
 * sum is a chain of fma in one order (c ascending, then j ascending
 * within a block and the blocks in order), and a row's maximum and sum
 * are the 16 work-items' parts taken in order by one work-item: the
 * same bits on every run.
 */
#include "abi/attention.h"
#include "opencl/tensor.cl"

#define AB	GPO_ATTN_BLOCK		/* rows a block: 64 */
/*
 * columns (rows) a staged step: abi/attention.h's smaller. Steps of 32
 * made these kernels slower with NVIDIA's OpenCL on an H200 (2026-11-30:
 * 384x256x64 1.09 -> 1.26 ms), where Vulkan's got faster.
 */
#define KS	GPO_ATTN_KS_SMALL
#define LDS	(AB + 4)		/* a staged row of 64, padded */
#define LDH	(GPO_ATTN_MAX_HD + 4)	/* a staged row of hd, padded */
#define SLICE	(2 * KS * LDS)		/* staging floats: >= KS * LDH too */

/*
 * acc[r] = sum_c X[4 ty + r][c] Y[4 tx + (0..3)][c]: rows of X below
 * @xn and of Y below @yn, the others 0
 */
static inline void rows_dot(__global const float *X, uint xn,
			    __global const float *Y, uint yn, uint hd,
			    __local float *sl, float4 acc[4])
{
	uint lid = get_local_id(0), tx = lid % 16, ty = lid / 16;
	__local float *xs = sl, *ys = sl + KS * LDS;

	for (uint r = 0; r < 4; r++)
		acc[r] = 0.0f;
	for (uint c0 = 0; c0 < hd; c0 += KS) {
		uint c = c0 + lid % KS;

		/* along c: 16 work-items read 16 consecutive words */
		for (uint q = 0; q < 4; q++) {
			uint row = lid / KS + 16 * q;

			xs[(lid % KS) * LDS + row] =
				row < xn && c < hd ? X[row * hd + c] : 0.0f;
			ys[(lid % KS) * LDS + row] =
				row < yn && c < hd ? Y[row * hd + c] : 0.0f;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
		for (uint p = 0; p < KS; p++) {
			float4 av = *(__local const float4 *)(xs + p * LDS +
							     4 * ty);
			float4 bv = *(__local const float4 *)(ys + p * LDS +
							     4 * tx);

			acc[0] = fma((float4)(av.x), bv, acc[0]);
			acc[1] = fma((float4)(av.y), bv, acc[1]);
			acc[2] = fma((float4)(av.z), bv, acc[2]);
			acc[3] = fma((float4)(av.w), bv, acc[3]);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
}

/*
 * o[r] += sum_j ps[j][4 ty + r] B[j][4 tx ..], o2[r] likewise for the
 * columns 64 + 4 tx .. (hd > 64 only): rows of B below @bn
 */
static inline void block_mul(__local const float *ps,
			     __global const float *B, uint bn, uint hd,
			     __local float *sl, float4 o[4], float4 o2[4])
{
	uint lid = get_local_id(0), tx = lid % 16, ty = lid / 16;
	uint wide = hd > 64, cols = wide ? GPO_ATTN_MAX_HD : 64;

	for (uint j0 = 0; j0 < AB; j0 += KS) {
		uint row = j0 + lid / 16;

		/* every column read is staged: 0 past hd */
		for (uint c = lid % 16; c < cols; c += 16)
			sl[(lid / 16) * LDH + c] =
				row < bn && c < hd ? B[row * hd + c] : 0.0f;
		barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
		for (uint p = 0; p < KS; p++) {
			float4 av = *(__local const float4 *)(ps + (j0 + p) *
							     LDS + 4 * ty);
			float4 b0 = *(__local const float4 *)(sl + p * LDH +
							     4 * tx);

			o[0] = fma((float4)(av.x), b0, o[0]);
			o[1] = fma((float4)(av.y), b0, o[1]);
			o[2] = fma((float4)(av.z), b0, o[2]);
			o[3] = fma((float4)(av.w), b0, o[3]);
			if (wide) {
				float4 b1 = *(__local const float4 *)
					(sl + p * LDH + 64 + 4 * tx);

				o2[0] = fma((float4)(av.x), b1, o2[0]);
				o2[1] = fma((float4)(av.y), b1, o2[1]);
				o2[2] = fma((float4)(av.z), b1, o2[2]);
				o2[3] = fma((float4)(av.w), b1, o2[3]);
			}
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
}

static inline float el(float4 v, uint c)
{
	return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w;
}

/* row @i of a block's output: columns 4 tx .. and 64 + 4 tx .. */
static inline void row_put(__global float *y, uint i, uint hd, float4 lo,
			   float4 hi, float mul, uint accum)
{
	uint tx = get_local_id(0) % 16;

	for (uint c = 0; c < 4; c++) {
		uint col = 4 * tx + c;

		if (col < hd)
			out_put(y, i * hd + col, accum, mul * el(lo, c));
		if (col + 64 < hd)
			out_put(y, i * hd + col + 64, accum, mul * el(hi, c));
	}
}

/* the group's matrix and block; 0 for a group past the work */
static inline int attn_group(struct gpo_attn_args a, uint *z, uint *b)
{
	uint g = get_group_id(0);

	if (!a.blocks || g >= a.groups || g / a.blocks >= a.bh)
		return 0;
	*z = g / a.blocks;
	*b = g % a.blocks;
	return 1;
}

KERNEL void attn_fwd(BUF(const float, Q), BUF(const float, K),
		     BUF(const float, V), BUF(float, Y), BUF(float, L),
		     struct gpo_attn_args a)
{
	__local float sl[SLICE] __attribute__((aligned(16)));
	__local float ps[AB * LDS] __attribute__((aligned(16)));
	__local float rowv[AB];
	/* the row parts, between the products: the staging area */
	__local float *red = sl;
	uint lid = get_local_id(0), tx = lid % 16, ty = lid / 16;
	uint z, qb, i0, t = a.t, hd = a.hd;
	float m[4], l[4];
	float4 o[4], o2[4];

	VIEW(Q);
	VIEW(K);
	VIEW(V);
	VIEW(Y);
	VIEW(L);
	if (!attn_group(a, &z, &qb))
		return;
	i0 = qb * AB;
	Q += a.off_q + (z * t + i0) * hd;
	K += a.off_k + z * t * hd;
	V += a.off_v + z * t * hd;
	for (uint r = 0; r < 4; r++) {
		m[r] = -INFINITY;
		l[r] = 0.0f;
		o[r] = 0.0f;
		o2[r] = 0.0f;
	}
	for (uint kb = 0; kb <= qb; kb++) {
		uint j0 = kb * AB;
		float4 s[4];
		float mn[4];

		rows_dot(Q, t - i0, K + j0 * hd, t - j0, hd, sl, s);
		/* scaled, masked; each work-item's part of the row maxima */
		for (uint r = 0; r < 4; r++) {
			uint i = i0 + 4 * ty + r;
			float e[4], mx = -INFINITY;

			for (uint c = 0; c < 4; c++) {
				uint j = j0 + 4 * tx + c;

				e[c] = j > i || j >= t ? -INFINITY :
					a.scale * el(s[r], c);
				mx = fmax(mx, e[c]);
			}
			s[r] = (float4)(e[0], e[1], e[2], e[3]);
			red[(4 * ty + r) * 16 + tx] = mx;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		if (lid < AB) {
			float mx = red[lid * 16];

			for (uint k = 1; k < 16; k++)
				mx = fmax(mx, red[lid * 16 + k]);
			rowv[lid] = mx;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		/* p = exp(s - the new max), into ps key-major */
		for (uint r = 0; r < 4; r++) {
			float sum = 0.0f;

			mn[r] = fmax(m[r], rowv[4 * ty + r]);
			for (uint c = 0; c < 4; c++) {
				float p = exp(el(s[r], c) - mn[r]);

				sum += p;
				ps[(4 * tx + c) * LDS + 4 * ty + r] = p;
			}
			red[(4 * ty + r) * 16 + tx] = sum;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		if (lid < AB) {
			float sum = 0.0f;

			for (uint k = 0; k < 16; k++)
				sum += red[lid * 16 + k];
			rowv[lid] = sum;
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		for (uint r = 0; r < 4; r++) {
			float al = exp(m[r] - mn[r]);

			l[r] = l[r] * al + rowv[4 * ty + r];
			m[r] = mn[r];
			o[r] *= al;
			o2[r] *= al;
		}
		block_mul(ps, V + j0 * hd, t - j0, hd, sl, o, o2);
	}
	Y += a.off_y + z * t * hd;
	for (uint r = 0; r < 4; r++) {
		uint i = i0 + 4 * ty + r;

		if (i >= t)
			break;
		row_put(Y, i, hd, o[r] / l[r], o2[r] / l[r], 1.0f, 0);
		if (tx == 0)
			L[a.off_l + z * t + i] = m[r] + log(l[r]);
	}
}

/*
 * The group's GPO_WG_SIZE rows are neighbours in memory: read DC columns
 * at a time, neighbouring work-items taking neighbouring elements, their
 * products put in local memory, where each work-item adds its row's in
 * order (one work-item walking a row reads a different row per lane)
 */
#define DC	16u			/* columns a pass */
#define DS	(DC + 1u)		/* a row's slots: rows miss banks */

KERNEL void attn_bwd_d(BUF(const float, Y), BUF(const float, DY),
		       BUF(float, D), struct gpo_attn_args a)
{
	__local float prod[GPO_WG_SIZE * DS];
	uint g = get_group_id(0), lid = get_local_id(0), rows = a.bh * a.t;

	VIEW(Y);
	VIEW(DY);
	VIEW(D);
	if (g >= a.groups || rows == 0 || g > (rows - 1) / GPO_WG_SIZE)
		return;
	Y += a.off_y;
	DY += a.off_dy;
	/* r0 is the same in the whole group: the barriers are uniform */
	for (uint r0 = g * GPO_WG_SIZE; r0 < rows;
	     r0 = a.groups >= (1u << 24) ||
		  rows - r0 <= a.groups * GPO_WG_SIZE ?
		  rows : r0 + a.groups * GPO_WG_SIZE) {
		uint nr = min((uint)GPO_WG_SIZE, rows - r0);
		float s = 0.0f;

		for (uint c0 = 0; c0 < a.hd; c0 += DC) {
			uint nc = min(DC, a.hd - c0);

			for (uint q = 0; q < DC; q++) {
				uint e = lid + q * GPO_WG_SIZE, i = e / DC;
				uint c = e % DC;

				if (i < nr && c < nc) {
					uint o = (r0 + i) * a.hd + c0 + c;

					prod[i * DS + c] = DY[o] * Y[o];
				}
			}
			barrier(CLK_LOCAL_MEM_FENCE);
			for (uint c = 0; c < nc; c++)
				s += prod[lid * DS + c];
			/* the next pass overwrites prod: all have read it */
			barrier(CLK_LOCAL_MEM_FENCE);
		}
		if (lid < nr)
			D[a.off_d + r0 + lid] = s;
	}
}

/* the block's l and d, rows i0 .. (0 past t) */
static inline void rows_ld(__global const float *L, __global const float *D,
			   struct gpo_attn_args a, uint z, uint i0,
			   __local float *rl, __local float *rd)
{
	uint lid = get_local_id(0), i = i0 + lid;

	if (lid < AB) {
		rl[lid] = i < a.t ? L[a.off_l + z * a.t + i] : 0.0f;
		rd[lid] = i < a.t ? D[a.off_d + z * a.t + i] : 0.0f;
	}
}

KERNEL void attn_bwd_dq(BUF(const float, Q), BUF(const float, K),
			BUF(const float, V), BUF(const float, DY),
			BUF(const float, L), BUF(const float, D),
			BUF(float, DQ), struct gpo_attn_args a)
{
	__local float sl[SLICE] __attribute__((aligned(16)));
	__local float ps[AB * LDS] __attribute__((aligned(16)));
	__local float rl[AB], rd[AB];
	uint lid = get_local_id(0), tx = lid % 16, ty = lid / 16;
	uint z, qb, i0, t = a.t, hd = a.hd;
	float4 o[4], o2[4];

	VIEW(Q);
	VIEW(K);
	VIEW(V);
	VIEW(DY);
	VIEW(L);
	VIEW(D);
	VIEW(DQ);
	if (!attn_group(a, &z, &qb))
		return;
	i0 = qb * AB;
	rows_ld(L, D, a, z, i0, rl, rd);
	Q += a.off_q + (z * t + i0) * hd;
	DY += a.off_dy + (z * t + i0) * hd;
	K += a.off_k + z * t * hd;
	V += a.off_v + z * t * hd;
	for (uint r = 0; r < 4; r++) {
		o[r] = 0.0f;
		o2[r] = 0.0f;
	}
	for (uint kb = 0; kb <= qb; kb++) {
		uint j0 = kb * AB;
		float4 s[4], dp[4];

		rows_dot(Q, t - i0, K + j0 * hd, t - j0, hd, sl, s);
		rows_dot(DY, t - i0, V + j0 * hd, t - j0, hd, sl, dp);
		/* ds = p (dp - d), into ps key-major */
		for (uint r = 0; r < 4; r++) {
			uint i = i0 + 4 * ty + r;

			for (uint c = 0; c < 4; c++) {
				uint j = j0 + 4 * tx + c;
				float p = j > i || j >= t ? 0.0f :
					exp(a.scale * el(s[r], c) -
					    rl[4 * ty + r]);

				ps[(4 * tx + c) * LDS + 4 * ty + r] =
					p * (el(dp[r], c) - rd[4 * ty + r]);
			}
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		block_mul(ps, K + j0 * hd, t - j0, hd, sl, o, o2);
	}
	DQ += a.off_dq + z * t * hd;
	for (uint r = 0; r < 4; r++) {
		uint i = i0 + 4 * ty + r;

		if (i >= t)
			break;
		row_put(DQ, i, hd, o[r], o2[r], a.scale,
			a.flags & GPO_T_ACCUM);
	}
}

KERNEL void attn_bwd_dkdv(BUF(const float, Q), BUF(const float, K),
			  BUF(const float, V), BUF(const float, DY),
			  BUF(const float, L), BUF(const float, D),
			  BUF(float, DK), BUF(float, DV),
			  struct gpo_attn_args a)
{
	__local float sl[SLICE] __attribute__((aligned(16)));
	__local float ps[AB * LDS] __attribute__((aligned(16)));
	__local float rl[AB], rd[AB];
	uint lid = get_local_id(0), tx = lid % 16, ty = lid / 16;
	uint z, kb, j0, t = a.t, hd = a.hd;
	float4 dk[4], dk2[4], dv[4], dv2[4];

	VIEW(Q);
	VIEW(K);
	VIEW(V);
	VIEW(DY);
	VIEW(L);
	VIEW(D);
	VIEW(DK);
	VIEW(DV);
	if (!attn_group(a, &z, &kb))
		return;
	j0 = kb * AB;
	Q += a.off_q + z * t * hd;
	DY += a.off_dy + z * t * hd;
	K += a.off_k + (z * t + j0) * hd;
	V += a.off_v + (z * t + j0) * hd;
	for (uint r = 0; r < 4; r++) {
		dk[r] = 0.0f;
		dk2[r] = 0.0f;
		dv[r] = 0.0f;
		dv2[r] = 0.0f;
	}
	for (uint qb = kb; qb < a.blocks; qb++) {
		uint i0 = qb * AB;
		float4 s[4], dp[4];
		float ds[4][4];

		/* the last reads of rl and rd were before block_mul's barriers */
		rows_ld(L, D, a, z, i0, rl, rd);
		/* transposed scores: rows are keys, columns queries */
		rows_dot(K, t - j0, Q + i0 * hd, t - i0, hd, sl, s);
		rows_dot(V, t - j0, DY + i0 * hd, t - i0, hd, sl, dp);
		for (uint r = 0; r < 4; r++) {
			uint j = j0 + 4 * ty + r;

			for (uint c = 0; c < 4; c++) {
				uint i = i0 + 4 * tx + c;
				float p = j > i || i >= t ? 0.0f :
					exp(a.scale * el(s[r], c) -
					    rl[4 * tx + c]);

				/* p^T into ps query-major; ds kept */
				ps[(4 * tx + c) * LDS + 4 * ty + r] = p;
				ds[r][c] = p * (el(dp[r], c) - rd[4 * tx + c]);
			}
		}
		barrier(CLK_LOCAL_MEM_FENCE);
		block_mul(ps, DY + i0 * hd, t - i0, hd, sl, dv, dv2);
		for (uint r = 0; r < 4; r++)
			for (uint c = 0; c < 4; c++)
				ps[(4 * tx + c) * LDS + 4 * ty + r] = ds[r][c];
		barrier(CLK_LOCAL_MEM_FENCE);
		block_mul(ps, Q + i0 * hd, t - i0, hd, sl, dk, dk2);
	}
	DK += a.off_dk + z * t * hd;
	DV += a.off_dv + z * t * hd;
	for (uint r = 0; r < 4; r++) {
		uint j = j0 + 4 * ty + r;

		if (j >= t)
			break;
		/* dk first: with k and v one tensor, dv adds to it */
		row_put(DK, j, hd, dk[r], dk2[r], a.scale,
			a.flags & GPO_T_ACCUM);
		row_put(DV, j, hd, dv[r], dv2[r], 1.0f,
			a.flags & GPO_ATTN_ACC_DV ? GPO_T_ACCUM : 0);
	}
}
