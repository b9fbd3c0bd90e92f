/* SPDX-License-Identifier: MIT */
/*
 * attention.h - fused causal self-attention, forward and backward, the
 * T x T scores and weights never stored
 *
 * q, k, v and y are bh matrices of t rows and hd columns, row-major and
 * contiguous: element (z, i, c) of q is q[off_q + (z * t + i) * hd + c],
 * and likewise for k, v, y, dy, dq, dk and dv with their offsets. Row i
 * of a matrix is the query (key) at position i. l and d hold one float a
 * row: l[off_l + z * t + i], d[off_d + z * t + i]. 1 <= hd <=
 * GPO_ATTN_MAX_HD; t and bh may be anything (t * bh * hd < 2^32).
 *
 * For each z, with s_ij = scale * sum_c q_ic k_jc (c ascending is not
 * promised: each backend sums in its own fixed order):
 *
 * attn_fwd       groups  buf0 q (r), buf1 k (r), buf2 v (r), buf3 y (w),
 *                        buf4 l (w)                          dtypes f32
 *	for j <= i only (the causal mask: query i sees keys 0 .. i),
 *	m_i = max_j s_ij, l_i = m_i + log sum_j exp(s_ij - m_i)
 *	p_ij = exp(s_ij - l_i)
 *	y_ic = sum_j p_ij v_jc,  l[i] = l_i (the row's logsumexp)
 * attn_bwd_d     groups  buf0 y (r), buf1 dy (r), buf2 d (w) dtypes f32
 *	d_i = sum_c dy_ic y_ic for each of the bh * t rows (c ascending);
 *	a grid-stride loop over rows:
 *	for (r = group * GPO_WG_SIZE + local; r < bh * t;
 *	     r += groups * GPO_WG_SIZE)
 * attn_bwd_dq    groups  buf0 q (r), buf1 k (r), buf2 v (r), buf3 dy (r),
 *                        buf4 l (r), buf5 d (r), buf6 dq (rw/w)
 *                        dtypes f32
 *	p_ij recomputed from q, k and l, 0 for j > i
 *	ds_ij = p_ij (sum_c dy_ic v_jc - d_i)
 *	dq_ic (+)= scale * sum_j ds_ij k_jc                 (GPO_T_ACCUM)
 * attn_bwd_dkdv  groups  buf0 q (r), buf1 k (r), buf2 v (r), buf3 dy (r),
 *                        buf4 l (r), buf5 d (r), buf6 dk (rw/w),
 *                        buf7 dv (rw/w)                      dtypes f32
 *	dv_jc (+)= sum_i p_ij dy_ic                      (GPO_ATTN_ACC_DV)
 *	dk_jc (+)= scale * sum_i ds_ij q_ic                 (GPO_T_ACCUM)
 *	the sums over i >= j only. dk and dv may be the same tensor (k and
 *	v one tensor): element (z, j, c) of both is written by one
 *	work-item, dk's result first, so with ACC_DV the second adds.
 *
 * With y the forward's output (l its logsumexps) and dy the gradient of
 * a loss with respect to y, d from attn_bwd_d, these are the gradients of
 * the loss with respect to q, k and v.
 *
 * Grid of the three attention kernels: groups = bh * blocks, blocks =
 * ceil(t / GPO_ATTN_BLOCK); group g takes matrix z = g / blocks and the
 * block b = g % blocks of GPO_ATTN_BLOCK rows: queries b * BLOCK .. for
 * attn_fwd and attn_bwd_dq (looping over the key blocks 0 .. b), keys
 * for attn_bwd_dkdv (looping over the query blocks b .. blocks - 1).
 * Blocks above the diagonal are never visited. Every sum runs in a fixed
 * order (no atomics), so a device gives the same bits on every run. A
 * group at or past bh * blocks does nothing.
 */
#ifndef GPO_ABI_ATTENTION_H
#define GPO_ABI_ATTENTION_H
#include "tensor.h"

#define GPO_ATTN_BLOCK	64	/* queries (keys) a workgroup */
#define GPO_ATTN_MAX_HD	128	/* the largest head size */

/*
 * The columns (rows) the kernels stage a step. OpenCL: GPO_ATTN_KS_SMALL.
 * Vulkan (specialization constant 5): GPO_ATTN_KS_BIG for heads of 64 or
 * fewer where shared memory holds GPO_ATTN_LOCAL(GPO_ATTN_KS_BIG) bytes,
 * else GPO_ATTN_KS_SMALL. The step changes no sum's order: the same bits
 * either way.
 */
#define GPO_ATTN_KS_SMALL	16
#define GPO_ATTN_KS_BIG		32
/* the bytes of workgroup memory the kernels take with a step of @ks */
#define GPO_ATTN_LOCAL(ks) \
	(4 * (2 * (ks) * (GPO_ATTN_BLOCK + 4) + \
	      GPO_ATTN_BLOCK * (GPO_ATTN_BLOCK + 4) + 3 * GPO_ATTN_BLOCK))

#define GPO_ATTN_ACC_DV	(1u << 8)	/* dv += result (dk: GPO_T_ACCUM) */

GPO_ARGS(gpo_attn_args)
	gpo_u32 bh;
	gpo_u32 t;
	gpo_u32 hd;
	gpo_u32 blocks;
	gpo_u32 groups;
	gpo_u32 flags;
	gpo_u32 off_q;
	gpo_u32 off_k;
	gpo_u32 off_v;
	gpo_u32 off_y;
	gpo_u32 off_dy;
	gpo_u32 off_l;
	gpo_u32 off_d;
	gpo_u32 off_dq;
	gpo_u32 off_dk;
	gpo_u32 off_dv;
	gpo_f32 scale;
GPO_ARGS_END(gpo_attn_args)

#endif
