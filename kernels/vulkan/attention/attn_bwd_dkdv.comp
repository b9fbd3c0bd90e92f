// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * attn_bwd_dkdv.comp - attn_bwd_dkdv (abi/attention.h): one block of 64
 * keys a workgroup, the query blocks from its own to the last in order:
 * p^T again from k, q and l, dv (+)= p^T dy, ds^T = p^T (v dy^T - d),
 * dk (+)= scale ds^T q (attention.glsl).
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/attention.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, q);
FLOAT_IN(1, k);
FLOAT_IN(2, v);
FLOAT_IN(3, dy);
FLOAT_IN(4, l);
FLOAT_IN(5, d);
FLOAT_BUF(6, dk);
FLOAT_BUF(7, dv);

#include "attention/attention.glsl"

float ld(uint w, uint i)
{
	return w == ATT_Q ? q[i] : w == ATT_K ? k[i] :
	       w == ATT_V ? v[i] : dy[i];
}

void main()
{
	uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
	bool wide = attn_wide();
	uint z, kb, j0, n = args.t, hd = args.hd, mat;
	vec4 gk[4], gk2[4], gv[4], gv2[4];

	if (!attn_group(z, kb))
		return;
	j0 = kb * AB;
	mat = z * n * hd;
	[[unroll]] for (uint r = 0u; r < 4u; r++) {
		gk[r] = vec4(0.0);
		gk2[r] = vec4(0.0);
		gv[r] = vec4(0.0);
		gv2[r] = vec4(0.0);
	}
	for (uint qb = kb; qb < args.blocks; qb++) {
		uint i0 = qb * AB;
		vec4 s[4], dp[4];

		/* the last reads of l and d were before block_mul's syncs */
		ROWS_LD(i0, z);
		/* transposed scores: rows are keys, columns queries */
		rows_dot(ATT_K, args.off_k + mat + j0 * hd, n - j0, ATT_Q,
			 args.off_q + mat + i0 * hd, n - i0, s);
		rows_dot(ATT_V, args.off_v + mat + j0 * hd, n - j0, ATT_DY,
			 args.off_dy + mat + i0 * hd, n - i0, dp);
		vec4 lv = sm_get4(ROW + AB + 4u * tx);
		vec4 dv4 = sm_get4(ROW + 2u * AB + 4u * tx);

		[[unroll]] for (uint c = 0u; c < 4u; c++) {
			uint i = i0 + 4u * tx + c;
			vec4 pc;

			[[unroll]] for (uint r = 0u; r < 4u; r++) {
				uint j = j0 + 4u * ty + r;
				float e = exp_acc(args.scale * s[r][c] - lv[c]);
				float p = j > i || i >= n ? 0.0 : e;

				pc[r] = p;
				dp[r][c] = p * (dp[r][c] - dv4[c]);
			}
			/* p^T into the block query-major; ds in dp */
			ps_put(4u * tx + c, ty, pc);
		}
		group_sync();
		block_mul(ATT_DY, args.off_dy + mat + i0 * hd, n - i0, gv, gv2);
		[[unroll]] for (uint c = 0u; c < 4u; c++)
			ps_put(4u * tx + c, ty, vec4(dp[0][c], dp[1][c],
						     dp[2][c], dp[3][c]));
		group_sync();
		block_mul(ATT_Q, args.off_q + mat + i0 * hd, n - i0, gk, gk2);
	}
	[[unroll]] for (uint r = 0u; r < 4u; r++) {
		uint j = j0 + 4u * ty + r;

		if (j >= n)
			break;
		/* dk first: with k and v one tensor, dv adds to it */
		[[unroll]] for (uint c = 0u; c < 4u; c++) {
			uint col = 4u * tx + c, xo = args.off_dk + mat + j * hd;

			if (col < hd)
				STORE(dk, xo + col, args.scale * gk[r][c]);
			if (wide && col + 64u < hd)
				STORE(dk, xo + col + 64u,
				      args.scale * gk2[r][c]);
		}
		[[unroll]] for (uint c = 0u; c < 4u; c++) {
			uint col = 4u * tx + c, xo = args.off_dv + mat + j * hd;
			float a0 = gv[r][c], a1 = gv2[r][c];

			if (FLAG(GPO_ATTN_ACC_DV)) {
				if (col < hd)
					dv[xo + col] += a0;
				if (wide && col + 64u < hd)
					dv[xo + col + 64u] += a1;
			} else {
				if (col < hd)
					dv[xo + col] = a0;
				if (wide && col + 64u < hd)
					dv[xo + col + 64u] = a1;
			}
		}
	}
}
